//! Queues: NIC back-pressure (`txqueuelen`) and switch drop-tail.

use crate::common::*;
use elvis_sim::{Host, NetworkConfig, Simulation};

/// One sender sends `n` datagrams as fast as it can over a link (its NIC
/// on the evented path or not); checks when each send returns, when the
/// last arrives, and that nothing was dropped.
fn blast(n: usize, txqueuelen: u32, evented: bool) {
    let (bps, lat, payload) = (10_000_000, 1_000_000, 100);
    let mut cfg = link("l", Some(bps), lat);
    cfg.txqueuelen = txqueuelen;
    let (mut sim, a, b) = pair(1, cfg);
    sim.set_evented_queues(evented);
    let sent_at = log::<u64>();
    let tx = sent_at.clone();
    let received = log::<u64>();
    let rx = received.clone();
    sim.spawn_daemon(b, "sink", move |host: Host| async move {
        let sock = host.udp_bind(7)?;
        loop {
            sock.recv().await?;
            rx.borrow_mut().push(host.now().as_nanos());
        }
    });
    sim.spawn(a, "source", move |host: Host| async move {
        let sock = host.udp_bind(0)?;
        for _ in 0..n {
            sock.send_to(vec![0x55; payload], sa(nth_ip(1), 7)).await?;
            tx.borrow_mut().push(host.now().as_nanos());
        }
        Ok(())
    });
    let report = sim.run();
    assert_success(&report);
    let ser = ser_ns(udp_frame_len(payload), bps);
    // The NIC holds at most q frames, the one being serialized included;
    // the first q sends return at once. On the evented path a blocked
    // sender is woken as each frame leaves: send i (0-based) returns once
    // frame i − q has left the NIC, at (i − q + 1)·ser. Otherwise it is
    // woken once b = max(1, q/4) slots are free: sends q + gb … q + gb +
    // b − 1 return together when frame (g + 1)b − 1 leaves, at
    // (g + 1)·b·ser.
    let q = txqueuelen as u64;
    let b = (q / 4).max(1);
    let want: Vec<u64> = (0..n as u64)
        .map(|i| match i.checked_sub(q) {
            None => 0,
            Some(_) if evented => (i + 1 - q) * ser,
            Some(k) => (k / b + 1) * b * ser,
        })
        .collect();
    assert!(*sent_at.borrow() == want, "send completion times");
    assert_eq!(received.borrow().len(), n);
    assert_eq!(report.packets.dropped_total, 0, "{:?}", report.packets);
    assert_eq!(report.networks[0].stats.frames_sent, n as u64);
    assert_eq!(report.sim_time_ns, n as u64 * ser + lat);
}

#[test]
fn a_fast_sender_never_has_more_than_txqueuelen_frames_queued() {
    for evented in [false, true] {
        blast(10_000, NetworkConfig::DEFAULT_TXQUEUELEN, evented);
        blast(2_000, 1, evented);
        blast(2_000, 7, evented);
    }
}

/// `senders` machines each send one datagram at t = 0 to one sink across
/// a switch with output queues of `queue`; returns the arrival times and
/// the report.
fn incast(senders: u32, queue: Option<u32>) -> (Vec<u64>, elvis_sim::Report) {
    let (bps, lat, payload) = (10_000_000, 10_000, 64);
    let mut sim = Simulation::new(3);
    let mut cfg = switch("lan", Some(bps), lat);
    cfg.queue = queue;
    let lan = sim.add_network(cfg);
    let sink = sim.add_machine("sink");
    sim.attach(sink, lan, nth_ip(0)).unwrap();
    let first = sim
        .add_group("sender", Some(senders), elvis_sim::Protocols::UDP)
        .unwrap();
    let arrivals = log::<u64>();
    let rx = arrivals.clone();
    sim.spawn_daemon(sink, "sink", move |host: Host| async move {
        let sock = host.udp_bind(7)?;
        loop {
            sock.recv().await?;
            rx.borrow_mut().push(host.now().as_nanos());
        }
    });
    for i in 0..senders {
        sim.attach(first + i, lan, nth_ip(1 + i)).unwrap();
        sim.spawn(first + i, "send", |host: Host| async move {
            let sock = host.udp_bind(0)?;
            sock.send_to(vec![1; payload], sa(nth_ip(0), 7)).await?;
            Ok(())
        });
    }
    let report = sim.run();
    assert_success(&report);
    let arrivals = arrivals.borrow().clone();
    let ser = ser_ns(udp_frame_len(payload), bps);
    // All frames reach the switch together at ser + L; the sink's port
    // sends them one after the other.
    let want: Vec<u64> = (1..=arrivals.len() as u64)
        .map(|k| ser + lat + k * ser)
        .collect();
    assert_eq!(arrivals, want);
    (arrivals, report)
}

#[test]
fn a_switch_port_serializes_one_frame_while_queue_frames_wait_and_drops_the_rest() {
    // 50 frames reach the sink's port at once: the first starts onto the
    // wire, 10 wait in the queue, 39 are dropped.
    let (got, report) = incast(50, Some(10));
    assert_eq!(got.len(), 11);
    assert_eq!(dropped(&report, "queue_full"), 39);
    assert_eq!(report.networks[0].stats.queue_drops, 39);
    assert_eq!(report.packets.dropped_total, 39);
    // A queue of one: one on the wire, one waiting.
    let (got, report) = incast(50, Some(1));
    assert_eq!(got.len(), 2);
    assert_eq!(dropped(&report, "queue_full"), 48);
}

#[test]
fn an_unbounded_switch_queue_delivers_every_frame() {
    let (got, report) = incast(50, None);
    assert_eq!(got.len(), 50);
    assert_eq!(report.packets.dropped_total, 0);
}
