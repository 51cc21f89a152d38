//! Random multipath in a FatTree: random simple-path routing finds
//! exactly the closed-form number of simple paths within the diameter,
//! each one loop-free and ending at the destination's edge switch, and
//! spreads flows uniformly over them (χ²); random demultiplexing spreads
//! one flow's datagrams uniformly over the core (χ²); the same seed gives
//! the same report.

use crate::common::*;
use elvis_sim::stack::route::Random;
use elvis_sim::topology::{self, FatTreeParams, Topology};
use elvis_sim::{Host, Report, Simulation};
use std::net::Ipv4Addr;

/// χ² at 1 % significance for `df` degrees of freedom (the table's
/// values for the ones used here).
fn chi2_bound(df: usize) -> f64 {
    match df {
        1 => 6.635,
        3 => 11.345,
        15 => 30.578,
        27 => 46.963,
        _ => panic!("no table value for {df} degrees of freedom"),
    }
}

fn chi2(counts: &[u64]) -> f64 {
    let n: u64 = counts.iter().sum();
    let e = n as f64 / counts.len() as f64;
    counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum()
}

fn fat_tree(k: u32, seed: u64, random: Random) -> (Simulation, Topology, FatTreeParams) {
    let mut sim = Simulation::new(seed);
    let p = FatTreeParams::new(k).with_rate(1_000_000_000, 1_000);
    let topo = topology::fat_tree(&mut sim, &p).expect("fat tree");
    sim.set_random_multipath(random);
    (sim, topo, p)
}

/// Every switch's address, by machine id (the generator's order: edge,
/// aggregation, core).
fn switch_addresses(topo: &Topology, p: &FatTreeParams) -> Vec<(u32, Ipv4Addr)> {
    let (k, h) = (p.k, p.k / 2);
    let mut addrs = Vec::new();
    for pod in 0..k {
        addrs.extend((0..h).map(|e| p.edge_address(pod, e)));
    }
    for pod in 0..k {
        addrs.extend((0..h).map(|a| p.agg_address(pod, a)));
    }
    for j in 0..h {
        addrs.extend((0..h).map(|i| p.core_address(j, i)));
    }
    topo.routers.iter().copied().zip(addrs).collect()
}

/// Within a pod: the k/2 shortest paths and the (k/2)(k/2 − 2)(k/2 − 1)
/// six-link ones down through a third edge switch; across pods: the
/// (k/2)² shortest paths only (a longer one would exceed the diameter,
/// 6); under one edge switch: the one path. Each path is simple, starts
/// at the source's edge switch, names the next router as its next hop
/// and ends at the destination's edge switch.
#[test]
fn random_simple_paths_in_a_fat_tree_are_the_closed_form_simple_paths() {
    let k = 8u32;
    let h = u64::from(k / 2);
    let (mut sim, topo, p) = fat_tree(k, 3, Random::Path);
    sim.build_routes().unwrap();
    let switches = switch_addresses(&topo, &p);
    let addr = |m: u32| switches.iter().find(|s| s.0 == m).map(|s| u32::from(s.1));
    let edge = |pod: u32, e: u32| topo.routers[(pod * k / 2 + e) as usize];
    let src = topo.addresses[p.host_index(0, 0, 0)];
    let cases = [
        ((0, 0, 1), 1),
        ((0, 1, 0), h + h * (h - 2) * (h - 1)),
        ((5, 2, 3), h * h),
    ];
    for ((pod, e, i), count) in cases {
        let dst = topo.addresses[p.host_index(pod, e, i)];
        let (set, max_hops) = sim.random_paths(src, dst).expect("paths");
        assert_eq!(max_hops, 6);
        assert_eq!(set.len() as u64, count, "to {dst}");
        for n in 0..set.len() {
            let path = set.path(n);
            assert!(path.len() < 6, "{path:?}");
            let mut seen: Vec<u32> = path.iter().map(|s| s.machine).collect();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), path.len(), "a router repeats: {path:?}");
            assert_eq!(path[0].machine, edge(0, 0));
            assert_eq!(path.last().unwrap().machine, edge(pod, e));
            assert_eq!(path.last().unwrap().next, 0);
            for w in path.windows(2) {
                assert_eq!(Some(w[0].next), addr(w[1].machine), "{path:?}");
            }
        }
    }
}

/// 2,800 one-datagram flows from edge 0 to edge 1 of pod 0 in a
/// FatTree(8): all arrive; a flow takes one of 28 paths uniformly (χ²
/// over the paths the flows' keys pick, 27 degrees of freedom), so
/// 24/28 of them cross a third edge switch (binomial bound on the
/// forwarding counters of edges 2 and 3).
#[test]
fn random_simple_path_routing_spreads_flows_uniformly_over_all_simple_paths() {
    let k = 8u32;
    let (mut sim, topo, p) = fat_tree(k, 5, Random::Path);
    let flows = 2800u16;
    let dst_i = p.host_index(0, 1, 0);
    let (src, dst) = (topo.addresses[0], topo.addresses[dst_i]);
    sim.spawn(topo.hosts[0], "flows", move |host: Host| async move {
        for f in 0..flows {
            let sock = host.udp_bind(10_000 + f)?;
            sock.send_to(b"x".to_vec(), sa(dst, 9)).await?;
        }
        Ok(())
    });
    sim.spawn_daemon(topo.hosts[dst_i], "sink", |host: Host| async move {
        let sock = host.udp_bind(9)?;
        loop {
            sock.recv_from().await?;
        }
    });
    let report = sim.run();
    assert_success(&report);
    assert_eq!(report.packets.udp_delivered, u64::from(flows));
    let (set, _) = sim.random_paths(src, dst).unwrap();
    let mut counts = vec![0u64; set.len()];
    for f in 0..flows {
        let key = elvis_sim::stack::route::FlowKey {
            src: src.into(),
            dst: dst.into(),
            proto: 17,
            sport: 10_000 + f,
            dport: 9,
            ident: 0,
        };
        counts[elvis_sim::stack::paths::choose(set.len(), 5, &key)] += 1;
    }
    let x = chi2(&counts);
    assert!(x < chi2_bound(27), "χ² {x:.1}: {counts:?}");
    let via_third_edge: u64 = report
        .routers
        .iter()
        .filter(|r| r.machine == "edge-2" || r.machine == "edge-3")
        .flat_map(|r| r.interfaces.iter().map(|i| i.counters.forwarded))
        .sum();
    assert_binomial(
        "six-link paths",
        via_third_edge,
        u64::from(flows),
        24.0 / 28.0,
    );
}

/// One UDP flow of 4,000 datagrams across pods in a FatTree(4): with
/// random demultiplexing each datagram picks its aggregation and core
/// switch anew, so the four cores carry a quarter each (χ², 3 degrees of
/// freedom); with the default per-flow hash one core carries all.
fn one_flow_across_pods(random: Random, seed: u64) -> (Report, Vec<u64>) {
    let k = 4u32;
    let (mut sim, topo, p) = fat_tree(k, seed, random);
    let n = 4000u32;
    let dst_i = p.host_index(3, 1, 0);
    let dst = topo.addresses[dst_i];
    sim.spawn(topo.hosts[0], "flow", move |host: Host| async move {
        let sock = host.udp_bind(10_000)?;
        for _ in 0..n {
            sock.send_to(b"x".to_vec(), sa(dst, 9)).await?;
            host.sleep(std::time::Duration::from_micros(2)).await;
        }
        Ok(())
    });
    sim.spawn_daemon(topo.hosts[dst_i], "sink", |host: Host| async move {
        let sock = host.udp_bind(9)?;
        loop {
            sock.recv_from().await?;
        }
    });
    let report = sim.run();
    assert_success(&report);
    assert_eq!(report.packets.udp_delivered, u64::from(n));
    let cores = report
        .routers
        .iter()
        .filter(|r| r.machine.starts_with("core-"))
        .map(|r| r.interfaces[k as usize - 1].counters.forwarded)
        .collect();
    (report, cores)
}

#[test]
fn random_demultiplexing_spreads_one_flows_datagrams_uniformly_over_the_core() {
    let (_, cores) = one_flow_across_pods(Random::Demux, 9);
    assert_eq!(cores.iter().sum::<u64>(), 4000);
    let x = chi2(&cores);
    assert!(x < chi2_bound(3), "χ² {x:.1}: {cores:?}");
    let (_, hashed) = one_flow_across_pods(Random::Off, 9);
    assert_eq!(hashed.iter().filter(|&&c| c > 0).count(), 1, "{hashed:?}");
}

#[test]
fn random_multipath_runs_repeat_exactly_with_the_same_seed() {
    for random in [Random::Demux, Random::Path] {
        let (a, _) = one_flow_across_pods(random, 21);
        let (b, _) = one_flow_across_pods(random, 21);
        assert_eq!(a.deterministic_json(), b.deterministic_json());
    }
}
