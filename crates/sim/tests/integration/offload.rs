//! Host NIC offloads (`stack::offload`): TSO, interrupt coalescing and
//! GRO change how often TCP runs, not what reaches the application or the
//! wire format; coalescing delays each delivery by exactly `rx_usecs`.

use crate::common::*;
use crate::tshark::{have_tshark, tcp_count};
use elvis_sim::{Host, NetworkConfig, Offloads, Protocols, Report, Simulation, Time};
use std::net::Ipv4Addr;

const GBPS: u64 = 1_000_000_000;

/// The bytes at stream offset `at..at + n` of a transfer.
fn pattern(at: u64, n: usize) -> Vec<u8> {
    (0..n as u64).map(|i| ((at + i) * 13 % 251) as u8).collect()
}

/// Hosts `a` (10.0.0.1) and `b` (10.0.0.2) on `cfg`, both with
/// `offloads` (if any); `a` sends `bytes` of the pattern to `b`, which
/// publishes the bytes that came intact as `intact`.
fn bulk(seed: u64, cfg: NetworkConfig, offloads: Option<Offloads>, bytes: u64) -> Simulation {
    let mut sim = Simulation::new(seed);
    let net = sim.add_network(cfg);
    let a = sim.add_group("a", None, Protocols::UDP_TCP).unwrap();
    let b = sim.add_group("b", None, Protocols::UDP_TCP).unwrap();
    sim.attach(a, net, nth_ip(0)).unwrap();
    sim.attach(b, net, nth_ip(1)).unwrap();
    if let Some(o) = offloads {
        sim.set_offloads(a, o).unwrap();
        sim.set_offloads(b, o).unwrap();
    }
    sim.spawn(b, "server", move |h: Host| async move {
        let l = h.tcp_listen(80, 1)?;
        let (s, _) = l.accept().await?;
        let (mut got, mut intact) = (0u64, 0u64);
        loop {
            let m = s.recv(1 << 20).await?;
            if m.is_empty() {
                break;
            }
            if m.to_vec() == pattern(got, m.len()) {
                intact += m.len() as u64;
            }
            got += m.len() as u64;
        }
        h.publish("intact", intact as f64);
        Ok(())
    });
    sim.spawn(a, "client", move |h: Host| async move {
        let s = h.tcp_connect(sa(nth_ip(1), 80)).await?;
        let mut sent = 0u64;
        while sent < bytes {
            let n = (bytes - sent).min(100_000);
            s.write_all(pattern(sent, n as usize)).await?;
            sent += n;
        }
        Ok(())
    });
    sim
}

fn intact(r: &Report) -> f64 {
    let m = r.metrics.iter().find(|m| m.name == "intact");
    m.map_or(-1.0, |m| m.value)
}

/// The receiver's connection end (the one that received data).
fn receiver(r: &Report) -> &elvis_sim::report::ConnectionReport {
    r.tcp_connections
        .iter()
        .find(|c| c.stats.bytes_received > 0)
        .expect("a receiving connection")
}

fn sender(r: &Report) -> &elvis_sim::report::ConnectionReport {
    r.tcp_connections
        .iter()
        .find(|c| c.stats.bytes_acked > 0)
        .expect("a sending connection")
}

#[test]
fn gro_merges_a_bulk_flow_so_tcp_runs_and_acks_far_less_at_the_same_goodput() {
    const BYTES: u64 = 20_000_000;
    let cfg = || link("l", Some(10 * GBPS), 10_000);
    let mut plain = bulk(1, cfg(), None, BYTES);
    let p = plain.run();
    let mut fast = bulk(1, cfg(), Some(Offloads::LINUX), BYTES);
    let f = fast.run();
    assert_success(&p);
    assert_success(&f);
    assert_eq!(intact(&p), BYTES as f64);
    assert_eq!(intact(&f), BYTES as f64);
    assert_eq!(plain.gro_merged(), 0);
    let merged = fast.gro_merged();
    // Every data frame still crosses the wire and counts as received.
    let frames = receiver(&f).stats.segments_received;
    assert!(frames as f64 >= BYTES as f64 / 1448.0, "{frames}");
    assert!(
        merged * 2 > frames,
        "only {merged} of {frames} frames merged"
    );
    // One ACK per merged segment instead of one per two frames.
    let (acks_p, acks_f) = (
        receiver(&p).stats.segments_sent,
        receiver(&f).stats.segments_sent,
    );
    assert!(
        acks_f * 2 < acks_p,
        "ACKs: {acks_f} with GRO, {acks_p} without"
    );
    // The link stays full: goodput within 3 % of the plain hosts'.
    let (gp, gf) = (
        sender(&p).throughput_bps as f64,
        sender(&f).throughput_bps as f64,
    );
    assert!(
        (gf - gp).abs() < 0.03 * gp,
        "goodput {gf} with offloads, {gp} without"
    );
    assert!(gp > 9.0e9, "{gp}");
}

#[test]
fn offloaded_hosts_deliver_every_byte_through_loss_corruption_duplication_and_reordering() {
    const BYTES: u64 = 5_000_000;
    let mut cfg = link("l", Some(10 * GBPS), 50_000);
    cfg.loss = 0.01;
    cfg.corruption = 0.01;
    cfg.duplicate = 0.01;
    cfg.reorder = 0.02;
    cfg.reorder_delay_ns = 30_000;
    let mut sim = bulk(7, cfg, Some(Offloads::LINUX), BYTES);
    let r = sim.run();
    assert_success(&r);
    assert_eq!(intact(&r), BYTES as f64, "{}", r.deterministic_json());
    assert!(sim.gro_merged() > 100, "{}", sim.gro_merged());
    for reason in ["loss", "bad_checksum(tcp)"] {
        assert!(dropped(&r, reason) > 0, "no {reason}");
    }
    assert!(sender(&r).stats.retransmitted_segments > 0);
}

#[test]
fn an_offloaded_run_is_deterministic() {
    let run = || {
        let mut cfg = link("l", Some(10 * GBPS), 20_000);
        cfg.loss = 0.005;
        cfg.reorder = 0.01;
        let mut sim = bulk(3, cfg, Some(Offloads::LINUX), 1_000_000);
        let r = sim.run();
        assert_success(&r);
        (r.deterministic_json(), sim.gro_merged())
    };
    assert_eq!(run(), run());
}

/// Runs a bulk transfer with offloads and a capture (1000-frame NICs,
/// so that the ACKs GRO merges open the window for multi-frame TSO
/// segments); `fast`: TCP's one-pass paths (the TSO frames then come from
/// the header template of `stack::tcp::dst::transmit_tso`, else from the
/// layered path, one segment at a time).
fn captured(fast: bool, dir: &TempDir) -> (String, Vec<u8>, u64) {
    let mut cfg = link("l", Some(10 * GBPS), 20_000);
    cfg.loss = 0.002;
    cfg.txqueuelen = 1000;
    let mut sim = bulk(5, cfg, Some(Offloads::LINUX), 4_000_000);
    sim.set_tcp_fast_path(fast);
    let files = sim.capture_pcap(&dir.0).unwrap();
    let r = sim.run();
    assert_success(&r);
    assert_eq!(intact(&r), 4_000_000.0);
    let pcap = std::fs::read(&files[0]).unwrap();
    (r.deterministic_json(), pcap, sim.gro_merged())
}

#[test]
fn tso_frames_from_the_header_template_are_byte_identical_to_the_layered_path() {
    let (d1, d2) = (TempDir::new("tso-fast"), TempDir::new("tso-layered"));
    let (fast_json, fast_pcap, merged) = captured(true, &d1);
    let (slow_json, slow_pcap, _) = captured(false, &d2);
    assert!(merged > 1000, "{merged}");
    assert_eq!(fast_json, slow_json);
    assert!(fast_pcap.len() > 4_000_000, "{}", fast_pcap.len());
    assert!(fast_pcap == slow_pcap, "the captures differ");
}

#[test]
fn tshark_decodes_tso_frames_with_good_checksums_and_no_frame_beyond_the_mtu() {
    if !have_tshark() {
        return;
    }
    let dir = TempDir::new("tso-tshark");
    let _ = captured(true, &dir);
    let file = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "pcap"))
        .expect("a capture");
    let frames = tcp_count(&file, "tcp");
    assert!(frames > 2_700, "{frames} frames");
    assert_eq!(
        tcp_count(&file, "_ws.malformed || _ws.expert.severity == error"),
        0
    );
    assert_eq!(
        tcp_count(&file, "tcp.checksum.status == 1 && ip.checksum.status == 1"),
        frames
    );
    assert_eq!(tcp_count(&file, "frame.len > 1514"), 0);
    assert!(tcp_count(&file, "tcp.len == 1448") > 2_700);
    // PSH only where a TSO segment ended the data written so far, never
    // on every frame.
    assert!(tcp_count(&file, "tcp.flags.push == 1 && tcp.len > 0") < frames / 10);
}

/// Sends one datagram from `a` to `b`, which echoes it; returns the
/// round-trip time `a` sees, ns.
fn udp_round_trip(offloads: Option<Offloads>) -> u64 {
    let (mut sim, a, b) = pair(1, link("l", Some(GBPS), 7_000));
    if let Some(o) = offloads {
        sim.set_offloads(a, o).unwrap();
        sim.set_offloads(b, o).unwrap();
    }
    sim.spawn(b, "echo", |h: Host| async move {
        let s = h.udp_bind(7)?;
        let (m, from) = s.recv_from().await?;
        s.send_to(m, from).await?;
        Ok(())
    });
    let rtt = std::rc::Rc::new(std::cell::Cell::new(0));
    let out = rtt.clone();
    sim.spawn(a, "ping", move |h: Host| async move {
        let s = h.udp_bind(9)?;
        let t0 = h.now();
        s.send_to(vec![1u8; 100], sa(nth_ip(1), 7)).await?;
        s.recv_from().await?;
        out.set((h.now() - t0).as_nanos() as u64);
        Ok(())
    });
    assert_success(&sim.run());
    rtt.get()
}

#[test]
fn interrupt_coalescing_delays_each_receiver_by_exactly_rx_usecs() {
    let plain = udp_round_trip(None);
    // Closed form without coalescing: two serializations of a 142-byte
    // frame at 1 Gbit/s and two latencies.
    assert_eq!(plain, 2 * (ser_ns(142, GBPS) + 7_000));
    for us in [1u32, 8, 50] {
        let o = Offloads {
            rx_usecs: us,
            ..Offloads::LINUX
        };
        assert_eq!(udp_round_trip(Some(o)), plain + 2 * u64::from(us) * 1_000);
    }
    // TSO and GRO alone (no coalescing) change nothing.
    let o = Offloads {
        rx_usecs: 0,
        ..Offloads::LINUX
    };
    assert_eq!(udp_round_trip(Some(o)), plain);
}

#[test]
fn frames_queued_straight_into_the_ring_give_the_same_run_as_arrival_events() {
    // A departure-time queue puts a frame for a coalescing host into its
    // ring when the frame is queued; without that, each frame has an
    // arrival event that puts it there. The runs are the same.
    // Without impairments, the frames of a TSO segment even travel as
    // one train (`offload::arrives_later_train`), merged run by run.
    // 100 µs of coalescing fills aggregates to GRO's 64 KiB limit.
    let cases = [
        (0.0, 32, 8),
        (0.0, 1000, 8),
        (0.0, 1000, 100),
        (0.002, 1000, 8),
    ];
    for (loss, txqueuelen, rx_usecs) in cases {
        let run = |ahead: bool| {
            let mut cfg = link("l", Some(10 * GBPS), 10_000);
            cfg.loss = loss;
            cfg.txqueuelen = txqueuelen;
            let o = Offloads {
                rx_usecs,
                ..Offloads::LINUX
            };
            let mut sim = bulk(2, cfg, Some(o), 5_000_000);
            sim.set_rx_ring_ahead(ahead);
            let r = sim.run();
            assert_success(&r);
            let events = format!("\"events\": {}", r.events);
            (
                r.deterministic_json().replace(&events, ""),
                sim.gro_merged(),
                r.events,
            )
        };
        let (a, b) = (run(true), run(false));
        assert!(a.2 * 2 < b.2, "events {} vs {}", a.2, b.2);
        assert!(a.1 > 1000, "{}", a.1);
        assert_eq!(
            (&a.0, a.1),
            (&b.0, b.1),
            "{loss}, {txqueuelen}, {rx_usecs} µs"
        );
    }
}

#[test]
fn offloads_on_a_machine_that_does_not_exist_are_refused() {
    let mut sim = Simulation::new(1);
    let err = sim.set_offloads(3, Offloads::LINUX).unwrap_err();
    assert!(err.to_string().contains('3'), "{err}");
    let _ = Time::ZERO;
    let _ = Ipv4Addr::LOCALHOST;
}

#[test]
fn tso_retransmits_only_the_lost_frames_of_a_segment() {
    // RACK tracks a TSO segment as one record; a SACK of some of its
    // frames splits it, so a loss costs one retransmission, as without
    // offloads (the data frames lost are at most the frames lost).
    let mut cfg = link("l", Some(10 * GBPS), 10_000);
    cfg.loss = 0.01;
    cfg.txqueuelen = 1000;
    let mut sim = bulk(1, cfg, Some(Offloads::LINUX), 20_000_000);
    let r = sim.run();
    assert_success(&r);
    assert_eq!(intact(&r), 20_000_000.0);
    let s = &sender(&r).stats;
    let lost = dropped(&r, "loss");
    assert!(lost > 100, "{lost}");
    assert!(
        s.retransmitted_segments <= lost + lost / 10,
        "{} retransmissions for {lost} frames lost",
        s.retransmitted_segments
    );
}

/// A group of `n` hosts on a 1 Gbit/s switched LAN with 3 µs of latency,
/// each with `offloads[i]` when given (as the NDL builder sets a group's
/// `offload=`), else `group` for all; one more host without offloads
/// sends a 100-byte datagram to each of the first `targets` hosts in
/// turn, 1 ms apart. Returns the simulation and the one-way delay each
/// target saw, ns.
fn group_udp(
    n: u32,
    group: Option<Offloads>,
    each: &[(u32, Offloads)],
    targets: u32,
) -> (Simulation, std::rc::Rc<std::cell::RefCell<Vec<u64>>>) {
    let mut sim = Simulation::new(5);
    let lan = sim.add_network(switch("lan", Some(GBPS), 3_000));
    let first = sim.add_group("h", Some(n), Protocols::UDP).unwrap();
    let src = sim.add_group("src", None, Protocols::UDP).unwrap();
    for i in 0..n {
        sim.attach(first + i, lan, nth_ip(i)).unwrap();
        if let Some(o) = group {
            sim.set_offloads(first + i, o).unwrap();
        }
    }
    for &(i, o) in each {
        sim.set_offloads(first + i, o).unwrap();
    }
    sim.attach(src, lan, nth_ip(n)).unwrap();
    let delays = std::rc::Rc::new(std::cell::RefCell::new(vec![0; targets as usize]));
    for t in 0..targets {
        let out = delays.clone();
        sim.spawn(first + t, "sink", move |h: Host| async move {
            let s = h.udp_bind(7)?;
            let _ = s.recv_from().await?;
            let sent = Time::from_millis(1 + u64::from(t));
            out.borrow_mut()[t as usize] = (h.now() - sent).as_nanos() as u64;
            Ok(())
        });
    }
    sim.spawn(src, "source", move |h: Host| async move {
        let s = h.udp_bind(9)?;
        for t in 0..targets {
            h.sleep_until(Time::from_millis(1 + u64::from(t))).await;
            s.send_to(vec![7u8; 100], sa(nth_ip(t), 7)).await?;
        }
        Ok(())
    });
    (sim, delays)
}

#[test]
fn a_group_with_offloads_allocates_no_nic_state_until_a_frame_arrives() {
    let (mut plain, base) = group_udp(1000, None, &[], 3);
    assert_success(&plain.run());
    // Two serializations of a 142-byte frame (host to switch, switch to
    // host) and the LAN's latency.
    let one_way = 2 * ser_ns(142, GBPS) + 3_000;
    assert_eq!(*base.borrow(), vec![one_way; 3]);
    let (mut sim, delays) = group_udp(1000, Some(Offloads::LINUX), &[], 3);
    // A thousand hosts with offloads, none holding receive state.
    assert_eq!(sim.nic_states(), (0, 0));
    assert_success(&sim.run());
    // Each target's NIC held the datagram for exactly 8 µs.
    assert_eq!(*delays.borrow(), vec![one_way + 8_000; 3]);
    // One receive state, taken by the first target and handed on to the
    // next when its ring emptied; nobody holds one after the run.
    assert_eq!(sim.nic_states(), (1, 0));
}

#[test]
fn a_machine_set_on_its_own_keeps_its_settings_inside_a_group_with_others() {
    let slow = Offloads {
        rx_usecs: 50,
        ..Offloads::LINUX
    };
    let each = [(1, slow), (2, Offloads::default())];
    let (mut sim, delays) = group_udp(4, Some(Offloads::LINUX), &each, 4);
    assert_success(&sim.run());
    let one_way = 2 * ser_ns(142, GBPS) + 3_000;
    let want = [8_000, 50_000, 0, 8_000].map(|d| one_way + d);
    assert_eq!(*delays.borrow(), want);
    // Only hosts set on their own, without a group setting, also work.
    let (mut sim, delays) = group_udp(4, None, &each, 4);
    assert_success(&sim.run());
    assert_eq!(*delays.borrow(), [0, 50_000, 0, 0].map(|d| one_way + d));
}

#[test]
fn giving_nic_receive_states_back_when_rings_empty_changes_nothing_in_a_run() {
    let run = |keep: bool| {
        let mut cfg = link("l", Some(10 * GBPS), 20_000);
        cfg.loss = 0.005;
        cfg.txqueuelen = 1000;
        let mut sim = bulk(4, cfg, Some(Offloads::LINUX), 2_000_000);
        sim.set_nic_keep(keep);
        let r = sim.run();
        assert_success(&r);
        assert_eq!(intact(&r), 2_000_000.0);
        (r.deterministic_json(), sim.gro_merged(), sim.nic_states())
    };
    let kept = run(true);
    let given = run(false);
    assert_eq!((&kept.0, kept.1), (&given.0, given.1));
    assert!(kept.1 > 100, "{}", kept.1);
    // Kept: both hosts still hold theirs. Given back: nobody does, and
    // the two states of the run were reused, not allocated again.
    assert_eq!(kept.2, (2, 2));
    assert_eq!(given.2 .1, 0);
    assert!(given.2 .0 <= 2, "{:?}", given.2);
    // And the same again: deterministic.
    assert_eq!(run(false), given);
}

#[test]
fn more_distinct_offload_settings_than_the_table_holds_are_refused_with_the_machines_name() {
    let mut sim = Simulation::new(1);
    let first = sim.add_group("h", Some(65_537), Protocols::UDP).unwrap();
    // Entry 0 is "none"; 65,535 more fit.
    for i in 0..65_535u32 {
        let o = Offloads {
            rx_usecs: i + 1,
            ..Offloads::LINUX
        };
        sim.set_offloads(first + i, o).unwrap();
    }
    let new = Offloads {
        rx_usecs: 1_000_000,
        ..Offloads::LINUX
    };
    let err = sim.set_offloads(first + 65_535, new).unwrap_err();
    assert!(err.to_string().contains("'h-65535'"), "{err}");
    // Settings already in the table, and none, still go.
    sim.set_offloads(first + 65_535, Offloads::LINUX).unwrap();
    sim.set_offloads(first + 65_536, Offloads::default())
        .unwrap();
}
