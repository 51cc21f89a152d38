//! Data Center TCP (RFC 8257; Alizadeh et al., "Data Center TCP (DCTCP)",
//! SIGCOMM 2010).
//!
//! Switches mark CE on every packet that arrives to a queue at or above a
//! threshold K (`qdisc='ecn_threshold'` in `elvis-net`). The receiver
//! echoes each packet's CE state exactly (RFC 8257 §3.2, in the TCP
//! engine), so the fraction of acknowledged bytes that come back with ECE
//! estimates the fraction of packets marked. Once per window of data the
//! sender folds that fraction F into a moving average (RFC 8257 §3.3):
//!
//! ```text
//! α ← (1 − g)·α + g·F            g = 1/16
//! ```
//!
//! and on an ECE it reduces the window, at most once per window
//! (RFC 8257 §3.3, step 9):
//!
//! ```text
//! cwnd ← cwnd · (1 − α/2)        ssthresh ← cwnd
//! ```
//!
//! so a window that sees marks on every packet halves, as Reno, and one
//! that sees a few shrinks by a little. Growth (slow start, one SMSS per
//! RTT in congestion avoidance), the loss response and the RTO response
//! are NewReno's (RFC 8257 §3.5: "react to loss episodes in the same way
//! as conventional TCP").
//!
//! α is held in fixed point with 2^20 as one (Linux keeps 2^10), so the
//! arithmetic is integer and exact to within 2^-20; it starts at one
//! (RFC 8257 §3.3 "DCTCP.Alpha ... initialized to 1", Linux's
//! `dctcp_alpha_on_init` default), the cautious choice.
//!
//! The observation window is measured in sequence numbers, as the RFC
//! writes it: it ends when an ACK acknowledges beyond `WindowEnd`, the
//! `SND.NXT` at its start. Bytes acknowledged are the cumulative
//! advance, SACKed bytes not counted (RFC 8257 §3.3 step 1, Linux).
//!
//! # Gaps
//! - No Accurate ECN (RFC 9768): feedback is the classic ECE bit with the
//!   DCTCP receiver state machine, which loses precision when ACKs are
//!   lost.
//! - The engine sends data ECT(0) but not SYNs or pure ACKs (RFC 8257 §3.1
//!   allows non-ECT control packets; Linux sends them ECT).
//! - The reduction is applied at once, not spread over a round trip as
//!   Linux's CWR state with PRR does.

use crate::newreno::NewReno;
use crate::{AckEvent, CongestionControl, EcnAck, EcnFeedback};

/// One in α's fixed point.
pub const ALPHA_ONE: u64 = 1 << ALPHA_SHIFT;
const ALPHA_SHIFT: u32 = 20;
/// log2(1/g): RFC 8257 §4.2's recommended g = 1/16.
pub const G_SHIFT: u32 = 4;

/// DCTCP's state: NewReno's window plus the marking estimator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dctcp {
    reno: NewReno,
    /// The estimate of the fraction of marked bytes, `ALPHA_ONE` = 1.
    alpha: u64,
    /// Bytes acknowledged in this observation window.
    bytes_acked: u64,
    /// Bytes acknowledged by ACKs with ECE in this observation window.
    bytes_marked: u64,
    /// `SND.NXT` when this observation window began; `None` before the
    /// first ACK.
    window_end: Option<u32>,
    /// Observation windows completed (α updates).
    updates: u64,
}

impl Dctcp {
    /// Returns a sender's state with an initial window of
    /// `initial_window_segments` segments of `mss` bytes and α = 1.
    pub fn new(mss: u64, initial_window_segments: u64) -> Self {
        Dctcp {
            reno: NewReno::new(mss, initial_window_segments),
            alpha: ALPHA_ONE,
            bytes_acked: 0,
            bytes_marked: 0,
            window_end: None,
            updates: 0,
        }
    }

    /// Returns this state with the window and threshold set (bytes), for
    /// [`crate::take_over`].
    pub fn with_window(mut self, cwnd: u64, ssthresh: u64) -> Self {
        self.reno = self.reno.with_window(cwnd, ssthresh);
        self
    }

    /// Returns α in fixed point ([`ALPHA_ONE`] = 1).
    pub fn alpha_fixed(&self) -> u64 {
        self.alpha
    }

    /// Returns α as a fraction in [0, 1].
    pub fn alpha(&self) -> f64 {
        self.alpha as f64 / ALPHA_ONE as f64
    }

    /// Returns how many observation windows have ended (α updates).
    pub fn updates(&self) -> u64 {
        self.updates
    }
}

/// Returns true if sequence number `a` is after `b` (RFC 1982 serial
/// arithmetic on 32 bits, Linux's `after`).
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

impl CongestionControl for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }

    fn window(&self) -> u64 {
        self.reno.window()
    }

    fn ssthresh(&self) -> u64 {
        self.reno.ssthresh()
    }

    fn on_ack(&mut self, ev: &AckEvent) {
        self.reno.on_ack(ev);
    }

    fn on_congestion(&mut self, now_ns: u64, in_flight_bytes: u64) {
        self.reno.on_congestion(now_ns, in_flight_bytes);
    }

    fn on_recovery_end(&mut self, now_ns: u64) {
        self.reno.on_recovery_end(now_ns);
    }

    /// RFC 8257 §3.3 step 9: "cwnd = cwnd * (1 - DCTCP.Alpha / 2)", and
    /// ssthresh the same (Linux's `dctcp_ssthresh`).
    fn on_ecn(&mut self, _now_ns: u64, _in_flight_bytes: u64) {
        let cwnd = self.reno.window();
        let cut = (u128::from(cwnd) * u128::from(self.alpha)) >> (ALPHA_SHIFT + 1);
        self.reno.reduce_to(cwnd - cut as u64);
    }

    fn on_rto(&mut self, now_ns: u64, in_flight_bytes: u64) {
        self.reno.on_rto(now_ns, in_flight_bytes);
    }

    fn undo(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        self.reno.undo(prior_cwnd, prior_ssthresh);
    }

    fn ecn_feedback(&self) -> EcnFeedback {
        EcnFeedback::Dctcp
    }

    /// RFC 8257 §3.3 steps 1–8, for every ACK.
    fn on_ecn_ack(&mut self, ev: &EcnAck) {
        let end = *self.window_end.get_or_insert(ev.snd_nxt);
        // Steps 1–2: count the bytes, and the marked ones.
        self.bytes_acked = self.bytes_acked.saturating_add(ev.acked_bytes);
        if ev.ece {
            self.bytes_marked = self.bytes_marked.saturating_add(ev.acked_bytes);
        }
        // Step 3: "If the SEG.ACK field value is less than or equal to
        // DCTCP.WindowEnd, stop processing."
        if !after(ev.ack, end) || self.bytes_acked == 0 {
            return;
        }
        // Steps 4–5: F = marked / acked; α = (1 − g)·α + g·F.
        let f_over_g = (u128::from(self.bytes_marked) << (ALPHA_SHIFT - G_SHIFT))
            / u128::from(self.bytes_acked);
        self.alpha = self.alpha - (self.alpha >> G_SHIFT) + f_over_g as u64;
        self.alpha = self.alpha.min(ALPHA_ONE);
        // Steps 6–8: a new window from SND.NXT, counters reset.
        self.window_end = Some(ev.snd_nxt);
        self.bytes_acked = 0;
        self.bytes_marked = 0;
        self.updates += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::MSS;

    /// An ACK clock with a window of `w` segments, each ACKed alone: ACK
    /// `i` acknowledges segment `i` and, one segment sent per ACK, finds
    /// `SND.NXT` at segment `i + w`. An observation window is then `w + 1`
    /// ACKs. Sends ACKs `from..from + n`, with ECE where `marked(i)`.
    fn clock(cc: &mut Dctcp, w: u32, from: u32, n: u32, marked: impl Fn(u32) -> bool) {
        let m = MSS as u32;
        for i in from..from + n {
            cc.on_ecn_ack(&EcnAck {
                now_ns: 0,
                acked_bytes: if i == 0 { 0 } else { MSS },
                ece: i > 0 && marked(i),
                ack: i.wrapping_mul(m),
                snd_nxt: (i + w).wrapping_mul(m),
            });
        }
    }

    /// RFC 8257 §3.3 step 5 by hand: from α = 1 with no marks, α falls by
    /// (15/16) per window; with a fraction F of the bytes marked it
    /// converges to F (the fixed point of the moving average).
    #[test]
    fn alpha_is_the_rfc_8257_moving_average_of_the_marked_fraction() {
        let mut cc = Dctcp::new(MSS, 10);
        let w = 19; // windows of 20 ACKs
        clock(&mut cc, w, 0, 1, |_| false); // opens the first window
        let mut want = 1.0f64;
        for k in 0..10 {
            clock(&mut cc, w, 1 + 20 * k, 20, |_| false);
            want *= 15.0 / 16.0;
            assert!((cc.alpha() - want).abs() < 1e-5, "{} vs {want}", cc.alpha());
        }
        for k in 10..210 {
            clock(&mut cc, w, 1 + 20 * k, 20, |i| i % 4 == 0);
            want = want * 15.0 / 16.0 + 0.25 / 16.0;
            assert!((cc.alpha() - want).abs() < 1e-4, "{} vs {want}", cc.alpha());
        }
        assert!((cc.alpha() - 0.25).abs() < 1e-4);
        assert_eq!(cc.updates(), 210);
    }

    /// Step 3: ACKs up to WindowEnd only count; α moves once per window,
    /// across the 32-bit sequence wrap too.
    #[test]
    fn alpha_moves_once_per_window_across_the_sequence_wrap() {
        let mut cc = Dctcp::new(MSS, 10);
        let start = u32::MAX - 5 * MSS as u32;
        cc.on_ecn_ack(&EcnAck {
            now_ns: 0,
            acked_bytes: 0,
            ece: false,
            ack: start,
            snd_nxt: start.wrapping_add(10 * MSS as u32),
        });
        for i in 1..=10u32 {
            cc.on_ecn_ack(&EcnAck {
                now_ns: 0,
                acked_bytes: MSS,
                ece: false,
                ack: start.wrapping_add(i * MSS as u32),
                snd_nxt: start.wrapping_add(20 * MSS as u32),
            });
            assert_eq!(cc.updates(), 0, "ACK {i} is within the window");
        }
        cc.on_ecn_ack(&EcnAck {
            now_ns: 0,
            acked_bytes: 1,
            ece: false,
            ack: start.wrapping_add(10 * MSS as u32 + 1),
            snd_nxt: start.wrapping_add(20 * MSS as u32),
        });
        assert_eq!(cc.updates(), 1);
        assert_eq!(cc.alpha_fixed(), ALPHA_ONE - (ALPHA_ONE >> 4));
    }

    /// Step 9: the window shrinks by α/2: with α = 1 it halves, as Reno;
    /// with α ≈ 0.0625 by about 3 %.
    #[test]
    fn an_ecn_echo_cuts_the_window_by_half_alpha() {
        let mut cc = Dctcp::new(MSS, 100);
        cc.on_ecn(0, 100 * MSS);
        assert_eq!(cc.window(), 50 * MSS);
        assert_eq!(cc.ssthresh(), 50 * MSS);
        let mut cc = Dctcp::new(MSS, 100);
        cc.alpha = ALPHA_ONE / 16;
        cc.on_ecn(0, 100 * MSS);
        assert_eq!(cc.window(), 100 * MSS - 100 * MSS / 32);
        // Never below 2·SMSS.
        let mut cc = Dctcp::new(MSS, 2);
        cc.on_ecn(0, 2 * MSS);
        assert_eq!(cc.window(), 2 * MSS);
    }

    /// A loss halves the window whatever α is (RFC 8257 §3.5).
    #[test]
    fn a_loss_halves_the_window_as_reno() {
        let mut cc = Dctcp::new(MSS, 100);
        cc.alpha = 0;
        cc.on_congestion(0, 100 * MSS);
        assert_eq!(cc.window(), 50 * MSS);
    }
}
