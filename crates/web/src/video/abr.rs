//! Adaptive bitrate (ABR) rules: which rung of the ladder the next segment
//! is fetched at. Both are pure: they are handed the measurements and the
//! buffer level and do no I/O.
//!
//! - [`Throughput`]: the harmonic mean of the last [`WINDOW`] segment
//!   throughputs, times [`SAFETY`] (0.9); the highest bitrate not above
//!   it (the lowest when none is, or before the first measurement).
//! - [`Bola`]: BOLA-BASIC, K. Spiteri, R. Urgaonkar, R. K. Sitaraman,
//!   "BOLA: Near-Optimal Bitrate Adaptation for Online Videos", IEEE
//!   INFOCOM 2016 (Algorithm 1). For the next segment it picks the rung
//!   `m` maximizing `(V·v_m + V·γp − Q) / S_m`, where `S_m` is the
//!   segment's size at rung `m` (equal durations: proportional to the
//!   bitrate), `v_m = ln(S_m / S_1)` its utility and `Q` the buffer level.
//!   `V` and `γp` come from the buffer target as in dash.js's `BolaRule`
//!   (written by the paper's first author), translated to the paper's
//!   notation (dash.js normalises utilities to `v_m + 1`; its `Vp` is `V`
//!   and its `gp + 1` is `γp`):
//!
//!   ```text
//!   Q_T = max(buffer target, 10 s + 2 s × rungs)
//!   g   = v_M / (Q_T / 10 s − 1)
//!   V   = 10 s / g
//!   γp  = 1 + g
//!   ```
//!
//!   so the lowest rung's numerator reaches 0 at `Q = V·γp = 10 s + V`,
//!   and rung `m`'s at `Q = V·(v_m + γp)`. As in dash.js (and the paper's
//!   "don't download" case), after choosing `m` the client waits until
//!   the buffer is down to `V·(v_m + γp)`; ties go to the higher rung.
//!
//! # Gaps
//! - BOLA-BASIC only: not BOLA-FINITE, BOLA-O or BOLA-U, nor dash.js's
//!   throughput-based start-up and its "insufficient buffer" rule.

use std::collections::VecDeque;

/// Segments the throughput rule averages over.
pub const WINDOW: usize = 5;
/// The throughput rule's safety factor.
pub const SAFETY: f64 = 0.9;
/// dash.js's `MINIMUM_BUFFER_S`: the buffer, s, below which BOLA keeps to
/// the lowest rung's region.
pub const BOLA_MIN_BUFFER_S: f64 = 10.0;
/// dash.js's `MINIMUM_BUFFER_PER_BITRATE_LEVEL_S`.
pub const BOLA_PER_RUNG_S: f64 = 2.0;

/// The throughput rule's memory.
#[derive(Clone, Debug, Default)]
pub struct Throughput {
    /// The last throughputs, bit/s, oldest first.
    samples: VecDeque<f64>,
}

impl Throughput {
    /// Records a segment of `bytes` downloaded in `ns`.
    pub fn record(&mut self, bytes: u64, ns: u64) {
        if ns == 0 || bytes == 0 {
            return;
        }
        if self.samples.len() == WINDOW {
            self.samples.pop_front();
        }
        self.samples.push_back(bytes as f64 * 8e9 / ns as f64);
    }

    /// Returns the harmonic mean of the samples, bit/s.
    pub fn estimate(&self) -> Option<f64> {
        if self.samples.is_empty() {
            return None;
        }
        let inv: f64 = self.samples.iter().map(|s| 1.0 / s).sum();
        Some(self.samples.len() as f64 / inv)
    }

    /// Returns the rung for the next segment.
    pub fn choose(&self, ladder_kbps: &[u64]) -> usize {
        let Some(est) = self.estimate() else {
            return 0;
        };
        let budget = SAFETY * est;
        ladder_kbps
            .iter()
            .rposition(|&k| (k as f64) * 1e3 <= budget)
            .unwrap_or(0)
    }
}

/// BOLA-BASIC's parameters for one ladder and buffer target.
#[derive(Clone, Debug, PartialEq)]
pub struct Bola {
    /// `S_m`, kbit/s (sizes of equal-duration segments are proportional).
    sizes: Vec<f64>,
    /// `v_m = ln(S_m / S_1)`.
    utilities: Vec<f64>,
    /// `V`, s.
    pub v: f64,
    /// `γp`.
    pub gamma_p: f64,
}

impl Bola {
    /// The parameters for `ladder_kbps` and a buffer target of
    /// `target_s` seconds (see the module docs).
    pub fn new(ladder_kbps: &[u64], target_s: f64) -> Bola {
        let sizes: Vec<f64> = ladder_kbps.iter().map(|&k| k.max(1) as f64).collect();
        let s1 = sizes.first().copied().unwrap_or(1.0);
        let utilities: Vec<f64> = sizes.iter().map(|s| (s / s1).ln()).collect();
        let v_top = utilities.last().copied().unwrap_or(0.0);
        let q_t = target_s.max(BOLA_MIN_BUFFER_S + BOLA_PER_RUNG_S * sizes.len() as f64);
        let g = v_top / (q_t / BOLA_MIN_BUFFER_S - 1.0);
        // One rung (v_M = 0): nothing to adapt; V is then infinite and
        // every score's sign is V's, so the lowest (only) rung is chosen
        // with no wait.
        let v = if g > 0.0 {
            BOLA_MIN_BUFFER_S / g
        } else {
            f64::INFINITY
        };
        Bola {
            sizes,
            utilities,
            v,
            gamma_p: 1.0 + g,
        }
    }

    /// Returns `(V·v_m + V·γp − Q) / S_m` for rung `m` at buffer `q_s`.
    pub fn score(&self, m: usize, q_s: f64) -> f64 {
        if self.sizes.len() <= 1 {
            return 1.0;
        }
        (self.v * self.utilities[m] + self.v * self.gamma_p - q_s) / self.sizes[m]
    }

    /// Returns the rung maximizing the score at buffer `q_s` seconds
    /// (the higher on a tie).
    pub fn choose(&self, q_s: f64) -> usize {
        let mut best = 0;
        for m in 1..self.sizes.len() {
            if self.score(m, q_s) >= self.score(best, q_s) {
                best = m;
            }
        }
        best
    }

    /// Returns `V·(v_m + γp)`, s: the buffer level at which rung `m`'s
    /// score reaches 0, down to which the client waits before fetching at
    /// rung `m` (infinite with one rung).
    pub fn level(&self, m: usize) -> f64 {
        if self.sizes.len() <= 1 {
            return f64::INFINITY;
        }
        self.v * (self.utilities[m] + self.gamma_p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::video::DEFAULT_LADDER_KBPS;

    #[test]
    fn the_throughput_rule_takes_the_highest_rung_below_nine_tenths_of_the_harmonic_mean() {
        let l = DEFAULT_LADDER_KBPS;
        let mut t = Throughput::default();
        assert_eq!(t.choose(&l), 0, "no sample: the lowest");
        // 1 MB in 2 s and 1 MB in 1 s: 4 and 8 Mbit/s; harmonic mean
        // 2 / (1/4 + 1/8) = 5.333 Mbit/s; x 0.9 = 4.8 Mbit/s: 4,300.
        t.record(1_000_000, 2_000_000_000);
        t.record(1_000_000, 1_000_000_000);
        assert!((t.estimate().unwrap() - 16e6 / 3.0).abs() < 1e-6);
        assert_eq!(t.choose(&l), 8);
        // Five samples of 2 Mbit/s push both out: 1.8 Mbit/s: 1,750.
        for _ in 0..5 {
            t.record(250_000, 1_000_000_000);
        }
        assert!((t.estimate().unwrap() - 2e6).abs() < 1e-6);
        assert_eq!(t.choose(&l), 5);
        // 1,050,000 bytes in 7.1 s: 1,183,099 bit/s, x 0.9 = 1,064,789:
        // 1,050 (rung 4); in 7.3 s: x 0.9 = 1,035,616: 750 (rung 3).
        let mut t = Throughput::default();
        t.record(1_050_000, 7_100_000_000);
        assert_eq!(t.choose(&l), 4, "{:?}", t.estimate());
        let mut t = Throughput::default();
        t.record(1_050_000, 7_300_000_000);
        assert_eq!(t.choose(&l), 3, "{:?}", t.estimate());
        let mut t = Throughput::default();
        t.record(1_000, 1_000_000_000);
        assert_eq!(t.choose(&l), 0, "below every rung: the lowest");
    }

    /// The parameters and choices below were worked out from the paper's
    /// formula by hand (a calculator), not by this code:
    ///
    /// ladder 235 … 4,300 kbit/s (9 rungs), buffer target 30 s:
    /// Q_T = max(30, 10 + 2·9) = 30 s; v_M = ln(4300/235) = 2.906785;
    /// g = 2.906785 / (30/10 − 1) = 1.453392; V = 10/g = 6.880454 s;
    /// γp = 2.453392.
    ///
    /// At Q = 15 s the scores (V·ln(S_m/235) + V·γp − 15)/S_m are, for
    /// 235, 375, 560, 750 kbit/s: 1.8805/235 = 0.00800,
    /// (3.2155 + 1.8805)/375 = 0.01359, (5.9767 + 1.8805)/560 = 0.01403,
    /// (7.9847 + 1.8805)/750 = 0.01315: 560 (rung 2) wins.
    #[test]
    fn bola_matches_a_table_worked_out_by_hand() {
        let b = Bola::new(&DEFAULT_LADDER_KBPS, 30.0);
        assert!((b.v - 6.880454).abs() < 1e-5, "V {}", b.v);
        assert!((b.gamma_p - 2.453392).abs() < 1e-5, "γp {}", b.gamma_p);
        assert!((b.score(0, 15.0) - 0.00800).abs() < 1e-5);
        assert!((b.score(1, 15.0) - 0.01359).abs() < 1e-5);
        assert!((b.score(2, 15.0) - 0.01403).abs() < 1e-5);
        assert!((b.score(3, 15.0) - 0.01315).abs() < 1e-5);
        // Buffer level (s) -> rung, by the same hand computation.
        for (q, m) in [
            (0.0, 0),
            (5.0, 0),
            (10.0, 0),
            (15.0, 2),
            (17.0, 3),
            (20.0, 4),
            (22.0, 5),
            (25.0, 6),
            (26.0, 6),
            (28.0, 7),
            (30.0, 8),
        ] {
            assert_eq!(b.choose(q), m, "Q = {q} s");
        }
        // V·(v_m + γp): 16.88 s for the lowest rung, 36.88 s for the top.
        assert!((b.level(0) - 16.880454).abs() < 1e-4);
        assert!((b.level(8) - 36.880454).abs() < 1e-4);
    }

    /// A short target is raised to 10 s + 2 s per rung: with 9 rungs and
    /// 12 s, Q_T = 28 s; g = 2.906785 / 1.8 = 1.614880; V = 6.192409 s;
    /// at 25 s the scores of 2,350 and 3,000 kbit/s are
    /// (6.192409·ln(2350/235) + 6.192409·2.614880 − 25)/2350 = 0.00232 and
    /// (6.192409·ln(3000/235) + 16.192409 − 25)/3000 = 0.00232, the
    /// second larger by 1.5e-6, so 3,000 (rung 7).
    #[test]
    fn bola_raises_a_short_buffer_target_as_dash_js_does() {
        let b = Bola::new(&DEFAULT_LADDER_KBPS, 12.0);
        assert!((b.v - 6.192409).abs() < 1e-5, "V {}", b.v);
        assert!((b.score(6, 25.0) - 0.00232).abs() < 1e-5);
        assert_eq!(b.choose(25.0), 7);
        assert_eq!(b.choose(28.0), 8);
    }

    #[test]
    fn one_rung_is_always_chosen_without_waiting() {
        let b = Bola::new(&[500], 30.0);
        assert_eq!(b.choose(0.0), 0);
        assert_eq!(b.choose(1e9), 0);
        assert!(b.level(0).is_infinite());
    }
}
