//! ICMPv4 (RFC 792): echo request/reply, destination unreachable and time
//! exceeded.
//!
//! Every machine answers echo requests (as a Linux host does). Echo replies
//! go to the `IcmpSocket` (elvis-sim) whose identifier they carry. A UDP
//! datagram to a closed port is answered with Port Unreachable, which makes
//! a *connected* UDP socket's next receive fail with `ConnectionRefused`,
//! as on Linux. Routers ([`super::forward`]) send Time Exceeded, Net
//! Unreachable and Fragmentation Needed; an error quoting one of an ICMP
//! socket's echo requests is queued on that socket (as Linux's ping
//! sockets report errors with `IP_RECVERR`), which is what `traceroute`
//! reads.
//!
//! Errors are rate-limited as Linux does ([`super::icmp_limit`]: 6 then
//! 1 per second per destination, 50 then 1000 per second per machine;
//! Fragmentation Needed is exempt).
//!
//! # Gaps
//! Errors quoting UDP or TCP datagrams other than Port Unreachable are
//! counted and dropped (no PMTU discovery, no soft errors on TCP).

use super::ipv4;
use super::udp::sum_message;
use crate::counters::DropReason;
use crate::endpoint::{EchoReply, IcmpError, SocketError, SocketSlot};
use crate::hosts::Hosts;
use crate::machine::MachineId;
use elvis_message::Message;
use elvis_wire::checksum::Checksum;
use elvis_wire::IpProtocol;
use std::net::{Ipv4Addr, SocketAddrV4};

const ECHO_REPLY: u8 = 0;
pub const DST_UNREACHABLE: u8 = 3;
const ECHO_REQUEST: u8 = 8;
pub const TIME_EXCEEDED: u8 = 11;
pub const NET_UNREACHABLE: u8 = 0;
const PORT_UNREACHABLE: u8 = 3;
pub const FRAG_NEEDED: u8 = 4;
const HEADER_LEN: usize = 8;

/// Pushes an 8-byte ICMP header (type, code, checksum, `rest`) on `msg`.
fn push_header(msg: &mut Message, ty: u8, code: u8, rest: [u8; 4]) {
    let mut sum = Checksum::new();
    sum.add(&[ty, code, 0, 0]);
    sum.add(&rest);
    sum_message(&mut sum, msg);
    let c = sum.finish().to_be_bytes();
    msg.push_front_slice(&[ty, code, c[0], c[1], rest[0], rest[1], rest[2], rest[3]]);
}

/// Returns true when the route's NIC has no room for a datagram of `need`
/// frames. A datagram of more fragments than the queue holds (a ping of
/// 47,353 bytes or more on a 1500-byte MTU needs more than the default 32)
/// is admitted whole into an empty queue, as UDP's are
/// (`udp::nic_full`): it could never fit otherwise.
fn nic_full(w: &Hosts, m: MachineId, route: &ipv4::Route, need: u32) -> bool {
    let room = ipv4::room(w, m, route);
    if room >= need {
        return false;
    }
    let Some(ifc) = w.machines[m as usize].ifaces.get(route.iface as usize) else {
        return true;
    };
    let cap = w.fabric.networks[ifc.net as usize].cfg.txqueuelen;
    room < need.min(cap)
}

/// Sends a stack-originated ICMP message (dropped if the NIC is full).
fn send_own(
    w: &mut Hosts,
    m: MachineId,
    to: Ipv4Addr,
    mut msg: Message,
) -> Result<(), SocketError> {
    // Used where it lies (see `ipv4::route_flow`).
    let found = ipv4::route(w, m, to);
    let route = found.as_ref().map_err(Clone::clone)?;
    if nic_full(w, m, route, ipv4::frames_needed(route, msg.len())) {
        w.drop_packet(DropReason::Net(elvis_net::DropReason::NicQueueFull));
        return Ok(());
    }
    ipv4::send(w, m, *route, to, IpProtocol::Icmp, &mut msg);
    Ok(())
}

/// Sends an echo request from an ICMP socket with IP options `opts`.
pub fn send_echo_request(
    w: &mut Hosts,
    m: MachineId,
    to: Ipv4Addr,
    ident: u16,
    seq: u16,
    opts: crate::endpoint::EchoOptions,
    mut data: Message,
) -> Result<(), SocketError> {
    let i = ident.to_be_bytes();
    let s = seq.to_be_bytes();
    push_header(&mut data, ECHO_REQUEST, 0, [i[0], i[1], s[0], s[1]]);
    // Used where it lies (see `ipv4::route_flow`).
    let found = ipv4::route(w, m, to);
    let route = found.as_ref().map_err(Clone::clone)?;
    let mtu = route.mtu as usize;
    if opts.dont_fragment && data.len() + 20 > mtu {
        return Err(SocketError::MessageTooLong(data.len()));
    }
    if nic_full(w, m, route, ipv4::frames_needed(route, data.len())) {
        w.drop_packet(DropReason::Net(elvis_net::DropReason::NicQueueFull));
        return Ok(());
    }
    let ttl = opts.ttl.unwrap_or(w.stack.default_ttl);
    ipv4::send_opts(
        w,
        m,
        *route,
        to,
        IpProtocol::Icmp,
        ttl,
        opts.dont_fragment,
        &mut data,
    );
    Ok(())
}

/// Sends an ICMP error of type `ty` and `code` about `datagram` (which
/// starts with its IPv4 header) back to its source, quoting the header and
/// the first 8 bytes of its data (RFC 792). Nothing is sent about an ICMP
/// error, a non-first fragment, or a datagram from an address that cannot
/// be answered (RFC 1122 §3.2.2).
pub fn send_error(
    w: &mut Hosts,
    m: MachineId,
    ty: u8,
    code: u8,
    rest: [u8; 4],
    datagram: &mut Message,
) {
    let Some(h) = datagram.front(20) else { return };
    let ihl = usize::from(h[0] & 0x0f) * 4;
    let src = Ipv4Addr::new(h[12], h[13], h[14], h[15]);
    let first_fragment = u16::from_be_bytes([h[6], h[7]]) & 0x1fff == 0;
    if !first_fragment
        || src.is_unspecified()
        || src.is_broadcast()
        || src.is_multicast()
        || src.is_loopback()
    {
        return;
    }
    if h[9] == 1 {
        let inner = datagram.byte_at(ihl);
        if !matches!(
            inner,
            Some(ECHO_REQUEST) | Some(ECHO_REPLY) | Some(13) | Some(15)
        ) {
            return; // Never an error about an error (or a truncated one).
        }
    }
    if !rate_allows(w, m, src, ty, code) {
        w.obs.stats.icmp_errors_rate_limited += 1;
        return;
    }
    w.obs.stats.icmp_errors_sent += 1;
    let n = (ihl + 8).min(datagram.len());
    let mut msg = Message::from_vec(datagram.slice(0..n).to_vec());
    push_header(&mut msg, ty, code, rest);
    let _ = send_own(w, m, src, msg);
}

/// Asks machine `m`'s rate limiter whether an error to `to` may go now
/// ([`super::icmp_limit`]).
fn rate_allows(w: &mut Hosts, m: MachineId, to: Ipv4Addr, ty: u8, code: u8) -> bool {
    let (cfg, now) = (w.stack.icmp_limit, w.now().as_nanos());
    if cfg == super::icmp_limit::IcmpRateLimit::OFF {
        return true;
    }
    let ext = w.machines[m as usize].ext();
    let limiter = ext.icmp_limit.get_or_insert_with(Default::default);
    limiter.allow(&cfg, now, to, ty, code)
}

/// Answers a datagram to a closed UDP port (RFC 1122 §4.1.3.1).
pub fn send_port_unreachable(w: &mut Hosts, m: MachineId, ip_header: &[u8], udp_header: &[u8; 8]) {
    if ip_header.len() < 20 {
        return;
    }
    let to = Ipv4Addr::new(ip_header[12], ip_header[13], ip_header[14], ip_header[15]);
    if !rate_allows(w, m, to, DST_UNREACHABLE, PORT_UNREACHABLE) {
        w.obs.stats.icmp_errors_rate_limited += 1;
        return;
    }
    w.obs.stats.icmp_errors_sent += 1;
    let mut body = Vec::with_capacity(ip_header.len() + 8);
    body.extend_from_slice(ip_header);
    body.extend_from_slice(udp_header);
    let mut msg = Message::from_vec(body);
    push_header(&mut msg, DST_UNREACHABLE, PORT_UNREACHABLE, [0; 4]);
    let _ = send_own(w, m, to, msg);
}

/// Checks and handles an incoming ICMP message.
///
/// `ip_header` is the IPv4 header as received (empty for loopback).
pub fn receive(
    w: &mut Hosts,
    m: MachineId,
    ip_header: &[u8],
    src: Ipv4Addr,
    _dst: Ipv4Addr,
    msg: &mut Message,
) {
    let ttl = ip_header
        .get(8)
        .copied()
        .unwrap_or(super::ipv4::DEFAULT_TTL);
    let mut sum = Checksum::new();
    sum_message(&mut sum, msg);
    if sum.finish() != 0 {
        return w.drop_packet(DropReason::BadChecksum("icmp"));
    }
    let Some(h) = msg.front(HEADER_LEN) else {
        return w.drop_packet(DropReason::Malformed("icmp"));
    };
    let (ty, code) = (h[0], h[1]);
    let ident = u16::from_be_bytes([h[4], h[5]]);
    let seq = u16::from_be_bytes([h[6], h[7]]);
    let _ = msg.pop_front(HEADER_LEN);
    match ty {
        ECHO_REQUEST => {
            let i = ident.to_be_bytes();
            let s = seq.to_be_bytes();
            push_header(msg, ECHO_REPLY, 0, [i[0], i[1], s[0], s[1]]);
            w.obs.stats.icmp_echo_replied += 1;
            let _ = send_own(w, m, src, std::mem::take(msg));
        }
        ECHO_REPLY => {
            let machine = &mut w.machines[m as usize];
            let sock = machine.sockets.iter_mut().find_map(|s| match s {
                SocketSlot::Icmp(i) if i.ident == ident => Some(i),
                _ => None,
            });
            let Some(sock) = sock else {
                return w.drop_packet(DropReason::NoSocket);
            };
            sock.rx.push_back(EchoReply {
                from: src,
                seq,
                data: std::mem::take(msg),
                ttl,
                error: None,
            });
            if let Some(t) = sock.waiter.take() {
                w.wake(t);
            }
        }
        DST_UNREACHABLE if code == PORT_UNREACHABLE && quotes(msg, IpProtocol::Udp) => {
            port_unreachable(w, m, msg)
        }
        DST_UNREACHABLE | TIME_EXCEEDED if quotes(msg, IpProtocol::Icmp) => {
            let error = IcmpError {
                kind: ty,
                code,
                mtu: ident_mtu(ty, code, seq),
            };
            echo_error(w, m, src, error, msg)
        }
        DST_UNREACHABLE | TIME_EXCEEDED => w.drop_packet(DropReason::Unsupported("icmp error")),
        _ => w.drop_packet(DropReason::Unsupported("icmp type")),
    }
}

/// Returns the next-hop MTU of a Fragmentation Needed (RFC 1191), whose
/// second half of the header's last word is parsed as `seq` here.
fn ident_mtu(ty: u8, code: u8, seq: u16) -> u16 {
    if ty == DST_UNREACHABLE && code == FRAG_NEEDED {
        seq
    } else {
        0
    }
}

/// Returns true when an ICMP error's body quotes a datagram of `proto`.
fn quotes(body: &Message, proto: IpProtocol) -> bool {
    body.byte_at(9) == Some(u8::from(proto))
}

/// Queues an error about one of our echo requests on the ICMP socket that
/// sent it (identified by the quoted request's identifier).
fn echo_error(w: &mut Hosts, m: MachineId, from: Ipv4Addr, error: IcmpError, body: &mut Message) {
    let Some(h) = body.front(20) else {
        return w.drop_packet(DropReason::Malformed("icmp"));
    };
    let ihl = usize::from(h[0] & 0x0f) * 4;
    let Some(h) = body.front(ihl + 8) else {
        return w.drop_packet(DropReason::Malformed("icmp"));
    };
    if h[ihl] != ECHO_REQUEST {
        return w.drop_packet(DropReason::Unsupported("icmp error"));
    }
    let ident = u16::from_be_bytes([h[ihl + 4], h[ihl + 5]]);
    let seq = u16::from_be_bytes([h[ihl + 6], h[ihl + 7]]);
    let machine = &mut w.machines[m as usize];
    let sock = machine.sockets.iter_mut().find_map(|s| match s {
        SocketSlot::Icmp(i) if i.ident == ident => Some(i),
        _ => None,
    });
    let Some(sock) = sock else {
        return w.drop_packet(DropReason::NoSocket);
    };
    sock.rx.push_back(EchoReply {
        from,
        seq,
        data: Message::new(),
        ttl: 0,
        error: Some(error),
    });
    if let Some(t) = sock.waiter.take() {
        w.wake(t);
    }
}

/// Reports a Port Unreachable to the connected UDP socket it concerns.
fn port_unreachable(w: &mut Hosts, m: MachineId, body: &mut Message) {
    let Some(h) = body.front(20) else { return };
    let ihl = usize::from(h[0] & 0x0f) * 4;
    let dst = Ipv4Addr::new(h[16], h[17], h[18], h[19]);
    let Some(h) = body.front(ihl + 8) else { return };
    let src_port = u16::from_be_bytes([h[ihl], h[ihl + 1]]);
    let dst_port = u16::from_be_bytes([h[ihl + 2], h[ihl + 3]]);
    let peer = SocketAddrV4::new(dst, dst_port);
    for s in w.machines[m as usize].sockets.iter_mut() {
        if let SocketSlot::Udp(u) = s {
            if u.port == src_port && u.remote.get() == Some(peer) {
                let waiter =
                    u.rx.try_borrow_mut()
                        .ok()
                        .and_then(|mut rx| rx.set_error(SocketError::ConnectionRefused));
                if let Some(t) = waiter {
                    w.wake(t);
                }
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::machine::{MachineId, Protocols};
    use crate::testing::{checksum, drops, eth, icmp, udp, Ip, Lab, Tap};
    use elvis_kernel::Time;

    use crate::testing::{host_and_tap, HOST, MS, PEER};

    /// A UDP host and a tap on one LAN.
    fn lan() -> (Lab, MachineId, Tap) {
        host_and_tap(Protocols::UDP)
    }

    /// A UDP datagram from the tap to port 9 of the host (nothing bound).
    fn to_closed_port(payload: &[u8]) -> Vec<u8> {
        Ip::new(PEER, HOST, 17).datagram(&udp(PEER, HOST, 4000, 9, payload))
    }

    #[test]
    fn an_echo_request_gets_a_reply_with_its_id_seq_and_payload_and_a_valid_checksum() {
        let (mut lab, h, peer) = lan();
        let hmac = lab.mac(h, 0);
        let data: Vec<u8> = (0..56u8).collect();
        let request = icmp(8, 0, [0x12, 0x34, 0x00, 0x07], &data);
        lab.send(
            &peer,
            eth(
                hmac,
                peer.mac,
                0x0800,
                &Ip::new(PEER, HOST, 1).datagram(&request),
            ),
        );
        lab.run_for(MS);
        let got = peer.take();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].bytes[0..12], [peer.mac, hmac].concat());
        let d = got[0].datagram();
        assert_eq!(checksum(&d[..20]), 0, "IPv4 header checksum");
        assert_eq!((d[8], d[9]), (64, 1), "default TTL, ICMP");
        assert_eq!(
            (&d[12..16], &d[16..20]),
            (&HOST.octets()[..], &PEER.octets()[..])
        );
        let reply = &d[20..];
        assert_eq!(reply[0..2], [0, 0], "echo reply, code 0");
        assert_eq!(reply[4..8], [0x12, 0x34, 0x00, 0x07], "same id and seq");
        assert_eq!(&reply[8..], &data[..], "same data");
        assert_eq!(checksum(reply), 0, "RFC 792 checksum");
        assert_eq!(lab.w.obs.stats.icmp_echo_replied, 1);
        assert_eq!(lab.drops(), drops(&[]));
    }

    #[test]
    fn an_echo_request_with_a_bad_checksum_is_dropped_unanswered() {
        let (mut lab, h, peer) = lan();
        let hmac = lab.mac(h, 0);
        let mut request = icmp(8, 0, [0, 1, 0, 1], b"abcd");
        request[2] ^= 0x01;
        lab.send(
            &peer,
            eth(
                hmac,
                peer.mac,
                0x0800,
                &Ip::new(PEER, HOST, 1).datagram(&request),
            ),
        );
        lab.run_for(MS);
        assert!(peer.take().is_empty());
        assert_eq!(lab.drops(), drops(&[("bad_checksum(icmp)", 1)]));
    }

    #[test]
    fn a_datagram_to_a_closed_port_gets_port_unreachable_quoting_its_header_and_8_bytes() {
        let (mut lab, h, peer) = lan();
        let hmac = lab.mac(h, 0);
        let sent = to_closed_port(b"is anyone there?");
        lab.send(&peer, eth(hmac, peer.mac, 0x0800, &sent));
        lab.run_for(MS);
        let got = peer.take();
        assert_eq!(got.len(), 1);
        let d = got[0].datagram();
        assert_eq!(checksum(&d[..20]), 0);
        assert_eq!(
            (d[9], &d[16..20]),
            (1, &PEER.octets()[..]),
            "ICMP to the sender"
        );
        // RFC 792: type 3 code 3, an unused word of zeros, then the
        // internet header and the first 64 bits of the datagram's data
        // (RFC 1122 §4.1.3.1: a host SHOULD send it).
        let want = icmp(3, 3, [0; 4], &sent[..28]);
        assert_eq!(&d[20..], &want[..]);
        assert_eq!(lab.drops(), drops(&[("no_socket", 1)]));
        assert_eq!(lab.w.obs.stats.icmp_errors_sent, 1);
    }

    #[test]
    fn errors_to_one_source_stop_after_a_burst_of_six_then_come_one_per_second() {
        // Linux's defaults: a destination's bucket holds XRLIM_BURST_FACTOR
        // = 6 errors and refills one per icmp_ratelimit = 1000 ms.
        let (mut lab, h, peer) = lan();
        let hmac = lab.mac(h, 0);
        let frame = eth(hmac, peer.mac, 0x0800, &to_closed_port(b"x"));
        for _ in 0..10 {
            lab.send(&peer, frame.clone());
        }
        lab.run_for(MS);
        assert_eq!(peer.take().len(), 6, "the burst");
        // The first error left at LATENCY; one more is allowed a second
        // after, not a nanosecond sooner.
        lab.run_until(Time::from_nanos(999_999_999));
        lab.send(&peer, frame.clone());
        lab.run_for(MS);
        assert_eq!(peer.take().len(), 0, "too soon");
        lab.run_until(Time::from_secs(1));
        lab.send(&peer, frame.clone());
        lab.send(&peer, frame);
        lab.run_for(MS);
        assert_eq!(peer.take().len(), 1, "one per second");
        let s = &lab.w.obs.stats;
        assert_eq!((s.icmp_errors_sent, s.icmp_errors_rate_limited), (7, 6));
        assert_eq!(lab.drops(), drops(&[("no_socket", 13)]));
    }
}
