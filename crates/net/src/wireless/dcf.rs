//! The 802.11 distributed coordination function (IEEE 802.11-2016
//! clause 10.3), and the contention-free `Mac::None`, on one wireless
//! network (see "Medium access" in [`crate::wireless`]).
//!
//! Each station is a small state machine (`super::Own`) driven by four
//! timers ([`super::TimerKind`]). A frame on the air is an `super::Air`
//! with the stations that hear it; its start and its end update each
//! hearer's receiver (carrier sense, the frame it is locked on and
//! whether that frame is still intact), and its end hands decoded
//! frames up, answers them (ACK, CTS) or settles the sender.
//!
//! Back-off (10.3.3): a station whose medium has been idle for DIFS (EIFS
//! after a failed reception, 10.3.2.3.7) counts down one slot per idle
//! slot; a frame sensed at a hearer freezes its count, unless the
//! hearer's count ends within aCCATime of the frame's start (it cannot
//! tell yet, and sends too: the two collide). Its access event is then
//! invalidated by bumping its `token`, and rescheduled from the
//! remaining slots when the medium is idle again.
//!
//! A station whose ACK (CTS) does not come treats the medium as idle
//! from the instant that response would have ended, then defers DIFS:
//! both ends of a collision resume together with the stations that
//! deferred EIFS after the corrupted frame.

use super::{frame, Air, Kind, Mac, Own, Sta, Timer, TimerKind, Wireless};
use crate::room::release_nic;
use crate::{Context, DropReason, FrameId, NetEvent, NetId, NO_PORT};
use elvis_kernel::Time;
use rand::Rng as _;

fn wl(c: &mut impl Context, net: NetId) -> &mut Wireless {
    match c.fabric_mut().networks[net as usize]
        .wireless
        .as_deref_mut()
    {
        Some(w) => w,
        None => unreachable!("a wireless event on a wired network"),
    }
}

fn now(c: &impl Context) -> u64 {
    c.now().as_nanos()
}

fn timer(c: &mut impl Context, at: u64, net: NetId, port: u32, token: u32, kind: TimerKind) {
    let t = Timer {
        net,
        port,
        token,
        kind,
    };
    c.schedule(Time::from_nanos(at), NetEvent::Wireless(t));
}

/// Runs a wireless timer.
pub fn handle(c: &mut impl Context, t: Timer) {
    match t.kind {
        TimerKind::Access => on_access(c, t.net, t.port, t.token),
        TimerKind::TxEnd => on_tx_end(c, t.net, t.port, t.token),
        TimerKind::Timeout => on_timeout(c, t.net, t.port, t.token),
        TimerKind::Respond => on_respond(c, t.net, t.port),
    }
}

/// Returns the port a frame's destination MAC is on (`None`: broadcast or
/// multicast; `Some(None)`: a unicast MAC on no port).
fn dst_port(c: &impl Context, net: NetId, id: FrameId) -> Option<Option<u32>> {
    let f = c.fabric();
    let mut mac = [0u8; 6];
    if f.frames[id as usize].copy_to_slice(0, &mut mac).is_err() || mac[0] & 1 == 1 {
        return None;
    }
    Some(f.networks[net as usize].port_of_mac(mac))
}

/// Hands frame `id` (in the slab) to the MAC of `port` (from
/// [`crate::transmit`]).
pub(crate) fn transmit(c: &mut impl Context, net: NetId, port: u32, id: FrameId) {
    if dst_port(c, net, id) == Some(None) {
        c.fabric_mut().frames.remove(id as usize);
        return c.dropped(DropReason::UnknownDestination);
    }
    let n = &mut c.fabric_mut().networks[net as usize];
    n.ports[port as usize].inflight += 1;
    let ports = n.ports.len();
    let w = wl(c, net);
    w.grow(ports);
    w.sta[port as usize].queue.push_back(id);
    if w.sta[port as usize].own == Own::Idle {
        start_next(c, net, port);
    }
}

/// Draws a back-off of the station on `port` (uniform in 0..=CW).
fn draw(c: &mut impl Context, net: NetId, port: u32) {
    let n = &mut c.fabric_mut().networks[net as usize];
    let Some(w) = n.wireless.as_deref_mut() else {
        return;
    };
    let s = &mut w.sta[port as usize];
    s.backoff = Some(n.rng.random_range(0..=s.cw));
}

/// The station on `port` takes up its next frame, if any.
fn start_next(c: &mut impl Context, net: NetId, port: u32) {
    let now = now(c);
    let w = wl(c, net);
    let (t, none) = (w.t, w.cfg.mac == Mac::None);
    let s = &mut w.sta[port as usize];
    let Some(&id) = s.queue.front() else {
        s.own = Own::Idle;
        return;
    };
    if none {
        s.own = Own::Sending;
        let dst = dst_port(c, net, id).flatten();
        return send_data(c, net, port, dst, 0);
    }
    s.own = Own::Contend;
    if s.backoff.is_none() {
        // 10.3.4.2: a frame that finds the medium idle for DIFS goes at
        // once; otherwise the station backs off.
        let idle = s.cs == 0 && s.tx_air.is_none() && s.resp.is_none();
        let since = s.busy_end.max(s.nav_until) + if s.eifs { t.eifs } else { t.difs };
        if idle && now >= since {
            s.backoff = Some(0);
        } else {
            draw(c, net, port);
        }
    }
    try_access(c, net, port);
}

/// Schedules the access of a contending station whose medium is idle.
fn try_access(c: &mut impl Context, net: NetId, port: u32) {
    let now = now(c);
    let w = wl(c, net);
    let t = w.t;
    let s = &mut w.sta[port as usize];
    if s.own != Own::Contend || s.cs > 0 || s.tx_air.is_some() || s.resp.is_some() {
        return;
    }
    let idle_from = s.busy_end.max(s.nav_until);
    let start = idle_from + if s.eifs { t.eifs } else { t.difs };
    let at = (start + u64::from(s.backoff.unwrap_or(0)) * t.slot).max(now);
    s.count_from = start;
    s.grant = Some(at);
    s.token = s.token.wrapping_add(1);
    let token = s.token;
    timer(c, at, net, port, token, TimerKind::Access);
}

/// The medium of `s` turns busy at `now`: freezes its back-off unless it
/// ends within aCCATime (see the module documentation).
fn freeze(s: &mut Sta, slot: u64, cca: u64, now: u64) {
    let Some(grant) = s.grant else {
        return;
    };
    if grant < now + cca {
        return;
    }
    let done = now.saturating_sub(s.count_from) / slot;
    let left = u64::from(s.backoff.unwrap_or(0)).saturating_sub(done);
    s.backoff = Some(left as u32);
    s.grant = None;
    s.token = s.token.wrapping_add(1);
}

/// A contending station's back-off is over: it sends its head frame, or
/// an RTS for it.
fn on_access(c: &mut impl Context, net: NetId, port: u32, token: u32) {
    let w = wl(c, net);
    let s = &mut w.sta[port as usize];
    if s.token != token || s.own != Own::Contend || s.grant.is_none() {
        return;
    }
    s.grant = None;
    s.backoff = None;
    s.own = Own::Sending;
    let Some(&id) = s.queue.front() else {
        s.own = Own::Idle;
        return;
    };
    let (t, rts_threshold, std, rate) = (w.t, w.cfg.rts_threshold, w.cfg.standard, w.cfg.rate_bps);
    let dst = dst_port(c, net, id).flatten();
    let mpdu = c.fabric().frames[id as usize].len() + super::phy::DATA_OVERHEAD;
    match dst {
        Some(to) if mpdu > rts_threshold as usize => {
            let data = std.tx_ns(mpdu, rate);
            let nav = 3 * t.sifs + 2 * t.ack + data;
            wl(c, net).stats.rts += 1;
            start_air(c, net, port, Kind::Rts, Some(to), id, nav);
        }
        _ => send_data(c, net, port, dst, t.sifs + t.ack),
    }
}

/// Puts the head frame of `port` on the air (NAV `nav` if unicast).
fn send_data(c: &mut impl Context, net: NetId, port: u32, dst: Option<u32>, nav: u64) {
    let w = wl(c, net);
    let Some(&id) = w.sta[port as usize].queue.front() else {
        return;
    };
    let nav = if dst.is_some() { nav } else { 0 };
    start_air(c, net, port, Kind::Data, dst, id, nav);
}

/// Starts a transmission from `port`: the hearers' receivers take it in,
/// the capture records it, its end is scheduled.
fn start_air(
    c: &mut impl Context,
    net: NetId,
    port: u32,
    kind: Kind,
    dst: Option<u32>,
    frame: FrameId,
    nav: u64,
) {
    let now = now(c);
    let bytes = c.fabric().frames.get(frame as usize).map_or(0, |m| m.len());
    let w = wl(c, net);
    let s = &w.sta[port as usize];
    let retry = s.retry && kind == Kind::Data;
    let dur = match kind {
        Kind::Data => (w.cfg.standard).tx_ns(bytes + super::phy::DATA_OVERHEAD, w.cfg.rate_bps),
        Kind::Ack | Kind::Cts => w.t.ack,
        Kind::Rts => w.t.rts,
    };
    let air = Air {
        sender: port,
        kind,
        dst,
        frame,
        nav,
        seq: s.seq,
        hearers: w.hearers(port, now),
    };
    let f = c.fabric_mut();
    if f.pcap.captures(net) {
        let m = frame::capture(&f.frames, net, &air, retry);
        f.pcap.record(net, Time::from_nanos(now), &m);
    }
    let w = wl(c, net);
    let dcf = w.cfg.mac == Mac::Dcf;
    let hearers = if dcf {
        air.hearers.clone()
    } else {
        Default::default()
    };
    let id = w.air.insert(air) as u32;
    w.stats.transmissions += 1;
    let s = &mut w.sta[port as usize];
    s.tx_air = Some(id);
    if s.locked.is_some() {
        // Half duplex: sending ruins the frame it was receiving.
        s.lock_ok = false;
    }
    for (p, power) in hearers {
        signal_start(w, p, id, power, now);
    }
    timer(c, now + dur, net, port, id, TimerKind::TxEnd);
}

/// Frame `air` starts arriving at station `p` with `power`.
fn signal_start(w: &mut Wireless, p: u32, air: u32, power: f64, now: u64) {
    let (rx_thr, cs_thr, t) = (w.rx_thr, w.cs_thr, w.t);
    let prop = &w.cfg.propagation;
    let s = &mut w.sta[p as usize];
    let before: f64 = s.signals.iter().map(|&(_, pw)| pw).sum();
    s.signals.push((air, power));
    if let Some(l) = s.locked {
        let pl = s.signals.iter().find(|x| x.0 == l).map_or(0.0, |x| x.1);
        if !prop.survives(pl, before + power - pl) {
            s.lock_ok = false;
        }
    } else if s.tx_air.is_none() && power >= rx_thr && prop.survives(power, before) {
        s.locked = Some(air);
        s.lock_ok = true;
    }
    if power >= cs_thr {
        s.cs += 1;
        if s.cs == 1 {
            freeze(s, t.slot, t.cca, now);
        }
    }
}

/// Frame `air` stops arriving at station `p`; returns whether `p`
/// decoded it.
fn signal_end(w: &mut Wireless, p: u32, air: u32, now: u64) -> bool {
    let cs_thr = w.cs_thr;
    let s = &mut w.sta[p as usize];
    let Some(i) = s.signals.iter().position(|x| x.0 == air) else {
        return false;
    };
    let (_, power) = s.signals.swap_remove(i);
    if power >= cs_thr {
        s.cs -= 1;
    }
    let mut got = false;
    if s.locked == Some(air) {
        s.locked = None;
        got = s.lock_ok;
        // A frame received in error starts EIFS; a good one ends it.
        s.eifs = !got;
        if !got {
            w.stats.collisions += 1;
        }
    }
    let s = &mut w.sta[p as usize];
    if s.cs == 0 {
        s.busy_end = s.busy_end.max(now);
    }
    got
}

/// A transmission ends: its hearers decode it or not, the sender waits
/// for the response or takes its next frame.
fn on_tx_end(c: &mut impl Context, net: NetId, port: u32, air_id: u32) {
    let now = now(c);
    let w = wl(c, net);
    let Some(air) = w.air.try_remove(air_id as usize) else {
        return;
    };
    let s = &mut w.sta[port as usize];
    s.tx_air = None;
    s.busy_end = s.busy_end.max(now);
    let none = w.cfg.mac == Mac::None;
    let mut got = smallvec::SmallVec::<[u32; 8]>::new();
    for &(p, power) in &air.hearers {
        let decoded = if none {
            power >= w.rx_thr
        } else {
            signal_end(w, p, air_id, now)
        };
        if decoded {
            got.push(p);
        }
    }
    if none && air.dst.is_some_and(|d| !got.contains(&d)) {
        c.fabric_mut().networks[net as usize].stats.lost += 1;
    }
    for &p in &got {
        on_receive(c, net, p, &air, now);
    }
    let w = wl(c, net);
    let t = w.t;
    let s = &mut w.sta[port as usize];
    match air.kind {
        Kind::Data | Kind::Rts if air.dst.is_some() && !none => {
            s.own = if air.kind == Kind::Rts {
                Own::WaitCts
            } else {
                Own::WaitAck
            };
            s.resp_end = now + t.sifs + t.ack;
            s.token = s.token.wrapping_add(1);
            let (at, token) = (s.resp_end + t.slot, s.token);
            timer(c, at, net, port, token, TimerKind::Timeout);
        }
        Kind::Data | Kind::Rts => finish(c, net, port, true),
        Kind::Ack | Kind::Cts => try_access(c, net, port),
    }
    for &(p, _) in &air.hearers {
        try_access(c, net, p);
    }
}

/// Station `p` decoded `air`.
fn on_receive(c: &mut impl Context, net: NetId, p: u32, air: &Air, now: u64) {
    let w = wl(c, net);
    let t = w.t;
    let for_me = air.dst == Some(p) || (air.dst.is_none() && air.kind == Kind::Data);
    let s = &mut w.sta[p as usize];
    if !for_me {
        // 10.3.2.4: the Duration of a frame for another station sets
        // the NAV.
        s.nav_until = s.nav_until.max(now + air.nav);
        return;
    }
    match air.kind {
        Kind::Data => {
            let key = (air.sender, air.seq);
            let duplicate = air.dst.is_some() && s.recent.contains(&key);
            if air.dst.is_some() {
                s.recent.retain(|x| x.0 != air.sender);
                s.recent.push(key);
                s.resp = Some((Kind::Ack, air.sender, 0));
                timer(c, now + t.sifs, net, p, 0, TimerKind::Respond);
            }
            if !duplicate {
                deliver(c, net, p, air);
            }
        }
        Kind::Ack if s.own == Own::WaitAck => {
            s.token = s.token.wrapping_add(1);
            finish(c, net, p, true);
        }
        Kind::Rts if s.nav_until <= now && s.resp.is_none() => {
            s.resp = Some((Kind::Cts, air.sender, air.nav - t.sifs - t.ack));
            timer(c, now + t.sifs, net, p, 0, TimerKind::Respond);
        }
        Kind::Cts if s.own == Own::WaitCts => {
            s.token = s.token.wrapping_add(1);
            s.ssrc = 0;
            s.own = Own::Sending;
            s.resp = Some((Kind::Data, air.sender, t.sifs + t.ack));
            timer(c, now + t.sifs, net, p, 0, TimerKind::Respond);
        }
        _ => {}
    }
}

/// Hands a copy of data frame `air` to the machine on `p`, if it is for
/// it (a multicast frame: if its machine joined the group).
fn deliver(c: &mut impl Context, net: NetId, p: u32, air: &Air) {
    let f = c.fabric_mut();
    let frame = &f.frames[air.frame as usize];
    let mut mac = [0u8; 6];
    let _ = frame.copy_to_slice(0, &mut mac);
    let n = &f.networks[net as usize];
    if mac[0] & 1 == 1 && mac != [0xff; 6] {
        let member = n.multicast.get(&mac).is_some_and(|m| m.contains(&p));
        if !member {
            return;
        }
    }
    let latency = n.cfg.latency_ns;
    let copy = frame.clone();
    let bytes = copy.len() as u64;
    let id = f.frames.insert(copy) as FrameId;
    let w = wl(c, net);
    w.stats.delivered += 1;
    w.stats.delivered_bytes += bytes;
    let event = NetEvent::Deliver {
        net,
        port: p,
        frame: id,
        from: NO_PORT,
    };
    let at = now(c) + latency;
    c.schedule(Time::from_nanos(at), event);
}

/// A SIFS response of `p` starts: an ACK, a CTS, or its data after a CTS.
fn on_respond(c: &mut impl Context, net: NetId, p: u32) {
    let w = wl(c, net);
    let s = &mut w.sta[p as usize];
    let Some((kind, to, nav)) = s.resp.take() else {
        return;
    };
    if s.tx_air.is_some() {
        return;
    }
    match kind {
        Kind::Data => send_data(c, net, p, Some(to), nav),
        _ => start_air(c, net, p, kind, Some(to), FrameId::MAX, nav),
    }
}

/// No CTS or ACK came: retries the head frame, or drops it at the retry
/// limit and reports the link failure (10.3.4.4).
fn on_timeout(c: &mut impl Context, net: NetId, port: u32, token: u32) {
    let w = wl(c, net);
    let (cw_max, threshold) = (w.cfg.standard.cw_max(), w.cfg.rts_threshold as usize);
    let (short, long_limit) = (w.cfg.short_retry, w.cfg.long_retry);
    let s = &mut w.sta[port as usize];
    if s.token != token || !matches!(s.own, Own::WaitAck | Own::WaitCts) {
        return;
    }
    let rts = s.own == Own::WaitCts;
    s.busy_end = s.busy_end.max(s.resp_end);
    s.eifs = false;
    let Some(&id) = s.queue.front() else {
        return;
    };
    let mpdu = c.fabric().frames[id as usize].len() + super::phy::DATA_OVERHEAD;
    let w = wl(c, net);
    let s = &mut w.sta[port as usize];
    if !rts && mpdu > threshold {
        s.slrc += 1;
    } else {
        s.ssrc += 1;
    }
    if s.ssrc >= short || s.slrc >= long_limit {
        w.stats.retry_drops += 1;
        return finish(c, net, port, false);
    }
    w.stats.retries += 1;
    s.cw = (2 * s.cw + 1).min(cw_max);
    s.retry = true;
    s.own = Own::Contend;
    draw(c, net, port);
    try_access(c, net, port);
}

/// The head frame of `port` is done with: sent (`ok`), or dropped at the
/// retry limit (reported to [`Context::link_failed`]). Resets the
/// contention window, draws the post-transmission back-off, frees the
/// NIC slot and takes up the next frame.
fn finish(c: &mut impl Context, net: NetId, port: u32, ok: bool) {
    let w = wl(c, net);
    let (cw_min, dcf) = (w.cfg.standard.cw_min(), w.cfg.mac == Mac::Dcf);
    let s = &mut w.sta[port as usize];
    let Some(id) = s.queue.pop_front() else {
        return;
    };
    s.cw = cw_min;
    s.ssrc = 0;
    s.slrc = 0;
    s.retry = false;
    s.seq = s.seq.wrapping_add(1) & 0x0fff;
    s.own = Own::Idle;
    if dcf {
        draw(c, net, port);
    }
    let frame = c.fabric_mut().frames.remove(id as usize);
    if !ok {
        let mut dst = [0u8; 6];
        let _ = frame.copy_to_slice(0, &mut dst);
        c.link_failed(net, port, dst, frame);
    }
    release_nic(c, net, port);
    let s = &wl(c, net).sta[port as usize];
    if s.own == Own::Idle {
        start_next(c, net, port);
    }
}
