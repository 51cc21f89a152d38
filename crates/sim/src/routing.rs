//! Building the routing tables: static routes and automatic shortest paths
//! computed from the topology (like ns-3's global routing).
//!
//! # Automatic routes
//! The graph has networks and forwarding machines (routers). Every network
//! is a destination, routed by prefix: its declared `subnet`, or else its
//! "covering prefix", the longest prefix holding all its addresses (addresses that a
//! longer prefix of another network would capture get /32 exceptions, so
//! every address routes to its own network). For each destination network
//! D, Dijkstra from D over routers gives each router its distance to D;
//! crossing a network costs 1 ([`Metric::Hops`]) or its latency plus 1 ns
//! ([`Metric::Latency`]). A router's next hops toward D are *all* the
//! routers on its networks that lie on a shortest path (ECMP).
//!
//! A *stub* network has exactly one router: every path to it ends at that
//! router, so one search from the router serves all of its stubs (the
//! distances differ from a per-stub search by the stub's own cost, the same
//! for every router, and the next hops are identical). A million hosts each
//! on its own link to one router cost one search, not a million.
//!
//! Hosts (non-forwarding machines) with one interface share one table per
//! network: the next hops toward D from a network are the routers on it
//! closest to D. The most common next-hop set becomes the host's default
//! route, so a LAN behind one gateway gets a one-entry table shared by all
//! its hosts. A network with a single router gets that default route
//! directly (when the router reaches any other network), without a look
//! at the destinations.
//!
//! Cost: one search per network with several routers and one per router
//! with stub networks, each O((networks + router ports) × log); then one
//! route per (router, destination network it does not touch), so memory
//! grows as routers × networks. Hosts behind a single router cost O(1)
//! each.
//!
//! Measured (`elvis-bench routes --n 100000`: 100k hosts in LANs of 50,
//! 2,000 dual-homed access routers, 45 core routers, 6,001 networks): 12 M
//! routes in 4,045 distinct tables, about 5 s of CPU and 1.4 GB peak.
//!
//! # Gaps
//! Routers get one route per network (no aggregation of contiguous
//! prefixes), so memory grows as routers × networks; hosts on several
//! networks are routed through the interface with the cheapest path;
//! routes do not change during a run (no link failures, no dynamic
//! routing protocol).

use crate::machine::IfaceId;
use crate::machine::MachineId;
use crate::simulation::SimError;
use crate::stack::route::{
    mask, Hop, Hops, Interner, Metric, Random, RouteList, RouteVec, Table, NO_TABLE,
};
use crate::world::World;
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

const INF: u64 = u64::MAX;

/// A router's view: its interfaces' networks.
struct RouterInfo {
    machine: MachineId,
    /// (network, interface index).
    nets: Vec<(u32, IfaceId)>,
}

/// Rebuilds every machine's table from the static routes and, if enabled,
/// the automatic routes.
///
/// # Errors
/// `BadRoute` for a static route whose gateway is on none of the machine's
/// networks.
pub(crate) fn build(w: &mut World) -> Result<(), SimError> {
    w.hosts.stack.routing.dirty = false;
    random_state(w);
    let auto = w.hosts.stack.routing.auto;
    if auto.is_none() && w.hosts.stack.routing.statics.is_empty() {
        w.hosts.stack.routing.tables.clear();
        w.hosts.stack.routing.dynamic.clear();
        w.hosts.stack.routing.of_machine.clear();
        return Ok(());
    }
    let mut statics = resolve_statics(w)?;
    let mut interner = Interner::default();
    let mut of_machine = vec![NO_TABLE; w.hosts.machines.len()];
    let (mut router_routes, mut host_routes, mut multi_routes) = match auto {
        Some(metric) => compute(w, metric),
        None => Default::default(),
    };
    // Hosts with static routes merge them into their network's list: keep
    // a copy of those lists before the shared ones are interned.
    let mut merge_base: BTreeMap<u32, RouteVec> = BTreeMap::new();
    for &m in statics.keys() {
        let machine = &w.hosts.machines[m as usize];
        if !machine.forward && machine.ifaces.len() == 1 {
            let net = machine.ifaces[0].net;
            if let Some(r) = host_routes.get(&net) {
                merge_base.entry(net).or_insert_with(|| r.clone());
            }
        }
    }
    let mut per_net_table: FxHashMap<u32, u32> = FxHashMap::default();
    for (m, machine) in w.hosts.machines.iter().enumerate() {
        let m = m as MachineId;
        let own = statics.remove(&m);
        let base: Option<RouteVec> = if let Some(r) = router_routes.remove(&m) {
            Some(r)
        } else if let Some(r) = multi_routes.remove(&m) {
            Some(r)
        } else if machine.ifaces.len() == 1 {
            let net = machine.ifaces[0].net;
            if own.is_none() {
                let id = match per_net_table.get(&net) {
                    Some(&id) => Some(id),
                    None => host_routes.remove(&net).map(|r| interner.intern_vec(r)),
                };
                if let Some(id) = id {
                    per_net_table.insert(net, id);
                    of_machine[m as usize] = id;
                }
                continue;
            }
            merge_base.get(&net).cloned()
        } else {
            None
        };
        of_machine[m as usize] = match (base, own) {
            (Some(r), None) if !r.is_empty() => interner.intern_vec(r),
            (None, Some(own)) => interner.intern_vec(own),
            (Some(r), Some(own)) => {
                let mut routes: RouteList = r.into_iter().collect();
                for (k, hops) in own {
                    routes.insert(k, hops);
                }
                interner.intern(&routes)
            }
            _ => NO_TABLE,
        };
    }
    w.hosts.stack.routing.tables = interner.tables;
    w.hosts.stack.routing.dynamic.clear();
    w.hosts.stack.routing.of_machine = of_machine;
    Ok(())
}

/// Makes the state of the random multipath choice, if any: one stream
/// position per machine, or the graph of random simple-path routing.
fn random_state(w: &mut World) {
    let routing = &w.hosts.stack.routing;
    let (random, machines) = (routing.random, w.hosts.machines.len());
    w.hosts.stack.routing.draws = match random {
        Random::Demux => (0..machines).map(|_| std::cell::Cell::new(0)).collect(),
        _ => Vec::new(),
    };
    w.hosts.stack.routing.paths = (random == Random::Path)
        .then(|| Box::new(crate::stack::paths::RandomPaths::build(&w.hosts)));
}

/// Checks every static route and turns its gateway into (iface, address).
/// Each machine's list is sorted by prefix, one entry per prefix (its
/// next hops in the order given, without repeats): a vector rather than a
/// map, which a million hosts with a default route each would hold a
/// B-tree node apiece for.
fn resolve_statics(w: &World) -> Result<BTreeMap<MachineId, RouteVec>, SimError> {
    let mut out = BTreeMap::new();
    for (&m, routes) in &w.hosts.stack.routing.statics {
        let machine = &w.hosts.machines[m as usize];
        let mut list = RouteVec::with_capacity(routes.len());
        for r in routes {
            let via = u32::from(r.via);
            let iface = r.iface.map(|i| i as usize).or_else(|| {
                machine.ifaces.iter().position(|i| {
                    w.hosts.fabric.networks[i.net as usize]
                        .ip_to_port
                        .contains_key(&via)
                })
            });
            let Some(iface) = iface else {
                return Err(SimError::BadRoute {
                    machine: w.hosts.machine_name(m),
                    message: format!("gateway {} is on none of its networks", r.via),
                });
            };
            let hop = Hop {
                iface: iface as IfaceId,
                gateway: via,
            };
            list.push(((r.prefix, r.len), Hops::from_slice(&[hop])));
        }
        out.insert(m, merge_prefixes(list));
    }
    Ok(out)
}

/// Sorts `list` by prefix and merges the entries of each prefix into one,
/// keeping its next hops in the order given, without repeats.
fn merge_prefixes(mut list: RouteVec) -> RouteVec {
    // Stable: the hops of one prefix keep their order.
    list.sort_by_key(|(k, _)| *k);
    // `later` is dropped when it repeats `kept`'s prefix.
    list.dedup_by(|later, kept| {
        if later.0 != kept.0 {
            return false;
        }
        for h in later.1.drain(..) {
            if !kept.1.contains(&h) {
                kept.1.push(h);
            }
        }
        true
    });
    list
}

/// Returns the prefixes that route to each network.
fn network_prefixes(w: &World) -> Vec<Vec<(u32, u8)>> {
    let mut covering: Vec<Option<(u32, u8)>> = Vec::with_capacity(w.hosts.fabric.networks.len());
    for n in &w.hosts.fabric.networks {
        if let Some(subnet) = n.subnet {
            covering.push(Some(subnet));
            continue;
        }
        let lo = n.ip_to_port.keys().min();
        let hi = n.ip_to_port.keys().max();
        covering.push(match (lo, hi) {
            (Some(&lo), Some(&hi)) => {
                let len = (lo ^ hi).leading_zeros() as u8;
                Some((lo & mask(len), len))
            }
            _ => None,
        });
    }
    // Which network each covering prefix routes to (the first declared
    // wins a tie); then /32 exceptions for addresses that land elsewhere.
    let mut owner: RouteList = RouteList::new();
    for (i, c) in covering.iter().enumerate() {
        if let Some(c) = c {
            owner.entry(*c).or_insert_with(|| {
                smallvec::smallvec![Hop {
                    iface: 0,
                    gateway: i as u32
                }]
            });
        }
    }
    let table = Table::new(&owner);
    let mut out: Vec<Vec<(u32, u8)>> = Vec::with_capacity(w.hosts.fabric.networks.len());
    for (i, n) in w.hosts.fabric.networks.iter().enumerate() {
        let mut list = Vec::new();
        if let Some(c) = covering[i] {
            if owner.get(&c).is_some_and(|h| h[0].gateway == i as u32) {
                list.push(c);
            }
        }
        let mut exceptions: Vec<u32> = n
            .ip_to_port
            .keys()
            .copied()
            .filter(|&ip| table.lookup(ip).is_none_or(|h| h[0].gateway != i as u32))
            .collect();
        exceptions.sort_unstable();
        list.extend(exceptions.into_iter().map(|ip| (ip, 32)));
        out.push(list);
    }
    out
}

type Computed = (
    BTreeMap<MachineId, RouteVec>,
    BTreeMap<u32, RouteVec>,
    BTreeMap<MachineId, RouteVec>,
);

/// Computes the automatic routes: per router, per single-homed-host
/// network, and per multi-homed host.
fn compute(w: &World, metric: Metric) -> Computed {
    let prefixes = network_prefixes(w);
    let nets = w.hosts.fabric.networks.len();
    let cost: Vec<u64> = w
        .hosts
        .fabric
        .networks
        .iter()
        .map(|n| match metric {
            Metric::Hops => 1,
            Metric::Latency => n.cfg.latency_ns.saturating_add(1),
        })
        .collect();
    let (routers, multi) = routers_and_multihomed(w);
    let on_net = routers_on_networks(w, &routers);
    let targets = targets(&prefixes, &on_net, routers.len());
    // Networks with hosts and several routers: their hosts' next hops
    // depend on the destination. (Hosts behind a single router get a
    // default route through it, see `single_router_defaults`.)
    let shared: Vec<usize> = (0..nets)
        .filter(|&n| {
            on_net[n].len() > 1 && w.hosts.fabric.networks[n].ports.len() > on_net[n].len()
        })
        .collect();
    let mut router_routes: Vec<RouteVec> = vec![RouteVec::new(); routers.len()];
    let mut host_routes = single_router_defaults(w, &prefixes, &on_net, &routers);
    let mut multi_routes: BTreeMap<MachineId, RouteVec> = BTreeMap::new();
    let mut search = Search {
        dist: vec![INF; routers.len()],
        best: vec![INF; nets],
        done: vec![false; nets],
        heap: BinaryHeap::new(),
    };
    for target in &targets {
        search.run(target, &routers, &on_net, &cost);
        let found = Found {
            target,
            prefixes: &prefixes,
            cost: &cost,
            on_net: &on_net,
            dist: &search.dist,
            best: &search.best,
        };
        found.router_routes(&routers, &mut router_routes);
        found.host_routes(&shared, &mut host_routes);
        found.multi_routes(w, &multi, &mut multi_routes);
    }
    // Each network's prefixes are distinct (one owner per prefix), so
    // sorting makes the lists canonical.
    for list in router_routes.iter_mut().chain(multi_routes.values_mut()) {
        list.sort_unstable_by_key(|(k, _)| *k);
    }
    for list in host_routes.values_mut() {
        compress_to_default(list);
        list.sort_unstable_by_key(|(k, _)| *k);
    }
    let routers = routers
        .into_iter()
        .zip(router_routes)
        .map(|(info, r)| (info.machine, r))
        .collect();
    (routers, host_routes, multi_routes)
}

/// Returns the routers (forwarding machines) with their networks, and
/// the hosts with more than one interface.
fn routers_and_multihomed(w: &World) -> (Vec<RouterInfo>, Vec<MachineId>) {
    let mut routers: Vec<RouterInfo> = Vec::new();
    let mut multi: Vec<MachineId> = Vec::new();
    for (m, machine) in w.hosts.machines.iter().enumerate() {
        if machine.forward {
            routers.push(RouterInfo {
                machine: m as MachineId,
                nets: (machine.ifaces.iter().enumerate())
                    .map(|(k, i)| (i.net, k as IfaceId))
                    .collect(),
            });
        } else if machine.ifaces.len() > 1 {
            multi.push(m as MachineId);
        }
    }
    (routers, multi)
}

/// Returns the routers on each network: (router index, its address
/// there).
fn routers_on_networks(w: &World, routers: &[RouterInfo]) -> Vec<Vec<(u32, u32)>> {
    let mut on_net: Vec<Vec<(u32, u32)>> = vec![Vec::new(); w.hosts.fabric.networks.len()];
    for (r, info) in routers.iter().enumerate() {
        for &(net, k) in &info.nets {
            let ip = w.hosts.machines[info.machine as usize].ifaces[k as usize].ip;
            on_net[net as usize].push((r as u32, u32::from(ip)));
        }
    }
    on_net
}

/// The state of the shortest-path searches of [`compute`], reused by
/// each search.
struct Search {
    /// Each router's distance to the target.
    dist: Vec<u64>,
    /// Each network's distance to the target through its closest router.
    best: Vec<u64>,
    /// Networks already crossed.
    done: Vec<bool>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
}

impl Search {
    /// Dijkstra toward `target` over the routers, crossing a network at
    /// its cost; fills `dist` and `best`.
    fn run(
        &mut self,
        target: &Target,
        routers: &[RouterInfo],
        on_net: &[Vec<(u32, u32)>],
        cost: &[u64],
    ) {
        let Search {
            dist,
            best,
            done,
            heap,
        } = self;
        dist.fill(INF);
        done.fill(false);
        match *target {
            Target::Network(d) => {
                done[d] = true;
                for &(r, _) in &on_net[d] {
                    dist[r as usize] = cost[d];
                    heap.push(Reverse((cost[d], r)));
                }
            }
            // Every path to a stub network ends at its router: one search
            // from the router serves all of its stubs (distances differ
            // from each stub's own search by the stub's cost, the same
            // for every router, so the next hops are the same).
            Target::Router(r, _) => {
                dist[r as usize] = 0;
                heap.push(Reverse((0, r)));
            }
        }
        while let Some(Reverse((du, r))) = heap.pop() {
            if du > dist[r as usize] {
                continue;
            }
            for &(net, _) in &routers[r as usize].nets {
                if done[net as usize] {
                    continue;
                }
                done[net as usize] = true;
                let c = du.saturating_add(cost[net as usize]);
                for &(r2, _) in &on_net[net as usize] {
                    if c < dist[r2 as usize] {
                        dist[r2 as usize] = c;
                        heap.push(Reverse((c, r2)));
                    }
                }
            }
        }
        for (n, b) in best.iter_mut().enumerate() {
            *b = on_net[n]
                .iter()
                .map(|&(r, _)| dist[r as usize])
                .min()
                .unwrap_or(INF);
        }
    }
}

/// What one search of [`compute`] found, and the routes it gives.
struct Found<'a> {
    target: &'a Target,
    prefixes: &'a [Vec<(u32, u8)>],
    cost: &'a [u64],
    on_net: &'a [Vec<(u32, u32)>],
    dist: &'a [u64],
    best: &'a [u64],
}

impl Found<'_> {
    /// Returns the routers on network `n` closest to the target (but
    /// `me`), as next hops by their address there.
    fn closest(&self, n: usize, me: Option<u32>) -> Hops {
        self.on_net[n]
            .iter()
            .filter(|&&(r, _)| self.dist[r as usize] == self.best[n] && Some(r) != me)
            .map(|&(_, ip)| Hop {
                iface: 0,
                gateway: ip,
            })
            .collect()
    }

    /// Returns the destination networks the search was for.
    fn dests(&self) -> &[usize] {
        match self.target {
            Target::Network(d) => std::slice::from_ref(d),
            Target::Router(_, stubs) => stubs,
        }
    }

    /// Returns true if router `r` is on the destination (so has no route
    /// to it).
    fn on_dest(&self, r: u32) -> bool {
        match *self.target {
            Target::Network(d) => self.on_net[d].iter().any(|&(x, _)| x == r),
            Target::Router(x, _) => x == r,
        }
    }

    /// Adds each router's routes to the destinations: through every
    /// neighbour on a shortest path (ECMP).
    fn router_routes(&self, routers: &[RouterInfo], router_routes: &mut [RouteVec]) {
        let (dist, best, cost) = (self.dist, self.best, self.cost);
        for (r, info) in routers.iter().enumerate() {
            if dist[r] == INF || self.on_dest(r as u32) {
                continue;
            }
            let mut hops = Hops::new();
            for &(n, k) in &info.nets {
                if best[n as usize] != INF && cost[n as usize] + best[n as usize] == dist[r] {
                    hops.extend(
                        self.closest(n as usize, Some(r as u32))
                            .into_iter()
                            .map(|h| Hop { iface: k, ..h }),
                    );
                }
            }
            hops.sort_unstable();
            for &d in self.dests() {
                for p in &self.prefixes[d] {
                    router_routes[r].push((*p, hops.clone()));
                }
            }
        }
    }

    /// Adds the routes of the hosts on each `shared` network (several
    /// routers) to the destinations: through its routers closest to them.
    fn host_routes(&self, shared: &[usize], host_routes: &mut BTreeMap<u32, RouteVec>) {
        let dests = self.dests();
        for &n in shared {
            if self.best[n] == INF || dests == [n] {
                continue;
            }
            let hops = self.closest(n, None);
            let list = host_routes.entry(n as u32).or_default();
            for &d in dests.iter().filter(|&&d| d != n) {
                for p in &self.prefixes[d] {
                    list.push((*p, hops.clone()));
                }
            }
        }
    }

    /// Adds the routes of the multi-homed hosts `multi` to the
    /// destinations: through the interface with the cheapest path.
    fn multi_routes(
        &self,
        w: &World,
        multi: &[MachineId],
        multi_routes: &mut BTreeMap<MachineId, RouteVec>,
    ) {
        let (best, cost) = (self.best, self.cost);
        for &m in multi {
            let machine = &w.hosts.machines[m as usize];
            let Some((k, n)) = (machine.ifaces.iter().enumerate())
                .map(|(k, i)| (k, i.net as usize))
                .filter(|&(_, n)| best[n] != INF)
                .min_by_key(|&(_, n)| cost[n] + best[n])
            else {
                continue;
            };
            let hops: Hops = self
                .closest(n, None)
                .into_iter()
                .map(|h| Hop {
                    iface: k as IfaceId,
                    ..h
                })
                .collect();
            for &d in self.dests() {
                if machine.ifaces.iter().any(|i| i.net as usize == d) {
                    continue;
                }
                let list = multi_routes.entry(m).or_default();
                for p in &self.prefixes[d] {
                    list.push((*p, hops.clone()));
                }
            }
        }
    }
}

/// One shortest-path search of [`compute`]: toward a network, or toward
/// a router on behalf of its stub networks (networks whose only router it
/// is), whose routes all lead through it.
enum Target {
    Network(usize),
    Router(u32, Vec<usize>),
}

/// Returns the searches that cover every routable network (one with
/// addresses and a router): one per network with several routers, one
/// per router with stub networks. A star of a million hosts, each on its
/// own link to one router, needs one search instead of a million.
fn targets(prefixes: &[Vec<(u32, u8)>], on_net: &[Vec<(u32, u32)>], routers: usize) -> Vec<Target> {
    let mut stubs: Vec<Vec<usize>> = vec![Vec::new(); routers];
    let mut out = Vec::new();
    for (d, on) in on_net.iter().enumerate() {
        match on.as_slice() {
            _ if prefixes[d].is_empty() => {}
            [] => {}
            [(r, _)] => stubs[*r as usize].push(d),
            _ => out.push(Target::Network(d)),
        }
    }
    out.extend(
        (stubs.into_iter().enumerate())
            .filter(|(_, s)| !s.is_empty())
            .map(|(r, s)| Target::Router(r as u32, s)),
    );
    out
}

/// Returns the host tables of networks with hosts and exactly one router:
/// a default route through that router, when it reaches some other
/// routable network (every destination's next hop from such a network is
/// that router, so the table a per-destination computation would compress
/// to its default route is this one entry).
fn single_router_defaults(
    w: &World,
    prefixes: &[Vec<(u32, u8)>],
    on_net: &[Vec<(u32, u32)>],
    routers: &[RouterInfo],
) -> BTreeMap<u32, RouteVec> {
    // Connected components of routers joined by shared networks.
    let mut parent: Vec<u32> = (0..routers.len() as u32).collect();
    fn find(parent: &mut [u32], mut x: u32) -> u32 {
        while parent[x as usize] != x {
            parent[x as usize] = parent[parent[x as usize] as usize];
            x = parent[x as usize];
        }
        x
    }
    for on in on_net {
        if let Some(&(first, _)) = on.first() {
            for &(r, _) in &on[1..] {
                let (a, b) = (find(&mut parent, first), find(&mut parent, r));
                parent[a.max(b) as usize] = a.min(b);
            }
        }
    }
    let routable = |d: usize| !prefixes[d].is_empty() && !on_net[d].is_empty();
    let mut destinations = vec![0u64; routers.len()];
    for d in (0..on_net.len()).filter(|&d| routable(d)) {
        let c = find(&mut parent, on_net[d][0].0);
        destinations[c as usize] += 1;
    }
    let mut out = BTreeMap::new();
    for (n, on) in on_net.iter().enumerate() {
        let [(r, ip)] = on.as_slice() else {
            continue;
        };
        if w.hosts.fabric.networks[n].ports.len() <= 1 {
            continue;
        }
        let c = find(&mut parent, *r);
        let others = destinations[c as usize] - u64::from(routable(n));
        if others > 0 {
            let hops: Hops = smallvec::smallvec![Hop {
                iface: 0,
                gateway: *ip,
            }];
            let list: RouteVec = vec![((0, 0), hops)];
            out.insert(n as u32, list);
        }
    }
    out
}

/// Replaces the most common next-hop set of a host table by a default
/// route (hosts send what they cannot place to their gateway, as with a
/// configured default gateway).
fn compress_to_default(list: &mut RouteVec) {
    let mut counts: BTreeMap<&Hops, usize> = BTreeMap::new();
    for (_, hops) in list.iter() {
        *counts.entry(hops).or_insert(0) += 1;
    }
    let Some((common, _)) = counts
        .into_iter()
        .max_by_key(|&(h, c)| (c, Reverse(h.clone())))
    else {
        return;
    };
    let common = common.clone();
    list.retain(|(k, h)| *h != common && *k != (0, 0));
    list.push(((0, 0), common));
}
