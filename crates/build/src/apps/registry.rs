//! From NDL `[Application name='…' key='…']` to a runnable application.
//!
//! [`build`] checks an application's options once per machine group and
//! returns an [`AppFactory`] that spawns the application on each machine of
//! the group, sharing one parsed configuration (a million senders share one
//! `Rc<Config>` and one message buffer).
//!
//! Every application also accepts `ip` (the machine's own address, used by
//! the builder) and `start` / `stop` (when it runs, `timing.rs`).

use super::timing::Timing;
mod dcqcn;
mod dns;
mod flowgen;
mod traffic;
mod web;
use dns::Target;
use elvis_apps::{bulk, capture, forward, ping, ping_pong, send_message, tcp_echo, traceroute};
use elvis_scenario::{Loc, Params};
use elvis_sim::{Host, MachineId, Message, Simulation};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::rc::Rc;
use std::time::Duration;

/// A bad application option, with where it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    pub message: String,
    pub hint: Option<String>,
    pub loc: Loc,
}

impl ParamError {
    pub(crate) fn new(loc: Loc, message: impl Into<String>) -> Self {
        ParamError {
            message: message.into(),
            hint: None,
            loc,
        }
    }
    pub(crate) fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// What [`build`] may ask of the scenario being built.
pub struct BuildCtx<'a> {
    /// Resolves a machine name (or dotted quad) to an address.
    pub resolve: &'a dyn Fn(&str) -> Option<Ipv4Addr>,
    /// Location of the `[Application]` block, for errors about missing
    /// options.
    pub loc: Loc,
    /// Blocks nested in the `[Application]` (a `dns_server`'s
    /// `[Record]`s).
    pub children: &'a [elvis_scenario::Block],
    /// The NDL file's folder, for files an application names.
    pub base_dir: Option<&'a str>,
    /// Whether the machines have a resolver configuration: a `to=` name
    /// that is not an address is then looked up through DNS when the
    /// application starts (`send_message`, `ping`, `traceroute`,
    /// `bulk_send`, `tcp_echo_client`, `web_user`, `http_load`,
    /// `video_client`, `http_flood`), not in the simulator's table.
    pub dns: bool,
}

type SpawnFn = dyn Fn(&mut Simulation, MachineId);

/// A checked application, ready to be spawned on machines.
#[derive(Clone)]
pub struct AppFactory {
    /// The application's canonical name.
    pub name: &'static str,
    /// Whether it runs forever (a server), so waiting at the end is fine.
    pub daemon: bool,
    /// Whether it only reacts to traffic (a receiver): the builder starts
    /// these before the applications that send, at the same instant.
    pub passive: bool,
    spawn: Rc<SpawnFn>,
}

impl AppFactory {
    /// Starts the application on machine `m`.
    pub fn spawn(&self, sim: &mut Simulation, m: MachineId) {
        (self.spawn)(sim, m)
    }
}

/// The applications [`build`] knows, with their options.
pub const APPS: &[(&str, &[&str])] = &[
    (
        "send_message",
        &[
            "message",
            "to",
            "port",
            "message_count",
            "local_port",
            "size",
            "interval",
            "transport",
            "congestion",
        ],
    ),
    (
        "capture",
        &[
            "message",
            "port",
            "message_count",
            "counter",
            "transport",
            "type",
            "factory",
        ],
    ),
    ("forward", &["local_port", "to", "remote_port"]),
    (
        "ping_pong",
        &["starter", "to", "local_port", "remote_port", "count"],
    ),
    ("ping", &["to", "count", "interval", "timeout", "size"]),
    (
        "traceroute",
        &["to", "max_hops", "queries", "timeout", "size"],
    ),
    (
        "bulk_send",
        &["to", "port", "bytes", "payload", "congestion", "sndbuf"],
    ),
    ("bulk_receive", &["port", "bytes", "rcvbuf", "congestion"]),
    ("tcp_echo_server", &["port", "congestion"]),
    ("dhcp_server", crate::dhcp::SERVER_OPTIONS),
    (
        "tcp_echo_client",
        &["to", "port", "message", "message_count", "congestion"],
    ),
    ("mgen", traffic::MGEN),
    ("mgen_sink", traffic::MGEN_SINK),
    ("udp_flood", traffic::UDP_FLOOD),
    ("syn_flood", traffic::SYN_FLOOD),
    ("dns_server", &["zone", "file"]),
    (
        "dns_resolver",
        &["roots", "timeout", "attempts", "cache_size"],
    ),
    ("web_server", web::SERVER),
    ("video_server", web::VIDEO_SERVER),
    ("video_client", web::VIDEO_CLIENT),
    ("http_flood", web::HTTP_FLOOD),
    (
        "web_user",
        &["to", "port", "think", "pages", "connections", "follow"],
    ),
    ("http_load", &["url", "rate", "parallel", "fetches"]),
    ("dcqcn_send", dcqcn::SEND),
    ("dcqcn_receive", dcqcn::RECEIVE),
    ("flowgen", flowgen::FLOWGEN),
    ("flowgen_sink", flowgen::SINK),
];

/// Options every application accepts besides its own: `name` (the
/// block's), `ip` (the machine's address, for the builder), and `start` /
/// `stop` ([`Timing`]).
const COMMON: &[&str] = &["name", "ip", "start", "stop"];

/// Checks `params` for application `name` and returns its factory.
///
/// # Errors
/// Unknown application or option, a missing required option, or a value
/// that does not parse; each with the location of the offending text.
pub fn build(name: &str, params: &Params, ctx: &BuildCtx<'_>) -> Result<AppFactory, ParamError> {
    let lname = name.to_ascii_lowercase();
    let Some((canon, keys)) = APPS.iter().find(|(n, _)| *n == lname) else {
        let names: Vec<&str> = APPS.iter().map(|(n, _)| *n).collect();
        return Err(
            ParamError::new(ctx.loc, format!("unknown application '{name}'"))
                .hint(format!("known applications: {}", names.join(", "))),
        );
    };
    for p in params.iter() {
        if !COMMON.contains(&p.key.as_str()) && !keys.contains(&p.key.as_str()) {
            return Err(ParamError::new(
                p.loc,
                format!("application '{canon}' has no option '{}'", p.key),
            )
            .hint(format!(
                "its options are: ip, start, stop, {}",
                keys.join(", ")
            )));
        }
    }
    let timing = Timing::parse(params)?;
    let o = Opts { params, ctx };
    match *canon {
        "send_message" => build_send_message(&o, timing),
        "capture" => build_capture(&o, timing),
        "forward" => build_forward(&o, timing),
        "ping_pong" => build_ping_pong(&o, timing),
        "ping" => build_ping(&o, timing),
        "traceroute" => build_traceroute(&o, timing),
        "bulk_send" => build_bulk_send(&o, timing),
        "bulk_receive" => build_bulk_receive(&o, timing),
        "tcp_echo_server" => build_tcp_echo_server(&o, timing),
        "tcp_echo_client" => build_tcp_echo_client(&o, timing),
        "dhcp_server" => build_dhcp_server(&o),
        "mgen" => traffic::build_mgen(&o, timing),
        "mgen_sink" => traffic::build_mgen_sink(&o, timing),
        "udp_flood" => traffic::build_flood(&o, timing, false),
        "syn_flood" => traffic::build_flood(&o, timing, true),
        "dns_server" => dns::build_server(&o, timing),
        "dns_resolver" => dns::build_resolver(&o, timing),
        "web_server" => web::build_server(&o, timing, false),
        "video_server" => web::build_server(&o, timing, true),
        "video_client" => web::build_video_client(&o, timing),
        "http_flood" => web::build_flood(&o, timing),
        "web_user" => web::build_user(&o, timing),
        "http_load" => web::build_load(&o, timing),
        "dcqcn_send" => dcqcn::build_send(&o, timing),
        "dcqcn_receive" => dcqcn::build_receive(&o, timing),
        "flowgen" => flowgen::build(&o, timing),
        "flowgen_sink" => flowgen::build_sink(&o, timing),
        _ => unreachable!("every name in APPS is handled"),
    }
}

/// `send_message`: one message (or `message_count` copies) to `to`:`port`
/// over UDP (default) or TCP.
fn build_send_message(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let params = o.params;
    let udp = o.transport()? == send_message::Transport::Udp;
    if let (true, Some(m)) = (udp, params.get("message")) {
        if m.value.len() as u64 > MAX_DATAGRAM_PAYLOAD {
            return Err(ParamError::new(
                m.loc,
                format!(
                    "the message is {} bytes; a UDP datagram carries 0 to {MAX_DATAGRAM_PAYLOAD} \
                     (65535 less 20 of IPv4 and 8 of UDP header)",
                    m.value.len()
                ),
            )
            .hint("use transport='tcp' for longer messages"));
        }
    }
    let message = match (params.get("size"), params.get("message")) {
        (Some(_), _) if udp => Message::zeros(o.datagram_size_or("size", 0, "UDP")?),
        (Some(size), _) => Message::zeros(o.size(size)?),
        (None, Some(m)) => Message::from_bytes(bytes::Bytes::from(m.value.clone().into_bytes())),
        (None, None) => Message::from_static(b"Hello!"),
    };
    let cfg = Rc::new(send_message::Config {
        message,
        to: SocketAddrV4::new(o.target("to")?.ip(), o.port("port")?),
        count: o.u64_or("message_count", 1)?,
        local_port: o.port_or("local_port", 0)?,
        interval: match params.get("interval") {
            None => None,
            Some(_) => Some(o.duration_or("interval", Duration::ZERO)?),
        },
        transport: o.transport()?,
        congestion: o.congestion()?,
    });
    let to = o.target("to")?;
    let set = |c: &mut send_message::Config, ip| c.to.set_ip(ip);
    Ok(factory("send_message", false, move |sim, m| {
        to.spawn(sim, m, timing, "send_message", &cfg, set, send_message::run);
    }))
}

/// `capture`: receives `message_count` messages on `port`, optionally
/// checking them against `message` and counting them in `counter`.
fn build_capture(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let params = o.params;
    capture_elvis_options(o)?;
    let cfg = Rc::new(capture::Config {
        port: o.port("port")?,
        count: o.u64_or("message_count", 1)?,
        expect: params
            .value("message")
            .map(|m| Message::from_bytes(bytes::Bytes::from(m.as_bytes().to_vec()))),
        counter: params.value("counter").map(str::to_string),
        transport: o.transport()?,
    });
    Ok(factory("capture", false, move |sim, m| {
        let cfg = cfg.clone();
        timing.spawn(sim, m, "capture", move |h: Host| capture::run(h, cfg));
    }))
}

/// Checks Elvis' capture options. `type='count'` needs `message_count`
/// and `type='message'` a `message` (Elvis asserts both); `factory` names
/// a group of captures that the run waits for together, which every
/// capture here is (each waits for its own `message_count`, and the run
/// goes on until all have), so it only has to be a name, and not be
/// mixed with `counter` (a shared total, another thing).
fn capture_elvis_options(o: &Opts<'_>) -> Result<(), ParamError> {
    let params = o.params;
    if let Some(t) = params.get("type") {
        let needs = match t.value.trim().to_ascii_lowercase().as_str() {
            "count" => "message_count",
            "message" => "message",
            _ => {
                return Err(ParamError::new(
                    t.loc,
                    format!("capture type '{}' is neither count nor message", t.value),
                )
                .hint("type='count' (with message_count) or type='message' (with message)"));
            }
        };
        if params.get(needs).is_none() {
            return Err(ParamError::new(
                t.loc,
                format!("capture type='{}' needs a `{needs}`", t.value.trim()),
            )
            .hint(format!("add {needs}='…' to the application")));
        }
    }
    if let Some(f) = params.get("factory") {
        if f.value.trim().is_empty() {
            return Err(ParamError::new(f.loc, "factory is empty").hint("factory='factory1'"));
        }
        if let Some(c) = params.get("counter") {
            return Err(ParamError::new(
                c.loc,
                "counter (one total shared by several captures) and factory (captures that \
                 each wait for their own count) do not go together",
            )
            .hint("keep one"));
        }
    }
    Ok(())
}

/// `forward`: a daemon that relays every datagram received on
/// `local_port` to `to`:`remote_port`.
fn build_forward(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let cfg = Rc::new(forward::Config {
        local_port: o.port("local_port")?,
        to: SocketAddrV4::new(o.host("to")?, o.port("remote_port")?),
    });
    Ok(factory("forward", true, move |sim, m| {
        let cfg = cfg.clone();
        timing.spawn_daemon(sim, m, "forward", move |h: Host| forward::run(h, cfg));
    }))
}

/// `ping_pong`: a one-byte counter bounced with `to` down to 0 from
/// `count`; passive unless it is the `starter`.
fn build_ping_pong(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let cfg = Rc::new(ping_pong::Config {
        starter: o.bool_or("starter", false)?,
        local_port: o.port("local_port")?,
        remote: SocketAddrV4::new(o.host("to")?, o.port("remote_port")?),
        count: u8::try_from(o.u64_or("count", 255)?).map_err(|_| {
            ParamError::new(
                o.loc("count"),
                "count must be 0 to 255: ping_pong carries its counter in one byte, as in Elvis",
            )
        })?,
    });
    let passive = !cfg.starter;
    let mut f = factory("ping_pong", false, move |sim, m| {
        let cfg = cfg.clone();
        timing.spawn(sim, m, "ping_pong", move |h: Host| ping_pong::run(h, cfg));
    });
    f.passive = passive;
    Ok(f)
}

/// `ping`: `count` ICMP echo requests to `to`.
fn build_ping(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let to = o.target("to")?;
    let cfg = Rc::new(ping::Config {
        to: to.ip(),
        count: u16::try_from(o.u64_or("count", 4)?).map_err(|_| {
            ParamError::new(
                o.loc("count"),
                "count must be 0 to 65535: an ICMP echo sequence number is 16 bits",
            )
        })?,
        interval: o.duration_or("interval", Duration::from_secs(1))?,
        timeout: o.duration_or("timeout", Duration::from_secs(1))?,
        size: o.datagram_size_or("size", 56, "ICMP")? as usize,
    });
    let set = |c: &mut ping::Config, ip| c.to = ip;
    Ok(factory("ping", false, move |sim, m| {
        to.spawn(sim, m, timing, "ping", &cfg, set, ping::run);
    }))
}

/// `traceroute`: probes the path to `to` hop by hop, up to `max_hops`.
fn build_traceroute(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let why = |key: &str| match key {
        "max_hops" => "a TTL is one byte and 0 reaches no router",
        _ => "each hop is probed at least once and at most 10 times",
    };
    let small = |key: &str, default: u64, max: u64| -> Result<u8, ParamError> {
        let v = o.u64_or(key, default)?;
        if v == 0 || v > max {
            return Err(ParamError::new(
                o.loc(key),
                format!("{key} must be between 1 and {max}: {}", why(key)),
            ));
        }
        Ok(v as u8)
    };
    let to = o.target("to")?;
    let cfg = Rc::new(traceroute::Config {
        to: to.ip(),
        max_hops: small("max_hops", 30, 255)?,
        queries: small("queries", 1, 10)?,
        timeout: o.duration_or("timeout", Duration::from_secs(1))?,
        size: o.datagram_size_or("size", 32, "ICMP")? as usize,
    });
    let set = |c: &mut traceroute::Config, ip| c.to = ip;
    Ok(factory("traceroute", false, move |sim, m| {
        to.spawn(sim, m, timing, "traceroute", &cfg, set, traceroute::run);
    }))
}

/// `bulk_send`: `bytes` over one TCP connection to `to`:`port`, the
/// payload virtual (the default) or real.
fn build_bulk_send(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let real = match o.params.get("payload") {
        None => false,
        Some(p) => match p.value.to_ascii_lowercase().as_str() {
            "virtual" => false,
            "real" => true,
            _ => {
                return Err(ParamError::new(
                    p.loc,
                    format!("payload '{}' is neither virtual nor real", p.value),
                ))
            }
        },
    };
    let to = o.target("to")?;
    let cfg = Rc::new(bulk::SendConfig {
        to: SocketAddrV4::new(to.ip(), o.port("port")?),
        bytes: o.size(o.required("bytes")?)?,
        real,
        congestion: o.congestion()?,
        sndbuf: o.buffer("sndbuf")?,
    });
    let set = |c: &mut bulk::SendConfig, ip| c.to.set_ip(ip);
    Ok(factory("bulk_send", false, move |sim, m| {
        to.spawn(sim, m, timing, "bulk_send", &cfg, set, bulk::send);
    }))
}

/// `bulk_receive`: accepts one TCP connection on `port` and reads `bytes`.
fn build_bulk_receive(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let cfg = Rc::new(bulk::ReceiveConfig {
        port: o.port("port")?,
        bytes: o.size(o.required("bytes")?)?,
        rcvbuf: o.buffer("rcvbuf")?,
        congestion: o.congestion()?,
    });
    Ok(factory("bulk_receive", false, move |sim, m| {
        let cfg = cfg.clone();
        timing.spawn(sim, m, "bulk_receive", move |h: Host| bulk::receive(h, cfg));
    }))
}

/// `tcp_echo_server`: a daemon echoing every byte back on each TCP
/// connection it accepts on `port`.
fn build_tcp_echo_server(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let port = o.port("port")?;
    let congestion = o.congestion()?;
    Ok(factory("tcp_echo_server", true, move |sim, m| {
        timing.spawn_daemon(sim, m, "tcp_echo_server", move |h: Host| {
            tcp_echo::server(h, port, congestion)
        });
    }))
}

/// `tcp_echo_client`: sends `message` `message_count` times to an echo
/// server at `to`:`port`.
fn build_tcp_echo_client(o: &Opts<'_>, timing: Timing) -> Result<AppFactory, ParamError> {
    let to = o.target("to")?;
    let cfg = Rc::new(tcp_echo::ClientConfig {
        to: SocketAddrV4::new(to.ip(), o.port("port")?),
        message: Message::from_bytes(bytes::Bytes::from(
            o.params
                .value("message")
                .unwrap_or("Hello!")
                .as_bytes()
                .to_vec(),
        )),
        count: o.u64_or("message_count", 1)?,
        congestion: o.congestion()?,
    });
    let set = |c: &mut tcp_echo::ClientConfig, ip| c.to.set_ip(ip);
    Ok(factory("tcp_echo_client", false, move |sim, m| {
        to.spawn(
            sim,
            m,
            timing,
            "tcp_echo_client",
            &cfg,
            set,
            tcp_echo::client,
        );
    }))
}

fn factory(
    name: &'static str,
    daemon: bool,
    f: impl Fn(&mut Simulation, MachineId) + 'static,
) -> AppFactory {
    AppFactory {
        name,
        daemon,
        passive: matches!(
            name,
            "capture"
                | "forward"
                | "bulk_receive"
                | "tcp_echo_server"
                | "dns_server"
                | "dns_resolver"
                | "web_server"
                | "video_server"
                | "mgen_sink"
                | "dcqcn_receive"
                | "flowgen_sink"
        ),
        spawn: Rc::new(f),
    }
}

/// `dhcp_server`: a DHCP server in the machine's stack (not a task; see
/// `crate::dhcp`). It serves from time zero, so `start` and `stop` are
/// refused.
fn build_dhcp_server(o: &Opts<'_>) -> Result<AppFactory, ParamError> {
    for k in ["start", "stop"] {
        if let Some(p) = o.params.get(k) {
            return Err(ParamError::new(p.loc, format!("dhcp_server takes no {k}"))
                .hint("a DHCP server serves for the whole run"));
        }
    }
    let cfg = crate::dhcp::server_config(o.params, o.ctx.children, o.ctx.loc)?;
    Ok(factory("dhcp_server", true, move |sim, m| {
        // The machine exists: the builder made it before its applications.
        let _ = sim.add_dhcp_server(m, cfg.clone());
    }))
}

/// Typed access to options with located errors.
struct Opts<'a> {
    params: &'a Params,
    ctx: &'a BuildCtx<'a>,
}

impl Opts<'_> {
    fn loc(&self, key: &str) -> Loc {
        self.params.get(key).map_or(self.ctx.loc, |p| p.loc)
    }

    fn required(&self, key: &str) -> Result<&elvis_scenario::Param, ParamError> {
        self.params.get(key).ok_or_else(|| {
            ParamError::new(self.ctx.loc, format!("missing option '{key}'"))
                .hint(format!("add {key}='…'"))
        })
    }

    fn host(&self, key: &str) -> Result<Ipv4Addr, ParamError> {
        let p = self.required(key)?;
        (self.ctx.resolve)(&p.value).ok_or_else(|| {
            ParamError::new(p.loc, format!("unknown machine '{}'", p.value)).hint(
                "use a machine name (name, or name-N for counted machines) or an IPv4 address",
            )
        })
    }

    /// A destination: an address now, or (on a machine with a resolver)
    /// a name to look up through DNS when the application starts.
    fn target(&self, key: &str) -> Result<Target, ParamError> {
        let p = self.required(key)?;
        if self.ctx.dns
            && elvis_scenario::parse_ipv4(elvis_scenario::units::trim(&p.value)).is_err()
        {
            return Target::name(p);
        }
        self.host(key).map(Target::Ip)
    }

    fn port(&self, key: &str) -> Result<u16, ParamError> {
        let p = self.required(key)?;
        elvis_scenario::parse_port(&p.value).map_err(|e| ParamError::new(p.loc, e))
    }

    fn port_or(&self, key: &str, default: u16) -> Result<u16, ParamError> {
        match self.params.get(key) {
            None => Ok(default),
            Some(p) => elvis_scenario::parse_port(&p.value).map_err(|e| ParamError::new(p.loc, e)),
        }
    }

    fn u64_or(&self, key: &str, default: u64) -> Result<u64, ParamError> {
        match self.params.get(key) {
            None => Ok(default),
            Some(p) => p.value.trim().parse().map_err(|_| {
                ParamError::new(p.loc, format!("'{}' is not a whole number", p.value))
                    .hint(format!("{key}='10'"))
            }),
        }
    }

    fn bool_or(&self, key: &str, default: bool) -> Result<bool, ParamError> {
        match self.params.get(key) {
            None => Ok(default),
            Some(p) => match p.value.to_ascii_lowercase().as_str() {
                "true" | "yes" | "1" => Ok(true),
                "false" | "no" | "0" => Ok(false),
                _ => Err(ParamError::new(
                    p.loc,
                    format!("'{}' is not true or false", p.value),
                )),
            },
        }
    }

    fn duration_or(&self, key: &str, default: Duration) -> Result<Duration, ParamError> {
        match self.params.get(key) {
            None => Ok(default),
            Some(p) => elvis_scenario::parse_duration_ns(&p.value)
                .map(Duration::from_nanos)
                .map_err(|e| ParamError::new(p.loc, e)),
        }
    }

    fn transport(&self) -> Result<send_message::Transport, ParamError> {
        match self.params.get("transport") {
            None => Ok(send_message::Transport::Udp),
            Some(p) => match p.value.to_ascii_lowercase().as_str() {
                "udp" => Ok(send_message::Transport::Udp),
                "tcp" => Ok(send_message::Transport::Tcp),
                _ => Err(ParamError::new(
                    p.loc,
                    format!("transport '{}' is neither udp nor tcp", p.value),
                )
                .hint("transport='udp' or transport='tcp'")),
            },
        }
    }

    fn congestion(&self) -> Result<Option<elvis_sim::Congestion>, ParamError> {
        match self.params.get("congestion") {
            None => Ok(None),
            Some(p) => p.value.parse().map(Some).map_err(|_| {
                ParamError::new(p.loc, format!("unknown congestion control '{}'", p.value))
                    .hint("congestion='newreno', 'cubic', 'compound', 'dctcp' or 'bbr'")
            }),
        }
    }

    fn size(&self, p: &elvis_scenario::Param) -> Result<u64, ParamError> {
        elvis_scenario::parse_size_bytes(&p.value).map_err(|e| ParamError::new(p.loc, e))
    }

    /// A socket buffer size (`SO_SNDBUF`/`SO_RCVBUF`): 2 KiB to 1 GiB.
    fn buffer(&self, key: &str) -> Result<Option<usize>, ParamError> {
        let Some(p) = self.params.get(key) else {
            return Ok(None);
        };
        let b = self.size(p)?;
        if !(2048..=1 << 30).contains(&b) {
            return Err(ParamError::new(
                p.loc,
                format!("{key} '{}' is not between 2KiB and 1GiB", p.value),
            )
            .hint(format!("{key}='512KiB'")));
        }
        Ok(Some(b as usize))
    }

    fn size_or(&self, key: &str, default: u64) -> Result<u64, ParamError> {
        match self.params.get(key) {
            None => Ok(default),
            Some(p) => self.size(p),
        }
    }

    /// The payload size `key` of an ICMP or UDP datagram: at most
    /// [`MAX_DATAGRAM_PAYLOAD`] bytes.
    fn datagram_size_or(&self, key: &str, default: u64, what: &str) -> Result<u64, ParamError> {
        let n = self.size_or(key, default)?;
        if n > MAX_DATAGRAM_PAYLOAD {
            return Err(ParamError::new(
                self.loc(key),
                format!(
                    "{key} must be 0 to {MAX_DATAGRAM_PAYLOAD} bytes: an IPv4 datagram is at most \
                     65535 bytes, less 20 of IPv4 and 8 of {what} header (Linux: EMSGSIZE)"
                ),
            ));
        }
        Ok(n)
    }
}

/// The largest ICMP echo or UDP payload: 65,535 − 20 (IPv4) − 8 (ICMP or
/// UDP header).
pub const MAX_DATAGRAM_PAYLOAD: u64 = 65_507;
