//! Token-bucket shaper (the token bucket of Tanenbaum, *Computer
//! Networks*, §5.4; Linux `tc-tbf` without the peak-rate bucket).
//!
//! Tokens accrue at `rate` bits per second into a bucket of `burst` bytes,
//! full at the start. A frame of `L` bytes leaves, in FIFO order, only
//! when the bucket holds `L` bytes of tokens, and takes them. So a long
//! burst of frames leaves as fast as the wire allows while the bucket
//! lasts, then at exactly `rate`: frame `i` (0-based, all frames `L`
//! bytes, queued at time 0) starts no earlier than
//! `⌈((i + 1)·L − burst)·8·10⁹ / rate⌉` ns. When the head frame has to
//! wait, [`Dequeue::NotBefore`] says until when, and the wire asks again
//! then (the shaper is not work-conserving).
//!
//! Tokens are kept as an integer count of bit·ns/s (bits × 10⁹), so the
//! arithmetic is exact and every departure time is an integer number of
//! nanoseconds, rounded up. A frame larger than the bucket could never
//! leave: it is dropped on arrival (`exceeds_burst`), as Linux does.
//! Arrivals beyond `limit` are dropped as full (drop-tail).

use super::config::{check_limit, QdiscError};
use super::droptail::{DropTail, Limit};
use super::{Dequeue, Discipline, Enqueue, Queued};
use crate::DropReason;
use elvis_kernel::rng::Rng;
use serde::Serialize;

/// Parameters of the token bucket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TokenBucketConfig {
    /// Token rate, bit/s (`rate`).
    pub rate_bps: u64,
    /// Bucket size, bytes (`burst`).
    pub burst_bytes: u64,
    /// Capacity of the FIFO behind the bucket (`limit`).
    pub limit: Limit,
}

impl TokenBucketConfig {
    /// Default FIFO capacity: Linux's default `txqueuelen`.
    pub const DEFAULT_LIMIT: Limit = Limit::Packets(1000);

    pub(crate) fn validate(&self) -> Result<(), QdiscError> {
        if self.rate_bps == 0 {
            return Err(QdiscError::new(
                "rate",
                "a token bucket needs a positive rate, e.g. rate='1Mbps'",
            ));
        }
        if self.burst_bytes < 60 {
            return Err(QdiscError::new(
                "burst",
                format!(
                    "{} bytes holds no Ethernet frame; give at least one frame (e.g. burst='1514B')",
                    self.burst_bytes
                ),
            ));
        }
        check_limit(&self.limit)
    }
}

/// Tokens per byte: 8 bits × 10⁹ (see the module docs).
const SCALE: u128 = 8 * 1_000_000_000;

/// A token-bucket shaper.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    fifo: DropTail,
    rate: u128,
    /// Bucket capacity, bytes × SCALE.
    cap: u128,
    /// Tokens now, bytes × SCALE.
    tokens: u128,
    /// When `tokens` was last brought up to date, ns.
    last_ns: u64,
}

impl TokenBucket {
    /// Returns an empty shaper with a full bucket.
    pub fn new(cfg: &TokenBucketConfig) -> Self {
        let cap = u128::from(cfg.burst_bytes) * SCALE;
        TokenBucket {
            fifo: DropTail::new(cfg.limit),
            rate: u128::from(cfg.rate_bps.max(1)),
            cap,
            tokens: cap,
            last_ns: 0,
        }
    }

    fn refill(&mut self, now_ns: u64) {
        let dt = u128::from(now_ns.saturating_sub(self.last_ns));
        self.tokens = (self.tokens + dt * self.rate).min(self.cap);
        self.last_ns = self.last_ns.max(now_ns);
    }
}

impl Discipline for TokenBucket {
    fn enqueue(&mut self, q: Queued, now_ns: u64, rng: &mut Rng) -> Enqueue {
        if u128::from(q.bytes) * SCALE > self.cap {
            return Enqueue::Dropped(DropReason::ExceedsBurst);
        }
        self.fifo.enqueue(q, now_ns, rng)
    }

    fn dequeue(&mut self, now_ns: u64) -> Dequeue {
        let Some(head_bytes) = self.fifo.front().map(|h| h.bytes) else {
            return Dequeue::Empty;
        };
        self.refill(now_ns);
        let cost = u128::from(head_bytes) * SCALE;
        if cost > self.tokens {
            let wait = (cost - self.tokens).div_ceil(self.rate);
            let wait = u64::try_from(wait).unwrap_or(u64::MAX).max(1);
            return Dequeue::NotBefore(now_ns.saturating_add(wait));
        }
        self.tokens -= cost;
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
    use super::*;
    use crate::qdisc::testing::{frame, rng};

    /// Drains the shaper behind a wire of `ser_ns` per frame, asking again
    /// when told to wait; returns the departure times.
    fn drain(t: &mut TokenBucket, ser_ns: u64) -> Vec<u64> {
        let (mut now, mut out) = (0u64, Vec::new());
        loop {
            match t.dequeue(now) {
                Dequeue::Frame(_) => {
                    out.push(now);
                    now += ser_ns;
                }
                Dequeue::NotBefore(at) => {
                    assert!(at > now);
                    now = at;
                }
                Dequeue::Empty => return out,
            }
        }
    }

    #[test]
    fn a_long_burst_leaves_at_the_rate_after_the_bucket() {
        let (rate, burst, len) = (1_000_000u64, 10_000u64, 1000u32);
        let mut t = TokenBucket::new(&TokenBucketConfig {
            rate_bps: rate,
            burst_bytes: burst,
            limit: Limit::Unbounded,
        });
        let mut g = rng();
        let n = 100u64;
        for i in 0..n {
            assert_eq!(
                t.enqueue(frame(i as u32, len, 0, 0), 0, &mut g),
                Enqueue::Queued
            );
        }
        // A 1 Gbit/s wire: 8 µs per frame.
        let ser = 8_000;
        let got = drain(&mut t, ser);
        let want: Vec<u64> = (0..n)
            .map(|i| {
                let tokens = ((i + 1) * u64::from(len)).saturating_sub(burst);
                let at_rate = (u128::from(tokens) * 8 * 1_000_000_000).div_ceil(u128::from(rate));
                (at_rate as u64).max(i * ser)
            })
            .collect();
        assert_eq!(got, want);
        // The first burst/len frames go back to back; then one per 8 ms.
        assert_eq!(got[9], 9 * ser);
        assert_eq!(got[11] - got[10], 8_000_000);
        assert_eq!(got[99], 90 * 8_000_000);
    }

    #[test]
    fn an_idle_bucket_fills_up_to_the_burst_only() {
        let mut t = TokenBucket::new(&TokenBucketConfig {
            rate_bps: 8_000_000, // 1 byte per µs
            burst_bytes: 3000,
            limit: Limit::Unbounded,
        });
        let mut g = rng();
        for i in 0..3 {
            let _ = t.enqueue(frame(i, 1000, 0, 0), 0, &mut g);
        }
        assert_eq!(drain(&mut t, 0), vec![0, 0, 0]);
        // A long pause refills 3000 bytes, not more: 4 frames at 10 ms.
        for i in 0..4 {
            let _ = t.enqueue(frame(i, 1000, 0, 0), 10_000_000, &mut g);
        }
        let mut now = 10_000_000;
        let mut out = Vec::new();
        while let d @ (Dequeue::Frame(_) | Dequeue::NotBefore(_)) = t.dequeue(now) {
            match d {
                Dequeue::Frame(_) => out.push(now),
                Dequeue::NotBefore(at) => now = at,
                Dequeue::Empty => unreachable!(),
            }
        }
        assert_eq!(out, vec![10_000_000, 10_000_000, 10_000_000, 11_000_000]);
    }

    #[test]
    fn a_frame_larger_than_the_bucket_is_dropped() {
        let mut t = TokenBucket::new(&TokenBucketConfig {
            rate_bps: 1_000_000,
            burst_bytes: 1000,
            limit: Limit::Unbounded,
        });
        assert_eq!(
            t.enqueue(frame(1, 1001, 0, 0), 0, &mut rng()),
            Enqueue::Dropped(DropReason::ExceedsBurst)
        );
    }

    #[test]
    fn a_zero_rate_or_tiny_burst_is_rejected_by_name() {
        let c = |rate_bps, burst_bytes| TokenBucketConfig {
            rate_bps,
            burst_bytes,
            limit: Limit::Unbounded,
        };
        assert_eq!(c(0, 1500).validate().unwrap_err().param, "rate");
        assert_eq!(c(1000, 10).validate().unwrap_err().param, "burst");
        assert!(c(1000, 1500).validate().is_ok());
    }
}
