//! Queue disciplines in running simulations: an explicit drop-tail
//! reproduces the default queues exactly, a token bucket paces a burst at
//! its rate (closed-form departure times), and a router's RED queue
//! drops early, or with ECN marks ECT frames with CE and a correct header
//! checksum (checked by the receiving stack and by tshark).

use crate::common::*;
use elvis_sim::qdisc::{Limit, QdiscConfig, RedConfig, TokenBucketConfig};
use elvis_sim::{Host, NetworkConfig, Report, SimError, Simulation};
use std::net::Ipv4Addr;
use std::path::PathBuf;

/// `senders` machines each send one datagram at t = 0 to a sink across a
/// 10 Mbit/s switch whose ports run `qdisc`; returns the report.
fn incast(queue: Option<u32>, qdisc: Option<QdiscConfig>) -> Report {
    let mut sim = Simulation::new(3);
    let mut cfg = switch("lan", Some(10_000_000), 10_000);
    cfg.queue = queue;
    cfg.qdisc = qdisc.map(Box::new);
    let lan = sim.add_network(cfg);
    let sink = sim.add_machine("sink");
    sim.attach(sink, lan, nth_ip(0)).unwrap();
    let first = sim
        .add_group("sender", Some(40), elvis_sim::Protocols::UDP)
        .unwrap();
    sim.spawn_daemon(sink, "sink", move |host: Host| async move {
        let sock = host.udp_bind(7)?;
        loop {
            sock.recv().await?;
        }
    });
    for i in 0..40 {
        sim.attach(first + i, lan, nth_ip(1 + i)).unwrap();
        sim.spawn(first + i, "send", |host: Host| async move {
            let sock = host.udp_bind(0)?;
            sock.send_to(vec![1; 64], sa(nth_ip(0), 7)).await?;
            Ok(())
        });
    }
    let r = sim.run();
    assert_success(&r);
    r
}

#[test]
fn an_explicit_drop_tail_reproduces_the_default_queues_exactly() {
    let default = incast(Some(10), None);
    let explicit = incast(
        None,
        Some(QdiscConfig::DropTail {
            limit: Limit::Packets(10),
        }),
    );
    assert_eq!(default.deterministic_json(), explicit.deterministic_json());
    // The sink's switch port took 1 onto the wire, queued 10, dropped 29.
    let port = default
        .queues
        .iter()
        .find(|q| q.direction == "switch" && q.machine == "sink")
        .expect("the sink's switch port is listed");
    assert_eq!(
        (port.enqueued, port.dropped, port.max_packets),
        (11, 29, 10)
    );
    assert_eq!(port.dropped_by.get("queue_full"), Some(&29));
    assert_eq!(port.discipline, "droptail");
}

#[test]
fn a_token_bucket_on_a_nic_paces_a_burst_at_its_rate() {
    let (bps, lat, payload, n) = (100_000_000u64, 1_000_000u64, 1000usize, 20u64);
    let frame = udp_frame_len(payload) as u64;
    let (rate, burst) = (1_000_000u64, 3 * frame);
    let (mut sim, a, b) = pair(1, link("l", Some(bps), lat));
    let tbf = QdiscConfig::TokenBucket(TokenBucketConfig {
        rate_bps: rate,
        burst_bytes: burst,
        limit: Limit::Packets(100),
    });
    sim.set_qdisc(a, 0, tbf).unwrap();
    let arrivals = log::<u64>();
    let rx = arrivals.clone();
    sim.spawn_daemon(b, "sink", move |host: Host| async move {
        let sock = host.udp_bind(7)?;
        loop {
            sock.recv().await?;
            rx.borrow_mut().push(host.now().as_nanos());
        }
    });
    sim.spawn(a, "burst", move |host: Host| async move {
        let sock = host.udp_bind(0)?;
        for _ in 0..n {
            sock.send_to(vec![0; payload], sa(nth_ip(1), 7)).await?;
        }
        Ok(())
    });
    let report = sim.run();
    assert_success(&report);
    // Frame i may start once (i + 1)·frame − burst bytes of tokens have
    // accrued at `rate`, and not before the wire is free.
    let ser = ser_ns(frame as usize, bps);
    let mut free = 0;
    let want: Vec<u64> = (0..n)
        .map(|i| {
            let tokens = ((i + 1) * frame).saturating_sub(burst);
            let t = (u128::from(tokens) * 8_000_000_000).div_ceil(u128::from(rate)) as u64;
            let start = t.max(free);
            free = start + ser;
            start + ser + lat
        })
        .collect();
    assert_eq!(*arrivals.borrow(), want);
    // After the bucket's three frames, one frame's worth of tokens apart.
    assert_eq!(want[4] - want[3], ser_ns(frame as usize, rate));
}

/// `a —100 Mbit/s— r —10 Mbit/s— b`: `a` sends `n` datagrams of 1000
/// bytes with TOS `tos` at `b`, one every `gap_ns` (0: as fast as its NIC
/// goes); `r`'s interface onto the slow link runs RED (5 to 15 frames,
/// max_p 0.1, `w_q` 0.002, ECN as `ecn`). Returns the report, the
/// datagrams `b` got, and the pcaps when `dir` is given.
fn red_bottleneck(
    ecn: bool,
    tos: u8,
    gap_ns: u64,
    dir: Option<&TempDir>,
) -> (Report, u64, Vec<PathBuf>) {
    let n = 3000u64;
    let mut sim = Simulation::new(7);
    let fast = sim.add_network(link("fast", Some(100_000_000), 10_000));
    let slow = sim.add_network(link("bottleneck", Some(10_000_000), 1_000_000));
    let (a, r, b) = (
        sim.add_machine("a"),
        sim.add_machine("r"),
        sim.add_machine("b"),
    );
    let ip = |x: u8, y: u8| Ipv4Addr::new(10, 0, x, y);
    sim.attach(a, fast, ip(0, 1)).unwrap();
    sim.attach(r, fast, ip(0, 2)).unwrap();
    sim.attach(r, slow, ip(1, 1)).unwrap();
    sim.attach(b, slow, ip(1, 2)).unwrap();
    sim.set_forwarding(r, true).unwrap();
    sim.set_default_gateway(a, ip(0, 2)).unwrap();
    sim.set_default_gateway(b, ip(1, 1)).unwrap();
    let mut red = RedConfig::packets(5.0, 15.0, 0.1);
    red.ecn = ecn;
    sim.set_qdisc(r, 1, QdiscConfig::Red(red)).unwrap();
    let got = log::<u64>();
    let rx = got.clone();
    sim.spawn_daemon(b, "sink", move |host: Host| async move {
        let sock = host.udp_bind(7)?;
        loop {
            sock.recv().await?;
            rx.borrow_mut().push(1);
        }
    });
    sim.spawn(a, "blast", move |host: Host| async move {
        let sock = host.udp_bind(0)?;
        sock.set_tos(tos)?;
        for _ in 0..n {
            sock.send_to(vec![0; 1000], sa(ip(1, 2), 7)).await?;
            if gap_ns > 0 {
                host.sleep(std::time::Duration::from_nanos(gap_ns)).await;
            }
        }
        Ok(())
    });
    let files = match dir {
        Some(d) => sim.capture_pcap(&d.0).unwrap(),
        None => Vec::new(),
    };
    let report = sim.run();
    assert_success(&report);
    let received = got.borrow().len() as u64;
    // Every datagram is either delivered or dropped by the RED queue.
    let q = red_queue(&report);
    assert_eq!(q.enqueued + q.dropped, n, "{q:?}");
    assert_eq!(received + q.dropped, n);
    assert_eq!(
        report.packets.dropped_total, q.dropped,
        "{:?}",
        report.packets
    );
    (report, received, files)
}

fn red_queue(r: &Report) -> &elvis_sim::report::QueueReport {
    r.queues
        .iter()
        .find(|q| q.network == "bottleneck" && q.machine == "r")
        .expect("r's bottleneck queue is listed")
}

#[test]
fn a_red_router_queue_drops_early_and_holds_the_queue_between_its_thresholds() {
    // 1042-byte frames every 758 µs: 11 Mbit/s into a 10 Mbit/s link.
    let (report, received, _) = red_bottleneck(false, 0, 758_000, None);
    let q = red_queue(&report);
    assert_eq!(q.discipline, "red");
    assert_eq!(q.marked, 0);
    // Only early drops: the average never reached max_th and the buffer
    // (60 frames) never filled.
    assert_eq!(q.dropped_by.len(), 1, "{q:?}");
    assert!(q.dropped_by["red_early"] > 0, "{q:?}");
    assert!(q.max_packets < 60, "{q:?}");
    assert!(q.mean_packets > 5.0 && q.mean_packets < 15.0, "{q:?}");
    // RED sheds the excess: b gets about what the link carries (10/11).
    let share = received as f64 / 3000.0;
    assert!((share - 10.0 / 11.0).abs() < 0.03, "{share}");
    // The router did not drop at its NIC bound: RED decided.
    assert_eq!(dropped(&report, "nic_queue_full"), 0);
}

#[test]
fn an_unresponsive_overload_drives_red_to_forced_drops() {
    let (report, _, _) = red_bottleneck(false, 0, 0, None);
    let q = red_queue(&report);
    assert!(q.dropped_by["red_early"] > 0, "{q:?}");
    assert!(
        q.dropped_by["red_forced"] > q.dropped_by["red_early"],
        "{q:?}"
    );
}

#[test]
fn red_with_ecn_marks_ect_frames_instead_of_dropping_them() {
    let (report, received, _) = red_bottleneck(true, 0b10, 0, None);
    let q = red_queue(&report);
    assert!(q.marked > 0, "{q:?}");
    assert_eq!(q.dropped_by.get("red_early"), None, "ECT frames are marked");
    // Marked frames arrive with a good IPv4 checksum (else b drops them).
    assert_eq!(dropped(&report, "bad_checksum(ipv4)"), 0);
    assert!(received >= q.marked);
    // Not ECN-capable (ECN field 00): dropped, not marked, even with ECN.
    let (report, _, _) = red_bottleneck(true, 0, 0, None);
    let q = red_queue(&report);
    assert_eq!(q.marked, 0);
    assert!(q.dropped_by.get("red_early").copied().unwrap_or(0) > 0);
}

#[test]
fn tshark_reads_ce_with_a_good_checksum_on_marked_frames() {
    if !crate::tshark::have_tshark() {
        return;
    }
    let dir = TempDir::new("qdisc-ecn");
    let (report, _, files) = red_bottleneck(true, 0b10, 0, Some(&dir));
    let marked = red_queue(&report).marked as usize;
    let pcap = files
        .iter()
        .find(|f| f.to_string_lossy().contains("bottleneck"))
        .expect("bottleneck pcap");
    let rows = crate::tshark::tshark(
        pcap,
        Some("ip.dsfield.ecn == 3"),
        &["ip.checksum.status", "ip.dsfield.dscp"],
    );
    assert_eq!(rows.len(), marked);
    // Wireshark's checksum status: 1 good, 0 bad.
    assert!(rows.iter().all(|r| r[0] == "1" && r[1] == "0"), "{rows:?}");
    // The rest of what r sent on the bottleneck is still ECT(0).
    let ect = crate::tshark::tshark(pcap, Some("ip.dsfield.ecn == 2"), &["frame.number"]);
    assert_eq!(ect.len() + marked, red_queue(&report).dequeued as usize);
}

#[test]
fn out_of_range_disciplines_are_refused_naming_the_place() {
    let (mut sim, a, _) = pair(1, link("l", Some(10_000_000), 0));
    let bad = RedConfig::packets(15.0, 5.0, 0.1);
    match sim.set_qdisc(a, 0, QdiscConfig::Red(bad)) {
        Err(SimError::BadQdisc { place, message }) => {
            assert_eq!(place, "machine 'a' interface 0");
            assert!(message.starts_with("red_max:"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let tbf = QdiscConfig::TokenBucket(TokenBucketConfig {
        rate_bps: 0,
        burst_bytes: 1500,
        limit: Limit::Unbounded,
    });
    assert!(matches!(
        sim.set_qdisc(a, 3, tbf.clone()),
        Err(SimError::BadQdisc { .. })
    ));
    // On a network config: refused when a machine attaches.
    let mut sim = Simulation::new(1);
    let mut cfg = NetworkConfig::ideal("lan").with_rate(1_000_000, 0);
    cfg.qdisc = Some(Box::new(tbf));
    let lan = sim.add_network(cfg);
    let m = sim.add_machine("m");
    match sim.attach(m, lan, nth_ip(0)) {
        Err(SimError::BadQdisc { place, message }) => {
            assert_eq!(place, "network 'lan'");
            assert!(message.starts_with("rate:"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}
