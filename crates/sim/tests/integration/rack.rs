//! RACK-TLP (RFC 8985) against RFC 6675 loss detection on a lossy path:
//! the same transfers, the same seeds, each loss detection chosen on the
//! sockets (`TcpSocket::set_loss_detection`).
//!
//! The expectation is the one RFC 8985 §1–2 argues for: a lost tail or a
//! lost retransmission costs RFC 6675 a retransmission timeout (200 ms
//! minimum, against a 20 µs round trip here), while RACK-TLP repairs
//! them within a few round trips, so it times out less and finishes
//! sooner where such losses occur, and is not worse where they do not.

use crate::common::{nth_ip, sa};
use elvis_sim::{
    Congestion, Host, LossDetection, MachineId, Message, NetworkConfig, NetworkKind, Protocols,
    Simulation, TcpStats,
};

const BYTES: u64 = 20_000_000;

/// Two machines named `names` (at `nth_ip(0)` and `nth_ip(1)`) on a
/// 10 Gbit/s, 10 µs point-to-point link (the path of `elvis-bench
/// tcp-bulk`) losing the fraction `loss` of the frames in each direction.
fn lossy_link(seed: u64, loss: f64, names: [&str; 2]) -> (Simulation, MachineId, MachineId) {
    let mut sim = Simulation::new(seed);
    let mut cfg = NetworkConfig::ideal("path").with_rate(10_000_000_000, 10_000);
    cfg.kind = NetworkKind::Link;
    cfg.loss = loss;
    let net = sim.add_network(cfg);
    let a = sim.add_group(names[0], None, Protocols::UDP_TCP).unwrap();
    let b = sim.add_group(names[1], None, Protocols::UDP_TCP).unwrap();
    sim.attach(a, net, nth_ip(0)).unwrap();
    sim.attach(b, net, nth_ip(1)).unwrap();
    (sim, a, b)
}

/// Sends `BYTES` (virtual payload) over a 10 Gbit/s, 10 µs point-to-point
/// link (the path of `elvis-bench tcp-bulk`) losing 1 % of the frames in
/// each direction; returns the time from
/// the connection's opening to the last ACK the sender got (ns) and the
/// sender's statistics.
fn bulk(loss: LossDetection, alg: Congestion, seed: u64) -> (u64, TcpStats) {
    let (mut sim, a, b) = lossy_link(seed, 0.01, ["tx", "rx"]);
    sim.spawn(b, "sink", |h: Host| async move {
        let l = h.tcp_listen(5001, 1)?;
        let (s, _) = l.accept().await?;
        let mut got = 0;
        while got < BYTES {
            got += s.recv(1 << 20).await?.len() as u64;
        }
        Ok(())
    });
    sim.spawn(a, "bulk", move |h: Host| async move {
        let mut sock = h.tcp_socket()?;
        sock.set_loss_detection(loss);
        sock.set_congestion(alg);
        let s = sock.connect(sa(nth_ip(1), 5001)).await?;
        s.write_all(Message::zeros(BYTES)).await?;
        s.close().await?;
        Ok(())
    });
    let r = sim.run();
    assert!(r.success(), "{loss} {alg} seed {seed}: {:?}", r.problems);
    let c = r
        .tcp_connections
        .iter()
        .find(|c| c.machine == "tx")
        .expect("the sender's connection");
    assert_eq!(c.stats.bytes_acked, BYTES);
    (c.last_ack_ns - c.opened_ns, c.stats.clone())
}

/// Runs `ROUNDS` request/response exchanges on one connection over the
/// same lossy link (2 % of frames lost each way): the client writes a
/// 10,000-byte request (7 segments), the server answers one byte after
/// reading it all. Returns the time until the last answer and the
/// client's statistics.
fn exchanges(loss: LossDetection, seed: u64) -> (u64, TcpStats) {
    const ROUNDS: u64 = 200;
    const REQUEST: u64 = 10_000;
    let (mut sim, a, b) = lossy_link(seed, 0.02, ["client", "server"]);
    sim.spawn(b, "server", move |h: Host| async move {
        let mut sock = h.tcp_socket()?;
        sock.set_loss_detection(loss);
        sock.bind(5001)?;
        let l = sock.listen(1)?;
        let (s, _) = l.accept().await?;
        for _ in 0..ROUNDS {
            let mut got = 0;
            while got < REQUEST {
                got += s.recv(1 << 20).await?.len() as u64;
            }
            s.write_all(Message::zeros(1)).await?;
        }
        Ok(())
    });
    sim.spawn(a, "client", move |h: Host| async move {
        let mut sock = h.tcp_socket()?;
        sock.set_loss_detection(loss);
        let s = sock.connect(sa(nth_ip(1), 5001)).await?;
        for _ in 0..ROUNDS {
            s.write_all(Message::zeros(REQUEST)).await?;
            let answer = s.recv(1).await?;
            assert_eq!(answer.len(), 1);
        }
        s.close().await?;
        Ok(())
    });
    let r = sim.run();
    assert!(r.success(), "{loss} seed {seed}: {:?}", r.problems);
    let c = r
        .tcp_connections
        .iter()
        .find(|c| c.machine == "client")
        .expect("the client's connection");
    assert_eq!(c.stats.bytes_acked, ROUNDS * REQUEST);
    (c.last_ack_ns - c.opened_ns, c.stats.clone())
}

/// RFC 8985 §1–2's case for TLP: short transfers whose last segment (or
/// the one-byte answer) is lost wait out an RTO (200 ms minimum against a
/// 20 µs round trip) under RFC 6675, while a tail loss probe draws out the
/// ACK that lets RACK repair them within a few round trips.
#[test]
fn rack_tlp_repairs_tail_losses_of_short_transfers_without_timeouts() {
    let (mut t_rack, mut t_old, mut rto_rack, mut rto_old, mut probes) = (0, 0, 0, 0, 0);
    for seed in 1..=3 {
        let (t, st) = exchanges(LossDetection::Rack, seed);
        t_rack += t;
        rto_rack += st.timeouts;
        probes += st.tlp_probes;
        let (t, st) = exchanges(LossDetection::Rfc6675, seed);
        t_old += t;
        rto_old += st.timeouts;
        assert_eq!(st.tlp_probes, 0, "no probes under RFC 6675");
    }
    println!(
        "RACK-TLP {:.1} ms, {rto_rack} client RTOs, {probes} probes; \
         RFC 6675 {:.1} ms, {rto_old} client RTOs",
        t_rack as f64 / 1e6,
        t_old as f64 / 1e6
    );
    assert!(probes > 0, "no tail loss probe was sent");
    assert!(
        rto_old > 0,
        "RFC 6675 needed no timeout: the test shows nothing"
    );
    assert!(rto_rack < rto_old, "{rto_rack} RTOs vs {rto_old}");
    assert!(t_rack < t_old, "RACK-TLP not faster");
}

/// Bulk transfers under 1 % random loss. A bulk transfer never idles, so
/// it has no tail to lose; what RACK repairs sooner are lost
/// retransmissions, which cost RFC 6675 a timeout. At these seeds that
/// happens to NewReno (RFC 6675: 4 RTOs, 0.43 Gbit/s; RACK-TLP: 1 RTO,
/// 5.36 Gbit/s) but not to CUBIC (0 RTOs either way), where RACK-TLP is
/// 2 % slower because it marks a hole lost up to a reordering window
/// (min RTT / 4) later than three duplicate ACKs would. So: never more
/// timeouts, and goodput within 5 % or better.
#[test]
fn rack_tlp_bulk_goodput_under_one_percent_loss_matches_rfc6675_without_more_timeouts() {
    for alg in [Congestion::Cubic, Congestion::NewReno] {
        let (mut t_rack, mut t_old, mut rto_rack, mut rto_old) = (0, 0, 0, 0);
        for seed in 1..=3 {
            let (t, st) = bulk(LossDetection::Rack, alg, seed);
            t_rack += t;
            rto_rack += st.timeouts;
            let (t, st) = bulk(LossDetection::Rfc6675, alg, seed);
            t_old += t;
            rto_old += st.timeouts;
            assert_eq!(st.tlp_probes, 0, "no probes under RFC 6675");
        }
        let gbps = |t: u64| 3.0 * BYTES as f64 * 8.0 / t as f64;
        println!(
            "{alg}: RACK-TLP {:.3} Gbit/s, {rto_rack} RTOs; RFC 6675 {:.3} Gbit/s, {rto_old} RTOs",
            gbps(t_rack),
            gbps(t_old)
        );
        assert!(
            t_rack as f64 <= 1.05 * t_old as f64,
            "{alg}: RACK-TLP more than 5 % slower"
        );
        assert!(rto_rack <= rto_old, "{alg}: {rto_rack} RTOs vs {rto_old}");
    }
}
