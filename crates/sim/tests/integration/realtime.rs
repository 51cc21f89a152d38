//! Runs paced to the wall clock (`Simulation::set_realtime`): they take
//! their virtual time in wall time, change no result, report how well they
//! kept up, and still stop on a wall-clock limit while waiting.

use crate::common::*;
use elvis_sim::report::End;
use elvis_sim::{Host, RunLimits, Simulation, Time};
use std::net::SocketAddrV4;
use std::time::{Duration, Instant};

/// Five datagrams 100 ms apart across a 10 ms link, echoed back.
fn echoes(realtime: bool) -> (elvis_sim::Report, Duration) {
    let (mut sim, a, b) = pair(7, link("l", Some(100_000_000), 10_000_000));
    sim.spawn(b, "echo", move |h: Host| async move {
        let s = h.udp_bind(7)?;
        for _ in 0..5 {
            let (m, from) = s.recv_from().await?;
            s.send_to(m, from).await?;
        }
        Ok(())
    });
    sim.spawn(a, "ask", move |h: Host| async move {
        let s = h.udp_bind(0)?;
        for i in 0..5u64 {
            h.sleep_until(Time::from_nanos(i * 100_000_000)).await;
            s.send_to(
                elvis_sim::Message::zeros(100),
                SocketAddrV4::new(nth_ip(1), 7),
            )
            .await?;
            s.recv_from().await?;
            h.publish("rtt_end_ns", h.now().as_nanos() as f64);
        }
        Ok(())
    });
    sim.set_realtime(realtime);
    let t0 = Instant::now();
    let r = sim.run();
    (r, t0.elapsed())
}

#[test]
fn a_paced_run_takes_its_virtual_time_and_changes_nothing() {
    let (paced, wall) = echoes(true);
    let (free, _) = echoes(false);
    assert_success(&paced);
    // The last answer comes back at 400 ms + one round trip.
    let end = paced.apps_ended_ns.expect("ended");
    assert!(end > 400_000_000, "{end}");
    assert!(wall >= Duration::from_nanos(end), "{wall:?} for {end} ns");
    // Byte for byte the same report, wall-clock measurements aside.
    assert_eq!(paced.deterministic_json(), free.deterministic_json());
    let rt = paced
        .performance
        .realtime
        .expect("a paced run reports its pacing");
    assert_eq!(rt.tolerance_ns, 1_000_000);
    assert!(free.performance.realtime.is_none());
}

/// 100,000 one-nanosecond sleeps: 0.1 ms of virtual time that no machine
/// runs in 0.1 ms of wall time. The run is reported behind, not slowed in
/// silence.
#[test]
fn a_run_that_cannot_keep_up_is_reported() {
    let mut sim = Simulation::new(1);
    let m = sim.add_machine("m");
    sim.spawn(m, "busy", move |h: Host| async move {
        for _ in 0..100_000 {
            h.sleep(Duration::from_nanos(1)).await;
        }
        Ok(())
    });
    sim.set_realtime(true);
    let r = sim.run();
    assert_success(&r);
    assert_eq!(r.sim_time_ns, 100_000);
    let rt = r.performance.realtime.expect("paced");
    assert!(rt.fell_behind >= 1 && rt.late_events >= 1, "{rt:?}");
    assert!(rt.max_lag_ns > rt.tolerance_ns, "{rt:?}");
}

/// A paced run waiting for an event 10 s away still ends on its 100 ms
/// wall-clock limit, and a time limit is held on the wall clock too.
#[test]
fn waiting_ends_on_the_wall_limit_and_the_time_limit_is_paced() {
    let mut sim = Simulation::new(1);
    let m = sim.add_machine("m");
    sim.spawn(m, "sleeper", move |h: Host| async move {
        h.sleep(Duration::from_secs(10)).await;
        Ok(())
    });
    sim.set_realtime(true);
    sim.set_wall_limit(Duration::from_millis(100));
    let t0 = Instant::now();
    let r = sim.run();
    assert_eq!(r.end, End::WallLimit);
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());

    let mut sim = Simulation::new(1);
    let m = sim.add_machine("m");
    sim.spawn(m, "sleeper", move |h: Host| async move {
        h.sleep(Duration::from_secs(10)).await;
        Ok(())
    });
    sim.set_realtime(true);
    let t0 = Instant::now();
    let r = sim.run_with(
        RunLimits {
            until: Some(Time::from_nanos(200_000_000)),
        },
        &mut |_| {},
    );
    assert_eq!(r.end, End::TimeLimit);
    assert_eq!(r.sim_time_ns, 200_000_000);
    assert!(
        t0.elapsed() >= Duration::from_millis(200),
        "{:?}",
        t0.elapsed()
    );
}
