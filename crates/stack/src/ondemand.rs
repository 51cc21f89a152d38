//! On-demand (MANET) routing: the hooks IPv4 and the link layer call on a
//! machine whose routes a routing protocol finds during the run, and the
//! protocols that can fill them. AODV ([`crate::aodv`]) is the one there
//! is; a second protocol (DSDV, OLSR) is another [`OnDemand`] variant
//! with an arm in each function here.
//!
//! A machine routes on demand when its `MachineExt::manet` holds a
//! protocol. `ipv4::route_flow` first tests the run-wide
//! `StackShared::on_demand` (set when the first machine gets one), so a
//! run without MANET routing pays one predictable branch per lookup and
//! never looks at a machine's extension.
//!
//! # Link-layer feedback
//! [`link_failed`] (by next hop address) and [`link_failed_port`] (by
//! the next hop's port on the network) are what a link layer calls when a
//! unicast to a next hop fails, e.g. a wireless MAC whose retries ran
//! out. Both do nothing on a machine without on-demand routing.

use crate::endpoint::SocketError;
use crate::hosts::Hosts;
use crate::ipv4::Route;
use crate::machine::{IfaceId, MachineId};
use elvis_message::Message;
use std::net::Ipv4Addr;

/// A machine's on-demand routing protocol and its state.
#[derive(Debug)]
pub enum OnDemand {
    Aodv(crate::aodv::Node),
}

/// True when machine `m` routes on demand.
pub fn runs(w: &Hosts, m: MachineId) -> bool {
    w.machines[m as usize]
        .ext
        .as_deref()
        .is_some_and(|e| e.manet.is_some())
}

/// The route of a unicast datagram to `dst` from machine `m` (not one of
/// its own addresses): the protocol's next hop, or `NextHop::OnDemand`
/// when the datagram must wait for a discovery.
pub fn route(w: &Hosts, m: MachineId, dst: Ipv4Addr) -> Result<Route, SocketError> {
    let machine = &w.machines[m as usize];
    match machine.ext.as_deref().and_then(|e| e.manet.as_deref()) {
        Some(OnDemand::Aodv(n)) => Ok(crate::aodv::route(w, m, n, dst)),
        None => Err(SocketError::HostUnreachable(dst)),
    }
}

/// A datagram (IPv4 header first) whose route said `NextHop::OnDemand`.
pub fn hold(w: &mut Hosts, m: MachineId, msg: &mut Message) {
    match w.machines[m as usize]
        .ext
        .as_deref()
        .and_then(|e| e.manet.as_deref())
    {
        Some(OnDemand::Aodv(_)) => crate::aodv::hold(w, m, msg),
        None => w.drop_packet(crate::counters::DropReason::NoRoute),
    }
}

/// A datagram (IPv4 header first) leaves machine `m` for neighbour
/// `next_hop`.
#[inline]
pub fn used(w: &mut Hosts, m: MachineId, next_hop: Ipv4Addr, msg: &mut Message) {
    if let Some(OnDemand::Aodv(_)) = w.machines[m as usize]
        .ext
        .as_deref()
        .and_then(|e| e.manet.as_deref())
    {
        crate::aodv::used(w, m, next_hop, msg);
    }
}

/// The link from machine `m` to its neighbour `next_hop` failed (the
/// link-layer feedback hook; see the module docs).
pub fn link_failed(w: &mut Hosts, m: MachineId, next_hop: Ipv4Addr) {
    if let Some(OnDemand::Aodv(_)) = w.machines[m as usize]
        .ext
        .as_deref()
        .and_then(|e| e.manet.as_deref())
    {
        crate::aodv::maintenance::link_failed(w, m, next_hop);
    }
}

/// [`link_failed`] for the neighbour on port `port` of the network of
/// machine `m`'s interface `iface`.
pub fn link_failed_port(w: &mut Hosts, m: MachineId, iface: IfaceId, port: u32) {
    if !w.stack.on_demand {
        return;
    }
    let Some(ifc) = w.machines[m as usize].ifaces.get(iface as usize).copied() else {
        return;
    };
    let net = &w.fabric.networks[ifc.net as usize];
    let mut ips: Vec<u32> = (net.ip_to_port.iter())
        .filter(|&(_, &p)| p == port)
        .map(|(&ip, _)| ip)
        .collect();
    ips.sort_unstable();
    for ip in ips {
        link_failed(w, m, Ipv4Addr::from(ip));
    }
}
