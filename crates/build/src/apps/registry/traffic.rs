//! The traffic generators' and attackers' options: `mgen`, `mgen_sink`,
//! `udp_flood` and `syn_flood` (`elvis_apps::mgen`, `elvis_apps::flood`).

use super::{factory, AppFactory, Opts, ParamError, MAX_DATAGRAM_PAYLOAD};
use crate::apps::timing::Timing;
use elvis_apps::{flood, mgen};
use elvis_sim::Host;
use std::net::SocketAddrV4;
use std::rc::Rc;

pub(super) const MGEN: &[&str] = &[
    "to",
    "port",
    "pattern",
    "rate",
    "size",
    "flow",
    "count",
    "duration",
    "burst_interval",
    "burst_duration",
    "burst_spacing",
    "burst_length",
];
pub(super) const MGEN_SINK: &[&str] = &["port"];
pub(super) const UDP_FLOOD: &[&str] = &["to", "port", "rate", "size", "spoof", "count", "duration"];
pub(super) const SYN_FLOOD: &[&str] = &["to", "port", "rate", "spoof", "count", "duration"];

impl Opts<'_> {
    /// A rate in messages per second: positive, finite, at most 10^9.
    fn rate(&self) -> Result<f64, ParamError> {
        let p = self.required("rate")?;
        match p.value.trim().parse::<f64>() {
            Ok(r) if r.is_finite() && r > 0.0 && r <= 1e9 => Ok(r),
            _ => Err(ParamError::new(
                p.loc,
                format!("rate '{}' is not a number of messages per second", p.value),
            )
            .hint("rate='100' (more than 0, at most 1e9)")),
        }
    }

    /// An optional positive count.
    pub(super) fn count(&self) -> Result<Option<u64>, ParamError> {
        match self.params.get("count") {
            None => Ok(None),
            Some(_) => Ok(Some(self.u64_or("count", 0)?)),
        }
    }

    /// An optional duration, ns.
    pub(super) fn duration(&self, key: &str) -> Result<Option<u64>, ParamError> {
        match self.params.get(key) {
            None => Ok(None),
            Some(_) => Ok(Some(
                self.duration_or(key, Default::default())?.as_nanos() as u64
            )),
        }
    }

    /// `spoof='a.b.c.d/n'`.
    fn spoof(&self) -> Result<Option<flood::Prefix>, ParamError> {
        let Some(p) = self.params.get("spoof") else {
            return Ok(None);
        };
        flood::Prefix::parse(&p.value)
            .map(Some)
            .map_err(|e| ParamError::new(p.loc, e).hint("spoof='10.9.0.0/16'"))
    }

    /// One of `choices` for option `key` (case-insensitive).
    pub(super) fn choice(
        &self,
        key: &str,
        choices: &[&'static str],
        default: &'static str,
    ) -> Result<&'static str, ParamError> {
        let Some(p) = self.params.get(key) else {
            return Ok(default);
        };
        let v = p.value.trim().to_ascii_lowercase();
        choices.iter().find(|c| **c == v).copied().ok_or_else(|| {
            ParamError::new(
                p.loc,
                format!("{key} '{}' is not one of {}", p.value, choices.join(", ")),
            )
            .hint(format!("{key}='{default}'"))
        })
    }
}

/// `mgen`: a UDP flow in MGEN's periodic, Poisson or burst pattern.
pub(super) fn build_mgen(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let pattern = match o.choice("pattern", &["periodic", "poisson", "burst"], "periodic")? {
        "periodic" => mgen::Pattern::Periodic,
        "poisson" => mgen::Pattern::Poisson,
        _ => mgen::Pattern::Burst {
            interval: o
                .duration("burst_interval")?
                .unwrap_or(1_000_000_000)
                .max(1),
            spacing: match o.choice("burst_spacing", &["random", "regular"], "random")? {
                "regular" => mgen::Spacing::Regular,
                _ => mgen::Spacing::Random,
            },
            duration: o.duration("burst_duration")?.unwrap_or(100_000_000),
            length: match o.choice("burst_length", &["fixed", "exp"], "fixed")? {
                "exp" => mgen::Length::Exp,
                _ => mgen::Length::Fixed,
            },
        },
    };
    if !matches!(pattern, mgen::Pattern::Burst { .. }) {
        for k in [
            "burst_interval",
            "burst_duration",
            "burst_spacing",
            "burst_length",
        ] {
            if let Some(p) = o.params.get(k) {
                return Err(ParamError::new(
                    p.loc,
                    format!("{k} applies to pattern='burst' only"),
                ));
            }
        }
    }
    let size = o.datagram_size_or("size", 512, "UDP")?;
    if size < mgen::HEADER_LEN as u64 {
        return Err(ParamError::new(
            o.loc("size"),
            format!(
                "size must be at least {} bytes: the MGEN header (sequence number, send time)",
                mgen::HEADER_LEN
            ),
        ));
    }
    let to = o.target("to")?;
    let cfg = Rc::new(mgen::Config {
        to: SocketAddrV4::new(to.ip(), o.port("port")?),
        pattern,
        rate: o.rate()?,
        size: size as usize,
        flow: u32::try_from(o.u64_or("flow", 1)?).map_err(|_| {
            ParamError::new(o.loc("flow"), "flow must fit in 32 bits (MGEN's flow id)")
        })?,
        count: o.count()?,
        duration: o.duration("duration")?,
    });
    let set = |c: &mut mgen::Config, ip| c.to.set_ip(ip);
    Ok(factory("mgen", false, move |sim, m| {
        to.spawn(sim, m, timing, "mgen", &cfg, set, mgen::run);
    }))
}

/// `mgen_sink`: receives MGEN flows on `port` (a daemon).
pub(super) fn build_mgen_sink(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let port = o.port("port")?;
    Ok(factory("mgen_sink", true, move |sim, m| {
        timing.spawn_daemon(sim, m, "mgen_sink", move |h: Host| mgen::sink(h, port));
    }))
}

/// `udp_flood` and `syn_flood`: packets at `rate` to `to`:`port`.
pub(super) fn build_flood(
    o: &Opts<'_>,
    timing: Timing,
    syn: bool,
) -> Result<AppFactory, ParamError> {
    let size = if syn {
        0
    } else {
        o.datagram_size_or("size", 512, "UDP")?
            .min(MAX_DATAGRAM_PAYLOAD) as usize
    };
    let to = o.target("to")?;
    let cfg = Rc::new(flood::Config {
        to: SocketAddrV4::new(to.ip(), o.port("port")?),
        rate: o.rate()?,
        size,
        spoof: o.spoof()?,
        count: o.count()?,
        duration: o.duration("duration")?,
    });
    let set = |c: &mut flood::Config, ip| c.to.set_ip(ip);
    let name = if syn { "syn_flood" } else { "udp_flood" };
    Ok(factory(name, false, move |sim, m| {
        if syn {
            to.spawn(sim, m, timing, "syn_flood", &cfg, set, flood::syn_flood);
        } else {
            to.spawn(sim, m, timing, "udp_flood", &cfg, set, flood::udp_flood);
        }
    }))
}
