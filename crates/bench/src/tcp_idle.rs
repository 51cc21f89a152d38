//! `tcp-idle`: memory per idle established TCP connection.
//!
//! One server machine listens; `ceil(N / 16000)` client machines (16,384
//! ephemeral ports each, as Linux's default range is about that size) open
//! N connections between them over an ideal LAN, and everything goes
//! idle. Reported: `(peak RSS − RSS before the run) / N`, which counts both
//! ends of each connection (two sockets per connection) and every
//! transient of getting there (socket tables and indexes growing), and
//! the resident size once idle, from `/proc/self/status`.

use crate::Measurement;
use elvis_sim::{Host, NetworkConfig, Protocols, Simulation};
use std::cell::Cell;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Connections per client machine.
const PER_CLIENT: u64 = 16_000;

/// Returns a `/proc/self/status` field in bytes (0 where unavailable).
fn proc_status_bytes(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

pub fn tcp_idle(n: u64) -> Measurement {
    let t0 = Instant::now();
    let clients = n.div_ceil(PER_CLIENT).max(1);
    let mut sim = Simulation::new(1);
    let lan = sim.add_network(NetworkConfig::ideal("lan"));
    let server = sim
        .add_group("server", None, Protocols::UDP_TCP)
        .expect("fresh group");
    let first = sim
        .add_group("client", Some(clients as u32), Protocols::UDP_TCP)
        .expect("fresh group");
    let server_ip = Ipv4Addr::new(10, 0, 0, 1);
    sim.attach(server, lan, server_ip).expect("address");
    for c in 0..clients as u32 {
        let ip = Ipv4Addr::from(u32::from(server_ip) + 1 + c);
        sim.attach(first + c, lan, ip).expect("address");
    }
    let idle_rss = Rc::new(Cell::new(0u64));
    let accepted = Rc::new(Cell::new(0u64));
    let (rss2, acc2) = (idle_rss.clone(), accepted.clone());
    sim.spawn(server, "server", move |h: Host| async move {
        let l = h.tcp_listen(80, n as usize)?;
        let mut conns = Vec::with_capacity(n as usize);
        for _ in 0..n {
            conns.push(l.accept().await?.0);
        }
        acc2.set(conns.len() as u64);
        // Idle for a virtual minute (delayed ACKs and timers settle).
        h.sleep(Duration::from_secs(60)).await;
        rss2.set(proc_status_bytes("VmRSS:"));
        // Leave the connections established (no close traffic).
        std::mem::forget(conns);
        std::mem::forget(l);
        Ok(())
    });
    for c in 0..clients {
        let k = PER_CLIENT.min(n - c * PER_CLIENT);
        sim.spawn(first + c as u32, "client", move |h: Host| async move {
            let mut conns = Vec::with_capacity(k as usize);
            for _ in 0..k {
                conns.push(h.tcp_connect(SocketAddrV4::new(server_ip, 80)).await?);
            }
            std::mem::forget(conns);
            Ok(())
        });
    }
    let build_s = t0.elapsed().as_secs_f64();
    let baseline = proc_status_bytes("VmRSS:");
    let report = sim.run();
    let peak = elvis_sim::report::peak_rss_bytes();
    let per_conn = peak.saturating_sub(baseline) as f64 / n as f64;
    let idle_per_conn = idle_rss.get().saturating_sub(baseline) as f64 / n as f64;
    Measurement {
        scenario: "tcp-idle".into(),
        n,
        build_s,
        run_s: report.performance.wall_time_s,
        events: report.events,
        events_per_s: report.performance.events_per_s,
        delivered: report.packets.tcp_received,
        ok: report.success() && accepted.get() == n,
        extra: serde_json::json!({
            "client_machines": clients,
            "baseline_rss_bytes": baseline,
            "peak_rss_bytes": peak,
            "idle_rss_bytes": idle_rss.get(),
            "peak_bytes_per_connection": per_conn,
            "idle_bytes_per_connection": idle_per_conn,
        }),
        ..Default::default()
    }
}
