//! Host NIC offloads: TCP segmentation offload on send, interrupt
//! coalescing and generic receive offload (GRO) on receive.
//!
//! A Linux host on a fast link does not run TCP once per frame. On send,
//! TCP hands the NIC one segment of up to 64 KiB (TSO; GSO in software)
//! and the NIC cuts it into MSS-sized frames with copies of the headers.
//! On receive, the NIC raises its interrupt some microseconds after the
//! first frame (`ethtool -C rx-usecs`); the NAPI poll then takes every
//! frame that arrived in between and GRO merges consecutive segments of
//! one connection into one large segment before IP and TCP see it
//! (`tcp_gro_receive`), so TCP processes, and ACKs, one segment per poll
//! instead of one per frame. Both are on by default on Linux; here they
//! are off unless asked for ([`Offloads`], per machine), because
//! coalescing delays each frame by up to `rx_usecs` and so changes the
//! timing of every run that existed before.
//!
//! # What is modelled
//! - **TSO** (send): a connection whose route leaves by a NIC sends, in
//!   place of a run of full-sized segments, one segment of whole MSS
//!   multiples, as long as the congestion and peer windows, the data, the
//!   NIC room and Linux's `tcp_tso_autosize` (about a millisecond of data
//!   at the pacing rate, at most 64 KiB) allow. The NIC cuts it into
//!   frames (`split`): every frame carries the segment's header with its
//!   own sequence number, IPv4 identification, lengths and checksums; PSH
//!   only on the last, as Linux's `tcp_gso_segment`. On the wire the
//!   frames are exactly frames; the sender's TCP counts one segment,
//!   and its loss detection tracks the whole range (Linux's TSO `skb`).
//! - **Interrupt coalescing** (receive): a frame that reaches the host
//!   through an arrival event goes into the NIC's ring; the first frame
//!   of an empty ring schedules the interrupt `rx_usecs` later, and the
//!   poll then handles the ring in arrival order. `rx_frames` (if not 0)
//!   raises the interrupt at once when that many frames wait. Frames an
//!   ideal network or a zero-latency link delivers synchronously skip the
//!   ring.
//! - **GRO** (receive, during the poll): a frame is merged into the
//!   aggregate held for its connection when it continues it exactly, as
//!   `tcp_gro_receive` requires: a plain ACK segment (only ACK and PSH
//!   set) with data, valid IPv4 and TCP checksums (the NIC's receive
//!   checksum offload), the next sequence number, the same ACK number,
//!   window, TCP options byte for byte (so the same timestamps), TTL and
//!   TOS, no longer than the first segment, the aggregate staying within
//!   64 KiB. A segment with PSH, or shorter than the first, is merged and
//!   ends the aggregate. Any other TCP segment of the connection first
//!   delivers what is held for it (so a connection's segments reach TCP
//!   in order); other frames pass. At most [`MAX_HELD`] connections are
//!   held (Linux's `GRO_HASH_BUCKETS`); all held aggregates go up at the
//!   end of the poll. An aggregate reaches TCP as one segment with the
//!   first frame's header and PSH if any frame had it; IPv4 and TCP count
//!   one datagram and segment per frame, as Linux counts `gso_segs`.
//!
//! # Trains: a TSO segment crossing a link as one message
//! What the simulator must compute is what can be observed. A frame that
//! crosses an unimpaired, uncaptured link from one departure-time NIC
//! queue (`net`, "Departure-time FIFO") to a host that coalesces
//! interrupts is observed only when that host's interrupt takes it, and
//! its arrival time is known when it is queued. So such frames go into
//! the far host's ring when they are queued, without an arrival event
//! each (`arrives_later`); and the frames of one TSO segment go as one
//! **train** (`arrives_later_train`): one message holding the first
//! frame's headers and the whole payload, with the arrival of the first
//! frame and the spacing of the others. The NIC still queues, times and
//! counts every frame (`net::enqueue_train`). The interrupt takes the
//! frames of a train that have arrived by then (splitting it if some are
//! still on the way), and GRO merges them run by run exactly as it would
//! merge the frames one by one (`receive_train`); their checksums are
//! right by construction, so they are not summed. Any impairment,
//! capture, queue trace, other queue discipline, ECN-marked segment, or a
//! host that does not take trains sends the frames one by one.
//! `Simulation::set_rx_ring_ahead(false)` turns both shortcuts off; the
//! integration test `frames_queued_straight_into_the_ring_give_the_same_run_as_arrival_events`
//! requires identical reports either way (with GRO aggregates split at
//! the 64 KiB limit, and with loss), and catches planted bugs in the
//! train split and the 64 KiB rule.
//!
//! # Memory: nothing for an idle host
//! A group of a million hosts with `offload='linux'` must cost nothing
//! while they are idle. A machine's settings are a 16-bit index into the
//! simulation's table of distinct settings (`NicTable`), which lives in
//! the padding of the machine record: 0 bytes per host. The receive state
//! (`Nic`: the ring, GRO's held aggregates, the interrupt flag) is an
//! entry of one shared table, taken by the first frame that goes into a
//! host's ring and given back when an interrupt leaves the ring empty (the
//! host holds its entry's number, also in the padding); given-back entries
//! are reused with their room, so memory follows the hosts with frames
//! waiting, and a busy host allocates nothing per interrupt. A host that
//! sets its own offloads (`Simulation::set_offloads`) just points at
//! another settings entry.
//! `elvis-bench offload-memory` measures it.
//!
//! # Where we differ from Linux
//! - Routers (forwarding machines) and foreign stacks ignore the
//!   offloads: their frames are handled one by one, as before.
//! - Only TCP is aggregated (no UDP GRO, no USO).
//! - Coalescing is a fixed delay (no adaptive moderation), and the poll
//!   takes every waiting frame (no NAPI budget of 64).
//! - TSO segments are not deferred to grow larger (`tcp_tso_should_defer`).
//! - RACK (`stack::tcp::rack`) keeps a TSO segment as one record and
//!   splits it where SACK blocks end, as Linux fragments a partly SACKed
//!   `skb`; but it counts SACKed records, not packets, towards DupThresh,
//!   so a hole below one large SACKed record waits for the reordering
//!   window (a quarter of the minimum RTT) where Linux would mark it lost
//!   at once.
//! - With timestamps, frames of two TSO segments sent in different
//!   microseconds differ in TSval and so are not merged, as on Linux.
//!
//! # References
//! Linux `net/ipv4/tcp_offload.c` (`tcp_gso_segment`, `tcp_gro_receive`),
//! `net/core/gro.c`, `net/ipv4/tcp_output.c` (`tcp_tso_autosize`);
//! `ethtool(8)` (`-K tso/gro`, `-C rx-usecs/rx-frames`).

use crate::hosts::{Event, Hosts};
use crate::machine::IfaceId;
use crate::machine::MachineId;
use elvis_message::Message;
use elvis_net::FrameId;
use elvis_wire::checksum;
use elvis_wire::tcp;
use std::net::Ipv4Addr;

/// A host's NIC offload settings (`ethtool -K` and `ethtool -C`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offloads {
    /// TCP segmentation offload: TCP sends segments of up to 64 KiB that
    /// the NIC cuts into frames.
    pub tso: bool,
    /// Generic receive offload: consecutive segments of a connection that
    /// one interrupt finds are merged before TCP sees them (needs
    /// `rx_usecs` > 0 to merge anything).
    pub gro: bool,
    /// Receive interrupt coalescing: the interrupt comes this many
    /// microseconds after the first frame (0: every frame at once).
    pub rx_usecs: u32,
}

impl Offloads {
    /// What a Linux host with a common 10 Gbit/s NIC runs: TSO and GRO
    /// on, interrupts coalesced for 8 µs (mlx5's `rx-usecs` default).
    pub const LINUX: Offloads = Offloads {
        tso: true,
        gro: true,
        rx_usecs: 8,
    };

    /// Returns true when frames wait in a ring for an interrupt.
    fn coalesces(&self) -> bool {
        self.rx_usecs > 0
    }
}

/// Aggregates GRO holds at once (Linux's `GRO_HASH_BUCKETS`).
pub const MAX_HELD: usize = 8;

/// The largest IPv4 datagram an aggregate may become.
const GRO_MAX: usize = 65_535;

/// Ethernet header length.
const ETH: usize = 14;
/// Ethernet plus an IPv4 header without options.
const ETH_IP: usize = ETH + 20;

/// The offload settings of a simulation's machines and the receive states
/// they use (one per [`Hosts`]).
///
/// Settings are kept once per distinct value: a machine holds a 16-bit
/// index into `NicTable::cfgs` (in the padding of its record), so a
/// group of a million hosts with `offload='linux'` shares one entry. The
/// receive states ([`Nic`]: ring, GRO aggregates, interrupt flag) live in
/// one table, `states`; a machine holds the number of its entry (in the
/// same padding; 0: none). A host takes an entry when the first frame for
/// its ring arrives and gives it back when its interrupt leaves the ring
/// empty; the next host takes it with the room its ring and GRO list
/// grew, so a busy host costs no allocation per interrupt, and a host
/// that was busy once and is idle again costs nothing. Beyond `SPARE`
/// free entries, a given-back entry's room is freed: what stays is 64
/// bytes per host that had frames waiting at the same moment.
pub struct NicTable {
    /// Distinct settings in use; entry 0 is "no offloads".
    cfgs: Vec<Offloads>,
    /// Index of each setting in `cfgs` (lookups only).
    index: std::collections::BTreeMap<(bool, bool, u32), u16>,
    /// Receive states; machine field `nic` is an index here plus 1.
    states: Vec<Nic>,
    /// Entries of `states` that no machine holds, last given back last.
    free: Vec<u32>,
    /// Keep a host's receive state when its ring empties (a testing
    /// switch: runs are the same either way).
    pub keep: bool,
}

impl Default for NicTable {
    fn default() -> Self {
        NicTable {
            cfgs: vec![Offloads::default()],
            index: std::collections::BTreeMap::new(),
            states: Vec::new(),
            free: Vec::new(),
            keep: false,
        }
    }
}

impl NicTable {
    /// Returns the index of `cfg` in the table, adding it if new; `None`
    /// when the table is full (65,536 distinct settings).
    fn intern(&mut self, cfg: Offloads) -> Option<u16> {
        if cfg == Offloads::default() {
            return Some(0);
        }
        let key = (cfg.tso, cfg.gro, cfg.rx_usecs);
        if let Some(&i) = self.index.get(&key) {
            return Some(i);
        }
        let i = u16::try_from(self.cfgs.len()).ok()?;
        self.cfgs.push(cfg);
        self.index.insert(key, i);
        Some(i)
    }

    /// Returns whether the NIC settings at index `i` coalesce receive
    /// interrupts: such a NIC takes a frame into its ring when the frame
    /// is queued at the far end of a link, reaching across it.
    pub fn coalesces(&self, i: u16) -> bool {
        self.cfg(i).coalesces()
    }

    /// Returns the settings at index `i`.
    #[inline]
    fn cfg(&self, i: u16) -> Offloads {
        self.cfgs[usize::from(i)]
    }

    /// Returns the number (index plus 1) of a receive state with nothing
    /// in it, for a machine to hold.
    ///
    /// A ring without room gets room for one frame, not the four a first
    /// push would allocate: most hosts have one frame waiting at a time,
    /// and a ring that grows keeps its room for the next host.
    #[cold]
    fn take(&mut self) -> u32 {
        let i = self.free.pop().unwrap_or_else(|| {
            self.states.push(Nic::default());
            (self.states.len() - 1) as u32
        });
        let ring = &mut self.states[i as usize].ring;
        if ring.capacity() == 0 {
            ring.reserve_exact(1);
        }
        i.checked_add(1).expect("fewer than 2^32 machines")
    }

    /// Takes back the receive state numbered `n` (empty): kept with its
    /// room for reuse, or with its room freed when [`SPARE`] wait already.
    fn give(&mut self, n: u32) {
        let i = n - 1;
        let nic = &mut self.states[i as usize];
        debug_assert!(nic.is_empty());
        if self.free.len() >= SPARE {
            *nic = Nic::default();
        }
        self.free.push(i);
    }

    /// Returns the receive states created so far.
    pub fn created(&self) -> u64 {
        self.states.len() as u64
    }
}

/// Free receive states that keep their room at most.
const SPARE: usize = 64;

/// A host's NIC receive state: only hosts with frames waiting for their
/// interrupt hold one (see [`NicTable`]).
#[derive(Default)]
pub struct Nic {
    /// Frames that arrived, or will arrive, and wait for the interrupt,
    /// in order of arrival.
    ring: std::collections::VecDeque<Slot>,
    /// An interrupt is scheduled.
    irq: bool,
    /// GRO aggregates being built during a poll, oldest first.
    held: Vec<Held>,
}

impl Nic {
    /// Returns true when nothing waits and no interrupt is due.
    fn is_empty(&self) -> bool {
        self.ring.is_empty() && self.held.is_empty() && !self.irq
    }
}

/// A frame in the receive ring.
#[derive(Clone, Copy)]
struct Slot {
    /// Arrival time, ns (of the first frame of a train).
    at: u64,
    iface: IfaceId,
    /// Put in the ring before its arrival (see [`arrives_later`]): its
    /// arrival is counted when the interrupt takes it.
    early: bool,
    id: FrameId,
    /// Frames: 1, or a train of a TSO segment's frames held as one
    /// message (the first frame's headers and the whole payload; see
    /// [`arrives_later_train`]).
    segs: u32,
    /// A train's payload bytes per frame (the last may be shorter); 0 for
    /// a frame. (A train stays one when a split leaves one frame of it.)
    gso: u32,
    /// A train's spacing of arrivals, ns (the last frame arrives at
    /// `last`).
    step: u64,
    last: u64,
}

impl Slot {
    /// Returns how many of the slot's frames have arrived by `now`.
    fn due(&self, now: u64) -> u32 {
        if now >= self.last {
            self.segs
        } else if now < self.at {
            0
        } else {
            (((now - self.at) / self.step.max(1)) as u32 + 1).min(self.segs - 1)
        }
    }
}

/// A GRO aggregate: the first frame's headers and the merged payload.
struct Held {
    iface: IfaceId,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    ports: u32,
    tos: u8,
    ttl: u8,
    /// The first segment's TCP header (with options).
    header: [u8; 60],
    hlen: u8,
    /// Sequence number the next merged segment must start at.
    next: u32,
    /// Payload length of the first segment: later ones may not be longer.
    mss: u16,
    segs: u32,
    psh: bool,
    payload: Message,
}

impl Held {
    /// Returns true when a segment of `len` bytes at `seq` with TCP
    /// header `th` may join the aggregate (`tcp_gro_receive`'s rules, the
    /// 64 KiB limit aside): it continues it, the aggregate has no PSH
    /// yet, it is no longer than the first segment, and TOS, TTL and the
    /// header but for sequence number, flags and checksum are the same.
    fn continued_by(&self, seq: u32, len: usize, tos: u8, ttl: u8, th: &[u8]) -> bool {
        self.next == seq
            && !self.psh
            && len <= usize::from(self.mss)
            && self.tos == tos
            && self.ttl == ttl
            && usize::from(self.hlen) == th.len()
            && same_but_seq_and_flags(&self.header[..th.len()], th)
    }
}

/// Returns the offloads of machine `m` (none unless set).
pub fn of(w: &Hosts, m: MachineId) -> Offloads {
    w.stack.nics.cfg(w.machines[m as usize].offloads)
}

/// Sets the offloads of machine `m`; returns false, changing nothing,
/// when the simulation already has 65,536 distinct settings.
pub fn set(w: &mut Hosts, m: MachineId, cfg: Offloads) -> bool {
    let Some(i) = w.stack.nics.intern(cfg) else {
        return false;
    };
    w.fabric.config.early_takers |= cfg.coalesces();
    w.machines[m as usize].offloads = i;
    true
}

/// Returns the receive state of machine `m`, if it holds one.
#[inline]
fn nic_mut(w: &mut Hosts, m: MachineId) -> Option<&mut Nic> {
    let n = w.machines[m as usize].nic;
    if n == 0 {
        return None;
    }
    w.stack.nics.states.get_mut(n as usize - 1)
}

/// Returns the receive state of host `m` when it coalesces receive
/// interrupts (routers and foreign machines never do), taking one if it
/// holds none.
#[inline]
fn coalescing(w: &mut Hosts, m: MachineId) -> Option<&mut Nic> {
    let nics = &mut w.stack.nics;
    let machine = &mut w.machines[m as usize];
    if machine.forward || machine.foreign || !nics.cfg(machine.offloads).coalesces() {
        return None;
    }
    if machine.nic == 0 {
        machine.nic = nics.take();
    }
    nics.states.get_mut(machine.nic as usize - 1)
}

/// Gives back the receive state of host `m` when its ring is empty and
/// no interrupt is due (see [`NicTable`]).
fn release(w: &mut Hosts, m: MachineId) {
    if w.stack.nics.keep || !nic_mut(w, m).is_some_and(|n| n.is_empty()) {
        return;
    }
    let n = std::mem::take(&mut w.machines[m as usize].nic);
    w.stack.nics.give(n);
}

/// Returns the number of machines holding a receive state (tests).
pub fn holding(w: &Hosts) -> usize {
    w.machines.iter().filter(|m| m.nic != 0).count()
}

/// Frame `id` arrived now on `iface` of host `m` through an arrival
/// event: puts it in the NIC's ring and returns true when the NIC
/// coalesces interrupts; returns false (the frame untouched) otherwise.
#[inline]
pub fn on_arrival(w: &mut Hosts, m: MachineId, iface: IfaceId, id: FrameId) -> bool {
    let now = w.now().as_nanos();
    let Some(nic) = coalescing(w, m) else {
        return false;
    };
    // Frames put in the ring ahead of their arrival may lie beyond now.
    let at = nic
        .ring
        .iter()
        .rposition(|s| s.at <= now)
        .map_or(0, |i| i + 1);
    let slot = Slot {
        at: now,
        iface,
        early: false,
        id,
        segs: 1,
        gso: 0,
        step: 0,
        last: now,
    };
    nic.ring.insert(at, slot);
    raise(w, m, now);
    true
}

/// Frame `id` leaves a link's departure-time queue now and will reach
/// `iface` of host `m` at `at` (ns) with nothing on the way that could
/// change it: when that host coalesces interrupts and the frame arrives
/// no earlier than those already in its ring, puts it in the ring at
/// once, saving the arrival event (only the interrupt, which takes it,
/// needs one), and returns true. Returns false otherwise (the caller
/// schedules the arrival).
#[inline]
pub fn arrives_later(w: &mut Hosts, m: MachineId, iface: IfaceId, id: FrameId, at: u64) -> bool {
    if !w.config.rx_ring_ahead || w.machines[m as usize].crashed {
        return false;
    }
    let Some(nic) = coalescing(w, m) else {
        return false;
    };
    if nic.ring.back().is_some_and(|s| s.last > at) {
        return false;
    }
    nic.ring.push_back(Slot {
        at,
        iface,
        early: true,
        id,
        segs: 1,
        gso: 0,
        step: 0,
        last: at,
    });
    raise(w, m, at);
    true
}

/// Returns true when host `m` would take a TCP segment's frames arriving
/// on `iface` from `src` to `dst` as a train ([`arrives_later_train`]):
/// it coalesces interrupts and merges with GRO, runs TCP, `dst` is the
/// interface's address (GRO's and TCP's fast path condition) and the
/// frames arrive after those in its ring.
pub fn takes_trains(w: &Hosts, m: MachineId, iface: IfaceId, dst: Ipv4Addr, first: u64) -> bool {
    let machine = &w.machines[m as usize];
    if !w.config.rx_ring_ahead || machine.crashed || machine.forward || machine.foreign {
        return false;
    }
    let cfg = w.stack.nics.cfg(machine.offloads);
    let ring = match machine.nic {
        0 => None,
        n => w.stack.nics.states.get(n as usize - 1),
    };
    cfg.coalesces()
        && cfg.gro
        && super::tcp::check_tcp_enabled(w, m).is_ok()
        && machine
            .ifaces
            .get(iface as usize)
            .is_some_and(|i| i.ip == dst)
        && ring.is_none_or(|n| n.ring.back().is_none_or(|s| s.last <= first))
}

/// Puts the train `id` (a TSO segment's `segs` frames of `gso` payload
/// bytes, held as one message: the first frame's headers, PSH as the last
/// frame has it, and the whole payload) into the ring of host `m`, which
/// [`takes_trains`] said it takes. GRO then merges its frames exactly as
/// it would merge them one by one; their checksums are right by
/// construction (they crossed an unimpaired link), so they are not summed.
pub fn arrives_later_train(
    w: &mut Hosts,
    m: MachineId,
    iface: IfaceId,
    id: FrameId,
    segs: u32,
    gso: u32,
    train: elvis_net::Train,
) {
    let Some(nic) = coalescing(w, m) else { return };
    nic.ring.push_back(Slot {
        at: train.first,
        iface,
        early: true,
        id,
        segs,
        gso,
        step: train.step,
        last: train.last,
    });
    raise(w, m, train.first);
}

/// Schedules the interrupt `rx_usecs` after `first` (the arrival of the
/// first frame of an empty ring) unless one is pending.
fn raise(w: &mut Hosts, m: MachineId, first: u64) {
    let Some(nic) = nic_mut(w, m) else { return };
    if nic.irq {
        return;
    }
    nic.irq = true;
    let usecs = w.stack.nics.cfg(w.machines[m as usize].offloads).rx_usecs;
    let at = elvis_kernel::Time::from_nanos(first + u64::from(usecs) * 1_000);
    let timer = super::Timer::NapiPoll;
    w.sched
        .queue
        .schedule(at, m, Event::Timer { machine: m, timer });
}

/// The interrupt of machine `m`'s NIC: handles every frame that arrived
/// by now, in arrival order, merging with GRO, then delivers the held
/// aggregates. Frames still to arrive raise the next interrupt.
pub fn poll(w: &mut Hosts, m: MachineId) {
    let now = w.now().as_nanos();
    let Some(nic) = nic_mut(w, m) else { return };
    nic.irq = false;
    let gro = w.stack.nics.cfg(w.machines[m as usize].offloads).gro;
    while let Some(slot) = nic_mut(w, m).and_then(|n| n.ring.front().copied()) {
        let due = slot.due(now);
        if due == 0 {
            break;
        }
        let (mut frame, segs) = if due == slot.segs {
            if let Some(n) = nic_mut(w, m) {
                n.ring.pop_front();
            }
            (w.fabric.frames.remove(slot.id as usize), slot.segs)
        } else {
            (split_train(w, m, slot, due), due)
        };
        if slot.early {
            let ifc = w.machines[m as usize].ifaces[slot.iface as usize];
            for _ in 0..segs {
                elvis_net::count_arrival(&mut w.fabric, ifc.net);
                w.obs.stats.frames_delivered += 1;
            }
        }
        if w.machines[m as usize].crashed {
            for _ in 0..segs {
                w.drop_packet(crate::counters::DropReason::MachineCrashed);
            }
            continue;
        }
        w.sched.current_machine = Some(m);
        if slot.gso > 0 {
            receive_train(w, m, slot.iface, frame, segs, slot.gso as usize);
            continue;
        }
        if gro && receive(w, m, slot.iface, &mut frame) {
            continue;
        }
        crate::hand_to_stack(w, m, slot.iface, &mut frame);
    }
    flush_all(w, m);
    if let Some(first) = nic_mut(w, m).and_then(|n| n.ring.front().map(|s| s.at)) {
        raise(w, m, first);
    }
    release(w, m);
}

/// Takes the first `due` frames of the train at the front of the ring
/// (the others arrive later): returns them as a train message, and leaves
/// the rest in the ring as a train starting `due` frames later.
fn split_train(w: &mut Hosts, m: MachineId, slot: Slot, due: u32) -> Message {
    let train = &mut w.fabric.frames[slot.id as usize];
    let mut header = [0u8; ETH_IP + 60];
    let hlen = train
        .front(ETH_IP + tcp::HEADER_LEN)
        .map_or(0, |h| usize::from(h[ETH_IP + 12] >> 4) * 4);
    let hdr = ETH_IP + hlen;
    if let Some(h) = train.front(hdr) {
        header[..hdr].copy_from_slice(h);
    }
    let cut = hdr + due as usize * slot.gso as usize;
    let rest = train.split_off(cut);
    let mut front = std::mem::replace(train, rest);
    // The front's last frame is not the train's: no PSH.
    if let Some(h) = front.front_mut(hdr) {
        h[ETH_IP + 13] &= !0x08;
    }
    let seq = u32::from_be_bytes(header[ETH_IP + 4..ETH_IP + 8].try_into().expect("4 bytes"));
    let moved = seq.wrapping_add(due * slot.gso);
    header[ETH_IP + 4..ETH_IP + 8].copy_from_slice(&moved.to_be_bytes());
    train.push_front_slice(&header[..hdr]);
    if let Some(n) = nic_mut(w, m) {
        if let Some(f) = n.ring.front_mut() {
            f.at += u64::from(due) * slot.step;
            f.segs -= due;
        }
    }
    front
}

/// GRO for a train of `segs` frames of `gso` payload bytes (the last one
/// possibly shorter; see [`arrives_later_train`]): merges them exactly as
/// [`receive`] merges the same frames one by one, run by run instead of
/// frame by frame.
///
/// Long because it is one loop over the train's runs that joins each to
/// the held aggregate or starts a new one, both branches using the header
/// fields parsed once at the top (`tos`, `ttl`, `src`, `ports`, `hlen`,
/// `psh`, `header`) and the running `i`, `off` and `seq`, which split
/// would become a dozen arguments.
fn receive_train(
    w: &mut Hosts,
    m: MachineId,
    iface: IfaceId,
    mut train: Message,
    segs: u32,
    gso: usize,
) {
    let Some(h) = train.front(ETH_IP + tcp::HEADER_LEN) else {
        return;
    };
    let ip: [u8; 20] = h[ETH..ETH_IP].try_into().expect("20 bytes");
    let (tos, ttl) = (ip[1], ip[8]);
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let th = &h[ETH_IP..];
    let ports = u32::from_be_bytes([th[0], th[1], th[2], th[3]]);
    let hlen = usize::from(th[12] >> 4) * 4;
    let psh = th[13] & 0x08 != 0;
    let mut header = [0u8; 60];
    let Some(th) = train.front(ETH_IP + hlen) else {
        return;
    };
    header[..hlen].copy_from_slice(&th[ETH_IP..]);
    header[13] &= !0x08;
    let _ = train.pop_front(ETH_IP + hlen);
    let total = train.len();
    let mut seq = u32::from_be_bytes(header[4..8].try_into().expect("4 bytes"));
    let (mut i, mut off) = (0u32, 0usize);
    let key = |x: &Held| x.iface == iface && x.src == src && x.ports == ports;
    while i < segs {
        let len = if i == segs - 1 { total - off } else { gso };
        let held_at = nic_mut(w, m).and_then(|n| n.held.iter().position(key));
        if let Some(at) = held_at {
            let nic = nic_mut(w, m).expect("held");
            let x = &mut nic.held[at];
            let joins = x.continued_by(seq, len, tos, ttl, &header[..hlen]);
            let room = GRO_MAX.saturating_sub(20 + hlen + x.payload.len());
            // Frames of this train that fit (all but the last are `gso`
            // long, and none is longer than the first of the aggregate).
            let left = (segs - i) as usize;
            let last_len = total - off - (left - 1) * gso;
            let mut k = if (left - 1) * gso + last_len <= room {
                left
            } else {
                room / gso
            };
            if gso < usize::from(x.mss) {
                // Each frame shorter than the aggregate's first ends it.
                k = k.min(1);
            }
            if joins && k > 0 {
                let bytes = if k == left { total - off } else { k * gso };
                x.payload.append(train.slice(off..off + bytes));
                x.next = x.next.wrapping_add(bytes as u32);
                x.segs += k as u32;
                i += k as u32;
                off += bytes;
                seq = seq.wrapping_add(bytes as u32);
                let ended = i == segs;
                let tail = if ended { last_len } else { gso };
                if ended {
                    x.psh = psh;
                }
                if !ended || psh || tail < usize::from(x.mss) {
                    // PSH or a frame shorter than the first ends the
                    // aggregate; so does reaching 64 KiB.
                    flush(w, m, at);
                }
                continue;
            }
            flush(w, m, at);
        }
        // Frame `i` starts an aggregate.
        let last = i == segs - 1;
        let mut head = header;
        head[4..8].copy_from_slice(&seq.to_be_bytes());
        let nic = nic_mut(w, m).expect("a NIC with GRO");
        let x = Held {
            iface,
            src,
            dst,
            ports,
            tos,
            ttl,
            header: head,
            hlen: hlen as u8,
            next: seq.wrapping_add(len as u32),
            mss: len.min(usize::from(u16::MAX)) as u16,
            segs: 1,
            psh: last && psh,
            payload: train.slice(off..off + len),
        };
        let full = nic.held.len() >= MAX_HELD;
        nic.held.push(x);
        i += 1;
        off += len;
        seq = seq.wrapping_add(len as u32);
        if last && psh {
            let at = nic.held.len() - 1;
            flush(w, m, at);
        } else if full {
            flush(w, m, 0);
        }
    }
}

/// GRO: takes `frame` when it is a plain TCP data segment addressed to
/// the host (merged into, or starting, an aggregate); returns false, the
/// frame untouched but for its padding, otherwise. A TCP segment of a
/// connection with an aggregate that it cannot join first delivers the
/// aggregate.
///
/// Long because it is GRO's per-frame decision in one pass (parse the
/// headers once, refuse and flush, check the checksum, join or start an
/// aggregate), every step using the fields read at the top (`src`,
/// `ports`, `tos`, `ttl`, `hlen`, `len`, `held_at`), and it runs once per
/// frame received.
fn receive(w: &mut Hosts, m: MachineId, iface: IfaceId, frame: &mut Message) -> bool {
    let Some(ifc) = w.machines[m as usize].ifaces.get(iface as usize).copied() else {
        return false;
    };
    if super::tcp::check_tcp_enabled(w, m).is_err() {
        return false;
    }
    let own = w.fabric.networks[ifc.net as usize].mac(ifc.port);
    let frame_len = frame.len();
    let Some(h) = frame.front(ETH_IP + tcp::HEADER_LEN) else {
        return false;
    };
    if !super::tcp::rx::plain_tcp(h, own, ifc.ip) {
        return false;
    }
    let saved: [u8; ETH_IP] = h[..ETH_IP].try_into().expect("34 bytes");
    let ip: &[u8; 20] = h[ETH..ETH_IP].try_into().expect("20 bytes");
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    let (tos, ttl) = (ip[1], ip[8]);
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let th = &h[ETH_IP..];
    let ports = u32::from_be_bytes([th[0], th[1], th[2], th[3]]);
    let hlen = usize::from(th[12] >> 4) * 4;
    let flags = th[13];
    if total < 20 + hlen.max(tcp::HEADER_LEN) || ETH + total > frame_len {
        return false;
    }
    let len = total - 20 - hlen;
    let key = |x: &Held| x.iface == iface && x.src == src && x.ports == ports;
    let held_at = nic_mut(w, m).and_then(|n| n.held.iter().position(key));
    // Only ACK, or ACK and PSH, with data.
    if flags & !0x08 != 0x10 || len == 0 || hlen < tcp::HEADER_LEN {
        if let Some(i) = held_at {
            flush(w, m, i);
        }
        return false;
    }
    frame.truncate(ETH + total);
    // The NIC's receive checksum offload: a frame with a bad TCP checksum
    // goes up as it is (TCP drops it with its reason).
    let tcp_len = (total - 20) as u32;
    let mut sum = checksum::pseudo_header(src, ifc.ip, elvis_wire::IpProtocol::Tcp, tcp_len);
    let _ = frame.pop_front(ETH_IP);
    super::udp::sum_message(&mut sum, frame);
    if sum.finish() != 0 {
        frame.push_front_slice(&saved);
        return false;
    }
    let Some(th) = frame.front(hlen) else {
        return false;
    };
    let mut header = [0u8; 60];
    header[..hlen].copy_from_slice(th);
    let seq = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
    let psh = flags & 0x08 != 0;
    let _ = frame.pop_front(hlen);
    let payload = std::mem::take(frame);
    if let Some(i) = held_at {
        let nic = nic_mut(w, m).expect("held");
        let x = &mut nic.held[i];
        let joins = x.continued_by(seq, len, tos, ttl, &header[..hlen])
            && 20 + hlen + x.payload.len() + len <= GRO_MAX;
        if joins {
            x.payload.append(payload);
            x.next = x.next.wrapping_add(len as u32);
            x.segs += 1;
            x.psh = psh;
            if psh || len < usize::from(x.mss) {
                flush(w, m, i);
            }
            return true;
        }
        flush(w, m, i);
    }
    let nic = nic_mut(w, m).expect("a NIC with GRO");
    let x = Held {
        iface,
        src,
        dst: ifc.ip,
        ports,
        tos,
        ttl,
        header,
        hlen: hlen as u8,
        next: seq.wrapping_add(len as u32),
        mss: len.min(usize::from(u16::MAX)) as u16,
        segs: 1,
        psh,
        payload,
    };
    let full = nic.held.len() >= MAX_HELD;
    nic.held.push(x);
    if psh {
        let last = nic.held.len() - 1;
        flush(w, m, last);
    } else if full {
        flush(w, m, 0);
    }
    true
}

/// Returns true when two TCP headers of equal length differ at most in
/// the sequence number, the flags byte and the checksum (Linux's
/// `tcp_gro_receive` compares the ACK number, the window and every
/// option word).
fn same_but_seq_and_flags(a: &[u8], b: &[u8]) -> bool {
    a[..4] == b[..4] && a[8..13] == b[8..13] && a[14..16] == b[14..16] && a[18..] == b[18..]
}

/// Delivers the aggregate held at `i` to TCP.
fn flush(w: &mut Hosts, m: MachineId, i: usize) {
    let Some(nic) = nic_mut(w, m) else { return };
    let mut x = nic.held.remove(i);
    let hlen = usize::from(x.hlen);
    let parsed = tcp::Repr::parse(
        &tcp::Packet::new_unchecked(&x.header[..hlen]),
        x.src,
        x.dst,
        elvis_wire::Checksums::Ignore,
    );
    let Ok(mut repr) = parsed else {
        // Parsed once already by the checks above; cannot fail.
        return w.drop_packet(crate::counters::DropReason::Malformed("tcp"));
    };
    repr.payload_len = x.payload.len();
    if x.psh {
        repr.control = tcp::Control::Psh;
    }
    let segs = u64::from(x.segs);
    w.obs.stats.ip_delivered += segs;
    w.obs.stats.tcp_received += segs;
    w.obs.tcp_fast_received += segs;
    w.obs.stats.gro_merged += segs - 1;
    let ecn = x.tos & 0b11;
    super::tcp::demux(w, m, x.src, x.dst, ecn, &repr, &mut x.payload, x.segs);
}

/// Delivers every held aggregate, oldest first (end of a poll).
fn flush_all(w: &mut Hosts, m: MachineId) {
    while nic_mut(w, m).is_some_and(|n| !n.held.is_empty()) {
        flush(w, m, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_settings_share_one_table_entry_and_none_is_entry_zero() {
        let mut t = NicTable::default();
        assert_eq!(t.intern(Offloads::default()), Some(0));
        let a = t.intern(Offloads::LINUX).unwrap();
        let slow = Offloads {
            rx_usecs: 50,
            ..Offloads::LINUX
        };
        let b = t.intern(slow).unwrap();
        assert_ne!(a, b);
        assert_eq!(t.intern(Offloads::LINUX), Some(a));
        assert_eq!(
            (t.cfg(0), t.cfg(a), t.cfg(b)),
            (Offloads::default(), Offloads::LINUX, slow)
        );
        assert_eq!(t.cfgs.len(), 3);
    }

    #[test]
    fn a_frame_gives_a_host_a_receive_state_and_an_empty_ring_takes_it_back() {
        let mut w = Hosts::new(1);
        w.machines.push(crate::machine::Machine::new(0));
        assert!(set(&mut w, 0, Offloads::LINUX));
        assert_eq!((w.machines[0].nic, holding(&w)), (0, 0));
        let id = w.fabric.frames.insert(Message::zeros(60)) as FrameId;
        assert!(on_arrival(&mut w, 0, 0, id));
        // The state is an entry of the shared table: the host's rarely
        // used extension is not allocated for it.
        assert_eq!((w.machines[0].nic, holding(&w)), (1, 1));
        assert!(w.machines[0].ext.is_none());
        // The interrupt is due; the state stays until the ring is empty.
        release(&mut w, 0);
        assert_eq!(w.machines[0].nic, 1);
        let nic = nic_mut(&mut w, 0).expect("held");
        nic.ring.clear();
        nic.irq = false;
        release(&mut w, 0);
        assert_eq!(
            (w.machines[0].nic, holding(&w), w.stack.nics.free.len()),
            (0, 0, 1)
        );
    }

    #[test]
    fn a_receive_state_is_64_bytes_before_its_rooms_grow() {
        assert!(
            std::mem::size_of::<Nic>() <= 64,
            "{}",
            std::mem::size_of::<Nic>()
        );
    }

    #[test]
    fn receive_states_are_reused_and_only_spare_of_them_keep_their_room() {
        let mut t = NicTable::default();
        let held: Vec<u32> = (0..SPARE as u32 + 5).map(|_| t.take()).collect();
        assert_eq!(held, (1..=SPARE as u32 + 5).collect::<Vec<_>>());
        for &n in &held {
            t.states[n as usize - 1].ring.reserve(100);
        }
        for &n in &held {
            t.give(n);
        }
        // The first SPARE given back keep their room; the others not.
        let room = |t: &NicTable, n: u32| t.states[n as usize - 1].ring.capacity();
        assert!(room(&t, 1) >= 100 && room(&t, SPARE as u32) >= 100);
        assert_eq!(room(&t, SPARE as u32 + 1), 0);
        // Taken again last given back first; nothing new is created.
        assert_eq!(t.take(), SPARE as u32 + 5);
        assert_eq!(t.created(), (SPARE + 5) as u64);
    }
}
