//! Wireless networks: the radio keys of `[Network type='wireless' …]`,
//! machines' positions (`[Network id='w' x='…' y='…']` under a machine)
//! and the checks that need both (a position inside the area).

use super::{canonical, Lower};
use crate::error::ErrorKind;
use crate::parser::{Block, Param};
use crate::suggest;
use elvis_scenario::units::{parse_bandwidth, parse_duration_ns, parse_size_bytes};
use elvis_scenario::{MachineGroup, NetworkKind, NetworkSpec, WirelessSpec};

/// The keys only a wireless network takes.
pub(super) const WIRELESS_KEYS: &[&str] = &[
    "standard",
    "mac",
    "data_rate",
    "basic_rate",
    "range",
    "cs_range",
    "propagation",
    "exponent",
    "sinr",
    "rts_threshold",
    "area",
    "placement",
    "spacing",
    "mobility",
    "speed",
    "pause",
    "step",
    "trace",
    "block",
    "turns",
];

/// Rates of each standard, Mbit/s (802.11-2016 clauses 15, 16 and 17).
const DSSS_MBPS: &[f64] = &[1.0, 2.0, 5.5, 11.0];
const OFDM_MBPS: &[f64] = &[6.0, 9.0, 12.0, 18.0, 24.0, 36.0, 48.0, 54.0];

/// Parses a distance in metres: `250`, `250m`, `1.5km`.
pub(super) fn parse_metres(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("km") {
        (n, 1000.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 1.0)
    } else {
        (t, 1.0)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v * scale),
        _ => Err(format!(
            "`{t}` is not a distance (write e.g. 250m or 1.5km)"
        )),
    }
}

fn parse_range_m(s: &str) -> Result<f64, String> {
    match parse_metres(s)? {
        v if v > 0.0 => Ok(v),
        _ => Err("a range is above 0 m".into()),
    }
}

/// Parses a speed range in m/s: `1-20`, `5` (one speed), `1-20m/s`.
fn parse_speeds(s: &str) -> Result<(f64, f64), String> {
    let t = s.trim().trim_end_matches("m/s").trim();
    let (a, b) = t.split_once('-').unwrap_or((t, t));
    let num = |x: &str| {
        x.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v > 0.0)
            .ok_or_else(|| format!("`{}` is not a speed above 0 (m/s)", x.trim()))
    };
    let (lo, hi) = (num(a)?, num(b)?);
    if lo > hi {
        return Err(format!("the range ends ({hi}) below its start ({lo})"));
    }
    Ok((lo, hi))
}

/// Parses the turn probabilities of `manhattan`: `0.5,0.25,0.25`
/// (straight, left, right), each in [0, 1], summing to 1.
fn parse_turns(s: &str) -> Result<[f64; 3], String> {
    let v: Vec<f64> = s
        .split([',', '/'])
        .map(|x| x.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("`{}` is not three probabilities", s.trim()))?;
    let [a, b, c] = v[..] else {
        return Err(format!(
            "expected three probabilities (straight, left, right), got {}",
            v.len()
        ));
    };
    if [a, b, c].iter().any(|p| !(0.0..=1.0).contains(p)) || ((a + b + c) - 1.0).abs() > 1e-9 {
        return Err(format!(
            "the probabilities {a}, {b}, {c} are not each in 0..1 with a sum of 1"
        ));
    }
    Ok([a, b, c])
}

/// Parses an area `W x H` (metres).
fn parse_area(s: &str) -> Result<(f64, f64), String> {
    let (w, h) = s
        .split_once(['x', 'X', '*'])
        .ok_or("expected an area like 1000x500 (metres)")?;
    let (w, h) = (parse_range_m(w)?, parse_range_m(h)?);
    Ok((w, h))
}

fn parse_db(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let n = t.strip_suffix("dB").or(t.strip_suffix("db")).unwrap_or(t);
    n.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("`{t}` is not a ratio in dB (write e.g. 10dB)"))
}

/// Returns the standard's letter for `802.11b`, `b`, …
fn parse_standard(s: &str) -> Result<char, String> {
    let t = s.trim().to_ascii_lowercase();
    match t.trim_start_matches("802.11") {
        "a" => Ok('a'),
        "b" => Ok('b'),
        "g" => Ok('g'),
        _ => Err("elvis runs 802.11a, 802.11b and 802.11g".into()),
    }
}

impl Lower<'_> {
    /// Reads the wireless keys of network block `b` (after `type=`).
    pub(super) fn wireless(&mut self, b: &Block, net: &mut NetworkSpec) {
        if net.kind != NetworkKind::Wireless {
            for p in &b.params {
                if let Some(key) = canonical(&p.key.node, WIRELESS_KEYS) {
                    let msg = format!("`{key}` is an option of a wireless network");
                    let hint = Some("add type='wireless' to the network".into());
                    self.error(ErrorKind::BadValue, p.key.span, msg, hint);
                }
            }
            return;
        }
        let mut w = WirelessSpec::default();
        for p in &b.params {
            self.wireless_param(p, &mut w);
        }
        if let (Some(rate), Some(p)) = (w.rate_bps, b.param("data_rate")) {
            self.check_rate(p, w.standard, rate);
        }
        if let (Some(rate), Some(p)) = (w.basic_rate_bps, b.param("basic_rate")) {
            self.check_rate(p, w.standard, rate);
        }
        if let (Some(cs), Some(p)) = (w.cs_range_m, b.param("cs_range")) {
            if cs < w.range_m {
                let msg = format!("cs_range ({cs} m) is shorter than range ({} m)", w.range_m);
                let hint = Some("a station senses at least as far as it decodes".into());
                self.error(ErrorKind::BadValue, p.value.span, msg, hint);
            }
        }
        if let (Some(m), Some(p)) = (&w.mobility, b.param("mobility")) {
            if (m.starts_with("random") || m == "manhattan") && w.area.is_none() {
                let msg = format!("mobility='{m}' needs the area the machines move in");
                let hint = Some("add e.g. area='1000x1000' (metres)".into());
                self.error(ErrorKind::MissingKey, p.value.span, msg, hint);
            }
            if m == "setdest" && w.trace.is_none() {
                let msg = "mobility='setdest' needs the movement file";
                let hint = Some("add trace='scen.ns' (an ns-2 setdest file)".into());
                self.error(ErrorKind::MissingKey, p.value.span, msg, hint);
            }
        }
        self.check_streets(b, &w);
        net.wireless = Some(Box::new(w));
    }

    /// Checks the keys of `mobility='manhattan'`: only with it, and a
    /// block that leaves at least two streets each way in the area.
    fn check_streets(&mut self, b: &Block, w: &WirelessSpec) {
        let manhattan = w.mobility.as_deref() == Some("manhattan");
        for key in ["block", "turns"] {
            if let (false, Some(p)) = (manhattan, b.param(key)) {
                let msg = format!("`{key}` is an option of mobility='manhattan'");
                let hint = Some("add mobility='manhattan', or drop the key".into());
                self.error(ErrorKind::BadValue, p.key.span, msg, hint);
            }
        }
        let at = b.param("block").or(b.param("mobility"));
        if let (true, Some((aw, ah)), Some(p)) = (manhattan, w.area, at) {
            if w.block_m > aw.min(ah) {
                let msg = format!(
                    "a block of {} m leaves fewer than two streets across the area ({aw} x {ah} m)",
                    w.block_m
                );
                let hint = Some("lower block= or enlarge area=".into());
                self.error(ErrorKind::BadValue, p.value.span, msg, hint);
            }
        }
    }

    fn check_rate(&mut self, p: &Param, standard: char, bps: u64) {
        let rates = if standard == 'b' {
            DSSS_MBPS
        } else {
            OFDM_MBPS
        };
        let mbps = bps as f64 / 1e6;
        if !rates.contains(&mbps) {
            let list: Vec<String> = rates.iter().map(|r| format!("{r}Mbps")).collect();
            let msg = format!("802.11{standard} has no rate of {mbps} Mbit/s");
            let hint = Some(format!("use one of {}", list.join(", ")));
            self.error(ErrorKind::BadValue, p.value.span, msg, hint);
        }
    }

    fn wireless_param(&mut self, p: &Param, w: &mut WirelessSpec) {
        match p.key.node.to_ascii_lowercase().as_str() {
            "standard" => {
                w.standard = self
                    .value(p, parse_standard, "standard='802.11b'")
                    .unwrap_or('b')
            }
            "mac" | "propagation" | "placement" | "mobility" => self.wireless_choice(p, w),
            "speed" => {
                w.speed = self
                    .value(p, parse_speeds, "speed='1-20' (m/s)")
                    .unwrap_or((1.0, 20.0))
            }
            "pause" => w.pause_ns = self.value(p, parse_duration_ns, "pause='2s'").unwrap_or(0),
            "step" => {
                w.step_ns = self
                    .value(p, parse_duration_ns, "step='10s'")
                    .filter(|&n| n > 0)
                    .unwrap_or(10_000_000_000)
            }
            "trace" => w.trace = Some(p.value.node.trim().to_string()),
            "block" | "turns" => self.street_param(p, w),
            "data_rate" => {
                w.rate_bps = self
                    .value(p, parse_bandwidth, "data_rate='11Mbps'")
                    .flatten()
            }
            "basic_rate" => {
                w.basic_rate_bps = self
                    .value(p, parse_bandwidth, "basic_rate='1Mbps'")
                    .flatten()
            }
            "range" => {
                w.range_m = self
                    .value(p, parse_range_m, "range='250m'")
                    .unwrap_or(250.0)
            }
            "cs_range" => w.cs_range_m = self.value(p, parse_range_m, "cs_range='550m'"),
            "spacing" => {
                w.spacing_m = self
                    .value(p, parse_range_m, "spacing='200m'")
                    .unwrap_or(200.0)
            }
            "area" => w.area = self.value(p, parse_area, "area='1000x500'"),
            "exponent" => {
                let f = |s: &str| match s.trim().parse::<f64>() {
                    Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
                    _ => Err("a path-loss exponent is a number above 0 (2 is free space)".into()),
                };
                w.exponent = self.value(p, f, "exponent='3'").unwrap_or(3.0);
            }
            "sinr" => w.sinr_db = self.value(p, parse_db, "sinr='10dB'").unwrap_or(10.0),
            "rts_threshold" => {
                let f = |s: &str| {
                    if s.trim().eq_ignore_ascii_case("off") {
                        return Ok(None);
                    }
                    let n = parse_size_bytes(s)?;
                    u32::try_from(n)
                        .map(Some)
                        .map_err(|_| format!("{n} bytes is too many"))
                };
                w.rts_threshold = self
                    .value(p, f, "rts_threshold='500' (bytes) or 'off'")
                    .flatten();
            }
            _ => {}
        }
    }

    /// Reads `block=` or `turns=` (street mobility).
    fn street_param(&mut self, p: &Param, w: &mut WirelessSpec) {
        if p.key.node.eq_ignore_ascii_case("block") {
            w.block_m = self
                .value(p, parse_range_m, "block='100m'")
                .unwrap_or(100.0);
        } else {
            let example = "turns='0.5,0.25,0.25' (straight, left, right)";
            w.turns = (self.value(p, parse_turns, example)).unwrap_or([0.5, 0.25, 0.25]);
        }
    }

    /// Reads a key whose value is one of a few words.
    fn wireless_choice(&mut self, p: &Param, w: &mut WirelessSpec) {
        match p.key.node.to_ascii_lowercase().as_str() {
            "mac" => match p.value.node.trim().to_ascii_lowercase().as_str() {
                "dcf" => w.dcf = true,
                "none" => w.dcf = false,
                v => {
                    let msg = format!("bad mac '{v}': a wireless network runs `dcf` or `none`");
                    let hint = suggest(v, &["dcf", "none"]).map(|s| format!("did you mean '{s}'?"));
                    self.error(ErrorKind::BadValue, p.value.span, msg, hint);
                }
            },
            "propagation" => {
                let v = p.value.node.trim().to_ascii_lowercase();
                let models = ["unit_disk", "two_ray", "log_distance"];
                if models.contains(&v.as_str()) {
                    w.propagation = v;
                } else {
                    let msg = format!(
                        "unknown propagation model '{v}': use unit_disk, two_ray or log_distance"
                    );
                    let hint = suggest(&v, &models).map(|s| format!("did you mean '{s}'?"));
                    self.error(ErrorKind::BadValue, p.value.span, msg, hint);
                }
            }
            "placement" => {
                let v = p.value.node.trim().to_ascii_lowercase();
                let kinds = ["line", "grid", "uniform"];
                if kinds.contains(&v.as_str()) {
                    w.placement = Some(v);
                } else {
                    let msg = format!("unknown placement '{v}': use line, grid or uniform");
                    let hint = suggest(&v, &kinds).map(|s| format!("did you mean '{s}'?"));
                    self.error(ErrorKind::BadValue, p.value.span, msg, hint);
                }
            }
            "mobility" => {
                let v = p.value.node.trim().to_ascii_lowercase();
                let kinds = [
                    "static",
                    "random_waypoint",
                    "random_walk",
                    "manhattan",
                    "setdest",
                ];
                if kinds.contains(&v.as_str()) {
                    w.mobility = (v != "static").then_some(v);
                } else {
                    let msg = format!(
                        "unknown mobility model '{v}': use static, random_waypoint, random_walk, manhattan or setdest"
                    );
                    let hint = suggest(&v, &kinds).map(|s| format!("did you mean '{s}'?"));
                    self.error(ErrorKind::BadValue, p.value.span, msg, hint);
                }
            }
            _ => {}
        }
    }

    /// Reads `x=` and `y=` of a machine's `[Network id=… x=… y=…]`.
    pub(super) fn position(&mut self, n: &Block, g: &mut MachineGroup) {
        let (x, y) = (n.param("x"), n.param("y"));
        if x.is_none() && y.is_none() {
            return;
        }
        let (Some(px), Some(py)) = (x, y) else {
            let p = x.or(y).expect("one of them");
            let msg = "a position needs both x= and y=";
            let hint = Some("write e.g. x='100' y='0' (metres)".into());
            return self.error(ErrorKind::MissingKey, p.key.span, msg, hint);
        };
        let vx = self.value(px, parse_metres, "x='100m'");
        let vy = self.value(py, parse_metres, "y='0m'");
        if let (Some(vx), Some(vy)) = (vx, vy) {
            let loc = self.loc(px.key.span);
            g.positions.push((g.networks.len() as u32, vx, vy, loc));
        }
    }

    /// Checks that positions are on wireless networks and inside their
    /// areas.
    pub(super) fn check_positions(&mut self) {
        let mut errors = Vec::new();
        for g in &self.sc.machines {
            for &(iface, x, y, loc) in &g.positions {
                let Some(r) = g.networks.get(iface as usize) else {
                    continue;
                };
                let Some(net) = self.sc.networks.iter().find(|n| n.id == r.name) else {
                    continue;
                };
                let Some(w) = &net.wireless else {
                    let msg = format!(
                        "network '{}' is not wireless: its machines have no position",
                        net.id
                    );
                    errors.push(
                        crate::NdlError::new(ErrorKind::BadValue, loc, msg)
                            .hint("add type='wireless' to the network, or drop x= and y="),
                    );
                    continue;
                };
                if let Some((aw, ah)) = w.area {
                    if !(0.0..=aw).contains(&x) || !(0.0..=ah).contains(&y) {
                        let msg = format!(
                            "position ({x}, {y}) m is outside the area of network '{}' (0 to {aw} by 0 to {ah} m)",
                            net.id
                        );
                        errors.push(
                            crate::NdlError::new(ErrorKind::BadValue, loc, msg)
                                .hint("move the machine, or enlarge the network's area="),
                        );
                    }
                }
            }
        }
        self.errors.extend(errors);
    }
}
