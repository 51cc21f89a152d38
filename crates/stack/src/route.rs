//! Routing tables: longest-prefix match (RFC 1812 §5.2.4.3) with
//! equal-cost multipath.
//!
//! A `Table` is immutable once built and shared: machines with the same
//! routes (every host of a LAN behind the same gateway, say) point at one
//! table by index, so a million hosts cost 4 bytes each for routing. Tables
//! are built by `Routing::finish` from the static routes given through
//! the API or NDL and, when enabled, the routes computed from the topology
//! (`crate::routing`).
//!
//! # Lookup
//! One hash map per prefix length present in the table, longest first: a
//! lookup costs at most one hash probe per distinct length (typically two
//! or three: the networks' /24s and a default route), whatever the number
//! of routes. No allocation.
//!
//! # ECMP
//! A route may have several next hops. A flow picks one by a seeded hash of
//! its 5-tuple (source, destination, protocol, ports) mixed with the
//! forwarding machine's id, like Linux's `fib_multipath_hash_policy=1`; the
//! same flow always takes the same path, different flows spread uniformly.
//!
//! With per-packet multipath ([`Routing::per_packet`], NDL `[Simulation
//! multipath='packet']`) a router mixes each datagram's IPv4
//! identification into that hash: a flow's datagrams spread over the
//! equal-cost next hops (packet spraying, ns.py's random demultiplexing),
//! the fragments of one datagram still travel together, and the choice
//! stays a function of the datagram, so runs repeat exactly. Datagrams a
//! machine sends itself keep the per-flow choice (a TCP connection
//! caches its route).
//!
//! # Random multipath
//! Two choices are random rather than hashed ([`Routing::random`], ns.py's
//! random elements). *Random demultiplexing* (NDL `multipath='random'`,
//! ns.py's `RandomDemux` with equal weights) sends each datagram to a next
//! hop drawn from the forwarding machine's own stream: draw `i` of machine
//! `m` is `splitmix(seed, m, i)`, i.i.d. uniform over the next hops
//! whatever the datagram holds, and the same seed repeats every draw.
//! *Random simple-path routing* (`multipath='random_path'`) gives each
//! flow a path drawn from all loop-free paths up to a hop cap, not only
//! the shortest ones (`crate::paths`).
//!
//! # Per-flow explicit routes
//! A router may also hold *flow routes* (`FlowRoutes`): "datagrams from
//! SRC to DST (optionally: to destination port P) leave toward neighbour
//! VIA", like Linux policy routing (`ip rule add from SRC to DST [dport P]
//! table T` with a table holding one route). They are consulted before
//! the connected networks and the longest-prefix match, for datagrams the
//! machine forwards, with one hash probe (two when some flow route names a
//! port: the port-specific one wins over the port-less one). They pin each
//! flow of a benchmark to a chosen path (the FatTree benchmark's random
//! shortest path per flow, as ns.py's per-flow FIB does).
//!
//! # Gaps
//! Weighted multipath (ns.py's `RandomDemux` takes per-output
//! probabilities; here they are equal), route metrics beyond "longest prefix wins", policy
//! routing beyond exact (source, destination[, port]) flow routes (no
//! prefixes, no `fwmark`, no TOS), flow routes for a machine's own
//! datagrams (only forwarded ones use them), routes changing during a
//! run.

use crate::machine::IfaceId;
use crate::machine::MachineId;
use rustc_hash::FxHashMap;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// "No routing table" in [`Routing::of_machine`].
pub const NO_TABLE: u32 = u32::MAX;

/// One next hop: an interface and the neighbour to hand the datagram to
/// (`0.0.0.0` when the destination itself is on that interface's network).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hop {
    pub iface: IfaceId,
    pub gateway: u32,
}

/// The next hops of one route.
pub type Hops = smallvec::SmallVec<[Hop; 2]>;

/// A prefix (`addr/len`, host bits zero) and its next hops.
pub type RouteList = BTreeMap<(u32, u8), Hops>;

/// The same as a vector sorted by prefix, without duplicates (cheaper to
/// build in bulk).
pub type RouteVec = Vec<((u32, u8), Hops)>;

struct Level {
    len: u8,
    mask: u32,
    /// Masked prefix → (first hop index, hop count).
    map: FxHashMap<u32, (u32, u16)>,
}

/// An immutable longest-prefix-match table.
///
/// The default route (`/0`) lies outside the levels, and one next hop
/// lies inline: a host's table of a default route alone (`gateway=`)
/// allocates nothing, which a million-host star has a million of.
pub struct Table {
    /// Levels by decreasing prefix length, `/0` excepted.
    levels: Vec<Level>,
    /// The default route's (first hop index, hop count).
    default: Option<(u32, u16)>,
    hops: smallvec::SmallVec<[Hop; 1]>,
    routes: usize,
}

/// Returns the netmask of a prefix length (0..=32).
pub fn mask(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len.min(32)))
    }
}

impl Table {
    /// Builds a table from routes.
    pub fn new(routes: &RouteList) -> Table {
        Table::build(routes.iter(), routes.len())
    }

    fn build<'a>(routes: impl Iterator<Item = (&'a (u32, u8), &'a Hops)>, n: usize) -> Table {
        let mut levels: Vec<Level> = Vec::new();
        let mut default = None;
        let mut hops = smallvec::SmallVec::new();
        for (&(prefix, len), hs) in routes {
            let start = hops.len() as u32;
            hops.extend_from_slice(hs);
            if len == 0 {
                // Host bits zero: the prefix of `/0` is 0.0.0.0.
                default = Some((start, hs.len() as u16));
                continue;
            }
            let level = match levels.iter_mut().position(|l| l.len == len) {
                Some(i) => &mut levels[i],
                None => {
                    levels.push(Level {
                        len,
                        mask: mask(len),
                        map: FxHashMap::default(),
                    });
                    levels.last_mut().expect("just pushed")
                }
            };
            level.map.insert(prefix, (start, hs.len() as u16));
        }
        levels.sort_by_key(|l| std::cmp::Reverse(l.len));
        Table {
            levels,
            default,
            hops,
            routes: n,
        }
    }

    /// Returns the next hops of the longest prefix containing `dst`.
    pub fn lookup(&self, dst: u32) -> Option<&[Hop]> {
        for l in &self.levels {
            if let Some(&(start, n)) = l.map.get(&(dst & l.mask)) {
                return Some(&self.hops[start as usize..start as usize + usize::from(n)]);
            }
        }
        let (start, n) = self.default?;
        Some(&self.hops[start as usize..start as usize + usize::from(n)])
    }

    /// Returns the next hops of a host route (`/32`) to `dst`, if any.
    pub fn lookup_host(&self, dst: u32) -> Option<&[Hop]> {
        let l = self.levels.first().filter(|l| l.len == 32)?;
        let &(start, n) = l.map.get(&dst)?;
        Some(&self.hops[start as usize..start as usize + usize::from(n)])
    }

    /// Returns the number of routes.
    pub fn len(&self) -> usize {
        self.routes
    }

    /// Returns true when the table holds no route.
    pub fn is_empty(&self) -> bool {
        self.routes == 0
    }
}

/// Picks one of `n` next hops for a flow, or for its one datagram when
/// `per_packet` (deterministic, seeded).
pub fn pick(n: usize, seed: u64, machine: MachineId, flow: &FlowKey, per_packet: bool) -> usize {
    if n <= 1 {
        return 0;
    }
    let mut h = seed ^ u64::from(machine).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for word in [
        u64::from(flow.src) << 32 | u64::from(flow.dst),
        u64::from(flow.proto) << 32 | u64::from(flow.sport) << 16 | u64::from(flow.dport),
    ] {
        h = splitmix(h ^ word);
    }
    if per_packet {
        h = splitmix(h ^ u64::from(flow.ident));
    }
    // Lemire's multiply-shift: uniform over n without a division.
    (((h >> 32) * n as u64) >> 32) as usize
}

pub(crate) fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Draws one of `n` next hops from machine `m`'s random-demultiplexing
/// stream, whose position `at` counts its draws (see "Random multipath").
pub fn draw(n: usize, seed: u64, m: MachineId, at: &Cell<u64>) -> usize {
    let i = at.get();
    at.set(i + 1);
    let h =
        splitmix(seed ^ 0xd3e0_0000_0000_0000 ^ u64::from(m).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let h = splitmix(h ^ i);
    (((h >> 32) * n as u64) >> 32) as usize
}

/// The random choices of next hops (see "Random multipath").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Random {
    /// Hashed choices only (`multipath='flow'` or `'packet'`).
    #[default]
    Off,
    /// Each datagram's next hop drawn from the machine's stream.
    Demux,
    /// Each flow on a random simple path.
    Path,
}

/// The 5-tuple a multipath choice hashes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowKey {
    pub src: u32,
    pub dst: u32,
    pub proto: u8,
    pub sport: u16,
    pub dport: u16,
    /// The datagram's IPv4 identification, for per-packet multipath (0
    /// where the key stands for a whole flow).
    pub ident: u16,
}

/// "Any destination port" in a [`FlowRoutes`] key.
const ANY_PORT: u32 = u32::MAX;

/// Where a flow route sends a datagram: out of `iface`, to the neighbour
/// `via` at `port` of that interface's network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowHop {
    pub iface: IfaceId,
    pub via: u32,
    pub port: u32,
}

/// The per-flow explicit routes of every machine (see "Per-flow explicit
/// routes"), keyed by (machine, source, destination, port) packed into one
/// integer: an open-addressing table (linear probing, at most half full,
/// a key's first slot picked by a two-multiply mix of all its bits), so a
/// lookup is typically one hash and one comparison. Nothing iterates it:
/// its order never shows.
#[derive(Default)]
pub struct FlowRoutes {
    /// Keys by slot ([`EMPTY`] for a free slot); a power of two long.
    keys: Vec<u128>,
    /// Routes by slot.
    hops: Vec<FlowHop>,
    len: usize,
    /// The route whose key is [`EMPTY`] (all ones: machine `u32::MAX`).
    all_ones: Option<FlowHop>,
    /// Some route names a destination port (lookups probe twice).
    with_ports: bool,
}

/// A free slot of [`FlowRoutes`].
const EMPTY: u128 = u128::MAX;

/// Packs a [`FlowRoutes`] key into one integer.
#[inline]
fn flow_key(m: MachineId, src: u32, dst: u32, port: u32) -> u128 {
    u128::from(u64::from(m) << 32 | u64::from(port)) << 64
        | u128::from(u64::from(src) << 32 | u64::from(dst))
}

/// Mixes all 128 bits of a [`FlowRoutes`] key into 64 (the structured
/// addresses and ports of a topology's flows would crowd a weaker hash's
/// slots).
#[inline]
fn flow_hash(k: u128) -> u64 {
    let (hi, lo) = ((k >> 64) as u64, k as u64);
    let a = lo.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ hi;
    let b = (a ^ (a >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    b ^ (b >> 32)
}

impl FlowRoutes {
    /// Adds (or replaces) the route of flow `src` → `dst` (to port
    /// `dport`, or any port) on machine `m`.
    pub fn insert(&mut self, m: MachineId, src: u32, dst: u32, dport: Option<u16>, hop: FlowHop) {
        self.with_ports |= dport.is_some();
        let port = dport.map_or(ANY_PORT, u32::from);
        self.put(flow_key(m, src, dst, port), hop);
    }

    /// Files `hop` under `key`, replacing any route there.
    fn put(&mut self, key: u128, hop: FlowHop) {
        if key == EMPTY {
            self.len += usize::from(self.all_ones.replace(hop).is_none());
            return;
        }
        if (self.len + 1) * 2 > self.keys.len() {
            self.grow();
        }
        let mask = self.keys.len() - 1;
        let mut i = flow_hash(key) as usize & mask;
        loop {
            if self.keys[i] == key {
                self.hops[i] = hop;
                return;
            }
            if self.keys[i] == EMPTY {
                self.keys[i] = key;
                self.hops[i] = hop;
                self.len += 1;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// Doubles the table (at least 16 slots) and files every route again.
    #[cold]
    fn grow(&mut self) {
        let size = (self.keys.len() * 2).max(16);
        let unused = FlowHop {
            iface: 0,
            via: 0,
            port: 0,
        };
        let keys = std::mem::replace(&mut self.keys, vec![EMPTY; size]);
        let hops = std::mem::replace(&mut self.hops, vec![unused; size]);
        self.len = usize::from(self.all_ones.is_some());
        for (k, h) in keys.into_iter().zip(hops) {
            if k != EMPTY {
                self.put(k, h);
            }
        }
    }

    /// Returns the route filed under `key`.
    #[inline(always)]
    fn get(&self, key: u128) -> Option<FlowHop> {
        if key == EMPTY {
            return self.all_ones;
        }
        let mask = self.keys.len().wrapping_sub(1);
        let mut i = flow_hash(key) as usize & mask;
        loop {
            let k = *self.keys.get(i)?;
            if k == key {
                return self.hops.get(i).copied();
            }
            if k == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Returns the flow route of a datagram of `flow` forwarded by `m`.
    #[inline(always)]
    pub fn lookup(&self, m: MachineId, flow: &FlowKey) -> Option<FlowHop> {
        if self.len == 0 {
            return None;
        }
        if self.with_ports {
            let hop = self.get(flow_key(m, flow.src, flow.dst, u32::from(flow.dport)));
            if hop.is_some() {
                return hop;
            }
        }
        self.get(flow_key(m, flow.src, flow.dst, ANY_PORT))
    }

    /// Returns the number of flow routes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Returns true when there is no flow route.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A static route with known interfaces: `(prefix, len, [(iface,
/// gateway)])`, several next hops forming an equal-cost set.
pub type IfaceRoute<'a> = (Ipv4Addr, u8, &'a [(IfaceId, Ipv4Addr)]);

/// How automatic routes measure a path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Metric {
    /// Fewest networks crossed (ns-3's global routing, RIP).
    #[default]
    Hops,
    /// Least total one-way latency; ties (and zero-latency networks) broken
    /// by hop count.
    Latency,
}

/// A static route as given (checked when tables are built).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaticRoute {
    pub prefix: u32,
    pub len: u8,
    pub via: Ipv4Addr,
    /// The interface `via` is on, when the caller knows it (topology
    /// generators do); otherwise found when tables are built.
    pub iface: Option<IfaceId>,
}

/// The routing state of a simulation.
#[derive(Default)]
pub struct Routing {
    pub tables: Vec<Table>,
    /// Table index by machine id; empty while no machine has a table.
    pub of_machine: Vec<u32>,
    /// Static routes by machine, in the order given.
    pub statics: BTreeMap<MachineId, Vec<StaticRoute>>,
    /// Automatic routes, if enabled.
    pub auto: Option<Metric>,
    /// Tables need rebuilding before the next run.
    pub dirty: bool,
    /// Per-flow explicit routes (kept across table rebuilds).
    pub flows: FlowRoutes,
    /// Routers spread each datagram over equal-cost next hops (see
    /// "ECMP"), not each flow.
    pub per_packet: bool,
    /// Random next hops (see "Random multipath").
    pub random: Random,
    /// Per machine, the position of its random-demultiplexing stream;
    /// sized when tables are built, empty unless `random` is `Demux`.
    pub draws: Vec<Cell<u64>>,
    /// The graph and paths of random simple-path routing, built with the
    /// tables when `random` is `Path`.
    pub paths: Option<Box<crate::paths::RandomPaths>>,
    /// Tables made during the run for addresses given by DHCP
    /// (`crate::addr`): (interface, gateway) → the table holding that
    /// one default route. Emptied with `tables` when they are rebuilt.
    pub dynamic: FxHashMap<(IfaceId, u32), u32>,
}

impl Routing {
    /// Returns the table of machine `m`, if it has one.
    #[inline]
    pub fn table(&self, m: MachineId) -> Option<&Table> {
        let t = *self.of_machine.get(m as usize)?;
        self.tables.get(t as usize)
    }
}

/// Interns identical route lists as one shared table.
#[derive(Default)]
pub struct Interner {
    ids: FxHashMap<RouteVec, u32>,
    pub tables: Vec<Table>,
}

impl Interner {
    /// Returns the index of the table holding exactly `routes`.
    pub fn intern(&mut self, routes: &RouteList) -> u32 {
        self.intern_vec(routes.iter().map(|(k, v)| (*k, v.clone())).collect())
    }

    /// Returns the index of the table holding exactly `routes` (sorted by
    /// prefix, no duplicates).
    pub fn intern_vec(&mut self, routes: RouteVec) -> u32 {
        if let Some(&id) = self.ids.get(&routes) {
            return id;
        }
        let id = self.tables.len() as u32;
        let n = routes.len();
        self.tables
            .push(Table::build(routes.iter().map(|(k, v)| (k, v)), n));
        self.ids.insert(routes, id);
        id
    }
}

/// Parses `a.b.c.d/len` (host bits must be zero) into (prefix, len).
///
/// # Errors
/// A line saying what is wrong.
pub fn parse_prefix(s: &str) -> Result<(Ipv4Addr, u8), String> {
    let (addr, len) = match s.split_once('/') {
        Some((a, l)) => (a, l),
        None => (s, "32"),
    };
    let ip: Ipv4Addr = addr
        .trim()
        .parse()
        .map_err(|_| format!("'{addr}' is not an IPv4 address"))?;
    let len: u8 = len
        .trim()
        .parse()
        .ok()
        .filter(|l| *l <= 32)
        .ok_or_else(|| format!("prefix length '{len}' is not in 0..=32"))?;
    if u32::from(ip) & !mask(len) != 0 {
        let net = Ipv4Addr::from(u32::from(ip) & mask(len));
        return Err(format!("host bits set (the network is {net}/{len})"));
    }
    Ok((ip, len))
}

#[cfg(test)]
mod test {
    use super::*;

    fn hop(iface: IfaceId) -> Hops {
        smallvec::smallvec![Hop { iface, gateway: 0 }]
    }

    fn p(s: &str) -> (u32, u8) {
        let (ip, len) = parse_prefix(s).unwrap();
        (u32::from(ip), len)
    }

    #[test]
    fn longest_prefix_wins_over_shorter_and_default() {
        let mut r = RouteList::new();
        r.insert(p("0.0.0.0/0"), hop(0));
        r.insert(p("10.0.0.0/8"), hop(1));
        r.insert(p("10.1.0.0/16"), hop(2));
        r.insert(p("10.1.2.0/24"), hop(3));
        r.insert(p("10.1.2.128/25"), hop(4));
        let t = Table::new(&r);
        let at = |s: &str| t.lookup(u32::from(s.parse::<Ipv4Addr>().unwrap())).unwrap()[0].iface;
        assert_eq!(at("10.1.2.200"), 4);
        assert_eq!(at("10.1.2.127"), 3);
        assert_eq!(at("10.1.3.1"), 2);
        assert_eq!(at("10.2.0.1"), 1);
        assert_eq!(at("192.168.0.1"), 0);
        assert_eq!(t.len(), 5);
    }

    #[test]
    fn a_table_without_default_misses_unknown_networks() {
        let mut r = RouteList::new();
        r.insert(p("10.1.0.0/16"), hop(2));
        let t = Table::new(&r);
        assert!(t.lookup(u32::from(Ipv4Addr::new(10, 2, 0, 1))).is_none());
        assert!(t
            .lookup(u32::from(Ipv4Addr::new(10, 1, 255, 255)))
            .is_some());
    }

    #[test]
    fn host_routes_are_slash_32() {
        let mut r = RouteList::new();
        r.insert(p("10.1.0.0/16"), hop(2));
        r.insert(p("10.1.0.7"), hop(5));
        let t = Table::new(&r);
        assert_eq!(
            t.lookup(u32::from(Ipv4Addr::new(10, 1, 0, 7))).unwrap()[0].iface,
            5
        );
        assert_eq!(
            t.lookup(u32::from(Ipv4Addr::new(10, 1, 0, 8))).unwrap()[0].iface,
            2
        );
    }

    #[test]
    fn prefixes_with_host_bits_or_bad_lengths_are_rejected() {
        assert!(parse_prefix("10.1.0.0/16").is_ok());
        assert!(parse_prefix("10.1.0.1/16")
            .unwrap_err()
            .contains("10.1.0.0/16"));
        assert!(parse_prefix("10.1.0.0/33").is_err());
        assert!(parse_prefix("10.1.0/16").is_err());
    }

    #[test]
    fn identical_route_lists_share_one_table() {
        let mut i = Interner::default();
        let mut r = RouteList::new();
        r.insert(p("0.0.0.0/0"), hop(0));
        let a = i.intern(&r);
        let b = i.intern(&r.clone());
        r.insert(p("10.0.0.0/8"), hop(1));
        let c = i.intern(&r);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(i.tables.len(), 2);
    }

    #[test]
    fn flow_routes_find_what_was_filed_and_nothing_else() {
        let hop = |port: u32| FlowHop {
            iface: 1,
            via: 7,
            port,
        };
        let mut f = FlowRoutes::default();
        let flow = |src: u32, dport: u16| FlowKey {
            src,
            dst: 99,
            proto: 17,
            sport: 5,
            dport,
            ident: 0,
        };
        assert_eq!(f.lookup(3, &flow(1, 10)), None);
        for src in 0..1000 {
            f.insert(3, src, 99, None, hop(src));
        }
        f.insert(3, 5, 99, Some(10), hop(12345));
        f.insert(3, 5, 99, Some(10), hop(54321));
        f.insert(u32::MAX, u32::MAX, u32::MAX, None, hop(1));
        assert_eq!(f.len(), 1002);
        for src in 0..1000 {
            assert_eq!(f.lookup(3, &flow(src, 11)), Some(hop(src)));
            assert_eq!(f.lookup(4, &flow(src, 11)), None);
        }
        assert_eq!(f.lookup(3, &flow(5, 10)), Some(hop(54321)));
        assert_eq!(f.lookup(3, &flow(1000, 10)), None);
        let all_ones = FlowKey {
            src: u32::MAX,
            dst: u32::MAX,
            ..flow(0, 0)
        };
        assert_eq!(f.lookup(u32::MAX, &all_ones), Some(hop(1)));
    }

    #[test]
    fn the_multipath_pick_is_stable_per_flow_and_in_range() {
        let f = FlowKey {
            src: 1,
            dst: 2,
            proto: 17,
            sport: 1000,
            dport: 53,
            ident: 0,
        };
        for n in 1..9 {
            let k = pick(n, 7, 3, &f, false);
            assert!(k < n);
            assert_eq!(k, pick(n, 7, 3, &f, false));
        }
    }

    /// Per flow the datagram's identification changes nothing; per
    /// packet, the datagrams of one flow spread evenly (a χ² test over
    /// four next hops at 1 % significance: 11.34 for 3 degrees of
    /// freedom), each one's choice repeatable.
    #[test]
    fn per_packet_multipath_spreads_one_flows_datagrams_evenly() {
        let f = |ident| FlowKey {
            src: 1,
            dst: 2,
            proto: 6,
            sport: 40000,
            dport: 80,
            ident,
        };
        let one = pick(4, 7, 3, &f(0), false);
        assert!((0..1000).all(|i| pick(4, 7, 3, &f(i), false) == one));
        let mut counts = [0u32; 4];
        for i in 0..4000 {
            let k = pick(4, 7, 3, &f(i), true);
            assert_eq!(k, pick(4, 7, 3, &f(i), true));
            counts[k] += 1;
        }
        let chi2: f64 = counts
            .iter()
            .map(|&c| (f64::from(c) - 1000.0).powi(2) / 1000.0)
            .sum();
        assert!(chi2 < 11.34, "{counts:?}");
    }
}
