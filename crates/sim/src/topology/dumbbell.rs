//! A dumbbell: n hosts on the left and n on the right, each on its own
//! access link to its side's router; the two routers share one bottleneck
//! link (the usual congestion-control experiment).
//!
//! ```text
//! left-0 ──┐                          ┌── right-0
//! left-1 ──┤ router-0 ══════ router-1 ├── right-1
//!   …    ──┘      bottleneck          └──   …
//! ```
//!
//! Addresses: `left-i` is `10.1.0.0 + i + 1`, `right-i` is
//! `10.2.0.0 + i + 1`; `router-0` is `10.0.0.1` and `router-1`
//! `10.0.0.2` on all their links (unnumbered interfaces). Routes: each
//! host's default route points at its router; `router-0` sends
//! `10.2.0.0/16` over the bottleneck, `router-1` sends `10.1.0.0/16`.
//! Networks: `bottleneck`, then `left-i` (access link of `left-i`), then
//! `right-i`. Interfaces: each router has the bottleneck on interface 0 and
//! its hosts' links on 1..=n.
//!
//! [`Topology::hosts`] lists `left-0` … then `right-0` …;
//! [`Topology::routers`] is `[router-0, router-1]`.

use super::{
    check, connect, group, link, names_free, Topology, TopologyError, HOST_PROTOCOLS,
    ROUTER_PROTOCOLS,
};
use crate::net::NetworkConfig;
use crate::simulation::Simulation;
use std::net::Ipv4Addr;

/// The parameters of [`dumbbell`].
#[derive(Clone, Debug, PartialEq)]
pub struct DumbbellParams {
    /// Hosts on each side: 1..=65,534.
    pub hosts: u32,
    /// Every access link's configuration (name replaced).
    pub access: NetworkConfig,
    /// The bottleneck link's configuration (name replaced).
    pub bottleneck: NetworkConfig,
    /// Prepended to every machine and network name.
    pub prefix: String,
}

impl DumbbellParams {
    /// Returns a dumbbell of `hosts` per side, ideal links.
    pub fn new(hosts: u32) -> Self {
        DumbbellParams {
            hosts,
            access: NetworkConfig::ideal(""),
            bottleneck: NetworkConfig::ideal(""),
            prefix: String::new(),
        }
    }

    /// Returns the address of host `i` on the left (`side` 0) or right (1).
    pub fn host_address(side: u32, i: u32) -> Ipv4Addr {
        Ipv4Addr::from(0x0a01_0001 + (side << 16) + i)
    }
}

/// Builds the dumbbell into `sim`.
///
/// # Errors
/// `BadParameter { key: "n" }` for 0 or more than 65,534 hosts per side;
/// `NameClash`.
pub fn dumbbell(sim: &mut Simulation, p: &DumbbellParams) -> Result<Topology, TopologyError> {
    let n = p.hosts;
    check(
        (1..=65_534).contains(&n),
        "n",
        format!("{n} hosts per side: a dumbbell has 1 to 65,534"),
    )?;
    names_free(sim, &p.prefix, &["left", "right", "router"])?;
    let sides = [
        group(sim, &p.prefix, "left", n, HOST_PROTOCOLS)?,
        group(sim, &p.prefix, "right", n, HOST_PROTOCOLS)?,
    ];
    let r = group(sim, &p.prefix, "router", 2, ROUTER_PROTOCOLS)?;
    let gw = [Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2)];
    let mut topo = Topology {
        routers: vec![r, r + 1],
        ..Topology::default()
    };
    let cfg = link(&p.bottleneck, format!("{}bottleneck", p.prefix));
    topo.networks
        .push(connect(sim, cfg, (r, gw[0]), (r + 1, gw[1]))?);
    for (side, name) in ["left", "right"].into_iter().enumerate() {
        for i in 0..n {
            let host = sides[side] + i;
            let ip = DumbbellParams::host_address(side as u32, i);
            let cfg = link(&p.access, format!("{}{name}-{i}", p.prefix));
            topo.networks
                .push(connect(sim, cfg, (host, ip), (r + side as u32, gw[side]))?);
            sim.add_routes_on(host, &[(Ipv4Addr::UNSPECIFIED, 0, &[(0, gw[side])])])?;
            topo.hosts.push(host);
            topo.addresses.push(ip);
        }
    }
    for side in 0..2u32 {
        let far = Ipv4Addr::new(10, 2 - side as u8, 0, 0);
        sim.set_forwarding(r + side, true)?;
        sim.add_routes_on(r + side, &[(far, 16, &[(0, gw[1 - side as usize])])])?;
    }
    Ok(topo)
}
