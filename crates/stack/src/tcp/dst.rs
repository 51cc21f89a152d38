//! The destination cache of TCP connections (Linux's `sk_dst_cache`) and
//! the one-pass frame emit it makes possible.
//!
//! Every call into a connection ([`super::drive`]) needs the route to the
//! peer: for the NIC room it may fill, and for each segment it sends. The
//! route of a connection depends only on the machine, the 4-tuple (its ECMP
//! flow key) and the topology, and the topology does not change while a
//! simulation runs (routes, interfaces and networks are set up between
//! runs; [`crate::hosts::StackShared::dst_epoch`] counts those changes). So the
//! route, the egress NIC and both MAC addresses are looked up once per
//! connection and kept in a small per-machine cache, like the route and
//! neighbour a Linux socket caches in `sk_dst_cache` (`__sk_dst_check`
//! checks it against the routing generation).
//!
//! With the link resolved, a segment leaves in one pass
//! ([`transmit_linked`]): Ethernet, IPv4 and TCP headers are written
//! together at the front of the payload (no per-layer `push_front`, no
//! route lookup, no ARP or neighbour check) and the frame goes straight to
//! the NIC. The bytes are exactly those of the layered path
//! (`ipv4::send_ecn` → `ipv4::transmit` → `ethernet::send`); the
//! integration test `tcp_fast_path` compares captures of both paths.
//!
//! The layered path still serves what the cache does not cover: loopback,
//! machines with real ARP (the neighbour's MAC may change or be
//! unresolved), datagrams that need fragmenting, no route.
//!
//! The cache is direct-mapped by socket slot, [`WAYS`] entries per machine
//! (136 bytes), boxed and allocated on a machine's first TCP segment: a
//! bulk sender hits it on every segment, a server with many busy
//! connections misses more often and then pays what every call paid
//! before (the lookup) plus a copy.

use super::super::ipv4::{self, NextHop, Route};
use super::tcb::Segment;
use crate::counters::DropReason;
use crate::hosts::Hosts;
use crate::machine::MachineId;
use elvis_net::NetId;
use elvis_wire::checksum::Checksum;
use elvis_wire::{ethernet, tcp, EtherType, EthernetAddress, IpProtocol};
use std::net::SocketAddrV4;

/// An IPv4 header without options.
const IP_HEADER_LEN: usize = 20;

/// Entries per machine (direct-mapped by socket slot).
pub const WAYS: usize = 2;

/// A connection's resolved route.
#[derive(Clone, Copy, Debug)]
pub struct Dst {
    /// The route (`None`: no route to the peer).
    pub route: Option<Route>,
    /// The egress link when the frame can be built here in one pass.
    pub link: Option<Link>,
}

/// The egress NIC and the link-layer header of a connection's frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    pub net: NetId,
    pub port: u32,
    /// Frames the NIC may hold before TCP's segments are dropped there.
    pub limit: u32,
    /// The largest IPv4 datagram that leaves unfragmented.
    pub mtu: u32,
    pub src_mac: EthernetAddress,
    pub dst_mac: EthernetAddress,
}

#[derive(Clone, Copy)]
struct Entry {
    epoch: u32,
    local_port: u16,
    remote: SocketAddrV4,
    dst: Dst,
}

/// A machine's cached connection routes.
#[derive(Default)]
pub struct DstCache {
    entries: [Option<Entry>; WAYS],
}

/// Returns the route of the connection in `slot` from `local` to
/// `remote`, from the cache when it holds it for the current topology.
pub fn lookup(
    w: &mut Hosts,
    m: MachineId,
    slot: u32,
    local: SocketAddrV4,
    remote: SocketAddrV4,
) -> Dst {
    if w.stack.on_demand && crate::ondemand::runs(w, m) {
        // Routes change during the run: looked up per call, sent on the
        // layered path (which holds a datagram while its route is found).
        let flow = super::tcp_flow(local, remote);
        let route = ipv4::route_flow(w, m, *remote.ip(), Some(&flow)).ok();
        return Dst { route, link: None };
    }
    let epoch = w.stack.dst_epoch;
    let way = slot as usize % WAYS;
    let cached = w.machines[m as usize]
        .ext
        .as_deref()
        .and_then(|e| e.dst.as_deref())
        .and_then(|c| c.entries[way])
        .filter(|e| e.epoch == epoch && e.local_port == local.port() && e.remote == remote);
    if let Some(e) = cached {
        return e.dst;
    }
    let dst = resolve(w, m, local, remote);
    let cache = w.machines[m as usize]
        .ext()
        .dst
        .get_or_insert_with(Box::default);
    cache.entries[way] = Some(Entry {
        epoch,
        local_port: local.port(),
        remote,
        dst,
    });
    dst
}

/// Looks the route up (the slow path the cache saves).
fn resolve(w: &Hosts, m: MachineId, local: SocketAddrV4, remote: SocketAddrV4) -> Dst {
    let flow = super::tcp_flow(local, remote);
    let route = ipv4::route_flow(w, m, *remote.ip(), Some(&flow)).ok();
    Dst {
        route,
        link: route.and_then(|r| link_of(w, m, &r)),
    }
}

/// Returns the link a frame on `route` leaves through when the layered
/// path would send it to a fixed neighbour MAC: a unicast neighbour on a
/// machine that resolves neighbours statically (no ARP).
fn link_of(w: &Hosts, m: MachineId, route: &Route) -> Option<Link> {
    let NextHop::Neighbour(_, port) = route.next else {
        return None;
    };
    let machine = &w.machines[m as usize];
    if w.groups[machine.group as usize].protocols.arp {
        return None;
    }
    let ifc = *machine.ifaces.get(route.iface as usize)?;
    let net = &w.fabric.networks[ifc.net as usize];
    Some(Link {
        net: ifc.net,
        port: ifc.port,
        limit: net.cfg.txqueuelen.max(super::NIC_LIMIT),
        mtu: route.mtu,
        src_mac: net.mac(ifc.port),
        dst_mac: elvis_net::port_mac(ifc.net, port),
    })
}

/// Returns how many frames certainly fit under the link's NIC limit, the
/// NIC having held `held` frames when the connection was called (0 when
/// unknown). Within one call nothing else adds to a NIC of a network with
/// a rate (its frames leave through events, never synchronously), and
/// each frame the connection sends adds at most one, so the first
/// `limit − held` single-frame segments need no look at the NIC; an ideal
/// network may deliver synchronously, and the peer's answer may add
/// frames, so its NIC is always asked.
pub fn certain_room(w: &Hosts, dst: &Dst, held: Option<u32>) -> u32 {
    match (&dst.link, held) {
        (Some(link), Some(held))
            if w.fabric.networks[link.net as usize]
                .cfg
                .bandwidth_bps
                .is_some() =>
        {
            link.limit.saturating_sub(held)
        }
        _ => 0,
    }
}

/// Sends `seg` from `local` to `remote` through `link` in one pass:
/// Ethernet, IPv4 and TCP headers written together at the front of the
/// payload, byte for byte what the layered path writes (`super::transmit`
/// → `ipv4::send_ecn` → `ethernet::send`), with the same counters and
/// the same drop at a full NIC (`room_known`: the caller knows from
/// [`certain_room`] that the NIC has room). The caller checked that the
/// datagram fits the link's MTU.
pub fn transmit_linked(
    w: &mut Hosts,
    m: MachineId,
    link: &Link,
    local: SocketAddrV4,
    remote: SocketAddrV4,
    seg: &mut Segment,
    room_known: bool,
) {
    if !room_known && elvis_net::nic_frames(w, link.net, link.port) >= link.limit {
        return w.drop_packet(DropReason::Net(elvis_net::DropReason::NicQueueFull));
    }
    let msg = &mut seg.payload;
    let mut sum = Checksum::new();
    super::super::udp::sum_message(&mut sum, msg);
    let tcp_payload = msg.len();
    let tcp_len = seg.repr.header_len();
    let ip_at = ethernet::HEADER_LEN;
    let tcp_at = ip_at + IP_HEADER_LEN;
    let header = msg.push_front(tcp_at + tcp_len);
    seg.repr.emit_header(
        &mut tcp::Packet::new_unchecked(&mut header[tcp_at..]),
        *local.ip(),
        *remote.ip(),
        tcp_payload,
        sum,
    );
    let machine = &mut w.machines[m as usize];
    let ident = machine.ip_ident;
    machine.ip_ident = ident.wrapping_add(1);
    let ttl = w.stack.default_ttl;
    let (src, dst) = (*local.ip(), *remote.ip());
    let ip_payload = tcp_len + tcp_payload;
    emit_eth_ip(
        link,
        src,
        dst,
        ip_payload,
        ttl,
        ident,
        seg.ect,
        &mut header[..tcp_at],
    );
    if msg.len() < ethernet::MIN_FRAME_LEN {
        msg.pad_to(ethernet::MIN_FRAME_LEN);
    }
    w.obs.stats.tcp_sent += 1;
    w.obs.stats.ip_sent += 1;
    w.obs.tcp_fast_sent += 1;
    elvis_net::transmit(w, link.net, link.port, msg);
}

/// Sends the TSO segment `seg` (see `stack::offload`) through `link` as
/// the NIC cuts it: frames of `seg.gso_size` payload bytes, each with the
/// headers of the first written from one template and patched, as
/// Linux's `tcp_gso_segment` and `inet_gso_segment` do: the IPv4 total
/// length, identification (one per frame) and header checksum; the TCP
/// sequence number, PSH on the last frame only, and the checksum. The
/// bytes are those [`transmit_linked`] writes for the same segments sent
/// one by one. `room`: frames the NIC certainly takes (see
/// [`certain_room`]).
///
/// Long because it builds the header template once and then patches it
/// per frame in one loop, the patching using the template's offsets,
/// lengths and partial checksum (`tpl`, `hdr_len`, `tcp_len`, `base`),
/// which split would have to be passed for every frame.
pub fn transmit_tso(
    w: &mut Hosts,
    m: MachineId,
    link: &Link,
    local: SocketAddrV4,
    remote: SocketAddrV4,
    seg: &Segment,
    room: &mut u32,
) {
    const ETH: usize = ethernet::HEADER_LEN;
    const TCP_AT: usize = ETH + IP_HEADER_LEN;
    let size = usize::from(seg.gso_size);
    let total = seg.payload.len();
    let psh = seg.repr.control == tcp::Control::Psh;
    let (src, dst) = (*local.ip(), *remote.ip());
    let mut repr = seg.repr;
    repr.control = tcp::Control::None;
    repr.payload_len = size;
    let tcp_len = repr.header_len();
    let hdr_len = TCP_AT + tcp_len;
    let mut tpl = [0u8; TCP_AT + 60];
    repr.emit_header(
        &mut tcp::Packet::new_unchecked(&mut tpl[TCP_AT..hdr_len]),
        src,
        dst,
        size,
        Checksum::new(),
    );
    tpl[TCP_AT + 16..TCP_AT + 18].fill(0);
    let ttl = w.stack.default_ttl;
    emit_eth_ip(
        link,
        src,
        dst,
        tcp_len + size,
        ttl,
        0,
        seg.ect,
        &mut tpl[..TCP_AT],
    );
    let frames = total.div_ceil(size.max(1)) as u32;
    if train(w, m, link, seg, &mut tpl[..hdr_len], frames, room) {
        return;
    }
    // The TCP header's sum without its sequence number, flags and
    // checksum; the pseudo-header's without the length.
    let base = tcp_sum_base(src, dst, &tpl[TCP_AT..hdr_len]);
    let seq0 = seg.repr.seq_number;
    let mut off = 0;
    while off < total {
        let n = size.min(total - off);
        let last = off + n == total;
        if *room == 0 && elvis_net::nic_frames(w, link.net, link.port) >= link.limit {
            w.drop_packet(DropReason::Net(elvis_net::DropReason::NicQueueFull));
            off += n;
            continue;
        }
        *room = room.saturating_sub(1);
        let mut frame = seg.payload.slice(off..off + n);
        let mut sum = base;
        super::super::udp::sum_message(&mut sum, &frame);
        let machine = &mut w.machines[m as usize];
        let ident = machine.ip_ident;
        machine.ip_ident = ident.wrapping_add(1);
        let h = frame.push_front(hdr_len);
        h.copy_from_slice(&tpl[..hdr_len]);
        // IPv4: total length, identification, header checksum.
        let ip_total = (IP_HEADER_LEN + tcp_len + n) as u16;
        h[ETH + 2..ETH + 4].copy_from_slice(&ip_total.to_be_bytes());
        h[ETH + 4..ETH + 6].copy_from_slice(&ident.to_be_bytes());
        h[ETH + 10..ETH + 12].fill(0);
        let ip_sum = !elvis_wire::checksum::header(h[ETH..TCP_AT].try_into().expect("20 bytes"));
        h[ETH + 10..ETH + 12].copy_from_slice(&ip_sum.to_be_bytes());
        // TCP: sequence number, flags, checksum.
        let seq = (seq0 + off).0;
        h[TCP_AT + 4..TCP_AT + 8].copy_from_slice(&seq.to_be_bytes());
        if last && psh {
            h[TCP_AT + 13] |= 0x08;
        }
        sum.add_u32(seq);
        sum.add_u16(u16::from(h[TCP_AT + 13]));
        sum.add_u16((tcp_len + n) as u16);
        let tcp_sum = sum.finish();
        h[TCP_AT + 16..TCP_AT + 18].copy_from_slice(&tcp_sum.to_be_bytes());
        if frame.len() < ethernet::MIN_FRAME_LEN {
            frame.pad_to(ethernet::MIN_FRAME_LEN);
        }
        w.obs.stats.tcp_sent += 1;
        w.obs.stats.ip_sent += 1;
        w.obs.tcp_fast_sent += 1;
        elvis_net::transmit(w, link.net, link.port, &mut frame);
        off += n;
    }
}

/// Sends the `frames` frames of the TSO segment `seg` as one train
/// (`net::enqueue_train`, `offload::arrives_later_train`) when the link
/// and the host at its far end take it: one message with the headers of
/// the first frame (`header`, PSH as the last frame has it) and the whole
/// payload, where the layered or one-by-one path would make a frame
/// each. Returns false, having changed nothing, otherwise.
fn train(
    w: &mut Hosts,
    m: MachineId,
    link: &Link,
    seg: &Segment,
    header: &mut [u8],
    frames: u32,
    room: &mut u32,
) -> bool {
    const TCP_AT: usize = ethernet::HEADER_LEN + IP_HEADER_LEN;
    if frames < 2 || *room < frames || seg.ect || seg.repr.ece || seg.repr.cwr {
        return false;
    }
    let n = &w.fabric.networks[link.net as usize];
    let other = if link.port == 0 { 1 } else { 0 };
    let Some(peer) = n.ports.get(other as usize) else {
        return false;
    };
    let (peer_m, peer_iface) = (peer.machine, peer.iface);
    // The ring must not hold a frame arriving after the train's first
    // (trains go in arrival order).
    let size = usize::from(seg.gso_size);
    let hdr_len = header.len();
    let first = elvis_net::arrival_if_queued(w, link.net, link.port, hdr_len + size);
    let dst = seg_dst(header);
    if !super::super::offload::takes_trains(w, peer_m, peer_iface, dst, first) {
        return false;
    }
    let total = seg.payload.len();
    let last = total - (frames as usize - 1) * size;
    let Some(timing) = elvis_net::enqueue_train(
        w,
        link.net,
        link.port,
        hdr_len + size,
        hdr_len + last,
        frames,
    ) else {
        return false;
    };
    *room -= frames;
    let machine = &mut w.machines[m as usize];
    let ident = machine.ip_ident;
    machine.ip_ident = ident.wrapping_add(frames as u16);
    header[ethernet::HEADER_LEN + 4..ethernet::HEADER_LEN + 6]
        .copy_from_slice(&ident.to_be_bytes());
    if seg.repr.control == tcp::Control::Psh {
        header[TCP_AT + 13] |= 0x08;
    }
    let mut msg = seg.payload.clone();
    msg.push_front_slice(header);
    let id = w.fabric.frames.insert(msg) as elvis_net::FrameId;
    let n = u64::from(frames);
    w.obs.stats.tcp_sent += n;
    w.obs.stats.ip_sent += n;
    w.obs.tcp_fast_sent += n;
    super::super::offload::arrives_later_train(
        w,
        peer_m,
        peer_iface,
        id,
        frames,
        size as u32,
        timing,
    );
    true
}

/// Returns the IPv4 destination of a frame's headers.
fn seg_dst(frame: &[u8]) -> std::net::Ipv4Addr {
    let d = &frame[ethernet::HEADER_LEN + 16..ethernet::HEADER_LEN + 20];
    std::net::Ipv4Addr::new(d[0], d[1], d[2], d[3])
}

/// Returns the one's-complement sum of the IPv4 pseudo-header without its
/// length and of the TCP header `th` without its sequence number, its
/// flags byte and its checksum (which must be zero in `th`).
fn tcp_sum_base(src: std::net::Ipv4Addr, dst: std::net::Ipv4Addr, th: &[u8]) -> Checksum {
    let mut sum = elvis_wire::checksum::pseudo_header(src, dst, IpProtocol::Tcp, 0);
    let mut h = [0u8; 60];
    h[..th.len()].copy_from_slice(th);
    h[4..8].fill(0);
    h[13] = 0;
    sum.add(&h[..th.len()]);
    sum
}

/// Writes the Ethernet header and the IPv4 header (no options, TCP,
/// `ip_payload` bytes after it, ECT(0) if `ect`) of a frame on `link`
/// into `out` (34 bytes), as `ipv4::send_ecn` and `ethernet::send` would.
#[allow(clippy::too_many_arguments)]
fn emit_eth_ip(
    link: &Link,
    src: std::net::Ipv4Addr,
    dst: std::net::Ipv4Addr,
    ip_payload: usize,
    ttl: u8,
    ident: u16,
    ect: bool,
    out: &mut [u8],
) {
    let ip_at = ethernet::HEADER_LEN;
    let ip = elvis_wire::ipv4::Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: IpProtocol::Tcp,
        payload_len: ip_payload,
        hop_limit: ttl,
        ident,
        dont_frag: false,
        more_frags: false,
        frag_offset: 0,
        dscp_ecn: super::ecn::EcnState::codepoint(ect) & 0b11,
    };
    ip.emit(&mut elvis_wire::ipv4::Packet::new_unchecked(
        &mut out[ip_at..ip_at + IP_HEADER_LEN],
    ));
    let eth = ethernet::Repr {
        src_addr: link.src_mac,
        dst_addr: link.dst_mac,
        ethertype: EtherType::Ipv4,
    };
    eth.emit(&mut ethernet::Frame::new_unchecked(&mut out[..ip_at]));
}

/// Returns true when a datagram carrying `seg` leaves `link` unfragmented.
pub fn fits(link: &Link, seg: &Segment) -> bool {
    IP_HEADER_LEN + seg.repr.header_len() + seg.payload.len() <= link.mtu as usize
}

/// Returns true when each frame of the TSO segment `seg` leaves `link`
/// unfragmented.
pub fn fits_frames(link: &Link, seg: &Segment) -> bool {
    IP_HEADER_LEN + seg.repr.header_len() + usize::from(seg.gso_size) <= link.mtu as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machines_cache_costs_a_pointer_until_it_sends_and_136_bytes_then() {
        // The scale budget is per machine: the cache is boxed, so a machine
        // that never sends TCP pays only the `Option<Box<_>>`.
        let boxed = std::mem::size_of::<DstCache>();
        println!("DstCache: {boxed} bytes");
        assert_eq!(std::mem::size_of::<Option<Box<DstCache>>>(), 8);
        assert!(boxed <= 136, "{boxed} bytes");
    }
}
