//! What ends a run before its virtual-time limit: an interrupt flag set
//! from outside (a signal handler) and a wall-clock limit.
//!
//! The run loop asks [`Stop::reached`] every 1024 turns (a turn is one task
//! poll or one batch of events), always between two events: a run stopped
//! here leaves every capture at a frame boundary and a report as complete
//! as one that ran out of time.

use crate::report::End;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The early-stop conditions of a simulation (none by default).
#[derive(Clone, Debug, Default)]
pub(crate) struct Stop {
    /// Set from outside to stop at the current event.
    pub flag: Option<Arc<AtomicBool>>,
    /// Most wall-clock time one run may take.
    pub wall: Option<Duration>,
}

impl Stop {
    /// Returns how the run must end now, if it must.
    pub fn reached(&self, start: Instant) -> Option<End> {
        if self
            .flag
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
        {
            return Some(End::Interrupted);
        }
        match self.wall {
            Some(limit) if start.elapsed() >= limit => Some(End::WallLimit),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_stops_a_run_by_default() {
        assert_eq!(Stop::default().reached(Instant::now()), None);
    }

    #[test]
    fn a_set_flag_wins_over_the_wall_limit() {
        let flag = Arc::new(AtomicBool::new(false));
        let stop = Stop {
            flag: Some(flag.clone()),
            wall: Some(Duration::ZERO),
        };
        assert_eq!(stop.reached(Instant::now()), Some(End::WallLimit));
        flag.store(true, Ordering::Relaxed);
        assert_eq!(stop.reached(Instant::now()), Some(End::Interrupted));
    }
}
