//! The socket API's errors, as a C programmer would expect them.

use crate::common::*;
use elvis_sim::{Host, Protocols, Simulation, SocketError};
use std::cell::RefCell;
use std::net::Ipv4Addr;
use std::rc::Rc;

#[test]
fn binding_a_taken_port_fails_with_addr_in_use() {
    let (mut sim, a, _) = pair(1, switch("lan", None, 0));
    sim.spawn(a, "binder", |host: Host| async move {
        let first = host.udp_bind(7)?;
        assert_eq!(host.udp_bind(7).unwrap_err(), SocketError::AddrInUse(7));
        // Ephemeral ports skip it; closing frees it.
        let other = host.udp_bind(0)?;
        assert_ne!(other.local_port(), 7);
        assert!(other.local_port() >= 49_152);
        drop(first);
        host.udp_bind(7)?;
        Ok(())
    });
    assert_success(&sim.run());
}

#[test]
fn sending_where_no_network_reaches_fails_with_host_unreachable() {
    let (mut sim, a, _) = pair(1, switch("lan", None, 0));
    sim.spawn(a, "sender", |host: Host| async move {
        let sock = host.udp_bind(0)?;
        let nowhere = Ipv4Addr::new(192, 168, 99, 99);
        let err = sock.send_to(b"x".to_vec(), sa(nowhere, 7)).await;
        assert_eq!(err.unwrap_err(), SocketError::HostUnreachable(nowhere));
        Ok(())
    });
    let report = sim.run();
    assert_success(&report);
    assert_eq!(report.packets.frames_sent, 0);
}

#[test]
fn resolving_names_follows_the_host_table() {
    let mut sim = Simulation::new(1);
    let lan = sim.add_network(switch("lan", None, 0));
    let solo = sim.add_machine("solo");
    let grp = sim.add_group("grp", Some(3), Protocols::UDP).unwrap();
    sim.attach(solo, lan, nth_ip(0)).unwrap();
    for i in 0..3 {
        sim.attach(grp + i, lan, nth_ip(1 + i)).unwrap();
    }
    sim.spawn(solo, "resolver", |host: Host| async move {
        assert_eq!(host.resolve("solo")?, nth_ip(0));
        assert_eq!(host.resolve("grp-2")?, nth_ip(3));
        assert_eq!(host.resolve("1.2.3.4")?, Ipv4Addr::new(1, 2, 3, 4));
        for name in ["nobody", "grp", "grp-3", "solo-0", "grp-x"] {
            assert_eq!(
                host.resolve(name).unwrap_err(),
                SocketError::UnknownHost(name.into()),
                "{name}"
            );
        }
        Ok(())
    });
    assert_success(&sim.run());
}

#[test]
fn a_connected_socket_gets_connection_refused_after_the_peer_closes_its_port() {
    let (mut sim, a, b) = pair(1, switch("lan", Some(10_000_000), 1_000));
    sim.spawn(b, "server", |host: Host| async move {
        let sock = host.udp_bind(9)?;
        let (msg, from) = sock.recv_from().await?;
        sock.send_to(msg, from).await?;
        sock.close(); // port 9 is closed from now on
        Ok(())
    });
    sim.spawn(a, "client", |host: Host| async move {
        let sock = host.udp_bind(0)?;
        sock.connect(sa(nth_ip(1), 9))?;
        sock.send(b"one".to_vec()).await?;
        assert_eq!(sock.recv().await?.to_vec(), b"one");
        sock.send(b"two".to_vec()).await?;
        assert_eq!(
            sock.recv().await.unwrap_err(),
            SocketError::ConnectionRefused
        );
        Ok(())
    });
    let report = sim.run();
    assert_success(&report);
    assert_eq!(dropped(&report, "no_socket"), 1);
}

#[test]
fn an_unconnected_socket_refuses_send_and_oversized_datagrams() {
    let (mut sim, a, _) = pair(1, switch("lan", None, 0));
    sim.spawn(a, "sender", |host: Host| async move {
        let sock = host.udp_bind(0)?;
        let err = sock.send(b"x".to_vec()).await.unwrap_err();
        assert_eq!(err, SocketError::NotConnected);
        let huge = vec![0u8; 65_508];
        let err = sock.send_to(huge, sa(nth_ip(1), 7)).await.unwrap_err();
        assert_eq!(err, SocketError::MessageTooLong(65_508));
        Ok(())
    });
    assert_success(&sim.run());
}

#[test]
fn udp_on_a_machine_without_udp_is_protocol_not_available() {
    let mut sim = Simulation::new(1);
    let lan = sim.add_network(switch("lan", None, 0));
    let bare = Protocols {
        udp: false,
        arp: false,
        tcp: false,
    };
    let m = sim.add_group("bare", None, bare).unwrap();
    sim.attach(m, lan, nth_ip(0)).unwrap();
    sim.spawn(m, "binder", |host: Host| async move {
        assert_eq!(
            host.udp_bind(7).unwrap_err(),
            SocketError::ProtocolNotAvailable("UDP")
        );
        Ok(())
    });
    assert_success(&sim.run());
}

#[test]
fn the_socket_api_outside_a_run_returns_not_in_simulation() {
    let (mut sim, a, _) = pair(1, switch("lan", None, 0));
    let outside: Rc<RefCell<Option<Host>>> = Rc::default();
    let keep = outside.clone();
    sim.spawn(a, "app", move |host: Host| {
        // The closure itself runs at spawn time, before the run.
        assert_eq!(host.udp_bind(7).unwrap_err(), SocketError::NotInSimulation);
        *keep.borrow_mut() = Some(host);
        async { Ok(()) }
    });
    assert_success(&sim.run());
    // After the run.
    let host = outside.borrow().expect("host kept");
    assert_eq!(host.udp_bind(7).unwrap_err(), SocketError::NotInSimulation);
    assert_eq!(
        host.icmp_socket(1).unwrap_err(),
        SocketError::NotInSimulation
    );
    assert_eq!(host.resolve("a").unwrap_err(), SocketError::NotInSimulation);
    assert_eq!(
        host.join_multicast(Ipv4Addr::new(239, 0, 0, 1))
            .unwrap_err(),
        SocketError::NotInSimulation
    );
    assert_eq!(host.now(), elvis_sim::Time::ZERO);
    assert_eq!(host.name(), "");
    assert_eq!(host.ip(), None);
}

/// Returns the first byte of a datagram's payload.
fn first_byte(mut m: elvis_message::Message) -> u8 {
    m.front(1).map_or(u8::MAX, |b| b[0])
}

#[test]
fn datagrams_that_wait_come_out_in_arrival_order_within_the_receive_buffer() {
    // Five 32-byte datagrams reach a socket whose buffer holds three while
    // its application sleeps: the first three wait (the first inside the
    // socket, the others in its overflow queue), the last two are dropped
    // as `socket_buffer_full`; once drained, the buffer takes more.
    let (mut sim, a, b) = pair(1, switch("lan", None, 1_000));
    let got: Rc<RefCell<Vec<u8>>> = Rc::default();
    let seen = got.clone();
    sim.spawn(b, "receiver", move |host: Host| async move {
        let sock = host.udp_bind(9)?;
        sock.set_recv_buffer(3 * 32)?;
        host.sleep(std::time::Duration::from_millis(1)).await;
        while let Some((m, from)) = sock.try_recv_from()? {
            assert_eq!(from, sa(nth_ip(0), 5));
            seen.borrow_mut().push(first_byte(m));
        }
        for _ in 0..2 {
            let (m, _) = sock.recv_from().await?;
            seen.borrow_mut().push(first_byte(m));
        }
        Ok(())
    });
    sim.spawn(a, "sender", |host: Host| async move {
        let sock = host.udp_bind(5)?;
        let to = sa(nth_ip(1), 9);
        for i in 0..5u8 {
            sock.send_to(vec![i; 32], to).await?;
        }
        host.sleep(std::time::Duration::from_millis(2)).await;
        for i in 5..7u8 {
            sock.send_to(vec![i; 32], to).await?;
        }
        Ok(())
    });
    let report = sim.run();
    assert_success(&report);
    assert_eq!(*got.borrow(), [0, 1, 2, 5, 6]);
    assert_eq!(dropped(&report, "socket_buffer_full"), 2);
}

#[test]
fn a_udp_socket_outliving_its_crashed_machine_reports_bad_descriptor() {
    let (mut sim, a, b) = pair(1, switch("lan", None, 0));
    let handoff: Rc<RefCell<Option<elvis_sim::UdpSocket>>> = Rc::default();
    let put = handoff.clone();
    sim.spawn(a, "crasher", move |host: Host| async move {
        *put.borrow_mut() = Some(host.udp_bind(9)?);
        host.sleep(std::time::Duration::from_millis(1)).await;
        panic!("machine a goes down");
    });
    let outcome: Rc<RefCell<Vec<SocketError>>> = Rc::default();
    let out = outcome.clone();
    sim.spawn(b, "survivor", move |host: Host| async move {
        host.sleep(std::time::Duration::from_millis(2)).await;
        let sock = handoff.borrow_mut().take().expect("socket handed over");
        out.borrow_mut().push(sock.try_recv_from().unwrap_err());
        out.borrow_mut()
            .push(sock.connect(sa(nth_ip(1), 1)).unwrap_err());
        let err = sock.recv_from().await.unwrap_err();
        out.borrow_mut().push(err);
        // A send reads the socket from its handle, not the table: it must
        // see the close too.
        let err = sock.send_to(vec![1u8; 8], sa(nth_ip(1), 1)).await;
        out.borrow_mut().push(err.unwrap_err());
        Ok(())
    });
    sim.run();
    assert_eq!(*outcome.borrow(), [const { SocketError::BadDescriptor }; 4]);
}
