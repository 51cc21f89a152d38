//! Topology generators: whole networks of hosts, routers, links and
//! routes in one call, shared by the Rust API, the NDL `[Topology]` block
//! and the benchmarks.
//!
//! Every generator takes the [`Simulation`] to build into and a parameter
//! struct, and returns a [`Topology`]: the machines it created (hosts and
//! routers, in an order each generator documents), the networks, and the
//! hosts' addresses. Routers are machines with forwarding on
//! ([`Simulation::set_forwarding`]); every network is a point-to-point
//! [`NetworkKind::Link`] (the star's hub is the one exception: a switch
//! when no router is asked for).
//!
//! | generator | module | routes |
//! |---|---|---|
//! | FatTree(k) (Al-Fares et al., SIGCOMM 2008) | [`fattree`] | static, aggregated, ECMP upward |
//! | dumbbell | [`dumbbell`](mod@dumbbell) | static (default routes) |
//! | chain / line | [`chain`](mod@chain) | automatic |
//! | star | [`star`](mod@star) | none needed / static |
//! | tree (depth, fanout) | [`tree`](mod@tree) | static, aggregated |
//! | 2-D and 3-D torus | [`torus`](mod@torus) | automatic (shortest paths, ECMP) |
//! | GML graph (Topology Zoo, Shadow) | [`gml`] | automatic |
//!
//! # Names
//! Machines are created as counted groups (see
//! [`Simulation::add_group`]): a generator's hosts are `{prefix}host-0`,
//! `{prefix}host-1`, … and its routers `{prefix}router-0`, … (FatTree:
//! `edge-i`, `agg-i`, `core-i`; dumbbell: `left-i`, `right-i`), where
//! `prefix` is the parameter struct's `prefix` (empty by default; set it to
//! build two topologies into one simulation). A name already taken is an
//! error ([`TopologyError::NameClash`]).
//!
//! # Gaps
//! - Only IPv4; every generator numbers from `10.0.0.0/8` (one topology
//!   per simulation unless the addresses are kept apart by hand).
//! - Links of one class share one configuration (no per-link
//!   heterogeneity except in GML files).

pub mod chain;
pub mod dumbbell;
pub mod fattree;
pub mod gml;
pub mod star;
pub mod torus;
pub mod tree;

pub use chain::{chain, ChainParams};
pub use dumbbell::{dumbbell, DumbbellParams};
pub use fattree::{fat_tree, FatTreeParams};
pub use gml::{graph, Graph, GraphParams};

pub use star::{star, StarParams};
pub use torus::{torus, TorusParams};
pub use tree::{tree, TreeParams};

use crate::machine::{MachineId, Protocols};
use crate::net::{NetId, NetworkConfig, NetworkKind};
use crate::simulation::{SimError, Simulation};
use std::net::Ipv4Addr;
use thiserror::Error;

/// What a generator built.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Topology {
    /// The hosts, in the generator's documented order.
    pub hosts: Vec<MachineId>,
    /// Each host's address, in the order of `hosts`.
    pub addresses: Vec<Ipv4Addr>,
    /// The routers (switches), in the generator's documented order.
    pub routers: Vec<MachineId>,
    /// The networks, in creation order.
    pub networks: Vec<NetId>,
}

/// Why a generator could not build its topology.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum TopologyError {
    /// A parameter is out of range; `key` names it as NDL writes it.
    #[error("bad '{key}': {message}")]
    BadParameter { key: &'static str, message: String },
    /// A generated machine name is already taken.
    #[error("machine name '{0}' is already taken (set a prefix to keep topologies apart)")]
    NameClash(String),
    /// A GML file does not parse (1-based line and column in that file).
    #[error("{line}:{col}: {message}")]
    Gml {
        line: u32,
        col: u32,
        message: String,
    },
    /// A graph falls apart into several components (listed by node label,
    /// a few each).
    #[error("the graph is not connected: {}", describe_components(.0))]
    Disconnected(Vec<Vec<String>>),
    /// The simulation refused a step (should not happen with fresh names).
    #[error(transparent)]
    Sim(#[from] SimError),
}

fn describe_components(c: &[Vec<String>]) -> String {
    let shown: Vec<String> = c
        .iter()
        .take(4)
        .map(|nodes| {
            let mut s = nodes.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
            if nodes.len() > 5 {
                s.push_str(&format!(", … ({} nodes)", nodes.len()));
            }
            format!("{{{s}}}")
        })
        .collect();
    let more = if c.len() > 4 {
        format!(" and {} more", c.len() - 4)
    } else {
        String::new()
    };
    format!("{} components: {}{more}", c.len(), shown.join(" "))
}

/// Returns `template` as a point-to-point link named `name`.
pub(crate) fn link(template: &NetworkConfig, name: String) -> NetworkConfig {
    NetworkConfig {
        name,
        kind: NetworkKind::Link,
        ..template.clone()
    }
}

/// The protocols of generated hosts: IPv4, ICMP, UDP and TCP with static
/// neighbour tables.
pub const HOST_PROTOCOLS: Protocols = Protocols::UDP_TCP;

/// The protocols of generated routers (IPv4 and ICMP only).
pub const ROUTER_PROTOCOLS: Protocols = Protocols {
    udp: false,
    arp: false,
    tcp: false,
};

/// Adds a counted group `{prefix}{name}` of `n` machines; returns the first.
pub(crate) fn group(
    sim: &mut Simulation,
    prefix: &str,
    name: &str,
    n: u32,
    protocols: Protocols,
) -> Result<MachineId, TopologyError> {
    let full = format!("{prefix}{name}");
    sim.add_group(&full, Some(n), protocols)
        .map_err(|e| match e {
            SimError::DuplicateName(n) => TopologyError::NameClash(n),
            e => TopologyError::Sim(e),
        })
}

/// Checks that none of the groups `{prefix}{name}` exists yet, so that a
/// generator fails before creating anything.
pub(crate) fn names_free(
    sim: &Simulation,
    prefix: &str,
    names: &[&str],
) -> Result<(), TopologyError> {
    for n in names {
        let full = format!("{prefix}{n}");
        if sim.has_group(&full) {
            return Err(TopologyError::NameClash(full));
        }
    }
    Ok(())
}

/// Adds a link between `a` (address `ip_a`) and `b` (address `ip_b`).
pub(crate) fn connect(
    sim: &mut Simulation,
    cfg: NetworkConfig,
    (a, ip_a): (MachineId, Ipv4Addr),
    (b, ip_b): (MachineId, Ipv4Addr),
) -> Result<NetId, TopologyError> {
    let net = sim.add_network(cfg);
    sim.attach(a, net, ip_a)?;
    sim.attach(b, net, ip_b)?;
    Ok(net)
}

/// Adds `n` routers `{prefix}router[i]`, each with one host
/// `{prefix}host[i]` behind it on its own access link `{prefix}host-{i}`
/// (a copy of `access`, numbered by `numbers`); returns the topology so
/// far: hosts, routers, the access networks and the hosts' addresses.
/// Fails before creating anything if either group name is taken.
pub(crate) fn hosts_behind_routers(
    sim: &mut Simulation,
    prefix: &str,
    access: &NetworkConfig,
    n: u32,
    numbers: &mut Numbered,
) -> Result<Topology, TopologyError> {
    names_free(sim, prefix, &["host", "router"])?;
    let hosts = group(sim, prefix, "host", n, HOST_PROTOCOLS)?;
    let routers = group(sim, prefix, "router", n, ROUTER_PROTOCOLS)?;
    let mut topo = Topology {
        hosts: (hosts..hosts + n).collect(),
        routers: (routers..routers + n).collect(),
        ..Topology::default()
    };
    for i in 0..n {
        let cfg = link(access, format!("{prefix}host-{i}"));
        let (net, ip, _) = numbers.connect(sim, cfg, hosts + i, routers + i)?;
        topo.networks.push(net);
        topo.addresses.push(ip);
        sim.set_forwarding(routers + i, true)?;
    }
    Ok(topo)
}

/// Numbers point-to-point links with consecutive /30 blocks from
/// `10.0.0.0`: link i joins `10.0.0.0 + 4i + 1` (its first end) and
/// `+ 2` (its second end). Used by the generators whose routes are
/// computed automatically (every address on exactly one network, as
/// [`Simulation::set_auto_routes`] expects).
#[derive(Default)]
pub(crate) struct Numbered {
    next: u32,
}

impl Numbered {
    /// The most links 10.0.0.0/8 holds as /30 blocks.
    pub const MAX: u32 = 1 << 22;

    /// Adds a link from `a` to `b`; returns the network and both addresses.
    pub fn connect(
        &mut self,
        sim: &mut Simulation,
        cfg: NetworkConfig,
        a: MachineId,
        b: MachineId,
    ) -> Result<(NetId, Ipv4Addr, Ipv4Addr), TopologyError> {
        check(
            self.next < Self::MAX,
            "size",
            "more than 4,194,304 links do not fit in 10.0.0.0/8",
        )?;
        let base = 0x0a00_0000 + 4 * self.next;
        self.next += 1;
        let (ia, ib) = (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2));
        Ok((connect(sim, cfg, (a, ia), (b, ib))?, ia, ib))
    }
}

/// Returns an error for parameter `key` unless `ok`.
pub(crate) fn check(
    ok: bool,
    key: &'static str,
    message: impl Into<String>,
) -> Result<(), TopologyError> {
    if ok {
        Ok(())
    } else {
        Err(TopologyError::BadParameter {
            key,
            message: message.into(),
        })
    }
}
