//! `web`: browsing users on web servers, the default SURGE model.
//!
//! `users` hosts each run a `web_user` (6 parallel persistent
//! connections, SURGE think times, following links with probability
//! 0.85) against one of `servers` `web_server`s (user u browses server
//! u mod `servers`; 1,000 pages each, no worker limit) for `seconds` of
//! simulated time. Users start uniformly over the first 3 s (the mean
//! SURGE think time), so that sessions do not begin in lockstep. All
//! machines share one switched LAN: 1 Gbit/s ports, 1 ms latency.
//!
//! Reported: wall time, peak RSS (the harness adds it), events, pages
//! loaded and pages per wall second, the page-load and server-delay
//! percentiles, and the requests the servers answered.

use crate::Measurement;
use elvis_sim::{Host, NetworkConfig, Protocols, RunLimits, Simulation, Time};
use elvis_web::{server, user};
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// The benchmark's sizes.
pub struct Sizes {
    pub users: u32,
    pub servers: u32,
    pub seconds: u64,
}

fn server_ip(s: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 0, 0, 1)) + s)
}

/// Builds the LAN, the servers and the users; returns the simulation and
/// the users' stop time.
fn build(s: &Sizes) -> (Simulation, Time) {
    let mut sim = Simulation::new(1);
    let mut cfg = NetworkConfig::ideal("lan");
    cfg.bandwidth_bps = Some(1_000_000_000);
    cfg.latency_ns = 1_000_000;
    let lan = sim.add_network(cfg);
    let servers = s.servers.max(1);
    let first_server = sim
        .add_group("www", Some(servers), Protocols::UDP_TCP)
        .expect("fresh group");
    let mut scfg = server::Config::new();
    scfg.max_workers = 0;
    let scfg = Rc::new(scfg);
    for k in 0..servers {
        sim.attach(first_server + k, lan, server_ip(k))
            .expect("address");
        let cfg = scfg.clone();
        sim.spawn_daemon(first_server + k, "web_server", move |h: Host| {
            server::run(h, cfg)
        });
    }
    let first = sim
        .add_group("user", Some(s.users), Protocols::UDP_TCP)
        .expect("fresh group");
    let stats = Rc::new(elvis_web::stats::Recorder::default());
    let stop = Time::from_nanos(s.seconds * 1_000_000_000);
    for u in 0..s.users {
        let m = first + u;
        let ip = Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 64, 0, 0)) + u);
        sim.attach(m, lan, ip).expect("address");
        let ucfg = Rc::new(user::Config {
            to: server_ip(u % servers),
            name: format!("www-{}", u % servers),
            port: 80,
            pages: None,
            connections: 6,
            think: None,
            follow: 0.85,
            stats: stats.clone(),
        });
        sim.spawn(m, "web_user", move |h: Host| async move {
            let start = Duration::from_nanos(h.random_u64() % 3_000_000_000);
            h.sleep(start).await;
            h.timeout_at(stop, user::run(h, ucfg)).await;
            Ok(())
        });
    }
    (sim, stop)
}

/// Runs the benchmark.
pub fn run(s: &Sizes) -> Measurement {
    let t0 = Instant::now();
    let (mut sim, stop) = build(s);
    let servers = s.servers.max(1);
    let build_s = t0.elapsed().as_secs_f64();
    let report = sim.run_with(RunLimits { until: Some(stop) }, &mut |_| {});
    let metric = |app: &str, name: &str| -> f64 {
        report
            .metrics
            .iter()
            .filter(|m| m.application == app && m.name == name)
            .map(|m| m.value)
            .sum()
    };
    let pages = metric("web_user", "pages");
    let run_s = report.performance.wall_time_s;
    Measurement {
        scenario: "web".into(),
        n: u64::from(s.users),
        build_s,
        run_s,
        events: report.events,
        events_per_s: report.performance.events_per_s,
        delivered: pages as u64,
        ok: report.problems.iter().all(|p| p.application != "web_user") && pages > 0.0,
        extra: serde_json::json!({
            "servers": servers,
            "sim_seconds": s.seconds,
            "sim_time_s": report.sim_time_ns as f64 / 1e9,
            "pages": pages,
            "pages_per_wall_s": pages / run_s.max(1e-9),
            "pages_per_sim_s": pages / s.seconds.max(1) as f64,
            "objects": metric("web_user", "objects"),
            "bytes": metric("web_user", "bytes"),
            "errors": metric("web_user", "errors"),
            "page_load_p50_ms": metric("web_user", "page_load_p50_ns") / 1e6,
            "page_load_p90_ms": metric("web_user", "page_load_p90_ns") / 1e6,
            "page_load_p99_ms": metric("web_user", "page_load_p99_ns") / 1e6,
            "server_requests": metric("web_server", "requests"),
            "server_delay_p99_ms": metric("web_server", "server_delay_p99_ns") / 1e6,
        }),
        ..Default::default()
    }
}
