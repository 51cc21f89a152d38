//! Test-only helpers: a few machines on hand-built networks, without
//! elvis-sim's `Simulation`, executor or applications.
//!
//! A [`Lab`] owns a [`Hosts`] and builds it the way
//! `Simulation::add_network` / `add_group` / `attach` (elvis-sim,
//! `simulation/build.rs`) do: one group per machine, `Machine::new`, a port
//! per interface (`Network::add_port`), the address in the network's
//! static neighbour table (`ip_to_port`), point-to-point links in
//! `link_neighbours`, then `ipv4::index_ifaces`.
//!
//! What a machine under test sends is read where it arrives: a [`Tap`] is
//! a foreign machine ([`crate::foreign`]) on the same network whose stack
//! records every frame that reaches it, with its arrival time. Frames go
//! through the real network layer (elvis-net), so a reply addressed to the
//! tap's MAC reaches the tap and nothing else. A tap also sends raw frames
//! ([`Lab::send`]); [`Lab::hand`] gives a frame straight to a machine's
//! stack instead (for frames no network would carry, such as runts).
//!
//! Networks are ideal switches with [`LATENCY`] of propagation, so every
//! frame is a delivery event: nothing happens until the test runs the
//! event queue ([`Lab::run_until`], [`Lab::run_for`]).
//!
//! The frame builders at the end ([`eth`], [`Ip`], [`udp`], [`icmp`],
//! [`arp`], [`checksum`]) write bytes by hand, per the RFCs, and share no
//! code with elvis-wire: a test that checks the stack's output against them
//! checks it against an independent encoding.

use crate::endpoint::{alloc_slot, SocketSlot, UdpEntry, UdpRx, UdpShared};
use crate::foreign::{ForeignCtx, ForeignSlot, ForeignStack};
use crate::hosts::Hosts;
use crate::machine::{Group, Iface, IfaceId, Machine, MachineId, Protocols};
use elvis_kernel::Time;
use elvis_message::Message;
use elvis_net::{NetId, Network, NetworkConfig, NetworkKind};
use std::cell::{Cell, RefCell};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::rc::Rc;
use std::task::Poll;
use std::time::Duration;

/// One-way propagation delay of every [`Lab`] network.
pub(crate) const LATENCY: Duration = Duration::from_micros(1);

/// The address of the host of [`host_and_tap`].
pub(crate) const HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
/// The address of the tap of [`host_and_tap`].
pub(crate) const PEER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
/// A millisecond, the usual wait for a frame to cross a [`Lab`].
pub(crate) const MS: Duration = Duration::from_millis(1);

/// A host `h` (`protocols`) at [`HOST`] and a tap `peer` at [`PEER`] on one
/// LAN: the fixture of most protocol tests.
pub(crate) fn host_and_tap(protocols: Protocols) -> (Lab, MachineId, Tap) {
    let mut lab = Lab::new();
    let net = lab.lan("lan");
    let h = lab.host("h", protocols, net, HOST);
    let peer = lab.tap("peer", net, PEER);
    (lab, h, peer)
}

/// A machine running ARP (and UDP).
pub(crate) const ARP: Protocols = Protocols {
    udp: true,
    arp: true,
    tcp: false,
};

/// A frame that reached a [`Tap`].
#[derive(Clone, Debug)]
pub(crate) struct Captured {
    pub at: Time,
    pub bytes: Vec<u8>,
}

impl Captured {
    /// Returns the EtherType (bytes 12..14).
    pub fn ethertype(&self) -> u16 {
        u16::from_be_bytes([self.bytes[12], self.bytes[13]])
    }

    /// Returns the IPv4 datagram the frame carries, cut to its total
    /// length (without the Ethernet padding).
    pub fn datagram(&self) -> &[u8] {
        assert_eq!(self.ethertype(), 0x0800, "not an IPv4 frame");
        let ip = &self.bytes[14..];
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        &ip[..total]
    }
}

/// The stack of a tap: records what arrives.
struct Recorder(Rc<RefCell<Vec<Captured>>>);

impl ForeignStack for Recorder {
    fn receive(&mut self, cx: &mut ForeignCtx<'_>, _iface: usize, frame: &[u8]) {
        self.0.borrow_mut().push(Captured {
            at: cx.now(),
            bytes: frame.to_vec(),
        });
    }
}

/// A recording machine on one network (see the module docs).
pub(crate) struct Tap {
    pub net: NetId,
    pub port: u32,
    pub mac: [u8; 6],
    frames: Rc<RefCell<Vec<Captured>>>,
}

impl Tap {
    /// Takes the frames recorded so far, in arrival order.
    pub fn take(&self) -> Vec<Captured> {
        std::mem::take(&mut self.frames.borrow_mut())
    }
}

/// Hosts built by hand, and the event loop that runs them.
pub(crate) struct Lab {
    pub w: Hosts,
}

impl Lab {
    pub fn new() -> Lab {
        Lab { w: Hosts::new(1) }
    }

    /// Adds an ideal switched LAN with [`LATENCY`]; returns its id.
    pub fn lan(&mut self, name: &str) -> NetId {
        let mut cfg = NetworkConfig::ideal(name);
        cfg.latency_ns = LATENCY.as_nanos() as u64;
        let id = self.w.fabric.networks.len() as NetId;
        let seed = self.w.config.seed;
        self.w.fabric.networks.push(Network::new(id, cfg, seed));
        id
    }

    /// Adds a machine running `protocols`, in a group of its own.
    pub fn machine(&mut self, name: &str, protocols: Protocols) -> MachineId {
        let w = &mut self.w;
        let gid = w.groups.len() as u32;
        let m = w.machines.len() as MachineId;
        w.groups.push(Group {
            name: name.to_string(),
            counted: false,
            first: m,
            len: 1,
            protocols,
            syn: Default::default(),
        });
        w.group_by_name.insert(name.to_string(), gid);
        w.machines.push(Machine::new(gid));
        m
    }

    /// Plugs machine `m` into `net` with address `ip`; returns the new
    /// interface.
    pub fn attach(&mut self, m: MachineId, net: NetId, ip: Ipv4Addr) -> IfaceId {
        let w = &mut self.w;
        let iface = w.machines[m as usize].ifaces.len() as IfaceId;
        let n = &mut w.fabric.networks[net as usize];
        assert!(!n.ip_to_port.contains_key(&u32::from(ip)), "{ip} is taken");
        let port = n.add_port(m, iface);
        n.ip_to_port.insert(u32::from(ip), port);
        if n.cfg.kind == NetworkKind::Link {
            let links = w.stack.link_neighbours.entry(u32::from(ip)).or_default();
            links.push((net, port));
        }
        w.machines[m as usize].ifaces.push(Iface { net, port, ip });
        crate::ipv4::index_ifaces(w, m);
        iface
    }

    /// Adds a host running `protocols` with one interface on `net` and
    /// no address (as DHCP clients start).
    pub fn unconfigured(&mut self, name: &str, protocols: Protocols, net: NetId) -> MachineId {
        let m = self.machine(name, protocols);
        let w = &mut self.w;
        let port = w.fabric.networks[net as usize].add_port(m, 0);
        let ip = Ipv4Addr::UNSPECIFIED;
        w.machines[m as usize].ifaces.push(Iface { net, port, ip });
        m
    }

    /// Adds a host running `protocols` with one interface, on `net`.
    pub fn host(
        &mut self,
        name: &str,
        protocols: Protocols,
        net: NetId,
        ip: Ipv4Addr,
    ) -> MachineId {
        let m = self.machine(name, protocols);
        self.attach(m, net, ip);
        m
    }

    /// Adds a router: forwarding on, one interface per `(net, ip)`.
    pub fn router(&mut self, name: &str, ifaces: &[(NetId, Ipv4Addr)]) -> MachineId {
        let m = self.machine(name, Protocols::UDP);
        for &(net, ip) in ifaces {
            self.attach(m, net, ip);
        }
        self.w.machines[m as usize].forward = true;
        m
    }

    /// Adds a tap with address `ip` on `net`.
    pub fn tap(&mut self, name: &str, net: NetId, ip: Ipv4Addr) -> Tap {
        let none = Protocols::default();
        let m = self.machine(name, none);
        let frames = Rc::new(RefCell::new(Vec::new()));
        let machine = &mut self.w.machines[m as usize];
        machine.foreign = true;
        let stack = Box::new(Recorder(Rc::clone(&frames)));
        machine.ext().foreign = Some(ForeignSlot::new(stack));
        self.attach(m, net, ip);
        let port = self.w.machines[m as usize].ifaces[0].port;
        Tap {
            net,
            port,
            mac: self.mac(m, 0),
            frames,
        }
    }

    /// Returns the MAC address of interface `iface` of machine `m`.
    pub fn mac(&self, m: MachineId, iface: IfaceId) -> [u8; 6] {
        let ifc = self.w.machines[m as usize].ifaces[iface as usize];
        self.w.fabric.networks[ifc.net as usize].mac(ifc.port).0
    }

    /// Sends the Ethernet frame `frame` from `tap`'s NIC, now (padded to
    /// 60 bytes as a NIC does).
    pub fn send(&mut self, tap: &Tap, frame: Vec<u8>) {
        let mut msg = Message::from_vec(frame);
        msg.pad_to(60);
        elvis_net::transmit(&mut self.w, tap.net, tap.port, &mut msg);
    }

    /// Hands `frame` to the stack of machine `m` as if it had arrived on
    /// `iface` now, without a network.
    pub fn hand(&mut self, m: MachineId, iface: IfaceId, frame: Vec<u8>) {
        let mut msg = Message::from_vec(frame);
        crate::hand_to_stack(&mut self.w, m, iface, &mut msg);
    }

    /// Runs every event due at or before `t`, then moves the clock to `t`.
    pub fn run_until(&mut self, t: Time) {
        while self.w.sched.queue.peek_time().is_some_and(|at| at <= t) {
            let Some((_, event)) = self.w.sched.queue.pop() else {
                break;
            };
            self.w.handle(event);
        }
        self.w.sched.queue.advance_to(t);
    }

    /// Runs the events of the next `d`.
    pub fn run_for(&mut self, d: Duration) {
        let t = self.w.now() + d;
        self.run_until(t);
    }

    /// Sends a UDP datagram of `payload` from port 5000 of machine `m` to
    /// `to` port 7, as a socket's `send_to` does (`udp::send`).
    pub fn send_udp(&mut self, m: MachineId, to: Ipv4Addr, payload: &[u8]) {
        let src = crate::udp::Source {
            machine: m,
            port: 5000,
            tos: 0,
        };
        let mut p = Some(Message::from_vec(payload.to_vec()));
        let r = crate::udp::send(&mut self.w, src, SocketAddrV4::new(to, 7), &mut p, || None);
        assert!(matches!(r, Poll::Ready(Ok(()))), "{r:?}");
    }

    /// Returns the drops so far by report key, sorted.
    pub fn drops(&self) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = (self.w.obs.stats.drops.iter())
            .map(|(r, n)| (r.to_string(), *n))
            .collect();
        v.sort();
        v
    }

    /// Binds a UDP endpoint to `port` on machine `m` (what a socket's
    /// `bind` puts in the socket table); returns its shared state.
    pub fn bind_udp(&mut self, m: MachineId, port: u16) -> Rc<UdpShared> {
        let shared = Rc::new(UdpShared {
            port,
            remote: Cell::new(None),
            tos: Cell::new(0),
            ce_received: Cell::new(0),
            closed: Cell::new(false),
            rx: RefCell::new(UdpRx::new()),
        });
        alloc_slot(
            &mut self.w,
            m,
            SocketSlot::Udp(UdpEntry(Rc::clone(&shared))),
        );
        shared
    }
}

/// Builds a list of expected drops, as [`Lab::drops`] returns them.
pub(crate) fn drops(list: &[(&str, u64)]) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = list.iter().map(|(k, n)| (k.to_string(), *n)).collect();
    v.sort();
    v
}

/// The Internet checksum (RFC 1071): the one's complement of the one's
/// complement sum of `bytes` as big-endian 16-bit words (an odd last byte
/// padded with zero). A block whose checksum field is right sums to zero.
pub(crate) fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in bytes.chunks(2) {
        let hi = u32::from(pair[0]) << 8;
        let lo = pair.get(1).map_or(0, |&b| u32::from(b));
        sum += hi | lo;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An Ethernet II frame: destination, source, EtherType, payload (no
/// padding; [`Lab::send`] pads).
pub(crate) fn eth(dst: [u8; 6], src: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(14 + payload.len());
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// The broadcast MAC address.
pub(crate) const BROADCAST: [u8; 6] = [0xff; 6];

/// The fields of a 20-byte IPv4 header (RFC 791 §3.1), no options.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ip {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub proto: u8,
    pub ttl: u8,
    pub ident: u16,
    pub dont_frag: bool,
    pub more_frags: bool,
    /// Fragment offset in bytes (a multiple of 8).
    pub offset: u16,
}

impl Ip {
    /// A header with TTL 64, identification 0x4242, no flags.
    pub fn new(src: Ipv4Addr, dst: Ipv4Addr, proto: u8) -> Ip {
        Ip {
            src,
            dst,
            proto,
            ttl: 64,
            ident: 0x4242,
            dont_frag: false,
            more_frags: false,
            offset: 0,
        }
    }

    /// Returns the datagram: this header (checksum filled in) and
    /// `payload`.
    pub fn datagram(&self, payload: &[u8]) -> Vec<u8> {
        assert!(
            self.offset.is_multiple_of(8),
            "fragment offsets are in 8-byte units"
        );
        let total = (20 + payload.len()) as u16;
        let flags = u16::from(self.dont_frag) << 14 | u16::from(self.more_frags) << 13;
        let flags_offset = flags | (self.offset / 8);
        let mut d = vec![0x45, 0];
        d.extend_from_slice(&total.to_be_bytes());
        d.extend_from_slice(&self.ident.to_be_bytes());
        d.extend_from_slice(&flags_offset.to_be_bytes());
        d.extend_from_slice(&[self.ttl, self.proto, 0, 0]);
        d.extend_from_slice(&self.src.octets());
        d.extend_from_slice(&self.dst.octets());
        let c = checksum(&d);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        d.extend_from_slice(payload);
        d
    }
}

/// A UDP datagram (RFC 768) from `src:sport` to `dst:dport`, its checksum
/// over the pseudo-header (0 sent as 0xffff).
pub(crate) fn udp(src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let len = (8 + payload.len()) as u16;
    let mut u = Vec::with_capacity(usize::from(len));
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&len.to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    let mut pseudo = Vec::with_capacity(12 + u.len());
    pseudo.extend_from_slice(&src.octets());
    pseudo.extend_from_slice(&dst.octets());
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&len.to_be_bytes());
    pseudo.extend_from_slice(&u);
    let c = match checksum(&pseudo) {
        0 => 0xffff,
        c => c,
    };
    u[6..8].copy_from_slice(&c.to_be_bytes());
    u
}

/// An ICMP message (RFC 792): type, code, checksum, the 4-byte `rest`
/// (identifier and sequence number of an echo), then `body`.
pub(crate) fn icmp(ty: u8, code: u8, rest: [u8; 4], body: &[u8]) -> Vec<u8> {
    let mut m = vec![ty, code, 0, 0];
    m.extend_from_slice(&rest);
    m.extend_from_slice(body);
    let c = checksum(&m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}

/// An ARP packet for Ethernet and IPv4 (RFC 826): hardware type 1,
/// protocol type 0x0800, lengths 6 and 4, `op` (1 request, 2 reply),
/// then sender and target hardware and protocol addresses.
pub(crate) fn arp(op: u16, sha: [u8; 6], spa: Ipv4Addr, tha: [u8; 6], tpa: Ipv4Addr) -> Vec<u8> {
    let mut a = vec![0, 1, 0x08, 0x00, 6, 4];
    a.extend_from_slice(&op.to_be_bytes());
    a.extend_from_slice(&sha);
    a.extend_from_slice(&spa.octets());
    a.extend_from_slice(&tha);
    a.extend_from_slice(&tpa.octets());
    a
}

/// Returns `frame` padded with zeros to the 60-byte Ethernet minimum.
pub(crate) fn padded(mut frame: Vec<u8>) -> Vec<u8> {
    if frame.len() < 60 {
        frame.resize(60, 0);
    }
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checksum_matches_the_worked_example_of_rfc_1071() {
        // RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2 (one's
        // complement); the checksum is its complement.
        let bytes = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum(&bytes), !0xddf2);
        // With the checksum appended, the block sums to zero.
        let mut with = bytes.to_vec();
        with.extend_from_slice(&(!0xddf2u16).to_be_bytes());
        assert_eq!(checksum(&with), 0);
    }

    #[test]
    fn an_ipv4_header_built_here_matches_the_textbook_checksum_example() {
        // A classic worked example of the IPv4 header checksum: the header
        // 4500 0073 0000 4000 4011 xxxx c0a8 0001 c0a8 00c7 has checksum
        // b861.
        let mut ip = Ip::new(
            Ipv4Addr::new(192, 168, 0, 1),
            Ipv4Addr::new(192, 168, 0, 199),
            17,
        );
        ip.ttl = 0x40;
        ip.ident = 0;
        ip.dont_frag = true;
        let d = ip.datagram(&[0; 0x73 - 20]);
        let want = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(d[..20], want);
    }

    #[test]
    fn a_tap_records_a_frame_sent_to_it_after_the_latency() {
        let mut lab = Lab::new();
        let net = lab.lan("lan");
        let a = lab.tap("a", net, Ipv4Addr::new(10, 0, 0, 1));
        let b = lab.tap("b", net, Ipv4Addr::new(10, 0, 0, 2));
        let frame = eth(b.mac, a.mac, 0x88b5, b"hello");
        lab.send(&a, frame.clone());
        lab.run_for(LATENCY - Duration::from_nanos(1));
        assert!(b.take().is_empty(), "not yet");
        lab.run_for(Duration::from_nanos(1));
        let got = b.take();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].at, Time::ZERO + LATENCY);
        assert_eq!(got[0].bytes, padded(frame));
        assert!(a.take().is_empty(), "a unicast frame goes to its port only");
    }
}
