//! AODV (RFC 3561) over point-to-point links: a chain of machines, each
//! hearing only its two neighbours. The first ping from one end starts a
//! route discovery with the expanding ring search; its round trip is the
//! closed form of the rings that time out (RFC 3561 §10's
//! RING_TRAVERSAL_TIME) plus the link crossings of the RREQ, the RREP,
//! the echo and its reply. The capture decodes as AODV in tshark.

use crate::common::*;
use crate::tshark::{have_tshark, tshark};
use elvis_sim::stack::aodv::{self, Config};
use elvis_sim::{EchoOptions, Host, MachineId, Message, Protocols, Simulation};
use std::net::Ipv4Addr;

const RATE: u64 = 100_000_000;
const LATENCY: u64 = 10_000;
/// UDP header and the RREQ (24 bytes) and RREP (20 bytes) of §5.
const RREQ_FRAME: usize = ETH_HEADER + IP_HEADER + 8 + 24;
const RREP_FRAME: usize = ETH_HEADER + IP_HEADER + 8 + 20;

/// `n` machines n0 … n(n−1), machine k joined to k + 1 by link `lk`
/// (10.0.k.1 on k's side, 10.0.k.2 on the other); all run AODV.
fn chain(n: u32, cfg: Config) -> (Simulation, Vec<MachineId>) {
    let mut sim = Simulation::new(3);
    let links: Vec<_> = (0..n - 1)
        .map(|k| sim.add_network(link(&format!("l{k}"), Some(RATE), LATENCY)))
        .collect();
    let ms: Vec<MachineId> = (0..n)
        .map(|k| {
            let m = sim
                .add_group(&format!("n{k}"), None, Protocols::UDP)
                .unwrap();
            let ip = |a: u32, b: u8| Ipv4Addr::new(10, 0, a as u8, b);
            if k > 0 {
                sim.attach(m, links[k as usize - 1], ip(k - 1, 2)).unwrap();
            }
            if k + 1 < n {
                sim.attach(m, links[k as usize], ip(k, 1)).unwrap();
            }
            m
        })
        .collect();
    for &m in &ms {
        sim.enable_aodv(m, cfg).unwrap();
    }
    (sim, ms)
}

/// The address of the far end of a chain of `n`: n(n−1)'s only one.
fn far(n: u32) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, (n - 2) as u8, 2)
}

/// The first ping's round trip across `d` hops, `rings` ns of timed-out
/// rings before the RREQ that arrives.
fn first_rtt(d: u64, rings: u64, data: usize) -> u64 {
    let echo = (ETH_HEADER + IP_HEADER + 8 + data).max(MIN_FRAME);
    let hop = |frame: usize| ser_ns(frame.max(MIN_FRAME), RATE) + LATENCY;
    rings + d * (hop(RREQ_FRAME) + hop(RREP_FRAME) + 2 * hop(echo))
}

/// Pings the far end of a chain of `n` from n0 once; returns the RTT.
fn ping(n: u32, data: usize, dir: Option<&TempDir>) -> (u64, elvis_sim::Report) {
    let no_hello = Config {
        hello: false,
        gratuitous: false,
        rrep_ack: false,
        local_repair: false,
    };
    let (mut sim, ms) = chain(n, no_hello);
    let got = log();
    let out = got.clone();
    let to = far(n);
    sim.spawn(ms[0], "ping", move |host: Host| async move {
        let sock = host.icmp_socket(7)?;
        let t0 = host.now();
        sock.send_echo_with(to, 1, EchoOptions::ttl(64), Message::zeros(data as u64))?;
        let r = sock.recv_echo().await?;
        assert!(r.error.is_none(), "{r:?}");
        out.borrow_mut().push(host.now().as_nanos() - t0.as_nanos());
        Ok(())
    });
    if let Some(d) = dir {
        sim.capture_pcap(&d.0).unwrap();
    }
    let report = sim.run();
    assert_success(&report);
    let rtt = got.borrow()[0];
    (rtt, report)
}

#[test]
fn a_first_ping_five_hops_away_waits_for_rings_of_ttl_1_and_3() {
    // TTL 1 and 3 time out after 2·40 ms·(TTL + 2) each; TTL 5 reaches.
    let rings = aodv::ring_traversal_time(1) + aodv::ring_traversal_time(3);
    assert_eq!(rings, 640_000_000);
    let (rtt, report) = ping(6, 56, None);
    assert_eq!(rtt, first_rtt(5, rings, 56));
    let a = report.aodv.as_ref().expect("the aodv section");
    assert_eq!(a.rreq_originated, 3);
    assert_eq!(a.discoveries_completed, 1);
    assert_eq!(a.data_buffered, 1);
    // The discovery: the rings, then the RREQ out and the RREP back.
    let hop = |frame: usize| ser_ns(frame.max(MIN_FRAME), RATE) + LATENCY;
    let discovery = rings + 5 * (hop(RREQ_FRAME) + hop(RREP_FRAME));
    assert_eq!(a.discovery_p50_ns, Some(discovery));
}

#[test]
fn a_first_ping_nine_hops_away_needs_net_diameter_after_four_rings() {
    let rings: u64 = [1, 3, 5, 7]
        .into_iter()
        .map(aodv::ring_traversal_time)
        .sum();
    let (rtt, report) = ping(10, 56, None);
    assert_eq!(rtt, first_rtt(9, rings, 56));
    assert_eq!(report.aodv.as_ref().unwrap().rreq_originated, 5);
}

#[test]
fn tshark_decodes_the_discovery_as_aodv() {
    if !have_tshark() {
        return;
    }
    let dir = TempDir::new("aodv");
    ping(10, 56, Some(&dir));
    let file = dir.0.join("net-l0.pcap");
    assert!(
        file.exists(),
        "{:?}",
        std::fs::read_dir(&dir.0).unwrap().collect::<Vec<_>>()
    );
    let rows = tshark(
        &file,
        Some("aodv && ip.src == 10.0.0.1"),
        &[
            "aodv.type",
            "ip.ttl",
            "aodv.flags.rreq_unknown",
            "aodv.hopcount",
            "aodv.dest_ip",
            "aodv.orig_ip",
            "aodv.rreq_id",
        ],
    );
    let got: Vec<Vec<&str>> = rows
        .iter()
        .map(|r| r.iter().map(String::as_str).collect())
        .collect();
    // n0's five RREQs: type 1, TTL 1, 3, 5, 7, 35, U set, IDs 1..5.
    let expect: Vec<Vec<String>> = [1, 3, 5, 7, 35]
        .iter()
        .enumerate()
        .map(|(i, ttl)| {
            vec![
                "1".into(),
                ttl.to_string(),
                "1".into(),
                "0".into(),
                "10.0.8.2".into(),
                "10.0.0.1".into(),
                (i + 1).to_string(),
            ]
        })
        .collect();
    let expect: Vec<Vec<&str>> = expect
        .iter()
        .map(|r| r.iter().map(String::as_str).collect())
        .collect();
    assert_eq!(got, expect);
    // n1's RREP to n0: type 2, hop count 8 (n1 is one hop short).
    let rrep = tshark(
        &file,
        Some("aodv.type == 2"),
        &["aodv.hopcount", "aodv.dest_ip", "aodv.lifetime"],
    );
    assert_eq!(
        rrep,
        [vec!["8".to_string(), "10.0.8.2".into(), "6000".into()]]
    );
    assert_eq!(
        tshark(
            &file,
            Some("_ws.malformed || _ws.expert.severity == error"),
            &["frame.number"]
        )
        .len(),
        0
    );
}
