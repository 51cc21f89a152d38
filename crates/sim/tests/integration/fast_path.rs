//! The routers' fast path (`stack::forward::forward_frame`) changes
//! nothing but speed: a busy routed scenario run with and without it gives
//! the same report and byte-identical captures.

use crate::common::*;
use elvis_sim::stack::route::Metric;
use elvis_sim::{EchoOptions, Host, Message, Simulation};
use std::net::Ipv4Addr;
use std::time::Duration;

const MBPS10: u64 = 10_000_000;

/// The address of side `side` of network `i`: 10.0.i.side.
fn ip(i: u8, side: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, i, side)
}

/// ```text
///  a ──l0── r1 ──l1── r2 ══lan══ r3 ──l3── r4 ──l4── b
///  (corrupting)  (MTU 600)  ║             (NIC of 2)
///                           c
/// ```
/// `a` sends UDP datagrams of random sizes to `b` (which echoes a little
/// back) and to a network nobody routes; `c` sends to `a`; `a` pings `b`
/// with every TTL from 1 to 6. Returns the report, the capture of every
/// network and the frames routers forwarded on their fast path.
fn scenario(fast: bool, dir: &TempDir) -> (String, Vec<Vec<u8>>, u64) {
    let mut sim = Simulation::new(11);
    sim.set_forward_fast_path(fast);
    let mut l0 = link("l0", Some(MBPS10), 5_000);
    l0.corruption = 0.03;
    let mut l1 = link("l1", Some(MBPS10), 5_000);
    l1.mtu = 600;
    let lan = switch("lan", Some(MBPS10), 1_000);
    let mut l3 = link("l3", Some(MBPS10 / 4), 0);
    l3.txqueuelen = 2;
    let l4 = link("l4", Some(MBPS10), 0);
    let nets: Vec<_> = [l0, l1, lan, l3, l4]
        .into_iter()
        .map(|c| sim.add_network(c))
        .collect();
    let (a, b, c) = (
        sim.add_machine("a"),
        sim.add_machine("b"),
        sim.add_machine("c"),
    );
    let r = sim
        .add_group("r", Some(4), elvis_sim::Protocols::UDP)
        .unwrap();
    sim.attach(a, nets[0], ip(0, 1)).unwrap();
    for k in 0..4u32 {
        sim.attach(r + k, nets[k as usize], ip(k as u8, 2)).unwrap();
        sim.attach(r + k, nets[k as usize + 1], ip(k as u8 + 1, 1))
            .unwrap();
        sim.set_forwarding(r + k, true).unwrap();
    }
    sim.attach(b, nets[4], ip(4, 2)).unwrap();
    sim.attach(c, nets[2], ip(2, 3)).unwrap();
    sim.set_auto_routes(Some(Metric::Hops));
    // Nobody routes 172.16/16 beyond r1: Net Unreachable from there.
    sim.add_route(a, Ipv4Addr::new(172, 16, 0, 0), 16, ip(0, 2))
        .unwrap();
    // A flow route on r2 for a → b (the path the LPM would take too).
    sim.add_flow_route(r + 1, ip(0, 1), ip(4, 2), None, ip(2, 2))
        .unwrap();
    sim.spawn_daemon(b, "echo", |host: Host| async move {
        let sock = host.udp_bind(7)?;
        loop {
            let (msg, from) = sock.recv_from().await?;
            sock.send_to(msg.slice(..msg.len().min(40)), from).await?;
        }
    });
    sim.spawn(a, "udp", |host: Host| async move {
        let sock = host.udp_bind(0)?;
        for i in 0..300u32 {
            let len = (host.random_u64() % 1400) as usize;
            let to = if i % 17 == 0 {
                sa(Ipv4Addr::new(172, 16, 0, 9), 7)
            } else {
                sa(ip(4, 2), 7)
            };
            sock.send_to(vec![i as u8; len], to).await?;
            host.sleep(Duration::from_nanos(host.random_u64() % 400_000))
                .await;
        }
        Ok(())
    });
    sim.spawn(c, "udp", |host: Host| async move {
        let sock = host.udp_bind(0)?;
        for i in 0..100u32 {
            sock.send_to(vec![i as u8; 300], sa(ip(0, 1), 9)).await?;
            host.sleep(Duration::from_micros(300)).await;
        }
        Ok(())
    });
    sim.spawn(a, "ping", |host: Host| async move {
        let sock = host.icmp_socket(7)?;
        for ttl in 1..=6u8 {
            let opts = EchoOptions::ttl(ttl);
            sock.send_echo_with(ip(4, 2), u16::from(ttl), opts, Message::zeros(56))?;
            host.sleep(Duration::from_millis(1)).await;
        }
        Ok(())
    });
    let files = sim.capture_pcap(&dir.0).expect("open pcap files");
    let report = sim.run();
    assert!(sim.pcap_error().is_none(), "{:?}", sim.pcap_error());
    for reason in [
        "bad_checksum(ipv4)",
        "ttl_exceeded",
        "no_route",
        "nic_queue_full",
    ] {
        assert!(dropped(&report, reason) > 0, "no {reason}: {report:?}");
    }
    let pcaps = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    (report.deterministic_json(), pcaps, sim.fast_forwarded())
}

#[test]
fn the_fast_path_gives_the_same_report_and_captures_as_the_full_path() {
    let (d1, d2) = (TempDir::new("fast"), TempDir::new("slow"));
    let (fast_json, fast_pcaps, fast_n) = scenario(true, &d1);
    let (slow_json, slow_pcaps, slow_n) = scenario(false, &d2);
    assert_eq!(slow_n, 0);
    assert!(fast_n > 500, "only {fast_n} frames took the fast path");
    assert_eq!(fast_json, slow_json);
    assert_eq!(fast_pcaps.len(), 5);
    for (i, (f, s)) in fast_pcaps.iter().zip(&slow_pcaps).enumerate() {
        assert!(f.len() > 24 + 16 * 50, "network {i} holds few frames");
        assert!(f == s, "the capture of network {i} differs");
    }
}
