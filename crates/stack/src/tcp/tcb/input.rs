//! The TCB's input (RFC 9293 §3.10.7): demux-level entry points, header
//! prediction, SYN-SENT, and the synchronized states' walk (sequence
//! check, RST, SYN, ACK via `ack.rs`, segment text, FIN), with the
//! timestamp (RFC 7323) and DSACK (RFC 2883) bookkeeping of arriving data.

use super::*;

impl Tcb {
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
        self.input_ecn(now, seg, super::super::ecn::NOT_ECT, payload, out)
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
    pub fn predicted(&self, seg: &Repr, len: usize) -> bool {
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
    pub fn input_predicted(
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
    pub fn input_syn_sent(
        &mut self,
        now: Time,
        seg: &Repr,
        out: &mut Vec<Segment>,
        fx: &mut Effects,
    ) {
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
            self.ecn.on_syn_ack(seg, self.ecn_mode());
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

    pub fn syn_time(&self, now: Time) -> Time {
        // Without timestamps the SYN's send time is now − elapsed RTO window;
        // use the RTO deadline: sent at rto_at − rto.
        self.rto_at.get().map_or(now, |t| {
            Time::from_nanos(t.as_nanos().saturating_sub(self.rto().as_nanos() as u64))
        })
    }

    /// Returns the RTT measured from a timestamp echo, if any.
    pub fn ts_rtt(&self, seg: &Repr, now: Time) -> Option<Duration> {
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
    pub fn remember_timestamp(&mut self, seg: &Repr, now: Time) {
        let Some((tsval, _)) = seg.timestamp else {
            return;
        };
        // An invalid (idle-expired, RFC 7323 §5.5) TS.Recent is replaced
        // whatever its value, as Linux does (`tcp_paws_check`).
        let newer = tsval.wrapping_sub(self.ts_recent) as i32 >= 0
            || now - self.ts_recent_at >= super::super::paws::IDLE_LIMIT;
        if self.ts_enabled && seg.control != Control::Rst && newer && seg.seq_number <= self.rcv_nxt
        {
            self.ts_recent = tsval;
            self.ts_recent_at = now;
        }
    }

    /// Returns true if the segment is acceptable (RFC 9293 §3.10.7.4 "first,
    /// check sequence number", the four cases).
    pub fn acceptable(&self, seg: &Repr, len: usize) -> bool {
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

    /// Processes a segment in SYN-RECEIVED and the synchronized states
    /// (RFC 9293 §3.10.7.4), in the RFC's order: a simultaneous open's
    /// SYN,ACK, PAWS, the sequence number check, RST, SYN, the ACK field
    /// ([`Tcb::process_ack`]), ECN, the segment text, FIN.
    ///
    /// Long because it is the RFC's walk of §3.10.7.4 step by step, each
    /// step a block that may end the segment's processing with a `return`,
    /// so split the early returns would become results to check at every
    /// call.
    pub fn input_synchronized(
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
        let recent = super::super::paws::TsRecent {
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
        self.ecn_receive(now, seg, !payload.is_empty(), ip_ecn, out);
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
    pub fn dsack_old(&mut self, seg: &Repr, seg_len: usize) {
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
    pub fn dsack_set(&mut self, s: SeqNumber, e: SeqNumber) {
        if self.sack_enabled && self.cfg.dsack {
            self.cold_mut().dsack = Some((s, e));
            self.ack_now = true;
        }
    }

    /// SYN-RECEIVED to ESTABLISHED on an acceptable ACK of our SYN
    /// (RFC 9293 §3.10.7.4 "fifth, check the ACK field").
    pub fn establish(&mut self, now: Time, seg: &Repr, ack: SeqNumber, fx: &mut Effects) {
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

    pub fn challenge_ack(&mut self, now: Time, out: &mut Vec<Segment>) {
        let seg = self.segment(Control::None, self.snd_nxt, Message::new(), false);
        self.push(seg, now, out, false);
    }

    pub fn enter_time_wait(&mut self, now: Time) {
        self.state = State::TimeWait;
        self.rto_at = Deadline::NONE;
        self.reset_cold(|c| c.persist_at = Deadline::NONE);
        self.cold_mut().timewait_at = Deadline::at(now + self.cfg.msl * 2);
    }
}
