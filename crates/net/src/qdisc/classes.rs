//! Per-class FIFOs shared by the class-based schedulers (strict priority,
//! DRR, WRR, WFQ, virtual clock).
//!
//! [`Classes`] owns one FIFO per class, maps an arriving frame to its
//! class exactly as [`ClassParams::class_of`] defines it (through a
//! precomputed DSCP→class table, so no search per packet), enforces each
//! class's [`Limit`], keeps the per-class [`ClassStats`], and tracks the
//! set of non-empty classes in a bitset so that a scheduler can find the
//! next backlogged class without visiting idle ones. The schedulers differ
//! only in *which* non-empty class they take the head frame from.
//!
//! Queues grow amortized and never shrink, so after warm-up no packet
//! allocates.

use super::{ClassParams, ClassStats, Classify, Limit, Queued};
use std::collections::VecDeque;

/// DSCPs are 6 bits (RFC 2474 §3).
const DSCPS: usize = 64;

/// How frames map to classes, precomputed.
#[derive(Clone, Debug)]
enum Map {
    /// `table[dscp]` is the class.
    Dscp(Box<[u32; DSCPS]>),
    /// 5-tuple hash modulo the number of classes.
    Flow,
}

/// One FIFO per class, with counters and a non-empty bitset.
#[derive(Clone, Debug)]
pub struct Classes {
    map: Map,
    limit: Limit,
    queues: Vec<VecDeque<Queued>>,
    /// Bytes waiting, per class.
    queued_bytes: Vec<u64>,
    stats: Vec<ClassStats>,
    /// Bit `c` is set iff class `c`'s FIFO is non-empty.
    nonempty: Vec<u64>,
    packets: u32,
    bytes: u64,
}

impl Classes {
    /// Validates `p` and builds empty FIFOs. `name` prefixes error
    /// messages ("drr: ...").
    ///
    /// # Errors
    /// No classes, a DSCP list longer than the class list, a value that
    /// is not a 6-bit DSCP, a DSCP listed twice, or a zero limit.
    pub fn new(p: &ClassParams, name: &str) -> Result<Classes, String> {
        let n = p.weights.len();
        if n == 0 {
            return Err(format!("{name}: no classes (weights is empty)"));
        }
        if u32::try_from(n).is_err() {
            return Err(format!("{name}: {n} classes is too many"));
        }
        match p.limit {
            Limit::Packets(0) | Limit::Bytes(0) => {
                return Err(format!("{name}: limit is 0 (every frame would drop)"));
            }
            _ => {}
        }
        let map = match &p.classify {
            Classify::Dscp(list) => Map::Dscp(Box::new(dscp_table(list, n, name)?)),
            Classify::Flow => Map::Flow,
        };
        Ok(Classes {
            map,
            limit: p.limit,
            queues: (0..n).map(|_| VecDeque::new()).collect(),
            queued_bytes: vec![0; n],
            stats: vec![ClassStats::default(); n],
            nonempty: vec![0; n.div_ceil(64)],
            packets: 0,
            bytes: 0,
        })
    }

    /// Number of classes.
    pub fn count(&self) -> usize {
        self.queues.len()
    }

    /// Returns the class of a frame (the same as [`ClassParams::class_of`]).
    pub fn class_of(&self, q: &Queued) -> usize {
        match &self.map {
            Map::Dscp(table) => match table.get(usize::from(q.class)) {
                Some(&c) => c as usize,
                None => self.count() - 1,
            },
            Map::Flow => q.flow as usize % self.count(),
        }
    }

    /// Appends `q` to class `c`'s FIFO, or counts a drop and returns
    /// false if that FIFO is full.
    pub fn push(&mut self, c: usize, q: Queued) -> bool {
        self.push_limited(c, q, true)
    }

    /// [`Classes::push`], ignoring the limit unless `limited` (a lossless
    /// class under PFC, whose admission `crate::pfc` decides).
    pub fn push_limited(&mut self, c: usize, q: Queued, limited: bool) -> bool {
        let full = limited
            && match self.limit {
                Limit::Unbounded => false,
                Limit::Packets(n) => self.queues[c].len() >= n as usize,
                Limit::Bytes(b) => self.queued_bytes[c] + u64::from(q.bytes) > b,
            };
        if full {
            self.stats[c].dropped += 1;
            return false;
        }
        self.stats[c].enqueued += 1;
        self.queued_bytes[c] += u64::from(q.bytes);
        self.packets += 1;
        self.bytes += u64::from(q.bytes);
        self.queues[c].push_back(q);
        self.nonempty[c / 64] |= 1 << (c % 64);
        true
    }

    /// Removes and returns class `c`'s head frame.
    pub fn pop(&mut self, c: usize) -> Option<Queued> {
        let q = self.queues[c].pop_front()?;
        let s = &mut self.stats[c];
        s.dequeued += 1;
        s.bytes += u64::from(q.bytes);
        self.queued_bytes[c] -= u64::from(q.bytes);
        self.packets -= 1;
        self.bytes -= u64::from(q.bytes);
        if self.queues[c].is_empty() {
            self.nonempty[c / 64] &= !(1 << (c % 64));
        }
        Some(q)
    }

    /// Class `c`'s head frame.
    pub fn front(&self, c: usize) -> Option<&Queued> {
        self.queues[c].front()
    }

    /// Whether class `c`'s FIFO is empty.
    pub fn is_empty(&self, c: usize) -> bool {
        self.queues[c].is_empty()
    }

    /// Frames waiting in class `c`.
    pub fn class_packets(&self, c: usize) -> usize {
        self.queues[c].len()
    }

    /// The first non-empty class at or after `start`, wrapping around;
    /// `None` if all are empty. Visits 64 classes per word.
    pub fn next_nonempty(&self, start: usize) -> Option<usize> {
        if self.packets == 0 {
            return None;
        }
        let n = self.count();
        let start = start % n;
        let words = self.nonempty.len();
        let (w0, b0) = (start / 64, start % 64);
        // The starting word, from bit b0 up.
        let first = self.nonempty[w0] & (!0u64 << b0);
        if first != 0 {
            return Some(w0 * 64 + first.trailing_zeros() as usize);
        }
        // The following words, wrapping; the last step revisits w0's
        // low bits.
        for k in 1..=words {
            let w = (w0 + k) % words;
            let mut bits = self.nonempty[w];
            if k == words {
                bits &= (1u64 << b0).wrapping_sub(1);
            }
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
        }
        None
    }

    /// The first non-empty class whose bit in `skip` is clear (classes
    /// from 64 on are never skipped), lowest first.
    pub fn first_nonempty_except(&self, skip: u64) -> Option<usize> {
        let w0 = self.nonempty.first().copied().unwrap_or(0) & !skip;
        if w0 != 0 {
            return Some(w0.trailing_zeros() as usize);
        }
        (1..self.nonempty.len())
            .find(|&w| self.nonempty[w] != 0)
            .map(|w| w * 64 + self.nonempty[w].trailing_zeros() as usize)
    }

    /// Per-class counters, indexed by class.
    pub fn stats(&self) -> &[ClassStats] {
        &self.stats
    }

    /// Frames waiting in all classes.
    pub fn packets(&self) -> u32 {
        self.packets
    }

    /// Bytes waiting in all classes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// Builds the DSCP→class table of [`Classify::Dscp`]: `list[i]` goes to
/// class `i`, every other DSCP to the last class.
fn dscp_table(list: &[u8], n: usize, name: &str) -> Result<[u32; DSCPS], String> {
    if list.len() > n {
        return Err(format!(
            "{name}: dscp lists {} classes but weights has {n}",
            list.len()
        ));
    }
    let last = (n - 1) as u32;
    let mut table = [last; DSCPS];
    let mut seen = [None::<usize>; DSCPS];
    for (i, &d) in list.iter().enumerate() {
        let Some(slot) = seen.get_mut(usize::from(d)) else {
            return Err(format!(
                "{name}: dscp {d} of class {i} is not a 6-bit DSCP (0..=63)"
            ));
        };
        if let Some(j) = *slot {
            return Err(format!(
                "{name}: dscp {d} is listed for classes {j} and {i}"
            ));
        }
        *slot = Some(i);
        table[usize::from(d)] = i as u32;
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testing::frame;

    fn params(classify: Classify, n: usize, limit: Limit) -> ClassParams {
        ClassParams {
            classify,
            weights: vec![1; n],
            limit,
        }
    }

    #[test]
    fn the_dscp_table_agrees_with_class_of_for_every_dscp() {
        for list in [vec![46, 0], vec![46], vec![10, 46, 18], vec![]] {
            for n in list.len().max(1)..list.len() + 3 {
                let p = params(Classify::Dscp(list.clone()), n, Limit::Unbounded);
                let c = Classes::new(&p, "t").unwrap();
                for dscp in 0..=255u8 {
                    let q = frame(0, 100, dscp, 7);
                    assert_eq!(c.class_of(&q), p.class_of(&q), "{list:?} n={n} dscp={dscp}");
                }
            }
        }
    }

    #[test]
    fn class_of_puts_listed_dscps_in_their_class_and_the_rest_last() {
        let p = params(Classify::Dscp(vec![46, 0]), 3, Limit::Unbounded);
        assert_eq!(p.class_of(&frame(0, 1, 46, 0)), 0);
        assert_eq!(p.class_of(&frame(0, 1, 0, 0)), 1);
        assert_eq!(p.class_of(&frame(0, 1, 10, 0)), 2);
        let p = params(Classify::Flow, 4, Limit::Unbounded);
        assert_eq!(p.class_of(&frame(0, 1, 0, 13)), 1);
        let c = Classes::new(&p, "t").unwrap();
        for flow in [0, 1, 13, u32::MAX] {
            let q = frame(0, 1, 0, flow);
            assert_eq!(c.class_of(&q), p.class_of(&q));
        }
    }

    #[test]
    fn bad_class_parameters_are_refused_with_the_parameter_named() {
        let err = |p: ClassParams| Classes::new(&p, "drr").unwrap_err();
        assert!(err(params(Classify::Flow, 0, Limit::Unbounded)).contains("no classes"));
        assert!(
            err(params(Classify::Dscp(vec![1, 2, 3]), 2, Limit::Unbounded))
                .contains("dscp lists 3 classes but weights has 2")
        );
        assert!(err(params(Classify::Dscp(vec![64]), 2, Limit::Unbounded))
            .contains("dscp 64 of class 0"));
        assert!(err(params(Classify::Dscp(vec![5, 5]), 2, Limit::Unbounded))
            .contains("dscp 5 is listed for classes 0 and 1"));
        assert!(err(params(Classify::Flow, 2, Limit::Packets(0))).starts_with("drr: limit is 0"));
    }

    #[test]
    fn each_class_has_its_own_limit_and_counts_its_drops() {
        let p = params(Classify::Flow, 2, Limit::Packets(1));
        let mut c = Classes::new(&p, "t").unwrap();
        assert!(c.push(0, frame(1, 10, 0, 0)));
        assert!(!c.push(0, frame(2, 10, 0, 0)));
        assert!(c.push(1, frame(3, 10, 0, 1)));
        assert_eq!(c.stats()[0].dropped, 1);
        assert_eq!(c.stats()[1].dropped, 0);
        assert_eq!((c.packets(), c.bytes()), (2, 20));
    }

    #[test]
    fn next_nonempty_wraps_around_and_skips_empty_classes() {
        let p = params(Classify::Flow, 130, Limit::Unbounded);
        let mut c = Classes::new(&p, "t").unwrap();
        assert_eq!(c.next_nonempty(0), None);
        c.push(5, frame(1, 10, 0, 0));
        c.push(129, frame(2, 10, 0, 0));
        assert_eq!(c.next_nonempty(0), Some(5));
        assert_eq!(c.next_nonempty(5), Some(5));
        assert_eq!(c.next_nonempty(6), Some(129));
        assert_eq!(c.next_nonempty(130), Some(5));
        c.pop(5);
        assert_eq!(c.next_nonempty(6), Some(129));
        assert_eq!(c.next_nonempty(0), Some(129));
        c.pop(129);
        assert_eq!(c.next_nonempty(0), None);
        // Within one word, below the start bit.
        c.push(3, frame(3, 10, 0, 0));
        assert_eq!(c.next_nonempty(4), Some(3));
        assert_eq!(c.next_nonempty(64), Some(3));
    }
}
