//! Virtual Clock (L. Zhang, "VirtualClock: A New Traffic Control Algorithm
//! for Packet Switching Networks", SIGCOMM 1990, §3.2).
//!
//! Each class `i` reserves a rate `r_i` bit/s (`weights[i]`) and keeps a
//! virtual clock `auxVC_i`. When a frame of `L` bytes arrives at real time
//! `now`:
//!
//! ```text
//! auxVC_i ← max(now, auxVC_i) + L·8 / r_i        (stamp the frame)
//! ```
//!
//! and frames are served in increasing stamp order (ties: lower class
//! first). A class sending at its reserved rate has stamps that track real
//! time (`auxVC_i ≈ now + L·8/r_i`); a class sending faster pushes its
//! clock ahead of real time, so its frames queue behind everyone whose
//! clock is on time: it cannot take the reserved share of another class,
//! though it may use bandwidth nobody else wants (the scheduler is
//! work-conserving and never answers [`Dequeue::NotBefore`]).
//! With reservations that do not exceed the link rate `C`, a class that
//! keeps to its rate sees every frame leave within `L/r_i + L_max/C` of
//! its arrival (the delay bound of rate-based schedulers; P. Goyal, S. Lam
//! and H. Vin, "Determining End-to-End Delay Bounds in Heterogeneous
//! Networks", 1995). The tests check the stamps against their closed form,
//! this delay bound, and that an over-rate class does not steal.
//!
//! Stamps are `u128` nanoseconds with 32 fractional bits; per-class FIFOs
//! and a heap of class heads ([`Tagged`]): O(log classes) per frame.
//!
//! # Gaps
//! - Zhang's monitoring of `VC_i` against `auxVC_i` (to police a class
//!   that runs ahead) is not implemented: an over-rate class is only
//!   pushed back, never dropped.
//! - A class that used idle bandwidth beyond its rate keeps a clock in the
//!   future and is served after on-time classes later: the scheme's known
//!   "punishment" (Parekh and Gallager 1993, §1), kept as published.

use super::tagged::Tagged;
use super::{ClassParams, ClassStats, Dequeue, Discipline, Enqueue, Queued};
use crate::DropReason;
use elvis_kernel::rng::Rng;

/// Fractional bits of the fixed-point stamps.
const FRAC: u32 = 32;

/// A Virtual Clock scheduler.
#[derive(Clone, Debug)]
pub struct VirtualClock {
    queue: Tagged,
    rate_bps: Vec<u64>,
    /// `auxVC_i`, ns with `FRAC` fractional bits.
    aux: Vec<u128>,
}

impl VirtualClock {
    /// Builds a Virtual Clock scheduler whose class `i` reserves
    /// `p.weights[i]` bit/s.
    ///
    /// # Errors
    /// A zero rate, or see [`Tagged::new`].
    pub fn new(p: &ClassParams) -> Result<VirtualClock, String> {
        let queue = Tagged::new(p, "vclock")?;
        if let Some(i) = p.weights.iter().position(|&w| w == 0) {
            return Err(format!("vclock: rate of class {i} is 0"));
        }
        Ok(VirtualClock {
            queue,
            rate_bps: p.weights.clone(),
            aux: vec![0; p.weights.len()],
        })
    }

    /// Per-class counters, indexed by class.
    pub fn class_stats(&self) -> &[ClassStats] {
        self.queue.stats()
    }

    /// Class `c`'s virtual clock `auxVC_c`, ns (rounded down).
    pub fn clock_ns(&self, c: usize) -> u64 {
        (self.aux[c] >> FRAC) as u64
    }
}

impl Discipline for VirtualClock {
    fn enqueue(&mut self, q: Queued, now_ns: u64, _rng: &mut Rng) -> Enqueue {
        let c = self.queue.class_of(&q);
        let tick = ((u128::from(q.bytes) * 8_000_000_000) << FRAC) / u128::from(self.rate_bps[c]);
        let stamp = self.aux[c].max(u128::from(now_ns) << FRAC) + tick;
        if !self.queue.push(c, q, stamp) {
            return Enqueue::Dropped(DropReason::QueueFull);
        }
        self.aux[c] = stamp;
        Enqueue::Queued
    }

    fn dequeue(&mut self, _now_ns: u64) -> Dequeue {
        match self.queue.pop() {
            Some((q, _, _)) => Dequeue::Frame(q),
            None => Dequeue::Empty,
        }
    }

    fn packets(&self) -> u32 {
        self.queue.packets()
    }

    fn bytes(&self) -> u64 {
        self.queue.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testing::{frame, rng, run_link};
    use crate::qdisc::{Classify, DropTail, Limit};

    fn vclock(rates: &[u64]) -> VirtualClock {
        VirtualClock::new(&ClassParams {
            classify: Classify::Dscp((0..rates.len() as u8).collect()),
            weights: rates.to_vec(),
            limit: Limit::Unbounded,
        })
        .unwrap()
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn stamps_follow_the_closed_form() {
        // 1 Mbit/s reserved, 1000-byte frames: Vtick = 8 ms.
        let mut vc = vclock(&[1_000_000, 3_000_000]);
        let mut r = rng();
        // A burst of five at t = 1 ms: stamps 1 + 8k ms, k = 1..=5.
        for id in 0..5 {
            vc.enqueue(frame(id, 1000, 0, 0), MS, &mut r);
        }
        assert_eq!(vc.clock_ns(0), MS + 5 * 8 * MS);
        // After idling past its clock, the class restarts from real time:
        // no credit for the idle period.
        vc.enqueue(frame(5, 1000, 0, 0), 100 * MS, &mut r);
        assert_eq!(vc.clock_ns(0), 108 * MS);
        // Class 1 (3 Mbit/s, 375 bytes = 1 ms per frame) at t = 0.
        for id in 10..13 {
            vc.enqueue(frame(id, 375, 1, 0), 0, &mut r);
        }
        let stamps: Vec<(u32, u64)> = std::iter::from_fn(|| vc.queue.pop())
            .map(|(q, _, s)| (q.frame, (s >> FRAC) as u64))
            .collect();
        let expect = [
            (10, MS),
            (11, 2 * MS),
            (12, 3 * MS),
            (0, 9 * MS),
            (1, 17 * MS),
            (2, 25 * MS),
            (3, 33 * MS),
            (4, 41 * MS),
            (5, 108 * MS),
        ];
        assert_eq!(stamps, expect);
    }

    /// Frames of `bytes` every `gap` ns in class `class`, ids from `id0`.
    fn cbr(class: u8, id0: u32, bytes: u32, gap: u64, count: u32) -> Vec<(u64, Queued)> {
        (0..count)
            .map(|k| (u64::from(k) * gap, frame(id0 + k, bytes, class, 0)))
            .collect()
    }

    fn merged(mut a: Vec<(u64, Queued)>, b: Vec<(u64, Queued)>) -> Vec<(u64, Queued)> {
        a.extend(b);
        a.sort_by_key(|&(t, q)| (t, q.frame));
        a
    }

    /// Worst delay (departure of last bit minus arrival) of class `c`.
    fn worst_delay(arrivals: &[(u64, Queued)], out: &[(u64, Queued)], c: u8) -> u64 {
        let arrived: std::collections::HashMap<u32, u64> =
            arrivals.iter().map(|(t, q)| (q.frame, *t)).collect();
        out.iter()
            .filter(|(_, q)| q.class == c)
            .map(|(done, q)| done - arrived[&q.frame])
            .max()
            .unwrap()
    }

    const LINK: u64 = 10_000_000;
    /// `L/r_A + L_max/C` for 1000-byte frames, r_A = 4 Mbit/s, C = 10.
    const BOUND_A: u64 = 2 * MS + 800_000;

    #[test]
    fn two_classes_at_their_reserved_rates_get_them_within_the_delay_bound() {
        // A: 4 Mbit/s reserved, sends 1000 bytes every 2 ms. B: 6 Mbit/s,
        // 750 bytes every 1 ms. Together they fill the 10 Mbit/s link.
        let arrivals = merged(cbr(0, 0, 1000, 2 * MS, 500), cbr(1, 10_000, 750, MS, 1000));
        let mut vc = vclock(&[4_000_000, 6_000_000]);
        let out = run_link(&mut vc, &arrivals, LINK);
        assert!(worst_delay(&arrivals, &out, 0) <= BOUND_A);
        // B: L/r_B + L_max/C = 1 ms + 0.8 ms.
        assert!(worst_delay(&arrivals, &out, 1) <= MS + 800_000);
        assert_eq!(vc.class_stats()[0].bytes, 500 * 1000);
        assert_eq!(vc.class_stats()[1].bytes, 1000 * 750);
    }

    #[test]
    fn a_class_above_its_rate_is_pushed_back_and_cannot_steal_the_other_share() {
        // A keeps to its 4 Mbit/s; B reserves 6 but sends 12 Mbit/s, so
        // the link (10) is overloaded for the whole second.
        let a = cbr(0, 0, 1000, 2 * MS, 500);
        let b = cbr(1, 10_000, 1000, 2 * MS / 3, 1500);
        let arrivals = merged(a, b);
        let mut vc = vclock(&[4_000_000, 6_000_000]);
        let out = run_link(&mut vc, &arrivals, LINK);
        assert!(worst_delay(&arrivals, &out, 0) <= BOUND_A);
        // In the first second, A got its 4 Mbit/s and B the remaining 6.
        let sent = |c: u8| -> u64 {
            out.iter()
                .filter(|(done, q)| q.class == c && *done <= 1000 * MS)
                .map(|(_, q)| u64::from(q.bytes) * 8)
                .sum()
        };
        assert!(sent(0) >= 4_000_000 - 8000, "{}", sent(0));
        assert!(sent(1) >= 6_000_000 - 2 * 8000, "{}", sent(1));
        // B's frames queue behind: its clock runs ahead of real time.
        assert!(vc.clock_ns(1) > 1900 * MS);
        // FIFO on the same arrivals lets B crowd A out: A's delay grows.
        let fifo = run_link(&mut DropTail::new(Limit::Unbounded), &arrivals, LINK);
        assert!(worst_delay(&arrivals, &fifo, 0) > 100 * MS);
    }

    #[test]
    fn a_zero_rate_is_refused_with_its_class_named() {
        let err = VirtualClock::new(&ClassParams {
            classify: Classify::Flow,
            weights: vec![1, 0],
            limit: Limit::Unbounded,
        })
        .unwrap_err();
        assert_eq!(err, "vclock: rate of class 1 is 0");
    }
}
