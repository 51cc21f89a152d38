//! AODV, Ad hoc On-Demand Distance Vector routing (RFC 3561), as a
//! service of the machine's stack that owns UDP port 654, like DHCP: it
//! is driven by datagrams and timers, not by an application task.
//!
//! A machine with AODV ([`enable`]) routes every unicast destination that
//! is not its own through its AODV table ([`table`]), its connected
//! networks included: on a wireless network every node is "connected",
//! but only some are in range. `ipv4::route_flow` asks
//! [`crate::ondemand::route`]; without an active route it answers
//! `NextHop::OnDemand`, and `ipv4::transmit` hands the finished datagram
//! to [`crate::ondemand::hold`], which queues it per destination (at most
//! [`QUEUE_LEN`]) and starts a route discovery ([`discovery`]). The queue
//! is sent when the RREP arrives, or dropped (`aodv(no_route)`, ICMP
//! Destination Unreachable, host unreachable, to the local sender) when
//! the discovery gives up.
//!
//! | feature | RFC 3561 |
//! |---|---|
//! | messages RREQ, RREP, RERR, RREP-ACK ([`wire`]) | §5 |
//! | sequence numbers, signed comparison with wrap-around | §6.1 |
//! | route table entries, lifetimes, precursors ([`table`]) | §6.2 |
//! | RREQ origination, expanding ring search, retries with binary exponential back-off | §6.3, §6.4 |
//! | RREQ processing, duplicate suppression, reverse routes | §6.5 |
//! | RREP by the destination, by an intermediate node, gratuitous RREP | §6.6 |
//! | RREP processing, forward routes, precursors | §6.7 |
//! | RREP-ACK on request (A flag), and the blacklist of neighbours whose RREP went unacknowledged: their RREQs are ignored for BLACKLIST_TIMEOUT ([`blacklist`]; the A flag is set when `rrep_ack` is on) | §6.8 |
//! | HELLO messages, neighbour loss | §6.9 |
//! | local repair of a transit route at a link break, RERR with the N flag when the repaired route is longer (`local_repair`; [`repair`]) | §6.12 |
//! | link breaks, RERR to precursors, RERR processing | §6.11 |
//! | RREQ_RATELIMIT and RERR_RATELIMIT, 10 per second each: a RREQ past the limit waits for the next second (as ns-3's AODV), a RERR is not sent | §6.3, §6.11, §10 |
//!
//! A node's address in AODV messages (originator, destination) is its
//! first interface's address; its messages leave each interface from
//! that interface's address, so a neighbour's next hop is an address on
//! the shared network. Data a node originates carries the first
//! interface's address as its source.
//!
//! A link to a neighbour is found broken by missed HELLOs (when `hello`
//! is on), by the link layer ([`crate::ondemand::link_failed`], which a
//! wireless MAC calls when its retries to a next hop run out), or when ARP
//! gets no answer for a next hop.

pub mod blacklist;
pub mod discovery;
pub mod maintenance;
pub mod repair;
pub mod table;
#[cfg(test)]
mod tests;
pub mod wire;

use crate::counters::DropReason;
use crate::hosts::{Event, Hosts};
use crate::ipv4::{self, NextHop, Route};
use crate::machine::{IfaceId, MachineId};
use crate::Timer;
use elvis_message::Message;
use elvis_wire::checksum::Checksum;
use elvis_wire::{udp, IpProtocol};
use std::collections::{BTreeMap, VecDeque};
use std::net::Ipv4Addr;

/// AODV's UDP port (§1).
pub const PORT: u16 = 654;
const MS: u64 = 1_000_000;
/// §10's parameters, in ns where they are times.
pub const ACTIVE_ROUTE_TIMEOUT: u64 = 3_000 * MS;
pub const ALLOWED_HELLO_LOSS: u64 = 2;
pub const HELLO_INTERVAL: u64 = 1_000 * MS;
pub const NET_DIAMETER: u8 = 35;
pub const NODE_TRAVERSAL_TIME: u64 = 40 * MS;
pub const NET_TRAVERSAL_TIME: u64 = 2 * NODE_TRAVERSAL_TIME * NET_DIAMETER as u64;
pub const PATH_DISCOVERY_TIME: u64 = 2 * NET_TRAVERSAL_TIME;
pub const MY_ROUTE_TIMEOUT: u64 = 2 * ACTIVE_ROUTE_TIMEOUT;
/// K × max(ACTIVE_ROUTE_TIMEOUT, HELLO_INTERVAL) with K = 5.
pub const DELETE_PERIOD: u64 = 5 * ACTIVE_ROUTE_TIMEOUT;
pub const RREQ_RETRIES: u8 = 2;
pub const TTL_START: u8 = 1;
pub const TTL_INCREMENT: u8 = 2;
pub const TTL_THRESHOLD: u8 = 7;
pub const TIMEOUT_BUFFER: u64 = 2;
/// RREQs a node originates per second at most (§6.3).
pub const RREQ_RATELIMIT: u8 = 10;
/// RERRs a node sends per second at most (§6.11).
pub const RERR_RATELIMIT: u8 = 10;
/// How long a RREP's sender waits for the RREP-ACK it asked for (§10:
/// NODE_TRAVERSAL_TIME + 10 ms).
pub const NEXT_HOP_WAIT: u64 = NODE_TRAVERSAL_TIME + 10 * MS;
/// How long a neighbour stays on the blacklist (§10: RREQ_RETRIES ×
/// NET_TRAVERSAL_TIME).
pub const BLACKLIST_TIMEOUT: u64 = RREQ_RETRIES as u64 * NET_TRAVERSAL_TIME;
/// Local repair's limit and TTL margin (§10: 0.3 × NET_DIAMETER, 2).
pub const MAX_REPAIR_TTL: u8 = 10;
pub const LOCAL_ADD_TTL: u8 = 2;
/// Datagrams queued per destination while its route is discovered.
pub const QUEUE_LEN: usize = 64;

/// RING_TRAVERSAL_TIME for a RREQ of `ttl` (§10).
pub fn ring_traversal_time(ttl: u8) -> u64 {
    2 * NODE_TRAVERSAL_TIME * (u64::from(ttl) + TIMEOUT_BUFFER)
}

/// How long the originator waits for a RREP to a RREQ of `ttl` sent as
/// retry number `retries` (§6.3, §6.4): a ring's traversal time below
/// NET_DIAMETER, then NET_TRAVERSAL_TIME doubled per retry.
pub fn rrep_wait(ttl: u8, retries: u8) -> u64 {
    if ttl < NET_DIAMETER {
        ring_traversal_time(ttl)
    } else {
        NET_TRAVERSAL_TIME << retries
    }
}

/// A machine's AODV settings (NDL `[Protocol name='AODV' …]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Send HELLOs and detect lost neighbours by them (§6.9).
    pub hello: bool,
    /// Set the G flag on RREQs (§6.6.3).
    pub gratuitous: bool,
    /// Ask for a RREP-ACK with every unicast RREP (the A flag) and
    /// blacklist a neighbour that does not send it (§6.8).
    pub rrep_ack: bool,
    /// Repair a broken transit route locally instead of reporting it
    /// at once (§6.12).
    pub local_repair: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            hello: true,
            gratuitous: false,
            rrep_ack: false,
            local_repair: false,
        }
    }
}

/// Messages sent in the current second of virtual time, for §10's
/// per-second rate limits (whole seconds since the start of the run).
#[derive(Clone, Copy, Debug, Default)]
pub struct RateWindow {
    second: u64,
    count: u8,
}

impl RateWindow {
    /// Counts one message at `now` (ns) if fewer than `limit` went in
    /// this second; else returns when the next second starts (ns).
    pub fn take(&mut self, now: u64, limit: u8) -> Result<(), u64> {
        const SECOND: u64 = 1_000 * MS;
        let second = now / SECOND;
        if second != self.second {
            *self = RateWindow { second, count: 0 };
        }
        if self.count >= limit {
            return Err((second + 1) * SECOND);
        }
        self.count += 1;
        Ok(())
    }
}

/// A route discovery under way, and the datagrams waiting for it.
#[derive(Debug)]
pub struct Discovery {
    pub queue: VecDeque<Message>,
    /// The TTL of the last RREQ sent.
    pub ttl: u8,
    /// RREQs sent with TTL NET_DIAMETER after the first.
    pub retries: u8,
    /// When the first RREQ went out (ns).
    pub started: u64,
    pub gen: u32,
    /// The next RREQ waits for the rate limit (its timer sends it at the
    /// same TTL).
    pub deferred: bool,
    /// A local repair (§6.12): the broken route's hop count and
    /// precursors.
    pub repair: Option<repair::Repair>,
}

/// What a node knows of a neighbour (§6.9).
#[derive(Clone, Copy, Debug)]
pub struct Neighbour {
    pub iface: IfaceId,
    /// When a message from it last arrived (ns).
    pub heard: u64,
    /// When a HELLO from it last arrived (ns; 0: never).
    pub hello: u64,
}

/// One machine's AODV state.
#[derive(Debug, Default)]
pub struct Node {
    pub cfg: Config,
    /// The node's own sequence number (§6.1).
    pub seq: u32,
    pub rreq_id: u32,
    pub table: table::Table,
    /// RREQs seen, by (originator, RREQ ID), until when they are kept
    /// (looked up and purged, never walked in order).
    pub seen: rustc_hash::FxHashMap<(u32, u32), u64>,
    /// Discoveries under way, by destination.
    pub pending: BTreeMap<u32, Discovery>,
    /// Neighbours heard, by address (a walk over them sorts by address).
    pub neighbours: rustc_hash::FxHashMap<u32, Neighbour>,
    /// When the node last broadcast an AODV message (ns).
    pub last_broadcast: u64,
    pub gen: u32,
    /// RREQs originated and RERRs sent in the current second.
    pub rreq_rate: RateWindow,
    pub rerr_rate: RateWindow,
    /// RREP-ACKs asked for and not yet come, by neighbour: the generation
    /// of the wait's timer (§6.8).
    pub ack_wait: rustc_hash::FxHashMap<u32, u32>,
    pub ack_gen: u32,
    /// Blacklisted neighbours, until when (ns; §6.8).
    pub blacklist: rustc_hash::FxHashMap<u32, u64>,
}

/// The run's AODV counters (the report's `aodv` section).
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Messages and their UDP payload bytes sent, by type: RREQ, RREP,
    /// RERR, RREP-ACK, HELLO (each transmission counts once).
    pub sent: [u64; 5],
    pub sent_bytes: [u64; 5],
    pub received: [u64; 5],
    pub rreq_originated: u64,
    pub rreq_forwarded: u64,
    pub rreq_duplicates: u64,
    pub rrep_forwarded: u64,
    /// Route discoveries started, and how long each successful one took
    /// (ns), in completion order.
    pub discoveries: u64,
    pub discovery_ns: Vec<u64>,
    pub discoveries_failed: u64,
    /// Datagrams queued for a route, and those dropped for want of one
    /// (a discovery gave up, a full queue, none at a forwarding node).
    pub buffered: u64,
    pub dropped_no_route: u64,
    /// Links found broken (HELLO loss, link layer, ARP) and routes
    /// invalidated by breaks and RERRs.
    pub link_breaks: u64,
    pub routes_invalidated: u64,
    /// RREQs held back to the next second, and RERRs not sent, by the
    /// rate limits.
    pub rreq_rate_limited: u64,
    pub rerr_rate_limited: u64,
    /// RREP-ACKs asked for that did not come (each blacklists the
    /// neighbour), and RREQs ignored because their sender was on the
    /// blacklist (§6.8).
    pub rrep_ack_timeouts: u64,
    pub rreq_blacklisted: u64,
    /// Local repairs started and failed, and RERRs with the N flag sent
    /// for repaired routes that got longer (§6.12).
    pub local_repairs: u64,
    pub local_repairs_failed: u64,
    pub rerr_no_delete: u64,
}

/// Names of the message types, in [`Stats::sent`] order.
pub const KINDS: [&str; 5] = ["rreq", "rrep", "rerr", "rrep_ack", "hello"];

/// Starts AODV on machine `m`: it forwards, and routes on demand.
pub fn enable(w: &mut Hosts, m: MachineId, cfg: Config) {
    let machine = &mut w.machines[m as usize];
    machine.forward = true;
    machine.ext().manet = Some(Box::new(crate::ondemand::OnDemand::Aodv(Node {
        cfg,
        ..Node::default()
    })));
    w.stack.on_demand = true;
    // The housekeeping tick (HELLOs when on): a first one within one
    // interval, drawn per machine, so that neighbours' HELLOs do not all
    // coincide.
    let jitter = draw(w, m) % HELLO_INTERVAL;
    let at = w.now() + std::time::Duration::from_nanos(jitter);
    arm(w, m, at, Timer::AodvHello);
}

/// 64 bits from machine `m`'s random stream.
fn draw(w: &mut Hosts, m: MachineId) -> u64 {
    use rand::RngCore;
    let seed = w.config.seed;
    let stream = elvis_kernel::rng::StreamKind::Machine;
    w.machines[m as usize]
        .ext()
        .rng
        .get_or_insert_with(|| elvis_kernel::rng::stream(seed, stream, u64::from(m)))
        .next_u64()
}

/// Returns machine `m`'s AODV state.
pub(crate) fn node(w: &mut Hosts, m: MachineId) -> Option<&mut Node> {
    match w.machines[m as usize]
        .ext
        .as_deref_mut()?
        .manet
        .as_deref_mut()?
    {
        crate::ondemand::OnDemand::Aodv(n) => Some(n),
    }
}

/// Returns machine `m`'s AODV state, read-only.
pub fn node_ref(w: &Hosts, m: MachineId) -> Option<&Node> {
    match w.machines[m as usize].ext.as_deref()?.manet.as_deref()? {
        crate::ondemand::OnDemand::Aodv(n) => Some(n),
    }
}

/// Schedules an AODV timer (a HELLO tick does not keep a run going).
pub(crate) fn arm(w: &mut Hosts, m: MachineId, at: elvis_kernel::Time, timer: Timer) {
    if timer == Timer::AodvHello {
        w.sched.background += 1;
    }
    w.sched
        .queue
        .schedule(at, m, Event::Timer { machine: m, timer });
}

/// The route of a datagram to `dst` (see the module docs): an active
/// route's next hop, else `NextHop::OnDemand`.
pub fn route(w: &Hosts, m: MachineId, n: &Node, dst: Ipv4Addr) -> Route {
    let machine = &w.machines[m as usize];
    let src = machine.ifaces[0].ip;
    let now = w.now().as_nanos();
    if let Some(r) = n.table.active(dst, now) {
        let ifc = machine.ifaces[r.iface as usize];
        let net = &w.fabric.networks[ifc.net as usize];
        if let Some(&port) = net.ip_to_port.get(&u32::from(r.next_hop)) {
            return Route {
                iface: r.iface,
                src,
                next: NextHop::Neighbour(r.next_hop, port),
                mtu: net.cfg.mtu,
            };
        }
    }
    Route {
        iface: 0,
        src,
        next: NextHop::OnDemand,
        mtu: w.fabric.networks[machine.ifaces[0].net as usize].cfg.mtu,
    }
}

/// The source and destination of the datagram `msg` (header first).
fn addrs(msg: &mut Message) -> Option<(Ipv4Addr, Ipv4Addr)> {
    let h = msg.front(20)?;
    Some((
        Ipv4Addr::new(h[12], h[13], h[14], h[15]),
        Ipv4Addr::new(h[16], h[17], h[18], h[19]),
    ))
}

/// A datagram (IPv4 header first) found no active route: a datagram of
/// the machine's own waits for a discovery; one it forwards is dropped
/// and answered with a RERR (§6.11 case ii).
pub fn hold(w: &mut Hosts, m: MachineId, msg: &mut Message) {
    let Some((src, dst)) = addrs(msg) else {
        return w.drop_packet(DropReason::Malformed("ipv4"));
    };
    let repairing = node_ref(w, m).is_some_and(|n| n.pending.contains_key(&u32::from(dst)));
    if !repairing && !ipv4::owns(w, m, src) {
        w.obs.aodv.dropped_no_route += 1;
        w.drop_packet(DropReason::Aodv("no_route"));
        return maintenance::no_route(w, m, dst);
    }
    let Some(n) = node_ref(w, m) else { return };
    let queued = n.pending.get(&u32::from(dst)).map(|d| d.queue.len());
    if queued.is_some_and(|q| q >= QUEUE_LEN) {
        w.obs.aodv.dropped_no_route += 1;
        return w.drop_packet(DropReason::Aodv("queue_full"));
    }
    w.obs.aodv.buffered += 1;
    let Some(n) = node(w, m) else { return };
    match n.pending.get_mut(&u32::from(dst)) {
        Some(d) => d.queue.push_back(std::mem::take(msg)),
        None => discovery::start(w, m, dst, std::mem::take(msg)),
    }
}

/// §6.2: a datagram (IPv4 header first) leaves along an active route:
/// the routes to its destination, its source and the next hop live at
/// least ACTIVE_ROUTE_TIMEOUT longer.
pub fn used(w: &mut Hosts, m: MachineId, next_hop: Ipv4Addr, msg: &mut Message) {
    let Some((src, dst)) = addrs(msg) else { return };
    let now = w.now().as_nanos();
    let Some(n) = node(w, m) else { return };
    let until = now + ACTIVE_ROUTE_TIMEOUT;
    n.table.refresh(dst, now, until);
    n.table.refresh(next_hop, now, until);
    n.table.refresh(src, now, until);
    if let Some(back) = n.table.get(src).map(|r| r.next_hop) {
        n.table.refresh(back, now, until);
    }
}

/// A datagram arrived for UDP port 654 of machine `m` and no socket took
/// it: AODV reads it. `ip_header` is the IPv4 header as received (for
/// the TTL). Returns false when the machine does not run AODV.
pub fn receive(
    w: &mut Hosts,
    m: MachineId,
    iface: IfaceId,
    ip_header: &[u8],
    src: Ipv4Addr,
    dst: Ipv4Addr,
    msg: &Message,
) -> bool {
    let now = w.now().as_nanos();
    let Some(n) = node(w, m) else { return false };
    let bytes = msg.to_vec();
    let parsed = match wire::Msg::decode(&bytes) {
        Ok(p) => p,
        Err(_) => {
            w.drop_packet(DropReason::Malformed("aodv"));
            return true;
        }
    };
    let hello = matches!(&parsed, wire::Msg::Rrep(_)) && dst.is_broadcast();
    let nb = n.neighbours.entry(u32::from(src)).or_insert(Neighbour {
        iface,
        heard: now,
        hello: 0,
    });
    nb.iface = iface;
    nb.heard = now;
    let kind = if hello { 4 } else { parsed.kind() };
    w.obs.aodv.received[kind] += 1;
    let ttl = ip_header.get(8).copied().unwrap_or(1);
    match parsed {
        wire::Msg::Rreq(r) => discovery::on_rreq(w, m, iface, src, ttl, r),
        wire::Msg::Rrep(r) if hello => maintenance::on_hello(w, m, iface, src, r),
        wire::Msg::Rrep(r) => discovery::on_rrep(w, m, iface, src, r),
        wire::Msg::Rerr(r) => maintenance::on_rerr(w, m, iface, src, r),
        wire::Msg::RrepAck => blacklist::on_rrep_ack(w, m, src),
    }
    true
}

/// An AODV timer fired.
pub fn on_timer(w: &mut Hosts, m: MachineId, timer: Timer) {
    match timer {
        Timer::AodvHello => maintenance::on_hello_tick(w, m),
        Timer::AodvDiscovery { dst, gen } => discovery::on_timeout(w, m, Ipv4Addr::from(dst), gen),
        Timer::AodvRrepAck { neighbour, gen } => blacklist::on_timeout(w, m, neighbour, gen),
        _ => {}
    }
}

/// Sends AODV message `msg` from interface `iface` to `to` (a neighbour,
/// or broadcast) with IP TTL `ttl`, and counts it.
pub(crate) fn send(
    w: &mut Hosts,
    m: MachineId,
    iface: IfaceId,
    to: Ipv4Addr,
    ttl: u8,
    msg: &wire::Msg,
) {
    let ifc = w.machines[m as usize].ifaces[iface as usize];
    if ifc.ip.is_unspecified() {
        return;
    }
    let net = &w.fabric.networks[ifc.net as usize];
    let next = if to.is_broadcast() {
        NextHop::Broadcast
    } else {
        match net.ip_to_port.get(&u32::from(to)) {
            Some(&port) => NextHop::Neighbour(to, port),
            None => return,
        }
    };
    let route = Route {
        iface,
        src: ifc.ip,
        next,
        mtu: net.cfg.mtu,
    };
    let bytes = msg.encode();
    let kind = if to.is_broadcast() && matches!(msg, wire::Msg::Rrep(_)) {
        4
    } else {
        msg.kind()
    };
    w.obs.aodv.sent[kind] += 1;
    w.obs.aodv.sent_bytes[kind] += bytes.len() as u64;
    if to.is_broadcast() {
        let now = w.now().as_nanos();
        if let Some(n) = node(w, m) {
            n.last_broadcast = now;
        }
    }
    let mut payload = Message::from(bytes);
    let len = payload.len();
    let mut sum = Checksum::new();
    crate::udp::sum_message(&mut sum, &payload);
    let header = payload.push_front(udp::HEADER_LEN);
    let repr = udp::Repr {
        src_port: PORT,
        dst_port: PORT,
    };
    repr.emit_header(
        &mut udp::Packet::new_unchecked(header),
        route.src,
        to,
        len,
        sum,
    );
    w.obs.stats.udp_sent += 1;
    ipv4::send_tos(
        w,
        m,
        route,
        to,
        IpProtocol::Udp,
        ttl,
        false,
        0,
        &mut payload,
    );
}

/// Broadcasts `msg` on every interface with IP TTL `ttl`.
pub(crate) fn broadcast(w: &mut Hosts, m: MachineId, ttl: u8, msg: &wire::Msg) {
    for i in 0..w.machines[m as usize].ifaces.len() {
        send(w, m, i as IfaceId, Ipv4Addr::BROADCAST, ttl, msg);
    }
}
