//! The simulation kernel: virtual time, the event queue and random streams.
//!
//! Nothing here knows about packets or machines. The simulator above keeps
//! one [`EventQueue`] of its own event type and drives the loop:
//!
//! ```
//! use elvis_kernel::{EventQueue, Time};
//! let mut q = EventQueue::new();
//! q.schedule(Time::from_micros(5), 0, "later");
//! q.schedule(Time::ZERO, 1, "first");
//! q.schedule_now("also now");
//! assert_eq!(q.pop(), Some((Time::ZERO, "first")));
//! assert_eq!(q.pop(), Some((Time::ZERO, "also now")));
//! assert_eq!(q.pop(), Some((Time::from_micros(5), "later")));
//! assert_eq!(q.pop(), None);
//! ```
//!
//! # Determinism
//! Time is an integer count of nanoseconds ([`Time`]); no float ever
//! decides an order. Events are ordered by `(time, lane, seq)` where `lane`
//! is the entity that scheduled the event (a machine or a network) and `seq`
//! counts that lane's events. The key therefore does not depend on how
//! unrelated lanes interleave, which is what a partitioned parallel run
//! needs to reproduce the sequential one. Events scheduled for the current
//! instant go to a FIFO queue that runs after every event already due at
//! that instant: they are causally later than all of them.
//!
//! # Timers
//! A timer is an event scheduled at a future instant. Cancellation is lazy:
//! a cancelled timer's event stays queued and is ignored when it fires
//! (protocol timers carry a generation number that must still match; an
//! application task woken by a stale timer re-checks what it waits on and
//! sleeps again). This keeps scheduling a push onto a heap, with no lookup
//! structure per timer.
//!
//! Random numbers come from [`rng::stream`], one independent stream per
//! `(seed, kind, id)`, so adding a machine never perturbs another's draws.
#![forbid(unsafe_code)]

mod queue;
pub mod rng;
mod time;

pub use queue::{EventQueue, Lane};
pub use time::Time;
