//! A [`Simulation`] as one partition of a parallel run
//! ([`crate::parallel`]): entering a partition (dropping what it does not
//! own), running one window of virtual time, handing frames to the other
//! partitions, and the plain-data [`Outcome`] the first partition absorbs
//! into its own world to write the one report.

use super::reporting::QueueLine;
use super::run::Heartbeat;
use super::{RunLimits, Simulation};
use crate::executor::{TaskId, TaskMeta};
use crate::machine::MachineId;
use crate::net::NetId;
use crate::parallel::Plan;
use crate::report::End;
use crate::stack::tcp::trace;
use crate::world::{Event, Metric, World};
use elvis_kernel::Time;
use elvis_stack::counters::Stats;
use elvis_stack::partition::{CrossFrame, Partition};
use std::time::Instant;

/// What the other partitions of a parallel run hand to the first one's
/// report, beyond what is merged into its world directly.
#[derive(Default)]
pub(crate) struct Merged {
    /// Events and task polls.
    pub events: u64,
    /// Connection records (first [`trace::MAX_LISTED`] of each partition).
    pub conns: Vec<trace::Record>,
    pub conns_created: u64,
    /// Report lines of the queues that saw traffic (the most eventful
    /// of each partition), and how many saw traffic.
    pub queues: Vec<QueueLine>,
    pub queues_total: u64,
}

/// What one partition did, as plain data that crosses threads: its
/// machines' tasks, metrics and counters, its queues' and routers'
/// lines, its connections.
pub(crate) struct Outcome {
    pub events: u64,
    pub now: Time,
    /// Tasks of its machines: (id in its world, record).
    pub tasks: Vec<(TaskId, TaskMeta)>,
    pub errors: Vec<(TaskId, String, Time)>,
    pub last_end: Option<Time>,
    pub metrics: Vec<Metric>,
    pub stats: Stats,
    pub frames_sent: u64,
    pub nets: Vec<(NetId, elvis_net::NetStats)>,
    pub queues: Vec<QueueLine>,
    pub queues_total: u64,
    pub routers: Vec<(MachineId, Vec<elvis_stack::forward::IfaceCounters>)>,
    pub conns: Vec<trace::Record>,
    pub conns_created: u64,
    pub cc_totals: trace::Totals,
}

/// Returns the partition that runs event `e` of world `w`.
fn event_part(w: &World, plan: &Plan, e: &Event) -> u16 {
    let machine = |m: MachineId| plan.machine_part[m as usize];
    match *e {
        Event::Wake(t) => w
            .tasks
            .meta
            .get(t as usize)
            .map_or(0, |meta| machine(meta.machine)),
        Event::Timer { machine: m, .. } => machine(m),
        Event::TxDone(q) | Event::TxRetry(q) | Event::PfcRefresh(q) | Event::Pfc { q, .. } => {
            plan.port_part(w, q.net, q.port_dir >> 1)
        }
        Event::NicRoom { net, port } | Event::Deliver { net, port, .. } => {
            plan.port_part(w, net, port)
        }
        Event::AtSwitch { net, from, .. } => plan.port_part(w, net, from),
        Event::Wireless(t) => plan.port_part(w, t.net, 0),
    }
}

impl Simulation {
    /// Makes this simulation run partition `me` of `plan` from now on:
    /// the events and woken tasks of other partitions' machines are
    /// dropped (their own copies of the world run them), and frames for
    /// them leave through the partition's outbox.
    pub(crate) fn enter_partition(&mut self, me: u16, plan: &Plan) {
        let w = self.world.as_mut().expect("world is present outside run");
        w.hosts.part = Some(Box::new(Partition::new(me, plan.parts, plan.cut.clone())));
        let mut queue = std::mem::take(&mut w.hosts.sched.queue);
        queue.retain(|e| event_part(w, plan, e) == me);
        w.hosts.sched.queue = queue;
        let meta = &w.tasks.meta;
        w.hosts.sched.wakeups.retain(|t| {
            meta.get(t as usize)
                .is_none_or(|m| plan.machine_part[m.machine as usize] == me)
        });
    }

    /// Prepares the windows of a parallel run: the routes, the world in
    /// this thread's slot, crashes caught. Returns a route error.
    pub(crate) fn begin_windows(&mut self) -> Option<String> {
        elvis_stack::crash::install_panic_hook();
        let mut route_error = None;
        if self.w().hosts.stack.routing.dirty {
            route_error = self.build_routes().err().map(|e| e.to_string());
        }
        let world = self.world.take().expect("world is present outside run");
        if let Err(world) = crate::world::install(world) {
            self.world = Some(world);
            return Some("a simulation cannot run inside another on the same thread".into());
        }
        elvis_stack::crash::capture_panics(true);
        route_error
    }

    /// Runs every event due up to `until` (inclusive) and the tasks they
    /// wake.
    pub(crate) fn run_window(&mut self, until: Time, start: Instant) -> End {
        let limits = RunLimits { until: Some(until) };
        self.run_loop(limits, &mut |_| {}, &Heartbeat::unwatched(), start)
    }

    /// Returns the events and task polls so far, outside a run.
    pub(crate) fn events_so_far(&self) -> u64 {
        self.world
            .as_ref()
            .map_or(0, |w| w.hosts.sched.queue.popped())
            + self.polls
    }

    /// Returns the events and task polls so far, during a run.
    pub(crate) fn events_running(&self) -> u64 {
        crate::world::try_with_world(|w| w.hosts.sched.queue.popped()).unwrap_or(0) + self.polls
    }

    /// Takes the frames this partition sent to others in the last window.
    pub(crate) fn take_outbox(&mut self) -> Vec<Vec<CrossFrame>> {
        crate::world::try_with_world(|w| {
            w.hosts.part.as_deref_mut().map(|p| {
                let parts = p.outbox.len();
                std::mem::replace(&mut p.outbox, (0..parts).map(|_| Vec::new()).collect())
            })
        })
        .ok()
        .flatten()
        .unwrap_or_default()
    }

    /// Schedules frames other partitions sent to this one.
    pub(crate) fn receive(&mut self, frames: impl Iterator<Item = CrossFrame>) {
        let _ = crate::world::try_with_world(|w| {
            for cf in frames {
                w.hosts.receive_cross(cf);
            }
        });
    }

    /// Moves the clock to `t` when nothing is due before (the end of a
    /// run with a time limit).
    pub(crate) fn advance_to(&mut self, t: Time) {
        let _ = crate::world::try_with_world(|w| w.hosts.sched.queue.advance_to(t));
    }

    /// Returns when this partition's next event is due while it runs.
    pub(crate) fn peek_running(&mut self) -> Option<Time> {
        crate::world::try_with_world(|w| w.hosts.sched.queue.peek_time())
            .ok()
            .flatten()
    }

    /// Ends the windows: the world back out of the thread's slot, the
    /// captures closed.
    pub(crate) fn end_windows(&mut self, wall: std::time::Duration) {
        crate::executor::set_current_task(None);
        elvis_stack::crash::capture_panics(false);
        self.wall += wall;
        let mut world = crate::world::uninstall().expect("world installed for the run");
        let end_time = world.hosts.now();
        world.hosts.fabric.pcap.close(end_time);
        self.world = Some(world);
    }

    /// Returns what partition `me` of `plan` did, for the first partition
    /// to absorb.
    pub(crate) fn outcome(&self, me: u16, plan: &Plan) -> Outcome {
        let w = self.world.as_ref().expect("world is present outside run");
        let mine = |m: MachineId| plan.machine_part[m as usize] == me;
        let tasks: Vec<(TaskId, TaskMeta)> = (w.tasks.meta.iter().enumerate())
            .filter(|(_, m)| mine(m.machine))
            .map(|(i, m)| (i as TaskId, m.clone()))
            .collect();
        let nets = (w.hosts.fabric.networks.iter().enumerate())
            .filter(|(_, n)| n.stats.frames_sent + n.stats.frames_delivered > 0)
            .map(|(i, n)| (i as NetId, n.stats.clone()))
            .collect();
        let routers = (w.hosts.machines.iter().enumerate())
            .filter(|(m, machine)| machine.forward && mine(*m as MachineId))
            .filter_map(|(m, machine)| {
                let e = machine.ext.as_deref()?;
                Some((m as MachineId, e.forwarding.clone()))
            })
            .collect();
        let mut cc_totals = w.hosts.obs.conns.ended_totals.clone();
        for machine in &w.hosts.machines {
            for s in &machine.sockets {
                if let crate::socket::SocketSlot::Tcp(t) = s {
                    trace::add_total(
                        &mut cc_totals,
                        t.tcb.cc_name(),
                        t.tcb.stats.bytes_acked,
                        t.life,
                    );
                }
            }
        }
        let (queues_total, queues) = self.queue_lines();
        Outcome {
            events: w.hosts.sched.queue.popped() + self.polls,
            now: w.hosts.now(),
            tasks,
            errors: w.tasks.errors.clone(),
            last_end: w.tasks.last_end,
            metrics: w.metrics.clone(),
            stats: w.hosts.obs.stats.clone(),
            frames_sent: w.hosts.fabric.frames_sent,
            nets,
            queues,
            queues_total,
            routers,
            conns: self.connection_records(),
            conns_created: w.hosts.obs.conns.created,
            cc_totals,
        }
    }

    /// Takes another partition's outcome into this (the first) one's
    /// world and report. `built` is the number of tasks made before the
    /// run, the same in every partition's world.
    pub(crate) fn absorb(&mut self, o: Outcome, built: usize) {
        let w = self.world.as_mut().expect("world is present outside run");
        let mut renumber = rustc_hash::FxHashMap::default();
        for (id, meta) in o.tasks {
            if (id as usize) < built {
                w.tasks.meta[id as usize] = meta;
            } else {
                renumber.insert(id, w.tasks.meta.len() as TaskId);
                w.tasks.meta.push(meta);
            }
        }
        for (t, msg, at) in o.errors {
            let t = renumber.get(&t).copied().unwrap_or(t);
            w.tasks.errors.push((t, msg, at));
        }
        w.tasks.last_end = w.tasks.last_end.max(o.last_end);
        w.metrics.extend(o.metrics);
        w.hosts.obs.stats.merge(&o.stats);
        w.hosts.fabric.frames_sent += o.frames_sent;
        for (net, s) in o.nets {
            w.hosts.fabric.networks[net as usize].stats.merge(&s);
        }
        for (m, counters) in o.routers {
            w.hosts.machines[m as usize].ext().forwarding = counters;
        }
        for (cc, (n, bytes, bps)) in o.cc_totals {
            let t = w
                .hosts
                .obs
                .conns
                .ended_totals
                .entry(cc)
                .or_insert((0, 0, 0));
            t.0 += n;
            t.1 += bytes;
            t.2 += bps;
        }
        if o.now > w.hosts.now() {
            w.hosts.sched.queue.advance_to(o.now);
        }
        self.merged.events += o.events;
        self.merged.conns.extend(o.conns);
        self.merged.conns_created += o.conns_created;
        self.merged.queues.extend(o.queues);
        self.merged.queues_total += o.queues_total;
    }

    /// Returns the number of tasks made so far.
    pub(crate) fn task_count(&self) -> usize {
        self.world.as_ref().map_or(0, |w| w.tasks.meta.len())
    }

    /// Takes the stop conditions (interrupt flag, wall limit) out of this
    /// simulation, for the driver of a parallel run to check.
    pub(crate) fn take_stop(&mut self) -> crate::stop::Stop {
        std::mem::take(&mut self.stop)
    }

    /// Returns whether this run is paced to the wall clock.
    pub(crate) fn paced(&self) -> bool {
        self.pacer.is_some()
    }

    /// Returns the world, outside a run.
    pub(crate) fn world_ref(&self) -> &World {
        self.world.as_ref().expect("world is present outside run")
    }
}
