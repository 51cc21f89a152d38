//! Route discovery: RREQ origination with the expanding ring search and
//! its retries (RFC 3561 §6.3, §6.4), RREQ processing (§6.5), RREP
//! generation (§6.6) and processing (§6.7).

use super::table::{newer, Offer};
use super::wire::{Msg, Rrep, Rreq};
use super::*;
use std::time::Duration;

/// Starts a discovery of `dst` for datagram `first` (§6.3): the first
/// RREQ's TTL is TTL_START, or the last known hop count plus
/// TTL_INCREMENT (§6.4).
pub(super) fn start(w: &mut Hosts, m: MachineId, dst: Ipv4Addr, first: Message) {
    let now = w.now().as_nanos();
    let Some(n) = node(w, m) else { return };
    let ttl = match n.table.get(dst) {
        Some(r) if r.hops > 0 => r.hops.saturating_add(TTL_INCREMENT),
        _ => TTL_START,
    };
    let ttl = if ttl > TTL_THRESHOLD {
        NET_DIAMETER
    } else {
        ttl
    };
    n.gen = n.gen.wrapping_add(1);
    let mut queue = VecDeque::new();
    queue.push_back(first);
    n.pending.insert(
        u32::from(dst),
        Discovery {
            queue,
            ttl,
            retries: 0,
            started: now,
            gen: n.gen,
            deferred: false,
            repair: None,
        },
    );
    w.obs.aodv.discoveries += 1;
    send_rreq(w, m, dst);
}

/// Starts the discovery of a local repair (§6.12): one RREQ of `ttl`,
/// no further rings or retries.
pub(super) fn start_repair(
    w: &mut Hosts,
    m: MachineId,
    dst: Ipv4Addr,
    ttl: u8,
    how: repair::Repair,
) {
    let now = w.now().as_nanos();
    let Some(n) = node(w, m) else { return };
    n.gen = n.gen.wrapping_add(1);
    n.pending.insert(
        u32::from(dst),
        Discovery {
            queue: VecDeque::new(),
            ttl,
            retries: RREQ_RETRIES,
            started: now,
            gen: n.gen,
            deferred: false,
            repair: Some(how),
        },
    );
    w.obs.aodv.local_repairs += 1;
    send_rreq(w, m, dst);
}

/// Sends the RREQ of the discovery of `dst` at its current TTL and arms
/// its timeout.
fn send_rreq(w: &mut Hosts, m: MachineId, dst: Ipv4Addr) {
    let now = w.now();
    let gratuitous = {
        let Some(n) = node(w, m) else { return };
        n.cfg.gratuitous
    };
    let own = w.machines[m as usize].ifaces[0].ip;
    let Some(n) = node(w, m) else { return };
    let Some(d) = n.pending.get(&u32::from(dst)) else {
        return;
    };
    let (ttl, retries, gen) = (d.ttl, d.retries, d.gen);
    // §6.3: at most RREQ_RATELIMIT RREQs a second; one past it waits for
    // the next second, its timer standing in for the ring's.
    if let Err(next) = n.rreq_rate.take(now.as_nanos(), RREQ_RATELIMIT) {
        if let Some(d) = n.pending.get_mut(&u32::from(dst)) {
            d.deferred = true;
        }
        w.obs.aodv.rreq_rate_limited += 1;
        let timer = Timer::AodvDiscovery {
            dst: u32::from(dst),
            gen,
        };
        return arm(w, m, elvis_kernel::Time::from_nanos(next), timer);
    }
    // §6.1: the own number goes up before each RREQ; §6.3: a new RREQ ID.
    n.seq = n.seq.wrapping_add(1);
    n.rreq_id = n.rreq_id.wrapping_add(1);
    let known = n.table.get(dst).filter(|r| r.valid_seq).map(|r| r.seq);
    let rreq = Rreq {
        join: false,
        repair: false,
        gratuitous,
        dest_only: false,
        unknown_seq: known.is_none(),
        hop_count: 0,
        id: n.rreq_id,
        dst,
        dst_seq: known.unwrap_or(0),
        orig: own,
        orig_seq: n.seq,
    };
    let key = (u32::from(own), n.rreq_id);
    n.seen.insert(key, now.as_nanos() + PATH_DISCOVERY_TIME);
    w.obs.aodv.rreq_originated += 1;
    broadcast(w, m, ttl, &Msg::Rreq(rreq));
    let at = now + Duration::from_nanos(rrep_wait(ttl, retries));
    let timer = Timer::AodvDiscovery {
        dst: u32::from(dst),
        gen,
    };
    arm(w, m, at, timer);
}

/// No RREP came for the RREQ of generation `gen` to `dst`: the next ring
/// (TTL + TTL_INCREMENT, NET_DIAMETER past TTL_THRESHOLD), a retry at
/// NET_DIAMETER (at most RREQ_RETRIES), or the end of the discovery; or
/// the RREQ the rate limit held back may go.
pub(super) fn on_timeout(w: &mut Hosts, m: MachineId, dst: Ipv4Addr, gen: u32) {
    let Some(n) = node(w, m) else { return };
    let Some(d) = n.pending.get_mut(&u32::from(dst)) else {
        return;
    };
    if d.gen != gen {
        return;
    }
    if std::mem::take(&mut d.deferred) {
        // The rate limit's wait is over: the same RREQ goes now.
    } else if d.repair.is_some() {
        return fail(w, m, dst);
    } else if d.ttl < NET_DIAMETER {
        d.ttl = d.ttl.saturating_add(TTL_INCREMENT);
        if d.ttl > TTL_THRESHOLD {
            d.ttl = NET_DIAMETER;
        }
    } else if d.retries < RREQ_RETRIES {
        d.retries += 1;
    } else {
        return fail(w, m, dst);
    }
    send_rreq(w, m, dst);
}

/// The discovery of `dst` gave up: its datagrams are dropped, and each
/// answered with an ICMP Destination Unreachable (host unreachable) to
/// its local sender.
fn fail(w: &mut Hosts, m: MachineId, dst: Ipv4Addr) {
    let Some(n) = node(w, m) else { return };
    let Some(d) = n.pending.remove(&u32::from(dst)) else {
        return;
    };
    match d.repair {
        Some(r) => repair::failed(w, m, dst, r),
        None => w.obs.aodv.discoveries_failed += 1,
    }
    for mut msg in d.queue {
        w.obs.aodv.dropped_no_route += 1;
        w.drop_packet(DropReason::Aodv("no_route"));
        crate::icmp::send_error(
            w,
            m,
            crate::icmp::DST_UNREACHABLE,
            HOST_UNREACHABLE,
            [0; 4],
            &mut msg,
        );
    }
}

/// ICMP Destination Unreachable code 1 (RFC 792).
pub const HOST_UNREACHABLE: u8 = 1;

/// A route to `dst` became active: the datagrams waiting for it leave.
fn found(w: &mut Hosts, m: MachineId, dst: Ipv4Addr) {
    let now = w.now().as_nanos();
    let Some(n) = node(w, m) else { return };
    let Some(d) = n.pending.remove(&u32::from(dst)) else {
        return;
    };
    match d.repair {
        Some(r) => repair::done(w, m, dst, r),
        None => w.obs.aodv.discovery_ns.push(now - d.started),
    }
    for mut msg in d.queue {
        let Some(n) = node_ref(w, m) else { return };
        let r = route(w, m, n, dst);
        if r.next == NextHop::OnDemand {
            // The route broke while the queue was being sent.
            hold(w, m, &mut msg);
        } else {
            ipv4::transmit(w, m, &r, &mut msg);
        }
    }
}

/// The route entry a neighbour's message makes (§6.5, §6.7 first
/// paragraphs): one hop, no sequence number.
fn neighbour_route(w: &mut Hosts, m: MachineId, iface: IfaceId, from: Ipv4Addr) {
    let now = w.now().as_nanos();
    let Some(n) = node(w, m) else { return };
    let o = Offer {
        seq: None,
        hops: 1,
        iface,
        next_hop: from,
        lifetime: ACTIVE_ROUTE_TIMEOUT,
    };
    n.table.offer(from, o, now);
}

/// §6.5: a RREQ arrived from neighbour `from` with IP TTL `ttl`.
///
/// Long because it is §6.5 step by step: the neighbour's route, the
/// duplicate check, the reverse route, then the three answers (the
/// destination replies, an intermediate node with a fresh enough route
/// replies, or the RREQ goes on with one TTL less).
pub(super) fn on_rreq(
    w: &mut Hosts,
    m: MachineId,
    iface: IfaceId,
    from: Ipv4Addr,
    ttl: u8,
    mut r: Rreq,
) {
    let now = w.now().as_nanos();
    if blacklist::ignores(w, m, from) {
        return;
    }
    neighbour_route(w, m, iface, from);
    let own = w.machines[m as usize].ifaces[0].ip;
    let Some(n) = node(w, m) else { return };
    // A record past its time counts as gone (the HELLO tick deletes
    // those), so that a RREQ costs a lookup, not a walk over the records.
    let before = (n.seen).insert((u32::from(r.orig), r.id), now + PATH_DISCOVERY_TIME);
    if before.is_some_and(|until| until > now) || r.orig == own {
        w.obs.aodv.rreq_duplicates += 1;
        return;
    }
    r.hop_count = r.hop_count.saturating_add(1);
    // The reverse route: the originator's number if newer, the previous
    // hop, the RREQ's hop count, a lifetime of at least 2·NET_TRAVERSAL_TIME
    // − 2·hops·NODE_TRAVERSAL_TIME.
    let minimal =
        (2 * NET_TRAVERSAL_TIME).saturating_sub(2 * u64::from(r.hop_count) * NODE_TRAVERSAL_TIME);
    n.table.set_reverse(
        r.orig,
        r.orig_seq,
        r.hop_count,
        iface,
        from,
        now,
        now + minimal,
    );
    if ipv4::owns(w, m, r.dst) {
        return reply_as_destination(w, m, iface, from, &r);
    }
    let Some(n) = node(w, m) else { return };
    let fresh = n
        .table
        .active(r.dst, now)
        .filter(|f| f.valid_seq && !r.dest_only && (r.unknown_seq || !newer(r.dst_seq, f.seq)));
    if let Some(f) = fresh.cloned() {
        return reply_as_intermediate(w, m, iface, from, &r, &f, now);
    }
    if ttl <= 1 {
        return;
    }
    if let Some(k) = n.table.get(r.dst).filter(|k| k.valid_seq) {
        if r.unknown_seq || newer(k.seq, r.dst_seq) {
            r.dst_seq = k.seq;
            r.unknown_seq = false;
        }
    }
    w.obs.aodv.rreq_forwarded += 1;
    broadcast(w, m, ttl - 1, &Msg::Rreq(r));
}

/// §6.6.1: the destination answers with its own sequence number (raised
/// to the RREQ's when that is newer), hop count 0 and MY_ROUTE_TIMEOUT.
fn reply_as_destination(w: &mut Hosts, m: MachineId, iface: IfaceId, from: Ipv4Addr, r: &Rreq) {
    let Some(n) = node(w, m) else { return };
    if !r.unknown_seq && newer(r.dst_seq, n.seq) {
        n.seq = r.dst_seq;
    }
    let rrep = Rrep {
        repair: false,
        ack_required: false,
        prefix: 0,
        hop_count: 0,
        dst: r.dst,
        dst_seq: n.seq,
        orig: r.orig,
        lifetime_ms: (MY_ROUTE_TIMEOUT / MS) as u32,
    };
    blacklist::send_rrep(w, m, iface, from, rrep);
}

/// §6.6.2: an intermediate node with a fresh route `f` answers for the
/// destination, notes the precursors of both routes, and (G flag,
/// §6.6.3) tells the destination about the originator.
#[allow(clippy::too_many_arguments)]
fn reply_as_intermediate(
    w: &mut Hosts,
    m: MachineId,
    iface: IfaceId,
    from: Ipv4Addr,
    r: &Rreq,
    f: &table::Route,
    now: u64,
) {
    let Some(n) = node(w, m) else { return };
    if let Some(fw) = n.table.get_mut(r.dst) {
        fw.add_precursor(from);
    }
    let back = n.table.get_mut(r.orig).map(|b| {
        b.add_precursor(f.next_hop);
        (b.hops, b.expires)
    });
    let rrep = Rrep {
        repair: false,
        ack_required: false,
        prefix: 0,
        hop_count: f.hops,
        dst: r.dst,
        dst_seq: f.seq,
        orig: r.orig,
        lifetime_ms: (f.expires.saturating_sub(now) / MS) as u32,
    };
    blacklist::send_rrep(w, m, iface, from, rrep);
    if let (true, Some((hops, expires))) = (r.gratuitous, back) {
        let g = Rrep {
            repair: false,
            ack_required: false,
            prefix: 0,
            hop_count: hops,
            dst: r.orig,
            dst_seq: r.orig_seq,
            orig: r.dst,
            lifetime_ms: (expires.saturating_sub(now) / MS) as u32,
        };
        blacklist::send_rrep(w, m, f.iface, f.next_hop, g);
    }
}

/// §6.7: a RREP arrived from neighbour `from`: the forward route, then
/// either the end of the originator's discovery or the RREP on towards
/// the originator along the reverse route.
pub(super) fn on_rrep(w: &mut Hosts, m: MachineId, iface: IfaceId, from: Ipv4Addr, mut r: Rrep) {
    let now = w.now().as_nanos();
    if r.ack_required {
        blacklist::acknowledge(w, m, iface, from);
    }
    neighbour_route(w, m, iface, from);
    r.hop_count = r.hop_count.saturating_add(1);
    let Some(n) = node(w, m) else { return };
    let o = Offer {
        seq: Some(r.dst_seq),
        hops: r.hop_count,
        iface,
        next_hop: from,
        lifetime: u64::from(r.lifetime_ms) * MS,
    };
    let taken = n.table.offer(r.dst, o, now);
    if ipv4::owns(w, m, r.orig) {
        return found(w, m, r.dst);
    }
    let Some(n) = node(w, m) else { return };
    let Some(back) = n.table.active(r.orig, now).cloned() else {
        return w.drop_packet(DropReason::Aodv("no_reverse_route"));
    };
    if !taken {
        return;
    }
    if let Some(fw) = n.table.get_mut(r.dst) {
        fw.add_precursor(back.next_hop);
    }
    if let Some(b) = n.table.get_mut(r.orig) {
        b.add_precursor(from);
    }
    n.table.refresh(r.orig, now, now + ACTIVE_ROUTE_TIMEOUT);
    w.obs.aodv.rrep_forwarded += 1;
    blacklist::send_rrep(w, m, back.iface, back.next_hop, r);
}
