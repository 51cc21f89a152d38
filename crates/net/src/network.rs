//! A network, its ports and the queues of each port.

use crate::qdisc::{self, Limit, Qdisc, QdiscConfig};
use crate::{IfaceId, MachineId, NetId, NetStats, NetworkConfig, NetworkKind, TaskId, WireQueue};
use elvis_kernel::rng::{self, Rng, StreamKind};
use elvis_wire::EthernetAddress;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// The two queues of a switch port (NIC → switch, switch → NIC).
pub struct PortQueues {
    pub up: WireQueue,
    /// The switch's queue towards the port, made on first use (a link's
    /// ports never use it: half the queue memory of a link).
    pub down: Option<Box<WireQueue>>,
    /// Endpoints of the layer above (machine, slot: a TCP connection)
    /// waiting for NIC room.
    pub(crate) endpoint_waiters: Vec<(MachineId, u32)>,
    /// The machine's own stack waits for NIC room (a foreign stack).
    pub(crate) stack_waiting: bool,
    /// A `NicRoom` wake-up is pending (see "Back-pressure").
    pub(crate) room_wake: bool,
}

/// Where a machine's interface plugs into a network.
pub struct Port {
    pub machine: MachineId,
    pub iface: IfaceId,
    /// Frames in the NIC on the evented path or an ideal network (see
    /// "Back-pressure"; the analytic path counts its departure schedule).
    pub inflight: u32,
    /// A task blocked on a full NIC.
    pub waiter: Option<TaskId>,
    pub queues: Option<Box<PortQueues>>,
}

/// Identifies one direction of one port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueRef {
    pub net: NetId,
    /// `port << 1 | dir`, dir 0 = up (NIC), 1 = down (switch egress).
    pub port_dir: u32,
}

/// A network and its ports.
pub struct Network {
    pub cfg: NetworkConfig,
    pub ports: Vec<Port>,
    pub rng: Rng,
    /// Static neighbour table: IPv4 address → port.
    pub ip_to_port: crate::Neighbours,
    /// Multicast MAC → member ports.
    pub multicast: BTreeMap<[u8; 6], Vec<u32>>,
    /// MACs not made by the simulator (foreign stacks) → port.
    pub foreign_macs: FxHashMap<[u8; 6], u32>,
    pub stats: NetStats,
    pub index: NetId,
    /// Per-interface NIC disciplines (`Simulation::set_qdisc`), by port.
    pub nic_qdisc: BTreeMap<u32, QdiscConfig>,
    /// The network's subnet (prefix, length) when declared: routes to the
    /// network cover it whole, including addresses handed out during a
    /// run (DHCP); otherwise they cover the addresses attached.
    pub subnet: Option<(u32, u8)>,
    /// The configuration draws at least one impairment (see
    /// "Impairments"; fixed when the network is made).
    pub(crate) impaired: bool,
    /// The radio medium of a [`NetworkKind::Wireless`] network.
    pub wireless: Option<Box<crate::wireless::Wireless>>,
    /// Priority flow control ([`crate::pfc`]).
    pub pfc: Option<Box<crate::pfc::PfcNet>>,
}

impl Network {
    pub fn new(index: NetId, mut cfg: NetworkConfig, seed: u64) -> Self {
        if let (NetworkKind::Link, Some(q)) = (cfg.kind, cfg.queue) {
            // A link has no switch: its queues are the NICs at its ends.
            cfg.txqueuelen = q.saturating_add(1);
        }
        let impaired =
            cfg.loss != 0.0 || cfg.corruption != 0.0 || cfg.duplicate != 0.0 || cfg.reorder != 0.0;
        Network {
            impaired,
            cfg,
            ports: Vec::new(),
            rng: rng::stream(seed, StreamKind::Network, u64::from(index)),
            ip_to_port: crate::Neighbours::default(),
            multicast: BTreeMap::new(),
            foreign_macs: FxHashMap::default(),
            stats: NetStats::default(),
            index,
            nic_qdisc: BTreeMap::new(),
            subnet: None,
            wireless: None,
            pfc: None,
        }
    }

    /// Makes this a wireless network of `cfg` (its kind becomes
    /// [`NetworkKind::Wireless`], its bandwidth the data rate).
    pub fn set_wireless(&mut self, cfg: crate::wireless::WirelessConfig) {
        self.cfg.kind = NetworkKind::Wireless;
        self.cfg.bandwidth_bps = Some(cfg.rate_bps);
        self.wireless = Some(Box::new(crate::wireless::Wireless::new(cfg)));
    }

    /// Returns the MAC address of `port` (locally administered, encodes the
    /// network and port so the switch needs no table).
    pub fn mac(&self, port: u32) -> EthernetAddress {
        port_mac(self.index, port)
    }

    /// Returns the port a unicast MAC belongs to, if any.
    pub fn port_of_mac(&self, mac: [u8; 6]) -> Option<u32> {
        if mac[0] == 0x02 && mac[1] == (self.index & 0xff) as u8 {
            let port = u32::from_be_bytes([mac[2], mac[3], mac[4], mac[5]]);
            if (port as usize) < self.ports.len() {
                return Some(port);
            }
        }
        self.foreign_macs.get(&mac).copied()
    }

    /// Adds a port for `machine`'s interface `iface`; returns its number.
    pub fn add_port(&mut self, machine: MachineId, iface: IfaceId) -> u32 {
        let port = self.ports.len() as u32;
        self.ports.push(Port {
            machine,
            iface,
            inflight: 0,
            waiter: None,
            queues: None,
        });
        port
    }

    pub(crate) fn is_ideal(&self) -> bool {
        self.cfg.bandwidth_bps.is_none()
    }

    /// Returns whether a parallel run may put the two ends of this
    /// network in different partitions: it is a point-to-point link of
    /// two ports with a bandwidth, a positive latency and no impairment
    /// (its random stream would be shared by both ends), not under
    /// priority flow control (PAUSE frames act on the other end's queue
    /// at once). A frame then reaches the far end one latency or more
    /// after it was sent, and each end's queue is its own.
    pub fn cuttable(&self) -> bool {
        self.cfg.kind == NetworkKind::Link
            && self.ports.len() == 2
            && self.cfg.latency_ns > 0
            && !self.is_ideal()
            && !self.impaired
            && self.pfc.is_none()
    }

    /// Returns the configured discipline of the NIC at `port`, if it is
    /// not the default one.
    pub fn nic_qdisc_config(&self, port: u32) -> Option<&QdiscConfig> {
        self.nic_qdisc.get(&port).or(self.cfg.qdisc.as_deref())
    }

    /// Returns fresh queues for `port` (both directions).
    pub(crate) fn new_queues(&self, port: u32) -> PortQueues {
        let bps = self.cfg.bandwidth_bps;
        // Configs were validated when they were set: building cannot fail
        // (and falls back to the default if it somehow did).
        let build = |c: Option<&QdiscConfig>, default: Limit| {
            c.and_then(|c| c.build(bps).ok())
                .unwrap_or(Qdisc::DropTail(qdisc::DropTail::new(default)))
        };
        let mut up = build(self.nic_qdisc_config(port), Limit::Unbounded);
        crate::pfc::prepare(&mut up, self.pfc.as_deref());
        PortQueues {
            // The default NIC queue is bounded by `txqueuelen` through
            // back-pressure, not by the discipline.
            up: WireQueue::new(up),
            down: None,
            endpoint_waiters: Vec::new(),
            stack_waiting: false,
            room_wake: false,
        }
    }

    /// Gives the NIC at `port` its own discipline (validated by the
    /// caller); a NIC whose queue is in use keeps its old one.
    ///
    /// # Errors
    /// The NIC holds frames.
    pub fn set_nic_qdisc(
        &mut self,
        port: u32,
        cfg: QdiscConfig,
        now_ns: u64,
    ) -> Result<(), String> {
        if let Some(q) = self.ports[port as usize].queues.as_deref() {
            if !q.up.is_idle(now_ns) {
                return Err("its queue holds frames".into());
            }
        }
        self.nic_qdisc.insert(port, cfg);
        if let Some(q) = self.ports[port as usize].queues.as_deref_mut() {
            let c = self
                .nic_qdisc
                .get(&port)
                .and_then(|c| c.build(self.cfg.bandwidth_bps).ok());
            if let Some(mut c) = c {
                crate::pfc::prepare(&mut c, self.pfc.as_deref());
                q.up.qdisc = c;
            }
        }
        Ok(())
    }

    /// Returns a fresh switch queue towards a port.
    pub(crate) fn new_down(&self) -> WireQueue {
        let switch = self.cfg.queue.map_or(Limit::Unbounded, Limit::Packets);
        let mut qdisc = (self.cfg.qdisc.as_deref())
            .and_then(|c| c.build(self.cfg.bandwidth_bps).ok())
            .unwrap_or(Qdisc::DropTail(qdisc::DropTail::new(switch)));
        crate::pfc::prepare(&mut qdisc, self.pfc.as_deref());
        WireQueue::new(qdisc)
    }

    /// Returns the queue of `port` in the direction `up` (the NIC) or
    /// down (the switch's towards it), made on first use.
    #[inline]
    pub(crate) fn queue_dir_mut(&mut self, port: u32, up: bool) -> &mut WireQueue {
        if !up && self.queues_mut(port).down.is_none() {
            let d = Box::new(self.new_down());
            self.queues_mut(port).down = Some(d);
        }
        let q = self.queues_mut(port);
        match (up, q.down.as_deref_mut()) {
            (true, _) => &mut q.up,
            (false, Some(d)) => d,
            (false, None) => unreachable!("made above"),
        }
    }

    /// Returns the queues of `port`, made on first use.
    ///
    /// Inlined: it runs several times per frame, and all but the first
    /// call per port find the queues made ([`Network::make_queues`] stays
    /// out of line).
    #[inline]
    pub(crate) fn queues_mut(&mut self, port: u32) -> &mut PortQueues {
        if self.ports[port as usize].queues.is_none() {
            self.make_queues(port);
        }
        match self.ports[port as usize].queues.as_deref_mut() {
            Some(q) => q,
            None => unreachable!("made above"),
        }
    }

    /// Makes the queues of `port` (first use).
    #[cold]
    #[inline(never)]
    pub(crate) fn make_queues(&mut self, port: u32) {
        let q = Box::new(self.new_queues(port));
        self.ports[port as usize].queues = Some(q);
    }
}

/// Returns the simulator MAC of `port` on network `net`.
pub fn port_mac(net: NetId, port: u32) -> EthernetAddress {
    let p = port.to_be_bytes();
    EthernetAddress([0x02, (net & 0xff) as u8, p[0], p[1], p[2], p[3]])
}
