//! The AODV example (`examples/ndl/aodv-chain.ndl`): the first ping's
//! round trip is the closed form of the expanding ring search, and the
//! report's `aodv` section accounts for the discovery and the mgen flow.

use crate::*;

/// The value of metric `name` of application `app` in report `r`.
fn metric(r: &serde_json::Value, app: &str, name: &str) -> f64 {
    r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["application"] == app && m["name"] == name)
        .unwrap_or_else(|| panic!("no metric {name}: {}", r["metrics"]))["value"]
        .as_f64()
        .unwrap()
}

#[test]
fn the_aodv_chain_example_discovers_its_route_with_the_expanding_ring() {
    let dir = temp_dir();
    let report_path = dir.path().join("aodv.json");
    let pcap = dir.path().join("pcap");
    let out = elvis(args![
        "run",
        &example("aodv-chain.ndl"),
        "--report",
        &report_path,
        "--pcap",
        &pcap
    ]);
    out.expect_code(0);
    let r = read_report(&report_path);
    let metric = |app: &str, name: &str| metric(&r, app, name);
    // Rings of TTL 1, 3, 5 time out: 2 × 40 ms × (TTL + 2) each, 1.2 s.
    // Then 7 links of 100 Mbit/s and 10 µs, crossed by the RREQ (66-byte
    // frame, 5280 ns), the RREP (62 bytes, 4960 ns), the echo and its
    // reply (98 bytes, 7840 ns each).
    let hop = |ser: f64| ser + 10_000.0;
    let first = 1.2e9 + 7.0 * (hop(5280.0) + hop(4960.0) + 2.0 * hop(7840.0));
    assert_eq!(metric("ping", "rtt_max_ns"), first);
    assert_eq!(metric("ping", "rtt_min_ns"), 14.0 * hop(7840.0));
    let a = &r["aodv"];
    assert_eq!(a["nodes"], 8);
    assert_eq!(a["rreq_originated"], 4);
    assert_eq!(a["discoveries_completed"], 1);
    // The discovery: the rings, then the RREQ out and the RREP back.
    let discovery = 1.2e9 + 7.0 * (hop(5280.0) + hop(4960.0));
    assert_eq!(a["discovery_p50_ns"].as_f64().unwrap(), discovery);
    assert_eq!(a["data_sent"], 100);
    assert_eq!(a["delivery_ratio"], 1.0);
    assert_eq!(a["messages_sent"]["rrep"], 7, "n7's RREP and 6 forwards");
    assert!(a["messages_sent"]["hello"].as_u64().unwrap() > 0);
    // The capture of the first link decodes as AODV: n0's four RREQs.
    let tshark = std::process::Command::new("tshark")
        .arg("--version")
        .output();
    if !tshark.is_ok_and(|o| o.status.success()) {
        eprintln!("NOTICE: tshark is not on PATH; skipping the tshark check");
        return;
    }
    let l0 = pcap.join("net-l0.pcap");
    assert_eq!(tshark_count(&l0, "aodv.type == 1 && ip.src == 10.0.0.1"), 4);
    assert_eq!(tshark_count(&l0, "_ws.malformed"), 0);
}

#[test]
fn with_rrep_ack_each_hop_of_the_rrep_is_acknowledged_on_the_wire() {
    // The example with `rrep_ack='yes'` on every node (RFC 3561 §6.8):
    // each of the RREP's 7 hops asks for a RREP-ACK and gets it. The
    // first echo leaves n0 behind n0's RREP-ACK (a 60-byte frame, 4,800 ns
    // at 100 Mbit/s), so the first round trip is that much longer.
    let dir = temp_dir();
    let text = std::fs::read_to_string(example("aodv-chain.ndl"))
        .unwrap()
        .replace("hello='yes']", "hello='yes' rrep_ack='yes']");
    let ndl = dir.path().join("aodv-ack.ndl");
    std::fs::write(&ndl, text).unwrap();
    let report_path = dir.path().join("aodv.json");
    let pcap = dir.path().join("pcap");
    let out = elvis(args![
        "run",
        &ndl,
        "--report",
        &report_path,
        "--pcap",
        &pcap
    ]);
    out.expect_code(0);
    let r = read_report(&report_path);
    let a = &r["aodv"];
    assert_eq!(a["messages_sent"]["rrep"], 7);
    assert_eq!(a["messages_sent"]["rrep_ack"], 7);
    assert_eq!(a["rrep_ack_timeouts"], 0);
    assert_eq!(a["rreq_blacklisted"], 0);
    let rtt_max = metric(&r, "ping", "rtt_max_ns");
    let hop = |ser: f64| ser + 10_000.0;
    let first = 1.2e9 + 7.0 * (hop(5280.0) + hop(4960.0) + 2.0 * hop(7840.0));
    assert_eq!(rtt_max, first + 4800.0);
    let tshark = std::process::Command::new("tshark")
        .arg("--version")
        .output();
    if !tshark.is_ok_and(|o| o.status.success()) {
        eprintln!("NOTICE: tshark is not on PATH; skipping the tshark check");
        return;
    }
    let l0 = pcap.join("net-l0.pcap");
    let unicast_rrep = "aodv.type == 2 && ip.dst == 10.0.0.1";
    assert_eq!(tshark_count(&l0, unicast_rrep), 1);
    assert_eq!(
        tshark_count(&l0, &format!("{unicast_rrep} && aodv.flags.rrep_ack")),
        1
    );
    assert_eq!(tshark_count(&l0, "aodv.type == 4 && ip.src == 10.0.0.1"), 1);
    assert_eq!(tshark_count(&l0, "_ws.malformed"), 0);
}

#[test]
fn an_rrep_ack_value_other_than_yes_or_no_is_located() {
    let dir = temp_dir();
    let text = std::fs::read_to_string(example("aodv-chain.ndl"))
        .unwrap()
        .replacen("hello='yes']", "hello='yes' rrep_ack='maybe']", 1);
    let ndl = dir.path().join("bad.ndl");
    std::fs::write(&ndl, text).unwrap();
    let out = elvis(args!["check", &ndl]);
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr
            .contains("rrep_ack 'maybe' is neither yes nor no"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("bad.ndl:39:"), "{}", out.stderr);
}
