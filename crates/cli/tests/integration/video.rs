//! Video streaming and the HTTP GET flood end to end: `video.ndl` (BOLA
//! and throughput-rule players through a bottleneck) against tshark's
//! decoding of its capture and a second run; `http-flood.ndl` with and
//! without the flood, and with `limit_conn`; their option mistakes, each
//! reported where it was written.

use crate::*;
use std::process::Command;

/// The sum over groups of metric `name` of application `app`.
fn metric(report: &Value, app: &str, name: &str) -> f64 {
    report["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["application"] == app && m["name"] == name)
        .map(|m| m["value"].as_f64().unwrap())
        .sum()
}

/// Metric `name` of application `app` on group `group`'s first machine.
fn group_metric(report: &Value, group: &str, app: &str, name: &str) -> f64 {
    report["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| {
            m["application"] == app
                && m["name"] == name
                && m["machine"].as_str().unwrap().starts_with(group)
        })
        .unwrap_or_else(|| panic!("no {app}/{name} on {group}"))["value"]
        .as_f64()
        .unwrap()
}

/// Runs `file` into `dir`; returns the exit code and the report without
/// its `performance`.
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

#[test]
fn the_video_example_streams_and_tshark_counts_the_reported_requests() {
    let dir = temp_dir();
    let (code, r) = run(&example("video.ndl"), dir.path(), true);
    assert_eq!(code, Some(0), "{}", r["problems"]);
    // Six players, 15 segments each (60 s of 4 s segments), and a
    // manifest each.
    assert_eq!(metric(&r, "video_client", "segments"), 90.0);
    assert_eq!(metric(&r, "video_client", "requests"), 96.0);
    assert_eq!(metric(&r, "video_client", "errors"), 0.0);
    assert_eq!(metric(&r, "video_server", "requests"), 96.0);
    assert_eq!(metric(&r, "video_server", "responses_2xx"), 96.0);
    assert_eq!(
        metric(&r, "video_server", "bytes_sent"),
        metric(&r, "video_client", "bytes") + 6.0 * 128.0,
        "segments and six 128-byte manifests"
    );
    for g in ["bola", "tput"] {
        let mean = group_metric(&r, g, "video_client", "mean_bitrate_kbps");
        // Three players share 6 Mbit/s with three others: about 1 Mbit/s
        // each, never more than the top rung.
        assert!((235.0..=2350.0).contains(&mean), "{g}: {mean}");
        let startup = group_metric(&r, g, "video_client", "startup_p50_ns");
        assert!(startup > 0.0 && startup < 5e9, "{g}: {startup}");
        let ratio = group_metric(&r, g, "video_client", "rebuffer_ratio");
        assert!((0.0..0.5).contains(&ratio), "{g}: {ratio}");
    }
    if Command::new("tshark").arg("--version").output().is_err() {
        eprintln!("notice: tshark is not installed; skipping the capture check");
        return;
    }
    // Drops happen at `core`'s NIC onto `wan` (the bottleneck): `wan` and
    // `home` carry only what passed, and tshark reassembles their
    // streams without a complaint. `dc` also carries the dropped
    // segments and their retransmissions, whose overlap tshark's
    // reassembly reports as errors ("New fragment overlaps old data"),
    // as it would upstream of any real loss: there each frame is checked
    // on its own.
    let pcap = dir.path().join("pcap");
    for net in ["wan", "home"] {
        assert_eq!(
            tshark_count(
                &pcap.join(format!("net-{net}.pcap")),
                "_ws.malformed || _ws.expert.severity >= error"
            ),
            0,
            "{net}"
        );
    }
    assert_eq!(malformed_frames(&pcap.join("net-dc.pcap")), 0);
    // The server is alone on `dc`: every request crosses it once (a
    // retransmitted one is recognised as such and not counted again).
    let wan = pcap.join("net-dc.pcap");
    assert_eq!(tshark_count(&wan, "http.request") as f64, 96.0);
    assert_eq!(
        tshark_count(&wan, "http.request.uri matches \"^/video/[0-9]+/[0-9]+$\"") as f64,
        metric(&r, "video_client", "segments")
    );
    assert_eq!(
        tshark_count(&wan, "http.request.uri == \"/video/manifest\""),
        6
    );
    assert_eq!(tshark_count(&wan, "http.response.code == 200"), 96);
}

#[test]
fn the_video_example_gives_identical_report_bytes_for_the_same_seed() {
    let a = temp_dir();
    let b = temp_dir();
    let (_, ra) = run(&example("video.ndl"), a.path(), false);
    let (_, rb) = run(&example("video.ndl"), b.path(), false);
    assert!(ra == rb, "two runs of video.ndl with seed 1 differ");
}

/// `http-flood.ndl` as shipped, without the flood, and with `limit_conn`.
#[test]
fn a_get_flood_slows_page_loads_and_limit_conn_restores_them() {
    let text = std::fs::read_to_string(example("http-flood.ndl")).unwrap();
    let variant = |from: &str, to: &str| {
        let dir = temp_dir();
        let file = dir.path().join("v.ndl");
        assert!(text.contains(from));
        std::fs::write(&file, text.replace(from, to)).unwrap();
        let (code, r) = run(&file, dir.path(), false);
        assert_eq!(code, Some(0), "{}", r["problems"]);
        assert_eq!(metric(&r, "web_user", "pages"), 24.0);
        r
    };
    let calm = variant("duration='10s'", "count='0'");
    let hit = variant("", "");
    let defended = variant("service='20ms'", "service='20ms' limit_conn='8'");
    let p50 = |r: &Value| metric(r, "web_user", "page_load_p50_ns") / 1e6;
    let (calm_ms, hit_ms, defended_ms) = (p50(&calm), p50(&hit), p50(&defended));
    eprintln!("page load p50: {calm_ms:.1} ms calm, {hit_ms:.1} ms flooded, {defended_ms:.1} ms with limit_conn");
    assert_eq!(metric(&calm, "http_flood", "requests"), 0.0);
    // 3,000 GETs a second for 10 s.
    assert_eq!(metric(&hit, "http_flood", "requests"), 30_000.0);
    assert!(hit_ms > 10.0 * calm_ms, "{hit_ms} vs {calm_ms}");
    assert!(defended_ms < 2.0 * calm_ms, "{defended_ms} vs {calm_ms}");
    assert!(metric(&defended, "web_server", "limited") > 1000.0);
    assert_eq!(metric(&calm, "web_user", "errors"), 0.0);
    assert_eq!(metric(&defended, "web_user", "errors"), 0.0);
}

/// How many frames of `pcap` tshark finds malformed or in error when it
/// dissects each frame on its own (no TCP reassembly).
fn malformed_frames(pcap: &Path) -> u64 {
    let out = Command::new("tshark")
        .arg("-n")
        .arg("-r")
        .arg(pcap)
        .args([
            "-o",
            "tcp.desegment_tcp_streams:FALSE",
            "-Y",
            "_ws.malformed || _ws.expert.severity >= error",
        ])
        .output()
        .expect("tshark runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).lines().count() as u64
}

/// Writes `ndl` to `x.ndl` in a fresh directory and returns `elvis
/// check`'s first stderr line.
fn check(ndl: &str) -> String {
    let dir = temp_dir();
    std::fs::write(dir.path().join("x.ndl"), ndl).unwrap();
    let out = elvis_in(dir.path(), args!["check", "x.ndl"]);
    out.expect_code(2);
    out.first_stderr_line().to_string()
}

/// A machine with one application line `app`.
fn with_app(app: &str) -> String {
    format!(
        "[Simulation]\n[Networks]\n\t[Network id='n']\n\t\t[IP subnet='10.0.0.0/24']\n\
         [Machines]\n\t[Machine name='s']\n\t\t[Networks]\n\t\t\t[Network id='n']\n\
         \t\t[Protocols]\n\t\t\t[Protocol name='TCP']\n\t\t[Applications]\n\t\t\t{app}\n"
    )
}

#[test]
fn bad_video_and_flood_options_are_reported_where_they_were_written() {
    for (app, col, fragment) in [
        (
            "[Application name='video_client' to='s' abr='fast']",
            49,
            "abr 'fast' is not one of bola, throughput",
        ),
        (
            "[Application name='video_server' ladder='300,200']",
            45,
            "ladder: the bitrates must increase",
        ),
        (
            "[Application name='video_server' segment='10s' duration='5s']",
            46,
            "the segment is longer than the video",
        ),
        (
            "[Application name='video_server' variation='1.5']",
            48,
            "variation '1.5' is not a fraction",
        ),
        (
            "[Application name='video_client' to='s' buffer='0s']",
            52,
            "a buffer target of 0",
        ),
        (
            "[Application name='http_flood' url='http://s/' rate='fast']",
            57,
            "rate 'fast' is not requests per second",
        ),
        (
            "[Application name='http_flood' url='http://nowhere/' parallel='9']",
            40,
            "unknown machine 'nowhere' in url",
        ),
        (
            "[Application name='web_server' limit_conn='0']",
            47,
            "limit_conn '0' is not 1 to 65535",
        ),
    ] {
        let first = check(&with_app(app));
        // Line 12, tabs count one column each: three tabs before `[`.
        let place = format!("x.ndl:12:{col}: error: ");
        assert!(first.starts_with(&place), "{app}\n{first}");
        assert!(first.contains(fragment), "{app}\n{first}");
    }
    let first = check(&with_app("[Application name='http_flood' url='http://s/']"));
    assert!(first.starts_with("x.ndl:12:4: error: "), "{first}");
    assert!(
        first.contains("http_flood needs rate or parallel"),
        "{first}"
    );
}
