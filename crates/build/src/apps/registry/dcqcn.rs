//! DCQCN's options: `dcqcn_send` and `dcqcn_receive`
//! (`elvis_apps::dcqcn`).

use super::{factory, AppFactory, Opts, ParamError, MAX_DATAGRAM_PAYLOAD};
use crate::apps::timing::Timing;
use elvis_apps::dcqcn::{self, Params, ReceiveConfig, SendConfig, ROCE_PORT};
use elvis_sim::Host;
use std::net::SocketAddrV4;
use std::rc::Rc;

pub(super) const SEND: &[&str] = &[
    "to",
    "port",
    "size",
    "bytes",
    "line_rate",
    "min_rate",
    "rai",
    "rhai",
    "dscp",
];
pub(super) const RECEIVE: &[&str] = &["port", "cnp_interval", "measure_from"];

impl Opts<'_> {
    /// A rate in bit/s (`40Gbps`), finite and positive.
    pub(super) fn bit_rate(&self, key: &str) -> Result<Option<f64>, ParamError> {
        let Some(p) = self.params.get(key) else {
            return Ok(None);
        };
        match elvis_scenario::parse_bandwidth(&p.value) {
            Ok(Some(r)) => Ok(Some(r as f64)),
            Ok(None) => Err(ParamError::new(p.loc, format!("{key} must be finite"))
                .hint(format!("{key}='40Gbps'"))),
            Err(e) => Err(ParamError::new(p.loc, e).hint(format!("{key}='40Gbps'"))),
        }
    }
}

/// `dcqcn_send`: a flow to `to`:`port` paced by DCQCN from `line_rate`.
pub(super) fn build_send(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let Some(line) = o.bit_rate("line_rate")? else {
        return Err(o.required("line_rate").unwrap_err());
    };
    let mut params = Params::paper(line);
    for (key, slot) in [
        ("min_rate", &mut params.min_rate),
        ("rai", &mut params.rai),
        ("rhai", &mut params.rhai),
    ] {
        if let Some(r) = o.bit_rate(key)? {
            *slot = r;
        }
    }
    if params.min_rate > line {
        let msg = format!("min_rate is above line_rate ({line} bit/s)");
        return Err(ParamError::new(o.loc("min_rate"), msg));
    }
    let size = o
        .datagram_size_or("size", 1000, "UDP")?
        .min(MAX_DATAGRAM_PAYLOAD) as usize;
    if size < 9 {
        return Err(
            ParamError::new(o.loc("size"), "size must be at least 9 bytes")
                .hint("the first 9 bytes hold the packet's kind and sequence number"),
        );
    }
    let bytes = match o.params.get("bytes") {
        None => None,
        Some(_) => Some(o.size_or("bytes", 0)?),
    };
    let dscp = o.u64_or("dscp", 0)?;
    if dscp > 63 {
        let msg = format!("DSCP {dscp} is outside 0 to 63 (a 6-bit field of the IPv4 header)");
        return Err(ParamError::new(o.loc("dscp"), msg).hint("dscp='26'"));
    }
    let to = o.target("to")?;
    let cfg = Rc::new(SendConfig {
        dscp: dscp as u8,
        to: SocketAddrV4::new(to.ip(), o.port_or("port", ROCE_PORT)?),
        size,
        bytes,
        params,
    });
    let set = |c: &mut SendConfig, ip| c.to.set_ip(ip);
    Ok(factory("dcqcn_send", false, move |sim, m| {
        to.spawn(sim, m, timing, "dcqcn_send", &cfg, set, dcqcn::send);
    }))
}

/// `dcqcn_receive`: the notification point on `port`.
pub(super) fn build_receive(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let cfg = Rc::new(ReceiveConfig {
        port: o.port_or("port", ROCE_PORT)?,
        cnp_interval: o.duration("cnp_interval")?.unwrap_or(50_000),
        measure_from: o.duration("measure_from")?.unwrap_or(0),
    });
    Ok(factory("dcqcn_receive", true, move |sim, m| {
        let cfg = cfg.clone();
        timing.spawn_daemon(sim, m, "dcqcn_receive", move |h: Host| {
            dcqcn::receive(h, cfg)
        });
    }))
}
