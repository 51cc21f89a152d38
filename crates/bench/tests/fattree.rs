//! The FatTree benchmark's CI-sized smoke run: k = 4 from the flow file
//! ns.py's generator wrote (`bench/fattree/k4-seed0.json`, seed 0). ns.py
//! run on the same file delivers 12,000 packets with 66,000 port
//! transmissions and ends at t = 1500.175 s (`bench/fattree-vs-nspy 4`);
//! elvis must count exactly the same.

use std::path::Path;
use std::process::Command;

fn run(args: &[&str]) -> (i32, serde_json::Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_elvis-bench"))
        .args(args)
        .output()
        .expect("elvis-bench runs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let json = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(serde_json::Value::Null);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    (out.status.code().unwrap_or(-1), json, stderr)
}

fn fixture() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/fattree/k4-seed0.json");
    p.to_string_lossy().into_owned()
}

#[test]
fn fattree_4_delivers_every_packet_with_as_many_port_transmissions_as_ns_py() {
    let file = fixture();
    let (code, m, err) = run(&["fattree", "--k", "4", "--flows", &file]);
    assert_eq!(code, 0, "{m} {err}");
    assert_eq!(m["ok"], true);
    assert_eq!(m["delivered"], 12_000);
    assert_eq!(m["extra"]["dropped"], 0);
    assert_eq!(m["extra"]["port_transmissions"], 66_000);
    // The last packet arrives when ns.py's does: 1500 s + its 6 hops of
    // 25 ms plus 25 ms waiting behind another flow's packet.
    assert_eq!(m["extra"]["sim_time_s"], 1500.175);
}

#[test]
fn a_flow_file_for_another_k_is_refused_with_its_name() {
    let file = fixture();
    let (code, _, err) = run(&["fattree", "--k", "8", "--flows", &file]);
    assert_eq!(code, 2);
    assert!(err.contains("k4-seed0.json"), "{err}");
    assert!(err.contains("k = 4, not 8"), "{err}");
}
