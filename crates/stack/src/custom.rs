//! Protocols written by users, above IPv4.
//!
//! A type that implements [`Protocol`] and is added to a machine with
//! `Simulation::add_protocol` (elvis-sim) receives every IPv4 datagram of its
//! protocol number (after reassembly), may send datagrams of that number,
//! set timers and wake tasks, through a [`ProtocolCtx`]. It has the same
//! two x-kernel verbs as the built-in protocols: `demux` (up) and, through
//! the context, `push` (down).
//!
//! ```
//! use elvis_message::Message;
//! use elvis_stack::custom::{Protocol, ProtocolCtx};
//! use std::net::Ipv4Addr;
//!
//! /// Answers every datagram of IP protocol 253 with the same bytes.
//! struct Echo;
//! impl Protocol for Echo {
//!     fn name(&self) -> &'static str { "echo-253" }
//!     fn ip_protocol(&self) -> u8 { 253 }
//!     fn demux(&mut self, cx: &mut ProtocolCtx<'_>, src: Ipv4Addr, _dst: Ipv4Addr, msg: Message) {
//!         let _ = cx.push(src, msg);
//!     }
//! }
//! ```
//!
//! # Gaps
//! UDP and ICMP are built in for speed (static dispatch, no boxing) rather
//! than implemented through this trait; they follow the same verbs.

use crate::endpoint::SocketError;
use crate::hosts::TaskId;
use crate::hosts::{Event, Hosts};
use crate::machine::MachineId;
use elvis_kernel::Time;
use elvis_message::Message;
use elvis_wire::IpProtocol;
use std::net::Ipv4Addr;
use std::time::Duration;

/// A user-defined protocol above IPv4.
pub trait Protocol: 'static {
    /// A short name for reports and traces.
    fn name(&self) -> &'static str;
    /// The IPv4 protocol number this protocol handles.
    fn ip_protocol(&self) -> u8;
    /// Handles a datagram (payload only; the IPv4 header is gone).
    fn demux(&mut self, cx: &mut ProtocolCtx<'_>, src: Ipv4Addr, dst: Ipv4Addr, msg: Message);
    /// Handles a timer set with [`ProtocolCtx::set_timer`].
    fn on_timer(&mut self, _cx: &mut ProtocolCtx<'_>, _token: u64) {}
}

/// What a protocol may do while it runs.
pub struct ProtocolCtx<'a> {
    w: &'a mut Hosts,
    machine: MachineId,
    proto: u8,
}

impl ProtocolCtx<'_> {
    /// Returns the current virtual time.
    pub fn now(&self) -> Time {
        self.w.now()
    }

    /// Returns the machine the protocol runs on.
    pub fn machine(&self) -> MachineId {
        self.machine
    }

    /// Sends `msg` to `dst` as an IPv4 datagram of this protocol's number
    /// (fragmented if needed). Dropped, and counted, if the NIC is full.
    ///
    /// # Errors
    /// `HostUnreachable` when no attached network has `dst`.
    pub fn push(&mut self, dst: Ipv4Addr, msg: Message) -> Result<(), SocketError> {
        push(self.w, self.machine, self.proto, dst, msg)
    }

    /// Calls [`Protocol::on_timer`] with `token` after `delay`.
    pub fn set_timer(&mut self, delay: Duration, token: u64) {
        let at = self.w.now() + delay;
        let timer = super::Timer::Custom {
            proto: self.proto,
            token,
        };
        self.w.sched.queue.schedule(
            at,
            self.machine,
            Event::Timer {
                machine: self.machine,
                timer,
            },
        );
    }

    /// Wakes an application task (one that shares state with this
    /// protocol and waits on it).
    pub fn wake(&mut self, task: u32) {
        self.w.wake(task as TaskId);
    }
}

pub fn push(
    w: &mut Hosts,
    m: MachineId,
    proto: u8,
    dst: Ipv4Addr,
    msg: Message,
) -> Result<(), SocketError> {
    send(w, m, proto, None, dst, msg).map(|_| ())
}

/// Sends `msg` to `dst` as an IPv4 datagram of protocol `proto` whose
/// source address is `src`, whatever the machine's own addresses are: a
/// raw socket with `IP_HDRINCL`, as traffic generators and attack tools
/// use to spoof sources. The caller builds the transport header (its
/// checksum covers `src`). The route to `dst` picks the interface; a full
/// NIC drops the datagram (counted) and returns `Ok(false)`.
///
/// # Errors
/// `HostUnreachable` when no route leads to `dst`.
pub fn push_from(
    w: &mut Hosts,
    m: MachineId,
    proto: u8,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    msg: Message,
) -> Result<bool, SocketError> {
    send(w, m, proto, Some(src), dst, msg)
}

/// [`push`] and [`push_from`]: one body, so that the IPv4 calls it makes
/// (the NIC-room check, `ipv4::send`) have one call site here, as before
/// raw sends, and the compiler inlines them as it did.
fn send(
    w: &mut Hosts,
    m: MachineId,
    proto: u8,
    src: Option<Ipv4Addr>,
    dst: Ipv4Addr,
    mut msg: Message,
) -> Result<bool, SocketError> {
    // Used where it lies (see `ipv4::route_flow`).
    let found = super::ipv4::route(w, m, dst);
    let route = found.as_ref().map_err(Clone::clone)?;
    if super::ipv4::room(w, m, route) < super::ipv4::frames_needed(route, msg.len()) {
        w.drop_packet(crate::counters::DropReason::Net(
            elvis_net::DropReason::NicQueueFull,
        ));
        return Ok(false);
    }
    let mut route = *route;
    if let Some(src) = src {
        route.src = src;
    }
    super::ipv4::send(w, m, route, dst, IpProtocol::from(proto), &mut msg);
    Ok(true)
}

/// Runs `f` with protocol `proto` of machine `m` taken out of the machine
/// (so it can borrow the world); returns false if there is none.
fn with_protocol(
    w: &mut Hosts,
    m: MachineId,
    proto: u8,
    f: impl FnOnce(&mut dyn Protocol, &mut ProtocolCtx<'_>),
) -> bool {
    let Some(ext) = w.machines[m as usize].ext.as_mut() else {
        return false;
    };
    let Some(i) = ext.protocols.iter().position(|p| p.ip_protocol() == proto) else {
        return false;
    };
    let mut p = ext.protocols.swap_remove(i);
    let mut cx = ProtocolCtx {
        w,
        machine: m,
        proto,
    };
    f(p.as_mut(), &mut cx);
    w.machines[m as usize].ext().protocols.push(p);
    true
}

/// Hands a datagram to the user protocol of its number; false if none.
pub fn demux(
    w: &mut Hosts,
    m: MachineId,
    proto: u8,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    msg: &mut Message,
) -> bool {
    let msg = std::mem::take(msg);
    with_protocol(w, m, proto, |p, cx| p.demux(cx, src, dst, msg))
}

pub fn on_timer(w: &mut Hosts, m: MachineId, proto: u8, token: u64) {
    with_protocol(w, m, proto, |p, cx| p.on_timer(cx, token));
}
