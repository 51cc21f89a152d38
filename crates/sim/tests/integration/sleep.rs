//! Timers of `Sleep`: one dropped before its deadline (the timeout of a
//! wait that ended first) does not wake its task when the deadline comes;
//! one still awaited does, even at the same deadline.

use crate::common::*;
use elvis_sim::{Host, Simulation, Time};
use std::time::Duration;

/// 100 waits of 1 ms, each under a 1 s timeout: the timeouts' wake-ups
/// are cancelled, so the run is the waits' events and polls only.
#[test]
fn a_timeout_that_did_not_fire_does_not_wake_its_task() {
    let mut sim = Simulation::new(1);
    let m = sim.add_machine("m");
    sim.spawn(m, "waiter", |host: Host| async move {
        for _ in 0..100 {
            let deadline = host.now() + Duration::from_secs(1);
            let r = host
                .timeout_at(deadline, host.sleep(Duration::from_millis(1)))
                .await;
            assert_eq!(r, Some(()));
        }
        host.sleep(Duration::from_secs(10)).await;
        Ok(())
    });
    let report = sim.run();
    assert_success(&report);
    assert_eq!(report.apps_ended_ns, Some(100 * 1_000_000 + 10_000_000_000));
    // Per wait: its timer event and a poll; the timeouts' 100 events are
    // still popped, but poll nothing. Woken by each, the task would be
    // polled 100 more times.
    assert!(
        report.events <= 2 + 2 * 100 + 100 + 4,
        "{} events",
        report.events
    );
}

/// A wait cancelled at deadline t does not swallow another wait's
/// wake-up at the same t.
#[test]
fn a_cancelled_wake_up_leaves_another_at_the_same_deadline() {
    let mut sim = Simulation::new(1);
    let m = sim.add_machine("m");
    sim.spawn(m, "waiter", |host: Host| async move {
        let t = Time::from_nanos(1_000_000_000);
        // The inner sleep (to t + 1 s) is armed, then dropped when the
        // timeout at t fires: its wake-up at t + 1 s is cancelled.
        let r = host.timeout_at(t, host.sleep(Duration::from_secs(2))).await;
        assert_eq!(r, None);
        host.sleep_until(t + Duration::from_secs(1)).await;
        assert_eq!(host.now(), t + Duration::from_secs(1));
        Ok(())
    });
    let report = sim.run();
    assert_success(&report);
    assert_eq!(report.apps_ended_ns, Some(2_000_000_000));
}
