//! Tasks spawned by running tasks (`Host::spawn`): each runs when what it
//! waits for happens, belongs to its application, and ends with its
//! machine.

use crate::common::*;
use elvis_sim::{Host, Simulation, Time};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// 100 children, child `i` sleeping `i` ms: each wakes exactly at its
/// time, and the run polls each child twice (start, wake-up), never the
/// other waiting children.
#[test]
fn children_run_concurrently_and_are_polled_only_when_woken() {
    const N: u64 = 100;
    let mut sim = Simulation::new(1);
    let m = sim.add_machine("m");
    let woke: Rc<RefCell<Vec<(u64, Time)>>> = Rc::default();
    let log = woke.clone();
    sim.spawn(m, "parent", move |host: Host| async move {
        for i in (1..=N).rev() {
            let log = log.clone();
            host.spawn(async move {
                host.sleep(Duration::from_millis(i)).await;
                log.borrow_mut().push((i, host.now()));
                host.publish("child_done", i as f64);
            })?;
        }
        Ok(())
    });
    let report = sim.run();
    assert_success(&report);
    let woke = woke.borrow();
    let expected: Vec<(u64, Time)> = (1..=N)
        .map(|i| (i, Time::from_nanos(i * 1_000_000)))
        .collect();
    assert_eq!(*woke, expected);
    // One application instance in the report; the children's metrics are
    // its metrics.
    assert_eq!(report.applications.len(), 1);
    assert_eq!(report.applications[0].instances, 1);
    assert_eq!(report.applications[0].finished, 1);
    let child_metrics = report
        .metrics
        .iter()
        .filter(|x| x.name == "child_done" && x.application == "parent")
        .count();
    assert_eq!(child_metrics as u64, N);
    // Events: the parent's start and poll, then per child a poll to
    // start, its timer and a poll when woken. Polling every waiting
    // child on every wake-up would cost N * (N + 1) / 2 polls.
    assert!(report.events <= 2 + 3 * N + 2, "{} events", report.events);
    // The parent ended at time zero; the children later: when the
    // applications ended is the parent's end.
    assert_eq!(report.apps_ended_ns, Some(0));
}

/// A crash ends the machine's children with it, reported once, as its
/// application's crash.
#[test]
fn a_crash_ends_the_children_with_their_application() {
    let mut sim = Simulation::new(1);
    let m = sim.add_machine("m");
    let ran = Rc::new(RefCell::new(0u32));
    let r = ran.clone();
    sim.spawn(m, "parent", move |host: Host| async move {
        for _ in 0..3 {
            let r = r.clone();
            host.spawn(async move {
                host.sleep(Duration::from_secs(10)).await;
                *r.borrow_mut() += 1;
            })?;
        }
        host.sleep(Duration::from_secs(1)).await;
        panic!("deliberate");
    });
    let report = sim.run();
    assert_eq!(*ran.borrow(), 0, "no child ran after the crash");
    assert_eq!(report.failures(), 1);
    assert_eq!(report.applications[0].crashed, 1);
    assert_eq!(report.problems.len(), 1);
}

/// Outside a run there is no world to spawn into: a clear error, no
/// panic.
#[test]
fn spawning_outside_a_run_is_an_error() {
    let host = Host { machine: 0 };
    assert!(host.spawn(async {}).is_err());
}
