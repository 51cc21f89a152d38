//! The glue that runs smoltcp as a foreign machine: a smoltcp `Device`
//! over the simulator's frames, a one-connection bulk application on a
//! smoltcp TCP socket, and a seeded frame reorderer.
//!
//! The foreign stack ([`Smol`]) is called by the simulator when a frame
//! arrives and when it asked to be polled. Each call runs `Interface::poll`
//! with the virtual time (smoltcp counts microseconds: the time is
//! truncated to µs), lets the application read and write its socket, polls
//! again so that what the application queued goes out, hands the frames
//! smoltcp produced to the simulated NIC, and asks to be polled again at
//! `Interface::poll_at`.

use super::{pattern_check, pattern_fill, CLIENT_STREAM, SERVER_STREAM};
use elvis_kernel::rng::{self, Rng, StreamKind};
use elvis_sim::foreign::TransmitError;
use elvis_sim::{ForeignCtx, ForeignStack, Time};
use rand::Rng as _;
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::{Device, DeviceCapabilities, Medium};
use smoltcp::socket::tcp;
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpCidr};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::rc::Rc;

/// The smoltcp machine's part in the conversation.
#[derive(Clone, Copy, Debug)]
pub enum Role {
    /// Listens on the port; reads the client's stream to its end, then
    /// sends `bytes` of its own and closes (the passive close).
    Server { port: u16 },
    /// Connects; sends `bytes`, closes its half (the active close), then
    /// reads the server's stream to its end.
    Client { to: SocketAddrV4, local_port: u16 },
}

/// How the smoltcp machine is set up.
#[derive(Clone, Copy, Debug)]
pub struct SmolConfig {
    pub ip: Ipv4Addr,
    pub role: Role,
    /// Bytes this side sends (and expects from the other side).
    pub bytes: u64,
    /// Seeds smoltcp (ISNs, ports) and the reorderer.
    pub seed: u64,
    /// Probability that a frame (either direction) is held back.
    pub reorder: f64,
}

/// What the smoltcp side saw, read by the test after the run.
#[derive(Debug, Default)]
pub struct SmolOutcome {
    /// Bytes read from the socket.
    pub received: u64,
    /// Offset of the first byte that differed from the expected pattern.
    pub first_mismatch: Option<u64>,
    /// The peer's stream ended (FIN received and everything read).
    pub eof: bool,
    /// Bytes queued on the socket.
    pub sent: u64,
    /// Every state the socket went through, in order, with the time (ns).
    pub states: Vec<(tcp::State, u64)>,
    /// Frames the reorderer held back (both directions).
    pub reordered: u64,
    /// Times a frame waited for NIC room (frames are never dropped here).
    pub nic_full_waits: u64,
}

impl SmolOutcome {
    /// Returns the names of the states gone through.
    pub fn state_names(&self) -> Vec<tcp::State> {
        self.states.iter().map(|s| s.0).collect()
    }
}

/// smoltcp's `Device`: frames handed in by the simulator wait in `rx`;
/// frames smoltcp emits collect in `tx` until the call returns.
struct Dev {
    rx: VecDeque<Vec<u8>>,
    tx: Vec<Vec<u8>>,
    /// NIC slots left for this call.
    room: usize,
    /// smoltcp asked to transmit and the NIC had no room.
    blocked: bool,
    mtu: usize,
}

struct RxTok(Vec<u8>);
struct TxTok<'a> {
    tx: &'a mut Vec<Vec<u8>>,
    room: &'a mut usize,
}

impl smoltcp::phy::RxToken for RxTok {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

impl smoltcp::phy::TxToken for TxTok<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut frame = vec![0u8; len];
        let r = f(&mut frame);
        *self.room = self.room.saturating_sub(1);
        self.tx.push(frame);
        r
    }
}

impl Device for Dev {
    type RxToken<'a> = RxTok;
    type TxToken<'a> = TxTok<'a>;

    fn receive(&mut self, _: Instant) -> Option<(RxTok, TxTok<'_>)> {
        // A reply to a received frame is always accepted: if the NIC is
        // full it waits (`Smol::pending`) for room.
        let frame = self.rx.pop_front()?;
        let tx = TxTok {
            tx: &mut self.tx,
            room: &mut self.room,
        };
        Some((RxTok(frame), tx))
    }

    fn transmit(&mut self, _: Instant) -> Option<TxTok<'_>> {
        if self.room == 0 {
            self.blocked = true;
            return None;
        }
        Some(TxTok {
            tx: &mut self.tx,
            room: &mut self.room,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        // smoltcp counts the Ethernet header in its MTU.
        caps.max_transmission_unit = self.mtu + 14;
        caps
    }
}

/// Holds a frame back with probability `p` and releases it after the next
/// 1–3 frames of the same direction, or after 1 ms if none come.
struct Reorder {
    rng: Rng,
    p: f64,
    held: Option<Held>,
    count: u64,
}

struct Held {
    frame: Vec<u8>,
    after: u32,
    deadline: u64,
}

/// How long a held frame waits at most for frames to overtake it, ns.
const HOLD_NS: u64 = 1_000_000;

impl Reorder {
    fn new(seed: u64, id: u64, p: f64) -> Self {
        Reorder {
            rng: rng::stream(seed, StreamKind::Application, 0xfe00 + id),
            p,
            held: None,
            count: 0,
        }
    }

    /// Passes `frame` through; returns the frames to deliver now, in order.
    fn pass(&mut self, frame: Vec<u8>, now: u64) -> Vec<Vec<u8>> {
        if self.p <= 0.0 {
            return vec![frame];
        }
        if let Some(h) = self.held.as_mut() {
            h.after -= 1;
            if h.after == 0 {
                let h = self.held.take().expect("held");
                return vec![frame, h.frame];
            }
            return vec![frame];
        }
        if self.rng.random::<f64>() < self.p {
            self.count += 1;
            let after = self.rng.random_range(1..=3);
            self.held = Some(Held {
                frame,
                after,
                deadline: now + HOLD_NS,
            });
            return Vec::new();
        }
        vec![frame]
    }

    /// Returns the held frame if its deadline passed.
    fn expire(&mut self, now: u64) -> Option<Vec<u8>> {
        if self.held.as_ref().is_some_and(|h| h.deadline <= now) {
            return self.held.take().map(|h| h.frame);
        }
        None
    }

    fn deadline(&self) -> Option<u64> {
        self.held.as_ref().map(|h| h.deadline)
    }
}

/// Where the application is in its script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Start,
    Receiving,
    Sending,
    Closed,
}

/// A smoltcp machine running one bulk connection.
pub struct Smol {
    cfg: SmolConfig,
    iface: Option<Interface>,
    dev: Dev,
    sockets: SocketSet<'static>,
    handle: SocketHandle,
    phase: Phase,
    rx_reorder: Reorder,
    tx_reorder: Reorder,
    /// Frames on their way to the NIC (released by the reorderer, or
    /// refused by a full NIC): sent first, in order, at the next turn.
    pending: VecDeque<Vec<u8>>,
    out: Rc<RefCell<SmolOutcome>>,
}

/// smoltcp's receive and send buffers: over 64 KiB, so smoltcp offers
/// window scaling.
const BUFFER: usize = 256 * 1024;

impl Smol {
    /// Returns the stack and the outcome it fills in.
    pub fn new(cfg: SmolConfig) -> (Self, Rc<RefCell<SmolOutcome>>) {
        let mut sockets = SocketSet::new(Vec::new());
        let sock = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; BUFFER]),
            tcp::SocketBuffer::new(vec![0; BUFFER]),
        );
        let handle = sockets.add(sock);
        let out = Rc::new(RefCell::new(SmolOutcome::default()));
        let smol = Smol {
            cfg,
            iface: None,
            dev: Dev {
                rx: VecDeque::new(),
                tx: Vec::new(),
                room: 0,
                blocked: false,
                mtu: 1500,
            },
            sockets,
            handle,
            phase: Phase::Start,
            rx_reorder: Reorder::new(cfg.seed, 0, cfg.reorder),
            tx_reorder: Reorder::new(cfg.seed, 1, cfg.reorder),
            pending: VecDeque::new(),
            out: out.clone(),
        };
        (smol, out)
    }

    /// Creates the interface on the first call, once the MAC is known.
    fn iface(&mut self, cx: &ForeignCtx<'_>, now: Instant) -> &mut Interface {
        if self.iface.is_none() {
            self.dev.mtu = cx.mtu(0).expect("attached") as usize;
            let mac = EthernetAddress(cx.mac(0).expect("attached"));
            let mut config = Config::new(HardwareAddress::Ethernet(mac));
            config.random_seed = self.cfg.seed;
            let mut iface = Interface::new(config, &mut self.dev, now);
            iface.update_ip_addrs(|a| {
                a.push(IpCidr::new(self.cfg.ip.into(), 24))
                    .expect("one address");
            });
            self.iface = Some(iface);
        }
        self.iface.as_mut().expect("created")
    }

    /// One turn: poll, run the application, poll, transmit, re-arm.
    fn step(&mut self, cx: &mut ForeignCtx<'_>) {
        let ns = cx.now().as_nanos();
        let now = Instant::from_micros((ns / 1000) as i64);
        if let Some(f) = self.rx_reorder.expire(ns) {
            self.dev.rx.push_back(f);
        }
        if let Some(f) = self.tx_reorder.expire(ns) {
            self.pending.push_back(f);
        }
        self.flush(cx);
        // After the flush either nothing is pending or the NIC is full.
        self.dev.room = if self.pending.is_empty() {
            cx.nic_room(0) as usize
        } else {
            0
        };
        self.dev.blocked = self.dev.room == 0;
        self.iface(cx, now);
        // Poll, let the application act, and poll again while it does
        // something (its writes, window updates and closes go out now).
        for round in 0.. {
            let iface = self.iface.as_mut().expect("created");
            iface.poll(now, &mut self.dev, &mut self.sockets);
            if !self.app(now) || round == 4 {
                break;
            }
        }
        for f in std::mem::take(&mut self.dev.tx) {
            let passed = self.tx_reorder.pass(f, ns);
            self.pending.extend(passed);
        }
        self.flush(cx);
        if self.dev.blocked || !self.pending.is_empty() {
            // Registers for a poll when the NIC frees a slot.
            let _ = cx.can_transmit(0);
        }
        self.rearm(cx, now, ns);
        let mut out = self.out.borrow_mut();
        out.reordered = self.rx_reorder.count + self.tx_reorder.count;
    }

    /// Hands pending frames to the NIC while it has room; the rest wait
    /// for the next turn (nothing is dropped here).
    fn flush(&mut self, cx: &mut ForeignCtx<'_>) {
        while let Some(f) = self.pending.front() {
            match cx.transmit(f) {
                Ok(()) => {
                    self.pending.pop_front();
                }
                Err(TransmitError::NicFull(_)) => {
                    self.out.borrow_mut().nic_full_waits += 1;
                    return;
                }
                Err(e) => panic!("smoltcp produced a frame the NIC rejects: {e}"),
            }
        }
    }

    /// Asks to be polled when smoltcp or the reorderer next needs it.
    fn rearm(&mut self, cx: &mut ForeignCtx<'_>, now: Instant, ns: u64) {
        let iface = self.iface.as_mut().expect("created");
        let mut at = iface.poll_at(now, &self.sockets).and_then(|t| {
            let t = t.total_micros().max(0) as u64 * 1000;
            if t > ns {
                Some(t)
            } else if self.dev.blocked {
                None // the NIC-room poll comes first
            } else {
                Some((ns / 1000 + 1) * 1000) // smoltcp's next microsecond
            }
        });
        for d in [self.rx_reorder.deadline(), self.tx_reorder.deadline()]
            .into_iter()
            .flatten()
        {
            at = Some(at.map_or(d, |a| a.min(d)));
        }
        if let Some(at) = at {
            cx.poll_at(Time::from_nanos(at));
        }
    }

    /// The application: drives the socket through the role's script.
    /// Returns true if it did something (moved data, changed phase).
    fn app(&mut self, now: Instant) -> bool {
        let s = self.sockets.get_mut::<tcp::Socket>(self.handle);
        let mut out = self.out.borrow_mut();
        let ns = now.total_micros() as u64 * 1000;
        let before = (self.phase, out.received, out.sent);
        if out.states.last().map(|x| x.0) != Some(s.state()) {
            out.states.push((s.state(), ns));
        }
        match (self.phase, self.cfg.role) {
            (Phase::Start, Role::Server { port }) => {
                s.listen(port).expect("listen");
                self.phase = Phase::Receiving;
            }
            (Phase::Start, Role::Client { to, local_port }) => {
                let iface = self.iface.as_mut().expect("created");
                s.connect(iface.context(), to, local_port).expect("connect");
                self.phase = Phase::Sending;
            }
            (Phase::Receiving, role) => {
                let expect = match role {
                    Role::Server { .. } => CLIENT_STREAM,
                    Role::Client { .. } => SERVER_STREAM,
                };
                while s.can_recv() {
                    let at = out.received;
                    let (len, bad) = s
                        .recv(|buf| (buf.len(), (buf.len(), pattern_check(expect, at, buf))))
                        .expect("recv");
                    if out.first_mismatch.is_none() {
                        out.first_mismatch = bad;
                    }
                    out.received += len as u64;
                }
                let established_once = out.states.iter().any(|x| x.0 == tcp::State::Established);
                if established_once && !s.may_recv() {
                    out.eof = true;
                    self.phase = match role {
                        Role::Server { .. } => Phase::Sending,
                        Role::Client { .. } => Phase::Closed,
                    };
                }
            }
            (Phase::Sending, role) => {
                let stream = match role {
                    Role::Server { .. } => SERVER_STREAM,
                    Role::Client { .. } => CLIENT_STREAM,
                };
                while s.can_send() && out.sent < self.cfg.bytes {
                    let at = out.sent;
                    let left = self.cfg.bytes - at;
                    let n = s
                        .send(|buf| {
                            let n = buf.len().min(left as usize);
                            pattern_fill(stream, at, &mut buf[..n]);
                            (n, n)
                        })
                        .expect("send");
                    out.sent += n as u64;
                }
                if out.sent == self.cfg.bytes {
                    s.close();
                    self.phase = match role {
                        Role::Server { .. } => Phase::Closed,
                        Role::Client { .. } => Phase::Receiving,
                    };
                }
            }
            (Phase::Closed, _) => {}
        }
        if out.states.last().map(|x| x.0) != Some(s.state()) {
            out.states.push((s.state(), ns));
        }
        before != (self.phase, out.received, out.sent)
    }
}

impl ForeignStack for Smol {
    fn receive(&mut self, cx: &mut ForeignCtx<'_>, _iface: usize, frame: &[u8]) {
        let ns = cx.now().as_nanos();
        for f in self.rx_reorder.pass(frame.to_vec(), ns) {
            self.dev.rx.push_back(f);
        }
        self.step(cx);
    }

    fn poll(&mut self, cx: &mut ForeignCtx<'_>) {
        self.step(cx);
    }
}
