//! The DHCP server (RFC 2131 §4.3): pools, reservations, leases.
//!
//! A request is served from the pool of the client's subnet: the subnet
//! holding `giaddr` when a relay passed it on, else the subnet of the
//! server's own address on the interface it came in on. Within the pool a
//! client gets, in order: its reservation; the address it holds or was
//! offered; the address it asks for (option 50), when free; the lowest
//! free address. An OFFER holds its address for [`OFFER_HOLD`]; a
//! DECLINEd address is kept out of use for [`DECLINE_HOLD`] (RFC 2131
//! §4.3.3 says the server "MUST mark the network address as not
//! available"; a bounded hold lets a run recover, as ISC dhcpd's
//! abandoned-lease reclaim does).
//!
//! Replies (§4.1): to `giaddr`:67 when relayed; to `ciaddr`:68 when the
//! client has an address; else broadcast on the interface the request came
//! in on. When a pool has no free address the DISCOVER goes unanswered
//! and `pool_exhausted` counts it (RFC 2131 gives no "no address" reply).

use super::{build, count, Fields, Kind, Parsed, CLIENT_PORT, SERVER_PORT};
use crate::counters::DropReason;
use crate::hosts::Hosts;
use crate::machine::{IfaceId, MachineId};
use crate::route::mask;
use elvis_kernel::Time;
use rustc_hash::FxHashMap;
use std::net::Ipv4Addr;

const SEC: u64 = 1_000_000_000;
/// How long an offered address waits for the client's REQUEST.
pub const OFFER_HOLD: u64 = 60 * SEC;
/// How long a declined address stays out of use.
pub const DECLINE_HOLD: u64 = 3600 * SEC;

/// One pool: a range of addresses in one subnet, with its options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pool {
    /// First and last address handed out (inclusive).
    pub first: Ipv4Addr,
    pub last: Ipv4Addr,
    /// Prefix length of the subnet (option 1).
    pub prefix: u8,
    /// Option 3.
    pub router: Option<Ipv4Addr>,
}

impl Pool {
    /// The subnet's base address.
    fn subnet(&self) -> u32 {
        u32::from(self.first) & mask(self.prefix)
    }

    fn size(&self) -> u32 {
        u32::from(self.last) - u32::from(self.first) + 1
    }
}

/// A server's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub pools: Vec<Pool>,
    /// Lease time, seconds (option 51).
    pub lease_s: u32,
    /// T1 and T2 in seconds when set (options 58, 59); clients take
    /// 0.5 and 0.875 of the lease otherwise.
    pub t1_s: Option<u32>,
    pub t2_s: Option<u32>,
    /// Option 6.
    pub dns: Vec<Ipv4Addr>,
    /// Option 15.
    pub domain: Option<String>,
    /// Fixed addresses by client MAC.
    pub reservations: Vec<([u8; 6], Ipv4Addr)>,
}

/// What an address of a pool is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    Free,
    Offered,
    Bound,
    Declined,
}

/// One address's entry in the lease table.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    pub mac: [u8; 6],
    pub state: Use,
    /// When an offer, a lease or a decline ends.
    pub until: Time,
}

const FREE: Slot = Slot {
    mac: [0; 6],
    state: Use::Free,
    until: Time::ZERO,
};

/// A server: its configuration and lease table.
pub struct Server {
    pub config: Config,
    /// Per pool, one slot per address.
    pub slots: Vec<Vec<Slot>>,
    /// (pool, client MAC) → offset of its address in the pool.
    by_client: FxHashMap<(u32, [u8; 6]), u32>,
    /// Per pool: no free address lies below this offset.
    low_free: Vec<u32>,
    /// (subnet base, prefix length) → the first pool of that subnet.
    by_subnet: FxHashMap<(u32, u8), u32>,
    /// The distinct prefix lengths of the pools, longest first.
    prefixes: Vec<u8>,
}

/// Makes machine `m` a DHCP server.
pub fn enable(w: &mut Hosts, m: MachineId, config: Config) {
    let slots = config
        .pools
        .iter()
        .map(|p| vec![FREE; p.size() as usize])
        .collect();
    let low_free = vec![0; config.pools.len()];
    let mut by_subnet = FxHashMap::default();
    let mut prefixes: Vec<u8> = Vec::new();
    for (i, p) in config.pools.iter().enumerate() {
        by_subnet.entry((p.subnet(), p.prefix)).or_insert(i as u32);
        if !prefixes.contains(&p.prefix) {
            prefixes.push(p.prefix);
        }
    }
    prefixes.sort_unstable_by(|a, b| b.cmp(a));
    let s = Server {
        config,
        slots,
        by_client: FxHashMap::default(),
        low_free,
        by_subnet,
        prefixes,
    };
    w.machines[m as usize].ext().dhcp_server = Some(Box::new(s));
    super::fanout::role_added(w);
}

/// Returns machine `m`'s server, if it runs one.
pub fn server(w: &Hosts, m: MachineId) -> Option<&Server> {
    w.machines[m as usize]
        .ext
        .as_deref()?
        .dhcp_server
        .as_deref()
}

impl Server {
    /// The pool serving a client on the subnet of `ip`.
    fn pool_for(&self, ip: Ipv4Addr) -> Option<usize> {
        self.prefixes.iter().find_map(|&len| {
            let key = (u32::from(ip) & mask(len), len);
            self.by_subnet.get(&key).map(|&i| i as usize)
        })
    }

    fn is_free(slot: &Slot, now: Time) -> bool {
        match slot.state {
            Use::Free => true,
            Use::Offered | Use::Bound | Use::Declined => slot.until <= now,
        }
    }

    /// Picks the address for `mac` in pool `pool`: see the module docs.
    fn choose(
        &mut self,
        pool: usize,
        mac: [u8; 6],
        asked: Option<Ipv4Addr>,
        now: Time,
    ) -> Option<u32> {
        let p = &self.config.pools[pool];
        let first = u32::from(p.first);
        let in_pool = |ip: Ipv4Addr| {
            let v = u32::from(ip);
            (first..=u32::from(p.last)).contains(&v).then(|| v - first)
        };
        if let Some(&(_, ip)) = self.config.reservations.iter().find(|(m, _)| *m == mac) {
            return in_pool(ip);
        }
        if let Some(&off) = self.by_client.get(&(pool as u32, mac)) {
            let s = &self.slots[pool][off as usize];
            if s.mac == mac && (s.state != Use::Declined) {
                return Some(off);
            }
        }
        let reserved = |off: u32, cfg: &Config| {
            cfg.reservations
                .iter()
                .any(|(_, ip)| u32::from(*ip) == first + off)
        };
        if let Some(off) = asked.and_then(in_pool) {
            let s = &self.slots[pool][off as usize];
            if Self::is_free(s, now) && !reserved(off, &self.config) {
                return Some(off);
            }
        }
        let slots = &self.slots[pool];
        let start = self.low_free[pool] as usize;
        let found = (start..slots.len())
            .find(|&o| Self::is_free(&slots[o], now) && !reserved(o as u32, &self.config))
            .or_else(|| {
                // Expired entries below the hint.
                (0..start)
                    .find(|&o| Self::is_free(&slots[o], now) && !reserved(o as u32, &self.config))
            })?;
        if found >= start {
            self.low_free[pool] = found as u32 + 1;
        }
        Some(found as u32)
    }

    /// Records `state` for `mac` at offset `off` of `pool` until `until`.
    fn set(&mut self, pool: usize, off: u32, mac: [u8; 6], state: Use, until: Time) {
        let old = self.slots[pool][off as usize];
        if old.state != Use::Free && old.mac != mac {
            self.by_client.remove(&(pool as u32, old.mac));
        }
        self.slots[pool][off as usize] = Slot { mac, state, until };
        if state == Use::Declined {
            self.by_client.remove(&(pool as u32, mac));
        } else {
            self.by_client.insert((pool as u32, mac), off);
        }
    }

    /// Returns the address at offset `off` of `pool`.
    fn addr(&self, pool: usize, off: u32) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.config.pools[pool].first) + off)
    }

    /// Counts leases by state at `now`: (bound, offered, declined, free).
    pub fn census(&self, now: Time) -> (u64, u64, u64, u64) {
        let mut c = (0, 0, 0, 0);
        for s in self.slots.iter().flatten() {
            match s.state {
                _ if Self::is_free(s, now) => c.3 += 1,
                Use::Bound => c.0 += 1,
                Use::Offered => c.1 += 1,
                Use::Declined => c.2 += 1,
                Use::Free => c.3 += 1,
            }
        }
        c
    }

    /// The active leases at `now`: (address, client MAC, state, until).
    pub fn leases(&self, now: Time) -> impl Iterator<Item = (Ipv4Addr, [u8; 6], Use, Time)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .flat_map(move |(pool, slots)| {
                (slots.iter().enumerate())
                    .filter(move |(_, s)| !Self::is_free(s, now))
                    .map(move |(off, s)| (self.addr(pool, off as u32), s.mac, s.state, s.until))
            })
    }
}

/// A BOOTREQUEST for port 67 reached server machine `m` on `iface`.
pub fn receive(w: &mut Hosts, m: MachineId, iface: IfaceId, src: Ipv4Addr, p: &Parsed) {
    let now = w.now();
    let own = w.machines[m as usize].ifaces[iface as usize].ip;
    let Some(kind) = p.kind else {
        return w.drop_packet(DropReason::Dhcp("bootp"));
    };
    w.obs.stats.udp_delivered += 1;
    let Some(mut s) = w.machines[m as usize]
        .ext
        .as_deref_mut()
        .and_then(|e| e.dhcp_server.take())
    else {
        return;
    };
    let client_net = if p.giaddr.is_unspecified() {
        if p.ciaddr.is_unspecified() {
            own
        } else {
            p.ciaddr
        }
    } else {
        p.giaddr
    };
    let reply = match s.pool_for(client_net) {
        None => {
            w.drop_packet(DropReason::Dhcp("no_pool"));
            None
        }
        Some(pool) => serve(w, &mut s, pool, kind, p, own, now)
            .map(|(kind, f)| (kind, reply_bytes(p, kind, f))),
    };
    if let Some(e) = w.machines[m as usize].ext.as_deref_mut() {
        e.dhcp_server = Some(s);
    }
    if let Some((kind, payload)) = reply {
        send_reply(w, m, iface, src, p, kind, payload);
    }
}

/// Handles one request from the client in `pool`; returns the reply.
fn serve<'a>(
    w: &mut Hosts,
    s: &'a mut Server,
    pool: usize,
    kind: Kind,
    p: &Parsed,
    own: Ipv4Addr,
    now: Time,
) -> Option<(Kind, Fields<'a>)> {
    let mac = p.chaddr;
    match kind {
        Kind::Discover => {
            let Some(off) = s.choose(pool, mac, p.requested, now) else {
                w.obs.dhcp.pool_exhausted += 1;
                w.drop_packet(DropReason::Dhcp("pool_exhausted"));
                return None;
            };
            let hold = now + std::time::Duration::from_nanos(OFFER_HOLD);
            let bound = s.slots[pool][off as usize];
            if !(bound.state == Use::Bound && bound.mac == mac && bound.until > now) {
                s.set(pool, off, mac, Use::Offered, hold);
            }
            let ip = s.addr(pool, off);
            Some((Kind::Offer, lease_fields(s, pool, ip, own)))
        }
        Kind::Request => request(s, pool, p, own, now),
        Kind::Decline => {
            if let Some(off) = p.requested.and_then(|ip| {
                let first = u32::from(s.config.pools[pool].first);
                let v = u32::from(ip).checked_sub(first)?;
                (v < s.config.pools[pool].size()).then_some(v)
            }) {
                let until = now + std::time::Duration::from_nanos(DECLINE_HOLD);
                s.set(pool, off, mac, Use::Declined, until);
            }
            None
        }
        Kind::Release => {
            if let Some(&off) = s.by_client.get(&(pool as u32, mac)) {
                if s.addr(pool, off) == p.ciaddr {
                    s.set(pool, off, mac, Use::Free, Time::ZERO);
                    s.by_client.remove(&(pool as u32, mac));
                }
            }
            None
        }
        Kind::Inform => {
            let mut f = lease_fields(s, pool, Ipv4Addr::UNSPECIFIED, own);
            f.lease_s = None;
            f.t1_s = None;
            f.t2_s = None;
            Some((Kind::Ack, f))
        }
        Kind::Offer | Kind::Ack | Kind::Nak => {
            w.drop_packet(DropReason::Dhcp("not_a_request"));
            None
        }
    }
}

/// A REQUEST (§4.3.2): selecting an offer (ours or another server's),
/// renewing or rebinding a lease. ACK when the client holds or was offered
/// the address it names, silence when another server's lease is being
/// rebound or another server's offer taken, NAK otherwise.
fn request<'a>(
    s: &'a mut Server,
    pool: usize,
    p: &Parsed,
    own: Ipv4Addr,
    now: Time,
) -> Option<(Kind, Fields<'a>)> {
    let mac = p.chaddr;
    let selecting = p.server_id;
    if selecting.is_some_and(|id| id != own) {
        // The client took another server's offer: ours is free.
        if let Some(&off) = s.by_client.get(&(pool as u32, mac)) {
            if s.slots[pool][off as usize].state == Use::Offered {
                s.set(pool, off, mac, Use::Free, Time::ZERO);
            }
        }
        return None;
    }
    let wanted = if p.ciaddr.is_unspecified() {
        p.requested
    } else {
        Some(p.ciaddr)
    };
    let held = s.by_client.get(&(pool as u32, mac)).copied();
    let ok = match (wanted, held) {
        (Some(ip), Some(off)) => {
            let slot = s.slots[pool][off as usize];
            s.addr(pool, off) == ip
                && slot.mac == mac
                && matches!(slot.state, Use::Offered | Use::Bound)
                && (slot.until > now || slot.state == Use::Bound)
        }
        _ => false,
    };
    if let (true, Some(off)) = (ok, held) {
        let lease_end = now + std::time::Duration::from_secs(u64::from(s.config.lease_s));
        s.set(pool, off, mac, Use::Bound, lease_end);
        let ip = s.addr(pool, off);
        return Some((Kind::Ack, lease_fields(s, pool, ip, own)));
    }
    if selecting.is_none() && !p.ciaddr.is_unspecified() && !p.broadcast && held.is_none() {
        // REBINDING to a server that never leased it: stay silent
        // (§4.3.2), another server may own the lease.
        return None;
    }
    Some((
        Kind::Nak,
        Fields {
            op: 2,
            server_id: Some(own),
            message: Some("address not available"),
            broadcast: true,
            ..Fields::default()
        },
    ))
}

/// The fields of an OFFER or ACK of `ip` from pool `pool`.
fn lease_fields(s: &Server, pool: usize, ip: Ipv4Addr, own: Ipv4Addr) -> Fields<'_> {
    let pl = &s.config.pools[pool];
    Fields {
        op: 2,
        yiaddr: ip,
        server_id: Some(own),
        lease_s: Some(s.config.lease_s),
        t1_s: s.config.t1_s,
        t2_s: s.config.t2_s,
        mask: Some(Ipv4Addr::from(mask(pl.prefix))),
        router: pl.router,
        dns: &s.config.dns,
        domain: s.config.domain.as_deref(),
        ..Fields::default()
    }
}

/// Encodes reply `f` of `kind` to request `p`.
fn reply_bytes(p: &Parsed, kind: Kind, mut f: Fields) -> Vec<u8> {
    f.kind = Some(kind);
    f.xid = p.xid;
    f.chaddr = p.chaddr;
    f.giaddr = p.giaddr;
    f.broadcast = f.broadcast || p.broadcast;
    if kind == Kind::Ack && p.kind == Some(Kind::Inform) {
        f.ciaddr = p.ciaddr;
    }
    build(&f)
}

/// Sends a reply where §4.1 says it goes.
fn send_reply(
    w: &mut Hosts,
    m: MachineId,
    iface: IfaceId,
    src: Ipv4Addr,
    p: &Parsed,
    kind: Kind,
    payload: Vec<u8>,
) {
    let (dst, port, route) = if !p.giaddr.is_unspecified() {
        (p.giaddr, SERVER_PORT, crate::ipv4::route(w, m, p.giaddr))
    } else if !p.ciaddr.is_unspecified() && kind != Kind::Nak {
        let to = if src.is_unspecified() { p.ciaddr } else { src };
        (to, CLIENT_PORT, crate::ipv4::route(w, m, to))
    } else {
        (
            Ipv4Addr::BROADCAST,
            CLIENT_PORT,
            Ok(super::broadcast_route(w, m, iface)),
        )
    };
    match route {
        Ok(route) => {
            super::send(w, m, route, SERVER_PORT, dst, port, payload);
            count(w, kind);
        }
        Err(_) => w.drop_packet(DropReason::NoRoute),
    }
}
