//! The world: the hosts (machines, networks, clock: `elvis_stack::Hosts`)
//! plus what the layer above them keeps, the applications' tasks, their
//! shared counters and published metrics.
//!
//! `World` is owned by one thread. During `Simulation::run` (elvis-sim) it sits
//! in a thread-local `RefCell`, borrowed for one event or one system call at
//! a time; application futures are kept outside it so that polling one never
//! holds a borrow.

use crate::executor::{TaskState, TaskTable};
use elvis_stack::hosts::{Hosts, TaskId};
use elvis_stack::machine::MachineId;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::mem::ManuallyDrop;

pub use elvis_stack::hosts::Event;

/// The state of a run: the hosts and the applications on them.
pub struct World {
    /// Machines, networks, the clock and everything protocol code runs on.
    pub hosts: Hosts,
    /// The applications' task records.
    pub tasks: TaskTable,
    /// Counters shared across machines (the `capture` app's `counter=`),
    /// an explicitly shared object.
    pub counters: BTreeMap<String, Counter>,
    /// Results published by applications.
    pub metrics: Vec<Metric>,
    /// Tasks spawned while a task ran ([`crate::Host::spawn`]), with their
    /// ids, in id order, until the run loop takes their futures.
    pub spawned: Vec<(TaskId, crate::executor::TaskFuture)>,
    /// The flows of workload generators, by id ([`crate::flows`]).
    pub flows: Vec<crate::flows::FlowRecord>,
}

/// A value published by an application.
#[derive(Clone, Debug)]
pub struct Metric {
    pub machine: MachineId,
    /// When it was published (the report lists metrics in this order,
    /// then by machine).
    pub time: elvis_kernel::Time,
    pub app: Option<u32>,
    pub name: String,
    pub value: f64,
}

/// A counter shared across machines (the Elvis `capture` app's
/// `counter=` option).
#[derive(Default)]
pub struct Counter {
    pub value: u64,
    pub waiters: Vec<TaskId>,
}

impl World {
    pub fn new(seed: u64) -> Self {
        World {
            hosts: Hosts::new(seed),
            tasks: TaskTable::default(),
            counters: BTreeMap::new(),
            metrics: Vec::new(),
            spawned: Vec::new(),
            flows: Vec::new(),
        }
    }

    /// Marks the machines listed in `crashed` as crashed (their sockets
    /// closed, frames to them dropped) and their pending tasks as crashed;
    /// returns those tasks so that the caller drops their futures.
    pub fn mark_crashed(&mut self) -> Vec<TaskId> {
        let mut dead = Vec::new();
        for (m, msg) in std::mem::take(&mut self.hosts.sched.crashed) {
            // A crashed machine counts its own drops (`stack::dhcp::fanout`).
            self.hosts.stack.fanout.touch();
            let machine = &mut self.hosts.machines[m as usize];
            if machine.crashed {
                continue;
            }
            machine.crashed = true;
            // Its connections end here: keep their records for the report.
            for slot in machine.sockets.iter_mut() {
                if let elvis_stack::endpoint::SocketSlot::Tcp(t) = slot {
                    self.hosts.obs.conns.end(t.id, m, &mut t.tcb, t.life);
                }
            }
            machine.sockets.clear();
            if let Some(e) = machine.ext.as_deref_mut() {
                e.tcp = Default::default();
                e.free_hint = 0;
            }
            let now = self.hosts.now();
            for (i, meta) in self.tasks.meta.iter_mut().enumerate() {
                if meta.machine == m && meta.state == TaskState::Pending {
                    meta.state = TaskState::Crashed;
                    self.hosts.sched.wakeups.retire(i as TaskId);
                    dead.push(i as TaskId);
                    if meta.child {
                        // Its application's own task reports the crash.
                        continue;
                    }
                    self.tasks.last_end = Some(now);
                    self.tasks
                        .errors
                        .push((i as TaskId, format!("machine crashed: {msg}"), now));
                }
            }
        }
        dead
    }
}

thread_local! {
    /// The running world. `ManuallyDrop`, so that the slot has no
    /// destructor: a thread-local with one is registered on first use and
    /// every access checks that state first (a call per socket operation,
    /// 13 instructions), while one without is a plain load. The slot is
    /// empty outside [`install`] … [`uninstall`]; a thread that ends in
    /// between (a panic escaping a run) leaks its world instead of
    /// dropping it.
    static WORLD: ManuallyDrop<RefCell<Option<Box<World>>>> =
        const { ManuallyDrop::new(RefCell::new(None)) };
}

/// Why the world could not be reached from application code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unavailable {
    /// No simulation is running on this thread.
    NotRunning,
    /// The world is already borrowed (a socket call made from inside
    /// another one, e.g. from a `Drop` during a system call).
    Busy,
}

/// Runs `f` with the running world, if any.
pub fn try_with_world<R>(f: impl FnOnce(&mut World) -> R) -> Result<R, Unavailable> {
    WORLD.with(|cell| {
        let mut guard = cell.try_borrow_mut().map_err(|_| Unavailable::Busy)?;
        let world = guard.as_mut().ok_or(Unavailable::NotRunning)?;
        Ok(f(world))
    })
}

/// Runs `f` with the running world, or `unavailable` when there is none
/// (or it is already borrowed), and returns what either returns.
///
/// The same as [`try_with_world`] for callers whose result is large (a
/// socket call returning a received message): the result is built in
/// place, not wrapped in a `Result` and moved out again.
#[inline]
pub fn with_world_or<R>(
    f: impl FnOnce(&mut World) -> R,
    unavailable: impl FnOnce(Unavailable) -> R,
) -> R {
    WORLD.with(|cell| match cell.try_borrow_mut() {
        Ok(mut guard) => match guard.as_mut() {
            Some(world) => f(world),
            None => unavailable(Unavailable::NotRunning),
        },
        Err(_) => unavailable(Unavailable::Busy),
    })
}

/// Runs `f` with this thread's world cell itself (for the run loop, which
/// borrows it once per turn and lets go of it while a task is polled).
pub fn with_cell<R>(f: impl FnOnce(&RefCell<Option<Box<World>>>) -> R) -> R {
    WORLD.with(|cell| f(cell))
}

/// Puts `world` into this thread's slot for the duration of a run.
///
/// Returns the world back if another simulation is already running here.
pub fn install(world: Box<World>) -> Result<(), Box<World>> {
    WORLD.with(|cell| {
        let Ok(mut guard) = cell.try_borrow_mut() else {
            return Err(world);
        };
        if guard.is_some() {
            return Err(world);
        }
        *guard = Some(world);
        Ok(())
    })
}

/// Takes the world back out of this thread's slot.
pub fn uninstall() -> Option<Box<World>> {
    WORLD.with(|cell| cell.borrow_mut().take())
}
