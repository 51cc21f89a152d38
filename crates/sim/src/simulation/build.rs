//! Building a [`Simulation`]: networks, machine groups and attachments,
//! queue disciplines, forwarding and the TTL, static, per-flow and
//! automatic routes, NIC offloads, the TCP and ICMP settings, custom
//! protocols, and the applications spawned on the machines.

use super::{SimError, Simulation};
use crate::executor::{AppResult, TaskFuture, TaskId, TaskMeta, TaskState};
use crate::machine::IfaceId;
use crate::machine::{Group, Iface, Machine, MachineId, Protocols};
use crate::net::{NetId, Network, NetworkConfig, NetworkKind};
use elvis_api::host::Host;
use elvis_kernel::Time;
use std::future::Future;
use std::net::Ipv4Addr;

impl Simulation {
    /// Makes room for `additional` more networks, for a builder that
    /// knows its count: the list would otherwise grow by doubling, each
    /// step copying every network added so far.
    pub fn reserve_networks(&mut self, additional: usize) {
        self.w().hosts.fabric.networks.reserve_exact(additional);
    }

    /// Makes room in the address index of point-to-point links for
    /// `links` more links (two addresses each), so that a builder that
    /// knows how many it will attach grows the index once rather than
    /// by doubling (a million-link star: the whole chain of copies).
    pub fn reserve_links(&mut self, links: usize) {
        (self.w().hosts.stack.link_neighbours).reserve(links.saturating_mul(2));
    }

    /// Adds a network; returns its id.
    pub fn add_network(&mut self, cfg: NetworkConfig) -> NetId {
        let w = self.w();
        let id = w.hosts.fabric.networks.len() as NetId;
        let seed = w.hosts.config.seed;
        w.hosts.fabric.networks.push(Network::new(id, cfg, seed));
        id
    }

    /// Adds a group of `count` machines named `name-0` … (or one machine
    /// named `name` when `count` is `None`); returns the first id. Ids of a
    /// group are contiguous.
    ///
    /// # Errors
    /// `DuplicateName` if a group of that name exists.
    pub fn add_group(
        &mut self,
        name: &str,
        count: Option<u32>,
        protocols: Protocols,
    ) -> Result<MachineId, SimError> {
        let w = self.w();
        if w.hosts.group_by_name.contains_key(name) {
            return Err(SimError::DuplicateName(name.to_string()));
        }
        let gid = w.hosts.groups.len() as u32;
        let first = w.hosts.machines.len() as MachineId;
        let len = count.unwrap_or(1);
        w.hosts.groups.push(Group {
            name: name.to_string(),
            counted: count.is_some(),
            first,
            len,
            protocols,
            syn: Default::default(),
        });
        w.hosts.group_by_name.insert(name.to_string(), gid);
        w.hosts.machines.reserve(len as usize);
        for _ in 0..len {
            w.hosts.machines.push(Machine::new(gid));
        }
        Ok(first)
    }

    /// Returns true when a machine group named `name` exists.
    pub fn has_group(&self, name: &str) -> bool {
        self.world
            .as_ref()
            .is_some_and(|w| w.hosts.group_by_name.contains_key(name))
    }

    /// Adds one machine running IPv4 and UDP; returns its id.
    ///
    /// # Panics
    /// If a group of that name exists (use [`Simulation::add_group`] to get
    /// an error instead).
    pub fn add_machine(&mut self, name: &str) -> MachineId {
        self.add_group(name, None, Protocols::UDP)
            .expect("machine names are unique")
    }

    /// Adds a *foreign machine*: one whose frames are handed to `stack`
    /// instead of the simulator's protocol stack (see [`crate::foreign`]).
    /// Plug it into networks with [`Simulation::attach`]; the address
    /// given there is the one simulated machines reach it at (their static
    /// neighbour tables map it to the machine's MAC), and `stack` should
    /// answer ARP for it. The stack is first polled at time zero.
    ///
    /// # Errors
    /// `DuplicateName` if a group of that name exists.
    pub fn add_foreign_machine(
        &mut self,
        name: &str,
        stack: Box<dyn crate::foreign::ForeignStack>,
    ) -> Result<MachineId, SimError> {
        let none = Protocols {
            udp: false,
            arp: false,
            tcp: false,
        };
        let m = self.add_group(name, None, none)?;
        let w = self.w();
        let machine = &mut w.hosts.machines[m as usize];
        machine.foreign = true;
        machine.ext().foreign = Some(crate::foreign::ForeignSlot::new(stack));
        crate::foreign::start(&mut w.hosts, m);
        Ok(m)
    }

    /// Returns the MAC address of machine `m`'s interface `iface` (the
    /// order of [`Simulation::attach`] calls), if it has one.
    pub fn mac_address(&self, m: MachineId, iface: usize) -> Option<[u8; 6]> {
        let w = self.world.as_ref()?;
        let ifc = w.hosts.machines.get(m as usize)?.ifaces.get(iface)?;
        Some(w.hosts.fabric.networks[ifc.net as usize].mac(ifc.port).0)
    }

    /// Returns each machine's first address, by machine id.
    pub fn primary_addresses(&self) -> Vec<Option<Ipv4Addr>> {
        self.world.as_ref().map_or(Vec::new(), |w| {
            w.hosts.machines.iter().map(|m| m.primary_ip()).collect()
        })
    }

    /// Returns the run's seed.
    pub fn seed(&self) -> u64 {
        self.world.as_ref().map_or(0, |w| w.hosts.config.seed)
    }

    /// Returns true when machine `m`'s applications must wait for an
    /// address (it is configured by DHCP and has none yet).
    pub fn waits_for_address(&self, m: MachineId) -> bool {
        self.world.as_ref().is_some_and(|w| {
            w.hosts.stack.dhcp_roles > 0
                && w.hosts.machines.get(m as usize).is_some_and(|x| {
                    x.ext.as_deref().is_some_and(|e| e.dhcp.is_some())
                        && !crate::stack::addr::configured(&w.hosts, m)
                })
        })
    }

    /// Returns the number of networks.
    pub fn network_count(&self) -> usize {
        self.world
            .as_ref()
            .map_or(0, |w| w.hosts.fabric.networks.len())
    }

    /// Returns the configuration network `net` runs with (on a link with
    /// a `queue`, its NICs' `txqueuelen` follows from it: see
    /// [`NetworkConfig::queue`]).
    pub fn network_config(&self, net: NetId) -> Option<&NetworkConfig> {
        let w = self.world.as_ref()?;
        w.hosts.fabric.networks.get(net as usize).map(|n| &n.cfg)
    }

    /// Changes network `net`'s bandwidth to `bps` bit/s from now on, also
    /// between two calls of [`Simulation::run_with`] (a step change of a
    /// bottleneck's rate): frames that start their serialization after the
    /// change take the new rate; frames already timed keep theirs. Queue
    /// disciplines built from the old rate keep it.
    ///
    /// # Errors
    /// `NoSuchNetwork`; `BadBandwidth` if the network is ideal (no
    /// bandwidth) or `bps` is 0.
    pub fn set_network_bandwidth(&mut self, net: NetId, bps: u64) -> Result<(), SimError> {
        let w = self.w();
        let Some(n) = w.hosts.fabric.networks.get_mut(net as usize) else {
            return Err(SimError::NoSuchNetwork(net));
        };
        if n.cfg.bandwidth_bps.is_none() || bps == 0 {
            return Err(SimError::BadBandwidth(n.cfg.name.clone()));
        }
        n.cfg.bandwidth_bps = Some(bps);
        Ok(())
    }

    /// Returns the number of machines.
    pub fn machine_count(&self) -> usize {
        self.world.as_ref().map_or(0, |w| w.hosts.machines.len())
    }

    /// Plugs machine `m` into network `net` with address `ip`.
    ///
    /// # Errors
    /// `AddressConflict` if another machine on that network has `ip`;
    /// `LinkFull` if `net` is a link that already joins two machines.
    pub fn attach(&mut self, m: MachineId, net: NetId, ip: Ipv4Addr) -> Result<(), SimError> {
        let w = self.w();
        if m as usize >= w.hosts.machines.len() {
            return Err(SimError::NoSuchMachine(m));
        }
        let Some(n) = w.hosts.fabric.networks.get(net as usize) else {
            return Err(SimError::NoSuchNetwork(net));
        };
        if let Some(&port) = n.ip_to_port.get(&u32::from(ip)) {
            let owner = n.ports[port as usize].machine;
            return Err(SimError::AddressConflict {
                ip,
                owner: w.hosts.machine_name(owner),
            });
        }
        if n.cfg.kind == NetworkKind::Link && n.ports.len() >= 2 {
            return Err(SimError::LinkFull(n.cfg.name.clone()));
        }
        if let Some(q) = &n.cfg.qdisc {
            q.validate(n.cfg.bandwidth_bps)
                .map_err(|e| SimError::BadQdisc {
                    place: format!("network '{}'", n.cfg.name),
                    message: e.to_string(),
                })?;
        }
        let iface = w.hosts.machines[m as usize].ifaces.len() as IfaceId;
        let n = &mut w.hosts.fabric.networks[net as usize];
        let port = n.add_port(m, iface);
        n.ip_to_port.insert(u32::from(ip), port);
        if n.cfg.kind == crate::net::NetworkKind::Link {
            w.hosts
                .stack
                .link_neighbours
                .entry(u32::from(ip))
                .or_default()
                .push((net, port));
        }
        w.hosts.machines[m as usize]
            .ifaces
            .push(Iface { net, port, ip });
        crate::stack::ipv4::index_ifaces(&mut w.hosts, m);
        if w.hosts.stack.routing.auto.is_some() {
            w.hosts.stack.routing.dirty = true;
        }
        Ok(())
    }

    /// Plugs machine `m` into network `net` without an address: DHCP
    /// ([`Simulation::enable_dhcp_client`]) gives it one during the run.
    ///
    /// # Errors
    /// `LinkFull` if `net` is a link that already joins two machines.
    pub fn attach_unconfigured(&mut self, m: MachineId, net: NetId) -> Result<(), SimError> {
        let w = self.w();
        if m as usize >= w.hosts.machines.len() {
            return Err(SimError::NoSuchMachine(m));
        }
        let Some(n) = w.hosts.fabric.networks.get_mut(net as usize) else {
            return Err(SimError::NoSuchNetwork(net));
        };
        if n.cfg.kind == NetworkKind::Link && n.ports.len() >= 2 {
            return Err(SimError::LinkFull(n.cfg.name.clone()));
        }
        let iface = w.hosts.machines[m as usize].ifaces.len() as IfaceId;
        let port = n.add_port(m, iface);
        w.hosts.machines[m as usize].ifaces.push(Iface {
            net,
            port,
            ip: Ipv4Addr::UNSPECIFIED,
        });
        crate::stack::ipv4::index_ifaces(&mut w.hosts, m);
        if w.hosts.stack.routing.auto.is_some() {
            w.hosts.stack.routing.dirty = true;
        }
        Ok(())
    }

    /// Declares network `net`'s subnet: automatic routes to the network
    /// cover the whole prefix (addresses given by DHCP during the run
    /// included) rather than only the addresses attached.
    ///
    /// # Errors
    /// `NoSuchNetwork`.
    pub fn set_network_subnet(
        &mut self,
        net: NetId,
        prefix: Ipv4Addr,
        len: u8,
    ) -> Result<(), SimError> {
        let w = self.w();
        let Some(n) = w.hosts.fabric.networks.get_mut(net as usize) else {
            return Err(SimError::NoSuchNetwork(net));
        };
        let len = len.min(32);
        n.subnet = Some((u32::from(prefix) & crate::stack::route::mask(len), len));
        w.hosts.stack.routing.dirty = true;
        Ok(())
    }

    /// Turns on priority flow control (IEEE 802.1Qbb) on network `net`
    /// (see `elvis_net::pfc`): its forwarding machines pause the lossless
    /// priorities of the queues feeding them.
    ///
    /// # Errors
    /// No such network, or a config the network cannot run
    /// ([`crate::pfc::PfcConfig::validate`]: no `prio` classes, …).
    pub fn set_pfc(&mut self, net: NetId, cfg: crate::pfc::PfcConfig) -> Result<(), SimError> {
        let w = self.w();
        let Some(n) = w.hosts.fabric.networks.get(net as usize) else {
            return Err(SimError::NoSuchNetwork(net));
        };
        cfg.validate(&n.cfg)
            .map_err(|(key, message)| SimError::BadQdisc {
                place: format!("network '{}' ({key})", n.cfg.name),
                message,
            })?;
        elvis_net::pfc::enable(&mut w.hosts.fabric, net, cfg);
        Ok(())
    }

    /// Makes machine `m` configure its first interface by DHCP, sending
    /// its first DISCOVER at `start` (`None`: after RFC 2131's random 1 to
    /// 10 s). See `elvis_stack::dhcp::client`.
    pub fn enable_dhcp_client(
        &mut self,
        m: MachineId,
        start: Option<Time>,
    ) -> Result<(), SimError> {
        let w = self.w();
        if m as usize >= w.hosts.machines.len() {
            return Err(SimError::NoSuchMachine(m));
        }
        crate::stack::dhcp::client::enable(&mut w.hosts, m, start);
        Ok(())
    }

    /// Makes machine `m` a DHCP server with `config`.
    pub fn add_dhcp_server(
        &mut self,
        m: MachineId,
        config: crate::stack::dhcp::server::Config,
    ) -> Result<(), SimError> {
        let w = self.w();
        if m as usize >= w.hosts.machines.len() {
            return Err(SimError::NoSuchMachine(m));
        }
        crate::stack::dhcp::server::enable(&mut w.hosts, m, config);
        Ok(())
    }

    /// Makes router `m` relay DHCP requests to `servers`.
    pub fn add_dhcp_relay(&mut self, m: MachineId, servers: Vec<Ipv4Addr>) -> Result<(), SimError> {
        let w = self.w();
        if m as usize >= w.hosts.machines.len() {
            return Err(SimError::NoSuchMachine(m));
        }
        crate::stack::dhcp::relay::enable(&mut w.hosts, m, servers);
        Ok(())
    }

    /// Gives every egress queue of network `net` (switch ports and the
    /// NICs attached to it, unless an interface has its own, see
    /// [`Simulation::set_qdisc`]) the discipline `cfg`; `None` restores
    /// the default drop-tail queues.
    ///
    /// # Errors
    /// `NoSuchNetwork`; `BadQdisc` naming the parameter out of range;
    /// `Running` once the network carried traffic.
    pub fn set_network_qdisc(
        &mut self,
        net: NetId,
        cfg: Option<crate::qdisc::QdiscConfig>,
    ) -> Result<(), SimError> {
        let w = self.w();
        let Some(n) = w.hosts.fabric.networks.get_mut(net as usize) else {
            return Err(SimError::NoSuchNetwork(net));
        };
        if let Some(c) = &cfg {
            c.validate(n.cfg.bandwidth_bps)
                .map_err(|e| SimError::BadQdisc {
                    place: format!("network '{}'", n.cfg.name),
                    message: e.to_string(),
                })?;
        }
        if n.ports.iter().any(|p| p.queues.is_some()) {
            return Err(SimError::Running);
        }
        n.cfg.qdisc = cfg.map(Box::new);
        Ok(())
    }

    /// Gives the NIC of machine `m`'s interface `iface` (0-based, in
    /// attachment order) its own queue discipline, overriding its
    /// network's. Forwarded datagrams leaving a router through that
    /// interface are then dropped (or marked) by the discipline rather
    /// than by the NIC bound (`txqueuelen`), which still paces the
    /// machine's own sockets.
    ///
    /// # Errors
    /// `NoSuchMachine`; `BadQdisc` for an interface the machine lacks, a
    /// parameter out of range (named), or a NIC already holding frames.
    pub fn set_qdisc(
        &mut self,
        m: MachineId,
        iface: usize,
        cfg: crate::qdisc::QdiscConfig,
    ) -> Result<(), SimError> {
        let w = self.w();
        if m as usize >= w.hosts.machines.len() {
            return Err(SimError::NoSuchMachine(m));
        }
        let place = format!("machine '{}' interface {iface}", w.hosts.machine_name(m));
        let bad = |message: String| SimError::BadQdisc {
            place: place.clone(),
            message,
        };
        let Some(ifc) = w.hosts.machines[m as usize].ifaces.get(iface).copied() else {
            return Err(bad("no such interface".into()));
        };
        let n = &mut w.hosts.fabric.networks[ifc.net as usize];
        cfg.validate(n.cfg.bandwidth_bps)
            .map_err(|e| bad(e.to_string()))?;
        let now = w.hosts.now().as_nanos();
        let n = &mut w.hosts.fabric.networks[ifc.net as usize];
        n.set_nic_qdisc(ifc.port, cfg, now).map_err(bad)
    }

    /// Makes machine `m` a router (`true`): it forwards datagrams addressed
    /// to others, decrementing their TTL and answering with ICMP errors
    /// (see [`crate::stack::forward`]). Hosts (`false`, the default) drop
    /// them.
    ///
    /// # Errors
    /// `NoSuchMachine` for a bad id.
    pub fn set_forwarding(&mut self, m: MachineId, on: bool) -> Result<(), SimError> {
        let w = self.w();
        let machine = w
            .hosts
            .machines
            .get_mut(m as usize)
            .ok_or(SimError::NoSuchMachine(m))?;
        machine.forward = on;
        w.hosts.stack.routing.dirty = true;
        Ok(())
    }

    /// Chooses whether router `m` decrements the TTL of what it forwards
    /// (`true`, RFC 1812 §5.3.1, the default) or forwards datagrams with
    /// their TTL untouched and unchecked (`false`): a transparent
    /// forwarding element, like a router configured not to decrement the
    /// TTL or a chain of L2 bridges. Such a router never sends Time
    /// Exceeded, so traceroute does not see it, and a path may cross more
    /// than 255 of them; it still answers Net Unreachable and
    /// Fragmentation Needed. A departure from RFC 1812, only when asked.
    ///
    /// # Errors
    /// `NoSuchMachine` for a bad id; `NotARouter` when `m` does not
    /// forward (call [`Simulation::set_forwarding`] first).
    pub fn set_ttl_decrement(&mut self, m: MachineId, on: bool) -> Result<(), SimError> {
        let w = self.w();
        let Some(machine) = w.hosts.machines.get(m as usize) else {
            return Err(SimError::NoSuchMachine(m));
        };
        if !machine.forward {
            return Err(SimError::NotARouter(w.hosts.machine_name(m)));
        }
        w.hosts.machines[m as usize].keep_ttl = !on;
        Ok(())
    }

    /// Adds a static route on machine `m`: datagrams to `prefix/len` go to
    /// the gateway `via`, which must be an address on one of the networks
    /// `m` is already attached to. Several routes to the same prefix are
    /// equal-cost paths; a static route replaces an automatic one to the
    /// same prefix. `0.0.0.0/0` is the default route.
    ///
    /// # Errors
    /// `NoSuchMachine`; `BadRoute` when `len` > 32, `prefix` has host bits
    /// set, or `via` is on none of `m`'s networks.
    pub fn add_route(
        &mut self,
        m: MachineId,
        prefix: Ipv4Addr,
        len: u8,
        via: Ipv4Addr,
    ) -> Result<(), SimError> {
        let w = self.w();
        let Some(machine) = w.hosts.machines.get(m as usize) else {
            return Err(SimError::NoSuchMachine(m));
        };
        let bad = |message: String| SimError::BadRoute {
            machine: w.hosts.machine_name(m),
            message,
        };
        if len > 32 || u32::from(prefix) & !crate::stack::route::mask(len) != 0 {
            return Err(bad(format!("{prefix}/{len} is not a network prefix")));
        }
        let on_net = machine.ifaces.iter().any(|i| {
            w.hosts.fabric.networks[i.net as usize]
                .ip_to_port
                .contains_key(&u32::from(via))
        });
        if !on_net {
            return Err(bad(format!(
                "gateway {via} is on none of its networks (attach the machine first)"
            )));
        }
        // Room for one route: most machines have only `gateway=`.
        let statics = &mut w.hosts.stack.routing.statics;
        statics
            .entry(m)
            .or_insert_with(|| Vec::with_capacity(1))
            .push(crate::stack::route::StaticRoute {
                prefix: u32::from(prefix),
                len,
                via,
                iface: None,
            });
        w.hosts.stack.routing.dirty = true;
        Ok(())
    }

    /// Adds a per-flow explicit route on router `m`: datagrams it forwards
    /// from `src` to `dst` (and, when `dport` is given, to that UDP/TCP
    /// destination port) leave toward the neighbour `via`, whatever the
    /// routing table says; like Linux's `ip rule add from SRC to DST
    /// [dport P] table T` with a one-route table. `via` may be `dst` itself
    /// when it is on one of `m`'s networks. A later call for the same flow
    /// replaces the route. See [`crate::stack::route`], "Per-flow explicit
    /// routes".
    ///
    /// # Errors
    /// `NoSuchMachine`; `BadRoute` when `via` is one of `m`'s own
    /// addresses or on none of its networks.
    pub fn add_flow_route(
        &mut self,
        m: MachineId,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        dport: Option<u16>,
        via: Ipv4Addr,
    ) -> Result<(), SimError> {
        let w = self.w();
        let Some(machine) = w.hosts.machines.get(m as usize) else {
            return Err(SimError::NoSuchMachine(m));
        };
        let bad = |message: String| SimError::BadRoute {
            machine: w.hosts.machine_name(m),
            message,
        };
        if machine.owns(via) {
            return Err(bad(format!(
                "flow route {src} -> {dst}: {via} is the machine's own address"
            )));
        }
        let found = machine.ifaces.iter().enumerate().find_map(|(i, ifc)| {
            let port = w.hosts.fabric.networks[ifc.net as usize]
                .ip_to_port
                .get(&u32::from(via))?;
            Some((i as IfaceId, *port))
        });
        let Some((iface, port)) = found else {
            return Err(bad(format!(
                "flow route {src} -> {dst}: next hop {via} is on none of its networks (attach the machine first)"
            )));
        };
        let hop = crate::stack::route::FlowHop {
            iface,
            via: u32::from(via),
            port,
        };
        w.hosts
            .stack
            .routing
            .flows
            .insert(m, u32::from(src), u32::from(dst), dport, hop);
        Ok(())
    }

    /// Sets the NIC offloads of machine `m` (TSO, GRO, interrupt
    /// coalescing; see [`crate::Offloads`]). Routers and foreign machines
    /// ignore them. Machines with equal settings share one entry of a
    /// table, so settings cost a machine no memory, and its receive state
    /// exists only while frames wait for its interrupt.
    ///
    /// # Errors
    /// [`SimError::NoSuchMachine`]; [`SimError::TooManyOffloads`] when the
    /// simulation already has 65,536 distinct settings.
    pub fn set_offloads(
        &mut self,
        m: MachineId,
        offloads: crate::Offloads,
    ) -> Result<(), SimError> {
        let w = self.w();
        if m as usize >= w.hosts.machines.len() {
            return Err(SimError::NoSuchMachine(m));
        }
        if !crate::stack::offload::set(&mut w.hosts, m, offloads) {
            return Err(SimError::TooManyOffloads(w.hosts.machine_name(m)));
        }
        w.hosts.stack.dst_epoch = w.hosts.stack.dst_epoch.wrapping_add(1);
        Ok(())
    }

    /// Adds static routes to machine `m` whose gateways are known to be on
    /// the given interfaces (topology generators, which build millions of
    /// routes, skip the search [`Simulation::add_route`] does). Each route
    /// is `(prefix, len, [(iface, gateway)])`; several next hops make an
    /// equal-cost set.
    ///
    /// # Errors
    /// `NoSuchMachine`; `BadRoute` for a bad prefix or an interface the
    /// machine does not have, or a gateway not on that interface's network.
    pub(crate) fn add_routes_on(
        &mut self,
        m: MachineId,
        routes: &[crate::stack::route::IfaceRoute<'_>],
    ) -> Result<(), SimError> {
        let w = self.w();
        let Some(machine) = w.hosts.machines.get(m as usize) else {
            return Err(SimError::NoSuchMachine(m));
        };
        let bad = |message: String| SimError::BadRoute {
            machine: w.hosts.machine_name(m),
            message,
        };
        let mut list = Vec::with_capacity(routes.iter().map(|r| r.2.len()).sum());
        for &(prefix, len, hops) in routes {
            if len > 32 || u32::from(prefix) & !crate::stack::route::mask(len) != 0 {
                return Err(bad(format!("{prefix}/{len} is not a network prefix")));
            }
            for &(iface, via) in hops {
                let ok = machine.ifaces.get(iface as usize).is_some_and(|i| {
                    w.hosts.fabric.networks[i.net as usize]
                        .ip_to_port
                        .contains_key(&u32::from(via))
                });
                if !ok {
                    return Err(bad(format!("gateway {via} is not on interface {iface}")));
                }
                list.push(crate::stack::route::StaticRoute {
                    prefix: u32::from(prefix),
                    len,
                    via,
                    iface: Some(iface),
                });
            }
        }
        w.hosts
            .stack
            .routing
            .statics
            .entry(m)
            .or_default()
            .extend(list);
        w.hosts.stack.routing.dirty = true;
        Ok(())
    }

    /// Sets the default gateway of machine `m` (a route to `0.0.0.0/0`).
    ///
    /// # Errors
    /// As [`Simulation::add_route`].
    pub fn set_default_gateway(&mut self, m: MachineId, via: Ipv4Addr) -> Result<(), SimError> {
        self.add_route(m, Ipv4Addr::UNSPECIFIED, 0, via)
    }

    /// Sets machine `m`'s resolver configuration (its DNS servers and
    /// search domain, as `/etc/resolv.conf` holds them); `None` removes it.
    ///
    /// # Errors
    /// `NoSuchMachine`.
    pub fn set_resolver(
        &mut self,
        m: MachineId,
        conf: Option<crate::stack::machine::ResolverConf>,
    ) -> Result<(), SimError> {
        let w = self.w();
        let Some(machine) = w.hosts.machines.get_mut(m as usize) else {
            return Err(SimError::NoSuchMachine(m));
        };
        match conf {
            Some(c) => machine.ext().resolver = Some(std::sync::Arc::new(c)),
            None => {
                if let Some(e) = machine.ext.as_deref_mut() {
                    e.resolver = None;
                }
            }
        }
        Ok(())
    }

    /// Computes shortest-path routes for every machine from the topology
    /// when the run starts (and after any later change), like ns-3's
    /// global routing, with equal-cost multipath; `None` turns it off.
    /// See [`crate::stack::route`] and the `routing` module docs.
    pub fn set_auto_routes(&mut self, metric: Option<crate::stack::route::Metric>) {
        let w = self.w();
        w.hosts.stack.routing.auto = metric;
        w.hosts.stack.routing.dirty = true;
    }

    /// Makes routers spread each datagram over a route's equal-cost next
    /// hops (`true`: packet spraying, by a hash of the datagram's 5-tuple
    /// and IPv4 identification), not each flow (`false`, the default).
    /// See "ECMP" in [`crate::stack::route`].
    pub fn set_per_packet_multipath(&mut self, on: bool) {
        self.w().hosts.stack.routing.per_packet = on;
    }

    /// Makes next hops random (see "Random multipath" in
    /// [`crate::stack::route`]): each datagram's drawn from the forwarding
    /// machine's stream (`Random::Demux`), or each flow on a random simple
    /// path (`Random::Path`, [`crate::stack::paths`]).
    pub fn set_random_multipath(&mut self, random: crate::stack::route::Random) {
        let r = &mut self.w().hosts.stack.routing;
        if r.random != random {
            r.random = random;
            r.dirty = true;
        }
    }

    /// Returns the random simple paths between the networks of addresses
    /// `src` and `dst`, once routes are built with `Random::Path` (`None`
    /// otherwise, or for an address on no network).
    pub fn random_paths(
        &mut self,
        src: std::net::Ipv4Addr,
        dst: std::net::Ipv4Addr,
    ) -> Option<(std::rc::Rc<crate::stack::paths::PathSet>, u32)> {
        let p = self.w().hosts.stack.routing.paths.as_deref()?;
        let (a, b) = (p.network_of(src.into())?, p.network_of(dst.into())?);
        Some((p.paths(a, b), p.max_hops))
    }

    /// Builds the routing tables now (the run does it when needed);
    /// returns how many distinct tables the machines share.
    ///
    /// # Errors
    /// `BadRoute` for a static route whose gateway is not on the machine's
    /// networks.
    pub fn build_routes(&mut self) -> Result<usize, SimError> {
        let w = self.w();
        crate::routing::build(w)?;
        Ok(w.hosts.stack.routing.tables.len())
    }

    /// Sets the TTL of the datagrams every machine originates (Linux's
    /// `net.ipv4.ip_default_ttl`, 64 by default; at most 255, so no
    /// datagram crosses more than 254 routers that decrement it: see
    /// [`Simulation::set_ttl_decrement`] for longer paths).
    pub fn set_default_ttl(&mut self, ttl: u8) {
        self.w().hosts.stack.default_ttl = ttl;
    }

    /// Sets the ICMP error rate limits of every machine (Linux's
    /// `icmp_ratelimit`, `icmp_msgs_per_sec`, `icmp_msgs_burst`; on by
    /// default with Linux's values; [`IcmpRateLimit::OFF`] turns them off).
    /// See [`crate::stack::icmp_limit`].
    ///
    /// [`IcmpRateLimit::OFF`]: crate::stack::icmp_limit::IcmpRateLimit::OFF
    pub fn set_icmp_rate_limit(&mut self, limit: crate::stack::icmp_limit::IcmpRateLimit) {
        self.w().hosts.stack.icmp_limit = limit;
    }

    /// Sets the TCP settings of every connection opened from now on.
    pub fn set_tcp_config(&mut self, cfg: crate::stack::tcp::TcpConfig) {
        self.w().hosts.stack.tcp = std::rc::Rc::new(cfg);
    }

    /// Sets the SYN-flood defences (SYN backlog cap, SYN cookies; see
    /// [`crate::stack::tcp::syncookie`]) of the group machine `m` belongs to.
    ///
    /// # Errors
    /// `NoSuchMachine` for a bad id.
    pub fn set_syn_defence(
        &mut self,
        m: MachineId,
        d: crate::stack::tcp::syncookie::SynDefence,
    ) -> Result<(), SimError> {
        let w = self.w();
        let g = w
            .hosts
            .machines
            .get(m as usize)
            .ok_or(SimError::NoSuchMachine(m))?
            .group;
        w.hosts.groups[g as usize].syn = d;
        Ok(())
    }

    /// Adds a user-defined protocol above IPv4 to machine `m`.
    ///
    /// # Errors
    /// `NoSuchMachine` for a bad id.
    pub fn add_protocol(
        &mut self,
        m: MachineId,
        p: Box<dyn crate::stack::custom::Protocol>,
    ) -> Result<(), SimError> {
        let w = self.w();
        let machine = w
            .hosts
            .machines
            .get_mut(m as usize)
            .ok_or(SimError::NoSuchMachine(m))?;
        machine.ext().protocols.push(p);
        Ok(())
    }

    /// Starts application `app` on machine `m` at time zero.
    pub fn spawn<F, Fut>(&mut self, m: MachineId, app: &str, f: F)
    where
        F: FnOnce(Host) -> Fut,
        Fut: Future<Output = AppResult> + 'static,
    {
        self.spawn_task(m, app, false, Box::pin(f(Host { machine: m })));
    }

    /// Starts a daemon (a server, a forwarder): one that may still be
    /// waiting when the run ends without that counting as a failure.
    pub fn spawn_daemon<F, Fut>(&mut self, m: MachineId, app: &str, f: F)
    where
        F: FnOnce(Host) -> Fut,
        Fut: Future<Output = AppResult> + 'static,
    {
        self.spawn_task(m, app, true, Box::pin(f(Host { machine: m })));
    }

    fn spawn_task(&mut self, m: MachineId, app: &str, daemon: bool, fut: TaskFuture) {
        let w = self.w();
        let app = w.tasks.app_index(app);
        let id = w.tasks.meta.len() as TaskId;
        w.tasks.meta.push(TaskMeta {
            machine: m,
            app,
            state: TaskState::Pending,
            daemon,
            child: false,
        });
        w.hosts.sched.wakeups.add(id);
        // Start through the event queue, so that tasks woken by the first
        // ones run before later tasks start (what they send is consumed as
        // it arrives instead of piling up).
        w.hosts
            .sched
            .queue
            .schedule_now(crate::world::Event::Wake(id));
        self.futures.push(Some(fut));
    }
}
