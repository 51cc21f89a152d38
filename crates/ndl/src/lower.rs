//! Lowering: the block tree to a [`Scenario`], checking everything that can
//! be checked without building the simulation.
//!
//! Checked here: section and block keywords, the keys each block accepts,
//! required keys, duplicate network ids and machine names, references from
//! machines to networks, numbers, units, addresses, ranges and subnets,
//! addresses listed or claimed (by an application's `ip=`) twice,
//! placeholders in per-instance values, and that a `type='link'` network
//! joins exactly two machine interfaces.
//!
//! Not checked here (the builder does, with the `Loc`s stored on every
//! value): application and protocol option values, `to=` machine names.
//!
//! Errors are collected, not stopped at, so one run reports them all.

use crate::error::{ErrorKind, NdlError};
use crate::parser::{Block, Param, Span};
use crate::{suggest, SourceMap};
use elvis_scenario::units::{parse_duration_ns, parse_u64};
use elvis_scenario::{Loc, Scenario};
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;

const SECTIONS: &[&str] = &[
    "Networks",
    "Machines",
    "Simulation",
    "Template",
    "Templates",
    "Topology",
];
const NETWORK_KEYS: &[&str] = &[
    "id",
    "type",
    "bandwidth",
    "latency",
    "loss",
    "corruption",
    "duplicate",
    "reorder",
    "reorder_delay",
    "mtu",
    "queue",
    "subnet",
];
const MACHINE_SECTIONS: &[&str] = &["Networks", "Protocols", "Applications", "Routes", "Route"];
/// The keys of a `[Machine]` (and of a `[Template]`, which holds a
/// machine's keys but `name`), but `template`.
const MACHINE_KEYS: &[&str] = &[
    "name",
    "count",
    "resolver",
    "forward",
    "decrement_ttl",
    "gateway",
    "offload",
    "rx_usecs",
    "dhcp_relay",
    "tap",
    "netns",
];

/// Parses and lowers `src`. Each network and machine block is lowered
/// as soon as the parser has read it and then dropped, so a large file's
/// block tree is never whole in memory.
///
/// # Errors
/// The first syntax error alone; otherwise every problem found, in source
/// order.
pub fn parse_and_lower(src: &str, map: &SourceMap<'_>) -> Result<Scenario, Vec<NdlError>> {
    let mut l = Lower::new(map);
    // Sized once: the lists would otherwise grow by doubling, copying
    // every network and machine lowered so far at each step.
    let (networks, machines) = depth_one_counts(src, map);
    l.sc.networks.reserve_exact(networks);
    l.net_ids.reserve(networks);
    l.sc.machines.reserve_exact(machines);
    l.machine_names.reserve(machines);
    crate::parser::parse_into(src, map, &mut l).map_err(|e| vec![e])?;
    l.finish()
}

/// Counts the lines that open a `[Network` or `[Machine` block one level
/// deep (one tab or four spaces). For a well-formed file these are its
/// networks and machines; the counts only size lists, so a file indented
/// otherwise just grows them.
fn depth_one_counts(src: &str, map: &SourceMap<'_>) -> (usize, usize) {
    let b = src.as_bytes();
    let (mut networks, mut machines) = (0, 0);
    for &start in &map.line_starts {
        let line = b.get(start..).unwrap_or_default();
        let Some(rest) = line
            .strip_prefix(b"\t")
            .or_else(|| line.strip_prefix(b"    "))
            .and_then(|r| r.strip_prefix(b"["))
        else {
            continue;
        };
        let opens = |kw: &[u8]| {
            rest.get(..kw.len())
                .is_some_and(|w| w.eq_ignore_ascii_case(kw))
                && matches!(rest.get(kw.len()), Some(b' ' | b'\t' | b']'))
        };
        if opens(b"network") {
            networks += 1;
        } else if opens(b"machine") {
            machines += 1;
        }
    }
    (networks, machines)
}

impl<'s> crate::parser::Sink<'s> for Lower<'_> {
    fn child(&mut self, root: &Block<'s>, child: Block<'s>) -> Option<Block<'s>> {
        if root.is("Networks") && child.is("Network") {
            self.network(&child);
        } else if root.is("Machines") && child.is("Machine") {
            self.machine(&child);
        } else {
            return Some(child);
        }
        None
    }

    fn root(&mut self, mut root: Block<'s>) {
        self.section(&mut root);
    }
}

struct Lower<'a> {
    map: &'a SourceMap<'a>,
    errors: Vec<NdlError>,
    sc: Scenario,
    /// Network id → where it was declared.
    net_ids: HashMap<String, Loc>,
    /// Network id → the `type='link'` value, for links only.
    link_locs: HashMap<String, Loc>,
    machine_names: HashMap<String, Loc>,
    /// Addresses listed by `[IP]` blocks: first → (last, where).
    listed: BTreeMap<u32, (u32, Loc)>,
    /// Addresses claimed by applications' `ip=`: first → (last, where).
    claimed: BTreeMap<u32, (u32, Loc)>,
    /// Where the `[Simulation]` block was, once seen.
    sim: Option<Loc>,
    /// The networks of the machine block being lowered: id → index into
    /// its `networks` (a router may have a million interfaces, so the
    /// duplicate check must not scan them).
    attached: HashMap<String, usize>,
    /// The templates declared so far, by name.
    templates: BTreeMap<String, template::Template>,
    /// `template=` values that named no template declared before them.
    template_uses: Vec<(String, Loc)>,
}

/// Returns the earlier entry of `set` overlapping `first..=last`, or
/// records the range. The ranges in `set` never overlap each other.
fn take(
    set: &mut BTreeMap<u32, (u32, Loc)>,
    first: u32,
    last: u32,
    loc: Loc,
) -> Result<(), (u32, Loc)> {
    if let Some((&f, &(l, at))) = set.range(..=last).next_back() {
        if l >= first {
            return Err((f.max(first), at));
        }
    }
    set.insert(first, (last, loc));
    Ok(())
}

/// Returns the entry of `keys` that `key` spells, ignoring ASCII case:
/// its lowercase form, found without allocating one (every block of a
/// large file passes here).
fn canonical<'k>(key: &str, keys: &[&'k str]) -> Option<&'k str> {
    keys.iter().copied().find(|k| k.eq_ignore_ascii_case(key))
}

fn at(loc: Loc) -> String {
    format!("line {}, column {}", loc.line, loc.col)
}

impl<'a> Lower<'a> {
    fn new(map: &'a SourceMap<'a>) -> Self {
        Lower {
            map,
            errors: Vec::new(),
            sc: Scenario::default(),
            net_ids: HashMap::default(),
            link_locs: HashMap::default(),
            machine_names: HashMap::default(),
            listed: BTreeMap::new(),
            claimed: BTreeMap::new(),
            sim: None,
            attached: HashMap::default(),
            templates: BTreeMap::new(),
            template_uses: Vec::new(),
        }
    }

    /// The checks that need the whole file, then the scenario.
    fn finish(mut self) -> Result<Scenario, Vec<NdlError>> {
        self.resolve_networks();
        self.check_links();
        self.check_instance_names();
        self.check_template_uses();
        self.check_positions();
        self.sc.networks.shrink_to_fit();
        self.sc.machines.shrink_to_fit();
        if self.errors.is_empty() {
            Ok(self.sc)
        } else {
            self.errors.sort_by_key(|e| e.loc.offset);
            // A template's mistake is found once per machine using it.
            self.errors
                .dedup_by(|a, b| a.loc.offset == b.loc.offset && a.message == b.message);
            Err(self.errors)
        }
    }
}

impl Lower<'_> {
    fn loc(&self, span: Span) -> Loc {
        self.map.loc(span)
    }

    fn error(&mut self, kind: ErrorKind, span: Span, msg: impl Into<String>, hint: Option<String>) {
        let e = NdlError::new(kind, self.loc(span), msg).maybe_hint(hint);
        self.errors.push(e);
    }

    /// Reports every key of `b` that is not in `allowed`.
    fn keys(&mut self, b: &Block, allowed: &[&str]) {
        for p in &b.params {
            if allowed.iter().any(|k| p.key.node.eq_ignore_ascii_case(k)) {
                continue;
            }
            let kw = &b.keyword.node;
            let (msg, hint) = if allowed.is_empty() {
                (
                    format!("`[{kw}]` takes no options, found `{}`", p.key.node),
                    None,
                )
            } else {
                let hint = match suggest(&p.key.node, allowed) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!("`[{kw}]` accepts {}", allowed.join(", ")),
                };
                (
                    format!("unknown key `{}` in `[{kw}]`", p.key.node),
                    Some(hint),
                )
            };
            self.error(ErrorKind::UnknownKey, p.key.span, msg, hint);
        }
    }

    /// Returns the required option `key`, reporting it when missing.
    fn required<'b, 's>(&mut self, b: &'b Block<'s>, key: &str) -> Option<&'b Param<'s>> {
        let p = b.param(key);
        if p.is_none() {
            let kw = &b.keyword.node;
            let hint = Some(format!("write [{kw} {key}='…']"));
            let a = if key.starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            };
            let msg = format!("`[{kw}]` needs {a} `{key}`");
            self.error(ErrorKind::MissingKey, b.head(), msg, hint);
        }
        p
    }

    /// Reports a block that may not appear inside `parent`.
    fn unexpected(&mut self, b: &Block, parent: Option<&str>, expected: &[&str]) {
        let kw = &b.keyword.node;
        let msg = match parent {
            None => format!("unknown section `[{kw}]`"),
            Some(p) => format!("`[{kw}]` cannot appear inside `[{p}]`"),
        };
        let hint = match (suggest(kw, expected), expected) {
            (Some(s), _) => format!("did you mean `[{s}]`?"),
            (None, []) => format!("`[{}]` takes no nested blocks", parent.unwrap_or_default()),
            (None, _) => format!(
                "expected {}",
                expected
                    .iter()
                    .map(|e| format!("[{e}]"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        self.error(ErrorKind::UnknownKeyword, b.head(), msg, Some(hint));
    }

    fn no_children(&mut self, b: &Block) {
        for c in &b.children {
            self.unexpected(c, Some(&b.keyword.node), &[]);
        }
    }

    /// Parses option `p` with `f`, reporting a failure with an example.
    fn value<T>(
        &mut self,
        p: &Param,
        f: impl Fn(&str) -> Result<T, String>,
        example: &str,
    ) -> Option<T> {
        match f(&p.value.node) {
            Ok(v) => Some(v),
            Err(why) => {
                let msg = format!(
                    "bad {} '{}': {why}",
                    p.key.node.to_ascii_lowercase(),
                    p.value.node
                );
                self.error(
                    ErrorKind::BadValue,
                    p.value.span,
                    msg,
                    Some(format!("write e.g. {example}")),
                );
                None
            }
        }
    }

    fn section(&mut self, b: &mut Block) {
        if b.is("Template") || b.is("Templates") {
            return self.templates(b);
        }
        if b.is("Simulation") {
            return self.simulation(b);
        }
        if b.is("Topology") {
            return self.topology(b);
        }
        let (child, f): (&str, fn(&mut Self, &Block)) = if b.is("Networks") {
            ("Network", Self::network)
        } else if b.is("Machines") {
            ("Machine", Self::machine)
        } else {
            return self.unexpected(b, None, SECTIONS);
        };
        self.keys(b, &[]);
        let children = std::mem::take(&mut b.children);
        let n = children.iter().filter(|c| c.is(child)).count();
        if child == "Network" {
            self.sc.networks.reserve_exact(n);
        } else {
            self.sc.machines.reserve_exact(n);
        }
        for c in children {
            if c.is(child) {
                f(self, &c);
            } else {
                self.unexpected(&c, Some(&b.keyword.node), &[child]);
            }
        }
    }

    fn simulation(&mut self, b: &Block) {
        let here = self.loc(b.head());
        if let Some(first) = self.sim {
            let hint = Some(format!("the first is at {}", at(first)));
            return self.error(
                ErrorKind::Duplicate,
                b.head(),
                "only one `[Simulation]` block is allowed",
                hint,
            );
        }
        self.sim = Some(here);
        self.sc.sim.loc = here;
        self.keys(
            b,
            &[
                "seed",
                "until",
                "routing",
                "ttl",
                "icmp_ratelimit",
                "icmp_msgs_per_sec",
                "icmp_msgs_burst",
                "dns",
                "domain",
                "realtime",
                "multipath",
                "min_rto",
                "slow_start",
            ],
        );
        self.no_children(b);
        if let Some(p) = b.param("seed") {
            if let Some(v) = self.value(p, parse_u64, "seed='42'") {
                self.sc.sim.seed = v;
            }
        }
        if let Some(p) = b.param("routing") {
            let mode = |s: &str| match s.trim().to_ascii_lowercase().as_str() {
                "shortest" | "hops" | "auto" => Ok(elvis_scenario::RoutingMode::Shortest),
                "latency" => Ok(elvis_scenario::RoutingMode::Latency),
                "static" => Ok(elvis_scenario::RoutingMode::Static),
                _ => Err("expected shortest, latency or static".to_string()),
            };
            if let Some(m) = self.value(p, mode, "routing='shortest'") {
                self.sc.sim.routing = m;
            }
        }
        if let Some(p) = b.param("until") {
            self.sc.sim.until = self.value(p, parse_duration_ns, "until='10s'");
        }
        if let Some(p) = b.param("ttl") {
            let ttl = |s: &str| match s.trim().parse::<u8>() {
                Ok(t) if t > 0 => Ok(t),
                _ => Err("expected a TTL from 1 to 255 (IPv4's TTL is 8 bits)".to_string()),
            };
            self.sc.sim.ttl = self.value(p, ttl, "ttl='255'");
        }
        if let Some(p) = b.param("icmp_ratelimit") {
            let hint = "icmp_ratelimit='1000ms' (0 turns it off)";
            self.sc.sim.icmp_ratelimit_ns = self.value(p, parse_duration_ns, hint);
        }
        if let Some(p) = b.param("icmp_msgs_per_sec") {
            let hint = "icmp_msgs_per_sec='1000' (0 turns it off)";
            self.sc.sim.icmp_msgs_per_sec = self.value(p, parse_u64, hint);
        }
        if let Some(p) = b.param("icmp_msgs_burst") {
            self.sc.sim.icmp_msgs_burst = self.value(p, parse_u64, "icmp_msgs_burst='50'");
        }
        self.realtime(b);
        self.multipath(b);
        self.min_rto(b);
        self.slow_start(b);
        self.dns_auto(b);
    }

    /// Reads `min_rto='…'`: more than 0, at most TCP's 120 s maximum.
    fn min_rto(&mut self, b: &Block) {
        let Some(p) = b.param("min_rto") else {
            return;
        };
        let rto = |s: &str| match parse_duration_ns(s) {
            Ok(ns) if ns > 0 && ns <= 120_000_000_000 => Ok(ns),
            Ok(_) => Err("expected a time above 0 and at most 120s".to_string()),
            Err(e) => Err(e),
        };
        self.sc.sim.tcp_min_rto_ns = self.value(p, rto, "min_rto='1ms'");
    }

    /// Reads `slow_start='hystart'` (the default), `'hystart++'` or
    /// `'standard'`: how CUBIC leaves slow start before a loss.
    fn slow_start(&mut self, b: &Block) {
        let Some(p) = b.param("slow_start") else {
            return;
        };
        let kind = |s: &str| {
            let t = s.trim().to_ascii_lowercase();
            match t.as_str() {
                "hystart" | "hystart++" | "standard" => Ok(t),
                _ => Err("expected hystart, hystart++ or standard".to_string()),
            }
        };
        self.sc.sim.tcp_slow_start = self.value(p, kind, "slow_start='hystart++'");
    }

    /// Reads `realtime='yes'` or `'no'` (the default).
    fn realtime(&mut self, b: &Block) {
        let Some(p) = b.param("realtime") else {
            return;
        };
        let yes = |s: &str| match s.trim().to_ascii_lowercase().as_str() {
            "yes" | "on" | "true" => Ok(true),
            "no" | "off" | "false" => Ok(false),
            _ => Err("expected yes or no".to_string()),
        };
        if let Some(on) = self.value(p, yes, "realtime='yes'") {
            self.sc.sim.realtime = on;
        }
    }

    /// Reads `multipath='flow'` (the default), `'packet'`, `'random'` or
    /// `'random_path'`.
    fn multipath(&mut self, b: &Block) {
        let Some(p) = b.param("multipath") else {
            return;
        };
        use elvis_scenario::RandomMultipath as R;
        let mode = |s: &str| match s.trim().to_ascii_lowercase().as_str() {
            "flow" => Ok((false, R::Off)),
            "packet" => Ok((true, R::Off)),
            "random" => Ok((false, R::Demux)),
            "random_path" => Ok((false, R::Path)),
            _ => Err("expected flow, packet, random or random_path".to_string()),
        };
        if let Some((per_packet, random)) = self.value(p, mode, "multipath='packet'") {
            self.sc.sim.per_packet_multipath = per_packet;
            self.sc.sim.random_multipath = random;
        }
    }

    /// Reads `dns='auto'` and its `domain` (default `elvis`).
    fn dns_auto(&mut self, b: &Block) {
        let auto = |s: &str| match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(true),
            "none" | "no" => Ok(false),
            _ => Err("expected auto or none".to_string()),
        };
        let dns = b
            .param("dns")
            .and_then(|p| self.value(p, auto, "dns='auto'"));
        let domain = b.param("domain");
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
        };
        if let Some(d) = domain {
            let v = d.value.node.trim().trim_end_matches('.');
            if v.is_empty() || v.len() > 200 || !v.split('.').all(label_ok) {
                self.error(
                    ErrorKind::BadValue,
                    d.value.span,
                    format!("'{}' is not a domain name", d.value.node),
                    Some("domain='elvis' or domain='example.com'".into()),
                );
                return;
            }
            if dns != Some(true) {
                self.error(
                    ErrorKind::BadValue,
                    d.value.span,
                    "domain is only read with dns='auto'".to_string(),
                    Some("add dns='auto'".into()),
                );
                return;
            }
        }
        if let (Some(true), Some(p)) = (dns, b.param("dns")) {
            self.sc.sim.dns = Some(elvis_scenario::DnsAuto {
                domain: domain.map_or("elvis".to_string(), |d| {
                    d.value
                        .node
                        .trim()
                        .trim_end_matches('.')
                        .to_ascii_lowercase()
                }),
                loc: self.loc(p.value.span),
            });
        }
    }
}

mod machines;
mod networks;
mod offload;
mod protocol;
mod qdisc;
mod template;
mod topology;
mod wireless;
