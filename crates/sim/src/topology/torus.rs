//! 2-D and 3-D tori: routers on a wrap-around grid, one host per router,
//! shortest-path routes.
//!
//! ```text
//!   ┌──────────────────────────┐
//!   └─ r0 ── r1 ── r2 ── r3 ───┘    each row and each column wraps
//!      │     │     │     │          around; host-i hangs off router-i
//!   ┌─ r4 ── r5 ── r6 ── r7 ───┐
//!   └──────────────────────────┘
//! ```
//!
//! Dimensions `X × Y` (or `X × Y × Z`), each at least 3 (with 2 the two
//! neighbours along an axis would be the same router). Router
//! `router-r` sits at `r = x + X·(y + Y·z)`; `host-r` hangs off it. Links
//! are numbered as consecutive /30 blocks from `10.0.0.0` (see
//! [`super::chain`](mod@super::chain)): first the host links (`host-r`, host at `+1`, so
//! `host-r` is `10.0.0.0 + 4r + 1`), then for each router and axis the
//! link to its `+1` neighbour along that axis (`r{r}-x`, `r{r}-y`,
//! `r{r}-z`). Routes are automatic (shortest paths by hop count with
//! equal-cost multipath, [`Simulation::set_auto_routes`]): between the
//! hosts of routers a and b a datagram crosses
//! `2 + Σ_axes min(|aᵢ − bᵢ|, Dᵢ − |aᵢ − bᵢ|)` links.

use super::{check, hosts_behind_routers, link, Numbered, Topology, TopologyError};
use crate::net::NetworkConfig;
use crate::simulation::Simulation;
use crate::stack::route::Metric;

/// The parameters of [`torus`].
#[derive(Clone, Debug, PartialEq)]
pub struct TorusParams {
    /// The size along each axis: 2 or 3 axes, each at least 3.
    pub dims: Vec<u32>,
    /// Every link's configuration (name replaced).
    pub link: NetworkConfig,
    /// Prepended to every machine and network name.
    pub prefix: String,
}

impl TorusParams {
    /// Returns a torus of the given dimensions with ideal links.
    pub fn new(dims: &[u32]) -> Self {
        TorusParams {
            dims: dims.to_vec(),
            link: NetworkConfig::ideal(""),
            prefix: String::new(),
        }
    }

    /// Returns the coordinates of router `r`.
    pub fn coordinates(&self, mut r: u32) -> Vec<u32> {
        self.dims
            .iter()
            .map(|&d| {
                let c = r % d;
                r /= d;
                c
            })
            .collect()
    }

    /// Returns the number of links between the hosts of routers `a` and `b`
    /// on shortest paths.
    pub fn host_distance(&self, a: u32, b: u32) -> u32 {
        let (ca, cb) = (self.coordinates(a), self.coordinates(b));
        let grid: u32 = (self.dims.iter().zip(ca.iter().zip(&cb)))
            .map(|(&d, (&x, &y))| x.abs_diff(y).min(d - x.abs_diff(y)))
            .sum();
        2 + grid
    }

    fn routers(&self) -> u64 {
        self.dims.iter().map(|&d| u64::from(d)).product()
    }
}

/// Builds the torus into `sim` and turns on automatic routes.
///
/// # Errors
/// `BadParameter { key: "dims" }` for other than 2 or 3 axes, an axis
/// below 3, or more links than the address plan holds; `NameClash`.
pub fn torus(sim: &mut Simulation, p: &TorusParams) -> Result<Topology, TopologyError> {
    check(
        matches!(p.dims.len(), 2 | 3),
        "dims",
        format!("{} axes: a torus here has 2 or 3", p.dims.len()),
    )?;
    check(
        p.dims.iter().all(|&d| d >= 3),
        "dims",
        format!("{:?}: every axis needs at least 3 routers", p.dims),
    )?;
    let n = p.routers();
    let links = n * (p.dims.len() as u64 + 1);
    check(
        links <= u64::from(Numbered::MAX),
        "dims",
        format!("{links} links do not fit in 10.0.0.0/8"),
    )?;
    let n = n as u32;
    let mut numbers = Numbered::default();
    let mut topo = hosts_behind_routers(sim, &p.prefix, &p.link, n, &mut numbers)?;
    let routers = topo.routers[0];
    for r in 0..n {
        let c = p.coordinates(r);
        let mut stride = 1;
        for (axis, &d) in p.dims.iter().enumerate() {
            let next = r - c[axis] * stride + (c[axis] + 1) % d * stride;
            stride *= d;
            let cfg = link(
                &p.link,
                format!("{}r{r}-{}", p.prefix, ["x", "y", "z"][axis]),
            );
            let (net, _, _) = numbers.connect(sim, cfg, routers + r, routers + next)?;
            topo.networks.push(net);
        }
    }
    sim.set_auto_routes(Some(Metric::Hops));
    Ok(topo)
}
