//! The wireless network on its own (a test context, no stack): timing
//! against the closed forms of 802.11's frame exchange, DCF saturation
//! throughput against Bianchi's model, hidden terminals, connectivity.

use super::phy::{Standard, ACK_BYTES, DATA_OVERHEAD, RTS_BYTES};
use super::*;
use crate::*;
use elvis_kernel::{EventQueue, Time};
use elvis_message::Message;

/// A context that counts what reached each machine and can keep every
/// sender saturated.
#[derive(Default)]
struct Ctx {
    fabric: Fabric,
    queue: EventQueue<NetEvent>,
    /// (time, receiving port, sending port, bytes).
    arrivals: Vec<(u64, u32, u32, usize)>,
    /// Link failures reported: (sending port, destination port).
    failures: Vec<(u32, u32)>,
    /// Senders to give a new frame (saturation).
    refill: Vec<u32>,
    saturate: bool,
    /// Frame length of the saturated senders, bytes.
    len: usize,
    /// Destination of each saturated sender (`None`: broadcast).
    dst: Vec<Option<u32>>,
}

impl Context for Ctx {
    fn fabric(&self) -> &Fabric {
        &self.fabric
    }
    fn fabric_mut(&mut self) -> &mut Fabric {
        &mut self.fabric
    }
    fn now(&self) -> Time {
        self.queue.now()
    }
    fn schedule(&mut self, at: Time, event: NetEvent) {
        self.queue.schedule(at, event.net(), event);
    }
    fn dropped(&mut self, _: DropReason) {}
    fn arrived(&mut self, net: NetId, port: u32, frame: FrameId) {
        let frame = self.fabric.frames.remove(frame as usize);
        self.received(net, port, &mut frame.clone(), false);
    }
    fn received(&mut self, net: NetId, port: u32, frame: &mut Message, _: bool) {
        let mut src = [0u8; 6];
        frame.copy_to_slice(6, &mut src).expect("a frame");
        let from = self.fabric.networks[net as usize]
            .port_of_mac(src)
            .expect("a sender");
        let now = self.queue.now().as_nanos();
        self.arrivals.push((now, port, from, frame.len()));
        if self.saturate && self.dst[from as usize] == Some(port) {
            self.refill.push(from);
        }
    }
    fn take_early(&mut self, _: MachineId, _: IfaceId, _: FrameId, _: u64) -> bool {
        false
    }
    fn wake_task(&mut self, _: TaskId) {}
    fn room_for_stack(&mut self, _: MachineId) {}
    fn room_for_endpoint(&mut self, _: MachineId, _: u32) {}
    fn link_failed(&mut self, net: NetId, port: u32, dst: [u8; 6], _: Message) {
        let to = self.fabric.networks[net as usize].port_of_mac(dst);
        self.failures.push((port, to.expect("a known port")));
        if self.saturate {
            self.refill.push(port);
        }
    }
}

impl Ctx {
    /// A wireless network of `cfg` with a machine at each position.
    fn new(cfg: WirelessConfig, at: &[[f64; 2]]) -> Ctx {
        let mut c = Ctx::default();
        let mut n = Network::new(0, NetworkConfig::ideal("w"), 7);
        n.set_wireless(cfg);
        for (i, &[x, y]) in at.iter().enumerate() {
            let p = n.add_port(i as u32, 0);
            n.wireless
                .as_deref_mut()
                .expect("wireless")
                .set_position(p, x, y);
        }
        c.fabric.networks.push(n);
        c
    }

    fn send(&mut self, from: u32, to: Option<u32>, len: usize) {
        let mut bytes = vec![0x45; len];
        let dst = to.map_or([0xff; 6], |t| port_mac(0, t).0);
        bytes[0..6].copy_from_slice(&dst);
        bytes[6..12].copy_from_slice(&port_mac(0, from).0);
        bytes[12..14].copy_from_slice(&[0x08, 0x00]);
        transmit(self, 0, from, &mut Message::from_vec(bytes));
    }

    /// Keeps every sender with `backlog` frames queued to `dst[i]`.
    fn saturate(&mut self, dst: Vec<Option<u32>>, len: usize, backlog: usize) {
        self.saturate = true;
        self.len = len;
        for (i, d) in dst.iter().enumerate() {
            if d.is_some() {
                for _ in 0..backlog {
                    self.send(i as u32, *d, len);
                }
            }
        }
        self.dst = dst;
    }

    /// Runs every event up to `t` ns.
    fn run_until(&mut self, t: u64) {
        while self.queue.peek_time().is_some_and(|at| at.as_nanos() <= t) {
            let (_, event) = self.queue.pop().expect("peeked");
            handle(self, event);
            while let Some(from) = self.refill.pop() {
                let (d, len) = (self.dst[from as usize], self.len);
                self.send(from, d, len);
            }
        }
    }

    /// Moves the clock to `t` ns (an event that does nothing).
    fn idle_until(&mut self, t: u64) {
        let noop = Timer {
            net: 0,
            port: 0,
            token: u32::MAX,
            kind: TimerKind::Timeout,
        };
        self.schedule(Time::from_nanos(t), NetEvent::Wireless(noop));
        self.run_until(t);
    }

    fn stats(&self) -> &WirelessStats {
        &self.fabric.networks[0]
            .wireless
            .as_deref()
            .expect("wireless")
            .stats
    }

    /// Bits delivered to their destination in (`from`, `to`] per second.
    fn throughput(&self, from: u64, to: u64) -> f64 {
        let bytes: usize = (self.arrivals.iter())
            .filter(|a| a.0 > from && a.0 <= to)
            .map(|a| a.3)
            .sum();
        bytes as f64 * 8.0 / ((to - from) as f64 / 1e9)
    }
}

fn b11(mac: Mac) -> WirelessConfig {
    WirelessConfig::new(Standard::B, mac, 250.0)
}

const MS: u64 = 1_000_000;

#[test]
fn a_frame_on_a_medium_idle_for_difs_goes_at_once() {
    let mut c = Ctx::new(b11(Mac::Dcf), &[[0.0, 0.0], [100.0, 0.0]]);
    c.idle_until(10 * MS);
    c.send(0, Some(1), 1000);
    c.run_until(20 * MS);
    // 10.3.4.2: the medium has been idle for more than DIFS, so the
    // frame goes at once: a 1022-byte MPDU at 11 Mbit/s behind the
    // 192 µs long preamble.
    let air = 192_000 + 1_000 * ((1000 + 22) as u64 * 8_000_000).div_ceil(11_000_000);
    assert_eq!(c.arrivals, vec![(10 * MS + air, 1, 0, 1000)]);
    // A second frame right behind it backs off: it waits for the ACK
    // (SIFS + 304 µs), DIFS, and its back-off of 0 to 31 slots.
    c.send(0, Some(1), 1000);
    c.run_until(30 * MS);
    let earliest = 2 * air + 10_000 + 304_000 + 50_000;
    let gap = c.arrivals[1].0 - 10 * MS - earliest;
    assert!(gap % 20_000 == 0 && gap <= 31 * 20_000, "{gap}");
    let s = c.stats();
    // The data frame and its ACK, nothing retried.
    assert_eq!((s.transmissions, s.retries, s.collisions), (4, 0, 0));
    assert_eq!(c.fabric.networks[0].ports[0].inflight, 0);
}

#[test]
fn one_saturated_sender_gets_the_closed_form_throughput() {
    let mut c = Ctx::new(b11(Mac::Dcf), &[[0.0, 0.0], [100.0, 0.0]]);
    c.saturate(vec![Some(1), None], 1500, 2);
    c.run_until(12_000 * MS);
    let s = Standard::B;
    // A cycle: DIFS, a mean back-off of CWmin / 2 slots, the data, SIFS,
    // the ACK at 1 Mbit/s.
    let cycle = s.difs_ns() as f64
        + 15.5 * s.slot_ns() as f64
        + s.tx_ns(1500 + DATA_OVERHEAD, 11_000_000) as f64
        + s.sifs_ns() as f64
        + s.tx_ns(ACK_BYTES, 1_000_000) as f64;
    let expected = 1500.0 * 8.0 / (cycle / 1e9);
    let got = c.throughput(2_000 * MS, 12_000 * MS);
    assert!((got / expected - 1.0).abs() < 0.01, "{got} vs {expected}");
}

#[test]
fn mac_none_sends_back_to_back_at_the_data_rate() {
    let mut c = Ctx::new(b11(Mac::None), &[[0.0, 0.0], [100.0, 0.0]]);
    for _ in 0..3 {
        c.send(0, Some(1), 500);
    }
    c.run_until(100 * MS);
    let air = Standard::B.tx_ns(500 + DATA_OVERHEAD, 11_000_000);
    let times: Vec<u64> = c.arrivals.iter().map(|a| a.0).collect();
    assert_eq!(times, vec![air, 2 * air, 3 * air]);
}

#[test]
fn unit_disk_broadcasts_reach_exactly_the_machines_in_range() {
    // A chain 200 m apart and one machine off to the side.
    let at = [
        [0.0, 0.0],
        [200.0, 0.0],
        [400.0, 0.0],
        [600.0, 0.0],
        [300.0, 240.0],
    ];
    let mut c = Ctx::new(b11(Mac::None), &at);
    for p in 0..at.len() as u32 {
        c.send(p, None, 100);
    }
    c.run_until(100 * MS);
    let mut got: Vec<(u32, u32)> = c.arrivals.iter().map(|a| (a.2, a.1)).collect();
    got.sort();
    let mut expected = Vec::new();
    for (i, a) in at.iter().enumerate() {
        for (j, b) in at.iter().enumerate() {
            let d = ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt();
            if i != j && d <= 250.0 {
                expected.push((i as u32, j as u32));
            }
        }
    }
    assert_eq!(got, expected);
}

#[test]
fn an_unreachable_neighbour_is_reported_after_the_retry_limit() {
    let mut c = Ctx::new(b11(Mac::Dcf), &[[0.0, 0.0], [300.0, 0.0]]);
    c.send(0, Some(1), 200);
    c.run_until(1_000 * MS);
    assert!(c.arrivals.is_empty());
    assert_eq!(c.failures, vec![(0, 1)]);
    // dot11ShortRetryLimit = 7 attempts: 6 retries, then the drop.
    let s = c.stats();
    assert_eq!((s.transmissions, s.retries, s.retry_drops), (7, 6, 1));
    assert_eq!(c.fabric.networks[0].ports[0].inflight, 0);
}

/// Bianchi's saturation throughput (IEEE JSAC 18(3), 2000), bit/s, for
/// `n` stations, with the retry limit of `attempts` (the chain's stages
/// 0 … attempts − 1; unbounded, it is his eq. (7)).
fn bianchi(n: u32, rts: bool, len: usize, attempts: u32) -> f64 {
    let s = Standard::B;
    let (w, m) = (32.0_f64, 5);
    let tau = |p: f64| {
        let (mut num, mut den) = (0.0, 0.0);
        for i in 0..attempts {
            let wi = w * 2f64.powi(i.min(m) as i32);
            num += p.powi(i as i32);
            den += p.powi(i as i32) * (wi + 1.0) / 2.0;
        }
        num / den
    };
    // p = 1 − (1 − τ(p))^(n−1), by bisection.
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    for _ in 0..200 {
        let p = (lo + hi) / 2.0;
        if p - (1.0 - (1.0 - tau(p)).powi(n as i32 - 1)) > 0.0 {
            hi = p;
        } else {
            lo = p;
        }
    }
    let t = tau((lo + hi) / 2.0);
    let ptr = 1.0 - (1.0 - t).powi(n as i32);
    let ps = n as f64 * t * (1.0 - t).powi(n as i32 - 1) / ptr;
    let ns = |x: u64| x as f64;
    let data = ns(s.tx_ns(len + DATA_OVERHEAD, 11_000_000));
    let ack = ns(s.tx_ns(ACK_BYTES, 1_000_000));
    let (sifs, difs, slot) = (ns(s.sifs_ns()), ns(s.difs_ns()), ns(s.slot_ns()));
    // A collision is followed by EIFS = SIFS + ACK + DIFS (10.3.2.3.7).
    let (ts, tc) = if rts {
        let r = ns(s.tx_ns(RTS_BYTES, 1_000_000));
        (
            r + 3.0 * sifs + 2.0 * ack + data + difs,
            r + sifs + ack + difs,
        )
    } else {
        (data + sifs + ack + difs, data + sifs + ack + difs)
    };
    let payload = 8.0 * len as f64;
    ps * ptr * payload / ((1.0 - ptr) * slot + ptr * ps * ts + ptr * (1.0 - ps) * tc) * 1e9
}

#[test]
fn bounded_retries_give_bianchis_eq_7_when_unbounded() {
    // Eq. (7): τ = 2(1 − 2p) / ((1 − 2p)(W + 1) + pW(1 − (2p)^m)).
    let (w, m) = (32.0_f64, 5);
    for p in [0.05_f64, 0.2, 0.4] {
        let eq7 = 2.0 * (1.0 - 2.0 * p)
            / ((1.0 - 2.0 * p) * (w + 1.0) + p * w * (1.0 - (2.0 * p).powi(m)));
        let (mut num, mut den) = (0.0, 0.0);
        for i in 0..2000 {
            let wi = w * 2f64.powi(i.min(m));
            num += p.powi(i);
            den += p.powi(i) * (wi + 1.0) / 2.0;
        }
        assert!((num / den / eq7 - 1.0).abs() < 1e-9, "p = {p}");
    }
}

/// Saturation throughput of `n` stations in range of each other, each
/// sending 1500-byte frames to the next, bit/s.
fn simulated(n: u32, rts: bool) -> f64 {
    let mut cfg = b11(Mac::Dcf);
    if rts {
        cfg.rts_threshold = 0;
    }
    // On a 10 m circle: everyone hears everyone.
    let at: Vec<[f64; 2]> = (0..n)
        .map(|i| {
            let a = i as f64 * std::f64::consts::TAU / n as f64;
            [10.0 * a.cos(), 10.0 * a.sin()]
        })
        .collect();
    let mut c = Ctx::new(cfg, &at);
    c.saturate((0..n).map(|i| Some((i + 1) % n)).collect(), 1500, 2);
    c.run_until(22_000 * MS);
    c.throughput(2_000 * MS, 22_000 * MS)
}

#[test]
fn dcf_saturation_throughput_is_within_5_percent_of_bianchi() {
    let mut table = String::new();
    for rts in [false, true] {
        for n in [5, 10, 20, 50] {
            let model = bianchi(n, rts, 1500, 7);
            let sim = simulated(n, rts);
            let err = sim / model - 1.0;
            table += &format!(
                "rts={rts} n={n}: model {:.3} Mbit/s, simulated {:.3} Mbit/s ({:+.2} %)\n",
                model / 1e6,
                sim / 1e6,
                100.0 * err
            );
            assert!(err.abs() < 0.05, "{table}");
        }
    }
    println!("{table}");
}

/// Throughput of four saturated senders around a receiver, 200 m from it
/// and so hidden from each other (`hidden`), or 100 m from it and in
/// range of each other.
fn four_senders(hidden: bool, rts: bool) -> f64 {
    let mut cfg = b11(Mac::Dcf);
    if rts {
        cfg.rts_threshold = 0;
    }
    let r = if hidden { 200.0 } else { 100.0 };
    let at = [[0.0, 0.0], [r, 0.0], [0.0, r], [-r, 0.0], [0.0, -r]];
    let mut c = Ctx::new(cfg, &at);
    c.saturate(vec![None, Some(0), Some(0), Some(0), Some(0)], 1500, 2);
    c.run_until(11_000 * MS);
    c.throughput(1_000 * MS, 11_000 * MS)
}

#[test]
fn hidden_terminals_collapse_without_rts_cts_and_recover_with_it() {
    let (basic, basic_hidden) = (four_senders(false, false), four_senders(true, false));
    let (rts, rts_hidden) = (four_senders(false, true), four_senders(true, true));
    let msg =
        format!("basic {basic:.0} hidden {basic_hidden:.0}; rts {rts:.0} hidden {rts_hidden:.0}");
    println!("{msg}");
    assert!(basic_hidden < 0.5 * basic, "{msg}");
    // RTS frames of hidden senders still collide (352 µs on the air),
    // but a CTS then keeps the others quiet for the data.
    assert!(rts_hidden > 0.6 * rts, "{msg}");
    assert!(rts_hidden > 2.0 * basic_hidden, "{msg}");
}

#[test]
fn a_neighbour_that_drives_out_of_range_becomes_a_link_failure() {
    let mut c = Ctx::new(b11(Mac::Dcf), &[[0.0, 0.0], [100.0, 0.0]]);
    // Node 1 leaves at 1 s eastwards at 100 m/s: out of range (250 m)
    // from 2.5 s on.
    let trace = "$node_(0) set X_ 0.0\n$node_(0) set Y_ 0.0\n\
                 $node_(1) set X_ 100.0\n$node_(1) set Y_ 0.0\n\
                 $ns_ at 1.0 \"$node_(1) setdest 1000.0 0.0 100.0\"\n";
    let legs = mobility::parse_setdest(trace).expect("a trace");
    let w = c.fabric.networks[0]
        .wireless
        .as_deref_mut()
        .expect("wireless");
    w.set_trace(legs);
    assert_eq!(w.position_at(1, 2_000 * MS), [200.0, 0.0]);
    c.idle_until(2_000 * MS);
    c.send(0, Some(1), 500);
    c.run_until(2_400 * MS);
    assert_eq!(c.arrivals.len(), 1);
    assert!(c.failures.is_empty());
    c.idle_until(2_600 * MS);
    c.send(0, Some(1), 500);
    c.run_until(3_000 * MS);
    assert_eq!((c.arrivals.len(), c.failures.clone()), (1, vec![(0, 1)]));
}

#[test]
fn random_waypoint_stations_move_in_virtual_time() {
    let mut c = Ctx::new(b11(Mac::None), &[[0.0, 0.0], [10.0, 0.0]]);
    let w = c.fabric.networks[0]
        .wireless
        .as_deref_mut()
        .expect("wireless");
    let model = mobility::Model::RandomWaypoint {
        area: (2000.0, 2000.0),
        speed: (10.0, 20.0),
        pause_ns: 0,
    };
    w.set_mobility(model, 1, 0);
    let a = w.position_at(0, 0);
    let b = w.position_at(0, 10_000 * MS);
    let d = ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt();
    // At most 20 m/s for 10 s, and it did move.
    assert!(d > 0.0 && d <= 200.0 + 1e-6, "{d}");
    // The same seed gives the same path.
    let again = {
        let mut w2 = Wireless::new(b11(Mac::None));
        w2.set_position(0, 0.0, 0.0);
        w2.set_mobility(w.mobility.clone(), 1, 0);
        w2.position_at(0, 10_000 * MS)
    };
    assert_eq!(again, b);
}

/// Two copies of a network of `n` stations placed uniformly in `area`
/// under `model` and `prop`: one scanning every station, one using the
/// grid. Asks both who hears each of 40 senders at each of `times` (ms)
/// and checks that the hearers, their powers and their order agree;
/// returns the mean number of hearers and of grid candidates per query.
fn grid_agrees_with_the_scan(
    n: u32,
    area: (f64, f64),
    model: mobility::Model,
    prop: propagation::Model,
    times: &[u64],
) -> (f64, f64) {
    let mut cfg = b11(Mac::Dcf);
    cfg.propagation.model = prop;
    cfg.propagation.cs_range_m = 400.0;
    let mut rng = elvis_kernel::rng::stream(11, elvis_kernel::rng::StreamKind::Network, 1);
    let mut nets = [Wireless::new(cfg.clone()), Wireless::new(cfg)];
    for p in 0..n {
        use rand::Rng as _;
        let (x, y) = (rng.random::<f64>() * area.0, rng.random::<f64>() * area.1);
        for w in &mut nets {
            w.set_position(p, x, y);
        }
    }
    for (w, indexed) in nets.iter_mut().zip([false, true]) {
        w.set_mobility(model.clone(), 5, 0);
        w.indexed = Some(indexed);
    }
    let (mut heard, mut asked) = (0usize, 0usize);
    for &t in times {
        for k in 0..40 {
            let from = (k * 7919 + t as u32) % n;
            let scan = nets[0].hearers(from, t * MS);
            let grid = nets[1].hearers(from, t * MS);
            assert_eq!(scan, grid, "sender {from} at {t} ms");
            heard += scan.len();
            let mut c = Vec::new();
            let at = nets[1].position_at(from, t * MS);
            let g = nets[1].grid.as_ref().expect("a grid");
            g.candidates(at, t * MS, &mut c);
            asked += c.len();
        }
    }
    let q = (times.len() * 40) as f64;
    (heard as f64 / q, asked as f64 / q)
}

#[test]
fn the_grid_finds_the_hearers_of_the_full_scan_under_every_mobility() {
    let times: Vec<u64> = (0..60).map(|k| k * 1_700).collect();
    let area = (4000.0, 1500.0);
    let rwp = mobility::Model::RandomWaypoint {
        area,
        speed: (1.0, 20.0),
        pause_ns: 0,
    };
    let walk = mobility::Model::RandomWalk {
        area,
        speed: (1.0, 20.0),
        step_ns: 3_000 * MS,
    };
    for model in [mobility::Model::Static, rwp.clone(), walk] {
        for prop in [
            propagation::Model::UnitDisk,
            propagation::Model::TwoRay,
            propagation::Model::LogDistance(3.0),
        ] {
            grid_agrees_with_the_scan(300, area, model.clone(), prop, &times);
        }
    }
}

#[test]
fn a_grid_query_visits_a_few_times_the_hearers_not_every_station() {
    // Broch's density (50 stations in 1500 m x 300 m) scaled to 2,000
    // stations: about 20 hearers within 250 m; a 400 m carrier-sense
    // range here makes it about 50.
    let area = (9487.0, 1897.0);
    let rwp = mobility::Model::RandomWaypoint {
        area,
        speed: (1.0, 20.0),
        pause_ns: 0,
    };
    let times: Vec<u64> = (0..20).map(|k| k * 9_000).collect();
    let (heard, asked) =
        grid_agrees_with_the_scan(2000, area, rwp, propagation::Model::UnitDisk, &times);
    assert!(heard > 20.0, "{heard}");
    assert!(
        asked < 6.0 * heard,
        "{asked} candidates for {heard} hearers"
    );
}

#[test]
fn the_grid_follows_a_setdest_trace_and_moved_stations() {
    let trace = "$node_(0) set X_ 0.0\n$node_(0) set Y_ 0.0\n\
                 $ns_ at 1.0 \"$node_(0) setdest 3000.0 0.0 50.0\"\n";
    let legs = mobility::parse_setdest(trace).expect("a trace");
    let mut nets = [Wireless::new(b11(Mac::Dcf)), Wireless::new(b11(Mac::Dcf))];
    for (w, indexed) in nets.iter_mut().zip([false, true]) {
        // Stations every 100 m along the trace's road.
        for p in 0..31 {
            w.set_position(p, 100.0 * p as f64, 10.0);
        }
        w.set_trace(legs.clone());
        w.indexed = Some(indexed);
    }
    for t in (0..70_000).step_by(250) {
        for from in [0, 3, 17, 30] {
            assert_eq!(nets[0].hearers(from, t * MS), nets[1].hearers(from, t * MS));
        }
        if t == 30_000 {
            for w in &mut nets {
                w.set_position(5, 2_900.0, 10.0);
            }
        }
    }
}
