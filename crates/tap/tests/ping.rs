//! Linux's `ping`, in a network namespace behind a TAP machine, reaches a
//! simulated host across five simulated routers, with the round trip the
//! closed form gives (plus the kernel's and the pacing's delays, bounded),
//! and Linux's `tracepath` lists the five routers in order.
//! Needs root, `/dev/net/tun`, `ip` and `ping`; says so and passes
//! without them.
#![forbid(unsafe_code)]

mod common;

use elvis_sim::net::NetworkConfig;
use elvis_sim::stack::route::Metric;
use elvis_sim::{Protocols, RunLimits, Simulation, Time};
use elvis_tap::{add_tap_machine, TapConfig};
use std::net::Ipv4Addr;
use std::process::Command;

/// Routers between the namespace and the simulated host.
const ROUTERS: u32 = 5;
const RATE: u64 = 100_000_000;
const LATENCY_NS: u64 = 1_000_000;
/// An echo frame: Ethernet 14 + IPv4 20 + ICMP 8 + ping's 56 bytes.
const FRAME: u64 = 14 + 20 + 8 + 56;

fn link_ip(i: u32, side: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, 77, i as u8, side)
}

fn link(name: &str) -> NetworkConfig {
    let mut c = NetworkConfig::ideal(name);
    c.kind = elvis_sim::NetworkKind::Link;
    c.bandwidth_bps = Some(RATE);
    c.latency_ns = LATENCY_NS;
    c
}

#[test]
fn linux_ping_crosses_five_simulated_routers_in_the_closed_form_time() {
    if let Some(why) = common::missing(&["ping"]) {
        eprintln!("skipped: {why}");
        return;
    }
    let mut sim = Simulation::new(1);
    let links: Vec<_> = (0..=ROUTERS)
        .map(|i| sim.add_network(link(&format!("l{i}"))))
        .collect();
    let first = sim.add_group("r", Some(ROUTERS), Protocols::UDP).unwrap();
    for k in 0..ROUTERS {
        let r = first + k;
        sim.attach(r, links[k as usize], link_ip(k, 1)).unwrap();
        sim.attach(r, links[k as usize + 1], link_ip(k + 1, 2))
            .unwrap();
        sim.set_forwarding(r, true).unwrap();
    }
    let host = sim.add_group("host", None, Protocols::UDP).unwrap();
    let target = link_ip(ROUTERS, 1);
    sim.attach(host, links[ROUTERS as usize], target).unwrap();
    let ns = format!("elvis-test-{}", std::process::id());
    let cfg = TapConfig {
        device: format!("etap{}", std::process::id() % 100_000),
        netns: Some(ns.clone()),
        prefix: 24,
        gateway: Some(link_ip(0, 1)),
    };
    let guard = match add_tap_machine(&mut sim, "linux", links[0], link_ip(0, 2), &cfg) {
        Ok((_, guard)) => guard,
        // Where TAP devices or namespaces are not allowed (an unprivileged
        // container), say so and pass.
        Err(e) if common::unavailable(&e) => {
            eprintln!("skipped: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    sim.set_auto_routes(Some(Metric::Hops));
    let ping = Command::new("ip")
        .args([
            "netns", "exec", &ns, "ping", "-n", "-c", "5", "-i", "0.2", "-W", "2",
        ])
        .arg(target.to_string())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("ping starts");
    // tracepath (iputils), where installed: each simulated router answers
    // from the address of the link the probe came in on.
    let trace = common::has("tracepath").then(|| {
        Command::new("ip")
            .args(["netns", "exec", &ns, "tracepath", "-n", "-m", "8"])
            .arg(target.to_string())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("tracepath starts")
    });
    let report = sim.run_with(
        RunLimits {
            until: Some(Time::from_nanos(3_000_000_000)),
        },
        &mut |_| {},
    );
    let out = ping.wait_with_output().expect("ping ends");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    eprintln!("{text}");
    assert!(text.contains("5 received"), "{text}");
    // Each way: 6 links of serialization at 100 Mbit/s and 1 ms latency.
    let one_way_ns = (u64::from(ROUTERS) + 1) * (FRAME * 8 * 1_000_000_000 / RATE + LATENCY_NS);
    let closed_ms = 2.0 * one_way_ns as f64 / 1e6;
    // "rtt min/avg/max/mdev = a/b/c/d ms"
    let stats = text
        .lines()
        .find(|l| l.starts_with("rtt"))
        .and_then(|l| l.split('=').nth(1))
        .expect("ping's summary");
    let v: Vec<f64> = stats
        .trim()
        .trim_end_matches(" ms")
        .split('/')
        .map(|x| x.parse().unwrap())
        .collect();
    let (min, avg) = (v[0], v[1]);
    eprintln!("closed form {closed_ms:.3} ms, ping min {min} avg {avg} ms");
    // Never earlier than the closed form (pacing runs no event early);
    // later by at most the read interval, the kernel and the scheduler.
    assert!(min >= closed_ms - 0.05, "min {min} < {closed_ms}");
    assert!(avg <= closed_ms + 10.0, "avg {avg} vs {closed_ms}");
    if let Some(trace) = trace {
        let out = trace.wait_with_output().expect("tracepath ends");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        eprintln!("{text}");
        let hops: Vec<String> = (0..ROUTERS).map(|k| link_ip(k, 1).to_string()).collect();
        for (k, hop) in hops.iter().enumerate() {
            let line = format!("{}:  {hop} ", k + 1);
            assert!(text.contains(&line), "hop {} is not {hop}: {text}", k + 1);
        }
        assert!(
            text.contains(&format!("{}:  {target} ", ROUTERS + 1)) && text.contains("reached"),
            "{text}"
        );
    } else {
        eprintln!("tracepath part skipped: no `tracepath` command");
    }
    let rt = report.performance.realtime.expect("a paced run");
    eprintln!("{rt:?}");
    assert!(guard.stats.from_kernel.get() >= 5 && guard.stats.to_kernel.get() >= 5);
}
