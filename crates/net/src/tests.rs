//! The network layer on its own: a test context with an event queue and
//! a record of what reached each machine, no protocol stack. Each test
//! checks timing or a drop against the closed form of the model in the
//! crate documentation.

use crate::*;
use elvis_kernel::EventQueue;

/// What reached a machine: when, on which network and port, and the frame.
#[derive(Clone, Debug, PartialEq)]
struct Arrival {
    at_ns: u64,
    net: NetId,
    port: u32,
    bytes: Vec<u8>,
    nested: bool,
}

/// A context that records arrivals, drops and wake-ups.
#[derive(Default)]
struct TestCtx {
    fabric: Fabric,
    queue: EventQueue<NetEvent>,
    arrivals: Vec<Arrival>,
    drops: Vec<DropReason>,
    woken: Vec<(u64, TaskId)>,
}

impl Context for TestCtx {
    fn fabric(&self) -> &Fabric {
        &self.fabric
    }
    fn fabric_mut(&mut self) -> &mut Fabric {
        &mut self.fabric
    }
    fn now(&self) -> Time {
        self.queue.now()
    }
    fn schedule(&mut self, at: Time, event: NetEvent) {
        self.queue.schedule(at, event.net(), event);
    }
    fn dropped(&mut self, reason: DropReason) {
        self.drops.push(reason);
    }
    fn arrived(&mut self, net: NetId, port: u32, frame: FrameId) {
        let frame = self.fabric.frames.remove(frame as usize);
        self.received(net, port, &mut frame.clone(), false);
    }
    fn received(&mut self, net: NetId, port: u32, frame: &mut Message, nested: bool) {
        self.arrivals.push(Arrival {
            at_ns: self.queue.now().as_nanos(),
            net,
            port,
            bytes: frame.to_vec(),
            nested,
        });
    }
    fn take_early(&mut self, _: MachineId, _: IfaceId, _: FrameId, _: u64) -> bool {
        false
    }
    fn wake_task(&mut self, task: TaskId) {
        self.woken.push((self.queue.now().as_nanos(), task));
    }
    fn room_for_stack(&mut self, _: MachineId) {}
    fn room_for_endpoint(&mut self, _: MachineId, _: u32) {}
}

impl TestCtx {
    /// Adds a network with `ports` machines (machine i on port i).
    fn network(&mut self, cfg: NetworkConfig, ports: u32) -> NetId {
        let id = self.fabric.networks.len() as NetId;
        let mut n = Network::new(id, cfg, 1);
        for p in 0..ports {
            n.add_port(p, 0);
        }
        self.fabric.networks.push(n);
        id
    }

    /// Sends a frame of `len` bytes from `port` to `to` (a port, or the
    /// broadcast address for `None`) at the present.
    fn send(&mut self, net: NetId, port: u32, to: Option<u32>, len: usize, tag: u8) {
        let mut bytes = vec![tag; len];
        let dst = to.map_or([0xff; 6], |t| port_mac(net, t).0);
        bytes[0..6].copy_from_slice(&dst);
        bytes[6..12].copy_from_slice(&port_mac(net, port).0);
        transmit(self, net, port, &mut Message::from_vec(bytes));
    }

    /// Runs every event.
    fn run(&mut self) {
        while let Some((_, event)) = self.queue.pop() {
            handle(self, event);
        }
    }

    fn run_until(&mut self, t: u64) {
        while self.queue.peek_time().is_some_and(|at| at.as_nanos() <= t) {
            let (_, event) = self.queue.pop().expect("peeked");
            handle(self, event);
        }
    }

    fn arrival_times(&self) -> Vec<u64> {
        self.arrivals.iter().map(|a| a.at_ns).collect()
    }
}

const MBPS_10: u64 = 10_000_000;
/// 1000 bytes at 10 Mbit/s.
const SER_1000: u64 = 800_000;

fn link(bps: u64, latency_ns: u64) -> NetworkConfig {
    NetworkConfig {
        kind: NetworkKind::Link,
        ..NetworkConfig::ideal("l").with_rate(bps, latency_ns)
    }
}

#[test]
fn a_link_delivers_after_serialization_plus_latency_back_to_back() {
    for evented in [false, true] {
        let mut c = TestCtx::default();
        c.fabric.config.evented_queues = evented;
        let net = c.network(link(MBPS_10, 5_000_000), 2);
        for tag in 0..3 {
            c.send(net, 0, Some(1), 1000, tag);
        }
        c.run();
        let l = 5_000_000;
        assert_eq!(
            c.arrival_times(),
            [SER_1000 + l, 2 * SER_1000 + l, 3 * SER_1000 + l],
            "evented: {evented}"
        );
        assert!(c
            .arrivals
            .iter()
            .all(|a| a.port == 1 && a.bytes.len() == 1000));
        let stats = &c.fabric.networks[0].stats;
        assert_eq!((stats.frames_sent, stats.frames_delivered), (3, 3));
        assert_eq!(c.fabric.frames.len(), 0, "no frame left in the slab");
    }
}

#[test]
fn a_switch_serializes_twice_and_forwards_by_mac() {
    let mut c = TestCtx::default();
    let net = c.network(NetworkConfig::ideal("s").with_rate(MBPS_10, 1_000), 3);
    c.send(net, 0, Some(2), 1000, 7);
    c.run();
    assert_eq!(c.arrival_times(), [SER_1000 + 1_000 + SER_1000]);
    assert_eq!(c.arrivals[0].port, 2);
    assert_eq!(c.arrivals[0].bytes[20], 7);
}

#[test]
fn a_broadcast_reaches_every_other_port_and_an_unknown_mac_none() {
    let mut c = TestCtx::default();
    let net = c.network(NetworkConfig::ideal("s").with_rate(MBPS_10, 0), 4);
    c.send(net, 1, None, 100, 1);
    c.run();
    let mut ports: Vec<u32> = c.arrivals.iter().map(|a| a.port).collect();
    ports.sort();
    assert_eq!(ports, [0, 2, 3]);

    let mut bytes = vec![0u8; 100];
    bytes[0..6].copy_from_slice(&[0x02, 0x77, 0, 0, 0, 9]);
    transmit(&mut c, net, 0, &mut Message::from_vec(bytes));
    c.run();
    assert_eq!(c.drops, [DropReason::UnknownDestination]);
    assert_eq!(c.arrivals.len(), 3);
}

#[test]
fn a_full_switch_port_drops_the_arrival_that_finds_it_full() {
    // Two senders, three 1000-byte frames each, to one port holding two
    // waiting frames, no latency. The port gets two frames every S/B from
    // 1 S/B on and serializes one per S/B, departures before arrivals at
    // an instant: at 3 S/B it holds two waiting frames and a third
    // arrives, so exactly one is dropped and five leave, one per S/B
    // from 2 S/B.
    for evented in [false, true] {
        let mut c = TestCtx::default();
        c.fabric.config.evented_queues = evented;
        let cfg = NetworkConfig {
            queue: Some(2),
            ..NetworkConfig::ideal("s").with_rate(MBPS_10, 0)
        };
        let net = c.network(cfg, 3);
        for tag in 0..3 {
            c.send(net, 0, Some(2), 1000, tag);
            c.send(net, 1, Some(2), 1000, 10 + tag);
        }
        c.run();
        assert_eq!(c.drops, [DropReason::QueueFull], "evented: {evented}");
        let want: Vec<u64> = (2..=6).map(|k| k * SER_1000).collect();
        assert_eq!(c.arrival_times(), want, "evented: {evented}");
        let drops = c
            .fabric
            .queue_drops
            .get(&(net, (2 << 1) | 1, DropReason::QueueFull));
        assert_eq!(drops, Some(&1));
    }
}

#[test]
fn an_ideal_network_delivers_at_once_nested_or_after_its_latency() {
    let mut c = TestCtx::default();
    let now = c.network(NetworkConfig::ideal("now"), 2);
    c.send(now, 0, Some(1), 60, 1);
    assert_eq!(c.arrivals.len(), 1, "delivered within the send");
    assert!(c.arrivals[0].nested);

    let later = c.network(
        NetworkConfig {
            latency_ns: 3_000,
            ..NetworkConfig::ideal("later")
        },
        2,
    );
    c.send(later, 1, Some(0), 60, 2);
    assert_eq!(
        nic_frames(&c, later, 1),
        1,
        "held by the NIC until delivered"
    );
    c.run();
    assert_eq!(c.arrivals[1].at_ns, 3_000);
    assert!(!c.arrivals[1].nested);
    assert_eq!(nic_frames(&c, later, 1), 0);
}

#[test]
fn certain_loss_drops_every_frame_and_certain_corruption_flips_one_bit() {
    let mut c = TestCtx::default();
    let lossy = c.network(
        NetworkConfig {
            loss: 1.0,
            ..link(MBPS_10, 0)
        },
        2,
    );
    for tag in 0..4 {
        c.send(lossy, 0, Some(1), 200, tag);
    }
    c.run();
    assert!(c.arrivals.is_empty());
    assert_eq!(c.drops, [DropReason::Loss; 4]);
    assert_eq!(c.fabric.networks[lossy as usize].stats.lost, 4);

    let flipping = c.network(
        NetworkConfig {
            corruption: 1.0,
            ..link(MBPS_10, 0)
        },
        2,
    );
    c.send(flipping, 0, Some(1), 200, 0x55);
    c.run();
    let mut sent = [0x55u8; 200];
    sent[0..6].copy_from_slice(&port_mac(flipping, 1).0);
    sent[6..12].copy_from_slice(&port_mac(flipping, 0).0);
    let got = &c.arrivals[0].bytes;
    let flipped: u32 = sent
        .iter()
        .zip(got)
        .map(|(a, b)| (a ^ b).count_ones())
        .sum();
    assert_eq!(flipped, 1);
}

#[test]
fn a_duplicate_arrives_right_after_its_original_and_a_reordered_frame_late() {
    let mut c = TestCtx::default();
    let dup = c.network(
        NetworkConfig {
            duplicate: 1.0,
            ..link(MBPS_10, 1_000)
        },
        2,
    );
    c.send(dup, 0, Some(1), 1000, 3);
    c.run();
    assert_eq!(c.arrival_times(), [SER_1000 + 1_000; 2]);
    assert_eq!(c.arrivals[0].bytes, c.arrivals[1].bytes);

    let mut c = TestCtx::default();
    let late = c.network(
        NetworkConfig {
            reorder: 1.0,
            reorder_delay_ns: 50_000,
            ..link(MBPS_10, 1_000)
        },
        2,
    );
    c.send(late, 0, Some(1), 1000, 3);
    c.run();
    assert_eq!(c.arrival_times(), [SER_1000 + 1_000 + 50_000]);
}

#[test]
fn a_waiting_task_is_woken_once_a_quarter_of_the_nic_is_free() {
    // txqueuelen 8: the NIC takes 8 frames; a task waiting for room is
    // woken when 6 remain (a quarter free), i.e. when the second frame's
    // serialization ends.
    let mut c = TestCtx::default();
    let cfg = NetworkConfig {
        txqueuelen: 8,
        ..link(MBPS_10, 0)
    };
    let net = c.network(cfg, 2);
    for tag in 0..8 {
        c.send(net, 0, Some(1), 1000, tag);
    }
    assert_eq!(nic_room(&c, net, 0), 0);
    wait_for_room_task(&mut c, net, 0, Some(42));
    c.run_until(2 * SER_1000 - 1);
    assert!(c.woken.is_empty());
    c.run_until(2 * SER_1000);
    assert_eq!(c.woken, [(2 * SER_1000, 42)]);
    assert_eq!(nic_room(&c, net, 0), 2);
    assert_eq!(wake_watermark(8), 6);
    c.run();
    assert_eq!(c.arrivals.len(), 8);
}

#[test]
fn a_frame_train_arrives_as_its_frames_would_one_by_one() {
    let mut one = TestCtx::default();
    let net = one.network(link(MBPS_10, 2_000), 2);
    for tag in 0..4 {
        one.send(net, 0, Some(1), if tag < 3 { 1000 } else { 400 }, tag);
    }
    one.run();

    let mut train = TestCtx::default();
    let net = train.network(link(MBPS_10, 2_000), 2);
    let t = enqueue_train(&mut train, net, 0, 1000, 400, 4).expect("an idle FIFO takes it");
    let times = one.arrival_times();
    assert_eq!((t.first, t.step, t.last), (times[0], SER_1000, times[3]));
    assert_eq!(train.fabric.networks[0].stats.frames_sent, 4);
    assert_eq!(train.fabric.frames_sent, 4);
}

#[test]
fn marking_ce_keeps_the_ipv4_header_checksum_valid() {
    // Ethernet + a 20-byte IPv4 header with ECT(0) and a valid checksum.
    let mut f = vec![0u8; 14];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let mut ip = [
        0x45, 0x02, 0x00, 0x1c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 10, 0, 0, 1, 10, 0,
        0, 2,
    ];
    let sum = |h: &[u8]| -> u16 {
        let mut s: u32 = h
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        while s >> 16 != 0 {
            s = (s & 0xffff) + (s >> 16);
        }
        !(s as u16)
    };
    let c = sum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    let mut m = Message::from_vec(f);
    mark_ce(&mut m);
    let out = m.to_vec();
    assert_eq!(out[15] & 3, 3, "CE");
    assert_eq!(sum(&out[14..34]), 0, "checksum still verifies");
}

mod pfc {
    //! A paused priority waits for its pause quanta (512 bit times each)
    //! or an XON; the other priorities go on (IEEE 802.1Qbb).
    use super::*;
    use crate::pfc::{PfcConfig, PfcNet};
    use crate::qdisc::{ClassParams, Classify, Limit, QdiscConfig};
    use elvis_wire::pfc as wire;

    /// A 10 Mbit/s link with `prio` (DSCP 26 is class 0) and PFC on
    /// priority 0.
    fn pfc_link(latency_ns: u64) -> NetworkConfig {
        NetworkConfig {
            qdisc: Some(Box::new(QdiscConfig::Prio(ClassParams {
                classify: Classify::Dscp(vec![26]),
                weights: vec![0, 0],
                limit: Limit::Packets(100),
            }))),
            ..link(MBPS_10, latency_ns)
        }
    }

    /// An IPv4 frame of 1000 bytes with `dscp`, from port 0 to port 1.
    fn ipv4(net: NetId, dscp: u8, tag: u8) -> Message {
        let mut b = vec![tag; 1000];
        b[0..6].copy_from_slice(&port_mac(net, 1).0);
        b[6..12].copy_from_slice(&port_mac(net, 0).0);
        b[12..14].copy_from_slice(&[0x08, 0x00]);
        b[14] = 0x45;
        b[15] = dscp << 2;
        Message::from_vec(b)
    }

    /// Has a PFC frame for priority 0 reach port 0's NIC at `at_ns`.
    fn pause(c: &mut TestCtx, net: NetId, quanta: u16, at_ns: u64) {
        let repr = wire::Repr {
            src: port_mac(net, 1).0,
            enable: 1,
            quanta: [quanta, 0, 0, 0, 0, 0, 0, 0],
        };
        let frame = c.fabric.frames.insert(Message::from_vec(repr.to_bytes())) as FrameId;
        let q = QueueRef { net, port_dir: 0 };
        c.schedule(Time::from_nanos(at_ns), NetEvent::Pfc { q, frame });
    }

    fn setup(latency_ns: u64) -> (TestCtx, NetId) {
        let mut c = TestCtx::default();
        let cfg = pfc_link(latency_ns);
        let net = c.network(cfg.clone(), 2);
        let pfc = PfcConfig::new(1, 1500);
        pfc.validate(&cfg).unwrap();
        crate::pfc::enable(&mut c.fabric, net, pfc);
        (c, net)
    }

    #[test]
    fn a_paused_priority_waits_its_quanta_while_another_goes_on() {
        let (mut c, net) = setup(1_000);
        pause(&mut c, net, 20, 0);
        c.run();
        transmit(&mut c, net, 0, &mut ipv4(net, 26, 1));
        transmit(&mut c, net, 0, &mut ipv4(net, 0, 2));
        c.run();
        // 20 quanta at 10 Mbit/s: 20 × 512 bits = 1,024 µs, longer than
        // the lossy frame's 800 µs on the wire.
        let resume = 20 * 512 * 100;
        let tags: Vec<(u64, u8)> = c.arrivals.iter().map(|a| (a.at_ns, a.bytes[20])).collect();
        assert_eq!(
            tags,
            [(SER_1000 + 1_000, 2), (resume + SER_1000 + 1_000, 1)]
        );
        let ports = crate::pfc::ports(&c.fabric, c.now().as_nanos());
        assert_eq!(ports[0].pauses_received, 1);
        assert_eq!(ports[0].paused_ns[0], resume);
    }

    #[test]
    fn an_xon_resumes_a_paused_priority_at_once() {
        let (mut c, net) = setup(1_000);
        pause(&mut c, net, 0xffff, 0);
        c.run_until(0);
        transmit(&mut c, net, 0, &mut ipv4(net, 26, 1));
        pause(&mut c, net, 0, 100_000);
        c.run();
        assert_eq!(c.arrival_times(), [100_000 + SER_1000 + 1_000]);
        let ports = crate::pfc::ports(&c.fabric, c.now().as_nanos());
        assert_eq!((ports[0].pauses_received, ports[0].xons_received), (1, 1));
        assert_eq!(ports[0].paused_ns[0], 100_000);
    }

    #[test]
    fn the_headroom_is_two_bandwidth_delays_a_pause_and_three_frames() {
        // 10 Gbit/s, 1 µs: 2 × 1,250 + 60 + 3 × 1,514 = 7,102 bytes.
        let cfg = NetworkConfig {
            qdisc: pfc_link(0).qdisc,
            ..link(10_000_000_000, 1_000)
        };
        let p = PfcNet::new(PfcConfig::new(1, 1500), &cfg);
        assert_eq!(p.headroom, 7_102);
    }

    #[test]
    fn pfc_without_priority_classes_is_refused() {
        let cfg = link(MBPS_10, 0);
        let e = PfcConfig::new(1, 1500).validate(&cfg).unwrap_err();
        assert_eq!(e.0, "pfc");
        let mut p = PfcConfig::new(0b100, 1500);
        assert_eq!(p.validate(&pfc_link(0)).unwrap_err().0, "pfc");
        p.lossless = 1;
        p.xon = p.xoff;
        assert_eq!(p.validate(&pfc_link(0)).unwrap_err().0, "pfc_xon");
    }
}
