//! `[Machines]`: machine groups with their networks, protocols and
//! applications, per-instance placeholders and `ip=` claims.

use super::{at, take, Lower, MACHINE_KEYS, MACHINE_SECTIONS};
use crate::error::ErrorKind;
use crate::parser::{Block, Param};
use elvis_scenario as sc;
use elvis_scenario::units::{parse_port, parse_u64};
use elvis_scenario::{MachineGroup, Ref};
use std::net::Ipv4Addr;

/// The placeholders a per-instance value may contain.
const PLACEHOLDERS: &[&str] = &["i", "name"];

/// Checks the `{…}` placeholders in `v`: returns the first problem.
fn check_braces(v: &str, counted: bool) -> Result<(), (String, String)> {
    let mut rest = v;
    while let Some(i) = rest.find(['{', '}']) {
        if rest[i..].starts_with('}') {
            return Err((
                "unmatched `}`".into(),
                "placeholders look like {i} or {name}".into(),
            ));
        }
        let Some(close) = rest[i..].find('}') else {
            return Err((
                "unclosed `{`".into(),
                "placeholders look like {i} or {name}".into(),
            ));
        };
        let name = &rest[i + 1..i + close];
        if !PLACEHOLDERS.contains(&name) {
            let hint = "use {i} (instance number) or {name} (instance name)".to_string();
            return Err((format!("unknown placeholder `{{{name}}}`"), hint));
        }
        if name == "i" && !counted {
            let hint = "add count='N' to the machine, or write the value out".to_string();
            return Err((
                "`{i}` is only meaningful in a machine with a count".into(),
                hint,
            ));
        }
        rest = &rest[i + close + 1..];
    }
    Ok(())
}

/// Returns how many blocks the `kw` sections of `b` hold together (the
/// `[Network]`s of its `[Networks]`, …).
fn nested(b: &Block, kw: &str) -> usize {
    let of = b.children.iter().filter(|c| c.is(kw));
    of.map(|c| c.children.len()).sum()
}

impl Lower<'_> {
    fn params(&mut self, b: &Block, counted: bool) -> sc::Params {
        // A protocol's or application's `name` is its identity, not an option.
        let named = is_named(b);
        let option = |p: &&Param| !(named && p.key.node.eq_ignore_ascii_case("name"));
        // Sized exactly: an application has one of these lists per instance.
        let mut out = Vec::with_capacity(b.params.iter().filter(option).count());
        for p in b.params.iter().filter(option) {
            if let Err((msg, hint)) = check_braces(&p.value.node, counted) {
                self.error(
                    ErrorKind::BadValue,
                    p.value.span,
                    format!("in {}='{}': {msg}", p.key.node, p.value.node),
                    Some(hint),
                );
            }
            out.push(sc::Param {
                key: p.key.node.to_ascii_lowercase(),
                value: p.value.node.to_string(),
                loc: self.loc(p.value.span),
            });
        }
        sc::Params(out)
    }

    /// Keeps a block nested in an application as a generic block.
    fn generic(&mut self, b: &Block, counted: bool) -> sc::Block {
        let params = self.params(b, counted);
        let children = b
            .children
            .iter()
            .map(|c| self.generic(c, counted))
            .collect();
        sc::Block {
            keyword: b.keyword.node.to_string(),
            params,
            children,
            loc: self.loc(b.head()),
        }
    }

    /// Lowers a `[Machine]` block to a machine group of the scenario.
    pub(super) fn machine(&mut self, b: &Block) {
        if let Some(expanded) = self.instantiate(b) {
            return self.machine_block(&expanded);
        }
        self.machine_block(b);
    }

    /// Lowers a `[Machine]` block whose template, if any, is expanded.
    fn machine_block(&mut self, b: &Block) {
        // A machine's keys are a template's and `template` (made once: a
        // large file has a million machines).
        static KEYS: std::sync::LazyLock<Vec<&str>> = std::sync::LazyLock::new(|| {
            let mut keys = MACHINE_KEYS.to_vec();
            keys.push("template");
            keys
        });
        self.keys(b, &KEYS);
        let Some(name) = self.required(b, "name") else {
            return;
        };
        let count = b
            .param("count")
            .and_then(|p| self.value(p, parse_count, "count='100'"));
        let mut g = MachineGroup {
            name: name.value.node.to_string(),
            count,
            networks: Vec::new(),
            protocols: Vec::new(),
            applications: Vec::new(),
            resolver: b.param("resolver").map(|p| {
                Box::new(sc::Param {
                    key: "resolver".into(),
                    value: p.value.node.to_string(),
                    loc: self.loc(p.value.span),
                })
            }),
            forward: false,
            keep_ttl: false,
            routes: Vec::new(),
            pinned: Vec::new(),
            positions: Vec::new(),
            offloads: None,
            dhcp_relay: b.param("dhcp_relay").map(|p| {
                Box::new(sc::Param {
                    key: "dhcp_relay".into(),
                    value: p.value.node.to_string(),
                    loc: self.loc(p.value.span),
                })
            }),
            tap: None,
            loc: self.loc(b.head()),
        };
        self.check_name(name);
        self.tap(b, &mut g);
        self.forwarding(b, &mut g);
        self.offloads(b, &mut g);
        self.gateway_route(b, &mut g);
        self.machine_sections(b, &mut g);
        self.claim_ips(&g);
        // Lists grown one entry at a time keep room for four; a large
        // scenario has one or two of each per machine.
        g.networks.shrink_to_fit();
        g.protocols.shrink_to_fit();
        g.applications.shrink_to_fit();
        g.routes.shrink_to_fit();
        g.pinned.shrink_to_fit();
        self.sc.machines.push(g);
    }

    /// Reads a machine's `tap` and `netns` (a real Linux host).
    fn tap(&mut self, b: &Block, g: &mut MachineGroup) {
        let Some(p) = b.param("tap") else {
            if let Some(ns) = b.param("netns") {
                let hint = Some("add tap='tap0': a namespace holds a TAP machine's device".into());
                self.error(ErrorKind::BadValue, ns.key.span, "netns needs tap", hint);
            }
            return;
        };
        let device = p.value.node.trim();
        if device.is_empty()
            || device.len() > 15
            || !device.bytes().all(|c| c.is_ascii_graphic() && c != b'/')
        {
            let hint = Some("tap='tap0' (at most 15 characters, Linux's limit)".into());
            self.error(
                ErrorKind::BadValue,
                p.value.span,
                format!("'{device}' is not a device name"),
                hint,
            );
            return;
        }
        if g.count.is_some() {
            let hint = Some("a TAP machine is one Linux host: remove count".into());
            self.error(
                ErrorKind::BadValue,
                p.key.span,
                "tap is for one machine",
                hint,
            );
            return;
        }
        g.tap = Some(Box::new(sc::TapSpec {
            device: device.to_string(),
            netns: b.param("netns").map(|n| n.value.node.trim().to_string()),
            loc: self.loc(p.key.span),
        }));
    }

    /// Reads a machine's `forward` and `decrement_ttl` (routers only).
    fn forwarding(&mut self, b: &Block, g: &mut MachineGroup) {
        if let Some(p) = b.param("forward") {
            g.forward = self
                .value(p, parse_yes_no, "forward='yes'")
                .unwrap_or(false);
        }
        if let Some(p) = b.param("decrement_ttl") {
            let decrement = self.value(p, parse_yes_no, "decrement_ttl='no'");
            g.keep_ttl = decrement == Some(false);
            if g.keep_ttl && !g.forward {
                let hint = Some("add forward='yes': only a router forwards datagrams".into());
                self.error(
                    ErrorKind::BadValue,
                    p.key.span,
                    "decrement_ttl applies to routers only",
                    hint,
                );
            }
        }
    }

    /// Makes room for a machine's routes and adds the default route of
    /// its `gateway=`, if any.
    fn gateway_route(&mut self, b: &Block, g: &mut MachineGroup) {
        // Sized from the blocks, so no list grows and is then trimmed.
        let routes = nested(b, "Routes") + b.children.iter().filter(|c| c.is("Route")).count();
        g.routes
            .reserve_exact(usize::from(b.param("gateway").is_some()) + routes);
        if let Some(p) = b.param("gateway") {
            if let Some(via) = self.gateway(p, g.count.is_some()) {
                let loc = self.loc(p.key.span);
                g.routes.push(sc::RouteSpec {
                    prefix: Ipv4Addr::UNSPECIFIED,
                    len: 0,
                    via,
                    from: None,
                    port: None,
                    loc,
                });
            }
        }
    }

    /// Lowers the sections of a `[Machine]` block: its routes, networks,
    /// protocols and applications.
    fn machine_sections(&mut self, b: &Block, g: &mut MachineGroup) {
        // Replaced, not cleared: clearing keeps the capacity a router with
        // many networks left behind, and would cost that much per machine.
        self.attached = Default::default();
        g.networks.reserve_exact(nested(b, "Networks"));
        // An upper bound: the networks given an `ip=`.
        g.pinned.reserve_exact(nested(b, "Networks"));
        g.protocols.reserve_exact(nested(b, "Protocols"));
        g.applications.reserve_exact(nested(b, "Applications"));
        for c in &b.children {
            if c.is("Routes") {
                self.keys(c, &[]);
                self.each(c, "Route", |l, r| l.route(r, g));
            } else if c.is("Route") {
                self.route(c, g);
            } else if c.is("Networks") {
                self.keys(c, &[]);
                self.each(c, "Network", |l, n| l.attach(n, g));
            } else if c.is("Protocols") {
                self.keys(c, &[]);
                self.each(c, "Protocol", |l, p| l.protocol(p, g));
            } else if c.is("Applications") {
                self.keys(c, &[]);
                self.each(c, "Application", |l, a| l.application(a, g));
            } else {
                self.unexpected(c, Some(&b.keyword.node), MACHINE_SECTIONS);
            }
        }
    }

    /// Calls `f` on every child of `b` that is a `kw` block; reports others.
    fn each(&mut self, b: &Block, kw: &str, mut f: impl FnMut(&mut Self, &Block)) {
        for c in &b.children {
            if c.is(kw) {
                f(self, c);
            } else {
                self.unexpected(c, Some(&b.keyword.node), &[kw]);
            }
        }
    }

    fn check_name(&mut self, name: &Param) {
        let n = &name.value.node;
        if elvis_scenario::units::trim(n).is_empty() {
            let hint = Some("write e.g. name='server'".into());
            return self.error(
                ErrorKind::BadValue,
                name.value.span,
                "machine name is empty",
                hint,
            );
        }
        if let Some(&first) = self.machine_names.get(n.as_ref()) {
            let msg = format!("machine name '{n}' is used twice");
            return self.error(
                ErrorKind::Duplicate,
                name.value.span,
                msg,
                Some(format!("the first is at {}", at(first))),
            );
        }
        let loc = self.loc(name.value.span);
        self.machine_names.insert(n.to_string(), loc);
    }

    /// Checks a gateway address (`via=`, `gateway=`): an IPv4 address, or
    /// a per-instance value with placeholders.
    fn gateway(&mut self, p: &Param, counted: bool) -> Option<sc::Param> {
        let v = &p.value.node;
        if v.contains('{') {
            if let Err((msg, hint)) = check_braces(v, counted) {
                let msg = format!("in {}='{v}': {msg}", p.key.node);
                self.error(ErrorKind::BadValue, p.value.span, msg, Some(hint));
                return None;
            }
        } else {
            self.value(p, parse_ipv4, "via='10.0.0.1'")?;
        }
        Some(sc::Param {
            key: p.key.node.to_ascii_lowercase(),
            value: v.to_string(),
            loc: self.loc(p.value.span),
        })
    }

    /// `[Route to='10.1.0.0/16' via='10.0.0.1']` (`to='default'` is
    /// `0.0.0.0/0`), or a per-flow route `[Route from='10.0.1.5'
    /// to='10.0.2.7' via='10.0.0.2' port='9']` (`port` optional).
    fn route(&mut self, r: &Block, g: &mut MachineGroup) {
        self.keys(r, &["to", "via", "from", "port"]);
        self.no_children(r);
        let (Some(to), Some(via)) = (self.required(r, "to"), self.required(r, "via")) else {
            return;
        };
        let prefix = self.value(to, parse_route_prefix, "to='10.1.0.0/16'");
        let via = self.gateway(via, g.count.is_some());
        let from = r.param("from");
        let from = from.map(|p| self.value(p, parse_ipv4, "from='10.0.1.5'"));
        let port = r.param("port").map(|p| {
            if from.is_none() {
                let msg = "port= needs from=: it narrows a per-flow route".to_string();
                let hint = Some(
                    "write e.g. [Route from='10.0.1.5' to='10.0.2.7' via='10.0.0.2' port='9']"
                        .into(),
                );
                self.error(ErrorKind::BadValue, p.key.span, msg, hint);
            }
            self.value(p, parse_port, "port='9'")
        });
        if from.is_some() && prefix.is_some_and(|(_, len)| len != 32) {
            let msg = "a per-flow route (from=) goes to one address, not a network".to_string();
            let hint = Some("write e.g. to='10.0.2.7'".into());
            return self.error(ErrorKind::BadValue, to.value.span, msg, hint);
        }
        // Outer `None`: not written; inner `None`: written but bad (reported).
        let (Some(from), Some(port)) = (
            from.map_or(Some(None), |f| f.map(Some)),
            port.map_or(Some(None), |p| p.map(Some)),
        ) else {
            return;
        };
        if let (Some((prefix, len)), Some(via)) = (prefix, via) {
            g.routes.push(sc::RouteSpec {
                prefix,
                len,
                via,
                from,
                port,
                loc: self.loc(r.head()),
            });
        }
    }

    fn attach(&mut self, n: &Block, g: &mut MachineGroup) {
        self.keys(n, &["id", "ip", "x", "y"]);
        self.no_children(n);
        let Some(id) = self.required(n, "id") else {
            return;
        };
        // Networks a machine names before the duplicate check builds a
        // map (most machines have one or two; a router may have millions).
        const SCAN: usize = 8;
        let index = g.networks.len();
        let name: &str = &id.value.node;
        let seen = if index < SCAN && self.attached.is_empty() {
            g.networks.iter().position(|r| r.name == name)
        } else {
            if self.attached.is_empty() {
                let named = g.networks.iter().enumerate();
                self.attached
                    .extend(named.map(|(k, r)| (r.name.clone(), k)));
            }
            match self.attached.entry(name.to_string()) {
                std::collections::hash_map::Entry::Occupied(e) => Some(*e.get()),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(index);
                    None
                }
            }
        };
        if let Some(first) = seen.and_then(|k| g.networks.get(k)) {
            let msg = format!(
                "machine '{}' is attached to network '{}' twice",
                g.name, id.value.node
            );
            let hint = Some(format!("the first is at {}", at(first.loc)));
            return self.error(ErrorKind::Duplicate, id.value.span, msg, hint);
        }
        if let Some(p) = n.param("ip") {
            let v = &p.value.node;
            if v.contains('{') {
                if let Err((msg, hint)) = check_braces(v, g.count.is_some()) {
                    let msg = format!("in ip='{v}': {msg}");
                    self.error(ErrorKind::BadValue, p.value.span, msg, Some(hint));
                }
            } else if g.count.is_some_and(|c| c > 1) {
                let msg = format!("all machines named '{}' would have address {v}", g.name);
                let hint = Some("use a per-instance value such as ip='10.0.{i}.1'".into());
                self.error(ErrorKind::Duplicate, p.value.span, msg, hint);
            } else {
                self.value(p, parse_ipv4, "ip='10.0.0.1'");
            }
            g.pinned.push((
                g.networks.len() as u32,
                sc::Param {
                    key: "ip".into(),
                    value: v.to_string(),
                    loc: self.loc(p.value.span),
                },
            ));
        }
        self.position(n, g);
        g.networks.push(Ref {
            name: id.value.node.to_string(),
            loc: self.loc(id.value.span),
        });
    }

    fn protocol(&mut self, p: &Block, g: &mut MachineGroup) {
        self.no_children(p);
        let Some(name) = self.required(p, "name") else {
            return;
        };
        let params = self.params(p, g.count.is_some());
        self.protocol_options(p, &name.value.node, g);
        g.protocols.push(sc::ProtocolSpec {
            name: name.value.node.to_string(),
            params,
            loc: self.loc(p.head()),
        });
    }

    fn application(&mut self, a: &Block, g: &mut MachineGroup) {
        let Some(name) = self.required(a, "name") else {
            return;
        };
        let counted = g.count.is_some();
        let params = self.params(a, counted);
        let children = a
            .children
            .iter()
            .map(|c| self.generic(c, counted))
            .collect();
        let app = sc::AppSpec {
            name: name.value.node.to_string(),
            params,
            children,
            loc: self.loc(a.head()),
        };
        g.applications.push(app);
    }

    /// Records the addresses that the group's applications claim with a
    /// fixed `ip=`; values with placeholders are left to the builder.
    fn claim_ips(&mut self, g: &MachineGroup) {
        for p in g.applications.iter().filter_map(|a| a.params.get("ip")) {
            if p.value.contains('{') {
                continue;
            }
            let Ok(ip) = elvis_scenario::parse_ipv4(elvis_scenario::units::trim(&p.value)) else {
                let msg = format!("ip='{}' is not an IPv4 address", p.value);
                let hint = "write it as a.b.c.d, or per instance with {i}";
                self.errors
                    .push(crate::NdlError::new(ErrorKind::BadValue, p.loc, msg).hint(hint));
                continue;
            };
            if g.instances() > 1 {
                let msg = format!(
                    "all {} machines named '{}' would have address {ip}",
                    g.instances(),
                    g.name
                );
                let hint = "use a per-instance value such as ip='10.0.{i}.1', or drop ip= to number them automatically";
                self.errors
                    .push(crate::NdlError::new(ErrorKind::Duplicate, p.loc, msg).hint(hint));
                continue;
            }
            if let Err((_, first)) = take(&mut self.claimed, ip.into(), ip.into(), p.loc) {
                let msg = format!("address {ip} is claimed by two applications");
                let hint = format!("the first claim is at {}", at(first));
                self.errors
                    .push(crate::NdlError::new(ErrorKind::Duplicate, p.loc, msg).hint(hint));
            }
        }
    }

    /// Checks that no plain machine is named like an instance of a counted
    /// group (`sender-3` next to `[Machine name='sender' count='10']`).
    pub(super) fn check_instance_names(&mut self) {
        let mut errors = Vec::new();
        for m in self.sc.machines.iter().filter(|m| m.count.is_none()) {
            let Some((base, n)) = m.name.rsplit_once('-') else {
                continue;
            };
            let Ok(n) = n.parse::<u32>() else { continue };
            if let Some(g) = self
                .sc
                .machines
                .iter()
                .find(|g| g.name == base && g.count.is_some_and(|c| n < c))
                // With a `[Topology]`, two blocks without networks may both
                // add applications to generated machines (a group and one
                // of its members); the builder checks those names.
                .filter(|g| {
                    self.sc.topologies.is_empty()
                        || !(m.networks.is_empty() && g.networks.is_empty())
                })
            {
                let msg = format!(
                    "machine name '{}' clashes with an instance of the counted group '{}'",
                    m.name, g.name
                );
                let hint = format!(
                    "'{}' has {} instances, named {}-0 to {}-{}",
                    g.name,
                    g.instances(),
                    g.name,
                    g.name,
                    g.instances() - 1
                );
                errors.push(crate::NdlError::new(ErrorKind::Duplicate, m.loc, msg).hint(hint));
            }
        }
        self.errors.extend(errors);
    }
}

/// Returns true for the blocks whose `name=` is their identity rather
/// than an option (protocols and applications).
fn is_named(b: &Block) -> bool {
    b.is("Protocol") || b.is("Application")
}

fn parse_count(s: &str) -> Result<u32, String> {
    match parse_u64(s)? {
        0 => Err("a machine group has at least 1 machine".into()),
        n => u32::try_from(n).map_err(|_| {
            format!(
                "{n} machines is too many: a group has 1 to {} machines (machine ids are 32-bit)",
                u32::MAX
            )
        }),
    }
}

/// Parses `yes`/`no` (also `true`/`false`, `1`/`0`).
fn parse_yes_no(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "yes" | "true" | "1" | "on" => Ok(true),
        "no" | "false" | "0" | "off" => Ok(false),
        _ => Err("expected yes or no".into()),
    }
}

fn parse_ipv4(s: &str) -> Result<Ipv4Addr, String> {
    elvis_scenario::parse_ipv4(elvis_scenario::units::trim(s))
        .map_err(|_| "not an IPv4 address (a.b.c.d)".to_string())
}

/// Parses a route destination: `a.b.c.d/len` (host bits zero), a bare
/// address (a /32 host route) or `default` (`0.0.0.0/0`).
fn parse_route_prefix(s: &str) -> Result<(Ipv4Addr, u8), String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("default") {
        return Ok((Ipv4Addr::UNSPECIFIED, 0));
    }
    if t.contains('/') {
        return super::networks::parse_subnet(t);
    }
    Ok((parse_ipv4(t)?, 32))
}
