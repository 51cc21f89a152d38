//! The application's view of its machine: time, sockets, names, randomness.
//!
//! A [`Host`] is a 4-byte handle (the machine id). Its methods are the
//! "system calls" of a simulated machine; blocking ones are `async`.

use crate::machine::MachineId;
use crate::socket::{self, IcmpSocket, SocketError, UdpSocket};
use crate::world::{try_with_world, Event};
use elvis_kernel::rng::{self, StreamKind};
use elvis_kernel::Time;
use rand::RngCore;
use std::future::Future;
use std::net::Ipv4Addr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// A handle to the machine an application runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Host {
    pub machine: MachineId,
}

impl Host {
    /// Returns the machine's id.
    pub fn id(&self) -> MachineId {
        self.machine
    }

    /// Returns the current virtual time (`Time::ZERO` outside a run).
    pub fn now(&self) -> Time {
        try_with_world(|w| w.hosts.now()).unwrap_or(Time::ZERO)
    }

    /// Returns the machine's name (`capturer`, `sender-17`).
    pub fn name(&self) -> String {
        try_with_world(|w| w.hosts.machine_name(self.machine)).unwrap_or_default()
    }

    /// Returns the machine's first IPv4 address.
    pub fn ip(&self) -> Option<Ipv4Addr> {
        try_with_world(|w| w.hosts.machines[self.machine as usize].primary_ip())
            .ok()
            .flatten()
    }

    /// Waits for `d` of virtual time.
    pub fn sleep(&self, d: Duration) -> Sleep {
        Sleep {
            deadline: self.now() + d,
            armed: false,
            machine: self.machine,
        }
    }

    /// Waits until virtual time `t`.
    pub fn sleep_until(&self, t: Time) -> Sleep {
        Sleep {
            deadline: t,
            armed: false,
            machine: self.machine,
        }
    }

    /// Runs `fut` until virtual time `deadline`; `None` if it did not
    /// finish by then (a receive with a timeout, like `SO_RCVTIMEO`).
    pub async fn timeout_at<F: Future>(&self, deadline: Time, fut: F) -> Option<F::Output> {
        let mut fut = std::pin::pin!(fut);
        let mut sleep = std::pin::pin!(self.sleep_until(deadline));
        std::future::poll_fn(move |cx| {
            if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                return Poll::Ready(Some(v));
            }
            if sleep.as_mut().poll(cx).is_ready() {
                return Poll::Ready(None);
            }
            Poll::Pending
        })
        .await
    }

    /// Starts `fut` as a task of its own on this machine, part of the
    /// calling application (like a thread: its metrics are the
    /// application's; it is not an instance of it in the report, and may
    /// still be waiting when the run ends). It first runs right after the
    /// caller's current poll, at the same instant, and from then on only
    /// when what it waits for happens: a server or resolver serves each
    /// client this way without polling every unfinished one on every
    /// wake-up. A crash of the machine ends it with the machine's other
    /// tasks.
    ///
    /// # Errors
    /// [`SocketError::NotInSimulation`] outside a running simulation,
    /// [`SocketError::Reentrant`] from inside another system call.
    pub fn spawn(&self, fut: impl Future<Output = ()> + 'static) -> Result<(), SocketError> {
        let fut: crate::executor::TaskFuture = Box::pin(async move {
            fut.await;
            Ok(())
        });
        try_with_world(|w| {
            let app = match current_task() {
                Some(t) => w.tasks.meta[t as usize].app,
                None => w.tasks.app_index("spawned"),
            };
            let id = w.tasks.meta.len() as crate::executor::TaskId;
            w.tasks.meta.push(crate::executor::TaskMeta {
                machine: self.machine,
                app,
                state: crate::executor::TaskState::Pending,
                daemon: true,
                child: true,
            });
            w.hosts.sched.wakeups.add(id);
            w.hosts.wake(id);
            w.spawned.push((id, fut));
        })?;
        crate::executor::note_spawned();
        Ok(())
    }

    /// Lets every other task runnable at this instant run first.
    pub fn yield_now(&self) -> YieldNow {
        YieldNow { yielded: false }
    }

    /// Resolves a machine name (`capturer`, `sender-3`) or a dotted-quad
    /// address to an IPv4 address, like `getaddrinfo` against the
    /// simulator's host table.
    ///
    /// # Errors
    /// [`SocketError::UnknownHost`] when no machine has that name.
    pub fn resolve(&self, name: &str) -> Result<Ipv4Addr, SocketError> {
        if let Ok(ip) = name.parse::<Ipv4Addr>() {
            return Ok(ip);
        }
        try_with_world(|w| socket::resolve(&w.hosts, name))?
    }

    /// Opens a UDP socket bound to `port` on every local address (0 picks
    /// a free ephemeral port).
    ///
    /// # Errors
    /// `AddrInUse` if the port is taken; `ProtocolNotAvailable` if the
    /// machine does not run UDP.
    pub fn udp_bind(&self, port: u16) -> Result<UdpSocket, SocketError> {
        UdpSocket::bind(*self, port)
    }

    /// Listens for TCP connections on `port` with room for `backlog`
    /// connections not yet accepted.
    ///
    /// # Errors
    /// `AddrInUse`; `ProtocolNotAvailable` without TCP on the machine.
    pub fn tcp_listen(
        &self,
        port: u16,
        backlog: usize,
    ) -> Result<crate::socket::TcpListener, SocketError> {
        crate::socket::TcpListener::open(*self, port, backlog, Default::default(), None)
    }

    /// Returns a TCP socket to set options on, then `bind` + `listen` or
    /// `connect` ([`crate::TcpSocket`]).
    ///
    /// # Errors
    /// `ProtocolNotAvailable` without TCP on the machine.
    pub fn tcp_socket(&self) -> Result<crate::socket::TcpSocket, SocketError> {
        crate::socket::TcpSocket::new(*self)
    }

    /// Connects to `to` (a blocking `connect(2)`), with the machine's
    /// default congestion control.
    pub fn tcp_connect(&self, to: std::net::SocketAddrV4) -> crate::socket::Connect {
        crate::socket::TcpStream::connect(*self, to, None)
    }

    /// Connects to `to` using congestion-control algorithm `alg`
    /// (`TCP_CONGESTION`).
    pub fn tcp_connect_with(
        &self,
        to: std::net::SocketAddrV4,
        alg: elvis_tcpcc::Algorithm,
    ) -> crate::socket::Connect {
        crate::socket::TcpStream::connect(*self, to, Some(alg))
    }

    /// Opens an ICMP echo socket (for `ping`) with identifier `ident`.
    pub fn icmp_socket(&self, ident: u16) -> Result<IcmpSocket, SocketError> {
        IcmpSocket::open(*self, ident)
    }

    /// Opens an ICMP echo socket with the first identifier not in use on
    /// this machine, counting up (and wrapping) from `preferred`, as Linux
    /// gives each unprivileged ICMP socket its own: two `ping`s on one
    /// machine get two identifiers.
    ///
    /// # Errors
    /// `AddrInUse` when all 65,536 identifiers are taken.
    pub fn icmp_socket_from(&self, preferred: u16) -> Result<IcmpSocket, SocketError> {
        IcmpSocket::open_free(*self, preferred)
    }

    /// Returns the id of the task calling this (for a user protocol that
    /// wakes it with [`crate::stack::custom::ProtocolCtx::wake`]).
    pub fn task_id(&self) -> Option<u32> {
        try_with_world(|_| current_task()).ok().flatten()
    }

    /// Sends `msg` to `dst` as a raw IPv4 datagram with protocol number
    /// `proto` (for applications of user-defined protocols).
    ///
    /// # Errors
    /// `HostUnreachable` when no attached network has `dst`.
    pub fn send_ip(
        &self,
        dst: Ipv4Addr,
        proto: u8,
        msg: impl Into<elvis_message::Message>,
    ) -> Result<(), SocketError> {
        let msg = msg.into();
        try_with_world(|w| crate::stack::custom::push(&mut w.hosts, self.machine, proto, dst, msg))?
    }

    /// Wakes task `task` of this run (one waiting on something this task
    /// provides: a worker given back).
    pub fn wake(&self, task: crate::executor::TaskId) {
        let _ = try_with_world(|w| w.hosts.wake(task));
    }

    /// Sends `msg` to `dst` as a raw IPv4 datagram with protocol number
    /// `proto` and source address `src`, which need not be the machine's
    /// (a raw socket with `IP_HDRINCL`: spoofed sources, for traffic
    /// generators and attacks). The caller writes the transport header and
    /// its checksum. Returns false when the NIC was full and the datagram
    /// was dropped.
    ///
    /// # Errors
    /// `HostUnreachable` when no route leads to `dst`.
    pub fn send_ip_from(
        &self,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        proto: u8,
        msg: impl Into<elvis_message::Message>,
    ) -> Result<bool, SocketError> {
        let msg = msg.into();
        try_with_world(|w| {
            crate::stack::custom::push_from(&mut w.hosts, self.machine, proto, src, dst, msg)
        })?
    }

    /// Returns 64 random bits from the machine's own stream.
    pub fn random_u64(&self) -> u64 {
        try_with_world(|w| {
            let seed = w.hosts.config.seed;
            let m = self.machine;
            let ext = w.hosts.machines[m as usize].ext();
            ext.rng
                .get_or_insert_with(|| rng::stream(seed, StreamKind::Machine, u64::from(m)))
                .next_u64()
        })
        .unwrap_or(0)
    }

    /// Joins an IPv4 multicast group on the machine's first interface
    /// (static membership).
    pub fn join_multicast(&self, group: Ipv4Addr) -> Result<(), SocketError> {
        try_with_world(|w| socket::join_multicast(&mut w.hosts, self.machine, group))?
    }

    /// Waits until the machine has an address (at once for a machine with
    /// static addresses; a DHCP client's first lease otherwise).
    pub fn configured(&self) -> Configured {
        Configured {
            machine: self.machine,
        }
    }

    /// Gives the machine's DHCP lease back (a RELEASE to the server, like
    /// `dhclient -r`): the address goes at once and the client waits in
    /// INIT. Nothing happens on a machine without a lease.
    pub fn dhcp_release(&self) {
        let _ = try_with_world(|w| crate::stack::dhcp::client::release(&mut w.hosts, self.machine));
    }

    /// Returns the machine's resolver configuration (its DNS servers and
    /// search domain), if it has one: shared, not copied, as every
    /// lookup reads it.
    pub fn resolver(&self) -> Option<std::sync::Arc<crate::machine::ResolverConf>> {
        try_with_world(|w| {
            w.hosts.machines[self.machine as usize]
                .ext
                .as_ref()
                .and_then(|e| e.resolver.clone())
        })
        .ok()
        .flatten()
    }

    /// Sets the machine's resolver configuration (what a DHCP lease's
    /// DNS-server and domain-name options, or NDL `resolver=`, give);
    /// `None` removes it.
    pub fn set_resolver(&self, conf: Option<crate::machine::ResolverConf>) {
        let _ = try_with_world(|w| {
            let m = &mut w.hosts.machines[self.machine as usize];
            match conf {
                Some(c) => m.ext().resolver = Some(std::sync::Arc::new(c)),
                None => {
                    if let Some(e) = m.ext.as_deref_mut() {
                        e.resolver = None;
                    }
                }
            }
        });
    }

    /// Publishes a named result of this application (an RTT average, a
    /// goodput) in the run report's `metrics`.
    pub fn publish(&self, name: &str, value: f64) {
        let _ = try_with_world(|w| {
            let app = current_task().map(|t| w.tasks.meta[t as usize].app);
            let time = w.hosts.now();
            w.metrics.push(crate::world::Metric {
                machine: self.machine,
                time,
                app,
                name: name.to_string(),
                value,
            });
        });
    }

    /// Publishes `name` = `value` like [`Host::publish`] and returns a
    /// handle that changes the value later: a daemon, which never returns,
    /// keeps its running totals (queries answered…) in the report this
    /// way.
    pub fn publish_live(&self, name: &str, value: f64) -> LiveMetric {
        let index = try_with_world(|w| w.metrics.len()).unwrap_or(usize::MAX);
        self.publish(name, value);
        LiveMetric { index }
    }

    /// Adds `n` to the run-wide counter `name`; returns the new value.
    pub fn counter_add(&self, name: &str, n: u64) -> u64 {
        try_with_world(|w| {
            let c = w.counters.entry(name.to_string()).or_default();
            c.value += n;
            let v = c.value;
            let waiters = std::mem::take(&mut c.waiters);
            for t in waiters {
                w.hosts.wake(t);
            }
            v
        })
        .unwrap_or(0)
    }

    /// Waits until the run-wide counter `name` reaches `target`.
    pub fn counter_reached(&self, name: &str, target: u64) -> CounterReached {
        CounterReached {
            name: name.to_string(),
            target,
        }
    }
}

/// Returns the task being polled.
pub use crate::executor::current_task;

/// Waits for the machine's first address ([`Host::configured`]).
#[derive(Debug)]
pub struct Configured {
    machine: MachineId,
}

impl Future for Configured {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        let m = self.machine;
        let waiting = try_with_world(|w| match current_task() {
            Some(t) => crate::stack::addr::wait_configured(&mut w.hosts, m, t),
            None => false,
        });
        match waiting {
            Ok(true) => Poll::Pending,
            _ => Poll::Ready(()),
        }
    }
}

/// A published metric whose value can still change
/// ([`Host::publish_live`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveMetric {
    index: usize,
}

impl LiveMetric {
    /// Sets the metric's value (a no-op outside a run).
    pub fn set(&self, value: f64) {
        let _ = try_with_world(|w| {
            if let Some(m) = w.metrics.get_mut(self.index) {
                m.value = value;
            }
        });
    }
}

/// A future that completes at a virtual instant.
#[derive(Debug)]
pub struct Sleep {
    deadline: Time,
    armed: bool,
    machine: MachineId,
}

impl Future for Sleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        let deadline = self.deadline;
        let armed = self.armed;
        let machine = self.machine;
        let r = try_with_world(|w| {
            if w.hosts.now() >= deadline {
                return true;
            }
            if !armed {
                if let Some(task) = current_task() {
                    w.hosts
                        .sched
                        .queue
                        .schedule(deadline, machine, Event::Wake(task));
                }
            }
            false
        });
        match r {
            Ok(true) | Err(_) => Poll::Ready(()),
            Ok(false) => {
                self.armed = true;
                Poll::Pending
            }
        }
    }
}

/// A future that yields once to the other runnable tasks.
#[derive(Debug)]
pub struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        let _ = try_with_world(|w| {
            if let Some(t) = current_task() {
                w.hosts.wake(t);
            }
        });
        Poll::Pending
    }
}

/// A future that completes when a run-wide counter reaches a target.
#[derive(Debug)]
pub struct CounterReached {
    name: String,
    target: u64,
}

impl Future for CounterReached {
    type Output = u64;
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<u64> {
        let r = try_with_world(|w| {
            let task = current_task();
            let c = w.counters.entry(self.name.clone()).or_default();
            if c.value >= self.target {
                return Some(c.value);
            }
            if let Some(t) = task {
                if !c.waiters.contains(&t) {
                    c.waiters.push(t);
                }
            }
            None
        });
        match r {
            Ok(Some(v)) => Poll::Ready(v),
            Ok(None) => Poll::Pending,
            Err(_) => Poll::Ready(0),
        }
    }
}
