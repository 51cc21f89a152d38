//! HyStart (Ha and Rhee, "Taming the Elephants: New TCP Slow Start",
//! 2008) as Linux's CUBIC runs it (`net/ipv4/tcp_cubic.c`,
//! `hystart_update`): leaving slow start once the window fills the path,
//! before the bottleneck queue overflows.
//!
//! Two tests run on every ACK of a slow-start round (Linux's
//! `hystart_detect` = ACK train | delay) once the window is at least
//! [`LOW_WINDOW_SEGMENTS`]:
//!
//! ```text
//! ACK train: if now − last_ack ≤ ACK_DELTA:
//!                last_ack = now
//!                if now − round_start > (delay_min + cushion) / 2: exit
//! delay:     curr_rtt = min(curr_rtt, rtt)
//!            after MIN_SAMPLES samples of the round:
//!                if curr_rtt > delay_min + clamp(delay_min / 8, DELAY_MIN, DELAY_MAX): exit
//! ```
//!
//! The ACK train is the stretch of closely spaced ACKs that starts a
//! round; when it lasts longer than half the minimum RTT, the window's
//! data takes longer than that to cross the bottleneck, so the window is
//! about the path's bandwidth-delay product. The delay test is the same
//! test as HyStart++'s (RFC 9406), against the connection's minimum RTT
//! rather than the previous round's. On exit the controller sets
//! `ssthresh = cwnd` and congestion avoidance begins at once.
//!
//! `cushion` is Linux's `hystart_ack_delay`: room for a TSO burst and its
//! GRO aggregation, `min(1 ms, 4 · GSO_MAX_SIZE / pacing_rate)`, with
//! Linux's `sk_pacing_rate` (twice `cwnd/SRTT` while the window is below
//! half of `ssthresh`, 1.2 times after) and its default GSO size of 64 KB.
//! Under a few Gbit/s it is the 1 ms cap. Linux halves the threshold only
//! for a sender that is not paced (`SK_PACING_NONE`); CUBIC here is never
//! paced, so it is always halved.
//!
//! Rounds: Linux starts a round on the ACK that acknowledges past
//! `end_seq`, the `SND.NXT` at the previous round's start, and sets
//! `end_seq` again. The controller sees no sequence numbers, so a round
//! here is counted in bytes: at its start, `end_seq − SND.UNA` is the
//! bytes in flight before the ACK less the bytes it acknowledges, and an
//! ACK acknowledging more than what is left starts the next round.
//!
//! `delay_min` is the minimum of the RTT samples of data ACKs since the
//! detector began (Linux's is reset when CUBIC initialises, after the
//! handshake, and on a timeout, so neither counts the SYN's RTT). Linux
//! runs the tests only on ACKs with an RTT sample, which it has for every
//! ACK of new data; here the round and the ACK train run on every ACK
//! (without timestamps the engine samples one segment per round trip) and
//! the delay test on those with a sample.

use crate::AckEvent;

/// Linux's `hystart_low_window`: no test below 16 segments.
pub const LOW_WINDOW_SEGMENTS: u64 = 16;
/// Linux's `hystart_ack_delta_us`: ACKs at most 2 ms apart make a train.
pub const ACK_DELTA_NS: u64 = 2_000_000;
/// Linux's `HYSTART_MIN_SAMPLES`: RTT samples of a round before the delay
/// test decides.
pub const MIN_SAMPLES: u8 = 8;
/// Linux's `HYSTART_DELAY_MIN`: lower bound of the delay threshold, 4 ms.
pub const DELAY_MIN_NS: u64 = 4_000_000;
/// Linux's `HYSTART_DELAY_MAX`: upper bound of the delay threshold, 16 ms.
pub const DELAY_MAX_NS: u64 = 16_000_000;
/// The upper bound of the train threshold's cushion (Linux's
/// `USEC_PER_MSEC` in `hystart_ack_delay`).
pub const CUSHION_MAX_NS: u64 = 1_000_000;
/// The GSO size Linux's cushion assumes (`GSO_LEGACY_MAX_SIZE`).
pub const GSO_MAX_SIZE: u64 = 65_536;

/// Which test ended slow start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The round's ACK train outlasted half the minimum RTT.
    AckTrain,
    /// The round's minimum RTT rose above the threshold.
    Delay,
}

/// What the detector needs to know about the sender besides the ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sender {
    /// The congestion window, bytes.
    pub cwnd: u64,
    /// The slow start threshold, bytes.
    pub ssthresh: u64,
    /// The segment size, bytes.
    pub mss: u64,
    /// The smoothed RTT, ns (0: none yet).
    pub srtt_ns: u64,
}

/// HyStart's state (Linux's `delay_min`, `round_start`, `end_seq`,
/// `last_ack`, `curr_rtt`, `sample_cnt`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detector {
    /// The minimum RTT sampled, ns (`u64::MAX`: none yet).
    delay_min_ns: u64,
    /// Bytes between `SND.UNA` and the round's end; an ACK of more starts
    /// the next round (0 before the first).
    round_left: u64,
    round_start_ns: u64,
    last_ack_ns: u64,
    curr_rtt_ns: u64,
    samples: u8,
}

impl Default for Detector {
    fn default() -> Self {
        Detector {
            delay_min_ns: u64::MAX,
            round_left: 0,
            round_start_ns: 0,
            last_ack_ns: 0,
            curr_rtt_ns: u64::MAX,
            samples: 0,
        }
    }
}

/// Returns the delay test's threshold above `delay_min`:
/// `clamp(delay_min / 8, 4 ms, 16 ms)`.
pub fn delay_threshold(delay_min_ns: u64) -> u64 {
    (delay_min_ns / 8).clamp(DELAY_MIN_NS, DELAY_MAX_NS)
}

/// Returns Linux's `hystart_ack_delay` for a sender, ns.
pub fn cushion(s: &Sender, in_flight: u64) -> u64 {
    if s.srtt_ns == 0 {
        return 0;
    }
    // sk_pacing_rate = ratio · max(cwnd, packets_out) / srtt, bytes/s,
    // with tcp_pacing_ss_ratio = 200 % and tcp_pacing_ca_ratio = 120 %.
    let ratio: u128 = if s.cwnd < s.ssthresh / 2 { 200 } else { 120 };
    let rate =
        ratio * u128::from(s.cwnd.max(in_flight)) * 1_000_000_000 / (100 * u128::from(s.srtt_ns));
    if rate == 0 {
        return CUSHION_MAX_NS;
    }
    let d = u128::from(4 * GSO_MAX_SIZE) * 1_000_000_000 / rate;
    d.min(u128::from(CUSHION_MAX_NS)) as u64
}

impl Detector {
    /// Notes an RTT sample for `delay_min` (Linux's `cubictcp_acked` does
    /// on every ACK with one, in slow start or not).
    pub fn note_rtt(&mut self, rtt_ns: Option<u64>) {
        if let Some(r) = rtt_ns {
            self.delay_min_ns = self.delay_min_ns.min(r.max(1));
        }
    }

    /// Returns the minimum RTT sampled, if any.
    pub fn delay_min_ns(&self) -> Option<u64> {
        (self.delay_min_ns != u64::MAX).then_some(self.delay_min_ns)
    }

    /// Notes an ACK in slow start. Returns the test that ends slow start,
    /// if one does.
    pub fn on_ack(&mut self, ev: &AckEvent, s: &Sender) -> Option<Exit> {
        self.note_rtt(ev.rtt_ns);
        let delay_min_ns = self.delay_min_ns;
        let now = ev.now_ns;
        if ev.acked_bytes > self.round_left {
            // `after(snd_una, end_seq)`: a new round (`bictcp_hystart_reset`).
            self.round_start_ns = now;
            self.last_ack_ns = now;
            self.round_left = ev.in_flight_bytes.saturating_sub(ev.acked_bytes);
            self.curr_rtt_ns = u64::MAX;
            self.samples = 0;
        } else {
            self.round_left -= ev.acked_bytes;
        }
        if s.cwnd / s.mss.max(1) < LOW_WINDOW_SEGMENTS || delay_min_ns == u64::MAX {
            return None;
        }
        let mut exit = None;
        if now.saturating_sub(self.last_ack_ns) <= ACK_DELTA_NS {
            self.last_ack_ns = now;
            let threshold = (delay_min_ns + cushion(s, ev.in_flight_bytes)) / 2;
            if now.saturating_sub(self.round_start_ns) > threshold {
                exit = Some(Exit::AckTrain);
            }
        }
        if let Some(rtt) = ev.rtt_ns {
            self.curr_rtt_ns = self.curr_rtt_ns.min(rtt);
            if self.samples < MIN_SAMPLES {
                self.samples += 1;
            } else if exit.is_none()
                && self.curr_rtt_ns > delay_min_ns + delay_threshold(delay_min_ns)
            {
                exit = Some(Exit::Delay);
            }
        }
        exit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;
    const MS: u64 = 1_000_000;

    /// A sender in its initial slow start with `segs` segments and a
    /// 20 ms SRTT.
    fn sender(segs: u64) -> Sender {
        Sender {
            cwnd: segs * MSS,
            ssthresh: u64::MAX,
            mss: MSS,
            srtt_ns: 20 * MS,
        }
    }

    fn ack(now_ns: u64, rtt_ns: u64, in_flight_segs: u64) -> AckEvent {
        AckEvent {
            now_ns,
            acked_bytes: MSS,
            rtt_ns: Some(rtt_ns),
            min_rtt_ns: 20 * MS,
            in_flight_bytes: in_flight_segs * MSS,
            app_limited: false,
        }
    }

    /// A detector that has seen a minimum RTT of 20 ms.
    fn seen_20ms() -> Detector {
        let mut d = Detector::default();
        d.note_rtt(Some(20 * MS));
        d
    }

    /// Feeds ACKs of one segment each, `gap_ns` apart from `start_ns`, all
    /// with RTT `rtt_ns`, with a window of `segs`; returns the index and
    /// test of the ACK that exits, if any.
    fn train(
        d: &mut Detector,
        start_ns: u64,
        gap_ns: u64,
        n: u64,
        rtt_ns: u64,
        segs: u64,
    ) -> Option<(u64, Exit)> {
        (0..n).find_map(|i| {
            let ev = ack(start_ns + i * gap_ns, rtt_ns, 1000);
            d.on_ack(&ev, &sender(segs)).map(|e| (i, e))
        })
    }

    /// Linux's cushion: min(1 ms, 4 · 65536 B / (2 · cwnd / SRTT)). For 32
    /// segments and 20 ms: 2 · 46336 / 0.02 = 4.63 MB/s, 262144 / 4.63e6 s
    /// = 56.6 ms, so the 1 ms cap. At 10,000 segments and 100 µs: 2 ·
    /// 14.48 MB / 1e-4 s = 289.6 GB/s, 262144 / 289.6e9 s = 905 ns.
    #[test]
    fn the_cushion_is_linuxs_hystart_ack_delay() {
        assert_eq!(cushion(&sender(32), 0), CUSHION_MAX_NS);
        let fast = Sender {
            cwnd: 10_000 * MSS,
            srtt_ns: 100_000,
            ..sender(0)
        };
        assert_eq!(cushion(&fast, 0), 905);
        // In congestion avoidance Linux paces at 1.2 · cwnd/SRTT: 1508 ns.
        let ca = Sender {
            ssthresh: fast.cwnd,
            ..fast
        };
        assert_eq!(cushion(&ca, 0), 1508);
    }

    /// delay_min = 20 ms: the train threshold is (20 + 1) / 2 = 10.5 ms
    /// after the round's first ACK. ACKs 0.5 ms apart: the one at 10.5 ms
    /// (the 22nd) is not past it, the one at 11 ms (the 23rd) is.
    #[test]
    fn an_ack_train_longer_than_half_the_minimum_rtt_exits() {
        let mut d = seen_20ms();
        let hit = train(&mut d, 100 * MS, MS / 2, 40, 20 * MS, 32);
        assert_eq!(hit, Some((22, Exit::AckTrain)));
    }

    /// A gap over 2 ms ends the train for the rest of the round: 8 ms of
    /// ACKs 1 ms apart, then ACKs resume 3 ms later and 1 ms apart, and
    /// none of them counts (each is compared with the last train ACK).
    #[test]
    fn a_gap_over_two_ms_ends_the_train() {
        let mut d = seen_20ms();
        // In flight 1000 segments: every ACK here is in the same round.
        assert_eq!(train(&mut d, 0, MS, 9, 20 * MS, 32), None);
        assert_eq!(train(&mut d, 11 * MS, MS, 20, 20 * MS, 32), None);
    }

    /// The same 40-ACK train with a window of 15 segments exits nothing:
    /// Linux's hystart_low_window is 16.
    #[test]
    fn no_test_runs_below_the_low_window() {
        let mut d = seen_20ms();
        assert_eq!(train(&mut d, 0, MS / 2, 40, 20 * MS, 15), None);
        assert_eq!(train(&mut d, 0, MS / 2, 40, 40 * MS, 15), None);
    }

    /// delay_min = 20 ms: the threshold is clamp(20/8 = 2.5 ms, 4, 16) = 4
    /// ms, so a round's minimum must exceed 24 ms. The first 8 samples only
    /// count (MIN_SAMPLES); the 9th decides. ACKs 3 ms apart, so no train.
    #[test]
    fn a_round_minimum_above_the_clamped_threshold_exits_after_eight_samples() {
        let mut d = seen_20ms();
        assert_eq!(train(&mut d, 0, 3 * MS, 30, 24 * MS, 32), None);
        let mut d = seen_20ms();
        assert_eq!(
            train(&mut d, 0, 3 * MS, 30, 24 * MS + 1, 32),
            Some((8, Exit::Delay))
        );
    }

    /// clamp(delay_min / 8, 4 ms, 16 ms): 2.5 → 4 ms at 20 ms, 10 ms at
    /// 80 ms, 25 → 16 ms at 200 ms.
    #[test]
    fn the_delay_threshold_is_clamped_to_four_and_sixteen_ms() {
        assert_eq!(delay_threshold(20 * MS), 4 * MS);
        assert_eq!(delay_threshold(80 * MS), 10 * MS);
        assert_eq!(delay_threshold(200 * MS), 16 * MS);
    }

    /// A round ends when an ACK acknowledges past the bytes in flight at
    /// its start: the train and the sample count start again there.
    #[test]
    fn a_new_round_starts_past_the_previous_rounds_flight() {
        let mut d = Detector::default();
        assert_eq!(d.delay_min_ns(), None);
        let s = sender(32);
        // Round 1: the first ACK sees 10 segments in flight, so 9 remain.
        for i in 0..10 {
            let ev = ack(i * MS / 2, 20 * MS, 10 - i);
            assert_eq!(d.on_ack(&ev, &s), None, "ACK {i}");
        }
        assert_eq!(d.round_left, 0);
        // The next ACK starts round 2: the sample count is 1 again, so 8
        // more samples are needed before the delay test decides.
        for i in 0..8 {
            let ev = ack(100 * MS + 3 * i * MS, 30 * MS, 30);
            assert_eq!(d.on_ack(&ev, &s), None, "ACK {i}");
        }
        let ev = ack(200 * MS, 30 * MS, 30);
        assert_eq!(d.delay_min_ns(), Some(20 * MS));
        assert_eq!(d.on_ack(&ev, &s), Some(Exit::Delay));
    }
}
