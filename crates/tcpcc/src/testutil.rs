//! A fluid ACK-clock for tests: each round trip the sender sends a window
//! of segments in one burst and their ACKs come back evenly spread over the
//! next RTT.

use crate::{AckEvent, CongestionControl};

/// The segment size the tests use.
pub const MSS: u64 = 1448;

/// A path with a fixed RTT and a virtual clock.
#[derive(Debug, Clone)]
pub struct Path {
    pub now: u64,
    pub rtt: u64,
    pub min_rtt: u64,
    pub mss: u64,
    pub segments_per_ack: u64,
    pub app_limited: bool,
}

impl Path {
    pub fn new(rtt: u64) -> Self {
        Path {
            now: 0,
            rtt,
            min_rtt: 0,
            mss: MSS,
            segments_per_ack: 1,
            app_limited: false,
        }
    }

    /// Sends `window()/mss` segments at `now` and delivers their ACKs over
    /// the next RTT; returns the number of segments sent.
    pub fn round(&mut self, cc: &mut dyn CongestionControl) -> u64 {
        let start = self.now;
        let segs = (cc.window() / self.mss).max(1);
        let acks = segs.div_ceil(self.segments_per_ack);
        self.min_rtt = if self.min_rtt == 0 {
            self.rtt
        } else {
            self.min_rtt.min(self.rtt)
        };
        let mut left = segs;
        for i in 0..acks {
            let n = left.min(self.segments_per_ack);
            let ev = AckEvent {
                now_ns: start + self.rtt * (i + 1) / acks,
                acked_bytes: n * self.mss,
                rtt_ns: Some(self.rtt),
                min_rtt_ns: self.min_rtt,
                in_flight_bytes: left * self.mss,
                app_limited: self.app_limited,
            };
            cc.on_ack(&ev);
            left -= n;
        }
        self.now = start + self.rtt;
        segs
    }

    /// Runs `n` rounds.
    pub fn rounds(&mut self, cc: &mut dyn CongestionControl, n: usize) {
        for _ in 0..n {
            self.round(cc);
        }
    }
}
