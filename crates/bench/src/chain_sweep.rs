//! `router-chain-sweep`: the router chain of the virtualised-testbed
//! experiment (seed paper, Figs. 12–15) for n = 1, 2, 4, … up to `--max`
//! routers: 100 Mbit/s, 10 µs full-duplex links, hosts at both ends.
//! For each n: one ping (RTT against Σ serialization + Σ latency, to the
//! nanosecond) and one bulk TCP transfer with a 512 KiB receive window
//! (steady-state goodput against min(R·1448/1514, W/RTT)); prints a
//! Markdown table, one row per n, with the wall time of each TCP run.
//!
//! IPv4's TTL allows 254 routers: hosts send with TTL 255 and routers
//! past the 254th keep the TTL (`Simulation::set_ttl_decrement`). The
//! closed forms and the effects behind the small deviations are in
//! `docs/tcp.md` ("Router chain"); the same checks run as integration
//! tests of `elvis-sim` (`chain.rs`).

use elvis_sim::stack::route::Metric;
use elvis_sim::{
    EchoOptions, Host, Message, NetworkConfig, Protocols, RunLimits, Simulation, Time,
};
use std::cell::Cell;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::rc::Rc;
use std::time::Instant;

const RATE: u64 = 100_000_000;
const LATENCY: u64 = 10_000;
const MSS: u64 = 1448;
/// Ethernet 14 + IP 20 + TCP with timestamps 32 + 1448.
const DATA_FRAME: u64 = 1514;
const ACK_FRAME: u64 = 66;
/// An echo request with 56 data bytes: 14 + 20 + 8 + 56.
const ECHO_FRAME: u64 = 98;

fn ser(bytes: u64) -> u64 {
    (bytes * 8 * 1_000_000_000).div_ceil(RATE)
}

fn link_ip(i: u32, side: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, (i >> 8) as u8, (i & 255) as u8, side)
}

/// `a` — n routers — `b`; returns (sim, a, b).
fn chain(n: u32) -> (Simulation, u32, u32) {
    let mut sim = Simulation::new(2);
    sim.set_default_ttl(255);
    let links: Vec<u32> = (0..=n)
        .map(|i| {
            sim.add_network(NetworkConfig {
                kind: elvis_sim::NetworkKind::Link,
                ..NetworkConfig::ideal(format!("l{i}")).with_rate(RATE, LATENCY)
            })
        })
        .collect();
    let a = sim.add_group("a", None, Protocols::UDP_TCP).expect("fresh");
    let b = sim.add_group("b", None, Protocols::UDP_TCP).expect("fresh");
    let first = sim.add_group("r", Some(n), Protocols::UDP).expect("fresh");
    sim.attach(a, links[0], link_ip(0, 1)).expect("address");
    for k in 0..n {
        let r = first + k;
        sim.attach(r, links[k as usize], link_ip(k, 2))
            .expect("address");
        sim.attach(r, links[k as usize + 1], link_ip(k + 1, 1))
            .expect("address");
        sim.set_forwarding(r, true).expect("machine");
        if k >= 254 {
            sim.set_ttl_decrement(r, false).expect("a router");
        }
    }
    sim.attach(b, links[n as usize], link_ip(n, 2))
        .expect("address");
    sim.set_auto_routes(Some(Metric::Hops));
    (sim, a, b)
}

/// One ping a → b; returns the RTT in ns.
fn ping(n: u32) -> u64 {
    let (mut sim, a, _) = chain(n);
    let rtt = Rc::new(Cell::new(0u64));
    let out = rtt.clone();
    let to = link_ip(n, 2);
    sim.spawn(a, "ping", move |host: Host| async move {
        let sock = host.icmp_socket(7)?;
        let t0 = host.now();
        sock.send_echo_with(to, 1, EchoOptions::ttl(255), Message::zeros(56))?;
        sock.recv_echo().await?;
        out.set(host.now().as_nanos() - t0.as_nanos());
        Ok(())
    });
    sim.run();
    rtt.get()
}

/// One bulk transfer a → b with a `window`-byte receive buffer; returns
/// (steady goodput in bit/s over a whole number of RTTs after 15 RTTs,
/// wall seconds).
fn goodput(n: u32, window: usize, rtt_ns: u64) -> (f64, f64) {
    let rtts = 10u64.max(100_000_000u64.div_ceil(rtt_ns));
    let t1 = (15 * rtt_ns).max(50_000_000);
    let t2 = t1 + rtts * rtt_ns;
    let (mut sim, a, b) = chain(n);
    let count = Rc::new(Cell::new(0u64));
    let seen = Rc::new(Cell::new((0u64, 0u64)));
    let c = count.clone();
    sim.spawn_daemon(b, "sink", move |host: Host| async move {
        let mut sock = host.tcp_socket()?;
        sock.set_recv_buffer_size(window);
        sock.bind(5001)?;
        let (s, _) = sock.listen(1)?.accept().await?;
        loop {
            let got = s.recv(1 << 20).await?;
            c.set(c.get() + got.len() as u64);
        }
    });
    let (c, out) = (count.clone(), seen.clone());
    sim.spawn(b, "meter", move |host: Host| async move {
        host.sleep_until(Time::from_nanos(t1)).await;
        let at1 = c.get();
        host.sleep_until(Time::from_nanos(t2)).await;
        out.set((at1, c.get()));
        Ok(())
    });
    let to = SocketAddrV4::new(link_ip(n, 2), 5001);
    sim.spawn_daemon(a, "bulk", move |host: Host| async move {
        let mut sock = host.tcp_socket()?;
        sock.set_send_buffer_size(4 * window);
        let s = sock.connect(to).await?;
        loop {
            s.write_all(Message::zeros(1 << 20)).await?;
        }
    });
    let wall = Instant::now();
    let limits = RunLimits {
        until: Some(Time::from_nanos(t2 + 1)),
    };
    sim.run_with(limits, &mut |_| {});
    let (x1, x2) = seen.get();
    let bps = (x2 - x1) as f64 * 8.0 / ((t2 - t1) as f64 / 1e9);
    (bps, wall.elapsed().as_secs_f64())
}

/// Runs the sweep and prints the table; returns false if an RTT missed
/// its closed form or a goodput missed the paper's formula by over 2 %.
pub fn run(max: u32, window: usize) -> bool {
    let mut ns: Vec<u32> = (0..).map(|i| 1u32 << i).take_while(|&n| n < max).collect();
    ns.push(max);
    let mut ok = true;
    println!("| routers | ping RTT (µs) | Σ ser + Σ lat (µs) | TCP RTT (ms) | goodput (Mbit/s) | min(R·1448/1514, W/RTT) | error | wall (s) |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for n in ns {
        let links = u64::from(n + 1);
        let want = 2 * links * (ser(ECHO_FRAME) + LATENCY);
        let rtt = ping(n);
        let tcp_rtt = links * (ser(DATA_FRAME) + ser(ACK_FRAME) + 2 * LATENCY);
        let link = RATE as f64 * MSS as f64 / DATA_FRAME as f64;
        let win = (window as u64 / MSS * MSS) as f64 * 8.0 / (tcp_rtt as f64 / 1e9);
        let predicted = link.min(win);
        let (bps, wall) = goodput(n, window, tcp_rtt);
        let err = bps / predicted - 1.0;
        ok &= rtt == want && err.abs() <= 0.02;
        println!(
            "| {n} | {:.3} | {:.3}{} | {:.3} | {:.2} | {:.2} | {:+.2} % | {:.2} |",
            rtt as f64 / 1e3,
            want as f64 / 1e3,
            if rtt == want { " (=)" } else { " (≠)" },
            tcp_rtt as f64 / 1e6,
            bps / 1e6,
            predicted / 1e6,
            err * 100.0,
            wall
        );
    }
    ok
}
