//! The TCB's ACK processing (RFC 9293 §3.10.7.4 "fifth, check the ACK
//! field"): the cumulative ACK and SACK scoreboard, entering and leaving
//! fast recovery, PRR's per-ACK count (`../prr.rs`), ECN's reaction, and
//! the RTT estimator (RFC 6298).

use super::*;

impl Tcb {
    /// RFC 9293 §3.10.7.4 "fifth, check the ACK field" in ESTABLISHED and
    /// later states, with RFC 5681/6675 congestion control.
    ///
    /// Long because it is one ordered pass over an arriving ACK (DSACK and
    /// ECE, the SACK scoreboard, a cumulative or a duplicate ACK, RACK,
    /// PRR, the undo checks, ECN, a lost retransmission, the window
    /// update) whose later steps read what the earlier ones found
    /// (`dsack`, `ece`, `prior`, `window`), so split it would pass them
    /// along and hide the order the RFCs and Linux require.
    pub fn process_ack(
        &mut self,
        now: Time,
        seg: &Repr,
        ack: SeqNumber,
        payload_len: usize,
        out: &mut Vec<Segment>,
        fx: &mut Effects,
    ) {
        let dsack = self.sack_enabled && super::super::rack::is_dsack(&seg.sack_ranges, ack);
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
            let fin_acked = self.fin_queued && self.sndbuf.is_empty() && ack == self.snd_max;
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
        self.rate_on_ack(now, seg, prior);
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
        self.ecn_on_ack(now, seg, ack, prior.una);
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
    pub fn enter_recovery(&mut self, now: Time) {
        self.stats.loss().fast_recoveries += 1;
        if !self.rack_on() {
            // (RACK counts its own marks, `rack_found`.)
            self.rate_on_lost(self.smss() as u64);
        }
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
    pub fn prr_on(&self) -> bool {
        self.sack_enabled && self.cfg.prr
    }

    /// Returns the window the sender sends against: PRR's in fast
    /// recovery, the congestion control's otherwise (Linux's `snd_cwnd`,
    /// which `tcp_cwnd_reduction` sets in recovery).
    pub fn send_cwnd(&self) -> u64 {
        match self.cold().recovery {
            // (A model-based control, BBR, sets its own window in
            // recovery, as Linux's `cong_control` bypasses PRR.)
            Some(_) if self.prr_on() && !self.cc.wants_rate_samples() => self.cold().prr.cwnd(),
            _ => self.cc.window(),
        }
    }

    /// PRR's per-ACK step (RFC 9937 §6.2), after the ACK's cumulative
    /// and selective acknowledgements and loss marks are applied: counts
    /// what it delivered (bytes newly acknowledged plus bytes newly
    /// SACKed, Linux's `newly_acked_sacked`) and sets the window.
    pub fn prr_on_ack(&mut self, prior: PriorAck) {
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
    /// a CE-marked data segment starts the ECE echo, a CWR ends it. With
    /// DCTCP, RFC 8257 §3.2's state machine instead.
    pub fn ecn_receive(
        &mut self,
        now: Time,
        seg: &Repr,
        data: bool,
        ip_ecn: u8,
        out: &mut Vec<Segment>,
    ) {
        if self.cc.ecn_feedback() == EcnFeedback::Dctcp {
            self.dctcp_receive(now, data, ip_ecn, out);
            return;
        }
        let (ce, ack_now) = self.ecn.on_segment(seg.cwr, data, ip_ecn);
        if ce {
            self.stats.loss().ce_received += 1;
        }
        if ack_now {
            self.ack_now = true;
        }
    }

    /// RFC 8257 §3.2 for a data segment: "If the CE codepoint is set and
    /// DCTCP.CE is false, set DCTCP.CE to true and send an immediate ACK"
    /// (and the converse). Data already received whose ACK was being
    /// delayed is ACKed first with the old state, so that each ECE covers
    /// exactly the bytes that arrived in that state (Linux's
    /// `dctcp_ece_ack_update`).
    fn dctcp_receive(&mut self, now: Time, data: bool, ip_ecn: u8, out: &mut Vec<Segment>) {
        if !data || !self.ecn.is_on() {
            return;
        }
        let ce = ip_ecn == super::super::ecn::CE;
        if ce {
            self.stats.loss().ce_received += 1;
        }
        if ce == self.ecn.ce_state() {
            return;
        }
        if self.ack_pending > 0 {
            let ack = self.segment(Control::None, self.snd_nxt, Message::new(), false);
            self.push(ack, now, out, false);
        }
        self.ecn.set_ce(ce);
        self.ack_now = true;
    }

    /// The sender's half of RFC 3168 §6.1.2 for an ACK: "If the sender
    /// receives an ECN-Echo (ECE) ACK packet ... the sender knows that
    /// congestion was encountered in the network ... and MUST reduce the
    /// congestion window" — once per window of data, never during loss
    /// recovery (already reduced), without retransmitting.
    pub fn ecn_on_ack(&mut self, now: Time, seg: &Repr, ack: SeqNumber, prior_una: SeqNumber) {
        if seg.ece && self.ecn.is_on() {
            self.stats.loss().ece_received += 1;
        }
        if self.ecn.is_on() && self.cc.ecn_feedback() == EcnFeedback::Dctcp {
            self.cc.on_ecn_ack(&EcnAck {
                now_ns: now.as_nanos(),
                acked_bytes: (ack - prior_una).max(0) as u64,
                ece: seg.ece,
                ack: ack.0,
                snd_nxt: self.snd_max.0,
            });
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
    pub fn rtt_sample(&mut self, _now: Time, r: Duration) {
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
    pub fn srtt(&self) -> Option<Duration> {
        (self.srtt_ns != NO_RTT).then(|| Duration::from_nanos(self.srtt_ns))
    }

    /// Returns the lowest RTT sampled, if any.
    pub fn min_rtt(&self) -> Option<Duration> {
        (self.min_rtt_ns != NO_RTT).then(|| Duration::from_nanos(self.min_rtt_ns))
    }

    /// Returns RFC 6298's RTTVAR.
    #[cfg(test)]
    pub fn rttvar(&self) -> Duration {
        Duration::from_nanos(self.rttvar_ns)
    }

    /// Returns the retransmission timeout.
    pub fn rto(&self) -> Duration {
        Duration::from_nanos(self.rto_ns)
    }
}
