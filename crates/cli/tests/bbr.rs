//! BBR (`congestion='bbr'`, draft-ietf-ccwg-bbr) on a dumbbell, against
//! what the draft's model implies:
//!
//! - the bandwidth estimate follows a step change of the bottleneck rate:
//!   an increase within a few ProbeBW cycles (a probe finds it), a
//!   decrease only once the two-cycle max filter forgot the old rate, and
//!   the min-RTT estimate stays the path's propagation RTT;
//! - a bulk flow fills the bottleneck while keeping the queue near a BDP
//!   or below, where CUBIC fills the deep buffer;
//! - two flows with the same RTT share the link fairly (Jain's index);
//! - Startup ends a few rounds after the pipe is full.
//!
//! The path: `left-i` ─ 1 Gbit/s, 1 ms ─ router ═ bottleneck, 10 ms ═
//! router ─ 1 Gbit/s, 1 ms ─ `right-i`; its propagation RTT is
//! 2 × (1 + 10 + 1) ms = 24 ms plus serialization (~1.3 ms at 10 Mbit/s).
#![forbid(unsafe_code)]

use elvis_sim::{Report, RunLimits, Simulation, Time};

/// The propagation RTT, ns.
const BASE_RTT_NS: u64 = 24_000_000;

/// Returns the dumbbell scenario: `flows` bulk transfers with `cc` over a
/// `bw` bottleneck with a `queue`-packet buffer, until `until`.
fn scenario(cc: &str, flows: u32, bw: &str, queue: u32, until: &str) -> String {
    format!(
        "[Simulation seed='1' until='{until}']\n\
         [Topology type='dumbbell' n='{flows}' bandwidth='1Gbps' latency='1ms' \
         bottleneck_bandwidth='{bw}' bottleneck_latency='10ms' bottleneck_queue='{queue}']\n\
         [Machines]\n\
         \t[Machine name='left' count='{flows}']\n\
         \t\t[Applications]\n\
         \t\t\t[Application name='bulk_send' to='right-{{i}}' port='8000' bytes='1GB' congestion='{cc}']\n\
         \t[Machine name='right' count='{flows}']\n\
         \t\t[Applications]\n\
         \t\t\t[Application name='bulk_receive' port='8000' bytes='1GB']\n"
    )
}

fn build(src: &str) -> Simulation {
    let scenario = elvis_ndl::parse(src, "bbr.ndl").unwrap_or_else(|e| panic!("{e}"));
    elvis_build::build(&scenario, None)
        .unwrap_or_else(|e| panic!("{e}"))
        .sim
}

/// Runs `sim` on to `t_ms` milliseconds.
fn run_to(sim: &mut Simulation, t_ms: u64) -> Report {
    sim.run_with(
        RunLimits {
            until: Some(Time::from_nanos(t_ms * 1_000_000)),
        },
        &mut |_| {},
    )
}

/// The TCP statistics of the sending end on `machine`.
fn sender<'a>(r: &'a Report, machine: &str) -> &'a elvis_sim::TcpStats {
    &r.tcp_connections
        .iter()
        .find(|c| c.machine == machine && c.stats.bytes_sent > 0)
        .unwrap_or_else(|| panic!("no sender on {machine}"))
        .stats
}

/// BBR's model on `machine`: (state, bw bit/s, min_rtt ns).
fn model(r: &Report, machine: &str) -> (&'static str, u64, u64) {
    let m = sender(r, machine).model.expect("BBR reports its model");
    (m.state, m.bw_bps, m.min_rtt_ns)
}

/// The id of the network named `name`.
fn network(sim: &Simulation, name: &str) -> u32 {
    (0..sim.network_count() as u32)
        .find(|&n| sim.network_config(n).is_some_and(|c| c.name == name))
        .unwrap_or_else(|| panic!("no network {name}"))
}

/// The bottleneck queue of the left router (the direction data takes).
fn bottleneck_queue(r: &Report) -> &elvis_sim::report::QueueReport {
    r.queues
        .iter()
        .find(|q| q.network == "bottleneck" && q.machine == "router-0")
        .unwrap_or_else(|| panic!("no bottleneck queue in {:?}", r.queues))
}

/// Payload bit/s a `bps` link carries in full-sized frames (1448 bytes of
/// payload per 1514-byte frame... with the 12 timestamp option bytes).
fn goodput(bps: u64) -> u64 {
    bps * 1448 / 1514
}

/// (a) A step change of the bottleneck's rate. Up, 10 → 20 Mbit/s: the
/// next ProbeBW_UP (at most 2–3 s away, §4.3.3.5, plus a few rounds of
/// UP) finds the new rate. Down, 20 → 10 Mbit/s: `max_bw` keeps the old
/// rate until the two-cycle filter (§5.5.2) forgets it, and then
/// follows. min_rtt stays the propagation RTT throughout.
#[test]
fn the_bandwidth_estimate_follows_a_step_change_of_the_bottleneck() {
    for (from, to) in [(10_000_000u64, 20_000_000u64), (20_000_000, 10_000_000)] {
        let mut sim = build(&scenario(
            "bbr",
            1,
            &format!("{}Mbps", from / 1_000_000),
            200,
            "60s",
        ));
        let r = run_to(&mut sim, 10_000);
        let (state, bw, min_rtt) = model(&r, "left-0");
        assert!(state.starts_with("probe_"), "{state}");
        let near = |bw: u64, rate: u64| bw * 100 > goodput(rate) * 90 && bw * 100 < rate * 110;
        assert!(near(bw, from), "before: {bw} vs {from}");
        assert!(
            (BASE_RTT_NS..BASE_RTT_NS + 3_000_000).contains(&min_rtt),
            "{min_rtt}"
        );
        let net = network(&sim, "bottleneck");
        sim.set_network_bandwidth(net, to).unwrap();
        // Sample the estimate every 250 ms for 10 s.
        let mut first_near = None;
        let mut estimates = Vec::new();
        for k in 1..=40u64 {
            let r = run_to(&mut sim, 10_000 + 250 * k);
            let (_, bw, min_rtt) = model(&r, "left-0");
            estimates.push(bw);
            assert!(
                (BASE_RTT_NS..BASE_RTT_NS + 3_000_000).contains(&min_rtt),
                "min_rtt {min_rtt} at +{} ms",
                250 * k
            );
            if first_near.is_none() && near(bw, to) {
                first_near = Some(250 * k);
            }
        }
        eprintln!("{from} -> {to}: bw every 250 ms {estimates:?}");
        let after = first_near.unwrap_or_else(|| panic!("never near {to}: {estimates:?}"));
        if to > from {
            assert!(
                after <= 4_000,
                "found the increase after {after} ms: {estimates:?}"
            );
        } else {
            // Still the old rate just after the drop (no loss in a deep
            // buffer: no bw_lo cut), forgotten within two cycles.
            assert!(estimates[0] > from * 80 / 100, "{estimates:?}");
            assert!(
                after <= 8_000,
                "forgot the old rate after {after} ms: {estimates:?}"
            );
        }
        // It stays with the new rate.
        let last = *estimates.last().unwrap();
        assert!(near(last, to), "{last} vs {to}: {estimates:?}");
    }
}

/// (b) One bulk flow over a 10 Mbit/s bottleneck with a 200-packet buffer
/// (8 BDPs): BBR keeps the link busy and the queue at about a BDP or
/// less (ProbeBW_UP's 1.25 × bw adds a quarter BDP for a round, DOWN
/// drains it); CUBIC fills the buffer until it overflows.
#[test]
fn bbr_fills_the_link_without_filling_a_deep_buffer_as_cubic_does() {
    // BDP at 10 Mbit/s over 25.3 ms: 31.6 kB, 21 full frames.
    let bdp_frames = 10_000_000 * (BASE_RTT_NS + 1_300_000) / 8 / 1_000_000_000 / 1514;
    let mut results = Vec::new();
    for cc in ["bbr", "cubic"] {
        let mut sim = build(&scenario(cc, 1, "10Mbps", 200, "30s"));
        let r = run_to(&mut sim, 30_000);
        let acked = sender(&r, "left-0").bytes_acked;
        let rate = acked * 8 / 30;
        let q = bottleneck_queue(&r);
        results.push((cc, rate, q.mean_packets, q.max_packets, q.dropped));
    }
    eprintln!(
        "(cc, goodput bit/s, mean queue, max queue, drops): {results:?}, BDP {bdp_frames} frames"
    );
    let (_, bbr_rate, bbr_mean, bbr_max, _) = results[0];
    let (_, cubic_rate, cubic_mean, _, cubic_drops) = results[1];
    assert!(bbr_rate > goodput(10_000_000) * 90 / 100, "{results:?}");
    assert!(
        bbr_mean <= 1.5 * bdp_frames as f64,
        "{results:?} (BDP {bdp_frames})"
    );
    assert!(u64::from(bbr_max) <= 3 * bdp_frames, "{results:?}");
    assert!(cubic_rate > goodput(10_000_000) * 90 / 100, "{results:?}");
    assert!(cubic_mean > 4.0 * bdp_frames as f64, "{results:?}");
    assert!(cubic_drops > 0, "{results:?}");
    assert!(cubic_mean > 3.0 * bbr_mean, "{results:?}");
}

/// (c) Two BBR flows with the same RTT through one bottleneck: Jain's
/// fairness index of their bytes over a minute is at least 0.9, and
/// together they fill the link.
#[test]
fn two_bbr_flows_with_the_same_rtt_share_fairly() {
    let mut sim = build(&scenario("bbr", 2, "20Mbps", 100, "60s"));
    let r = run_to(&mut sim, 60_000);
    let x: Vec<f64> = ["left-0", "left-1"]
        .iter()
        .map(|m| sender(&r, m).bytes_acked as f64)
        .collect();
    let jain = x.iter().sum::<f64>().powi(2) / (2.0 * x.iter().map(|v| v * v).sum::<f64>());
    eprintln!("bytes {x:?}, Jain {jain}");
    assert!(jain >= 0.9, "Jain {jain}: {x:?}");
    let total_bps = x.iter().sum::<f64>() * 8.0 / 60.0;
    assert!(total_bps > 0.9 * goodput(20_000_000) as f64, "{total_bps}");
}

/// (d) Startup ends once three rounds brought less than 25 % more
/// bandwidth (§4.3.1.1): with a 10-segment initial window and a BDP of
/// about 21 segments, the pipe is full in the second round, so Startup
/// lasts about 2 + 3 rounds (round trips lengthened by the queue Startup
/// builds), not more than 8 of them; Drain follows, then ProbeBW.
#[test]
fn startup_ends_a_few_rounds_after_the_pipe_is_full() {
    let mut sim = build(&scenario("bbr", 1, "10Mbps", 200, "2s"));
    let mut states = Vec::new();
    let mut t = 0;
    while t < 2_000 {
        t += 5;
        let r = run_to(&mut sim, t);
        if let Some(c) = r.tcp_connections.iter().find(|c| c.machine == "left-0") {
            if let Some(m) = c.stats.model {
                if states.last().map(|(_, s)| *s) != Some(m.state) {
                    states.push((t, m.state));
                }
            }
        }
    }
    eprintln!("states (ms, state): {states:?}");
    let left_startup = states
        .iter()
        .find(|(_, s)| *s != "startup")
        .unwrap_or_else(|| panic!("never left Startup: {states:?}"))
        .0;
    // The connection opens after the handshake's round trip.
    assert!(
        left_startup >= 4 * BASE_RTT_NS / 1_000_000 && left_startup <= 9 * 40,
        "left Startup at {left_startup} ms: {states:?}"
    );
    assert!(
        states.iter().any(|(_, s)| s.starts_with("probe_bw")),
        "{states:?}"
    );
}

/// The shipped example: BBR and CUBIC each send 30 MB through the
/// bottleneck, together at the link rate; only the BBR sender reports a
/// model; the split is printed with `--nocapture`.
#[test]
fn the_bbr_vs_cubic_example_fills_the_link_and_reports_the_model() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/ndl/bbr-vs-cubic.ndl"
    );
    let src = std::fs::read_to_string(path).unwrap();
    let mut sim = build(&src);
    let r = sim.run();
    assert!(r.success(), "{:?}", r.problems);
    let bbr = sender(&r, "left-0");
    let cubic = sender(&r, "left-1");
    assert!(bbr.model.is_some() && cubic.model.is_none());
    assert_eq!(
        (bbr.bytes_acked, cubic.bytes_acked),
        (30_000_000, 30_000_000)
    );
    let senders: Vec<_> = r
        .tcp_connections
        .iter()
        .filter(|c| c.stats.bytes_sent > 0)
        .collect();
    let first_done = senders.iter().map(|c| c.last_ack_ns).min().unwrap();
    let last_done = senders.iter().map(|c| c.last_ack_ns).max().unwrap();
    let total_bps = 60_000_000 * 8 * 1_000_000_000 / last_done;
    eprintln!(
        "finished at {first_done} and {last_done} ns (bbr {} ns), {total_bps} bit/s, bottleneck queue mean {:.1} frames",
        senders.iter().find(|c| c.machine == "left-0").unwrap().last_ack_ns,
        bottleneck_queue(&r).mean_packets
    );
    assert!(total_bps > goodput(10_000_000) * 90 / 100, "{total_bps}");
}
