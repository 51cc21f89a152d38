//! Endpoints: the protocol state behind each socket, in the machine's
//! socket table. The socket layer above holds handles (machine, slot) and
//! parks its tasks here; the stack fills receive queues and wakes those
//! tasks by id (`Hosts::wake`), knowing nothing of what a task is.

use crate::hosts::{Hosts, TaskId};
use crate::machine::MachineId;
use elvis_message::Message;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::rc::Rc;
use std::task::Poll;
use thiserror::Error;

/// Why a socket call failed.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SocketError {
    #[error("address in use (port {0})")]
    AddrInUse(u16),
    #[error("address not available: {0}")]
    AddrNotAvailable(Ipv4Addr),
    #[error("host unreachable: {0}")]
    HostUnreachable(Ipv4Addr),
    #[error("unknown host '{0}'")]
    UnknownHost(String),
    #[error("socket is not connected")]
    NotConnected,
    #[error("message too long ({0} bytes)")]
    MessageTooLong(usize),
    #[error("bad socket descriptor (closed)")]
    BadDescriptor,
    #[error("protocol {0} is not available on this machine")]
    ProtocolNotAvailable(&'static str),
    #[error("connection refused")]
    ConnectionRefused,
    #[error("connection reset by peer")]
    ConnectionReset,
    #[error("connection timed out")]
    TimedOut,
    #[error("broken pipe (the connection can no longer send)")]
    BrokenPipe,
    #[error("invalid argument: {0}")]
    InvalidInput(&'static str),
    #[error("no ephemeral port left")]
    NoPortsLeft,
    #[error("the socket API was called outside a running simulation")]
    NotInSimulation,
    #[error("the socket API was called re-entrantly")]
    Reentrant,
    #[error("no address: the interface is not configured yet (DHCP has not bound a lease)")]
    NoAddress,
    #[error("address {0} was lost (its DHCP lease ended)")]
    AddressLost(Ipv4Addr),
}

/// Largest UDP payload over IPv4.
pub const MAX_UDP_PAYLOAD: usize = 65_507;

/// One entry of a machine's socket table.
pub enum SocketSlot {
    Free,
    /// Taken out for processing (a TCP connection being driven).
    Busy,
    Udp(UdpEntry),
    Icmp(Box<IcmpState>),
    Tcp(Box<crate::tcp::TcpSock>),
    TcpListener(Box<crate::tcp::Listener>),
}

/// A received datagram.
pub struct Datagram {
    pub from: SocketAddrV4,
    /// The payload's length (kept to spare a walk over its chunks when it
    /// leaves the queue).
    pub len: u32,
    pub payload: Message,
}

/// A UDP socket's state, shared (`Rc`) by the machine's socket table and
/// the application's `UdpSocket` (elvis-sim) handle: one allocation per socket.
///
/// The receive queue is the one piece of a datagram socket that both sides
/// touch for every datagram; sharing it lets a `recv_from` take a datagram
/// (or park its task) without entering the world, finding the machine and
/// the slot. (Linux likewise guards `sk_receive_queue` with its own lock,
/// not the socket lock.)
pub struct UdpShared {
    pub port: u16,
    /// The connected peer (`connect(2)`): the default destination and the
    /// only source accepted.
    pub remote: Cell<Option<SocketAddrV4>>,
    /// TOS byte of the datagrams sent (`IP_TOS`).
    pub tos: Cell<u8>,
    /// Datagrams queued here that arrived with the ECN field at CE
    /// (congestion experienced, RFC 3168 §5): what a receiver that
    /// answers marks (DCQCN's notification point) reads.
    pub ce_received: Cell<u64>,
    /// The socket-table entry is gone (the socket was closed or its
    /// machine crashed): calls on the handle fail with `BadDescriptor`.
    pub closed: Cell<bool>,
    pub rx: RefCell<UdpRx>,
}

/// A socket-table entry of a UDP socket. Dropping it (the socket closed,
/// its machine crashed) marks the shared state closed, so that a handle
/// still holding it reads `BadDescriptor`.
pub struct UdpEntry(pub Rc<UdpShared>);

impl std::ops::Deref for UdpEntry {
    type Target = UdpShared;
    fn deref(&self) -> &UdpShared {
        &self.0
    }
}

impl Drop for UdpEntry {
    fn drop(&mut self) {
        self.0.closed.set(true);
    }
}

/// The receive side of a UDP socket: the queue the stack fills and the
/// application drains.
///
/// The first datagram waiting lies in `head`, inside the socket; only
/// datagrams that arrive while one is already waiting go to `rest`. A
/// socket whose application keeps up (a request/reply exchange, a capture)
/// never allocates a queue, and handing a datagram to a task parked in
/// `recv_from` is one move into `head` and one out of it.
pub struct UdpRx {
    /// The oldest datagram waiting (always older than all of `rest`),
    /// kept as the very pair `recv_from` returns, so that handing it out
    /// is one copy into the caller's result.
    pub head: Option<(Message, SocketAddrV4)>,
    /// `head`'s payload length.
    pub head_len: u32,
    /// Allocated the first time a datagram arrives while one already
    /// waits (and kept): a socket that never needs it costs one word and
    /// nothing to drop.
    #[allow(clippy::box_collection)] // one word, not four, in every socket
    pub rest: Option<Box<VecDeque<Datagram>>>,
    /// Payload bytes queued.
    pub bytes: usize,
    /// Most payload bytes queued (`SO_RCVBUF`).
    pub cap: usize,
    /// The task parked in `recv_from`.
    pub waiter: Option<TaskId>,
    /// An error to report to the next call (`ECONNREFUSED` after an ICMP
    /// Port Unreachable).
    pub error: Option<SocketError>,
}

impl Default for UdpRx {
    fn default() -> Self {
        UdpRx::new()
    }
}

impl UdpRx {
    pub fn new() -> UdpRx {
        UdpRx {
            head: None,
            head_len: 0,
            rest: None,
            bytes: 0,
            cap: usize::MAX,
            waiter: None,
            error: None,
        }
    }

    /// Queues a datagram of `len` payload bytes from `from`, taking it out
    /// of `payload`; returns the task to wake, or `None` with `payload`
    /// untouched when the queue has no room for it.
    #[inline(always)]
    pub fn push(
        &mut self,
        from: SocketAddrV4,
        len: usize,
        payload: &mut Message,
    ) -> Option<Option<TaskId>> {
        if self.bytes + len > self.cap {
            return None;
        }
        self.bytes += len;
        // The message is taken out of the caller's (a plain copy of its
        // bytes and an empty one left behind) straight into its place in
        // the queue; a `mem::swap` with an empty one in place would copy
        // it through a word-by-word swap loop.
        let len = len as u32;
        if self.head.is_none() && self.rest.as_ref().is_none_or(|r| r.is_empty()) {
            // Moved into place without a pass over its 144 bytes (a `take`
            // would copy them out, blank the caller's and copy them in).
            let (msg, _) = self.head.insert((Message::new(), from));
            msg.take_from(payload);
            self.head_len = len;
        } else {
            self.rest.get_or_insert_default().push_back(Datagram {
                from,
                len,
                payload: std::mem::take(payload),
            });
        }
        Some(self.waiter.take())
    }

    /// Sets the error the next call reports; returns the task to wake.
    pub fn set_error(&mut self, e: SocketError) -> Option<TaskId> {
        self.error = Some(e);
        self.waiter.take()
    }

    /// Takes the oldest datagram.
    #[inline]
    pub fn pop(&mut self) -> Option<(Message, SocketAddrV4)> {
        if self.head.is_some() {
            self.bytes -= self.head_len as usize;
            return self.head.take();
        }
        let d = self.rest.as_mut()?.pop_front()?;
        self.bytes -= d.len as usize;
        Some((d.payload, d.from))
    }

    /// A `recv_from`: the pending error, `BadDescriptor` once the
    /// socket-table entry is gone, else the oldest datagram (built in place
    /// in the `Poll`), else registers the task being polled to be woken by
    /// the next datagram (`NotInSimulation` when no task is being polled).
    #[inline(always)]
    pub fn poll_recv(
        &mut self,
        closed: bool,
        task: impl Fn() -> Option<TaskId> + Copy,
    ) -> Poll<Result<(Message, SocketAddrV4), SocketError>> {
        // The common case first: a datagram waiting in `head` goes straight
        // into the caller's result.
        if self.error.is_none() && !closed {
            if let Some(d) = self.head.take() {
                self.bytes -= self.head_len as usize;
                return Poll::Ready(Ok(d));
            }
            // Nothing queued (no overflow queue was ever needed): park.
            if self.rest.is_none() {
                if let Some(task) = task() {
                    self.waiter = Some(task);
                    return Poll::Pending;
                }
            }
        }
        self.poll_recv_slow(closed, task)
    }

    /// [`UdpRx::poll_recv`] without a datagram in `head`, or with an error
    /// to report.
    pub fn poll_recv_slow(
        &mut self,
        closed: bool,
        task: impl FnOnce() -> Option<TaskId>,
    ) -> Poll<Result<(Message, SocketAddrV4), SocketError>> {
        if let Some(e) = self.error.take() {
            return Poll::Ready(Err(e));
        }
        if closed {
            return Poll::Ready(Err(SocketError::BadDescriptor));
        }
        match self.pop() {
            Some(d) => Poll::Ready(Ok(d)),
            // The task's id is a thread-local integer: parking does not
            // borrow the world either.
            None => match task() {
                Some(task) => {
                    self.waiter = Some(task);
                    Poll::Pending
                }
                None => Poll::Ready(Err(SocketError::NotInSimulation)),
            },
        }
    }
}

impl std::fmt::Debug for UdpShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpShared")
            .field("port", &self.port)
            .field("remote", &self.remote.get())
            .finish_non_exhaustive()
    }
}

pub struct IcmpState {
    pub ident: u16,
    pub rx: VecDeque<EchoReply>,
    pub waiter: Option<TaskId>,
}

/// An ICMP echo reply received by an `IcmpSocket` (elvis-sim), or an ICMP error
/// about one of its echo requests.
#[derive(Clone, Debug)]
pub struct EchoReply {
    /// Who sent it: the pinged machine, or the router reporting an error.
    pub from: Ipv4Addr,
    /// The sequence number of the request it answers.
    pub seq: u16,
    /// The echoed data (empty for an error).
    pub data: Message,
    /// The TTL the reply arrived with (0 for an error).
    pub ttl: u8,
    /// `Some` when this is an ICMP error about the request.
    pub error: Option<IcmpError>,
}

/// IP options of one echo request (`IcmpSocket::send_echo_with`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EchoOptions {
    /// Time to live (`None`: the simulation's default, 64 unless
    /// `Simulation::set_default_ttl` (elvis-sim) changed it).
    pub ttl: Option<u8>,
    /// Sets the Don't Fragment bit (default off).
    pub dont_fragment: bool,
}

impl EchoOptions {
    /// Returns the options with time to live `ttl`.
    pub fn ttl(ttl: u8) -> EchoOptions {
        EchoOptions {
            ttl: Some(ttl),
            ..EchoOptions::default()
        }
    }
}

/// An ICMP error (RFC 792) about an echo request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcmpError {
    /// The ICMP type: 3 Destination Unreachable, 11 Time Exceeded.
    pub kind: u8,
    /// The ICMP code (for type 3: 0 net, 1 host, 3 port, 4 fragmentation
    /// needed).
    pub code: u8,
    /// The next-hop MTU of a Fragmentation Needed (RFC 1191), else 0.
    pub mtu: u16,
}

impl IcmpError {
    /// Returns true for Time Exceeded in transit (type 11, code 0).
    pub fn is_time_exceeded(&self) -> bool {
        self.kind == 11 && self.code == 0
    }
}

/// Resolves a machine name to its first address.
pub fn resolve(w: &Hosts, name: &str) -> Result<Ipv4Addr, SocketError> {
    let unknown = || SocketError::UnknownHost(name.to_string());
    let (group, index) = match w.group_by_name.get(name) {
        Some(&g) if !w.groups[g as usize].counted => (g, 0),
        _ => {
            let (base, idx) = name.rsplit_once('-').ok_or_else(unknown)?;
            let canonical = !idx.is_empty()
                && idx.bytes().all(|b| b.is_ascii_digit())
                && (idx == "0" || !idx.starts_with('0'));
            if !canonical {
                return Err(unknown());
            }
            let idx: u32 = idx.parse().map_err(|_| unknown())?;
            let &g = w.group_by_name.get(base).ok_or_else(unknown)?;
            if !w.groups[g as usize].counted || idx >= w.groups[g as usize].len {
                return Err(unknown());
            }
            (g, idx)
        }
    };
    let m = w.groups[group as usize].first + index;
    w.machines[m as usize].primary_ip().ok_or_else(unknown)
}

pub fn join_multicast(w: &mut Hosts, m: MachineId, group: Ipv4Addr) -> Result<(), SocketError> {
    if !group.is_multicast() {
        return Err(SocketError::AddrNotAvailable(group));
    }
    let Some(iface) = w.machines[m as usize].ifaces.first().copied() else {
        return Err(SocketError::AddrNotAvailable(group));
    };
    let mac = elvis_wire::EthernetAddress::from_ipv4_multicast(group).0;
    let members = w.fabric.networks[iface.net as usize]
        .multicast
        .entry(mac)
        .or_default();
    if !members.contains(&iface.port) {
        members.push(iface.port);
    }
    let ext = w.machines[m as usize].ext();
    if !ext.multicast.contains(&group) {
        ext.multicast.push(group);
    }
    Ok(())
}

/// Puts `slot` in the first free entry of machine `m`'s socket table.
/// Tables of more than a few entries (a server with many connections)
/// start the search at a hint kept below the first free entry, so that
/// opening N sockets costs O(N), not O(N²).
pub fn alloc_slot(w: &mut Hosts, m: MachineId, slot: SocketSlot) -> u32 {
    let crate::machine::Machine { sockets, ext, .. } = &mut w.machines[m as usize];
    let start = if sockets.len() < 64 {
        0
    } else {
        ext.get_or_insert_with(Default::default).free_hint as usize
    };
    let start = start.min(sockets.len());
    let i = match sockets[start..]
        .iter()
        .position(|s| matches!(s, SocketSlot::Free))
    {
        Some(i) => {
            sockets[start + i] = slot;
            start + i
        }
        None => {
            sockets.push(slot);
            sockets.len() - 1
        }
    };
    if let Some(e) = ext.as_deref_mut() {
        e.free_hint = e.free_hint.max(i as u32 + 1);
    }
    i as u32
}

pub fn udp_port_taken(w: &Hosts, m: MachineId, port: u16) -> bool {
    w.machines[m as usize]
        .sockets
        .iter()
        .any(|s| matches!(s, SocketSlot::Udp(u) if u.port == port))
}
