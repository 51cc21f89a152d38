//! Foreign machines: a network stack that is not the simulator's, plugged
//! into a simulated network at the Ethernet level.
//!
//! A type implementing [`ForeignStack`], added with
//! [`crate::Simulation::add_foreign_machine`] and attached to networks with
//! [`crate::Simulation::attach`] like any machine, receives every Ethernet
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
//! - A panic in the stack crashes that machine only (frames to it are then
//!   dropped as `machine_crashed`).
//!
//! ```
//! use elvis_sim::foreign::{ForeignCtx, ForeignStack};
//! use elvis_sim::{NetworkConfig, Simulation};
//! use std::net::Ipv4Addr;
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
//!
//! let mut sim = Simulation::new(1);
//! let lan = sim.add_network(NetworkConfig::ideal("lan"));
//! let m = sim.add_foreign_machine("mirror", Box::new(Mirror)).unwrap();
//! sim.attach(m, lan, Ipv4Addr::new(10, 0, 0, 9)).unwrap();
//! ```
//!
//! # Gaps
//! - The MAC address cannot be chosen; a stack that insists on its own
//!   address would also need the switch and the static neighbour tables
//!   to learn it.
//! - No promiscuous mode: on a switched LAN a foreign machine sees only
//!   frames addressed to it, to broadcast, or to multicast groups.
//! - Foreign machines do not appear in NDL (they are built from Rust).

use crate::machine::IfaceId;
use crate::machine::MachineId;
use crate::net;
use crate::report::DropReason;
use crate::stack::Timer;
use crate::world::{Event, World};
use elvis_kernel::Time;
use elvis_message::Message;
use elvis_wire::ethernet;
use std::collections::VecDeque;
use thiserror::Error;

/// A network stack that owns a machine's NICs (see the module docs).
pub trait ForeignStack: 'static {
    /// Handles a frame that reached the machine's interface `iface` (in
    /// the order of [`crate::Simulation::attach`] calls). `frame` is the
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
pub(crate) struct ForeignSlot {
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
    w: &'a mut World,
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
            .sched.queue
            .schedule(at, m, Event::Timer { machine: m, timer });
    }
}

fn slot_mut(w: &mut World, m: MachineId) -> Option<&mut ForeignSlot> {
    w.machines[m as usize].ext.as_mut()?.foreign.as_mut()
}

/// Runs `f` with machine `m`'s stack taken out of the world, then hands it
/// the frames that arrived meanwhile. Returns false if `m` has no stack or
/// it is already running (the caller then queues the frame).
fn with_stack(
    w: &mut World,
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
pub(crate) fn receive(w: &mut World, m: MachineId, iface: IfaceId, frame: &Message) {
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
pub(crate) fn on_poll(w: &mut World, m: MachineId, room: bool) {
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
pub(crate) fn start(w: &mut World, m: MachineId) {
    let mut cx = ForeignCtx { w, machine: m };
    cx.poll_at(Time::ZERO);
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::{Host, NetworkConfig, NetworkKind, Simulation};
    use std::cell::RefCell;
    use std::net::{Ipv4Addr, SocketAddrV4};
    use std::rc::Rc;

    type Log = Rc<RefCell<Vec<String>>>;

    /// At 5 ms sends 40 raw frames (more than the NIC's 32), going on
    /// each time the NIC has room; logs what it sees.
    struct Burst {
        log: Log,
        left: u32,
    }

    impl ForeignStack for Burst {
        fn receive(&mut self, cx: &mut ForeignCtx<'_>, iface: usize, frame: &[u8]) {
            let to_us = frame[..6] == cx.mac(iface).unwrap();
            let line = format!("rx {} {} {to_us}", cx.now().as_nanos(), frame.len());
            self.log.borrow_mut().push(line);
        }

        fn poll(&mut self, cx: &mut ForeignCtx<'_>) {
            let now = cx.now();
            self.log
                .borrow_mut()
                .push(format!("poll {}", now.as_nanos()));
            if now == Time::ZERO {
                // A later request than a pending one is ignored.
                cx.poll_at(Time::from_millis(7));
                cx.poll_at(Time::from_millis(5));
                cx.poll_at(Time::from_millis(9));
                return;
            }
            let mut frame = vec![0xff; 6];
            frame.extend_from_slice(&cx.mac(0).unwrap());
            frame.extend_from_slice(&[0x88, 0xb5, 1, 2, 3]);
            assert_eq!(cx.transmit(&frame[..10]), Err(TransmitError::TooShort(10)));
            assert_eq!(
                cx.transmit_on(1, &frame),
                Err(TransmitError::NoSuchInterface(1))
            );
            let big = vec![0u8; 14 + 1501];
            assert!(matches!(
                cx.transmit(&big),
                Err(TransmitError::TooLong { mtu: 1500, .. })
            ));
            while self.left > 0 {
                match cx.transmit(&frame) {
                    Ok(()) => self.left -= 1,
                    Err(TransmitError::NicFull(0)) => {
                        self.log.borrow_mut().push(format!("full {}", self.left));
                        break;
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        }
    }

    #[test]
    fn a_foreign_stack_is_polled_sends_through_a_full_nic_and_receives_frames() {
        let mut sim = Simulation::new(3);
        let mut cfg = NetworkConfig::ideal("link").with_rate(100_000_000, 0);
        cfg.kind = NetworkKind::Link;
        let net = sim.add_network(cfg);
        let log = Log::default();
        let stack = Burst {
            log: log.clone(),
            left: 40,
        };
        let f = sim.add_foreign_machine("foreign", Box::new(stack)).unwrap();
        let ours = sim.add_machine("ours");
        sim.attach(f, net, Ipv4Addr::new(10, 0, 0, 9)).unwrap();
        sim.attach(ours, net, Ipv4Addr::new(10, 0, 0, 1)).unwrap();
        sim.spawn(ours, "sender", |h: Host| async move {
            let s = h.udp_bind(0)?;
            let to = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 9), 7);
            s.send_to(vec![7u8; 100], to).await?;
            Ok(())
        });
        let report = sim.run();
        assert!(report.success(), "{:?}", report.problems);
        let log = log.borrow();
        // The datagram: 14 + 20 + 8 + 100 bytes, to our MAC, after one
        // serialization (142 bytes at 100 Mbit/s: 11,360 ns).
        // Polled at 5 ms (not 7 or 9); 32 frames fit, the other 8 go
        // together once a quarter of the NIC's 32 slots are free again
        // (`net::wake_watermark`): after 8 frames of 60 bytes (4,800 ns
        // each at 100 Mbit/s).
        let want = [
            "poll 0",
            "rx 11360 142 true",
            "poll 5000000",
            "full 8",
            "poll 5038400",
        ];
        assert_eq!(*log, want);
        let n = &report.networks[0].stats;
        assert_eq!(n.frames_sent, 41);
        assert_eq!(n.frames_delivered, 41);
        // Our stack drops the 40 raw frames: unknown EtherType.
        assert_eq!(report.packets.dropped.values().sum::<u64>(), 40);
    }
}
