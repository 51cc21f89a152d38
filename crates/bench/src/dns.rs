//! `dns-lookups`: stub lookups through caching resolvers and a
//! root / TLD / authoritative hierarchy.
//!
//! `names` distinct names `n<i>.d<z>.com` (z = i mod `zones`) are spread
//! over `zones` zones, each delegated by one `com.` server (itself
//! delegated by one root server) to one of `servers` authoritative
//! servers. `clients` hosts each make `lookups / clients` lookups one
//! after another, of names drawn from a Zipf(1.0) law over the names (each
//! host draws from its own seeded stream), through one of `resolvers`
//! caching resolvers (client k asks resolver k mod `resolvers`). Every
//! answer is checked against the name's address (10.128.0.0 + i). All
//! machines share one switched LAN (100 µs latency, unlimited rate).
//!
//! Reported: the lookups done and failed, lookups per wall second, and
//! the resolvers' cache hits and upstream queries.

use crate::Measurement;
use elvis_dns::proto::rr::rdata::{A, NS, SOA};
use elvis_dns::proto::rr::{Name, RData, Record};
use elvis_dns::{resolver, server, Zone};
use elvis_sim::stack::machine::ResolverConf;
use elvis_sim::{Host, NetworkConfig, Protocols, Simulation};
use rand::SeedableRng;
use rand_distr::{Distribution, Zipf};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::cell::Cell;
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::time::Instant;

/// The benchmark's sizes.
pub struct Sizes {
    pub lookups: u64,
    pub names: u32,
    pub resolvers: u32,
    pub clients: u32,
    pub zones: u32,
    pub servers: u32,
}

const ROOT: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const TLD: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

fn name(s: &str) -> Name {
    Name::from_ascii(s).expect("a benchmark name")
}

fn soa(origin: &Name, minimum: u32) -> Record {
    let rdata = SOA::new(
        origin.clone(),
        origin.clone(),
        1,
        3600,
        600,
        86_400,
        minimum,
    );
    Record::from_rdata(origin.clone(), 3600, RData::SOA(rdata))
}

fn a(owner: Name, ttl: u32, ip: Ipv4Addr) -> Record {
    Record::from_rdata(owner, ttl, RData::A(A(ip)))
}

fn ns(owner: Name, target: Name) -> Record {
    Record::from_rdata(owner, 86_400, RData::NS(NS(target)))
}

/// The address of authoritative server `s` and of name `i`.
fn server_ip(s: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 0, 1, 0)) + s)
}

fn name_ip(i: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 128, 0, 0)) + i)
}

/// Builds the root, `com.` and authoritative zones.
fn zones(s: &Sizes) -> (Zone, Zone, Vec<Vec<Zone>>) {
    let root = Name::root();
    let com = name("com.");
    let tld_ns = name("tld.nic.");
    let root_zone = Zone::new(
        root.clone(),
        vec![
            soa(&root, 86_400),
            ns(com.clone(), tld_ns.clone()),
            a(tld_ns, 86_400, TLD),
        ],
    )
    .expect("the root zone");
    let mut com_records = vec![soa(&com, 900)];
    let mut per_zone: Vec<Vec<Record>> = vec![Vec::new(); s.zones as usize];
    for z in 0..s.zones {
        let origin = name(&format!("d{z}.com."));
        let ns_name = name(&format!("ns.d{z}.com."));
        let ip = server_ip(z % s.servers);
        com_records.push(ns(origin.clone(), ns_name.clone()));
        com_records.push(a(ns_name.clone(), 86_400, ip));
        let recs = &mut per_zone[z as usize];
        recs.push(soa(&origin, 300));
        recs.push(ns(origin.clone(), ns_name.clone()));
        recs.push(a(ns_name, 86_400, ip));
    }
    for i in 0..s.names {
        let z = i % s.zones;
        let owner = name(&format!("n{i}.d{z}.com."));
        per_zone[z as usize].push(a(owner, 3600, name_ip(i)));
    }
    let com_zone = Zone::new(com, com_records).expect("the com. zone");
    let mut by_server: Vec<Vec<Zone>> = vec![Vec::new(); s.servers as usize];
    for (z, recs) in per_zone.into_iter().enumerate() {
        let origin = name(&format!("d{z}.com."));
        let zone = Zone::new(origin, recs).expect("a benchmark zone");
        by_server[z % s.servers as usize].push(zone);
    }
    (root_zone, com_zone, by_server)
}

/// Runs the benchmark.
///
/// Long because it lays out the whole scenario (servers, resolvers,
/// clients and their lookups) and its report in one place.
pub fn run(s: &Sizes) -> Measurement {
    let t0 = Instant::now();
    let mut sim = Simulation::new(1);
    let mut cfg = NetworkConfig::ideal("lan");
    cfg.latency_ns = 100_000;
    let lan = sim.add_network(cfg);
    let (root_zone, com_zone, by_server) = zones(s);
    let serve = |sim: &mut Simulation, label: &str, ip: Ipv4Addr, zones: Vec<Zone>| {
        let m = sim
            .add_group(label, None, Protocols::UDP_TCP)
            .expect("fresh group");
        sim.attach(m, lan, ip).expect("address");
        let cfg = Rc::new(server::Config::new(zones));
        sim.spawn_daemon(m, "dns_server", move |h: Host| server::run(h, cfg));
    };
    serve(&mut sim, "root", ROOT, vec![root_zone]);
    serve(&mut sim, "tld", TLD, vec![com_zone]);
    for (k, zones) in by_server.into_iter().enumerate() {
        serve(&mut sim, &format!("auth-{k}"), server_ip(k as u32), zones);
    }
    let first_res = sim
        .add_group("resolver", Some(s.resolvers), Protocols::UDP_TCP)
        .expect("fresh group");
    let rcfg = Rc::new(resolver::Config::new(vec![ROOT]));
    let res_ip = |r: u32| Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 0, 2, 0)) + r);
    for r in 0..s.resolvers {
        sim.attach(first_res + r, lan, res_ip(r)).expect("address");
        let cfg = rcfg.clone();
        sim.spawn_daemon(first_res + r, "dns_resolver", move |h: Host| {
            resolver::run(h, cfg)
        });
    }
    let first = sim
        .add_group("client", Some(s.clients), Protocols::UDP)
        .expect("fresh group");
    // Rejection-inversion sampling (rand_distr): O(1) per draw, where a
    // search of the 100,000-entry CDF cost a cache miss per step.
    let zipf = Zipf::new(f64::from(s.names), 1.0).expect("a Zipf law");
    let done = Rc::new(Cell::new(0u64));
    let failed = Rc::new(Cell::new(0u64));
    let per_client = s.lookups / u64::from(s.clients);
    // The names to look up, written once: the clients ask, they do not
    // format.
    let names: Rc<[String]> = (0..s.names)
        .map(|i| format!("n{i}.d{}.com", i % s.zones))
        .collect();
    for c in 0..s.clients {
        let m = first + c;
        let ip = Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 64, 0, 0)) + c);
        sim.attach(m, lan, ip).expect("address");
        let conf = ResolverConf {
            servers: vec![res_ip(c % s.resolvers)],
            domain: None,
        };
        sim.set_resolver(m, Some(conf)).expect("a machine");
        let (done, failed, names) = (done.clone(), failed.clone(), names.clone());
        sim.spawn(m, "lookups", move |h: Host| async move {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(h.random_u64());
            for _ in 0..per_client {
                // Ranks 1..=names; name i = rank - 1.
                let i = zipf.sample(&mut rng) as u32 - 1;
                match elvis_dns::resolve(&h, &names[i as usize]).await {
                    Ok(ip) if ip == name_ip(i) => done.set(done.get() + 1),
                    _ => failed.set(failed.get() + 1),
                }
            }
            Ok(())
        });
    }
    let build_s = t0.elapsed().as_secs_f64();
    let report = sim.run();
    let sum = |metric: &str| -> u64 {
        report
            .metrics
            .iter()
            .filter(|m| m.application == "dns_resolver" && m.name == metric)
            .map(|m| m.value as u64)
            .sum()
    };
    let lookups = done.get() + failed.get();
    let run_s = report.performance.wall_time_s;
    Measurement {
        scenario: "dns-lookups".into(),
        n: lookups,
        build_s,
        run_s,
        events: report.events,
        events_per_s: report.performance.events_per_s,
        delivered: done.get(),
        ok: report.success() && failed.get() == 0 && lookups == per_client * u64::from(s.clients),
        extra: serde_json::json!({
            "names": s.names,
            "resolvers": s.resolvers,
            "clients": s.clients,
            "zones": s.zones,
            "servers": s.servers,
            "failed": failed.get(),
            "lookups_per_wall_s": lookups as f64 / run_s.max(1e-9),
            "sim_time_s": report.sim_time_ns as f64 / 1e9,
            "resolver_cache_hits": sum("cache_hits"),
            "resolver_upstream_queries": sum("upstream_queries"),
            "resolver_upstream_timeouts": sum("upstream_timeouts"),
        }),
        ..Default::default()
    }
}
