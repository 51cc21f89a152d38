//! Loss and corruption: counts within binomial bounds, every corrupted
//! frame accounted for, nothing corrupted delivered.

use crate::common::*;
use elvis_sim::{Host, Report};
use std::collections::BTreeSet;
use std::time::Duration;

const N: u32 = 20_000;

/// Sends `N` numbered datagrams over an ideal link with `loss` and
/// `corruption`; returns the received payloads and the report. The
/// receiver stops one virtual second after the last datagram.
fn run(seed: u64, loss: f64, corruption: f64, payload_copies: usize) -> (Vec<Vec<u8>>, Report) {
    let mut cfg = link("wire", None, 1_000);
    cfg.loss = loss;
    cfg.corruption = corruption;
    let (mut sim, a, b) = pair(seed, cfg);
    let got = log::<Vec<u8>>();
    let rx = got.clone();
    sim.spawn(b, "sink", move |host: Host| async move {
        let sock = host.udp_bind(7)?;
        loop {
            let deadline = host.now() + Duration::from_secs(1);
            match timeout_at(&host, deadline, sock.recv()).await {
                Some(msg) => rx.borrow_mut().push(msg?.to_vec()),
                None => return Ok(()),
            }
        }
    });
    sim.spawn(a, "source", move |host: Host| async move {
        let sock = host.udp_bind(0)?;
        for seq in 0..N {
            let body: Vec<u8> = (0..payload_copies)
                .flat_map(|_| seq.to_le_bytes())
                .collect();
            sock.send_to(body, sa(nth_ip(1), 7)).await?;
        }
        Ok(())
    });
    let report = sim.run();
    let got = got.borrow().clone();
    (got, report)
}

/// Returns the sequence numbers of intact payloads (panics on a bad one).
fn sequence_numbers(payloads: &[Vec<u8>], copies: usize) -> BTreeSet<u32> {
    let mut seqs = BTreeSet::new();
    for p in payloads {
        assert_eq!(p.len(), 4 * copies, "payload length");
        let seq = u32::from_le_bytes(p[..4].try_into().unwrap());
        assert!(
            p.chunks(4).all(|c| c == seq.to_le_bytes()),
            "payload {p:?} is damaged"
        );
        assert!(seq < N, "sequence number {seq} was never sent");
        assert!(seqs.insert(seq), "{seq} delivered twice");
    }
    seqs
}

#[test]
fn loss_stays_within_a_binomial_bound_and_every_datagram_is_accounted_for() {
    let p = 0.1;
    let (got, report) = run(7, p, 0.0, 1);
    assert_success(&report);
    let seqs = sequence_numbers(&got, 1);
    let received = seqs.len() as u64;
    let lost = u64::from(N) - received;
    assert_binomial("lost datagrams", lost, u64::from(N), p);
    assert_eq!(dropped(&report, "loss") + received, u64::from(N));
    assert_eq!(report.packets.dropped_total, lost, "only losses");
    assert_eq!(report.networks[0].stats.lost, lost);
    assert_eq!(report.networks[0].stats.frames_sent, u64::from(N));
    assert_eq!(report.packets.udp_delivered, received);
}

#[test]
fn the_same_seed_loses_the_same_datagrams_and_another_seed_others() {
    let (got1, r1) = run(11, 0.1, 0.0, 1);
    let (got2, r2) = run(11, 0.1, 0.0, 1);
    let (got3, _) = run(12, 0.1, 0.0, 1);
    assert_eq!(sequence_numbers(&got1, 1), sequence_numbers(&got2, 1));
    assert_eq!(r1.deterministic_json(), r2.deterministic_json());
    // ~2000 of 20000 lost each time: two independent draws choose the same
    // set with a probability far below 10⁻¹⁰⁰.
    assert_ne!(sequence_numbers(&got1, 1), sequence_numbers(&got3, 1));
}

/// Drop reasons a single flipped bit may cause on an Ethernet/IPv4/UDP
/// frame over a link.
const CORRUPTION_DROPS: &[&str] = &[
    "bad_checksum(ipv4)",
    "bad_checksum(udp)",
    "malformed(ethernet)",
    "malformed(ipv4)",
    "malformed(udp)",
    "not_for_us",
    "unknown_destination",
    "unsupported(ethertype)",
    "unsupported(ip protocol)",
];

#[test]
fn corrupted_frames_are_caught_and_never_delivered_damaged() {
    let p = 0.1;
    let copies = 8; // 32 bytes: the sequence number eight times
    let (got, report) = run(3, 0.0, p, copies);
    assert_success(&report);
    assert_eq!(report.failures(), 0);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let seqs = sequence_numbers(&got, copies);
    let n = u64::from(N);
    let corrupted = report.networks[0].stats.corrupted;
    assert_binomial("corrupted frames", corrupted, n, p);
    for reason in report.packets.dropped.keys() {
        assert!(
            CORRUPTION_DROPS.contains(&reason.as_str()),
            "unexpected drop reason {reason}"
        );
    }
    let caught = report.packets.dropped_total;
    let delivered = seqs.len() as u64;
    assert_eq!(delivered + caught, n, "every frame delivered or dropped");
    assert!(caught <= corrupted);
    assert!(report.packets.dropped.contains_key("bad_checksum(udp)"));
    assert!(report.packets.dropped.contains_key("bad_checksum(ipv4)"));
    assert!(report.packets.dropped.contains_key("not_for_us"));
    // A flip is harmless in exactly 49 of the frame's bits: the 48 bits of
    // the source MAC (nobody checks it) and the group bit of the
    // destination MAC (the frame becomes multicast, which a host accepts,
    // and IPv4 still sees its own address). Every other bit is covered by
    // a check: the rest of the destination MAC, the EtherType, the IPv4
    // header checksum, the UDP checksum (pseudo-header, header, payload).
    let frame_bits = (8 * udp_frame_len(4 * copies)) as f64;
    assert_binomial(
        "corrupted frames delivered (harmless flips)",
        corrupted - caught,
        corrupted,
        49.0 / frame_bits,
    );
}
