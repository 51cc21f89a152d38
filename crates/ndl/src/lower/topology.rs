//! `[Topology type='…' …]`: generated topologies (FatTree, dumbbell,
//! chain, star, tree, 2-D/3-D torus, GML graph). Lowering checks the type,
//! the keys each type accepts, and the numbers (k even and at least 2, …);
//! the builder calls `elvis_sim::topology`.

use super::Lower;
use crate::error::ErrorKind;
use crate::parser::Block;
use crate::suggest;
use elvis_scenario::units::{
    parse_bandwidth, parse_duration_ns, parse_probability, parse_size_bytes, parse_u64,
};
use elvis_scenario::{LinkSpec, TopologyKind, TopologySpec};

/// The topology types, as written in `type=`.
pub(super) const TYPES: &[&str] = &[
    "fattree", "dumbbell", "chain", "star", "tree", "torus2d", "torus3d", "graph",
];

/// Keys every type accepts (and the discipline keys, `qdisc`, `limit`,
/// …, of `super::qdisc::QDISC_KEYS`).
const COMMON: &[&str] = &[
    "type",
    "prefix",
    "bandwidth",
    "latency",
    "loss",
    "mtu",
    "queue",
];

/// The discipline keys of a dumbbell's bottleneck: `QDISC_KEYS` with the
/// `bottleneck_` prefix.
const BOTTLENECK_QDISC_KEYS: &[&str] = &[
    "bottleneck_qdisc",
    "bottleneck_limit",
    "bottleneck_red_min",
    "bottleneck_red_max",
    "bottleneck_red_max_p",
    "bottleneck_red_wq",
    "bottleneck_red_gentle",
    "bottleneck_red_avpkt",
    "bottleneck_ecn",
    "bottleneck_rate",
    "bottleneck_burst",
    "bottleneck_weights",
    "bottleneck_classify",
];

fn own_keys(kind: &str) -> &'static [&'static str] {
    match kind {
        "fattree" => &["k"],
        "dumbbell" => &[
            "n",
            "bottleneck_bandwidth",
            "bottleneck_latency",
            "bottleneck_loss",
            "bottleneck_queue",
        ],
        "chain" => &["n"],
        "star" => &["n", "hub"],
        "tree" => &["depth", "fanout"],
        "torus2d" => &["x", "y"],
        "torus3d" => &["x", "y", "z"],
        "graph" => &["file"],
        _ => &[],
    }
}

impl Lower<'_> {
    /// Lowers a `[Topology]` block to a topology of the scenario.
    pub(super) fn topology(&mut self, b: &Block) {
        self.no_children(b);
        let Some(t) = self.required(b, "type") else {
            return;
        };
        let kind = t.value.node.trim().to_ascii_lowercase();
        if !TYPES.contains(&kind.as_str()) {
            let hint = match suggest(&kind, TYPES) {
                Some(s) => format!("did you mean '{s}'?"),
                None => format!("known types: {}", TYPES.join(", ")),
            };
            let msg = format!("unknown topology type '{}'", t.value.node);
            return self.error(ErrorKind::BadValue, t.value.span, msg, Some(hint));
        }
        let bottleneck_qdisc: &[&str] = if kind == "dumbbell" {
            BOTTLENECK_QDISC_KEYS
        } else {
            &[]
        };
        let allowed: Vec<&str> = (COMMON.iter())
            .chain(super::qdisc::QDISC_KEYS)
            .chain(own_keys(&kind))
            .chain(bottleneck_qdisc)
            .copied()
            .collect();
        self.keys(b, &allowed);
        let link = self.link_spec(b, "");
        let kind = self.topology_kind(b, &kind, &link);
        let prefix = b
            .param("prefix")
            .map_or(String::new(), |p| p.value.node.to_string());
        if let Some(kind) = kind {
            self.sc.topologies.push(TopologySpec {
                kind,
                link,
                prefix,
                loc: self.loc(b.head()),
            });
        }
    }

    /// Reads the options of its own that a topology of type `kind` (a
    /// known one) has in its block `b`; `link` is its links'
    /// configuration.
    fn topology_kind(&mut self, b: &Block, kind: &str, link: &LinkSpec) -> Option<TopologyKind> {
        match kind {
            "fattree" => self
                .number(b, "k", 2, "k='8'")
                .map(|k| TopologyKind::FatTree { k }),
            "dumbbell" => self.number(b, "n", 1, "n='4'").map(|hosts| {
                let mut bottleneck = self.link_spec(b, "bottleneck_");
                // One MTU for the whole topology.
                bottleneck.mtu = link.mtu;
                TopologyKind::Dumbbell { hosts, bottleneck }
            }),
            "chain" => self
                .number(b, "n", 0, "n='3'")
                .map(|routers| TopologyKind::Chain { routers }),
            "star" => {
                let router = match b.param("hub") {
                    None => Some(false),
                    Some(p) => {
                        let hub = |s: &str| match s.trim().to_ascii_lowercase().as_str() {
                            "switch" => Ok(false),
                            "router" => Ok(true),
                            _ => Err("the hub is a `switch` or a `router`".to_string()),
                        };
                        self.value(p, hub, "hub='router'")
                    }
                };
                let hosts = self.number(b, "n", 1, "n='8'");
                hosts
                    .zip(router)
                    .map(|(hosts, router)| TopologyKind::Star { hosts, router })
            }
            "tree" => {
                let depth = self.number(b, "depth", 1, "depth='3'");
                let fanout = self.number(b, "fanout", 2, "fanout='4'");
                depth
                    .zip(fanout)
                    .map(|(depth, fanout)| TopologyKind::Tree { depth, fanout })
            }
            "torus2d" | "torus3d" => {
                let axes: &[&str] = if kind == "torus2d" {
                    &["x", "y"]
                } else {
                    &["x", "y", "z"]
                };
                let dims: Vec<Option<u32>> =
                    axes.iter().map(|a| self.number(b, a, 3, "x='4'")).collect();
                dims.into_iter()
                    .collect::<Option<Vec<u32>>>()
                    .map(|dims| TopologyKind::Torus { dims })
            }
            _ => self.required(b, "file").map(|f| TopologyKind::Graph {
                file: f.value.node.to_string(),
                file_loc: self.loc(f.value.span),
            }),
        }
    }

    /// Returns the required whole number `key`, at least `min` (and even
    /// for a fat tree's k).
    fn number(&mut self, b: &Block, key: &str, min: u32, example: &str) -> Option<u32> {
        let p = self.required(b, key)?;
        let fat_k = key == "k";
        let check = |s: &str| -> Result<u32, String> {
            let n = parse_u64(s)?;
            let n = u32::try_from(n).map_err(|_| {
                format!(
                    "{n} is too large: {key} is a 32-bit count, at most {}",
                    u32::MAX
                )
            })?;
            if n < min {
                return Err(format!(
                    "{key} must be at least {min} (a smaller {key} builds no network)"
                ));
            }
            if fat_k && !n.is_multiple_of(2) {
                return Err("a fat tree needs an even k (k/2 ports up, k/2 down)".into());
            }
            if fat_k && n > 254 {
                return Err("the 10.pod.switch.id addresses need k ≤ 254".into());
            }
            Ok(n)
        };
        self.value(p, check, example)
    }

    /// Reads `{pre}bandwidth`, `{pre}latency`, `{pre}loss`, `{pre}queue`,
    /// the discipline keys `{pre}qdisc`, `{pre}limit`, … (and `mtu` for
    /// the common set).
    fn link_spec(&mut self, b: &Block, pre: &str) -> LinkSpec {
        let mut l = LinkSpec::default();
        let get = |k: &str| b.param(&format!("{pre}{k}"));
        if let Some(p) = get("bandwidth") {
            l.bandwidth_bps = self
                .value(p, parse_bandwidth, "bandwidth='1Gbps'")
                .flatten();
        }
        if let Some(p) = get("latency") {
            l.latency_ns = self
                .value(p, parse_duration_ns, "latency='10us'")
                .unwrap_or(0);
        }
        if let Some(p) = get("loss") {
            l.loss = self
                .value(p, parse_probability, "loss='0.1%'")
                .unwrap_or(0.0);
        }
        if let Some(p) = get("queue") {
            l.queue = self
                .value(p, super::networks::parse_queue, "queue='100'")
                .flatten();
        }
        if let Some(p) = b.param("mtu").filter(|_| pre.is_empty()) {
            let mtu = |s: &str| {
                match parse_size_bytes(s)? {
                n @ 68..=65535 => Ok(n as u32),
                n => Err(format!("{n} is outside 68 to 65535: IPv4 needs an MTU of at least 68 bytes (RFC 791) and a datagram is at most 65535 bytes")),
            }
            };
            l.mtu = self.value(p, mtu, "mtu='1500'").unwrap_or(1500);
        }
        l.qdisc = self.qdisc_spec(b, pre, l.queue.is_some()).map(Box::new);
        l
    }
}
