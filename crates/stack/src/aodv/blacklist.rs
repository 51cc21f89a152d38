//! Unidirectional links (RFC 3561 §6.8): a RREP sent along a link that
//! works only towards its sender never reaches the next hop, and the
//! discovery fails again and again, because every RREQ keeps arriving
//! over the same link. With `rrep_ack` on, a node asks for a RREP-ACK with
//! each unicast RREP it sends (the A flag); a neighbour that does not
//! answer within NEXT_HOP_WAIT goes on the node's blacklist, and the node
//! ignores RREQs from it for BLACKLIST_TIMEOUT, so that a discovery finds
//! another path. Every node answers an A flag, whatever its own setting.

use super::wire::{Msg, Rrep};
use super::*;
use std::time::Duration;

/// Sends `rrep` to neighbour `to` on interface `iface`, asking for a
/// RREP-ACK when the node's `rrep_ack` is on, and waiting for it.
pub(super) fn send_rrep(w: &mut Hosts, m: MachineId, iface: IfaceId, to: Ipv4Addr, mut rrep: Rrep) {
    let Some(n) = node(w, m) else { return };
    rrep.ack_required = n.cfg.rrep_ack;
    let wait = rrep.ack_required.then(|| {
        n.ack_gen = n.ack_gen.wrapping_add(1);
        n.ack_wait.insert(u32::from(to), n.ack_gen);
        n.ack_gen
    });
    let ttl = w.stack.default_ttl;
    send(w, m, iface, to, ttl, &Msg::Rrep(rrep));
    if let Some(gen) = wait {
        let at = w.now() + Duration::from_nanos(NEXT_HOP_WAIT);
        let timer = Timer::AodvRrepAck {
            neighbour: u32::from(to),
            gen,
        };
        arm(w, m, at, timer);
    }
}

/// A RREP with the A flag came from neighbour `from` on `iface`: the
/// RREP-ACK goes back to it, one hop.
pub(super) fn acknowledge(w: &mut Hosts, m: MachineId, iface: IfaceId, from: Ipv4Addr) {
    send(w, m, iface, from, 1, &Msg::RrepAck);
}

/// A RREP-ACK came from neighbour `from`: the wait for it ends.
pub(super) fn on_rrep_ack(w: &mut Hosts, m: MachineId, from: Ipv4Addr) {
    if let Some(n) = node(w, m) {
        n.ack_wait.remove(&u32::from(from));
    }
}

/// NEXT_HOP_WAIT passed since a RREP to `neighbour` (wait generation
/// `gen`): without its RREP-ACK, the neighbour is blacklisted.
pub(super) fn on_timeout(w: &mut Hosts, m: MachineId, neighbour: u32, gen: u32) {
    let now = w.now().as_nanos();
    let Some(n) = node(w, m) else { return };
    if n.ack_wait.get(&neighbour) != Some(&gen) {
        return;
    }
    n.ack_wait.remove(&neighbour);
    n.blacklist.insert(neighbour, now + BLACKLIST_TIMEOUT);
    w.obs.aodv.rrep_ack_timeouts += 1;
}

/// Whether a RREQ from neighbour `from` is ignored: it is on the
/// blacklist and its time there has not run out (an entry past its time
/// is removed).
pub(super) fn ignores(w: &mut Hosts, m: MachineId, from: Ipv4Addr) -> bool {
    let now = w.now().as_nanos();
    let Some(n) = node(w, m) else { return false };
    if n.blacklist.is_empty() {
        return false;
    }
    match n.blacklist.get(&u32::from(from)) {
        Some(&until) if until > now => {
            w.obs.aodv.rreq_blacklisted += 1;
            true
        }
        Some(_) => {
            n.blacklist.remove(&u32::from(from));
            false
        }
        None => false,
    }
}
