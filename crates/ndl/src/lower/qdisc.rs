//! A network's queue discipline: `qdisc='…'` and its parameters
//! (`limit`, `red_*`, `ecn`, `rate`, `burst`, `weights`, `classify`).
//!
//! Checked here: the discipline's name, each value's syntax and units,
//! parameters that belong to another discipline (or to none, without
//! `qdisc=`), and required parameters. Ranges (`red_min < red_max`,
//! `max_p` in (0, 1], positive weights…) are the simulator's
//! `QdiscConfig::validate`, which the builder runs and locates with the
//! `locs` kept here.

use super::Lower;
use crate::error::ErrorKind;
use crate::parser::{Block, Param};
use crate::suggest;
use elvis_scenario::units::{
    parse_bandwidth, parse_duration_ns, parse_probability, parse_size_bytes, parse_u64,
};
use elvis_scenario::{ClassifySpec, NetworkSpec, QdiscKind, QdiscSpec, QueueLimit};

/// Disciplines by NDL name.
const KINDS: &[(&str, QdiscKind)] = &[
    ("droptail", QdiscKind::DropTail),
    ("red", QdiscKind::Red),
    ("tbf", QdiscKind::TokenBucket),
    ("prio", QdiscKind::Prio),
    ("drr", QdiscKind::Drr),
    ("wrr", QdiscKind::Wrr),
    ("wfq", QdiscKind::Wfq),
    ("vclock", QdiscKind::VirtualClock),
    ("ecn_threshold", QdiscKind::EcnThreshold),
    ("srtcm", QdiscKind::Srtcm),
    ("trtcm", QdiscKind::Trtcm),
];

/// Every discipline parameter key.
pub(super) const QDISC_KEYS: &[&str] = &[
    "qdisc",
    "limit",
    "red_min",
    "red_max",
    "red_max_p",
    "red_wq",
    "red_gentle",
    "red_avpkt",
    "ecn",
    "rate",
    "burst",
    "weights",
    "classify",
    "ecn_k",
    "cir",
    "cbs",
    "ebs",
    "pir",
    "pbs",
    "color_aware",
    "remark",
    "drop_red",
    "pfc",
    "pfc_xoff",
    "pfc_xon",
    "pfc_quanta",
    "pfc_deadlock",
];

/// The priority flow control keys (`prio` only).
const PFC_KEYS: &[&str] = &["pfc", "pfc_xoff", "pfc_xon", "pfc_quanta", "pfc_deadlock"];

/// Returns the keys `kind` accepts and those it requires.
fn keys_of(kind: QdiscKind) -> (&'static [&'static str], &'static [&'static str]) {
    match kind {
        QdiscKind::DropTail => (&["limit"], &[]),
        QdiscKind::Red => (
            &[
                "limit",
                "red_min",
                "red_max",
                "red_max_p",
                "red_wq",
                "red_gentle",
                "red_avpkt",
                "ecn",
            ],
            &["red_min", "red_max"],
        ),
        QdiscKind::TokenBucket => (&["limit", "rate", "burst"], &["rate", "burst"]),
        QdiscKind::EcnThreshold => (&["limit", "ecn_k"], &["ecn_k"]),
        QdiscKind::Srtcm => (
            &[
                "limit",
                "cir",
                "cbs",
                "ebs",
                "color_aware",
                "remark",
                "drop_red",
            ],
            &["cir", "cbs", "ebs"],
        ),
        QdiscKind::Trtcm => (
            &[
                "limit",
                "cir",
                "cbs",
                "pir",
                "pbs",
                "color_aware",
                "remark",
                "drop_red",
            ],
            &["cir", "cbs", "pir", "pbs"],
        ),
        QdiscKind::Prio => (
            &[
                "limit",
                "weights",
                "classify",
                "pfc",
                "pfc_xoff",
                "pfc_xon",
                "pfc_quanta",
                "pfc_deadlock",
            ],
            &["weights"],
        ),
        _ => (&["limit", "weights", "classify"], &["weights"]),
    }
}

fn parse_kind(s: &str) -> Result<QdiscKind, String> {
    let t = s.trim().to_ascii_lowercase();
    KINDS
        .iter()
        .find(|(n, _)| *n == t)
        .map(|(_, k)| *k)
        .ok_or_else(|| {
            let names: Vec<&str> = KINDS.iter().map(|(n, _)| *n).collect();
            format!("unknown discipline (known: {})", names.join(", "))
        })
}

/// `100` (packets), `64kB` (bytes, any size unit), `inf`.
fn parse_limit(s: &str) -> Result<QueueLimit, String> {
    let t = s.trim();
    if ["inf", "infinite", "unbounded", "unlimited"]
        .iter()
        .any(|w| t.eq_ignore_ascii_case(w))
    {
        return Ok(QueueLimit::Unbounded);
    }
    if t.bytes().all(|c| c.is_ascii_digit()) {
        let n = parse_u64(t)?;
        return u32::try_from(n).map(QueueLimit::Packets).map_err(|_| {
            format!(
                "{n} packets is too many: a queue holds 1 to {} packets (a 32-bit count), or `inf`",
                u32::MAX
            )
        });
    }
    parse_size_bytes(t).map(QueueLimit::Bytes)
}

/// A RED threshold: `5` or `7.5` (packets) or `30kB` (bytes).
fn parse_threshold(s: &str) -> Result<(f64, bool), String> {
    let t = s.trim();
    let plain = !t.is_empty()
        && t.bytes().all(|c| c.is_ascii_digit() || c == b'.')
        && t.matches('.').count() <= 1
        && t != ".";
    if plain {
        return t
            .parse()
            .map(|v| (v, false))
            .map_err(|_| format!("`{t}` is not a number"));
    }
    parse_size_bytes(t).map(|b| (b as f64, true))
}

fn parse_yes_no(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "yes" | "true" | "1" | "on" => Ok(true),
        "no" | "false" | "0" | "off" => Ok(false),
        _ => Err("expected yes or no".into()),
    }
}

/// `flow` or `dscp:46,0`.
fn parse_classify(s: &str) -> Result<ClassifySpec, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("flow") {
        return Ok(ClassifySpec::Flow);
    }
    let Some(list) = t.strip_prefix("dscp:").or_else(|| t.strip_prefix("DSCP:")) else {
        return Err("expected `flow` or `dscp:` and a list of DSCP values".into());
    };
    list.split(',')
        .map(|v| {
            let n = parse_u64(v)?;
            u8::try_from(n).ok().filter(|&d| d <= 63).ok_or_else(|| {
                format!("DSCP {n} is outside 0 to 63 (a 6-bit field of the IPv4 header)")
            })
        })
        .collect::<Result<Vec<u8>, String>>()
        .map(ClassifySpec::Dscp)
}

/// `remark='10,12,14'`: the green, yellow and red DSCPs.
fn parse_remark(s: &str) -> Result<[u8; 3], String> {
    let v: Vec<u8> = s
        .split(',')
        .map(|v| {
            let n = parse_u64(v.trim())?;
            u8::try_from(n).ok().filter(|&d| d <= 63).ok_or_else(|| {
                format!("DSCP {n} is outside 0 to 63 (a 6-bit field of the IPv4 header)")
            })
        })
        .collect::<Result<_, String>>()?;
    <[u8; 3]>::try_from(v.as_slice())
        .map_err(|_| format!("{} DSCPs; give three: green, yellow, red", v.len()))
}

/// `pfc='3'` or `pfc='3,4'`: lossless priorities 0 to 7, as a bit mask.
fn parse_priorities(s: &str) -> Result<u8, String> {
    s.split(',').try_fold(0u8, |mask, v| {
        let n = parse_u64(v.trim())?;
        if n > 7 {
            return Err(format!(
                "priority {n} is outside 0 to 7 (IEEE 802.1Qbb has eight)"
            ));
        }
        Ok(mask | 1 << n)
    })
}

/// `pfc_quanta='65535'`: pause quanta, 1 to 65535.
fn parse_quanta(s: &str) -> Result<u16, String> {
    let n = parse_u64(s.trim())?;
    u16::try_from(n).map_err(|_| {
        format!("{n} quanta does not fit the frame's 16-bit pause time (at most 65535)")
    })
}

/// A comma list, each item parsed by `f`.
fn parse_list(s: &str, f: impl Fn(&str) -> Result<u64, String>) -> Result<Vec<u64>, String> {
    s.split(',').map(|v| f(v.trim())).collect()
}

impl Lower<'_> {
    /// Reads the discipline keys of network block `b` into `net.qdisc`.
    pub(super) fn qdisc(&mut self, b: &Block, net: &mut NetworkSpec) {
        net.qdisc = self.qdisc_spec(b, "", net.queue.is_some()).map(Box::new);
    }

    /// Reads the discipline keys `{pre}qdisc`, `{pre}limit`, … of block
    /// `b` (`pre` is `bottleneck_` for a dumbbell's bottleneck); `queue`:
    /// whether `{pre}queue` was given (it conflicts with a discipline).
    pub(super) fn qdisc_spec(&mut self, b: &Block, pre: &str, queue: bool) -> Option<QdiscSpec> {
        // Matched without allocating: every network block passes here,
        // and almost none has a discipline.
        let key_of = |p: &Param| -> Option<&'static str> {
            let k: &str = &p.key.node;
            let head = k.get(..pre.len())?;
            let rest = k.get(pre.len()..)?;
            head.eq_ignore_ascii_case(pre)
                .then(|| QDISC_KEYS.iter().copied())?
                .find(|q| q.eq_ignore_ascii_case(rest))
        };
        let given: Vec<(&Param, &'static str)> = (b.params.iter())
            .filter_map(|p| key_of(p).map(|k| (p, k)))
            .collect();
        let q = given.iter().find(|(_, k)| *k == "qdisc").map(|(p, _)| *p);
        let Some(q) = q else {
            self.no_discipline(&given, pre);
            return None;
        };
        let kind = self.value(q, parse_kind, "qdisc='red'")?;
        if queue {
            let msg = format!(
                "`{pre}queue` sizes the default drop-tail queues; with `{pre}qdisc` use `{pre}limit`"
            );
            if let Some(p) = b.param(&format!("{pre}queue")) {
                self.error(ErrorKind::BadValue, p.key.span, msg, None);
            }
        }
        let mut spec = QdiscSpec::new(kind);
        spec.locs.push(("qdisc".into(), self.loc(q.value.span)));
        let (allowed, required) = keys_of(kind);
        for &(p, key) in given.iter().filter(|(_, k)| *k != "qdisc") {
            if !allowed.contains(&key) && PFC_KEYS.contains(&key) {
                let msg = format!(
                    "`{}`: PFC on a network without priorities (qdisc '{}' has no priority classes)",
                    p.key.node, q.value.node
                );
                let hint =
                    format!("PFC pauses the classes of {pre}qdisc='prio' (priority i is class i)");
                self.error(ErrorKind::BadValue, p.key.span, msg, Some(hint));
                continue;
            }
            if !allowed.contains(&key) {
                let msg = format!(
                    "`{}` is not a parameter of qdisc '{}'",
                    p.key.node, q.value.node
                );
                let hint = match suggest(key, allowed) {
                    Some(s) => format!("did you mean `{pre}{s}`?"),
                    None => format!("'{}' takes {}", q.value.node, allowed.join(", ")),
                };
                self.error(ErrorKind::UnknownKey, p.key.span, msg, Some(hint));
                continue;
            }
            spec.locs.push((key.to_string(), self.loc(p.value.span)));
            self.qdisc_param(key, p, &mut spec);
        }
        for key in required {
            if b.param(&format!("{pre}{key}")).is_none() {
                let msg = format!("qdisc '{}' needs `{pre}{key}`", q.value.node);
                let hint = Some(format!("write e.g. {pre}{}", example(key)));
                self.error(ErrorKind::MissingKey, q.value.span, msg, hint);
            }
        }
        Some(spec)
    }

    /// Reports each discipline key of `given` written without `{pre}qdisc`.
    fn no_discipline(&mut self, given: &[(&Param, &'static str)], pre: &str) {
        for &(p, k) in given {
            let pfc = PFC_KEYS.contains(&k);
            let msg = if pfc {
                format!(
                    "`{}`: PFC on a network without priorities (no queue discipline)",
                    p.key.node
                )
            } else {
                format!("`{}` needs a queue discipline", p.key.node)
            };
            let hint = Some(if pfc {
                format!("give the network {pre}qdisc='prio' {pre}weights='0,0' {pre}classify='dscp:26' (priority i is class i)")
            } else {
                format!("add e.g. {pre}qdisc='red' (see the qdisc table in docs/ndl.md)")
            });
            self.error(ErrorKind::MissingKey, p.key.span, msg, hint);
        }
    }

    fn qdisc_param(&mut self, key: &str, p: &Param, spec: &mut QdiscSpec) {
        let ex = example(key);
        match key {
            "limit" => spec.limit = self.value(p, parse_limit, ex),
            "red_min" => spec.red_min = self.value(p, parse_threshold, ex),
            "red_max" => spec.red_max = self.value(p, parse_threshold, ex),
            "red_max_p" => spec.red_max_p = self.value(p, parse_probability, ex),
            "red_wq" => spec.red_wq = self.value(p, parse_probability, ex),
            "red_gentle" => spec.red_gentle = self.value(p, parse_yes_no, ex).unwrap_or(false),
            "red_avpkt" => spec.red_avpkt = self.value(p, parse_size_bytes, ex),
            "ecn" => spec.ecn = self.value(p, parse_yes_no, ex).unwrap_or(false),
            "rate" => spec.rate_bps = self.value(p, parse_bandwidth, ex).flatten(),
            "burst" => spec.burst_bytes = self.value(p, parse_size_bytes, ex),
            "classify" => spec.classify = self.value(p, parse_classify, ex),
            "ecn_k" => spec.ecn_k = self.value(p, parse_limit, ex),
            "cir" => spec.cir_bps = self.value(p, parse_bandwidth, ex).flatten(),
            "pir" => spec.pir_bps = self.value(p, parse_bandwidth, ex).flatten(),
            "cbs" => spec.cbs_bytes = self.value(p, parse_size_bytes, ex),
            "ebs" => spec.ebs_bytes = self.value(p, parse_size_bytes, ex),
            "pbs" => spec.pbs_bytes = self.value(p, parse_size_bytes, ex),
            "color_aware" => spec.color_aware = self.value(p, parse_yes_no, ex).unwrap_or(false),
            "drop_red" => spec.drop_red = self.value(p, parse_yes_no, ex).unwrap_or(false),
            "remark" => spec.remark = self.value(p, parse_remark, ex),
            "pfc" => {
                let mask = self.value(p, parse_priorities, ex).unwrap_or(0);
                spec.pfc.get_or_insert_with(Default::default).lossless = mask;
            }
            "pfc_xoff" => {
                let v = self.value(p, parse_size_bytes, ex);
                spec.pfc.get_or_insert_with(Default::default).xoff_bytes = v;
            }
            "pfc_xon" => {
                let v = self.value(p, parse_size_bytes, ex);
                spec.pfc.get_or_insert_with(Default::default).xon_bytes = v;
            }
            "pfc_quanta" => {
                let v = self.value(p, parse_quanta, ex);
                spec.pfc.get_or_insert_with(Default::default).quanta = v;
            }
            "pfc_deadlock" => {
                let v = self.value(p, parse_duration_ns, ex);
                spec.pfc.get_or_insert_with(Default::default).deadlock_ns = v;
            }
            "weights" => {
                let f: fn(&str) -> Result<u64, String> = match spec.kind {
                    QdiscKind::Drr => parse_size_bytes,
                    QdiscKind::VirtualClock => |s: &str| {
                        parse_bandwidth(s)?.ok_or_else(|| "a reserved rate is finite".to_string())
                    },
                    _ => parse_u64,
                };
                spec.weights = self.value(p, |s| parse_list(s, f), ex).unwrap_or_default();
            }
            _ => {}
        }
    }
}

/// An example value for `key`, for hints.
fn example(key: &str) -> &'static str {
    match key {
        "limit" => "limit='100' (packets), limit='64kB' (bytes) or limit='inf'",
        "red_min" => "red_min='5' (packets) or red_min='30kB' (bytes)",
        "red_max" => "red_max='15' (packets) or red_max='90kB' (bytes)",
        "red_max_p" => "red_max_p='0.1'",
        "red_wq" => "red_wq='0.002'",
        "red_gentle" | "ecn" => "yes or no",
        "red_avpkt" => "red_avpkt='1000B'",
        "rate" => "rate='1Mbps'",
        "burst" => "burst='10kB'",
        "classify" => "classify='flow' or classify='dscp:46,0'",
        "ecn_k" => "ecn_k='20' (packets) or ecn_k='30kB' (bytes)",
        "cir" | "pir" => "cir='10Mbps'",
        "cbs" | "ebs" | "pbs" => "cbs='15kB'",
        "color_aware" | "drop_red" => "yes or no",
        "remark" => "remark='10,12,14' (green, yellow, red)",
        "pfc" => "pfc='3' or pfc='3,4' (lossless priorities 0 to 7)",
        "pfc_xoff" | "pfc_xon" => "pfc_xoff='20kB' pfc_xon='10kB'",
        "pfc_quanta" => "pfc_quanta='65535'",
        "pfc_deadlock" => "pfc_deadlock='1ms'",
        _ => "weights='1500,3000'",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_packets_bytes_or_unbounded() {
        assert_eq!(parse_limit("100"), Ok(QueueLimit::Packets(100)));
        assert_eq!(parse_limit("64kB"), Ok(QueueLimit::Bytes(64_000)));
        assert_eq!(parse_limit("inf"), Ok(QueueLimit::Unbounded));
        assert!(parse_limit("ten").is_err());
    }

    #[test]
    fn thresholds_and_classifiers_parse() {
        assert_eq!(parse_threshold("7.5"), Ok((7.5, false)));
        assert_eq!(parse_threshold("30kB"), Ok((30_000.0, true)));
        assert_eq!(parse_classify("flow"), Ok(ClassifySpec::Flow));
        assert_eq!(
            parse_classify("dscp:46,0"),
            Ok(ClassifySpec::Dscp(vec![46, 0]))
        );
        assert!(parse_classify("dscp:64").is_err());
        assert_eq!(parse_remark("10, 12,14"), Ok([10, 12, 14]));
        assert!(parse_remark("10,12").is_err());
        assert!(parse_remark("10,12,64").is_err());
    }

    #[test]
    fn pfc_priorities_are_a_mask_of_0_to_7() {
        assert_eq!(parse_priorities("3"), Ok(0b1000));
        assert_eq!(parse_priorities("0, 3,7"), Ok(0b1000_1001));
        assert!(parse_priorities("8").unwrap_err().contains("0 to 7"));
        assert!(parse_priorities("x").is_err());
        assert_eq!(parse_quanta("65535"), Ok(0xffff));
        assert!(parse_quanta("65536").is_err());
    }
}
