//! Web traffic end to end: the `web.ndl` example (browsing users and an
//! http_load client across a router, the default SURGE model), checked
//! against tshark's decoding of its captures and against a second run;
//! and the web mistakes a user can make, each reported where it was made.

use crate::*;
use std::process::Command;

/// The value of metric `name` of application `app` (published once per
/// group).
fn metric(report: &Value, app: &str, name: &str) -> f64 {
    report["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["application"] == app && m["name"] == name)
        .map(|m| m["value"].as_f64().unwrap())
        .sum()
}

fn run_web(dir: &Path, pcap: bool) -> (Value, Vec<u8>) {
    let report_path = dir.join("report.json");
    let pcap_dir = dir.join("pcap");
    let out = if pcap {
        elvis(args![
            "run",
            "--quiet",
            &example("web.ndl"),
            "--report",
            &report_path,
            "--pcap",
            &pcap_dir
        ])
    } else {
        elvis(args![
            "run",
            "--quiet",
            &example("web.ndl"),
            "--report",
            &report_path
        ])
    };
    out.expect_code(0);
    let mut r = read_report(&report_path);
    r.as_object_mut().unwrap().remove("performance");
    let bytes = serde_json::to_vec(&r).unwrap();
    (r, bytes)
}

#[test]
fn the_web_example_browses_and_tshark_counts_the_reported_requests() {
    let dir = temp_dir();
    let (r, _) = run_web(dir.path(), true);
    assert_eq!(
        r["problems"].as_array().unwrap().len(),
        0,
        "{}",
        r["problems"]
    );
    // 4 users x 4 pages, each with its images; 4 fetches of 504 KB.
    assert_eq!(metric(&r, "web_user", "pages"), 16.0);
    assert_eq!(metric(&r, "web_user", "errors"), 0.0);
    assert_eq!(metric(&r, "http_load", "fetches"), 4.0);
    assert_eq!(metric(&r, "http_load", "bytes"), 4.0 * 504_000.0);
    let objects = metric(&r, "web_user", "objects");
    let requests = metric(&r, "web_server", "requests");
    assert_eq!(requests, 16.0 + objects + 4.0);
    let responses = metric(&r, "web_server", "responses_2xx")
        + metric(&r, "web_server", "responses_4xx")
        + metric(&r, "web_server", "responses_5xx");
    assert_eq!(responses, requests);
    let p50 = metric(&r, "web_user", "page_load_p50_ns");
    let p99 = metric(&r, "web_user", "page_load_p99_ns");
    assert!(p50 > 0.0 && p99 >= p50, "page load p50 {p50} p99 {p99}");
    assert!(metric(&r, "http_load", "fetch_p50_ns") > 0.0);
    if Command::new("tshark").arg("--version").output().is_err() {
        eprintln!("notice: tshark is not installed; skipping the capture check");
        return;
    }
    for entry in std::fs::read_dir(dir.path().join("pcap")).unwrap() {
        let p = entry.unwrap().path();
        assert_eq!(
            tshark_count(&p, "_ws.malformed || _ws.expert.severity >= error"),
            0,
            "{}",
            p.display()
        );
    }
    // The server is alone on `dc`: every request and response crosses it
    // once.
    let dc = dir.path().join("pcap/net-dc.pcap");
    assert_eq!(tshark_count(&dc, "http.request") as f64, requests);
    assert_eq!(tshark_count(&dc, "http.response") as f64, responses);
    assert_eq!(
        tshark_count(&dc, "http.request.method == \"GET\"") as f64,
        requests
    );
    // Pages are chunked, objects carry a Content-Length.
    assert_eq!(
        tshark_count(&dc, "http.transfer_encoding == \"chunked\"") as f64,
        16.0
    );
}

#[test]
fn the_web_example_gives_identical_report_bytes_for_the_same_seed() {
    let a = temp_dir();
    let b = temp_dir();
    let (_, ra) = run_web(a.path(), false);
    let (_, rb) = run_web(b.path(), false);
    assert!(ra == rb, "two runs of web.ndl with seed 1 differ");
}

#[test]
fn a_bad_url_host_is_reported_where_it_was_written() {
    let out = elvis_in(&fixtures_dir(), args!["check", "bad/web-bad-url-host.ndl"]);
    out.expect_code(2);
    let first = out.first_stderr_line();
    assert!(
        first.starts_with("bad/web-bad-url-host.ndl:18:39:"),
        "{first}"
    );
    assert!(first.contains("unknown machine 'wwww' in url"), "{first}");
}

#[test]
fn a_malformed_model_file_is_named_with_its_line() {
    let out = elvis_in(&fixtures_dir(), args!["check", "bad/web-bad-model.ndl"]);
    out.expect_code(2);
    let first = out.first_stderr_line();
    assert!(first.starts_with("bad/web-bad-model.ndl:11:"), "{first}");
    assert!(
        first.contains("web-bad-model/num_images.csv:3: weight '2;' is not a number"),
        "{first}"
    );
}

#[test]
fn a_url_host_that_does_not_resolve_fails_only_its_application() {
    let dir = temp_dir();
    let report_path = dir.path().join("report.json");
    let out = elvis(args![
        "run",
        "--quiet",
        &fixture("web-unresolvable.ndl"),
        "--report",
        &report_path
    ]);
    out.expect_code(1);
    let r = read_report(&report_path);
    let problems = r["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0]["application"], "http_load");
    let message = problems[0]["message"].as_str().unwrap();
    assert!(
        message.contains("nowhere.example.com") && message.contains("NXDOMAIN"),
        "{message}"
    );
    // The other loader, resolving www.example.com, fetched.
    assert_eq!(metric(&r, "http_load", "fetches"), 2.0);
}
