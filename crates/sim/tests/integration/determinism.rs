//! The same seed gives byte-identical outputs; another seed does not.

use crate::common::*;
use elvis_sim::{Host, Protocols, Simulation};
use std::time::Duration;

/// Runs a busy scenario (loss, corruption, a bounded switch queue, several
/// senders with random sizes and gaps, ARP, fragments, a second network)
/// capturing into `dir`; returns the deterministic report and each pcap.
fn scenario(seed: u64, dir: &TempDir) -> (String, Vec<(String, Vec<u8>)>) {
    let mut sim = Simulation::new(seed);
    let mut lan = switch("lan", Some(10_000_000), 50_000);
    lan.loss = 0.05;
    lan.corruption = 0.05;
    lan.queue = Some(4);
    let lan = sim.add_network(lan);
    let mut wire = link("wire", Some(1_000_000), 2_000_000);
    wire.loss = 0.1;
    wire.corruption = 0.1;
    let wire = sim.add_network(wire);
    let sink = sim.add_machine("sink");
    sim.attach(sink, lan, nth_ip(0)).unwrap();
    let arp = Protocols {
        arp: true,
        udp: true,
        tcp: false,
    };
    let senders = sim.add_group("sender", Some(5), arp).unwrap();
    for i in 0..5 {
        sim.attach(senders + i, lan, nth_ip(1 + i)).unwrap();
    }
    let far = sim.add_machine("far");
    sim.attach(far, wire, "192.168.0.2".parse().unwrap())
        .unwrap();
    sim.attach(sink, wire, "192.168.0.1".parse().unwrap())
        .unwrap();
    sim.spawn_daemon(sink, "sink", |host: Host| async move {
        let sock = host.udp_bind(7)?;
        loop {
            let (msg, from) = sock.recv_from().await?;
            // Echo a little back: traffic in both directions.
            let reply = msg.slice(..msg.len().min(16));
            sock.send_to(reply, from).await?;
        }
    });
    for i in 0..5 {
        sim.spawn(senders + i, "burst", |host: Host| async move {
            let sock = host.udp_bind(0)?;
            for _ in 0..60 {
                let len = (host.random_u64() % 3000) as usize;
                let body: Vec<u8> = (0..len).map(|_| host.random_u64() as u8).collect();
                sock.send_to(body, sa(nth_ip(0), 7)).await?;
                let gap = host.random_u64() % 2_000_000;
                host.sleep(Duration::from_nanos(gap)).await;
            }
            Ok(())
        });
    }
    sim.spawn(far, "trickle", |host: Host| async move {
        let sock = host.udp_bind(0)?;
        for i in 0..30u32 {
            let len = 100 + (host.random_u64() % 2000) as usize;
            let mut body = vec![0u8; len];
            body[..4].copy_from_slice(&i.to_be_bytes());
            sock.send_to(body, sa("192.168.0.1".parse().unwrap(), 7))
                .await?;
            host.sleep(Duration::from_millis(3)).await;
        }
        Ok(())
    });
    let files = sim.capture_pcap(&dir.0).expect("open pcap files");
    let report = sim.run();
    assert_success(&report);
    assert!(sim.pcap_error().is_none(), "{:?}", sim.pcap_error());
    // The scenario must exercise what it claims to.
    for reason in ["loss", "queue_full"] {
        assert!(dropped(&report, reason) > 0, "no {reason}");
    }
    assert!(report.networks.iter().all(|n| n.stats.corrupted > 0));
    assert!(report.packets.arp_sent > 0);
    let pcaps = files
        .iter()
        .map(|f| {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(f).expect("read pcap"))
        })
        .collect();
    (report.deterministic_json(), pcaps)
}

#[test]
fn the_same_seed_gives_an_identical_report_and_byte_identical_pcaps() {
    let (d1, d2, d3) = (
        TempDir::new("det"),
        TempDir::new("det"),
        TempDir::new("det"),
    );
    let (json1, pcap1) = scenario(2024, &d1);
    let (json2, pcap2) = scenario(2024, &d2);
    assert_eq!(json1, json2);
    assert_eq!(pcap1.len(), 2);
    for ((n1, b1), (n2, b2)) in pcap1.iter().zip(&pcap2) {
        assert_eq!(n1, n2);
        assert!(b1.len() > 24 + 16 * 100, "{n1} holds few frames");
        assert!(b1 == b2, "{n1} differs between two runs of one seed");
    }
    let (json3, pcap3) = scenario(2025, &d3);
    assert_ne!(json1, json3);
    for ((n1, b1), (_, b3)) in pcap1.iter().zip(&pcap3) {
        assert!(b1 != b3, "{n1} is the same under another seed");
    }
}
