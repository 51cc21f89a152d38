//! Priority flow control (IEEE 802.1Qbb) end to end:
//! `examples/ndl/pfc-incast.ndl` (a chain of three switches under an
//! incast) pauses hop by hop from the congested last hop back to the
//! senders and loses no frame of the lossless priority while the lossy
//! one drops; its PFC frames decode in tshark as 802.1Qbb; the ring of
//! `examples/ndl/pfc-deadlock.ndl` deadlocks and the report finds it;
//! PFC where there are no priority classes is a located error.

use crate::*;
use std::ffi::OsStr;

/// Runs NDL `text` with `extra` arguments; returns the outcome, the
/// report and the directory (which holds any `--pcap caps`).
fn run_text(text: &str, extra: &[&str]) -> (Outcome, Option<Value>, TempDir) {
    let dir = temp_dir();
    std::fs::write(dir.path().join("t.ndl"), text).unwrap();
    let mut args = vec!["run", "t.ndl", "--report", "r.json"];
    args.extend(extra);
    let out = elvis_in(dir.path(), args.iter().map(OsStr::new));
    let path = dir.path().join("r.json");
    let report = path.exists().then(|| read_report(&path));
    (out, report, dir)
}

fn incast() -> String {
    std::fs::read_to_string(example("pfc-incast.ndl")).unwrap()
}

fn ring() -> String {
    std::fs::read_to_string(example("pfc-deadlock.ndl")).unwrap()
}

/// Metric `name` of `app` on `machine`, in report order.
fn metric(report: &Value, machine: &str, app: &str, name: &str) -> Vec<f64> {
    (report["metrics"].as_array().unwrap().iter())
        .filter(|m| m["machine"] == machine && m["application"] == app && m["name"] == name)
        .map(|m| m["value"].as_f64().unwrap())
        .collect()
}

/// The `pfc.ports` row of the NIC of `machine` on `network`.
fn port<'a>(report: &'a Value, network: &str, machine: &str) -> &'a Value {
    (report["pfc"]["ports"].as_array().unwrap().iter())
        .find(|p| p["network"] == network && p["machine"] == machine && p["direction"] == "nic")
        .unwrap_or_else(|| panic!("no PFC row for {machine} on {network}"))
}

#[test]
fn pfc_pauses_propagate_hop_by_hop_and_the_lossless_class_loses_nothing() {
    let (out, report, _dir) = run_text(&incast(), &[]);
    out.expect_code(0);
    let r = report.unwrap();
    // Lossless: every byte each RoCE sender sent reached the receiver
    // (ports 4791–4794, in the order rcv lists its receivers).
    let received = metric(&r, "rcv", "dcqcn_receive", "received_bytes");
    assert_eq!(received.len(), 5);
    for (i, s) in ["s1", "s2", "s3", "s4"].iter().enumerate() {
        let sent = metric(&r, s, "dcqcn_send", "sent_bytes")[0];
        assert!(sent > 100_000.0, "{s} sent {sent}");
        assert_eq!(
            sent, received[i],
            "{s}: sent {sent}, received {}",
            received[i]
        );
    }
    // Lossy: most of l1's frames were dropped (queue_full, at sw1 and sw3).
    let lossy_sent = metric(&r, "l1", "dcqcn_send", "sent_bytes")[0];
    assert!(
        received[4] < lossy_sent / 2.0,
        "{} of {lossy_sent}",
        received[4]
    );
    let drops = r["packets"]["dropped"].as_object().unwrap();
    assert_eq!(
        drops.keys().collect::<Vec<_>>(),
        ["queue_full"],
        "{drops:?}"
    );
    // (The lossy frames neither dropped nor received still wait behind
    // the lossless class at sw3 when the run ends.)
    let dropped = drops["queue_full"].as_u64().unwrap() as f64;
    let missing = (lossy_sent - received[4]) / 1000.0;
    assert!(
        dropped <= missing && dropped > 0.95 * missing,
        "{dropped} of {missing}"
    );
    assert_eq!(r["pfc"]["headroom_drops"], 0);
    // Hop by hop: sw3 pauses sw2 first, then sw2 pauses sw1, then sw1
    // pauses the senders.
    let first = |net: &str, m: &str| port(&r, net, m)["first_pause_ns"].as_u64().unwrap();
    let (sw2, sw1) = (first("h23", "sw2"), first("h12", "sw1"));
    let hosts = ["a1", "a2", "a3", "a4"].map(|n| first(n, &format!("s{}", &n[1..])));
    assert!(sw2 < sw1, "sw2 paused at {sw2} ns, sw1 at {sw1} ns");
    assert!(
        hosts.iter().all(|&h| sw1 < h),
        "sw1 {sw1} ns, hosts {hosts:?}"
    );
    // The lossy sender is never paused.
    assert!(r["pfc"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["machine"] != "l1"));
    for p in r["pfc"]["ports"].as_array().unwrap() {
        // Every PAUSE sent arrived; the ingress reached Xoff and stayed
        // within its headroom (2·L·R/8 + 60 + 3·1514 = 7,102 bytes).
        assert_eq!(p["pause_sent"], p["pause_received"], "{p}");
        assert_eq!(p["xon_sent"], p["xon_received"], "{p}");
        assert_eq!(p["headroom_bytes"], 7_102, "{p}");
        let max = p["ingress_max_bytes"]["0"].as_u64().unwrap();
        assert!((20_000..=27_102).contains(&max), "{p}");
        assert!(p["paused_ns"]["0"].as_u64().unwrap() > 1_000_000, "{p}");
    }
    assert_eq!(r["pfc"]["deadlocks"].as_array().unwrap().len(), 0);
}

#[test]
fn without_pfc_the_same_incast_drops_the_roce_flows() {
    let text = incast().replace(" pfc='0' pfc_xoff='20kB' pfc_xon='10kB'", "");
    assert!(!text.contains("pfc="));
    let (out, report, _dir) = run_text(&text, &[]);
    out.expect_code(0);
    let r = report.unwrap();
    assert!(r.get("pfc").is_none());
    let received = metric(&r, "rcv", "dcqcn_receive", "received_bytes");
    for (i, s) in ["s1", "s2", "s3", "s4"].iter().enumerate() {
        let sent = metric(&r, s, "dcqcn_send", "sent_bytes")[0];
        assert!(received[i] < sent / 2.0, "{s}: {} of {sent}", received[i]);
    }
}

#[test]
fn pfc_runs_are_deterministic() {
    let strip = |mut r: Value| {
        r.as_object_mut().unwrap().remove("performance");
        r.to_string()
    };
    let (_, a, _d1) = run_text(&incast(), &[]);
    let (_, b, _d2) = run_text(&incast(), &[]);
    assert_eq!(strip(a.unwrap()), strip(b.unwrap()));
    let (_, a, _d1) = run_text(&ring(), &[]);
    let (_, b, _d2) = run_text(&ring(), &[]);
    assert_eq!(strip(a.unwrap()), strip(b.unwrap()));
}

/// 802.1Qbb's layout, field by field, as Wireshark's MAC Control
/// dissector reads it (`macc.opcode`, `macc.cbfc.*`): one row per PFC
/// frame of the capture.
fn tshark_pfc(pcap: &Path) -> Vec<Vec<String>> {
    let out = std::process::Command::new("tshark")
        .arg("-n")
        .arg("-r")
        .arg(pcap)
        .args(["-Y", "eth.type == 0x8808", "-T", "fields"])
        .args(["-e", "eth.dst", "-e", "frame.len", "-e", "macc.opcode"])
        .args(["-e", "macc.cbfc.enbv", "-e", "macc.cbfc.pause_time.c0"])
        .args(["-e", "macc.cbfc.pause_time.c1", "-e", "_ws.malformed"])
        .output()
        .expect("tshark runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (String::from_utf8_lossy(&out.stdout).lines())
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

#[test]
fn pfc_frames_decode_in_tshark_as_8021qbb() {
    if std::process::Command::new("tshark")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("tshark is not installed: skipped");
        return;
    }
    let (out, report, dir) = run_text(&incast(), &["--pcap", "caps"]);
    out.expect_code(0);
    let r = report.unwrap();
    let p = port(&r, "h23", "sw2");
    let rows = tshark_pfc(&dir.path().join("caps/net-h23.pcap"));
    let sent = p["pause_sent"].as_u64().unwrap() + p["xon_sent"].as_u64().unwrap();
    assert_eq!(rows.len() as u64, sent);
    let (mut pauses, mut xons) = (0, 0);
    for row in &rows {
        let [dst, len, opcode, enable, c0, c1, malformed] = &row[..] else {
            panic!("{row:?}");
        };
        assert_eq!(dst, "01:80:c2:00:00:01");
        assert_eq!(len, "60");
        assert_eq!(opcode, "0x0101");
        assert_eq!(enable, "0x0001", "priority 0 alone");
        assert_eq!(c1, "0");
        assert_eq!(malformed, "");
        match c0.as_str() {
            "65535" => pauses += 1,
            "0" => xons += 1,
            other => panic!("pause time {other}"),
        }
    }
    assert_eq!(pauses, p["pause_sent"].as_u64().unwrap());
    assert_eq!(xons, p["xon_sent"].as_u64().unwrap());
}

#[test]
fn a_ring_with_clockwise_routes_deadlocks_and_the_report_finds_it() {
    let (out, report, _dir) = run_text(&ring(), &[]);
    out.expect_code(0);
    let r = report.unwrap();
    let groups = r["pfc"]["deadlocks"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{groups:?}");
    let names: Vec<String> = (groups[0].as_array().unwrap().iter())
        .map(|q| {
            format!(
                "{}/{}",
                q["network"].as_str().unwrap(),
                q["machine"].as_str().unwrap()
            )
        })
        .collect();
    for ring_queue in ["AB/A", "BC/B", "CD/C", "DA/D"] {
        assert!(names.contains(&ring_queue.to_string()), "{names:?}");
    }
    // The ring queues are paused for good: from before the senders stop
    // (3 ms) to the end (10 ms), and the receivers got a fraction of what
    // was sent.
    for (net, m) in [("AB", "A"), ("BC", "B"), ("CD", "C"), ("DA", "D")] {
        let p = port(&r, net, m);
        assert!(p["paused_at_end_ns"].as_u64().unwrap() > 7_000_000, "{p}");
        assert_eq!(p["xon_received"], 0, "{p}");
    }
    for h in ["hA", "hB", "hC", "hD"] {
        let got = metric(&r, h, "dcqcn_receive", "received_bytes")[0];
        let sent = metric(&r, h, "dcqcn_send", "sent_bytes")[0];
        assert!(got < sent, "{h}: {got} of {sent}");
    }
    assert_eq!(r["pfc"]["headroom_drops"], 0);
}

#[test]
fn one_hop_flows_on_the_same_ring_do_not_deadlock() {
    // Each host sends to its clockwise neighbour: one ring link per flow,
    // so no frame waits on a ring queue for another ring queue.
    let text = ring()
        .replace("to='10.60.3.2'", "to='10.60.2.2'")
        .replace("to='10.60.4.2'", "to='10.60.3.2'")
        .replacen("to='10.60.1.2'", "to='10.60.4.2'", 1)
        .replacen("to='10.60.2.2' line_rate", "to='10.60.1.2' line_rate", 1);
    let (out, report, _dir) = run_text(&text, &[]);
    out.expect_code(0);
    let r = report.unwrap();
    assert_eq!(
        r["pfc"]["deadlocks"].as_array().unwrap().len(),
        0,
        "{}",
        r["pfc"]
    );
    for h in ["hA", "hB", "hC", "hD"] {
        let got = metric(&r, h, "dcqcn_receive", "received_bytes")[0];
        assert!(got > 1_000_000.0, "{h}: {got}");
    }
}

#[test]
fn pfc_on_a_network_without_priorities_is_a_located_error() {
    let line = "[Network id='a1' type='link' bandwidth='10Gbps' latency='1us' qdisc='prio' \
                weights='0,0' classify='dscp:26' limit='100' pfc='0' pfc_xoff='20kB' pfc_xon='10kB']";
    assert!(incast().contains(line));
    // Columns count from 1 after the line's tab; a value's starts after
    // its quote.
    let col = |at: &str, to: &str| to.find(at).unwrap() + 2 + usize::from(at.starts_with('\''));
    let cases = [
        (
            "[Network id='a1' type='link' bandwidth='10Gbps' latency='1us' pfc='0']",
            "pfc=",
            "PFC on a network without priorities",
        ),
        (
            "[Network id='a1' type='link' bandwidth='10Gbps' latency='1us' qdisc='red' \
             red_min='5' red_max='15' pfc='0']",
            "pfc=",
            "PFC on a network without priorities",
        ),
        (
            "[Network id='a1' type='link' bandwidth='10Gbps' latency='1us' qdisc='prio' \
             weights='0,0' classify='flow' pfc='0']",
            "'0']",
            "PFC priorities are DSCP classes",
        ),
        (
            "[Network id='a1' type='link' bandwidth='10Gbps' latency='1us' qdisc='prio' \
             weights='0,0' classify='dscp:26' pfc='9']",
            "'9'",
            "outside 0 to 7",
        ),
        (
            "[Network id='a1' type='link' bandwidth='10Gbps' latency='1us' qdisc='prio' \
             weights='0,0' classify='dscp:26' pfc='3']",
            "'3'",
            "priority 3 is not a class",
        ),
        (
            "[Network id='a1' type='link' bandwidth='10Gbps' latency='1us' qdisc='prio' \
             weights='0,0' classify='dscp:26' pfc='0' pfc_xoff='10kB' pfc_xon='10kB']",
            "'10kB']",
            "Xon must be below Xoff",
        ),
    ];
    for (to, at, message) in cases {
        let text = incast().replacen(line, to, 1);
        let (out, report, _dir) = run_text(&text, &[]);
        out.expect_code(2);
        let first = out.first_stderr_line();
        let line = 1 + incast().lines().position(|l| l.contains(line)).unwrap();
        let want = format!("t.ndl:{line}:{}:", col(at, to));
        assert!(first.starts_with(&want), "want {want}: {first}");
        assert!(first.contains(message), "`{message}` not in: {first}");
        assert!(report.is_none());
    }
}

#[test]
fn pfc_on_a_fattree_pauses_under_incast() {
    // Every link of the topology gets PFC from the one line.
    let text = "[Simulation seed='1' until='3ms']\n\
        [Topology type='fattree' k='4' bandwidth='10Gbps' latency='1us' qdisc='prio' \
         weights='0,0' classify='dscp:26' pfc='0']\n\
        [Machines]\n\
        \t[Machine name='host-0']\n\
        \t\t[Applications]\n\
        \t\t\t[Application name='dcqcn_receive']\n"
        .to_string()
        + &(1..8)
            .map(|i| {
                format!(
                    "\t[Machine name='host-{i}']\n\t\t[Applications]\n\
                     \t\t\t[Application name='dcqcn_send' to='host-0' line_rate='10Gbps' \
                     dscp='26' stop='2ms']\n"
                )
            })
            .collect::<String>();
    let (out, report, _dir) = run_text(&text, &[]);
    out.expect_code(0);
    let r = report.unwrap();
    assert!(
        r["pfc"]["pause_frames"].as_u64().unwrap() > 7,
        "{}",
        r["pfc"]
    );
    assert_eq!(r["pfc"]["headroom_drops"], 0);
    assert_eq!(r["packets"]["dropped_total"], 0, "{}", r["packets"]);
    let lost: f64 = metric(&r, "host-0", "dcqcn_receive", "lost").iter().sum();
    assert_eq!(lost, 0.0);
}
