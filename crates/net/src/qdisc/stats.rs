//! Counters of one egress queue, kept by the network as frames come and
//! go, and the occupancy time series recorded when tracing is on.
//!
//! Occupancy is what the discipline holds: frames (and bytes) waiting,
//! not the one being serialized. The time-weighted mean is
//! `∫ packets dt / (end − first arrival)`; the integral is accumulated at
//! every change, so it costs two multiplications per frame and no memory.

use serde::Serialize;

/// Counters of one egress queue (see the module docs).
#[derive(Clone, Debug)]
pub struct QueueStats {
    pub enqueued: u64,
    pub dequeued: u64,
    /// Frames the discipline refused (by reason: `World::queue_drops`).
    pub dropped: u64,
    /// Frames queued with CE set.
    pub marked: u64,
    pub max_bytes: u64,
    pub max_packets: u32,
    last_packets: u32,
    /// ∫ packets dt from `first_ns` to `last_ns`, packet·ns.
    area: f64,
    last_ns: u64,
    /// When a frame first had to wait, ns (`u64::MAX`: never yet).
    first_ns: u64,
    /// When the queue last went from waiting frames to none, ns.
    emptied_ns: u64,
}

impl Default for QueueStats {
    fn default() -> Self {
        QueueStats {
            enqueued: 0,
            dequeued: 0,
            dropped: 0,
            marked: 0,
            max_bytes: 0,
            max_packets: 0,
            last_packets: 0,
            area: 0.0,
            last_ns: 0,
            first_ns: u64::MAX,
            emptied_ns: 0,
        }
    }
}

impl QueueStats {
    /// Records the occupancy after a change at `now_ns`.
    fn occupancy(&mut self, now_ns: u64, packets: u32, bytes: u64) {
        if self.first_ns == u64::MAX {
            if packets == 0 {
                return; // Frames went straight to an idle wire.
            }
            self.first_ns = now_ns;
            self.last_ns = now_ns;
        }
        let dt = now_ns.saturating_sub(self.last_ns);
        self.area += f64::from(self.last_packets) * dt as f64;
        // A frame that passes straight through (queued and taken at one
        // instant) does not make the queue "empty again".
        if packets == 0 && self.last_packets > 0 && dt > 0 {
            self.emptied_ns = now_ns;
        }
        self.last_ns = now_ns;
        self.last_packets = packets;
        self.max_packets = self.max_packets.max(packets);
        self.max_bytes = self.max_bytes.max(bytes);
    }

    /// A frame was queued; the discipline now holds `packets`/`bytes`.
    #[inline]
    pub fn enqueued(&mut self, now_ns: u64, packets: u32, bytes: u64) {
        self.enqueued += 1;
        self.occupancy(now_ns, packets, bytes);
    }

    /// A frame left for the wire.
    #[inline]
    pub fn dequeued(&mut self, now_ns: u64, packets: u32, bytes: u64) {
        self.dequeued += 1;
        self.occupancy(now_ns, packets, bytes);
    }

    /// A frame of `bytes` found the queue empty and its wire idle, and
    /// left at once: the same as [`QueueStats::enqueued`] with one
    /// packet then [`QueueStats::dequeued`] with none, at `now_ns`.
    #[inline]
    pub fn passed_through(&mut self, now_ns: u64, bytes: u64) {
        // Nothing waited: the integral does not grow, and a frame that
        // passes straight through does not make the queue "empty again".
        debug_assert_eq!(self.last_packets, 0);
        self.enqueued += 1;
        self.dequeued += 1;
        if self.first_ns == u64::MAX {
            self.first_ns = now_ns;
        }
        self.last_ns = now_ns;
        self.max_packets = self.max_packets.max(1);
        self.max_bytes = self.max_bytes.max(bytes);
    }

    /// Returns the time-weighted mean occupancy, frames, from the first
    /// time a frame had to wait until the queue last emptied (until
    /// `end_ns` when it still holds frames), so neither an idle start nor
    /// the idle tail of a run dilutes it.
    pub fn mean_packets(&self, end_ns: u64) -> f64 {
        if self.first_ns == u64::MAX {
            return 0.0;
        }
        let until = if self.last_packets == 0 {
            self.emptied_ns
        } else {
            end_ns.max(self.last_ns)
        };
        if until <= self.first_ns {
            return 0.0;
        }
        let tail = until.saturating_sub(self.last_ns);
        let area = self.area + f64::from(self.last_packets) * tail as f64;
        area / (until - self.first_ns) as f64
    }

    /// Returns true once a frame was offered to the queue.
    pub fn saw_traffic(&self) -> bool {
        self.enqueued + self.dropped > 0
    }
}

/// One point of an occupancy time series: from `time_ns` on, the queue
/// held `packets` frames of `bytes` bytes (until the next point).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct OccupancySample {
    pub time_ns: u64,
    pub packets: u32,
    pub bytes: u64,
}

/// Appends a sample to a series, compressed: several changes at one
/// instant keep only the last, a sample equal to the previous one is not
/// repeated, and the series starts when a frame first waits.
pub fn push_sample(series: &mut Vec<OccupancySample>, s: OccupancySample) {
    if series.is_empty() && s.packets == 0 {
        return; // Frames went straight to an idle wire: nothing waited yet.
    }
    if let Some(last) = series.last_mut() {
        if last.time_ns == s.time_ns {
            *last = s;
            let n = series.len();
            if n >= 2 && (series[n - 2].packets, series[n - 2].bytes) == (s.packets, s.bytes) {
                series.pop();
            }
            return;
        }
        if (last.packets, last.bytes) == (s.packets, s.bytes) {
            return;
        }
    }
    series.push(s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_passing_through_counts_as_queued_then_dequeued() {
        // Histories ending with nothing waiting, then one frame passing
        // straight through, both ways.
        let histories: [&[(u64, u32, u64)]; 3] = [
            &[],
            &[(10, 1, 100), (10, 0, 0)],
            &[(10, 1, 100), (15, 2, 300), (20, 1, 200), (40, 0, 0)],
        ];
        for h in histories {
            let (mut a, mut b) = (QueueStats::default(), QueueStats::default());
            for (i, &(t, p, bytes)) in h.iter().enumerate() {
                for s in [&mut a, &mut b] {
                    if i % 2 == 0 {
                        s.enqueued(t, p, bytes);
                    } else {
                        s.dequeued(t, p, bytes);
                    }
                }
            }
            a.enqueued(50, 1, 700);
            a.dequeued(50, 0, 0);
            b.passed_through(50, 700);
            assert_eq!(format!("{a:?}"), format!("{b:?}"));
            assert_eq!(a.mean_packets(90), b.mean_packets(90));
        }
    }

    #[test]
    fn an_egress_queue_stays_small() {
        // Two per port that saw traffic, a million ports in big runs:
        // drop-tail inline, every other discipline boxed.
        assert!(std::mem::size_of::<crate::qdisc::Qdisc>() <= 64);
        // The departure schedule of the analytic drop-tail path (an empty
        // `VecDeque` and two counters) takes 40 of these bytes, its
        // occupancy trace (a pointer, null when not traced) 8.
        let size = std::mem::size_of::<crate::WireQueue>();
        assert!(size <= 208, "{size}");
    }

    #[test]
    fn the_mean_occupancy_is_time_weighted() {
        let mut s = QueueStats::default();
        s.enqueued(50, 0, 0); // straight onto the wire: not counted
        s.enqueued(100, 1, 1000); // 1 frame from 100 to 200
        s.enqueued(200, 2, 2000); // 2 frames from 200 to 400
        s.dequeued(400, 1, 1000); // 1 frame from 400 to 500
                                  // (1·100 + 2·200 + 1·100) / 400
        assert_eq!(s.mean_packets(500), 600.0 / 400.0);
        assert_eq!((s.max_packets, s.max_bytes), (2, 2000));
    }

    #[test]
    fn samples_at_one_instant_keep_the_last_and_repeats_are_dropped() {
        let mut v = Vec::new();
        let p = |t, n| OccupancySample {
            time_ns: t,
            packets: n,
            bytes: u64::from(n) * 100,
        };
        push_sample(&mut v, p(0, 0));
        push_sample(&mut v, p(0, 1));
        push_sample(&mut v, p(5, 2));
        push_sample(&mut v, p(5, 1)); // back to 1 at the same instant
        push_sample(&mut v, p(7, 1));
        push_sample(&mut v, p(9, 0));
        assert_eq!(v, vec![p(0, 1), p(9, 0)]);
    }
}
