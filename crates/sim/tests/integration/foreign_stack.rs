use elvis_sim::foreign::*;
use elvis_sim::{Host, NetworkConfig, NetworkKind, Simulation, Time};
use std::cell::RefCell;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::rc::Rc;

type Log = Rc<RefCell<Vec<String>>>;

/// At 5 ms sends 40 raw frames (more than the NIC's 32), going on
/// each time the NIC has room; logs what it sees.
struct Burst {
    log: Log,
    left: u32,
}

impl ForeignStack for Burst {
    fn receive(&mut self, cx: &mut ForeignCtx<'_>, iface: usize, frame: &[u8]) {
        let to_us = frame[..6] == cx.mac(iface).unwrap();
        let line = format!("rx {} {} {to_us}", cx.now().as_nanos(), frame.len());
        self.log.borrow_mut().push(line);
    }

    fn poll(&mut self, cx: &mut ForeignCtx<'_>) {
        let now = cx.now();
        self.log
            .borrow_mut()
            .push(format!("poll {}", now.as_nanos()));
        if now == Time::ZERO {
            // A later request than a pending one is ignored.
            cx.poll_at(Time::from_millis(7));
            cx.poll_at(Time::from_millis(5));
            cx.poll_at(Time::from_millis(9));
            return;
        }
        let mut frame = vec![0xff; 6];
        frame.extend_from_slice(&cx.mac(0).unwrap());
        frame.extend_from_slice(&[0x88, 0xb5, 1, 2, 3]);
        assert_eq!(cx.transmit(&frame[..10]), Err(TransmitError::TooShort(10)));
        assert_eq!(
            cx.transmit_on(1, &frame),
            Err(TransmitError::NoSuchInterface(1))
        );
        let big = vec![0u8; 14 + 1501];
        assert!(matches!(
            cx.transmit(&big),
            Err(TransmitError::TooLong { mtu: 1500, .. })
        ));
        while self.left > 0 {
            match cx.transmit(&frame) {
                Ok(()) => self.left -= 1,
                Err(TransmitError::NicFull(0)) => {
                    self.log.borrow_mut().push(format!("full {}", self.left));
                    break;
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
}

#[test]
fn a_foreign_stack_is_polled_sends_through_a_full_nic_and_receives_frames() {
    let mut sim = Simulation::new(3);
    let mut cfg = NetworkConfig::ideal("link").with_rate(100_000_000, 0);
    cfg.kind = NetworkKind::Link;
    let net = sim.add_network(cfg);
    let log = Log::default();
    let stack = Burst {
        log: log.clone(),
        left: 40,
    };
    let f = sim.add_foreign_machine("foreign", Box::new(stack)).unwrap();
    let ours = sim.add_machine("ours");
    sim.attach(f, net, Ipv4Addr::new(10, 0, 0, 9)).unwrap();
    sim.attach(ours, net, Ipv4Addr::new(10, 0, 0, 1)).unwrap();
    sim.spawn(ours, "sender", |h: Host| async move {
        let s = h.udp_bind(0)?;
        let to = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 9), 7);
        s.send_to(vec![7u8; 100], to).await?;
        Ok(())
    });
    let report = sim.run();
    assert!(report.success(), "{:?}", report.problems);
    let log = log.borrow();
    // The datagram: 14 + 20 + 8 + 100 bytes, to our MAC, after one
    // serialization (142 bytes at 100 Mbit/s: 11,360 ns).
    // Polled at 5 ms (not 7 or 9); 32 frames fit, the other 8 go
    // together once a quarter of the NIC's 32 slots are free again
    // (`net::wake_watermark`): after 8 frames of 60 bytes (4,800 ns
    // each at 100 Mbit/s).
    let want = [
        "poll 0",
        "rx 11360 142 true",
        "poll 5000000",
        "full 8",
        "poll 5038400",
    ];
    assert_eq!(*log, want);
    let n = &report.networks[0].stats;
    assert_eq!(n.frames_sent, 41);
    assert_eq!(n.frames_delivered, 41);
    // Our stack drops the 40 raw frames: unknown EtherType.
    assert_eq!(report.packets.dropped.values().sum::<u64>(), 40);
}
