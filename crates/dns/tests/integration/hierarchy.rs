//! The test network: every DNS role on one LAN.
//!
//! ```text
//!   root 10.0.0.1   (.)            delegates com. and net.
//!   tld  10.0.0.2   (com., net.)   delegates example.com. to ns1 and ns2,
//!                                  example.net. to ns3
//!   ns1  10.0.0.3   (example.com.)
//!   ns2  10.0.0.4   (example.com.)  a black hole when `dead_ns2`
//!   ns3  10.0.0.5   (example.net.)
//!   resolver 10.0.0.6
//!   client   10.0.0.7, then more clients
//! ```

use elvis_dns::proto::rr::Name;
use elvis_dns::{master, resolver, server, Zone};
use elvis_sim::stack::machine::ResolverConf;
use elvis_sim::{Host, MachineId, NetworkConfig, Protocols, Report, Simulation};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::rc::Rc;

pub const ROOT: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
pub const TLD: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
pub const NS1: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 3);
pub const NS2: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 4);
pub const NS3: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 5);
pub const RESOLVER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 6);
pub const WWW: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 3);

const ROOT_ZONE: &str = "\
$TTL 86400
@ SOA a.root-servers.net. nstld 1 1800 900 604800 86400
com. NS tld.nic.
net. NS tld.nic.
tld.nic. A 10.0.0.2
";

const COM_ZONE: &str = "\
$TTL 86400
@ SOA tld.nic. nstld 1 1800 900 604800 900
example NS ns1.example
example NS ns2.example
ns1.example A 10.0.0.3
ns2.example A 10.0.0.4
";

const NET_ZONE: &str = "\
$TTL 86400
@ SOA tld.nic. nstld 1 1800 900 604800 900
example NS ns3.example
ns3.example A 10.0.0.5
";

/// example.com: `www` (TTL 300), a CNAME chain into example.net, a
/// 100-address name whose answer needs TCP, an SOA MINIMUM of 60 s.
pub fn example_com() -> String {
    let mut z = String::from(
        "\
$TTL 3600
@ SOA ns1 hostmaster 1 3600 600 86400 60
@ NS ns1
@ NS ns2
ns1 A 10.0.0.3
ns2 A 10.0.0.4
www 300 A 10.1.0.3
web CNAME www
chain CNAME www.example.net.
mail MX 10 www
",
    );
    for i in 0..100 {
        z.push_str(&format!("big A 10.2.0.{i}\n"));
    }
    z
}

const EXAMPLE_NET: &str = "\
$TTL 3600
@ SOA ns3 hostmaster 1 3600 600 86400 60
@ NS ns3
ns3 A 10.0.0.5
www CNAME final
final 120 A 10.1.0.4
";

fn zone(origin: &str, text: &str) -> Zone {
    let o = Name::from_ascii(origin).unwrap();
    Zone::new(o.clone(), master::parse(text, &o, origin).unwrap()).unwrap()
}

/// A built hierarchy: the simulation and where its machines are.
pub struct Net {
    pub sim: Simulation,
    pub resolver: MachineId,
    /// The first client; more follow with ids `client + 1`, ….
    pub client: MachineId,
}

/// Builds the hierarchy with `clients` client machines (10.0.0.7 on),
/// each pointed at the resolver (or at `stub_servers` when given);
/// `dead_ns2` makes ns2 swallow every query.
pub fn hierarchy(
    seed: u64,
    clients: u32,
    dead_ns2: bool,
    stub_servers: Option<Vec<Ipv4Addr>>,
) -> Net {
    let mut sim = Simulation::new(seed);
    let mut cfg = NetworkConfig::ideal("lan");
    cfg.bandwidth_bps = Some(100_000_000);
    cfg.latency_ns = 1_000_000;
    let lan = sim.add_network(cfg);
    let all = Protocols {
        arp: true,
        udp: true,
        tcp: true,
    };
    let mut add = |name: &str, ip: Ipv4Addr| {
        let m = sim.add_group(name, None, all).unwrap();
        sim.attach(m, lan, ip).unwrap();
        m
    };
    let root = add("root", ROOT);
    let tld = add("tld", TLD);
    let ns1 = add("ns1", NS1);
    let ns2 = add("ns2", NS2);
    let ns3 = add("ns3", NS3);
    let res = add("resolver", RESOLVER);
    let first = add("client", Ipv4Addr::new(10, 0, 0, 7));
    for i in 1..clients {
        add(&format!("client{i}"), Ipv4Addr::new(10, 0, 0, 7 + i as u8));
    }
    let com = zone("example.com.", &example_com());
    let servers: [(MachineId, Vec<Zone>); 5] = [
        (root, vec![zone(".", ROOT_ZONE)]),
        (tld, vec![zone("com.", COM_ZONE), zone("net.", NET_ZONE)]),
        (ns1, vec![com.clone()]),
        (ns2, vec![com]),
        (ns3, vec![zone("example.net.", EXAMPLE_NET)]),
    ];
    for (m, zones) in servers {
        if m == ns2 && dead_ns2 {
            sim.spawn_daemon(m, "black_hole", |h: Host| async move {
                let s = h.udp_bind(53)?;
                loop {
                    s.recv_from().await?;
                }
            });
            continue;
        }
        let cfg = Rc::new(server::Config::new(zones));
        sim.spawn_daemon(m, "dns_server", move |h: Host| server::run(h, cfg));
    }
    let rcfg = Rc::new(resolver::Config::new(vec![ROOT]));
    sim.spawn_daemon(res, "dns_resolver", move |h: Host| resolver::run(h, rcfg));
    let servers = stub_servers.unwrap_or(vec![RESOLVER]);
    for m in first..first + clients {
        let conf = ResolverConf {
            servers: servers.clone(),
            domain: Some("example.com".into()),
        };
        sim.set_resolver(m, Some(conf)).unwrap();
    }
    Net {
        sim,
        resolver: res,
        client: first,
    }
}

/// Returns the value of metric `name` published by application `app`
/// on machine `machine` (0 when absent).
pub fn metric(r: &Report, machine: &str, app: &str, name: &str) -> u64 {
    r.metrics
        .iter()
        .filter(|m| m.machine == machine && m.application == app && m.name == name)
        .map(|m| m.value as u64)
        .next_back()
        .unwrap_or(0)
}

/// Asserts the run succeeded.
#[track_caller]
pub fn assert_success(r: &Report) {
    assert!(r.success(), "run failed: {}", r.deterministic_json());
}

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("elvis-dns-it-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
