//! `[Topology]` blocks end to end: the examples' ping RTTs equal their
//! closed forms, applications attach to generated machines, and bad
//! topologies get one located error line.

use crate::*;

/// Returns the value of metric `name` published on `machine`.
fn metric(r: &Value, machine: &str, name: &str) -> f64 {
    r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["machine"] == machine && m["name"] == name)
        .unwrap_or_else(|| panic!("no metric {name} on {machine}: {}", r["metrics"]))["value"]
        .as_f64()
        .unwrap()
}

fn run_example(name: &str) -> Value {
    let dir = temp_dir();
    let report = dir.path().join("r.json");
    elvis(args!["run", &example(name), "--report", &report]).expect_code(0);
    read_report(&report)
}

#[test]
fn the_fattree_example_pings_across_the_core_in_twelve_hops_of_the_closed_form() {
    let r = run_example("fattree-4.ndl");
    // A 98-byte echo frame at 1 Gbit/s: 784 ns, plus 5 µs per link.
    let per_link = 784.0 + 5_000.0;
    assert_eq!(metric(&r, "host-0", "rtt_max_ns"), 12.0 * per_link);
    assert_eq!(metric(&r, "host-0", "rtt_min_ns"), 12.0 * per_link);
    assert_eq!(metric(&r, "host-1", "rtt_max_ns"), 8.0 * per_link);
    assert_eq!(r["machines"], 36);
    assert_eq!(r["networks"].as_array().unwrap().len(), 48);
}

#[test]
fn the_dumbbell_example_pings_over_two_access_links_and_the_bottleneck() {
    let r = run_example("dumbbell.ndl");
    let one_way = 2.0 * (7_840.0 + 1e6) + 78_400.0 + 20e6;
    assert_eq!(metric(&r, "left-0", "rtt_min_ns"), 2.0 * one_way);
}

#[test]
fn the_topology_zoo_example_follows_the_least_latency_path() {
    let r = run_example("topology-zoo.ndl");
    // Seattle–Boise (1 Gbit/s, 6 ms), Boise–Denver (2.5 Gbit/s, 7 ms),
    // Denver–Kansas City (1 Gbit/s, 5 ms), two 1 Gbit/s access links.
    let one_way = 4.0 * 784.0 + 314.0 + 18e6;
    assert_eq!(metric(&r, "host-0", "rtt_min_ns"), 2.0 * one_way);
}

/// Writes `files` into a fresh directory and runs `elvis run t.ndl` there.
fn run_in(files: &[(&str, &str)]) -> (Outcome, crate::TempDir) {
    let dir = temp_dir();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let report = dir.path().join("r.json");
    let out = elvis_in(dir.path(), args!["run", "t.ndl", "--report", &report]);
    (out, dir)
}

#[test]
fn a_machine_block_without_networks_puts_applications_on_generated_machines() {
    let ndl = "[Topology type='dumbbell' n='3' bandwidth='100Mbps' latency='1ms' bottleneck_bandwidth='10Mbps' bottleneck_latency='5ms']\n\
[Machines]\n\
\t[Machine name='right']\n\
\t\t[Applications]\n\
\t\t\t[Application name='bulk_receive' port='5001' bytes='200KB']\n\
\t[Machine name='left' count='3']\n\
\t\t[Applications]\n\
\t\t\t[Application name='bulk_send' to='right-{i}' port='5001' bytes='200KB']\n";
    let (out, dir) = run_in(&[("t.ndl", ndl)]);
    out.expect_code(0);
    let r = read_report(&dir.path().join("r.json"));
    let apps = r["applications"].as_array().unwrap();
    let fin = |group: &str| apps.iter().find(|a| a["group"] == group).unwrap()["finished"].clone();
    assert_eq!(fin("right"), 3);
    assert_eq!(fin("left"), 3);
}

/// Checks the first stderr line: `t.ndl:LINE:COL: error: …` with `col` the
/// column of `at` in `ndl`, containing every fragment.
#[track_caller]
fn assert_located(files: &[(&str, &str)], at: &str, fragments: &[&str]) {
    let ndl = files[0].1;
    let off = ndl.find(at).expect("marker in the file");
    let line = ndl[..off].matches('\n').count() + 1;
    let col = off - ndl[..off].rfind('\n').map_or(0, |i| i + 1) + 1;
    let (out, _dir) = run_in(files);
    out.expect_code(2);
    let first = out.first_stderr_line();
    let place = format!("t.ndl:{line}:{col}: error: ");
    assert!(
        first.starts_with(&place),
        "expected {place}\n{}",
        out.stderr
    );
    for f in fragments {
        assert!(first.contains(f), "`{f}` not in: {first}");
    }
}

#[test]
fn an_odd_zero_or_missing_k_is_located() {
    assert_located(
        &[("t.ndl", "[Topology type='fattree' k='5']\n")],
        "5'",
        &["bad k '5'", "even"],
    );
    assert_located(
        &[("t.ndl", "[Topology type='fattree' k='0']\n")],
        "0'",
        &["at least 2"],
    );
    assert_located(
        &[("t.ndl", "[Topology type='fattree' bandwidth='1Gbps']\n")],
        "[Topology",
        &["needs a `k`"],
    );
}

#[test]
fn an_unknown_type_or_key_gets_a_suggestion() {
    assert_located(
        &[("t.ndl", "[Topology type='fatree' k='4']\n")],
        "fatree",
        &["unknown topology type", "did you mean 'fattree'"],
    );
    assert_located(
        &[(
            "t.ndl",
            "[Topology type='fattree' k='4' bandwith='1Gbps']\n",
        )],
        "bandwith",
        &["unknown key", "did you mean `bandwidth`"],
    );
    assert_located(
        &[("t.ndl", "[Topology type='chain' n='3' k='4']\n")],
        "k=",
        &["unknown key `k`"],
    );
}

#[test]
fn a_gml_file_that_does_not_parse_is_named_with_its_own_line_and_column() {
    let gml = "graph [\n  node [ id 0 ]\n  edge [ source 0 target 3 ]\n]\n";
    let ndl = "[Topology type='graph' file='bad.gml']\n";
    assert_located(
        &[("t.ndl", ndl), ("bad.gml", gml)],
        "bad.gml'",
        &["bad.gml:3:26:", "target 3 is not the id of a node"],
    );
    assert_located(
        &[("t.ndl", "[Topology type='graph' file='none.gml']\n")],
        "none.gml'",
        &["cannot read the graph file"],
    );
}

#[test]
fn a_disconnected_graph_is_refused_naming_its_components() {
    let gml = "graph [ node [ id 0 label \"Oslo\" ] node [ id 1 label \"Rome\" ] node [ id 2 label \"Bern\" ]\n edge [ source 1 target 2 ] ]\n";
    let ndl = "[Topology type='graph' file='split.gml']\n";
    assert_located(
        &[("t.ndl", ndl), ("split.gml", gml)],
        "split.gml'",
        &["not connected", "{Oslo} {Rome, Bern}"],
    );
}

#[test]
fn a_declared_machine_named_like_a_generated_one_is_a_clash() {
    let ndl = "[Topology type='star' n='4']\n[Networks]\n\t[Network id='lan']\n[Machines]\n\t[Machine name='host-2']\n\t\t[Networks]\n\t\t\t[Network id='lan']\n";
    assert_located(
        &[("t.ndl", ndl)],
        "[Machine name='host-2']",
        &["'host-2' clashes", "line 1"],
    );
}

#[test]
fn every_topology_type_builds_from_ndl_and_its_hosts_reach_each_other() {
    // (block, pinging machine, target, links each way); 1 Gbit/s, 5 µs
    // links: RTT = 2 × links × (784 ns + 5 µs).
    let cases = [
        (
            "[Topology type='chain' n='3' bandwidth='1Gbps' latency='5us']",
            "host-0",
            "host-1",
            4.0,
        ),
        (
            "[Topology type='star' n='5' hub='router' bandwidth='1Gbps' latency='5us']",
            "host-0",
            "host-4",
            2.0,
        ),
        (
            "[Topology type='tree' depth='2' fanout='3' bandwidth='1Gbps' latency='5us']",
            "host-0",
            "host-8",
            4.0,
        ),
        (
            "[Topology type='torus2d' x='4' y='3' bandwidth='1Gbps' latency='5us']",
            "host-0",
            "host-6",
            5.0,
        ),
        (
            "[Topology type='torus3d' x='3' y='3' z='3' bandwidth='1Gbps' latency='5us']",
            "host-0",
            "host-26",
            5.0,
        ),
    ];
    for (block, from, to, links) in cases {
        let ndl = format!("{block}\n[Machines]\n\t[Machine name='{from}']\n\t\t[Applications]\n\t\t\t[Application name='ping' to='{to}' count='1']\n");
        let (out, dir) = run_in(&[("t.ndl", &ndl)]);
        out.expect_code(0);
        let r = read_report(&dir.path().join("r.json"));
        assert_eq!(
            metric(&r, from, "rtt_min_ns"),
            2.0 * links * 5_784.0,
            "{block}"
        );
    }
}

/// `[Simulation multipath=…]` on a FatTree(4): one TCP transfer from pod 0
/// to pod 3 crosses the core. Per flow, its segments take one of the
/// four core switches and its ACKs at most one other (also on a random
/// simple path); per packet (hashed or drawn at random), every core switch
/// carries a fair share of the segments (each between 15 and
/// 35 % of the transfer's datagrams, against 25 % expected; the binomial
/// spread of 2,000 datagrams over four is about 1 %), and the bytes still
/// all arrive.
#[test]
fn packet_multipath_sprays_one_flow_over_every_core_switch() {
    let cores = |mode: &str| -> Vec<u64> {
        let dir = temp_dir();
        let file = dir.path().join("spray.ndl");
        std::fs::write(
            &file,
            format!(
                "[Simulation seed='1' multipath='{mode}']\n\
                 [Topology type='fattree' k='4' bandwidth='1Gbps' latency='5us']\n\
                 [Machines]\n\
                 \t[Machine name='host-0']\n\t\t[Applications]\n\
                 \t\t\t[Application name='bulk_send' to='host-15' port='80' bytes='2MB']\n\
                 \t[Machine name='host-15']\n\t\t[Applications]\n\
                 \t\t\t[Application name='bulk_receive' port='80' bytes='2MB']\n"
            ),
        )
        .unwrap();
        let report = dir.path().join("r.json");
        elvis(args!["run", &file, "--report", &report, "--quiet"]).expect_code(0);
        let r = read_report(&report);
        assert!(
            metric(&r, "host-15", "goodput_bps") > 0.0,
            "the transfer ended"
        );
        let mut v: Vec<u64> = r["routers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["machine"].as_str().unwrap().starts_with("core-"))
            .map(|x| {
                x["interfaces"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|i| i["received"].as_u64().unwrap())
                    .sum()
            })
            .collect();
        v.resize(4, 0);
        v
    };
    let flow = cores("flow");
    assert!(
        flow.iter().filter(|&&n| n > 0).count() <= 2,
        "per flow: {flow:?}"
    );
    // Random simple paths: in a FatTree(4) the paths across pods are the
    // shortest ones, and a flow keeps its path.
    let path = cores("random_path");
    assert!(
        path.iter().filter(|&&n| n > 0).count() <= 2,
        "random path: {path:?}"
    );
    for mode in ["packet", "random"] {
        let packet = cores(mode);
        let total: u64 = packet.iter().sum();
        assert!(total > 2_000, "{packet:?}");
        for n in &packet {
            let share = *n as f64 / total as f64;
            assert!(
                (0.15..0.35).contains(&share),
                "per packet ({mode}): {packet:?}"
            );
        }
    }
    // A bad value is located.
    let dir = temp_dir();
    let file = dir.path().join("bad.ndl");
    std::fs::write(&file, "[Simulation multipath='sideways']\n").unwrap();
    let out = elvis(args!["check", &file]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("bad.ndl:1:24: error:")
            && out.stderr.contains("flow, packet, random or random_path"),
        "{}",
        out.stderr
    );
}
