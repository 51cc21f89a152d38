//! The socket layer: UNIX-like datagram and ICMP echo sockets.
//!
//! A socket handle is (machine, slot); its state lives in the machine's
//! socket table inside the world. Blocking calls are futures that register
//! the calling task with the socket (or with the NIC, for a send that finds
//! it full) and return `Pending`; the stack wakes that task by id.
//!
//! A UDP socket's state is one record shared (`Rc`) by the table and the
//! handle, so that `recv_from` takes a datagram from the receive queue
//! without entering the world; the oldest waiting datagram lies inline in
//! the record, so a socket whose application keeps up never allocates a
//! queue (`docs/sockets.md`, "The UDP socket's design").
//!
//! | call | errno a C programmer expects |
//! |---|---|
//! | `udp_bind` on a taken port | `EADDRINUSE` → [`SocketError::AddrInUse`] |
//! | `send_to` an address no network reaches | `EHOSTUNREACH` → [`SocketError::HostUnreachable`] |
//! | `send` on an unconnected socket | `ENOTCONN` → [`SocketError::NotConnected`] |
//! | a datagram over 65,507 bytes | `EMSGSIZE` → [`SocketError::MessageTooLong`] |
//! | any call on a closed socket | `EBADF` → [`SocketError::BadDescriptor`] |
//! | UDP on a machine without UDP | `EPROTONOSUPPORT` → [`SocketError::ProtocolNotAvailable`] |

use crate::host::{current_task, Host};
use crate::stack::udp as udp_send;
use crate::world::{try_with_world, with_world_or, Unavailable};
use elvis_message::Message;
pub use elvis_stack::endpoint::{
    alloc_slot, join_multicast, resolve, udp_port_taken, Datagram, EchoOptions, EchoReply,
    IcmpError, IcmpState, SocketError, SocketSlot, UdpEntry, UdpRx, UdpShared, MAX_UDP_PAYLOAD,
};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

impl From<Unavailable> for SocketError {
    fn from(u: Unavailable) -> Self {
        match u {
            Unavailable::NotRunning => SocketError::NotInSimulation,
            Unavailable::Busy => SocketError::Reentrant,
        }
    }
}

/// First ephemeral port (IANA).
const EPHEMERAL: u16 = 49_152;

mod tcp;
pub use tcp::{
    Accept, Close as TcpClose, Connect, Recv as TcpRecv, Send as TcpSend, Shutdown, TcpListener,
    TcpSocket, TcpStream,
};

/// A UDP socket (`SOCK_DGRAM`). Closed when dropped.
#[derive(Debug)]
pub struct UdpSocket {
    host: Host,
    slot: u32,
    port: u16,
    /// The state, shared with the socket table.
    shared: Rc<UdpShared>,
}

impl UdpSocket {
    pub fn bind(host: Host, port: u16) -> Result<UdpSocket, SocketError> {
        try_with_world(|w| {
            let m = host.machine;
            let group = w.hosts.machines[m as usize].group;
            if !w.hosts.groups[group as usize].protocols.udp {
                return Err(SocketError::ProtocolNotAvailable("UDP"));
            }
            let port = if port == 0 {
                (EPHEMERAL..=u16::MAX)
                    .find(|&p| !udp_port_taken(&w.hosts, m, p))
                    .ok_or(SocketError::NoPortsLeft)?
            } else if udp_port_taken(&w.hosts, m, port) {
                return Err(SocketError::AddrInUse(port));
            } else {
                port
            };
            let shared = Rc::new(UdpShared {
                port,
                remote: Cell::new(None),
                tos: Cell::new(0),
                ce_received: Cell::new(0),
                closed: Cell::new(false),
                rx: RefCell::new(UdpRx::new()),
            });
            let slot = alloc_slot(&mut w.hosts, m, SocketSlot::Udp(UdpEntry(shared.clone())));
            if matches!(port, 67 | 68) {
                // Ports DHCP broadcasts go to (`stack::dhcp::fanout`).
                w.hosts.stack.fanout.touch();
            }
            Ok(UdpSocket {
                host,
                slot,
                port,
                shared,
            })
        })?
    }

    /// Returns the local port.
    pub fn local_port(&self) -> u16 {
        self.port
    }

    /// Sets the default destination (`connect(2)` on a datagram socket).
    pub fn connect(&self, to: SocketAddrV4) -> Result<(), SocketError> {
        self.check_open()?;
        self.shared.remote.set(Some(to));
        Ok(())
    }

    /// Sets the TOS byte of the datagrams this socket sends (`IP_TOS`):
    /// the DSCP in the upper six bits, the ECN field in the lower two (RFC
    /// 3168 §5: `0b10` ECT(0), `0b01` ECT(1)), so that a RED queue with
    /// ECN on marks them instead of dropping them and a class-based
    /// discipline sees their DSCP.
    pub fn set_tos(&self, tos: u8) -> Result<(), SocketError> {
        self.check_open()?;
        self.shared.tos.set(tos);
        Ok(())
    }

    /// Datagrams this socket has received (queued) whose ECN field was CE,
    /// congestion experienced (RFC 3168 §5): a count that grows as marked
    /// datagrams arrive, so a receiver that answers congestion (DCQCN's
    /// notification point) compares it before and after a `recv`, as it
    /// would read the TOS of each datagram with Linux's `IP_RECVTOS`.
    pub fn ce_received(&self) -> u64 {
        self.shared.ce_received.get()
    }

    /// Limits the receive queue to `bytes` of payload; datagrams that do not
    /// fit are dropped (`SO_RCVBUF`). Unlimited by default.
    pub fn set_recv_buffer(&self, bytes: usize) -> Result<(), SocketError> {
        self.open_rx()?.cap = bytes;
        Ok(())
    }

    /// Borrows the receive queue of an open socket (`BadDescriptor` once
    /// the socket-table entry is gone).
    fn open_rx(&self) -> Result<std::cell::RefMut<'_, UdpRx>, SocketError> {
        let rx = self
            .shared
            .rx
            .try_borrow_mut()
            .map_err(|_| SocketError::Reentrant)?;
        if self.shared.closed.get() {
            return Err(SocketError::BadDescriptor);
        }
        Ok(rx)
    }

    /// Returns `BadDescriptor` once the socket-table entry is gone.
    #[inline]
    fn check_open(&self) -> Result<(), SocketError> {
        if self.shared.closed.get() {
            return Err(SocketError::BadDescriptor);
        }
        Ok(())
    }

    /// Sends one datagram to `to`, waiting while the NIC queue is full.
    pub fn send_to(&self, payload: impl Into<Message>, to: SocketAddrV4) -> SendTo<'_> {
        SendTo {
            sock: self,
            payload: Some(payload.into()),
            to: PackedAddr::some(to),
        }
    }

    /// Sends one datagram to the connected address.
    pub fn send(&self, payload: impl Into<Message>) -> SendTo<'_> {
        SendTo {
            sock: self,
            payload: Some(payload.into()),
            to: PackedAddr::NONE,
        }
    }

    /// Waits for a datagram; returns it with its sender.
    pub fn recv_from(&self) -> RecvFrom<'_> {
        RecvFrom { sock: self }
    }

    /// Waits for a datagram and returns its payload.
    pub async fn recv(&self) -> Result<Message, SocketError> {
        self.recv_from().await.map(|(m, _)| m)
    }

    /// Returns a queued datagram without waiting, if there is one.
    pub fn try_recv_from(&self) -> Result<Option<(Message, SocketAddrV4)>, SocketError> {
        Ok(self.open_rx()?.pop())
    }

    /// Closes the socket now (dropping it does the same).
    pub fn close(self) {}
}

impl Drop for UdpSocket {
    fn drop(&mut self) {
        let (m, slot) = (self.host.machine, self.slot as usize);
        let _ = try_with_world(|w| {
            if let Some(s) = w.hosts.machines[m as usize].sockets.get_mut(slot) {
                *s = SocketSlot::Free;
                w.hosts.machines[m as usize].slot_freed(slot as u32);
            }
        });
    }
}

/// The future of [`UdpSocket::send_to`].
pub struct SendTo<'a> {
    sock: &'a UdpSocket,
    payload: Option<Message>,
    to: PackedAddr,
}

/// An `Option<SocketAddrV4>` in one word, so that building a [`SendTo`]
/// writes it with one store and polling it reads it with one load. As an
/// `Option` it is written field by field (tag, address, port) and read back
/// as one word, and a load that spans several pending stores cannot take
/// its value from them: the CPU waits for them to reach the cache (a
/// store-forwarding stall, measured at a third of `SendTo::poll`'s time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PackedAddr(u64);

impl PackedAddr {
    const NONE: PackedAddr = PackedAddr(0);
    const SOME: u64 = 1 << 48;

    #[inline]
    fn some(a: SocketAddrV4) -> PackedAddr {
        PackedAddr(Self::SOME | u64::from(a.ip().to_bits()) << 16 | u64::from(a.port()))
    }

    #[inline]
    fn get(self) -> Option<SocketAddrV4> {
        (self.0 & Self::SOME != 0)
            .then(|| SocketAddrV4::new(Ipv4Addr::from_bits((self.0 >> 16) as u32), self.0 as u16))
    }
}

impl Future for SendTo<'_> {
    type Output = Result<(), SocketError>;
    /// Reads the source port, TOS and connected peer from the shared
    /// record (no socket-table lookup), then enters the world once to send.
    /// Inlined into the task: its result (24 bytes, an `Ok` written as one
    /// word) would otherwise come back through memory and be copied out in
    /// 16-byte loads, which wait for that store to reach the cache (in
    /// paired wall runs this costs Ping Pong some 3–7 %, for 14 fewer
    /// instructions per hop).
    #[inline]
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let shared = &*this.sock.shared;
        if let Err(e) = this.sock.check_open() {
            return Poll::Ready(Err(e));
        }
        let Some(to) = this.to.get().or_else(|| shared.remote.get()) else {
            return Poll::Ready(Err(SocketError::NotConnected));
        };
        let src = udp_send::Source {
            machine: this.sock.host.machine,
            port: shared.port,
            tos: shared.tos.get(),
        };
        send_in_world(src, to, &mut this.payload).map_err(|e| *e)
    }
}

/// [`SendTo`]'s trip into the world, out of line: here the thread-local
/// access and the UDP send compile to direct code, where inside the task's
/// large body they became calls through the thread-local's accessor and the
/// generic `LocalKey::with`. Its result is one word and a tag, returned in
/// registers.
#[inline(never)]
fn send_in_world(
    src: udp_send::Source,
    to: SocketAddrV4,
    payload: &mut Option<Message>,
) -> Poll<Result<(), Box<SocketError>>> {
    with_world_or(
        |w| crate::stack::udp::send(&mut w.hosts, src, to, payload, current_task),
        |u| Poll::Ready(Err(Box::new(u.into()))),
    )
}

/// The future of [`UdpSocket::recv_from`].
pub struct RecvFrom<'a> {
    sock: &'a UdpSocket,
}

impl Future for RecvFrom<'_> {
    type Output = Result<(Message, SocketAddrV4), SocketError>;
    /// Works on the socket's shared receive queue alone (one `RefCell`
    /// borrow), without entering the world. Always inlined into the task,
    /// so that the received message is written where the task keeps it:
    /// returned from a call, its 150-odd bytes come back through memory
    /// and are copied again (a `memcpy` per datagram).
    #[inline(always)]
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.sock.shared.rx.try_borrow_mut() {
            Ok(mut q) => q.poll_recv(self.sock.shared.closed.get(), current_task),
            Err(_) => Poll::Ready(Err(SocketError::Reentrant)),
        }
    }
}

/// An ICMP echo socket (like Linux's unprivileged `SOCK_DGRAM`/`IPPROTO_ICMP`).
#[derive(Debug)]
pub struct IcmpSocket {
    host: Host,
    slot: u32,
    ident: u16,
}

impl IcmpSocket {
    pub fn open(host: Host, ident: u16) -> Result<IcmpSocket, SocketError> {
        try_with_world(|w| {
            let m = host.machine;
            let taken = w.hosts.machines[m as usize]
                .sockets
                .iter()
                .any(|s| matches!(s, SocketSlot::Icmp(i) if i.ident == ident));
            if taken {
                return Err(SocketError::AddrInUse(ident));
            }
            let state = IcmpState {
                ident,
                rx: VecDeque::new(),
                waiter: None,
            };
            let slot = alloc_slot(&mut w.hosts, m, SocketSlot::Icmp(Box::new(state)));
            Ok(IcmpSocket { host, slot, ident })
        })?
    }

    /// Opens a socket with the first free identifier from `preferred` up
    /// (wrapping).
    pub fn open_free(host: Host, preferred: u16) -> Result<IcmpSocket, SocketError> {
        let ident = try_with_world(|w| {
            let taken: std::collections::BTreeSet<u16> = w.hosts.machines[host.machine as usize]
                .sockets
                .iter()
                .filter_map(|s| match s {
                    SocketSlot::Icmp(i) => Some(i.ident),
                    _ => None,
                })
                .collect();
            (0..=u16::MAX)
                .map(|d| preferred.wrapping_add(d))
                .find(|i| !taken.contains(i))
                .ok_or(SocketError::AddrInUse(preferred))
        })??;
        IcmpSocket::open(host, ident)
    }

    /// Sends an echo request with sequence number `seq` and `data`.
    pub fn send_echo(
        &self,
        to: Ipv4Addr,
        seq: u16,
        data: impl Into<Message>,
    ) -> Result<(), SocketError> {
        self.send_echo_with(to, seq, EchoOptions::default(), data)
    }

    /// Sends an echo request with explicit IP options: the time to live
    /// (`IP_TTL`; `traceroute -I` raises it probe by probe, and a router
    /// where it runs out answers with Time Exceeded, received by
    /// [`IcmpSocket::recv_echo`] with `error` set) and Don't Fragment
    /// (`ping -M do`).
    ///
    /// # Errors
    /// `MessageTooLong` when DF is set and the datagram exceeds the first
    /// network's MTU (Linux: `EMSGSIZE`); `HostUnreachable` without a route.
    pub fn send_echo_with(
        &self,
        to: Ipv4Addr,
        seq: u16,
        opts: EchoOptions,
        data: impl Into<Message>,
    ) -> Result<(), SocketError> {
        let m = self.host.machine;
        let ident = self.ident;
        let data = data.into();
        try_with_world(|w| {
            crate::stack::icmp::send_echo_request(&mut w.hosts, m, to, ident, seq, opts, data)
        })?
    }

    /// Waits for the next echo reply addressed to this socket.
    pub fn recv_echo(&self) -> RecvEcho<'_> {
        RecvEcho { sock: self }
    }
}

impl Drop for IcmpSocket {
    fn drop(&mut self) {
        let (m, slot) = (self.host.machine, self.slot as usize);
        let _ = try_with_world(|w| {
            if let Some(s) = w.hosts.machines[m as usize].sockets.get_mut(slot) {
                *s = SocketSlot::Free;
                w.hosts.machines[m as usize].slot_freed(slot as u32);
            }
        });
    }
}

/// The future of [`IcmpSocket::recv_echo`].
pub struct RecvEcho<'a> {
    sock: &'a IcmpSocket,
}

impl Future for RecvEcho<'_> {
    type Output = Result<EchoReply, SocketError>;
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (m, slot) = (self.sock.host.machine, self.sock.slot);
        let r = try_with_world(|w| {
            let task = current_task();
            match w.hosts.machines[m as usize].sockets.get_mut(slot as usize) {
                Some(SocketSlot::Icmp(s)) => match s.rx.pop_front() {
                    Some(r) => Some(Ok(r)),
                    None => {
                        s.waiter = task;
                        None
                    }
                },
                _ => Some(Err(SocketError::BadDescriptor)),
            }
        });
        match r {
            Err(u) => Poll::Ready(Err(u.into())),
            Ok(Some(r)) => Poll::Ready(r),
            Ok(None) => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of;

    #[test]
    fn a_packed_address_round_trips_every_edge_and_none_stays_none() {
        for (ip, port) in [
            (Ipv4Addr::UNSPECIFIED, 0),
            (Ipv4Addr::BROADCAST, u16::MAX),
            (Ipv4Addr::new(10, 0, 0, 1), 0xbeef),
            (Ipv4Addr::new(128, 0, 0, 0), 1),
        ] {
            let a = SocketAddrV4::new(ip, port);
            assert_eq!(PackedAddr::some(a).get(), Some(a));
        }
        assert_eq!(PackedAddr::NONE.get(), None);
    }

    #[test]
    fn udp_futures_hold_no_more_than_their_arguments() {
        // An application's state machine stores the future it awaits, so a
        // large one costs a copy per call: `recv_from` holds the socket
        // reference alone, `send_to` the reference, the message and the
        // address.
        assert_eq!(size_of::<RecvFrom<'_>>(), size_of::<usize>());
        assert!(size_of::<SendTo<'_>>() <= size_of::<Option<Message>>() + 2 * size_of::<usize>());
    }

    #[test]
    fn the_receive_queue_keeps_arrival_order_across_its_inline_slot() {
        let from = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 7);
        let mut rx = UdpRx::new();
        rx.cap = 3;
        let push = |rx: &mut UdpRx, b: u8| {
            let mut m = Message::from_vec(vec![b]);
            rx.push(from, 1, &mut m).is_some()
        };
        assert!(push(&mut rx, 1) && push(&mut rx, 2));
        let first = |rx: &mut UdpRx| rx.pop().map(|(mut m, _)| m.front(1).unwrap()[0]);
        assert_eq!(first(&mut rx), Some(1));
        // The slot is free again, but a datagram arriving now is younger
        // than the one still queued behind it.
        assert!(push(&mut rx, 3) && push(&mut rx, 4));
        assert!(!push(&mut rx, 5), "a full buffer refuses");
        assert_eq!(rx.bytes, 3);
        assert_eq!(
            [
                first(&mut rx),
                first(&mut rx),
                first(&mut rx),
                first(&mut rx)
            ],
            [Some(2), Some(3), Some(4), None]
        );
        assert_eq!(rx.bytes, 0);
    }
}
