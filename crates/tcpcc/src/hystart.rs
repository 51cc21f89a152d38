//! HyStart++ (RFC 9406): leaving slow start when the RTT starts to grow,
//! before the queue overflows.
//!
//! Slow start doubles the window every round trip until a loss, so it
//! overshoots the path's capacity by up to a whole window: with a deep
//! buffer the first loss comes only after the queue has filled, and many
//! segments are lost at once. HyStart++ watches the minimum RTT of each
//! round (RFC 9406 §4.2):
//!
//! ```text
//! RttThresh = max(MIN_RTT_THRESH, min(lastRoundMinRTT / MIN_RTT_DIVISOR, MAX_RTT_THRESH))
//! if currentRoundMinRTT >= lastRoundMinRTT + RttThresh:
//!     cssBaselineMinRtt = currentRoundMinRTT; enter Conservative Slow Start
//! ```
//!
//! once `N_RTT_SAMPLE` samples of the current round are in. In
//! Conservative Slow Start (CSS) the window grows by a quarter of slow
//! start's increase (`CSS_GROWTH_DIVISOR`); if a round's minimum RTT falls
//! back below `cssBaselineMinRtt` the increase was spurious and slow start
//! resumes; after `CSS_ROUNDS` rounds in CSS, `ssthresh = cwnd` and
//! congestion avoidance begins. A loss (or ECN) ends HyStart++: the
//! algorithm's own reduction applies.
//!
//! Rounds: RFC 9406 ends a round when an ACK covers `windowEnd`, the
//! `SND.NXT` at its start. The congestion controller sees no sequence
//! numbers, so a round here ends when the bytes acknowledged since its
//! start reach the bytes that were in flight at its start (the same point
//! when every byte is acknowledged once).
//!
//! Constants as in RFC 9406 §4.3. Only the initial slow start uses
//! HyStart++ (after an RTO slow start is plain, as §4.4 allows and as the
//! RFC recommends when in doubt). Slow start's own increase keeps RFC
//! 3465's L = 2 (RFC 9406 allows L = 8 for paced senders; we do not pace).

/// RFC 9406 §4.3: lower bound of the RTT increase threshold, 4 ms.
pub const MIN_RTT_THRESH_NS: u64 = 4_000_000;
/// Upper bound of the RTT increase threshold, 16 ms.
pub const MAX_RTT_THRESH_NS: u64 = 16_000_000;
/// The threshold is RFC 9406's `lastRoundMinRTT` (the minimum RTT of the
/// previous RTT round) divided by this.
pub const MIN_RTT_DIVISOR: u64 = 8;
/// RTT samples needed in a round before deciding.
pub const N_RTT_SAMPLE: u32 = 8;
/// CSS grows by the slow start increase divided by this.
pub const CSS_GROWTH_DIVISOR: u64 = 4;
/// Rounds in CSS before congestion avoidance.
pub const CSS_ROUNDS: u32 = 5;

const INF: u64 = u64::MAX;

/// Where HyStart++ is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Standard slow start, watching the RTT.
    SlowStart,
    /// Conservative slow start.
    Css,
    /// Over: congestion avoidance or a loss happened.
    Done,
}

/// What the controller should do with this ACK's slow start increase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Growth {
    /// The whole increase (slow start).
    Full,
    /// A quarter of it (CSS).
    Conservative,
    /// Leave slow start: `ssthresh = cwnd`, no increase.
    Exit,
}

/// HyStart++ state of one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HyStart {
    phase: Phase,
    /// Bytes still to be acknowledged before the round ends (0: a round
    /// starts with the next ACK).
    round_left: u64,
    last_round_min_rtt: u64,
    current_round_min_rtt: u64,
    rtt_sample_count: u32,
    css_baseline_min_rtt: u64,
    css_rounds: u32,
}

impl Default for HyStart {
    fn default() -> Self {
        HyStart {
            phase: Phase::SlowStart,
            round_left: 0,
            last_round_min_rtt: INF,
            current_round_min_rtt: INF,
            rtt_sample_count: 0,
            css_baseline_min_rtt: INF,
            css_rounds: 0,
        }
    }
}

impl HyStart {
    /// Returns the current phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Ends HyStart++ (a loss, ECN or a timeout).
    pub fn stop(&mut self) {
        self.phase = Phase::Done;
    }

    /// Notes an ACK in slow start: `acked` bytes, an RTT sample, and the
    /// bytes in flight before it. Returns how to grow the window.
    pub fn on_ack(&mut self, acked: u64, rtt_ns: Option<u64>, in_flight: u64) -> Growth {
        if self.phase == Phase::Done {
            return Growth::Full;
        }
        if self.round_left == 0 {
            // A new round (§4.2: "At the start of each round during
            // standard slow start and CSS").
            self.last_round_min_rtt = self.current_round_min_rtt;
            self.current_round_min_rtt = INF;
            self.rtt_sample_count = 0;
            self.round_left = in_flight.max(1);
            if self.phase == Phase::Css {
                self.css_rounds += 1;
                if self.css_rounds >= CSS_ROUNDS {
                    // "If CSS_ROUNDS rounds are complete, enter congestion
                    // avoidance by setting the ssthresh to the current cwnd."
                    self.phase = Phase::Done;
                    return Growth::Exit;
                }
            }
        }
        self.round_left = self.round_left.saturating_sub(acked);
        if let Some(r) = rtt_ns {
            self.current_round_min_rtt = self.current_round_min_rtt.min(r);
            self.rtt_sample_count += 1;
        }
        let enough = self.rtt_sample_count >= N_RTT_SAMPLE
            && self.current_round_min_rtt != INF
            && self.last_round_min_rtt != INF;
        match self.phase {
            Phase::SlowStart => {
                if enough {
                    let thresh = (self.last_round_min_rtt / MIN_RTT_DIVISOR)
                        .clamp(MIN_RTT_THRESH_NS, MAX_RTT_THRESH_NS);
                    if self.current_round_min_rtt >= self.last_round_min_rtt + thresh {
                        self.css_baseline_min_rtt = self.current_round_min_rtt;
                        self.phase = Phase::Css;
                        self.css_rounds = 0;
                        return Growth::Conservative;
                    }
                }
                Growth::Full
            }
            Phase::Css => {
                if enough && self.current_round_min_rtt < self.css_baseline_min_rtt {
                    // "the RTT increase was spurious": resume slow start.
                    self.css_baseline_min_rtt = INF;
                    self.phase = Phase::SlowStart;
                    return Growth::Full;
                }
                Growth::Conservative
            }
            Phase::Done => Growth::Full,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds one round of `n` ACKs of 1 byte each with RTT `rtt`.
    fn round(h: &mut HyStart, n: u64, rtt: u64) -> Vec<Growth> {
        (0..n).map(|i| h.on_ack(1, Some(rtt), n - i)).collect()
    }

    /// RFC 9406 §4.2 with lastRoundMinRTT = 100 ms: RttThresh =
    /// max(4 ms, min(100/8 = 12.5 ms, 16 ms)) = 12.5 ms, so a round whose
    /// minimum is 112.4 ms stays in slow start and one at 112.5 ms enters
    /// CSS; a later round back below the CSS baseline resumes slow start.
    #[test]
    fn css_starts_at_exactly_the_rfc_threshold_and_ends_on_a_lower_rtt() {
        let mut h = HyStart::default();
        round(&mut h, 10, 100_000_000);
        let g = round(&mut h, 10, 112_499_999);
        assert!(g.iter().all(|g| *g == Growth::Full));
        assert_eq!(h.phase(), Phase::SlowStart);
        // currentRoundMinRTT became 112.499999 ms; the next RTT round compares to it.
        let mut h = HyStart::default();
        round(&mut h, 10, 100_000_000);
        let g = round(&mut h, 10, 112_500_000);
        assert_eq!(g[..7], [Growth::Full; 7], "fewer than N_RTT_SAMPLE samples");
        assert_eq!(g[7], Growth::Conservative);
        assert_eq!(h.phase(), Phase::Css);
        round(&mut h, 10, 112_400_000);
        assert_eq!(h.phase(), Phase::SlowStart, "spurious: back to slow start");
    }

    /// RFC 9406 §4.3: the threshold is clamped to [4 ms, 16 ms]; after
    /// CSS_ROUNDS rounds of CSS, congestion avoidance (`Exit`).
    #[test]
    fn the_threshold_is_clamped_and_css_ends_after_five_rounds() {
        let mut h = HyStart::default();
        round(&mut h, 10, 10_000_000); // 10/8 = 1.25 ms, clamped to 4 ms
        round(&mut h, 10, 13_999_999);
        assert_eq!(h.phase(), Phase::SlowStart);
        round(&mut h, 10, 17_999_999 + 1);
        assert_eq!(h.phase(), Phase::Css);
        let mut h = HyStart::default();
        round(&mut h, 10, 400_000_000); // 50 ms, clamped to 16 ms
        round(&mut h, 10, 415_999_999);
        assert_eq!(h.phase(), Phase::SlowStart);
        round(&mut h, 10, 431_999_998 + 1);
        assert_eq!(h.phase(), Phase::Css);
        for _ in 0..CSS_ROUNDS - 1 {
            let g = round(&mut h, 10, 440_000_000);
            assert!(g.iter().all(|g| *g == Growth::Conservative));
        }
        assert_eq!(h.on_ack(1, Some(440_000_000), 10), Growth::Exit);
        assert_eq!(h.phase(), Phase::Done);
    }
}
