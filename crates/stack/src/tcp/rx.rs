//! The receive fast path of a host: an Ethernet frame carrying a common
//! TCP segment goes from the link straight to TCP's demux, the way
//! [`crate::forward::forward_frame`] takes a router's transit
//! frames.
//!
//! The layered path (`ethernet::receive` → `ipv4::receive` →
//! `ipv4::deliver_up` → [`super::receive`]) parses each header into a
//! value, copies the IPv4 header aside for ICMP errors, and checks cases a
//! common segment never hits (broadcast, multicast groups, fragments,
//! forwarding, options). [`receive_frame`] reads the 34 bytes of Ethernet
//! and IPv4 header in place once, checks the IPv4 header checksum with the
//! unrolled 20-byte sum (RFC 1071), and hands the TCP segment to
//! [`super::receive`] with exactly the counters the layered path would
//! have kept. It changes nothing and returns `false` for any frame it does
//! not take, which then goes the layered way (and is dropped there with
//! its reason if it is bad): the fast path only ever takes frames the
//! layered path would have delivered to TCP, so results do not depend on
//! it (the integration test `tcp_fast_path` compares runs).

use crate::hosts::Hosts;
use crate::machine::IfaceId;
use crate::machine::MachineId;
use elvis_message::Message;
use elvis_wire::checksum;
use std::net::Ipv4Addr;

/// Ethernet header length.
const ETH: usize = 14;
/// Ethernet plus an IPv4 header without options.
const ETH_IP: usize = ETH + 20;

/// Takes `frame`, which arrived on interface `iface` of host `m`, when it
/// is a unicast IPv4 datagram without options, not a fragment, carrying
/// TCP, addressed to the interface and with a right header checksum;
/// returns `false` (the frame untouched) otherwise.
pub fn receive_frame(w: &mut Hosts, m: MachineId, iface: IfaceId, frame: &mut Message) -> bool {
    let Some(ifc) = w.machines[m as usize].ifaces.get(iface as usize).copied() else {
        return false;
    };
    let own = w.fabric.networks[ifc.net as usize].mac(ifc.port);
    let Some(h) = frame.front(ETH_IP) else {
        return false;
    };
    if !plain_tcp(h, own, ifc.ip) {
        return false;
    }
    let ip: &[u8; 20] = h[ETH..ETH_IP].try_into().expect("20 bytes");
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let ecn = ip[1] & 0b11;
    if total < ETH_IP - ETH || ETH + total > frame.len() {
        return false;
    }
    frame.truncate(ETH + total);
    let _ = frame.pop_front(ETH_IP);
    w.obs.stats.ip_delivered += 1;
    w.obs.tcp_fast_received += 1;
    super::receive(w, m, src, ifc.ip, ecn, frame);
    true
}

/// Returns true when the Ethernet and IPv4 headers at the front of `h`
/// (at least 34 bytes) carry a unicast IPv4 datagram to `own` and `ip`
/// without options, not a fragment, holding TCP, with a right header
/// checksum (the unrolled 20-byte sum, RFC 1071). GRO
/// (`stack::offload`) takes the same frames.
pub fn plain_tcp(h: &[u8], own: elvis_wire::EthernetAddress, ip_addr: Ipv4Addr) -> bool {
    let ip: &[u8; 20] = h[ETH..ETH_IP].try_into().expect("20 bytes");
    h[..6] == own.0
        && h[12..14] == [0x08, 0x00]
        && ip[0] == 0x45
        && ip[9] == 6
        && u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff == 0
        && ip[16..20] == ip_addr.octets()
        && checksum::header(ip) == 0xffff
}
