//! A simulation scenario as plain data.
//!
//! This is where the Network Description Language (NDL) and the Rust API
//! meet: the `elvis-ndl` crate lowers text into a [`Scenario`], a program can
//! build one by hand, and the `elvis-sim` builder turns it into a running
//! simulation. Nothing here knows about a running simulation.
//!
//! Every value that came from a file carries a [`Loc`], so that an error
//! found later (an unknown machine name in an application's `to=`, say) can
//! still point at `file:line:col`.
//!
//! # Units
//! Time is integer nanoseconds, bandwidth integer bits per second, sizes
//! bytes. `None` for bandwidth means infinite (an ideal network, Elvis'
//! default). [`units`] reads the written forms (`2ms`, `100Mbps`,
//! `64KiB`) for NDL, the applications' options and the command line alike.
#![forbid(unsafe_code)]

pub mod files;
pub mod units;

pub use units::{
    parse_bandwidth, parse_duration_ns, parse_ipv4, parse_port, parse_probability,
    parse_size_bytes, parse_u64,
};

use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// A place in a source file (1-based line and column; `len` in bytes).
///
/// `Loc::default()` (line 0) means "not from a file".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Loc {
    /// Byte offset of the start in the source text.
    pub offset: u32,
    /// Length in bytes of the located text.
    pub len: u32,
    /// 1-based line number; 0 when the value was not read from a file.
    pub line: u32,
    /// 1-based column (in characters).
    pub col: u32,
}

impl Loc {
    /// Returns true when this location points into a source file.
    pub fn is_known(&self) -> bool {
        self.line > 0
    }
}

/// A whole simulation: settings, networks and machine groups.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// Settings from the `[Simulation]` block (or defaults).
    pub sim: SimSettings,
    /// Networks in declaration order.
    pub networks: Vec<NetworkSpec>,
    /// Machine groups in declaration order; a group of `count` N expands
    /// to machines `name-0` … `name-(N-1)` (or plain `name` when `count` is
    /// absent).
    pub machines: Vec<MachineGroup>,
    /// Generated topologies (`[Topology type='…']` blocks), in order.
    #[serde(default)]
    pub topologies: Vec<TopologySpec>,
    /// The directory relative file names (a GML `file=`) are read from:
    /// the NDL file's own directory; `None` = the working directory.
    #[serde(default)]
    pub base_dir: Option<String>,
    /// What the file says that the simulator does only in part (ARP's
    /// Elvis `local`/`default`), each with its place; the command line
    /// prints them.
    #[serde(default)]
    pub warnings: Vec<Warning>,
}

/// Something a scenario file says that the simulator does not use yet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    pub message: String,
    pub loc: Loc,
}

/// A generated topology (`[Topology type='fattree' k='8' …]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TopologySpec {
    pub kind: TopologyKind,
    /// Every link's properties (for a dumbbell: the access links).
    pub link: LinkSpec,
    /// Prepended to every generated machine and network name.
    pub prefix: String,
    /// Where the block starts.
    pub loc: Loc,
}

/// Which generator, with its own parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TopologyKind {
    /// FatTree(k): k³/4 hosts, 5k²/4 switches.
    FatTree { k: u32 },
    /// n hosts per side, two routers, one bottleneck link.
    Dumbbell { hosts: u32, bottleneck: LinkSpec },
    /// n routers in a line, a host at each end.
    Chain { routers: u32 },
    /// n hosts around a switch (or a router).
    Star { hosts: u32, router: bool },
    /// A complete tree of routers, hosts at the leaves.
    Tree { depth: u32, fanout: u32 },
    /// Routers on a wrap-around grid (2 or 3 sizes), a host on each.
    Torus { dims: Vec<u32> },
    /// A GML file (`file='…'`, located at `file_loc`).
    Graph { file: String, file_loc: Loc },
}

/// The properties of generated links.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkSpec {
    /// Bits per second; `None` = infinite.
    pub bandwidth_bps: Option<u64>,
    pub latency_ns: u64,
    pub loss: f64,
    pub mtu: u32,
    /// Output-queue capacity in packets; `None` = unbounded.
    pub queue: Option<u32>,
    /// Queue discipline of every egress queue on these links (`qdisc=`,
    /// or `bottleneck_qdisc=` for a dumbbell's bottleneck); boxed, as
    /// in [`NetworkSpec`].
    #[serde(default)]
    pub qdisc: Option<Box<QdiscSpec>>,
}

impl Default for LinkSpec {
    fn default() -> Self {
        LinkSpec {
            bandwidth_bps: None,
            latency_ns: 0,
            loss: 0.0,
            mtu: 1500,
            queue: None,
            qdisc: None,
        }
    }
}

/// Simulation-wide settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimSettings {
    /// Seed of every random stream in the run.
    pub seed: u64,
    /// Stop at this virtual time (ns), if given.
    pub until: Option<u64>,
    /// How routes are computed when the scenario has routers.
    #[serde(default)]
    pub routing: RoutingMode,
    /// The TTL of every datagram a machine originates (`ttl='255'`;
    /// `None`: Linux's 64).
    #[serde(default)]
    pub ttl: Option<u8>,
    /// ICMP error rate limits (`icmp_ratelimit`, `icmp_msgs_per_sec`,
    /// `icmp_msgs_burst`; `None`: Linux's 1000 ms, 1000, 50).
    #[serde(default)]
    pub icmp_ratelimit_ns: Option<u64>,
    #[serde(default)]
    pub icmp_msgs_per_sec: Option<u64>,
    #[serde(default)]
    pub icmp_msgs_burst: Option<u64>,
    /// `dns='auto'`: the builder adds a DNS hierarchy naming every
    /// machine and points every machine at its resolver.
    #[serde(default)]
    pub dns: Option<DnsAuto>,
    /// `realtime='yes'`: virtual time paced to the wall clock.
    #[serde(default)]
    pub realtime: bool,
    /// `multipath='packet'`: routers spread each datagram over equal-cost
    /// next hops, not each flow (`multipath='flow'`, the default).
    #[serde(default)]
    pub per_packet_multipath: bool,
    /// `multipath='random'` or `'random_path'`: random next hops per
    /// datagram, or a random simple path per flow.
    #[serde(default)]
    pub random_multipath: RandomMultipath,
    /// `min_rto='…'`: TCP's minimum retransmission timeout on every
    /// machine (ns; `None`: Linux's 200 ms).
    #[serde(default)]
    pub tcp_min_rto_ns: Option<u64>,
    /// `slow_start='…'`: how CUBIC leaves slow start on every machine
    /// (`hystart`, `hystart++` or `standard`; `None`: `hystart`, Linux's).
    #[serde(default)]
    pub tcp_slow_start: Option<String>,
    pub loc: Loc,
}

/// A DNS hierarchy built for the scenario (`[Simulation dns='auto'
/// domain='elvis']`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DnsAuto {
    /// The domain every machine is named under (`sender-17.elvis`).
    pub domain: String,
    /// Where `dns=` is written.
    pub loc: Loc,
}

/// The random multipath choices of `[Simulation multipath='…']`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RandomMultipath {
    /// Hashed choices (`'flow'`, `'packet'`).
    #[default]
    Off,
    /// `'random'`: each datagram's next hop drawn at random (ns.py's
    /// random demultiplexing).
    Demux,
    /// `'random_path'`: each flow on a random simple path (ns.py's random
    /// simple-path routing).
    Path,
}

/// How routers' and hosts' routes are made (`[Simulation routing='…']`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RoutingMode {
    /// Shortest paths by hop count, computed from the topology, with
    /// equal-cost multipath (`routing='shortest'`, the default).
    #[default]
    Shortest,
    /// Shortest paths by total latency (`routing='latency'`).
    Latency,
    /// Only the static routes written in the file (`routing='static'`).
    Static,
}

/// A static route (`[Route to='10.1.0.0/16' via='10.0.0.1']`, or a
/// machine's `gateway='…'` for `0.0.0.0/0`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RouteSpec {
    /// The destination network.
    pub prefix: Ipv4Addr,
    /// Its prefix length (0 for the default route).
    pub len: u8,
    /// The gateway, as written (may hold `{i}` placeholders).
    pub via: Param,
    /// A per-flow explicit route (`from='…'`): only datagrams from this
    /// source to the single address `prefix` (`len` 32) take it, on a
    /// router, before any other route.
    #[serde(default)]
    pub from: Option<Ipv4Addr>,
    /// With `from`: only datagrams to this UDP/TCP destination port
    /// (`port='…'`).
    #[serde(default)]
    pub port: Option<u16>,
    /// Where the route is written.
    pub loc: Loc,
}

impl Default for SimSettings {
    fn default() -> Self {
        SimSettings {
            seed: 1,
            until: None,
            routing: RoutingMode::default(),
            ttl: None,
            icmp_ratelimit_ns: None,
            icmp_msgs_per_sec: None,
            icmp_msgs_burst: None,
            dns: None,
            realtime: false,
            per_packet_multipath: false,
            random_multipath: RandomMultipath::Off,
            tcp_min_rto_ns: None,
            tcp_slow_start: None,
            loc: Loc::default(),
        }
    }
}

/// How the machines of a network are joined.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum NetworkKind {
    /// A switched LAN: every machine has its own port with an output queue.
    #[default]
    Switch,
    /// A point-to-point link between exactly two machines.
    Link,
    /// A shared radio medium (`type='wireless'`, [`WirelessSpec`]).
    Wireless,
}

/// A wireless network's radio and placement, as parsed
/// (`[Network type='wireless' standard='802.11b' …]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WirelessSpec {
    /// `a`, `b` or `g` (802.11a, 802.11b, 802.11g).
    pub standard: char,
    /// Runs 802.11 DCF (`mac='dcf'`); otherwise no contention
    /// (`mac='none'`).
    pub dcf: bool,
    /// Data rate, bit/s (`data_rate=`); `None`: the standard's top rate.
    pub rate_bps: Option<u64>,
    /// Control-frame rate, bit/s (`basic_rate=`); `None`: the lowest.
    pub basic_rate_bps: Option<u64>,
    /// Reception range, m (`range=`).
    pub range_m: f64,
    /// Carrier-sense range, m (`cs_range=`); `None`: the reception range.
    pub cs_range_m: Option<f64>,
    /// `unit_disk`, `two_ray` or `log_distance` (`propagation=`).
    pub propagation: String,
    /// Path-loss exponent of `log_distance` (`exponent=`).
    pub exponent: f64,
    /// Capture threshold, dB (`sinr=`).
    pub sinr_db: f64,
    /// RTS threshold, bytes (`rts_threshold=`); `None`: RTS/CTS off.
    pub rts_threshold: Option<u32>,
    /// The area machines stay in, m (`area='1000x500'`): positions must
    /// lie inside it.
    pub area: Option<(f64, f64)>,
    /// How machines without a position are placed (`placement=`):
    /// `line`, `grid` or `uniform`.
    pub placement: Option<String>,
    /// Distance between neighbours of a `line` or `grid`, m (`spacing=`).
    pub spacing_m: f64,
    /// `random_waypoint`, `random_walk`, `manhattan` or `setdest`
    /// (`mobility=`);
    /// `None`: the machines stay put.
    pub mobility: Option<String>,
    /// Speeds, m/s, lowest and highest (`speed='1-20'`).
    pub speed: (f64, f64),
    /// Pause at each waypoint, ns (`pause=`).
    pub pause_ns: u64,
    /// Duration of a random walk's step, ns (`step=`).
    pub step_ns: u64,
    /// An ns-2 `setdest` movement file, relative to the NDL file
    /// (`trace=`).
    pub trace: Option<String>,
    /// Distance between the streets of `manhattan`, m (`block=`).
    pub block_m: f64,
    /// Probabilities of going straight, turning left and turning right
    /// at a `manhattan` intersection (`turns='0.5,0.25,0.25'`).
    pub turns: [f64; 3],
}

impl Default for WirelessSpec {
    fn default() -> Self {
        WirelessSpec {
            standard: 'b',
            dcf: true,
            rate_bps: None,
            basic_rate_bps: None,
            range_m: 250.0,
            cs_range_m: None,
            propagation: "unit_disk".into(),
            exponent: 3.0,
            sinr_db: 10.0,
            rts_threshold: None,
            area: None,
            placement: None,
            spacing_m: 200.0,
            mobility: None,
            speed: (1.0, 20.0),
            pause_ns: 0,
            step_ns: 10_000_000_000,
            trace: None,
            block_m: 100.0,
            turns: [0.5, 0.25, 0.25],
        }
    }
}

/// One network (an Elvis `[Network id='…']` block).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetworkSpec {
    /// The network's id as written (`id='3'`).
    pub id: String,
    pub kind: NetworkKind,
    /// Bits per second; `None` = infinite (no serialization delay).
    pub bandwidth_bps: Option<u64>,
    /// One-way propagation latency in ns.
    pub latency_ns: u64,
    /// Probability that a frame is lost on a hop, in [0, 1].
    pub loss: f64,
    /// Probability that a frame gets one flipped bit on a hop, in [0, 1].
    pub corruption: f64,
    /// Probability that a frame is delivered twice on a hop, in [0, 1].
    #[serde(default)]
    pub duplicate: f64,
    /// Probability that a frame is held back (and so overtaken) on a hop,
    /// in [0, 1].
    #[serde(default)]
    pub reorder: f64,
    /// How long a reordered frame is held back, ns; `None` = the
    /// simulator's default (1 ms).
    #[serde(default)]
    pub reorder_delay_ns: Option<u64>,
    /// Largest IP datagram a frame carries (bytes), default 1500.
    pub mtu: u32,
    /// Output-queue capacity in packets per port; `None` = unbounded.
    pub queue: Option<u32>,
    /// Queue discipline of every egress queue (`qdisc='red' …`); `None`
    /// keeps the default drop-tail queues. Boxed: a spec is 200 bytes and
    /// most networks have none (a million-network star would carry 200 MB
    /// of `None`s inline).
    #[serde(default)]
    pub qdisc: Option<Box<QdiscSpec>>,
    /// Addresses listed with `[IP ip=…]` / `[IP range=…]`, in order.
    pub addresses: Vec<AddressEntry>,
    /// `subnet='a.b.c.d/len'` if given.
    pub subnet: Option<(Ipv4Addr, u8)>,
    /// Where the block starts.
    pub loc: Loc,
    /// The radio of a wireless network.
    #[serde(default)]
    pub wireless: Option<Box<WirelessSpec>>,
}

impl NetworkSpec {
    /// Returns an ideal network (Elvis' default) with the given id.
    pub fn ideal(id: impl Into<String>) -> Self {
        NetworkSpec {
            id: id.into(),
            kind: NetworkKind::Switch,
            bandwidth_bps: None,
            latency_ns: 0,
            loss: 0.0,
            corruption: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_delay_ns: None,
            mtu: 1500,
            queue: None,
            qdisc: None,
            addresses: Vec::new(),
            subnet: None,
            loc: Loc::default(),
            wireless: None,
        }
    }
}

/// Which queue discipline (`qdisc='…'`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum QdiscKind {
    DropTail,
    Red,
    TokenBucket,
    Prio,
    Drr,
    Wrr,
    Wfq,
    VirtualClock,
    /// `ecn_threshold`: CE marks at a threshold K of the instantaneous
    /// queue (DCTCP).
    EcnThreshold,
    /// `srtcm`: RFC 2697 single-rate three-colour marker.
    Srtcm,
    /// `trtcm`: RFC 2698 two-rate three-colour marker.
    Trtcm,
}

/// A queue capacity (`limit='100'`, `limit='64kB'`, `limit='inf'`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum QueueLimit {
    Unbounded,
    Packets(u32),
    Bytes(u64),
}

/// How a class-based discipline picks a frame's class (`classify='…'`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClassifySpec {
    /// `flow`: by 5-tuple hash.
    Flow,
    /// `dscp:46,0`: class `i` takes DSCP `dscp[i]`, the last class the rest.
    Dscp(Vec<u8>),
}

/// A network's queue discipline as written (parsed, not yet range
/// checked: the simulator's `QdiscConfig` does that, and `locs` lets the
/// builder point at the offending value).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QdiscSpec {
    pub kind: QdiscKind,
    pub limit: Option<QueueLimit>,
    /// RED thresholds: `(value, in bytes)`.
    pub red_min: Option<(f64, bool)>,
    pub red_max: Option<(f64, bool)>,
    pub red_max_p: Option<f64>,
    pub red_wq: Option<f64>,
    pub red_gentle: bool,
    pub red_avpkt: Option<u64>,
    pub ecn: bool,
    /// Token bucket rate, bit/s, and bucket size, bytes.
    pub rate_bps: Option<u64>,
    pub burst_bytes: Option<u64>,
    /// Class weights (meaning per discipline).
    pub weights: Vec<u64>,
    pub classify: Option<ClassifySpec>,
    /// Where each key's value is, by lower-case key (`qdisc` included).
    pub locs: Vec<(String, Loc)>,
    /// `ecn_threshold`'s K (`ecn_k`).
    pub ecn_k: Option<QueueLimit>,
    /// The colour markers' rates (bit/s) and bucket sizes (bytes):
    /// `cir`, `cbs`, `ebs` (srTCM), `pir`, `pbs` (trTCM).
    pub cir_bps: Option<u64>,
    pub cbs_bytes: Option<u64>,
    pub ebs_bytes: Option<u64>,
    pub pir_bps: Option<u64>,
    pub pbs_bytes: Option<u64>,
    /// Colour-aware metering (`color_aware`): the DSCP a frame arrives
    /// with gives its pre-colour.
    pub color_aware: bool,
    /// DSCPs written for green, yellow, red (`remark`).
    pub remark: Option<[u8; 3]>,
    /// Drop red frames instead of re-marking them (`drop_red`).
    pub drop_red: bool,
    /// Priority flow control (`pfc`, IEEE 802.1Qbb), only with `prio`.
    #[serde(default)]
    pub pfc: Option<PfcSpec>,
}

/// `pfc='3' pfc_xoff='20kB' …`: the lossless priorities and thresholds
/// (`None`: the simulator's default).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PfcSpec {
    /// Bit `i`: priority (class) `i` is lossless.
    pub lossless: u8,
    pub xoff_bytes: Option<u64>,
    pub xon_bytes: Option<u64>,
    pub quanta: Option<u16>,
    pub deadlock_ns: Option<u64>,
}

impl QdiscSpec {
    /// Returns an empty spec of `kind`.
    pub fn new(kind: QdiscKind) -> Self {
        QdiscSpec {
            kind,
            limit: None,
            red_min: None,
            red_max: None,
            red_max_p: None,
            red_wq: None,
            red_gentle: false,
            red_avpkt: None,
            ecn: false,
            rate_bps: None,
            burst_bytes: None,
            weights: Vec::new(),
            classify: None,
            locs: Vec::new(),
            ecn_k: None,
            cir_bps: None,
            cbs_bytes: None,
            ebs_bytes: None,
            pir_bps: None,
            pbs_bytes: None,
            color_aware: false,
            remark: None,
            drop_red: false,
            pfc: None,
        }
    }

    /// Returns where `key`'s value was written (else where `qdisc` was).
    pub fn loc_of(&self, key: &str) -> Loc {
        let find = |k: &str| self.locs.iter().find(|(n, _)| n == k).map(|(_, l)| *l);
        find(key).or_else(|| find("qdisc")).unwrap_or_default()
    }
}

/// One address (or range of addresses) listed for a network.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddressEntry {
    /// First address.
    pub first: Ipv4Addr,
    /// Last address (inclusive); equal to `first` for a single `ip=`.
    pub last: Ipv4Addr,
    pub loc: Loc,
}

/// A group of identical machines (an Elvis `[Machine name='…' count='…']`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineGroup {
    /// The name; instances of a counted group are `name-0`, `name-1`, ….
    pub name: String,
    /// `Some(n)` when `count` was given (even `count='1'`, which still
    /// names the machine `name-0`).
    pub count: Option<u32>,
    /// Network ids this machine is attached to, in order (one interface
    /// each).
    pub networks: Vec<Ref>,
    /// Protocols, in order.
    pub protocols: Vec<ProtocolSpec>,
    /// Applications, in order.
    pub applications: Vec<AppSpec>,
    /// The DNS servers its stub resolver asks (`resolver='10.1.0.2'`, a
    /// comma list of addresses or machine names), as written. Boxed, as
    /// are `dhcp_relay` and `tap`: few machines have one, and inline they
    /// would make every machine group of a million-host file 168 bytes
    /// larger.
    #[serde(default)]
    pub resolver: Option<Box<Param>>,
    /// Forwards datagrams addressed to others (`forward='yes'`): a router.
    #[serde(default)]
    pub forward: bool,
    /// A router that forwards without checking or decrementing the TTL
    /// (`decrement_ttl='no'`; only with `forward='yes'`).
    #[serde(default)]
    pub keep_ttl: bool,
    /// Static routes, in order (`gateway=` first).
    #[serde(default)]
    pub routes: Vec<RouteSpec>,
    /// Addresses pinned on interfaces (`[Network id='…' ip='…']`): the
    /// index into `networks` and the value as written.
    #[serde(default)]
    pub pinned: Vec<(u32, Param)>,
    /// NIC offloads of every instance (`offload='…'`, `rx_usecs='…'`);
    /// `None`: not written, the simulator's default (all off).
    #[serde(default)]
    pub offloads: Option<OffloadSpec>,
    /// A router's DHCP relay agent (`dhcp_relay='10.1.0.5'`, a comma
    /// list of server addresses), as written.
    #[serde(default)]
    pub dhcp_relay: Option<Box<Param>>,
    /// A real Linux host: the machine's frames go to and come from a TAP
    /// device (`tap='tap0'`, optionally `netns='ns1'`).
    #[serde(default)]
    pub tap: Option<Box<TapSpec>>,
    pub loc: Loc,
    /// Positions on wireless networks (`[Network id='w' x='…' y='…']`):
    /// the index into `networks`, x and y in metres, where they are
    /// written.
    #[serde(default)]
    pub positions: Vec<(u32, f64, f64, Loc)>,
}

/// A TAP machine's device and namespace, as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TapSpec {
    /// The TAP device elvis creates.
    pub device: String,
    /// The network namespace it goes into (created when missing).
    pub netns: Option<String>,
    /// Where `tap=` is written.
    pub loc: Loc,
}

/// A host's NIC offloads as written (`offload='linux'`, `offload='tso,gro'
/// rx_usecs='8us'`): the simulator's `Offloads` as plain data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffloadSpec {
    /// TCP segmentation offload (`tso`).
    pub tso: bool,
    /// Generic receive offload (`gro`); merges nothing unless `rx_usecs`
    /// is above 0.
    pub gro: bool,
    /// Receive interrupt coalescing delay, microseconds (0: none).
    pub rx_usecs: u32,
    /// Where the first of `offload=` / `rx_usecs=` is written (its key).
    pub loc: Loc,
}

impl OffloadSpec {
    /// What a Linux host with a common 10 Gbit/s NIC runs: TSO and GRO,
    /// interrupts coalesced for 8 µs (the simulator's `Offloads::LINUX`).
    pub const LINUX: OffloadSpec = OffloadSpec {
        tso: true,
        gro: true,
        rx_usecs: 8,
        loc: Loc {
            offset: 0,
            len: 0,
            line: 0,
            col: 0,
        },
    };
}

impl MachineGroup {
    /// Returns how many machines the group expands to.
    pub fn instances(&self) -> u32 {
        self.count.unwrap_or(1)
    }
}

/// A reference by name to something declared elsewhere, with its place.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ref {
    pub name: String,
    pub loc: Loc,
}

/// A protocol on a machine (`[Protocol name='UDP']`), with any extra options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProtocolSpec {
    /// The name as written (case kept); matching is case-insensitive.
    pub name: String,
    pub params: Params,
    pub loc: Loc,
}

/// An application on a machine, with its options as written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppSpec {
    /// The name as written (`send_message`); matching is case-insensitive.
    pub name: String,
    pub params: Params,
    /// Nested blocks inside the application (Elvis routers list `[IP]` and
    /// `[RouterEntry]` blocks there), kept as generic blocks.
    pub children: Vec<Block>,
    pub loc: Loc,
}

/// A generic `[Keyword key='value' …]` block with its children.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Block {
    pub keyword: String,
    pub params: Params,
    pub children: Vec<Block>,
    pub loc: Loc,
}

/// `key='value'` options in written order. Keys are stored lower-cased;
/// values exactly as written (after `\'` unescaping). Values may contain
/// `{i}` / `{name}` placeholders that the builder fills in per instance.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Params(pub Vec<Param>);

/// One `key='value'` option.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Param {
    pub key: String,
    pub value: String,
    /// Location of the value text (inside the quotes).
    pub loc: Loc,
}

impl Params {
    /// Returns the option named `key` (case-insensitive), if present.
    pub fn get(&self, key: &str) -> Option<&Param> {
        self.0.iter().find(|p| p.key.eq_ignore_ascii_case(key))
    }

    /// Returns the value of option `key`, if present.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.get(key).map(|p| p.value.as_str())
    }

    /// Adds an option (for scenarios built in code).
    pub fn with(mut self, key: &str, value: impl Into<String>) -> Self {
        self.0.push(Param {
            key: key.to_ascii_lowercase(),
            value: value.into(),
            loc: Loc::default(),
        });
        self
    }

    /// Iterates over the options in written order.
    pub fn iter(&self) -> impl Iterator<Item = &Param> {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_machine_group_keeps_its_rare_options_out_of_line() {
        // A million-host file holds a million groups: what few machines
        // have (a resolver, a DHCP relay, a TAP device) is boxed.
        assert!(std::mem::size_of::<MachineGroup>() <= 248);
    }
}
