//! Deficit Round Robin (M. Shreedhar and G. Varghese, "Efficient Fair
//! Queuing using Deficit Round Robin", SIGCOMM 1995, §3 and Fig. 3).
//!
//! Each class `i` has a quantum `Q_i` (bytes; `weights[i]`) and a deficit
//! counter `DC_i`. Backlogged classes sit in an `ActiveList` in round-robin
//! order. When class `i` reaches the head of the list it starts its turn
//! with `DC_i ← DC_i + Q_i`, then sends head frames while the head frame's
//! length `L ≤ DC_i`, each time `DC_i ← DC_i − L`. If its FIFO empties,
//! `DC_i ← 0` and it leaves the list (an idle class keeps no credit);
//! otherwise it goes to the tail with the remainder. A class that becomes
//! backlogged joins the tail with `DC_i = 0`.
//!
//! Guarantee (the paper's Lemma 1 and Theorem 1): at the end of each of its
//! turns a backlogged class has `0 ≤ DC_i < Max` (the largest frame), so
//! over `m` of its turns it sends between `m·Q_i − Max` and `m·Q_i + Max`
//! bytes; over any stretch of service in which all classes stay
//! backlogged there is a common `K` with `|sent_i − K·Q_i| < Max + Q_i` for
//! every class: byte shares follow the quanta to within one maximum frame
//! plus one quantum. The unit tests check exactly this bound over every
//! window of a randomized run.
//!
//! Cost: O(1) per frame when every quantum is at least the largest frame
//! (the paper's condition). A smaller quantum gives the same shares, but a
//! frame may wait `⌈L/Q_i⌉` rounds in which nobody sends; `dequeue` credits
//! such rounds at once after one fruitless pass of the list, so a frame
//! costs at most O(backlogged classes) whatever the quanta.
//! Work-conserving: never answers [`Dequeue::NotBefore`].
//!
//! This is Linux's `drr` qdisc, except that Linux credits a class's
//! quantum when it joins the list rather than when its turn begins (the
//! same shares; the first turn differs).

use super::classes::Classes;
use super::{ClassParams, ClassStats, Dequeue, Discipline, Enqueue, Queued};
use crate::DropReason;
use elvis_kernel::rng::Rng;
use std::collections::VecDeque;

/// A Deficit Round Robin scheduler.
#[derive(Clone, Debug)]
pub struct Drr {
    classes: Classes,
    quantum: Vec<u64>,
    deficit: Vec<u64>,
    /// Backlogged classes in round-robin order; each at most once.
    active: VecDeque<u32>,
    /// The head of `active` has had its quantum for this turn.
    in_turn: bool,
}

impl Drr {
    /// Builds a DRR scheduler whose class `i` has quantum `p.weights[i]`
    /// bytes.
    ///
    /// # Errors
    /// A zero quantum, or see [`Classes::new`].
    pub fn new(p: &ClassParams) -> Result<Drr, String> {
        let classes = Classes::new(p, "drr")?;
        if let Some(i) = p.weights.iter().position(|&w| w == 0) {
            return Err(format!("drr: quantum of class {i} is 0"));
        }
        let n = classes.count();
        Ok(Drr {
            classes,
            quantum: p.weights.clone(),
            deficit: vec![0; n],
            active: VecDeque::with_capacity(n),
            in_turn: false,
        })
    }

    /// Per-class counters, indexed by class.
    pub fn class_stats(&self) -> &[ClassStats] {
        self.classes.stats()
    }

    /// Class `c`'s deficit counter, bytes.
    pub fn deficit(&self, c: usize) -> u64 {
        self.deficit[c]
    }

    /// After a whole pass of the active list in which no class could send
    /// (every `DC_i < L_i`, the head frame's length), credits at once the
    /// `k = min_i ⌊(L_i − 1 − DC_i) / Q_i⌋` further rounds in which none
    /// could: `DC_i ← DC_i + k·Q_i`. The order of service is unchanged;
    /// only the empty rounds are not walked one by one (which a quantum
    /// far below the frame size would otherwise cost).
    fn skip_idle_rounds(&mut self) {
        let rounds = |c: usize| {
            let len = u64::from(
                self.classes
                    .front(c)
                    .expect("active class is backlogged")
                    .bytes,
            );
            (len - 1 - self.deficit[c]) / self.quantum[c]
        };
        let Some(k) = self.active.iter().map(|&c| rounds(c as usize)).min() else {
            return;
        };
        for &c in &self.active {
            self.deficit[c as usize] += k * self.quantum[c as usize];
        }
    }

    /// Ends the head class's turn: it leaves the list if it has emptied
    /// (losing its deficit), else goes to the tail.
    fn end_turn(&mut self, c: usize) {
        self.active.pop_front();
        self.in_turn = false;
        if self.classes.is_empty(c) {
            self.deficit[c] = 0;
        } else {
            self.active.push_back(c as u32);
        }
    }
}

impl Discipline for Drr {
    fn enqueue(&mut self, q: Queued, _now_ns: u64, _rng: &mut Rng) -> Enqueue {
        let c = self.classes.class_of(&q);
        let was_idle = self.classes.is_empty(c);
        if !self.classes.push(c, q) {
            return Enqueue::Dropped(DropReason::QueueFull);
        }
        if was_idle {
            self.active.push_back(c as u32);
        }
        Enqueue::Queued
    }

    fn dequeue(&mut self, _now_ns: u64) -> Dequeue {
        // Turns ended in this call without sending: after a whole pass of
        // the list, skip the rounds in which nobody can send.
        let mut idle_turns = 0;
        while let Some(&head) = self.active.front() {
            let c = head as usize;
            if !self.in_turn {
                self.deficit[c] += self.quantum[c];
                self.in_turn = true;
            }
            let len = u64::from(
                self.classes
                    .front(c)
                    .expect("active class is backlogged")
                    .bytes,
            );
            if len <= self.deficit[c] {
                self.deficit[c] -= len;
                let q = self.classes.pop(c).expect("active class is backlogged");
                if self.classes.is_empty(c) {
                    self.end_turn(c);
                }
                return Dequeue::Frame(q);
            }
            self.end_turn(c);
            idle_turns += 1;
            if idle_turns == self.active.len() {
                self.skip_idle_rounds();
                idle_turns = 0;
            }
        }
        Dequeue::Empty
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
    use crate::qdisc::testing::{fair_within, frame, rng, served};
    use crate::qdisc::{Classify, Limit};
    use proptest::prelude::*;
    use rand::Rng as _;

    fn drr(quanta: &[u64]) -> Drr {
        Drr::new(&ClassParams {
            classify: Classify::Dscp((0..quanta.len() as u8).collect()),
            weights: quanta.to_vec(),
            limit: Limit::Unbounded,
        })
        .unwrap()
    }

    #[test]
    fn frames_leave_in_the_order_of_the_papers_algorithm() {
        let mut d = drr(&[500, 500]);
        let mut r = rng();
        for (id, len) in [(1, 200), (2, 750), (3, 300)] {
            d.enqueue(frame(id, len, 0, 0), 0, &mut r);
        }
        for (id, len) in [(11, 500), (12, 500)] {
            d.enqueue(frame(id, len, 1, 0), 0, &mut r);
        }
        // Round 1: class 0 has 500, sends 200, keeps 300 < 750; class 1
        // sends 500. Round 2: class 0 has 800, sends 750, keeps 50 < 300;
        // class 1 sends 500 and empties. Round 3: class 0 sends 300.
        let order: Vec<u32> = served(&mut d).iter().map(|f| f.frame).collect();
        assert_eq!(order, [1, 11, 2, 12, 3]);
    }

    #[test]
    fn backlogged_byte_shares_follow_the_quanta_within_one_frame_and_one_quantum() {
        let quanta = [500u64, 1000, 1500];
        let max = 1500u32;
        let mut d = drr(&quanta);
        let mut r = rng();
        for id in 0..9000u32 {
            let len = r.random_range(64..=max);
            d.enqueue(frame(id, len, (id % 3) as u8, 0), 0, &mut r);
        }
        let mut log = Vec::new();
        for _ in 0..4000 {
            let Dequeue::Frame(f) = d.dequeue(0) else {
                panic!("backlogged")
            };
            log.push(f);
            // Lemma 1: between turns, every deficit is below Max.
            for c in 0..3 {
                let mid_turn = d.in_turn && d.active.front() == Some(&(c as u32));
                assert!(mid_turn || d.deficit(c) < u64::from(max));
            }
        }
        for c in 0..3 {
            assert!(!d.classes.is_empty(c), "class {c} must stay backlogged");
        }
        let bound = |q: [u64; 3]| move |c: usize| u64::from(max) + q[c];
        assert_eq!(fair_within(&log, &quanta, bound(quanta)), Ok(()));
        // The check can fail: the same service judged against other
        // quanta is not fair.
        let other = [1500, 1000, 500];
        assert!(fair_within(&log, &other, bound(other)).is_err());
    }

    #[test]
    fn an_emptied_class_loses_its_deficit() {
        let mut d = drr(&[1000, 1000]);
        let mut r = rng();
        d.enqueue(frame(1, 300, 0, 0), 0, &mut r);
        for id in 10..20 {
            d.enqueue(frame(id, 1000, 1, 0), 0, &mut r);
        }
        assert_eq!(d.dequeue(0), Dequeue::Frame(frame(1, 300, 0, 0)));
        assert_eq!(d.deficit(0), 0, "700 bytes of credit must not survive");
        // Back with three 600-byte frames: its next turn brings 1000, enough
        // for one frame only, then class 1 is served again.
        for id in 2..5 {
            d.enqueue(frame(id, 600, 0, 0), 0, &mut r);
        }
        let classes: Vec<u8> = (0..4)
            .map(|_| match d.dequeue(0) {
                Dequeue::Frame(f) => f.class,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(classes, [1, 0, 1, 0]);
        // 400 left from its turn, plus 1000, less one 600-byte frame.
        assert_eq!(d.deficit(0), 400 + 1000 - 600);
    }

    /// The paper's Fig. 3 as written, run to completion on a fixed
    /// backlog: returns the frame ids in the order they are sent.
    fn paper_order(quanta: &[u64], frames: &[(u32, u8)]) -> Vec<usize> {
        let n = quanta.len();
        let mut queues: Vec<VecDeque<(usize, u64)>> = vec![VecDeque::new(); n];
        let mut active = VecDeque::new();
        for (id, &(len, class)) in frames.iter().enumerate() {
            let c = usize::from(class);
            if queues[c].is_empty() {
                active.push_back(c);
            }
            queues[c].push_back((id, u64::from(len)));
        }
        let mut dc = vec![0u64; n];
        let mut out = Vec::new();
        while let Some(i) = active.pop_front() {
            dc[i] += quanta[i];
            while let Some(&(id, len)) = queues[i].front() {
                if len > dc[i] {
                    break;
                }
                dc[i] -= len;
                out.push(id);
                queues[i].pop_front();
            }
            if queues[i].is_empty() {
                dc[i] = 0;
            } else {
                active.push_back(i);
            }
        }
        out
    }

    proptest! {
        #[test]
        fn the_order_matches_the_papers_pseudocode(
            // Quanta far below the frame sizes exercise the skipped rounds.
            quanta in proptest::collection::vec(prop_oneof![1u64..40, 1u64..3000], 1..5),
            frames in proptest::collection::vec((1u32..1600, 0u8..5), 0..200),
        ) {
            let frames: Vec<(u32, u8)> =
                frames.into_iter().map(|(l, c)| (l, c % quanta.len() as u8)).collect();
            let mut d = drr(&quanta);
            let mut r = rng();
            for (id, &(len, class)) in frames.iter().enumerate() {
                d.enqueue(frame(id as u32, len, class, 0), 0, &mut r);
            }
            let ours: Vec<usize> = served(&mut d).iter().map(|f| f.frame as usize).collect();
            prop_assert_eq!(ours, paper_order(&quanta, &frames));
        }
    }

    #[test]
    fn tiny_quanta_give_the_papers_order_without_walking_empty_rounds() {
        // Quanta of 1 and 2 bytes, 1500-byte frames: class 1 can send every
        // 750 rounds, class 0 every 1500.
        let frames: Vec<(u32, u8)> = (0..6).map(|i| (1500, i % 2)).collect();
        let mut d = drr(&[1, 2]);
        let mut r = rng();
        for (id, &(len, class)) in frames.iter().enumerate() {
            d.enqueue(frame(id as u32, len, class, 0), 0, &mut r);
        }
        let ours: Vec<usize> = served(&mut d).iter().map(|f| f.frame as usize).collect();
        assert_eq!(ours, paper_order(&[1, 2], &frames));
        // Round 750: frame 1; round 1500: frames 0 and 3; round 2250: 5;
        // rounds 3000 and 4500: 2 and 4.
        assert_eq!(ours, [1, 0, 3, 5, 2, 4]);
    }

    #[test]
    fn a_zero_quantum_is_refused_with_its_class_named() {
        let err = Drr::new(&ClassParams {
            classify: Classify::Flow,
            weights: vec![1500, 1500, 0],
            limit: Limit::Unbounded,
        })
        .unwrap_err();
        assert_eq!(err, "drr: quantum of class 2 is 0");
    }
}
