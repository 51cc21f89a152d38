//! Networks: switched LANs and point-to-point links that carry real frames.
//!
//! # Timing model
//! Serialization takes `ceil(frame_bytes × 8 × 10⁹ / bandwidth)` ns, where
//! `frame_bytes` is the whole Ethernet frame as captured (header + payload +
//! padding to 60 bytes; no preamble, FCS or inter-frame gap). `latency` is
//! the one-way propagation delay across the network.
//!
//! - **Link** (two machines): the sender's NIC queue serializes the frame,
//!   then it propagates: arrival = `S/B + L` on an idle link.
//! - **Switch** (a store-and-forward LAN): the sender's NIC serializes the
//!   frame, it propagates for `L` to the switch, waits in the output queue
//!   of the receiver's port and is serialized again onto that port:
//!   arrival = `S/B + L + S/B` on an idle LAN. Output queues are drop-tail
//!   with `queue` packets each (unbounded if not set), not counting the
//!   frame being serialized onto the port.
//! - **Ideal** (no bandwidth given): no serialization and no queues;
//!   arrival = `L`. This is Elvis' default network.
//!
//! # Departure-time FIFO
//! A drop-tail FIFO feeding a wire at a fixed rate is work-conserving, so
//! its timing is known when a frame is queued: `start = max(now,
//! busy_until)`, `done = start + S/B`, `busy_until = done`. Such queues
//! (every NIC and switch port whose discipline is drop-tail, unless
//! `Simulation::set_evented_queues` asks otherwise) therefore schedule the
//! frame's arrival (at the switch, or at the machine) when it is queued,
//! and no event marks the end of its serialization (as in ns-3's and
//! OMNeT++'s channels, which compute the arrival at transmission). A
//! small ring of `(start, done, bytes)` per queue answers the questions
//! the events used to: the frames waiting at `t` are those with
//! `start > t` (the drop-tail limit counts these), those in a NIC are
//! those with `done > t` (back-pressure), and the queue statistics record
//! each departure at its `start`, lazily, before any later arrival and at
//! report time, so they are the evented path's; a traced queue records
//! its occupancy series the same way (`WireQueue::trace_at`), point for
//! point the evented path's, and a captured NIC hands each frame to the
//! capture with its start time when it is queued (the capture holds it
//! until the clock gets there, `crate::pcap`). So observing a run never
//! changes it (`departure::queue_traces_are_the_evented_paths_and_change_nothing`,
//! `departure::captures_are_the_evented_paths_and_change_nothing`). At an
//! instant where a
//! frame leaves and another arrives the departure goes first; the evented
//! path orders such ties by event order, so a peak occupancy (or, at a
//! full queue, a drop) can differ there. Frames that reach a switch from
//! two ports at the same nanosecond are taken in the order their arrival
//! events were scheduled, which is queueing order here and departure
//! order on the evented path (the `cubic-vs-compound` example drops 378
//! frames one way and 370 the other, a tie having decided a drop that
//! TCP's reaction spreads). Other disciplines keep the evented path: a
//! `TxDone` event per frame, and the discipline asked for the next frame
//! when the wire goes idle.
//!
//! # Impairments
//! Loss, corruption, duplication and reordering are drawn once per
//! traversal of the network, from the network's own random stream, when the
//! frame is handed to the sender's NIC (on the departure-time path; on
//! the evented path, when it leaves the NIC after its serialization; on an
//! ideal network, when it is sent), in that order, each only when its
//! probability is non-zero (so a network without duplication or reordering
//! draws exactly as it did before they existed). A frame's fate is drawn
//! the same way either way; what differs between the two paths is the
//! order of the draws of the two ends of a link, which take turns on the
//! one stream: the evented path draws in order of departure, the other in
//! order of queueing. A lost frame still occupies the NIC and the wire
//! for its serialization:
//!
//! 1. **loss**: the frame vanishes (a lost frame is neither corrupted,
//!    duplicated nor reordered);
//! 2. **corruption**: one random bit of the frame is flipped; the receiving
//!    stack's checksums must catch it (Ethernet's FCS is not modelled);
//! 3. **duplication**: an exact copy of the (possibly corrupted) frame
//!    follows the original, arriving at the same instant right after it
//!    (on a switch both copies then queue for, and are serialized onto, the
//!    egress port); the copy is not impaired again, as with Linux netem's
//!    `duplicate`;
//! 4. **reordering**: the frame (with its copy) is held back for an extra
//!    `reorder_delay_ns` of propagation, so frames sent after it within
//!    that time overtake it (netem's `delay … reorder` turned around: here
//!    the impaired frames are late, the others keep the exact timing
//!    above).
//!
//! # Back-pressure
//! Each NIC holds at most `txqueuelen` frames (waiting or being serialized;
//! on an ideal network: not yet delivered). A socket send on a full NIC
//! blocks until there is room, as on Linux; frames the stack itself
//! originates (ARP, ICMP replies) are dropped instead. This bounds the
//! frames in flight by `machines × txqueuelen` whatever the traffic.
//!
//! Who waits (a blocked task, a TCP connection, a foreign stack) is woken
//! as each frame leaves the NIC on the evented path and on ideal
//! networks. A departure-time NIC has no event per departure: it
//! schedules one `NicRoom` wake-up, when its schedule has drained to
//! `txqueuelen − max(1, txqueuelen / 4)` frames (24 of 32), the way a
//! driver wakes its stopped queue once a batch of descriptors is free
//! (Linux ixgbe's `TX_WAKE_THRESHOLD`). A bulk sender then refills a
//! quarter of the NIC per wake-up instead of one frame. The wire never
//! goes idle while data waits (frames are still queued when the waiters
//! run, at that very instant), so every frame leaves when it would have;
//! what changes is when a sender hands frames over (earlier, and in
//! batches), and so its own measurements (a TCP RTT sample includes the
//! frame's wait in the NIC).
//!
//! # Queue disciplines
//! Every egress queue (a NIC, a switch output port) runs a
//! [`crate::qdisc::Qdisc`]: the network offers it each arriving frame
//! (it may queue, mark CE, or drop it with its reason) and asks it for the
//! next frame whenever the wire goes idle; a shaper that answers "not
//! before t" gets asked again at t (a `TxRetry` event). By default switch
//! ports are drop-tail with `queue` frames and NICs are unbounded FIFOs
//! paced by `txqueuelen`, exactly the timing above. `NetworkConfig::qdisc`
//! (every egress of the network) and `Simulation::set_qdisc` (one NIC)
//! choose another discipline; a router's forwarded datagrams then go to
//! that discipline without the `txqueuelen` check. Per-queue counters
//! (`crate::qdisc::stats`) feed the report's `queues`.
//!
//! # Forwarding
//! The switch knows every attached MAC address (as a learning switch does
//! after warm-up): simulator MACs encode the port number, so the forwarding
//! table costs no memory. Broadcast frames go to every other port,
//! multicast frames to the ports whose machines joined the group (static
//! membership, like IGMP snooping), unknown unicast is dropped.

use crate::machine::IfaceId;
use crate::machine::MachineId;
use crate::qdisc::stats::OccupancySample;
use crate::qdisc::{self, Dequeue, Discipline, Enqueue, Limit, Qdisc, QdiscConfig, Queued};
use crate::report::DropReason;
use crate::world::{Event, World};
use elvis_kernel::rng::{self, Rng, StreamKind};
use elvis_kernel::Time;
use elvis_message::Message;
use elvis_wire::EthernetAddress;
use rand::Rng as _;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;

/// Index of a network in the simulation.
pub type NetId = u32;
/// Index of a frame in flight.
pub(crate) type FrameId = u32;

/// How a network joins its machines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum NetworkKind {
    /// A switched LAN with a port (and output queue) per machine.
    #[default]
    Switch,
    /// A point-to-point link between exactly two machines.
    Link,
}

/// "No sender NIC to release" in a delivery event.
pub(crate) const NO_PORT: u32 = u32::MAX;

/// The properties of a network.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NetworkConfig {
    pub name: String,
    pub kind: NetworkKind,
    /// Bits per second; `None` means infinite (no serialization, no queue).
    pub bandwidth_bps: Option<u64>,
    /// One-way propagation delay, ns.
    pub latency_ns: u64,
    /// Probability that a frame is lost crossing the network.
    pub loss: f64,
    /// Probability that a frame gets one bit flipped crossing the network.
    pub corruption: f64,
    /// Probability that a frame is delivered twice (see "Impairments").
    pub duplicate: f64,
    /// Probability that a frame is held back by `reorder_delay_ns` and so
    /// overtaken by the frames sent after it (see "Impairments").
    pub reorder: f64,
    /// Extra propagation delay of a reordered frame, ns
    /// ([`NetworkConfig::DEFAULT_REORDER_DELAY_NS`] unless set).
    pub reorder_delay_ns: u64,
    /// Largest IP datagram per frame.
    pub mtu: u32,
    /// Capacity of each switch output queue, packets (`None` = unbounded),
    /// not counting the frame being serialized. A link has no switch: there
    /// `Some(q)` sizes the NICs at its two ends instead, which then hold
    /// `q` waiting frames plus the one on the wire (`txqueuelen = q + 1`),
    /// like the output queue of a router's point-to-point interface.
    pub queue: Option<u32>,
    /// Capacity of each NIC's transmit queue, frames (waiting or being
    /// serialized); set from `queue` on a link that has one.
    pub txqueuelen: u32,
    /// Queue discipline of every egress queue on this network (switch
    /// output ports and the NICs attached to it); `None` keeps the
    /// defaults: drop-tail switch ports of `queue` packets and NICs
    /// bounded by `txqueuelen` (see "Queue disciplines").
    pub qdisc: Option<QdiscConfig>,
}

impl NetworkConfig {
    /// Default NIC queue: small enough that a million busy senders keep
    /// little in flight, large enough to fill a link.
    pub const DEFAULT_TXQUEUELEN: u32 = 32;

    /// Default hold-back of a reordered frame: 1 ms, the delay of the
    /// examples in netem's manual page scaled to a LAN. On a 100 Mbit/s
    /// path about eight full-size frames overtake it, enough to trigger a
    /// TCP sender's fast retransmit (three duplicate ACKs).
    pub const DEFAULT_REORDER_DELAY_NS: u64 = 1_000_000;

    /// Returns an ideal network: infinite bandwidth, no latency, no loss.
    pub fn ideal(name: impl Into<String>) -> Self {
        NetworkConfig {
            name: name.into(),
            kind: NetworkKind::Switch,
            bandwidth_bps: None,
            latency_ns: 0,
            loss: 0.0,
            corruption: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_delay_ns: Self::DEFAULT_REORDER_DELAY_NS,
            mtu: 1500,
            queue: None,
            txqueuelen: Self::DEFAULT_TXQUEUELEN,
            qdisc: None,
        }
    }

    /// Sets bandwidth (bit/s) and latency (ns).
    pub fn with_rate(mut self, bandwidth_bps: u64, latency_ns: u64) -> Self {
        self.bandwidth_bps = Some(bandwidth_bps);
        self.latency_ns = latency_ns;
        self
    }

    /// Returns the serialization time of a frame of `bytes`, in ns.
    pub fn serialization_ns(&self, bytes: usize) -> u64 {
        match self.bandwidth_bps {
            None | Some(0) => 0,
            // Frames are far below the 2.3 GB where `bytes × 8 × 10⁹`
            // overflows a u64: one 64-bit division instead of a 128-bit one.
            Some(bps) if bytes < 2_000_000_000 => (bytes as u64 * 8_000_000_000).div_ceil(bps),
            Some(bps) => {
                let bits = bytes as u128 * 8 * 1_000_000_000;
                u64::try_from(bits.div_ceil(u128::from(bps))).unwrap_or(u64::MAX)
            }
        }
    }
}

/// Counters of one network, in the run report.
#[derive(Clone, Debug, Default, Serialize)]
pub struct NetStats {
    pub frames_sent: u64,
    pub bytes_sent: u64,
    pub frames_delivered: u64,
    pub lost: u64,
    pub corrupted: u64,
    /// Frames that got a duplicate (each counts once).
    pub duplicated: u64,
    /// Frames held back by the reorder draw.
    pub reordered: u64,
    pub queue_drops: u64,
}

/// One frame of a departure-time FIFO (see "Departure-time FIFO"): when
/// its serialization starts and ends, ns, and its length.
#[derive(Clone, Copy, Debug)]
struct Slot {
    start: u64,
    done: u64,
    bytes: u32,
}

/// One egress queue: its discipline, the frame being serialized, and its
/// statistics.
pub(crate) struct WireQueue {
    qdisc: Qdisc,
    /// The frame on the wire (out of the discipline already).
    on_wire: Option<FrameId>,
    /// Time of the latest retry scheduled for a shaper that said
    /// [`Dequeue::NotBefore`], ns (0: none).
    retry_at: u64,
    /// The departure schedule of a drop-tail queue run analytically: its
    /// frames not yet fully serialized, in order (empty on the evented
    /// path). The first `started` have left the queue for the wire.
    sched: std::collections::VecDeque<Slot>,
    started: u32,
    /// Bytes of the frames of `sched` that have not started.
    waiting_bytes: u64,
    pub stats: qdisc::stats::QueueStats,
    /// The occupancy series of a traced queue run analytically (as the
    /// evented path records it in `World::queue_series`; `None` when not
    /// traced), its departures recorded lazily like `stats`.
    // (Boxed: a pointer, not a `Vec`'s three words, in every queue.)
    #[allow(clippy::box_collection)]
    trace: Option<Box<Vec<OccupancySample>>>,
}

impl WireQueue {
    fn new(qdisc: Qdisc) -> Self {
        WireQueue {
            qdisc,
            on_wire: None,
            retry_at: 0,
            sched: std::collections::VecDeque::new(),
            started: 0,
            waiting_bytes: 0,
            stats: Default::default(),
            trace: None,
        }
    }

    /// Appends a sample to the trace, if traced.
    #[inline]
    fn sample(&mut self, time_ns: u64, packets: u32, bytes: u64) {
        if let Some(t) = self.trace.as_mut() {
            qdisc::stats::push_sample(
                t,
                OccupancySample {
                    time_ns,
                    packets,
                    bytes,
                },
            );
        }
    }

    /// Returns the occupancy series as of `end_ns` of a queue traced on
    /// the analytic path (the departures due by then replayed on a copy),
    /// or `None`.
    pub fn trace_at(&self, end_ns: u64) -> Option<Vec<OccupancySample>> {
        let mut t = *self.trace.clone()?;
        for (time_ns, packets, bytes) in self.departures_by(end_ns) {
            let sample = OccupancySample {
                time_ns,
                packets,
                bytes,
            };
            qdisc::stats::push_sample(&mut t, sample);
        }
        Some(t)
    }

    /// The departures not yet recorded that start by `end_ns`, in order:
    /// (start, frames then waiting, bytes then waiting).
    fn departures_by(&self, end_ns: u64) -> impl Iterator<Item = (u64, u32, u64)> + '_ {
        let len = self.sched.len() as u32;
        let mut waiting_bytes = self.waiting_bytes;
        (self.sched.iter().enumerate().skip(self.started as usize))
            .take_while(move |(_, s)| s.start <= end_ns)
            .map(move |(i, s)| {
                waiting_bytes -= u64::from(s.bytes);
                (s.start, len - i as u32 - 1, waiting_bytes)
            })
    }

    /// Returns the discipline (for the report).
    pub fn qdisc(&self) -> &Qdisc {
        &self.qdisc
    }

    /// Returns true when nothing waits or is on the wire at `now_ns`.
    fn is_idle(&self, now_ns: u64) -> bool {
        self.on_wire.is_none()
            && self.qdisc.packets() == 0
            && self.sched.back().is_none_or(|s| s.done <= now_ns)
    }

    /// Brings the departure schedule up to `now_ns`: records the frames
    /// that started serializing by then as dequeued (at their start, in
    /// order), and forgets those fully serialized. Departures at an
    /// instant come before arrivals at it.
    #[inline]
    fn settle(&mut self, now_ns: u64) {
        // The common case first: every frame started and fully serialized.
        if self.started as usize == self.sched.len()
            && self.sched.back().is_none_or(|s| s.done <= now_ns)
        {
            self.sched.clear();
            self.started = 0;
            return;
        }
        while let Some(&s) = self.sched.get(self.started as usize) {
            if s.start > now_ns {
                break;
            }
            self.started += 1;
            self.waiting_bytes -= u64::from(s.bytes);
            let waiting = self.sched.len() as u32 - self.started;
            self.stats.dequeued(s.start, waiting, self.waiting_bytes);
            self.sample(s.start, waiting, self.waiting_bytes);
        }
        while self.sched.front().is_some_and(|s| s.done <= now_ns) {
            self.sched.pop_front();
            self.started -= 1;
        }
    }

    /// Returns the frames and bytes waiting (not on the wire), as of the
    /// last [`WireQueue::settle`].
    fn waiting(&self) -> (u32, u64) {
        (self.sched.len() as u32 - self.started, self.waiting_bytes)
    }

    /// Appends a frame of `bytes` taking `ser_ns` on the wire to the
    /// departure schedule (settled at `now_ns`: an empty schedule is an
    /// idle wire); returns when its serialization ends.
    fn push(&mut self, now_ns: u64, ser_ns: u64, bytes: u32) -> u64 {
        if self.sched.is_empty() {
            // The wire is idle: the frame goes straight onto it, queued
            // and dequeued at this instant.
            let done = now_ns + ser_ns;
            self.sched.push_back(Slot {
                start: now_ns,
                done,
                bytes,
            });
            self.started += 1;
            self.stats.passed_through(now_ns, u64::from(bytes));
            // (As the evented path: queued, then dequeued at once.)
            self.sample(now_ns, 1, u64::from(bytes));
            self.sample(now_ns, 0, 0);
            return done;
        }
        let start = self.sched.back().map_or(now_ns, |s| s.done.max(now_ns));
        let done = start + ser_ns;
        self.sched.push_back(Slot { start, done, bytes });
        self.waiting_bytes += u64::from(bytes);
        let (packets, waiting_bytes) = self.waiting();
        self.stats.enqueued(now_ns, packets, waiting_bytes);
        self.sample(now_ns, packets, waiting_bytes);
        // A frame that finds the wire idle starts at once.
        self.settle(now_ns);
        done
    }

    /// Returns how many frames are in the queue or on the wire at
    /// `now_ns` on the analytic path.
    #[inline]
    fn scheduled_at(&self, now_ns: u64) -> u32 {
        let (Some(front), Some(back)) = (self.sched.front(), self.sched.back()) else {
            return 0;
        };
        // The common cases first: all serialized, or none yet.
        if back.done <= now_ns {
            return 0;
        }
        if front.done > now_ns {
            return self.sched.len() as u32;
        }
        (self.sched.len() - self.sched.partition_point(|s| s.done <= now_ns)) as u32
    }

    /// Returns the statistics as of `end_ns` (the analytic path records
    /// departures lazily: this replays those due by then on a copy).
    pub fn stats_at(&self, end_ns: u64) -> qdisc::stats::QueueStats {
        let mut stats = self.stats.clone();
        for (start, packets, bytes) in self.departures_by(end_ns) {
            stats.dequeued(start, packets, bytes);
        }
        stats
    }

    /// Returns how many frames wait in the queue at `end_ns`.
    pub fn packets_at(&self, end_ns: u64) -> u32 {
        let scheduled = self.sched.iter().skip(self.started as usize);
        self.qdisc.packets() + scheduled.filter(|s| s.start > end_ns).count() as u32
    }
}

/// The two queues of a switch port (NIC → switch, switch → NIC).
pub(crate) struct PortQueues {
    pub up: WireQueue,
    /// The switch's queue towards the port, made on first use (a link's
    /// ports never use it: half the queue memory of a link).
    pub down: Option<Box<WireQueue>>,
    /// TCP connections (machine, socket slot) waiting for NIC room.
    tcp_waiters: Vec<(MachineId, u32)>,
    /// A foreign stack waits for NIC room (see `crate::foreign`).
    foreign_waiting: bool,
    /// A `NicRoom` wake-up is pending (see "Back-pressure").
    room_wake: bool,
}

/// Where a machine's interface plugs into a network.
pub(crate) struct Port {
    pub machine: MachineId,
    pub iface: IfaceId,
    /// Frames in the NIC on the evented path or an ideal network (see
    /// "Back-pressure"; the analytic path counts its departure schedule).
    pub inflight: u32,
    /// A task blocked on a full NIC.
    pub waiter: Option<crate::executor::TaskId>,
    pub(crate) queues: Option<Box<PortQueues>>,
}

/// Identifies one direction of one port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QueueRef {
    pub net: NetId,
    /// `port << 1 | dir`, dir 0 = up (NIC), 1 = down (switch egress).
    pub port_dir: u32,
}

/// A network and its ports.
pub(crate) struct Network {
    pub cfg: NetworkConfig,
    pub ports: Vec<Port>,
    pub rng: Rng,
    /// Static neighbour table: IPv4 address → port.
    pub ip_to_port: FxHashMap<u32, u32>,
    /// Multicast MAC → member ports.
    pub multicast: BTreeMap<[u8; 6], Vec<u32>>,
    /// MACs not made by the simulator (foreign stacks) → port.
    pub foreign_macs: FxHashMap<[u8; 6], u32>,
    pub stats: NetStats,
    pub index: NetId,
    /// Per-interface NIC disciplines (`Simulation::set_qdisc`), by port.
    pub nic_qdisc: BTreeMap<u32, QdiscConfig>,
    /// The configuration draws at least one impairment (see
    /// "Impairments"; fixed when the network is made).
    impaired: bool,
}

impl Network {
    pub fn new(index: NetId, mut cfg: NetworkConfig, seed: u64) -> Self {
        if let (NetworkKind::Link, Some(q)) = (cfg.kind, cfg.queue) {
            // A link has no switch: its queues are the NICs at its ends.
            cfg.txqueuelen = q.saturating_add(1);
        }
        let impaired =
            cfg.loss != 0.0 || cfg.corruption != 0.0 || cfg.duplicate != 0.0 || cfg.reorder != 0.0;
        Network {
            impaired,
            cfg,
            ports: Vec::new(),
            rng: rng::stream(seed, StreamKind::Network, u64::from(index)),
            ip_to_port: FxHashMap::default(),
            multicast: BTreeMap::new(),
            foreign_macs: FxHashMap::default(),
            stats: NetStats::default(),
            index,
            nic_qdisc: BTreeMap::new(),
        }
    }

    /// Returns the MAC address of `port` (locally administered, encodes the
    /// network and port so the switch needs no table).
    pub fn mac(&self, port: u32) -> EthernetAddress {
        port_mac(self.index, port)
    }

    /// Returns the port a unicast MAC belongs to, if any.
    pub fn port_of_mac(&self, mac: [u8; 6]) -> Option<u32> {
        if mac[0] == 0x02 && mac[1] == (self.index & 0xff) as u8 {
            let port = u32::from_be_bytes([mac[2], mac[3], mac[4], mac[5]]);
            if (port as usize) < self.ports.len() {
                return Some(port);
            }
        }
        self.foreign_macs.get(&mac).copied()
    }

    /// Adds a port for `machine`'s interface `iface`; returns its number.
    pub fn add_port(&mut self, machine: MachineId, iface: IfaceId) -> u32 {
        let port = self.ports.len() as u32;
        self.ports.push(Port {
            machine,
            iface,
            inflight: 0,
            waiter: None,
            queues: None,
        });
        port
    }

    fn is_ideal(&self) -> bool {
        self.cfg.bandwidth_bps.is_none()
    }

    /// Returns the configured discipline of the NIC at `port`, if it is
    /// not the default one.
    pub fn nic_qdisc_config(&self, port: u32) -> Option<&QdiscConfig> {
        self.nic_qdisc.get(&port).or(self.cfg.qdisc.as_ref())
    }

    /// Returns fresh queues for `port` (both directions).
    fn new_queues(&self, port: u32) -> PortQueues {
        let bps = self.cfg.bandwidth_bps;
        // Configs were validated when they were set: building cannot fail
        // (and falls back to the default if it somehow did).
        let build = |c: Option<&QdiscConfig>, default: Limit| {
            c.and_then(|c| c.build(bps).ok())
                .unwrap_or(Qdisc::DropTail(qdisc::DropTail::new(default)))
        };
        PortQueues {
            // The default NIC queue is bounded by `txqueuelen` through
            // back-pressure, not by the discipline.
            up: WireQueue::new(build(self.nic_qdisc_config(port), Limit::Unbounded)),
            down: None,
            tcp_waiters: Vec::new(),
            foreign_waiting: false,
            room_wake: false,
        }
    }

    /// Gives the NIC at `port` its own discipline (validated by the
    /// caller); a NIC whose queue is in use keeps its old one.
    ///
    /// # Errors
    /// The NIC holds frames.
    pub fn set_nic_qdisc(
        &mut self,
        port: u32,
        cfg: QdiscConfig,
        now_ns: u64,
    ) -> Result<(), String> {
        if let Some(q) = self.ports[port as usize].queues.as_deref() {
            if !q.up.is_idle(now_ns) {
                return Err("its queue holds frames".into());
            }
        }
        self.nic_qdisc.insert(port, cfg);
        if let Some(q) = self.ports[port as usize].queues.as_deref_mut() {
            let c = self
                .nic_qdisc
                .get(&port)
                .and_then(|c| c.build(self.cfg.bandwidth_bps).ok());
            if let Some(c) = c {
                q.up.qdisc = c;
            }
        }
        Ok(())
    }

    /// Returns a fresh switch queue towards a port.
    fn new_down(&self) -> WireQueue {
        let switch = self.cfg.queue.map_or(Limit::Unbounded, Limit::Packets);
        let qdisc = (self.cfg.qdisc.as_ref())
            .and_then(|c| c.build(self.cfg.bandwidth_bps).ok())
            .unwrap_or(Qdisc::DropTail(qdisc::DropTail::new(switch)));
        WireQueue::new(qdisc)
    }

    /// Returns the queue of `port` in the direction `up` (the NIC) or
    /// down (the switch's towards it), made on first use.
    #[inline]
    fn queue_dir_mut(&mut self, port: u32, up: bool) -> &mut WireQueue {
        if !up && self.queues_mut(port).down.is_none() {
            let d = Box::new(self.new_down());
            self.queues_mut(port).down = Some(d);
        }
        let q = self.queues_mut(port);
        match (up, q.down.as_deref_mut()) {
            (true, _) => &mut q.up,
            (false, Some(d)) => d,
            (false, None) => unreachable!("made above"),
        }
    }

    /// Returns the queues of `port`, made on first use.
    ///
    /// Inlined: it runs several times per frame, and all but the first
    /// call per port find the queues made ([`Network::make_queues`] stays
    /// out of line).
    #[inline]
    fn queues_mut(&mut self, port: u32) -> &mut PortQueues {
        if self.ports[port as usize].queues.is_none() {
            self.make_queues(port);
        }
        match self.ports[port as usize].queues.as_deref_mut() {
            Some(q) => q,
            None => unreachable!("made above"),
        }
    }

    /// Makes the queues of `port` (first use).
    #[cold]
    #[inline(never)]
    fn make_queues(&mut self, port: u32) {
        let q = Box::new(self.new_queues(port));
        self.ports[port as usize].queues = Some(q);
    }
}

/// Returns the simulator MAC of `port` on network `net`.
pub(crate) fn port_mac(net: NetId, port: u32) -> EthernetAddress {
    let p = port.to_be_bytes();
    EthernetAddress([0x02, (net & 0xff) as u8, p[0], p[1], p[2], p[3]])
}

/// Counts a datagram the stack dropped for want of room in the NIC at
/// `port` (a router forwarding onto a full NIC) as a drop of that NIC's
/// queue, so the report's per-queue `dropped` sees every drop where it
/// happened.
#[cold]
pub(crate) fn count_nic_drop(w: &mut World, net: NetId, port: u32, reason: DropReason) {
    let n = &mut w.networks[net as usize];
    n.stats.queue_drops += 1;
    n.queues_mut(port).up.stats.dropped += 1;
    *w.queue_drops.entry((net, port << 1, reason)).or_insert(0) += 1;
}

/// Returns how many more frames the NIC at `port` takes now.
#[inline]
pub(crate) fn nic_room(w: &World, net: NetId, port: u32) -> u32 {
    let txqueuelen = w.networks[net as usize].cfg.txqueuelen;
    txqueuelen.saturating_sub(nic_frames(w, net, port))
}

/// Returns how many frames the NIC at `port` holds now (waiting or being
/// serialized; on an ideal network, not yet delivered).
#[inline]
pub(crate) fn nic_frames(w: &World, net: NetId, port: u32) -> u32 {
    let p = &w.networks[net as usize].ports[port as usize];
    let scheduled = p
        .queues
        .as_deref()
        .map_or(0, |q| q.up.scheduled_at(w.now().as_nanos()));
    p.inflight + scheduled
}

/// Hands a complete Ethernet frame to the NIC at `port` of `net`.
///
/// Callers check [`nic_room`] first: sockets wait for room, the stack's own
/// frames are dropped when there is none. The fragments of one datagram may
/// overshoot the queue's capacity (a datagram is queued whole).
pub(crate) fn transmit(w: &mut World, net: NetId, port: u32, frame: &mut Message) {
    let now = w.now();
    let n = &mut w.networks[net as usize];
    n.stats.frames_sent += 1;
    n.stats.bytes_sent += frame.len() as u64;
    w.stats.frames_sent += 1;
    if n.is_ideal() {
        n.ports[port as usize].inflight += 1;
        w.pcap.record(net, now, frame);
        let n = &mut w.networks[net as usize];
        let fate = match draw_fate(n, frame) {
            Ok(fate) => fate,
            Err(reason) => {
                release_nic(w, net, port);
                return w.drop_packet(reason);
            }
        };
        let n = &w.networks[net as usize];
        let mut targets = egress_ports(n, port, frame);
        if targets.is_empty() {
            release_nic(w, net, port);
            return w.drop_packet(DropReason::UnknownDestination);
        }
        if fate.duplicate {
            // Each receiver gets the copy right after the original.
            targets = targets.into_iter().flat_map(|t| [t, t]).collect();
        }
        let latency = n.cfg.latency_ns + fate.extra_ns;
        if latency == 0 && w.sync_depth < MAX_SYNC_DEPTH {
            // Zero delay: deliver now, without an event or a frame slot.
            release_nic(w, net, port);
            let last = targets.len() - 1;
            for (i, t) in targets.into_iter().enumerate() {
                if i == last {
                    deliver_now(w, net, t, frame);
                } else {
                    deliver_now(w, net, t, &mut frame.clone());
                }
            }
            return;
        }
        let at = now + std::time::Duration::from_nanos(latency);
        let lane = lane_of_net(w, net);
        let mut sender = port;
        let last = targets.len() - 1;
        for (i, t) in targets.into_iter().enumerate() {
            let copy = if i == last {
                std::mem::take(frame)
            } else {
                frame.clone()
            };
            let id = w.frames.insert(copy) as FrameId;
            w.queue.schedule(
                at,
                lane,
                Event::Deliver {
                    net,
                    port: t,
                    frame: id,
                    from: sender,
                },
            );
            sender = NO_PORT;
        }
        return;
    }
    let id = w.frames.insert(std::mem::take(frame)) as FrameId;
    let q = QueueRef {
        net,
        port_dir: port << 1,
    };
    enqueue(w, q, id);
}

/// [`transmit`] for frame `id`, already in the frames slab (a router's
/// fast path forwards frames without taking them out of it).
pub(crate) fn transmit_queued(w: &mut World, net: NetId, port: u32, id: FrameId) {
    if w.networks[net as usize].is_ideal() {
        let mut frame = w.frames.remove(id as usize);
        return transmit(w, net, port, &mut frame);
    }
    let bytes = w.frames[id as usize].len() as u64;
    let n = &mut w.networks[net as usize];
    n.stats.frames_sent += 1;
    n.stats.bytes_sent += bytes;
    w.stats.frames_sent += 1;
    let q = QueueRef {
        net,
        port_dir: port << 1,
    };
    enqueue(w, q, id);
}

#[inline]
fn queue_mut(w: &mut World, q: QueueRef) -> &mut WireQueue {
    w.networks[q.net as usize].queue_dir_mut(q.port_dir >> 1, q.port_dir & 1 == 0)
}

/// Offers frame `id` to queue `q` and starts the wire if it is idle. A
/// frame the discipline refuses is discarded with its reason (and frees
/// its NIC slot when `q` is a NIC); one it marks gets CE set.
///
/// A queue run as a departure-time FIFO (see "Departure-time FIFO") takes
/// the frame here, with one look-up of the queue: it already runs so (its
/// schedule, settled at the present, is not empty), or it is an idle
/// drop-tail queue on a network that is neither captured nor traced.
fn enqueue(w: &mut World, q: QueueRef, id: FrameId) {
    let now = w.now().as_nanos();
    let (net, port, up) = (q.net, q.port_dir >> 1, q.port_dir & 1 == 0);
    let bytes = w.frames[id as usize].len();
    let captured = w.pcap.captures(net);
    let tracing = w.queue_trace;
    let uncaptured = !w.evented_queues;
    let n = &mut w.networks[net as usize];
    let ser = n.cfg.serialization_ns(bytes);
    let wq = n.queue_dir_mut(port, up);
    if tracing && wq.trace.is_none() && wq.sched.is_empty() && wq.on_wire.is_none() {
        wq.trace = Some(Box::default());
    }
    wq.settle(now);
    let analytic = !wq.sched.is_empty()
        || (uncaptured && matches!(wq.qdisc, Qdisc::DropTail(_)) && wq.is_idle(now));
    if !analytic {
        return enqueue_evented(w, q, id, now);
    }
    let (packets, waiting_bytes) = wq.waiting();
    let full = match &wq.qdisc {
        Qdisc::DropTail(d) => d.refuses(packets, waiting_bytes, bytes as u32),
        _ => false,
    };
    if full {
        wq.stats.dropped += 1;
        n.stats.queue_drops += 1;
        let reason = DropReason::QueueFull;
        *w.queue_drops.entry((net, q.port_dir, reason)).or_insert(0) += 1;
        return discard(w, id, reason);
    }
    let done = wq.push(now, ser, bytes as u32);
    if up && captured {
        // Recorded when it starts onto the wire, as the evented path does.
        let start = Time::from_nanos(done - ser);
        w.pcap
            .record_at(net, start, Time::from_nanos(now), &w.frames[id as usize]);
    }
    let n = &mut w.networks[net as usize];
    if !up {
        let deliver = Event::Deliver {
            net,
            port,
            frame: id,
            from: NO_PORT,
        };
        let lane = lane_of_net(w, net);
        return w.queue.schedule(Time::from_nanos(done), lane, deliver);
    }
    match draw_fate(n, &mut w.frames[id as usize]) {
        Err(reason) => discard(w, id, reason),
        Ok(fate) => {
            let at = Time::from_nanos(done + n.cfg.latency_ns + fate.extra_ns);
            if w.coalescing && n.cfg.kind == NetworkKind::Link && !fate.duplicate {
                // A host whose NIC coalesces interrupts takes the frame
                // into its ring now (no arrival event).
                let other = if port == 0 { 1 } else { 0 };
                if let Some(p) = n.ports.get(other as usize) {
                    let (machine, iface) = (p.machine, p.iface);
                    if crate::stack::offload::arrives_later(w, machine, iface, id, at.as_nanos()) {
                        return;
                    }
                }
            }
            propagate(w, net, port, id, at);
            if fate.duplicate {
                let copy = w.frames.insert(w.frames[id as usize].clone()) as FrameId;
                propagate(w, net, port, copy, at);
            }
        }
    }
}

/// When a train of frames fits a link's NIC: the first frame's arrival,
/// the spacing of the others (all but the last `full` bytes long) and the
/// last one's arrival, ns.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Train {
    pub first: u64,
    pub step: u64,
    pub last: u64,
}

/// Returns when a frame of `bytes` queued now on the NIC at `port` of
/// link `net` would arrive at the far end, if that NIC is a
/// departure-time FIFO (see [`enqueue_train`]).
pub(crate) fn arrival_if_queued(w: &mut World, net: NetId, port: u32, bytes: usize) -> u64 {
    let now = w.now().as_nanos();
    let nw = &mut w.networks[net as usize];
    let (ser, latency) = (nw.cfg.serialization_ns(bytes), nw.cfg.latency_ns);
    let wq = &mut nw.queues_mut(port).up;
    wq.settle(now);
    let start = wq.sched.back().map_or(now, |s| s.done.max(now));
    start + ser + latency
}

/// Queues `n` ≥ 2 frames, `n − 1` of `full` bytes and one of `last`
/// bytes, on the NIC at `port` of link `net` without the frames
/// themselves (a TSO segment the far end takes as one unit, see
/// `stack::offload`), with the counters [`transmit`] keeps for each;
/// returns their arrivals. Returns `None`, changing nothing, unless the
/// link is unimpaired, uncaptured and untraced, the NIC is a
/// departure-time drop-tail FIFO and takes all `n`: the caller then sends
/// the frames one by one.
pub(crate) fn enqueue_train(
    w: &mut World,
    net: NetId,
    port: u32,
    full: usize,
    last: usize,
    n: u32,
) -> Option<Train> {
    let now = w.now().as_nanos();
    let uncaptured = !w.evented_queues && !w.queue_trace && !w.pcap.captures(net);
    let nw = &mut w.networks[net as usize];
    if !uncaptured || nw.impaired || nw.cfg.kind != NetworkKind::Link || n < 2 {
        return None;
    }
    let (ser_full, ser_last) = (nw.cfg.serialization_ns(full), nw.cfg.serialization_ns(last));
    let latency = nw.cfg.latency_ns;
    let wq = &mut nw.queues_mut(port).up;
    wq.settle(now);
    let analytic =
        !wq.sched.is_empty() || (matches!(wq.qdisc, Qdisc::DropTail(_)) && wq.is_idle(now));
    let Qdisc::DropTail(d) = &wq.qdisc else {
        return None;
    };
    // The last frame finds the others waiting (the first may be on the
    // wire already: then fewer wait, so this is the worst case).
    let (packets, bytes) = wq.waiting();
    let ahead = u64::from(n - 1) * full as u64;
    if !analytic || d.refuses(packets + n - 1, bytes + ahead, last as u32) {
        return None;
    }
    let first = wq.push(now, ser_full, full as u32);
    for _ in 1..n - 1 {
        wq.push(now, ser_full, full as u32);
    }
    let end = wq.push(now, ser_last, last as u32);
    nw.stats.frames_sent += u64::from(n);
    nw.stats.bytes_sent += ahead + last as u64;
    w.stats.frames_sent += u64::from(n);
    Some(Train {
        first: first + latency,
        step: ser_full,
        last: end + latency,
    })
}

/// [`enqueue`] on a queue run event by event.
fn enqueue_evented(w: &mut World, q: QueueRef, id: FrameId, now: u64) {
    let n = &mut w.networks[q.net as usize];
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
    let frame = &mut w.frames[id as usize];
    let desc = describe(frame, id, wq.qdisc.classifies());
    let verdict = wq.qdisc.enqueue(desc, now, &mut n.rng);
    match verdict {
        Enqueue::Dropped(reason) => {
            wq.stats.dropped += 1;
            n.stats.queue_drops += 1;
            let idle = wq.on_wire.is_none();
            *w.queue_drops
                .entry((q.net, q.port_dir, reason))
                .or_insert(0) += 1;
            discard(w, id, reason);
            if up {
                release_nic(w, q.net, port);
            }
            if idle {
                // As a kernel runs its qdisc after every enqueue: the idle
                // wire asks for a frame, and a discipline that tracks idle
                // time (RED) learns that its idle period goes on.
                start_tx(w, q);
            }
            return;
        }
        Enqueue::QueuedMarked => {
            wq.stats.marked += 1;
            mark_ce(frame);
        }
        Enqueue::Queued => {}
    }
    let (packets, bytes) = (wq.qdisc.packets(), wq.qdisc.bytes());
    wq.stats.enqueued(now, packets, bytes);
    let idle = wq.on_wire.is_none();
    if w.queue_trace {
        trace_sample(w, q, now, packets, bytes);
    }
    if idle {
        start_tx(w, q);
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

/// Sets the ECN field of the IPv4 header of an Ethernet frame to CE (0b11,
/// RFC 3168 §5) and patches the header checksum incrementally (RFC 1624
/// eqn. 3: HC' = ~(~HC + ~m + m')).
pub(crate) fn mark_ce(frame: &mut Message) {
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

/// Starts serializing the next frame the discipline of `q` hands out; if
/// a shaper says "not before t", asks again at t.
fn start_tx(w: &mut World, q: QueueRef) {
    let now = w.now();
    let wq = queue_mut(w, q);
    let d = wq.qdisc.dequeue(now.as_nanos());
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
                let lane = lane_of_net(w, q.net);
                w.queue
                    .schedule(Time::from_nanos(t), lane, Event::TxRetry(q));
            }
            return;
        }
    };
    wq.on_wire = Some(id);
    let (packets, bytes) = (wq.qdisc.packets(), wq.qdisc.bytes());
    wq.stats.dequeued(now.as_nanos(), packets, bytes);
    if w.queue_trace {
        trace_sample(w, q, now.as_nanos(), packets, bytes);
    }
    let frame = &w.frames[id as usize];
    if q.port_dir & 1 == 0 {
        w.pcap.record(q.net, now, frame);
    }
    let ser = w.networks[q.net as usize].cfg.serialization_ns(frame.len());
    w.queue.schedule(
        now + std::time::Duration::from_nanos(ser),
        lane_of_net(w, q.net), // networks schedule on their own lanes, after machines
        Event::TxDone(q),
    );
}

/// Appends an occupancy sample of `q` (tracing on).
fn trace_sample(w: &mut World, q: QueueRef, now: u64, packets: u32, bytes: u64) {
    let series = w.queue_series.entry((q.net, q.port_dir)).or_default();
    let s = qdisc::stats::OccupancySample {
        time_ns: now,
        packets,
        bytes,
    };
    qdisc::stats::push_sample(series, s);
}

fn lane_of_net(w: &World, net: NetId) -> u32 {
    (w.machines.len() as u32).wrapping_add(net)
}

/// A shaper's wait is over: try the wire again (a stale retry finds it
/// busy, or is told to wait again and schedules nothing new).
pub(crate) fn tx_retry(w: &mut World, q: QueueRef) {
    if queue_mut(w, q).on_wire.is_none() {
        start_tx(w, q);
    }
}

/// A queue finished serializing its head frame.
pub(crate) fn tx_done(w: &mut World, q: QueueRef) {
    let wq = queue_mut(w, q);
    let Some(id) = wq.on_wire.take() else {
        return;
    };
    let port = q.port_dir >> 1;
    let net = q.net;
    if q.port_dir & 1 == 0 {
        release_nic(w, net, port);
        let (n, frame) = (&mut w.networks[net as usize], &mut w.frames[id as usize]);
        match draw_fate(n, frame) {
            Err(reason) => discard(w, id, reason),
            Ok(fate) if fate.extra_ns == 0 && is_zero_delay_link(n) => {
                return deliver_across_link(w, q, id, fate.duplicate);
            }
            Ok(fate) => {
                let latency = n.cfg.latency_ns + fate.extra_ns;
                let at = w.now() + std::time::Duration::from_nanos(latency);
                propagate(w, net, port, id, at);
                if fate.duplicate {
                    let copy = w.frames.insert(w.frames[id as usize].clone()) as FrameId;
                    propagate(w, net, port, copy, at);
                }
            }
        }
    } else {
        deliver(w, net, port, id, NO_PORT);
    }
    if queue_mut(w, q).on_wire.is_none() {
        start_tx(w, q);
    }
}

fn is_zero_delay_link(n: &Network) -> bool {
    n.cfg.kind == NetworkKind::Link && n.cfg.latency_ns == 0
}

/// Frame `id` has just been serialized by the NIC of `q` onto a link
/// without latency: starts the NIC's next frame, then hands the frame (and
/// its duplicate) to the machine at the other end at once, without a
/// delivery event (the arrival instant is the same).
fn deliver_across_link(w: &mut World, q: QueueRef, id: FrameId, duplicate: bool) {
    let (net, port) = (q.net, q.port_dir >> 1);
    let mut frame = w.frames.remove(id as usize);
    let copy = duplicate.then(|| frame.clone());
    if queue_mut(w, q).on_wire.is_none() {
        start_tx(w, q);
    }
    let other = if port == 0 { 1 } else { 0 };
    if other as usize >= w.networks[net as usize].ports.len() {
        return w.drop_packet(DropReason::UnknownDestination);
    }
    receive(w, net, other, &mut frame);
    if let Some(mut copy) = copy {
        receive(w, net, other, &mut copy);
    }
}

/// Sends frame `id`, serialized by the NIC at `port`, across the network:
/// it reaches the other end of a link or the switch fabric `at` (after the
/// latency plus any reorder hold-back).
#[inline]
fn propagate(w: &mut World, net: NetId, port: u32, id: FrameId, at: Time) {
    let n = &w.networks[net as usize];
    let lane = lane_of_net(w, net);
    let event = match n.cfg.kind {
        NetworkKind::Link => {
            let other = if port == 0 { 1 } else { 0 };
            if other as usize >= n.ports.len() {
                return discard(w, id, DropReason::UnknownDestination);
            }
            Event::Deliver {
                net,
                port: other,
                frame: id,
                from: NO_PORT,
            }
        }
        NetworkKind::Switch => Event::AtSwitch {
            net,
            from: port,
            frame: id,
        },
    };
    w.queue.schedule(at, lane, event);
}

/// Frees one NIC slot and wakes a sender blocked on it.
fn release_nic(w: &mut World, net: NetId, port: u32) {
    let p = &mut w.networks[net as usize].ports[port as usize];
    p.inflight = p.inflight.saturating_sub(1);
    wake_room_waiters(w, net, port);
}

/// Wakes whoever waits for room in the NIC at `port`: a blocked task, a
/// foreign stack, TCP connections.
fn wake_room_waiters(w: &mut World, net: NetId, port: u32) {
    let p = &mut w.networks[net as usize].ports[port as usize];
    if let Some(task) = p.waiter.take() {
        w.wake(task);
    }
    let p = &mut w.networks[net as usize].ports[port as usize];
    let machine = p.machine;
    let Some(q) = p.queues.as_mut() else {
        return;
    };
    if std::mem::take(&mut q.foreign_waiting) {
        let timer = crate::stack::Timer::ForeignRoom;
        w.queue.schedule_now(Event::Timer { machine, timer });
    }
    if q.tcp_waiters.is_empty() {
        return;
    }
    // Drained in place, so the list keeps its storage for the next waiter.
    let waiting: smallvec::SmallVec<[(MachineId, u32); 2]> = q.tcp_waiters.drain(..).collect();
    for (m, slot) in waiting {
        let timer = crate::stack::Timer::TcpKick { slot };
        w.queue.schedule_now(Event::Timer { machine: m, timer });
    }
}

/// Registers TCP connection `slot` of machine `m` to be kicked when the
/// NIC at `port` has room. The caller arms the wake-up
/// ([`arm_room_wake`]) once it has handed the NIC what it could.
pub(crate) fn wait_for_room(w: &mut World, net: NetId, port: u32, m: MachineId, slot: u32) {
    let q = w.networks[net as usize].queues_mut(port);
    if !q.tcp_waiters.contains(&(m, slot)) {
        q.tcp_waiters.push((m, slot));
    }
}

/// Registers the foreign stack on `port` to be polled when the NIC at
/// `port` has room.
pub(crate) fn wait_for_room_foreign(w: &mut World, net: NetId, port: u32) {
    w.networks[net as usize].queues_mut(port).foreign_waiting = true;
    arm_room_wake(w, net, port);
}

/// Registers `task` (if any) to be woken when the NIC at `port` has room.
pub(crate) fn wait_for_room_task(
    w: &mut World,
    net: NetId,
    port: u32,
    task: Option<crate::executor::TaskId>,
) {
    w.networks[net as usize].ports[port as usize].waiter = task;
    arm_room_wake(w, net, port);
}

/// Returns how many frames a busy NIC of `txqueuelen` slots still holds
/// when its waiters are woken: a quarter of its slots are free then (at
/// least one), like a driver that wakes its stopped queue only once a
/// batch of descriptors is free again (Linux ixgbe's
/// `TX_WAKE_THRESHOLD`), so a bulk sender refills several slots per
/// wake-up while the wire still has frames to send.
pub(crate) fn wake_watermark(txqueuelen: u32) -> u32 {
    txqueuelen.saturating_sub((txqueuelen / 4).max(1))
}

/// Schedules one wake-up of the waiters of the NIC at `port` for when its
/// departure schedule has drained to [`wake_watermark`] (or, holding
/// less, to one frame fewer), unless one is pending or nobody waits. The
/// evented path and ideal networks wake waiters as each frame leaves
/// instead (see "Back-pressure").
pub(crate) fn arm_room_wake(w: &mut World, net: NetId, port: u32) {
    let now = w.now().as_nanos();
    let lane = lane_of_net(w, net);
    let n = &mut w.networks[net as usize];
    let low = wake_watermark(n.cfg.txqueuelen) as usize;
    let p = &mut n.ports[port as usize];
    let task_waits = p.waiter.is_some();
    // No queues (an ideal network, or nothing sent yet): nothing is on
    // the departure-time path, and none are made just to be asked.
    let Some(q) = p.queues.as_deref_mut() else {
        return;
    };
    let waits = task_waits || q.foreign_waiting || !q.tcp_waiters.is_empty();
    if q.room_wake || !waits {
        return;
    }
    let sched = &q.up.sched;
    let first = sched.partition_point(|s| s.done <= now);
    let scheduled = sched.len() - first;
    if scheduled == 0 {
        return;
    }
    let at = sched[first + (scheduled - 1).saturating_sub(low)].done;
    q.room_wake = true;
    let event = Event::NicRoom { net, port };
    w.queue.schedule(Time::from_nanos(at), lane, event);
}

/// The departure schedule of the NIC at `port` drained to its low
/// watermark: wakes its waiters (who wait again if still short of room).
pub(crate) fn nic_room_ready(w: &mut World, net: NetId, port: u32) {
    w.networks[net as usize].queues_mut(port).room_wake = false;
    wake_room_waiters(w, net, port);
}

/// What the impairment draws decided for a frame that is not lost.
#[derive(Clone, Copy, Debug, Default)]
struct Fate {
    /// Extra propagation delay (a reorder hold-back), ns.
    extra_ns: u64,
    /// Deliver an exact copy right after the frame.
    duplicate: bool,
}

/// Applies loss, corruption, duplication and reordering as a frame leaves
/// the sender, in that order (see "Impairments"). A network without
/// impairments draws nothing (its random stream is untouched either way:
/// every draw below is guarded by a non-zero probability).
#[inline]
fn draw_fate(n: &mut Network, frame: &mut Message) -> Result<Fate, DropReason> {
    if !n.impaired {
        return Ok(Fate::default());
    }
    draw_impairments(n, frame)
}

/// [`draw_fate`] on a network with at least one impairment.
fn draw_impairments(n: &mut Network, frame: &mut Message) -> Result<Fate, DropReason> {
    let mut fate = Fate::default();
    if n.cfg.loss > 0.0 && n.rng.random::<f64>() < n.cfg.loss {
        n.stats.lost += 1;
        return Err(DropReason::Loss);
    }
    if n.cfg.corruption > 0.0 && n.rng.random::<f64>() < n.cfg.corruption {
        n.stats.corrupted += 1;
        let bits = frame.len() * 8;
        if bits > 0 {
            let bit = n.rng.random_range(0..bits);
            frame.flip_bit(bit);
        }
    }
    if n.cfg.duplicate > 0.0 && n.rng.random::<f64>() < n.cfg.duplicate {
        n.stats.duplicated += 1;
        fate.duplicate = true;
    }
    if n.cfg.reorder > 0.0 && n.rng.random::<f64>() < n.cfg.reorder {
        n.stats.reordered += 1;
        fate.extra_ns = n.cfg.reorder_delay_ns;
    }
    Ok(fate)
}

fn discard(w: &mut World, id: FrameId, reason: DropReason) {
    w.frames.remove(id as usize);
    w.drop_packet(reason);
}

/// Returns the destination MAC of a frame (`None` if it is too short).
fn dst_mac(frame: &Message) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    frame.copy_to_slice(0, &mut mac).ok()?;
    Some(mac)
}

/// Returns the ports a frame from `from` goes out of.
fn egress_ports(n: &Network, from: u32, frame: &Message) -> smallvec::SmallVec<[u32; 1]> {
    let mut out = smallvec::SmallVec::new();
    if n.cfg.kind == NetworkKind::Link {
        let other = if from == 0 { 1 } else { 0 };
        if (other as usize) < n.ports.len() {
            out.push(other);
        }
        return out;
    }
    let Some(mac) = dst_mac(frame) else {
        return out;
    };
    if mac == [0xff; 6] {
        out.extend((0..n.ports.len() as u32).filter(|&p| p != from));
    } else if mac[0] & 1 == 1 {
        if let Some(members) = n.multicast.get(&mac) {
            out.extend(members.iter().copied().filter(|&p| p != from));
        }
    } else if let Some(p) = n.port_of_mac(mac) {
        if p != from {
            out.push(p);
        }
    }
    out
}

/// A frame reached the switch fabric: queue it on the egress port(s).
pub(crate) fn at_switch(w: &mut World, net: NetId, from: u32, id: FrameId) {
    let targets = egress_ports(&w.networks[net as usize], from, &w.frames[id as usize]);
    if targets.is_empty() {
        discard(w, id, DropReason::UnknownDestination);
        return;
    }
    let mut first = true;
    for t in targets {
        let copy = if first {
            id
        } else {
            w.frames.insert(w.frames[id as usize].clone()) as FrameId
        };
        first = false;
        let q = QueueRef {
            net,
            port_dir: (t << 1) | 1,
        };
        enqueue(w, q, copy);
    }
}

/// A frame reached the machine on `port`: hand it to its stack.
///
/// `from` is the sender's port on an ideal network, whose NIC slot the
/// delivery frees ([`NO_PORT`] otherwise).
pub(crate) fn deliver(w: &mut World, net: NetId, port: u32, id: FrameId, from: u32) {
    if from != NO_PORT {
        release_nic(w, net, from);
    }
    let Some((machine, iface)) = arrive(w, net, port) else {
        w.frames.remove(id as usize);
        return;
    };
    let m = &w.machines[machine as usize];
    // A router forwards most transit frames without moving them out of
    // the slab (`stack::forward::forward_in_slab`).
    let router = m.forward && w.fast_forward && !m.foreign;
    if router && crate::stack::forward::forward_in_slab(w, machine, iface, id) {
        return;
    }
    if w.coalescing && crate::stack::offload::on_arrival(w, machine, iface, id) {
        return;
    }
    let mut frame = w.frames.remove(id as usize);
    hand_to_stack(w, machine, iface, &mut frame);
}

/// How deep zero-delay deliveries may nest (a reply to a reply …) before
/// the next one goes through the event queue instead.
const MAX_SYNC_DEPTH: u8 = 4;

/// Delivers a frame synchronously, in the middle of the sender's work; a
/// panic in the receiver's stack crashes the receiver, not the sender.
fn deliver_now(w: &mut World, net: NetId, port: u32, frame: &mut Message) {
    let caller = w.current_machine;
    w.sync_depth += 1;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        receive(w, net, port, frame)
    }));
    w.sync_depth -= 1;
    if r.is_err() {
        let m = w.networks[net as usize].ports[port as usize].machine;
        let msg = crate::simulation::take_panic_message();
        w.crashed.push((m, msg));
    }
    w.current_machine = caller;
}

fn receive(w: &mut World, net: NetId, port: u32, frame: &mut Message) {
    if let Some((machine, iface)) = arrive(w, net, port) {
        hand_to_stack(w, machine, iface, frame);
    }
}

/// Counts the arrival of a frame that a NIC took into its receive ring
/// on `net` before it arrived (`stack::offload::arrives_later`).
pub(crate) fn count_arrival(w: &mut World, net: NetId) {
    w.networks[net as usize].stats.frames_delivered += 1;
    w.stats.frames_delivered += 1;
}

/// Counts a frame's arrival at the machine on `port` and returns that
/// machine and its interface; `None` (the frame dropped) if it crashed.
#[inline]
fn arrive(w: &mut World, net: NetId, port: u32) -> Option<(MachineId, IfaceId)> {
    let n = &mut w.networks[net as usize];
    n.stats.frames_delivered += 1;
    let p = &n.ports[port as usize];
    let (machine, iface) = (p.machine, p.iface);
    if w.machines[machine as usize].crashed {
        w.drop_packet(DropReason::MachineCrashed);
        return None;
    }
    w.stats.frames_delivered += 1;
    w.current_machine = Some(machine);
    Some((machine, iface))
}

/// Hands a frame that arrived on `iface` to the stack of `machine`.
pub(crate) fn hand_to_stack(
    w: &mut World,
    machine: MachineId,
    iface: IfaceId,
    frame: &mut Message,
) {
    if w.machines[machine as usize].foreign {
        return crate::foreign::receive(w, machine, iface, frame);
    }
    crate::stack::ethernet::receive(w, machine, iface, frame);
}
