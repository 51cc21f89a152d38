//! `http_flood` against a `web_server` whose workers each take `service`
//! per request: the server's capacity is `max_workers / service`, the
//! flood keeps its queue `parallel − max_workers` deep, and a legitimate
//! request waits behind that queue, unless `limit_conn` caps the
//! attacker's connections.

use crate::{assert_success, lan, metric, SERVER};
use elvis_web::client::Origin;
use elvis_web::{flood, load, server};
use std::rc::Rc;
use std::time::Duration;

const MS: f64 = 1e6;

/// A server of 4 workers taking 10 ms a request; an attacker with
/// `parallel` keep-alive connections for 3 s (none when 0); a user
/// fetching a small object 20 times in a row from 1.5 s. (The flood's
/// first burst of SYNs meets an unresolved ARP entry, which holds only a
/// few datagrams: the other connections start with their SYN's
/// retransmission, 1 s later.)
fn attack(parallel: u32, limit_conn: Option<u32>) -> elvis_sim::Report {
    let (mut sim, s, user) = lan(11, 2, 100_000_000);
    let attacker = user + 1;
    let mut cfg = server::Config::new();
    cfg.max_workers = 4;
    cfg.service = Duration::from_millis(10);
    cfg.limit_conn = limit_conn;
    let cfg = Rc::new(cfg);
    sim.spawn_daemon(s, "web_server", move |h| server::run(h, cfg));
    if parallel > 0 {
        let fcfg = Rc::new(flood::Config {
            origin: Origin::new(SERVER, 80, "server"),
            path: "/obj/1KB".into(),
            mode: flood::Mode::Parallel(parallel),
            keepalive: true,
            count: None,
            duration: Some(Duration::from_secs(3)),
            stats: Rc::default(),
        });
        sim.spawn(attacker, "http_flood", move |h| flood::run(h, fcfg));
    }
    let lcfg = Rc::new(load::Config {
        origin: Origin::new(SERVER, 80, "server"),
        path: "/obj/1KB".into(),
        mode: load::Mode::Parallel(1),
        fetches: Some(20),
        stats: Rc::default(),
        offered_rate: Rc::default(),
    });
    sim.spawn(user, "http_load", move |h: elvis_sim::Host| async move {
        h.sleep(Duration::from_millis(1500)).await;
        load::run(h, lcfg).await
    });
    let r = sim.run();
    assert_success(&r);
    assert_eq!(metric(&r, "http_load", "fetches"), 20.0);
    r
}

#[test]
fn a_get_flood_fills_the_worker_queue_and_legitimate_requests_wait_behind_it() {
    // Alone: a fetch is a handshake, a request and 10 ms of service.
    let calm = attack(0, None);
    let calm_p50 = metric(&calm, "http_load", "fetch_p50_ns");
    assert!(calm_p50 > 10.0 * MS && calm_p50 < 20.0 * MS, "{calm_p50}");
    // 32 connections on 4 workers: a new request finds about 28 ahead,
    // 28 / 4 x 10 ms = 70 ms, then its own 10 ms.
    let hit = attack(32, None);
    let p50 = metric(&hit, "http_load", "fetch_p50_ns");
    assert!(p50 > 70.0 * MS && p50 < 100.0 * MS, "{p50}");
    // The server serves at its capacity, 4 / 10 ms = 400 a second, at
    // least over the flood's last 2 s, at most over its 3 s (and the
    // user's 20, and the 32 requests in flight at the end).
    let served = metric(&hit, "web_server", "responses_2xx");
    assert!((800.0..=1200.0 + 52.0).contains(&served), "{served}");
    let delay = metric(&hit, "web_server", "server_delay_p50_ns");
    assert!(delay > 60.0 * MS && delay < 80.0 * MS, "{delay}");
    assert_eq!(
        metric(&hit, "http_flood", "responses"),
        metric(&hit, "http_flood", "requests")
    );
    assert_eq!(served, metric(&hit, "http_flood", "responses") + 20.0);
}

#[test]
fn limit_conn_turns_the_flood_away_and_keeps_legitimate_fetches_fast() {
    let r = attack(32, Some(2));
    let p50 = metric(&r, "http_load", "fetch_p50_ns");
    // At most two flood requests ahead on four workers: no wait beyond
    // the fetch's own.
    assert!(p50 < 25.0 * MS, "{p50}");
    let limited = metric(&r, "web_server", "limited");
    assert!(limited > 100.0, "{limited}");
    assert_eq!(metric(&r, "web_server", "responses_5xx"), limited);
    assert_eq!(metric(&r, "http_flood", "non_200"), limited);
}

#[test]
fn a_rate_flood_sends_rate_times_duration_requests() {
    let (mut sim, s, a) = lan(12, 1, 100_000_000);
    let cfg = Rc::new(server::Config::new());
    sim.spawn_daemon(s, "web_server", move |h| server::run(h, cfg));
    for keepalive in [true, false] {
        let fcfg = Rc::new(flood::Config {
            origin: Origin::new(SERVER, 80, "server"),
            path: "/obj/100".into(),
            mode: flood::Mode::Rate(500.0),
            keepalive,
            count: None,
            duration: Some(Duration::from_secs(1)),
            stats: Rc::default(),
        });
        let name = if keepalive { "flood_ka" } else { "flood_close" };
        sim.spawn(a, name, move |h| flood::run(h, fcfg));
    }
    let r = sim.run();
    assert_success(&r);
    // 500 a second for 1 s, each: 1,000 requests, all answered.
    assert_eq!(metric(&r, "web_server", "requests"), 1000.0);
    assert_eq!(metric(&r, "web_server", "responses_2xx"), 1000.0);
    // With keep-alive, connections are reused: far fewer than requests.
    let conns = metric(&r, "web_server", "connections");
    assert!((500.0..600.0).contains(&conns), "{conns}");
}

/// A flood stopped from outside (as `stop` does: its future dropped)
/// ends every request task with it: the server hears nothing after.
#[test]
fn a_stopped_flood_ends_all_its_connections() {
    let (mut sim, s, a) = lan(13, 1, 100_000_000);
    let mut cfg = server::Config::new();
    cfg.max_workers = 4;
    cfg.service = Duration::from_millis(10);
    let cfg = Rc::new(cfg);
    sim.spawn_daemon(s, "web_server", move |h| server::run(h, cfg));
    let fcfg = Rc::new(flood::Config {
        origin: Origin::new(SERVER, 80, "server"),
        path: "/obj/1KB".into(),
        mode: flood::Mode::Parallel(16),
        keepalive: true,
        count: None,
        duration: None,
        stats: Rc::default(),
    });
    sim.spawn(a, "http_flood", move |h: elvis_sim::Host| async move {
        let stop = h.now() + Duration::from_secs(2);
        h.timeout_at(stop, flood::run(h, fcfg)).await;
        Ok(())
    });
    let r = sim.run();
    assert_success(&r);
    // Until the stop: at most 4 / 10 ms = 400 a second for 2 s. (The
    // run itself goes on for the connections' TIME-WAIT; a flood that
    // went on would not let it end at all.)
    let served = metric(&r, "web_server", "responses_2xx");
    assert!(served > 100.0 && served <= 800.0, "{served}");
    assert_eq!(served, metric(&r, "web_server", "requests"));
}
