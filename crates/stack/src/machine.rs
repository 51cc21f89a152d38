//! Machines: a compact record per simulated host.
//!
//! A million machines must fit in well under a gigabyte, so a machine is a
//! few words: its group (name and shared settings live there), its
//! interfaces, its sockets, and a lazily allocated [`MachineExt`] for state
//! that most machines never need (ARP cache, fragment reassembly, its random
//! stream, multicast memberships).

use crate::arp::ArpCache;
use crate::endpoint::SocketSlot;
use crate::ipv4::Reassembly;
use elvis_kernel::rng::Rng;
use elvis_net::NetId;
use smallvec::SmallVec;
use std::net::Ipv4Addr;

/// Index of a machine in the simulation.
pub type MachineId = u32;

/// Identifies an interface of one machine: its index in the machine's
/// interface list. 32 bits, so that no scenario that fits in memory wraps
/// it (a router of a million-host star has a million interfaces).
pub type IfaceId = u32;

/// Which optional protocols a machine runs (IPv4 and ICMP are always on).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Protocols {
    /// UDP sockets are available.
    pub udp: bool,
    /// Neighbours are resolved with real ARP instead of the simulator's
    /// static table.
    pub arp: bool,
    /// TCP sockets are available.
    pub tcp: bool,
}

impl Protocols {
    /// IPv4 + UDP, static neighbour resolution: Elvis' usual machine.
    pub const UDP: Protocols = Protocols {
        udp: true,
        arp: false,
        tcp: false,
    };
    /// IPv4 + UDP + TCP, static neighbour resolution.
    pub const UDP_TCP: Protocols = Protocols {
        udp: true,
        arp: false,
        tcp: true,
    };
}

/// A named group of machines sharing settings (`count` instances).
pub struct Group {
    pub name: String,
    /// `Some(n)` when the group was declared with a count.
    pub counted: bool,
    /// First machine id of the group; instances are contiguous.
    pub first: MachineId,
    pub len: u32,
    pub protocols: Protocols,
    /// SYN-flood defences of the group's TCP listeners.
    pub syn: crate::tcp::syncookie::SynDefence,
}

impl Group {
    /// Returns the name of instance `i` (`name-i`, or `name` if uncounted).
    pub fn instance_name(&self, i: u32) -> String {
        if self.counted {
            format!("{}-{}", self.name, i)
        } else {
            self.name.clone()
        }
    }
}

/// One network interface of a machine.
#[derive(Clone, Copy, Debug)]
pub struct Iface {
    pub net: NetId,
    /// The port of `net` this interface is plugged into.
    pub port: u32,
    pub ip: Ipv4Addr,
}

/// Per-machine state.
pub struct Machine {
    pub group: u32,
    pub crashed: bool,
    /// Frames go to a user's stack (`ext.foreign`), not ours.
    pub foreign: bool,
    /// Forwards datagrams not addressed to it (a router).
    pub forward: bool,
    /// A router that forwards without checking or decrementing the TTL
    /// (see [`crate::forward`]); meaningless on a host.
    pub keep_ttl: bool,
    pub ip_ident: u16,
    /// The machine's NIC offload settings: an index into the simulation's
    /// table of distinct settings (`stack::offload::NicTable`; 0: none).
    /// It fits in the record's padding, so offloads cost an idle machine
    /// nothing.
    pub offloads: u16,
    /// The number of the machine's NIC receive state in that table while
    /// frames wait in its ring (0: none), also in the padding.
    pub nic: u32,
    pub ifaces: SmallVec<[Iface; 1]>,
    /// The socket table; the first entry lies inline (most machines open
    /// one socket, and then allocate no table).
    pub sockets: SmallVec<[SocketSlot; 1]>,
    pub ext: Option<Box<MachineExt>>,
}

/// State that most machines never allocate.
#[derive(Default)]
pub struct MachineExt {
    pub arp: ArpCache,
    pub reassembly: Reassembly,
    pub rng: Option<Rng>,
    pub multicast: Vec<Ipv4Addr>,
    /// User-defined protocols above IPv4.
    pub protocols: Vec<Box<dyn crate::custom::Protocol>>,
    /// TCP demux and port index.
    pub tcp: crate::tcp::TcpIndex,
    /// Routes of TCP connections (allocated on the first segment sent).
    pub dst: Option<Box<crate::tcp::dst::DstCache>>,
    /// No free socket-table entry lies below this (large tables only).
    pub free_hint: u32,
    /// The stack of a foreign machine.
    pub foreign: Option<crate::foreign::ForeignSlot>,
    /// Forwarding counters by interface (routers only).
    pub forwarding: Vec<crate::forward::IfaceCounters>,
    /// ICMP error rate-limit buckets (machines that sent an error only).
    pub icmp_limit: Option<Box<crate::icmp_limit::Limiter>>,
    /// Where the machine's stub resolver sends DNS queries (its
    /// `/etc/resolv.conf`): set from NDL `resolver=` or by a DHCP lease.
    pub resolver: Option<std::sync::Arc<ResolverConf>>,
    /// The DHCP client of a machine configured by DHCP.
    pub dhcp: Option<Box<crate::dhcp::client::Client>>,
    /// The DHCP server of a machine (`crate::dhcp::server`).
    pub dhcp_server: Option<Box<crate::dhcp::server::Server>>,
    /// The DHCP relay agent of a router (`crate::dhcp::relay`).
    pub dhcp_relay: Option<Box<crate::dhcp::relay::Relay>>,
    /// Tasks waiting for the machine to get an address
    /// (`crate::addr::wait_configured`).
    pub addr_waiters: Vec<crate::hosts::TaskId>,
    /// The on-demand routing protocol of a MANET node (AODV).
    pub manet: Option<Box<crate::ondemand::OnDemand>>,
}

/// A machine's resolver configuration, as `/etc/resolv.conf` holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResolverConf {
    /// The DNS servers to ask, in order (`nameserver` lines).
    pub servers: Vec<Ipv4Addr>,
    /// The domain appended to names without a dot (`search`).
    pub domain: Option<String>,
}

impl Machine {
    pub fn new(group: u32) -> Self {
        Machine {
            group,
            crashed: false,
            foreign: false,
            forward: false,
            keep_ttl: false,
            ip_ident: 0,
            offloads: 0,
            nic: 0,
            ifaces: SmallVec::new(),
            sockets: SmallVec::new(),
            ext: None,
        }
    }

    /// Returns the rarely used state, allocating it on first use.
    pub fn ext(&mut self) -> &mut MachineExt {
        self.ext.get_or_insert_with(Default::default)
    }

    /// Notes that socket-table entry `slot` became free.
    pub fn slot_freed(&mut self, slot: u32) {
        if let Some(e) = self.ext.as_deref_mut() {
            e.free_hint = e.free_hint.min(slot);
        }
    }

    /// Returns the machine's first address (its "name" address).
    pub fn primary_ip(&self) -> Option<Ipv4Addr> {
        self.ifaces.first().map(|i| i.ip)
    }

    /// Returns true when `ip` is one of this machine's addresses.
    pub fn owns(&self, ip: Ipv4Addr) -> bool {
        self.ifaces.iter().any(|i| i.ip == ip)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn an_idle_machine_is_a_few_words() {
        // The scale budget: ≤ 1 KB per machine everything included; the
        // machine record itself must stay small.
        assert!(
            std::mem::size_of::<Machine>() <= 72,
            "{}",
            std::mem::size_of::<Machine>()
        );
    }
}
