//! Wireless networks from NDL: the multi-hop chain example delivers its
//! traffic, its capture is 802.11 that Wireshark decodes down to UDP, and
//! bad radio options are located errors.

use crate::*;

#[test]
fn the_wireless_chain_delivers_over_four_hops_and_its_capture_is_802_11() {
    let dir = temp_dir();
    let report = dir.path().join("r.json");
    let pcap = dir.path().join("caps");
    let chain = example("wireless-chain.ndl");
    elvis(args!["run", &chain, "--report", &report, "--pcap", &pcap]).expect_code(0);
    let r = read_report(&report);
    assert_eq!(metric(&r, "node-4", "mgen_sink", "received"), 150.0);
    assert_eq!(metric(&r, "node-0", "ping", "received"), 3.0);
    let net = &r["networks"][0];
    assert_eq!(net["kind"], "Wireless", "{net}");
    // Every datagram crosses four hops, each a data frame and its ACK.
    let wl = &net["wireless"];
    assert!(wl["delivered"].as_u64().unwrap() >= 4 * 150, "{wl}");

    let file = pcap.join("net-air.pcap");
    let bytes = std::fs::read(&file).expect("a capture");
    // pcap header: link type 105 (LINKTYPE_IEEE802_11) at offset 20.
    assert_eq!(u32::from_le_bytes(bytes[20..24].try_into().unwrap()), 105);
    if !std::process::Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        eprintln!("tshark is not installed: the 802.11 decoding check is skipped");
        return;
    }
    // Data frames, LLC/SNAP with the IPv4 EtherType, UDP to the sink with
    // a valid checksum; one ACK per unicast data frame; nothing malformed.
    let data = "wlan.fc.type_subtype == 0x0020 && llc.type == 0x0800 && ip.src == 10.0.0.1 \
                && ip.dst == 10.0.0.5 && udp.dstport == 5000 && udp.checksum.status == 1";
    assert_eq!(tshark_count(&file, data), 4 * 150);
    let acks = tshark_count(&file, "wlan.fc.type_subtype == 0x001d");
    let unicast = tshark_count(
        &file,
        "wlan.fc.type_subtype == 0x0020 && !(wlan.da == ff:ff:ff:ff:ff:ff)",
    );
    assert_eq!(acks, unicast);
    assert_eq!(
        tshark_count(&file, "_ws.malformed || _ws.expert.severity >= error"),
        0
    );
}

/// Returns metric `name` of `app` on `machine`.
fn metric(r: &serde_json::Value, machine: &str, app: &str, name: &str) -> f64 {
    (r["metrics"].as_array().expect("metrics"))
        .iter()
        .find(|m| m["machine"] == machine && m["application"] == app && m["name"] == name)
        .and_then(|m| m["value"].as_f64())
        .unwrap_or_else(|| panic!("no {name} of {app} on {machine}"))
}

/// Writes `src` to a file and checks it; returns the first stderr line.
fn check_error(src: &str) -> String {
    let dir = temp_dir();
    let file = dir.path().join("w.ndl");
    std::fs::write(&file, src).expect("written");
    let out = elvis(args!["check", &file]);
    out.expect_code(2);
    out.first_stderr_line().to_string()
}

const NET: &str = "[Networks]\n\t[Network id='w' type='wireless' standard='802.11b' area='500x100']\n\
                   [Machines]\n\t[Machine name='a']\n\t\t[Networks]\n\t\t\t[Network id='w' x='10' y='10']\n";

#[test]
fn an_unknown_standard_is_a_located_error() {
    let src = NET.replace("802.11b", "802.11n");
    let first = check_error(&src);
    // Located at the value (a tab is one column).
    assert!(first.contains("w.ndl:2:44: error: "), "{first}");
    assert!(first.contains("bad standard '802.11n'"), "{first}");
    assert!(first.contains("802.11a, 802.11b and 802.11g"), "{first}");
}

#[test]
fn a_position_outside_the_area_is_a_located_error() {
    let src = NET.replace("x='10'", "x='900'");
    let first = check_error(&src);
    // Located at `x=`.
    assert!(first.contains("w.ndl:6:20: error: "), "{first}");
    assert!(first.contains("outside the area of network 'w'"), "{first}");
}

#[test]
fn a_rate_the_standard_lacks_is_a_located_error() {
    let src = NET.replace("area=", "data_rate='54Mbps' area=");
    let first = check_error(&src);
    assert!(
        first.contains("802.11b has no rate of 54 Mbit/s"),
        "{first}"
    );
}

#[test]
fn radio_options_on_a_wired_network_are_an_error() {
    let src = NET.replace("type='wireless' ", "");
    let first = check_error(&src);
    assert!(
        first.contains("`standard` is an option of a wireless network"),
        "{first}"
    );
}

#[test]
fn a_neighbour_leaving_along_a_setdest_trace_stops_answering_pings() {
    let dir = temp_dir();
    // node 1 drives east from 100 m at 100 m/s from 2 s on: in range
    // (250 m) until 3.5 s.
    let trace = "$node_(0) set X_ 0.0\n$node_(0) set Y_ 0.0\n$node_(1) set X_ 100.0\n\
                 $node_(1) set Y_ 0.0\n$ns_ at 2.0 \"$node_(1) setdest 2000.0 0.0 100.0\"\n";
    std::fs::write(dir.path().join("scen.ns"), trace).expect("written");
    let src = "[Simulation until='10s']\n[Networks]\n\
               \t[Network id='w' type='wireless' mobility='setdest' trace='scen.ns']\n\
               \t\t[IP subnet='10.0.0.0/24']\n[Machines]\n\
               \t[Machine name='a']\n\t\t[Networks]\n\t\t\t[Network id='w' ip='10.0.0.1']\n\
               \t\t[Applications]\n\t\t\t[Application name='ping' to='10.0.0.2' count='6' interval='1s']\n\
               \t[Machine name='b']\n\t\t[Networks]\n\t\t\t[Network id='w' ip='10.0.0.2']\n";
    let file = dir.path().join("m.ndl");
    std::fs::write(&file, src).expect("written");
    let report = dir.path().join("r.json");
    elvis(args!["run", &file, "--report", &report]).expect_code(0);
    let r = read_report(&report);
    // Pings at 0, 1, 2 and 3 s find b within 250 m; at 4 and 5 s it is
    // 300 and 400 m away, and a's MAC gives up after 7 attempts each.
    assert_eq!(metric(&r, "a", "ping", "received"), 4.0);
    assert_eq!(r["networks"][0]["wireless"]["retry_drops"], 2);
}

#[test]
fn random_mobility_without_an_area_is_a_located_error() {
    let src = NET.replace(" area='500x100'", " mobility='random_waypoint'");
    let first = check_error(&src);
    assert!(first.contains("w.ndl:2:"), "{first}");
    assert!(
        first.contains("needs the area the machines move in"),
        "{first}"
    );
}

#[test]
fn bad_manhattan_keys_are_located_errors() {
    let street = |keys: &str| NET.replace(" area='500x100'", &format!(" area='500x100' {keys}"));
    // Turn probabilities that do not sum to 1, at the value.
    let first = check_error(&street("mobility='manhattan' turns='0.5,0.5,0.25'"));
    assert!(first.contains("w.ndl:2:"), "{first}");
    assert!(
        first.contains("are not each in 0..1 with a sum of 1"),
        "{first}"
    );
    // A block wider than the area is deep.
    let first = check_error(&street("mobility='manhattan' block='200m'"));
    assert!(first.contains("fewer than two streets"), "{first}");
    // A street key without street mobility.
    let first = check_error(&street("mobility='random_waypoint' block='50m'"));
    assert!(
        first.contains("`block` is an option of mobility='manhattan'"),
        "{first}"
    );
    let first = check_error(&street("mobility='manhatan'"));
    assert!(
        first.contains("unknown mobility model 'manhatan'"),
        "{first}"
    );
}

#[test]
fn the_manet_example_runs_with_street_mobility() {
    let dir = temp_dir();
    let text = std::fs::read_to_string(example("manet.ndl")).expect("the example");
    let moves = "mobility='random_waypoint' speed='1-20' pause='30s'";
    assert!(text.contains(moves));
    let text = text
        .replace(moves, "mobility='manhattan' block='100m' speed='1-20'")
        .replace("until='200s'", "until='30s'")
        .replace("duration='180s'", "duration='20s'");
    let file = dir.path().join("m.ndl");
    std::fs::write(&file, text).expect("written");
    let report = dir.path().join("r.json");
    elvis(args!["run", &file, "--report", &report]).expect_code(0);
    let r = read_report(&report);
    let pdr = r["aodv"]["delivery_ratio"]
        .as_f64()
        .expect("a delivery ratio");
    assert!(pdr > 0.5, "{pdr}");
}
