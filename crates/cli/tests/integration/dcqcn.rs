//! DCQCN end to end (`examples/ndl/dcqcn.ndl`): two flows that start at
//! the line rate, 10 ms apart, on a 10 Gbit/s bottleneck that marks ECN
//! RED-style on its instantaneous queue, converge to fair rates without a
//! loss (Zhu et al., SIGCOMM 2015, §5's two-flow convergence), and
//! without marking (`ecn='no'`) the same flows lose packets instead of
//! slowing down; option mistakes are located.

use crate::*;
use std::ffi::OsStr;

/// Runs NDL `text`; returns the outcome and the report.
fn run_text(text: &str) -> (Outcome, Option<Value>, TempDir) {
    let dir = temp_dir();
    std::fs::write(dir.path().join("t.ndl"), text).unwrap();
    let args = ["run", "t.ndl", "--report", "r.json"].map(OsStr::new);
    let out = elvis_in(dir.path(), args);
    let path = dir.path().join("r.json");
    let report = path.exists().then(|| read_report(&path));
    (out, report, dir)
}

/// Metric `name` of `app` on each machine it ran on, in report order.
fn values(report: &Value, app: &str, name: &str) -> Vec<f64> {
    (report["metrics"].as_array().unwrap().iter())
        .filter(|m| m["application"] == app && m["name"] == name)
        .map(|m| m["value"].as_f64().unwrap())
        .collect()
}

fn example_text() -> String {
    std::fs::read_to_string(example("dcqcn.ndl")).unwrap()
}

#[test]
fn two_dcqcn_flows_converge_to_fair_shares_without_loss() {
    let (out, report, _dir) = run_text(&example_text());
    out.expect_code(0);
    let r = report.unwrap();
    let tput = values(&r, "dcqcn_receive", "throughput_bps");
    assert_eq!(tput.len(), 2, "{tput:?}");
    // Payload over the frame: 1000 of 1042 bytes of a fully used link.
    let goodput_max = 10e9 * 1000.0 / 1042.0;
    let sum: f64 = tput.iter().sum();
    assert!(
        sum > 0.95 * goodput_max && sum <= goodput_max * 1.001,
        "{tput:?}"
    );
    let jain = sum * sum / (2.0 * tput.iter().map(|x| x * x).sum::<f64>());
    assert!(jain > 0.99, "Jain's index {jain}: {tput:?}");
    assert_eq!(values(&r, "dcqcn_receive", "lost"), [0.0, 0.0]);
    // Every CNP the receivers sent reached its sender, and each flow was
    // slowed by them.
    let sent = values(&r, "dcqcn_receive", "cnps_sent");
    let got = values(&r, "dcqcn_send", "cnps");
    assert_eq!(sent.iter().sum::<f64>(), got.iter().sum::<f64>());
    assert!(got.iter().all(|&c| c > 10.0), "{got:?}");
    // At most one CNP per flow per 50 µs: over at most 100 ms, 2,000.
    assert!(sent.iter().all(|&c| c <= 2_000.0), "{sent:?}");
    let rates = values(&r, "dcqcn_send", "rate_bps");
    assert!(rates.iter().all(|&x| x > 3e9 && x < 7e9), "{rates:?}");
}

#[test]
fn without_marking_the_same_flows_lose_packets() {
    let text = example_text().replace("ecn='yes'", "ecn='no'");
    let (out, report, _dir) = run_text(&text);
    out.expect_code(0);
    let r = report.unwrap();
    assert_eq!(values(&r, "dcqcn_send", "cnps"), [0.0, 0.0]);
    let lost: f64 = values(&r, "dcqcn_receive", "lost").iter().sum();
    assert!(lost > 1_000.0, "lost {lost}");
}

#[test]
fn dcqcn_option_mistakes_are_located() {
    let cases = [
        (
            "line_rate='10Gbps' stop",
            "stop",
            "missing option 'line_rate'",
        ),
        (
            "line_rate='10Gbps' stop",
            "line_rate='10Gbps' min_rate='20Gbps' stop",
            "min_rate is above line_rate",
        ),
        ("line_rate='10Gbps' stop", "line_rate='fast' stop", "fast"),
        (
            "line_rate='10Gbps' stop",
            "line_rate='10Gbps' size='4' stop",
            "at least 9 bytes",
        ),
    ];
    for (from, to, message) in cases {
        let text = example_text().replacen(from, to, 1);
        assert_ne!(text, example_text(), "{from}");
        let (out, report, _dir) = run_text(&text);
        out.expect_code(2);
        let first = out.first_stderr_line();
        assert!(first.starts_with("t.ndl:34:"), "{first}");
        assert!(first.contains(message), "`{message}` not in: {first}");
        assert!(report.is_none());
    }
}
