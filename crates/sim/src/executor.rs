//! Tasks: application futures and their bookkeeping.
//!
//! A task is one boxed future (an application's `async` body) plus a small
//! record. Tasks are polled from the run loop when woken by id; the loop
//! polls with a no-op `Waker` because every elvis future registers its task
//! id with the socket or timer it waits on.

use crate::machine::MachineId;
use elvis_kernel::Time;
use serde::Serialize;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// Index of a task.
pub(crate) type TaskId = u32;

/// `CURRENT` while no task is being polled.
const NO_TASK: u32 = u32::MAX;

thread_local! {
    /// The task being polled on this thread (`NO_TASK` between polls).
    ///
    /// Kept out of the world, in a `Cell` of a plain integer: such a
    /// thread-local needs no destructor and no lazy initialisation, so
    /// reading it is one load. A future that parks (a `recv_from` finding
    /// its queue empty) learns whom to wake without borrowing the world.
    static CURRENT: std::cell::Cell<u32> = const { std::cell::Cell::new(NO_TASK) };
}

/// Returns the task being polled on this thread, if any.
#[inline]
pub(crate) fn current_task() -> Option<TaskId> {
    let t = CURRENT.with(std::cell::Cell::get);
    (t != NO_TASK).then_some(t)
}

/// Makes `task` the one being polled (`None`: none is).
#[inline]
pub(crate) fn set_current_task(task: Option<TaskId>) {
    CURRENT.with(|c| c.set(task.unwrap_or(NO_TASK)));
}

/// What an application returns.
pub type AppResult = Result<(), AppError>;

/// Why an application failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AppError {
    pub message: String,
}

impl AppError {
    /// Returns an error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        AppError {
            message: message.into(),
        }
    }
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error> From<E> for AppError {
    fn from(e: E) -> Self {
        AppError::new(e.to_string())
    }
}

/// The boxed body of an application.
pub(crate) type TaskFuture = Pin<Box<dyn Future<Output = AppResult>>>;

/// How a task ended (or why it has not).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Still running or waiting.
    Pending,
    /// Returned `Ok`.
    Finished,
    /// Returned an error.
    Failed,
    /// Its machine crashed (a panic in its code or its stack).
    Crashed,
}

/// The record of one task.
pub(crate) struct TaskMeta {
    pub machine: MachineId,
    /// Index into the simulation's application-name table.
    pub app: u32,
    pub state: TaskState,
    pub queued: bool,
    /// A daemon (a server, a forwarder) may still be waiting at the end of
    /// a run without that counting as a failure.
    pub daemon: bool,
}

/// Tasks woken and not yet polled, in wake order.
///
/// The oldest lies in an inline slot, the rest in a `VecDeque` used only
/// while one already waits: an event almost always wakes a single task
/// (the one parked on the socket that received), and handing it to the run
/// loop is then a write and a read of `first`, without the ring buffer's
/// index arithmetic. `first` is always older than all of `rest`.
#[derive(Default)]
pub(crate) struct ReadyQueue {
    first: Option<TaskId>,
    rest: std::collections::VecDeque<TaskId>,
}

impl ReadyQueue {
    /// Appends `task` (the caller keeps a task from being queued twice).
    #[inline]
    pub fn push(&mut self, task: TaskId) {
        if self.first.is_none() && self.rest.is_empty() {
            self.first = Some(task);
        } else {
            self.rest.push_back(task);
        }
    }

    /// Takes the task woken first.
    #[inline]
    pub fn pop(&mut self) -> Option<TaskId> {
        match self.first.take() {
            Some(t) => Some(t),
            // Checked here so that the common empty case makes no call.
            None if self.rest.is_empty() => None,
            None => self.rest.pop_front(),
        }
    }
}

/// Task records, indexed by [`TaskId`].
#[derive(Default)]
pub(crate) struct TaskTable {
    pub meta: Vec<TaskMeta>,
    /// Application names; tasks refer to them by index.
    pub app_names: Vec<String>,
    pub errors: Vec<(TaskId, String)>,
    /// When the last task ended (finished, failed or crashed).
    pub last_end: Option<Time>,
}

impl TaskTable {
    /// Marks `task` queued; returns false if it already was (or is over).
    #[inline]
    pub fn mark_queued(&mut self, task: TaskId) -> bool {
        let Some(m) = self.meta.get_mut(task as usize) else {
            return false;
        };
        if m.queued || m.state != TaskState::Pending {
            return false;
        }
        m.queued = true;
        true
    }

    /// Returns the index of `name` in the application-name table.
    pub fn app_index(&mut self, name: &str) -> u32 {
        if let Some(i) = self.app_names.iter().position(|n| n == name) {
            return i as u32;
        }
        self.app_names.push(name.to_string());
        (self.app_names.len() - 1) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    #[test]
    fn the_ready_queue_pops_in_wake_order_like_a_plain_fifo() {
        // A second implementation (a plain `VecDeque`) as the model, driven
        // by a fixed pseudo-random mix of pushes and pops.
        let mut q = ReadyQueue::default();
        let mut model = VecDeque::new();
        let mut x = 0x9e37_79b9_u32;
        let mut next = 0;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            if x.is_multiple_of(3) {
                assert_eq!(q.pop(), model.pop_front());
            } else {
                q.push(next);
                model.push_back(next);
                next += 1;
            }
        }
        while let Some(t) = model.pop_front() {
            assert_eq!(q.pop(), Some(t));
        }
        assert_eq!(q.pop(), None);
    }
}
