//! Strict priority: the head frame of the highest-priority non-empty class
//! leaves first; class 0 is the highest. A lower class is served only when
//! every higher class is empty, so a backlogged class starves all classes
//! below it. This is Linux's `prio` qdisc (`sch_prio.c`: `prio_dequeue`
//! scans its bands from 0 up and takes the first non-empty one) and the
//! "strict priority" scheduler of IEEE 802.1Q §8.6.8.1.
//!
//! Parameters: one entry of `weights` per class; the values are unused
//! (the order is the priority). Each class is a FIFO with its own limit.
//! Work-conserving: never answers [`Dequeue::NotBefore`].
//!
//! Cost: finding the first non-empty class visits one 64-bit word per 64
//! classes; no allocation per packet.
//!
//! # Gaps
//! - No preemption: a low-priority frame already handed to the wire
//!   finishes (as on real links without IEEE 802.1Qbu).

use super::classes::Classes;
use super::{ClassParams, ClassStats, Dequeue, Discipline, Enqueue, Queued};
use crate::DropReason;
use elvis_kernel::rng::Rng;

/// A strict-priority scheduler.
#[derive(Clone, Debug)]
pub struct Prio {
    classes: Classes,
    /// Classes whose FIFO has no limit: the lossless priorities of a
    /// network with PFC (`crate::pfc`), bit per class.
    lossless: u64,
}

impl Prio {
    /// Builds a strict-priority scheduler with `p.weights.len()` classes.
    ///
    /// # Errors
    /// See [`Classes::new`].
    pub fn new(p: &ClassParams) -> Result<Prio, String> {
        Ok(Prio {
            classes: Classes::new(p, "prio")?,
            lossless: 0,
        })
    }

    /// Per-class counters, indexed by class.
    pub fn class_stats(&self) -> &[ClassStats] {
        self.classes.stats()
    }

    /// Lifts the limit of the classes of `mask` (PFC's lossless
    /// priorities: their admission is the ingress's headroom check).
    pub fn set_lossless(&mut self, mask: u64) {
        self.lossless = mask;
    }

    /// Returns the class a frame goes to.
    pub fn class_of(&self, q: &Queued) -> usize {
        self.classes.class_of(q)
    }

    /// Takes the head frame of the highest-priority non-empty class not
    /// in `paused` (IEEE 802.1Qbb: a paused priority is not served,
    /// the others are); `None` when every waiting frame is paused.
    pub fn dequeue_except(&mut self, paused: u64) -> Option<Queued> {
        let c = self.classes.first_nonempty_except(paused)?;
        self.classes.pop(c)
    }

    /// Returns whether class `c` holds frames.
    pub fn holds(&self, c: usize) -> bool {
        c < self.classes.count() && !self.classes.is_empty(c)
    }
}

impl Discipline for Prio {
    fn enqueue(&mut self, q: Queued, _now_ns: u64, _rng: &mut Rng) -> Enqueue {
        let c = self.classes.class_of(&q);
        let limited = c >= 64 || self.lossless & (1 << c) == 0;
        if self.classes.push_limited(c, q, limited) {
            Enqueue::Queued
        } else {
            Enqueue::Dropped(DropReason::QueueFull)
        }
    }

    fn dequeue(&mut self, _now_ns: u64) -> Dequeue {
        match self.classes.next_nonempty(0) {
            Some(c) => Dequeue::Frame(self.classes.pop(c).expect("non-empty class")),
            None => Dequeue::Empty,
        }
    }

    fn packets(&self) -> u32 {
        self.classes.packets()
    }

    fn bytes(&self) -> u64 {
        self.classes.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testing::{frame, rng};
    use crate::qdisc::{Classify, Limit};

    fn prio(n: usize) -> Prio {
        Prio::new(&ClassParams {
            classify: Classify::Dscp((0..n as u8).collect()),
            weights: vec![0; n],
            limit: Limit::Unbounded,
        })
        .unwrap()
    }

    #[test]
    fn a_backlogged_high_class_starves_the_low_class() {
        let mut p = prio(2);
        let mut r = rng();
        // Class 1 has frames waiting all along; class 0 is refilled as
        // fast as it drains.
        for i in 0..10 {
            p.enqueue(frame(1000 + i, 100, 1, 0), 0, &mut r);
        }
        let mut id = 0;
        p.enqueue(frame(id, 1500, 0, 0), 0, &mut r);
        for _ in 0..1000 {
            let Dequeue::Frame(f) = p.dequeue(0) else {
                panic!("backlogged")
            };
            assert_eq!(f.class, 0, "class 1 served while class 0 waits");
            id += 1;
            p.enqueue(frame(id, 1500, 0, 0), 0, &mut r);
        }
        assert_eq!(p.class_stats()[1].dequeued, 0);
        assert_eq!(p.class_stats()[0].dequeued, 1000);
    }

    #[test]
    fn the_low_class_gets_everything_when_the_high_class_is_empty() {
        let mut p = prio(3);
        let mut r = rng();
        for i in 0..5 {
            p.enqueue(frame(i, 100, 2, 0), 0, &mut r);
        }
        for i in 0..5 {
            assert_eq!(p.dequeue(0), Dequeue::Frame(frame(i, 100, 2, 0)));
        }
        assert_eq!(p.dequeue(0), Dequeue::Empty);
    }

    #[test]
    fn frames_leave_by_class_then_by_arrival() {
        let mut p = prio(3);
        let mut r = rng();
        let arrivals = [(1, 2), (2, 1), (3, 2), (4, 0), (5, 1), (6, 0)];
        for (id, class) in arrivals {
            p.enqueue(frame(id, 100, class, 0), 0, &mut r);
        }
        let order: Vec<u32> = std::iter::from_fn(|| match p.dequeue(0) {
            Dequeue::Frame(f) => Some(f.frame),
            _ => None,
        })
        .collect();
        assert_eq!(order, [4, 6, 2, 5, 1, 3]);
    }
}
