//! Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation-02,
//! Linux's `tcp_rate.c`) and pacing, for congestion controls that ask for
//! them (`CongestionControl::wants_rate_samples`, BBR).
//!
//! **Rate samples.** Every data segment sent is stamped with the
//! connection's delivered count `C.delivered`, the time of the last
//! delivery `C.delivered_time`, the send time of the first segment of the
//! current flight `C.first_send_time`, the lost count `C.lost`, the bytes
//! in flight and whether the sender was application-limited (§3.2). An
//! ACK that delivers segments (cumulatively or by SACK) takes the most
//! recently sent of them, P, and gives (§3.3):
//!
//! ```text
//! delivered = C.delivered − P.delivered
//! interval  = max(P.sent − P.first_send_time, now − P.delivered_time)
//! rate      = delivered / interval        (no sample if interval < min_rtt)
//! ```
//!
//! Segments are kept one record per frame (a TSO segment is split into
//! its `gso_size` pieces), so a receiver that ACKs every second frame
//! gives a sample per ACK, as Linux's per-skb stamps do for unsegmented
//! sends. A retransmission re-stamps the records it covers.
//!
//! **Application-limited.** When the sender runs out of data with room
//! left in the window, `C.app_limited = C.delivered + in_flight` marks the
//! bubble; segments sent until that much is delivered carry the mark
//! (§3.4).
//!
//! **Pacing.** With a pacing rate, each data segment (a TSO segment as a
//! whole) moves the earliest time of the next one by `len / rate`, from
//! `max(now, previous)` (Linux's `tcp_wstamp_ns` with `fq`-style
//! departure times). New data waits for that time behind a timer
//! ([`RateState::pace_at`]); retransmissions go at once but count against
//! the rate.
//!
//! The state lives in the TCB's cold box and only for connections whose
//! congestion control asks for it; the others never allocate it, and
//! their segments go out exactly as before.
//!
//! # Gaps
//! - Only payload bytes are paced (headers are not counted), the unit the
//!   model's bandwidth is measured in.
//! - `C.app_limited` is set only when the send buffer runs dry, not when
//!   Nagle holds a small segment.

use super::deadline::Deadline;
use elvis_kernel::Time;
use elvis_tcpcc::RateSample;
use elvis_wire::tcp::SeqNumber;
use std::collections::VecDeque;

/// One frame sent and not yet delivered.
#[derive(Clone, Copy, Debug)]
struct TxRec {
    start: SeqNumber,
    end: SeqNumber,
    sent: Time,
    delivered: u64,
    delivered_time: Time,
    first_send_time: Time,
    lost: u64,
    tx_in_flight: u64,
    app_limited: bool,
    retrans: bool,
    /// Delivered by SACK already (not sampled again).
    done: bool,
}

/// A connection's delivery-rate and pacing state.
#[derive(Debug, Default)]
pub struct RateState {
    delivered: u64,
    delivered_time: Time,
    first_send_time: Time,
    app_limited: u64,
    lost: u64,
    lost_reported: u64,
    recs: VecDeque<TxRec>,
    pace_next: Time,
    /// The pacing timer: when new data may go again (none when not held).
    pub pace_at: Deadline,
}

/// What the TCB knows of an ACK for [`RateState::on_ack`].
pub struct AckInfo<'a> {
    pub now: Time,
    /// `SND.UNA` after the ACK.
    pub una: SeqNumber,
    /// The ACK's SACK blocks (DSACK left out).
    pub sacks: &'a [(SeqNumber, SeqNumber)],
    /// Bytes newly delivered (cumulative advance plus newly SACKed).
    pub newly_acked: u64,
    /// The connection's minimum RTT, ns (0: none yet).
    pub min_rtt_ns: u64,
    /// Bytes in flight after the ACK.
    pub in_flight: u64,
    pub is_cwnd_limited: bool,
}

impl RateState {
    /// Stamps the frames of `[start, end)` (pieces of `frame` bytes) sent
    /// at `now` with `in_flight` bytes in flight after it (§3.2
    /// `SendPacket`); a retransmission re-stamps the records it covers.
    pub fn on_send(
        &mut self,
        start: SeqNumber,
        end: SeqNumber,
        frame: usize,
        now: Time,
        in_flight: u64,
        retrans: bool,
    ) {
        let len = (end - start).max(0) as u64;
        if in_flight <= len {
            // "If there are no packets in flight yet, then ...".
            self.first_send_time = now;
            self.delivered_time = now;
        }
        let mut rec = TxRec {
            start,
            end,
            sent: now,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_send_time: self.first_send_time,
            lost: self.lost,
            tx_in_flight: in_flight,
            app_limited: self.app_limited != 0,
            retrans,
            done: false,
        };
        let appended = self.recs.back().is_none_or(|b| b.end <= start);
        if !appended {
            let from = self.recs.partition_point(|r| r.end <= start);
            for r in self.recs.range_mut(from..) {
                if r.start >= end {
                    break;
                }
                rec.start = r.start;
                rec.end = r.end;
                *r = rec;
                r.retrans = true;
            }
            return;
        }
        let frame = frame.max(1);
        let mut s = start;
        while s < end {
            let e = (s + frame).min(end);
            rec.start = s;
            rec.end = e;
            self.recs.push_back(rec);
            s = e;
        }
    }

    /// Marks the sender application-limited (§3.4 `CheckIfApplicationLimited`).
    pub fn mark_app_limited(&mut self, in_flight: u64) {
        self.app_limited = (self.delivered + in_flight).max(1);
    }

    /// Counts `bytes` newly marked lost.
    pub fn on_lost(&mut self, bytes: u64) {
        self.lost += bytes;
    }

    /// Returns true when new data must wait for the pacing time, arming
    /// the pacing timer.
    pub fn pace_blocked(&mut self, now: Time) -> bool {
        if self.pace_next > now {
            self.pace_at = Deadline::at(self.pace_next);
            true
        } else {
            false
        }
    }

    /// Moves the next pacing time for `bytes` sent at `now` at `rate`
    /// bytes per second.
    pub fn on_paced_send(&mut self, now: Time, bytes: u64, rate: u64) {
        let gap = (u128::from(bytes) * 1_000_000_000 / u128::from(rate.max(1))) as u64;
        self.pace_next = self.pace_next.max(now) + std::time::Duration::from_nanos(gap);
    }

    /// Returns true when the record `a` was sent after `b` (§3.3
    /// `IsNewestPacket`).
    fn newer(a: &TxRec, b: &TxRec) -> bool {
        a.sent > b.sent || (a.sent == b.sent && a.end > b.end)
    }

    /// Takes an ACK: the records it delivers, and the sample (§3.3
    /// `UpdateRateSample` and `GenerateRateSample`).
    pub fn on_ack(&mut self, a: &AckInfo) -> RateSample {
        self.delivered += a.newly_acked;
        if a.newly_acked > 0 {
            self.delivered_time = a.now;
        }
        let mut newest: Option<TxRec> = None;
        let mut take = |r: &TxRec| {
            if newest.as_ref().is_none_or(|n| Self::newer(r, n)) {
                newest = Some(*r);
            }
        };
        while let Some(f) = self.recs.front() {
            if f.end > a.una {
                break;
            }
            if !f.done {
                take(f);
            }
            self.recs.pop_front();
        }
        for &(bs, be) in a.sacks {
            let from = self.recs.partition_point(|r| r.start < bs);
            for r in self.recs.range_mut(from..) {
                if r.end > be {
                    break;
                }
                if !r.done {
                    take(r);
                    r.done = true;
                }
            }
        }
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        let newly_lost = self.lost - self.lost_reported;
        self.lost_reported = self.lost;
        let mut rs = RateSample {
            now_ns: a.now.as_nanos(),
            total_delivered: self.delivered,
            newly_acked: a.newly_acked,
            newly_lost,
            in_flight: a.in_flight,
            is_cwnd_limited: a.is_cwnd_limited,
            ..RateSample::default()
        };
        let Some(p) = newest else {
            return rs;
        };
        rs.prior_delivered = p.delivered;
        rs.is_app_limited = p.app_limited;
        rs.tx_in_flight = p.tx_in_flight;
        rs.lost = self.lost - p.lost;
        rs.rtt_ns = (!p.retrans).then(|| (a.now - p.sent).as_nanos() as u64);
        self.first_send_time = p.sent;
        let send_elapsed = (p.sent - p.first_send_time).as_nanos() as u64;
        let ack_elapsed = (self.delivered_time - p.delivered_time).as_nanos() as u64;
        let interval = send_elapsed.max(ack_elapsed);
        if interval > 0 && interval >= a.min_rtt_ns {
            rs.interval_ns = interval;
            rs.delivered = self.delivered - p.delivered;
        }
        rs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(us: u64) -> Time {
        Time::from_nanos(us * 1_000)
    }

    fn ack(r: &mut RateState, now: Time, una: usize, acked: u64) -> RateSample {
        r.on_ack(&AckInfo {
            now,
            una: SeqNumber(una as u32),
            sacks: &[],
            newly_acked: acked,
            min_rtt_ns: 0,
            in_flight: 0,
            is_cwnd_limited: true,
        })
    }

    /// A sender whose segments leave a 1 Mbyte/s bottleneck every 1 ms
    /// (1,000 bytes each) and come back acknowledged one RTT (10 ms) later:
    /// every sample after the first flight is exactly the bottleneck rate
    /// (draft §2: "delivery rate = data delivered / time elapsed").
    #[test]
    fn samples_of_a_steady_ack_clock_are_the_bottleneck_rate() {
        let mut r = RateState::default();
        let mut una = 0usize;
        let mut next = 0usize;
        let mut samples = Vec::new();
        // 10 segments in flight, one ACK per ms after the first RTT.
        for ms in 0..100u64 {
            let now = t(ms * 1_000);
            if ms >= 10 {
                una += 1_000;
                samples.push(ack(&mut r, now, una, 1_000));
            }
            let s = SeqNumber(next as u32);
            next += 1_000;
            r.on_send(
                s,
                SeqNumber(next as u32),
                1_000,
                now,
                (next - una) as u64,
                false,
            );
        }
        let steady: Vec<u64> = samples[20..].iter().map(|s| s.rate().unwrap()).collect();
        assert!(steady.iter().all(|&x| x == 1_000_000), "{steady:?}");
        let s = samples.last().unwrap();
        assert_eq!(s.rtt_ns, Some(10_000_000));
        assert_eq!(s.tx_in_flight, 10_000);
    }

    /// §3.3: "the sample's interval is the maximum of the send and ACK
    /// intervals": a burst sent at once and ACKed over 4 ms measures the
    /// ACK rate; ACKs compressed into one instant measure the send rate.
    #[test]
    fn the_interval_is_the_larger_of_the_send_and_ack_phases() {
        let mut r = RateState::default();
        for i in 0..4usize {
            let (s, e) = (
                SeqNumber((i * 1_000) as u32),
                SeqNumber(((i + 1) * 1_000) as u32),
            );
            r.on_send(s, e, 1_000, t(0), ((i + 1) * 1_000) as u64, false);
        }
        // First ACK at 10 ms starts the ACK phase; the rest each 1 ms.
        ack(&mut r, t(10_000), 1_000, 1_000);
        let s = ack(&mut r, t(13_000), 4_000, 3_000);
        assert_eq!((s.delivered, s.interval_ns), (4_000, 13_000_000));
        // Sent 1 ms apart, all ACKed at once: the send phase (3 ms) rules.
        let mut r = RateState::default();
        for i in 0..4usize {
            let (s, e) = (
                SeqNumber((i * 1_000) as u32),
                SeqNumber(((i + 1) * 1_000) as u32),
            );
            r.on_send(s, e, 1_000, t(i as u64 * 1_000), 1_000, false);
        }
        let s = ack(&mut r, t(20_000), 4_000, 4_000);
        assert_eq!(s.delivered, 4_000);
        assert!(s.interval_ns >= 3_000_000);
    }

    /// §3.3: a sample over an interval shorter than min_rtt is discarded;
    /// retransmitted data gives no RTT (Karn).
    #[test]
    fn short_intervals_and_retransmissions_give_no_rate_or_rtt() {
        let mut r = RateState::default();
        r.on_send(SeqNumber(0), SeqNumber(1_000), 1_000, t(0), 1_000, false);
        r.on_send(SeqNumber(0), SeqNumber(1_000), 1_000, t(5_000), 1_000, true);
        let s = r.on_ack(&AckInfo {
            now: t(6_000),
            una: SeqNumber(1_000),
            sacks: &[],
            newly_acked: 1_000,
            min_rtt_ns: 10_000_000,
            in_flight: 0,
            is_cwnd_limited: false,
        });
        assert_eq!(s.rate(), None);
        assert_eq!(s.rtt_ns, None);
    }

    /// SACKed frames are sampled once: the later cumulative ACK that
    /// covers them takes only the frames not SACKed before.
    #[test]
    fn sacked_frames_are_sampled_once() {
        let mut r = RateState::default();
        r.on_send(SeqNumber(0), SeqNumber(3_000), 1_000, t(0), 3_000, false);
        let s = r.on_ack(&AckInfo {
            now: t(10_000),
            una: SeqNumber(0),
            sacks: &[(SeqNumber(1_000), SeqNumber(3_000))],
            newly_acked: 2_000,
            min_rtt_ns: 0,
            in_flight: 1_000,
            is_cwnd_limited: true,
        });
        assert_eq!(s.delivered, 2_000);
        assert_eq!(r.recs.iter().filter(|x| x.done).count(), 2);
        let s = ack(&mut r, t(11_000), 3_000, 1_000);
        assert_eq!(s.delivered, 3_000);
    }

    /// §3.4: data sent while application-limited is marked until the
    /// bubble is delivered.
    #[test]
    fn app_limited_marks_last_until_the_bubble_is_delivered() {
        let mut r = RateState::default();
        r.on_send(SeqNumber(0), SeqNumber(1_000), 1_000, t(0), 1_000, false);
        r.mark_app_limited(1_000);
        r.on_send(
            SeqNumber(1_000),
            SeqNumber(2_000),
            1_000,
            t(1),
            2_000,
            false,
        );
        let s = ack(&mut r, t(10_000), 1_000, 1_000);
        assert!(!s.is_app_limited);
        let s = ack(&mut r, t(10_001), 2_000, 1_000);
        assert!(s.is_app_limited);
        r.on_send(
            SeqNumber(2_000),
            SeqNumber(3_000),
            1_000,
            t(10_002),
            1_000,
            false,
        );
        let s = ack(&mut r, t(20_000), 3_000, 1_000);
        assert!(!s.is_app_limited, "the bubble (1,000 bytes) was delivered");
    }

    #[test]
    fn pacing_spaces_sends_by_length_over_rate() {
        let mut r = RateState::default();
        r.on_paced_send(t(0), 1_250, 1_250_000); // 1 ms at 10 Mbit/s
        assert!(r.pace_blocked(t(500)));
        assert_eq!(r.pace_at.get(), Some(t(1_000)));
        assert!(!r.pace_blocked(t(1_000)));
        // After idle the schedule starts from now, not from the past.
        r.on_paced_send(t(50_000), 1_250, 1_250_000);
        assert!(r.pace_blocked(t(50_999)));
        assert!(!r.pace_blocked(t(51_000)));
    }
}
