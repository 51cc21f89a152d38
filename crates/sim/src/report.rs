//! The run report: what happened, in numbers, as plain serializable data.
//!
//! The JSON written by `elvis run --report FILE` is this [`Report`]
//! serialized with serde; its schema is documented field by field below and
//! in `docs/report.md`. Everything except [`Performance`] is a pure
//! function of (scenario, seed).

use crate::executor::TaskState;
use crate::net::{NetStats, NetworkKind};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

mod dhcp;
pub use dhcp::{DhcpReport, DhcpServerReport, LeaseReport};
mod aodv;
pub use aodv::AodvReport;
pub mod flows;
pub use flows::FlowsReport;
mod pfc;
pub use pfc::{PfcPortReport, PfcQueueName, PfcReport};

pub use elvis_stack::counters::DropReason;
pub(crate) use elvis_stack::counters::Stats;

/// How the run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// Nothing was left to happen.
    Idle,
    /// The time limit (`until`) was reached with events still pending.
    TimeLimit,
    /// Stopped at the current event by an interrupt (SIGINT, SIGTERM: see
    /// [`crate::Simulation::set_interrupt_flag`]); `sim_time_ns` is the
    /// virtual time reached.
    Interrupted,
    /// Stopped like an interrupt when the wall-clock limit ran out
    /// ([`crate::Simulation::set_wall_limit`]).
    WallLimit,
}

impl fmt::Display for End {
    /// Formats as a phrase for messages: `time limit reached`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            End::Idle => "nothing left to happen",
            End::TimeLimit => "time limit reached",
            End::Interrupted => "interrupted",
            End::WallLimit => "wall-clock limit reached",
        })
    }
}

/// The report of a run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The seed every random stream derived from.
    pub seed: u64,
    /// How the run ended.
    pub end: End,
    /// Virtual time at the end, ns (timers such as TIME-WAIT's may run
    /// on after the applications are done).
    pub sim_time_ns: u64,
    /// Virtual time when the last application ended (finished, failed
    /// or crashed), ns; `null` while one that is not a daemon still
    /// waits, or when there were none.
    pub apps_ended_ns: Option<u64>,
    /// Events processed: frame hops, timer expiries and task polls.
    pub events: u64,
    /// Machines in the run.
    pub machines: u64,
    /// Packet counters for the whole run.
    pub packets: PacketReport,
    /// Networks in the run.
    pub networks_total: u64,
    /// The busiest [`Report::MAX_NETWORKS_LISTED`] networks (most frames
    /// sent, then most queue drops), in declaration order: all of them
    /// in a run with no more.
    pub networks: Vec<NetworkReport>,
    /// One entry per router (forwarding machine), in machine order.
    pub routers: Vec<RouterReport>,
    /// Egress queues that saw traffic (NICs and switch ports).
    pub queues_total: u64,
    /// The most eventful [`Report::MAX_QUEUES_LISTED`] of them (most drops
    /// and marks, then deepest), in (network, port, direction) order.
    pub queues: Vec<QueueReport>,
    /// Routing tables: how many distinct ones the machines share, and the
    /// routes in them.
    pub routing: RoutingReport,
    /// Application outcomes over all (machine group, application) pairs.
    pub applications_total: AppTotals,
    /// Application outcomes, aggregated per (machine group, application):
    /// [`Report::MAX_APPLICATIONS_LISTED`] pairs at most, those with
    /// failed, crashed or waiting instances first, then in (group,
    /// application) order; listed in (group, application) order.
    pub applications: Vec<AppReport>,
    /// Individual failures, crashes and still-waiting applications (first
    /// [`Report::MAX_LISTED`]).
    pub problems: Vec<Problem>,
    /// Values published by applications (`ping`'s RTTs…), in order.
    pub metrics: Vec<MetricReport>,
    /// TCP connections opened during the run (both ends of each).
    pub tcp_connections_total: u64,
    /// The first [`crate::stack::tcp::trace::MAX_LISTED`] TCP connection
    /// ends, in the order they were created.
    pub tcp_connections: Vec<ConnectionReport>,
    /// Payload bytes acknowledged to senders, per congestion control
    /// algorithm, over all connections (listed or not).
    pub tcp_shares: Vec<CongestionShare>,
    /// Per machine that sent TCP data, over its listed connection ends
    /// (`tcp_connections`): bytes sent with and without retransmissions,
    /// and the rates over its sending span (a web server's throughput, as
    /// a capture at the server measures it).
    pub tcp_senders: Vec<SenderReport>,
    /// DHCP clients, messages and lease tables (only in runs with DHCP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dhcp: Option<DhcpReport>,
    /// Wall-clock measurements (not deterministic).
    pub performance: Performance,
    /// The memory estimated from the scenario's counts before it was built
    /// (set by the builder's caller; absent when nobody estimated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_estimate: Option<MemoryEstimate>,
    /// AODV's routing overhead, discoveries and delivery (only in runs
    /// with AODV).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aodv: Option<AodvReport>,
    /// Flow completion times and slowdowns by flow size (only in runs
    /// whose applications recorded flows: `flowgen`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flows: Option<FlowsReport>,
    /// Priority flow control: PAUSE frames, paused time, headroom and
    /// deadlocks (only in runs where a network has PFC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pfc: Option<PfcReport>,
}

/// The memory a scenario was estimated to take, from its counts, before
/// it was built (`elvis_build::estimate`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MemoryEstimate {
    /// The estimate, bytes.
    pub bytes: u64,
    pub machines: u64,
    pub networks: u64,
    /// Machine interfaces (network attachments).
    pub interfaces: u64,
    /// Application instances.
    pub applications: u64,
    /// Routes: static ones, generators' and automatic ones.
    pub routes: u64,
}

/// One published value.
#[derive(Clone, Debug, Serialize)]
pub struct MetricReport {
    pub machine: String,
    pub application: String,
    pub name: String,
    pub value: f64,
}

/// One end of a TCP connection: who, with what algorithm, its statistics
/// and its state when it ended (or when the run did).
#[derive(Clone, Debug, Serialize)]
pub struct ConnectionReport {
    /// Creation order (also the number in time-series file names).
    pub id: u64,
    pub machine: String,
    /// `ip:port`.
    pub local: String,
    pub remote: String,
    /// `newreno`, `cubic`, `compound` or `bbr`.
    pub congestion: &'static str,
    /// RFC 9293 state at the end (`Closed`, `TimeWait`, `Established`…).
    pub state: crate::stack::tcp::tcb::State,
    /// When the connection was opened, ns.
    pub opened_ns: u64,
    /// When data was last acknowledged to this end, ns (0: never).
    pub last_ack_ns: u64,
    /// Mean goodput as a sender: `bytes_acked` × 8 over
    /// `last_ack_ns − opened_ns`, bit/s (0 for a pure receiver).
    pub throughput_bps: u64,
    /// Mean sending rate with retransmissions: `bytes_sent` × 8 over
    /// `last_ack_ns − opened_ns`, bit/s (0 for a pure receiver).
    pub sent_bps: u64,
    #[serde(flatten)]
    pub stats: crate::stack::tcp::TcpStats,
}

/// What one machine sent over TCP, summed over its listed connection ends
/// that sent data.
#[derive(Clone, Debug, Serialize)]
pub struct SenderReport {
    pub machine: String,
    /// Connection ends that sent payload.
    pub connections: u64,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Payload bytes sent again.
    pub retransmitted_bytes: u64,
    pub bytes_acked: u64,
    /// The sending span: the first of those connections' opening and the
    /// last acknowledgement to any of them, ns.
    pub first_opened_ns: u64,
    pub last_ack_ns: u64,
    /// `bytes_sent` × 8 over the span, bit/s: the throughput a capture at
    /// the sender counts, retransmissions included.
    pub throughput_bps: u64,
    /// (`bytes_sent` − `retransmitted_bytes`) × 8 over the span, bit/s:
    /// the throughput with retransmissions left out ("NRT").
    pub nrt_throughput_bps: u64,
}

impl SenderReport {
    /// Sums the connection ends of `conns` that sent payload, per machine,
    /// in the order machines first appear.
    pub(crate) fn from_connections(conns: &[ConnectionReport]) -> Vec<SenderReport> {
        let mut out: Vec<SenderReport> = Vec::new();
        let mut index: std::collections::HashMap<&str, usize> = Default::default();
        for c in conns.iter().filter(|c| c.stats.bytes_sent > 0) {
            let k = *index.entry(c.machine.as_str()).or_insert_with(|| {
                out.push(SenderReport {
                    machine: c.machine.clone(),
                    connections: 0,
                    bytes_sent: 0,
                    retransmitted_bytes: 0,
                    bytes_acked: 0,
                    first_opened_ns: u64::MAX,
                    last_ack_ns: 0,
                    throughput_bps: 0,
                    nrt_throughput_bps: 0,
                });
                out.len() - 1
            });
            let s = &mut out[k];
            s.connections += 1;
            s.bytes_sent += c.stats.bytes_sent;
            s.retransmitted_bytes += c.stats.retransmitted_bytes;
            s.bytes_acked += c.stats.bytes_acked;
            s.first_opened_ns = s.first_opened_ns.min(c.opened_ns);
            s.last_ack_ns = s.last_ack_ns.max(c.last_ack_ns);
        }
        for s in &mut out {
            let span = s.last_ack_ns.saturating_sub(s.first_opened_ns);
            s.throughput_bps = bps(s.bytes_sent, span);
            s.nrt_throughput_bps =
                bps(s.bytes_sent - s.retransmitted_bytes.min(s.bytes_sent), span);
        }
        out
    }
}

/// Returns `bytes` × 8 over `ns`, bit/s (0 over no time).
pub(crate) fn bps(bytes: u64, ns: u64) -> u64 {
    if ns == 0 {
        return 0;
    }
    (u128::from(bytes) * 8 * 1_000_000_000 / u128::from(ns)) as u64
}

/// What one congestion control algorithm got, over all connections.
#[derive(Clone, Debug, Serialize)]
pub struct CongestionShare {
    pub congestion: &'static str,
    /// Connections that had data acknowledged.
    pub senders: u64,
    pub bytes_acked: u64,
    /// `bytes_acked` over the total of all algorithms, 0–1.
    pub share: f64,
    /// Sum of the senders' mean throughputs (`throughput_bps`), bit/s.
    pub throughput_bps: u64,
    /// `throughput_bps` over the total of all algorithms, 0–1: the share
    /// of a bottleneck while flows compete, whatever their sizes.
    pub throughput_share: f64,
}

impl CongestionShare {
    /// Returns the shares of `(algorithm, senders, bytes acked)` totals.
    pub(crate) fn from_totals(totals: &crate::stack::tcp::trace::Totals) -> Vec<CongestionShare> {
        let all: u64 = totals.values().map(|t| t.1).sum();
        let all_bps: u64 = totals.values().map(|t| t.2).sum();
        totals
            .iter()
            .filter(|(_, t)| t.0 > 0)
            .map(|(c, t)| CongestionShare {
                congestion: c,
                senders: t.0,
                bytes_acked: t.1,
                share: if all > 0 {
                    t.1 as f64 / all as f64
                } else {
                    0.0
                },
                throughput_bps: t.2,
                throughput_share: if all_bps > 0 {
                    t.2 as f64 / all_bps as f64
                } else {
                    0.0
                },
            })
            .collect()
    }
}

/// Packet counters.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PacketReport {
    pub frames_sent: u64,
    pub frames_delivered: u64,
    pub ip_sent: u64,
    pub ip_delivered: u64,
    pub udp_sent: u64,
    pub udp_delivered: u64,
    pub icmp_echo_replied: u64,
    /// ICMP errors (Unreachable, Time Exceeded, …) sent by any machine.
    pub icmp_errors_sent: u64,
    /// ICMP errors not sent because of the rate limits
    /// ([`crate::stack::icmp_limit`]).
    pub icmp_errors_rate_limited: u64,
    pub arp_sent: u64,
    /// TCP segments sent / received (checksum good).
    pub tcp_sent: u64,
    pub tcp_received: u64,
    /// TCP segments GRO merged into an earlier segment before TCP saw
    /// them (hosts with NIC offloads, `stack::offload`); counted in
    /// `tcp_received`.
    pub gro_merged: u64,
    /// SYN-ACKs that carried a SYN cookie, and cookies that checked
    /// (`stack::tcp::syncookie`); listed only when not zero.
    #[serde(skip_serializing_if = "is_zero")]
    pub syn_cookies_sent: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub syn_cookies_validated: u64,
    /// Total of `dropped`.
    pub dropped_total: u64,
    /// Drops by reason (`loss`, `queue_full`, `bad_checksum(udp)`, …).
    pub dropped: BTreeMap<String, u64>,
}

impl PacketReport {
    /// Aggregates the stack's counters `s` and the network layer's
    /// `frames_sent`.
    pub(crate) fn new(s: &Stats, frames_sent: u64) -> Self {
        PacketReport {
            frames_sent,
            frames_delivered: s.frames_delivered,
            ip_sent: s.ip_sent,
            ip_delivered: s.ip_delivered,
            udp_sent: s.udp_sent,
            udp_delivered: s.udp_delivered,
            icmp_echo_replied: s.icmp_echo_replied,
            icmp_errors_sent: s.icmp_errors_sent,
            icmp_errors_rate_limited: s.icmp_errors_rate_limited,
            arp_sent: s.arp_sent,
            tcp_sent: s.tcp_sent,
            tcp_received: s.tcp_received,
            gro_merged: s.gro_merged,
            syn_cookies_sent: s.syn_cookies_sent,
            syn_cookies_validated: s.syn_cookies_validated,
            dropped_total: s.drops.values().sum(),
            dropped: s.drops.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }
}

/// One network's configuration and counters.
#[derive(Clone, Debug, Serialize)]
pub struct NetworkReport {
    pub name: String,
    pub kind: NetworkKind,
    /// `null` = infinite.
    pub bandwidth_bps: Option<u64>,
    pub latency_ns: u64,
    pub ports: u64,
    #[serde(flatten)]
    pub stats: NetStats,
    /// A wireless network's MAC counters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wireless: Option<crate::net::wireless::WirelessStats>,
}

/// The counters of one egress queue.
#[derive(Clone, Debug, Serialize)]
pub struct QueueReport {
    /// The network's name.
    pub network: String,
    /// The machine whose NIC this is, or towards which the switch port
    /// sends.
    pub machine: String,
    /// `nic` (machine → network) or `switch` (switch port → machine).
    pub direction: &'static str,
    /// `droptail`, `red`, `tbf`, …
    pub discipline: &'static str,
    /// Frames the discipline accepted (marked ones included).
    pub enqueued: u64,
    /// Frames that left for the wire.
    pub dequeued: u64,
    /// Frames the discipline refused.
    pub dropped: u64,
    /// `dropped` by reason (`queue_full`, `red_early`, `red_forced`, …).
    pub dropped_by: BTreeMap<String, u64>,
    /// Frames queued with their ECN field set to CE.
    pub marked: u64,
    /// Most frames / bytes waiting at once (not counting the one being
    /// serialized).
    pub max_packets: u32,
    pub max_bytes: u64,
    /// Time-weighted mean of the frames waiting, from the first time a
    /// frame had to wait until the queue last emptied (the end of the run
    /// if it still holds frames).
    pub mean_packets: f64,
    /// Frames still waiting at the end.
    pub packets_at_end: u32,
}

/// Size of the routing state.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RoutingReport {
    /// Distinct tables (identical machines share one).
    pub tables: u64,
    /// Routes summed over the distinct tables.
    pub routes: u64,
}

/// One router's forwarding counters.
#[derive(Clone, Debug, Serialize)]
pub struct RouterReport {
    pub machine: String,
    /// The router's interfaces.
    pub interfaces_total: u64,
    /// The busiest [`Report::MAX_INTERFACES_LISTED`] interfaces (most
    /// datagrams received and forwarded, then most drops), in attachment
    /// order.
    pub interfaces: Vec<RouterIfaceReport>,
}

/// The counters of one router interface.
#[derive(Clone, Debug, Serialize)]
pub struct RouterIfaceReport {
    /// The network's name.
    pub network: String,
    /// The interface's address.
    pub address: String,
    #[serde(flatten)]
    pub counters: crate::stack::forward::IfaceCounters,
}

/// Outcomes of one application in one machine group.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AppReport {
    pub group: String,
    pub application: String,
    pub instances: u64,
    pub finished: u64,
    pub failed: u64,
    pub crashed: u64,
    /// Still waiting at the end (fine for daemons, a failure otherwise).
    pub waiting: u64,
    pub daemon: bool,
}

/// Application outcomes summed over every (machine group, application)
/// pair, listed or not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AppTotals {
    /// (machine group, application) pairs.
    pub entries: u64,
    pub instances: u64,
    pub finished: u64,
    pub failed: u64,
    pub crashed: u64,
    /// Non-daemon instances still waiting at the end.
    pub waiting: u64,
    /// Daemon instances still running at the end.
    pub daemons_running: u64,
}

impl AppTotals {
    /// Adds the outcomes of one (machine group, application) pair.
    pub fn add(&mut self, a: &AppReport) {
        self.entries += 1;
        self.instances += a.instances;
        self.finished += a.finished;
        self.failed += a.failed;
        self.crashed += a.crashed;
        if a.daemon {
            self.daemons_running += a.waiting;
        } else {
            self.waiting += a.waiting;
        }
    }
}

/// One application that did not finish well.
#[derive(Clone, Debug, Serialize)]
pub struct Problem {
    pub machine: String,
    pub application: String,
    pub state: TaskState,
    pub message: String,
}

/// Wall-clock figures of the run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Performance {
    pub wall_time_s: f64,
    pub events_per_s: f64,
    /// Simulated seconds per wall-clock second.
    pub speedup: f64,
    /// Peak resident set size of the whole process, bytes (Linux; 0 if
    /// unknown).
    pub peak_rss_bytes: u64,
    /// How a run paced to the wall clock kept up (only in such runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub realtime: Option<crate::realtime::RealtimeReport>,
    /// How a run asked for more than one thread was split
    /// ([`crate::parallel`]; only in such runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel: Option<ParallelReport>,
}

/// The partitions of a parallel run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ParallelReport {
    /// Threads asked for.
    pub threads: u64,
    /// Partitions run (one thread each; 1 when the run stayed sequential).
    pub partitions: u64,
    /// Links whose ends are in different partitions.
    pub cut_networks: u64,
    /// The smallest latency of a cut link: the length of a window, ns.
    pub lookahead_ns: u64,
    /// Windows run.
    pub windows: u64,
    /// The share of the threads' wall time spent waiting at the windows'
    /// barriers.
    pub barrier_wait_share: f64,
    /// Frames that crossed from one partition to another.
    pub frames_crossed: u64,
    pub machines_per_partition: Vec<u64>,
    /// Events and task polls per partition.
    pub events_per_partition: Vec<u64>,
    /// Why the run stayed on one thread, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequential_because: Option<String>,
}

impl ParallelReport {
    /// The report of a run asked for `threads` threads that stayed on
    /// one, for reason `why`.
    pub fn sequential(threads: usize, why: String) -> Self {
        ParallelReport {
            threads: threads as u64,
            partitions: 1,
            sequential_because: Some(why),
            ..Default::default()
        }
    }
}

impl Report {
    /// How many individual problems are listed.
    pub const MAX_LISTED: usize = 100;
    /// How many egress queues are listed.
    pub const MAX_QUEUES_LISTED: usize = 1000;
    /// How many networks are listed.
    pub const MAX_NETWORKS_LISTED: usize = 1000;
    /// How many interfaces of one router are listed.
    pub const MAX_INTERFACES_LISTED: usize = 1000;
    /// How many (machine group, application) pairs are listed.
    pub const MAX_APPLICATIONS_LISTED: usize = 1000;

    /// Returns true when every application finished well (daemons may
    /// still be waiting) and the run did not end on its time limit with
    /// applications still waiting.
    pub fn success(&self) -> bool {
        self.failures() == 0 && self.waiting() == 0
    }

    /// Returns the count of applications that failed or crashed.
    pub fn failures(&self) -> u64 {
        self.applications_total.failed + self.applications_total.crashed
    }

    /// Returns the count of non-daemon applications still waiting.
    pub fn waiting(&self) -> u64 {
        self.applications_total.waiting
    }

    /// Returns the report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Returns the JSON without the wall-clock part (deterministic).
    pub fn deterministic_json(&self) -> String {
        let mut r = self.clone();
        r.performance = Performance::default();
        r.to_json()
    }
}

/// Returns the indices `0..n` of the `max` items with the largest `key`
/// (ties: the earlier index first), in index order; all of them when
/// there are at most `max`. How a report keeps the busiest of many.
pub(crate) fn busiest<K: Ord>(n: usize, max: usize, key: impl Fn(usize) -> K) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    if n > max && max > 0 {
        idx.select_nth_unstable_by_key(max - 1, |&i| (std::cmp::Reverse(key(i)), i));
        idx.truncate(max);
        idx.sort_unstable();
    } else if max == 0 {
        idx.clear();
    }
    idx
}

/// Returns the peak resident set size of this process in bytes, if known.
pub fn peak_rss_bytes() -> u64 {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return 0;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// For `skip_serializing_if`: a counter that stayed zero is left out.
fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[cfg(test)]
mod tests {
    use super::busiest;

    #[test]
    fn busiest_keeps_the_largest_keys_in_index_order_ties_to_the_earlier() {
        let keys = [5, 1, 9, 1, 9, 0, 7];
        assert_eq!(busiest(keys.len(), 3, |i| keys[i]), vec![2, 4, 6]);
        assert_eq!(busiest(keys.len(), 4, |i| keys[i]), vec![0, 2, 4, 6]);
        // Equal keys: the earliest indices.
        assert_eq!(busiest(6, 2, |_| 0), vec![0, 1]);
        assert_eq!(busiest(3, 5, |i| i), vec![0, 1, 2]);
        assert!(busiest(3, 0, |i| i).is_empty());
    }
}
