//! Addresses given and taken during a run (by DHCP, `crate::dhcp`).
//!
//! A machine's interface normally gets its address when it is attached,
//! before the run. An interface configured by DHCP starts at `0.0.0.0`: it
//! can send and receive limited broadcasts (`255.255.255.255`), nothing
//! else (a unicast send fails with [`SocketError::NoAddress`]). [`assign`]
//! gives it an address, a prefix and a default gateway; [`release`] takes
//! them away again (the lease expired, or a NAK).
//!
//! What the simulator's indexes learn: the network's address-to-port
//! table (`Network::ip_to_port`, how neighbours find each other without
//! ARP and how routes find the network of an address) gains or loses the
//! address, and the machine's routing table becomes one default route
//! through the gateway (tables are shared: every host behind the same
//! gateway interface points at one). Tasks waiting for the machine to be
//! configured ([`wait_configured`]) are woken.
//!
//! When an address goes, the machine's TCP connections on it are aborted
//! with [`SocketError::AddressLost`] (nothing is sent: the address is no
//! longer the machine's), its UDP sockets report the same error to their
//! next call, and its route cache is emptied.

use crate::endpoint::{SocketError, SocketSlot};
use crate::hosts::{Hosts, TaskId};
use crate::machine::{IfaceId, MachineId};
use crate::route::{Hop, RouteList, Table, NO_TABLE};
use elvis_net::NetworkKind;
use std::net::Ipv4Addr;

/// Gives interface `iface` of machine `m` the address `ip`, with a
/// default route through `gateway` (none: only its own network is
/// reachable). The prefix is the network's business (its `subnet`), kept
/// by the caller; the stack finds neighbours by address.
///
/// # Errors
/// `AddrInUse`-like [`SocketError::AddrNotAvailable`] when another
/// machine on the network already has `ip` (what an ARP probe would
/// find); `InvalidInput` for a missing interface or an unusable address.
pub fn assign(
    w: &mut Hosts,
    m: MachineId,
    iface: IfaceId,
    ip: Ipv4Addr,
    gateway: Option<Ipv4Addr>,
) -> Result<(), SocketError> {
    let Some(&ifc) = w.machines[m as usize].ifaces.get(iface as usize) else {
        return Err(SocketError::InvalidInput("no such interface"));
    };
    if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() {
        return Err(SocketError::InvalidInput("not a unicast address"));
    }
    let key = u32::from(ip);
    let net = &mut w.fabric.networks[ifc.net as usize];
    match net.ip_to_port.get(&key) {
        Some(&p) if p != ifc.port => return Err(SocketError::AddrNotAvailable(ip)),
        _ => {}
    }
    if !ifc.ip.is_unspecified() && ifc.ip != ip {
        forget(w, m, iface, ifc.ip);
    }
    let net = &mut w.fabric.networks[ifc.net as usize];
    net.ip_to_port.insert(key, ifc.port);
    if net.cfg.kind == NetworkKind::Link {
        let links = w.stack.link_neighbours.entry(key).or_default();
        if !links.contains(&(ifc.net, ifc.port)) {
            links.push((ifc.net, ifc.port));
        }
    }
    w.machines[m as usize].ifaces[iface as usize].ip = ip;
    w.stack.dst_epoch = w.stack.dst_epoch.wrapping_add(1);
    set_default_route(w, m, iface, gateway);
    if let Some(e) = w.machines[m as usize].ext.as_deref_mut() {
        e.dst = None;
        for t in std::mem::take(&mut e.addr_waiters) {
            w.sched.wakeups.wake(t);
        }
    }
    Ok(())
}

/// Takes interface `iface`'s address away (back to `0.0.0.0`); its
/// machine's connections on it fail with [`SocketError::AddressLost`].
pub fn release(w: &mut Hosts, m: MachineId, iface: IfaceId) {
    let Some(&ifc) = w.machines[m as usize].ifaces.get(iface as usize) else {
        return;
    };
    if ifc.ip.is_unspecified() {
        return;
    }
    forget(w, m, iface, ifc.ip);
    w.machines[m as usize].ifaces[iface as usize].ip = Ipv4Addr::UNSPECIFIED;
    w.stack.dst_epoch = w.stack.dst_epoch.wrapping_add(1);
    if let Some(t) = w.stack.routing.of_machine.get_mut(m as usize) {
        *t = NO_TABLE;
    }
}

/// Removes `ip` from the indexes and fails the sockets using it.
fn forget(w: &mut Hosts, m: MachineId, iface: IfaceId, ip: Ipv4Addr) {
    let ifc = w.machines[m as usize].ifaces[iface as usize];
    let key = u32::from(ip);
    let net = &mut w.fabric.networks[ifc.net as usize];
    if net.ip_to_port.get(&key) == Some(&ifc.port) {
        net.ip_to_port.remove(&key);
    }
    if let Some(links) = w.stack.link_neighbours.get_mut(&key) {
        links.retain(|l| *l != (ifc.net, ifc.port));
        if links.is_empty() {
            w.stack.link_neighbours.remove(&key);
        }
    }
    let lost = SocketError::AddressLost(ip);
    let mut tcp = Vec::new();
    let mut wake: Vec<TaskId> = Vec::new();
    for (slot, s) in w.machines[m as usize].sockets.iter().enumerate() {
        match s {
            SocketSlot::Tcp(t) if *t.tcb.local.ip() == ip => tcp.push(slot as u32),
            SocketSlot::Udp(u) => {
                if let Ok(mut rx) = u.rx.try_borrow_mut() {
                    wake.extend(rx.set_error(lost.clone()));
                }
            }
            _ => {}
        }
    }
    for t in wake {
        w.wake(t);
    }
    for slot in tcp {
        crate::tcp::drive(w, m, slot, |tcb, _now, _out| {
            // The RST is not sent: the address is no longer ours.
            let _ = tcb.abort();
            tcb.error = Some(Box::new(lost.clone()));
            crate::tcp::tcb::Effects {
                readable: true,
                writable: true,
                established: false,
                closed: true,
            }
        });
    }
    if let Some(e) = w.machines[m as usize].ext.as_deref_mut() {
        e.dst = None;
    }
}

/// Points machine `m`'s routing table at "default via `gateway` on
/// `iface`" (shared by every machine with the same one), or at none.
fn set_default_route(w: &mut Hosts, m: MachineId, iface: IfaceId, gateway: Option<Ipv4Addr>) {
    let routing = &mut w.stack.routing;
    let table = match gateway {
        None => NO_TABLE,
        Some(gw) => {
            let key = (iface, u32::from(gw));
            match routing.dynamic.get(&key) {
                Some(&t) => t,
                None => {
                    let mut routes = RouteList::new();
                    routes.insert(
                        (0, 0),
                        smallvec::smallvec![Hop {
                            iface,
                            gateway: u32::from(gw),
                        }],
                    );
                    let t = routing.tables.len() as u32;
                    routing.tables.push(Table::new(&routes));
                    routing.dynamic.insert(key, t);
                    t
                }
            }
        }
    };
    let machines = w.machines.len();
    let of = &mut w.stack.routing.of_machine;
    if of.len() < machines {
        if table == NO_TABLE {
            return;
        }
        of.resize(machines, NO_TABLE);
    }
    of[m as usize] = table;
}

/// Returns true when machine `m` has an address on its first interface.
pub fn configured(w: &Hosts, m: MachineId) -> bool {
    w.machines[m as usize]
        .primary_ip()
        .is_some_and(|ip| !ip.is_unspecified())
}

/// Registers `task` to be woken when machine `m` gets an address
/// ([`assign`]); returns false (registering nothing) when it has one.
pub fn wait_configured(w: &mut Hosts, m: MachineId, task: TaskId) -> bool {
    if configured(w, m) {
        return false;
    }
    let waiters = &mut w.machines[m as usize].ext().addr_waiters;
    if !waiters.contains(&task) {
        waiters.push(task);
    }
    true
}
