//! Three-colour markers in front of a FIFO: the single-rate srTCM
//! (RFC 2697) and the two-rate trTCM (RFC 2698), colour-blind or
//! colour-aware. Each arriving frame is metered green, yellow or red, its
//! IPv4 DSCP re-marked to that colour's code point (AF11, AF12, AF13 by
//! default: 10, 12, 14), and a red frame dropped instead when `drop_red`
//! is set (`meter_red`). What is kept goes through a drop-tail FIFO.
//!
//! The token buckets, as the RFCs define them (B = the frame's length in
//! bytes, Ethernet header included):
//!
//! - **srTCM** (RFC 2697 §3): buckets C (size CBS) and E (size EBS), both
//!   full at the start. Tokens arrive at CIR: "if Tc is less than CBS, Tc
//!   is incremented by one, else if Te is less than EBS, Te is incremented
//!   by one, else neither". Colour-blind: "If Tc(t)-B >= 0, the packet is
//!   green and Tc is decremented by B ... else if Te(t)-B >= 0, the
//!   packets is yellow and Te is decremented by B ... else the packet is
//!   red". Colour-aware: green needs a green pre-colour, yellow a green or
//!   yellow one (§4).
//! - **trTCM** (RFC 2698 §3): buckets P (size PBS, rate PIR) and C (CBS,
//!   CIR), full at the start, each filled at its own rate. Colour-blind:
//!   "If Tp(t)-B < 0, the packet is red, else if Tc(t)-B < 0, the packet
//!   is yellow and Tp is decremented by B, else the packet is green and
//!   both Tp and Tc are decremented by B". Colour-aware: a red pre-colour
//!   stays red, a yellow one is at best yellow.
//!
//! In colour-aware mode a frame's pre-colour is read from its DSCP: the
//! green, yellow or red code point configured; any other DSCP counts as
//! green (unmarked traffic has not been coloured down).
//!
//! Tokens are counted exactly in integers: one byte is 8·10⁹ units, and
//! `rate` bit/s over `dt` ns adds `rate·dt` units, so no rounding happens
//! however often frames arrive.

use super::config::{check_limit, QdiscError};
use super::droptail::{DropTail, Limit};
use super::{Dequeue, Discipline, Enqueue, Queued};
use crate::DropReason;
use elvis_kernel::rng::Rng;
use serde::Serialize;

/// Token units per byte: bits per byte times nanoseconds per second.
const UNITS_PER_BYTE: u128 = 8_000_000_000;

/// A frame's colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Colour {
    Green,
    Yellow,
    Red,
}

/// Which marker, with its rates (bit/s) and bucket sizes (bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum MeterKind {
    /// RFC 2697: CIR, CBS, EBS.
    Srtcm { cir_bps: u64, cbs: u64, ebs: u64 },
    /// RFC 2698: CIR, CBS, PIR, PBS.
    Trtcm {
        cir_bps: u64,
        cbs: u64,
        pir_bps: u64,
        pbs: u64,
    },
}

/// Parameters of a three-colour marker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MeterConfig {
    pub kind: MeterKind,
    /// Colour-aware (`color_aware`): the arriving DSCP is a pre-colour.
    pub color_aware: bool,
    /// The DSCP written for green, yellow and red (`remark`).
    pub dscp: [u8; 3],
    /// Drop red frames instead of re-marking them (`drop_red`).
    pub drop_red: bool,
    /// Capacity of the FIFO behind the marker (`limit`).
    pub limit: Limit,
}

impl MeterConfig {
    /// AF11, AF12, AF13 (RFC 2597): the default re-marking.
    pub const AF1X: [u8; 3] = [10, 12, 14];

    pub(crate) fn validate(&self) -> Result<(), QdiscError> {
        check_limit(&self.limit)?;
        if let Some(&d) = self.dscp.iter().find(|&&d| d > 63) {
            return Err(QdiscError::new(
                "remark",
                format!("DSCP {d} is outside 0 to 63"),
            ));
        }
        let (cir, cbs, second) = match self.kind {
            MeterKind::Srtcm { cir_bps, cbs, ebs } => (cir_bps, cbs, ("ebs", ebs)),
            MeterKind::Trtcm {
                cir_bps,
                cbs,
                pir_bps,
                pbs,
            } => {
                if pir_bps < cir_bps {
                    return Err(QdiscError::new(
                        "pir",
                        format!("PIR ({pir_bps} bit/s) must be at least CIR ({cir_bps} bit/s) (RFC 2698 §2)"),
                    ));
                }
                (cir_bps, cbs, ("pbs", pbs))
            }
        };
        if cir == 0 {
            return Err(QdiscError::new(
                "cir",
                "the committed rate must be positive",
            ));
        }
        // RFC 2697 §2 / RFC 2698 §2: "at least one of them is larger
        // than 0" (srTCM), "greater than 0" for both (trTCM); a bucket
        // smaller than a frame would never pass one.
        if cbs == 0 && second.1 == 0 {
            return Err(QdiscError::new(
                "cbs",
                "CBS and the second bucket cannot both be 0",
            ));
        }
        if matches!(self.kind, MeterKind::Trtcm { .. }) && (cbs == 0 || second.1 == 0) {
            let p = if cbs == 0 { "cbs" } else { "pbs" };
            return Err(QdiscError::new(p, "RFC 2698 buckets must be larger than 0"));
        }
        Ok(())
    }
}

/// One token bucket: `tokens` in units (1 byte = 8·10⁹), `size` likewise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Bucket {
    tokens: u128,
    size: u128,
}

impl Bucket {
    fn full(bytes: u64) -> Self {
        let size = u128::from(bytes) * UNITS_PER_BYTE;
        Bucket { tokens: size, size }
    }

    /// Adds `units`, returns what did not fit.
    fn fill(&mut self, units: u128) -> u128 {
        let room = self.size - self.tokens;
        let add = units.min(room);
        self.tokens += add;
        units - add
    }

    fn has(&self, bytes: u64) -> bool {
        self.tokens >= u128::from(bytes) * UNITS_PER_BYTE
    }

    fn take(&mut self, bytes: u64) {
        self.tokens -= u128::from(bytes) * UNITS_PER_BYTE;
    }
}

/// The meter's state: the two buckets and when they were last filled.
#[derive(Clone, Debug)]
pub struct Meter {
    cfg: MeterConfig,
    /// srTCM: C and E; trTCM: C and P.
    c: Bucket,
    second: Bucket,
    last_ns: u64,
    fifo: DropTail,
    /// Frames metered green, yellow, red.
    pub counts: [u64; 3],
}

impl Meter {
    pub fn new(cfg: &MeterConfig) -> Self {
        let (cbs, second) = match cfg.kind {
            MeterKind::Srtcm { cbs, ebs, .. } => (cbs, ebs),
            MeterKind::Trtcm { cbs, pbs, .. } => (cbs, pbs),
        };
        Meter {
            cfg: cfg.clone(),
            c: Bucket::full(cbs),
            second: Bucket::full(second),
            last_ns: 0,
            fifo: DropTail::new(cfg.limit),
            counts: [0; 3],
        }
    }

    /// Returns the pre-colour a colour-aware meter reads from `dscp`.
    fn pre_colour(&self, dscp: u8) -> Colour {
        if !self.cfg.color_aware {
            return Colour::Green;
        }
        match self.cfg.dscp.iter().position(|&d| d == dscp) {
            Some(1) => Colour::Yellow,
            Some(2) => Colour::Red,
            _ => Colour::Green,
        }
    }

    /// Meters a frame of `bytes` arriving at `now_ns` with DSCP `dscp`.
    pub fn colour(&mut self, bytes: u64, dscp: u8, now_ns: u64) -> Colour {
        let dt = u128::from(now_ns.saturating_sub(self.last_ns));
        self.last_ns = self.last_ns.max(now_ns);
        let pre = self.pre_colour(dscp);
        let colour = match self.cfg.kind {
            MeterKind::Srtcm { cir_bps, .. } => {
                let spill = self.c.fill(u128::from(cir_bps) * dt);
                self.second.fill(spill);
                if pre == Colour::Green && self.c.has(bytes) {
                    self.c.take(bytes);
                    Colour::Green
                } else if pre != Colour::Red && self.second.has(bytes) {
                    self.second.take(bytes);
                    Colour::Yellow
                } else {
                    Colour::Red
                }
            }
            MeterKind::Trtcm {
                cir_bps, pir_bps, ..
            } => {
                self.c.fill(u128::from(cir_bps) * dt);
                self.second.fill(u128::from(pir_bps) * dt);
                if pre == Colour::Red || !self.second.has(bytes) {
                    Colour::Red
                } else if pre == Colour::Yellow || !self.c.has(bytes) {
                    self.second.take(bytes);
                    Colour::Yellow
                } else {
                    self.second.take(bytes);
                    self.c.take(bytes);
                    Colour::Green
                }
            }
        };
        self.counts[colour as usize] += 1;
        colour
    }
}

impl Discipline for Meter {
    fn enqueue(&mut self, q: Queued, now_ns: u64, rng: &mut Rng) -> Enqueue {
        let colour = self.colour(u64::from(q.bytes), q.class, now_ns);
        if colour == Colour::Red && self.cfg.drop_red {
            return Enqueue::Dropped(DropReason::MeterRed);
        }
        let dscp = self.cfg.dscp[colour as usize];
        match self.fifo.enqueue(q, now_ns, rng) {
            Enqueue::Queued if dscp != q.class => Enqueue::QueuedRemarked(dscp),
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
    use super::*;
    use Colour::*;

    fn meter(kind: MeterKind, color_aware: bool) -> Meter {
        Meter::new(&MeterConfig {
            kind,
            color_aware,
            dscp: MeterConfig::AF1X,
            drop_red: false,
            limit: Limit::Unbounded,
        })
    }

    /// RFC 2697 §3 by hand: CIR 8 kbit/s = 1 byte per ms, CBS 3000, EBS
    /// 2000. Each row: (time ms, bytes, pre-colour DSCP, colour), with the
    /// buckets (Tc, Te) the RFC's arithmetic leaves after it.
    #[test]
    fn srtcm_colour_blind_follows_rfc_2697_token_arithmetic() {
        let kind = MeterKind::Srtcm {
            cir_bps: 8_000,
            cbs: 3000,
            ebs: 2000,
        };
        let mut m = meter(kind, false);
        let rows: &[(u64, u64, Colour, (u64, u64))] = &[
            (0, 1500, Green, (1500, 2000)),
            (0, 1500, Green, (0, 2000)),
            (0, 1500, Yellow, (0, 500)),
            (0, 1000, Red, (0, 500)),
        ];
        for &(t, b, want, (tc, te)) in rows {
            assert_eq!(m.colour(b, 0, t * 1_000_000), want, "t {t} B {b}");
            assert_eq!(m.c.tokens / UNITS_PER_BYTE, u128::from(tc), "Tc at {t}");
            assert_eq!(
                m.second.tokens / UNITS_PER_BYTE,
                u128::from(te),
                "Te at {t}"
            );
        }
        // 600 ms later: Tc = 600, Te = 500: a 1000-byte frame is red, a
        // 500-byte one green.
        assert_eq!(m.colour(1000, 0, 600_000_000), Red);
        assert_eq!(m.colour(500, 0, 600_000_000), Green);
        // 10 s later Tc is full (3000) and the overflow filled Te to 2000.
        assert_eq!(m.colour(1, 0, 10_600_000_000), Green);
        assert_eq!(m.second.tokens / UNITS_PER_BYTE, 2000);
        assert_eq!(m.c.tokens / UNITS_PER_BYTE, 2999);
    }

    /// Overflow from C feeds E only once C is full (RFC 2697 §3).
    #[test]
    fn srtcm_fills_e_only_with_what_overflows_c() {
        let kind = MeterKind::Srtcm {
            cir_bps: 8_000,
            cbs: 1000,
            ebs: 1000,
        };
        let mut m = meter(kind, false);
        assert_eq!(m.colour(1000, 0, 0), Green);
        assert_eq!(m.colour(1000, 0, 0), Yellow);
        // 1.5 s: 1500 bytes of tokens: C fills (1000), E gets 500.
        assert_eq!(m.colour(600, 0, 1_500_000_000), Green);
        assert_eq!(m.colour(600, 0, 1_500_000_000), Red);
        assert_eq!(m.colour(500, 0, 1_500_000_000), Yellow);
    }

    /// RFC 2697 §4 colour-aware: a yellow pre-colour can be yellow at
    /// best, red stays red, even with tokens to spare.
    #[test]
    fn srtcm_colour_aware_never_promotes_a_frame() {
        let kind = MeterKind::Srtcm {
            cir_bps: 8_000,
            cbs: 3000,
            ebs: 3000,
        };
        let mut m = meter(kind, true);
        assert_eq!(m.colour(100, 14, 0), Red, "AF13 stays red");
        assert_eq!(m.colour(100, 12, 0), Yellow, "AF12 is yellow at best");
        assert_eq!(m.colour(100, 10, 0), Green);
        assert_eq!(m.colour(100, 0, 0), Green, "unmarked counts as green");
        assert_eq!(m.c.tokens / UNITS_PER_BYTE, 2800);
        assert_eq!(m.second.tokens / UNITS_PER_BYTE, 2900);
    }

    /// RFC 2698 §3: CIR 8 kbit/s (1 byte/ms), CBS 1000; PIR 16 kbit/s
    /// (2 bytes/ms), PBS 2000. Rows: (time ms, bytes, colour, (Tc, Tp)).
    #[test]
    fn trtcm_colour_blind_follows_rfc_2698_token_arithmetic() {
        let kind = MeterKind::Trtcm {
            cir_bps: 8_000,
            cbs: 1000,
            pir_bps: 16_000,
            pbs: 2000,
        };
        let mut m = meter(kind, false);
        let rows: &[(u64, u64, Colour, (u64, u64))] = &[
            (0, 800, Green, (200, 1200)),
            (0, 800, Yellow, (200, 400)),
            (0, 800, Red, (200, 400)),
            (100, 300, Green, (0, 300)),     // Tc 300, Tp 600 before
            (500, 600, Yellow, (400, 500)),  // Tc 400 < 600: yellow; Tp 1100 − 600
            (1000, 400, Green, (500, 1100)), // Tc 900, Tp 1500 before
        ];
        for &(t, b, want, (tc, tp)) in rows {
            assert_eq!(m.colour(b, 0, t * 1_000_000), want, "t {t} B {b}");
            assert_eq!(m.c.tokens / UNITS_PER_BYTE, u128::from(tc), "Tc at {t}");
            assert_eq!(
                m.second.tokens / UNITS_PER_BYTE,
                u128::from(tp),
                "Tp at {t}"
            );
        }
    }

    /// RFC 2698 §3 colour-aware: pre-red is red, pre-yellow takes only
    /// from P.
    #[test]
    fn trtcm_colour_aware_keeps_pre_colours() {
        let kind = MeterKind::Trtcm {
            cir_bps: 8_000,
            cbs: 1000,
            pir_bps: 16_000,
            pbs: 2000,
        };
        let mut m = meter(kind, true);
        assert_eq!(m.colour(100, 14, 0), Red);
        assert_eq!(m.colour(100, 12, 0), Yellow);
        assert_eq!(m.colour(100, 10, 0), Green);
        assert_eq!(m.c.tokens / UNITS_PER_BYTE, 900);
        assert_eq!(m.second.tokens / UNITS_PER_BYTE, 1800);
    }

    #[test]
    fn red_frames_are_dropped_or_remarked_and_others_remarked() {
        let mut cfg = MeterConfig {
            kind: MeterKind::Srtcm {
                cir_bps: 8_000,
                cbs: 1500,
                ebs: 0,
            },
            color_aware: false,
            dscp: MeterConfig::AF1X,
            drop_red: true,
            limit: Limit::Unbounded,
        };
        let mut r = super::super::testing::rng();
        let f = |id| super::super::testing::frame(id, 1500, 0, 0);
        let mut m = Meter::new(&cfg);
        assert_eq!(m.enqueue(f(0), 0, &mut r), Enqueue::QueuedRemarked(10));
        assert_eq!(
            m.enqueue(f(1), 0, &mut r),
            Enqueue::Dropped(DropReason::MeterRed)
        );
        cfg.drop_red = false;
        let mut m = Meter::new(&cfg);
        m.enqueue(f(0), 0, &mut r);
        assert_eq!(m.enqueue(f(1), 0, &mut r), Enqueue::QueuedRemarked(14));
        assert_eq!(m.counts, [1, 0, 1]);
    }

    #[test]
    fn bad_parameters_are_named() {
        let c = |kind| MeterConfig {
            kind,
            color_aware: false,
            dscp: MeterConfig::AF1X,
            drop_red: false,
            limit: Limit::Unbounded,
        };
        let t = |cir_bps, cbs, pir_bps, pbs| MeterKind::Trtcm {
            cir_bps,
            cbs,
            pir_bps,
            pbs,
        };
        assert_eq!(c(t(10, 1, 5, 1)).validate().unwrap_err().param, "pir");
        assert_eq!(c(t(0, 1, 5, 1)).validate().unwrap_err().param, "cir");
        assert_eq!(c(t(5, 1, 5, 0)).validate().unwrap_err().param, "pbs");
        let s = MeterKind::Srtcm {
            cir_bps: 5,
            cbs: 0,
            ebs: 0,
        };
        assert_eq!(c(s).validate().unwrap_err().param, "cbs");
        assert!(c(t(5, 1, 5, 1)).validate().is_ok());
    }
}
