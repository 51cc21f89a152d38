//! `web-study`: Loukili et al., "Web server performance with CUBIC and
//! Compound TCP" (seed 004), rebuilt in elvis.
//!
//! The paper's test network (its Fig. 1): clients behind router R1, four
//! Linux routers in a chain, servers behind R4. Every NIC and switch runs
//! at 1 Gbit/s except R1's client-side NIC and switch S0 (100 Mbit/s), so
//! R1's NIC into S0 is the bottleneck; R1–R4 has a 0.3 ms RTT.
//!
//! ```text
//!  client(s) ───┐                                                ┌── server(s)  web_server
//!  stress    ───┤ S0 100 Mbit/s   S1 1G     S2 1G     S3 1G      ├── bt-server  web_server
//!  bt-client ───┼──────────── R1 ─────── R2 ─────── R3 ─────── R4 ┤ S4 1 Gbit/s
//!  mgen-sink ───┘   (R1's NIC:          50 µs each way            └── mgen-source
//!                    1000 frames)
//! ```
//!
//! Each run is one configuration ([`Config`]): a congestion scenario
//! (§3.2: UDP background from `mgen`, HTTP background from `http_load` on
//! the BT client against the BT server, HTTP stress from `http_load` on
//! the stress client against the server, all for 320 KB objects), the
//! servers' kinds (Apache: CUBIC; IIS: Compound TCP) and one browser
//! request (504, 320 or 160 KB, an `http_load` fetch) sent once the
//! loads have run for [`Timing::browser_at`].
//!
//! Measured per run (`Outcome`): the server delay of the browser's
//! request (the server's connection end, SYN to last acknowledgement:
//! what Wireshark at the server sees), the browser's fetch time, each
//! server's throughput with and without retransmissions (`tcp_senders`),
//! each load client's throughput (`http_load`'s `throughput_bps`) and its
//! share of the maximum allowed rate (`rate_share_percent`).
//!
//! `--seeds N` repeats every configuration with seeds 1 … N; the tables
//! (`tables.rs`) give the mean and the spread beside the paper's numbers
//! (`paper.rs`), and `plot.rs` draws the figures.
//!
//! # Gaps
//! - Fig. 1 is not in the text: the placement of the Mgen source (server
//!   side, so that the UDP flow crosses the bottleneck with the
//!   responses) and the switches between the routers are read from the
//!   prose (five switches, four routers, all traffic totalling 100
//!   Mbit/s at the 100 Mbit/s link).
//! - The hosts run elvis' TCP with only the congestion control changed;
//!   Windows' and Linux's other differences (minimum RTO, delayed ACKs,
//!   initial window, offloads) are not modelled (`docs/web-study.md`).

mod paper;
mod plot;
mod tables;

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

/// A web server kind: the paper's two, by their congestion control.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Apache 2.2 on Linux 2.6.31: CUBIC.
    Apache,
    /// IIS 7 on Windows Server 2008: Compound TCP.
    Iis,
}

impl Kind {
    /// Returns the NDL `congestion=` value.
    pub fn congestion(self) -> &'static str {
        match self {
            Kind::Apache => "cubic",
            Kind::Iis => "compound",
        }
    }

    /// Returns the paper's name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Apache => "Apache",
            Kind::Iis => "IIS",
        }
    }
}

/// A congestion scenario's offered loads, Mbit/s (§3.2 and §4.3).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Load {
    pub name: &'static str,
    /// UDP background, Mgen source to sink.
    pub udp: f64,
    /// HTTP background, BT client from BT server.
    pub bt: f64,
    /// HTTP stress, per server.
    pub stress: f64,
}

/// C1: 10 UDP + 40 BT + 50 stress.
pub const C1: Load = Load {
    name: "C1",
    udp: 10.0,
    bt: 40.0,
    stress: 50.0,
};
/// C2: 15 UDP + 60 BT + 25 stress.
pub const C2: Load = Load {
    name: "C2",
    udp: 15.0,
    bt: 60.0,
    stress: 25.0,
};
/// C3: 10 UDP + 30 BT + 60 stress.
pub const C3: Load = Load {
    name: "C3",
    udp: 10.0,
    bt: 30.0,
    stress: 60.0,
};
/// §4.3, competing servers: 10 UDP + 30 BT + 30 stress on each server.
pub const COMPETING: Load = Load {
    name: "C4",
    udp: 10.0,
    bt: 30.0,
    stress: 30.0,
};

/// The three experiment sets of §4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Set {
    /// §4.1: Server and BT Server of the same kind.
    Same,
    /// §4.2: of different kinds.
    Different,
    /// §4.3: two servers, each with its browser and stress client.
    Competing,
}

/// One configuration of the study.
#[derive(Clone, Debug)]
pub struct Config {
    pub set: Set,
    pub load: Load,
    /// The servers a browser requests from (one, or two when competing).
    pub servers: Vec<Kind>,
    pub bt: Kind,
    /// The browser's object, KB (1,000 bytes).
    pub size_kb: u32,
}

impl Config {
    /// Returns the configuration's id, e.g. `same/C1/Apache/504KB`.
    pub fn id(&self) -> String {
        let servers: Vec<&str> = self.servers.iter().map(|k| k.name()).collect();
        let set = match self.set {
            Set::Same => "same",
            Set::Different => "diff",
            Set::Competing => "comp",
        };
        format!(
            "{set}/{}/{}+BT{}/{}KB",
            self.load.name,
            servers.join("+"),
            self.bt.name(),
            self.size_kb
        )
    }
}

/// Every configuration of the paper: 18 of §4.1 (3 scenarios × 2 kinds ×
/// 3 sizes), 6 of §4.2 (504 KB), 3 of §4.3.
pub fn configurations() -> Vec<Config> {
    let mut out = Vec::new();
    for load in [C1, C2, C3] {
        for kind in [Kind::Apache, Kind::Iis] {
            for size_kb in [504, 320, 160] {
                out.push(Config {
                    set: Set::Same,
                    load,
                    servers: vec![kind],
                    bt: kind,
                    size_kb,
                });
            }
        }
    }
    for load in [C1, C2, C3] {
        for (server, bt) in [(Kind::Iis, Kind::Apache), (Kind::Apache, Kind::Iis)] {
            out.push(Config {
                set: Set::Different,
                load,
                servers: vec![server],
                bt,
                size_kb: 504,
            });
        }
    }
    for (s1, s2, bt) in [
        (Kind::Apache, Kind::Apache, Kind::Iis),
        (Kind::Iis, Kind::Iis, Kind::Apache),
        (Kind::Iis, Kind::Apache, Kind::Apache),
    ] {
        out.push(Config {
            set: Set::Competing,
            load: COMPETING,
            servers: vec![s1, s2],
            bt,
            size_kb: 504,
        });
    }
    out
}

/// When things happen in a run.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// How long the loads run, s (the UDP flow's duration; the HTTP
    /// loads make rate × this many fetches).
    pub load_s: f64,
    /// When the browser sends its request, s.
    pub browser_at: f64,
    /// TCP's initial retransmission timeout, ms: 3,000 on both of the
    /// testbed's systems (RFC 2988; Linux 2.6.31 and Windows Server 2008
    /// predate RFC 6298's 1 s, elvis' default). A lost SYN or SYN-ACK
    /// waits this long.
    pub initial_rto_ms: u64,
}

/// The size of every load fetch, bytes (§3.1: 320 KB).
const LOAD_OBJECT: u64 = 320_000;
/// The Mgen datagram, bytes (UDP payload): a full 1,500-byte frame.
const UDP_SIZE: u64 = 1_472;

/// Returns the machine names of server `i` and of its browser and stress
/// client (`server`, `client`, `stress` with one server).
fn names(cfg: &Config, i: usize) -> (String, String, String) {
    if cfg.servers.len() == 1 {
        return ("server".into(), "client".into(), "stress".into());
    }
    let n = i + 1;
    (
        format!("server{n}"),
        format!("client{n}"),
        format!("stress{n}"),
    )
}

/// Returns the NDL of one run.
pub fn ndl(cfg: &Config, seed: u64, t: Timing) -> String {
    let mut s = String::new();
    let until = t.load_s + 90.0;
    let _ = writeln!(
        s,
        "# {} (elvis-bench web-study, seed {seed})\n[Simulation seed='{seed}' until='{until}s']\n",
        cfg.id()
    );
    fabric(&mut s);
    let stress_rate = cfg.load.stress * 1e6 / (LOAD_OBJECT * 8) as f64;
    let bt_rate = cfg.load.bt * 1e6 / (LOAD_OBJECT * 8) as f64;
    let udp_rate = cfg.load.udp * 1e6 / (UDP_SIZE * 8) as f64;
    let fetches = |rate: f64| (rate * t.load_s).round() as u64;
    let jitter = "start='uniform(0s,100ms)'";
    for (i, kind) in cfg.servers.iter().enumerate() {
        let (server, client, stress) = names(cfg, i);
        host(
            &mut s,
            &server,
            "s4",
            &[format!(
                "web_server congestion='{}' max_workers='0'",
                kind.congestion()
            )],
        );
        host(
            &mut s,
            &client,
            "s0",
            &[format!(
                "http_load url='http://{server}/obj/{}KB' fetches='1' start='uniform({}s,{}s)'",
                cfg.size_kb,
                t.browser_at,
                t.browser_at + 0.1
            )],
        );
        host(
            &mut s,
            &stress,
            "s0",
            &[format!(
                "http_load url='http://{server}/obj/320KB' rate='{stress_rate}' fetches='{}' {jitter}",
                fetches(stress_rate)
            )],
        );
    }
    host(
        &mut s,
        "bt-server",
        "s4",
        &[format!(
            "web_server congestion='{}' max_workers='0'",
            cfg.bt.congestion()
        )],
    );
    host(
        &mut s,
        "bt-client",
        "s0",
        &[format!(
            "http_load url='http://bt-server/obj/320KB' rate='{bt_rate}' fetches='{}' {jitter}",
            fetches(bt_rate)
        )],
    );
    host(
        &mut s,
        "mgen-source",
        "s4",
        &[format!(
            "mgen to='mgen-sink' port='5000' size='{UDP_SIZE}' rate='{udp_rate}' duration='{}s' {jitter}",
            t.load_s
        )],
    );
    host(&mut s, "mgen-sink", "s0", &["mgen_sink port='5000'".into()]);
    s
}

/// Writes the networks and the routers of Fig. 1.
fn fabric(s: &mut String) {
    s.push_str("[Networks]\n");
    // S0: the client network; its ports, and R1's NIC onto it, hold 1,000
    // frames (Linux's txqueuelen on the routers).
    s.push_str(
        "\t[Network id='s0' type='switch' bandwidth='100Mbps' latency='5us' qdisc='droptail' limit='1000']\n\t\t[IP subnet='10.0.0.0/24']\n",
    );
    for k in 1..=3 {
        let _ = writeln!(
            s,
            "\t[Network id='s{k}' type='switch' bandwidth='1Gbps' latency='50us']\n\t\t[IP subnet='10.0.{k}.0/24']"
        );
    }
    s.push_str(
        "\t[Network id='s4' type='switch' bandwidth='1Gbps' latency='5us']\n\t\t[IP subnet='10.0.4.0/24']\n\n[Machines]\n",
    );
    for r in 1..=4u32 {
        let _ = writeln!(
            s,
            "\t[Machine name='r{r}' forward='yes']\n\t\t[Networks]\n\t\t\t[Network id='s{}' ip='10.0.{}.{}']\n\t\t\t[Network id='s{r}' ip='10.0.{r}.1']",
            r - 1,
            r - 1,
            if r == 1 { 1 } else { 2 }
        );
    }
}

/// Writes one host on network `net` with IPv4, UDP and TCP and `apps`
/// (each an application's name, a space, its options).
fn host(s: &mut String, name: &str, net: &str, apps: &[String]) {
    let _ = writeln!(
        s,
        "\t[Machine name='{name}']\n\t\t[Networks]\n\t\t\t[Network id='{net}']\n\t\t[Protocols]\n\t\t\t[Protocol name='IPv4']\n\t\t\t[Protocol name='UDP']\n\t\t\t[Protocol name='TCP']\n\t\t[Applications]"
    );
    for a in apps {
        let (app, options) = a.split_once(' ').unwrap_or((a, ""));
        let _ = writeln!(s, "\t\t\t[Application name='{app}' {options}]");
    }
}

/// What one run measured.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Outcome {
    pub id: String,
    pub seed: u64,
    /// Per server (1 or 2): the browser request's server delay (server's
    /// connection end: opening to last acknowledgement), s.
    pub delay_s: Vec<f64>,
    /// Per server: the browser's fetch time (connect to last byte), s.
    pub fetch_s: Vec<f64>,
    /// Per server: throughput with retransmissions, Mbit/s.
    pub server_mbps: Vec<f64>,
    /// Per server: throughput without retransmissions (NRT), Mbit/s.
    pub server_nrt_mbps: Vec<f64>,
    /// Per server: retransmitted share of its bytes, %.
    pub server_retx_percent: Vec<f64>,
    /// Per stress client: client throughput, Mbit/s, and its share of
    /// the maximum allowed (stress) rate, %.
    pub stress_mbps: Vec<f64>,
    pub stress_share: Vec<f64>,
    /// The BT client's throughput, Mbit/s, and share, %.
    pub bt_mbps: f64,
    pub bt_share: f64,
    /// The BT server's throughput with and without retransmissions.
    pub bt_server_mbps: f64,
    pub bt_server_nrt_mbps: f64,
    /// UDP datagrams lost, %.
    pub udp_loss_percent: f64,
    /// Drops at R1's NIC into S0.
    pub bottleneck_drops: u64,
    pub events: u64,
    pub wall_s: f64,
    /// Every application finished (the loads' fetches all done).
    pub ok: bool,
}

/// Runs one configuration with one seed.
///
/// Long because it reads every measure of the run (per server, the
/// background and the UDP load) into its outcome in one place.
///
/// # Panics
/// If the generated NDL does not parse or build (a bug here).
pub fn run_one(cfg: &Config, seed: u64, t: Timing) -> Outcome {
    let t0 = Instant::now();
    let text = ndl(cfg, seed, t);
    let scenario = elvis_ndl::parse(&text, "web-study.ndl").expect("generated NDL parses");
    let mut built = elvis_build::build(&scenario, None).expect("generated scenario builds");
    built.sim.set_tcp_config(elvis_sim::stack::tcp::TcpConfig {
        initial_rto: std::time::Duration::from_millis(t.initial_rto_ms),
        ..Default::default()
    });
    let report = built.sim.run();
    let metric = |machine: &str, name: &str| -> f64 {
        report
            .metrics
            .iter()
            .find(|m| m.machine == machine && m.name == name)
            .map_or(0.0, |m| m.value)
    };
    let sender = |machine: &str| report.tcp_senders.iter().find(|s| s.machine == machine);
    let mut o = Outcome {
        id: cfg.id(),
        seed,
        events: report.events,
        ok: report.success(),
        ..Default::default()
    };
    for i in 0..cfg.servers.len() {
        let (server, client, stress) = names(cfg, i);
        let client_ip = report
            .tcp_connections
            .iter()
            .find(|c| c.machine == client)
            .map(|c| c.local.split(':').next().unwrap_or("").to_string() + ":")
            .unwrap_or_default();
        // The server's end of the browser's connection: its remote is the
        // browser's address (the browser opens one connection).
        let delay = report
            .tcp_connections
            .iter()
            .find(|c| {
                c.machine == server && !client_ip.is_empty() && c.remote.starts_with(&client_ip)
            })
            .map_or(f64::NAN, |c| {
                c.last_ack_ns.saturating_sub(c.opened_ns) as f64 / 1e9
            });
        o.delay_s.push(delay);
        o.fetch_s.push(metric(&client, "fetch_p50_ns") / 1e9);
        let (mbps, nrt, retx) = sender(&server).map_or((0.0, 0.0, 0.0), |s| {
            (
                s.throughput_bps as f64 / 1e6,
                s.nrt_throughput_bps as f64 / 1e6,
                s.retransmitted_bytes as f64 * 100.0 / s.bytes_sent.max(1) as f64,
            )
        });
        o.server_mbps.push(mbps);
        o.server_nrt_mbps.push(nrt);
        o.server_retx_percent.push(retx);
        o.stress_mbps.push(metric(&stress, "throughput_bps") / 1e6);
        o.stress_share.push(metric(&stress, "rate_share_percent"));
    }
    o.bt_mbps = metric("bt-client", "throughput_bps") / 1e6;
    o.bt_share = metric("bt-client", "rate_share_percent");
    if let Some(s) = sender("bt-server") {
        o.bt_server_mbps = s.throughput_bps as f64 / 1e6;
        o.bt_server_nrt_mbps = s.nrt_throughput_bps as f64 / 1e6;
    }
    let received = metric("mgen-sink", "received");
    let sent = metric("mgen-source", "sent");
    o.udp_loss_percent = if sent > 0.0 {
        (sent - received) * 100.0 / sent
    } else {
        0.0
    };
    o.bottleneck_drops = report
        .queues
        .iter()
        .filter(|q| q.network == "s0" && q.machine == "r1" && q.direction == "nic")
        .map(|q| q.dropped)
        .sum();
    o.wall_s = t0.elapsed().as_secs_f64();
    o
}

/// Runs every configuration whose id contains `filter` with seeds 1 …
/// `seeds`, writes the tables, CSVs and figures into `out`, prints the
/// summary; returns whether every run finished.
///
/// # Errors
/// A file that cannot be written.
pub fn run(seeds: u64, filter: Option<&str>, t: Timing, out: &Path) -> std::io::Result<bool> {
    std::fs::create_dir_all(out)?;
    let configs: Vec<Config> = configurations()
        .into_iter()
        .filter(|c| filter.is_none_or(|f| c.id().contains(f)))
        .collect();
    let mut outcomes = Vec::new();
    for cfg in &configs {
        for seed in 1..=seeds.max(1) {
            let o = run_one(cfg, seed, t);
            eprintln!(
                "{:<40} seed {seed}: delay {:?} s, server {:?} Mbit/s, shares stress {:?} bt {:.1} % ({:.1} s wall{})",
                o.id,
                o.delay_s.iter().map(|d| (d * 1000.0).round() / 1000.0).collect::<Vec<_>>(),
                o.server_mbps.iter().map(|d| d.round()).collect::<Vec<_>>(),
                o.stress_share.iter().map(|d| (d * 10.0).round() / 10.0).collect::<Vec<_>>(),
                o.bt_share,
                o.wall_s,
                if o.ok { "" } else { ", NOT FINISHED" }
            );
            outcomes.push(o);
        }
    }
    if let Some(cfg) = configs.first() {
        std::fs::write(out.join("example.ndl"), ndl(cfg, 1, t))?;
    }
    let summary = tables::write(&configs, &outcomes, seeds, t, out)?;
    plot::write(&outcomes, out).map_err(std::io::Error::other)?;
    print!("{summary}");
    Ok(outcomes.iter().all(|o| o.ok))
}
