//! Virtual time: integer nanoseconds since the start of the run.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};
use std::time::Duration;

/// An instant of virtual time, in nanoseconds since the start of the run.
///
/// Arithmetic saturates at [`Time::MAX`] (which reads as "never").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

impl Time {
    /// The start of every run.
    pub const ZERO: Time = Time(0);
    /// The end of time; used for "never".
    pub const MAX: Time = Time(u64::MAX);

    /// Returns the instant `ns` nanoseconds after the start.
    pub const fn from_nanos(ns: u64) -> Time {
        Time(ns)
    }
    /// Returns the instant `us` microseconds after the start.
    pub const fn from_micros(us: u64) -> Time {
        Time(us.saturating_mul(1_000))
    }
    /// Returns the instant `ms` milliseconds after the start.
    pub const fn from_millis(ms: u64) -> Time {
        Time(ms.saturating_mul(1_000_000))
    }
    /// Returns the instant `s` seconds after the start.
    pub const fn from_secs(s: u64) -> Time {
        Time(s.saturating_mul(1_000_000_000))
    }
    /// Returns the nanoseconds since the start.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Returns the seconds since the start as a float (for display only).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Returns the time elapsed since `earlier` (zero if `earlier` is later).
    pub fn since(self, earlier: Time) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

/// Nanoseconds of a duration, saturating at `u64::MAX`.
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Add<Duration> for Time {
    type Output = Time;
    fn add(self, d: Duration) -> Time {
        Time(self.0.saturating_add(nanos(d)))
    }
}

impl AddAssign<Duration> for Time {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Time> for Time {
    type Output = Duration;
    fn sub(self, rhs: Time) -> Duration {
        self.since(rhs)
    }
}

impl fmt::Display for Time {
    /// Formats as seconds with nanosecond precision: `1.000000250s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Time::MAX {
            return f.write_str("never");
        }
        write!(
            f,
            "{}.{:09}s",
            self.0 / 1_000_000_000,
            self.0 % 1_000_000_000
        )
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn adding_durations_is_exact_to_the_nanosecond() {
        let t = Time::from_millis(2) + Duration::from_nanos(250);
        assert_eq!(t.as_nanos(), 2_000_250);
        assert_eq!(t.to_string(), "0.002000250s");
    }

    #[test]
    fn arithmetic_saturates_instead_of_overflowing() {
        assert_eq!(Time::MAX + Duration::from_secs(1), Time::MAX);
        assert_eq!(Time::ZERO - Time::from_secs(1), Duration::ZERO);
    }
}
