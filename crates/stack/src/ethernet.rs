//! Ethernet II framing (IEEE 802.3 with EtherType), on a simulated NIC.
//!
//! Outgoing frames are padded to the 60-byte minimum with a virtual zero
//! chunk (no copy). Incoming frames are accepted when addressed to the
//! interface, to broadcast, or to a multicast group.

use crate::counters::DropReason;
use crate::hosts::Hosts;
use crate::machine::IfaceId;
use crate::machine::MachineId;
use elvis_message::Message;
use elvis_net as net;
use elvis_wire::{ethernet, EtherType, EthernetAddress};

/// Pushes an Ethernet header and hands the frame to the NIC of `iface`.
pub fn send(
    w: &mut Hosts,
    m: MachineId,
    iface: IfaceId,
    dst: EthernetAddress,
    ty: EtherType,
    msg: &mut Message,
) {
    let Some(ifc) = w.machines[m as usize].ifaces.get(iface as usize).copied() else {
        return;
    };
    let src = w.fabric.networks[ifc.net as usize].mac(ifc.port);
    let repr = ethernet::Repr {
        src_addr: src,
        dst_addr: dst,
        ethertype: ty,
    };
    let header = msg.push_front(ethernet::HEADER_LEN);
    repr.emit(&mut ethernet::Frame::new_unchecked(header));
    if msg.len() < ethernet::MIN_FRAME_LEN {
        msg.pad_to(ethernet::MIN_FRAME_LEN);
    }
    net::transmit(w, ifc.net, ifc.port, msg);
}

/// Demuxes an incoming frame to IPv4 or ARP.
///
/// A router first offers the frame to its fast path
/// ([`super::forward::forward_frame`]), which forwards most transit
/// datagrams without taking the frame apart.
///
/// A host first offers the frame to TCP's receive fast path
/// ([`super::tcp::rx::receive_frame`]), which takes common TCP segments
/// addressed to it.
pub fn receive(w: &mut Hosts, m: MachineId, iface: IfaceId, frame: &mut Message) {
    if w.machines[m as usize].forward {
        if w.config.fast_forward
            && !w.stack.on_demand
            && super::forward::forward_frame(w, m, iface, frame)
        {
            return;
        }
    } else if w.config.tcp_fast_path && super::tcp::rx::receive_frame(w, m, iface, frame) {
        return;
    }
    let Some(header) = frame.front(ethernet::HEADER_LEN) else {
        return w.drop_packet(DropReason::Malformed("ethernet"));
    };
    let Ok(repr) = ethernet::Repr::parse(&ethernet::Frame::new_unchecked(header)) else {
        return w.drop_packet(DropReason::Malformed("ethernet"));
    };
    let ifc = w.machines[m as usize].ifaces[iface as usize];
    let own = w.fabric.networks[ifc.net as usize].mac(ifc.port);
    if repr.dst_addr != own && !repr.dst_addr.is_broadcast() && !repr.dst_addr.is_multicast() {
        return w.drop_packet(DropReason::NotForUs);
    }
    let _ = frame.pop_front(ethernet::HEADER_LEN);
    match repr.ethertype {
        EtherType::Ipv4 => super::ipv4::receive(w, m, iface, frame),
        EtherType::Arp => super::arp::receive(w, m, iface, frame),
        _ => w.drop_packet(DropReason::Unsupported("ethertype")),
    }
}

#[cfg(test)]
mod tests {
    use crate::machine::{MachineId, Protocols};
    use crate::testing::{drops, eth, icmp, Ip, Lab, Tap};

    use std::time::Duration;

    use crate::testing::{host_and_tap, HOST, PEER};

    /// A UDP host and a tap on one LAN.
    fn lan() -> (Lab, MachineId, Tap) {
        host_and_tap(Protocols::UDP)
    }

    /// An echo request from the tap to the host, in a frame to `dst`.
    fn ping(peer: &Tap, dst: [u8; 6]) -> Vec<u8> {
        let echo = icmp(8, 0, [0, 1, 0, 1], b"ping");
        eth(
            dst,
            peer.mac,
            0x0800,
            &Ip::new(PEER, HOST, 1).datagram(&echo),
        )
    }

    #[test]
    fn a_frame_for_another_unicast_mac_is_dropped_as_not_for_us() {
        let (mut lab, h, peer) = lan();
        let stranger = [0x02, 0x55, 0, 0, 0, 9];
        lab.hand(h, 0, ping(&peer, stranger));
        lab.run_for(Duration::from_millis(1));
        assert_eq!(lab.drops(), drops(&[("not_for_us", 1)]));
        assert!(peer.take().is_empty(), "not answered");
        assert_eq!(lab.w.obs.stats.ip_delivered, 0);
        // The same frame to the host's own MAC is taken (and answered).
        let own = lab.mac(h, 0);
        lab.hand(h, 0, ping(&peer, own));
        lab.run_for(Duration::from_millis(1));
        assert_eq!(peer.take().len(), 1);
        assert_eq!(lab.drops(), drops(&[("not_for_us", 1)]));
    }

    #[test]
    fn an_unknown_ethertype_is_counted_unsupported() {
        let (mut lab, h, peer) = lan();
        let own = lab.mac(h, 0);
        // IPv6 (0x86dd) and a made-up type: neither is demuxed.
        lab.hand(h, 0, eth(own, peer.mac, 0x86dd, &[0x60; 40]));
        lab.hand(h, 0, eth(own, peer.mac, 0x1234, &[0; 46]));
        assert_eq!(lab.drops(), drops(&[("unsupported(ethertype)", 2)]));
    }

    #[test]
    fn a_runt_frame_is_counted_malformed() {
        let (mut lab, h, peer) = lan();
        let own = lab.mac(h, 0);
        // 13 bytes: one short of a header.
        let mut runt = eth(own, peer.mac, 0x0800, &[]);
        runt.pop();
        lab.hand(h, 0, runt);
        assert_eq!(lab.drops(), drops(&[("malformed(ethernet)", 1)]));
    }
}
