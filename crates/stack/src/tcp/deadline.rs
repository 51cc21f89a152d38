//! An optional instant in one word, for the timers a connection keeps.
//!
//! `Option<Time>` takes 16 bytes (a tag and the value); a connection holds
//! several deadlines, so they use `Time::MAX` as "not armed" instead: no
//! timer can be due at the end of time, so the sentinel means the same
//! thing as `None` to every comparison with a real instant.

use elvis_kernel::Time;

/// A timer deadline, or none (8 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadline(Time);

impl Deadline {
    /// No deadline.
    pub const NONE: Deadline = Deadline(Time::MAX);

    /// Returns a deadline at `t` (`Time::MAX` is the same as none).
    pub fn at(t: Time) -> Deadline {
        Deadline(t)
    }

    /// Returns the instant, if armed.
    pub fn get(self) -> Option<Time> {
        (self.0 != Time::MAX).then_some(self.0)
    }

    /// Returns true if not armed.
    pub fn is_none(self) -> bool {
        self.0 == Time::MAX
    }

    /// Returns true if armed and `f` holds for the instant.
    pub fn is_some_and(self, f: impl FnOnce(Time) -> bool) -> bool {
        self.get().is_some_and(f)
    }
}

impl Default for Deadline {
    fn default() -> Self {
        Deadline::NONE
    }
}

impl From<Option<Time>> for Deadline {
    fn from(t: Option<Time>) -> Self {
        t.map_or(Deadline::NONE, Deadline)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_is_one_word_and_round_trips_through_option() {
        assert_eq!(std::mem::size_of::<Deadline>(), 8);
        assert_eq!(std::mem::size_of::<Option<Time>>(), 16);
        for t in [None, Some(Time::ZERO), Some(Time::from_secs(3))] {
            assert_eq!(Deadline::from(t).get(), t);
        }
        assert!(Deadline::NONE.is_none());
        assert!(!Deadline::at(Time::ZERO).is_none());
        assert!(Deadline::at(Time::from_nanos(5)).is_some_and(|t| t.as_nanos() == 5));
        assert!(!Deadline::NONE.is_some_and(|_| true));
    }
}
