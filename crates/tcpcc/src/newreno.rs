//! Reno congestion control with NewReno recovery (RFC 5681 §3.1, RFC 6582,
//! RFC 3465).
//!
//! Slow start, while `cwnd < ssthresh` (RFC 5681 §3.1, eq. (2), with RFC
//! 3465 §2.2 appropriate byte counting and its permitted limit L = 2·SMSS):
//!
//! ```text
//! cwnd += min(N, L·SMSS)        N = bytes acknowledged by the ACK
//! ```
//!
//! Congestion avoidance (RFC 5681 §3.1, eq. (3), `cwnd += SMSS·SMSS/cwnd`
//! per ACK, done by byte counting as RFC 3465 §2.1 / RFC 5681 recommend):
//!
//! ```text
//! bytes_acked += N
//! if bytes_acked >= cwnd: bytes_acked -= cwnd; cwnd += SMSS
//! ```
//!
//! Fast retransmit (RFC 5681 §3.2 step 2, eq. (4); RFC 6582 §3.2 step 2):
//!
//! ```text
//! ssthresh = max(FlightSize / 2, 2·SMSS)
//! cwnd = ssthresh
//! ```
//!
//! The window is *not* inflated by 3·SMSS nor by one SMSS per duplicate
//! ACK: the engine runs RFC 6675-style recovery, sending while
//! `pipe < cwnd`, so deflation at the end of recovery (RFC 6582 §3.2 step
//! 3) is a no-op here. Timeout (RFC 5681 §3.1, eq. (4) and §3.1 "Loss
//! Window"):
//!
//! ```text
//! ssthresh = max(FlightSize / 2, 2·SMSS)   (held on a repeated timeout)
//! cwnd = LW = 1·SMSS
//! ```
//!
//! Undo of a spurious reduction (Linux's `tcp_reno_undo_cwnd`):
//!
//! ```text
//! cwnd = max(cwnd, prior_cwnd)      ssthresh = max(ssthresh, prior_ssthresh)
//! ```
//!
//! # Gaps
//! - Partial-ACK handling of RFC 6582 (retransmit the next hole, partial
//!   deflation) belongs to the engine's recovery, not here.

use crate::{initial, slow_start_increase, AckEvent, CongestionControl};

/// Reno / NewReno congestion control state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewReno {
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    /// RFC 3465 byte counter for congestion avoidance.
    bytes_acked: u64,
    in_recovery: bool,
    /// Set by an RTO, cleared by an ACK of new data: a second RTO keeps
    /// ssthresh.
    rto_backoff: bool,
}

impl NewReno {
    /// Returns this state with the window and threshold set (bytes), for
    /// [`crate::take_over`].
    pub fn with_window(mut self, cwnd: u64, ssthresh: u64) -> Self {
        self.cwnd = cwnd;
        self.ssthresh = ssthresh;
        self
    }

    /// Enters a window reduction to `cwnd` bytes (at least 2·SMSS), with
    /// `ssthresh` the same: the shape of a loss response, with the new
    /// window chosen by the caller (DCTCP's `cwnd · (1 − α/2)`).
    pub(crate) fn reduce_to(&mut self, cwnd: u64) {
        self.ssthresh = cwnd.max(self.mss.saturating_mul(2));
        self.cwnd = self.ssthresh;
        self.bytes_acked = 0;
        self.in_recovery = true;
    }

    /// Returns a sender's state with an initial window of
    /// `initial_window_segments` segments of `mss` bytes.
    pub fn new(mss: u64, initial_window_segments: u64) -> Self {
        let (mss, cwnd) = initial(mss, initial_window_segments);
        NewReno {
            mss,
            cwnd,
            ssthresh: u64::MAX,
            bytes_acked: 0,
            in_recovery: false,
            rto_backoff: false,
        }
    }
}

/// Returns RFC 5681 eq. (4): `max(FlightSize / 2, 2·SMSS)`.
pub(crate) fn half_flight(in_flight_bytes: u64, mss: u64) -> u64 {
    (in_flight_bytes / 2).max(mss.saturating_mul(2))
}

/// Returns `cwnd` after congestion avoidance has counted `acked` more bytes
/// into `bytes_acked` against a window of `per` bytes (one SMSS per `per`
/// bytes acknowledged).
pub(crate) fn avoid(cwnd: u64, bytes_acked: &mut u64, acked: u64, per: u64, mss: u64) -> u64 {
    let per = per.max(1);
    *bytes_acked = bytes_acked.saturating_add(acked);
    let steps = *bytes_acked / per;
    *bytes_acked %= per;
    cwnd.saturating_add(steps.saturating_mul(mss))
}

impl CongestionControl for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }

    fn window(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn on_ack(&mut self, ev: &AckEvent) {
        if ev.acked_bytes == 0 {
            return;
        }
        self.rto_backoff = false;
        if self.in_recovery || ev.app_limited {
            return;
        }
        if self.cwnd < self.ssthresh {
            self.cwnd = self
                .cwnd
                .saturating_add(slow_start_increase(ev.acked_bytes, self.mss));
        } else {
            self.cwnd = avoid(
                self.cwnd,
                &mut self.bytes_acked,
                ev.acked_bytes,
                self.cwnd,
                self.mss,
            );
        }
    }

    fn on_congestion(&mut self, _now_ns: u64, in_flight_bytes: u64) {
        self.ssthresh = half_flight(in_flight_bytes, self.mss);
        self.cwnd = self.ssthresh;
        self.bytes_acked = 0;
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
        self.bytes_acked = 0;
        self.in_recovery = false;
    }

    /// Linux's `tcp_reno_undo_cwnd` with `tcp_undo_cwnd_reduction`: the
    /// window and threshold go back up to their values before the
    /// reduction; the byte counter carries on.
    fn undo(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        self.cwnd = self.cwnd.max(prior_cwnd);
        self.ssthresh = self.ssthresh.max(prior_ssthresh);
        self.in_recovery = false;
        self.rto_backoff = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{Path, MSS};

    fn ack(acked: u64) -> AckEvent {
        AckEvent {
            now_ns: 1,
            acked_bytes: acked,
            rtt_ns: None,
            min_rtt_ns: 0,
            in_flight_bytes: 100 * MSS,
            app_limited: false,
        }
    }

    #[test]
    fn slow_start_counts_at_most_two_segments_per_ack() {
        let mut cc = NewReno::new(MSS, 10);
        cc.on_ack(&ack(10 * MSS));
        assert_eq!(cc.window(), 12 * MSS);
        cc.on_ack(&ack(100));
        assert_eq!(cc.window(), 12 * MSS + 100);
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_window_acknowledged() {
        let mut cc = NewReno::new(MSS, 20);
        cc.on_congestion(0, 40 * MSS);
        cc.on_recovery_end(0);
        assert_eq!(cc.window(), 20 * MSS);
        for _ in 0..19 {
            cc.on_ack(&ack(MSS));
        }
        assert_eq!(cc.window(), 20 * MSS);
        cc.on_ack(&ack(MSS));
        assert_eq!(cc.window(), 21 * MSS);
        let mut path = Path::new(50_000_000);
        for round in 1..=10 {
            path.round(&mut cc);
            // Byte counting carries the remainder, so one MSS per RTT give or take one.
            let w = cc.window() / MSS;
            assert!(w == 21 + round || w == 20 + round, "round {round}: {w}");
        }
    }

    #[test]
    fn fast_retransmit_halves_the_flight_size() {
        let mut cc = NewReno::new(MSS, 100);
        cc.on_congestion(0, 100 * MSS);
        assert_eq!(cc.window(), 50 * MSS);
        assert_eq!(cc.ssthresh(), 50 * MSS);
        assert!(!cc.in_slow_start());
    }

    #[test]
    fn rto_halves_ssthresh_and_restarts_slow_start() {
        let mut cc = NewReno::new(MSS, 100);
        cc.on_rto(0, 80 * MSS);
        assert_eq!(cc.ssthresh(), 40 * MSS);
        assert_eq!(cc.window(), MSS);
        let mut path = Path::new(10_000_000);
        path.rounds(&mut cc, 5);
        // 1, 2, 4, 8, 16, 32 segments, then slow start overshoots to at most ssthresh + 2 MSS.
        path.round(&mut cc);
        assert!(cc.window() >= 40 * MSS && !cc.in_slow_start());
    }
}
