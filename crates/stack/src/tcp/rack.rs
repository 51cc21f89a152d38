//! RACK-TLP loss detection (RFC 8985), Linux's default since 4.18.
//!
//! **RACK** ("recent acknowledgment", §6) keeps a transmit time per
//! segment in flight. When an ACK delivers (cumulatively or by SACK) a
//! segment, RACK remembers the latest-sent delivered segment: its transmit
//! time `RACK.xmit_ts`, its end `RACK.end_seq`, and the round trip
//! `RACK.rtt` of the segment just delivered. A segment still outstanding
//! that was sent before `RACK.xmit_ts` is declared lost once
//!
//! ```text
//! Segment.xmit_ts + RACK.rtt + RACK.reo_wnd <= now           (§6.2 step 5)
//! ```
//!
//! and until then the *reordering timer* is armed for the earliest such
//! moment. The reordering window is
//!
//! ```text
//! RACK.reo_wnd = 0                         no reordering seen and (in recovery
//!                                          or >= DupThresh segments SACKed)
//!              = min(min_rtt / 4 * RACK.reo_wnd_mult, SRTT)   otherwise
//! ```
//!
//! with `reo_wnd_mult` raised by one per round trip that sees a DSACK
//! (RFC 2883) and reset after 16 loss recoveries without one (§6.2 step 4).
//! Because loss is inferred from time, not from counting duplicate ACKs,
//! a lost retransmission is found like any other lost segment.
//!
//! **TLP** ("tail loss probe", §7): while nothing is known lost and nothing
//! is SACKed, a probe timer replaces the RTO:
//!
//! ```text
//! PTO = 2 * SRTT (+ max ACK delay if one segment is in flight), at most
//!       until the RTO would fire                                  (§7.2)
//! ```
//!
//! When it fires, one new segment is sent if the peer's window allows
//! (ignoring cwnd), else the last segment sent is retransmitted (§7.3); the
//! ACK it draws out lets RACK find the lost tail instead of the 200 ms
//! minimum RTO. If the probe was a retransmission and an ACK later moves
//! past `TLP.end_seq` without saying (by a duplicate ACK or DSACK) that the
//! probe was superfluous, the probe repaired a loss, and the congestion
//! window is reduced once (§7.4, Linux's `tcp_process_tlp_ack`).
//!
//! This module is the sans-IO bookkeeping: a `Rack` holds the
//! transmission records (one per segment sent and not cumulatively
//! acknowledged, in sequence order, in a `VecDeque` that is reused, so no
//! allocation per packet) and the RACK and TLP variables; the TCB's hooks
//! (`tcb/loss.rs`) feed it sends and ACKs and act on what it finds. A TCB
//! holds it boxed, and only while data is in flight: an idle connection
//! pays one pointer.
//!
//! DSACKs come from the peer's receiver (ours sends them, RFC 2883,
//! `buffers.rs` and `Tcb::sack_option`; so does Linux's).
//!
//! DupThresh counts SACKed *frames*, as Linux's `sacked_out` counts
//! packets (`tcp_skb_pcount`): a record of a TSO segment
//! (`Segment.gso_size`) stands for `ceil(len / SMSS)` segments, so a hole
//! below one SACKed TSO segment of three or more frames is lost at once,
//! as behind as many separately sent segments. A DSACK of every
//! retransmission of a recovery undoes its window reduction (Linux's
//! `tcp_try_undo_dsack`, `tcb/undo.rs`).
//!
//! # Gaps
//! - RACK runs only with SACK; without it the connection uses RFC 6582
//!   NewReno as before. After an RTO the resend is go-back-N as before
//!   (Linux keeps running RACK in its Loss state).
//! - The retransmission-ambiguity check of §6.2 step 2 uses `min_rtt`
//!   only, not the timestamp echo.

use elvis_kernel::Time;
use elvis_wire::tcp::SeqNumber;
use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;

/// The loss detection a connection uses (Linux's `net.ipv4.tcp_recovery`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LossDetection {
    /// RACK-TLP (RFC 8985), Linux's default (`tcp_recovery=1`), and ours.
    #[default]
    Rack,
    /// Duplicate-ACK threshold and SACK scoreboard (RFC 6675, with RFC 5827
    /// early retransmit), no probe timeout (like Linux before 3.10; today's
    /// Linux with `tcp_recovery=0` still sends tail loss probes).
    Rfc6675,
}

impl LossDetection {
    /// Returns the name NDL and reports use (`rack`, `rfc6675`).
    pub fn as_str(self) -> &'static str {
        match self {
            LossDetection::Rack => "rack",
            LossDetection::Rfc6675 => "rfc6675",
        }
    }
}

impl fmt::Display for LossDetection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing an unknown loss-detection name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownLossDetection(pub String);

impl fmt::Display for UnknownLossDetection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown loss detection '{}' (expected rack or rfc6675)",
            self.0
        )
    }
}

impl std::error::Error for UnknownLossDetection {}

impl FromStr for LossDetection {
    type Err = UnknownLossDetection;

    /// Parses `rack` (also `rack-tlp`) or `rfc6675` (also `sack`),
    /// ignoring ASCII case and surrounding whitespace.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "rack" | "rack-tlp" => Ok(LossDetection::Rack),
            "rfc6675" | "sack" => Ok(LossDetection::Rfc6675),
            _ => Err(UnknownLossDetection(s.to_string())),
        }
    }
}

/// The duplicate-ACK threshold (RFC 5681 §3.2), in segments.
const DUP_THRESH: u32 = 3;
/// Recoveries without DSACK after which `reo_wnd_mult` returns to 1 (§6.2
/// step 4).
const REO_WND_PERSIST: u8 = 16;

const SACKED: u8 = 1;
/// Marked lost and not retransmitted since.
const LOST: u8 = 2;
/// Retransmitted at least once.
const RETRANS: u8 = 4;

/// One segment sent and not cumulatively acknowledged.
#[derive(Clone, Copy, Debug)]
struct Sent {
    start: SeqNumber,
    end: SeqNumber,
    /// When it was (last) sent.
    xmit_ts: Time,
    /// Payload bytes per frame when it was sent (a TSO segment's
    /// `gso_size`, the SMSS; a segment of one frame: its length), so the
    /// record stands for `len / frame` frames, rounded up.
    frame: u32,
    flags: u8,
}

impl Sent {
    fn len(&self) -> usize {
        (self.end - self.start).max(0) as usize
    }

    /// Returns the frames (network segments) the record stands for, at
    /// least one: Linux's `tcp_skb_pcount`.
    fn pcount(&self) -> u32 {
        (self.len().div_ceil(self.frame.max(1) as usize) as u32).max(1)
    }

    fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// What `rto_at` holds when it is not the retransmission timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    /// RACK's reordering timer (§6.3).
    Reo,
    /// TLP's probe timeout (§7.2).
    Tlp,
}

/// The connection facts an ACK is judged with.
#[derive(Clone, Copy, Debug)]
pub struct AckCtx {
    pub now: Time,
    /// `SND.UNA` after the ACK.
    pub una: SeqNumber,
    /// `SND.NXT` (highest sent) after the ACK.
    pub snd_max: SeqNumber,
    pub min_rtt_ns: u64,
    pub srtt_ns: u64,
    /// In fast recovery or after an RTO.
    pub in_recovery: bool,
    /// The ACK carried a DSACK block (RFC 2883).
    pub dsack: bool,
}

/// RACK and TLP state of one connection (RFC 8985 §5.2, §7).
#[derive(Debug)]
pub struct Rack {
    segs: VecDeque<Sent>,
    /// `RACK.xmit_ts` (`None` until a segment is delivered).
    xmit_ts: Option<Time>,
    /// `RACK.end_seq`.
    end_seq: SeqNumber,
    /// `RACK.rtt`, ns.
    rtt_ns: u64,
    /// `RACK.fack`: the highest end delivered (`None` before the first:
    /// sequence numbers compare modulo 2^32, so no value is "lowest").
    fack: Option<SeqNumber>,
    /// `RACK.reordering_seen`.
    reordering_seen: bool,
    reo_wnd_mult: u32,
    reo_wnd_persist: u8,
    /// `RACK.dsack_round`.
    dsack_round: Option<SeqNumber>,
    /// The connection was in recovery at the last ACK (to see it end).
    was_recovering: bool,
    /// Bytes marked lost and not retransmitted since.
    lost_bytes: usize,
    /// Frames SACKed and not cumulatively acknowledged ([`Sent::pcount`]
    /// of each SACKed record: Linux's `sacked_out`).
    sacked_segs: u32,
    /// When the reordering timer should fire (§6.2 step 5's timeout).
    reo_at: Option<Time>,
    /// What the TCB's `rto_at` holds when it is ours.
    pub armed: Option<(Time, Timer)>,
    /// `TLP.end_seq`: `SND.NXT` after the probe (`None`: no episode).
    pub tlp_end_seq: Option<SeqNumber>,
    /// `TLP.is_retrans`.
    pub tlp_is_retrans: bool,
    /// The last event that starts the probe timer (§7.2: new data sent,
    /// or an ACK of new data).
    pub tlp_anchor: Time,
}

/// What [`Rack::on_ack`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckOutcome {
    /// Segments newly marked lost.
    pub newly_lost: u32,
    /// Their bytes.
    pub newly_lost_bytes: u64,
    /// Of them, segments that were retransmissions.
    pub lost_retransmissions: u32,
    /// The TLP episode ended with a repaired loss: reduce cwnd once.
    pub tlp_repaired: bool,
}

impl Default for Rack {
    fn default() -> Self {
        Rack {
            segs: VecDeque::new(),
            xmit_ts: None,
            end_seq: SeqNumber(0),
            rtt_ns: 0,
            fack: None,
            reordering_seen: false,
            reo_wnd_mult: 1,
            reo_wnd_persist: 0,
            dsack_round: None,
            was_recovering: false,
            lost_bytes: 0,
            sacked_segs: 0,
            reo_at: None,
            armed: None,
            tlp_end_seq: None,
            tlp_is_retrans: false,
            tlp_anchor: Time::ZERO,
        }
    }
}

/// RFC 8985 §6.2 `RACK_sent_after(t1, seq1, t2, seq2)`: true if the
/// segment (t1, seq1) was sent after (t2, seq2); the sequence number
/// breaks ties of equal timestamps.
fn sent_after(t1: Time, seq1: SeqNumber, t2: Time, seq2: SeqNumber) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

impl Rack {
    /// Returns true when nothing is in flight and no state is worth
    /// keeping (the TCB then frees the box).
    pub fn is_idle(&self) -> bool {
        self.segs.is_empty()
            && self.tlp_end_seq.is_none()
            && self.reo_wnd_mult == 1
            && self.dsack_round.is_none()
    }

    /// Returns the bytes marked lost and not retransmitted since.
    pub fn lost_bytes(&self) -> usize {
        self.lost_bytes
    }

    /// Returns the reordering timer's deadline, if armed.
    pub fn reo_at(&self) -> Option<Time> {
        self.reo_at
    }

    /// Returns when the oldest outstanding segment was sent (the RTO runs
    /// from there, as Linux's `tcp_rto_delta_us`).
    pub fn head_xmit_ts(&self) -> Option<Time> {
        self.segs.front().map(|s| s.xmit_ts)
    }

    /// Returns the highest segment sent, as (start, end).
    pub fn last(&self) -> Option<(SeqNumber, SeqNumber)> {
        self.segs.back().map(|s| (s.start, s.end))
    }

    /// Returns the first segment marked lost at or after `from`, as
    /// (start, length).
    pub fn next_lost(&self, from: SeqNumber) -> Option<(SeqNumber, usize)> {
        let i = self.segs.partition_point(|s| s.end <= from);
        self.segs
            .range(i..)
            .find(|s| s.has(LOST))
            .map(|s| (s.start, s.len()))
    }

    /// Records that `[start, end)` was sent at `now` in frames of `frame`
    /// payload bytes (a TSO segment's `gso_size`): new data is appended; a retransmission
    /// restamps the records it covers (splitting them at its edges) and
    /// clears their loss mark.
    pub fn on_send(&mut self, start: SeqNumber, end: SeqNumber, now: Time, frame: usize) {
        let frame = u32::try_from(frame).unwrap_or(u32::MAX);
        if end <= start {
            return;
        }
        let top = self.segs.back().map_or(start, |s| s.end);
        if start >= top {
            self.segs.push_back(Sent {
                start,
                end,
                xmit_ts: now,
                frame,
                flags: 0,
            });
            self.tlp_anchor = now;
            return;
        }
        self.split_at(start);
        self.split_at(end);
        let i = self.segs.partition_point(|s| s.end <= start);
        let mut lost_cleared = 0;
        for s in self.segs.range_mut(i..) {
            if s.start >= end {
                break;
            }
            if s.has(LOST) {
                lost_cleared += s.len();
            }
            s.flags = (s.flags & !LOST) | RETRANS;
            s.xmit_ts = now;
        }
        self.lost_bytes -= lost_cleared;
        if end > top {
            self.segs.push_back(Sent {
                start: top,
                end,
                xmit_ts: now,
                frame,
                flags: 0,
            });
            self.tlp_anchor = now;
        }
    }

    /// Splits the record holding `seq` strictly inside it in two.
    fn split_at(&mut self, seq: SeqNumber) {
        let i = self.segs.partition_point(|s| s.end <= seq);
        let Some(s) = self.segs.get_mut(i) else {
            return;
        };
        if s.start < seq && seq < s.end {
            let before = s.pcount();
            let mut high = *s;
            s.end = seq;
            high.start = seq;
            if high.has(SACKED) {
                // (Linux's `tcp_fragment` recounts both halves likewise.)
                self.sacked_segs = self.sacked_segs - before + s.pcount() + high.pcount();
            }
            self.segs.insert(i + 1, high);
        }
    }

    /// Processes an ACK: drops what it acknowledges, marks what it SACKs
    /// (`sacks`: the blocks of this ACK, DSACK excluded), updates the RACK
    /// variables and the reordering window, marks losses (§6.2) and ends a
    /// TLP episode (§7.4). `dupack` is true for a duplicate ACK with no
    /// SACK information and no data.
    pub fn on_ack(
        &mut self,
        cx: &AckCtx,
        sacks: &[(SeqNumber, SeqNumber)],
        dupack: bool,
    ) -> AckOutcome {
        let mut advanced = false;
        // Step 2 and 3 for the cumulatively acknowledged segments.
        while let Some(&s) = self.segs.front() {
            if s.start >= cx.una {
                break;
            }
            if s.end > cx.una {
                // Partly acknowledged: keep the rest.
                let front = self.segs.front_mut().expect("front exists");
                if front.has(LOST) {
                    self.lost_bytes -= (cx.una - front.start).max(0) as usize;
                }
                let before = front.pcount();
                front.start = cx.una;
                if front.has(SACKED) {
                    self.sacked_segs = self.sacked_segs - before + front.pcount();
                }
                break;
            }
            self.segs.pop_front();
            advanced = true;
            if s.has(LOST) {
                self.lost_bytes -= s.len();
            }
            if s.has(SACKED) {
                self.sacked_segs -= s.pcount();
            } else {
                self.delivered(&s, cx);
            }
        }
        if advanced {
            self.tlp_anchor = cx.now;
        }
        // Step 3 wants the newly delivered segments "in ascending order of
        // Segment.xmit_ts"; an ACK lists the newest block first, and a
        // block below it may hold segments whose own ACK was lost, so go
        // up the sequence space (originals were sent in that order).
        let mut blocks = [(SeqNumber(0), SeqNumber(0)); 4];
        let n = sacks.len().min(4);
        blocks[..n].copy_from_slice(&sacks[..n]);
        blocks[..n]
            .sort_unstable_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
        for &(bs, be) in &blocks[..n] {
            self.mark_sacked(bs, be, cx);
        }
        self.update_reo_wnd(cx);
        let mut out = AckOutcome {
            tlp_repaired: self.tlp_on_ack(cx, advanced, dupack, !sacks.is_empty()),
            ..AckOutcome::default()
        };
        self.detect_loss(cx, &mut out);
        out
    }

    /// Marks the records inside the SACK block `[bs, be)` SACKed, first
    /// splitting those it covers in part (a TSO segment's record, of
    /// which the receiver got some frames: Linux's `tcp_match_skb_to_sack`
    /// fragments the `skb` the same way).
    fn mark_sacked(&mut self, bs: SeqNumber, be: SeqNumber, cx: &AckCtx) {
        self.split_at(bs);
        self.split_at(be);
        let i = self.segs.partition_point(|s| s.end <= bs);
        for k in i..self.segs.len() {
            let s = self.segs[k];
            if s.start >= be {
                break;
            }
            if s.has(SACKED) || s.start < bs || s.end > be {
                continue;
            }
            if s.has(LOST) {
                self.lost_bytes -= s.len();
            }
            self.segs[k].flags = (s.flags & !LOST) | SACKED;
            self.sacked_segs += s.pcount();
            self.delivered(&s, cx);
        }
    }

    /// RFC 8985 §6.2 steps 2 and 3 for a segment newly delivered.
    fn delivered(&mut self, s: &Sent, cx: &AckCtx) {
        let rtt = cx.now.as_nanos().saturating_sub(s.xmit_ts.as_nanos());
        // "If Segment.retransmitted is TRUE ... If rtt < RACK.min_RTT:
        // Return" (the ACK may be for the original transmission).
        if s.has(RETRANS) && rtt < cx.min_rtt_ns {
            return;
        }
        self.rtt_ns = rtt;
        let later = match self.xmit_ts {
            None => true,
            Some(t) => sent_after(s.xmit_ts, s.end, t, self.end_seq),
        };
        if later {
            self.xmit_ts = Some(s.xmit_ts);
            self.end_seq = s.end;
        }
        // Step 3: RACK_detect_reordering.
        let fack = self.fack.unwrap_or(s.end);
        if s.end >= fack {
            self.fack = Some(s.end);
        } else if !s.has(RETRANS) {
            self.reordering_seen = true;
        }
    }

    /// RFC 8985 §6.2 step 4: `RACK_update_reo_wnd`.
    fn update_reo_wnd(&mut self, cx: &AckCtx) {
        if self.dsack_round.is_some_and(|r| cx.una >= r) {
            self.dsack_round = None;
        }
        if self.dsack_round.is_none() && cx.dsack {
            self.dsack_round = Some(cx.snd_max);
            self.reo_wnd_mult += 1;
            self.reo_wnd_persist = REO_WND_PERSIST;
        } else if self.was_recovering && !cx.in_recovery {
            // "exiting Fast or RTO recovery"
            self.reo_wnd_persist = self.reo_wnd_persist.saturating_sub(1);
            if self.reo_wnd_persist == 0 {
                self.reo_wnd_mult = 1;
            }
        }
        self.was_recovering = cx.in_recovery;
    }

    /// RFC 8985 §6.2 step 4: `RACK_reo_wnd`, in ns.
    pub fn reo_wnd(&self, cx: &AckCtx) -> u64 {
        if !self.reordering_seen && (cx.in_recovery || self.sacked_segs >= DUP_THRESH) {
            return 0;
        }
        (cx.min_rtt_ns / 4)
            .saturating_mul(u64::from(self.reo_wnd_mult))
            .min(cx.srtt_ns)
    }

    /// RFC 8985 §6.2 step 5: `RACK_detect_loss`; arms the reordering timer
    /// for segments not yet overdue.
    pub fn detect_loss(&mut self, cx: &AckCtx, out: &mut AckOutcome) {
        self.reo_at = None;
        let Some(rack_ts) = self.xmit_ts else {
            return;
        };
        if self.sacked_segs == 0 && self.lost_bytes == 0 {
            // Nothing SACKed: only the oldest segment can have been sent
            // before RACK.xmit_ts, unless it is a retransmission (originals
            // go out in sequence order, and a resent segment above it was
            // resent after it was first sent). Spares the walk per ACK.
            match self.segs.front() {
                None => return,
                Some(f)
                    if !f.has(RETRANS) && !sent_after(rack_ts, self.end_seq, f.xmit_ts, f.end) =>
                {
                    return
                }
                Some(_) => {}
            }
        }
        let reo_wnd = self.reo_wnd(cx);
        let mut timeout: Option<Time> = None;
        for s in self.segs.iter_mut() {
            if s.has(SACKED) || s.has(LOST) {
                continue;
            }
            if !sent_after(rack_ts, self.end_seq, s.xmit_ts, s.end) {
                continue;
            }
            let due = Time::from_nanos(
                s.xmit_ts
                    .as_nanos()
                    .saturating_add(self.rtt_ns)
                    .saturating_add(reo_wnd),
            );
            if due <= cx.now {
                s.flags |= LOST;
                self.lost_bytes += s.len();
                out.newly_lost += 1;
                out.newly_lost_bytes += s.len() as u64;
                if s.has(RETRANS) {
                    out.lost_retransmissions += 1;
                }
            } else {
                timeout = Some(timeout.map_or(due, |t| t.max(due)));
            }
        }
        self.reo_at = timeout;
    }

    /// RFC 8985 §7.4 (as Linux's `tcp_process_tlp_ack`): ends a TLP
    /// episode; returns true if the probe repaired a loss.
    fn tlp_on_ack(&mut self, cx: &AckCtx, advanced: bool, dupack: bool, sacked: bool) -> bool {
        let Some(end) = self.tlp_end_seq else {
            return false;
        };
        if cx.una < end {
            return false;
        }
        if !self.tlp_is_retrans || cx.dsack {
            // A probe of new data, or the DSACK of a superfluous probe.
            self.tlp_end_seq = None;
            false
        } else if cx.una > end {
            // "the ACK advances beyond TLP.end_seq": the probe repaired a
            // loss that would otherwise have gone unnoticed.
            self.tlp_end_seq = None;
            true
        } else {
            if dupack && !advanced && !sacked {
                // A duplicate ACK at the probe's end: the original and the
                // probe both arrived, no loss.
                self.tlp_end_seq = None;
            }
            false
        }
    }

    /// Forgets the loss marks and the TLP episode after an RTO (the resend
    /// that follows goes back to `SND.UNA`).
    pub fn on_rto(&mut self) {
        self.unmark_lost();
        self.reo_at = None;
        self.armed = None;
        self.tlp_end_seq = None;
    }

    /// Forgets every loss mark (an RTO, or an undo).
    pub fn unmark_lost(&mut self) {
        for s in self.segs.iter_mut() {
            s.flags &= !LOST;
        }
        self.lost_bytes = 0;
    }

    /// Returns true if a retransmitted segment is neither SACKed,
    /// cumulatively acknowledged nor marked lost again (Linux's
    /// `retrans_out != 0`).
    pub fn retrans_out(&self) -> bool {
        self.segs
            .iter()
            .any(|s| s.has(RETRANS) && !s.has(SACKED) && !s.has(LOST))
    }

    /// Returns true if a record overlapping `[start, end)` was
    /// retransmitted (Linux's `TCPCB_RETRANS`), or nothing of it is held.
    pub fn retransmitted(&self, start: SeqNumber, end: SeqNumber) -> bool {
        let i = self.segs.partition_point(|s| s.end <= start);
        match self.segs.get(i) {
            Some(s) if s.start < end => self
                .segs
                .range(i..)
                .take_while(|s| s.start < end)
                .any(|s| s.has(RETRANS)),
            _ => true,
        }
    }

    /// Notes that the reordering timer fired: the caller runs
    /// [`Rack::detect_loss`] next.
    pub fn reo_fired(&mut self) {
        self.reo_at = None;
    }
}

/// RFC 8985 §7.2 `PTO`, in ns: `2 * SRTT`, plus `max_ack_delay` when only
/// one segment is in flight (the receiver may delay the ACK of a lone
/// segment); 1 s without an RTT sample.
pub fn pto_ns(srtt_ns: Option<u64>, one_segment: bool, max_ack_delay_ns: u64) -> u64 {
    match srtt_ns {
        None => 1_000_000_000,
        Some(srtt) => {
            let pto = srtt.saturating_mul(2);
            if one_segment {
                pto.saturating_add(max_ack_delay_ns)
            } else {
                pto
            }
        }
    }
}

/// Returns true if the first SACK block of an ACK is a DSACK (RFC 2883
/// §4): it lies below the cumulative ACK, or inside the second block.
pub fn is_dsack(blocks: &[Option<(u32, u32)>; 4], ack: SeqNumber) -> bool {
    let Some((s, e)) = blocks[0] else {
        return false;
    };
    let (s, e) = (SeqNumber(s), SeqNumber(e));
    if e <= ack {
        return true;
    }
    match blocks[1] {
        Some((s2, e2)) => s >= SeqNumber(s2) && e <= SeqNumber(e2),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: usize = 1000;
    const MS: u64 = 1_000_000;

    fn t(ms: u64) -> Time {
        Time::from_nanos(ms * MS)
    }

    fn seq(n: usize) -> SeqNumber {
        SeqNumber(1_000 + (n * MSS) as u32)
    }

    fn cx(now: u64, una: usize, snd_max: usize) -> AckCtx {
        AckCtx {
            now: t(now),
            una: seq(una),
            snd_max: seq(snd_max),
            min_rtt_ns: 10 * MS,
            srtt_ns: 10 * MS,
            in_recovery: false,
            dsack: false,
        }
    }

    /// Sends segments `from..to` at time `at` ms.
    fn send(r: &mut Rack, from: usize, to: usize, at: u64) {
        for i in from..to {
            r.on_send(seq(i), seq(i + 1), t(at), MSS);
        }
    }

    /// RFC 8985 §6.2 step 5: a segment sent before the most recently
    /// delivered one is lost once `xmit_ts + RACK.rtt + reo_wnd <= now`;
    /// before that the reordering timer is armed for exactly that moment.
    #[test]
    fn a_hole_below_one_sacked_segment_is_lost_after_rtt_plus_reo_wnd() {
        let mut r = Rack::default();
        send(&mut r, 0, 4, 0); // four segments at t = 0
        r.on_send(seq(4), seq(5), t(1), MSS); // a fifth 1 ms later
                                              // Segment 4 is SACKed at t = 11 (RACK.rtt = 10 ms), 0..4 missing:
                                              // one SACKed segment (< DupThresh), so reo_wnd = min_rtt / 4.
        let o = r.on_ack(&cx(11, 0, 5), &[(seq(4), seq(5))], false);
        assert_eq!(o.newly_lost, 0, "not before RACK.rtt + reo_wnd");
        // Due at 0 + 10 + 2.5 = 12.5 ms.
        assert_eq!(r.reo_at(), Some(Time::from_nanos(12_500_000)));
        let mut out = AckOutcome::default();
        r.detect_loss(&cx(12, 0, 5), &mut out);
        assert_eq!(out.newly_lost, 0, "12 ms < 12.5 ms");
        r.detect_loss(
            &AckCtx {
                now: Time::from_nanos(12_500_000),
                ..cx(12, 0, 5)
            },
            &mut out,
        );
        assert_eq!(out.newly_lost, 4);
        assert_eq!(r.lost_bytes(), 4 * MSS);
        assert_eq!(r.next_lost(seq(0)), Some((seq(0), MSS)));
        assert_eq!(r.reo_at(), None);
    }

    /// A TSO segment is one record; the receiver SACKs the frames after a
    /// lost one. The record is split at the block's edges (as Linux
    /// fragments a partly SACKed `skb`), so only the lost frame is marked
    /// lost, not the whole TSO segment. The block holds five frames (in
    /// two records), at least DupThresh, so `reo_wnd` is 0 and the frame
    /// is lost as soon as RACK.rtt has passed since it was sent.
    #[test]
    fn a_sack_block_over_part_of_a_tso_segment_leaves_only_the_hole_lost() {
        let mut r = Rack::default();
        r.on_send(seq(0), seq(7), t(0), MSS); // one TSO segment of 7 frames
        r.on_send(seq(7), seq(8), t(1), MSS);
        // Frames 0 and 1 arrive, 2 is lost, 3..8 are SACKed.
        let o = r.on_ack(&cx(11, 2, 8), &[(seq(3), seq(8))], false);
        assert_eq!(r.sacked_segs, 5);
        assert_eq!(o.newly_lost, 1);
        assert_eq!(r.lost_bytes(), MSS);
        assert_eq!(r.next_lost(seq(2)), Some((seq(2), MSS)));
        assert_eq!(r.next_lost(seq(3)), None);
    }

    /// Linux counts DupThresh in packets (`tp->sacked_out`, the sum of
    /// `tcp_skb_pcount` over SACKed `skb`s; `tcp_rack_reo_wnd` returns 0
    /// once `sacked_out >= tp->reordering`): one SACKed TSO record of four
    /// frames is four segments, so the hole below it is lost at once, as
    /// behind four separately sent segments — not after `min_rtt / 4` as
    /// when each record counted once.
    #[test]
    fn a_hole_below_one_sacked_four_segment_tso_record_is_lost_at_once() {
        for tso in [true, false] {
            let mut r = Rack::default();
            r.on_send(seq(0), seq(1), t(0), MSS);
            if tso {
                r.on_send(seq(1), seq(5), t(0), MSS); // one record, 4 frames
            } else {
                send(&mut r, 1, 5, 0);
            }
            let o = r.on_ack(&cx(10, 0, 5), &[(seq(1), seq(5))], false);
            assert_eq!(r.sacked_segs, 4, "tso {tso}");
            assert_eq!(o.newly_lost, 1, "tso {tso}: lost at RACK.rtt, reo_wnd 0");
            assert_eq!(r.next_lost(seq(0)), Some((seq(0), MSS)));
        }
        // A short record (less than one frame) is still one segment.
        let mut r = Rack::default();
        r.on_send(seq(0), seq(1), t(0), MSS);
        r.on_send(seq(1), SeqNumber(seq(1).0 + 100), t(0), MSS);
        let o = r.on_ack(&cx(10, 0, 2), &[(seq(1), SeqNumber(seq(1).0 + 100))], false);
        assert_eq!((r.sacked_segs, o.newly_lost), (1, 0));
    }

    /// The SACKed-frame count follows splits and cumulative ACKs: it is
    /// the frames of the SACKed records, and zero once all are acknowledged.
    #[test]
    fn the_sacked_frame_count_follows_splits_and_cumulative_acks() {
        let mut r = Rack::default();
        r.on_send(seq(0), seq(8), t(0), MSS); // 8 frames
        r.on_ack(&cx(10, 0, 8), &[(seq(2), seq(8))], false);
        assert_eq!(r.sacked_segs, 6);
        // A retransmission of frame 0 splits the unSACKed head.
        r.on_send(seq(0), seq(1), t(10), MSS);
        assert_eq!(r.sacked_segs, 6);
        // A cumulative ACK into the SACKed record trims it.
        r.on_ack(&cx(20, 4, 8), &[(seq(4), seq(8))], false);
        assert_eq!(r.sacked_segs, 4);
        r.on_ack(&cx(21, 8, 8), &[], false);
        assert_eq!(r.sacked_segs, 0);
        assert!(r.segs.is_empty());
    }

    /// RFC 8985 §6.2 step 4: with no reordering seen and DupThresh
    /// segments SACKed, `reo_wnd` is 0, so the hole is lost at once (the
    /// time-based equivalent of three duplicate ACKs).
    #[test]
    fn three_sacked_segments_mark_the_hole_lost_at_once() {
        let mut r = Rack::default();
        send(&mut r, 0, 4, 0);
        let o = r.on_ack(&cx(10, 0, 4), &[(seq(1), seq(4))], false);
        assert_eq!(o.newly_lost, 1);
        assert_eq!(r.next_lost(seq(0)), Some((seq(0), MSS)));
    }

    /// RFC 8985 §3.3.2 / §6.2: segments delivered out of order within the
    /// reordering window are not marked lost, and once the late segment
    /// arrives RACK notes that the path reorders (`reordering_seen`), which
    /// keeps `reo_wnd` open afterwards.
    #[test]
    fn reordering_within_reo_wnd_marks_nothing_lost() {
        let mut r = Rack::default();
        send(&mut r, 0, 3, 0);
        // Segment 1 is SACKed 10 ms later, segment 0 is late by 1 ms
        // (< min_rtt / 4 = 2.5 ms).
        let o = r.on_ack(&cx(10, 0, 3), &[(seq(1), seq(2))], false);
        assert_eq!(o.newly_lost, 0);
        let o = r.on_ack(&cx(11, 2, 3), &[], false);
        assert_eq!(o.newly_lost, 0);
        assert_eq!(r.lost_bytes(), 0);
        assert!(r.reordering_seen, "segment 0 ended below RACK.fack");
        // With reordering seen, even three SACKed segments leave reo_wnd open.
        send(&mut r, 3, 7, 20);
        let o = r.on_ack(&cx(30, 3, 7), &[(seq(4), seq(7))], false);
        assert_eq!(o.newly_lost, 0, "reo_wnd = min_rtt/4 after reordering");
        assert!(r.reo_at().is_some());
    }

    /// RFC 8985 §6.2 step 2: "If Segment.retransmitted is TRUE ... If rtt <
    /// RACK.min_RTT: Return" (the ACK is likely for the original).
    #[test]
    fn a_retransmission_acked_sooner_than_min_rtt_does_not_move_rack() {
        let mut r = Rack::default();
        send(&mut r, 0, 2, 0);
        r.on_send(seq(0), seq(1), t(5), MSS); // resent at 5 ms
        let o = r.on_ack(&cx(7, 1, 2), &[], false); // acked 2 ms later
        assert_eq!(o.newly_lost, 0);
        assert_eq!(r.xmit_ts, None, "the ambiguous sample is ignored");
    }

    /// A retransmission that is itself lost is found by time like any
    /// other segment (RFC 8985 §2.2 "lost retransmissions").
    #[test]
    fn a_lost_retransmission_is_marked_lost_again() {
        let mut r = Rack::default();
        send(&mut r, 0, 4, 0);
        r.on_ack(&cx(10, 0, 4), &[(seq(1), seq(4))], false);
        assert_eq!(r.next_lost(seq(0)), Some((seq(0), MSS)));
        r.on_send(seq(0), seq(1), t(10), MSS); // resent
        assert_eq!(r.lost_bytes(), 0);
        send(&mut r, 4, 5, 11); // new data after it
        let mut c = cx(21, 0, 5);
        c.in_recovery = true;
        let o = r.on_ack(&c, &[(seq(4), seq(5))], false);
        assert_eq!((o.newly_lost, o.lost_retransmissions), (1, 1));
    }

    /// A retransmission spanning part of a record splits it, and partial
    /// cumulative ACKs trim the first record.
    #[test]
    fn records_split_at_retransmission_edges_and_trim_on_partial_acks() {
        let mut r = Rack::default();
        r.on_send(seq(0), seq(3), t(0), MSS);
        r.on_send(seq(1), seq(2), t(5), MSS);
        assert_eq!(r.segs.len(), 3);
        assert_eq!(r.head_xmit_ts(), Some(t(0)));
        let c = AckCtx {
            una: SeqNumber(seq(0).0 + 500),
            ..cx(20, 0, 3)
        };
        r.on_ack(&c, &[], false);
        assert_eq!(r.segs.front().map(|s| s.len()), Some(500));
        assert_eq!(r.last(), Some((seq(2), seq(3))));
    }

    /// RFC 8985 §6.2 step 3 ("in ascending order of Segment.xmit_ts"): an
    /// ACK lists its newest SACK block first; a lower block holding
    /// segments whose own ACK was lost is not reordering.
    #[test]
    fn sack_blocks_listed_newest_first_are_not_taken_for_reordering() {
        let mut r = Rack::default();
        send(&mut r, 0, 8, 0);
        // The ACK SACKing segment 2 was lost; this one SACKs 6 (newest
        // block first) and 2.
        r.on_ack(&cx(10, 0, 8), &[(seq(6), seq(7)), (seq(2), seq(3))], false);
        assert!(!r.reordering_seen);
    }

    /// RFC 8985 §6.2 step 4: a DSACK widens `reo_wnd` by one `min_rtt/4`
    /// per round trip, for 16 recoveries.
    #[test]
    fn a_dsack_widens_the_reordering_window_once_per_round() {
        let mut r = Rack {
            reordering_seen: true,
            ..Rack::default()
        };
        send(&mut r, 0, 4, 0);
        let mut c = cx(10, 1, 4);
        assert_eq!(r.reo_wnd(&c), 10 * MS / 4);
        c.dsack = true;
        r.on_ack(&c, &[], false);
        assert_eq!(r.reo_wnd(&c), 2 * 10 * MS / 4);
        r.on_ack(&c, &[], false); // same round: no further growth
        assert_eq!(r.reo_wnd_mult, 2);
        // Capped by SRTT.
        r.reo_wnd_mult = 100;
        assert_eq!(r.reo_wnd(&c), 10 * MS);
    }

    /// RFC 8985 §7.4: a retransmitted probe followed by an ACK beyond
    /// `TLP.end_seq` repaired a loss (reduce once); a duplicate ACK at
    /// `TLP.end_seq` says both copies arrived (no reduction).
    #[test]
    fn tlp_episode_ends_with_a_reduction_only_when_the_probe_repaired_a_loss() {
        let mut r = Rack::default();
        send(&mut r, 0, 2, 0);
        r.on_send(seq(1), seq(2), t(20), MSS); // the probe
        r.tlp_end_seq = Some(seq(2));
        r.tlp_is_retrans = true;
        let o = r.on_ack(&cx(30, 2, 2), &[], false);
        assert!(!o.tlp_repaired, "the ACK of the probe itself ends nothing");
        send(&mut r, 2, 3, 30);
        let o = r.on_ack(&cx(40, 3, 3), &[], false);
        assert!(o.tlp_repaired);
        assert_eq!(r.tlp_end_seq, None);
        let o = r.on_ack(&cx(41, 3, 3), &[], false);
        assert!(!o.tlp_repaired, "once");

        let mut r = Rack::default();
        send(&mut r, 0, 2, 0);
        r.tlp_end_seq = Some(seq(2));
        r.tlp_is_retrans = true;
        r.on_ack(&cx(15, 2, 2), &[], false);
        r.on_ack(&cx(16, 2, 2), &[], true); // the probe's duplicate ACK
        assert_eq!(r.tlp_end_seq, None);
    }

    /// RFC 8985 §7.2: PTO = 2·SRTT, plus the maximum ACK delay with one
    /// segment in flight; 1 s before any RTT sample.
    #[test]
    fn pto_is_twice_srtt_plus_the_ack_delay_for_a_lone_segment() {
        assert_eq!(pto_ns(Some(10 * MS), false, 40 * MS), 20 * MS);
        assert_eq!(pto_ns(Some(10 * MS), true, 40 * MS), 60 * MS);
        assert_eq!(pto_ns(None, false, 40 * MS), 1_000_000_000);
    }

    /// RFC 2883 §4: the first block is a DSACK when it lies below the
    /// cumulative ACK or inside the second block.
    #[test]
    fn dsack_blocks_are_recognised_by_rfc_2883_rules() {
        let ack = SeqNumber(5000);
        assert!(is_dsack(&[Some((4000, 4500)), None, None, None], ack));
        assert!(is_dsack(
            &[Some((6000, 6500)), Some((5500, 7000)), None, None],
            ack
        ));
        assert!(!is_dsack(
            &[Some((6000, 6500)), Some((7000, 8000)), None, None],
            ack
        ));
        assert!(!is_dsack(&[None; 4], ack));
    }

    #[test]
    fn loss_detection_names_parse_and_display_round_trip() {
        for l in [LossDetection::Rack, LossDetection::Rfc6675] {
            assert_eq!(l.as_str().parse::<LossDetection>(), Ok(l));
        }
        assert_eq!(" RACK-TLP ".parse(), Ok(LossDetection::Rack));
        let e = "fack".parse::<LossDetection>().unwrap_err();
        assert!(e.to_string().contains("'fack'"));
    }
}
