//! A tree: routers in a complete `fanout`-ary tree `depth` levels deep,
//! `fanout` hosts under each router of the last level.
//!
//! ```text
//!                 router-0                 depth 2, fanout 2
//!               /          \
//!        router-1          router-2
//!        /     \           /     \
//!    host-0  host-1    host-2  host-3
//! ```
//!
//! `(fᵈ − 1)/(f − 1)` routers numbered breadth-first (`router-0` is the
//! root; the children of router r are `f·r + 1` … `f·r + f`) and `fᵈ`
//! hosts numbered left to right. Links are numbered as consecutive /30
//! blocks from `10.0.0.0` (see [`super::chain`](mod@super::chain)), created breadth-first:
//! the link from parent to child c is `link-c` (children counted over
//! routers then hosts, so `link-(r−1)` reaches router r and the host links
//! follow); the parent is at `+1`, the child at `+2`. Routes are automatic
//! (shortest paths by hop count): hosts whose paths from the root agree on
//! their first L branches are `2·(depth − L)` links apart.

use super::{
    check, group, link, names_free, Numbered, Topology, TopologyError, HOST_PROTOCOLS,
    ROUTER_PROTOCOLS,
};
use crate::net::NetworkConfig;
use crate::simulation::Simulation;
use crate::stack::route::Metric;

/// The parameters of [`tree`].
#[derive(Clone, Debug, PartialEq)]
pub struct TreeParams {
    /// Router levels (1: one router with `fanout` hosts).
    pub depth: u32,
    /// Children per router.
    pub fanout: u32,
    /// Every link's configuration (name replaced).
    pub link: NetworkConfig,
    /// Prepended to every machine and network name.
    pub prefix: String,
}

impl TreeParams {
    /// Returns a tree with ideal links.
    pub fn new(depth: u32, fanout: u32) -> Self {
        TreeParams {
            depth,
            fanout,
            link: NetworkConfig::ideal(""),
            prefix: String::new(),
        }
    }

    /// Returns the number of links between hosts `a` and `b`.
    pub fn host_distance(&self, a: u32, b: u32) -> u32 {
        let (mut a, mut b, mut up) = (a, b, 0);
        while a != b {
            a /= self.fanout;
            b /= self.fanout;
            up += 1;
        }
        2 * up
    }
}

/// Builds the tree into `sim` and turns on automatic routes.
///
/// # Errors
/// `BadParameter` (`depth` or `fanout`) for a zero depth, a fanout below 2
/// or a tree whose links do not fit the address plan; `NameClash`.
pub fn tree(sim: &mut Simulation, p: &TreeParams) -> Result<Topology, TopologyError> {
    check(
        p.depth >= 1,
        "depth",
        "a tree needs at least one level of routers",
    )?;
    check(
        p.fanout >= 2,
        "fanout",
        format!(
            "fanout {} : a tree needs at least 2 children per router",
            p.fanout
        ),
    )?;
    let (f, d) = (u64::from(p.fanout), p.depth);
    let hosts_n = f
        .checked_pow(d)
        .filter(|&h| h < u64::from(Numbered::MAX) / 2);
    let Some(hosts_n) = hosts_n else {
        return Err(super::TopologyError::BadParameter {
            key: "depth",
            message: format!("fanout {f} to the power {d} hosts do not fit in 10.0.0.0/8"),
        });
    };
    let routers_n = (hosts_n - 1) / (f - 1);
    names_free(sim, &p.prefix, &["host", "router"])?;
    let routers = group(sim, &p.prefix, "router", routers_n as u32, ROUTER_PROTOCOLS)?;
    let hosts = group(sim, &p.prefix, "host", hosts_n as u32, HOST_PROTOCOLS)?;
    let mut topo = Topology {
        hosts: (hosts..hosts + hosts_n as u32).collect(),
        routers: (routers..routers + routers_n as u32).collect(),
        ..Topology::default()
    };
    let mut numbers = Numbered::default();
    // Child c (1-based, breadth-first) hangs off router (c - 1) / f.
    for c in 1..routers_n + hosts_n {
        let parent = routers + ((c - 1) / f) as u32;
        let child = if c < routers_n {
            routers + c as u32
        } else {
            hosts + (c - routers_n) as u32
        };
        let cfg = link(&p.link, format!("{}link-{}", p.prefix, c - 1));
        let (net, _, ip) = numbers.connect(sim, cfg, parent, child)?;
        topo.networks.push(net);
        if c >= routers_n {
            topo.addresses.push(ip);
        }
    }
    for &r in &topo.routers {
        sim.set_forwarding(r, true)?;
    }
    sim.set_auto_routes(Some(Metric::Hops));
    Ok(topo)
}
