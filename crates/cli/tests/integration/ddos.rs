//! `examples/ndl/ddos.ndl` end to end: a spoofed SYN flood against an
//! echo server, with SYN cookies on (the clients get through) and off
//! (they time out); the capture dissects cleanly; the same seed twice
//! gives the same report.

use crate::*;
use serde_json::Value;
use std::process::Command;

/// Runs `file` into `dir/report.json` (and `dir/pcap/` when `pcap`);
/// returns the exit code and the report without its `performance`.
fn run(file: &Path, dir: &Path, pcap: bool) -> (Option<i32>, Value) {
    let report = dir.join("report.json");
    let pcap_dir = dir.join("pcap");
    let out = if pcap {
        elvis(args![
            "run", "--quiet", file, "--report", &report, "--pcap", &pcap_dir
        ])
    } else {
        elvis(args!["run", "--quiet", file, "--report", &report])
    };
    let mut r = read_report(&report);
    r.as_object_mut().unwrap().remove("performance");
    (out.code, r)
}

/// Returns metric `name` of `machine`.
fn metric(r: &Value, machine: &str, name: &str) -> f64 {
    r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["machine"] == machine && m["name"] == name)
        .unwrap_or_else(|| panic!("no {name} on {machine}"))["value"]
        .as_f64()
        .unwrap()
}

#[test]
fn the_ddos_example_lets_clients_in_with_syn_cookies_and_is_deterministic() {
    let a = temp_dir();
    let b = temp_dir();
    let (code, ra) = run(&example("ddos.ndl"), a.path(), false);
    assert_eq!(code, Some(0), "{:?}", ra["problems"]);
    let (_, rb) = run(&example("ddos.ndl"), b.path(), false);
    assert_eq!(ra, rb, "same seed, same report");
    assert_eq!(application(&ra, "client", "tcp_echo_client")["finished"], 4);
    assert_eq!(ra["packets"]["syn_cookies_validated"], 4);
    assert!(ra["packets"]["syn_cookies_sent"].as_u64().unwrap() > 19_000);
    assert_eq!(metric(&ra, "attacker-0", "sent"), 10_000.0);
    // The probe flow: all 2,000 messages, one-way latency 2 x 1 ms plus
    // three serializations of its 242-byte frames at 100 Mbit/s.
    assert_eq!(metric(&ra, "server", "received"), 2_000.0);
    assert_eq!(metric(&ra, "server", "lost"), 0.0);
    assert_eq!(metric(&ra, "server", "latency_p50_ns"), 2_058_080.0);
}

#[test]
fn the_ddos_example_without_syn_cookies_times_the_clients_out() {
    let dir = temp_dir();
    let text = std::fs::read_to_string(example("ddos.ndl")).unwrap();
    let file = dir.path().join("ddos-off.ndl");
    std::fs::write(&file, text.replace("syn_cookies='on'", "syn_cookies='off'")).unwrap();
    let (code, r) = run(&file, dir.path(), false);
    assert_eq!(code, Some(1), "failed applications");
    assert_eq!(application(&r, "client", "tcp_echo_client")["finished"], 0);
    let drops = r["packets"]["dropped"]["syn_backlog_full"]
        .as_u64()
        .unwrap();
    assert_eq!(drops, 20_000 - 128 + 4 * 7);
    assert!(
        r["packets"].get("syn_cookies_sent").is_none(),
        "zero: left out"
    );
}

#[test]
fn tshark_dissects_the_ddos_capture_without_malformed_packets() {
    let installed = Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        eprintln!("notice: tshark is not installed; skipping the ddos capture test");
        return;
    }
    // A shorter flood: 2 s instead of 20.
    let dir = temp_dir();
    let text = std::fs::read_to_string(example("ddos.ndl")).unwrap();
    let file = dir.path().join("ddos-short.ndl");
    std::fs::write(&file, text.replace("duration='20s'", "duration='2s'")).unwrap();
    let (code, r) = run(&file, dir.path(), true);
    assert_eq!(code, Some(0));
    let pcap = dir.path().join("pcap/net-dmz.pcap");
    let out = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(&pcap)
        .args([
            "-o",
            "tcp.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
        ])
        .args([
            "-T",
            "fields",
            "-e",
            "_ws.malformed",
            "-e",
            "tcp.checksum.status",
        ])
        .args([
            "-e",
            "udp.checksum.status",
            "-e",
            "tcp.flags.syn",
            "-e",
            "tcp.flags.ack",
        ])
        .output()
        .expect("tshark runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
    let dmz = r["networks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "dmz")
        .unwrap();
    assert_eq!(rows.len() as u64, dmz["frames_sent"].as_u64().unwrap());
    for row in &rows {
        assert!(row[0].is_empty(), "malformed: {row:?}");
        assert!(row[1] != "0" && row[2] != "0", "bad checksum: {row:?}");
    }
    // SYNs (the flood's, spoofed) and SYN-ACKs (cookies among them), all
    // with checksums tshark verified.
    let syn = rows.iter().filter(|r| r[3] == "1" && r[4] == "0").count();
    let syn_ack = rows.iter().filter(|r| r[3] == "1" && r[4] == "1").count();
    assert!(syn >= 2_000, "{syn} SYNs");
    assert!(syn_ack >= 2_000, "{syn_ack} SYN-ACKs");
    assert!(
        rows.iter().all(|r| r[1] != "2" || r[3].is_empty()),
        "TCP checksums verified"
    );
}
