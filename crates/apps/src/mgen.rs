//! `mgen` / `mgen_sink`: a UDP traffic generator and its receiver, after
//! the U.S. Naval Research Laboratory's MGEN.
//!
//! `mgen` sends `size`-byte datagrams to `to`:`port` in one of MGEN's
//! patterns, at `rate` messages per second:
//!
//! | pattern | gaps between messages |
//! |---|---|
//! | `periodic` | exactly `1/rate` (in whole ns, rounded) |
//! | `poisson` | exponentially distributed, mean `1/rate`, drawn from the machine's seeded stream |
//! | `burst` | MGEN's `BURST`: bursts begin `burst_interval` apart on average (`burst_spacing='random'`, exponential gaps, the default, or `'regular'`); each lasts `burst_duration` (`burst_length='fixed'`, the default, or `'exp'` for an exponential length with that mean) and sends periodically at `rate` while on |
//!
//! The first message leaves at the start (the first burst begins then);
//! the generator ends after `count` messages or once `duration` has
//! passed since the start, whichever comes first (neither: it runs until
//! its `stop`). A periodic flow of `duration` D therefore sends exactly
//! `ceil(D / T)` messages, `T` the period in ns.
//!
//! Every datagram begins with MGEN's message header, in network byte
//! order; the rest is zeros:
//!
//! | bytes | field |
//! |---|---|
//! | 0–1 | message size (the whole payload) |
//! | 2 | version (2) |
//! | 3 | flags (0) |
//! | 4–7 | flow id (`flow`, default 1) |
//! | 8–11 | sequence number, 0 for the first message of the flow |
//! | 12–15 | send time, seconds of virtual time |
//! | 16–19 | send time, nanoseconds (MGEN: microseconds) |
//!
//! so `size` is at least [`HEADER_LEN`] bytes. `mgen_sink` (a daemon)
//! receives on `port` and keeps, over every flow it hears:
//! `received`, `lost` (sequence numbers below the highest one seen that
//! never arrived, per flow: `highest + 1 − received`), the one-way latency
//! (`latency_mean_ns`, nearest-rank `latency_p50_ns` and `latency_p99_ns`)
//! and `jitter_ns`, RFC 3550 §6.4.1's interarrival jitter
//! (`J += (|D| − J) / 16`, `D` the change in transit time between two
//! consecutive arrivals of a flow). Its metrics are live: the report holds
//! the values after the last datagram. `mgen` publishes `sent`.
//!
//! # Gaps
//! MGEN's other patterns (`JITTER`, `CLONE`), TCP flows, its logging and
//! its `FREQUENCY`/`RESERVE` events; the sink does not count reordering or
//! duplicates separately (a duplicate lowers `lost`).

use crate::Host;
use elvis_api::{AppResult, Message, Time};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::net::SocketAddrV4;
use std::rc::Rc;

/// Bytes of the MGEN header at the front of every message.
pub const HEADER_LEN: usize = 20;

/// When bursts begin (MGEN's `RANDOM` or `REGULAR`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spacing {
    Regular,
    Random,
}

/// How long a burst lasts (MGEN's `FIXED` or `EXP`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Length {
    Fixed,
    Exp,
}

/// The message pattern.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pattern {
    Periodic,
    Poisson,
    /// `interval` (ns, mean) between burst starts; `duration` (ns, mean)
    /// of a burst.
    Burst {
        interval: u64,
        spacing: Spacing,
        duration: u64,
        length: Length,
    },
}

/// Options of `mgen`.
#[derive(Clone, Debug)]
pub struct Config {
    pub to: SocketAddrV4,
    pub pattern: Pattern,
    /// Messages per second (while on, for bursts).
    pub rate: f64,
    /// Bytes per message, at least [`HEADER_LEN`].
    pub size: usize,
    pub flow: u32,
    pub count: Option<u64>,
    /// ns after the start.
    pub duration: Option<u64>,
}

/// Returns a uniform draw in [0, 1) from the machine's stream.
fn unit(host: &Host) -> f64 {
    (host.random_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Returns an exponential draw with mean `mean` ns (inverse transform).
fn exp_ns(host: &Host, mean: f64) -> u64 {
    exp_from(unit(host), mean)
}

/// Returns the exponential draw with mean `mean` for the uniform draw
/// `u` in [0, 1): `-mean · ln(1 − u)`, rounded to whole ns.
pub fn exp_from(u: f64, mean: f64) -> u64 {
    (-mean * (1.0 - u).ln()).round() as u64
}

/// Writes the MGEN header of message `seq` sent at `now` into a message
/// of `size` bytes.
pub fn encode(size: usize, flow: u32, seq: u32, now: Time) -> Message {
    let mut b = vec![0u8; size.max(HEADER_LEN)];
    let ns = now.as_nanos();
    b[0..2].copy_from_slice(&(size.min(usize::from(u16::MAX)) as u16).to_be_bytes());
    b[2] = 2;
    b[4..8].copy_from_slice(&flow.to_be_bytes());
    b[8..12].copy_from_slice(&seq.to_be_bytes());
    b[12..16].copy_from_slice(&((ns / 1_000_000_000) as u32).to_be_bytes());
    b[16..20].copy_from_slice(&((ns % 1_000_000_000) as u32).to_be_bytes());
    Message::from_vec(b)
}

/// Reads (flow, sequence number, send time in ns) from a message.
pub fn decode(m: &Message) -> Option<(u32, u32, u64)> {
    let mut h = [0u8; HEADER_LEN];
    m.copy_to_slice(0, &mut h).ok()?;
    if h[2] != 2 {
        return None;
    }
    let word = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    let ns = u64::from(word(12)) * 1_000_000_000 + u64::from(word(16));
    Some((word(4), word(8), ns))
}

/// The send times of a flow, one after another (ns since the run began).
struct Schedule {
    pattern: Pattern,
    period: u64,
    mean: f64,
    /// The current burst's end (bursts only).
    burst_end: u64,
    burst_start: u64,
}

impl Schedule {
    fn new(cfg: &Config, host: &Host, start: u64) -> Self {
        let mean = 1e9 / cfg.rate;
        let mut s = Schedule {
            pattern: cfg.pattern,
            period: (mean.round() as u64).max(1),
            mean,
            burst_end: start,
            burst_start: start,
        };
        if let Pattern::Burst { .. } = cfg.pattern {
            s.burst_end = start + s.burst_len(host);
        }
        s
    }

    fn burst_len(&self, host: &Host) -> u64 {
        match self.pattern {
            Pattern::Burst {
                duration,
                length: Length::Fixed,
                ..
            } => duration,
            Pattern::Burst { duration, .. } => exp_ns(host, duration as f64),
            _ => 0,
        }
    }

    /// Returns the time of the message after one sent at `t`.
    fn next(&mut self, host: &Host, t: u64) -> u64 {
        match self.pattern {
            Pattern::Periodic => t + self.period,
            Pattern::Poisson => t + exp_ns(host, self.mean),
            Pattern::Burst {
                interval, spacing, ..
            } => {
                let n = t + self.period;
                if n < self.burst_end {
                    return n;
                }
                // The next burst: its start drawn from the last one's.
                let gap = match spacing {
                    Spacing::Regular => interval,
                    Spacing::Random => exp_ns(host, interval as f64),
                };
                // A burst longer than the gap runs into the next one,
                // which then begins when it ends.
                self.burst_start = (self.burst_start + gap).max(n);
                self.burst_end = self.burst_start + self.burst_len(host);
                self.burst_start
            }
        }
    }
}

/// Sends the flow.
pub async fn run(host: Host, cfg: Rc<Config>) -> AppResult {
    let sock = host.udp_bind(0)?;
    let start = host.now().as_nanos();
    let end = cfg.duration.map_or(u64::MAX, |d| start.saturating_add(d));
    let mut sched = Schedule::new(&cfg, &host, start);
    let sent = host.publish_live("sent", 0.0);
    let mut t = start;
    let mut seq: u64 = 0;
    while t < end && cfg.count.is_none_or(|c| seq < c) {
        host.sleep_until(Time::from_nanos(t)).await;
        let now = host.now();
        // Zero-length bursts send nothing.
        let on = !matches!(cfg.pattern, Pattern::Burst { .. }) || t < sched.burst_end;
        if on {
            let msg = encode(cfg.size, cfg.flow, seq as u32, now);
            sock.send_to(msg, cfg.to).await?;
            seq += 1;
            sent.set(seq as f64);
        }
        t = sched.next(&host, t);
    }
    Ok(())
}

/// The nearest-rank `q`-quantile of a stream, kept exact in O(log n) per
/// value: the `ceil(q·n)` smallest values in a max-heap, the rest in a
/// min-heap.
struct Quantile {
    q: f64,
    low: BinaryHeap<u64>,
    high: BinaryHeap<Reverse<u64>>,
}

impl Quantile {
    fn new(q: f64) -> Self {
        Quantile {
            q,
            low: BinaryHeap::new(),
            high: BinaryHeap::new(),
        }
    }

    fn push(&mut self, v: u64) {
        if self.low.peek().is_some_and(|&top| v <= top) {
            self.low.push(v);
        } else {
            self.high.push(Reverse(v));
        }
        let n = self.low.len() + self.high.len();
        let want = ((self.q * n as f64).ceil() as usize).clamp(1, n);
        while self.low.len() > want {
            let v = self.low.pop().expect("low is longer than want >= 1");
            self.high.push(Reverse(v));
        }
        while self.low.len() < want {
            let Some(Reverse(v)) = self.high.pop() else {
                break;
            };
            self.low.push(v);
        }
    }

    fn value(&self) -> Option<u64> {
        self.low.peek().copied()
    }
}

/// What the sink knows of one flow.
#[derive(Default)]
struct Flow {
    received: u64,
    highest: u32,
    /// The last arrival's transit time (receive − send), ns.
    transit: Option<i128>,
}

/// The sink's running statistics over every flow.
pub struct SinkStats {
    flows: BTreeMap<u32, Flow>,
    pub received: u64,
    pub malformed: u64,
    latency_sum: u128,
    p50: Quantile,
    p99: Quantile,
    /// RFC 3550 jitter, ns (the last updated flow's).
    pub jitter: f64,
}

impl Default for SinkStats {
    fn default() -> Self {
        SinkStats {
            flows: BTreeMap::new(),
            received: 0,
            malformed: 0,
            latency_sum: 0,
            p50: Quantile::new(0.5),
            p99: Quantile::new(0.99),
            jitter: 0.0,
        }
    }
}

impl SinkStats {
    /// Takes in a message received at `now` (ns).
    pub fn add(&mut self, m: &Message, now: u64) {
        let Some((flow, seq, sent)) = decode(m) else {
            self.malformed += 1;
            return;
        };
        let f = self.flows.entry(flow).or_default();
        f.received += 1;
        f.highest = f.highest.max(seq);
        let transit = i128::from(now) - i128::from(sent);
        if let Some(prev) = f.transit {
            // RFC 3550 §6.4.1: J(i) = J(i-1) + (|D(i-1,i)| - J(i-1))/16.
            let d = (transit - prev).unsigned_abs() as f64;
            self.jitter += (d - self.jitter) / 16.0;
        }
        f.transit = Some(transit);
        self.received += 1;
        let lat = now.saturating_sub(sent);
        self.latency_sum += u128::from(lat);
        self.p50.push(lat);
        self.p99.push(lat);
    }

    /// Messages that never arrived: per flow, those below the highest
    /// sequence number seen.
    pub fn lost(&self) -> u64 {
        self.flows
            .values()
            .map(|f| (u64::from(f.highest) + 1).saturating_sub(f.received))
            .sum()
    }

    pub fn latency_mean(&self) -> f64 {
        self.latency_sum as f64 / self.received.max(1) as f64
    }

    pub fn latency_p50(&self) -> u64 {
        self.p50.value().unwrap_or(0)
    }

    pub fn latency_p99(&self) -> u64 {
        self.p99.value().unwrap_or(0)
    }
}

/// Receives on `port` forever, publishing the statistics.
pub async fn sink(host: Host, port: u16) -> AppResult {
    let sock = host.udp_bind(port)?;
    let names = [
        "received",
        "lost",
        "latency_mean_ns",
        "latency_p50_ns",
        "latency_p99_ns",
        "jitter_ns",
        "malformed",
    ];
    let live: Vec<_> = names.iter().map(|n| host.publish_live(n, 0.0)).collect();
    let mut st = SinkStats::default();
    loop {
        let (m, _from) = sock.recv_from().await?;
        st.add(&m, host.now().as_nanos());
        let values = [
            st.received as f64,
            st.lost() as f64,
            st.latency_mean(),
            st.latency_p50() as f64,
            st.latency_p99() as f64,
            st.jitter,
            st.malformed as f64,
        ];
        for (l, v) in live.iter().zip(values) {
            l.set(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_round_trips() {
        let m = encode(64, 7, 42, Time::from_nanos(3_000_000_123));
        assert_eq!(m.len(), 64);
        assert_eq!(decode(&m), Some((7, 42, 3_000_000_123)));
    }

    #[test]
    fn exponential_gaps_have_the_mean_and_tail_of_the_distribution() {
        // SplitMix64 as a stand-in for the machine's stream.
        let mut x = 1u64;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        };
        let n = 200_000;
        let gaps: Vec<u64> = (0..n).map(|_| exp_from(next(), 1e6)).collect();
        let mean = gaps.iter().sum::<u64>() as f64 / n as f64;
        // The sample mean's sigma is 1e6 / sqrt(n) = 2,236 ns.
        assert!((mean - 1e6).abs() < 4.0 * 2_236.0, "{mean}");
        // P(gap > mean) = 1/e.
        let above = gaps.iter().filter(|&&g| g > 1_000_000).count() as f64 / n as f64;
        assert!((above - (-1.0f64).exp()).abs() < 0.005, "{above}");
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let mut p50 = Quantile::new(0.5);
        let mut p99 = Quantile::new(0.99);
        for v in (1..=200u64).rev() {
            p50.push(v);
            p99.push(v);
        }
        assert_eq!(p50.value(), Some(100));
        assert_eq!(p99.value(), Some(198));
    }

    #[test]
    fn losses_are_the_gaps_below_the_highest_sequence_number() {
        let mut s = SinkStats::default();
        for seq in [0, 1, 3, 6] {
            s.add(&encode(20, 1, seq, Time::from_nanos(0)), 10);
        }
        assert_eq!((s.received, s.lost()), (4, 3));
        assert_eq!(s.jitter, 0.0);
    }
}
