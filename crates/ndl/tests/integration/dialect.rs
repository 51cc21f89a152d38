//! Valid files: the Elvis dialect unchanged, and the extensions.

use crate::{ok, FIG2};
use elvis_ndl::ErrorKind;
use elvis_scenario::{Loc, NetworkKind};
use std::net::Ipv4Addr;

fn examples_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/ndl")
}

fn check_fig2(sc: &elvis_scenario::Scenario, sender_count: Option<u32>, message_count: &str) {
    assert_eq!(sc.sim.seed, 1);
    assert_eq!(sc.sim.until, None);
    assert_eq!(sc.networks.len(), 1);
    let net = &sc.networks[0];
    assert_eq!(net.id, "3");
    assert_eq!(net.kind, NetworkKind::Switch);
    assert_eq!(net.bandwidth_bps, None);
    assert_eq!(
        (net.latency_ns, net.loss, net.mtu, net.queue),
        (0, 0.0, 1500, None)
    );
    let ip = Ipv4Addr::new(123, 45, 67, 89);
    assert_eq!((net.addresses[0].first, net.addresses[0].last), (ip, ip));
    assert_eq!(net.loc.line, 2);
    let [sender, capturer] = &sc.machines[..] else {
        panic!("two machines expected")
    };
    assert_eq!(
        (sender.name.as_str(), sender.count),
        ("sender", sender_count)
    );
    assert_eq!((capturer.name.as_str(), capturer.count), ("capturer", None));
    for m in [sender, capturer] {
        assert_eq!(m.networks.len(), 1);
        assert_eq!(m.networks[0].name, "3");
        let protos: Vec<&str> = m.protocols.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(protos, ["IPv4", "UDP"]);
        assert!(m.protocols[0].params.0.is_empty());
    }
    let send = &sender.applications[0];
    assert_eq!(send.name, "send_message");
    assert_eq!(send.params.value("message"), Some("Hello!"));
    assert_eq!(send.params.value("to"), Some("capturer"));
    assert_eq!(send.params.value("port"), Some("0xbeef"));
    assert_eq!(send.params.get("name"), None, "the name is not an option");
    assert_eq!(send.params.get("to").unwrap().loc.line, 13);
    let cap = &capturer.applications[0];
    assert_eq!(cap.name, "capture");
    let keys: Vec<&str> = cap.params.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(keys, ["message", "ip", "port", "message_count"]);
    assert_eq!(cap.params.value("ip"), Some("123.45.67.89"));
    assert_eq!(cap.params.value("message_count"), Some(message_count));
}

#[test]
fn fig2_with_tabs_lowers_to_the_expected_scenario() {
    let sc = ok(FIG2);
    check_fig2(&sc, None, "1");
    // `to='capturer'` is on line 13, after four tabs and `to='`.
    assert_eq!(
        sc.machines[0].applications[0].params.get("to").unwrap().loc,
        Loc {
            offset: 266,
            len: 8,
            line: 13,
            col: 9
        }
    );
}

#[test]
fn fig2_with_four_spaces_and_crlf_lowers_the_same() {
    let spaced = FIG2.replace('\t', "    ").replace('\n', "\r\n");
    let a = ok(FIG2);
    let b = ok(&spaced);
    check_fig2(&b, None, "1");
    let values = |sc: &elvis_scenario::Scenario| -> Vec<String> {
        sc.machines
            .iter()
            .flat_map(|m| &m.applications)
            .flat_map(|a| a.params.iter())
            .map(|p| format!("{}={}", p.key, p.value))
            .collect()
    };
    assert_eq!(values(&a), values(&b));
    assert_eq!(
        b.machines[1].applications[0].params.value("message_count"),
        Some("1")
    );
}

#[test]
fn elvis_benchmark_file_with_a_million_senders_parses() {
    let sc = elvis_ndl::parse_file(examples_dir().join("elvis-basic-1000000.ndl")).unwrap();
    check_fig2(&sc, Some(1_000_000), "1000000");
    assert_eq!(sc.machines[0].instances(), 1_000_000);
}

#[test]
fn every_example_file_parses() {
    let mut n = 0;
    for entry in std::fs::read_dir(examples_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "ndl") {
            if let Err(e) = elvis_ndl::parse_file(&path) {
                panic!("{e}");
            }
            n += 1;
        }
    }
    assert!(n >= 3);
}

#[test]
fn lan_example_lowers_every_extension() {
    let sc = elvis_ndl::parse_file(examples_dir().join("lan.ndl")).unwrap();
    assert_eq!((sc.sim.seed, sc.sim.until), (42, Some(10_000_000_000)));
    assert!(sc.sim.loc.is_known());
    let lan = &sc.networks[0];
    assert_eq!(lan.kind, NetworkKind::Switch);
    assert_eq!(lan.bandwidth_bps, Some(1_000_000_000));
    assert_eq!(lan.latency_ns, 50_000);
    assert_eq!((lan.loss, lan.mtu, lan.queue), (0.001, 1500, Some(100)));
    assert_eq!(lan.subnet, Some((Ipv4Addr::new(10, 0, 1, 0), 24)));
    assert_eq!(lan.addresses[1].first, Ipv4Addr::new(10, 0, 1, 10));
    assert_eq!(lan.addresses[1].last, Ipv4Addr::new(10, 0, 1, 12));
    let link = &sc.networks[1];
    assert_eq!(link.kind, NetworkKind::Link);
    assert_eq!(
        (link.bandwidth_bps, link.latency_ns, link.queue),
        (Some(10_000_000), 20_000_000, Some(64))
    );
    assert_eq!(link.corruption, 0.0001);
    assert_eq!(
        (link.duplicate, link.reorder, link.reorder_delay_ns),
        (0.01, 0.01, Some(5_000_000))
    );
    let client = &sc.machines[0];
    assert_eq!(client.count, Some(3));
    assert_eq!(
        client.applications[0].params.value("message"),
        Some("hello from {name}")
    );
}

const PINGPONGARP: &str = "\
[Template name='unused']
    [Protocol name='IPv4']
[Networks]
    [Network id='1']
        [IP range='123.45.67.89-91']
    [Network id='2']
        [IP range='123.45.67.92-95']
[Machines]
    [Machine name='sender']
        [Networks]
            [Network id='1']
        [Protocols]
            [Protocol name='IPv4']
            [Protocol name='UDP']
            [Protocol name='ARP' local='123.45.67.89' default='123.45.67.90']
        [Applications]
            [Application name='ping_pong' starter='true' ip='123.45.67.89' to='receiver'
                local_port='0xbeef' remote_port='0xface']
    [Machine name='router']
        [Networks]
            [Network id='1']
            [Network id='2']
        [Protocols]
            [Protocol name='IPv4']
            [Protocol name='ARP']
        [Applications]
            [Application name='rip_router']
                [IP ip='123.45.67.90']
                [IP ip='123.45.67.92']
                [RouterEntry dest='123.45.67.93' pci_slot='1']
                [RouterEntry dest='123.45.67.89' pci_slot='0']
    [Machine name='receiver']
        [Networks]
            [Network id='2']
        [Protocols]
            [Protocol name='IPv4']
            [Protocol name='UDP']
            [Protocol name='ARP' local='123.45.67.93' default='123.45.67.92']
        [Applications]
            [Application name='ping_pong' starter='false' ip='123.45.67.93' to='sender'
                local_port='0xface' remote_port='0xbeef']
";

#[test]
fn elvis_router_file_keeps_ranges_and_nested_router_blocks() {
    let sc = ok(PINGPONGARP);
    let r = &sc.networks[1].addresses[0];
    assert_eq!(
        (r.first, r.last),
        (
            Ipv4Addr::new(123, 45, 67, 92),
            Ipv4Addr::new(123, 45, 67, 95)
        )
    );
    let arp = &sc.machines[0].protocols[2];
    assert_eq!(arp.name, "ARP");
    assert_eq!(arp.params.value("local"), Some("123.45.67.89"));
    assert_eq!(arp.params.value("DEFAULT"), Some("123.45.67.90"));
    let router = &sc.machines[1];
    assert_eq!(
        router
            .networks
            .iter()
            .map(|r| r.name.as_str())
            .collect::<Vec<_>>(),
        ["1", "2"]
    );
    let rip = &router.applications[0];
    assert_eq!(rip.name, "rip_router");
    let kws: Vec<&str> = rip.children.iter().map(|b| b.keyword.as_str()).collect();
    assert_eq!(kws, ["IP", "IP", "RouterEntry", "RouterEntry"]);
    assert_eq!(rip.children[2].params.value("dest"), Some("123.45.67.93"));
    assert_eq!(rip.children[2].params.value("pci_slot"), Some("1"));
    assert_eq!(rip.children[2].loc.line, 30);
}

#[test]
fn keywords_and_keys_are_case_insensitive_and_quotes_unescape() {
    let src = "[NETWORKS]\n\t[network ID='1' Latency = \"1ms\"]\n[machines]\n\t[MACHINE Name='a\\'b']\n\t\t[networks]\n\t\t\t[NETWORK id='1']\n\t\t[applications]\n\t\t\t[application NAME='x' Msg='back\\\\slash \\n']\n";
    let sc = ok(src);
    assert_eq!(sc.networks[0].latency_ns, 1_000_000);
    assert_eq!(sc.machines[0].name, "a'b");
    let p = &sc.machines[0].applications[0].params.0[0];
    assert_eq!(
        (p.key.as_str(), p.value.as_str()),
        ("msg", "back\\slash \\n")
    );
}

#[test]
fn comments_blank_lines_and_trailing_comments_are_ignored() {
    let src = "# a comment\n\n// another\n[Networks] # trailing\n\t# indented comment\n\n\t[Network id='1'] // trailing\n";
    assert_eq!(ok(src).networks.len(), 1);
}

#[test]
fn empty_file_is_an_empty_scenario() {
    assert_eq!(ok(""), elvis_scenario::Scenario::default());
    assert_eq!(ok("\u{feff}\n\n"), elvis_scenario::Scenario::default());
}

#[test]
fn machines_may_come_before_the_networks_they_use() {
    let sc = ok("[Machines]\n\t[Machine name='a']\n\t\t[Networks]\n\t\t\t[Network id='9']\n[Networks]\n\t[Network id='9']\n");
    assert_eq!(sc.machines[0].networks[0].name, "9");
}

#[test]
fn counted_machines_keep_placeholders_verbatim() {
    let src = "[Machines]\n\t[Machine name='h' count='4']\n\t\t[Applications]\n\t\t\t[Application name='x' ip='10.0.0.{i}' who='{name}']\n\t\t\t\t[Peer to='{name}-peer']\n";
    let sc = ok(src);
    let app = &sc.machines[0].applications[0];
    assert_eq!(app.params.value("ip"), Some("10.0.0.{i}"));
    assert_eq!(app.children[0].params.value("to"), Some("{name}-peer"));
}

#[test]
fn reorder_and_duplicate_keys_lower_to_the_network() {
    let sc = ok("[Networks]\n\t[Network id='1' reorder='2.5%' reorder_delay='3ms' duplicate='0.01']\n\t[Network id='2']\n");
    let n = &sc.networks[0];
    assert_eq!(
        (n.reorder, n.reorder_delay_ns, n.duplicate),
        (0.025, Some(3_000_000), 0.01)
    );
    let plain = &sc.networks[1];
    assert_eq!(
        (plain.reorder, plain.reorder_delay_ns, plain.duplicate),
        (0.0, None, 0.0)
    );
}

#[test]
fn link_with_two_machines_is_accepted() {
    let src = "[Networks]\n\t[Network id='1' type='link']\n[Machines]\n\t[Machine name='a' count='2']\n\t\t[Networks]\n\t\t\t[Network id='1']\n";
    assert_eq!(ok(src).networks[0].kind, NetworkKind::Link);
}

#[test]
fn parse_all_reports_every_lowering_error_in_order() {
    let src = "[Networks]\n\t[Network id='1' latency='5 parsecs']\n\t[Network id='1']\n[Machines]\n\t[Machine name='a' count='0']\n";
    let errs = elvis_ndl::parse_all(src, "m.ndl").unwrap_err();
    let lines: Vec<u32> = errs.iter().map(|e| e.loc.line).collect();
    assert_eq!(lines, [2, 3, 5]);
}

#[test]
fn parse_blocks_gives_the_generic_tree() {
    let roots = elvis_ndl::parse_blocks("[A k='v']\n\t[B]\n\t\t[C]\n\t[D]\n", "t").unwrap();
    assert_eq!(roots.len(), 1);
    assert_eq!(roots[0].children.len(), 2);
    assert_eq!(roots[0].children[0].children[0].keyword.node, "C");
    assert_eq!(roots[0].params[0].value.node, "v");
}

#[test]
fn sections_stream_in_source_order_and_machines_may_name_later_networks() {
    // Machines are lowered as they are read: `a` names network 2 before
    // it is declared, and a second `[Machines]` follows the networks.
    let src = "[Machines]\n\t[Machine name='a']\n\t\t[Networks]\n\t\t\t[Network id='2']\n[Networks]\n\t[Network id='1']\n\t[Network id='2']\n[Machines]\n\t[Machine name='b']\n\t\t[Networks]\n\t\t\t[Network id='1']\n";
    let sc = ok(src);
    let machines: Vec<&str> = sc.machines.iter().map(|m| m.name.as_str()).collect();
    let networks: Vec<&str> = sc.networks.iter().map(|n| n.id.as_str()).collect();
    assert_eq!(machines, ["a", "b"]);
    assert_eq!(networks, ["1", "2"]);
    assert_eq!(sc.machines[0].networks[0].name, "2");
}

#[test]
fn a_syntax_error_after_lowered_blocks_is_reported_alone() {
    // Machine `a` is lowered (with an error of its own) before the
    // parser reaches the broken line; only the syntax error is reported.
    let src = "[Networks]\n\t[Network id='1']\n[Machines]\n\t[Machine name='a' count='0']\n\t[Machine name='b' oops]\n";
    let errs = elvis_ndl::parse_all(src, "s.ndl").unwrap_err();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!((errs[0].kind, errs[0].loc.line), (ErrorKind::Syntax, 5));
}

#[test]
fn the_first_syntax_or_indentation_error_in_the_file_is_reported() {
    // An indentation error (line 2) before an unterminated quote (line 4).
    let src = "[Networks]\n\t\t[Network id='1']\n[Machines]\n\t[Machine name='a\n";
    let e = elvis_ndl::parse(src, "s.ndl").unwrap_err();
    assert_eq!((e.kind, e.loc.line), (ErrorKind::Indentation, 2), "{e}");
}
