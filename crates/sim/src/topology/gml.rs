//! Import of a graph in GML (the Graph Modelling Language of Himsolt's
//! technical report, as written by the Internet Topology Zoo and read by
//! Shadow): every node becomes a router with one host, every edge a
//! point-to-point link, routes are automatic shortest paths.
//!
//! ```text
//! graph [
//!   node [ id 0 label "Seattle" ]
//!   node [ id 1 label "Denver" ]
//!   edge [ source 0 target 1 bandwidth "1 Gbit" latency "12 ms" ]
//! ]
//! ```
//!
//! # Accepted keys
//! - node: `id` (integer, required, unique), `label` (string; default
//!   the id). Other keys (Topology Zoo's `Latitude`, `Country`, …) are
//!   skipped.
//! - edge: `source`, `target` (node ids, required); the link's
//!   bandwidth from `bandwidth` (Shadow style: a string such as
//!   `"100 Mbit"`, `"1 Gbit"`, `"10Mbps"`, or a number of bit/s), else
//!   `LinkSpeedRaw` (Topology Zoo: bit/s), else `LinkSpeed` with
//!   `LinkSpeedUnits` (`"M"`, `"G"`, …); the latency from `latency`
//!   (`"12 ms"`, `"250 us"`, `"1 s"`, `"800 ns"`, or a number of ms);
//!   the loss probability from `packet_loss` or `loss` (0 to 1). What an
//!   edge does not give comes from [`GraphParams::link`].
//! - Self-loops (Shadow describes a node's own latency with one) are
//!   skipped; a second edge between the same two nodes (a directed
//!   graph's way back) is skipped too, so each pair gets one link.
//!
//! # What is built
//! Node i (in file order) becomes `router-i` with `host-i` hanging off it
//! on its own link (`host-i`, configured as [`GraphParams::access`]).
//! Links are numbered as consecutive /30 blocks from `10.0.0.0` (see
//! [`super::chain`](mod@super::chain)): first the host links (host at `+1`, so `host-i` is
//! `10.0.0.0 + 4i + 1`), then the edges in file order, named `edge-j`.
//! Routes are automatic with the metric of [`GraphParams::metric`].
//!
//! # Why a hand-written parser
//! The crates on crates.io (`graph-io-gml`, `gml_parser`) report errors
//! as strings without a position, pull in parser-combinator and graph
//! crates, and are not kept up; GML is a dozen lines of grammar, and this
//! parser names `line:col` for every error.

use super::{check, hosts_behind_routers, link, Numbered, Topology, TopologyError};
use crate::net::NetworkConfig;
use crate::simulation::Simulation;
use crate::stack::route::Metric;
use std::collections::BTreeMap;

/// A parsed graph.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    /// Nodes in file order.
    pub nodes: Vec<Node>,
    /// Edges in file order (self-loops and repeated pairs dropped).
    pub edges: Vec<Edge>,
}

/// One node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub id: i64,
    pub label: String,
}

/// One edge between nodes (indices into [`Graph::nodes`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Edge {
    pub a: usize,
    pub b: usize,
    pub bandwidth_bps: Option<u64>,
    pub latency_ns: Option<u64>,
    pub loss: Option<f64>,
}

/// A GML value.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Int(i64),
    Real(f64),
    Str(String),
    List(Vec<Item>),
}

/// `key value` with the position of the value.
#[derive(Clone, Debug, PartialEq)]
struct Item {
    key: String,
    value: Value,
    line: u32,
    col: u32,
}

struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
    line: u32,
    col: u32,
}

fn gml_err(line: u32, col: u32, message: impl Into<String>) -> TopologyError {
    TopologyError::Gml {
        line,
        col,
        message: message.into(),
    }
}

impl Lexer<'_> {
    fn bump(&mut self) {
        if self.s[self.i] == b'\n' {
            self.line += 1;
            self.col = 1;
        } else if self.s[self.i] & 0xc0 != 0x80 {
            self.col += 1;
        }
        self.i += 1;
    }

    fn skip_space(&mut self) {
        while self.i < self.s.len() {
            match self.s[self.i] {
                b'#' => {
                    while self.i < self.s.len() && self.s[self.i] != b'\n' {
                        self.bump();
                    }
                }
                c if c.is_ascii_whitespace() => self.bump(),
                _ => break,
            }
        }
    }

    fn take_while(&mut self, f: impl Fn(u8) -> bool) -> String {
        let start = self.i;
        while self.i < self.s.len() && f(self.s[self.i]) {
            self.bump();
        }
        String::from_utf8_lossy(&self.s[start..self.i]).into_owned()
    }

    /// Parses `key value` pairs until `]` (when `nested`) or the end.
    fn list(&mut self, nested: Option<(u32, u32)>) -> Result<Vec<Item>, TopologyError> {
        let mut items = Vec::new();
        loop {
            self.skip_space();
            let (line, col) = (self.line, self.col);
            match self.s.get(self.i) {
                None => {
                    return match nested {
                        Some((l, c)) => Err(gml_err(l, c, "this '[' is never closed")),
                        None => Ok(items),
                    }
                }
                Some(b']') if nested.is_some() => {
                    self.bump();
                    return Ok(items);
                }
                Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {}
                Some(_) => {
                    return Err(gml_err(
                        line,
                        col,
                        "expected a key (a name such as 'node' or 'id')",
                    ))
                }
            }
            let key = self.take_while(|c| c.is_ascii_alphanumeric() || c == b'_');
            self.skip_space();
            let (vl, vc) = (self.line, self.col);
            let value = self.value(&key)?;
            items.push(Item {
                key,
                value,
                line: vl,
                col: vc,
            });
        }
    }

    fn value(&mut self, key: &str) -> Result<Value, TopologyError> {
        let (line, col) = (self.line, self.col);
        match self.s.get(self.i) {
            Some(b'[') => {
                self.bump();
                Ok(Value::List(self.list(Some((line, col)))?))
            }
            Some(b'"') => {
                self.bump();
                let s = self.take_while(|c| c != b'"');
                if self.i >= self.s.len() {
                    return Err(gml_err(line, col, "this string is never closed"));
                }
                self.bump();
                Ok(Value::Str(s))
            }
            Some(c) if c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.') => {
                let t = self
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'.'));
                if let Ok(n) = t.parse::<i64>() {
                    Ok(Value::Int(n))
                } else if let Ok(x) = t.parse::<f64>() {
                    Ok(Value::Real(x))
                } else {
                    Err(gml_err(line, col, format!("'{t}' is not a number")))
                }
            }
            _ => Err(gml_err(
                line,
                col,
                format!("'{key}' has no value (expected a number, a \"string\" or a [list])"),
            )),
        }
    }
}

impl Graph {
    /// Parses GML text.
    ///
    /// # Errors
    /// `TopologyError::Gml` with the 1-based line and column: a syntax
    /// error, no `graph [...]`, a node without an integer `id` or with a
    /// repeated one, an edge without `source`/`target` or naming an
    /// unknown node, a bandwidth or latency that does not parse.
    pub fn parse(text: &str) -> Result<Graph, TopologyError> {
        let mut lx = Lexer {
            s: text.as_bytes(),
            i: 0,
            line: 1,
            col: 1,
        };
        let top = lx.list(None)?;
        let Some(Item {
            value: Value::List(body),
            ..
        }) = top
            .into_iter()
            .find(|i| i.key.eq_ignore_ascii_case("graph"))
        else {
            return Err(gml_err(1, 1, "no 'graph [ … ]' in the file"));
        };
        let mut g = Graph::default();
        let mut index: BTreeMap<i64, usize> = BTreeMap::new();
        for item in body.iter().filter(|i| i.key == "node") {
            let Value::List(attrs) = &item.value else {
                return Err(gml_err(
                    item.line,
                    item.col,
                    "a node is a list: node [ id … ]",
                ));
            };
            let id = int(attrs, "id", item)?;
            if index.insert(id, g.nodes.len()).is_some() {
                let at = attrs.iter().find(|a| a.key == "id").unwrap_or(item);
                return Err(gml_err(
                    at.line,
                    at.col,
                    format!("node id {id} is used twice"),
                ));
            }
            let label = match attrs.iter().find(|a| a.key == "label").map(|a| &a.value) {
                Some(Value::Str(s)) => s.clone(),
                _ => id.to_string(),
            };
            g.nodes.push(Node { id, label });
        }
        let mut pairs = std::collections::BTreeSet::new();
        for item in body.iter().filter(|i| i.key == "edge") {
            let Value::List(attrs) = &item.value else {
                return Err(gml_err(
                    item.line,
                    item.col,
                    "an edge is a list: edge [ source … target … ]",
                ));
            };
            let end = |key: &str| -> Result<usize, TopologyError> {
                let id = int(attrs, key, item)?;
                let at = attrs.iter().find(|a| a.key == key).unwrap_or(item);
                index.get(&id).copied().ok_or_else(|| {
                    gml_err(
                        at.line,
                        at.col,
                        format!("{key} {id} is not the id of a node"),
                    )
                })
            };
            let (a, b) = (end("source")?, end("target")?);
            if a == b || !pairs.insert((a.min(b), a.max(b))) {
                continue;
            }
            g.edges.push(Edge {
                a,
                b,
                bandwidth_bps: bandwidth(attrs)?,
                latency_ns: latency(attrs)?,
                loss: loss(attrs)?,
            });
        }
        Ok(g)
    }

    /// Returns the connected components (node indices) in order of their
    /// first node.
    pub fn components(&self) -> Vec<Vec<usize>> {
        let mut parent: Vec<usize> = (0..self.nodes.len()).collect();
        fn find(p: &mut [usize], mut x: usize) -> usize {
            while p[x] != x {
                p[x] = p[p[x]];
                x = p[x];
            }
            x
        }
        for e in &self.edges {
            let (ra, rb) = (find(&mut parent, e.a), find(&mut parent, e.b));
            parent[ra.max(rb)] = ra.min(rb);
        }
        let mut comps: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for n in 0..self.nodes.len() {
            let r = find(&mut parent, n);
            comps.entry(r).or_default().push(n);
        }
        comps.into_values().collect()
    }
}

/// Returns the integer value of `key` in `attrs`.
fn int(attrs: &[Item], key: &str, owner: &Item) -> Result<i64, TopologyError> {
    match attrs.iter().find(|a| a.key == key) {
        Some(Item {
            value: Value::Int(n),
            ..
        }) => Ok(*n),
        Some(a) => Err(gml_err(
            a.line,
            a.col,
            format!("'{key}' must be an integer"),
        )),
        None => Err(gml_err(
            owner.line,
            owner.col,
            format!("this {} has no '{key}'", owner.key),
        )),
    }
}

/// Splits `"100 Mbit"` into (100.0, "mbit").
fn number_unit(s: &str) -> Option<(f64, String)> {
    let s = s.trim();
    let end = s
        .find(|c: char| {
            !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')
        })
        .unwrap_or(s.len());
    let x: f64 = s[..end].parse().ok()?;
    (x.is_finite() && x >= 0.0).then(|| (x, s[end..].trim().to_ascii_lowercase()))
}

fn bandwidth(attrs: &[Item]) -> Result<Option<u64>, TopologyError> {
    let get = |k: &str| attrs.iter().find(|a| a.key == k);
    let bad = |a: &Item| {
        gml_err(
            a.line,
            a.col,
            format!(
                "'{}' is not a bandwidth (write e.g. \"100 Mbit\" or \"1 Gbit\")",
                a.key
            ),
        )
    };
    if let Some(a) = get("bandwidth") {
        let bps = match &a.value {
            Value::Int(n) if *n > 0 => *n as f64,
            Value::Real(x) if *x > 0.0 => *x,
            Value::Str(s) => {
                let (x, unit) = number_unit(s).ok_or_else(|| bad(a))?;
                let unit = unit
                    .trim_end_matches("ps")
                    .trim_end_matches("/s")
                    .trim_end_matches("it")
                    .trim_end_matches('b');
                x * match unit {
                    "" => 1e0,
                    "k" => 1e3,
                    "m" => 1e6,
                    "g" => 1e9,
                    "t" => 1e12,
                    _ => return Err(bad(a)),
                }
            }
            _ => return Err(bad(a)),
        };
        return if bps >= 1.0 {
            Ok(Some(bps.round() as u64))
        } else {
            Err(bad(a))
        };
    }
    if let Some(a) = get("LinkSpeedRaw") {
        return match a.value {
            Value::Int(n) if n > 0 => Ok(Some(n as u64)),
            Value::Real(x) if x >= 1.0 => Ok(Some(x.round() as u64)),
            _ => Err(bad(a)),
        };
    }
    if let Some(a) = get("LinkSpeed") {
        let x = match &a.value {
            Value::Int(n) => *n as f64,
            Value::Real(x) => *x,
            Value::Str(s) => s.trim().parse().map_err(|_| bad(a))?,
            Value::List(_) => return Err(bad(a)),
        };
        let scale = match get("LinkSpeedUnits").map(|u| &u.value) {
            Some(Value::Str(u)) => match u.trim().to_ascii_lowercase().as_str() {
                "" => 1e0,
                "k" => 1e3,
                "m" => 1e6,
                "g" => 1e9,
                "t" => 1e12,
                _ => return Err(bad(get("LinkSpeedUnits").unwrap_or(a))),
            },
            _ => 1e6,
        };
        return if x * scale >= 1.0 {
            Ok(Some((x * scale).round() as u64))
        } else {
            Err(bad(a))
        };
    }
    Ok(None)
}

fn latency(attrs: &[Item]) -> Result<Option<u64>, TopologyError> {
    let Some(a) = attrs.iter().find(|a| a.key == "latency") else {
        return Ok(None);
    };
    let bad = || {
        gml_err(
            a.line,
            a.col,
            "'latency' is not a duration (write e.g. \"12 ms\" or \"250 us\")",
        )
    };
    let ns = match &a.value {
        Value::Int(n) if *n >= 0 => *n as f64 * 1e6,
        Value::Real(x) if *x >= 0.0 => x * 1e6,
        Value::Str(s) => {
            let (x, unit) = number_unit(s).ok_or_else(bad)?;
            x * match unit.as_str() {
                "ns" => 1.0,
                "us" | "µs" => 1e3,
                "" | "ms" => 1e6,
                "s" => 1e9,
                _ => return Err(bad()),
            }
        }
        _ => return Err(bad()),
    };
    Ok(Some(ns.round() as u64))
}

fn loss(attrs: &[Item]) -> Result<Option<f64>, TopologyError> {
    let Some(a) = attrs
        .iter()
        .find(|a| a.key == "packet_loss" || a.key == "loss")
    else {
        return Ok(None);
    };
    let x = match &a.value {
        Value::Int(n) => *n as f64,
        Value::Real(x) => *x,
        Value::Str(s) => s.trim().parse().unwrap_or(f64::NAN),
        Value::List(_) => f64::NAN,
    };
    if (0.0..=1.0).contains(&x) {
        Ok(Some(x))
    } else {
        Err(gml_err(
            a.line,
            a.col,
            format!("'{}' must be a probability from 0 to 1", a.key),
        ))
    }
}

/// The parameters of [`graph`].
#[derive(Clone, Debug, PartialEq)]
pub struct GraphParams {
    pub graph: Graph,
    /// Defaults for what an edge does not give (name replaced).
    pub link: NetworkConfig,
    /// Every host's link to its router (name replaced).
    pub access: NetworkConfig,
    /// How automatic routes measure a path.
    pub metric: Metric,
    /// Prepended to every machine and network name.
    pub prefix: String,
}

impl GraphParams {
    /// Returns parameters with ideal links and hop-count routes.
    pub fn new(graph: Graph) -> Self {
        GraphParams {
            graph,
            link: NetworkConfig::ideal(""),
            access: NetworkConfig::ideal(""),
            metric: Metric::Hops,
            prefix: String::new(),
        }
    }
}

/// Builds the graph into `sim` and turns on automatic routes.
///
/// # Errors
/// `BadParameter { key: "file" }` for a graph without nodes;
/// `Disconnected` naming the components; `NameClash`.
pub fn graph(sim: &mut Simulation, p: &GraphParams) -> Result<Topology, TopologyError> {
    let g = &p.graph;
    check(!g.nodes.is_empty(), "file", "the graph has no nodes")?;
    check(
        g.nodes.len() + g.edges.len() < Numbered::MAX as usize,
        "file",
        "the graph does not fit in 10.0.0.0/8",
    )?;
    let comps = g.components();
    if comps.len() > 1 {
        let named = comps
            .iter()
            .map(|c| c.iter().map(|&n| g.nodes[n].label.clone()).collect())
            .collect();
        return Err(TopologyError::Disconnected(named));
    }
    let mut numbers = Numbered::default();
    let n = g.nodes.len() as u32;
    let mut topo = hosts_behind_routers(sim, &p.prefix, &p.access, n, &mut numbers)?;
    let routers = topo.routers[0];
    for (j, e) in g.edges.iter().enumerate() {
        let mut cfg = link(&p.link, format!("{}edge-{j}", p.prefix));
        if let Some(bps) = e.bandwidth_bps {
            cfg.bandwidth_bps = Some(bps);
        }
        cfg.latency_ns = e.latency_ns.unwrap_or(cfg.latency_ns);
        cfg.loss = e.loss.unwrap_or(cfg.loss);
        let (a, b) = (routers + e.a as u32, routers + e.b as u32);
        topo.networks.push(numbers.connect(sim, cfg, a, b)?.0);
    }
    sim.set_auto_routes(Some(p.metric));
    Ok(topo)
}

#[cfg(test)]
mod test {
    use super::*;

    fn err_at(text: &str) -> (u32, u32, String) {
        match Graph::parse(text) {
            Err(TopologyError::Gml { line, col, message }) => (line, col, message),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn nodes_edges_and_both_bandwidth_dialects_parse() {
        let g = Graph::parse(
            "Creator \"x\"\ngraph [\n directed 1\n node [ id 7 label \"A\" Latitude 1.5 ]\n node [ id 9 ]\n\
             edge [ source 7 target 9 LinkSpeed \"2.5\" LinkSpeedUnits \"G\" ]\n\
             edge [ source 9 target 7 bandwidth \"10 Mbit\" latency \"250 us\" packet_loss 0.01 ]\n\
             edge [ source 9 target 9 latency \"1 ms\" ]\n]\n",
        )
        .unwrap();
        assert_eq!(
            g.nodes,
            vec![
                Node {
                    id: 7,
                    label: "A".into()
                },
                Node {
                    id: 9,
                    label: "9".into()
                }
            ]
        );
        assert_eq!(
            g.edges.len(),
            1,
            "the way back and the self-loop are skipped"
        );
        assert_eq!(g.edges[0].bandwidth_bps, Some(2_500_000_000));
        assert_eq!(g.edges[0].latency_ns, None);
    }

    #[test]
    fn shadow_style_strings_give_bandwidth_latency_and_loss() {
        let g = Graph::parse(
            "graph [ node [ id 0 ] node [ id 1 ]\n edge [ source 0 target 1 bandwidth \"1 Gbit\" latency \"12 ms\" loss 0.5 ] ]",
        )
        .unwrap();
        let e = &g.edges[0];
        assert_eq!(
            (e.bandwidth_bps, e.latency_ns, e.loss),
            (Some(1_000_000_000), Some(12_000_000), Some(0.5))
        );
        for (text, bps) in [
            ("\"10Mbps\"", 10_000_000),
            ("\"64 kbit/s\"", 64_000),
            ("5000", 5000),
        ] {
            let g = Graph::parse(&format!(
                "graph [ node [ id 0 ] node [ id 1 ] edge [ source 0 target 1 bandwidth {text} ] ]"
            ))
            .unwrap();
            assert_eq!(g.edges[0].bandwidth_bps, Some(bps), "{text}");
        }
    }

    #[test]
    fn errors_name_the_line_and_column() {
        let (l, c, m) = err_at("graph [\n  node [ id 0 ]\n  edge [ source 0 target 4 ]\n]");
        assert_eq!((l, c), (3, 26), "{m}");
        assert!(m.contains("target 4"), "{m}");
        let (l, c, m) = err_at("graph [\n  node [ id 0 ]\n  node [ id 0 ]\n]");
        assert_eq!((l, c), (3, 13), "{m}");
        let (l, c, m) = err_at("graph [\n  node [ id 0 label \"x ]\n]");
        assert_eq!((l, c), (2, 21), "{m}");
        let (l, c, m) = err_at("graph [\n  node [ id 0 ]\n");
        assert_eq!((l, c), (1, 7), "{m}");
        assert!(m.contains("never closed"), "{m}");
        let (l, c, m) = err_at("graph [ node [ label \"x\" ] ]");
        assert_eq!((l, c), (1, 14), "{m}");
        assert!(m.contains("no 'id'"), "{m}");
        let (l, _, m) = err_at("graph [ node [ id 0 ] node [ id 1 ]\nedge [ source 0 target 1 latency \"3 parsecs\" ] ]");
        assert_eq!(l, 2, "{m}");
        let (_, _, m) = err_at("nodes [ ]");
        assert!(m.contains("no 'graph"), "{m}");
        let (l, c, _) = err_at("graph [ ? ]");
        assert_eq!((l, c), (1, 9));
    }

    #[test]
    fn a_disconnected_graph_is_refused_naming_its_components() {
        let g = Graph::parse(
            "graph [ node [ id 0 label \"a\" ] node [ id 1 label \"b\" ] node [ id 2 label \"c\" ]\n edge [ source 0 target 2 ] ]",
        )
        .unwrap();
        let mut sim = Simulation::new(1);
        let e = graph(&mut sim, &GraphParams::new(g)).unwrap_err();
        assert_eq!(
            e,
            TopologyError::Disconnected(vec![vec!["a".into(), "c".into()], vec!["b".into()]])
        );
        assert!(e.to_string().contains("2 components: {a, c} {b}"), "{e}");
        assert_eq!(sim.machine_count(), 0);
    }
}
