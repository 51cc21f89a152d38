//! TCP congestion control: NewReno, CUBIC, Compound TCP, DCTCP and BBR.
//!
//! Each algorithm is a small state machine that the TCP engine feeds with
//! what it observes (ACKs, loss detection, timeouts) and asks for the
//! congestion window. The algorithms do no I/O and read no clock: the engine
//! passes the current virtual time, in integer nanoseconds, with every call.
//!
//! ```
//! use elvis_tcpcc::{AckEvent, Algorithm, CongestionControl};
//! const MSS: u64 = 1448;
//! let mut cc = elvis_tcpcc::new(Algorithm::NewReno, MSS, 10);
//! assert_eq!(cc.window(), 10 * MSS);
//! // One ACK for one full segment in slow start adds one segment.
//! cc.on_ack(&AckEvent {
//!     now_ns: 100_000_000,
//!     acked_bytes: MSS,
//!     rtt_ns: Some(100_000_000),
//!     min_rtt_ns: 100_000_000,
//!     in_flight_bytes: 10 * MSS,
//!     app_limited: false,
//! });
//! assert_eq!(cc.window(), 11 * MSS);
//! // Three duplicate ACKs: the window halves (NewReno's beta = 1/2).
//! cc.on_congestion(110_000_000, 11 * MSS);
//! assert_eq!(cc.window(), 11 * MSS / 2);
//! cc.on_recovery_end(200_000_000);
//! // A retransmission timeout: back to one segment.
//! cc.on_rto(1_000_000_000, 5 * MSS);
//! assert_eq!(cc.window(), MSS);
//! ```
//!
//! # Contract with the TCP engine
//! - **Units.** Windows, thresholds and counts are bytes; times are `u64`
//!   nanoseconds and must not go backwards across calls.
//! - **ACKs.** Call [`CongestionControl::on_ack`] for every ACK that
//!   acknowledges new data (cumulatively or, with SACK, newly SACKed bytes),
//!   with `acked_bytes` = bytes newly acknowledged by this ACK. Calls with
//!   `acked_bytes == 0` (pure duplicate ACKs) are ignored, so the engine may
//!   make them. The algorithms do their own byte counting (RFC 3465).
//! - **RTT.** The engine measures RTT (Karn-filtered samples in
//!   [`AckEvent::rtt_ns`]) and tracks the minimum RTT
//!   ([`AckEvent::min_rtt_ns`], 0 when none yet). CUBIC keeps its own
//!   smoothed RTT from the samples (RFC 6298 gains); Compound uses
//!   `min_rtt_ns` as baseRTT, falling back to the minimum of the samples it
//!   has seen.
//! - **Recovery.** Call [`CongestionControl::on_congestion`] once when
//!   entering loss recovery (fast retransmit), and
//!   [`CongestionControl::on_recovery_end`] when the recovery point is
//!   acknowledged. **The window does not grow between the two**, so the
//!   engine must report the end of recovery. The engine does not inflate
//!   the window with duplicate ACKs (RFC 5681 §3.2 step 4): it is expected
//!   to run RFC 6675-style recovery, sending while `pipe < window()`.
//! - **Undo.** When the engine learns that a reduction was spurious (DSACKs
//!   for every retransmission of the episode, RFC 3708; an ACK echoing a
//!   timestamp older than the first retransmission, RFC 3522), it calls
//!   [`CongestionControl::undo`] with the window and [`undo_ssthresh`]
//!   it noted before the reduction (Linux's `prior_cwnd` and
//!   `prior_ssthresh`). This ends the episode like
//!   [`CongestionControl::on_recovery_end`].
//! - **Timeouts.** Call [`CongestionControl::on_rto`] at every RTO expiry;
//!   it also ends any recovery episode. A second RTO before any new data is
//!   acknowledged keeps `ssthresh` (RFC 5681 §3.1: "the value of ssthresh
//!   is held constant"), so backed-off timeouts do not collapse it to 2 MSS.
//! - **Application-limited.** Set [`AckEvent::app_limited`] when the sender
//!   was not using the window fully when it sent the data being ACKed. The
//!   window does not grow on such ACKs (RFC 7661 §4.3, RFC 9438 §5.8), and
//!   CUBIC does not count that time in its epoch.
//! - **Initial state.** `cwnd = initial_window_segments * mss` (RFC 6928
//!   allows 10), `ssthresh = u64::MAX` ("arbitrarily high", RFC 5681 §3.1).
//! - **Model-based algorithms (BBR).** An algorithm whose
//!   [`CongestionControl::wants_rate_samples`] is true also gets a
//!   [`RateSample`] on every ACK that delivers data, in or out of
//!   recovery (draft-cheng-iccrg-delivery-rate-estimation), and may ask
//!   for a pacing rate ([`CongestionControl::pacing_rate`]) that the
//!   sender then honours. The other algorithms keep the defaults (no
//!   samples, no pacing), so the engine does for them exactly what it did
//!   before these hooks existed.
//!
//! # Determinism
//! Every state change is a function of the arguments. NewReno and Compound's
//! loss-based part use integer arithmetic only. CUBIC's curve and
//! Compound's `win^0.75` are computed in `f64` from integer inputs using
//! only IEEE-754 basic operations and `sqrt` (correctly rounded everywhere)
//! and a cube root written here with those operations, not the platform's
//! `libm`; results are therefore the same on every platform. Windows are
//! always converted back to whole bytes.
//!
//! # Gaps
//! - A slow start exit only in CUBIC, as in Linux: HyStart
//!   ([`hystart_classic`], Linux's, the default) or HyStart++ (RFC 9406,
//!   [`hystart`], only in the initial slow start), chosen with
//!   [`SlowStart`].
//! - ECN ([`CongestionControl::on_ecn`]) reduces as a loss does; RFC 9438
//!   §4.6's 1-MSS floor for ECN-only reductions is not applied (the
//!   loss floor of 2 MSS is).
//! - Undo restores the window and threshold as Linux does, not the whole
//!   state RFC 9438 §4.9 lists for CUBIC (W_max, K, epoch); no F-RTO
//!   (RFC 5682).
//! - No congestion window validation after idle periods (RFC 7661 §4.3 is
//!   approximated by not growing on app-limited ACKs).
//! - CUBIC keeps α_cubic = 3(1 − β)/(1 + β) for the whole epoch, as Linux;
//!   RFC 9438 §4.3's α_cubic = 1 past cwnd_prior is opt-in
//!   ([`Cubic::set_reno_alpha_one`]).
#![forbid(unsafe_code)]

use std::fmt;
use std::str::FromStr;

pub mod bbr;
pub mod compound;
pub mod cubic;
pub mod dctcp;
pub mod hystart;
pub mod hystart_classic;
pub mod newreno;

#[cfg(test)]
mod testutil;

pub use bbr::Bbr;
pub use compound::Compound;
pub use cubic::Cubic;
pub use dctcp::Dctcp;
pub use newreno::NewReno;

/// What the sender tells the algorithm about one ACK. Sizes are bytes,
/// times nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AckEvent {
    /// The current virtual time.
    pub now_ns: u64,
    /// Bytes newly acknowledged by this ACK (cumulative advance plus newly
    /// SACKed bytes).
    pub acked_bytes: u64,
    /// The RTT sample this ACK gives, Karn-filtered (none for ACKs of
    /// retransmitted data).
    pub rtt_ns: Option<u64>,
    /// The minimum RTT seen so far on the connection, 0 if none.
    pub min_rtt_ns: u64,
    /// Bytes in flight before this ACK was processed.
    pub in_flight_bytes: u64,
    /// The sender was application-limited (not cwnd-limited) when it sent
    /// the data this ACK covers.
    pub app_limited: bool,
}

/// One delivery-rate sample, taken by the sender on an ACK
/// (draft-cheng-iccrg-delivery-rate-estimation-02 §3.3, Linux's
/// `struct rate_sample`). Sizes are bytes, times nanoseconds. "The
/// packet" is the most recently sent packet this ACK delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateSample {
    /// The current virtual time.
    pub now_ns: u64,
    /// Bytes delivered (cumulatively or by SACK) between the packet's
    /// transmission and this ACK (`C.delivered - P.delivered`); 0 when the
    /// sample is not valid.
    pub delivered: u64,
    /// The sampling interval, `max(send_elapsed, ack_elapsed)`; 0 when the
    /// sample is not valid (no packet delivered, or an interval shorter
    /// than the minimum RTT, §3.3).
    pub interval_ns: u64,
    /// `P.delivered`: the connection's delivered count when the packet was
    /// sent (BBR counts round trips with it).
    pub prior_delivered: u64,
    /// `C.delivered` after this ACK.
    pub total_delivered: u64,
    /// Bytes this ACK newly delivered (cumulative advance plus newly
    /// SACKed bytes).
    pub newly_acked: u64,
    /// Bytes newly marked lost since the previous sample.
    pub newly_lost: u64,
    /// Bytes marked lost between the packet's transmission and this ACK
    /// (`C.lost - P.lost`).
    pub lost: u64,
    /// Bytes in flight when the packet was sent, the packet included.
    pub tx_in_flight: u64,
    /// Bytes in flight after this ACK.
    pub in_flight: u64,
    /// The packet was sent while the sender was application-limited
    /// (§3.4: the sample may underestimate the path's rate).
    pub is_app_limited: bool,
    /// The sender was limited by the congestion window (Linux's
    /// `tcp_is_cwnd_limited`) before this ACK.
    pub is_cwnd_limited: bool,
    /// The packet's round-trip time, none if it was retransmitted.
    pub rtt_ns: Option<u64>,
}

impl RateSample {
    /// Returns the delivery rate in bytes per second, if the sample is
    /// valid.
    pub fn rate(&self) -> Option<u64> {
        (self.interval_ns > 0).then(|| {
            (u128::from(self.delivered) * 1_000_000_000 / u128::from(self.interval_ns)) as u64
        })
    }
}

/// What a model-based algorithm estimates, for reports and traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ModelInfo {
    /// The state's name (`startup`, `drain`, `probe_bw_down`, …).
    pub state: &'static str,
    /// The bottleneck bandwidth estimate, bytes per second.
    pub bw: u64,
    /// The minimum RTT estimate, ns (0: none yet).
    pub min_rtt_ns: u64,
    /// The pacing rate, bytes per second.
    pub pacing_rate: u64,
}

/// What the sender tells an algorithm that reads ECN feedback per ACK
/// ([`EcnFeedback::Dctcp`]) about one ACK: sequence numbers are the raw
/// 32-bit TCP ones (compared modulo 2^32).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EcnAck {
    /// The current virtual time.
    pub now_ns: u64,
    /// Bytes this ACK newly acknowledged cumulatively (SACK not counted).
    pub acked_bytes: u64,
    /// The ACK carried ECE.
    pub ece: bool,
    /// The ACK's acknowledgement number (`SEG.ACK`).
    pub ack: u32,
    /// The sender's `SND.NXT` (highest sequence number sent, plus one).
    pub snd_nxt: u32,
}

/// How an algorithm wants ECN run on its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EcnFeedback {
    /// RFC 3168: ECN as the host's setting says; the receiver latches ECE
    /// until CWR; the sender reduces once per window.
    #[default]
    Rfc3168,
    /// RFC 8257: always ask for ECN; the receiver echoes each packet's CE
    /// state (ACKing at once when it changes); every ACK is reported
    /// through [`CongestionControl::on_ecn_ack`].
    Dctcp,
}

/// A congestion control algorithm: the window the TCP engine may have in
/// flight, updated by ACKs, losses and timeouts.
pub trait CongestionControl: fmt::Debug {
    /// Returns the algorithm's name, as [`Algorithm`]'s `Display` writes it.
    fn name(&self) -> &'static str;
    /// Returns the congestion window in bytes (for Compound: cwnd + dwnd).
    /// Never zero.
    fn window(&self) -> u64;
    /// Returns the slow start threshold in bytes.
    fn ssthresh(&self) -> u64;
    /// Updates the window for an ACK of new data.
    fn on_ack(&mut self, ev: &AckEvent);
    /// Reduces the window on fast retransmit / entering loss recovery (3
    /// duplicate ACKs or SACK loss detection), once per recovery episode.
    fn on_congestion(&mut self, now_ns: u64, in_flight_bytes: u64);
    /// Notes the end of loss recovery (the recovery point was acknowledged);
    /// the window may grow again.
    fn on_recovery_end(&mut self, now_ns: u64) {
        let _ = now_ns;
    }
    /// Reduces the window in answer to an ECN echo (RFC 3168 §6.1.2: "the
    /// congestion window is halved and the slow-start threshold is
    /// reduced", as for a loss but with nothing to retransmit), at most once
    /// per window of data; the engine calls
    /// [`CongestionControl::on_recovery_end`] when the data in flight at
    /// the reduction is acknowledged. The default is the loss response,
    /// which RFC 9438 §4.6 and RFC 8312 §4.6 also prescribe for CUBIC.
    fn on_ecn(&mut self, now_ns: u64, in_flight_bytes: u64) {
        self.on_congestion(now_ns, in_flight_bytes);
    }
    /// Collapses the window on a retransmission timeout.
    fn on_rto(&mut self, now_ns: u64, in_flight_bytes: u64);
    /// Undoes a window reduction the engine found spurious (the
    /// retransmissions of the episode were all reported duplicates by
    /// DSACK, or a timestamp echo showed that the original transmission
    /// arrived; Linux's `tcp_undo_cwnd_reduction`, RFC 3522, RFC 3708).
    /// `prior_cwnd` and `prior_ssthresh` are [`CongestionControl::window`]
    /// and [`undo_ssthresh`] taken just before the reduction. As Linux's
    /// `tcp_reno_undo_cwnd`, which CUBIC also uses, the window becomes
    /// `max(window, prior_cwnd)` and the threshold `max(ssthresh,
    /// prior_ssthresh)`; the episode is over (the window may grow again).
    /// Each algorithm documents what else of its state it restores.
    fn undo(&mut self, prior_cwnd: u64, prior_ssthresh: u64);
    /// Returns whether the sender is in slow start.
    fn in_slow_start(&self) -> bool {
        self.window() < self.ssthresh()
    }
    /// Returns true when the algorithm wants a [`RateSample`] per ACK
    /// (the sender then keeps per-packet delivery stamps). Default: false.
    fn wants_rate_samples(&self) -> bool {
        false
    }
    /// Takes the delivery-rate sample of an ACK that delivered data (called
    /// after [`CongestionControl::on_ack`], in recovery too). Default:
    /// ignored.
    fn on_rate_sample(&mut self, rs: &RateSample) {
        let _ = rs;
    }
    /// Returns the rate, bytes per second, that the sender paces its data
    /// at; `None` (the default): no pacing, as many segments as the
    /// window allows go at once.
    fn pacing_rate(&self) -> Option<u64> {
        None
    }
    /// Returns the model's estimates, for an algorithm that keeps one
    /// (BBR). Default: none.
    fn model(&self) -> Option<ModelInfo> {
        None
    }
    /// Returns how the algorithm wants ECN run (RFC 3168 unless it says).
    fn ecn_feedback(&self) -> EcnFeedback {
        EcnFeedback::Rfc3168
    }
    /// Notes one ACK's ECN feedback; the engine calls it for every ACK
    /// when [`CongestionControl::ecn_feedback`] is
    /// [`EcnFeedback::Dctcp`], before any [`CongestionControl::on_ecn`]
    /// the same ACK causes. The default ignores it.
    fn on_ecn_ack(&mut self, ev: &EcnAck) {
        let _ = ev;
    }
}

/// The congestion control algorithms this crate offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Algorithm {
    /// RFC 5681 / RFC 6582 Reno with NewReno recovery.
    NewReno,
    /// RFC 9438 CUBIC, Linux's default.
    #[default]
    Cubic,
    /// Compound TCP (draft-sridharan-tcpm-ctcp-02), Windows' default.
    Compound,
    /// BBR version 3 (draft-ietf-ccwg-bbr), model-based and paced.
    Bbr,
    /// RFC 8257 Data Center TCP.
    Dctcp,
}

impl Algorithm {
    /// Every algorithm, in declaration order.
    pub const ALL: [Algorithm; 5] = [
        Algorithm::NewReno,
        Algorithm::Cubic,
        Algorithm::Compound,
        Algorithm::Bbr,
        Algorithm::Dctcp,
    ];

    /// The window-based, loss-driven algorithms (all but BBR): the ones the
    /// slow start / multiplicative decrease tests hold to.
    pub const LOSS_BASED: [Algorithm; 4] = [
        Algorithm::NewReno,
        Algorithm::Cubic,
        Algorithm::Compound,
        Algorithm::Dctcp,
    ];

    /// Returns the canonical lower-case name (`newreno`, `cubic`,
    /// `compound`).
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::NewReno => "newreno",
            Algorithm::Cubic => "cubic",
            Algorithm::Compound => "compound",
            Algorithm::Bbr => "bbr",
            Algorithm::Dctcp => "dctcp",
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing an unknown algorithm name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseAlgorithmError(pub String);

impl fmt::Display for ParseAlgorithmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown congestion control algorithm `{}` (expected newreno, reno, cubic, compound, ctcp, dctcp or bbr)",
            self.0
        )
    }
}

impl std::error::Error for ParseAlgorithmError {}

impl FromStr for Algorithm {
    type Err = ParseAlgorithmError;

    /// Parses `newreno`/`reno`, `cubic`, `compound`/`ctcp`, `bbr`, ignoring ASCII
    /// case and surrounding whitespace.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let is = |name: &str| t.eq_ignore_ascii_case(name);
        if is("newreno") || is("reno") {
            Ok(Algorithm::NewReno)
        } else if is("cubic") {
            Ok(Algorithm::Cubic)
        } else if is("compound") || is("ctcp") {
            Ok(Algorithm::Compound)
        } else if is("bbr") {
            Ok(Algorithm::Bbr)
        } else if is("dctcp") {
            Ok(Algorithm::Dctcp)
        } else {
            Err(ParseAlgorithmError(s.to_owned()))
        }
    }
}

/// How CUBIC leaves slow start before its first loss (Linux's `hystart`
/// module parameter, machine-wide there too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum SlowStart {
    /// HyStart's ACK-train and delay tests, as Linux's CUBIC
    /// ([`hystart_classic`]); in the initial slow start and after each
    /// timeout.
    #[default]
    HyStart,
    /// HyStart++ (RFC 9406, [`hystart`]), in the initial slow start only.
    HyStartPlusPlus,
    /// Plain slow start up to the first loss (Linux's `hystart=0`).
    Standard,
}

impl SlowStart {
    /// Every choice, in declaration order.
    pub const ALL: [SlowStart; 3] = [
        SlowStart::HyStart,
        SlowStart::HyStartPlusPlus,
        SlowStart::Standard,
    ];

    /// Returns the name NDL's `slow_start=` takes: `hystart`, `hystart++`
    /// or `standard`.
    pub fn as_str(self) -> &'static str {
        match self {
            SlowStart::HyStart => "hystart",
            SlowStart::HyStartPlusPlus => "hystart++",
            SlowStart::Standard => "standard",
        }
    }
}

impl fmt::Display for SlowStart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SlowStart {
    type Err = String;

    /// Parses `hystart`, `hystart++` or `standard`, ignoring ASCII case and
    /// surrounding whitespace.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        SlowStart::ALL
            .into_iter()
            .find(|k| t.eq_ignore_ascii_case(k.as_str()))
            .ok_or_else(|| {
                format!("unknown slow start `{s}` (expected hystart, hystart++ or standard)")
            })
    }
}

/// One connection's congestion control: the algorithm chosen at run time,
/// held inline (no allocation, no virtual call per ACK). NewReno and CUBIC
/// live in the enum itself; Compound and BBR, larger and rarely chosen,
/// are boxed so that they do not widen every connection's state.
#[derive(Debug, Clone, PartialEq)]
pub enum Controller {
    NewReno(NewReno),
    Cubic(Cubic),
    Compound(Box<Compound>),
    Bbr(Box<Bbr>),
    Dctcp(Box<Dctcp>),
}

impl Controller {
    /// Returns the algorithm as a trait object.
    pub fn as_dyn(&self) -> &dyn CongestionControl {
        match self {
            Controller::NewReno(c) => c,
            Controller::Cubic(c) => c,
            Controller::Compound(c) => &**c,
            Controller::Bbr(c) => &**c,
            Controller::Dctcp(c) => &**c,
        }
    }

    /// Chooses how CUBIC leaves slow start before a loss; the other
    /// algorithms have no such choice and ignore it.
    pub fn set_slow_start(&mut self, s: SlowStart) {
        if let Controller::Cubic(c) = self {
            c.set_slow_start(s);
        }
    }

    /// Returns the algorithm as a mutable trait object.
    pub fn as_dyn_mut(&mut self) -> &mut dyn CongestionControl {
        match self {
            Controller::NewReno(c) => c,
            Controller::Cubic(c) => c,
            Controller::Compound(c) => &mut **c,
            Controller::Bbr(c) => &mut **c,
            Controller::Dctcp(c) => &mut **c,
        }
    }
}

/// Dispatches each call to the algorithm held.
macro_rules! dispatch {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            Controller::NewReno($c) => $e,
            Controller::Cubic($c) => $e,
            Controller::Compound($c) => $e,
            Controller::Bbr($c) => $e,
            Controller::Dctcp($c) => $e,
        }
    };
}

impl CongestionControl for Controller {
    #[inline]
    fn name(&self) -> &'static str {
        dispatch!(self, c => c.name())
    }
    #[inline]
    fn window(&self) -> u64 {
        dispatch!(self, c => c.window())
    }
    #[inline]
    fn ssthresh(&self) -> u64 {
        dispatch!(self, c => c.ssthresh())
    }
    #[inline]
    fn on_ack(&mut self, ev: &AckEvent) {
        dispatch!(self, c => c.on_ack(ev))
    }
    #[inline]
    fn on_congestion(&mut self, now_ns: u64, in_flight_bytes: u64) {
        dispatch!(self, c => c.on_congestion(now_ns, in_flight_bytes))
    }
    #[inline]
    fn on_recovery_end(&mut self, now_ns: u64) {
        dispatch!(self, c => c.on_recovery_end(now_ns))
    }
    #[inline]
    fn on_ecn(&mut self, now_ns: u64, in_flight_bytes: u64) {
        dispatch!(self, c => c.on_ecn(now_ns, in_flight_bytes))
    }
    #[inline]
    fn on_rto(&mut self, now_ns: u64, in_flight_bytes: u64) {
        dispatch!(self, c => c.on_rto(now_ns, in_flight_bytes))
    }
    #[inline]
    fn undo(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        dispatch!(self, c => c.undo(prior_cwnd, prior_ssthresh))
    }
    #[inline]
    fn in_slow_start(&self) -> bool {
        dispatch!(self, c => c.in_slow_start())
    }
    #[inline]
    fn wants_rate_samples(&self) -> bool {
        matches!(self, Controller::Bbr(_))
    }
    #[inline]
    fn on_rate_sample(&mut self, rs: &RateSample) {
        if let Controller::Bbr(c) = self {
            c.on_rate_sample(rs);
        }
    }
    #[inline]
    fn pacing_rate(&self) -> Option<u64> {
        match self {
            Controller::Bbr(c) => c.pacing_rate(),
            _ => None,
        }
    }
    fn model(&self) -> Option<ModelInfo> {
        match self {
            Controller::Bbr(c) => c.model(),
            _ => None,
        }
    }
    #[inline]
    fn ecn_feedback(&self) -> EcnFeedback {
        dispatch!(self, c => c.ecn_feedback())
    }
    #[inline]
    fn on_ecn_ack(&mut self, ev: &EcnAck) {
        dispatch!(self, c => c.on_ecn_ack(ev))
    }
}

/// Returns the threshold an undo restores (Linux's `tcp_current_ssthresh`
/// outside a window reduction): `max(ssthresh, 3/4 · cwnd)`, so that an
/// undo lets the window grow back quickly at least to where it was. With
/// `ssthresh` still "arbitrarily high" (the initial slow start) it stays
/// so, and an undo returns the sender to slow start, as in Linux.
pub fn undo_ssthresh(cwnd: u64, ssthresh: u64) -> u64 {
    ssthresh.max((cwnd >> 1) + (cwnd >> 2))
}

/// Returns a fresh instance of `alg` for a sender with maximum segment size
/// `mss` bytes and an initial window of `initial_window_segments` segments
/// (10 like Linux, RFC 6928). Zero for either is taken as 1.
pub fn new(alg: Algorithm, mss: u64, initial_window_segments: u64) -> Controller {
    match alg {
        Algorithm::NewReno => Controller::NewReno(NewReno::new(mss, initial_window_segments)),
        Algorithm::Cubic => Controller::Cubic(Cubic::new(mss, initial_window_segments)),
        Algorithm::Compound => {
            Controller::Compound(Box::new(Compound::new(mss, initial_window_segments)))
        }
        Algorithm::Bbr => Controller::Bbr(Box::new(Bbr::new(mss, initial_window_segments))),
        Algorithm::Dctcp => Controller::Dctcp(Box::new(Dctcp::new(mss, initial_window_segments))),
    }
}

/// Returns `alg` taking over a connection whose window is `cwnd` bytes and
/// slow start threshold `ssthresh` bytes (`TCP_CONGESTION` changed after
/// connect). As Linux's `tcp_reinit_congestion_control`, the window and
/// threshold carry over and the algorithm's own history starts afresh
/// (CUBIC: no W_max yet, a new epoch; Compound: no delay window). Zero
/// for `mss` is taken as 1; `cwnd` is at least one segment.
pub fn take_over(alg: Algorithm, mss: u64, cwnd: u64, ssthresh: u64) -> Controller {
    let mss = mss.max(1);
    let cwnd = cwnd.max(mss);
    match alg {
        Algorithm::NewReno => Controller::NewReno(NewReno::new(mss, 1).with_window(cwnd, ssthresh)),
        Algorithm::Cubic => Controller::Cubic(Cubic::new(mss, 1).with_window(cwnd, ssthresh)),
        Algorithm::Compound => {
            Controller::Compound(Box::new(Compound::new(mss, 1).with_window(cwnd, ssthresh)))
        }
        Algorithm::Bbr => Controller::Bbr(Box::new(Bbr::new(mss, 1).with_window(cwnd))),
        Algorithm::Dctcp => {
            Controller::Dctcp(Box::new(Dctcp::new(mss, 1).with_window(cwnd, ssthresh)))
        }
    }
}

/// RFC 3465's limit L on the slow start increase per ACK, in segments.
///
/// RFC 3465 §2.2: "cwnd = cwnd + min (N, L*SMSS) ... L = 2*SMSS bytes"
/// is allowed; it keeps slow start doubling per RTT with delayed ACKs.
pub const ABC_LIMIT_SEGMENTS: u64 = 2;

/// Returns the slow start increase for an ACK of `acked` bytes (RFC 5681
/// §3.1 with RFC 3465 appropriate byte counting, L = 2·SMSS).
pub(crate) fn slow_start_increase(acked: u64, mss: u64) -> u64 {
    acked.min(ABC_LIMIT_SEGMENTS.saturating_mul(mss))
}

/// Returns `(mss, initial window in bytes)` with zeros taken as 1.
pub(crate) fn initial(mss: u64, initial_window_segments: u64) -> (u64, u64) {
    let mss = mss.max(1);
    (mss, mss.saturating_mul(initial_window_segments.max(1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{Path, MSS};
    use proptest::prelude::*;

    #[test]
    fn algorithm_names_parse_and_display_round_trip() {
        for alg in Algorithm::ALL {
            assert_eq!(alg.to_string().parse::<Algorithm>(), Ok(alg));
            assert_eq!(new(alg, MSS, 10).name(), alg.as_str());
        }
        assert_eq!("reno".parse(), Ok(Algorithm::NewReno));
        assert_eq!("CTCP".parse(), Ok(Algorithm::Compound));
        assert_eq!(" Cubic ".parse(), Ok(Algorithm::Cubic));
        assert!("vegas".parse::<Algorithm>().is_err());
    }

    /// Linux's `tcp_reinit_congestion_control` keeps `snd_cwnd` and
    /// `snd_ssthresh`; the new algorithm then runs from them: NewReno in
    /// congestion avoidance adds one segment per window acknowledged (RFC
    /// 5681 §3.1), and every algorithm in slow start doubles per RTT.
    #[test]
    fn an_algorithm_taking_over_keeps_the_window_and_threshold() {
        for alg in Algorithm::LOSS_BASED {
            let cc = take_over(alg, MSS, 40 * MSS, 30 * MSS);
            assert_eq!((cc.window(), cc.ssthresh()), (40 * MSS, 30 * MSS), "{alg}");
            assert_eq!(cc.name(), alg.as_str());
            let mut cc = take_over(alg, MSS, 8 * MSS, u64::MAX);
            Path::new(100_000_000).round(cc.as_dyn_mut());
            assert_eq!(cc.window(), 16 * MSS, "{alg} slow start from 8");
        }
        let mut reno = take_over(Algorithm::NewReno, MSS, 40 * MSS, 30 * MSS);
        Path::new(100_000_000).round(reno.as_dyn_mut());
        assert_eq!(reno.window(), 41 * MSS);
    }

    /// Every connection holds a `Controller` inline: NewReno's and CUBIC's
    /// state before any loss (CUBIC's curve and its slow start exit are
    /// boxed until needed), and Compound's pointer.
    #[test]
    fn a_controller_holds_cubic_before_any_loss_in_64_bytes() {
        use std::mem::size_of;
        assert!(size_of::<NewReno>() <= 40, "{}", size_of::<NewReno>());
        assert_eq!(size_of::<Cubic>(), 64);
        assert!(size_of::<Controller>() <= 72, "{}", size_of::<Controller>());
    }

    #[test]
    fn slow_start_names_parse_and_display_round_trip() {
        for s in SlowStart::ALL {
            assert_eq!(s.to_string().parse::<SlowStart>(), Ok(s));
        }
        assert_eq!(" HyStart++ ".parse(), Ok(SlowStart::HyStartPlusPlus));
        assert!("hystart+".parse::<SlowStart>().is_err());
        assert_eq!(SlowStart::default(), SlowStart::HyStart);
    }

    #[test]
    fn default_algorithm_is_cubic() {
        assert_eq!(Algorithm::default(), Algorithm::Cubic);
    }

    /// The test path spreads a round's ACKs over the whole RTT, so from a
    /// window of 80 segments (one ACK per 1.25 ms) the ACKs form one train
    /// and CUBIC's HyStart rightly sees the path full after half an RTT
    /// (`hystart_classic`); plain slow start is what is tested here.
    #[test]
    fn slow_start_doubles_the_window_every_rtt() {
        for alg in Algorithm::LOSS_BASED {
            let mut cc = new(alg, MSS, 10);
            if let Controller::Cubic(c) = &mut cc {
                c.set_slow_start(SlowStart::Standard);
            }
            let mut path = Path::new(100_000_000);
            for round in 1..=5 {
                path.round(cc.as_dyn_mut());
                assert_eq!(cc.window(), (10 << round) * MSS, "{alg} round {round}");
                assert!(cc.in_slow_start());
            }
        }
    }

    #[test]
    fn slow_start_doubles_the_window_with_delayed_acks() {
        for alg in Algorithm::LOSS_BASED {
            let mut cc = new(alg, MSS, 10);
            let mut path = Path::new(100_000_000);
            path.segments_per_ack = 2;
            path.round(cc.as_dyn_mut());
            assert_eq!(cc.window(), 20 * MSS, "{alg}");
        }
    }

    #[test]
    fn rto_sets_the_window_to_one_mss() {
        for alg in Algorithm::LOSS_BASED {
            let mut cc = new(alg, MSS, 40);
            cc.on_rto(1_000, 40 * MSS);
            assert_eq!(cc.window(), MSS, "{alg}");
            assert!(cc.in_slow_start());
        }
    }

    #[test]
    fn congestion_never_leaves_the_window_below_two_mss() {
        for alg in Algorithm::LOSS_BASED {
            let mut cc = new(alg, MSS, 1);
            cc.on_congestion(1_000, MSS);
            assert_eq!(cc.window(), 2 * MSS, "{alg}");
            assert_eq!(cc.ssthresh(), 2 * MSS, "{alg}");
            cc.on_recovery_end(2_000);
            cc.on_congestion(3_000, 0);
            assert_eq!(cc.window(), 2 * MSS, "{alg}");
        }
    }

    #[test]
    fn a_second_rto_without_progress_keeps_ssthresh() {
        for alg in Algorithm::LOSS_BASED {
            let mut cc = new(alg, MSS, 40);
            cc.on_rto(1_000, 40 * MSS);
            let ssthresh = cc.ssthresh();
            assert!(ssthresh >= 14 * MSS, "{alg}");
            cc.on_rto(2_000, MSS);
            assert_eq!(cc.ssthresh(), ssthresh, "{alg}");
            assert_eq!(cc.window(), MSS);
        }
    }

    #[test]
    fn window_does_not_grow_during_recovery_or_when_app_limited() {
        for alg in Algorithm::LOSS_BASED {
            let mut cc = new(alg, MSS, 100);
            cc.on_congestion(0, 100 * MSS);
            let w = cc.window();
            let mut path = Path::new(10_000_000);
            path.rounds(cc.as_dyn_mut(), 3);
            assert_eq!(cc.window(), w, "{alg} grew in recovery");
            cc.on_recovery_end(path.now);
            path.app_limited = true;
            path.rounds(cc.as_dyn_mut(), 3);
            assert_eq!(cc.window(), w, "{alg} grew while app-limited");
            path.app_limited = false;
            path.rounds(cc.as_dyn_mut(), 3);
            assert!(cc.window() > w, "{alg} did not grow after recovery");
        }
    }

    /// Linux's `tcp_undo_cwnd_reduction` with `tcp_reno_undo_cwnd`: after
    /// a spurious fast retransmit every algorithm is back at the window it
    /// had and at `max(ssthresh, 3/4 cwnd)` (`tcp_current_ssthresh`), and
    /// grows again at once.
    #[test]
    fn an_undo_restores_the_window_and_threshold_before_the_reduction() {
        for alg in Algorithm::LOSS_BASED {
            let mut cc = new(alg, MSS, 10);
            cc.on_congestion(0, 10 * MSS); // leave slow start
            cc.on_recovery_end(0);
            let mut path = Path::new(10_000_000);
            path.rounds(cc.as_dyn_mut(), 20);
            let (cwnd, ssthresh) = (cc.window(), cc.ssthresh());
            assert!(cwnd > ssthresh, "{alg} in congestion avoidance");
            let prior = undo_ssthresh(cwnd, ssthresh);
            // (Linux's shifts, one byte under cwnd·3/4 for some windows.)
            assert_eq!(prior, ssthresh.max((cwnd >> 1) + (cwnd >> 2)), "{alg}");
            cc.on_congestion(path.now, cwnd);
            assert!(cc.window() < cwnd, "{alg} reduced");
            cc.undo(cwnd, prior);
            assert_eq!((cc.window(), cc.ssthresh()), (cwnd, prior), "{alg}");
            assert!(!cc.in_slow_start(), "{alg}");
            path.rounds(cc.as_dyn_mut(), 3);
            assert!(cc.window() > cwnd, "{alg} grows after the undo");
        }
    }

    /// An undo after a timeout in the initial slow start puts ssthresh back
    /// to "arbitrarily high": the sender is in slow start again, from the
    /// window it had (Linux restores `prior_ssthresh` = `TCP_INFINITE_SSTHRESH`).
    #[test]
    fn an_undone_timeout_in_slow_start_returns_to_slow_start() {
        for alg in Algorithm::LOSS_BASED {
            let mut cc = new(alg, MSS, 10);
            let (cwnd, ssthresh) = (cc.window(), cc.ssthresh());
            cc.on_rto(1_000, cwnd);
            assert_eq!(cc.window(), MSS);
            cc.undo(cwnd, undo_ssthresh(cwnd, ssthresh));
            assert_eq!((cc.window(), cc.ssthresh()), (cwnd, u64::MAX), "{alg}");
            let mut path = Path::new(10_000_000);
            path.round(cc.as_dyn_mut());
            assert_eq!(cc.window(), 2 * cwnd, "{alg} doubles per RTT again");
        }
    }

    /// An undo never lowers what the sender has: a window that regrew past
    /// the prior one while the evidence came back stays.
    #[test]
    fn an_undo_never_lowers_the_window_or_threshold() {
        for alg in Algorithm::LOSS_BASED {
            let mut cc = new(alg, MSS, 40);
            cc.undo(10 * MSS, 5 * MSS);
            assert_eq!((cc.window(), cc.ssthresh()), (40 * MSS, u64::MAX), "{alg}");
        }
    }

    #[test]
    fn zero_mss_and_zero_initial_window_are_taken_as_one() {
        for alg in Algorithm::LOSS_BASED {
            let cc = new(alg, 0, 0);
            assert_eq!(cc.window(), 1, "{alg}");
        }
    }

    #[derive(Debug, Clone)]
    enum Event {
        Ack {
            dt: u64,
            acked: u64,
            rtt: Option<u64>,
            min_rtt: u64,
            in_flight: u64,
            app_limited: bool,
        },
        Congestion(u64, u64),
        RecoveryEnd(u64),
        Rto(u64, u64),
        Undo(u64, u64),
    }

    fn any_u64() -> impl Strategy<Value = u64> {
        prop_oneof![0..4u64, 0..100_000u64, 0..10_000_000_000u64, any::<u64>()]
    }

    fn event() -> impl Strategy<Value = Event> {
        prop_oneof![
            6 => (
                any_u64(),
                any_u64(),
                proptest::option::of(any_u64()),
                any_u64(),
                any_u64(),
                any::<bool>()
            )
                .prop_map(|(dt, acked, rtt, min_rtt, in_flight, app_limited)| Event::Ack {
                    dt,
                    acked,
                    rtt,
                    min_rtt,
                    in_flight,
                    app_limited
                }),
            1 => (any_u64(), any_u64()).prop_map(|(dt, f)| Event::Congestion(dt, f)),
            1 => any_u64().prop_map(Event::RecoveryEnd),
            1 => (any_u64(), any_u64()).prop_map(|(dt, f)| Event::Rto(dt, f)),
            1 => (any_u64(), any_u64()).prop_map(|(c, s)| Event::Undo(c, s)),
        ]
    }

    proptest! {
        #[test]
        fn no_event_sequence_makes_the_window_zero_or_wrap(
            alg in prop_oneof![Just(Algorithm::NewReno), Just(Algorithm::Cubic), Just(Algorithm::Compound), Just(Algorithm::Dctcp)],
            mss in prop_oneof![Just(1u64), Just(536u64), Just(1448u64), 1..100_000u64],
            iw in 0..2_000u64,
            events in proptest::collection::vec(event(), 0..200),
        ) {
            let mut cc = new(alg, mss, iw);
            let mut now = 0u64;
            for e in events {
                let before = cc.window();
                match e {
                    Event::Ack { dt, acked, rtt, min_rtt, in_flight, app_limited } => {
                        now = now.saturating_add(dt);
                        cc.on_ack(&AckEvent {
                            now_ns: now,
                            acked_bytes: acked,
                            rtt_ns: rtt,
                            min_rtt_ns: min_rtt,
                            in_flight_bytes: in_flight,
                            app_limited,
                        });
                        // Only Compound's delay-based part shrinks on an ACK;
                        // a smaller window anywhere else means it wrapped.
                        if alg != Algorithm::Compound {
                            prop_assert!(cc.window() >= before);
                        }
                    }
                    Event::Congestion(dt, f) => {
                        now = now.saturating_add(dt);
                        cc.on_congestion(now, f);
                        prop_assert!(cc.window() >= 2 * mss);
                    }
                    Event::RecoveryEnd(dt) => {
                        now = now.saturating_add(dt);
                        cc.on_recovery_end(now);
                        prop_assert_eq!(cc.window(), before);
                    }
                    Event::Rto(dt, f) => {
                        now = now.saturating_add(dt);
                        cc.on_rto(now, f);
                        prop_assert_eq!(cc.window(), mss);
                        prop_assert!(cc.ssthresh() >= 2 * mss);
                    }
                    Event::Undo(c, s) => {
                        let ssthresh = cc.ssthresh();
                        cc.undo(c, s);
                        prop_assert!(cc.window() >= before.max(c));
                        prop_assert!(cc.ssthresh() >= ssthresh.max(s));
                    }
                }
                prop_assert!(cc.window() >= mss);
                prop_assert!(cc.ssthresh() >= 2 * mss);
            }
        }
    }
}
