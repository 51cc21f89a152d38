//! ECN marking at a fixed threshold K on the instantaneous queue: the
//! switch behaviour DCTCP is built for (Alizadeh et al., "Data Center
//! TCP (DCTCP)", SIGCOMM 2010, §3.1: "an arriving packet is marked with
//! the CE codepoint if the queue occupancy is greater than K upon its
//! arrival"; RFC 8257 §3.1).
//!
//! An arriving frame finds `q` frames (or bytes) waiting, not counting
//! the one on the wire (as the drop-tail limit counts). Then:
//!
//! - the FIFO is full (`limit`): drop (`queue_full`), ECN-capable or not;
//! - `q ≥ K` and the frame says ECT(0) or ECT(1): queue it with CE set;
//! - otherwise queue it unchanged (a frame that is not ECN-capable is
//!   never dropped early).
//!
//! "≥ K" is the reading of RED with `min_th = max_th = K` and `w_q = 1`
//! that ns-3's DCTCP examples and Linux deployments (`tc red ... min K
//! max K+1 probability 1.0 ecn`) use; the paper's "greater than K" is the
//! same rule with K one lower. No random draw, no average: marking is a
//! function of the queue alone.

use super::config::{check_limit, QdiscError};
use super::droptail::{DropTail, Limit};
use super::{Dequeue, Discipline, Enqueue, Queued};
use elvis_kernel::rng::Rng;
use serde::Serialize;

/// Parameters of threshold marking.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ThresholdConfig {
    /// The marking threshold K (`ecn_k`): frames, or bytes.
    pub k: Limit,
    /// Hard capacity of the FIFO (`limit`).
    pub limit: Limit,
}

impl ThresholdConfig {
    pub(crate) fn validate(&self) -> Result<(), QdiscError> {
        check_limit(&self.limit)?;
        let (k, cap) = match (self.k, self.limit) {
            (Limit::Unbounded, _) => return Err(QdiscError::new(
                "ecn_k",
                "the threshold K is a number of packets or bytes, e.g. ecn_k='20' or ecn_k='30kB'",
            )),
            (Limit::Packets(0) | Limit::Bytes(0), _) => {
                return Err(QdiscError::new(
                    "ecn_k",
                    "K = 0 marks every ECN-capable frame; give at least 1 packet or byte",
                ))
            }
            (Limit::Packets(k), Limit::Packets(c)) => (u64::from(k), u64::from(c)),
            (Limit::Bytes(k), Limit::Bytes(c)) => (k, c),
            (_, Limit::Unbounded) => return Ok(()),
            _ => {
                return Err(QdiscError::new(
                    "ecn_k",
                    "ecn_k and limit must both be packets or both be bytes",
                ))
            }
        };
        if k >= cap {
            return Err(QdiscError::new(
                "ecn_k",
                format!("K ({k}) must be below the limit ({cap}), or nothing is ever marked"),
            ));
        }
        Ok(())
    }
}

/// A FIFO that marks CE above a threshold.
#[derive(Clone, Debug)]
pub struct Threshold {
    k: Limit,
    fifo: DropTail,
}

impl Threshold {
    pub fn new(c: &ThresholdConfig) -> Self {
        Threshold {
            k: c.k,
            fifo: DropTail::new(c.limit),
        }
    }

    /// Returns true when the queue is at or above K.
    fn above(&self) -> bool {
        self.at_or_above(self.fifo.packets(), self.fifo.bytes())
    }

    /// Returns true when `packets` frames of `bytes` bytes waiting are at
    /// or above K: the rule for a queue run as a departure-time FIFO,
    /// which counts what waits itself (see "Departure-time FIFO").
    #[inline]
    pub fn at_or_above(&self, packets: u32, bytes: u64) -> bool {
        match self.k {
            Limit::Unbounded => false,
            Limit::Packets(k) => packets >= k,
            Limit::Bytes(k) => bytes >= k,
        }
    }

    /// Returns true when a frame of `incoming` bytes would overflow the
    /// FIFO with `packets` frames of `bytes` bytes waiting
    /// ([`DropTail::refuses`]).
    #[inline]
    pub fn refuses(&self, packets: u32, bytes: u64, incoming: u32) -> bool {
        self.fifo.refuses(packets, bytes, incoming)
    }
}

impl Discipline for Threshold {
    fn enqueue(&mut self, q: Queued, now_ns: u64, rng: &mut Rng) -> Enqueue {
        let mark = q.ecn_capable && self.above();
        match self.fifo.enqueue(q, now_ns, rng) {
            Enqueue::Queued if mark => Enqueue::QueuedMarked,
            other => other,
        }
    }

    fn dequeue(&mut self, now_ns: u64) -> Dequeue {
        self.fifo.dequeue(now_ns)
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
    use super::super::testing::{frame, rng};
    use super::*;
    use crate::DropReason;

    fn ect(id: u32, bytes: u32) -> Queued {
        Queued {
            ecn_capable: true,
            ..frame(id, bytes, 0, 0)
        }
    }

    /// With K = 3 frames: the 4th arrival (3 waiting) and later ECT
    /// arrivals are marked, non-ECT ones queue unmarked, and only the
    /// limit drops.
    #[test]
    fn ect_frames_arriving_at_k_or_more_are_marked_and_only_overflow_drops() {
        let mut d = Threshold::new(&ThresholdConfig {
            k: Limit::Packets(3),
            limit: Limit::Packets(6),
        });
        let mut r = rng();
        let got: Vec<Enqueue> = (0..8)
            .map(|i| {
                let f = if i == 4 {
                    frame(i, 1500, 0, 0)
                } else {
                    ect(i, 1500)
                };
                d.enqueue(f, 0, &mut r)
            })
            .collect();
        use Enqueue::*;
        let full = Dropped(DropReason::QueueFull);
        assert_eq!(
            got,
            [
                Queued,
                Queued,
                Queued,
                QueuedMarked,
                Queued,
                QueuedMarked,
                full,
                full
            ]
        );
        // Serving one frame brings the queue to 5: still at or above K.
        assert!(matches!(d.dequeue(0), Dequeue::Frame(_)));
        assert_eq!(d.enqueue(ect(9, 1500), 0, &mut r), QueuedMarked);
        for _ in 0..4 {
            d.dequeue(0);
        }
        // Two waiting: below K again.
        assert_eq!(d.packets(), 2);
        assert_eq!(d.enqueue(ect(10, 1500), 0, &mut r), Queued);
    }

    #[test]
    fn a_byte_threshold_counts_bytes_waiting() {
        let mut d = Threshold::new(&ThresholdConfig {
            k: Limit::Bytes(3000),
            limit: Limit::Unbounded,
        });
        let mut r = rng();
        assert_eq!(d.enqueue(ect(0, 1500), 0, &mut r), Enqueue::Queued);
        assert_eq!(d.enqueue(ect(1, 1499), 0, &mut r), Enqueue::Queued);
        assert_eq!(d.enqueue(ect(2, 100), 0, &mut r), Enqueue::Queued);
        assert_eq!(d.enqueue(ect(3, 100), 0, &mut r), Enqueue::QueuedMarked);
    }

    #[test]
    fn k_must_be_below_the_limit_and_in_the_same_unit() {
        let c = |k, limit| ThresholdConfig { k, limit }.validate();
        assert!(c(Limit::Packets(20), Limit::Packets(100)).is_ok());
        assert!(c(Limit::Bytes(30_000), Limit::Unbounded).is_ok());
        for (k, l) in [
            (Limit::Packets(100), Limit::Packets(100)),
            (Limit::Packets(0), Limit::Packets(100)),
            (Limit::Packets(5), Limit::Bytes(100_000)),
            (Limit::Unbounded, Limit::Packets(100)),
        ] {
            assert_eq!(c(k, l).unwrap_err().param, "ecn_k", "{k:?} {l:?}");
        }
    }
}
