//! The DHCP client (RFC 2131 §4.4, the state machine of Fig. 5).
//!
//! ```text
//!  INIT ──DISCOVER──▶ SELECTING ──OFFER / REQUEST──▶ REQUESTING ──ACK──▶ BOUND
//!   ▲                                                  │ NAK             │ T1
//!   │◀─────────────────────────────────────────────────┘                 ▼
//!   │◀── lease ends (address lost) ── REBINDING ◀── T2 ── RENEWING (unicast REQUEST)
//!   │                                  (broadcast REQUEST)       ACK: BOUND again
//! ```
//!
//! Timers, all in integer nanoseconds from the instant the REQUEST that
//! got the lease was sent (§4.4.1): T1 = lease / 2 and T2 = lease × 7/8
//! unless the server sent options 58 and 59 (§4.4.5), expiry = lease.
//!
//! Retransmission (§4.1): a DISCOVER or a REQUEST in SELECTING/REQUESTING
//! not answered is sent again after 4 s, then 8, 16, 32 and 64 s (64 s from
//! then on), each randomized by a uniform ±1 s drawn from the machine's
//! own random stream; after 4 unanswered REQUESTs the client starts over
//! from INIT. In RENEWING and REBINDING it sends again after half the time
//! left until T2 (RENEWING) or the lease's end (REBINDING), but not sooner
//! than 60 s (§4.4.5), and never past that instant.
//!
//! Before the first DISCOVER a client waits a start delay: by default a
//! uniform draw in [1 s, 10 s] (§4.4.1's "random time between one and ten
//! seconds to desynchronize"), or what NDL's `start=` or
//! [`enable`]'s argument gives.
//!
//! # Runs without a time limit
//! A run ends when its event queue holds nothing that it waits for. The
//! timers of a client's first minute of asking (from its start, ISC
//! dhclient's default `timeout`) count; lease upkeep (T1, T2, renewals)
//! and later retries do not, so a scenario with DHCP ends when its
//! applications are done instead of renewing leases forever. Give
//! `until=` to watch renewals.

use super::{
    broadcast_route, build, count, mac_of, Fields, Kind, Parsed, CLIENT_PORT, SERVER_PORT,
};
use crate::addr;
use crate::hosts::{Event, Hosts};
use crate::machine::{MachineId, ResolverConf};
use crate::Timer;
use elvis_kernel::rng::{self, StreamKind};
use elvis_kernel::Time;
use rand::RngCore;
use std::net::Ipv4Addr;

const SEC: u64 = 1_000_000_000;
/// First retransmission delay of §4.1.
const FIRST_BACKOFF: u64 = 4 * SEC;
/// Longest retransmission delay of §4.1.
const MAX_BACKOFF: u64 = 64 * SEC;
/// Least wait between REQUESTs in RENEWING and REBINDING (§4.4.5).
const MIN_RENEW_WAIT: u64 = 60 * SEC;
/// REQUESTs sent in REQUESTING before the client starts over.
const MAX_REQUESTS: u8 = 4;
/// How long a client listens for an answer to its ARP probe.
const PROBE_WAIT: u64 = SEC;
/// How long a client waits after a DECLINE (§3.1.5 recommends 10 s).
const DECLINE_WAIT: u64 = 10 * SEC;
/// How long a client's first attempts keep a run going (ISC dhclient's
/// default `timeout`): later retries, like lease renewals, are background
/// timers, so a run without a time limit ends once nothing but DHCP
/// upkeep is left (`elvis_stack::hosts::Scheduling::background`).
const FOREGROUND: u64 = 60 * SEC;

/// Where the client is in Fig. 5.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Waiting for its start delay, or after a DECLINE.
    Init,
    /// DISCOVER sent, waiting for an OFFER.
    Selecting,
    /// REQUEST for an offer sent, waiting for the ACK.
    Requesting,
    /// ACKed, probing the address with ARP before using it (a machine
    /// that runs ARP; RFC 2131 §4.4.1, RFC 5227).
    Checking,
    Bound,
    /// Past T1: REQUESTs go to the leasing server.
    Renewing,
    /// Past T2: REQUESTs are broadcast to any server.
    Rebinding,
}

/// A lease the client holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lease {
    pub ip: Ipv4Addr,
    pub server: Ipv4Addr,
    /// When the REQUEST that got it was sent: the lease's time zero.
    pub start: Time,
    pub t1: Time,
    pub t2: Time,
    pub end: Time,
}

/// A machine's DHCP client.
#[derive(Clone, Debug)]
pub struct Client {
    pub state: State,
    /// The transaction of the exchange in progress.
    xid: u32,
    /// Generation of the one pending timer (older ones are ignored).
    gen: u32,
    /// Sends of the current message so far.
    tries: u8,
    /// When the current exchange began (the `secs` field).
    began: Time,
    /// When the last REQUEST was sent (a lease starts then).
    requested_at: Time,
    /// The offer being requested: address and server.
    offer: Option<(Ipv4Addr, Ipv4Addr)>,
    pub lease: Option<Lease>,
    /// When the client first got an address (`None`: never yet).
    pub first_bound: Option<Time>,
    /// When its first DISCOVER was due.
    pub started: Time,
    /// The ACK being checked (state `Checking`), and whether a machine
    /// answered for its address.
    checking: Option<Box<Parsed>>,
    conflict: bool,
}

/// Makes machine `m` a DHCP client whose first DISCOVER goes out at
/// `start` (or after §4.4.1's random 1–10 s when `None`).
pub fn enable(w: &mut Hosts, m: MachineId, start: Option<Time>) {
    let start = match start {
        Some(t) => t,
        None => w.now() + std::time::Duration::from_nanos(SEC + draw(w, m) % (9 * SEC + 1)),
    };
    let c = Client {
        state: State::Init,
        xid: 0,
        gen: 0,
        tries: 0,
        began: start,
        requested_at: start,
        offer: None,
        lease: None,
        first_bound: None,
        started: start,
        checking: None,
        conflict: false,
    };
    w.machines[m as usize].ext().dhcp = Some(Box::new(c));
    super::fanout::role_added(w);
    arm(w, m, start);
}

/// Returns machine `m`'s client.
fn client(w: &mut Hosts, m: MachineId) -> Option<&mut Client> {
    w.machines[m as usize]
        .ext
        .as_deref_mut()?
        .dhcp
        .as_deref_mut()
}

/// 64 bits from the machine's stream.
fn draw(w: &mut Hosts, m: MachineId) -> u64 {
    let seed = w.config.seed;
    w.machines[m as usize]
        .ext()
        .rng
        .get_or_insert_with(|| rng::stream(seed, StreamKind::Machine, u64::from(m)))
        .next_u64()
}

/// Schedules the client's one timer at `at`, cancelling the previous one.
fn arm(w: &mut Hosts, m: MachineId, at: Time) {
    let now = w.now();
    let Some(c) = client(w, m) else { return };
    c.gen = c.gen.wrapping_add(1);
    // Lease upkeep, and retries past dhclient's 60 s `timeout`, do not
    // keep a run going; the first minute of asking does.
    let background = c.lease.is_some() || now.as_nanos() >= c.started.as_nanos() + FOREGROUND;
    let timer = Timer::Dhcp {
        gen: c.gen,
        background,
    };
    w.sched.background += u64::from(background);
    w.sched
        .queue
        .schedule(at, m, Event::Timer { machine: m, timer });
}

/// The §4.1 delay before send number `tries` (1-based) is repeated:
/// 4, 8, 16, 32, 64, 64 … s, each ± up to 1 s.
fn backoff(w: &mut Hosts, m: MachineId, tries: u8) -> u64 {
    let base = (FIRST_BACKOFF << (tries.saturating_sub(1)).min(4)).min(MAX_BACKOFF);
    let jitter = draw(w, m) % (2 * SEC + 1);
    base + jitter - SEC
}

/// A client timer fired.
pub fn on_timer(w: &mut Hosts, m: MachineId, gen: u32) {
    let now = w.now();
    let Some(c) = client(w, m) else { return };
    if c.gen != gen {
        return;
    }
    match c.state {
        State::Init => discover(w, m, true),
        State::Selecting => discover(w, m, false),
        State::Requesting => {
            if c.tries >= MAX_REQUESTS {
                discover(w, m, true);
            } else {
                request(w, m);
            }
        }
        State::Checking => {
            let conflict = c.conflict;
            let Some(p) = c.checking.take() else { return };
            if conflict {
                decline(w, m, &p);
            } else {
                configure(w, m, &p);
            }
        }
        State::Bound | State::Renewing | State::Rebinding => {
            let Some(lease) = c.lease else { return };
            if now >= lease.end {
                return expire(w, m);
            }
            if now >= lease.t2 {
                c.state = State::Rebinding;
            } else if now >= lease.t1 {
                c.state = State::Renewing;
            }
            request(w, m);
        }
    }
}

/// Sends a DISCOVER (`fresh`: a new exchange) and waits for offers.
fn discover(w: &mut Hosts, m: MachineId, fresh: bool) {
    let now = w.now();
    let xid = draw(w, m) as u32;
    let Some(c) = client(w, m) else { return };
    if fresh {
        c.xid = xid;
        c.tries = 0;
        c.began = now;
        c.offer = None;
    }
    c.state = State::Selecting;
    c.tries = c.tries.saturating_add(1);
    let (xid, tries, secs) = (c.xid, c.tries, secs_since(c.began, now));
    let f = Fields {
        op: 1,
        xid,
        secs,
        broadcast: true,
        chaddr: mac_of(w, m, 0),
        kind: Some(Kind::Discover),
        params: true,
        ..Fields::default()
    };
    send_broadcast(w, m, &f);
    count(w, Kind::Discover);
    let wait = backoff(w, m, tries);
    arm(w, m, now + std::time::Duration::from_nanos(wait));
}

/// Sends a REQUEST for the offer (REQUESTING), to the server (RENEWING)
/// or to every server (REBINDING), and sets the retransmission timer.
fn request(w: &mut Hosts, m: MachineId) {
    let now = w.now();
    let name = w.machine_name(m);
    let chaddr = mac_of(w, m, 0);
    let Some(c) = client(w, m) else { return };
    c.tries = c.tries.saturating_add(1);
    c.requested_at = now;
    let mut f = Fields {
        op: 1,
        xid: c.xid,
        secs: secs_since(c.began, now),
        chaddr,
        kind: Some(Kind::Request),
        params: true,
        hostname: Some(&name),
        ..Fields::default()
    };
    let state = c.state;
    let tries = c.tries;
    let lease = c.lease;
    match state {
        State::Requesting => {
            let Some((ip, server)) = c.offer else { return };
            f.broadcast = true;
            f.requested = Some(ip);
            f.server_id = Some(server);
            send_broadcast(w, m, &f);
            count(w, Kind::Request);
            let wait = backoff(w, m, tries);
            arm(w, m, now + std::time::Duration::from_nanos(wait));
        }
        State::Renewing | State::Rebinding => {
            let Some(lease) = lease else { return };
            f.ciaddr = lease.ip;
            let limit = if state == State::Renewing {
                lease.t2
            } else {
                lease.end
            };
            if state == State::Renewing {
                // Unicast to the server that leased the address.
                let payload = build(&f);
                match crate::ipv4::route(w, m, lease.server) {
                    Ok(route) => {
                        super::send(w, m, route, CLIENT_PORT, lease.server, SERVER_PORT, payload)
                    }
                    Err(_) => w.drop_packet(crate::counters::DropReason::NoRoute),
                }
            } else {
                f.broadcast = false;
                send_broadcast(w, m, &f);
            }
            count(w, Kind::Request);
            let left = limit.as_nanos().saturating_sub(now.as_nanos());
            let next = now.as_nanos() + (left / 2).max(MIN_RENEW_WAIT);
            arm(w, m, Time::from_nanos(next.min(limit.as_nanos())));
        }
        State::Init | State::Selecting | State::Checking | State::Bound => {}
    }
}

/// Broadcasts a client message on the first interface.
fn send_broadcast(w: &mut Hosts, m: MachineId, f: &Fields) {
    let route = broadcast_route(w, m, 0);
    let payload = build(f);
    super::send(
        w,
        m,
        route,
        CLIENT_PORT,
        Ipv4Addr::BROADCAST,
        SERVER_PORT,
        payload,
    );
}

/// Seconds since `began`, for the `secs` field (saturating at 65535).
fn secs_since(began: Time, now: Time) -> u16 {
    (now.as_nanos().saturating_sub(began.as_nanos()) / SEC).min(65_535) as u16
}

/// A BOOTREPLY for port 68 arrived.
pub fn receive(w: &mut Hosts, m: MachineId, p: &Parsed) {
    let chaddr = mac_of(w, m, 0);
    let Some(c) = client(w, m) else { return };
    if p.xid != c.xid || p.chaddr != chaddr {
        // Another client's reply, broadcast on our LAN.
        return w.drop_packet(crate::counters::DropReason::Dhcp("not_ours"));
    }
    // Taken by the client, as by dhclient's socket.
    w.obs.stats.udp_delivered += 1;
    let Some(c) = client(w, m) else { return };
    match (c.state, p.kind) {
        (State::Selecting, Some(Kind::Offer)) => {
            let Some(server) = p.server_id else {
                return w.drop_packet(crate::counters::DropReason::Dhcp("no_server_id"));
            };
            // The first offer wins (§4.4.1 lets the client take any).
            c.offer = Some((p.yiaddr, server));
            c.state = State::Requesting;
            c.tries = 0;
            request(w, m);
        }
        (State::Requesting | State::Renewing | State::Rebinding, Some(Kind::Ack)) => bind(w, m, p),
        (State::Requesting | State::Renewing | State::Rebinding, Some(Kind::Nak)) => {
            if c.state != State::Requesting {
                addr::release(w, m, 0);
                w.obs.dhcp.expired += 1;
            }
            if let Some(c) = client(w, m) {
                c.lease = None;
            }
            discover(w, m, true);
        }
        _ => w.drop_packet(crate::counters::DropReason::Dhcp("unexpected")),
    }
}

/// An ACK: configures the address (first lease or a new one) or extends
/// the lease.
fn bind(w: &mut Hosts, m: MachineId, p: &Parsed) {
    let now = w.now();
    let Some(c) = client(w, m) else { return };
    let start = c.requested_at;
    let server = p
        .server_id
        .or(c.lease.map(|l| l.server))
        .unwrap_or(p.giaddr);
    let lease_ns = u64::from(p.lease_s.unwrap_or(u32::MAX)) * SEC;
    let t1 = p.t1_s.map_or(lease_ns / 2, |s| u64::from(s) * SEC);
    let t2 = p.t2_s.map_or((u128::from(lease_ns) * 7 / 8) as u64, |s| {
        u64::from(s) * SEC
    });
    let lease = Lease {
        ip: p.yiaddr,
        server,
        start,
        t1: Time::from_nanos(start.as_nanos().saturating_add(t1)),
        t2: Time::from_nanos(start.as_nanos().saturating_add(t2)),
        end: Time::from_nanos(start.as_nanos().saturating_add(lease_ns)),
    };
    let extended = c.lease.is_some_and(|l| l.ip == p.yiaddr);
    c.lease = Some(lease);
    c.state = State::Bound;
    c.tries = 0;
    c.offer = None;
    if extended {
        w.obs.dhcp.extended += 1;
        set_resolver(w, m, p);
        return arm(w, m, lease.t1);
    }
    let group = w.machines[m as usize].group;
    if w.groups[group as usize].protocols.arp {
        // Probe first; `on_timer` configures or declines a second later.
        if let Some(c) = client(w, m) {
            c.state = State::Checking;
            c.checking = Some(Box::new(p.clone()));
            c.conflict = false;
        }
        crate::arp::probe(w, m, 0, p.yiaddr);
        return arm(w, m, now + std::time::Duration::from_nanos(PROBE_WAIT));
    }
    configure(w, m, p);
}

/// Takes the address of ACK `p` (checked if the machine runs ARP).
fn configure(w: &mut Hosts, m: MachineId, p: &Parsed) {
    if addr::assign(w, m, 0, p.yiaddr, p.router).is_err() {
        // Someone on the network has the address (what an ARP probe
        // finds, RFC 2131 §4.4.1): decline it and start over.
        return decline(w, m, p);
    }
    let group = w.machines[m as usize].group;
    if w.groups[group as usize].protocols.arp {
        crate::arp::announce(w, m, 0);
    }
    w.obs.dhcp.bound += 1;
    let now = w.now();
    let Some(c) = client(w, m) else { return };
    c.state = State::Bound;
    c.first_bound.get_or_insert(now);
    let Some(lease) = c.lease else { return };
    set_resolver(w, m, p);
    arm(w, m, lease.t1);
}

/// Sets the resolver configuration a lease carries.
fn set_resolver(w: &mut Hosts, m: MachineId, p: &Parsed) {
    if !p.dns.is_empty() || p.domain.is_some() {
        w.machines[m as usize].ext().resolver = Some(std::sync::Arc::new(ResolverConf {
            servers: p.dns.to_vec(),
            domain: p.domain.clone(),
        }));
    }
}

/// An ARP packet from `sender` reached machine `m`: a conflict if `m` is
/// checking that address.
pub fn arp_seen(w: &mut Hosts, m: MachineId, sender: Ipv4Addr) {
    let Some(c) = client(w, m) else { return };
    if c.state == State::Checking && c.checking.as_ref().is_some_and(|p| p.yiaddr == sender) {
        c.conflict = true;
    }
}

/// Declines an offered address in use and waits before starting over.
fn decline(w: &mut Hosts, m: MachineId, p: &Parsed) {
    let now = w.now();
    let f = Fields {
        op: 1,
        xid: p.xid,
        chaddr: mac_of(w, m, 0),
        kind: Some(Kind::Decline),
        requested: Some(p.yiaddr),
        server_id: p.server_id,
        ..Fields::default()
    };
    send_broadcast(w, m, &f);
    count(w, Kind::Decline);
    if let Some(c) = client(w, m) {
        c.state = State::Init;
        c.lease = None;
    }
    arm(w, m, now + std::time::Duration::from_nanos(DECLINE_WAIT));
}

/// The lease ended: the address goes, and the client starts over.
fn expire(w: &mut Hosts, m: MachineId) {
    addr::release(w, m, 0);
    w.obs.dhcp.expired += 1;
    if let Some(c) = client(w, m) {
        c.lease = None;
    }
    discover(w, m, true);
}

/// Sends a RELEASE for machine `m`'s lease and gives the address up.
pub fn release(w: &mut Hosts, m: MachineId) {
    let chaddr = mac_of(w, m, 0);
    let Some(c) = client(w, m) else { return };
    let Some(lease) = c.lease.take() else { return };
    c.state = State::Init;
    c.gen = c.gen.wrapping_add(1);
    let f = Fields {
        op: 1,
        xid: c.xid,
        ciaddr: lease.ip,
        chaddr,
        kind: Some(Kind::Release),
        server_id: Some(lease.server),
        ..Fields::default()
    };
    if let Ok(route) = crate::ipv4::route(w, m, lease.server) {
        let payload = build(&f);
        super::send(w, m, route, CLIENT_PORT, lease.server, SERVER_PORT, payload);
        count(w, Kind::Release);
    }
    addr::release(w, m, 0);
}

/// Returns machine `m`'s client state, if it runs one.
pub fn state(w: &Hosts, m: MachineId) -> Option<&Client> {
    w.machines[m as usize].ext.as_deref()?.dhcp.as_deref()
}
