//! RACK-TLP (RFC 8985) against RFC 6675 loss detection on a lossy path:
//! the same bulk transfers, the same seeds, each loss detection chosen on
//! the sending socket (`TcpSocket::set_loss_detection`).
//!
//! The expectation is the one RFC 8985 §1–2 argues for: a lost tail or a
//! lost retransmission costs RFC 6675 a retransmission timeout (200 ms
//! minimum, against a 20 µs round trip here), while RACK-TLP repairs
//! them within a few round trips, so its goodput is not lower and its
//! timeouts are fewer. (On this path, and with these seeds, RFC 6675's
//! timeouts come from lost retransmissions; tail probes are tested in the
//! TCB's unit tests and `tcp_abuse`.)

use crate::common::{nth_ip, sa};
use elvis_sim::{
    Congestion, Host, LossDetection, Message, NetworkConfig, NetworkKind, Protocols, Simulation,
    TcpStats,
};

const BYTES: u64 = 20_000_000;

/// Sends `BYTES` (virtual payload) over a 10 Gbit/s, 10 µs point-to-point
/// link (the path of `elvis-bench tcp-bulk`) losing 1 % of the frames in
/// each direction; returns the time from
/// the connection's opening to the last ACK the sender got (ns) and the
/// sender's statistics.
fn bulk(loss: LossDetection, alg: Congestion, seed: u64) -> (u64, TcpStats) {
    let mut sim = Simulation::new(seed);
    let mut cfg = NetworkConfig::ideal("path").with_rate(10_000_000_000, 10_000);
    cfg.kind = NetworkKind::Link;
    cfg.loss = 0.01;
    let net = sim.add_network(cfg);
    let a = sim.add_group("tx", None, Protocols::UDP_TCP).unwrap();
    let b = sim.add_group("rx", None, Protocols::UDP_TCP).unwrap();
    sim.attach(a, net, nth_ip(0)).unwrap();
    sim.attach(b, net, nth_ip(1)).unwrap();
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

#[test]
#[ignore = "fails since the merge of the TCP fast paths and departure-time queues: \
            CUBIC 6.42 Gbit/s and 1 RTO with RACK-TLP against 6.58 and 0 with RFC 6675; \
            RACK-TLP is opt-in until understood (see rack.rs # Gaps)"]
fn rack_tlp_goodput_under_one_percent_loss_is_not_lower_and_times_out_less() {
    for alg in [Congestion::Cubic, Congestion::NewReno] {
        let (mut t_rack, mut t_old, mut rto_rack, mut rto_old, mut probes) = (0, 0, 0, 0, 0);
        for seed in 1..=3 {
            let (t, st) = bulk(LossDetection::Rack, alg, seed);
            t_rack += t;
            rto_rack += st.timeouts;
            probes += st.tlp_probes;
            let (t, st) = bulk(LossDetection::Rfc6675, alg, seed);
            t_old += t;
            rto_old += st.timeouts;
            assert_eq!(st.tlp_probes, 0, "no probes under RFC 6675");
        }
        let gbps = |t: u64| 3.0 * BYTES as f64 * 8.0 / t as f64;
        println!(
            "{alg}: RACK-TLP {:.3} Gbit/s, {rto_rack} RTOs, {probes} probes; \
             RFC 6675 {:.3} Gbit/s, {rto_old} RTOs",
            gbps(t_rack),
            gbps(t_old)
        );
        assert!(t_rack <= t_old, "{alg}: RACK-TLP slower");
        assert!(rto_rack < rto_old, "{alg}: {rto_rack} RTOs vs {rto_old}");
    }
}
