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
//! - **Wireless** ([`wireless`]): a frame is on the air for its 802.11
//!   time (preamble, MAC header, LLC/SNAP, payload, FCS at the data
//!   rate) after the MAC's access delay, and reaches the machines in
//!   range when it ends (plus `L`); the queue disciplines, the
//!   departure-time FIFO and the impairments are not used there.
//!
//! # Departure-time FIFO
//! A drop-tail FIFO feeding a wire at a fixed rate is work-conserving, so
//! its timing is known when a frame is queued: `start = max(now,
//! busy_until)`, `done = start + S/B`, `busy_until = done`. Such queues
//! (every NIC and switch port whose discipline is drop-tail or ECN
//! threshold marking, unless
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
//! TCP's reaction spreads). An ECN-threshold queue (`qdisc::threshold`)
//! is this FIFO with one more question at arrival: a frame that finds K
//! or more waiting (the count the drop-tail limit reads) and says ECT
//! gets CE, as the evented discipline marks it; ties decide marks as
//! they decide drops. Other disciplines keep the evented path: a
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
//! # Priority flow control
//! A network may run IEEE 802.1Qbb PFC over its `prio` classes
//! ([`pfc`]): forwarding machines count the lossless bytes each ingress
//! port has buffered, send PAUSE and XON frames to the queue feeding it,
//! and a paused queue serves its other priorities only. Networks without
//! PFC pay one test per delivery and per transmission for it.
//!
//! # Forwarding
//! The switch knows every attached MAC address (as a learning switch does
//! after warm-up): simulator MACs encode the port number, so the forwarding
//! table costs no memory. Broadcast frames go to every other port,
//! multicast frames to the ports whose machines joined the group (static
//! membership, like IGMP snooping), unknown unicast is dropped.
//!
//! # Broadcast fan-out
//! On an ideal switched network (no bandwidth, so no per-port queues)
//! with more than 8 ports, a broadcast frame is first offered to
//! [`Context::select_broadcast`]: the layer above may name the only ports
//! whose machines would do more than drop it, and count the arrival and
//! the drop at every other port itself, as those machines would have. The
//! frame is copied to the named ports alone. The stack does this for DHCP
//! (its module `dhcp::fanout`), whose broadcasts would otherwise cost a
//! frame arrival per port of the LAN; a test compares whole reports with
//! and without it. Switched networks with bandwidth copy every broadcast,
//! as their port queues' timing depends on it.
//!
//! # Layer
//! This crate knows frames, ports and time, not protocols. Two
//! exceptions: what a queue discipline classifies on and marks (the
//! DSCP, ECN field and flow of an IPv4 header, as Linux's qdiscs read
//! them from the packet), and each network's static neighbour table
//! (`Network::ip_to_port`, IPv4 address → port), which the builder fills
//! and the stack reads instead of running ARP. Its state is one [`Fabric`]; the simulation
//! that owns it implements [`Context`]: the clock, the event queue, and
//! the hand-offs up to whatever runs on the machines (a frame arrived, a
//! NIC has room again). The network layer never calls the protocol stack.
#![forbid(unsafe_code)]

mod config;
mod delivery;
mod impair;
pub mod neighbours;
mod network;
pub mod pcap;
pub mod pfc;
pub mod qdisc;
mod queue;
mod room;
mod transmit;
pub mod wireless;

#[cfg(test)]
mod tests;

pub use config::{NetStats, NetworkConfig, NetworkKind};
pub use delivery::{at_switch, count_arrival, deliver};
pub use neighbours::Neighbours;
pub use network::{port_mac, Network, Port, PortQueues, QueueRef};
pub use queue::WireQueue;
pub use room::{
    arm_room_wake, nic_frames, nic_room, nic_room_ready, wait_for_room_endpoint,
    wait_for_room_stack, wait_for_room_task, wake_watermark,
};
pub use transmit::{
    arrival_if_queued, count_nic_drop, enqueue_train, mark_ce, transmit, transmit_queued, tx_done,
    tx_retry, Train,
};

use elvis_kernel::Time;
use elvis_message::Message;
use pcap::PcapSet;
use std::collections::BTreeMap;
use std::fmt;

/// Index of a network in the simulation.
pub type NetId = u32;
/// Index of a frame in flight (in [`Fabric::frames`]).
pub type FrameId = u32;
/// Index of a machine: what a port is plugged into (the network layer
/// only hands it back up).
pub type MachineId = u32;
/// Index of an interface of one machine.
pub type IfaceId = u32;
/// Index of a task of the layer above, woken when a NIC has room.
pub type TaskId = u32;

/// "No sender NIC to release" in a delivery event.
pub const NO_PORT: u32 = u32::MAX;

/// Why the network layer dropped a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DropReason {
    /// The network's loss draw.
    Loss,
    /// A switch output queue was full (drop-tail).
    QueueFull,
    /// A NIC was full for a frame the stack itself originated.
    NicQueueFull,
    /// No port on the network has the destination MAC.
    UnknownDestination,
    /// RED dropped an arrival early (average queue between the
    /// thresholds; see `qdisc::red`).
    RedEarly,
    /// RED dropped an arrival because the average queue was above its
    /// upper threshold (twice it when gentle).
    RedForced,
    /// A frame larger than a token bucket's burst (it could never leave).
    ExceedsBurst,
    /// A three-colour marker metered the frame red and drops red
    /// (`qdisc::meter`, `drop_red`).
    MeterRed,
    /// A lossless frame beyond its ingress's PFC headroom (`pfc`).
    PfcHeadroom,
}

impl fmt::Display for DropReason {
    /// Formats as the report key: `queue_full`, `loss`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DropReason::Loss => "loss",
            DropReason::QueueFull => "queue_full",
            DropReason::NicQueueFull => "nic_queue_full",
            DropReason::UnknownDestination => "unknown_destination",
            DropReason::RedEarly => "red_early",
            DropReason::RedForced => "red_forced",
            DropReason::ExceedsBurst => "exceeds_burst",
            DropReason::MeterRed => "meter_red",
            DropReason::PfcHeadroom => "pfc_headroom",
        })
    }
}

/// Something that happens to a frame or a queue at an instant.
#[derive(Clone, Copy, Debug)]
pub enum NetEvent {
    /// A queue finished serializing its head frame.
    TxDone(QueueRef),
    /// A shaping discipline's wait is over: try the queue's wire again.
    TxRetry(QueueRef),
    /// The NIC at `port` of `net` has drained to its low watermark: wake
    /// the senders waiting for room (see "Back-pressure").
    NicRoom { net: NetId, port: u32 },
    /// A frame reached the switch fabric of `net`, coming from `port`.
    AtSwitch {
        net: NetId,
        from: u32,
        frame: FrameId,
    },
    /// A frame reached the machine attached to `port` of `net`. `from` is
    /// the sender's port when its NIC slot is freed by the delivery
    /// (ideal networks), else [`NO_PORT`].
    Deliver {
        net: NetId,
        port: u32,
        frame: FrameId,
        from: u32,
    },
    /// A timer of a wireless network's MAC ([`wireless::dcf`]).
    Wireless(wireless::Timer),
    /// A PFC frame (in the slab) reached the NIC or switch port whose
    /// queue is `q` ([`pfc`]).
    Pfc { q: QueueRef, frame: FrameId },
    /// The PAUSE an ingress keeps on the queue `q` that feeds it is due
    /// for a refresh ([`pfc`]).
    PfcRefresh(QueueRef),
}

impl NetEvent {
    /// Returns the network the event happens on.
    pub fn net(&self) -> NetId {
        match *self {
            NetEvent::TxDone(q)
            | NetEvent::TxRetry(q)
            | NetEvent::Pfc { q, .. }
            | NetEvent::PfcRefresh(q) => q.net,
            NetEvent::NicRoom { net, .. }
            | NetEvent::AtSwitch { net, .. }
            | NetEvent::Deliver { net, .. } => net,
            NetEvent::Wireless(t) => t.net,
        }
    }
}

/// Runs one network event.
pub fn handle(c: &mut impl Context, event: NetEvent) {
    match event {
        NetEvent::TxDone(q) => tx_done(c, q),
        NetEvent::TxRetry(q) => tx_retry(c, q),
        NetEvent::NicRoom { net, port } => nic_room_ready(c, net, port),
        NetEvent::AtSwitch { net, from, frame } => at_switch(c, net, from, frame),
        NetEvent::Deliver {
            net,
            port,
            frame,
            from,
        } => deliver(c, net, port, frame, from),
        NetEvent::Wireless(t) => wireless::dcf::handle(c, t),
        NetEvent::Pfc { q, frame } => pfc::pause_frame(c, q, frame),
        NetEvent::PfcRefresh(q) => pfc::refresh(c, q),
    }
}

/// Switches that change how queues run, not what a run does.
#[derive(Clone, Copy, Debug, Default)]
pub struct FabricConfig {
    /// Record egress-queue occupancy time series.
    pub trace_queues: bool,
    /// Run every queue on the evented path (no departure-time FIFOs; a
    /// debugging and testing switch, see "Departure-time FIFO").
    pub evented_queues: bool,
    /// Some machine takes frames into a receive ring when they are queued
    /// ([`Context::take_early`]): until one does, nobody is asked.
    pub early_takers: bool,
    /// The layer above selects the ports of some broadcasts
    /// ([`Context::select_broadcast`]): until it says so, nobody is asked.
    pub broadcast_selectors: bool,
}

/// The state of the network layer: every network, the frames in flight,
/// the captures and the queue records.
#[derive(Default)]
pub struct Fabric {
    pub networks: Vec<Network>,
    /// Frames in flight (queued or propagating), by id.
    pub frames: slab::Slab<Message>,
    pub pcap: PcapSet,
    pub config: FabricConfig,
    /// Egress-queue drops by (network, `port << 1 | dir`, reason).
    pub queue_drops: BTreeMap<(NetId, u32, DropReason), u64>,
    /// Occupancy series of the queues run event by event, by (network,
    /// `port << 1 | dir`), when tracing.
    pub queue_series: BTreeMap<(NetId, u32), Vec<qdisc::stats::OccupancySample>>,
    /// Frames handed to NICs, over all networks.
    pub frames_sent: u64,
    /// Nesting depth of zero-delay deliveries in progress.
    pub sync_depth: u8,
    /// Priority flow control, once a network has it ([`pfc`]).
    pub pfc: Option<Box<pfc::PfcState>>,
}

/// What the network layer needs from the simulation that owns it.
///
/// Every function of this crate runs on a `Context`: it reaches its own
/// state through [`Context::fabric`] and everything else through the
/// methods below. Calls are static (generic), so the indirection costs
/// nothing once inlined.
pub trait Context {
    /// The network layer's state.
    fn fabric(&self) -> &Fabric;
    /// The network layer's state, mutably.
    fn fabric_mut(&mut self) -> &mut Fabric;
    /// The current virtual time.
    fn now(&self) -> Time;
    /// Schedules `event` at `at` (never before now).
    fn schedule(&mut self, at: Time, event: NetEvent);
    /// Counts a frame dropped for `reason` in the run's totals.
    fn dropped(&mut self, reason: DropReason);
    /// A frame in [`Fabric::frames`] reached the machine on `port` of `net`
    /// (a delivery event): the layer above takes it out of the slab.
    fn arrived(&mut self, net: NetId, port: u32, frame: FrameId);
    /// `frame` reached the machine on `port` of `net` without an event (a
    /// zero-delay network). `nested`: in the middle of the sender's own
    /// work (a crash of the receiver must not unwind into it).
    fn received(&mut self, net: NetId, port: u32, frame: &mut Message, nested: bool);
    /// Offers frame `id`, queued now on a link and arriving at `at_ns`, to
    /// the machine at the far end (`machine`, `iface`) before it arrives
    /// (a NIC that coalesces receive interrupts). `true`: taken, the
    /// network schedules no arrival. Asked only while
    /// [`FabricConfig::early_takers`] is set.
    fn take_early(&mut self, machine: MachineId, iface: IfaceId, id: FrameId, at_ns: u64) -> bool;
    /// Whether `machine` forwards datagrams (a router or switch): only
    /// those account PFC ingress bytes ([`pfc`]).
    fn forwards(&self, _machine: MachineId) -> bool {
        false
    }
    /// A task waiting for room in a NIC may run.
    fn wake_task(&mut self, task: TaskId);
    /// The machine's own stack waits for room in its NIC (registered by
    /// [`wait_for_room_stack`]); schedules its call at the present.
    fn room_for_stack(&mut self, machine: MachineId);
    /// Endpoint `slot` of `machine` waits for room in its NIC (registered
    /// by [`wait_for_room_endpoint`]); schedules its call at the present.
    fn room_for_endpoint(&mut self, machine: MachineId, slot: u32);
    /// Link-layer feedback: the wireless NIC at `port` of `net` gave up
    /// on unicast `frame` to `dst` after its retry limit (no ACK or no
    /// CTS came; see "Link-layer feedback" in [`wireless`]). A routing
    /// protocol may take the neighbour as gone and repair its route (and
    /// send the frame again). The default does nothing: the frame is
    /// dropped.
    fn link_failed(&mut self, _net: NetId, _port: u32, _dst: [u8; 6], _frame: Message) {}
    /// A broadcast `frame` from `from` is about to be copied to every
    /// other port of ideal switched network `net`. The layer above may
    /// answer with the ports whose machines would do anything with it
    /// but drop it; it then counts, itself, the arrival and the drop at
    /// every other port, exactly as those machines would have (see
    /// "Broadcast fan-out" in the crate docs). `None`: deliver to all.
    fn select_broadcast(
        &mut self,
        _net: NetId,
        _from: u32,
        _frame: &Message,
    ) -> Option<smallvec::SmallVec<[u32; 1]>> {
        None
    }
}
