//! How much memory a scenario will take, from its counts alone, before
//! anything is built: machines, networks, interfaces, applications and
//! automatic routes, each times a measured cost per item.
//!
//! `elvis check` prints the estimate and `elvis run` / `elvis check`
//! refuse a scenario whose estimate is above the memory available (a
//! located error naming the block that contributes most), so that
//! `count='300000000'` is an error in a millisecond rather than an
//! allocation failure after a minute.
//!
//! The costs per item ([`Costs::MEASURED`]) were measured as peak RSS over
//! counts on release builds (`elvis check` of machine groups, fat trees and
//! a fat tree with an extra router); they round up, so the estimate errs
//! high by up to about a third. A file that writes every machine and
//! network as its own block (the stars of `bench/vs-ns3`) costs more per
//! machine than a `count=` group: each block is a scenario group held
//! while the build runs, with its own options, and usually its own routes
//! (a gateway each). The per-block costs are the slope of `elvis check`
//! and `elvis run` peaks over such stars: `harness.py gen star N`, 10,000
//! to 100,000 hosts, 2.68 KiB more per host for `check` and 3.3 KiB for
//! `run`, of which the per-item costs account for 0.9.
//!
//! # Gaps
//! - A `[Topology type='graph']`'s size is not known before its file is
//!   read: it counts as nothing.
//! - Traffic (queues, TCP buffers, captures) is not estimated: it depends
//!   on the run, not on the counts.

use elvis_scenario::{Loc, RoutingMode, Scenario, TopologyKind};
use elvis_sim::report::MemoryEstimate;

/// Bytes per item.
#[derive(Clone, Copy, Debug)]
pub struct Costs {
    pub base: u64,
    pub machine: u64,
    pub network: u64,
    pub interface: u64,
    pub application: u64,
    /// A route written by the file or a generator.
    pub route: u64,
    /// One (router, network) pair of the automatic route computation: the
    /// route and the computation's own tables.
    pub auto_route: u64,
    /// A `[Machine]` block beyond its machines (see the module docs).
    pub machine_block: u64,
    /// A `[Network]` block beyond its network.
    pub network_block: u64,
}

impl Costs {
    /// The costs measured on this simulator (see the module docs).
    pub const MEASURED: Costs = Costs {
        base: 8 << 20,
        machine: 160,
        network: 320,
        interface: 120,
        application: 160,
        route: 48,
        auto_route: 400,
        machine_block: 1_700,
        network_block: 800,
    };
}

/// Counts of one scenario block.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    machines: u64,
    routers: u64,
    networks: u64,
    interfaces: u64,
    applications: u64,
    /// Routes the block's own generator writes (not automatic ones).
    routes: u64,
    machine_blocks: u64,
    network_blocks: u64,
}

impl Counts {
    fn add(&mut self, o: Counts) {
        self.machines = self.machines.saturating_add(o.machines);
        self.routers = self.routers.saturating_add(o.routers);
        self.networks = self.networks.saturating_add(o.networks);
        self.interfaces = self.interfaces.saturating_add(o.interfaces);
        self.applications = self.applications.saturating_add(o.applications);
        self.routes = self.routes.saturating_add(o.routes);
        self.machine_blocks = self.machine_blocks.saturating_add(o.machine_blocks);
        self.network_blocks = self.network_blocks.saturating_add(o.network_blocks);
    }

    fn bytes(&self, c: &Costs) -> u64 {
        [
            (self.machines, c.machine),
            (self.networks, c.network),
            (self.interfaces, c.interface),
            (self.applications, c.application),
            (self.routes, c.route),
            (self.machine_blocks, c.machine_block),
            (self.network_blocks, c.network_block),
        ]
        .iter()
        .fold(0u64, |acc, &(n, per)| {
            acc.saturating_add(n.saturating_mul(per))
        })
    }
}

/// Returns the counts of a generated topology.
fn topology(kind: &TopologyKind) -> Counts {
    let m = |a: u64, b: u64| a.saturating_mul(b);
    let links = |machines: u64, routers: u64, networks: u64, routes: u64| Counts {
        machines,
        routers,
        networks,
        interfaces: m(networks, 2),
        applications: 0,
        routes,
        ..Counts::default()
    };
    match kind {
        TopologyKind::FatTree { k } => {
            let (k, h) = (u64::from(*k), u64::from(*k / 2));
            let hosts = m(k, m(h, h));
            let switches = m(2, m(k, h)).saturating_add(m(h, h));
            // Each switch routes to every pod (k) and each of its hosts.
            links(hosts + switches, switches, m(3, hosts), m(switches, k))
        }
        TopologyKind::Dumbbell { hosts, .. } => {
            let n = u64::from(*hosts);
            links(m(2, n) + 2, 2, m(2, n) + 1, 0)
        }
        TopologyKind::Chain { routers } => {
            let r = u64::from(*routers);
            links(r + 2, r, r + 1, 0)
        }
        TopologyKind::Star { hosts, router } => {
            let n = u64::from(*hosts);
            let r = u64::from(*router);
            Counts {
                machines: n + r,
                routers: r,
                networks: if *router { n } else { 1 },
                interfaces: m(n, 1 + r),
                applications: 0,
                routes: 0,
                ..Counts::default()
            }
        }
        TopologyKind::Tree { depth, fanout } => {
            let f = u64::from(*fanout);
            let (mut routers, mut level) = (0u64, 1u64);
            for _ in 0..*depth {
                routers = routers.saturating_add(level);
                level = m(level, f);
            }
            let machines = routers.saturating_add(level);
            links(machines, routers, machines.saturating_sub(1), 0)
        }
        TopologyKind::Torus { dims } => {
            let p = dims.iter().fold(1u64, |a, &d| m(a, u64::from(d)));
            let networks = m(p, dims.len() as u64).saturating_add(p);
            links(m(p, 2), p, networks, 0)
        }
        TopologyKind::Graph { .. } => Counts::default(),
    }
}

/// Whether automatic routes are computed: a forwarding machine, or a
/// generator that relies on them, with routing not `static`.
fn auto_routes(sc: &Scenario) -> bool {
    sc.sim.routing != RoutingMode::Static
        && (sc.machines.iter().any(|g| g.forward)
            || sc.topologies.iter().any(|t| {
                matches!(
                    t.kind,
                    TopologyKind::Chain { .. }
                        | TopologyKind::Tree { .. }
                        | TopologyKind::Torus { .. }
                        | TopologyKind::Graph { .. }
                )
            }))
}

/// An estimate, where it mostly comes from, and why.
#[derive(Clone, Debug)]
pub struct Estimated {
    pub memory: MemoryEstimate,
    /// The block that contributes most (for automatic routes: the first
    /// forwarding machine, which turns them on).
    pub loc: Loc,
    /// Says so when the automatic routes are most of the estimate.
    pub note: Option<String>,
}

/// Estimates the memory `sc` takes once built, with [`Costs::MEASURED`].
pub fn estimate(sc: &Scenario) -> Estimated {
    estimate_with(sc, &Costs::MEASURED)
}

/// Like [`estimate`], with the given costs.
pub fn estimate_with(sc: &Scenario, c: &Costs) -> Estimated {
    let mut total = Counts::default();
    let mut biggest = (0u64, Loc::default());
    let mut note = |counts: Counts, loc: Loc, total: &mut Counts| {
        let b = counts.bytes(c);
        if b > biggest.0 || !biggest.1.is_known() {
            biggest = (b, loc);
        }
        total.add(counts);
    };
    for n in &sc.networks {
        let one = Counts {
            networks: 1,
            network_blocks: 1,
            ..Counts::default()
        };
        note(one, n.loc, &mut total);
    }
    for g in &sc.machines {
        let count = u64::from(g.instances());
        let one = Counts {
            machines: count,
            routers: if g.forward { count } else { 0 },
            interfaces: count.saturating_mul(g.networks.len() as u64),
            applications: count.saturating_mul(g.applications.len() as u64),
            networks: 0,
            routes: count.saturating_mul(g.routes.len() as u64),
            machine_blocks: 1,
            network_blocks: 0,
        };
        note(one, g.loc, &mut total);
    }
    for t in &sc.topologies {
        note(topology(&t.kind), t.loc, &mut total);
    }
    let auto = if auto_routes(sc) {
        // One table per router, a route per network (hosts share one).
        total
            .routers
            .saturating_add(1)
            .saturating_mul(total.networks)
    } else {
        0
    };
    let routes = total.routes.saturating_add(auto);
    let auto_bytes = auto.saturating_mul(c.auto_route);
    let memory = MemoryEstimate {
        bytes: c
            .base
            .saturating_add(total.bytes(c))
            .saturating_add(auto_bytes),
        machines: total.machines,
        networks: total.networks,
        interfaces: total.interfaces,
        applications: total.applications,
        routes,
    };
    let (mut loc, mut note) = (biggest.1, None);
    if auto_bytes > biggest.0 {
        if let Some(g) = sc.machines.iter().find(|g| g.forward) {
            loc = g.loc;
        }
        note = Some(format!(
            "most of it is automatic routes: {} routers × {} networks, a route to every network \
             on every router; routing='static' with [Route] blocks avoids them",
            total.routers, total.networks
        ));
    }
    Estimated { memory, loc, note }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(src: &str) -> Scenario {
        elvis_ndl::parse(src, "t.ndl").expect("the test scenario parses")
    }

    const GROUP: &str = "[Networks]\n\t[Network id='1']\n[Machines]\n\t[Machine name='a' count='COUNT']\n\t\t[Networks]\n\t\t\t[Network id='1']\n";

    #[test]
    fn the_estimate_grows_with_the_machine_count_and_points_at_the_group() {
        let small = estimate(&scenario(&GROUP.replace("COUNT", "10"))).memory;
        let e = estimate(&scenario(&GROUP.replace("COUNT", "300000000")));
        let (big, loc) = (e.memory, e.loc);
        assert_eq!(big.machines, 300_000_000);
        assert_eq!(big.interfaces, 300_000_000);
        assert!(big.bytes > 50 << 30, "{big:?}");
        assert!(small.bytes < 16 << 20, "{small:?}");
        assert_eq!(loc.line, 4, "the [Machine] block");
    }

    #[test]
    fn a_fat_tree_counts_its_hosts_switches_and_links() {
        let sc = scenario("[Topology type='fattree' k='4']\n");
        let Estimated { memory: e, loc, .. } = estimate(&sc);
        assert_eq!(e.machines, 16 + 20);
        assert_eq!(e.networks, 48);
        assert_eq!(loc.line, 1);
        let huge = estimate(&scenario("[Topology type='fattree' k='254']\n")).memory;
        assert!(huge.bytes > 4 << 30, "{huge:?}");
    }

    #[test]
    fn an_extra_router_beside_a_fat_tree_costs_a_route_per_router_and_network() {
        let alone = estimate(&scenario("[Topology type='fattree' k='32']\n"));
        assert!(alone.note.is_none());
        let alone = alone.memory;
        let mixed = estimate(&scenario(
            "[Topology type='fattree' k='32']\n[Networks]\n\t[Network id='x']\n[Machines]\n\t[Machine name='r' forward='yes']\n\t\t[Networks]\n\t\t\t[Network id='x']\n",
        ));
        assert_eq!(mixed.loc.line, 5, "the forwarding machine");
        assert!(
            mixed.note.as_deref().unwrap().contains("1281 routers"),
            "{mixed:?}"
        );
        let mixed = mixed.memory;
        assert!(mixed.routes > 1280 * 24576, "{mixed:?}");
        assert!(mixed.bytes > 4 * alone.bytes, "{alone:?} {mixed:?}");
    }

    /// A star written block by block, as `bench/vs-ns3` writes it: the
    /// estimate per host is at least what `elvis check` was measured to
    /// take per host on such stars (2.68 KiB, see the module docs), and
    /// not more than a third above what `elvis run` took (3.3 KiB).
    #[test]
    fn a_star_written_block_by_block_is_estimated_at_its_measured_cost() {
        let n = 2_000u32;
        let mut src = String::from("[Simulation routing='static']\n[Networks]\n\t[Network id='core']\n\t\t[IP subnet='10.0.0.0/16']\n");
        for i in 0..n {
            src.push_str(&format!(
                "\t[Network id='l{i}' type='link']\n\t\t[IP subnet='10.{}.{}.0/30']\n",
                1 + i / 64,
                (i % 64) * 4
            ));
        }
        src.push_str("[Machines]\n\t[Machine name='r' forward='yes']\n\t\t[Networks]\n\t\t\t[Network id='core']\n");
        for i in 0..n {
            src.push_str(&format!("\t\t\t[Network id='l{i}']\n"));
        }
        for i in 0..n {
            src.push_str(&format!(
                "\t[Machine name='h{i}']\n\t\t[Networks]\n\t\t\t[Network id='l{i}']\n\t\t[Applications]\n\t\t\t[Application name='send_message' to='r' port='9']\n"
            ));
        }
        let e = estimate(&scenario(&src)).memory;
        let per_host = e.bytes.saturating_sub(Costs::MEASURED.base) / u64::from(n);
        assert!(per_host >= 2_680 * 1024 / 1000, "{per_host} B per host");
        assert!(per_host <= 3_300 * 1024 * 4 / 3000, "{per_host} B per host");
    }
}
