//! A chain (line) of routers with a host at each end: the classic router
//! chain of the routing tests and the `router-chain` benchmark.
//!
//! ```text
//! host-0 ── router-0 ── router-1 ── … ── router-(n-1) ── host-1
//!        l0          l1                              ln
//! ```
//!
//! n routers, n + 1 point-to-point links `link-0` … `link-n` (link i
//! joins router i−1, or `host-0`, to router i, or `host-1`), numbered as
//! consecutive /30 blocks: link i is `10.0.0.0 + 4i`, its left end `+1`,
//! its right end `+2`; so `host-0` is `10.0.0.1` and `host-1` is
//! `10.0.0.0 + 4n + 2`. Routes are automatic (shortest paths by hop count,
//! [`Simulation::set_auto_routes`]), so a ping from `host-0` to `host-1`
//! crosses n + 1 links each way.
//!
//! [`Topology::hosts`] is `[host-0, host-1]`, [`Topology::routers`] is
//! `router-0` … in order, [`Topology::networks`] is `link-0` … in order.

use super::{
    check, group, link, names_free, Numbered, Topology, TopologyError, HOST_PROTOCOLS,
    ROUTER_PROTOCOLS,
};
use crate::net::NetworkConfig;
use crate::simulation::Simulation;
use crate::stack::route::Metric;

/// The parameters of [`chain`].
#[derive(Clone, Debug, PartialEq)]
pub struct ChainParams {
    /// Routers in the line (0: the two hosts share one link).
    pub routers: u32,
    /// Every link's configuration (the name is replaced).
    pub link: NetworkConfig,
    /// Prepended to every machine and network name.
    pub prefix: String,
}

impl ChainParams {
    /// Returns a chain of `routers` routers with ideal links.
    pub fn new(routers: u32) -> Self {
        ChainParams {
            routers,
            link: NetworkConfig::ideal(""),
            prefix: String::new(),
        }
    }
}

/// Builds the chain into `sim` and turns on automatic routes.
///
/// # Errors
/// `BadParameter { key: "n" }` for more routers than the address plan
/// holds; `NameClash` when `host` or `router` is taken.
pub fn chain(sim: &mut Simulation, p: &ChainParams) -> Result<Topology, TopologyError> {
    check(
        p.routers < Numbered::MAX - 1,
        "n",
        format!("{} routers do not fit the address plan", p.routers),
    )?;
    names_free(sim, &p.prefix, &["host", "router"])?;
    let hosts = group(sim, &p.prefix, "host", 2, HOST_PROTOCOLS)?;
    let first = if p.routers > 0 {
        group(sim, &p.prefix, "router", p.routers, ROUTER_PROTOCOLS)?
    } else {
        hosts + 2
    };
    let mut topo = Topology {
        hosts: vec![hosts, hosts + 1],
        routers: (first..first + p.routers).collect(),
        ..Topology::default()
    };
    let mut numbers = Numbered::default();
    let mut left = hosts;
    for i in 0..=p.routers {
        let right = if i == p.routers { hosts + 1 } else { first + i };
        let cfg = link(&p.link, format!("{}link-{i}", p.prefix));
        let (net, ia, ib) = numbers.connect(sim, cfg, left, right)?;
        topo.networks.push(net);
        if i == 0 {
            topo.addresses.push(ia);
        }
        if i == p.routers {
            topo.addresses.push(ib);
        }
        left = right;
    }
    for &r in &topo.routers {
        sim.set_forwarding(r, true)?;
    }
    sim.set_auto_routes(Some(Metric::Hops));
    Ok(topo)
}
