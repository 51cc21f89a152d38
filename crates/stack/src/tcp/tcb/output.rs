//! The TCB's output: what [`Tcb::output`] sends now (new data within the
//! windows, SACK-recovery retransmissions, the FIN, a pending ACK), with
//! TSO sizing, and the bookkeeping of every segment sent ([`Tcb::push`]).

use super::*;

impl Tcb {
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

    pub fn push(&mut self, seg: Segment, now: Time, out: &mut Vec<Segment>, is_retransmit: bool) {
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
        self.rate_on_send(seg.repr.seq_number, len, frame, now, is_retransmit);
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

    pub fn arm_rto(&mut self, now: Time) {
        if self.rto_at.is_none() {
            self.rto_at = Deadline::at(now + self.rto());
        }
    }

    /// Sends new data allowed by the windows, Nagle and the receiver.
    ///
    /// Long because it is one loop, a segment a pass, that first decides
    /// how much may go (data, peer and congestion windows, NIC budget,
    /// Nagle, TSO) and then builds and sends it, the limits found at the
    /// top of the pass (`available`, `hole`, `room`, `sent_unacked`) being
    /// used again at its bottom.
    pub fn send_new_data(&mut self, now: Time, out: &mut Vec<Segment>) {
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
                self.rate_app_limited();
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
            // Pacing (a congestion control that sets a rate, `tcb/pacing.rs`).
            if self.pace_blocked(now) {
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
    pub fn tso_extend(&self, len: usize, smss: usize, limit: usize) -> usize {
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
    pub fn tso_autosize(&self, smss: usize) -> usize {
        const GSO_MAX: u64 = 65_536;
        if let Some(bytes) = self.paced_tso_bytes() {
            // A paced sender (BBR, `bbr_tso_segs_goal`): 1 ms at the
            // pacing rate, at least 2 segments above 1.2 Mbit/s, else 1.
            let floor = if bytes < 150 { 1 } else { 2 };
            return (bytes as usize / smss.max(1)).max(floor);
        }
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
    pub fn skip_sacked_resend(&mut self) -> usize {
        if self.snd_nxt >= self.snd_max {
            return usize::MAX;
        }
        let (at, next) = self.cold().scoreboard.skip_sacked(self.snd_nxt);
        self.snd_nxt = at;
        next.map_or(usize::MAX, |n| (n - at).max(0) as usize)
    }

    /// Returns the un-SACKed bytes from `snd_una` up to the first SACKed
    /// range (`usize::MAX`: nothing SACKed above).
    pub fn hole_at_una(&self) -> usize {
        match self.cold().scoreboard.skip_sacked(self.snd_una) {
            (at, Some(next)) if at == self.snd_una => (next - at).max(0) as usize,
            _ => usize::MAX,
        }
    }

    /// In SACK recovery, retransmits holes while the pipe allows
    /// (RFC 6675 §5 step (C)).
    pub fn retransmit_holes(&mut self, now: Time, out: &mut Vec<Segment>) {
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
    pub fn retransmit_first(&mut self, now: Time, out: &mut Vec<Segment>) {
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
    pub fn send_fin(&mut self, now: Time, out: &mut Vec<Segment>) {
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
    pub fn flush_ack(&mut self, now: Time, out: &mut Vec<Segment>) {
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
}
