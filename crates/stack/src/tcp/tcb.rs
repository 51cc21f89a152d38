//! The transmission control block: one connection's state machine, with no
//! I/O of its own (sans-IO, as in quinn-proto).
//!
//! The caller hands each arriving segment to [`Tcb::input_ecn`] with the current
//! time, and asks [`Tcb::output`] for the segments to send; timers are a
//! single deadline ([`Tcb::deadline`]) that the caller schedules and reports
//! back with [`Tcb::on_timer`]. What the application should learn (data,
//! end of stream, an error, a new connection) is returned as [`Effects`].
//!
//! Input processing follows RFC 9293 §3.10.7, split by state: `syn_sent`,
//! `syn_received`, then the synchronized states, each step quoted next to
//! its code. RST and SYN in synchronized states follow RFC 5961 (challenge
//! ACKs). Loss recovery is SACK-based (RFC 6675) with FACK-style loss
//! marking (every un-SACKed byte below the highest SACKed one counts as
//! lost), NewReno partial-ACK handling (RFC 6582) without SACK. The SACK
//! scoreboard survives a retransmission timeout (as in Linux), so the
//! resend after it skips SACKed data; ECN (RFC 3168) lives in `ecn.rs`.
//! With `LossDetection::Rack` (the default, as on Linux)
//! losses are detected by RACK-TLP (RFC 8985, `../rack.rs`, hooked in by
//! `tcb/loss.rs`) instead of the duplicate-ACK threshold and FACK marking:
//! per-segment transmit times, a reordering timer and a tail loss probe.
//! A window reduction found spurious (DSACKs, RFC 3708; timestamps, RFC
//! 3522) is undone as Linux does (`tcb/undo.rs`). With SACK, what fast
//! recovery sends on each ACK is Proportional Rate Reduction's (RFC 9937,
//! `../prr.rs`, as Linux): [`Tcb::prr_on_ack`] counts each ACK and the
//! send loops use [`Tcb::send_cwnd`].

use super::buffers::{Duplicate, RecvBuffer, Scoreboard, SendBuffer};
use super::deadline::Deadline;
use super::ecn::{EcnState, Reaction};
use super::keepalive::{self, KeepaliveTimer};
use super::prr::Prr;
use super::rack::Rack;
use super::rate::RateState;
use super::TcpConfig;
use crate::endpoint::SocketError;
use elvis_kernel::Time;
use elvis_message::Message;
use elvis_tcpcc::{AckEvent, CongestionControl, Controller, EcnAck, EcnFeedback};
use elvis_wire::tcp::{Control, Repr, SeqNumber};
use serde::Serialize;
use std::net::SocketAddrV4;
use std::rc::Rc;
use std::time::Duration;
use undo::Evidence;

/// Connection states (RFC 9293 §3.3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum State {
    SynSent,
    SynReceived,
    Established,
    FinWait1,
    FinWait2,
    CloseWait,
    Closing,
    LastAck,
    TimeWait,
    Closed,
}

/// Per-connection statistics, readable by applications and in reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TcpStats {
    pub segments_sent: u64,
    pub segments_received: u64,
    pub bytes_sent: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub retransmitted_segments: u64,
    pub retransmitted_bytes: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
    /// Retransmissions found lost (and sent again) before the RTO.
    pub lost_retransmissions: u64,
    pub rtt_samples: u64,
    /// Smoothed RTT, ns (0 before the first sample).
    pub srtt_ns: u64,
    pub min_rtt_ns: u64,
    /// Current congestion window, bytes: the congestion control's (in
    /// fast recovery its target, `ssthresh`; what PRR lets each ACK send
    /// there is not shown, unlike Linux's `tcpi_snd_cwnd`).
    pub cwnd: u64,
    pub ssthresh: u64,
    /// Data segments received with the IPv4 ECN field CE (RFC 3168).
    pub ce_received: u64,
    /// ACKs received with ECE set (ECN negotiated).
    pub ece_received: u64,
    /// Congestion-window reductions in answer to ECE (at most one per
    /// window of data, RFC 3168 §6.1.2).
    pub ecn_reductions: u64,
    /// Segments dropped by PAWS: a timestamp older than TS.Recent (RFC
    /// 7323 §5.3 R1).
    pub paws_rejected: u64,
    /// Tail loss probes sent (RFC 8985 §7.3).
    pub tlp_probes: u64,
    /// Losses a tail loss probe repaired, each answered by one window
    /// reduction (RFC 8985 §7.4).
    pub tlp_recoveries: u64,
    /// Segments sent carrying a DSACK block (RFC 2883): duplicate data
    /// received and reported.
    pub dsacks_sent: u64,
    /// ACKs received whose first SACK block is a DSACK (RFC 2883 §4).
    pub dsacks_received: u64,
    /// Window reductions undone because the loss recovery (fast recovery
    /// or after a timeout) was found spurious, by DSACKs of all its
    /// retransmissions or by a timestamp echo older than the first one
    /// (Linux's `TCPFullUndo` + `TCPPartialUndo` + `TCPDSACKUndo` +
    /// `TCPLossUndo`; `tcb/undo.rs`).
    pub undos: u64,
    /// A model-based congestion control's estimates (BBR; absent for the
    /// others).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<CcModel>,
}

/// A model-based congestion control's estimates (BBR's, Linux's
/// `tcp_bbr_info`), in a connection's statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CcModel {
    /// The state (`startup`, `drain`, `probe_bw_down`, `probe_bw_cruise`,
    /// `probe_bw_refill`, `probe_bw_up`, `probe_rtt`).
    pub state: &'static str,
    /// The bottleneck bandwidth estimate, bit/s.
    pub bw_bps: u64,
    /// The minimum RTT estimate, ns (0: none yet).
    pub min_rtt_ns: u64,
    /// The pacing rate, bit/s.
    pub pacing_rate_bps: u64,
}

impl From<elvis_tcpcc::ModelInfo> for CcModel {
    fn from(m: elvis_tcpcc::ModelInfo) -> CcModel {
        CcModel {
            state: m.state,
            bw_bps: m.bw.saturating_mul(8),
            min_rtt_ns: m.min_rtt_ns,
            pacing_rate_bps: m.pacing_rate.saturating_mul(8),
        }
    }
}

/// The counters a connection keeps: [`TcpStats`] less the fields read from
/// the live state when asked (RTT, window), so that they cost no memory
/// per connection and no work per segment.
///
/// The three event counts keep their low 32 bits here and the carry in
/// the boxed [`LossCounters`] (`high`), which the first wrap allocates
/// (after 2^32 segments, 6 TB of full-sized ones): the counts read as
/// `u64` exactly, and cost 12 bytes instead of 24.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    pub bytes_sent: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    /// Low 32 bits of the segments sent, segments received and RTT
    /// samples ([`Counters::count`]).
    low: [u32; 3],
    /// Loss counters, allocated at the first loss event.
    loss: Option<Box<LossCounters>>,
}

/// The counts [`Counters`] keeps in 32 + 32 bits.
#[derive(Clone, Copy, Debug)]
pub enum Count {
    SegmentsSent = 0,
    SegmentsReceived = 1,
    RttSamples = 2,
}

/// The counters of loss, ECN and PAWS events (most connections never have
/// one).
#[derive(Clone, Debug, Default)]
pub struct LossCounters {
    pub retransmitted_segments: u64,
    pub retransmitted_bytes: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
    pub lost_retransmissions: u64,
    pub ce_received: u64,
    pub ece_received: u64,
    pub ecn_reductions: u64,
    pub paws_rejected: u64,
    pub tlp_probes: u64,
    pub tlp_recoveries: u64,
    pub dsacks_sent: u64,
    pub dsacks_received: u64,
    pub undos: u64,
    /// The high 32 bits of [`Counters`]' event counts, by [`Count`].
    high: [u32; 3],
}

impl Counters {
    /// Adds one to `c`.
    pub fn count(&mut self, c: Count) {
        let low = &mut self.low[c as usize];
        *low = low.wrapping_add(1);
        if *low == 0 {
            let high = &mut self.loss().high[c as usize];
            *high = high.wrapping_add(1);
        }
    }

    /// Adds `n` to `c`.
    pub fn add(&mut self, c: Count, n: u32) {
        let low = &mut self.low[c as usize];
        let (sum, carry) = low.overflowing_add(n);
        *low = sum;
        if carry {
            let high = &mut self.loss().high[c as usize];
            *high = high.wrapping_add(1);
        }
    }

    /// Returns the count `c`.
    pub fn get(&self, c: Count) -> u64 {
        let high = self.loss.as_deref().map_or(0, |l| l.high[c as usize]);
        u64::from(high) << 32 | u64::from(self.low[c as usize])
    }

    /// Returns the loss counters, allocating them on first use.
    pub fn loss(&mut self) -> &mut LossCounters {
        self.loss.get_or_insert_with(Default::default)
    }

    /// Returns the loss counters (zero before any loss).
    pub fn losses(&self) -> LossCounters {
        self.loss.as_deref().cloned().unwrap_or_default()
    }
}

/// A segment to send: header fields and payload (addresses are the
/// connection's).
pub struct Segment {
    pub repr: Repr,
    pub payload: Message,
    /// Send as ECN-capable, ECT(0) (RFC 3168: new data of an ECN
    /// connection only).
    pub ect: bool,
    /// Payload bytes per frame when the payload is to be cut into several
    /// frames below TCP (a TSO segment, see `stack::offload`); 0: one
    /// frame.
    pub gso_size: u16,
}

/// What the application side should learn after a call.
#[derive(Default, Debug)]
pub struct Effects {
    /// Data or end of stream became readable, or an error happened.
    pub readable: bool,
    /// Send-buffer space was freed (or the connection failed).
    pub writable: bool,
    /// The connection became established (for `connect` and `accept`).
    pub established: bool,
    /// The connection is over and its slot can be freed.
    pub closed: bool,
}

/// Transmission control block.
pub struct Tcb {
    pub state: State,
    pub local: SocketAddrV4,
    pub remote: SocketAddrV4,
    // Send sequence space (RFC 9293 §3.3.1).
    iss: SeqNumber,
    snd_una: SeqNumber,
    snd_nxt: SeqNumber,
    /// Highest sequence number sent so far (+1).
    snd_max: SeqNumber,
    /// (u32: at most 65,535 << 14.)
    snd_wnd: u32,
    snd_wl1: SeqNumber,
    snd_wl2: SeqNumber,
    snd_wscale: u8,
    /// End of the last short data segment sent (Linux's `snd_sml`, for
    /// Minshall's Nagle).
    snd_sml: SeqNumber,
    pub sndbuf: SendBuffer,
    /// The application shut down writing: send FIN after the data.
    fin_queued: bool,
    // Receive sequence space.
    rcv_nxt: SeqNumber,
    pub rcvbuf: RecvBuffer,
    rcv_wscale: u8,
    /// Highest right edge of the window advertised so far.
    rcv_adv: SeqNumber,
    pub fin_received: bool,
    // Options.
    /// (u32: the MTU less headers; 8 bytes less than a usize and padding.)
    mss: u32,
    ts_enabled: bool,
    /// TS.Recent (RFC 7323 §4.3) and when it was last set (§5.5).
    ts_recent: u32,
    ts_recent_at: Time,
    sack_enabled: bool,
    // Round-trip time (RFC 6298).
    // Nanoseconds (a `Duration` takes 16 bytes); `NO_RTT` before the
    // first sample. Read through `srtt()`, `rttvar()`, `rto()`, `min_rtt()`.
    srtt_ns: u64,
    rttvar_ns: u64,
    rto_ns: u64,
    min_rtt_ns: u64,
    // Congestion control and recovery.
    cc: Controller,
    /// Explicit Congestion Notification (RFC 3168, `ecn.rs`).
    ecn: EcnState,
    /// Loss recovery and the rarely armed timers, while in use ([`Cold`]).
    cold: Option<Box<Cold>>,
    // Timers (deadlines).
    rto_at: Deadline,
    delack_at: Deadline,
    /// (Small integers: the TCB's size is a memory contract.)
    persist_backoff: u8,
    syn_retries: u16,
    /// Consecutive retransmission timeouts since `snd_una` last advanced.
    retries: u32,
    /// Segments received since our last ACK.
    ack_pending: u32,
    ack_now: bool,
    /// Data segments the NIC takes now (set by the caller before each call).
    /// (`u32::MAX`: no limit.)
    pub budget: u32,
    /// Most frames one segment may be cut into below TCP (TCP segmentation
    /// offload, `stack::offload`); 0 or 1: one frame per segment. Set by
    /// the caller before each call, like `budget`.
    pub tso_frames: u8,
    /// Set when data waited for NIC room.
    pub nic_blocked: bool,
    // Application side.
    /// The error the application learns next (boxed: rare, and a
    /// `SocketError` is several words).
    pub error: Option<Box<SocketError>>,
    pub nodelay: bool,
    pub stats: Counters,
    /// Shared by every connection without per-socket buffer options.
    cfg: Rc<TcpConfig>,
    /// `SO_KEEPALIVE` (off: `None`).
    pub keepalive: Option<Box<KeepaliveTimer>>,
}

/// The part of a connection's state that an idle established connection
/// does not need: loss recovery (RFC 6675 / RFC 6582), the SACK
/// scoreboard, the classic RTT timing of a segment, duplicate-ACK
/// counting, and the persist and TIME-WAIT timers. It is boxed in the TCB
/// when first written with something other than its idle value and freed
/// again at the end of the input or timer call that returns it to idle
/// (`Cold::is_idle`), so a connection pays one pointer for it between
/// bursts. RACK-TLP's per-segment state and the peer's SYN options (kept
/// for the SYN-ACK) live here too. (`rexmit_next`, `rexmit_bytes_in_recovery` and `rexmit_mark`
/// are read only while `recovery` is set; entering recovery sets the first
/// two and the retransmission of `snd_una` sets the third, so they do not
/// keep the box alive.)
#[derive(Debug)]
pub struct Cold {
    /// The recovery point while in fast recovery (RFC 6582 "recover").
    recovery: Option<SeqNumber>,
    /// Next sequence number to consider for retransmission in recovery.
    rexmit_next: SeqNumber,
    /// (u32: at most the send buffer, 1 GiB; the TCB's size is a memory
    /// contract.)
    rexmit_bytes_in_recovery: u32,
    /// `snd_max` at the last RTO while data sent before it is outstanding:
    /// no fast recovery until it is acknowledged (RFC 6582 §3.2 step 1
    /// "recover"; Linux's Loss state), so an RTO and the SACKs still
    /// arriving for the data it resends do not reduce the window twice.
    rto_high: Option<SeqNumber>,
    /// The retransmission of `snd_una` in this recovery: (its sequence
    /// number, `snd_max` when it was sent), to detect its loss.
    rexmit_mark: Option<(SeqNumber, SeqNumber)>,
    /// Duplicate ACKs since the last new ACK.
    dupacks: u32,
    /// Classic timed segment when timestamps are off: (seq, send time).
    timed: Option<(SeqNumber, Time)>,
    scoreboard: Scoreboard,
    persist_at: Deadline,
    timewait_at: Deadline,
    /// RACK-TLP state (RFC 8985, `rack.rs`), while data is in flight.
    rack: Option<Box<Rack>>,
    /// The options the peer offered in its SYN (a passive open), for our
    /// SYN-ACK; read only in SYN-RECEIVED.
    peer_syn_opts: Option<(Option<u16>, Option<u8>, bool, bool)>,
    /// The DSACK block (RFC 2883) the next segment we send leads its SACK
    /// blocks with; set by the input call that received the duplicate,
    /// whose immediate ACK takes it (Linux's `duplicate_sack[0]`).
    dsack: Option<(SeqNumber, SeqNumber)>,
    /// The undo bookkeeping of the last loss-recovery episode
    /// (`tcb/undo.rs`), until it is undone, a new episode begins, or the
    /// box is freed ([`Cold::is_idle`] does not read it: it alone does not
    /// keep the box).
    undo: Option<undo::Undo>,
    /// Proportional Rate Reduction's state in this recovery (`../prr.rs`;
    /// read only while `recovery` is set, which starts it).
    prr: Prr,
    /// RACK marked segments lost during the ACK being processed (PRR's
    /// `safeACK` needs "no further loss indicated").
    prr_new_loss: bool,
    /// Delivery-rate samples and pacing (`../rate.rs`), for a congestion
    /// control that asks for them (BBR); it keeps the box for the
    /// connection's life.
    rate: Option<Box<RateState>>,
}

/// A connection's state before an ACK, for PRR's count of what the ACK
/// delivered.
#[derive(Clone, Copy)]
pub struct PriorAck {
    una: SeqNumber,
    sacked: usize,
    recovering: bool,
}

impl Cold {
    /// The values of a connection that holds no cold state.
    const IDLE: Cold = Cold {
        recovery: None,
        rexmit_next: SeqNumber(0),
        rexmit_bytes_in_recovery: 0,
        rto_high: None,
        rexmit_mark: None,
        dupacks: 0,
        timed: None,
        scoreboard: Scoreboard::EMPTY,
        persist_at: Deadline::NONE,
        timewait_at: Deadline::NONE,
        rack: None,
        peer_syn_opts: None,
        dsack: None,
        undo: None,
        prr: Prr::NONE,
        prr_new_loss: false,
        rate: None,
    };

    /// Returns true when every field that is read outside recovery holds
    /// its idle value, so the box can go.
    fn is_idle(&self) -> bool {
        self.recovery.is_none()
            && self.rto_high.is_none()
            && self.dupacks == 0
            && self.timed.is_none()
            && self.scoreboard.is_empty()
            && self.persist_at.is_none()
            && self.timewait_at.is_none()
            && self.rack.is_none()
            && self.peer_syn_opts.is_none()
            && self.dsack.is_none()
            && self.rate.is_none()
    }
}

/// What [`Tcb::cold`] reads when the connection holds no cold state.
static IDLE_COLD: Cold = Cold::IDLE;

/// A configuration a TCB can hold: the simulation's shared one (no copy)
/// or a plain one (copied, for tests and one-off settings).
pub trait SharedConfig {
    fn shared(self) -> Rc<TcpConfig>;
}

impl SharedConfig for &Rc<TcpConfig> {
    fn shared(self) -> Rc<TcpConfig> {
        Rc::clone(self)
    }
}

impl SharedConfig for &TcpConfig {
    fn shared(self) -> Rc<TcpConfig> {
        Rc::new(self.clone())
    }
}

/// `srtt_ns` / `min_rtt_ns` before the first RTT sample.
const NO_RTT: u64 = u64::MAX;

/// Returns `d` in nanoseconds (saturating: 584 years).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX - 1)
}

/// Sequence-number helpers.
fn seq_between(lo: SeqNumber, x: SeqNumber, hi: SeqNumber) -> bool {
    lo <= x && x <= hi
}

const TCP_OPTIONS_TS: usize = 12;

impl Tcb {
    fn new(
        cfg: impl SharedConfig,
        local: SocketAddrV4,
        remote: SocketAddrV4,
        iss: SeqNumber,
        cc: Controller,
        mtu: usize,
        state: State,
    ) -> Tcb {
        let cfg = cfg.shared();
        let rcv_wscale = wscale_for(cfg.rcvbuf);
        Tcb {
            state,
            local,
            remote,
            iss,
            snd_una: iss,
            snd_nxt: iss,
            snd_max: iss,
            snd_wnd: 0,
            snd_wl1: SeqNumber(0),
            snd_wl2: iss,
            snd_wscale: 0,
            snd_sml: iss,
            sndbuf: SendBuffer::default(),
            fin_queued: false,
            rcv_nxt: SeqNumber(0),
            rcvbuf: RecvBuffer::default(),
            rcv_wscale,
            rcv_adv: SeqNumber(0),
            fin_received: false,
            mss: u32::try_from(mtu.saturating_sub(40).max(64)).unwrap_or(u32::MAX),
            ts_enabled: false,
            ts_recent: 0,
            ts_recent_at: Time::ZERO,
            sack_enabled: false,
            srtt_ns: NO_RTT,
            rttvar_ns: 0,
            rto_ns: nanos(cfg.initial_rto),
            min_rtt_ns: NO_RTT,
            cc,
            ecn: EcnState::new(iss),
            cold: None,
            rto_at: Deadline::NONE,
            delack_at: Deadline::NONE,
            persist_backoff: 0,
            syn_retries: 0,
            retries: 0,
            ack_pending: 0,
            ack_now: false,
            budget: u32::MAX,
            tso_frames: 0,
            nic_blocked: false,
            error: None,
            nodelay: false,
            stats: Counters::default(),
            cfg: cfg.clone(),
            keepalive: None,
        }
    }

    /// Returns a connection actively opened to `remote` (state SYN-SENT).
    pub fn connect(
        cfg: impl SharedConfig,
        local: SocketAddrV4,
        remote: SocketAddrV4,
        iss: SeqNumber,
        cc: Controller,
        mtu: usize,
    ) -> Tcb {
        Tcb::new(cfg, local, remote, iss, cc, mtu, State::SynSent)
    }

    /// Returns a connection passively opened by the SYN `syn` (state
    /// SYN-RECEIVED), RFC 9293 §3.10.7.2 "third, check for a SYN".
    pub fn accept(
        cfg: impl SharedConfig,
        local: SocketAddrV4,
        remote: SocketAddrV4,
        iss: SeqNumber,
        cc: Controller,
        mtu: usize,
        syn: &Repr,
    ) -> Tcb {
        let mut t = Tcb::new(cfg, local, remote, iss, cc, mtu, State::SynReceived);
        // "Set RCV.NXT to SEG.SEQ+1, IRS is set to SEG.SEQ"
        t.rcv_nxt = syn.seq_number + 1;
        t.rcv_adv = t.rcv_nxt;
        t.snd_wl1 = syn.seq_number;
        t.cold_mut().peer_syn_opts = Some((
            syn.max_seg_size,
            syn.window_scale,
            syn.sack_permitted,
            syn.timestamp.is_some(),
        ));
        t.apply_syn_options(syn);
        t.ecn.on_syn(syn, t.ecn_mode());
        t.snd_wnd = u32::from(syn.window_len);
        t
    }

    /// Re-creates, from a valid SYN cookie (`super::syncookie`), the
    /// connection a cookie SYN-ACK (`iss`) answered: in SYN-RECEIVED with
    /// the SYN-ACK counted as sent once, so that the ACK of it makes the
    /// connection ESTABLISHED. No RTT sample is taken from it (the
    /// SYN-ACK's time was not kept), as with Karn's rule.
    #[allow(clippy::too_many_arguments)]
    pub fn accept_cookie(
        cfg: impl SharedConfig,
        local: SocketAddrV4,
        remote: SocketAddrV4,
        iss: SeqNumber,
        cc: Controller,
        mtu: usize,
        syn: &Repr,
    ) -> Tcb {
        let mut t = Tcb::accept(cfg, local, remote, iss, cc, mtu, syn);
        t.snd_nxt = iss + 1;
        t.snd_max = t.snd_nxt;
        t.syn_retries = 1;
        t
    }

    /// Negotiates options from the peer's SYN (RFC 7323 §1.3, §2.2; RFC
    /// 2018 §2).
    fn apply_syn_options(&mut self, syn: &Repr) {
        if let Some(mss) = syn.max_seg_size {
            self.mss = self.mss.min(u32::from(mss).max(64));
        } else {
            // RFC 9293 §3.7.1: default send MSS 536.
            self.mss = self.mss.min(536);
        }
        match syn.window_scale {
            Some(s) => self.snd_wscale = s.min(14),
            None => {
                self.snd_wscale = 0;
                self.rcv_wscale = 0;
            }
        }
        self.sack_enabled = syn.sack_permitted && self.cfg.sack;
        if let Some((tsval, _)) = syn.timestamp.filter(|_| self.cfg.timestamps) {
            self.ts_enabled = true;
            self.ts_recent = tsval;
        }
    }

    /// Returns the cold state (idle values when there is none).
    #[inline]
    fn cold(&self) -> &Cold {
        self.cold.as_deref().unwrap_or(&IDLE_COLD)
    }

    /// Returns the cold state, allocating it on first use.
    fn cold_mut(&mut self) -> &mut Cold {
        self.cold.get_or_insert_with(|| Box::new(Cold::IDLE))
    }

    /// Applies `f`, which only moves fields towards their idle values, to
    /// the cold state if there is one (allocating none).
    #[inline]
    fn reset_cold(&mut self, f: impl FnOnce(&mut Cold)) {
        if let Some(c) = self.cold.as_deref_mut() {
            f(c);
        }
    }

    /// Frees the cold state once it is idle again (the peer's SYN options
    /// are forgotten once out of the handshake states, where nothing reads
    /// them).
    #[inline]
    fn tidy_cold(&mut self) {
        if !matches!(self.state, State::SynSent | State::SynReceived) {
            self.reset_cold(|c| c.peer_syn_opts = None);
        }
        if self.cold.as_deref().is_some_and(Cold::is_idle) {
            self.cold = None;
        }
    }

    /// Returns the payload bytes per full segment (MSS less options).
    fn smss(&self) -> usize {
        if self.ts_enabled {
            self.mss as usize - TCP_OPTIONS_TS
        } else {
            self.mss as usize
        }
    }

    /// Returns the send buffer's size (`SO_SNDBUF`, from the configuration).
    pub fn sndbuf_cap(&self) -> usize {
        self.cfg.sndbuf
    }

    /// Returns the receive buffer's size (`SO_RCVBUF`, from the
    /// configuration).
    pub fn rcvbuf_cap(&self) -> usize {
        self.cfg.rcvbuf
    }

    /// Returns true in states where data may be sent.
    /// (Data queued before our FIN is still sent, or resent after a
    /// timeout, in FIN-WAIT-1, CLOSING and LAST-ACK.)
    fn can_send_data(&self) -> bool {
        matches!(
            self.state,
            State::Established
                | State::CloseWait
                | State::FinWait1
                | State::Closing
                | State::LastAck
        )
    }

    /// Returns the bytes the application may still write.
    pub fn send_space(&self) -> usize {
        if self.fin_queued
            || !matches!(
                self.state,
                State::SynSent | State::SynReceived | State::Established | State::CloseWait
            )
        {
            return 0;
        }
        self.sndbuf_cap().saturating_sub(self.sndbuf.len())
    }

    /// Returns the queued bytes not sent yet.
    pub fn unsent(&self) -> usize {
        self.sndbuf.len().saturating_sub(self.flight())
    }

    /// Queues application data (the caller checked [`Tcb::send_space`]).
    pub fn write(&mut self, data: Message) {
        self.sndbuf.push(data);
    }

    /// Returns true when no more data will arrive (FIN received).
    pub fn at_eof(&self) -> bool {
        self.fin_received && self.rcvbuf.ready_len() == 0
    }

    /// Takes up to `max` received bytes; asks for a window update if that
    /// frees enough (`Tcb::window_update_due`).
    pub fn read(&mut self, max: usize) -> Message {
        let m = self.rcvbuf.take(max);
        if !m.is_empty() && !self.fin_received && self.window_update_due() {
            self.ack_now = true;
        }
        m
    }

    /// Returns true when a read has freed enough buffer for a window
    /// update, by Linux's rule (`__tcp_cleanup_rbuf`): only once the window
    /// still open to the peer has fallen to half the largest one or less,
    /// and the window we can now offer is at least twice it ("lots means
    /// at least twice"). A reader that keeps up never triggers it: the
    /// ACKs that data triggers carry the window. (Linux's other reason to
    /// ACK after a read, more than one full segment not yet acknowledged,
    /// cannot arise here: `input` acknowledges every second full segment
    /// and every short one at once. The end of stream is Linux's
    /// `RCV_SHUTDOWN`: nothing more will come to open the window for.)
    /// This also keeps RFC 9293 §3.8.6.2.2's receiver SWS avoidance: the
    /// update opens the window by half the buffer at least.
    fn window_update_due(&self) -> bool {
        let open = (self.rcv_adv - self.rcv_nxt).max(0) as usize;
        if 2 * open > self.rcvbuf_cap() {
            return false;
        }
        // What the next segment advertises (whole units of the scale).
        let offer = (self.rcv_window() >> self.rcv_wscale).min(65_535) << self.rcv_wscale;
        offer > 0 && offer >= 2 * open
    }

    /// Returns true when an ACK is to be sent at once (for example, a
    /// window update after [`Tcb::read`]).
    pub fn ack_due(&self) -> bool {
        self.ack_now
    }

    /// The application closes its writing side (`shutdown(Write)` or close).
    pub fn shutdown_write(&mut self) {
        if !self.fin_queued {
            self.fin_queued = true;
            if self.state == State::SynSent {
                // RFC 9293 §3.10.4 CLOSE, SYN-SENT: "Delete the TCB".
                self.close();
            }
        }
    }

    /// Aborts: returns the RST to send, if any (RFC 9293 §3.10.5 ABORT).
    pub fn abort(&mut self) -> Option<Segment> {
        let rst = match self.state {
            State::SynReceived
            | State::Established
            | State::FinWait1
            | State::FinWait2
            | State::CloseWait => {
                Some(self.segment(Control::Rst, self.snd_nxt, Message::new(), false))
            }
            _ => None,
        };
        self.close();
        rst
    }

    /// Enters CLOSED and stops every timer: a deleted TCB sends nothing.
    fn close(&mut self) {
        self.state = State::Closed;
        self.rto_at = Deadline::NONE;
        self.delack_at = Deadline::NONE;
        self.reset_cold(|c| c.persist_at = Deadline::NONE);
        self.reset_cold(|c| c.timewait_at = Deadline::NONE);
    }

    /// Returns our receive window in bytes: the buffer less the in-order
    /// bytes the application has not read. Out-of-order bytes are not
    /// subtracted: they lie inside the window's sequence space already, so
    /// counting them would move the right edge left as they arrive, which
    /// RFC 9293 §3.8.6.2.2 says a receiver SHOULD NOT do ("shrinking the
    /// window"), and would make every duplicate ACK a window update to a
    /// sender that follows RFC 5681's definition strictly (smoltcp, found
    /// by the interop tests). Linux keeps its right edge the same way.
    fn rcv_window(&self) -> usize {
        self.rcvbuf_cap().saturating_sub(self.rcvbuf.ready_len())
    }

    /// Returns bytes sent and not acknowledged.
    fn flight(&self) -> usize {
        (self.snd_nxt - self.snd_una).max(0) as usize
    }

    /// Returns true when the window, not the application or the NIC, was
    /// what limited sending while `flight` bytes were outstanding (Linux's
    /// `tcp_is_cwnd_limited`, RFC 7661 §4.3): the flight filled the window
    /// to within one segment, or, in slow start, the window is still below
    /// twice the flight. The window grows only on ACKs of such flights, so
    /// a sender held back by a full NIC (back-pressure, like Linux's TCP
    /// Small Queues) does not inflate a window it is not using.
    fn cwnd_limited(&self, flight: u64) -> bool {
        let cwnd = self.cc.window();
        flight + self.smss() as u64 > cwnd || (self.cc.in_slow_start() && cwnd < 2 * flight)
    }

    /// Returns the data sent and still in the network, RFC 6675 "pipe"
    /// (FACK-style: holes below the highest SACK are lost).
    fn pipe(&self) -> usize {
        if let (Some(_), Some(p)) = (self.cold().recovery, self.rack_pipe()) {
            return p;
        }
        let outstanding = (self.snd_max - self.snd_una).max(0) as usize;
        match (self.cold().recovery, self.cold().scoreboard.highest()) {
            (Some(_), Some(high)) => {
                let below_high = (high - self.snd_una).max(0) as usize;
                let lost = below_high.saturating_sub(self.cold().scoreboard.sacked_bytes());
                outstanding.saturating_sub(self.cold().scoreboard.sacked_bytes() + lost)
                    + self.cold().rexmit_bytes_in_recovery as usize
            }
            _ => outstanding,
        }
    }

    /// Builds a segment with the current ACK and window.
    fn segment(
        &mut self,
        control: Control,
        seq: SeqNumber,
        payload: Message,
        now_ts: bool,
    ) -> Segment {
        let syn = control == Control::Syn;
        let window = self.rcv_window();
        let scaled = if syn {
            window.min(65_535)
        } else {
            (window >> self.rcv_wscale).min(65_535)
        };
        let ack_number = if self.state == State::SynSent && syn {
            None
        } else {
            Some(self.rcv_nxt)
        };
        let right = self.rcv_nxt + (scaled << if syn { 0 } else { self.rcv_wscale });
        if right > self.rcv_adv {
            self.rcv_adv = right;
        }
        let mut repr = Repr {
            src_port: self.local.port(),
            dst_port: self.remote.port(),
            control,
            seq_number: seq,
            ack_number: if control == Control::Rst && self.state == State::SynSent {
                None
            } else {
                ack_number
            },
            window_len: scaled as u16,
            window_scale: None,
            max_seg_size: None,
            sack_permitted: false,
            sack_ranges: [None; 4],
            timestamp: None,
            ece: false,
            cwr: false,
            payload_len: payload.len(),
        };
        let _ = now_ts;
        if syn {
            repr.max_seg_size = Some(self.mss.min(65_535) as u16);
            let offer = match self.cold().peer_syn_opts {
                None => (true, true, true), // active open: offer everything
                Some((_, ws, sack, ts)) => (ws.is_some(), sack, ts),
            };
            if offer.0 {
                repr.window_scale = Some(self.rcv_wscale);
            }
            repr.sack_permitted = offer.1 && self.cfg.sack;
            if offer.2 && self.cfg.timestamps {
                repr.timestamp = Some((0, self.ts_recent));
            }
            let active = self.cold().peer_syn_opts.is_none();
            (repr.ece, repr.cwr) = self.ecn.syn_flags(active, self.ecn_mode());
        } else if self.ts_enabled {
            repr.timestamp = Some((0, self.ts_recent));
        }
        if !syn && control != Control::Rst {
            // "sets ECE in every subsequent ACK" (RFC 3168 §6.1.3).
            repr.ece = self.ecn.echo();
        }
        if self.sack_enabled && control != Control::Syn && control != Control::Rst {
            self.sack_option(&mut repr);
        }
        let active_syn = syn && self.cold().peer_syn_opts.is_none();
        Segment {
            ect: control != Control::Rst && self.ect_always(active_syn),
            repr,
            payload,
            gso_size: 0,
        }
    }

    /// Returns whether every segment of this connection goes out ECT(0),
    /// not only new data: DCTCP's (Linux sets ECT on a DCTCP socket for
    /// the handshake, pure ACKs and retransmissions alike, `INET_ECN_xmit`
    /// in `tcp_ecn_send_syn` and `tcp_ecn_send`, as RFC 8311 §4.3 allows),
    /// so that a marking switch marks its ACKs instead of treating them
    /// as not ECN-capable. From its SYN (`active_syn`) until the SYN-ACK
    /// says whether ECN was agreed; after that only if it was.
    fn ect_always(&self, active_syn: bool) -> bool {
        self.cc.ecn_feedback() == elvis_tcpcc::EcnFeedback::Dctcp
            && (self.ecn.is_on() || active_syn)
    }

    /// Fills the SACK blocks of an outgoing segment: a pending DSACK first
    /// (RFC 2883 §4: "the first block of the SACK option should be a
    /// D-SACK block specifying the sequence numbers for the duplicate
    /// segment that triggered the acknowledgement"; sent once, Linux
    /// clears it as it writes the option), then the receive queue's
    /// blocks (RFC 2018 §4), 4 of them, or 3 beside timestamps.
    #[inline]
    fn sack_option(&mut self, repr: &mut Repr) {
        let mut i = 0;
        if self.cold().dsack.is_some() {
            if let Some((s, e)) = self.cold_mut().dsack.take() {
                repr.sack_ranges[0] = Some((s.0, e.0));
                self.stats.loss().dsacks_sent += 1;
                i = 1;
            }
        }
        if !self.rcvbuf.has_out_of_order() {
            return; // the common case
        }
        let max = if self.ts_enabled { 3 } else { 4 };
        for (s, e) in self.rcvbuf.sack_blocks(max - i).into_iter().flatten() {
            repr.sack_ranges[i] = Some((s.0, e.0));
            i += 1;
        }
    }

    /// Stamps TSval on an outgoing segment (µs clock, RFC 7323 §5.4 allows
    /// any rate from 1 ms to 1 s per tick; finer ticks only help RTTM).
    pub fn stamp(seg: &mut Segment, now: Time) {
        if let Some((_, ecr)) = seg.repr.timestamp {
            seg.repr.timestamp = Some((ts_clock(now), ecr));
        }
    }

    /// Returns the earliest timer deadline, if any.
    pub fn deadline(&self) -> Option<Time> {
        let min = |a: Option<Time>, b: Option<Time>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, None) => x,
            (None, y) => y,
        };
        let t = min(
            min(
                min(self.rto_at.get(), self.delack_at.get()),
                self.keepalive_deadline(),
            ),
            min(self.cold().persist_at.get(), self.cold().timewait_at.get()),
        );
        match self.cold().rate.as_deref() {
            Some(r) => min(t, r.pace_at.get()),
            None => t,
        }
    }

    /// Returns the statistics: the counters, and the congestion and RTT
    /// fields from the live state.
    pub fn stats(&self) -> TcpStats {
        let c = &self.stats;
        let l = c.losses();
        TcpStats {
            segments_sent: c.get(Count::SegmentsSent),
            segments_received: c.get(Count::SegmentsReceived),
            bytes_sent: c.bytes_sent,
            bytes_acked: c.bytes_acked,
            bytes_received: c.bytes_received,
            retransmitted_segments: l.retransmitted_segments,
            retransmitted_bytes: l.retransmitted_bytes,
            timeouts: l.timeouts,
            fast_recoveries: l.fast_recoveries,
            lost_retransmissions: l.lost_retransmissions,
            ce_received: l.ce_received,
            ece_received: l.ece_received,
            ecn_reductions: l.ecn_reductions,
            paws_rejected: l.paws_rejected,
            tlp_probes: l.tlp_probes,
            tlp_recoveries: l.tlp_recoveries,
            dsacks_sent: l.dsacks_sent,
            dsacks_received: l.dsacks_received,
            undos: l.undos,
            rtt_samples: c.get(Count::RttSamples),
            srtt_ns: self.srtt().map_or(0, |d| d.as_nanos() as u64),
            min_rtt_ns: self.min_rtt().map_or(0, |d| d.as_nanos() as u64),
            cwnd: self.cc.window(),
            ssthresh: self.cc.ssthresh(),
            model: self.cc.model().map(CcModel::from),
        }
    }

    /// Switches the congestion control to `alg` (`TCP_CONGESTION` on a
    /// connected socket, as Linux allows): the new algorithm starts from
    /// the current window and threshold (`elvis_tcpcc::take_over`).
    pub fn set_congestion(&mut self, alg: elvis_tcpcc::Algorithm) {
        if self.cc.name() == alg.as_str() {
            return; // Linux: setting the same algorithm changes nothing
        }
        let (cwnd, ssthresh) = (self.cc.window(), self.cc.ssthresh());
        self.cc = elvis_tcpcc::take_over(alg, self.smss() as u64, cwnd, ssthresh);
        self.cc.set_slow_start(self.cfg.slow_start);
        if !self.cc.wants_rate_samples() {
            self.reset_cold(|c| c.rate = None);
        }
    }

    /// Returns the congestion control's model (BBR's estimates), if it
    /// keeps one.
    pub fn cc_model(&self) -> Option<elvis_tcpcc::ModelInfo> {
        self.cc.model()
    }

    /// Returns the ECN mode this connection runs: the host's, or `On`
    /// when the congestion control needs ECN (DCTCP, as Linux's
    /// `TCP_CONG_NEEDS_ECN` overrides `tcp_ecn`).
    pub fn ecn_mode(&self) -> super::ecn::EcnMode {
        match self.cc.ecn_feedback() {
            elvis_tcpcc::EcnFeedback::Dctcp => super::ecn::EcnMode::On,
            elvis_tcpcc::EcnFeedback::Rfc3168 => self.cfg.ecn,
        }
    }

    /// Returns the congestion-control algorithm's name.
    pub fn cc_name(&self) -> &'static str {
        self.cc.name()
    }

    /// Returns true if `seq` is within the window of acceptable SYN-ACK acks.
    #[allow(dead_code)]
    fn in_flight(&self, seq: SeqNumber) -> bool {
        seq_between(self.snd_una, seq, self.snd_max)
    }
}

/// Length of a segment's payload implied by the header (for FIN position).
fn payload_len_of(seg: &Repr) -> usize {
    seg.payload_len
}

/// The timestamp clock: microseconds of virtual time, wrapping.
fn ts_clock(now: Time) -> u32 {
    // 0 means "no echo" to us, so never emit it.
    ((now.as_nanos() / 1_000) as u32).max(1)
}

/// Returns the window-scale shift that lets `buf` bytes be advertised.
fn wscale_for(buf: usize) -> u8 {
    let mut s = 0;
    while s < 14 && (65_535usize << s) < buf {
        s += 1;
    }
    s
}

/// Returns the RST answering `seg` (RFC 9293 §3.10.7.1 / §3.5.2).
pub fn rst_for(seg: &Repr, payload_len: usize) -> Repr {
    let (seq, ack) = match seg.ack_number {
        // "<SEQ=SEG.ACK><CTL=RST>"
        Some(a) => (a, None),
        // "<SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>"
        None => {
            let len = payload_len
                + usize::from(seg.control == Control::Syn)
                + usize::from(seg.control == Control::Fin);
            (SeqNumber(0), Some(seg.seq_number + len))
        }
    };
    Repr {
        src_port: seg.dst_port,
        dst_port: seg.src_port,
        control: Control::Rst,
        seq_number: seq,
        ack_number: ack,
        window_len: 0,
        window_scale: None,
        max_seg_size: None,
        sack_permitted: false,
        sack_ranges: [None; 4],
        timestamp: None,
        ece: false,
        cwr: false,
        payload_len: 0,
    }
}

mod ack;
#[doc(hidden)]
pub mod fuzz;
mod input;
mod loss;
mod output;
mod pacing;
#[cfg(test)]
mod tests;
mod timers;
mod undo;
