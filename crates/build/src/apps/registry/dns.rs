//! The DNS applications' options: `dns_server` (its zone from `[Record]`
//! blocks and/or an RFC 1035 master file) and `dns_resolver` (its root
//! hints and retry settings).

use super::{factory, AppFactory, Opts, ParamError};
use crate::apps::timing::Timing;
use elvis_dns::proto::rr::Name;
use elvis_dns::{master, resolver, server, Zone};
use elvis_scenario::{Block, Param};
use elvis_sim::{AppError, AppResult, Host, MachineId, Simulation};
use std::future::Future;
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::time::Duration;

/// Where an application sends: an address known when building, or a
/// domain name its machine looks up through DNS when it starts.
#[derive(Clone, Debug)]
pub(super) enum Target {
    Ip(Ipv4Addr),
    Name(Rc<str>),
}

impl Target {
    /// Returns a name target for option `p`.
    ///
    /// # Errors
    /// Not a valid domain name.
    pub(super) fn name(p: &Param) -> Result<Target, ParamError> {
        elvis_dns::stub::qualify(&p.value, None)
            .map_err(|e| ParamError::new(p.loc, e.to_string()))?;
        Ok(Target::Name(p.value.trim().into()))
    }

    /// Returns the address, or 0.0.0.0 for a name (set when it resolves).
    pub(super) fn ip(&self) -> Ipv4Addr {
        match self {
            Target::Ip(ip) => *ip,
            Target::Name(_) => Ipv4Addr::UNSPECIFIED,
        }
    }

    /// Spawns `run` on machine `m` with `cfg`; for a name, the
    /// application first resolves it (through the machine's DNS servers)
    /// and `set`s the address in its own copy of `cfg`. A name that does
    /// not resolve fails the application, naming it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn spawn<C, Fut>(
        &self,
        sim: &mut Simulation,
        m: MachineId,
        timing: Timing,
        app: &'static str,
        cfg: &Rc<C>,
        set: fn(&mut C, Ipv4Addr),
        run: fn(Host, Rc<C>) -> Fut,
    ) where
        C: Clone + 'static,
        Fut: Future<Output = AppResult> + 'static,
    {
        let cfg = cfg.clone();
        match self {
            Target::Ip(_) => timing.spawn(sim, m, app, move |h: Host| run(h, cfg)),
            Target::Name(name) => {
                let name = name.clone();
                timing.spawn(sim, m, app, move |h: Host| async move {
                    let ip = elvis_dns::resolve(&h, &name)
                        .await
                        .map_err(|e| AppError::new(format!("to='{name}': {e}")))?;
                    let mut c = (*cfg).clone();
                    set(&mut c, ip);
                    run(h, Rc::new(c)).await
                });
            }
        }
    }
}

/// `dns_server`: serves the zone `zone`, its records from the
/// application's `[Record name type value ttl]` blocks and from the
/// master file `file` (relative to the NDL file).
pub(super) fn build_server(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let z = o.required("zone")?;
    let origin =
        zone_name(&z.value).map_err(|e| ParamError::new(z.loc, e).hint("zone='example.com'"))?;
    let mut records = Vec::new();
    if let Some(f) = o.params.get("file") {
        let path = match o.ctx.base_dir {
            Some(dir) => std::path::Path::new(dir).join(&f.value),
            None => std::path::PathBuf::from(&f.value),
        };
        let text = std::fs::read_to_string(&path).map_err(|e| {
            ParamError::new(f.loc, format!("cannot read zone file '{}': {e}", f.value))
                .hint("file= is relative to the NDL file")
        })?;
        records = master::parse(&text, &origin, &f.value).map_err(|e| {
            ParamError::new(f.loc, format!("zone file error: {e}"))
                .hint("RFC 1035 master-file lines read NAME [TTL] [IN] TYPE RDATA")
        })?;
    }
    for b in o.ctx.children {
        records.push(record(b, &origin)?);
    }
    let zone = Zone::new(origin, records).map_err(|e| {
        ParamError::new(z.loc, e).hint("a zone holds names at or below its origin, one SOA")
    })?;
    let cfg = Rc::new(server::Config::new(vec![zone]));
    Ok(factory("dns_server", true, move |sim, m| {
        let cfg = cfg.clone();
        timing.spawn_daemon(sim, m, "dns_server", move |h: Host| server::run(h, cfg));
    }))
}

/// Parses a zone's name: absolute, with or without the final dot (`.`
/// alone is the root).
pub(crate) fn zone_name(v: &str) -> Result<Name, String> {
    let v = v.trim();
    if v == "." {
        return Ok(Name::root());
    }
    let mut n = Name::from_ascii(v).map_err(|e| format!("'{v}' is not a zone name: {e}"))?;
    n.set_fqdn(true);
    Ok(n)
}

/// One `[Record name='www' type='A' value='10.1.0.3' ttl='300']` block.
fn record(b: &Block, origin: &Name) -> Result<elvis_dns::proto::rr::Record, ParamError> {
    if !b.keyword.eq_ignore_ascii_case("record") {
        return Err(ParamError::new(
            b.loc,
            format!("dns_server holds [Record] blocks, not [{}]", b.keyword),
        )
        .hint("[Record name='www' type='A' value='10.1.0.3' ttl='300']"));
    }
    if let Some(p) = b
        .params
        .iter()
        .find(|p| !["name", "type", "value", "ttl"].contains(&p.key.as_str()))
    {
        return Err(
            ParamError::new(p.loc, format!("[Record] has no option '{}'", p.key))
                .hint("its options are: name, type, value, ttl"),
        );
    }
    let need = |k: &str| {
        b.params.get(k).ok_or_else(|| {
            ParamError::new(b.loc, format!("[Record] needs {k}='…'"))
                .hint("[Record name='www' type='A' value='10.1.0.3' ttl='300']")
        })
    };
    let name = b.params.get("name").map_or("@", |p| p.value.as_str());
    let ty = need("type")?;
    master::type_of(&ty.value).map_err(|e| ParamError::new(ty.loc, e).hint("type='A'"))?;
    let value = need("value")?;
    let ttl = match b.params.get("ttl") {
        Some(t) => {
            master::ttl_of(&t.value).map_err(|e| ParamError::new(t.loc, e).hint("ttl='300'"))?
        }
        None => 300,
    };
    // TXT values are one string as written; the others are master-file
    // RDATA.
    let rdata = if ty.value.eq_ignore_ascii_case("txt") {
        format!(
            "\"{}\"",
            value.value.replace('\\', "\\\\").replace('"', "\\\"")
        )
    } else {
        value.value.clone()
    };
    let loc = b.params.get("name").map_or(b.loc, |p| p.loc);
    if name.contains(char::is_whitespace) || name.is_empty() {
        return Err(ParamError::new(
            loc,
            format!("'{name}' is not a record name"),
        ));
    }
    master::record_of(&format!("{name} {ttl} IN {} {rdata}", ty.value), origin).map_err(|e| {
        ParamError::new(value.loc, e)
            .hint("value= is the record's data as a master file writes it ('10 mail' for MX)")
    })
}

/// `dns_resolver`: a recursive caching resolver starting from `roots`.
pub(super) fn build_resolver(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let r = o.required("roots")?;
    let mut roots = Vec::new();
    for name in r.value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        roots.push((o.ctx.resolve)(name).ok_or_else(|| {
            ParamError::new(r.loc, format!("unknown machine '{name}' in roots"))
                .hint("roots='root-server' or roots='10.0.0.1,10.0.0.2'")
        })?);
    }
    if roots.is_empty() {
        return Err(ParamError::new(r.loc, "roots lists no server").hint("roots='root-server'"));
    }
    let mut cfg = resolver::Config::new(roots);
    cfg.timeout = o.duration_or("timeout", cfg.timeout)?;
    if cfg.timeout == Duration::ZERO {
        return Err(
            ParamError::new(o.loc("timeout"), "timeout must be above 0").hint("timeout='800ms'")
        );
    }
    let attempts = o.u64_or("attempts", u64::from(cfg.attempts))?;
    cfg.attempts = u8::try_from(attempts)
        .ok()
        .filter(|&a| a > 0 && a <= 10)
        .ok_or_else(|| {
            ParamError::new(o.loc("attempts"), "attempts must be 1 to 10").hint("attempts='2'")
        })?;
    cfg.cache_size = o.u64_or("cache_size", cfg.cache_size as u64)? as usize;
    let cfg = Rc::new(cfg);
    Ok(factory("dns_resolver", true, move |sim, m| {
        let cfg = cfg.clone();
        timing.spawn_daemon(sim, m, "dns_resolver", move |h: Host| resolver::run(h, cfg));
    }))
}
