//! Topology generators: the sizes of the closed forms, every host pair
//! reachable with exactly the paper's path length, ECMP spreading flows
//! over the core within binomial bounds, RTTs equal to Σ serialization +
//! Σ latency, and clear errors for bad parameters.

use crate::common::*;
use elvis_sim::topology::{self, FatTreeParams, Topology, TopologyError};
use elvis_sim::{Host, Message, Simulation};
use std::net::Ipv4Addr;
use std::time::Duration;

const TTL: u8 = 64;

/// Pings every (source, destinations) pair listed, one ICMP socket per
/// source; returns (source index, reply address, links crossed by the
/// reply: routers + 1, from its TTL).
fn ping_pairs(
    sim: &mut Simulation,
    topo: &Topology,
    pairs: &[(usize, Vec<Ipv4Addr>)],
) -> Log<(usize, Ipv4Addr, u8)> {
    let got = log();
    for (src, dsts) in pairs {
        let (src, dsts, out) = (*src, dsts.clone(), got.clone());
        sim.spawn(topo.hosts[src], "pinger", move |host: Host| async move {
            let sock = host.icmp_socket(1)?;
            for (seq, &d) in dsts.iter().enumerate() {
                sock.send_echo(d, seq as u16, Message::zeros(8))?;
                host.sleep(Duration::from_micros(50)).await;
            }
            let deadline = host.now() + Duration::from_secs(1);
            for _ in 0..dsts.len() {
                let Some(r) = timeout_at(&host, deadline, sock.recv_echo()).await else {
                    break;
                };
                let r = r?;
                assert!(r.error.is_none(), "{r:?}");
                out.borrow_mut().push((src, r.from, TTL - r.ttl + 1));
            }
            Ok(())
        });
    }
    got
}

/// The paper's path length between two hosts: 2 under one edge switch,
/// 4 within a pod, 6 across pods.
fn fat_tree_links(p: &FatTreeParams, a: usize, b: usize) -> u8 {
    let (pa, ea, _) = p.host_position(a);
    let (pb, eb, _) = p.host_position(b);
    match (pa == pb, ea == eb) {
        (true, true) => 2,
        (true, false) => 4,
        _ => 6,
    }
}

fn fat_tree(k: u32, seed: u64) -> (Simulation, Topology, FatTreeParams) {
    let mut sim = Simulation::new(seed);
    let mut p = FatTreeParams::new(k);
    p.link.latency_ns = 1_000;
    let topo = topology::fat_tree(&mut sim, &p).expect("fat tree");
    (sim, topo, p)
}

#[test]
fn a_fat_tree_has_the_closed_form_numbers_of_hosts_switches_and_links() {
    for k in [2u32, 4, 6, 8] {
        let (sim, topo, p) = fat_tree(k, 1);
        let k3 = u64::from(k).pow(3);
        assert_eq!(topo.hosts.len() as u64, k3 / 4, "k = {k}");
        assert_eq!(topo.routers.len() as u64, 5 * u64::from(k * k) / 4);
        assert_eq!(topo.networks.len() as u64, 3 * k3 / 4);
        assert_eq!(
            sim.machine_count() as u64,
            p.host_count() + p.switch_count()
        );
        let last = topo.hosts.len() - 1;
        assert_eq!(p.host_position(last), (k - 1, k / 2 - 1, k / 2 - 1));
        let want = Ipv4Addr::new(10, k as u8 - 1, k as u8 / 2 - 1, k as u8 / 2 + 1);
        assert_eq!(topo.addresses[last], want);
    }
}

#[test]
fn every_fat_tree_4_host_reaches_every_other_with_the_papers_path_length() {
    let (mut sim, topo, p) = fat_tree(4, 3);
    let n = topo.hosts.len();
    let pairs: Vec<(usize, Vec<Ipv4Addr>)> = (0..n)
        .map(|a| {
            (
                a,
                (0..n)
                    .filter(|&b| b != a)
                    .map(|b| topo.addresses[b])
                    .collect(),
            )
        })
        .collect();
    let got = ping_pairs(&mut sim, &topo, &pairs);
    let report = sim.run();
    assert_success(&report);
    let got = got.borrow();
    assert_eq!(got.len(), n * (n - 1));
    for &(a, from, links) in got.iter() {
        let b = topo
            .addresses
            .iter()
            .position(|&x| x == from)
            .expect("a host");
        assert_eq!(links, fat_tree_links(&p, a, b), "host {a} -> host {b}");
    }
}

#[test]
fn sampled_fat_tree_16_pairs_have_the_papers_path_length() {
    // 1024 hosts, 320 switches; 64 sources, 12 destinations each spread
    // over the same edge, the same pod and other pods.
    let (mut sim, topo, p) = fat_tree(16, 4);
    let n = topo.hosts.len();
    let pairs: Vec<(usize, Vec<Ipv4Addr>)> = (0..64)
        .map(|s| {
            let a = s * 16 + s % 7;
            let dsts = (1..=12)
                .map(|j| topo.addresses[(a + j * j * 7 + j / 4) % n])
                .collect();
            (a, dsts)
        })
        .collect();
    let got = ping_pairs(&mut sim, &topo, &pairs);
    let report = sim.run();
    assert_success(&report);
    let got = got.borrow();
    assert_eq!(got.len(), 64 * 12);
    let mut seen = [0u32; 7];
    for &(a, from, links) in got.iter() {
        let b = topo
            .addresses
            .iter()
            .position(|&x| x == from)
            .expect("a host");
        assert_eq!(links, fat_tree_links(&p, a, b), "host {a} -> host {b}");
        seen[links as usize] += 1;
    }
    assert!(seen[2] > 0 && seen[4] > 0 && seen[6] > 0, "{seen:?}");
}

#[test]
fn a_ping_across_pods_takes_twelve_serializations_and_latencies() {
    let mut sim = Simulation::new(2);
    let p = FatTreeParams::new(4).with_rate(1_000_000_000, 2_500);
    let topo = topology::fat_tree(&mut sim, &p).unwrap();
    let pairs = vec![
        (0, vec![topo.addresses[p.host_index(3, 1, 1)]]),
        (1, vec![topo.addresses[p.host_index(0, 1, 0)]]),
    ];
    let got = log();
    for (src, dst) in pairs {
        let out = got.clone();
        let d = dst[0];
        sim.spawn(topo.hosts[src], "ping", move |host: Host| async move {
            let sock = host.icmp_socket(9)?;
            let t0 = host.now();
            sock.send_echo(d, 1, Message::zeros(56))?;
            sock.recv_echo().await?;
            out.borrow_mut().push(host.now().as_nanos() - t0.as_nanos());
            Ok(())
        });
    }
    assert_success(&sim.run());
    let per_link = ser_ns(ETH_HEADER + IP_HEADER + 8 + 56, 1_000_000_000) + 2_500;
    let mut got = got.borrow().clone();
    got.sort_unstable();
    assert_eq!(got, vec![8 * per_link, 12 * per_link]);
}

#[test]
fn ecmp_spreads_cross_pod_flows_evenly_over_the_core_switches() {
    for k in [4u32, 8] {
        let mut sim = Simulation::new(11);
        let p = FatTreeParams::new(k).with_rate(1_000_000_000, 1_000);
        let topo = topology::fat_tree(&mut sim, &p).unwrap();
        let flows = 3000u16;
        let dst = topo.addresses[p.host_index(k - 1, 1, 0)];
        sim.spawn(topo.hosts[0], "flows", move |host: Host| async move {
            for f in 0..flows {
                let sock = host.udp_bind(10_000 + f)?;
                sock.send_to(b"x".to_vec(), sa(dst, 9)).await?;
            }
            Ok(())
        });
        sim.spawn_daemon(
            topo.hosts[p.host_index(k - 1, 1, 0)],
            "sink",
            |host: Host| async move {
                let sock = host.udp_bind(9)?;
                loop {
                    sock.recv_from().await?;
                }
            },
        );
        let report = sim.run();
        assert_success(&report);
        assert_eq!(report.packets.udp_delivered, u64::from(flows));
        let cores: Vec<u64> = report
            .routers
            .iter()
            .filter(|r| r.machine.starts_with("core-"))
            .map(|r| r.interfaces[k as usize - 1].counters.forwarded)
            .collect();
        let n_core = (k * k / 4) as usize;
        assert_eq!(cores.len(), n_core);
        assert_eq!(cores.iter().sum::<u64>(), u64::from(flows), "k = {k}");
        for (c, &x) in cores.iter().enumerate() {
            assert_binomial(
                &format!("k = {k}, core {c}"),
                x,
                u64::from(flows),
                1.0 / n_core as f64,
            );
        }
    }
}

#[test]
fn every_switch_address_answers_a_ping_from_a_host() {
    let (mut sim, topo, p) = fat_tree(4, 5);
    let mut switches = Vec::new();
    for pod in 0..4 {
        for s in 0..2 {
            switches.push(p.edge_address(pod, s));
            switches.push(p.agg_address(pod, s));
            switches.push(p.core_address(pod / 2, s));
        }
    }
    let pairs = vec![(0, switches.clone()), (13, switches.clone())];
    let got = ping_pairs(&mut sim, &topo, &pairs);
    assert_success(&sim.run());
    assert_eq!(got.borrow().len(), 2 * switches.len());
}

#[test]
fn a_fat_tree_refuses_an_odd_zero_or_oversized_k() {
    for k in [0u32, 3, 7, 256] {
        let mut sim = Simulation::new(1);
        let e = topology::fat_tree(&mut sim, &FatTreeParams::new(k)).unwrap_err();
        assert!(
            matches!(&e, TopologyError::BadParameter { key: "k", message } if message.contains(&k.to_string())),
            "{e}"
        );
    }
}

#[test]
fn a_second_fat_tree_needs_its_own_prefix() {
    let mut sim = Simulation::new(1);
    topology::fat_tree(&mut sim, &FatTreeParams::new(2)).unwrap();
    let e = topology::fat_tree(&mut sim, &FatTreeParams::new(2)).unwrap_err();
    assert_eq!(e, TopologyError::NameClash("host".into()));
    let mut p = FatTreeParams::new(2);
    p.prefix = "b-".into();
    let t = topology::fat_tree(&mut sim, &p).unwrap();
    assert_eq!(t.hosts[0], 2 + 5);
}

/// Pings from each of `sources` to every host; checks each reply's links.
fn all_from(
    mut sim: Simulation,
    topo: &Topology,
    sources: &[usize],
    want: impl Fn(usize, usize) -> u8,
) {
    let pairs: Vec<(usize, Vec<Ipv4Addr>)> = sources
        .iter()
        .map(|&a| {
            let dsts = (0..topo.hosts.len()).filter(|&b| b != a);
            (a, dsts.map(|b| topo.addresses[b]).collect())
        })
        .collect();
    let got = ping_pairs(&mut sim, topo, &pairs);
    let report = sim.run();
    assert_success(&report);
    let got = got.borrow();
    assert_eq!(got.len(), sources.len() * (topo.hosts.len() - 1));
    for &(a, from, links) in got.iter() {
        let b = topo
            .addresses
            .iter()
            .position(|&x| x == from)
            .expect("a host");
        assert_eq!(links, want(a, b), "host {a} -> host {b}");
    }
}

#[test]
fn a_chain_of_n_routers_puts_n_plus_one_links_between_its_hosts() {
    for n in [0u32, 1, 5, 30] {
        let mut sim = Simulation::new(1);
        let mut p = topology::ChainParams::new(n);
        p.link.latency_ns = 1_000;
        let topo = topology::chain(&mut sim, &p).unwrap();
        assert_eq!(topo.networks.len() as u32, n + 1);
        all_from(sim, &topo, &[0, 1], |_, _| n as u8 + 1);
    }
}

#[test]
fn a_dumbbell_ping_takes_two_access_links_and_the_bottleneck_each_way() {
    let mut sim = Simulation::new(1);
    let mut p = topology::DumbbellParams::new(3);
    p.access = p.access.with_rate(100_000_000, 1_000);
    p.bottleneck = p.bottleneck.with_rate(10_000_000, 10_000_000);
    let topo = topology::dumbbell(&mut sim, &p).unwrap();
    assert_eq!(topo.hosts.len(), 6);
    assert_eq!(topo.networks.len(), 7);
    let dst = topo.addresses[5];
    let got = log();
    let out = got.clone();
    sim.spawn(topo.hosts[0], "ping", move |host: Host| async move {
        let sock = host.icmp_socket(9)?;
        sock.send_echo(dst, 1, Message::zeros(56))?;
        let r = sock.recv_echo().await?;
        out.borrow_mut().push((host.now().as_nanos(), r.ttl));
        Ok(())
    });
    assert_success(&sim.run());
    let frame = ETH_HEADER + IP_HEADER + 8 + 56;
    let one_way = 2 * (ser_ns(frame, 100_000_000) + 1_000) + ser_ns(frame, 10_000_000) + 10_000_000;
    assert_eq!(*got.borrow(), vec![(2 * one_way, TTL - 2)]);
}

#[test]
fn every_dumbbell_host_reaches_the_other_side_in_three_links() {
    let mut sim = Simulation::new(1);
    let mut p = topology::DumbbellParams::new(4);
    p.access.latency_ns = 1_000;
    p.bottleneck.latency_ns = 1_000;
    let topo = topology::dumbbell(&mut sim, &p).unwrap();
    all_from(sim, &topo, &[0, 3, 4, 7], |a, b| {
        if (a < 4) == (b < 4) {
            2
        } else {
            3
        }
    });
}

#[test]
fn a_star_joins_its_hosts_through_one_switch_or_one_router() {
    for router in [false, true] {
        let mut sim = Simulation::new(1);
        let mut p = topology::StarParams::new(6);
        p.router = router;
        p.link.latency_ns = 1_000;
        let topo = topology::star(&mut sim, &p).unwrap();
        assert_eq!(topo.routers.len(), usize::from(router));
        let links = if router { 2 } else { 1 };
        all_from(sim, &topo, &[0, 5], |_, _| links);
    }
}

#[test]
fn tree_hosts_are_twice_the_levels_to_their_common_ancestor_apart() {
    let mut sim = Simulation::new(1);
    let mut p = topology::TreeParams::new(3, 3);
    p.link.latency_ns = 1_000;
    let topo = topology::tree(&mut sim, &p).unwrap();
    assert_eq!((topo.hosts.len(), topo.routers.len()), (27, 13));
    let want = |a: usize, b: usize| p.host_distance(a as u32, b as u32) as u8;
    all_from(sim, &topo, &[0, 13, 26], want);
}

#[test]
fn torus_hosts_are_two_links_plus_the_wrap_around_grid_distance_apart() {
    for dims in [&[4u32, 5][..], &[3, 3, 4]] {
        let mut sim = Simulation::new(1);
        let mut p = topology::TorusParams::new(dims);
        p.link.latency_ns = 1_000;
        let topo = topology::torus(&mut sim, &p).unwrap();
        let n: u32 = dims.iter().product();
        assert_eq!(topo.networks.len() as u32, n * (dims.len() as u32 + 1));
        let want = |a: usize, b: usize| p.host_distance(a as u32, b as u32) as u8;
        all_from(sim, &topo, &[0, 7, n as usize - 1], want);
    }
}

#[test]
fn generators_name_the_bad_parameter() {
    let mut sim = Simulation::new(1);
    let key = |e: TopologyError| match e {
        TopologyError::BadParameter { key, .. } => key,
        e => panic!("{e}"),
    };
    let t = topology::torus(&mut sim, &topology::TorusParams::new(&[2, 5]));
    assert_eq!(key(t.unwrap_err()), "dims");
    let t = topology::torus(&mut sim, &topology::TorusParams::new(&[5]));
    assert_eq!(key(t.unwrap_err()), "dims");
    let t = topology::tree(&mut sim, &topology::TreeParams::new(2, 1));
    assert_eq!(key(t.unwrap_err()), "fanout");
    let t = topology::tree(&mut sim, &topology::TreeParams::new(40, 2));
    assert_eq!(key(t.unwrap_err()), "depth");
    let t = topology::dumbbell(&mut sim, &topology::DumbbellParams::new(0));
    assert_eq!(key(t.unwrap_err()), "n");
    let t = topology::star(
        &mut sim,
        &topology::StarParams::new(topology::StarParams::MAX_HOSTS + 1),
    );
    assert_eq!(key(t.unwrap_err()), "n");
    assert_eq!(sim.machine_count(), 0, "nothing half-built");
}

#[test]
fn gml_rtts_follow_the_least_latency_paths_of_an_independent_floyd_warshall() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/ndl/backbone-10.gml"
    );
    let g = topology::Graph::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!((g.nodes.len(), g.edges.len()), (10, 12));
    let n = g.nodes.len();
    let mut d = vec![vec![u64::MAX / 4; n]; n];
    for (i, row) in d.iter_mut().enumerate() {
        row[i] = 0;
    }
    for e in &g.edges {
        let l = e.latency_ns.unwrap();
        d[e.a][e.b] = l;
        d[e.b][e.a] = l;
    }
    for k in 0..n {
        for i in 0..n {
            for j in 0..n {
                d[i][j] = d[i][j].min(d[i][k] + d[k][j]);
            }
        }
    }
    let mut sim = Simulation::new(1);
    let mut p = topology::GraphParams::new(g);
    p.metric = elvis_sim::stack::route::Metric::Latency;
    p.link.bandwidth_bps = None; // no serialization: RTT = 2 × path latency
    for e in &mut p.graph.edges {
        e.bandwidth_bps = None;
    }
    let topo = topology::graph(&mut sim, &p).unwrap();
    let got = log();
    for a in [0usize, 4, 8] {
        let (addrs, out) = (topo.addresses.clone(), got.clone());
        sim.spawn(topo.hosts[a], "pings", move |host: Host| async move {
            let sock = host.icmp_socket(3)?;
            for (b, &ip) in addrs.iter().enumerate().filter(|(b, _)| *b != a) {
                let t0 = host.now();
                sock.send_echo(ip, b as u16, Message::zeros(8))?;
                sock.recv_echo().await?;
                out.borrow_mut()
                    .push((a, b, host.now().as_nanos() - t0.as_nanos()));
            }
            Ok(())
        });
    }
    assert_success(&sim.run());
    let got = got.borrow();
    assert_eq!(got.len(), 27);
    for &(a, b, rtt) in got.iter() {
        assert_eq!(rtt, 2 * d[a][b], "{a} -> {b}");
    }
}
