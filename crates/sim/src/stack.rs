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
//! Drops are counted by reason in the run report
//! ([`crate::report::DropReason`]); corrupted packets are caught by the
//! IPv4, UDP and ICMP checksums.

pub mod arp;
pub mod custom;
pub mod ethernet;
pub mod forward;
pub mod icmp;
pub mod icmp_limit;
pub mod ipv4;
pub mod offload;
pub mod route;
pub mod tcp;
pub mod udp;

use crate::machine::IfaceId;
use crate::machine::MachineId;
use crate::world::World;

/// A protocol timer of a machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timer {
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
}

/// Runs a protocol timer.
pub(crate) fn on_timer(w: &mut World, m: MachineId, timer: Timer) {
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
    }
}
