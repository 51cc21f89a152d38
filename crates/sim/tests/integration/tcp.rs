//! TCP end to end: handshake, exact delivery under loss, corruption,
//! reordering by jitter-free paths, refusal, close and TIME-WAIT, and the
//! throughput of an ideal path against its closed form.

use crate::common::{link, log, nth_ip, sa};
use elvis_sim::{Congestion, Host, NetworkConfig, Protocols, Simulation, SocketError, TcpConfig};
use std::time::Duration;

/// Byte `i` of the test stream (a prime period, so segments never align).
fn pattern_byte(i: u64) -> u8 {
    (i.wrapping_mul(2_654_435_761) >> 13) as u8 ^ (i % 251) as u8
}

fn pattern(offset: u64, len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| pattern_byte(offset + i)).collect()
}

struct Transfer {
    bytes: u64,
    net: NetworkConfig,
    seed: u64,
    alg: Congestion,
}

/// Runs a transfer of `bytes` from a client to a server; returns the
/// report and whether every byte arrived intact (checked byte by byte
/// against the pattern).
/// The third value is the virtual time (ns) when the server had all bytes.
fn transfer(t: Transfer) -> (elvis_sim::Report, bool, u64) {
    let mut sim = Simulation::new(t.seed);
    let net = sim.add_network(t.net);
    let a = sim.add_group("client", None, Protocols::UDP_TCP).unwrap();
    let b = sim.add_group("server", None, Protocols::UDP_TCP).unwrap();
    sim.attach(a, net, nth_ip(0)).unwrap();
    sim.attach(b, net, nth_ip(1)).unwrap();
    let ok = log::<(bool, u64, u64)>();
    let ok2 = ok.clone();
    let bytes = t.bytes;
    sim.spawn(b, "server", move |h: Host| async move {
        let l = h.tcp_listen(5001, 4)?;
        let (s, _) = l.accept().await?;
        let mut got = 0u64;
        let mut intact = true;
        loop {
            let m = s.recv(1 << 20).await?;
            if m.is_empty() {
                break;
            }
            if m.to_vec() != pattern(got, m.len()) {
                intact = false;
            }
            got += m.len() as u64;
        }
        ok2.borrow_mut().push((intact, got, h.now().as_nanos()));
        Ok(())
    });
    let alg = t.alg;
    sim.spawn(a, "client", move |h: Host| async move {
        let s = h.tcp_connect_with(sa(nth_ip(1), 5001), alg).await?;
        let mut sent = 0u64;
        while sent < bytes {
            let n = (bytes - sent).min(64 * 1024);
            let w = s.send(pattern(sent, n as usize)).await?;
            sent += w as u64;
        }
        Ok(())
    });
    let report = sim.run();
    let (intact, got, at) = ok.borrow().first().copied().unwrap_or((false, 0, 0));
    (report, intact && got == t.bytes, at)
}

fn path(bps: u64, latency_ms: u64) -> NetworkConfig {
    link("path", Some(bps), latency_ms * 1_000_000)
}

#[test]
fn a_transfer_on_a_clean_path_delivers_every_byte_in_order() {
    for alg in [Congestion::NewReno, Congestion::Cubic, Congestion::Compound] {
        let (r, ok, got) = transfer(Transfer {
            bytes: 3_000_000,
            net: path(100_000_000, 5),
            seed: 1,
            alg,
        });
        assert!(ok, "{alg}: done at {got} ns; {:?}", r.problems);
        assert!(r.success(), "{:?}", r.problems);
    }
}

#[test]
fn transfers_survive_loss_and_corruption_with_exact_delivery() {
    for (loss, corruption) in [(0.01, 0.0), (0.1, 0.0), (0.0, 0.1), (0.05, 0.05)] {
        let mut net = path(50_000_000, 2);
        net.loss = loss;
        net.corruption = corruption;
        let (r, ok, got) = transfer(Transfer {
            bytes: 1_000_000,
            net,
            seed: 7,
            alg: Congestion::Cubic,
        });
        assert!(
            ok,
            "loss {loss} corruption {corruption}: done at {got}; {:?}",
            r.problems
        );
        assert!(r.success(), "{:?}", r.problems);
    }
}

#[test]
fn half_the_frames_lost_still_delivers_every_byte() {
    let mut net = path(10_000_000, 1);
    net.loss = 0.5;
    let (r, ok, got) = transfer(Transfer {
        bytes: 20_000,
        net,
        seed: 3,
        alg: Congestion::NewReno,
    });
    assert!(ok, "done at {got}; {:?}", r.problems);
}

#[test]
fn the_same_seed_gives_the_same_transfer_and_another_seed_a_different_one() {
    let run = |seed| {
        let mut net = path(50_000_000, 2);
        net.loss = 0.02;
        transfer(Transfer {
            bytes: 500_000,
            net,
            seed,
            alg: Congestion::Cubic,
        })
        .0
        .deterministic_json()
    };
    assert_eq!(run(5), run(5));
    assert_ne!(run(5), run(6));
}

#[test]
fn an_ideal_path_moves_data_at_the_link_rate() {
    // 10 MB over 100 Mbit/s with 1 ms latency: the transfer takes at least
    // 10e6·8/1e8 = 0.8 s of wire time for the payload alone; with headers
    // (52 of every 1500 bytes on the wire … ) and slow start it must stay
    // within 20% of the line rate.
    let (r, ok, done_ns) = transfer(Transfer {
        bytes: 10_000_000,
        net: path(100_000_000, 1),
        seed: 1,
        alg: Congestion::Cubic,
    });
    assert!(ok, "{:?}", r.problems);
    let secs = done_ns as f64 / 1e9;
    let payload_rate = 10_000_000.0 * 8.0 / secs;
    let line_goodput = 100e6 * 1448.0 / (1448.0 + 52.0 + 14.0);
    assert!(
        payload_rate > 0.8 * line_goodput,
        "goodput {payload_rate:.0} vs {line_goodput:.0}"
    );
    assert!(
        payload_rate <= line_goodput * 1.0001,
        "goodput {payload_rate:.0} above the line rate"
    );
}

#[test]
fn connecting_to_a_closed_port_is_refused() {
    let mut sim = Simulation::new(1);
    let net = sim.add_network(path(10_000_000, 1));
    let a = sim.add_group("a", None, Protocols::UDP_TCP).unwrap();
    let b = sim.add_group("b", None, Protocols::UDP_TCP).unwrap();
    sim.attach(a, net, nth_ip(0)).unwrap();
    sim.attach(b, net, nth_ip(1)).unwrap();
    let seen = log();
    let s2 = seen.clone();
    sim.spawn(a, "client", move |h: Host| async move {
        let r = h.tcp_connect(sa(nth_ip(1), 9)).await;
        s2.borrow_mut().push(r.err());
        Ok(())
    });
    let r = sim.run();
    assert!(r.success());
    assert_eq!(seen.borrow()[0], Some(SocketError::ConnectionRefused));
}

#[test]
fn connecting_to_a_silent_host_times_out_after_the_syn_retries() {
    let mut sim = Simulation::new(1);
    let mut net = path(10_000_000, 1);
    net.loss = 1.0;
    let net = sim.add_network(net);
    let a = sim.add_group("a", None, Protocols::UDP_TCP).unwrap();
    let b = sim.add_group("b", None, Protocols::UDP_TCP).unwrap();
    sim.attach(a, net, nth_ip(0)).unwrap();
    sim.attach(b, net, nth_ip(1)).unwrap();
    sim.set_tcp_config(TcpConfig {
        syn_retries: 2,
        ..TcpConfig::default()
    });
    let seen = log();
    let s2 = seen.clone();
    sim.spawn(a, "client", move |h: Host| async move {
        let r = h.tcp_connect(sa(nth_ip(1), 9)).await;
        s2.borrow_mut().push((r.err(), h.now()));
        Ok(())
    });
    sim.run();
    let (err, at) = seen.borrow()[0].clone();
    assert_eq!(err, Some(SocketError::TimedOut));
    // SYN at 0, retries after 1 s and 2 s more, give up 4 s after that.
    assert_eq!(at.as_nanos(), 7_000_000_000);
}

#[test]
fn both_sides_close_and_the_active_closer_waits_two_msl() {
    let mut sim = Simulation::new(1);
    let net = sim.add_network(path(10_000_000, 1));
    let a = sim.add_group("a", None, Protocols::UDP_TCP).unwrap();
    let b = sim.add_group("b", None, Protocols::UDP_TCP).unwrap();
    sim.attach(a, net, nth_ip(0)).unwrap();
    sim.attach(b, net, nth_ip(1)).unwrap();
    sim.set_tcp_config(TcpConfig {
        msl: Duration::from_secs(2),
        ..TcpConfig::default()
    });
    let states = log();
    let (s_a, s_b) = (states.clone(), states.clone());
    sim.spawn(b, "server", move |h: Host| async move {
        let l = h.tcp_listen(80, 1)?;
        let (s, _) = l.accept().await?;
        let m = s.read_exact(5).await?;
        assert_eq!(m.to_vec(), b"hello");
        // End of stream after the client's FIN.
        assert!(s.recv(10).await?.is_empty());
        s_b.borrow_mut()
            .push(("server after FIN", format!("{:?}", s.state()?)));
        Ok(())
    });
    sim.spawn(a, "client", move |h: Host| async move {
        let s = h.tcp_connect(sa(nth_ip(1), 80)).await?;
        s.write_all(b"hello".to_vec()).await?;
        s.shutdown(elvis_sim::Shutdown::Write)?;
        assert!(s.recv(10).await?.is_empty());
        s_a.borrow_mut()
            .push(("client after close", format!("{:?}", s.state()?)));
        Ok(())
    });
    let r = sim.run();
    assert!(r.success(), "{:?}", r.problems);
    let states = states.borrow();
    assert!(
        states.contains(&("server after FIN", "CloseWait".to_string())),
        "{states:?}"
    );
    assert!(
        states.contains(&("client after close", "TimeWait".to_string())),
        "{states:?}"
    );
    // The run ends when TIME-WAIT (2 MSL = 4 s) expires.
    assert!(r.sim_time_ns >= 4_000_000_000, "{}", r.sim_time_ns);
}

#[test]
fn an_echo_client_and_server_exchange_messages() {
    let mut sim = Simulation::new(1);
    let net = sim.add_network(path(1_000_000_000, 1));
    let a = sim.add_group("a", None, Protocols::UDP_TCP).unwrap();
    let b = sim.add_group("b", None, Protocols::UDP_TCP).unwrap();
    sim.attach(a, net, nth_ip(0)).unwrap();
    sim.attach(b, net, nth_ip(1)).unwrap();
    sim.spawn_daemon(b, "echo", move |h: Host| async move {
        let l = h.tcp_listen(7, 8)?;
        loop {
            let (s, _) = l.accept().await?;
            loop {
                let m = s.recv(4096).await?;
                if m.is_empty() {
                    break;
                }
                s.write_all(m).await?;
            }
        }
    });
    sim.spawn(a, "client", move |h: Host| async move {
        let s = h.tcp_connect(sa(nth_ip(1), 7)).await?;
        s.set_nodelay(true)?;
        for i in 0..50u32 {
            let msg = format!("message {i}");
            s.write_all(msg.clone().into_bytes()).await?;
            let back = s.read_exact(msg.len()).await?;
            assert_eq!(back.to_vec(), msg.as_bytes());
        }
        Ok(())
    });
    let r = sim.run();
    assert!(r.success(), "{:?}", r.problems);
}
