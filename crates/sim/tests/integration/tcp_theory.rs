//! TCP against theory: NewReno's throughput under random loss against the
//! Mathis et al. law, a CUBIC epoch against RFC 9438's W(t), Jain fairness
//! of same-algorithm flows on one bottleneck, and the stability of CUBIC's
//! and Compound's shares of one bottleneck. The scenarios, the model
//! assumptions they match and the numbers are in `docs/tcp.md`
//! ("Validation against theory").

use crate::common::{link, nth_ip, sa};
use elvis_sim::{
    Congestion, Host, Message, NetworkConfig, NetworkKind, Protocols, RunLimits, Sample, Sampling,
    Series, Simulation, SlowStart, TcpConfig, Time,
};
use std::time::Duration;

/// Payload bytes per segment (MTU 1500 − 20 IP − 20 TCP − 12 timestamps).
const MSS: f64 = 1448.0;
const S: u64 = 1_000_000_000;

/// One bulk sender: its algorithm and when it starts (ns).
#[derive(Clone, Copy)]
struct Flow {
    alg: Congestion,
    start_ns: u64,
}

/// Runs `flows` from machines `tx-0…` to one receiver (`rx`) over `net`
/// (every sender on the same network) for `run_ns`; returns the time
/// series of the senders' ends, in flow order, and the report.
fn run_flows(
    net: NetworkConfig,
    flows: &[Flow],
    run_ns: u64,
    sampling: Sampling,
    seed: u64,
) -> (Vec<Series>, elvis_sim::Report) {
    run_flows_with(net, flows, run_ns, sampling, seed, TcpConfig::default())
}

/// [`run_flows`] with a TCP configuration other than the default.
fn run_flows_with(
    net: NetworkConfig,
    flows: &[Flow],
    run_ns: u64,
    sampling: Sampling,
    seed: u64,
    tcp: TcpConfig,
) -> (Vec<Series>, elvis_sim::Report) {
    let mut sim = Simulation::new(seed);
    sim.set_tcp_config(tcp);
    let n = sim.add_network(net);
    let rx = sim.add_group("rx", None, Protocols::UDP_TCP).unwrap();
    let tx = sim
        .add_group("tx", Some(flows.len() as u32), Protocols::UDP_TCP)
        .unwrap();
    sim.attach(rx, n, nth_ip(0)).unwrap();
    for i in 0..flows.len() as u32 {
        sim.attach(tx + i, n, nth_ip(1 + i)).unwrap();
    }
    sim.trace_tcp(sampling);
    for (i, f) in flows.iter().copied().enumerate() {
        let port = 5000 + i as u16;
        sim.spawn_daemon(rx, "sink", move |h: Host| async move {
            let l = h.tcp_listen(port, 1)?;
            let (s, _) = l.accept().await?;
            while !s.recv(1 << 20).await?.is_empty() {}
            Ok(())
        });
        sim.spawn_daemon(tx + i as u32, "bulk", move |h: Host| async move {
            h.sleep(Duration::from_nanos(f.start_ns)).await;
            let s = h.tcp_connect_with(sa(nth_ip(0), port), f.alg).await?;
            loop {
                s.write_all(Message::zeros(1 << 20)).await?;
            }
        });
    }
    let report = sim.run_with(
        RunLimits {
            until: Some(Time::from_nanos(run_ns)),
        },
        &mut |_| {},
    );
    let mut senders: Vec<Series> = sim
        .tcp_series()
        .into_iter()
        .filter(|s| s.machine.starts_with("tx-"))
        .collect();
    senders.sort_by_key(|s| s.machine[3..].parse::<u32>().unwrap());
    assert_eq!(senders.len(), flows.len(), "one sender series per flow");
    (senders, report)
}

/// Returns the bytes acknowledged by time `t_ns` (the last sample at or
/// before it; the state is constant between samples).
fn acked_at(s: &Series, t_ns: u64) -> u64 {
    let i = s.samples.partition_point(|x| x.time_ns <= t_ns);
    if i == 0 {
        0
    } else {
        s.samples[i - 1].bytes_acked
    }
}

/// Jain's fairness index (Σx)² / (n·Σx²).
fn jain(x: &[f64]) -> f64 {
    let sum: f64 = x.iter().sum();
    let sq: f64 = x.iter().map(|v| v * v).sum();
    sum * sum / (x.len() as f64 * sq)
}

/// Mathis et al. (1997): B = (MSS/RTT)·√(3/2)/√p, bytes per second.
fn mathis_bps(rtt_s: f64, p: f64) -> f64 {
    MSS / rtt_s * (1.5f64).sqrt() / p.sqrt() * 8.0
}

#[test]
fn newreno_throughput_under_random_loss_follows_the_mathis_law() {
    // A 1 Gbit/s link never limits the window (W ≤ ~40 segments here) and
    // its NIC never queues more than a few frames, so RTT is the base RTT.
    let latency = 10_000_000;
    let rtt_s = (2 * latency) as f64 / 1e9 + 2.0 * 1518.0 * 8.0 / 1e9;
    println!("p       measured    Mathis      ratio  loss events");
    for (p, secs) in [(0.001, 300), (0.005, 120), (0.01, 80), (0.02, 60)] {
        let mut net = link("path", Some(1_000_000_000), latency);
        net.loss = p;
        let flows = [Flow {
            alg: Congestion::NewReno,
            start_ns: 0,
        }];
        let (series, report) = run_flows(
            net,
            &flows,
            secs * S,
            Sampling::Every(Duration::from_millis(100)),
            1,
        );
        let warm = 10 * S;
        let bytes = acked_at(&series[0], secs * S) - acked_at(&series[0], warm);
        let measured = bytes as f64 * 8.0 / ((secs * S - warm) as f64 / 1e9);
        let theory = mathis_bps(rtt_s, p);
        let c = &report.tcp_connections[series[0].id as usize];
        println!(
            "{:<7} {:>8.2} Mb/s {:>8.2} Mb/s {:.3}  {} (timeouts {})",
            p,
            measured / 1e6,
            theory / 1e6,
            measured / theory,
            c.stats.fast_recoveries,
            c.stats.timeouts
        );
        assert!(
            (measured / theory - 1.0).abs() <= 0.20,
            "p = {p}: measured {measured:.0} bit/s vs Mathis {theory:.0} bit/s"
        );
    }
}

/// One CUBIC congestion-avoidance epoch found in a cwnd trace.
struct Epoch {
    /// The reduction was a retransmission timeout (cwnd fell to 1 SMSS).
    timeout: bool,
    /// cwnd when the loss was detected, segments.
    cwnd_at_loss: f64,
    /// ssthresh set by the reduction, segments.
    cwnd_epoch: f64,
    /// First increase of cwnd after recovery (the epoch start), ns.
    start_ns: u64,
    /// The samples of the epoch, up to the next reduction.
    samples: Vec<Sample>,
}

/// Splits a cwnd trace into the epochs that follow each reduction (a
/// timeout when cwnd fell to one segment).
fn epochs(s: &[Sample]) -> Vec<Epoch> {
    let mut out: Vec<Epoch> = Vec::new();
    let mut i = 1;
    while i < s.len() {
        if s[i].cwnd < s[i - 1].cwnd {
            let cwnd_at_loss = s[i - 1].cwnd as f64 / MSS;
            let cwnd_epoch = s[i].ssthresh as f64 / MSS;
            let mut j = i + 1;
            while j < s.len() && s[j].cwnd <= s[j - 1].cwnd {
                j += 1;
            }
            let start = j;
            while j < s.len() && s[j].cwnd >= s[j - 1].cwnd {
                j += 1;
            }
            if start < s.len() {
                let timeout = s[i..start].iter().any(|x| x.cwnd as f64 <= 2.0 * MSS);
                out.push(Epoch {
                    timeout,
                    cwnd_at_loss,
                    cwnd_epoch: if timeout {
                        s[start].ssthresh as f64 / MSS
                    } else {
                        cwnd_epoch
                    },
                    start_ns: s[start].time_ns,
                    samples: s[start..j].to_vec(),
                });
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

#[test]
fn a_cubic_epoch_after_a_loss_follows_the_rfc_9438_curve() {
    // 100 ms RTT, rare random loss: the window reaches hundreds of
    // segments, K is seconds, and the cubic curve dominates the
    // Reno-friendly estimate.
    let mut net = link("path", Some(1_000_000_000), 50_000_000);
    net.loss = 2e-5;
    let flows = [Flow {
        alg: Congestion::Cubic,
        start_ns: 0,
    }];
    let (series, _) = run_flows(net, &flows, 60 * S, Sampling::OnChange, 3);
    let (c, beta) = (0.4, 0.7);
    let rwnd_seg = TcpConfig::default().rcvbuf as f64 / MSS;
    let mut w_max_prev = 0.0f64;
    let mut checked = 0;
    for e in epochs(&series[0].samples) {
        if e.timeout {
            // §4.8: the first congestion avoidance stage after a timeout
            // has K = 0 and W_max = the window at its start (ssthresh).
            w_max_prev = e.cwnd_epoch;
            continue;
        }
        // RFC 9438 §4.7 fast convergence, then §4.2's K.
        let w_max = if e.cwnd_at_loss < w_max_prev {
            e.cwnd_at_loss * (1.0 + beta) / 2.0
        } else {
            e.cwnd_at_loss
        };
        w_max_prev = w_max;
        assert!(
            (e.cwnd_epoch / e.cwnd_at_loss - beta).abs() < 0.01,
            "ssthresh = β·cwnd at the loss"
        );
        let k = ((w_max - e.cwnd_epoch) / c).cbrt();
        let end_s = (e.samples.last().unwrap().time_ns - e.start_ns) as f64 / 1e9;
        if end_s < k {
            continue; // cut short by the next loss before the plateau
        }
        // RFC 9438 §4.2: cwnd aims at W(t + RTT) one ACK at a time, so it
        // lies between W(t) and W(t + RTT); allow 1 % (and one segment)
        // outside that band.
        let w_at = |t: f64| c * (t - k).powi(3) + w_max;
        let (mut worst, mut outside) = (0.0f64, 0.0f64);
        for x in e.samples.iter().filter(|x| x.time_ns >= e.start_ns + S / 5) {
            let t = (x.time_ns - e.start_ns) as f64 / 1e9;
            let rtt = x.srtt_ns as f64 / 1e9;
            let (lo, hi) = (w_at(t), w_at(t + rtt));
            if hi >= rwnd_seg {
                // The model assumes the window is not limited by the
                // receiver (4 MiB buffers): the check ends there.
                break;
            }
            let got = x.cwnd as f64 / MSS;
            worst = worst.max((got - lo).abs() / lo);
            let off = if got < lo {
                lo - got
            } else {
                (got - hi).max(0.0)
            };
            outside = outside.max((off - 1.0).max(0.0) / lo);
        }
        println!(
            "epoch at {:.2} s: W_max {:.1} seg, K {:.2} s, {:.2} s long, worst |cwnd − W(t)|/W(t) {:.2} %, outside [W(t), W(t+RTT)] by {:.2} %",
            e.start_ns as f64 / 1e9,
            w_max,
            k,
            end_s,
            worst * 100.0,
            outside * 100.0
        );
        assert!(
            outside < 0.01,
            "cwnd strays {:.2} % outside [W(t), W(t + RTT)]",
            outside * 100.0
        );
        checked += 1;
    }
    assert!(
        checked >= 1,
        "no epoch reached its plateau: nothing checked"
    );
}

/// A switched LAN whose receiver port is the bottleneck, with a drop-tail
/// queue of about one bandwidth-delay product.
fn bottleneck(bps: u64, latency_ns: u64, flows: usize) -> NetworkConfig {
    let mut cfg = NetworkConfig::ideal("lan").with_rate(bps, latency_ns);
    cfg.kind = NetworkKind::Switch;
    let rtt_s = 2.0 * latency_ns as f64 / 1e9;
    let bdp = (bps as f64 * rtt_s / 8.0 / 1514.0).ceil() as u32;
    cfg.queue = Some(bdp.max(flows as u32 * 2));
    cfg
}

/// Returns each flow's throughput between `from` and `to` (bit/s).
fn rates(series: &[Series], from: u64, to: u64) -> Vec<f64> {
    series
        .iter()
        .map(|s| (acked_at(s, to) - acked_at(s, from)) as f64 * 8e9 / (to - from) as f64)
        .collect()
}

/// Runs 2, 4 and 8 staggered flows of `alg` through one bottleneck and
/// checks Jain's index over the last 20 s of 30.
///
/// The bottleneck loses one frame in 10⁴ at random (about one loss a
/// second here), standing for the jitter of real hosts: a drop-tail queue
/// fed by ACK-clocked flows with nothing random can lock them into a
/// phase where one flow takes most overflow drops (Floyd and Jacobson, "On
/// traffic phase effects in packet-switched gateways", 1992). Without it
/// two CUBIC flows (α_cubic constant, as Linux) stay at 33 and 63 Mbit/s
/// from 6 s on, the smaller one losing 43 times to the larger one's 26,
/// whatever the seed; one loss in 10⁵ still leaves seeds 7 and 8 locked
/// (0.91); one in 10⁴ gives two CUBIC flows 0.98–1.00 for seeds 1–8.
fn check_fairness(alg: Congestion) {
    {
        for n in [2usize, 4, 8] {
            let flows: Vec<Flow> = (0..n)
                .map(|i| Flow {
                    alg,
                    start_ns: i as u64 * 200_000_000,
                })
                .collect();
            let secs = 30;
            let mut net = bottleneck(100_000_000, 5_000_000, n);
            net.loss = 1e-4;
            let (series, _) = run_flows(
                net,
                &flows,
                secs * S,
                Sampling::Every(Duration::from_millis(100)),
                7,
            );
            let r = rates(&series, 10 * S, secs * S);
            let j = jain(&r);
            let total: f64 = r.iter().sum();
            println!(
                "{alg} × {n}: Jain {j:.3}, total {:.1} Mb/s, flows {:?}",
                total / 1e6,
                r.iter()
                    .map(|x| (x / 1e5).round() / 10.0)
                    .collect::<Vec<_>>()
            );
            assert!(j >= 0.95, "{alg} × {n}: Jain index {j:.3}");
            assert!(total > 0.9 * 100e6, "{alg} × {n}: link underused");
        }
    }
}

#[test]
fn newreno_flows_share_a_bottleneck_fairly() {
    check_fairness(Congestion::NewReno);
}

#[test]
fn cubic_flows_share_a_bottleneck_fairly() {
    check_fairness(Congestion::Cubic);
}

#[test]
fn compound_flows_share_a_bottleneck_fairly() {
    check_fairness(Congestion::Compound);
}

#[test]
fn cubic_and_compound_reach_stable_shares_of_one_bottleneck() {
    let flows = [
        Flow {
            alg: Congestion::Cubic,
            start_ns: 0,
        },
        Flow {
            alg: Congestion::Compound,
            start_ns: 0,
        },
    ];
    // 180 s, judged over the second half: after Compound's startup
    // timeouts (all in the first 6 s) the shares take until about 50 s to
    // settle and can still swing once near 60 s, so a second half starting
    // at 45 s measured the transient more than the steady state. Under
    // both loss detections (RACK-TLP, the default; RFC 6675) the shares
    // then stay within 0.44–0.51 (measured to 180 s, 6-second windows).
    let secs = 180;
    let (series, report) = run_flows(
        bottleneck(100_000_000, 10_000_000, 2),
        &flows,
        secs * S,
        Sampling::Every(Duration::from_millis(100)),
        11,
    );
    // Shares of each 3-second interval of the second half.
    let mut shares = Vec::new();
    for k in (secs / 2..secs).step_by(3) {
        let r = rates(&series, k * S, (k + 3) * S);
        shares.push(r[0] / (r[0] + r[1]));
    }
    let mean = shares.iter().sum::<f64>() / shares.len() as f64;
    let sd = (shares.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / shares.len() as f64).sqrt();
    println!(
        "CUBIC share per 3 s: {:?}; mean {mean:.3}, sd {sd:.3}; report: {:?}",
        shares
            .iter()
            .map(|s| (s * 1000.0).round() / 1000.0)
            .collect::<Vec<_>>(),
        report
            .tcp_shares
            .iter()
            .map(|c| (c.congestion, (c.share * 1000.0).round() / 1000.0))
            .collect::<Vec<_>>()
    );
    assert!(sd < 0.05, "CUBIC's share wanders: sd {sd:.3}");
    assert_eq!(
        report.tcp_shares.len(),
        2,
        "the report lists both algorithms"
    );
}

/// At 1 % loss and a 20 ms RTT CUBIC's windows stay near ten segments,
/// where K is seconds and the losses come every few round trips, so the
/// window is RFC 9438 §4.3's Reno-friendly estimate: W_est grows by
/// α_cubic · acked / cwnd per ACK, α_cubic = 3(1 − β)/(1 + β), hence
/// d(cwnd²)/d(acked) = 2·α_cubic = 1.059 (in segments) in every epoch.
/// With §4.3's α_cubic = 1 past cwnd_prior (not Linux's) the epochs that
/// outlast the previous one grow at 2 and the sum comes to 1.42.
/// Each reduction is Linux's, in whole segments: ⌊⌊cwnd⌋ · 0.7⌋. (The
/// congestion control counts segments of MTU − 40 = 1460 bytes: it is
/// made before the handshake settles on timestamps.)
#[test]
fn cubic_grows_at_alpha_cubic_per_acked_segment_in_the_reno_friendly_region() {
    let mut net = link("path", Some(1_000_000_000), 10_000_000);
    net.loss = 0.01;
    let flows = [Flow {
        alg: Congestion::Cubic,
        start_ns: 0,
    }];
    let secs = 60;
    const CC_MSS: f64 = 1460.0;
    let (series, report) = run_flows(net, &flows, secs * S, Sampling::OnChange, 5);
    let alpha = 3.0 * (1.0 - 0.7) / (1.0 + 0.7);
    let (mut grown, mut acked, mut n) = (0.0, 0.0, 0);
    let samples = &series[0].samples;
    for e in epochs(samples) {
        let (first, last) = (&e.samples[0], e.samples.last().unwrap());
        if e.timeout || e.start_ns < 2 * S || last.bytes_acked == first.bytes_acked {
            continue; // slow start's aftermath, or nothing acknowledged
        }
        let w = |x: &Sample| x.cwnd as f64 / CC_MSS;
        grown += w(last).powi(2) - w(first).powi(2);
        acked += (last.bytes_acked - first.bytes_acked) as f64 / CC_MSS;
        n += 1;
        // Linux's `cubictcp_recalc_ssthresh` in packets.
        let (at_loss, epoch) = (e.cwnd_at_loss * MSS / CC_MSS, e.cwnd_epoch * MSS / CC_MSS);
        let whole = (at_loss.floor() as u64 * 7 / 10).max(2) as f64;
        assert!(
            (epoch - whole).abs() < 1e-9,
            "cwnd {at_loss} at the loss, then {epoch}"
        );
    }
    let slope = grown / acked;
    let c = &report.tcp_connections[series[0].id as usize];
    let goodput = acked_at(&series[0], secs * S) as f64 * 8.0 / secs as f64;
    let rtt_s = 0.02 + 2.0 * 1518.0 * 8.0 / 1e9;
    println!(
        "{n} epochs: d(cwnd²)/d(acked) = {slope:.3} (2·α_cubic = {:.3}); {} recoveries, \
         {} timeouts; {:.2} Mbit/s, Mathis C = {:.2}",
        2.0 * alpha,
        c.stats.fast_recoveries,
        c.stats.timeouts,
        goodput / 1e6,
        goodput / 8.0 / MSS * rtt_s * 0.01f64.sqrt()
    );
    assert!(n >= 200, "{n} epochs");
    // Each ACK's step adds (α·acked/cwnd)² to cwnd² besides 2α·acked:
    // under 1 % at these windows; 3 % allows for that and for the few
    // epochs whose first or last ACK is partly outside the trace's reach.
    assert!(
        (slope / (2.0 * alpha) - 1.0).abs() < 0.03,
        "d(cwnd²)/d(acked) = {slope:.3}, 2·α_cubic = {:.3}",
        2.0 * alpha
    );
}

/// One CUBIC flow's slow start over `bench/vs-linux`'s path: 1 Gbit/s
/// access links of 100 µs, routers r-0 and r-1, and between them a
/// 50 Mbit/s bottleneck with 10 ms one way and a 100-packet drop-tail
/// queue, under each [`SlowStart`], for 2 s. Returns the sender's samples
/// (one per change) up to the first after slow start ended (ssthresh set),
/// and the minimum RTT.
fn slow_start_until_exit(how: SlowStart) -> (Vec<Sample>, u64) {
    let mut sim = Simulation::new(1);
    sim.set_tcp_config(TcpConfig {
        slow_start: how,
        ..TcpConfig::default()
    });
    let ip = |a, b| std::net::Ipv4Addr::new(10, 90, a, b);
    let access = sim.add_network(link("a", Some(1_000_000_000), 100_000));
    let mut narrow = link("bottleneck", Some(50_000_000), 10_000_000);
    narrow.queue = Some(100);
    let narrow = sim.add_network(narrow);
    let far = sim.add_network(link("b", Some(1_000_000_000), 100_000));
    let tx = sim.add_group("tx", None, Protocols::UDP_TCP).unwrap();
    let rx = sim.add_group("rx", None, Protocols::UDP_TCP).unwrap();
    let r = sim.add_group("r", Some(2), Protocols::UDP).unwrap();
    sim.attach(tx, access, ip(0, 2)).unwrap();
    sim.attach(r, access, ip(0, 1)).unwrap();
    sim.attach(r, narrow, ip(1, 1)).unwrap();
    sim.attach(r + 1, narrow, ip(1, 2)).unwrap();
    sim.attach(r + 1, far, ip(2, 1)).unwrap();
    sim.attach(rx, far, ip(2, 2)).unwrap();
    sim.set_forwarding(r, true).unwrap();
    sim.set_forwarding(r + 1, true).unwrap();
    sim.set_auto_routes(Some(elvis_sim::stack::route::Metric::Hops));
    sim.trace_tcp(Sampling::OnChange);
    sim.spawn_daemon(rx, "sink", |h: Host| async move {
        let l = h.tcp_listen(5201, 1)?;
        let (s, _) = l.accept().await?;
        while !s.recv(1 << 20).await?.is_empty() {}
        Ok(())
    });
    sim.spawn_daemon(tx, "bulk", move |h: Host| async move {
        let s = h
            .tcp_connect_with(sa(ip(2, 2), 5201), Congestion::Cubic)
            .await?;
        loop {
            s.write_all(Message::zeros(1 << 20)).await?;
        }
    });
    let limits = RunLimits {
        until: Some(Time::from_nanos(2 * S)),
    };
    let report = sim.run_with(limits, &mut |_| {});
    let series = sim
        .tcp_series()
        .into_iter()
        .find(|s| s.machine == "tx")
        .expect("the sender's series");
    let s = &series.samples;
    let exit = s
        .iter()
        .position(|x| x.ssthresh != u64::MAX)
        .expect("slow start ended");
    let c = &report.tcp_connections[series.id as usize];
    (s[..=exit].to_vec(), c.stats.min_rtt_ns)
}

/// Linux's HyStart (CUBIC's default slow start exit) leaves slow start
/// before the queue overflows, by its ACK-train test. Closed form: a full
/// frame (1514 bytes) takes 12.112 µs at 1 Gbit/s and 242.24 µs at
/// 50 Mbit/s, a pure ACK (66 bytes) 0.528 and 10.56 µs, so the least RTT
/// of a data segment, HyStart's delay_min, is 20.4 ms of propagation plus
/// 278.08 µs: 20.678 ms. While the bottleneck is busy the receiver's ACKs
/// (one per two frames) come 484.48 µs apart, each adding two segments
/// (RFC 3465's L = 2). The train threshold is (20.678 + 1) / 2 = 10.839
/// ms: the round of 18 ACKs (8.2 ms) stays under it, and the next passes
/// it at its ACK j = ⌊10.839 / 0.48448⌋ + 1 = 23, 11.143 ms after its
/// first, with the window at its start (73.08 segments: the initial window
/// is 10 × 1460 bytes) plus 2j: ssthresh = 119.08 segments, 1.39 BDP (BDP
/// = 20.678 ms / 242.24 µs = 85.4 frames), so about 34 of the 100 queue
/// slots fill and nothing is lost. Plain slow start doubles into the
/// overflow.
#[test]
fn hystart_leaves_cubics_slow_start_before_the_queue_overflows() {
    let (s, min_rtt) = slow_start_until_exit(SlowStart::HyStart);
    let exit = *s.last().unwrap();
    let delay_min = 20_400_000 + 2 * 12_112 + 242_240 + 2 * 528 + 10_560;
    assert_eq!(delay_min, 20_678_080);
    let spacing = 2 * 242_240;
    let thr = (delay_min + 1_000_000) / 2;
    // The round's first ACK: the last after a gap of over 2 ms.
    let first = (1..s.len() - 1)
        .rev()
        .find(|&i| s[i].time_ns - s[i - 1].time_ns > 2_000_000)
        .unwrap();
    let j = thr / spacing + 1;
    let w_start = s[first - 1].cwnd;
    let bdp = delay_min as f64 / 242_240.0;
    println!(
        "HyStart: exit at {:.4} s, {} ns into the round (threshold {thr}), ssthresh {:.2} \
         segments = {:.2} + 2·{j}; BDP {bdp:.1} frames, min RTT {min_rtt} ns (the \
         handshake's), retransmitted {}",
        exit.time_ns as f64 / 1e9,
        exit.time_ns - s[first].time_ns,
        exit.ssthresh as f64 / MSS,
        w_start as f64 / MSS,
        exit.retransmitted_segments
    );
    assert_eq!(j, 23);
    assert_eq!(exit.time_ns - s[first].time_ns, j * spacing);
    assert_eq!(exit.ssthresh, w_start + j * 2 * MSS as u64);
    assert_eq!(exit.retransmitted_segments, 0, "a loss in slow start");
    let w = exit.ssthresh as f64 / MSS;
    assert!(
        w > bdp && w < bdp + 100.0,
        "exit at {w} segments, BDP {bdp}"
    );
    let (plain, _) = slow_start_until_exit(SlowStart::Standard);
    let plain = *plain.last().unwrap();
    println!(
        "plain slow start: ssthresh {:.1} segments at {:.3} s, retransmitted {}",
        plain.ssthresh as f64 / MSS,
        plain.time_ns as f64 / 1e9,
        plain.retransmitted_segments
    );
    assert!(plain.retransmitted_segments > 0 && plain.time_ns > exit.time_ns);
    let (pp, _) = slow_start_until_exit(SlowStart::HyStartPlusPlus);
    let pp = *pp.last().unwrap();
    println!(
        "HyStart++: ssthresh {:.1} segments at {:.3} s, retransmitted {}",
        pp.ssthresh as f64 / MSS,
        pp.time_ns as f64 / 1e9,
        pp.retransmitted_segments
    );
    // HyStart++ sees the RTT rise but keeps growing in CSS into the loss.
    assert!(pp.retransmitted_segments > 0 && pp.time_ns > exit.time_ns);
}
