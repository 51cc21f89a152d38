//! Stream sockets: `listen`/`accept`, `connect`, `send`/`recv`,
//! `shutdown`, `close`, with POSIX semantics (partial writes and reads, 0
//! bytes at end of stream) and the errors a C programmer expects.
//!
//! | situation | error |
//! |---|---|
//! | `connect` to a closed port (RST) | `ConnectionRefused` |
//! | no answer to SYNs, or data never acknowledged | `TimedOut` |
//! | the peer reset the connection | `ConnectionReset` |
//! | `send` after `shutdown(Write)` or on a dead connection | `BrokenPipe` |
//! | `listen` on a port in use | `AddrInUse` |
//! | `send`/`recv` before the connection is established | waits (blocking socket) |

use crate::api::{current_task, Host};
use crate::socket::{SocketError, SocketSlot};
use crate::stack::tcp::{self, tcb::State, TcpSock, TcpStats};
use crate::world::try_with_world;
use elvis_message::Message;
use elvis_tcpcc::Algorithm;
use std::future::Future;
use std::net::SocketAddrV4;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Which half of a connection to shut down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shutdown {
    Read,
    Write,
    Both,
}

/// A listening TCP socket. Closed (pending connections reset) when dropped.
#[derive(Debug)]
pub struct TcpListener {
    host: Host,
    slot: u32,
    port: u16,
}

/// A TCP connection. Dropping it closes it gracefully (FIN after the data
/// already written; RST if received data was left unread).
#[derive(Debug)]
pub struct TcpStream {
    host: Host,
    slot: u32,
}

fn with_sock<R>(
    host: Host,
    slot: u32,
    f: impl FnOnce(&mut TcpSock) -> R,
) -> Result<R, SocketError> {
    try_with_world(|w| {
        match w.machines[host.machine as usize]
            .sockets
            .get_mut(slot as usize)
        {
            Some(SocketSlot::Tcp(t)) => Ok(f(t)),
            _ => Err(SocketError::BadDescriptor),
        }
    })?
}

impl TcpListener {
    pub(crate) fn bind(host: Host, port: u16, backlog: usize) -> Result<TcpListener, SocketError> {
        let slot = try_with_world(|w| tcp::listen(w, host.machine, port, backlog))??;
        Ok(TcpListener { host, slot, port })
    }

    /// Returns the port listened on.
    pub fn local_port(&self) -> u16 {
        self.port
    }

    /// Waits for an established connection.
    pub fn accept(&self) -> Accept<'_> {
        Accept { l: self }
    }
}

impl Drop for TcpListener {
    fn drop(&mut self) {
        let (m, slot) = (self.host.machine, self.slot);
        let _ = try_with_world(|w| tcp::close_listener(w, m, slot));
    }
}

/// The future of [`TcpListener::accept`].
pub struct Accept<'a> {
    l: &'a TcpListener,
}

impl Future for Accept<'_> {
    type Output = Result<(TcpStream, SocketAddrV4), SocketError>;
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (host, slot) = (self.l.host, self.l.slot);
        let r = try_with_world(|w| {
            let task = current_task(w);
            let m = host.machine as usize;
            loop {
                let next = match w.machines[m].sockets.get_mut(slot as usize) {
                    Some(SocketSlot::TcpListener(l)) => match l.ready.pop_front() {
                        Some(c) => c,
                        None => {
                            l.waiter = task;
                            return None;
                        }
                    },
                    _ => return Some(Err(SocketError::BadDescriptor)),
                };
                if let Some(SocketSlot::Tcp(t)) = w.machines[m].sockets.get_mut(next as usize) {
                    t.orphan = false;
                    let peer = t.tcb.remote;
                    return Some(Ok((TcpStream { host, slot: next }, peer)));
                }
            }
        });
        match r {
            Err(u) => Poll::Ready(Err(u.into())),
            Ok(Some(r)) => Poll::Ready(r),
            Ok(None) => Poll::Pending,
        }
    }
}

impl TcpStream {
    pub(crate) fn connect(host: Host, to: SocketAddrV4, alg: Option<Algorithm>) -> Connect {
        Connect {
            host,
            to,
            alg,
            slot: None,
        }
    }

    /// Returns the local address.
    pub fn local_addr(&self) -> Result<SocketAddrV4, SocketError> {
        with_sock(self.host, self.slot, |t| t.tcb.local)
    }

    /// Returns the peer's address.
    pub fn peer_addr(&self) -> Result<SocketAddrV4, SocketError> {
        with_sock(self.host, self.slot, |t| t.tcb.remote)
    }

    /// Writes some of `data`: as much as the send buffer takes (at least 1
    /// byte), waiting while it is full. Returns the bytes written.
    pub fn send(&self, data: impl Into<Message>) -> Send<'_> {
        Send {
            s: self,
            data: Some(data.into()),
        }
    }

    /// Writes all of `data`, waiting as needed.
    pub async fn write_all(&self, data: impl Into<Message>) -> Result<(), SocketError> {
        let mut data: Message = data.into();
        while !data.is_empty() {
            let n = self.send(data.clone()).await?;
            let _ = data.pop_front(n);
        }
        Ok(())
    }

    /// Reads up to `max` bytes, waiting for at least one; an empty message
    /// means the peer closed its side (end of stream).
    pub fn recv(&self, max: usize) -> Recv<'_> {
        Recv { s: self, max }
    }

    /// Reads exactly `n` bytes (fewer only at end of stream).
    pub async fn read_exact(&self, n: usize) -> Result<Message, SocketError> {
        let mut out = Message::new();
        while out.len() < n {
            let m = self.recv(n - out.len()).await?;
            if m.is_empty() {
                break;
            }
            out.append(m);
        }
        Ok(out)
    }

    /// Shuts down reading, writing or both (`shutdown(2)`).
    pub fn shutdown(&self, how: Shutdown) -> Result<(), SocketError> {
        let (m, slot) = (self.host.machine, self.slot);
        try_with_world(|w| {
            if !matches!(
                w.machines[m as usize].sockets.get(slot as usize),
                Some(SocketSlot::Tcp(_))
            ) {
                return Err(SocketError::BadDescriptor);
            }
            if matches!(how, Shutdown::Write | Shutdown::Both) {
                tcp::drive(w, m, slot, |tcb, now, out| {
                    tcb.shutdown_write();
                    tcb.output(now, out);
                    tcp::tcb::Effects::default()
                });
            }
            if matches!(how, Shutdown::Read | Shutdown::Both) {
                if let Some(SocketSlot::Tcp(t)) =
                    w.machines[m as usize].sockets.get_mut(slot as usize)
                {
                    let n = t.tcb.rcvbuf.ready_len();
                    let _ = t.tcb.read(n);
                }
            }
            Ok(())
        })?
    }

    /// Disables Nagle's algorithm (`TCP_NODELAY`).
    pub fn set_nodelay(&self, on: bool) -> Result<(), SocketError> {
        with_sock(self.host, self.slot, |t| t.tcb.nodelay = on)
    }

    /// Returns the connection's statistics (bytes, retransmissions, RTT,
    /// congestion window).
    pub fn stats(&self) -> Result<TcpStats, SocketError> {
        with_sock(self.host, self.slot, |t| t.tcb.stats())
    }

    /// Returns the congestion-control algorithm's name.
    pub fn congestion(&self) -> Result<&'static str, SocketError> {
        with_sock(self.host, self.slot, |t| t.tcb.cc_name())
    }

    /// Returns the connection state (for tests and tools).
    pub fn state(&self) -> Result<State, SocketError> {
        with_sock(self.host, self.slot, |t| t.tcb.state)
    }

    /// Closes the connection now (dropping it does the same).
    pub fn close(self) {}
}

impl Drop for TcpStream {
    fn drop(&mut self) {
        let (m, slot) = (self.host.machine, self.slot);
        let _ = try_with_world(|w| tcp::release(w, m, slot));
    }
}

/// The future of `Host::tcp_connect`.
pub struct Connect {
    host: Host,
    to: SocketAddrV4,
    alg: Option<Algorithm>,
    slot: Option<u32>,
}

impl Future for Connect {
    type Output = Result<TcpStream, SocketError>;
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let host = this.host;
        let r = try_with_world(|w| {
            let task = current_task(w);
            let slot = match this.slot {
                Some(s) => s,
                None => match tcp::connect(w, host.machine, this.to, this.alg) {
                    Ok(s) => s,
                    Err(e) => return Some(Err(e)),
                },
            };
            this.slot = Some(slot);
            match w.machines[host.machine as usize]
                .sockets
                .get_mut(slot as usize)
            {
                Some(SocketSlot::Tcp(t)) => {
                    if let Some(e) = t.tcb.error.clone() {
                        return Some(Err(e));
                    }
                    if t.tcb.state == State::SynSent || t.tcb.state == State::SynReceived {
                        t.writer = task;
                        return None;
                    }
                    Some(Ok(()))
                }
                _ => Some(Err(SocketError::BadDescriptor)),
            }
        });
        match r {
            Err(u) => Poll::Ready(Err(u.into())),
            Ok(None) => Poll::Pending,
            Ok(Some(Err(e))) => {
                // Free the failed connection's slot.
                if let Some(slot) = this.slot.take() {
                    drop(TcpStream { host, slot });
                }
                Poll::Ready(Err(e))
            }
            Ok(Some(Ok(()))) => {
                let slot = this.slot.take().expect("slot set above");
                Poll::Ready(Ok(TcpStream { host, slot }))
            }
        }
    }
}

impl Drop for Connect {
    fn drop(&mut self) {
        // A connect abandoned half-way (e.g. by a timeout) closes its socket.
        if let Some(slot) = self.slot.take() {
            drop(TcpStream {
                host: self.host,
                slot,
            });
        }
    }
}

/// The future of [`TcpStream::send`].
pub struct Send<'a> {
    s: &'a TcpStream,
    data: Option<Message>,
}

impl Future for Send<'_> {
    type Output = Result<usize, SocketError>;
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (host, slot) = (self.s.host, self.s.slot);
        let this = &mut *self;
        let r = try_with_world(|w| {
            let task = current_task(w);
            let m = host.machine;
            let Some(SocketSlot::Tcp(t)) = w.machines[m as usize].sockets.get_mut(slot as usize)
            else {
                return Some(Err(SocketError::BadDescriptor));
            };
            if let Some(e) = t.tcb.error.clone() {
                return Some(Err(if e == SocketError::ConnectionReset {
                    e
                } else {
                    SocketError::BrokenPipe
                }));
            }
            if matches!(t.tcb.state, State::SynSent | State::SynReceived) {
                t.writer = task;
                return None;
            }
            let space = t.tcb.send_space();
            if space == 0 {
                if !matches!(t.tcb.state, State::Established | State::CloseWait) {
                    return Some(Err(SocketError::BrokenPipe));
                }
                t.writer = task;
                return None;
            }
            let mut data = this.data.take().unwrap_or_default();
            let n = data.len().min(space);
            if n < data.len() {
                data.truncate(n);
            }
            tcp::drive(w, m, slot, |tcb, now, out| {
                tcb.write(data);
                tcb.output(now, out);
                tcp::tcb::Effects::default()
            });
            Some(Ok(n))
        });
        match r {
            Err(u) => Poll::Ready(Err(u.into())),
            Ok(None) => Poll::Pending,
            Ok(Some(r)) => Poll::Ready(r),
        }
    }
}

/// The future of [`TcpStream::recv`].
pub struct Recv<'a> {
    s: &'a TcpStream,
    max: usize,
}

impl Future for Recv<'_> {
    type Output = Result<Message, SocketError>;
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (host, slot, max) = (self.s.host, self.s.slot, self.max);
        let r = try_with_world(|w| {
            let task = current_task(w);
            let m = host.machine;
            let Some(SocketSlot::Tcp(t)) = w.machines[m as usize].sockets.get_mut(slot as usize)
            else {
                return Some(Err(SocketError::BadDescriptor));
            };
            if t.tcb.rcvbuf.ready_len() > 0 {
                let data = t.tcb.read(max.max(1));
                // A read that opens the window enough asks for an update
                // (the only thing a read can make the TCB send); otherwise
                // the TCB has nothing new to say, so skip the call.
                if t.tcb.state != State::Closed && t.tcb.ack_due() {
                    tcp::drive(w, m, slot, |tcb, now, out| {
                        tcb.output(now, out);
                        tcp::tcb::Effects::default()
                    });
                }
                return Some(Ok(data));
            }
            if let Some(e) = t.tcb.error.clone() {
                return Some(Err(e));
            }
            if t.tcb.fin_received || t.tcb.state == State::Closed {
                return Some(Ok(Message::new()));
            }
            t.reader = task;
            None
        });
        match r {
            Err(u) => Poll::Ready(Err(u.into())),
            Ok(None) => Poll::Pending,
            Ok(Some(r)) => Poll::Ready(r),
        }
    }
}
