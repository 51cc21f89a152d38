//! One partition of a parallel run (`elvis_sim::parallel`): which part of
//! the hosts this copy of the world runs, and the frames it hands to the
//! partitions that run the rest.
//!
//! Every partition holds a whole copy of the world, built the same way,
//! and runs the events of the machines it owns (and of the networks
//! between them). A frame on a *cut* network, a point-to-point link
//! whose two machines belong to different partitions, leaves its sender's
//! partition as a [`CrossFrame`]: the frame's bytes, its arrival time and
//! the tie-break key its delivery event would have had in a sequential
//! run (the sending side's lane, see [`crate::hosts::Hosts`]'s network
//! lanes). The receiving partition schedules the delivery with that key,
//! so every partition processes its events in exactly the order one
//! sequential run would.

use elvis_kernel::Time;
use elvis_message::Message;
use elvis_net::NetId;

/// A frame that crosses from one partition to another: it reaches port
/// `port` of link `net` at `at`, and its delivery event has key `key`.
///
/// This is the whole interface between partitions: plain bytes
/// (`frame`, whose payload may be runs of virtual zeros), a time and a
/// key, so that partitions in separate processes could exchange the same
/// records over a network (docs/parallel.md).
pub struct CrossFrame {
    pub at: Time,
    pub key: u64,
    pub net: NetId,
    pub port: u32,
    pub frame: Message,
}

/// What a world needs to know to run as one partition.
pub struct Partition {
    /// This partition's number.
    pub me: u16,
    /// Per network: for a cut link, the partition of the machine on each
    /// of its two ports; `None` for a network this partition runs whole
    /// (or does not run at all).
    pub cut: Vec<Option<[u16; 2]>>,
    /// Frames for each other partition, in the order they were sent
    /// (each lane's keys in increasing order).
    pub outbox: Vec<Vec<CrossFrame>>,
    /// Frames sent to other partitions so far.
    pub sent: u64,
    /// Frames received from other partitions so far.
    pub received: u64,
}

impl Partition {
    /// Returns a partition `me` of `parts`, given each network's cut
    /// owners.
    pub fn new(me: u16, parts: u16, cut: Vec<Option<[u16; 2]>>) -> Self {
        Partition {
            me,
            cut,
            outbox: (0..parts).map(|_| Vec::new()).collect(),
            sent: 0,
            received: 0,
        }
    }

    /// Returns the partition port `port` of network `net` leads to when
    /// it is another one.
    #[inline]
    pub fn elsewhere(&self, net: NetId, port: u32) -> Option<u16> {
        let owners = self.cut.get(net as usize).copied().flatten()?;
        let to = owners[(port & 1) as usize];
        (to != self.me).then_some(to)
    }
}

impl crate::hosts::Hosts {
    /// Schedules the arrival of a frame sent by another partition (with
    /// the key its own queue gave it).
    pub fn receive_cross(&mut self, cf: CrossFrame) {
        let id = self.fabric.frames.insert(cf.frame) as elvis_net::FrameId;
        let event = crate::hosts::Event::Deliver {
            net: cf.net,
            port: cf.port,
            frame: id,
            from: elvis_net::NO_PORT,
        };
        self.sched.queue.schedule_keyed(cf.at, cf.key, event);
        if let Some(p) = self.part.as_deref_mut() {
            p.received += 1;
        }
    }
}
