//! Arrival times exact to the nanosecond, against the closed forms of the
//! timing model (module docs of `elvis_sim::net`).

use crate::common::*;
use elvis_sim::{Host, NetworkConfig};

/// Sends `count` datagrams of `payload` bytes from `a` to `b` back to back
/// at t = 0; returns the arrival time (ns) of each, in order.
fn arrivals(cfg: NetworkConfig, payload: usize, count: usize) -> Vec<u64> {
    let (mut sim, a, b) = pair(1, cfg);
    let seen = log::<(u64, u32)>();
    let rx = seen.clone();
    sim.spawn(b, "sink", move |host: Host| async move {
        let sock = host.udp_bind(7)?;
        for _ in 0..count {
            let msg = sock.recv().await?;
            let seq = u32::from_be_bytes(msg.to_vec()[..4].try_into().unwrap());
            rx.borrow_mut().push((host.now().as_nanos(), seq));
        }
        Ok(())
    });
    sim.spawn(a, "source", move |host: Host| async move {
        let sock = host.udp_bind(0)?;
        for seq in 0..count as u32 {
            let mut body = vec![0u8; payload];
            body[..4].copy_from_slice(&seq.to_be_bytes());
            sock.send_to(body, sa(nth_ip(1), 7)).await?;
        }
        Ok(())
    });
    let report = sim.run();
    assert_success(&report);
    let seen = seen.borrow();
    assert_eq!(seen.len(), count);
    for (i, (_, seq)) in seen.iter().enumerate() {
        assert_eq!(*seq as usize, i, "datagrams arrive in order");
    }
    seen.iter().map(|(t, _)| *t).collect()
}

#[test]
fn one_datagram_over_a_link_arrives_after_one_serialization_plus_the_latency() {
    // 3 Mbit/s makes most serialization times fractional: the ceiling
    // matters. 18 bytes of payload is exactly the 60-byte minimum frame,
    // 4 bytes is padded to it, 1472 fills an MTU of 1500.
    let (bps, lat) = (3_000_000, 1_234_567);
    for payload in [4, 18, 19, 100, 1001, 1472] {
        let got = arrivals(link("l", Some(bps), lat), payload, 1);
        let want = ser_ns(udp_frame_len(payload), bps) + lat;
        assert_eq!(got, vec![want], "payload {payload}");
    }
    // Hand-checked: 142-byte frame at 3 Mbit/s = 378 666.67 ns → 378 667.
    assert_eq!(
        arrivals(link("l", Some(bps), lat), 100, 1),
        vec![378_667 + lat]
    );
    // Minimum frame: 60 bytes = 480 bits at 3 Mbit/s = 160 µs exactly.
    assert_eq!(
        arrivals(link("l", Some(bps), lat), 4, 1),
        vec![160_000 + lat]
    );
}

#[test]
fn back_to_back_datagrams_over_a_link_arrive_one_serialization_apart() {
    // 50 datagrams: more than the NIC's 32 slots, so the sender blocks on
    // the way without ever leaving the wire idle.
    let (bps, lat, payload, k) = (7_000_000, 250_000, 333, 50);
    let ser = ser_ns(udp_frame_len(payload), bps);
    let got = arrivals(link("l", Some(bps), lat), payload, k);
    let want: Vec<u64> = (1..=k as u64).map(|i| i * ser + lat).collect();
    assert_eq!(got, want);
}

#[test]
fn one_datagram_across_an_idle_switch_is_serialized_twice() {
    let (bps, lat) = (100_000_000, 5_000);
    for payload in [4, 100, 1472] {
        let ser = ser_ns(udp_frame_len(payload), bps);
        let got = arrivals(switch("lan", Some(bps), lat), payload, 1);
        assert_eq!(got, vec![ser + lat + ser], "payload {payload}");
    }
}

#[test]
fn back_to_back_datagrams_across_a_switch_arrive_pipelined() {
    // Frame k leaves the sender at k·ser, reaches the switch at k·ser + L,
    // when the egress port has just finished frame k−1: out at k·ser + L +
    // ser.
    let (bps, lat, payload, k) = (10_000_000, 40_000, 200, 40);
    let ser = ser_ns(udp_frame_len(payload), bps);
    let got = arrivals(switch("lan", Some(bps), lat), payload, k);
    let want: Vec<u64> = (1..=k as u64).map(|i| i * ser + lat + ser).collect();
    assert_eq!(got, want);
}

#[test]
fn an_ideal_network_delivers_after_exactly_the_latency() {
    for (cfg, name) in [
        (switch("lan", None, 777), "switch"),
        (link("l", None, 777), "link"),
    ] {
        assert_eq!(arrivals(cfg, 1472, 1), vec![777], "{name}");
    }
    assert_eq!(arrivals(switch("lan", None, 0), 10, 1), vec![0]);
}

#[test]
fn an_ideal_network_carries_txqueuelen_frames_per_latency() {
    // On an ideal network a NIC slot is held until the frame is delivered:
    // datagram i (0-based) leaves in wave i / txqueuelen and arrives at
    // (i / txqueuelen + 1)·L.
    let lat = 1_000;
    let q = NetworkConfig::DEFAULT_TXQUEUELEN as u64;
    let got = arrivals(switch("lan", None, lat), 64, 100);
    let want: Vec<u64> = (0..100).map(|i| (i / q + 1) * lat).collect();
    assert_eq!(got, want);
}
