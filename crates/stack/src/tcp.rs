//! TCP (RFC 9293) on a simulated machine.
//!
//! The connection state machine is the sans-IO `tcb::Tcb`; this module
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
//! | window update after a read | when the open window fell to half the buffer and can double (`__tcp_cleanup_rbuf`) | yes |
//! | Nagle | Minshall's variant: hold a short segment only behind an unacknowledged short one | yes (`tcp_minshall_check`) |
//! | header prediction | in-order segments of an ESTABLISHED connection skip the general input walk | yes (`tcp_rcv_established`) |
//! | send / receive buffer | 4 MiB each | autotuning is not modelled |
//! | MSL | 30 s (TIME-WAIT 60 s) | yes |
//! | give up after | 15 consecutive RTOs without progress (≈ 15 min) | yes (`tcp_retries2`; Linux counts the time instead) |
//! | TS.Recent | updated before the sequence check, never backwards (RFC 7323 App. D) | yes |
//! | PAWS (`paws.rs`, RFC 7323 §5) | on with timestamps; TS.Recent invalid after 2^31 µs idle | Linux: 24 days (1 ms clock) |
//! | congestion control | CUBIC, leaving slow start by HyStart's ACK-train and delay tests (`slow_start`: HyStart++ or plain on request) | yes (`hystart=1`) |
//! | ISN | RFC 6528: 4 µs clock + keyed hash of the 4-tuple | yes |
//! | ECN ([`ecn`], RFC 3168) | accept when asked, never ask (`EcnMode::Accept`) | yes (`tcp_ecn=2`) |
//! | loss detection ([`rack`]) | RACK-TLP (RFC 8985, `rack`); RFC 6675 (`rfc6675`) on request | yes (`tcp_recovery=1`) |
//! | SYN backlog ([`syncookie`]) | half-open connections up to the listen backlog; beyond it SYN cookies (RFC 4987, Linux's encoding), or drops with `syn_cookies='off'` | yes (`tcp_syncookies=1`) |
//! | sending in fast recovery (`prr.rs`) | Proportional Rate Reduction (RFC 9937) with SACK; NewReno (RFC 6582) without | yes (Linux uses PRR without SACK too) |
//!
//! TCP does not block on the NIC as a UDP sender does: its windows bound
//! what it sends, and beyond [`NIC_LIMIT`] queued frames (Linux's default
//! `txqueuelen`) its segments are dropped at the NIC, which it sees as
//! loss (Linux's TCP small queues would throttle earlier; not modelled).
//!
//! Per-socket options (set on a `TcpSocket` (elvis-sim) before
//! `connect`/`listen`; accepted connections inherit the listener's) override
//! the buffer sizes (the window scale follows the receive buffer), the
//! congestion control, Nagle, keep-alive ([`keepalive`]) and
//! `SO_REUSEADDR`: a port held only by connections in TIME-WAIT can be
//! bound with it and not without, as on Linux.
//!
//! # Gaps
//! RACK-TLP's gaps are listed in [`rack`] (go-back-N after
//! an RTO). RFC 5961 §5 (ACKs far below
//! `SND.UNA` get a challenge ACK) is not checked: such ACKs are ignored. A
//! retransmitted SYN reaching SYN-RECEIVED is not answered at once (Linux
//! resends the SYN-ACK); the SYN-ACK's own timer resends it. Urgent data,
//! PMTU discovery. A
//! SYN for a 4-tuple still in TIME-WAIT is not taken as a new connection
//! (Linux accepts one with a higher sequence number). `SO_REUSEADDR` does
//! not let two live (non-TIME-WAIT) sockets share a port, and a port
//! checked at `bind` is not reserved until `listen`/`connect`.

pub mod buffers;
pub mod deadline;
pub mod dst;
pub mod ecn;
pub mod keepalive;
pub mod paws;
pub mod prr;
pub mod rack;
pub mod rate;
pub mod rx;
pub mod syncookie;
pub mod tcb;
pub mod trace;

use crate::counters::DropReason;
use crate::endpoint::{alloc_slot, SocketError, SocketSlot};
use crate::hosts::TaskId;
use crate::hosts::{Event, Hosts};
use crate::machine::MachineId;
use elvis_kernel::rng::mix;
use elvis_kernel::Time;
use elvis_message::Message;
use elvis_tcpcc::{Algorithm, SlowStart};
use elvis_wire::checksum::{self, Checksum};
use elvis_wire::tcp::{self, Control, Repr, SeqNumber};
use elvis_wire::{Checksums, IpProtocol};
use hashbrown::HashTable;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::rc::Rc;
use std::time::Duration;
use tcb::{Effects, Segment, State, Tcb};

pub use ecn::EcnMode;
pub use rack::LossDetection;
pub use tcb::{CcModel, TcpStats};

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
    /// Consecutive retransmission timeouts without progress after which
    /// an established connection fails with `TimedOut`.
    pub max_retries: u32,
    pub sack: bool,
    /// Report duplicate segments with DSACK blocks (RFC 2883) when SACK
    /// is negotiated: Linux's `tcp_dsack`, on by default.
    pub dsack: bool,
    pub timestamps: bool,
    pub congestion: Algorithm,
    pub initial_window_segments: u64,
    /// Explicit Congestion Notification (RFC 3168): Linux's `tcp_ecn`.
    pub ecn: EcnMode,
    /// Loss detection: RACK-TLP (RFC 8985, the default, as Linux's
    /// `tcp_recovery=1`) or the RFC 6675 duplicate-ACK threshold.
    pub loss_detection: LossDetection,
    /// Undo a window reduction once the loss recovery is found spurious
    /// (every retransmission DSACKed, or a timestamp echo older than the
    /// first one; `tcb/undo.rs`). On by default: Linux always undoes and
    /// has no switch; turning it off measures what undo buys.
    pub undo: bool,
    /// Proportional Rate Reduction (RFC 9937, `prr.rs`) paces what fast
    /// recovery sends when SACK is on. On by default, as Linux (which has
    /// no switch); off gives RFC 6675's rule (send while the pipe is
    /// below `ssthresh`), to measure what PRR changes.
    pub prr: bool,
    /// How CUBIC leaves slow start before a loss: HyStart as Linux (the
    /// default, Linux's `hystart=1`), HyStart++ (RFC 9406) or not at all.
    pub slow_start: SlowStart,
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
            dsack: true,
            timestamps: true,
            congestion: Algorithm::Cubic,
            initial_window_segments: 10,
            ecn: EcnMode::Accept,
            loss_detection: LossDetection::Rack,
            undo: true,
            prr: true,
            slow_start: SlowStart::HyStart,
        }
    }
}

/// Per-socket options (`setsockopt` before `connect`/`listen`); `None`
/// means the simulation's [`TcpConfig`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SockOpts {
    pub sndbuf: Option<usize>,
    pub rcvbuf: Option<usize>,
    pub congestion: Option<Algorithm>,
    pub ecn: Option<EcnMode>,
    pub loss_detection: Option<LossDetection>,
    pub nodelay: bool,
    pub reuseaddr: bool,
    pub keepalive: Option<keepalive::Keepalive>,
    /// The port given to `bind` (else an ephemeral one).
    pub local_port: Option<u16>,
}

impl SockOpts {
    /// Returns the configuration a new connection with these options gets:
    /// the simulation's, shared, unless an option changes it.
    fn config(&self, w: &Hosts) -> Rc<TcpConfig> {
        if self.sndbuf.is_none()
            && self.rcvbuf.is_none()
            && self.congestion.is_none()
            && self.ecn.is_none()
            && self.loss_detection.is_none()
        {
            return w.stack.tcp.clone();
        }
        let mut cfg = TcpConfig::clone(&w.stack.tcp);
        cfg.sndbuf = self.sndbuf.unwrap_or(cfg.sndbuf);
        cfg.rcvbuf = self.rcvbuf.unwrap_or(cfg.rcvbuf);
        cfg.congestion = self.congestion.unwrap_or(cfg.congestion);
        cfg.ecn = self.ecn.unwrap_or(cfg.ecn);
        cfg.loss_detection = self.loss_detection.unwrap_or(cfg.loss_detection);
        Rc::new(cfg)
    }

    /// Applies the options the TCB itself holds.
    fn apply(&self, tcb: &mut Tcb) {
        tcb.nodelay = self.nodelay;
        tcb.keepalive = self
            .keepalive
            .map(|k| Box::new(keepalive::KeepaliveTimer::new(k, None)));
    }
}

/// A machine's TCP lookup tables, kept in step with its socket table so
/// that demux, `bind` and ephemeral-port choice cost O(1) however many
/// connections the machine holds (the maps are only looked up, never
/// iterated, so their order cannot leak into results; they use the Fx hash
/// because every arriving segment is demuxed through `conns` and SipHash
/// cost more than the rest of the lookup).
///
/// `conns` holds only slot numbers (4 bytes and a control byte per
/// bucket, against 12 and one for a map keyed by the 4-tuple): a slot's
/// key is read from its connection in the socket table, which the lookup
/// touches next anyway.
#[derive(Default)]
pub struct TcpIndex {
    /// Connection slots, hashed by (local port, remote address).
    conns: HashTable<u32>,
    /// Listeners by port.
    listeners: FxHashMap<u16, u32>,
    /// TCP sockets (connections and listeners) per local port.
    ports: FxHashMap<u16, u32>,
    /// No ephemeral port below this is free.
    eph_low: u16,
}

/// Returns the hash a connection is indexed under: the key packed in one
/// word and mixed (SplitMix64's finalizer; a single Fx multiply leaves the
/// low bits, which pick the bucket, blind to the local port, the only
/// part that varies among a client's connections to one server).
fn conn_hash(local: u16, remote: SocketAddrV4) -> u64 {
    let key = u64::from(local) << 48 | u64::from(remote.port()) << 32;
    mix(key | u64::from(u32::from(*remote.ip())))
}

/// Returns the hash of the indexed connection in slot `s`, read from the
/// socket table when the index grows (`hash`, already known, for the slot
/// being added).
fn slot_hash(sockets: &[SocketSlot], s: u32, adding: u32, hash: u64) -> u64 {
    match sockets.get(s as usize) {
        _ if s == adding => hash,
        Some(SocketSlot::Tcp(t)) => conn_hash(t.tcb.local.port(), t.tcb.remote),
        // An indexed slot holds its connection except inside `drive`'s
        // closure (which cannot reach the index) and after `drive` freed
        // it (which removes it from the index at once).
        _ => unreachable!("TCP index: slot {s} holds no connection"),
    }
}

fn index(w: &mut Hosts, m: MachineId) -> &mut TcpIndex {
    &mut w.machines[m as usize].ext().tcp
}

/// Indexes the connection just put in `slot`.
fn add_conn(w: &mut Hosts, m: MachineId, local: u16, remote: SocketAddrV4, slot: u32) {
    let machine = &mut w.machines[m as usize];
    let ext = machine.ext.get_or_insert_with(Default::default);
    ext.tcp.add_conn(local, remote, slot, &machine.sockets);
}

impl TcpIndex {
    fn add_port(&mut self, port: u16) {
        *self.ports.entry(port).or_insert(0) += 1;
    }

    fn remove_port(&mut self, port: u16) {
        if let Some(n) = self.ports.get_mut(&port) {
            *n -= 1;
            if *n == 0 {
                self.ports.remove(&port);
                self.eph_low = self.eph_low.min(port);
            }
        }
    }

    /// Adds the connection in `slot` (its key must not be indexed yet).
    fn add_conn(&mut self, local: u16, remote: SocketAddrV4, slot: u32, sockets: &[SocketSlot]) {
        let hash = conn_hash(local, remote);
        self.conns
            .insert_unique(hash, slot, |&s| slot_hash(sockets, s, slot, hash));
        self.add_port(local);
    }

    /// Removes the connection in `slot`, indexed under this key.
    fn remove_conn(&mut self, local: u16, remote: SocketAddrV4, slot: u32) {
        let hash = conn_hash(local, remote);
        if let Ok(e) = self.conns.find_entry(hash, |&s| s == slot) {
            e.remove();
            self.remove_port(local);
        }
    }

    /// Returns the slot of the connection from `local` to `remote`.
    fn conn(&self, sockets: &[SocketSlot], local: u16, remote: SocketAddrV4) -> Option<u32> {
        let hit = |&s: &u32| match sockets.get(s as usize) {
            Some(SocketSlot::Tcp(t)) => t.tcb.local.port() == local && t.tcb.remote == remote,
            _ => false,
        };
        self.conns.find(conn_hash(local, remote), hit).copied()
    }

    /// Returns the lowest free ephemeral port (IANA range).
    fn ephemeral(&mut self) -> Option<u16> {
        let p = (self.eph_low.max(49_152)..=u16::MAX).find(|p| !self.ports.contains_key(p))?;
        self.eph_low = p;
        Some(p)
    }
}

/// A connection in a machine's socket table, with its application side.
pub struct TcpSock {
    pub tcb: Tcb,
    pub reader: Option<TaskId>,
    pub writer: Option<TaskId>,
    /// The listener that will hand this connection to `accept`.
    pub listener: Option<u32>,
    /// The application dropped its handle: free the slot once closed.
    pub orphan: bool,
    timer_gen: u32,
    timer_at: deadline::Deadline,
    /// The connection's id in the run's connection log.
    pub id: u64,
    /// When it was opened and last had data acknowledged.
    pub life: trace::Life,
}

impl TcpSock {
    /// A connection opened at `now` with log id `id`, held by its
    /// application, no task waiting and no timer armed.
    fn new(tcb: Tcb, id: u64, now: Time) -> Self {
        TcpSock {
            tcb,
            reader: None,
            writer: None,
            listener: None,
            orphan: false,
            timer_gen: 0,
            timer_at: deadline::Deadline::NONE,
            id,
            life: trace::Life::new(now),
        }
    }
}

/// A listening socket.
pub struct Listener {
    pub port: u16,
    pub backlog: usize,
    /// Established connections not yet accepted (slots).
    pub ready: VecDeque<u32>,
    /// Connections in SYN-RECEIVED.
    pub embryonic: usize,
    /// When a SYN last found the SYN backlog full ([`syncookie`]).
    pub last_overflow: Option<Time>,
    pub waiter: Option<TaskId>,
    /// Options the accepted connections inherit.
    pub opts: SockOpts,
}

/// Returns the ISN for a 4-tuple (RFC 6528: ISN = M + F(4-tuple, secret)).
fn initial_seq(w: &Hosts, m: MachineId, local: SocketAddrV4, remote: SocketAddrV4) -> SeqNumber {
    let clock = (w.now().as_nanos() / 4_000) as u32;
    let key = mix(w.config.seed ^ mix(u64::from(m) ^ 0x7463_7000));
    let tuple = (u64::from(u32::from(*local.ip())) << 32 | u64::from(u32::from(*remote.ip())))
        ^ (u64::from(local.port()) << 16 | u64::from(remote.port())) << 7;
    SeqNumber(clock.wrapping_add(mix(key ^ tuple) as u32))
}

fn new_cc(w: &Hosts, alg: Algorithm, mss: usize) -> elvis_tcpcc::Controller {
    let mut cc = elvis_tcpcc::new(alg, mss as u64, w.stack.tcp.initial_window_segments);
    cc.set_slow_start(w.stack.tcp.slow_start);
    cc
}

fn mtu_towards(w: &Hosts, m: MachineId, dst: Ipv4Addr) -> Result<usize, SocketError> {
    let route = super::ipv4::route(w, m, dst)?;
    Ok(route.mtu.min(65_535) as usize)
}

/// Returns true if `port` is in use; with `reuseaddr` (`SO_REUSEADDR`),
/// connections in TIME-WAIT do not count (Linux `inet_csk_bind_conflict`).
pub fn port_taken(w: &Hosts, m: MachineId, port: u16, reuseaddr: bool) -> bool {
    let machine = &w.machines[m as usize];
    let used = machine
        .ext
        .as_deref()
        .is_some_and(|e| e.tcp.ports.contains_key(&port));
    if !used || !reuseaddr {
        return used;
    }
    machine.sockets.iter().any(|s| match s {
        SocketSlot::TcpListener(l) => l.port == port,
        SocketSlot::Tcp(t) => {
            t.tcb.local.port() == port && !(reuseaddr && t.tcb.state == State::TimeWait)
        }
        _ => false,
    })
}

pub fn check_tcp_enabled(w: &Hosts, m: MachineId) -> Result<(), SocketError> {
    let g = w.machines[m as usize].group;
    if w.groups[g as usize].protocols.tcp {
        Ok(())
    } else {
        Err(SocketError::ProtocolNotAvailable("TCP"))
    }
}

/// Opens a listening socket on `port` (`listen(2)` with `backlog`).
pub fn listen(
    w: &mut Hosts,
    m: MachineId,
    port: u16,
    backlog: usize,
    opts: SockOpts,
) -> Result<u32, SocketError> {
    check_tcp_enabled(w, m)?;
    if port_taken(w, m, port, opts.reuseaddr) {
        return Err(SocketError::AddrInUse(port));
    }
    let l = Listener {
        port,
        backlog: backlog.max(1),
        ready: VecDeque::new(),
        embryonic: 0,
        last_overflow: None,
        waiter: None,
        opts,
    };
    let slot = alloc_slot(w, m, SocketSlot::TcpListener(Box::new(l)));
    let ix = index(w, m);
    ix.listeners.insert(port, slot);
    ix.add_port(port);
    Ok(slot)
}

/// Starts an active open to `remote`; returns the connection's slot.
pub fn connect(
    w: &mut Hosts,
    m: MachineId,
    remote: SocketAddrV4,
    opts: &SockOpts,
) -> Result<u32, SocketError> {
    check_tcp_enabled(w, m)?;
    let route = super::ipv4::route(w, m, *remote.ip())?;
    let port = match opts.local_port {
        Some(p) => {
            // The 4-tuple must be unique (Linux: EADDRNOTAVAIL).
            let machine = &w.machines[m as usize];
            let clash = machine
                .ext
                .as_deref()
                .is_some_and(|e| e.tcp.conn(&machine.sockets, p, remote).is_some());
            if clash || port_taken(w, m, p, opts.reuseaddr) {
                return Err(SocketError::AddrInUse(p));
            }
            p
        }
        None => index(w, m).ephemeral().ok_or(SocketError::NoPortsLeft)?,
    };
    let local = SocketAddrV4::new(route.src, port);
    let iss = initial_seq(w, m, local, remote);
    let mtu = mtu_towards(w, m, *remote.ip())?;
    let cfg = opts.config(w);
    let cc = new_cc(w, cfg.congestion, mtu - 40);
    let mut tcb = Tcb::connect(&cfg, local, remote, iss, cc, mtu);
    opts.apply(&mut tcb);
    let id = w.obs.conns.open(m, &tcb, w.sched.queue.now());
    let sock = TcpSock::new(tcb, id, w.now());
    let slot = alloc_slot(w, m, SocketSlot::Tcp(Box::new(sock)));
    add_conn(w, m, local.port(), remote, slot);
    drive(w, m, slot, |tcb, now, out| {
        tcb.output(now, out);
        Effects::default()
    });
    Ok(slot)
}

/// Runs `f` on the connection in `slot` (taken out of the table so that
/// the world stays usable), then sends what it produced, wakes tasks and
/// reschedules the connection's timer.
///
/// Long because it is the one place a connection is taken out of its slot
/// and put back, with the NIC's room set before `f` and, after it, the
/// trace, wake-ups, timer, freeing and sending all working on the taken
/// socket and the one route lookup (`dst`, `nic`, `held`), which split
/// would have to be passed between the stages.
pub fn drive(
    w: &mut Hosts,
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
    let mut out = std::mem::take(&mut w.stack.tcp_out);
    // One route lookup (cached per connection, see `dst`) serves the NIC
    // check and every segment sent.
    let dst = if w.config.tcp_fast_path {
        dst::lookup(w, m, slot, sock.tcb.local, sock.tcb.remote)
    } else {
        let flow = tcp_flow(sock.tcb.local, sock.tcb.remote);
        let route = super::ipv4::route_flow(w, m, *sock.tcb.remote.ip(), Some(&flow)).ok();
        dst::Dst { route, link: None }
    };
    let route = dst.route;
    // NIC room for data segments (TCP waits for the NIC as Linux's TSQ
    // makes it do, instead of overflowing the queue).
    let nic = route.and_then(|r| {
        (r.next != super::ipv4::NextHop::Local)
            .then(|| w.machines[m as usize].ifaces[r.iface as usize])
    });
    let held = nic.map(|ifc| elvis_net::nic_frames(w, ifc.net, ifc.port));
    sock.tcb.budget = match (nic, held) {
        (Some(ifc), Some(held)) => {
            let txqueuelen = w.fabric.networks[ifc.net as usize].cfg.txqueuelen;
            txqueuelen.saturating_sub(held)
        }
        _ => u32::MAX,
    };
    sock.tcb.nic_blocked = false;
    sock.tcb.tso_frames = if nic.is_some() && super::offload::of(w, m).tso {
        u8::MAX
    } else {
        0
    };
    let acked = sock.tcb.stats.bytes_acked;
    let fx = f(&mut sock.tcb, now, &mut out);
    if sock.tcb.stats.bytes_acked != acked {
        sock.life.last_ack_ns = now.as_nanos();
    }
    if let Some(trace) = w.obs.conns.trace.as_mut() {
        trace.observe(sock.id, now, &mut sock.tcb);
    }
    let blocked = nic.filter(|_| sock.tcb.nic_blocked);
    if let Some(ifc) = blocked {
        elvis_net::wait_for_room_endpoint(w, ifc.net, ifc.port, m, slot);
    }
    let (local, remote) = (sock.tcb.local, sock.tcb.remote);
    // Listener bookkeeping and wake-ups.
    let mut wake: smallvec::SmallVec<[TaskId; 3]> = smallvec::SmallVec::new();
    if fx.readable {
        wake.extend(sock.reader.take());
    }
    if fx.writable && writer_may_run(&sock.tcb) {
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
    let earlier = match (deadline, sock.timer_at.get()) {
        (Some(d), Some(at)) => d < at,
        (Some(_), None) => true,
        (None, _) => false,
    };
    if earlier {
        sock.timer_gen = sock.timer_gen.wrapping_add(1);
        sock.timer_at = deadline.into();
        if let Some(at) = deadline {
            let timer = super::Timer::Tcp {
                slot,
                gen: sock.timer_gen,
            };
            w.sched
                .queue
                .schedule(at, m, Event::Timer { machine: m, timer });
        }
    }
    if free {
        w.obs.conns.end(sock.id, m, &mut sock.tcb, sock.life);
        w.machines[m as usize].sockets[slot as usize] = SocketSlot::Free;
        w.machines[m as usize].slot_freed(slot);
        index(w, m).remove_conn(local.port(), remote, slot);
    } else {
        w.machines[m as usize].sockets[slot as usize] = SocketSlot::Tcp(sock);
    }
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
    // Each segment's headers go in front of its payload where it lies
    // (no move of the 150-byte message per layer).
    let mut room = dst::certain_room(w, &dst, held);
    for seg in out.iter_mut() {
        if seg.gso_size > 0 {
            send_tso(w, m, &dst, local, remote, seg, &mut room);
        } else {
            send_one(w, m, &dst, local, remote, seg, &mut room);
        }
    }
    out.clear();
    if let Some(ifc) = blocked {
        // Now that the NIC holds what fitted: wake when it drains.
        elvis_net::arm_room_wake(w, ifc.net, ifc.port);
    }
    if w.stack.tcp_out.capacity() < out.capacity() {
        w.stack.tcp_out = out;
    }
    for t in wake {
        w.wake(t);
    }
}

/// Sends one segment as one frame (or fragments) along `dst`; `room`:
/// frames the NIC certainly takes (see `dst::certain_room`).
fn send_one(
    w: &mut Hosts,
    m: MachineId,
    dst: &dst::Dst,
    local: SocketAddrV4,
    remote: SocketAddrV4,
    seg: &mut Segment,
    room: &mut u32,
) {
    match &dst.link {
        Some(link) if dst::fits(link, seg) => {
            let known = *room > 0;
            *room = room.saturating_sub(1);
            dst::transmit_linked(w, m, link, local, remote, seg, known);
        }
        _ => {
            *room = 0; // fragments: several frames
            transmit(w, m, local, remote, dst.route, seg);
        }
    }
}

/// Sends a TSO segment as the NIC would (`super::offload`): cut into
/// frames of `gso_size` payload bytes, each with the segment's header,
/// its own sequence number, and PSH on the last only (Linux's
/// `tcp_gso_segment`).
fn send_tso(
    w: &mut Hosts,
    m: MachineId,
    dst: &dst::Dst,
    local: SocketAddrV4,
    remote: SocketAddrV4,
    seg: &mut Segment,
    room: &mut u32,
) {
    if let Some(link) = dst.link.as_ref().filter(|l| dst::fits_frames(l, seg)) {
        return dst::transmit_tso(w, m, link, local, remote, seg, room);
    }
    let size = usize::from(seg.gso_size);
    let total = seg.payload.len();
    let psh = seg.repr.control == Control::Psh;
    let mut off = 0;
    while off < total {
        let n = size.min(total - off);
        let mut repr = seg.repr;
        repr.seq_number = seg.repr.seq_number + off;
        repr.payload_len = n;
        repr.control = if psh && off + n == total {
            Control::Psh
        } else {
            Control::None
        };
        let mut piece = Segment {
            repr,
            payload: seg.payload.slice(off..off + n),
            ect: seg.ect,
            gso_size: 0,
        };
        send_one(w, m, dst, local, remote, &mut piece, room);
        off += n;
    }
}

/// Returns true when a writer blocked on a full send buffer should be woken:
/// on an error or a state change; once the free space is at least half the
/// bytes still queued (Linux `sk_stream_is_writeable`, where
/// `sk_stream_wspace` must reach `sk_stream_min_wspace`: a third of the
/// buffer free when it was full); or once the bytes not yet sent have
/// fallen to the free space. The writer then refills the buffer in large
/// pieces instead of one ACK's worth per wake-up. The last rule stands in
/// for Linux's send-buffer autotuning (`tcp_sndbuf_expand`, not modelled):
/// when the window approaches the buffer, Linux grows the buffer; here the
/// writer is woken early enough that the connection never runs out of data
/// it could send.
fn writer_may_run(tcb: &Tcb) -> bool {
    let space = tcb.send_space();
    tcb.error.is_some()
        || !matches!(tcb.state, State::Established | State::CloseWait)
        || space >= tcb.sndbuf.len() / 2
        || tcb.unsent() <= space
}

/// Frames TCP may keep in a NIC before its segments are dropped there
/// (Linux's default `txqueuelen` under pfifo_fast).
pub const NIC_LIMIT: u32 = 1000;

/// Returns the 5-tuple a connection's segments hash to (ECMP).
pub fn tcp_flow(local: SocketAddrV4, remote: SocketAddrV4) -> super::route::FlowKey {
    super::route::FlowKey {
        src: 0,
        dst: u32::from(*remote.ip()),
        proto: 6,
        sport: local.port(),
        dport: remote.port(),
        ident: 0,
    }
}

/// Pushes one segment down to IPv4 along `route` (the route to `remote`,
/// `None` if there is none).
fn transmit(
    w: &mut Hosts,
    m: MachineId,
    local: SocketAddrV4,
    remote: SocketAddrV4,
    route: Option<super::ipv4::Route>,
    seg: &mut Segment,
) {
    let Some(mut route) = route else {
        return w.drop_packet(DropReason::Unsupported("tcp: no route"));
    };
    // The connection's own address is the source, whichever interface
    // the route leaves by (Linux: `inet_saddr`; the TCP checksum covers
    // it). A route's preferred source would differ on a multi-homed host
    // when the connection was accepted on another interface's address or
    // the route changed between runs.
    route.src = *local.ip();
    if route.next != super::ipv4::NextHop::Local {
        let ifc = w.machines[m as usize].ifaces[route.iface as usize];
        let limit = w.fabric.networks[ifc.net as usize]
            .cfg
            .txqueuelen
            .max(NIC_LIMIT);
        if elvis_net::nic_frames(w, ifc.net, ifc.port) >= limit {
            return w.drop_packet(DropReason::Net(elvis_net::DropReason::NicQueueFull));
        }
    }
    let msg = &mut seg.payload;
    let mut sum = Checksum::new();
    super::udp::sum_message(&mut sum, msg);
    let len = msg.len();
    let header = msg.push_front(seg.repr.header_len());
    seg.repr.emit_header(
        &mut tcp::Packet::new_unchecked(header),
        *local.ip(),
        *remote.ip(),
        len,
        sum,
    );
    w.obs.stats.tcp_sent += 1;
    let ecn = ecn::EcnState::codepoint(seg.ect);
    super::ipv4::send_ecn(w, m, route, *remote.ip(), IpProtocol::Tcp, ecn, msg);
}

/// Sends a bare RST answering `seg` (no connection matched).
fn send_rst(
    w: &mut Hosts,
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
    let flow = tcp_flow(local, remote);
    let route = super::ipv4::route_flow(w, m, *remote.ip(), Some(&flow)).ok();
    transmit(
        w,
        m,
        local,
        remote,
        route,
        &mut Segment {
            repr,
            payload: Message::new(),
            ect: false,
            gso_size: 0,
        },
    );
}

/// Checks, parses and demuxes an arriving segment (RFC 9293 §3.10.7);
/// `ip_ecn` is the ECN field of the datagram that carried it.
pub fn receive(
    w: &mut Hosts,
    m: MachineId,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    ip_ecn: u8,
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
    // Parsed where it lies (the value owns what it needs).
    let parsed = msg
        .front(hlen)
        .map(|h| Repr::parse(&tcp::Packet::new_unchecked(h), src, dst, Checksums::Ignore));
    let Some(Ok(mut repr)) = parsed else {
        return w.drop_packet(DropReason::Malformed("tcp"));
    };
    let _ = msg.pop_front(hlen);
    repr.payload_len = msg.len();
    w.obs.stats.tcp_received += 1;
    demux(w, m, src, dst, ip_ecn, &repr, msg, 1);
}

/// Hands a checked and parsed segment (`msg`: its payload; merged by GRO
/// from `segs` segments) to its connection or listener, or answers it
/// with RST (RFC 9293 §3.10.7.1–2).
#[allow(clippy::too_many_arguments)]
pub fn demux(
    w: &mut Hosts,
    m: MachineId,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    ip_ecn: u8,
    repr: &Repr,
    msg: &mut Message,
    segs: u32,
) {
    let local = SocketAddrV4::new(dst, repr.dst_port);
    let remote = SocketAddrV4::new(src, repr.src_port);
    // A connection for the 4-tuple?
    let machine = &w.machines[m as usize];
    let ix = machine.ext.as_deref().map(|e| &e.tcp);
    let conn = ix.and_then(|ix| ix.conn(&machine.sockets, local.port(), remote));
    if let Some(slot) = conn {
        // The payload moves once, into the connection.
        drive(w, m, slot, |tcb, now, out| {
            tcb.input_merged(now, repr, ip_ecn, std::mem::take(msg), segs, out)
        });
        return;
    }
    let listener = ix.and_then(|ix| ix.listeners.get(&local.port()).copied());
    match listener {
        Some(l) if repr.control == Control::Syn && repr.ack_number.is_none() => {
            passive_open(w, m, l, local, remote, repr);
        }
        Some(l) if repr.control != Control::Rst && repr.ack_number.is_some() => {
            if syncookie::ack(w, m, l, syncookie::Tuple { local, remote }, repr, msg) {
                return;
            }
            // RFC 9293 §3.10.7.2: an ACK to a listener gets a RST.
            send_rst(w, m, local, remote, repr, repr.payload_len);
            w.drop_packet(DropReason::NoSocket);
        }
        Some(_) => w.drop_packet(DropReason::NoSocket),
        None => {
            // RFC 9293 §3.10.7.1: CLOSED — answer with RST.
            send_rst(w, m, local, remote, repr, repr.payload_len);
            w.drop_packet(DropReason::NoSocket);
        }
    }
}

/// A SYN reached a listener: create a connection in SYN-RECEIVED (or,
/// past the SYN backlog, answer with a cookie or drop it: `syncookie`).
/// Out of line: once per connection, and `demux`, which every segment
/// crosses, stays small enough to take the established path inline.
#[inline(never)]
fn passive_open(
    w: &mut Hosts,
    m: MachineId,
    l: u32,
    local: SocketAddrV4,
    remote: SocketAddrV4,
    syn: &Repr,
) {
    let now = w.now();
    let defence = syncookie::of(w, m);
    let Some(SocketSlot::TcpListener(lst)) = w.machines[m as usize].sockets.get_mut(l as usize)
    else {
        return;
    };
    if lst.ready.len() >= lst.backlog {
        // Accept queue full: drop the SYN, cookies or not (Linux's
        // `sk_acceptq_is_full`); the client retries.
        return w.drop_packet(DropReason::ListenQueueFull);
    }
    // The SYN backlog (`syncookie`): past it, a cookie or a drop.
    let full = syncookie::backlog_full(lst, defence, now);
    // A SYN from an address with no route back (a spoofed one) is dropped
    // before it takes a place in the backlog.
    let Ok(mtu) = mtu_towards(w, m, *remote.ip()) else {
        return w.drop_packet(DropReason::NoRoute);
    };
    if full {
        let t = syncookie::Tuple { local, remote };
        return syncookie::overflow(w, m, t, syn, mtu);
    }
    let Some(SocketSlot::TcpListener(lst)) = w.machines[m as usize].sockets.get_mut(l as usize)
    else {
        return;
    };
    lst.embryonic += 1;
    let opts = lst.opts.clone();
    let iss = initial_seq(w, m, local, remote);
    let cfg = opts.config(w);
    let cc = new_cc(w, cfg.congestion, mtu - 40);
    let mut tcb = Tcb::accept(&cfg, local, remote, iss, cc, mtu, syn);
    opts.apply(&mut tcb);
    let id = w.obs.conns.open(m, &tcb, w.sched.queue.now());
    let sock = TcpSock {
        listener: Some(l),
        orphan: true,
        ..TcpSock::new(tcb, id, w.now())
    };
    let slot = alloc_slot(w, m, SocketSlot::Tcp(Box::new(sock)));
    add_conn(w, m, local.port(), remote, slot);
    drive(w, m, slot, |tcb, now, out| {
        tcb.output(now, out);
        Effects::default()
    });
}

/// The NIC has room again: let the connection send.
pub fn kick(w: &mut Hosts, m: MachineId, slot: u32) {
    drive(w, m, slot, |tcb, now, out| {
        if tcb.state != State::Closed {
            tcb.output(now, out);
        }
        Effects::default()
    });
}

/// A connection's timer fired.
pub fn on_timer(w: &mut Hosts, m: MachineId, slot: u32, gen: u32) {
    let due = match w.machines[m as usize].sockets.get(slot as usize) {
        Some(SocketSlot::Tcp(t)) => t.timer_gen == gen,
        _ => false,
    };
    if due {
        if let Some(SocketSlot::Tcp(t)) = w.machines[m as usize].sockets.get_mut(slot as usize) {
            t.timer_at = deadline::Deadline::NONE;
        }
        drive(w, m, slot, |tcb, now, out| tcb.on_timer(now, out));
    }
}

/// The application dropped its handle: close gracefully (FIN after the
/// queued data) and free the slot when the connection ends; `abortive`
/// (`SO_LINGER` with a zero timeout) resets the connection instead.
pub fn release(w: &mut Hosts, m: MachineId, slot: u32, abortive: bool) {
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
        if abortive || (tcb.rcvbuf.ready_len() > 0 && !tcb.at_eof()) {
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
pub fn close_listener(w: &mut Hosts, m: MachineId, slot: u32) {
    let Some(SocketSlot::TcpListener(_)) = w.machines[m as usize].sockets.get(slot as usize) else {
        return;
    };
    let SocketSlot::TcpListener(l) = std::mem::replace(
        &mut w.machines[m as usize].sockets[slot as usize],
        SocketSlot::Free,
    ) else {
        return;
    };
    w.machines[m as usize].slot_freed(slot);
    let ix = index(w, m);
    ix.listeners.remove(&l.port);
    ix.remove_port(l.port);
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

#[cfg(test)]
mod tests {
    use super::buffers::{RecvBuffer, SendBuffer};
    use super::*;
    use std::mem::size_of;

    /// A socket table holding connections from `local` port numbers to one
    /// server (the clients of `elvis-bench tcp-idle`).
    fn table(ports: std::ops::Range<u16>) -> Vec<SocketSlot> {
        let server = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 80);
        let cfg = TcpConfig::default();
        ports
            .map(|p| {
                let local = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), p);
                let cc = elvis_tcpcc::new(Algorithm::Cubic, 1448, 10);
                let tcb = Tcb::connect(&cfg, local, server, SeqNumber(7), cc, 1500);
                SocketSlot::Tcp(Box::new(TcpSock::new(tcb, 0, Time::ZERO)))
            })
            .collect()
    }

    #[test]
    fn the_connection_index_finds_every_connection_and_forgets_removed_ones() {
        let socks = table(49_152..53_152);
        let key = |s: &SocketSlot| match s {
            SocketSlot::Tcp(t) => (t.tcb.local.port(), t.tcb.remote),
            _ => unreachable!(),
        };
        let mut ix = TcpIndex::default();
        for (slot, s) in socks.iter().enumerate() {
            let (local, remote) = key(s);
            ix.add_conn(local, remote, slot as u32, &socks);
        }
        for (slot, s) in socks.iter().enumerate() {
            let (local, remote) = key(s);
            assert_eq!(ix.conn(&socks, local, remote), Some(slot as u32));
            let other = SocketAddrV4::new(*remote.ip(), 81);
            assert_eq!(ix.conn(&socks, local, other), None);
        }
        for (slot, s) in socks.iter().enumerate().step_by(2) {
            let (local, remote) = key(s);
            ix.remove_conn(local, remote, slot as u32);
        }
        for (slot, s) in socks.iter().enumerate() {
            let (local, remote) = key(s);
            let want = (slot % 2 == 1).then_some(slot as u32);
            assert_eq!(ix.conn(&socks, local, remote), want);
        }
        assert_eq!(ix.ports.len(), socks.len() / 2);
    }

    /// The bucket is picked by the hash's low bits: a client's connections
    /// to one server differ only in the local port, and must still spread
    /// (a plain Fx multiply put 16,000 of them in 32 buckets).
    #[test]
    fn connections_that_differ_only_in_the_local_port_hash_to_distinct_buckets() {
        let server = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 80);
        let buckets: std::collections::BTreeSet<u64> = (49_152..65_152)
            .map(|p| conn_hash(p, server) & 0x7fff)
            .collect();
        // 16,000 keys in 32,768 buckets: about 12,600 distinct if uniform.
        assert!(buckets.len() > 12_000, "{} buckets", buckets.len());
    }

    /// The per-connection structures an idle established connection holds
    /// (measured whole by `elvis-bench tcp-idle`, which also counts the
    /// allocator's rounding, the application's handles and the socket
    /// table's spare capacity); printed with `--nocapture`.
    #[test]
    fn an_idle_connection_holds_at_most_400_bytes_of_tcp_state() {
        let sizes = [
            ("SocketSlot (table entry)", size_of::<SocketSlot>()),
            ("TcpSock (boxed, holds the Tcb)", size_of::<TcpSock>()),
            ("  Tcb", size_of::<Tcb>()),
            (
                "    Controller (CC, inline)",
                size_of::<elvis_tcpcc::Controller>(),
            ),
            ("    Counters", size_of::<tcb::Counters>()),
            ("    SendBuffer (queue boxed)", size_of::<SendBuffer>()),
            ("    RecvBuffer (queue boxed)", size_of::<RecvBuffer>()),
            (
                "    Cold (boxed while in use)",
                size_of::<Option<Box<tcb::Cold>>>(),
            ),
            ("demux index bucket (+1 control)", size_of::<u32>() + 1),
            ("(Cold itself, when allocated)", size_of::<tcb::Cold>()),
        ];
        for (name, n) in sizes {
            println!("{name:34} {n:5} bytes");
        }
        let total = size_of::<SocketSlot>() + size_of::<TcpSock>() + size_of::<u32>() + 1;
        println!("{:34} {total:5} bytes", "total (no buffered data)");
        // The contract, by piece:
        // - TcpSock at most 376 bytes: with glibc malloc's 8-byte header
        //   that is one 384-byte chunk (377 would take a 400-byte one).
        //   It was 552 (+ a 128-byte chunk for CUBIC's boxed state) before
        //   the congestion control went inline, the buffers' queues and the
        //   loss-recovery state behind pointers freed when idle, and the
        //   event counts into 32 bits with a carry.
        // - Tcb at most 312 bytes: TcpSock's application side (wakers, the
        //   listener, the timer event, the connection's id and lifetime)
        //   takes the other 64.
        // - Congestion control at most 64 bytes inline (CUBIC before its
        //   first congestion event; its curve is boxed after it).
        // - Empty buffers and no cold state cost one pointer each.
        // - The demux index stores a slot number per bucket (4 bytes and a
        //   control byte; hashbrown keeps it at most 7/8 full).
        assert!(total <= 400, "{total} bytes per idle connection");
        assert!(size_of::<TcpSock>() <= 376, "{}", size_of::<TcpSock>());
        assert!(size_of::<Tcb>() <= 312, "{}", size_of::<Tcb>());
        assert!(size_of::<elvis_tcpcc::Controller>() <= 64);
        assert_eq!(size_of::<SendBuffer>(), 8);
        assert_eq!(size_of::<RecvBuffer>(), 8);
        assert_eq!(size_of::<Option<Box<tcb::Cold>>>(), 8);
    }
}
