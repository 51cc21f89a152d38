//! Output safety: reports land on what the path names (a link's target, a
//! FIFO's reader, standard output) without replacing it, every output path
//! is checked before the run, and capture files never collide.

use crate::*;

#[cfg(unix)]
#[test]
fn a_report_through_a_symbolic_link_keeps_the_link_and_fills_its_target() {
    let dir = temp_dir();
    let real = dir.path().join("real.json");
    std::fs::write(&real, "old").unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    elvis(args!["run", &example("fig2.ndl"), "-q", "--report", &link]).expect_code(0);
    let kind = std::fs::symlink_metadata(&link).unwrap().file_type();
    assert!(kind.is_symlink(), "the link was replaced by a file");
    assert_eq!(read_report(&real)["end"], "idle");
    assert_eq!(
        file_names(dir.path()),
        ["link.json", "real.json"],
        "no leftovers"
    );
}

#[cfg(unix)]
#[test]
fn a_report_into_a_fifo_reaches_its_reader_and_the_fifo_stays() {
    let dir = temp_dir();
    let fifo = dir.path().join("report.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).expect("the FIFO reads"))
    };
    elvis(args!["run", &example("fig2.ndl"), "-q", "--report", &fifo]).expect_code(0);
    let text = reader.join().unwrap();
    let report: serde_json::Value = serde_json::from_str(&text).expect("the reader got JSON");
    assert_eq!(report["end"], "idle");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
}

#[test]
fn a_report_to_dash_goes_to_standard_output_and_the_summary_to_standard_error() {
    let out = elvis(args!["run", &example("fig2.ndl"), "--report", "-"]);
    out.expect_code(0);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).expect("stdout is the JSON");
    assert_eq!(report["packets"]["udp_delivered"], 1);
    assert!(out.stderr.contains("== elvis run:"), "{}", out.stderr);
}

#[test]
fn a_report_in_a_missing_directory_is_refused_before_the_run() {
    let dir = temp_dir();
    let path = dir.path().join("no-such-dir/r.json");
    let pcaps = dir.path().join("pcaps");
    let out = elvis(args![
        "run",
        &example("fig2.ndl"),
        "--pcap",
        &pcaps,
        "--report",
        &path
    ]);
    out.expect_code(5);
    assert!(
        out.first_stderr_line()
            .starts_with("error: cannot write report")
            && out.stderr.contains("no-such-dir"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "the run started: {}", out.stdout);
    assert!(
        !pcaps.exists() || file_names(&pcaps).is_empty(),
        "nothing captured"
    );
}

#[test]
fn a_trace_directory_that_is_a_file_is_refused_before_the_run() {
    let dir = temp_dir();
    let file = dir.path().join("taken");
    std::fs::write(&file, "x").unwrap();
    for flag in ["--tcp-trace", "--queue-trace", "--pcap"] {
        let out = elvis(args!["run", &example("fig2.ndl"), flag, &file]);
        out.expect_code(5);
        assert!(
            out.stderr.contains("not a directory"),
            "{flag}: {}",
            out.stderr
        );
        assert!(out.stdout.is_empty(), "{flag}: the run started");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}

#[test]
fn networks_whose_names_differ_only_in_punctuation_get_separate_listed_captures() {
    let dir = temp_dir();
    let pcaps = dir.path().join("pcaps");
    let out = elvis(args![
        "run",
        &fixture("endless-flood.ndl"),
        "--until",
        "20ms",
        "--pcap",
        &pcaps
    ]);
    out.expect_code(3);
    assert_eq!(file_names(&pcaps), ["net-a%2Fb.pcap", "net-a_b.pcap"]);
    assert!(!read_pcap(&pcaps.join("net-a%2Fb.pcap")).is_empty());
    assert!(read_pcap(&pcaps.join("net-a_b.pcap")).is_empty());
    assert!(out.stdout.contains("files written    2"), "{}", out.stdout);
    assert!(out.stdout.contains("net-a%2Fb.pcap"), "{}", out.stdout);
}
