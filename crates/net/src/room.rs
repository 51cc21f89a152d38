//! Back-pressure: how many frames a NIC takes, who waits for room in it,
//! and when they are woken (see "Back-pressure").

use crate::{Context, MachineId, NetEvent, NetId, TaskId};
use elvis_kernel::Time;

/// Returns how many more frames the NIC at `port` takes now.
#[inline]
pub fn nic_room(c: &impl Context, net: NetId, port: u32) -> u32 {
    let txqueuelen = c.fabric().networks[net as usize].cfg.txqueuelen;
    txqueuelen.saturating_sub(nic_frames(c, net, port))
}

/// Returns how many frames the NIC at `port` holds now (waiting or being
/// serialized; on an ideal network, not yet delivered).
#[inline]
pub fn nic_frames(c: &impl Context, net: NetId, port: u32) -> u32 {
    let p = &c.fabric().networks[net as usize].ports[port as usize];
    let scheduled = p
        .queues
        .as_deref()
        .map_or(0, |q| q.up.scheduled_at(c.now().as_nanos()));
    p.inflight + scheduled
}

/// Frees one NIC slot and wakes a sender blocked on it.
pub(crate) fn release_nic(c: &mut impl Context, net: NetId, port: u32) {
    let p = &mut c.fabric_mut().networks[net as usize].ports[port as usize];
    p.inflight = p.inflight.saturating_sub(1);
    wake_room_waiters(c, net, port);
}

/// Wakes whoever waits for room in the NIC at `port`: a blocked task, the
/// machine's own stack, endpoints (TCP connections), in that order.
fn wake_room_waiters(c: &mut impl Context, net: NetId, port: u32) {
    let p = &mut c.fabric_mut().networks[net as usize].ports[port as usize];
    if let Some(task) = p.waiter.take() {
        c.wake_task(task);
    }
    let p = &mut c.fabric_mut().networks[net as usize].ports[port as usize];
    let machine = p.machine;
    let Some(q) = p.queues.as_mut() else {
        return;
    };
    let stack = std::mem::take(&mut q.stack_waiting);
    if q.endpoint_waiters.is_empty() {
        if stack {
            c.room_for_stack(machine);
        }
        return;
    }
    // Drained in place, so the list keeps its storage for the next waiter.
    let mut waiting: smallvec::SmallVec<[(MachineId, u32); 2]> =
        q.endpoint_waiters.drain(..).collect();
    // Round robin: the first waiter took the room the last time and
    // waited again first, so it goes last now. Without the turn, a bulk
    // connection that fills the NIC at every wake-up starves the other
    // connections of its machine (a short flow behind a long one waited
    // for the long one to end).
    waiting.rotate_left(1);
    if stack {
        c.room_for_stack(machine);
    }
    for (m, slot) in waiting {
        c.room_for_endpoint(m, slot);
    }
}

/// Registers endpoint `slot` of machine `m` (a TCP connection) to be
/// called when the NIC at `port` has room. The caller arms the wake-up
/// ([`arm_room_wake`]) once it has handed the NIC what it could.
pub fn wait_for_room_endpoint(
    c: &mut impl Context,
    net: NetId,
    port: u32,
    m: MachineId,
    slot: u32,
) {
    let q = c.fabric_mut().networks[net as usize].queues_mut(port);
    if !q.endpoint_waiters.contains(&(m, slot)) {
        q.endpoint_waiters.push((m, slot));
    }
}

/// Registers the stack of the machine on `port` (a foreign stack) to be
/// called when the NIC at `port` has room.
pub fn wait_for_room_stack(c: &mut impl Context, net: NetId, port: u32) {
    c.fabric_mut().networks[net as usize]
        .queues_mut(port)
        .stack_waiting = true;
    arm_room_wake(c, net, port);
}

/// Registers `task` (if any) to be woken when the NIC at `port` has room.
pub fn wait_for_room_task(c: &mut impl Context, net: NetId, port: u32, task: Option<TaskId>) {
    c.fabric_mut().networks[net as usize].ports[port as usize].waiter = task;
    arm_room_wake(c, net, port);
}

/// Returns how many frames a busy NIC of `txqueuelen` slots still holds
/// when its waiters are woken: a quarter of its slots are free then (at
/// least one), like a driver that wakes its stopped queue only once a
/// batch of descriptors is free again (Linux ixgbe's
/// `TX_WAKE_THRESHOLD`), so a bulk sender refills several slots per
/// wake-up while the wire still has frames to send.
pub fn wake_watermark(txqueuelen: u32) -> u32 {
    txqueuelen.saturating_sub((txqueuelen / 4).max(1))
}

/// Schedules one wake-up of the waiters of the NIC at `port` for when its
/// departure schedule has drained to [`wake_watermark`] (or, holding
/// less, to one frame fewer), unless one is pending or nobody waits. The
/// evented path and ideal networks wake waiters as each frame leaves
/// instead (see "Back-pressure").
pub fn arm_room_wake(c: &mut impl Context, net: NetId, port: u32) {
    let now = c.now().as_nanos();
    let n = &mut c.fabric_mut().networks[net as usize];
    let low = wake_watermark(n.cfg.txqueuelen) as usize;
    let p = &mut n.ports[port as usize];
    let task_waits = p.waiter.is_some();
    // No queues (an ideal network, or nothing sent yet): nothing is on
    // the departure-time path, and none are made just to be asked.
    let Some(q) = p.queues.as_deref_mut() else {
        return;
    };
    let waits = task_waits || q.stack_waiting || !q.endpoint_waiters.is_empty();
    if q.room_wake || !waits {
        return;
    }
    let sched = &q.up.sched;
    let first = sched.partition_point(|s| s.done <= now);
    let scheduled = sched.len() - first;
    if scheduled == 0 {
        return;
    }
    let at = sched[first + (scheduled - 1).saturating_sub(low)].done;
    q.room_wake = true;
    c.schedule(Time::from_nanos(at), NetEvent::NicRoom { net, port });
}

/// The departure schedule of the NIC at `port` drained to its low
/// watermark: wakes its waiters (who wait again if still short of room).
pub fn nic_room_ready(c: &mut impl Context, net: NetId, port: u32) {
    c.fabric_mut().networks[net as usize]
        .queues_mut(port)
        .room_wake = false;
    wake_room_waiters(c, net, port);
}
