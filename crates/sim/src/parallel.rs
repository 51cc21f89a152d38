//! Parallel, deterministic execution: one run on several threads, with
//! the same report as on one.
//!
//! # How
//! Every thread builds its own copy of the world (`make`, the same
//! scenario and seed) and runs one *partition* of it ([`split`]): the
//! events of its machines and of the networks between them. Partitions
//! meet only at *cut* links, point-to-point links with a latency, where
//! a frame leaves its sender's partition as bytes with its arrival time
//! and the tie-break key its delivery would have had in a sequential run
//! (`elvis_stack::partition`).
//!
//! Synchronization is conservative and exact. The lookahead `L` is the
//! smallest latency of a cut link: a frame sent at `t` arrives at
//! `t + L` or later. All partitions run the window `[T, T + L)` of
//! virtual time, with `T` the earliest event of any partition, then meet
//! at a barrier, take the frames sent to them (each arrives at `T + L`
//! or later) and agree on the next `T` at a second barrier. Events keep
//! their keys, each lane's (a machine's, one side of a link's) from the
//! one partition that schedules on it, so every partition processes its
//! events in the order the sequential run does, and every counter,
//! connection and published value comes out the same.
//!
//! The report merges the partitions' parts in orders that do not depend
//! on how machines interleave within an instant (metrics and problems by
//! time, then machine; connections by opening order), the orders a
//! sequential run's report uses too. Its `performance.parallel` section
//! says how the run was split.
//!
//! A run stays on one thread, and its report says why, when it uses
//! something partitions cannot share: packet captures, TCP or queue
//! traces, DHCP, AODV, PFC, foreign stacks, real-time pacing, shared
//! application counters, workload flows (numbered in one run-wide
//! sequence), or when no link can be cut.
//!
//! # Gaps
//! - Every thread holds a whole copy of the world: memory grows with the
//!   thread count.
//! - The partitions exchange frames as `elvis_message::Message`s in
//!   memory; the records are plain bytes, a time and a key, so partitions
//!   in separate processes (MPI) would need only a transport for them.

mod plan;

pub use plan::{Plan, Verdict};

/// Returns how `sim` would be split over `threads` threads, or why it
/// would run on one.
pub fn split(sim: &Simulation, threads: usize) -> Verdict {
    if sim.paced() {
        return Verdict::Sequential("a run paced to the wall clock runs on one thread".into());
    }
    plan::plan(sim.world_ref(), threads)
}

use crate::report::{End, ParallelReport, Report};
use crate::{Progress, RunLimits, Simulation};
use elvis_kernel::Time;
use elvis_stack::partition::CrossFrame;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// A barrier for a fixed number of threads: it spins a little (windows
/// are short, so the wait usually is too), then sleeps, so that more
/// partitions than free cores still make progress.
struct SpinBarrier {
    n: usize,
    count: AtomicUsize,
    generation: AtomicUsize,
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
}

impl SpinBarrier {
    /// Spins before sleeping (a few microseconds).
    const SPINS: u32 = 4000;

    fn new(n: usize) -> Self {
        SpinBarrier {
            n,
            count: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    fn wait(&self) {
        let gen = self.generation.load(Ordering::Acquire);
        if self.count.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            self.count.store(0, Ordering::Relaxed);
            let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.generation.fetch_add(1, Ordering::Release);
            if self.sleepers.load(Ordering::Relaxed) > 0 {
                self.wake.notify_all();
            }
            return;
        }
        for _ in 0..Self::SPINS {
            if self.generation.load(Ordering::Acquire) != gen {
                return;
            }
            std::hint::spin_loop();
        }
        let mut held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.sleepers.fetch_add(1, Ordering::Relaxed);
        while self.generation.load(Ordering::Acquire) == gen {
            held = self.wake.wait(held).unwrap_or_else(|e| e.into_inner());
        }
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What the partitions share.
struct Shared {
    plan: Plan,
    barrier: SpinBarrier,
    /// Frames for each partition.
    mail: Vec<Mutex<Vec<CrossFrame>>>,
    /// Each partition's next event time (`u64::MAX`: none), by round
    /// parity.
    next: [Vec<AtomicU64>; 2],
    /// Set by the first partition: 1 interrupted, 2 wall limit.
    stop: AtomicU8,
    /// A partition's world could not run (its copy differs).
    failed: AtomicBool,
}

/// How one partition's windows went.
#[derive(Clone, Copy, Default)]
struct Windows {
    count: u64,
    waited: Duration,
    sent: u64,
    received: u64,
}

/// Runs simulation `home` on `threads` threads (see the module
/// documentation) within `limits`, calling `progress` from the first
/// partition about every 100 ms of wall time. `make` builds the copies
/// of `home` the other threads run: the same world, on every call (its
/// traces, captures and limits do not matter; `home`'s apply). With one
/// thread, or a world that cannot be split, this is
/// `home.run_with(limits, progress)` with the reason in the report.
/// `home` holds the whole run's state afterwards, as far as the report
/// needs it.
pub fn run_parallel<F>(
    threads: usize,
    home: &mut Simulation,
    make: F,
    limits: RunLimits,
    progress: &mut dyn FnMut(&Progress),
) -> Report
where
    F: Fn() -> Simulation + Sync,
{
    let plan = match split(home, threads) {
        Verdict::Sequential(why) => {
            let mut r = home.run_with(limits, progress);
            r.performance.parallel = Some(ParallelReport::sequential(threads, why));
            return r;
        }
        Verdict::Parallel(p) => p,
    };
    let parts = plan.parts as usize;
    let shared = Shared {
        barrier: SpinBarrier::new(parts),
        mail: (0..parts).map(|_| Mutex::new(Vec::new())).collect(),
        next: [
            (0..parts).map(|_| AtomicU64::new(u64::MAX)).collect(),
            (0..parts).map(|_| AtomicU64::new(u64::MAX)).collect(),
        ],
        stop: AtomicU8::new(0),
        failed: AtomicBool::new(false),
        plan,
    };
    let until = limits.until.unwrap_or(Time::MAX);
    let built = home.task_count();
    let start = Instant::now();
    let (end, route_error, mine, others) = std::thread::scope(|s| {
        let handles: Vec<_> = (1..parts as u16)
            .map(|me| {
                let (shared, make) = (&shared, &make);
                s.spawn(move || run_copy(make(), me, threads, shared, until))
            })
            .collect();
        home.enter_partition(0, &shared.plan);
        let (end, route_error, w) = drive(home, 0, &shared, until, progress);
        let others: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().expect("a partition's thread ended"))
            .collect();
        (end, route_error, (w, home.events_so_far()), others)
    });
    let wall = start.elapsed().as_secs_f64();
    let mut windows = vec![mine.0];
    let mut events = vec![mine.1];
    for (outcome, w, ev) in others {
        home.absorb(outcome, built);
        windows.push(w);
        events.push(ev);
    }
    let mut r = home.report(end);
    let failed = shared.failed.load(Ordering::Relaxed).then(|| {
        "a partition's copy of the world differed from the first one's: \
         the builder must make the same world on every call"
            .to_string()
    });
    for message in route_error.into_iter().chain(failed) {
        r.problems.push(crate::report::Problem {
            machine: String::new(),
            application: String::new(),
            state: crate::executor::TaskState::Failed,
            message,
        });
    }
    performance(&mut r, threads, &shared.plan, wall, &windows, events);
    r
}

/// Runs partition `me` on its own copy `sim` of the world; returns its
/// outcome, how its windows went and its events.
fn run_copy(
    mut sim: Simulation,
    me: u16,
    threads: usize,
    shared: &Shared,
    until: Time,
) -> (crate::simulation::partition::Outcome, Windows, u64) {
    match plan::plan(sim.world_ref(), threads) {
        Verdict::Parallel(p) if p == shared.plan => {}
        _ => shared.failed.store(true, Ordering::Relaxed),
    }
    sim.enter_partition(me, &shared.plan);
    let (_, _, w) = drive(&mut sim, me, shared, until, &mut |_| {});
    let outcome = sim.outcome(me, &shared.plan);
    (outcome, w, sim.events_so_far())
}

/// Fills the report's `performance` for a run of `wall` seconds split
/// by `plan`.
fn performance(
    r: &mut Report,
    threads: usize,
    plan: &Plan,
    wall: f64,
    windows: &[Windows],
    events: Vec<u64>,
) {
    let per_wall = |x: f64| if wall > 0.0 { x / wall } else { 0.0 };
    let total: u64 = events.iter().sum();
    r.performance.wall_time_s = wall;
    r.performance.events_per_s = per_wall(total as f64);
    r.performance.speedup = per_wall(r.sim_time_ns as f64 / 1e9);
    let waited: f64 = windows.iter().map(|w| w.waited.as_secs_f64()).sum();
    r.performance.parallel = Some(ParallelReport {
        threads: threads as u64,
        partitions: u64::from(plan.parts),
        cut_networks: plan.cut_networks,
        lookahead_ns: plan.lookahead_ns,
        windows: windows[0].count,
        barrier_wait_share: per_wall(waited / f64::from(plan.parts)),
        frames_crossed: windows.iter().map(|w| w.sent).sum(),
        machines_per_partition: plan.machines.clone(),
        events_per_partition: events,
        sequential_because: None,
    });
}

/// Hands the frames partition `me` sent in the last window to their
/// partitions, waits for every partition to do the same, and takes those
/// sent to it.
fn exchange(sim: &mut Simulation, me: u16, shared: &Shared, w: &mut Windows) {
    for (to, frames) in sim.take_outbox().into_iter().enumerate() {
        if !frames.is_empty() {
            w.sent += frames.len() as u64;
            let mut mail = shared.mail[to].lock().expect("mailbox lock");
            mail.extend(frames);
        }
    }
    let t0 = Instant::now();
    shared.barrier.wait();
    w.waited += t0.elapsed();
    let inbox = std::mem::take(&mut *shared.mail[me as usize].lock().expect("mailbox lock"));
    w.received += inbox.len() as u64;
    sim.receive(inbox.into_iter());
}

/// Runs partition `me`'s windows until the run ends; returns how it
/// ended, a route error, and how its windows went.
fn drive(
    sim: &mut Simulation,
    me: u16,
    shared: &Shared,
    until: Time,
    progress: &mut dyn FnMut(&Progress),
) -> (End, Option<String>, Windows) {
    let stop = sim.take_stop();
    let route_error = sim.begin_windows();
    let start = Instant::now();
    let lookahead = shared.plan.lookahead_ns.max(1);
    let mut w = Windows::default();
    let mut last_progress = Instant::now();
    let mut round = 0usize;
    let publish = |round: usize, t: Option<Time>| {
        shared.next[round % 2][me as usize]
            .store(t.map_or(u64::MAX, Time::as_nanos), Ordering::Release);
    };
    let earliest = |round: usize| -> Option<Time> {
        let t = shared.next[round % 2]
            .iter()
            .map(|a| a.load(Ordering::Acquire))
            .min()
            .unwrap_or(u64::MAX);
        (t != u64::MAX).then_some(Time::from_nanos(t))
    };
    publish(round, sim.peek_running());
    let t0 = Instant::now();
    shared.barrier.wait();
    w.waited += t0.elapsed();
    let mut next = earliest(round);
    let end = loop {
        match shared.stop.load(Ordering::Acquire) {
            1 => break End::Interrupted,
            2 => break End::WallLimit,
            _ => {}
        }
        let Some(t) = next else { break End::Idle };
        if t > until {
            sim.advance_to(until);
            break End::TimeLimit;
        }
        let wend = Time::from_nanos(t.as_nanos().saturating_add(lookahead - 1)).min(until);
        sim.run_window(wend, start);
        w.count += 1;
        exchange(sim, me, shared, &mut w);
        round += 1;
        publish(round, sim.peek_running());
        if me == 0 {
            match stop.reached(start) {
                Some(End::Interrupted) => shared.stop.store(1, Ordering::Release),
                Some(End::WallLimit) => shared.stop.store(2, Ordering::Release),
                _ => {}
            }
            if last_progress.elapsed() >= Duration::from_millis(100) {
                last_progress = Instant::now();
                progress(&Progress {
                    sim_time: next.unwrap_or(Time::ZERO),
                    events: sim.events_running(),
                    wall: start.elapsed(),
                });
            }
        }
        let t0 = Instant::now();
        shared.barrier.wait();
        w.waited += t0.elapsed();
        next = earliest(round);
    };
    sim.end_windows(start.elapsed());
    (end, route_error, w)
}
