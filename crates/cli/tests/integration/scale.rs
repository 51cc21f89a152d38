//! Scenarios at the sizes where indexes matter: a router with more
//! interfaces than a 16-bit index holds, and queue sizes that topology
//! generators must honour (with every drop counted at its queue).

use crate::*;

/// Writes `ndl` into a fresh directory and runs it with `--report`.
fn run_ndl(ndl: &str) -> (Outcome, Value) {
    let dir = temp_dir();
    let path = dir.path().join("t.ndl");
    std::fs::write(&path, ndl).unwrap();
    let report = dir.path().join("r.json");
    let out = elvis(args!["run", &path, "--report", &report]);
    let r = read_report(&report);
    (out, r)
}

fn metric(r: &Value, machine: &str, name: &str) -> f64 {
    r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["machine"] == machine && m["name"] == name)
        .unwrap_or_else(|| panic!("no metric {name} on {machine}"))["value"]
        .as_f64()
        .unwrap()
}

#[test]
fn a_router_with_100000_interfaces_sends_each_reply_out_of_its_own_link() {
    // host-65540's link is the router's interface 65,540: past a 16-bit
    // index it would wrap to interface 4 and the reply would be lost.
    let ndl = "[Topology type='star' n='100000' hub='router' bandwidth='1Gbps' latency='10us']\n\
[Machines]\n\
\t[Machine name='host-65540']\n\
\t\t[Applications]\n\
\t\t\t[Application name='ping' to='host-10' count='1']\n\
\t[Machine name='host-10']\n\
\t\t[Applications]\n\
\t\t\t[Application name='ping' to='host-99999' count='1']\n";
    let (out, r) = run_ndl(ndl);
    out.expect_code(0);
    // Two links each way; a 98-byte echo frame is 784 ns at 1 Gbit/s.
    let rtt = 4.0 * (784.0 + 10_000.0);
    assert_eq!(metric(&r, "host-65540", "rtt_min_ns"), rtt);
    assert_eq!(metric(&r, "host-10", "rtt_min_ns"), rtt);
    let router = &r["routers"].as_array().unwrap()[0];
    assert_eq!(router["interfaces_total"], 100_000);
    // The busiest 1000 are listed (the three that carried traffic, then
    // the first idle ones), in attachment order.
    let ifaces = router["interfaces"].as_array().unwrap();
    assert_eq!(ifaces.len(), 1000);
    let forwarded = |i: usize| {
        let name = format!("link-{i}");
        let iface = ifaces.iter().find(|f| f["network"] == name.as_str());
        iface.unwrap_or_else(|| panic!("{name} is not listed"))["forwarded"]
            .as_u64()
            .unwrap()
    };
    // Out of link 10: host-65540's request and host-99999's reply; out
    // of links 65,540 and 99,999: the reply and the request for them.
    assert_eq!(forwarded(10), 2);
    assert_eq!(forwarded(65_540), 1);
    assert_eq!(forwarded(99_999), 1);
    assert_eq!(forwarded(4), 0);
    let total: u64 = ifaces
        .iter()
        .map(|i| i["forwarded"].as_u64().unwrap())
        .sum();
    assert_eq!(total, 4);
}

/// A dumbbell whose left host blasts 400 datagrams at the right one
/// through a 10 Mbit/s bottleneck; returns router-0's bottleneck NIC
/// queue and its interface counters.
fn dumbbell_overflow(bottleneck_queue: Option<u32>) -> (Value, Value) {
    let queue = bottleneck_queue.map_or(String::new(), |q| format!(" bottleneck_queue='{q}'"));
    let ndl = format!(
        "[Simulation until='2s']\n\
[Topology type='dumbbell' n='1' bandwidth='1Gbps' latency='1us' bottleneck_bandwidth='10Mbps' bottleneck_latency='1ms'{queue}]\n\
[Machines]\n\
\t[Machine name='right-0']\n\
\t\t[Applications]\n\
\t\t\t[Application name='capture' port='9' message_count='400']\n\
\t[Machine name='left-0']\n\
\t\t[Applications]\n\
\t\t\t[Application name='send_message' to='right-0' port='9' size='1000B' message_count='400']\n"
    );
    let (out, r) = run_ndl(&ndl);
    // The capture waits for datagrams the bottleneck dropped.
    out.expect_code(3);
    let q = r["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["network"] == "bottleneck" && q["machine"] == "router-0")
        .unwrap_or_else(|| panic!("no queue of router-0 on the bottleneck: {}", r["queues"]))
        .clone();
    let iface = r["routers"].as_array().unwrap()[0]["interfaces"][0].clone();
    assert_eq!(iface["network"], "bottleneck");
    (q, iface)
}

#[test]
fn the_dumbbell_bottleneck_queue_sizes_the_routers_nic_and_counts_its_drops() {
    let (q, iface) = dumbbell_overflow(Some(100));
    assert_eq!(q["direction"], "nic");
    assert_eq!(q["max_packets"], 100, "{q}");
    let dropped = q["dropped"].as_u64().unwrap();
    assert!(dropped > 0, "{q}");
    assert_eq!(iface["nic_full"].as_u64().unwrap(), dropped);
    assert_eq!(q["dropped_by"]["nic_queue_full"].as_u64().unwrap(), dropped);
    // Every datagram was either sent on or dropped there.
    assert_eq!(iface["forwarded"].as_u64().unwrap() + dropped, 400);
}

#[test]
fn without_a_bottleneck_queue_the_routers_nic_holds_its_default_32_frames() {
    let (q, iface) = dumbbell_overflow(None);
    assert_eq!(q["max_packets"], 31, "{q}");
    assert_eq!(q["dropped"], iface["nic_full"]);
    assert_eq!(
        iface["forwarded"].as_u64().unwrap() + iface["nic_full"].as_u64().unwrap(),
        400
    );
}
