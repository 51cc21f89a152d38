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
//! | `listen`/`bind` on a port in use (TIME-WAIT counts without `SO_REUSEADDR`) | `AddrInUse` |
//! | `shutdown`/`peer_addr` on a connection that is over | `NotConnected` |
//! | an option out of range (keep-alive times, probes) | `InvalidInput` |
//! | `send`/`recv` before the connection is established | waits (blocking socket) |
//!
//! As on Linux, a connection's error (reset, time-out) is reported once,
//! by the next `send` or `recv`; after that `send` fails with `BrokenPipe`
//! and `recv` returns end of stream.
//!
//! Options are set on a [`TcpSocket`] before `connect` or `listen` (the
//! type makes setting them later impossible where Linux ignores or forbids
//! it); `TCP_NODELAY`, `SO_KEEPALIVE` and `SO_LINGER` can also be changed on
//! a [`TcpStream`].
//!
//! | option | method | Linux difference |
//! |---|---|---|
//! | `SO_SNDBUF`, `SO_RCVBUF` | [`TcpSocket::set_send_buffer_size`], [`TcpSocket::set_recv_buffer_size`] | the size is used as given (Linux doubles it and caps it at `rmem_max`/`wmem_max`); clamped to 2 KiB–1 GiB |
//! | `SO_REUSEADDR` | [`TcpSocket::set_reuseaddr`] | only TIME-WAIT connections are ignored |
//! | `TCP_NODELAY` | [`TcpSocket::set_nodelay`], [`TcpStream::set_nodelay`] | — |
//! | `TCP_CONGESTION` | [`TcpSocket::set_congestion`], [`TcpStream::set_congestion`] | — (after `connect` the new algorithm takes over cwnd and ssthresh, as Linux) |
//! | `net.ipv4.tcp_ecn` (a sysctl on Linux) | [`TcpSocket::set_ecn`], [`crate::TcpConfig::ecn`] for every socket | per socket here; Linux sets it per network namespace |
//! | `net.ipv4.tcp_recovery` (a sysctl on Linux) | [`TcpSocket::set_loss_detection`], [`crate::TcpConfig::loss_detection`] for every socket | per socket here; `rack` (RACK-TLP, RFC 8985, the default as on Linux) or `rfc6675` (Linux's `tcp_recovery=0` also keeps TLP, ours has no probe) |
//! | `net.ipv4.tcp_dsack` (a sysctl on Linux) | [`crate::TcpConfig::dsack`] for every socket | on by default, as on Linux (RFC 2883) |
//! | `SO_KEEPALIVE` + `TCP_KEEPIDLE/INTVL/CNT` | [`TcpSocket::set_keepalive`], [`TcpStream::set_keepalive`] | — |
//! | `SO_LINGER` | [`TcpSocket::set_linger`], [`TcpStream::set_linger`], [`TcpStream::close`] | on time-out `close` returns `TimedOut` (Linux returns 0); the close goes on in the background on both |
//!
//! # Gaps
//! Non-blocking mode, `MSG_PEEK`, `TCP_MAXSEG`, `TCP_USER_TIMEOUT`,
//! `TCP_CORK`, `SO_RCVLOWAT`, binding to a specific local address.

use crate::host::{current_task, Host};
use crate::socket::{SocketError, SocketSlot};
use crate::stack::tcp::ecn::EcnMode;
use crate::stack::tcp::keepalive::{Keepalive, KeepaliveTimer};
use crate::stack::tcp::rack::LossDetection;
use crate::stack::tcp::{self, tcb::State, SockOpts, TcpSock, TcpStats};
use crate::world::{try_with_world, Event};
use elvis_kernel::Time;
use elvis_message::Message;
use elvis_tcpcc::Algorithm;
use std::future::Future;
use std::net::SocketAddrV4;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Smallest and largest buffer sizes accepted (bytes).
const MIN_BUF: usize = 2048;
const MAX_BUF: usize = 1 << 30;

/// A TCP socket not yet connected or listening (`socket(2)` +
/// `setsockopt(2)` + `bind(2)`), as `tokio::net::TcpSocket`.
///
/// ```no_run
/// # use elvis_api::stack::tcp::keepalive::Keepalive;
/// # use elvis_api::{Host, SocketError};
/// # async fn f(host: Host) -> Result<(), SocketError> {
/// let mut sock = host.tcp_socket()?;
/// sock.set_recv_buffer_size(256 * 1024);
/// sock.set_keepalive(Some(Keepalive::default()))?;
/// let stream = sock.connect("10.0.0.2:80".parse().unwrap()).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct TcpSocket {
    host: Host,
    opts: SockOpts,
    linger: Option<Duration>,
}

impl TcpSocket {
    pub fn new(host: Host) -> Result<TcpSocket, SocketError> {
        try_with_world(|w| tcp::check_tcp_enabled(&w.hosts, host.machine))??;
        Ok(TcpSocket {
            host,
            opts: SockOpts::default(),
            linger: None,
        })
    }

    /// Sets `SO_REUSEADDR`: `bind`/`listen` may take a port that only
    /// connections in TIME-WAIT hold.
    pub fn set_reuseaddr(&mut self, on: bool) {
        self.opts.reuseaddr = on;
    }

    /// Sets the send buffer (`SO_SNDBUF`, bytes; clamped to 2 KiB–1 GiB).
    pub fn set_send_buffer_size(&mut self, bytes: usize) {
        self.opts.sndbuf = Some(bytes.clamp(MIN_BUF, MAX_BUF));
    }

    /// Sets the receive buffer (`SO_RCVBUF`, bytes; clamped to 2 KiB–1
    /// GiB). The window scale offered in the SYN is the smallest that
    /// covers it (RFC 7323 §2.3).
    pub fn set_recv_buffer_size(&mut self, bytes: usize) {
        self.opts.rcvbuf = Some(bytes.clamp(MIN_BUF, MAX_BUF));
    }

    /// Disables Nagle's algorithm (`TCP_NODELAY`).
    pub fn set_nodelay(&mut self, on: bool) {
        self.opts.nodelay = on;
    }

    /// Chooses the congestion control (`TCP_CONGESTION`).
    pub fn set_congestion(&mut self, alg: Algorithm) {
        self.opts.congestion = Some(alg);
    }

    /// Chooses whether this connection uses ECN (RFC 3168), as Linux's
    /// `net.ipv4.tcp_ecn` does for a whole host (Linux has no per-socket
    /// switch; the default is the simulation's `TcpConfig::ecn`).
    pub fn set_ecn(&mut self, mode: EcnMode) {
        self.opts.ecn = Some(mode);
    }

    /// Chooses the loss detection: RACK-TLP (RFC 8985, Linux's default) or
    /// RFC 6675's duplicate-ACK threshold with no tail loss probe (our
    /// default for now). The default is the simulation's
    /// `TcpConfig::loss_detection`; accepted connections inherit
    /// the listener's.
    pub fn set_loss_detection(&mut self, l: LossDetection) {
        self.opts.loss_detection = Some(l);
    }

    /// Turns keep-alive on with `k`'s timing, or off (`SO_KEEPALIVE`).
    ///
    /// # Errors
    /// `InvalidInput` if a setting is outside Linux's range.
    pub fn set_keepalive(&mut self, k: Option<Keepalive>) -> Result<(), SocketError> {
        if let Some(k) = &k {
            k.validate()?;
        }
        self.opts.keepalive = k;
        Ok(())
    }

    /// Sets `SO_LINGER`: `None` (default) closes in the background;
    /// `Some(ZERO)` resets the connection on close; `Some(t)` makes
    /// [`TcpStream::close`] wait up to `t` for the data to be acknowledged.
    pub fn set_linger(&mut self, linger: Option<Duration>) {
        self.linger = linger;
    }

    /// Binds the local port (`bind(2)`).
    ///
    /// # Errors
    /// `AddrInUse` if the port is taken (by a connection in TIME-WAIT too,
    /// unless `SO_REUSEADDR` is set); `InvalidInput` if already bound or
    /// the port is 0.
    pub fn bind(&mut self, port: u16) -> Result<(), SocketError> {
        if self.opts.local_port.is_some() {
            return Err(SocketError::InvalidInput("socket already bound"));
        }
        if port == 0 {
            return Err(SocketError::InvalidInput(
                "port 0: leave unbound for an ephemeral port",
            ));
        }
        let (m, reuse) = (self.host.machine, self.opts.reuseaddr);
        if try_with_world(|w| tcp::port_taken(&w.hosts, m, port, reuse))? {
            return Err(SocketError::AddrInUse(port));
        }
        self.opts.local_port = Some(port);
        Ok(())
    }

    /// Listens on the bound port (`listen(2)`).
    ///
    /// # Errors
    /// `InvalidInput` if not bound; `AddrInUse` as for [`TcpSocket::bind`].
    pub fn listen(self, backlog: usize) -> Result<TcpListener, SocketError> {
        let port = self
            .opts
            .local_port
            .ok_or(SocketError::InvalidInput("listen on an unbound socket"))?;
        TcpListener::open(self.host, port, backlog, self.opts, self.linger)
    }

    /// Connects to `to` (a blocking `connect(2)`).
    pub fn connect(self, to: SocketAddrV4) -> Connect {
        Connect {
            host: self.host,
            to,
            opts: self.opts,
            linger: self.linger,
            slot: None,
        }
    }
}

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
    /// `SO_LINGER`, inherited by accepted connections.
    linger: Option<Duration>,
}

/// A TCP connection. Dropping it closes it gracefully (FIN after the data
/// already written; RST if received data was left unread).
#[derive(Debug)]
pub struct TcpStream {
    host: Host,
    slot: u32,
    linger: Option<Duration>,
}

fn with_sock<R>(
    host: Host,
    slot: u32,
    f: impl FnOnce(&mut TcpSock) -> R,
) -> Result<R, SocketError> {
    try_with_world(|w| {
        match w.hosts.machines[host.machine as usize]
            .sockets
            .get_mut(slot as usize)
        {
            Some(SocketSlot::Tcp(t)) => Ok(f(t)),
            _ => Err(SocketError::BadDescriptor),
        }
    })?
}

impl TcpListener {
    pub fn open(
        host: Host,
        port: u16,
        backlog: usize,
        opts: SockOpts,
        linger: Option<Duration>,
    ) -> Result<TcpListener, SocketError> {
        let slot =
            try_with_world(|w| tcp::listen(&mut w.hosts, host.machine, port, backlog, opts))??;
        Ok(TcpListener {
            host,
            slot,
            port,
            linger,
        })
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
        let _ = try_with_world(|w| tcp::close_listener(&mut w.hosts, m, slot));
    }
}

/// The future of [`TcpListener::accept`].
pub struct Accept<'a> {
    l: &'a TcpListener,
}

impl Future for Accept<'_> {
    type Output = Result<(TcpStream, SocketAddrV4), SocketError>;
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (host, slot, linger) = (self.l.host, self.l.slot, self.l.linger);
        let r = try_with_world(|w| {
            let task = current_task();
            let m = host.machine as usize;
            loop {
                let next = match w.hosts.machines[m].sockets.get_mut(slot as usize) {
                    Some(SocketSlot::TcpListener(l)) => match l.ready.pop_front() {
                        Some(c) => c,
                        None => {
                            l.waiter = task;
                            return None;
                        }
                    },
                    _ => return Some(Err(SocketError::BadDescriptor)),
                };
                if let Some(SocketSlot::Tcp(t)) = w.hosts.machines[m].sockets.get_mut(next as usize)
                {
                    t.orphan = false;
                    let peer = t.tcb.remote;
                    let s = TcpStream {
                        host,
                        slot: next,
                        linger,
                    };
                    return Some(Ok((s, peer)));
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
    pub fn connect(host: Host, to: SocketAddrV4, alg: Option<Algorithm>) -> Connect {
        Connect {
            host,
            to,
            opts: SockOpts {
                congestion: alg,
                ..SockOpts::default()
            },
            linger: None,
            slot: None,
        }
    }

    /// Returns the local address.
    pub fn local_addr(&self) -> Result<SocketAddrV4, SocketError> {
        with_sock(self.host, self.slot, |t| t.tcb.local)
    }

    /// Returns the peer's address.
    ///
    /// # Errors
    /// `NotConnected` once the connection is over (reset, timed out,
    /// closed), as `getpeername(2)`.
    pub fn peer_addr(&self) -> Result<SocketAddrV4, SocketError> {
        with_sock(self.host, self.slot, |t| {
            (t.tcb.state != State::Closed)
                .then_some(t.tcb.remote)
                .ok_or(SocketError::NotConnected)
        })?
    }

    /// Returns the send and receive buffer sizes (`SO_SNDBUF`, `SO_RCVBUF`).
    pub fn buffer_sizes(&self) -> Result<(usize, usize), SocketError> {
        with_sock(self.host, self.slot, |t| {
            (t.tcb.sndbuf_cap(), t.tcb.rcvbuf_cap())
        })
    }

    /// Turns keep-alive on (re-armed `k.time` from now, as Linux does) or
    /// off (`SO_KEEPALIVE`).
    ///
    /// # Errors
    /// `InvalidInput` if a setting is outside Linux's range.
    pub fn set_keepalive(&self, k: Option<Keepalive>) -> Result<(), SocketError> {
        if let Some(k) = &k {
            k.validate()?;
        }
        let (m, slot) = (self.host.machine, self.slot);
        try_with_world(|w| {
            let now = w.hosts.now();
            tcp::drive(&mut w.hosts, m, slot, |tcb, _, _| {
                tcb.keepalive = k.map(|k| Box::new(KeepaliveTimer::new(k, Some(now))));
                tcp::tcb::Effects::default()
            })
        })?;
        Ok(())
    }

    /// Returns the keep-alive settings (`None`: off).
    pub fn keepalive(&self) -> Result<Option<Keepalive>, SocketError> {
        with_sock(self.host, self.slot, |t| {
            t.tcb.keepalive.as_ref().map(|k| k.cfg)
        })
    }

    /// Sets `SO_LINGER` (see [`TcpSocket::set_linger`]).
    pub fn set_linger(&mut self, linger: Option<Duration>) {
        self.linger = linger;
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
    ///
    /// # Errors
    /// `NotConnected` once the connection is over.
    pub fn shutdown(&self, how: Shutdown) -> Result<(), SocketError> {
        let (m, slot) = (self.host.machine, self.slot);
        try_with_world(|w| {
            match w.hosts.machines[m as usize].sockets.get(slot as usize) {
                Some(SocketSlot::Tcp(t)) if t.tcb.state == State::Closed => {
                    return Err(SocketError::NotConnected)
                }
                Some(SocketSlot::Tcp(_)) => {}
                _ => return Err(SocketError::BadDescriptor),
            }
            if matches!(how, Shutdown::Write | Shutdown::Both) {
                tcp::drive(&mut w.hosts, m, slot, |tcb, now, out| {
                    tcb.shutdown_write();
                    tcb.output(now, out);
                    tcp::tcb::Effects::default()
                });
            }
            if matches!(how, Shutdown::Read | Shutdown::Both) {
                if let Some(SocketSlot::Tcp(t)) =
                    w.hosts.machines[m as usize].sockets.get_mut(slot as usize)
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

    /// Changes the congestion control of the connection (`TCP_CONGESTION`
    /// after `connect`, as Linux allows): the new algorithm takes over the
    /// current congestion window and slow start threshold.
    ///
    /// # Errors
    /// `BadDescriptor` if the stream is gone.
    pub fn set_congestion(&self, alg: Algorithm) -> Result<(), SocketError> {
        with_sock(self.host, self.slot, |t| t.tcb.set_congestion(alg))
    }

    /// Returns the congestion-control algorithm's name.
    pub fn congestion(&self) -> Result<&'static str, SocketError> {
        with_sock(self.host, self.slot, |t| t.tcb.cc_name())
    }

    /// Returns the connection state (for tests and tools).
    pub fn state(&self) -> Result<State, SocketError> {
        with_sock(self.host, self.slot, |t| t.tcb.state)
    }

    /// Closes the connection (`close(2)`). Without `SO_LINGER` (and when
    /// the future is dropped unpolled) the close goes on in the
    /// background, as dropping the stream does; with a zero linger time it
    /// resets the connection; with linger time `t` it waits until all data
    /// and the FIN are acknowledged, at most `t`.
    ///
    /// # Errors
    /// With a linger time: `TimedOut` if `t` passed first (the connection
    /// keeps closing in the background; Linux returns 0 here), or the
    /// connection's error if it failed meanwhile.
    #[must_use = "close is a future: await it, or drop the stream to close in the background"]
    pub fn close(self) -> Close {
        Close {
            s: Some(self),
            deadline: None,
        }
    }
}

impl Drop for TcpStream {
    fn drop(&mut self) {
        let (m, slot) = (self.host.machine, self.slot);
        let abortive = self.linger == Some(Duration::ZERO);
        let _ = try_with_world(|w| tcp::release(&mut w.hosts, m, slot, abortive));
    }
}

/// The future of [`TcpStream::close`].
#[derive(Debug)]
pub struct Close {
    s: Option<TcpStream>,
    deadline: Option<Time>,
}

impl Future for Close {
    type Output = Result<(), SocketError>;
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let Some(s) = this.s.as_ref() else {
            return Poll::Ready(Ok(()));
        };
        let linger = match s.linger {
            Some(t) if !t.is_zero() => t,
            _ => {
                this.s = None;
                return Poll::Ready(Ok(()));
            }
        };
        let (m, slot) = (s.host.machine, s.slot);
        let first = this.deadline.is_none();
        let r = try_with_world(|w| {
            let now = w.hosts.now();
            let task = current_task();
            let deadline = *this.deadline.get_or_insert(now + linger);
            if first {
                tcp::drive(&mut w.hosts, m, slot, |tcb, now, out| {
                    tcb.shutdown_write();
                    tcb.output(now, out);
                    tcp::tcb::Effects::default()
                });
                if let Some(task) = task {
                    w.hosts.sched.queue.schedule(deadline, m, Event::Wake(task));
                }
            }
            let Some(SocketSlot::Tcp(t)) =
                w.hosts.machines[m as usize].sockets.get_mut(slot as usize)
            else {
                return Some(Err(SocketError::BadDescriptor));
            };
            if let Some(e) = t.tcb.error.take() {
                return Some(Err(*e));
            }
            let all_acked = t.tcb.sndbuf.is_empty()
                && matches!(
                    t.tcb.state,
                    State::FinWait2 | State::TimeWait | State::Closed
                );
            if all_acked {
                return Some(Ok(()));
            }
            if now >= deadline {
                return Some(Err(SocketError::TimedOut));
            }
            t.writer = task;
            None
        });
        match r {
            Err(u) => {
                this.s = None;
                Poll::Ready(Err(u.into()))
            }
            Ok(None) => Poll::Pending,
            Ok(Some(r)) => {
                this.s = None;
                Poll::Ready(r)
            }
        }
    }
}

/// The future of `Host::tcp_connect`.
pub struct Connect {
    host: Host,
    to: SocketAddrV4,
    opts: SockOpts,
    linger: Option<Duration>,
    slot: Option<u32>,
}

impl Future for Connect {
    type Output = Result<TcpStream, SocketError>;
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let host = this.host;
        let r = try_with_world(|w| {
            let task = current_task();
            let slot = match this.slot {
                Some(s) => s,
                None => match tcp::connect(&mut w.hosts, host.machine, this.to, &this.opts) {
                    Ok(s) => s,
                    Err(e) => return Some(Err(e)),
                },
            };
            this.slot = Some(slot);
            match w.hosts.machines[host.machine as usize]
                .sockets
                .get_mut(slot as usize)
            {
                Some(SocketSlot::Tcp(t)) => {
                    if let Some(e) = t.tcb.error.as_deref() {
                        return Some(Err(e.clone()));
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
                    drop(TcpStream {
                        host,
                        slot,
                        linger: None,
                    });
                }
                Poll::Ready(Err(e))
            }
            Ok(Some(Ok(()))) => {
                let slot = this.slot.take().expect("slot set above");
                Poll::Ready(Ok(TcpStream {
                    host,
                    slot,
                    linger: this.linger,
                }))
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
                linger: None,
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
            let task = current_task();
            let m = host.machine;
            let Some(SocketSlot::Tcp(t)) =
                w.hosts.machines[m as usize].sockets.get_mut(slot as usize)
            else {
                return Some(Err(SocketError::BadDescriptor));
            };
            // Linux `sk_stream_error`: the pending error once, then EPIPE.
            if let Some(e) = t.tcb.error.take() {
                return Some(Err(*e));
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
            tcp::drive(&mut w.hosts, m, slot, |tcb, now, out| {
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
            let task = current_task();
            let m = host.machine;
            let Some(SocketSlot::Tcp(t)) =
                w.hosts.machines[m as usize].sockets.get_mut(slot as usize)
            else {
                return Some(Err(SocketError::BadDescriptor));
            };
            if t.tcb.rcvbuf.ready_len() > 0 {
                let data = t.tcb.read(max.max(1));
                // A read that opens the window enough asks for an update
                // (the only thing a read can make the TCB send); otherwise
                // the TCB has nothing new to say, so skip the call.
                if t.tcb.state != State::Closed && t.tcb.ack_due() {
                    tcp::drive(&mut w.hosts, m, slot, |tcb, now, out| {
                        tcb.output(now, out);
                        tcp::tcb::Effects::default()
                    });
                }
                return Some(Ok(data));
            }
            if let Some(e) = t.tcb.error.take() {
                return Some(Err(*e));
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
