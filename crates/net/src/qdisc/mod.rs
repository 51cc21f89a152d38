//! Queue disciplines: what an egress interface does with the frames that
//! wait for its wire.
//!
//! A discipline sees only [`Queued`] descriptors (the frame's index in the
//! world's frame arena, its length and the header fields it classifies
//! on); the frames themselves stay where they are, so no discipline copies
//! or allocates per packet. The network code (the network code (`crate::transmit`)) asks
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
//! | strict priority (class 0 first) | `prio.rs` | [`Classify`] |
//! | deficit round robin (quantum bytes per class) | `drr.rs` | [`Classify`] |
//! | weighted round robin (frames per round) | `wrr.rs` | [`Classify`] |
//! | weighted fair queueing: PGPS (GPS virtual time) or SCFQ (self-clocked) | `wfq.rs` | [`Classify`] |
//! | virtual clock (reserved bit/s per class) | `vclock.rs` | [`Classify`] |
//! | ECN marking at a threshold K of the instantaneous queue (DCTCP) | `threshold.rs` | ECN field |
//! | three-colour markers srTCM (RFC 2697) and trTCM (RFC 2698), re-marking DSCP | `meter.rs` | DSCP (colour-aware) |
//!
//! [`QdiscConfig`] (`config.rs`) is the plain-data description a network
//! or an interface is given; it validates its parameters and builds one
//! fresh [`Qdisc`] per queue.

pub mod classes;
pub mod config;
pub mod droptail;
pub mod drr;
pub mod meter;
pub mod prio;
pub mod red;
pub mod stats;
pub mod tagged;
pub mod tbf;
pub mod threshold;
pub mod vclock;
pub mod wfq;
pub mod wrr;

use crate::DropReason;
use elvis_kernel::rng::Rng;

pub use config::{QdiscConfig, QdiscError};
pub use droptail::{DropTail, Limit};
pub use drr::Drr;
pub use meter::{Meter, MeterConfig, MeterKind};
pub use prio::Prio;
pub use red::{Red, RedConfig};
pub use tbf::{TokenBucket, TokenBucketConfig};
pub use threshold::{Threshold, ThresholdConfig};
pub use vclock::VirtualClock;
pub use wfq::Wfq;
pub use wrr::Wrr;

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
    /// Queued, and the caller must set the IPv4 DSCP to this value (a
    /// three-colour marker's re-marking; the caller fixes the checksum).
    QueuedRemarked(u8),
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

/// Per-class counters of a class-based scheduler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ClassStats {
    /// Frames accepted into the class's FIFO.
    pub enqueued: u64,
    /// Frames handed to the wire.
    pub dequeued: u64,
    /// Frames refused because the class's FIFO was full.
    pub dropped: u64,
    /// Bytes handed to the wire (whole frames).
    pub bytes: u64,
}

/// Every discipline, dispatched by `match`. The default drop-tail is kept
/// inline (it is on every queue of every run); the others are boxed so
/// that a queue that never uses them stays small (a port with traffic
/// holds two queues).
#[derive(Clone, Debug)]
pub enum Qdisc {
    DropTail(DropTail),
    Red(Box<Red>),
    TokenBucket(Box<TokenBucket>),
    Prio(Box<Prio>),
    Wfq(Box<Wfq>),
    Wrr(Box<Wrr>),
    Drr(Box<Drr>),
    VirtualClock(Box<VirtualClock>),
    Threshold(Box<Threshold>),
    Meter(Box<Meter>),
}

impl Qdisc {
    /// Returns the discipline's NDL name (`droptail`, `red`, `tbf`…).
    pub fn name(&self) -> &'static str {
        match self {
            Qdisc::DropTail(_) => "droptail",
            Qdisc::Red(_) => "red",
            Qdisc::TokenBucket(_) => "tbf",
            Qdisc::Prio(_) => "prio",
            Qdisc::Wfq(_) => "wfq",
            Qdisc::Wrr(_) => "wrr",
            Qdisc::Drr(_) => "drr",
            Qdisc::VirtualClock(_) => "vclock",
            Qdisc::Threshold(_) => "ecn_threshold",
            Qdisc::Meter(_) => "meter",
        }
    }

    /// Returns true when the discipline reads the header fields of
    /// [`Queued`] (class, flow, ECN); the network then parses them,
    /// otherwise it leaves them zero and saves the work.
    pub fn classifies(&self) -> bool {
        !matches!(self, Qdisc::DropTail(_) | Qdisc::TokenBucket(_))
    }

    /// Per-class counters of a class-based scheduler, indexed by class;
    /// empty for a classless discipline.
    pub fn class_stats(&self) -> &[ClassStats] {
        match self {
            Qdisc::DropTail(_)
            | Qdisc::Red(_)
            | Qdisc::TokenBucket(_)
            | Qdisc::Threshold(_)
            | Qdisc::Meter(_) => &[],
            Qdisc::Prio(d) => d.class_stats(),
            Qdisc::VirtualClock(d) => d.class_stats(),
            Qdisc::Wfq(d) => d.class_stats(),
            Qdisc::Wrr(d) => d.class_stats(),
            Qdisc::Drr(d) => d.class_stats(),
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
            Qdisc::Prio(d) => d.enqueue(q, now_ns, rng),
            Qdisc::VirtualClock(d) => d.enqueue(q, now_ns, rng),
            Qdisc::Wfq(d) => d.enqueue(q, now_ns, rng),
            Qdisc::Wrr(d) => d.enqueue(q, now_ns, rng),
            Qdisc::Drr(d) => d.enqueue(q, now_ns, rng),
            Qdisc::Threshold(d) => d.enqueue(q, now_ns, rng),
            Qdisc::Meter(d) => d.enqueue(q, now_ns, rng),
        }
    }

    #[inline]
    fn dequeue(&mut self, now_ns: u64) -> Dequeue {
        match self {
            Qdisc::DropTail(d) => d.dequeue(now_ns),
            Qdisc::Red(d) => d.dequeue(now_ns),
            Qdisc::TokenBucket(d) => d.dequeue(now_ns),
            Qdisc::Prio(d) => d.dequeue(now_ns),
            Qdisc::VirtualClock(d) => d.dequeue(now_ns),
            Qdisc::Wfq(d) => d.dequeue(now_ns),
            Qdisc::Wrr(d) => d.dequeue(now_ns),
            Qdisc::Drr(d) => d.dequeue(now_ns),
            Qdisc::Threshold(d) => d.dequeue(now_ns),
            Qdisc::Meter(d) => d.dequeue(now_ns),
        }
    }

    #[inline]
    fn packets(&self) -> u32 {
        match self {
            Qdisc::DropTail(d) => d.packets(),
            Qdisc::Red(d) => d.packets(),
            Qdisc::TokenBucket(d) => d.packets(),
            Qdisc::Prio(d) => d.packets(),
            Qdisc::VirtualClock(d) => d.packets(),
            Qdisc::Wfq(d) => d.packets(),
            Qdisc::Wrr(d) => d.packets(),
            Qdisc::Drr(d) => d.packets(),
            Qdisc::Threshold(d) => d.packets(),
            Qdisc::Meter(d) => d.packets(),
        }
    }

    #[inline]
    fn bytes(&self) -> u64 {
        match self {
            Qdisc::DropTail(d) => d.bytes(),
            Qdisc::Red(d) => d.bytes(),
            Qdisc::TokenBucket(d) => d.bytes(),
            Qdisc::Prio(d) => d.bytes(),
            Qdisc::VirtualClock(d) => d.bytes(),
            Qdisc::Wfq(d) => d.bytes(),
            Qdisc::Wrr(d) => d.bytes(),
            Qdisc::Drr(d) => d.bytes(),
            Qdisc::Threshold(d) => d.bytes(),
            Qdisc::Meter(d) => d.bytes(),
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

    /// Dequeues (at time 0) until the discipline is empty.
    pub fn served(d: &mut impl Discipline) -> Vec<Queued> {
        std::iter::from_fn(|| match d.dequeue(0) {
            Dequeue::Frame(f) => Some(f),
            Dequeue::Empty => None,
            Dequeue::NotBefore(t) => panic!("work-conserving discipline said NotBefore({t})"),
        })
        .collect()
    }

    /// Serves `arrivals` (`(time ns, frame)`, in time order) on a wire of
    /// `rate_bps` that asks for the next frame whenever it goes idle;
    /// returns each frame with the time its last bit leaves.
    pub fn run_link(
        d: &mut impl Discipline,
        arrivals: &[(u64, Queued)],
        rate_bps: u64,
    ) -> Vec<(u64, Queued)> {
        let mut r = rng();
        let mut out = Vec::with_capacity(arrivals.len());
        let (mut next, mut free_at) = (0, 0u64);
        loop {
            if let Some(&(t, q)) = arrivals.get(next) {
                if d.packets() == 0 || t <= free_at {
                    free_at = free_at.max(t);
                    d.enqueue(q, t, &mut r);
                    next += 1;
                    continue;
                }
            } else if d.packets() == 0 {
                return out;
            }
            match d.dequeue(free_at) {
                Dequeue::Frame(f) => {
                    free_at += (u64::from(f.bytes) * 8_000_000_000).div_ceil(rate_bps);
                    out.push((free_at, f));
                }
                Dequeue::NotBefore(t) => free_at = t.max(free_at + 1),
                Dequeue::Empty => panic!("frames wait but dequeue says Empty"),
            }
        }
    }

    /// Checks a fair-share bound over every window of a service log in
    /// which the classes (the frames' `class` field, used as the class
    /// index) were all backlogged: for every window there must be one `K`
    /// with `|sent_c − K·weights[c]| ≤ bound(c)` for every class `c`.
    /// By Helly's theorem in one dimension that holds iff it holds for
    /// every pair: `(sent_i − B_i)·w_j ≤ (sent_j + B_j)·w_i`. Returns the
    /// first violating window.
    pub fn fair_within(
        log: &[Queued],
        weights: &[u64],
        bound: impl Fn(usize) -> u64,
    ) -> Result<(), String> {
        let n = weights.len();
        let b: Vec<i128> = (0..n).map(|c| i128::from(bound(c))).collect();
        let w: Vec<i128> = weights.iter().map(|&x| i128::from(x)).collect();
        let mut sent = vec![0i128; n];
        for start in 0..log.len() {
            sent.iter_mut().for_each(|s| *s = 0);
            for (end, f) in log.iter().enumerate().skip(start) {
                sent[usize::from(f.class)] += i128::from(f.bytes);
                for i in 0..n {
                    for j in 0..n {
                        if (sent[i] - b[i]) * w[j] > (sent[j] + b[j]) * w[i] {
                            return Err(format!(
                                "window {start}..={end}: sent {sent:?}, classes {i} and {j}"
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! Properties every discipline shares.
    use super::testing::{frame, rng};
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// One step of a random workload.
    #[derive(Clone, Debug)]
    enum Op {
        /// A frame of `bytes`, DSCP, flow hash arrives; time advances by
        /// `dt` ns first.
        Arrive {
            bytes: u32,
            dscp: u8,
            flow: u32,
            dt: u64,
        },
        /// The wire asks for a frame.
        Depart,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (1u32..1600, 0u8..64, any::<u32>(), 0u64..20_000).prop_map(
                |(bytes, dscp, flow, dt)| Op::Arrive {
                    bytes,
                    dscp,
                    flow,
                    dt
                }
            ),
            Just(Op::Depart),
        ]
    }

    fn class_params() -> impl Strategy<Value = ClassParams> {
        let classify = prop_oneof![
            Just(Classify::Flow),
            proptest::sample::subsequence((0u8..64).collect::<Vec<_>>(), 0..4)
                .prop_shuffle()
                .prop_map(Classify::Dscp),
        ];
        let limit = prop_oneof![
            Just(Limit::Unbounded),
            (1u32..6).prop_map(Limit::Packets),
            (1500u64..6000).prop_map(Limit::Bytes),
        ];
        (classify, proptest::collection::vec(1u64..3000, 1..6), limit).prop_map(
            |(mut classify, weights, limit)| {
                // At most one DSCP per class.
                if let Classify::Dscp(list) = &mut classify {
                    list.truncate(weights.len());
                }
                ClassParams {
                    classify,
                    weights,
                    limit,
                }
            },
        )
    }

    /// Per-class counters, for the disciplines that keep them. (Tests the
    /// disciplines directly, not through [`Qdisc`], whose variants may be
    /// boxed.)
    trait Stats {
        fn stats(&self) -> &[ClassStats];
    }
    impl Stats for DropTail {
        fn stats(&self) -> &[ClassStats] {
            &[]
        }
    }
    macro_rules! stats {
        ($($t:ty),*) => {$(
            impl Stats for $t {
                fn stats(&self) -> &[ClassStats] {
                    self.class_stats()
                }
            }
        )*};
    }
    stats!(Prio, Drr, Wrr, Wfq, VirtualClock);

    /// Runs `ops` on `d`, then drains it, checking that every accepted
    /// frame leaves exactly once and the counters agree with a model.
    fn conserves<D: Discipline + Stats>(mut d: D, ops: &[Op]) -> Result<(), TestCaseError> {
        let mut r = rng();
        let mut waiting: BTreeMap<u32, u32> = BTreeMap::new();
        let (mut now, mut id, mut accepted, mut dropped, mut served_bytes) = (0, 0, 0, 0, 0);
        let mut depart = |d: &mut D, now, waiting: &mut BTreeMap<u32, u32>| match d.dequeue(now) {
            Dequeue::Frame(f) => {
                prop_assert_eq!(
                    waiting.remove(&f.frame),
                    Some(f.bytes),
                    "left twice or never came"
                );
                served_bytes += u64::from(f.bytes);
                Ok(true)
            }
            Dequeue::Empty => {
                prop_assert!(waiting.is_empty(), "Empty with frames waiting");
                Ok(false)
            }
            Dequeue::NotBefore(t) => Err(TestCaseError::fail(format!("NotBefore({t})"))),
        };
        for op in ops {
            match *op {
                Op::Arrive {
                    bytes,
                    dscp,
                    flow,
                    dt,
                } => {
                    now += dt;
                    id += 1;
                    match d.enqueue(frame(id, bytes, dscp, flow), now, &mut r) {
                        Enqueue::Queued => {
                            waiting.insert(id, bytes);
                            accepted += 1;
                        }
                        Enqueue::Dropped(_) => dropped += 1,
                        Enqueue::QueuedMarked => prop_assert!(false, "no ECN here"),
                        Enqueue::QueuedRemarked(_) => prop_assert!(false, "no meter here"),
                    }
                }
                Op::Depart => {
                    depart(&mut d, now, &mut waiting)?;
                }
            }
            prop_assert_eq!(d.packets() as usize, waiting.len());
            prop_assert_eq!(
                d.bytes(),
                waiting.values().map(|&b| u64::from(b)).sum::<u64>()
            );
        }
        while depart(&mut d, now, &mut waiting)? {}
        prop_assert_eq!((d.packets(), d.bytes()), (0, 0));
        let stats = d.stats();
        if !stats.is_empty() {
            let sum = |f: fn(&ClassStats) -> u64| stats.iter().map(f).sum::<u64>();
            prop_assert_eq!(sum(|s| s.enqueued), accepted);
            prop_assert_eq!(sum(|s| s.dequeued), accepted);
            prop_assert_eq!(sum(|s| s.dropped), dropped);
            prop_assert_eq!(sum(|s| s.bytes), served_bytes);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn every_discipline_hands_each_accepted_frame_to_the_wire_exactly_once(
            p in class_params(),
            ops in proptest::collection::vec(op(), 0..300),
        ) {
            conserves(DropTail::new(p.limit), &ops)?;
            conserves(Prio::new(&p).unwrap(), &ops)?;
            conserves(Drr::new(&p).unwrap(), &ops)?;
            conserves(Wrr::new(&p).unwrap(), &ops)?;
            conserves(Wfq::new(&p).unwrap(), &ops)?;
            conserves(Wfq::new_with_rate(&p, 100_000_000).unwrap(), &ops)?;
            conserves(VirtualClock::new(&p).unwrap(), &ops)?;
        }
    }
}
