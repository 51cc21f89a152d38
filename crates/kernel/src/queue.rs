//! The event queue: a binary heap for the future, a FIFO for the present.
//!
//! Invariants:
//! - `pop` returns events in non-decreasing time.
//! - Among events due at the same instant, those scheduled at an earlier
//!   instant come first, ordered by `(lane, seq)`; then those scheduled
//!   during the instant itself, in FIFO order.
//!
//! The FIFO makes zero-delay hops (ideal networks, task wake-ups) cost a
//! `VecDeque` push instead of a heap insertion.

use crate::Time;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

/// The entity that scheduled an event (a machine or network index, say).
pub type Lane = u32;

struct Entry<E> {
    time: u64,
    key: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest.
    /// One 128-bit comparison of `time ‖ key` (the same order as the pair).
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        let order = |e: &Self| u128::from(e.time) << 64 | u128::from(e.key);
        order(other).cmp(&order(self))
    }
}

/// A deterministic priority queue of events of type `E`.
pub struct EventQueue<E> {
    now: Time,
    heap: BinaryHeap<Entry<E>>,
    present: VecDeque<E>,
    lane_seq: Vec<u32>,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// Returns an empty queue at time zero.
    pub fn new() -> Self {
        EventQueue {
            now: Time::ZERO,
            heap: BinaryHeap::new(),
            present: VecDeque::new(),
            lane_seq: Vec::new(),
            popped: 0,
        }
    }

    /// Returns the current virtual time (the time of the last popped event).
    pub fn now(&self) -> Time {
        self.now
    }

    /// Returns how many events have been popped so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }

    /// Returns how many events are pending.
    pub fn len(&self) -> usize {
        self.heap.len() + self.present.len()
    }

    /// Returns true when no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.present.is_empty()
    }

    /// Schedules `event` at `time` on behalf of `lane`. A time in the past
    /// or present is treated as "now" (FIFO).
    pub fn schedule(&mut self, time: Time, lane: Lane, event: E) {
        if time <= self.now {
            self.present.push_back(event);
            return;
        }
        let idx = lane as usize;
        if idx >= self.lane_seq.len() {
            self.lane_seq.resize(idx + 1, 0);
        }
        let seq = self.lane_seq[idx];
        self.lane_seq[idx] = seq.wrapping_add(1);
        let key = (u64::from(lane) << 32) | u64::from(seq);
        self.heap.push(Entry {
            time: time.0,
            key,
            event,
        });
    }

    /// Schedules `event` at the current instant, after everything already
    /// due now.
    pub fn schedule_now(&mut self, event: E) {
        self.present.push_back(event);
    }

    /// Moves the clock forward to `t` when nothing is due before it (used
    /// when a run stops at a time limit). Does nothing if `t` is in the past
    /// or an event is due earlier.
    pub fn advance_to(&mut self, t: Time) {
        if t > self.now && self.present.is_empty() && self.heap.peek().is_none_or(|e| e.time >= t.0)
        {
            self.now = t;
        }
    }

    /// Returns the time of the next event without removing it.
    pub fn peek_time(&self) -> Option<Time> {
        if let Some(top) = self.heap.peek() {
            if top.time == self.now.0 || self.present.is_empty() {
                return Some(Time(top.time));
            }
        }
        if self.present.is_empty() {
            None
        } else {
            Some(self.now)
        }
    }

    /// Removes and returns the next event with its time, advancing `now`.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        // Heap entries due now were scheduled before this instant began, so
        // they precede everything in `present`.
        if let Some(top) = self.heap.peek() {
            if top.time == self.now.0 || self.present.is_empty() {
                let entry = self.heap.pop()?;
                self.now = Time(entry.time);
                self.popped += 1;
                return Some((self.now, entry.event));
            }
        }
        let event = self.present.pop_front()?;
        self.popped += 1;
        Some((self.now, event))
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn events_at_the_same_instant_from_one_lane_run_in_fifo_order() {
        let mut q = EventQueue::new();
        for i in 0..10 {
            q.schedule(Time(7), 3, i);
        }
        let got: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(got, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn order_among_lanes_does_not_depend_on_scheduling_order() {
        let mut a = EventQueue::new();
        a.schedule(Time(5), 2, "b");
        a.schedule(Time(5), 1, "a");
        let mut b = EventQueue::new();
        b.schedule(Time(5), 1, "a");
        b.schedule(Time(5), 2, "b");
        assert_eq!(a.pop(), b.pop());
        assert_eq!(a.pop(), b.pop());
    }

    #[test]
    fn present_events_run_after_heap_events_due_now() {
        let mut q = EventQueue::new();
        q.schedule(Time(5), 0, 1);
        q.schedule(Time(5), 0, 2);
        assert_eq!(q.pop(), Some((Time(5), 1)));
        q.schedule_now(3);
        assert_eq!(q.pop(), Some((Time(5), 2)));
        assert_eq!(q.pop(), Some((Time(5), 3)));
        assert!(q.is_empty());
    }

    proptest! {
        #[test]
        fn pop_returns_events_in_nondecreasing_time(
            times in proptest::collection::vec((0u64..50, 0u32..4), 0..200)
        ) {
            let mut q = EventQueue::new();
            for (i, &(t, lane)) in times.iter().enumerate() {
                q.schedule(Time(t), lane, i);
            }
            let mut last = Time::ZERO;
            let mut n = 0;
            while let Some((t, _)) = q.pop() {
                prop_assert!(t >= last);
                last = t;
                n += 1;
            }
            prop_assert_eq!(n, times.len());
        }
    }
}
