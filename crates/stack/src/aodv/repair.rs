//! Local repair (RFC 3561 §6.12): when the link to the next hop of a
//! transit route breaks, the node upstream of the break may look for the
//! destination itself, with a small RREQ, instead of reporting the break
//! to the sources at once. Datagrams for the destination wait meanwhile.
//! A repair that finds no route within the ring's traversal time ends
//! as an unrepaired break does (a RERR to the precursors, §6.11); one that
//! finds a longer route says so with a RERR carrying the N flag, which
//! the nodes upstream pass on without deleting their routes.
//!
//! The RREQ's TTL is max(MIN_REPAIR_TTL, 0.5 × #hops) + LOCAL_ADD_TTL,
//! MIN_REPAIR_TTL being the last known hop count to the destination and
//! #hops the distance to the source of the undeliverable datagram. A
//! break found by missed HELLOs has no such datagram, so the TTL here is
//! MIN_REPAIR_TTL + LOCAL_ADD_TTL (the larger term for any source at
//! most twice as far from the break as the destination).

use super::wire::{Msg, Rerr};
use super::*;
use smallvec::SmallVec;

/// What a local repair keeps of the broken route.
#[derive(Clone, Debug)]
pub struct Repair {
    pub hops: u8,
    pub seq: u32,
    pub precursors: SmallVec<[Ipv4Addr; 2]>,
}

/// The routes to `dead` broke. With `local_repair` on, each transit
/// route (one with precursors) to a destination at most MAX_REPAIR_TTL
/// hops away is invalidated and repaired; returns the destinations left
/// to the usual RERR.
pub(super) fn start_all(w: &mut Hosts, m: MachineId, dead: Vec<Ipv4Addr>) -> Vec<Ipv4Addr> {
    let now = w.now().as_nanos();
    if !node_ref(w, m).is_some_and(|n| n.cfg.local_repair) {
        return dead;
    }
    let mut rest = Vec::new();
    for d in dead {
        let Some(n) = node(w, m) else { return rest };
        let hops = match n.table.get(d) {
            Some(r) if !r.precursors.is_empty() && r.hops <= MAX_REPAIR_TTL => r.hops,
            _ => {
                rest.push(d);
                continue;
            }
        };
        if n.pending.contains_key(&u32::from(d)) {
            rest.push(d);
            continue;
        }
        let Some((seq, precursors)) = n.table.invalidate(d, None, now, now + DELETE_PERIOD) else {
            continue;
        };
        w.obs.aodv.routes_invalidated += 1;
        let ttl = hops.saturating_add(LOCAL_ADD_TTL).min(NET_DIAMETER);
        let how = Repair {
            hops,
            seq,
            precursors,
        };
        discovery::start_repair(w, m, d, ttl, how);
    }
    rest
}

/// The repair of the route to `dst` found one: the precursors are kept,
/// and told by a RERR with the N flag when the route got longer.
pub(super) fn done(w: &mut Hosts, m: MachineId, dst: Ipv4Addr, r: Repair) {
    let Some(n) = node(w, m) else { return };
    let Some(route) = n.table.get_mut(dst) else {
        return;
    };
    for &p in &r.precursors {
        route.add_precursor(p);
    }
    if route.hops <= r.hops {
        return;
    }
    let rerr = Msg::Rerr(Rerr {
        no_delete: true,
        unreachable: vec![(dst, route.seq)],
    });
    w.obs.aodv.rerr_no_delete += 1;
    maintenance::send_rerr(w, m, &r.precursors, &rerr);
}

/// The repair of the route to `dst` found none: the break is reported
/// as §6.11 reports one.
pub(super) fn failed(w: &mut Hosts, m: MachineId, dst: Ipv4Addr, r: Repair) {
    w.obs.aodv.local_repairs_failed += 1;
    if r.precursors.is_empty() {
        return;
    }
    let rerr = Msg::Rerr(Rerr {
        no_delete: false,
        unreachable: vec![(dst, r.seq)],
    });
    maintenance::send_rerr(w, m, &r.precursors, &rerr);
}

/// A RERR with the N flag came from neighbour `from`: routes stay, and
/// the RERR goes on to the precursors of those it names through `from`,
/// so that it reaches the sources.
pub(super) fn on_no_delete(w: &mut Hosts, m: MachineId, iface: IfaceId, from: Ipv4Addr, r: Rerr) {
    let now = w.now().as_nanos();
    let Some(n) = node_ref(w, m) else { return };
    let mut to: SmallVec<[Ipv4Addr; 2]> = SmallVec::new();
    let mut named = Vec::new();
    for &(d, seq) in &r.unreachable {
        let Some(e) = n.table.active(d, now) else {
            continue;
        };
        if e.next_hop != from || e.iface != iface || e.precursors.is_empty() {
            continue;
        }
        named.push((d, seq));
        for &p in &e.precursors {
            if !to.contains(&p) {
                to.push(p);
            }
        }
    }
    if named.is_empty() {
        return;
    }
    let rerr = Msg::Rerr(Rerr {
        no_delete: true,
        unreachable: named,
    });
    maintenance::send_rerr(w, m, &to, &rerr);
}
