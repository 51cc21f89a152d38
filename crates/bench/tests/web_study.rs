//! `elvis-bench web-study`, CI-sized: one scenario, both server kinds,
//! one seed, 6 s of load. The checks are sanity that a broken metric or
//! scenario fails: the loads share the 100 Mbit/s bottleneck, a server's
//! throughput without retransmissions is at most its throughput with
//! them, the shares of the allowed rate are
//! percentages near but below 100, the browser's delay under load is
//! longer than its transfer time alone at 100 Mbit/s, and CUBIC and
//! Compound TCP runs are not the same run.

use std::process::Command;

fn field(header: &str, row: &str, name: &str) -> String {
    let k = header
        .split(',')
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name}"));
    row.split(',').nth(k).unwrap_or("").to_string()
}

fn num(header: &str, row: &str, name: &str) -> f64 {
    field(header, row, name).parse().unwrap_or(f64::NAN)
}

#[test]
fn one_scenario_runs_and_its_metrics_are_sane() {
    let out = std::env::temp_dir().join(format!("elvis-web-study-{}", std::process::id()));
    let run = Command::new(env!("CARGO_BIN_EXE_elvis-bench"))
        .args([
            "web-study",
            "--seeds",
            "1",
            "--seconds",
            "6",
            "--browser-at",
            "2",
        ])
        .args(["--filter", "same/C3/"])
        .arg("--out")
        .arg(&out)
        .output()
        .expect("elvis-bench runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let csv = std::fs::read_to_string(out.join("runs.csv")).expect("runs.csv");
    let mut lines = csv.lines();
    let header = lines.next().expect("a header");
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 6, "C3 × Apache, IIS × 504, 320, 160 KB:\n{csv}");
    let mut delays = Vec::new();
    for r in &rows {
        let (t, nrt) = (
            num(header, r, "server_mbps"),
            num(header, r, "server_nrt_mbps"),
        );
        assert!(nrt > 0.0 && nrt <= t, "NRT {nrt} above {t}: {r}");
        // C3 offers 60 Mbit/s of stress; the server cannot send more than
        // the bottleneck carries.
        assert!(t > 40.0 && t < 100.0, "server throughput {t}: {r}");
        for share in ["stress_share_percent", "bt_share_percent"] {
            let s = num(header, r, share);
            assert!(s > 50.0 && s < 100.0, "{share} {s}: {r}");
        }
        // The TCP loads share what the UDP flow leaves of 100 Mbit/s.
        let tcp = num(header, r, "stress_mbps") + num(header, r, "bt_mbps");
        assert!(tcp > 60.0 && tcp < 90.0, "loads {tcp} Mbit/s: {r}");
        let size_kb: f64 = field(header, r, "id")
            .rsplit('/')
            .next()
            .and_then(|s| s.trim_end_matches("KB").parse().ok())
            .expect("size in the id");
        let alone = size_kb * 8_000.0 / 100e6;
        let d = num(header, r, "delay_s");
        assert!(d > 2.0 * alone, "delay {d} s not above 2 × {alone} s: {r}");
        delays.push((field(header, r, "id"), d, num(header, r, "events")));
    }
    // A bigger object takes longer, for each kind.
    for k in [0, 3] {
        assert!(delays[k].1 > delays[k + 2].1, "{delays:?}");
    }
    // CUBIC and Compound runs differ (same seed, same loads).
    assert_ne!(delays[0].2, delays[3].2, "{delays:?}");
    let md = std::fs::read_to_string(out.join("summary.md")).expect("summary.md");
    assert!(md.contains("## Table 2") && md.contains("| C3 |"));
    assert!(out.join("fig02.png").exists());
    let _ = std::fs::remove_dir_all(&out);
}
