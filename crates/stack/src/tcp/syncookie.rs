//! The SYN backlog of a listening socket and SYN cookies (RFC 4987
//! §3.1 and §3.6), the server's defences against a SYN flood.
//!
//! A listener keeps at most `min(backlog, max_syn_backlog)` connections in
//! SYN-RECEIVED (its *SYN backlog*; `backlog` is what the application gave
//! `listen`). A SYN beyond that is an overflow: with SYN cookies on (the
//! default, like Linux's `tcp_syncookies=1`, which sends cookies only when
//! the queue overflows) it is answered with a SYN-ACK whose sequence number
//! is a *cookie* and no state is kept; with cookies off it is dropped
//! (`syn_backlog_full`) and the client retries after its RTO. A SYN that
//! finds the accept queue full (`ready` connections, not yet accepted, up
//! to `backlog`) is dropped (`listen_queue_full`), cookies or not, as on
//! Linux.
//!
//! An ACK that reaches a listener (no connection for its 4-tuple) within
//! two minutes of an overflow is checked as the answer to a cookie
//! SYN-ACK: a valid cookie re-creates the connection, ESTABLISHED at once
//! (its first data, if any, is accepted with it); an invalid one is
//! dropped (`bad_syn_cookie`), without the RST a listener otherwise sends,
//! as Linux's `cookie_v4_check`.
//!
//! The cookie is Linux's encoding (`secure_tcp_syn_cookie`, 24-bit
//! `COOKIEBITS`):
//!
//! ```text
//! cookie = H(k, 4-tuple, 0) + client ISN + (t << 24) + ((H(k, 4-tuple, t) + mss_index) mod 2^24)
//! ```
//!
//! where `t` is a one-minute counter of virtual time, `H` SipHash-2-4
//! (`siphasher`) keyed per machine from the simulation seed, and
//! `mss_index` the position in [`MSS_TABLE`] of the largest MSS not above
//! the client's. A cookie is valid while `t` is at most one minute old
//! (Linux's `MAX_SYNCOOKIE_AGE` of 2 counter values).
//!
//! | setting | default | NDL (`[Protocol name='TCP' …]`) | Linux |
//! |---|---|---|---|
//! | SYN cookies | on when the SYN backlog overflows | `syn_cookies='on'` / `'off'` | `net.ipv4.tcp_syncookies=1` |
//! | SYN backlog cap | none: the listen backlog alone | `syn_backlog='N'` | the SYN queue is full at the listen backlog, itself capped by `net.core.somaxconn` (4096) |
//!
//! # Gaps
//! A cookie SYN-ACK carries only the MSS option: window scaling, SACK and
//! timestamps are off on a cookie connection (Linux keeps them by encoding
//! them in the timestamp option when the client sends one). The SYN
//! backlog is not shrunk under memory pressure, and a SYN-RECEIVED
//! connection lives through `syn_retries` SYN-ACK retransmissions (about
//! two minutes; Linux's `tcp_synack_retries=5` gives about one).

use super::tcb::Segment;
use super::{add_conn, drive, mtu_towards, new_cc, transmit, Listener, Tcb, TcpSock};
use crate::counters::DropReason;
use crate::endpoint::{alloc_slot, SocketSlot};
use crate::hosts::Hosts;
use crate::machine::MachineId;
use elvis_kernel::rng::mix;
use elvis_kernel::Time;
use elvis_message::Message;
use elvis_wire::tcp::{Control, Repr, SeqNumber};
use siphasher::sip::SipHasher24;
use std::hash::Hasher;
use std::net::SocketAddrV4;
use std::time::Duration;

/// The MSS values a cookie can carry (Linux's `msstab` for IPv4).
pub const MSS_TABLE: [u16; 4] = [536, 1300, 1440, 1460];

/// Bits of the cookie below the time counter (Linux's `COOKIEBITS`).
const COOKIE_BITS: u32 = 24;
const COOKIE_MASK: u32 = (1 << COOKIE_BITS) - 1;
/// Counter values a cookie stays valid for (Linux's `MAX_SYNCOOKIE_AGE`).
const MAX_AGE: u32 = 2;
/// The period of the cookie's time counter (Linux's `tcp_cookie_time`).
const PERIOD: Duration = Duration::from_secs(60);
/// How long after an overflow an ACK to a listener is checked as a cookie
/// (Linux's `TCP_SYNCOOKIE_VALID`).
const VALID: Duration = Duration::from_secs(120);

/// A machine's SYN-flood defences (per machine group; see the module
/// table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SynDefence {
    /// Answer SYNs beyond the SYN backlog with cookies.
    pub cookies: bool,
    /// Cap on any listener's SYN backlog, below its listen backlog (none by
    /// default: Linux's SYN queue is full at the listen backlog; its
    /// `somaxconn` cap of 4096 on that backlog is not applied, and its
    /// `tcp_max_syn_backlog`, which only thins the queue with cookies
    /// off, is not modelled).
    pub max_syn_backlog: usize,
}

impl Default for SynDefence {
    fn default() -> Self {
        SynDefence {
            cookies: true,
            max_syn_backlog: usize::MAX,
        }
    }
}

/// The 4-tuple of a connection as the server sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuple {
    pub local: SocketAddrV4,
    pub remote: SocketAddrV4,
}

/// The secret of a machine's cookies: two SipHash keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key(u64, u64);

impl Key {
    /// The key of machine `m` in a run with `seed`.
    pub fn new(seed: u64, m: MachineId) -> Self {
        let base = mix(seed ^ mix(u64::from(m) ^ 0x7379_6e63_6f6f_6b69));
        Key(mix(base ^ 1), mix(base ^ 2))
    }

    /// Returns `H(k, tuple, count, c)` (Linux's `cookie_hash`).
    fn hash(&self, t: &Tuple, count: u32, c: u32) -> u32 {
        let mut h = SipHasher24::new_with_keys(self.0, self.1);
        h.write_u32(u32::from(*t.remote.ip()));
        h.write_u32(u32::from(*t.local.ip()));
        h.write_u16(t.remote.port());
        h.write_u16(t.local.port());
        h.write_u32(count);
        h.write_u32(c);
        h.finish() as u32
    }
}

/// Returns the cookie's time counter at `now`.
pub fn counter(now: Time) -> u32 {
    (now.as_nanos() / PERIOD.as_nanos() as u64) as u32
}

/// Returns the index in [`MSS_TABLE`] of the largest entry not above
/// `mss` (0 for anything below 1300).
pub fn mss_index(mss: u16) -> u32 {
    MSS_TABLE.iter().rposition(|&v| mss >= v).unwrap_or(0) as u32
}

/// Returns the cookie (the SYN-ACK's sequence number) for a SYN with
/// sequence number `client_isn` and MSS index `mss_ix`, at counter `count`.
pub fn encode(key: &Key, t: &Tuple, client_isn: u32, count: u32, mss_ix: u32) -> u32 {
    key.hash(t, 0, 0)
        .wrapping_add(client_isn)
        .wrapping_add(count << COOKIE_BITS)
        .wrapping_add(key.hash(t, count, 1).wrapping_add(mss_ix) & COOKIE_MASK)
}

/// Checks `cookie` (the ACK's acknowledgment number less one) against
/// the client's ISN (its sequence number less one) at counter `count`;
/// returns the MSS it carries, or `None` for a forged or stale cookie
/// (Linux's `check_tcp_syn_cookie` and `cookie_v4_check`).
pub fn check(key: &Key, t: &Tuple, cookie: u32, client_isn: u32, count: u32) -> Option<u16> {
    let c = cookie.wrapping_sub(key.hash(t, 0, 0).wrapping_add(client_isn));
    let diff = count.wrapping_sub(c >> COOKIE_BITS) & (u32::MAX >> COOKIE_BITS);
    if diff >= MAX_AGE {
        return None;
    }
    let ix = c.wrapping_sub(key.hash(t, count.wrapping_sub(diff), 1)) & COOKIE_MASK;
    MSS_TABLE.get(ix as usize).copied()
}

/// Returns the listener's SYN-flood defences (its machine group's).
fn defence(w: &Hosts, m: MachineId) -> SynDefence {
    w.groups[w.machines[m as usize].group as usize].syn
}

/// A SYN reached listener `lst` whose SYN backlog is full: answers it with
/// a cookie SYN-ACK, or drops it when the machine has cookies off.
#[cold]
#[inline(never)]
pub(super) fn overflow(w: &mut Hosts, m: MachineId, t: Tuple, syn: &Repr, mtu: usize) {
    if !defence(w, m).cookies {
        return w.drop_packet(DropReason::SynBacklogFull);
    }
    let ours = (mtu.saturating_sub(40)).min(usize::from(u16::MAX)) as u16;
    let mss_ix = mss_index(syn.max_seg_size.unwrap_or(536).min(ours));
    let key = Key::new(w.config.seed, m);
    let cookie = encode(&key, &t, syn.seq_number.0, counter(w.now()), mss_ix);
    let window = w.stack.tcp.rcvbuf.min(usize::from(u16::MAX)) as u16;
    let repr = Repr {
        src_port: t.local.port(),
        dst_port: t.remote.port(),
        control: Control::Syn,
        seq_number: SeqNumber(cookie),
        ack_number: Some(syn.seq_number + 1),
        window_len: window,
        window_scale: None,
        max_seg_size: Some(MSS_TABLE[mss_ix as usize]),
        sack_permitted: false,
        sack_ranges: [None; 4],
        timestamp: None,
        ece: false,
        cwr: false,
        payload_len: 0,
    };
    w.obs.stats.syn_cookies_sent += 1;
    let flow = super::tcp_flow(t.local, t.remote);
    let route = crate::ipv4::route_flow(w, m, *t.remote.ip(), Some(&flow)).ok();
    let mut seg = Segment {
        repr,
        payload: Message::new(),
        ect: false,
        gso_size: 0,
    };
    transmit(w, m, t.local, t.remote, route, &mut seg);
}

/// An ACK reached listener `l` (no connection for its 4-tuple). Returns
/// false when it is not taken as a cookie answer (no overflow in the last
/// two minutes, cookies off, or not a bare ACK): the caller answers it
/// with RST. Otherwise it was dropped (a bad cookie, or the accept queue
/// full) or made a connection. Out of line and cold: `tcp::demux`, which
/// every segment crosses, keeps its code as before.
#[cold]
#[inline(never)]
pub(super) fn ack(
    w: &mut Hosts,
    m: MachineId,
    l: u32,
    t: Tuple,
    seg: &Repr,
    payload: &mut Message,
) -> bool {
    let now = w.now();
    let Some(SocketSlot::TcpListener(lst)) = w.machines[m as usize].sockets.get(l as usize) else {
        return false;
    };
    let recent = lst.last_overflow.is_some_and(|at| now < at + VALID);
    let bare = matches!(seg.control, Control::None | Control::Psh);
    if !recent || !bare || !defence(w, m).cookies {
        return false;
    }
    let full = lst.ready.len() >= lst.backlog;
    let Some(ack) = seg.ack_number else {
        return false;
    };
    let key = Key::new(w.config.seed, m);
    let client_isn = seg.seq_number.0.wrapping_sub(1);
    let cookie = ack.0.wrapping_sub(1);
    let Some(mss) = check(&key, &t, cookie, client_isn, counter(now)) else {
        w.drop_packet(DropReason::BadSynCookie);
        return true;
    };
    if full {
        w.drop_packet(DropReason::ListenQueueFull);
        return true;
    }
    w.obs.stats.syn_cookies_validated += 1;
    establish(w, m, l, t, seg, mss, payload);
    true
}

/// Re-creates the connection a valid cookie stands for and hands it the
/// ACK (and its data), which makes it ESTABLISHED and ready to accept.
fn establish(
    w: &mut Hosts,
    m: MachineId,
    l: u32,
    t: Tuple,
    seg: &Repr,
    mss: u16,
    payload: &mut Message,
) {
    let Some(SocketSlot::TcpListener(lst)) = w.machines[m as usize].sockets.get_mut(l as usize)
    else {
        return;
    };
    // Counted as embryonic until `drive` moves it to the accept queue.
    lst.embryonic += 1;
    let opts = lst.opts.clone();
    let Ok(mtu) = mtu_towards(w, m, *t.remote.ip()) else {
        return rollback(w, m, l);
    };
    let cfg = opts.config(w);
    let cc = new_cc(w, cfg.congestion, mtu - 40);
    // The SYN the cookie stands for: its ISN and MSS, no other option.
    let syn = Repr {
        src_port: t.remote.port(),
        dst_port: t.local.port(),
        control: Control::Syn,
        seq_number: seg.seq_number - 1,
        ack_number: None,
        window_len: seg.window_len,
        window_scale: None,
        max_seg_size: Some(mss),
        sack_permitted: false,
        sack_ranges: [None; 4],
        timestamp: None,
        ece: false,
        cwr: false,
        payload_len: 0,
    };
    let iss = seg.ack_number.map_or(SeqNumber(0), |a| a - 1);
    let mut tcb = Tcb::accept_cookie(&cfg, t.local, t.remote, iss, cc, mtu, &syn);
    opts.apply(&mut tcb);
    let id = w.obs.conns.open(m, &tcb, w.sched.queue.now());
    let sock = TcpSock {
        listener: Some(l),
        orphan: true,
        ..TcpSock::new(tcb, id, w.now())
    };
    let slot = alloc_slot(w, m, SocketSlot::Tcp(Box::new(sock)));
    add_conn(w, m, t.local.port(), t.remote, slot);
    let ecn = 0;
    drive(w, m, slot, |tcb, now, out| {
        tcb.input_merged(now, seg, ecn, std::mem::take(payload), 1, out)
    });
}

/// Undoes the embryonic count of a connection that could not be made.
fn rollback(w: &mut Hosts, m: MachineId, l: u32) {
    if let Some(SocketSlot::TcpListener(lst)) = w.machines[m as usize].sockets.get_mut(l as usize) {
        lst.embryonic = lst.embryonic.saturating_sub(1);
    }
}

/// Returns true when listener `lst` holds its full SYN backlog (and notes
/// the overflow at `now`, which opens the cookie check for two minutes).
pub(super) fn backlog_full(lst: &mut Listener, d: SynDefence, now: Time) -> bool {
    if lst.embryonic < lst.backlog.min(d.max_syn_backlog.max(1)) {
        return false;
    }
    lst.last_overflow = Some(now);
    true
}

/// Returns the machine's defences (for `passive_open`).
pub(super) fn of(w: &Hosts, m: MachineId) -> SynDefence {
    defence(w, m)
}

#[cfg(test)]
mod lab;

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn tuple() -> Tuple {
        Tuple {
            local: SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 80),
            remote: SocketAddrV4::new(Ipv4Addr::new(10, 9, 3, 4), 40_000),
        }
    }

    #[test]
    fn a_cookie_checks_back_to_the_mss_it_encodes() {
        let k = Key::new(7, 3);
        for ix in 0..4 {
            let c = encode(&k, &tuple(), 0xdead_beef, 1000, ix);
            assert_eq!(
                check(&k, &tuple(), c, 0xdead_beef, 1000),
                Some(MSS_TABLE[ix as usize])
            );
            // One minute later it still holds; two minutes later it does not.
            assert_eq!(
                check(&k, &tuple(), c, 0xdead_beef, 1001),
                Some(MSS_TABLE[ix as usize])
            );
            assert_eq!(check(&k, &tuple(), c, 0xdead_beef, 1002), None);
        }
    }

    #[test]
    fn a_forged_cookie_is_rejected() {
        let k = Key::new(7, 3);
        let c = encode(&k, &tuple(), 5, 1000, 3);
        // Another key, another 4-tuple, another client ISN or a guessed
        // number: all fail (the check leaves 2 of 2^24 low values valid).
        assert_eq!(check(&Key::new(8, 3), &tuple(), c, 5, 1000), None);
        let mut other = tuple();
        other.remote.set_port(40_001);
        assert_eq!(check(&k, &other, c, 5, 1000), None);
        // The client ISN enters additively (as in Linux): one off by less
        // than 4 only shifts the MSS index; further off, it fails.
        assert_eq!(check(&k, &tuple(), c, 6, 1000), Some(MSS_TABLE[2]));
        assert_eq!(check(&k, &tuple(), c, 105, 1000), None);
        assert_eq!(check(&k, &tuple(), c ^ 0x0010_0000, 5, 1000), None);
        let forged = (0..10_000u32)
            .filter(|g| check(&k, &tuple(), g.wrapping_mul(2_654_435_761), 5, 1000).is_some())
            .count();
        assert_eq!(forged, 0);
    }

    #[test]
    fn the_mss_index_takes_the_largest_entry_not_above_the_peer_mss() {
        assert_eq!(mss_index(1460), 3);
        assert_eq!(mss_index(1448), 2);
        assert_eq!(mss_index(1299), 0);
        assert_eq!(mss_index(100), 0);
        assert_eq!(counter(Time::from_nanos(119_999_999_999)), 1);
    }
}
