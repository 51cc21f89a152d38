//! Protocol edge cases found by mutation testing: pings whose fragments
//! outnumber the NIC queue, datagrams too large for IPv4, and two pings on
//! one machine.

use crate::*;

/// Two machines on a switch; `APPS` goes on `a`, which pings `b`.
const PAIR: &str = "[Networks]\n\t[Network id='1' bandwidth='1Gbps' latency='1ms']\n[Machines]\n\t[Machine name='a']\n\t\t[Networks]\n\t\t\t[Network id='1']\n\t\t[Applications]\nAPPS\t[Machine name='b']\n\t\t[Networks]\n\t\t\t[Network id='1']\n";

fn app_line(app: &str) -> String {
    format!("\t\t\t{app}\n")
}

/// Returns the values of metric `name` published by `ping`.
fn ping_metric(r: &serde_json::Value, name: &str) -> Vec<f64> {
    r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["application"] == "ping" && m["name"] == name)
        .map(|m| m["value"].as_f64().unwrap())
        .collect()
}

#[test]
fn a_ping_of_sixty_thousand_bytes_is_fragmented_and_answered() {
    let dir = temp_dir();
    let src = PAIR.replace(
        "APPS",
        &app_line("[Application name='ping' to='b' count='3' size='60000' interval='100ms']"),
    );
    std::fs::write(dir.path().join("big-ping.ndl"), src).unwrap();
    let out = elvis_in(
        dir.path(),
        args!["run", "big-ping.ndl", "--report", "r.json"],
    );
    out.expect_code(0);
    let r = read_report(&dir.path().join("r.json"));
    assert_eq!(ping_metric(&r, "received"), [3.0], "{}", r["metrics"]);
    assert_eq!(
        r["packets"]["dropped"].get("nic_queue_full"),
        None,
        "{}",
        r["packets"]
    );
    assert_eq!(packets(&r, "icmp_echo_replied"), 3);
}

#[test]
fn a_datagram_above_65507_bytes_is_refused_at_check_time() {
    let dir = temp_dir();
    let cases = [
        (
            "[Application name='ping' to='b' size='65508']",
            "size must be 0 to 65507 bytes",
        ),
        (
            "[Application name='traceroute' to='b' size='70000']",
            "size must be 0 to 65507 bytes",
        ),
        (
            "[Application name='send_message' to='b' port='9' size='65508']",
            "size must be 0 to 65507 bytes",
        ),
    ];
    for (app, want) in cases {
        std::fs::write(
            dir.path().join("d.ndl"),
            PAIR.replace("APPS", &app_line(app)),
        )
        .unwrap();
        let out = elvis_in(dir.path(), args!["check", "d.ndl"]);
        out.expect_code(2);
        assert!(
            out.first_stderr_line().starts_with("d.ndl:8:") && out.stderr.contains(want),
            "{app}: {}",
            out.stderr
        );
    }
    // The largest is fine.
    let ok = app_line("[Application name='ping' to='b' size='65507' count='1']");
    std::fs::write(dir.path().join("d.ndl"), PAIR.replace("APPS", &ok)).unwrap();
    elvis_in(dir.path(), args!["check", "d.ndl"]).expect_code(0);
}

#[test]
fn two_pings_on_one_machine_each_get_their_own_replies() {
    let dir = temp_dir();
    let apps = app_line("[Application name='ping' to='b' count='4' interval='10ms']")
        + &app_line("[Application name='ping' to='b' count='2' interval='10ms']");
    std::fs::write(dir.path().join("two.ndl"), PAIR.replace("APPS", &apps)).unwrap();
    let out = elvis_in(dir.path(), args!["run", "two.ndl", "--report", "r.json"]);
    out.expect_code(0);
    let r = read_report(&dir.path().join("r.json"));
    let mut received = ping_metric(&r, "received");
    received.sort_by(f64::total_cmp);
    assert_eq!(received, [2.0, 4.0], "{}", r["metrics"]);
}
