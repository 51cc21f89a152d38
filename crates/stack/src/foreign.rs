//! Foreign machines: a network stack that is not the simulator's, plugged
//! into a simulated network at the Ethernet level.
//!
//! A type implementing [`ForeignStack`], added with
//! `Simulation::add_foreign_machine` (elvis-sim) and attached to networks with
//! `Simulation::attach` (elvis-sim) like any machine, receives every Ethernet
//! frame that reaches the machine's NICs and may transmit raw Ethernet
//! frames and ask to be polled at a virtual time. Nothing of the
//! simulator's own stack (ARP, IPv4, sockets) runs on such a machine.
//! This is how a second, independent TCP/IP implementation (smoltcp in the
//! interop tests, see `docs/tcp.md`) talks to ours inside one simulation.
//!
//! The verbs are the x-kernel's, at the bottom of the graph: the simulator
//! *demuxes* frames up into the stack ([`ForeignStack::receive`]); the
//! stack *pushes* frames down through its context
//! ([`ForeignCtx::transmit`]).
//!
//! # Invariants
//! - A foreign frame is an ordinary frame: it crosses the same NIC queue,
//!   links, switches, loss, corruption and pcap capture as the frames of
//!   simulated machines, and counts in the same statistics.
//! - The stack runs only from the event loop, one call at a time, in
//!   virtual time ([`ForeignCtx::now`]): no threads, no locks, no clock.
//!   A frame that arrives while the stack is running (a zero-delay reply
//!   to a frame it just sent) is queued and handed over, in order, as soon
//!   as the running call returns.
//! - The machine's MAC address on each network is the simulator's
//!   ([`ForeignCtx::mac`]): simulated machines address it from their
//!   static neighbour table, or learn it with ARP, like any other.
//! - The machine's address on an interface is the one given when it was
//!   attached, or, once it sends an ARP packet whose sender address is
//!   another (a stack that configured itself, by DHCP or by hand), that
//!   address: the static neighbour table learns it then, as a switch
//!   learns a MAC address from the frames a port sends
//!   ([`crate::addr::assign`]; refused, and the table left alone, when
//!   another machine on the network has it).
//! - A panic in the stack crashes that machine only (frames to it are then
//!   dropped as `machine_crashed`).
//!
//! ```
//! use elvis_stack::foreign::{ForeignCtx, ForeignStack};
//!
//! /// Sends every frame it receives back to where it came from.
//! struct Mirror;
//! impl ForeignStack for Mirror {
//!     fn receive(&mut self, cx: &mut ForeignCtx<'_>, iface: usize, frame: &[u8]) {
//!         if frame.len() < 14 {
//!             return;
//!         }
//!         let mut back = frame.to_vec();
//!         back.copy_within(6..12, 0); // destination := source
//!         back[6..12].copy_from_slice(&cx.mac(iface).unwrap());
//!         let _ = cx.transmit_on(iface, &back);
//!     }
//! }
//! ```
//!
//! It goes on a machine with `sim.add_foreign_machine("mirror",
//! Box::new(Mirror))` (elvis-sim), attached to networks like any other.
//!
//! # Gaps
//! - The MAC address cannot be chosen; a stack that insists on its own
//!   address would also need the switch and the static neighbour tables
//!   to learn it.
//! - No promiscuous mode: on a switched LAN a foreign machine sees only
//!   frames addressed to it, to broadcast, or to multicast groups.
//! - Foreign machines do not appear in NDL (they are built from Rust).

use crate::counters::DropReason;
use crate::hosts::{Event, Hosts};
use crate::machine::IfaceId;
use crate::machine::MachineId;
use crate::Timer;
use elvis_kernel::Time;
use elvis_message::Message;
use elvis_net as net;
use elvis_wire::ethernet;
use std::collections::VecDeque;
use thiserror::Error;

/// A network stack that owns a machine's NICs (see the module docs).
pub trait ForeignStack: 'static {
    /// Handles a frame that reached the machine's interface `iface` (in
    /// the order of `Simulation::attach` (elvis-sim) calls). `frame` is the
    /// whole Ethernet frame as captured: header, payload and padding, no
    /// FCS. It may be corrupted if the network corrupts frames.
    fn receive(&mut self, cx: &mut ForeignCtx<'_>, iface: usize, frame: &[u8]);

    /// Runs at the start of the simulation (virtual time zero), at each
    /// time asked for with [`ForeignCtx::poll_at`], and when a NIC that
    /// refused a frame has room again. Does nothing by default.
    fn poll(&mut self, _cx: &mut ForeignCtx<'_>) {}
}

/// Why a foreign frame was not sent.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransmitError {
    /// The NIC's transmit queue is full (`txqueuelen` frames); the stack
    /// is polled again when it has room.
    #[error("the NIC transmit queue of interface {0} is full")]
    NicFull(usize),
    /// The machine has no interface of that index.
    #[error("no interface {0} on this machine")]
    NoSuchInterface(usize),
    /// The frame is shorter than an Ethernet header.
    #[error("a frame of {0} bytes is shorter than an Ethernet header")]
    TooShort(usize),
    /// The frame's payload exceeds the network's MTU.
    #[error("a frame of {len} bytes exceeds the MTU {mtu} of interface {iface}")]
    TooLong { iface: usize, len: usize, mtu: u32 },
}

/// The stack's slot on its machine: the stack itself (absent while it
/// runs), frames that arrived while it ran, and its next poll.
pub struct ForeignSlot {
    stack: Option<Box<dyn ForeignStack>>,
    inbox: VecDeque<(usize, Vec<u8>)>,
    next_poll: Option<Time>,
}

impl ForeignSlot {
    pub fn new(stack: Box<dyn ForeignStack>) -> Self {
        ForeignSlot {
            stack: Some(stack),
            inbox: VecDeque::new(),
            next_poll: None,
        }
    }
}

/// What a foreign stack may do while it runs.
pub struct ForeignCtx<'a> {
    w: &'a mut Hosts,
    machine: MachineId,
}

impl ForeignCtx<'_> {
    /// Returns the current virtual time.
    pub fn now(&self) -> Time {
        self.w.now()
    }

    /// Returns the machine the stack runs on.
    pub fn machine(&self) -> MachineId {
        self.machine
    }

    /// Returns how many interfaces the machine has.
    pub fn interfaces(&self) -> usize {
        self.w.machines[self.machine as usize].ifaces.len()
    }

    /// Returns the MAC address of interface `iface` (`None` if absent).
    pub fn mac(&self, iface: usize) -> Option<[u8; 6]> {
        let ifc = self.w.machines[self.machine as usize].ifaces.get(iface)?;
        Some(self.w.fabric.networks[ifc.net as usize].mac(ifc.port).0)
    }

    /// Returns the MTU (largest IP packet per frame) of interface `iface`.
    pub fn mtu(&self, iface: usize) -> Option<u32> {
        let ifc = self.w.machines[self.machine as usize].ifaces.get(iface)?;
        Some(self.w.fabric.networks[ifc.net as usize].cfg.mtu)
    }

    /// Returns how many more frames interface `iface` takes now (0 for a
    /// missing interface).
    pub fn nic_room(&self, iface: usize) -> u32 {
        match self.w.machines[self.machine as usize].ifaces.get(iface) {
            Some(ifc) => net::nic_room(self.w, ifc.net, ifc.port),
            None => 0,
        }
    }

    /// Returns true if interface `iface` takes a frame now; if not,
    /// arranges for [`ForeignStack::poll`] to run as soon as it does.
    pub fn can_transmit(&mut self, iface: usize) -> bool {
        if self.nic_room(iface) > 0 {
            return true;
        }
        if let Some(ifc) = self.w.machines[self.machine as usize].ifaces.get(iface) {
            let (net, port) = (ifc.net, ifc.port);
            net::wait_for_room_stack(self.w, net, port);
        }
        false
    }

    /// Sends a whole Ethernet frame (header included, no FCS) on interface
    /// 0. See [`ForeignCtx::transmit_on`].
    ///
    /// # Errors
    /// As [`ForeignCtx::transmit_on`].
    pub fn transmit(&mut self, frame: &[u8]) -> Result<(), TransmitError> {
        self.transmit_on(0, frame)
    }

    /// Sends a whole Ethernet frame (header included, no FCS) on interface
    /// `iface`. Frames shorter than 60 bytes are padded with zeros, as a
    /// NIC does. The source address is not checked or rewritten.
    ///
    /// # Errors
    /// `NicFull` when the NIC's queue is full (the stack is then polled
    /// when it has room; the frame is not sent), `NoSuchInterface`,
    /// `TooShort` (under 14 bytes) and `TooLong` (payload over the MTU).
    pub fn transmit_on(&mut self, iface: usize, frame: &[u8]) -> Result<(), TransmitError> {
        let Some(ifc) = self.w.machines[self.machine as usize]
            .ifaces
            .get(iface)
            .copied()
        else {
            return Err(TransmitError::NoSuchInterface(iface));
        };
        if frame.len() < ethernet::HEADER_LEN {
            return Err(TransmitError::TooShort(frame.len()));
        }
        let mtu = self.w.fabric.networks[ifc.net as usize].cfg.mtu;
        if frame.len() - ethernet::HEADER_LEN > mtu as usize {
            return Err(TransmitError::TooLong {
                iface,
                len: frame.len(),
                mtu,
            });
        }
        if !self.can_transmit(iface) {
            return Err(TransmitError::NicFull(iface));
        }
        if let Some(sender) = arp_sender(frame).filter(|&a| a != ifc.ip) {
            let _ = crate::addr::assign(self.w, self.machine, iface as IfaceId, sender, None);
        }
        let mut msg = Message::from_vec(frame.to_vec());
        if msg.len() < ethernet::MIN_FRAME_LEN {
            msg.pad_to(ethernet::MIN_FRAME_LEN);
        }
        net::transmit(self.w, ifc.net, ifc.port, &mut msg);
        Ok(())
    }

    /// Asks for [`ForeignStack::poll`] to run at `at` (now if `at` is in
    /// the past). Only the earliest pending request is kept: after each
    /// call into the stack, ask again for the next time it needs.
    pub fn poll_at(&mut self, at: Time) {
        let at = at.max(self.w.now());
        let m = self.machine;
        let Some(slot) = slot_mut(self.w, m) else {
            return;
        };
        if slot.next_poll.is_some_and(|t| t <= at) {
            return;
        }
        slot.next_poll = Some(at);
        let timer = Timer::ForeignPoll;
        self.w
            .sched
            .queue
            .schedule(at, m, Event::Timer { machine: m, timer });
    }
}

/// The sender protocol address of an Ethernet/IPv4 ARP packet (RFC 826:
/// hardware type 1, protocol type 0x0800, lengths 6 and 4), unless it is
/// `0.0.0.0` (an RFC 5227 probe) or not a unicast address.
fn arp_sender(frame: &[u8]) -> Option<std::net::Ipv4Addr> {
    let arp = frame.get(ethernet::HEADER_LEN..ethernet::HEADER_LEN + 28)?;
    if frame[12..14] != [0x08, 0x06] || arp[..6] != [0, 1, 0x08, 0x00, 6, 4] {
        return None;
    }
    let ip = std::net::Ipv4Addr::new(arp[14], arp[15], arp[16], arp[17]);
    let usable = !(ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast());
    usable.then_some(ip)
}

fn slot_mut(w: &mut Hosts, m: MachineId) -> Option<&mut ForeignSlot> {
    w.machines[m as usize].ext.as_mut()?.foreign.as_mut()
}

/// Runs `f` with machine `m`'s stack taken out of the world, then hands it
/// the frames that arrived meanwhile. Returns false if `m` has no stack or
/// it is already running (the caller then queues the frame).
fn with_stack(
    w: &mut Hosts,
    m: MachineId,
    f: impl FnOnce(&mut dyn ForeignStack, &mut ForeignCtx<'_>),
) -> bool {
    let Some(mut stack) = slot_mut(w, m).and_then(|s| s.stack.take()) else {
        return false;
    };
    let mut cx = ForeignCtx { w, machine: m };
    f(stack.as_mut(), &mut cx);
    while let Some((iface, frame)) = slot_mut(cx.w, m).and_then(|s| s.inbox.pop_front()) {
        stack.receive(&mut cx, iface, &frame);
    }
    if let Some(slot) = slot_mut(w, m) {
        slot.stack = Some(stack);
    }
    true
}

/// Hands a frame that reached foreign machine `m` to its stack. Cold and
/// out of line: the per-frame path of simulated machines stays as it was.
#[cold]
#[inline(never)]
pub fn receive(w: &mut Hosts, m: MachineId, iface: IfaceId, frame: &Message) {
    let bytes = frame.to_vec();
    let iface = iface as usize;
    if with_stack(w, m, |s, cx| s.receive(cx, iface, &bytes)) {
        return;
    }
    match slot_mut(w, m) {
        // Running: a zero-delay reply to its own frame; handled on return.
        Some(slot) => slot.inbox.push_back((iface, bytes)),
        None => w.drop_packet(DropReason::NotForUs),
    }
}

/// Runs a requested poll (`room`: the NIC has room again, always polls).
pub fn on_poll(w: &mut Hosts, m: MachineId, room: bool) {
    let now = w.now();
    let Some(slot) = slot_mut(w, m) else {
        return;
    };
    if !room {
        // Only the pending request's own event polls; superseded ones
        // (a later time replaced by an earlier one) are ignored.
        if slot.next_poll != Some(now) {
            return;
        }
        slot.next_poll = None;
    }
    with_stack(w, m, |s, cx| s.poll(cx));
}

/// Schedules the first poll of a new foreign machine at time zero.
pub fn start(w: &mut Hosts, m: MachineId) {
    let mut cx = ForeignCtx { w, machine: m };
    cx.poll_at(Time::ZERO);
}

#[cfg(test)]
mod tests {
    use super::arp_sender;
    use std::net::Ipv4Addr;

    /// An Ethernet/IPv4 ARP request from `spa` (RFC 826 layout).
    fn arp(spa: [u8; 4]) -> Vec<u8> {
        let mut f = vec![0xff; 6];
        f.extend([2, 0, 0, 0, 0, 7, 0x08, 0x06]);
        f.extend([0, 1, 0x08, 0x00, 6, 4, 0, 1]);
        f.extend([2, 0, 0, 0, 0, 7]);
        f.extend(spa);
        f.extend([0; 6]);
        f.extend([10, 0, 0, 1]);
        f
    }

    #[test]
    fn the_sender_of_an_arp_packet_is_read_and_probes_are_not() {
        assert_eq!(
            arp_sender(&arp([10, 0, 0, 9])),
            Some(Ipv4Addr::new(10, 0, 0, 9))
        );
        assert_eq!(arp_sender(&arp([0, 0, 0, 0])), None, "an RFC 5227 probe");
        let mut ipv4 = arp([10, 0, 0, 9]);
        ipv4[12..14].copy_from_slice(&[0x08, 0x00]);
        assert_eq!(arp_sender(&ipv4), None, "not ARP");
        let mut other = arp([10, 0, 0, 9]);
        other[16..18].copy_from_slice(&[0x86, 0xdd]);
        assert_eq!(arp_sender(&other), None, "not IPv4 over Ethernet");
        assert_eq!(arp_sender(&arp([10, 0, 0, 9])[..40]), None, "short");
    }
}
