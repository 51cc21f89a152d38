//! `offload-memory`: what `offload='linux'` costs per host.
//!
//! N hosts in one NDL group on a 10 Gbit/s switched LAN with 1 µs of
//! latency (so frames reach them through arrival events and wait in the
//! NIC's ring for the interrupt), the group with `offload='linux'` or
//! `offload='none'`; optionally a second group of K pingers, pinger `i`
//! pinging host `i` M times (one echo request at a time; all pingers
//! start together). Reported:
//! the process's peak RSS and the same divided by the machines, and the
//! NIC receive states the run allocated.
//!
//! Without `--offload`, the harness runs itself twice, in child processes
//! (`none`, then `linux`), and prints the difference per host: the memory
//! the offloads add, which is what the scale budget is about.

use crate::Measurement;
use std::process::Command as Process;
use std::time::Instant;

/// The scenario's NDL text.
fn ndl(n: u64, active: u64, messages: u64, offload: &str) -> String {
    let mut s = format!(
        "[Networks]\n    [Network id='lan' bandwidth='10Gbps' latency='1us']\n        [IP subnet='10.0.0.0/8']\n[Machines]\n    [Machine name='host' count='{n}' offload='{offload}']\n        [Networks]\n            [Network id='lan']\n        [Protocols]\n            [Protocol name='IPv4']\n            [Protocol name='UDP']\n"
    );
    if active > 0 {
        s += &format!(
            "    [Machine name='sender' count='{active}']\n        [Networks]\n            [Network id='lan']\n        [Protocols]\n            [Protocol name='IPv4']\n            [Protocol name='UDP']\n        [Applications]\n            [Application name='ping' to='host-{{i}}' count='{messages}']\n"
        );
    }
    s
}

/// One measurement in this process.
pub fn measure(n: u64, active: u64, messages: u64, offload: &str) -> Measurement {
    assert!(active <= n, "--active must not exceed --n");
    let t0 = Instant::now();
    let text = ndl(n, active, messages, offload);
    let scenario = elvis_ndl::parse(&text, "offload-memory.ndl").expect("benchmark NDL parses");
    let mut built = elvis_build::build(&scenario, None).expect("benchmark scenario builds");
    let build_s = t0.elapsed().as_secs_f64();
    let report = built.sim.run();
    let machines = n + active;
    let peak = elvis_sim::report::peak_rss_bytes();
    Measurement {
        scenario: "offload-memory".into(),
        n,
        messages: active * messages,
        build_s,
        run_s: report.performance.wall_time_s,
        events: report.events,
        events_per_s: report.performance.events_per_s,
        delivered: report.packets.icmp_echo_replied,
        ok: report.success() && report.packets.icmp_echo_replied == active * messages,
        extra: serde_json::json!({
            "offload": offload,
            "active": active,
            "machines": machines,
            "bytes_per_machine": peak as f64 / machines as f64,
            "gro_merged": built.sim.gro_merged(),
            "nic_states_allocated": built.sim.nic_states().0,
            "nic_states_held_at_end": built.sim.nic_states().1,
        }),
        ..Default::default()
    }
}

/// Runs `none` and `linux` in child processes; prints a Markdown table
/// and a JSON line with the bytes the offloads add per host. Returns
/// false when a child failed.
pub fn compare(n: u64, active: u64, messages: u64) -> bool {
    let exe = std::env::current_exe().expect("own path");
    let mut rss = Vec::new();
    println!("| hosts | active | offload | peak RSS (MiB) | bytes/machine | NIC receive states allocated | ok |");
    println!("|---:|---:|---|---:|---:|---:|---|");
    for offload in ["none", "linux"] {
        let output = Process::new(&exe)
            .args(["offload-memory", "--n", &n.to_string()])
            .args(["--active", &active.to_string()])
            .args(["--messages", &messages.to_string()])
            .args(["--offload", offload])
            .output()
            .expect("spawn benchmark child");
        let line = String::from_utf8_lossy(&output.stdout);
        let Ok(m) = serde_json::from_str::<Measurement>(line.trim()) else {
            eprintln!(
                "child '{offload}' failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            );
            return false;
        };
        println!(
            "| {n} | {active} | {offload} | {:.1} | {:.1} | {} | {} |",
            m.peak_rss_bytes as f64 / 1048576.0,
            m.peak_rss_bytes as f64 / (n + active) as f64,
            m.extra["nic_states_allocated"],
            if m.ok { "yes" } else { "NO" }
        );
        if !m.ok {
            return false;
        }
        rss.push(m.peak_rss_bytes);
    }
    let added = rss[1] as f64 - rss[0] as f64;
    let per_host = added / n as f64;
    println!(
        "{}",
        serde_json::json!({
            "scenario": "offload-memory",
            "n": n,
            "active": active,
            "messages": messages,
            "peak_rss_none": rss[0],
            "peak_rss_linux": rss[1],
            "offload_bytes_per_host": per_host,
        })
    );
    true
}
