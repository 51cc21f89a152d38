//! ICMP error rate limiting, as Linux does it (RFC 1812 §4.3.2.8: a
//! router "SHOULD be able to limit the rate at which it generates ICMP
//! error messages").
//!
//! Two token buckets decide whether a machine sends an ICMP error whose
//! type is in Linux's default `icmp_ratemask` (Destination Unreachable,
//! Source Quench, Time Exceeded, Parameter Problem), in Linux's order
//! (`icmp_send` in `net/ipv4/icmp.c`):
//!
//! 1. the machine-wide bucket (`icmp_msgs_per_sec` = 1000 tokens per
//!    second, `icmp_msgs_burst` = 50 at most) must hold a token;
//! 2. the bucket of the error's destination (`icmp_ratelimit` = 1000 ms
//!    per error, at most `XRLIM_BURST_FACTOR` = 6 errors' worth; a new
//!    destination starts full) must allow it, and pays one interval;
//! 3. then the machine-wide bucket pays its token.
//!
//! Fragmentation Needed is never limited (Linux: "Don't limit PMTU
//! discovery"). Time is integer nanoseconds: tokens are kept in
//! nanoseconds (per destination) and in 10⁻⁹ tokens (machine-wide), so
//! the buckets refill continuously.
//!
//! # Gaps
//! Linux refills the machine-wide bucket only after 20 ms (`HZ / 50`)
//! and, since 2024, takes a random 0–2 tokens per error instead of 1 (to
//! hide the bucket from off-path attackers); we take exactly 1. Linux
//! forgets idle destinations (inet_peer garbage collection); we keep
//! them for the run.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::Duration;

/// Linux's `XRLIM_BURST_FACTOR`.
const BURST_FACTOR: u64 = 6;
/// Linux's default `icmp_ratemask` (6168): types 3, 4, 11 and 12.
const RATEMASK: u32 = (1 << 3) | (1 << 4) | (1 << 11) | (1 << 12);
const NANO: u64 = 1_000_000_000;

/// ICMP error rate limits (`net.ipv4.icmp_*` sysctls; Linux's defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcmpRateLimit {
    /// Least average spacing of errors to one destination
    /// (`icmp_ratelimit`, 1000 ms; zero: no limit per destination).
    pub per_destination: Duration,
    /// Errors per second from one machine (`icmp_msgs_per_sec`, 1000;
    /// 0: no machine-wide limit).
    pub per_second: u64,
    /// Largest burst from one machine (`icmp_msgs_burst`, 50).
    pub burst: u64,
}

impl Default for IcmpRateLimit {
    fn default() -> Self {
        IcmpRateLimit {
            per_destination: Duration::from_millis(1000),
            per_second: 1000,
            burst: 50,
        }
    }
}

impl IcmpRateLimit {
    /// No limit at all (every error is sent).
    pub const OFF: IcmpRateLimit = IcmpRateLimit {
        per_destination: Duration::ZERO,
        per_second: 0,
        burst: 0,
    };
}

/// A token bucket: `tokens` as of `last` (ns).
#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: u64,
    last: u64,
}

impl Bucket {
    fn refill(&mut self, now: u64, per_ns: u64, cap: u64) {
        let add = now.saturating_sub(self.last).saturating_mul(per_ns);
        self.tokens = self.tokens.saturating_add(add).min(cap);
        self.last = now;
    }
}

/// One machine's buckets.
#[derive(Debug, Default)]
pub struct Limiter {
    global: Option<Bucket>,
    peers: BTreeMap<u32, Bucket>,
}

impl Limiter {
    /// Decides whether an error of `ty`/`code` to `to` may leave at `now`
    /// (ns) under `cfg`, and pays for it if so.
    pub fn allow(&mut self, cfg: &IcmpRateLimit, now: u64, to: Ipv4Addr, ty: u8, code: u8) -> bool {
        let limited = u32::from(ty) < 32 && RATEMASK & (1 << ty) != 0;
        if !limited || (ty == super::icmp::DST_UNREACHABLE && code == super::icmp::FRAG_NEEDED) {
            return true;
        }
        let cap = cfg.burst.saturating_mul(NANO);
        let global = cfg.per_second > 0;
        if global {
            let g = self.global.get_or_insert(Bucket {
                tokens: cap,
                last: now,
            });
            g.refill(now, cfg.per_second, cap);
            if g.tokens < NANO {
                return false;
            }
        }
        let interval = cfg.per_destination.as_nanos() as u64;
        if interval > 0 {
            let full = BURST_FACTOR * interval;
            let p = self.peers.entry(u32::from(to)).or_insert(Bucket {
                tokens: full,
                last: now,
            });
            p.refill(now, 1, full);
            if p.tokens < interval {
                return false;
            }
            p.tokens -= interval;
        }
        if let Some(g) = self.global.as_mut().filter(|_| global) {
            g.tokens -= NANO;
        }
        true
    }
}

#[cfg(test)]
mod test {
    use super::*;

    const TE: u8 = 11;
    const MS: u64 = 1_000_000;

    fn ip(i: u32) -> Ipv4Addr {
        Ipv4Addr::from(0x0a00_0000 + i)
    }

    #[test]
    fn one_destination_gets_a_burst_of_six_then_one_per_second() {
        let cfg = IcmpRateLimit::default();
        let mut l = Limiter::default();
        let sent: Vec<bool> = (0..10).map(|_| l.allow(&cfg, 0, ip(1), TE, 0)).collect();
        assert_eq!(sent.iter().filter(|&&s| s).count(), 6);
        assert!(!l.allow(&cfg, 999 * MS, ip(1), TE, 0));
        assert!(l.allow(&cfg, 1000 * MS, ip(1), TE, 0));
        assert!(!l.allow(&cfg, 1000 * MS, ip(1), TE, 0));
        // Another destination has its own bucket.
        assert!(l.allow(&cfg, 1000 * MS, ip(2), TE, 0));
        // Idle for a minute: the bucket holds six again, not sixty.
        let later: usize = (0..10)
            .filter(|_| l.allow(&cfg, 61_000 * MS, ip(1), TE, 0))
            .count();
        assert_eq!(later, 6);
    }

    #[test]
    fn a_machine_sends_a_burst_of_fifty_then_a_thousand_per_second() {
        let cfg = IcmpRateLimit {
            per_destination: Duration::ZERO,
            ..IcmpRateLimit::default()
        };
        let mut l = Limiter::default();
        let burst = (0..100).filter(|&i| l.allow(&cfg, 0, ip(i), TE, 0)).count();
        assert_eq!(burst, 50);
        // 10 ms later: 10 tokens.
        let more = (0..100)
            .filter(|&i| l.allow(&cfg, 10 * MS, ip(i), TE, 0))
            .count();
        assert_eq!(more, 10);
    }

    #[test]
    fn a_global_refusal_does_not_spend_the_destinations_token() {
        let cfg = IcmpRateLimit {
            burst: 1,
            ..IcmpRateLimit::default()
        };
        let mut l = Limiter::default();
        assert!(l.allow(&cfg, 0, ip(1), TE, 0));
        for _ in 0..10 {
            assert!(!l.allow(&cfg, 0, ip(2), TE, 0), "no machine-wide token");
        }
        // ip(2)'s bucket is still full: 1 ms later the global bucket has
        // one token and ip(2) gets it.
        assert!(l.allow(&cfg, MS, ip(2), TE, 0));
    }

    #[test]
    fn frag_needed_echo_replies_and_redirects_are_never_limited() {
        let cfg = IcmpRateLimit {
            burst: 1,
            ..IcmpRateLimit::default()
        };
        let mut l = Limiter::default();
        for _ in 0..100 {
            assert!(l.allow(&cfg, 0, ip(1), 3, 4), "frag needed");
            assert!(l.allow(&cfg, 0, ip(1), 0, 0), "echo reply");
            assert!(l.allow(&cfg, 0, ip(1), 5, 0), "redirect");
        }
        assert!(l.allow(&cfg, 0, ip(1), 3, 0));
        assert!(!l.allow(&cfg, 0, ip(1), 3, 0), "net unreachable is limited");
    }

    #[test]
    fn off_sends_everything() {
        let mut l = Limiter::default();
        assert!((0..1000).all(|_| l.allow(&IcmpRateLimit::OFF, 0, ip(1), TE, 0)));
    }
}
