//! The TCB's hooks into RACK-TLP loss detection (`../rack.rs`, RFC 8985).
//!
//! The hooks are called from the TCB's send, ACK, timer and output paths:
//!
//! - every data segment sent goes through [`Tcb::loss_on_send`] (its
//!   transmit time is recorded);
//! - every acceptable ACK ends with [`Tcb::loss_on_ack`], which lets RACK
//!   mark segments lost, enters fast recovery when it does (instead of the
//!   duplicate-ACK threshold), and ends a TLP episode;
//! - in recovery, [`Tcb::rack_retransmit`] resends the segments marked lost
//!   while the pipe allows (RFC 6675 §5 step (C), with RACK's marks instead
//!   of the FACK rule);
//! - [`Tcb::loss_rearm`], at the end of each output, puts RACK's
//!   reordering timer or TLP's probe timer in place of the RTO in the TCB's
//!   single retransmission deadline (as Linux shares `icsk_retransmit_timer`
//!   between the three), and [`Tcb::loss_timer`] handles them when it fires.
//!
//! RACK is used when the connection's configuration asks for it (the
//! default) and SACK was negotiated (RFC 8985 §4 requires SACK).

use super::super::rack::{self, AckCtx, AckOutcome, LossDetection, Rack, Timer};
use super::{Deadline, Segment, Tcb};
use elvis_kernel::Time;
use elvis_message::Message;
use elvis_tcpcc::CongestionControl;
use elvis_wire::tcp::{Control, Repr, SeqNumber};

impl Tcb {
    /// Returns true when RACK-TLP detects losses on this connection.
    pub fn rack_on(&self) -> bool {
        self.sack_enabled && self.cfg.loss_detection == LossDetection::Rack
    }

    /// Records a data segment `[seq, seq + len)` sent at `now` in frames
    /// of `frame` bytes (its `gso_size`; `len` when it is one frame).
    pub fn loss_on_send(&mut self, seq: SeqNumber, len: usize, frame: usize, now: Time) {
        let end = seq + len;
        // A zero-window probe's byte lies beyond SND.NXT: not in flight.
        if len == 0 || end > self.snd_max || !self.rack_on() {
            return;
        }
        self.cold_mut()
            .rack
            .get_or_insert_with(Default::default)
            .on_send(seq, end, now, frame);
    }

    /// Returns the bytes in flight in recovery under RACK: outstanding,
    /// less SACKed, less marked lost and not resent (RFC 6675's pipe with
    /// RACK's loss marks; Linux's `tcp_packets_in_flight`).
    pub fn rack_pipe(&self) -> Option<usize> {
        let r = self
            .cold
            .as_deref()
            .and_then(|c| c.rack.as_deref())
            .filter(|_| self.rack_on())?;
        let outstanding = (self.snd_max - self.snd_una).max(0) as usize;
        Some(outstanding.saturating_sub(self.cold().scoreboard.sacked_bytes() + r.lost_bytes()))
    }

    fn ack_ctx(&self, now: Time, dsack: bool) -> AckCtx {
        AckCtx {
            now,
            una: self.snd_una,
            snd_max: self.snd_max,
            min_rtt_ns: self.min_rtt().map_or(0, |d| d.as_nanos() as u64),
            srtt_ns: self.srtt().map_or(u64::MAX, |d| d.as_nanos() as u64),
            in_recovery: self.cold().recovery.is_some() || self.cold().rto_high.is_some(),
            dsack,
        }
    }

    /// RACK's part of ACK processing (RFC 8985 §6.2, §7.4), after the
    /// cumulative ACK and the SACK scoreboard are updated.
    pub fn loss_on_ack(
        &mut self,
        now: Time,
        seg: &Repr,
        payload_len: usize,
        out: &mut Vec<Segment>,
    ) {
        if !self.rack_on() || self.cold().rack.is_none() {
            return;
        }
        let dsack = rack::is_dsack(&seg.sack_ranges, self.snd_una);
        let mut blocks = [(SeqNumber(0), SeqNumber(0)); 4];
        let mut n = 0;
        for (i, (s, e)) in seg.sack_ranges.iter().flatten().enumerate() {
            if !(i == 0 && dsack) {
                blocks[n] = (SeqNumber(*s), SeqNumber(*e));
                n += 1;
            }
        }
        let dupack = payload_len == 0 && n == 0;
        let cx = self.ack_ctx(now, dsack);
        let Some(r) = self.cold.as_deref_mut().and_then(|c| c.rack.as_deref_mut()) else {
            return;
        };
        let found = r.on_ack(&cx, &blocks[..n], dupack);
        if found.tlp_repaired {
            self.tlp_reduce(now);
        }
        self.rack_found(now, found, true, out);
    }

    /// §7.4: "the sender MUST invoke ... congestion control" once for a loss
    /// the probe repaired (Linux: a CWR reduction, ended at once).
    fn tlp_reduce(&mut self, now: Time) {
        self.stats.loss().tlp_recoveries += 1;
        if self.cold().recovery.is_none()
            && self.cold().rto_high.is_none()
            && !self.ecn.take_reduction()
        {
            self.cc.on_congestion(now.as_nanos(), self.flight() as u64);
            self.cc.on_recovery_end(now.as_nanos());
        }
    }

    /// Acts on segments RACK marked lost (on an ACK when `on_ack`, else on
    /// the reordering timer): enters fast recovery (once) and resends
    /// them.
    fn rack_found(&mut self, now: Time, found: AckOutcome, on_ack: bool, out: &mut Vec<Segment>) {
        if found.lost_retransmissions > 0 {
            self.stats.loss().lost_retransmissions += u64::from(found.lost_retransmissions);
        }
        self.rate_on_lost(found.newly_lost_bytes);
        if found.newly_lost == 0 || !self.can_send_data() {
            return;
        }
        self.cold_mut().prr_new_loss = true;
        if self.cold().recovery.is_none() && self.cold().rto_high.is_none() {
            self.enter_recovery(now);
            // The first retransmission goes whatever the pipe (RFC 6675
            // §5 step (4.2), "fast retransmit"); with PRR on an ACK, once
            // the ACK is counted (PRR lets it go then, within the ACK's
            // share, as Linux sends after `tcp_cwnd_reduction`).
            if !(on_ack && self.prr_on()) {
                self.rack_retransmit(now, out, true);
            }
        }
    }

    /// In recovery, resends the segments RACK marked lost while the pipe
    /// allows (the first one regardless when `force`).
    pub fn rack_retransmit(&mut self, now: Time, out: &mut Vec<Segment>, force: bool) {
        let smss = self.smss();
        let mut force = force;
        loop {
            let pipe = self.rack_pipe().unwrap_or(0);
            if !force && pipe + smss > self.send_cwnd() as usize {
                break;
            }
            if self.budget == 0 {
                self.nic_blocked = true;
                break;
            }
            let next = self
                .cold
                .as_deref()
                .and_then(|c| c.rack.as_deref())
                .and_then(|r| r.next_lost(self.snd_una));
            let Some((start, len)) = next else {
                break;
            };
            let offset = (start - self.snd_una).max(0) as usize;
            let payload = self.sndbuf.slice(offset, len.min(smss));
            if payload.is_empty() {
                break;
            }
            let seg = self.segment(Control::None, start, payload, true);
            self.reset_cold(|c| c.timed = None);
            self.push(seg, now, out, true);
            self.arm_rto(now);
            force = false;
        }
    }

    /// Handles the retransmission deadline `fired` if RACK armed it (the
    /// reordering timer or the probe timer); false for a plain RTO.
    pub fn loss_timer(&mut self, now: Time, fired: Time, out: &mut Vec<Segment>) -> bool {
        let Some(r) = self.cold.as_deref_mut().and_then(|c| c.rack.as_deref_mut()) else {
            return false;
        };
        let Some((at, kind)) = r.armed.filter(|&(at, _)| at == fired) else {
            return false;
        };
        debug_assert_eq!(at, fired);
        r.armed = None;
        match kind {
            Timer::Reo => {
                // §6.3: "RACK_detect_loss_and_arm_timer()" when it expires.
                r.reo_fired();
                let cx = self.ack_ctx(now, false);
                let mut found = AckOutcome::default();
                if let Some(r) = self.cold.as_deref_mut().and_then(|c| c.rack.as_deref_mut()) {
                    r.detect_loss(&cx, &mut found);
                }
                self.rack_found(now, found, false, out);
            }
            Timer::Tlp => self.send_tlp(now, out),
        }
        true
    }

    /// Sends the tail loss probe (RFC 8985 §7.3): one new segment if the
    /// peer's window allows (cwnd is not consulted), else the last segment
    /// sent again.
    fn send_tlp(&mut self, now: Time, out: &mut Vec<Segment>) {
        if !self.can_send_data() || self.snd_una == self.snd_max {
            return;
        }
        if self.budget == 0 {
            self.nic_blocked = true;
            if let Some(r) = self.cold.as_deref_mut().and_then(|c| c.rack.as_deref_mut()) {
                r.tlp_anchor = now; // try again a PTO later
            }
            return;
        }
        let Some(is_retrans) = self.tlp_segment(now, out) else {
            return;
        };
        self.stats.loss().tlp_probes += 1;
        let end = self.snd_max;
        if let Some(r) = self.cold.as_deref_mut().and_then(|c| c.rack.as_deref_mut()) {
            r.tlp_end_seq = Some(end);
            r.tlp_is_retrans = is_retrans;
        }
        // "the sender MUST ... arm the RTO timer" after a probe (§7.3).
        self.rto_at = Deadline::at(now + self.rto());
    }

    /// Sends the probe; returns whether it was a retransmission (`None`:
    /// nothing could be sent).
    fn tlp_segment(&mut self, now: Time, out: &mut Vec<Segment>) -> Option<bool> {
        let smss = self.smss();
        let sent_unacked = self.flight();
        let available = self.sndbuf.len().saturating_sub(sent_unacked);
        let len = available.min(smss);
        let peer_room = (self.snd_wnd as usize).saturating_sub(sent_unacked);
        if len > 0 && peer_room >= len && self.snd_nxt == self.snd_max {
            // "If a previously unsent segment exists AND the receive window
            // allows, send that segment and return."
            let payload = self.sndbuf.slice(sent_unacked, len);
            let mut seg = self.segment(Control::None, self.snd_nxt, payload, true);
            if len == available {
                seg.repr.control = Control::Psh;
            }
            seg.ect = self.ecn.ect();
            seg.repr.cwr = self.ecn.take_cwr();
            self.snd_nxt += len;
            self.snd_max = self.snd_nxt;
            self.push(seg, now, out, false);
            return Some(false);
        }
        let fin_last = self.fin_queued && self.snd_max == self.snd_una + self.sndbuf.len() + 1;
        if fin_last {
            // The FIN was the last segment sent: probe with it.
            let seg = self.segment(Control::Fin, self.snd_max - 1, Message::new(), true);
            self.push(seg, now, out, true);
            return Some(true);
        }
        // "Retransmit the highest-sequence segment sent so far."
        let (start, end) = self
            .cold
            .as_deref()
            .and_then(|c| c.rack.as_deref())?
            .last()?;
        let len = ((end - start).max(0) as usize).min(smss);
        let start = end - len;
        let payload = self
            .sndbuf
            .slice((start - self.snd_una).max(0) as usize, len);
        if payload.is_empty() {
            return None;
        }
        let seg = self.segment(Control::None, start, payload, true);
        self.push(seg, now, out, true);
        Some(true)
    }

    /// Returns true while TLP may arm its probe timer (RFC 8985 §7.2: not in
    /// fast or RTO recovery, nothing SACKed, no probe outstanding).
    fn tlp_allowed(&self, r: &Rack) -> bool {
        self.can_send_data()
            && self.cold().recovery.is_none()
            && self.cold().rto_high.is_none()
            && r.tlp_end_seq.is_none()
            && self.cold().scoreboard.highest().is_none()
            && self.snd_wnd > 0
    }

    /// Puts RACK's reordering timer or TLP's probe timer in the
    /// retransmission deadline, or gives it back to the RTO (running from
    /// the oldest segment's transmission, as Linux's `tcp_rearm_rto`);
    /// frees the RACK state when nothing is in flight.
    pub fn loss_rearm(&mut self, now: Time) {
        if !self.rack_on() {
            return;
        }
        let rto = self.rto();
        let srtt = self.srtt().map(|d| d.as_nanos() as u64);
        let one_segment = (self.snd_max - self.snd_una).max(0) as usize <= self.smss();
        let max_ack_delay = self.cfg.delayed_ack.as_nanos() as u64;
        let Some(r) = self.cold.as_deref().and_then(|c| c.rack.as_deref()) else {
            return;
        };
        // Ours: armed by RACK, or not armed at all (a RACK timer just fired,
        // or a probe could not go) while data is outstanding.
        let ours =
            self.rto_at.is_none() || r.armed.is_some_and(|(t, _)| self.rto_at.get() == Some(t));
        if self.snd_una == self.snd_max {
            if ours {
                self.rto_at = Deadline::NONE;
            }
            let idle = r.is_idle();
            if idle {
                self.reset_cold(|c| c.rack = None);
            } else if let Some(r) = self.cold.as_deref_mut().and_then(|c| c.rack.as_deref_mut()) {
                r.armed = None;
            }
            return;
        }
        // When the RTO would fire (§7.2 caps the PTO there): the RTO the
        // TCB armed (restarted by each ACK of new data, RFC 6298 §5.3), or
        // when RACK holds the deadline, the oldest segment's transmission
        // plus RTO (Linux's `tcp_rto_delta_us`).
        let head = r.head_xmit_ts().unwrap_or(now);
        let rto_expire = match (ours, self.rto_at.get()) {
            (false, Some(t)) => t,
            _ => (head + rto).max(now + std::time::Duration::from_nanos(1)),
        };
        let want = if let Some(t) = r.reo_at() {
            Some((t.max(now), Timer::Reo))
        } else if self.tlp_allowed(r) {
            let pto = rack::pto_ns(srtt, one_segment, max_ack_delay);
            let at = Time::from_nanos(r.tlp_anchor.as_nanos().saturating_add(pto));
            Some((at.max(now).min(rto_expire), Timer::Tlp))
        } else {
            None
        };
        let Some(r) = self.cold.as_deref_mut().and_then(|c| c.rack.as_deref_mut()) else {
            return;
        };
        match want {
            Some((at, kind)) => {
                self.rto_at = Deadline::at(at);
                r.armed = Some((at, kind));
            }
            None if ours => {
                self.rto_at = Deadline::at(rto_expire);
                r.armed = None;
            }
            None => r.armed = None,
        }
    }

    /// Forgets RACK's loss marks after an undo (Linux's
    /// `tcp_undo_cwnd_reduction(sk, true)` clears `TCPCB_LOST`).
    pub fn loss_unmark(&mut self) {
        if let Some(r) = self.cold.as_deref_mut().and_then(|c| c.rack.as_deref_mut()) {
            r.unmark_lost();
        }
    }

    /// Forgets RACK's loss marks and TLP episode on an RTO.
    pub fn loss_on_rto(&mut self) {
        if let Some(r) = self.cold.as_deref_mut().and_then(|c| c.rack.as_deref_mut()) {
            r.on_rto();
        }
    }
}
