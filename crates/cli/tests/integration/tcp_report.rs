//! The TCP part of `elvis run`: the report's connection list and shares,
//! and `--tcp-trace` time series, on the CUBIC-vs-Compound example.

use crate::*;

#[test]
fn the_cubic_vs_compound_example_reports_every_connection_and_the_shares() {
    let dir = temp_dir();
    let report_path = dir.path().join("r.json");
    let trace = dir.path().join("trace");
    let out = elvis(args![
        "run",
        &example("cubic-vs-compound.ndl"),
        "--report",
        &report_path,
        "--tcp-trace",
        &trace
    ]);
    out.expect_code(0);
    let tcp_line = out
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("TCP "))
        .unwrap_or_else(|| panic!("no TCP line in the summary:\n{}", out.stdout));
    assert!(
        tcp_line.contains("cubic") && tcp_line.contains("compound"),
        "{tcp_line}"
    );
    let r = read_report(&report_path);
    // 4 transfers, both ends of each, in creation order.
    let conns = r["tcp_connections"].as_array().unwrap();
    assert_eq!(conns.len(), 8);
    assert_eq!(r["tcp_connections_total"], 8);
    for (i, c) in conns.iter().enumerate() {
        assert_eq!(c["id"], i as u64);
    }
    // Each sender's acknowledged bytes are its peer's received bytes and
    // the NDL's `bytes`.
    for (sender, port, bytes) in [
        ("apache", 8001, 100_000_000u64),
        ("iis", 8002, 100_000_000),
        ("background-0", 8100, 20_000_000),
        ("background-1", 8101, 20_000_000),
    ] {
        let s = conns.iter().find(|c| c["machine"] == sender).unwrap();
        let peer = conns
            .iter()
            .find(|c| c["local"].as_str().unwrap().ends_with(&format!(":{port}")))
            .unwrap();
        assert_eq!(s["bytes_acked"], bytes, "{sender}");
        assert_eq!(peer["bytes_received"], bytes, "{sender}'s peer");
        assert_eq!(s["remote"], peer["local"]);
        assert!(s["throughput_bps"].as_u64().unwrap() > 0);
    }
    let shares = r["tcp_shares"].as_array().unwrap();
    let names: Vec<&str> = shares
        .iter()
        .map(|s| s["congestion"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["compound", "cubic", "newreno"]);
    let total: f64 = shares
        .iter()
        .map(|s| s["throughput_share"].as_f64().unwrap())
        .sum();
    assert!((total - 1.0).abs() < 1e-9);
    // One CSV per connection, time increasing, bytes acknowledged never
    // decreasing.
    let files = file_names(&trace);
    assert_eq!(files.len(), 8, "{files:?}");
    let apache = std::fs::read_to_string(trace.join("tcp-0-apache-49152.csv")).unwrap();
    let mut lines = apache.lines();
    assert_eq!(
        lines.next(),
        Some("time_ns,cwnd,ssthresh,srtt_ns,bytes_acked,retransmitted_segments,throughput_bps")
    );
    let mut last = (0u64, 0u64);
    let mut rows = 0;
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f.len(), 7, "{l}");
        let (t, acked) = (f[0].parse::<u64>().unwrap(), f[4].parse::<u64>().unwrap());
        assert!(
            rows == 0 || t / 10_000_000 > last.0 / 10_000_000,
            "one row per 10 ms: {l}"
        );
        assert!(acked >= last.1, "{l}");
        last = (t, acked);
        rows += 1;
    }
    assert!(
        rows > 1000,
        "{rows} rows for a 20 s transfer sampled every 10 ms"
    );
}

#[test]
fn a_bad_tcp_trace_interval_exits_with_status_2() {
    let dir = temp_dir();
    let out = elvis(args![
        "run",
        &example("fig2.ndl"),
        "--tcp-trace",
        dir.path(),
        "--tcp-trace-every",
        "soon"
    ]);
    out.expect_code(2);
    assert!(out.stderr.contains("--tcp-trace-every"), "{}", out.stderr);
}
