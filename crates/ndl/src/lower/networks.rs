//! `[Networks]`: network parameters, `[IP]` addresses, and the checks that
//! need every machine (references, link ends).

use super::{at, canonical, take, Lower, NETWORK_KEYS};
use crate::error::ErrorKind;
use crate::parser::{Block, Param};
use crate::suggest;
use elvis_scenario::units::trim;
use elvis_scenario::units::{
    parse_bandwidth, parse_duration_ns, parse_probability, parse_size_bytes, parse_u64,
};
use elvis_scenario::{AddressEntry, Loc, NetworkKind, NetworkSpec};
use rustc_hash::FxHashMap as HashMap;
use std::net::Ipv4Addr;
use std::sync::LazyLock;

/// Parses `a.b.c.d-e` (last octet) or `a.b.c.d-w.x.y.z`.
pub(crate) fn parse_range(s: &str) -> Result<(Ipv4Addr, Ipv4Addr), String> {
    let (a, b) = s
        .split_once('-')
        .ok_or("expected a range like 10.0.0.1-20")?;
    let first = elvis_scenario::parse_ipv4(trim(a))
        .map_err(|_| format!("`{}` is not an IPv4 address", a.trim()))?;
    let b = b.trim();
    let last = if b.contains('.') {
        elvis_scenario::parse_ipv4(b).map_err(|_| format!("`{b}` is not an IPv4 address"))?
    } else {
        let octet: u8 = b
            .parse()
            .map_err(|_| format!("`{b}` is not a last octet (0 to 255)"))?;
        let [w, x, y, _] = first.octets();
        Ipv4Addr::new(w, x, y, octet)
    };
    if last < first {
        return Err(format!(
            "the range ends ({last}) before it starts ({first})"
        ));
    }
    Ok((first, last))
}

/// Parses `a.b.c.d/len`; the host bits must be zero.
pub(crate) fn parse_subnet(s: &str) -> Result<(Ipv4Addr, u8), String> {
    let (a, l) = s
        .split_once('/')
        .ok_or("expected a subnet like 10.0.0.0/24")?;
    let addr = elvis_scenario::parse_ipv4(trim(a))
        .map_err(|_| format!("`{}` is not an IPv4 address", a.trim()))?;
    let len: u8 = trim(l)
        .parse()
        .ok()
        .filter(|&n| n <= 32)
        .ok_or_else(|| format!("`{}` is not a prefix length (0 to 32)", l.trim()))?;
    let mask = mask(len);
    if u32::from(addr) & !mask != 0 {
        let net = Ipv4Addr::from(u32::from(addr) & mask);
        return Err(format!(
            "{addr}/{len} has host bits set (did you mean {net}/{len}?)"
        ));
    }
    Ok((addr, len))
}

fn mask(len: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0)
}

fn parse_ip(s: &str) -> Result<Ipv4Addr, String> {
    elvis_scenario::parse_ipv4(trim(s)).map_err(|_| "not an IPv4 address".to_string())
}

impl Lower<'_> {
    pub(super) fn network(&mut self, b: &Block) {
        static KEYS: LazyLock<Vec<&str>> = LazyLock::new(|| {
            (NETWORK_KEYS.iter())
                .chain(super::qdisc::QDISC_KEYS)
                .chain(super::wireless::WIRELESS_KEYS)
                .copied()
                .collect()
        });
        self.keys(b, &KEYS);
        let Some(id) = self.required(b, "id") else {
            return;
        };
        let mut net = NetworkSpec::ideal(id.value.node.to_string());
        net.loc = self.loc(b.head());
        if trim(&net.id).is_empty() {
            self.error(
                ErrorKind::BadValue,
                id.value.span,
                "network id is empty",
                Some("write e.g. id='1'".into()),
            );
        } else if let Some(&first) = self.net_ids.get(&net.id) {
            let msg = format!("network id '{}' is declared twice", net.id);
            self.error(
                ErrorKind::Duplicate,
                id.value.span,
                msg,
                Some(format!("the first is at {}", at(first))),
            );
        } else {
            self.net_ids.insert(net.id.clone(), net.loc);
        }
        for p in &b.params {
            self.network_param(p, &mut net);
        }
        // A network with none but the plain keys (a star's links) has no
        // discipline or radio keys to read, or to report on a wired one.
        let plain = (b.params.iter()).all(|p| canonical(&p.key.node, NETWORK_KEYS).is_some());
        if !plain {
            self.qdisc(b, &mut net);
        }
        if !plain || net.kind == NetworkKind::Wireless {
            self.wireless(b, &mut net);
        }
        for c in &b.children {
            if c.is("IP") {
                self.ip(c, &mut net);
            } else {
                self.unexpected(c, Some(&b.keyword.node), &["IP"]);
            }
        }
        self.check_subnet(&net);
        net.addresses.shrink_to_fit();
        self.sc.networks.push(net);
    }

    fn network_param(&mut self, p: &Param, net: &mut NetworkSpec) {
        let kinds = ["switch", "link", "wireless"];
        match canonical(&p.key.node, NETWORK_KEYS).unwrap_or_default() {
            "type" => match canonical(trim(&p.value.node), &kinds).unwrap_or_default() {
                "switch" => net.kind = NetworkKind::Switch,
                "link" => {
                    net.kind = NetworkKind::Link;
                    self.link_locs
                        .insert(net.id.clone(), self.loc(p.value.span));
                }
                "wireless" => net.kind = NetworkKind::Wireless,
                _ => {
                    let msg = format!(
                        "bad type '{}': a network is a `switch`, a `link` or `wireless`",
                        p.value.node
                    );
                    let hint = suggest(&p.value.node, &["switch", "link", "wireless"])
                        .map(|s| format!("did you mean '{s}'?"));
                    self.error(ErrorKind::BadValue, p.value.span, msg, hint);
                }
            },
            "bandwidth" => {
                net.bandwidth_bps = self
                    .value(p, parse_bandwidth, "bandwidth='100Mbps'")
                    .unwrap_or(None)
            }
            "latency" => {
                net.latency_ns = self
                    .value(p, parse_duration_ns, "latency='2ms'")
                    .unwrap_or(0)
            }
            "loss" => {
                net.loss = self
                    .value(p, parse_probability, "loss='0.01' or loss='1%'")
                    .unwrap_or(0.0)
            }
            "corruption" => {
                net.corruption = self
                    .value(p, parse_probability, "corruption='0.1%'")
                    .unwrap_or(0.0)
            }
            "duplicate" => {
                net.duplicate = self
                    .value(p, parse_probability, "duplicate='1%'")
                    .unwrap_or(0.0)
            }
            "reorder" => {
                net.reorder = self
                    .value(p, parse_probability, "reorder='1%'")
                    .unwrap_or(0.0)
            }
            "reorder_delay" => {
                net.reorder_delay_ns = self.value(p, parse_duration_ns, "reorder_delay='1ms'")
            }
            "mtu" => {
                let mtu = |s: &str| {
                    match parse_size_bytes(s)? {
                    n @ 68..=65535 => Ok(n as u32),
                    n => Err(format!("{n} is outside 68 to 65535: IPv4 needs an MTU of at least 68 bytes (RFC 791) and a datagram is at most 65535 bytes")),
                }
                };
                net.mtu = self.value(p, mtu, "mtu='1500'").unwrap_or(1500);
            }
            "queue" => {
                net.queue = self
                    .value(p, parse_queue, "queue='100' (packets) or queue='inf'")
                    .flatten()
            }
            "subnet" => self.subnet(p, net),
            _ => {} // `id`, or an unknown key already reported.
        }
    }

    fn ip(&mut self, b: &Block, net: &mut NetworkSpec) {
        self.keys(b, &["ip", "range", "subnet"]);
        self.no_children(b);
        if b.params.is_empty()
            || !["ip", "range", "subnet"]
                .iter()
                .any(|k| b.param(k).is_some())
        {
            let hint = Some(
                "write [IP ip='10.0.0.1'], [IP range='10.0.0.1-20'] or [IP subnet='10.0.0.0/24']"
                    .into(),
            );
            return self.error(
                ErrorKind::MissingKey,
                b.head(),
                "`[IP]` needs an `ip`, `range` or `subnet`",
                hint,
            );
        }
        if let Some(p) = b.param("ip") {
            if let Some(a) = self.value(p, parse_ip, "ip='10.0.0.1'") {
                self.list(net, a, a, p);
            }
        }
        if let Some(p) = b.param("range") {
            if let Some((first, last)) = self.value(p, parse_range, "range='10.0.0.1-20'") {
                self.list(net, first, last, p);
            }
        }
        if let Some(p) = b.param("subnet") {
            self.subnet(p, net);
        }
    }

    fn subnet(&mut self, p: &Param, net: &mut NetworkSpec) {
        let Some(s) = self.value(p, parse_subnet, "subnet='10.0.0.0/24'") else {
            return;
        };
        if net.subnet.is_some() {
            let msg = format!("network '{}' already has a subnet", net.id);
            return self.error(
                ErrorKind::Duplicate,
                p.value.span,
                msg,
                Some("give one subnet per network".into()),
            );
        }
        net.subnet = Some(s);
    }

    /// Records an address range for `net`, unless some network listed it.
    fn list(&mut self, net: &mut NetworkSpec, first: Ipv4Addr, last: Ipv4Addr, p: &Param) {
        let loc = self.loc(p.value.span);
        if let Err((a, prev)) = take(&mut self.listed, first.into(), last.into(), loc) {
            let msg = format!("address {} is listed twice", Ipv4Addr::from(a));
            let hint = Some(format!("it is first listed at {}", at(prev)));
            return self.error(ErrorKind::Duplicate, p.value.span, msg, hint);
        }
        net.addresses.push(AddressEntry { first, last, loc });
    }

    fn check_subnet(&mut self, net: &NetworkSpec) {
        let Some((base, len)) = net.subnet else {
            return;
        };
        let m = mask(len);
        for a in &net.addresses {
            for ip in [a.first, a.last] {
                if u32::from(ip) & m != u32::from(base) {
                    let msg = format!("address {ip} is outside the network's subnet {base}/{len}");
                    let e = crate::NdlError::new(ErrorKind::BadValue, a.loc, msg);
                    self.errors
                        .push(e.hint("list only addresses inside the subnet, or widen it"));
                    break;
                }
            }
        }
    }

    /// Checks that every network a machine names was declared.
    pub(super) fn resolve_networks(&mut self) {
        // The declared ids, for hints: listed only once a reference fails.
        let mut ids: Option<Vec<&str>> = None;
        let mut errors = Vec::new();
        for m in &self.sc.machines {
            for r in m
                .networks
                .iter()
                .filter(|r| !self.net_ids.contains_key(&r.name))
            {
                let ids = ids.get_or_insert_with(|| {
                    let mut ids: Vec<&str> =
                        self.sc.networks.iter().map(|n| n.id.as_str()).collect();
                    ids.dedup();
                    ids
                });
                let msg = format!(
                    "machine '{}' is on network '{}', which is not declared",
                    m.name, r.name
                );
                let hint = match suggest(&r.name, ids) {
                    Some(s) => format!("did you mean '{s}'?"),
                    None if ids.is_empty() => {
                        "declare it under [Networks] as [Network id='…']".into()
                    }
                    None => format!(
                        "declared networks: {}",
                        ids.iter().take(8).copied().collect::<Vec<_>>().join(", ")
                    ),
                };
                errors
                    .push(crate::NdlError::new(ErrorKind::UnknownReference, r.loc, msg).hint(hint));
            }
        }
        self.errors.extend(errors);
    }

    /// Checks that each `type='link'` network joins exactly two interfaces.
    pub(super) fn check_links(&mut self) {
        let mut ends: HashMap<&str, u64> = HashMap::default();
        ends.reserve(self.sc.networks.len());
        for m in &self.sc.machines {
            for r in &m.networks {
                *ends.entry(r.name.as_str()).or_default() += u64::from(m.instances());
            }
        }
        let mut errors = Vec::new();
        for net in self
            .sc
            .networks
            .iter()
            .filter(|n| n.kind == NetworkKind::Link)
        {
            let n = ends.get(net.id.as_str()).copied().unwrap_or(0);
            if n != 2 {
                let loc: Loc = self.link_locs.get(&net.id).copied().unwrap_or(net.loc);
                let msg = format!(
                    "link network '{}' joins {n} machine interface(s); a link joins exactly 2",
                    net.id
                );
                let hint = if n > 2 {
                    "use type='switch' for more than two machines"
                } else {
                    "attach two machines to it"
                };
                errors.push(crate::NdlError::new(ErrorKind::Topology, loc, msg).hint(hint));
            }
        }
        self.errors.extend(errors);
    }
}

/// Parses a queue capacity in packets; `inf` / `unbounded` mean no limit.
pub(super) fn parse_queue(s: &str) -> Result<Option<u32>, String> {
    let t = s.trim();
    if ["inf", "infinite", "unbounded", "unlimited"]
        .iter()
        .any(|w| t.eq_ignore_ascii_case(w))
    {
        return Ok(None);
    }
    match parse_u64(t)? {
        0 => Err("a queue holds at least 1 packet".into()),
        n => u32::try_from(n).map(Some).map_err(|_| {
            format!(
                "{n} packets is too many: a queue holds 1 to {} packets (a 32-bit count), or `inf`",
                u32::MAX
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain-network shortcut in `network` relies on this.
    #[test]
    fn no_plain_network_key_is_a_discipline_or_radio_key() {
        for k in NETWORK_KEYS {
            assert!(!super::super::qdisc::QDISC_KEYS.contains(k), "{k}");
            assert!(!super::super::wireless::WIRELESS_KEYS.contains(k), "{k}");
        }
    }
}
