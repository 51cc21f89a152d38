//! [`Simulation`]: build a world, run it, get a [`Report`].

use crate::api::Host;
use crate::executor::{AppResult, TaskFuture, TaskId, TaskMeta, TaskState};
use crate::machine::IfaceId;
use crate::machine::{Group, Iface, Machine, MachineId, Protocols};
use crate::net::{NetId, Network, NetworkConfig, NetworkKind};
use crate::pcap::PcapSet;
use crate::report::{
    self, AppReport, End, MetricReport, NetworkReport, Performance, Problem, Report,
    RouterIfaceReport, RouterReport,
};
use crate::stack::tcp::trace::{self, Sampling, Series};
use crate::world::{self, World};
use elvis_kernel::Time;
use std::future::Future;
use std::net::Ipv4Addr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use thiserror::Error;

/// Why building a simulation failed.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SimError {
    #[error("address {ip} is already used by machine '{owner}'")]
    AddressConflict { ip: Ipv4Addr, owner: String },
    #[error("link '{0}' already joins two machines")]
    LinkFull(String),
    #[error("no machine with id {0}")]
    NoSuchMachine(MachineId),
    #[error("no network with id {0}")]
    NoSuchNetwork(NetId),
    #[error("a machine group named '{0}' already exists")]
    DuplicateName(String),
    #[error("the simulation is already running")]
    Running,
    #[error("bad route on machine '{machine}': {message}")]
    BadRoute { machine: String, message: String },
    /// A queue discipline parameter is out of range (`place` names the
    /// network or the machine interface).
    #[error("bad queue discipline on {place}: {message}")]
    BadQdisc { place: String, message: String },
    #[error("machine '{0}' is not a router (make it forward first)")]
    NotARouter(String),
    /// More distinct NIC offload settings than the simulation's table
    /// holds (65,536).
    #[error(
        "machine '{0}': too many distinct NIC offload settings (at most 65,536 per simulation)"
    )]
    TooManyOffloads(String),
}

/// What one turn of the run loop did.
enum Step {
    /// A task must be polled (task, its machine).
    Poll(TaskId, MachineId),
    /// Events were processed.
    Event,
    /// Events were processed and a machine crashed in the last one.
    Crashed,
}

/// Most events processed per borrow of the world when no task wakes (so
/// that the progress callback still runs regularly). Events run in exactly
/// the order they would one by one: the batch ends as soon as one wakes a
/// task or crashes a machine.
const EVENT_BATCH: u32 = 64;

/// Takes the first runnable task off the ready queue. (A panic in a
/// poll is the task's machine's, found from the task: `current_machine`
/// is for events.)
fn next_ready(w: &mut World) -> Option<Step> {
    let task = w.hosts.sched.wakeups.pop()?;
    Some(Step::Poll(task, w.tasks.meta[task as usize].machine))
}

/// One turn of the run loop inside the world: the next task woken, if
/// any, else the next events (as many as run without waking a task, up to
/// `EVENT_BATCH`).
#[inline]
fn run_events(w: &mut World, until: Time) -> Result<Step, End> {
    if let Some(step) = next_ready(w) {
        return Ok(step);
    }
    for _ in 0..EVENT_BATCH {
        if w.sched.queue.peek_time().is_none_or(|t| t > until) {
            return Err(if w.sched.queue.is_empty() {
                End::Idle
            } else {
                End::TimeLimit
            });
        }
        let Some((_, ev)) = w.sched.queue.pop() else {
            return Err(End::Idle);
        };
        w.sched.current_machine = None;
        if catch_unwind(AssertUnwindSafe(|| w.handle(ev))).is_err() {
            let msg = elvis_stack::crash::take_panic_message();
            if let Some(m) = w.sched.current_machine {
                w.sched.crashed.push((m, msg));
            }
        }
        if !w.sched.crashed.is_empty() {
            return Ok(Step::Crashed);
        }
        // A woken task runs right away (one borrow of the world per
        // wake-up).
        if let Some(step) = next_ready(w) {
            return Ok(step);
        }
    }
    Ok(Step::Event)
}

/// Sums the tasks' outcomes by machine group and application: the totals
/// over every (group, application) pair and the pairs listed in the
/// report (see [`Report::applications`]), in (group, application) order.
///
/// Tasks of one application in one group were usually spawned one after
/// another, so the entry of the previous task is tried first; a run with
/// many entries finds the others through an index built when it needs
/// one. (A `BTreeMap` did the same at several times the cost for the few
/// entries of most runs.) Names are filled in for the listed pairs only.
fn app_reports(w: &World) -> (report::AppTotals, Vec<AppReport>) {
    /// Entries a plain scan searches before an index is built.
    const SCAN: usize = 16;
    let mut keys: Vec<(u32, u32)> = Vec::new();
    let mut entries: Vec<AppReport> = Vec::new();
    let mut index: rustc_hash::FxHashMap<(u32, u32), usize> = Default::default();
    let mut last = usize::MAX;
    for meta in &w.tasks.meta {
        let key = (w.machines[meta.machine as usize].group, meta.app);
        let found = if keys.get(last) == Some(&key) {
            Some(last)
        } else if keys.len() <= SCAN {
            keys.iter().position(|k| *k == key)
        } else {
            if index.is_empty() {
                index.extend(keys.iter().enumerate().map(|(i, k)| (*k, i)));
            }
            index.get(&key).copied()
        };
        let i = found.unwrap_or_else(|| {
            keys.push(key);
            if !index.is_empty() {
                index.insert(key, keys.len() - 1);
            }
            entries.push(AppReport {
                group: String::new(),
                application: String::new(),
                instances: 0,
                finished: 0,
                failed: 0,
                crashed: 0,
                waiting: 0,
                daemon: meta.daemon,
            });
            keys.len() - 1
        });
        last = i;
        let e = &mut entries[i];
        e.instances += 1;
        match meta.state {
            TaskState::Pending => e.waiting += 1,
            TaskState::Finished => e.finished += 1,
            TaskState::Failed => e.failed += 1,
            TaskState::Crashed => e.crashed += 1,
        }
    }
    let mut totals = report::AppTotals::default();
    for e in &entries {
        totals.add(e);
    }
    // Pairs with problems first (failed or crashed, then waiting).
    let listed = report::busiest(entries.len(), Report::MAX_APPLICATIONS_LISTED, |i| {
        let e = &entries[i];
        let waiting = if e.daemon { 0 } else { e.waiting };
        (e.failed + e.crashed, waiting)
    });
    let mut both: Vec<_> = listed
        .into_iter()
        .map(|i| {
            let (group, app) = keys[i];
            let mut e = std::mem::take(&mut entries[i]);
            e.group = w.groups[group as usize].name.clone();
            e.application = w.tasks.app_names[app as usize].clone();
            ((group, app), e)
        })
        .collect();
    if !both.is_sorted_by_key(|(key, _)| *key) {
        both.sort_unstable_by_key(|(key, _)| *key);
    }
    (totals, both.into_iter().map(|(_, e)| e).collect())
}

/// Limits of one call to [`Simulation::run_with`].
#[derive(Clone, Copy, Debug, Default)]
pub struct RunLimits {
    /// Stop at this virtual time.
    pub until: Option<Time>,
}

/// What a progress callback sees.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub sim_time: Time,
    pub events: u64,
    pub wall: Duration,
}

/// A simulation: networks, machines, applications, and the run loop.
pub struct Simulation {
    world: Option<Box<World>>,
    futures: Vec<Option<TaskFuture>>,
    watchdog: Option<Watchdog>,
    wall: Duration,
    /// Task polls so far (counted as events in the report).
    polls: u64,
    /// What ends a run early: an interrupt flag, a wall-clock limit.
    stop: crate::stop::Stop,
}

/// Shared between the run loop and the watchdog thread.
struct Heartbeat {
    /// Twice the polls finished, plus one while a poll runs: one store
    /// before and one after each poll.
    ticks: AtomicU64,
    machine: AtomicU32,
    done: AtomicBool,
}

struct Watchdog {
    limit: Duration,
    on_stuck: Arc<dyn Fn(&str) + Send + Sync>,
}

impl Simulation {
    /// Returns an empty simulation whose random streams derive from `seed`.
    pub fn new(seed: u64) -> Self {
        Simulation {
            world: Some(Box::new(World::new(seed))),
            futures: Vec::new(),
            watchdog: None,
            wall: Duration::ZERO,
            polls: 0,
            stop: crate::stop::Stop::default(),
        }
    }

    fn w(&mut self) -> &mut World {
        let w = self.world.as_mut().expect("world is present outside run");
        // Whatever changes now (routes, interfaces, networks) leaves the
        // TCP connections' cached routes stale.
        w.stack.dst_epoch = w.stack.dst_epoch.wrapping_add(1);
        w
    }

    /// Makes room for `additional` more networks, for a builder that
    /// knows its count: the list would otherwise grow by doubling, each
    /// step copying every network added so far.
    pub fn reserve_networks(&mut self, additional: usize) {
        self.w().fabric.networks.reserve_exact(additional);
    }

    /// Adds a network; returns its id.
    pub fn add_network(&mut self, cfg: NetworkConfig) -> NetId {
        let w = self.w();
        let id = w.fabric.networks.len() as NetId;
        let seed = w.config.seed;
        w.fabric.networks.push(Network::new(id, cfg, seed));
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
        if w.group_by_name.contains_key(name) {
            return Err(SimError::DuplicateName(name.to_string()));
        }
        let gid = w.groups.len() as u32;
        let first = w.machines.len() as MachineId;
        let len = count.unwrap_or(1);
        w.groups.push(Group {
            name: name.to_string(),
            counted: count.is_some(),
            first,
            len,
            protocols,
        });
        w.group_by_name.insert(name.to_string(), gid);
        w.machines.reserve(len as usize);
        for _ in 0..len {
            w.machines.push(Machine::new(gid));
        }
        Ok(first)
    }

    /// Returns true when a machine group named `name` exists.
    pub fn has_group(&self, name: &str) -> bool {
        self.world
            .as_ref()
            .is_some_and(|w| w.group_by_name.contains_key(name))
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
        let machine = &mut w.machines[m as usize];
        machine.foreign = true;
        machine.ext().foreign = Some(crate::foreign::ForeignSlot::new(stack));
        crate::foreign::start(w, m);
        Ok(m)
    }

    /// Returns the MAC address of machine `m`'s interface `iface` (the
    /// order of [`Simulation::attach`] calls), if it has one.
    pub fn mac_address(&self, m: MachineId, iface: usize) -> Option<[u8; 6]> {
        let w = self.world.as_ref()?;
        let ifc = w.machines.get(m as usize)?.ifaces.get(iface)?;
        Some(w.fabric.networks[ifc.net as usize].mac(ifc.port).0)
    }

    /// Returns each machine's first address, by machine id.
    pub fn primary_addresses(&self) -> Vec<Option<Ipv4Addr>> {
        self.world.as_ref().map_or(Vec::new(), |w| {
            w.machines.iter().map(|m| m.primary_ip()).collect()
        })
    }

    /// Returns the number of networks.
    pub fn network_count(&self) -> usize {
        self.world.as_ref().map_or(0, |w| w.fabric.networks.len())
    }

    /// Returns the configuration network `net` runs with (on a link with
    /// a `queue`, its NICs' `txqueuelen` follows from it: see
    /// [`NetworkConfig::queue`]).
    pub fn network_config(&self, net: NetId) -> Option<&NetworkConfig> {
        let w = self.world.as_ref()?;
        w.fabric.networks.get(net as usize).map(|n| &n.cfg)
    }

    /// Returns the number of machines.
    pub fn machine_count(&self) -> usize {
        self.world.as_ref().map_or(0, |w| w.machines.len())
    }

    /// Plugs machine `m` into network `net` with address `ip`.
    ///
    /// # Errors
    /// `AddressConflict` if another machine on that network has `ip`;
    /// `LinkFull` if `net` is a link that already joins two machines.
    pub fn attach(&mut self, m: MachineId, net: NetId, ip: Ipv4Addr) -> Result<(), SimError> {
        let w = self.w();
        if m as usize >= w.machines.len() {
            return Err(SimError::NoSuchMachine(m));
        }
        let Some(n) = w.fabric.networks.get(net as usize) else {
            return Err(SimError::NoSuchNetwork(net));
        };
        if let Some(&port) = n.ip_to_port.get(&u32::from(ip)) {
            let owner = n.ports[port as usize].machine;
            return Err(SimError::AddressConflict {
                ip,
                owner: w.machine_name(owner),
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
        let iface = w.machines[m as usize].ifaces.len() as IfaceId;
        let n = &mut w.fabric.networks[net as usize];
        let port = n.add_port(m, iface);
        n.ip_to_port.insert(u32::from(ip), port);
        if n.cfg.kind == crate::net::NetworkKind::Link {
            w.stack.link_neighbours
                .entry(u32::from(ip))
                .or_default()
                .push((net, port));
        }
        w.machines[m as usize].ifaces.push(Iface { net, port, ip });
        crate::stack::ipv4::index_ifaces(w, m);
        if w.stack.routing.auto.is_some() {
            w.stack.routing.dirty = true;
        }
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
        let Some(n) = w.fabric.networks.get_mut(net as usize) else {
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
        n.cfg.qdisc = cfg;
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
        if m as usize >= w.machines.len() {
            return Err(SimError::NoSuchMachine(m));
        }
        let place = format!("machine '{}' interface {iface}", w.machine_name(m));
        let bad = |message: String| SimError::BadQdisc {
            place: place.clone(),
            message,
        };
        let Some(ifc) = w.machines[m as usize].ifaces.get(iface).copied() else {
            return Err(bad("no such interface".into()));
        };
        let n = &mut w.fabric.networks[ifc.net as usize];
        cfg.validate(n.cfg.bandwidth_bps)
            .map_err(|e| bad(e.to_string()))?;
        let now = w.now().as_nanos();
        let n = &mut w.fabric.networks[ifc.net as usize];
        n.set_nic_qdisc(ifc.port, cfg, now).map_err(bad)
    }

    /// Records the occupancy of every egress queue over time (a point at
    /// each change, see [`crate::qdisc::stats::OccupancySample`]); read it
    /// with [`Simulation::queue_series`] or write it with
    /// [`Simulation::write_queue_series`]. Off by default, and free when
    /// off.
    pub fn trace_queues(&mut self) {
        self.w().fabric.config.trace_queues = true;
    }

    /// Runs every egress queue on the evented path (`true`): a frame's
    /// departure is an event, as for the non-default disciplines, instead
    /// of being computed when it is queued (see [`crate::net`],
    /// "Departure-time FIFO"). Timing is the same either way; this exists
    /// to test that it is.
    #[doc(hidden)]
    pub fn set_evented_queues(&mut self, on: bool) {
        self.w().fabric.config.evented_queues = on;
    }

    /// Returns the occupancy series recorded so far, by (network, port,
    /// direction) order, each with a file-friendly name
    /// (`NETWORK-MACHINE-nic` or `NETWORK-MACHINE-switch`).
    pub fn queue_series(&self) -> Vec<(String, Vec<crate::qdisc::stats::OccupancySample>)> {
        let Some(w) = self.world.as_ref() else {
            return Vec::new();
        };
        // Queues run event by event keep their series in the world; those
        // run on the departure-time path keep it themselves, departures
        // recorded lazily (see `crate::net`).
        let mut all = w.fabric.queue_series.clone();
        let end = w.now().as_nanos();
        for (net, n) in w.fabric.networks.iter().enumerate() {
            for (port, p) in n.ports.iter().enumerate() {
                let Some(q) = p.queues.as_deref() else {
                    continue;
                };
                for (dir, wq) in [(0, Some(&q.up)), (1, q.down.as_deref())] {
                    let Some(wq) = wq else { continue };
                    if let Some(t) = wq.trace_at(end).filter(|t| !t.is_empty()) {
                        all.insert((net as NetId, (port as u32) << 1 | dir), t);
                    }
                }
            }
        }
        (all.into_iter())
            .map(|((net, pd), v)| {
                let (network, machine, dir) = queue_names(w, net, pd);
                (format!("{network}-{machine}-{dir}"), v)
            })
            .collect()
    }

    /// Writes the occupancy series as one CSV per queue into `dir`
    /// (`time_ns,packets,bytes`, a row per change); returns the paths.
    ///
    /// # Errors
    /// If the directory or a file cannot be written.
    pub fn write_queue_series(&self, dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
        use std::io::Write;
        std::fs::create_dir_all(dir)?;
        let mut paths = Vec::new();
        for (name, series) in self.queue_series() {
            let safe: String = (name.chars())
                .map(|c| {
                    if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let path = dir.join(format!("queue-{safe}.csv"));
            let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
            writeln!(f, "time_ns,packets,bytes")?;
            for s in series {
                writeln!(f, "{},{},{}", s.time_ns, s.packets, s.bytes)?;
            }
            f.flush()?;
            paths.push(path);
        }
        Ok(paths)
    }

    /// Returns the report lines of the egress queues that saw traffic
    /// (the most eventful [`Report::MAX_QUEUES_LISTED`], in network, port,
    /// direction order) and how many saw traffic in all.
    fn queue_reports(&self) -> (u64, Vec<report::QueueReport>) {
        let w = self.world.as_ref().expect("world is present outside run");
        let end = w.now().as_nanos();
        let mut all = Vec::new();
        for (ni, n) in w.fabric.networks.iter().enumerate() {
            for (pi, p) in n.ports.iter().enumerate() {
                let Some(q) = p.queues.as_deref() else {
                    continue;
                };
                for (dir, wq) in [(0u32, Some(&q.up)), (1, q.down.as_deref())] {
                    let Some(wq) = wq else { continue };
                    if wq.stats.saw_traffic() {
                        all.push((ni as NetId, (pi as u32) << 1 | dir, wq));
                    }
                }
            }
        }
        let total = all.len() as u64;
        if all.len() > Report::MAX_QUEUES_LISTED {
            // Most drops and marks first, then the deepest; ties by place.
            all.sort_by_key(|(n, pd, wq)| {
                let s = &wq.stats;
                (
                    std::cmp::Reverse((s.dropped + s.marked, s.max_packets)),
                    *n,
                    *pd,
                )
            });
            all.truncate(Report::MAX_QUEUES_LISTED);
            all.sort_by_key(|(n, pd, _)| (*n, *pd));
        }
        let lines = all
            .into_iter()
            .map(|(net, pd, wq)| {
                let (network, machine, dir) = queue_names(w, net, pd);
                let s = &wq.stats_at(end);
                let dropped_by = (w.fabric.queue_drops.range((net, pd, elvis_net::DropReason::Loss)..))
                    .take_while(|((n, p, _), _)| (*n, *p) == (net, pd))
                    .map(|((_, _, r), c)| (r.to_string(), *c))
                    .collect();
                report::QueueReport {
                    network,
                    machine,
                    direction: dir,
                    discipline: wq.qdisc().name(),
                    enqueued: s.enqueued,
                    dequeued: s.dequeued,
                    dropped: s.dropped,
                    dropped_by,
                    marked: s.marked,
                    max_packets: s.max_packets,
                    max_bytes: s.max_bytes,
                    mean_packets: s.mean_packets(end),
                    packets_at_end: wq.packets_at(end),
                }
            })
            .collect();
        (total, lines)
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
            .machines
            .get_mut(m as usize)
            .ok_or(SimError::NoSuchMachine(m))?;
        machine.forward = on;
        w.stack.routing.dirty = true;
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
        let Some(machine) = w.machines.get(m as usize) else {
            return Err(SimError::NoSuchMachine(m));
        };
        if !machine.forward {
            return Err(SimError::NotARouter(w.machine_name(m)));
        }
        w.machines[m as usize].keep_ttl = !on;
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
        let Some(machine) = w.machines.get(m as usize) else {
            return Err(SimError::NoSuchMachine(m));
        };
        let bad = |message: String| SimError::BadRoute {
            machine: w.machine_name(m),
            message,
        };
        if len > 32 || u32::from(prefix) & !crate::stack::route::mask(len) != 0 {
            return Err(bad(format!("{prefix}/{len} is not a network prefix")));
        }
        let on_net = machine.ifaces.iter().any(|i| {
            w.fabric.networks[i.net as usize]
                .ip_to_port
                .contains_key(&u32::from(via))
        });
        if !on_net {
            return Err(bad(format!(
                "gateway {via} is on none of its networks (attach the machine first)"
            )));
        }
        w.stack.routing
            .statics
            .entry(m)
            .or_default()
            .push(crate::stack::route::StaticRoute {
                prefix: u32::from(prefix),
                len,
                via,
                iface: None,
            });
        w.stack.routing.dirty = true;
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
        let Some(machine) = w.machines.get(m as usize) else {
            return Err(SimError::NoSuchMachine(m));
        };
        let bad = |message: String| SimError::BadRoute {
            machine: w.machine_name(m),
            message,
        };
        if machine.owns(via) {
            return Err(bad(format!(
                "flow route {src} -> {dst}: {via} is the machine's own address"
            )));
        }
        let found = machine.ifaces.iter().enumerate().find_map(|(i, ifc)| {
            let port = w.fabric.networks[ifc.net as usize]
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
        w.stack.routing
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
        if m as usize >= w.machines.len() {
            return Err(SimError::NoSuchMachine(m));
        }
        if !crate::stack::offload::set(w, m, offloads) {
            return Err(SimError::TooManyOffloads(w.machine_name(m)));
        }
        w.stack.dst_epoch = w.stack.dst_epoch.wrapping_add(1);
        Ok(())
    }

    /// Turns off (`false`) or on (`true`, the default) taking frames for a
    /// host that coalesces receive interrupts into its ring when they are
    /// queued instead of with an arrival event each. Results do not
    /// depend on it: tests compare runs with and without it.
    #[doc(hidden)]
    pub fn set_rx_ring_ahead(&mut self, on: bool) {
        self.w().config.rx_ring_ahead = on;
    }

    /// Returns how many NIC receive states (`stack::offload`) were created
    /// so far, and how many machines hold one now.
    #[doc(hidden)]
    pub fn nic_states(&self) -> (u64, usize) {
        self.world.as_ref().map_or((0, 0), |w| {
            (w.stack.nics.created(), crate::stack::offload::holding(w))
        })
    }

    /// Keeps (`true`) a host's NIC receive state when its ring empties
    /// instead of giving it back (`false`, the default). Results do not
    /// depend on it: tests compare runs with and without it.
    #[doc(hidden)]
    pub fn set_nic_keep(&mut self, keep: bool) {
        self.w().stack.nics.keep = keep;
    }

    /// Returns how many frames GRO merged into an earlier frame's segment.
    #[doc(hidden)]
    pub fn gro_merged(&self) -> u64 {
        self.world.as_ref().map_or(0, |w| w.obs.stats.gro_merged)
    }

    /// Turns the routers' fast path ([`crate::stack::forward`]) off
    /// (`false`) or on (`true`, the default). Results do not depend on it:
    /// tests compare runs with and without it.
    #[doc(hidden)]
    pub fn set_forward_fast_path(&mut self, on: bool) {
        self.w().config.fast_forward = on;
    }

    /// Turns TCP's one-pass send and receive paths
    /// (`stack::tcp::dst`) off (`false`) or on (`true`, the
    /// default). Results do not depend on it: tests compare runs with and
    /// without it.
    #[doc(hidden)]
    pub fn set_tcp_fast_path(&mut self, on: bool) {
        self.w().config.tcp_fast_path = on;
    }

    /// Returns how many TCP segments were sent and received on the
    /// one-pass paths.
    #[doc(hidden)]
    pub fn tcp_fast_segments(&self) -> (u64, u64) {
        self.world
            .as_ref()
            .map_or((0, 0), |w| (w.obs.tcp_fast_sent, w.obs.tcp_fast_received))
    }

    /// Returns how many frames routers forwarded through their fast path.
    #[doc(hidden)]
    pub fn fast_forwarded(&self) -> u64 {
        self.world.as_ref().map_or(0, |w| w.obs.fast_forwarded)
    }

    /// Returns the number of per-flow explicit routes of all machines.
    pub fn flow_route_count(&self) -> usize {
        self.world.as_ref().map_or(0, |w| w.stack.routing.flows.len())
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
        let Some(machine) = w.machines.get(m as usize) else {
            return Err(SimError::NoSuchMachine(m));
        };
        let bad = |message: String| SimError::BadRoute {
            machine: w.machine_name(m),
            message,
        };
        let mut list = Vec::with_capacity(routes.iter().map(|r| r.2.len()).sum());
        for &(prefix, len, hops) in routes {
            if len > 32 || u32::from(prefix) & !crate::stack::route::mask(len) != 0 {
                return Err(bad(format!("{prefix}/{len} is not a network prefix")));
            }
            for &(iface, via) in hops {
                let ok = machine.ifaces.get(iface as usize).is_some_and(|i| {
                    w.fabric.networks[i.net as usize]
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
        w.stack.routing.statics.entry(m).or_default().extend(list);
        w.stack.routing.dirty = true;
        Ok(())
    }

    /// Sets the default gateway of machine `m` (a route to `0.0.0.0/0`).
    ///
    /// # Errors
    /// As [`Simulation::add_route`].
    pub fn set_default_gateway(&mut self, m: MachineId, via: Ipv4Addr) -> Result<(), SimError> {
        self.add_route(m, Ipv4Addr::UNSPECIFIED, 0, via)
    }

    /// Computes shortest-path routes for every machine from the topology
    /// when the run starts (and after any later change), like ns-3's
    /// global routing, with equal-cost multipath; `None` turns it off.
    /// See [`crate::stack::route`] and the `routing` module docs.
    pub fn set_auto_routes(&mut self, metric: Option<crate::stack::route::Metric>) {
        let w = self.w();
        w.stack.routing.auto = metric;
        w.stack.routing.dirty = true;
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
        Ok(w.stack.routing.tables.len())
    }

    /// Sets the TTL of the datagrams every machine originates (Linux's
    /// `net.ipv4.ip_default_ttl`, 64 by default; at most 255, so no
    /// datagram crosses more than 254 routers that decrement it: see
    /// [`Simulation::set_ttl_decrement`] for longer paths).
    pub fn set_default_ttl(&mut self, ttl: u8) {
        self.w().stack.default_ttl = ttl;
    }

    /// Sets the ICMP error rate limits of every machine (Linux's
    /// `icmp_ratelimit`, `icmp_msgs_per_sec`, `icmp_msgs_burst`; on by
    /// default with Linux's values; [`IcmpRateLimit::OFF`] turns them off).
    /// See [`crate::stack::icmp_limit`].
    ///
    /// [`IcmpRateLimit::OFF`]: crate::stack::icmp_limit::IcmpRateLimit::OFF
    pub fn set_icmp_rate_limit(&mut self, limit: crate::stack::icmp_limit::IcmpRateLimit) {
        self.w().stack.icmp_limit = limit;
    }

    /// Sets the TCP settings of every connection opened from now on.
    pub fn set_tcp_config(&mut self, cfg: crate::stack::tcp::TcpConfig) {
        self.w().stack.tcp = std::rc::Rc::new(cfg);
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
        });
        w.hosts.sched.wakeups.add(id);
        // Start through the event queue, so that tasks woken by the first
        // ones run before later tasks start (what they send is consumed as
        // it arrives instead of piling up).
        w.sched.queue.schedule_now(crate::world::Event::Wake(id));
        self.futures.push(Some(fut));
    }

    /// Writes one pcap per network into `dir` during the next run (the
    /// files are closed when that run returns).
    ///
    /// # Errors
    /// If the directory or a file cannot be created.
    pub fn capture_pcap(&mut self, dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
        let w = self.w();
        let names: Vec<String> = w.fabric.networks.iter().map(|n| n.cfg.name.clone()).collect();
        w.fabric.pcap = PcapSet::open(dir, &names)?;
        Ok(w.fabric.pcap.files.clone())
    }

    /// Calls `on_stuck(machine name)` from another thread when one poll of an
    /// application (or one event) runs longer than `limit` of wall time: an
    /// application that never yields. The callback usually reports and exits.
    pub fn set_watchdog(
        &mut self,
        limit: Duration,
        on_stuck: impl Fn(&str) + Send + Sync + 'static,
    ) {
        self.watchdog = Some(Watchdog {
            limit,
            on_stuck: Arc::new(on_stuck),
        });
    }

    /// Ends the next runs at the current event, with [`End::Interrupted`],
    /// once `flag` is set (by a signal handler, another thread…). The flag
    /// is read between events, so every frame already started is whole in
    /// the captures.
    pub fn set_interrupt_flag(&mut self, flag: Arc<AtomicBool>) {
        self.stop.flag = Some(flag);
    }

    /// Ends each run, like an interrupt but with [`End::WallLimit`], once
    /// it has taken `limit` of wall-clock time.
    pub fn set_wall_limit(&mut self, limit: Duration) {
        self.stop.wall = Some(limit);
    }

    /// Runs until nothing is left to happen.
    pub fn run(&mut self) -> Report {
        self.run_with(RunLimits::default(), &mut |_| {})
    }

    /// Runs within `limits`, calling `progress` about every 100 ms of wall
    /// time; returns the report. A later call continues the same run.
    pub fn run_with(&mut self, limits: RunLimits, progress: &mut dyn FnMut(&Progress)) -> Report {
        elvis_stack::crash::install_panic_hook();
        let mut route_error = None;
        if self.w().stack.routing.dirty {
            route_error = self.build_routes().err();
        }
        let Some(world) = self.world.take() else {
            unreachable!("world is present outside run")
        };
        let group_names: Vec<(MachineId, u32, bool, String)> = world
            .groups
            .iter()
            .map(|g| (g.first, g.len, g.counted, g.name.clone()))
            .collect();
        if let Err(world) = world::install(world) {
            // Another simulation runs on this thread (a nested run).
            self.world = Some(world);
            let mut r = self.report(End::Idle);
            r.problems.push(Problem {
                machine: String::new(),
                application: String::new(),
                state: TaskState::Failed,
                message: "a simulation cannot run inside another on the same thread".into(),
            });
            return r;
        }
        elvis_stack::crash::capture_panics(true);
        let beat = Arc::new(Heartbeat {
            ticks: AtomicU64::new(2 * self.polls),
            machine: AtomicU32::new(0),
            done: AtomicBool::new(false),
        });
        let dog = self
            .watchdog
            .as_ref()
            .map(|d| spawn_watchdog(d, beat.clone(), group_names));
        let start = Instant::now();
        let end = self.run_loop(limits, progress, &beat, start);
        crate::executor::set_current_task(None);
        self.wall += start.elapsed();
        beat.done.store(true, Ordering::Relaxed);
        if let Some(h) = dog {
            h.thread().unpark();
            let _ = h.join();
        }
        elvis_stack::crash::capture_panics(false);
        let mut world = world::uninstall().expect("world installed for the run");
        let end_time = world.now();
        world.fabric.pcap.close(end_time);
        self.world = Some(world);
        let mut r = self.report(end);
        if let Some(e) = route_error {
            r.problems.push(Problem {
                machine: String::new(),
                application: String::new(),
                state: TaskState::Failed,
                message: e.to_string(),
            });
        }
        r
    }

    fn run_loop(
        &mut self,
        limits: RunLimits,
        progress: &mut dyn FnMut(&Progress),
        beat: &Heartbeat,
        start: Instant,
    ) -> End {
        let until = limits.until.unwrap_or(Time::MAX);
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut last_progress = Instant::now();
        let mut since_check = 0u32;
        // The world's cell is found once for the whole run: between two
        // task polls the loop borrows it again (a flag check), without
        // another thread-local lookup or a closure call per turn.
        world::with_cell(|cell| loop {
            // Poll the tasks the last event woke, then process the next
            // events: as many as run without waking a task (up to
            // `EVENT_BATCH`), in one borrow of the world.
            let next = match cell.try_borrow_mut() {
                Ok(mut guard) => match guard.as_deref_mut() {
                    Some(w) => run_events(w, until),
                    None => Err(End::Idle),
                },
                Err(_) => Err(End::Idle),
            };
            let task = match next {
                Ok(Step::Poll(t, m)) => {
                    beat.machine.store(m, Ordering::Relaxed);
                    Some(t)
                }
                // Batches of events without a wake-up count as turns too,
                // so that a storm of frames still sees the stop checks.
                Ok(Step::Event) => None,
                Ok(Step::Crashed) => {
                    self.reap_crashed();
                    None
                }
                Err(end) => {
                    if end == End::TimeLimit && until != Time::MAX {
                        let _ = world::try_with_world(|w| w.sched.queue.advance_to(until));
                    }
                    return end;
                }
            };
            if let Some(task) = task {
                self.poll_task(task, &mut cx, beat);
            }
            since_check += 1;
            if since_check >= 1024 {
                since_check = 0;
                if let Some(end) = self.stop.reached(start) {
                    return end;
                }
                if last_progress.elapsed() >= Duration::from_millis(100) {
                    last_progress = Instant::now();
                    if let Ok(p) = world::try_with_world(|w| Progress {
                        sim_time: w.now(),
                        events: w.sched.queue.popped(),
                        wall: start.elapsed(),
                    }) {
                        progress(&p);
                    }
                }
            }
        })
    }

    /// Polls `task` once; a task that ends is retired by
    /// [`Simulation::task_ended`].
    #[inline(always)]
    fn poll_task(&mut self, task: TaskId, cx: &mut Context<'_>, beat: &Heartbeat) {
        // Polled in place: a task that stays pending costs no move of its
        // future out of the table and back.
        let Some(fut) = self.futures[task as usize].as_mut() else {
            return;
        };
        // Only this thread writes the ticks: plain stores, not atomic
        // read-modify-writes (a locked instruction per poll).
        beat.ticks.store(2 * self.polls + 1, Ordering::Relaxed);
        crate::executor::set_current_task(Some(task));
        let result = catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx)));
        self.polls += 1;
        beat.ticks.store(2 * self.polls, Ordering::Relaxed);
        if matches!(result, Ok(Poll::Pending)) {
            // Nothing to drop; forgetting it spares a call of the drop
            // glue, which the compiler otherwise makes for every poll.
            std::mem::forget(result);
        } else {
            self.task_ended(task, result);
        }
    }

    /// Records how `task` ended (its poll returned `result`), drops its
    /// future and reaps a machine it crashed.
    #[inline(never)]
    fn task_ended(&mut self, task: TaskId, result: std::thread::Result<Poll<AppResult>>) {
        let outcome = match result {
            Ok(Poll::Pending) => return,
            Ok(Poll::Ready(Ok(()))) => (TaskState::Finished, None),
            Ok(Poll::Ready(Err(e))) => (TaskState::Failed, Some(e.message)),
            Err(_) => (TaskState::Crashed, Some(elvis_stack::crash::take_panic_message())),
        };
        // Dropping the future runs its sockets' destructors, which reach
        // the world.
        self.futures[task as usize] = None;
        let crashed = world::try_with_world(|w| {
            crate::executor::set_current_task(None);
            let now = w.now();
            w.tasks.last_end = Some(now);
            let meta = &mut w.tasks.meta[task as usize];
            meta.state = outcome.0;
            w.hosts.sched.wakeups.retire(task);
            let machine = meta.machine;
            if let Some(msg) = outcome.1 {
                w.tasks.errors.push((task, msg.clone()));
                if outcome.0 == TaskState::Crashed {
                    w.sched.crashed.push((machine, msg));
                }
            }
            !w.sched.crashed.is_empty()
        });
        if crashed == Ok(true) {
            self.reap_crashed();
        }
    }

    /// Marks the machines that crashed since the last call, and their
    /// pending tasks; drops those tasks' futures (their sockets close).
    fn reap_crashed(&mut self) {
        let dead = world::try_with_world(World::mark_crashed).unwrap_or_default();
        if dead.is_empty() {
            return;
        }
        for t in &dead {
            // Dropping runs socket destructors, which reach the world.
            drop(self.futures[*t as usize].take());
        }
    }

    /// Returns the report of what has run so far.
    pub fn report(&self, end: End) -> Report {
        let w = self.world.as_ref().expect("world is present outside run");
        let mut problems: Vec<Problem> = w
            .tasks
            .errors
            .iter()
            .take(Report::MAX_LISTED)
            .map(|(t, msg)| {
                let meta = &w.tasks.meta[*t as usize];
                Problem {
                    machine: w.machine_name(meta.machine),
                    application: w.tasks.app_names[meta.app as usize].clone(),
                    state: meta.state,
                    message: msg.clone(),
                }
            })
            .collect();
        for meta in w
            .tasks
            .meta
            .iter()
            .filter(|m| m.state == TaskState::Pending && !m.daemon)
        {
            if problems.len() >= Report::MAX_LISTED {
                break;
            }
            problems.push(Problem {
                machine: w.machine_name(meta.machine),
                application: w.tasks.app_names[meta.app as usize].clone(),
                state: TaskState::Pending,
                message: "still waiting when the run ended".into(),
            });
        }
        let events = w.sched.queue.popped() + self.polls;
        let wall = self.wall.as_secs_f64();
        let (queues_total, queues) = self.queue_reports();
        let (applications_total, applications) = app_reports(w);
        Report {
            seed: w.config.seed,
            end,
            sim_time_ns: w.now().as_nanos(),
            apps_ended_ns: w
                .tasks
                .meta
                .iter()
                .all(|m| m.daemon || m.state != TaskState::Pending)
                .then_some(w.tasks.last_end)
                .flatten()
                .map(Time::as_nanos),
            events,
            machines: w.machines.len() as u64,
            packets: report::PacketReport::new(&w.obs.stats, w.fabric.frames_sent),
            networks_total: w.fabric.networks.len() as u64,
            networks: self.network_reports(),
            routers: self.router_reports(),
            queues_total,
            queues,
            routing: report::RoutingReport {
                tables: w.stack.routing.tables.len() as u64,
                routes: w.stack.routing.tables.iter().map(|t| t.len() as u64).sum(),
            },
            applications_total,
            applications,
            problems,
            metrics: w
                .metrics
                .iter()
                .take(10_000)
                .map(|m| MetricReport {
                    machine: w.machine_name(m.machine),
                    application: m
                        .app
                        .map_or(String::new(), |a| w.tasks.app_names[a as usize].clone()),
                    name: m.name.clone(),
                    value: m.value,
                })
                .collect(),
            tcp_connections_total: w.obs.conns.created,
            tcp_connections: self.connection_reports(),
            tcp_shares: self.congestion_shares(),
            performance: Performance {
                wall_time_s: wall,
                events_per_s: if wall > 0.0 {
                    events as f64 / wall
                } else {
                    0.0
                },
                speedup: if wall > 0.0 {
                    w.now().as_secs_f64() / wall
                } else {
                    0.0
                },
                peak_rss_bytes: report::peak_rss_bytes(),
            },
            memory_estimate: None,
        }
    }

    /// Returns the report lines of the TCP connections, ended ones and
    /// those still open, by id.
    fn connection_reports(&self) -> Vec<report::ConnectionReport> {
        use crate::socket::SocketSlot;
        let w = self.world.as_ref().expect("world is present outside run");
        let mut recs = w.obs.conns.ended.clone();
        for (m, machine) in w.machines.iter().enumerate() {
            for s in &machine.sockets {
                if let SocketSlot::Tcp(t) = s {
                    if t.id < trace::MAX_LISTED {
                        let tcb_stats = t.tcb.stats();
                        recs.push(trace::Record {
                            id: t.id,
                            machine: m as MachineId,
                            local: t.tcb.local,
                            remote: t.tcb.remote,
                            congestion: t.tcb.cc_name(),
                            state: t.tcb.state,
                            stats: tcb_stats,
                            life: t.life,
                        });
                    }
                }
            }
        }
        recs.sort_by_key(|r| r.id);
        recs.into_iter()
            .map(|r| report::ConnectionReport {
                id: r.id,
                machine: w.machine_name(r.machine),
                local: r.local.to_string(),
                remote: r.remote.to_string(),
                congestion: r.congestion,
                state: r.state,
                opened_ns: r.life.opened_ns,
                last_ack_ns: r.life.last_ack_ns,
                throughput_bps: r.life.throughput_bps(r.stats.bytes_acked),
                stats: r.stats,
            })
            .collect()
    }

    /// Returns the bytes acknowledged per congestion control algorithm.
    fn congestion_shares(&self) -> Vec<report::CongestionShare> {
        use crate::socket::SocketSlot;
        let w = self.world.as_ref().expect("world is present outside run");
        let mut totals = w.obs.conns.ended_totals.clone();
        for machine in &w.machines {
            for s in &machine.sockets {
                if let SocketSlot::Tcp(t) = s {
                    trace::add_total(
                        &mut totals,
                        t.tcb.cc_name(),
                        t.tcb.stats.bytes_acked,
                        t.life,
                    );
                }
            }
        }
        report::CongestionShare::from_totals(&totals)
    }

    /// Records a time series of every TCP connection opened from now on
    /// (cwnd, ssthresh, smoothed RTT, bytes acknowledged), sampled as
    /// `sampling` says; read it with [`Simulation::tcp_series`] or write it
    /// with [`Simulation::write_tcp_series`]. Off by default, and free
    /// when off.
    pub fn trace_tcp(&mut self, sampling: Sampling) {
        self.w().obs.conns.enable_trace(sampling);
    }

    /// Returns the TCP time series recorded so far (empty unless
    /// [`Simulation::trace_tcp`] was called), by connection id.
    pub fn tcp_series(&self) -> Vec<Series> {
        let Some(w) = self.world.as_ref() else {
            return Vec::new();
        };
        w.obs.conns
            .trace
            .as_ref()
            .map_or(Vec::new(), |t| t.series(|m| w.machine_name(m)))
    }

    /// Writes the TCP time series as one CSV per connection into `dir`
    /// (format: [`trace::write_csv`]); returns the paths.
    ///
    /// # Errors
    /// If the directory or a file cannot be written.
    pub fn write_tcp_series(&self, dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
        trace::write_csv(dir, &self.tcp_series())
    }

    /// Returns the report lines of the routers (machines that forward).
    fn router_reports(&self) -> Vec<RouterReport> {
        let w = self.world.as_ref().expect("world is present outside run");
        let mut out = Vec::new();
        for (m, machine) in w.machines.iter().enumerate() {
            if !machine.forward {
                continue;
            }
            let counters = machine.ext.as_ref().map(|e| e.forwarding.as_slice());
            let of = |k: usize| counters.and_then(|c| c.get(k).copied()).unwrap_or_default();
            let max = Report::MAX_INTERFACES_LISTED;
            let listed = report::busiest(machine.ifaces.len(), max, |k| {
                let c = of(k);
                let drops = c.ttl_exceeded + c.no_route + c.frag_needed + c.nic_full;
                (c.received + c.forwarded, drops)
            });
            let interfaces = listed
                .into_iter()
                .map(|k| {
                    let i = &machine.ifaces[k];
                    RouterIfaceReport {
                        network: w.fabric.networks[i.net as usize].cfg.name.clone(),
                        address: i.ip.to_string(),
                        counters: of(k),
                    }
                })
                .collect();
            out.push(RouterReport {
                machine: w.machine_name(m as MachineId),
                interfaces_total: machine.ifaces.len() as u64,
                interfaces,
            });
        }
        out
    }

    /// Returns the report lines of the busiest
    /// [`Report::MAX_NETWORKS_LISTED`] networks, in declaration order.
    fn network_reports(&self) -> Vec<NetworkReport> {
        let w = self.world.as_ref().expect("world is present outside run");
        let max = Report::MAX_NETWORKS_LISTED;
        let listed = report::busiest(w.fabric.networks.len(), max, |k| {
            let s = &w.fabric.networks[k].stats;
            (s.frames_sent, s.queue_drops)
        });
        listed
            .into_iter()
            .map(|k| {
                let n = &w.fabric.networks[k];
                NetworkReport {
                    name: n.cfg.name.clone(),
                    kind: n.cfg.kind,
                    bandwidth_bps: n.cfg.bandwidth_bps,
                    latency_ns: n.cfg.latency_ns,
                    ports: n.ports.len() as u64,
                    stats: n.stats.clone(),
                }
            })
            .collect()
    }

    /// Returns the pcap write error of the run, if any.
    pub fn pcap_error(&self) -> Option<String> {
        self.world.as_ref().and_then(|w| w.fabric.pcap.error.clone())
    }
}

/// Returns the network name, machine name and direction (`nic`: the
/// machine's NIC; `switch`: the switch port towards the machine) of a
/// queue.
fn queue_names(w: &World, net: NetId, port_dir: u32) -> (String, String, &'static str) {
    let n = &w.fabric.networks[net as usize];
    let machine = n.ports[(port_dir >> 1) as usize].machine;
    let dir = if port_dir & 1 == 0 { "nic" } else { "switch" };
    (n.cfg.name.clone(), w.machine_name(machine), dir)
}

fn spawn_watchdog(
    d: &Watchdog,
    beat: Arc<Heartbeat>,
    groups: Vec<(MachineId, u32, bool, String)>,
) -> std::thread::JoinHandle<()> {
    let limit = d.limit;
    let on_stuck = d.on_stuck.clone();
    std::thread::spawn(move || {
        let mut last = beat.ticks.load(Ordering::Relaxed);
        let mut stuck_for = Duration::ZERO;
        let tick = Duration::from_millis(50).min(limit);
        while !beat.done.load(Ordering::Relaxed) {
            // Parked, not asleep: the end of the run unparks the thread,
            // so joining it does not wait out the tick.
            let looked = Instant::now();
            std::thread::park_timeout(tick);
            let now = beat.ticks.load(Ordering::Relaxed);
            // The same poll (odd: one is running) since the last look.
            if now == last && now % 2 == 1 {
                stuck_for += looked.elapsed();
                if stuck_for >= limit {
                    let m = beat.machine.load(Ordering::Relaxed);
                    let name = groups
                        .iter()
                        .find(|(first, len, _, _)| m >= *first && m < first + len)
                        .map(|(first, _, counted, name)| {
                            if *counted {
                                format!("{name}-{}", m - first)
                            } else {
                                name.clone()
                            }
                        })
                        .unwrap_or_else(|| format!("#{m}"));
                    on_stuck(&name);
                    return;
                }
            } else {
                stuck_for = Duration::ZERO;
                last = now;
            }
        }
    })
}
