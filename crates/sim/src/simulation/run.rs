//! The run loop of a [`Simulation`]: task polls and batches of events in
//! order, the reaping of crashed machines, the stop checks and progress
//! calls, the watchdog thread, and the panic hook that turns a panic into
//! the crash of its machine.

use super::{Progress, RunLimits, Simulation};
use crate::executor::{AppResult, TaskId, TaskState};
use crate::machine::MachineId;
use crate::realtime::Pacer;
use crate::report::{End, Problem, Report};
use crate::world::{self, World};
use elvis_kernel::Time;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// What one turn of the run loop did.
enum Step {
    /// A task must be polled (task, its machine).
    Poll(TaskId, MachineId),
    /// Events were processed.
    Event,
    /// Events were processed and a machine crashed in the last one.
    Crashed,
    /// A paced run: the next event is due at this wall-clock instant.
    Wait(Instant),
}

/// Most events processed per borrow of the world when no task wakes (so
/// that the progress callback still runs regularly). Events run in exactly
/// the order they would one by one: the batch ends as soon as one wakes a
/// task or crashes a machine.
const EVENT_BATCH: u32 = 64;

/// Takes the first runnable task off the ready queue. (A panic in a
/// poll is the task's machine's, found from the task: `current_machine`
/// is for events.)
fn next_ready(w: &mut World) -> Option<Step> {
    let task = w.hosts.sched.wakeups.pop()?;
    Some(Step::Poll(task, w.tasks.meta[task as usize].machine))
}

/// One turn of the run loop inside the world: the next task woken, if
/// any, else the next events (as many as run without waking a task, up to
/// `EVENT_BATCH`). A paced run (`PACED`, with its `pacer`) stops before
/// an event that is not due yet on the wall clock.
#[inline]
fn run_events<const PACED: bool>(
    w: &mut World,
    until: Time,
    pacer: Option<&mut Pacer>,
) -> Result<Step, End> {
    let mut pacer = pacer;
    if let Some(step) = next_ready(w) {
        return Ok(step);
    }
    for _ in 0..EVENT_BATCH {
        // Only background timers left (DHCP leases): nothing will happen
        // that a run without a time limit waits for.
        let background = w.hosts.sched.background;
        if background > 0 && until == Time::MAX && w.hosts.sched.queue.len() as u64 <= background {
            return Err(End::Idle);
        }
        let next = w.hosts.sched.queue.peek_time();
        if next.is_none_or(|t| t > until) {
            return Err(if w.hosts.sched.queue.is_empty() {
                End::Idle
            } else {
                End::TimeLimit
            });
        }
        if PACED {
            if let (Some(p), Some(t)) = (pacer.as_deref_mut(), next) {
                if let Some(due) = p.check(t) {
                    return Ok(Step::Wait(due));
                }
            }
        }
        let Some((_, ev)) = w.hosts.sched.queue.pop() else {
            return Err(End::Idle);
        };
        w.hosts.sched.current_machine = None;
        if catch_unwind(AssertUnwindSafe(|| w.hosts.handle(ev))).is_err() {
            let msg = elvis_stack::crash::take_panic_message();
            if let Some(m) = w.hosts.sched.current_machine {
                w.hosts.sched.crashed.push((m, msg));
            }
        }
        if !w.hosts.sched.crashed.is_empty() {
            return Ok(Step::Crashed);
        }
        // A woken task runs right away (one borrow of the world per
        // wake-up).
        if let Some(step) = next_ready(w) {
            return Ok(step);
        }
    }
    Ok(Step::Event)
}

/// Waits toward `due`: sleeps until shortly before it (50 ms at most at
/// a time), then yields the processor until it comes. A sleeping thread
/// wakes up to tens of microseconds late; the last stretch is not slept
/// so that an event runs close to its instant.
fn sleep_toward(due: Instant) {
    const SPIN: Duration = Duration::from_micros(200);
    let left = due.saturating_duration_since(Instant::now());
    if left > SPIN {
        std::thread::sleep((left - SPIN).min(Duration::from_millis(50)));
    } else {
        std::thread::yield_now();
    }
}

/// Shared between the run loop and the watchdog thread.
pub(super) struct Heartbeat {
    /// Twice the polls finished, plus one while a poll runs: one store
    /// before and one after each poll.
    ticks: AtomicU64,
    machine: AtomicU32,
    done: AtomicBool,
}

pub(super) struct Watchdog {
    limit: Duration,
    on_stuck: Arc<dyn Fn(&str) + Send + Sync>,
}

impl Heartbeat {
    /// Returns a heartbeat that no watchdog reads (a partition of a
    /// parallel run).
    pub(super) fn unwatched() -> Self {
        Heartbeat {
            ticks: AtomicU64::new(0),
            machine: AtomicU32::new(0),
            done: AtomicBool::new(false),
        }
    }
}

impl Simulation {
    /// Calls `on_stuck(machine name)` from another thread when one poll of an
    /// application (or one event) runs longer than `limit` of wall time: an
    /// application that never yields. The callback usually reports and exits.
    pub fn set_watchdog(
        &mut self,
        limit: Duration,
        on_stuck: impl Fn(&str) + Send + Sync + 'static,
    ) {
        self.watchdog = Some(Watchdog {
            limit,
            on_stuck: Arc::new(on_stuck),
        });
    }

    /// Ends the next runs at the current event, with [`End::Interrupted`],
    /// once `flag` is set (by a signal handler, another thread…). The flag
    /// is read between events, so every frame already started is whole in
    /// the captures.
    pub fn set_interrupt_flag(&mut self, flag: Arc<AtomicBool>) {
        self.stop.flag = Some(flag);
    }

    /// Ends each run, like an interrupt but with [`End::WallLimit`], once
    /// it has taken `limit` of wall-clock time.
    pub fn set_wall_limit(&mut self, limit: Duration) {
        self.stop.wall = Some(limit);
    }

    /// Paces the next runs to the wall clock (or stops pacing): an event
    /// is processed no earlier than its virtual time after the run's start,
    /// and a run with a time limit lasts that long on the wall clock too.
    /// Results are those of an unpaced run; the report's
    /// `performance.realtime` says how well the run kept up (see
    /// [`crate::realtime`]).
    pub fn set_realtime(&mut self, on: bool) {
        self.pacer = on.then(|| crate::realtime::Pacer::new(Time::ZERO));
    }

    /// Runs until nothing is left to happen.
    pub fn run(&mut self) -> Report {
        self.run_with(RunLimits::default(), &mut |_| {})
    }

    /// Runs within `limits`, calling `progress` about every 100 ms of wall
    /// time; returns the report. A later call continues the same run.
    pub fn run_with(&mut self, limits: RunLimits, progress: &mut dyn FnMut(&Progress)) -> Report {
        elvis_stack::crash::install_panic_hook();
        let mut route_error = None;
        if self.w().hosts.stack.routing.dirty {
            route_error = self.build_routes().err();
        }
        if self.w().hosts.part.is_some() {
            // Its world holds one partition's machines up to date only.
            let mut r = self.report(End::Idle);
            r.problems.push(Problem {
                machine: String::new(),
                application: String::new(),
                state: TaskState::Failed,
                message: "a simulation that ran on several threads cannot run again".into(),
            });
            return r;
        }
        let Some(world) = self.world.take() else {
            unreachable!("world is present outside run")
        };
        let group_names: Vec<(MachineId, u32, bool, String)> = world
            .hosts
            .groups
            .iter()
            .map(|g| (g.first, g.len, g.counted, g.name.clone()))
            .collect();
        if let Err(world) = world::install(world) {
            // Another simulation runs on this thread (a nested run).
            self.world = Some(world);
            let mut r = self.report(End::Idle);
            r.problems.push(Problem {
                machine: String::new(),
                application: String::new(),
                state: TaskState::Failed,
                message: "a simulation cannot run inside another on the same thread".into(),
            });
            return r;
        }
        elvis_stack::crash::capture_panics(true);
        let beat = Arc::new(Heartbeat {
            ticks: AtomicU64::new(2 * self.polls),
            machine: AtomicU32::new(0),
            done: AtomicBool::new(false),
        });
        let dog = self
            .watchdog
            .as_ref()
            .map(|d| spawn_watchdog(d, beat.clone(), group_names));
        let start = Instant::now();
        if let Some(p) = self.pacer.as_mut() {
            let now = world::try_with_world(|w| w.hosts.now()).unwrap_or(Time::ZERO);
            p.restart(now);
        }
        let end = self.run_loop(limits, progress, &beat, start);
        crate::executor::set_current_task(None);
        self.wall += start.elapsed();
        beat.done.store(true, Ordering::Relaxed);
        if let Some(h) = dog {
            h.thread().unpark();
            let _ = h.join();
        }
        elvis_stack::crash::capture_panics(false);
        let mut world = world::uninstall().expect("world installed for the run");
        let end_time = world.hosts.now();
        world.hosts.fabric.pcap.close(end_time);
        self.world = Some(world);
        let mut r = self.report(end);
        if let Some(e) = route_error {
            r.problems.push(Problem {
                machine: String::new(),
                application: String::new(),
                state: TaskState::Failed,
                message: e.to_string(),
            });
        }
        r
    }

    pub(super) fn run_loop(
        &mut self,
        limits: RunLimits,
        progress: &mut dyn FnMut(&Progress),
        beat: &Heartbeat,
        start: Instant,
    ) -> End {
        let until = limits.until.unwrap_or(Time::MAX);
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut last_progress = Instant::now();
        let mut since_check = 0u32;
        // The world's cell is found once for the whole run: between two
        // task polls the loop borrows it again (a flag check), without
        // another thread-local lookup or a closure call per turn.
        world::with_cell(|cell| loop {
            // Poll the tasks the last event woke, then process the next
            // events: as many as run without waking a task (up to
            // `EVENT_BATCH`), in one borrow of the world.
            let next = match cell.try_borrow_mut() {
                Ok(mut guard) => match (guard.as_deref_mut(), self.pacer.as_mut()) {
                    (Some(w), None) => run_events::<false>(w, until, None),
                    (Some(w), Some(p)) => run_events::<true>(w, until, Some(p)),
                    (None, _) => Err(End::Idle),
                },
                Err(_) => Err(End::Idle),
            };
            let task = match next {
                Ok(Step::Poll(t, m)) => {
                    beat.machine.store(m, Ordering::Relaxed);
                    Some(t)
                }
                // Batches of events without a wake-up count as turns too,
                // so that a storm of frames still sees the stop checks.
                Ok(Step::Event) => None,
                Ok(Step::Crashed) => {
                    self.reap_crashed();
                    None
                }
                Ok(Step::Wait(due)) => {
                    // Asleep in slices, so that an interrupt or the wall
                    // limit still ends the run within one slice.
                    if let Some(end) = self.stop.reached(start) {
                        return end;
                    }
                    sleep_toward(due);
                    continue;
                }
                Err(end) => {
                    if end == End::TimeLimit && until != Time::MAX {
                        if let Some(end) = self.hold_until(until, start) {
                            return end;
                        }
                        let _ = world::try_with_world(|w| w.hosts.sched.queue.advance_to(until));
                    }
                    return end;
                }
            };
            if let Some(task) = task {
                self.poll_task(task, &mut cx, beat);
            }
            since_check += 1;
            if since_check >= 1024 {
                since_check = 0;
                if let Some(end) = self.stop.reached(start) {
                    return end;
                }
                if last_progress.elapsed() >= Duration::from_millis(100) {
                    last_progress = Instant::now();
                    if let Ok(p) = world::try_with_world(|w| Progress {
                        sim_time: w.hosts.now(),
                        events: w.hosts.sched.queue.popped(),
                        wall: start.elapsed(),
                    }) {
                        progress(&p);
                    }
                }
            }
        })
    }

    /// Holds a paced run until virtual time `until` is due on the wall
    /// clock (a paced run lasts until its limit there too); `Some` when
    /// an interrupt or the wall limit ends it first.
    fn hold_until(&self, until: Time, start: Instant) -> Option<End> {
        let due = self.pacer.as_ref()?.due(until);
        while Instant::now() < due {
            if let Some(end) = self.stop.reached(start) {
                return Some(end);
            }
            sleep_toward(due);
        }
        None
    }

    /// Polls `task` once; a task that ends is retired by
    /// [`Simulation::task_ended`].
    #[inline(always)]
    fn poll_task(&mut self, task: TaskId, cx: &mut Context<'_>, beat: &Heartbeat) {
        // Polled in place: a task that stays pending costs no move of its
        // future out of the table and back.
        let Some(fut) = self.futures[task as usize].as_mut() else {
            return;
        };
        // Only this thread writes the ticks: plain stores, not atomic
        // read-modify-writes (a locked instruction per poll).
        beat.ticks.store(2 * self.polls + 1, Ordering::Relaxed);
        crate::executor::set_current_task(Some(task));
        let result = catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx)));
        self.polls += 1;
        beat.ticks.store(2 * self.polls, Ordering::Relaxed);
        if crate::executor::take_spawned_note() {
            self.adopt_spawned();
        }
        if matches!(result, Ok(Poll::Pending)) {
            // Nothing to drop; forgetting it spares a call of the drop
            // glue, which the compiler otherwise makes for every poll.
            std::mem::forget(result);
        } else {
            self.task_ended(task, result);
        }
    }

    /// Takes the futures of the tasks spawned during the last poll
    /// (`Host::spawn`), whose records are already made, into the table.
    #[inline(never)]
    fn adopt_spawned(&mut self) {
        let spawned = world::try_with_world(|w| std::mem::take(&mut w.spawned)).unwrap_or_default();
        for (id, fut) in spawned {
            debug_assert_eq!(id as usize, self.futures.len());
            self.futures.push(Some(fut));
        }
    }

    /// Records how `task` ended (its poll returned `result`), drops its
    /// future and reaps a machine it crashed.
    #[inline(never)]
    fn task_ended(&mut self, task: TaskId, result: std::thread::Result<Poll<AppResult>>) {
        let outcome = match result {
            Ok(Poll::Pending) => return,
            Ok(Poll::Ready(Ok(()))) => (TaskState::Finished, None),
            Ok(Poll::Ready(Err(e))) => (TaskState::Failed, Some(e.message)),
            Err(_) => (
                TaskState::Crashed,
                Some(elvis_stack::crash::take_panic_message()),
            ),
        };
        // Dropping the future runs its sockets' destructors, which reach
        // the world.
        self.futures[task as usize] = None;
        let crashed = world::try_with_world(|w| {
            crate::executor::set_current_task(None);
            let now = w.hosts.now();
            let meta = &mut w.tasks.meta[task as usize];
            if !meta.child {
                w.tasks.last_end = Some(now);
            }
            meta.state = outcome.0;
            w.hosts.sched.wakeups.retire(task);
            let machine = meta.machine;
            if let Some(msg) = outcome.1 {
                w.tasks.errors.push((task, msg.clone(), now));
                if outcome.0 == TaskState::Crashed {
                    w.hosts.sched.crashed.push((machine, msg));
                }
            }
            !w.hosts.sched.crashed.is_empty()
        });
        if crashed == Ok(true) {
            self.reap_crashed();
        }
    }

    /// Marks the machines that crashed since the last call, and their
    /// pending tasks; drops those tasks' futures (their sockets close).
    fn reap_crashed(&mut self) {
        let dead = world::try_with_world(World::mark_crashed).unwrap_or_default();
        if dead.is_empty() {
            return;
        }
        for t in &dead {
            // Dropping runs socket destructors, which reach the world.
            drop(self.futures[*t as usize].take());
        }
    }
}

fn spawn_watchdog(
    d: &Watchdog,
    beat: Arc<Heartbeat>,
    groups: Vec<(MachineId, u32, bool, String)>,
) -> std::thread::JoinHandle<()> {
    let limit = d.limit;
    let on_stuck = d.on_stuck.clone();
    std::thread::spawn(move || {
        let mut last = beat.ticks.load(Ordering::Relaxed);
        let mut stuck_for = Duration::ZERO;
        let tick = Duration::from_millis(50).min(limit);
        while !beat.done.load(Ordering::Relaxed) {
            // Parked, not asleep: the end of the run unparks the thread,
            // so joining it does not wait out the tick.
            let looked = Instant::now();
            std::thread::park_timeout(tick);
            let now = beat.ticks.load(Ordering::Relaxed);
            // The same poll (odd: one is running) since the last look.
            if now == last && now % 2 == 1 {
                stuck_for += looked.elapsed();
                if stuck_for >= limit {
                    let m = beat.machine.load(Ordering::Relaxed);
                    let name = groups
                        .iter()
                        .find(|(first, len, _, _)| m >= *first && m < first + len)
                        .map(|(first, _, counted, name)| {
                            if *counted {
                                format!("{name}-{}", m - first)
                            } else {
                                name.clone()
                            }
                        })
                        .unwrap_or_else(|| format!("#{m}"));
                    on_stuck(&name);
                    return;
                }
            } else {
                stuck_for = Duration::ZERO;
                last = now;
            }
        }
    })
}
