//! `elvis-bench`: the benchmark harness.
//!
//! Each scenario runs in its own process so that wall time and peak RSS are
//! those of the whole process (parse + build + run + exit), as in the Elvis
//! paper's measurements:
//!
//! ```text
//! elvis-bench low-bandwidth --n 1000000        # one measurement, JSON line
//! elvis-bench sweep low-bandwidth 1000 10000   # child process per N, table
//! ```
//!
//! Scenarios:
//! - `low-bandwidth` (paper §V.A.1): N senders each send one UDP message to
//!   one capture machine that expects all N. Built from the same NDL text
//!   as Elvis' `basic-N.ndl`.
//! - `high-bandwidth` (paper §V.A.2): each of N senders sends M messages
//!   (default 1000) at once; the capture machine expects N·M.
//! - `instantiation`: N machines with an IPv4/UDP stack are created and
//!   their application started (binds a socket, returns); compared with
//!   spawning `/bin/true` processes in the same harness.
//! - `engine`: a chain of H forwarding machines joined by links; P packets
//!   traverse it; reports events/s.
//! - `router-chain-sweep`: the router chain of seed 002 (Figs. 12–15):
//!   ping RTT and TCP goodput across 1 … 1000 routers against closed
//!   forms (`chain_sweep.rs`).
//! - `dns-lookups`: stub lookups of Zipf-distributed names through caching
//!   resolvers and a root / TLD / authoritative hierarchy (`dns.rs`).
//! - `web`: browsing users (SURGE) on web servers for T simulated
//!   seconds; pages per wall second (`web.rs`).
//! - `web-study`: Loukili et al.'s CUBIC (Apache) against Compound TCP
//!   (IIS) web servers under congestion, Tables 2–4 and Figs. 2–14 beside
//!   the paper's numbers (`web_study.rs`, `docs/web-study.md`).
//! - `tcp-idle`: N idle established TCP connections; bytes per connection
//!   (`tcp_idle.rs`).
//! - `offload-memory`: N idle hosts with and without `offload='linux'`
//!   (K of them pinged): the memory the offloads add per
//!   host (`offload_memory.rs`).
//! - `socket-overhead`: the Elvis paper's Table I, each scenario with and
//!   without the socket API (`socket_overhead.rs`).
//! - `fattree`: the Days paper's FatTree baseline from a flow file written
//!   by `bench/fattree/nspy_fattree.py` (`fattree.rs`); `bench/fattree-vs-nspy K`
//!   runs it side by side with ns.py.
//! - `datacenter`: FatTree(k) of 10 Gbit/s links, every host sending the
//!   DCTCP paper's web-search flows at a load, under DCTCP (ECN at K =
//!   65) or CUBIC (`datacenter.rs`); `bench/datacenter` gives the FCTs.
//! - `topology`: builds a generated topology (FatTree(k)) with its routes,
//!   pings a few host pairs across it (`topology.rs`).
//! - `dhcp`: N hosts on LANs of 250 boot by DHCP through relays to 4
//!   servers, starts spread over 10 s (`dhcp_boot.rs`).
//! - `star`: N hosts each on its own link to one router, written out as
//!   NDL, each sending one datagram to a sink behind the router
//!   (`star.rs`); `sweep star N…` fits the growth exponent of wall time
//!   and peak RSS.
//! - `manet`: Broch et al.'s MANET scaled to N AODV nodes at the same
//!   density, F CBR flows, random waypoint (`manet.rs`).
//! - `wireless-plots`: the PNGs of `docs/wireless.md` from the chain and
//!   MANET sweeps' CSVs (`wireless_plots.rs`).
#![forbid(unsafe_code)]

mod chain_sweep;
mod datacenter;
mod dhcp_boot;
mod dns;
mod fattree;
mod manet;
mod offload_memory;
mod socket_overhead;
mod star;
mod tcp_idle;
mod topology;
mod web;
mod web_study;
mod wireless_plots;

use clap::{Parser, Subcommand};
use elvis_sim::{Host, NetworkConfig, Protocols, Simulation};
use serde::Serialize;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::process::Command as Process;
use std::time::{Duration, Instant};

/// mimalloc, not the system allocator: building a scenario makes millions
/// of small allocations, and with glibc's malloc those cost about a quarter
/// of a large star's build (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "elvis-bench", about = "elvis benchmark harness")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Clone)]
enum Cmd {
    /// N senders, one message each, one capture machine.
    LowBandwidth {
        #[arg(long)]
        n: u64,
    },
    /// N senders, M messages each, all at once.
    HighBandwidth {
        #[arg(long)]
        n: u64,
        #[arg(long, default_value_t = 1000)]
        messages: u64,
    },
    /// Create and start N machines; also spawn P /bin/true processes.
    Instantiation {
        #[arg(long)]
        n: u64,
        #[arg(long, default_value_t = 1000)]
        processes: u64,
    },
    /// P packets through a chain of H forwarding machines.
    Engine {
        #[arg(long, default_value_t = 100)]
        hops: u32,
        #[arg(long, default_value_t = 10000)]
        packets: u64,
    },
    /// P packets through a chain of H IPv4 routers (kernel forwarding,
    /// routes computed from the topology).
    RouterChain {
        #[arg(long, default_value_t = 100)]
        hops: u32,
        #[arg(long, default_value_t = 10000)]
        packets: u64,
    },
    /// Ping RTT and TCP goodput (512 KiB window) across 1, 2, 4, … MAX
    /// routers on 100 Mbit/s links, against their closed forms; prints a
    /// Markdown table.
    RouterChainSweep {
        #[arg(long, default_value_t = 1000)]
        max: u32,
        /// Receive window (SO_RCVBUF), bytes.
        #[arg(long, default_value_t = 524_288)]
        window: usize,
    },
    /// Builds the automatic routes of N hosts in LANs of 50 behind access
    /// routers, each access router dual-homed to two of sqrt(N/50) core
    /// routers on a backbone; times the route computation.
    Routes {
        #[arg(long)]
        n: u64,
    },
    /// One TCP bulk transfer between two machines on a point-to-point link.
    TcpBulk {
        /// Bytes to move.
        #[arg(long, default_value_t = 1_000_000_000)]
        bytes: u64,
        /// Link rate, bit/s.
        #[arg(long, default_value_t = 10_000_000_000)]
        bandwidth: u64,
        /// One-way latency, ns.
        #[arg(long, default_value_t = 10_000)]
        latency_ns: u64,
        /// Loss probability per frame.
        #[arg(long, default_value_t = 0.0)]
        loss: f64,
        /// Send real payload bytes instead of a virtual payload.
        #[arg(long)]
        real: bool,
        /// Give both hosts NIC offloads: TSO, GRO and receive interrupts
        /// coalesced for this many µs (Linux's defaults with 8).
        #[arg(long)]
        offload_usecs: Option<u32>,
        /// Frames each NIC holds (the simulator's default is 32; Linux's
        /// `txqueuelen` is 1000).
        #[arg(long)]
        txqueuelen: Option<u32>,
        /// newreno | cubic | compound | dctcp | bbr
        #[arg(long, default_value = "cubic",
              value_parser = ["newreno", "cubic", "compound", "dctcp", "bbr"])]
        congestion: String,
        /// rack (RACK-TLP, RFC 8985, the simulator's default, as Linux) | rfc6675
        #[arg(long, default_value = "rack", value_parser = ["rack", "rfc6675"])]
        loss_detection: String,
    },
    /// Stub lookups of Zipf(1.0)-distributed names through caching
    /// resolvers and a root / TLD / authoritative hierarchy (`dns.rs`).
    DnsLookups {
        #[arg(long, default_value_t = 1_000_000)]
        lookups: u64,
        #[arg(long, default_value_t = 100_000)]
        names: u32,
        #[arg(long, default_value_t = 100)]
        resolvers: u32,
        #[arg(long, default_value_t = 1_000)]
        clients: u32,
        #[arg(long, default_value_t = 100)]
        zones: u32,
        #[arg(long, default_value_t = 10)]
        servers: u32,
    },
    /// Browsing users (SURGE) on web servers for T simulated seconds
    /// (`web.rs`).
    Web {
        #[arg(long, default_value_t = 100_000)]
        users: u32,
        #[arg(long, default_value_t = 100)]
        servers: u32,
        #[arg(long, default_value_t = 60)]
        seconds: u64,
    },
    /// Loukili et al.'s study of CUBIC and Compound TCP web servers:
    /// every configuration × seeds; writes Tables 2–4, the data of Figs.
    /// 2–14 and PNGs into OUT (`web_study.rs`).
    WebStudy {
        /// Seeds per configuration (1 … N).
        #[arg(long, default_value_t = 3)]
        seeds: u64,
        /// Only the configurations whose id contains this (e.g.
        /// `same/C1/Apache`).
        #[arg(long)]
        filter: Option<String>,
        /// How long the loads run, simulated seconds.
        #[arg(long, default_value_t = 20.0)]
        seconds: f64,
        /// When the browser sends its request, simulated seconds (by 10
        /// s the bottleneck queue has filled).
        #[arg(long, default_value_t = 10.0)]
        browser_at: f64,
        /// TCP's initial RTO, ms (3000: RFC 2988, as the testbed's
        /// systems; elvis' default is RFC 6298's 1000).
        #[arg(long, default_value_t = 3000)]
        initial_rto_ms: u64,
        #[arg(long, default_value = "web-study")]
        out: std::path::PathBuf,
    },
    /// N idle established TCP connections: memory per connection.
    TcpIdle {
        #[arg(long, default_value_t = 100_000)]
        n: u64,
    },
    /// Peak RSS of N hosts in a group with `offload='linux'` (or
    /// `none`); without `--offload`, runs both in child processes and
    /// prints the bytes the offloads add per host.
    OffloadMemory {
        #[arg(long, default_value_t = 100_000)]
        n: u64,
        /// Hosts 0 … K−1 are each pinged by a pinger of their own.
        #[arg(long, default_value_t = 0)]
        active: u64,
        /// Echo requests per active host.
        #[arg(long, default_value_t = 1)]
        messages: u64,
        /// linux | none (the NDL `offload=` value); omitted: compare both.
        #[arg(long)]
        offload: Option<String>,
    },
    /// The paper's Table I: Basic, Ping Pong, Server Client, each with and
    /// without sockets; prints a table and one JSON line.
    SocketOverhead {
        /// Scale factor for the iteration counts (1: each run takes
        /// 0.2–0.5 s; the default keeps each pair of runs within ~0.2 s).
        #[arg(long, default_value_t = 0.25)]
        scale: f64,
        /// Paired rounds of the wall-time comparison.
        #[arg(long, default_value_t = socket_overhead::ROUNDS)]
        rounds: usize,
        /// Run only this scenario once (basic | ping-pong | server-client),
        /// for profiling.
        #[arg(long)]
        only: Option<String>,
        /// With --only: the socket variant (default: without sockets).
        #[arg(long)]
        sockets: bool,
        /// Skip the instruction counts (which run each variant under
        /// valgrind's callgrind).
        #[arg(long)]
        no_instructions: bool,
    },
    /// The Days paper's FatTree baseline, from a flow file written by
    /// `bench/fattree/nspy_fattree.py gen K FILE`.
    Fattree {
        /// The FatTree's k (checked against the file).
        #[arg(long)]
        k: Option<u32>,
        /// The flow file (JSON).
        #[arg(long)]
        flows: std::path::PathBuf,
    },
    /// FatTree(k) of 10 Gbit/s links, web-search flows from every host
    /// at a load, under DCTCP or CUBIC (`datacenter.rs`).
    Datacenter {
        #[arg(long, default_value_t = 16)]
        k: u32,
        #[arg(long, default_value_t = 0.5)]
        load: f64,
        /// dctcp | cubic
        #[arg(long, default_value = "dctcp")]
        cc: String,
        /// Flows arrive for this many simulated µs.
        #[arg(long, default_value_t = 1_000_000)]
        duration_us: u64,
        /// The run goes on this many µs after the last arrival.
        #[arg(long, default_value_t = 0)]
        drain_us: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Stop after this many wall seconds and report how far the run
        /// got (`reached_s`).
        #[arg(long)]
        wall_limit: Option<f64>,
        /// Print the NDL instead of running it.
        #[arg(long)]
        print: bool,
    },
    /// FatTree(k), 100 Mbit/s links, N CUBIC flows application-limited
    /// to a rate, for a simulated duration (Days Fig. 4b/4c).
    FattreeCubic {
        #[arg(long, default_value_t = 64)]
        k: u32,
        #[arg(long, default_value_t = 128)]
        flows: u32,
        /// Per-flow application rate, bit/s.
        #[arg(long, default_value_t = 10_000_000)]
        rate: u64,
        /// Simulated seconds.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
    },
    /// Builds a generated topology and its routes; pings P host pairs.
    Topology {
        /// fattree
        #[arg(long = "type", default_value = "fattree")]
        kind: String,
        /// FatTree ports per switch (even).
        #[arg(long, default_value_t = 16)]
        k: u32,
        /// Host pairs to ping across pods (RTT checked).
        #[arg(long, default_value_t = 0)]
        pings: u32,
    },
    /// N hosts, each on its own /30 link to one router, one datagram each
    /// to a sink behind it; the NDL written out in full.
    Star {
        #[arg(long)]
        n: u64,
        /// `auto` (routes from the topology) or `static` (the file's
        /// gateways only).
        #[arg(long, default_value = "auto")]
        routing: String,
        /// Pin every application's address with `ip=`.
        #[arg(long)]
        pinned: bool,
    },
    /// N hosts on LANs of `lan` booting by DHCP through relays to 4
    /// servers, starts spread over 10 s (`dhcp_boot.rs`).
    Dhcp {
        #[arg(long)]
        n: u64,
        #[arg(long, default_value_t = 250)]
        lan: u64,
    },
    /// N mobile AODV nodes at Broch's density (a square of 9,000 m² per
    /// node), F CBR flows of 64-byte datagrams at 4/s, for T simulated
    /// seconds (`manet.rs`).
    Manet {
        #[arg(long, default_value_t = 10_000)]
        nodes: u64,
        #[arg(long, default_value_t = 2_000)]
        flows: u64,
        #[arg(long, default_value_t = 300)]
        seconds: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// random_waypoint | manhattan
        #[arg(long, default_value = "random_waypoint")]
        mobility: String,
        /// Print the NDL instead of running it.
        #[arg(long)]
        print: bool,
        /// Stop after this many wall seconds and report how far the run
        /// got (`reached_s`).
        #[arg(long)]
        wall_limit: Option<f64>,
    },
    /// Draws the wireless chain's and the MANET sweeps' figures (PNG)
    /// from their CSVs (`wireless_plots.rs`).
    WirelessPlots {
        /// `bench/wireless-chain --out` CSV.
        #[arg(long)]
        chain: std::path::PathBuf,
        /// `LABEL=FILE`: a `bench/manet --out` CSV (repeatable).
        #[arg(long)]
        manet: Vec<String>,
        #[arg(long, default_value = "docs/img")]
        out: std::path::PathBuf,
    },
    /// Runs a scenario for each N in its own process and prints a table
    /// (and, for three or more N, the fitted growth exponents).
    Sweep {
        /// low-bandwidth | high-bandwidth | instantiation | star
        scenario: String,
        /// The machine counts.
        ns: Vec<u64>,
        /// Messages per sender (high-bandwidth).
        #[arg(long, default_value_t = 1000)]
        messages: u64,
        /// Append the JSON lines to this file.
        #[arg(long)]
        out: Option<std::path::PathBuf>,
    },
}

/// One measurement, printed as a JSON line.
#[derive(Serialize, serde::Deserialize, Debug, Clone, Default)]
struct Measurement {
    scenario: String,
    n: u64,
    messages: u64,
    /// Whole process wall time (set by `sweep`; in-process otherwise).
    wall_s: f64,
    build_s: f64,
    run_s: f64,
    peak_rss_bytes: u64,
    events: u64,
    events_per_s: f64,
    delivered: u64,
    ok: bool,
    extra: serde_json::Value,
}

/// Runs the subcommand given and prints its measurement as a JSON line;
/// exits with 1 when it failed (`sweep` and the comparisons print their
/// own tables).
///
/// Long because it is the flat dispatch of the subcommands, one arm each,
/// most of them only taking a variant's fields apart for the function
/// that runs it.
fn main() {
    let cli = Cli::parse();
    let start = Instant::now();
    let mut m = match cli.cmd {
        Cmd::LowBandwidth { n } => elvis_file("low-bandwidth", n, 1),
        Cmd::HighBandwidth { n, messages } => elvis_file("high-bandwidth", n, messages),
        Cmd::Instantiation { n, processes } => instantiation(n, processes),
        Cmd::Engine { hops, packets } => engine(hops, packets),
        Cmd::RouterChain { hops, packets } => router_chain(hops, packets),
        Cmd::RouterChainSweep { max, window } => {
            let ok = chain_sweep::run(max, window);
            std::process::exit(if ok { 0 } else { 1 });
        }
        Cmd::Routes { n } => routes(n),
        Cmd::Dhcp { n, lan } => dhcp_boot::run(n, lan),
        Cmd::Star { n, routing, pinned } => {
            if !matches!(routing.as_str(), "auto" | "static" | "shortest" | "latency") {
                eprintln!(
                    "error: unknown routing '{routing}' (known: auto, static, shortest, latency)"
                );
                std::process::exit(2);
            }
            star::run(n, &routing, pinned)
        }
        Cmd::TcpBulk {
            bytes,
            bandwidth,
            latency_ns,
            loss,
            real,
            congestion,
            loss_detection,
            offload_usecs,
            txqueuelen,
        } => tcp_bulk(
            bytes,
            bandwidth,
            latency_ns,
            loss,
            real,
            offload_usecs,
            txqueuelen,
            &congestion,
            &loss_detection,
        ),
        Cmd::TcpIdle { n } => tcp_idle::tcp_idle(n),
        Cmd::WebStudy {
            seeds,
            filter,
            seconds,
            browser_at,
            initial_rto_ms,
            out,
        } => {
            let t = web_study::Timing {
                load_s: seconds,
                browser_at,
                initial_rto_ms,
            };
            match web_study::run(seeds, filter.as_deref(), t, &out) {
                Ok(ok) => std::process::exit(if ok { 0 } else { 1 }),
                Err(e) => {
                    eprintln!("error: {}: {e}", out.display());
                    std::process::exit(5);
                }
            }
        }
        Cmd::Web {
            users,
            servers,
            seconds,
        } => web::run(&web::Sizes {
            users,
            servers,
            seconds,
        }),
        Cmd::DnsLookups {
            lookups,
            names,
            resolvers,
            clients,
            zones,
            servers,
        } => dns::run(&dns::Sizes {
            lookups,
            names,
            resolvers,
            clients,
            zones,
            servers,
        }),
        Cmd::OffloadMemory {
            n,
            active,
            messages,
            offload: Some(o),
        } => offload_memory::measure(n, active, messages, &o),
        Cmd::OffloadMemory {
            n,
            active,
            messages,
            offload: None,
        } => {
            let ok = offload_memory::compare(n, active, messages);
            std::process::exit(if ok { 0 } else { 1 });
        }
        Cmd::Fattree { k, flows } => fattree::run(k, &flows),
        Cmd::Datacenter {
            k,
            load,
            cc,
            duration_us,
            drain_us,
            seed,
            wall_limit,
            print,
        } => {
            let sizes = datacenter::Sizes {
                k,
                load,
                cc,
                duration_us,
                drain_us,
                seed,
                wall_limit_s: wall_limit,
            };
            if print {
                return print!("{}", datacenter::ndl(&sizes));
            }
            datacenter::run(&sizes)
        }
        Cmd::FattreeCubic {
            k,
            flows,
            rate,
            seconds,
        } => topology::fat_tree_cubic(k, flows, rate, seconds),
        Cmd::Topology { kind, k, pings } => match kind.as_str() {
            "fattree" => topology::fat_tree(k, pings),
            other => {
                eprintln!("error: unknown topology type '{other}' (known: fattree)");
                std::process::exit(2);
            }
        },
        Cmd::SocketOverhead {
            scale,
            only: Some(name),
            sockets,
            ..
        } => {
            let ok = socket_overhead::profile(scale, &name, sockets);
            std::process::exit(if ok { 0 } else { 1 });
        }
        Cmd::SocketOverhead {
            scale,
            rounds,
            no_instructions,
            ..
        } => socket_overhead::run(scale, rounds, !no_instructions),
        Cmd::Manet {
            nodes,
            flows,
            seconds,
            seed,
            mobility,
            print,
            wall_limit,
        } => {
            let sizes = manet::Sizes {
                nodes,
                flows,
                seconds,
                seed,
                mobility,
                wall_limit_s: wall_limit,
            };
            if print {
                return print!("{}", manet::ndl(&sizes));
            }
            manet::run(&sizes)
        }
        Cmd::WirelessPlots { chain, manet, out } => {
            let manet: Vec<(String, std::path::PathBuf)> = (manet.iter())
                .map(|m| match m.split_once('=') {
                    Some((l, f)) => (l.to_string(), f.into()),
                    None => (m.clone(), m.into()),
                })
                .collect();
            match wireless_plots::run(&chain, &manet, &out) {
                Ok(()) => std::process::exit(0),
                Err(e) => {
                    eprintln!("error: {e}");
                    std::process::exit(5);
                }
            }
        }
        Cmd::Sweep {
            scenario,
            ns,
            messages,
            out,
        } => return sweep(&scenario, &ns, messages, out.as_deref()),
    };
    m.wall_s = start.elapsed().as_secs_f64();
    m.peak_rss_bytes = elvis_sim::report::peak_rss_bytes();
    println!("{}", serde_json::to_string(&m).expect("serializable"));
    if !m.ok {
        std::process::exit(1);
    }
}

/// The NDL of Elvis' benchmark files (`basic-N.ndl`,
/// `base-high-bandwidth.ndl`), four-space indented as they are.
fn elvis_ndl(n: u64, messages: u64) -> String {
    format!(
        "[Networks]\n    [Network id='3']\n        [IP ip='123.45.67.89']\n[Machines]\n    [Machine name='sender' count='{n}']\n        [Networks]\n            [Network id='3']\n        [Protocols]\n            [Protocol name='IPv4']\n            [Protocol name='UDP']\n        [Applications]\n            [Application name='send_message' message='Hello!' to='capturer' port='0xbeef' message_count='{messages}']\n    [Machine name='capturer']\n        [Networks]\n            [Network id='3']\n        [Protocols]\n            [Protocol name='IPv4']\n            [Protocol name='UDP']\n        [Applications]\n            [Application name='capture' ip='123.45.67.89' port='0xbeef' message_count='{}']\n",
        n * messages
    )
}

fn elvis_file(name: &str, n: u64, messages: u64) -> Measurement {
    let t0 = Instant::now();
    let text = elvis_ndl(n, messages);
    let scenario = elvis_ndl::parse(&text, "bench.ndl").expect("benchmark NDL parses");
    let mut built = elvis_build::build(&scenario, None).expect("benchmark scenario builds");
    let build_s = t0.elapsed().as_secs_f64();
    let report = built.sim.run();
    Measurement {
        scenario: name.into(),
        n,
        messages,
        build_s,
        run_s: report.performance.wall_time_s,
        events: report.events,
        events_per_s: report.performance.events_per_s,
        delivered: report.packets.udp_delivered,
        ok: report.success() && report.packets.udp_delivered == n * messages,
        ..Default::default()
    }
}

fn instantiation(n: u64, processes: u64) -> Measurement {
    let t0 = Instant::now();
    let mut sim = Simulation::new(1);
    let lan = sim.add_network(NetworkConfig::ideal("lan"));
    let first = sim
        .add_group("m", Some(n as u32), Protocols::UDP)
        .expect("fresh group");
    for i in 0..n as u32 {
        sim.attach(first + i, lan, Ipv4Addr::from(0x0a00_0000 + i + 1))
            .expect("unique address");
        sim.spawn(first + i, "start", |h: Host| async move {
            let _sock = h.udp_bind(7)?;
            Ok(())
        });
    }
    let report = sim.run();
    let machines_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let mut spawned = 0;
    for _ in 0..processes {
        if Process::new("/bin/true")
            .status()
            .is_ok_and(|s| s.success())
        {
            spawned += 1;
        }
    }
    let proc_s = t1.elapsed().as_secs_f64();
    let machines_per_s = n as f64 / machines_s;
    let procs_per_s = spawned as f64 / proc_s.max(1e-9);
    Measurement {
        scenario: "instantiation".into(),
        n,
        build_s: machines_s,
        events: report.events,
        ok: report.success() && spawned == processes,
        extra: serde_json::json!({
            "machines_per_s": machines_per_s,
            "processes": processes,
            "processes_per_s": procs_per_s,
            "ratio": machines_per_s / procs_per_s.max(1e-9),
        }),
        ..Default::default()
    }
}

/// Address of side `side` (0 or 1) of link `link` in a [`chain`].
fn chain_addr(link: u32, side: u32) -> Ipv4Addr {
    Ipv4Addr::from(0x0a00_0000 + (link << 2) + side + 1)
}

/// Builds `hops + 1` UDP machines joined in a line by `hops` 10 Gbit/s,
/// 1 µs links (link `i` joins machine `i` and `i + 1`, addressed by
/// [`chain_addr`]); returns the simulation and the first machine's id.
fn chain(hops: u32) -> (Simulation, u32) {
    let mut sim = Simulation::new(1);
    let links: Vec<u32> = (0..hops)
        .map(|i| {
            sim.add_network(NetworkConfig {
                kind: elvis_sim::NetworkKind::Link,
                ..NetworkConfig::ideal(format!("l{i}")).with_rate(10_000_000_000, 1_000)
            })
        })
        .collect();
    let first = sim
        .add_group("node", Some(hops + 1), Protocols::UDP)
        .expect("fresh group");
    let addr = chain_addr;
    for (i, &l) in links.iter().enumerate() {
        let i = i as u32;
        sim.attach(first + i, l, addr(i, 0)).expect("address");
        sim.attach(first + i + 1, l, addr(i, 1)).expect("address");
    }
    (sim, first)
}

fn engine(hops: u32, packets: u64) -> Measurement {
    let t0 = Instant::now();
    let (mut sim, first) = chain(hops);
    let addr = chain_addr;
    for i in 1..hops {
        let next = SocketAddrV4::new(addr(i, 1), 9);
        sim.spawn_daemon(first + i, "forward", move |h: Host| async move {
            let sock = h.udp_bind(9)?;
            loop {
                let m = sock.recv().await?;
                sock.send_to(m, next).await?;
            }
        });
    }
    let dst = SocketAddrV4::new(addr(0, 1), 9);
    sim.spawn(first, "source", move |h: Host| async move {
        let sock = h.udp_bind(0)?;
        for _ in 0..packets {
            sock.send_to(elvis_sim::Message::zeros(1000), dst).await?;
        }
        Ok(())
    });
    sim.spawn(first + hops, "sink", move |h: Host| async move {
        let sock = h.udp_bind(9)?;
        for _ in 0..packets {
            sock.recv().await?;
        }
        Ok(())
    });
    let build_s = t0.elapsed().as_secs_f64();
    let report = sim.run();
    Measurement {
        scenario: "engine".into(),
        n: u64::from(hops),
        messages: packets,
        build_s,
        run_s: report.performance.wall_time_s,
        events: report.events,
        events_per_s: report.performance.events_per_s,
        delivered: report.packets.udp_delivered,
        ok: report.success(),
        extra: serde_json::json!({ "sim_time_ns": report.sim_time_ns, "hop_deliveries_per_s": report.packets.udp_delivered as f64 / report.performance.wall_time_s }),
        ..Default::default()
    }
}

fn router_chain(hops: u32, packets: u64) -> Measurement {
    let t0 = Instant::now();
    let (mut sim, first) = chain(hops);
    let addr = chain_addr;
    for i in 1..hops {
        sim.set_forwarding(first + i, true).expect("machine");
    }
    sim.set_default_ttl(255);
    sim.set_auto_routes(Some(elvis_sim::stack::route::Metric::Hops));
    let dst = SocketAddrV4::new(addr(hops - 1, 1), 9);
    sim.spawn(first, "source", move |h: Host| async move {
        let sock = h.udp_bind(0)?;
        for _ in 0..packets {
            sock.send_to(elvis_sim::Message::zeros(1000), dst).await?;
        }
        Ok(())
    });
    sim.spawn(first + hops, "sink", move |h: Host| async move {
        let sock = h.udp_bind(9)?;
        for _ in 0..packets {
            sock.recv().await?;
        }
        Ok(())
    });
    let tables = sim.build_routes().expect("routes");
    let build_s = t0.elapsed().as_secs_f64();
    let report = sim.run();
    let forwarded: u64 = (report.routers.iter())
        .map(|r| r.interfaces[1].counters.forwarded)
        .sum();
    Measurement {
        scenario: "router-chain".into(),
        n: u64::from(hops),
        messages: packets,
        build_s,
        run_s: report.performance.wall_time_s,
        events: report.events,
        events_per_s: report.performance.events_per_s,
        delivered: report.packets.udp_delivered,
        ok: report.success(),
        extra: serde_json::json!({
            "tables": tables,
            "forwarded": forwarded,
            "forwards_per_s": forwarded as f64 / report.performance.wall_time_s,
        }),
        ..Default::default()
    }
}

fn routes(n: u64) -> Measurement {
    let t0 = Instant::now();
    let mut sim = Simulation::new(1);
    let per_lan = 50u64;
    let access = n.div_ceil(per_lan).max(1);
    let cores = ((access as f64).sqrt().ceil() as u64).max(2);
    let backbone = sim.add_network(NetworkConfig::ideal("backbone"));
    let core0 = sim
        .add_group("core", Some(cores as u32), Protocols::UDP)
        .expect("fresh");
    let acc0 = sim
        .add_group("access", Some(access as u32), Protocols::UDP)
        .expect("fresh");
    let hosts0 = sim
        .add_group("host", Some(n as u32), Protocols::UDP)
        .expect("fresh");
    // 10.0.0.0/16: backbone; 10.1.0.0/14: uplinks (/30 each); 11.0.0.0/8:
    // host LANs (/26 each).
    for c in 0..cores {
        let ip = Ipv4Addr::from(0x0a00_0001 + c as u32);
        sim.attach(core0 + c as u32, backbone, ip).expect("attach");
        sim.set_forwarding(core0 + c as u32, true).expect("fwd");
    }
    for a in 0..access {
        let r = acc0 + a as u32;
        sim.set_forwarding(r, true).expect("fwd");
        let lan = sim.add_network(NetworkConfig::ideal(format!("lan{a}")));
        let base = 0x0b00_0000 + (a as u32) * 64;
        sim.attach(r, lan, Ipv4Addr::from(base + 1))
            .expect("attach");
        for h in 0..per_lan.min(n - a * per_lan) {
            let m = hosts0 + (a * per_lan + h) as u32;
            sim.attach(m, lan, Ipv4Addr::from(base + 2 + h as u32))
                .expect("attach");
        }
        for k in 0..2u64 {
            let up = sim.add_network(NetworkConfig {
                kind: elvis_sim::NetworkKind::Link,
                ..NetworkConfig::ideal(format!("up{a}-{k}"))
            });
            let base = 0x0a01_0000 + ((a * 2 + k) as u32) * 4;
            let core = core0 + ((a + k) % cores) as u32;
            sim.attach(r, up, Ipv4Addr::from(base + 1)).expect("attach");
            sim.attach(core, up, Ipv4Addr::from(base + 2))
                .expect("attach");
        }
    }
    sim.set_auto_routes(Some(elvis_sim::stack::route::Metric::Hops));
    let build_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let tables = sim.build_routes().expect("routes");
    let routes_s = t1.elapsed().as_secs_f64();
    Measurement {
        scenario: "routes".into(),
        n,
        build_s,
        run_s: routes_s,
        ok: true,
        extra: serde_json::json!({
            "machines": sim.machine_count(),
            "routers": cores + access,
            "networks": 1 + 3 * access,
            "tables": tables,
            "route_compute_s": routes_s,
        }),
        ..Default::default()
    }
}

/// `elvis-bench tcp-bulk`: one TCP bulk transfer of `bytes` between two
/// hosts on a point-to-point link; reports the simulated goodput and the
/// wall time per simulated gigabyte.
#[allow(clippy::too_many_arguments)] // one per command-line option
fn tcp_bulk(
    bytes: u64,
    bandwidth: u64,
    latency_ns: u64,
    loss: f64,
    real: bool,
    offload_usecs: Option<u32>,
    txqueuelen: Option<u32>,
    congestion: &str,
    loss_detection: &str,
) -> Measurement {
    let t0 = Instant::now();
    let alg: elvis_sim::Congestion = congestion.parse().expect("a value clap admits");
    let detection: elvis_sim::LossDetection = loss_detection.parse().expect("clap admits it");
    let mut sim = Simulation::new(1);
    sim.set_tcp_config(elvis_sim::TcpConfig {
        loss_detection: detection,
        ..elvis_sim::TcpConfig::default()
    });
    let mut cfg = NetworkConfig::ideal("path").with_rate(bandwidth, latency_ns);
    cfg.kind = elvis_sim::NetworkKind::Link;
    cfg.loss = loss;
    if let Some(q) = txqueuelen {
        cfg.txqueuelen = q;
    }
    let net = sim.add_network(cfg);
    let a = sim
        .add_group("src", None, Protocols::UDP_TCP)
        .expect("fresh group");
    let b = sim
        .add_group("dst", None, Protocols::UDP_TCP)
        .expect("fresh group");
    sim.attach(a, net, Ipv4Addr::new(10, 0, 0, 1))
        .expect("address");
    sim.attach(b, net, Ipv4Addr::new(10, 0, 0, 2))
        .expect("address");
    if let Some(us) = offload_usecs {
        let o = elvis_sim::Offloads {
            rx_usecs: us,
            ..elvis_sim::Offloads::LINUX
        };
        for m in [a, b] {
            sim.set_offloads(m, o).expect("machine");
        }
    }
    let done = spawn_bulk_receive(&mut sim, b, bytes);
    spawn_bulk_send(&mut sim, a, bytes, alg, real);
    let build_s = t0.elapsed().as_secs_f64();
    let report = sim.run();
    let sim_s = done.get() as f64 / 1e9;
    let wall = report.performance.wall_time_s;
    Measurement {
        scenario: "tcp-bulk".into(),
        n: 2,
        messages: bytes,
        build_s,
        run_s: wall,
        events: report.events,
        events_per_s: report.performance.events_per_s,
        delivered: report.packets.tcp_received,
        ok: report.success(),
        extra: serde_json::json!({
            "simulated_transfer_s": sim_s,
            "goodput_bps": bytes as f64 * 8.0 / sim_s,
            "wall_s_per_simulated_gb": wall / (bytes as f64 / 1e9),
            "goodput_bytes_per_wall_s": bytes as f64 / wall,
            "payload": if real { "real" } else { "virtual" },
            "congestion": congestion,
            "loss_detection": detection.as_str(),
            "loss": loss,
            "offload_rx_usecs": offload_usecs,
            "txqueuelen": txqueuelen.unwrap_or(NetworkConfig::DEFAULT_TXQUEUELEN),
            "gro_merged": sim.gro_merged(),
        }),
        ..Default::default()
    }
}

/// Spawns tcp-bulk's receiver on machine `b`: accepts one connection on
/// port 5001 and reads `bytes`; returns the cell where it leaves the
/// simulated time (ns) it finished at.
fn spawn_bulk_receive(
    sim: &mut Simulation,
    b: elvis_sim::MachineId,
    bytes: u64,
) -> std::rc::Rc<std::cell::Cell<u64>> {
    let done = std::rc::Rc::new(std::cell::Cell::new(0u64));
    let done2 = done.clone();
    sim.spawn(b, "bulk_receive", move |h: Host| async move {
        let l = h.tcp_listen(5001, 1)?;
        let (s, _) = l.accept().await?;
        let mut got = 0u64;
        while got < bytes {
            let m = s.recv(1 << 22).await?;
            if m.is_empty() {
                break;
            }
            got += m.len() as u64;
        }
        done2.set(h.now().as_nanos());
        if got == bytes {
            Ok(())
        } else {
            Err(elvis_sim::AppError::new(format!("got {got} of {bytes}")))
        }
    });
    done
}

/// Spawns tcp-bulk's sender on machine `a`: connects to 10.0.0.2:5001
/// with congestion control `alg` and writes `bytes`, real or virtual.
fn spawn_bulk_send(
    sim: &mut Simulation,
    a: elvis_sim::MachineId,
    bytes: u64,
    alg: elvis_sim::Congestion,
    real: bool,
) {
    sim.spawn(a, "bulk_send", move |h: Host| async move {
        let s = h
            .tcp_connect_with(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 5001), alg)
            .await?;
        // With real bytes, one 4 MiB buffer is written again and again (as
        // iperf does), so the run measures the simulator rather than the
        // application filling a gigabyte of memory.
        let buffer = real.then(|| elvis_sim::Message::from_vec(vec![0x5a; 1 << 22]));
        let mut sent = 0u64;
        while sent < bytes {
            let n = (bytes - sent).min(1 << 22);
            let piece = match &buffer {
                Some(b) => b.slice(..n as usize),
                None => elvis_sim::Message::zeros(n),
            };
            s.write_all(piece).await?;
            sent += n;
        }
        Ok(())
    });
}

/// Runs each N in a child process; the parent measures whole-process wall
/// time, the child reports its own peak RSS (VmHWM covers its lifetime).
fn sweep(scenario: &str, ns: &[u64], messages: u64, out: Option<&std::path::Path>) {
    let exe = std::env::current_exe().expect("own path");
    println!("| scenario | N | messages | wall (s) | build (s) | run (s) | peak RSS (MiB) | bytes/machine | events/s | ok |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    let mut points: Vec<(f64, f64, f64)> = Vec::new();
    for &n in ns {
        let mut cmd = Process::new(&exe);
        cmd.arg(scenario).arg("--n").arg(n.to_string());
        if scenario == "high-bandwidth" {
            cmd.arg("--messages").arg(messages.to_string());
        }
        let t0 = Instant::now();
        let output = cmd.output().expect("spawn benchmark child");
        let wall = t0.elapsed();
        let line = String::from_utf8_lossy(&output.stdout);
        let Ok(mut m) = serde_json::from_str::<Measurement>(line.trim()) else {
            println!(
                "| {scenario} | {n} | | child failed: {} | | | | | | no |",
                String::from_utf8_lossy(&output.stderr).trim()
            );
            continue;
        };
        m.wall_s = wall.as_secs_f64();
        println!(
            "| {scenario} | {n} | {} | {:.3} | {:.3} | {:.3} | {:.1} | {:.0} | {:.2e} | {} |",
            m.messages,
            m.wall_s,
            m.build_s,
            m.run_s,
            m.peak_rss_bytes as f64 / 1048576.0,
            m.peak_rss_bytes as f64 / (n.max(1) as f64),
            m.events_per_s,
            if m.ok { "yes" } else { "NO" }
        );
        if let Some(path) = out {
            use std::io::Write;
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = writeln!(f, "{}", serde_json::to_string(&m).unwrap_or_default());
            }
        }
        let _ = Duration::ZERO;
        points.push((n as f64, m.wall_s, m.peak_rss_bytes as f64));
    }
    if points.len() >= 3 {
        let wall: Vec<(f64, f64)> = points.iter().map(|p| (p.0, p.1)).collect();
        let rss: Vec<(f64, f64)> = points.iter().map(|p| (p.0, p.2)).collect();
        println!(
            "\ngrowth exponent (least squares on log-log): wall time N^{:.2}, peak RSS N^{:.2}",
            exponent(&wall),
            exponent(&rss)
        );
    }
}

/// Returns the slope of log(y) over log(x): the exponent b of y = a·x^b.
fn exponent(points: &[(f64, f64)]) -> f64 {
    let logs: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (x.ln(), y.ln())).collect();
    let n = logs.len() as f64;
    let mx = logs.iter().map(|p| p.0).sum::<f64>() / n;
    let my = logs.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = logs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = logs.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    sxy / sxx
}

#[cfg(test)]
mod tests {
    use super::exponent;

    #[test]
    fn exponent_recovers_the_power_of_a_power_law() {
        let points: Vec<(f64, f64)> = [1e4, 1e5, 1e6].iter().map(|&x| (x, 3.0 * x * x)).collect();
        assert!((exponent(&points) - 2.0).abs() < 1e-9);
        let linear: Vec<(f64, f64)> = [10.0, 20.0, 40.0].iter().map(|&x| (x, 0.5 * x)).collect();
        assert!((exponent(&linear) - 1.0).abs() < 1e-9);
    }
}
