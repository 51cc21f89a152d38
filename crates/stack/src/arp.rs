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
use crate::counters::DropReason;
use crate::hosts::{Event, Hosts};
use crate::machine::IfaceId;
use crate::machine::MachineId;
use elvis_message::Message;
use elvis_net as net;
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

/// Sends an ARP probe for `ip` (RFC 5227 §2.1.1: a request from sender
/// address 0.0.0.0), asking whether any machine already has it.
pub fn probe(w: &mut Hosts, m: MachineId, iface: IfaceId, ip: Ipv4Addr) {
    let ifc = w.machines[m as usize].ifaces[iface as usize];
    let repr = arp::Repr::EthernetIpv4 {
        operation: arp::Operation::Request,
        source_hardware_addr: w.fabric.networks[ifc.net as usize].mac(ifc.port),
        source_protocol_addr: Ipv4Addr::UNSPECIFIED,
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: ip,
    };
    send_repr(w, m, iface, EthernetAddress::BROADCAST, &repr);
}

/// Announces that `iface` now has its address (RFC 5227 §2.3: a request
/// whose sender and target are both the address), so neighbours that
/// cached the address update their entry.
pub fn announce(w: &mut Hosts, m: MachineId, iface: IfaceId) {
    let ifc = w.machines[m as usize].ifaces[iface as usize];
    let repr = arp::Repr::EthernetIpv4 {
        operation: arp::Operation::Request,
        source_hardware_addr: w.fabric.networks[ifc.net as usize].mac(ifc.port),
        source_protocol_addr: ifc.ip,
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: ifc.ip,
    };
    send_repr(w, m, iface, EthernetAddress::BROADCAST, &repr);
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
    // A DHCP client checking an offered address: anyone claiming it is
    // a conflict (RFC 5227 §2.1.1).
    crate::dhcp::client::arp_seen(w, m, source_protocol_addr);
    // An unconfigured interface owns no address, and a probe (sender
    // 0.0.0.0, RFC 5227 §2.1.1) teaches no one anything.
    let for_us = target_protocol_addr == ifc.ip && !ifc.ip.is_unspecified();
    if source_protocol_addr.is_unspecified() {
        if for_us && operation == arp::Operation::Request {
            reply(w, m, iface, source_hardware_addr, source_protocol_addr);
        }
        return;
    }
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
        // A next hop that does not answer ARP is a broken link to an
        // on-demand routing protocol.
        if w.stack.on_demand {
            crate::ondemand::link_failed(w, m, Ipv4Addr::from(ip));
        }
        return;
    }
    cache.pending[i].tries += 1;
    send_request(w, m, iface, Ipv4Addr::from(ip));
}

#[cfg(test)]
mod tests {
    use super::{MAX_QUEUED, MAX_TRIES, RETRY};
    use crate::machine::{MachineId, Protocols};
    use crate::testing::{arp, drops, eth, padded, Captured, Lab, Tap, ARP, BROADCAST, LATENCY};
    use elvis_kernel::Time;
    use std::net::Ipv4Addr;

    const REQUEST: u16 = 1;
    const REPLY: u16 = 2;

    use crate::testing::{host_and_tap as lan, HOST, MS, PEER};

    /// The broadcast request of `h` for the tap's address.
    fn request_for_peer(lab: &Lab, h: MachineId) -> Vec<u8> {
        let hmac = lab.mac(h, 0);
        padded(eth(
            BROADCAST,
            hmac,
            0x0806,
            &arp(REQUEST, hmac, HOST, [0; 6], PEER),
        ))
    }

    /// The tap answers `h`'s request.
    fn peer_replies(lab: &mut Lab, h: MachineId, peer: &Tap) {
        let hmac = lab.mac(h, 0);
        let reply = arp(REPLY, peer.mac, PEER, hmac, HOST);
        lab.send(peer, eth(hmac, peer.mac, 0x0806, &reply));
    }

    /// Checks that `f` is the UDP datagram `payload` from the host to the
    /// tap, sent to the tap's MAC.
    fn is_datagram_to_peer(f: &Captured, peer: &Tap, payload: &[u8]) {
        assert_eq!(f.bytes[0..6], peer.mac, "to the tap's MAC");
        let d = f.datagram();
        assert_eq!(
            (d[9], &d[12..16], &d[16..20]),
            (17, &HOST.octets()[..], &PEER.octets()[..])
        );
        assert_eq!(&d[28..], payload);
    }

    #[test]
    fn a_request_for_our_address_gets_a_reply_built_as_rfc_826_says() {
        let (mut lab, h, peer) = lan(ARP);
        let hmac = lab.mac(h, 0);
        let request = arp(REQUEST, peer.mac, PEER, [0; 6], HOST);
        lab.send(&peer, eth(BROADCAST, peer.mac, 0x0806, &request));
        lab.run_for(MS);
        let got = peer.take();
        assert_eq!(got.len(), 1);
        // RFC 826: swap the sender and target fields, put our hardware
        // address in the sender's, set the opcode to reply, and send it to
        // the requester's hardware address.
        let a = &got[0].bytes[14..42];
        assert_eq!(a[6..8], [0, 2], "opcode reply");
        assert_eq!(
            (&a[8..14], &a[14..18]),
            (&hmac[..], &HOST.octets()[..]),
            "sender: us"
        );
        assert_eq!(
            (&a[18..24], &a[24..28]),
            (&peer.mac[..], &PEER.octets()[..]),
            "target: the asker"
        );
        let want = eth(
            peer.mac,
            hmac,
            0x0806,
            &arp(REPLY, hmac, HOST, peer.mac, PEER),
        );
        assert_eq!(got[0].bytes, padded(want), "byte for byte, padded to 60");
        assert_eq!(lab.w.obs.stats.arp_sent, 1);
        assert_eq!(lab.drops(), drops(&[]));
    }

    #[test]
    fn a_machine_without_arp_still_answers_requests_for_its_own_address() {
        let (mut lab, h, peer) = lan(Protocols::UDP);
        let hmac = lab.mac(h, 0);
        let request = arp(REQUEST, peer.mac, PEER, [0; 6], HOST);
        lab.send(&peer, eth(BROADCAST, peer.mac, 0x0806, &request));
        lab.run_for(MS);
        let want = eth(
            peer.mac,
            hmac,
            0x0806,
            &arp(REPLY, hmac, HOST, peer.mac, PEER),
        );
        let got: Vec<Vec<u8>> = peer.take().into_iter().map(|c| c.bytes).collect();
        assert_eq!(got, [padded(want)]);
    }

    #[test]
    fn a_request_for_us_teaches_us_the_askers_address() {
        let (mut lab, h, peer) = lan(ARP);
        let request = arp(REQUEST, peer.mac, PEER, [0; 6], HOST);
        lab.send(&peer, eth(BROADCAST, peer.mac, 0x0806, &request));
        lab.run_for(MS);
        assert_eq!(peer.take().len(), 1, "the reply");
        // RFC 826: the target adds the sender's pair to its table, so a
        // datagram to it needs no request of its own.
        lab.send_udp(h, PEER, b"straight");
        lab.run_for(MS);
        let got = peer.take();
        assert_eq!(got.len(), 1);
        is_datagram_to_peer(&got[0], &peer, b"straight");
    }

    #[test]
    fn a_request_for_another_address_gets_no_reply_and_teaches_nothing() {
        let (mut lab, h, peer) = lan(ARP);
        let other = Ipv4Addr::new(10, 0, 0, 77);
        let request = arp(REQUEST, peer.mac, PEER, [0; 6], other);
        lab.send(&peer, eth(BROADCAST, peer.mac, 0x0806, &request));
        lab.run_for(MS);
        assert!(peer.take().is_empty(), "not ours to answer");
        // RFC 826 merges a sender only into an entry it already has, or
        // when it is the target: the host still has to ask.
        lab.send_udp(h, PEER, b"x");
        lab.run_for(MS);
        let got: Vec<Vec<u8>> = peer.take().into_iter().map(|c| c.bytes).collect();
        assert_eq!(got, [request_for_peer(&lab, h)]);
    }

    #[test]
    fn a_datagram_to_an_unresolved_neighbour_waits_for_the_reply_to_its_broadcast_request() {
        let (mut lab, h, peer) = lan(ARP);
        lab.send_udp(h, PEER, b"queued");
        lab.run_for(MS);
        let got: Vec<Vec<u8>> = peer.take().into_iter().map(|c| c.bytes).collect();
        assert_eq!(
            got,
            [request_for_peer(&lab, h)],
            "a request, and no datagram yet"
        );
        peer_replies(&mut lab, h, &peer);
        lab.run_for(MS);
        let got = peer.take();
        assert_eq!(got.len(), 1, "the queued datagram");
        assert_eq!(got[0].bytes[6..12], lab.mac(h, 0));
        is_datagram_to_peer(&got[0], &peer, b"queued");
        // Resolved: the retry timer finds nothing to do.
        lab.run_for(10 * RETRY);
        assert!(peer.take().is_empty());
        assert_eq!(lab.drops(), drops(&[]));
    }

    #[test]
    fn an_unanswered_request_is_retried_then_its_queued_datagrams_fail() {
        let (mut lab, h, peer) = lan(ARP);
        for i in 0..=MAX_QUEUED {
            lab.send_udp(h, PEER, &[i as u8]);
        }
        assert_eq!(lab.drops(), drops(&[("arp_queue_full", 1)]), "one too many");
        // Requests at 0, RETRY, 2 RETRY … (MAX_TRIES of them), each
        // arriving LATENCY later; the last try's timer gives up.
        let give_up = Time::ZERO + RETRY * u32::from(MAX_TRIES);
        lab.run_until(Time::from_nanos(give_up.as_nanos() - 1));
        let got = peer.take();
        let times: Vec<Time> = got.iter().map(|c| c.at).collect();
        let want: Vec<Time> = (0..u32::from(MAX_TRIES))
            .map(|k| Time::ZERO + RETRY * k + LATENCY)
            .collect();
        assert_eq!(times, want);
        assert!(got.iter().all(|c| c.bytes == request_for_peer(&lab, h)));
        assert_eq!(
            lab.drops(),
            drops(&[("arp_queue_full", 1)]),
            "still waiting"
        );
        lab.run_until(give_up);
        let failed = MAX_QUEUED as u64;
        assert_eq!(
            lab.drops(),
            drops(&[("arp_failed", failed), ("arp_queue_full", 1)])
        );
        lab.run_for(10 * RETRY);
        assert!(peer.take().is_empty(), "no more requests");
    }

    #[test]
    fn a_resolved_neighbour_is_still_cached_an_hour_later() {
        // The module's documented gap: cache entries never expire (Linux
        // would have let this one go stale long before an hour).
        let (mut lab, h, peer) = lan(ARP);
        lab.send_udp(h, PEER, b"first");
        lab.run_for(MS);
        peer_replies(&mut lab, h, &peer);
        lab.run_for(MS);
        assert_eq!(peer.take().len(), 2, "the request and the datagram");
        lab.run_until(Time::from_secs(3600));
        lab.send_udp(h, PEER, b"an hour later");
        lab.run_for(MS);
        let got = peer.take();
        assert_eq!(got.len(), 1, "no new request");
        is_datagram_to_peer(&got[0], &peer, b"an hour later");
    }
}
