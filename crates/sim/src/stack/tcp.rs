//! TCP (RFC 9293) on a simulated machine.
//!
//! The connection state machine is the sans-IO [`tcb::Tcb`]; this module
//! is its glue to the world: it demuxes arriving segments to connections
//! and listeners (RFC 9293 §3.10.7.1–2), answers segments for no connection
//! with RST, pushes the segments a TCB produces down to IPv4 (checksummed
//! over the message's chunks, never copying the payload), keeps one timer
//! event per connection (lazy cancellation by generation), and wakes the
//! tasks waiting on a socket.
//!
//! | option | default | like Linux |
//! |---|---|---|
//! | MSS | MTU − 40 (1448 payload bytes with timestamps) | yes |
//! | window scale, SACK, timestamps | on | yes |
//! | initial / min / max RTO | 1 s / 200 ms / 120 s | yes |
//! | delayed ACK | every 2nd segment or 40 ms | yes (Linux's quick-ack start is not modelled) |
//! | send / receive buffer | 4 MiB each | autotuning is not modelled |
//! | MSL | 30 s (TIME-WAIT 60 s) | yes |
//! | congestion control | CUBIC | yes |
//! | ISN | RFC 6528: 4 µs clock + keyed hash of the 4-tuple | yes |
//!
//! TCP does not block on the NIC as a UDP sender does: its windows bound
//! what it sends, and beyond [`NIC_LIMIT`] queued frames (Linux's default
//! `txqueuelen`) its segments are dropped at the NIC, which it sees as
//! loss (Linux's TCP small queues would throttle earlier; not modelled).
//!
//! # Gaps
//! RACK-TLP (RFC 8985): a lost tail segment, or a lost retransmission of a
//! hole other than `snd_una`, waits for the RTO. Keep-alive, urgent data, ECN (the bits parse but are not acted on),
//! PMTU discovery, HyStart++. PAWS (RFC 7323 §5): timestamps are echoed
//! and timed but old ones are not rejected. RFC 5961 §5 (ACKs far below
//! `SND.UNA` get a challenge ACK) is not checked: such ACKs are ignored.
//! A retransmitted SYN reaching SYN-RECEIVED is not answered at once (Linux
//! resends the SYN-ACK); the SYN-ACK's own timer resends it.

pub(crate) mod buffers;
pub(crate) mod tcb;

use crate::executor::TaskId;
use crate::machine::MachineId;
use crate::report::DropReason;
use crate::socket::{alloc_slot, SocketError, SocketSlot};
use crate::world::{Event, World};
use elvis_kernel::rng::mix;
use elvis_kernel::Time;
use elvis_message::Message;
use elvis_tcpcc::Algorithm;
use elvis_wire::checksum::{self, Checksum};
use elvis_wire::tcp::{self, Control, Repr, SeqNumber};
use elvis_wire::{Checksums, IpProtocol};
use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;
use tcb::{Effects, Segment, State, Tcb};

pub use tcb::TcpStats;

/// TCP settings of a simulation (see the module table for defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct TcpConfig {
    pub sndbuf: usize,
    pub rcvbuf: usize,
    pub initial_rto: Duration,
    pub min_rto: Duration,
    pub max_rto: Duration,
    pub delayed_ack: Duration,
    pub msl: Duration,
    pub syn_retries: u32,
    pub max_retries: u32,
    pub sack: bool,
    pub timestamps: bool,
    pub congestion: Algorithm,
    pub initial_window_segments: u64,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            sndbuf: 4 << 20,
            rcvbuf: 4 << 20,
            initial_rto: Duration::from_secs(1),
            min_rto: Duration::from_millis(200),
            max_rto: Duration::from_secs(120),
            delayed_ack: Duration::from_millis(40),
            msl: Duration::from_secs(30),
            syn_retries: 6,
            max_retries: 15,
            sack: true,
            timestamps: true,
            congestion: Algorithm::Cubic,
            initial_window_segments: 10,
        }
    }
}

/// A connection in a machine's socket table, with its application side.
pub(crate) struct TcpSock {
    pub tcb: Tcb,
    pub reader: Option<TaskId>,
    pub writer: Option<TaskId>,
    /// The listener that will hand this connection to `accept`.
    pub listener: Option<u32>,
    /// The application dropped its handle: free the slot once closed.
    pub orphan: bool,
    timer_gen: u32,
    timer_at: Option<Time>,
}

/// A listening socket.
pub(crate) struct Listener {
    pub port: u16,
    pub backlog: usize,
    /// Established connections not yet accepted (slots).
    pub ready: VecDeque<u32>,
    /// Connections in SYN-RECEIVED.
    pub embryonic: usize,
    pub waiter: Option<TaskId>,
}

/// Returns the ISN for a 4-tuple (RFC 6528: ISN = M + F(4-tuple, secret)).
fn initial_seq(w: &World, m: MachineId, local: SocketAddrV4, remote: SocketAddrV4) -> SeqNumber {
    let clock = (w.now().as_nanos() / 4_000) as u32;
    let key = mix(w.seed ^ mix(u64::from(m) ^ 0x7463_7000));
    let tuple = (u64::from(u32::from(*local.ip())) << 32 | u64::from(u32::from(*remote.ip())))
        ^ (u64::from(local.port()) << 16 | u64::from(remote.port())) << 7;
    SeqNumber(clock.wrapping_add(mix(key ^ tuple) as u32))
}

fn new_cc(w: &World, alg: Algorithm, mss: usize) -> Box<dyn elvis_tcpcc::CongestionControl> {
    elvis_tcpcc::new(alg, mss as u64, w.tcp.initial_window_segments)
}

fn mtu_towards(w: &World, m: MachineId, dst: Ipv4Addr) -> Result<usize, SocketError> {
    let route = super::ipv4::route(w, m, dst)?;
    Ok(route.mtu.min(65_535) as usize)
}

fn port_taken(w: &World, m: MachineId, port: u16) -> bool {
    w.machines[m as usize].sockets.iter().any(|s| match s {
        SocketSlot::TcpListener(l) => l.port == port,
        SocketSlot::Tcp(t) => t.tcb.local.port() == port,
        _ => false,
    })
}

fn check_tcp_enabled(w: &World, m: MachineId) -> Result<(), SocketError> {
    let g = w.machines[m as usize].group;
    if w.groups[g as usize].protocols.tcp {
        Ok(())
    } else {
        Err(SocketError::ProtocolNotAvailable("TCP"))
    }
}

/// Opens a listening socket on `port` (`listen(2)` with `backlog`).
pub(crate) fn listen(
    w: &mut World,
    m: MachineId,
    port: u16,
    backlog: usize,
) -> Result<u32, SocketError> {
    check_tcp_enabled(w, m)?;
    if port_taken(w, m, port) {
        return Err(SocketError::AddrInUse(port));
    }
    let l = Listener {
        port,
        backlog: backlog.max(1),
        ready: VecDeque::new(),
        embryonic: 0,
        waiter: None,
    };
    Ok(alloc_slot(w, m, SocketSlot::TcpListener(Box::new(l))))
}

/// Starts an active open to `remote`; returns the connection's slot.
pub(crate) fn connect(
    w: &mut World,
    m: MachineId,
    remote: SocketAddrV4,
    alg: Option<Algorithm>,
) -> Result<u32, SocketError> {
    check_tcp_enabled(w, m)?;
    let route = super::ipv4::route(w, m, *remote.ip())?;
    let port = (49_152..=u16::MAX)
        .find(|&p| !port_taken(w, m, p))
        .ok_or(SocketError::NoPortsLeft)?;
    let local = SocketAddrV4::new(route.src, port);
    let iss = initial_seq(w, m, local, remote);
    let mtu = mtu_towards(w, m, *remote.ip())?;
    let cfg = w.tcp.clone();
    let cc = new_cc(w, alg.unwrap_or(cfg.congestion), mtu - 40);
    let tcb = Tcb::connect(&cfg, local, remote, iss, cc, mtu);
    let sock = TcpSock {
        tcb,
        reader: None,
        writer: None,
        listener: None,
        orphan: false,
        timer_gen: 0,
        timer_at: None,
    };
    let slot = alloc_slot(w, m, SocketSlot::Tcp(Box::new(sock)));
    drive(w, m, slot, |tcb, now, out| {
        tcb.output(now, out);
        Effects::default()
    });
    Ok(slot)
}

/// Runs `f` on the connection in `slot` (taken out of the table so that
/// the world stays usable), then sends what it produced, wakes tasks and
/// reschedules the connection's timer.
pub(crate) fn drive(
    w: &mut World,
    m: MachineId,
    slot: u32,
    f: impl FnOnce(&mut Tcb, Time, &mut Vec<Segment>) -> Effects,
) {
    let socks = &mut w.machines[m as usize].sockets;
    let Some(entry) = socks.get_mut(slot as usize) else {
        return;
    };
    let SocketSlot::Tcp(_) = entry else { return };
    let SocketSlot::Tcp(mut sock) = std::mem::replace(entry, SocketSlot::Busy) else {
        return;
    };
    let now = w.now();
    let mut out = Vec::new();
    // NIC room for data segments (TCP waits for the NIC as Linux's TSQ
    // makes it do, instead of overflowing the queue).
    let nic = super::ipv4::route(w, m, *sock.tcb.remote.ip())
        .ok()
        .and_then(|r| {
            (r.next != super::ipv4::NextHop::Local)
                .then(|| w.machines[m as usize].ifaces[r.iface as usize])
        });
    sock.tcb.budget = nic.map_or(usize::MAX, |ifc| {
        crate::net::nic_room(w, ifc.net, ifc.port) as usize
    });
    sock.tcb.nic_blocked = false;
    let fx = f(&mut sock.tcb, now, &mut out);
    if sock.tcb.nic_blocked {
        if let Some(ifc) = nic {
            crate::net::wait_for_room(w, ifc.net, ifc.port, m, slot);
        }
    }
    let (local, remote) = (sock.tcb.local, sock.tcb.remote);
    // Listener bookkeeping and wake-ups.
    let mut wake: Vec<TaskId> = Vec::new();
    if fx.readable {
        wake.extend(sock.reader.take());
    }
    if fx.writable {
        wake.extend(sock.writer.take());
    }
    let mut to_listener = None;
    if fx.established {
        match sock.listener.take() {
            Some(l) => to_listener = Some((l, sock.tcb.error.is_none())),
            None => wake.extend(sock.writer.take()),
        }
    }
    let free = sock.orphan && (fx.closed || sock.tcb.state == State::Closed);
    // Timer.
    let deadline = if sock.tcb.state == State::Closed {
        None
    } else {
        sock.tcb.deadline()
    };
    // One pending timer event per connection: a later deadline keeps the
    // event already queued (it re-arms itself when it fires early), so
    // re-arming the RTO on every ACK adds nothing to the event queue.
    let earlier = match (deadline, sock.timer_at) {
        (Some(d), Some(at)) => d < at,
        (Some(_), None) => true,
        (None, _) => false,
    };
    if earlier {
        sock.timer_gen = sock.timer_gen.wrapping_add(1);
        sock.timer_at = deadline;
        if let Some(at) = deadline {
            let timer = super::Timer::Tcp {
                slot,
                gen: sock.timer_gen,
            };
            w.queue.schedule(at, m, Event::Timer { machine: m, timer });
        }
    }
    w.machines[m as usize].sockets[slot as usize] = if free {
        SocketSlot::Free
    } else {
        SocketSlot::Tcp(sock)
    };
    if let Some((l, ok)) = to_listener {
        if let Some(SocketSlot::TcpListener(lst)) =
            w.machines[m as usize].sockets.get_mut(l as usize)
        {
            lst.embryonic = lst.embryonic.saturating_sub(1);
            if ok {
                lst.ready.push_back(slot);
                wake.extend(lst.waiter.take());
            }
        }
    }
    for seg in out {
        transmit(w, m, local, remote, seg);
    }
    for t in wake {
        w.wake(t);
    }
}

/// Frames TCP may keep in a NIC before its segments are dropped there
/// (Linux's default `txqueuelen` under pfifo_fast).
pub const NIC_LIMIT: u32 = 1000;

/// Pushes one segment down to IPv4.
fn transmit(w: &mut World, m: MachineId, local: SocketAddrV4, remote: SocketAddrV4, seg: Segment) {
    let Ok(route) = super::ipv4::route(w, m, *remote.ip()) else {
        return w.drop_packet(DropReason::Unsupported("tcp: no route"));
    };
    if route.next != super::ipv4::NextHop::Local {
        let ifc = w.machines[m as usize].ifaces[route.iface as usize];
        let n = &w.networks[ifc.net as usize];
        let limit = n.cfg.txqueuelen.max(NIC_LIMIT);
        if n.ports[ifc.port as usize].inflight >= limit {
            return w.drop_packet(DropReason::NicQueueFull);
        }
    }
    let mut msg = seg.payload;
    let mut sum = Checksum::new();
    super::udp::sum_message(&mut sum, &msg);
    let len = msg.len();
    let header = msg.push_front(seg.repr.header_len());
    seg.repr.emit_header(
        &mut tcp::Packet::new_unchecked(header),
        *local.ip(),
        *remote.ip(),
        len,
        sum,
    );
    w.stats.tcp_sent += 1;
    super::ipv4::send(w, m, route, *remote.ip(), IpProtocol::Tcp, &mut msg);
}

/// Sends a bare RST answering `seg` (no connection matched).
fn send_rst(
    w: &mut World,
    m: MachineId,
    local: SocketAddrV4,
    remote: SocketAddrV4,
    seg: &Repr,
    payload_len: usize,
) {
    if seg.control == Control::Rst {
        return;
    }
    let repr = tcb::rst_for(seg, payload_len);
    transmit(
        w,
        m,
        local,
        remote,
        Segment {
            repr,
            payload: Message::new(),
        },
    );
}

/// Checks, parses and demuxes an arriving segment (RFC 9293 §3.10.7).
pub(crate) fn receive(
    w: &mut World,
    m: MachineId,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    msg: &mut Message,
) {
    if check_tcp_enabled(w, m).is_err() {
        return w.drop_packet(DropReason::Unsupported("tcp (not enabled)"));
    }
    let total = msg.len();
    let Some(first) = msg.front(tcp::HEADER_LEN) else {
        return w.drop_packet(DropReason::Malformed("tcp"));
    };
    let hlen = usize::from(first[12] >> 4) * 4;
    if hlen < tcp::HEADER_LEN || hlen > total {
        return w.drop_packet(DropReason::Malformed("tcp"));
    }
    let mut sum = checksum::pseudo_header(src, dst, IpProtocol::Tcp, total as u32);
    super::udp::sum_message(&mut sum, msg);
    if sum.finish() != 0 {
        return w.drop_packet(DropReason::BadChecksum("tcp"));
    }
    let Some(header) = msg.front(hlen) else {
        return w.drop_packet(DropReason::Malformed("tcp"));
    };
    let mut copy = [0u8; 60];
    copy[..hlen].copy_from_slice(header);
    let Ok(mut repr) = Repr::parse(
        &tcp::Packet::new_unchecked(&copy[..hlen]),
        src,
        dst,
        Checksums::Ignore,
    ) else {
        return w.drop_packet(DropReason::Malformed("tcp"));
    };
    let _ = msg.pop_front(hlen);
    let payload = std::mem::take(msg);
    repr.payload_len = payload.len();
    w.stats.tcp_received += 1;
    let local = SocketAddrV4::new(dst, repr.dst_port);
    let remote = SocketAddrV4::new(src, repr.src_port);
    // A connection for the 4-tuple?
    let socks = &w.machines[m as usize].sockets;
    let conn = socks.iter().position(|s| matches!(s, SocketSlot::Tcp(t) if t.tcb.local.port() == local.port() && t.tcb.remote == remote));
    if let Some(slot) = conn {
        drive(w, m, slot as u32, |tcb, now, out| {
            tcb.input(now, &repr, payload, out)
        });
        return;
    }
    let listener = socks
        .iter()
        .position(|s| matches!(s, SocketSlot::TcpListener(l) if l.port == local.port()));
    match listener {
        Some(l) if repr.control == Control::Syn && repr.ack_number.is_none() => {
            passive_open(w, m, l as u32, local, remote, &repr);
        }
        Some(_) if repr.control != Control::Rst && repr.ack_number.is_some() => {
            // RFC 9293 §3.10.7.2: an ACK to a listener gets a RST.
            send_rst(w, m, local, remote, &repr, payload.len());
            w.drop_packet(DropReason::NoSocket);
        }
        Some(_) => w.drop_packet(DropReason::NoSocket),
        None => {
            // RFC 9293 §3.10.7.1: CLOSED — answer with RST.
            send_rst(w, m, local, remote, &repr, payload.len());
            w.drop_packet(DropReason::NoSocket);
        }
    }
}

/// A SYN reached a listener: create a connection in SYN-RECEIVED.
fn passive_open(
    w: &mut World,
    m: MachineId,
    l: u32,
    local: SocketAddrV4,
    remote: SocketAddrV4,
    syn: &Repr,
) {
    let Some(SocketSlot::TcpListener(lst)) = w.machines[m as usize].sockets.get_mut(l as usize)
    else {
        return;
    };
    if lst.ready.len() + lst.embryonic >= lst.backlog {
        // Backlog full: drop the SYN (Linux without syncookies); the
        // client retries.
        return w.drop_packet(DropReason::ListenQueueFull);
    }
    lst.embryonic += 1;
    let iss = initial_seq(w, m, local, remote);
    let Ok(mtu) = mtu_towards(w, m, *remote.ip()) else {
        return;
    };
    let cfg = w.tcp.clone();
    let cc = new_cc(w, cfg.congestion, mtu - 40);
    let tcb = Tcb::accept(&cfg, local, remote, iss, cc, mtu, syn);
    let sock = TcpSock {
        tcb,
        reader: None,
        writer: None,
        listener: Some(l),
        orphan: true,
        timer_gen: 0,
        timer_at: None,
    };
    let slot = alloc_slot(w, m, SocketSlot::Tcp(Box::new(sock)));
    drive(w, m, slot, |tcb, now, out| {
        tcb.output(now, out);
        Effects::default()
    });
}

/// The NIC has room again: let the connection send.
pub(crate) fn kick(w: &mut World, m: MachineId, slot: u32) {
    drive(w, m, slot, |tcb, now, out| {
        if tcb.state != State::Closed {
            tcb.output(now, out);
        }
        Effects::default()
    });
}

/// A connection's timer fired.
pub(crate) fn on_timer(w: &mut World, m: MachineId, slot: u32, gen: u32) {
    let due = match w.machines[m as usize].sockets.get(slot as usize) {
        Some(SocketSlot::Tcp(t)) => t.timer_gen == gen,
        _ => false,
    };
    if due {
        if let Some(SocketSlot::Tcp(t)) = w.machines[m as usize].sockets.get_mut(slot as usize) {
            t.timer_at = None;
        }
        drive(w, m, slot, |tcb, now, out| tcb.on_timer(now, out));
    }
}

/// The application dropped its handle: close gracefully (FIN after the
/// queued data) and free the slot when the connection ends.
pub(crate) fn release(w: &mut World, m: MachineId, slot: u32) {
    if let Some(SocketSlot::Tcp(t)) = w.machines[m as usize].sockets.get_mut(slot as usize) {
        t.orphan = true;
        t.reader = None;
        t.writer = None;
    }
    drive(w, m, slot, |tcb, now, out| {
        let mut fx = Effects::default();
        if tcb.state == State::Closed {
            fx.closed = true;
            return fx;
        }
        if tcb.rcvbuf.ready_len() > 0 && !tcb.at_eof() {
            // Unread data at close: RFC 2525 §2.17, reset.
            if let Some(rst) = tcb.abort() {
                out.push(rst);
            }
            fx.closed = true;
            return fx;
        }
        tcb.shutdown_write();
        tcb.output(now, out);
        if tcb.state == State::Closed {
            fx.closed = true;
        }
        fx
    });
}

/// Closes a listener: pending connections are reset.
pub(crate) fn close_listener(w: &mut World, m: MachineId, slot: u32) {
    let Some(SocketSlot::TcpListener(_)) = w.machines[m as usize].sockets.get(slot as usize) else {
        return;
    };
    let SocketSlot::TcpListener(l) = std::mem::replace(
        &mut w.machines[m as usize].sockets[slot as usize],
        SocketSlot::Free,
    ) else {
        return;
    };
    for c in l.ready {
        drive(w, m, c, |tcb, _now, out| {
            if let Some(rst) = tcb.abort() {
                out.push(rst);
            }
            Effects {
                closed: true,
                ..Default::default()
            }
        });
    }
    // Embryonic connections point at this listener; they become orphans.
    for s in w.machines[m as usize].sockets.iter_mut() {
        if let SocketSlot::Tcp(t) = s {
            if t.listener == Some(slot) {
                t.listener = None;
            }
        }
    }
}
