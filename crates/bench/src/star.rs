//! `star`: N hosts, each on its own /30 point-to-point link to one router,
//! every host sending one 64-byte UDP datagram at t = 0 to a sink behind
//! the router (whose link to the sink queues N frames, so that all
//! arrive). The NDL is written out in full (one `[Network]` and one
//! `[Machine]` block per host, the router listing all N links), as a user
//! generating a large topology would write it, so the measurement covers
//! parsing, lowering and building as well as the run.
//!
//! ```text
//!   h0 ──┐
//!   h1 ──┤ r ── sinknet ── sink      each hX on link lX (10.x.y.z/30)
//!   …  ──┘
//! ```
//!
//! Options: `--routing static` (the hosts' `gateway=` and the sink's only,
//! as the ns-3 comparison in `bench/vs-ns3` does) or `auto` (the
//! default: routes computed from the topology); `--pinned` also pins
//! every application's address with `ip=`.

use crate::Measurement;
use std::fmt::Write as _;
use std::time::Instant;

/// Returns `10.0.0.0 + 4·i + k` (host link `i`, address `k` of its /30).
fn addr(i: u64, k: u64) -> String {
    let a = 0x0a00_0000u64 + 4 * i + k;
    format!(
        "{}.{}.{}.{}",
        a >> 24,
        (a >> 16) & 255,
        (a >> 8) & 255,
        a & 255
    )
}

/// Returns the star's NDL.
pub fn ndl(n: u64, routing: &str, pinned: bool) -> String {
    let mut s = String::with_capacity(n as usize * 400);
    match routing {
        "auto" => s.push_str("[Simulation seed='1']\n"),
        r => {
            let _ = writeln!(s, "[Simulation seed='1' routing='{r}']");
        }
    }
    // The router's link to the sink queues every datagram (they all
    // reach the router at the same instant), so the sink gets them all.
    let _ = writeln!(
        s,
        "[Networks]\n\t[Network id='sinknet' type='link' bandwidth='10Gbps' latency='10us' queue='{n}']\n\t\t[IP subnet='192.168.0.0/30']"
    );
    for i in 0..n {
        let _ = writeln!(
            s,
            "\t[Network id='l{i}' type='link' bandwidth='1Gbps' latency='10us']\n\t\t[IP subnet='{}/30']",
            addr(i, 0)
        );
    }
    s.push_str("[Machines]\n\t[Machine name='r' forward='yes']\n\t\t[Networks]\n\t\t\t[Network id='sinknet' ip='192.168.0.1']\n");
    for i in 0..n {
        let _ = writeln!(s, "\t\t\t[Network id='l{i}' ip='{}']", addr(i, 1));
    }
    let ip = |a: &str| {
        if pinned {
            format!(" ip='{a}'")
        } else {
            String::new()
        }
    };
    let _ = writeln!(
        s,
        "\t[Machine name='sink' gateway='192.168.0.1']\n\t\t[Networks]\n\t\t\t[Network id='sinknet']\n\t\t[Protocols]\n\t\t\t[Protocol name='IPv4']\n\t\t\t[Protocol name='UDP']\n\t\t[Applications]\n\t\t\t[Application name='capture' port='9' message_count='{n}'{}]",
        ip("192.168.0.2")
    );
    let payload = "x".repeat(64);
    for i in 0..n {
        let _ = writeln!(
            s,
            "\t[Machine name='h{i}' gateway='{gw}']\n\t\t[Networks]\n\t\t\t[Network id='l{i}']\n\t\t[Protocols]\n\t\t\t[Protocol name='IPv4']\n\t\t\t[Protocol name='UDP']\n\t\t[Applications]\n\t\t\t[Application name='send_message' to='192.168.0.2' port='9' message='{payload}'{}]",
            ip(&addr(i, 2)),
            gw = addr(i, 1),
        );
    }
    s
}

/// Writes, parses, builds and runs the star; checks that the sink got
/// every datagram.
pub fn run(n: u64, routing: &str, pinned: bool) -> Measurement {
    let t0 = Instant::now();
    let text = ndl(n, routing, pinned);
    let scenario = elvis_ndl::parse(&text, "star.ndl").expect("the star's NDL parses");
    drop(text);
    let parse_s = t0.elapsed().as_secs_f64();
    let mut built = elvis_build::build(&scenario, None).expect("the star builds");
    drop(scenario);
    let build_s = t0.elapsed().as_secs_f64();
    let report = built.sim.run();
    Measurement {
        scenario: "star".into(),
        n,
        messages: 1,
        build_s,
        run_s: report.performance.wall_time_s,
        events: report.events,
        events_per_s: report.performance.events_per_s,
        delivered: report.packets.udp_delivered,
        ok: report.success() && report.packets.udp_delivered == n,
        extra: serde_json::json!({
            "routing": routing,
            "pinned": pinned,
            "parse_s": parse_s,
            "routing_tables": report.routing.tables,
            "routes": report.routing.routes,
        }),
        ..Default::default()
    }
}
