//! The hosts: every machine, the networks between them (the network
//! layer's `Fabric`) and the clock, the state protocol code runs on.
//!
//! The layer above (sockets, applications, the run loop) owns a `Hosts`
//! and its own task records. The stack knows a task only as a [`TaskId`]
//! to wake ([`Hosts::wake`]): a socket became readable or writable, a NIC
//! has room, a timer expired.

use crate::counters::{DropReason, Stats};
use crate::machine::{Group, IfaceId, Machine, MachineId};
use elvis_kernel::{EventQueue, Time};
use elvis_message::Message;
use elvis_net::{FrameId, NetEvent, NetId, QueueRef};

/// Index of a task of the layer above (an application), woken by id.
pub type TaskId = u32;

/// Something that happens at an instant.
#[derive(Clone, Copy, Debug)]
pub enum Event {
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
        timer: crate::Timer,
    },
    /// A timer of a wireless network's MAC.
    Wireless(elvis_net::wireless::Timer),
    /// A PFC frame reached the NIC or switch port of queue `q`.
    Pfc { q: QueueRef, frame: FrameId },
    /// A PFC PAUSE on queue `q` is due for a refresh.
    PfcRefresh(QueueRef),
}

/// The hosts and the networks between them, in named parts: scheduling,
/// the arenas (machines here, networks and frames in `fabric`), what the
/// protocol stacks share, the observers, and the run's configuration.
pub struct Hosts {
    /// The event queue and the tasks woken.
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
    /// What the stacks record for the report.
    pub obs: Observers,
    /// Settings that change how the run is computed, never its results.
    pub config: RunConfig,
    /// Set when this world runs one partition of a parallel run.
    pub part: Option<Box<crate::partition::Partition>>,
}

/// The event queue and the tasks woken.
pub struct Scheduling {
    pub queue: EventQueue<Event>,
    /// Tasks woken and not yet polled.
    pub wakeups: Wakeups,
    /// The machine whose code is running (for crash attribution).
    pub current_machine: Option<MachineId>,
    /// Machines that crashed this event and still need cleaning up.
    pub crashed: Vec<(MachineId, String)>,
    /// Events queued that do not keep a run going on their own (DHCP
    /// lease timers): a run whose queue holds only these is idle.
    pub background: u64,
}

/// State the machines' protocol stacks share.
pub struct StackShared {
    /// TCP settings.
    pub tcp: std::rc::Rc<crate::tcp::TcpConfig>,
    /// Scratch list for the segments a TCP connection produces, kept to
    /// save an allocation per call (taken while in use).
    pub tcp_out: Vec<crate::tcp::tcb::Segment>,
    /// Routing tables (empty unless routes or routers were configured),
    /// shared read-only.
    pub routing: crate::route::Routing,
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
    pub icmp_limit: crate::icmp_limit::IcmpRateLimit,
    /// NIC offload settings and receive states (`stack::offload`).
    pub nics: crate::offload::NicTable,
    /// Counts the changes of routes and interfaces made between runs: a
    /// TCP connection's cached route (`stack::tcp::dst`) is good
    /// while the epoch it was resolved in lasts.
    pub dst_epoch: u32,
    /// The special ports of each network for DHCP broadcasts
    /// (`crate::dhcp::fanout`).
    pub fanout: crate::dhcp::fanout::Fanout,
    /// DHCP clients, servers and relays enabled (0: DHCP is not in the run).
    pub dhcp_roles: u64,
    /// Some machine routes on demand (`crate::ondemand`; AODV): the one
    /// flag IPv4 tests before it looks for the machine's protocol.
    pub on_demand: bool,
}

/// What the stacks record for the run's report.
#[derive(Default)]
pub struct Observers {
    /// Packet counters and drops of the stacks.
    pub stats: Stats,
    /// TCP connections: ids, ended connections, time series.
    pub conns: crate::tcp::trace::ConnLog,
    /// Frames forwarded through the routers' fast path.
    pub fast_forwarded: u64,
    /// Segments TCP sent and received on its one-pass paths.
    pub tcp_fast_sent: u64,
    pub tcp_fast_received: u64,
    /// DHCP messages and leases.
    pub dhcp: crate::dhcp::Stats,
    /// AODV messages, discoveries and datagrams held.
    pub aodv: crate::aodv::Stats,
}

/// Settings that change how a run is computed, never what it computes
/// (each fast path is checked against the path it short-cuts).
pub struct RunConfig {
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
    /// A DHCP broadcast on a large ideal LAN is copied only to the ports
    /// that would do more than drop it (`stack::dhcp::fanout`).
    pub broadcast_select: bool,
}

/// Tasks woken and not yet polled, in wake order, and which tasks may be
/// woken: the readiness interface between the stack and the executor
/// above, in task ids only.
#[derive(Default)]
pub struct Wakeups {
    ready: ReadyQueue,
    /// Per task: idle, queued, or ended.
    state: Vec<WakeState>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WakeState {
    Idle,
    Queued,
    Ended,
}

impl Wakeups {
    /// Registers task `task` (ids are handed out in order from 0).
    pub fn add(&mut self, task: TaskId) {
        let i = task as usize;
        if self.state.len() <= i {
            self.state.resize(i + 1, WakeState::Ended);
        }
        self.state[i] = WakeState::Idle;
    }

    /// Marks `task` ended: waking it does nothing any more.
    pub fn retire(&mut self, task: TaskId) {
        if let Some(s) = self.state.get_mut(task as usize) {
            *s = WakeState::Ended;
        }
    }

    /// Queues `task` (once, however often it is woken; never an ended or
    /// unknown one).
    #[inline(always)]
    pub fn wake(&mut self, task: TaskId) {
        if let Some(s) = self.state.get_mut(task as usize) {
            if *s == WakeState::Idle {
                *s = WakeState::Queued;
                self.ready.push(task);
            }
        }
    }

    /// Keeps queued only the tasks for which `keep` is true, in order;
    /// the others go back to idle.
    pub fn retain(&mut self, mut keep: impl FnMut(TaskId) -> bool) {
        let mut kept = ReadyQueue::default();
        while let Some(t) = self.ready.pop() {
            if keep(t) {
                kept.push(t);
            } else if let Some(s) = self.state.get_mut(t as usize) {
                *s = WakeState::Idle;
            }
        }
        self.ready = kept;
    }

    /// Takes the task woken first (it may be woken again from now on).
    #[inline]
    pub fn pop(&mut self) -> Option<TaskId> {
        let task = self.ready.pop()?;
        let s = &mut self.state[task as usize];
        if *s == WakeState::Queued {
            *s = WakeState::Idle;
        }
        Some(task)
    }
}

/// Tasks woken and not yet polled, in wake order.
///
/// The oldest lies in an inline slot, the rest in a `VecDeque` used only
/// while one already waits: an event almost always wakes a single task
/// (the one parked on the socket that received), and handing it to the run
/// loop is then a write and a read of `first`, without the ring buffer's
/// index arithmetic. `first` is always older than all of `rest`.
#[derive(Default)]
pub struct ReadyQueue {
    first: Option<TaskId>,
    rest: std::collections::VecDeque<TaskId>,
}

impl ReadyQueue {
    /// Appends `task` (the caller keeps a task from being queued twice).
    #[inline]
    pub fn push(&mut self, task: TaskId) {
        if self.first.is_none() && self.rest.is_empty() {
            self.first = Some(task);
        } else {
            self.rest.push_back(task);
        }
    }

    /// Takes the task woken first.
    #[inline]
    pub fn pop(&mut self) -> Option<TaskId> {
        match self.first.take() {
            Some(t) => Some(t),
            // Checked here so that the common empty case makes no call.
            None if self.rest.is_empty() => None,
            None => self.rest.pop_front(),
        }
    }
}

impl Hosts {
    pub fn new(seed: u64) -> Self {
        Hosts {
            sched: Scheduling {
                queue: EventQueue::new(),
                wakeups: Wakeups::default(),
                current_machine: None,
                crashed: Vec::new(),
                background: 0,
            },
            machines: Vec::new(),
            groups: Vec::new(),
            group_by_name: Default::default(),
            fabric: Default::default(),
            stack: StackShared {
                tcp: Default::default(),
                tcp_out: Vec::new(),
                routing: Default::default(),
                default_ttl: crate::ipv4::DEFAULT_TTL,
                link_neighbours: Default::default(),
                nonlink_ifaces: Default::default(),
                icmp_limit: Default::default(),
                nics: Default::default(),
                dst_epoch: 0,
                fanout: Default::default(),
                dhcp_roles: 0,
                on_demand: false,
            },
            obs: Observers::default(),
            config: RunConfig {
                seed,
                fast_forward: true,
                rx_ring_ahead: true,
                tcp_fast_path: true,
                broadcast_select: true,
            },
            part: None,
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
        self.sched.wakeups.wake(task);
    }

    /// Schedules network event `event` on `lane` in a world that runs one
    /// partition of a parallel run: a frame arriving at another
    /// partition's machine goes to that partition's outbox instead, with
    /// the key this queue gives it (`crate::partition`).
    #[cold]
    #[inline(never)]
    fn schedule_in_partition(&mut self, at: Time, lane: elvis_kernel::Lane, event: NetEvent) {
        if let (
            Some(p),
            NetEvent::Deliver {
                net, port, frame, ..
            },
        ) = (self.part.as_deref_mut(), event)
        {
            if let Some(to) = p.elsewhere(net, port) {
                let key = self.sched.queue.next_key(lane);
                let frame = self.fabric.frames.remove(frame as usize);
                p.sent += 1;
                p.outbox[to as usize].push(crate::partition::CrossFrame {
                    at,
                    key,
                    net,
                    port,
                    frame,
                });
                return;
            }
        }
        self.sched.queue.schedule(at, lane, event.into());
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

    /// Dispatches one event (a task wake-up goes to the ready list).
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
            Event::Wireless(t) => elvis_net::wireless::dcf::handle(self, t),
            Event::Pfc { q, frame } => elvis_net::pfc::pause_frame(self, q, frame),
            Event::PfcRefresh(q) => elvis_net::pfc::refresh(self, q),
            Event::Timer { machine, timer } => {
                if let crate::Timer::Dhcp {
                    background: true, ..
                }
                | crate::Timer::AodvHello = timer
                {
                    self.sched.background -= 1;
                }
                self.sched.current_machine = Some(machine);
                crate::on_timer(self, machine, timer);
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
            NetEvent::Wireless(t) => Event::Wireless(t),
            NetEvent::Pfc { q, frame } => Event::Pfc { q, frame },
            NetEvent::PfcRefresh(q) => Event::PfcRefresh(q),
        }
    }
}

/// Returns the lane of a network event: each network has two, after the
/// machines' lanes. On a point-to-point link (`link`), each side has its
/// own: the side of the port that scheduled the event. The events one
/// side of a link schedules then take keys from that side's lane only,
/// which a partitioned run needs (`crate::partition`). Any other network
/// uses its first lane for all its events, so that events of one instant
/// from its many ports keep the order they were scheduled in (ordering
/// them by port would favour some ports at every tie).
#[inline(always)]
pub fn net_lane(machines: u32, event: &NetEvent, link: bool) -> elvis_kernel::Lane {
    let base = machines.wrapping_add(event.net().wrapping_mul(2));
    if !link {
        return base;
    }
    let side = match *event {
        NetEvent::TxDone(q) | NetEvent::TxRetry(q) | NetEvent::PfcRefresh(q) => q.port_dir >> 1,
        NetEvent::NicRoom { port, .. } => port,
        NetEvent::AtSwitch { from, .. } => from,
        // Sent by the other end.
        NetEvent::Deliver { port, .. } => port ^ 1,
        NetEvent::Pfc { q, .. } => (q.port_dir >> 1) ^ 1,
        NetEvent::Wireless(_) => 0,
    };
    base.wrapping_add(side & 1)
}

/// The network layer runs on the world: its state is `fabric`, its events
/// go on the one event queue (two lanes per network, after the
/// machines', see [`net_lane`]), and what reaches a machine goes to its
/// stack.
impl elvis_net::Context for Hosts {
    #[inline(always)]
    fn fabric(&self) -> &elvis_net::Fabric {
        &self.fabric
    }

    /// A wireless MAC gave up on a unicast frame (its retries ran out):
    /// link-layer feedback for an on-demand routing protocol on the
    /// sending machine (AODV's §6.11 case (i)); the frame stays dropped.
    fn link_failed(&mut self, net: NetId, port: u32, dst: [u8; 6], _frame: Message) {
        let n = &self.fabric.networks[net as usize];
        let (Some(from), Some(to)) = (n.ports.get(port as usize), n.port_of_mac(dst)) else {
            return;
        };
        let (m, iface) = (from.machine, from.iface);
        crate::ondemand::link_failed_port(self, m, iface, to);
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
        let link =
            self.fabric.networks[event.net() as usize].cfg.kind == elvis_net::NetworkKind::Link;
        let lane = net_lane(self.machines.len() as u32, &event, link);
        if self.part.is_some() {
            return self.schedule_in_partition(at, lane, event);
        }
        self.sched.queue.schedule(at, lane, event.into());
    }

    #[inline]
    fn dropped(&mut self, reason: elvis_net::DropReason) {
        self.obs.stats.drop(DropReason::Net(reason));
    }

    #[inline]
    fn arrived(&mut self, net: NetId, port: u32, id: FrameId) {
        crate::frame_arrived(self, net, port, id);
    }

    #[inline]
    fn received(&mut self, net: NetId, port: u32, frame: &mut Message, nested: bool) {
        if nested {
            crate::frame_received_nested(self, net, port, frame);
        } else {
            crate::frame_received(self, net, port, frame);
        }
    }

    #[inline]
    fn take_early(&mut self, machine: MachineId, iface: IfaceId, id: FrameId, at_ns: u64) -> bool {
        crate::offload::arrives_later(self, machine, iface, id, at_ns)
    }

    #[inline]
    fn forwards(&self, machine: MachineId) -> bool {
        self.machines[machine as usize].forward
    }

    #[inline]
    fn wake_task(&mut self, task: TaskId) {
        self.wake(task);
    }

    fn room_for_stack(&mut self, machine: MachineId) {
        let timer = crate::Timer::ForeignRoom;
        self.sched
            .queue
            .schedule_now(Event::Timer { machine, timer });
    }

    fn room_for_endpoint(&mut self, machine: MachineId, slot: u32) {
        let timer = crate::Timer::TcpKick { slot };
        self.sched
            .queue
            .schedule_now(Event::Timer { machine, timer });
    }

    fn select_broadcast(
        &mut self,
        net: NetId,
        from: u32,
        frame: &Message,
    ) -> Option<smallvec::SmallVec<[u32; 1]>> {
        if !self.config.broadcast_select {
            return None;
        }
        crate::dhcp::fanout::select(self, net, from, frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    #[test]
    fn the_ready_queue_pops_in_wake_order_like_a_plain_fifo() {
        // A second implementation (a plain `VecDeque`) as the model, driven
        // by a fixed pseudo-random mix of pushes and pops.
        let mut q = ReadyQueue::default();
        let mut model = VecDeque::new();
        let mut x = 0x9e37_79b9_u32;
        let mut next = 0;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            if x.is_multiple_of(3) {
                assert_eq!(q.pop(), model.pop_front());
            } else {
                q.push(next);
                model.push_back(next);
                next += 1;
            }
        }
        while let Some(t) = model.pop_front() {
            assert_eq!(q.pop(), Some(t));
        }
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn a_task_is_queued_once_until_polled_and_never_after_it_ended() {
        let mut w = Wakeups::default();
        for t in 0..3 {
            w.add(t);
        }
        w.wake(2);
        w.wake(0);
        w.wake(2);
        w.wake(7); // unknown: ignored
        assert_eq!(w.pop(), Some(2));
        w.wake(2); // polled: may be queued again
        w.retire(0);
        w.wake(0);
        assert_eq!(w.pop(), Some(0), "queued before it ended");
        assert_eq!(w.pop(), Some(2));
        assert_eq!(w.pop(), None);
        w.wake(0);
        assert_eq!(w.pop(), None, "an ended task is not queued");
    }
}
