//! The SYN backlog and SYN cookies on a host, driven by hand-built
//! segments from a tap (`crate::testing`).

use crate::endpoint::SocketSlot;
use crate::machine::{MachineId, Protocols};
use crate::tcp::{listen, SockOpts};
use crate::testing::{checksum, eth, host_and_tap, Ip, Lab, Tap, HOST, MS, PEER};
use std::net::{Ipv4Addr, SocketAddrV4};

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;

/// A TCP segment from `src`:`sport` to the host's port 80 (MSS option
/// 1460 on a SYN), checksummed by hand.
fn segment(src: Ipv4Addr, sport: u16, seq: u32, ack: u32, flags: u8) -> Vec<u8> {
    let syn = flags & SYN != 0;
    let mut t = vec![0u8; if syn { 24 } else { 20 }];
    t[0..2].copy_from_slice(&sport.to_be_bytes());
    t[2..4].copy_from_slice(&80u16.to_be_bytes());
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[8..12].copy_from_slice(&ack.to_be_bytes());
    t[12] = ((t.len() / 4) as u8) << 4;
    t[13] = flags;
    t[14..16].copy_from_slice(&8192u16.to_be_bytes());
    if syn {
        t[20..24].copy_from_slice(&[2, 4, 0x05, 0xb4]);
    }
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&src.octets());
    pseudo.extend_from_slice(&HOST.octets());
    pseudo.extend_from_slice(&[0, 6]);
    pseudo.extend_from_slice(&(t.len() as u16).to_be_bytes());
    pseudo.extend_from_slice(&t);
    let c = checksum(&pseudo);
    t[16..18].copy_from_slice(&c.to_be_bytes());
    Ip::new(src, HOST, 6).datagram(&t)
}

/// Sends `seg` from the tap to the host and runs a millisecond.
fn send(lab: &mut Lab, h: MachineId, tap: &Tap, seg: Vec<u8>) {
    let frame = eth(lab.mac(h, 0), tap.mac, 0x0800, &seg);
    lab.send(tap, frame);
    lab.run_for(MS);
}

/// The TCP segments the tap received: (seq, ack, flags, header length).
fn replies(tap: &Tap) -> Vec<(u32, u32, u8, usize)> {
    let word = |b: &[u8], i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    tap.take()
        .iter()
        .filter(|f| f.ethertype() == 0x0800)
        .map(|f| {
            let t = &f.datagram()[20..];
            (word(t, 4), word(t, 8), t[13], usize::from(t[12] >> 4) * 4)
        })
        .collect()
}

/// A host listening on port 80 with `backlog`, and a tap.
fn server(backlog: usize) -> (Lab, MachineId, Tap, u32) {
    let (mut lab, h, tap) = host_and_tap(Protocols::UDP_TCP);
    let l = listen(&mut lab.w, h, 80, backlog, SockOpts::default()).unwrap();
    (lab, h, tap, l)
}

/// (ready, embryonic) of listener `l`.
fn queues(lab: &Lab, h: MachineId, l: u32) -> (usize, usize) {
    match &lab.w.machines[h as usize].sockets[l as usize] {
        SocketSlot::TcpListener(x) => (x.ready.len(), x.embryonic),
        _ => panic!("not a listener"),
    }
}

#[test]
fn syns_beyond_the_backlog_get_stateless_cookie_syn_acks() {
    let (mut lab, h, tap, l) = server(2);
    for port in 1000..1003 {
        send(&mut lab, h, &tap, segment(PEER, port, 7, 0, SYN));
    }
    let r = replies(&tap);
    assert_eq!(r.len(), 3);
    assert!(r
        .iter()
        .all(|&(_, ack, flags, _)| ack == 8 && flags == SYN | ACK));
    // The third's sequence number is the cookie: it checks, with the
    // client's MSS (1460).
    let key = super::Key::new(lab.w.config.seed, h);
    let t = super::Tuple {
        local: SocketAddrV4::new(HOST, 80),
        remote: SocketAddrV4::new(PEER, 1002),
    };
    let now = super::counter(lab.w.now());
    assert_eq!(super::check(&key, &t, r[2].0, 7, now), Some(1460));
    assert_eq!(super::check(&key, &t, r[1].0, 7, now), None, "not a cookie");
    assert_eq!(queues(&lab, h, l), (0, 2), "no state for the third");
    assert_eq!(lab.w.obs.stats.syn_cookies_sent, 1);
}

#[test]
fn the_ack_of_a_cookie_makes_an_established_connection_and_a_wrong_one_is_dropped() {
    let (mut lab, h, tap, l) = server(1);
    send(&mut lab, h, &tap, segment(PEER, 1000, 7, 0, SYN));
    send(&mut lab, h, &tap, segment(PEER, 1001, 500, 0, SYN));
    let cookie = replies(&tap)[1].0;
    // A wrong cookie: dropped, no RST, no connection.
    send(
        &mut lab,
        h,
        &tap,
        segment(PEER, 1001, 501, cookie.wrapping_add(2), ACK),
    );
    assert!(replies(&tap).is_empty());
    assert_eq!(lab.drops(), crate::testing::drops(&[("bad_syn_cookie", 1)]));
    // The right one: a connection, ready to accept.
    send(
        &mut lab,
        h,
        &tap,
        segment(PEER, 1001, 501, cookie.wrapping_add(1), ACK),
    );
    assert_eq!(queues(&lab, h, l), (1, 1));
    assert_eq!(lab.w.obs.stats.syn_cookies_validated, 1);
}

#[test]
fn without_cookies_syns_beyond_the_backlog_are_dropped() {
    let (mut lab, h, tap, l) = server(1);
    let g = lab.w.machines[h as usize].group as usize;
    lab.w.groups[g].syn.cookies = false;
    send(&mut lab, h, &tap, segment(PEER, 1000, 7, 0, SYN));
    send(&mut lab, h, &tap, segment(PEER, 1001, 7, 0, SYN));
    assert_eq!(replies(&tap).len(), 1);
    assert_eq!(
        lab.drops(),
        crate::testing::drops(&[("syn_backlog_full", 1)])
    );
    assert_eq!(queues(&lab, h, l), (0, 1));
}

#[test]
fn a_syn_from_a_source_with_no_route_back_takes_no_backlog_place() {
    let (mut lab, h, tap, l) = server(1);
    send(
        &mut lab,
        h,
        &tap,
        segment(Ipv4Addr::new(192, 0, 2, 9), 1000, 7, 0, SYN),
    );
    assert!(replies(&tap).is_empty());
    assert_eq!(lab.drops(), crate::testing::drops(&[("no_route", 1)]));
    assert_eq!(queues(&lab, h, l), (0, 0));
}
