//! The report's `aodv` section (present when a machine runs AODV): the
//! routing overhead, the route discoveries and their latency, the
//! datagrams held for a route, and, when the run has `mgen` flows to
//! `mgen_sink`s, their packet delivery ratio and end-to-end delay.

use super::MetricReport;
use crate::stack::aodv::{Stats, KINDS};
use crate::stack::hosts::Hosts;
use serde::Serialize;
use std::collections::BTreeMap;

/// AODV over the whole run.
#[derive(Clone, Debug, Serialize)]
pub struct AodvReport {
    /// Machines running AODV.
    pub nodes: u64,
    /// Routing messages sent (each transmission on an interface counts),
    /// by type: `rreq`, `rrep`, `rerr`, `rrep_ack`, `hello`; and their UDP
    /// payload bytes.
    pub messages_sent: BTreeMap<&'static str, u64>,
    pub bytes_sent: BTreeMap<&'static str, u64>,
    /// RREQs originated (each ring and retry counts), forwarded, and
    /// dropped as duplicates (RFC 3561 §6.5).
    pub rreq_originated: u64,
    pub rreq_forwarded: u64,
    pub rreq_duplicates: u64,
    /// RREPs forwarded by intermediate nodes.
    pub rrep_forwarded: u64,
    /// Route discoveries started, completed, given up.
    pub discoveries: u64,
    pub discoveries_completed: u64,
    pub discoveries_failed: u64,
    /// From the first RREQ to the RREP, over completed discoveries, ns
    /// (nearest-rank percentiles; absent when none completed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discovery_mean_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discovery_p50_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discovery_p99_ns: Option<u64>,
    /// Datagrams held while a route was found, and datagrams dropped for
    /// want of a route.
    pub data_buffered: u64,
    pub data_dropped_no_route: u64,
    /// Links found broken, routes invalidated by breaks and RERRs.
    pub link_breaks: u64,
    pub routes_invalidated: u64,
    /// RREQs held back to the next second by RREQ_RATELIMIT, and RERRs
    /// not sent past RERR_RATELIMIT (RFC 3561 §6.3, §6.11: 10 a second).
    pub rreq_rate_limited: u64,
    pub rerr_rate_limited: u64,
    /// RREP-ACKs asked for that did not come (each blacklists the
    /// neighbour), and RREQs ignored from blacklisted neighbours (RFC
    /// 3561 §6.8).
    pub rrep_ack_timeouts: u64,
    pub rreq_blacklisted: u64,
    /// Local repairs started and failed, and RERRs with the N flag sent
    /// for repaired routes that got longer (RFC 3561 §6.12).
    pub local_repairs: u64,
    pub local_repairs_failed: u64,
    pub rerr_no_delete: u64,
    /// `mgen` messages sent and `mgen_sink` messages received over the
    /// run, their ratio, and the sinks' mean one-way delay weighted by the
    /// messages each received (absent without mgen flows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_sent: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_delivered: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery_ratio: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_to_end_delay_mean_ns: Option<f64>,
}

/// The nearest-rank percentile `p` of sorted `v`.
fn rank(v: &[u64], p: u64) -> u64 {
    let i = (p * v.len() as u64).div_ceil(100).max(1) as usize - 1;
    v[i.min(v.len() - 1)]
}

impl AodvReport {
    /// The section, when some machine runs AODV.
    pub fn new(w: &Hosts, metrics: &[MetricReport]) -> Option<AodvReport> {
        let nodes = (0..w.machines.len() as u32)
            .filter(|&m| crate::stack::aodv::node_ref(w, m).is_some())
            .count() as u64;
        if nodes == 0 {
            return None;
        }
        let s: &Stats = &w.obs.aodv;
        let by_kind = |v: &[u64; 5]| KINDS.iter().copied().zip(v.iter().copied()).collect();
        let mut lat = s.discovery_ns.clone();
        lat.sort_unstable();
        let n = lat.len() as u64;
        let sum = |app: &str, name: &str| -> Option<(f64, Vec<&MetricReport>)> {
            let v: Vec<&MetricReport> = metrics
                .iter()
                .filter(|m| m.application == app && m.name == name)
                .collect();
            (!v.is_empty()).then(|| (v.iter().map(|m| m.value).sum(), v))
        };
        let sent = sum("mgen", "sent").map(|(t, _)| t as u64);
        let received = sum("mgen_sink", "received");
        let delivered = received.as_ref().map(|(t, _)| *t as u64);
        let delay = received.and_then(|(total, sinks)| {
            let weighted: f64 = sinks
                .iter()
                .filter_map(|r| {
                    metrics
                        .iter()
                        .find(|m| {
                            m.machine == r.machine
                                && m.application == r.application
                                && m.name == "latency_mean_ns"
                        })
                        .map(|l| l.value * r.value)
                })
                .sum();
            (total > 0.0).then(|| weighted / total)
        });
        Some(AodvReport {
            nodes,
            messages_sent: by_kind(&s.sent),
            bytes_sent: by_kind(&s.sent_bytes),
            rreq_originated: s.rreq_originated,
            rreq_forwarded: s.rreq_forwarded,
            rreq_duplicates: s.rreq_duplicates,
            rrep_forwarded: s.rrep_forwarded,
            discoveries: s.discoveries,
            discoveries_completed: n,
            discoveries_failed: s.discoveries_failed,
            discovery_mean_ns: (n > 0).then(|| lat.iter().sum::<u64>() / n),
            discovery_p50_ns: (n > 0).then(|| rank(&lat, 50)),
            discovery_p99_ns: (n > 0).then(|| rank(&lat, 99)),
            data_buffered: s.buffered,
            data_dropped_no_route: s.dropped_no_route,
            link_breaks: s.link_breaks,
            routes_invalidated: s.routes_invalidated,
            rreq_rate_limited: s.rreq_rate_limited,
            rerr_rate_limited: s.rerr_rate_limited,
            rrep_ack_timeouts: s.rrep_ack_timeouts,
            rreq_blacklisted: s.rreq_blacklisted,
            local_repairs: s.local_repairs,
            local_repairs_failed: s.local_repairs_failed,
            rerr_no_delete: s.rerr_no_delete,
            data_sent: sent,
            data_delivered: delivered,
            delivery_ratio: match (sent, delivered) {
                (Some(s), Some(d)) if s > 0 => Some(d as f64 / s as f64),
                _ => None,
            },
            end_to_end_delay_mean_ns: delay,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::rank;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!((rank(&v, 50), rank(&v, 99)), (50, 99));
        assert_eq!((rank(&[7], 50), rank(&[7], 99)), (7, 7));
        assert_eq!(rank(&[1, 2, 3], 50), 2);
    }
}
