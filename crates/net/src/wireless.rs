//! Wireless networks: a shared medium where a frame reaches the
//! machines that the propagation model says can hear the sender.
//!
//! A wireless network carries the same Ethernet frames as a switched LAN
//! (broadcast to whoever hears it, unicast by MAC address), so the stack
//! above runs unchanged; on the air each frame is an 802.11 data MPDU
//! (24-byte MAC header, LLC/SNAP, the Ethernet payload, FCS), and that is
//! what a capture of the network holds (pcap link type 105,
//! `LINKTYPE_IEEE802_11`).
//!
//! Every machine has a position ([`Wireless::set_position`], metres),
//! fixed or moving ([`mobility`]: random waypoint, random walk, ns-2
//! `setdest` traces; computed lazily at the instant a frame starts).
//! Received power, and so who hears and who decodes a frame, comes from
//! [`propagation`].
//!
//! # Medium access
//! - **`Mac::None`** (node-virtualization emulators' model): each NIC
//!   sends its frames one after another at the data rate, preamble
//!   included; there is no carrier sense and no collision, and a frame
//!   reaches every machine that decodes it on its own.
//! - **`Mac::Dcf`**: the distributed coordination function of IEEE
//!   802.11-2016 clause 10.3 (module [`dcf`]): physical and virtual
//!   carrier sense (NAV, 10.3.2.4), DIFS, EIFS and SIFS (10.3.2.3), binary
//!   exponential back-off between CWmin and CWmax (10.3.3), ACKs and the
//!   short and long retry limits (10.3.4.4), RTS/CTS above a threshold
//!   (10.3.2.6), and collisions: a receiver loses a frame that another
//!   frame overlaps (unit disk) or whose SINR drops below the capture
//!   threshold (path-loss models), including hidden terminals.
//!
//! # Link-layer feedback
//! A unicast frame that exhausts its retry limit is dropped and
//! reported to [`crate::Context::link_failed`] with the neighbour's MAC
//! and the frame: a routing protocol (AODV's link-break detection, RFC
//! 3561 §6.11) can treat it as a broken link.
//!
//! # Gaps
//! - Propagation delay (at most 1 µs at 300 m) is not modelled: a frame
//!   ends at every receiver when it ends at the sender.
//! - No fragmentation, no rate adaptation, no power saving, no
//!   infrastructure mode (every station is in one IBSS).
//! - A station counts its post-transmission back-off down only while it
//!   has a frame to send.
//! - Positions do not change during a frame.
//!
//! # Finding hearers
//! A network of [`GRID_MIN_STATIONS`] or more stations finds the
//! hearers of a frame through a uniform grid (`grid`), in time
//! proportional to the stations near the sender; smaller ones scan every
//! station. Both give the same hearers in the same order.

pub mod dcf;
mod frame;
mod grid;
pub mod mobility;
pub mod phy;
pub mod propagation;

#[cfg(test)]
mod tests;

use crate::{FrameId, NetId};
use phy::Standard;
use propagation::Propagation;
use std::collections::VecDeque;

/// How stations share the medium.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Mac {
    /// No contention, no collisions (see "Medium access").
    None,
    /// 802.11 DCF (see "Medium access").
    Dcf,
}

/// The properties of a wireless network.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct WirelessConfig {
    pub standard: Standard,
    pub mac: Mac,
    /// Rate of data frames, bit/s.
    pub rate_bps: u64,
    /// Rate of control frames (RTS, CTS, ACK), bit/s.
    pub basic_rate_bps: u64,
    pub propagation: Propagation,
    /// Unicast frames whose MPDU is longer than this many bytes go after
    /// an RTS/CTS exchange (dot11RTSThreshold; 2347 or more: never).
    pub rts_threshold: u32,
    /// dot11ShortRetryLimit: attempts of an RTS or a short frame.
    pub short_retry: u32,
    /// dot11LongRetryLimit: attempts of a frame longer than the RTS
    /// threshold.
    pub long_retry: u32,
}

impl WirelessConfig {
    /// Returns a configuration of `standard` at its top rate with a unit
    /// disk of `range_m` metres, 1 (DSSS) or 6 (OFDM) Mbit/s control
    /// frames, RTS/CTS off and the default retry limits (7 and 4).
    pub fn new(standard: Standard, mac: Mac, range_m: f64) -> Self {
        let rates = standard.rates();
        WirelessConfig {
            standard,
            mac,
            rate_bps: rates[rates.len() - 1],
            basic_rate_bps: standard.basic_rate(),
            propagation: Propagation {
                model: propagation::Model::UnitDisk,
                range_m,
                cs_range_m: range_m,
                tx_mw: 40.0,
                freq_hz: standard.frequency_hz(),
                sinr: 10.0,
            },
            rts_threshold: 2347,
            short_retry: 7,
            long_retry: 4,
        }
    }
}

/// Counters of a wireless network's MAC, in the run report.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct WirelessStats {
    /// Frames put on the air (data, RTS, CTS, ACK; retransmissions too).
    pub transmissions: u64,
    /// Data frames retransmitted (an ACK or a CTS did not come).
    pub retries: u64,
    /// Unicast frames dropped at the retry limit (link-layer failures).
    pub retry_drops: u64,
    /// Receptions lost to an overlapping frame (collisions, including
    /// those of hidden terminals).
    pub collisions: u64,
    /// RTS frames sent.
    pub rts: u64,
    /// Data frames delivered to their receivers (each receiver of a
    /// broadcast counts).
    pub delivered: u64,
    /// Payload bytes (Ethernet frame bytes) of those frames.
    pub delivered_bytes: u64,
}

/// Precomputed timing of a network, ns.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timing {
    pub slot: u64,
    pub sifs: u64,
    pub difs: u64,
    pub eifs: u64,
    pub cca: u64,
    pub ack: u64,
    pub rts: u64,
}

/// What a transmission is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Data,
    Ack,
    Rts,
    Cts,
}

/// A frame on the air.
pub(crate) struct Air {
    pub sender: u32,
    pub kind: Kind,
    /// `None`: broadcast or multicast.
    pub dst: Option<u32>,
    /// A data frame's Ethernet frame in the fabric's slab (the sender's
    /// queue keeps it).
    pub frame: FrameId,
    /// The Duration field (NAV), ns.
    pub nav: u64,
    pub seq: u16,
    /// Stations that sense or decode it, with the power they get (mW).
    pub hearers: smallvec::SmallVec<[(u32, f64); 8]>,
}

/// What a station's own frame is waiting for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Own {
    /// Nothing to send.
    #[default]
    Idle,
    /// Deferring or counting down its back-off.
    Contend,
    /// On the air, or about to be (after a CTS).
    Sending,
    WaitCts,
    WaitAck,
}

/// One station: its transmit queue, its back-off and its receiver.
#[derive(Default)]
pub(crate) struct Sta {
    pub queue: VecDeque<FrameId>,
    pub own: Own,
    /// Back-off slots left, counted from `count_from`.
    pub backoff: Option<u32>,
    pub cw: u32,
    pub ssrc: u32,
    pub slrc: u32,
    /// Invalidates the station's pending access or timeout event.
    pub token: u32,
    pub count_from: u64,
    /// When its pending access event fires (`None`: none pending).
    pub grant: Option<u64>,
    /// Sequence number of the head frame.
    pub seq: u16,
    /// The head frame has been sent before (the Retry bit).
    pub retry: bool,
    /// When the medium is idle again after a missing response.
    pub resp_end: u64,
    /// Frames arriving now: (air id, power).
    pub signals: smallvec::SmallVec<[(u32, f64); 2]>,
    /// The frame being received, and whether it is still intact.
    pub locked: Option<u32>,
    pub lock_ok: bool,
    /// Sensed frames on the air.
    pub cs: u32,
    /// End of the last busy period (a sensed frame, its own).
    pub busy_end: u64,
    pub nav_until: u64,
    /// The last reception failed: defer EIFS instead of DIFS.
    pub eifs: bool,
    /// Its own transmission on the air.
    pub tx_air: Option<u32>,
    /// A SIFS response due: kind, to whom, NAV.
    pub resp: Option<(Kind, u32, u64)>,
    /// Last sequence number delivered from each sender (duplicates of a
    /// retransmission whose ACK was lost are dropped, 10.3.2.11).
    pub recent: smallvec::SmallVec<[(u32, u16); 4]>,
}

/// A wireless network's state: positions, stations, frames on the air.
pub struct Wireless {
    pub cfg: WirelessConfig,
    pos: Vec<[f64; 2]>,
    /// How stations move ([`mobility`]).
    pub mobility: mobility::Model,
    /// Each moving station's current leg, and the legs of a trace still
    /// ahead of it (last first).
    legs: Vec<(mobility::Leg, Vec<mobility::Leg>)>,
    /// Each station's random stream (moving models).
    rngs: Vec<elvis_kernel::rng::Rng>,
    seed: u64,
    /// Positions come from an ns-2 `setdest` trace.
    traced: bool,
    pub(crate) sta: Vec<Sta>,
    pub(crate) air: slab::Slab<Air>,
    pub(crate) t: Timing,
    pub(crate) rx_thr: f64,
    pub(crate) cs_thr: f64,
    pub stats: WirelessStats,
    /// The spatial index ([`grid`]), once built.
    grid: Option<grid::Grid>,
    /// Whether to use it: `None` decides by the number of stations
    /// ([`GRID_MIN_STATIONS`]); tests force it either way.
    pub(crate) indexed: Option<bool>,
    /// The fastest leg of a `setdest` trace, m/s.
    trace_vmax: f64,
    /// Scratch list of candidate hearers.
    candidates: Vec<u32>,
}

/// Networks with at least this many stations find hearers through the
/// spatial index (`grid`); smaller ones scan every station, which for
/// a few dozen stations costs no more than visiting the grid's cells and
/// sorting the candidates (the Broch scenario's 50 stations in 1500 m ×
/// 300 m are mostly within 3 × 3 cells of 312 m of any sender).
pub const GRID_MIN_STATIONS: usize = 128;

impl Wireless {
    pub fn new(cfg: WirelessConfig) -> Self {
        let s = cfg.standard;
        let ack = s.tx_ns(phy::ACK_BYTES, cfg.basic_rate_bps);
        let t = Timing {
            slot: s.slot_ns(),
            sifs: s.sifs_ns(),
            difs: s.difs_ns(),
            // 10.3.2.3.7: EIFS = aSIFSTime + DIFS + ACKTxTime at the
            // lowest basic rate.
            eifs: s.sifs_ns() + s.difs_ns() + s.tx_ns(phy::ACK_BYTES, s.basic_rate()),
            cca: s.cca_ns(),
            ack,
            rts: s.tx_ns(phy::RTS_BYTES, cfg.basic_rate_bps),
        };
        Wireless {
            rx_thr: cfg.propagation.rx_threshold(),
            cs_thr: cfg.propagation.cs_threshold(),
            cfg,
            pos: Vec::new(),
            mobility: mobility::Model::Static,
            legs: Vec::new(),
            rngs: Vec::new(),
            seed: 0,
            traced: false,
            sta: Vec::new(),
            air: slab::Slab::new(),
            t,
            stats: WirelessStats::default(),
            grid: None,
            indexed: None,
            trace_vmax: 0.0,
            candidates: Vec::new(),
        }
    }

    /// Places the machine on `port` at (`x`, `y`), metres.
    pub fn set_position(&mut self, port: u32, x: f64, y: f64) {
        self.grow(port as usize + 1);
        self.pos[port as usize] = [x, y];
        if let Some(g) = &mut self.grid {
            g.built_at = None;
        }
    }

    /// Returns where the machine on `port` was placed, metres.
    pub fn position(&self, port: u32) -> [f64; 2] {
        self.pos.get(port as usize).copied().unwrap_or([0.0, 0.0])
    }

    /// Moves every station under `model` from its placed position, each
    /// drawing from its own stream of `seed` (network `net`).
    pub fn set_mobility(&mut self, model: mobility::Model, seed: u64, net: crate::NetId) {
        self.mobility = model;
        self.seed = elvis_kernel::rng::mix(seed ^ (u64::from(net) << 32));
        self.legs.clear();
        self.rngs.clear();
        self.grid = None;
    }

    /// Moves the stations along the legs of an ns-2 `setdest` trace
    /// (node i on port i; ports beyond the trace stay where placed).
    pub fn set_trace(&mut self, legs: Vec<Vec<mobility::Leg>>) {
        self.traced = true;
        self.grid = None;
        self.trace_vmax = (legs.iter().flatten())
            .map(mobility::Leg::speed)
            .fold(0.0, f64::max);
        self.legs = legs
            .into_iter()
            .map(|mut l| {
                l.reverse();
                let first = l
                    .pop()
                    .unwrap_or(mobility::Leg::stay([0.0, 0.0], 0, u64::MAX));
                (first, l)
            })
            .collect();
    }

    /// Returns where the machine on `port` is at `now_ns`, metres,
    /// drawing its next legs when the clock has passed its last one.
    pub fn position_at(&mut self, port: u32, now_ns: u64) -> [f64; 2] {
        let p = port as usize;
        if self.traced {
            let Some((leg, ahead)) = self.legs.get_mut(p) else {
                return self.position(port);
            };
            while now_ns >= leg.until_ns {
                let Some(next) = ahead.pop() else { break };
                *leg = next;
            }
            return leg.at(now_ns);
        }
        if self.mobility == mobility::Model::Static {
            return self.position(port);
        }
        while self.legs.len() <= p {
            let k = self.legs.len();
            let at = self.position(k as u32);
            self.legs.push((mobility::Leg::stay(at, 0, 0), Vec::new()));
            let stream = self.seed ^ (k as u64 + 1);
            self.rngs.push(elvis_kernel::rng::stream(
                stream,
                elvis_kernel::rng::StreamKind::Network,
                k as u64,
            ));
        }
        while now_ns >= self.legs[p].0.until_ns {
            let next = mobility::next_leg(&self.mobility, &self.legs[p].0, &mut self.rngs[p]);
            self.legs[p].0 = next;
        }
        self.legs[p].0.at(now_ns)
    }

    /// Returns the distance between two ports, metres.
    pub fn distance(&self, a: u32, b: u32) -> f64 {
        let ([ax, ay], [bx, by]) = (self.position(a), self.position(b));
        ((ax - bx) * (ax - bx) + (ay - by) * (ay - by)).sqrt()
    }

    /// Returns whether the machine on `to` decodes a frame from `from`
    /// when nothing else is on the air.
    pub fn in_range(&self, from: u32, to: u32) -> bool {
        from != to && self.cfg.propagation.decodes_at(self.distance(from, to))
    }

    /// Makes room for `ports` stations.
    pub(crate) fn grow(&mut self, ports: usize) {
        if self.pos.len() < ports {
            self.pos.resize(ports, [0.0, 0.0]);
            if let Some(g) = &mut self.grid {
                g.built_at = None;
            }
        }
        let cw = self.cfg.standard.cw_min();
        while self.sta.len() < ports {
            self.sta.push(Sta {
                cw,
                ..Sta::default()
            });
        }
    }

    /// Returns the stations that sense or decode a frame from `from` at
    /// `now_ns`, with their power, in port order.
    pub(crate) fn hearers(
        &mut self,
        from: u32,
        now_ns: u64,
    ) -> smallvec::SmallVec<[(u32, f64); 8]> {
        let floor = self.rx_thr.min(self.cs_thr);
        let mut out = smallvec::SmallVec::new();
        let [fx, fy] = self.position_at(from, now_ns);
        let indexed = (self.indexed).unwrap_or(self.pos.len() >= GRID_MIN_STATIONS);
        if let (true, Some(reach)) = (indexed, self.reach()) {
            let mut cands = std::mem::take(&mut self.candidates);
            cands.clear();
            self.grid_candidates(reach, [fx, fy], now_ns, &mut cands);
            for &p in &cands {
                self.hear(p, from, [fx, fy], floor, now_ns, &mut out);
            }
            self.candidates = cands;
            return out;
        }
        for p in 0..self.pos.len() as u32 {
            self.hear(p, from, [fx, fy], floor, now_ns, &mut out);
        }
        out
    }

    /// Adds station `p` to `out` if it gets at least `floor` from a
    /// sender `from` at `f`.
    #[inline]
    fn hear(
        &mut self,
        p: u32,
        from: u32,
        [fx, fy]: [f64; 2],
        floor: f64,
        now_ns: u64,
        out: &mut smallvec::SmallVec<[(u32, f64); 8]>,
    ) {
        if p == from {
            return;
        }
        let [x, y] = self.position_at(p, now_ns);
        let d = ((x - fx) * (x - fx) + (y - fy) * (y - fy)).sqrt();
        let power = self.cfg.propagation.power_mw(d);
        if power >= floor && power > 0.0 {
            out.push((p, power));
        }
    }

    /// Returns the distance beyond which no station gets the floor power
    /// (see [`grid`]), or `None` where the index is not safe.
    fn reach(&self) -> Option<f64> {
        let p = &self.cfg.propagation;
        let r = match p.model {
            propagation::Model::UnitDisk => p.cs_range_m,
            propagation::Model::TwoRay => p.range_m.max(p.cs_range_m),
            propagation::Model::LogDistance(n) if n >= 0.5 => p.range_m.max(p.cs_range_m),
            propagation::Model::LogDistance(_) => return None,
        };
        let floor = self.rx_thr.min(self.cs_thr);
        (r.is_finite() && r > 0.0 && floor > 0.0).then_some(r)
    }

    /// Appends the grid's candidate hearers of a sender at `at` (see
    /// [`grid`]), rebuilding the grid first when it is stale.
    fn grid_candidates(&mut self, reach: f64, at: [f64; 2], now_ns: u64, out: &mut Vec<u32>) {
        let vmax = if self.traced {
            self.trace_vmax
        } else {
            self.mobility.max_speed()
        };
        let mut grid = (self.grid.take()).unwrap_or_else(|| grid::Grid::new(reach, vmax));
        if grid.stale(now_ns) {
            let pos: Vec<[f64; 2]> = (0..self.pos.len() as u32)
                .map(|p| self.position_at(p, now_ns))
                .collect();
            grid.build(&pos, now_ns);
        }
        grid.candidates(at, now_ns, out);
        self.grid = Some(grid);
    }
}

/// The timers of a wireless network (one `NetEvent::Wireless`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerKind {
    /// A station's back-off is over: it transmits.
    Access,
    /// A transmission (air id in `token`) ends.
    TxEnd,
    /// A CTS or an ACK did not come.
    Timeout,
    /// A SIFS response (ACK, CTS, or the data after a CTS) starts.
    Respond,
}

/// A wireless network's timer event.
#[derive(Clone, Copy, Debug)]
pub struct Timer {
    pub net: NetId,
    pub port: u32,
    pub token: u32,
    pub kind: TimerKind,
}
