//! The traffic generators and the SYN-flood defences against closed
//! forms (docs/traffic.md): MGEN's patterns, the sink's latency, loss and
//! jitter, and a SYN flood with and without SYN cookies.

use elvis_apps::flood;
use elvis_sim::{Host, Report};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

/// Builds and runs NDL text.
fn run(ndl: &str) -> Report {
    let sc = elvis_ndl::parse(ndl, "t.ndl").unwrap_or_else(|e| panic!("{e}"));
    let mut built = elvis_build::build(&sc, None).unwrap_or_else(|e| panic!("{e}"));
    built.sim.run()
}

/// Returns the value of metric `name` published on `machine`.
fn metric(r: &Report, machine: &str, name: &str) -> f64 {
    r.metrics
        .iter()
        .find(|m| m.machine == machine && m.name == name)
        .unwrap_or_else(|| panic!("no metric {name} on {machine}: {:?}", r.metrics))
        .value
}

fn dropped(r: &Report, reason: &str) -> u64 {
    r.packets.dropped.get(reason).copied().unwrap_or(0)
}

/// Two hosts on one link (`link` options), `a` running `mgen` with
/// `opts` to `b`'s `mgen_sink`.
fn pair(link: &str, opts: &str) -> String {
    format!(
        "[Simulation seed='5']\n[Networks]\n\
         \t[Network id='l' type='link' {link}]\n\t\t[IP subnet='10.0.0.0/30']\n\
         [Machines]\n\
         \t[Machine name='a']\n\t\t[Networks]\n\t\t\t[Network id='l' ip='10.0.0.1']\n\
         \t\t[Protocols]\n\t\t\t[Protocol name='IPv4']\n\t\t\t[Protocol name='UDP']\n\
         \t\t[Applications]\n\t\t\t[Application name='mgen' to='b' port='5000' {opts}]\n\
         \t[Machine name='b']\n\t\t[Networks]\n\t\t\t[Network id='l' ip='10.0.0.2']\n\
         \t\t[Protocols]\n\t\t\t[Protocol name='IPv4']\n\t\t\t[Protocol name='UDP']\n\
         \t\t[Applications]\n\t\t\t[Application name='mgen_sink' port='5000']\n"
    )
}

const IDEAL: &str = "bandwidth='10Mbps' latency='1ms'";

#[test]
fn a_periodic_flow_sends_exactly_ceil_duration_over_period_messages() {
    for (rate, duration, expect) in [(100u64, "1s", 100u64), (7, "2s", 14), (1000, "250ms", 250)] {
        let r = run(&pair(
            IDEAL,
            &format!("rate='{rate}' size='64' duration='{duration}'"),
        ));
        // T = round(1e9 / rate) ns; messages at 0, T, 2T, … < D.
        assert_eq!(metric(&r, "a", "sent") as u64, expect, "rate {rate}");
        assert_eq!(metric(&r, "b", "received") as u64, expect, "rate {rate}");
        assert_eq!(metric(&r, "b", "lost"), 0.0);
    }
}

#[test]
fn latency_on_an_ideal_link_is_propagation_plus_serialization() {
    // 100 B of payload + 8 UDP + 20 IPv4 + 14 Ethernet = 142 B = 1,136
    // bits: 113.6 us at 10 Mbit/s, plus 1 ms of propagation.
    let r = run(&pair(IDEAL, "rate='50' size='100' count='100'"));
    let expect = 1_000_000.0 + 113_600.0;
    for m in ["latency_mean_ns", "latency_p50_ns", "latency_p99_ns"] {
        assert_eq!(metric(&r, "b", m), expect, "{m}");
    }
    assert_eq!(metric(&r, "b", "jitter_ns"), 0.0);
    assert_eq!(metric(&r, "b", "received"), 100.0);
}

#[test]
fn a_poisson_flow_sends_within_four_sigma_of_rate_times_duration() {
    // N ~ Poisson(rate x D) = Poisson(10,000): sigma = 100. The mean
    // inter-arrival D / N is then within 4% of 1 / rate = 1 ms.
    let r = run(&pair(
        "bandwidth='1Gbps' latency='1ms'",
        "pattern='poisson' rate='1000' size='64' duration='10s'",
    ));
    let n = metric(&r, "a", "sent");
    assert!((9_600.0..=10_400.0).contains(&n), "{n} messages");
    let mean_gap_ns = 10e9 / n;
    assert!((mean_gap_ns - 1e6).abs() < 0.04e6, "{mean_gap_ns}");
    assert_eq!(metric(&r, "b", "received"), n);
    // Poisson arrivals on a fast link: two messages rarely come closer
    // than a frame's time (1.08 us), so the transit time, and the
    // jitter, hardly change.
    assert!(metric(&r, "b", "jitter_ns") < 100.0);
}

#[test]
fn the_same_seed_gives_the_same_poisson_flow_and_another_seed_another() {
    let ndl = pair(
        IDEAL,
        "pattern='poisson' rate='100' size='64' duration='5s'",
    );
    let a = metric(&run(&ndl), "a", "sent");
    assert_eq!(a, metric(&run(&ndl), "a", "sent"));
    let b = metric(&run(&ndl.replace("seed='5'", "seed='6'")), "a", "sent");
    assert_ne!(a, b);
}

#[test]
fn loss_on_a_lossy_link_matches_its_probability() {
    // 10,000 messages, each lost with p = 0.1: lost ~ Binomial, mean
    // 1,000, sigma = sqrt(10,000 x 0.1 x 0.9) = 30.
    let r = run(&pair(
        "bandwidth='100Mbps' latency='1ms' loss='10%'",
        "rate='1000' size='64' count='10000'",
    ));
    let lost = metric(&r, "b", "lost");
    let got = metric(&r, "b", "received");
    assert!((880.0..=1_120.0).contains(&lost), "{lost} lost");
    // Losses are counted below the highest sequence number: only a loss
    // of the very last messages could go unseen.
    assert!((got + lost - 10_000.0).abs() <= 5.0, "{got} + {lost}");
    assert_eq!(dropped(&r, "loss") as f64 + got, 10_000.0);
}

#[test]
fn regular_fixed_bursts_send_rate_times_burst_length_per_burst() {
    // A burst each second, 100 ms long, at 100 messages/s: 10 a burst,
    // 5 bursts in 5 s.
    let r = run(&pair(
        IDEAL,
        "pattern='burst' rate='100' size='64' duration='5s' burst_interval='1s' \
         burst_duration='100ms' burst_spacing='regular' burst_length='fixed'",
    ));
    assert_eq!(metric(&r, "a", "sent"), 50.0);
    assert_eq!(metric(&r, "b", "received"), 50.0);
}

#[test]
fn random_bursts_average_rate_times_burst_length_per_interval() {
    // Exponential gaps of mean 200 ms between burst starts (each burst
    // 50 ms at 200/s = 10 messages; a gap shorter than the burst defers
    // the next start to its end), over 60 s: about 300 bursts.
    let r = run(&pair(
        "bandwidth='100Mbps' latency='1ms'",
        "pattern='burst' rate='200' size='64' duration='60s' burst_interval='200ms' \
         burst_duration='50ms'",
    ));
    let n = metric(&r, "a", "sent");
    assert!((2_400.0..=3_400.0).contains(&n), "{n}");
    assert_eq!(n % 10.0, 0.0, "whole bursts of 10");
}

#[test]
fn bad_traffic_options_are_located_errors() {
    for (opts, says) in [
        ("rate='0'", "rate '0'"),
        ("rate='10' pattern='chaotic'", "pattern 'chaotic'"),
        ("rate='10' size='8'", "at least 20 bytes"),
        ("rate='10' burst_interval='1s'", "pattern='burst' only"),
    ] {
        let ndl = pair(IDEAL, opts);
        let sc = elvis_ndl::parse(&ndl, "t.ndl").unwrap();
        let e = elvis_build::build(&sc, None).err().expect(opts);
        assert!(e.to_string().contains(says), "{opts}: {e}");
        assert!(e.loc.line > 0, "{opts}: located");
    }
}

#[test]
fn udp_floods_reach_the_target_with_good_checksums_spoofed_or_not() {
    for spoof in ["", "spoof='10.9.0.0/16'"] {
        let ndl = pair(IDEAL, "").replace(
            "name='mgen' to='b' port='5000' ",
            &format!(
                "name='udp_flood' to='b' port='5000' rate='1000' size='30' count='100' {spoof}"
            ),
        );
        let r = run(&ndl);
        assert_eq!(metric(&r, "a", "sent"), 100.0, "{spoof}");
        // Zeros are no MGEN header: the sink counts them as malformed,
        // after UDP checked each checksum (over the spoofed source too).
        assert_eq!(metric(&r, "b", "malformed"), 100.0, "{spoof}");
        assert_eq!(r.packets.dropped_total, 0, "{:?}", r.packets.dropped);
    }
}

#[test]
fn bad_flood_options_are_located_errors() {
    for (opts, says) in [
        ("spoof='10.9.0.0/40'", "prefix length"),
        ("spoof='ten/8'", "not an IPv4 address"),
        ("rate='fast'", "rate 'fast'"),
    ] {
        let ndl = pair(IDEAL, "").replace(
            "name='mgen' to='b' port='5000' ",
            &format!("name='syn_flood' to='b' port='5000' rate='10' {opts}"),
        );
        // The later `rate` wins over the default one.
        let ndl = if opts.starts_with("rate") {
            ndl.replace("rate='10' ", "")
        } else {
            ndl
        };
        let sc = elvis_ndl::parse(&ndl, "t.ndl").unwrap();
        let e = elvis_build::build(&sc, None).err().expect(opts);
        assert!(e.to_string().contains(says), "{opts}: {e}");
        assert!(e.loc.line > 0, "{opts}: located");
    }
    let ndl = pair(IDEAL, "rate='1'").replace(
        "[Protocol name='UDP']",
        "[Protocol name='UDP']\n\t\t\t[Protocol name='TCP' syn_cookies='maybe']",
    );
    let sc = elvis_ndl::parse(&ndl, "t.ndl").unwrap();
    let e = elvis_build::build(&sc, None).err().expect("syn_cookies");
    assert!(e.to_string().contains("neither on nor off"), "{e}");
}

/// The `ddos.ndl` example, cookies on or off.
fn ddos(cookies: &str) -> String {
    include_str!("../../../../examples/ndl/ddos.ndl")
        .replace("syn_cookies='on'", &format!("syn_cookies='{cookies}'"))
}

#[test]
fn a_syn_flood_keeps_clients_out_without_cookies_and_not_with_them() {
    let on = run(&ddos("on"));
    assert!(on.problems.is_empty(), "{:?}", on.problems);
    // The backlog (128) filled; every later SYN got a cookie, the four
    // clients' among them, and their ACKs made the connections.
    assert_eq!(on.packets.syn_cookies_sent, 20_000 - 128 + 4);
    assert_eq!(on.packets.syn_cookies_validated, 4);
    for i in 0..4 {
        let c = format!("client-{i}");
        // One round trip: 2 x (2 ms + three 66-byte frames' time).
        assert!(metric(&on, &c, "connect_ns") < 4.1e6, "{c}");
    }
    // The SYN-ACKs to spoofed sources die at the router, counted.
    assert_eq!(dropped(&on, "no_route"), 20_000 - 128 + 128 * 7);

    let off = run(&ddos("off"));
    let failed: Vec<_> = off.problems.iter().map(|p| p.message.as_str()).collect();
    assert_eq!(failed, ["connection timed out"; 4]);
    assert_eq!(off.packets.syn_cookies_sent, 0);
    // Every SYN past the backlog dropped: the flood's and the clients' 4 x 7.
    assert_eq!(dropped(&off, "syn_backlog_full"), 20_000 - 128 + 4 * 7);
}

#[test]
fn an_ack_with_a_forged_cookie_is_dropped_without_a_connection() {
    let sc = elvis_ndl::parse(&ddos("on"), "t.ndl").unwrap();
    let mut built = elvis_build::build(&sc, None).unwrap();
    let (_, attacker, _) = built.groups.iter().find(|g| g.0 == "attacker").unwrap();
    let server = SocketAddrV4::new(Ipv4Addr::new(10, 0, 2, 2), 7);
    built
        .sim
        .spawn(*attacker, "forger", move |h: Host| async move {
            h.sleep(Duration::from_secs(3)).await;
            for guess in 0..50u32 {
                let src = Ipv4Addr::new(10, 9, 5, 5);
                let mut seg = flood::syn(src, 4444, server, 1000);
                seg[13] = 0x10; // ACK, not SYN
                seg[4..8].copy_from_slice(&1001u32.to_be_bytes());
                seg[8..12].copy_from_slice(&guess.wrapping_mul(2_654_435_761).to_be_bytes());
                seg[16..18].copy_from_slice(&[0, 0]);
                let c = flood::checksum(src, *server.ip(), 6, &seg);
                seg[16..18].copy_from_slice(&c.to_be_bytes());
                assert!(h.send_ip_from(src, *server.ip(), 6, seg)?, "NIC room");
                h.sleep(Duration::from_millis(1)).await;
            }
            Ok(())
        });
    let r = built.sim.run();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(dropped(&r, "bad_syn_cookie"), 50, "{:?}", r.packets.dropped);
    assert_eq!(r.packets.syn_cookies_validated, 4, "only the clients'");
}
