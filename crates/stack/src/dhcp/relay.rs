//! The relay agent of a router (RFC 2131 §4.1, RFC 1542 §4), like
//! `ip helper-address` on a router or ISC's dhcrelay.
//!
//! A BOOTREQUEST broadcast on one of the router's networks goes on, as a
//! unicast to each configured server's port 67, with `hops` incremented
//! and, if no relay set it before, `giaddr` set to the router's address on
//! the network it came from; requests that crossed [`super::MAX_HOPS`]
//! relays are dropped. A BOOTREPLY addressed to one of the router's
//! addresses goes back out of the interface holding its `giaddr`: to
//! `ciaddr` when the client has an address, else broadcast. The message is
//! forwarded as it came, with only those two fields changed (no relay
//! agent options).

use super::{Parsed, CLIENT_PORT, MAX_HOPS, SERVER_PORT};
use crate::counters::DropReason;
use crate::hosts::Hosts;
use crate::machine::{IfaceId, MachineId};
use std::net::Ipv4Addr;

/// A relay agent: the servers requests go to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Relay {
    pub servers: Vec<Ipv4Addr>,
}

/// Makes router `m` relay DHCP requests to `servers`.
pub fn enable(w: &mut Hosts, m: MachineId, servers: Vec<Ipv4Addr>) {
    w.machines[m as usize].ext().dhcp_relay = Some(Box::new(Relay { servers }));
    super::fanout::role_added(w);
}

/// A DHCP message for port 67 reached relay `m` on `iface` (sent to
/// `dst`); `bytes` is the message as it came.
pub fn receive(
    w: &mut Hosts,
    m: MachineId,
    iface: IfaceId,
    dst: Ipv4Addr,
    p: &Parsed,
    mut bytes: Vec<u8>,
) {
    if p.op == 1 {
        if p.hops >= MAX_HOPS {
            return w.drop_packet(DropReason::Dhcp("too_many_hops"));
        }
        w.obs.stats.udp_delivered += 1;
        let own = w.machines[m as usize].ifaces[iface as usize].ip;
        bytes[3] = p.hops + 1;
        if p.giaddr.is_unspecified() {
            bytes[24..28].copy_from_slice(&own.octets());
        }
        let server_at = |w: &Hosts, i: usize| {
            let relay = w.machines[m as usize]
                .ext
                .as_deref()?
                .dhcp_relay
                .as_deref()?;
            relay.servers.get(i).copied()
        };
        let mut i = 0;
        while let Some(server) = server_at(w, i) {
            i += 1;
            match crate::ipv4::route(w, m, server) {
                Ok(route) => {
                    super::send(w, m, route, SERVER_PORT, server, SERVER_PORT, bytes.clone());
                    w.obs.dhcp.relayed += 1;
                }
                Err(_) => w.drop_packet(DropReason::NoRoute),
            }
        }
        return;
    }
    // A reply: it must come to the address it names as the gateway.
    if dst != p.giaddr {
        return w.drop_packet(DropReason::Dhcp("not_our_giaddr"));
    }
    let Some(out) = w.machines[m as usize]
        .ifaces
        .iter()
        .position(|i| i.ip == p.giaddr)
    else {
        return w.drop_packet(DropReason::Dhcp("not_our_giaddr"));
    };
    w.obs.stats.udp_delivered += 1;
    let (to, route) = if p.ciaddr.is_unspecified() {
        (
            Ipv4Addr::BROADCAST,
            Ok(super::broadcast_route(w, m, out as IfaceId)),
        )
    } else {
        (p.ciaddr, crate::ipv4::route(w, m, p.ciaddr))
    };
    match route {
        Ok(route) => {
            super::send(w, m, route, SERVER_PORT, to, CLIENT_PORT, bytes);
            w.obs.dhcp.relayed += 1;
        }
        Err(_) => w.drop_packet(DropReason::NoRoute),
    }
}
