//! The builder against NDL: every key of every topology generator reaches
//! the networks it builds.
#![forbid(unsafe_code)]

use elvis_sim::qdisc::{Limit, QdiscConfig};
use elvis_sim::{NetworkConfig, NetworkKind, Simulation};

mod parallel;
mod traffic;

/// Each generator with its required keys (and the networks that carry
/// the common link keys: all of them but a dumbbell's bottleneck).
const GENERATORS: &[(&str, &str)] = &[
    ("fattree", "k='4'"),
    ("dumbbell", "n='3'"),
    ("chain", "n='3'"),
    ("star", "n='5'"),
    ("star", "n='5' hub='router'"),
    ("tree", "depth='2' fanout='3'"),
    ("torus2d", "x='3' y='4'"),
    ("torus3d", "x='3' y='3' z='3'"),
    ("graph", "file='plain.gml'"),
];

/// Parses and builds one `[Topology]` line.
fn build(line: &str) -> Simulation {
    let ndl = format!("{line}\n");
    let mut sc = elvis_ndl::parse(&ndl, "t.ndl").unwrap_or_else(|e| panic!("{line}: {e}"));
    // A graph file whose edges carry no properties of their own (those
    // of a file win over the block's keys, as documented).
    let dir = std::env::temp_dir().join(format!("elvis-build-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let gml = "graph [\n node [ id 0 ]\n node [ id 1 ]\n node [ id 2 ]\n edge [ source 0 target 1 ]\n edge [ source 1 target 2 ]\n]\n";
    std::fs::write(dir.join("plain.gml"), gml).expect("the graph file is written");
    sc.base_dir = Some(dir.to_string_lossy().into_owned());
    match elvis_build::build(&sc, None) {
        Ok(b) => b.sim,
        Err(e) => panic!("{line}: {e}"),
    }
}

/// The networks of `sim` other than a dumbbell's bottleneck, and that one.
fn networks(sim: &Simulation) -> (Vec<&NetworkConfig>, Option<&NetworkConfig>) {
    let all: Vec<&NetworkConfig> = (0..sim.network_count() as u32)
        .map(|n| sim.network_config(n).expect("a network"))
        .collect();
    let bottleneck = all.iter().copied().find(|c| c.name == "bottleneck");
    let rest = all.into_iter().filter(|c| c.name != "bottleneck").collect();
    (rest, bottleneck)
}

/// A key, its value, and what every affected network must show.
type Check = fn(&NetworkConfig) -> bool;

const COMMON: &[(&str, &str, Check)] = &[
    ("bandwidth", "250Mbps", |c| {
        c.bandwidth_bps == Some(250_000_000)
    }),
    ("latency", "7us", |c| c.latency_ns == 7_000),
    ("loss", "2%", |c| c.loss == 0.02),
    ("mtu", "9000", |c| c.mtu == 9000),
    ("queue", "77", |c| {
        // A switch's ports queue 77 frames; a link's NICs hold 77 waiting
        // plus the one on the wire.
        c.queue == Some(77) && (c.kind == NetworkKind::Switch || c.txqueuelen == 78)
    }),
    // A discipline with a parameter (written as `qdisc='droptail'
    // limit='42'`; for the bottleneck both keys get the prefix).
    ("qdisc", "droptail' limit='42", |c| {
        c.qdisc.as_deref()
            == Some(&QdiscConfig::DropTail {
                limit: Limit::Packets(42),
            })
    }),
    ("qdisc", "red' red_min='5' red_max='15", |c| {
        matches!(c.qdisc.as_deref(), Some(QdiscConfig::Red(_)))
    }),
];

#[test]
fn every_common_topology_key_reaches_every_generated_network() {
    for (kind, required) in GENERATORS {
        for (key, value, holds) in COMMON {
            let line =
                format!("[Topology type='{kind}' {required} bandwidth='1Gbps' {key}='{value}']");
            // `bandwidth` is given twice only when it is the key itself.
            let line = if *key == "bandwidth" {
                format!("[Topology type='{kind}' {required} {key}='{value}']")
            } else {
                line
            };
            let sim = build(&line);
            let (nets, bottleneck) = networks(&sim);
            assert!(!nets.is_empty(), "{line}: no networks");
            for c in nets {
                assert!(holds(c), "{line}: network '{}' is {c:?}", c.name);
            }
            if let Some(b) = bottleneck {
                // The topology's MTU covers the bottleneck too; its other
                // properties have their own keys.
                if *key == "mtu" {
                    assert!(holds(b), "{line}: the bottleneck is {b:?}");
                } else if *key != "bandwidth" {
                    assert!(!holds(b), "{line}: the bottleneck took '{key}': {b:?}");
                }
            }
        }
    }
}

#[test]
fn every_bottleneck_key_reaches_the_dumbbells_bottleneck_only() {
    for (key, value, holds) in COMMON.iter().filter(|c| c.0 != "mtu") {
        let rate = if *key == "bandwidth" {
            ""
        } else {
            " bottleneck_bandwidth='10Mbps'"
        };
        let value = value.replace("' ", "' bottleneck_");
        let line = format!(
            "[Topology type='dumbbell' n='2' bandwidth='1Gbps'{rate} bottleneck_{key}='{value}']"
        );
        let sim = build(&line);
        let (nets, bottleneck) = networks(&sim);
        let b = bottleneck.expect("a bottleneck");
        assert!(holds(b), "{line}: the bottleneck is {b:?}");
        for c in nets {
            assert!(!holds(c), "{line}: access link '{}' took it: {c:?}", c.name);
        }
    }
}

#[test]
fn a_link_without_a_queue_keeps_the_default_nic_queue() {
    let sim = build("[Topology type='chain' n='2' bandwidth='1Gbps']");
    let (nets, _) = networks(&sim);
    for c in nets {
        assert_eq!(c.queue, None);
        assert_eq!(c.txqueuelen, NetworkConfig::DEFAULT_TXQUEUELEN);
    }
}

#[test]
fn a_discipline_key_without_qdisc_is_refused_at_its_place() {
    let ndl = "[Topology type='dumbbell' n='2' bottleneck_limit='9']\n";
    let e = elvis_ndl::parse(ndl, "t.ndl").expect_err("limit without a qdisc");
    let text = e.to_string();
    assert!(text.contains("bottleneck_limit"), "{text}");
    assert!(text.contains("t.ndl:1:"), "{text}");
}

#[test]
fn a_block_naming_one_generated_machine_replaces_its_groups_applications_there() {
    // Senders on every host but host-0, which is the sink: the group's
    // block does not also put a sender on host-0.
    let ndl = "[Topology type='star' n='4' hub='router']\n[Machines]\n\
        \t[Machine name='host']\n\t\t[Applications]\n\
        \t\t\t[Application name='send_message' message='hi from {name}' to='host-0' port='0xbeef']\n\
        \t[Machine name='host-0']\n\t\t[Applications]\n\
        \t\t\t[Application name='capture' port='0xbeef' message_count='3']\n";
    let sc = elvis_ndl::parse(ndl, "t.ndl").unwrap_or_else(|e| panic!("{e}"));
    let mut built = elvis_build::build(&sc, None).unwrap_or_else(|e| panic!("{e}"));
    let report = built.sim.run();
    let apps: Vec<(&str, u64, u64)> = report
        .applications
        .iter()
        .map(|a| (a.application.as_str(), a.instances, a.finished))
        .collect();
    assert_eq!(
        apps,
        [("capture", 1, 1), ("send_message", 3, 3)],
        "{apps:?}"
    );
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

/// Scenarios with per-instance options, a counted group, and a
/// generated group given applications by name and as a whole.
const MIXED: &[&str] = &[
    "[Simulation seed='7']
[Networks]
\t[Network id='lan' bandwidth='1Gbps']
[Machines]
\t[Machine name='sink']
\t\t[Networks]
\t\t\t[Network id='lan' ip='10.0.0.1']
\t\t[Applications]
\t\t\t[Application name='capture' port='9' message_count='3']
\t[Machine name='s' count='3']
\t\t[Networks]
\t\t\t[Network id='lan']
\t\t[Applications]
\t\t\t[Application name='send_message' to='sink' port='9' size='1{i}']
",
    "[Simulation seed='7']
[Topology type='star' n='4' hub='router' bandwidth='1Gbps' latency='10us']
[Machines]
\t[Machine name='host']
\t\t[Applications]
\t\t\t[Application name='capture' port='9' message_count='2']
\t[Machine name='host-0']
\t\t[Applications]
\t\t\t[Application name='send_message' to='host-3' port='9' size='100']
\t[Machine name='host-1']
\t\t[Applications]
\t\t\t[Application name='send_message' to='host-3' port='9' size='64']
",
];

#[test]
fn build_owned_runs_exactly_as_build() {
    for ndl in MIXED {
        let sc = elvis_ndl::parse(ndl, "t.ndl").unwrap_or_else(|e| panic!("{e}"));
        let mut a = elvis_build::build(&sc, None).expect("builds");
        let mut b = elvis_build::build_owned(sc, None).expect("builds owned");
        assert_eq!(a.groups, b.groups);
        let (ra, rb) = (a.sim.run(), b.sim.run());
        assert!(ra.events > 0);
        assert_eq!(ra.deterministic_json(), rb.deterministic_json());
    }
}

/// Builds and runs the DHCP example with its LANs ideal (no bandwidth:
/// where broadcasts are fanned out selectively) and 40 hosts on each.
fn dhcp_example(select: bool) -> elvis_sim::report::Report {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/ndl/dhcp.ndl");
    let text = std::fs::read_to_string(path)
        .expect("the example")
        .replace("count='4'", "count='40'")
        .replace("bandwidth='100Mbps' ", "")
        .replace("until='1200s'", "until='700s'");
    let sc = elvis_ndl::parse(&text, "dhcp.ndl").expect("it parses");
    let mut built = elvis_build::build(&sc, None).expect("it builds");
    built.sim.set_broadcast_select(select);
    let limits = elvis_sim::RunLimits { until: built.until };
    built.sim.run_with(limits, &mut |_| {})
}

/// The selective fan-out of DHCP broadcasts (`stack::dhcp::fanout`) only
/// saves work: every counter, lease and drop is the same as with a copy
/// of each broadcast to every port.
#[test]
fn dhcp_broadcasts_fanned_out_selectively_give_the_same_report_as_copies_to_every_port() {
    let mut with = dhcp_example(true);
    let mut without = dhcp_example(false);
    assert_eq!(with.dhcp.as_ref().map(|d| d.configured), Some(120));
    // Fewer events (no arrival event per skipped port) is the point.
    assert!(
        with.events < without.events / 3,
        "{} vs {}",
        with.events,
        without.events
    );
    (with.events, without.events) = (0, 0);
    assert_eq!(with.deterministic_json(), without.deterministic_json());
}

#[test]
fn an_address_pinned_twice_is_refused_at_the_second_naming_the_first() {
    let ndl = "[Networks]\n\t[Network id='lan' type='switch']\n\t\t[IP subnet='10.0.0.0/24']\n\
               [Machines]\n\t[Machine name='a']\n\t\t[Networks]\n\t\t\t[Network id='lan' ip='10.0.0.7']\n\
               \t[Machine name='b']\n\t\t[Networks]\n\t\t\t[Network id='lan' ip='10.0.0.9']\n\
               \t[Machine name='c']\n\t\t[Networks]\n\t\t\t[Network id='lan' ip='10.0.0.7']\n";
    let sc = elvis_ndl::parse(ndl, "t.ndl").unwrap_or_else(|e| panic!("{e}"));
    let Err(e) = elvis_build::build(&sc, None) else {
        panic!("an address pinned twice was accepted");
    };
    assert_eq!(e.message, "address 10.0.0.7 is claimed twice");
    assert_eq!(e.loc.line, 13, "at the second claim");
    assert_eq!(e.hint.as_deref(), Some("also claimed at line 7"));
}

#[test]
fn a_link_with_one_end_is_refused_at_the_link() {
    // NDL refuses such a link itself: the scenario is changed after
    // parsing, as a program building one by hand might leave it.
    let ndl = "[Networks]\n\t[Network id='l' type='link']\n\t\t[IP subnet='10.0.0.0/30']\n\
               [Machines]\n\t[Machine name='a']\n\t\t[Networks]\n\t\t\t[Network id='l']\n\
               \t[Machine name='b']\n\t\t[Networks]\n\t\t\t[Network id='l']\n";
    let mut sc = elvis_ndl::parse(ndl, "t.ndl").unwrap_or_else(|e| panic!("{e}"));
    sc.machines[1].networks.clear();
    let Err(e) = elvis_build::build(&sc, None) else {
        panic!("a link with one end was accepted");
    };
    assert_eq!(
        e.message,
        "link 'l' joins 1 machine(s); a link joins exactly 2"
    );
    assert_eq!(e.loc.line, 2);
}
