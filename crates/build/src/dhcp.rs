//! DHCP in a scenario: clients (`[Protocol name='DHCP']`), relays
//! (`dhcp_relay=` on a router) and servers (the `dhcp_server`
//! application, `apps::registry`).
//!
//! A DHCP client's first interface is attached without an address (its
//! other interfaces, and a first interface with a pinned `ip`, get theirs
//! as usual). Its first DISCOVER goes out at the protocol's `start`
//! (`'2s'`, `'uniform(0s,10s)'`, `'exp(1s)'`, drawn per machine like an
//! application's), or after RFC 2131's random 1 to 10 s without one.

use crate::apps::timing::parse_start;
use crate::{err, BuildError};
use elvis_kernel::rng::{self, StreamKind};
use elvis_kernel::Time;
use elvis_scenario::MachineGroup;
use elvis_sim::Simulation;
use rand::RngCore;
use std::net::Ipv4Addr;

/// Returns true when machines of `g` configure themselves by DHCP.
pub(crate) fn is_client(g: &MachineGroup) -> bool {
    g.protocols
        .iter()
        .any(|p| p.name.eq_ignore_ascii_case("dhcp"))
}

/// Enables the DHCP roles of group `g`, whose first machine is `first`.
///
/// # Errors
/// A bad `start` on the DHCP protocol; a `dhcp_relay` on a machine that
/// does not forward, or one that is not a list of addresses.
pub(crate) fn group(sim: &mut Simulation, g: &MachineGroup, first: u32) -> Result<(), BuildError> {
    if let Some(spec) = g
        .protocols
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case("dhcp"))
    {
        if g.networks.is_empty() {
            return Err(err(
                spec.loc,
                format!("machine '{}' runs DHCP but has no network", g.name),
            )
            .with_hint("DHCP configures the machine's first [Network]"));
        }
        let start = match spec.params.get("start") {
            None => None,
            Some(p) => Some(parse_start(&p.value).map_err(|e| {
                err(p.loc, e).with_hint("start='2s', start='uniform(0s,10s)' or start='exp(1s)'")
            })?),
        };
        for p in spec.params.iter() {
            if p.key != "start" {
                return Err(
                    err(p.loc, format!("protocol DHCP has no option '{}'", p.key))
                        .with_hint("its option is start (when the first DISCOVER goes out)"),
                );
            }
        }
        let seed = sim.seed();
        for m in first..first + g.instances() {
            let at = start.map(|s| {
                let mut r = rng::stream(seed, StreamKind::Builder, u64::from(m));
                Time::from_nanos(s.draw(|| r.next_u64()))
            });
            sim.enable_dhcp_client(m, at)
                .map_err(|e| err(spec.loc, e.to_string()))?;
        }
    }
    if let Some(p) = &g.dhcp_relay {
        if !g.forward {
            return Err(err(p.loc, "dhcp_relay applies to routers only")
                .with_hint("add forward='yes': a relay agent runs on a router"));
        }
        let servers = p
            .value
            .split(',')
            .map(|s| s.trim().parse::<Ipv4Addr>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| {
                err(
                    p.loc,
                    format!("'{}' is not a list of IPv4 addresses", p.value),
                )
                .with_hint("dhcp_relay='10.0.0.2' or dhcp_relay='10.0.0.2,10.0.0.3'")
            })?;
        for m in first..first + g.instances() {
            sim.add_dhcp_relay(m, servers.clone())
                .map_err(|e| err(p.loc, e.to_string()))?;
        }
    }
    Ok(())
}

/// `dhcp_server`'s options and their meaning: see [`server_config`].
pub(crate) const SERVER_OPTIONS: &[&str] = &[
    "pool", "mask", "router", "dns", "domain", "lease", "t1", "t2",
];

/// Reads the `dhcp_server` application: `pool='10.1.0.100-10.1.0.250'`
/// with `mask` (a prefix length or dotted mask; default 24) and `router`,
/// or one `[Pool pool='…' mask='…' router='…']` child block per subnet;
/// `[Reservation mac='02:…' ip='…']` children; `lease` (default 1 h), `t1`,
/// `t2`, `dns` (a comma list), `domain`.
///
/// # Errors
/// A value that does not parse, a range that runs backwards or leaves its
/// subnet, no pool at all, T1 after T2 or T2 after the lease; each located.
pub(crate) fn server_config(
    params: &elvis_scenario::Params,
    children: &[elvis_scenario::Block],
    loc: elvis_scenario::Loc,
) -> Result<elvis_sim::stack::dhcp::server::Config, ParamError> {
    use elvis_sim::stack::dhcp::server::Config;
    let mut pools = Vec::new();
    if params.get("pool").is_some() {
        pools.push(pool(params)?);
    } else {
        for k in ["mask", "router"] {
            if let Some(p) = params.get(k) {
                return Err(ParamError::new(p.loc, format!("{k} belongs to a pool"))
                    .hint("add pool='10.1.0.100-10.1.0.250' beside it"));
            }
        }
    }
    let mut reservations = Vec::new();
    for c in children {
        match c.keyword.to_ascii_lowercase().as_str() {
            "pool" => {
                only(&c.params, &["pool", "mask", "router"])?;
                pools.push(pool(&c.params)?);
            }
            "reservation" => {
                only(&c.params, &["mac", "ip"])?;
                let mac = required(&c.params, "mac", c.loc)?;
                let ip = required(&c.params, "ip", c.loc)?;
                reservations.push((parse_mac(&mac.value, mac.loc)?, addr(ip)?));
            }
            other => {
                return Err(ParamError::new(c.loc, format!("dhcp_server has no [{other}] block"))
                    .hint("its blocks are [Pool pool='…' mask='…' router='…'] and [Reservation mac='…' ip='…']"));
            }
        }
    }
    if pools.is_empty() {
        return Err(ParamError::new(loc, "dhcp_server has no address pool")
            .hint("add pool='10.1.0.100-10.1.0.250' (or [Pool] blocks)"));
    }
    let (lease_s, t1_s, t2_s) = lease_times(params, loc)?;
    let dns = match params.get("dns") {
        None => Vec::new(),
        Some(p) => addr_list(p)?,
    };
    Ok(Config {
        pools,
        lease_s,
        t1_s,
        t2_s,
        dns,
        domain: params.get("domain").map(|p| p.value.trim().to_string()),
        reservations,
    })
}

use crate::apps::registry::ParamError;

/// Reads `lease`, `t1` and `t2` (whole seconds; T1 ≤ T2 ≤ lease).
#[allow(clippy::type_complexity)]
fn lease_times(
    params: &elvis_scenario::Params,
    loc: elvis_scenario::Loc,
) -> Result<(u32, Option<u32>, Option<u32>), ParamError> {
    let secs = |k: &str| -> Result<Option<u32>, ParamError> {
        let Some(p) = params.get(k) else {
            return Ok(None);
        };
        let ns =
            elvis_scenario::parse_duration_ns(&p.value).map_err(|e| ParamError::new(p.loc, e))?;
        if ns % 1_000_000_000 != 0 || ns == 0 || ns / 1_000_000_000 > u64::from(u32::MAX) {
            return Err(ParamError::new(
                p.loc,
                format!(
                    "{k}='{}' is not a whole number of seconds (1 s to 136 years)",
                    p.value
                ),
            )
            .hint(format!("{k}='3600s'")));
        }
        Ok(Some((ns / 1_000_000_000) as u32))
    };
    let lease_s = secs("lease")?.unwrap_or(3600);
    let (t1_s, t2_s) = (secs("t1")?, secs("t2")?);
    let t1 = t1_s.unwrap_or(lease_s / 2);
    let t2 = t2_s.unwrap_or((u64::from(lease_s) * 7 / 8) as u32);
    if t1 > t2 || t2 > lease_s {
        let at = params.get("t1").or(params.get("t2")).map_or(loc, |p| p.loc);
        return Err(ParamError::new(
            at,
            format!("T1 ({t1} s) ≤ T2 ({t2} s) ≤ lease ({lease_s} s) does not hold"),
        )
        .hint("RFC 2131 §4.4.5: T1 comes before T2, T2 before the lease ends"));
    }
    Ok((lease_s, t1_s, t2_s))
}

fn only(params: &elvis_scenario::Params, keys: &[&str]) -> Result<(), ParamError> {
    match params.iter().find(|p| !keys.contains(&p.key.as_str())) {
        Some(p) => Err(
            ParamError::new(p.loc, format!("unknown option '{}'", p.key))
                .hint(format!("the options here are: {}", keys.join(", "))),
        ),
        None => Ok(()),
    }
}

fn required<'p>(
    params: &'p elvis_scenario::Params,
    key: &str,
    loc: elvis_scenario::Loc,
) -> Result<&'p elvis_scenario::Param, ParamError> {
    params.get(key).ok_or_else(|| {
        ParamError::new(loc, format!("missing option '{key}'")).hint(format!("add {key}='…'"))
    })
}

fn addr(p: &elvis_scenario::Param) -> Result<Ipv4Addr, ParamError> {
    p.value.trim().parse().map_err(|_| {
        ParamError::new(p.loc, format!("'{}' is not an IPv4 address", p.value))
            .hint("write it as a.b.c.d")
    })
}

fn addr_list(p: &elvis_scenario::Param) -> Result<Vec<Ipv4Addr>, ParamError> {
    p.value
        .split(',')
        .map(|s| s.trim().parse::<Ipv4Addr>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| {
            ParamError::new(
                p.loc,
                format!("'{}' is not a list of IPv4 addresses", p.value),
            )
            .hint("dns='10.1.0.2' or dns='10.1.0.2,10.1.0.3'")
        })
}

/// Reads `pool`, `mask` and `router` into a pool.
fn pool(
    params: &elvis_scenario::Params,
) -> Result<elvis_sim::stack::dhcp::server::Pool, ParamError> {
    let p = params
        .get("pool")
        .ok_or_else(|| ParamError::new(elvis_scenario::Loc::default(), "missing option 'pool'"))?;
    let (a, b) = p.value.split_once('-').ok_or_else(|| {
        ParamError::new(p.loc, format!("'{}' is not a range", p.value))
            .hint("pool='10.1.0.100-10.1.0.250'")
    })?;
    let bad = || {
        ParamError::new(
            p.loc,
            format!("'{}' is not a range of IPv4 addresses", p.value),
        )
        .hint("pool='10.1.0.100-10.1.0.250'")
    };
    let first: Ipv4Addr = a.trim().parse().map_err(|_| bad())?;
    let last: Ipv4Addr = b.trim().parse().map_err(|_| bad())?;
    if u32::from(last) < u32::from(first) {
        return Err(ParamError::new(
            p.loc,
            format!("pool '{}' runs backwards", p.value),
        ));
    }
    let prefix = match params.get("mask") {
        None => 24,
        Some(m) => {
            let v = m.value.trim().trim_start_matches('/');
            match (v.parse::<u8>(), v.parse::<Ipv4Addr>()) {
                (Ok(len), _) if len <= 32 => len,
                (_, Ok(mask))
                    if u32::from(mask).leading_ones() + u32::from(mask).trailing_zeros() == 32 =>
                {
                    u32::from(mask).leading_ones() as u8
                }
                _ => {
                    return Err(
                        ParamError::new(m.loc, format!("'{}' is not a netmask", m.value))
                            .hint("mask='24' or mask='255.255.255.0'"),
                    )
                }
            }
        }
    };
    let net = elvis_sim::stack::route::mask(prefix);
    if u32::from(first) & net != u32::from(last) & net {
        return Err(ParamError::new(
            p.loc,
            format!("pool '{}' is not inside one /{prefix} subnet", p.value),
        )
        .hint("give the subnet's prefix length with mask='…'"));
    }
    let router = match params.get("router") {
        None => None,
        Some(r) => Some(addr(r)?),
    };
    Ok(elvis_sim::stack::dhcp::server::Pool {
        first,
        last,
        prefix,
        router,
    })
}

/// Parses `02:00:00:00:00:01`.
fn parse_mac(v: &str, loc: elvis_scenario::Loc) -> Result<[u8; 6], ParamError> {
    let parts: Vec<&str> = v.trim().split([':', '-']).collect();
    let bad = || {
        ParamError::new(loc, format!("'{v}' is not a MAC address")).hint("mac='02:01:00:00:00:05'")
    };
    if parts.len() != 6 {
        return Err(bad());
    }
    let mut mac = [0u8; 6];
    for (b, p) in mac.iter_mut().zip(parts) {
        *b = u8::from_str_radix(p, 16).map_err(|_| bad())?;
    }
    Ok(mac)
}
