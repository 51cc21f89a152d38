//! Compound TCP (draft-sridharan-tcpm-ctcp-02).
//!
//! The sending window is the sum of a loss-based component, Reno's `cwnd`,
//! and a delay-based component `dwnd` (§3):
//!
//! ```text
//! win = cwnd + dwnd
//! ```
//!
//! `cwnd` grows as Reno's does, but in congestion avoidance against the
//! whole window (§3.1):
//!
//! ```text
//! cwnd += 1/(cwnd + dwnd)          per segment acknowledged (byte counted)
//! ```
//!
//! `dwnd` is updated once per round trip, in congestion avoidance, from a
//! Vegas-style estimate of the segments queued in the network (§3.2), with
//! all windows in segments:
//!
//! ```text
//! expected = win / baseRTT
//! actual   = win / RTT
//! diff     = (expected − actual) · baseRTT
//!
//! dwnd(t+1) = dwnd(t) + max(α·win(t)^k − 1, 0)   if diff < γ
//!           = max(dwnd(t) − ζ·diff, 0)          if diff ≥ γ
//!           = max(win(t)·(1 − β) − cwnd/2, 0)   on loss
//!
//! α = 1/8, β = 1/2, k = 0.75, ζ = 1, γ = 30 segments
//! ```
//!
//! The `− 1` accounts for the one segment per RTT that `cwnd` already adds,
//! so the whole window grows by `α·win^k` per RTT. On loss `cwnd` halves as
//! Reno's, so the total window becomes `win·(1 − β) = win/2`.
//!
//! The delay-based component only grows when `win ≥ low_wnd` = 38 segments
//! (§3.2's low-window threshold); below it CTCP is Reno. A `dwnd` left from
//! above the threshold is kept (so the window does not jump) and only
//! shrinks. On a retransmission timeout `dwnd = 0` and `cwnd` follows Reno.
//!
//! # Choices the draft leaves open
//! - **Rounds.** A round starts at an ACK and ends once the bytes that were
//!   in flight after that ACK (`in_flight_bytes − acked_bytes`) have been
//!   acknowledged, the byte-count version of Vegas' `beg_snd_nxt`.
//! - **RTT** is the mean of the RTT samples of the round's ACKs after the
//!   first; **baseRTT** is the engine's `min_rtt_ns`, or the least sample
//!   seen while that is 0. `win` is the window at the round's start.
//! - **Loss** reduces from `win` and `cwnd` themselves, not from the flight
//!   size; `ssthresh` becomes the reduced window (at least 2 SMSS).
//! - **Timeout** sets `ssthresh = max(FlightSize/2, 2·SMSS)` as Reno.
//! - `win^0.75` is `√win · √√win`, using only correctly rounded `sqrt`.
//!
//! # Gaps
//! - No γ auto-tuning (the draft's later "TUBE" refinement).

use crate::newreno::{avoid, half_flight};
use crate::{initial, slow_start_increase, AckEvent, CongestionControl};

/// The draft's α = 1/8.
pub const ALPHA: f64 = 0.125;
/// The draft's k = 0.75 (used as `√x·√√x`).
pub const K: f64 = 0.75;
/// The draft's γ = 30 segments: queued segments at which dwnd backs off.
pub const GAMMA: f64 = 30.0;
/// The draft's ζ = 1.
pub const ZETA: f64 = 1.0;
/// The draft's low_wnd = 38 segments.
pub const LOW_WINDOW_SEGMENTS: u64 = 38;

/// One round trip of delay measurement.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Round {
    /// Bytes still to be acknowledged before the round ends.
    remaining: u64,
    /// The window at the round's start.
    win: u64,
    rtt_sum: u128,
    rtt_samples: u64,
}

/// Compound TCP congestion control state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compound {
    mss: u64,
    cwnd: u64,
    dwnd: u64,
    ssthresh: u64,
    bytes_acked: u64,
    in_recovery: bool,
    rto_backoff: bool,
    /// The least RTT sample seen, 0 if none.
    min_sample_ns: u64,
    round: Option<Round>,
}

impl Compound {
    /// Returns this state with the window and threshold set (bytes), for
    /// [`crate::take_over`].
    pub fn with_window(mut self, cwnd: u64, ssthresh: u64) -> Self {
        self.cwnd = cwnd;
        self.ssthresh = ssthresh;
        self
    }

    /// Returns a sender's state with an initial window of
    /// `initial_window_segments` segments of `mss` bytes.
    pub fn new(mss: u64, initial_window_segments: u64) -> Self {
        let (mss, cwnd) = initial(mss, initial_window_segments);
        Compound {
            mss,
            cwnd,
            dwnd: 0,
            ssthresh: u64::MAX,
            bytes_acked: 0,
            in_recovery: false,
            rto_backoff: false,
            min_sample_ns: 0,
            round: None,
        }
    }

    /// Returns the loss-based component in bytes.
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// Returns the delay-based component in bytes.
    pub fn dwnd(&self) -> u64 {
        self.dwnd
    }

    /// Returns `(expected − actual)·baseRTT` in segments for a window of
    /// `win` bytes.
    fn diff(&self, win: u64, rtt_ns: u64, base_ns: u64) -> f64 {
        let win = win as f64 / self.mss as f64;
        // win/base − win/rtt, times base, is win·(rtt − base)/rtt.
        win * rtt_ns.saturating_sub(base_ns) as f64 / rtt_ns as f64
    }

    /// Applies the once-per-RTT dwnd rule at the end of round `r`.
    fn end_round(&mut self, r: &Round, base_ns: u64) {
        if r.rtt_samples == 0 || base_ns == 0 {
            return;
        }
        let rtt_ns = (r.rtt_sum / u128::from(r.rtt_samples)) as u64;
        let diff = self.diff(r.win, rtt_ns.max(base_ns), base_ns);
        let mss = self.mss as f64;
        if diff >= GAMMA {
            // `as` saturates, so a huge diff just empties dwnd.
            self.dwnd = self.dwnd.saturating_sub((ZETA * diff * mss) as u64);
        } else if r.win >= LOW_WINDOW_SEGMENTS.saturating_mul(self.mss) {
            let inc = ALPHA * pow_k(r.win as f64 / mss) - 1.0;
            if inc > 0.0 {
                self.dwnd = self.dwnd.saturating_add((inc * mss) as u64);
            }
        }
    }

    /// Tracks rounds and runs the dwnd rule once per round.
    fn track_round(&mut self, ev: &AckEvent) {
        let base_ns = if ev.min_rtt_ns > 0 {
            ev.min_rtt_ns
        } else {
            self.min_sample_ns
        };
        match self.round.take() {
            None => {
                let remaining = ev.in_flight_bytes.saturating_sub(ev.acked_bytes);
                if remaining > 0 {
                    self.round = Some(Round {
                        remaining,
                        win: self.window(),
                        rtt_sum: 0,
                        rtt_samples: 0,
                    });
                }
            }
            Some(mut r) => {
                if let Some(rtt) = ev.rtt_ns {
                    r.rtt_sum += u128::from(rtt);
                    r.rtt_samples += 1;
                }
                r.remaining = r.remaining.saturating_sub(ev.acked_bytes);
                if r.remaining == 0 {
                    self.end_round(&r, base_ns);
                } else {
                    self.round = Some(r);
                }
            }
        }
    }
}

/// Returns `x^0.75` as `√x·√√x`, with correctly rounded operations only.
fn pow_k(x: f64) -> f64 {
    let s = x.sqrt();
    s * s.sqrt()
}

impl CongestionControl for Compound {
    fn name(&self) -> &'static str {
        "compound"
    }

    fn window(&self) -> u64 {
        self.cwnd.saturating_add(self.dwnd)
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn on_ack(&mut self, ev: &AckEvent) {
        if let Some(rtt) = ev.rtt_ns.filter(|&r| r > 0) {
            if self.min_sample_ns == 0 || rtt < self.min_sample_ns {
                self.min_sample_ns = rtt;
            }
        }
        if ev.acked_bytes == 0 {
            return;
        }
        self.rto_backoff = false;
        if self.in_recovery || ev.app_limited {
            self.round = None;
            return;
        }
        if self.window() < self.ssthresh {
            self.round = None;
            self.cwnd = self
                .cwnd
                .saturating_add(slow_start_increase(ev.acked_bytes, self.mss));
            return;
        }
        // Count this ACK against the window it was sent under, before a
        // round end changes dwnd.
        let win = self.window();
        self.track_round(ev);
        self.cwnd = avoid(
            self.cwnd,
            &mut self.bytes_acked,
            ev.acked_bytes,
            win,
            self.mss,
        );
    }

    fn on_congestion(&mut self, _now_ns: u64, _in_flight_bytes: u64) {
        let win = self.window();
        let half_cwnd = self.cwnd / 2;
        // dwnd = (win·(1 − β) − cwnd/2)^+, cwnd = cwnd/2.
        self.dwnd = (win / 2).saturating_sub(half_cwnd);
        self.cwnd = half_cwnd.max(self.mss.saturating_mul(2));
        self.ssthresh = self.window();
        self.bytes_acked = 0;
        self.round = None;
        self.in_recovery = true;
    }

    fn on_recovery_end(&mut self, _now_ns: u64) {
        self.in_recovery = false;
    }

    fn on_rto(&mut self, _now_ns: u64, in_flight_bytes: u64) {
        if !self.rto_backoff {
            self.ssthresh = half_flight(in_flight_bytes, self.mss);
        }
        self.rto_backoff = true;
        self.cwnd = self.mss;
        self.dwnd = 0;
        self.bytes_acked = 0;
        self.round = None;
        self.in_recovery = false;
    }

    /// The draft says nothing of undo (and Linux has no Compound): the
    /// loss-based `cwnd` grows back so that `cwnd + dwnd` is at least the
    /// window before the reduction (`tcp_reno_undo_cwnd` applied to the
    /// sum), `dwnd` stays as the reduction left it, and the threshold
    /// goes back up.
    fn undo(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        let short = prior_cwnd.saturating_sub(self.window());
        self.cwnd = self.cwnd.saturating_add(short);
        self.ssthresh = self.ssthresh.max(prior_ssthresh);
        self.in_recovery = false;
        self.rto_backoff = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{Path, MSS};
    use crate::NewReno;

    const BASE: u64 = 50_000_000;

    /// A sender in congestion avoidance at `segments` segments.
    fn avoiding<T: CongestionControl>(mut cc: T, segments: u64) -> T {
        cc.on_congestion(0, 2 * segments * MSS);
        cc.on_recovery_end(0);
        assert_eq!(cc.window(), segments * MSS);
        cc
    }

    fn segs(bytes: u64) -> f64 {
        bytes as f64 / MSS as f64
    }

    #[test]
    fn uncongested_window_grows_by_alpha_win_to_the_k_per_rtt() {
        let mut cc = avoiding(Compound::new(MSS, 200), 100);
        let mut path = Path::new(BASE);
        for round in 0..30 {
            let (before, dwnd) = (segs(cc.window()), cc.dwnd());
            path.round(&mut cc);
            let expected = ALPHA * before.powf(K);
            // dwnd adds α·win^k − 1, floored to a byte...
            let dwnd_inc = ((expected - 1.0) * MSS as f64) as u64;
            assert!(cc.dwnd().abs_diff(dwnd + dwnd_inc) <= 1, "round {round}");
            // ...and cwnd the rest, one segment per window acknowledged: the
            // round sends ⌊win⌋ segments, so cwnd gains one segment in most
            // rounds and none in some. Whole window: α·win^k within a segment.
            let grown = segs(cc.window()) - before;
            assert!(
                (grown - expected).abs() <= 1.0 + 1.0 / MSS as f64,
                "round {round}: grew {grown} at {before}, expected {expected}"
            );
        }
        assert!(cc.dwnd() > 0);
    }

    #[test]
    fn uncongested_window_grows_much_faster_than_reno_above_low_wnd() {
        let mut ctcp = avoiding(Compound::new(MSS, 200), 100);
        let mut reno = avoiding(NewReno::new(MSS, 200), 100);
        let (mut p1, mut p2) = (Path::new(BASE), Path::new(BASE));
        p1.rounds(&mut ctcp, 50);
        p2.rounds(&mut reno, 50);
        let ctcp_gain = segs(ctcp.window()) - 100.0;
        let reno_gain = segs(reno.window()) - 100.0;
        assert!(reno_gain <= 51.0);
        assert!(ctcp_gain > 4.0 * reno_gain, "{ctcp_gain} vs {reno_gain}");
    }

    #[test]
    fn dwnd_stays_zero_below_the_low_window_threshold() {
        let mut cc = avoiding(Compound::new(MSS, 40), 20);
        let mut path = Path::new(BASE);
        while cc.window() < 37 * MSS {
            path.round(&mut cc);
            assert_eq!(cc.dwnd(), 0);
        }
        path.rounds(&mut cc, 5);
        assert!(cc.dwnd() > 0);
    }

    #[test]
    fn queueing_delay_shrinks_dwnd_by_diff_per_rtt() {
        let mut cc = avoiding(Compound::new(MSS, 200), 100);
        let mut path = Path::new(BASE);
        path.rounds(&mut cc, 20);
        assert!(cc.dwnd() > 80 * MSS, "{}", segs(cc.dwnd()));
        // 50% queueing delay: diff = win·(1 − base/rtt) = win/3 ≥ γ.
        path.rtt = BASE * 3 / 2;
        let win = segs(cc.window());
        let dwnd = cc.dwnd();
        path.round(&mut cc);
        let diff = win / 3.0;
        assert!(diff >= GAMMA);
        let shrunk = segs(dwnd) - segs(cc.dwnd());
        assert!(
            (shrunk - diff).abs() < 1.0 / MSS as f64 * 2.0,
            "{shrunk} vs {diff}"
        );
        path.rounds(&mut cc, 3);
        assert_eq!(cc.dwnd(), 0);
    }

    #[test]
    fn loss_halves_the_total_window() {
        let mut cc = avoiding(Compound::new(MSS, 200), 100);
        let mut path = Path::new(BASE);
        path.rounds(&mut cc, 10);
        let (win, cwnd) = (cc.window(), cc.cwnd());
        assert!(cc.dwnd() > 0);
        cc.on_congestion(path.now, win);
        assert!(
            cc.window().abs_diff(win / 2) <= 1,
            "{} vs {}",
            cc.window(),
            win / 2
        );
        assert_eq!(cc.cwnd(), cwnd / 2);
        assert_eq!(cc.dwnd(), win / 2 - cwnd / 2);
        assert_eq!(cc.ssthresh(), cc.window());
    }

    #[test]
    fn rto_zeroes_dwnd() {
        let mut cc = avoiding(Compound::new(MSS, 200), 100);
        let mut path = Path::new(BASE);
        path.rounds(&mut cc, 10);
        assert!(cc.dwnd() > 0);
        cc.on_rto(path.now, cc.window());
        assert_eq!(cc.dwnd(), 0);
        assert_eq!(cc.window(), MSS);
    }
}
