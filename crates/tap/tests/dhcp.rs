//! Linux's DHCP client against elvis's DHCP server: a TAP machine with
//! `[Protocol name='DHCP']` starts without an address, BusyBox's
//! `udhcpc` in its namespace gets one from an elvis `dhcp_server`
//! (DISCOVER, OFFER, REQUEST, ACK through the simulated LAN), reads the
//! lease's options (mask, router, DNS server, domain, lease time) as the
//! server wrote them, configures the device, and pings the server. Needs
//! root, `/dev/net/tun`, `ip`, `busybox` and `ping`; says so and passes
//! without.
#![forbid(unsafe_code)]

mod common;

use std::collections::BTreeMap;
use std::process::Command;

/// The scenario: a LAN with an elvis DHCP server and the TAP machine.
fn scenario(device: &str, ns: &str) -> String {
    format!(
        "[Simulation seed='8' until='60s']
[Networks]
\t[Network id='lan' bandwidth='100Mbps' latency='1ms']
\t\t[IP subnet='10.78.0.0/24']
[Machines]
\t[Machine name='linux' tap='{device}' netns='{ns}']
\t\t[Networks]
\t\t\t[Network id='lan']
\t\t[Protocols]
\t\t\t[Protocol name='DHCP']
\t[Machine name='dhcp']
\t\t[Networks]
\t\t\t[Network id='lan' ip='10.78.0.2']
\t\t[Protocols]
\t\t\t[Protocol name='UDP']
\t\t[Applications]
\t\t\t[Application name='dhcp_server' lease='600s' dns='10.78.0.53' domain='example.com']
\t\t\t\t[Pool pool='10.78.0.100-10.78.0.199' router='10.78.0.1']
"
    )
}

/// The udhcpc event script: records the lease's variables, and on
/// `bound` puts the address on the device.
const SCRIPT: &str = r#"#!/bin/sh
case "$1" in
  bound|renew)
    env | grep -E '^(ip|subnet|mask|router|dns|domain|lease|serverid)=' > "$LEASE_FILE"
    ip addr add "$ip/${mask:-24}" dev "$interface"
    ;;
esac
exit 0
"#;

#[test]
fn linux_udhcpc_gets_a_lease_from_elvis_dhcp_and_uses_it() {
    if let Some(why) = common::missing(&["busybox", "ping"]) {
        eprintln!("skipped: {why}");
        return;
    }
    let id = std::process::id();
    let ns = format!("elvis-dhcp-{id}");
    let device = format!("edhc{}", id % 100_000);
    let src = scenario(&device, &ns);
    let Some(mut built) = common::build_or_skip(&src, "dhcp.ndl") else {
        return;
    };
    let mac = built.taps[0].mac;
    let dir = std::env::temp_dir().join(format!("elvis-dhcp-{id}"));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("udhcpc.sh");
    let lease_file = dir.join("lease");
    std::fs::write(&script, SCRIPT).unwrap();
    Command::new("chmod")
        .args(["+x", script.to_str().unwrap()])
        .status()
        .unwrap();
    // -f foreground, -q quit once bound, -n fail rather than go on
    // without a lease, 3 DISCOVERs 1 s apart.
    let client_cmd = format!(
        "busybox udhcpc -f -q -n -t 3 -T 1 -i {device} -s {} && ping -c 2 -W 2 10.78.0.2",
        script.display()
    );
    let (report, out) = common::run_with_client(
        &mut built,
        Command::new("ip")
            .args(["netns", "exec", &ns, "sh", "-c", &client_cmd])
            .env("LEASE_FILE", &lease_file),
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    let lease_text = std::fs::read_to_string(&lease_file).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "udhcpc or ping failed: {text}");
    let lease: BTreeMap<&str, &str> = lease_text
        .lines()
        .filter_map(|l| l.split_once('='))
        .collect();
    // What Linux's client read from elvis's OFFER/ACK.
    let ip = lease.get("ip").copied().unwrap_or_default();
    let host: u8 = ip
        .strip_prefix("10.78.0.")
        .and_then(|h| h.parse().ok())
        .unwrap_or_else(|| panic!("address {ip:?} outside the pool: {lease_text}"));
    assert!((100..=199).contains(&host), "{lease_text}");
    assert_eq!(lease.get("subnet"), Some(&"255.255.255.0"), "{lease_text}");
    assert_eq!(lease.get("router"), Some(&"10.78.0.1"), "{lease_text}");
    assert_eq!(lease.get("dns"), Some(&"10.78.0.53"), "{lease_text}");
    assert_eq!(lease.get("domain"), Some(&"example.com"), "{lease_text}");
    assert_eq!(lease.get("lease"), Some(&"600"), "{lease_text}");
    assert_eq!(lease.get("serverid"), Some(&"10.78.0.2"), "{lease_text}");
    assert!(text.contains("2 received"), "{text}");
    // And what elvis's server recorded: that address, bound to the TAP
    // machine's MAC address.
    let dhcp = report.dhcp.as_ref().expect("a DHCP section");
    let server = &dhcp.servers[0];
    assert_eq!(server.bound, 1, "{server:?}");
    let mac_text = (mac.iter())
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":");
    let held = (server.leases.iter())
        .find(|l| l.ip == ip)
        .unwrap_or_else(|| panic!("no lease of {ip}: {server:?}"));
    assert_eq!(held.mac, mac_text, "{server:?}");
    assert_eq!(held.state, "bound", "{server:?}");
}

#[test]
fn elvis_protocols_and_written_routes_on_a_dhcp_tap_machine_are_located_errors() {
    // Caught before any device is made: runs without root.
    let base = scenario("edhcerr0", "elvis-dhcp-err");
    let cases = [
        (
            "\t\t\t[Protocol name='DHCP']\n",
            "\t\t\t[Protocol name='DHCP']\n\t\t\t[Protocol name='TCP']\n",
            11,
            "runs Linux's stack, not elvis's TCP",
        ),
        (
            "netns='elvis-dhcp-err']",
            "netns='elvis-dhcp-err' gateway='10.78.0.1']",
            6,
            "takes its routes from the server",
        ),
    ];
    for (from, to, at, message) in cases {
        let src = base.replacen(from, to, 1);
        assert_ne!(src, base, "{from}");
        let scenario = elvis_ndl::parse(&src, "dhcp.ndl").expect("the scenario parses");
        let e = elvis_build::build(&scenario, None)
            .err()
            .expect("a build error");
        assert_eq!(e.loc.line, at, "{e}");
        assert!(e.to_string().contains(message), "{e}");
    }
}
