//! The report's `flows` section (present when a workload generator such
//! as `flowgen` recorded flows): each flow's completion time (FCT) and
//! its slowdown, FCT / ideal FCT, per flow-size bucket with nearest-rank
//! percentiles, as datacenter papers plot them.
//!
//! # The ideal FCT
//! The time the flow would take alone on the network, with the path the
//! routing gives it (hops i = 1…H, rate rᵢ, propagation dᵢ, MTU of the
//! path m) and a window that never limits it:
//!
//! ```text
//! ideal = 2 Σᵢ (dᵢ + ser_i(SYN))            the handshake, SYN and SYN-ACK
//!       + Σᵢ (dᵢ + ser_i(F₁))               the first data frame, hop by hop
//!       + (W − F₁) · 8 / min rᵢ              the rest at the bottleneck
//! ```
//!
//! with S the flow's payload bytes, P = m − 40 − 12 payload bytes per
//! segment (IPv4 and TCP headers and the timestamp option; m − 40 without
//! timestamps), n = ⌈S / P⌉ segments, W = S + 66·n wire bytes (Ethernet
//! 14, IPv4 20, TCP 32 per frame; 54 without timestamps), F₁ the first
//! frame and SYN a 74-byte frame. This is the HPCC simulator's
//! "standalone FCT" (`qp_finish` in `simulation/scratch/third.cc` of
//! `alibaba-edu/High-Precision-Congestion-Control`: base RTT plus the
//! flow's wire bytes at the path's bottleneck), with TCP's handshake as
//! the round trip before data and the first frame's store-and-forward
//! delay at each hop written out. It is a lower bound up to the last
//! frame (shorter than F₁, so it leaves each hop a little sooner).
//!
//! A DCQCN flow (`flowgen transport='dcqcn'`) has no handshake and starts
//! at the line rate: its n = ⌈S / P⌉ UDP packets (P = min(1472, m − 28))
//! carry S bytes split as evenly as they go, so the first is the largest,
//! F₁ = ⌈S / n⌉ + 42 (Ethernet 14, IPv4 20, UDP 8), and W = S + 42·n:
//!
//! ```text
//! ideal = Σᵢ (dᵢ + ser_i(F₁)) + (W − F₁) · 8 / min rᵢ
//! ```
//!
//! Nothing resends a DCQCN flow's lost packet: such a flow never
//! finishes. `lost` counts the unfinished flows whose receiver saw a gap
//! in their sequence numbers (a flow that lost only its last packets
//! shows as unfinished, not lost).
//!
//! # Gaps
//! The ideal leaves out slow start: a flow whose bandwidth-delay product
//! exceeds the initial window (10 segments) takes more round trips even
//! alone, so on a long-RTT path its slowdown stays above 1 on an empty
//! network. Paths with several equal-cost routes use one of them (the
//! first hop's pick for the destination alone), which in a FatTree has
//! the same length and rates as the others (with random simple-path
//! routing a flow may take a longer path than the one its ideal assumes).

use crate::machine::MachineId;
use crate::stack::hosts::Hosts;
use crate::stack::ipv4::{self, NextHop};
use crate::world::World;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::net::Ipv4Addr;

/// The size buckets: name, smallest size, first size past it.
pub const BUCKETS: &[(&str, u64, u64)] = &[
    ("<100KB", 0, 100_000),
    ("100KB-1MB", 100_000, 1_000_000),
    ("1MB-10MB", 1_000_000, 10_000_000),
    (">=10MB", 10_000_000, u64::MAX),
];

/// The flows of a run.
#[derive(Clone, Debug, Serialize)]
pub struct FlowsReport {
    /// Flows started, finished (last byte read by the receiver) and not.
    pub flows: u64,
    pub finished: u64,
    pub unfinished: u64,
    /// Unfinished flows whose receiver saw a packet lost (DCQCN flows,
    /// which nothing resends; see the module docs).
    pub lost: u64,
    /// Payload bytes of the finished flows.
    pub finished_bytes: u64,
    /// Over all finished flows.
    pub all: FlowBucket,
    /// Per size bucket (kB = 1000 bytes): `<100KB`, `100KB-1MB`,
    /// `1MB-10MB`, `>=10MB`.
    pub buckets: Vec<FlowBucket>,
    /// One row per flow, in start order (for `--flows-csv`; not in the
    /// JSON).
    #[serde(skip)]
    pub rows: Vec<FlowRow>,
}

/// Completion times and slowdowns of the finished flows of one bucket
/// (nearest-rank percentiles; absent when none finished).
#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowBucket {
    pub bucket: &'static str,
    pub flows: u64,
    pub finished: u64,
    pub fct_mean_ns: Option<u64>,
    pub fct_p50_ns: Option<u64>,
    pub fct_p99_ns: Option<u64>,
    pub slowdown_mean: Option<f64>,
    pub slowdown_p50: Option<f64>,
    pub slowdown_p99: Option<f64>,
}

/// One flow.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowRow {
    pub src: String,
    pub dst: Ipv4Addr,
    pub bytes: u64,
    pub start_ns: u64,
    /// None while unfinished.
    pub fct_ns: Option<u64>,
    /// None when no route leads to `dst`.
    pub ideal_ns: Option<u64>,
    /// The receiver saw a packet of it lost.
    pub lost: bool,
}

impl FlowRow {
    /// FCT / ideal FCT, for a finished flow with a path.
    pub fn slowdown(&self) -> Option<f64> {
        Some(self.fct_ns? as f64 / self.ideal_ns.filter(|&i| i > 0)? as f64)
    }
}

/// One hop of a path: rate (bit/s; none is unlimited), propagation
/// delay (ns) and MTU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    pub bps: Option<u64>,
    pub latency_ns: u64,
    pub mtu: u32,
}

impl Link {
    fn ser_ns(&self, bytes: u64) -> u64 {
        match self.bps {
            None | Some(0) => 0,
            Some(r) => (u128::from(bytes) * 8_000_000_000).div_ceil(u128::from(r)) as u64,
        }
    }
}

/// The SYN's (and SYN-ACK's) frame: Ethernet, IPv4, TCP with the MSS,
/// SACK-permitted, timestamp and window-scale options.
pub const SYN_FRAME: u64 = 74;

/// Returns the ideal FCT of a flow of `bytes` on `path` (see the module
/// docs); `timestamps` when TCP sends the timestamp option.
pub fn ideal_fct_ns(path: &[Link], bytes: u64, timestamps: bool) -> u64 {
    let mtu = path.iter().map(|l| u64::from(l.mtu)).min().unwrap_or(1500);
    let opts = if timestamps { 12 } else { 0 };
    let per = mtu.saturating_sub(40 + opts).max(1);
    let head = 54 + opts;
    let n = bytes.div_ceil(per).max(1);
    let wire = bytes + head * n;
    let first = bytes.min(per) + head;
    let prop: u64 = path.iter().map(|l| l.latency_ns).sum();
    let syn: u64 = path.iter().map(|l| l.ser_ns(SYN_FRAME)).sum();
    let first_ser: u64 = path.iter().map(|l| l.ser_ns(first)).sum();
    let rest = match path.iter().filter_map(|l| l.bps).filter(|&r| r > 0).min() {
        None => 0,
        Some(r) => (u128::from(wire - first) * 8_000_000_000).div_ceil(u128::from(r)) as u64,
    };
    2 * (prop + syn) + prop + first_ser + rest
}

/// The payload bytes of a DCQCN flow's largest packet, at most.
const DCQCN_PACKET: u64 = elvis_api::flows::DCQCN_PACKET;

/// Returns the ideal FCT of a DCQCN flow of `bytes` on `path`: no
/// handshake, the line rate from the first packet (see the module docs).
pub fn ideal_dcqcn_ns(path: &[Link], bytes: u64) -> u64 {
    let mtu = path.iter().map(|l| u64::from(l.mtu)).min().unwrap_or(1500);
    let per = DCQCN_PACKET.min(mtu.saturating_sub(28)).max(1);
    let n = bytes.div_ceil(per).max(1);
    let wire = bytes + 42 * n;
    let first = bytes.div_ceil(n) + 42;
    let prop: u64 = path.iter().map(|l| l.latency_ns).sum();
    let first_ser: u64 = path.iter().map(|l| l.ser_ns(first)).sum();
    let rest = match path.iter().filter_map(|l| l.bps).filter(|&r| r > 0).min() {
        None => 0,
        Some(r) => (u128::from(wire - first) * 8_000_000_000).div_ceil(u128::from(r)) as u64,
    };
    prop + first_ser + rest
}

/// The links from `src` to `dst` as the routes lead, or `None` when they
/// do not reach it (in 64 hops).
pub fn path(h: &Hosts, src: MachineId, dst: Ipv4Addr) -> Option<Vec<Link>> {
    let mut m = src;
    let mut links = Vec::new();
    for _ in 0..64 {
        let r = ipv4::route(h, m, dst).ok()?;
        match r.next {
            NextHop::Local => return Some(links),
            NextHop::Neighbour(_, port) => {
                let net = h.machines[m as usize].ifaces[r.iface as usize].net;
                let n = &h.fabric.networks[net as usize];
                links.push(Link {
                    bps: n.cfg.bandwidth_bps,
                    latency_ns: n.cfg.latency_ns,
                    mtu: n.cfg.mtu,
                });
                m = n.ports.get(port as usize)?.machine;
            }
            _ => return None,
        }
    }
    None
}

/// Nearest-rank percentile `p` (0–100) of sorted `v`.
fn rank<T: Copy>(v: &[T], p: f64) -> Option<T> {
    let k = ((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len().max(1));
    v.get(k - 1).copied()
}

impl FlowBucket {
    fn of(bucket: &'static str, rows: &[&FlowRow]) -> FlowBucket {
        let mut fct: Vec<u64> = rows.iter().filter_map(|r| r.fct_ns).collect();
        let mut slow: Vec<f64> = rows.iter().filter_map(|r| r.slowdown()).collect();
        fct.sort_unstable();
        slow.sort_by(f64::total_cmp);
        let mean_f = (!fct.is_empty())
            .then(|| (fct.iter().map(|&f| u128::from(f)).sum::<u128>() / fct.len() as u128) as u64);
        let mean_s = (!slow.is_empty()).then(|| slow.iter().sum::<f64>() / slow.len() as f64);
        FlowBucket {
            bucket,
            flows: rows.len() as u64,
            finished: fct.len() as u64,
            fct_mean_ns: mean_f,
            fct_p50_ns: rank(&fct, 50.0),
            fct_p99_ns: rank(&fct, 99.0),
            slowdown_mean: mean_s,
            slowdown_p50: rank(&slow, 50.0),
            slowdown_p99: rank(&slow, 99.0),
        }
    }
}

impl FlowsReport {
    /// The section for the flows recorded in `w`, if any.
    pub(crate) fn new(w: &World) -> Option<FlowsReport> {
        if w.flows.is_empty() {
            return None;
        }
        let ts = w.hosts.stack.tcp.timestamps;
        let mut ideal: BTreeMap<(MachineId, Ipv4Addr), Option<Vec<Link>>> = BTreeMap::new();
        let rows: Vec<FlowRow> = w
            .flows
            .iter()
            .map(|f| {
                let p = ideal
                    .entry((f.src, f.dst))
                    .or_insert_with(|| path(&w.hosts, f.src, f.dst));
                FlowRow {
                    src: w.hosts.machine_name(f.src),
                    dst: f.dst,
                    bytes: f.bytes,
                    start_ns: f.start_ns,
                    fct_ns: f.end_ns.map(|e| e.saturating_sub(f.start_ns)),
                    ideal_ns: p.as_deref().map(|p| match f.transport {
                        elvis_api::FlowTransport::Tcp => ideal_fct_ns(p, f.bytes, ts),
                        elvis_api::FlowTransport::Dcqcn => ideal_dcqcn_ns(p, f.bytes),
                    }),
                    lost: f.lost,
                }
            })
            .collect();
        Some(FlowsReport::from_rows(rows))
    }

    /// Summarizes `rows`.
    pub fn from_rows(rows: Vec<FlowRow>) -> FlowsReport {
        let finished: Vec<&FlowRow> = rows.iter().filter(|r| r.fct_ns.is_some()).collect();
        let all: Vec<&FlowRow> = rows.iter().collect();
        let buckets = BUCKETS
            .iter()
            .map(|&(name, lo, hi)| {
                let in_b: Vec<&FlowRow> = (all.iter().copied())
                    .filter(|r| (lo..hi).contains(&r.bytes))
                    .collect();
                FlowBucket::of(name, &in_b)
            })
            .collect();
        FlowsReport {
            flows: rows.len() as u64,
            finished: finished.len() as u64,
            unfinished: (rows.len() - finished.len()) as u64,
            lost: rows.iter().filter(|r| r.lost && r.fct_ns.is_none()).count() as u64,
            finished_bytes: finished.iter().map(|r| r.bytes).sum(),
            all: FlowBucket::of("all", &all),
            buckets,
            rows,
        }
    }

    /// Writes one CSV row per flow: `src,dst,bytes,start_ns,fct_ns,
    /// ideal_ns,slowdown` (the last three empty for an unfinished flow or
    /// one without a path).
    ///
    /// # Errors
    /// What writing to `out` returns.
    pub fn write_csv(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "src,dst,bytes,start_ns,fct_ns,ideal_ns,slowdown")?;
        for r in &self.rows {
            let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
            let slow = r.slowdown().map_or(String::new(), |s| format!("{s:.4}"));
            writeln!(
                out,
                "{},{},{},{},{},{},{}",
                r.src,
                r.dst,
                r.bytes,
                r.start_ns,
                opt(r.fct_ns),
                opt(r.ideal_ns),
                slow
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G10: Link = Link {
        bps: Some(10_000_000_000),
        latency_ns: 1_000,
        mtu: 1500,
    };

    #[test]
    fn the_ideal_of_one_segment_is_two_and_a_half_trips() {
        // 100 bytes over one 10 Gbit/s, 1 µs link: SYN and SYN-ACK each
        // 1 µs + 74 B (59.2 ns → 60), then 1 µs + 166 B (132.8 → 133).
        assert_eq!(
            ideal_fct_ns(&[G10], 100, true),
            2 * (1_000 + 60) + 1_000 + 133
        );
    }

    #[test]
    fn the_ideal_of_a_long_flow_is_its_wire_bytes_at_the_bottleneck() {
        // 1448 payload bytes per 1514-byte frame with timestamps.
        let path = [G10, G10, G10];
        let s = 1448 * 1000;
        let ideal = ideal_fct_ns(&path, s, true);
        let fixed = 2 * (3 * 1_000 + 3 * 60) + 3 * 1_000 + 3 * 1212; // 1514 B: 1211.2 ns
        let rest = (999 * 1514 * 8) as f64 / 10.0; // ns at 10 Gbit/s
        assert_eq!(ideal, fixed + rest.ceil() as u64);
        // A slower middle hop is the bottleneck for the bulk.
        let slow = Link {
            bps: Some(1_000_000_000),
            ..G10
        };
        let ideal = ideal_fct_ns(&[G10, slow, G10], s, true);
        assert!(ideal > (1514 * 1000 * 8) as u64, "{ideal}");
    }

    #[test]
    fn the_ideal_of_a_dcqcn_flow_is_one_trip_then_the_bottleneck() {
        // 100 bytes: one 142-byte frame (113.6 ns → 114) per hop.
        assert_eq!(ideal_dcqcn_ns(&[G10, G10], 100), 2 * (1_000 + 114));
        // 3000 bytes: three packets of 1000 (1042-byte frames, 833.6 ns →
        // 834 per hop), the other two at 10 Gbit/s (2084 B: 1667.2 → 1668).
        assert_eq!(
            ideal_dcqcn_ns(&[G10, G10, G10], 3000),
            3 * (1_000 + 834) + 1668
        );
    }

    #[test]
    fn buckets_split_at_100kb_1mb_10mb_and_percentiles_are_nearest_rank() {
        let row = |bytes, fct: Option<u64>| FlowRow {
            src: "a".into(),
            dst: Ipv4Addr::new(10, 0, 0, 1),
            bytes,
            start_ns: 0,
            fct_ns: fct,
            ideal_ns: Some(100),
            lost: false,
        };
        let mut rows: Vec<FlowRow> = (1..=100).map(|i| row(1000, Some(100 * i))).collect();
        rows.push(row(100_000, Some(500)));
        rows.push(row(20_000_000, None));
        let r = FlowsReport::from_rows(rows);
        assert_eq!((r.flows, r.finished, r.unfinished), (102, 101, 1));
        let small = &r.buckets[0];
        assert_eq!(small.flows, 100);
        assert_eq!(small.fct_p50_ns, Some(5_000));
        assert_eq!(small.fct_p99_ns, Some(9_900));
        assert_eq!(small.slowdown_p99, Some(99.0));
        assert_eq!(r.buckets[1].flows, 1);
        assert_eq!(r.buckets[3].finished, 0);
        assert_eq!(r.buckets[3].fct_p50_ns, None);
        let mut csv = Vec::new();
        r.write_csv(&mut csv).unwrap();
        let text = String::from_utf8(csv).unwrap();
        assert_eq!(text.lines().count(), 103);
        assert!(text.ends_with("a,10.0.0.1,20000000,0,,100,\n"), "{text}");
    }
}
