//! Departure-time FIFOs (`elvis_sim::net`, "Departure-time FIFO"): a
//! drop-tail queue that computes each frame's departure when the frame is
//! queued must give exactly the timing of the evented queue, whose
//! departures are events. Each scenario runs both ways
//! (`Simulation::set_evented_queues`) on unimpaired networks and compares
//! what the applications saw and the run reports.

use crate::common::*;
use elvis_sim::stack::route::Metric;
use elvis_sim::{Host, Message, Protocols, Report, Simulation, Time};
use std::net::Ipv4Addr;

/// Returns the report as JSON without the event count (the one number
/// the two paths are meant to differ in) and the performance figures;
/// with `ties`, also without the queues' peaks (see below).
fn comparable(r: &Report, ties: bool) -> String {
    let mut r = r.clone();
    r.events = 0;
    if ties {
        for q in &mut r.queues {
            (q.max_packets, q.max_bytes) = (0, 0);
        }
    }
    r.deterministic_json()
}

/// Runs `build` with queues evented and not; asserts that the logs and
/// the reports agree; returns the log.
///
/// `ties`: a frame reaches a queue at the very nanosecond the frame
/// ahead of it leaves. The analytic path lets the departure go first
/// (the new frame never waits); the evented path orders the two events
/// by network index, so its peak occupancy may count the new frame as
/// waiting for an instant. That zero-length instant changes no time
/// and no mean, only the peaks.
fn both_ways(
    ties: bool,
    build: impl Fn(bool) -> (Simulation, Log<(u64, usize)>),
) -> Vec<(u64, usize)> {
    let mut out = Vec::new();
    for evented in [true, false] {
        let (mut sim, log) = build(evented);
        let report = sim.run();
        assert_success(&report);
        out.push((
            log.borrow().clone(),
            comparable(&report, ties),
            report.events,
        ));
    }
    let (evented, analytic) = (&out[0], &out[1]);
    assert!(!evented.0.is_empty());
    assert!(evented.0 == analytic.0, "arrivals differ");
    assert!(evented.1 == analytic.1, "reports differ");
    assert!(analytic.2 < evented.2, "no departure event was saved");
    out.swap_remove(0).0
}

/// Spawns a sink on `m`'s UDP port 7 that logs (arrival time, length).
fn sink(sim: &mut Simulation, m: elvis_sim::MachineId, log: &Log<(u64, usize)>) {
    let rx = log.clone();
    sim.spawn_daemon(m, "sink", move |host: Host| async move {
        let sock = host.udp_bind(7)?;
        loop {
            let (data, _) = sock.recv_from().await?;
            rx.borrow_mut().push((host.now().as_nanos(), data.len()));
        }
    });
}

/// Spawns on `from` a sender of 20 bursts of 1 to 7 datagrams of mixed
/// sizes to `to`'s UDP port 7, at times that make frames queue behind
/// each other and let the wire go idle between bursts.
fn bursts(sim: &mut Simulation, from: elvis_sim::MachineId, to: Ipv4Addr) {
    sim.spawn(from, "bursts", move |host: Host| async move {
        let sock = host.udp_bind(0)?;
        for burst in 0..20u64 {
            for i in 0..(burst % 7 + 1) {
                let len = 40 + ((burst * 131 + i * 977) % 1400) as usize;
                sock.send_to(vec![3; len], sa(to, 7)).await?;
            }
            host.sleep(std::time::Duration::from_micros(5_000 + burst * 37))
                .await;
        }
        Ok(())
    });
}

#[test]
fn a_link_delivers_at_the_same_instants_whether_departures_are_events_or_not() {
    // Both ends send bursts smaller than the NIC (no back-pressure) of
    // mixed sizes, at times that make frames queue behind each other and
    // make the wire go idle between bursts.
    let got = both_ways(false, |evented| {
        let (mut sim, a, b) = pair(5, link("l", Some(10_000_000), 250_000));
        sim.set_evented_queues(evented);
        let log = log();
        sink(&mut sim, a, &log);
        sink(&mut sim, b, &log);
        for (from, to) in [(a, nth_ip(1)), (b, nth_ip(0))] {
            bursts(&mut sim, from, to);
        }
        (sim, log)
    });
    assert_eq!(got.len(), 2 * (0..20).map(|b| b % 7 + 1).sum::<usize>());
}

#[test]
fn a_switch_with_contention_and_drops_behaves_the_same_whether_departures_are_events_or_not() {
    // Eight senders burst at one sink through a port of 5 frames: frames
    // meet at the switch, queue and are dropped; ARP broadcasts fan out.
    let got = both_ways(false, |evented| {
        let mut sim = Simulation::new(9);
        sim.set_evented_queues(evented);
        let mut cfg = switch("lan", Some(100_000_000), 20_000);
        cfg.queue = Some(5);
        let lan = sim.add_network(cfg);
        let s = sim.add_machine("sink");
        sim.attach(s, lan, nth_ip(0)).unwrap();
        let log = log();
        sink(&mut sim, s, &log);
        let first = sim.add_group("tx", Some(8), Protocols::UDP).unwrap();
        for i in 0..8u32 {
            sim.attach(first + i, lan, nth_ip(1 + i)).unwrap();
            sim.spawn(first + i, "burst", move |host: Host| async move {
                let sock = host.udp_bind(0)?;
                for round in 0..6u64 {
                    for k in 0..(3 + (u64::from(i) + round) % 9) {
                        let len = 18 + ((u64::from(i) * 389 + k * 211) % 1450) as usize;
                        sock.send_to(vec![i as u8; len], sa(nth_ip(0), 7)).await?;
                    }
                    host.sleep(std::time::Duration::from_micros(150 * (u64::from(i) + 1)))
                        .await;
                }
                Ok(())
            });
        }
        (sim, log)
    });
    assert!(got.len() < 8 * 6 * 3, "the port dropped nothing");
}

/// `a` — r0 — r1 — r2 — `b` over 100 Mbit/s links of 30 µs.
fn router_chain(evented: bool) -> (Simulation, elvis_sim::MachineId, elvis_sim::MachineId) {
    let mut sim = Simulation::new(4);
    sim.set_evented_queues(evented);
    let ip = |i: u32, side: u8| Ipv4Addr::new(10, 0, i as u8, side);
    let links: Vec<_> = (0..4)
        .map(|i| sim.add_network(link(&format!("l{i}"), Some(100_000_000), 30_000)))
        .collect();
    let a = sim.add_group("a", None, Protocols::UDP_TCP).unwrap();
    let b = sim.add_group("b", None, Protocols::UDP_TCP).unwrap();
    let first = sim.add_group("r", Some(3), Protocols::UDP).unwrap();
    sim.attach(a, links[0], ip(0, 1)).unwrap();
    for k in 0..3u32 {
        sim.attach(first + k, links[k as usize], ip(k, 2)).unwrap();
        sim.attach(first + k, links[k as usize + 1], ip(k + 1, 1))
            .unwrap();
        sim.set_forwarding(first + k, true).unwrap();
    }
    sim.attach(b, links[3], ip(3, 2)).unwrap();
    sim.set_auto_routes(Some(Metric::Hops));
    (sim, a, b)
}

#[test]
fn tcp_across_a_router_chain_arrives_at_the_same_instants_whether_departures_are_events_or_not() {
    // A window-limited transfer (the NIC never fills, so no sender waits
    // for room) and the reads of its receiver. Routers forward frames
    // back to back at the rate they arrive: ties (see `both_ways`).
    let got = both_ways(true, |evented| {
        let (mut sim, a, b) = router_chain(evented);
        let log = log();
        let rx = log.clone();
        sim.spawn_daemon(b, "sink", move |host: Host| async move {
            let mut sock = host.tcp_socket()?;
            sock.set_recv_buffer_size(32 * 1024);
            sock.bind(5001)?;
            let (s, _) = sock.listen(1)?.accept().await?;
            loop {
                let got = s.recv(1 << 20).await?;
                if got.is_empty() {
                    return Ok(());
                }
                rx.borrow_mut().push((host.now().as_nanos(), got.len()));
            }
        });
        let to = Ipv4Addr::new(10, 0, 3, 2);
        sim.spawn(a, "send", move |host: Host| async move {
            let s = host.tcp_connect(sa(to, 5001)).await?;
            s.write_all(Message::zeros(3_000_000)).await?;
            Ok(())
        });
        (sim, log)
    });
    assert_eq!(got.iter().map(|g| g.1).sum::<usize>(), 3_000_000);
}

#[test]
fn a_bulk_sender_waiting_for_nic_room_keeps_the_wire_timing_of_the_evented_path() {
    // A large window: the sender's NIC fills and the sender waits for
    // room, woken per frame on the evented path and per batch otherwise.
    // What the receiver sees is the same: the wire never idles while data
    // waits. (The sender's own record, e.g. its RTT samples, may differ:
    // batched segments wait longer in the NIC.)
    let mut logs = Vec::new();
    for evented in [true, false] {
        let (mut sim, a, b) = router_chain(evented);
        let log = log::<(u64, usize)>();
        let rx = log.clone();
        sim.spawn_daemon(b, "sink", move |host: Host| async move {
            let mut sock = host.tcp_socket()?;
            sock.set_recv_buffer_size(1 << 20);
            sock.bind(5001)?;
            let (s, _) = sock.listen(1)?.accept().await?;
            loop {
                let got = s.recv(1 << 20).await?;
                if got.is_empty() {
                    return Ok(());
                }
                rx.borrow_mut().push((host.now().as_nanos(), got.len()));
            }
        });
        let to = Ipv4Addr::new(10, 0, 3, 2);
        sim.spawn(a, "send", move |host: Host| async move {
            let mut sock = host.tcp_socket()?;
            sock.set_send_buffer_size(4 << 20);
            let s = sock.connect(sa(to, 5001)).await?;
            s.write_all(Message::zeros(3_000_000)).await?;
            Ok(())
        });
        let report = sim.run_with(
            elvis_sim::RunLimits {
                until: Some(Time::from_secs(5)),
            },
            &mut |_| {},
        );
        assert_success(&report);
        assert_eq!(report.packets.dropped_total, 0);
        logs.push(log.borrow().clone());
    }
    assert_eq!(logs[0].iter().map(|g| g.1).sum::<usize>(), 3_000_000);
    assert!(logs[0] == logs[1], "arrivals differ");
}

/// Tracing the queues keeps them on the departure-time path, which
/// records the series itself: the series equals the evented path's,
/// point for point, and a traced run is the untraced run.
#[test]
fn queue_traces_are_the_evented_paths_and_change_nothing() {
    let run = |evented: bool, traced: bool| {
        let (mut sim, a, b) = pair(5, link("l", Some(10_000_000), 250_000));
        sim.set_evented_queues(evented);
        if traced {
            sim.trace_queues();
        }
        let log = log();
        sink(&mut sim, b, &log);
        bursts(&mut sim, a, nth_ip(1));
        let report = sim.run();
        assert_success(&report);
        let events = report.events;
        (sim.queue_series(), comparable(&report, false), events)
    };
    let (evented_series, evented_report, _) = run(true, true);
    let (series, report, events) = run(false, true);
    let (untraced, plain_report, plain_events) = run(false, false);
    assert!(untraced.is_empty());
    assert_eq!(series.len(), 1, "{series:?}");
    assert!(series[0].1.len() > 20, "{series:?}");
    assert_eq!(series, evented_series);
    assert_eq!(report, evented_report);
    assert_eq!(report, plain_report);
    assert_eq!(events, plain_events, "tracing added no event");
}

/// Capturing keeps the NICs on the departure-time path, which records
/// each frame when it starts onto the wire, as the evented path does: the
/// capture files are byte for byte the evented path's, in time order,
/// and a captured run is the uncaptured run.
#[test]
fn captures_are_the_evented_paths_and_change_nothing() {
    let run = |evented: bool, dir: Option<&std::path::Path>| {
        let (mut sim, a, b) = pair(5, link("l", Some(10_000_000), 250_000));
        sim.set_evented_queues(evented);
        if let Some(d) = dir {
            sim.capture_pcap(d).unwrap();
        }
        let log = log();
        sink(&mut sim, a, &log);
        sink(&mut sim, b, &log);
        for (from, to) in [(a, nth_ip(1)), (b, nth_ip(0))] {
            bursts(&mut sim, from, to);
        }
        let report = sim.run();
        assert_success(&report);
        (comparable(&report, false), report.events)
    };
    let (ev_dir, an_dir) = (TempDir::new("cap-evented"), TempDir::new("cap-analytic"));
    let (evented, _) = run(true, Some(&ev_dir.0));
    let (captured, events) = run(false, Some(&an_dir.0));
    let (plain, plain_events) = run(false, None);
    let file = |d: &TempDir| std::fs::read(d.0.join("net-l.pcap")).unwrap();
    let (ev, an) = (file(&ev_dir), file(&an_dir));
    assert!(an.len() > 10_000, "{} bytes", an.len());
    assert!(ev == an, "the captures differ");
    assert_eq!(captured, evented);
    assert_eq!(captured, plain);
    assert_eq!(events, plain_events, "capturing added no event");
}

/// Eight senders of ECT(0) datagrams burst at one sink across a switch
/// whose queues (NICs and ports) mark CE at K = 3 frames waiting and drop
/// above 10 (`qdisc::threshold`), with `dir` capturing when given;
/// returns what the sink saw (arrival, length, CE count so far) and the
/// report.
fn marking_switch(
    evented: bool,
    dir: Option<&std::path::Path>,
) -> (Vec<(u64, usize, u64)>, Report) {
    use elvis_sim::qdisc::{Limit, QdiscConfig, ThresholdConfig};
    let mut sim = Simulation::new(11);
    sim.set_evented_queues(evented);
    let mut cfg = switch("lan", Some(100_000_000), 20_000);
    cfg.qdisc = Some(Box::new(QdiscConfig::EcnThreshold(ThresholdConfig {
        k: Limit::Packets(3),
        limit: Limit::Packets(10),
    })));
    let lan = sim.add_network(cfg);
    if let Some(d) = dir {
        sim.capture_pcap(d).unwrap();
    }
    let s = sim.add_machine("sink");
    sim.attach(s, lan, nth_ip(0)).unwrap();
    let log = log::<(u64, usize, u64)>();
    let rx = log.clone();
    sim.spawn_daemon(s, "sink", move |host: Host| async move {
        let sock = host.udp_bind(7)?;
        loop {
            let (data, _) = sock.recv_from().await?;
            let ce = sock.ce_received();
            rx.borrow_mut()
                .push((host.now().as_nanos(), data.len(), ce));
        }
    });
    let first = sim.add_group("tx", Some(8), Protocols::UDP).unwrap();
    for i in 0..8u32 {
        sim.attach(first + i, lan, nth_ip(1 + i)).unwrap();
        sim.spawn(first + i, "burst", move |host: Host| async move {
            let sock = host.udp_bind(0)?;
            sock.set_tos(0b10)?;
            for round in 0..6u64 {
                for k in 0..(3 + (u64::from(i) + round) % 9) {
                    let len = 18 + ((u64::from(i) * 389 + k * 211) % 1450) as usize;
                    sock.send_to(vec![i as u8; len], sa(nth_ip(0), 7)).await?;
                }
                host.sleep(std::time::Duration::from_micros(150 * (u64::from(i) + 1)))
                    .await;
            }
            Ok(())
        });
    }
    let report = sim.run();
    assert_success(&report);
    let got = log.borrow().clone();
    (got, report)
}

/// ECN threshold marking (DCTCP's switch rule) on the departure-time
/// FIFO: the same frames are marked, dropped and delivered at the same
/// instants as on the evented path, the reports agree (marks per queue
/// included) and the captures are byte for byte the same, CE bits
/// included.
#[test]
fn an_ecn_threshold_switch_marks_the_same_frames_whether_departures_are_events_or_not() {
    let (ev_dir, an_dir) = (TempDir::new("ecn-evented"), TempDir::new("ecn-analytic"));
    let (ev_log, ev_report) = marking_switch(true, Some(&ev_dir.0));
    let (an_log, an_report) = marking_switch(false, Some(&an_dir.0));
    let (plain_log, plain_report) = marking_switch(false, None);
    let marked: u64 = an_report.queues.iter().map(|q| q.marked).sum();
    assert!(marked > 0, "nothing was marked");
    assert!(an_report.packets.dropped_total > 0, "nothing was dropped");
    assert!(an_log.last().unwrap().2 > 0, "no CE reached the sink");
    assert!(ev_log == an_log, "arrivals differ");
    assert!(an_log == plain_log, "capturing changed the run");
    assert_eq!(comparable(&ev_report, false), comparable(&an_report, false));
    assert_eq!(
        comparable(&an_report, false),
        comparable(&plain_report, false)
    );
    assert!(
        an_report.events < ev_report.events,
        "no departure event was saved"
    );
    let file = |d: &TempDir| std::fs::read(d.0.join("net-lan.pcap")).unwrap();
    assert!(file(&ev_dir) == file(&an_dir), "the captures differ");
}
