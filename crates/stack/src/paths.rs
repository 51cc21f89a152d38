//! Random simple-path routing: each flow follows a path drawn uniformly
//! from every loop-free path between its source's and its destination's
//! networks no longer than a hop cap (ns.py's "random simple path"
//! routing, NDL `[Simulation multipath='random_path']`).
//!
//! # The graph and the paths
//! Nodes are networks and forwarding machines (routers); a router joins
//! the networks its interfaces are on. A path runs from the source's
//! network through routers and networks to the destination's network and
//! is *simple*: no network and no router appears twice. Its length is the
//! number of networks it crosses, both ends included, which on
//! point-to-point links is the number of links (ns.py's edges): in a
//! FatTree a host reaches a host of another pod in 6.
//!
//! ns.py takes `networkx.all_simple_paths(G, src, dst, cutoff=diameter)`
//! and samples one per flow. The cap here is the same number: the longest
//! shortest path between two networks holding hosts, in networks crossed
//! ([`RandomPaths::max_hops`]; FatTree: 6). So in a FatTree a flow between
//! pods takes one of the (k/2)² shortest paths, and a flow inside a pod one
//! of the k/2 shortest paths or of the (k/2)(k/2 − 2)(k/2 − 1) six-link
//! paths that go down through another edge switch of the pod and back up.
//!
//! # The choice
//! A flow's path is the path at index `hash(seed, 5-tuple)` (Lemire's
//! multiply-shift over the count) of the pair's paths in depth-first
//! order (interfaces in index order, a network's routers in port order).
//! It is a function of the flow alone, so every router on the path finds
//! the same one without state carried in the packet, the sender's own
//! route included (a host's next hop is the path's first router), and a
//! run repeats exactly. A router not on the flow's path (a datagram that
//! left its path: a sender's route cached before routes changed) uses its
//! routing table, as does every datagram once on the last router, which
//! hands it to the destination.
//!
//! # Cost
//! Building: one breadth-first search per distinct set of routers among
//! the networks holding hosts (for the cap), O(networks + ports) each. A
//! FatTree(k) has k²/2 such sets. During the run, the paths of a (source
//! network, destination network) pair are enumerated the first time a
//! flow between them is routed: one breadth-first search from the
//! destination, then a depth-first enumeration pruned by the distance to
//! the destination, so only prefixes of paths within the cap are visited;
//! the pair's paths stay cached, 12 bytes per router of each path. A
//! datagram then costs a hash probe for the pair and a scan of its path's
//! routers (at most `max_hops − 1`).
//!
//! # Gaps
//! At most [`MAX_PATHS`] paths per pair (the first ones in depth-first
//! order; a pair with more never uses the rest); paths through
//! non-forwarding multi-homed machines are not considered; weighted
//! choices (by capacity) are not offered; the graph is made with the
//! routing tables, so addresses given during the run (DHCP) are not in
//! it and their flows use the tables.

use crate::hosts::Hosts;
use crate::machine::{IfaceId, MachineId};
use crate::route::FlowKey;
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::collections::{BTreeSet, VecDeque};
use std::rc::Rc;

/// The most paths kept per (source network, destination network) pair.
pub const MAX_PATHS: usize = 4096;

/// One router of a path: the machine, the interface it sends the flow's
/// datagrams out of, and the next router's address and port on that
/// interface's network (`next == 0`: the destination's network, where the
/// routing table's on-link check delivers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub machine: MachineId,
    pub iface: IfaceId,
    pub next: u32,
    pub port: u32,
}

/// The simple paths between two networks, flat: path `i` is
/// `steps[starts[i]..starts[i + 1]]`.
#[derive(Debug, Default)]
pub struct PathSet {
    pub steps: Vec<Step>,
    pub starts: Vec<u32>,
}

impl PathSet {
    /// Returns the number of paths.
    pub fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// Returns true when there is no path.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Returns path `i`'s routers.
    pub fn path(&self, i: usize) -> &[Step] {
        &self.steps[self.starts[i] as usize..self.starts[i + 1] as usize]
    }
}

/// A router's place on a network.
#[derive(Clone, Copy, Debug)]
struct Attach {
    machine: MachineId,
    ip: u32,
    port: u32,
}

/// The graph of networks and routers, the hop cap and the paths found so
/// far (see the module docs).
pub struct RandomPaths {
    /// The routers on each network, in port order.
    net_routers: Vec<Vec<Attach>>,
    /// Each machine's (network, interface) list; empty for non-routers.
    router_nets: Vec<Vec<(u32, IfaceId)>>,
    /// Every interface address → its network.
    addr_net: FxHashMap<u32, u32>,
    /// The longest path allowed, in networks crossed.
    pub max_hops: u32,
    seed: u64,
    cache: RefCell<FxHashMap<(u32, u32), Rc<PathSet>>>,
}

impl RandomPaths {
    /// Builds the graph of `w`'s machines and networks; the cap is the
    /// longest shortest path between networks holding hosts.
    pub fn build(w: &Hosts) -> Self {
        let nets = w.fabric.networks.len();
        let mut net_routers = vec![Vec::new(); nets];
        let mut router_nets = vec![Vec::new(); w.machines.len()];
        let mut addr_net = FxHashMap::default();
        let mut host_nets = Vec::new();
        for (n, net) in w.fabric.networks.iter().enumerate() {
            for (p, port) in net.ports.iter().enumerate() {
                let machine = &w.machines[port.machine as usize];
                let Some(ifc) = machine.ifaces.get(port.iface as usize) else {
                    continue;
                };
                addr_net.entry(u32::from(ifc.ip)).or_insert(n as u32);
                if machine.forward {
                    net_routers[n].push(Attach {
                        machine: port.machine,
                        ip: u32::from(ifc.ip),
                        port: p as u32,
                    });
                } else if host_nets.last() != Some(&(n as u32)) {
                    host_nets.push(n as u32);
                }
            }
        }
        for (m, machine) in w.machines.iter().enumerate() {
            if machine.forward {
                router_nets[m] = (machine.ifaces.iter().enumerate())
                    .map(|(i, ifc)| (ifc.net, i as IfaceId))
                    .collect();
            }
        }
        let mut g = RandomPaths {
            net_routers,
            router_nets,
            addr_net,
            max_hops: 0,
            seed: w.config.seed,
            cache: RefCell::default(),
        };
        g.max_hops = g.host_diameter(&host_nets);
        g
    }

    /// Returns the longest shortest path, in networks crossed, between
    /// two networks of `from`: one search per distinct set of routers
    /// among them (networks behind the same routers are equally far from
    /// every other network).
    fn host_diameter(&self, from: &[u32]) -> u32 {
        let mut seen: BTreeSet<Vec<MachineId>> = BTreeSet::new();
        let mut longest = 1;
        for &n in from {
            let set: Vec<MachineId> = self.net_routers[n as usize]
                .iter()
                .map(|a| a.machine)
                .collect();
            if set.is_empty() || !seen.insert(set) {
                continue;
            }
            let (net_dist, _) = self.distances(n);
            for &b in from {
                if let Some(&d) = net_dist.get(b as usize).filter(|&&d| d != u32::MAX) {
                    longest = longest.max(d);
                }
            }
        }
        longest
    }

    /// Breadth-first search from network `from`: each network's and each
    /// router's path length to it, in networks crossed (`from`: 1; a router
    /// on it: 1; `u32::MAX`: unreachable).
    fn distances(&self, from: u32) -> (Vec<u32>, Vec<u32>) {
        let mut net_dist = vec![u32::MAX; self.net_routers.len()];
        let mut router_dist = vec![u32::MAX; self.router_nets.len()];
        let mut queue = VecDeque::from([from]);
        net_dist[from as usize] = 1;
        while let Some(n) = queue.pop_front() {
            let d = net_dist[n as usize];
            for a in &self.net_routers[n as usize] {
                if router_dist[a.machine as usize] != u32::MAX {
                    continue;
                }
                router_dist[a.machine as usize] = d;
                for &(next, _) in &self.router_nets[a.machine as usize] {
                    if net_dist[next as usize] == u32::MAX {
                        net_dist[next as usize] = d + 1;
                        queue.push_back(next);
                    }
                }
            }
        }
        (net_dist, router_dist)
    }

    /// Returns the network holding address `ip`.
    pub fn network_of(&self, ip: u32) -> Option<u32> {
        self.addr_net.get(&ip).copied()
    }

    /// Returns the simple paths from network `src` to network `dst` of at
    /// most [`RandomPaths::max_hops`] networks (enumerated once, then
    /// cached).
    pub fn paths(&self, src: u32, dst: u32) -> Rc<PathSet> {
        if let Some(p) = self.cache.borrow().get(&(src, dst)) {
            return Rc::clone(p);
        }
        let set = Rc::new(self.enumerate(src, dst));
        self.cache.borrow_mut().insert((src, dst), Rc::clone(&set));
        set
    }

    fn enumerate(&self, src: u32, dst: u32) -> PathSet {
        let mut out = PathSet {
            steps: Vec::new(),
            starts: vec![0],
        };
        if src == dst {
            return out;
        }
        let (_, to_dst) = self.distances(dst);
        let mut e = Enumeration {
            g: self,
            dst,
            to_dst,
            net_used: vec![false; self.net_routers.len()],
            router_used: vec![false; self.router_nets.len()],
            stack: Vec::new(),
            out: &mut out,
        };
        e.net_used[src as usize] = true;
        e.from_network(src, 1);
        out
    }

    /// Returns the step of machine `m` of `w` on flow `f`'s path, if `m`
    /// is its sender or one of its routers before the last one (the last
    /// one delivers on-link).
    pub fn step(&self, w: &Hosts, m: MachineId, f: &FlowKey) -> Option<Step> {
        let src = self.network_of(f.src)?;
        let dst = self.network_of(f.dst)?;
        let set = self.paths(src, dst);
        if set.is_empty() {
            return None;
        }
        let path = set.path(choose(set.len(), self.seed, f));
        if let Some(s) = path.iter().find(|s| s.machine == m) {
            return (s.next != 0).then_some(*s);
        }
        // The sender: its interface on the source network, toward the
        // path's first router.
        let iface = w.machines[m as usize]
            .ifaces
            .iter()
            .position(|i| i.net == src && u32::from(i.ip) == f.src)?;
        let first = path.first()?;
        let a = self.net_routers[src as usize]
            .iter()
            .find(|a| a.machine == first.machine)?;
        Some(Step {
            machine: m,
            iface: iface as IfaceId,
            next: a.ip,
            port: a.port,
        })
    }
}

/// Picks one of `n` paths for flow `f` (uniform over flows; the same flow
/// always gets the same path).
pub fn choose(n: usize, seed: u64, f: &FlowKey) -> usize {
    let mut h = seed ^ 0x5eed_9a7f_0000_0001;
    for word in [
        u64::from(f.src) << 32 | u64::from(f.dst),
        u64::from(f.proto) << 32 | u64::from(f.sport) << 16 | u64::from(f.dport),
    ] {
        h = crate::route::splitmix(h ^ word);
    }
    (((h >> 32) * n as u64) >> 32) as usize
}

/// A depth-first enumeration in progress.
struct Enumeration<'a> {
    g: &'a RandomPaths,
    dst: u32,
    /// Each router's distance to `dst`, in networks crossed.
    to_dst: Vec<u32>,
    net_used: Vec<bool>,
    router_used: Vec<bool>,
    /// The routers so far, each with its way out (filled in when the
    /// next network is chosen).
    stack: Vec<Step>,
    out: &'a mut PathSet,
}

impl Enumeration<'_> {
    /// Extends the path that has reached network `n` after `hops`
    /// networks through each unused router on `n`.
    fn from_network(&mut self, n: u32, hops: u32) {
        let g = self.g;
        for a in &g.net_routers[n as usize] {
            let r = a.machine as usize;
            if self.out.len() >= MAX_PATHS || self.router_used[r] {
                continue;
            }
            // The shortest way on from r crosses to_dst[r] more networks.
            let d = self.to_dst[r];
            if d == u32::MAX || hops + d > g.max_hops {
                continue;
            }
            if let Some(last) = self.stack.last_mut() {
                last.next = a.ip;
                last.port = a.port;
            }
            self.router_used[r] = true;
            self.stack.push(Step {
                machine: a.machine,
                iface: 0,
                next: 0,
                port: 0,
            });
            self.from_router(a.machine, hops);
            self.stack.pop();
            self.router_used[r] = false;
        }
    }

    /// Extends the path at router `r` through each unused network of it.
    fn from_router(&mut self, r: MachineId, hops: u32) {
        let g = self.g;
        for &(n, iface) in &g.router_nets[r as usize] {
            if self.out.len() >= MAX_PATHS || self.net_used[n as usize] {
                continue;
            }
            let top = self.stack.len() - 1;
            self.stack[top].iface = iface;
            if n == self.dst {
                self.stack[top].next = 0;
                self.stack[top].port = 0;
                self.out.steps.extend_from_slice(&self.stack);
                self.out.starts.push(self.out.steps.len() as u32);
                continue;
            }
            if hops + 1 >= g.max_hops {
                continue;
            }
            self.net_used[n as usize] = true;
            self.from_network(n, hops + 1);
            self.net_used[n as usize] = false;
        }
    }
}
