//! Random Early Detection (S. Floyd and V. Jacobson, "Random Early
//! Detection Gateways for Congestion Avoidance", IEEE/ACM ToN 1(4), 1993),
//! with optional ECN marking (RFC 3168).
//!
//! On every arrival the average queue size is updated (Fig. 2 of the
//! paper):
//!
//! - queue busy: `avg ← (1 − w_q)·avg + w_q·q`, `q` the frames (or bytes)
//!   waiting;
//! - after an idle period that began at `q_time`: `avg ← (1 − w_q)^m·avg`
//!   with `m = ⌊(now − q_time) / s⌋`, `s` the transmission time of a
//!   typical packet of `avpkt` bytes on this network (the packets that
//!   could have left while the queue was idle). The idle period starts
//!   when the wire asks for a frame and none waits (as in Linux's
//!   `sch_red`), and ends with the next arrival; an arrival dropped on an
//!   idle queue leaves it idle, so the wire asks again and a new idle
//!   period starts then (Linux runs its qdisc after every enqueue). `m` is
//!   an integer and the
//!   power is taken by repeated squaring, so the result is the same on
//!   every machine.
//!
//! Then, with `count` the arrivals since the last mark (−1 below
//! `min_th`):
//!
//! - `avg < min_th`: queue it, `count ← −1`;
//! - `min_th ≤ avg < max_th`: `count ← count + 1`,
//!   `p_b = max_p·(avg − min_th)/(max_th − min_th)`,
//!   `p_a = p_b / (1 − count·p_b)` (1 once `count·p_b ≥ 1`); with
//!   probability `p_a` mark the frame and `count ← 0`. This
//!   "uniformization" spreads the marks evenly (for a constant `p_b`, the
//!   gaps between marks are uniform);
//! - `gentle` (Floyd's later recommendation, as ns-2 and Linux):
//!   between `max_th` and `2·max_th`, `p_b` rises linearly from `max_p`
//!   to 1, uniformized the same way;
//! - `avg ≥ max_th` (`2·max_th` with `gentle`): forced drop, `count ← 0`.
//!
//! "Mark" means drop, or, with `ecn` on and a frame whose IPv4 header says
//! ECT(0) or ECT(1), queue it with the CE codepoint set (RFC 3168 §5; the
//! network sets the bits and fixes the header checksum). Frames that are
//! not ECN-capable are dropped as usual. Forced drops are drops even for
//! ECN-capable frames (RFC 3168 §7: a router should drop rather than mark
//! when its queue is persistently over the threshold; Linux does the same
//! with its `harddrop` flag, and marks there without it). Independently of
//! the average, an arrival that would exceed the hard `limit` of the
//! queue is dropped as full (drop-tail).
//!
//! The random draw uses the network's own stream, so runs are
//! reproducible.
//!
//! # Gaps
//! In byte mode the thresholds and the average count bytes, but `p_b` is
//! not scaled by the packet size (the paper's optional byte-mode
//! refinement, Linux's `probability`-per-byte mode).

use super::config::{check_limit, QdiscError};
use super::droptail::{DropTail, Limit};
use super::{Dequeue, Discipline, Enqueue, Queued};
use crate::DropReason;
use elvis_kernel::rng::Rng;
use rand::Rng as _;
use serde::Serialize;

/// Parameters of RED.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RedConfig {
    /// Lower threshold of the average queue (`red_min`).
    pub min_th: f64,
    /// Upper threshold of the average queue (`red_max`).
    pub max_th: f64,
    /// Marking probability at `max_th` (`red_max_p`), in (0, 1].
    pub max_p: f64,
    /// Weight of the average (`red_wq`), in (0, 1]; 0.002 by default.
    pub w_q: f64,
    /// Thresholds (and the average) count bytes instead of frames.
    pub bytes: bool,
    /// Ramp the probability from `max_p` to 1 between `max_th` and
    /// `2·max_th` (`red_gentle`).
    pub gentle: bool,
    /// Mark ECN-capable frames instead of dropping them (`ecn`).
    pub ecn: bool,
    /// Hard capacity of the queue (`limit`).
    pub limit: Limit,
    /// Typical packet size for the idle-time correction, bytes
    /// (`red_avpkt`; 1000 by default, as Linux `tc-red`).
    pub avpkt: u32,
}

impl RedConfig {
    /// Default weight of the average: the paper's recommendation.
    pub const DEFAULT_W_Q: f64 = 0.002;
    /// Default typical packet size, bytes.
    pub const DEFAULT_AVPKT: u32 = 1000;

    /// Returns a configuration with thresholds in frames, the paper's
    /// weight, no ECN, not gentle, and a hard limit of `4·max_th` frames.
    pub fn packets(min_th: f64, max_th: f64, max_p: f64) -> Self {
        RedConfig {
            min_th,
            max_th,
            max_p,
            w_q: Self::DEFAULT_W_Q,
            bytes: false,
            gentle: false,
            ecn: false,
            limit: Limit::Packets((4.0 * max_th).ceil().max(1.0) as u32),
            avpkt: Self::DEFAULT_AVPKT,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), QdiscError> {
        let finite = |v: f64| v.is_finite();
        if !finite(self.min_th) || self.min_th < 0.0 {
            return Err(QdiscError::new("red_min", "must be 0 or more"));
        }
        if !finite(self.max_th) || self.max_th <= self.min_th {
            return Err(QdiscError::new(
                "red_max",
                format!(
                    "red_max ({}) must be larger than red_min ({})",
                    self.max_th, self.min_th
                ),
            ));
        }
        if !(self.max_p > 0.0 && self.max_p <= 1.0) {
            return Err(QdiscError::new(
                "red_max_p",
                format!("{} is outside (0, 1]", self.max_p),
            ));
        }
        if !(self.w_q > 0.0 && self.w_q <= 1.0) {
            return Err(QdiscError::new(
                "red_wq",
                format!("{} is outside (0, 1]", self.w_q),
            ));
        }
        if self.avpkt == 0 {
            return Err(QdiscError::new("red_avpkt", "must be at least 1 byte"));
        }
        check_limit(&self.limit)?;
        let below = match self.limit {
            Limit::Packets(n) if !self.bytes => f64::from(n) < self.max_th,
            Limit::Bytes(n) if self.bytes => (n as f64) < self.max_th,
            _ => false,
        };
        if below {
            return Err(QdiscError::new(
                "limit",
                "the hard limit must be at least red_max, or RED never acts",
            ));
        }
        Ok(())
    }
}

/// A RED queue.
#[derive(Clone, Debug)]
pub struct Red {
    cfg: RedConfig,
    fifo: DropTail,
    /// Average queue size (frames or bytes).
    avg: f64,
    /// Arrivals since the last mark; −1 while the average is below
    /// `min_th`.
    count: i64,
    /// Start of the current idle period (`q_time`), if idle.
    idle_since: Option<u64>,
    /// Transmission time of `avpkt` bytes, ns (at least 1).
    s_ns: u64,
}

impl Red {
    /// Returns an empty RED queue for a network of `bandwidth_bps`.
    pub fn new(cfg: RedConfig, bandwidth_bps: u64) -> Self {
        let bits = u128::from(cfg.avpkt) * 8 * 1_000_000_000;
        let s_ns = match bandwidth_bps {
            0 => 1,
            b => u64::try_from(bits / u128::from(b))
                .unwrap_or(u64::MAX)
                .max(1),
        };
        Red {
            fifo: DropTail::new(cfg.limit),
            cfg,
            avg: 0.0,
            count: -1,
            idle_since: None,
            s_ns,
        }
    }

    /// Returns the average queue size.
    pub fn avg(&self) -> f64 {
        self.avg
    }

    fn queue_len(&self) -> f64 {
        if self.cfg.bytes {
            self.fifo.bytes() as f64
        } else {
            f64::from(self.fifo.packets())
        }
    }

    /// Updates the average for an arrival at `now_ns`.
    fn update_avg(&mut self, now_ns: u64) {
        let w = self.cfg.w_q;
        match self.idle_since.take() {
            Some(t0) => {
                let m = now_ns.saturating_sub(t0) / self.s_ns;
                self.avg *= powi(1.0 - w, m);
            }
            None => self.avg = (1.0 - w) * self.avg + w * self.queue_len(),
        }
    }

    /// Returns the unadjusted marking probability `p_b` for the current
    /// average (`None`: below `min_th`; `Some(None)`: forced drop).
    fn p_b(&self) -> Option<Option<f64>> {
        let c = &self.cfg;
        if self.avg < c.min_th {
            return None;
        }
        if self.avg < c.max_th {
            return Some(Some(
                c.max_p * (self.avg - c.min_th) / (c.max_th - c.min_th),
            ));
        }
        if c.gentle && self.avg < 2.0 * c.max_th {
            let over = (self.avg - c.max_th) / c.max_th;
            return Some(Some(c.max_p + (1.0 - c.max_p) * over));
        }
        Some(None)
    }
}

/// Returns `x^m` by repeated squaring (exact the same everywhere).
fn powi(mut x: f64, mut m: u64) -> f64 {
    let mut r = 1.0;
    while m > 0 {
        if m & 1 == 1 {
            r *= x;
        }
        x *= x;
        m >>= 1;
        if x == 0.0 {
            return if m > 0 { 0.0 } else { r };
        }
    }
    r
}

/// Returns `p_a = p_b / (1 − count·p_b)`, 1 once `count·p_b ≥ 1`.
pub fn uniformized(p_b: f64, count: i64) -> f64 {
    let d = 1.0 - count as f64 * p_b;
    if d <= p_b {
        1.0
    } else {
        (p_b / d).min(1.0)
    }
}

impl Discipline for Red {
    fn enqueue(&mut self, q: Queued, now_ns: u64, rng: &mut Rng) -> Enqueue {
        self.update_avg(now_ns);
        let mark = match self.p_b() {
            None => {
                self.count = -1;
                false
            }
            Some(None) => {
                self.count = 0;
                return Enqueue::Dropped(DropReason::RedForced);
            }
            Some(Some(p_b)) => {
                self.count += 1;
                let p_a = uniformized(p_b, self.count);
                let hit = rng.random::<f64>() < p_a;
                if hit {
                    self.count = 0;
                }
                hit
            }
        };
        if mark && !(self.cfg.ecn && q.ecn_capable) {
            return Enqueue::Dropped(DropReason::RedEarly);
        }
        match self.fifo.enqueue(q, now_ns, rng) {
            Enqueue::Queued if mark => Enqueue::QueuedMarked,
            other => other,
        }
    }

    fn dequeue(&mut self, now_ns: u64) -> Dequeue {
        let d = self.fifo.dequeue(now_ns);
        if d == Dequeue::Empty && self.idle_since.is_none() {
            self.idle_since = Some(now_ns);
        }
        d
    }

    fn packets(&self) -> u32 {
        self.fifo.packets()
    }

    fn bytes(&self) -> u64 {
        self.fifo.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testing::{frame, rng};

    fn red(min: f64, max: f64, max_p: f64, w_q: f64) -> Red {
        let mut c = RedConfig::packets(min, max, max_p);
        c.w_q = w_q;
        c.limit = Limit::Packets(1000);
        Red::new(c, 10_000_000)
    }

    /// Expected fraction of marked arrivals for a constant `p_b`, from the
    /// distribution of the gap X between marks that the paper's
    /// pseudo-code implies: P(X = n) = p_a(n)·Π_{i<n}(1 − p_a(i)), with
    /// p_a(i) = p_b / (1 − i·p_b). Returns (1 / E[X], Var X).
    fn expected_fraction(p_b: f64) -> (f64, f64) {
        let (mut survive, mut ex, mut ex2) = (1.0, 0.0, 0.0);
        for n in 1..100_000i64 {
            let p = uniformized(p_b, n);
            let pn = survive * p;
            ex += n as f64 * pn;
            ex2 += (n * n) as f64 * pn;
            survive *= 1.0 - p;
            if survive <= 0.0 {
                break;
            }
        }
        (1.0 / ex, ex2 - ex * ex)
    }

    /// Holds the queue at exactly `len` frames with w_q = 1 (so the
    /// average is the queue) and offers `n` arrivals, each followed by a
    /// departure when it was queued; returns the marked fraction and the
    /// gaps between marks.
    fn measure(r: &mut Red, len: u32, n: u32) -> (f64, Vec<u32>) {
        let mut g = rng();
        let mut id = 0;
        while r.packets() < len {
            id += 1;
            let _ = r.fifo.enqueue(frame(id, 100, 0, 0), 0, &mut g);
        }
        let (mut marked, mut gap, mut gaps) = (0u32, 0u32, Vec::new());
        for _ in 0..n {
            id += 1;
            gap += 1;
            match r.enqueue(frame(id, 100, 0, 0), 0, &mut g) {
                Enqueue::Queued => {
                    r.dequeue(0);
                }
                Enqueue::Dropped(_) => {
                    marked += 1;
                    gaps.push(gap);
                    gap = 0;
                }
                Enqueue::QueuedMarked => unreachable!("ecn is off"),
                Enqueue::QueuedRemarked(_) => unreachable!("RED does not re-mark DSCP"),
            }
            assert_eq!(r.packets(), len);
        }
        (f64::from(marked) / f64::from(n), gaps)
    }

    #[test]
    fn the_drop_fraction_follows_the_red_curve() {
        let (min, max, max_p) = (5.0, 15.0, 0.1);
        let n = 200_000;
        for len in [0u32, 4, 5, 7, 10, 12, 14, 15, 20] {
            let mut r = red(min, max, max_p, 1.0);
            let (frac, _) = measure(&mut r, len, n);
            let avg = f64::from(len);
            if avg < min {
                assert_eq!(frac, 0.0, "below min_th: len {len}");
                continue;
            }
            if avg >= max {
                assert_eq!(frac, 1.0, "at or above max_th: len {len}");
                continue;
            }
            let p_b = max_p * (avg - min) / (max - min);
            if p_b == 0.0 {
                assert_eq!(frac, 0.0);
                continue;
            }
            let (want, var) = expected_fraction(p_b);
            // Renewal theory: the mark count over n arrivals has standard
            // deviation sqrt(n·Var X / E[X]^3).
            let sd = (var * want.powi(3) / f64::from(n)).sqrt();
            assert!(
                (frac - want).abs() < 5.0 * sd + 1e-9,
                "len {len}: p_b {p_b}, measured {frac}, expected {want} ± {sd}"
            );
        }
    }

    #[test]
    fn uniformization_makes_the_gaps_between_drops_uniform() {
        // p_b = 0.1 with the paper's count: P(X = n) = p_b / (1 − p_b) for
        // n = 1 … 9, then X = 10 with what is left (p_a = 1 at count 9…10).
        let mut r = red(0.0, 20.0, 0.2, 1.0); // p_b = 0.2·10/20 = 0.1
        let (_, gaps) = measure(&mut r, 10, 200_000);
        let mut hist = [0u32; 12];
        for g in &gaps[1..] {
            hist[(*g as usize).min(11)] += 1;
        }
        let total: u32 = hist.iter().sum();
        let p = 0.1 / 0.9;
        for (n, &h) in hist.iter().enumerate().take(10).skip(1) {
            let want = f64::from(total) * p;
            let sd = (want * (1.0 - p)).sqrt();
            assert!(
                (f64::from(h) - want).abs() < 5.0 * sd,
                "gap {n}: {h} vs {want}"
            );
        }
        assert_eq!(hist[11], 0, "no gap exceeds 1/p_b");
    }

    #[test]
    fn gentle_ramps_the_probability_to_one_at_twice_max_th() {
        let mut c = RedConfig::packets(5.0, 10.0, 0.1);
        c.w_q = 1.0;
        c.gentle = true;
        c.limit = Limit::Packets(100);
        let mut r = Red::new(c.clone(), 10_000_000);
        // avg = 11: p_b = 0.1 + 0.9·1/10 = 0.19.
        let (frac, _) = measure(&mut r, 11, 100_000);
        let (want, var) = expected_fraction(0.19);
        let sd = (var * want.powi(3) / 100_000.0).sqrt();
        assert!((frac - want).abs() < 5.0 * sd + 1e-9, "{frac} vs {want}");
        let mut r = Red::new(c, 10_000_000);
        let (frac, _) = measure(&mut r, 20, 1000);
        assert_eq!(frac, 1.0, "forced drop from 2·max_th");
    }

    #[test]
    fn the_average_is_the_paper_ewma() {
        let mut r = red(50.0, 100.0, 0.1, 0.002);
        let mut g = rng();
        let mut want = 0.0f64;
        for i in 0..40u32 {
            // The queue grows by one each arrival: q before arrival i is i.
            want = (1.0 - 0.002) * want + 0.002 * f64::from(i);
            assert_eq!(r.enqueue(frame(i, 100, 0, 0), 0, &mut g), Enqueue::Queued);
            assert!((r.avg() - want).abs() < 1e-12, "{} vs {want}", r.avg());
        }
    }

    #[test]
    fn an_idle_period_decays_the_average_as_m_small_packets() {
        let mut r = red(50.0, 100.0, 0.1, 0.5);
        let mut g = rng();
        for i in 0..4 {
            let _ = r.enqueue(frame(i, 100, 0, 0), 0, &mut g);
        }
        while matches!(r.dequeue(0), Dequeue::Frame(_)) {}
        let before = r.avg();
        assert!(before > 1.0);
        // 10 Mbit/s, avpkt 1000 B: s = 800 µs; idle for 2.5 ms: m = 3.
        let _ = r.enqueue(frame(9, 100, 0, 0), 2_500_000, &mut g);
        let want = before * 0.5f64.powi(3);
        assert!((r.avg() - want).abs() < 1e-12, "{} vs {want}", r.avg());
    }

    #[test]
    fn ecn_capable_frames_are_marked_and_others_dropped() {
        let mut c = RedConfig::packets(0.0, 10.0, 1.0);
        c.w_q = 1.0;
        c.ecn = true;
        c.limit = Limit::Packets(100);
        let mut r = Red::new(c, 10_000_000);
        let mut g = rng();
        for i in 0..9 {
            let _ = r.fifo.enqueue(frame(i, 100, 0, 0), 0, &mut g);
        }
        // avg = 9: p_b = 0.9, p_a = 1 after the first arrival.
        let mut ect = frame(100, 100, 0, 0);
        ect.ecn_capable = true;
        let mut seen = (0, 0);
        for _ in 0..50 {
            match r.enqueue(ect, 0, &mut g) {
                Enqueue::QueuedMarked => seen.0 += 1,
                Enqueue::Queued => {}
                Enqueue::Dropped(_) => panic!("an ECN-capable frame was dropped below max_th"),
                Enqueue::QueuedRemarked(_) => panic!("RED does not re-mark DSCP"),
            }
            r.dequeue(0);
            match r.enqueue(frame(101, 100, 0, 0), 0, &mut g) {
                Enqueue::Dropped(DropReason::RedEarly) => seen.1 += 1,
                Enqueue::Queued => {
                    r.dequeue(0);
                }
                e => panic!("{e:?}"),
            }
        }
        assert!(seen.0 > 20 && seen.1 > 20, "{seen:?}");
        // Above max_th even ECN-capable frames are dropped.
        while r.packets() < 12 {
            let _ = r.fifo.enqueue(frame(300, 100, 0, 0), 0, &mut g);
        }
        assert_eq!(
            r.enqueue(ect, 0, &mut g),
            Enqueue::Dropped(DropReason::RedForced)
        );
    }

    #[test]
    fn out_of_range_parameters_are_rejected_by_name() {
        let bad = |f: &dyn Fn(&mut RedConfig)| {
            let mut c = RedConfig::packets(5.0, 15.0, 0.1);
            f(&mut c);
            c.validate().unwrap_err().param
        };
        assert_eq!(bad(&|c| c.max_th = 4.0), "red_max");
        assert_eq!(bad(&|c| c.min_th = -1.0), "red_min");
        assert_eq!(bad(&|c| c.max_p = 0.0), "red_max_p");
        assert_eq!(bad(&|c| c.max_p = 1.5), "red_max_p");
        assert_eq!(bad(&|c| c.w_q = 0.0), "red_wq");
        assert_eq!(bad(&|c| c.limit = Limit::Packets(10)), "limit");
        assert!(RedConfig::packets(5.0, 15.0, 0.1).validate().is_ok());
    }
}
