//! Every error, with its message and exact `line:col`.

use crate::{fails, FIG2};
use elvis_ndl::ErrorKind;

fn kind(src: &str) -> ErrorKind {
    elvis_ndl::parse(src, "t.ndl").unwrap_err().kind
}

const NETS: &str = "[Networks]\n\t[Network id='1']\n";

/// Returns a file with network 1 and one machine whose body is `body`
/// (lines at depth 2).
fn machine(head: &str, body: &str) -> String {
    format!("{NETS}[Machines]\n\t[Machine {head}]\n{body}")
}

#[test]
fn unknown_keyword_reports_line_and_column() {
    assert_eq!(
        fails("[Networks]\n[Netwroks]\n"),
        "t.ndl:2:1: error: unknown section `[Netwroks]` (hint: did you mean `[Networks]`?)"
    );
    assert_eq!(kind("[Banana]"), ErrorKind::UnknownKeyword);
}

#[test]
fn misplaced_block_names_its_parent() {
    assert_eq!(
        fails("[Networks]\n\t[Machine name='a']\n"),
        "t.ndl:2:2: error: `[Machine]` cannot appear inside `[Networks]` (hint: expected [Network])"
    );
    assert_eq!(
        fails(&machine("name='a'", "\t\t[Network id='1']\n")),
        "t.ndl:5:3: error: `[Network]` cannot appear inside `[Machine]` (hint: did you mean `[Networks]`?)"
    );
    assert_eq!(
        fails("[Networks]\n\t[Network id='1']\n\t\t[IP ip='1.2.3.4']\n\t\t\t[IP ip='1.2.3.5']\n"),
        "t.ndl:4:4: error: `[IP]` cannot appear inside `[IP]` (hint: `[IP]` takes no nested blocks)"
    );
}

#[test]
fn unknown_key_suggests_the_closest() {
    assert_eq!(
        fails("[Networks]\n\t[Network id='1' latncy='2ms']\n"),
        "t.ndl:2:18: error: unknown key `latncy` in `[Network]` (hint: did you mean `latency`?)"
    );
    assert_eq!(
        fails("[Networks x='1']\n"),
        "t.ndl:1:11: error: `[Networks]` takes no options, found `x`"
    );
    assert_eq!(kind("[Simulation sead='1']"), ErrorKind::UnknownKey);
}

#[test]
fn missing_id_and_name_are_reported_at_the_block() {
    assert_eq!(
        fails("[Networks]\n\t[Network]\n"),
        "t.ndl:2:2: error: `[Network]` needs an `id` (hint: write [Network id='…'])"
    );
    assert_eq!(
        fails("[Machines]\n\t[Machine count='2']\n"),
        "t.ndl:2:2: error: `[Machine]` needs a `name` (hint: write [Machine name='…'])"
    );
    assert_eq!(
        fails(&machine(
            "name='a'",
            "\t\t[Applications]\n\t\t\t[Application port='1']\n"
        )),
        "t.ndl:6:4: error: `[Application]` needs a `name` (hint: write [Application name='…'])"
    );
    assert_eq!(
        kind("[Networks]\n\t[Network id='1']\n\t\t[IP]\n"),
        ErrorKind::MissingKey
    );
}

#[test]
fn duplicate_network_id_points_at_the_second() {
    assert_eq!(
        fails("[Networks]\n\t[Network id='3']\n\t[Network id='3']\n"),
        "t.ndl:3:15: error: network id '3' is declared twice (hint: the first is at line 2, column 2)"
    );
}

#[test]
fn duplicate_machine_name_points_at_the_second() {
    assert_eq!(
        fails("[Machines]\n\t[Machine name='a']\n\t[Machine name='a']\n"),
        "t.ndl:3:17: error: machine name 'a' is used twice (hint: the first is at line 2, column 17)"
    );
}

#[test]
fn machine_named_like_an_instance_is_a_duplicate() {
    let src = "[Machines]\n\t[Machine name='s' count='3']\n\t[Machine name='s-2']\n";
    assert_eq!(
        fails(src),
        "t.ndl:3:2: error: machine name 's-2' clashes with an instance of the counted group 's' (hint: 's' has 3 instances, named s-0 to s-2)"
    );
}

#[test]
fn duplicate_key_in_a_block() {
    assert_eq!(
        fails("[Networks]\n\t[Network id='1' ID='2']\n"),
        "t.ndl:2:18: error: key `ID` is given twice in one block (hint: the first is at line 2, column 11)"
    );
}

#[test]
fn unknown_network_reference_suggests_declared_ids() {
    assert_eq!(
        fails(&machine("name='a'", "\t\t[Networks]\n\t\t\t[Network id='4']\n")),
        "t.ndl:6:17: error: machine 'a' is on network '4', which is not declared (hint: did you mean '1'?)"
    );
    assert_eq!(
        kind("[Machines]\n\t[Machine name='a']\n\t\t[Networks]\n\t\t\t[Network id='x']\n"),
        ErrorKind::UnknownReference
    );
}

#[test]
fn same_network_twice_on_a_machine() {
    let src = machine(
        "name='a'",
        "\t\t[Networks]\n\t\t\t[Network id='1']\n\t\t\t[Network id='1']\n",
    );
    assert_eq!(
        fails(&src),
        "t.ndl:7:17: error: machine 'a' is attached to network '1' twice (hint: the first is at line 6, column 17)"
    );
}

#[test]
fn same_network_twice_on_a_machine_with_many_networks() {
    // Twelve networks: the check past the first few uses a map; both the
    // repeat among the first ones and the one past them are found.
    let mut src = String::from("[Networks]\n");
    for i in 0..12 {
        src += &format!("\t[Network id='n{i}']\n");
    }
    src += "[Machines]\n\t[Machine name='r']\n\t\t[Networks]\n";
    for i in 0..12 {
        src += &format!("\t\t\t[Network id='n{i}']\n");
        if i == 3 || i == 10 {
            src += "\t\t\t[Network id='n2']\n";
        }
    }
    let errs = elvis_ndl::parse_all(&src, "t.ndl").unwrap_err();
    let lines: Vec<u32> = errs.iter().map(|e| e.loc.line).collect();
    assert_eq!(lines, [21, 29], "{errs:?}");
    assert!(
        errs.iter().all(|e| e.message.contains("'n2' twice")),
        "{errs:?}"
    );
}

#[test]
fn bad_count_is_a_bad_value() {
    assert_eq!(
        fails("[Machines]\n\t[Machine name='a' count='abc']\n"),
        "t.ndl:2:27: error: bad count 'abc': `abc` is not a whole number (hint: write e.g. count='100')"
    );
    assert_eq!(
        fails("[Machines]\n\t[Machine name='a' count='0']\n"),
        "t.ndl:2:27: error: bad count '0': a machine group has at least 1 machine (hint: write e.g. count='100')"
    );
    assert_eq!(
        kind("[Machines]\n\t[Machine name='a' count='99999999999']\n"),
        ErrorKind::BadValue
    );
}

#[test]
fn bad_ip_and_ranges_are_rejected() {
    assert_eq!(
        fails("[Networks]\n\t[Network id='1']\n\t\t[IP range='1.2.3.9-4']\n"),
        "t.ndl:3:14: error: bad range '1.2.3.9-4': the range ends (1.2.3.4) before it starts (1.2.3.9) (hint: write e.g. range='10.0.0.1-20')"
    );
    assert_eq!(
        fails("[Networks]\n\t[Network id='1']\n\t\t[IP ip='1.2.3']\n"),
        "t.ndl:3:11: error: bad ip '1.2.3': not an IPv4 address (hint: write e.g. ip='10.0.0.1')"
    );
    assert_eq!(
        kind("[Networks]\n\t[Network id='1']\n\t\t[IP range='1.2.3.4-300']\n"),
        ErrorKind::BadValue
    );
}

#[test]
fn bad_subnets_are_rejected() {
    assert_eq!(
        fails("[Networks]\n\t[Network id='1']\n\t\t[IP subnet='10.0.0.1/24']\n"),
        "t.ndl:3:15: error: bad subnet '10.0.0.1/24': 10.0.0.1/24 has host bits set (did you mean 10.0.0.0/24?) (hint: write e.g. subnet='10.0.0.0/24')"
    );
    assert_eq!(
        fails("[Networks]\n\t[Network id='1' subnet='10.0.0.0/24']\n\t\t[IP ip='10.0.1.1']\n"),
        "t.ndl:3:11: error: address 10.0.1.1 is outside the network's subnet 10.0.0.0/24 (hint: list only addresses inside the subnet, or widen it)"
    );
    assert_eq!(
        kind("[Networks]\n\t[Network id='1' subnet='10.0.0.0/33']\n"),
        ErrorKind::BadValue
    );
}

#[test]
fn bad_units_are_rejected_with_an_example() {
    assert_eq!(
        fails("[Networks]\n\t[Network id='1' latency='5 parsecs']\n"),
        "t.ndl:2:27: error: bad latency '5 parsecs': unknown time unit `parsecs` (use ns, us, ms or s) (hint: write e.g. latency='2ms')"
    );
    assert_eq!(
        fails("[Networks]\n\t[Network id='1' latency='1.5ns']\n"),
        "t.ndl:2:27: error: bad latency '1.5ns': `1.5` is not a whole number of nanoseconds (the smallest step is 1ns) (hint: write e.g. latency='2ms')"
    );
    assert_eq!(
        fails("[Networks]\n\t[Network id='1' bandwidth='10MBps']\n"),
        "t.ndl:2:29: error: bad bandwidth '10MBps': `MBps` is a byte rate; bandwidth is in bits per second (bps, kbps, Mbps, Gbps, Tbps) (hint: write e.g. bandwidth='100Mbps')"
    );
    for bad in [
        "loss='2'",
        "corruption='x'",
        "mtu='40'",
        "queue='0'",
        "type='hub'",
    ] {
        assert_eq!(
            kind(&format!("[Networks]\n\t[Network id='1' {bad}]\n")),
            ErrorKind::BadValue,
            "{bad}"
        );
    }
}

#[test]
fn bad_reorder_duplicate_and_reorder_delay_point_at_the_value() {
    assert_eq!(
        fails("[Networks]\n\t[Network id='1' reorder='150%']\n"),
        "t.ndl:2:27: error: bad reorder '150%': `150%` is more than 1 (100%) (hint: write e.g. reorder='1%')"
    );
    assert_eq!(
        fails("[Networks]\n\t[Network id='1' loss='1%' duplicate='often']\n"),
        "t.ndl:2:39: error: bad duplicate 'often': `often` is not a probability (write e.g. `0.01` or `1%`) (hint: write e.g. duplicate='1%')"
    );
    assert_eq!(
        fails("[Networks]\n\t[Network id='1' reorder_delay='2 fortnights']\n"),
        "t.ndl:2:33: error: bad reorder_delay '2 fortnights': unknown time unit `fortnights` (use ns, us, ms or s) (hint: write e.g. reorder_delay='1ms')"
    );
}

#[test]
fn bad_link_type_suggests_a_kind() {
    assert_eq!(
        fails("[Networks]\n\t[Network id='1' type='lnk']\n"),
        "t.ndl:2:24: error: bad type 'lnk': a network is a `switch`, a `link` or `wireless` (hint: did you mean 'link'?)"
    );
}

#[test]
fn link_with_three_ends_is_a_topology_error() {
    let src = "[Networks]\n\t[Network id='1' type='link']\n[Machines]\n\t[Machine name='a' count='3']\n\t\t[Networks]\n\t\t\t[Network id='1']\n";
    assert_eq!(
        fails(src),
        "t.ndl:2:24: error: link network '1' joins 3 machine interface(s); a link joins exactly 2 (hint: use type='switch' for more than two machines)"
    );
    assert_eq!(
        kind("[Networks]\n\t[Network id='1' type='link']\n"),
        ErrorKind::Topology
    );
}

#[test]
fn address_listed_twice_is_a_duplicate() {
    let src = "[Networks]\n\t[Network id='1']\n\t\t[IP range='10.0.0.1-9']\n\t[Network id='2']\n\t\t[IP ip='10.0.0.5']\n";
    assert_eq!(
        fails(src),
        "t.ndl:5:11: error: address 10.0.0.5 is listed twice (hint: it is first listed at line 3, column 14)"
    );
}

#[test]
fn address_claimed_by_two_applications_is_a_duplicate() {
    let app = "\t\t[Applications]\n\t\t\t[Application name='capture' ip='1.2.3.4']\n";
    let src = format!("[Machines]\n\t[Machine name='a']\n{app}\t[Machine name='b']\n{app}");
    assert_eq!(
        fails(&src),
        "t.ndl:7:36: error: address 1.2.3.4 is claimed by two applications (hint: the first claim is at line 4, column 36)"
    );
    let counted = "[Machines]\n\t[Machine name='a' count='2']\n\t\t[Applications]\n\t\t\t[Application name='x' ip='1.2.3.4']\n";
    assert!(fails(counted).contains("all 2 machines named 'a' would have address 1.2.3.4"));
    let bad = "[Machines]\n\t[Machine name='a']\n\t\t[Applications]\n\t\t\t[Application name='x' ip='nope']\n";
    assert!(fails(bad).starts_with("t.ndl:4:30: error: ip='nope' is not an IPv4 address"));
}

#[test]
fn bad_placeholders_are_rejected() {
    let app = |v: &str, count: &str| {
        format!("[Machines]\n\t[Machine name='a'{count}]\n\t\t[Applications]\n\t\t\t[Application name='x' to='{v}']\n")
    };
    assert_eq!(
        fails(&app("h{j}", " count='2'")),
        "t.ndl:4:30: error: in to='h{j}': unknown placeholder `{j}` (hint: use {i} (instance number) or {name} (instance name))"
    );
    assert!(fails(&app("h{i", " count='2'")).contains("unclosed `{`"));
    assert!(fails(&app("h}", " count='2'")).contains("unmatched `}`"));
    assert!(fails(&app("h{i}", "")).contains("`{i}` is only meaningful in a machine with a count"));
}

#[test]
fn block_indented_too_deep_is_an_indentation_error() {
    assert_eq!(
        fails("[Networks]\n\t\t[Network id='1']\n"),
        "t.ndl:2:3: error: `[Network]` is indented 2 levels, but `[Networks]` above it (line 1) is at level 0 (hint: a nested block is indented exactly one level (a tab or four spaces) more than its parent)"
    );
    assert_eq!(
        fails("\t[Networks]\n"),
        "t.ndl:1:2: error: `[Networks]` is indented, but there is no block above it to nest in (hint: a nested block is indented exactly one level (a tab or four spaces) more than its parent)"
    );
}

#[test]
fn spaces_that_are_not_a_multiple_of_four_are_an_indentation_error() {
    assert_eq!(
        fails("[Networks]\n      [Network id='1']\n"),
        "t.ndl:2:1: error: indentation has 2 stray space(s) (not a multiple of four) (hint: indent with tabs, or with exactly four spaces per level)"
    );
    assert_eq!(
        kind("[Networks]\n  \t[Network id='1']\n"),
        ErrorKind::Indentation
    );
}

#[test]
fn unterminated_quote_points_at_the_opening_quote() {
    assert_eq!(
        fails("[Networks]\n\t[Network id='3]\n[Machines]\n"),
        "t.ndl:2:14: error: quoted value is never closed (hint: end the value with ' on the same line)"
    );
}

#[test]
fn unterminated_bracket_points_at_the_block() {
    assert_eq!(
        fails("[Networks]\n\t[Network id='3'\n[Machines]\n"),
        "t.ndl:2:2: error: block `[Network` is never closed (hint: add `]` at the end of the block)"
    );
    assert_eq!(kind("[Networks"), ErrorKind::Syntax);
}

#[test]
fn stray_text_is_a_syntax_error() {
    assert_eq!(
        fails("[Networks]\nid='3'\n"),
        "t.ndl:2:1: error: expected `[` to start a block, found `i` (hint: each line holds one [Keyword key='value'] block, a comment (# or //), or nothing)"
    );
    assert_eq!(
        fails("[Networks] [Machines]\n"),
        "t.ndl:1:12: error: unexpected `[` after the end of the block (hint: put each block on its own line)"
    );
    assert_eq!(
        fails("[Networks]\n\t[Network id=3]\n"),
        "t.ndl:2:14: error: expected a quoted value after `id=`, found `3` (hint: values are quoted: id='value')"
    );
    assert_eq!(
        fails("[Networks]\n\t[Network id '3']\n"),
        "t.ndl:2:14: error: expected `=` after `id`, found `'` (hint: write id='value')"
    );
    assert_eq!(kind("[]"), ErrorKind::Syntax);
    assert_eq!(kind("[Networks, id='1']"), ErrorKind::Syntax);
}

#[test]
fn second_simulation_block_is_a_duplicate() {
    assert_eq!(
        fails("[Simulation seed='1']\n[Simulation seed='2']\n"),
        "t.ndl:2:1: error: only one `[Simulation]` block is allowed (hint: the first is at line 1, column 1)"
    );
    assert!(fails("[Simulation until='forever']\n")
        .starts_with("t.ndl:1:20: error: bad until 'forever'"));
}

#[test]
fn columns_count_characters_not_bytes() {
    assert_eq!(
        fails("[Machines]\n\t[Machine name='µ' count='x']\n"),
        "t.ndl:2:27: error: bad count 'x': `x` is not a whole number (hint: write e.g. count='100')"
    );
}

#[test]
fn missing_file_is_an_io_error() {
    let e = elvis_ndl::parse_file("/nonexistent/x.ndl").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Io);
    assert!(e
        .to_string()
        .starts_with("/nonexistent/x.ndl: error: cannot read the file"));
}

#[test]
fn fancy_rendering_puts_a_caret_under_the_offending_text() {
    let src = FIG2.replace("id='3']\n\t\t[IP", "id='3' latency='5 parsecs']\n\t\t[IP");
    let e = elvis_ndl::parse(&src, "fig2.ndl").unwrap_err();
    let out = e.render_fancy(&src);
    assert!(out.contains("bad latency '5 parsecs'"), "{out}");
    assert!(out.contains("fig2.ndl:2:"), "{out}");
    assert!(
        out.contains("[Network id='3' latency='5 parsecs']"),
        "{out}"
    );
    assert!(out.contains("─┬─") || out.contains('^'), "{out}");
    assert!(out.contains("help: write e.g. latency='2ms'"), "{out}");
    assert!(out.contains("ndl::bad_value"), "{out}");
}

#[test]
#[ignore = "prints a sample; run with --ignored --nocapture"]
fn print_fancy_sample() {
    let src = "[Networks]\n\t[Network id='1' latency='5 parsecs']\n";
    println!(
        "{}",
        elvis_ndl::parse(src, "lan.ndl")
            .unwrap_err()
            .render_fancy(src)
    );
}

#[test]
fn nesting_deeper_than_the_limit_is_an_indentation_error() {
    let src: String = (0..=elvis_ndl::MAX_DEPTH + 1)
        .map(|d| format!("{}[B]\n", "\t".repeat(d)))
        .collect();
    let e = elvis_ndl::parse(&src, "t.ndl").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Indentation);
    assert!(e.message.contains("more than 64 levels"), "{e}");
}

#[test]
fn a_flow_route_is_read_and_its_mistakes_point_at_the_value() {
    let route = |attrs: &str| machine("name='r' forward='yes'", &format!("\t\t[Route {attrs}]\n"));
    let sc = elvis_ndl::parse(
        &route("from='10.0.1.5' to='10.0.2.7' via='10.0.0.2' port='0x10'"),
        "t.ndl",
    )
    .unwrap();
    let r = &sc.machines[0].routes[0];
    assert_eq!(r.from, Some("10.0.1.5".parse().unwrap()));
    assert_eq!(
        (r.prefix, r.len, r.port),
        ("10.0.2.7".parse().unwrap(), 32, Some(16))
    );
    assert_eq!(
        fails(&route("from='10.0.1.5' to='10.0.2.0/24' via='10.0.0.2'")),
        "t.ndl:5:30: error: a per-flow route (from=) goes to one address, not a network (hint: write e.g. to='10.0.2.7')"
    );
    assert_eq!(
        fails(&route("to='10.0.2.7' via='10.0.0.2' port='9'")),
        "t.ndl:5:39: error: port= needs from=: it narrows a per-flow route (hint: write e.g. [Route from='10.0.1.5' to='10.0.2.7' via='10.0.0.2' port='9'])"
    );
    assert_eq!(
        kind(&route("from='10.0.1' to='10.0.2.7' via='10.0.0.2'")),
        ErrorKind::BadValue
    );
}

#[test]
fn decrement_ttl_on_a_host_is_refused_at_the_key() {
    assert_eq!(
        fails(&machine("name='a' decrement_ttl='no'", "")),
        "t.ndl:4:20: error: decrement_ttl applies to routers only (hint: add forward='yes': only a router forwards datagrams)"
    );
    let ok = machine("name='r' forward='yes' decrement_ttl='no'", "");
    let sc = elvis_ndl::parse(&ok, "t.ndl").unwrap();
    assert!(sc.machines[0].forward && sc.machines[0].keep_ttl);
    let ok = machine("name='r' forward='yes' decrement_ttl='yes'", "");
    assert!(!elvis_ndl::parse(&ok, "t.ndl").unwrap().machines[0].keep_ttl);
}

#[test]
fn a_ttl_outside_one_to_255_is_refused() {
    for bad in ["0", "256", "-1", "x"] {
        let e = fails(&format!("[Simulation ttl='{bad}']\n"));
        assert!(
            e.starts_with("t.ndl:1:18: error:") && e.contains("from 1 to 255"),
            "{e}"
        );
    }
    let sc = elvis_ndl::parse("[Simulation ttl='255']\n", "t.ndl").unwrap();
    assert_eq!(sc.sim.ttl, Some(255));
}

#[test]
fn icmp_rate_limits_are_read_and_bad_ones_refused() {
    let src = "[Simulation icmp_ratelimit='250ms' icmp_msgs_per_sec='0' icmp_msgs_burst='5']\n";
    let sc = elvis_ndl::parse(src, "t.ndl").unwrap();
    assert_eq!(sc.sim.icmp_ratelimit_ns, Some(250_000_000));
    assert_eq!(sc.sim.icmp_msgs_per_sec, Some(0));
    assert_eq!(sc.sim.icmp_msgs_burst, Some(5));
    let e = fails("[Simulation icmp_ratelimit='fast']\n");
    assert!(e.starts_with("t.ndl:1:29: error:"), "{e}");
    let e = fails("[Simulation icmp_msgs_burst='-1']\n");
    assert!(e.starts_with("t.ndl:1:30: error:"), "{e}");
}

#[test]
fn tap_machines_are_read_and_misuses_refused() {
    let sc = elvis_ndl::parse(
        &machine("name='linux1' tap='tap0' netns='ns1'", ""),
        "t.ndl",
    )
    .unwrap();
    let tap = sc.machines[0].tap.as_ref().expect("a TAP machine");
    assert_eq!(
        (tap.device.as_str(), tap.netns.as_deref()),
        ("tap0", Some("ns1"))
    );
    for (head, says) in [
        ("name='h' netns='ns1'", "netns needs tap"),
        ("name='h' count='2' tap='tap0'", "tap is for one machine"),
        ("name='h' tap='a-name-far-too-long'", "not a device name"),
    ] {
        let e = elvis_ndl::parse(&machine(head, ""), "t.ndl")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.ndl:") && e.contains(says), "{head}: {e}");
    }
}

#[test]
fn realtime_is_read_and_a_bad_value_refused() {
    let sc = elvis_ndl::parse("[Simulation realtime='yes']\n", "t.ndl").unwrap();
    assert!(sc.sim.realtime);
    let sc = elvis_ndl::parse("[Simulation seed='3']\n", "t.ndl").unwrap();
    assert!(!sc.sim.realtime);
    let e = fails("[Simulation realtime='fast']\n");
    assert!(
        e.starts_with("t.ndl:1:23: error:") && e.contains("yes or no"),
        "{e}"
    );
}

#[test]
fn offload_keys_are_read_with_linux_meaning_tso_gro_and_eight_microseconds() {
    let read = |head: &str| {
        elvis_ndl::parse(&machine(head, ""), "t.ndl")
            .unwrap()
            .machines[0]
            .offloads
    };
    let linux = read("name='h' count='3' offload='linux'").unwrap();
    assert_eq!((linux.tso, linux.gro, linux.rx_usecs), (true, true, 8));
    assert_eq!((linux.loc.line, linux.loc.col), (4, 30));
    let o = read("name='h' offload='linux' rx_usecs='0'").unwrap();
    assert_eq!((o.tso, o.gro, o.rx_usecs), (true, true, 0));
    let o = read("name='h' rx_usecs='20us'").unwrap();
    assert_eq!((o.tso, o.gro, o.rx_usecs), (false, false, 20));
    assert_eq!((o.loc.line, o.loc.col), (4, 20));
    let o = read("name='h' offload='GRO, tso' rx_usecs='1ms'").unwrap();
    assert_eq!((o.tso, o.gro, o.rx_usecs), (true, true, 1000));
    let o = read("name='h' offload='none'").unwrap();
    assert_eq!((o.tso, o.gro, o.rx_usecs), (false, false, 0));
    assert_eq!(read("name='h'"), None);
}

#[test]
fn an_unknown_offload_word_is_refused_at_the_word() {
    assert_eq!(
        fails(&machine("name='a' offload='tso,lro'", "")),
        "t.ndl:4:33: error: bad offload 'tso,lro': unknown offload `lro` (hint: did you mean `gro`?)"
    );
    assert_eq!(
        fails(&machine("name='a' offload='jumbo'", "")),
        "t.ndl:4:29: error: bad offload 'jumbo': unknown offload `jumbo` (hint: use tso, gro, linux (tso,gro and rx_usecs='8us') or none)"
    );
    assert_eq!(
        kind(&machine("name='a' offload='lro'", "")),
        ErrorKind::BadValue
    );
}

#[test]
fn offload_lists_with_repeats_gaps_or_linux_among_others_are_refused() {
    for (value, col, why) in [
        ("tso,tso", 33, "`tso` is listed twice"),
        ("linux,gro", 29, "`linux` cannot be combined"),
        ("none, tso", 29, "`none` cannot be combined"),
        ("tso,", 29, "an offload is missing"),
        ("", 29, "an offload is missing"),
    ] {
        let e = fails(&machine(&format!("name='a' offload='{value}'"), ""));
        assert!(
            e.starts_with(&format!(
                "t.ndl:4:{col}: error: bad offload '{value}': {why}"
            )),
            "{e}"
        );
    }
}

#[test]
fn a_bad_rx_usecs_is_refused_at_its_value() {
    for (value, why) in [
        ("-8us", "bad rx_usecs '-8us'"),
        ("8", "missing time unit"),
        ("1500ns", "whole microseconds"),
        ("fast", "bad rx_usecs 'fast'"),
    ] {
        let e = fails(&machine(
            &format!("name='a' offload='gro' rx_usecs='{value}'"),
            "",
        ));
        assert!(
            e.starts_with("t.ndl:4:44: error:") && e.contains(why),
            "{e}"
        );
        assert!(e.ends_with("(hint: write e.g. rx_usecs='8us')"), "{e}");
    }
}

#[test]
fn offloads_on_a_router_are_refused_at_the_key() {
    assert_eq!(
        fails(&machine("name='r' forward='yes' offload='linux'", "")),
        "t.ndl:4:34: error: offload applies to hosts only (hint: a router (forward='yes') forwards frame by frame and ignores NIC offloads; remove the key)"
    );
    // The key is refused wherever `forward` stands, and each key is reported.
    let src = machine("name='r' rx_usecs='8us' forward='yes' offload='tso'", "");
    let errors = elvis_ndl::parse_all(&src, "t.ndl").unwrap_err();
    let at: Vec<(u32, u32)> = errors.iter().map(|e| (e.loc.line, e.loc.col)).collect();
    assert_eq!(at, [(4, 20), (4, 49)]);
    assert!(errors[0]
        .to_string()
        .contains("rx_usecs applies to hosts only"));
}

#[test]
fn slow_start_is_read_and_a_bad_value_refused() {
    let sc = elvis_ndl::parse("[Simulation slow_start='HyStart++']\n", "t.ndl").unwrap();
    assert_eq!(sc.sim.tcp_slow_start.as_deref(), Some("hystart++"));
    let sc = elvis_ndl::parse("[Simulation seed='3']\n", "t.ndl").unwrap();
    assert_eq!(sc.sim.tcp_slow_start, None);
    let e = fails("[Simulation slow_start='vegas']\n");
    assert!(
        e.starts_with("t.ndl:1:25: error:") && e.contains("hystart, hystart++ or standard"),
        "{e}"
    );
}
