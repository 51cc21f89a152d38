//! Routers and routing: forwarding timing against the closed form
//! Σ serialization + Σ latency, ICMP errors at the right router with the
//! right codes, longest-prefix match, ECMP within binomial bounds.

use crate::common::*;
use elvis_sim::stack::route::Metric;
use elvis_sim::{EchoOptions, EchoReply, Host, MachineId, Message, Simulation, Time};
use std::net::Ipv4Addr;
use std::time::Duration;

const MBPS100: u64 = 100_000_000;
const LATENCY: u64 = 10_000;
/// An echo request or reply frame with `data` bytes.
fn echo_frame(data: usize) -> usize {
    (ETH_HEADER + IP_HEADER + 8 + data).max(MIN_FRAME)
}
/// A Time Exceeded / Unreachable frame quoting an IP header + 8 bytes.
const ERROR_FRAME: usize = ETH_HEADER + IP_HEADER + 8 + IP_HEADER + 8;

/// The address of side `side` (1 or 2) of link `i`: 10.(i>>8).(i&255).side.
fn link_ip(i: u32, side: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, (i >> 8) as u8, (i & 255) as u8, side)
}

/// `a` — r1 — r2 — … — rn — `b` over n+1 point-to-point links of
/// 100 Mbit/s and 10 µs, with automatic routes. Returns (sim, a, b, first
/// router id); router k (1-based) is `first + k - 1`, and its address
/// towards `a` is `link_ip(k - 1, 2)`.
fn chain(n: u32) -> (Simulation, MachineId, MachineId, MachineId) {
    let mut sim = Simulation::new(5);
    let links: Vec<_> = (0..=n)
        .map(|i| sim.add_network(link(&format!("l{i}"), Some(MBPS100), LATENCY)))
        .collect();
    let a = sim.add_machine("a");
    let b = sim.add_machine("b");
    let first = sim
        .add_group("r", Some(n), elvis_sim::Protocols::UDP)
        .unwrap();
    sim.attach(a, links[0], link_ip(0, 1)).unwrap();
    for k in 0..n {
        let r = first + k;
        sim.attach(r, links[k as usize], link_ip(k, 2)).unwrap();
        sim.attach(r, links[k as usize + 1], link_ip(k + 1, 1))
            .unwrap();
        sim.set_forwarding(r, true).unwrap();
    }
    sim.attach(b, links[n as usize], link_ip(n, 2)).unwrap();
    sim.set_auto_routes(Some(Metric::Hops));
    (sim, a, b, first)
}

/// Sends one echo request from `a` with `opts` and returns what came back
/// (reply or error) and when, relative to the send.
fn probe(
    sim: &mut Simulation,
    a: MachineId,
    to: Ipv4Addr,
    opts: EchoOptions,
    data: usize,
) -> Log<(EchoReply, u64)> {
    let got = log();
    let out = got.clone();
    sim.spawn(a, "probe", move |host: Host| async move {
        let sock = host.icmp_socket(7)?;
        let t0 = host.now();
        sock.send_echo_with(to, 1, opts, Message::zeros(data as u64))?;
        let deadline = t0 + Duration::from_secs(5);
        if let Some(r) = timeout_at(&host, deadline, sock.recv_echo()).await {
            out.borrow_mut()
                .push((r?, host.now().as_nanos() - t0.as_nanos()));
        }
        Ok(())
    });
    got
}

fn ttl(ttl: u8) -> EchoOptions {
    EchoOptions::ttl(ttl)
}

#[test]
fn ping_across_a_router_chain_takes_exactly_the_sum_of_serializations_and_latencies() {
    for n in [1u32, 2, 10, 100, 254] {
        let (mut sim, a, _b, _) = chain(n);
        sim.set_default_ttl(255);
        let data = 56;
        let got = probe(&mut sim, a, link_ip(n, 2), ttl(255), data);
        let report = sim.run();
        assert_success(&report);
        let got = got.borrow();
        assert_eq!(got.len(), 1, "n = {n}");
        let (reply, rtt) = &got[0];
        assert!(reply.error.is_none());
        let hops = 2 * u64::from(n + 1);
        let want = hops * (ser_ns(echo_frame(data), MBPS100) + LATENCY);
        assert_eq!(*rtt, want, "n = {n} routers");
        // The reply left b with TTL 255 and crossed n routers.
        assert_eq!(reply.ttl, 255 - n as u8, "n = {n}");
    }
}

#[test]
fn a_ttl_that_runs_out_brings_time_exceeded_from_exactly_that_router() {
    // 1000 routers: IPv4's TTL (255 at most) runs out at router 255, whose
    // Time Exceeded comes back over the same 255 links.
    let (mut sim, a, _b, first) = chain(1000);
    sim.set_default_ttl(255);
    let data = 32;
    let got = probe(&mut sim, a, link_ip(1000, 2), ttl(255), data);
    let report = sim.run();
    assert_success(&report);
    let got = got.borrow();
    let (reply, rtt) = &got[0];
    let err = reply.error.expect("an ICMP error");
    assert!(err.is_time_exceeded(), "{err:?}");
    assert_eq!(
        reply.from,
        link_ip(254, 2),
        "router 255's address towards a"
    );
    let want = 255 * (ser_ns(echo_frame(data), MBPS100) + LATENCY)
        + 255 * (ser_ns(ERROR_FRAME, MBPS100) + LATENCY);
    assert_eq!(*rtt, want);
    assert_eq!(dropped(&report, "ttl_exceeded"), 1);
    let _ = first;
    let r255 = &report.routers[254];
    assert_eq!(r255.machine, "r-254");
    assert_eq!(r255.interfaces[0].counters.ttl_exceeded, 1);
    assert_eq!(r255.interfaces[0].counters.received, 1);
    let r254 = report.routers[253].interfaces.clone();
    assert_eq!(
        (r254[1].counters.forwarded, r254[0].counters.forwarded),
        (1, 1)
    );
}

#[test]
fn each_ttl_expires_at_the_router_that_many_hops_away() {
    let n = 5;
    let (mut sim, a, _b, _) = chain(n);
    let logs: Vec<_> = (1..=n as u8 + 1)
        .map(|t| {
            let got = log();
            let out = got.clone();
            sim.spawn(a, "trace", move |host: Host| async move {
                let sock = host.icmp_socket(100 + u16::from(t))?;
                sock.send_echo_with(link_ip(n, 2), u16::from(t), ttl(t), Message::new())?;
                let echo = sock.recv_echo().await?;
                out.borrow_mut().push(echo);
                Ok(())
            });
            got
        })
        .collect();
    assert_success(&sim.run());
    for (i, got) in logs.iter().enumerate() {
        let r = &got.borrow()[0];
        if i < n as usize {
            assert!(r.error.unwrap().is_time_exceeded());
            assert_eq!(r.from, link_ip(i as u32, 2), "hop {}", i + 1);
        } else {
            assert!(r.error.is_none(), "the last probe reaches b");
            assert_eq!(r.from, link_ip(n, 2));
        }
        assert_eq!(r.seq, i as u16 + 1);
    }
}

/// a —(MTU 1500)— r —(MTU 576)— b.
fn narrow() -> (Simulation, MachineId) {
    let mut sim = Simulation::new(3);
    let wide = sim.add_network(link("wide", Some(MBPS100), LATENCY));
    let mut cfg = link("narrow", Some(MBPS100), LATENCY);
    cfg.mtu = 576;
    let narrow = sim.add_network(cfg);
    let (a, r, b) = (
        sim.add_machine("a"),
        sim.add_machine("r"),
        sim.add_machine("b"),
    );
    sim.attach(a, wide, link_ip(0, 1)).unwrap();
    sim.attach(r, wide, link_ip(0, 2)).unwrap();
    sim.attach(r, narrow, link_ip(1, 1)).unwrap();
    sim.attach(b, narrow, link_ip(1, 2)).unwrap();
    sim.set_forwarding(r, true).unwrap();
    sim.set_default_gateway(a, link_ip(0, 2)).unwrap();
    sim.set_default_gateway(b, link_ip(1, 1)).unwrap();
    (sim, a)
}

#[test]
fn a_df_datagram_too_big_for_the_next_network_brings_frag_needed_with_its_mtu() {
    let (mut sim, a) = narrow();
    let opts = EchoOptions {
        dont_fragment: true,
        ..EchoOptions::default()
    };
    let got = probe(&mut sim, a, link_ip(1, 2), opts, 1000);
    let report = sim.run();
    assert_success(&report);
    let (reply, _) = &got.borrow()[0];
    let err = reply.error.expect("Fragmentation Needed");
    assert_eq!((err.kind, err.code, err.mtu), (3, 4, 576));
    assert_eq!(reply.from, link_ip(0, 2));
    assert_eq!(dropped(&report, "frag_needed"), 1);
    assert_eq!(report.routers[0].interfaces[0].counters.frag_needed, 1);
}

#[test]
fn a_datagram_without_df_is_fragmented_for_the_smaller_mtu_and_reassembled() {
    let (mut sim, a) = narrow();
    let data = 1000;
    let got = probe(&mut sim, a, link_ip(1, 2), EchoOptions::default(), data);
    let report = sim.run();
    assert_success(&report);
    let (reply, rtt) = &got.borrow()[0];
    assert!(reply.error.is_none());
    assert_eq!(reply.data.len(), data);
    let c = report.routers[0].interfaces[1].counters;
    assert_eq!((c.forwarded, c.fragmented), (1, 1));
    // Out: one 1042-byte frame, then fragments over 576 (the router sends
    // them back to back); back: b fragments itself, r forwards each one.
    let frames = fragment_frames(8 + data, 576);
    let big = ser_ns(echo_frame(data), MBPS100);
    let sers: Vec<u64> = frames.iter().map(|&f| ser_ns(f, MBPS100)).collect();
    let total: u64 = sers.iter().sum();
    // Outbound: the last fragment arrives after the whole train.
    let out = big + LATENCY + total + LATENCY;
    // Inbound: the train over the narrow link; r forwards each fragment
    // as it arrives, queueing behind the previous one on the wide link.
    let mut wide_free = 0u64;
    let mut t = 0u64;
    for s in &sers {
        t += s;
        let arrive = t + LATENCY;
        wide_free = wide_free.max(arrive) + s;
    }
    assert_eq!(*rtt, out + wide_free + LATENCY);
}

#[test]
fn no_route_brings_net_unreachable_from_the_router() {
    let (mut sim, a) = narrow();
    let got = probe(
        &mut sim,
        a,
        Ipv4Addr::new(192, 0, 2, 1),
        EchoOptions::default(),
        8,
    );
    let report = sim.run();
    assert_success(&report);
    let (reply, _) = &got.borrow()[0];
    let err = reply.error.expect("Net Unreachable");
    assert_eq!((err.kind, err.code), (3, 0));
    assert_eq!(reply.from, link_ip(0, 2));
    assert_eq!(report.routers[0].interfaces[0].counters.no_route, 1);
}

#[test]
fn a_host_without_any_route_fails_the_send_with_host_unreachable() {
    let (mut sim, a, _b, _) = chain(1);
    sim.set_auto_routes(None);
    sim.spawn(a, "lost", |host: Host| async move {
        let sock = host.icmp_socket(9)?;
        let r = sock.send_echo(link_ip(1, 2), 1, Message::new());
        assert!(r.is_err(), "{r:?}");
        Ok(())
    });
    assert_success(&sim.run());
}

#[test]
fn the_longest_matching_static_route_wins() {
    // a, r16 and r24 share a LAN; both routers reach `far`, where b is.
    let mut sim = Simulation::new(1);
    let lan = sim.add_network(switch("lan", Some(MBPS100), LATENCY));
    let far = sim.add_network(switch("far", Some(MBPS100), LATENCY));
    let a = sim.add_machine("a");
    let r16 = sim.add_machine("r16");
    let r24 = sim.add_machine("r24");
    let b = sim.add_machine("b");
    sim.attach(a, lan, Ipv4Addr::new(10, 0, 0, 1)).unwrap();
    sim.attach(r16, lan, Ipv4Addr::new(10, 0, 0, 16)).unwrap();
    sim.attach(r24, lan, Ipv4Addr::new(10, 0, 0, 24)).unwrap();
    sim.attach(r16, far, Ipv4Addr::new(10, 1, 2, 16)).unwrap();
    sim.attach(r24, far, Ipv4Addr::new(10, 1, 2, 24)).unwrap();
    sim.attach(b, far, Ipv4Addr::new(10, 1, 2, 5)).unwrap();
    for r in [r16, r24] {
        sim.set_forwarding(r, true).unwrap();
    }
    let via16 = Ipv4Addr::new(10, 0, 0, 16);
    let via24 = Ipv4Addr::new(10, 0, 0, 24);
    sim.add_route(a, Ipv4Addr::new(10, 0, 0, 0), 8, via16)
        .unwrap();
    sim.add_route(a, Ipv4Addr::new(10, 1, 0, 0), 16, via16)
        .unwrap();
    sim.add_route(a, Ipv4Addr::new(10, 1, 2, 0), 24, via24)
        .unwrap();
    sim.set_default_gateway(b, Ipv4Addr::new(10, 1, 2, 16))
        .unwrap();
    let got = probe(
        &mut sim,
        a,
        Ipv4Addr::new(10, 1, 2, 5),
        EchoOptions::default(),
        8,
    );
    let report = sim.run();
    assert_success(&report);
    assert!(got.borrow()[0].0.error.is_none());
    let fwd = |i: usize| report.routers[i].interfaces[1].counters.forwarded;
    assert_eq!((fwd(0), fwd(1)), (0, 1), "the /24 via r24, not the /16");
    let back = report.routers[0].interfaces[0].counters.forwarded;
    assert_eq!(back, 1, "b's reply via its default gateway r16");
}

#[test]
fn static_routes_via_foreign_gateways_or_with_host_bits_are_refused() {
    let (mut sim, a, _b, _) = chain(1);
    let e = sim
        .add_route(
            a,
            Ipv4Addr::new(10, 9, 0, 0),
            16,
            Ipv4Addr::new(10, 0, 1, 1),
        )
        .unwrap_err();
    assert!(e.to_string().contains("none of its networks"), "{e}");
    let e = sim
        .add_route(a, Ipv4Addr::new(10, 9, 0, 1), 16, link_ip(0, 2))
        .unwrap_err();
    assert!(e.to_string().contains("not a network prefix"), "{e}");
    let e = sim
        .add_route(a, Ipv4Addr::new(10, 9, 0, 0), 33, link_ip(0, 2))
        .unwrap_err();
    assert!(e.to_string().contains("not a network prefix"), "{e}");
}

/// a — r0 ={4 parallel routers}= r5 — b, all links; returns the sim, a,
/// and r0's id (its interfaces 1..=4 lead to the four paths).
fn diamond(seed: u64) -> (Simulation, MachineId) {
    let mut sim = Simulation::new(seed);
    let mut ip = 0u32;
    let mut next = || {
        ip += 1;
        link_ip(ip, 1)
    };
    let edge_a = sim.add_network(link("a", Some(MBPS100), LATENCY));
    let edge_b = sim.add_network(link("b", Some(MBPS100), LATENCY));
    let (a, r0, r5, b) = (
        sim.add_machine("a"),
        sim.add_machine("r0"),
        sim.add_machine("r5"),
        sim.add_machine("b"),
    );
    sim.attach(a, edge_a, next()).unwrap();
    sim.attach(r0, edge_a, next()).unwrap();
    let mids = sim
        .add_group("mid", Some(4), elvis_sim::Protocols::UDP)
        .unwrap();
    for k in 0..4 {
        let up = sim.add_network(link(&format!("up{k}"), Some(MBPS100), LATENCY));
        let down = sim.add_network(link(&format!("down{k}"), Some(MBPS100), LATENCY));
        sim.attach(r0, up, next()).unwrap();
        sim.attach(mids + k, up, next()).unwrap();
        sim.attach(mids + k, down, next()).unwrap();
        sim.attach(r5, down, next()).unwrap();
        sim.set_forwarding(mids + k, true).unwrap();
    }
    sim.attach(r5, edge_b, next()).unwrap();
    sim.attach(b, edge_b, next()).unwrap();
    sim.set_forwarding(r0, true).unwrap();
    sim.set_forwarding(r5, true).unwrap();
    sim.set_auto_routes(Some(Metric::Hops));
    sim.spawn_daemon(b, "sink", |host: Host| async move {
        let sock = host.udp_bind(9)?;
        loop {
            sock.recv().await?;
        }
    });
    (sim, a)
}

fn path_counts(report: &elvis_sim::Report) -> Vec<u64> {
    let r0 = report.routers.iter().find(|r| r.machine == "r0").unwrap();
    (1..=4)
        .map(|k| r0.interfaces[k].counters.forwarded)
        .collect()
}

#[test]
fn ecmp_spreads_flows_over_equal_cost_paths_within_binomial_bounds() {
    let flows = 2000u16;
    let (mut sim, a) = diamond(11);
    let b_ip = link_ip(20, 1);
    sim.spawn(a, "flows", move |host: Host| async move {
        for f in 0..flows {
            let sock = host.udp_bind(10_000 + f)?;
            sock.send_to(b"x".to_vec(), sa(b_ip, 9)).await?;
        }
        Ok(())
    });
    let report = sim.run();
    assert_success(&report);
    let counts = path_counts(&report);
    assert_eq!(counts.iter().sum::<u64>(), u64::from(flows));
    for (k, &c) in counts.iter().enumerate() {
        assert_binomial(&format!("path {k}"), c, u64::from(flows), 0.25);
    }
    assert_eq!(report.packets.udp_delivered, u64::from(flows));
}

#[test]
fn ecmp_keeps_every_datagram_of_a_flow_on_one_path() {
    for seed in 0..4 {
        let (mut sim, a) = diamond(seed);
        let b_ip = link_ip(20, 1);
        sim.spawn(a, "one-flow", move |host: Host| async move {
            let sock = host.udp_bind(4242)?;
            for _ in 0..50 {
                sock.send_to(b"x".to_vec(), sa(b_ip, 9)).await?;
                host.sleep(Duration::from_micros(100)).await;
            }
            Ok(())
        });
        let report = sim.run();
        assert_success(&report);
        let mut counts = path_counts(&report);
        counts.sort_unstable();
        assert_eq!(counts, vec![0, 0, 0, 50], "seed {seed}");
    }
}

#[test]
fn hosts_on_one_lan_share_one_routing_table() {
    let mut sim = Simulation::new(1);
    let lan = sim.add_network(switch("lan", None, 0));
    let wan = sim.add_network(link("wan", None, 0));
    let far = sim.add_network(switch("far", None, 0));
    let hosts = sim
        .add_group("h", Some(1000), elvis_sim::Protocols::UDP)
        .unwrap();
    for i in 0..1000 {
        sim.attach(hosts + i, lan, nth_ip(i)).unwrap();
    }
    let (r1, r2, c) = (
        sim.add_machine("r1"),
        sim.add_machine("r2"),
        sim.add_machine("c"),
    );
    sim.attach(r1, lan, Ipv4Addr::new(10, 0, 255, 254)).unwrap();
    sim.attach(r1, wan, Ipv4Addr::new(10, 1, 0, 1)).unwrap();
    sim.attach(r2, wan, Ipv4Addr::new(10, 1, 0, 2)).unwrap();
    sim.attach(r2, far, Ipv4Addr::new(10, 2, 0, 1)).unwrap();
    sim.attach(c, far, Ipv4Addr::new(10, 2, 0, 2)).unwrap();
    sim.set_forwarding(r1, true).unwrap();
    sim.set_forwarding(r2, true).unwrap();
    sim.set_auto_routes(Some(Metric::Hops));
    // 1000 hosts: one shared table; c: one; r1 and r2: one each.
    assert_eq!(sim.build_routes().unwrap(), 4);
    let report = sim.run();
    assert_eq!(report.routing.tables, 4);
    // Hosts: one default route each side; routers: one route each.
    assert_eq!(report.routing.routes, 4);
    let _ = Time::ZERO;
}

/// The address of the middle router `k` of [`diamond`] on its link to r0.
fn diamond_mid(k: u32) -> Ipv4Addr {
    link_ip(4 + 4 * k, 1)
}

#[test]
fn a_flow_route_pins_every_flow_from_src_to_dst_to_its_path() {
    let (mut sim, a) = diamond(11);
    let (a_ip, b_ip) = (link_ip(1, 1), link_ip(20, 1));
    let r0 = a + 1;
    sim.add_flow_route(r0, a_ip, b_ip, None, diamond_mid(2))
        .unwrap();
    // 200 flows (source ports) that ECMP alone spreads over four paths.
    sim.spawn(a, "flows", move |host: Host| async move {
        for f in 0..200 {
            let sock = host.udp_bind(10_000 + f)?;
            sock.send_to(b"x".to_vec(), sa(b_ip, 9)).await?;
        }
        Ok(())
    });
    let report = sim.run();
    assert_success(&report);
    assert_eq!(path_counts(&report), vec![0, 0, 200, 0]);
    assert_eq!(report.packets.udp_delivered, 200);
}

#[test]
fn a_flow_route_for_a_destination_port_wins_over_one_for_any_port() {
    let (mut sim, a) = diamond(3);
    let (a_ip, b_ip) = (link_ip(1, 1), link_ip(20, 1));
    let r0 = a + 1;
    let b = a + 3;
    sim.add_flow_route(r0, a_ip, b_ip, None, diamond_mid(1))
        .unwrap();
    sim.add_flow_route(r0, a_ip, b_ip, Some(10), diamond_mid(3))
        .unwrap();
    sim.spawn_daemon(b, "sink10", |host: Host| async move {
        let sock = host.udp_bind(10)?;
        loop {
            sock.recv().await?;
        }
    });
    sim.spawn(a, "two-ports", move |host: Host| async move {
        let sock = host.udp_bind(5000)?;
        for i in 0..50 {
            let port = if i % 5 < 2 { 10 } else { 9 };
            sock.send_to(b"x".to_vec(), sa(b_ip, port)).await?;
        }
        Ok(())
    });
    let report = sim.run();
    assert_success(&report);
    assert_eq!(path_counts(&report), vec![0, 30, 0, 20]);
    assert_eq!(report.packets.udp_delivered, 50);
}

#[test]
fn flow_routes_via_a_stranger_or_the_router_itself_are_refused() {
    let (mut sim, a) = diamond(1);
    let (a_ip, b_ip) = (link_ip(1, 1), link_ip(20, 1));
    let r0 = a + 1;
    // b is not on any of r0's networks.
    let e = sim.add_flow_route(r0, a_ip, b_ip, None, b_ip).unwrap_err();
    assert!(e.to_string().contains("'r0'"), "{e}");
    assert!(e.to_string().contains("none of its networks"), "{e}");
    let own = link_ip(2, 1);
    let e = sim.add_flow_route(r0, a_ip, b_ip, None, own).unwrap_err();
    assert!(e.to_string().contains("own address"), "{e}");
    assert!(sim.add_flow_route(999, a_ip, b_ip, None, own).is_err());
    assert_eq!(sim.flow_route_count(), 0);
}

/// Sends `bursts` of TTL-1 echo probes from `a` across `chain(1)` (each
/// burst back to back, bursts `gap` apart) under `limit`; returns the
/// ICMP errors that came back per burst and the report.
fn expire_bursts(
    limit: elvis_sim::IcmpRateLimit,
    bursts: &'static [u16],
    gap: Duration,
) -> (Vec<usize>, elvis_sim::Report) {
    let (mut sim, a, _b, _) = chain(1);
    sim.set_icmp_rate_limit(limit);
    let got = log();
    let out = got.clone();
    sim.spawn(a, "expire", move |host: Host| async move {
        let sock = host.icmp_socket(3)?;
        let t0 = host.now();
        for (i, &n) in bursts.iter().enumerate() {
            host.sleep_until(t0 + gap * i as u32).await;
            for seq in 0..n {
                sock.send_echo_with(link_ip(1, 2), seq, ttl(1), Message::new())?;
            }
            let mut errors = 0;
            let deadline = host.now() + Duration::from_millis(100);
            while let Some(r) = timeout_at(&host, deadline, sock.recv_echo()).await {
                assert!(r?.error.unwrap().is_time_exceeded());
                errors += 1;
            }
            out.borrow_mut().push(errors);
        }
        Ok(())
    });
    let report = sim.run();
    assert_success(&report);
    let v = got.borrow().clone();
    (v, report)
}

#[test]
fn a_router_sends_six_time_exceeded_to_one_host_then_one_per_second_like_linux() {
    // Linux: icmp_ratelimit 1000 ms with a burst of XRLIM_BURST_FACTOR = 6
    // per destination; the 50-message machine-wide burst is not reached.
    static BURSTS: [u16; 3] = [20, 3, 10];
    let gap = Duration::from_millis(1500);
    let (got, report) = expire_bursts(Default::default(), &BURSTS, gap);
    // 1.5 s after the first burst emptied the bucket it holds 1.5 errors'
    // worth: one goes; 1.5 s later 0.5 + 1.5 = 2.
    assert_eq!(got, vec![6, 1, 2]);
    assert_eq!(report.packets.icmp_errors_sent, 9);
    assert_eq!(report.packets.icmp_errors_rate_limited, 33 - 9);
    assert_eq!(dropped(&report, "ttl_exceeded"), 33, "every probe expired");
    let (got, report) = expire_bursts(elvis_sim::IcmpRateLimit::OFF, &BURSTS, gap);
    assert_eq!(got, vec![20, 3, 10]);
    assert_eq!(report.packets.icmp_errors_rate_limited, 0);
}

#[test]
fn a_router_sends_a_machine_wide_burst_then_its_rate_like_linux() {
    // Per destination off: the machine-wide bucket (icmp_msgs_burst 10
    // here, so that a burst fits a's 32-frame NIC queue; 1000/s) decides.
    // 30 probes of 60-byte frames arrive 4.8 µs apart, refilling 0.14 of
    // a token meanwhile; 120 ms later the bucket holds 10 again.
    static BURSTS: [u16; 2] = [30, 30];
    let limit = elvis_sim::IcmpRateLimit {
        per_destination: Duration::ZERO,
        burst: 10,
        ..Default::default()
    };
    let (got, report) = expire_bursts(limit, &BURSTS, Duration::from_millis(120));
    assert_eq!(got, vec![10, 10]);
    assert_eq!(report.packets.icmp_errors_rate_limited, 40);
}
