//! `datacenter`: the standard datacenter experiment (DCTCP paper §4,
//! pFabric §5) as a speed benchmark: a FatTree(k) of 10 Gbit/s links of
//! 1 µs, every host running `flowgen` with the DCTCP paper's web-search
//! flow sizes at a given load to random other hosts, for `duration`; the
//! run goes on for `drain` more. Under DCTCP every port marks ECN at K = 65
//! frames (`qdisc='ecn_threshold'`), under CUBIC it is drop-tail; every
//! port holds 150 frames. The NDL is `bench/datacenter`'s, which runs the
//! same scenario for its FCT slowdowns.
//!
//! Reports wall time, peak RSS and events/s with how far the run got
//! (`reached_s`, under `--wall-limit`) and the flows' outcome.

use crate::Measurement;
use std::time::Instant;

/// The scenario's sizes.
pub struct Sizes {
    /// FatTree ports per switch (even): k³/4 hosts.
    pub k: u32,
    /// Offered load per host, a fraction of its link.
    pub load: f64,
    /// `dctcp` or `cubic`.
    pub cc: String,
    /// Flows arrive for this long, µs.
    pub duration_us: u64,
    /// The run goes on for this much more, µs.
    pub drain_us: u64,
    pub seed: u64,
    /// Stop the run after this much wall time (`reached_s` says how far
    /// it got).
    pub wall_limit_s: Option<f64>,
}

/// Returns the scenario's NDL.
pub fn ndl(s: &Sizes) -> String {
    let qdisc = match s.cc.as_str() {
        "dctcp" => "qdisc='ecn_threshold' ecn_k='65'",
        _ => "qdisc='droptail'",
    };
    format!(
        "[Simulation seed='{seed}' until='{until}us']\n\
         [Topology type='fattree' k='{k}' bandwidth='10Gbps' latency='1us' {qdisc} limit='150']\n\
         [Machines]\n\t[Machine name='host']\n\t\t[Applications]\n\
         \t\t\t[Application name='flowgen' workload='websearch' load='{load}' peers='host' \
         duration='{duration}us' congestion='{cc}']\n",
        seed = s.seed,
        until = s.duration_us + s.drain_us,
        k = s.k,
        load = s.load,
        duration = s.duration_us,
        cc = s.cc,
    )
}

/// Builds and runs the scenario.
pub fn run(s: &Sizes) -> Measurement {
    let t0 = Instant::now();
    let text = ndl(s);
    let scenario = elvis_ndl::parse(&text, "datacenter.ndl").expect("the scenario's NDL parses");
    let mut built = elvis_build::build(&scenario, None).expect("the scenario builds");
    drop(scenario);
    if let Some(l) = s.wall_limit_s {
        built
            .sim
            .set_wall_limit(std::time::Duration::from_secs_f64(l));
    }
    let build_s = t0.elapsed().as_secs_f64();
    let limits = elvis_sim::RunLimits { until: built.until };
    let report = built.sim.run_with(limits, &mut |_| {});
    let limited = s.wall_limit_s.is_some() && report.end.to_string() == "wall-clock limit reached";
    let flows = report.flows.as_ref();
    let all = flows.map(|f| &f.all);
    let marked: u64 = report.queues.iter().map(|q| q.marked).sum();
    let reached_s = report.sim_time_ns as f64 / 1e9;
    let run_s = report.performance.wall_time_s;
    Measurement {
        scenario: "datacenter".into(),
        n: u64::from(s.k).pow(3) / 4,
        build_s,
        run_s,
        events: report.events,
        events_per_s: report.performance.events_per_s,
        delivered: flows.map_or(0, |f| f.finished),
        ok: (report.success() || limited) && flows.is_some_and(|f| f.flows > 0),
        extra: serde_json::json!({
            "k": s.k,
            "load": s.load,
            "cc": s.cc,
            "duration_us": s.duration_us,
            "drain_us": s.drain_us,
            "end": report.end.to_string(),
            "reached_s": reached_s,
            "simulated_s_per_wall_s": reached_s / run_s.max(1e-9),
            "flows": flows.map(|f| f.flows),
            "unfinished": flows.map(|f| f.unfinished),
            "slowdown_p50": all.and_then(|a| a.slowdown_p50),
            "slowdown_p99": all.and_then(|a| a.slowdown_p99),
            "dropped": report.packets.dropped_total,
            "frames_sent": report.packets.frames_sent,
            "ce_marked": marked,
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(cc: &str) -> Sizes {
        Sizes {
            k: 4,
            load: 0.5,
            cc: cc.into(),
            duration_us: 300,
            drain_us: 700,
            seed: 1,
            wall_limit_s: None,
        }
    }

    #[test]
    fn the_scenario_is_bench_datacenters() {
        let text = ndl(&small("dctcp"));
        assert!(text.contains("qdisc='ecn_threshold' ecn_k='65'"), "{text}");
        assert!(text.contains("until='1000us'") && text.contains("duration='300us'"));
        assert!(ndl(&small("cubic")).contains("qdisc='droptail'"));
        elvis_ndl::parse(&text, "datacenter.ndl").expect("parses");
    }

    /// FatTree(4) for 1 ms: flows start, DCTCP's ports mark, some finish.
    #[test]
    fn a_small_fat_tree_runs_flows_and_marks() {
        let m = run(&small("dctcp"));
        assert!(m.ok, "{m:?}");
        assert_eq!(m.n, 16);
        assert!(m.delivered > 0, "{m:?}");
        assert!(m.extra["flows"].as_u64() >= Some(m.delivered), "{m:?}");
    }
}
