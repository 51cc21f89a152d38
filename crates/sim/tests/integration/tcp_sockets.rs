//! The stream-socket API against Linux semantics: options set before
//! `connect`/`listen`, `SO_REUSEADDR` and TIME-WAIT, `SO_LINGER`, keep-alive
//! timing against its closed form, the backlog, and the errors
//! (`ConnectionReset` once then `BrokenPipe`, `NotConnected`, `AddrInUse`,
//! `InvalidInput`).

use crate::common::{dropped, link, log, nth_ip, sa};
use elvis_sim::{
    Congestion, Host, Keepalive, MachineId, NetworkConfig, Protocols, Shutdown, Simulation,
    SocketError, TcpConfig,
};
use std::time::Duration;

/// Two TCP machines on one point-to-point network.
fn tcp_pair(cfg: NetworkConfig) -> (Simulation, MachineId, MachineId) {
    let mut sim = Simulation::new(1);
    let net = sim.add_network(cfg);
    let a = sim.add_group("a", None, Protocols::UDP_TCP).unwrap();
    let b = sim.add_group("b", None, Protocols::UDP_TCP).unwrap();
    sim.attach(a, net, nth_ip(0)).unwrap();
    sim.attach(b, net, nth_ip(1)).unwrap();
    (sim, a, b)
}

/// An ideal link with 1 ms one way (RTT exactly 2 ms).
fn ms_link() -> NetworkConfig {
    link("path", None, 1_000_000)
}

/// Runs a client with keep-alive `k` against a server whose machine
/// crashes (silently, no RST) right after accepting; returns the client's
/// error and the time from connection to error (ns).
fn dead_peer(k: Keepalive) -> (Option<SocketError>, u64) {
    let (mut sim, a, b) = tcp_pair(ms_link());
    sim.spawn(b, "server", move |h: Host| async move {
        let l = h.tcp_listen(80, 1)?;
        let conn = l.accept().await?;
        // Crash without closing: no FIN, no RST, frames dropped from now on
        // (the handles are leaked so that unwinding does not close them).
        std::mem::forget((conn, l));
        panic!("power failure");
    });
    let seen = log();
    let s2 = seen.clone();
    sim.spawn(a, "client", move |h: Host| async move {
        let mut sock = h.tcp_socket()?;
        sock.set_keepalive(Some(k))?;
        let s = sock.connect(sa(nth_ip(1), 80)).await?;
        let t0 = h.now().as_nanos();
        let r = s.recv(100).await;
        s2.borrow_mut().push((r.err(), h.now().as_nanos() - t0));
        Ok(())
    });
    sim.run();
    let r = seen.borrow().first().cloned().expect("client finished");
    r
}

#[test]
fn keepalive_with_linux_defaults_detects_a_dead_peer_after_7875_seconds() {
    let (err, after) = dead_peer(Keepalive::default());
    assert_eq!(err, Some(SocketError::TimedOut));
    // tcp_keepalive_time + tcp_keepalive_probes * tcp_keepalive_intvl.
    assert_eq!(after, (7200 + 9 * 75) * 1_000_000_000);
}

#[test]
fn keepalive_settings_are_per_socket_and_follow_the_closed_form() {
    let k = Keepalive {
        time: Duration::from_secs(30),
        interval: Duration::from_secs(4),
        probes: 5,
    };
    let (err, after) = dead_peer(k);
    assert_eq!(err, Some(SocketError::TimedOut));
    assert_eq!(after, (30 + 5 * 4) * 1_000_000_000);
}

#[test]
fn keepalive_probes_to_a_live_peer_keep_an_idle_connection_open() {
    let (mut sim, a, b) = tcp_pair(ms_link());
    let got = log();
    let g2 = got.clone();
    sim.spawn(b, "server", move |h: Host| async move {
        let l = h.tcp_listen(80, 1)?;
        let (s, _) = l.accept().await?;
        let data = s.read_exact(4).await?.to_vec();
        g2.borrow_mut().push(data);
        Ok(())
    });
    let probes = log();
    let p2 = probes.clone();
    sim.spawn(a, "client", move |h: Host| async move {
        let mut sock = h.tcp_socket()?;
        sock.set_keepalive(Some(Keepalive {
            time: Duration::from_secs(60),
            interval: Duration::from_secs(10),
            probes: 3,
        }))?;
        let s = sock.connect(sa(nth_ip(1), 80)).await?;
        let before = s.stats()?.segments_sent;
        h.sleep(Duration::from_secs(3600)).await;
        p2.borrow_mut().push(s.stats()?.segments_sent - before);
        s.write_all(b"ping".to_vec()).await?;
        Ok(())
    });
    let r = sim.run();
    assert!(r.success(), "{:?}", r.problems);
    assert_eq!(got.borrow().as_slice(), &[b"ping".to_vec()]);
    // A probe 60 s after the last arrival, answered 2 ms later: one probe
    // every 60.002 s, the first at 60 s.
    let rtt: f64 = 0.002;
    let expected = ((3600.0 - 60.0) / (60.0 + rtt)).floor() as u64 + 1;
    assert_eq!(probes.borrow()[0], expected);
}

#[test]
fn keepalive_settings_outside_linux_ranges_are_invalid_input() {
    let (mut sim, a, _b) = tcp_pair(ms_link());
    let seen = log();
    let s2 = seen.clone();
    sim.spawn(a, "client", move |h: Host| async move {
        let mut sock = h.tcp_socket()?;
        let bad = Keepalive {
            probes: 0,
            ..Keepalive::default()
        };
        s2.borrow_mut().push(sock.set_keepalive(Some(bad)).err());
        Ok(())
    });
    sim.run();
    assert!(matches!(
        seen.borrow()[0],
        Some(SocketError::InvalidInput(_))
    ));
}

#[test]
fn reuseaddr_is_needed_to_listen_on_a_port_held_by_time_wait() {
    let (mut sim, a, b) = tcp_pair(ms_link());
    sim.set_tcp_config(TcpConfig {
        msl: Duration::from_secs(2),
        ..TcpConfig::default()
    });
    let seen = log();
    let s2 = seen.clone();
    sim.spawn(b, "server", move |h: Host| async move {
        {
            let l = h.tcp_listen(80, 1)?;
            let (s, _) = l.accept().await?;
            s.write_all(b"bye".to_vec()).await?;
            // Active close: this side ends in TIME-WAIT on port 80.
            s.shutdown(Shutdown::Write)?;
            assert!(s.recv(10).await?.is_empty());
        }
        h.sleep(Duration::from_millis(100)).await;
        s2.borrow_mut().push(h.tcp_listen(80, 1).err());
        let mut sock = h.tcp_socket()?;
        sock.set_reuseaddr(true);
        sock.bind(80)?;
        let l = sock.listen(1);
        s2.borrow_mut().push(l.err());
        // After 2 MSL the port is free for everyone.
        h.sleep(Duration::from_secs(4)).await;
        s2.borrow_mut().push(h.tcp_listen(80, 1).err());
        Ok(())
    });
    sim.spawn(a, "client", move |h: Host| async move {
        let s = h.tcp_connect(sa(nth_ip(1), 80)).await?;
        assert_eq!(s.read_exact(3).await?.to_vec(), b"bye");
        assert!(s.recv(10).await?.is_empty());
        Ok(())
    });
    let r = sim.run();
    assert!(r.success(), "{:?}", r.problems);
    assert_eq!(
        seen.borrow().as_slice(),
        &[Some(SocketError::AddrInUse(80)), None, None]
    );
}

#[test]
fn binding_misuse_gets_addr_in_use_or_invalid_input() {
    let (mut sim, a, _b) = tcp_pair(ms_link());
    let seen = log();
    let s2 = seen.clone();
    sim.spawn(a, "app", move |h: Host| async move {
        let _l = h.tcp_listen(80, 1)?;
        let mut s = h.tcp_socket()?;
        s2.borrow_mut().push(s.bind(80).err());
        s.bind(81)?;
        s2.borrow_mut().push(s.bind(82).err());
        let unbound = h.tcp_socket()?;
        s2.borrow_mut().push(unbound.listen(1).err());
        Ok(())
    });
    sim.run();
    let seen = seen.borrow();
    assert_eq!(seen[0], Some(SocketError::AddrInUse(80)));
    assert!(matches!(seen[1], Some(SocketError::InvalidInput(_))));
    assert!(matches!(seen[2], Some(SocketError::InvalidInput(_))));
}

/// The server's view after the client closes with `SO_LINGER` zero.
#[test]
fn linger_zero_resets_and_the_peer_sees_reset_once_then_broken_pipe() {
    let (mut sim, a, b) = tcp_pair(ms_link());
    let seen = log();
    let s2 = seen.clone();
    sim.spawn(b, "server", move |h: Host| async move {
        let l = h.tcp_listen(80, 1)?;
        let (s, _) = l.accept().await?;
        let mut data = Vec::new();
        let err = loop {
            match s.recv(100).await {
                Ok(m) if m.is_empty() => break None,
                Ok(m) => data.extend(m.to_vec()),
                Err(e) => break Some(e),
            }
        };
        let sent = s.send(b"x".to_vec()).await.err();
        let received = s.recv(1).await.map(|m| m.len()).err();
        let mut v = s2.borrow_mut();
        v.push((format!("{data:?}"), err));
        v.push(("send".into(), sent));
        v.push(("recv".into(), received));
        v.push(("shutdown".into(), s.shutdown(Shutdown::Both).err()));
        v.push(("peer_addr".into(), s.peer_addr().err()));
        Ok(())
    });
    sim.spawn(a, "client", move |h: Host| async move {
        let mut s = h.tcp_connect(sa(nth_ip(1), 80)).await?;
        s.write_all(b"abc".to_vec()).await?;
        s.set_linger(Some(Duration::ZERO));
        s.close().await?;
        Ok(())
    });
    let r = sim.run();
    assert!(r.success(), "{:?}", r.problems);
    let seen = seen.borrow();
    assert_eq!(
        seen.as_slice(),
        &[
            (
                format!("{:?}", b"abc".to_vec()),
                Some(SocketError::ConnectionReset)
            ),
            ("send".into(), Some(SocketError::BrokenPipe)),
            ("recv".into(), None),
            ("shutdown".into(), Some(SocketError::NotConnected)),
            ("peer_addr".into(), Some(SocketError::NotConnected)),
        ]
    );
}

#[test]
fn send_after_shutdown_write_is_a_broken_pipe() {
    let (mut sim, a, b) = tcp_pair(ms_link());
    let seen = log();
    let s2 = seen.clone();
    sim.spawn(b, "server", move |h: Host| async move {
        let l = h.tcp_listen(80, 1)?;
        let (s, _) = l.accept().await?;
        assert!(s.recv(10).await?.is_empty());
        Ok(())
    });
    sim.spawn(a, "client", move |h: Host| async move {
        let s = h.tcp_connect(sa(nth_ip(1), 80)).await?;
        s.shutdown(Shutdown::Write)?;
        let late = s.send(b"late".to_vec()).await.err();
        s2.borrow_mut().push(late);
        Ok(())
    });
    let r = sim.run();
    assert!(r.success(), "{:?}", r.problems);
    assert_eq!(seen.borrow()[0], Some(SocketError::BrokenPipe));
}

/// Writes `bytes` over 1 Mbit/s, 10 ms, then closes with linger `linger`;
/// returns the close's result, its duration (ns) and the bytes the
/// server got.
fn linger_close(bytes: usize, linger: Duration) -> (Result<(), SocketError>, u64, usize) {
    let (mut sim, a, b) = tcp_pair(link("slow", Some(1_000_000), 10_000_000));
    let got = log();
    let g2 = got.clone();
    sim.spawn(b, "server", move |h: Host| async move {
        let l = h.tcp_listen(80, 1)?;
        let (s, _) = l.accept().await?;
        let mut n = 0;
        loop {
            let m = s.recv(1 << 16).await?;
            if m.is_empty() {
                break;
            }
            n += m.len();
        }
        g2.borrow_mut().push(n);
        Ok(())
    });
    let seen = log();
    let s2 = seen.clone();
    sim.spawn(a, "client", move |h: Host| async move {
        let mut sock = h.tcp_socket()?;
        sock.set_linger(Some(linger));
        let s = sock.connect(sa(nth_ip(1), 80)).await?;
        s.write_all(vec![7u8; bytes]).await?;
        let t0 = h.now().as_nanos();
        let r = s.close().await;
        s2.borrow_mut().push((r, h.now().as_nanos() - t0));
        Ok(())
    });
    sim.run();
    let (r, took) = seen.borrow()[0].clone();
    let n = got.borrow().first().copied().unwrap_or(0);
    (r, took, n)
}

#[test]
fn linger_close_waits_until_the_data_is_acknowledged() {
    let (r, took, n) = linger_close(100_000, Duration::from_secs(10));
    assert_eq!(r, Ok(()));
    assert_eq!(n, 100_000);
    // At least the serialization of 100 kB at 1 Mbit/s (0.8 s).
    assert!(took >= 800_000_000, "{took}");
    assert!(took < 10_000_000_000, "{took}");
}

#[test]
fn linger_close_times_out_after_the_linger_time_and_still_delivers() {
    let (r, took, n) = linger_close(100_000, Duration::from_millis(100));
    assert_eq!(r, Err(SocketError::TimedOut));
    assert_eq!(took, 100_000_000);
    assert_eq!(n, 100_000);
}

/// Moves `bytes` over 1 Gbit/s with a 20 ms RTT, the server's receive
/// buffer set to `rcvbuf` (on the listener); returns the transfer time
/// (ns) and the buffer sizes the accepted stream reports.
fn windowed_transfer(bytes: usize, rcvbuf: Option<usize>) -> (u64, (usize, usize)) {
    let (mut sim, a, b) = tcp_pair(link("fat", Some(1_000_000_000), 10_000_000));
    let seen = log();
    let s2 = seen.clone();
    sim.spawn(b, "server", move |h: Host| async move {
        let mut sock = h.tcp_socket()?;
        if let Some(n) = rcvbuf {
            sock.set_recv_buffer_size(n);
        }
        sock.bind(80)?;
        let l = sock.listen(1)?;
        let (s, _) = l.accept().await?;
        let t0 = h.now().as_nanos();
        assert_eq!(s.read_exact(bytes).await?.len(), bytes);
        s2.borrow_mut()
            .push((h.now().as_nanos() - t0, s.buffer_sizes()?));
        Ok(())
    });
    sim.spawn(a, "client", move |h: Host| async move {
        let s = h.tcp_connect(sa(nth_ip(1), 80)).await?;
        s.write_all(vec![1u8; bytes]).await?;
        Ok(())
    });
    let r = sim.run();
    assert!(r.success(), "{:?}", r.problems);
    let v = seen.borrow()[0];
    v
}

#[test]
fn a_small_receive_buffer_caps_throughput_at_window_over_rtt() {
    let bytes = 4_000_000;
    let rcvbuf = 64 * 1024;
    let (small, sizes) = windowed_transfer(bytes, Some(rcvbuf));
    assert_eq!(sizes.1, rcvbuf);
    // Window-limited: at most rcvbuf per 20 ms RTT.
    let bound = bytes as f64 / (rcvbuf as f64 / 0.020) * 1e9;
    assert!(small as f64 >= bound, "{small} < {bound}");
    // The default (4 MiB, window scaling on) is not limited that way.
    let (big, sizes) = windowed_transfer(bytes, None);
    assert_eq!(sizes.1, TcpConfig::default().rcvbuf);
    assert!((big as f64) < bound / 2.0, "{big} vs {bound}");
}

#[test]
fn congestion_control_is_chosen_per_socket_and_inherited_on_accept() {
    let (mut sim, a, b) = tcp_pair(ms_link());
    let seen = log();
    let (s1, s2) = (seen.clone(), seen.clone());
    sim.spawn(b, "server", move |h: Host| async move {
        let mut sock = h.tcp_socket()?;
        sock.set_congestion(Congestion::Compound);
        sock.bind(80)?;
        let l = sock.listen(1)?;
        let (s, _) = l.accept().await?;
        s1.borrow_mut().push(("server", s.congestion()?));
        Ok(())
    });
    sim.spawn(a, "client", move |h: Host| async move {
        let mut sock = h.tcp_socket()?;
        sock.set_congestion(Congestion::NewReno);
        sock.set_nodelay(true);
        let s = sock.connect(sa(nth_ip(1), 80)).await?;
        s2.borrow_mut().push(("client", s.congestion()?));
        Ok(())
    });
    let r = sim.run();
    assert!(r.success(), "{:?}", r.problems);
    let mut v = seen.borrow().clone();
    v.sort();
    assert_eq!(v, vec![("client", "newreno"), ("server", "compound")]);
}

/// `TCP_CONGESTION` on a connected socket (Linux allows it): the new
/// algorithm takes over the window and threshold at the moment of the
/// switch, the transfer goes on, and the report names the new algorithm.
#[test]
fn congestion_control_can_be_changed_after_connect_keeping_the_window() {
    let (mut sim, a, b) = tcp_pair(ms_link());
    let seen = log();
    let s1 = seen.clone();
    const N: usize = 2_000_000;
    sim.spawn(b, "server", move |h: Host| async move {
        let l = h.tcp_listen(80, 1)?;
        let (s, _) = l.accept().await?;
        assert_eq!(s.read_exact(N).await?.len(), N);
        Ok(())
    });
    sim.spawn(a, "client", move |h: Host| async move {
        let mut sock = h.tcp_socket()?;
        sock.set_congestion(Congestion::NewReno);
        let s = sock.connect(sa(nth_ip(1), 80)).await?;
        s.write_all(vec![1u8; N / 2]).await?;
        let before = s.stats()?;
        s.set_congestion(Congestion::Cubic)?;
        let after = s.stats()?;
        s1.borrow_mut()
            .push((before.cwnd, after.cwnd, before.ssthresh, after.ssthresh));
        assert_eq!(s.congestion()?, "cubic");
        s.write_all(vec![2u8; N / 2]).await?;
        Ok(())
    });
    let r = sim.run();
    assert!(r.success(), "{:?}", r.problems);
    let (cw0, cw1, ss0, ss1) = seen.borrow()[0];
    assert!(cw0 > 10 * 1448, "the window grew before the switch");
    assert_eq!((cw1, ss1), (cw0, ss0), "window and threshold carried over");
    let client = r
        .tcp_connections
        .iter()
        .find(|c| c.stats.bytes_sent > 0)
        .unwrap();
    assert_eq!(client.congestion, "cubic");
    assert_eq!(client.stats.bytes_acked, N as u64);
}

#[test]
fn a_full_backlog_drops_syns_until_the_application_accepts() {
    let (mut sim, a, b) = tcp_pair(ms_link());
    let seen = log();
    let s2 = seen.clone();
    sim.spawn(b, "server", move |h: Host| async move {
        let l = h.tcp_listen(80, 1)?;
        h.sleep(Duration::from_secs(2)).await;
        let _x = l.accept().await?;
        let _y = l.accept().await?;
        Ok(())
    });
    for i in 0..2u64 {
        let s3 = s2.clone();
        sim.spawn(a, "client", move |h: Host| async move {
            h.sleep(Duration::from_millis(10 * i)).await;
            let _s = h.tcp_connect(sa(nth_ip(1), 80)).await?;
            s3.borrow_mut().push(h.now().as_nanos());
            h.sleep(Duration::from_secs(10)).await;
            Ok(())
        });
    }
    let r = sim.run();
    assert!(r.success(), "{:?}", r.problems);
    let t = seen.borrow().clone();
    // The first connects in one RTT; the second's SYN is dropped and
    // retried (RTO 1 s, then 2 s more) until the queue has room at 2 s.
    assert_eq!(t[0], 2_000_000);
    assert_eq!(t[1], 10_000_000 + 3_000_000_000 + 2_000_000);
    assert!(dropped(&r, "listen_queue_full") >= 1);
}

#[test]
fn a_writer_blocked_on_a_full_send_buffer_wakes_once_a_third_is_free() {
    // Linux `sk_stream_is_writeable`: a writer waiting for send-buffer
    // space is woken when free space >= queued / 2 (`sk_stream_min_wspace`),
    // i.e. a third of a full buffer, not by every ACK. Here the bytes in
    // flight (NIC queue plus one RTT at 10 Mbit/s) stay far below a third
    // of the 256 KiB buffer, so every `send` after the first, except the
    // last, takes at least a third of it.
    const CAP: usize = 256 * 1024;
    const TOTAL: usize = 4 << 20;
    let (mut sim, a, b) = tcp_pair(link("path", Some(10_000_000), 1_000_000));
    let sizes = log();
    let s2 = sizes.clone();
    sim.spawn(b, "sink", move |h: Host| async move {
        let l = h.tcp_listen(80, 1)?;
        let (s, _) = l.accept().await?;
        let mut got = 0;
        while got < TOTAL {
            let m = s.recv(1 << 20).await?;
            assert!(!m.is_empty(), "stream ended after {got} bytes");
            got += m.len();
        }
        Ok(())
    });
    sim.spawn(a, "source", move |h: Host| async move {
        let mut sock = h.tcp_socket()?;
        sock.set_send_buffer_size(CAP);
        let s = sock.connect(sa(nth_ip(1), 80)).await?;
        let mut sent = 0;
        while sent < TOTAL {
            let n = s
                .send(elvis_sim::Message::zeros((TOTAL - sent) as u64))
                .await?;
            s2.borrow_mut().push(n);
            sent += n;
        }
        Ok(())
    });
    let r = sim.run();
    assert!(r.success(), "{:?}", r.problems);
    let sizes = sizes.borrow().clone();
    assert_eq!(sizes.iter().sum::<usize>(), TOTAL);
    assert_eq!(sizes[0], CAP, "the first send fills the empty buffer");
    let middle = &sizes[1..sizes.len() - 1];
    assert!(
        middle.iter().all(|&n| n >= CAP / 3),
        "a send took less than a third of the buffer: {sizes:?}"
    );
    assert!(
        sizes.len() <= TOTAL / (CAP / 3) + 2,
        "{} sends",
        sizes.len()
    );
}
