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
use super::TcpConfig;
use crate::socket::SocketError;
use elvis_kernel::Time;
use elvis_message::Message;
use elvis_tcpcc::{AckEvent, CongestionControl, Controller};
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
pub(crate) struct Counters {
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
pub(crate) enum Count {
    SegmentsSent = 0,
    SegmentsReceived = 1,
    RttSamples = 2,
}

/// The counters of loss, ECN and PAWS events (most connections never have
/// one).
#[derive(Clone, Debug, Default)]
pub(crate) struct LossCounters {
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
pub(crate) struct Segment {
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
pub(crate) struct Effects {
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
pub(crate) struct Tcb {
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
/// ([`Cold::is_idle`]), so a connection pays one pointer for it between
/// bursts. RACK-TLP's per-segment state and the peer's SYN options (kept
/// for the SYN-ACK) live here too. (`rexmit_next`, `rexmit_bytes_in_recovery` and `rexmit_mark`
/// are read only while `recovery` is set; entering recovery sets the first
/// two and the retransmission of `snd_una` sets the third, so they do not
/// keep the box alive.)
#[derive(Debug)]
pub(crate) struct Cold {
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
}

/// A connection's state before an ACK, for PRR's count of what the ACK
/// delivered.
#[derive(Clone, Copy)]
struct PriorAck {
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
    }
}

/// What [`Tcb::cold`] reads when the connection holds no cold state.
static IDLE_COLD: Cold = Cold::IDLE;

/// A configuration a TCB can hold: the simulation's shared one (no copy)
/// or a plain one (copied, for tests and one-off settings).
pub(crate) trait SharedConfig {
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
        t.ecn.on_syn(syn, t.cfg.ecn);
        t.snd_wnd = u32::from(syn.window_len);
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
    /// frees enough ([`Tcb::window_update_due`]).
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
            (repr.ece, repr.cwr) = self.ecn.syn_flags(active, self.cfg.ecn);
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
        Segment {
            repr,
            payload,
            ect: false,
            gso_size: 0,
        }
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
        min(
            min(
                min(self.rto_at.get(), self.delack_at.get()),
                self.keepalive_deadline(),
            ),
            min(self.cold().persist_at.get(), self.cold().timewait_at.get()),
        )
    }

    // ------------------------------------------------------------------
    // Output
    // ------------------------------------------------------------------

    /// Appends the segments to send now to `out`.
    pub fn output(&mut self, now: Time, out: &mut Vec<Segment>) {
        match self.state {
            State::SynSent | State::SynReceived => {
                if self.snd_max == self.iss {
                    let control = Control::Syn;
                    let seg = self.segment(control, self.iss, Message::new(), true);
                    self.snd_nxt = self.iss + 1;
                    self.snd_max = self.snd_nxt;
                    self.push(seg, now, out, false);
                    self.arm_rto(now);
                }
                return;
            }
            State::Closed | State::TimeWait => {
                self.flush_ack(now, out);
                return;
            }
            _ => {}
        }
        if self.cold().recovery.is_some() && self.sack_enabled {
            self.retransmit_holes(now, out);
        }
        self.send_new_data(now, out);
        self.send_fin(now, out);
        self.flush_ack(now, out);
        self.loss_rearm(now);
    }

    fn push(&mut self, seg: Segment, now: Time, out: &mut Vec<Segment>, is_retransmit: bool) {
        let len = seg.payload.len();
        // A TSO segment counts as the frames it becomes (Linux's OutSegs
        // counts `tcp_skb_pcount`).
        let frames = match seg.gso_size {
            0 => 1,
            g => len.div_ceil(usize::from(g)) as u32,
        };
        self.stats.add(Count::SegmentsSent, frames);
        if len > 0 {
            self.budget = self.budget.saturating_sub(frames);
        }
        self.stats.bytes_sent += len as u64;
        // Frames of `gso_size` bytes; one frame otherwise.
        let frame = match seg.gso_size {
            0 => len,
            g => usize::from(g),
        };
        self.loss_on_send(seg.repr.seq_number, len, frame, now);
        if len > 0 && self.cold().recovery.is_some() && self.prr_on() {
            self.cold_mut().prr.on_send(len as u64);
        }
        if is_retransmit {
            self.stats.loss().retransmitted_segments += 1;
            self.stats.loss().retransmitted_bytes += len as u64;
            if len > 0 && self.cold().undo.is_some() {
                self.undo_on_retransmit(now, frames);
            }
        }
        if seg.repr.ack_number.is_some() {
            self.ack_pending = 0;
            self.ack_now = false;
            self.delack_at = Deadline::NONE;
        }
        // Stamped where it will lie (one move of the segment, not two).
        out.push(seg);
        if let Some(last) = out.last_mut() {
            Tcb::stamp(last, now);
        }
    }

    fn arm_rto(&mut self, now: Time) {
        if self.rto_at.is_none() {
            self.rto_at = Deadline::at(now + self.rto());
        }
    }

    /// Sends new data allowed by the windows, Nagle and the receiver.
    fn send_new_data(&mut self, now: Time, out: &mut Vec<Segment>) {
        if !self.can_send_data() {
            return;
        }
        let smss = self.smss();
        loop {
            // Resending after an RTO: only what the receiver has not SACKed.
            let hole = self.skip_sacked_resend();
            let sent_unacked = (self.snd_nxt - self.snd_una).max(0) as usize;
            let available = self.sndbuf.len().saturating_sub(sent_unacked);
            if available == 0 {
                break;
            }
            let cwnd = self.send_cwnd() as usize;
            let in_net = if self.cold().recovery.is_some() {
                self.pipe()
            } else if self.cold().rto_high.is_some() {
                // After an RTO, SACKed bytes skipped over are not in the
                // network (Linux's in-flight count in its Loss state).
                self.flight().saturating_sub(
                    self.cold()
                        .scoreboard
                        .sacked_between(self.snd_una, self.snd_nxt),
                )
            } else {
                self.flight()
            };
            let peer_room = (self.snd_wnd as usize).saturating_sub(sent_unacked);
            let cc_room = cwnd.saturating_sub(in_net);
            let room = peer_room.min(cc_room);
            if peer_room == 0 && sent_unacked == 0 && self.cold().persist_at.is_none() {
                // Zero window: probe later (RFC 9293 §3.8.6.1).
                self.cold_mut().persist_at = Deadline::at(now + self.rto());
            }
            let want = available.min(smss).min(hole);
            let len = want.min(room);
            if len == 0 {
                break;
            }
            if self.budget == 0 {
                self.nic_blocked = true;
                break;
            }
            // Nagle (RFC 896 / RFC 9293 §3.7.4) with Minshall's change, as
            // Linux (`tcp_nagle_check`, `tcp_minshall_check`): hold a small
            // segment while an earlier small one is unacknowledged (a
            // resent hole goes as it is). Classic Nagle also held it
            // behind full segments, so that the last piece of a write
            // waited for the peer's delayed ACK of an odd full segment.
            if len < want {
                break;
            }
            let resend = self.snd_nxt < self.snd_max;
            let small_unacked = self.snd_sml > self.snd_una && self.snd_sml <= self.snd_nxt;
            if len < smss && !self.nodelay && sent_unacked > 0 && small_unacked && !resend {
                break;
            }
            if len < smss && !resend {
                self.snd_sml = self.snd_nxt + len;
            }
            let len = self.tso_extend(len, smss, available.min(hole).min(room));
            let payload = self.sndbuf.slice(sent_unacked, len);
            let mut seg = self.segment(Control::None, self.snd_nxt, payload, true);
            if len > smss {
                seg.gso_size = smss as u16;
            }
            if len == available {
                seg.repr.control = Control::Psh;
            }
            let is_rexmit = self.snd_nxt < self.snd_max;
            if !is_rexmit {
                // New data only: retransmissions are not ECT (RFC 3168
                // §6.1.5), and CWR goes on "the first new data packet sent
                // after the window reduction" (§6.1.2).
                seg.ect = self.ecn.ect();
                seg.repr.cwr = self.ecn.take_cwr();
            }
            if self.cold().timed.is_none() && !self.ts_enabled && !is_rexmit {
                self.cold_mut().timed = Some((self.snd_nxt, now));
            }
            self.snd_nxt += len;
            if self.snd_nxt > self.snd_max {
                self.snd_max = self.snd_nxt;
            }
            self.push(seg, now, out, is_rexmit);
            self.arm_rto(now);
        }
    }

    /// Returns the length of the segment that starts with a full-sized
    /// one of `len` bytes when the NIC segments (TCP segmentation offload,
    /// `stack::offload`): whole segments are added while `limit` (the data,
    /// the peer's and the congestion window) and the NIC room allow, up to
    /// `tso_frames` and Linux's `tcp_tso_autosize`. Without TSO, or for a
    /// short segment, `len`.
    fn tso_extend(&self, len: usize, smss: usize, limit: usize) -> usize {
        let frames = usize::from(self.tso_frames).min(self.tso_autosize(smss));
        if frames <= 1 || len < smss || smss == 0 {
            return len;
        }
        let max = limit
            .min(frames * smss)
            .min((self.budget as usize).saturating_mul(smss));
        (max / smss * smss).max(len)
    }

    /// Linux's `tcp_tso_autosize`: about 1 ms of data at the pacing rate
    /// (`sk_pacing_rate >> sk_pacing_shift`, the rate being 2 × cwnd / SRTT
    /// in slow start and 1.2 × cwnd / SRTT after, `tcp_update_pacing_rate`),
    /// plus `gso_max_size >> (min_rtt_µs >> 9)` on short paths
    /// (`tcp_tso_rtt_log` = 9), at most 64 KiB, at least 2 segments. No
    /// RTT sample yet: no limit below 64 KiB (the pacing rate starts
    /// unlimited).
    fn tso_autosize(&self, smss: usize) -> usize {
        const GSO_MAX: u64 = 65_536;
        let mut bytes = GSO_MAX;
        if self.srtt_ns != NO_RTT && self.srtt_ns > 0 {
            let cwnd = self.cc.window();
            let ratio = if cwnd < self.cc.ssthresh() { 20 } else { 12 };
            // rate (bytes/s) = ratio/10 × cwnd × 1e9 / srtt; per ms: / 1000.
            let per_ms = (u128::from(cwnd) * ratio * 100_000 / u128::from(self.srtt_ns)) as u64;
            let r = (self.min_rtt_ns / 1_000) >> 9;
            let extra = if r < 32 { GSO_MAX >> r } else { 0 };
            bytes = per_ms.saturating_add(extra).min(GSO_MAX);
        }
        (bytes as usize / smss.max(1)).max(2)
    }

    /// When resending after an RTO (`snd_nxt` below `snd_max`), moves
    /// `snd_nxt` past data the receiver SACKed, and returns how many bytes
    /// from there are not SACKed (`usize::MAX`: no limit). The scoreboard
    /// survives the RTO (RFC 6675 §5.1 allows either; Linux keeps it and
    /// marks the rest lost), so only the holes are resent.
    fn skip_sacked_resend(&mut self) -> usize {
        if self.snd_nxt >= self.snd_max {
            return usize::MAX;
        }
        let (at, next) = self.cold().scoreboard.skip_sacked(self.snd_nxt);
        self.snd_nxt = at;
        next.map_or(usize::MAX, |n| (n - at).max(0) as usize)
    }

    /// Returns the un-SACKed bytes from `snd_una` up to the first SACKed
    /// range (`usize::MAX`: nothing SACKed above).
    fn hole_at_una(&self) -> usize {
        match self.cold().scoreboard.skip_sacked(self.snd_una) {
            (at, Some(next)) if at == self.snd_una => (next - at).max(0) as usize,
            _ => usize::MAX,
        }
    }

    /// In SACK recovery, retransmits holes while the pipe allows
    /// (RFC 6675 §5 step (C)).
    fn retransmit_holes(&mut self, now: Time, out: &mut Vec<Segment>) {
        if self.rack_on() {
            return self.rack_retransmit(now, out, false);
        }
        let smss = self.smss();
        while self.pipe() + smss <= self.send_cwnd() as usize {
            if self.budget == 0 {
                self.nic_blocked = true;
                break;
            }
            let from = if self.cold().rexmit_next < self.snd_una {
                self.snd_una
            } else {
                self.cold().rexmit_next
            };
            let Some((start, len)) = self.cold().scoreboard.next_hole(from) else {
                break;
            };
            let len = len.min(smss);
            let offset = (start - self.snd_una) as usize;
            let payload = self.sndbuf.slice(offset, len);
            if payload.is_empty() {
                break;
            }
            let seg = self.segment(Control::None, start, payload, true);
            self.cold_mut().rexmit_next = start + len;
            if start == self.snd_una {
                self.cold_mut().rexmit_mark = Some((start, self.snd_max));
            }
            let c = self.cold_mut();
            c.rexmit_bytes_in_recovery = c.rexmit_bytes_in_recovery.saturating_add(len as u32);
            self.push(seg, now, out, true);
            self.arm_rto(now);
        }
    }

    /// Retransmits the segment at `snd_una` (fast retransmit, RTO, partial
    /// ACK).
    fn retransmit_first(&mut self, now: Time, out: &mut Vec<Segment>) {
        let hole = self.hole_at_una();
        let len = self
            .sndbuf
            .len()
            .min(self.smss())
            .min(hole)
            .min((self.snd_max - self.snd_una).max(0) as usize);
        if len == 0 {
            // Only a FIN (or SYN) is outstanding.
            if self.fin_queued && self.snd_max == self.snd_una + self.sndbuf.len() + 1 {
                let seg = self.segment(
                    Control::Fin,
                    self.snd_una + self.sndbuf.len(),
                    Message::new(),
                    true,
                );
                self.push(seg, now, out, true);
            }
            return;
        }
        let payload = self.sndbuf.slice(0, len);
        let seg = self.segment(Control::None, self.snd_una, payload, true);
        if self.cold().recovery.is_some() {
            self.cold_mut().rexmit_next = self.snd_una + len;
            self.cold_mut().rexmit_mark = Some((self.snd_una, self.snd_max));
            let c = self.cold_mut();
            c.rexmit_bytes_in_recovery = c.rexmit_bytes_in_recovery.saturating_add(len as u32);
        }
        self.reset_cold(|c| c.timed = None); // Karn: never time a retransmitted segment
        self.push(seg, now, out, true);
    }

    /// Sends our FIN after the data, or sends it again after a timeout
    /// went back to `snd_una` (the state then stays as it is).
    fn send_fin(&mut self, now: Time, out: &mut Vec<Segment>) {
        if !self.fin_queued || !self.can_send_data() {
            return;
        }
        let fin_seq = self.snd_una + self.sndbuf.len();
        if self.snd_nxt != fin_seq {
            return; // data still to send first, or the FIN is out
        }
        let seg = self.segment(Control::Fin, fin_seq, Message::new(), true);
        let again = fin_seq < self.snd_max;
        self.snd_nxt = fin_seq + 1;
        if self.snd_nxt > self.snd_max {
            self.snd_max = self.snd_nxt;
        }
        match self.state {
            State::Established => self.state = State::FinWait1,
            State::CloseWait => self.state = State::LastAck,
            _ => {}
        }
        self.push(seg, now, out, again);
        self.arm_rto(now);
    }

    /// Sends a pure ACK if one is due; arms the delayed-ACK timer otherwise.
    fn flush_ack(&mut self, now: Time, out: &mut Vec<Segment>) {
        if matches!(
            self.state,
            State::SynSent | State::SynReceived | State::Closed
        ) {
            return;
        }
        if self.ack_now || self.ack_pending >= 2 {
            let seg = self.segment(Control::None, self.snd_nxt, Message::new(), false);
            self.push(seg, now, out, false);
        } else if self.ack_pending > 0 && self.delack_at.is_none() {
            self.delack_at = Deadline::at(now + self.cfg.delayed_ack);
        }
    }

    // ------------------------------------------------------------------
    // Timers
    // ------------------------------------------------------------------

    /// Handles expired deadlines; returns effects and appends segments.
    pub fn on_timer(&mut self, now: Time, out: &mut Vec<Segment>) -> Effects {
        let mut fx = Effects::default();
        if self.state == State::Closed {
            return fx;
        }
        if self.cold().timewait_at.is_some_and(|t| t <= now) {
            self.close();
            fx.closed = true;
            return fx;
        }
        if self.delack_at.is_some_and(|t| t <= now) {
            self.delack_at = Deadline::NONE;
            self.ack_now = true;
        }
        if self.cold().persist_at.is_some_and(|t| t <= now) {
            self.reset_cold(|c| c.persist_at = Deadline::NONE);
            self.zero_window_probe(now, out);
        }
        if let Some(fired) = self.rto_at.get().filter(|&t| t <= now) {
            self.rto_at = Deadline::NONE;
            if !self.loss_timer(now, fired, out) {
                self.on_rto(now, out, &mut fx);
            }
        }
        if self.keepalive_deadline().is_some_and(|t| t <= now) {
            self.on_keepalive(now, out, &mut fx);
        }
        if self.state != State::Closed {
            self.output(now, out);
        }
        self.tidy_cold();
        self.rcvbuf.release_if_empty();
        fx
    }

    /// Returns when the keep-alive timer fires, in the states where it
    /// runs (synchronized, not TIME-WAIT).
    fn keepalive_deadline(&self) -> Option<Time> {
        let k = self.keepalive.as_deref()?;
        match self.state {
            State::SynSent | State::SynReceived | State::TimeWait | State::Closed => None,
            _ => k.deadline(),
        }
    }

    /// Keep-alive timer (see `keepalive.rs`).
    fn on_keepalive(&mut self, now: Time, out: &mut Vec<Segment>, fx: &mut Effects) {
        let busy = self.snd_una != self.snd_max || self.sndbuf.len() > 0;
        let Some(k) = self.keepalive.as_deref_mut() else {
            return;
        };
        match k.fire(now, busy) {
            keepalive::Action::Wait => {}
            keepalive::Action::Probe => {
                // "SEG.SEQ = SND.NXT-1" (RFC 1122 §4.2.3.6; Linux uses
                // SND.UNA-1, the same when nothing is in flight).
                let seg = self.segment(Control::None, self.snd_una - 1, Message::new(), false);
                self.push(seg, now, out, false);
            }
            keepalive::Action::Abort => {
                // Linux: tcp_send_active_reset, then tcp_write_err.
                if let Some(rst) = self.abort() {
                    out.push(rst);
                }
                self.fail(SocketError::TimedOut, fx);
            }
        }
    }

    /// Retransmission timeout (RFC 6298 §5.4–5.7).
    fn on_rto(&mut self, now: Time, out: &mut Vec<Segment>, fx: &mut Effects) {
        if self.snd_una == self.snd_max {
            return;
        }
        self.stats.loss().timeouts += 1;
        if matches!(self.state, State::SynSent | State::SynReceived) {
            self.syn_retries = self.syn_retries.saturating_add(1);
            if u32::from(self.syn_retries) > self.cfg.syn_retries {
                self.fail(SocketError::TimedOut, fx);
                return;
            }
            self.rto_ns = nanos((self.rto() * 2).min(self.cfg.max_rto));
            let seg = self.segment(Control::Syn, self.iss, Message::new(), true);
            self.push(seg, now, out, true);
            self.rto_at = Deadline::at(now + self.rto());
            return;
        }
        // Linux's `tcp_retries2`: give up after `max_retries` consecutive
        // timeouts without progress (about 15 minutes with the defaults).
        self.retries += 1;
        if self.retries > self.cfg.max_retries {
            self.fail(SocketError::TimedOut, fx);
            return;
        }
        // Linux's `tcp_enter_loss`: a new undo episode unless this timeout
        // continues one (fast recovery not over, or an earlier timeout of
        // this flight without progress since).
        let fresh =
            self.cold().recovery.is_none() && (self.cold().rto_high.is_none() || self.retries == 1);
        if fresh {
            self.undo_begin(true);
        }
        self.cc.on_rto(now.as_nanos(), self.flight() as u64);
        self.ecn.take_reduction();
        self.ecn.reduced(self.snd_max, false);
        // "The host MUST set RTO <- RTO * 2 (back off the timer)."
        self.rto_ns = nanos((self.rto() * 2).min(self.cfg.max_rto));
        self.reset_cold(|c| c.recovery = None);
        self.cold_mut().rto_high = Some(self.snd_max);
        self.loss_on_rto();
        if self.retries > 1 {
            // A second timeout without progress: the receiver may have
            // discarded data it SACKed (reneging, RFC 2018 §8), so forget
            // the scoreboard and resend everything (Linux clears its SACK
            // marks when it detects reneging, tcp_timeout_mark_lost).
            self.reset_cold(|c| c.scoreboard.clear());
        }
        self.reset_cold(|c| c.dupacks = 0);
        self.reset_cold(|c| c.timed = None);
        // Go back to snd_una and resend from there as the window allows,
        // skipping what the receiver SACKed (`skip_sacked_resend`).
        // The FIN is resent once the data before it is (`send_fin`); the
        // state stays, so a FIN received meanwhile (CLOSING) is not lost.
        self.snd_nxt = self.snd_una;
        self.retransmit_first(now, out);
        let sent = (self.snd_max - self.snd_una).max(0) as usize;
        let hole = self.hole_at_una();
        let first = self.sndbuf.len().min(self.smss()).min(sent).min(hole);
        self.snd_nxt = self.snd_una + first;
        if first == 0 && self.fin_queued && self.snd_max == self.snd_una + 1 {
            // Only the FIN was outstanding, and it was just resent.
            self.snd_nxt = self.snd_max;
        }
        self.rto_at = Deadline::at(now + self.rto());
    }

    fn zero_window_probe(&mut self, now: Time, out: &mut Vec<Segment>) {
        if !self.can_send_data() || self.snd_wnd > 0 {
            return;
        }
        let sent_unacked = (self.snd_nxt - self.snd_una).max(0) as usize;
        if self.sndbuf.len() > sent_unacked {
            // One byte beyond the window (RFC 9293 §3.8.6.1).
            let payload = self.sndbuf.slice(sent_unacked, 1);
            let seg = self.segment(Control::None, self.snd_nxt, payload, true);
            self.push(seg, now, out, false);
        } else {
            let seg = self.segment(Control::None, self.snd_nxt - 1, Message::new(), false);
            self.push(seg, now, out, false);
        }
        self.persist_backoff = (self.persist_backoff + 1).min(6);
        self.cold_mut().persist_at =
            Deadline::at(now + (self.rto() * (1 << self.persist_backoff)).min(self.cfg.max_rto));
    }

    fn fail(&mut self, e: SocketError, fx: &mut Effects) {
        self.error = Some(Box::new(e));
        self.close();
        fx.readable = true;
        fx.writable = true;
        fx.established = true;
        fx.closed = true;
    }

    // ------------------------------------------------------------------
    // Input
    // ------------------------------------------------------------------

    /// Processes an arriving segment (RFC 9293 §3.10.7) that came in an
    /// IPv4 datagram whose ECN field was Not-ECT.
    #[cfg(test)]
    pub fn input(
        &mut self,
        now: Time,
        seg: &Repr,
        payload: Message,
        out: &mut Vec<Segment>,
    ) -> Effects {
        self.input_ecn(now, seg, super::ecn::NOT_ECT, payload, out)
    }

    /// Processes an arriving segment (RFC 9293 §3.10.7) whose IPv4 ECN
    /// field was `ip_ecn` (RFC 3168 §5: `0b11` is CE).
    pub fn input_ecn(
        &mut self,
        now: Time,
        seg: &Repr,
        ip_ecn: u8,
        payload: Message,
        out: &mut Vec<Segment>,
    ) -> Effects {
        self.input_merged(now, seg, ip_ecn, payload, 1, out)
    }

    /// [`Tcb::input_ecn`] for a segment that GRO merged from `segs`
    /// segments (`stack::offload`); they count as `segs` received (Linux's
    /// InSegs counts `gso_segs`).
    pub fn input_merged(
        &mut self,
        now: Time,
        seg: &Repr,
        ip_ecn: u8,
        payload: Message,
        segs: u32,
        out: &mut Vec<Segment>,
    ) -> Effects {
        let mut fx = Effects::default();
        let pause = payload.is_empty();
        self.stats.add(Count::SegmentsReceived, segs);
        if self.predicted(seg, payload.len()) {
            self.input_predicted(now, seg, payload, out, &mut fx);
        } else {
            match self.state {
                State::Closed => {}
                State::SynSent => self.input_syn_sent(now, seg, out, &mut fx),
                _ => self.input_synchronized(now, seg, ip_ecn, payload, out, &mut fx),
            }
        }
        if let Some(k) = self.keepalive.as_deref_mut() {
            if !matches!(self.state, State::SynSent | State::SynReceived) {
                k.received(now);
            }
        }
        if self.state != State::Closed {
            self.output(now, out);
        }
        // A DSACK is reported by the ACK of the segment that set it, or
        // not at all.
        self.reset_cold(|c| c.dsack = None);
        self.tidy_cold();
        if pause {
            // A segment without data: the peer's data flow paused (or was
            // never there), so a drained receive queue can go.
            self.rcvbuf.release_if_empty();
        }
        fx
    }

    /// Header prediction (Van Jacobson, "TCP receive fast path", 1993;
    /// Linux `tcp_rcv_established`): returns true when `seg` is the segment
    /// an ESTABLISHED connection expects next, for which every step of
    /// [`Tcb::input_synchronized`] before the ACK is a no-op and the text
    /// step is a plain append: no SYN, FIN or RST, `SEG.SEQ = RCV.NXT`, a
    /// timestamp (if any) not older than TS.Recent (so PAWS passes and
    /// TS.Recent moves to it), an acknowledgment not beyond `SND.MAX`, data
    /// that fits the window with nothing held out of order, and ECN not
    /// negotiated (its per-segment steps then do nothing).
    /// [`Tcb::input_predicted`] handles it with the general ACK step, so
    /// loss recovery, SACK and window updates behave exactly as on the
    /// slow path; the unit tests run every operation sequence of the
    /// `tcp_input` fuzz body both ways and compare.
    fn predicted(&self, seg: &Repr, len: usize) -> bool {
        #[cfg(test)]
        if fuzz::NO_PREDICTION.with(std::cell::Cell::get) {
            return false;
        }
        let ts_in_order = match seg.timestamp {
            Some((tsval, _)) if self.ts_enabled => tsval.wrapping_sub(self.ts_recent) as i32 >= 0,
            _ => true,
        };
        self.state == State::Established
            && matches!(seg.control, Control::None | Control::Psh)
            && seg.seq_number == self.rcv_nxt
            && seg.ack_number.is_some_and(|a| a <= self.snd_max)
            && ts_in_order
            && !self.ecn.is_on()
            && (len == 0
                || (len <= self.rcv_window() && self.rcvbuf.held() == self.rcvbuf.ready_len()))
    }

    /// The fast path for a segment [`Tcb::predicted`] accepted.
    fn input_predicted(
        &mut self,
        now: Time,
        seg: &Repr,
        payload: Message,
        out: &mut Vec<Segment>,
        fx: &mut Effects,
    ) {
        if let (Some((tsval, _)), true) = (seg.timestamp, self.ts_enabled) {
            // RFC 7323 §4.3: SEG.SEQ = Last.ACK.sent and TSval not older.
            self.ts_recent = tsval;
            self.ts_recent_at = now;
        }
        #[cfg(test)]
        fuzz::PREDICTED.with(|p| p.set(p.get() + 1));
        let Some(ack) = seg.ack_number else { return };
        let n = payload.len();
        self.process_ack(now, seg, ack, n, out, fx);
        if n == 0 || self.state != State::Established {
            return;
        }
        self.rcv_nxt = self.rcvbuf.insert(self.rcv_nxt, seg.seq_number, payload);
        self.stats.bytes_received += n as u64;
        fx.readable = true;
        if n < self.smss() {
            // A short (PSH) segment: ACK at once.
            self.ack_now = true;
        } else {
            // A segment the NIC merged (GRO, `stack::offload`) counts as
            // the segments it carries, as Linux ACKs once more than one
            // MSS arrived since the last ACK (`__tcp_ack_snd_check`).
            self.ack_pending += n.div_ceil(self.smss().max(1)) as u32;
        }
    }

    /// RFC 9293 §3.10.7.3: SYN-SENT.
    fn input_syn_sent(&mut self, now: Time, seg: &Repr, out: &mut Vec<Segment>, fx: &mut Effects) {
        // "first check the ACK bit": unacceptable if SEG.ACK =< ISS or > SND.NXT.
        if let Some(ack) = seg.ack_number {
            if ack <= self.iss || ack > self.snd_nxt {
                if seg.control != Control::Rst {
                    out.push(Segment {
                        repr: rst_for(seg, 0),
                        payload: Message::new(),
                        ect: false,
                        gso_size: 0,
                    });
                }
                return;
            }
        }
        // "second check the RST bit": with an acceptable ACK the connection is refused.
        if seg.control == Control::Rst {
            if seg.ack_number.is_some() {
                self.fail(SocketError::ConnectionRefused, fx);
            }
            return;
        }
        if seg.control != Control::Syn {
            return;
        }
        // "fourth check the SYN bit"
        self.rcv_nxt = seg.seq_number + 1;
        self.rcv_adv = self.rcv_nxt;
        self.apply_syn_options(seg);
        self.ts_recent_at = now;
        if let Some(ack) = seg.ack_number {
            self.ecn.on_syn_ack(seg, self.cfg.ecn);
            // Our SYN is acknowledged: ESTABLISHED.
            self.snd_una = ack;
            // RFC 7323 §2.2: "The window field in a segment where the SYN
            // bit is set (i.e., a <SYN> or <SYN,ACK>) MUST NOT be scaled."
            self.snd_wnd = u32::from(seg.window_len);
            self.snd_wl1 = seg.seq_number;
            self.snd_wl2 = ack;
            if self.syn_retries == 0 {
                // Before the timer is cleared: `syn_time` reads it.
                self.rtt_sample(
                    now,
                    self.ts_rtt(seg, now)
                        .unwrap_or_else(|| now - self.syn_time(now)),
                );
            }
            self.rto_at = Deadline::NONE;
            self.state = State::Established;
            self.ack_now = true;
            fx.established = true;
            fx.writable = true;
        } else {
            // Simultaneous open: "enter SYN-RECEIVED, form a SYN,ACK".
            self.state = State::SynReceived;
            self.snd_wnd = u32::from(seg.window_len);
            self.snd_wl1 = seg.seq_number;
            let syn_ack = self.segment(Control::Syn, self.iss, Message::new(), true);
            self.push(syn_ack, now, out, true);
        }
    }

    fn syn_time(&self, now: Time) -> Time {
        // Without timestamps the SYN's send time is now − elapsed RTO window;
        // use the RTO deadline: sent at rto_at − rto.
        self.rto_at.get().map_or(now, |t| {
            Time::from_nanos(t.as_nanos().saturating_sub(self.rto().as_nanos() as u64))
        })
    }

    /// Returns the RTT measured from a timestamp echo, if any.
    fn ts_rtt(&self, seg: &Repr, now: Time) -> Option<Duration> {
        if !self.ts_enabled {
            return None;
        }
        let (_, ecr) = seg.timestamp?;
        if ecr == 0 {
            return None;
        }
        let d = ts_clock(now).wrapping_sub(ecr);
        (d < 1 << 31).then(|| Duration::from_micros(u64::from(d)))
    }

    /// Remembers the segment's TSval for the next echo (RFC 7323 §4.3 and
    /// Appendix D): "If SEG.TSval >= TS.Recent and SEG.SEQ <= Last.ACK.sent
    /// then SEG.TSval is copied to TS.Recent", done *before* the sequence
    /// check, so that the ACK answering a retransmitted duplicate (whose
    /// first ACK was lost) echoes the retransmission's time, not the
    /// original's (as Linux does; the echo of the original made the peer
    /// sample an RTT inflated by a whole RTO). An older TSval (a late,
    /// reordered or duplicated copy) never moves TS.Recent back. `rcv_nxt`
    /// stands for Last.ACK.sent.
    fn remember_timestamp(&mut self, seg: &Repr, now: Time) {
        let Some((tsval, _)) = seg.timestamp else {
            return;
        };
        // An invalid (idle-expired, RFC 7323 §5.5) TS.Recent is replaced
        // whatever its value, as Linux does (`tcp_paws_check`).
        let newer = tsval.wrapping_sub(self.ts_recent) as i32 >= 0
            || now - self.ts_recent_at >= super::paws::IDLE_LIMIT;
        if self.ts_enabled && seg.control != Control::Rst && newer && seg.seq_number <= self.rcv_nxt
        {
            self.ts_recent = tsval;
            self.ts_recent_at = now;
        }
    }

    /// Returns true if the segment is acceptable (RFC 9293 §3.10.7.4 "first,
    /// check sequence number", the four cases).
    fn acceptable(&self, seg: &Repr, len: usize) -> bool {
        let wnd = self.rcv_window();
        let seq = seg.seq_number;
        match (len, wnd) {
            (0, 0) => seq == self.rcv_nxt,
            (0, _) => seq >= self.rcv_nxt && seq < self.rcv_nxt + wnd,
            (_, 0) => false,
            (_, _) => {
                let last = seq + (len - 1);
                (seq >= self.rcv_nxt && seq < self.rcv_nxt + wnd)
                    || (last >= self.rcv_nxt && last < self.rcv_nxt + wnd)
            }
        }
    }

    fn input_synchronized(
        &mut self,
        now: Time,
        seg: &Repr,
        ip_ecn: u8,
        mut payload: Message,
        out: &mut Vec<Segment>,
        fx: &mut Effects,
    ) {
        let seg_len = payload.len()
            + usize::from(seg.control == Control::Syn)
            + usize::from(seg.control == Control::Fin);
        // Simultaneous open (RFC 9293 Figure 8, line 6): the peer's SYN,ACK
        // acknowledging our SYN takes SYN-RECEIVED to ESTABLISHED. The
        // sequence-number check below would reject its SYN (SEG.SEQ =
        // RCV.NXT − 1) and both ends would wait for each other until they
        // time out; Linux accepts exactly this segment (tcp_validate_incoming).
        if self.state == State::SynReceived
            && seg.control == Control::Syn
            && seg.seq_number + 1 == self.rcv_nxt
            && seg.ack_number == Some(self.snd_nxt)
            && self.snd_nxt == self.iss + 1
        {
            if let Some(ack) = seg.ack_number {
                self.establish(now, seg, ack, fx);
            }
            return;
        }
        // PAWS (RFC 7323 §5.3 R1), before the sequence check (R2) and
        // before TS.Recent moves (R3).
        let recent = super::paws::TsRecent {
            value: self.ts_recent,
            at: self.ts_recent_at,
        };
        if self.ts_enabled && recent.rejects(seg, now) {
            self.stats.loss().paws_rejected += 1;
            self.ack_now = true;
            self.dsack_old(seg, seg_len);
            return;
        }
        self.remember_timestamp(seg, now);
        // First: sequence number check.
        if !self.acceptable(seg, seg_len) {
            // A zero-window probe or an old duplicate: "send an
            // acknowledgment ... and drop" (unless RST).
            if seg.control != Control::Rst {
                self.ack_now = true;
                self.dsack_old(seg, seg_len);
                if self.state == State::TimeWait && seg.control == Control::Fin {
                    self.cold_mut().timewait_at = Deadline::at(now + self.cfg.msl * 2);
                }
            }
            return;
        }
        // Second: RST (RFC 5961 §3.2).
        if seg.control == Control::Rst {
            if seg.seq_number == self.rcv_nxt {
                let e = match self.state {
                    State::SynReceived => SocketError::ConnectionRefused,
                    State::Closing | State::LastAck | State::TimeWait => {
                        self.close();
                        fx.closed = true;
                        return;
                    }
                    _ => SocketError::ConnectionReset,
                };
                self.fail(e, fx);
            } else {
                self.challenge_ack(now, out);
            }
            return;
        }
        // Fourth: the SYN bit. SYN-RECEIVED: "If the connection was
        // initiated with a passive OPEN, then return this connection to
        // LISTEN state and return" (the glue frees a passive TCB that
        // closes with an error; Linux also sends a RST). Otherwise, and in
        // the synchronized states, RFC 5961 §4.2: challenge ACK.
        if seg.control == Control::Syn {
            if self.state == State::SynReceived && self.cold().peer_syn_opts.is_some() {
                self.fail(SocketError::ConnectionRefused, fx);
            } else {
                self.challenge_ack(now, out);
            }
            return;
        }
        // Fifth: the ACK field.
        let Some(ack) = seg.ack_number else { return };
        if self.state == State::SynReceived {
            // "If SND.UNA < SEG.ACK =< SND.NXT, then enter ESTABLISHED".
            if self.snd_una < ack && ack <= self.snd_nxt {
                self.establish(now, seg, ack, fx);
            } else {
                out.push(Segment {
                    repr: rst_for(seg, payload.len()),
                    payload: Message::new(),
                    ect: false,
                    gso_size: 0,
                });
                return;
            }
        } else if ack > self.snd_max {
            // "If the ACK acks something not yet sent (SEG.ACK > SND.NXT),
            // then send an ACK, drop the segment, and return."
            self.ack_now = true;
            return;
        } else {
            self.process_ack(now, seg, ack, payload.len(), out, fx);
            if self.state == State::Closed {
                return;
            }
        }
        self.ecn_receive(seg, !payload.is_empty(), ip_ecn);
        // Seventh: segment text.
        if !payload.is_empty()
            && matches!(
                self.state,
                State::Established | State::FinWait1 | State::FinWait2
            )
        {
            let in_order = seg.seq_number <= self.rcv_nxt;
            // Trim anything beyond the window.
            let wnd_end = self.rcv_nxt + self.rcv_window();
            if seg.seq_number + payload.len() > wnd_end {
                let keep = (wnd_end - seg.seq_number).max(0) as usize;
                payload.truncate(keep);
            }
            let n = payload.len();
            let had_hole = self.rcvbuf.held() > self.rcvbuf.ready_len();
            let before = self.rcv_nxt;
            let mut dup = Duplicate::NONE;
            self.rcv_nxt =
                self.rcvbuf
                    .insert_reporting(self.rcv_nxt, seg.seq_number, payload, &mut dup);
            if let Some((s, e)) = dup.range() {
                self.dsack_set(s, e);
            }
            let advanced = (self.rcv_nxt - before).max(0) as u64;
            self.stats.bytes_received += advanced;
            if advanced > 0 {
                fx.readable = true;
            }
            if !in_order {
                // Out of order: ACK at once with SACK (RFC 5681 §4.2).
                self.rcvbuf.note_out_of_order(seg.seq_number);
                self.ack_now = true;
            } else if had_hole || n < self.smss() {
                // Filled (part of) a hole, or a short (PSH) segment: ACK at
                // once. RFC 5681 §4.2: "an immediate ACK when the incoming
                // segment fills in all or part of a gap".
                self.ack_now = true;
            } else {
                self.ack_pending += n.div_ceil(self.smss().max(1)) as u32;
            }
        }
        // Eighth: FIN.
        if seg.control == Control::Fin {
            let fin_seq = seg.seq_number + payload_len_of(seg);
            if fin_seq == self.rcv_nxt && !self.fin_received {
                self.rcv_nxt += 1;
                self.fin_received = true;
                self.ack_now = true;
                fx.readable = true;
                match self.state {
                    State::SynReceived | State::Established => self.state = State::CloseWait,
                    State::FinWait1 => {
                        // Our FIN not yet acknowledged: simultaneous close.
                        self.state = State::Closing;
                    }
                    State::FinWait2 => self.enter_time_wait(now),
                    _ => {}
                }
            } else if fin_seq > self.rcv_nxt {
                self.ack_now = true; // FIN beyond a hole: remember nothing, ACK
            }
        }
    }

    /// Notes a DSACK for the part of `seg` (`seg_len` sequence numbers)
    /// below RCV.NXT, if any: a segment dropped as unacceptable (or by
    /// PAWS) that repeats data already received (RFC 2883 §4, Example 1;
    /// Linux's `tcp_send_dupack`). Not in TIME-WAIT, where Linux answers
    /// from a minimal socket that keeps no SACK state.
    fn dsack_old(&mut self, seg: &Repr, seg_len: usize) {
        let s = seg.seq_number;
        if seg_len > 0
            && seg.control != Control::Syn
            && s < self.rcv_nxt
            && self.state != State::TimeWait
        {
            self.dsack_set(s, (s + seg_len).min(self.rcv_nxt));
        }
    }

    /// Makes `[s, e)` the DSACK block of our next segment, and that segment
    /// an immediate ACK, when DSACK is on (SACK negotiated and
    /// [`TcpConfig::dsack`]; Linux's `tcp_dsack_set`).
    fn dsack_set(&mut self, s: SeqNumber, e: SeqNumber) {
        if self.sack_enabled && self.cfg.dsack {
            self.cold_mut().dsack = Some((s, e));
            self.ack_now = true;
        }
    }

    /// SYN-RECEIVED to ESTABLISHED on an acceptable ACK of our SYN
    /// (RFC 9293 §3.10.7.4 "fifth, check the ACK field").
    fn establish(&mut self, now: Time, seg: &Repr, ack: SeqNumber, fx: &mut Effects) {
        self.state = State::Established;
        // A SYN,ACK's window is never scaled (RFC 7323 §2.2).
        let shift = if seg.control == Control::Syn {
            0
        } else {
            self.snd_wscale
        };
        self.snd_wnd = u32::from(seg.window_len) << shift;
        self.snd_wl1 = seg.seq_number;
        self.snd_wl2 = ack;
        fx.established = true;
        fx.writable = true;
        if self.syn_retries == 0 {
            let rtt = self
                .ts_rtt(seg, now)
                .unwrap_or_else(|| now - self.syn_time(now));
            self.rtt_sample(now, rtt);
        }
        self.snd_una = ack;
        self.rto_at = Deadline::NONE;
    }

    fn challenge_ack(&mut self, now: Time, out: &mut Vec<Segment>) {
        let seg = self.segment(Control::None, self.snd_nxt, Message::new(), false);
        self.push(seg, now, out, false);
    }

    fn enter_time_wait(&mut self, now: Time) {
        self.state = State::TimeWait;
        self.rto_at = Deadline::NONE;
        self.reset_cold(|c| c.persist_at = Deadline::NONE);
        self.cold_mut().timewait_at = Deadline::at(now + self.cfg.msl * 2);
    }

    /// RFC 9293 §3.10.7.4 "fifth, check the ACK field" in ESTABLISHED and
    /// later states, with RFC 5681/6675 congestion control.
    fn process_ack(
        &mut self,
        now: Time,
        seg: &Repr,
        ack: SeqNumber,
        payload_len: usize,
        out: &mut Vec<Segment>,
        fx: &mut Effects,
    ) {
        let dsack = self.sack_enabled && super::rack::is_dsack(&seg.sack_ranges, ack);
        if dsack {
            self.stats.loss().dsacks_received += 1;
            if let Some((s, e)) = seg.sack_ranges[0] {
                self.undo_on_dsack(SeqNumber(s), SeqNumber(e));
            }
        }
        let ece = seg.ece && self.ecn.is_on();
        if ece {
            self.undo_forbid();
        }
        // What PRR needs to count this ACK's delivered bytes.
        let prior = PriorAck {
            una: self.snd_una,
            sacked: self.cold().scoreboard.sacked_bytes(),
            recovering: self.cold().recovery.is_some(),
        };
        self.reset_cold(|c| c.prr_new_loss = false);
        if self.sack_enabled {
            let (una, max) = (self.snd_una, self.snd_max);
            for (s, e) in seg.sack_ranges.iter().flatten() {
                let board = &mut self.cold_mut().scoreboard;
                board.add(una, max, SeqNumber(*s), SeqNumber(*e));
            }
        }
        let window = u32::from(seg.window_len) << self.snd_wscale;
        if ack > self.snd_una {
            let acked = (ack - self.snd_una) as usize;
            let in_flight_before = self.flight() as u64;
            // Data bytes acknowledged (a FIN takes one sequence number).
            let data_acked = acked.min(self.sndbuf.len());
            self.sndbuf.consume(data_acked);
            self.stats.bytes_acked += data_acked as u64;
            self.snd_una = ack;
            if self.snd_nxt < self.snd_una {
                self.snd_nxt = self.snd_una;
            }
            self.reset_cold(|c| c.scoreboard.advance(ack));
            let in_loss = match self.cold().rto_high {
                Some(h) => {
                    if ack >= h {
                        self.reset_cold(|c| c.rto_high = None);
                    }
                    true
                }
                None => false,
            };
            self.reset_cold(|c| c.dupacks = 0);
            self.persist_backoff = 0;
            self.retries = 0;
            // RTT (RFC 6298 §2, Karn's rule via the timed segment or TS).
            let sample = match self.ts_rtt(seg, now) {
                Some(r) => Some(r),
                None => match self.cold().timed {
                    Some((s, t)) if ack > s => {
                        self.reset_cold(|c| c.timed = None);
                        Some(now - t)
                    }
                    _ => None,
                },
            };
            if let Some(r) = sample {
                self.rtt_sample(now, r);
            }
            match self.cold().recovery {
                Some(point) if ack >= point => {
                    // Full ACK: recovery is over (RFC 6582 §3.2 step 3),
                    // undone if it was spurious (`tcp_try_undo_recovery`).
                    self.reset_cold(|c| c.recovery = None);
                    self.reset_cold(|c| c.rexmit_bytes_in_recovery = 0);
                    if !self.try_undo(now, seg, Evidence::Either, false) {
                        self.cc.on_recovery_end(now.as_nanos());
                    }
                }
                Some(_) => {
                    // Partial ACK: retransmit the next hole at once, unless
                    // it shows the recovery spurious (`tcp_try_undo_partial`).
                    let c = self.cold_mut();
                    c.rexmit_bytes_in_recovery = c
                        .rexmit_bytes_in_recovery
                        .saturating_sub(u32::try_from(acked).unwrap_or(u32::MAX));
                    if !self.try_undo_partial(now, seg) && !self.sack_enabled {
                        self.retransmit_first(now, out);
                    }
                }
                None => {
                    let ev = AckEvent {
                        now_ns: now.as_nanos(),
                        acked_bytes: data_acked as u64,
                        rtt_ns: sample.map(|d| d.as_nanos() as u64),
                        min_rtt_ns: self.min_rtt().map_or(0, |d| d.as_nanos() as u64),
                        in_flight_bytes: in_flight_before,
                        app_limited: !self.cwnd_limited(in_flight_before),
                    };
                    self.cc.on_ack(&ev);
                }
            }
            if in_loss {
                // New data acknowledged after a timeout (`tcp_try_undo_loss`).
                self.try_undo(now, seg, Evidence::Either, true);
            }
            // Restart or stop the retransmission timer (RFC 6298 §5.2, 5.3).
            self.rto_at = if self.snd_una == self.snd_max {
                Deadline::NONE
            } else {
                Deadline::at(now + self.rto())
            };
            fx.writable = true;
            // Our FIN acknowledged?
            let fin_acked = self.fin_queued && self.sndbuf.len() == 0 && ack == self.snd_max;
            match self.state {
                State::FinWait1 if fin_acked => self.state = State::FinWait2,
                State::Closing if fin_acked => self.enter_time_wait(now),
                State::LastAck if fin_acked => {
                    self.close();
                    fx.closed = true;
                    return;
                }
                _ => {}
            }
        } else if ack == self.snd_una
            && payload_len == 0
            && matches!(seg.control, Control::None | Control::Psh)
            && (window == self.snd_wnd || seg.sack_ranges[0].is_some())
            && !(dsack && seg.sack_ranges[1].is_none())
            && self.snd_max > self.snd_una
        {
            // A duplicate ACK (RFC 5681 §2; with SACK, RFC 6675 §2 counts
            // any ACK carrying SACK information, since out-of-order data
            // also shrinks the advertised window). An ACK whose only SACK
            // block is a DSACK reports a duplicate (RFC 2883), no new data
            // above a hole: not counted.
            self.cold_mut().dupacks += 1;
            // Early retransmit (RFC 5827): with fewer than four segments
            // outstanding and nothing new to send, a lower threshold.
            let smss = self.smss();
            let outstanding = (self.snd_max - self.snd_una).max(0) as usize;
            let unsent = self.sndbuf.len().saturating_sub(outstanding);
            let segs = outstanding.div_ceil(smss);
            let thresh = if unsent == 0 && segs < 4 {
                segs.saturating_sub(1).max(1)
            } else {
                3
            };
            let sack_loss = self.sack_enabled
                && self.cold().scoreboard.sacked_bytes() >= thresh * smss.min(outstanding.max(1))
                && self.cold().scoreboard.next_hole(self.snd_una).is_some();
            // (With RACK, RACK alone marks losses: `loss_on_ack`.)
            if self.cold().recovery.is_none()
                && self.cold().rto_high.is_none()
                && !self.rack_on()
                && (self.cold().dupacks as usize >= thresh || sack_loss)
            {
                self.enter_recovery(now);
                if !self.prr_on() {
                    // (With PRR the hole goes once this ACK is counted,
                    // from `output`'s `retransmit_holes`.)
                    self.retransmit_first(now, out);
                }
                self.rto_at = Deadline::at(now + self.rto());
            }
        }
        self.loss_on_ack(now, seg, payload_len, out);
        self.prr_on_ack(prior);
        if ece {
            self.undo_forbid(); // (an episode this ACK began)
        }
        if dsack
            && self.cold().rto_high.is_none()
            && (self.cold().recovery.is_none() || self.nothing_marked_lost())
        {
            // Every retransmission DSACKed (`tcp_try_undo_dsack`).
            self.try_undo(now, seg, Evidence::Dsack, false);
        }
        self.ecn_on_ack(now, seg, ack);
        // Lost retransmission (as Linux detects it): data sent after the
        // retransmission of snd_una was SACKed, yet snd_una is still
        // unacknowledged, so the retransmission itself was lost. Resend it
        // now instead of waiting for the RTO.
        if let (Some(_), Some((seq, sent_max)), Some(high)) = (
            self.cold().recovery,
            self.cold().rexmit_mark,
            self.cold().scoreboard.highest(),
        ) {
            if seq == self.snd_una
                && ack == self.snd_una
                && high > sent_max + self.smss()
                && !self.rack_on()
            {
                self.reset_cold(|c| c.rexmit_mark = None);
                self.cold_mut().rexmit_next = self.snd_una;
                self.stats.loss().lost_retransmissions += 1;
                if !self.sack_enabled {
                    self.retransmit_first(now, out);
                }
            }
        }
        // Window update (RFC 9293 §3.10.7.4: SND.WL1/WL2 rule).
        if self.snd_wl1 < seg.seq_number || (self.snd_wl1 == seg.seq_number && self.snd_wl2 <= ack)
        {
            let opened = window > 0 && self.snd_wnd == 0;
            self.snd_wnd = window;
            self.snd_wl1 = seg.seq_number;
            self.snd_wl2 = ack;
            if opened {
                self.reset_cold(|c| c.persist_at = Deadline::NONE);
                self.persist_backoff = 0;
            }
        }
    }

    /// Enters fast recovery (RFC 6675 §5 / RFC 6582 §3.2 step 2): the
    /// recovery point is `snd_max`, the window is reduced once.
    fn enter_recovery(&mut self, now: Time) {
        self.stats.loss().fast_recoveries += 1;
        self.cold_mut().recovery = Some(self.snd_max);
        self.reset_cold(|c| c.rexmit_bytes_in_recovery = 0);
        self.cold_mut().rexmit_next = self.snd_una;
        let ecn_reducing = self.ecn.take_reduction();
        // Linux's `tcp_enter_recovery`: a new undo episode; the window
        // is restorable unless an ECN reduction is under way.
        self.undo_begin(!ecn_reducing);
        if !ecn_reducing {
            // (An ECN reduction in progress counts for this loss too: one
            // reduction per window, as Linux.)
            self.cc.on_congestion(now.as_nanos(), self.flight() as u64);
        }
        self.ecn.reduced(self.snd_max, false);
        self.reset_cold(|c| c.timed = None);
        if self.prr_on() {
            // RecoverFS (RFC 9937 §6.1): outstanding less SACKed; what the
            // triggering ACK delivered is added when it is counted.
            let outstanding = (self.snd_max - self.snd_una).max(0) as u64;
            let fs = outstanding.saturating_sub(self.cold().scoreboard.sacked_bytes() as u64);
            self.cold_mut().prr = Prr::start(fs);
        }
    }

    /// Returns true when PRR paces this connection's fast recovery (SACK
    /// negotiated and `TcpConfig::prr`).
    fn prr_on(&self) -> bool {
        self.sack_enabled && self.cfg.prr
    }

    /// Returns the window the sender sends against: PRR's in fast
    /// recovery, the congestion control's otherwise (Linux's `snd_cwnd`,
    /// which `tcp_cwnd_reduction` sets in recovery).
    fn send_cwnd(&self) -> u64 {
        match self.cold().recovery {
            Some(_) if self.prr_on() => self.cold().prr.cwnd(),
            _ => self.cc.window(),
        }
    }

    /// PRR's per-ACK step (RFC 9937 §6.2), after the ACK's cumulative
    /// and selective acknowledgements and loss marks are applied: counts
    /// what it delivered (bytes newly acknowledged plus bytes newly
    /// SACKed, Linux's `newly_acked_sacked`) and sets the window.
    fn prr_on_ack(&mut self, prior: PriorAck) {
        if !self.prr_on() || self.cold().recovery.is_none() {
            return;
        }
        let acked = (self.snd_una - prior.una).max(0) as u64;
        let sacked = self.cold().scoreboard.sacked_bytes() as u64;
        let delivered = (acked + sacked).saturating_sub(prior.sacked as u64);
        // "No further loss indicated": RACK marked nothing lost (with
        // RFC 6675's marking, no new SACK information).
        let new_loss = if self.rack_on() {
            self.cold().prr_new_loss
        } else {
            sacked > prior.sacked as u64
        };
        let safe = acked > 0 && !new_loss;
        let inflight = self.pipe() as u64;
        let (ssthresh, smss) = (self.cc.ssthresh(), self.smss() as u64);
        let c = self.cold_mut();
        c.prr
            .on_ack(delivered, inflight, ssthresh, smss, safe, !prior.recovering);
        c.prr_new_loss = false;
    }

    /// The receiver's half of RFC 3168 §6.1.3 for an acceptable segment:
    /// a CE-marked data segment starts the ECE echo, a CWR ends it.
    fn ecn_receive(&mut self, seg: &Repr, data: bool, ip_ecn: u8) {
        let (ce, ack_now) = self.ecn.on_segment(seg.cwr, data, ip_ecn);
        if ce {
            self.stats.loss().ce_received += 1;
        }
        if ack_now {
            self.ack_now = true;
        }
    }

    /// The sender's half of RFC 3168 §6.1.2 for an ACK: "If the sender
    /// receives an ECN-Echo (ECE) ACK packet ... the sender knows that
    /// congestion was encountered in the network ... and MUST reduce the
    /// congestion window" — once per window of data, never during loss
    /// recovery (already reduced), without retransmitting.
    fn ecn_on_ack(&mut self, now: Time, seg: &Repr, ack: SeqNumber) {
        if seg.ece && self.ecn.is_on() {
            self.stats.loss().ece_received += 1;
        }
        let (ended, reaction) = self
            .ecn
            .on_ack(seg.ece, ack, self.cold().recovery.is_some());
        if ended {
            self.cc.on_recovery_end(now.as_nanos());
        }
        if reaction == Reaction::Reduce {
            self.stats.loss().ecn_reductions += 1;
            self.cc.on_ecn(now.as_nanos(), self.flight() as u64);
            self.ecn.reduced(self.snd_max, true);
        }
    }

    /// Updates SRTT, RTTVAR and RTO (RFC 6298 §2.2–2.3), in integer
    /// nanoseconds (the divisions by 4 and 8 floor, as `Duration`'s do).
    fn rtt_sample(&mut self, _now: Time, r: Duration) {
        let r = nanos(r).max(1);
        self.stats.count(Count::RttSamples);
        self.min_rtt_ns = self.min_rtt_ns.min(r);
        if self.srtt_ns == NO_RTT {
            self.srtt_ns = r;
            self.rttvar_ns = r / 2;
        } else {
            let srtt = self.srtt_ns;
            // RTTVAR <- (1 - 1/4) * RTTVAR + 1/4 * |SRTT - R'|
            let diff = srtt.abs_diff(r);
            self.rttvar_ns = self.rttvar_ns.saturating_mul(3) / 4 + diff / 4;
            // SRTT <- (1 - 1/8) * SRTT + 1/8 * R'
            self.srtt_ns = srtt.saturating_mul(7) / 8 + r / 8;
        }
        // RTO <- SRTT + max (G, K*RTTVAR), K = 4, G = 1 µs, then the bounds.
        let rto = self
            .srtt_ns
            .saturating_add(self.rttvar_ns.saturating_mul(4).max(1_000));
        self.rto_ns = rto
            .max(nanos(self.cfg.min_rto))
            .min(nanos(self.cfg.max_rto));
    }

    /// Returns the smoothed RTT (RFC 6298's SRTT), if sampled yet.
    fn srtt(&self) -> Option<Duration> {
        (self.srtt_ns != NO_RTT).then(|| Duration::from_nanos(self.srtt_ns))
    }

    /// Returns the lowest RTT sampled, if any.
    fn min_rtt(&self) -> Option<Duration> {
        (self.min_rtt_ns != NO_RTT).then(|| Duration::from_nanos(self.min_rtt_ns))
    }

    /// Returns RFC 6298's RTTVAR.
    #[cfg(test)]
    fn rttvar(&self) -> Duration {
        Duration::from_nanos(self.rttvar_ns)
    }

    /// Returns the retransmission timeout.
    fn rto(&self) -> Duration {
        Duration::from_nanos(self.rto_ns)
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
pub(crate) fn rst_for(seg: &Repr, payload_len: usize) -> Repr {
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

#[doc(hidden)]
pub(crate) mod fuzz;
mod loss;
#[cfg(test)]
mod tests;
mod undo;
