//! `socket-overhead`: the Elvis paper's Table I (§V.C), each scenario run
//! once against the protocol layer without sockets and once against the
//! socket API, doing the same work.
//!
//! ```text
//!   Basic:          sender ──1 msg──▶ capture            (a whole simulation per iteration)
//!   Ping Pong:      a ◀──────────────▶ b                 (one message bounced R times)
//!   Server Client:  client-0..C ◀───▶ server             (C clients, R request/reply each)
//! ```
//!
//! **Sockets**: applications are tasks on UDP sockets (`udp_bind`,
//! `send_to`, `recv_from`), each message waking the task that waits on it.
//!
//! **No sockets**: the closest thing to Elvis' pre-socket applications,
//! which held a protocol session and were called by it: a user-defined
//! protocol (`elvis_sim::stack::custom`, IP protocol 253) whose `demux`
//! runs the application's logic and `push`es the answer down to IPv4. To
//! make the work the same, it writes and checks the very UDP header the
//! built-in UDP does (ports, length, checksum over pseudo-header and
//! payload); what it skips is exactly the socket layer: the socket lookup,
//! the receive queue, waking and polling a task, the send future. Tasks
//! only start each exchange (`Host::send_ip`). As in the paper's Fig. 2,
//! every machine that runs an application has it installed: Basic's
//! sender holds a (send-only) instance as its socket variant holds a
//! socket, like the first player of Ping Pong and every client of Server
//! Client.
//!
//! Fair in both directions: the paper does not list its programs, but
//! Basic is its Fig. 2 and the other two are the UDP exchanges their
//! names say; both variants send the same datagrams (ports, lengths,
//! checksums written and verified on both sides), allocate the same
//! payloads and cross the same IPv4/Ethernet/network code, so the
//! difference is the socket layer alone (`docs/sockets.md` has the
//! instruction counts).
//!
//! Every link has 1 µs of latency (so each hop is an event, as with
//! sockets), no rate limit. Both variants must put the same frames on the
//! wire and end at the same virtual instant; the table says WRONG (and the
//! command fails) otherwise.
//!
//! Two measures:
//! - **instructions** (the primary one, deterministic): each variant runs
//!   once in a child process under `valgrind --tool=callgrind`, collecting
//!   only inside [`measured`] (so process start-up is left out); reported
//!   per unit (simulation, hop, round trip). Skipped, with `n/a`, where
//!   valgrind is not installed.
//! - **wall time**: [`ROUNDS`] paired rounds (see [`wall_times`]); the
//!   overhead is the median of the rounds' ratios, so that the speed
//!   drifts of a shared machine, far larger than 5 %, cancel.

use crate::Measurement;
use elvis_message::{ChunkRef, Message};
use elvis_sim::stack::custom::{Protocol, ProtocolCtx};
use elvis_sim::{Host, MachineId, NetworkConfig, NetworkKind, Protocols, Simulation};
use elvis_wire::checksum::{self, Checksum};
use elvis_wire::{udp, IpProtocol};
use std::cell::Cell;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::process::Command;
use std::rc::Rc;
use std::time::Instant;

/// The IP protocol number of the socket-less variant.
const PROTO: u8 = 253;
/// The server / capture port.
const PORT: u16 = 0xbeef;
/// Message size (bytes of application payload).
const PAYLOAD: usize = 32;

#[inline]
fn sum_message(sum: &mut Checksum, msg: &Message) {
    msg.for_each_chunk(|chunk| match chunk {
        ChunkRef::Bytes(b) => sum.add(b),
        ChunkRef::Zeros(n) => sum.add_zeros(n),
    });
}

/// Returns a message carrying `count`, padded to `PAYLOAD` bytes.
fn payload(count: u32) -> Message {
    let mut v = vec![0u8; PAYLOAD];
    v[..4].copy_from_slice(&count.to_be_bytes());
    Message::from_vec(v)
}

fn count_of(msg: &mut Message) -> u32 {
    msg.front(4)
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Writes the UDP header (as the built-in UDP does).
fn encap(msg: &mut Message, src: Ipv4Addr, dst: Ipv4Addr, src_port: u16, dst_port: u16) {
    let len = msg.len();
    let mut sum = Checksum::new();
    sum_message(&mut sum, msg);
    let header = msg.push_front(udp::HEADER_LEN);
    udp::Repr { src_port, dst_port }.emit_header(
        &mut udp::Packet::new_unchecked(header),
        src,
        dst,
        len,
        sum,
    );
}

/// Checks and removes the UDP header; returns the source port.
fn decap(msg: &mut Message, src: Ipv4Addr, dst: Ipv4Addr) -> Option<u16> {
    let header = msg.front(udp::HEADER_LEN)?;
    let packet = udp::Packet::new_unchecked(header);
    let (sport, len) = (packet.src_port(), usize::from(packet.len()));
    if len < udp::HEADER_LEN || len > msg.len() {
        return None;
    }
    let mut sum = checksum::pseudo_header(src, dst, IpProtocol::Udp, len as u32);
    sum_message(&mut sum, msg);
    if sum.finish() != 0 {
        return None;
    }
    msg.pop_front(udp::HEADER_LEN).ok()?;
    Some(sport)
}

/// The socket-less application: one protocol instance per machine.
/// `reply` decides what to answer a message carrying `count` with.
struct App {
    ip: Ipv4Addr,
    port: u16,
    done: Rc<Cell<u64>>,
    rule: Rule,
}

#[derive(Clone, Copy)]
enum Rule {
    /// Send only: answer nothing (Basic's send_message).
    Send,
    /// Count arrivals (Basic's capture).
    Capture,
    /// Answer `count − 1` until 0 (Ping Pong; a client of Server Client).
    Bounce,
    /// Answer with the same message (Server Client's server).
    Echo,
}

impl Protocol for App {
    fn name(&self) -> &'static str {
        "socketless-app"
    }
    fn ip_protocol(&self) -> u8 {
        PROTO
    }
    fn demux(&mut self, cx: &mut ProtocolCtx<'_>, src: Ipv4Addr, dst: Ipv4Addr, mut msg: Message) {
        let Some(sport) = decap(&mut msg, src, dst) else {
            return;
        };
        let c = count_of(&mut msg);
        let mut out = match self.rule {
            Rule::Send => return,
            Rule::Capture => {
                self.done.set(self.done.get() + 1);
                return;
            }
            Rule::Echo => {
                self.done.set(self.done.get() + 1);
                msg
            }
            Rule::Bounce => {
                if c == 0 {
                    self.done.set(self.done.get() + 1);
                    return;
                }
                payload(c - 1)
            }
        };
        encap(&mut out, self.ip, src, self.port, sport);
        let _ = cx.push(src, out);
    }
}

fn net(sim: &mut Simulation, kind: NetworkKind) -> elvis_sim::NetId {
    let mut cfg = NetworkConfig::ideal("net");
    cfg.kind = kind;
    cfg.latency_ns = 1_000;
    sim.add_network(cfg)
}

fn ip(i: u32) -> Ipv4Addr {
    Ipv4Addr::from(0x0a00_0001 + i)
}

/// Builds `n` machines on one network (a link for two, else a switch).
fn machines(sim: &mut Simulation, n: u32) -> MachineId {
    let kind = if n == 2 {
        NetworkKind::Link
    } else {
        NetworkKind::Switch
    };
    let lan = net(sim, kind);
    let first = sim
        .add_group("m", Some(n), Protocols::UDP)
        .expect("fresh group");
    for i in 0..n {
        sim.attach(first + i, lan, ip(i)).expect("address");
    }
    first
}

fn add_app(
    sim: &mut Simulation,
    m: MachineId,
    i: u32,
    port: u16,
    rule: Rule,
    done: &Rc<Cell<u64>>,
) {
    let app = App {
        ip: ip(i),
        port,
        done: done.clone(),
        rule,
    };
    sim.add_protocol(m, Box::new(app)).expect("machine exists");
}

/// What a run of one variant did. Both variants must do the same simulated
/// work: the same frames on the wire, ending at the same virtual instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Work {
    /// Applications (or socket-less protocol instances) that saw the end.
    finished: u64,
    /// Frames put on the wire / delivered.
    frames_sent: u64,
    frames_delivered: u64,
    /// Virtual time at the end (summed over Basic's simulations), ns.
    sim_ns: u64,
}

impl Work {
    fn add(&mut self, r: &elvis_sim::Report) {
        self.frames_sent += r.packets.frames_sent;
        self.frames_delivered += r.packets.frames_delivered;
        self.sim_ns += r.sim_time_ns;
    }
}

/// Basic: `iters` simulations of one message.
fn basic(sockets: bool, iters: u64) -> Work {
    let done = Rc::new(Cell::new(0u64));
    let mut work = Work::default();
    for _ in 0..iters {
        let mut sim = Simulation::new(1);
        let first = machines(&mut sim, 2);
        let (sender, capture) = (first, first + 1);
        if sockets {
            let d = done.clone();
            sim.spawn(capture, "capture", move |h: Host| async move {
                let s = h.udp_bind(PORT)?;
                let _ = s.recv_from().await?;
                d.set(d.get() + 1);
                Ok(())
            });
            sim.spawn(sender, "send_message", |h: Host| async move {
                let s = h.udp_bind(0)?;
                s.send_to(payload(0), SocketAddrV4::new(ip(1), PORT))
                    .await?;
                Ok(())
            });
        } else {
            add_app(&mut sim, sender, 0, 49_152, Rule::Send, &done);
            add_app(&mut sim, capture, 1, PORT, Rule::Capture, &done);
            sim.spawn(sender, "send_message", |h: Host| async move {
                let mut m = payload(0);
                encap(&mut m, ip(0), ip(1), 49_152, PORT);
                h.send_ip(ip(1), PROTO, m)?;
                Ok(())
            });
        }
        work.add(&sim.run());
    }
    work.finished = done.get();
    work
}

/// Ping Pong: one message bounced `hops` times between two machines.
/// `finished` counts the receivers of the last message (the socket
/// variant's other task also ends, after sending it).
fn ping_pong(sockets: bool, hops: u32) -> Work {
    let done = Rc::new(Cell::new(0u64));
    let mut sim = Simulation::new(1);
    let first = machines(&mut sim, 2);
    if sockets {
        for side in 0..2u32 {
            let d = done.clone();
            sim.spawn(first + side, "ping_pong", move |h: Host| async move {
                let s = h.udp_bind(PORT)?;
                let peer = SocketAddrV4::new(ip(1 - side), PORT);
                if side == 0 {
                    s.send_to(payload(hops), peer).await?;
                }
                loop {
                    let (mut m, from) = s.recv_from().await?;
                    let c = count_of(&mut m);
                    if c == 0 {
                        d.set(d.get() + 1);
                        break;
                    }
                    s.send_to(payload(c - 1), from).await?;
                    if c == 1 {
                        break;
                    }
                }
                Ok(())
            });
        }
    } else {
        for side in 0..2u32 {
            add_app(&mut sim, first + side, side, PORT, Rule::Bounce, &done);
        }
        sim.spawn(first, "ping_pong", move |h: Host| async move {
            let mut m = payload(hops);
            encap(&mut m, ip(0), ip(1), PORT, PORT);
            h.send_ip(ip(1), PROTO, m)?;
            Ok(())
        });
    }
    let mut work = Work::default();
    work.add(&sim.run());
    work.finished = done.get();
    work
}

/// Server Client: `clients` clients, `rounds + 1` request/reply each
/// (counting down to 0), one server. `finished` counts the clients that
/// saw their last reply.
fn server_client(sockets: bool, clients: u32, rounds: u32) -> Work {
    let done = Rc::new(Cell::new(0u64));
    let mut sim = Simulation::new(1);
    let server = machines(&mut sim, clients + 1);
    let to_server = SocketAddrV4::new(ip(0), PORT);
    if sockets {
        let total = u64::from(clients) * (u64::from(rounds) + 1);
        sim.spawn(server, "server", move |h: Host| async move {
            let s = h.udp_bind(PORT)?;
            for _ in 0..total {
                let (m, from) = s.recv_from().await?;
                s.send_to(m, from).await?;
            }
            Ok(())
        });
        for c in 1..=clients {
            let d = done.clone();
            sim.spawn(server + c, "client", move |h: Host| async move {
                let s = h.udp_bind(0)?;
                s.send_to(payload(rounds), to_server).await?;
                loop {
                    let (mut m, _) = s.recv_from().await?;
                    let left = count_of(&mut m);
                    if left == 0 {
                        break;
                    }
                    s.send_to(payload(left - 1), to_server).await?;
                }
                d.set(d.get() + 1);
                Ok(())
            });
        }
    } else {
        let served = Rc::new(Cell::new(0u64));
        add_app(&mut sim, server, 0, PORT, Rule::Echo, &served);
        for c in 1..=clients {
            add_app(&mut sim, server + c, c, 49_152, Rule::Bounce, &done);
            sim.spawn(server + c, "client", move |h: Host| async move {
                let mut m = payload(rounds);
                encap(&mut m, ip(c), ip(0), 49_152, PORT);
                h.send_ip(ip(0), PROTO, m)?;
                Ok(())
            });
        }
    }
    let mut work = Work::default();
    work.add(&sim.run());
    work.finished = done.get();
    work
}

/// The three scenarios.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scenario {
    Basic,
    PingPong,
    ServerClient,
}

/// Server Client's number of clients.
const CLIENTS: u32 = 10;

impl Scenario {
    const ALL: [Scenario; 3] = [Scenario::Basic, Scenario::PingPong, Scenario::ServerClient];

    fn parse(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.cli_name() == name)
    }

    /// The name `--only` takes.
    fn cli_name(self) -> &'static str {
        match self {
            Scenario::Basic => "basic",
            Scenario::PingPong => "ping-pong",
            Scenario::ServerClient => "server-client",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Scenario::Basic => "Basic",
            Scenario::PingPong => "Ping Pong",
            Scenario::ServerClient => "Server Client",
        }
    }

    /// The Elvis paper's overhead (Table I, wall time).
    fn paper(self) -> &'static str {
        match self {
            Scenario::Basic => "+49 %",
            Scenario::PingPong => "+48 %",
            Scenario::ServerClient => "+20 %",
        }
    }

    /// The number of units (simulations, hops, round trips) at `scale`.
    fn units(self, scale: f64) -> u64 {
        let n = |base: f64| ((base * scale).round() as u64).max(1);
        match self {
            Scenario::Basic => n(20_000.0),
            Scenario::PingPong => n(1_000_000.0),
            Scenario::ServerClient => u64::from(CLIENTS) * (n(50_000.0) + 1),
        }
    }

    fn describe(self, scale: f64) -> String {
        match self {
            Scenario::Basic => format!("{} simulations of 1 message", self.units(scale)),
            Scenario::PingPong => format!("{} hops", self.units(scale)),
            Scenario::ServerClient => format!(
                "{CLIENTS} clients x {} round trips",
                self.units(scale) / u64::from(CLIENTS)
            ),
        }
    }

    /// Runs one variant at `scale`; returns what it did and whether that
    /// is the expected outcome.
    fn run(self, sockets: bool, scale: f64) -> (Work, bool) {
        let units = self.units(scale);
        match self {
            Scenario::Basic => {
                let w = basic(sockets, units);
                (w, w.finished == units)
            }
            Scenario::PingPong => {
                let w = ping_pong(sockets, units as u32);
                (w, w.finished == 1)
            }
            Scenario::ServerClient => {
                let rounds = (units / u64::from(CLIENTS) - 1) as u32;
                let w = server_client(sockets, CLIENTS, rounds);
                (w, w.finished == u64::from(CLIENTS))
            }
        }
    }
}

/// Runs one variant once; the only function whose instructions the
/// `socket-overhead` table counts (callgrind's `--toggle-collect`), so that
/// process start-up and argument parsing stay out of the numbers.
#[inline(never)]
fn measured(scenario: Scenario, sockets: bool, scale: f64) -> bool {
    scenario.run(sockets, scale).1
}

/// The symbol callgrind collects in (see [`measured`]).
const MEASURED_SYMBOL: &str = "elvis_bench::socket_overhead::measured";

/// Runs one scenario variant once (for profilers, and for the instruction
/// counts): `basic`, `ping-pong` or `server-client`, with or without
/// sockets. Returns false for an unknown name or a wrong outcome.
pub fn profile(scale: f64, name: &str, sockets: bool) -> bool {
    Scenario::parse(name).is_some_and(|s| measured(s, sockets, scale))
}

/// Default rounds of the wall-time comparison.
pub const ROUNDS: usize = 31;
/// The largest scale the instruction counts run at (callgrind runs some
/// 50 times slower; instruction counts are deterministic and per unit).
const MAX_INSTRUCTION_SCALE: f64 = 0.02;

/// Returns the `q`-quantile of `v` (0 ≤ q ≤ 1; sorts `v` in place),
/// interpolating linearly between the two nearest samples.
fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let x = q * (v.len() - 1) as f64;
    let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (x - lo as f64)
}

/// Returns the median of `v` (sorted in place).
fn median(v: &mut [f64]) -> f64 {
    quantile(v, 0.5)
}

/// One row of the table.
struct Row {
    scenario: Scenario,
    /// Instructions per unit, without and with sockets (`None` without
    /// valgrind).
    instructions: Option<[f64; 2]>,
    wall: Wall,
    /// Both variants did the same work, as expected, in every run.
    ok: bool,
    work: [Work; 2],
}

/// The wall-time comparison of one scenario.
struct Wall {
    /// Median wall time, without and with sockets, s.
    median: [f64; 2],
    /// The socket overhead: the median over rounds of each round's ratio
    /// (sockets / no sockets − 1), %; and that ratio's quartiles.
    overhead_pct: f64,
    quartiles_pct: [f64; 2],
}

/// What the timed runs of one scenario gave.
#[derive(Default)]
struct Timings {
    /// Wall times without and with sockets, s, one per round.
    times: [Vec<f64>; 2],
    /// The work each variant did (checked to be the same in every run).
    works: [Work; 2],
    ok: bool,
}

/// Times both variants of every scenario `rounds` times, after one untimed
/// warm-up round. Each round times each scenario's two variants back to
/// back, in the order no-sockets/sockets, then sockets/no-sockets (ABBA),
/// and the scenarios take turns round by round, so that each scenario's
/// rounds spread over the whole measurement. The overhead is the median of
/// the rounds' ratios: on a shared or frequency-scaling machine the speed
/// drifts by far more than 5 % within seconds, while a pair run within
/// ~0.2 s sees the same speed, and the alternating order cancels any
/// advantage of running first or second. Checks that every run of a
/// variant did the same work and the variants did the same work.
fn wall_times(scale: f64, rounds: usize) -> Vec<(Wall, [Work; 2], bool)> {
    let mut all: Vec<Timings> = Scenario::ALL
        .iter()
        .map(|_| Timings {
            ok: true,
            ..Timings::default()
        })
        .collect();
    for round in 0..=rounds.max(1) {
        for (scenario, t) in Scenario::ALL.into_iter().zip(&mut all) {
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for i in order {
                let start = Instant::now();
                let (w, expected) = scenario.run(i == 1, scale);
                let dt = start.elapsed().as_secs_f64();
                t.ok &= expected && (round == 0 || w == t.works[i]);
                t.works[i] = w;
                if round > 0 {
                    t.times[i].push(dt);
                }
            }
        }
    }
    all.into_iter()
        .map(|mut t| {
            let mut ratios: Vec<f64> = (t.times[0].iter().zip(&t.times[1]))
                .map(|(a, b)| (b / a - 1.0) * 100.0)
                .collect();
            let wall = Wall {
                overhead_pct: median(&mut ratios),
                quartiles_pct: [quantile(&mut ratios, 0.25), quantile(&mut ratios, 0.75)],
                median: [median(&mut t.times[0]), median(&mut t.times[1])],
            };
            let [a, b] = t.works;
            let same = a.frames_sent == b.frames_sent
                && a.frames_delivered == b.frames_delivered
                && a.sim_ns == b.sim_ns;
            (wall, t.works, t.ok && same)
        })
        .collect()
}

/// Counts the instructions of one variant at `scale` in a child process
/// under callgrind; `None` when valgrind is not installed or fails.
fn instructions(scenario: Scenario, sockets: bool, scale: f64) -> Option<u64> {
    let exe = std::env::current_exe().ok()?;
    let mut cmd = Command::new("valgrind");
    cmd.args([
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        &format!("--toggle-collect={MEASURED_SYMBOL}"),
    ])
    .arg(exe)
    .args([
        "socket-overhead",
        "--scale",
        &scale.to_string(),
        "--only",
        scenario.cli_name(),
    ]);
    if sockets {
        cmd.arg("--sockets");
    }
    let out = cmd.output().ok()?;
    if !out.status.success() {
        return None;
    }
    collected(&String::from_utf8_lossy(&out.stderr))
}

/// Parses callgrind's `==PID== Collected : N` line (`None` for 0: the
/// measured function was not found, so nothing was collected).
fn collected(stderr: &str) -> Option<u64> {
    stderr
        .lines()
        .find_map(|l| {
            let (_, n) = l.split_once("Collected :")?;
            n.trim().parse().ok()
        })
        .filter(|&n| n > 0)
}

/// Runs the three scenarios; prints a table, returns the measurement.
/// With `count_instructions`, each variant also runs once under callgrind
/// (at a scale of at most `MAX_INSTRUCTION_SCALE`).
pub fn run(scale: f64, rounds: usize, count_instructions: bool) -> Measurement {
    let iscale = scale.min(MAX_INSTRUCTION_SCALE);
    let rows: Vec<Row> = Scenario::ALL
        .into_iter()
        .zip(wall_times(scale, rounds))
        .map(|(scenario, (wall, work, ok))| {
            let instructions = count_instructions
                .then(|| {
                    let units = scenario.units(iscale) as f64;
                    let a = instructions(scenario, false, iscale)?;
                    let b = instructions(scenario, true, iscale)?;
                    Some([a as f64 / units, b as f64 / units])
                })
                .flatten();
            Row {
                scenario,
                instructions,
                wall,
                ok,
                work,
            }
        })
        .collect();
    print_table(&rows, scale, rounds, count_instructions.then_some(iscale));
    let mut extra = serde_json::Map::new();
    for r in &rows {
        let pct = |[a, b]: [f64; 2]| (b / a - 1.0) * 100.0;
        extra.insert(
            r.scenario.title().to_string(),
            serde_json::json!({
                "work": r.scenario.describe(scale),
                "no_sockets_s": r.wall.median[0],
                "sockets_s": r.wall.median[1],
                "overhead_pct": r.wall.overhead_pct,
                "overhead_quartiles_pct": r.wall.quartiles_pct,
                "no_sockets_instructions_per_unit": r.instructions.map(|i| i[0]),
                "sockets_instructions_per_unit": r.instructions.map(|i| i[1]),
                "instruction_overhead_pct": r.instructions.map(pct),
                "frames_sent": r.work[1].frames_sent,
                "ok": r.ok,
            }),
        );
    }
    Measurement {
        scenario: "socket-overhead".into(),
        ok: rows.iter().all(|r| r.ok),
        extra: serde_json::Value::Object(extra),
        ..Default::default()
    }
}

fn print_table(rows: &[Row], scale: f64, rounds: usize, iscale: Option<f64>) {
    if let Some(iscale) = iscale {
        println!("instructions: callgrind, per unit, at scale {iscale}");
    }
    println!(
        "wall: {rounds} paired rounds at scale {scale} (ABBA order); times are medians, \
         the overhead is the median of the rounds' ratios [quartiles]"
    );
    println!("| scenario | work | instr/unit no sockets | instr/unit sockets | overhead (instr) | wall no sockets (s) | wall sockets (s) | overhead (wall) | paper (Elvis, wall) |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let instr = match r.instructions {
            Some([a, b]) => format!("{a:.0} | {b:.0} | {:+.1} %", (b / a - 1.0) * 100.0),
            None => "n/a | n/a | n/a".to_string(),
        };
        let [a, b] = r.wall.median;
        let [q1, q3] = r.wall.quartiles_pct;
        println!(
            "| {} | {} | {instr} | {a:.3} | {b:.3} | {:+.1} % [{q1:+.1}, {q3:+.1}] | {} |",
            r.scenario.title(),
            r.scenario.describe(scale),
            r.wall.overhead_pct,
            r.scenario.paper()
        );
        if !r.ok {
            println!(
                "  {}: WRONG: the variants did different work or not the expected work: {:?}",
                r.scenario.title(),
                r.work
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_variants_put_the_same_frames_on_the_wire() {
        for s in Scenario::ALL {
            let (a, ok_a) = s.run(false, 0.0005);
            let (b, ok_b) = s.run(true, 0.0005);
            assert!(ok_a && ok_b, "{s:?}: {a:?} {b:?}");
            assert_eq!(a.frames_sent, b.frames_sent, "{s:?}");
            assert_eq!(a.frames_delivered, b.frames_delivered, "{s:?}");
            assert_eq!(a.sim_ns, b.sim_ns, "{s:?}");
        }
    }

    #[test]
    fn ping_pong_sends_one_frame_per_hop_plus_the_first() {
        let (w, _) = Scenario::PingPong.run(true, 0.0001);
        assert_eq!(w.frames_sent, 101);
    }

    #[test]
    fn callgrind_summary_line_is_parsed() {
        let err = "==12== Events    : Ir\n==12== Collected : 6248143\n==12==\n";
        assert_eq!(collected(err), Some(6_248_143));
        assert_eq!(collected("no valgrind here"), None);
        assert_eq!(collected("==12== Collected : 0\n"), None);
    }

    #[test]
    fn median_of_an_even_count_averages_the_middle_two() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn quartiles_interpolate_between_samples() {
        let mut v = [5.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(quantile(&mut v, 0.25), 2.0);
        assert_eq!(quantile(&mut v, 0.75), 4.0);
        assert_eq!(quantile(&mut [1.0, 2.0], 0.25), 1.25);
        assert_eq!(quantile(&mut [7.0], 0.75), 7.0);
    }
}
