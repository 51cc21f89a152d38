//! CUBIC congestion control (RFC 9438).
//!
//! Windows are kept in bytes; the curve is evaluated in segments (`f64`),
//! with `t` in seconds since the start of the congestion avoidance epoch,
//! converted from integer nanoseconds.
//!
//! Window increase function (§4.2, Figure 1 and Figure 2):
//!
//! ```text
//! W_cubic(t) = C·(t − K)³ + W_max          C = 0.4
//! K = ∛((W_max − cwnd_epoch) / C)          = ∛(W_max·(1 − β_cubic)/C)
//!                                            when cwnd_epoch = β_cubic·W_max
//! ```
//!
//! On each ACK in congestion avoidance (§4.2, Figure 3), with RTT the
//! smoothed RTT:
//!
//! ```text
//! target = W_cubic(t + RTT) clamped to [cwnd, 1.5·cwnd]
//! cwnd  += (target − cwnd) / cwnd           per segment acknowledged
//! ```
//!
//! Reno-friendly region (§4.3, Figure 4):
//!
//! ```text
//! W_est += α_cubic · segments_acked / cwnd  α_cubic = 3(1 − β_cubic)/(1 + β_cubic)
//! if W_cubic(t) < W_est: cwnd = W_est
//! ```
//!
//! α_cubic stays 3(1 − β_cubic)/(1 + β_cubic) for the whole epoch, as in
//! Linux (`beta_scale` in `tcp_cubic.c`). §4.3's SHOULD, α_cubic = 1 once
//! W_est reaches cwnd_prior, is [`Cubic::set_reno_alpha_one`]: with it a
//! flow whose losses are random (so some epochs outlast the last one)
//! regains its window faster than Linux's CUBIC, by about 10 % in goodput
//! at 1 % loss and a 20 ms RTT (`docs/validation.md`, "Linux in the
//! loop").
//!
//! Multiplicative decrease (§4.6, Figure 5), β_cubic = 0.7:
//!
//! ```text
//! ssthresh = max(cwnd · β_cubic, 2·SMSS);  cwnd = ssthresh
//! ```
//!
//! cwnd is taken in whole segments here (the sender never sends the
//! fraction of a segment that byte counting leaves), so the reduction is
//! Linux's, which counts cwnd in packets: ⌊⌊cwnd/SMSS⌋ · β_cubic⌋ segments.
//! W_max is likewise in whole segments. At windows of ten or so segments
//! the fraction would otherwise keep about a third of a segment more
//! after each loss than Linux does.
//!
//! §4.6 prefers `flight_size · β_cubic` but allows `cwnd`, as Linux and
//! Windows do, for implementations that do not let cwnd grow while the flow
//! is application-limited; this one does not (§5.8), so it uses `cwnd` and
//! ignores `in_flight_bytes`.
//!
//! Fast convergence (§4.7, Figure 6):
//!
//! ```text
//! if cwnd < W_max: W_max = cwnd · (1 + β_cubic) / 2
//! else:            W_max = cwnd
//! ```
//!
//! Timeout (§4.8): cwnd = 1 SMSS as Reno, ssthresh as in §4.6; during the
//! first congestion avoidance stage after it, K = 0 and W_max = W_est =
//! the window at the start of that stage.
//!
//! Slow start is Reno's (RFC 5681 with RFC 3465 byte counting, L = 2·SMSS),
//! left before the first loss as [`SlowStart`] says: by default HyStart's
//! ACK-train and delay tests as Linux runs them ([`crate::hystart_classic`]),
//! in the initial slow start and after every timeout (Linux resets HyStart
//! on entering Loss); on exit `ssthresh = cwnd` and the same ACK already
//! counts in congestion avoidance (Linux's `cubictcp_acked` runs before
//! `cubictcp_cong_avoid`). The tests run on application-limited ACKs too,
//! as in Linux. HyStart++ (RFC 9406, [`crate::hystart`]) is the other
//! choice, in the initial slow start only.
//!
//! The epoch starts at the first ACK in congestion avoidance (as Linux
//! does), not at the end of recovery. When the window is already at or
//! above W_max at the start of an epoch, K = 0 and the curve's plateau is
//! the current window (Linux's `bic_origin_point`), since §4.2's cube root
//! would otherwise be of a negative number.
//!
//! # Determinism
//! `t` is computed from integer nanoseconds; the cube root is [`cbrt`],
//! written with IEEE-754 basic operations only, so every platform computes
//! the same windows. Fractional increases are carried in an integer
//! remainder, so nothing is lost to rounding across ACKs.
//!
//! # Gaps
//! - HyStart's `delay_min` misses the RTT samples of ACKs in recovery
//!   (the engine reports none) and keeps those of the first second of a
//!   congestion avoidance epoch, which Linux leaves out; both matter only
//!   after an undo back into slow start. Linux also runs HyStart during a
//!   recovery whose window (PRR) is below ssthresh; the engine does not
//!   consult the controller then.
//! - Undo of a spurious congestion event restores the window and
//!   threshold as Linux does (`tcp_reno_undo_cwnd`), not W_max, K and the
//!   epoch as §4.9 describes; no ECN (§4.6's 1 SMSS floor for ECE).

use crate::hystart::{Growth, HyStart, Phase, CSS_GROWTH_DIVISOR};
use crate::hystart_classic::{Detector, Sender};
use crate::{initial, slow_start_increase, AckEvent, CongestionControl, SlowStart};

/// RFC 9438 §5.1: "C SHOULD be set to 0.4".
pub const C: f64 = 0.4;
/// RFC 9438 §4.6: "β_cubic SHOULD be set to 0.7", as a fraction.
pub const BETA_NUM: u64 = 7;
/// The denominator of β_cubic.
pub const BETA_DEN: u64 = 10;
/// β_cubic as a float.
pub const BETA: f64 = 0.7;
/// RFC 9438 §4.3: α_cubic = 3(1 − β_cubic)/(1 + β_cubic).
pub const ALPHA: f64 = 3.0 * (1.0 - BETA) / (1.0 + BETA);

const NS_PER_S: f64 = 1e9;

/// An instant not set (`epoch_start_ns`, `last_ack_ns`).
const NONE: u64 = u64::MAX;

/// CUBIC congestion control state.
///
/// What every sender needs (window, threshold, RTT, flags) is inline; the
/// curve's history (W_max, cwnd_prior) and the current epoch are boxed in
/// a `Curve` made at the first congestion event or congestion avoidance
/// epoch, so a sender still in its initial slow start (an idle connection
/// that never sent much) holds 64 bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Cubic {
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    /// Time of the previous ACK, to leave app-limited time out of `t`.
    /// (`NONE` before the first: instants are stored without an
    /// `Option`'s tag to keep the per-connection state small.)
    last_ack_ns: u64,
    /// Smoothed RTT (RFC 6298 gains), 0 until the first sample.
    srtt_ns: u64,
    /// The curve, once there is one (`None` reads as `Curve::default()`).
    curve: Option<Box<Curve>>,
    /// The slow start exit's state once the first ACK of data arrives in
    /// a slow start it watches (so an idle connection holds none).
    exit: Option<Box<Exit>>,
    fast_convergence: bool,
    in_recovery: bool,
    rto_backoff: bool,
    /// The next congestion avoidance stage follows a timeout (§4.8).
    after_rto: bool,
    /// The slow start exit watches this slow start (Linux's `!found`).
    armed: bool,
    /// How slow start ends before a loss.
    slow_start: SlowStart,
    /// §4.3's α_cubic = 1 once W_est reaches cwnd_prior (off by default,
    /// as Linux).
    reno_alpha_one: bool,
}

/// The state of the slow start exit [`SlowStart`] chose.
#[derive(Debug, Clone, PartialEq)]
enum Exit {
    HyStart(Detector),
    PlusPlus(HyStart),
}

/// CUBIC's curve: W_max, cwnd_prior and the current epoch.
#[derive(Debug, Clone, PartialEq)]
struct Curve {
    /// W_max in segments; 0 before the first congestion event.
    w_max: f64,
    /// The window before the last reduction, in segments (§4.3's
    /// cwnd_prior).
    cwnd_prior: f64,
    /// The plateau of the current curve, in segments (W_max, or the window
    /// at the epoch start when that is larger).
    origin: f64,
    /// K in seconds.
    k: f64,
    /// W_est in segments.
    w_est: f64,
    /// Start of the current congestion avoidance epoch (`NONE`: no epoch).
    epoch_start_ns: u64,
    /// Carry of `(target − cwnd)·acked` not yet worth a byte of cwnd.
    remainder: u64,
}

impl Default for Curve {
    fn default() -> Self {
        NO_CURVE
    }
}

/// The curve of a sender that has none yet.
const NO_CURVE: Curve = Curve {
    w_max: 0.0,
    cwnd_prior: 0.0,
    origin: 0.0,
    k: 0.0,
    w_est: 0.0,
    epoch_start_ns: NONE,
    remainder: 0,
};

impl Cubic {
    /// Returns this state with the window and threshold set (bytes), for
    /// [`crate::take_over`].
    pub fn with_window(mut self, cwnd: u64, ssthresh: u64) -> Self {
        self.cwnd = cwnd;
        self.ssthresh = ssthresh;
        self.arm();
        self
    }

    /// Returns a sender's state with an initial window of
    /// `initial_window_segments` segments of `mss` bytes and fast
    /// convergence on.
    pub fn new(mss: u64, initial_window_segments: u64) -> Self {
        let (mss, cwnd) = initial(mss, initial_window_segments);
        Cubic {
            mss,
            cwnd,
            ssthresh: u64::MAX,
            last_ack_ns: NONE,
            srtt_ns: 0,
            curve: None,
            exit: None,
            fast_convergence: true,
            in_recovery: false,
            rto_backoff: false,
            after_rto: false,
            armed: true,
            slow_start: SlowStart::HyStart,
            reno_alpha_one: false,
        }
    }

    /// Returns the curve (the default one before any).
    fn curve(&self) -> &Curve {
        self.curve.as_deref().unwrap_or(&NO_CURVE)
    }

    /// Returns the curve, making it on first use.
    fn curve_mut(&mut self) -> &mut Curve {
        self.curve.get_or_insert_with(Box::default)
    }

    /// Chooses how slow start ends before a loss (HyStart, as Linux, by
    /// default); for a new sender.
    pub fn set_slow_start(&mut self, s: SlowStart) {
        self.slow_start = s;
        self.exit = None;
        self.arm();
    }

    /// Returns how slow start ends before a loss.
    pub fn slow_start(&self) -> SlowStart {
        self.slow_start
    }

    /// Arms the slow start exit as a fresh Linux CUBIC would (`init`):
    /// HyStart always, HyStart++ only before any reduction.
    fn arm(&mut self) {
        self.armed = match self.slow_start {
            SlowStart::HyStart => true,
            SlowStart::HyStartPlusPlus => self.ssthresh == u64::MAX,
            SlowStart::Standard => false,
        };
    }

    /// Returns the HyStart++ phase (`None`: not chosen, over, or not
    /// started yet).
    pub fn hystart_phase(&self) -> Option<Phase> {
        match self.exit.as_deref() {
            Some(Exit::PlusPlus(h)) => Some(h.phase()),
            _ => None,
        }
    }

    /// Ends the slow start exit until [`Cubic::arm`]: HyStart found its
    /// exit, or HyStart++ is over.
    fn disarm(&mut self) {
        self.armed = false;
        self.exit = None;
    }

    /// Runs HyStart's tests on an ACK in slow start; on an exit, sets
    /// `ssthresh = cwnd` and returns true.
    fn hystart(&mut self, ev: &AckEvent) -> bool {
        let s = Sender {
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            mss: self.mss,
            srtt_ns: self.srtt_ns,
        };
        let b = self
            .exit
            .get_or_insert_with(|| Box::new(Exit::HyStart(Detector::default())));
        if !matches!(**b, Exit::HyStart(_)) {
            **b = Exit::HyStart(Detector::default());
        }
        let Exit::HyStart(d) = &mut **b else {
            return false;
        };
        if d.on_ack(ev, &s).is_none() {
            return false;
        }
        // `tp->snd_ssthresh = tcp_snd_cwnd(tp)`.
        self.ssthresh = self.cwnd;
        self.disarm();
        true
    }

    /// Returns how HyStart++ grows the window on this slow start ACK.
    fn hystart_plus_plus(&mut self, ev: &AckEvent) -> Growth {
        let b = self
            .exit
            .get_or_insert_with(|| Box::new(Exit::PlusPlus(HyStart::default())));
        if !matches!(**b, Exit::PlusPlus(_)) {
            **b = Exit::PlusPlus(HyStart::default());
        }
        match &mut **b {
            Exit::PlusPlus(h) => h.on_ack(ev.acked_bytes, ev.rtt_ns, ev.in_flight_bytes),
            Exit::HyStart(_) => Growth::Full,
        }
    }

    /// Turns on or off RFC 9438 §4.3's "Once W_est has grown to reach the
    /// cwnd at the time of most recently setting ssthresh ... the sender
    /// SHOULD set α_cubic to 1". It is off by default, as in Linux, whose
    /// Reno-friendly estimate grows at α_cubic throughout.
    pub fn set_reno_alpha_one(&mut self, on: bool) {
        self.reno_alpha_one = on;
    }

    /// Turns fast convergence (§4.7) on or off; it is on by default.
    pub fn set_fast_convergence(&mut self, on: bool) {
        self.fast_convergence = on;
    }

    /// Returns W_max in segments (0 before the first congestion event).
    pub fn w_max(&self) -> f64 {
        self.curve().w_max
    }

    /// Returns K, in seconds, of the current epoch.
    pub fn k_seconds(&self) -> f64 {
        self.curve().k
    }

    /// Returns the start of the current congestion avoidance epoch, if one
    /// has started since the last congestion event.
    pub fn epoch_start_ns(&self) -> Option<u64> {
        let start = self.curve().epoch_start_ns;
        (start != NONE).then_some(start)
    }

    /// Returns W_est, the Reno-friendly estimate, in segments.
    pub fn w_est(&self) -> f64 {
        self.curve().w_est
    }

    /// Returns W_cubic(t) in segments for `t` seconds into the epoch.
    pub fn w_cubic(&self, t: f64) -> f64 {
        let c = self.curve();
        let d = t - c.k;
        C * d * d * d + c.origin
    }

    fn segments(&self, bytes: u64) -> f64 {
        bytes as f64 / self.mss as f64
    }

    fn bytes(&self, segments: f64) -> u64 {
        // `as` saturates at 0 and u64::MAX and maps NaN to 0.
        (segments * self.mss as f64) as u64
    }

    fn start_epoch(&mut self, now_ns: u64) {
        let cwnd_epoch = self.segments(self.cwnd);
        let after_rto = std::mem::replace(&mut self.after_rto, false);
        let c = self.curve_mut();
        c.epoch_start_ns = now_ns;
        c.remainder = 0;
        if after_rto {
            // §4.8: "K is set to 0, and W_max is set to the congestion window
            // size at the beginning of the current congestion avoidance stage".
            c.w_max = cwnd_epoch;
        }
        if c.w_max > cwnd_epoch {
            c.k = cbrt((c.w_max - cwnd_epoch) / C);
            c.origin = c.w_max;
        } else {
            c.k = 0.0;
            c.origin = cwnd_epoch;
        }
        // §4.3: W_est starts at cwnd_epoch.
        c.w_est = cwnd_epoch;
    }

    fn update_srtt(&mut self, rtt_ns: Option<u64>) {
        if let Some(r) = rtt_ns {
            self.srtt_ns = if self.srtt_ns == 0 {
                r
            } else {
                // RFC 6298 §2.3: SRTT <- 7/8 SRTT + 1/8 R'.
                ((u128::from(self.srtt_ns) * 7 + u128::from(r)) / 8) as u64
            };
        }
    }

    /// Grows cwnd for one ACK in congestion avoidance (§4.2–§4.5).
    fn avoid(&mut self, ev: &AckEvent) {
        if self.curve().epoch_start_ns == NONE {
            self.start_epoch(ev.now_ns);
        }
        let start = self.curve().epoch_start_ns;
        let t = ev.now_ns.saturating_sub(start) as f64 / NS_PER_S;
        let rtt_ns = if self.srtt_ns > 0 {
            self.srtt_ns
        } else {
            ev.min_rtt_ns
        };
        let rtt = rtt_ns as f64 / NS_PER_S;
        let cwnd_seg = self.segments(self.cwnd);
        let acked_seg = self.segments(ev.acked_bytes);
        let alpha_one = self.reno_alpha_one;
        // §4.3: Reno-friendly estimate.
        let c = self.curve_mut();
        let alpha = if alpha_one && c.w_est >= c.cwnd_prior {
            1.0
        } else {
            ALPHA
        };
        c.w_est += alpha * acked_seg / cwnd_seg;
        let w_est = c.w_est;
        if self.w_cubic(t) < w_est {
            self.cwnd = self.cwnd.max(self.bytes(w_est));
            self.curve_mut().remainder = 0;
            return;
        }
        // §4.4/§4.5: concave and convex regions.
        let max = self.cwnd.saturating_add(self.cwnd / 2);
        let target = self.bytes(self.w_cubic(t + rtt)).clamp(self.cwnd, max);
        let cwnd = u128::from(self.cwnd);
        let carry = u128::from(self.curve().remainder)
            + u128::from(target - self.cwnd) * u128::from(ev.acked_bytes);
        let inc = carry / cwnd;
        // Below `cwnd`, so it fits in 64 bits (stored so: 16 bytes less per
        // connection than a u128 and its alignment).
        self.curve_mut().remainder = (carry % cwnd) as u64;
        self.cwnd = self
            .cwnd
            .saturating_add(u64::try_from(inc).unwrap_or(u64::MAX));
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn window(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn on_ack(&mut self, ev: &AckEvent) {
        self.update_srtt(ev.rtt_ns);
        let last = std::mem::replace(&mut self.last_ack_ns, ev.now_ns);
        if ev.acked_bytes == 0 {
            return;
        }
        if let Some(Exit::HyStart(d)) = self.exit.as_deref_mut() {
            // HyStart's delay_min takes every data ACK's sample.
            d.note_rtt(ev.rtt_ns);
        }
        self.rto_backoff = false;
        if self.in_recovery {
            return;
        }
        // Linux runs HyStart from `cubictcp_acked`, before and whether or
        // not the window grows; an exit makes this ACK one of congestion
        // avoidance.
        if self.armed && self.slow_start == SlowStart::HyStart && self.cwnd < self.ssthresh {
            self.hystart(ev);
        }
        if ev.app_limited {
            // §5.8: no growth while application-limited, and that time does
            // not count towards t (Linux shifts epoch_start likewise).
            if let Some(c) = self.curve.as_deref_mut() {
                if c.epoch_start_ns != NONE && last != NONE {
                    c.epoch_start_ns = c
                        .epoch_start_ns
                        .saturating_add(ev.now_ns.saturating_sub(last))
                        .min(ev.now_ns);
                }
            }
            return;
        }
        if self.cwnd < self.ssthresh {
            let inc = slow_start_increase(ev.acked_bytes, self.mss);
            let growth = if self.armed && self.slow_start == SlowStart::HyStartPlusPlus {
                self.hystart_plus_plus(ev)
            } else {
                Growth::Full
            };
            match growth {
                Growth::Full => self.cwnd = self.cwnd.saturating_add(inc),
                Growth::Conservative => {
                    self.cwnd = self.cwnd.saturating_add(inc / CSS_GROWTH_DIVISOR)
                }
                // RFC 9406 §4.2: "enter congestion avoidance by setting the
                // ssthresh to the current cwnd".
                Growth::Exit => {
                    self.ssthresh = self.cwnd;
                    self.disarm();
                }
            }
        } else {
            self.avoid(ev);
        }
    }

    fn on_congestion(&mut self, _now_ns: u64, _in_flight_bytes: u64) {
        // Whole segments, as Linux's `last_max_cwnd` (see `reduce`).
        let cwnd_seg = (self.cwnd / self.mss) as f64;
        let fast_convergence = self.fast_convergence;
        let c = self.curve_mut();
        // §4.7: fast convergence.
        c.w_max = if fast_convergence && cwnd_seg < c.w_max {
            cwnd_seg * (1.0 + BETA) / 2.0
        } else {
            cwnd_seg
        };
        c.cwnd_prior = cwnd_seg;
        c.epoch_start_ns = NONE;
        c.remainder = 0;
        self.ssthresh = reduce(self.cwnd, self.mss);
        self.cwnd = self.ssthresh;
        self.after_rto = false;
        self.in_recovery = true;
        // HyStart++ ends at a loss (RFC 9406 §4.2). Linux's HyStart keeps
        // its state: if it had not found its exit, it watches again should
        // an undo return the sender to slow start.
        if self.slow_start != SlowStart::HyStart {
            self.disarm();
        }
    }

    fn on_recovery_end(&mut self, _now_ns: u64) {
        self.in_recovery = false;
    }

    fn on_rto(&mut self, _now_ns: u64, _in_flight_bytes: u64) {
        if !self.rto_backoff {
            // §4.8: "sets ssthresh using β_cubic (same as in Section 4.6)".
            self.curve_mut().cwnd_prior = self.segments(self.cwnd);
            self.ssthresh = reduce(self.cwnd, self.mss);
        }
        if let Some(c) = self.curve.as_deref_mut() {
            c.epoch_start_ns = NONE;
            c.remainder = 0;
        }
        self.rto_backoff = true;
        self.cwnd = self.mss;
        self.after_rto = true;
        self.in_recovery = false;
        // Linux resets HyStart on entering Loss (`cubictcp_state`), so the
        // slow start after a timeout has it again; HyStart++ only runs in
        // the initial slow start (RFC 9406 §4.4 leaves later ones open).
        self.exit = None;
        self.armed = self.slow_start == SlowStart::HyStart;
    }

    /// As Linux (6.6), whose CUBIC undoes with `tcp_reno_undo_cwnd`: the
    /// window and threshold go back up to their values before the
    /// reduction, and nothing else of the curve is restored. W_max stays
    /// as the reduction set it (Linux's `last_max_cwnd`, set by
    /// `cubictcp_recalc_ssthresh` and not put back), the epoch stays ended
    /// (`epoch_start = 0`), so the next ACK in congestion avoidance starts
    /// a new one from the restored window, with K = 0 when that is at or
    /// above W_max. After a timeout W_max is forgotten as before
    /// (`bictcp_reset` on entering Loss). HyStart stays as it was (armed
    /// if it had not found its exit); HyStart++ stays off.
    fn undo(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        self.cwnd = self.cwnd.max(prior_cwnd);
        self.ssthresh = self.ssthresh.max(prior_ssthresh);
        if let Some(c) = self.curve.as_deref_mut() {
            c.epoch_start_ns = NONE;
            c.remainder = 0;
        }
        self.in_recovery = false;
        self.rto_backoff = false;
    }
}

/// Returns `max(cwnd · β_cubic, 2·SMSS)` (§4.6) in whole segments, as
/// Linux's `cubictcp_recalc_ssthresh` (`max(cwnd · beta / 1024, 2)`
/// packets): the fraction of a segment in `cwnd`, never sent, is dropped
/// first, and the product rounds down to a segment.
fn reduce(cwnd: u64, mss: u64) -> u64 {
    let segs = cwnd / mss;
    let reduced = u128::from(segs) * u128::from(BETA_NUM) / u128::from(BETA_DEN);
    (reduced as u64).max(2).saturating_mul(mss)
}

/// Returns the real cube root of `x`.
///
/// Uses only IEEE-754 basic operations (correctly rounded on every
/// platform), unlike `f64::cbrt`, which calls the platform's `libm`.
pub fn cbrt(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    if x < 0.0 {
        return -cbrt(-x);
    }
    // Scale into [1, 8) by powers of 8 so the iteration starts close.
    let mut m = x;
    let mut scale = 1.0;
    while m >= 8.0 {
        m /= 8.0;
        scale *= 2.0;
    }
    while m < 1.0 {
        m *= 8.0;
        scale /= 2.0;
    }
    // m in [1, 8): the root is in [1, 2). Newton's method converges
    // quadratically from 1.5; eight steps reach the last bit.
    let mut y = 1.5;
    for _ in 0..8 {
        y -= (y * y * y - m) / (3.0 * y * y);
    }
    y * scale
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{Path, MSS};

    const RTT: u64 = 100_000_000;

    /// A sender that just lost at `w_max` segments and has seen one ACK in
    /// congestion avoidance.
    fn after_loss_at(w_max: u64, path: &mut Path) -> Cubic {
        let mut cc = Cubic::new(MSS, w_max);
        cc.on_congestion(0, w_max * MSS);
        cc.on_recovery_end(0);
        path.now = RTT;
        cc
    }

    /// Slow start over a drop-tail bottleneck, as a fluid model: a window
    /// of W segments keeps W − BDP of them queued (the ACK clock refills
    /// the queue as it drains), so the ACKs of a round see an RTT of base +
    /// (W_previous − BDP) × the per-segment service time; a window beyond
    /// BDP + `buffer` drops the excess. The ACKs of a round come one
    /// service time apart from one base RTT after the round's start.
    /// Returns (window at the end of slow start in segments: ssthresh when
    /// an exit test ended it, segments dropped, an exit test ended it).
    fn slow_start_through(how: SlowStart, bdp: u64, buffer: u64) -> (u64, u64, bool) {
        let mut cc = Cubic::new(MSS, 10);
        cc.set_slow_start(how);
        let (base, per_seg) = (20_000_000u64, 20_000_000 / bdp);
        let mut now = 0;
        let mut prev = 0;
        for _ in 0..30 {
            let segs = cc.window() / MSS;
            if segs > bdp + buffer {
                cc.on_congestion(now, segs * MSS);
                return (segs, segs - bdp - buffer, false);
            }
            let queued = u64::min(prev, segs).saturating_sub(bdp);
            for k in 0..segs {
                let ev = AckEvent {
                    now_ns: now + base + k * per_seg,
                    acked_bytes: MSS,
                    rtt_ns: Some(base + queued * per_seg),
                    min_rtt_ns: base,
                    in_flight_bytes: (segs - k) * MSS,
                    app_limited: false,
                };
                cc.on_ack(&ev);
            }
            now += base + queued * per_seg;
            prev = segs;
            if !cc.in_slow_start() {
                return (cc.ssthresh() / MSS, 0, true);
            }
        }
        unreachable!("slow start never ended");
    }

    /// RFC 9406 §1: slow start "can overshoot the ideal send rate ... and
    /// cause significant packet loss"; HyStart++ leaves it when the RTT
    /// rises. With a 10-BDP buffer (BDP 200 segments) plain slow start
    /// doubles to 2560 segments and loses 360; HyStart++ sees the RTT rise
    /// by 12 ms (threshold max(4 ms, min(20/8 ms, 16 ms)) = 4 ms) in the
    /// round of 640 segments, grows ×1.25 per round in CSS for 5 rounds and
    /// enters congestion avoidance without a loss. (CSS may triple the
    /// window, so with a buffer under about 8 BDP in this model the loss
    /// comes during CSS, smaller than plain slow start's.)
    #[test]
    fn hystart_leaves_slow_start_before_a_deep_buffer_overflows() {
        let (bdp, buffer) = (200, 2000);
        let plain = slow_start_through(SlowStart::Standard, bdp, buffer);
        assert_eq!(plain, (2560, 360, false), "plain slow start overshoots");
        let (w, lost, by_hystart) = slow_start_through(SlowStart::HyStartPlusPlus, bdp, buffer);
        assert!(by_hystart && lost == 0, "{w} segments, {lost} lost");
        assert!(w > bdp && w <= bdp + buffer, "window {w} segments");
        println!("HyStart++: {w} segments, no loss; plain: {plain:?}");
    }

    /// Linux's HyStart in the same model with a buffer of one BDP (200
    /// segments, 20 ms base RTT, so one segment per 0.1 ms): the rounds
    /// of 10, 20, 40 and 80 segments end their ACK trains within 8 ms,
    /// under the threshold (20 ms + the 1 ms cushion) / 2 = 10.5 ms; in
    /// the round of 160 the ACK 10.6 ms after the first (the 107th) is
    /// past it, when the window is 160 + 106 = 266 segments: ssthresh =
    /// 266, BDP < 266 ≤ BDP + buffer, no loss. Plain slow start doubles
    /// to 640 and loses 240.
    #[test]
    fn hystart_leaves_slow_start_when_the_ack_train_spans_half_the_rtt() {
        let (bdp, buffer) = (200, 200);
        let plain = slow_start_through(SlowStart::Standard, bdp, buffer);
        assert_eq!(plain, (640, 240, false), "plain slow start overshoots");
        assert_eq!(
            slow_start_through(SlowStart::HyStart, bdp, buffer),
            (266, 0, true)
        );
    }

    /// HyStart is the default; it watches the slow start after a timeout
    /// again (Linux resets it on entering Loss), HyStart++ does not.
    #[test]
    fn hystart_is_the_default_and_rearms_after_a_timeout() {
        let mut cc = Cubic::new(MSS, 10);
        assert_eq!(cc.slow_start(), SlowStart::HyStart);
        let (bdp, buffer) = (200, 200);
        assert_eq!(slow_start_through(SlowStart::HyStart, bdp, buffer).0, 266);
        cc.on_rto(0, 10 * MSS);
        assert!(cc.armed);
        let mut pp = Cubic::new(MSS, 10);
        pp.set_slow_start(SlowStart::HyStartPlusPlus);
        pp.on_rto(0, 10 * MSS);
        assert!(!pp.armed);
    }

    #[test]
    fn cube_root_matches_the_platform_within_an_ulp_or_two() {
        for &x in &[
            1e-12, 0.001, 0.5, 1.0, 2.0, 7.999, 8.0, 27.0, 750.0, 1e6, 1.23e15, 3e300,
        ] {
            let ours = cbrt(x);
            assert!(((ours - x.cbrt()) / x.cbrt()).abs() < 1e-15, "{x}: {ours}");
            assert_eq!(cbrt(-x), -ours);
        }
        assert_eq!(cbrt(0.0), 0.0);
    }

    #[test]
    fn k_equals_the_closed_form() {
        let mut path = Path::new(RTT);
        let mut cc = after_loss_at(1000, &mut path);
        path.round(&mut cc);
        let closed = (1000.0 * (1.0 - BETA) / C).cbrt();
        assert!(
            (cc.k_seconds() - closed).abs() < 1e-9,
            "{} vs {closed}",
            cc.k_seconds()
        );
        assert_eq!(cc.epoch_start_ns(), Some(RTT + RTT / 700));
    }

    #[test]
    fn multiplicative_decrease_is_exactly_beta() {
        let mut cc = Cubic::new(MSS, 100);
        cc.on_congestion(0, 100 * MSS);
        assert_eq!(cc.window(), 70 * MSS);
        assert_eq!(cc.ssthresh(), 70 * MSS);
        assert_eq!(cc.w_max(), 100.0);
        assert!(!cc.in_slow_start());
    }

    #[test]
    fn fast_convergence_lowers_w_max_by_one_plus_beta_over_two() {
        let mut cc = Cubic::new(MSS, 1000);
        cc.on_congestion(0, 1000 * MSS);
        cc.on_recovery_end(0);
        cc.on_congestion(1, 700 * MSS);
        assert_eq!(cc.w_max(), 700.0 * (1.0 + BETA) / 2.0);
        assert_eq!(cc.window(), 490 * MSS);

        let mut slow = Cubic::new(MSS, 1000);
        slow.set_fast_convergence(false);
        slow.on_congestion(0, 1000 * MSS);
        slow.on_congestion(1, 700 * MSS);
        assert_eq!(slow.w_max(), 700.0);
    }

    #[test]
    fn window_follows_the_cubic_curve_in_the_concave_and_convex_regions() {
        let mut path = Path::new(RTT);
        let mut cc = after_loss_at(1000, &mut path);
        let (mut concave, mut convex) = (0, 0);
        let mut worst: f64 = 0.0;
        for _ in 0..200 {
            path.round(&mut cc);
            let start = cc.epoch_start_ns().unwrap();
            let t = (path.now - start) as f64 / 1e9;
            let expected = C * (t - cc.k_seconds()).powi(3) + 1000.0;
            let got = cc.window() as f64 / MSS as f64;
            worst = worst.max((got - expected).abs());
            assert!(
                (got - expected).abs() <= 1.0,
                "t = {t}: window {got}, curve {expected}"
            );
            if t < cc.k_seconds() {
                concave += 1;
            } else {
                convex += 1;
            }
        }
        assert!(concave > 80 && convex > 80, "{concave} {convex}");
        // In practice it tracks the curve far closer than one segment.
        assert!(worst < 0.5, "worst deviation {worst} segments");
        assert!(cc.window() > 1300 * MSS);
    }

    #[test]
    fn small_windows_grow_like_reno_in_the_reno_friendly_region() {
        let mut path = Path::new(1_000_000);
        let mut cc = Cubic::new(MSS, 10);
        cc.on_congestion(0, 10 * MSS);
        cc.on_recovery_end(0);
        assert_eq!(cc.window(), 7 * MSS);
        // K = ∛(3/0.4) ≈ 1.96 s, i.e. ~2000 RTTs: the curve barely moves,
        // W_est gains α_cubic = 0.53 segment per RTT (as Linux, also past
        // cwnd_prior), α_cubic·⌊w⌋/w here since the path acknowledges the
        // whole segments of w: about 22 after 30 rounds (30 with §4.3's
        // α_cubic = 1, `rfc_alpha_one_past_cwnd_prior_grows_…`).
        path.rounds(&mut cc, 30);
        let w = cc.window() as f64 / MSS as f64;
        assert!((21.0..23.0).contains(&w), "{w}");
        let t = (path.now - cc.epoch_start_ns().unwrap()) as f64 / 1e9;
        assert!(cc.w_cubic(t) < 8.0);
    }

    #[test]
    fn rfc_alpha_one_past_cwnd_prior_grows_a_segment_per_rtt() {
        let mut path = Path::new(1_000_000);
        let mut cc = Cubic::new(MSS, 10);
        cc.set_reno_alpha_one(true);
        cc.on_congestion(0, 10 * MSS);
        cc.on_recovery_end(0);
        // §4.3: α_cubic until W_est reaches cwnd_prior = 10 (3/0.53 ≈ 5.7
        // rounds), then 1 per RTT: 10 + (30 − 5.7) ≈ 34.
        path.rounds(&mut cc, 30);
        let w = cc.window() / MSS;
        assert!((32..=35).contains(&w), "{w}");
    }

    #[test]
    fn the_reduction_counts_whole_segments_as_linux() {
        // 12.9 segments send as 12: Linux's cwnd is 12 packets and its
        // ssthresh ⌊12 · 717/1024⌋ = 8, not ⌊12.9 · 0.7⌋ = 9.
        let mut cc = Cubic::new(MSS, 10).with_window(12 * MSS + 9 * MSS / 10, 100 * MSS);
        cc.on_congestion(0, 12 * MSS);
        assert_eq!(cc.ssthresh(), 8 * MSS);
        assert_eq!(cc.w_max(), 12.0);
        let mut tiny = Cubic::new(MSS, 2);
        tiny.on_congestion(0, 2 * MSS);
        assert_eq!(tiny.window(), 2 * MSS, "at least 2 segments");
    }

    #[test]
    fn after_an_rto_the_first_epoch_has_k_zero_at_the_current_window() {
        let mut path = Path::new(RTT);
        let mut cc = Cubic::new(MSS, 100);
        cc.on_rto(0, 100 * MSS);
        assert_eq!(cc.ssthresh(), 70 * MSS);
        assert_eq!(cc.window(), MSS);
        while cc.in_slow_start() {
            path.round(&mut cc);
        }
        path.round(&mut cc);
        assert_eq!(cc.k_seconds(), 0.0);
        assert!(cc.w_max() >= 70.0 && cc.w_max() < 75.0, "{}", cc.w_max());
    }

    #[test]
    fn app_limited_time_does_not_count_in_the_epoch() {
        let mut path = Path::new(RTT);
        let mut cc = after_loss_at(1000, &mut path);
        path.round(&mut cc);
        let start = cc.epoch_start_ns().unwrap();
        path.app_limited = true;
        path.rounds(&mut cc, 10);
        assert_eq!(cc.epoch_start_ns(), Some(start + 10 * RTT));
    }
}
