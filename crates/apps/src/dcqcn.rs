//! `dcqcn_send` / `dcqcn_receive`: RoCEv2-style rate-based message flows
//! over UDP with DCQCN congestion control (Zhu et al., "Congestion Control
//! for Large-Scale RDMA Deployments", SIGCOMM 2015).
//!
//! DCQCN has three parts. The switch (*congestion point*) marks ECN on
//! its queue, RED-style, on the instantaneous length (`qdisc='red'
//! red_wq='1' ecn='yes'`, the paper's K_min, K_max and P_max as `red_min`,
//! `red_max` and `red_max_p` with `red_bytes='yes'`). The receiver
//! (*notification point*, [`receive`]) answers a marked packet of a flow
//! with a congestion notification packet (CNP), at most one per flow
//! every `cnp_interval` (N = 50 µs). The sender (*reaction point*,
//! [`send`], the state machine in [`Reaction`]) sends ECT(0) packets
//! paced at its current rate R_C, starting at the line rate, and:
//!
//! - on a CNP: R_T ← R_C, R_C ← R_C (1 − α/2), α ← (1 − g) α + g, and
//!   the increase timer, byte counter and their counts restart;
//! - every `alpha_timer` (K = 55 µs) without a CNP: α ← (1 − g) α;
//! - on each increase event, the timer (every `timer`, T = 55 µs) or the
//!   byte counter (every `byte_counter` bytes sent, B = 10 MB), with t and
//!   b those events' counts since the last CNP before this one: *fast
//!   recovery* while max(t, b) < F (= 5), so for the first F events:
//!   R_C ← (R_T + R_C)/2; *hyper increase* once min(t, b) > F: R_T ← R_T +
//!   i·R_HAI with i = min(t, b) − F, then R_C ← (R_T + R_C)/2; otherwise
//!   *additive increase*: R_T ← R_T + R_AI, then R_C ← (R_T + R_C)/2.
//!   Rates stay between `min_rate` and the line rate.
//!
//! g = 1/256, N = 50 µs, K = 55 µs, T = 55 µs, B = 10 MB and F = 5 are
//! the paper's; R_AI = 40 Mbit/s is its value for 40 Gbit/s links. R_HAI
//! defaults to 10·R_AI (the paper gives no single value); `rai=` and
//! `rhai=` set both. α starts at 1, so the first CNP halves the rate.
//!
//! The packets are plain UDP datagrams to `port` (4791, RoCEv2's, by
//! default) whose first byte says data (1) or CNP (2), then the flow's
//! sequence number (bytes 1–8); they do not carry InfiniBand's base
//! transport header. A packet's time on the wire, for pacing, is its
//! Ethernet frame: payload + 42 bytes.
//!
//! # Gaps
//! No reliability (RoCE's go-back-N on a lost packet): a lost packet is
//! counted by the receiver, not resent. The rate is the sender's alone;
//! its NIC queue (back-pressure) still applies.

use crate::Host;
use elvis_api::{AppResult, Message, Time, UdpSocket};
use std::collections::BTreeMap;
use std::net::SocketAddrV4;
use std::rc::Rc;

/// RoCEv2's UDP destination port.
pub const ROCE_PORT: u16 = 4791;
/// Ethernet, IPv4 and UDP header bytes around a payload.
const FRAME_OVERHEAD: u64 = 42;
/// First byte of a data packet.
pub const DATA: u8 = 1;
/// First byte of a congestion notification packet.
pub const CNP: u8 = 2;
/// Payload bytes of a CNP.
pub const CNP_LEN: usize = 16;

/// The reaction point's parameters (rates in bit/s, times in ns).
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// The line rate: the first rate and the largest.
    pub line_rate: f64,
    pub min_rate: f64,
    /// g, α's gain.
    pub g: f64,
    /// K: α decays when no CNP came for this long.
    pub alpha_timer: u64,
    /// T: the rate-increase timer.
    pub timer: u64,
    /// B: the byte counter, bytes sent per increase event.
    pub byte_counter: u64,
    /// F: increase events of fast recovery.
    pub f: u32,
    pub rai: f64,
    pub rhai: f64,
}

impl Params {
    /// The paper's parameters for a `line_rate` link.
    pub fn paper(line_rate: f64) -> Params {
        Params {
            line_rate,
            min_rate: 10e6_f64.min(line_rate),
            g: 1.0 / 256.0,
            alpha_timer: 55_000,
            timer: 55_000,
            byte_counter: 10_000_000,
            f: 5,
            rai: 40e6,
            rhai: 400e6,
        }
    }
}

/// The reaction point: DCQCN's rate state machine, driven by CNPs, its
/// timers and bytes sent, with no clock of its own (each call says when).
#[derive(Clone, Debug)]
pub struct Reaction {
    pub p: Params,
    /// R_C, bit/s.
    pub rate: f64,
    /// R_T, bit/s.
    pub target: f64,
    pub alpha: f64,
    /// Timer and byte-counter events since the last CNP (t and b).
    pub timer_events: u32,
    pub byte_events: u32,
    /// Bytes sent since the last byte-counter event.
    bytes: u64,
    /// When the α and increase timers next expire (none before a CNP).
    pub next_alpha: Option<u64>,
    pub next_increase: Option<u64>,
    pub cnps: u64,
}

impl Reaction {
    pub fn new(p: Params) -> Reaction {
        Reaction {
            rate: p.line_rate,
            target: p.line_rate,
            alpha: 1.0,
            timer_events: 0,
            byte_events: 0,
            bytes: 0,
            next_alpha: None,
            next_increase: None,
            cnps: 0,
            p,
        }
    }

    /// A CNP arrived at `now`.
    pub fn on_cnp(&mut self, now: u64) {
        self.cnps += 1;
        self.target = self.rate;
        self.rate = (self.rate * (1.0 - self.alpha / 2.0)).max(self.p.min_rate);
        self.alpha = (1.0 - self.p.g) * self.alpha + self.p.g;
        self.timer_events = 0;
        self.byte_events = 0;
        self.bytes = 0;
        self.next_alpha = Some(now + self.p.alpha_timer);
        self.next_increase = Some(now + self.p.timer);
    }

    /// Runs the timers that expire at or before `now`, in time order.
    pub fn advance(&mut self, now: u64) {
        loop {
            let a = self.next_alpha.filter(|&t| t <= now);
            let i = self.next_increase.filter(|&t| t <= now);
            match (a, i) {
                (Some(ta), Some(ti)) if ta <= ti => self.alpha_expired(ta),
                (Some(ta), None) => self.alpha_expired(ta),
                (_, Some(ti)) => {
                    self.next_increase = Some(ti + self.p.timer);
                    self.increase();
                    self.timer_events += 1;
                }
                (None, None) => return,
            }
        }
    }

    fn alpha_expired(&mut self, at: u64) {
        self.alpha *= 1.0 - self.p.g;
        self.next_alpha = Some(at + self.p.alpha_timer);
    }

    /// `n` bytes went out: the byte counter's events.
    pub fn sent(&mut self, n: u64) {
        if self.next_increase.is_none() {
            return; // at the line rate, before any CNP: nothing to raise
        }
        self.bytes += n;
        while self.bytes >= self.p.byte_counter {
            self.bytes -= self.p.byte_counter;
            self.increase();
            self.byte_events += 1;
        }
    }

    /// One increase event: fast recovery, additive or hyper increase, by
    /// the counts of the events before it.
    fn increase(&mut self) {
        let (t, b, f) = (self.timer_events, self.byte_events, self.p.f);
        if t.max(b) < f {
            // Fast recovery: halve the distance to the target.
        } else if t.min(b) > f {
            self.target += f64::from(t.min(b) - f) * self.p.rhai;
        } else {
            self.target += self.p.rai;
        }
        self.target = self.target.min(self.p.line_rate);
        self.rate = ((self.target + self.rate) / 2.0).min(self.p.line_rate);
    }

    /// The time to send `payload` bytes at the current rate, ns.
    pub fn gap(&self, payload: usize) -> u64 {
        let bits = (payload as u64 + FRAME_OVERHEAD) * 8;
        (bits as f64 * 1e9 / self.rate).ceil() as u64
    }
}

/// What a sender does.
#[derive(Clone, Debug, PartialEq)]
pub struct SendConfig {
    pub to: SocketAddrV4,
    /// Payload bytes per packet.
    pub size: usize,
    /// Bytes to send (none: until the application's stop).
    pub bytes: Option<u64>,
    pub params: Params,
    /// The DSCP of every packet (RoCE's traffic class: a PFC network's
    /// lossless priority is chosen by it).
    pub dscp: u8,
}

/// A data packet of `size` payload bytes with sequence number `seq`.
fn data(size: usize, seq: u64) -> Message {
    let mut v = vec![0u8; size.max(9)];
    v[0] = DATA;
    v[1..9].copy_from_slice(&seq.to_be_bytes());
    Message::from_vec(v)
}

/// Sends the flow, paced by DCQCN; publishes `sent_bytes`, `cnps`,
/// `rate_bps` (R_C) and `alpha`, live.
pub async fn send(host: Host, cfg: Rc<SendConfig>) -> AppResult {
    let sock = host.udp_bind(0)?;
    sock.set_tos(cfg.dscp << 2 | 0b10)?; // DSCP, ECT(0)
    let mut rp = Reaction::new(cfg.params.clone());
    let sent = host.publish_live("sent_bytes", 0.0);
    let cnps = host.publish_live("cnps", 0.0);
    let rate = host.publish_live("rate_bps", rp.rate);
    let alpha = host.publish_live("alpha", rp.alpha);
    let size_of = |_, total: u64| match cfg.bytes {
        None => Some(cfg.size),
        Some(b) => (total < b).then(|| cfg.size.min((b - total) as usize)),
    };
    let after = |rp: &Reaction, total: u64| {
        sent.set(total as f64);
        cnps.set(rp.cnps as f64);
        rate.set(rp.rate);
        alpha.set(rp.alpha);
    };
    pace(host, &sock, cfg.to, &mut rp, size_of, data, after).await
}

/// The reaction point's send loop: while `size_of(seq, bytes sent)`
/// gives the next packet's payload size, sends `packet(size, seq)` to
/// `to` when the current rate allows, and reacts to the CNPs and timers
/// in between; `after` sees the state and the bytes sent after each
/// event. `sock` (sending ECT(0)) receives the CNPs.
///
/// # Errors
/// What sending or receiving on `sock` returns.
pub async fn pace(
    host: Host,
    sock: &UdpSocket,
    to: SocketAddrV4,
    rp: &mut Reaction,
    mut size_of: impl FnMut(u64, u64) -> Option<usize>,
    mut packet: impl FnMut(usize, u64) -> Message,
    mut after: impl FnMut(&Reaction, u64),
) -> AppResult {
    let (mut seq, mut total) = (0u64, 0u64);
    let mut next_send = host.now().as_nanos();
    while let Some(size) = size_of(seq, total) {
        let wake = [Some(next_send), rp.next_alpha, rp.next_increase]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(next_send);
        let got = host
            .timeout_at(Time::from_nanos(wake), sock.recv_from())
            .await;
        let now = host.now().as_nanos();
        rp.advance(now);
        if let Some(r) = got {
            let (mut m, _) = r?;
            if m.front(1) == Some(&[CNP][..]) {
                rp.on_cnp(now);
            }
        } else if now >= next_send {
            sock.send_to(packet(size, seq), to).await?;
            seq += 1;
            total += size as u64;
            rp.sent(size as u64 + FRAME_OVERHEAD);
            next_send = host.now().as_nanos().max(next_send) + rp.gap(size);
        }
        after(rp, total);
    }
    Ok(())
}

/// What a receiver does.
#[derive(Clone, Debug, PartialEq)]
pub struct ReceiveConfig {
    pub port: u16,
    /// N: least time between two CNPs to one flow, ns.
    pub cnp_interval: u64,
    /// Throughput is measured from this virtual time on, ns.
    pub measure_from: u64,
}

/// Per-flow state of the notification point.
#[derive(Default)]
struct Flow {
    last_cnp: Option<u64>,
    next_seq: u64,
}

/// Receives flows on `port` forever and answers CE-marked packets with
/// CNPs. Publishes, live: `received_bytes`, `packets`, `lost` (sequence
/// gaps), `marked` (CE packets), `cnps_sent`, and `throughput_bps` over
/// the bytes received from `measure_from` to the last arrival.
pub async fn receive(host: Host, cfg: Rc<ReceiveConfig>) -> AppResult {
    let sock = host.udp_bind(cfg.port)?;
    let names = [
        "received_bytes",
        "packets",
        "lost",
        "marked",
        "cnps_sent",
        "throughput_bps",
    ];
    let live: Vec<_> = names.iter().map(|n| host.publish_live(n, 0.0)).collect();
    let mut flows: BTreeMap<SocketAddrV4, Flow> = BTreeMap::new();
    let (mut bytes, mut packets, mut lost, mut marked, mut cnps) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let (mut window_bytes, mut first, mut last) = (0u64, None::<u64>, 0u64);
    let mut ce_seen = sock.ce_received();
    loop {
        let (mut m, from) = sock.recv_from().await?;
        let now = host.now().as_nanos();
        if m.front(1) != Some(&[DATA][..]) {
            continue;
        }
        let mut s = [0u8; 8];
        if let Some(b) = m.front(9) {
            s.copy_from_slice(&b[1..9]);
        }
        let seq = u64::from_be_bytes(s);
        let flow = flows.entry(from).or_default();
        lost += seq.saturating_sub(flow.next_seq);
        flow.next_seq = flow.next_seq.max(seq + 1);
        bytes += m.len() as u64;
        packets += 1;
        if now >= cfg.measure_from {
            window_bytes += m.len() as u64;
            first.get_or_insert(now);
            last = now;
        }
        let ce = sock.ce_received();
        if ce > ce_seen {
            marked += ce - ce_seen;
            ce_seen = ce;
            if flow.last_cnp.is_none_or(|t| now >= t + cfg.cnp_interval) {
                flow.last_cnp = Some(now);
                let mut v = vec![0u8; CNP_LEN];
                v[0] = CNP;
                sock.send_to(Message::from_vec(v), from).await?;
                cnps += 1;
            }
        }
        let span = first.map_or(0, |f| last.saturating_sub(f));
        let throughput = if span > 0 {
            window_bytes as f64 * 8e9 / span as f64
        } else {
            0.0
        };
        let values = [bytes, packets, lost, marked, cnps].map(|v| v as f64);
        for (l, v) in live.iter().zip(values.into_iter().chain([throughput])) {
            l.set(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: f64 = 10e9;

    #[test]
    fn the_first_cnp_halves_the_rate_and_alpha_stays_one() {
        let mut rp = Reaction::new(Params::paper(G));
        rp.on_cnp(1_000);
        assert_eq!(rp.rate, G / 2.0);
        assert_eq!(rp.target, G);
        assert_eq!(rp.alpha, 1.0, "(1 - g)·1 + g");
        // The second, at once: R_C (1 − α/2) again.
        rp.on_cnp(2_000);
        assert_eq!(rp.rate, G / 4.0);
        assert_eq!(rp.target, G / 2.0);
    }

    #[test]
    fn alpha_decays_by_one_minus_g_per_quiet_k() {
        let mut rp = Reaction::new(Params::paper(G));
        rp.on_cnp(0);
        // Timers at 55 µs, 110 µs, … : 10 expiries by 550 µs.
        rp.advance(550_000);
        let want = (1.0 - 1.0 / 256.0_f64).powi(10);
        assert!((rp.alpha - want).abs() < 1e-12, "{} vs {want}", rp.alpha);
    }

    #[test]
    fn fast_recovery_then_additive_then_hyper_increase() {
        let mut p = Params::paper(G);
        p.byte_counter = u64::MAX; // timer events only: b stays 0
        let mut rp = Reaction::new(p);
        rp.on_cnp(0);
        let (rt, rc0) = (rp.target, rp.rate);
        // F = 5 timer events of fast recovery: R_C → R_T − (R_T − R_C)/2^5.
        rp.advance(5 * 55_000);
        assert_eq!(rp.timer_events, 5);
        let want = rt - (rt - rc0) / 32.0;
        assert!((rp.rate - want).abs() < 1e-3, "{} vs {want}", rp.rate);
        assert_eq!(rp.target, rt.min(G));
        // With b = 0 hyper increase never starts: each further event adds
        // R_AI to the target (here capped by the line rate, which R_T is).
        let mut rp2 = Reaction::new(Params::paper(G));
        rp2.p.byte_counter = u64::MAX;
        rp2.on_cnp(0);
        rp2.on_cnp(1); // R_T = G/2, R_C = G/4
        rp2.advance(1 + 5 * 55_000);
        let t0 = rp2.target;
        rp2.advance(1 + 6 * 55_000);
        assert_eq!(rp2.target, t0 + 40e6, "additive increase");
        // Both counts above F: hyper increase by (min(t, b) − F)·R_HAI.
        let mut rp3 = Reaction::new(Params::paper(G));
        rp3.p.byte_counter = 1_000;
        rp3.on_cnp(0);
        rp3.on_cnp(1);
        // 7 byte events at t = 0: 5 of fast recovery, 2 additive.
        rp3.sent(7 * 1_000);
        assert_eq!(rp3.byte_events, 7);
        assert_eq!(rp3.target, G / 2.0 + 2.0 * 40e6);
        let t_before = rp3.target;
        // Timer events with b = 7: t = 0…5 additive (min(t, b) ≤ F), the
        // seventh (t = 6) hyper, by (6 − F)·R_HAI.
        rp3.advance(1 + 7 * 55_000);
        assert_eq!(rp3.timer_events, 7);
        assert_eq!(rp3.target, t_before + 6.0 * 40e6 + 400e6);
    }

    #[test]
    fn rates_stay_between_the_minimum_and_the_line_rate() {
        let mut rp = Reaction::new(Params::paper(G));
        for k in 0..100 {
            rp.on_cnp(k);
        }
        assert_eq!(rp.rate, rp.p.min_rate);
        rp.advance(1_000_000_000);
        assert!(rp.rate <= G && rp.target <= G);
        assert!(
            rp.rate > G * 0.99,
            "a second of quiet: back near the line rate"
        );
    }

    #[test]
    fn the_gap_is_the_frame_at_the_rate() {
        let rp = Reaction::new(Params::paper(1e9));
        // (1000 + 42) bytes at 1 Gbit/s: 8,336 ns.
        assert_eq!(rp.gap(1000), 8_336);
    }
}
