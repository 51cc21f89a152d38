//! IPv4 (RFC 791): route lookup, fragmentation and reassembly, header
//! checksum, demux to UDP and ICMP; datagrams for other machines go to
//! [`super::forward`] on routers.
//!
//! # Routing
//! A destination on one of the machine's networks is reached directly (the
//! connected routes). Otherwise the machine's routing table
//! ([`super::route`], longest prefix match, ECMP by flow hash) names the
//! gateway. A router's per-flow explicit routes come before both
//! (`route::FlowRoutes`). Broadcast (255.255.255.255) and multicast leave through the
//! first interface. An own address is looped back without touching a
//! network.
//!
//! # Fragmentation (RFC 791 §2.3, §3.2)
//! A datagram larger than the outgoing network's MTU is cut into fragments
//! whose data lengths are multiples of 8 bytes, sharing the payload chunks
//! (no copy). The receiver reassembles by (src, dst, protocol, id) and drops
//! an incomplete datagram after [`REASSEMBLY_TIMEOUT`] (Linux: 30 s),
//! answering with an ICMP Time Exceeded (code 1) if fragment zero had
//! arrived (RFC 1122 §3.3.2).
//!
//! # Gaps
//! Options other than being skipped; hosts never set DF (no PMTU
//! discovery).

use super::route::{self, FlowKey};
use super::Timer;
use crate::counters::DropReason;
use crate::endpoint::SocketError;
use crate::hosts::{Event, Hosts};
use crate::machine::IfaceId;
use crate::machine::MachineId;
use elvis_message::Message;
use elvis_net::{self as net, NetworkKind};
use elvis_wire::{ipv4, EtherType, EthernetAddress, IpProtocol};
use std::net::Ipv4Addr;
use std::time::Duration;

/// Default time to live of outgoing datagrams (Linux's default; see
/// `Simulation::set_default_ttl` (elvis-sim)).
pub const DEFAULT_TTL: u8 = 64;
/// How long an incomplete datagram waits for its missing fragments.
pub const REASSEMBLY_TIMEOUT: Duration = Duration::from_secs(30);
const HEADER_LEN: usize = 20;

/// Where a datagram goes next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextHop {
    Local,
    Broadcast,
    Multicast(Ipv4Addr),
    /// A neighbour on the interface's network, and its port there.
    Neighbour(Ipv4Addr, u32),
    /// No route yet: an on-demand routing protocol holds the datagram
    /// while it finds one ([`crate::ondemand::hold`]).
    OnDemand,
}

/// The result of a route lookup.
#[derive(Clone, Copy, Debug)]
pub struct Route {
    pub iface: IfaceId,
    pub src: Ipv4Addr,
    pub next: NextHop,
    pub mtu: u32,
}

/// Interfaces above which a machine finds its neighbours and its own
/// addresses in the world's indexes (`Hosts::link_neighbours`,
/// `Hosts::nonlink_ifaces`) rather than by looking at every interface: a
/// FatTree(k) switch has k.
pub const MANY_IFACES: usize = 8;

/// Keeps `Hosts::nonlink_ifaces` up to date after machine `m` got an
/// interface: once it has more than [`MANY_IFACES`], its interfaces on
/// networks that are not point-to-point links are listed.
pub fn index_ifaces(w: &mut Hosts, m: MachineId) {
    let ifaces = &w.machines[m as usize].ifaces;
    let nonlink =
        |i: usize| w.fabric.networks[ifaces[i].net as usize].cfg.kind != NetworkKind::Link;
    let new: smallvec::SmallVec<[IfaceId; 2]> = match ifaces.len() {
        n if n <= MANY_IFACES => return,
        n if n == MANY_IFACES + 1 => (0..n)
            .filter(|&i| nonlink(i))
            .map(|i| i as IfaceId)
            .collect(),
        n if nonlink(n - 1) => smallvec::smallvec![(n - 1) as IfaceId],
        _ => return,
    };
    if !new.is_empty() {
        w.stack.nonlink_ifaces.entry(m).or_default().extend(new);
    }
}

/// Returns true when `dst` is one of machine `m`'s addresses
/// ([`crate::machine::Machine::owns`], without a look at every interface
/// of a machine with many; `Hosts::nonlink_ifaces` lists a machine's
/// other interfaces once it has more than [`MANY_IFACES`]).
#[inline(always)]
pub fn owns(w: &Hosts, m: MachineId, dst: Ipv4Addr) -> bool {
    let machine = &w.machines[m as usize];
    // Up to 16 interfaces (a FatTree(16) switch), comparing them all
    // costs fewer instructions than a hash lookup (callgrind, `elvis-bench
    // fattree --k 16`: 1.5 % more with the lookup).
    if machine.ifaces.len() <= 2 * MANY_IFACES {
        return machine.owns(dst);
    }
    let on_link = w
        .stack
        .link_neighbours
        .get(&u32::from(dst))
        .is_some_and(|links| {
            links.iter().any(|&(net, port)| {
                w.fabric.networks[net as usize].ports[port as usize].machine == m
            })
        });
    on_link
        || w.stack
            .nonlink_ifaces
            .get(&m)
            .is_some_and(|l| l.iter().any(|&i| machine.ifaces[i as usize].ip == dst))
}

/// For a machine with many interfaces: its first interface (in interface
/// order) whose network has `dst` on it, and `dst`'s port there; the same
/// answer as asking every interface's network, from the two indexes.
fn neighbour_of_many(w: &Hosts, m: MachineId, dst: u32) -> Option<(IfaceId, u32)> {
    let mut best: Option<(IfaceId, u32)> = None;
    let mut consider = |iface: IfaceId, port: u32| {
        if best.is_none_or(|(b, _)| iface < b) {
            best = Some((iface, port));
        }
    };
    for &(net, port) in w.stack.link_neighbours.get(&dst).into_iter().flatten() {
        let n = &w.fabric.networks[net as usize];
        for (p, ours) in n.ports.iter().enumerate() {
            if p as u32 != port && ours.machine == m {
                consider(ours.iface, port);
            }
        }
    }
    let ifaces = &w.machines[m as usize].ifaces;
    for &i in w.stack.nonlink_ifaces.get(&m).into_iter().flatten() {
        let n = &w.fabric.networks[ifaces[i as usize].net as usize];
        if let Some(&port) = n.ip_to_port.get(&dst) {
            consider(i, port);
        }
    }
    best
}

/// Returns whether `dst`, attached to the network of interface `i`, is
/// reached through a gateway all the same: the network is wireless (its
/// machines may be out of each other's range) and the machine's table
/// holds a host route (`/32`) to `dst` through a gateway, as a
/// multi-hop route on one radio network is written (statically, or by an
/// ad hoc routing protocol). On a Linux host such a route wins over the
/// subnet's connected route by the longest prefix.
#[inline]
fn routed_on_air(w: &Hosts, m: MachineId, i: IfaceId, dst: Ipv4Addr) -> bool {
    let net = w.machines[m as usize].ifaces[i as usize].net;
    w.fabric.networks[net as usize].cfg.kind == elvis_net::NetworkKind::Wireless
        && (w.stack.routing.table(m))
            .and_then(|t| t.lookup_host(u32::from(dst)))
            .is_some_and(|h| h.iter().any(|h| h.gateway != 0))
}

/// Finds the interface and next hop for `dst`.
pub fn route(w: &Hosts, m: MachineId, dst: Ipv4Addr) -> Result<Route, SocketError> {
    route_flow(w, m, dst, None)
}

/// Finds the interface and next hop for a datagram of `flow` (which picks
/// among equal-cost next hops; `None`: the destination alone).
///
/// Callers on a per-packet path use the result where it lies
/// (`found.as_ref()`, `match &found`) rather than moving the route out of
/// the `Result` right after the call: this function writes the route field
/// by field, and a move reads it back in wider loads, which cannot take
/// their bytes from several stores still on their way to the cache, so the
/// CPU waits for them (a store-forwarding stall: half of a protocol's
/// `push` time, a third of UDP's send, in `elvis-bench socket-overhead`).
///
/// Long because it is one cascade of early returns in order of precedence
/// (own or loopback address, broadcast, multicast, a directly connected
/// neighbour, the routing table with its equal-cost pick), each writing
/// its `Route` in place as the paragraph above asks.
pub fn route_flow(
    w: &Hosts,
    m: MachineId,
    dst: Ipv4Addr,
    flow: Option<&FlowKey>,
) -> Result<Route, SocketError> {
    let machine = &w.machines[m as usize];
    let first = machine
        .ifaces
        .first()
        .ok_or(SocketError::HostUnreachable(dst))?;
    let mtu_of = |net: u32| w.fabric.networks[net as usize].cfg.mtu;
    if owns(w, m, dst) || dst.is_loopback() {
        return Ok(Route {
            iface: 0,
            src: dst,
            next: NextHop::Local,
            mtu: u32::MAX,
        });
    }
    if dst.is_broadcast() {
        return Ok(Route {
            iface: 0,
            src: first.ip,
            next: NextHop::Broadcast,
            mtu: mtu_of(first.net),
        });
    }
    if dst.is_multicast() {
        return Ok(Route {
            iface: 0,
            src: first.ip,
            next: NextHop::Multicast(dst),
            mtu: mtu_of(first.net),
        });
    }
    // A MANET node's unicast routes come from its routing protocol, its
    // neighbours' included (one run-wide flag when no machine has one).
    if w.stack.on_demand && crate::ondemand::runs(w, m) {
        return crate::ondemand::route(w, m, dst);
    }
    // Random simple-path routing: the flow's path, where this machine is
    // its sender or one of its routers before the last.
    if let (Some(paths), Some(f)) = (&w.stack.routing.paths, flow) {
        if let Some(s) = paths.step(w, m, f) {
            let ifc = machine.ifaces[s.iface as usize];
            return Ok(Route {
                iface: s.iface,
                src: ifc.ip,
                next: NextHop::Neighbour(Ipv4Addr::from(s.next), s.port),
                mtu: mtu_of(ifc.net),
            });
        }
    }
    // A neighbour on a directly connected network: the first interface
    // whose network has `dst`. A machine with many interfaces (a switch
    // of a fat tree) asks the world's indexes instead of every
    // interface's network; the answer is the same.
    let neighbour = if machine.ifaces.len() > MANY_IFACES {
        neighbour_of_many(w, m, u32::from(dst))
    } else {
        machine.ifaces.iter().enumerate().find_map(|(i, ifc)| {
            let n = &w.fabric.networks[ifc.net as usize];
            n.ip_to_port
                .get(&u32::from(dst))
                .map(|&port| (i as IfaceId, port))
        })
    };
    if let Some((i, port)) = neighbour.filter(|&(i, _)| !routed_on_air(w, m, i, dst)) {
        let ifc = machine.ifaces[i as usize];
        if ifc.ip.is_unspecified() {
            return Err(SocketError::NoAddress);
        }
        return Ok(Route {
            iface: i,
            src: ifc.ip,
            next: NextHop::Neighbour(dst, port),
            mtu: mtu_of(ifc.net),
        });
    }
    let Some(hops) = w
        .stack
        .routing
        .table(m)
        .and_then(|t| t.lookup(u32::from(dst)))
    else {
        return Err(SocketError::HostUnreachable(dst));
    };
    let hop = match flow {
        Some(f) if hops.len() > 1 => {
            let r = &w.stack.routing;
            match r.draws.get(m as usize) {
                Some(at) => hops[route::draw(hops.len(), w.config.seed, m, at)],
                None => hops[route::pick(hops.len(), w.config.seed, m, f, r.per_packet)],
            }
        }
        None if hops.len() > 1 => {
            let f = FlowKey {
                dst: u32::from(dst),
                ..FlowKey::default()
            };
            hops[route::pick(hops.len(), w.config.seed, m, &f, false)]
        }
        _ => hops[0],
    };
    let ifc = machine.ifaces[hop.iface as usize];
    if ifc.ip.is_unspecified() {
        return Err(SocketError::NoAddress);
    }
    let gw = if hop.gateway == 0 {
        u32::from(dst)
    } else {
        hop.gateway
    };
    let net = &w.fabric.networks[ifc.net as usize];
    let Some(&port) = net.ip_to_port.get(&gw) else {
        return Err(SocketError::HostUnreachable(dst));
    };
    Ok(Route {
        iface: hop.iface,
        src: ifc.ip,
        next: NextHop::Neighbour(Ipv4Addr::from(gw), port),
        mtu: net.cfg.mtu,
    })
}

/// Returns the route of a forwarded datagram of `flow` when machine `m`
/// holds a per-flow explicit route for it ([`route::FlowRoutes`]).
#[inline]
pub fn flow_route(w: &Hosts, m: MachineId, flow: &FlowKey) -> Option<Route> {
    let hop = w.stack.routing.flows.lookup(m, flow)?;
    let ifc = w.machines[m as usize].ifaces[hop.iface as usize];
    Some(Route {
        iface: hop.iface,
        src: ifc.ip,
        next: NextHop::Neighbour(Ipv4Addr::from(hop.via), hop.port),
        mtu: w.fabric.networks[ifc.net as usize].cfg.mtu,
    })
}

/// Returns how many frames a payload of `len` bytes takes on `route`.
pub fn frames_needed(route: &Route, len: usize) -> u32 {
    let mtu = route.mtu as usize;
    if HEADER_LEN + len <= mtu || route.next == NextHop::Local {
        return 1;
    }
    let per = (mtu.saturating_sub(HEADER_LEN) & !7).max(8);
    len.div_ceil(per) as u32
}

/// Returns the NIC room left on the route's interface (unbounded for local).
#[inline]
pub fn room(w: &Hosts, m: MachineId, route: &Route) -> u32 {
    if route.next == NextHop::Local {
        return u32::MAX;
    }
    let ifc = w.machines[m as usize].ifaces[route.iface as usize];
    net::nic_room(w, ifc.net, ifc.port)
}

/// Returns true when the route's interface has a configured queue
/// discipline, which then decides drops instead of the NIC bound.
pub fn qdisc_decides(w: &Hosts, m: MachineId, route: &Route) -> bool {
    if route.next == NextHop::Local {
        return false;
    }
    let ifc = w.machines[m as usize].ifaces[route.iface as usize];
    w.fabric.networks[ifc.net as usize]
        .nic_qdisc_config(ifc.port)
        .is_some()
}

/// Pushes an IPv4 header (fragmenting if needed) and sends the datagram.
pub fn send(
    w: &mut Hosts,
    m: MachineId,
    route: Route,
    dst: Ipv4Addr,
    proto: IpProtocol,
    payload: &mut Message,
) {
    send_ecn(w, m, route, dst, proto, 0, payload);
}

/// Like [`send`], with the ECN field (RFC 3168 §5) set to `ecn` (the
/// DSCP stays 0).
pub fn send_ecn(
    w: &mut Hosts,
    m: MachineId,
    route: Route,
    dst: Ipv4Addr,
    proto: IpProtocol,
    ecn: u8,
    payload: &mut Message,
) {
    let ttl = w.stack.default_ttl;
    send_tos(w, m, route, dst, proto, ttl, false, ecn & 0b11, payload);
}

/// Like [`send`], with an explicit time to live and Don't Fragment bit
/// (the caller checked that a DF datagram fits the route's MTU).
#[allow(clippy::too_many_arguments)]
pub fn send_opts(
    w: &mut Hosts,
    m: MachineId,
    route: Route,
    dst: Ipv4Addr,
    proto: IpProtocol,
    ttl: u8,
    dont_frag: bool,
    payload: &mut Message,
) {
    send_tos(w, m, route, dst, proto, ttl, dont_frag, 0, payload);
}

/// Like [`send_opts`], with the whole TOS byte (DSCP and ECN field, RFC
/// 2474 / RFC 3168) of the header.
#[allow(clippy::too_many_arguments)]
pub fn send_tos(
    w: &mut Hosts,
    m: MachineId,
    route: Route,
    dst: Ipv4Addr,
    proto: IpProtocol,
    ttl: u8,
    dont_frag: bool,
    tos: u8,
    payload: &mut Message,
) {
    w.obs.stats.ip_sent += 1;
    if route.next == NextHop::Local {
        deliver_up(w, m, route.iface, &[], route.src, dst, proto, payload);
        return;
    }
    let machine = &mut w.machines[m as usize];
    let ident = machine.ip_ident;
    machine.ip_ident = machine.ip_ident.wrapping_add(1);
    let repr = ipv4::Repr {
        src_addr: route.src,
        dst_addr: dst,
        next_header: proto,
        payload_len: payload.len(),
        hop_limit: ttl,
        ident,
        dont_frag,
        more_frags: false,
        frag_offset: 0,
        dscp_ecn: tos,
    };
    send_repr(w, m, &route, repr, payload);
}

/// Emits `repr` over `payload` on `route`, cutting it into fragments when
/// it exceeds the MTU. `repr.frag_offset` and `repr.more_frags` describe
/// `payload` itself (a router re-fragments a fragment at its own offset).
pub fn send_repr(
    w: &mut Hosts,
    m: MachineId,
    route: &Route,
    mut repr: ipv4::Repr,
    payload: &mut Message,
) {
    let mtu = route.mtu as usize;
    let total = payload.len();
    repr.payload_len = total;
    if HEADER_LEN + total <= mtu {
        emit_and_send(w, m, route, &repr, payload);
        return;
    }
    let (base, last_more) = (repr.frag_offset as usize, repr.more_frags);
    let per = (mtu.saturating_sub(HEADER_LEN) & !7).max(8);
    let mut offset = 0;
    while offset < total {
        let end = (offset + per).min(total);
        repr.payload_len = end - offset;
        repr.frag_offset = (base + offset) as u16;
        repr.more_frags = end < total || last_more;
        emit_and_send(w, m, route, &repr, &mut payload.slice(offset..end));
        offset = end;
    }
}

fn emit_and_send(w: &mut Hosts, m: MachineId, route: &Route, repr: &ipv4::Repr, msg: &mut Message) {
    let header = msg.push_front(HEADER_LEN);
    let mut packet = ipv4::Packet::new_unchecked(header);
    repr.emit(&mut packet);
    transmit(w, m, route, msg);
}

/// Hands a whole datagram (header included) to the link layer of `route`.
pub fn transmit(w: &mut Hosts, m: MachineId, route: &Route, msg: &mut Message) {
    let dst_mac = match route.next {
        NextHop::Local => return,
        NextHop::OnDemand => return crate::ondemand::hold(w, m, msg),
        NextHop::Broadcast => EthernetAddress::BROADCAST,
        NextHop::Multicast(g) => EthernetAddress::from_ipv4_multicast(g),
        NextHop::Neighbour(ip, port) => {
            if w.stack.on_demand {
                crate::ondemand::used(w, m, ip, msg);
            }
            let group = w.machines[m as usize].group;
            if w.groups[group as usize].protocols.arp {
                match super::arp::lookup_or_queue(w, m, route.iface, ip, msg) {
                    Some(mac) => {
                        return super::ethernet::send(w, m, route.iface, mac, EtherType::Ipv4, msg)
                    }
                    None => return,
                }
            }
            let net = w.machines[m as usize].ifaces[route.iface as usize].net;
            net::port_mac(net, port)
        }
    };
    super::ethernet::send(w, m, route.iface, dst_mac, EtherType::Ipv4, msg);
}

/// Parses, checks and demuxes an incoming datagram.
pub fn receive(w: &mut Hosts, m: MachineId, iface: IfaceId, msg: &mut Message) {
    let Some(first) = msg.front(HEADER_LEN) else {
        return w.drop_packet(DropReason::Malformed("ipv4"));
    };
    let ihl = usize::from(first[0] & 0x0f) * 4;
    if first[0] >> 4 != 4 || ihl < HEADER_LEN {
        return w.drop_packet(DropReason::Malformed("ipv4"));
    }
    let Some(header) = msg.front(ihl) else {
        return w.drop_packet(DropReason::Malformed("ipv4"));
    };
    let mut copy = [0u8; 60];
    copy[..ihl].copy_from_slice(header);
    let header = &copy[..ihl];
    let packet = ipv4::Packet::new_unchecked(header);
    if !packet.verify_checksum() {
        return w.drop_packet(DropReason::BadChecksum("ipv4"));
    }
    let total = usize::from(packet.total_len());
    let (src, dst) = (packet.src_addr(), packet.dst_addr());
    let proto = packet.next_header();
    let (ident, mf, offset) = (
        packet.ident(),
        packet.more_frags(),
        usize::from(packet.frag_offset()),
    );
    if total < ihl || total > msg.len() {
        return w.drop_packet(DropReason::Malformed("ipv4"));
    }
    let machine = &w.machines[m as usize];
    let for_us = owns(w, m, dst)
        || dst.is_broadcast()
        || (dst.is_multicast()
            && machine
                .ext
                .as_ref()
                .is_some_and(|e| e.multicast.contains(&dst)));
    if !for_us {
        if machine.forward && !dst.is_multicast() {
            msg.truncate(total);
            return super::forward::forward(w, m, iface, ihl, msg);
        }
        return w.drop_packet(DropReason::NotForUs);
    }
    msg.truncate(total);
    if mf || offset > 0 {
        // Fragment zero's header and 8 bytes of data, for the Time
        // Exceeded its reassembly may end in.
        let first = (offset == 0).then(|| msg.slice(0..(ihl + 8).min(total)).to_vec());
        let _ = msg.pop_front(ihl);
        let key = (u32::from(src), u32::from(dst), u8::from(proto), ident);
        match reassemble(w, m, key, offset, mf, std::mem::take(msg), first) {
            Some(whole) => *msg = whole,
            None => return,
        }
    } else {
        let _ = msg.pop_front(ihl);
    }
    w.obs.stats.ip_delivered += 1;
    deliver_up(w, m, iface, header, src, dst, proto, msg);
}

/// Hands a datagram's payload to its transport protocol. `header` is the
/// IPv4 header as received (empty for loopback), for ICMP errors.
#[allow(clippy::too_many_arguments)]
fn deliver_up(
    w: &mut Hosts,
    m: MachineId,
    iface: IfaceId,
    header: &[u8],
    src: Ipv4Addr,
    dst: Ipv4Addr,
    proto: IpProtocol,
    msg: &mut Message,
) {
    match proto {
        IpProtocol::Udp => super::udp::receive(w, m, iface, header, src, dst, msg),
        IpProtocol::Icmp => super::icmp::receive(w, m, header, src, dst, msg),
        IpProtocol::Tcp => {
            // The ECN field (RFC 3168 §5); loopback has no header: Not-ECT.
            let ecn = header.get(1).map_or(0, |tos| tos & 0b11);
            super::tcp::receive(w, m, src, dst, ecn, msg)
        }
        other => {
            if !super::custom::demux(w, m, u8::from(other), src, dst, msg) {
                w.drop_packet(DropReason::Unsupported("ip protocol"));
            }
        }
    }
}

/// Fragments of datagrams being reassembled on one machine.
#[derive(Default)]
pub struct Reassembly {
    entries: Vec<Partial>,
    next_gen: u32,
}

struct Partial {
    key: (u32, u32, u8, u16),
    gen: u32,
    /// Fragments sorted by offset, non-overlapping.
    parts: Vec<(usize, Message)>,
    total: Option<usize>,
    /// The first fragment's IPv4 header and first 8 data bytes, once it
    /// has arrived (what a Time Exceeded quotes).
    first: Option<Box<[u8]>>,
}

/// Adds a fragment (`first`: the header and 8 data bytes of fragment
/// zero); returns the whole payload once every byte is there.
fn reassemble(
    w: &mut Hosts,
    m: MachineId,
    key: (u32, u32, u8, u16),
    offset: usize,
    more: bool,
    data: Message,
    first: Option<Vec<u8>>,
) -> Option<Message> {
    let now = w.now();
    let r = &mut w.machines[m as usize].ext().reassembly;
    let idx = match r.entries.iter().position(|p| p.key == key) {
        Some(i) => i,
        None => {
            let gen = r.next_gen;
            r.next_gen = r.next_gen.wrapping_add(1);
            r.entries.push(Partial {
                key,
                gen,
                parts: Vec::new(),
                total: None,
                first: None,
            });
            w.sched.queue.schedule(
                now + REASSEMBLY_TIMEOUT,
                m,
                Event::Timer {
                    machine: m,
                    timer: Timer::ReassemblyExpire { gen },
                },
            );
            w.machines[m as usize].ext().reassembly.entries.len() - 1
        }
    };
    let r = &mut w.machines[m as usize].ext().reassembly;
    let p = &mut r.entries[idx];
    let end = offset + data.len();
    if !more {
        p.total = Some(end);
    }
    let pos = p.parts.partition_point(|(o, _)| *o < offset);
    let overlaps_prev = pos > 0 && p.parts[pos - 1].0 + p.parts[pos - 1].1.len() > offset;
    let overlaps_next = pos < p.parts.len() && p.parts[pos].0 < end;
    if overlaps_prev || overlaps_next {
        w.drop_packet(DropReason::FragmentOverlap);
        return None;
    }
    p.parts.insert(pos, (offset, data));
    if let Some(first) = first {
        p.first = Some(first.into_boxed_slice());
    }
    let total = p.total?;
    let mut expect = 0;
    for (o, d) in &p.parts {
        if *o != expect {
            return None;
        }
        expect += d.len();
    }
    if expect != total {
        return None;
    }
    let p = r.entries.swap_remove(idx);
    let mut parts = p.parts.into_iter();
    let (_, mut whole) = parts.next()?;
    for (_, d) in parts {
        whole.append(d);
    }
    Some(whole)
}

/// Drops the reassembly of generation `gen` if it is still incomplete,
/// and, if fragment zero had arrived, tells the source with an ICMP Time
/// Exceeded, code 1 (fragment reassembly time exceeded), quoting that
/// fragment's header and first 8 data bytes (RFC 1122 §3.3.2, as Linux's
/// `ip_expire`).
pub fn on_reassembly_timer(w: &mut Hosts, m: MachineId, gen: u32) {
    let r = &mut w.machines[m as usize].ext().reassembly;
    if let Some(i) = r.entries.iter().position(|p| p.gen == gen) {
        let p = r.entries.swap_remove(i);
        w.drop_packet(DropReason::ReassemblyTimeout);
        if let Some(first) = p.first {
            let mut quoted = Message::from_vec(first.into_vec());
            super::icmp::send_error(w, m, super::icmp::TIME_EXCEEDED, 1, [0; 4], &mut quoted);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::REASSEMBLY_TIMEOUT;
    use crate::endpoint::UdpShared;
    use crate::machine::{MachineId, Protocols};
    use crate::testing::{drops, eth, icmp, udp, Ip, Lab, Tap, LATENCY};
    use elvis_kernel::Time;
    use std::net::{Ipv4Addr, SocketAddrV4};
    use std::rc::Rc;
    use std::time::Duration;

    use crate::testing::{host_and_tap, HOST, MS, PEER};

    /// A host with UDP port 7 bound and a tap, on one LAN.
    fn lan() -> (Lab, MachineId, Tap, Rc<UdpShared>) {
        let (mut lab, h, peer) = host_and_tap(Protocols::UDP);
        let sock = lab.bind_udp(h, 7);
        (lab, h, peer, sock)
    }

    /// The payload of the fragmented datagram of these tests.
    fn payload() -> Vec<u8> {
        (0..100u8).collect()
    }

    /// The UDP datagram (108 bytes) cut at `cuts` (multiples of 8) into
    /// frames to `h`, in order of offset.
    fn fragments(lab: &Lab, h: MachineId, peer: &Tap, cuts: &[usize]) -> Vec<Vec<u8>> {
        let whole = udp(PEER, HOST, 4000, 7, &payload());
        let mut bounds = vec![0];
        bounds.extend_from_slice(cuts);
        bounds.push(whole.len());
        let hmac = lab.mac(h, 0);
        (bounds.windows(2))
            .map(|b| {
                let mut ip = Ip::new(PEER, HOST, 17);
                ip.offset = b[0] as u16;
                ip.more_frags = b[1] < whole.len();
                eth(hmac, peer.mac, 0x0800, &ip.datagram(&whole[b[0]..b[1]]))
            })
            .collect()
    }

    /// Returns the payload queued on `sock`, if any, and from whom.
    fn received(sock: &UdpShared) -> Option<(Vec<u8>, SocketAddrV4)> {
        let rx = sock.rx.borrow();
        rx.head.as_ref().map(|(m, from)| (m.to_vec(), *from))
    }

    #[test]
    fn a_bad_header_checksum_is_dropped_unanswered() {
        let (mut lab, h, peer, _) = lan();
        let hmac = lab.mac(h, 0);
        let mut d = Ip::new(PEER, HOST, 1).datagram(&icmp(8, 0, [0, 1, 0, 1], b"ping"));
        d[11] ^= 0x80;
        lab.send(&peer, eth(hmac, peer.mac, 0x0800, &d));
        lab.run_for(MS);
        assert!(peer.take().is_empty(), "no echo reply");
        assert_eq!(lab.w.obs.stats.ip_delivered, 0);
        assert_eq!(lab.drops(), drops(&[("bad_checksum(ipv4)", 1)]));
    }

    #[test]
    fn a_host_drops_a_datagram_for_another_address_as_not_for_us() {
        let (mut lab, h, peer, sock) = lan();
        let hmac = lab.mac(h, 0);
        let other = Ipv4Addr::new(10, 0, 0, 50);
        let d = Ip::new(PEER, other, 17).datagram(&udp(PEER, other, 4000, 7, b"lost"));
        lab.send(&peer, eth(hmac, peer.mac, 0x0800, &d));
        lab.run_for(MS);
        assert_eq!(lab.drops(), drops(&[("not_for_us", 1)]));
        assert!(
            peer.take().is_empty(),
            "a host forwards nothing and sends no error"
        );
        assert_eq!(received(&sock), None);
    }

    #[test]
    fn fragments_arriving_out_of_order_are_reassembled_into_the_original_datagram() {
        let (mut lab, h, peer, sock) = lan();
        let f = fragments(&lab, h, &peer, &[48, 96]);
        for (i, k) in [2, 0].into_iter().enumerate() {
            lab.send(&peer, f[k].clone());
            lab.run_for(MS);
            assert_eq!(
                received(&sock),
                None,
                "incomplete after {} fragments",
                i + 1
            );
            assert_eq!(lab.w.obs.stats.ip_delivered, 0);
        }
        lab.send(&peer, f[1].clone());
        lab.run_for(MS);
        let from = SocketAddrV4::new(PEER, 4000);
        assert_eq!(received(&sock), Some((payload(), from)));
        assert_eq!(lab.w.obs.stats.ip_delivered, 1);
        assert_eq!(lab.drops(), drops(&[]));
        // Done: no timeout fires for it.
        lab.run_for(2 * REASSEMBLY_TIMEOUT);
        assert_eq!(lab.drops(), drops(&[]));
    }

    #[test]
    fn an_incomplete_reassembly_expires_thirty_seconds_after_its_first_fragment() {
        assert_eq!(
            REASSEMBLY_TIMEOUT,
            Duration::from_secs(30),
            "Linux's ipfrag_time"
        );
        let (mut lab, h, peer, sock) = lan();
        let f = fragments(&lab, h, &peer, &[48, 96]);
        lab.send(&peer, f[0].clone());
        lab.send(&peer, f[2].clone());
        let expiry = Time::ZERO + LATENCY + REASSEMBLY_TIMEOUT;
        lab.run_until(Time::from_nanos(expiry.as_nanos() - 1));
        assert_eq!(lab.drops(), drops(&[]));
        lab.run_until(expiry);
        assert_eq!(lab.drops(), drops(&[("reassembly_timeout", 1)]));
        // What arrived before is gone: the missing piece completes nothing.
        lab.send(&peer, f[1].clone());
        lab.run_for(MS);
        assert_eq!(received(&sock), None);
    }

    #[test]
    fn an_expired_reassembly_holding_fragment_zero_answers_time_exceeded_code_1() {
        // RFC 1122 §3.3.2: the partial datagram MUST be discarded and a
        // Time Exceeded sent to the source if fragment zero has been
        // received; RFC 792: type 11, code 1, an unused word of zeros,
        // then the fragment's internet header and first 64 data bits.
        let (mut lab, h, peer, _sock) = lan();
        let f = fragments(&lab, h, &peer, &[48, 96]);
        lab.send(&peer, f[0].clone());
        lab.send(&peer, f[2].clone());
        lab.run_for(MS);
        peer.take();
        lab.run_until(Time::ZERO + LATENCY + REASSEMBLY_TIMEOUT + MS);
        let got = peer.take();
        assert_eq!(got.len(), 1);
        let d = got[0].datagram();
        assert_eq!(
            (d[9], &d[16..20]),
            (1, &PEER.octets()[..]),
            "ICMP to the source"
        );
        let fragment_zero = &f[0][14..];
        let want = icmp(11, 1, [0; 4], &fragment_zero[..28]);
        assert_eq!(&d[20..], &want[..]);
        assert_eq!(lab.w.obs.stats.icmp_errors_sent, 1);
    }

    #[test]
    fn an_expired_reassembly_without_fragment_zero_sends_nothing() {
        let (mut lab, h, peer, _sock) = lan();
        let f = fragments(&lab, h, &peer, &[48, 96]);
        lab.send(&peer, f[1].clone());
        lab.send(&peer, f[2].clone());
        lab.run_until(Time::ZERO + LATENCY + REASSEMBLY_TIMEOUT + MS);
        assert_eq!(lab.drops(), drops(&[("reassembly_timeout", 1)]));
        assert!(peer.take().is_empty());
        assert_eq!(lab.w.obs.stats.icmp_errors_sent, 0);
    }

    #[test]
    fn an_overlapping_fragment_is_dropped_as_fragment_overlap() {
        let (mut lab, h, peer, sock) = lan();
        let f = fragments(&lab, h, &peer, &[48]);
        // Bytes 40..56 of the same datagram: they overlap 40..48.
        let g = fragments(&lab, h, &peer, &[40, 56]);
        lab.send(&peer, f[0].clone());
        lab.send(&peer, g[1].clone());
        lab.run_for(MS);
        assert_eq!(lab.drops(), drops(&[("fragment_overlap", 1)]));
        assert_eq!(received(&sock), None);
        // Only the overlapping fragment is dropped: the rest still
        // completes the datagram.
        lab.send(&peer, f[1].clone());
        lab.run_for(MS);
        assert_eq!(received(&sock).map(|r| r.0), Some(payload()));
    }
}
