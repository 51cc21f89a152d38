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

pub use elvis_stack::hosts::TaskId;

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

    /// Whether a task spawned children ([`crate::Host::spawn`]) that the
    /// run loop has not taken yet: one load after each poll.
    static SPAWNED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Notes that children wait in [`crate::world::World::spawned`].
#[inline]
pub(crate) fn note_spawned() {
    SPAWNED.with(|c| c.set(true));
}

/// Returns whether children were spawned since the last call, and clears
/// the note.
#[inline]
pub fn take_spawned_note() -> bool {
    SPAWNED.with(|c| c.replace(false))
}

/// Returns the task being polled on this thread, if any.
#[inline]
pub fn current_task() -> Option<TaskId> {
    let t = CURRENT.with(std::cell::Cell::get);
    (t != NO_TASK).then_some(t)
}

/// Makes `task` the one being polled (`None`: none is).
#[inline]
pub fn set_current_task(task: Option<TaskId>) {
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
pub type TaskFuture = Pin<Box<dyn Future<Output = AppResult>>>;

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
#[derive(Clone, Debug)]
pub struct TaskMeta {
    pub machine: MachineId,
    /// Index into the simulation's application-name table.
    pub app: u32,
    pub state: TaskState,
    /// A daemon (a server, a forwarder) may still be waiting at the end of
    /// a run without that counting as a failure.
    pub daemon: bool,
    /// Spawned by a running task ([`crate::Host::spawn`]): part of that
    /// task's application, not an instance of it in the report.
    pub child: bool,
}

/// Task records, indexed by [`TaskId`].
#[derive(Default)]
pub struct TaskTable {
    pub meta: Vec<TaskMeta>,
    /// Application names; tasks refer to them by index.
    pub app_names: Vec<String>,
    /// Tasks that failed or crashed: the task, the message, when.
    pub errors: Vec<(TaskId, String, Time)>,
    /// When the last task ended (finished, failed or crashed).
    pub last_end: Option<Time>,
}

impl TaskTable {
    /// Returns the index of `name` in the application-name table.
    pub fn app_index(&mut self, name: &str) -> u32 {
        if let Some(i) = self.app_names.iter().position(|n| n == name) {
            return i as u32;
        }
        self.app_names.push(name.to_string());
        (self.app_names.len() - 1) as u32
    }
}
