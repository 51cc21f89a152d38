//! Wireless networks: the radio of a `type='wireless'` network and the
//! positions of its machines (given, or placed on a line, a grid or
//! uniformly in the area).

use crate::{err, BuildError};
use elvis_scenario::{Scenario, WirelessSpec};
use elvis_sim::net::wireless::phy::Standard;
use elvis_sim::net::wireless::propagation::Model;
use elvis_sim::net::wireless::{Mac, WirelessConfig};
use elvis_sim::{MachineId, Simulation};
use rand::Rng as _;

/// Returns the network layer's configuration of `spec`.
///
/// # Errors
/// A rate the standard does not have.
pub(crate) fn config(
    spec: &WirelessSpec,
    loc: elvis_scenario::Loc,
) -> Result<WirelessConfig, BuildError> {
    let standard = Standard::parse(&spec.standard.to_string())
        .ok_or_else(|| err(loc, format!("unknown standard 802.11{}", spec.standard)))?;
    let mac = if spec.dcf { Mac::Dcf } else { Mac::None };
    let mut cfg = WirelessConfig::new(standard, mac, spec.range_m);
    for (rate, slot) in [
        (spec.rate_bps, &mut cfg.rate_bps),
        (spec.basic_rate_bps, &mut cfg.basic_rate_bps),
    ] {
        if let Some(r) = rate {
            if !standard.rates().contains(&r) {
                let have: Vec<String> = (standard.rates().iter())
                    .map(|r| format!("{}", *r as f64 / 1e6))
                    .collect();
                let msg = format!(
                    "{} has no rate of {} Mbit/s (it has {})",
                    standard.name(),
                    r as f64 / 1e6,
                    have.join(", ")
                );
                return Err(err(loc, msg));
            }
            *slot = r;
        }
    }
    let p = &mut cfg.propagation;
    p.model = match spec.propagation.as_str() {
        "two_ray" => Model::TwoRay,
        "log_distance" => Model::LogDistance(spec.exponent),
        _ => Model::UnitDisk,
    };
    p.cs_range_m = spec.cs_range_m.unwrap_or(spec.range_m);
    p.sinr = 10f64.powf(spec.sinr_db / 10.0);
    if let Some(t) = spec.rts_threshold {
        cfg.rts_threshold = t;
    }
    Ok(cfg)
}

/// Places the machines of every wireless network: first as its
/// `placement` says (in the order they were attached), then where a
/// machine gives its own position.
///
/// # Errors
/// A placement that puts a machine outside the network's area.
pub(crate) fn place(
    sim: &mut Simulation,
    scenario: &Scenario,
    groups: &[(String, MachineId, u32)],
    net_ids: &rustc_hash::FxHashMap<&str, u32>,
    seed: u64,
) -> Result<(), BuildError> {
    for spec in &scenario.networks {
        let (Some(w), Some(&net)) = (&spec.wireless, net_ids.get(spec.id.as_str())) else {
            continue;
        };
        let ports = sim.network_machines(net).len();
        let Some(how) = &w.placement else {
            continue;
        };
        let mut rng = elvis_kernel::rng::stream(
            seed,
            elvis_kernel::rng::StreamKind::Builder,
            u64::from(net) | 1 << 40,
        );
        let cols = (ports as f64).sqrt().ceil().max(1.0) as usize;
        for i in 0..ports {
            let (x, y) = match how.as_str() {
                "line" => (i as f64 * w.spacing_m, 0.0),
                "grid" => (
                    (i % cols) as f64 * w.spacing_m,
                    (i / cols) as f64 * w.spacing_m,
                ),
                _ => {
                    let (aw, ah) = w.area.unwrap_or((1000.0, 1000.0));
                    (rng.random::<f64>() * aw, rng.random::<f64>() * ah)
                }
            };
            if let Some((aw, ah)) = w.area {
                if x > aw || y > ah {
                    let msg = format!(
                        "placement='{how}' puts machine {} of network '{}' at ({x}, {y}) m, outside its area {aw} x {ah} m",
                        i + 1,
                        spec.id
                    );
                    return Err(err(spec.loc, msg).with_hint("enlarge area= or lower spacing="));
                }
            }
            sim.set_port_position(net, i as u32, x, y)
                .map_err(|e| err(spec.loc, e.to_string()))?;
        }
    }
    positions(sim, scenario, groups, net_ids)?;
    for spec in &scenario.networks {
        let (Some(w), Some(&net)) = (&spec.wireless, net_ids.get(spec.id.as_str())) else {
            continue;
        };
        mobility(sim, scenario, spec, w, net)?;
    }
    Ok(())
}

/// Sets the mobility of wireless network `net`.
///
/// # Errors
/// A movement file that cannot be read or parsed.
fn mobility(
    sim: &mut Simulation,
    scenario: &Scenario,
    spec: &elvis_scenario::NetworkSpec,
    w: &WirelessSpec,
    net: u32,
) -> Result<(), BuildError> {
    use elvis_sim::net::wireless::mobility::{parse_setdest, Model as Moves};
    let area = w.area.unwrap_or((1000.0, 1000.0));
    let model = match w.mobility.as_deref() {
        Some("random_waypoint") => Moves::RandomWaypoint {
            area,
            speed: w.speed,
            pause_ns: w.pause_ns,
        },
        Some("random_walk") => Moves::RandomWalk {
            area,
            speed: w.speed,
            step_ns: w.step_ns,
        },
        Some("manhattan") => Moves::Manhattan {
            area,
            block: w.block_m,
            speed: w.speed,
            turns: w.turns,
            pause_ns: w.pause_ns,
        },
        Some("setdest") => {
            let file = w.trace.as_deref().unwrap_or_default();
            let path = match &scenario.base_dir {
                Some(d) => std::path::Path::new(d).join(file),
                None => std::path::PathBuf::from(file),
            };
            let text = std::fs::read_to_string(&path)
                .map_err(|e| err(spec.loc, format!("cannot read {}: {e}", path.display())))?;
            let legs = parse_setdest(&text)
                .map_err(|e| err(spec.loc, format!("{}: {e}", path.display())))?;
            return sim
                .set_trace(net, legs)
                .map_err(|e| err(spec.loc, e.to_string()));
        }
        _ => return Ok(()),
    };
    sim.set_mobility(net, model)
        .map_err(|e| err(spec.loc, e.to_string()))
}

/// Applies the positions machines give themselves.
///
/// # Errors
/// A machine not on the network (cannot happen after NDL's checks).
fn positions(
    sim: &mut Simulation,
    scenario: &Scenario,
    groups: &[(String, MachineId, u32)],
    net_ids: &rustc_hash::FxHashMap<&str, u32>,
) -> Result<(), BuildError> {
    for (k, g) in scenario.machines.iter().enumerate() {
        let Some(&(_, first, len)) = groups.get(k) else {
            continue;
        };
        for &(iface, x, y, loc) in &g.positions {
            let Some(r) = g.networks.get(iface as usize) else {
                continue;
            };
            let Some(&net) = net_ids.get(r.name.as_str()) else {
                continue;
            };
            for m in first..first + len {
                sim.set_position(net, m, x, y)
                    .map_err(|e| err(loc, e.to_string()))?;
            }
        }
    }
    Ok(())
}
