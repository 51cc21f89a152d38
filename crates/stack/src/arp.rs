//! ARP (RFC 826) for machines that run the `ARP` protocol.
//!
//! Machines without ARP resolve neighbours through the simulator's static
//! table (the network knows which port has which address), as Elvis' Rust
//! API does: a million senders then do not flood one LAN with a million
//! broadcast requests. They still answer requests for their own address, so
//! ARP and non-ARP machines mix on one LAN. With ARP on, an unresolved next hop queues up to
//! [`MAX_QUEUED`] datagrams, broadcasts a request, retries every
//! [`RETRY`] up to [`MAX_TRIES`] times, then drops what waited
//! (`arp_failed`). Replies and requests addressed to us fill the cache.
//!
//! # Gaps
//! Cache entries do not expire; no gratuitous ARP, no proxy ARP.

use super::Timer;
use crate::machine::IfaceId;
use crate::machine::MachineId;
use elvis_net as net;
use crate::counters::DropReason;
use crate::hosts::{Event, Hosts};
use elvis_message::Message;
use elvis_wire::{arp, EtherType, EthernetAddress};
use std::net::Ipv4Addr;
use std::time::Duration;

/// Datagrams held per unresolved address (Linux keeps a few).
pub const MAX_QUEUED: usize = 3;
/// Time between ARP requests.
pub const RETRY: Duration = Duration::from_secs(1);
/// Requests sent before giving up.
pub const MAX_TRIES: u8 = 3;

/// A machine's ARP cache and pending resolutions.
#[derive(Default)]
pub struct ArpCache {
    entries: Vec<(u32, EthernetAddress)>,
    pending: Vec<Pending>,
}

struct Pending {
    ip: u32,
    iface: IfaceId,
    tries: u8,
    queued: Vec<Message>,
}

impl ArpCache {
    fn lookup(&self, ip: u32) -> Option<EthernetAddress> {
        self.entries
            .iter()
            .find(|(i, _)| *i == ip)
            .map(|(_, mac)| *mac)
    }

    fn insert(&mut self, ip: u32, mac: EthernetAddress) {
        match self.entries.iter_mut().find(|(i, _)| *i == ip) {
            Some(e) => e.1 = mac,
            None => self.entries.push((ip, mac)),
        }
    }
}

/// Returns the MAC of `ip` if known; otherwise queues `msg` (an IPv4
/// datagram) until the reply comes and returns `None`.
pub fn lookup_or_queue(
    w: &mut Hosts,
    m: MachineId,
    iface: IfaceId,
    ip: Ipv4Addr,
    msg: &mut Message,
) -> Option<EthernetAddress> {
    let key = u32::from(ip);
    let cache = &mut w.machines[m as usize].ext().arp;
    if let Some(mac) = cache.lookup(key) {
        return Some(mac);
    }
    let msg = std::mem::take(msg);
    if let Some(p) = cache.pending.iter_mut().find(|p| p.ip == key) {
        if p.queued.len() >= MAX_QUEUED {
            w.drop_packet(DropReason::ArpQueueFull);
        } else {
            p.queued.push(msg);
        }
        return None;
    }
    cache.pending.push(Pending {
        ip: key,
        iface,
        tries: 1,
        queued: vec![msg],
    });
    send_request(w, m, iface, ip);
    None
}

fn send_request(w: &mut Hosts, m: MachineId, iface: IfaceId, ip: Ipv4Addr) {
    let ifc = w.machines[m as usize].ifaces[iface as usize];
    let repr = arp::Repr::EthernetIpv4 {
        operation: arp::Operation::Request,
        source_hardware_addr: w.fabric.networks[ifc.net as usize].mac(ifc.port),
        source_protocol_addr: ifc.ip,
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: ip,
    };
    send_repr(w, m, iface, EthernetAddress::BROADCAST, &repr);
    let at = w.now() + RETRY;
    w.sched.queue.schedule(
        at,
        m,
        Event::Timer {
            machine: m,
            timer: Timer::ArpRetry {
                iface,
                ip: u32::from(ip),
            },
        },
    );
}

fn send_repr(w: &mut Hosts, m: MachineId, iface: IfaceId, dst: EthernetAddress, repr: &arp::Repr) {
    let ifc = w.machines[m as usize].ifaces[iface as usize];
    if net::nic_room(w, ifc.net, ifc.port) == 0 {
        return w.drop_packet(DropReason::Net(elvis_net::DropReason::NicQueueFull));
    }
    let mut msg = Message::new();
    let buf = msg.push_front(repr.buffer_len());
    repr.emit(&mut arp::Packet::new_unchecked(buf));
    w.obs.stats.arp_sent += 1;
    super::ethernet::send(w, m, iface, dst, EtherType::Arp, &mut msg);
}

/// Handles an incoming ARP packet.
///
/// A machine without ARP still answers requests for its own address (so
/// that ARP machines can reach it) but learns nothing; requests for other
/// addresses are ignored silently, as every host does.
pub fn receive(w: &mut Hosts, m: MachineId, iface: IfaceId, msg: &mut Message) {
    let group = w.machines[m as usize].group;
    let runs_arp = w.groups[group as usize].protocols.arp;
    let Some(bytes) = msg.front(28) else {
        return w.drop_packet(DropReason::Malformed("arp"));
    };
    let Ok(repr) = arp::Packet::new_checked(bytes).and_then(|p| arp::Repr::parse(&p)) else {
        return w.drop_packet(DropReason::Malformed("arp"));
    };
    let arp::Repr::EthernetIpv4 {
        operation,
        source_hardware_addr,
        source_protocol_addr,
        target_protocol_addr,
        ..
    } = repr;
    let ifc = w.machines[m as usize].ifaces[iface as usize];
    let for_us = target_protocol_addr == ifc.ip;
    if !runs_arp {
        if for_us && operation == arp::Operation::Request {
            reply(w, m, iface, source_hardware_addr, source_protocol_addr);
        }
        return;
    }
    let sender = u32::from(source_protocol_addr);
    let cache = &mut w.machines[m as usize].ext().arp;
    // RFC 826: merge if known, add if the packet is for us.
    if for_us || cache.lookup(sender).is_some() {
        cache.insert(sender, source_hardware_addr);
    }
    let ready = match cache.pending.iter().position(|p| p.ip == sender) {
        Some(i) if for_us || cache.lookup(sender).is_some() => cache.pending.swap_remove(i).queued,
        _ => Vec::new(),
    };
    for mut datagram in ready {
        super::ethernet::send(
            w,
            m,
            iface,
            source_hardware_addr,
            EtherType::Ipv4,
            &mut datagram,
        );
    }
    if for_us && operation == arp::Operation::Request {
        reply(w, m, iface, source_hardware_addr, source_protocol_addr);
    }
}

/// Answers a request from `mac`/`ip` for our address on `iface`.
fn reply(w: &mut Hosts, m: MachineId, iface: IfaceId, mac: EthernetAddress, ip: Ipv4Addr) {
    let ifc = w.machines[m as usize].ifaces[iface as usize];
    let reply = arp::Repr::EthernetIpv4 {
        operation: arp::Operation::Reply,
        source_hardware_addr: w.fabric.networks[ifc.net as usize].mac(ifc.port),
        source_protocol_addr: ifc.ip,
        target_hardware_addr: mac,
        target_protocol_addr: ip,
    };
    send_repr(w, m, iface, mac, &reply);
}

/// Retries or gives up an unanswered request.
pub fn on_retry(w: &mut Hosts, m: MachineId, iface: IfaceId, ip: u32) {
    let cache = &mut w.machines[m as usize].ext().arp;
    let Some(i) = cache
        .pending
        .iter()
        .position(|p| p.ip == ip && p.iface == iface)
    else {
        return;
    };
    if cache.pending[i].tries >= MAX_TRIES {
        let p = cache.pending.swap_remove(i);
        for _ in p.queued {
            w.drop_packet(DropReason::ArpFailed);
        }
        return;
    }
    cache.pending[i].tries += 1;
    send_request(w, m, iface, Ipv4Addr::from(ip));
}
