//! Interrupted runs: SIGINT, SIGTERM and `--wall-limit` end a run at the
//! current event with a summary, a complete report whose `end` says why,
//! and captures that end at a frame boundary.

use crate::*;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Waits (at most 60 s) until `path` exists.
fn wait_for(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Asserts that Wireshark's capture reader reads the whole capture (no
/// record "cut short in the middle of a packet"); skipped when it is not
/// installed. `capinfos -c` reads every record without dissecting it: a
/// flood's capture has millions of frames, which tshark would take a
/// minute to dissect.
fn wireshark_reads_to_the_end(pcap: &Path) {
    let Ok(out) = std::process::Command::new("capinfos")
        .arg("-c")
        .arg(pcap)
        .output()
    else {
        eprintln!("capinfos (Wireshark) not installed: capture not read");
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("cut short"),
        "{stderr}"
    );
}

/// Runs the endless flood, sends `signal` once it is running, and
/// returns what the binary said and the report it wrote.
#[cfg(unix)]
fn interrupt_with(signal: &str) -> (Outcome, serde_json::Value, crate::TempDir) {
    let dir = temp_dir();
    let report = dir.path().join("r.json");
    let pcaps = dir.path().join("pcaps");
    let child = elvis_command()
        .args(args![
            "run",
            &fixture("endless-flood.ndl"),
            "--report",
            &report,
            "--pcap",
            &pcaps
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("elvis starts");
    // The captures are opened right before the run starts.
    wait_for(&pcaps.join("net-a%2Fb.pcap"));
    std::thread::sleep(Duration::from_millis(300));
    let sent = std::process::Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let out = child.wait_with_output().expect("elvis ends");
    let outcome = Outcome {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    let r = read_report(&report);
    (outcome, r, dir)
}

#[cfg(unix)]
#[test]
fn sigint_stops_the_run_with_a_summary_a_complete_report_and_whole_frames() {
    let (out, r, dir) = interrupt_with("INT");
    let pcaps = dir.path().join("pcaps");
    // The flood was still running: exit 3, as for any run that ends
    // with an application waiting.
    out.expect_code(3);
    assert!(
        out.stdout.contains("stopped          interrupted"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("busiest network 'a/b'"),
        "{}",
        out.stdout
    );
    assert!(out.stderr.contains("(interrupted)"), "{}", out.stderr);
    assert_eq!(r["end"], "interrupted");
    let reached = r["sim_time_ns"].as_u64().unwrap();
    assert!(reached > 0, "the run had started");
    assert!(packets(&r, "udp_sent") > 0);
    assert_eq!(application(&r, "sender", "send_message")["waiting"], 1);
    // Every record in the capture is whole (the reader asserts it) and
    // none is later than the time reached.
    let frames = read_pcap(&pcaps.join("net-a%2Fb.pcap"));
    assert!(!frames.is_empty());
    wireshark_reads_to_the_end(&pcaps.join("net-a%2Fb.pcap"));
}

#[cfg(unix)]
#[test]
fn sigterm_stops_the_run_like_sigint() {
    let (out, r, _dir) = interrupt_with("TERM");
    out.expect_code(3);
    assert_eq!(r["end"], "interrupted");
}

#[test]
fn a_wall_limit_ends_the_run_like_an_interrupt_and_names_the_busiest_network() {
    let dir = temp_dir();
    let report = dir.path().join("r.json");
    let start = Instant::now();
    let out = elvis(args![
        "run",
        &fixture("endless-flood.ndl"),
        "--wall-limit",
        "300ms",
        "--report",
        &report
    ]);
    out.expect_code(3);
    assert!(start.elapsed() < Duration::from_secs(60));
    assert!(
        out.stdout
            .contains("stopped          wall-clock limit reached")
            && out.stdout.contains("busiest network 'a/b'"),
        "{}",
        out.stdout
    );
    let r = read_report(&report);
    assert_eq!(r["end"], "wall_limit");
    assert!(r["sim_time_ns"].as_u64().unwrap() > 0);
}

#[test]
fn a_wall_limit_that_is_not_a_duration_is_bad_input() {
    let out = elvis(args!["run", &example("fig2.ndl"), "--wall-limit", "soon"]);
    out.expect_code(2);
    assert!(out.first_stderr_line().starts_with("error: --wall-limit"));
}
