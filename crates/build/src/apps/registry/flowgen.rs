//! `flowgen`'s and `flowgen_sink`'s options (`elvis_apps::flowgen`).

use super::{factory, AppFactory, Opts, ParamError};
use crate::apps::timing::Timing;
use elvis_apps::flowgen::{self, cdf::Cdf, Config, Pattern, Transport, PORT};
use elvis_sim::Host;
use std::net::Ipv4Addr;
use std::rc::Rc;

pub(super) const FLOWGEN: &[&str] = &[
    "workload",
    "cdf",
    "load",
    "pattern",
    "peers",
    "to",
    "trace",
    "port",
    "flows",
    "duration",
    "link_rate",
    "congestion",
    "transport",
    "cnp_interval",
];
pub(super) const SINK: &[&str] = &["port", "congestion", "transport", "cnp_interval"];

/// Keys that make no sense with a trace (it gives every flow).
const NOT_WITH_TRACE: &[&str] = &["workload", "cdf", "load", "pattern", "peers", "to", "flows"];

impl Opts<'_> {
    /// A file named by option `p`, relative to the NDL file's folder.
    fn read_file(&self, p: &elvis_scenario::Param) -> Result<(String, String), ParamError> {
        let path = match self.ctx.base_dir {
            Some(base) => std::path::Path::new(base).join(p.value.trim()),
            None => std::path::PathBuf::from(p.value.trim()),
        };
        let shown = path.display().to_string();
        std::fs::read_to_string(&path)
            .map(|t| (shown.clone(), t))
            .map_err(|e| ParamError::new(p.loc, format!("{}: cannot read {shown}: {e}", p.key)))
    }

    /// `load`: a fraction (`0.5`) or a percentage (`50%`), 0 < load < 1.
    fn load(&self) -> Result<f64, ParamError> {
        let p = self.required("load")?;
        let v = p.value.trim();
        let n = match v.strip_suffix('%') {
            Some(pc) => pc.trim().parse::<f64>().map(|x| x / 100.0),
            None => v.parse::<f64>(),
        };
        match n {
            Ok(l) if l > 0.0 && l < 1.0 => Ok(l),
            Ok(_) => Err(ParamError::new(
                p.loc,
                format!("load '{v}' must be more than 0 and less than 1"),
            )
            .hint("a fraction of the access link, load='0.5' or load='50%'; at 1 or more the queues grow without bound")),
            Err(_) => Err(ParamError::new(p.loc, format!("load '{v}' is not a number"))
                .hint("load='0.5' or load='50%'")),
        }
    }

    /// `peers`: machine names, addresses or group names (`host` for
    /// `host-0`, `host-1`, …), comma-separated.
    fn peers(&self) -> Result<Vec<Ipv4Addr>, ParamError> {
        let p = self.required("peers")?;
        let mut out = Vec::new();
        for name in p.value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if let Some(ip) = (self.ctx.resolve)(name) {
                out.push(ip);
                continue;
            }
            let before = out.len();
            for i in 0.. {
                match (self.ctx.resolve)(&format!("{name}-{i}")) {
                    Some(ip) => out.push(ip),
                    None => break,
                }
            }
            if out.len() == before {
                return Err(ParamError::new(
                    p.loc,
                    format!("unknown machine or group '{name}' in peers"),
                )
                .hint("peers='host' (every host-N), or names and addresses, comma-separated"));
            }
        }
        if out.len() < 2 {
            return Err(ParamError::new(
                p.loc,
                "peers must name at least two machines",
            ));
        }
        Ok(out)
    }

    /// The flow sizes: `workload=` or `cdf=` (web search by default).
    fn sizes(&self) -> Result<Cdf, ParamError> {
        match (self.params.get("workload"), self.params.get("cdf")) {
            (Some(_), Some(c)) => Err(ParamError::new(
                c.loc,
                "workload and cdf both give the flow sizes",
            )
            .hint("keep one")),
            (_, Some(c)) => {
                let (shown, text) = self.read_file(c)?;
                Cdf::parse_csv(&text).map_err(|(line, e)| {
                    ParamError::new(c.loc, format!("cdf: {shown}:{line}: {e}"))
                        .hint("lines of size,cumulative-probability: sizes in bytes, probabilities rising to 1")
                })
            }
            _ => {
                let w = self.choice("workload", &["websearch", "datamining"], "websearch")?;
                Ok(Cdf::builtin(w).unwrap_or_else(Cdf::websearch))
            }
        }
    }

    /// The pattern, or the trace.
    fn pattern(&self) -> Result<Pattern, ParamError> {
        if let Some(t) = self.params.get("trace") {
            if let Some(p) = NOT_WITH_TRACE.iter().find_map(|k| self.params.get(k)) {
                return Err(ParamError::new(
                    p.loc,
                    format!(
                        "{} does not apply to a trace, which gives every flow",
                        p.key
                    ),
                ));
            }
            let (shown, text) = self.read_file(t)?;
            let rows = flowgen::parse_trace(&text, self.ctx.resolve).map_err(|(line, e)| {
                ParamError::new(t.loc, format!("trace: {shown}:{line}: {e}"))
                    .hint("lines of start,src,dst,bytes: start in seconds, machine names or addresses, bytes")
            })?;
            return Ok(Pattern::Trace(rows));
        }
        let kind = self.choice("pattern", &["random", "permutation", "incast"], "random")?;
        if kind != "incast" {
            if let Some(p) = self.params.get("to") {
                return Err(ParamError::new(
                    p.loc,
                    "to applies to pattern='incast' only",
                ));
            }
        }
        let peers = self.peers()?;
        Ok(match kind {
            "permutation" => Pattern::Permutation(peers),
            "incast" => {
                let to = self.host("to")?;
                if !peers.iter().any(|&p| p != to) {
                    return Err(ParamError::new(
                        self.loc("peers"),
                        "an incast needs senders besides `to`",
                    ));
                }
                Pattern::Incast { to, peers }
            }
            _ => Pattern::Random(peers),
        })
    }
}

/// `flowgen`: a workload of TCP (or DCQCN) flows, and a sink for other
/// hosts' flows.
pub(super) fn build(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let pattern = o.pattern()?;
    let trace = matches!(pattern, Pattern::Trace(_));
    let (sizes, load) = if trace {
        (Cdf::websearch(), 0.0)
    } else {
        (o.sizes()?, o.load()?)
    };
    let flows = o.count_of("flows")?;
    let duration = o.duration("duration")?;
    if !trace && flows.is_none() && duration.is_none() {
        return Err(
            ParamError::new(o.ctx.loc, "flowgen needs flows= or duration=")
                .hint("duration='100ms' (arrivals for that long) or flows='1000' (per host)"),
        );
    }
    let link_rate = o.bit_rate("link_rate")?.map(|r| r as u64);
    let cfg = Rc::new(Config {
        port: o.port_or("port", PORT)?,
        pattern,
        sizes: Rc::new(sizes),
        load,
        link_rate,
        flows,
        duration,
        congestion: o.congestion()?,
        transport: o.flow_transport()?,
        shared: Default::default(),
    });
    Ok(factory("flowgen", false, move |sim, m| {
        let cfg = cfg.clone();
        timing.spawn(sim, m, "flowgen", move |h: Host| flowgen::run(h, cfg));
    }))
}

/// `flowgen_sink`: only the sink, on `port`.
pub(super) fn build_sink(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let port = o.port_or("port", PORT)?;
    let congestion = o.congestion()?;
    let transport = o.flow_transport()?;
    Ok(factory("flowgen_sink", true, move |sim, m| {
        timing.spawn_daemon(sim, m, "flowgen_sink", move |h: Host| async move {
            if let Transport::Dcqcn { cnp_interval } = transport {
                h.spawn(flowgen::dcqcn::sink(h, port, cnp_interval))?;
            }
            flowgen::sink(h, port, congestion).await;
            Ok(())
        });
    }))
}

impl Opts<'_> {
    /// `transport`: `tcp` (the default) or `dcqcn`, with DCQCN's
    /// `cnp_interval` (50 µs by default, the paper's N); `congestion`
    /// and `cnp_interval` each belong to one of them.
    fn flow_transport(&self) -> Result<Transport, ParamError> {
        let t = self.choice("transport", &["tcp", "dcqcn"], "tcp")?;
        if t == "tcp" {
            if let Some(p) = self.params.get("cnp_interval") {
                return Err(ParamError::new(
                    p.loc,
                    "cnp_interval applies to transport='dcqcn' only",
                ));
            }
            return Ok(Transport::Tcp);
        }
        if let Some(p) = self.params.get("congestion") {
            return Err(ParamError::new(
                p.loc,
                "congestion applies to TCP flows; DCQCN flows have DCQCN's rate control",
            )
            .hint("drop congestion=, or drop transport='dcqcn'"));
        }
        let cnp_interval = self.duration("cnp_interval")?.unwrap_or(50_000);
        Ok(Transport::Dcqcn { cnp_interval })
    }
}

impl Opts<'_> {
    /// An optional positive whole number `key`.
    fn count_of(&self, key: &str) -> Result<Option<u64>, ParamError> {
        match self.params.get(key) {
            None => Ok(None),
            Some(p) => match self.u64_or(key, 0)? {
                0 => Err(ParamError::new(p.loc, format!("{key} must be at least 1"))),
                n => Ok(Some(n)),
            },
        }
    }
}
