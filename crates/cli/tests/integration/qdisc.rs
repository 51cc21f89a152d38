//! The RED dumbbell example: RED keeps the bottleneck queue between its
//! thresholds and drops early, before the buffer fills; `--queue-trace`
//! writes the occupancy series the report's mean is computed from.

use crate::*;

#[test]
fn the_red_dumbbell_keeps_its_bottleneck_queue_between_the_thresholds() {
    let dir = temp_dir();
    let report_path = dir.path().join("red.json");
    let trace = dir.path().join("queues");
    let out = elvis(args![
        "run",
        &example("red-ecn-dumbbell.ndl"),
        "--report",
        &report_path,
        "--queue-trace",
        &trace
    ]);
    out.expect_code(0);
    assert!(
        out.stdout.contains("bottleneck/r1") && out.stdout.contains("red_early"),
        "no queue line in the summary:\n{}",
        out.stdout
    );
    let r = read_report(&report_path);
    for group in ["sender", "receiver"] {
        let app = if group == "sender" {
            "bulk_send"
        } else {
            "bulk_receive"
        };
        assert_eq!(application(&r, group, app)["finished"], 4);
    }
    let q = r["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["network"] == "bottleneck" && q["machine"] == "r1")
        .expect("r1's bottleneck queue is in the report");
    assert_eq!(q["discipline"], "red");
    let by = &q["dropped_by"];
    let count = |k: &str| by[k].as_u64().unwrap_or(0);
    // RED acts early (by drops, or by CE marks once TCP sends ECT) and
    // the 100-frame buffer never fills.
    assert!(
        count("red_early") + q["marked"].as_u64().unwrap() > 0,
        "{q}"
    );
    assert_eq!(count("queue_full"), 0, "{q}");
    assert!(q["max_packets"].as_u64().unwrap() < 100, "{q}");
    let mean = q["mean_packets"].as_f64().unwrap();
    assert!(
        mean > 5.0 && mean < 15.0,
        "mean queue {mean} outside red_min..red_max"
    );

    // The trace, integrated independently, gives the same mean.
    let csv = std::fs::read_to_string(trace.join("queue-bottleneck-r1-nic.csv")).unwrap();
    let mut rows = csv.lines();
    assert_eq!(rows.next(), Some("time_ns,packets,bytes"));
    let points: Vec<(f64, f64)> = rows
        .map(|l| {
            let f: Vec<f64> = l.split(',').map(|x| x.parse().unwrap()).collect();
            (f[0], f[1])
        })
        .collect();
    let area: f64 = points.windows(2).map(|w| w[0].1 * (w[1].0 - w[0].0)).sum();
    let span = points.last().unwrap().0 - points[0].0;
    assert_eq!(points.last().unwrap().1, 0.0, "the queue drained");
    assert!(
        ((area / span) - mean).abs() < 1e-6 * mean,
        "{} vs {mean}",
        area / span
    );
}
