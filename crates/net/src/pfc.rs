//! Priority-based flow control (IEEE 802.1Qbb): lossless priorities by
//! hop-by-hop PAUSE frames.
//!
//! # Priorities
//! A network with PFC runs the strict-priority discipline `prio` with
//! DSCP classification on every egress queue; a frame's priority is its
//! class there (class `i` is priority `i`, so at most eight classes). The
//! classes of [`PfcConfig::lossless`] are lossless; the others stay
//! lossy (their FIFO limit drops as before).
//!
//! # Ingress accounting
//! A forwarding machine counts, per ingress port and lossless priority,
//! the bytes of the frames that arrived there and still wait in one of
//! its egress queues (a shared-buffer switch's ingress accounting, as in
//! the HPCC/DCQCN ns-3 simulators' `SwitchMmu`). A frame is counted from
//! the moment it is queued on an egress of a network with PFC until that
//! queue starts serializing it; a frame leaving through a network without
//! PFC is not counted. An ingress is named by the queue that feeds it:
//! on a link, the NIC at the other end; on a switched LAN, the switch's
//! queue towards the machine. Hosts do not count (they consume what
//! they receive).
//!
//! # PAUSE and XON
//! When an ingress's count for priority *p* reaches `xoff` bytes, the
//! machine sends a PFC frame ([`elvis_wire::pfc`]) with *p* enabled and
//! `quanta` pause quanta; it re-sends it every half of that time while
//! the count stays above `xon`, and sends a time of 0 (XON) once the count
//! falls to `xon`. The frame is a real 60-byte MAC Control frame: it is
//! captured on the network, travels for its serialization and the
//! network's latency, and is parsed by the receiving NIC. MAC Control
//! frames go ahead of the data queue (802.3 Annex 31B); here the frame
//! does not delay the data frames of the sender's wire.
//!
//! The upstream egress queue that receives it stops serving priority *p*
//! for `quanta × 512` bit times at the link's rate (or until XON); a
//! frame already on the wire finishes. Other priorities go on.
//!
//! # Headroom
//! After the count crosses `xoff` at time *t*, frames keep arriving: those
//! on the wire, those the upstream starts before the PAUSE reaches it,
//! and one the upstream is serializing then. With latency *L*, rate *R*,
//! the PAUSE frame's serialization *P* and largest frame *F* (MTU + 14),
//! the frames that arrive after *t* started in a window of 2*L* + *P* +
//! *F*/*R*, so they hold at most 2*LR*/8 + 60 + 2*F* bytes; the frame that
//! crossed adds at most *F*. The headroom is
//! `H = ⌈2·L·R/8⌉ + 60 + 3·F`, and an ingress admits a lossless frame
//! while its count stays within `xoff + H` (else the frame is dropped as
//! `pfc_headroom`, which the bound says never happens). Lossless classes
//! have no FIFO limit at the egress: the ingress bounds them.
//!
//! # Deadlock
//! Frames wait at an egress queue on behalf of the ingress (the upstream
//! queue) they came from. A paused upstream waits for the downstream
//! queues holding its frames; when those wait in turn on queues that
//! wait on it, nothing moves again: a PFC deadlock (Hu et al., "Deadlocks
//! in Datacenter Networks: Why Do They Form, and How to Avoid Them",
//! HotNets 2016). [`deadlocks`] finds them at the end of a run: the
//! queues paused continuously for at least `deadlock_ns` that wait, by
//! this relation, on a cycle of such queues.
//!
//! # Gaps
//! - A switched LAN's own switch does not account its ingress or send
//!   PAUSE; the machines on it pause the switch's queue towards them.
//! - PFC with another class-based discipline than `prio`.
//! - The PAUSE frame's serialization is not charged to the data wire.

use crate::qdisc::{Classify, Dequeue, Qdisc, QdiscConfig};
use crate::{
    Context, DropReason, Fabric, FrameId, NetEvent, NetId, NetworkConfig, NetworkKind, QueueRef,
};
use elvis_kernel::Time;
use elvis_message::Message;
use elvis_wire::pfc as wire;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;

/// Priorities of 802.1Qbb.
pub const PRIORITIES: usize = 8;

/// PFC on one network.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PfcConfig {
    /// Bit `i`: priority (class) `i` is lossless.
    pub lossless: u8,
    /// Ingress bytes of one priority that send PAUSE.
    pub xoff: u64,
    /// Ingress bytes of one priority at which XON is sent.
    pub xon: u64,
    /// Pause time a PAUSE asks for, in quanta of 512 bit times.
    pub quanta: u16,
    /// How long a queue must stay paused to count in a deadlock, ns.
    pub deadlock_ns: u64,
}

impl PfcConfig {
    /// The longest pause a frame can ask for.
    pub const DEFAULT_QUANTA: u16 = 0xffff;
    /// A queue paused this long without a break, waiting on a cycle, is
    /// reported deadlocked: 1 ms.
    pub const DEFAULT_DEADLOCK_NS: u64 = 1_000_000;

    /// Returns PFC for the priorities of `lossless` with the default
    /// thresholds for a network of `mtu`: Xoff ten largest frames, Xon
    /// half of it.
    pub fn new(lossless: u8, mtu: u32) -> PfcConfig {
        let xoff = 10 * (u64::from(mtu) + 14);
        PfcConfig {
            lossless,
            xoff,
            xon: xoff / 2,
            quanta: Self::DEFAULT_QUANTA,
            deadlock_ns: Self::DEFAULT_DEADLOCK_NS,
        }
    }

    /// Checks the config against the network it is for.
    ///
    /// # Errors
    /// `(key, message)`: the NDL key at fault and why.
    pub fn validate(&self, net: &NetworkConfig) -> Result<(), (&'static str, String)> {
        let classes = match net.qdisc.as_deref() {
            Some(QdiscConfig::Prio(p)) => match p.classify {
                Classify::Dscp(_) => p.weights.len(),
                Classify::Flow => {
                    return Err((
                        "pfc",
                        "PFC priorities are DSCP classes; give the network classify='dscp:…'"
                            .into(),
                    ))
                }
            },
            _ => {
                return Err((
                    "pfc",
                    "PFC needs priority classes: give the network qdisc='prio' with \
                     classify='dscp:…'"
                        .into(),
                ))
            }
        };
        if net.kind == NetworkKind::Wireless {
            return Err(("pfc", "PFC runs on wired links and switches".into()));
        }
        if self.lossless == 0 {
            return Err(("pfc", "no lossless priority listed".into()));
        }
        let top = 7 - self.lossless.leading_zeros() as usize;
        if top >= classes.min(PRIORITIES) {
            return Err((
                "pfc",
                format!(
                    "priority {top} is not a class of this network (it has {classes}, \
                     priorities 0 to {})",
                    classes.min(PRIORITIES) - 1
                ),
            ));
        }
        if self.xoff == 0 {
            return Err(("pfc_xoff", "Xoff must be above 0 bytes".into()));
        }
        if self.xon >= self.xoff {
            return Err(("pfc_xon", "Xon must be below Xoff".into()));
        }
        if self.quanta == 0 {
            return Err(("pfc_quanta", "a pause of 0 quanta pauses nothing".into()));
        }
        Ok(())
    }
}

/// PFC of one network, ready to run.
#[derive(Clone, Debug)]
pub struct PfcNet {
    pub cfg: PfcConfig,
    /// DSCP → priority.
    map: [u8; 64],
    /// Bytes an ingress may hold beyond Xoff (see "Headroom").
    pub headroom: u64,
    /// A pause of `cfg.quanta` on this network, ns.
    pause_ns: u64,
}

impl PfcNet {
    /// Prepares `cfg` (validated) for network `net`.
    pub fn new(cfg: PfcConfig, net: &NetworkConfig) -> PfcNet {
        let mut map = [0u8; 64];
        if let Some(QdiscConfig::Prio(p)) = net.qdisc.as_deref() {
            let last = p.weights.len().saturating_sub(1) as u8;
            map = [last; 64];
            if let Classify::Dscp(list) = &p.classify {
                for (i, &d) in list.iter().enumerate() {
                    map[usize::from(d & 63)] = i as u8;
                }
            }
        }
        let bps = net.bandwidth_bps.unwrap_or(0);
        let bdp2 = (u128::from(net.latency_ns) * u128::from(bps) * 2).div_ceil(8_000_000_000);
        let frame = u64::from(net.mtu) + 14;
        PfcNet {
            headroom: bdp2 as u64 + wire::FRAME_LEN as u64 + 3 * frame,
            pause_ns: wire::quanta_ns(cfg.quanta, bps),
            cfg,
            map,
        }
    }

    fn lossless(&self, prio: u8) -> bool {
        prio < 8 && self.cfg.lossless & (1 << prio) != 0
    }
}

/// A frame counted at an ingress.
#[derive(Clone, Copy, Debug)]
struct Tag {
    /// The queue feeding the ingress.
    up: QueueRef,
    /// The egress queue it waits in.
    egress: QueueRef,
    prio: u8,
    bytes: u32,
}

/// A lossless frame being handed to a forwarding machine.
#[derive(Clone, Copy, Debug)]
struct Arriving {
    machine: crate::MachineId,
    up: QueueRef,
    prio: u8,
}

/// One ingress: bytes per priority, XOFF state, counters.
#[derive(Clone, Debug, Default)]
struct Ingress {
    bytes: [u64; PRIORITIES],
    max: [u64; PRIORITIES],
    /// Priorities paused by this ingress (XOFF sent, XON not yet).
    paused: u8,
    /// When the pending refresh is due, ns (0: none).
    refresh_at: u64,
    pauses_sent: u64,
    xons_sent: u64,
    headroom_drops: u64,
}

/// One egress queue's pause state, per priority.
#[derive(Clone, Debug, Default)]
struct Egress {
    /// Paused until, ns.
    until: [u64; PRIORITIES],
    /// Start of the pause time not yet added to `paused_ns`.
    start: [u64; PRIORITIES],
    /// Start of the current unbroken pause.
    since: [u64; PRIORITIES],
    paused_ns: [u64; PRIORITIES],
    pauses_received: u64,
    xons_received: u64,
    /// When the first PAUSE arrived, ns.
    first_pause: Option<u64>,
}

impl Egress {
    fn mask(&self, now: u64) -> u8 {
        (0..PRIORITIES).fold(0, |m, i| m | (u8::from(self.until[i] > now) << i))
    }

    /// Priority `i` is paused from now until `until` (now: resumed).
    fn pause(&mut self, i: usize, now: u64, until: u64) {
        if self.until[i] > now {
            self.paused_ns[i] += now - self.start[i];
        } else {
            self.paused_ns[i] += self.until[i] - self.start[i];
            self.since[i] = now;
        }
        self.start[i] = now;
        self.until[i] = until;
    }

    fn paused_total(&self, i: usize, now: u64) -> u64 {
        self.paused_ns[i] + self.until[i].min(now).saturating_sub(self.start[i])
    }
}

/// The run's PFC state (present once a network has PFC).
#[derive(Default)]
pub struct PfcState {
    arriving: Option<Arriving>,
    tags: FxHashMap<FrameId, Tag>,
    /// By the feeding queue `(net, port_dir)`.
    ingress: BTreeMap<(NetId, u32), Ingress>,
    /// By queue `(net, port_dir)`.
    egress: BTreeMap<(NetId, u32), Egress>,
}

/// Turns PFC on for network `net` (its config validated).
pub fn enable(f: &mut Fabric, net: NetId, cfg: PfcConfig) {
    let n = &mut f.networks[net as usize];
    n.pfc = Some(Box::new(PfcNet::new(cfg, &n.cfg)));
    let pfc = n.pfc.as_deref();
    for p in n.ports.iter_mut() {
        if let Some(q) = p.queues.as_deref_mut() {
            prepare(&mut q.up.qdisc, pfc);
            if let Some(d) = q.down.as_deref_mut() {
                prepare(&mut d.qdisc, pfc);
            }
        }
    }
    f.pfc.get_or_insert_with(Box::default);
}

/// Sets the lossless classes of a queue's discipline built for a
/// network with `pfc`.
pub(crate) fn prepare(q: &mut Qdisc, pfc: Option<&PfcNet>) {
    if let (Some(p), Qdisc::Prio(d)) = (pfc, q) {
        d.set_lossless(u64::from(p.cfg.lossless));
    }
}

/// Returns the DSCP of an IPv4 frame (0 for others).
fn dscp(frame: &Message) -> u8 {
    let mut h = [0u8; 16];
    if frame.copy_to_slice(0, &mut h).is_err() || h[12..14] != [0x08, 0x00] {
        return 0;
    }
    h[15] >> 2
}

/// The queue feeding the machine at `port` of `net`.
fn feeder(kind: NetworkKind, net: NetId, port: u32) -> QueueRef {
    let port_dir = match kind {
        NetworkKind::Link => (1 - port.min(1)) << 1,
        _ => port << 1 | 1,
    };
    QueueRef { net, port_dir }
}

/// [`crate::deliver`]'s hand-off with PFC in the run: a lossless frame
/// reaching a forwarding machine is counted against its ingress by the
/// frames the machine queues while taking it.
pub(crate) fn arrived(c: &mut impl Context, net: NetId, port: u32, id: FrameId) {
    let a = {
        let f = c.fabric();
        let n = &f.networks[net as usize];
        n.pfc.as_deref().and_then(|p| {
            let prio = p.map[usize::from(dscp(&f.frames[id as usize]))];
            let machine = n.ports[port as usize].machine;
            p.lossless(prio).then_some(Arriving {
                machine,
                up: feeder(n.cfg.kind, net, port),
                prio,
            })
        })
    };
    let a = a.filter(|a| c.forwards(a.machine));
    let prev = state(c).arriving;
    state(c).arriving = a;
    c.arrived(net, port, id);
    state(c).arriving = prev;
}

/// [`arrived`] for a frame handed over without an event.
pub(crate) fn received(
    c: &mut impl Context,
    net: NetId,
    port: u32,
    frame: &mut Message,
    nested: bool,
) {
    let a = {
        let n = &c.fabric().networks[net as usize];
        n.pfc.as_deref().and_then(|p| {
            let prio = p.map[usize::from(dscp(frame))];
            p.lossless(prio).then_some(Arriving {
                machine: n.ports[port as usize].machine,
                up: feeder(n.cfg.kind, net, port),
                prio,
            })
        })
    };
    let a = a.filter(|a| c.forwards(a.machine));
    let prev = state(c).arriving;
    state(c).arriving = a;
    c.received(net, port, frame, nested);
    state(c).arriving = prev;
}

fn state(c: &mut impl Context) -> &mut PfcState {
    match c.fabric_mut().pfc.as_deref_mut() {
        Some(s) => s,
        None => unreachable!("PFC state exists while a network has PFC"),
    }
}

/// Frame `id` is about to be queued on the NIC at `port` of `net`: if it
/// leaves a forwarding machine while a lossless frame arrives there,
/// counts it against that ingress. Returns false when the ingress is past
/// its headroom (the frame is then dropped here).
pub(crate) fn admit(c: &mut impl Context, net: NetId, port: u32, id: FrameId) -> bool {
    let f = c.fabric_mut();
    let Some(a) = f.pfc.as_deref().and_then(|s| s.arriving) else {
        return true;
    };
    let n = &f.networks[net as usize];
    if n.pfc.is_none() || n.ports[port as usize].machine != a.machine {
        return true;
    }
    if !matches!(n.nic_qdisc_config(port), Some(QdiscConfig::Prio(_))) {
        // A NIC given another discipline of its own (not paused, and
        // perhaps a departure-time FIFO that never says when a frame
        // leaves): the frame leaves the PFC domain here.
        return true;
    }
    let bytes = f.frames[id as usize].len() as u32;
    let Some(p) = f.networks[a.up.net as usize].pfc.as_deref() else {
        return true;
    };
    let (xoff, limit) = (p.cfg.xoff, p.cfg.xoff + p.headroom);
    let s = state(c);
    let ing = s.ingress.entry((a.up.net, a.up.port_dir)).or_default();
    let i = usize::from(a.prio);
    if ing.bytes[i] + u64::from(bytes) > limit {
        ing.headroom_drops += 1;
        let f = c.fabric_mut();
        f.frames.remove(id as usize);
        crate::transmit::count_nic_drop(c, net, port, DropReason::PfcHeadroom);
        c.dropped(DropReason::PfcHeadroom);
        return false;
    }
    ing.bytes[i] += u64::from(bytes);
    ing.max[i] = ing.max[i].max(ing.bytes[i]);
    let egress = QueueRef {
        net,
        port_dir: port << 1,
    };
    let tag = Tag {
        up: a.up,
        egress,
        prio: a.prio,
        bytes,
    };
    s.tags.insert(id, tag);
    let bit = 1u8 << a.prio;
    if ing.bytes[i] >= xoff && ing.paused & bit == 0 {
        ing.paused |= bit;
        send(c, a.up, bit, 0);
    }
    true
}

/// Frame `id` left its egress queue (to the wire, or dropped): releases
/// its bytes at its ingress, sending XON there when they fall to Xon.
pub(crate) fn release(c: &mut impl Context, id: FrameId) {
    let s = state(c);
    let Some(t) = s.tags.remove(&id) else {
        return;
    };
    let ing = s.ingress.entry((t.up.net, t.up.port_dir)).or_default();
    let i = usize::from(t.prio);
    ing.bytes[i] -= u64::from(t.bytes);
    let (bytes, bit) = (ing.bytes[i], 1u8 << t.prio);
    let xon = c.fabric().networks[t.up.net as usize]
        .pfc
        .as_deref()
        .map_or(0, |p| p.cfg.xon);
    let ing = state(c)
        .ingress
        .entry((t.up.net, t.up.port_dir))
        .or_default();
    if ing.paused & bit != 0 && bytes <= xon {
        ing.paused &= !bit;
        send(c, t.up, 0, bit);
    }
}

/// Sends the PFC frame that pauses `on` and resumes `off` to queue `up`.
fn send(c: &mut impl Context, up: QueueRef, on: u8, off: u8) {
    let now = c.now();
    let f = c.fabric_mut();
    let n = &f.networks[up.net as usize];
    let Some(p) = n.pfc.as_deref() else {
        return;
    };
    let (net, feeder_port) = (up.net, up.port_dir >> 1);
    let sender = if up.port_dir & 1 == 1 {
        feeder_port
    } else {
        1 - feeder_port.min(1)
    };
    let mut quanta = [0u16; PRIORITIES];
    for (i, q) in quanta.iter_mut().enumerate() {
        if on & (1 << i) != 0 {
            *q = p.cfg.quanta;
        }
    }
    let repr = wire::Repr {
        src: crate::port_mac(net, sender).0,
        enable: on | off,
        quanta,
    };
    let ser = n.cfg.serialization_ns(wire::FRAME_LEN);
    let at = now + std::time::Duration::from_nanos(ser + n.cfg.latency_ns);
    let refresh = p.pause_ns / 2;
    let msg = Message::from_vec(repr.to_bytes());
    f.pcap.record(net, now, &msg);
    let frame = f.frames.insert(msg) as FrameId;
    let s = state(c);
    let ing = s.ingress.entry((up.net, up.port_dir)).or_default();
    if on != 0 {
        ing.pauses_sent += 1;
    } else {
        ing.xons_sent += 1;
    }
    let again = (ing.paused != 0 && refresh > 0).then(|| now.as_nanos() + refresh);
    if let Some(t) = again {
        ing.refresh_at = t;
    }
    c.schedule(at, NetEvent::Pfc { q: up, frame });
    if let Some(t) = again {
        c.schedule(Time::from_nanos(t), NetEvent::PfcRefresh(up));
    }
}

/// A refresh of the PAUSE an ingress keeps on its feeder is due.
pub fn refresh(c: &mut impl Context, up: QueueRef) {
    let now = c.now().as_nanos();
    let s = state(c);
    let Some(ing) = s.ingress.get(&(up.net, up.port_dir)) else {
        return;
    };
    if ing.refresh_at == now && ing.paused != 0 {
        let paused = ing.paused;
        send(c, up, paused, 0);
    }
}

/// A PFC frame reached queue `q`'s NIC (or switch port): pauses or
/// resumes its priorities.
pub fn pause_frame(c: &mut impl Context, q: QueueRef, frame: FrameId) {
    let now = c.now().as_nanos();
    let f = c.fabric_mut();
    let msg = f.frames.remove(frame as usize);
    let bps = f.networks[q.net as usize].cfg.bandwidth_bps.unwrap_or(0);
    let bytes = msg.to_vec();
    let Ok(repr) = wire::Repr::parse(&wire::Packet::new_unchecked(&bytes[..])) else {
        return c.dropped(DropReason::UnknownDestination);
    };
    let e = state(c).egress.entry((q.net, q.port_dir)).or_default();
    let mut resumes = false;
    for i in 0..PRIORITIES {
        if repr.enable & (1 << i) == 0 {
            continue;
        }
        let until = now + wire::quanta_ns(repr.quanta[i], bps);
        resumes |= until < e.until[i];
        e.pause(i, now, until);
    }
    if repr
        .quanta
        .iter()
        .zip(0..)
        .any(|(&t, i)| t != 0 && repr.enable & (1 << i) != 0)
    {
        e.pauses_received += 1;
        e.first_pause.get_or_insert(now);
    } else {
        e.xons_received += 1;
    }
    if resumes {
        crate::transmit::tx_retry(c, q);
    }
}

/// The next frame of queue `q` on a network with PFC: the discipline's,
/// skipping paused priorities; `NotBefore` the earliest resumption when
/// only paused frames wait.
pub(crate) fn dequeue(c: &mut impl Context, q: QueueRef, now: u64) -> Dequeue {
    let f = c.fabric_mut();
    let e = f
        .pfc
        .as_deref()
        .and_then(|s| s.egress.get(&(q.net, q.port_dir)));
    let (mask, until) = e.map_or((0, [0; PRIORITIES]), |e| (e.mask(now), e.until));
    let n = &mut f.networks[q.net as usize];
    let wq = n.queue_dir_mut(q.port_dir >> 1, q.port_dir & 1 == 0);
    use crate::qdisc::Discipline;
    let Qdisc::Prio(p) = &mut wq.qdisc else {
        return wq.qdisc.dequeue(now);
    };
    if mask == 0 {
        return p.dequeue(now);
    }
    if let Some(d) = p.dequeue_except(u64::from(mask)) {
        return Dequeue::Frame(d);
    }
    let resume = (0..PRIORITIES)
        .filter(|&i| mask & (1 << i) != 0 && p.holds(i))
        .map(|i| until[i])
        .min();
    match resume {
        Some(t) => Dequeue::NotBefore(t),
        None => Dequeue::Empty,
    }
}

/// PFC counters of one queue and the ingress it feeds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PortPfc {
    pub net: NetId,
    /// `port << 1 | dir` of the queue.
    pub port_dir: u32,
    /// PAUSE frames (some time non-zero) this queue's NIC or switch port
    /// received.
    pub pauses_received: u64,
    /// XON frames (every enabled time zero) it received.
    pub xons_received: u64,
    /// Time each priority was paused, ns.
    pub paused_ns: [u64; PRIORITIES],
    /// How long the queue has been paused without a break at the end, ns
    /// (0: not paused then).
    pub paused_now_ns: u64,
    /// When the first PAUSE reached it, ns.
    pub first_pause_ns: Option<u64>,
    /// PAUSE and XON frames sent to this queue by the ingress it feeds.
    pub pauses_sent: u64,
    pub xons_sent: u64,
    /// Most bytes that ingress held, per priority.
    pub ingress_max: [u64; PRIORITIES],
    /// That ingress's Xoff and headroom, bytes.
    pub xoff: u64,
    pub headroom: u64,
    /// Lossless frames the ingress refused beyond its headroom.
    pub headroom_drops: u64,
}

/// Returns the PFC counters of every queue that sent or received PFC
/// frames, in (network, port, direction) order.
pub fn ports(f: &Fabric, now: u64) -> Vec<PortPfc> {
    let Some(s) = f.pfc.as_deref() else {
        return Vec::new();
    };
    let mut out: BTreeMap<(NetId, u32), PortPfc> = BTreeMap::new();
    let row = |out: &mut BTreeMap<(NetId, u32), PortPfc>, k: (NetId, u32)| {
        let p = f.networks[k.0 as usize].pfc.as_deref();
        out.entry(k)
            .or_insert_with(|| PortPfc {
                net: k.0,
                port_dir: k.1,
                xoff: p.map_or(0, |p| p.cfg.xoff),
                headroom: p.map_or(0, |p| p.headroom),
                ..PortPfc::default()
            })
            .clone()
    };
    for (&k, e) in &s.egress {
        let mut r = row(&mut out, k);
        r.pauses_received = e.pauses_received;
        r.xons_received = e.xons_received;
        r.first_pause_ns = e.first_pause;
        for i in 0..PRIORITIES {
            r.paused_ns[i] = e.paused_total(i, now);
            if e.until[i] > now {
                r.paused_now_ns = r.paused_now_ns.max(now - e.since[i]);
            }
        }
        out.insert(k, r);
    }
    for (&k, ing) in &s.ingress {
        let mut r = row(&mut out, k);
        r.pauses_sent = ing.pauses_sent;
        r.xons_sent = ing.xons_sent;
        r.ingress_max = ing.max;
        r.headroom_drops = ing.headroom_drops;
        out.insert(k, r);
    }
    out.into_values().collect()
}

/// Returns the PFC deadlocks at `now` (see "Deadlock"): each a set of
/// queues `(net, port_dir)`, sorted, that are paused for at least their
/// network's `deadlock_ns` and wait on a cycle of such queues.
pub fn deadlocks(f: &Fabric, now: u64) -> Vec<Vec<(NetId, u32)>> {
    let Some(s) = f.pfc.as_deref() else {
        return Vec::new();
    };
    let stuck = |k: &(NetId, u32), prio: u8| {
        let Some(e) = s.egress.get(k) else {
            return false;
        };
        let i = usize::from(prio);
        let min = f.networks[k.0 as usize]
            .pfc
            .as_deref()
            .map_or(u64::MAX, |p| p.cfg.deadlock_ns);
        e.until[i] > now && now - e.since[i] >= min
    };
    // up → the stuck queues holding its frames, where up is stuck too.
    let mut waits: BTreeMap<(NetId, u32), Vec<(NetId, u32)>> = BTreeMap::new();
    let mut tags: Vec<&Tag> = s.tags.values().collect();
    tags.sort_by_key(|t| (t.up.net, t.up.port_dir, t.egress.net, t.egress.port_dir));
    for t in tags {
        let (u, e) = ((t.up.net, t.up.port_dir), (t.egress.net, t.egress.port_dir));
        if stuck(&u, t.prio) && stuck(&e, t.prio) {
            let v = waits.entry(u).or_default();
            if !v.contains(&e) {
                v.push(e);
            }
        }
    }
    // Peel off the queues that wait on nothing stuck: what remains waits
    // on a cycle.
    loop {
        let dead: Vec<(NetId, u32)> = (waits.iter())
            .filter(|(_, v)| v.iter().all(|e| !waits.contains_key(e)))
            .map(|(k, _)| *k)
            .collect();
        if dead.is_empty() {
            break;
        }
        for k in dead {
            waits.remove(&k);
        }
    }
    components(&waits)
}

/// Splits the wait graph into its weakly connected parts.
fn components(waits: &BTreeMap<(NetId, u32), Vec<(NetId, u32)>>) -> Vec<Vec<(NetId, u32)>> {
    let mut parent: BTreeMap<(NetId, u32), (NetId, u32)> = waits.keys().map(|&k| (k, k)).collect();
    fn root(p: &mut BTreeMap<(NetId, u32), (NetId, u32)>, mut k: (NetId, u32)) -> (NetId, u32) {
        while p[&k] != k {
            k = p[&k];
        }
        k
    }
    for (&k, v) in waits {
        for e in v.iter().filter(|e| waits.contains_key(e)) {
            let (a, b) = (root(&mut parent, k), root(&mut parent, *e));
            if a != b {
                parent.insert(a.max(b), a.min(b));
            }
        }
    }
    let mut groups: BTreeMap<(NetId, u32), Vec<(NetId, u32)>> = BTreeMap::new();
    for &k in waits.keys() {
        let r = root(&mut parent, k);
        groups.entry(r).or_default().push(k);
    }
    groups.into_values().collect()
}
