//! The protocol stack of a machine, in the x-kernel style.
//!
//! Each protocol is a module with two verbs: `send` (a session pushes a
//! message down to the protocol below) and `receive` (a protocol demuxes a
//! message up to the session above). Both are plain synchronous functions
//! over the world, called while a frame is being processed; only time
//! (a network hop, a timer) creates an event.
//!
//! ```text
//!   sockets      UdpSocket            IcmpSocket
//!   transport    udp ───────┐         icmp
//!   network      ipv4 (route lookup, fragmentation), forward (routers)
//!   link         ethernet ── arp (or the simulator's static table)
//!   ─────────────────────────── net (NIC queue, wire) ─────────────
//! ```
//!
//! # Layer
//! This crate sits on the network layer (`elvis-net`, whose `Context` the
//! [`hosts::Hosts`] implement) and below sockets and applications: it
//! never names a socket handle or a task, only endpoints in a machine's
//! socket table ([`endpoint`]) and task ids it wakes
//! ([`hosts::Hosts::wake`]).
//!
//! Drops are counted by reason in the run report
//! ([`crate::counters::DropReason`]); corrupted packets are caught by the
//! IPv4, UDP and ICMP checksums.

#![forbid(unsafe_code)]

pub mod addr;
pub mod aodv;
pub mod arp;
pub mod counters;
pub mod crash;
pub mod custom;
pub mod dhcp;
pub mod endpoint;
pub mod ethernet;
pub mod foreign;
pub mod forward;
pub mod hosts;
pub mod icmp;
pub mod icmp_limit;
pub mod ipv4;
pub mod machine;
pub mod offload;
pub mod ondemand;
pub mod partition;
pub mod paths;
pub mod route;
pub mod tcp;
#[cfg(test)]
pub(crate) mod testing;
pub mod udp;

use crate::counters::DropReason;
use crate::hosts::Hosts;
use crate::machine::IfaceId;
use crate::machine::MachineId;
use elvis_message::Message;
use elvis_net::{FrameId, NetId};

/// A protocol timer of a machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    /// Retransmit (or give up on) an ARP request for `ip` on `iface`.
    ArpRetry { iface: IfaceId, ip: u32 },
    /// Drop an incomplete reassembly started at generation `gen`.
    ReassemblyExpire { gen: u32 },
    /// A user protocol's timer.
    Custom { proto: u8, token: u64 },
    /// A TCP connection's timer (generation `gen` of socket `slot`).
    Tcp { slot: u32, gen: u32 },
    /// The NIC has room again for TCP connection `slot`.
    TcpKick { slot: u32 },
    /// A foreign stack asked to be polled now.
    ForeignPoll,
    /// The NIC of a foreign stack has room again.
    ForeignRoom,
    /// The NIC's receive interrupt (coalesced; see [`offload`]).
    NapiPoll,
    /// The DHCP client's timer (generation `gen`; see [`dhcp::client`]);
    /// a `background` one does not keep a run going.
    Dhcp { gen: u32, background: bool },
    /// AODV's housekeeping and HELLO tick (see [`aodv`]); background.
    AodvHello,
    /// AODV's wait for a RREP to the discovery of `dst` (generation `gen`).
    AodvDiscovery { dst: u32, gen: u32 },
    /// AODV's wait for the RREP-ACK of `neighbour` (generation `gen`).
    AodvRrepAck { neighbour: u32, gen: u32 },
}

/// Runs a protocol timer.
pub fn on_timer(w: &mut Hosts, m: MachineId, timer: Timer) {
    if w.machines[m as usize].crashed {
        return;
    }
    match timer {
        Timer::ArpRetry { iface, ip } => arp::on_retry(w, m, iface, ip),
        Timer::ReassemblyExpire { gen } => ipv4::on_reassembly_timer(w, m, gen),
        Timer::Custom { proto, token } => custom::on_timer(w, m, proto, token),
        Timer::Tcp { slot, gen } => tcp::on_timer(w, m, slot, gen),
        Timer::TcpKick { slot } => tcp::kick(w, m, slot),
        Timer::ForeignPoll => crate::foreign::on_poll(w, m, false),
        Timer::ForeignRoom => crate::foreign::on_poll(w, m, true),
        Timer::NapiPoll => offload::poll(w, m),
        Timer::Dhcp { gen, .. } => dhcp::client::on_timer(w, m, gen),
        Timer::AodvHello | Timer::AodvDiscovery { .. } | Timer::AodvRrepAck { .. } => {
            aodv::on_timer(w, m, timer)
        }
    }
}

/// A frame in the network's slab reached the machine on `port` of `net`
/// (a delivery event): a router forwards most transit frames without
/// moving them out of the slab (`forward::forward_in_slab`), a NIC that
/// coalesces takes it into its ring (`offload::on_arrival`), anything
/// else goes up the machine's stack.
pub fn frame_arrived(w: &mut Hosts, net: NetId, port: u32, id: FrameId) {
    let Some((machine, iface)) = arrive(w, net, port) else {
        w.fabric.frames.remove(id as usize);
        return;
    };
    let m = &w.machines[machine as usize];
    let router = m.forward && w.config.fast_forward && !m.foreign && !w.stack.on_demand;
    if router && forward::forward_in_slab(w, machine, iface, id) {
        return;
    }
    if w.fabric.config.early_takers && offload::on_arrival(w, machine, iface, id) {
        return;
    }
    let mut frame = w.fabric.frames.remove(id as usize);
    hand_to_stack(w, machine, iface, &mut frame);
}

/// `frame` reached the machine on `port` of `net` without an event.
pub fn frame_received(w: &mut Hosts, net: NetId, port: u32, frame: &mut Message) {
    if let Some((machine, iface)) = arrive(w, net, port) {
        hand_to_stack(w, machine, iface, frame);
    }
}

/// [`frame_received`] in the middle of the sender's work (a zero-delay
/// network): a panic in the receiver's stack crashes the receiver, not
/// the sender.
pub fn frame_received_nested(w: &mut Hosts, net: NetId, port: u32, frame: &mut Message) {
    let caller = w.sched.current_machine;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        frame_received(w, net, port, frame)
    }));
    if r.is_err() {
        let m = w.fabric.networks[net as usize].ports[port as usize].machine;
        let msg = crate::crash::take_panic_message();
        w.sched.crashed.push((m, msg));
    }
    w.sched.current_machine = caller;
}

/// Returns the machine and interface on `port` of `net`, counting the
/// frame's arrival; `None` (the frame dropped) if the machine crashed.
#[inline]
fn arrive(w: &mut Hosts, net: NetId, port: u32) -> Option<(MachineId, IfaceId)> {
    let p = &w.fabric.networks[net as usize].ports[port as usize];
    let (machine, iface) = (p.machine, p.iface);
    if w.machines[machine as usize].crashed {
        w.drop_packet(DropReason::MachineCrashed);
        return None;
    }
    w.obs.stats.frames_delivered += 1;
    w.sched.current_machine = Some(machine);
    Some((machine, iface))
}

/// Hands a frame that arrived on `iface` to the stack of `machine` (or to
/// the foreign stack that replaces it).
pub fn hand_to_stack(w: &mut Hosts, machine: MachineId, iface: IfaceId, frame: &mut Message) {
    if w.machines[machine as usize].foreign {
        return crate::foreign::receive(w, machine, iface, frame);
    }
    ethernet::receive(w, machine, iface, frame);
}
