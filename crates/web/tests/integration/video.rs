//! `video_server` and `video_client` over one point-to-point link,
//! checked against what the link's bandwidth and delay allow, worked out
//! here from first principles (frame sizes, serialization, propagation),
//! not from the client's code.

use crate::{assert_success, metric, SERVER};
use elvis_sim::{MachineId, NetworkConfig, NetworkKind, Protocols, Report, Simulation};
use elvis_web::server;
use elvis_web::video::client::{self as vclient, Rule, Session};
use elvis_web::video::{Video, DEFAULT_LADDER_KBPS};
use std::cell::RefCell;
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::time::Duration;

const S: u64 = 1_000_000_000;

/// Bytes on the wire per full-size TCP segment and the payload it
/// carries: an Ethernet frame of 1514 bytes (14 Ethernet, 20 IPv4, 20 TCP
/// and 12 of timestamps option) carries 1448 payload bytes.
const FRAME: f64 = 1514.0;
const PAYLOAD: f64 = 1448.0;

/// A server and a client at either end of a link of `bps` and `latency`.
fn link(seed: u64, bps: u64, latency_ns: u64) -> (Simulation, MachineId, MachineId) {
    let mut sim = Simulation::new(seed);
    let mut cfg = NetworkConfig::ideal("link").with_rate(bps, latency_ns);
    cfg.kind = NetworkKind::Link;
    let net = sim.add_network(cfg);
    let all = Protocols {
        arp: true,
        udp: true,
        tcp: true,
    };
    let server = sim.add_group("server", None, all).unwrap();
    sim.attach(server, net, SERVER).unwrap();
    let client = sim.add_group("client", None, all).unwrap();
    sim.attach(client, net, Ipv4Addr::new(10, 0, 0, 2)).unwrap();
    (sim, server, client)
}

/// Streams a video of `duration` s (4 s segments, the default ladder)
/// over a link; returns the report and the client's session.
fn stream(bps: u64, latency_ns: u64, duration_s: u64, rule: Rule, seed: u64) -> (Report, Session) {
    let (mut sim, s, c) = link(seed, bps, latency_ns);
    let mut cfg = server::Config::new();
    cfg.video = Some(Rc::new(
        Video::new(DEFAULT_LADDER_KBPS.to_vec(), 4 * S, duration_s * S, 0.0).unwrap(),
    ));
    let cfg = Rc::new(cfg);
    sim.spawn_daemon(s, "video_server", move |h| server::run(h, cfg));
    let log = Rc::new(RefCell::new(Vec::new()));
    let mut ccfg = vclient::Config::new(SERVER, "server");
    ccfg.rule = rule;
    ccfg.sessions = Some(log.clone());
    let ccfg = Rc::new(ccfg);
    sim.spawn(c, "video_client", move |h| vclient::run(h, ccfg));
    let r = sim.run();
    assert_success(&r);
    let session = log.borrow_mut().pop().expect("the session ended");
    (r, session)
}

/// The highest rung of the default ladder at most `kbps`.
fn rung_at_most(kbps: f64) -> usize {
    DEFAULT_LADDER_KBPS
        .iter()
        .rposition(|&k| k as f64 <= kbps)
        .unwrap()
}

#[test]
fn the_throughput_rule_settles_on_the_highest_rung_below_nine_tenths_of_the_link() {
    for (bps, want) in [(4_000_000u64, 3000), (2_500_000, 1750)] {
        let (r, s) = stream(bps, 1_000_000, 120, Rule::Throughput, 1);
        // Goodput is the link's rate times payload per frame byte.
        let goodput_kbps = bps as f64 * PAYLOAD / FRAME / 1e3;
        let m = rung_at_most(0.9 * goodput_kbps);
        assert_eq!(DEFAULT_LADDER_KBPS[m], want, "{goodput_kbps}");
        assert_eq!(s.fetches[0].rep, 0, "no measurement yet: the lowest");
        for f in &s.fetches[1..] {
            assert_eq!(f.rep, m, "segment {} at {} bit/s", f.index, bps);
        }
        assert_eq!(s.fetches.len(), 30);
        assert_eq!(metric(&r, "video_client", "segments"), 30.0);
        assert_eq!(metric(&r, "video_client", "requests"), 31.0);
        assert_eq!(metric(&r, "video_client", "switches"), 1.0);
        assert_eq!(metric(&r, "video_client", "rebuffer_events"), 0.0);
        assert_eq!(metric(&r, "video_client", "rebuffer_ratio"), 0.0);
        let mean = (235.0 + 29.0 * want as f64) / 30.0;
        assert!((metric(&r, "video_client", "mean_bitrate_kbps") - mean).abs() < 1e-9);
        // The whole video played.
        assert_eq!(s.playback.play_ns, 120 * S);
    }
}

/// A 200 kbit/s link under the lowest rung (235 kbit/s): every segment is
/// fetched at rung 0 and takes T > D = 4 s, so after start-up each of the
/// n − 1 later segments stalls T − D: ratio (n−1)(T−D) / (nD + (n−1)(T−D)).
#[test]
fn a_link_slower_than_the_lowest_rung_rebuffers_as_the_closed_form_says() {
    for rule in [Rule::Throughput, Rule::Bola] {
        let bps = 200_000u64;
        let (r, s) = stream(bps, 1_000_000, 40, rule, 2);
        let n = 10u64;
        assert_eq!(s.fetches.len() as u64, n);
        assert!(s.fetches.iter().all(|f| f.rep == 0));
        // T: the response (a 106-byte head and the 117,500-byte body) in
        // ⌈117,606 / 1448⌉ = 82 frames of 66 bytes of headers each, and
        // the request (81 bytes in one frame) at 200 kbit/s; plus the
        // request's and the last frame's propagation, 2 x 1 ms.
        let response = 106.0 + 117_500.0;
        let wire = response + (response / PAYLOAD).ceil() * (FRAME - PAYLOAD);
        let t = (wire + 81.0 + FRAME - PAYLOAD) * 8.0 / bps as f64 + 2e-3;
        for w in s.fetches.windows(2) {
            let gap = (w[1].arrived_ns - w[0].arrived_ns) as f64 / 1e9;
            assert!((gap - t).abs() / t < 0.005, "gap {gap} s vs T {t} s");
        }
        // T − D is a fifth of T, so T's error is five times larger in
        // the ratio.
        let d = 4.0;
        let want = (n - 1) as f64 * (t - d) / (n as f64 * d + (n - 1) as f64 * (t - d));
        let got = metric(&r, "video_client", "rebuffer_ratio");
        eprintln!("{rule:?}: T {t:.6} s; rebuffering ratio {got:.6}, closed form {want:.6}");
        assert!((got - want).abs() / want < 0.025, "ratio {got} vs {want}");
        assert_eq!(
            metric(&r, "video_client", "rebuffer_events"),
            (n - 1) as f64
        );
        // Exactly: the stalls are the gaps between arrivals less D.
        let stall: u64 = s
            .fetches
            .windows(2)
            .map(|w| w[1].arrived_ns - w[0].arrived_ns - 4 * S)
            .sum();
        assert_eq!(s.playback.stall_ns, stall);
        assert_eq!(s.playback.play_ns, 40 * S);
        assert_eq!(metric(&r, "video_client", "stall_ns"), stall as f64);
    }
}

/// Start-up on a 10 Mbit/s, 1 ms link (its bandwidth-delay product, 2.5
/// kB, is under TCP's initial window, so the pipe never idles): four
/// round trips (ARP, the handshake, the manifest, the first segment) of
/// 2 ms plus the serialization of what crosses the link before the first
/// segment's last byte: the manifest and the 117,500-byte segment with
/// their heads in full frames, two 60-byte ARP frames and five small
/// frames (SYN, SYN-ACK, ACK, two requests) of about 100 bytes.
#[test]
fn start_up_delay_is_three_round_trips_plus_the_bytes_at_the_link_rate() {
    let bps = 10_000_000u64;
    let (r, s) = stream(bps, 1_000_000, 40, Rule::Bola, 3);
    let manifest = 140.0 + 110.0;
    let segment = 117_500.0 + 100.0;
    let bytes = (manifest + segment) / PAYLOAD * FRAME + 2.0 * 60.0 + 5.0 * 100.0;
    let want = 4.0 * 2e-3 + bytes * 8.0 / bps as f64;
    let got = s.playback.startup_ns().unwrap() as f64 / 1e9;
    eprintln!("start-up {got:.6} s, closed form {want:.6} s");
    assert!(
        (got - want).abs() / want < 0.005,
        "startup {got} s vs {want} s"
    );
    assert_eq!(
        s.playback.startup_ns(),
        Some(s.fetches[0].arrived_ns - s.start_ns)
    );
    let p50 = metric(&r, "video_client", "startup_p50_ns") / 1e9;
    assert!((p50 - got).abs() / got < 0.01, "published p50 {p50}");
}

/// BOLA on a 20 Mbit/s link climbs the ladder as its buffer grows: the
/// top rung needs Q ≥ 30 s (the hand table of `abr.rs`), it never
/// rebuffers, and its buffer stays under V·(v_M + γp) + one segment =
/// 36.88 + 4 s.
#[test]
fn bola_climbs_to_the_top_rung_as_its_buffer_fills_and_never_rebuffers() {
    let (r, s) = stream(20_000_000, 1_000_000, 300, Rule::Bola, 4);
    assert_eq!(metric(&r, "video_client", "rebuffer_events"), 0.0);
    assert!(s.fetches.iter().any(|f| f.rep == 8));
    for f in &s.fetches {
        let q = f.buffer_ns as f64 / 1e9;
        assert!(q <= 36.881 + 4.0, "buffer {q} s");
        if f.rep == 8 {
            assert!(q >= 30.0 - 1e-6, "the top rung at {q} s");
        }
        if q < 10.0 {
            assert_eq!(f.rep, 0, "below 10 s: the lowest");
        }
    }
    // Rungs never fall while the buffer only grows.
    let reps: Vec<usize> = s.fetches.iter().map(|f| f.rep).collect();
    assert!(reps.windows(2).all(|w| w[1] >= w[0]), "{reps:?}");
    assert_eq!(s.playback.play_ns, 300 * S);
}

#[test]
fn the_same_seed_gives_the_same_report() {
    let a = stream(3_000_000, 5_000_000, 60, Rule::Bola, 7).0;
    let b = stream(3_000_000, 5_000_000, 60, Rule::Bola, 7).0;
    assert_eq!(a.deterministic_json(), b.deterministic_json());
}

#[test]
fn a_watch_duration_fetches_only_the_segments_it_covers() {
    let (mut sim, s, c) = link(5, 50_000_000, 1_000_000);
    let mut cfg = server::Config::new();
    cfg.video = Some(Rc::new(
        Video::new(vec![500, 1000], 4 * S, 600 * S, 0.25).unwrap(),
    ));
    let cfg = Rc::new(cfg);
    sim.spawn_daemon(s, "video_server", move |h| server::run(h, cfg));
    let mut ccfg = vclient::Config::new(SERVER, "server");
    ccfg.watch = Some(Duration::from_secs(10));
    let ccfg = Rc::new(ccfg);
    sim.spawn(c, "video_client", move |h| vclient::run(h, ccfg));
    let r = sim.run();
    assert_success(&r);
    // ceil(10 / 4) = 3 segments, 12 s played.
    assert_eq!(metric(&r, "video_client", "segments"), 3.0);
    assert_eq!(metric(&r, "video_client", "play_ns"), 12e9);
    assert_eq!(metric(&r, "video_server", "requests"), 4.0);
    assert_eq!(
        metric(&r, "video_server", "bytes_sent") - metric(&r, "video_client", "bytes"),
        Video::new(vec![500, 1000], 4 * S, 600 * S, 0.0)
            .unwrap()
            .manifest()
            .len() as f64
    );
}

#[test]
fn a_server_without_a_video_fails_the_client_with_the_manifest_status() {
    let (mut sim, s, c) = link(6, 10_000_000, 1_000_000);
    let cfg = Rc::new(server::Config::new());
    sim.spawn_daemon(s, "web_server", move |h| server::run(h, cfg));
    let ccfg = Rc::new(vclient::Config::new(SERVER, "server"));
    sim.spawn(c, "video_client", move |h| vclient::run(h, ccfg));
    let r = sim.run();
    assert!(!r.success());
    let json = r.deterministic_json();
    assert!(
        json.contains("the manifest request got status 404"),
        "{json}"
    );
    assert_eq!(metric(&r, "video_client", "errors"), 1.0);
    assert_eq!(metric(&r, "video_client", "segments"), 0.0);
}
