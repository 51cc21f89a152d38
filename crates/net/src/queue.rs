//! One egress queue: a discipline feeding a wire, run event by event or
//! as a departure-time FIFO (see "Departure-time FIFO").

use crate::qdisc::stats::OccupancySample;
use crate::qdisc::{self, Discipline, Qdisc};
use crate::FrameId;

/// One frame of a departure-time FIFO (see "Departure-time FIFO"): when
/// its serialization starts and ends, ns, and its length.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot {
    pub start: u64,
    pub done: u64,
    pub bytes: u32,
}

/// One egress queue: its discipline, the frame being serialized, and its
/// statistics.
pub struct WireQueue {
    pub(crate) qdisc: Qdisc,
    /// The frame on the wire (out of the discipline already).
    pub(crate) on_wire: Option<FrameId>,
    /// Time of the latest retry scheduled for a shaper that said
    /// [`Dequeue::NotBefore`], ns (0: none).
    pub(crate) retry_at: u64,
    /// The departure schedule of a drop-tail queue run analytically: its
    /// frames not yet fully serialized, in order (empty on the evented
    /// path). The first `started` have left the queue for the wire.
    pub(crate) sched: std::collections::VecDeque<Slot>,
    pub(crate) started: u32,
    /// Bytes of the frames of `sched` that have not started.
    pub(crate) waiting_bytes: u64,
    pub stats: qdisc::stats::QueueStats,
    /// The occupancy series of a traced queue run analytically (as the
    /// evented path records it in `Fabric::queue_series`; `None` when not
    /// traced), its departures recorded lazily like `stats`.
    // (Boxed: a pointer, not a `Vec`'s three words, in every queue.)
    #[allow(clippy::box_collection)]
    pub(crate) trace: Option<Box<Vec<OccupancySample>>>,
}

impl WireQueue {
    pub(crate) fn new(qdisc: Qdisc) -> Self {
        WireQueue {
            qdisc,
            on_wire: None,
            retry_at: 0,
            sched: std::collections::VecDeque::new(),
            started: 0,
            waiting_bytes: 0,
            stats: Default::default(),
            trace: None,
        }
    }

    /// Appends a sample to the trace, if traced.
    #[inline]
    pub(crate) fn sample(&mut self, time_ns: u64, packets: u32, bytes: u64) {
        if let Some(t) = self.trace.as_mut() {
            qdisc::stats::push_sample(
                t,
                OccupancySample {
                    time_ns,
                    packets,
                    bytes,
                },
            );
        }
    }

    /// Returns the occupancy series as of `end_ns` of a queue traced on
    /// the analytic path (the departures due by then replayed on a copy),
    /// or `None`.
    pub fn trace_at(&self, end_ns: u64) -> Option<Vec<OccupancySample>> {
        let mut t = *self.trace.clone()?;
        for (time_ns, packets, bytes) in self.departures_by(end_ns) {
            let sample = OccupancySample {
                time_ns,
                packets,
                bytes,
            };
            qdisc::stats::push_sample(&mut t, sample);
        }
        Some(t)
    }

    /// The departures not yet recorded that start by `end_ns`, in order:
    /// (start, frames then waiting, bytes then waiting).
    pub(crate) fn departures_by(&self, end_ns: u64) -> impl Iterator<Item = (u64, u32, u64)> + '_ {
        let len = self.sched.len() as u32;
        let mut waiting_bytes = self.waiting_bytes;
        (self.sched.iter().enumerate().skip(self.started as usize))
            .take_while(move |(_, s)| s.start <= end_ns)
            .map(move |(i, s)| {
                waiting_bytes -= u64::from(s.bytes);
                (s.start, len - i as u32 - 1, waiting_bytes)
            })
    }

    /// Returns the discipline (for the report).
    pub fn qdisc(&self) -> &Qdisc {
        &self.qdisc
    }

    /// Returns true when nothing waits or is on the wire at `now_ns`.
    pub(crate) fn is_idle(&self, now_ns: u64) -> bool {
        self.on_wire.is_none()
            && self.qdisc.packets() == 0
            && self.sched.back().is_none_or(|s| s.done <= now_ns)
    }

    /// Brings the departure schedule up to `now_ns`: records the frames
    /// that started serializing by then as dequeued (at their start, in
    /// order), and forgets those fully serialized. Departures at an
    /// instant come before arrivals at it.
    #[inline]
    pub(crate) fn settle(&mut self, now_ns: u64) {
        // The common case first: every frame started and fully serialized.
        if self.started as usize == self.sched.len()
            && self.sched.back().is_none_or(|s| s.done <= now_ns)
        {
            self.sched.clear();
            self.started = 0;
            return;
        }
        while let Some(&s) = self.sched.get(self.started as usize) {
            if s.start > now_ns {
                break;
            }
            self.started += 1;
            self.waiting_bytes -= u64::from(s.bytes);
            let waiting = self.sched.len() as u32 - self.started;
            self.stats.dequeued(s.start, waiting, self.waiting_bytes);
            self.sample(s.start, waiting, self.waiting_bytes);
        }
        while self.sched.front().is_some_and(|s| s.done <= now_ns) {
            self.sched.pop_front();
            self.started -= 1;
        }
    }

    /// Returns the frames and bytes waiting (not on the wire), as of the
    /// last [`WireQueue::settle`].
    pub(crate) fn waiting(&self) -> (u32, u64) {
        (self.sched.len() as u32 - self.started, self.waiting_bytes)
    }

    /// Appends a frame of `bytes` taking `ser_ns` on the wire to the
    /// departure schedule (settled at `now_ns`: an empty schedule is an
    /// idle wire); returns when its serialization ends.
    pub(crate) fn push(&mut self, now_ns: u64, ser_ns: u64, bytes: u32) -> u64 {
        if self.sched.is_empty() {
            // The wire is idle: the frame goes straight onto it, queued
            // and dequeued at this instant.
            let done = now_ns + ser_ns;
            self.sched.push_back(Slot {
                start: now_ns,
                done,
                bytes,
            });
            self.started += 1;
            self.stats.passed_through(now_ns, u64::from(bytes));
            // (As the evented path: queued, then dequeued at once.)
            self.sample(now_ns, 1, u64::from(bytes));
            self.sample(now_ns, 0, 0);
            return done;
        }
        let start = self.sched.back().map_or(now_ns, |s| s.done.max(now_ns));
        let done = start + ser_ns;
        self.sched.push_back(Slot { start, done, bytes });
        self.waiting_bytes += u64::from(bytes);
        let (packets, waiting_bytes) = self.waiting();
        self.stats.enqueued(now_ns, packets, waiting_bytes);
        self.sample(now_ns, packets, waiting_bytes);
        // A frame that finds the wire idle starts at once.
        self.settle(now_ns);
        done
    }

    /// Returns how many frames are in the queue or on the wire at
    /// `now_ns` on the analytic path.
    #[inline]
    pub(crate) fn scheduled_at(&self, now_ns: u64) -> u32 {
        let (Some(front), Some(back)) = (self.sched.front(), self.sched.back()) else {
            return 0;
        };
        // The common cases first: all serialized, or none yet.
        if back.done <= now_ns {
            return 0;
        }
        if front.done > now_ns {
            return self.sched.len() as u32;
        }
        (self.sched.len() - self.sched.partition_point(|s| s.done <= now_ns)) as u32
    }

    /// Returns the statistics as of `end_ns` (the analytic path records
    /// departures lazily: this replays those due by then on a copy).
    pub fn stats_at(&self, end_ns: u64) -> qdisc::stats::QueueStats {
        let mut stats = self.stats.clone();
        for (start, packets, bytes) in self.departures_by(end_ns) {
            stats.dequeued(start, packets, bytes);
        }
        stats
    }

    /// Returns how many frames wait in the queue at `end_ns`.
    pub fn packets_at(&self, end_ns: u64) -> u32 {
        let scheduled = self.sched.iter().skip(self.started as usize);
        self.qdisc.packets() + scheduled.filter(|s| s.start > end_ns).count() as u32
    }
}
