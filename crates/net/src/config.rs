//! What a network is: its kind, its properties and its counters.

use crate::qdisc::QdiscConfig;
use serde::Serialize;

/// How a network joins its machines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum NetworkKind {
    /// A switched LAN with a port (and output queue) per machine.
    #[default]
    Switch,
    /// A point-to-point link between exactly two machines.
    Link,
    /// A shared radio medium: a frame reaches the machines in range of
    /// its sender ([`crate::wireless`]; the network's
    /// [`crate::Network::wireless`] holds the rest).
    Wireless,
}

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
    /// Boxed: few networks have one, and a million-link scenario would
    /// carry its size inline in every network record.
    pub qdisc: Option<Box<QdiscConfig>>,
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

impl NetStats {
    /// Adds `other`'s counts to these (both ends of a link cut between
    /// two partitions of a parallel run count their own side).
    pub fn merge(&mut self, other: &NetStats) {
        self.frames_sent += other.frames_sent;
        self.bytes_sent += other.bytes_sent;
        self.frames_delivered += other.frames_delivered;
        self.lost += other.lost;
        self.corrupted += other.corrupted;
        self.duplicated += other.duplicated;
        self.reordered += other.reordered;
        self.queue_drops += other.queue_drops;
    }
}
