//! The TCB's timers: the single deadline's handler [`Tcb::on_timer`]
//! (retransmission timeout, RACK's reordering and probe timers via
//! `loss.rs`, delayed ACK, persist probes, keep-alive, TIME-WAIT).

use super::*;

impl Tcb {
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
        self.pace_timer(now);
        if self.state != State::Closed {
            self.output(now, out);
        }
        self.tidy_cold();
        self.rcvbuf.release_if_empty();
        fx
    }

    /// Returns when the keep-alive timer fires, in the states where it
    /// runs (synchronized, not TIME-WAIT).
    pub fn keepalive_deadline(&self) -> Option<Time> {
        let k = self.keepalive.as_deref()?;
        match self.state {
            State::SynSent | State::SynReceived | State::TimeWait | State::Closed => None,
            _ => k.deadline(),
        }
    }

    /// Keep-alive timer (see `keepalive.rs`).
    pub fn on_keepalive(&mut self, now: Time, out: &mut Vec<Segment>, fx: &mut Effects) {
        let busy = self.snd_una != self.snd_max || !self.sndbuf.is_empty();
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
    pub fn on_rto(&mut self, now: Time, out: &mut Vec<Segment>, fx: &mut Effects) {
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
        let sacked = self.cold().scoreboard.sacked_bytes();
        let outstanding = (self.snd_max - self.snd_una).max(0) as usize;
        self.rate_on_lost(outstanding.saturating_sub(sacked) as u64);
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

    pub fn zero_window_probe(&mut self, now: Time, out: &mut Vec<Segment>) {
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

    pub fn fail(&mut self, e: SocketError, fx: &mut Effects) {
        self.error = Some(Box::new(e));
        self.close();
        fx.readable = true;
        fx.writable = true;
        fx.established = true;
        fx.closed = true;
    }
}
