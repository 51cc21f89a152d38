//! `web_user`: a browsing user, the ON/OFF model of SURGE (Barford and
//! Crovella 1998).
//!
//! A session starts at the site's root page (`/`). The user fetches the
//! page (over the first of its persistent connections), scans its HTML for
//! `<img src>` and `<a href>` ([`crate::http::links`]), and fetches the
//! images over up to `connections` parallel persistent connections (6 by
//! default, as browsers open per host), one request at a time on each.
//! The **page load time** runs from the page's request to the last
//! image's last byte. The user then thinks (a SURGE OFF time, Pareto
//! α = 1.5, k = 1 s, or the fixed `think`), and follows one of the page's
//! links with probability `follow` (0.85) or else ends the session: its
//! connections close and the next page is the root again. It stops after
//! `pages` pages, or at its `stop`.
//!
//! Metrics (per group, [`crate::stats`]): `pages`, `objects`, `bytes`
//! (bodies), `sessions`, `errors` (fetches that failed or were not 200)
//! and `page_load_p50_ns`/`_p90_ns`/`_p99_ns`.

use crate::client::{self, Conn, Origin};
use crate::http;
use crate::model::{self, Dist};
use crate::stats::Recorder;
use elvis_api::{AppResult, Host};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::net::Ipv4Addr;
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::Duration;

/// Options of `web_user`.
#[derive(Clone, Debug)]
pub struct Config {
    /// The server's address (set when its name resolves).
    pub to: Ipv4Addr,
    /// The `Host` field: the name written in `to`.
    pub name: String,
    pub port: u16,
    /// Pages to load (`None`: until stopped).
    pub pages: Option<u64>,
    /// Parallel connections for a page's images.
    pub connections: u32,
    /// A fixed think time (`None`: SURGE's Pareto).
    pub think: Option<Duration>,
    /// The probability of following a link rather than ending the
    /// session.
    pub follow: f64,
    pub stats: Rc<Recorder>,
}

/// How much of a page's HTML is kept to find its links.
pub const KEEP_HTML: usize = 64 * 1024;

const COUNTS: [&str; 5] = ["pages", "objects", "bytes", "sessions", "errors"];

/// Browses until `pages` are loaded or the application is stopped.
///
/// # Errors
/// None of its own: failed fetches are counted in `errors` and the
/// session starts again after a think time.
pub async fn run(host: Host, cfg: Rc<Config>) -> AppResult {
    cfg.stats.open(&host, &COUNTS, &["page_load"]);
    let origin = Origin::new(cfg.to, cfg.port, &cfg.name);
    let think = model::surge_think();
    let mut conns: Vec<Option<Conn>> = (0..cfg.connections.max(1)).map(|_| None).collect();
    let mut path = String::from("/");
    let mut loaded = 0u64;
    cfg.stats.add("sessions", 1);
    while cfg.pages.is_none_or(|p| loaded < p) {
        let next = match load(&host, &cfg, &origin, &mut conns, &path).await {
            Ok(links) => {
                loaded += 1;
                links
            }
            Err(()) => Vec::new(),
        };
        if cfg.pages.is_some_and(|p| loaded >= p) {
            break;
        }
        host.sleep(think_time(&host, &cfg, &think)).await;
        let follow = model::unit(host.random_u64()) < cfg.follow;
        path = match next.len() {
            n if follow && n > 0 => next[(host.random_u64() % n as u64) as usize].clone(),
            _ => {
                conns.iter_mut().for_each(|c| *c = None);
                cfg.stats.add("sessions", 1);
                "/".into()
            }
        };
    }
    Ok(())
}

fn think_time(host: &Host, cfg: &Config, think: &Dist) -> Duration {
    cfg.think.unwrap_or_else(|| {
        let s = think.sample(host.random_u64());
        Duration::from_nanos(((s * 1e9) as u64).min(model::MAX_THINK_NS))
    })
}

/// Loads one page and its images; returns its same-site links, or
/// `Err` when the page itself failed.
async fn load(
    host: &Host,
    cfg: &Rc<Config>,
    origin: &Origin,
    conns: &mut [Option<Conn>],
    path: &str,
) -> Result<Vec<String>, ()> {
    let start = host.now();
    let page = match client::get(host, origin, &mut conns[0], path, KEEP_HTML, false).await {
        Ok(f) if f.status == 200 => f,
        _ => {
            cfg.stats.add("errors", 1);
            return Err(());
        }
    };
    cfg.stats.add("bytes", page.bytes);
    let (hrefs, srcs) = http::links(&page.body);
    let local =
        |v: Vec<String>| -> Vec<String> { v.into_iter().filter(|p| p.starts_with('/')).collect() };
    let (hrefs, srcs) = (local(hrefs), local(srcs));
    let queue = Rc::new(RefCell::new(VecDeque::from(srcs)));
    let k = conns.len().min(queue.borrow().len());
    let mut fetchers: Vec<Pin<Box<dyn Future<Output = Option<Conn>>>>> = Vec::new();
    for slot in conns.iter_mut().take(k) {
        let mut c = slot.take();
        let (host, cfg, origin, queue) = (*host, cfg.clone(), origin.clone(), queue.clone());
        fetchers.push(Box::pin(async move {
            loop {
                let Some(p) = queue.borrow_mut().pop_front() else {
                    return c;
                };
                match client::get(&host, &origin, &mut c, &p, 0, false).await {
                    Ok(f) if f.status == 200 => {
                        cfg.stats.add("objects", 1);
                        cfg.stats.add("bytes", f.bytes);
                    }
                    _ => cfg.stats.add("errors", 1),
                }
            }
        }));
    }
    let mut done: Vec<Option<Option<Conn>>> = (0..k).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        for (f, d) in fetchers.iter_mut().zip(done.iter_mut()) {
            if d.is_none() {
                if let Poll::Ready(c) = f.as_mut().poll(cx) {
                    *d = Some(c);
                }
            }
        }
        if done.iter().all(Option::is_some) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    drop(fetchers);
    for (slot, c) in conns.iter_mut().zip(done) {
        *slot = c.flatten();
    }
    cfg.stats
        .time("page_load", host.now().as_nanos() - start.as_nanos());
    cfg.stats.add("pages", 1);
    Ok(hrefs)
}
