//! `flowgen`: a datacenter workload. Flows arrive as a Poisson process at
//! a target load of the machine's access link, with sizes drawn from a
//! flow-size CDF ([`cdf::Cdf`]: the web-search workload of DCTCP, the
//! data-mining workload of VL2, or a CSV), between hosts chosen by a
//! pattern; or they come from a trace of `(start, src, dst, bytes)`.
//!
//! Every flow is one TCP connection, with the machine's congestion
//! control (or `congestion=`), from a task of its own to the `flowgen`
//! sink of the destination: each instance also runs one listening sink
//! (a child task) on `port`, which serves each accepted connection from a
//! task of its own. Thousands of hosts cost one listener each; a flow
//! costs one task at each end while it lasts. With `transport='dcqcn'`
//! every flow is instead a DCQCN message over UDP, paced from the
//! sender's line rate ([`dcqcn`]), and each instance also runs a DCQCN
//! sink on UDP `port`, which ends a flow's record when all its bytes are
//! in (a flow that loses a packet never ends: see [`dcqcn`]).
//!
//! The arrival rate is λ = load × R / (8 × mean size) flows per second,
//! R the bit rate of the sender's access link (`link_rate=` overrides):
//! the sender's link then carries `load` of its capacity in payload, on
//! average. Patterns:
//! - `random` (all-to-all): each flow to a host of `peers` drawn
//!   uniformly, never the sender itself;
//! - `permutation`: each host sends only to its partner in one random
//!   cyclic permutation of `peers` (Sattolo's algorithm: no host is its
//!   own partner, each host receives from exactly one);
//! - `incast` (N → 1): the N hosts of `peers` other than `to` start a
//!   flow each to `to` at the same instants (one arrival process shared
//!   by the group), at λ / N, so that `to`'s link carries `load`;
//! - a trace (`trace='flows.csv'`): the rows whose `src` is this machine.
//!
//! The first 16 bytes of a flow are its id (from
//! [`Host::flow_started`]) and its size, so that the sink knows when the
//! flow is complete and finishes its record ([`Host::flow_finished`]):
//! the report's `flows` section then has each flow's completion time
//! (arrival at the sender to the last byte read by the sink) and its
//! slowdown against the ideal on an empty network. Flows shorter than 16
//! bytes are sent as 16. The rest of a flow is virtual payload (zeros
//! with no memory behind them).
//!
//! Arrivals and sizes come from the machine's random stream (the group's
//! first instance draws the permutation and the incast stream's seed), so
//! a seed gives the same flows every time.
//!
//! # Gaps
//! An incast here is N senders starting at the same instants, not a
//! request and its N responses (the receiver asks nothing). DCQCN flows
//! are not resent when lost. Flows are
//! one-way, carry no priority or deadline, and are at least 16 bytes.
//! The arrival rate assumes the sender's first interface is its access
//! link.

pub mod cdf;
pub mod dcqcn;

use crate::Host;
use cdf::{unit, Cdf};
use elvis_api::{AppResult, Congestion, Message, Time};
use std::cell::RefCell;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::rc::Rc;

/// The default sink port.
pub const PORT: u16 = 5100;
/// Bytes of the flow header: id and size, big-endian.
pub const HEADER: u64 = 16;
/// Writes in pieces of this size.
const PIECE: u64 = 1 << 20;

/// Whom the flows go to.
#[derive(Clone, Debug, PartialEq)]
pub enum Pattern {
    /// Each flow to a random other host of the list.
    Random(Vec<Ipv4Addr>),
    /// Each host to its partner in one random cyclic permutation.
    Permutation(Vec<Ipv4Addr>),
    /// The senders of the list (all but `to`) to `to`, synchronized.
    Incast { to: Ipv4Addr, peers: Vec<Ipv4Addr> },
    /// Flows read from a trace.
    Trace(Vec<TraceFlow>),
}

/// One row of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceFlow {
    /// Start, ns after the application's start.
    pub start_ns: u64,
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub bytes: u64,
}

/// What the instances of one `flowgen` block share.
#[derive(Debug)]
pub struct Config {
    /// The sinks' port.
    pub port: u16,
    pub pattern: Pattern,
    /// Flow sizes (not used by a trace).
    pub sizes: Rc<Cdf>,
    /// Offered load, a fraction of the access link (0 < load < 1).
    pub load: f64,
    /// The access link's rate, bit/s (none: the machine's first
    /// interface's network).
    pub link_rate: Option<u64>,
    /// Flows per instance, at most.
    pub flows: Option<u64>,
    /// Arrivals only this long after the start, ns.
    pub duration: Option<u64>,
    pub congestion: Option<Congestion>,
    /// How the flows travel.
    pub transport: Transport,
    /// Drawn once, by the group's first instance.
    pub shared: RefCell<Shared>,
}

/// How a `flowgen`'s flows travel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// TCP connections.
    #[default]
    Tcp,
    /// DCQCN messages over UDP ([`dcqcn`]); the sink sends at most one
    /// CNP per flow every `cnp_interval` ns.
    Dcqcn { cnp_interval: u64 },
}

/// State drawn by the group's first instance.
#[derive(Debug, Default)]
pub struct Shared {
    /// The permutation's partner of each peer, by index.
    pub partner: Option<Vec<usize>>,
    /// The seed of the incast arrival stream.
    pub incast_seed: Option<u64>,
}

/// SplitMix64: the incast group's one arrival stream.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// An exponential gap of mean 1/λ (λ per second), ns, from 64 random bits.
pub fn exp_gap_ns(bits: u64, per_s: f64) -> u64 {
    let u = unit(bits);
    (-(1.0 - u).ln() / per_s * 1e9).round() as u64
}

/// Returns a uniform cyclic permutation of `n` (Sattolo's algorithm):
/// `p[i]` is `i`'s partner, never `i` itself when `n > 1`.
pub fn sattolo(n: usize, mut bits: impl FnMut() -> u64) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (bits() % i as u64) as usize;
        p.swap(i, j);
    }
    p
}

/// Runs the sink and generates this machine's flows.
pub async fn run(host: Host, cfg: Rc<Config>) -> AppResult {
    host.spawn(sink(host, cfg.port, cfg.congestion))?;
    if let Transport::Dcqcn { cnp_interval } = cfg.transport {
        host.spawn(dcqcn::sink(host, cfg.port, cnp_interval))?;
    }
    let Some(me) = host.ip() else {
        return Ok(());
    };
    let start = host.now().as_nanos();
    if let Pattern::Trace(rows) = &cfg.pattern {
        for r in rows.iter().filter(|r| r.src == me) {
            host.sleep_until(Time::from_nanos(start + r.start_ns)).await;
            let to = SocketAddrV4::new(r.dst, cfg.port);
            start_flow(host, &cfg, to, r.bytes)?;
        }
        return Ok(());
    }
    let Some(mut next) = Destinations::new(&host, &cfg, me) else {
        return Ok(()); // not a sender of this pattern
    };
    let rate = cfg.link_rate.or_else(|| host.link_rate_bps()).unwrap_or(0) as f64;
    let per_s = cfg.load * rate / (8.0 * cfg.sizes.mean()) / next.senders as f64;
    if !(per_s.is_finite() && per_s > 0.0) {
        return Ok(());
    }
    let end = cfg.duration.map(|d| start + d);
    let mut t = start;
    let mut count = 0u64;
    while cfg.flows.is_none_or(|n| count < n) {
        t += exp_gap_ns(next.arrival_bits(&host), per_s);
        if end.is_some_and(|e| t > e) {
            break;
        }
        host.sleep_until(Time::from_nanos(t)).await;
        let dst = next.pick(&host);
        let bytes = cfg.sizes.sample(host.random_u64());
        start_flow(host, &cfg, SocketAddrV4::new(dst, cfg.port), bytes)?;
        count += 1;
    }
    Ok(())
}

/// Starts one flow of `bytes` to `to`, from a task of its own, over the
/// configured transport (DCQCN's line rate: `link_rate=` or the access
/// link's; 1 Pbit/s on an unlimited one).
fn start_flow(host: Host, cfg: &Config, to: SocketAddrV4, bytes: u64) -> AppResult {
    match cfg.transport {
        Transport::Tcp => host.spawn(flow(host, to, bytes, cfg.congestion))?,
        Transport::Dcqcn { .. } => {
            let line = cfg.link_rate.or_else(|| host.link_rate_bps()).unwrap_or(0);
            let line = if line == 0 { 1e15 } else { line as f64 };
            host.spawn(dcqcn::flow(host, to, bytes, line))?
        }
    };
    Ok(())
}

/// How one instance picks its flows' destinations and arrival times.
struct Destinations<'a> {
    cfg: &'a Config,
    me: Ipv4Addr,
    /// Senders sharing the arrival process (incast: N; else 1).
    senders: usize,
    /// The one destination (permutation, incast).
    fixed: Option<Ipv4Addr>,
    /// The incast group's shared arrival stream.
    shared: Option<SplitMix>,
}

impl<'a> Destinations<'a> {
    /// `None` when this machine sends nothing under the pattern.
    fn new(host: &Host, cfg: &'a Config, me: Ipv4Addr) -> Option<Destinations<'a>> {
        let mut d = Destinations {
            cfg,
            me,
            senders: 1,
            fixed: None,
            shared: None,
        };
        match &cfg.pattern {
            Pattern::Random(peers) => {
                if !peers.iter().any(|&p| p != me) {
                    return None;
                }
            }
            Pattern::Permutation(peers) => {
                let i = peers.iter().position(|&p| p == me)?;
                let mut sh = cfg.shared.borrow_mut();
                let partner = sh
                    .partner
                    .get_or_insert_with(|| sattolo(peers.len(), || host.random_u64()));
                d.fixed = Some(peers[partner[i]]).filter(|&p| p != me);
                d.fixed?;
            }
            Pattern::Incast { to, peers } => {
                if *to == me || !peers.contains(&me) {
                    return None;
                }
                d.senders = peers.iter().filter(|&&p| p != *to).count().max(1);
                d.fixed = Some(*to);
                let seed = *cfg
                    .shared
                    .borrow_mut()
                    .incast_seed
                    .get_or_insert_with(|| host.random_u64());
                d.shared = Some(SplitMix(seed));
            }
            Pattern::Trace(_) => return None,
        }
        Some(d)
    }

    /// Random bits for the next arrival gap: the group's stream for an
    /// incast, the machine's own otherwise.
    fn arrival_bits(&mut self, host: &Host) -> u64 {
        match &mut self.shared {
            Some(s) => s.next(),
            None => host.random_u64(),
        }
    }

    /// The next flow's destination.
    fn pick(&self, host: &Host) -> Ipv4Addr {
        if let Some(f) = self.fixed {
            return f;
        }
        let Pattern::Random(peers) = &self.cfg.pattern else {
            unreachable!("only the random pattern has no fixed destination");
        };
        // Uniform over the peers other than this machine.
        let others = peers.len() - usize::from(peers.contains(&self.me));
        let mut k = (host.random_u64() % others as u64) as usize;
        for &p in peers {
            if p == self.me {
                continue;
            }
            if k == 0 {
                return p;
            }
            k -= 1;
        }
        unreachable!("k < the number of other peers")
    }
}

/// One flow: connects, sends the header and `bytes` in all, closes.
async fn flow(host: Host, to: SocketAddrV4, bytes: u64, congestion: Option<Congestion>) {
    let bytes = bytes.max(HEADER);
    let id = host.flow_started(*to.ip(), bytes);
    let _ = send_flow(host, to, id, bytes, congestion).await;
}

async fn send_flow(
    host: Host,
    to: SocketAddrV4,
    id: u64,
    bytes: u64,
    congestion: Option<Congestion>,
) -> AppResult {
    let mut sock = host.tcp_socket()?;
    if let Some(alg) = congestion {
        sock.set_congestion(alg);
    }
    let stream = sock.connect(to).await?;
    let mut head = id.to_be_bytes().to_vec();
    head.extend_from_slice(&bytes.to_be_bytes());
    let mut first = Message::from_vec(head);
    let mut sent = HEADER + (bytes - HEADER).min(PIECE);
    first.append(Message::zeros(sent - HEADER));
    stream.write_all(first).await?;
    while sent < bytes {
        let n = (bytes - sent).min(PIECE);
        stream.write_all(Message::zeros(n)).await?;
        sent += n;
    }
    Ok(())
}

/// The sink: accepts flows on `port` and reads each from a task of its
/// own.
pub async fn sink(host: Host, port: u16, congestion: Option<Congestion>) {
    let _ = serve(host, port, congestion).await;
}

async fn serve(host: Host, port: u16, congestion: Option<Congestion>) -> AppResult {
    let mut sock = host.tcp_socket()?;
    if let Some(alg) = congestion {
        sock.set_congestion(alg);
    }
    sock.bind(port)?;
    let listener = sock.listen(4096)?;
    loop {
        let (stream, _) = listener.accept().await?;
        host.spawn(async move {
            let _ = receive(host, stream).await;
        })?;
    }
}

/// Reads one flow: its header, then its bytes; finishes its record.
async fn receive(host: Host, stream: elvis_api::TcpStream) -> AppResult {
    let head = stream.read_exact(HEADER as usize).await?;
    let mut b = [0u8; 16];
    head.copy_to_slice(0, &mut b)
        .map_err(|_| elvis_api::AppError::new("short flow header"))?;
    let id = u64::from_be_bytes(b[..8].try_into().unwrap_or_default());
    let bytes = u64::from_be_bytes(b[8..].try_into().unwrap_or_default());
    let mut got = HEADER;
    while got < bytes {
        let m = stream.recv(1 << 20).await?;
        if m.is_empty() {
            return Ok(()); // closed early: the flow stays unfinished
        }
        got += m.len() as u64;
    }
    host.flow_finished(id);
    Ok(())
}

/// Parses a trace: `start,src,dst,bytes` lines (start in seconds after
/// the application's start; src and dst machine names or addresses,
/// looked up with `resolve`; bytes a whole number). Blank lines, `#`
/// comments and a header line are skipped.
///
/// # Errors
/// The 1-based line and what is wrong: not four fields, a start that is
/// not a non-negative number of seconds, an unknown machine, a size that
/// is not a positive whole number.
pub fn parse_trace(
    text: &str,
    resolve: &dyn Fn(&str) -> Option<Ipv4Addr>,
) -> Result<Vec<TraceFlow>, (usize, String)> {
    let mut rows = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let n = i + 1;
        if rows.is_empty() && i == 0 && f.first().is_some_and(|s| s.parse::<f64>().is_err()) {
            continue; // a header
        }
        let [start, src, dst, bytes] = f[..] else {
            return Err((n, format!("'{line}' is not start,src,dst,bytes")));
        };
        let start_ns = match start.parse::<f64>() {
            Ok(s) if s.is_finite() && s >= 0.0 => (s * 1e9).round() as u64,
            _ => return Err((n, format!("start '{start}' is not seconds ≥ 0"))),
        };
        let host = |name: &str| resolve(name).ok_or((n, format!("unknown machine '{name}'")));
        let (src, dst) = (host(src)?, host(dst)?);
        let bytes = match bytes.parse::<u64>() {
            Ok(b) if b > 0 => b,
            _ => return Err((n, format!("bytes '{bytes}' is not a positive whole number"))),
        };
        rows.push(TraceFlow {
            start_ns,
            src,
            dst,
            bytes,
        });
    }
    rows.sort_by_key(|r| r.start_ns);
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_gaps_have_the_mean_and_spread_of_an_exponential() {
        let mut r = SplitMix(3);
        let n = 100_000;
        let per_s = 2_000.0; // mean gap 500 µs
        let gaps: Vec<f64> = (0..n).map(|_| exp_gap_ns(r.next(), per_s) as f64).collect();
        let mean = gaps.iter().sum::<f64>() / n as f64;
        // Standard error of the mean: 500 µs / √n = 1.6 µs; 1 % is 3 σ.
        assert!((mean / 500_000.0 - 1.0).abs() < 0.01, "{mean}");
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(
            (var.sqrt() / mean - 1.0).abs() < 0.02,
            "cv {}",
            var.sqrt() / mean
        );
    }

    #[test]
    fn sattolo_gives_a_single_cycle_without_fixed_points() {
        let mut r = SplitMix(9);
        for n in [2, 3, 16, 128] {
            let p = sattolo(n, || r.next());
            let mut seen = vec![false; n];
            let mut i = 0;
            for _ in 0..n {
                assert!(!seen[i]);
                seen[i] = true;
                assert_ne!(p[i], i);
                i = p[i];
            }
            assert_eq!(i, 0, "one cycle through all {n}");
        }
    }

    #[test]
    fn a_trace_parses_and_sorts_and_refuses_bad_lines() {
        let resolve = |s: &str| match s {
            "a" => Some(Ipv4Addr::new(10, 0, 0, 1)),
            "b" => Some(Ipv4Addr::new(10, 0, 0, 2)),
            _ => None,
        };
        let t = parse_trace(
            "start,src,dst,bytes\n0.002,a,b,100\n0.001,b,a,5\n",
            &resolve,
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].start_ns, 1_000_000);
        assert_eq!(t[0].bytes, 5);
        assert_eq!(parse_trace("0,a,c,1\n", &resolve).unwrap_err().0, 1);
        assert_eq!(
            parse_trace("0,a,b,1\n-1,a,b,1\n", &resolve).unwrap_err().0,
            2
        );
        assert_eq!(parse_trace("0,a,b,0\n", &resolve).unwrap_err().0, 1);
        assert_eq!(parse_trace("0,a,b\n", &resolve).unwrap_err().0, 1);
    }
}
