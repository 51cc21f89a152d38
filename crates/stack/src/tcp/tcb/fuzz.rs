//! The body of the `tcp_input` fuzz target: arbitrary bytes decoded into a
//! sequence of operations on one [`Tcb`] (segments from the peer with any
//! flags, sequence and acknowledgment numbers, options and payload; timer
//! firings; application writes, reads, shutdown and abort), checking after
//! each one that nothing panicked and that the connection's invariants
//! hold.
//!
//! Sequence and acknowledgment numbers are drawn either absolute or
//! relative to the TCB's own `RCV.NXT` / `SND.UNA` / `SND.NXT`, so that a
//! fuzzer reaches in-window segments (and so every state) easily. The
//! first bytes choose an active or passive open, SACK, timestamps, Nagle,
//! keep-alive, ECN, the congestion control, buffer sizes, MTU and ISS/IRS. The
//! peer's byte stream is a fixed function of the sequence number, as is
//! ours of the offset from ISS, so the invariants can check content, not
//! only lengths:
//!
//! - `SND.UNA ≤ SND.NXT ≤ SND.MAX`, and what is outstanding is at most
//!   the send buffer plus SYN and FIN;
//! - the buffers never hold more than their capacity;
//! - every byte we send is the byte the application wrote at that
//!   sequence number, and no segment is longer than the MSS;
//! - the bytes the application reads are exactly the peer's stream from
//!   `IRS + 1` on, in order, never more than the peer sent;
//! - a RST is never answered with a RST (RFC 9293 §3.10.7);
//! - data outstanding in a synchronized state always has a timer that
//!   will retransmit it (RFC 6298 §5.1), so no connection stalls.
//!
//! # Gaps
//! One TCB, not two stacks in a simulation: the glue in `tcp.rs` (demux,
//! listeners, checksums) is covered by the wire fuzz target and the
//! integration tests instead.

use super::{State, Tcb};
use crate::tcp::keepalive::{Keepalive, KeepaliveTimer};
use crate::tcp::{EcnMode, LossDetection, TcpConfig};
use elvis_kernel::Time;
use elvis_message::Message;
use elvis_tcpcc::Algorithm;
use elvis_wire::tcp::{Control, Repr, SeqNumber};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

/// Our end of the connection under test (shared with the unit tests).
pub const LOCAL: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 40_000);
/// The peer's end.
pub const REMOTE: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 80);

#[cfg(test)]
thread_local! {
    /// Turns header prediction off (`Tcb::predicted`), so that a test can
    /// run the same operations through the slow path and compare.
    pub static NO_PREDICTION: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Segments that took the fast path (`Tcb::input_predicted`).
    pub static PREDICTED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Reads the fuzz input; past its end every read is zero.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }

    fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    fn u32(&mut self) -> u32 {
        u32::from(self.u16()) | u32::from(self.u16()) << 16
    }

    fn i16(&mut self) -> i16 {
        self.u16() as i16
    }
}

/// The peer's byte at sequence number `seq`.
fn peer_byte(seq: SeqNumber) -> u8 {
    (seq.0 ^ seq.0 >> 13)
        .wrapping_mul(0x9E37_79B1)
        .to_be_bytes()[0]
}

/// Our byte at offset `i` of the stream (from ISS + 1).
fn our_byte(i: usize) -> u8 {
    (i as u32 ^ 0x5A).wrapping_mul(0x85EB_CA6B).to_be_bytes()[0]
}

fn peer_payload(seq: SeqNumber, len: usize) -> Message {
    Message::from_vec((0..len).map(|i| peer_byte(seq + i)).collect())
}

/// The peer's SYN options from one flags byte (MSS, window scale, SACK
/// permitted, timestamps).
fn syn_options(c: &mut Cursor, r: &mut Repr) {
    let f = c.u8();
    if f & 1 != 0 {
        r.max_seg_size = Some(c.u16());
    }
    if f & 2 != 0 {
        r.window_scale = Some(c.u8() % 16);
    }
    r.sack_permitted = f & 4 != 0;
    if f & 8 != 0 {
        r.timestamp = Some((c.u32(), c.u32()));
    }
}

/// A segment from the peer with a 65 535-byte window and no options.
pub fn bare(control: Control, seq: SeqNumber, ack: Option<SeqNumber>) -> Repr {
    Repr {
        src_port: REMOTE.port(),
        dst_port: LOCAL.port(),
        control,
        seq_number: seq,
        ack_number: ack,
        window_len: 65_535,
        window_scale: None,
        max_seg_size: None,
        sack_permitted: false,
        sack_ranges: [None; 4],
        timestamp: None,
        ece: false,
        cwr: false,
        payload_len: 0,
    }
}

/// The state the checks carry between operations.
struct Harness {
    t: Tcb,
    now: Time,
    iss: SeqNumber,
    /// Bytes the application wrote.
    written: usize,
    /// Next sequence number the application will read (once synchronized).
    read_seq: Option<SeqNumber>,
    /// Payload bytes the peer injected, and bytes the application read.
    injected: usize,
    read: usize,
}

/// Runs the fuzz body over `data`. Panics if the TCB panics or breaks an
/// invariant of the module docs.
pub fn tcp_input(data: &[u8]) {
    let mut c = Cursor { data, pos: 0 };
    let mut h = Harness::open(&mut c);
    while !c.done() {
        h.step(&mut c);
    }
}

/// Runs the fuzz body over `data` twice in lockstep, with header
/// prediction and without, and panics unless both connections send the
/// same segments and reach the same state after every operation.
#[cfg(test)]
pub fn prediction_changes_nothing(data: &[u8]) {
    let slow = |f: &mut dyn FnMut()| {
        NO_PREDICTION.with(|p| p.set(true));
        f();
        NO_PREDICTION.with(|p| p.set(false));
    };
    let (mut cf, mut cs) = (Cursor { data, pos: 0 }, Cursor { data, pos: 0 });
    let mut fast = Harness::open(&mut cf);
    let mut h = None;
    slow(&mut || h = Some(Harness::open(&mut cs)));
    let Some(mut sl) = h else { return };
    let mut step = 0;
    while !cf.done() {
        let a = fast.step(&mut cf);
        let mut b = Vec::new();
        slow(&mut || b = sl.step(&mut cs));
        let key = |o: &[super::Segment]| -> Vec<_> {
            o.iter()
                .map(|s| (s.repr, s.payload.clone(), s.ect))
                .collect()
        };
        assert_eq!(key(&a), key(&b), "segments differ at step {step}");
        assert_eq!(fast.t.stats(), sl.t.stats(), "stats differ at step {step}");
        assert_eq!(
            fast.t.deadline(),
            sl.t.deadline(),
            "timers differ at step {step}"
        );
        assert_eq!(fast.t.state, sl.t.state);
        assert_eq!(
            (
                fast.t.rcv_nxt,
                fast.t.ts_recent,
                fast.t.ack_pending,
                fast.t.ack_now
            ),
            (sl.t.rcv_nxt, sl.t.ts_recent, sl.t.ack_pending, sl.t.ack_now),
            "receive state differs at step {step}"
        );
        step += 1;
    }
}

impl Harness {
    /// Decodes the setup bytes and opens the connection.
    fn open(c: &mut Cursor) -> Harness {
        let setup = c.u8();
        let sizes = c.u8();
        let cfg = TcpConfig {
            sack: setup & 2 != 0,
            timestamps: setup & 4 != 0,
            congestion: match setup >> 4 & 3 {
                0 => Algorithm::NewReno,
                2 => Algorithm::Compound,
                3 => Algorithm::Bbr,
                _ => Algorithm::Cubic,
            },
            sndbuf: 1 << (8 + (sizes & 0xf) % 15),
            rcvbuf: 1 << (8 + (sizes >> 4) % 15),
            ecn: if setup & 0x80 != 0 {
                EcnMode::On
            } else {
                EcnMode::Accept
            },
            // (A low nibble of 15 gives the same buffer as 0: it picks the
            // RFC 6675 loss detection instead of RACK-TLP.)
            loss_detection: if sizes & 0xf == 0xf {
                LossDetection::Rfc6675
            } else {
                LossDetection::Rack
            },
            ..TcpConfig::default()
        };
        let mtu = 68 + usize::from(c.u16() % 9_000);
        let iss = SeqNumber(c.u32());
        let irs = SeqNumber(c.u32());
        let cc = elvis_tcpcc::new(cfg.congestion, (mtu - 40) as u64, 10);
        let t = if setup & 1 == 0 {
            Tcb::connect(&cfg, LOCAL, REMOTE, iss, cc, mtu)
        } else {
            let mut syn = bare(Control::Syn, irs, None);
            syn_options(c, &mut syn);
            (syn.ece, syn.cwr) = (setup & 0x80 != 0, setup & 0x80 != 0);
            Tcb::accept(&cfg, LOCAL, REMOTE, iss, cc, mtu, &syn)
        };
        let mut h = Harness {
            t,
            now: Time::ZERO,
            iss,
            written: 0,
            read_seq: None,
            injected: 0,
            read: 0,
        };
        h.t.nodelay = setup & 8 != 0;
        if setup & 0x40 != 0 {
            let k = Keepalive {
                time: Duration::from_secs(1 + u64::from(c.u8())),
                interval: Duration::from_secs(1 + u64::from(c.u8() % 100)),
                probes: 1 + u32::from(c.u8() % 10),
            };
            h.t.keepalive = Some(Box::new(KeepaliveTimer::new(k, Some(Time::ZERO))));
        }
        let mut out = Vec::new();
        h.t.output(h.now, &mut out);
        h.check(&out, false);
        h
    }

    /// Decodes and applies one operation; returns the segments sent.
    fn step(&mut self, c: &mut Cursor) -> Vec<super::Segment> {
        let mut out = Vec::new();
        let mut got_rst = false;
        let fx = match c.u8() % 8 {
            0 | 1 => {
                let (repr, payload) = self.segment(c);
                got_rst = repr.control == Control::Rst;
                self.injected += payload.len();
                // Any IPv4 ECN codepoint, CE included.
                let ip_ecn = u8::from(repr.ece) << 1 | u8::from(repr.cwr);
                self.t.input_ecn(self.now, &repr, ip_ecn, payload, &mut out)
            }
            2 => {
                let step = c.u16();
                self.now = match self.t.deadline() {
                    Some(d) if step & 1 == 0 => d.max(self.now),
                    _ => self.now + Duration::from_micros(u64::from(step) * 100),
                };
                self.t.on_timer(self.now, &mut out)
            }
            3 => {
                let n = usize::from(c.u16()).min(self.t.send_space());
                let data = (self.written..self.written + n).map(our_byte).collect();
                self.t.write(Message::from_vec(data));
                self.written += n;
                self.t.output(self.now, &mut out);
                Default::default()
            }
            4 => {
                let m = self.t.read(usize::from(c.u16()));
                self.check_read(&m);
                Default::default()
            }
            5 => {
                self.t.shutdown_write();
                self.t.output(self.now, &mut out);
                Default::default()
            }
            6 => {
                out.extend(self.t.abort());
                Default::default()
            }
            _ => {
                let b = c.u8();
                self.t.budget = if b == 255 { u32::MAX } else { u32::from(b) };
                if b & 1 != 0 {
                    self.t.nodelay = !self.t.nodelay;
                }
                self.t.output(self.now, &mut out);
                Default::default()
            }
        };
        if fx.closed {
            assert_eq!(self.t.state, State::Closed, "closed effect while open");
        }
        self.check(&out, got_rst);
        out
    }

    /// Builds a segment from the peer, numbers absolute or relative.
    fn segment(&self, c: &mut Cursor) -> (Repr, Message) {
        let t = &self.t;
        let f = c.u8();
        let control = [
            Control::None,
            Control::Psh,
            Control::Syn,
            Control::Fin,
            Control::Rst,
        ][usize::from(f % 5)];
        let seq = match f >> 3 & 3 {
            0 => t.rcv_nxt + c.i16() as usize,
            1 => t.rcv_nxt,
            2 => SeqNumber(c.u32()),
            _ => t.rcv_nxt - usize::from(c.u8()),
        };
        let ack = match f >> 5 & 7 {
            0 => None,
            1 => Some(t.snd_una + c.i16() as usize),
            2 => Some(SeqNumber(c.u32())),
            3 => Some(t.snd_nxt + c.i16() as usize),
            _ => Some(t.snd_max),
        };
        let mut r = bare(control, seq, ack);
        r.window_len = c.u16();
        let opts = c.u8();
        if opts & 1 != 0 {
            syn_options(c, &mut r);
        }
        if opts & 2 != 0 {
            r.timestamp = Some((c.u32(), c.u32()));
        }
        for i in 0..usize::from(opts >> 2 & 3) {
            let s = t.snd_una + usize::from(c.u16());
            r.sack_ranges[i] = Some((s.0, (s + usize::from(c.u16())).0));
        }
        r.ece = opts & 0x10 != 0;
        r.cwr = opts & 0x20 != 0;
        let len = match opts >> 6 {
            0 => 0,
            1 => usize::from(c.u8()),
            _ => usize::from(c.u16() % 9_000),
        };
        let first = seq + usize::from(control == Control::Syn);
        r.payload_len = len;
        (r, peer_payload(first, len))
    }

    fn check_read(&mut self, m: &Message) {
        if m.is_empty() {
            return;
        }
        let start = self.read_seq.expect("data read before synchronization");
        for (i, b) in m.to_vec().into_iter().enumerate() {
            assert_eq!(
                b,
                peer_byte(start + i),
                "byte {i} of a read is not the peer's"
            );
        }
        self.read_seq = Some(start + m.len());
        self.read += m.len();
        assert!(self.read <= self.injected, "read more than the peer sent");
    }

    /// Checks the invariants after an operation that produced `out`.
    fn check(&mut self, out: &[super::Segment], got_rst: bool) {
        let t = &self.t;
        if self.read_seq.is_none() && !matches!(t.state, State::SynSent | State::Closed) {
            self.read_seq = Some(t.rcv_nxt);
        }
        assert!(t.snd_nxt - t.snd_una >= 0, "SND.NXT below SND.UNA");
        assert!(t.snd_max - t.snd_nxt >= 0, "SND.NXT beyond SND.MAX");
        let outstanding = (t.snd_max - t.snd_una) as usize;
        assert!(
            outstanding <= t.sndbuf.len() + 2,
            "outstanding beyond the buffer"
        );
        assert!(t.sndbuf.len() <= t.sndbuf_cap());
        assert!(t.rcvbuf.held() <= t.rcvbuf_cap(), "receive buffer overfull");
        for s in out {
            assert_eq!(
                (s.repr.src_port, s.repr.dst_port),
                (LOCAL.port(), REMOTE.port())
            );
            assert!(
                !(got_rst && s.repr.control == Control::Rst),
                "RST answered with RST"
            );
            let len = s.payload.len();
            assert_eq!(s.repr.payload_len, len);
            // RFC 3168 §6.1.1, §6.1.4: SYNs and pure ACKs are never ECT
            // (the harness draws no DCTCP connection, whose every
            // segment is).
            assert!(!s.ect || (len > 0 && s.repr.control != Control::Syn));
            if len == 0 {
                continue;
            }
            assert!(
                len <= t.mss as usize,
                "segment of {len} bytes beyond MSS {}",
                t.mss
            );
            let offset = s.repr.seq_number - (self.iss + 1);
            assert!(offset >= 0, "data before ISS + 1");
            let offset = offset as usize;
            assert!(offset + len <= self.written, "sent bytes never written");
            for (i, b) in s.payload.to_vec().into_iter().enumerate() {
                assert_eq!(b, our_byte(offset + i), "sent byte {} is wrong", offset + i);
            }
        }
        let synchronized = matches!(
            t.state,
            State::Established
                | State::FinWait1
                | State::Closing
                | State::LastAck
                | State::CloseWait
        );
        if synchronized && t.snd_una != t.snd_max {
            assert!(t.deadline().is_some(), "outstanding data with no timer");
        }
    }
}

#[cfg(test)]
mod test {
    use super::tcp_input;
    use proptest::prelude::*;

    /// 1000 cases, or `PROPTEST_CASES` for a longer campaign.
    fn config() -> ProptestConfig {
        let cases = std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000);
        ProptestConfig::with_cases(cases)
    }

    /// A xorshift stream (the test needs no more).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Returns a fuzz input shaped like a bulk transfer in both directions:
    /// a passive open, then mostly in-order segments (data and ACKs, with
    /// timestamps that usually advance) among writes, reads, timers and
    /// NIC budgets, so that most segments are candidates for the fast path.
    fn bulk_like(r: &mut Rng) -> Vec<u8> {
        let mut d = Vec::new();
        let le16 = |d: &mut Vec<u8>, v: u16| d.extend_from_slice(&v.to_le_bytes());
        // Passive open; SACK, timestamps, Nagle and ECN vary; no keep-alive.
        let setup = 1 | (r.next() as u8 & 0xbe);
        d.extend_from_slice(&[setup, r.next() as u8 | 0x88]);
        le16(&mut d, 1_400 + r.below(200) as u16);
        d.extend_from_slice(&r.next().to_le_bytes()); // ISS, IRS
        d.push(0x0f); // the SYN's options: MSS, window scale, SACK, TS
        le16(&mut d, 1_460);
        d.push(r.below(10) as u8);
        d.extend_from_slice(&100u32.to_le_bytes());
        d.extend_from_slice(&0u32.to_le_bytes());
        let mut tsval = 100u32;
        for _ in 0..80 {
            match r.below(20) {
                0..=10 => {
                    d.push(0); // a segment
                    let ctrl = if r.below(8) == 0 { 1 } else { 0 };
                    let ack = match r.below(6) {
                        0 => 1, // SND.UNA + i16
                        1 => 3, // SND.NXT + i16
                        _ => 4, // SND.MAX
                    };
                    let seq = if r.below(10) == 0 { 0 } else { 1 }; // + i16, or RCV.NXT
                                                                    // The control is the byte modulo 5 (None, Psh, ...): its
                                                                    // low three bits are free for that.
                    let high = seq << 3 | ack << 5;
                    let low = (0..8u8).find(|l| (high + l) % 5 == ctrl).unwrap_or(0);
                    d.push(high + low);
                    if seq == 0 {
                        le16(&mut d, r.below(3_000) as u16);
                    }
                    if ack != 4 {
                        le16(&mut d, (r.below(4_000) as i16 - 1_000) as u16);
                    }
                    le16(&mut d, 0xff00 | r.below(256) as u16); // window
                    let ts = r.below(8) != 0;
                    let sack = u8::from(r.below(10) == 0);
                    let len_mode = [0u8, 0, 1, 2, 2, 2][r.below(6) as usize];
                    d.push(u8::from(ts) << 1 | sack << 2 | len_mode << 6);
                    if ts {
                        tsval = tsval.wrapping_add(r.below(50) as u32).wrapping_sub(3);
                        d.extend_from_slice(&tsval.to_le_bytes());
                        d.extend_from_slice(&(r.below(1_000) as u32).to_le_bytes());
                    }
                    for _ in 0..sack {
                        le16(&mut d, r.below(20_000) as u16);
                        le16(&mut d, r.below(3_000) as u16);
                    }
                    match len_mode {
                        1 => d.push(r.next() as u8),
                        2 => le16(
                            &mut d,
                            [1_448, 1_448, 1_448, 700, 2_000][r.below(5) as usize],
                        ),
                        _ => {}
                    }
                }
                11..=13 => {
                    d.push(3); // write
                    le16(&mut d, r.below(20_000) as u16);
                }
                14..=16 => {
                    d.push(4); // read
                    le16(&mut d, r.below(20_000) as u16);
                }
                17 | 18 => {
                    d.push(2); // time passes, or the next timer fires
                    le16(&mut d, r.below(2_000) as u16);
                }
                _ => {
                    d.push(7); // NIC budget
                    d.push(r.below(40) as u8 & !1);
                }
            }
        }
        d
    }

    /// Header prediction is taken, and changes nothing, on bulk-transfer
    /// shaped inputs (the proptest below covers arbitrary ones, which
    /// rarely reach the fast path).
    #[test]
    fn the_fast_path_changes_nothing_on_bulk_like_inputs() {
        let before = super::PREDICTED.with(std::cell::Cell::get);
        let mut r = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..400 {
            super::prediction_changes_nothing(&bulk_like(&mut r));
        }
        let hits = super::PREDICTED.with(std::cell::Cell::get) - before;
        assert!(hits >= 5_000, "only {hits} predicted segments");
    }

    proptest! {
        #![proptest_config(config())]

        /// Header prediction sends what the slow path sends and leaves
        /// the same state, for arbitrary operation sequences.
        #[test]
        fn header_prediction_behaves_as_the_full_input_processing(
            data in proptest::collection::vec(any::<u8>(), 0..1500)
        ) {
            super::prediction_changes_nothing(&data);
        }

        /// Arbitrary operation sequences never panic or break an invariant.
        #[test]
        fn no_operation_sequence_panics_or_breaks_an_invariant(
            data in proptest::collection::vec(any::<u8>(), 0..1500)
        ) {
            tcp_input(&data);
        }
    }
}
