//! Real-time pacing: virtual time held to the wall clock, as ns-3's
//! real-time scheduler does, so that a run can face the outside world
//! (people watching, and later real hosts and programs).
//!
//! A paced run processes an event no earlier than the wall-clock instant
//! that corresponds to its virtual time: the run's start on the wall clock
//! plus the virtual time elapsed since the run's start. When the next
//! event is due later, the run loop sleeps until it is due; this module is
//! the one place of the simulator that reads the wall clock to decide
//! what happens next. Pacing changes no result: events run in the same
//! order at the same virtual times, only later in wall time.
//!
//! A run that cannot keep up (more work per virtual second than the
//! machine does per wall second) is not slowed silently: each event
//! processed more than [`TOLERANCE`] after its due instant counts as
//! late, each stretch of late events as one fall behind, and the largest
//! lag is kept ([`RealtimeReport`], in the report's `performance`).

use elvis_kernel::Time;
use serde::Serialize;
use std::time::{Duration, Instant};

/// How late an event may run and still count as on time: about the
/// precision of a sleeping thread's wake-up on Linux.
pub const TOLERANCE: Duration = Duration::from_millis(1);

/// How a paced run kept up with the wall clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RealtimeReport {
    /// The largest lag of an event behind its due wall-clock instant, ns.
    pub max_lag_ns: u64,
    /// Events processed more than the tolerance after their due instant.
    pub late_events: u64,
    /// Stretches of late events: how often the run fell behind.
    pub fell_behind: u64,
    /// The tolerance, ns.
    pub tolerance_ns: u64,
}

/// The pacing state of a simulation.
#[derive(Clone, Debug)]
pub(crate) struct Pacer {
    /// The wall-clock instant of virtual time `origin_virtual`.
    origin_wall: Instant,
    origin_virtual: Time,
    /// Whether the last event was late.
    behind: bool,
    pub stats: RealtimeReport,
}

impl Pacer {
    /// Starts pacing with virtual time `now` at this wall-clock instant.
    pub fn new(now: Time) -> Pacer {
        Pacer {
            origin_wall: Instant::now(),
            origin_virtual: now,
            behind: false,
            stats: RealtimeReport {
                tolerance_ns: TOLERANCE.as_nanos() as u64,
                ..RealtimeReport::default()
            },
        }
    }

    /// Holds virtual time `now` to this wall-clock instant (a new run of
    /// the same simulation starts a new pacing origin).
    pub fn restart(&mut self, now: Time) {
        self.origin_wall = Instant::now();
        self.origin_virtual = now;
        self.behind = false;
    }

    /// The wall-clock instant at which virtual time `t` is due.
    pub fn due(&self, t: Time) -> Instant {
        let ahead = t.as_nanos().saturating_sub(self.origin_virtual.as_nanos());
        self.origin_wall + Duration::from_nanos(ahead)
    }

    /// Decides about the next event, due at virtual time `t`: `Some`
    /// (the instant to wait for) when it is not due yet, else `None`
    /// after counting how late it runs.
    pub fn check(&mut self, t: Time) -> Option<Instant> {
        self.check_at(t, Instant::now())
    }

    /// [`Pacer::check`] with the wall clock reading `now`.
    fn check_at(&mut self, t: Time, now: Instant) -> Option<Instant> {
        let due = self.due(t);
        if now < due {
            self.behind = false;
            return Some(due);
        }
        let lag = now - due;
        let lag_ns = lag.as_nanos().min(u128::from(u64::MAX)) as u64;
        self.stats.max_lag_ns = self.stats.max_lag_ns.max(lag_ns);
        if lag > TOLERANCE {
            self.stats.late_events += 1;
            if !self.behind {
                self.stats.fell_behind += 1;
            }
            self.behind = true;
        } else {
            self.behind = false;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_waits_for_its_instant() {
        let mut p = Pacer::new(Time::from_nanos(5_000));
        let start = p.origin_wall;
        // 2 ms of virtual time after the origin is due 2 ms after it.
        let t = Time::from_nanos(2_005_000);
        assert_eq!(p.check_at(t, start), Some(start + Duration::from_millis(2)));
        assert_eq!(
            p.stats,
            RealtimeReport {
                tolerance_ns: 1_000_000,
                ..Default::default()
            }
        );
    }

    #[test]
    fn late_events_count_and_each_stretch_is_one_fall() {
        let mut p = Pacer::new(Time::ZERO);
        let start = p.origin_wall;
        let at = |ms: u64| start + Duration::from_millis(ms);
        // Due at 1 ms, run at 1.5 ms: within the tolerance.
        assert_eq!(
            p.check_at(
                Time::from_nanos(1_000_000),
                at(1) + Duration::from_micros(500)
            ),
            None
        );
        // Due at 2 and 3 ms, both run at 10 ms: one stretch, two late.
        assert_eq!(p.check_at(Time::from_nanos(2_000_000), at(10)), None);
        assert_eq!(p.check_at(Time::from_nanos(3_000_000), at(10)), None);
        // Caught up (an event waits), then late again: a second fall.
        assert!(p.check_at(Time::from_nanos(20_000_000), at(11)).is_some());
        assert_eq!(p.check_at(Time::from_nanos(20_000_000), at(25)), None);
        assert_eq!(
            p.stats,
            RealtimeReport {
                max_lag_ns: 8_000_000,
                late_events: 3,
                fell_behind: 2,
                tolerance_ns: 1_000_000,
            }
        );
    }
}
