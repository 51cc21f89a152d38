//! Queue disciplines: what an egress interface does with the frames that
//! wait for its wire.
//!
//! A discipline sees only [`Queued`] descriptors (the frame's index in the
//! world's frame arena, its length and the header fields it classifies
//! on); the frames themselves stay where they are, so no discipline copies
//! or allocates per packet. The network code (`crate::net`) asks
//! [`Discipline::enqueue`] when a frame arrives at an egress queue and
//! [`Discipline::dequeue`] whenever the wire goes idle; a discipline that
//! shapes (token bucket, virtual clock with a rate cap) answers
//! [`Dequeue::NotBefore`] and the wire retries then.
//!
//! Each discipline lives in its own file and implements its published
//! definition; the file's documentation names the source and the
//! equations. [`Qdisc`] dispatches by `match` (no boxing, no `dyn` call on
//! the packet path).
//!
//! | discipline | file | classifies on |
//! |---|---|---|
//! | drop-tail (packets or bytes) | `droptail.rs` | — |
//! | RED, optionally marking ECN (Floyd & Jacobson 1993, RFC 3168) | `red.rs` | ECN field |
//! | token-bucket shaper | `tbf.rs` | — |
//!
//! [`QdiscConfig`] (`config.rs`) is the plain-data description a network
//! or an interface is given; it validates its parameters and builds one
//! fresh [`Qdisc`] per queue.

pub mod config;
pub mod droptail;
pub mod red;
pub mod stats;
pub mod tbf;

use crate::report::DropReason;
use elvis_kernel::rng::Rng;

pub use config::{QdiscConfig, QdiscError};
pub use droptail::{DropTail, Limit};
pub use red::{Red, RedConfig};
pub use tbf::{TokenBucket, TokenBucketConfig};

/// A frame waiting in an egress queue, as a discipline sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queued {
    /// Index of the frame in the world's frame arena (opaque here).
    pub frame: u32,
    /// Whole Ethernet frame length, bytes (what serialization costs).
    pub bytes: u32,
    /// Traffic class: the IPv4 DSCP (`tos >> 2`), 0 for non-IPv4 frames.
    pub class: u8,
    /// Hash of the IPv4 5-tuple (addresses, protocol, ports), 0 for
    /// non-IPv4 frames: the flow a fair-queueing discipline keys on.
    pub flow: u32,
    /// The IPv4 header's ECN field says ECT(0) or ECT(1) (RFC 3168 §5).
    pub ecn_capable: bool,
}

/// What [`Discipline::enqueue`] did with an arriving frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enqueue {
    /// Queued unchanged.
    Queued,
    /// Queued, and the caller must set CE in its IPv4 header (RFC 3168
    /// §5; the caller fixes the header checksum).
    QueuedMarked,
    /// Not queued: the caller discards the frame for this reason.
    Dropped(DropReason),
}

/// What [`Discipline::dequeue`] hands the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dequeue {
    /// Serialize this frame now.
    Frame(Queued),
    /// Nothing waits.
    Empty,
    /// Frames wait but none may leave before this virtual time (ns): a
    /// shaper's tokens run out. The caller asks again then.
    NotBefore(u64),
}

/// A queue discipline. `now_ns` is the virtual time; `rng` is the
/// network's own random stream (for RED's drop draw), so runs stay
/// deterministic.
pub trait Discipline {
    /// Offers an arriving frame.
    fn enqueue(&mut self, q: Queued, now_ns: u64, rng: &mut Rng) -> Enqueue;
    /// Takes the next frame to serialize.
    fn dequeue(&mut self, now_ns: u64) -> Dequeue;
    /// Frames waiting.
    fn packets(&self) -> u32;
    /// Bytes waiting.
    fn bytes(&self) -> u64;
}

/// How a class-based scheduler (strict priority, DRR, WRR, WFQ, virtual
/// clock) maps a frame to one of its classes.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Classify {
    /// Class `i` takes the frames whose DSCP is `dscp[i]`; a DSCP not
    /// listed goes to the last class. (So `dscp = [46, 0]` with two
    /// classes puts EF in class 0 and everything else in class 1.)
    Dscp(Vec<u8>),
    /// Class = 5-tuple hash modulo the number of classes (stochastic fair
    /// queueing's flow buckets).
    Flow,
}

/// Parameters of the class-based schedulers: one entry of `weights` per
/// class, whose meaning depends on the discipline (see each file):
/// priority order for strict priority (class 0 first; values unused),
/// quantum in bytes for DRR, frames per round for WRR, weight for WFQ,
/// reserved rate in bit/s for virtual clock.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ClassParams {
    pub classify: Classify,
    pub weights: Vec<u64>,
    /// Capacity of each class's FIFO.
    pub limit: Limit,
}

impl ClassParams {
    /// Returns the class (index into `weights`) of a frame.
    pub fn class_of(&self, q: &Queued) -> usize {
        let n = self.weights.len().max(1);
        match &self.classify {
            Classify::Dscp(dscp) => dscp
                .iter()
                .position(|&d| d == q.class)
                .unwrap_or(n - 1)
                .min(n - 1),
            Classify::Flow => q.flow as usize % n,
        }
    }
}

/// Returns the flow hash of an IPv4 5-tuple (deterministic: the same on
/// every machine and run; ports 0 for non-TCP/UDP or non-first
/// fragments).
pub fn flow_hash(src: u32, dst: u32, proto: u8, sport: u16, dport: u16) -> u32 {
    // SplitMix64's finalizer over the packed tuple.
    let mut x = (u64::from(src) << 32 | u64::from(dst))
        ^ (u64::from(proto) << 32 | u64::from(sport) << 16 | u64::from(dport))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (x ^ (x >> 31)) as u32
}

/// Every discipline, dispatched by `match`. The default drop-tail is kept
/// inline (it is on every queue of every run); the others are boxed so
/// that a queue that never uses them stays small.
#[derive(Clone, Debug)]
pub enum Qdisc {
    DropTail(DropTail),
    Red(Box<Red>),
    TokenBucket(Box<TokenBucket>),
}

impl Qdisc {
    /// Returns the discipline's NDL name (`droptail`, `red`, `tbf`…).
    pub fn name(&self) -> &'static str {
        match self {
            Qdisc::DropTail(_) => "droptail",
            Qdisc::Red(_) => "red",
            Qdisc::TokenBucket(_) => "tbf",
        }
    }

    /// Returns true when the discipline reads the header fields of
    /// [`Queued`] (class, flow, ECN); the network then parses them,
    /// otherwise it leaves them zero and saves the work.
    pub fn classifies(&self) -> bool {
        match self {
            Qdisc::DropTail(_) | Qdisc::TokenBucket(_) => false,
            Qdisc::Red(_) => true,
        }
    }
}

impl Discipline for Qdisc {
    #[inline]
    fn enqueue(&mut self, q: Queued, now_ns: u64, rng: &mut Rng) -> Enqueue {
        match self {
            Qdisc::DropTail(d) => d.enqueue(q, now_ns, rng),
            Qdisc::Red(d) => d.enqueue(q, now_ns, rng),
            Qdisc::TokenBucket(d) => d.enqueue(q, now_ns, rng),
        }
    }

    #[inline]
    fn dequeue(&mut self, now_ns: u64) -> Dequeue {
        match self {
            Qdisc::DropTail(d) => d.dequeue(now_ns),
            Qdisc::Red(d) => d.dequeue(now_ns),
            Qdisc::TokenBucket(d) => d.dequeue(now_ns),
        }
    }

    #[inline]
    fn packets(&self) -> u32 {
        match self {
            Qdisc::DropTail(d) => d.packets(),
            Qdisc::Red(d) => d.packets(),
            Qdisc::TokenBucket(d) => d.packets(),
        }
    }

    #[inline]
    fn bytes(&self) -> u64 {
        match self {
            Qdisc::DropTail(d) => d.bytes(),
            Qdisc::Red(d) => d.bytes(),
            Qdisc::TokenBucket(d) => d.bytes(),
        }
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Helpers shared by the disciplines' unit tests.
    use super::*;

    /// A frame of `bytes` in `class`, flow `flow`, not ECN-capable.
    pub fn frame(id: u32, bytes: u32, class: u8, flow: u32) -> Queued {
        Queued {
            frame: id,
            bytes,
            class,
            flow,
            ecn_capable: false,
        }
    }

    /// A fixed random stream for tests.
    pub fn rng() -> Rng {
        elvis_kernel::rng::stream(1, elvis_kernel::rng::StreamKind::Network, 0)
    }
}
