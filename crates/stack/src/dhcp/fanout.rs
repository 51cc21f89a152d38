//! Broadcast fan-out of DHCP on large LANs, without a copy per port.
//!
//! A DHCP client broadcasts its DISCOVER and REQUEST, and the server or
//! relay broadcasts the OFFER and ACK back: on a LAN of 250 hosts that is
//! a thousand frame arrivals per client, nearly all of which end, at once,
//! in a drop (`no_socket`: nobody listens on port 67; `dhcp(not_ours)`:
//! another client's reply). This module answers
//! `elvis_net::Context::select_broadcast` for such frames: it names the
//! ports whose machines would do more than drop the frame, and counts the
//! arrival and the drop at every other port as those machines would have,
//! so the report is the same as with a copy per port (a test runs both).
//!
//! A frame qualifies when it is an IPv4 datagram to `255.255.255.255`
//! without options or fragmentation, with valid IPv4 and UDP checksums,
//! for UDP port 67 or 68 (and, for 68, a DHCP reply that parses).
//! Delivered anyway, on every such frame: *special* ports, whose machine
//! has a socket on port 67 or 68, a DHCP server or relay, a foreign stack,
//! NIC offloads, or has crashed. For port 68, also the port whose MAC is
//! the reply's `chaddr`. Every other port counts `frames_delivered`,
//! `ip_delivered` and a drop: `dhcp(not_ours)` on a DHCP client for a port
//! 68 reply, `no_socket` otherwise.
//!
//! The special ports of each network are indexed once and indexed again
//! when the network gains a port or something special changes
//! ([`Fanout::touch`]: a socket bound to port 67 or 68, a DHCP role, a
//! crash). The network layer asks only for ideal switched networks (no
//! per-port queues whose timing the copies would change), and the skipped
//! arrivals are counted when the frame is sent rather than a latency
//! later.

use super::{Parsed, CLIENT_PORT, SERVER_PORT};
use crate::counters::DropReason;
use crate::endpoint::SocketSlot;
use crate::hosts::Hosts;
use elvis_message::Message;
use elvis_net::NetId;
use elvis_wire::checksum;
use elvis_wire::IpProtocol;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::net::Ipv4Addr;

/// The index of every network's special ports.
#[derive(Default)]
pub struct Fanout {
    /// Bumped by every change that may make a port special.
    epoch: u64,
    nets: FxHashMap<NetId, NetIndex>,
}

/// One network's special ports and how its other ports drop.
struct NetIndex {
    epoch: u64,
    /// Ports when indexed (a new port means indexing again).
    ports: u32,
    special: Vec<u32>,
    /// Non-special ports running a DHCP client, and the others.
    clients: u64,
    plain: u64,
}

impl Fanout {
    /// Notes a change that may make some port special.
    pub fn touch(&mut self) {
        self.epoch += 1;
    }
}

/// Machine `m` took a DHCP role: from now on the network layer offers
/// large broadcasts to [`select`], and the index is redone.
pub fn role_added(w: &mut Hosts) {
    w.fabric.config.broadcast_selectors = true;
    w.stack.fanout.touch();
    w.stack.dhcp_roles += 1;
}

/// Returns true when machine `m` must see every DHCP broadcast itself.
fn special(w: &Hosts, m: u32) -> bool {
    let machine = &w.machines[m as usize];
    if machine.crashed || machine.foreign || machine.offloads != 0 {
        return true;
    }
    if let Some(e) = machine.ext.as_deref() {
        if e.dhcp_server.is_some() || e.dhcp_relay.is_some() || e.foreign.is_some() {
            return true;
        }
    }
    machine
        .sockets
        .iter()
        .any(|s| matches!(s, SocketSlot::Udp(u) if u.port == SERVER_PORT || u.port == CLIENT_PORT))
}

/// Returns true when machine `m` runs a DHCP client.
fn is_client(w: &Hosts, m: u32) -> bool {
    w.machines[m as usize]
        .ext
        .as_deref()
        .is_some_and(|e| e.dhcp.is_some())
}

/// Indexes network `net` if its index is missing or stale.
fn index(w: &mut Hosts, net: NetId) {
    let n = &w.fabric.networks[net as usize];
    let ports = n.ports.len() as u32;
    let epoch = w.stack.fanout.epoch;
    if w.stack
        .fanout
        .nets
        .get(&net)
        .is_some_and(|x| x.epoch == epoch && x.ports == ports)
    {
        return;
    }
    let mut x = NetIndex {
        epoch,
        ports,
        special: Vec::new(),
        clients: 0,
        plain: 0,
    };
    for (p, port) in n.ports.iter().enumerate() {
        if special(w, port.machine) {
            x.special.push(p as u32);
        } else if is_client(w, port.machine) {
            x.clients += 1;
        } else {
            x.plain += 1;
        }
    }
    w.stack.fanout.nets.insert(net, x);
}

/// The UDP destination port and payload offset of a qualifying frame.
fn qualifies(bytes: &[u8]) -> Option<u16> {
    // Ethernet (14) + IPv4 without options (20) + UDP (8).
    let ip = bytes.get(14..34)?;
    if bytes[0..6] != [0xff; 6] || bytes[12..14] != [0x08, 0x00] || ip[0] != 0x45 {
        return None;
    }
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff;
    if frag != 0 || ip[9] != 17 || ip[16..20] != [255; 4] || total < 28 || 14 + total > bytes.len()
    {
        return None;
    }
    if !elvis_wire::ipv4::Packet::new_unchecked(ip).verify_checksum() {
        return None;
    }
    let udp = &bytes[34..14 + total];
    let len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    if len != udp.len() {
        return None;
    }
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    if udp[6..8] != [0, 0] {
        let mut sum =
            checksum::pseudo_header(src, Ipv4Addr::BROADCAST, IpProtocol::Udp, len as u32);
        sum.add(udp);
        if sum.finish() != 0 {
            return None;
        }
    }
    let port = u16::from_be_bytes([udp[2], udp[3]]);
    matches!(port, SERVER_PORT | CLIENT_PORT).then_some(port)
}

/// See the module docs: the ports of `net` (other than `from`) to copy
/// `frame` to, the others counted as arrived and dropped.
pub fn select(w: &mut Hosts, net: NetId, from: u32, frame: &Message) -> Option<SmallVec<[u32; 1]>> {
    let mut head = [0u8; 14 + 20 + 8 + 300];
    let take = frame.len().min(head.len());
    frame.copy_to_slice(0, &mut head[..take]).ok()?;
    // The UDP checksum covers the whole datagram: look at all of it.
    let whole;
    let bytes: &[u8] = if frame.len() <= head.len() {
        &head[..take]
    } else {
        whole = frame.to_vec();
        &whole
    };
    let port = qualifies(bytes)?;
    let owner = if port == CLIENT_PORT {
        let p = Parsed::parse(&bytes[42..]).ok()?;
        if p.op != 2 {
            return None;
        }
        let n = &w.fabric.networks[net as usize];
        n.port_of_mac(p.chaddr)
            .filter(|&q| q != from && n.mac(q).0 == p.chaddr)
    } else {
        None
    };
    index(w, net);
    let x = &w.stack.fanout.nets[&net];
    let n = &w.fabric.networks[net as usize];
    let mut out: SmallVec<[u32; 1]> = SmallVec::new();
    out.extend(x.special.iter().copied().filter(|&q| q != from));
    let (mut clients, mut plain) = (x.clients, x.plain);
    // The sender and the reply's client are not among the skipped.
    for q in [Some(from), owner].into_iter().flatten() {
        let m = n.ports[q as usize].machine;
        if special(w, m) {
            continue;
        }
        if is_client(w, m) {
            clients -= 1;
        } else {
            plain -= 1;
        }
    }
    if let Some(q) = owner {
        if !out.contains(&q) {
            out.push(q);
        }
    }
    let skipped = clients + plain;
    w.fabric.networks[net as usize].stats.frames_delivered += skipped;
    let stats = &mut w.obs.stats;
    stats.frames_delivered += skipped;
    stats.ip_delivered += skipped;
    let (not_ours, no_socket) = if port == CLIENT_PORT {
        (clients, plain)
    } else {
        (0, skipped)
    };
    if not_ours > 0 {
        *stats.drops.entry(DropReason::Dhcp("not_ours")).or_insert(0) += not_ours;
    }
    if no_socket > 0 {
        *stats.drops.entry(DropReason::NoSocket).or_insert(0) += no_socket;
    }
    Some(out)
}
