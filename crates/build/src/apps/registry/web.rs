//! The web applications' options (crate `elvis-web`): `web_server` (its
//! model, workers and queue), `web_user` (whom it browses and how) and
//! `http_load` (its URL and rate or parallelism).

use super::{factory, AppFactory, Opts, ParamError, Target};
use crate::apps::timing::Timing;
use elvis_scenario::Param;
use elvis_sim::Host;
use elvis_web::{client, load, model::Model, server, user};
use std::net::Ipv4Addr;
use std::rc::Rc;

/// `web_server`: serves sized objects and a site drawn from `model`
/// (SURGE by default, or an Elvis-format directory relative to the NDL
/// file).
pub(super) fn build_server(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
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
    let cfg = Rc::new(cfg);
    Ok(factory("web_server", true, move |sim, m| {
        let cfg = cfg.clone();
        timing.spawn_daemon(sim, m, "web_server", move |h: Host| server::run(h, cfg));
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

/// `http_load`: fetches `url` at `rate` per second or `parallel` at once.
pub(super) fn build_load(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
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
