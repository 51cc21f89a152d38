//! AODV on hand-built networks (two-machine LANs as point-to-point
//! links, a [`Lab`]): expanding ring search and its timing against the
//! closed form of RFC 3561 §6.4 and §10, duplicate suppression, link
//! breaks and RERRs, discovery failure.

use super::*;
use crate::machine::Protocols;
use crate::testing::{Lab, Tap, LATENCY};
use elvis_kernel::Time;
use std::time::Duration;

const LAT: u64 = LATENCY.as_nanos() as u64;

/// Builds `n` AODV machines in a chain, machine k joined to k + 1 by LAN
/// `l{k}`; node k has 10.0.(k−1).2 on its left link and 10.0.k.1 on its
/// right one (its first interface is its AODV address). A tap sits on
/// the first link when `tap`.
fn chain(n: u32, cfg: Config, tap: bool) -> (Lab, Vec<MachineId>, Option<Tap>) {
    let mut lab = Lab::new();
    let links: Vec<_> = (0..n - 1).map(|k| lab.lan(&format!("l{k}"))).collect();
    let ms: Vec<MachineId> = (0..n)
        .map(|k| {
            let m = lab.machine(&format!("n{k}"), Protocols::UDP);
            if k > 0 {
                lab.attach(
                    m,
                    links[k as usize - 1],
                    Ipv4Addr::new(10, 0, k as u8 - 1, 2),
                );
            }
            if k + 1 < n {
                lab.attach(m, links[k as usize], Ipv4Addr::new(10, 0, k as u8, 1));
            }
            m
        })
        .collect();
    let t = tap.then(|| lab.tap("tap", links[0], Ipv4Addr::new(10, 0, 0, 99)));
    for &m in &ms {
        enable(&mut lab.w, m, cfg);
    }
    (lab, ms, t)
}

fn addr(lab: &Lab, m: MachineId) -> Ipv4Addr {
    lab.w.machines[m as usize].ifaces[0].ip
}

fn no_hello() -> Config {
    Config {
        hello: false,
        gratuitous: false,
        rrep_ack: false,
        local_repair: false,
    }
}

/// The RREQs machine `src` sent that the tap saw: (time, IP TTL, the
/// message), read from the bytes by offsets (IP header 20 bytes, UDP 8).
fn rreqs_from(tap: &Tap, src: Ipv4Addr) -> Vec<(u64, u8, wire::Rreq)> {
    tap.take()
        .into_iter()
        .filter(|f| f.ethertype() == 0x0800)
        .filter_map(|f| {
            let d = f.datagram().to_vec();
            let from = Ipv4Addr::new(d[12], d[13], d[14], d[15]);
            let udp_dport = u16::from_be_bytes([d[22], d[23]]);
            let udp_sport = u16::from_be_bytes([d[20], d[21]]);
            if d[9] != 17 || from != src || udp_dport != 654 || udp_sport != 654 || d[28] != 1 {
                return None;
            }
            assert_eq!(&d[16..20], &[255, 255, 255, 255], "RREQs are broadcast");
            match wire::Msg::decode(&d[28..]) {
                Ok(wire::Msg::Rreq(r)) => Some((f.at.as_nanos(), d[8], r)),
                other => panic!("{other:?}"),
            }
        })
        .collect()
}

/// Sends one datagram from the chain's first node to node `d` and returns
/// when it arrived, stepping the clock to find the exact nanosecond after
/// checking it was not there a nanosecond before `expect`.
fn one_way(d: u32, expect: u64) -> (Lab, Vec<MachineId>, Tap) {
    let (mut lab, ms, tap) = chain(10, no_hello(), true);
    let tap = tap.unwrap();
    let sock = lab.bind_udp(ms[d as usize], 7);
    let to = addr(&lab, ms[d as usize]);
    lab.send_udp(ms[0], to, b"first");
    lab.run_until(Time::from_nanos(expect - 1));
    assert!(
        sock.rx.borrow_mut().pop().is_none(),
        "arrived before {expect} ns"
    );
    lab.run_until(Time::from_nanos(expect));
    let got = sock
        .rx
        .borrow_mut()
        .pop()
        .expect("arrived at the closed form");
    assert_eq!(got.0.to_vec(), b"first");
    (lab, ms, tap)
}

#[test]
fn the_expanding_ring_reaches_a_node_four_hops_away_with_the_third_rreq() {
    // RFC 3561 §6.4: TTL 1, then 3 (each waiting RING_TRAVERSAL_TIME =
    // 2·NODE_TRAVERSAL_TIME·(TTL + TIMEOUT_BUFFER): 240 ms, 400 ms), then
    // 5 reaches 4 hops; RREQ, RREP and the datagram cross 4 links each.
    let d = 4;
    let rings = ring_traversal_time(1) + ring_traversal_time(3);
    assert_eq!(rings, 640_000_000);
    let (lab, ms, tap) = one_way(d, rings + 3 * u64::from(d) * LAT);
    let ttls: Vec<(u64, u8)> = rreqs_from(&tap, addr(&lab, ms[0]))
        .iter()
        .map(|&(at, ttl, _)| (at, ttl))
        .collect();
    assert_eq!(
        ttls,
        [(LAT, 1), (240_000_000 + LAT, 3), (rings + LAT, 5)],
        "TTLs and send times of the originator's RREQs"
    );
    let n = node_ref(&lab.w, ms[0]).unwrap();
    let r = n
        .table
        .active(addr(&lab, ms[d as usize]), lab.w.now().as_nanos())
        .unwrap();
    assert_eq!(r.hops, 4, "the discovered route's hop count");
    assert_eq!(r.next_hop, addr(&lab, ms[1]));
    let back = node_ref(&lab.w, ms[d as usize])
        .unwrap()
        .table
        .get(addr(&lab, ms[0]))
        .unwrap()
        .hops;
    assert_eq!(back, 4, "the destination's reverse route");
    assert_eq!(
        lab.w.obs.aodv.discovery_ns,
        [rings + 2 * u64::from(d) * LAT]
    );
}

#[test]
fn past_ttl_threshold_the_rreq_goes_out_with_net_diameter() {
    // Nine hops: rings 1, 3, 5, 7 time out (240 + 400 + 560 + 720 ms),
    // then NET_DIAMETER (35) reaches the destination.
    let d = 9;
    let rings: u64 = [1, 3, 5, 7].into_iter().map(ring_traversal_time).sum();
    assert_eq!(rings, 1_920_000_000);
    let (lab, ms, tap) = one_way(d, rings + 3 * u64::from(d) * LAT);
    let rreqs = rreqs_from(&tap, addr(&lab, ms[0]));
    let ttls: Vec<u8> = rreqs.iter().map(|&(_, ttl, _)| ttl).collect();
    assert_eq!(ttls, [1, 3, 5, 7, 35]);
    // §6.1/§6.3: each RREQ has a new ID and a newer originator number,
    // and says the destination's number is unknown.
    for w in rreqs.windows(2) {
        assert_eq!(w[1].2.id, w[0].2.id + 1);
        assert!(table::newer(w[1].2.orig_seq, w[0].2.orig_seq));
    }
    assert!(rreqs
        .iter()
        .all(|(_, _, r)| r.unknown_seq && r.hop_count == 0));
    let n = node_ref(&lab.w, ms[0]).unwrap();
    let r = n.table.get(addr(&lab, ms[9])).unwrap();
    assert_eq!(r.hops, 9);
    assert_eq!(lab.w.obs.aodv.rreq_originated, 5);
}

#[test]
fn an_unanswered_discovery_backs_off_exponentially_then_drops_with_host_unreachable() {
    // Nobody has 10.9.9.9: TTL 1, 3, 5, 7, then 35 three times (the first
    // and RREQ_RETRIES = 2 retries) waiting NET_TRAVERSAL_TIME, twice it,
    // four times it (§6.3), then the datagram is dropped.
    let (mut lab, ms, tap) = chain(3, no_hello(), true);
    let tap = tap.unwrap();
    lab.send_udp(ms[0], Ipv4Addr::new(10, 9, 9, 9), b"lost");
    lab.run_for(Duration::from_secs(60));
    let rreqs = rreqs_from(&tap, addr(&lab, ms[0]));
    let ttls: Vec<u8> = rreqs.iter().map(|&(_, ttl, _)| ttl).collect();
    assert_eq!(ttls, [1, 3, 5, 7, 35, 35, 35]);
    let gaps: Vec<u64> = rreqs.windows(2).map(|w| w[1].0 - w[0].0).collect();
    let ms_ = 1_000_000;
    assert_eq!(
        gaps,
        [
            240 * ms_,
            400 * ms_,
            560 * ms_,
            720 * ms_,
            2800 * ms_,
            5600 * ms_
        ]
    );
    let s = &lab.w.obs.aodv;
    assert_eq!(
        (s.discoveries, s.discoveries_failed, s.dropped_no_route),
        (1, 1, 1)
    );
    assert!(
        lab.drops().contains(&("aodv(no_route)".to_string(), 1)),
        "{:?}",
        lab.drops()
    );
    // The drop came 11.2 s after the last RREQ, with an ICMP error to
    // the sender itself.
    assert_eq!(lab.w.obs.stats.icmp_errors_sent, 1);
    assert!(node_ref(&lab.w, ms[0]).unwrap().pending.is_empty());
}

#[test]
fn a_diamond_suppresses_the_duplicate_rreq_and_answers_once() {
    // a — b — d and a — c — d: d hears the RREQ through b and c and
    // answers the first only (§6.5, PATH_DISCOVERY_TIME records).
    let mut lab = Lab::new();
    let nets: Vec<_> = (0..4).map(|i| lab.lan(&format!("l{i}"))).collect();
    let ip = |i: u8, s: u8| Ipv4Addr::new(10, 0, i, s);
    let a = lab.machine("a", Protocols::UDP);
    let b = lab.machine("b", Protocols::UDP);
    let c = lab.machine("c", Protocols::UDP);
    let d = lab.machine("d", Protocols::UDP);
    lab.attach(a, nets[0], ip(0, 1));
    lab.attach(a, nets[1], ip(1, 1));
    lab.attach(b, nets[0], ip(0, 2));
    lab.attach(b, nets[2], ip(2, 1));
    lab.attach(c, nets[1], ip(1, 2));
    lab.attach(c, nets[3], ip(3, 1));
    lab.attach(d, nets[2], ip(2, 2));
    lab.attach(d, nets[3], ip(3, 2));
    for m in [a, b, c, d] {
        enable(&mut lab.w, m, no_hello());
    }
    let sock = lab.bind_udp(d, 7);
    lab.send_udp(a, ip(2, 2), b"x");
    lab.run_for(Duration::from_secs(2));
    assert!(sock.rx.borrow_mut().pop().is_some());
    assert!(sock.rx.borrow_mut().pop().is_none());
    let s = &lab.w.obs.aodv;
    // Ring 1 reaches b and c; ring 3 reaches d twice and comes back to a
    // twice (its own RREQ): three duplicates.
    assert_eq!(s.rreq_duplicates, 3);
    assert_eq!(
        s.rreq_forwarded, 2,
        "b and c forward the TTL-3 RREQ once each"
    );
    assert_eq!(s.sent[1], 2, "one RREP from d, forwarded once");
    let r = node_ref(&lab.w, a)
        .unwrap()
        .table
        .get(ip(2, 2))
        .cloned()
        .unwrap();
    assert_eq!(r.hops, 2);
}

/// s — a — {b, c} — d (a joined to b and c, both to d): the next hop of
/// a's route to d crashes; a misses its HELLOs (§6.9), sends a RERR to
/// its precursor s (§6.11), and s's next datagram starts a discovery that
/// finds the other branch.
#[test]
fn a_lost_next_hop_is_found_by_hellos_reported_by_rerr_and_routed_around() {
    let mut lab = Lab::new();
    let nets: Vec<_> = (0..5).map(|i| lab.lan(&format!("l{i}"))).collect();
    let ip = |i: u8, s: u8| Ipv4Addr::new(10, 0, i, s);
    let s = lab.machine("s", Protocols::UDP);
    let a = lab.machine("a", Protocols::UDP);
    let b = lab.machine("b", Protocols::UDP);
    let c = lab.machine("c", Protocols::UDP);
    let d = lab.machine("d", Protocols::UDP);
    lab.attach(s, nets[0], ip(0, 1));
    lab.attach(a, nets[0], ip(0, 2));
    lab.attach(a, nets[1], ip(1, 1));
    lab.attach(a, nets[2], ip(2, 1));
    lab.attach(b, nets[1], ip(1, 2));
    lab.attach(b, nets[3], ip(3, 1));
    lab.attach(c, nets[2], ip(2, 2));
    lab.attach(c, nets[4], ip(4, 1));
    lab.attach(d, nets[3], ip(3, 2));
    lab.attach(d, nets[4], ip(4, 2));
    for m in [s, a, b, c, d] {
        enable(&mut lab.w, m, Config::default());
    }
    let sock = lab.bind_udp(d, 7);
    let dst = ip(3, 2);
    let mut got = 0;
    let drain = |got: &mut u32| {
        while sock.rx.borrow_mut().pop().is_some() {
            *got += 1;
        }
    };
    // Data every 250 ms keeps the route active (§6.2).
    for _ in 0..12 {
        lab.send_udp(s, dst, b"p");
        lab.run_for(Duration::from_millis(250));
    }
    drain(&mut got);
    assert_eq!(got, 12);
    let now = lab.w.now().as_nanos();
    let via = node_ref(&lab.w, a)
        .unwrap()
        .table
        .active(dst, now)
        .unwrap()
        .next_hop;
    let (dead, other) = if via == ip(1, 2) { (b, c) } else { (c, b) };
    // s is the precursor of a's route to d.
    let pre = node_ref(&lab.w, a)
        .unwrap()
        .table
        .get(dst)
        .unwrap()
        .precursors
        .clone();
    assert_eq!(pre.as_slice(), &[ip(0, 1)]);
    lab.w.machines[dead as usize].crashed = true;
    let rerr_before = lab.w.obs.aodv.sent[2];
    for _ in 0..40 {
        lab.send_udp(s, dst, b"p");
        lab.run_for(Duration::from_millis(250));
    }
    drain(&mut got);
    let st = &lab.w.obs.aodv;
    assert!(st.link_breaks >= 1, "{st:?}");
    assert!(st.sent[2] > rerr_before, "a RERR went out");
    assert_eq!(
        st.discoveries, 2,
        "s discovered the route again after the RERR"
    );
    let now = lab.w.now().as_nanos();
    let r = node_ref(&lab.w, a)
        .unwrap()
        .table
        .active(dst, now)
        .cloned()
        .unwrap();
    let other_ip = lab.w.machines[other as usize].ifaces[0].ip;
    assert_eq!(r.next_hop, other_ip, "routed around the lost node");
    // What was lost: the datagrams sent between the crash and the RERR
    // (at most ALLOWED_HELLO_LOSS + 1 HELLO intervals of them), no more.
    let lost = 52 - got;
    assert!((1..=13).contains(&lost), "lost {lost}");
}

#[test]
fn an_intermediate_node_with_a_fresh_route_answers_and_tells_the_destination() {
    // n0 … n4 in a chain; x hangs off n2. Once n0 has found n4, n2 holds
    // a fresh route to n4: x's first RREQ (TTL 1) reaches only n2, which
    // answers (§6.6.2) and, the G flag being set, sends the gratuitous
    // RREP to n4 (§6.6.3).
    let cfg = Config {
        gratuitous: true,
        ..no_hello()
    };
    let (mut lab, ms, _) = chain(5, cfg, false);
    let lx = lab.lan("lx");
    let x = lab.machine("x", Protocols::UDP);
    lab.attach(x, lx, Ipv4Addr::new(10, 9, 0, 1));
    lab.attach(ms[2], lx, Ipv4Addr::new(10, 9, 0, 2));
    enable(&mut lab.w, x, cfg);
    let sock = lab.bind_udp(ms[4], 7);
    let n4 = addr(&lab, ms[4]);
    lab.send_udp(ms[0], n4, b"from n0");
    lab.run_until(Time::from_nanos(1_000_000_000));
    assert!(sock.rx.borrow_mut().pop().is_some());
    let rreqs = lab.w.obs.aodv.rreq_originated;
    // One hop out and back for the RREQ and RREP, three for the data.
    let t1 = 1_000_000_000;
    lab.send_udp(x, n4, b"from x");
    lab.run_until(Time::from_nanos(t1 + 5 * LAT - 1));
    assert!(sock.rx.borrow_mut().pop().is_none());
    lab.run_until(Time::from_nanos(t1 + 5 * LAT));
    assert_eq!(sock.rx.borrow_mut().pop().unwrap().0.to_vec(), b"from x");
    assert_eq!(lab.w.obs.aodv.rreq_originated, rreqs + 1, "one ring");
    let now = lab.w.now().as_nanos();
    let xr = node_ref(&lab.w, x)
        .unwrap()
        .table
        .active(n4, now)
        .cloned()
        .unwrap();
    assert_eq!((xr.hops, xr.next_hop), (3, Ipv4Addr::new(10, 9, 0, 2)));
    // The gratuitous RREP gave n4 a route to x through n3.
    let back = node_ref(&lab.w, ms[4])
        .unwrap()
        .table
        .active(Ipv4Addr::new(10, 9, 0, 1), now)
        .cloned();
    let back = back.expect("n4 learnt x from the gratuitous RREP");
    assert_eq!((back.hops, back.next_hop), (3, Ipv4Addr::new(10, 0, 3, 1)));
}

#[test]
fn a_node_without_a_route_for_transit_data_sends_a_rerr_and_the_source_finds_a_new_route() {
    // §6.11 case ii: n1 lost its table; n0's next datagram reaches n1,
    // which drops it and broadcasts a RERR for n2; n0 invalidates its
    // route (sequence number + 1) and its next datagram finds a new one.
    let (mut lab, ms, _) = chain(3, no_hello(), false);
    let sock = lab.bind_udp(ms[2], 7);
    let n2 = addr(&lab, ms[2]);
    lab.send_udp(ms[0], n2, b"1");
    lab.run_for(Duration::from_secs(1));
    assert!(sock.rx.borrow_mut().pop().is_some());
    let seq = node_ref(&lab.w, ms[0]).unwrap().table.get(n2).unwrap().seq;
    node(&mut lab.w, ms[1]).unwrap().table = table::Table::default();
    lab.send_udp(ms[0], n2, b"2");
    lab.run_for(Duration::from_millis(10));
    assert!(sock.rx.borrow_mut().pop().is_none());
    assert!(
        lab.drops().contains(&("aodv(no_route)".to_string(), 1)),
        "{:?}",
        lab.drops()
    );
    assert_eq!(lab.w.obs.aodv.sent[2], 2, "a RERR on each of n1's links");
    let r = node_ref(&lab.w, ms[0])
        .unwrap()
        .table
        .get(n2)
        .cloned()
        .unwrap();
    assert!(!r.valid);
    assert_eq!(r.seq, seq.wrapping_add(1));
    lab.send_udp(ms[0], n2, b"3");
    lab.run_for(Duration::from_secs(1));
    assert_eq!(sock.rx.borrow_mut().pop().unwrap().0.to_vec(), b"3");
    assert_eq!(lab.w.obs.aodv.discoveries, 2);
    // The new RREQ asked for a number at least the one n0 keeps (§6.3),
    // and n2 answered with it (§6.6.1).
    let now = lab.w.now().as_nanos();
    let r = node_ref(&lab.w, ms[0])
        .unwrap()
        .table
        .active(n2, now)
        .cloned()
        .unwrap();
    assert!(!table::newer(seq.wrapping_add(1), r.seq));
}

#[test]
fn rreqs_past_the_rate_limit_wait_for_the_next_second_and_keep_their_ring() {
    // §6.3: at most RREQ_RATELIMIT = 10 RREQs a second. Twelve unknown
    // destinations at once: ten RREQs go at 0, two wait for 1 s; every
    // discovery still walks its whole ring (TTL 1, 3, 5, 7, 35 × 3), and
    // no second carries more than ten.
    let (mut lab, ms, tap) = chain(3, no_hello(), true);
    let tap = tap.unwrap();
    for k in 1..=12 {
        lab.send_udp(ms[0], Ipv4Addr::new(10, 9, 9, k), b"lost");
    }
    lab.run_for(Duration::from_secs(120));
    let rreqs = rreqs_from(&tap, addr(&lab, ms[0]));
    let second = 1_000_000_000;
    let mut per_second = BTreeMap::new();
    for &(at, _, _) in &rreqs {
        *per_second.entry((at - LAT) / second).or_insert(0) += 1;
    }
    assert!(per_second.values().all(|&n| n <= 10), "{per_second:?}");
    let first: Vec<u64> = (1..=12)
        .map(|k| {
            let dst = Ipv4Addr::new(10, 9, 9, k);
            let mine: Vec<_> = rreqs.iter().filter(|(_, _, r)| r.dst == dst).collect();
            let ttls: Vec<u8> = mine.iter().map(|&&(_, ttl, _)| ttl).collect();
            assert_eq!(ttls, [1, 3, 5, 7, 35, 35, 35], "{dst}");
            mine[0].0 - LAT
        })
        .collect();
    assert_eq!(&first[..10], &[0; 10]);
    assert_eq!(&first[10..], &[second; 2]);
    let s = &lab.w.obs.aodv;
    assert_eq!((s.rreq_originated, s.discoveries_failed), (84, 12));
    assert!(s.rreq_rate_limited >= 2, "{}", s.rreq_rate_limited);
}

#[test]
fn rerrs_past_the_rate_limit_are_not_sent() {
    // §6.11: at most RERR_RATELIMIT = 10 RERRs a second; the middle node
    // of a chain broadcasts each on its two links.
    let (mut lab, ms, _) = chain(3, no_hello(), false);
    for k in 1..=12 {
        maintenance::no_route(&mut lab.w, ms[1], Ipv4Addr::new(10, 9, 9, k));
    }
    let s = &lab.w.obs.aodv;
    assert_eq!((s.sent[2], s.rerr_rate_limited), (20, 2));
    // A second later the limit allows ten again.
    lab.run_for(Duration::from_secs(1));
    maintenance::no_route(&mut lab.w, ms[1], Ipv4Addr::new(10, 9, 9, 13));
    assert_eq!(lab.w.obs.aodv.sent[2], 22);
}

#[test]
fn a_rate_window_admits_limit_per_second_and_names_the_next_second() {
    let mut r = RateWindow::default();
    let s = 1_000_000_000;
    for _ in 0..3 {
        assert_eq!(r.take(5, 3), Ok(()));
    }
    assert_eq!(r.take(s - 1, 3), Err(s));
    assert_eq!(r.take(s, 3), Ok(()));
    assert_eq!(r.take(7 * s + 1, 3), Ok(()));
}

fn rrep_ack() -> Config {
    Config {
        rrep_ack: true,
        ..no_hello()
    }
}

#[test]
fn with_rrep_ack_every_unicast_rrep_is_acknowledged_by_its_next_hop() {
    // RFC 3561 §6.8, §5.4: the destination's RREP (A flag) to n1, and n1's
    // to n0, each answered by a RREP-ACK; nothing waits afterwards and
    // the discovery takes what it takes without them (§6.4's closed form).
    let (mut lab, ms, _) = chain(3, rrep_ack(), false);
    let sock = lab.bind_udp(ms[2], 7);
    lab.send_udp(ms[0], addr(&lab, ms[2]), b"x");
    lab.run_for(Duration::from_secs(2));
    assert!(sock.rx.borrow_mut().pop().is_some());
    let s = &lab.w.obs.aodv;
    assert_eq!(s.sent[1], 2, "two unicast RREPs");
    assert_eq!(s.sent[3], 2, "two RREP-ACKs");
    assert_eq!((s.rrep_ack_timeouts, s.rreq_blacklisted), (0, 0));
    assert_eq!(
        s.discovery_ns,
        [ring_traversal_time(1) + 2 * 2 * LAT],
        "TTL 1 finds nobody, TTL 3 reaches n2 two hops away"
    );
    for &m in &ms {
        assert!(node_ref(&lab.w, m).unwrap().ack_wait.is_empty());
    }
}

#[test]
fn a_rrep_never_acknowledged_blacklists_the_neighbour_until_blacklist_timeout() {
    // n0 looks for n1 (one hop). n1's first RREP is lost (n0 is down while
    // it arrives), so no RREP-ACK comes within NEXT_HOP_WAIT and n1
    // blacklists n0 for BLACKLIST_TIMEOUT = 5.6 s (§6.8, §10). n0's RREQs
    // at 240, 640, 1,200, 1,920 and 4,720 ms are ignored; the one at
    // 10,320 ms (the second retry at NET_DIAMETER, §6.3) is answered.
    assert_eq!(NEXT_HOP_WAIT, 50_000_000);
    assert_eq!(BLACKLIST_TIMEOUT, 5_600_000_000);
    let (mut lab, ms, _) = chain(2, rrep_ack(), false);
    let sock = lab.bind_udp(ms[1], 7);
    lab.send_udp(ms[0], addr(&lab, ms[1]), b"x");
    lab.run_until(Time::from_nanos(LAT));
    assert_eq!(node_ref(&lab.w, ms[1]).unwrap().ack_wait.len(), 1);
    lab.w.machines[ms[0] as usize].crashed = true;
    lab.run_until(Time::from_nanos(2 * LAT + 1));
    lab.w.machines[ms[0] as usize].crashed = false;
    lab.run_until(Time::from_nanos(LAT + NEXT_HOP_WAIT));
    assert_eq!(lab.w.obs.aodv.rrep_ack_timeouts, 1);
    lab.run_for(Duration::from_secs(12));
    assert!(sock.rx.borrow_mut().pop().is_some(), "delivered in the end");
    let s = &lab.w.obs.aodv;
    assert_eq!(s.rreq_blacklisted, 5);
    assert_eq!(s.rrep_ack_timeouts, 1, "the answered RREP was acknowledged");
    assert_eq!(s.discovery_ns, [10_320_000_000 + 2 * LAT]);
}

#[test]
fn without_rrep_ack_a_lost_rrep_blacklists_nobody() {
    let (mut lab, ms, _) = chain(2, no_hello(), false);
    lab.send_udp(ms[0], addr(&lab, ms[1]), b"x");
    lab.run_until(Time::from_nanos(LAT));
    lab.w.machines[ms[0] as usize].crashed = true;
    lab.run_until(Time::from_nanos(2 * LAT + 1));
    lab.w.machines[ms[0] as usize].crashed = false;
    lab.run_for(Duration::from_secs(2));
    let s = &lab.w.obs.aodv;
    assert_eq!(
        (s.rrep_ack_timeouts, s.rreq_blacklisted, s.sent[3]),
        (0, 0, 0)
    );
    assert_eq!(
        s.discovery_ns,
        [ring_traversal_time(1) + 2 * LAT],
        "the next ring's RREQ is answered"
    );
}

/// Machines `n0`… joined by one LAN per pair in `links` (10.0.i.1 on the
/// first end, 10.0.i.2 on the second); returns them and each one's AODV
/// address (its first interface's).
fn mesh(n: usize, links: &[(usize, usize)], cfg: Config) -> (Lab, Vec<MachineId>, Vec<Ipv4Addr>) {
    let mut lab = Lab::new();
    let ms: Vec<MachineId> = (0..n)
        .map(|k| lab.machine(&format!("n{k}"), Protocols::UDP))
        .collect();
    for (i, &(a, b)) in links.iter().enumerate() {
        let net = lab.lan(&format!("l{i}"));
        lab.attach(ms[a], net, Ipv4Addr::new(10, 0, i as u8, 1));
        lab.attach(ms[b], net, Ipv4Addr::new(10, 0, i as u8, 2));
    }
    for &m in &ms {
        enable(&mut lab.w, m, cfg);
    }
    let addrs = ms.iter().map(|&m| addr(&lab, m)).collect();
    (lab, ms, addrs)
}

/// Sends a datagram from `s` to `to` (port 7) every 250 ms, `count`
/// times; returns how many `sock` received.
fn stream(
    lab: &mut Lab,
    sock: &crate::endpoint::UdpShared,
    s: MachineId,
    to: Ipv4Addr,
    count: u32,
) -> u32 {
    let mut got = 0;
    for _ in 0..count {
        lab.send_udp(s, to, b"p");
        lab.run_for(Duration::from_millis(250));
        while sock.rx.borrow_mut().pop().is_some() {
            got += 1;
        }
    }
    got
}

fn local_repair() -> Config {
    Config {
        local_repair: true,
        ..Config::default()
    }
}

#[test]
fn a_local_repair_over_an_equal_path_is_invisible_to_the_source() {
    // s=n0 – a=n1, then n1 – n2 – n4 and n1 – n3 – n4 (d=n4). The next hop
    // of a's route dies; a finds d again with one RREQ of TTL 2 + 2 (RFC
    // 3561 §6.12) and reports nothing: s keeps its route, no RERR.
    let links = [(0, 1), (1, 2), (1, 3), (2, 4), (3, 4)];
    let (mut lab, ms, ip) = mesh(5, &links, local_repair());
    let sock = lab.bind_udp(ms[4], 7);
    let got = stream(&mut lab, &sock, ms[0], ip[4], 12);
    assert_eq!(got, 12);
    let now = lab.w.now().as_nanos();
    let via = node_ref(&lab.w, ms[1])
        .unwrap()
        .table
        .active(ip[4], now)
        .unwrap()
        .next_hop;
    let (dead, other) = if via == Ipv4Addr::new(10, 0, 1, 2) {
        (2, 3)
    } else {
        (3, 2)
    };
    lab.w.machines[ms[dead] as usize].crashed = true;
    let got = stream(&mut lab, &sock, ms[0], ip[4], 40);
    let s = &lab.w.obs.aodv;
    assert_eq!(
        (s.local_repairs, s.local_repairs_failed, s.rerr_no_delete),
        (1, 0, 0),
        "{s:?}"
    );
    assert_eq!(s.discoveries, 1, "the source never looked again");
    assert_eq!(s.sent[2], 0, "no RERR");
    let now = lab.w.now().as_nanos();
    let r = node_ref(&lab.w, ms[1])
        .unwrap()
        .table
        .active(ip[4], now)
        .cloned()
        .unwrap();
    assert_eq!((r.next_hop, r.hops), (ip[other], 2));
    assert_eq!(r.precursors.as_slice(), &[ip[0]], "the precursor is kept");
    // Lost: what was sent before HELLOs found the break (at most
    // ALLOWED_HELLO_LOSS + 1 intervals of datagrams), no more.
    assert!((28..40).contains(&got), "{got} of 40");
}

#[test]
fn a_local_repair_that_finds_a_longer_route_sends_a_rerr_with_the_n_flag() {
    // n1's route to n4 was n1 – n2 – n4 (2 hops); with n2 gone the repair
    // finds n1 – n3 – n5 – n4 (3 hops): a RERR with N goes to n0, whose
    // route stays (§6.12, §6.11: N means do not delete).
    let links = [(0, 1), (1, 2), (2, 4), (1, 3), (3, 5), (5, 4)];
    let (mut lab, ms, ip) = mesh(6, &links, local_repair());
    let sock = lab.bind_udp(ms[4], 7);
    assert_eq!(stream(&mut lab, &sock, ms[0], ip[4], 12), 12);
    lab.w.machines[ms[2] as usize].crashed = true;
    let got = stream(&mut lab, &sock, ms[0], ip[4], 40);
    assert!(got >= 28, "{got}");
    let s = &lab.w.obs.aodv;
    assert_eq!(
        (s.local_repairs, s.local_repairs_failed, s.rerr_no_delete),
        (1, 0, 1),
        "{s:?}"
    );
    assert_eq!(s.discoveries, 1);
    assert_eq!(s.received[2], 1, "n0 got the RERR");
    let now = lab.w.now().as_nanos();
    let r = node_ref(&lab.w, ms[0])
        .unwrap()
        .table
        .active(ip[4], now)
        .cloned()
        .unwrap();
    assert_eq!(r.next_hop, ip[1], "n0's route is still through n1");
    let a = node_ref(&lab.w, ms[1])
        .unwrap()
        .table
        .active(ip[4], now)
        .cloned()
        .unwrap();
    assert_eq!(a.hops, 3);
}

#[test]
fn a_failed_local_repair_reports_the_break_after_the_rings_traversal_time() {
    // n0 – n1 – n2 – n3: n2 dies and nothing else leads to n3. n1's RREQ
    // (TTL 4) gets no answer in RING_TRAVERSAL_TIME(4) = 480 ms; then n1
    // sends n0 the RERR an unrepaired break would have sent.
    let links = [(0, 1), (1, 2), (2, 3)];
    let (mut lab, ms, ip) = mesh(4, &links, local_repair());
    let sock = lab.bind_udp(ms[3], 7);
    assert_eq!(stream(&mut lab, &sock, ms[0], ip[3], 12), 12);
    lab.w.machines[ms[2] as usize].crashed = true;
    // Nothing sent meanwhile: the break is found by HELLOs alone.
    let mut when = None;
    for _ in 0..600 {
        lab.run_for(Duration::from_millis(10));
        if lab.w.obs.aodv.local_repairs == 1 && when.is_none() {
            when = Some(lab.w.now().as_nanos());
        }
        if lab.w.obs.aodv.received[2] > 0 {
            break;
        }
    }
    let started = when.expect("a repair started");
    let s = &lab.w.obs.aodv;
    assert_eq!((s.local_repairs, s.local_repairs_failed), (1, 1), "{s:?}");
    let reported = lab.w.now().as_nanos();
    // Both instants are seen at 10 ms steps: the RERR left
    // RING_TRAVERSAL_TIME(4) after the repair's RREQ, give or take a step.
    let (ring, step) = (ring_traversal_time(4), 10_000_000);
    assert_eq!(ring, 480_000_000);
    let took = reported - started;
    assert!(
        ring - step < took && took < ring + step + 2 * LAT,
        "RERR {took} ns after the repair began"
    );
    let now = lab.w.now().as_nanos();
    assert!(
        node_ref(&lab.w, ms[0])
            .unwrap()
            .table
            .active(ip[3], now)
            .is_none(),
        "n0's route is gone"
    );
}

#[test]
fn without_local_repair_the_break_is_reported_at_once() {
    let links = [(0, 1), (1, 2), (2, 4), (1, 3), (3, 5), (5, 4)];
    let (mut lab, ms, ip) = mesh(6, &links, Config::default());
    let sock = lab.bind_udp(ms[4], 7);
    assert_eq!(stream(&mut lab, &sock, ms[0], ip[4], 12), 12);
    lab.w.machines[ms[2] as usize].crashed = true;
    stream(&mut lab, &sock, ms[0], ip[4], 40);
    let s = &lab.w.obs.aodv;
    assert_eq!((s.local_repairs, s.rerr_no_delete), (0, 0));
    assert_eq!(s.discoveries, 2, "n0 looked again after the RERR");
}
