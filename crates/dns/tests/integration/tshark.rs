//! tshark decodes every DNS packet of a capture (UDP and TCP, truncated
//! and whole, referrals, NXDOMAIN) with nothing malformed, and counts as
//! many DNS responses as the servers and the resolver report sending.

use crate::*;
use elvis_dns::proto::rr::RecordType;
use elvis_dns::stub::{self, Options};
use elvis_sim::Host;
use std::path::Path;
use std::process::Command;

fn tshark(file: &Path, filter: &str, field: &str) -> Vec<String> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args([
            "-o",
            "udp.check_checksum:TRUE",
            "-Y",
            filter,
            "-T",
            "fields",
            "-e",
            field,
        ])
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn have_tshark() -> bool {
    let ok = Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("NOTICE: tshark is not on PATH; skipping the tshark check");
    }
    ok
}

#[test]
fn tshark_decodes_every_dns_packet_and_counts_the_reported_responses() {
    if !have_tshark() {
        return;
    }
    let dir = TempDir::new("tshark");
    let mut net = hierarchy(11, 2, true, None);
    for c in [net.client, net.client + 1] {
        net.sim.spawn(c, "lookups", |h: Host| async move {
            for name in ["www", "chain", "nope", "mail", "big", "www"] {
                let _ = stub::lookup(&h, name, RecordType::A, Options::default()).await;
            }
            let _ = stub::lookup(&h, "mail", RecordType::MX, Options::default()).await;
            Ok(())
        });
    }
    let files = net.sim.capture_pcap(&dir.0).unwrap();
    let r = net.sim.run();
    assert_success(&r);
    let file = &files[0];
    assert!(tshark(file, "_ws.malformed", "frame.number").is_empty());
    assert!(tshark(file, "_ws.expert.severity == error", "frame.number").is_empty());
    let responses = tshark(file, "dns.flags.response == 1", "dns.id");
    let reported: u64 = r
        .metrics
        .iter()
        .filter(|m| m.name == "responses")
        .map(|m| m.value as u64)
        .sum();
    assert_eq!(responses.len() as u64, reported);
    assert!(reported > 10);
    let tcp = tshark(file, "dns && tcp", "frame.number");
    assert!(!tcp.is_empty(), "the 100-address answer went over TCP");
    let tc = tshark(file, "dns.flags.truncated == 1", "frame.number");
    assert!(!tc.is_empty());
    let nx = tshark(file, "dns.flags.rcode == 3", "frame.number");
    assert!(!nx.is_empty());
}
