//! Duplication and reordering (netem-like impairments): counts within
//! binomial bounds, every copy and every late frame accounted for, arrival
//! times against the closed form of the timing model (`elvis_sim::net`),
//! determinism.

use crate::common::*;
use elvis_sim::{Host, NetworkConfig, Report};
use std::collections::BTreeSet;
use std::time::Duration;

/// Payload bytes of each datagram (a frame of `udp_frame_len(PAYLOAD)`).
const PAYLOAD: usize = 100;

/// Sends `n` numbered datagrams back to back over `cfg`; returns each
/// arrival as (sequence number, virtual ns) in arrival order, and the
/// report. The receiver stops one virtual second after the last arrival.
fn run(seed: u64, cfg: NetworkConfig, n: u32) -> (Vec<(u32, u64)>, Report) {
    let (mut sim, a, b) = pair(seed, cfg);
    let got = log::<(u32, u64)>();
    let rx = got.clone();
    sim.spawn(b, "sink", move |host: Host| async move {
        let sock = host.udp_bind(7)?;
        loop {
            let deadline = host.now() + Duration::from_secs(1);
            match timeout_at(&host, deadline, sock.recv()).await {
                Some(msg) => {
                    let msg = msg?.to_vec();
                    assert_eq!(msg.len(), PAYLOAD, "payload length");
                    let seq = u32::from_le_bytes(msg[..4].try_into().unwrap());
                    rx.borrow_mut().push((seq, host.now().as_nanos()));
                }
                None => return Ok(()),
            }
        }
    });
    sim.spawn(a, "source", move |host: Host| async move {
        let sock = host.udp_bind(0)?;
        for seq in 0..n {
            let mut body = vec![0u8; PAYLOAD];
            body[..4].copy_from_slice(&seq.to_le_bytes());
            sock.send_to(body, sa(nth_ip(1), 7)).await?;
        }
        Ok(())
    });
    let report = sim.run();
    let got = got.borrow().clone();
    (got, report)
}

/// 100 Mbit/s, 10 µs point-to-point link.
fn wire() -> NetworkConfig {
    link("wire", Some(100_000_000), 10_000)
}

/// Returns the sequence numbers that arrived after a higher one (the
/// frames overtaken).
fn overtaken(arrivals: &[(u32, u64)]) -> BTreeSet<u32> {
    let mut highest = None;
    let mut out = BTreeSet::new();
    for &(seq, _) in arrivals {
        match highest {
            Some(h) if seq < h => {
                out.insert(seq);
            }
            _ => highest = Some(seq),
        }
    }
    out
}

#[test]
fn a_duplicated_datagram_arrives_twice_at_the_same_instant() {
    let mut cfg = wire();
    cfg.duplicate = 1.0;
    let (got, r) = run(1, cfg, 1);
    assert_success(&r);
    // One frame on an idle link: arrival = S/B + L, for both copies.
    let at = ser_ns(udp_frame_len(PAYLOAD), 100_000_000) + 10_000;
    assert_eq!(got, vec![(0, at), (0, at)]);
    let net = &r.networks[0].stats;
    assert_eq!((net.frames_sent, net.duplicated), (1, 1));
    assert_eq!(net.frames_delivered, 2);
    assert_eq!(r.packets.udp_delivered, 2);
}

#[test]
fn a_duplicated_frame_on_a_switch_is_serialized_twice_onto_the_egress_port() {
    let mut cfg = switch("lan", Some(100_000_000), 10_000);
    cfg.duplicate = 1.0;
    let (got, r) = run(1, cfg, 1);
    assert_success(&r);
    // S/B + L + S/B for the original; the copy waits for it on the port.
    let s = ser_ns(udp_frame_len(PAYLOAD), 100_000_000);
    assert_eq!(got, vec![(0, s + 10_000 + s), (0, s + 10_000 + 2 * s)]);
}

#[test]
fn duplication_and_reordering_counts_stay_within_binomial_bounds() {
    let n = 20_000u32;
    let (p_dup, p_reo) = (0.05, 0.1);
    let mut cfg = wire();
    cfg.duplicate = p_dup;
    cfg.reorder = p_reo;
    let (got, r) = run(3, cfg, n);
    assert_success(&r);
    let stats = &r.networks[0].stats;
    assert_eq!(stats.frames_sent, u64::from(n));
    assert_binomial("duplicated", stats.duplicated, u64::from(n), p_dup);
    assert_binomial("reordered", stats.reordered, u64::from(n), p_reo);
    // Every datagram once, plus once more for each duplicate.
    let mut times = vec![0u32; n as usize];
    for &(seq, _) in &got {
        times[seq as usize] += 1;
    }
    assert!(times.iter().all(|&t| t == 1 || t == 2), "lost or tripled");
    let twice = times.iter().filter(|&&t| t == 2).count() as u64;
    assert_eq!(twice, stats.duplicated);
    assert_eq!(got.len() as u64, u64::from(n) + stats.duplicated);
    assert_eq!(r.packets.dropped_total, 0);
}

#[test]
fn reordered_frames_arrive_late_by_the_reorder_delay_and_are_overtaken() {
    let n = 2_000u32;
    let delay = 300_000; // 300 µs, about 26 frame times at 11.36 µs each
    let mut cfg = wire();
    cfg.reorder = 0.1;
    cfg.reorder_delay_ns = delay;
    let (got, r) = run(5, cfg, n);
    assert_success(&r);
    // The sender keeps its NIC busy, so frame i leaves it at (i+1)·S/B and
    // arrives L later, or L + delay later when reordered.
    let s = ser_ns(udp_frame_len(PAYLOAD), 100_000_000);
    let mut late = BTreeSet::new();
    for &(seq, at) in &got {
        let on_time = (u64::from(seq) + 1) * s + 10_000;
        if at == on_time + delay {
            late.insert(seq);
        } else {
            assert_eq!(at, on_time, "datagram {seq}");
        }
    }
    assert_eq!(got.len(), n as usize);
    assert_eq!(late.len() as u64, r.networks[0].stats.reordered);
    assert_binomial("reordered", late.len() as u64, u64::from(n), 0.1);
    // Only late frames are overtaken, and each one is unless it was among
    // the last sent (nothing left to overtake it within `delay`).
    let passed = overtaken(&got);
    assert!(passed.is_subset(&late), "an on-time frame was overtaken");
    let tail = n - (delay / s) as u32 - 1;
    assert!(late
        .iter()
        .filter(|&&q| q < tail)
        .all(|q| passed.contains(q)));
    assert!(!passed.is_empty());
}

#[test]
fn reordering_on_an_ideal_network_holds_the_frame_back_by_the_delay() {
    let mut cfg = link("wire", None, 0);
    cfg.reorder = 1.0;
    let (got, r) = run(1, cfg, 3);
    assert_success(&r);
    let d = NetworkConfig::DEFAULT_REORDER_DELAY_NS;
    assert_eq!(got, vec![(0, d), (1, d), (2, d)]);
    assert_eq!(r.networks[0].stats.reordered, 3);
}

#[test]
fn impairments_are_deterministic_per_seed() {
    let mk = || {
        let mut cfg = wire();
        cfg.duplicate = 0.03;
        cfg.reorder = 0.03;
        cfg.loss = 0.03;
        cfg.corruption = 0.03;
        cfg
    };
    let (g1, r1) = run(9, mk(), 3_000);
    let (g2, r2) = run(9, mk(), 3_000);
    let (g3, _) = run(10, mk(), 3_000);
    assert_eq!(g1, g2);
    assert_eq!(r1.deterministic_json(), r2.deterministic_json());
    assert_ne!(g1, g3);
    let json = r1.deterministic_json();
    assert!(json.contains("\"duplicated\""), "{json}");
    assert!(json.contains("\"reordered\""), "{json}");
}

#[test]
fn a_network_without_duplication_or_reordering_draws_as_before() {
    // Loss alone must lose the same frames whatever the new fields' delay,
    // since zero probabilities take no draws.
    let mut a = wire();
    a.loss = 0.1;
    let mut b = a.clone();
    b.reorder_delay_ns = 7;
    let (ga, ra) = run(4, a, 2_000);
    let (gb, _) = run(4, b, 2_000);
    assert_eq!(ga, gb);
    assert_eq!(ra.networks[0].stats.reordered, 0);
}
