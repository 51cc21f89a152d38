//! The world: every piece of state of a running simulation, in arenas.
//!
//! `World` is owned by one thread. During [`crate::Simulation::run`] it sits
//! in a thread-local `RefCell`, borrowed for one event or one system call at
//! a time; application futures are kept outside it so that polling one never
//! holds a borrow.

use crate::executor::{TaskId, TaskState, TaskTable};
use crate::machine::IfaceId;
use crate::machine::{Group, Machine, MachineId};
use crate::net::{FrameId, NetEvent, NetId, QueueRef};
use crate::report::{DropReason, Stats};
use elvis_kernel::{EventQueue, Time};
use elvis_message::Message;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::mem::ManuallyDrop;

/// Something that happens at an instant.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Event {
    /// Wake an application task (a timer it set expired).
    Wake(TaskId),
    /// A queue finished serializing its head frame.
    TxDone(QueueRef),
    /// A shaping discipline's wait is over: try the queue's wire again.
    TxRetry(QueueRef),
    /// The NIC at `port` of `net` has drained to its low watermark: wake
    /// the senders waiting for room (see `net`, "Back-pressure").
    NicRoom { net: NetId, port: u32 },
    /// A frame reached the switch fabric of `net`, coming from `port`.
    AtSwitch {
        net: NetId,
        from: u32,
        frame: FrameId,
    },
    /// A frame reached the machine attached to `port` of `net`.
    /// `from` is the sender's port when its NIC slot is freed by the
    /// delivery (ideal networks), else `net::NO_PORT`.
    ///
    /// (The network layer's events, [`NetEvent`], are kept flat here:
    /// an event queue entry stays as small as before the split.)
    Deliver {
        net: NetId,
        port: u32,
        frame: FrameId,
        from: u32,
    },
    /// A protocol timer of a machine fired.
    Timer {
        machine: MachineId,
        timer: crate::stack::Timer,
    },
}

/// The state of a run, in named parts: scheduling, the arenas (machines
/// here, networks and frames in `fabric`), what the protocol stacks
/// share, the observers, and the run's configuration.
pub(crate) struct World {
    /// The event queue and the application tasks.
    pub sched: Scheduling,
    pub machines: Vec<Machine>,
    pub groups: Vec<Group>,
    /// Group name → group index; looked up, never iterated (a star of a
    /// million one-machine groups inserts a million names).
    pub group_by_name: rustc_hash::FxHashMap<String, u32>,
    /// The network layer: networks, frames in flight, captures, queues.
    pub fabric: elvis_net::Fabric,
    /// State the machines' stacks share, read-only while a run goes on
    /// except for TCP's scratch list and the NIC receive states.
    pub stack: StackShared,
    /// Counters shared across machines (the `capture` app's `counter=`),
    /// an explicitly shared object.
    pub counters: BTreeMap<String, Counter>,
    /// What the run records for its report.
    pub obs: Observers,
    /// Settings that change how the run is computed, never its results.
    pub config: RunConfig,
}

/// The event queue and the application tasks.
pub(crate) struct Scheduling {
    pub queue: EventQueue<Event>,
    pub tasks: TaskTable,
    /// Tasks woken and not yet polled, in wake order.
    pub ready: crate::executor::ReadyQueue,
    /// The machine whose code is running (for crash attribution).
    pub current_machine: Option<MachineId>,
    /// Machines that crashed this event and still need cleaning up.
    pub crashed: Vec<(MachineId, String)>,
}

/// State the machines' protocol stacks share.
pub(crate) struct StackShared {
    /// TCP settings.
    pub tcp: std::rc::Rc<crate::stack::tcp::TcpConfig>,
    /// Scratch list for the segments a TCP connection produces, kept to
    /// save an allocation per call (taken while in use).
    pub tcp_out: Vec<crate::stack::tcp::tcb::Segment>,
    /// Routing tables (empty unless routes or routers were configured),
    /// shared read-only.
    pub routing: crate::stack::route::Routing,
    /// TTL of datagrams machines originate (`net.ipv4.ip_default_ttl`).
    pub default_ttl: u8,
    /// Point-to-point link endpoints by IPv4 address: the links (network,
    /// port) that carry the address. Lets a router with many interfaces
    /// find a neighbour on its links without a hash lookup per interface
    /// (see `stack::ipv4::route_flow`).
    pub link_neighbours: rustc_hash::FxHashMap<u32, smallvec::SmallVec<[(NetId, u32); 1]>>,
    /// For each machine with many interfaces (more than
    /// `stack::ipv4::MANY_IFACES`, a router or switch): its interfaces on
    /// networks other than point-to-point links, which `link_neighbours`
    /// does not index. With both, such a machine finds a neighbour or one
    /// of its own addresses without looking at every interface.
    pub nonlink_ifaces: rustc_hash::FxHashMap<MachineId, smallvec::SmallVec<[IfaceId; 2]>>,
    /// ICMP error rate limits (Linux's defaults).
    pub icmp_limit: crate::stack::icmp_limit::IcmpRateLimit,
    /// NIC offload settings and receive states (`stack::offload`).
    pub nics: crate::stack::offload::NicTable,
    /// Counts the changes of routes and interfaces made between runs: a
    /// TCP connection's cached route (`stack::tcp::dst`) is good
    /// while the epoch it was resolved in lasts.
    pub dst_epoch: u32,
}

/// What a run records for its report.
#[derive(Default)]
pub(crate) struct Observers {
    /// Packet counters and drops of the stacks.
    pub stats: Stats,
    /// Results published by applications.
    pub metrics: Vec<Metric>,
    /// TCP connections: ids, ended connections, time series.
    pub conns: crate::stack::tcp::trace::ConnLog,
    /// Frames forwarded through the routers' fast path.
    pub fast_forwarded: u64,
    /// Segments TCP sent and received on its one-pass paths.
    pub tcp_fast_sent: u64,
    pub tcp_fast_received: u64,
}

/// Settings that change how a run is computed, never what it computes
/// (each fast path is checked against the path it short-cuts).
pub(crate) struct RunConfig {
    /// The seed every random stream derives from.
    pub seed: u64,
    /// Routers use their fast path (`stack::forward::forward_frame`).
    pub fast_forward: bool,
    /// Departure-time queues put frames for a coalescing host into its
    /// receive ring when they are queued (`stack::offload`).
    pub rx_ring_ahead: bool,
    /// TCP sends and receives common segments on its one-pass paths
    /// (`stack::tcp::dst`, `stack::tcp::receive_frame`).
    pub tcp_fast_path: bool,
}

/// A value published by an application.
pub(crate) struct Metric {
    pub machine: MachineId,
    pub app: Option<u32>,
    pub name: String,
    pub value: f64,
}

/// A counter shared across machines (the Elvis `capture` app's
/// `counter=` option).
#[derive(Default)]
pub(crate) struct Counter {
    pub value: u64,
    pub waiters: Vec<TaskId>,
}

impl World {
    pub fn new(seed: u64) -> Self {
        World {
            sched: Scheduling {
                queue: EventQueue::new(),
                tasks: TaskTable::default(),
                ready: Default::default(),
                current_machine: None,
                crashed: Vec::new(),
            },
            machines: Vec::new(),
            groups: Vec::new(),
            group_by_name: Default::default(),
            fabric: Default::default(),
            stack: StackShared {
                tcp: Default::default(),
                tcp_out: Vec::new(),
                routing: Default::default(),
                default_ttl: crate::stack::ipv4::DEFAULT_TTL,
                link_neighbours: Default::default(),
                nonlink_ifaces: Default::default(),
                icmp_limit: Default::default(),
                nics: Default::default(),
                dst_epoch: 0,
            },
            counters: BTreeMap::new(),
            obs: Observers::default(),
            config: RunConfig {
                seed,
                fast_forward: true,
                rx_ring_ahead: true,
                tcp_fast_path: true,
            },
        }
    }

    /// Returns the current virtual time.
    pub fn now(&self) -> Time {
        self.sched.queue.now()
    }

    /// Marks `task` runnable (once, however often it is woken). Woken tasks
    /// are polled right after the event that woke them.
    #[inline(always)]
    pub fn wake(&mut self, task: TaskId) {
        if self.sched.tasks.mark_queued(task) {
            self.sched.ready.push(task);
        }
    }

    /// Counts a dropped packet.
    pub fn drop_packet(&mut self, reason: DropReason) {
        self.obs.stats.drop(reason);
    }

    /// Returns the printable name of a machine (`name` or `name-i`).
    pub fn machine_name(&self, m: MachineId) -> String {
        let machine = &self.machines[m as usize];
        let group = &self.groups[machine.group as usize];
        group.instance_name(m - group.first)
    }

    /// Marks the machines listed in `crashed` as crashed (their sockets
    /// closed, frames to them dropped) and their pending tasks as crashed;
    /// returns those tasks so that the caller drops their futures.
    pub fn mark_crashed(&mut self) -> Vec<TaskId> {
        let mut dead = Vec::new();
        for (m, msg) in std::mem::take(&mut self.sched.crashed) {
            let machine = &mut self.machines[m as usize];
            if machine.crashed {
                continue;
            }
            machine.crashed = true;
            // Its connections end here: keep their records for the report.
            for slot in machine.sockets.iter_mut() {
                if let crate::socket::SocketSlot::Tcp(t) = slot {
                    self.obs.conns.end(t.id, m, &mut t.tcb, t.life);
                }
            }
            machine.sockets.clear();
            if let Some(e) = machine.ext.as_deref_mut() {
                e.tcp = Default::default();
                e.free_hint = 0;
            }
            let now = self.now();
            for (i, meta) in self.sched.tasks.meta.iter_mut().enumerate() {
                if meta.machine == m && meta.state == TaskState::Pending {
                    meta.state = TaskState::Crashed;
                    self.sched.tasks.last_end = Some(now);
                    self.sched.tasks
                        .errors
                        .push((i as TaskId, format!("machine crashed: {msg}")));
                    dead.push(i as TaskId);
                }
            }
        }
        dead
    }

    /// Dispatches one non-poll event.
    pub fn handle(&mut self, event: Event) {
        match event {
            Event::Wake(task) => self.wake(task),
            Event::TxDone(q) => elvis_net::tx_done(self, q),
            Event::TxRetry(q) => elvis_net::tx_retry(self, q),
            Event::NicRoom { net, port } => elvis_net::nic_room_ready(self, net, port),
            Event::AtSwitch { net, from, frame } => elvis_net::at_switch(self, net, from, frame),
            Event::Deliver {
                net,
                port,
                frame,
                from,
            } => elvis_net::deliver(self, net, port, frame, from),
            Event::Timer { machine, timer } => {
                self.sched.current_machine = Some(machine);
                crate::stack::on_timer(self, machine, timer);
            }
        }
    }
}

impl From<NetEvent> for Event {
    #[inline(always)]
    fn from(e: NetEvent) -> Event {
        match e {
            NetEvent::TxDone(q) => Event::TxDone(q),
            NetEvent::TxRetry(q) => Event::TxRetry(q),
            NetEvent::NicRoom { net, port } => Event::NicRoom { net, port },
            NetEvent::AtSwitch { net, from, frame } => Event::AtSwitch { net, from, frame },
            NetEvent::Deliver {
                net,
                port,
                frame,
                from,
            } => Event::Deliver {
                net,
                port,
                frame,
                from,
            },
        }
    }
}

/// The network layer runs on the world: its state is `fabric`, its events
/// go on the one event queue (each network on its own lane, after the
/// machines'), and what reaches a machine goes to its stack.
impl elvis_net::Context for World {
    #[inline(always)]
    fn fabric(&self) -> &elvis_net::Fabric {
        &self.fabric
    }

    #[inline(always)]
    fn fabric_mut(&mut self) -> &mut elvis_net::Fabric {
        &mut self.fabric
    }

    #[inline(always)]
    fn now(&self) -> Time {
        self.sched.queue.now()
    }

    #[inline(always)]
    fn schedule(&mut self, at: Time, event: NetEvent) {
        let lane = (self.machines.len() as u32).wrapping_add(event.net());
        self.sched.queue.schedule(at, lane, event.into());
    }

    #[inline]
    fn dropped(&mut self, reason: elvis_net::DropReason) {
        self.obs.stats.drop(DropReason::Net(reason));
    }

    #[inline]
    fn arrived(&mut self, net: NetId, port: u32, id: FrameId) {
        crate::stack::frame_arrived(self, net, port, id);
    }

    #[inline]
    fn received(&mut self, net: NetId, port: u32, frame: &mut Message, nested: bool) {
        if nested {
            crate::stack::frame_received_nested(self, net, port, frame);
        } else {
            crate::stack::frame_received(self, net, port, frame);
        }
    }

    #[inline]
    fn take_early(&mut self, machine: MachineId, iface: IfaceId, id: FrameId, at_ns: u64) -> bool {
        crate::stack::offload::arrives_later(self, machine, iface, id, at_ns)
    }

    #[inline]
    fn wake_task(&mut self, task: TaskId) {
        self.wake(task);
    }

    fn room_for_stack(&mut self, machine: MachineId) {
        let timer = crate::stack::Timer::ForeignRoom;
        self.sched.queue.schedule_now(Event::Timer { machine, timer });
    }

    fn room_for_endpoint(&mut self, machine: MachineId, slot: u32) {
        let timer = crate::stack::Timer::TcpKick { slot };
        self.sched.queue.schedule_now(Event::Timer { machine, timer });
    }
}

thread_local! {
    /// The running world. `ManuallyDrop`, so that the slot has no
    /// destructor: a thread-local with one is registered on first use and
    /// every access checks that state first (a call per socket operation,
    /// 13 instructions), while one without is a plain load. The slot is
    /// empty outside [`install`] … [`uninstall`]; a thread that ends in
    /// between (a panic escaping a run) leaks its world instead of
    /// dropping it.
    static WORLD: ManuallyDrop<RefCell<Option<Box<World>>>> =
        const { ManuallyDrop::new(RefCell::new(None)) };
}

/// Why the world could not be reached from application code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unavailable {
    /// No simulation is running on this thread.
    NotRunning,
    /// The world is already borrowed (a socket call made from inside
    /// another one, e.g. from a `Drop` during a system call).
    Busy,
}

/// Runs `f` with the running world, if any.
pub(crate) fn try_with_world<R>(f: impl FnOnce(&mut World) -> R) -> Result<R, Unavailable> {
    WORLD.with(|cell| {
        let mut guard = cell.try_borrow_mut().map_err(|_| Unavailable::Busy)?;
        let world = guard.as_mut().ok_or(Unavailable::NotRunning)?;
        Ok(f(world))
    })
}

/// Runs `f` with the running world, or `unavailable` when there is none
/// (or it is already borrowed), and returns what either returns.
///
/// The same as [`try_with_world`] for callers whose result is large (a
/// socket call returning a received message): the result is built in
/// place, not wrapped in a `Result` and moved out again.
#[inline]
pub(crate) fn with_world_or<R>(
    f: impl FnOnce(&mut World) -> R,
    unavailable: impl FnOnce(Unavailable) -> R,
) -> R {
    WORLD.with(|cell| match cell.try_borrow_mut() {
        Ok(mut guard) => match guard.as_mut() {
            Some(world) => f(world),
            None => unavailable(Unavailable::NotRunning),
        },
        Err(_) => unavailable(Unavailable::Busy),
    })
}

/// Runs `f` with this thread's world cell itself (for the run loop, which
/// borrows it once per turn and lets go of it while a task is polled).
pub(crate) fn with_cell<R>(f: impl FnOnce(&RefCell<Option<Box<World>>>) -> R) -> R {
    WORLD.with(|cell| f(cell))
}

/// Puts `world` into this thread's slot for the duration of a run.
///
/// Returns the world back if another simulation is already running here.
pub(crate) fn install(world: Box<World>) -> Result<(), Box<World>> {
    WORLD.with(|cell| {
        let Ok(mut guard) = cell.try_borrow_mut() else {
            return Err(world);
        };
        if guard.is_some() {
            return Err(world);
        }
        *guard = Some(world);
        Ok(())
    })
}

/// Takes the world back out of this thread's slot.
pub(crate) fn uninstall() -> Option<Box<World>> {
    WORLD.with(|cell| cell.borrow_mut().take())
}
