//! DHCP against a hand-driven server or client: a tap plays the other
//! side, so every timer can be checked to the nanosecond against RFC 2131.

use super::client::State;
use super::{build, client, relay, server, Fields, Kind, Parsed};
use crate::machine::{MachineId, Protocols};
use crate::testing::{eth, udp, Captured, Ip, Lab, Tap, BROADCAST, LATENCY, MS, PEER};
use elvis_kernel::Time;
use std::net::Ipv4Addr;

const SEC: u64 = 1_000_000_000;
const OFFERED: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 50);

/// A DHCP message a tap captured: IPv4 source and destination, UDP ports
/// and the message, read by hand up to the UDP payload.
struct Seen {
    at: Time,
    dst_mac: [u8; 6],
    src: Ipv4Addr,
    dst: Ipv4Addr,
    ports: (u16, u16),
    msg: Parsed,
}

fn seen(f: &Captured) -> Seen {
    let ip = f.datagram();
    assert_eq!(ip[9], 17, "not UDP");
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let u = &ip[ihl..];
    Seen {
        at: f.at,
        dst_mac: f.bytes[0..6].try_into().unwrap(),
        src: Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]),
        dst: Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]),
        ports: (
            u16::from_be_bytes([u[0], u[1]]),
            u16::from_be_bytes([u[2], u[3]]),
        ),
        msg: Parsed::parse(&u[8..]).expect("a DHCP message"),
    }
}

/// The DHCP messages the tap got since last asked.
fn dhcp(tap: &Tap) -> Vec<Seen> {
    tap.take().iter().map(seen).collect()
}

/// A client `c` (no address) and a tap at [`PEER`] playing the server, on
/// one LAN; the client's first DISCOVER goes out at 1 s.
fn client_and_server() -> (Lab, MachineId, Tap) {
    let mut lab = Lab::new();
    let net = lab.lan("lan");
    let c = lab.unconfigured("c", Protocols::UDP, net);
    let tap = lab.tap("server", net, PEER);
    client::enable(&mut lab.w, c, Some(Time::from_secs(1)));
    (lab, c, tap)
}

/// The tap answers with `kind` for `to` (a message it saw), broadcast as
/// to an unconfigured client unless `unicast` names the client's address.
fn answer(
    lab: &mut Lab,
    tap: &Tap,
    to: &Parsed,
    kind: Kind,
    lease_s: u32,
    unicast: Option<(Ipv4Addr, [u8; 6])>,
) {
    let f = Fields {
        op: 2,
        xid: to.xid,
        chaddr: to.chaddr,
        yiaddr: if kind == Kind::Nak {
            Ipv4Addr::UNSPECIFIED
        } else {
            OFFERED
        },
        ciaddr: to.ciaddr,
        kind: Some(kind),
        server_id: Some(PEER),
        lease_s: (kind != Kind::Nak).then_some(lease_s),
        broadcast: unicast.is_none(),
        ..Fields::default()
    };
    let (dst, mac) = unicast.unwrap_or((Ipv4Addr::BROADCAST, BROADCAST));
    let dgram = Ip::new(PEER, dst, 17).datagram(&udp(PEER, dst, 67, 68, &build(&f)));
    lab.send(tap, eth(mac, tap.mac, 0x0800, &dgram));
}

/// Runs the client through DISCOVER, OFFER, REQUEST, ACK of a lease of
/// `lease_s`; returns when its REQUEST was sent.
fn bind(lab: &mut Lab, c: MachineId, tap: &Tap, lease_s: u32) -> Time {
    lab.run_until(Time::from_secs(1) + MS);
    let d = dhcp(tap);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].msg.kind, Some(Kind::Discover));
    answer(lab, tap, &d[0].msg, Kind::Offer, lease_s, None);
    lab.run_for(MS);
    let r = dhcp(tap);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].msg.kind, Some(Kind::Request));
    answer(lab, tap, &r[0].msg, Kind::Ack, lease_s, None);
    lab.run_for(MS);
    assert_eq!(lab.w.machines[c as usize].ifaces[0].ip, OFFERED);
    Time::from_nanos(r[0].at.as_nanos() - LATENCY.as_nanos() as u64)
}

#[test]
fn discover_offer_request_ack_go_as_rfc_2131_section_4_4_1_says() {
    let (mut lab, c, tap) = client_and_server();
    lab.run_until(Time::from_secs(1) + MS);
    let d = dhcp(&tap);
    assert_eq!(d.len(), 1);
    let d = &d[0];
    assert_eq!(d.at, Time::from_secs(1) + LATENCY, "sent at its start");
    assert_eq!((d.src, d.dst), (Ipv4Addr::UNSPECIFIED, Ipv4Addr::BROADCAST));
    assert_eq!((d.dst_mac, d.ports), (BROADCAST, (68, 67)));
    assert_eq!(d.msg.op, 1);
    assert!(
        d.msg.broadcast,
        "an unconfigured client asks for broadcast replies"
    );
    assert_eq!(d.msg.chaddr, lab.mac(c, 0));
    answer(&mut lab, &tap, &d.msg, Kind::Offer, 1000, None);
    lab.run_for(MS);
    let r = dhcp(&tap);
    assert_eq!(r.len(), 1);
    let r = &r[0].msg;
    assert_eq!((r.kind, r.xid), (Some(Kind::Request), d.msg.xid));
    assert_eq!((r.requested, r.server_id), (Some(OFFERED), Some(PEER)));
    assert_eq!(
        r.ciaddr,
        Ipv4Addr::UNSPECIFIED,
        "ciaddr stays 0 in SELECTING"
    );
    // Nothing may be sent unicast before the ACK.
    assert!(crate::ipv4::route(&lab.w, c, PEER).is_err());
    answer(&mut lab, &tap, r, Kind::Ack, 1000, None);
    lab.run_for(MS);
    let m = &lab.w.machines[c as usize];
    assert_eq!(m.ifaces[0].ip, OFFERED);
    let net = &lab.w.fabric.networks[m.ifaces[0].net as usize];
    assert_eq!(
        net.ip_to_port.get(&u32::from(OFFERED)),
        Some(&m.ifaces[0].port)
    );
    assert!(crate::ipv4::route(&lab.w, c, PEER).is_ok());
    assert_eq!(client::state(&lab.w, c).unwrap().state, State::Bound);
}

/// T1 = lease/2, T2 = lease × 7/8, expiry = lease, all from the instant
/// the REQUEST went out (§4.4.1, §4.4.5); unanswered REQUESTs are sent
/// again after half the time left (to T2 while RENEWING, to the end while
/// REBINDING), at least 60 s apart, never past that instant.
#[test]
fn an_unanswered_client_renews_at_t1_rebinds_at_t2_and_loses_the_address_at_expiry_to_the_nanosecond(
) {
    let (mut lab, c, tap) = client_and_server();
    let t0 = bind(&mut lab, c, &tap, 1000).as_nanos();
    let sock = lab.bind_udp(c, 5000);
    let at = |s: f64| Time::from_nanos(t0 + (s * SEC as f64) as u64);
    // Just before T1: nothing.
    lab.run_until(Time::from_nanos(at(500.0).as_nanos() - 1));
    assert!(dhcp(&tap).is_empty());
    // RENEWING: unicast to the server at 500, 687.5, 781.25, 841.25 s.
    lab.run_until(at(870.0));
    let renew = dhcp(&tap);
    let times: Vec<Time> = renew.iter().map(|s| s.at).collect();
    let want: Vec<Time> = [500.0, 687.5, 781.25, 841.25]
        .iter()
        .map(|&s| at(s) + LATENCY)
        .collect();
    assert_eq!(times, want);
    for s in &renew {
        assert_eq!((s.src, s.dst, s.dst_mac), (OFFERED, PEER, tap.mac));
        assert_eq!((s.msg.kind, s.msg.ciaddr), (Some(Kind::Request), OFFERED));
        assert_eq!(s.msg.requested, None, "option 50 only in SELECTING");
    }
    // REBINDING: broadcast at T2 = 875 s, then 937.5 and 997.5 s.
    lab.run_until(at(999.0));
    let rebind = dhcp(&tap);
    let times: Vec<Time> = rebind.iter().map(|s| s.at).collect();
    let want: Vec<Time> = [875.0, 937.5, 997.5]
        .iter()
        .map(|&s| at(s) + LATENCY)
        .collect();
    assert_eq!(times, want);
    for s in &rebind {
        assert_eq!(
            (s.src, s.dst, s.dst_mac),
            (OFFERED, Ipv4Addr::BROADCAST, BROADCAST)
        );
        assert_eq!(s.msg.ciaddr, OFFERED);
    }
    assert_eq!(lab.w.machines[c as usize].ifaces[0].ip, OFFERED);
    // Expiry at exactly 1000 s: the address goes, a DISCOVER follows.
    lab.run_until(Time::from_nanos(at(1000.0).as_nanos() - 1));
    assert_eq!(lab.w.machines[c as usize].ifaces[0].ip, OFFERED);
    lab.run_until(at(1000.0));
    assert_eq!(
        lab.w.machines[c as usize].ifaces[0].ip,
        Ipv4Addr::UNSPECIFIED
    );
    let net = lab.w.machines[c as usize].ifaces[0].net;
    assert!(!lab.w.fabric.networks[net as usize]
        .ip_to_port
        .contains_key(&u32::from(OFFERED)));
    lab.run_for(MS);
    let d = dhcp(&tap);
    assert_eq!(d.len(), 1);
    assert_eq!(
        (d[0].at, d[0].msg.kind, d[0].src),
        (
            at(1000.0) + LATENCY,
            Some(Kind::Discover),
            Ipv4Addr::UNSPECIFIED
        )
    );
    assert_eq!(lab.w.obs.dhcp.expired, 1);
    // The machine's sockets learn why.
    assert_eq!(
        sock.rx.borrow().error,
        Some(crate::endpoint::SocketError::AddressLost(OFFERED))
    );
}

#[test]
fn an_ack_to_a_renewal_extends_the_lease_from_when_the_renewal_was_sent() {
    let (mut lab, c, tap) = client_and_server();
    let t0 = bind(&mut lab, c, &tap, 100).as_nanos();
    lab.run_until(Time::from_nanos(t0 + 50 * SEC) + MS);
    let r = dhcp(&tap);
    assert_eq!(r.len(), 1);
    let sent = r[0].at.as_nanos() - LATENCY.as_nanos() as u64;
    assert_eq!(sent, t0 + 50 * SEC);
    // The server answers a little later: the new lease still counts from
    // the REQUEST.
    let mac = lab.mac(c, 0);
    answer(
        &mut lab,
        &tap,
        &r[0].msg,
        Kind::Ack,
        100,
        Some((OFFERED, mac)),
    );
    lab.run_for(MS);
    let cl = client::state(&lab.w, c).unwrap();
    assert_eq!(cl.state, State::Bound);
    let lease = cl.lease.unwrap();
    assert_eq!(lease.t1, Time::from_nanos(sent + 50 * SEC));
    assert_eq!(lease.t2, Time::from_nanos(sent + 87_500_000_000));
    assert_eq!(lease.end, Time::from_nanos(sent + 100 * SEC));
    assert_eq!(lab.w.obs.dhcp.extended, 1);
    lab.run_until(lease.t1 + MS);
    let r = dhcp(&tap);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].at, lease.t1 + LATENCY);
}

#[test]
fn a_nak_while_renewing_takes_the_address_away_and_starts_over() {
    let (mut lab, c, tap) = client_and_server();
    let t0 = bind(&mut lab, c, &tap, 100).as_nanos();
    lab.run_until(Time::from_nanos(t0 + 50 * SEC) + MS);
    let r = dhcp(&tap);
    let mac = lab.mac(c, 0);
    answer(
        &mut lab,
        &tap,
        &r[0].msg,
        Kind::Nak,
        0,
        Some((OFFERED, mac)),
    );
    lab.run_for(MS);
    assert_eq!(
        lab.w.machines[c as usize].ifaces[0].ip,
        Ipv4Addr::UNSPECIFIED
    );
    let d = dhcp(&tap);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].msg.kind, Some(Kind::Discover));
    assert_ne!(d[0].msg.xid, r[0].msg.xid, "a new exchange");
}

/// §4.1: 4, 8, 16, 32, 64, 64, 64 s, each ± 1 s, drawn from the machine's
/// stream (the same seed gives the same instants).
#[test]
fn unanswered_discovers_back_off_exponentially_with_a_random_second() {
    let times = |seed: u64| {
        let (mut lab, _c, tap) = client_and_server();
        lab.w.config.seed = seed;
        lab.run_until(Time::from_secs(300));
        dhcp(&tap)
            .iter()
            .map(|s| s.at.as_nanos())
            .collect::<Vec<u64>>()
    };
    let t = times(1);
    assert_eq!(t.len(), 8, "{t:?}");
    for (i, base) in [4u64, 8, 16, 32, 64, 64, 64].iter().enumerate() {
        let gap = t[i + 1] - t[i];
        assert!(gap.abs_diff(base * SEC) <= SEC, "gap {i}: {gap}");
    }
    assert_eq!(t, times(1));
    assert_ne!(t, times(2));
}

#[test]
fn another_clients_reply_and_garbage_are_dropped_with_reasons() {
    let (mut lab, c, tap) = client_and_server();
    lab.run_until(Time::from_secs(1) + MS);
    let d = dhcp(&tap);
    let mut other = d[0].msg.clone();
    other.xid ^= 1;
    answer(&mut lab, &tap, &other, Kind::Offer, 100, None);
    let junk = Ip::new(PEER, Ipv4Addr::BROADCAST, 17).datagram(&udp(
        PEER,
        Ipv4Addr::BROADCAST,
        67,
        68,
        &[1, 2, 3],
    ));
    lab.send(&tap, eth(BROADCAST, tap.mac, 0x0800, &junk));
    lab.run_for(MS);
    assert_eq!(client::state(&lab.w, c).unwrap().state, State::Selecting);
    let drops = lab.drops();
    assert!(drops.contains(&("dhcp(not_ours)".into(), 1)), "{drops:?}");
    assert!(drops.contains(&("malformed(dhcp)".into(), 1)), "{drops:?}");
}

#[test]
fn the_parser_refuses_what_would_make_it_read_out_of_bounds() {
    let good = build(&Fields {
        kind: Some(Kind::Discover),
        ..Fields::default()
    });
    assert_eq!(good.len(), super::MIN_LEN);
    assert!(Parsed::parse(&good).is_ok());
    assert!(
        Parsed::parse(&good[..239]).is_err(),
        "shorter than the fixed header"
    );
    let mut long_hw = good.clone();
    long_hw[2] = 200; // hlen: chaddr would run past its 16 bytes
    assert!(Parsed::parse(&long_hw).is_err());
    let mut no_cookie = good.clone();
    no_cookie[236] = 0;
    assert!(Parsed::parse(&no_cookie).is_err());
    let mut short_opt = good.clone();
    // Option 54 with 2 bytes where 4 are needed.
    short_opt[243..248].copy_from_slice(&[54, 2, 10, 0, 255]);
    assert!(Parsed::parse(&short_opt).is_err());
}

/// A server and a client on two LANs joined by a relaying router: the
/// relay sets `giaddr`, the server picks the pool of that subnet and
/// answers the relay, which broadcasts on the client's LAN.
#[test]
fn a_relay_carries_the_exchange_across_a_router_and_giaddr_picks_the_pool() {
    let mut lab = Lab::new();
    let core = lab.lan("core");
    let lan = lab.lan("lan");
    let r_core = Ipv4Addr::new(10, 0, 0, 1);
    let r_lan = Ipv4Addr::new(10, 9, 0, 1);
    let srv_ip = Ipv4Addr::new(10, 0, 0, 2);
    let r = lab.router("r", &[(core, r_core), (lan, r_lan)]);
    let s = lab.host("s", Protocols::UDP, core, srv_ip);
    let c = lab.unconfigured("c", Protocols::UDP, lan);
    let watch = lab.tap("watch", lan, Ipv4Addr::new(10, 9, 0, 9));
    // The server reaches the LAN through the router (a default route,
    // as `addr::assign` makes).
    crate::addr::assign(&mut lab.w, s, 0, srv_ip, Some(r_core)).unwrap();
    relay::enable(&mut lab.w, r, vec![srv_ip]);
    let pool = |a: u8, b: u8, router| server::Pool {
        first: Ipv4Addr::new(10, a, 0, b),
        last: Ipv4Addr::new(10, a, 0, b + 9),
        prefix: 24,
        router,
    };
    server::enable(
        &mut lab.w,
        s,
        server::Config {
            pools: vec![pool(0, 100, None), pool(9, 100, Some(r_lan))],
            lease_s: 3600,
            t1_s: None,
            t2_s: None,
            dns: vec![Ipv4Addr::new(10, 0, 0, 53)],
            domain: Some("example.com".into()),
            reservations: Vec::new(),
        },
    );
    client::enable(&mut lab.w, c, Some(Time::from_secs(1)));
    lab.run_until(Time::from_secs(2));
    let m = &lab.w.machines[c as usize];
    assert_eq!(
        m.ifaces[0].ip,
        Ipv4Addr::new(10, 9, 0, 100),
        "from the LAN's pool"
    );
    let conf = m.ext.as_deref().unwrap().resolver.as_deref().unwrap();
    assert_eq!(conf.servers, vec![Ipv4Addr::new(10, 0, 0, 53)]);
    assert_eq!(conf.domain.as_deref(), Some("example.com"));
    // The default route goes through the router option.
    let route = crate::ipv4::route(&lab.w, c, srv_ip).unwrap();
    assert_eq!(
        route.next,
        crate::ipv4::NextHop::Neighbour(
            r_lan,
            lab.w.fabric.networks[lan as usize].ip_to_port[&u32::from(r_lan)]
        )
    );
    // On the client's LAN: DISCOVER, OFFER (from the relay), REQUEST, ACK.
    let seen = dhcp(&watch);
    let kinds: Vec<_> = seen.iter().map(|s| s.msg.kind.unwrap()).collect();
    assert_eq!(
        kinds,
        [Kind::Discover, Kind::Offer, Kind::Request, Kind::Ack]
    );
    for s in seen.iter().filter(|s| s.msg.op == 2) {
        assert_eq!(
            (s.src, s.dst, s.ports),
            (r_lan, Ipv4Addr::BROADCAST, (67, 68))
        );
        assert_eq!(s.msg.giaddr, r_lan);
        assert_eq!(s.msg.server_id, Some(srv_ip));
    }
    assert_eq!(lab.w.obs.dhcp.relayed, 4);
    assert_eq!(server::server(&lab.w, s).unwrap().census(lab.w.now()).0, 1);
}

#[test]
fn an_exhausted_pool_leaves_the_discover_unanswered_and_counts_it() {
    let (mut lab, _s, clients, _) = served_lan(100, 101, &[Protocols::UDP; 3]);
    for (i, &c) in clients.iter().enumerate() {
        client::enable(&mut lab.w, c, Some(Time::from_secs(1 + i as u64)));
    }
    lab.run_until(Time::from_secs(30));
    let ips: Vec<Ipv4Addr> = clients
        .iter()
        .map(|&c| lab.w.machines[c as usize].ifaces[0].ip)
        .collect();
    assert_eq!(
        ips,
        [
            Ipv4Addr::new(10, 0, 0, 100),
            Ipv4Addr::new(10, 0, 0, 101),
            Ipv4Addr::UNSPECIFIED
        ]
    );
    assert!(
        lab.w.obs.dhcp.pool_exhausted >= 2,
        "the third client keeps asking"
    );
    assert_eq!(client::state(&lab.w, clients[2]).unwrap().first_bound, None);
}

/// What [`build`] writes, `dhcproto`'s own decoder (an independent
/// implementation) reads back field by field; and [`Parsed`] agrees.
#[test]
fn what_build_writes_dhcproto_decodes_to_the_same_fields() {
    use dhcproto::v4::{DhcpOption as O, MessageType as T, OptionCode as C};
    use dhcproto::{Decodable, Decoder};
    let dns = [Ipv4Addr::new(10, 0, 0, 53), Ipv4Addr::new(10, 0, 1, 53)];
    let request = Fields {
        op: 1,
        xid: 0xdead_beef,
        secs: 7,
        broadcast: true,
        chaddr: [2, 1, 0, 0, 0, 9],
        kind: Some(Kind::Request),
        requested: Some(OFFERED),
        server_id: Some(PEER),
        hostname: Some("h-17"),
        params: true,
        ..Fields::default()
    };
    let ack = Fields {
        op: 2,
        xid: 1,
        ciaddr: OFFERED,
        yiaddr: OFFERED,
        giaddr: Ipv4Addr::new(10, 9, 0, 1),
        chaddr: [2, 1, 0, 0, 0, 9],
        kind: Some(Kind::Ack),
        server_id: Some(PEER),
        lease_s: Some(3600),
        t1_s: Some(1000),
        t2_s: Some(3000),
        mask: Some(Ipv4Addr::new(255, 255, 255, 0)),
        router: Some(Ipv4Addr::new(10, 0, 0, 1)),
        dns: &dns,
        domain: Some("example.com"),
        ..Fields::default()
    };
    let nak = Fields {
        op: 2,
        kind: Some(Kind::Nak),
        server_id: Some(PEER),
        message: Some("address not available"),
        broadcast: true,
        ..Fields::default()
    };
    for f in [&request, &ack, &nak] {
        let bytes = build(f);
        assert!(bytes.len() >= super::MIN_LEN);
        let m =
            dhcproto::v4::Message::decode(&mut Decoder::new(&bytes)).expect("dhcproto decodes it");
        assert_eq!(u8::from(m.opcode()), f.op);
        assert_eq!(
            (m.xid(), m.secs(), m.flags().broadcast()),
            (f.xid, f.secs, f.broadcast)
        );
        assert_eq!(
            (m.ciaddr(), m.yiaddr(), m.giaddr()),
            (f.ciaddr, f.yiaddr, f.giaddr)
        );
        assert_eq!(&m.chaddr()[..6], &f.chaddr);
        let o = m.opts();
        let kind = match f.kind.unwrap() {
            Kind::Request => T::Request,
            Kind::Ack => T::Ack,
            _ => T::Nak,
        };
        assert_eq!(o.msg_type(), Some(kind));
        let get = |c: C| o.get(c).cloned();
        assert_eq!(
            get(C::ServerIdentifier),
            f.server_id.map(O::ServerIdentifier)
        );
        assert_eq!(
            get(C::RequestedIpAddress),
            f.requested.map(O::RequestedIpAddress)
        );
        assert_eq!(get(C::AddressLeaseTime), f.lease_s.map(O::AddressLeaseTime));
        assert_eq!(get(C::Renewal), f.t1_s.map(O::Renewal));
        assert_eq!(get(C::Rebinding), f.t2_s.map(O::Rebinding));
        assert_eq!(get(C::SubnetMask), f.mask.map(O::SubnetMask));
        assert_eq!(get(C::Router), f.router.map(|r| O::Router(vec![r])));
        assert_eq!(
            get(C::DomainNameServer),
            (!f.dns.is_empty()).then(|| O::DomainNameServer(f.dns.to_vec()))
        );
        assert_eq!(
            get(C::DomainName),
            f.domain.map(|d| O::DomainName(d.into()))
        );
        assert_eq!(get(C::Hostname), f.hostname.map(|h| O::Hostname(h.into())));
        assert_eq!(get(C::Message), f.message.map(|t| O::Message(t.into())));
        assert_eq!(
            get(C::ClientIdentifier),
            (f.op == 1).then(|| O::ClientIdentifier([&[1u8][..], &f.chaddr].concat()))
        );
        let p = Parsed::parse(&bytes).unwrap();
        assert_eq!(
            (p.op, p.xid, p.kind, p.server_id, p.requested),
            (f.op, f.xid, f.kind, f.server_id, f.requested)
        );
        assert_eq!(
            (p.lease_s, p.t1_s, p.t2_s, p.mask, p.router),
            (f.lease_s, f.t1_s, f.t2_s, f.mask, f.router)
        );
        assert_eq!((&p.dns[..], p.domain.as_deref()), (f.dns, f.domain));
    }
}

/// A LAN with a server at [`PEER`] serving `first`..=`last`, and clients
/// running `protocols`.
fn served_lan(first: u8, last: u8, clients: &[Protocols]) -> (Lab, MachineId, Vec<MachineId>, u32) {
    let mut lab = Lab::new();
    let lan = lab.lan("lan");
    let s = lab.host("s", Protocols::UDP, lan, PEER);
    let cs = (clients.iter().enumerate())
        .map(|(i, &p)| lab.unconfigured(&format!("c{i}"), p, lan))
        .collect();
    server::enable(
        &mut lab.w,
        s,
        server::Config {
            pools: vec![server::Pool {
                first: Ipv4Addr::new(10, 0, 0, first),
                last: Ipv4Addr::new(10, 0, 0, last),
                prefix: 24,
                router: None,
            }],
            lease_s: 3600,
            t1_s: None,
            t2_s: None,
            dns: vec![Ipv4Addr::new(10, 0, 0, 53)],
            domain: Some("example.com".into()),
            reservations: Vec::new(),
        },
    );
    (lab, s, cs, lan)
}

/// RFC 2131 §4.4.1: the client probes the address with ARP before using
/// it; a machine already there answers, the client DECLINEs, the server
/// keeps the address out of use and the client, after 10 s, gets another.
#[test]
fn an_address_in_use_is_found_by_the_arp_probe_declined_and_replaced() {
    let (mut lab, s, cs, lan) = served_lan(100, 101, &[crate::testing::ARP]);
    let c = cs[0];
    // A machine the server does not know about holds .100.
    lab.host(
        "squatter",
        crate::testing::ARP,
        lan,
        Ipv4Addr::new(10, 0, 0, 100),
    );
    client::enable(&mut lab.w, c, Some(Time::from_secs(1)));
    lab.run_until(Time::from_secs(3));
    assert_eq!(
        client::state(&lab.w, c).unwrap().state,
        State::Init,
        "declined, waiting"
    );
    assert_eq!(
        lab.w.machines[c as usize].ifaces[0].ip,
        Ipv4Addr::UNSPECIFIED
    );
    assert_eq!(lab.w.obs.dhcp.sent(Kind::Decline), 1);
    assert_eq!(
        server::server(&lab.w, s).unwrap().census(lab.w.now()).2,
        1,
        "one declined"
    );
    lab.run_until(Time::from_secs(20));
    assert_eq!(
        lab.w.machines[c as usize].ifaces[0].ip,
        Ipv4Addr::new(10, 0, 0, 101)
    );
    assert_eq!(client::state(&lab.w, c).unwrap().state, State::Bound);
    // A probe, then an announcement, per configured address.
    assert!(lab.w.obs.stats.arp_sent >= 3);
}

#[test]
fn a_release_gives_the_address_back_to_the_server() {
    let (mut lab, s, cs, _) = served_lan(100, 110, &[Protocols::UDP]);
    let c = cs[0];
    client::enable(&mut lab.w, c, Some(Time::from_secs(1)));
    lab.run_until(Time::from_secs(2));
    assert_eq!(
        lab.w.machines[c as usize].ifaces[0].ip,
        Ipv4Addr::new(10, 0, 0, 100)
    );
    assert_eq!(server::server(&lab.w, s).unwrap().census(lab.w.now()).0, 1);
    client::release(&mut lab.w, c);
    lab.run_for(MS);
    assert_eq!(
        lab.w.machines[c as usize].ifaces[0].ip,
        Ipv4Addr::UNSPECIFIED
    );
    assert_eq!(server::server(&lab.w, s).unwrap().census(lab.w.now()).0, 0);
    assert_eq!(lab.w.obs.dhcp.sent(Kind::Release), 1);
}

/// A machine with an address asks only for its configuration (§3.4): the
/// ACK goes to its address, with the options and no lease.
#[test]
fn an_inform_gets_the_options_without_a_lease() {
    let (mut lab, _s, _, lan) = served_lan(100, 110, &[]);
    let me = Ipv4Addr::new(10, 0, 0, 7);
    let tap = lab.tap("static", lan, me);
    let f = Fields {
        op: 1,
        xid: 77,
        ciaddr: me,
        chaddr: tap.mac,
        kind: Some(Kind::Inform),
        ..Fields::default()
    };
    let dgram = Ip::new(me, PEER, 17).datagram(&udp(me, PEER, 68, 67, &build(&f)));
    let server_mac = lab.mac(0, 0);
    lab.send(&tap, eth(server_mac, tap.mac, 0x0800, &dgram));
    lab.run_for(MS);
    let got = dhcp(&tap);
    assert_eq!(got.len(), 1);
    let a = &got[0];
    assert_eq!(
        (a.src, a.dst, a.dst_mac, a.ports),
        (PEER, me, tap.mac, (67, 68))
    );
    assert_eq!(
        (a.msg.kind, a.msg.xid, a.msg.yiaddr),
        (Some(Kind::Ack), 77, Ipv4Addr::UNSPECIFIED)
    );
    assert_eq!(a.msg.lease_s, None);
    assert_eq!(&a.msg.dns[..], &[Ipv4Addr::new(10, 0, 0, 53)]);
    assert_eq!(a.msg.domain.as_deref(), Some("example.com"));
}

#[test]
fn a_reservation_gives_its_client_the_same_address_whatever_the_pool_order() {
    let (mut lab, s, cs, _) = served_lan(100, 110, &[Protocols::UDP, Protocols::UDP]);
    let reserved = Ipv4Addr::new(10, 0, 0, 105);
    let mac = lab.mac(cs[1], 0);
    if let Some(srv) = lab.w.machines[s as usize]
        .ext
        .as_deref_mut()
        .and_then(|e| e.dhcp_server.as_deref_mut())
    {
        srv.config.reservations.push((mac, reserved));
    }
    for (i, &c) in cs.iter().enumerate() {
        client::enable(&mut lab.w, c, Some(Time::from_secs(1 + i as u64)));
    }
    lab.run_until(Time::from_secs(5));
    let ips: Vec<Ipv4Addr> = cs
        .iter()
        .map(|&c| lab.w.machines[c as usize].ifaces[0].ip)
        .collect();
    assert_eq!(ips, [Ipv4Addr::new(10, 0, 0, 100), reserved]);
}
