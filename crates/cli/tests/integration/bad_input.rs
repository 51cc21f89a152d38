//! Bad input: exit status 2, a `FILE:LINE:COL: error: …` first line with a
//! hint, a caret under the offending text, and nothing written.
//!
//! Every file in `fixtures/bad/` is a copy of `fixtures/good-two-machines.ndl`
//! (tab-indented; a tab is one column) with one mistake.

use crate::*;

/// Runs `elvis run FILE --report … --pcap …` on `fixtures/FILE` (from the
/// fixtures directory, so FILE is how errors name it) and checks the
/// located error, then `elvis check FILE`, which must say the same.
#[track_caller]
fn assert_bad_input(file: &str, line: u32, col: u32, fragments: &[&str]) {
    let out_dir = temp_dir();
    let report = out_dir.path().join("report.json");
    let pcap = out_dir.path().join("pcap");
    let out = elvis_in(
        &fixtures_dir(),
        args!["run", file, "--report", &report, "--pcap", &pcap],
    );
    out.expect_code(2);
    let first = out.first_stderr_line();
    let place = format!("{file}:{line}:{col}: error: ");
    assert!(
        first.starts_with(&place),
        "expected the error at {place}\nstderr:\n{}",
        out.stderr
    );
    for f in fragments {
        assert!(first.contains(f), "`{f}` not in: {first}");
    }
    assert!(first.contains(" (hint: "), "no hint in: {first}");
    assert_caret_under(file, line, col, &out.stderr);
    assert!(out.stdout.is_empty(), "stdout: {}", out.stdout);
    // Nothing is written: no report, no temporary report, no pcap directory.
    assert!(!report.exists(), "a report was written");
    assert!(!pcap.exists(), "a pcap directory was created");
    assert_eq!(file_names(out_dir.path()), Vec::<String>::new());

    let check = elvis_in(&fixtures_dir(), args!["check", file]);
    check.expect_code(2);
    assert_eq!(check.first_stderr_line(), first, "check and run disagree");
    assert!(check.stdout.is_empty(), "stdout: {}", check.stdout);
}

/// Checks the rendered source line and the caret line under it: the first
/// `^` must stand under column `col` of line `line` (tabs drawn as four
/// spaces).
#[track_caller]
fn assert_caret_under(file: &str, line: u32, col: u32, stderr: &str) {
    let source = std::fs::read_to_string(fixtures_dir().join(file)).unwrap();
    let text = source
        .lines()
        .nth(line as usize - 1)
        .expect("the line exists");
    let lines: Vec<&str> = stderr.lines().collect();
    let shown = lines
        .iter()
        .position(|l| l.trim_start().starts_with(&format!("{line} | ")))
        .unwrap_or_else(|| panic!("line {line} is not shown:\n{stderr}"));
    let prefix = lines[shown].find(" | ").unwrap() + 3;
    assert_eq!(&lines[shown][prefix..], text.replace('\t', "    "));
    let carets = lines.get(shown + 1).expect("a caret line");
    let at = carets.find('^').expect("a caret") - prefix;
    let expected: usize = text
        .chars()
        .take(col as usize - 1)
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum();
    assert_eq!(at, expected, "caret misplaced:\n{stderr}");
}

#[test]
fn an_unterminated_quote_is_bad_input_located_at_the_quote() {
    // Line 2: `\t[Network id='3]`; the quote opens in column 14.
    assert_bad_input(
        "bad/unterminated-quote.ndl",
        2,
        14,
        &["quoted value is never closed"],
    );
}

#[test]
fn a_block_missing_its_closing_bracket_is_bad_input_located_at_the_block() {
    // Line 12: the sender's `[Application …` (after three tabs) lacks its `]`.
    assert_bad_input(
        "bad/missing-bracket.ndl",
        12,
        4,
        &["`[Application`", "never closed"],
    );
}

#[test]
fn an_unknown_keyword_is_bad_input_with_a_suggestion() {
    // Line 2: `\t[Netwerk id='3']` inside `[Networks]`.
    assert_bad_input(
        "bad/unknown-keyword.ndl",
        2,
        2,
        &["`[Netwerk]`", "did you mean `[Network]`?"],
    );
}

#[test]
fn an_unknown_top_level_section_is_bad_input_with_a_suggestion() {
    assert_bad_input(
        "bad/unknown-section.ndl",
        1,
        1,
        &["unknown section `[Netwerks]`", "did you mean `[Networks]`?"],
    );
}

#[test]
fn an_unknown_application_is_bad_input_listing_the_known_ones() {
    // The application block itself is located (line 12, after three tabs).
    assert_bad_input(
        "bad/unknown-application.ndl",
        12,
        4,
        &["unknown application 'send_mesage'", "send_message, capture"],
    );
}

#[test]
fn an_unknown_application_option_is_bad_input_listing_the_options() {
    // `colour='red'` starts in column 82 of line 12; an option's place is
    // the place of its value (`elvis_scenario::Param::loc`), column 90.
    assert_bad_input(
        "bad/unknown-option.ndl",
        12,
        90,
        &[
            "application 'send_message' has no option 'colour'",
            "message, to, port",
        ],
    );
}

#[test]
fn an_unknown_machine_in_to_is_bad_input_located_at_the_name() {
    // `to='captuer'`: the value starts in column 58 of line 12.
    assert_bad_input(
        "bad/unknown-machine.ndl",
        12,
        58,
        &["unknown machine 'captuer'"],
    );
}

#[test]
fn an_undeclared_network_id_in_a_machine_is_bad_input_with_a_suggestion() {
    // Line 7: `\t\t\t[Network id='4']`, the id's value in column 17.
    assert_bad_input(
        "bad/unknown-network.ndl",
        7,
        17,
        &["network '4'", "not declared", "did you mean '3'?"],
    );
}

#[test]
fn a_route_via_an_address_on_no_attached_network_is_bad_input_located_at_the_gateway() {
    // Line 6: `\t\t[Route to='10.9.0.0/16' via='10.7.0.1']`, via's value
    // in column 32.
    assert_bad_input(
        "bad/route-foreign-gateway.ndl",
        6,
        32,
        &[
            "machine 'sender'",
            "gateway 10.7.0.1 is on none of its networks",
        ],
    );
}

#[test]
fn a_route_to_a_prefix_with_host_bits_is_bad_input_naming_the_network() {
    // Line 6: `\t\t[Route to='10.9.0.1/16' …]`, to's value in column 14.
    assert_bad_input(
        "bad/route-bad-prefix.ndl",
        6,
        14,
        &["10.9.0.1/16", "did you mean 10.9.0.0/16?"],
    );
}

#[test]
fn a_forward_of_maybe_is_bad_input() {
    // Line 5: `\t[Machine name='sender' forward='maybe']`, column 34.
    assert_bad_input("bad/forward-maybe.ndl", 5, 34, &["bad forward 'maybe'"]);
}

#[test]
fn an_unknown_offload_is_bad_input_located_at_the_word() {
    // Line 5: `\t[Machine name='sender' offload='tso,lro']`: the value
    // starts in column 34, `lro` in column 38.
    assert_bad_input(
        "bad/offload-unknown.ndl",
        5,
        38,
        &["bad offload 'tso,lro'", "unknown offload `lro`", "`gro`"],
    );
}

#[test]
fn two_machines_claiming_one_address_is_bad_input_located_at_the_second_claim() {
    // The sender claims ip='10.0.0.1' on line 12, the capturer again on
    // line 20 (its value in column 53).
    assert_bad_input(
        "bad/address-conflict.ndl",
        20,
        53,
        &["10.0.0.1", "claimed", "line 12"],
    );
}

#[test]
fn a_latency_in_parsecs_is_bad_input() {
    // Line 2: `\t[Network id='3' latency='5 parsecs']`, value in column 27.
    assert_bad_input(
        "bad/bad-latency.ndl",
        2,
        27,
        &["latency '5 parsecs'", "parsecs", "latency='2ms'"],
    );
}

#[test]
fn a_bandwidth_of_fast_is_bad_input() {
    // Line 2: `\t[Network id='3' bandwidth='fast']`, value in column 29.
    assert_bad_input(
        "bad/bad-bandwidth.ndl",
        2,
        29,
        &["bandwidth 'fast'", "bandwidth='100Mbps'"],
    );
}

#[test]
fn a_machine_count_of_zero_is_bad_input() {
    // Line 5: `\t[Machine name='sender' count='0']`, value in column 32.
    assert_bad_input("bad/count-zero.ndl", 5, 32, &["count '0'"]);
}

#[test]
fn a_link_joining_three_machines_is_bad_input() {
    // Line 2: `\t[Network id='3' type='link']`, `link` in column 24.
    assert_bad_input(
        "bad/link-three-machines.ndl",
        2,
        24,
        &["link", "'3'", "joins 3", "exactly 2", "type='switch'"],
    );
}

#[test]
fn an_until_of_abc_on_the_command_line_is_bad_input() {
    let out_dir = temp_dir();
    let report = out_dir.path().join("report.json");
    let pcap = out_dir.path().join("pcap");
    let out = elvis(args![
        "run", "--until", "abc", "--report", &report, "--pcap", &pcap
    ]);
    out.expect_code(2);
    // There is no file to point into: the error names the option.
    let first = out.first_stderr_line();
    assert!(first.starts_with("error: --until: "), "{}", out.stderr);
    assert!(first.contains("abc"), "{first}");
    assert!(first.contains("(hint: "), "{first}");
    assert!(out.stdout.is_empty(), "stdout: {}", out.stdout);
    assert!(!report.exists() && !pcap.exists());
    assert_eq!(file_names(out_dir.path()), Vec::<String>::new());
}

#[test]
fn check_of_a_good_file_prints_the_machine_count() {
    let out = elvis(args!["check", &example("lan.ndl")]);
    out.expect_code(0);
    // Three clients, a server and a monitor on two networks.
    assert!(
        out.stdout
            .lines()
            .next()
            .unwrap_or_default()
            .ends_with(": ok (2 networks, 5 machines)"),
        "{}",
        out.stdout
    );
    assert!(out.stderr.is_empty(), "stderr: {}", out.stderr);

    let out = elvis_in(&fixtures_dir(), args!["check", "elvis-basic-10000.ndl"]);
    out.expect_code(0);
    assert_eq!(
        out.stdout.lines().next(),
        Some("elvis-basic-10000.ndl: ok (1 networks, 10001 machines)")
    );
    assert!(
        out.stdout.contains("estimated memory")
            && out.stdout.contains("10001 machines, 1 networks"),
        "{}",
        out.stdout
    );
}

#[test]
fn check_of_a_bad_file_exits_2_with_the_located_error() {
    let out = elvis_in(&fixtures_dir(), args!["check", "bad/bad-latency.ndl"]);
    out.expect_code(2);
    assert!(
        out.first_stderr_line()
            .starts_with("bad/bad-latency.ndl:2:27: error: bad latency '5 parsecs'"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn check_of_a_missing_file_is_bad_input() {
    let dir = temp_dir();
    let missing = dir.path().join("missing.ndl");
    let out = elvis(args!["check", &missing]);
    out.expect_code(2);
    assert!(
        out.first_stderr_line().starts_with("error: cannot read "),
        "{}",
        out.stderr
    );
}

#[test]
fn a_watchdog_of_nan_is_bad_input() {
    let out_dir = temp_dir();
    let report = out_dir.path().join("report.json");
    let out = elvis(args!["run", "--watchdog", "NaN", "--report", &report]);
    out.expect_code(2);
    let first = out.first_stderr_line();
    assert!(first.starts_with("error: --watchdog: "), "{}", out.stderr);
    assert!(first.contains("(hint: "), "{first}");
    assert!(!report.exists());
}

#[test]
fn queue_discipline_mistakes_are_located_at_the_offending_value() {
    // Line 2 is `\t[Network id='3' bandwidth='10Mbps' …]` with the qdisc
    // keys appended.
    assert_bad_input(
        "bad/qdisc-unknown.ndl",
        2,
        44,
        &["bad qdisc 'fifo'", "unknown discipline"],
    );
    assert_bad_input(
        "bad/qdisc-red-range.ndl",
        2,
        71,
        &["red_max (5) must be larger than red_min (15)"],
    );
    assert_bad_input(
        "bad/qdisc-red-max-p.ndl",
        2,
        85,
        &["red_max_p: 0 is outside (0, 1]"],
    );
    assert_bad_input(
        "bad/qdisc-tbf-no-rate.ndl",
        2,
        44,
        &["qdisc 'tbf' needs `rate`"],
    );
    assert_bad_input(
        "bad/qdisc-zero-weight.ndl",
        2,
        58,
        &["weights: class 1 has weight 0"],
    );
}

#[test]
fn a_receive_buffer_below_two_kib_is_bad_input_located_at_the_value() {
    assert_bad_input(
        "bad/rcvbuf-tiny.ndl",
        21,
        69,
        &["rcvbuf '1KB' is not between 2KiB and 1GiB"],
    );
}

#[test]
fn aodv_mistakes_are_located_at_the_protocol() {
    // Line 11 is `\t\t\t[Protocol name='AODV' …]` on the sender.
    assert_bad_input(
        "bad/aodv-unknown-option.ndl",
        11,
        32,
        &["protocol AODV has no option 'helo'"],
    );
    assert_bad_input(
        "bad/aodv-bad-hello.ndl",
        11,
        33,
        &["hello 'maybe' is neither yes nor no"],
    );
    assert_bad_input(
        "bad/aodv-no-network.ndl",
        24,
        4,
        &["machine 'lonely' runs AODV but has no network"],
    );
}
