//! Drop-tail FIFO: frames leave in arrival order; an arriving frame that
//! would exceed the limit (in packets or in bytes) is dropped. The limit
//! counts the frames waiting, not the one being serialized (as Linux's
//! `pfifo`/`bfifo` and ns-3's `DropTailQueue` count what they hold).

use super::{Dequeue, Discipline, Enqueue, Queued};
use crate::DropReason;
use elvis_kernel::rng::Rng;
use std::collections::VecDeque;

/// The capacity of a drop-tail queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Limit {
    /// No limit.
    Unbounded,
    /// At most this many frames wait.
    Packets(u32),
    /// At most this many bytes (whole frames) wait.
    Bytes(u64),
}

/// A drop-tail FIFO.
#[derive(Clone, Debug)]
pub struct DropTail {
    limit: Limit,
    frames: VecDeque<Queued>,
    bytes: u64,
}

impl DropTail {
    pub fn new(limit: Limit) -> Self {
        DropTail {
            limit,
            frames: VecDeque::new(),
            bytes: 0,
        }
    }

    /// Returns true when a frame of `incoming` bytes would exceed the limit
    /// with `packets` frames of `bytes` bytes waiting.
    pub fn refuses(&self, packets: u32, bytes: u64, incoming: u32) -> bool {
        match self.limit {
            Limit::Unbounded => false,
            Limit::Packets(n) => packets >= n,
            Limit::Bytes(b) => bytes + u64::from(incoming) > b,
        }
    }

    /// Returns the frame that leaves next, if any.
    pub fn front(&self) -> Option<&Queued> {
        self.frames.front()
    }
}

impl Discipline for DropTail {
    fn enqueue(&mut self, q: Queued, _now_ns: u64, _rng: &mut Rng) -> Enqueue {
        if self.refuses(self.frames.len() as u32, self.bytes, q.bytes) {
            return Enqueue::Dropped(DropReason::QueueFull);
        }
        self.bytes += u64::from(q.bytes);
        self.frames.push_back(q);
        Enqueue::Queued
    }

    fn dequeue(&mut self, _now_ns: u64) -> Dequeue {
        match self.frames.pop_front() {
            Some(q) => {
                self.bytes -= u64::from(q.bytes);
                Dequeue::Frame(q)
            }
            None => Dequeue::Empty,
        }
    }

    fn packets(&self) -> u32 {
        self.frames.len() as u32
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testing::{frame, rng};

    #[test]
    fn a_packet_limit_drops_the_arrival_that_would_exceed_it() {
        let mut q = DropTail::new(Limit::Packets(2));
        let mut r = rng();
        assert_eq!(q.enqueue(frame(1, 100, 0, 0), 0, &mut r), Enqueue::Queued);
        assert_eq!(q.enqueue(frame(2, 100, 0, 0), 0, &mut r), Enqueue::Queued);
        assert_eq!(
            q.enqueue(frame(3, 100, 0, 0), 0, &mut r),
            Enqueue::Dropped(DropReason::QueueFull)
        );
        assert_eq!(q.dequeue(0), Dequeue::Frame(frame(1, 100, 0, 0)));
        assert_eq!(q.dequeue(0), Dequeue::Frame(frame(2, 100, 0, 0)));
        assert_eq!(q.dequeue(0), Dequeue::Empty);
    }

    #[test]
    fn a_byte_limit_counts_whole_frames() {
        let mut q = DropTail::new(Limit::Bytes(1500));
        let mut r = rng();
        assert_eq!(q.enqueue(frame(1, 1000, 0, 0), 0, &mut r), Enqueue::Queued);
        // 1000 + 600 > 1500: dropped, though 500 bytes are free.
        assert!(matches!(
            q.enqueue(frame(2, 600, 0, 0), 0, &mut r),
            Enqueue::Dropped(_)
        ));
        assert_eq!(q.enqueue(frame(3, 500, 0, 0), 0, &mut r), Enqueue::Queued);
        assert_eq!((q.packets(), q.bytes()), (2, 1500));
    }
}
