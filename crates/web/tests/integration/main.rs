//! elvis-web inside simulations: a server and its clients on one switched
//! LAN, checked against what HTTP/1.1 and the applications promise
//! (connection reuse, `Connection: close`, the `max_workers` queue, page
//! loads, determinism), video streaming against closed forms of its link,
//! and an HTTP GET flood against the server's capacity.
#![forbid(unsafe_code)]

mod flood;
mod serving;
mod video;

use elvis_sim::{MachineId, NetworkConfig, Protocols, Report, Simulation};
use std::net::Ipv4Addr;

pub const SERVER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

/// A LAN of `bps` and 1 ms latency with a server (10.0.0.1) and
/// `clients` clients (10.0.0.2…); returns the simulation, the server and
/// the first client.
pub fn lan(seed: u64, clients: u8, bps: u64) -> (Simulation, MachineId, MachineId) {
    let mut sim = Simulation::new(seed);
    let mut cfg = NetworkConfig::ideal("lan");
    cfg.bandwidth_bps = Some(bps);
    cfg.latency_ns = 1_000_000;
    let lan = sim.add_network(cfg);
    let all = Protocols {
        arp: true,
        udp: true,
        tcp: true,
    };
    let server = sim.add_group("server", None, all).unwrap();
    sim.attach(server, lan, SERVER).unwrap();
    let first = sim.add_group("client", None, all).unwrap();
    sim.attach(first, lan, Ipv4Addr::new(10, 0, 0, 2)).unwrap();
    for i in 1..clients {
        let m = sim.add_group(&format!("client{i}"), None, all).unwrap();
        sim.attach(m, lan, Ipv4Addr::new(10, 0, 0, 2 + i)).unwrap();
    }
    (sim, server, first)
}

/// Returns the value of metric `name` published by application `app` (on
/// any machine: the web metrics are per group).
pub fn metric(r: &Report, app: &str, name: &str) -> f64 {
    r.metrics
        .iter()
        .filter(|m| m.application == app && m.name == name)
        .map(|m| m.value)
        .next_back()
        .unwrap_or_else(|| panic!("no metric {app}/{name}"))
}

/// Asserts the run succeeded.
#[track_caller]
pub fn assert_success(r: &Report) {
    assert!(r.success(), "run failed: {}", r.deterministic_json());
}
