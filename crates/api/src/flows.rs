//! Flow records: a workload generator (`flowgen` in `elvis-apps`) notes
//! when each flow starts and when its last byte reaches the receiving
//! application; the run report's `flows` section (`elvis-sim`) turns the
//! records into flow completion times and slowdowns.
//!
//! A flow's id travels inside the flow (its first bytes), so the
//! receiver finishes the record the sender started without any other
//! shared state.

use crate::host::Host;
use crate::machine::MachineId;
use crate::world::try_with_world;
use std::net::Ipv4Addr;

/// One flow of a workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowRecord {
    /// The sending machine.
    pub src: MachineId,
    /// The receiver's address.
    pub dst: Ipv4Addr,
    /// Payload bytes.
    pub bytes: u64,
    /// When the flow arrived (the sender asked for its connection), ns.
    pub start_ns: u64,
    /// When its last byte reached the receiving application, ns.
    pub end_ns: Option<u64>,
    /// How the flow travels (its ideal completion time depends on it).
    pub transport: FlowTransport,
    /// The receiver saw a packet of it lost (a flow whose transport does
    /// not resend: it will not finish).
    pub lost: bool,
}

/// How a flow travels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FlowTransport {
    /// A TCP connection: a handshake, then the bytes.
    #[default]
    Tcp,
    /// DCQCN over UDP (`elvis_apps::dcqcn`): packets of at most
    /// [`DCQCN_PACKET`] bytes paced from the line rate, no handshake, no
    /// retransmission.
    Dcqcn,
}

/// The largest UDP payload of a DCQCN flow's packet (a 1500-byte MTU).
pub const DCQCN_PACKET: u64 = 1472;

impl Host {
    /// Records a flow of `bytes` from this machine to `dst` starting now;
    /// returns its id (0 outside a running simulation).
    pub fn flow_started(&self, dst: Ipv4Addr, bytes: u64) -> u64 {
        self.flow_started_over(dst, bytes, FlowTransport::Tcp)
    }

    /// Records a flow of `bytes` over `transport` from this machine to
    /// `dst` starting now; returns its id (0 outside a running
    /// simulation).
    pub fn flow_started_over(&self, dst: Ipv4Addr, bytes: u64, transport: FlowTransport) -> u64 {
        try_with_world(|w| {
            let start_ns = w.hosts.now().as_nanos();
            w.flows.push(FlowRecord {
                src: self.machine,
                dst,
                bytes,
                start_ns,
                end_ns: None,
                transport,
                lost: false,
            });
            (w.flows.len() - 1) as u64
        })
        .unwrap_or(0)
    }

    /// Records that the last byte of flow `id` reached this machine's
    /// application now. An unknown id, a flow to another address and a
    /// second finish change nothing; returns whether the record changed.
    pub fn flow_finished(&self, id: u64) -> bool {
        try_with_world(|w| {
            let now = w.hosts.now().as_nanos();
            let mine = |dst: Ipv4Addr| w.hosts.machines[self.machine as usize].owns(dst);
            let ok = usize::try_from(id)
                .ok()
                .and_then(|i| w.flows.get(i))
                .is_some_and(|f| f.end_ns.is_none() && mine(f.dst));
            if ok {
                w.flows[id as usize].end_ns = Some(now);
            }
            ok
        })
        .unwrap_or(false)
    }

    /// Records that this machine, flow `id`'s receiver, saw a packet of
    /// it lost. An unknown id or a flow to another address changes
    /// nothing; returns whether the record changed.
    pub fn flow_lost(&self, id: u64) -> bool {
        try_with_world(|w| {
            let mine = |dst: Ipv4Addr| w.hosts.machines[self.machine as usize].owns(dst);
            let ok = usize::try_from(id)
                .ok()
                .and_then(|i| w.flows.get(i))
                .is_some_and(|f| !f.lost && mine(f.dst));
            if ok {
                w.flows[id as usize].lost = true;
            }
            ok
        })
        .unwrap_or(false)
    }

    /// Returns the bit rate of the network of the machine's first
    /// interface (its access link), `None` when it has none or the rate
    /// is unlimited.
    pub fn link_rate_bps(&self) -> Option<u64> {
        try_with_world(|w| {
            let m = &w.hosts.machines[self.machine as usize];
            let net = m.ifaces.first()?.net;
            w.hosts.fabric.networks[net as usize].cfg.bandwidth_bps
        })
        .ok()
        .flatten()
    }
}
