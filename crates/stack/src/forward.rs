//! IPv4 forwarding on routers (RFC 1812 §5.2–5.3).
//!
//! A machine with forwarding on hands every datagram that is not for it
//! (and not broadcast or multicast) to `forward`, which, in order:
//!
//! 1. drops it with ICMP Time Exceeded (type 11, code 0) when its TTL is 1
//!    or 0 (RFC 1812 §5.3.1: a router never forwards a TTL that would
//!    reach 0);
//! 2. looks the destination up (a per-flow explicit route for its source,
//!    destination and port if the router has one, else connected
//!    networks, then the routing table; ECMP by the 5-tuple's hash): no
//!    route gives Destination
//!    Unreachable, Net Unreachable (type 3, code 0);
//! 3. when the datagram is larger than the next network's MTU: with DF set,
//!    Destination Unreachable, Fragmentation Needed (type 3, code 4) with
//!    the next-hop MTU in the second half of the "unused" word (RFC 1191
//!    §4); without DF, cuts it into fragments (offsets relative to the
//!    original datagram, the last keeping the original's MF bit);
//! 4. decrements the TTL, updating the header checksum incrementally
//!    (RFC 1624 eqn. 3), and sends it on.
//!
//! A router made transparent to the TTL
//! (`Simulation::set_ttl_decrement` (elvis-sim), NDL `decrement_ttl='no'`)
//! skips steps 1 and 4: it neither checks nor decrements the TTL, as a
//! router configured not to (or a chain of L2 bridges) does. This departs
//! from RFC 1812 §5.3.1 and is only done when asked for: it lets a path
//! cross more than the 255 routers an 8-bit TTL allows, and such routers
//! never answer Time Exceeded, so traceroute does not see them.
//!
//! ICMP errors quote the IP header and the first 8 bytes of the datagram
//! (RFC 792) and are never sent about ICMP errors or non-first fragments
//! (RFC 1122 §3.2.2). The datagram is forwarded in place: the only work
//! per packet is a header rewrite and a table lookup, no allocation (a
//! datagram to fragment shares its payload chunks).
//!
//! Most transit frames never reach `forward`: a router's Ethernet layer
//! first offers each frame to `forward_frame`, the fast path, which does
//! the same checks and rewrites on the frame in place (MAC addresses, TTL,
//! checksum) and hands it straight to the egress NIC; anything unusual
//! (options, TTL running out, no route, fragmentation, ARP, a full NIC, a
//! bad checksum) takes the full path described above, which then decides
//! exactly as it always did. A frame that arrives by a delivery event is
//! offered to `forward_in_slab` first, the same fast path run on the
//! frame where it waits in the world's frames slab: a forwarded frame
//! keeps its slot (and its `FrameId`) from the moment it is queued at the
//! first NIC until it reaches its destination, instead of being moved out
//! of the slab and back in (two copies of the `Message`) at every router.
//!
//! A datagram leaves through the egress queue of the outgoing interface.
//! With the default queue, a full NIC (`txqueuelen`) drops it here
//! (`nic_queue_full`); when the interface (or its network) has a
//! configured queue discipline, that discipline decides instead
//! (`red_early`, `queue_full`, …), which is how a router's output queue
//! is modelled.
//!
//! Each router counts, per interface, what arrived for forwarding, what
//! left, and what it dropped by reason ([`IfaceCounters`]; `routers` in the
//! run report).
//!
//! ICMP errors are rate-limited as on Linux ([`super::icmp_limit`]).
//!
//! # Gaps
//! No Redirects; options are forwarded
//! unchanged, and not copied into fragments (an options header is
//! rebuilt as a plain 20-byte one when fragmenting).

use super::ipv4::{self, NextHop};
use super::route::FlowKey;
use crate::counters::DropReason;
use crate::hosts::Hosts;
use crate::machine::IfaceId;
use crate::machine::MachineId;
use elvis_message::Message;
use elvis_net::FrameId;
use elvis_wire::{ipv4 as wire, IpProtocol};
use serde::Serialize;
use std::net::Ipv4Addr;

/// Forwarding counters of one router interface.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IfaceCounters {
    /// Datagrams that arrived on this interface to be forwarded.
    pub received: u64,
    /// Datagrams (or fragments) sent out of this interface.
    pub forwarded: u64,
    /// Datagrams this interface received whose TTL ran out.
    pub ttl_exceeded: u64,
    /// Datagrams this interface received with no route onward.
    pub no_route: u64,
    /// DF datagrams too large for the next network.
    pub frag_needed: u64,
    /// Datagrams cut into fragments on the way out of this interface.
    pub fragmented: u64,
    /// Datagrams dropped because this interface's NIC queue was full
    /// (default queue only; a configured discipline's drops are counted
    /// in the report's `queues`).
    pub nic_full: u64,
}

/// Returns the counters of `iface` (two per forwarded datagram: inlined,
/// with the one-time growth out of line).
#[inline]
fn counters(w: &mut Hosts, m: MachineId, iface: IfaceId) -> &mut IfaceCounters {
    let machine = &mut w.machines[m as usize];
    let n = machine.ifaces.len();
    let v = &mut machine.ext().forwarding;
    if v.len() < n {
        grow(v, n);
    }
    &mut v[iface as usize]
}

#[cold]
#[inline(never)]
fn grow(v: &mut Vec<IfaceCounters>, n: usize) {
    v.resize(n, IfaceCounters::default());
}

/// Length of the Ethernet header in front of a frame's datagram.
const ETH: usize = elvis_wire::ethernet::HEADER_LEN;

/// Forwards the frame `frame` (Ethernet header first) that arrived on
/// `iface` in place, when it is a datagram for another machine that needs
/// nothing but a route, a TTL decrement and new MAC addresses; returns
/// false, having changed nothing, for every other frame (which then takes
/// the full path: [`super::ethernet::receive`], [`super::ipv4::receive`],
/// [`forward`]).
///
/// This is the router's fast path. It does what the full path does to
/// such a frame, in the same order and with the same results (the tests
/// compare the two byte for byte): the frame must be addressed to the
/// interface's MAC, carry IPv4 without options whose header checksum is
/// right (verified here, as every router does) and whose total length is
/// the frame's, with a TTL above 1 (or a TTL-transparent router), for an
/// address that is not the router's own, broadcast or multicast; its
/// route must name a neighbour (no ARP to resolve) on a network whose MTU
/// it fits, whose NIC has room or whose queue discipline decides. The TTL
/// and header checksum are then patched (RFC 1624), the MAC addresses
/// rewritten in the frame's first 12 bytes, and the frame handed to the
/// egress NIC as it is: no header is popped or pushed, the payload is not
/// touched.
pub fn forward_frame(w: &mut Hosts, m: MachineId, iface: IfaceId, frame: &mut Message) -> bool {
    let len = frame.len();
    let Some(h) = frame.front(ETH + 24) else {
        return false;
    };
    let Some(hop) = fast_hop(w, m, iface, h.try_into().expect("38 bytes"), len) else {
        return false;
    };
    let Some(h) = frame.front_mut(ETH + 20) else {
        unreachable!("the frame is longer than its header");
    };
    hop.rewrite(h);
    elvis_net::transmit(w, hop.out.net, hop.out.port, frame);
    true
}

/// [`forward_frame`] for frame `id` of the world's frames slab, which
/// stays there: the frame is neither moved out to be received nor back
/// in to be queued. Returns false, having changed nothing, where
/// [`forward_frame`] would (the caller then takes the frame out of the
/// slab and hands it to the stack).
pub fn forward_in_slab(w: &mut Hosts, m: MachineId, iface: IfaceId, id: FrameId) -> bool {
    let frame = &mut w.fabric.frames[id as usize];
    let len = frame.len();
    let Some(h) = frame.front(ETH + 24) else {
        return false;
    };
    let h: [u8; ETH + 24] = h.try_into().expect("38 bytes");
    let Some(hop) = fast_hop(w, m, iface, &h, len) else {
        return false;
    };
    let Some(h) = w.fabric.frames[id as usize].front_mut(ETH + 20) else {
        unreachable!("the frame is longer than its header");
    };
    hop.rewrite(h);
    elvis_net::transmit_queued(w, hop.out.net, hop.out.port, id);
    true
}

/// What the fast path does to a frame it forwards.
struct FastHop {
    out: Egress,
    /// The next hop's port on the egress network.
    peer: u32,
    keep_ttl: bool,
}

impl FastHop {
    /// Rewrites the MAC addresses and (unless the router keeps it) the
    /// TTL and header checksum of a frame's first `ETH + 20` bytes.
    #[inline]
    fn rewrite(&self, h: &mut [u8]) {
        let Ok(h): Result<&mut [u8; ETH + 20], _> = h.try_into() else {
            unreachable!("a header of ETH + 20 bytes");
        };
        h[0..6].copy_from_slice(&elvis_net::port_mac(self.out.net, self.peer).0);
        h[6..12].copy_from_slice(&elvis_net::port_mac(self.out.net, self.out.port).0);
        if !self.keep_ttl {
            decrement_ttl_in(&mut h[ETH..ETH + 20]);
        }
    }
}

/// Decides whether a frame of `len` bytes whose first bytes are `b`,
/// arrived on `iface` of router `m`, takes the fast path (see
/// [`forward_frame`]); if so counts it and returns its hop.
#[inline]
fn fast_hop(
    w: &mut Hosts,
    m: MachineId,
    iface: IfaceId,
    b: &[u8; ETH + 24],
    len: usize,
) -> Option<FastHop> {
    let machine = &w.machines[m as usize];
    let ifc = *machine.ifaces.get(iface as usize)?;
    let ip: &[u8; 20] = b[ETH..ETH + 20].try_into().expect("20 bytes");
    if b[0..6] != elvis_net::port_mac(ifc.net, ifc.port).0
        || b[12..14] != [0x08, 0x00]
        || ip[0] != 0x45
        || usize::from(u16::from_be_bytes([ip[2], ip[3]])) + ETH != len
        || elvis_wire::checksum::header(ip) != 0xffff
    {
        return None;
    }
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let keep_ttl = machine.keep_ttl;
    if (ip[8] <= 1 && !keep_ttl)
        || dst.is_broadcast()
        || dst.is_multicast()
        || super::ipv4::owns(w, m, dst)
    {
        return None;
    }
    let flow = flow_of_header(ip, [b[ETH + 20], b[ETH + 21], b[ETH + 22], b[ETH + 23]]);
    let (out, peer) = fast_route(w, m, dst, &flow, len - ETH)?;
    let machine = &mut w.machines[m as usize];
    if machine.ext.is_none() {
        machine.ext();
    }
    let Some(ext) = machine.ext.as_deref_mut() else {
        unreachable!("made above");
    };
    let c = &mut ext.forwarding;
    let n = iface.max(out.iface) as usize + 1;
    if c.len() < n {
        grow(c, n);
    }
    c[iface as usize].received += 1;
    c[out.iface as usize].forwarded += 1;
    w.obs.fast_forwarded += 1;
    Some(FastHop {
        out,
        peer,
        keep_ttl,
    })
}

/// The egress of a fast-path frame: the outgoing interface, and where it
/// plugs in.
#[derive(Clone, Copy)]
struct Egress {
    iface: IfaceId,
    net: elvis_net::NetId,
    port: u32,
}

/// Returns the egress of a datagram of `flow` and `len` bytes to `dst`,
/// and the next hop's port on its network, when the datagram can take the
/// fast path: its route (the flow route, else [`ipv4::route_flow`]) names
/// a neighbour reached without ARP on a network whose MTU it fits, through
/// a NIC with room or whose queue discipline decides.
#[inline]
fn fast_route(
    w: &Hosts,
    m: MachineId,
    dst: Ipv4Addr,
    flow: &FlowKey,
    len: usize,
) -> Option<(Egress, u32)> {
    let machine = &w.machines[m as usize];
    if w.groups[machine.group as usize].protocols.arp {
        return None;
    }
    let (iface, peer) = match w.stack.routing.flows.lookup(m, flow) {
        Some(hop) => (hop.iface, hop.port),
        None => match ipv4::route_flow(w, m, dst, Some(flow)).ok()? {
            ipv4::Route {
                iface,
                next: NextHop::Neighbour(_, port),
                ..
            } => (iface, port),
            _ => return None,
        },
    };
    let ifc = machine.ifaces.get(iface as usize)?;
    let n = &w.fabric.networks[ifc.net as usize];
    let full =
        n.nic_qdisc_config(ifc.port).is_none() && elvis_net::nic_room(w, ifc.net, ifc.port) < 1;
    if len > n.cfg.mtu as usize || full {
        return None;
    }
    let out = Egress {
        iface,
        net: ifc.net,
        port: ifc.port,
    };
    Some((out, peer))
}

/// Forwards datagram `msg` (IPv4 header of `ihl` bytes first, checksum
/// already verified, truncated to its total length) that arrived on
/// `iface`.
pub fn forward(w: &mut Hosts, m: MachineId, iface: IfaceId, ihl: usize, msg: &mut Message) {
    counters(w, m, iface).received += 1;
    let Some(h) = msg.front(ihl + 4) else {
        // Too short for ports: only what the IP header says.
        return forward_parsed(w, m, iface, ihl, msg, None);
    };
    let flow = flow_of(h, ihl);
    forward_parsed(w, m, iface, ihl, msg, Some(flow))
}

/// Returns the 5-tuple of a datagram whose IPv4 header (without options)
/// is `ip`, followed by the four bytes `ports`.
#[inline(always)]
fn flow_of_header(ip: &[u8; 20], ports: [u8; 4]) -> FlowKey {
    let first = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff == 0;
    let ports = if first && (ip[9] == 6 || ip[9] == 17) {
        ports
    } else {
        [0; 4]
    };
    FlowKey {
        src: u32::from_be_bytes([ip[12], ip[13], ip[14], ip[15]]),
        dst: u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]),
        proto: ip[9],
        sport: u16::from_be_bytes([ports[0], ports[1]]),
        dport: u16::from_be_bytes([ports[2], ports[3]]),
        ident: u16::from_be_bytes([ip[4], ip[5]]),
    }
}

/// Returns the 5-tuple of a datagram whose first `ihl + 4` bytes are `h`.
fn flow_of(h: &[u8], ihl: usize) -> FlowKey {
    let proto = h[9];
    let first = u16::from_be_bytes([h[6], h[7]]) & 0x1fff == 0;
    let ports = first && (proto == 6 || proto == 17);
    FlowKey {
        src: u32::from_be_bytes([h[12], h[13], h[14], h[15]]),
        dst: u32::from_be_bytes([h[16], h[17], h[18], h[19]]),
        proto,
        sport: if ports {
            u16::from_be_bytes([h[ihl], h[ihl + 1]])
        } else {
            0
        },
        dport: if ports {
            u16::from_be_bytes([h[ihl + 2], h[ihl + 3]])
        } else {
            0
        },
        ident: u16::from_be_bytes([h[4], h[5]]),
    }
}

fn forward_parsed(
    w: &mut Hosts,
    m: MachineId,
    iface: IfaceId,
    ihl: usize,
    msg: &mut Message,
    flow: Option<FlowKey>,
) {
    let Some(h) = msg.front(20) else {
        return w.drop_packet(DropReason::Malformed("ipv4"));
    };
    let ttl = h[8];
    let df = h[6] & 0x40 != 0;
    let dst = Ipv4Addr::new(h[16], h[17], h[18], h[19]);
    let keep_ttl = w.machines[m as usize].keep_ttl;
    if ttl <= 1 && !keep_ttl {
        counters(w, m, iface).ttl_exceeded += 1;
        w.drop_packet(DropReason::TtlExceeded);
        return super::icmp::send_error(w, m, super::icmp::TIME_EXCEEDED, 0, [0; 4], msg);
    }
    let pinned = flow.as_ref().and_then(|f| ipv4::flow_route(w, m, f));
    // Used where it lies (see `ipv4::route_flow`).
    let found = pinned.map_or_else(|| ipv4::route_flow(w, m, dst, flow.as_ref()), Ok);
    let route = match &found {
        Ok(r) if r.next != NextHop::Local => r,
        _ => {
            counters(w, m, iface).no_route += 1;
            w.drop_packet(DropReason::NoRoute);
            let code = super::icmp::NET_UNREACHABLE;
            return super::icmp::send_error(w, m, super::icmp::DST_UNREACHABLE, code, [0; 4], msg);
        }
    };
    let too_big = msg.len() > route.mtu as usize;
    if too_big && df {
        counters(w, m, iface).frag_needed += 1;
        w.drop_packet(DropReason::FragNeeded);
        let mtu = (route.mtu.min(u32::from(u16::MAX)) as u16).to_be_bytes();
        let code = super::icmp::FRAG_NEEDED;
        let rest = [0, 0, mtu[0], mtu[1]];
        return super::icmp::send_error(w, m, super::icmp::DST_UNREACHABLE, code, rest, msg);
    }
    let frames = ipv4::frames_needed(route, msg.len() - ihl);
    // An interface with a configured queue discipline models the router's
    // output queue: the discipline decides what to drop (and why), not
    // the default NIC bound.
    if !ipv4::qdisc_decides(w, m, route) && ipv4::room(w, m, route) < frames {
        counters(w, m, route.iface).nic_full += 1;
        let ifc = w.machines[m as usize].ifaces[route.iface as usize];
        elvis_net::count_nic_drop(w, ifc.net, ifc.port, elvis_net::DropReason::NicQueueFull);
        return w.drop_packet(DropReason::Net(elvis_net::DropReason::NicQueueFull));
    }
    let out = counters(w, m, route.iface);
    out.forwarded += 1;
    if too_big {
        out.fragmented += 1;
        return refragment(w, m, route, ihl, msg, keep_ttl);
    }
    if !keep_ttl {
        decrement_ttl(msg);
    }
    ipv4::transmit(w, m, route, msg);
}

/// Decrements the TTL of the datagram at the front of `msg` and patches
/// its checksum (RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m')).
fn decrement_ttl(msg: &mut Message) {
    if let Some(h) = msg.front_mut(20) {
        decrement_ttl_in(h);
    }
}

/// Decrements the TTL of the IPv4 header `h` (at least 20 bytes, TTL at
/// least 1) and patches its checksum (RFC 1624 eqn. 3).
#[inline]
fn decrement_ttl_in(h: &mut [u8]) {
    let old = u16::from_be_bytes([h[8], h[9]]);
    h[8] -= 1;
    let new = u16::from_be_bytes([h[8], h[9]]);
    let hc = u16::from_be_bytes([h[10], h[11]]);
    let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    h[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

/// Cuts a forwarded datagram into fragments for a smaller MTU (their TTL
/// one less than the datagram's unless `keep_ttl`).
fn refragment(
    w: &mut Hosts,
    m: MachineId,
    route: &ipv4::Route,
    ihl: usize,
    msg: &mut Message,
    keep_ttl: bool,
) {
    let mut header = [0u8; 60];
    if msg.copy_to_slice(0, &mut header[..ihl]).is_err() {
        return w.drop_packet(DropReason::Malformed("ipv4"));
    }
    let p = wire::Packet::new_unchecked(&header[..ihl]);
    let repr = wire::Repr {
        src_addr: p.src_addr(),
        dst_addr: p.dst_addr(),
        next_header: IpProtocol::from(header[9]),
        payload_len: 0,
        hop_limit: header[8] - u8::from(!keep_ttl),
        ident: p.ident(),
        dont_frag: false,
        more_frags: p.more_frags(),
        frag_offset: p.frag_offset(),
        dscp_ecn: header[1],
    };
    let _ = msg.pop_front(ihl);
    ipv4::send_repr(w, m, route, repr, msg);
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::testing::{checksum as rfc1071, drops, eth, icmp, udp, Ip, Lab, Tap};
    use elvis_wire::checksum;
    use std::time::Duration;

    #[test]
    fn the_incremental_checksum_matches_a_recomputed_one() {
        for ttl in [2u8, 64, 128, 255] {
            for proto in [1u8, 6, 17, 255] {
                let mut h = [
                    0x45, 0, 0, 84, 0x12, 0x34, 0x40, 0, ttl, proto, 0, 0, 10, 0, 0, 1, 10, 9, 8, 7,
                ];
                let c = (!checksum::data(&h)).to_be_bytes();
                h[10..12].copy_from_slice(&c);
                let mut msg = Message::from_vec(h.to_vec());
                decrement_ttl(&mut msg);
                let after = msg.to_vec();
                assert_eq!(after[8], ttl - 1);
                let mut fresh = after.clone();
                fresh[10..12].copy_from_slice(&[0, 0]);
                let want = (!checksum::data(&fresh)).to_be_bytes();
                assert_eq!(after[10..12], want, "ttl {ttl} proto {proto}");
            }
        }
    }

    const A: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 2);
    const B: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);
    const MS: Duration = Duration::from_millis(1);

    /// Tap `a` — router (10.0.1.1 | 10.0.2.1) — tap `b`, a LAN each side.
    fn two_lans() -> (Lab, MachineId, Tap, Tap) {
        let mut lab = Lab::new();
        let (n0, n1) = (lab.lan("n0"), lab.lan("n1"));
        let r = lab.router(
            "r",
            &[
                (n0, Ipv4Addr::new(10, 0, 1, 1)),
                (n1, Ipv4Addr::new(10, 0, 2, 1)),
            ],
        );
        let a = lab.tap("a", n0, A);
        let b = lab.tap("b", n1, B);
        (lab, r, a, b)
    }

    /// A UDP datagram from `a` to `dst` with time to live `ttl`.
    fn datagram(dst: Ipv4Addr, ttl: u8) -> Vec<u8> {
        let mut ip = Ip::new(A, dst, 17);
        ip.ttl = ttl;
        ip.datagram(&udp(A, dst, 4000, 7, b"through the router"))
    }

    #[test]
    fn a_router_forwards_with_the_ttl_one_less_and_a_correctly_updated_checksum() {
        for fast in [true, false] {
            for ttl in [64, 2] {
                let (mut lab, r, a, b) = two_lans();
                lab.w.config.fast_forward = fast;
                let sent = datagram(B, ttl);
                lab.send(&a, eth(lab.mac(r, 0), a.mac, 0x0800, &sent));
                lab.run_for(MS);
                let got = b.take();
                assert_eq!(got.len(), 1, "fast {fast} ttl {ttl}");
                assert_eq!(got[0].bytes[0..12], [b.mac, lab.mac(r, 1)].concat());
                // RFC 1812 §5.3.1: TTL one less; the header checksum that
                // of the new header (recomputed here from scratch).
                let mut want = sent.clone();
                want[8] = ttl - 1;
                want[10..12].copy_from_slice(&[0, 0]);
                let c = rfc1071(&want[..20]);
                want[10..12].copy_from_slice(&c.to_be_bytes());
                assert_eq!(got[0].datagram(), &want[..], "fast {fast} ttl {ttl}");
                assert_eq!(lab.w.obs.fast_forwarded, u64::from(fast), "the path taken");
                assert!(a.take().is_empty());
                assert_eq!(lab.drops(), drops(&[]));
            }
        }
    }

    #[test]
    fn a_router_answers_a_datagram_whose_ttl_would_run_out_with_time_exceeded() {
        let (mut lab, r, a, b) = two_lans();
        let sent = datagram(B, 1);
        lab.send(&a, eth(lab.mac(r, 0), a.mac, 0x0800, &sent));
        lab.run_for(MS);
        assert!(b.take().is_empty(), "not forwarded");
        let got = a.take();
        assert_eq!(got.len(), 1);
        let d = got[0].datagram();
        assert_eq!(rfc1071(&d[..20]), 0);
        assert_eq!(
            (&d[12..16], &d[16..20]),
            (&[10, 0, 1, 1][..], &A.octets()[..])
        );
        // RFC 792: type 11 code 0 (in transit), quoting the header and 8
        // bytes of the datagram as it arrived.
        assert_eq!(&d[20..], &icmp(11, 0, [0; 4], &sent[..28])[..]);
        assert_eq!(lab.drops(), drops(&[("ttl_exceeded", 1)]));
    }

    #[test]
    fn a_router_without_a_route_drops_as_no_route_and_answers_net_unreachable() {
        let (mut lab, r, a, b) = two_lans();
        let sent = datagram(Ipv4Addr::new(192, 168, 9, 9), 64);
        lab.send(&a, eth(lab.mac(r, 0), a.mac, 0x0800, &sent));
        lab.run_for(MS);
        assert!(b.take().is_empty());
        let got = a.take();
        assert_eq!(got.len(), 1);
        let d = got[0].datagram();
        assert_eq!(rfc1071(&d[..20]), 0);
        // RFC 792: Destination Unreachable (3), net unreachable (0).
        assert_eq!(&d[20..], &icmp(3, 0, [0; 4], &sent[..28])[..]);
        assert_eq!(lab.drops(), drops(&[("no_route", 1)]));
    }
}
