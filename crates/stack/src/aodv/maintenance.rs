//! Route maintenance: HELLO messages and neighbour loss (RFC 3561 §6.9),
//! link breaks, RERR generation and processing (§6.11).

use super::wire::{Msg, Rerr, Rrep};
use super::*;
use smallvec::SmallVec;
use std::time::Duration;

/// The link from machine `m` to neighbour `next_hop` broke (§6.11 case
/// i): every active route through it becomes invalid, and the
/// destinations that had precursors are reported to them in a RERR.
pub fn link_failed(w: &mut Hosts, m: MachineId, next_hop: Ipv4Addr) {
    let now = w.now().as_nanos();
    let Some(n) = node(w, m) else { return };
    let iface = match n.neighbours.remove(&u32::from(next_hop)) {
        Some(nb) => Some(nb.iface),
        None => n.table.get(next_hop).map(|r| r.iface),
    };
    let Some(iface) = iface else { return };
    let dead = n.table.through(iface, next_hop, now);
    if dead.is_empty() {
        return;
    }
    w.obs.aodv.link_breaks += 1;
    let dead = repair::start_all(w, m, dead);
    invalidate_and_report(w, m, &dead, &[]);
}

/// Invalidates the routes to `dests` (with the RERR's numbers `seqs` where
/// given, else incremented) and sends one RERR listing those that had
/// precursors: unicast when there is one precursor, else broadcast with
/// TTL 1.
fn invalidate_and_report(w: &mut Hosts, m: MachineId, dests: &[Ipv4Addr], seqs: &[u32]) {
    let now = w.now().as_nanos();
    let Some(n) = node(w, m) else { return };
    let mut unreachable = Vec::new();
    let mut told: SmallVec<[Ipv4Addr; 2]> = SmallVec::new();
    let mut invalidated = 0;
    for (i, &d) in dests.iter().enumerate() {
        let Some((seq, pre)) =
            n.table
                .invalidate(d, seqs.get(i).copied(), now, now + DELETE_PERIOD)
        else {
            continue;
        };
        invalidated += 1;
        if !pre.is_empty() {
            unreachable.push((d, seq));
            for p in pre {
                if !told.contains(&p) {
                    told.push(p);
                }
            }
        }
    }
    w.obs.aodv.routes_invalidated += invalidated;
    if unreachable.is_empty() {
        return;
    }
    let rerr = Msg::Rerr(Rerr {
        no_delete: false,
        unreachable,
    });
    send_rerr(w, m, &told, &rerr);
}

/// Returns whether machine `m` may send a RERR now (§6.11: at most
/// RERR_RATELIMIT a second); counts the one it may not.
fn rerr_allowed(w: &mut Hosts, m: MachineId) -> bool {
    let now = w.now().as_nanos();
    let Some(n) = node(w, m) else { return false };
    if n.rerr_rate.take(now, RERR_RATELIMIT).is_ok() {
        return true;
    }
    w.obs.aodv.rerr_rate_limited += 1;
    false
}

/// Sends `rerr` to the one precursor in `to` (unicast along its route), or
/// broadcasts it with TTL 1, within the rate limit.
pub(super) fn send_rerr(w: &mut Hosts, m: MachineId, to: &[Ipv4Addr], rerr: &Msg) {
    if !rerr_allowed(w, m) {
        return;
    }
    if let [p] = to {
        let now = w.now().as_nanos();
        let iface = node_ref(w, m).and_then(|n| {
            n.neighbours
                .get(&u32::from(*p))
                .map(|nb| nb.iface)
                .or_else(|| n.table.active(*p, now).map(|r| r.iface))
        });
        if let Some(iface) = iface {
            return send(w, m, iface, *p, 1, rerr);
        }
    }
    broadcast(w, m, 1, rerr);
}

/// §6.11 case ii: a datagram to forward to `dst` found no active route; a
/// RERR for `dst` goes to the neighbours (broadcast, TTL 1), within the
/// rate limit.
pub(super) fn no_route(w: &mut Hosts, m: MachineId, dst: Ipv4Addr) {
    if !rerr_allowed(w, m) {
        return;
    }
    let Some(n) = node_ref(w, m) else { return };
    let seq = n.table.get(dst).map_or(0, |r| r.seq);
    let rerr = Msg::Rerr(Rerr {
        no_delete: false,
        unreachable: vec![(dst, seq)],
    });
    broadcast(w, m, 1, &rerr);
}

/// §6.11 case iii: a RERR arrived from neighbour `from`: the routes it
/// names whose next hop is `from` become invalid, with its numbers, and
/// those with precursors are reported on.
pub(super) fn on_rerr(w: &mut Hosts, m: MachineId, iface: IfaceId, from: Ipv4Addr, r: Rerr) {
    if r.no_delete {
        return repair::on_no_delete(w, m, iface, from, r);
    }
    let now = w.now().as_nanos();
    let Some(n) = node_ref(w, m) else { return };
    let (dests, seqs): (Vec<Ipv4Addr>, Vec<u32>) = r
        .unreachable
        .iter()
        .filter(|(d, _)| {
            n.table
                .active(*d, now)
                .is_some_and(|e| e.next_hop == from && e.iface == iface)
        })
        .copied()
        .unzip();
    invalidate_and_report(w, m, &dests, &seqs);
}

/// §6.9: a HELLO from neighbour `from`: an active route to it, living
/// ALLOWED_HELLO_LOSS × HELLO_INTERVAL.
pub(super) fn on_hello(w: &mut Hosts, m: MachineId, iface: IfaceId, from: Ipv4Addr, r: Rrep) {
    let now = w.now().as_nanos();
    let Some(n) = node(w, m) else { return };
    if let Some(nb) = n.neighbours.get_mut(&u32::from(from)) {
        nb.hello = now;
    }
    let o = table::Offer {
        seq: Some(r.dst_seq),
        hops: 1,
        iface,
        next_hop: from,
        lifetime: ALLOWED_HELLO_LOSS * HELLO_INTERVAL,
    };
    n.table.offer(from, o, now);
}

/// Every HELLO_INTERVAL: old routes and RREQ records go; with HELLOs on,
/// a node on an active route that broadcast nothing in the last interval
/// sends a HELLO, and a neighbour that sent HELLOs but nothing for
/// ALLOWED_HELLO_LOSS × HELLO_INTERVAL is lost (§6.9).
pub(super) fn on_hello_tick(w: &mut Hosts, m: MachineId) {
    let now = w.now().as_nanos();
    let Some(n) = node(w, m) else { return };
    n.table.expire(now, DELETE_PERIOD);
    n.seen.retain(|_, until| *until > now);
    if !n.cfg.hello {
        return;
    }
    let mut lost: Vec<u32> = n
        .neighbours
        .iter()
        .filter(|(_, nb)| {
            nb.hello > 0
                && now.saturating_sub(nb.hello) <= DELETE_PERIOD
                && now.saturating_sub(nb.heard) > ALLOWED_HELLO_LOSS * HELLO_INTERVAL
        })
        .map(|(&a, _)| a)
        .collect();
    // In address order, so that hashing does not order the RERRs.
    lost.sort_unstable();
    let lost: Vec<Ipv4Addr> = lost.into_iter().map(Ipv4Addr::from).collect();
    let speak = n.table.any_active(now) && now.saturating_sub(n.last_broadcast) >= HELLO_INTERVAL;
    let seq = n.seq;
    for a in lost {
        link_failed(w, m, a);
    }
    if speak {
        for i in 0..w.machines[m as usize].ifaces.len() {
            let ip = w.machines[m as usize].ifaces[i].ip;
            let hello = Rrep {
                repair: false,
                ack_required: false,
                prefix: 0,
                hop_count: 0,
                dst: ip,
                dst_seq: seq,
                orig: ip,
                lifetime_ms: (ALLOWED_HELLO_LOSS * HELLO_INTERVAL / MS) as u32,
            };
            send(
                w,
                m,
                i as IfaceId,
                Ipv4Addr::BROADCAST,
                1,
                &Msg::Rrep(hello),
            );
        }
    }
    let at = w.now() + Duration::from_nanos(HELLO_INTERVAL);
    arm(w, m, at, Timer::AodvHello);
}
