use crate::{assert_success, lan, metric, SERVER};
use elvis_sim::{AppError, Host};
use elvis_web::client::{self, Origin};
use elvis_web::{load, server, user};
use std::rc::Rc;
use std::time::Duration;

fn server_cfg(max_workers: u32) -> Rc<server::Config> {
    let mut c = server::Config::new();
    c.sndbuf = Some(64 * 1024);
    c.max_workers = max_workers;
    c.pages = 50;
    Rc::new(c)
}

/// A client that GETs `paths` in order, on one connection when `reuse`.
fn fetcher(
    paths: &'static [&'static str],
    reuse: bool,
) -> impl Fn(Host) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), AppError>>>> {
    move |h: Host| {
        Box::pin(async move {
            let o = Origin::new(SERVER, 80, "server");
            let mut conn = None;
            for (i, p) in paths.iter().enumerate() {
                let last = i + 1 == paths.len();
                let f = client::get(&h, &o, &mut conn, p, 1 << 20, !reuse || last).await?;
                h.publish(&format!("status_{i}"), f64::from(f.status));
                h.publish(&format!("bytes_{i}"), f.bytes as f64);
                h.publish(&format!("kept_{i}"), f.body.len() as f64);
                if !reuse {
                    assert!(conn.is_none(), "a closed exchange leaves no connection");
                }
            }
            assert!(conn.is_none());
            Ok(())
        })
    }
}

fn per_client(r: &elvis_sim::Report, name: &str) -> f64 {
    r.metrics
        .iter()
        .find(|m| m.application == "fetch" && m.name == name)
        .map(|m| m.value)
        .unwrap()
}

const PATHS: &[&str] = &["/obj/100KB", "/page/3", "/nope", "/obj/1"];

#[test]
fn one_persistent_connection_serves_several_requests() {
    let (mut sim, s, c) = lan(1, 1, 100_000_000);
    let cfg = server_cfg(0);
    sim.spawn_daemon(s, "web_server", move |h| server::run(h, cfg));
    sim.spawn(c, "fetch", fetcher(PATHS, true));
    let r = sim.run();
    assert_success(&r);
    // One connection: its two ends.
    assert_eq!(r.tcp_connections_total, 2);
    assert_eq!(metric(&r, "web_server", "connections"), 1.0);
    assert_eq!(metric(&r, "web_server", "requests"), 4.0);
    assert_eq!(metric(&r, "web_server", "responses_2xx"), 3.0);
    assert_eq!(metric(&r, "web_server", "responses_4xx"), 1.0);
    assert_eq!(per_client(&r, "status_0"), 200.0);
    assert_eq!(per_client(&r, "bytes_0"), 100_000.0);
    assert_eq!(per_client(&r, "status_2"), 404.0);
    assert_eq!(per_client(&r, "bytes_3"), 1.0);
    // The page came chunked and whole: its HTML was kept.
    assert!(per_client(&r, "kept_1") > 100.0);
    assert_eq!(
        per_client(&r, "kept_1"),
        per_client(&r, "bytes_1").min(1048576.0)
    );
}

#[test]
fn connection_close_makes_one_connection_per_request() {
    let (mut sim, s, c) = lan(1, 1, 100_000_000);
    let cfg = server_cfg(0);
    sim.spawn_daemon(s, "web_server", move |h| server::run(h, cfg));
    sim.spawn(c, "fetch", fetcher(PATHS, false));
    let r = sim.run();
    assert_success(&r);
    assert_eq!(r.tcp_connections_total, 8);
    assert_eq!(metric(&r, "web_server", "connections"), 4.0);
    // Each connection was served by a task of its own (Host::spawn), a
    // part of the server, not an application instance.
    let server = r
        .applications
        .iter()
        .find(|a| a.application == "web_server")
        .unwrap();
    assert_eq!((server.instances, server.waiting), (1, 1));
    assert_eq!(metric(&r, "web_server", "requests"), 4.0);
}

/// Four parallel loaders of 1 MB objects over 10 Mb/s: with `max_workers`
/// 1 the requests queue behind one another.
fn queued(max_workers: u32) -> elvis_sim::Report {
    let (mut sim, s, c) = lan(3, 1, 10_000_000);
    let cfg = server_cfg(max_workers);
    sim.spawn_daemon(s, "web_server", move |h| server::run(h, cfg));
    let lcfg = Rc::new(load::Config {
        origin: Origin::new(SERVER, 80, "server"),
        path: "/obj/1MB".into(),
        mode: load::Mode::Parallel(4),
        fetches: Some(8),
        stats: Rc::default(),
        offered_rate: Rc::default(),
    });
    sim.spawn(c, "http_load", move |h| load::run(h, lcfg));
    let r = sim.run();
    assert_success(&r);
    assert_eq!(metric(&r, "http_load", "fetches"), 8.0);
    assert_eq!(metric(&r, "http_load", "bytes"), 8e6);
    assert_eq!(metric(&r, "web_server", "requests"), 8.0);
    r
}

#[test]
fn a_server_at_its_max_workers_queues_requests_and_reports_the_delay() {
    let free = queued(0);
    assert_eq!(metric(&free, "web_server", "server_delay_p90_ns"), 0.0);
    let busy = queued(1);
    // Behind up to three 1 MB responses; a worker is held until the
    // response is in the 64 KiB send buffer, so the wait is most of one
    // transfer (0.8 s at 10 Mb/s) and at most three.
    let p90 = metric(&busy, "web_server", "server_delay_p90_ns");
    assert!(p90 > 0.1e9 && p90 < 3.0e9, "p90 {p90}");
    assert!(metric(&busy, "web_server", "server_delay_p50_ns") > 0.0);
    assert!(metric(&busy, "web_server", "server_delay_p99_ns") >= p90);
}

#[test]
fn a_full_queue_is_answered_503() {
    let (mut sim, s, c) = lan(3, 1, 10_000_000);
    let mut cfg = server::Config::new();
    cfg.sndbuf = Some(64 * 1024);
    cfg.max_workers = 1;
    cfg.max_queue = Some(1);
    let cfg = Rc::new(cfg);
    sim.spawn_daemon(s, "web_server", move |h| server::run(h, cfg));
    let lcfg = Rc::new(load::Config {
        origin: Origin::new(SERVER, 80, "server"),
        path: "/obj/1MB".into(),
        mode: load::Mode::Parallel(4),
        fetches: Some(4),
        stats: Rc::default(),
        offered_rate: Rc::default(),
    });
    sim.spawn(c, "http_load", move |h| load::run(h, lcfg));
    let r = sim.run();
    assert_success(&r);
    // One served, one waiting, so a third arriving while both are there
    // is refused.
    let refused = metric(&r, "web_server", "responses_5xx");
    assert!(refused >= 1.0);
    assert_eq!(metric(&r, "web_server", "responses_2xx") + refused, 4.0);
    assert_eq!(metric(&r, "http_load", "non_200"), refused);
}

fn browse(seed: u64) -> elvis_sim::Report {
    let (mut sim, s, c) = lan(seed, 3, 100_000_000);
    let cfg = server_cfg(0);
    sim.spawn_daemon(s, "web_server", move |h| server::run(h, cfg));
    let ucfg = Rc::new(user::Config {
        to: SERVER,
        name: "server".into(),
        port: 80,
        pages: Some(5),
        connections: 6,
        think: None,
        follow: 0.85,
        stats: Rc::default(),
    });
    for m in c..c + 3 {
        let ucfg = ucfg.clone();
        sim.spawn(m, "web_user", move |h| user::run(h, ucfg));
    }
    sim.run()
}

#[test]
fn users_load_pages_and_their_images_and_the_server_counts_each_request() {
    let r = browse(5);
    assert_success(&r);
    assert_eq!(metric(&r, "web_user", "pages"), 15.0);
    assert_eq!(metric(&r, "web_user", "errors"), 0.0);
    let objects = metric(&r, "web_user", "objects");
    assert!(
        objects >= 15.0,
        "SURGE pages have an image at least: {objects}"
    );
    assert_eq!(metric(&r, "web_server", "requests"), 15.0 + objects);
    assert_eq!(
        metric(&r, "web_server", "bytes_sent"),
        metric(&r, "web_user", "bytes")
    );
    let p50 = metric(&r, "web_user", "page_load_p50_ns");
    let p99 = metric(&r, "web_user", "page_load_p99_ns");
    // At least a handshake and a request: 2 RTTs of 2 ms.
    assert!(p50 >= 4e6 && p99 >= p50, "p50 {p50} p99 {p99}");
}

#[test]
fn the_same_seed_gives_the_same_report_and_another_seed_another() {
    let a = browse(9).deterministic_json();
    assert_eq!(a, browse(9).deterministic_json());
    assert_ne!(a, browse(10).deterministic_json());
}

#[test]
fn users_stopped_by_time_keep_their_metrics() {
    let (mut sim, s, c) = lan(2, 1, 100_000_000);
    let cfg = server_cfg(0);
    sim.spawn_daemon(s, "web_server", move |h| server::run(h, cfg));
    let ucfg = Rc::new(user::Config {
        to: SERVER,
        name: "server".into(),
        port: 80,
        pages: None,
        connections: 2,
        think: Some(Duration::from_millis(500)),
        follow: 1.0,
        stats: Rc::default(),
    });
    sim.spawn(c, "web_user", move |h: Host| async move {
        let stop = h.now() + Duration::from_secs(10);
        h.timeout_at(stop, user::run(h, ucfg)).await;
        Ok(())
    });
    let r = sim.run();
    assert_success(&r);
    let pages = metric(&r, "web_user", "pages");
    assert!((5.0..=20.0).contains(&pages), "{pages}");
    assert_eq!(metric(&r, "web_user", "sessions"), 1.0);
}

/// `http_load` at a rate: 10 fetches a second of 100 KB over an idle
/// 100 Mb/s LAN get the whole 8 Mbit/s asked for; over 1 Mb/s they get
/// at most the link's rate, a share well below 100 %.
fn at_rate(bandwidth: u64) -> elvis_sim::Report {
    let (mut sim, s, c) = lan(1, 1, bandwidth);
    let cfg = server_cfg(0);
    sim.spawn_daemon(s, "web_server", move |h| server::run(h, cfg));
    let lcfg = Rc::new(load::Config {
        origin: Origin::new(SERVER, 80, "server"),
        path: "/obj/100KB".into(),
        mode: load::Mode::Rate(10.0),
        fetches: Some(20),
        stats: Rc::default(),
        offered_rate: Rc::default(),
    });
    sim.spawn(c, "http_load", move |h| load::run(h, lcfg));
    let r = sim.run();
    assert_success(&r);
    assert_eq!(metric(&r, "http_load", "fetches"), 20.0);
    assert_eq!(metric(&r, "http_load", "offered_bps"), 8e6);
    r
}

#[test]
fn http_load_reports_its_throughput_and_share_of_the_rate_asked_for() {
    let fast = at_rate(100_000_000);
    let (bps, share) = (
        metric(&fast, "http_load", "throughput_bps"),
        metric(&fast, "http_load", "rate_share_percent"),
    );
    // 2 MB over the 2 s the 20 starts were spread over (the last fetch,
    // started at 1.9 s, takes about 10 ms): the rate asked for.
    assert!(bps > 8e6 * 0.99 && bps <= 8e6, "{bps}");
    assert!((share - bps / 8e6 * 100.0).abs() < 1e-3, "{share}");
    let slow = at_rate(1_000_000);
    let (bps, share) = (
        metric(&slow, "http_load", "throughput_bps"),
        metric(&slow, "http_load", "rate_share_percent"),
    );
    assert!(bps < 1e6 && bps > 0.8e6, "{bps}");
    assert!(share < 12.5, "{share}");
}
