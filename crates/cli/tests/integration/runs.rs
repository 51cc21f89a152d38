//! Good scenarios: Fig. 2, Elvis benchmark files, the default scenario, and
//! the exit statuses of runs that end with waiting or failed applications.

use crate::*;
use std::collections::BTreeSet;

#[test]
fn the_papers_fig2_file_runs_unmodified_and_its_capture_finishes() {
    let dir = temp_dir();
    let report_path = dir.path().join("fig2.json");
    let out = elvis(args!["run", &example("fig2.ndl"), "--report", &report_path]);
    out.expect_code(0);
    // The summary's applications table: `capture on capturer x1 1 finished`.
    let capture_line = out
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("capture ") && l.contains("capturer"))
        .unwrap_or_else(|| panic!("no capture line in the summary:\n{}", out.stdout));
    assert!(
        capture_line.trim_end().ends_with("1 finished"),
        "the capture did not finish: {capture_line}"
    );
    let sender_line = out
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("send_message ") && l.contains("sender"))
        .unwrap_or_else(|| panic!("no send_message line in the summary:\n{}", out.stdout));
    assert!(
        sender_line.trim_end().ends_with("1 finished"),
        "{sender_line}"
    );
    assert!(out.stderr.is_empty(), "stderr: {}", out.stderr);

    let r = read_report(&report_path);
    assert_eq!(packets(&r, "udp_sent"), 1);
    assert_eq!(packets(&r, "udp_delivered"), 1);
    assert_eq!(packets(&r, "dropped_total"), 0);
    assert_eq!(r["machines"], 2);
    let capture = application(&r, "capturer", "capture");
    assert_eq!(capture["finished"], 1);
    assert_eq!(capture["waiting"], 0);
    assert_eq!(capture["failed"], 0);
    assert_eq!(application(&r, "sender", "send_message")["finished"], 1);
    assert_eq!(r["problems"], serde_json::json!([]));
}

#[test]
fn the_router_chain_example_pings_and_traces_across_three_routers() {
    let dir = temp_dir();
    let report_path = dir.path().join("chain.json");
    let out = elvis(args![
        "run",
        &example("router-chain.ndl"),
        "--report",
        &report_path
    ]);
    out.expect_code(0);
    let r = read_report(&report_path);
    let metric = |name: &str| {
        r["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no metric {name}: {}", r["metrics"]))["value"]
            .as_f64()
            .unwrap()
    };
    // A 98-byte echo frame at 100 Mbit/s: 7840 ns per serialization; one
    // way is 2 switched LANs (2 serializations each) + 2 links, each with
    // 10 µs of latency: 6 × 7840 + 4 × 10000, twice.
    assert_eq!(metric("rtt_min_ns"), 2.0 * (6.0 * 7840.0 + 4.0 * 10_000.0));
    assert_eq!(metric("rtt_max_ns"), metric("rtt_min_ns"));
    // traceroute: the three routers' addresses towards the client, then
    // the server.
    for name in [
        "hop1 10.0.1.254 rtt_ns",
        "hop2 10.1.1.2 rtt_ns",
        "hop3 10.1.2.2 rtt_ns",
        "hop4 10.0.2.1 rtt_ns",
    ] {
        assert!(metric(name) > 0.0, "{name}");
    }
    assert_eq!(metric("hops"), 4.0);
    // Per-interface router counters: the TTL-1 probe expired at r1's LAN
    // side; the 3 pings and the TTL 2–4 probes left on its link side.
    let r1 = &r["routers"][0];
    assert_eq!(r1["machine"], "r1");
    assert_eq!(r1["interfaces"][0]["ttl_exceeded"], 1);
    assert_eq!(r1["interfaces"][1]["forwarded"], 3 + 3);
    assert_eq!(r["packets"]["dropped"]["ttl_exceeded"], 3);
}

#[test]
fn the_tcp_router_chain_example_reaches_the_closed_form_goodput() {
    let dir = temp_dir();
    let report_path = dir.path().join("chain-tcp.json");
    let out = elvis(args![
        "run",
        &example("router-chain-tcp.ndl"),
        "--report",
        &report_path
    ]);
    out.expect_code(0);
    let r = read_report(&report_path);
    let metric = |name: &str| {
        r["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no metric {name}: {}", r["metrics"]))["value"]
            .as_f64()
            .unwrap()
    };
    // 33 links of 100 Mbit/s and 10 µs: a full segment (1514-byte frame)
    // and its ACK (66 bytes) take 33 × (121.12 + 5.28 + 20) µs = 4.831 ms;
    // the 512 KiB window allows 524288 B / 4.831 ms ≫ the link's payload
    // rate 100 Mbit/s × 1448 / 1514, which is therefore the goodput.
    let rtt_s = 33.0 * (1514.0 * 8.0 / 1e8 + 66.0 * 8.0 / 1e8 + 20e-6);
    let window_bps = 524_288.0 * 8.0 / rtt_s;
    let predicted = (1e8 * 1448.0 / 1514.0f64).min(window_bps);
    let steady = metric("steady_goodput_bps");
    let err = steady / predicted - 1.0;
    assert!(err.abs() <= 0.02, "{steady} vs {predicted}: {err}");
    assert_eq!(metric("retransmitted_segments"), 0.0);
    assert_eq!(r["routers"].as_array().unwrap().len(), 32);
}

/// Runs a 10000-sender benchmark-style file and checks every message
/// arrived; returns the pcap directory's path (inside `dir`).
fn run_ten_thousand_senders(file: &Path, dir: &Path) -> PathBuf {
    let report_path = dir.join("report.json");
    let pcap_dir = dir.join("pcap");
    let out = elvis(args![
        "run",
        "--quiet",
        &file,
        "--report",
        &report_path,
        "--pcap",
        &pcap_dir,
    ]);
    out.expect_code(0);
    let r = read_report(&report_path);
    assert_eq!(r["machines"], 10_001);
    assert_eq!(packets(&r, "udp_sent"), 10_000);
    assert_eq!(packets(&r, "udp_delivered"), 10_000);
    assert_eq!(packets(&r, "dropped_total"), 0);
    let senders = application(&r, "sender", "send_message");
    assert_eq!(senders["instances"], 10_000);
    assert_eq!(senders["finished"], 10_000);
    let capture = application(&r, "capturer", "capture");
    assert_eq!(capture["finished"], 1);
    assert_eq!(capture["waiting"], 0);
    assert_eq!(r["problems"], serde_json::json!([]));
    pcap_dir
}

/// Writes `text` with CRLF line endings into `dir/name` and returns the path.
fn with_crlf(text: &str, dir: &Path, name: &str) -> PathBuf {
    assert!(!text.contains('\r'), "the fixture is expected to use LF");
    let path = dir.join(name);
    std::fs::write(&path, text.replace('\n', "\r\n")).expect("write the CRLF copy");
    path
}

#[test]
fn the_basic_fixture_differs_from_elvis_benchmark_file_only_in_its_count() {
    let ours = std::fs::read_to_string(fixture("elvis-basic-10000.ndl")).unwrap();
    let theirs = std::fs::read_to_string(example("elvis-basic-1000000.ndl")).unwrap();
    assert_eq!(ours.replace("10000'", "1000000'"), theirs);
    // Elvis' benchmark files are indented with four spaces, not tabs.
    assert!(!ours.contains('\t'));
    assert!(ours.contains("\n    [Network id='3']"));
    assert!(ours.contains("port='0xbeef'"));
}

#[test]
fn an_elvis_benchmark_file_with_ten_thousand_senders_delivers_every_message() {
    let dir = temp_dir();
    run_ten_thousand_senders(&fixture("elvis-basic-10000.ndl"), dir.path());
}

#[test]
fn an_elvis_benchmark_file_with_crlf_line_endings_delivers_every_message() {
    let dir = temp_dir();
    let text = std::fs::read_to_string(fixture("elvis-basic-10000.ndl")).unwrap();
    let file = with_crlf(&text, dir.path(), "crlf.ndl");
    run_ten_thousand_senders(&file, dir.path());
}

#[test]
fn senders_on_an_ip_range_network_take_the_listed_addresses_first() {
    let dir = temp_dir();
    // Four-space indentation, CRLF, hex ports in both cases, an
    // `[IP range='10.20.30.1-200']` whose last address the capturer claims.
    let text = std::fs::read_to_string(fixture("elvis-range-10000.ndl")).unwrap();
    assert!(text.contains("[IP range='10.20.30.1-200']") && text.contains("port='0xBEEF'"));
    let file = with_crlf(&text, dir.path(), "range-crlf.ndl");
    let pcap_dir = run_ten_thousand_senders(&file, dir.path());
    assert_eq!(file_names(&pcap_dir), ["net-7.pcap"]);
    let frames = read_pcap(&pcap_dir.join("net-7.pcap"));
    assert_eq!(frames.len(), 10_000);
    let capturer = [10, 20, 30, 200];
    let mut sources = BTreeSet::new();
    for f in &frames {
        assert_eq!(f.ip_dst, Some(capturer));
        assert_eq!(f.udp_dst_port, Some(0xbeef));
        sources.insert(f.ip_src.expect("an IPv4 frame"));
    }
    // Every sender has its own address …
    assert_eq!(sources.len(), 10_000);
    // … the listed ones first (the capturer's own excepted) …
    for last in 1..=199 {
        assert!(
            sources.contains(&[10, 20, 30, last]),
            "10.20.30.{last} unused"
        );
    }
    assert!(!sources.contains(&capturer));
    // … then counting up past the range, skipping .0 and .255.
    assert!(sources.contains(&[10, 20, 30, 201]));
    assert!(sources.contains(&[10, 20, 31, 1]));
    assert!(sources.iter().all(|a| a[3] != 0 && a[3] != 255));
}

#[test]
fn run_without_a_file_runs_the_embedded_default_scenario() {
    let dir = temp_dir();
    let report_path = dir.path().join("default.json");
    let out = elvis(args!["run", "--report", &report_path]);
    out.expect_code(0);
    assert!(
        out.stdout
            .starts_with("== elvis run: default.ndl (seed 42) =="),
        "{}",
        out.stdout
    );
    let r = read_report(&report_path);
    assert_eq!(r["seed"], 42);
    // 200 senders, a capturer, a pinger, ping, pong and the two WAN pingers.
    assert_eq!(r["machines"], 206);
    assert_eq!(application(&r, "capturer", "capture")["finished"], 1);
    assert_eq!(application(&r, "sender", "send_message")["finished"], 200);
    for app in r["applications"].as_array().unwrap() {
        assert_eq!(app["finished"], app["instances"], "{app}");
    }
}

#[test]
fn example_prints_the_scenario_that_run_uses_by_default() {
    let out = elvis(args!["example"]);
    out.expect_code(0);
    let file = std::fs::read_to_string(example("default.ndl")).unwrap();
    assert_eq!(out.stdout, file);
}

#[test]
fn a_capture_still_waiting_for_a_message_exits_with_status_3() {
    let dir = temp_dir();
    let report_path = dir.path().join("r.json");
    let out = elvis(args![
        "run",
        &fixture("capture-still-waiting.ndl"),
        "--report",
        &report_path,
    ]);
    out.expect_code(3);
    assert!(
        out.stderr.contains("still waiting") && out.stderr.contains("nothing left to happen"),
        "stderr: {}",
        out.stderr
    );
    assert!(out.stdout.contains("STILL WAITING"), "{}", out.stdout);
    let r = read_report(&report_path);
    assert_eq!(r["end"], "idle");
    assert_eq!(packets(&r, "udp_delivered"), 1);
    let capture = application(&r, "capturer", "capture");
    assert_eq!(
        (&capture["finished"], &capture["waiting"]),
        (&0.into(), &1.into())
    );
    let problems = r["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0]["machine"], "capturer");
    assert_eq!(problems[0]["state"], "pending");
}

#[test]
fn a_run_cut_short_by_until_exits_with_status_3() {
    let dir = temp_dir();
    let report_path = dir.path().join("r.json");
    // The default scenario's WAN pinger alone needs about 20 s.
    let out = elvis(args!["run", "--until", "100ms", "--report", &report_path,]);
    out.expect_code(3);
    assert!(
        out.stderr.contains("still waiting") && out.stderr.contains("time limit"),
        "stderr: {}",
        out.stderr
    );
    let r = read_report(&report_path);
    assert_eq!(r["end"], "time_limit");
    assert_eq!(r["sim_time_ns"], 100_000_000);
    assert!(!r["problems"].as_array().unwrap().is_empty());
    assert!(r["apps_ended_ns"].is_null(), "applications still wait");
}

/// A TCP transfer's applications are done long before the run: the
/// closing side's TIME-WAIT (2 MSL = 60 s) keeps the clock going, and the
/// summary says when the applications were done.
#[test]
fn the_report_says_when_the_applications_were_done_before_time_wait_ended() {
    let dir = temp_dir();
    let report_path = dir.path().join("r.json");
    let out = elvis(args![
        "run",
        example("router-chain-tcp.ndl"),
        "--report",
        &report_path,
    ]);
    out.expect_code(0);
    let r = read_report(&report_path);
    let done = r["apps_ended_ns"]
        .as_u64()
        .expect("every application ended");
    let end = r["sim_time_ns"].as_u64().unwrap();
    let transfer = (r["metrics"].as_array().unwrap().iter())
        .find(|m| m["name"] == "transfer_ns")
        .and_then(|m| m["value"].as_f64())
        .unwrap() as u64;
    // The sender ends once its FIN is acknowledged, one round trip
    // (8.5 ms) or so after the last byte.
    assert!(
        done >= transfer && done < transfer + 50_000_000,
        "{done} vs {transfer}"
    );
    assert!(end >= done + 60_000_000_000, "TIME-WAIT: {end} vs {done}");
    assert!(
        out.stderr.contains("(applications done at 1.6")
            || out.stdout.contains("(applications done at 1.6"),
        "summary: {}{}",
        out.stdout,
        out.stderr
    );
}

#[test]
fn a_capture_receiving_the_wrong_message_fails_with_status_1() {
    let dir = temp_dir();
    let report_path = dir.path().join("r.json");
    let out = elvis(args![
        "run",
        &fixture("capture-wrong-message.ndl"),
        "--report",
        &report_path,
    ]);
    out.expect_code(1);
    assert!(out.stderr.contains("failed"), "stderr: {}", out.stderr);
    assert!(out.stdout.contains("FAILED"), "{}", out.stdout);
    let r = read_report(&report_path);
    assert_eq!(application(&r, "capturer", "capture")["failed"], 1);
    let problems = r["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0]["machine"], "capturer");
    assert_eq!(problems[0]["application"], "capture");
    assert_eq!(problems[0]["state"], "failed");
    let message = problems[0]["message"].as_str().unwrap();
    assert!(
        message.contains("Bye!") && message.contains("Hello!"),
        "{message}"
    );
}

#[test]
fn an_infinite_watchdog_means_no_watchdog() {
    // Used to panic converting `inf` seconds to a Duration (exit 101).
    let out = elvis(args![
        "run",
        "--quiet",
        &example("fig2.ndl"),
        "--watchdog",
        "inf"
    ]);
    out.expect_code(0);
    assert!(out.stderr.is_empty(), "stderr: {}", out.stderr);
}

#[test]
fn a_report_that_cannot_be_written_exits_with_status_5() {
    let dir = temp_dir();
    let report = dir.path().join("no-such-directory/report.json");
    let out = elvis(args![
        "run",
        "--quiet",
        &example("fig2.ndl"),
        "--report",
        &report
    ]);
    out.expect_code(5);
    assert!(
        out.stderr.contains("cannot write report"),
        "stderr: {}",
        out.stderr
    );
    assert!(!report.exists());
}

#[test]
fn a_pcap_directory_that_is_a_file_exits_with_status_5() {
    let dir = temp_dir();
    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, b"").unwrap();
    let report = dir.path().join("report.json");
    let out = elvis(args![
        "run",
        "--quiet",
        &example("fig2.ndl"),
        "--pcap",
        &not_a_dir,
        "--report",
        &report
    ]);
    out.expect_code(5);
    assert!(
        out.stderr.contains("cannot write pcaps"),
        "stderr: {}",
        out.stderr
    );
}

/// client — r0 ={m1 | m2}= r3 — server over point-to-point links, with
/// automatic (ECMP) routes and r0 pinning the client's flow through `via`.
fn pinned_diamond(via: &str) -> String {
    let link = |id: &str, subnet: &str| {
        format!(
            "\t[Network id='{id}' type='link' bandwidth='100Mbps']\n\t\t[IP subnet='{subnet}']\n"
        )
    };
    let machine = |head: &str, nets: &[(&str, &str)], tail: &str| {
        let nets: String = (nets.iter())
            .map(|(id, ip)| format!("\t\t\t[Network id='{id}' ip='{ip}']\n"))
            .collect();
        format!("\t[Machine {head}]\n\t\t[Networks]\n{nets}{tail}")
    };
    let udp = "\t\t[Protocols]\n\t\t\t[Protocol name='IPv4']\n\t\t\t[Protocol name='UDP']\n";
    let mut s = String::from("[Simulation seed='3' routing='shortest']\n[Networks]\n");
    for (id, subnet) in [
        ("a", "1"),
        ("u1", "2"),
        ("u2", "3"),
        ("d1", "4"),
        ("d2", "5"),
        ("b", "6"),
    ] {
        s += &link(id, &format!("10.0.{subnet}.0/30"));
    }
    s += "[Machines]\n";
    let send = format!("{udp}\t\t[Applications]\n\t\t\t[Application name='send_message' to='10.0.6.2' port='9' message='x' message_count='40']\n");
    s += &machine(
        "name='client' gateway='10.0.1.2'",
        &[("a", "10.0.1.1")],
        &send,
    );
    let pin = format!("\t\t[Route from='10.0.1.1' to='10.0.6.2' via='{via}']\n");
    s += &machine(
        "name='r0' forward='yes'",
        &[("a", "10.0.1.2"), ("u1", "10.0.2.1"), ("u2", "10.0.3.1")],
        &pin,
    );
    s += &machine(
        "name='m1' forward='yes'",
        &[("u1", "10.0.2.2"), ("d1", "10.0.4.1")],
        "",
    );
    s += &machine(
        "name='m2' forward='yes'",
        &[("u2", "10.0.3.2"), ("d2", "10.0.5.1")],
        "",
    );
    s += &machine(
        "name='r3' forward='yes'",
        &[("d1", "10.0.4.2"), ("d2", "10.0.5.2"), ("b", "10.0.6.1")],
        "",
    );
    let capture = format!(
        "{udp}\t\t[Applications]\n\t\t\t[Application name='capture' port='9' message_count='40']\n"
    );
    s += &machine(
        "name='server' gateway='10.0.6.1'",
        &[("b", "10.0.6.2")],
        &capture,
    );
    s
}

#[test]
fn an_ndl_flow_route_pins_the_flow_to_either_middle_router() {
    for (via, used, unused) in [("10.0.2.2", "m1", "m2"), ("10.0.3.2", "m2", "m1")] {
        let src = pinned_diamond(via);
        let scenario = elvis_ndl::parse(&src, "pin.ndl").unwrap();
        let mut built = elvis_build::build(&scenario, None).unwrap();
        let report = built.sim.run();
        assert!(report.success(), "{:?}", report.problems);
        let forwarded = |name: &str| -> u64 {
            let r = report.routers.iter().find(|r| r.machine == name).unwrap();
            r.interfaces.iter().map(|i| i.counters.forwarded).sum()
        };
        assert_eq!((forwarded(used), forwarded(unused)), (40, 0), "via {via}");
        assert_eq!(report.packets.udp_delivered, 40);
    }
}

#[test]
fn an_ndl_flow_route_via_a_stranger_is_an_error_at_its_line() {
    let src = pinned_diamond("10.0.5.1");
    let scenario = elvis_ndl::parse(&src, "pin.ndl").unwrap();
    let e = elvis_build::build(&scenario, None)
        .err()
        .expect("a build error");
    let text = e.to_string();
    assert!(
        text.contains("machine 'r0'") && text.contains("none of its networks"),
        "{text}"
    );
    let line = src
        .lines()
        .position(|l| l.contains("[Route from="))
        .unwrap()
        + 1;
    assert_eq!(e.loc.line as usize, line, "{text}");
}

#[test]
fn example_lists_prints_and_writes_the_shipped_scenarios() {
    let out = elvis(args!["example", "--list"]);
    out.expect_code(0);
    assert!(
        out.stdout.lines().any(|l| l.starts_with("dumbbell ")),
        "{}",
        out.stdout
    );
    let out = elvis(args!["example", "dumbbell"]);
    out.expect_code(0);
    assert_eq!(
        out.stdout,
        std::fs::read_to_string(example("dumbbell.ndl")).unwrap()
    );
    // A typo gets the closest name, and nothing on standard output.
    let out = elvis(args!["example", "dumbell"]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("did you mean `dumbbell`"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty());
    // Written with the GML file it reads, it runs where it was written.
    let dir = temp_dir();
    let out = elvis(args!["example", "topology-zoo", "--write", dir.path()]);
    out.expect_code(0);
    assert!(dir.path().join("backbone-10.gml").is_file());
    elvis(args!["run", dir.path().join("topology-zoo.ndl"), "--quiet"]).expect_code(0);
}

#[test]
fn completions_are_printed_for_bash() {
    let out = elvis(args!["completions", "bash"]);
    out.expect_code(0);
    assert!(out.stdout.contains("_elvis()") && out.stdout.contains("example"));
}

/// Two machines on a 1 Gbit/s, 1 ms link; `APPS_A` and `APPS_B` are
/// their application lines.
fn timed_scenario(apps_a: &str, apps_b: &str) -> String {
    format!(
        "[Simulation seed='1']
[Networks]
	[Network id='lan' type='link' bandwidth='1Gbps' latency='1ms']
		[IP subnet='10.0.0.0/24']
[Machines]
	[Machine name='a']
		[Networks]
			[Network id='lan']
		[Protocols]
			[Protocol name='UDP']
		[Applications]
{apps_a}
	[Machine name='b']
		[Networks]
			[Network id='lan']
		[Protocols]
			[Protocol name='UDP']
		[Applications]
{apps_b}
"
    )
}

/// `start` delays an application to a virtual time, `stop` ends it there
/// (as finished): a ping every second from 2 s, stopped at 5.5 s, sends 4
/// echo requests (at 2, 3, 4 and 5 s), and the last application ends at
/// exactly 5.5 s.
#[test]
fn applications_start_and_stop_at_the_times_given() {
    let dir = temp_dir();
    let file = dir.path().join("timed.ndl");
    std::fs::write(
        &file,
        timed_scenario(
            "\t\t\t[Application name='send_message' to='b' port='9' start='1.5s']\n\
             \t\t\t[Application name='ping' to='b' count='100' interval='1s' start='2s' stop='5.5s']",
            "\t\t\t[Application name='capture' port='9']",
        ),
    )
    .unwrap();
    let report_path = dir.path().join("r.json");
    elvis(args!["run", &file, "--report", &report_path, "--quiet"]).expect_code(0);
    let r = read_report(&report_path);
    assert_eq!(r["apps_ended_ns"], 5_500_000_000u64);
    assert_eq!(r["packets"]["icmp_echo_replied"], 4);
    assert_eq!(r["packets"]["udp_delivered"], 1);
}

/// `start='uniform(0s,10s)'` gives each of 200 senders its own start from
/// its machine's stream: the last message arrives after 9 s (all 200
/// before 9 s has probability 0.9^200 ≈ 7e-10) and before 10 s and a
/// millisecond; the same seed gives the same report.
#[test]
fn random_starts_spread_a_group_and_repeat_with_the_seed() {
    let dir = temp_dir();
    let file = dir.path().join("spread.ndl");
    let text = timed_scenario(
        "\t\t\t[Application name='capture' port='9' message_count='200']",
        "",
    )
    .replace("[Machine name='b']", "[Machine name='b' count='200']")
    .replace("type='link'", "type='switch' queue='1000'")
    .replace(
        "\t\t\t[Protocol name='UDP']\n\t\t[Applications]\n\n",
        "\t\t\t[Protocol name='UDP']\n\t\t[Applications]\n\t\t\t[Application name='send_message' to='a' port='9' start='uniform(0s,10s)']\n",
    );
    std::fs::write(&file, text).unwrap();
    let (r1, r2) = (dir.path().join("1.json"), dir.path().join("2.json"));
    elvis(args!["run", &file, "--report", &r1, "--quiet"]).expect_code(0);
    elvis(args!["run", &file, "--report", &r2, "--quiet"]).expect_code(0);
    let r = read_report(&r1);
    let done = r["apps_ended_ns"].as_u64().unwrap();
    assert!((9_000_000_000..10_001_100_000).contains(&done), "{done}");
    assert_eq!(r["packets"]["udp_delivered"], 200);
    let (mut a, mut b) = (r, read_report(&r2));
    a.as_object_mut().unwrap().remove("performance");
    b.as_object_mut().unwrap().remove("performance");
    assert_eq!(a, b);
}

#[test]
fn bad_start_and_stop_values_are_located_errors() {
    let dir = temp_dir();
    for (app, want) in [
        ("start='soon'", "soon"),
        ("start='uniform(5s,1s)'", "below"),
        ("start='3s' stop='2s'", "is not after start"),
    ] {
        let file = dir.path().join("bad.ndl");
        std::fs::write(
            &file,
            timed_scenario(
                &format!("\t\t\t[Application name='send_message' to='b' port='9' {app}]"),
                "\t\t\t[Application name='capture' port='9']",
            ),
        )
        .unwrap();
        let out = elvis(args!["run", &file]);
        out.expect_code(2);
        assert!(
            out.stderr.contains("bad.ndl:12:") && out.stderr.contains(want),
            "{app}: {}",
            out.stderr
        );
    }
}

/// A new user's path: one run draws every figure, and each is a real
/// PNG of the size asked (the figures' content is checked in
/// `plot.rs`'s unit tests).
#[test]
fn run_with_plot_draws_the_figures_of_the_cubic_vs_compound_example() {
    let dir = temp_dir();
    let figs = dir.path().join("figs");
    let out = elvis(args![
        "run",
        example("cubic-vs-compound.ndl"),
        "--plot",
        &figs,
        "--quiet"
    ]);
    out.expect_code(0);
    assert!(figs.join("report.json").is_file());
    for name in ["cwnd", "srtt", "queues", "shares"] {
        for ext in ["png", "svg"] {
            let f = figs.join(format!("{name}.{ext}"));
            let bytes = std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            assert!(
                bytes.len() > 10_000,
                "{}: {} bytes",
                f.display(),
                bytes.len()
            );
            if ext == "png" {
                assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
            }
        }
    }
    // --report - and --plot do not go together.
    elvis(args!["run", "--plot", &figs, "--report", "-"]).expect_code(2);
}

/// A `flowgen` run with `--plot` draws the FCT slowdown by flow size,
/// with the median and 99th-percentile lines and each bucket that has a
/// finished flow named on the axis.
#[test]
fn run_with_plot_draws_the_slowdown_of_the_flowgen_example() {
    let dir = temp_dir();
    let figs = dir.path().join("figs");
    let out = elvis(args![
        "run",
        example("flowgen.ndl"),
        "--plot",
        &figs,
        "--quiet"
    ]);
    out.expect_code(0);
    let r = read_report(&figs.join("report.json"));
    let svg = std::fs::read_to_string(figs.join("slowdown.svg")).unwrap();
    assert!(svg.contains("p50") && svg.contains("p99"));
    for b in r["flows"]["buckets"].as_array().unwrap() {
        let name = (b["bucket"].as_str().unwrap())
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        let label = format!("{name} ({})", b["finished"]);
        assert_eq!(
            svg.contains(&label),
            b["finished"].as_u64().unwrap() > 0,
            "{label}"
        );
    }
    assert!(std::fs::metadata(figs.join("slowdown.png")).unwrap().len() > 10_000);
}

/// Elvis' dialect runs as Elvis means it: a `[Template]` expands into the
/// machine naming it, ARP's `local`/`default` make a default route (with a
/// located warning about on-link destinations), captures take `type=` and
/// `factory=`; a bad template reference is a located error.
#[test]
fn templates_arp_options_and_capture_factories_run() {
    let dir = temp_dir();
    let file = dir.path().join("tpl.ndl");
    std::fs::write(
        &file,
        "[Template name='udp']\n\t[Protocols]\n\t\t[Protocol name='IPv4']\n\t\t[Protocol name='UDP']\n\
         [Networks]\n\t[Network id='1']\n\t\t[IP range='10.0.0.1-9']\n\
         [Machines]\n\t[Machine name='s' count='3' template='udp']\n\t\t[Networks]\n\t\t\t[Network id='1']\n\
         \t\t[Protocols]\n\t\t\t[Protocol name='ARP' local='10.0.0.{i}' default='r']\n\
         \t\t[Applications]\n\t\t\t[Application name='send_message' message='hi' to='c-{i}' port='0xbeef']\n\
         \t[Machine name='r' template='udp']\n\t\t[Networks]\n\t\t\t[Network id='1']\n\
         \t[Machine name='c' count='3' template='udp']\n\t\t[Networks]\n\t\t\t[Network id='1']\n\
         \t\t[Applications]\n\t\t\t[Application name='capture' type='message' message='hi' factory='f1' port='0xbeef']\n",
    )
    .unwrap();
    let report = dir.path().join("r.json");
    let out = elvis(args!["run", &file, "--report", &report, "--quiet"]);
    out.expect_code(0);
    assert!(
        out.stderr
            .contains("tpl.ndl:13:25: warning: ARP local/default"),
        "{}",
        out.stderr
    );
    let r = read_report(&report);
    assert_eq!(application(&r, "c", "capture")["finished"], 3, "{r:#}");
    assert_eq!(application(&r, "s", "send_message")["finished"], 3);
    // A bad capture type and an unknown template, located.
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("type='message'", "type='messages'")).unwrap();
    let out = elvis(args!["check", &file]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("tpl.ndl:23:")
            && out
                .stderr
                .contains("capture type 'messages' is neither count nor message"),
        "{}",
        out.stderr
    );
    std::fs::write(
        &file,
        text.replace(
            "template='udp']\n\t\t[Networks]\n\t\t\t[Network id='1']\n\t\t[Protocols]",
            "template='upd']\n\t\t[Networks]\n\t\t\t[Network id='1']\n\t\t[Protocols]",
        ),
    )
    .unwrap();
    let out = elvis(args!["check", &file]);
    out.expect_code(2);
    assert!(
        out.stderr
            .contains("tpl.ndl:9:40: error: unknown template 'upd'"),
        "{}",
        out.stderr
    );
}

/// `[Protocol name='TCP' congestion=…]` is the machine's default: its
/// `bulk_send` and `tcp_echo_client` without a `congestion=` use it, one
/// with its own keeps that, and so do the connections its listeners
/// (`bulk_receive`, `tcp_echo_server`) accept; the report's connections
/// say which each used.
#[test]
fn a_tcp_protocols_congestion_is_its_senders_default() {
    let dir = temp_dir();
    let file = dir.path().join("cc.ndl");
    std::fs::write(
        &file,
        "[Networks]\n\t[Network id='1' bandwidth='10Mbps' latency='1ms']\n[Machines]\n\
         \t[Machine name='s']\n\t\t[Networks]\n\t\t\t[Network id='1']\n\
         \t\t[Protocols]\n\t\t\t[Protocol name='TCP' congestion='compound']\n\
         \t\t[Applications]\n\t\t\t[Application name='bulk_send' to='r' port='80' bytes='100kB']\n\
         \t\t\t[Application name='bulk_send' to='r' port='81' bytes='100kB' congestion='newreno']\n\
         \t\t\t[Application name='tcp_echo_client' to='r' port='7']\n\
         \t[Machine name='r']\n\t\t[Networks]\n\t\t\t[Network id='1']\n\
         \t\t[Protocols]\n\t\t\t[Protocol name='TCP' congestion='bbr']\n\
         \t\t[Applications]\n\t\t\t[Application name='bulk_receive' port='80' bytes='100kB']\n\
         \t\t\t[Application name='bulk_receive' port='81' bytes='100kB' congestion='newreno']\n\
         \t\t\t[Application name='tcp_echo_server' port='7']\n",
    )
    .unwrap();
    let report = dir.path().join("r.json");
    elvis(args!["run", &file, "--report", &report, "--quiet"]).expect_code(0);
    let r = read_report(&report);
    // (server port, congestion control) of each connection on `machine`.
    let used = |machine: &str, end: &str| {
        let mut v: Vec<(String, String)> = r["tcp_connections"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["machine"] == machine)
            .map(|c| {
                let addr = c[end].as_str().unwrap_or_default();
                let port = addr.rsplit(':').next().unwrap_or_default().to_string();
                (
                    port,
                    c["congestion"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let pair = |p: &str, c: &str| (p.to_string(), c.to_string());
    assert_eq!(
        used("s", "remote"),
        [
            pair("7", "compound"),
            pair("80", "compound"),
            pair("81", "newreno")
        ],
        "{r:#}"
    );
    assert_eq!(
        used("r", "local"),
        [pair("7", "bbr"), pair("80", "bbr"), pair("81", "newreno")],
        "{r:#}"
    );
    // A bad value is located at it.
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace("congestion='compound'", "congestion='vegas'"),
    )
    .unwrap();
    let out = elvis(args!["check", &file]);
    out.expect_code(2);
    assert!(
        out.stderr
            .contains("cc.ndl:8:37: error: unknown congestion control 'vegas'"),
        "{}",
        out.stderr
    );
}

/// `[Simulation slow_start=…]` chooses how CUBIC leaves slow start on
/// every machine. Over `bench/vs-linux`'s path (a 50 Mbit/s bottleneck,
/// 20.4 ms of propagation, a 100-packet queue) the default, Linux's
/// HyStart, leaves slow start at 119 segments and loses nothing in the
/// first second; HyStart++ and plain slow start overflow the queue
/// (`tcp_theory::hystart_leaves_cubics_slow_start_before_the_queue_overflows`).
/// A bad value is a located error.
#[test]
fn the_simulations_slow_start_chooses_cubics_slow_start_exit() {
    let dir = temp_dir();
    let retransmitted = |slow_start: &str| -> u64 {
        let file = dir.path().join("ss.ndl");
        std::fs::write(
            &file,
            format!(
                "[Simulation seed='1' until='1s' {slow_start}]\n\
                 [Networks]\n\
                 \t[Network id='a' type='link' bandwidth='1Gbps' latency='100us']\n\
                 \t\t[IP subnet='10.90.0.0/30']\n\
                 \t[Network id='n' type='link' bandwidth='50Mbps' latency='10ms' queue='100']\n\
                 \t\t[IP subnet='10.90.1.0/30']\n\
                 \t[Network id='b' type='link' bandwidth='1Gbps' latency='100us']\n\
                 \t\t[IP subnet='10.90.2.0/30']\n\
                 [Machines]\n\
                 \t[Machine name='r1' forward='yes']\n\t\t[Networks]\n\
                 \t\t\t[Network id='a' ip='10.90.0.1']\n\t\t\t[Network id='n' ip='10.90.1.1']\n\
                 \t[Machine name='r2' forward='yes']\n\t\t[Networks]\n\
                 \t\t\t[Network id='n' ip='10.90.1.2']\n\t\t\t[Network id='b' ip='10.90.2.1']\n\
                 \t[Machine name='snd' gateway='10.90.0.1']\n\t\t[Networks]\n\
                 \t\t\t[Network id='a' ip='10.90.0.2']\n\
                 \t\t[Protocols]\n\t\t\t[Protocol name='TCP']\n\
                 \t\t[Applications]\n\t\t\t[Application name='bulk_send' to='10.90.2.2' port='80' bytes='1GB']\n\
                 \t[Machine name='rcv' gateway='10.90.2.1']\n\t\t[Networks]\n\
                 \t\t\t[Network id='b' ip='10.90.2.2']\n\
                 \t\t[Protocols]\n\t\t\t[Protocol name='TCP']\n\
                 \t\t[Applications]\n\t\t\t[Application name='bulk_receive' port='80' bytes='1GB']\n"
            ),
        )
        .unwrap();
        let report = dir.path().join("r.json");
        // Exit status 3: the transfer still runs at the time limit.
        elvis(args!["run", &file, "--report", &report, "--quiet"]).expect_code(3);
        let r = read_report(&report);
        r["tcp_connections"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["retransmitted_segments"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(retransmitted(""), 0, "Linux's HyStart");
    assert_eq!(retransmitted("slow_start='hystart'"), 0);
    assert!(retransmitted("slow_start='hystart++'") > 0);
    assert!(retransmitted("slow_start='standard'") > 0);
    let file = dir.path().join("bad.ndl");
    std::fs::write(&file, "[Simulation slow_start='vegas']\n").unwrap();
    let out = elvis(args!["check", &file]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("bad.ndl:1:25: error:") && out.stderr.contains("hystart++"),
        "{}",
        out.stderr
    );
}

/// `[Simulation min_rto=…]` sets TCP's minimum RTO on every machine: over
/// a link losing 30 % of its frames both ways, where timeouts decide, a
/// 100 kB transfer ends far sooner with 1 ms than with Linux's 200 ms;
/// a value of 0 is a located error.
#[test]
fn the_simulations_min_rto_bounds_every_connections_timeouts() {
    let dir = temp_dir();
    let transfer = |min_rto: &str| -> f64 {
        let file = dir.path().join("rto.ndl");
        std::fs::write(
            &file,
            format!(
                "[Simulation seed='3' {min_rto}]\n\
                 [Networks]\n\t[Network id='1' bandwidth='100Mbps' latency='1ms' loss='0.3']\n\
                 [Machines]\n\
                 \t[Machine name='s']\n\t\t[Networks]\n\t\t\t[Network id='1']\n\
                 \t\t[Protocols]\n\t\t\t[Protocol name='TCP']\n\
                 \t\t[Applications]\n\t\t\t[Application name='bulk_send' to='r' port='80' bytes='100kB']\n\
                 \t[Machine name='r']\n\t\t[Networks]\n\t\t\t[Network id='1']\n\
                 \t\t[Protocols]\n\t\t\t[Protocol name='TCP']\n\
                 \t\t[Applications]\n\t\t\t[Application name='bulk_receive' port='80' bytes='100kB']\n"
            ),
        )
        .unwrap();
        let report = dir.path().join("r.json");
        elvis(args!["run", &file, "--report", &report, "--quiet"]).expect_code(0);
        let r = read_report(&report);
        r["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["machine"] == "r" && m["name"] == "transfer_ns")
            .expect("the transfer ended")["value"]
            .as_f64()
            .unwrap()
    };
    let linux = transfer("");
    let fast = transfer("min_rto='1ms'");
    assert!(fast * 5.0 < linux, "1 ms: {fast} ns, 200 ms: {linux} ns");
    let file = dir.path().join("bad.ndl");
    std::fs::write(&file, "[Simulation min_rto='0s']\n").unwrap();
    let out = elvis(args!["check", &file]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("bad.ndl:1:22: error:") && out.stderr.contains("above 0"),
        "{}",
        out.stderr
    );
}
