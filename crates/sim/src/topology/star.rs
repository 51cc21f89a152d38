//! A star: n hosts around one hub, either a switch (one switched LAN, no
//! routing at all) or a router (one point-to-point link per host).
//!
//! ```text
//!          host-1
//!            │
//! host-0 ── hub ── host-2        hub: the LAN `star` or `router-0`
//!            │
//!          host-3
//! ```
//!
//! Hosts are `host-0` … `host-(n-1)` with addresses `10.1.0.0 + i + 1`
//! (`10.1.0.1`, `10.1.0.2`, … counting on through `10.1.1.0` up to
//! `10.255.255.254`, so at most [`StarParams::MAX_HOSTS`]). With a switch, the one network is `star`
//! (a [`NetworkKind::Switch`] with the link
//! configuration's bandwidth, latency and queue). With a router,
//! `router-0` has address `10.0.0.1` on every link (`link-i` joins host
//! i), every host's default route points at it, and it needs no routes
//! (every host is directly attached).

use super::{
    check, connect, group, link, names_free, Topology, TopologyError, HOST_PROTOCOLS,
    ROUTER_PROTOCOLS,
};
use crate::net::{NetworkConfig, NetworkKind};
use crate::simulation::Simulation;
use std::net::Ipv4Addr;

/// The parameters of [`star`].
#[derive(Clone, Debug, PartialEq)]
pub struct StarParams {
    /// Hosts around the hub: 1..=[`StarParams::MAX_HOSTS`].
    pub hosts: u32,
    /// A router at the hub (point-to-point links) instead of a switch.
    pub router: bool,
    /// The configuration of the LAN or of every link (name replaced).
    pub link: NetworkConfig,
    /// Prepended to every machine and network name.
    pub prefix: String,
}

impl StarParams {
    /// The most hosts a star has: addresses `10.1.0.1` … `10.255.255.254`.
    pub const MAX_HOSTS: u32 = 0x0aff_fffe - 0x0a01_0001 + 1;

    /// Returns a star of `hosts` hosts around a switch, ideal links.
    pub fn new(hosts: u32) -> Self {
        StarParams {
            hosts,
            router: false,
            link: NetworkConfig::ideal(""),
            prefix: String::new(),
        }
    }

    /// Returns the address of host `i`.
    pub fn host_address(i: u32) -> Ipv4Addr {
        Ipv4Addr::from(0x0a01_0001 + i)
    }
}

/// The hub router's address.
const HUB: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

/// Builds the star into `sim`.
///
/// # Errors
/// `BadParameter { key: "n" }` for 0 or more than
/// [`StarParams::MAX_HOSTS`] hosts;
/// `NameClash`.
pub fn star(sim: &mut Simulation, p: &StarParams) -> Result<Topology, TopologyError> {
    check(
        (1..=StarParams::MAX_HOSTS).contains(&p.hosts),
        "n",
        format!(
            "{} hosts: a star has 1 to {} (addresses 10.1.0.1 to 10.255.255.254)",
            p.hosts,
            StarParams::MAX_HOSTS
        ),
    )?;
    names_free(sim, &p.prefix, &["host", "router"])?;
    let first = group(sim, &p.prefix, "host", p.hosts, HOST_PROTOCOLS)?;
    let mut topo = Topology {
        hosts: (first..first + p.hosts).collect(),
        addresses: (0..p.hosts).map(StarParams::host_address).collect(),
        ..Topology::default()
    };
    if !p.router {
        let cfg = NetworkConfig {
            name: format!("{}star", p.prefix),
            kind: NetworkKind::Switch,
            ..p.link.clone()
        };
        let lan = sim.add_network(cfg);
        for i in 0..p.hosts {
            sim.attach(first + i, lan, StarParams::host_address(i))?;
        }
        topo.networks.push(lan);
        return Ok(topo);
    }
    let hub = group(sim, &p.prefix, "router", 1, ROUTER_PROTOCOLS)?;
    sim.set_forwarding(hub, true)?;
    topo.routers.push(hub);
    for i in 0..p.hosts {
        let cfg = link(&p.link, format!("{}link-{i}", p.prefix));
        let ip = StarParams::host_address(i);
        topo.networks
            .push(connect(sim, cfg, (first + i, ip), (hub, HUB))?);
        sim.add_routes_on(first + i, &[(Ipv4Addr::UNSPECIFIED, 0, &[(0, HUB)])])?;
    }
    Ok(topo)
}
