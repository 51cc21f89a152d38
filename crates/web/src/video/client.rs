//! `video_client`: an adaptive streaming client, after dash.js.
//!
//! Over one persistent HTTP/1.1 connection it GETs the manifest
//! (`/video/manifest`), then the segments in order, one request at a
//! time: for each, the ABR rule ([`super::abr`]) picks a rung, the client
//! waits if its buffer is full, fetches `/video/<rep>/<index>`, and pushes
//! the segment into its [`Playback`] buffer when its last byte arrives. It
//! ends when it has fetched the segments covering `watch` (the whole video
//! by default) and played its buffer out, or at its `stop`.
//!
//! When the buffer is full:
//! - throughput rule: it waits until the buffer is `buffer − segment`,
//!   so that the segment fits under the target;
//! - BOLA: it waits until the buffer is `V·(v_m + γp)` for the chosen
//!   rung `m` (dash.js's `BolaRule` placeholder delay).
//!
//! A segment's throughput is its body's bytes over the time from the
//! request's write to the body's last byte.
//!
//! Metrics (per group, [`crate::stats`]): `startup_p50_ns`/`_p90_ns`/
//! `_p99_ns`; counts `requests` (manifest and segments), `segments`,
//! `bytes` (bodies), `switches` (a segment at another rung than the one
//! before), `rebuffer_events`, `play_ns`, `stall_ns`, `bitrate_sum_kbps`,
//! `errors`; and the ratios `rebuffer_ratio` (`stall_ns / (play_ns +
//! stall_ns)`) and `mean_bitrate_kbps` (`bitrate_sum_kbps / segments`).

use super::abr::{Bola, Throughput};
use super::playback::Playback;
use super::{segment_path, Video, MANIFEST_PATH, MAX_MANIFEST};
use crate::client::{self, Conn, Origin};
use crate::stats::{RatioDef, Recorder};
use elvis_api::{AppError, AppResult, Host};
use std::cell::RefCell;
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::time::Duration;

/// The ABR rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    Bola,
    Throughput,
}

/// One segment as the client fetched it (for tests and traces).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetch {
    pub index: u64,
    pub rep: usize,
    /// The buffer, ns, when the rung was chosen.
    pub buffer_ns: u64,
    /// When the request was written and when the body's last byte came, ns.
    pub requested_ns: u64,
    pub arrived_ns: u64,
    pub bytes: u64,
}

/// A finished session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Session {
    /// When the manifest was requested, ns.
    pub start_ns: u64,
    pub playback: Playback,
    pub fetches: Vec<Fetch>,
}

/// Options of `video_client`.
#[derive(Clone, Debug)]
pub struct Config {
    /// The server's address (set when its name resolves).
    pub to: Ipv4Addr,
    /// The `Host` field.
    pub name: String,
    pub port: u16,
    pub rule: Rule,
    /// The buffer target.
    pub buffer: Duration,
    /// How much of the video to watch (`None`: all of it).
    pub watch: Option<Duration>,
    pub stats: Rc<Recorder>,
    /// Where finished sessions are written, if anywhere (tests).
    pub sessions: Option<Rc<RefCell<Vec<Session>>>>,
}

impl Config {
    /// BOLA, a 30 s buffer, port 80, the whole video.
    pub fn new(to: Ipv4Addr, name: &str) -> Config {
        Config {
            to,
            name: name.into(),
            port: 80,
            rule: Rule::Bola,
            buffer: Duration::from_secs(30),
            watch: None,
            stats: Rc::default(),
            sessions: None,
        }
    }
}

const COUNTS: [&str; 9] = [
    "requests",
    "segments",
    "bytes",
    "switches",
    "rebuffer_events",
    "play_ns",
    "stall_ns",
    "bitrate_sum_kbps",
    "errors",
];

const RATIOS: [RatioDef; 2] = [
    ("rebuffer_ratio", "stall_ns", &["play_ns", "stall_ns"]),
    ("mean_bitrate_kbps", "bitrate_sum_kbps", &["segments"]),
];

/// What has been added to the group's counts so far.
#[derive(Default)]
struct Reported {
    play: u64,
    stall: u64,
    stalls: u64,
}

impl Reported {
    /// Adds what `p` has played, stalled and rebuffered since last time.
    fn sync(&mut self, stats: &Recorder, p: &Playback) {
        stats.add("play_ns", p.play_ns - self.play);
        stats.add("stall_ns", p.stall_ns - self.stall);
        stats.add("rebuffer_events", p.stalls - self.stalls);
        (self.play, self.stall, self.stalls) = (p.play_ns, p.stall_ns, p.stalls);
    }
}

fn now_ns(host: &Host) -> u64 {
    host.now().as_nanos()
}

/// Streams until done or stopped.
///
/// # Errors
/// The manifest could not be fetched or read, or a segment failed twice
/// (each counted in `errors`).
pub async fn run(host: Host, cfg: Rc<Config>) -> AppResult {
    cfg.stats
        .open_with_ratios(&host, &COUNTS, &["startup"], &RATIOS);
    let origin = Origin::new(cfg.to, cfg.port, &cfg.name);
    let mut conn: Option<Conn> = None;
    let start_ns = now_ns(&host);
    cfg.stats.add("requests", 1);
    let video = match client::get(
        &host,
        &origin,
        &mut conn,
        MANIFEST_PATH,
        MAX_MANIFEST,
        false,
    )
    .await
    {
        Ok(f) if f.status == 200 => Video::parse_manifest(&f.body),
        Ok(f) => Err(format!("the manifest request got status {}", f.status)),
        Err(e) => Err(format!("the manifest request failed: {e}")),
    }
    .map_err(|e| {
        cfg.stats.add("errors", 1);
        AppError::new(e)
    })?;
    let n = match cfg.watch {
        Some(w) => video
            .segments()
            .min((w.as_nanos() as u64).div_ceil(video.segment_ns)),
        None => video.segments(),
    };
    let mut s = Session {
        start_ns,
        playback: Playback::new(start_ns),
        fetches: Vec::new(),
    };
    let mut reported = Reported::default();
    let r = stream(
        &host,
        &cfg,
        (&origin, &mut conn),
        &video,
        n,
        &mut s,
        &mut reported,
    )
    .await;
    if r.is_ok() {
        // Play out what is buffered.
        host.sleep(Duration::from_nanos(s.playback.buffer_ns()))
            .await;
        s.playback.advance(now_ns(&host));
        reported.sync(&cfg.stats, &s.playback);
    }
    if let Some(log) = &cfg.sessions {
        log.borrow_mut().push(s.clone());
    }
    r
}

/// Fetches segments `0..n`, recording them in `s`.
async fn stream(
    host: &Host,
    cfg: &Config,
    (origin, conn): (&Origin, &mut Option<Conn>),
    video: &Video,
    n: u64,
    s: &mut Session,
    reported: &mut Reported,
) -> AppResult {
    let bola = Bola::new(&video.ladder_kbps, cfg.buffer.as_secs_f64());
    let mut tput = Throughput::default();
    let mut last: Option<usize> = None;
    for index in 0..n {
        s.playback.advance(now_ns(host));
        reported.sync(&cfg.stats, &s.playback);
        let q = s.playback.buffer_ns();
        let rep = match cfg.rule {
            Rule::Throughput => tput.choose(&video.ladder_kbps),
            Rule::Bola => bola.choose(q as f64 / 1e9),
        };
        let level = match cfg.rule {
            Rule::Throughput => {
                (cfg.buffer.as_nanos() as u64).saturating_sub(video.duration_of(index))
            }
            Rule::Bola => (bola.level(rep) * 1e9).min(u64::MAX as f64) as u64,
        };
        if s.playback.startup_ns().is_some() && q > level {
            host.sleep(Duration::from_nanos(q - level)).await;
            s.playback.advance(now_ns(host));
        }
        let requested_ns = now_ns(host);
        cfg.stats.add("requests", 1);
        let path = segment_path(rep, index);
        let f = match client::get(host, origin, conn, &path, 0, false).await {
            Ok(f) if f.status == 200 => f,
            Ok(f) => {
                cfg.stats.add("errors", 1);
                return Err(AppError::new(format!("{path}: status {}", f.status)));
            }
            Err(e) => {
                cfg.stats.add("errors", 1);
                return Err(AppError::new(format!("{path}: {e}")));
            }
        };
        let arrived_ns = now_ns(host);
        tput.record(f.bytes, arrived_ns - requested_ns);
        s.playback.push(arrived_ns, video.duration_of(index));
        reported.sync(&cfg.stats, &s.playback);
        if s.fetches.is_empty() {
            if let Some(d) = s.playback.startup_ns() {
                cfg.stats.time("startup", d);
            }
        }
        cfg.stats.add("segments", 1);
        cfg.stats.add("bytes", f.bytes);
        cfg.stats.add("bitrate_sum_kbps", video.ladder_kbps[rep]);
        if last.is_some_and(|l| l != rep) {
            cfg.stats.add("switches", 1);
        }
        last = Some(rep);
        s.fetches.push(Fetch {
            index,
            rep,
            buffer_ns: q,
            requested_ns,
            arrived_ns,
            bytes: f.bytes,
        });
    }
    Ok(())
}
