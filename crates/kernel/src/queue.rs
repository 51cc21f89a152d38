//! The event queue: a radix heap for the future, a FIFO for the present.
//!
//! Invariants:
//! - `pop` returns events in non-decreasing time.
//! - Among events due at the same instant, those scheduled at an earlier
//!   instant come first, ordered by `(lane, seq)`; then those scheduled
//!   during the instant itself, in FIFO order.
//!
//! The FIFO makes zero-delay hops (ideal networks, task wake-ups) cost a
//! `VecDeque` push instead of a heap insertion.
//!
//! # The radix heap
//! Virtual time never goes back, and every future event is later than the
//! present, so the future can be a *radix heap* (Ahuja, Mehlhorn, Orlin
//! and Tarjan, "Faster algorithms for the shortest path problem", J. ACM
//! 37(2), 1990; the monotone priority queue of Dijkstra-style searches)
//! instead of a binary heap. It keeps a base time `last` (the time of
//! the events being drained) and 64 buckets: an event at `t > last` goes
//! to bucket `63 − lzcnt(t ⊕ last)`, the position of the highest bit in
//! which `t` differs from `last`. Scheduling is an append. When the
//! events at `last` are done, the lowest non-empty bucket holds the next
//! earliest time: its minimum becomes the new `last` and its events are
//! spread over lower buckets (every one lands strictly lower, since they
//! share the bit that put them there), those at the new `last` in `due`.
//! An event is thus moved at most 64 times, and in practice a few (about
//! the number of powers of two between the instants it is scheduled from
//! and for), each move a sequential append; a binary heap sifts through
//! `log₂ n` scattered slots on every push and pop.
//!
//! `due` holds every pending event at time `last`, put in `(lane, seq)`
//! order once when it is filled (many events share an instant in a
//! synchronous network: one sort of a run of integers, not a heap
//! operation per event; see `order_due`).
//! When `due` is empty, `last` is the present, so an event due now can
//! only be in the FIFO. [`EventQueue::peek_time`] may fill `due` ahead of
//! the present; an event then scheduled before or at that instant (rare:
//! a run stopped at a time limit, then given more work) makes the queue
//! rebase the buckets on the present.
//!
//! # Short buckets become sorted runs
//! With few events pending, each at its own instant (a TCP transfer
//! between two machines keeps about 50: segments and ACKs on the wire,
//! NIC completions, timers), nearly every pop empties a bucket, and
//! spreading it moves its other events down one level at a time (2.6
//! moves per event in `elvis-bench tcp-bulk`). So the lowest bucket, when
//! it holds at most [`RUN_MAX`] events, is not spread: it becomes the
//! *run*, sorted by `(time, key)` once and then popped from its end. Its
//! events stay relative to the old `last`, which keeps every other
//! bucket valid; a new event within the run's bucket range (at most
//! `run_hi`) is inserted into the run in order (a binary search and a
//! shift of at most [`RUN_MAX`] entries), one beyond it goes to its
//! bucket as before. Every lower bucket is empty and every higher one
//! later, so the run holds the earliest events. A run that would grow
//! past [`RUN_MAX`] is spread as its bucket would have been: its earliest
//! time becomes `last`, its events there go to `due`, the others to
//! lower buckets (rebasing on the run's earliest time leaves the higher
//! buckets where they are, as a spread does). Longer buckets, such as
//! the many events at one instant of a synchronous network, take the
//! spread-and-`due` path unchanged. A spread is cheap when the bucket
//! already has the events of one instant (FatTree: about 50 per spread),
//! a run when it has few of several (`tcp-bulk`: about 6).
//!
//! The order is exactly the binary heap's it replaced, `(time, lane, seq)`
//! then FIFO: the tests check it against that heap on random interleavings
//! of every operation, with workloads that make runs, fill and overflow
//! them, and make large groups of ties.

use crate::Time;
use std::collections::VecDeque;

/// The entity that scheduled an event (a machine or network index, say).
pub type Lane = u32;

/// A future event: its time, its tie-break key `lane << 32 | seq`.
struct Entry<E> {
    time: u64,
    key: u64,
    event: E,
}

impl<E> Entry<E> {
    /// The pop order: time, then key.
    #[inline]
    fn rank(&self) -> (u64, u64) {
        (self.time, self.key)
    }
}

/// Buckets of the radix heap: bucket `i` holds the future events whose
/// time first differs from `last` at bit `i` (those at `last` are in
/// `due`).
const BUCKETS: usize = 64;

/// The largest bucket that becomes a sorted run instead of being spread,
/// and the longest a run grows (8 measured best of 4, 8 and 16 on
/// `tcp-bulk` and FatTree together).
const RUN_MAX: usize = 8;

/// A deterministic priority queue of events of type `E`.
pub struct EventQueue<E> {
    now: Time,
    /// Base time of the radix heap: no pending future event is earlier.
    last: u64,
    /// The future events at `last`, in scheduling order; those popped
    /// are `None`.
    due: Vec<Option<Entry<E>>>,
    /// Positions in `due`, in pop order (key order), each packed with
    /// its event's lane (see [`EventQueue::order_due`]).
    order: Vec<u64>,
    /// Entries of `order` already popped. The future holds no event at
    /// `last` when all are (then `last` is the present, or nothing is
    /// pending).
    next: usize,
    buckets: [Vec<Entry<E>>; BUCKETS],
    /// Bit `i` set when `buckets[i]` is not empty.
    occupied: u64,
    /// The earliest future events, when they came from a bucket of at
    /// most [`RUN_MAX`] events: sorted by `(time, key)`, latest first.
    /// Never pending together with `due`.
    run: Vec<Entry<E>>,
    /// The latest time in the range of the bucket the run came from:
    /// a new event up to it joins the run, even an emptied one (every
    /// lower bucket is empty, every higher one later). Zero when the
    /// earliest events are in `due` or the buckets.
    run_hi: u64,
    /// `max(run_hi, last)`: a new event at or before it joins the run or
    /// may need a rebase; one after it goes straight to its bucket.
    guard: u64,
    /// Future events pending (in `run`, or in `due`, and the buckets).
    future: usize,
    /// The most future events pending at a spread since storage was last
    /// trimmed (see `trim_after_burst`).
    high: usize,
    present: VecDeque<E>,
    lane_seq: Vec<u32>,
    /// Some lane's `seq` wrapped around (see [`EventQueue::order_due`]).
    wrapped: bool,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

/// Returns the bucket of an event at `time` in a radix heap based at
/// `last < time`: the highest bit in which they differ.
#[inline]
fn bucket_index(last: u64, time: u64) -> usize {
    debug_assert!(time > last);
    63 - (time ^ last).leading_zeros() as usize
}

/// Frees the storage of `v` if it is empty and larger than steady
/// traffic needs (see [`EventQueue::trim_after_burst`]).
fn trim<T>(v: &mut Vec<T>) {
    const KEEP: usize = 4096;
    if v.is_empty() && v.capacity() > KEEP {
        *v = Vec::new();
    }
}

impl<E> EventQueue<E> {
    /// Returns an empty queue at time zero.
    pub fn new() -> Self {
        EventQueue {
            now: Time::ZERO,
            last: 0,
            due: Vec::new(),
            order: Vec::new(),
            next: 0,
            buckets: std::array::from_fn(|_| Vec::new()),
            occupied: 0,
            run: Vec::new(),
            run_hi: 0,
            guard: 0,
            future: 0,
            high: 0,
            present: VecDeque::new(),
            lane_seq: Vec::new(),
            wrapped: false,
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
        self.future + self.present.len()
    }

    /// Returns true when no event is pending.
    pub fn is_empty(&self) -> bool {
        self.future == 0 && self.present.is_empty()
    }

    /// Schedules `event` at `time` on behalf of `lane`. A time in the past
    /// or present is treated as "now" (FIFO).
    #[inline]
    pub fn schedule(&mut self, time: Time, lane: Lane, event: E) {
        if time <= self.now {
            self.present.push_back(event);
            return;
        }
        let key = self.next_key(lane);
        self.insert(time.0, key, event);
    }

    /// Files a future event (`time > now`) with its key: into the run,
    /// or its bucket (rebasing first when `due` was filled ahead of it).
    #[inline(always)]
    fn insert(&mut self, time: u64, key: u64, event: E) {
        self.future += 1;
        let e = Entry { time, key, event };
        if time <= self.guard {
            if time <= self.run_hi {
                if self.run.len() < RUN_MAX {
                    let rank = e.rank();
                    let at = self.run.partition_point(|x| x.rank() > rank);
                    self.run.insert(at, e);
                    return;
                }
                self.run_to_due();
            }
            if time <= self.last && self.has_due() {
                // `due` was filled ahead of the present by `peek_time`.
                self.rebase();
            }
        }
        self.put(e);
    }

    /// Turns a full run into `due` and buckets, as if its bucket had been
    /// spread: `last` moves to the run's earliest time, which keeps every
    /// bucket above the run's where it is.
    #[cold]
    #[inline(never)]
    fn run_to_due(&mut self) {
        self.run_hi = 0;
        let Some(first) = self.run.last() else {
            return;
        };
        self.last = first.time;
        self.guard = self.last;
        self.due.clear();
        self.order.clear();
        self.next = 0;
        let mut run = std::mem::take(&mut self.run);
        // Earliest first: `due` in key order, each lane's events in `seq`
        // order in the buckets (see `order_due`).
        while let Some(e) = run.pop() {
            if e.time == self.last {
                self.order
                    .push((e.key & !0xffff_ffff) | self.due.len() as u64);
                self.due.push(Some(e));
            } else {
                self.put(e);
            }
        }
        self.run = run;
    }

    /// Files a future event (`time > last`) in its bucket.
    #[inline]
    fn put(&mut self, e: Entry<E>) {
        let b = bucket_index(self.last, e.time);
        self.occupied |= 1 << b;
        self.buckets[b].push(e);
    }

    /// Re-files every future event relative to the present (`due` was
    /// filled ahead of it and an earlier event arrived).
    #[cold]
    #[inline(never)]
    fn rebase(&mut self) {
        debug_assert!(self.run.is_empty());
        self.run_hi = 0;
        self.guard = self.now.0;
        // `due` first, in scheduling order (see `order_due`).
        let mut all: Vec<Entry<E>> = self.due.drain(..).flatten().collect();
        self.order.clear();
        self.next = 0;
        for b in &mut self.buckets {
            all.append(b);
        }
        self.occupied = 0;
        self.last = self.now.0;
        for e in all {
            self.put(e);
        }
    }

    /// Returns true when future events at `last` are still to be popped.
    #[inline]
    fn has_due(&self) -> bool {
        self.next < self.order.len()
    }

    /// Makes `run` or `due` hold the earliest future events, if any are
    /// pending; returns false when none is.
    #[inline]
    fn refill(&mut self) -> bool {
        if !self.run.is_empty() || self.has_due() {
            return true;
        }
        if self.occupied == 0 {
            return false;
        }
        self.spread();
        true
    }

    /// Empties the lowest non-empty bucket: a short one becomes the run;
    /// from a longer one, its earliest time becomes `last`, its events at
    /// that time go to `due` (sorted), the others to lower buckets.
    #[inline]
    fn spread(&mut self) {
        let i = self.occupied.trailing_zeros() as usize;
        self.occupied &= self.occupied - 1;
        self.due.clear();
        self.order.clear();
        self.next = 0;
        self.trim_after_burst();
        let bucket = &mut self.buckets[i];
        if bucket.len() <= RUN_MAX {
            // The emptied bucket keeps its storage.
            self.run.append(bucket);
            if self.run.len() > 1 {
                self.run
                    .sort_unstable_by_key(|e| std::cmp::Reverse(e.rank()));
            }
            // The bucket's range: `last`'s bits above `i`, any below.
            self.run_hi = self.last | (2u64 << i).wrapping_sub(1);
            self.guard = self.run_hi;
            return;
        }
        self.spread_many(i);
    }

    /// Spreads bucket `i`, which holds more than [`RUN_MAX`] events (see
    /// `spread`).
    #[inline(never)]
    fn spread_many(&mut self, i: usize) {
        self.run_hi = 0;
        // Every bucket below `i` is empty, and every event of bucket `i`
        // lands below it.
        let (lower, upper) = self.buckets.split_at_mut(i);
        let bucket = &mut upper[0];
        let min = bucket.iter().map(|e| e.time).min().unwrap_or(self.last);
        self.last = min;
        self.guard = min;
        let mut occupied = self.occupied;
        // The emptied bucket keeps its storage (see `trim_after_burst`).
        for e in bucket.drain(..) {
            if e.time == min {
                let lane = e.key & !0xffff_ffff;
                self.order.push(lane | self.due.len() as u64);
                self.due.push(Some(e));
            } else {
                let b = bucket_index(min, e.time);
                occupied |= 1 << b;
                lower[b].push(e);
            }
        }
        self.occupied = occupied;
        if self.due.len() > 1 {
            self.order_due();
        }
    }

    /// Frees the room of empty buckets and of `due`/`order` once the
    /// pending events fall below a quarter of their latest peak, so that
    /// a simulation that once had a million events in flight does not
    /// keep their room while it idles (about 100 bytes per connection in
    /// `elvis-bench tcp-idle`). Steady traffic never trims: the peak and
    /// the pending count stay close.
    #[inline]
    fn trim_after_burst(&mut self) {
        self.high = self.high.max(self.future);
        if self.high > 4096 && self.future * 4 < self.high {
            self.buckets.iter_mut().for_each(trim);
            trim(&mut self.due);
            trim(&mut self.order);
            self.high = self.future;
        }
    }

    /// Puts `order` in key order.
    ///
    /// `order` packs each event's lane with its position in `due`: within
    /// a lane, `due` is in scheduling order (buckets are appended to and
    /// spread in order), which is `seq` order, so sorting these integers
    /// sorts by key without moving the events. Once a lane's `seq` has
    /// wrapped around, a check confirms it and falls back to sorting by
    /// key when it fails. (Positions take 32 bits: an instant holds fewer
    /// than 2³² events, 160 GiB of them.)
    fn order_due(&mut self) {
        self.order.sort_unstable();
        if !self.wrapped {
            return;
        }
        let key = |due: &[Option<Entry<E>>], p: u64| due[p as u32 as usize].as_ref().map(|e| e.key);
        let due = &self.due;
        let in_order = self
            .order
            .windows(2)
            .all(|w| key(due, w[0]) < key(due, w[1]));
        if !in_order {
            self.order = (0..due.len() as u64).collect();
            self.order.sort_unstable_by_key(|&p| (key(due, p), p));
        }
    }

    /// Takes the next tie-break key of `lane` without scheduling anything:
    /// the key [`EventQueue::schedule`] would give an event of `lane`
    /// now. A partitioned run sends such a key along with an event that
    /// another partition's queue takes ([`EventQueue::schedule_keyed`]).
    #[inline]
    pub fn next_key(&mut self, lane: Lane) -> u64 {
        let idx = lane as usize;
        if idx >= self.lane_seq.len() {
            self.lane_seq.resize(idx + 1, 0);
        }
        let seq = self.lane_seq[idx];
        self.lane_seq[idx] = seq.wrapping_add(1);
        self.wrapped |= seq == u32::MAX;
        (u64::from(lane) << 32) | u64::from(seq)
    }

    /// Schedules `event` at `time` (later than now) with a key taken from
    /// another queue's [`EventQueue::next_key`]. Events of one lane must
    /// arrive in key order and the lane must be scheduled on here by
    /// keyed events only, as its own queue made them.
    pub fn schedule_keyed(&mut self, time: Time, key: u64, event: E) {
        debug_assert!(time > self.now, "a keyed event is in the future");
        self.wrapped |= key as u32 == u32::MAX;
        self.insert(time.0, key, event);
    }

    /// Keeps only the pending events for which `keep` is true, in the
    /// same order (a partition of a run drops the events of what it does
    /// not own).
    pub fn retain(&mut self, mut keep: impl FnMut(&E) -> bool) {
        self.present.retain(|e| keep(e));
        let mut all: Vec<Entry<E>> = self.due.drain(..).flatten().collect();
        all.append(&mut self.run);
        for b in &mut self.buckets {
            all.append(b);
        }
        all.retain(|e| keep(&e.event));
        all.sort_by_key(Entry::rank);
        self.order.clear();
        self.next = 0;
        self.occupied = 0;
        self.run_hi = 0;
        self.last = self.now.0;
        self.guard = self.last;
        self.future = all.len();
        for e in all {
            if e.time == self.last {
                let lane = e.key & !0xffff_ffff;
                self.order.push(lane | self.due.len() as u64);
                self.due.push(Some(e));
            } else {
                self.put(e);
            }
        }
        if self.due.len() > 1 {
            self.order_due();
        }
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
        if t <= self.now || !self.present.is_empty() {
            return;
        }
        if !self.refill() {
            // Nothing pending: the radix base moves with the clock.
            self.now = t;
            self.last = t.0;
            self.run_hi = 0;
            self.guard = t.0;
        } else if self.first_time() >= t.0 {
            // `run` or `due` stays filled (ahead of, or at, the new
            // present).
            self.now = t;
        }
    }

    /// Returns the time of the earliest future event (`refill` said
    /// there is one).
    #[inline]
    fn first_time(&self) -> u64 {
        self.run.last().map_or(self.last, |e| e.time)
    }

    /// Returns the time of the next event without removing it.
    pub fn peek_time(&mut self) -> Option<Time> {
        if !self.present.is_empty() {
            return Some(self.now);
        }
        self.refill().then(|| Time(self.first_time()))
    }

    /// Removes and returns the next event with its time, advancing `now`.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        // Future events due now were scheduled before this instant began,
        // so they precede everything in `present`; when `due` is empty
        // there are none (its base is the present).
        let heap_first = if self.present.is_empty() {
            self.refill()
        } else if let Some(e) = self.run.last() {
            e.time == self.now.0
        } else {
            self.has_due() && self.last == self.now.0
        };
        if heap_first {
            let entry = match self.run.pop() {
                Some(e) => e,
                None => {
                    let p = self.order[self.next];
                    self.next += 1;
                    self.due[p as u32 as usize].take()?
                }
            };
            self.future -= 1;
            self.now = Time(entry.time);
            self.popped += 1;
            return Some((self.now, entry.event));
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

    /// The binary-heap queue this one replaced, kept as the reference
    /// for its order.
    mod reference {
        use crate::Time;
        use std::cmp::Ordering;
        use std::collections::{BinaryHeap, VecDeque};

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
            fn cmp(&self, other: &Self) -> Ordering {
                (other.time, other.key).cmp(&(self.time, self.key))
            }
        }

        pub struct HeapQueue<E> {
            pub now: Time,
            heap: BinaryHeap<Entry<E>>,
            present: VecDeque<E>,
            lane_seq: Vec<u32>,
        }

        impl<E> HeapQueue<E> {
            pub fn new() -> Self {
                HeapQueue {
                    now: Time::ZERO,
                    heap: BinaryHeap::new(),
                    present: VecDeque::new(),
                    lane_seq: Vec::new(),
                }
            }
            pub fn len(&self) -> usize {
                self.heap.len() + self.present.len()
            }
            pub fn schedule(&mut self, time: Time, lane: u32, event: E) {
                if time <= self.now {
                    return self.present.push_back(event);
                }
                let idx = lane as usize;
                if idx >= self.lane_seq.len() {
                    self.lane_seq.resize(idx + 1, 0);
                }
                let seq = self.lane_seq[idx];
                self.lane_seq[idx] = seq + 1;
                let key = (u64::from(lane) << 32) | u64::from(seq);
                self.heap.push(Entry {
                    time: time.0,
                    key,
                    event,
                });
            }
            pub fn schedule_now(&mut self, event: E) {
                self.present.push_back(event);
            }
            pub fn advance_to(&mut self, t: Time) {
                if t > self.now
                    && self.present.is_empty()
                    && self.heap.peek().is_none_or(|e| e.time >= t.0)
                {
                    self.now = t;
                }
            }
            pub fn peek_time(&self) -> Option<Time> {
                if let Some(top) = self.heap.peek() {
                    if top.time == self.now.0 || self.present.is_empty() {
                        return Some(Time(top.time));
                    }
                }
                (!self.present.is_empty()).then_some(self.now)
            }
            pub fn pop(&mut self) -> Option<(Time, E)> {
                if let Some(top) = self.heap.peek() {
                    if top.time == self.now.0 || self.present.is_empty() {
                        let entry = self.heap.pop()?;
                        self.now = Time(entry.time);
                        return Some((self.now, entry.event));
                    }
                }
                let event = self.present.pop_front()?;
                Some((self.now, event))
            }
        }
    }

    #[test]
    fn a_burst_of_events_does_not_leave_the_queue_holding_its_room() {
        let mut q = EventQueue::new();
        for i in 0..100_000u64 {
            q.schedule(Time(1 + i % 3 * 7919), (i % 13) as u32, i);
        }
        while q.pop().is_some() {}
        q.schedule(Time(10_000_000), 0, 0);
        q.pop();
        let largest = q
            .buckets
            .iter()
            .map(Vec::capacity)
            .chain([q.due.capacity(), q.order.capacity(), q.run.capacity()])
            .max();
        assert!(largest <= Some(4096), "{largest:?} entries of room kept");
    }

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

    #[test]
    fn an_event_scheduled_before_a_peeked_instant_still_comes_first() {
        let mut q = EventQueue::new();
        q.schedule(Time(100), 0, "late");
        assert_eq!(q.peek_time(), Some(Time(100)));
        q.schedule(Time(40), 1, "early");
        q.schedule(Time(100), 2, "tie");
        assert_eq!(q.pop(), Some((Time(40), "early")));
        assert_eq!(q.pop(), Some((Time(100), "late")));
        assert_eq!(q.pop(), Some((Time(100), "tie")));
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn times_far_apart_come_out_in_order() {
        let mut q = EventQueue::new();
        let times = [u64::MAX, 1, 1 << 40, 3, (1 << 40) + 1, u64::MAX - 1];
        for (i, &t) in times.iter().enumerate() {
            q.schedule(Time(t), 0, i);
        }
        let mut sorted = times;
        sorted.sort_unstable();
        let got: Vec<u64> = std::iter::from_fn(|| q.pop()).map(|(t, _)| t.0).collect();
        assert_eq!(got, sorted);
    }

    /// One step of a random workload.
    #[derive(Clone, Debug)]
    enum Op {
        /// Schedule at `now + delta` (0: the present) on a lane.
        Schedule(u64, u32),
        ScheduleNow,
        Pop,
        Peek,
        Advance(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u64..40, 0u32..5).prop_map(|(d, l)| Op::Schedule(d, l)),
            1 => (0u64..1 << 36, 0u32..5).prop_map(|(d, l)| Op::Schedule(d, l)),
            1 => Just(Op::ScheduleNow),
            4 => Just(Op::Pop),
            1 => Just(Op::Peek),
            1 => (0u64..60).prop_map(Op::Advance),
        ]
    }

    /// Many events on few instants: large groups of ties.
    fn dense_op() -> impl Strategy<Value = Op> {
        prop_oneof![
            8 => (1u64..4, 0u32..7).prop_map(|(d, l)| Op::Schedule(d, l)),
            1 => Just(Op::ScheduleNow),
            3 => Just(Op::Pop),
            1 => Just(Op::Peek),
            1 => (0u64..3).prop_map(Op::Advance),
        ]
    }

    /// Few events at distinct instants (a TCP transfer): short buckets
    /// become runs, which new events join and overflow.
    fn sparse_op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (1u64..600, 0u32..3).prop_map(|(d, l)| Op::Schedule(d, l)),
            1 => (1u64..4, 0u32..3).prop_map(|(d, l)| Op::Schedule(d, l)),
            1 => Just(Op::ScheduleNow),
            5 => Just(Op::Pop),
            2 => Just(Op::Peek),
            1 => (0u64..300).prop_map(Op::Advance),
        ]
    }

    /// Runs `ops` on the radix heap and on the reference heap, then drains
    /// both, and checks that every answer is the same.
    fn same_as_reference(ops: Vec<Op>) -> Result<(), TestCaseError> {
        same_as_reference_in(&mut EventQueue::new(), ops, true)
    }

    /// [`same_as_reference`] on a fresh queue `q`, which is left as `ops`
    /// leave it unless `drain`.
    fn same_as_reference_in(
        q: &mut EventQueue<usize>,
        ops: Vec<Op>,
        drain: bool,
    ) -> Result<(), TestCaseError> {
        let mut r = reference::HeapQueue::new();
        for (i, op) in ops.into_iter().enumerate() {
            match op {
                Op::Schedule(d, lane) => {
                    let t = Time(q.now().0 + d);
                    q.schedule(t, lane, i);
                    r.schedule(t, lane, i);
                }
                Op::ScheduleNow => {
                    q.schedule_now(i);
                    r.schedule_now(i);
                }
                Op::Pop => prop_assert_eq!(q.pop(), r.pop()),
                Op::Peek => prop_assert_eq!(q.peek_time(), r.peek_time()),
                Op::Advance(d) => {
                    let t = Time(q.now().0 + d);
                    q.advance_to(t);
                    r.advance_to(t);
                }
            }
            prop_assert_eq!(q.now(), r.now);
            prop_assert_eq!(q.len(), r.len());
        }
        if !drain {
            return Ok(());
        }
        loop {
            let (a, b) = (q.pop(), r.pop());
            prop_assert_eq!(a, b);
            if a.is_none() {
                return Ok(());
            }
        }
    }

    #[test]
    fn a_full_run_overflows_into_due_and_buckets_in_order() {
        use Op::*;
        // Base 0: times 64..=127 share bucket 6. Peeking makes its events
        // a run; events in its range fill it, one more overflows it (ties
        // at its earliest instant go to `due`), and one before that
        // instant then makes the queue rebase.
        let mut ops: Vec<Op> = (0..RUN_MAX as u64 - 2)
            .map(|i| Schedule(64 + 7 * i, (i % 3) as u32))
            .collect();
        ops.extend([Peek, Schedule(100, 2), Schedule(64, 1)]);
        let mut q = EventQueue::new();
        same_as_reference_in(&mut q, ops.clone(), false).unwrap();
        assert_eq!(q.run.len(), RUN_MAX, "a full run");
        let more = vec![Schedule(127, 0), Peek];
        let mut q = EventQueue::new();
        same_as_reference_in(&mut q, [ops.clone(), more.clone()].concat(), false).unwrap();
        assert!(
            q.run.is_empty() && q.has_due(),
            "the run overflowed into `due`"
        );
        let last = vec![Schedule(50, 0), Schedule(90, 1), Schedule(128, 2), Peek];
        same_as_reference_in(&mut EventQueue::new(), [ops, more, last].concat(), true).unwrap();
    }

    #[test]
    fn a_short_bucket_becomes_a_run_that_new_events_join() {
        let mut q = EventQueue::new();
        for t in [300, 260, 280] {
            q.schedule(Time(t), 0, t);
        }
        assert_eq!(q.pop(), Some((Time(260), 260)));
        assert_eq!(q.run.len(), 2, "the bucket became a run");
        // 270 is in the run's range (256..=511), 600 is not.
        q.schedule(Time(270), 1, 270);
        q.schedule(Time(600), 1, 600);
        assert_eq!(q.run.len(), 3);
        let rest: Vec<u64> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(rest, [270, 280, 300, 600]);
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

        #[test]
        fn the_radix_heap_gives_the_binary_heaps_order(
            ops in proptest::collection::vec(op(), 0..400)
        ) {
            same_as_reference(ops)?;
        }

        #[test]
        fn runs_of_few_distinct_instants_give_the_binary_heaps_order(
            ops in proptest::collection::vec(sparse_op(), 0..600)
        ) {
            same_as_reference(ops)?;
        }

        #[test]
        fn large_groups_of_ties_come_out_in_the_binary_heaps_order(
            ops in proptest::collection::vec(dense_op(), 0..600)
        ) {
            same_as_reference(ops)?;
        }
    }

    proptest! {
        /// A partition's queue pops its events in the order one queue
        /// for everything would, whether the events of another
        /// partition's lanes come in with keys from that partition's
        /// queue (`next_key`, `schedule_keyed`) or are dropped (`retain`).
        #[test]
        fn keyed_and_retained_events_keep_the_order_of_one_queue(
            evs in proptest::collection::vec((1u64..50, 0u32..4), 1..200),
        ) {
            let mut whole = EventQueue::new();
            let mut mine = EventQueue::new();
            let mut theirs = EventQueue::<(u64, u32, usize)>::new();
            let mut filtered = EventQueue::new();
            for (i, &(t, lane)) in evs.iter().enumerate() {
                let e = (t, lane, i);
                whole.schedule(Time(t), lane, e);
                filtered.schedule(Time(t), lane, e);
                if lane < 2 {
                    mine.schedule(Time(t), lane, e);
                } else {
                    let key = theirs.next_key(lane);
                    mine.schedule_keyed(Time(t), key, e);
                }
            }
            filtered.retain(|&(_, lane, _)| lane % 2 == 0);
            let mut expect_kept = Vec::new();
            while let Some((t, e)) = whole.pop() {
                prop_assert_eq!(mine.pop(), Some((t, e)));
                if e.1 % 2 == 0 {
                    expect_kept.push((t, e));
                }
            }
            prop_assert_eq!(mine.pop(), None);
            let mut kept = Vec::new();
            while let Some(x) = filtered.pop() {
                kept.push(x);
            }
            prop_assert_eq!(kept, expect_kept);
        }
    }
}
