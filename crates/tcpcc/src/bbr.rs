//! BBR version 3 (draft-ietf-ccwg-bbr-02, "BBR Congestion Control";
//! Linux's `tcp_bbr.c` of the v3 release), a model-based algorithm.
//!
//! BBR does not read the window off losses. It keeps a model of the path,
//! the bottleneck bandwidth `max_bw` (a windowed maximum of the delivery
//! rate samples, [`RateSample`]) and the round-trip propagation time
//! `min_rtt` (a windowed minimum of the RTT), and sets
//!
//! ```text
//! pacing_rate = pacing_gain · bw · (1 − 1 %)          (§5.6.2)
//! cwnd        = cwnd_gain · bw · min_rtt + 3·quantum  (§5.6.4, at least 4 MSS)
//! ```
//!
//! with `bw = min(max_bw, bw_lo)`. The gains cycle through a state
//! machine (§4.3):
//!
//! | state | pacing gain | cwnd gain | leaves when |
//! |---|---|---|---|
//! | Startup | 2.77 | 2 | `max_bw` grew < 25 % for 3 rounds, or ≥ 6 loss events and loss > 2 % in a round |
//! | Drain | 0.35 | 2 | in flight ≤ BDP |
//! | ProbeBW_DOWN | 0.90 | 2 | in flight ≤ BDP and ≤ 85 % of `inflight_hi` (→ CRUISE), or time to probe (→ REFILL) |
//! | ProbeBW_CRUISE | 1.00 | 2 | 2–3 s since DOWN began, or the Reno-coexistence round count (→ REFILL) |
//! | ProbeBW_REFILL | 1.00 | 2 | one round (→ UP) |
//! | ProbeBW_UP | 1.25 | 2.25 | `max_bw` stopped growing for 3 rounds, or loss > 2 % (→ DOWN) |
//! | ProbeRTT | 1.00 | 0.5 (≥ 4 MSS) | 200 ms and one round at that window (→ DOWN/CRUISE or Startup) |
//!
//! `max_bw` is the maximum over the current and the previous ProbeBW
//! cycle (two slots, advanced once per cycle, one round after DOWN
//! begins: `MaxBwFilterLen` = 2 cycles). `min_rtt` is the minimum over 10 s
//! (`MinRTTFilterLen`); ProbeRTT runs when the 5 s `probe_rtt_min_delay`
//! filter expires (`ProbeRTTInterval`), for `ProbeRTTDuration` = 200 ms.
//!
//! The v3 loss response: `inflight_hi` (the draft's `inflight_longterm`)
//! caps the window; a round whose loss rate exceeds `LossThresh` = 2 % of
//! what was in flight while probing sets it to `max(tx_in_flight, 0.7 ·
//! target)` and ends the probe; outside probing, each round with loss cuts
//! the short-term bounds `bw_lo` and `inflight_lo` to `max(latest, 0.7 ·
//! bound)` (`Beta` = 0.7). In UP, `inflight_hi` grows by 1, 2, 4, …
//! segments per round while the window is full. The window keeps 15 %
//! headroom below `inflight_hi` in CRUISE and ProbeRTT (`Headroom`).
//!
//! Section numbers above and in the code are draft-ietf-ccwg-bbr-02's.
//!
//! # Determinism
//! Integer arithmetic only: gains are hundredths, rates bytes per second,
//! times nanoseconds. The random part of the probe wait (0–1 s, §4.3.3.5)
//! and the Reno-coexistence round offset come from a splitmix64 stream
//! seeded with the time of the first sample, so two connections started at
//! different times do not probe in lockstep, and a rerun is identical.
//!
//! # Gaps
//! - No ACK-aggregation estimate (`extra_acked`, §5.5.9): the window has
//!   only the offload budget above `cwnd_gain · BDP`.
//! - No idle restart (§4.4) and no pacing-rate cut after idle.
//! - ECN: an ECE counts as a loss event of its round (it cuts `bw_lo` and
//!   `inflight_lo` outside probing); the v3 DCTCP-style `ecn_alpha`
//!   response for L4S is not modelled.
//! - Startup's high-loss exit counts ACKs that found new losses, not
//!   Linux's loss *events* (contiguous lost ranges).

use crate::{CongestionControl, ModelInfo, RateSample};

/// Gains are hundredths.
const UNIT: u64 = 100;
/// §2.8 `BBRStartupPacingGain` = 4 ln 2 ≈ 2.77.
const STARTUP_PACING_GAIN: u64 = 277;
/// §2.8 `BBRStartupCwndGain` = 2, also ProbeBW's default `cwnd_gain`.
const CWND_GAIN: u64 = 200;
/// §2.8 `BBRDrainPacingGain` = 0.35.
const DRAIN_PACING_GAIN: u64 = 35;
/// ProbeBW_DOWN's pacing gain.
const DOWN_GAIN: u64 = 90;
/// ProbeBW_UP's pacing gain.
const UP_GAIN: u64 = 125;
/// ProbeBW_UP's cwnd gain.
const UP_CWND_GAIN: u64 = 225;
/// §2.8 `BBRProbeRTTCwndGain` = 0.5.
const PROBE_RTT_CWND_GAIN: u64 = 50;
/// §2.8 `BBRLossThresh` = 2 %.
const LOSS_THRESH_PCT: u64 = 2;
/// §2.8 `BBRBeta` = 0.7.
const BETA: u64 = 70;
/// §2.8 `BBRHeadroom` = 0.15.
const HEADROOM: u64 = 15;
/// §5.6.2 `BBRPacingMarginPercent` = 1.
const PACING_MARGIN_PCT: u64 = 1;
/// §4.3.1.1 full-bandwidth growth threshold 1.25 and round count 3.
const FULL_BW_GROWTH: u64 = 125;
const FULL_BW_COUNT: u32 = 3;
/// §4.3.1.3 `BBRStartupFullLossCnt`.
const STARTUP_FULL_LOSS_COUNT: u32 = 6;
/// §2.8 `MinRTTFilterLen` = 10 s.
const MIN_RTT_FILTER_NS: u64 = 10_000_000_000;
/// §2.8 `ProbeRTTInterval` = 5 s.
const PROBE_RTT_INTERVAL_NS: u64 = 5_000_000_000;
/// §2.8 `ProbeRTTDuration` = 200 ms.
const PROBE_RTT_DURATION_NS: u64 = 200_000_000;
/// §4.3.3.5: the probe wait is 2 s plus up to 1 s at random.
const PROBE_WAIT_BASE_NS: u64 = 2_000_000_000;
const PROBE_WAIT_RAND_NS: u64 = 1_000_000_000;
/// §5.6.3: below 1.2 Mbit/s one segment per burst, else two.
const SEND_QUANTUM_RATE: u64 = 1_200_000 / 8;
/// §5.6.3: at most 64 KB per burst.
const MAX_QUANTUM: u64 = 64 * 1024;
/// "Infinity" for the bounds.
const INF: u64 = u64::MAX;

/// BBR's states (§4.1), ProbeBW split into its four phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Startup,
    Drain,
    ProbeBwDown,
    ProbeBwCruise,
    ProbeBwRefill,
    ProbeBwUp,
    ProbeRtt,
}

impl State {
    /// Returns the name reports and traces use.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Startup => "startup",
            State::Drain => "drain",
            State::ProbeBwDown => "probe_bw_down",
            State::ProbeBwCruise => "probe_bw_cruise",
            State::ProbeBwRefill => "probe_bw_refill",
            State::ProbeBwUp => "probe_bw_up",
            State::ProbeRtt => "probe_rtt",
        }
    }

    fn is_probe_bw(self) -> bool {
        matches!(
            self,
            State::ProbeBwDown | State::ProbeBwCruise | State::ProbeBwRefill | State::ProbeBwUp
        )
    }
}

/// Where ProbeBW is in its feedback of a probe (§4.3.3.6 `ack_phase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// One BBR sender's state.
#[derive(Debug, Clone, PartialEq)]
pub struct Bbr {
    mss: u64,
    initial_cwnd: u64,
    cwnd: u64,
    ssthresh: u64,
    state: State,
    pacing_gain: u64,
    cwnd_gain: u64,
    pacing_rate: u64,
    // The model (§5.5).
    max_bw: u64,
    /// The max-bw filter's two slots: the previous and current cycle.
    bw_hi: [u64; 2],
    bw_lo: u64,
    bw: u64,
    bw_latest: u64,
    inflight_latest: u64,
    inflight_hi: u64,
    inflight_lo: u64,
    min_rtt_ns: u64,
    min_rtt_stamp: u64,
    probe_rtt_min_delay: u64,
    probe_rtt_min_stamp: u64,
    probe_rtt_expired: bool,
    // Round counting (§5.5.1).
    delivered: u64,
    next_round_delivered: u64,
    round_start: bool,
    round_count: u64,
    rounds_since_bw_probe: u64,
    // Loss rounds (§5.5.10).
    loss_round_delivered: u64,
    loss_round_start: bool,
    loss_in_round: bool,
    loss_events_in_round: u32,
    // Startup's full pipe (§4.3.1.1).
    full_bw: u64,
    full_bw_count: u32,
    full_bw_now: bool,
    full_bw_reached: bool,
    // ProbeBW (§4.3.3).
    cycle_stamp: u64,
    ack_phase: AckPhase,
    bw_probe_wait_ns: u64,
    bw_probe_up_cnt: u64,
    bw_probe_up_acks: u64,
    bw_probe_up_rounds: u32,
    bw_probe_samples: bool,
    cycle_count: u64,
    // ProbeRTT (§4.3.4).
    probe_rtt_done_stamp: Option<u64>,
    probe_rtt_round_done: bool,
    prior_cwnd: u64,
    // Loss recovery (§5.6.4.4).
    packet_conservation: bool,
    restore_after_conservation: bool,
    in_flight: u64,
    has_seen_rtt: bool,
    rng: u64,
}

impl Bbr {
    /// Returns BBR in Startup for a sender with segment size `mss` and an
    /// initial window of `initial_window_segments` segments.
    pub fn new(mss: u64, initial_window_segments: u64) -> Bbr {
        let (mss, cwnd) = crate::initial(mss, initial_window_segments);
        let mut b = Bbr {
            mss,
            initial_cwnd: cwnd,
            cwnd,
            ssthresh: INF,
            state: State::Startup,
            pacing_gain: STARTUP_PACING_GAIN,
            cwnd_gain: CWND_GAIN,
            pacing_rate: 0,
            max_bw: 0,
            bw_hi: [0, 0],
            bw_lo: INF,
            bw: 0,
            bw_latest: 0,
            inflight_latest: 0,
            inflight_hi: INF,
            inflight_lo: INF,
            min_rtt_ns: INF,
            min_rtt_stamp: 0,
            probe_rtt_min_delay: INF,
            probe_rtt_min_stamp: 0,
            probe_rtt_expired: false,
            delivered: 0,
            next_round_delivered: 0,
            round_start: false,
            round_count: 0,
            rounds_since_bw_probe: 0,
            loss_round_delivered: 0,
            loss_round_start: false,
            loss_in_round: false,
            loss_events_in_round: 0,
            full_bw: 0,
            full_bw_count: 0,
            full_bw_now: false,
            full_bw_reached: false,
            cycle_stamp: 0,
            ack_phase: AckPhase::Init,
            bw_probe_wait_ns: PROBE_WAIT_BASE_NS,
            bw_probe_up_cnt: INF,
            bw_probe_up_acks: 0,
            bw_probe_up_rounds: 0,
            bw_probe_samples: false,
            cycle_count: 0,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            prior_cwnd: 0,
            packet_conservation: false,
            restore_after_conservation: false,
            in_flight: 0,
            has_seen_rtt: false,
            rng: 0,
        };
        b.init_pacing_rate(None);
        b
    }

    /// Returns BBR taking over a connection whose window is `cwnd` bytes
    /// (it starts in Startup from there, as Linux's `bbr_init`).
    pub fn with_window(mut self, cwnd: u64) -> Bbr {
        self.cwnd = cwnd.max(self.mss);
        self
    }

    /// Returns the state.
    pub fn state(&self) -> State {
        self.state
    }

    /// Returns the bottleneck bandwidth estimate `max_bw`, bytes/s.
    pub fn max_bw(&self) -> u64 {
        self.max_bw
    }

    /// Returns the bandwidth the model uses, `min(max_bw, bw_lo)`.
    pub fn bw(&self) -> u64 {
        self.bw
    }

    /// Returns the minimum RTT estimate, ns (`u64::MAX` before a sample).
    pub fn min_rtt_ns(&self) -> u64 {
        self.min_rtt_ns
    }

    /// Returns `inflight_hi` (the draft's `inflight_longterm`), bytes.
    pub fn inflight_hi(&self) -> u64 {
        self.inflight_hi
    }

    /// Returns true once Startup found the pipe full.
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// Returns the round trips counted so far.
    pub fn round_count(&self) -> u64 {
        self.round_count
    }

    /// Returns the ProbeBW cycles started so far.
    pub fn cycle_count(&self) -> u64 {
        self.cycle_count
    }

    /// Returns the next number of the deterministic stream (splitmix64).
    fn random(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `bytes_per_second · ns`, in bytes.
    fn volume(bw: u64, ns: u64) -> u64 {
        (u128::from(bw) * u128::from(ns) / 1_000_000_000).min(u128::from(INF - 1)) as u64
    }

    /// §5.6.4.2 `BBRBDPMultiple`: `gain · bw · min_rtt`; the initial window
    /// before any RTT sample.
    fn bdp_multiple(&self, bw: u64, gain: u64) -> u64 {
        if self.min_rtt_ns == INF {
            return self.initial_cwnd;
        }
        Self::volume(bw, self.min_rtt_ns).saturating_mul(gain) / UNIT
    }

    /// §5.6.3 `BBRSetSendQuantum`.
    fn send_quantum(&self) -> u64 {
        let floor = if self.pacing_rate < SEND_QUANTUM_RATE {
            self.mss
        } else {
            2 * self.mss
        };
        (self.pacing_rate / 1_000).min(MAX_QUANTUM).max(floor)
    }

    /// §5.6.4.2 `BBRInflight`: the BDP multiple plus the offload budget
    /// (three send quanta), at least 4 segments, plus 2 more in UP.
    fn inflight(&self, bw: u64, gain: u64) -> u64 {
        let mut v = self.bdp_multiple(bw, gain) + 3 * self.send_quantum();
        v = v.max(self.min_pipe_cwnd());
        if self.state == State::ProbeBwUp {
            v += 2 * self.mss;
        }
        v
    }

    /// §2.8 `BBRMinPipeCwnd` = 4 segments.
    fn min_pipe_cwnd(&self) -> u64 {
        4 * self.mss
    }

    /// §5.5.10 `BBRInflightWithHeadroom`: 85 % of `inflight_hi`.
    fn inflight_with_headroom(&self) -> u64 {
        if self.inflight_hi == INF {
            return INF;
        }
        let headroom = (HEADROOM * self.inflight_hi / UNIT).max(self.mss);
        self.inflight_hi
            .saturating_sub(headroom)
            .max(self.min_pipe_cwnd())
    }

    /// §4.3.3.5 `BBRTargetInflight`: `min(BDP, cwnd)`.
    fn target_inflight(&self) -> u64 {
        self.bdp_multiple(self.bw, UNIT).min(self.cwnd)
    }

    /// §5.6.2 `BBRInitPacingRate`: the initial window over the smoothed RTT
    /// (1 ms before one is known) times the Startup gain.
    fn init_pacing_rate(&mut self, srtt_ns: Option<u64>) {
        let srtt = srtt_ns.filter(|&r| r > 0).unwrap_or(1_000_000);
        let nominal = (u128::from(self.cwnd) * 1_000_000_000 / u128::from(srtt)) as u64;
        self.pacing_rate = nominal.saturating_mul(STARTUP_PACING_GAIN) / UNIT;
    }

    /// §5.6.2 `BBRSetPacingRateWithGain`: the rate never falls before the
    /// pipe is found full.
    fn set_pacing_rate(&mut self) {
        if self.bw == 0 {
            return;
        }
        let rate =
            self.bw.saturating_mul(self.pacing_gain) / UNIT * (100 - PACING_MARGIN_PCT) / 100;
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate.max(1);
        }
    }

    /// §5.5.1 `BBRUpdateRound` and §5.5.2 `BBRUpdateMaxBw`.
    fn update_max_bw(&mut self, rs: &RateSample) {
        self.round_start = false;
        if rs.interval_ns > 0 && rs.prior_delivered >= self.next_round_delivered {
            self.next_round_delivered = self.delivered;
            self.round_count += 1;
            self.rounds_since_bw_probe += 1;
            self.round_start = true;
        }
        if let Some(rate) = rs.rate() {
            if rate >= self.max_bw || !rs.is_app_limited {
                self.bw_hi[1] = self.bw_hi[1].max(rate);
                self.max_bw = self.bw_hi[0].max(self.bw_hi[1]);
            }
        }
    }

    /// §5.5.2 `BBRAdvanceMaxBwFilter`: a new cycle's slot.
    fn advance_max_bw_filter(&mut self) {
        self.cycle_count += 1;
        if self.bw_hi[1] == 0 {
            return;
        }
        self.bw_hi[0] = self.bw_hi[1];
        self.bw_hi[1] = 0;
    }

    /// §5.5.10 `BBRUpdateLatestDeliverySignals`.
    fn update_latest_delivery_signals(&mut self, rs: &RateSample) {
        self.loss_round_start = false;
        if let Some(rate) = rs.rate() {
            self.bw_latest = self.bw_latest.max(rate);
            self.inflight_latest = self.inflight_latest.max(rs.delivered);
        }
        if rs.prior_delivered > 0 && rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = self.delivered;
            self.loss_round_start = true;
        }
    }

    /// §5.5.10 `BBRAdvanceLatestDeliverySignals`.
    fn advance_latest_delivery_signals(&mut self, rs: &RateSample) {
        if self.loss_round_start {
            self.bw_latest = rs.rate().unwrap_or(0);
            self.inflight_latest = rs.delivered;
        }
    }

    /// §5.5.10 `BBRUpdateCongestionSignals`, with Startup's high-loss exit
    /// (§4.3.1.3) checked on the round's last ACK.
    fn update_congestion_signals(&mut self, rs: &RateSample) {
        self.update_max_bw(rs);
        if rs.newly_lost > 0 {
            self.loss_in_round = true;
            self.loss_events_in_round = self.loss_events_in_round.saturating_add(1);
        }
        if !self.loss_round_start {
            return;
        }
        self.check_startup_high_loss(rs);
        self.adapt_lower_bounds_from_congestion();
        self.loss_in_round = false;
        self.loss_events_in_round = 0;
    }

    /// §4.3.1.3 `BBRCheckStartupHighLoss`.
    fn check_startup_high_loss(&mut self, rs: &RateSample) {
        if self.full_bw_reached || self.state != State::Startup {
            return;
        }
        if self.loss_events_in_round >= STARTUP_FULL_LOSS_COUNT && is_inflight_too_high(rs) {
            self.inflight_hi = self
                .bdp_multiple(self.max_bw, UNIT)
                .max(self.inflight_latest);
            self.full_bw_reached = true;
        }
    }

    /// §5.5.10 `BBRAdaptLowerBoundsFromCongestion`.
    fn adapt_lower_bounds_from_congestion(&mut self) {
        if self.is_probing_bw() || !self.loss_in_round {
            return;
        }
        // BBRInitLowerBounds.
        if self.bw_lo == INF {
            self.bw_lo = self.max_bw;
        }
        if self.inflight_lo == INF {
            self.inflight_lo = self.cwnd;
        }
        // BBRLossLowerBounds.
        self.bw_lo = self.bw_latest.max(self.bw_lo / UNIT * BETA);
        self.inflight_lo = self.inflight_latest.max(self.inflight_lo / UNIT * BETA);
    }

    /// §4.3.3 `BBRIsProbingBW`.
    fn is_probing_bw(&self) -> bool {
        matches!(
            self.state,
            State::Startup | State::ProbeBwRefill | State::ProbeBwUp
        )
    }

    /// §5.5.10 `BBRResetLowerBounds`.
    fn reset_lower_bounds(&mut self) {
        self.bw_lo = INF;
        self.inflight_lo = INF;
    }

    /// §4.3.1.1 `BBRResetFullBW`.
    fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.full_bw_count = 0;
        self.full_bw_now = false;
    }

    /// §4.3.1.1 `BBRCheckFullBWReached`: once per round, `max_bw` grew
    /// by less than 25 % for 3 rounds in a row.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_now || !self.round_start || rs.is_app_limited || rs.interval_ns == 0 {
            return;
        }
        if self.max_bw >= self.full_bw.saturating_mul(FULL_BW_GROWTH) / UNIT {
            self.full_bw = self.max_bw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_now = self.full_bw_count >= FULL_BW_COUNT;
        if self.full_bw_now {
            self.full_bw_reached = true;
        }
    }

    /// §4.3.1.2 `BBRCheckStartupDone` and §4.3.2 `BBRCheckDrainDone`.
    fn check_startup_and_drain(&mut self, now: u64) {
        if self.state == State::Startup && self.full_bw_reached {
            self.ssthresh = self.bdp_multiple(self.max_bw, UNIT);
            self.set_state(State::Drain, DRAIN_PACING_GAIN, CWND_GAIN);
        }
        if self.state == State::Drain && self.in_flight <= self.inflight(self.max_bw, UNIT) {
            self.start_probe_bw_down(now);
        }
    }

    fn set_state(&mut self, s: State, pacing_gain: u64, cwnd_gain: u64) {
        self.state = s;
        self.pacing_gain = pacing_gain;
        self.cwnd_gain = cwnd_gain;
    }

    /// Starts a new round at the current delivered count.
    fn start_round(&mut self) {
        self.next_round_delivered = self.delivered;
    }

    /// §4.3.3.6 `BBRStartProbeBW_DOWN`.
    fn start_probe_bw_down(&mut self, now: u64) {
        self.loss_in_round = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
        self.bw_probe_up_cnt = INF;
        // BBRPickProbeWait: 0 or 1 rounds, 2 s + up to 1 s.
        self.rounds_since_bw_probe = self.random() % 2;
        self.bw_probe_wait_ns = PROBE_WAIT_BASE_NS + self.random() % PROBE_WAIT_RAND_NS;
        self.cycle_stamp = now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round();
        self.set_state(State::ProbeBwDown, DOWN_GAIN, CWND_GAIN);
    }

    /// §4.3.3.6 `BBRStartProbeBW_CRUISE`.
    fn start_probe_bw_cruise(&mut self) {
        self.set_state(State::ProbeBwCruise, UNIT, CWND_GAIN);
    }

    /// §4.3.3.6 `BBRStartProbeBW_REFILL`.
    fn start_probe_bw_refill(&mut self) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = 0;
        self.bw_probe_up_acks = 0;
        self.ack_phase = AckPhase::Refilling;
        self.start_round();
        self.set_state(State::ProbeBwRefill, UNIT, CWND_GAIN);
    }

    /// §4.3.3.6 `BBRStartProbeBW_UP`.
    fn start_probe_bw_up(&mut self, now: u64) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round();
        self.reset_full_bw();
        self.full_bw = self.max_bw;
        self.cycle_stamp = now;
        self.set_state(State::ProbeBwUp, UP_GAIN, UP_CWND_GAIN);
        self.raise_inflight_hi_slope();
    }

    /// §4.3.3.6 `BBRUpdateProbeBWCyclePhase`.
    fn update_probe_bw_cycle_phase(&mut self, rs: &RateSample) {
        if !self.full_bw_reached {
            return;
        }
        self.adapt_upper_bounds(rs);
        let now = rs.now_ns;
        match self.state {
            State::ProbeBwDown => {
                if self.is_time_to_probe_bw(now) {
                    return;
                }
                if self.is_time_to_cruise() {
                    self.start_probe_bw_cruise();
                }
            }
            State::ProbeBwCruise => {
                self.is_time_to_probe_bw(now);
            }
            State::ProbeBwRefill => {
                if self.round_start {
                    self.bw_probe_samples = true;
                    self.start_probe_bw_up(now);
                }
            }
            State::ProbeBwUp => {
                if self.is_time_to_go_down(rs) {
                    self.start_probe_bw_down(now);
                }
            }
            _ => {}
        }
    }

    /// §4.3.3.6 `BBRIsTimeToProbeBW`: the wait elapsed, or as many rounds
    /// as a Reno flow would take to grow by the BDP (at most 63).
    fn is_time_to_probe_bw(&mut self, now: u64) -> bool {
        let reno_rounds = (self.target_inflight() / self.mss).min(63);
        if now.saturating_sub(self.cycle_stamp) > self.bw_probe_wait_ns
            || self.rounds_since_bw_probe >= reno_rounds
        {
            self.start_probe_bw_refill();
            return true;
        }
        false
    }

    /// §4.3.3.6 `BBRIsTimeToCruise`.
    fn is_time_to_cruise(&self) -> bool {
        if self.in_flight > self.inflight_with_headroom() {
            return false;
        }
        self.in_flight <= self.inflight(self.max_bw, UNIT)
    }

    /// §4.3.3.6 `BBRIsTimeToGoDown`.
    fn is_time_to_go_down(&mut self, rs: &RateSample) -> bool {
        if rs.is_cwnd_limited && self.cwnd >= self.inflight_hi {
            self.reset_full_bw();
            self.full_bw = self.max_bw;
            false
        } else {
            self.full_bw_now
        }
    }

    /// §5.5.10 `BBRAdaptUpperBounds`.
    fn adapt_upper_bounds(&mut self, rs: &RateSample) {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.state.is_probe_bw() && !rs.is_app_limited {
                self.advance_max_bw_filter();
            }
        }
        if self.check_inflight_too_high(rs) {
            return;
        }
        if self.inflight_hi == INF {
            return;
        }
        if rs.tx_in_flight > self.inflight_hi {
            self.inflight_hi = rs.tx_in_flight;
        }
        if self.state == State::ProbeBwUp {
            self.probe_inflight_hi_upward(rs);
        }
    }

    /// §5.5.10 `BBRCheckInflightTooHigh` and `BBRHandleInflightTooHigh`.
    fn check_inflight_too_high(&mut self, rs: &RateSample) -> bool {
        if !is_inflight_too_high(rs) {
            return false;
        }
        if self.bw_probe_samples {
            self.bw_probe_samples = false;
            if !rs.is_app_limited {
                let beta_target = self.target_inflight() / UNIT * BETA;
                self.inflight_hi = rs.tx_in_flight.max(beta_target);
            }
            if self.state == State::ProbeBwUp {
                self.start_probe_bw_down(rs.now_ns);
            }
        }
        true
    }

    /// §5.5.10 `BBRProbeInflightHiUpward`.
    fn probe_inflight_hi_upward(&mut self, rs: &RateSample) {
        if !rs.is_cwnd_limited || self.cwnd < self.inflight_hi {
            return;
        }
        self.bw_probe_up_acks += rs.newly_acked;
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self.inflight_hi.saturating_add(delta * self.mss);
        }
        if self.round_start {
            self.raise_inflight_hi_slope();
        }
    }

    /// §5.5.10 `BBRRaiseInflightHiSlope`: 1, 2, 4, … segments per round.
    fn raise_inflight_hi_slope(&mut self) {
        let growth = 1u64 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (self.cwnd / growth).max(1);
    }

    /// §5.5.3 `BBRUpdateMinRTT`.
    fn update_min_rtt(&mut self, rs: &RateSample) {
        let now = rs.now_ns;
        self.probe_rtt_expired = now
            > self
                .probe_rtt_min_stamp
                .saturating_add(PROBE_RTT_INTERVAL_NS);
        if let Some(rtt) = rs.rtt_ns {
            if rtt < self.probe_rtt_min_delay || self.probe_rtt_expired {
                self.probe_rtt_min_delay = rtt;
                self.probe_rtt_min_stamp = now;
            }
        }
        let min_rtt_expired = now > self.min_rtt_stamp.saturating_add(MIN_RTT_FILTER_NS);
        if self.probe_rtt_min_delay < self.min_rtt_ns || min_rtt_expired {
            self.min_rtt_ns = self.probe_rtt_min_delay;
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }
    }

    /// §4.3.4.4 `BBRCheckProbeRTT`.
    fn check_probe_rtt(&mut self, rs: &RateSample) {
        if self.state != State::ProbeRtt && self.probe_rtt_expired {
            self.set_state(State::ProbeRtt, UNIT, PROBE_RTT_CWND_GAIN);
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round();
        }
        if self.state == State::ProbeRtt {
            self.handle_probe_rtt(rs);
        }
    }

    /// §4.3.4.4 `BBRHandleProbeRTT` and `BBRCheckProbeRTTDone`.
    fn handle_probe_rtt(&mut self, rs: &RateSample) {
        let now = rs.now_ns;
        match self.probe_rtt_done_stamp {
            None if self.in_flight <= self.probe_rtt_cwnd() => {
                self.probe_rtt_done_stamp = Some(now + PROBE_RTT_DURATION_NS);
                self.probe_rtt_round_done = false;
                self.start_round();
            }
            Some(done) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done && now > done {
                    self.probe_rtt_min_stamp = now;
                    self.restore_cwnd();
                    self.exit_probe_rtt(now);
                }
            }
            None => {}
        }
    }

    /// §4.3.4.4 `BBRExitProbeRTT`.
    fn exit_probe_rtt(&mut self, now: u64) {
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.start_probe_bw_down(now);
            self.start_probe_bw_cruise();
        } else {
            self.set_state(State::Startup, STARTUP_PACING_GAIN, CWND_GAIN);
        }
    }

    /// §4.3.4.4 `BBRProbeRTTCwnd`: half the BDP, at least 4 segments.
    fn probe_rtt_cwnd(&self) -> u64 {
        self.bdp_multiple(self.bw, PROBE_RTT_CWND_GAIN)
            .max(self.min_pipe_cwnd())
    }

    /// §5.6.4.4 `BBRSaveCwnd`.
    fn save_cwnd(&mut self) {
        self.prior_cwnd = if !self.packet_conservation && self.state != State::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        };
    }

    /// §5.6.4.4 `BBRRestoreCwnd`.
    fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    /// §5.5.11 `BBRBoundBWForModel`.
    fn bound_bw_for_model(&mut self) {
        self.bw = self.max_bw.min(self.bw_lo);
    }

    /// §5.6.4.6 `BBRSetCwnd` with §5.6.4.4 (recovery) and §5.6.4.5
    /// (ProbeRTT) and `BBRBoundCwndForModel`.
    fn set_cwnd(&mut self, rs: &RateSample) {
        let max_inflight = self.inflight(self.bw, self.cwnd_gain);
        // BBRModulateCwndForRecovery.
        if rs.newly_lost > 0 {
            self.cwnd = self.cwnd.saturating_sub(rs.newly_lost).max(self.mss);
        }
        if self.packet_conservation {
            if self.round_start {
                self.packet_conservation = false;
                if self.restore_after_conservation {
                    self.restore_after_conservation = false;
                    self.restore_cwnd();
                }
            } else {
                self.cwnd = self.cwnd.max(self.in_flight + rs.newly_acked);
            }
        }
        if !self.packet_conservation {
            if self.full_bw_reached {
                self.cwnd = (self.cwnd + rs.newly_acked).min(max_inflight);
            } else if self.cwnd < max_inflight || self.delivered < self.initial_cwnd {
                self.cwnd += rs.newly_acked;
            }
            self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
        }
        if self.state == State::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
        // BBRBoundCwndForModel.
        let mut cap = INF;
        if self.state.is_probe_bw() && self.state != State::ProbeBwCruise {
            cap = self.inflight_hi;
        } else if matches!(self.state, State::ProbeRtt | State::ProbeBwCruise) {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo).max(self.min_pipe_cwnd());
        self.cwnd = self.cwnd.min(cap);
    }
}

/// §5.5.10 `IsInflightTooHigh`: the loss rate of the sample's flight
/// exceeds `LossThresh`.
fn is_inflight_too_high(rs: &RateSample) -> bool {
    rs.lost > 0 && rs.lost.saturating_mul(100) > rs.tx_in_flight.saturating_mul(LOSS_THRESH_PCT)
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn window(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    /// BBR's model updates come with the rate sample
    /// ([`CongestionControl::on_rate_sample`]), on every ACK that delivers
    /// data, in recovery too.
    fn on_ack(&mut self, _ev: &crate::AckEvent) {}

    /// §5.6.4.4: on entering fast recovery the window is what is in
    /// flight (packet conservation for one round), the prior one saved.
    fn on_congestion(&mut self, _now_ns: u64, in_flight_bytes: u64) {
        self.save_cwnd();
        self.cwnd = in_flight_bytes.max(self.mss);
        self.packet_conservation = true;
        self.restore_after_conservation = false;
        self.next_round_delivered = self.delivered;
    }

    /// §5.6.4.4: on leaving recovery the saved window comes back.
    fn on_recovery_end(&mut self, _now_ns: u64) {
        self.packet_conservation = false;
        self.restore_cwnd();
    }

    /// An ECE counts as a loss event of the round (see the module's gaps).
    fn on_ecn(&mut self, _now_ns: u64, _in_flight_bytes: u64) {
        self.loss_in_round = true;
    }

    /// §5.6.4.4: a timeout saves the window and restarts from one segment;
    /// after a round of packet conservation the saved window comes back
    /// (Linux restores it when the Loss state ends).
    fn on_rto(&mut self, _now_ns: u64, _in_flight_bytes: u64) {
        self.save_cwnd();
        self.cwnd = self.mss;
        self.packet_conservation = true;
        self.restore_after_conservation = true;
        self.next_round_delivered = self.delivered;
    }

    /// Linux's `bbr_undo_cwnd`: the full-bandwidth count starts again and
    /// the window is at least the prior one.
    fn undo(&mut self, prior_cwnd: u64, _prior_ssthresh: u64) {
        self.reset_full_bw();
        self.loss_in_round = false;
        self.packet_conservation = false;
        self.restore_after_conservation = false;
        self.cwnd = self.cwnd.max(prior_cwnd);
    }

    fn in_slow_start(&self) -> bool {
        self.state == State::Startup
    }

    fn wants_rate_samples(&self) -> bool {
        true
    }

    /// §5.2 `BBRUpdateOnACK`: the model, the state, then the control
    /// parameters.
    fn on_rate_sample(&mut self, rs: &RateSample) {
        if self.rng == 0 {
            self.rng = rs.now_ns | 1;
        }
        self.delivered = rs.total_delivered;
        self.in_flight = rs.in_flight;
        if !self.has_seen_rtt {
            if let Some(rtt) = rs.rtt_ns {
                // §5.6.2: the initial rate from the first RTT sample.
                self.has_seen_rtt = true;
                self.init_pacing_rate(Some(rtt));
            }
        }
        // BBRUpdateModelAndState.
        self.update_latest_delivery_signals(rs);
        self.update_congestion_signals(rs);
        self.check_full_bw_reached(rs);
        self.check_startup_and_drain(rs.now_ns);
        self.update_probe_bw_cycle_phase(rs);
        self.update_min_rtt(rs);
        self.check_probe_rtt(rs);
        self.advance_latest_delivery_signals(rs);
        self.bound_bw_for_model();
        // BBRUpdateControlParameters.
        self.set_pacing_rate();
        self.set_cwnd(rs);
    }

    fn pacing_rate(&self) -> Option<u64> {
        Some(self.pacing_rate.max(1))
    }

    fn model(&self) -> Option<ModelInfo> {
        Some(ModelInfo {
            state: self.state.as_str(),
            bw: self.bw,
            min_rtt_ns: if self.min_rtt_ns == INF {
                0
            } else {
                self.min_rtt_ns
            },
            pacing_rate: self.pacing_rate,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;
    const RTT: u64 = 20_000_000;

    /// A path that ACKs each round's data in `acks` ACKs at a given
    /// delivery rate (bytes/s): each ACK's `prior_delivered` is the count
    /// when the round began, so every round's first ACK starts a BBR
    /// round (§5.5.1).
    struct Feed {
        now: u64,
        delivered: u64,
        /// Bytes in flight each sample reports (0: the window, at most a
        /// round's data).
        in_flight: u64,
    }

    impl Feed {
        fn new() -> Feed {
            Feed {
                now: 1_000_000,
                delivered: 0,
                in_flight: 0,
            }
        }

        fn round(&mut self, b: &mut Bbr, rate: u64, acks: u64) {
            let bytes = Bbr::volume(rate, RTT).max(acks);
            // The data ACKed in this round trip was sent when the previous
            // round trip's deliveries were complete.
            let prior = self.delivered;
            for _ in 0..acks {
                self.delivered += bytes / acks;
                self.now += RTT / acks;
                b.on_rate_sample(&RateSample {
                    now_ns: self.now,
                    delivered: self.delivered - prior,
                    interval_ns: (u128::from(self.delivered - prior) * 1_000_000_000
                        / u128::from(rate.max(1))) as u64,
                    prior_delivered: prior,
                    total_delivered: self.delivered,
                    newly_acked: bytes / acks,
                    in_flight: if self.in_flight > 0 {
                        self.in_flight
                    } else {
                        b.window().min(bytes)
                    },
                    is_cwnd_limited: true,
                    rtt_ns: Some(RTT),
                    ..RateSample::default()
                });
            }
        }
    }

    /// §4.3.1.1: Startup ends when three rounds in a row grow `max_bw` by
    /// less than 25 %: with the rate doubling for five rounds and then
    /// flat, the third flat round's start is the exit, and BBR enters
    /// Drain with ssthresh at one BDP.
    #[test]
    fn startup_exits_after_three_rounds_without_25_percent_growth() {
        let mut b = Bbr::new(MSS, 10);
        let mut f = Feed::new();
        let mut rate = 500_000;
        for _ in 0..5 {
            f.round(&mut b, rate, 20);
            assert_eq!(b.state(), State::Startup);
            rate *= 2;
        }
        let plateau = rate;
        // Round 1 still shows growth; rounds 2, 3 and 4 do not: the
        // count reaches 3 at the start of the fourth flat round (when the
        // third flat round's samples are complete).
        for k in 1..=3 {
            f.round(&mut b, plateau, 20);
            assert_eq!(b.state(), State::Startup, "flat round {k}");
        }
        f.round(&mut b, plateau, 20);
        assert_ne!(b.state(), State::Startup);
        assert!(b.full_bw_reached());
        assert_eq!(b.max_bw(), plateau);
        assert_eq!(b.ssthresh(), Bbr::volume(plateau, RTT));
    }

    /// Growth is measured against the bandwidth of the last round trip
    /// that grew by 25 %: a 20 % step after a plateau does not restart the
    /// count (Startup still ends 3 rounds after the plateau began), a 30 %
    /// step does (it ends 3 rounds after the step).
    #[test]
    fn only_growth_of_25_percent_restarts_the_count() {
        for (step_pct, rounds_in_startup) in [(120u64, 3), (130u64, 6)] {
            let mut b = Bbr::new(MSS, 10);
            let mut f = Feed::new();
            f.round(&mut b, 1_000_000, 10);
            let mut rounds = 0;
            for rate in [1_000_000, 1_000_000 * step_pct / 100] {
                for _ in 0..2 {
                    if b.state() == State::Startup {
                        f.round(&mut b, rate, 10);
                        rounds += 1;
                    }
                }
            }
            while b.state() == State::Startup {
                f.round(&mut b, 1_000_000 * step_pct / 100, 10);
                rounds += 1;
                assert!(rounds < 20);
            }
            assert_eq!(rounds, rounds_in_startup, "{step_pct} %");
        }
    }

    /// §5.6.2 and the gain table: Startup paces at 2.77 × bw, Drain at
    /// 0.35 × bw, ProbeBW_CRUISE at 1 × bw, each less the 1 % margin.
    #[test]
    fn pacing_rates_follow_the_state_gains() {
        let mut b = Bbr::new(MSS, 10);
        let mut f = Feed::new();
        f.round(&mut b, 1_000_000, 10);
        f.round(&mut b, 1_000_000, 10);
        assert_eq!(b.state(), State::Startup);
        assert_eq!(b.pacing_rate().unwrap(), 1_000_000 * 277 / 100 * 99 / 100);
        // A queue of 3 BDPs keeps Drain from ending at once.
        f.in_flight = 3 * Bbr::volume(1_000_000, RTT);
        for _ in 0..3 {
            f.round(&mut b, 1_000_000, 10);
        }
        assert_eq!(b.state(), State::Drain);
        // Drain's rate is below the pipe, but the rate only falls once the
        // pipe was found full (it was).
        assert_eq!(b.pacing_rate().unwrap(), 1_000_000 * 35 / 100 * 99 / 100);
        // Drained to a BDP: ProbeBW_DOWN, and with the flight already at
        // the BDP, CRUISE at once (gain 1).
        f.in_flight = 0;
        f.round(&mut b, 1_000_000, 10);
        assert_eq!(b.state(), State::ProbeBwCruise);
        assert_eq!(b.pacing_rate().unwrap(), 1_000_000 * 99 / 100);
    }

    /// §5.5.3/§4.3.4: with min_rtt not refreshed for 5 s, BBR enters
    /// ProbeRTT, holds the window at max(BDP / 2, 4 MSS) for 200 ms and a
    /// round, then returns to ProbeBW with its prior window.
    #[test]
    fn probe_rtt_comes_every_5_s_and_lasts_200_ms_and_a_round() {
        let mut b = Bbr::new(MSS, 10);
        let mut f = Feed::new();
        let rate = 12_500_000; // 100 Mbit/s: BDP 250 kB at 20 ms
        for _ in 0..8 {
            f.round(&mut b, rate, 20);
        }
        assert!(b.state().is_probe_bw(), "{:?}", b.state());
        let mut entered = None;
        let mut left = None;
        while f.now < 8_000_000_000 {
            f.round(&mut b, rate, 20);
            if b.state() == State::ProbeRtt && entered.is_none() {
                entered = Some(f.now);
                let bdp = Bbr::volume(rate, RTT);
                assert!(b.window() <= (bdp / 2).max(4 * MSS) + MSS, "{}", b.window());
            }
            if entered.is_some() && left.is_none() && b.state() != State::ProbeRtt {
                left = Some(f.now);
            }
        }
        let (entered, left) = (entered.expect("entered ProbeRTT"), left.expect("left it"));
        assert!(
            (5_000_000_000..5_300_000_000).contains(&entered),
            "{entered}"
        );
        let stay = left - entered;
        assert!(
            (PROBE_RTT_DURATION_NS..PROBE_RTT_DURATION_NS + 3 * RTT).contains(&stay),
            "{stay}"
        );
    }

    /// §5.5.2: a lower rate replaces `max_bw` only once the two-cycle
    /// filter forgot the higher one; a higher rate is taken at once.
    #[test]
    fn max_bw_forgets_a_higher_rate_after_two_probe_bw_cycles() {
        let mut b = Bbr::new(MSS, 10);
        let mut f = Feed::new();
        for _ in 0..8 {
            f.round(&mut b, 2_500_000, 20);
        }
        assert_eq!(b.max_bw(), 2_500_000);
        let cycles = b.cycle_count();
        let mut rounds = 0;
        while b.max_bw() > 1_250_000 {
            f.round(&mut b, 1_250_000, 20);
            rounds += 1;
            assert!(b.cycle_count() <= cycles + 2, "{rounds} rounds");
            assert!(rounds < 1_000);
        }
        assert_eq!(
            b.cycle_count(),
            cycles + 2,
            "forgotten at the second cycle's start"
        );
        f.round(&mut b, 5_000_000, 20);
        assert_eq!(b.max_bw(), 5_000_000);
    }

    /// §5.5.10: a loss rate above 2 % of the flight while probing up sets
    /// `inflight_hi` and ends the probe (→ DOWN); 1 % does not.
    #[test]
    fn loss_above_two_percent_while_probing_up_caps_inflight_hi() {
        for (lost_pct, capped) in [(1u64, false), (5u64, true)] {
            let mut b = Bbr::new(MSS, 10);
            let mut f = Feed::new();
            for _ in 0..8 {
                f.round(&mut b, 2_500_000, 20);
            }
            let mut guard = 0;
            while b.state() != State::ProbeBwUp {
                f.round(&mut b, 2_500_000, 20);
                guard += 1;
                assert!(guard < 1_000);
            }
            assert_eq!(b.inflight_hi(), INF);
            let tx = 60_000;
            b.on_rate_sample(&RateSample {
                now_ns: f.now + 1,
                delivered: tx,
                interval_ns: RTT,
                prior_delivered: f.delivered,
                total_delivered: f.delivered + MSS,
                newly_acked: MSS,
                newly_lost: tx * lost_pct / 100,
                lost: tx * lost_pct / 100,
                tx_in_flight: tx,
                in_flight: tx,
                is_cwnd_limited: true,
                rtt_ns: Some(RTT),
                ..RateSample::default()
            });
            if capped {
                assert_eq!(b.state(), State::ProbeBwDown);
                assert!(b.inflight_hi() >= tx && b.inflight_hi() < INF);
            } else {
                assert_eq!(b.state(), State::ProbeBwUp);
                assert_eq!(b.inflight_hi(), INF);
            }
        }
    }
}
