//! Undo of spurious window reductions, as Linux (6.6,
//! `net/ipv4/tcp_input.c`) does it.
//!
//! A loss-recovery episode (fast recovery, or the Loss state after a
//! retransmission timeout) reduces the window on the guess that segments
//! were lost. When the sender later learns that the segments it resent
//! had arrived after all (reordering, a delay spike), the reduction was
//! spurious and is undone. Each episode notes ([`Undo`]):
//!
//! - `undo_marker`: `SND.UNA` when the episode began (`tcp_init_undo`);
//! - `undo_retrans`: the frames (`tcp_skb_pcount`) retransmitted in the
//!   episode and not yet reported as duplicates by a DSACK (RFC 2883)
//!   — `tcp_retransmit_skb` adds, `tcp_check_dsack` / `tcp_sacktag_one`
//!   subtract;
//! - `retrans_stamp`: our TSval on the first retransmission;
//! - `prior_cwnd` and `prior_ssthresh`: the window and
//!   `tcp_current_ssthresh` (`max(ssthresh, 3/4 cwnd)`) before the
//!   reduction (`tcp_init_cwnd_reduction`, `tcp_enter_loss`).
//!
//! The episode is found spurious (`tcp_may_undo`) when every frame it
//! retransmitted was DSACKed (RFC 3708's detection), or when an ACK
//! echoes a timestamp older than the first retransmission, so it was sent
//! for an original transmission (`tcp_packet_delayed`; the Eifel
//! detection of RFC 3522). The checks, as Linux places them:
//!
//! | where (Linux)                              | when                               | evidence      |
//! |--------------------------------------------|------------------------------------|---------------|
//! | `tcp_try_undo_recovery` (full ACK)         | the ACK ends fast recovery         | DSACK or TS   |
//! | `tcp_try_undo_partial`                     | a partial ACK, no resend in flight | TS            |
//! | `tcp_try_undo_dsack`                       | any ACK, in fast recovery or after | DSACK         |
//! | `tcp_try_undo_loss` (`tcp_process_loss`)   | an ACK of new data after an RTO    | DSACK or TS   |
//!
//! The undo (`tcp_undo_cwnd_reduction`) sets `cwnd = max(cwnd,
//! prior_cwnd)` and `ssthresh = max(ssthresh, prior_ssthresh)` through
//! [`CongestionControl::undo`] (Linux's `undo_cwnd`, `tcp_reno_undo_cwnd`
//! for Reno and CUBIC), ends the episode, and for the partial and loss
//! undos forgets the loss marks (`unmark_loss`), so the rest is not
//! resent. An ACK with ECE forbids the undo of the window (Linux zeroes
//! `prior_ssthresh`: the reduction answers ECN, not loss). Undos are
//! counted in `TcpStats::undos`; `TcpConfig::undo` turns them off (Linux
//! has no such switch).
//!
//! # Where we differ from Linux
//! - The bookkeeping lives in the connection's boxed loss state
//!   (`Cold`) and goes with it when nothing is in flight; Linux keeps
//!   `undo_marker` until the next episode, so a DSACK arriving after
//!   everything was acknowledged can still undo there.
//! - Our TSval ticks every microsecond, Linux's every millisecond: our
//!   timestamp detection also sees an original sent less than a
//!   millisecond before the retransmission.
//! - A DSACK undo in fast recovery waits until no segment is marked lost
//!   (Linux undoes at once and, with segments still marked lost, enters
//!   recovery again, reducing again).
//! - `undo_retrans` starts at "nothing retransmitted" (Linux starts it at
//!   `retrans_out`, counting a tail loss probe still in flight).
//! - A DSACK is dubious (ignored) when the episode's DSACKed frames would
//!   exceed the frames it retransmitted; Linux compares the connection's
//!   totals (`tcp_dsack_seen`: `dsack_dups > total_retrans`). A DSACK
//!   above `SND.UNA` counts only if RACK recorded the data as
//!   retransmitted (as Linux's `TCPCB_RETRANS` check); without RACK it
//!   always counts.
//! - No F-RTO (RFC 5682), whose undo (`tcp_try_undo_loss(sk, true)`)
//!   needs no DSACK or timestamp; and RACK's `reo_wnd_persist` is not
//!   raised on a DSACK undo.

use super::Tcb;
use elvis_kernel::Time;
use elvis_tcpcc::CongestionControl;
use elvis_wire::tcp::{Repr, SeqNumber};

/// One loss-recovery episode's undo bookkeeping (Linux's fields named in
/// the module doc).
#[derive(Clone, Copy, Debug)]
pub struct Undo {
    /// `undo_marker`: DSACKs of data above it count.
    marker: SeqNumber,
    /// `undo_retrans`: frames retransmitted and not DSACKed since; `None`
    /// before the first retransmission (Linux's −1).
    retrans: Option<u32>,
    /// Frames retransmitted in the episode, and frames DSACKed (a DSACK
    /// claiming more is dubious).
    sent: u32,
    dups: u32,
    /// `retrans_stamp`: our TSval on the first retransmission.
    stamp: Option<u32>,
    /// `(prior_cwnd, prior_ssthresh)`; `None` where the window may not be
    /// restored (ECE seen, or an ECN reduction was under way).
    prior: Option<(u64, u64)>,
}

/// How an episode's reduction was found spurious.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// Only a DSACK of every retransmission counts (`tcp_try_undo_dsack`).
    Dsack,
    /// Only the timestamp echo counts (`tcp_try_undo_partial`).
    Delayed,
    /// Either (`tcp_may_undo`).
    Either,
}

impl Tcb {
    /// Starts an episode's bookkeeping (`tcp_init_undo` and the prior
    /// window), just before the window is reduced; `restorable` is false
    /// where the reduction must stand (an ECN reduction under way).
    #[cold]
    pub fn undo_begin(&mut self, restorable: bool) {
        if !self.cfg.undo {
            return;
        }
        let (cwnd, ssthresh) = (self.cc.window(), self.cc.ssthresh());
        let prior = restorable.then(|| (cwnd, elvis_tcpcc::undo_ssthresh(cwnd, ssthresh)));
        self.cold_mut().undo = Some(Undo {
            marker: self.snd_una,
            retrans: None,
            sent: 0,
            dups: 0,
            stamp: None,
            prior,
        });
    }

    /// Counts a retransmission of `frames` frames sent at `now`
    /// (`tcp_retransmit_skb`).
    #[cold]
    pub fn undo_on_retransmit(&mut self, now: Time, frames: u32) {
        let ts = self.ts_enabled.then(|| super::ts_clock(now));
        if let Some(u) = self.cold.as_deref_mut().and_then(|c| c.undo.as_mut()) {
            u.retrans = Some(u.retrans.unwrap_or(0).saturating_add(frames));
            u.sent = u.sent.saturating_add(frames);
            if u.stamp.is_none() {
                u.stamp = ts;
            }
        }
    }

    /// Counts a DSACK block `[s, e)` against the episode's
    /// retransmissions (`tcp_check_dsack`, `tcp_dsack_seen`).
    #[cold]
    pub fn undo_on_dsack(&mut self, s: SeqNumber, e: SeqNumber) {
        let smss = self.smss().max(1);
        // (Linux compares with the largest window the peer offered; no
        // more than the send buffer was ever in flight.)
        let max_window = self.sndbuf_cap().max(self.snd_wnd as usize);
        if self.cold().undo.is_none() {
            return;
        }
        // A duplicate of data still held names what it duplicated: it
        // counts only if that was retransmitted (`tcp_sacktag_one` checks
        // `TCPCB_RETRANS`; the network may duplicate an original too).
        // Below `SND.UNA` Linux counts "dumbly", and so do we.
        let snd_una = self.snd_una;
        let rack = self.cold.as_deref().and_then(|c| c.rack.as_deref());
        if s >= snd_una && rack.is_some_and(|r| !r.retransmitted(s, e)) {
            return;
        }
        let Some(u) = self.cold.as_deref_mut().and_then(|c| c.undo.as_mut()) else {
            return;
        };
        let len = (e - s).max(0) as usize;
        // "Dubious DSACK": empty, or larger than any window.
        if len == 0 || len > max_window.max(smss) {
            return;
        }
        let dups = len.div_ceil(smss) as u32;
        let Some(left) = u.retrans.filter(|&r| r > 0) else {
            return;
        };
        if e <= u.marker || u.dups.saturating_add(dups) > u.sent {
            return;
        }
        u.dups += dups;
        u.retrans = Some(left.saturating_sub(dups));
    }

    /// An ACK with ECE: the episode's reduction stands (Linux zeroes
    /// `prior_ssthresh` on `FLAG_ECE`).
    #[cold]
    pub fn undo_forbid(&mut self) {
        if let Some(u) = self.cold.as_deref_mut().and_then(|c| c.undo.as_mut()) {
            u.prior = None;
        }
    }

    /// Returns true if the episode's reduction is shown spurious by
    /// `evidence` on the ACK `seg`.
    fn undo_due(&self, seg: &Repr, evidence: Evidence) -> bool {
        let Some(u) = self.cold().undo else {
            return false;
        };
        let dsack = u.retrans == Some(0);
        // `tcp_packet_delayed`: the echo is older than the first resend.
        let delayed = match (u.stamp, seg.timestamp) {
            (Some(stamp), Some((_, ecr))) if self.ts_enabled && ecr != 0 => {
                (ecr.wrapping_sub(stamp) as i32) < 0
            }
            _ => false,
        };
        match evidence {
            Evidence::Dsack => dsack,
            Evidence::Delayed => delayed,
            Evidence::Either => dsack || delayed,
        }
    }

    /// Undoes the episode's reduction if `evidence` on `seg` shows it
    /// spurious (`tcp_undo_cwnd_reduction`): restores the window, ends
    /// fast recovery or the Loss state, and with `unmark_loss` forgets
    /// the loss marks and stops resending. Returns true if it did.
    #[cold]
    pub fn try_undo(
        &mut self,
        now: Time,
        seg: &Repr,
        evidence: Evidence,
        unmark_loss: bool,
    ) -> bool {
        if !self.undo_due(seg, evidence) {
            return false;
        }
        let prior = self.cold_mut().undo.take().and_then(|u| u.prior);
        self.stats.loss().undos += 1;
        match prior {
            Some((cwnd, ssthresh)) => self.cc.undo(cwnd, ssthresh),
            None => self.cc.on_recovery_end(now.as_nanos()),
        }
        self.reset_cold(|c| {
            c.recovery = None;
            c.rexmit_bytes_in_recovery = 0;
            c.rexmit_mark = None;
        });
        if self.cold().rto_high.is_some() {
            // Out of the Loss state: the go-back-N resend stops.
            self.reset_cold(|c| c.rto_high = None);
            self.snd_nxt = self.snd_max;
        }
        if unmark_loss {
            self.loss_unmark();
        }
        true
    }

    /// `tcp_try_undo_partial`: a partial ACK in fast recovery echoing a
    /// timestamp older than the first retransmission undoes, unless a
    /// retransmission is still in flight. Returns true if it did.
    #[cold]
    pub fn try_undo_partial(&mut self, now: Time, seg: &Repr) -> bool {
        self.undo_due(seg, Evidence::Delayed)
            && !self.retrans_in_flight()
            && self.try_undo(now, seg, Evidence::Delayed, true)
    }

    /// Returns true when no segment is marked lost: RACK has none, or
    /// (without RACK) the scoreboard shows no hole below SACKed data.
    pub fn nothing_marked_lost(&self) -> bool {
        match self.cold().rack.as_deref().filter(|_| self.rack_on()) {
            Some(r) => r.lost_bytes() == 0,
            None => self.cold().scoreboard.next_hole(self.snd_una).is_none(),
        }
    }

    /// Returns true if a retransmission is still in flight (Linux's
    /// `retrans_out`): RACK knows; without it, a resend above `SND.UNA`.
    pub fn retrans_in_flight(&self) -> bool {
        match self.cold().rack.as_deref().filter(|_| self.rack_on()) {
            Some(r) => r.retrans_out(),
            None => self.cold().rexmit_next > self.snd_una,
        }
    }
}
