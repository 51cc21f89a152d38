//! IPv4 fragmentation and reassembly: exact bytes, fragment counts and
//! timing from RFC 791's arithmetic, and the reassembly timeout.

use crate::common::*;
use elvis_sim::report::End;
use elvis_sim::{Host, RunLimits, Time};
use std::collections::BTreeSet;

/// A recognizable payload: no byte pattern repeats within 251 bytes.
fn pattern(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| ((i * 7 + usize::from(salt)) % 251) as u8)
        .collect()
}

/// Sends one datagram of `len` bytes over a link with `mtu`; checks it
/// arrives byte for byte, in the closed-form number of frames, at the
/// closed-form time.
fn send_one(len: usize, mtu: u32, bps: u64, lat: u64) {
    let mut cfg = link("l", Some(bps), lat);
    cfg.mtu = mtu;
    let (mut sim, a, b) = pair(5, cfg);
    let got = log::<(u64, Vec<u8>)>();
    let rx = got.clone();
    sim.spawn(b, "sink", move |host: Host| async move {
        let sock = host.udp_bind(7)?;
        let msg = sock.recv().await?;
        rx.borrow_mut().push((host.now().as_nanos(), msg.to_vec()));
        Ok(())
    });
    sim.spawn(a, "source", move |host: Host| async move {
        let sock = host.udp_bind(0)?;
        sock.send_to(pattern(len, 3), sa(nth_ip(1), 7)).await?;
        Ok(())
    });
    let report = sim.run();
    assert_success(&report);
    let frames = fragment_frames(len + UDP_HEADER, mtu as usize);
    let stats = &report.networks[0].stats;
    assert_eq!(
        stats.frames_sent,
        frames.len() as u64,
        "len {len} mtu {mtu}"
    );
    assert_eq!(
        stats.bytes_sent,
        frames.iter().sum::<usize>() as u64,
        "len {len} mtu {mtu}"
    );
    let got = got.borrow();
    assert_eq!(got.len(), 1);
    assert!(got[0].1 == pattern(len, 3), "len {len} mtu {mtu}: damaged");
    let when: u64 = frames.iter().map(|&f| ser_ns(f, bps)).sum::<u64>() + lat;
    assert_eq!(got[0].0, when, "len {len} mtu {mtu}: arrival");
    assert_eq!(report.packets.dropped_total, 0);
}

#[test]
fn a_10000_byte_datagram_crosses_mtu_1500_intact_in_seven_fragments() {
    // ceil(10008 / 1480) = 7.
    assert_eq!(fragment_frames(10_008, 1500).len(), 7);
    send_one(10_000, 1500, 100_000_000, 10_000);
}

#[test]
fn a_10000_byte_datagram_crosses_small_mtus_intact() {
    // MTU 576: 552 data bytes per fragment, ceil(10008 / 552) = 19.
    assert_eq!(fragment_frames(10_008, 576).len(), 19);
    send_one(10_000, 576, 10_000_000, 1_000);
    // MTU 68 (the IPv4 minimum): 48 bytes per fragment, 209 fragments,
    // far more than the NIC's 32 slots (a datagram is queued whole).
    assert_eq!(fragment_frames(10_008, 68).len(), 209);
    send_one(10_000, 68, 10_000_000, 1_000);
}

#[test]
fn a_datagram_that_just_fits_the_mtu_is_not_fragmented() {
    send_one(1472, 1500, 1_000_000_000, 0);
    assert_eq!(fragment_frames(1473 + UDP_HEADER, 1500).len(), 2);
    send_one(1473, 1500, 1_000_000_000, 0);
    // The largest UDP datagram: 65 507 bytes in 45 fragments.
    assert_eq!(fragment_frames(65_515, 1500).len(), 45);
    send_one(65_507, 1500, 1_000_000_000, 0);
}

#[test]
fn incomplete_datagrams_are_dropped_after_the_30_s_reassembly_timeout() {
    // 20 datagrams of 7 fragments over a lossy ideal link: a datagram
    // arrives whole with probability 0.8⁷ ≈ 0.21, is lost entirely with
    // probability 0.2⁷ ≈ 10⁻⁵ and is otherwise left incomplete.
    let (count, lat) = (20u8, 1_000_000);
    let mut cfg = link("lossy", None, lat);
    cfg.loss = 0.2;
    let (mut sim, a, b) = pair(17, cfg);
    let got = log::<Vec<u8>>();
    let rx = got.clone();
    sim.spawn_daemon(b, "sink", move |host: Host| async move {
        let sock = host.udp_bind(7)?;
        loop {
            let msg = sock.recv().await?;
            rx.borrow_mut().push(msg.to_vec());
        }
    });
    sim.spawn(a, "source", move |host: Host| async move {
        let sock = host.udp_bind(0)?;
        for i in 0..count {
            sock.send_to(pattern(10_000, i), sa(nth_ip(1), 7)).await?;
        }
        Ok(())
    });
    // Every fragment arrives at least one latency (1 ms) after t = 0, so no
    // reassembly can time out before 30.001 s.
    let limit = Time::from_nanos(30_000_000_000 + lat - 1);
    let early = sim.run_with(RunLimits { until: Some(limit) }, &mut |_| {});
    assert_eq!(early.end, End::TimeLimit, "reassembly timers are pending");
    assert_eq!(dropped(&early, "reassembly_timeout"), 0);
    let report = sim.run();
    assert_eq!(report.end, End::Idle);
    assert_success(&report);
    let whole: BTreeSet<u8> = got
        .borrow()
        .iter()
        .map(|p| {
            let salt = (0..count).find(|&s| *p == pattern(10_000, s));
            salt.expect("a reassembled datagram is intact")
        })
        .collect();
    assert_eq!(whole.len(), got.borrow().len(), "no duplicates");
    let timeouts = dropped(&report, "reassembly_timeout");
    assert!(timeouts >= 1, "some datagram must be incomplete");
    assert_eq!(
        timeouts + whole.len() as u64,
        u64::from(count),
        "each datagram arrived whole or timed out"
    );
    // An expired datagram whose fragment zero had arrived is answered
    // with an ICMP Time Exceeded (RFC 1122 §3.3.2), which the source
    // receives unless the lossy link drops it: the datagrams delivered
    // are the whole ones and those of the errors that got through.
    let time_exceeded = report.packets.icmp_errors_sent;
    assert!(time_exceeded >= 1 && time_exceeded <= timeouts);
    let errors_received = report.packets.ip_delivered - whole.len() as u64;
    assert!(errors_received <= time_exceeded);
    // The last timer fires 30 s after the first fragment of the last
    // incomplete datagram, which left within the first few latencies.
    assert!(report.sim_time_ns > 30_000_000_000 && report.sim_time_ns < 30_100_000_000);
}
