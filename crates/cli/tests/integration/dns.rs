//! DNS end to end: the `dns.ndl` example (hosts behind routers resolve
//! names through a recursive resolver and a root/TLD/authoritative
//! hierarchy), checked against tshark's decoding of its captures; and the
//! DNS mistakes a user can make, each reported where it was made.

use crate::*;
use std::process::Command;

fn metric_sum(report: &serde_json::Value, name: &str) -> u64 {
    report["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"] == name)
        .map(|m| m["value"].as_f64().unwrap() as u64)
        .sum()
}

#[test]
fn the_dns_example_resolves_through_the_hierarchy_and_tshark_agrees() {
    let dir = temp_dir();
    let report_path = dir.path().join("report.json");
    let pcap = dir.path().join("pcap");
    elvis(args![
        "run",
        "--quiet",
        &example("dns.ndl"),
        "--report",
        &report_path,
        "--pcap",
        &pcap
    ])
    .expect_code(0);
    let r = read_report(&report_path);
    assert_eq!(
        r["problems"].as_array().unwrap().len(),
        0,
        "{}",
        r["problems"]
    );
    let pings_ok = r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["application"] == "ping" && m["name"] == "received")
        .map(|m| m["value"].as_f64().unwrap())
        .sum::<f64>();
    assert_eq!(pings_ok, 18.0, "6 hosts x 3 pings reach www");
    // 12 lookups (2 per host), all answered; the cold ones walked root,
    // com. and example.com.
    assert_eq!(
        metric_sum(&r, "queries") - metric_sum(&r, "upstream_queries"),
        12
    );
    let responses = metric_sum(&r, "responses");
    if Command::new("tshark").arg("--version").output().is_err() {
        eprintln!("notice: tshark is not installed; skipping the capture check");
        return;
    }
    for entry in std::fs::read_dir(&pcap).unwrap() {
        let p = entry.unwrap().path();
        assert_eq!(tshark_count(&p, "_ws.malformed"), 0, "{}", p.display());
        assert_eq!(tshark_count(&p, "_ws.expert.severity == error"), 0);
    }
    // Every DNS server and the resolver are on `core`: each response they
    // send crosses it once.
    let core = pcap.join("net-core.pcap");
    assert_eq!(tshark_count(&core, "dns.flags.response == 1"), responses);
    assert_eq!(tshark_count(&core, "dns.flags.response == 0"), responses);
}

#[test]
fn a_zone_file_error_names_the_file_and_line() {
    let out = elvis_in(&fixtures_dir(), args!["check", "bad/dns-zone-error.ndl"]);
    out.expect_code(2);
    let first = out.first_stderr_line();
    assert!(first.starts_with("bad/dns-zone-error.ndl:12:"), "{first}");
    assert!(
        first.contains("dns-zone-error.zone:4: '10.0.0.300' is not an IPv4 address"),
        "{first}"
    );
}

#[test]
fn a_bad_record_block_is_located_at_its_value() {
    let out = elvis_in(&fixtures_dir(), args!["check", "bad/dns-bad-record.ndl"]);
    out.expect_code(2);
    let first = out.first_stderr_line();
    assert!(first.starts_with("bad/dns-bad-record.ndl:13:"), "{first}");
    assert!(
        first.contains("MX takes a preference and a name"),
        "{first}"
    );
}

#[test]
fn a_to_name_that_does_not_resolve_fails_its_application_naming_it() {
    let dir = temp_dir();
    let report_path = dir.path().join("report.json");
    let out = elvis(args![
        "run",
        &fixture("dns-unresolvable.ndl"),
        "--report",
        &report_path
    ]);
    out.expect_code(1);
    let r = read_report(&report_path);
    let problems = r["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0]["machine"], "client");
    assert_eq!(problems[0]["application"], "ping");
    let message = problems[0]["message"].as_str().unwrap();
    assert!(
        message.contains("to='nowhere.example.com'") && message.contains("NXDOMAIN"),
        "{message}"
    );
}
