//! Generated topologies: `[Topology]` blocks call `elvis_sim::topology`,
//! and `[Machine]` blocks without `[Networks]` named like a generated
//! machine (`host-3`) or group (`host`) put applications on it.

use crate::{err, BuildError};
use elvis_scenario::{
    LinkSpec, Loc, MachineGroup, RoutingMode, Scenario, TopologyKind, TopologySpec,
};
use elvis_sim::stack::route::Metric;
use elvis_sim::topology::{self, TopologyError};
use elvis_sim::{NetworkConfig, Simulation};
use std::path::Path;

/// A group of generated machines: name, first id, size, the block that
/// made it.
pub(crate) struct Generated {
    pub name: String,
    pub first: u32,
    pub len: u32,
    pub loc: Loc,
    /// The group forwards (switches and routers; not hosts).
    pub router: bool,
}

fn config(l: &LinkSpec) -> Result<NetworkConfig, BuildError> {
    Ok(NetworkConfig {
        bandwidth_bps: l.bandwidth_bps,
        latency_ns: l.latency_ns,
        loss: l.loss,
        mtu: l.mtu,
        queue: l.queue,
        qdisc: match &l.qdisc {
            Some(q) => Some(Box::new(crate::qdisc_config(q, l.bandwidth_bps)?)),
            None => None,
        },
        ..NetworkConfig::ideal("")
    })
}

/// Builds every `[Topology]`; returns the groups they made.
pub(crate) fn build_all(sim: &mut Simulation, sc: &Scenario) -> Result<Vec<Generated>, BuildError> {
    let mut out = Vec::new();
    for spec in &sc.topologies {
        let before = sim.machine_count() as u32;
        one(sim, sc, spec)?;
        // The generators create counted groups named {prefix}{role}.
        let mut at = before;
        for role in roles(&spec.kind) {
            let name = format!("{}{role}", spec.prefix);
            let len = count(&spec.kind, role, sim.machine_count() as u32 - before);
            out.push(Generated {
                name,
                first: at,
                len,
                loc: spec.loc,
                router: !matches!(*role, "host" | "left" | "right"),
            });
            at += len;
        }
    }
    Ok(out)
}

/// The groups each generator makes, in creation order.
fn roles(kind: &TopologyKind) -> &'static [&'static str] {
    match kind {
        TopologyKind::FatTree { .. } => &["host", "edge", "agg", "core"],
        TopologyKind::Dumbbell { .. } => &["left", "right", "router"],
        TopologyKind::Chain { routers: 0 } => &["host"],
        TopologyKind::Star { router: false, .. } => &["host"],
        TopologyKind::Tree { .. } => &["router", "host"],
        _ => &["host", "router"],
    }
}

/// The size of group `role` (`total`: machines the block made).
fn count(kind: &TopologyKind, role: &str, total: u32) -> u32 {
    match (kind, role) {
        (TopologyKind::FatTree { k }, r) => {
            let h = k / 2;
            match r {
                "host" => k * h * h,
                "core" => h * h,
                _ => k * h,
            }
        }
        (TopologyKind::Dumbbell { hosts, .. }, "left" | "right") => *hosts,
        (TopologyKind::Dumbbell { .. }, _) => 2,
        (TopologyKind::Chain { .. }, "host") => 2,
        (TopologyKind::Chain { routers }, _) => *routers,
        (TopologyKind::Star { hosts, .. }, "host") => *hosts,
        (TopologyKind::Star { .. }, _) => 1,
        (TopologyKind::Tree { depth, fanout }, "host") => fanout.pow(*depth),
        (TopologyKind::Tree { .. }, _) => total - count(kind, "host", total),
        (_, _) => total / 2,
    }
}

fn one(sim: &mut Simulation, sc: &Scenario, spec: &TopologySpec) -> Result<(), BuildError> {
    let link = config(&spec.link)?;
    let prefix = spec.prefix.clone();
    let first_net = sim.network_count() as u32;
    generate(sim, sc, spec, link, prefix)?;
    // PFC (`pfc=`) applies to every link of the topology, a dumbbell's
    // bottleneck taking its `bottleneck_pfc=`.
    let bottleneck = format!("{}bottleneck", spec.prefix);
    for net in first_net..sim.network_count() as u32 {
        let q = match &spec.kind {
            TopologyKind::Dumbbell { bottleneck: b, .. }
                if sim
                    .network_config(net)
                    .is_some_and(|c| c.name == bottleneck) =>
            {
                b.qdisc.as_deref()
            }
            _ => spec.link.qdisc.as_deref(),
        };
        crate::set_pfc(sim, net, q)?;
    }
    Ok(())
}

/// Runs the generator of one `[Topology]`.
fn generate(
    sim: &mut Simulation,
    sc: &Scenario,
    spec: &TopologySpec,
    link: NetworkConfig,
    prefix: String,
) -> Result<(), BuildError> {
    let r = match &spec.kind {
        TopologyKind::FatTree { k } => {
            let p = topology::FatTreeParams {
                k: *k,
                link,
                prefix,
            };
            topology::fat_tree(sim, &p)
        }
        TopologyKind::Dumbbell { hosts, bottleneck } => {
            let p = topology::DumbbellParams {
                hosts: *hosts,
                access: link,
                bottleneck: config(bottleneck)?,
                prefix,
            };
            topology::dumbbell(sim, &p)
        }
        TopologyKind::Chain { routers } => {
            let p = topology::ChainParams {
                routers: *routers,
                link,
                prefix,
            };
            topology::chain(sim, &p)
        }
        TopologyKind::Star { hosts, router } => {
            let p = topology::StarParams {
                hosts: *hosts,
                router: *router,
                link,
                prefix,
            };
            topology::star(sim, &p)
        }
        TopologyKind::Tree { depth, fanout } => {
            let p = topology::TreeParams {
                depth: *depth,
                fanout: *fanout,
                link,
                prefix,
            };
            topology::tree(sim, &p)
        }
        TopologyKind::Torus { dims } => {
            let p = topology::TorusParams {
                dims: dims.clone(),
                link,
                prefix,
            };
            topology::torus(sim, &p)
        }
        TopologyKind::Graph { file, file_loc } => {
            let path = match &sc.base_dir {
                Some(dir) if Path::new(file).is_relative() => Path::new(dir).join(file),
                _ => Path::new(file).to_path_buf(),
            };
            let text = read_graph_file(&path).map_err(|e| err(*file_loc, e))?;
            let graph = topology::Graph::parse(&text)
                .map_err(|e| err(*file_loc, format!("{}:{e}", path.display())))?;
            let mut p = topology::GraphParams::new(graph);
            p.link = link.clone();
            p.access = link;
            p.prefix = prefix;
            if sc.sim.routing == RoutingMode::Latency {
                p.metric = Metric::Latency;
            }
            topology::graph(sim, &p)
        }
    };
    r.map(|_| ()).map_err(|e| topology_error(spec, e))
}

/// Reads a graph file: a regular file of at most
/// [`elvis_scenario::files::MAX_GRAPH_FILE`] bytes of UTF-8 text.
fn read_graph_file(path: &Path) -> Result<String, String> {
    let max = elvis_scenario::files::MAX_GRAPH_FILE;
    let bytes = elvis_scenario::files::read_limited(path, max, true)
        .map_err(|e| format!("cannot read the graph file {}: {e}", path.display()))?;
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "the graph file {} is not UTF-8 text (byte offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

fn topology_error(spec: &TopologySpec, e: TopologyError) -> BuildError {
    let hint = match &e {
        TopologyError::NameClash(_) => {
            Some("set prefix='…' on one of the [Topology] blocks".to_string())
        }
        TopologyError::Disconnected(_) => {
            Some("every node must be reachable: add the missing edges".to_string())
        }
        _ => None,
    };
    let loc = match &spec.kind {
        TopologyKind::Graph { file_loc, .. } => *file_loc,
        _ => spec.loc,
    };
    BuildError {
        message: format!("[Topology]: {e}"),
        hint,
        loc,
    }
}

/// What a declared `[Machine]` is with respect to the generated ones.
pub(crate) enum Role {
    /// An ordinary new machine group.
    New,
    /// Applications for generated machines `first..first+len`; `counted`
    /// when it names a whole generated group.
    Attach { first: u32, len: u32, counted: bool },
}

/// Classifies declared group `g`; a name clash is an error.
pub(crate) fn role(g: &MachineGroup, generated: &[Generated]) -> Result<Role, BuildError> {
    let found = generated.iter().find_map(|x| {
        if g.name == x.name {
            return Some((x, x.first, x.len, true));
        }
        let (base, idx) = g.name.rsplit_once('-')?;
        let i: u32 = idx
            .parse()
            .ok()
            .filter(|_| base == x.name && (idx == "0" || !idx.starts_with('0')))?;
        (i < x.len).then_some((x, x.first + i, 1, false))
    });
    let Some((x, first, len, counted)) = found else {
        return Ok(Role::New);
    };
    let from = format!("the [Topology] at line {}", x.loc.line);
    if !g.networks.is_empty() || (g.count.is_some() && !counted) {
        return Err(err(g.loc, format!("machine '{}' clashes with a machine generated by {from}", g.name)).with_hint(
            "rename it, or set prefix='…' on the [Topology]; a [Machine] without [Networks] adds applications to the generated machine",
        ));
    }
    if let Some(n) = g.count.filter(|&n| n != len) {
        return Err(err(
            g.loc,
            format!("'{}' has {len} generated machines, not {n}", g.name),
        )
        .with_hint(&format!("write count='{len}' (or leave count out)")));
    }
    if g.forward || !g.routes.is_empty() {
        return Err(err(
            g.loc,
            format!("the routing of '{}' is set by {from}", g.name),
        )
        .with_hint("drop forward=, gateway= and [Route] from this block"));
    }
    if let Some(o) = g.offloads.filter(|_| x.router) {
        return Err(err(
            o.loc,
            format!("'{}' forwards (generated by {from}); offloads apply to hosts only", g.name),
        )
        .with_hint("a router forwards frame by frame and ignores NIC offloads; remove offload= and rx_usecs="));
    }
    for p in &g.protocols {
        let name = p.name.to_ascii_lowercase();
        if !matches!(name.as_str(), "ipv4" | "icmp" | "ethernet" | "udp" | "tcp") {
            return Err(err(
                p.loc,
                format!(
                    "generated machines run IPv4, ICMP, UDP and TCP; '{}' cannot be added",
                    p.name
                ),
            )
            .with_hint("generated machines use static neighbour tables (no ARP)"));
        }
    }
    Ok(Role::Attach {
        first,
        len,
        counted,
    })
}
