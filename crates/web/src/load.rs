//! `http_load`: fetches one URL over and over, like Jef Poskanzer's
//! `http_load`: either `rate` fetches started per second (open loop) or
//! `parallel` fetches kept in flight (closed loop). Each fetch is its own
//! connection (`Connection: close`), as in `http_load`. It ends after
//! `fetches` fetches, or at its `stop`.
//!
//! The **fetch time** runs from the connection's start to the response's
//! last byte.
//!
//! Metrics (per group, [`crate::stats`]): `fetches` (completed with any
//! status), `bytes` (bodies), `errors` (failed connections or responses),
//! `non_200`, and `fetch_p50_ns`/`_p90_ns`/`_p99_ns`; then the client
//! throughput as `http_load` prints it (its "bytes/sec"):
//! `throughput_bps`, the bodies' bits over the time from the group's start
//! to the last fetch done (with `rate`, at least the fetches done over the
//! rate: the time their starts were spread over). With `rate`, also `offered_bps`, the rate the
//! group was asked for (its machines' fetches per second × the mean body
//! of the fetches done × 8), and `rate_share_percent`, `throughput_bps`
//! over `offered_bps`: the share of the maximum allowed rate that a
//! traffic class achieved (Loukili et al., Tables 2–4).

use crate::client::{self, Origin};
use crate::exec::Jobs;
use crate::stats::Recorder;
use elvis_api::{AppResult, Host, Time};
use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;
use std::task::Poll;

/// How fetches are started.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// This many started per second.
    Rate(f64),
    /// This many in flight at once.
    Parallel(u32),
}

/// Options of `http_load`.
#[derive(Clone, Debug)]
pub struct Config {
    pub origin: Origin,
    pub path: String,
    pub mode: Mode,
    /// Fetches to make (`None`: until stopped).
    pub fetches: Option<u64>,
    pub stats: Rc<Recorder>,
    /// Fetches per second the group's machines were asked for (`rate`),
    /// summed as they start.
    pub offered_rate: Rc<Cell<f64>>,
}

const COUNTS: [&str; 4] = ["fetches", "bytes", "errors", "non_200"];

/// The gauges, published after the counts.
const GAUGES: [&str; 3] = ["throughput_bps", "offered_bps", "rate_share_percent"];

/// Fetches until done or stopped.
///
/// # Errors
/// None of its own: failures are counted in `errors`.
pub async fn run(host: Host, cfg: Rc<Config>) -> AppResult {
    cfg.stats
        .open_with_gauges(&host, &COUNTS, &["fetch"], &GAUGES);
    if let Mode::Rate(r) = cfg.mode {
        cfg.offered_rate.set(cfg.offered_rate.get() + r);
    }
    let kick = Rc::new(Cell::new(false));
    let mut jobs = Jobs::new(kick);
    let started = Rc::new(Cell::new(0u64));
    let more = |started: &Cell<u64>| cfg.fetches.is_none_or(|f| started.get() < f);
    match cfg.mode {
        Mode::Parallel(n) => {
            for _ in 0..n.max(1) {
                let (cfg, started) = (cfg.clone(), started.clone());
                jobs.push(async move {
                    while cfg.fetches.is_none_or(|f| started.get() < f) {
                        started.set(started.get() + 1);
                        fetch(&host, &cfg).await;
                    }
                });
            }
        }
        Mode::Rate(rate) => {
            let t0 = host.now();
            while more(&started) {
                let i = started.get();
                started.set(i + 1);
                jobs.push(fetch_owned(host, cfg.clone()));
                let at =
                    t0 + std::time::Duration::from_nanos((((i + 1) as f64) * 1e9 / rate) as u64);
                run_until(&host, &mut jobs, Some(at)).await;
            }
        }
    }
    run_until(&host, &mut jobs, None).await;
    Ok(())
}

/// Polls `jobs` until `until` (or, for `None`, until they are all done).
async fn run_until(host: &Host, jobs: &mut Jobs, until: Option<Time>) {
    let mut sleep = until.map(|t| Box::pin(host.sleep_until(t)));
    std::future::poll_fn(|cx| {
        jobs.poll(cx);
        match sleep.as_mut() {
            Some(s) => s.as_mut().poll(cx),
            None if jobs.is_empty() => Poll::Ready(()),
            None => Poll::Pending,
        }
    })
    .await
}

async fn fetch_owned(host: Host, cfg: Rc<Config>) {
    fetch(&host, &cfg).await
}

/// One fetch on its own connection.
async fn fetch(host: &Host, cfg: &Config) {
    let start = host.now();
    let mut conn = None;
    match client::get(host, &cfg.origin, &mut conn, &cfg.path, 0, true).await {
        Ok(f) => {
            cfg.stats.add("fetches", 1);
            cfg.stats.add("bytes", f.bytes);
            if f.status != 200 {
                cfg.stats.add("non_200", 1);
            }
            cfg.stats
                .time("fetch", host.now().as_nanos() - start.as_nanos());
            rates(host, cfg);
        }
        Err(_) => cfg.stats.add("errors", 1),
    }
}

/// Updates the group's throughput gauges after a fetch.
fn rates(host: &Host, cfg: &Config) {
    let s = &cfg.stats;
    let (bytes, fetches) = (s.get("bytes") as f64, s.get("fetches") as f64);
    let mut span = host.now().as_nanos().saturating_sub(s.since()) as f64;
    // At a rate, the fetches done so far were scheduled over at least
    // fetches / rate seconds: the last one starts (n − 1) / rate after
    // the first, and a short fetch must not count as a rate above the
    // one asked for.
    let rate = cfg.offered_rate.get();
    if rate > 0.0 {
        span = span.max(fetches / rate * 1e9);
    }
    if span <= 0.0 {
        return;
    }
    let bps = bytes * 8e9 / span;
    s.set("throughput_bps", bps.round());
    let offered = rate * bytes / fetches.max(1.0) * 8.0;
    if offered > 0.0 {
        s.set("offered_bps", offered.round());
        s.set("rate_share_percent", bps / offered * 100.0);
    }
}
