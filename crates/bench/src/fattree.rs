//! `fattree`: the FatTree baseline of the Days paper (its Table III and
//! Fig. 3), side by side with ns.py.
//!
//! ```text
//!   core         c0   c1   c2   c3          (k/2)² core switches
//!               / \  / \  / \  / \
//!   aggregation a0 a1     a2 a3  …          k pods of k/2 aggregation
//!               |  X |    |  X |                and k/2 edge switches
//!   edge        e0 e1     e2 e3  …
//!              / \ / \   / \ / \
//!   hosts      h h h h   h h h h            k³/4 hosts
//! ```
//!
//! The scenario is read from a JSON file written by
//! `bench/fattree/nspy_fattree.py gen K FILE` (ns.py's own FatTree and
//! flow generator), so both simulators run the same topology, flows and
//! paths by construction: every node a machine (hosts: Ethernet/IPv4/UDP;
//! switches: the same stack forwarding IPv4), every link a point-to-point
//! network at `rate_bps` with zero latency whose NICs hold `qlimit` frames
//! (ns.py's `Port(qlimit)` counts the packet in service too), each flow
//! pinned to its path by per-flow explicit routes on the switches
//! ([`Simulation::add_flow_route`]), a sender task per flow sending
//! `packets_per_flow` UDP datagrams whose frames are `packet_bytes` long
//! (958 bytes of payload in a 1000-byte frame) every `interval_s` from
//! `start_s`, and a receiver task per flow counting them. The payload is
//! the message's virtual zeros (as in `tcp-bulk`): the frames carry the
//! same bytes as a zero-filled buffer and every checksum is computed over
//! them, but zeros add nothing to a ones'-complement sum, so the stacks do
//! not read 958 bytes per hop to learn that (ns.py's packets carry no
//! bytes at all).
//!
//! Printed counts, to compare with ns.py's: datagrams delivered, packets
//! dropped (any reason) and port transmissions (frames serialized by any
//! NIC: the source host's and each switch's egress, as ns.py counts its
//! `Port`s).

use crate::Measurement;
use elvis_sim::topology::{fat_tree, FatTreeParams};
use elvis_sim::{Host, MachineId, Message, NetworkConfig, Simulation, Time};
use serde::Deserialize;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::time::Instant;

/// Ethernet (14) + IPv4 (20) + UDP (8) headers in front of the payload.
const HEADERS: u64 = 42;
/// UDP destination port of flow 0; flow `i` uses `BASE_PORT + i`.
const BASE_PORT: u32 = 1024;

/// The flow file (see `bench/fattree/nspy_fattree.py`).
#[derive(Deserialize)]
pub struct FlowFile {
    pub k: u32,
    pub packets_per_flow: u64,
    pub packet_bytes: u64,
    pub rate_bps: u64,
    pub qlimit: u32,
    pub start_s: u64,
    pub interval_s: u64,
    pub nodes: Vec<Node>,
    pub links: Vec<[u32; 2]>,
    pub flows: Vec<Flow>,
}

/// A node of the topology, by ns.py's node id.
#[derive(Deserialize)]
pub struct Node {
    pub id: u32,
    #[serde(rename = "type")]
    pub kind: String,
}

/// One flow: source and destination hosts and the nodes of its path.
#[derive(Deserialize)]
pub struct Flow {
    pub id: u32,
    pub src: u32,
    pub dst: u32,
    pub path: Vec<u32>,
}

/// Reads and checks a flow file.
///
/// # Errors
/// A line naming the file and what is wrong with it.
pub fn read(path: &Path, k: Option<u32>) -> Result<FlowFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let f: FlowFile =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let bad = |what: String| Err(format!("{}: {what}", path.display()));
    if k.is_some_and(|k| k != f.k) {
        return bad(format!(
            "the file is for k = {}, not {}",
            f.k,
            k.unwrap_or(0)
        ));
    }
    if f.packet_bytes < HEADERS + 1 || f.packet_bytes > 1514 {
        return bad(format!(
            "packet_bytes {} is not in 43..=1514",
            f.packet_bytes
        ));
    }
    if f.flows.len() as u32 > u32::from(u16::MAX) - BASE_PORT {
        return bad(format!("{} flows: more than the UDP ports", f.flows.len()));
    }
    for (i, n) in f.nodes.iter().enumerate() {
        if n.id as usize != i || (n.kind != "host" && n.kind != "switch") {
            return bad(format!(
                "node {i}: ids must be 0.. in order, type host or switch"
            ));
        }
    }
    let known = |n: u32| (n as usize) < f.nodes.len();
    if let Some(l) = f.links.iter().find(|l| !known(l[0]) || !known(l[1])) {
        return bad(format!("link {l:?} names an unknown node"));
    }
    for fl in &f.flows {
        let ends = (fl.path.first(), fl.path.last());
        if fl.path.len() < 2 || ends != (Some(&fl.src), Some(&fl.dst)) {
            return bad(format!("flow {}: the path must run from src to dst", fl.id));
        }
        if let Some(n) = fl.path.iter().find(|&&n| !known(n)) {
            return bad(format!("flow {}: node {n} is unknown", fl.id));
        }
    }
    Ok(f)
}

/// The built scenario: the simulation and, by ns.py node id, each node's
/// machine and address.
struct Built {
    sim: Simulation,
    machine: Vec<MachineId>,
    addr: Vec<Ipv4Addr>,
    is_host: Vec<bool>,
}

/// Builds FatTree(k) with [`elvis_sim::topology::fat_tree`] (its own
/// aggregated routes stay; the flow routes come first) and maps ns.py's
/// node ids onto it. ns.py (`ns.topos.fattree`) numbers the (k/2)² core
/// switches first (core c joins aggregation switch c / (k/2) of every
/// pod), then per pod its k/2 aggregation and k/2 edge switches, then the
/// hosts edge switch by edge switch; the generator lists hosts in the
/// same order and its routers as edge, aggregation, core switches.
fn build_topology(f: &FlowFile) -> Result<Built, String> {
    let (k, h) = (f.k, f.k / 2);
    let mut sim = Simulation::new(1);
    let link = NetworkConfig {
        txqueuelen: f.qlimit,
        ..NetworkConfig::ideal("").with_rate(f.rate_bps, 0)
    };
    let params = FatTreeParams {
        link,
        ..FatTreeParams::new(k)
    };
    let (hosts, switches, links) = (
        params.host_count(),
        params.switch_count(),
        params.link_count(),
    );
    let file_hosts = f.nodes.iter().filter(|n| n.kind == "host").count() as u64;
    let file_switches = f.nodes.len() as u64 - file_hosts;
    if (file_hosts, file_switches, f.links.len() as u64) != (hosts, switches, links) {
        return Err(format!(
            "the file has {file_hosts} hosts, {file_switches} switches and {} links; FatTree({k}) has {hosts}, {switches} and {links}",
            f.links.len()
        ));
    }
    let topo = fat_tree(&mut sim, &params).map_err(|e| e.to_string())?;
    let ips = sim.primary_addresses();
    let (cores, pods) = (h * h, k * k);
    let mut machine = Vec::with_capacity(f.nodes.len());
    let mut is_host = Vec::with_capacity(f.nodes.len());
    for n in &f.nodes {
        let (m, host) = if n.id < cores {
            (topo.routers[(k * k + n.id) as usize], false)
        } else if n.id < cores + pods {
            let (pod, r) = ((n.id - cores) / k, (n.id - cores) % k);
            let i = if r < h {
                k * h + pod * h + r
            } else {
                pod * h + r - h
            };
            (topo.routers[i as usize], false)
        } else {
            (topo.hosts[(n.id - cores - pods) as usize], true)
        };
        if host != (n.kind == "host") {
            return Err(format!(
                "node {} is a {}, FatTree({k}) has a {} there",
                n.id,
                n.kind,
                if host { "host" } else { "switch" }
            ));
        }
        machine.push(m);
        is_host.push(host);
    }
    let addr = machine
        .iter()
        .map(|&m| ips[m as usize].ok_or(format!("machine {m} has no address")))
        .collect::<Result<_, _>>()?;
    Ok(Built {
        sim,
        machine,
        addr,
        is_host,
    })
}

/// Pins each flow to its path and starts its sender and receiver.
fn add_flows(b: &mut Built, f: &FlowFile) -> Result<(), String> {
    let payload = Message::zeros(f.packet_bytes - HEADERS);
    for fl in &f.flows {
        let host = |n: u32| {
            let ok = b.is_host[n as usize];
            ok.then(|| b.addr[n as usize])
                .ok_or(format!("flow {}: node {n} is no host", fl.id))
        };
        let (src, dst) = (host(fl.src)?, host(fl.dst)?);
        let dport = (BASE_PORT + fl.id) as u16;
        for hop in fl.path.windows(2).skip(1) {
            let (m, via) = (b.machine[hop[0] as usize], b.addr[hop[1] as usize]);
            (b.sim.add_flow_route(m, src, dst, Some(dport), via))
                .map_err(|e| format!("flow {}, hop {} -> {}: {e}", fl.id, hop[0], hop[1]))?;
        }
        let to = SocketAddrV4::new(dst, dport);
        let (n, start, every) = (f.packets_per_flow, f.start_s, f.interval_s);
        let payload = payload.clone();
        b.sim.spawn(
            b.machine[fl.src as usize],
            "send",
            move |h: Host| async move {
                let sock = h.udp_bind(0)?;
                for i in 0..n {
                    h.sleep_until(Time::from_secs(start + i * every)).await;
                    sock.send_to(payload.clone(), to).await?;
                }
                Ok(())
            },
        );
        b.sim.spawn(
            b.machine[fl.dst as usize],
            "receive",
            move |h: Host| async move {
                let sock = h.udp_bind(dport)?;
                for _ in 0..n {
                    sock.recv().await?;
                }
                Ok(())
            },
        );
    }
    Ok(())
}

/// Runs the scenario of `path`; `k`, when given, must be the file's.
pub fn run(k: Option<u32>, path: &Path) -> Measurement {
    let t0 = Instant::now();
    let built = read(path, k).and_then(|f| {
        let mut b = build_topology(&f)?;
        add_flows(&mut b, &f)?;
        Ok((b, f))
    });
    let (mut b, f) = match built {
        Ok(x) => x,
        Err(e) => {
            eprintln!("elvis-bench fattree: {e}");
            std::process::exit(2);
        }
    };
    let flow_routes = b.sim.flow_route_count();
    b.sim
        .build_routes()
        .expect("static routes are on the machines' links");
    let build_s = t0.elapsed().as_secs_f64();
    let report = b.sim.run();
    let p = &report.packets;
    let expected = f.flows.len() as u64 * f.packets_per_flow;
    Measurement {
        scenario: "fattree".into(),
        n: u64::from(f.k),
        messages: expected,
        build_s,
        run_s: report.performance.wall_time_s,
        events: report.events,
        events_per_s: report.performance.events_per_s,
        delivered: p.udp_delivered,
        ok: report.success() && p.udp_delivered == expected && p.dropped_total == 0,
        extra: serde_json::json!({
            "flows": f.flows.len(),
            "machines": report.machines,
            "networks": report.networks.len(),
            "flow_routes": flow_routes,
            "expected": expected,
            "dropped": p.dropped_total,
            "port_transmissions": p.frames_sent,
            "sim_time_s": report.sim_time_ns as f64 / 1e9,
        }),
        ..Default::default()
    }
}
