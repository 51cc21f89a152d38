//! The [`Report`] of a [`Simulation`], assembled from its world: problems,
//! applications, queues, routing, TCP connections and congestion control
//! shares, routers and networks.

use super::Simulation;
use crate::executor::TaskState;
use crate::machine::MachineId;
use crate::net::NetId;
use crate::report::{
    self, AppReport, End, MetricReport, NetworkReport, Performance, Problem, Report,
    RouterIfaceReport, RouterReport,
};
use crate::stack::tcp::trace;
use crate::world::World;
use elvis_kernel::Time;

/// Returns the report's problems (the first [`Report::MAX_LISTED`]): the
/// applications that failed or crashed, by time and then machine, then
/// those still waiting, by machine and then start order. (Orders that do
/// not depend on how machines interleave within an instant, so that a
/// parallel run lists what a sequential one does.)
fn problem_reports(w: &World) -> Vec<Problem> {
    let mut errors: Vec<&(crate::executor::TaskId, String, Time)> = w.tasks.errors.iter().collect();
    errors.sort_by_key(|(t, _, at)| (*at, w.tasks.meta[*t as usize].machine));
    let mut problems: Vec<Problem> = errors
        .into_iter()
        .take(Report::MAX_LISTED)
        .map(|(t, msg, _)| {
            let meta = &w.tasks.meta[*t as usize];
            Problem {
                machine: w.hosts.machine_name(meta.machine),
                application: w.tasks.app_names[meta.app as usize].clone(),
                state: meta.state,
                message: msg.clone(),
            }
        })
        .collect();
    if problems.len() >= Report::MAX_LISTED {
        return problems;
    }
    // The first few in (machine, task) order, kept in a bounded heap: a
    // run may end with a million applications waiting.
    let room = Report::MAX_LISTED - problems.len();
    let mut first: std::collections::BinaryHeap<(MachineId, usize)> = Default::default();
    for (i, m) in w.tasks.meta.iter().enumerate() {
        if m.state == TaskState::Pending && !m.daemon {
            first.push((m.machine, i));
            if first.len() > room {
                first.pop();
            }
        }
    }
    for (_, i) in first.into_sorted_vec() {
        let meta = &w.tasks.meta[i];
        problems.push(Problem {
            machine: w.hosts.machine_name(meta.machine),
            application: w.tasks.app_names[meta.app as usize].clone(),
            state: TaskState::Pending,
            message: "still waiting when the run ended".into(),
        });
    }
    problems
}

/// Returns the values the applications published, the first 10,000, by
/// time of publication and then machine (each machine's in the order it
/// published them).
fn metric_reports(w: &World) -> Vec<MetricReport> {
    let mut order: Vec<&crate::world::Metric> = w.metrics.iter().collect();
    if !order.is_sorted_by_key(|m| (m.time, m.machine)) {
        order.sort_by_key(|m| (m.time, m.machine));
    }
    order
        .into_iter()
        .take(10_000)
        .map(|m| MetricReport {
            machine: w.hosts.machine_name(m.machine),
            application: m
                .app
                .map_or(String::new(), |a| w.tasks.app_names[a as usize].clone()),
            name: m.name.clone(),
            value: m.value,
        })
        .collect()
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
    for meta in w.tasks.meta.iter().filter(|m| !m.child) {
        let key = (w.hosts.machines[meta.machine as usize].group, meta.app);
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
            e.group = w.hosts.groups[group as usize].name.clone();
            e.application = w.tasks.app_names[app as usize].clone();
            ((group, app), e)
        })
        .collect();
    if !both.is_sorted_by_key(|(key, _)| *key) {
        both.sort_unstable_by_key(|(key, _)| *key);
    }
    (totals, both.into_iter().map(|(_, e)| e).collect())
}

impl Simulation {
    /// Returns how many egress queues saw traffic, and the report lines of
    /// the most eventful [`Report::MAX_QUEUES_LISTED`] of them, each with
    /// its place and its rank key ([`queue_rank`]).
    pub(super) fn queue_lines(&self) -> (u64, Vec<QueueLine>) {
        let w = self.world.as_ref().expect("world is present outside run");
        let end = w.hosts.now().as_nanos();
        let mut all = Vec::new();
        for (ni, n) in w.hosts.fabric.networks.iter().enumerate() {
            for (pi, p) in n.ports.iter().enumerate() {
                let Some(q) = p.queues.as_deref() else {
                    continue;
                };
                for (dir, wq) in [(0u32, Some(&q.up)), (1, q.down.as_deref())] {
                    let Some(wq) = wq else { continue };
                    if wq.stats.saw_traffic() {
                        let s = &wq.stats;
                        let key = (s.dropped + s.marked, s.max_packets);
                        all.push((ni as NetId, (pi as u32) << 1 | dir, key, wq));
                    }
                }
            }
        }
        let total = all.len() as u64;
        if all.len() > Report::MAX_QUEUES_LISTED {
            all.sort_by_key(|&(n, pd, key, _)| queue_rank(n, pd, key));
            all.truncate(Report::MAX_QUEUES_LISTED);
        }
        let lines = all
            .into_iter()
            .map(|(net, pd, key, wq)| {
                let (network, machine, dir) = queue_names(w, net, pd);
                let s = &wq.stats_at(end);
                let dropped_by = (w
                    .hosts
                    .fabric
                    .queue_drops
                    .range((net, pd, elvis_net::DropReason::Loss)..))
                .take_while(|((n, p, _), _)| (*n, *p) == (net, pd))
                .map(|((_, _, r), c)| (r.to_string(), *c))
                .collect();
                let line = report::QueueReport {
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
                };
                (net, pd, key, line)
            })
            .collect();
        (total, lines)
    }

    /// Returns the report lines of the egress queues that saw traffic
    /// (the most eventful [`Report::MAX_QUEUES_LISTED`], in network, port,
    /// direction order) and how many saw traffic in all.
    fn queue_reports(&self) -> (u64, Vec<report::QueueReport>) {
        let (mut total, mut all) = self.queue_lines();
        total += self.merged.queues_total;
        all.extend(self.merged.queues.iter().cloned());
        if all.len() > Report::MAX_QUEUES_LISTED {
            all.sort_by_key(|&(n, pd, key, _)| queue_rank(n, pd, key));
            all.truncate(Report::MAX_QUEUES_LISTED);
        }
        all.sort_by_key(|&(n, pd, _, _)| (n, pd));
        (total, all.into_iter().map(|(_, _, _, q)| q).collect())
    }

    /// Returns the report of what has run so far.
    pub fn report(&self, end: End) -> Report {
        let w = self.world.as_ref().expect("world is present outside run");
        let problems = problem_reports(w);
        let events = w.hosts.sched.queue.popped() + self.polls + self.merged.events;
        let wall = self.wall.as_secs_f64();
        let (queues_total, queues) = self.queue_reports();
        let (applications_total, applications) = app_reports(w);
        let tcp_connections = self.connection_reports();
        Report {
            seed: w.hosts.config.seed,
            end,
            sim_time_ns: w.hosts.now().as_nanos(),
            apps_ended_ns: w
                .tasks
                .meta
                .iter()
                .all(|m| m.daemon || m.state != TaskState::Pending)
                .then_some(w.tasks.last_end)
                .flatten()
                .map(Time::as_nanos),
            events,
            machines: w.hosts.machines.len() as u64,
            packets: report::PacketReport::new(&w.hosts.obs.stats, w.hosts.fabric.frames_sent),
            networks_total: w.hosts.fabric.networks.len() as u64,
            networks: self.network_reports(),
            routers: self.router_reports(),
            queues_total,
            queues,
            routing: report::RoutingReport {
                tables: w.hosts.stack.routing.tables.len() as u64,
                routes: w
                    .hosts
                    .stack
                    .routing
                    .tables
                    .iter()
                    .map(|t| t.len() as u64)
                    .sum(),
            },
            dhcp: report::DhcpReport::new(&w.hosts),
            applications_total,
            applications,
            problems,
            metrics: metric_reports(w),
            tcp_connections_total: w.hosts.obs.conns.created + self.merged.conns_created,
            tcp_senders: report::SenderReport::from_connections(&tcp_connections),
            tcp_connections,
            tcp_shares: self.congestion_shares(),
            performance: Performance {
                wall_time_s: wall,
                events_per_s: if wall > 0.0 {
                    events as f64 / wall
                } else {
                    0.0
                },
                speedup: if wall > 0.0 {
                    w.hosts.now().as_secs_f64() / wall
                } else {
                    0.0
                },
                peak_rss_bytes: report::peak_rss_bytes(),
                realtime: self.pacer.as_ref().map(|p| p.stats),
                parallel: None,
            },
            memory_estimate: None,
            aodv: (w.hosts.stack.on_demand)
                .then(|| report::AodvReport::new(&w.hosts, &metric_reports(w)))
                .flatten(),
            flows: report::FlowsReport::new(w),
            pfc: report::PfcReport::new(&w.hosts),
        }
    }

    /// Returns the records of the TCP connections, ended ones and those
    /// still open: the first [`trace::MAX_LISTED`] in opening order
    /// ([`trace::Record::order_key`]).
    pub(super) fn connection_records(&self) -> Vec<trace::Record> {
        use crate::socket::SocketSlot;
        let w = self.world.as_ref().expect("world is present outside run");
        let mut recs = w.hosts.obs.conns.ended.clone();
        recs.extend(self.merged.conns.iter().cloned());
        // Once the records hold more than enough, a connection opened after
        // the last one kept cannot be listed.
        let mut last_kept = (u64::MAX, MachineId::MAX, u64::MAX);
        for (m, machine) in w.hosts.machines.iter().enumerate() {
            for s in &machine.sockets {
                if let SocketSlot::Tcp(t) = s {
                    if (t.life.opened_ns, m as MachineId, t.id) > last_kept {
                        continue;
                    }
                    recs.push(trace::Record {
                        id: t.id,
                        machine: m as MachineId,
                        local: t.tcb.local,
                        remote: t.tcb.remote,
                        congestion: t.tcb.cc_name(),
                        state: t.tcb.state,
                        stats: t.tcb.stats(),
                        life: t.life,
                    });
                    if recs.len() >= 2 * trace::MAX_LISTED as usize {
                        trace::keep_first(&mut recs);
                        last_kept = recs.last().map_or(last_kept, trace::Record::order_key);
                    }
                }
            }
        }
        trace::keep_first(&mut recs);
        recs
    }

    /// Returns the report lines of the TCP connections, numbered in
    /// opening order.
    fn connection_reports(&self) -> Vec<report::ConnectionReport> {
        let w = self.world.as_ref().expect("world is present outside run");
        self.connection_records()
            .into_iter()
            .enumerate()
            .map(|(rank, r)| report::ConnectionReport {
                id: rank as u64,
                machine: w.hosts.machine_name(r.machine),
                local: r.local.to_string(),
                remote: r.remote.to_string(),
                congestion: r.congestion,
                state: r.state,
                opened_ns: r.life.opened_ns,
                last_ack_ns: r.life.last_ack_ns,
                throughput_bps: r.life.throughput_bps(r.stats.bytes_acked),
                sent_bps: if r.life.last_ack_ns > r.life.opened_ns {
                    report::bps(r.stats.bytes_sent, r.life.last_ack_ns - r.life.opened_ns)
                } else {
                    0
                },
                stats: r.stats,
            })
            .collect()
    }

    /// Returns the bytes acknowledged per congestion control algorithm.
    fn congestion_shares(&self) -> Vec<report::CongestionShare> {
        use crate::socket::SocketSlot;
        let w = self.world.as_ref().expect("world is present outside run");
        let mut totals = w.hosts.obs.conns.ended_totals.clone();
        for machine in &w.hosts.machines {
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

    /// Returns the report lines of the routers (machines that forward).
    fn router_reports(&self) -> Vec<RouterReport> {
        let w = self.world.as_ref().expect("world is present outside run");
        let mut out = Vec::new();
        for (m, machine) in w.hosts.machines.iter().enumerate() {
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
                        network: w.hosts.fabric.networks[i.net as usize].cfg.name.clone(),
                        address: i.ip.to_string(),
                        counters: of(k),
                    }
                })
                .collect();
            out.push(RouterReport {
                machine: w.hosts.machine_name(m as MachineId),
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
        let listed = report::busiest(w.hosts.fabric.networks.len(), max, |k| {
            let s = &w.hosts.fabric.networks[k].stats;
            (s.frames_sent, s.queue_drops)
        });
        listed
            .into_iter()
            .map(|k| {
                let n = &w.hosts.fabric.networks[k];
                NetworkReport {
                    name: n.cfg.name.clone(),
                    kind: n.cfg.kind,
                    bandwidth_bps: n.cfg.bandwidth_bps,
                    latency_ns: n.cfg.latency_ns,
                    ports: n.ports.len() as u64,
                    stats: n.stats.clone(),
                    wireless: n.wireless.as_deref().map(|r| r.stats.clone()),
                }
            })
            .collect()
    }
}

/// A queue's report line with its network, `port << 1 | direction` and
/// rank key (drops plus marks, most packets waiting).
pub(crate) type QueueLine = (NetId, u32, (u64, u32), report::QueueReport);

/// The order in which queues are listed when there are too many: most
/// drops and marks first, then the deepest; ties by place.
fn queue_rank(n: NetId, pd: u32, key: (u64, u32)) -> (std::cmp::Reverse<(u64, u32)>, NetId, u32) {
    (std::cmp::Reverse(key), n, pd)
}

/// Returns the network name, machine name and direction (`nic`: the
/// machine's NIC; `switch`: the switch port towards the machine) of a
/// queue.
pub(super) fn queue_names(w: &World, net: NetId, port_dir: u32) -> (String, String, &'static str) {
    let n = &w.hosts.fabric.networks[net as usize];
    let machine = n.ports[(port_dir >> 1) as usize].machine;
    let dir = if port_dir & 1 == 0 { "nic" } else { "switch" };
    (n.cfg.name.clone(), w.hosts.machine_name(machine), dir)
}
