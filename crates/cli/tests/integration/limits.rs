//! Limits checked before any work: the memory estimate against the memory
//! available (or `--max-memory`), graph files that are not regular files,
//! NDL files that are not UTF-8 or quote huge values.

use crate::*;
use std::time::{Duration, Instant};

const GROUP: &str = "[Networks]\n\t[Network id='1']\n[Machines]\n\t[Machine name='a' count='COUNT']\n\t\t[Networks]\n\t\t\t[Network id='1']\n";

#[test]
fn three_hundred_million_machines_are_refused_at_once_with_the_estimate() {
    let dir = temp_dir();
    std::fs::write(
        dir.path().join("big.ndl"),
        GROUP.replace("COUNT", "300000000"),
    )
    .unwrap();
    let start = Instant::now();
    for cmd in ["check", "run"] {
        let out = elvis_in(dir.path(), args![cmd, "big.ndl", "--max-memory", "8GiB"]);
        out.expect_code(2);
        let first = out.first_stderr_line();
        assert!(
            first.starts_with("big.ndl:4:")
                && first.contains(": error: this scenario needs about")
                && first.contains("300000000 machines")
                && first.contains("8.0 GiB allowed by --max-memory"),
            "{cmd}: {}",
            out.stderr
        );
    }
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "nothing was built"
    );
}

#[test]
fn check_prints_the_estimate_and_a_low_max_memory_refuses_even_a_small_file() {
    let out = elvis(args!["check", &example("fig2.ndl")]);
    out.expect_code(0);
    assert!(out.stdout.contains("  estimated memory "), "{}", out.stdout);
    let out = elvis(args!["check", &example("fig2.ndl"), "--max-memory", "1MiB"]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("error: this scenario needs about"),
        "{}",
        out.stderr
    );
    let out = elvis(args!["check", &example("fig2.ndl"), "--max-memory", "lots"]);
    out.expect_code(2);
    assert!(out.first_stderr_line().starts_with("error: --max-memory"));
}

#[test]
fn a_fat_tree_of_k_254_is_refused_under_a_small_memory_limit() {
    let dir = temp_dir();
    std::fs::write(
        dir.path().join("ft.ndl"),
        "\n[Topology type='fattree' k='254']\n",
    )
    .unwrap();
    let out = elvis_in(dir.path(), args!["check", "ft.ndl", "--max-memory", "2GiB"]);
    out.expect_code(2);
    assert!(
        out.first_stderr_line().starts_with("ft.ndl:2:")
            && out.stderr.contains("error: this scenario needs"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_fat_tree_with_an_extra_router_is_refused_for_its_automatic_routes() {
    let dir = temp_dir();
    let src = "[Topology type='fattree' k='32']\n[Networks]\n\t[Network id='x']\n[Machines]\n\t[Machine name='r' forward='yes']\n\t\t[Networks]\n\t\t\t[Network id='x']\n";
    std::fs::write(dir.path().join("mix.ndl"), src).unwrap();
    let alone = "[Topology type='fattree' k='32']\n";
    std::fs::write(dir.path().join("alone.ndl"), alone).unwrap();
    elvis_in(
        dir.path(),
        args!["check", "alone.ndl", "--max-memory", "4GiB"],
    )
    .expect_code(0);
    let out = elvis_in(
        dir.path(),
        args!["check", "mix.ndl", "--max-memory", "4GiB"],
    );
    out.expect_code(2);
    assert!(out.stderr.contains("routes"), "{}", out.stderr);
}

#[cfg(unix)]
#[test]
fn a_graph_file_that_is_a_device_or_a_fifo_is_refused_without_reading() {
    let dir = temp_dir();
    let fifo = dir.path().join("g.fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    for file in ["/dev/zero", "g.fifo", "/dev/stdin"] {
        let src = format!("[Topology type='graph' file='{file}']\n");
        std::fs::write(dir.path().join("g.ndl"), src).unwrap();
        let start = Instant::now();
        let out = elvis_in(dir.path(), args!["check", "g.ndl"]);
        out.expect_code(2);
        assert!(
            out.first_stderr_line().starts_with("g.ndl:1:")
                && out.stderr.contains("not a regular file"),
            "{file}: {}",
            out.stderr
        );
        assert!(start.elapsed() < Duration::from_secs(20), "{file}");
    }
}

#[test]
fn invalid_utf8_is_reported_at_the_line_and_column_of_the_first_bad_byte() {
    let dir = temp_dir();
    let mut bytes = b"[Networks]\n\t[Network id='caf".to_vec();
    bytes.push(0xe9); // Latin-1 `é`
    bytes.extend_from_slice(b"']\n");
    std::fs::write(dir.path().join("latin1.ndl"), bytes).unwrap();
    let out = elvis_in(dir.path(), args!["check", "latin1.ndl"]);
    out.expect_code(2);
    assert!(
        out.first_stderr_line()
            .starts_with("latin1.ndl:2:18: error: byte 0xe9")
            && out.stderr.contains("hint:"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_hundred_kilobyte_value_gives_a_short_message() {
    let dir = temp_dir();
    let long = "x".repeat(100_000);
    let src = format!(
        "[Networks]\n\t[Network id='1']\n[Machines]\n\t[Machine name='a']\n\t\t[Networks]\n\t\t\t[Network id='{long}']\n"
    );
    std::fs::write(dir.path().join("long.ndl"), src).unwrap();
    let out = elvis_in(dir.path(), args!["check", "long.ndl"]);
    out.expect_code(2);
    assert!(
        out.first_stderr_line().starts_with("long.ndl:6:"),
        "{}",
        &out.stderr[..200]
    );
    assert!(
        out.stderr.len() < 2000,
        "{} bytes of stderr",
        out.stderr.len()
    );
    assert!(out.stderr.contains("(100000 bytes)"), "{}", out.stderr);
}

#[test]
fn range_errors_say_the_range_and_why() {
    let dir = temp_dir();
    let cases = [
        (
            "[Application name='ping' to='b' count='70000']",
            "0 to 65535: an ICMP echo sequence number is 16 bits",
        ),
        (
            "[Application name='ping_pong' to='b' local_port='1' remote_port='2' count='300']",
            "0 to 255",
        ),
        (
            "[Application name='capture' port='70000']",
            "ports are 0 to 65535",
        ),
    ];
    for (app, want) in cases {
        let src = format!(
            "[Networks]\n\t[Network id='1']\n[Machines]\n\t[Machine name='a']\n\t\t[Networks]\n\t\t\t[Network id='1']\n\t\t[Applications]\n\t\t\t{app}\n\t[Machine name='b']\n\t\t[Networks]\n\t\t\t[Network id='1']\n"
        );
        std::fs::write(dir.path().join("r.ndl"), src).unwrap();
        let out = elvis_in(dir.path(), args!["check", "r.ndl"]);
        out.expect_code(2);
        assert!(
            out.first_stderr_line().starts_with("r.ndl:8:") && out.stderr.contains(want),
            "{app}: {}",
            out.stderr
        );
    }
}
