//! Crashes, stuck applications, scale, and time limits.

use crate::common::*;
use elvis_sim::report::End;
use elvis_sim::{Host, Protocols, RunLimits, Simulation, Time};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_panicking_application_crashes_only_its_own_machine() {
    let mut sim = Simulation::new(1);
    let lan = sim.add_network(switch("lan", Some(100_000_000), 1_000));
    let crasher = sim.add_machine("crasher");
    let a = sim.add_machine("a");
    let b = sim.add_machine("b");
    for (i, m) in [crasher, a, b].into_iter().enumerate() {
        sim.attach(m, lan, nth_ip(i as u32)).unwrap();
    }
    sim.spawn(crasher, "faulty", |host: Host| async move {
        let _sock = host.udp_bind(7)?;
        if host.now() == Time::ZERO {
            panic!("deliberate boom {}", 6 * 7);
        }
        Ok(())
    });
    sim.spawn(crasher, "bystander", |host: Host| async move {
        host.sleep(Duration::from_secs(1)).await;
        Ok(())
    });
    sim.spawn(b, "echo", |host: Host| async move {
        let sock = host.udp_bind(7)?;
        let (msg, from) = sock.recv_from().await?;
        sock.send_to(msg, from).await?;
        Ok(())
    });
    sim.spawn(a, "client", |host: Host| async move {
        let sock = host.udp_bind(0)?;
        host.sleep(Duration::from_millis(1)).await;
        for _ in 0..3 {
            sock.send_to(b"are you there".to_vec(), sa(nth_ip(0), 7))
                .await?;
        }
        sock.send_to(b"ping".to_vec(), sa(nth_ip(2), 7)).await?;
        assert_eq!(sock.recv().await?.to_vec(), b"ping");
        Ok(())
    });
    let report = sim.run();
    assert!(!report.success());
    assert_eq!(report.failures(), 2, "both apps of the crashed machine");
    let app = |name: &str| {
        report
            .applications
            .iter()
            .find(|r| r.application == name)
            .unwrap_or_else(|| panic!("{name} not in the report"))
    };
    assert_eq!(app("faulty").crashed, 1);
    assert_eq!(app("bystander").crashed, 1);
    assert_eq!(app("echo").finished, 1);
    assert_eq!(app("client").finished, 1);
    assert_eq!(report.problems.len(), 2, "{:?}", report.problems);
    for p in &report.problems {
        assert_eq!(p.machine, "crasher");
        assert_eq!(format!("{:?}", p.state), "Crashed");
        assert!(p.message.contains("deliberate boom 42"), "{}", p.message);
    }
    assert_eq!(dropped(&report, "machine_crashed"), 3);
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["problems"][0]["state"], "crashed");
}

const CHILD_ENV: &str = "ELVIS_SIM_IT_WATCHDOG_CHILD";
const CHILD_TEST: &str = "robustness::watchdog_child_spins_forever";

/// Run only by [`a_machine_stuck_in_an_endless_loop_is_named_by_the_watchdog`]
/// in a child process: a machine that never yields.
#[test]
#[ignore = "run in a child process by the watchdog test"]
fn watchdog_child_spins_forever() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let mut sim = Simulation::new(1);
    let lan = sim.add_network(switch("lan", None, 0));
    let first = sim.add_group("worker", Some(5), Protocols::UDP).unwrap();
    for i in 0..5 {
        sim.attach(first + i, lan, nth_ip(i)).unwrap();
        sim.spawn(first + i, "work", move |host: Host| async move {
            host.sleep(Duration::from_millis(u64::from(i))).await;
            if i == 3 {
                let mut x = 0u64;
                while x != u64::MAX {
                    x = std::hint::black_box(x);
                }
            }
            Ok(())
        });
    }
    sim.set_watchdog(Duration::from_millis(300), |name| {
        eprintln!("stuck: {name}");
        std::process::exit(4);
    });
    sim.run();
    eprintln!("the run returned: the watchdog did not fire");
    std::process::exit(1);
}

#[test]
fn a_machine_stuck_in_an_endless_loop_is_named_by_the_watchdog() {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", CHILD_TEST, "--nocapture", "--include-ignored"])
        .env(CHILD_ENV, "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the child test");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the watchdog did not end the child within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(4), "stderr: {stderr}");
    assert!(stderr.contains("stuck: worker-3"), "stderr: {stderr}");
}

#[test]
fn a_hundred_thousand_senders_reach_one_capture_machine() {
    const N: u32 = 100_000;
    let mut sim = Simulation::new(1);
    let lan = sim.add_network(switch("lan", None, 0));
    let capture = sim.add_machine("capture");
    sim.attach(capture, lan, nth_ip(0)).unwrap();
    let first = sim.add_group("sender", Some(N), Protocols::UDP).unwrap();
    // The capture machine starts first (as the NDL builder does): it
    // must be bound before the zero-latency datagrams arrive.
    let seen = std::rc::Rc::new(std::cell::RefCell::new(vec![false; N as usize]));
    let rx = seen.clone();
    sim.spawn(capture, "capture", move |host: Host| async move {
        let sock = host.udp_bind(7)?;
        for _ in 0..N {
            let (msg, from) = sock.recv_from().await?;
            let i = u32::from_be_bytes(msg.to_vec().try_into().unwrap());
            assert_eq!(*from.ip(), nth_ip(1 + i));
            let mut seen = rx.borrow_mut();
            assert!(!seen[i as usize], "{i} twice");
            seen[i as usize] = true;
        }
        Ok(())
    });
    for i in 0..N {
        sim.attach(first + i, lan, nth_ip(1 + i)).unwrap();
        sim.spawn(first + i, "send", move |host: Host| async move {
            let sock = host.udp_bind(0)?;
            sock.send_to(i.to_be_bytes().to_vec(), sa(nth_ip(0), 7))
                .await?;
            Ok(())
        });
    }
    let start = Instant::now();
    let report = sim.run();
    let wall = start.elapsed();
    assert_success(&report);
    assert!(seen.borrow().iter().all(|&s| s));
    assert_eq!(report.packets.udp_delivered, u64::from(N));
    assert_eq!(report.machines, u64::from(N) + 1);
    assert!(wall < Duration::from_secs(20), "took {wall:?}");
}

#[test]
fn a_time_limit_stops_the_run_at_exactly_that_instant() {
    let mut sim = Simulation::new(1);
    let lan = sim.add_network(switch("lan", None, 0));
    let m = sim.add_machine("sleeper");
    sim.attach(m, lan, nth_ip(0)).unwrap();
    sim.spawn(m, "nap", |host: Host| async move {
        host.sleep(Duration::from_secs(10)).await;
        host.publish("woke_at_ns", host.now().as_nanos() as f64);
        Ok(())
    });
    let limit = Time::from_nanos(1_000_000_001);
    let r = sim.run_with(RunLimits { until: Some(limit) }, &mut |_| {});
    assert_eq!(r.end, End::TimeLimit);
    assert_eq!(r.sim_time_ns, 1_000_000_001);
    assert_eq!(r.waiting(), 1);
    assert!(!r.success());
    assert_eq!(r.problems.len(), 1);
    assert_eq!(r.problems[0].machine, "sleeper");
    assert_eq!(r.problems[0].application, "nap");
    assert_eq!(format!("{:?}", r.problems[0].state), "Pending");
    assert!(r.problems[0].message.contains("waiting"));
    // An event exactly at the limit still happens.
    let r = sim.run_with(
        RunLimits {
            until: Some(Time::from_secs(10)),
        },
        &mut |_| {},
    );
    assert_eq!(r.sim_time_ns, 10_000_000_000);
    assert_success(&r);
    assert_eq!(r.metrics[0].value, 1e10);
    // Nothing is left: another run ends idle at once.
    let r = sim.run();
    assert_eq!(r.end, End::Idle);
    assert_eq!(r.sim_time_ns, 10_000_000_000);
}

/// The report sums tasks by (group, application) in creation order of
/// the groups and first-spawn order of the names, however the tasks were
/// spawned; checked against a `BTreeMap` model, with enough entries that
/// the report's lookup index is built.
#[test]
fn the_report_sums_applications_by_group_and_name_in_creation_order() {
    use std::collections::BTreeMap;
    let mut sim = Simulation::new(1);
    let groups: Vec<_> = (0..20)
        .map(|g| {
            sim.add_group(&format!("g{g}"), Some(3), Protocols::UDP)
                .unwrap()
        })
        .collect();
    let names = ["x", "y", "z"];
    let mut model: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    // Spawned from the last group back, names rotating: neither order is
    // the report's.
    for (g, &first) in groups.iter().enumerate().rev() {
        for i in 0..3u32 {
            let n = (g + i as usize) % names.len();
            sim.spawn(first + i, names[n], |_h: Host| async move { Ok(()) });
            *model.entry((19 - g, n)).or_default() += 1;
        }
    }
    let r = sim.run();
    // Group g was created g-th; name n was first spawned by group 19.
    let name_rank = |n: usize| (n + 3 - 19 % 3) % 3;
    let expect: Vec<(String, String, u64)> = model
        .iter()
        .map(|(&(rg, n), &c)| (19 - rg, n, c))
        .map(|(g, n, c)| {
            (
                (g, name_rank(n)),
                (format!("g{g}"), names[n].to_string(), c),
            )
        })
        .collect::<BTreeMap<_, _>>()
        .into_values()
        .collect();
    let got: Vec<(String, String, u64)> = r
        .applications
        .iter()
        .map(|a| (a.group.clone(), a.application.clone(), a.finished))
        .collect();
    assert_eq!(got, expect);
    assert!(r.applications.iter().all(|a| a.instances == a.finished));
}

/// A task that never ends: it sleeps 1 µs at a time, forever.
fn ticker(sim: &mut Simulation) {
    let lan = sim.add_network(switch("lan", None, 0));
    let m = sim.add_machine("ticker");
    sim.attach(m, lan, nth_ip(0)).unwrap();
    sim.spawn(m, "tick", |host: Host| async move {
        // Ends only when virtual time does.
        while host.now() < Time::MAX {
            host.sleep(Duration::from_micros(1)).await;
        }
        Ok(())
    });
}

#[test]
fn a_set_interrupt_flag_stops_the_run_at_the_current_event_and_a_later_run_goes_on() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let mut sim = Simulation::new(1);
    ticker(&mut sim);
    let flag = Arc::new(AtomicBool::new(false));
    sim.set_interrupt_flag(flag.clone());
    let setter = {
        let flag = flag.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            flag.store(true, Ordering::Relaxed);
        })
    };
    let start = Instant::now();
    let r = sim.run();
    setter.join().unwrap();
    assert_eq!(r.end, End::Interrupted);
    assert!(start.elapsed() < Duration::from_secs(20));
    assert!(r.sim_time_ns > 0, "the run had started");
    assert_eq!(r.waiting(), 1);
    // Cleared, the flag lets the same run go on from where it stopped.
    flag.store(false, Ordering::Relaxed);
    let until = Time::from_nanos(r.sim_time_ns + 1_000_000);
    let r2 = sim.run_with(RunLimits { until: Some(until) }, &mut |_| {});
    assert_eq!(r2.end, End::TimeLimit);
    assert_eq!(r2.sim_time_ns, until.as_nanos());
}

#[test]
fn a_wall_limit_ends_an_endless_run() {
    let mut sim = Simulation::new(1);
    ticker(&mut sim);
    sim.set_wall_limit(Duration::from_millis(100));
    let start = Instant::now();
    let r = sim.run();
    assert_eq!(r.end, End::WallLimit);
    assert!(start.elapsed() < Duration::from_secs(20));
    assert!(r.sim_time_ns > 0);
}
