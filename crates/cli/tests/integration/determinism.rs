//! Same scenario and seed, same report and pcaps, byte for byte.

use crate::*;
use serde_json::Value;

/// Runs the default scenario with `seed` into `dir/report.json` and
/// `dir/pcap/`; returns the report without its `performance` object.
fn run_default(seed: &str, dir: &Path) -> Value {
    let report = dir.join("report.json");
    let out = elvis(args![
        "run",
        "--quiet",
        "--seed",
        seed,
        "--report",
        &report,
        "--pcap",
        dir.join("pcap"),
    ]);
    out.expect_code(0);
    let mut r = read_report(&report);
    let performance = r
        .as_object_mut()
        .unwrap()
        .remove("performance")
        .expect("a performance object");
    assert!(performance["wall_time_s"].is_number());
    r
}

#[test]
fn the_same_seed_gives_the_same_report_and_byte_identical_pcaps() {
    let a = temp_dir();
    let b = temp_dir();
    let report_a = run_default("7", a.path());
    let report_b = run_default("7", b.path());
    assert_eq!(report_a["seed"], 7);
    assert_eq!(report_a, report_b);

    let names = file_names(&a.path().join("pcap"));
    assert_eq!(names, ["net-lan.pcap", "net-wan.pcap"]);
    assert_eq!(file_names(&b.path().join("pcap")), names);
    for name in &names {
        let pa = std::fs::read(a.path().join("pcap").join(name)).unwrap();
        let pb = std::fs::read(b.path().join("pcap").join(name)).unwrap();
        assert!(pa.len() > 24, "{name} holds no frames");
        assert!(pa == pb, "{name} differs between two runs with seed 7");
    }
}

#[test]
fn another_seed_gives_another_capture_of_the_lossy_network() {
    let a = temp_dir();
    let b = temp_dir();
    let report_7 = run_default("7", a.path());
    let report_8 = run_default("8", b.path());
    let wan_7 = std::fs::read(a.path().join("pcap/net-wan.pcap")).unwrap();
    let wan_8 = std::fs::read(b.path().join("pcap/net-wan.pcap")).unwrap();
    // `wan` loses 1% of its frames; which ones depends on the seed. (With
    // 40 frames, two seeds give the same capture about half the time:
    // seeds 7 and 8 are known to differ.)
    assert!(wan_7 != wan_8, "seeds 7 and 8 gave the same wan capture");
    assert_ne!(report_7["networks"], report_8["networks"]);
}
