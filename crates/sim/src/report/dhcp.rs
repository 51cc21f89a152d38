//! The report's `dhcp` section: clients, messages, servers and their
//! leases (present when the run has a DHCP client, server or relay).

use crate::stack::dhcp::server::{Server, Use};
use crate::stack::dhcp::Kind;
use crate::stack::hosts::Hosts;
use serde::Serialize;
use std::collections::BTreeMap;

/// Leases listed per server at most (the counts cover them all).
pub const MAX_LEASES_LISTED: usize = 256;
/// Unconfigured clients named at most.
pub const MAX_UNCONFIGURED_LISTED: usize = 100;

/// DHCP over the whole run.
#[derive(Clone, Debug, Serialize)]
pub struct DhcpReport {
    /// Machines configured by DHCP.
    pub clients: u64,
    /// Clients holding an address at the end.
    pub configured: u64,
    /// Clients that never got an address.
    pub never_configured: u64,
    /// The first `MAX_UNCONFIGURED_LISTED` of those, by name.
    pub unconfigured: Vec<String>,
    /// Latest first lease among the clients, ns (`null` when none got one).
    pub last_configured_ns: Option<u64>,
    /// Messages sent by clients and servers, by type (`discover`, `offer`,
    /// `request`, `decline`, `ack`, `nak`, `release`, `inform`).
    pub messages: BTreeMap<&'static str, u64>,
    /// Messages passed on by relay agents (each hop counts).
    pub relayed: u64,
    /// Leases bound, extended (renewed or rebound) and expired.
    pub bound: u64,
    pub extended: u64,
    pub expired: u64,
    /// DISCOVERs no pool could answer.
    pub pool_exhausted: u64,
    /// One entry per server, in machine order.
    pub servers: Vec<DhcpServerReport>,
}

/// One server's lease table at the end of the run.
#[derive(Clone, Debug, Serialize)]
pub struct DhcpServerReport {
    pub machine: String,
    /// Addresses in its pools.
    pub addresses: u64,
    pub bound: u64,
    pub offered: u64,
    pub declined: u64,
    pub free: u64,
    /// The first `MAX_LEASES_LISTED` leases in address order.
    pub leases: Vec<LeaseReport>,
}

impl DhcpServerReport {
    /// Returns the lease table of server `s` on machine `m`.
    fn new(w: &Hosts, m: u32, s: &Server) -> DhcpServerReport {
        let now = w.now();
        let (bound, offered, declined, free) = s.census(now);
        let leases = s
            .leases(now)
            .take(MAX_LEASES_LISTED)
            .map(|(ip, mac, state, until)| LeaseReport {
                ip: ip.to_string(),
                mac: mac
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(":"),
                state: match state {
                    Use::Bound => "bound",
                    Use::Offered => "offered",
                    Use::Declined => "declined",
                    Use::Free => "free",
                },
                until_ns: until.as_nanos(),
            })
            .collect();
        DhcpServerReport {
            machine: w.machine_name(m),
            addresses: bound + offered + declined + free,
            bound,
            offered,
            declined,
            free,
            leases,
        }
    }
}

/// One entry of a lease table.
#[derive(Clone, Debug, Serialize)]
pub struct LeaseReport {
    pub ip: String,
    pub mac: String,
    /// `bound`, `offered` or `declined`.
    pub state: &'static str,
    /// When it ends, ns.
    pub until_ns: u64,
}

impl DhcpReport {
    /// Returns the section for `w`, or `None` when nothing runs DHCP.
    pub fn new(w: &Hosts) -> Option<DhcpReport> {
        if w.stack.dhcp_roles == 0 {
            return None;
        }
        let mut r = DhcpReport {
            clients: 0,
            configured: 0,
            never_configured: 0,
            unconfigured: Vec::new(),
            last_configured_ns: None,
            // Filled below, once DHCP is known to be in the run.
            messages: BTreeMap::new(),
            relayed: w.obs.dhcp.relayed,
            bound: w.obs.dhcp.bound,
            extended: w.obs.dhcp.extended,
            expired: w.obs.dhcp.expired,
            pool_exhausted: w.obs.dhcp.pool_exhausted,
            servers: Vec::new(),
        };
        let mut any = false;
        for (m, machine) in w.machines.iter().enumerate() {
            let Some(e) = machine.ext.as_deref() else {
                continue;
            };
            any |= e.dhcp_relay.is_some();
            if let Some(c) = e.dhcp.as_deref() {
                any = true;
                r.clients += 1;
                if c.lease.is_some() {
                    r.configured += 1;
                }
                match c.first_bound {
                    Some(t) => {
                        r.last_configured_ns = r.last_configured_ns.max(Some(t.as_nanos()));
                    }
                    None => {
                        r.never_configured += 1;
                        if r.unconfigured.len() < MAX_UNCONFIGURED_LISTED {
                            r.unconfigured.push(w.machine_name(m as u32));
                        }
                    }
                }
            }
            if let Some(s) = e.dhcp_server.as_deref() {
                any = true;
                r.servers.push(DhcpServerReport::new(w, m as u32, s));
            }
        }
        if !any {
            return None;
        }
        r.messages = (Kind::ALL.iter())
            .map(|&k| (k.name(), w.obs.dhcp.sent(k)))
            .collect();
        Some(r)
    }
}
