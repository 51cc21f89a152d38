//! DHCP from NDL: the example's captures dissected by tshark, relays
//! across routers, an exhausted pool, and bad input.

use crate::*;
use std::process::Command;

/// Writes `ndl` to `t.ndl` in a fresh directory and runs it there with a
/// report; returns the outcome, the report (if written) and the directory.
fn run_text(ndl: &str, extra: &[&str]) -> (Outcome, Option<Value>, TempDir) {
    let dir = temp_dir();
    std::fs::write(dir.path().join("t.ndl"), ndl).unwrap();
    let mut args: Vec<&OsStr> = vec![
        OsStr::new("run"),
        OsStr::new("t.ndl"),
        OsStr::new("--report"),
        OsStr::new("r.json"),
    ];
    args.extend(extra.iter().map(OsStr::new));
    let out = elvis_in(dir.path(), args);
    let path = dir.path().join("r.json");
    let report = path.exists().then(|| read_report(&path));
    (out, report, dir)
}

/// Four LANs behind two routers in a chain; the server is behind the
/// first, the second relays across it (two relay hops away from nothing:
/// each relay talks to the server directly, routed).
const FOUR_LANS: &str = "
[Simulation seed='5' until='30s']
[Networks]
	[Network id='core' latency='5us']
		[IP subnet='10.0.0.0/24']
	[Network id='mid' type='link' bandwidth='1Gbps' latency='20us']
		[IP subnet='10.0.9.0/30']
	[Network id='lan1' latency='5us']
		[IP subnet='10.1.1.0/24']
	[Network id='lan2' latency='5us']
		[IP subnet='10.1.2.0/24']
	[Network id='lan3' latency='5us']
		[IP subnet='10.1.3.0/24']
	[Network id='lan4' latency='5us']
		[IP subnet='10.1.4.0/24']
[Machines]
	[Machine name='r1' forward='yes' dhcp_relay='10.0.0.2']
		[Networks]
			[Network id='core' ip='10.0.0.1']
			[Network id='mid' ip='10.0.9.1']
			[Network id='lan1' ip='10.1.1.1']
			[Network id='lan2' ip='10.1.2.1']
	[Machine name='r2' forward='yes' dhcp_relay='10.0.0.2']
		[Networks]
			[Network id='mid' ip='10.0.9.2']
			[Network id='lan3' ip='10.1.3.1']
			[Network id='lan4' ip='10.1.4.1']
	[Machine name='srv' gateway='10.0.0.1']
		[Networks]
			[Network id='core' ip='10.0.0.2']
		[Applications]
			[Application name='dhcp_server' lease='600s']
				[Pool pool='10.1.1.10-10.1.1.20' router='10.1.1.1']
				[Pool pool='10.1.2.10-10.1.2.20' router='10.1.2.1']
				[Pool pool='10.1.3.10-10.1.3.20' router='10.1.3.1']
				[Pool pool='10.1.4.10-10.1.4.20' router='10.1.4.1']
";

fn hosts(lan: u32, n: u32) -> String {
    format!(
        "\t[Machine name='h{lan}' count='{n}']\n\t\t[Networks]\n\t\t\t[Network id='lan{lan}']\n\t\t[Protocols]\n\t\t\t[Protocol name='DHCP' start='uniform(0s,2s)']\n\t\t[Applications]\n\t\t\t[Application name='ping' to='10.0.0.2' count='1']\n"
    )
}

#[test]
fn relays_on_two_routers_serve_four_lans_each_from_its_own_pool() {
    let ndl = format!(
        "{FOUR_LANS}{}{}{}{}",
        hosts(1, 3),
        hosts(2, 3),
        hosts(3, 3),
        hosts(4, 3)
    );
    let (out, report, _dir) = run_text(&ndl, &[]);
    out.expect_code(0);
    let r = report.unwrap();
    let d = &r["dhcp"];
    assert_eq!(d["clients"], 12);
    assert_eq!(d["configured"], 12);
    assert_eq!(d["never_configured"], 0);
    assert_eq!(d["messages"]["ack"], 12 + d["extended"].as_u64().unwrap());
    // Every request and reply crossed one relay: 4 messages per boot.
    assert_eq!(d["relayed"], 48);
    let leases = d["servers"][0]["leases"].as_array().unwrap();
    assert_eq!(leases.len(), 12);
    for lan in 1..=4 {
        let here = leases
            .iter()
            .filter(|l| {
                l["ip"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("10.1.{lan}."))
            })
            .count();
        assert_eq!(here, 3, "LAN {lan}'s hosts lease from its pool");
    }
    // Their pings reach the server through the router the lease named.
    let ping = application(&r, "h3", "ping");
    assert_eq!(ping["finished"], 3);
}

#[test]
fn an_exhausted_pool_is_reported_with_the_hosts_left_without_an_address() {
    let ndl = FOUR_LANS.replace("10.1.2.10-10.1.2.20", "10.1.2.10-10.1.2.11") + &hosts(2, 4);
    let (out, report, _dir) = run_text(&ndl, &[]);
    let r = report.expect("a report even so");
    let d = &r["dhcp"];
    assert_eq!(
        (d["clients"].as_u64(), d["configured"].as_u64()),
        (Some(4), Some(2))
    );
    assert_eq!(d["never_configured"], 2);
    assert_eq!(d["unconfigured"].as_array().unwrap().len(), 2);
    assert!(d["pool_exhausted"].as_u64().unwrap() >= 2);
    // Their applications never started: the run says so.
    assert_eq!(application(&r, "h2", "ping")["waiting"], 2);
    assert_ne!(
        out.code,
        Some(0),
        "a run with waiting applications is not a success"
    );
}

#[test]
fn dhcp_mistakes_are_located_errors() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "dhcp_relay='10.0.0.2']\n\t\t[Networks]\n\t\t\t[Network id='mid' ip='10.0.9.2']",
            "dhcp_relay='nonsense']\n\t\t[Networks]\n\t\t\t[Network id='mid' ip='10.0.9.2']",
            "not a list of IPv4 addresses",
        ),
        (
            "[Pool pool='10.1.4.10-10.1.4.20'",
            "[Pool pool='10.1.4.10-10.1.5.20'",
            "not inside one /24 subnet",
        ),
        (
            "[Pool pool='10.1.1.10-10.1.1.20' router='10.1.1.1']",
            "[Pool pool='10.1.1.10-10.1.1.20' gw='10.1.1.1']",
            "unknown option 'gw'",
        ),
        ("lease='600s'", "lease='600s' t1='700s'", "T1"),
        (
            "[Machine name='r2' forward='yes' dhcp_relay",
            "[Machine name='r2' dhcp_relay",
            "routers only",
        ),
    ];
    for (from, to, message) in cases {
        let ndl = FOUR_LANS.replace(from, to) + &hosts(1, 1);
        assert_ne!(ndl, FOUR_LANS.to_string() + &hosts(1, 1), "{from}");
        let (out, report, _dir) = run_text(&ndl, &[]);
        out.expect_code(2);
        let first = out.first_stderr_line();
        assert!(first.starts_with("t.ndl:"), "{first}");
        assert!(first.contains(message), "`{message}` not in: {first}");
        assert!(report.is_none());
    }
    // A bad start on the protocol, and a name that has no address yet.
    let ndl = FOUR_LANS.to_string() + &hosts(1, 1).replace("uniform(0s,2s)", "soon");
    let (out, _, _dir) = run_text(&ndl, &[]);
    out.expect_code(2);
    assert!(out.first_stderr_line().contains("soon"), "{}", out.stderr);
    // A DHCP machine has no address before the run: its name is looked
    // up through DNS when the application starts, and without a DNS
    // server in the lease the application fails, naming it.
    let ndl =
        FOUR_LANS.to_string() + &hosts(1, 1) + &hosts(2, 1).replace("to='10.0.0.2'", "to='h1-0'");
    let (out, report, _dir) = run_text(&ndl, &[]);
    assert_ne!(out.code, Some(0));
    assert!(
        out.stdout
            .contains("to='h1-0': no DNS server is configured"),
        "{}",
        out.stdout
    );
    assert_eq!(application(&report.unwrap(), "h2", "ping")["failed"], 1);
}

#[test]
fn tshark_dissects_every_dhcp_message_of_the_example_and_counts_the_acks() {
    if Command::new("tshark").arg("--version").output().is_err() {
        eprintln!("notice: tshark is not installed; skipping the DHCP capture test");
        return;
    }
    let dir = temp_dir();
    let report_path = dir.path().join("r.json");
    let pcap = dir.path().join("pcap");
    elvis(args![
        "run",
        example("dhcp.ndl"),
        "--quiet",
        "--report",
        &report_path,
        "--pcap",
        &pcap
    ])
    .expect_code(0);
    let r = read_report(&report_path);
    let acks_in_report = r["dhcp"]["messages"]["ack"].as_u64().unwrap();
    let count =
        |net: &str, filter: &str| tshark_count(&pcap.join(format!("net-{net}.pcap")), filter);
    for net in ["core", "lan-a", "lan-b", "lan-c"] {
        assert_eq!(
            count(net, "_ws.malformed || _ws.expert.severity >= error"),
            0,
            "{net}"
        );
        assert!(count(net, "dhcp") > 0, "{net}: no DHCP");
        assert_eq!(
            count(net, "udp.checksum.status == 0 || ip.checksum.status == 0"),
            0,
            "{net}"
        );
    }
    // Every ACK crosses the core once (server to relay) and reaches its
    // client's LAN once: broadcast by the relay to a new client, or
    // unicast to a renewing one.
    assert_eq!(count("core", "dhcp.option.dhcp == 5"), acks_in_report);
    let on_lans: u64 = ["lan-a", "lan-b", "lan-c"]
        .iter()
        .map(|n| count(n, "dhcp.option.dhcp == 5"))
        .sum();
    assert_eq!(on_lans, acks_in_report);
    assert_eq!(
        count("lan-a", "dhcp.option.dhcp == 1"),
        4,
        "one DISCOVER per client"
    );
}

/// The whole start of a client's life: DHCP, then DNS through the
/// resolver the lease names, then ICMP and TCP to the name's address; the
/// captures dissect cleanly.
#[test]
fn hosts_booted_by_dhcp_resolve_a_name_through_the_leased_resolver_and_reach_it() {
    let dir = temp_dir();
    let report_path = dir.path().join("r.json");
    let pcap = dir.path().join("pcap");
    elvis(args![
        "run",
        example("dhcp-dns.ndl"),
        "--quiet",
        "--report",
        &report_path,
        "--pcap",
        &pcap
    ])
    .expect_code(0);
    let r = read_report(&report_path);
    assert_eq!(r["dhcp"]["configured"], 12);
    for g in ["a", "b", "c"] {
        assert_eq!(application(&r, g, "ping")["finished"], 4);
        assert_eq!(application(&r, g, "tcp_echo_client")["finished"], 4);
    }
    // Every host asked the resolver (a ping and an echo client each).
    let resolver_queries = r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["application"] == "dns_resolver" && m["name"] == "queries")
        .map(|m| m["value"].as_f64().unwrap());
    assert_eq!(resolver_queries, Some(24.0));
    if Command::new("tshark").arg("--version").output().is_err() {
        eprintln!("notice: tshark is not installed; skipping the capture half");
        return;
    }
    for net in ["core", "lan-a", "lan-b", "lan-c"] {
        let path = pcap.join(format!("net-{net}.pcap"));
        let bad = tshark_count(&path, "_ws.malformed || _ws.expert.severity >= error");
        assert_eq!(bad, 0, "{net}");
    }
}
