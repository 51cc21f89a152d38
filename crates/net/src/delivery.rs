//! Switching and delivery: where a frame goes once it has crossed the
//! wire (see "Forwarding"), and its hand-off to the machine on the port.

use crate::room::release_nic;
use crate::transmit::{enqueue, restart};
use crate::{
    Context, DropReason, FrameId, NetEvent, NetId, Network, NetworkKind, QueueRef, NO_PORT,
};
use elvis_kernel::Time;
use elvis_message::Message;

impl Network {
    /// A link without propagation delay: a serialized frame arrives at once.
    pub(crate) fn is_zero_delay_link(&self) -> bool {
        self.cfg.kind == NetworkKind::Link && self.cfg.latency_ns == 0
    }
}

/// Frame `id` has just been serialized by the NIC of `q` onto a link
/// without latency: starts the NIC's next frame, then hands the frame (and
/// its duplicate) to the machine at the other end at once, without a
/// delivery event (the arrival instant is the same).
pub(crate) fn deliver_across_link(c: &mut impl Context, q: QueueRef, id: FrameId, duplicate: bool) {
    let (net, port) = (q.net, q.port_dir >> 1);
    let mut frame = c.fabric_mut().frames.remove(id as usize);
    let copy = duplicate.then(|| frame.clone());
    restart(c, q);
    let other = if port == 0 { 1 } else { 0 };
    if other as usize >= c.fabric().networks[net as usize].ports.len() {
        return c.dropped(DropReason::UnknownDestination);
    }
    receive(c, net, other, &mut frame, false);
    if let Some(mut copy) = copy {
        receive(c, net, other, &mut copy, false);
    }
}

/// Sends frame `id`, serialized by the NIC at `port`, across the network:
/// it reaches the other end of a link or the switch fabric `at` (after the
/// latency plus any reorder hold-back).
#[inline]
pub(crate) fn propagate(c: &mut impl Context, net: NetId, port: u32, id: FrameId, at: Time) {
    let n = &c.fabric().networks[net as usize];
    let event = match n.cfg.kind {
        NetworkKind::Link => {
            let other = if port == 0 { 1 } else { 0 };
            if other as usize >= n.ports.len() {
                return discard(c, id, DropReason::UnknownDestination);
            }
            NetEvent::Deliver {
                net,
                port: other,
                frame: id,
                from: NO_PORT,
            }
        }
        NetworkKind::Switch | NetworkKind::Wireless => NetEvent::AtSwitch {
            net,
            from: port,
            frame: id,
        },
    };
    c.schedule(at, event);
}

/// Drops frame `id` (in the slab) for `reason`.
pub(crate) fn discard(c: &mut impl Context, id: FrameId, reason: DropReason) {
    c.fabric_mut().frames.remove(id as usize);
    c.dropped(reason);
}

/// Returns the destination MAC of a frame (`None` if it is too short).
fn dst_mac(frame: &Message) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    frame.copy_to_slice(0, &mut mac).ok()?;
    Some(mac)
}

/// Returns the ports a frame from `from` goes out of.
pub(crate) fn egress_ports(
    n: &Network,
    from: u32,
    frame: &Message,
) -> smallvec::SmallVec<[u32; 1]> {
    let mut out = smallvec::SmallVec::new();
    if n.cfg.kind == NetworkKind::Link {
        let other = if from == 0 { 1 } else { 0 };
        if (other as usize) < n.ports.len() {
            out.push(other);
        }
        return out;
    }
    let Some(mac) = dst_mac(frame) else {
        return out;
    };
    if mac == [0xff; 6] {
        out.extend((0..n.ports.len() as u32).filter(|&p| p != from));
    } else if mac[0] & 1 == 1 {
        if let Some(members) = n.multicast.get(&mac) {
            out.extend(members.iter().copied().filter(|&p| p != from));
        }
    } else if let Some(p) = n.port_of_mac(mac) {
        if p != from {
            out.push(p);
        }
    }
    out
}

/// A frame reached the switch fabric: queue it on the egress port(s).
pub fn at_switch(c: &mut impl Context, net: NetId, from: u32, id: FrameId) {
    let f = c.fabric();
    let targets = egress_ports(&f.networks[net as usize], from, &f.frames[id as usize]);
    if targets.is_empty() {
        discard(c, id, DropReason::UnknownDestination);
        return;
    }
    let mut first = true;
    for t in targets {
        let copy = if first {
            id
        } else {
            let f = c.fabric_mut();
            f.frames.insert(f.frames[id as usize].clone()) as FrameId
        };
        first = false;
        let q = QueueRef {
            net,
            port_dir: (t << 1) | 1,
        };
        enqueue(c, q, copy);
    }
}

/// A frame reached the machine on `port` (a delivery event): counts it
/// and hands it up ([`Context::arrived`]).
///
/// `from` is the sender's port on an ideal network, whose NIC slot the
/// delivery frees ([`NO_PORT`] otherwise).
pub fn deliver(c: &mut impl Context, net: NetId, port: u32, id: FrameId, from: u32) {
    if from != NO_PORT {
        release_nic(c, net, from);
    }
    let f = c.fabric_mut();
    f.networks[net as usize].stats.frames_delivered += 1;
    if f.pfc.is_some() {
        return crate::pfc::arrived(c, net, port, id);
    }
    c.arrived(net, port, id);
}

/// Delivers a frame synchronously, in the middle of the sender's work
/// (a zero-delay network).
pub(crate) fn deliver_now(c: &mut impl Context, net: NetId, port: u32, frame: &mut Message) {
    c.fabric_mut().sync_depth += 1;
    receive(c, net, port, frame, true);
    c.fabric_mut().sync_depth -= 1;
}

/// Counts a frame's arrival on `port` and hands it up
/// ([`Context::received`]).
fn receive(c: &mut impl Context, net: NetId, port: u32, frame: &mut Message, nested: bool) {
    let f = c.fabric_mut();
    f.networks[net as usize].stats.frames_delivered += 1;
    if f.pfc.is_some() {
        return crate::pfc::received(c, net, port, frame, nested);
    }
    c.received(net, port, frame, nested);
}

/// Counts the arrival of a frame that a NIC took into its receive ring
/// on `net` before it arrived ([`Context::take_early`]).
pub fn count_arrival(f: &mut crate::Fabric, net: NetId) {
    f.networks[net as usize].stats.frames_delivered += 1;
}
