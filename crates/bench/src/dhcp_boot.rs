//! `dhcp`: N hosts on LANs of `--lan` hosts boot by DHCP through relays
//! to 4 servers, their first DISCOVERs spread uniformly over the first
//! 10 simulated seconds (the issue's million-host boot: 4,000 LANs of
//! 250). Written out as NDL (one counted group per LAN), so the
//! measurement covers parsing and building too.
//!
//! ```text
//!   lan0 (h0-*) ── r0 ─┐
//!   lan1 (h1-*) ── r1 ─┼─ core ── dhcp0 … dhcp3
//!   …                  │
//! ```
//!
//! LAN `i` is `10.a.b.0/24` (`a.b` = `i` in base 256) behind router `ri`
//! (`.1` there, `172.16.x.y` on the core), which relays to server
//! `dhcp(i % 4)`; that server's pool for the LAN is `.2`–`.254` and it
//! routes to the LAN through the router. The LANs are ideal switches with
//! 5 µs of latency, the core 1 Gbit/s.

use crate::Measurement;
use std::fmt::Write as _;

const SERVERS: u64 = 4;

fn lan(i: u64) -> String {
    format!("10.{}.{}", i >> 8, i & 255)
}

fn core(i: u64) -> String {
    // Routers from 172.16.0.10 up; servers at 172.16.0.2 … .5.
    let a = i + 10;
    format!("172.16.{}.{}", a >> 8, a & 255)
}

/// Returns the NDL of `n` hosts on LANs of `per_lan`.
pub fn ndl(n: u64, per_lan: u64) -> String {
    let lans = n.div_ceil(per_lan);
    let mut s = String::with_capacity(lans as usize * 900);
    s.push_str("[Simulation seed='1' routing='static']\n[Networks]\n");
    let _ = writeln!(
        s,
        "\t[Network id='core' bandwidth='1Gbps' latency='10us']\n\t\t[IP subnet='172.16.0.0/16']"
    );
    for i in 0..lans {
        let _ = writeln!(
            s,
            "\t[Network id='lan{i}' latency='5us']\n\t\t[IP subnet='{}.0/24']",
            lan(i)
        );
    }
    s.push_str("[Machines]\n");
    for k in 0..SERVERS {
        let _ = writeln!(
            s,
            "\t[Machine name='dhcp{k}']\n\t\t[Networks]\n\t\t\t[Network id='core' ip='172.16.0.{}']",
            k + 2
        );
        for i in (k..lans).step_by(SERVERS as usize) {
            let _ = writeln!(s, "\t\t[Route to='{}.0/24' via='{}']", lan(i), core(i));
        }
        let _ = writeln!(
            s,
            "\t\t[Applications]\n\t\t\t[Application name='dhcp_server' lease='3600s']"
        );
        for i in (k..lans).step_by(SERVERS as usize) {
            let l = lan(i);
            let _ = writeln!(s, "\t\t\t\t[Pool pool='{l}.2-{l}.254' router='{l}.1']");
        }
    }
    for i in 0..lans {
        let hosts = per_lan.min(n - i * per_lan);
        let _ = writeln!(
            s,
            "\t[Machine name='r{i}' forward='yes' dhcp_relay='172.16.0.{}']\n\t\t[Networks]\n\t\t\t[Network id='core' ip='{}']\n\t\t\t[Network id='lan{i}' ip='{}.1']",
            i % SERVERS + 2,
            core(i),
            lan(i)
        );
        let _ = writeln!(
            s,
            "\t[Machine name='h{i}' count='{hosts}']\n\t\t[Networks]\n\t\t\t[Network id='lan{i}']\n\t\t[Protocols]\n\t\t\t[Protocol name='DHCP' start='uniform(0s,10s)']"
        );
    }
    s
}

/// Parses, builds and runs the boot until every host is configured (the
/// run stops when only lease timers are left); checks that all got an
/// address.
pub fn run(n: u64, per_lan: u64) -> Measurement {
    let t0 = std::time::Instant::now();
    let text = ndl(n, per_lan);
    let scenario = elvis_ndl::parse(&text, "dhcp.ndl").expect("the DHCP scenario parses");
    drop(text);
    let parse_s = t0.elapsed().as_secs_f64();
    let mut built = elvis_build::build_owned(scenario, None).expect("the DHCP scenario builds");
    let build_s = t0.elapsed().as_secs_f64();
    let report = built.sim.run();
    let d = report.dhcp.as_ref();
    let configured = d.map_or(0, |d| d.configured);
    Measurement {
        scenario: "dhcp".into(),
        n,
        messages: 1,
        build_s,
        run_s: report.performance.wall_time_s,
        events: report.events,
        events_per_s: report.performance.events_per_s,
        delivered: configured,
        ok: configured == n,
        extra: serde_json::json!({
            "per_lan": per_lan,
            "parse_s": parse_s,
            "sim_time_s": report.sim_time_ns as f64 / 1e9,
            "last_configured_s": d.and_then(|d| d.last_configured_ns).map(|t| t as f64 / 1e9),
            "acks": d.map(|d| d.messages.get("ack").copied()),
            "relayed": d.map(|d| d.relayed),
            "frames_delivered": report.packets.frames_delivered,
        }),
        ..Default::default()
    }
}
