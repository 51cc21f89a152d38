//! Per-class FIFOs whose frames carry a timestamp ("tag"), served
//! smallest tag first: the common core of the fair-queueing (WFQ, SCFQ)
//! and virtual-clock schedulers, which differ only in how they compute a
//! tag.
//!
//! Within a class the tags these schedulers assign never decrease (each is
//! `max(previous tag of the class, something) + increment`), so the
//! smallest tag in the system is at the head of some class. A binary heap
//! holds one `(head tag, class)` entry per backlogged class: `pop` is
//! O(log classes), and ties go to the lower class index (deterministic).
//! Tags are fixed-point `u128`; the heap and the tag queues grow amortized
//! and never shrink, so no packet allocates after warm-up.

use super::classes::Classes;
use super::{ClassParams, ClassStats, Queued};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Per-class FIFOs of tagged frames, served smallest head tag first.
#[derive(Clone, Debug)]
pub struct Tagged {
    classes: Classes,
    /// `tags[c][k]` is the tag of the `k`-th frame waiting in class `c`.
    tags: Vec<VecDeque<u128>>,
    /// One entry per backlogged class: its head frame's tag.
    heads: BinaryHeap<Reverse<(u128, u32)>>,
}

impl Tagged {
    /// Validates `p` (see [`Classes::new`]) and builds empty FIFOs.
    ///
    /// # Errors
    /// See [`Classes::new`].
    pub fn new(p: &ClassParams, name: &str) -> Result<Tagged, String> {
        let classes = Classes::new(p, name)?;
        let n = classes.count();
        Ok(Tagged {
            classes,
            tags: (0..n).map(|_| VecDeque::new()).collect(),
            heads: BinaryHeap::with_capacity(n),
        })
    }

    /// Returns the class of a frame.
    pub fn class_of(&self, q: &Queued) -> usize {
        self.classes.class_of(q)
    }

    /// Appends `q` with `tag` to class `c`, or counts a drop and returns
    /// false if the class is full. `tag` must be at least the tag of every
    /// frame already waiting in `c`.
    pub fn push(&mut self, c: usize, q: Queued, tag: u128) -> bool {
        let was_idle = self.classes.is_empty(c);
        if !self.classes.push(c, q) {
            return false;
        }
        debug_assert!(self.tags[c].back().is_none_or(|&t| t <= tag));
        self.tags[c].push_back(tag);
        if was_idle {
            self.heads.push(Reverse((tag, c as u32)));
        }
        true
    }

    /// Removes the frame with the smallest tag; returns it, its class and
    /// its tag.
    pub fn pop(&mut self) -> Option<(Queued, usize, u128)> {
        let Reverse((tag, c)) = self.heads.pop()?;
        let c = c as usize;
        let q = self
            .classes
            .pop(c)
            .expect("a class in the heap is backlogged");
        self.tags[c].pop_front();
        if let Some(&next) = self.tags[c].front() {
            self.heads.push(Reverse((next, c as u32)));
        }
        Some((q, c, tag))
    }

    /// Tag of the frame `pop` would return.
    pub fn min_tag(&self) -> Option<u128> {
        self.heads.peek().map(|Reverse((t, _))| *t)
    }

    /// Per-class counters, indexed by class.
    pub fn stats(&self) -> &[ClassStats] {
        self.classes.stats()
    }

    /// Number of classes.
    pub fn count(&self) -> usize {
        self.classes.count()
    }

    /// Frames waiting.
    pub fn packets(&self) -> u32 {
        self.classes.packets()
    }

    /// Bytes waiting.
    pub fn bytes(&self) -> u64 {
        self.classes.bytes()
    }
}
