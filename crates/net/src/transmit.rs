//! Sending: a frame handed to a NIC, offered to an egress queue's
//! discipline, serialized onto the wire (see "Timing model",
//! "Departure-time FIFO" and "Queue disciplines").

use crate::delivery::{
    deliver, deliver_across_link, deliver_now, discard, egress_ports, propagate,
};
use crate::impair::draw_fate;
use crate::qdisc::{self, Dequeue, Discipline, Enqueue, Qdisc, Queued};
use crate::room::release_nic;
use crate::{
    Context, DropReason, FrameId, NetEvent, NetId, NetworkKind, QueueRef, WireQueue, NO_PORT,
};
use elvis_kernel::Time;
use elvis_message::Message;

/// How deep zero-delay deliveries may nest (a reply to a reply …) before
/// the next one goes through the event queue instead.
const MAX_SYNC_DEPTH: u8 = 4;

/// Counts a datagram the stack dropped for want of room in the NIC at
/// `port` (a router forwarding onto a full NIC) as a drop of that NIC's
/// queue, so the report's per-queue `dropped` sees every drop where it
/// happened.
#[cold]
pub fn count_nic_drop(c: &mut impl Context, net: NetId, port: u32, reason: DropReason) {
    let f = c.fabric_mut();
    let n = &mut f.networks[net as usize];
    n.stats.queue_drops += 1;
    n.queues_mut(port).up.stats.dropped += 1;
    *f.queue_drops.entry((net, port << 1, reason)).or_insert(0) += 1;
}

/// Hands a complete Ethernet frame to the NIC at `port` of `net`.
///
/// Callers check [`crate::nic_room`] first: sockets wait for room, the
/// stack's own frames are dropped when there is none. The fragments of one
/// datagram may overshoot the queue's capacity (a datagram is queued
/// whole).
pub fn transmit(c: &mut impl Context, net: NetId, port: u32, frame: &mut Message) {
    let now = c.now();
    let f = c.fabric_mut();
    let n = &mut f.networks[net as usize];
    n.stats.frames_sent += 1;
    n.stats.bytes_sent += frame.len() as u64;
    f.frames_sent += 1;
    if n.is_ideal() {
        return transmit_ideal(c, net, port, frame, now);
    }
    let wireless = n.cfg.kind == NetworkKind::Wireless;
    let id = f.frames.insert(std::mem::take(frame)) as FrameId;
    if wireless {
        return crate::wireless::dcf::transmit(c, net, port, id);
    }
    if f.pfc.is_some() && !crate::pfc::admit(c, net, port, id) {
        return;
    }
    let q = QueueRef {
        net,
        port_dir: port << 1,
    };
    enqueue(c, q, id);
}

/// Broadcasts reaching fewer ports than this are copied to all of them
/// without asking [`Context::select_broadcast`].
const FANOUT_SELECT_MIN: usize = 8;

/// [`transmit`] on an ideal network: no serialization, no queue; the
/// frame arrives after the latency (at once, without an event, when there
/// is none).
fn transmit_ideal(c: &mut impl Context, net: NetId, port: u32, frame: &mut Message, now: Time) {
    let f = c.fabric_mut();
    f.networks[net as usize].ports[port as usize].inflight += 1;
    f.pcap.record(net, now, frame);
    let n = &mut f.networks[net as usize];
    let fate = match draw_fate(n, frame) {
        Ok(fate) => fate,
        Err(reason) => {
            release_nic(c, net, port);
            return c.dropped(reason);
        }
    };
    let f = c.fabric_mut();
    let n = &f.networks[net as usize];
    let broadcast = f.config.broadcast_selectors
        && n.ports.len() > FANOUT_SELECT_MIN
        && !fate.duplicate
        && n.cfg.kind == NetworkKind::Switch
        && frame.front(6).is_some_and(|d| d == [0xff; 6]);
    let chosen = if broadcast {
        c.select_broadcast(net, port, frame)
    } else {
        None
    };
    let f = c.fabric_mut();
    let n = &f.networks[net as usize];
    let mut targets = match chosen {
        Some(t) if t.is_empty() => return release_nic(c, net, port),
        Some(t) => t,
        None => egress_ports(n, port, frame),
    };
    if targets.is_empty() {
        release_nic(c, net, port);
        return c.dropped(DropReason::UnknownDestination);
    }
    if fate.duplicate {
        // Each receiver gets the copy right after the original.
        targets = targets.into_iter().flat_map(|t| [t, t]).collect();
    }
    let latency = n.cfg.latency_ns + fate.extra_ns;
    if latency == 0 && f.sync_depth < MAX_SYNC_DEPTH {
        // Zero delay: deliver now, without an event or a frame slot.
        release_nic(c, net, port);
        let last = targets.len() - 1;
        for (i, t) in targets.into_iter().enumerate() {
            if i == last {
                deliver_now(c, net, t, frame);
            } else {
                deliver_now(c, net, t, &mut frame.clone());
            }
        }
        return;
    }
    let at = now + std::time::Duration::from_nanos(latency);
    let mut sender = port;
    let last = targets.len() - 1;
    for (i, t) in targets.into_iter().enumerate() {
        let copy = if i == last {
            std::mem::take(frame)
        } else {
            frame.clone()
        };
        let id = c.fabric_mut().frames.insert(copy) as FrameId;
        let event = NetEvent::Deliver {
            net,
            port: t,
            frame: id,
            from: sender,
        };
        c.schedule(at, event);
        sender = NO_PORT;
    }
}

/// [`transmit`] for frame `id`, already in the frames slab (a router's
/// fast path forwards frames without taking them out of it).
pub fn transmit_queued(c: &mut impl Context, net: NetId, port: u32, id: FrameId) {
    let f = c.fabric_mut();
    if f.networks[net as usize].is_ideal() {
        let mut frame = f.frames.remove(id as usize);
        return transmit(c, net, port, &mut frame);
    }
    let bytes = f.frames[id as usize].len() as u64;
    let n = &mut f.networks[net as usize];
    n.stats.frames_sent += 1;
    n.stats.bytes_sent += bytes;
    f.frames_sent += 1;
    if n.cfg.kind == NetworkKind::Wireless {
        return crate::wireless::dcf::transmit(c, net, port, id);
    }
    if f.pfc.is_some() && !crate::pfc::admit(c, net, port, id) {
        return;
    }
    let q = QueueRef {
        net,
        port_dir: port << 1,
    };
    enqueue(c, q, id);
}

#[inline]
fn queue_mut(c: &mut impl Context, q: QueueRef) -> &mut WireQueue {
    let n = &mut c.fabric_mut().networks[q.net as usize];
    n.queue_dir_mut(q.port_dir >> 1, q.port_dir & 1 == 0)
}

/// Offers frame `id` to queue `q` and starts the wire if it is idle. A
/// frame the discipline refuses is discarded with its reason (and frees
/// its NIC slot when `q` is a NIC); one it marks gets CE set.
///
/// A queue run as a departure-time FIFO (see "Departure-time FIFO") takes
/// the frame here, with one look-up of the queue: it already runs so (its
/// schedule, settled at the present, is not empty), or it is an idle
/// drop-tail or ECN-threshold queue on a network that is neither captured nor traced.
pub(crate) fn enqueue(c: &mut impl Context, q: QueueRef, id: FrameId) {
    let now = c.now().as_nanos();
    let (net, port, up) = (q.net, q.port_dir >> 1, q.port_dir & 1 == 0);
    let f = c.fabric_mut();
    let bytes = f.frames[id as usize].len();
    let captured = f.pcap.captures(net);
    let tracing = f.config.trace_queues;
    let uncaptured = !f.config.evented_queues;
    let n = &mut f.networks[net as usize];
    let ser = n.cfg.serialization_ns(bytes);
    let wq = n.queue_dir_mut(port, up);
    if tracing && wq.trace.is_none() && wq.sched.is_empty() && wq.on_wire.is_none() {
        wq.trace = Some(Box::default());
    }
    wq.settle(now);
    let fifo = matches!(wq.qdisc, Qdisc::DropTail(_) | Qdisc::Threshold(_));
    let analytic = !wq.sched.is_empty() || (uncaptured && fifo && wq.is_idle(now));
    if !analytic {
        return enqueue_evented(c, q, id, now);
    }
    let (full, mark) = fifo_verdict(wq, bytes as u32);
    if mark && !full && ecn_capable(&f.frames[id as usize]) {
        wq.stats.marked += 1;
        mark_ce(&mut f.frames[id as usize]);
    }
    if full {
        wq.stats.dropped += 1;
        n.stats.queue_drops += 1;
        let reason = DropReason::QueueFull;
        *f.queue_drops.entry((net, q.port_dir, reason)).or_insert(0) += 1;
        return discard(c, id, reason);
    }
    let done = wq.push(now, ser, bytes as u32);
    if up && captured {
        // Recorded when it starts onto the wire, as the evented path does.
        let start = Time::from_nanos(done - ser);
        f.pcap
            .record_at(net, start, Time::from_nanos(now), &f.frames[id as usize]);
    }
    if !up {
        let deliver = NetEvent::Deliver {
            net,
            port,
            frame: id,
            from: NO_PORT,
        };
        return c.schedule(Time::from_nanos(done), deliver);
    }
    let n = &mut f.networks[net as usize];
    match draw_fate(n, &mut f.frames[id as usize]) {
        Err(reason) => discard(c, id, reason),
        Ok(fate) => {
            let at = Time::from_nanos(done + n.cfg.latency_ns + fate.extra_ns);
            if f.config.early_takers && n.cfg.kind == NetworkKind::Link && !fate.duplicate {
                // A host whose NIC coalesces interrupts takes the frame
                // into its ring now (no arrival event).
                let other = if port == 0 { 1 } else { 0 };
                if let Some(p) = n.ports.get(other as usize) {
                    let (machine, iface) = (p.machine, p.iface);
                    if c.take_early(machine, iface, id, at.as_nanos()) {
                        return;
                    }
                }
            }
            propagate(c, net, port, id, at);
            if fate.duplicate {
                let f = c.fabric_mut();
                let copy = f.frames.insert(f.frames[id as usize].clone()) as FrameId;
                propagate(c, net, port, copy, at);
            }
        }
    }
}

/// Returns whether a departure-time FIFO `wq` (settled at the present)
/// refuses a frame of `bytes`, and whether it marks it if it is ECN-capable
/// (an ECN threshold with K or more frames or bytes waiting).
#[inline]
fn fifo_verdict(wq: &WireQueue, bytes: u32) -> (bool, bool) {
    let (packets, waiting) = wq.waiting();
    match &wq.qdisc {
        Qdisc::DropTail(d) => (d.refuses(packets, waiting, bytes), false),
        Qdisc::Threshold(t) => (
            t.refuses(packets, waiting, bytes),
            t.at_or_above(packets, waiting),
        ),
        _ => (false, false),
    }
}

/// When a train of frames fits a link's NIC: the first frame's arrival,
/// the spacing of the others (all but the last `full` bytes long) and the
/// last one's arrival, ns.
#[derive(Clone, Copy, Debug)]
pub struct Train {
    pub first: u64,
    pub step: u64,
    pub last: u64,
}

/// Returns when a frame of `bytes` queued now on the NIC at `port` of
/// link `net` would arrive at the far end, if that NIC is a
/// departure-time FIFO (see [`enqueue_train`]).
pub fn arrival_if_queued(c: &mut impl Context, net: NetId, port: u32, bytes: usize) -> u64 {
    let now = c.now().as_nanos();
    let nw = &mut c.fabric_mut().networks[net as usize];
    let (ser, latency) = (nw.cfg.serialization_ns(bytes), nw.cfg.latency_ns);
    let wq = &mut nw.queues_mut(port).up;
    wq.settle(now);
    let start = wq.sched.back().map_or(now, |s| s.done.max(now));
    start + ser + latency
}

/// Queues `n` ≥ 2 frames, `n − 1` of `full` bytes and one of `last`
/// bytes, on the NIC at `port` of link `net` without the frames
/// themselves (a TSO segment the far end takes as one unit), with the
/// counters [`transmit`] keeps for each; returns their arrivals. Returns
/// `None`, changing nothing, unless the link is unimpaired, uncaptured
/// and untraced, the NIC is a departure-time FIFO (drop-tail, or ECN
/// threshold with none of the `n` reaching K) and takes all `n`: the
/// caller then sends the frames one by one.
pub fn enqueue_train(
    c: &mut impl Context,
    net: NetId,
    port: u32,
    full: usize,
    last: usize,
    n: u32,
) -> Option<Train> {
    let now = c.now().as_nanos();
    let f = c.fabric_mut();
    let uncaptured = !f.config.evented_queues && !f.config.trace_queues && !f.pcap.captures(net);
    let nw = &mut f.networks[net as usize];
    if !uncaptured || nw.impaired || nw.cfg.kind != NetworkKind::Link || n < 2 {
        return None;
    }
    let (ser_full, ser_last) = (nw.cfg.serialization_ns(full), nw.cfg.serialization_ns(last));
    let latency = nw.cfg.latency_ns;
    let wq = &mut nw.queues_mut(port).up;
    wq.settle(now);
    let analytic = !wq.sched.is_empty()
        || (matches!(wq.qdisc, Qdisc::DropTail(_) | Qdisc::Threshold(_)) && wq.is_idle(now));
    // The last frame finds the others waiting (the first may be on the
    // wire already: then fewer wait, so this is the worst case).
    let (packets, bytes) = wq.waiting();
    let ahead = u64::from(n - 1) * full as u64;
    let (most, most_bytes) = (packets + n - 1, bytes + ahead);
    let refused = match &wq.qdisc {
        Qdisc::DropTail(d) => d.refuses(most, most_bytes, last as u32),
        // Only a train none of whose frames would be marked: the frames
        // are not at hand to mark.
        Qdisc::Threshold(t) => {
            t.refuses(most, most_bytes, last as u32) || t.at_or_above(most, most_bytes)
        }
        _ => return None,
    };
    if !analytic || refused {
        return None;
    }
    let first = wq.push(now, ser_full, full as u32);
    for _ in 1..n - 1 {
        wq.push(now, ser_full, full as u32);
    }
    let end = wq.push(now, ser_last, last as u32);
    nw.stats.frames_sent += u64::from(n);
    nw.stats.bytes_sent += ahead + last as u64;
    f.frames_sent += u64::from(n);
    Some(Train {
        first: first + latency,
        step: ser_full,
        last: end + latency,
    })
}

/// [`enqueue`] on a queue run event by event.
fn enqueue_evented(c: &mut impl Context, q: QueueRef, id: FrameId, now: u64) {
    let f = c.fabric_mut();
    let n = &mut f.networks[q.net as usize];
    let (port, up) = (q.port_dir >> 1, q.port_dir & 1 == 0);
    if up {
        n.ports[port as usize].inflight += 1;
    }
    n.queue_dir_mut(port, up);
    let Some(queues) = n.ports[port as usize].queues.as_deref_mut() else {
        return;
    };
    let wq = match (up, queues.down.as_deref_mut()) {
        (false, Some(d)) => d,
        _ => &mut queues.up,
    };
    let frame = &mut f.frames[id as usize];
    let desc = describe(frame, id, wq.qdisc.classifies());
    let verdict = wq.qdisc.enqueue(desc, now, &mut n.rng);
    match verdict {
        Enqueue::Dropped(reason) => {
            wq.stats.dropped += 1;
            n.stats.queue_drops += 1;
            let idle = wq.on_wire.is_none();
            *f.queue_drops
                .entry((q.net, q.port_dir, reason))
                .or_insert(0) += 1;
            if f.pfc.is_some() {
                crate::pfc::release(c, id);
            }
            discard(c, id, reason);
            if up {
                release_nic(c, q.net, port);
            }
            if idle {
                // As a kernel runs its qdisc after every enqueue: the idle
                // wire asks for a frame, and a discipline that tracks idle
                // time (RED) learns that its idle period goes on.
                start_tx(c, q);
            }
            return;
        }
        Enqueue::QueuedMarked => {
            wq.stats.marked += 1;
            mark_ce(frame);
        }
        Enqueue::QueuedRemarked(dscp) => set_dscp(frame, dscp),
        Enqueue::Queued => {}
    }
    let (packets, bytes) = (wq.qdisc.packets(), wq.qdisc.bytes());
    wq.stats.enqueued(now, packets, bytes);
    let idle = wq.on_wire.is_none();
    if f.config.trace_queues {
        trace_sample(c, q, now, packets, bytes);
    }
    if idle {
        start_tx(c, q);
    }
}

/// Returns what a discipline sees of frame `id`: its length, and, when it
/// `classifies`, the DSCP, flow hash and ECN capability of its IPv4
/// header (zero for other frames).
fn describe(frame: &Message, id: FrameId, classifies: bool) -> Queued {
    let mut d = Queued {
        frame: id,
        bytes: frame.len() as u32,
        class: 0,
        flow: 0,
        ecn_capable: false,
    };
    if !classifies {
        return d;
    }
    // Ethernet header, IPv4 header without options, 4 bytes of ports.
    let mut h = [0u8; 14 + 20 + 4];
    let have = frame.len().min(h.len());
    if have < 34 || frame.copy_to_slice(0, &mut h[..have]).is_err() {
        return d;
    }
    if h[12..14] != [0x08, 0x00] || h[14] >> 4 != 4 {
        return d;
    }
    let ip = &h[14..];
    d.class = ip[1] >> 2;
    d.ecn_capable = matches!(ip[1] & 3, 1 | 2);
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let first = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff == 0;
    let (mut sport, mut dport) = (0, 0);
    if first && matches!(ip[9], 6 | 17) {
        let mut p = [0u8; 4];
        if frame.copy_to_slice(14 + ihl, &mut p).is_ok() {
            sport = u16::from_be_bytes([p[0], p[1]]);
            dport = u16::from_be_bytes([p[2], p[3]]);
        }
    }
    let addr = |o: usize| u32::from_be_bytes([ip[o], ip[o + 1], ip[o + 2], ip[o + 3]]);
    d.flow = qdisc::flow_hash(addr(12), addr(16), ip[9], sport, dport);
    d
}

/// Returns true when an Ethernet frame carries an IPv4 header whose ECN
/// field says ECT(0) or ECT(1) (RFC 3168 §5), as [`describe`] reads it.
fn ecn_capable(frame: &Message) -> bool {
    let mut h = [0u8; 16];
    if frame.len() < 34 || frame.copy_to_slice(0, &mut h).is_err() {
        return false;
    }
    h[12..14] == [0x08, 0x00] && h[14] >> 4 == 4 && matches!(h[15] & 3, 1 | 2)
}

/// Sets the ECN field of the IPv4 header of an Ethernet frame to CE (0b11,
/// RFC 3168 §5) and patches the header checksum incrementally (RFC 1624
/// eqn. 3: HC' = ~(~HC + ~m + m')).
pub fn mark_ce(frame: &mut Message) {
    let Some(h) = frame.front_mut(14 + 20) else {
        return;
    };
    if h[12..14] != [0x08, 0x00] {
        return;
    }
    let ip = &mut h[14..];
    let old = u16::from_be_bytes([ip[0], ip[1]]);
    ip[1] |= 0b11;
    let new = u16::from_be_bytes([ip[0], ip[1]]);
    let hc = u16::from_be_bytes([ip[10], ip[11]]);
    let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

/// Sets the DSCP of the IPv4 header of an Ethernet frame (the ECN bits
/// kept), updating the header checksum incrementally (RFC 1624).
pub fn set_dscp(frame: &mut Message, dscp: u8) {
    let Some(h) = frame.front_mut(14 + 20) else {
        return;
    };
    if h[12..14] != [0x08, 0x00] {
        return;
    }
    let ip = &mut h[14..];
    let old = u16::from_be_bytes([ip[0], ip[1]]);
    ip[1] = (dscp << 2) | (ip[1] & 0b11);
    let new = u16::from_be_bytes([ip[0], ip[1]]);
    let hc = u16::from_be_bytes([ip[10], ip[11]]);
    let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

/// Starts serializing the next frame the discipline of `q` hands out; if
/// a shaper says "not before t", asks again at t.
fn start_tx(c: &mut impl Context, q: QueueRef) {
    let now = c.now();
    let pfc = c.fabric().networks[q.net as usize].pfc.is_some();
    let d = if pfc {
        crate::pfc::dequeue(c, q, now.as_nanos())
    } else {
        queue_mut(c, q).qdisc.dequeue(now.as_nanos())
    };
    if let (true, Dequeue::Frame(d)) = (pfc, d) {
        crate::pfc::release(c, d.frame);
    }
    let wq = queue_mut(c, q);
    let id = match d {
        Dequeue::Frame(d) => d.frame,
        Dequeue::Empty => {
            wq.on_wire = None;
            return;
        }
        Dequeue::NotBefore(t) => {
            wq.on_wire = None;
            let t = t.max(now.as_nanos() + 1);
            if wq.retry_at != t {
                wq.retry_at = t;
                c.schedule(Time::from_nanos(t), NetEvent::TxRetry(q));
            }
            return;
        }
    };
    wq.on_wire = Some(id);
    let (packets, bytes) = (wq.qdisc.packets(), wq.qdisc.bytes());
    wq.stats.dequeued(now.as_nanos(), packets, bytes);
    if c.fabric().config.trace_queues {
        trace_sample(c, q, now.as_nanos(), packets, bytes);
    }
    let f = c.fabric_mut();
    let frame = &f.frames[id as usize];
    if q.port_dir & 1 == 0 {
        f.pcap.record(q.net, now, frame);
    }
    let ser = f.networks[q.net as usize].cfg.serialization_ns(frame.len());
    c.schedule(
        now + std::time::Duration::from_nanos(ser),
        NetEvent::TxDone(q),
    );
}

/// Appends an occupancy sample of `q` (tracing on).
fn trace_sample(c: &mut impl Context, q: QueueRef, now: u64, packets: u32, bytes: u64) {
    let f = c.fabric_mut();
    let series = f.queue_series.entry((q.net, q.port_dir)).or_default();
    let s = qdisc::stats::OccupancySample {
        time_ns: now,
        packets,
        bytes,
    };
    qdisc::stats::push_sample(series, s);
}

/// A shaper's wait is over: try the wire again (a stale retry finds it
/// busy, or is told to wait again and schedules nothing new).
pub fn tx_retry(c: &mut impl Context, q: QueueRef) {
    if queue_mut(c, q).on_wire.is_none() {
        start_tx(c, q);
    }
}

/// A queue finished serializing its head frame.
pub fn tx_done(c: &mut impl Context, q: QueueRef) {
    let wq = queue_mut(c, q);
    let Some(id) = wq.on_wire.take() else {
        return;
    };
    let port = q.port_dir >> 1;
    let net = q.net;
    if q.port_dir & 1 == 0 {
        release_nic(c, net, port);
        let f = c.fabric_mut();
        let (n, frame) = (&mut f.networks[net as usize], &mut f.frames[id as usize]);
        match draw_fate(n, frame) {
            Err(reason) => discard(c, id, reason),
            Ok(fate) if fate.extra_ns == 0 && n.is_zero_delay_link() => {
                return deliver_across_link(c, q, id, fate.duplicate);
            }
            Ok(fate) => {
                let latency = n.cfg.latency_ns + fate.extra_ns;
                let at = c.now() + std::time::Duration::from_nanos(latency);
                propagate(c, net, port, id, at);
                if fate.duplicate {
                    let f = c.fabric_mut();
                    let copy = f.frames.insert(f.frames[id as usize].clone()) as FrameId;
                    propagate(c, net, port, copy, at);
                }
            }
        }
    } else {
        deliver(c, net, port, id, NO_PORT);
    }
    if queue_mut(c, q).on_wire.is_none() {
        start_tx(c, q);
    }
}

/// Starts the wire of `q` if it is idle (after the frame on it was
/// handed on without a `TxDone`).
pub(crate) fn restart(c: &mut impl Context, q: QueueRef) {
    if queue_mut(c, q).on_wire.is_none() {
        start_tx(c, q);
    }
}
