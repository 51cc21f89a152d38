//! The TCB's hooks into delivery-rate sampling and pacing (`../rate.rs`),
//! used only when the congestion control asks for rate samples (BBR):
//!
//! - [`Tcb::rate_on_send`] stamps each data segment sent and moves the
//!   pacing time;
//! - [`Tcb::pace_blocked`] holds new data until the pacing time (arming
//!   the pacing timer, which `deadline` includes);
//! - [`Tcb::rate_on_ack`], at the end of each ACK's processing, takes the
//!   sample and hands it to the congestion control;
//! - [`Tcb::rate_on_lost`] counts bytes marked lost (RACK, timeouts).
//!
//! For every other algorithm each hook returns at its first test, and
//! nothing is allocated.

use super::super::rate::{AckInfo, RateState};
use super::{PriorAck, Tcb};
use elvis_kernel::Time;
use elvis_tcpcc::CongestionControl;
use elvis_wire::tcp::{Repr, SeqNumber};

impl Tcb {
    /// Returns the rate state, if this connection keeps one.
    fn rate(&self) -> Option<&RateState> {
        self.cold.as_deref().and_then(|c| c.rate.as_deref())
    }

    /// Returns the rate state, mutably, if this connection keeps one.
    fn rate_mut(&mut self) -> Option<&mut RateState> {
        self.cold.as_deref_mut().and_then(|c| c.rate.as_deref_mut())
    }

    /// Returns the bytes the sender counts in the network: the pipe in
    /// recovery, the flight otherwise.
    fn rate_in_flight(&self) -> u64 {
        if self.cold().recovery.is_some() {
            self.pipe() as u64
        } else {
            self.flight() as u64
        }
    }

    /// Stamps a data segment `[seq, seq + len)` sent at `now` in frames of
    /// `frame` bytes, and moves the pacing time by its length.
    pub fn rate_on_send(
        &mut self,
        seq: SeqNumber,
        len: usize,
        frame: usize,
        now: Time,
        rexmit: bool,
    ) {
        let end = seq + len;
        if len == 0 || end > self.snd_max || !self.cc.wants_rate_samples() {
            return;
        }
        let in_flight = self.rate_in_flight();
        let pacing = self.cc.pacing_rate();
        let r = self.cold_mut().rate.get_or_insert_with(Default::default);
        r.on_send(seq, end, frame, now, in_flight, rexmit);
        if let Some(rate) = pacing {
            r.on_paced_send(now, len as u64, rate);
        }
    }

    /// Returns true when new data has to wait for the pacing time.
    pub fn pace_blocked(&mut self, now: Time) -> bool {
        if self.cc.pacing_rate().is_none() {
            return false;
        }
        self.rate_mut().is_some_and(|r| r.pace_blocked(now))
    }

    /// Clears the pacing timer once it is due (`on_timer`; the output that
    /// follows sends what it held).
    pub fn pace_timer(&mut self, now: Time) {
        if let Some(r) = self.rate_mut() {
            if r.pace_at.is_some_and(|t| t <= now) {
                r.pace_at = super::Deadline::NONE;
            }
        }
    }

    /// Marks the sender application-limited when the send buffer ran dry
    /// with room left in the window (draft §3.4).
    pub fn rate_app_limited(&mut self) {
        if self.rate().is_none() {
            return;
        }
        let in_flight = self.rate_in_flight();
        if in_flight < self.cc.window() {
            if let Some(r) = self.rate_mut() {
                r.mark_app_limited(in_flight);
            }
        }
    }

    /// Counts `bytes` newly marked lost.
    pub fn rate_on_lost(&mut self, bytes: u64) {
        if let Some(r) = self.rate_mut() {
            r.on_lost(bytes);
        }
    }

    /// Takes the rate sample of the ACK `seg` (after its cumulative and
    /// selective acknowledgements and loss marks are applied) and hands it
    /// to the congestion control, when it delivered or found lost data.
    pub fn rate_on_ack(&mut self, now: Time, seg: &Repr, prior: PriorAck) {
        if self.rate().is_none() {
            return;
        }
        let acked = (self.snd_una - prior.una).max(0) as u64;
        let sacked = self.cold().scoreboard.sacked_bytes() as u64;
        let newly_acked = (acked + sacked).saturating_sub(prior.sacked as u64);
        let dsack = super::super::rack::is_dsack(&seg.sack_ranges, self.snd_una);
        let mut blocks = [(SeqNumber(0), SeqNumber(0)); 4];
        let mut n = 0;
        for (i, (s, e)) in seg.sack_ranges.iter().flatten().enumerate() {
            if !(i == 0 && dsack) {
                blocks[n] = (SeqNumber(*s), SeqNumber(*e));
                n += 1;
            }
        }
        let in_flight = self.rate_in_flight();
        let info = AckInfo {
            now,
            una: self.snd_una,
            sacks: &blocks[..n],
            newly_acked,
            min_rtt_ns: self.min_rtt().map_or(0, |d| d.as_nanos() as u64),
            in_flight,
            is_cwnd_limited: self.cwnd_limited(in_flight + newly_acked),
        };
        let Some(r) = self.rate_mut() else { return };
        let rs = r.on_ack(&info);
        if rs.newly_acked > 0 || rs.newly_lost > 0 {
            self.cc.on_rate_sample(&rs);
        }
    }

    /// Returns the bytes of one TSO segment at the pacing rate (Linux's
    /// `tcp_tso_autosize` with BBR's `bbr_tso_segs_goal`: about 1 ms of
    /// data, `rate >> 10`, at most 64 KiB), if the connection is paced.
    pub fn paced_tso_bytes(&self) -> Option<u64> {
        let rate = self.cc.pacing_rate()?;
        Some((rate >> 10).min(65_536))
    }
}
