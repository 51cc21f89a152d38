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
//! only start each exchange (`Host::send_ip`).
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
//! sockets), no rate limit. Each variant runs 3 times, alternating, and the
//! fastest is reported (wall time is noisy on a shared machine).

use crate::Measurement;
use elvis_message::{ChunkRef, Message};
use elvis_sim::stack::custom::{Protocol, ProtocolCtx};
use elvis_sim::{Host, MachineId, NetworkConfig, NetworkKind, Protocols, Simulation};
use elvis_wire::checksum::{self, Checksum};
use elvis_wire::{udp, IpProtocol};
use std::cell::Cell;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::rc::Rc;
use std::time::Instant;

/// The IP protocol number of the socket-less variant.
const PROTO: u8 = 253;
/// The server / capture port.
const PORT: u16 = 0xbeef;
/// Message size (bytes of application payload).
const PAYLOAD: usize = 32;

fn sum_message(sum: &mut Checksum, msg: &Message) {
    for chunk in msg.chunks() {
        match chunk {
            ChunkRef::Bytes(b) => sum.add(b),
            ChunkRef::Zeros(n) => sum.add_zeros(n),
        }
    }
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

/// Basic: `iters` simulations of one message; returns messages captured.
fn basic(sockets: bool, iters: u64) -> u64 {
    let done = Rc::new(Cell::new(0u64));
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
            add_app(&mut sim, capture, 1, PORT, Rule::Capture, &done);
            sim.spawn(sender, "send_message", |h: Host| async move {
                let mut m = payload(0);
                encap(&mut m, ip(0), ip(1), 49_152, PORT);
                h.send_ip(ip(1), PROTO, m)?;
                Ok(())
            });
        }
        sim.run();
    }
    done.get()
}

/// Ping Pong: one message bounced `hops` times between two machines.
/// Returns the number of sides that saw the end (2 with sockets, where
/// both tasks must finish; 1 without, the receiver of the last message).
fn ping_pong(sockets: bool, hops: u32) -> u64 {
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
                        break;
                    }
                    s.send_to(payload(c - 1), from).await?;
                    if c == 1 {
                        break;
                    }
                }
                d.set(d.get() + 1);
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
    sim.run();
    done.get()
}

/// Server Client: `clients` clients, `rounds + 1` request/reply each
/// (counting down to 0), one server. Returns the clients that finished.
fn server_client(sockets: bool, clients: u32, rounds: u32) -> u64 {
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
    sim.run();
    done.get()
}

/// Times `f` for each variant, 3 times alternating; returns the fastest
/// (seconds) and whether every run did the expected work.
fn compare(f: &dyn Fn(bool) -> bool) -> (f64, f64, bool) {
    let (mut best, mut ok) = ([f64::MAX; 2], true);
    for _ in 0..3 {
        for (i, sockets) in [false, true].into_iter().enumerate() {
            let t = Instant::now();
            ok &= f(sockets);
            best[i] = best[i].min(t.elapsed().as_secs_f64());
        }
    }
    (best[0], best[1], ok)
}

/// Runs one scenario variant once (for profilers): `basic`, `ping-pong`
/// or `server-client`, with or without sockets.
pub fn profile(scale: f64, name: &str, sockets: bool) -> bool {
    let n = |base: f64| ((base * scale).round() as u64).max(1);
    match name {
        "basic" => basic(sockets, n(20_000.0)) > 0,
        "ping-pong" => ping_pong(sockets, n(1_000_000.0) as u32) > 0,
        "server-client" => server_client(sockets, 10, n(50_000.0) as u32) > 0,
        _ => false,
    }
}

/// Runs the three scenarios; prints a table, returns the measurement.
pub fn run(scale: f64) -> Measurement {
    let n = |base: f64| ((base * scale).round() as u64).max(1);
    let basic_iters = n(20_000.0);
    let hops = n(1_000_000.0) as u32;
    let (clients, rounds) = (10u32, n(50_000.0) as u32);
    let rows = [
        (
            "Basic",
            format!("{basic_iters} simulations of 1 message"),
            compare(&|s| basic(s, basic_iters) == basic_iters),
        ),
        (
            "Ping Pong",
            format!("{hops} hops"),
            compare(&|s| ping_pong(s, hops) == if s { 2 } else { 1 }),
        ),
        (
            "Server Client",
            format!("{clients} clients x {rounds} round trips"),
            compare(&|s| server_client(s, clients, rounds) == u64::from(clients)),
        ),
    ];
    println!("| scenario | work | no sockets (s) | sockets (s) | overhead | paper (Elvis) |");
    println!("|---|---|---:|---:|---:|---:|");
    let paper = ["+49 %", "+48 %", "+20 %"];
    let mut extra = serde_json::Map::new();
    let mut all_ok = true;
    for ((name, work, (without, with, ok)), paper) in rows.iter().zip(paper) {
        let overhead = (with / without - 1.0) * 100.0;
        println!("| {name} | {work} | {without:.3} | {with:.3} | {overhead:+.1} % | {paper} |");
        extra.insert(
            name.to_string(),
            serde_json::json!({ "work": work, "no_sockets_s": without, "sockets_s": with, "overhead_pct": overhead, "ok": ok }),
        );
        all_ok &= *ok;
    }
    Measurement {
        scenario: "socket-overhead".into(),
        ok: all_ok,
        extra: serde_json::Value::Object(extra),
        ..Default::default()
    }
}
