//! TCP in the run report and in time series: both ends of a connection
//! listed with counters that agree with each other and with the
//! transfer, in creation order; time series absent unless asked for, and
//! sampled as asked.

use crate::common::{link, nth_ip, sa};
use elvis_sim::{Host, Message, Protocols, Report, Sampling, Series, Simulation};
use std::time::Duration;

const BYTES: u64 = 2_000_000;

/// Sends `BYTES` from `client` to `server` over a 10 Mbit/s, 5 ms link
/// with 1 % loss; returns the report and the series (if `sampling`).
fn transfer(sampling: Option<Sampling>) -> (Report, Vec<Series>) {
    let mut sim = Simulation::new(5);
    let mut cfg = link("path", Some(10_000_000), 5_000_000);
    cfg.loss = 0.01;
    let net = sim.add_network(cfg);
    let a = sim.add_group("client", None, Protocols::UDP_TCP).unwrap();
    let b = sim.add_group("server", None, Protocols::UDP_TCP).unwrap();
    sim.attach(a, net, nth_ip(0)).unwrap();
    sim.attach(b, net, nth_ip(1)).unwrap();
    if let Some(s) = sampling {
        sim.trace_tcp(s);
    }
    sim.spawn(b, "server", |h: Host| async move {
        let l = h.tcp_listen(80, 1)?;
        let (s, _) = l.accept().await?;
        let mut got = 0;
        while got < BYTES {
            got += s.recv(1 << 20).await?.len() as u64;
        }
        Ok(())
    });
    sim.spawn(a, "client", |h: Host| async move {
        let s = h.tcp_connect(sa(nth_ip(1), 80)).await?;
        s.write_all(Message::zeros(BYTES)).await?;
        Ok(())
    });
    let r = sim.run();
    (r, sim.tcp_series())
}

#[test]
fn the_report_lists_both_ends_of_a_connection_with_agreeing_counters() {
    let (r, series) = transfer(None);
    assert!(series.is_empty(), "no time series unless asked for");
    assert_eq!(r.tcp_connections_total, 2);
    let c = &r.tcp_connections;
    assert_eq!(c.len(), 2);
    // The client opened first; the server's end was made by the SYN.
    assert_eq!((c[0].id, c[0].machine.as_str()), (0, "client"));
    assert_eq!((c[1].id, c[1].machine.as_str()), (1, "server"));
    assert_eq!(c[0].remote, "10.0.0.2:80");
    assert_eq!(c[1].local, "10.0.0.2:80");
    assert_eq!(c[0].local, c[1].remote);
    assert_eq!(c[0].congestion, "cubic");
    assert_eq!(c[0].stats.bytes_acked, BYTES);
    assert_eq!(c[1].stats.bytes_received, BYTES);
    assert_eq!(c[1].stats.bytes_acked, 0);
    // Loss forced retransmissions; every byte sent beyond the transfer is
    // a retransmitted one.
    assert!(c[0].stats.retransmitted_segments > 0);
    assert_eq!(
        c[0].stats.bytes_sent,
        BYTES + c[0].stats.retransmitted_bytes
    );
    // The run went idle: both ends closed and were freed (TIME-WAIT over).
    assert!(c.iter().all(|x| x.state == elvis_sim::TcpState::Closed));
    // 2 MB in about 1.7 s at best (10 Mbit/s): the mean rate is below the
    // link's and above a tenth of it.
    let bps = c[0].throughput_bps;
    assert!(bps < 10_000_000 && bps > 1_000_000, "{bps}");
    assert_eq!(r.tcp_shares.len(), 1);
    assert_eq!(r.tcp_shares[0].bytes_acked, BYTES);
    assert_eq!(r.tcp_shares[0].throughput_share, 1.0);
    // The sender's rate with retransmissions is above its goodput; the
    // machine's totals are its one sending end's, and leaving the
    // retransmitted bytes out gives the rate of the transfer itself.
    assert!(c[0].sent_bps > bps, "{} vs {bps}", c[0].sent_bps);
    assert_eq!(c[1].sent_bps, 0);
    assert_eq!(r.tcp_senders.len(), 1, "the receiver sent no payload");
    let s = &r.tcp_senders[0];
    assert_eq!(s.machine, "client");
    assert_eq!((s.connections, s.bytes_sent), (1, c[0].stats.bytes_sent));
    assert_eq!(s.retransmitted_bytes, c[0].stats.retransmitted_bytes);
    assert_eq!(s.throughput_bps, c[0].sent_bps);
    assert_eq!(
        s.nrt_throughput_bps, bps,
        "bytes sent less retransmitted = bytes acked"
    );
    assert!(s.nrt_throughput_bps < s.throughput_bps);
}

#[test]
fn on_change_sampling_records_each_change_and_interval_sampling_one_per_interval() {
    let (_, changes) = transfer(Some(Sampling::OnChange));
    let (_, every) = transfer(Some(Sampling::Every(Duration::from_millis(50))));
    assert_eq!(changes.len(), 2);
    let s = &changes[0].samples;
    for w in s.windows(2) {
        assert!(
            (w[0].cwnd, w[0].ssthresh, w[0].srtt_ns) != (w[1].cwnd, w[1].ssthresh, w[1].srtt_ns),
            "a sample without a change"
        );
        assert!(w[0].time_ns <= w[1].time_ns);
    }
    let last = s.last().unwrap().bytes_acked;
    assert!(last > BYTES / 2 && last <= BYTES, "{last}");
    let e = &every[0].samples;
    for w in e.windows(2) {
        assert!(w[1].time_ns / 50_000_000 > w[0].time_ns / 50_000_000);
    }
    assert!(e.len() < s.len());
    // The same run, sampled twice: the series agree where both sampled
    // (skipping instants with several events, where the order matters).
    for x in e {
        if s.iter().filter(|y| y.time_ns == x.time_ns).count() > 1 {
            continue;
        }
        if let Some(y) = s.iter().rev().find(|y| y.time_ns <= x.time_ns) {
            assert_eq!((x.cwnd, x.ssthresh), (y.cwnd, y.ssthresh));
        }
    }
}

#[test]
fn a_crashed_machine_keeps_its_connections_in_the_report() {
    let mut sim = Simulation::new(9);
    let net = sim.add_network(link("path", Some(10_000_000), 1_000_000));
    let a = sim.add_group("client", None, Protocols::UDP_TCP).unwrap();
    let b = sim.add_group("server", None, Protocols::UDP_TCP).unwrap();
    sim.attach(a, net, nth_ip(0)).unwrap();
    sim.attach(b, net, nth_ip(1)).unwrap();
    sim.spawn_daemon(b, "server", |h: Host| async move {
        let l = h.tcp_listen(80, 1)?;
        let (s, _) = l.accept().await?;
        while !s.recv(1 << 20).await?.is_empty() {}
        Ok(())
    });
    sim.spawn(a, "client", |h: Host| async move {
        let s = h.tcp_connect(sa(nth_ip(1), 80)).await?;
        s.write_all(Message::zeros(100_000)).await?;
        h.sleep(Duration::from_millis(500)).await;
        panic!("the client machine fails with its connection open");
    });
    let r = sim.run();
    let client = r
        .tcp_connections
        .iter()
        .find(|c| c.machine == "client")
        .expect("the crashed machine's connection is listed");
    // The panic's unwinding dropped the stream (FIN sent), then the
    // machine went down before any answer: its end stays in FIN-WAIT-1.
    assert_eq!(client.state, elvis_sim::TcpState::FinWait1);
    assert_eq!(client.stats.bytes_acked, 100_000);
}
