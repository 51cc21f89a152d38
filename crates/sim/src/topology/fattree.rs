//! FatTree(k): the three-tier Clos network of Al-Fares, Loukissas and
//! Vahdat, "A Scalable, Commodity Data Center Network Architecture"
//! (SIGCOMM 2008), §3.
//!
//! ```text
//!              core-0   core-1   core-2   core-3          (k/2)² core switches
//!               |  \     /  |     |  \     /  |
//!   pod 0:    agg-0     agg-1          …                  k/2 aggregation
//!               |  \   /  |                                per pod
//!             edge-0   edge-1                              k/2 edge per pod
//!             /  \     /  \
//!         host-0 host-1 host-2 host-3                      k/2 hosts per edge
//! ```
//!
//! k pods; each has k/2 edge and k/2 aggregation switches, fully meshed;
//! each edge switch serves k/2 hosts; core switch `(j, i)` (j, i in
//! 0..k/2) joins aggregation switch j of every pod. Every wire is a
//! point-to-point link with the configuration of [`FatTreeParams::link`].
//! Totals: k³/4 hosts, 5k²/4 switches, 3k³/4 links.
//!
//! # Order and names
//! - hosts: `host-h` with `h = pod·(k/2)² + edge·(k/2) + i`;
//! - edge switches: `edge-(pod·k/2 + e)`; aggregation: `agg-(pod·k/2 + a)`;
//!   core: `core-(j·k/2 + i)`; [`Topology::routers`] lists edge, then
//!   aggregation, then core switches, each in index order;
//! - networks, in creation order: host links `p{pod}-e{e}-h{i}` (pod, edge,
//!   host order), then edge–aggregation links `p{pod}-e{e}-a{a}`, then
//!   aggregation–core links `p{pod}-a{j}-c{c}`.
//!
//! Interfaces: edge `(p, e)` has its hosts on interfaces 0..k/2 and
//! aggregation switch a on k/2 + a; aggregation `(p, a)` has edge e on e
//! and core `(a, i)` on k/2 + i; core `(j, i)` has pod p on p.
//!
//! # Addresses (the paper's §3.2 scheme)
//! Each switch has one address, used on all its links ("unnumbered"
//! interfaces, which is what makes the scheme work for point-to-point
//! links): edge `(p, e)` is `10.p.e.1`, aggregation `(p, a)` is
//! `10.p.(k/2+a).1`, core `(j, i)` is `10.k.(j+1).(i+1)`; host i of edge
//! `(p, e)` is `10.p.e.(i+2)`. Every octet stays below 256 for even k up
//! to 254 (FatTree-128 has pods 0..127 and core addresses `10.128.*.*`).
//!
//! # Routes (two-level, O(k) per switch)
//! The paper's two-level tables match prefixes going down and host-id
//! suffixes going up; elvis has no suffix match, so the upward level is an
//! equal-cost multipath route hashed on the 5-tuple (as ECMP data centres
//! do, the paper's §3.4 "flow classification"). Directly attached
//! neighbours need no route (the on-link check comes first).
//! - host: `0.0.0.0/0` via its edge switch;
//! - edge `(p, e)`: `10.k.(j+1).0/24` via aggregation j (reaching core
//!   group j), `0.0.0.0/0` via all k/2 aggregation switches (ECMP);
//! - aggregation `(p, a)`: `10.p.e.0/24` via edge e; `10.p.0.0/16` and
//!   `10.k.0.0/16` via edge 0 (the pod's other aggregation switches and
//!   other core groups, for traffic to switch addresses); `0.0.0.0/0` via
//!   its k/2 core switches (ECMP);
//! - core `(j, i)`: `10.p.0.0/16` via aggregation j of pod p;
//!   `10.k.0.0/16` via pod 0 (other cores).
//!
//! So a host reaches a host under the same edge switch in 2 links, in the
//! same pod in 4, in another pod in 6 (the paper's path lengths), and
//! every switch address is reachable from everywhere.

use super::{
    check, connect, group, link, names_free, Topology, TopologyError, HOST_PROTOCOLS,
    ROUTER_PROTOCOLS,
};
use crate::machine::MachineId;
use crate::net::NetworkConfig;
use crate::simulation::Simulation;
use crate::stack::route::IfaceRoute;
use std::net::Ipv4Addr;

/// The parameters of [`fat_tree`].
#[derive(Clone, Debug, PartialEq)]
pub struct FatTreeParams {
    /// Ports per switch: even, 2..=254.
    pub k: u32,
    /// Every link's configuration (the name is replaced).
    pub link: NetworkConfig,
    /// Prepended to every machine and network name.
    pub prefix: String,
}

impl FatTreeParams {
    /// Returns FatTree(k) with ideal links and no name prefix.
    pub fn new(k: u32) -> Self {
        FatTreeParams {
            k,
            link: NetworkConfig::ideal(""),
            prefix: String::new(),
        }
    }

    /// Sets every link's bandwidth (bit/s) and latency (ns).
    pub fn with_rate(mut self, bandwidth_bps: u64, latency_ns: u64) -> Self {
        self.link = self.link.with_rate(bandwidth_bps, latency_ns);
        self
    }

    fn half(&self) -> u32 {
        self.k / 2
    }

    /// Returns the number of hosts, k³/4.
    pub fn host_count(&self) -> u64 {
        u64::from(self.k).pow(3) / 4
    }

    /// Returns the number of switches, 5k²/4.
    pub fn switch_count(&self) -> u64 {
        5 * u64::from(self.k).pow(2) / 4
    }

    /// Returns the number of links, 3k³/4.
    pub fn link_count(&self) -> u64 {
        3 * u64::from(self.k).pow(3) / 4
    }

    /// Returns the index (into [`Topology::hosts`]) of host `i` of edge
    /// switch `edge` of pod `pod`.
    pub fn host_index(&self, pod: u32, edge: u32, i: u32) -> usize {
        let h = self.half() as usize;
        (pod as usize * h + edge as usize) * h + i as usize
    }

    /// Returns the (pod, edge, i) of host index `h`.
    pub fn host_position(&self, h: usize) -> (u32, u32, u32) {
        let half = self.half() as usize;
        (
            (h / (half * half)) as u32,
            (h / half % half) as u32,
            (h % half) as u32,
        )
    }

    /// Returns the address of host `i` of edge switch `edge` of pod `pod`.
    pub fn host_address(&self, pod: u32, edge: u32, i: u32) -> Ipv4Addr {
        Ipv4Addr::new(10, pod as u8, edge as u8, (i + 2) as u8)
    }

    /// Returns the address of edge switch `e` of pod `pod`.
    pub fn edge_address(&self, pod: u32, e: u32) -> Ipv4Addr {
        Ipv4Addr::new(10, pod as u8, e as u8, 1)
    }

    /// Returns the address of aggregation switch `a` of pod `pod`.
    pub fn agg_address(&self, pod: u32, a: u32) -> Ipv4Addr {
        Ipv4Addr::new(10, pod as u8, (self.half() + a) as u8, 1)
    }

    /// Returns the address of core switch `(j, i)`.
    pub fn core_address(&self, j: u32, i: u32) -> Ipv4Addr {
        Ipv4Addr::new(10, self.k as u8, (j + 1) as u8, (i + 1) as u8)
    }

    /// Checks k.
    ///
    /// # Errors
    /// `BadParameter { key: "k" }` for an odd k, or k outside 2..=254.
    pub fn validate(&self) -> Result<(), TopologyError> {
        check(
            self.k >= 2,
            "k",
            format!("k = {} is too small: a fat tree needs k ≥ 2", self.k),
        )?;
        check(
            self.k.is_multiple_of(2),
            "k",
            format!(
                "k = {} is odd: a fat tree needs an even number of ports per switch",
                self.k
            ),
        )?;
        check(
            self.k <= 254,
            "k",
            format!(
                "k = {} is too large: the 10.pod.switch.id addresses need k ≤ 254",
                self.k
            ),
        )
    }
}

/// The machine ids of the four groups.
struct Ids {
    host: MachineId,
    edge: MachineId,
    agg: MachineId,
    core: MachineId,
}

/// Builds FatTree(k) into `sim` (see the module docs for names, addresses
/// and routes).
///
/// # Errors
/// `BadParameter` for a bad k; `NameClash` when a group name is taken
/// (checked before anything is created).
pub fn fat_tree(sim: &mut Simulation, p: &FatTreeParams) -> Result<Topology, TopologyError> {
    p.validate()?;
    names_free(sim, &p.prefix, &["host", "edge", "agg", "core"])?;
    let (k, h) = (p.k, p.half());
    let ids = Ids {
        host: group(sim, &p.prefix, "host", k * h * h, HOST_PROTOCOLS)?,
        edge: group(sim, &p.prefix, "edge", k * h, ROUTER_PROTOCOLS)?,
        agg: group(sim, &p.prefix, "agg", k * h, ROUTER_PROTOCOLS)?,
        core: group(sim, &p.prefix, "core", h * h, ROUTER_PROTOCOLS)?,
    };
    let mut topo = Topology {
        hosts: (ids.host..ids.host + k * h * h).collect(),
        routers: (ids.edge..ids.core + h * h).collect(),
        ..Topology::default()
    };
    topo.networks.reserve(p.link_count() as usize);
    topo.addresses.reserve(p.host_count() as usize);
    wire(sim, p, &ids, &mut topo)?;
    for m in ids.edge..ids.core + h * h {
        sim.set_forwarding(m, true)?;
    }
    routes(sim, p, &ids)?;
    Ok(topo)
}

/// Creates the links, in the order the module docs give.
fn wire(
    sim: &mut Simulation,
    p: &FatTreeParams,
    ids: &Ids,
    topo: &mut Topology,
) -> Result<(), TopologyError> {
    let (k, h) = (p.k, p.half());
    let pre = &p.prefix;
    for pod in 0..k {
        for e in 0..h {
            let edge = (ids.edge + pod * h + e, p.edge_address(pod, e));
            for i in 0..h {
                let host = ids.host + p.host_index(pod, e, i) as u32;
                let ip = p.host_address(pod, e, i);
                let cfg = link(&p.link, format!("{pre}p{pod}-e{e}-h{i}"));
                topo.networks.push(connect(sim, cfg, (host, ip), edge)?);
                topo.addresses.push(ip);
            }
        }
    }
    for pod in 0..k {
        for e in 0..h {
            let edge = (ids.edge + pod * h + e, p.edge_address(pod, e));
            for a in 0..h {
                let agg = (ids.agg + pod * h + a, p.agg_address(pod, a));
                let cfg = link(&p.link, format!("{pre}p{pod}-e{e}-a{a}"));
                topo.networks.push(connect(sim, cfg, edge, agg)?);
            }
        }
    }
    for pod in 0..k {
        for j in 0..h {
            let agg = (ids.agg + pod * h + j, p.agg_address(pod, j));
            for i in 0..h {
                let c = j * h + i;
                let core = (ids.core + c, p.core_address(j, i));
                let cfg = link(&p.link, format!("{pre}p{pod}-a{j}-c{c}"));
                topo.networks.push(connect(sim, cfg, agg, core)?);
            }
        }
    }
    Ok(())
}

/// Installs the two-level tables of the module docs.
fn routes(sim: &mut Simulation, p: &FatTreeParams, ids: &Ids) -> Result<(), TopologyError> {
    let (k, h) = (p.k, p.half());
    let any = Ipv4Addr::UNSPECIFIED;
    let core_net = Ipv4Addr::new(10, k as u8, 0, 0);
    for pod in 0..k {
        for e in 0..h {
            let gw = [(0u32, p.edge_address(pod, e))];
            for i in 0..h {
                let host = ids.host + p.host_index(pod, e, i) as u32;
                sim.add_routes_on(host, &[(any, 0, &gw)])?;
            }
            let up: Vec<(u32, Ipv4Addr)> = (0..h).map(|a| (h + a, p.agg_address(pod, a))).collect();
            let mut table: Vec<IfaceRoute<'_>> = Vec::with_capacity(h as usize + 1);
            for j in 0..h {
                table.push((
                    Ipv4Addr::new(10, k as u8, (j + 1) as u8, 0),
                    24,
                    &up[j as usize..=j as usize],
                ));
            }
            table.push((any, 0, &up));
            sim.add_routes_on(ids.edge + pod * h + e, &table)?;
        }
        for a in 0..h {
            let down: Vec<(u32, Ipv4Addr)> = (0..h).map(|e| (e, p.edge_address(pod, e))).collect();
            let up: Vec<(u32, Ipv4Addr)> = (0..h).map(|i| (h + i, p.core_address(a, i))).collect();
            let mut table: Vec<IfaceRoute<'_>> = Vec::with_capacity(h as usize + 3);
            for e in 0..h {
                table.push((
                    Ipv4Addr::new(10, pod as u8, e as u8, 0),
                    24,
                    &down[e as usize..=e as usize],
                ));
            }
            table.push((Ipv4Addr::new(10, pod as u8, 0, 0), 16, &down[..1]));
            table.push((core_net, 16, &down[..1]));
            table.push((any, 0, &up));
            sim.add_routes_on(ids.agg + pod * h + a, &table)?;
        }
    }
    for j in 0..h {
        for i in 0..h {
            let down: Vec<(u32, Ipv4Addr)> =
                (0..k).map(|pod| (pod, p.agg_address(pod, j))).collect();
            let mut table: Vec<IfaceRoute<'_>> = Vec::with_capacity(k as usize + 1);
            for pod in 0..k {
                table.push((
                    Ipv4Addr::new(10, pod as u8, 0, 0),
                    16,
                    &down[pod as usize..=pod as usize],
                ));
            }
            table.push((core_net, 16, &down[..1]));
            sim.add_routes_on(ids.core + j * h + i, &table)?;
        }
    }
    Ok(())
}
