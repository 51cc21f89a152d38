//! TCP's one-pass send and receive paths (`stack::tcp::dst`,
//! `stack::tcp::rx`) change nothing but speed: busy TCP scenarios run with
//! and without them give the same report and byte-identical captures.

use crate::common::*;
use elvis_sim::stack::route::Metric;
use elvis_sim::{Host, Protocols, Simulation};
use std::net::Ipv4Addr;

const MBPS: u64 = 1_000_000;

/// The bytes at stream offset `at..at + n` of every transfer.
fn pattern(at: u64, n: usize) -> Vec<u8> {
    (0..n as u64).map(|i| ((at + i) * 7 % 251) as u8).collect()
}

/// Sends `bytes` of the pattern from `from` to `to:port`.
fn client(sim: &mut Simulation, from: u32, to: Ipv4Addr, port: u16, bytes: u64) {
    sim.spawn(from, "client", move |h: Host| async move {
        let s = h.tcp_connect(sa(to, port)).await?;
        let mut sent = 0u64;
        while sent < bytes {
            let n = (bytes - sent).min(20_000);
            sent += s.send(pattern(sent, n as usize)).await? as u64;
        }
        Ok(())
    });
}

/// Receives one connection on `port` and publishes the bytes that came
/// intact (in order, as sent) as the metric `intact-PORT`.
fn server(sim: &mut Simulation, on: u32, port: u16) {
    sim.spawn(on, "server", move |h: Host| async move {
        let l = h.tcp_listen(port, 4)?;
        let (s, _) = l.accept().await?;
        let (mut got, mut intact) = (0u64, 0u64);
        loop {
            let m = s.recv(1 << 16).await?;
            if m.is_empty() {
                break;
            }
            if m.to_vec() == pattern(got, m.len()) {
                intact += m.len() as u64;
            }
            got += m.len() as u64;
        }
        h.publish(&format!("intact-{port}"), intact as f64);
        Ok(())
    });
}

/// ```text
///   a ──l0 (lossy, corrupting)── r ══lan (MTU 600)══ b
///                                        ║
///                                        c (real ARP)
/// ```
/// `a` sends to `b` (the router fragments a's 1500-byte datagrams for the
/// LAN), `b` sends to `a`, `c` (which resolves neighbours with ARP) sends
/// to `b`, and `a` connects to a closed port of `b` (a RST). Returns the
/// report, the capture of both networks and the segments sent and
/// received on the one-pass paths.
fn scenario(fast: bool, dir: &TempDir) -> (String, Vec<Vec<u8>>, (u64, u64)) {
    let mut sim = Simulation::new(5);
    sim.set_tcp_fast_path(fast);
    let mut l0 = link("l0", Some(200 * MBPS), 20_000);
    l0.loss = 0.01;
    l0.corruption = 0.02;
    let mut lan = switch("lan", Some(100 * MBPS), 2_000);
    lan.mtu = 600;
    let (l0, lan) = (sim.add_network(l0), sim.add_network(lan));
    let host = Protocols::UDP_TCP;
    let arp = Protocols {
        arp: true,
        ..Protocols::UDP_TCP
    };
    let a = sim.add_group("a", None, host).unwrap();
    let b = sim.add_group("b", None, host).unwrap();
    let c = sim.add_group("c", None, arp).unwrap();
    let r = sim.add_group("r", None, Protocols::UDP).unwrap();
    let ip = |n: u8, h: u8| Ipv4Addr::new(10, 0, n, h);
    sim.attach(a, l0, ip(0, 1)).unwrap();
    sim.attach(r, l0, ip(0, 2)).unwrap();
    sim.attach(r, lan, ip(1, 1)).unwrap();
    sim.attach(b, lan, ip(1, 2)).unwrap();
    sim.attach(c, lan, ip(1, 3)).unwrap();
    sim.set_forwarding(r, true).unwrap();
    sim.set_auto_routes(Some(Metric::Hops));
    server(&mut sim, b, 80);
    server(&mut sim, a, 81);
    server(&mut sim, b, 82);
    client(&mut sim, a, ip(1, 2), 80, 300_000);
    client(&mut sim, b, ip(0, 1), 81, 200_000);
    client(&mut sim, c, ip(1, 2), 82, 200_000);
    sim.spawn(a, "refused", move |h: Host| async move {
        assert!(h.tcp_connect(sa(ip(1, 2), 9)).await.is_err());
        Ok(())
    });
    let files = sim.capture_pcap(&dir.0).expect("open pcap files");
    let report = sim.run();
    assert_success(&report);
    for (port, bytes) in [(80, 300_000.0), (81, 200_000.0), (82, 200_000.0)] {
        let name = format!("intact-{port}");
        let got = report.metrics.iter().find(|m| m.name == name);
        assert_eq!(got.map(|m| m.value), Some(bytes), "{name}: {report:?}");
    }
    for reason in ["loss", "bad_checksum(tcp)"] {
        assert!(dropped(&report, reason) > 0, "no {reason}: {report:?}");
    }
    let pcaps = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    (report.deterministic_json(), pcaps, sim.tcp_fast_segments())
}

#[test]
fn tcp_fast_paths_give_the_same_report_and_captures_as_the_layered_paths() {
    let (d1, d2) = (TempDir::new("tcp-fast"), TempDir::new("tcp-layered"));
    let (fast_json, fast_pcaps, (sent, received)) = scenario(true, &d1);
    let (slow_json, slow_pcaps, slow_n) = scenario(false, &d2);
    assert_eq!(slow_n, (0, 0));
    assert!(sent > 300, "only {sent} segments sent on the fast path");
    assert!(received > 300, "only {received} received on the fast path");
    assert_eq!(fast_json, slow_json);
    assert_eq!(fast_pcaps.len(), 2);
    for (i, (f, s)) in fast_pcaps.iter().zip(&slow_pcaps).enumerate() {
        assert!(f.len() > 24 + 16 * 300, "network {i} holds few frames");
        assert!(f == s, "the capture of network {i} differs");
    }
}

/// ```text
///        ┌─l1─ r1 ─┐
///   a ───┤         ├══lan══ b
///        └─l2─ r2 ─┘
/// ```
/// `a` streams to `b` through `r1`; between two calls to `run_with` a
/// host route to `b` through `r2` is added. The segments keep the
/// connection's source address (10.0.0.1, on `l1`) as on Linux. Returns
/// the report and the frames sent on `l1` and on `l2` after the change.
fn rerouted(fast: bool) -> (String, u64, u64) {
    let mut sim = Simulation::new(3);
    sim.set_tcp_fast_path(fast);
    let ip = |n: u8, h: u8| Ipv4Addr::new(10, 0, n, h);
    let nets: Vec<_> = ["l1", "l2"]
        .into_iter()
        .map(|n| sim.add_network(link(n, Some(100 * MBPS), 10_000)))
        .collect();
    let lan = sim.add_network(switch("lan", Some(100 * MBPS), 1_000));
    let a = sim.add_group("a", None, Protocols::UDP_TCP).unwrap();
    let b = sim.add_group("b", None, Protocols::UDP_TCP).unwrap();
    let r = sim.add_group("r", Some(2), Protocols::UDP).unwrap();
    for k in 0..2u8 {
        sim.attach(a, nets[usize::from(k)], ip(k, 1)).unwrap();
        sim.attach(r + u32::from(k), nets[usize::from(k)], ip(k, 2))
            .unwrap();
        sim.attach(r + u32::from(k), lan, ip(9, 1 + k)).unwrap();
        sim.set_forwarding(r + u32::from(k), true).unwrap();
    }
    sim.attach(b, lan, ip(9, 9)).unwrap();
    sim.add_route(a, ip(9, 0), 24, ip(0, 2)).unwrap();
    sim.add_route(b, ip(0, 0), 16, ip(9, 1)).unwrap();
    server(&mut sim, b, 80);
    client(&mut sim, a, ip(9, 9), 80, 400_000);
    let until = Some(elvis_sim::Time::from_nanos(10_000_000));
    let early = sim.run_with(elvis_sim::RunLimits { until }, &mut |_| {});
    let sent = |net: usize| early.networks[net].stats.frames_sent;
    let before = (sent(0), sent(1));
    assert!(before.0 > 50 && before.1 == 0, "{before:?}");
    sim.add_route(a, ip(9, 9), 32, ip(1, 2)).unwrap();
    let report = sim.run();
    assert_success(&report);
    let got = report.metrics.iter().find(|m| m.name == "intact-80");
    assert_eq!(got.map(|m| m.value), Some(400_000.0), "{report:?}");
    let after = (
        report.networks[0].stats.frames_sent - before.0,
        report.networks[1].stats.frames_sent - before.1,
    );
    (report.deterministic_json(), after.0, after.1)
}

#[test]
fn a_route_added_between_runs_reroutes_an_established_connection() {
    let (fast_json, l1_fast, l2_fast) = rerouted(true);
    let (slow_json, l1_slow, l2_slow) = rerouted(false);
    assert_eq!(fast_json, slow_json);
    assert_eq!((l1_fast, l2_fast), (l1_slow, l2_slow));
    // After the change a's segments leave on l2 (r1 still sends the
    // ACKs of b that took the old path back to a on l1, and b's ACKs
    // keep going through r1).
    assert!(
        l2_fast > 100,
        "only {l2_fast} frames on l2 after the change"
    );
}
