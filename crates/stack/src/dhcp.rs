//! DHCP (RFC 2131, options RFC 2132): machines get their addresses from
//! servers, through relay agents on routers.
//!
//! All three roles are services of the machine's stack, driven by
//! datagrams and timers like ARP, not application tasks:
//!
//! - [`client`]: a machine with `[Protocol name='DHCP']` starts with
//!   `0.0.0.0` on its first interface and runs the client state machine of
//!   RFC 2131 Fig. 5 (INIT, SELECTING, REQUESTING, BOUND, RENEWING,
//!   REBINDING), with the randomized exponential back-off of §4.1 and the
//!   T1/T2 timers of §4.4.5. Its applications wait for the first lease
//!   (`crate::addr::wait_configured`).
//! - [`server`]: address pools, reservations by MAC, the lease table and
//!   the options a lease carries (mask, router, DNS servers, domain, lease
//!   time, T1, T2), NDL `[Application name='dhcp_server']`.
//! - [`relay`]: a router's relay agent (RFC 2131 §4.1, RFC 1542 §4):
//!   requests from a LAN go on to the servers with `giaddr` set to the
//!   router's address there; replies come back to that address and are
//!   broadcast on that LAN.
//!
//! # Wire format
//! Messages are read with `dhcproto`'s zero-copy view ([`Parsed::parse`]),
//! after checks of the fixed header and the magic cookie; a message that
//! fails is dropped and counted as `malformed(dhcp)`. They are written by
//! [`build`] (by hand, for speed; tests decode its output with
//! `dhcproto`) and padded to the 300 bytes of a BOOTP message (RFC 1542
//! §2.1, what Linux's dhclient sends).
//!
//! # Where this departs from RFC 2131
//! - Clients always set the BROADCAST flag (§4.1 allows it for clients
//!   that cannot take unicast before they are configured), so servers and
//!   relays broadcast OFFERs, ACKs and NAKs to an unconfigured client on
//!   its LAN. A reply to a configured client (`ciaddr` set) is unicast.
//! - Only a machine's first interface is configured by DHCP.
//! - No INIT-REBOOT (a client has no storage across runs), no option
//!   overload of `sname`/`file`, no relay agent options (RFC 3046).

pub mod client;
pub mod fanout;
#[doc(hidden)]
pub mod fuzz;
pub mod relay;
pub mod server;
#[cfg(test)]
mod tests;

use crate::counters::DropReason;
use crate::hosts::Hosts;
use crate::ipv4::{self, NextHop, Route};
use crate::machine::{IfaceId, MachineId};
use dhcproto::v4;
use elvis_message::Message;
use elvis_wire::checksum::Checksum;
use elvis_wire::{udp, IpProtocol};
use smallvec::SmallVec;
use std::net::Ipv4Addr;

/// The server's (and relay's) UDP port.
pub const SERVER_PORT: u16 = 67;
/// The client's UDP port.
pub const CLIENT_PORT: u16 = 68;
/// A BOOTP message is padded to at least this many bytes (RFC 1542 §2.1).
pub const MIN_LEN: usize = 300;
/// Relays drop requests that crossed more relays than this (RFC 1542
/// §4.1.1 suggests 16).
pub const MAX_HOPS: u8 = 16;

/// DHCP message types (option 53), in RFC 2132 §9.6 numbering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Kind {
    Discover = 1,
    Offer = 2,
    Request = 3,
    Decline = 4,
    Ack = 5,
    Nak = 6,
    Release = 7,
    Inform = 8,
}

impl Kind {
    fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::Discover,
            2 => Kind::Offer,
            3 => Kind::Request,
            4 => Kind::Decline,
            5 => Kind::Ack,
            6 => Kind::Nak,
            7 => Kind::Release,
            8 => Kind::Inform,
            _ => return None,
        })
    }

    /// The report's name of the message type.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Discover => "discover",
            Kind::Offer => "offer",
            Kind::Request => "request",
            Kind::Decline => "decline",
            Kind::Ack => "ack",
            Kind::Nak => "nak",
            Kind::Release => "release",
            Kind::Inform => "inform",
        }
    }

    /// Every kind, in numbering order.
    pub const ALL: [Kind; 8] = [
        Kind::Discover,
        Kind::Offer,
        Kind::Request,
        Kind::Decline,
        Kind::Ack,
        Kind::Nak,
        Kind::Release,
        Kind::Inform,
    ];
}

/// The run's DHCP counters (in the report's `dhcp` section).
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Messages sent by clients and servers, by kind (index `kind - 1`).
    pub sent: [u64; 8],
    /// Requests and replies passed on by relay agents.
    pub relayed: u64,
    /// Leases bound by clients (first leases and new ones after a loss).
    pub bound: u64,
    /// Leases renewed or rebound (extended before they ended).
    pub extended: u64,
    /// Leases that ended without an extension (the address was lost).
    pub expired: u64,
    /// Requests a server could not offer an address for (pools empty).
    pub pool_exhausted: u64,
}

impl Stats {
    /// Messages of `kind` sent.
    pub fn sent(&self, kind: Kind) -> u64 {
        self.sent[kind as usize - 1]
    }
}

/// The fields and options of a DHCP message that elvis reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// BOOTREQUEST (1) or BOOTREPLY (2).
    pub op: u8,
    pub hops: u8,
    pub xid: u32,
    pub secs: u16,
    pub broadcast: bool,
    pub ciaddr: Ipv4Addr,
    pub yiaddr: Ipv4Addr,
    pub giaddr: Ipv4Addr,
    pub chaddr: [u8; 6],
    /// Option 53 (`None` in a plain BOOTP message).
    pub kind: Option<Kind>,
    /// Option 54.
    pub server_id: Option<Ipv4Addr>,
    /// Option 50.
    pub requested: Option<Ipv4Addr>,
    /// Option 51, seconds.
    pub lease_s: Option<u32>,
    /// Options 58 and 59, seconds.
    pub t1_s: Option<u32>,
    pub t2_s: Option<u32>,
    /// Option 1.
    pub mask: Option<Ipv4Addr>,
    /// Option 3 (the first router).
    pub router: Option<Ipv4Addr>,
    /// Option 6.
    pub dns: SmallVec<[Ipv4Addr; 2]>,
    /// Option 15.
    pub domain: Option<String>,
}

impl Default for Parsed {
    fn default() -> Self {
        let any = Ipv4Addr::UNSPECIFIED;
        Parsed {
            op: 0,
            hops: 0,
            xid: 0,
            secs: 0,
            broadcast: false,
            ciaddr: any,
            yiaddr: any,
            giaddr: any,
            chaddr: [0; 6],
            kind: None,
            server_id: None,
            requested: None,
            lease_s: None,
            t1_s: None,
            t2_s: None,
            mask: None,
            router: None,
            dns: SmallVec::new(),
            domain: None,
        }
    }
}

impl Parsed {
    /// Reads a DHCP message (the UDP payload).
    ///
    /// # Errors
    /// What is wrong, for the drop counter: too short, not Ethernet
    /// addresses, no magic cookie, an option of the wrong length.
    pub fn parse(bytes: &[u8]) -> Result<Parsed, &'static str> {
        let m = v4::borrowed::Message::new(bytes).map_err(|_| "too short")?;
        // The view slices `chaddr` by `hlen`: check it first.
        if m.htype() != v4::HType::Eth || m.hlen() != 6 {
            return Err("not ethernet");
        }
        if bytes[236..240] != v4::MAGIC {
            return Err("no magic cookie");
        }
        let op = bytes[0];
        if op != 1 && op != 2 {
            return Err("bad op");
        }
        let mut p = Parsed {
            op,
            hops: m.hops(),
            xid: m.xid(),
            secs: m.secs(),
            broadcast: m.flags().broadcast(),
            ciaddr: m.ciaddr(),
            yiaddr: m.yiaddr(),
            giaddr: m.giaddr(),
            ..Parsed::default()
        };
        p.chaddr.copy_from_slice(m.chaddr());
        let addr = |d: &[u8]| -> Result<Ipv4Addr, &'static str> {
            let a: [u8; 4] = d
                .get(..4)
                .and_then(|s| s.try_into().ok())
                .ok_or("short option")?;
            Ok(Ipv4Addr::from(a))
        };
        let secs = |d: &[u8]| -> Result<u32, &'static str> {
            let a: [u8; 4] = d.try_into().map_err(|_| "bad option length")?;
            Ok(u32::from_be_bytes(a))
        };
        for o in m.opts() {
            let d = o.data();
            match u8::from(o.code()) {
                53 => {
                    p.kind = Some(
                        d.first()
                            .copied()
                            .and_then(Kind::from_u8)
                            .ok_or("bad type")?,
                    )
                }
                54 => p.server_id = Some(addr(d)?),
                50 => p.requested = Some(addr(d)?),
                51 => p.lease_s = Some(secs(d)?),
                58 => p.t1_s = Some(secs(d)?),
                59 => p.t2_s = Some(secs(d)?),
                1 => p.mask = Some(addr(d)?),
                3 => p.router = Some(addr(d)?),
                6 => {
                    if d.is_empty() || d.len() % 4 != 0 {
                        return Err("bad option length");
                    }
                    p.dns = d
                        .chunks(4)
                        .map(|c| Ipv4Addr::new(c[0], c[1], c[2], c[3]))
                        .collect();
                }
                15 => p.domain = Some(String::from_utf8_lossy(d).into_owned()),
                _ => {}
            }
        }
        Ok(p)
    }
}

/// What goes into a message [`build`] makes.
#[derive(Clone, Debug)]
pub struct Fields<'a> {
    pub op: u8,
    pub xid: u32,
    pub secs: u16,
    pub broadcast: bool,
    pub ciaddr: Ipv4Addr,
    pub yiaddr: Ipv4Addr,
    pub siaddr: Ipv4Addr,
    pub giaddr: Ipv4Addr,
    pub chaddr: [u8; 6],
    pub kind: Option<Kind>,
    pub server_id: Option<Ipv4Addr>,
    pub requested: Option<Ipv4Addr>,
    pub lease_s: Option<u32>,
    pub t1_s: Option<u32>,
    pub t2_s: Option<u32>,
    pub mask: Option<Ipv4Addr>,
    pub router: Option<Ipv4Addr>,
    pub dns: &'a [Ipv4Addr],
    pub domain: Option<&'a str>,
    /// Option 12 (the client's name).
    pub hostname: Option<&'a str>,
    /// Option 55 (a client's parameter request list).
    pub params: bool,
    /// Option 56 (a NAK's reason).
    pub message: Option<&'a str>,
}

impl Default for Fields<'_> {
    fn default() -> Self {
        let any = Ipv4Addr::UNSPECIFIED;
        Fields {
            op: 1,
            xid: 0,
            secs: 0,
            broadcast: false,
            ciaddr: any,
            yiaddr: any,
            siaddr: any,
            giaddr: any,
            chaddr: [0; 6],
            kind: None,
            server_id: None,
            requested: None,
            lease_s: None,
            t1_s: None,
            t2_s: None,
            mask: None,
            router: None,
            dns: &[],
            domain: None,
            hostname: None,
            params: false,
            message: None,
        }
    }
}

/// Encodes a DHCP message, padded to [`MIN_LEN`] bytes: the BOOTP header
/// (RFC 2131 §2), the magic cookie, option 53 first and the others in
/// code order, then the end option.
///
/// Written by hand rather than with `dhcproto`'s encoder, which builds an
/// owned message and an option map per call: at a million booting hosts
/// that was the largest part of the run (`elvis-bench dhcp`). Tests
/// decode what this writes with `dhcproto` and compare every field.
pub fn build(f: &Fields) -> Vec<u8> {
    let mut b = vec![0u8; 236];
    b[0] = if f.op == 2 { 2 } else { 1 };
    b[1] = 1; // Ethernet
    b[2] = 6;
    b[4..8].copy_from_slice(&f.xid.to_be_bytes());
    b[8..10].copy_from_slice(&f.secs.to_be_bytes());
    if f.broadcast {
        b[10] = 0x80;
    }
    for (at, a) in [
        (12, f.ciaddr),
        (16, f.yiaddr),
        (20, f.siaddr),
        (24, f.giaddr),
    ] {
        b[at..at + 4].copy_from_slice(&a.octets());
    }
    b[28..34].copy_from_slice(&f.chaddr);
    b.reserve(MIN_LEN - 236);
    b.extend_from_slice(&v4::MAGIC);
    let mut opt = |code: u8, data: &[u8]| {
        // Longer values would need RFC 3396's splitting; none is.
        let data = &data[..data.len().min(255)];
        b.push(code);
        b.push(data.len() as u8);
        b.extend_from_slice(data);
    };
    if let Some(k) = f.kind {
        opt(53, &[k as u8]);
    }
    if let Some(a) = f.mask {
        opt(1, &a.octets());
    }
    if let Some(a) = f.router {
        opt(3, &a.octets());
    }
    if !f.dns.is_empty() {
        let d: SmallVec<[u8; 8]> = f.dns.iter().flat_map(|a| a.octets()).collect();
        opt(6, &d);
    }
    if let Some(h) = f.hostname {
        opt(12, h.as_bytes());
    }
    if let Some(d) = f.domain {
        opt(15, d.as_bytes());
    }
    if let Some(a) = f.requested {
        opt(50, &a.octets());
    }
    if let Some(s) = f.lease_s {
        opt(51, &s.to_be_bytes());
    }
    if let Some(a) = f.server_id {
        opt(54, &a.octets());
    }
    if f.params {
        // Mask, router, DNS servers, domain, lease, T1, T2.
        opt(55, &[1, 3, 6, 15, 51, 58, 59]);
    }
    if let Some(t) = f.message {
        opt(56, t.as_bytes());
    }
    if let Some(s) = f.t1_s {
        opt(58, &s.to_be_bytes());
    }
    if let Some(s) = f.t2_s {
        opt(59, &s.to_be_bytes());
    }
    if f.kind.is_some() && f.op == 1 {
        let mut id = [1u8; 7];
        id[1..].copy_from_slice(&f.chaddr);
        opt(61, &id);
    }
    b.push(255);
    if b.len() < MIN_LEN {
        b.resize(MIN_LEN, 0);
    }
    b
}

/// A datagram arrived for UDP port 67 or 68 of machine `m` and no socket
/// took it: the machine's DHCP roles look at it. Returns false when the
/// machine has none (the caller counts `no_socket`).
pub fn receive(
    w: &mut Hosts,
    m: MachineId,
    iface: IfaceId,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    port: u16,
    msg: &mut Message,
) -> bool {
    #[derive(PartialEq)]
    enum Role {
        Client,
        Server,
        Relay,
    }
    let role = match w.machines[m as usize].ext.as_deref() {
        Some(e) if port == CLIENT_PORT && e.dhcp.is_some() => Role::Client,
        Some(e) if port == SERVER_PORT && e.dhcp_server.is_some() => Role::Server,
        Some(e) if port == SERVER_PORT && e.dhcp_relay.is_some() => Role::Relay,
        _ => return false,
    };
    let bytes = msg.to_vec();
    let p = match Parsed::parse(&bytes) {
        Ok(p) => p,
        Err(_) => {
            w.drop_packet(DropReason::Malformed("dhcp"));
            return true;
        }
    };
    match role {
        Role::Client if p.op == 2 => client::receive(w, m, &p),
        Role::Client => w.drop_packet(DropReason::Dhcp("not_a_reply")),
        Role::Server if p.op == 1 => server::receive(w, m, iface, src, &p),
        Role::Server => w.drop_packet(DropReason::Dhcp("not_a_request")),
        Role::Relay => relay::receive(w, m, iface, dst, &p, bytes),
    }
    true
}

/// Sends `payload` from UDP port `sport` of machine `m` to `dst`:`dport`
/// along `route` (a broadcast route names the interface).
pub(crate) fn send(
    w: &mut Hosts,
    m: MachineId,
    route: Route,
    sport: u16,
    dst: Ipv4Addr,
    dport: u16,
    payload: Vec<u8>,
) {
    let mut msg = Message::from(payload);
    let len = msg.len();
    let mut sum = Checksum::new();
    crate::udp::sum_message(&mut sum, &msg);
    let header = msg.push_front(udp::HEADER_LEN);
    let repr = udp::Repr {
        src_port: sport,
        dst_port: dport,
    };
    repr.emit_header(
        &mut udp::Packet::new_unchecked(header),
        route.src,
        dst,
        len,
        sum,
    );
    w.obs.stats.udp_sent += 1;
    let ttl = w.stack.default_ttl;
    ipv4::send_tos(w, m, route, dst, IpProtocol::Udp, ttl, false, 0, &mut msg);
}

/// The route of a limited broadcast out of interface `iface`, from the
/// interface's address (`0.0.0.0` before it has one).
pub(crate) fn broadcast_route(w: &Hosts, m: MachineId, iface: IfaceId) -> Route {
    let ifc = w.machines[m as usize].ifaces[iface as usize];
    Route {
        iface,
        src: ifc.ip,
        next: NextHop::Broadcast,
        mtu: w.fabric.networks[ifc.net as usize].cfg.mtu,
    }
}

/// Counts a message of `kind` sent.
pub(crate) fn count(w: &mut Hosts, kind: Kind) {
    w.obs.dhcp.sent[kind as usize - 1] += 1;
}

/// Returns interface `iface`'s MAC address.
pub(crate) fn mac_of(w: &Hosts, m: MachineId, iface: IfaceId) -> [u8; 6] {
    let ifc = w.machines[m as usize].ifaces[iface as usize];
    elvis_net::port_mac(ifc.net, ifc.port).0
}
