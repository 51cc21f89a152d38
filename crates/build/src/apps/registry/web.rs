//! The web applications' options (crate `elvis-web`): `web_server` (its
//! model, workers and queue), `web_user` (whom it browses and how),
//! `http_load` (its URL and rate or parallelism), `video_server` (a web
//! server with a video), `video_client` (its ABR rule and buffer) and
//! `http_flood` (its URL, rate or parallelism, keep-alive).

use super::{factory, AppFactory, Opts, ParamError, Target};
use crate::apps::timing::Timing;
use elvis_scenario::Param;
use elvis_sim::Host;
use elvis_web::video::{self, client as vclient, Video};
use elvis_web::{client, flood, load, model::Model, server, user};
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::time::Duration;

pub(super) const SERVER: &[&str] = &[
    "port",
    "max_workers",
    "max_queue",
    "backlog",
    "keepalive",
    "sndbuf",
    "congestion",
    "model",
    "pages",
    "service",
    "limit_conn",
];
pub(super) const VIDEO_SERVER: &[&str] = &[
    "port",
    "max_workers",
    "max_queue",
    "backlog",
    "keepalive",
    "sndbuf",
    "congestion",
    "model",
    "pages",
    "service",
    "limit_conn",
    "ladder",
    "segment",
    "duration",
    "variation",
];
pub(super) const VIDEO_CLIENT: &[&str] = &["to", "port", "abr", "buffer", "duration"];
pub(super) const HTTP_FLOOD: &[&str] =
    &["url", "rate", "parallel", "keepalive", "count", "duration"];

/// `web_server`: serves sized objects and a site drawn from `model`
/// (SURGE by default, or an Elvis-format directory relative to the NDL
/// file); `video_server` also serves a video.
pub(super) fn build_server(
    o: &Opts<'_>,
    timing: Timing,
    with_video: bool,
) -> Result<AppFactory, ParamError> {
    let mut cfg = server::Config::new();
    cfg.port = o.port_or("port", 80)?;
    cfg.max_workers = u32::try_from(o.u64_or("max_workers", 150)?).map_err(|_| {
        ParamError::new(o.loc("max_workers"), "max_workers is too large")
            .hint("max_workers='150' (0: no limit)")
    })?;
    cfg.max_queue = match o.params.get("max_queue") {
        None => None,
        Some(_) => Some(o.u64_or("max_queue", 0)? as usize),
    };
    cfg.backlog = o.u64_or("backlog", 511)?.clamp(1, 65_535) as usize;
    cfg.keepalive = o.duration_or("keepalive", cfg.keepalive)?;
    cfg.sndbuf = o.buffer("sndbuf")?;
    cfg.congestion = o.congestion()?;
    cfg.pages = o.u64_or("pages", 1000)?;
    if cfg.pages == 0 {
        return Err(
            ParamError::new(o.loc("pages"), "a site has 1 page at least").hint("pages='1000'"),
        );
    }
    if let Some(m) = o.params.get("model") {
        cfg.model = Rc::new(model(o, m)?);
    }
    cfg.service = o.duration_or("service", Duration::ZERO)?;
    if let Some(p) = o.params.get("limit_conn") {
        let l = o.u64_or("limit_conn", 0)?;
        if !(1..=65_535).contains(&l) {
            return Err(ParamError::new(
                p.loc,
                format!("limit_conn '{}' is not 1 to 65535", p.value),
            )
            .hint("limit_conn='10' (connections per client address)"));
        }
        cfg.limit_conn = Some(l as u32);
    }
    let name = if with_video {
        cfg.video = Some(Rc::new(video_of(o)?));
        "video_server"
    } else {
        "web_server"
    };
    let cfg = Rc::new(cfg);
    Ok(factory(name, true, move |sim, m| {
        let cfg = cfg.clone();
        timing.spawn_daemon(sim, m, name, move |h: Host| server::run(h, cfg));
    }))
}

/// A `video_server`'s video: `ladder`, `segment`, `duration`, `variation`.
fn video_of(o: &Opts<'_>) -> Result<Video, ParamError> {
    let ladder = match o.params.get("ladder") {
        None => video::DEFAULT_LADDER_KBPS.to_vec(),
        Some(p) => video::parse_ladder(&p.value).map_err(|e| {
            ParamError::new(p.loc, format!("ladder: {e}"))
                .hint("ladder='235,375,560,750,1050,1750,2350,3000,4300' (kbit/s, increasing)")
        })?,
    };
    let segment = o.duration_or("segment", Duration::from_secs(4))?;
    let duration = o.duration_or("duration", Duration::from_secs(600))?;
    let variation = match o.params.get("variation") {
        None => 0.0,
        Some(p) => p
            .value
            .trim()
            .trim_end_matches('%')
            .parse::<f64>()
            .ok()
            .map(|v| {
                if p.value.trim().ends_with('%') {
                    v / 100.0
                } else {
                    v
                }
            })
            .filter(|v| (0.0..1.0).contains(v))
            .ok_or_else(|| {
                ParamError::new(
                    p.loc,
                    format!("variation '{}' is not a fraction in [0, 1)", p.value),
                )
                .hint("variation='0.1' (segments within ±10 % of bitrate × duration)")
            })?,
    };
    let at = if o.params.get("segment").is_some() {
        o.loc("segment")
    } else {
        o.loc("duration")
    };
    Video::new(
        ladder,
        segment.as_nanos() as u64,
        duration.as_nanos() as u64,
        variation,
    )
    .map_err(|e| ParamError::new(at, e).hint("segment='4s' duration='600s'"))
}

/// `video_client`: streams the video of the `video_server` at `to`.
pub(super) fn build_video_client(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let to = o.target("to")?;
    let mut cfg = vclient::Config::new(to.ip(), o.required("to")?.value.trim());
    cfg.port = o.port_or("port", 80)?;
    cfg.rule = match o.choice("abr", &["bola", "throughput"], "bola")? {
        "throughput" => vclient::Rule::Throughput,
        _ => vclient::Rule::Bola,
    };
    cfg.buffer = o.duration_or("buffer", cfg.buffer)?;
    if cfg.buffer.is_zero() {
        return Err(
            ParamError::new(o.loc("buffer"), "a buffer target of 0 holds no segment")
                .hint("buffer='30s'"),
        );
    }
    cfg.watch = o.duration("duration")?.map(Duration::from_nanos);
    if cfg.watch.is_some_and(|w| w.is_zero()) {
        return Err(
            ParamError::new(o.loc("duration"), "a duration of 0 watches nothing")
                .hint("duration='60s', or leave it out to watch the whole video"),
        );
    }
    let cfg = Rc::new(cfg);
    let set = |c: &mut vclient::Config, ip| c.to = ip;
    Ok(factory("video_client", false, move |sim, m| {
        to.spawn(sim, m, timing, "video_client", &cfg, set, vclient::run);
    }))
}

/// Reads `model=`: `surge`, or a directory of `buckets,weights` tables.
fn model(o: &Opts<'_>, p: &Param) -> Result<Model, ParamError> {
    if p.value.trim().eq_ignore_ascii_case("surge") {
        return Ok(Model::surge());
    }
    let dir = match o.ctx.base_dir {
        Some(base) => std::path::Path::new(base).join(p.value.trim()),
        None => std::path::PathBuf::from(p.value.trim()),
    };
    Model::from_dir(&dir).map_err(|e| {
        ParamError::new(p.loc, format!("model: {e}")).hint(
            "model='surge' or a directory (relative to the NDL file) holding page_size.csv, \
             num_links.csv, num_images.csv and image_size.csv, each 'buckets,weights'",
        )
    })
}

/// `web_user`: browses the server `to`.
pub(super) fn build_user(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let to = o.target("to")?;
    let connections = o.u64_or("connections", 6)?;
    if !(1..=64).contains(&connections) {
        return Err(
            ParamError::new(o.loc("connections"), "connections must be 1 to 64")
                .hint("connections='6' (what browsers open per host)"),
        );
    }
    let follow = match o.params.get("follow") {
        None => 0.85,
        Some(p) => p
            .value
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|f| (0.0..=1.0).contains(f))
            .ok_or_else(|| {
                ParamError::new(p.loc, format!("follow '{}' is not a probability", p.value))
                    .hint("follow='0.85'")
            })?,
    };
    let think = match o.params.get("think") {
        None => None,
        Some(p) if p.value.trim().eq_ignore_ascii_case("surge") => None,
        Some(_) => Some(o.duration_or("think", std::time::Duration::ZERO)?),
    };
    let cfg = Rc::new(user::Config {
        to: to.ip(),
        name: o.required("to")?.value.trim().to_string(),
        port: o.port_or("port", 80)?,
        pages: o
            .params
            .get("pages")
            .map(|_| o.u64_or("pages", 0))
            .transpose()?,
        connections: connections as u32,
        think,
        follow,
        stats: Rc::default(),
    });
    let set = |c: &mut user::Config, ip| c.to = ip;
    Ok(factory("web_user", false, move |sim, m| {
        to.spawn(sim, m, timing, "web_user", &cfg, set, user::run);
    }))
}

/// Reads `url=` and where its host is.
fn url_target(o: &Opts<'_>) -> Result<(client::Url, Target), ParamError> {
    let u = o.required("url")?;
    let url = client::parse_url(&u.value)
        .map_err(|e| ParamError::new(u.loc, e).hint("url='http://server/obj/504KB'"))?;
    let to = if o.ctx.dns && url.host.parse::<Ipv4Addr>().is_err() {
        Target::name(&Param {
            value: url.host.clone(),
            ..u.clone()
        })?
    } else {
        Target::Ip((o.ctx.resolve)(&url.host).ok_or_else(|| {
            ParamError::new(u.loc, format!("unknown machine '{}' in url", url.host))
                .hint("the URL's host is a machine name or an IPv4 address")
        })?)
    };
    Ok((url, to))
}

/// `rate=` (per second) or `parallel=`, not both: `Ok(None)` for neither.
fn rate_or_parallel(o: &Opts<'_>, what: &str) -> Result<Option<Result<f64, u32>>, ParamError> {
    match (o.params.get("rate"), o.params.get("parallel")) {
        (Some(_), Some(p)) => Err(ParamError::new(p.loc, "give rate or parallel, not both")),
        (Some(r), None) => {
            let rate = r
                .value
                .trim()
                .trim_end_matches("/s")
                .parse::<f64>()
                .ok()
                .filter(|v| *v > 0.0 && v.is_finite() && *v <= 1e9)
                .ok_or_else(|| {
                    ParamError::new(
                        r.loc,
                        format!("rate '{}' is not {what} per second", r.value),
                    )
                    .hint("rate='10'")
                })?;
            Ok(Some(Ok(rate)))
        }
        (None, Some(_)) => Ok(Some(Err(o.u64_or("parallel", 1)?.clamp(1, 10_000) as u32))),
        (None, None) => Ok(None),
    }
}

/// `http_flood`: GETs of `url` at `rate` per second or over `parallel`
/// connections.
pub(super) fn build_flood(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let (url, to) = url_target(o)?;
    let mode = match rate_or_parallel(o, "requests")? {
        Some(Ok(r)) => flood::Mode::Rate(r),
        Some(Err(n)) => flood::Mode::Parallel(n),
        None => {
            return Err(
                ParamError::new(o.ctx.loc, "http_flood needs rate or parallel")
                    .hint("parallel='100' (connections) or rate='1000' (requests per second)"),
            )
        }
    };
    let cfg = Rc::new(flood::Config {
        origin: client::Origin::new(to.ip(), url.port, &url.host),
        path: url.path,
        mode,
        keepalive: o.bool_or("keepalive", true)?,
        count: o.count()?,
        duration: o.duration("duration")?.map(Duration::from_nanos),
        stats: Rc::default(),
    });
    let set = |c: &mut flood::Config, ip| c.origin.addr.set_ip(ip);
    Ok(factory("http_flood", false, move |sim, m| {
        to.spawn(sim, m, timing, "http_flood", &cfg, set, flood::run);
    }))
}

/// `http_load`: fetches `url` at `rate` per second or `parallel` at once.
pub(super) fn build_load(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let (url, to) = url_target(o)?;
    let mode = match (o.params.get("rate"), o.params.get("parallel")) {
        (Some(_), Some(p)) => {
            return Err(ParamError::new(p.loc, "give rate or parallel, not both"))
        }
        (Some(r), None) => {
            let rate = r
                .value
                .trim()
                .trim_end_matches("/s")
                .parse::<f64>()
                .ok()
                .filter(|v| *v > 0.0 && v.is_finite())
                .ok_or_else(|| {
                    ParamError::new(
                        r.loc,
                        format!("rate '{}' is not fetches per second", r.value),
                    )
                    .hint("rate='10'")
                })?;
            load::Mode::Rate(rate)
        }
        (None, Some(_)) => load::Mode::Parallel(o.u64_or("parallel", 1)?.clamp(1, 10_000) as u32),
        (None, None) => load::Mode::Parallel(1),
    };
    let cfg = Rc::new(load::Config {
        origin: client::Origin::new(to.ip(), url.port, &url.host),
        path: url.path,
        mode,
        fetches: o
            .params
            .get("fetches")
            .map(|_| o.u64_or("fetches", 0))
            .transpose()?,
        stats: Rc::default(),
        offered_rate: Rc::default(),
    });
    let set = |c: &mut load::Config, ip| c.origin.addr.set_ip(ip);
    Ok(factory("http_load", false, move |sim, m| {
        to.spawn(sim, m, timing, "http_load", &cfg, set, load::run);
    }))
}
