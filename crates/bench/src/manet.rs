//! `manet`: Broch et al.'s mobile ad hoc network (MobiCom '98) scaled up:
//! N AODV nodes moving by random waypoint on one 802.11b DCF network
//! (11 Mbit/s, 250 m range), F constant-bit-rate flows of 64-byte
//! datagrams at 4 per second (`mgen`, periodic) from F sources to F
//! other nodes, for T simulated seconds.
//!
//! The area keeps Broch's density, 50 nodes in 1500 m × 300 m (one node
//! per 9,000 m², about 20 within range of each), as a square of side
//! √(9000 N) m: 9,487 m for 10,000 nodes. A square rather than Broch's
//! 5 : 1 strip, because the strip scaled to 10,000 nodes is 21 km long,
//! some 85 radio hops, beyond AODV's NET_DIAMETER of 35 hops (RFC 3561
//! §10), so that many pairs could never be connected; across the
//! square's diagonal (13.4 km) a pair is still further apart than that,
//! but the mean distance of two random points (0.52 of the side, 4.9 km)
//! is about 20 hops.
//!
//! Speeds are uniform in 1–20 m/s (Broch: 0–20; a zero speed never
//! arrives), the pause time 0 s (always moving); flows start uniformly
//! in the first 10 s and send until 20 s before the end. The NDL is
//! written out as `examples/ndl/manet.ndl` writes it, with the sources,
//! sinks and relays as groups.

use crate::Measurement;
use std::time::Instant;

/// The scenario's sizes.
pub struct Sizes {
    pub nodes: u64,
    pub flows: u64,
    pub seconds: u64,
    pub seed: u64,
    /// `random_waypoint` or `manhattan`.
    pub mobility: String,
    /// Stop the run after this much wall time (the report then says how
    /// far it got: `reached_s`).
    pub wall_limit_s: Option<f64>,
}

/// Returns the side of the square that holds `nodes` at Broch's density,
/// metres.
pub fn side_m(nodes: u64) -> f64 {
    (9000.0 * nodes as f64).sqrt().round()
}

/// Returns the scenario's NDL.
pub fn ndl(s: &Sizes) -> String {
    let side = side_m(s.nodes);
    let relays = s.nodes.saturating_sub(2 * s.flows);
    let moves = match s.mobility.as_str() {
        "manhattan" => "mobility='manhattan' block='100m' speed='1-20'",
        _ => "mobility='random_waypoint' speed='1-20' pause='0s'",
    };
    let node = |name: &str, count: u64, udp: bool, app: &str| {
        let mut b = format!(
            "\t[Machine name='{name}' count='{count}' forward='yes']\n\t\t[Networks]\n\t\t\t[Network id='air']\n\t\t[Protocols]\n"
        );
        if udp {
            b.push_str("\t\t\t[Protocol name='UDP']\n");
        }
        b.push_str("\t\t\t[Protocol name='AODV']\n");
        if !app.is_empty() {
            b.push_str(&format!("\t\t[Applications]\n\t\t\t{app}\n"));
        }
        b
    };
    let mut t = format!(
        "[Simulation seed='{seed}' until='{secs}s']\n[Networks]\n\t[Network id='air' type='wireless' standard='802.11b' mac='dcf' range='250m'\n\t\tarea='{side}x{side}' placement='uniform' {moves}]\n\t\t[IP subnet='10.0.0.0/8']\n[Machines]\n",
        seed = s.seed,
        secs = s.seconds,
    );
    let app = format!(
        "[Application name='mgen' to='dst-{{i}}' port='5000' pattern='periodic' rate='4' size='64' start='uniform(0s,10s)' duration='{}s']",
        s.seconds.saturating_sub(20).max(1)
    );
    t.push_str(&node("src", s.flows, true, &app));
    t.push_str(&node(
        "dst",
        s.flows,
        true,
        "[Application name='mgen_sink' port='5000']",
    ));
    if relays > 0 {
        t.push_str(&node("relay", relays, false, ""));
    }
    t
}

/// Builds and runs the scenario; reports the delivery ratio and the
/// routing overhead beside wall time, peak RSS and events/s.
pub fn run(s: &Sizes) -> Measurement {
    let t0 = Instant::now();
    let text = ndl(s);
    let scenario = elvis_ndl::parse(&text, "manet.ndl").expect("the MANET's NDL parses");
    let mut built = elvis_build::build(&scenario, None).expect("the MANET builds");
    drop(scenario);
    if let Some(l) = s.wall_limit_s {
        built
            .sim
            .set_wall_limit(std::time::Duration::from_secs_f64(l));
    }
    let build_s = t0.elapsed().as_secs_f64();
    let report = built.sim.run();
    let limited = s.wall_limit_s.is_some() && report.end.to_string() == "wall-clock limit reached";
    let a = report.aodv.as_ref();
    let routing: u64 = a.map_or(0, |a| a.messages_sent.values().sum());
    let routing_bytes: u64 = a.map_or(0, |a| a.bytes_sent.values().sum());
    let delivered = a.and_then(|a| a.data_delivered).unwrap_or(0);
    let wireless = report
        .networks
        .iter()
        .find_map(|n| n.wireless.as_ref())
        .cloned();
    Measurement {
        scenario: "manet".into(),
        n: s.nodes,
        messages: s.flows,
        build_s,
        run_s: report.performance.wall_time_s,
        events: report.events,
        events_per_s: report.performance.events_per_s,
        delivered,
        ok: (report.success() || limited) && delivered > 0,
        extra: serde_json::json!({
            "flows": s.flows,
            "simulated_s": s.seconds,
            "end": report.end.to_string(),
            "reached_s": report.sim_time_ns as f64 / 1e9,
            "area_m": [side_m(s.nodes), side_m(s.nodes)],
            "mobility": s.mobility,
            "data_sent": a.and_then(|a| a.data_sent),
            "delivery_ratio": a.and_then(|a| a.delivery_ratio),
            "routing_packets": routing,
            "routing_bytes": routing_bytes,
            "routing_per_delivered": routing as f64 / delivered.max(1) as f64,
            "messages_sent": a.map(|a| a.messages_sent.clone()),
            "discoveries": a.map(|a| a.discoveries),
            "discoveries_failed": a.map(|a| a.discoveries_failed),
            "end_to_end_delay_mean_ns": a.and_then(|a| a.end_to_end_delay_mean_ns),
            "wireless": wireless,
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_square_keeps_brochs_density() {
        // 50 nodes in 1500 m x 300 m: 9,000 m² each.
        for n in [50, 1_000, 10_000] {
            let side = side_m(n);
            assert!((side * side / n as f64 / 9000.0 - 1.0).abs() < 1e-3, "{n}");
        }
        assert_eq!(side_m(10_000), 9487.0);
    }

    #[test]
    fn the_scenario_parses_with_its_groups() {
        let s = Sizes {
            nodes: 10_000,
            flows: 2_000,
            seconds: 300,
            seed: 1,
            mobility: "manhattan".into(),
            wall_limit_s: None,
        };
        let text = ndl(&s);
        assert!(text.contains("area='9487x9487'") && text.contains("count='6000'"));
        elvis_ndl::parse(&text, "manet.ndl").expect("parses");
    }
}
