//! UDP (RFC 768): checksummed datagrams between ports.
//!
//! The checksum covers the IPv4 pseudo-header, the UDP header and the
//! payload, computed over the message's chunks without copying (virtual
//! payload bytes are zeros and add nothing). A computed checksum of zero is
//! sent as 0xffff; a received checksum of zero means "none".

use super::{dhcp, ipv4};
use crate::counters::DropReason;
use crate::endpoint::{SocketError, SocketSlot, MAX_UDP_PAYLOAD};
use crate::hosts::Hosts;
use crate::hosts::TaskId;
use crate::machine::MachineId;
use elvis_message::{ChunkRef, Message};
use elvis_wire::checksum::{self, Checksum};
use elvis_wire::{udp, IpProtocol};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::task::Poll;

/// Adds every byte of `msg` to a running checksum.
#[inline(always)]
pub fn sum_message(sum: &mut Checksum, msg: &Message) {
    msg.for_each_chunk(|chunk| match chunk {
        ChunkRef::Bytes(b) => sum.add(b),
        ChunkRef::Zeros(n) => sum.add_zeros(n),
    });
}

/// Where a datagram is sent from: the machine, the socket's port and the
/// TOS byte it sets (read by the caller from the socket's shared record).
#[derive(Clone, Copy, Debug)]
pub struct Source {
    pub machine: MachineId,
    pub port: u16,
    pub tos: u8,
}

/// Sends the datagram in `payload` from `src` to `to`.
///
/// Returns `Pending` (and registers the calling task, `task()`) when the
/// NIC is full; the payload stays in `payload` for the next try. (The result is
/// the `send_to` future's, with the rare error boxed so that the whole
/// result is one word, returned in a register: a larger one comes back
/// through memory, written as one word and copied out in wider loads,
/// which stall until that store reaches the cache.)
pub fn send(
    w: &mut Hosts,
    src: Source,
    to: SocketAddrV4,
    payload: &mut Option<Message>,
    task: impl FnOnce() -> Option<TaskId>,
) -> Poll<Result<(), Box<SocketError>>> {
    let Some(len) = payload.as_ref().map(Message::len) else {
        return Poll::Ready(Ok(()));
    };
    if len > MAX_UDP_PAYLOAD {
        return Poll::Ready(Err(Box::new(SocketError::MessageTooLong(len))));
    }
    let Source {
        machine: m,
        port: src_port,
        tos,
    } = src;
    let flow = super::route::FlowKey {
        src: 0,
        dst: u32::from(*to.ip()),
        proto: 17,
        sport: src_port,
        dport: to.port(),
        ident: 0,
    };
    // Used where it lies (see `ipv4::route_flow`).
    let found = ipv4::route_flow(w, m, *to.ip(), Some(&flow));
    let route = match &found {
        Ok(route) => route,
        Err(e) => return Poll::Ready(Err(Box::new(e.clone()))),
    };
    if route.next != ipv4::NextHop::Local {
        let need = ipv4::frames_needed(route, len + udp::HEADER_LEN);
        if let Some((net, port)) = nic_full(w, m, route, need) {
            let task = task();
            elvis_net::wait_for_room_task(w, net, port, task);
            return Poll::Pending;
        }
    }
    // Sent from where it lies (no move of the message out of the future).
    let Some(msg) = payload.as_mut() else {
        return Poll::Ready(Ok(()));
    };
    let repr = udp::Repr {
        src_port,
        dst_port: to.port(),
    };
    let mut sum = Checksum::new();
    sum_message(&mut sum, msg);
    let header = msg.push_front(udp::HEADER_LEN);
    repr.emit_header(
        &mut udp::Packet::new_unchecked(header),
        route.src,
        *to.ip(),
        len,
        sum,
    );
    w.obs.stats.udp_sent += 1;
    let (dst, ttl) = (*to.ip(), w.stack.default_ttl);
    ipv4::send_tos(w, m, *route, dst, IpProtocol::Udp, ttl, false, tos, msg);
    *payload = None;
    Poll::Ready(Ok(()))
}

/// Returns the NIC (network, port) of interface `iface` of machine `m` when
/// it has no room for `need` frames (or, for a datagram of more fragments
/// than the queue holds, is not empty).
///
/// The room is read through [`ipv4::room`], the same check the stack's
/// other senders make.
fn nic_full(w: &Hosts, m: MachineId, route: &ipv4::Route, need: u32) -> Option<(u32, u32)> {
    let room = ipv4::room(w, m, route);
    if room >= need {
        return None;
    }
    let ifc = w.machines[m as usize].ifaces.get(route.iface as usize)?;
    let cap = w.fabric.networks[ifc.net as usize].cfg.txqueuelen;
    (room < need.min(cap)).then_some((ifc.net, ifc.port))
}

/// Checks an incoming datagram and queues it on the socket bound to its
/// destination port.
pub fn receive(
    w: &mut Hosts,
    m: MachineId,
    iface: crate::machine::IfaceId,
    ip_header: &[u8],
    src: Ipv4Addr,
    dst: Ipv4Addr,
    msg: &mut Message,
) {
    let Some(header) = msg.front(udp::HEADER_LEN) else {
        return w.drop_packet(DropReason::Malformed("udp"));
    };
    let mut first8 = [0u8; 8];
    first8.copy_from_slice(header);
    let packet = udp::Packet::new_unchecked(&first8[..]);
    let (src_port, dst_port, len, check) = (
        packet.src_port(),
        packet.dst_port(),
        usize::from(packet.len()),
        packet.checksum(),
    );
    if len < udp::HEADER_LEN || len > msg.len() {
        return w.drop_packet(DropReason::Malformed("udp"));
    }
    if len < msg.len() {
        // Ethernet padding or trailing bytes beyond the UDP length.
        msg.truncate(len);
    }
    if check != 0 {
        let mut sum = checksum::pseudo_header(src, dst, IpProtocol::Udp, len as u32);
        sum_message(&mut sum, msg);
        if sum.finish() != 0 {
            return w.drop_packet(DropReason::BadChecksum("udp"));
        }
    }
    let _ = msg.pop_front(udp::HEADER_LEN);
    let machine = &mut w.machines[m as usize];
    let from = SocketAddrV4::new(src, src_port);
    let sock = machine.sockets.iter_mut().find_map(|s| match s {
        SocketSlot::Udp(u) if u.port == dst_port && u.remote.get().is_none_or(|r| r == from) => {
            Some(u)
        }
        _ => None,
    });
    let Some(sock) = sock else {
        let to = (dst, dst_port);
        return no_socket(w, m, iface, ip_header, &first8, src, to, msg);
    };
    // The message is now exactly the payload (truncated to the UDP length,
    // header removed): its length is known without walking its chunks.
    let payload_len = len - udp::HEADER_LEN;
    debug_assert_eq!(payload_len, msg.len());
    // A failed borrow means an application holds the queue across a stack
    // call (it cannot, as the API stands); the datagram is dropped then as
    // if the buffer were full.
    let pushed = match sock.rx.try_borrow_mut() {
        Ok(mut rx) => rx.push(from, payload_len, msg),
        Err(_) => None,
    };
    let Some(waiter) = pushed else {
        return w.drop_packet(DropReason::SocketBufferFull);
    };
    if ip_header.get(1).is_some_and(|tos| tos & 0b11 == 0b11) {
        sock.ce_received.set(sock.ce_received.get() + 1);
    }
    w.obs.stats.udp_delivered += 1;
    if let Some(t) = waiter {
        w.wake(t);
    }
}

/// A datagram for a port no socket is bound to: the stack's own services
/// (DHCP's client and server ports, AODV's) take it, or it is dropped
/// (`no_socket`) with a Port Unreachable unless it was a broadcast or
/// multicast (RFC 1122 §3.2.2).
#[allow(clippy::too_many_arguments)]
fn no_socket(
    w: &mut Hosts,
    m: MachineId,
    iface: crate::machine::IfaceId,
    ip_header: &[u8],
    first8: &[u8; 8],
    src: Ipv4Addr,
    (dst, dst_port): (Ipv4Addr, u16),
    msg: &mut Message,
) {
    if matches!(dst_port, dhcp::CLIENT_PORT | dhcp::SERVER_PORT)
        && dhcp::receive(w, m, iface, src, dst, dst_port, msg)
    {
        return;
    }
    if dst_port == crate::aodv::PORT && crate::aodv::receive(w, m, iface, ip_header, src, dst, msg)
    {
        return;
    }
    if !dst.is_broadcast() && !dst.is_multicast() {
        super::icmp::send_port_unreachable(w, m, ip_header, first8);
    }
    w.drop_packet(DropReason::NoSocket);
}

#[cfg(test)]
mod tests {
    use crate::endpoint::UdpShared;
    use crate::machine::{MachineId, Protocols};
    use crate::testing::{drops, eth, udp, Ip, Lab, Tap, BROADCAST};
    use std::net::{Ipv4Addr, SocketAddrV4};
    use std::rc::Rc;

    use crate::testing::{host_and_tap, HOST, MS, PEER};

    /// A host with UDP port 7 bound and a tap, on one LAN.
    fn lan() -> (Lab, MachineId, Tap, Rc<UdpShared>) {
        let (mut lab, h, peer) = host_and_tap(Protocols::UDP);
        let sock = lab.bind_udp(h, 7);
        (lab, h, peer, sock)
    }

    /// A frame from the tap to the host holding the UDP `segment`.
    fn frame(lab: &Lab, h: MachineId, peer: &Tap, segment: &[u8]) -> Vec<u8> {
        let d = Ip::new(PEER, HOST, 17).datagram(segment);
        eth(lab.mac(h, 0), peer.mac, 0x0800, &d)
    }

    /// Returns the payloads queued on `sock`, oldest first, with senders.
    fn queued(sock: &UdpShared) -> Vec<(Vec<u8>, SocketAddrV4)> {
        let mut rx = sock.rx.borrow_mut();
        std::iter::from_fn(|| rx.pop().map(|(m, from)| (m.to_vec(), from))).collect()
    }

    #[test]
    fn a_datagram_for_a_bound_port_lands_in_its_receive_queue() {
        let (mut lab, h, peer, sock) = lan();
        let seg = udp(PEER, HOST, 4000, 7, b"hello, port 7");
        lab.send(&peer, frame(&lab, h, &peer, &seg));
        lab.run_for(MS);
        assert_eq!(sock.rx.borrow().bytes, 13, "payload bytes queued");
        let from = SocketAddrV4::new(PEER, 4000);
        assert_eq!(queued(&sock), [(b"hello, port 7".to_vec(), from)]);
        assert_eq!(lab.w.obs.stats.udp_delivered, 1);
        assert_eq!(lab.drops(), drops(&[]));
    }

    #[test]
    fn a_datagram_for_an_unbound_port_is_counted_no_socket() {
        let (mut lab, h, peer, sock) = lan();
        let seg = udp(PEER, HOST, 4000, 8, b"wrong door");
        lab.send(&peer, frame(&lab, h, &peer, &seg));
        lab.run_for(MS);
        assert_eq!(lab.drops(), drops(&[("no_socket", 1)]));
        assert!(queued(&sock).is_empty());
        assert_eq!(peer.take().len(), 1, "a Port Unreachable");
    }

    #[test]
    fn a_broadcast_to_an_unbound_port_is_counted_no_socket_and_draws_no_error() {
        // RFC 1122 §3.2.2: no ICMP error about a datagram to a broadcast
        // address.
        let (mut lab, _, peer, _) = lan();
        let bcast = Ipv4Addr::BROADCAST;
        let d = Ip::new(PEER, bcast, 17).datagram(&udp(PEER, bcast, 4000, 8, b"anyone?"));
        lab.send(&peer, eth(BROADCAST, peer.mac, 0x0800, &d));
        lab.run_for(MS);
        assert_eq!(lab.drops(), drops(&[("no_socket", 1)]));
        assert!(peer.take().is_empty());
    }

    #[test]
    fn a_bad_checksum_is_counted_and_the_datagram_not_queued() {
        let (mut lab, h, peer, sock) = lan();
        let mut seg = udp(PEER, HOST, 4000, 7, b"garbled");
        seg[8] ^= 0x20; // a payload bit flipped after the checksum
        lab.send(&peer, frame(&lab, h, &peer, &seg));
        lab.run_for(MS);
        assert_eq!(lab.drops(), drops(&[("bad_checksum(udp)", 1)]));
        assert!(queued(&sock).is_empty());
        assert!(peer.take().is_empty(), "no error about a corrupt datagram");
    }

    #[test]
    fn a_zero_checksum_means_none_and_the_datagram_is_accepted() {
        // RFC 768: "an all zero transmitted checksum value means that the
        // transmitter generated no checksum".
        let (mut lab, h, peer, sock) = lan();
        let mut seg = udp(PEER, HOST, 4000, 7, b"unchecked");
        seg[6..8].copy_from_slice(&[0, 0]);
        lab.send(&peer, frame(&lab, h, &peer, &seg));
        lab.run_for(MS);
        assert_eq!(
            queued(&sock),
            [(b"unchecked".to_vec(), SocketAddrV4::new(PEER, 4000))]
        );
        assert_eq!(lab.drops(), drops(&[]));
    }

    #[test]
    fn a_datagram_that_overflows_the_receive_buffer_is_counted_socket_buffer_full() {
        let (mut lab, h, peer, sock) = lan();
        sock.rx.borrow_mut().cap = 100;
        // 60 + 60 > 100: the second does not fit; 60 + 40 = 100 does.
        for len in [60, 60, 40] {
            let seg = udp(PEER, HOST, 4000, 7, &vec![len as u8; len]);
            lab.send(&peer, frame(&lab, h, &peer, &seg));
        }
        lab.run_for(MS);
        assert_eq!(lab.drops(), drops(&[("socket_buffer_full", 1)]));
        let lens: Vec<usize> = queued(&sock).iter().map(|(p, _)| p.len()).collect();
        assert_eq!(lens, [60, 40]);
    }
}
