//! Mobility: where a station is at a virtual instant.
//!
//! A moving station follows legs (from, to, start, arrival, end of the
//! pause after it); its position is computed when asked, by linear
//! interpolation on the current leg, and the next leg is drawn only when
//! the clock passes the end of the last one. No event is scheduled per
//! step, so a station that nobody asks about costs nothing.
//!
//! - **Random waypoint** (Johnson and Maltz 1996; Camp, Boleng and
//!   Davies 2002): pick a destination uniformly in the area and a speed
//!   uniformly in [min, max], go there in a straight line, pause, repeat.
//! - **Random walk**: pick a direction uniformly and a speed uniformly in
//!   [min, max], walk for a fixed time, reflecting off the area's edges.
//! - **Trace**: the legs of an ns-2 `setdest` movement file
//!   ([`parse_setdest`]).
//!
//! Each station draws from its own seeded stream.

use elvis_kernel::rng::Rng;
use rand::Rng as _;

/// How the stations of a network move.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub enum Model {
    /// They stay where they are placed.
    Static,
    /// Random waypoint in `area` (metres), speeds in `speed` (m/s),
    /// `pause_ns` at each waypoint.
    RandomWaypoint {
        area: (f64, f64),
        speed: (f64, f64),
        pause_ns: u64,
    },
    /// Random walk in `area`, each step `step_ns` long.
    RandomWalk {
        area: (f64, f64),
        speed: (f64, f64),
        step_ns: u64,
    },
}

impl Model {
    /// Returns the fastest a station moves under the model, m/s (no leg
    /// it draws is faster: travel times are rounded up, and a reflected
    /// walk is shorter than its straight line).
    pub fn max_speed(&self) -> f64 {
        match *self {
            Model::Static => 0.0,
            Model::RandomWaypoint { speed, .. } | Model::RandomWalk { speed, .. } => speed.1,
        }
    }
}

/// One straight move and the pause after it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Leg {
    pub from: [f64; 2],
    pub to: [f64; 2],
    pub start_ns: u64,
    pub arrive_ns: u64,
    /// End of the pause at `to` (the next leg starts then).
    pub until_ns: u64,
}

impl Leg {
    /// A station standing at `at` until `until_ns`.
    pub fn stay(at: [f64; 2], start_ns: u64, until_ns: u64) -> Leg {
        Leg {
            from: at,
            to: at,
            start_ns,
            arrive_ns: start_ns,
            until_ns,
        }
    }

    /// Returns the position at `t` (clamped to the leg).
    pub fn at(&self, t: u64) -> [f64; 2] {
        if t >= self.arrive_ns || self.arrive_ns == self.start_ns {
            return self.to;
        }
        let f = t.saturating_sub(self.start_ns) as f64 / (self.arrive_ns - self.start_ns) as f64;
        [
            self.from[0] + f * (self.to[0] - self.from[0]),
            self.from[1] + f * (self.to[1] - self.from[1]),
        ]
    }

    /// Returns the speed on the leg, m/s.
    pub fn speed(&self) -> f64 {
        let d = dist(self.from, self.to);
        if self.arrive_ns == self.start_ns {
            0.0
        } else {
            d / ((self.arrive_ns - self.start_ns) as f64 / 1e9)
        }
    }
}

fn dist(a: [f64; 2], b: [f64; 2]) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt()
}

/// Returns how long `d` metres take at `v` m/s, ns (at least 1).
fn travel_ns(d: f64, v: f64) -> u64 {
    ((d / v.max(1e-9)) * 1e9).ceil().max(1.0) as u64
}

/// Draws the leg that follows `prev` under `model`.
pub fn next_leg(model: &Model, prev: &Leg, rng: &mut Rng) -> Leg {
    let (from, start) = (prev.to, prev.until_ns);
    match *model {
        Model::Static => Leg::stay(from, start, u64::MAX),
        Model::RandomWaypoint {
            area,
            speed,
            pause_ns,
        } => {
            let to = [rng.random::<f64>() * area.0, rng.random::<f64>() * area.1];
            let v = speed.0 + rng.random::<f64>() * (speed.1 - speed.0);
            let arrive = start + travel_ns(dist(from, to), v);
            Leg {
                from,
                to,
                start_ns: start,
                arrive_ns: arrive,
                until_ns: arrive + pause_ns,
            }
        }
        Model::RandomWalk {
            area,
            speed,
            step_ns,
        } => {
            let angle = rng.random::<f64>() * std::f64::consts::TAU;
            let v = speed.0 + rng.random::<f64>() * (speed.1 - speed.0);
            let len = v * step_ns as f64 / 1e9;
            let reflect = |x: f64, max: f64| {
                let period = 2.0 * max;
                let r = x.rem_euclid(period);
                if r > max {
                    period - r
                } else {
                    r
                }
            };
            // Reflection shortens the straight line; the leg keeps the
            // step's duration, so its speed is at most `v`.
            let to = [
                reflect(from[0] + len * angle.cos(), area.0),
                reflect(from[1] + len * angle.sin(), area.1),
            ];
            Leg {
                from,
                to,
                start_ns: start,
                arrive_ns: start + step_ns,
                until_ns: start + step_ns,
            }
        }
    }
}

/// An ns-2 `setdest` movement file's legs, per node index: the initial
/// `$node_(i) set X_ …` / `Y_ …` positions and the `$ns_ at T
/// "$node_(i) setdest X Y V"` moves (a move starts from wherever the node
/// is at T, cutting short the one before).
///
/// # Errors
/// A line that is neither of these (comments and blank lines aside), or
/// a bad number, with its line number.
pub fn parse_setdest(text: &str) -> Result<Vec<Vec<Leg>>, String> {
    let mut start: Vec<[f64; 2]> = Vec::new();
    let mut moves: Vec<(u64, usize, [f64; 2], f64)> = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let bad = |what: &str| format!("line {}: {what}: {}", k + 1, line.trim());
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = l.split_whitespace().map(|w| w.trim_matches('"')).collect();
        let node = |w: &str| -> Option<usize> {
            w.strip_prefix("$node_(")?.strip_suffix(')')?.parse().ok()
        };
        let num = |w: &str| w.parse::<f64>().ok().filter(|v| v.is_finite());
        match words.as_slice() {
            [n, "set", axis @ ("X_" | "Y_" | "Z_"), v] => {
                let i = node(n).ok_or_else(|| bad("not a node"))?;
                let v = num(v).ok_or_else(|| bad("not a number"))?;
                if start.len() <= i {
                    start.resize(i + 1, [0.0, 0.0]);
                }
                match *axis {
                    "X_" => start[i][0] = v,
                    "Y_" => start[i][1] = v,
                    _ => {}
                }
            }
            ["$ns_", "at", t, n, "setdest", x, y, v] => {
                let i = node(n).ok_or_else(|| bad("not a node"))?;
                let (t, x, y, v) = match (num(t), num(x), num(y), num(v)) {
                    (Some(t), Some(x), Some(y), Some(v)) if t >= 0.0 && v > 0.0 => (t, x, y, v),
                    _ => return Err(bad("bad time, position or speed")),
                };
                moves.push(((t * 1e9).round() as u64, i, [x, y], v));
            }
            _ => return Err(bad("not a setdest line")),
        }
    }
    let nodes = start
        .len()
        .max(moves.iter().map(|m| m.1 + 1).max().unwrap_or(0));
    start.resize(nodes, [0.0, 0.0]);
    moves.sort_by_key(|m| (m.1, m.0));
    let mut legs: Vec<Vec<Leg>> = start
        .iter()
        .map(|&p| vec![Leg::stay(p, 0, u64::MAX)])
        .collect();
    for (t, i, to, v) in moves {
        let list = &mut legs[i];
        let last = list.last_mut().expect("one leg each");
        let here = last.at(t);
        // Cut the current leg short at `t`.
        if t < last.arrive_ns {
            last.to = here;
            last.arrive_ns = t.max(last.start_ns);
        }
        last.until_ns = t;
        let arrive = t + travel_ns(dist(here, to), v);
        list.push(Leg {
            from: here,
            to,
            start_ns: t,
            arrive_ns: arrive,
            until_ns: u64::MAX,
        });
    }
    Ok(legs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_waypoint_stays_in_the_area_at_speeds_in_range() {
        let model = Model::RandomWaypoint {
            area: (1000.0, 300.0),
            speed: (1.0, 20.0),
            pause_ns: 2_000_000_000,
        };
        let mut rng = elvis_kernel::rng::stream(5, elvis_kernel::rng::StreamKind::Network, 9);
        let mut leg = Leg::stay([500.0, 150.0], 0, 0);
        let mut speeds = Vec::new();
        for _ in 0..2000 {
            leg = next_leg(&model, &leg, &mut rng);
            for k in 0..=10 {
                let t = leg.start_ns + (leg.until_ns - leg.start_ns) * k / 10;
                let [x, y] = leg.at(t);
                assert!((0.0..=1000.0).contains(&x) && (0.0..=300.0).contains(&y));
            }
            speeds.push(leg.speed());
            assert_eq!(leg.until_ns - leg.arrive_ns, 2_000_000_000);
        }
        // The travel time is rounded up to a nanosecond: speeds may fall a
        // hair below the minimum, never above the maximum.
        assert!(speeds.iter().all(|&v| (0.999_999..=20.0).contains(&v)));
        // Uniform speeds: the mean of 2000 draws is near 10.5 m/s.
        let mean = speeds.iter().sum::<f64>() / speeds.len() as f64;
        assert!((mean - 10.5).abs() < 0.5, "{mean}");
    }

    #[test]
    fn random_walk_reflects_off_the_edges() {
        let model = Model::RandomWalk {
            area: (100.0, 100.0),
            speed: (5.0, 10.0),
            step_ns: 10_000_000_000,
        };
        let mut rng = elvis_kernel::rng::stream(5, elvis_kernel::rng::StreamKind::Network, 3);
        let mut leg = Leg::stay([50.0, 50.0], 0, 0);
        for _ in 0..1000 {
            leg = next_leg(&model, &leg, &mut rng);
            let [x, y] = leg.to;
            assert!((0.0..=100.0).contains(&x) && (0.0..=100.0).contains(&y));
            assert!(leg.speed() <= 10.0 + 1e-9);
        }
    }

    #[test]
    fn setdest_moves_start_where_the_node_is() {
        let trace = "$node_(0) set X_ 0.0\n$node_(0) set Y_ 0.0\n$node_(0) set Z_ 0.0\n\
                     $ns_ at 1.0 \"$node_(0) setdest 100.0 0.0 10.0\"\n\
                     $ns_ at 6.0 \"$node_(0) setdest 50.0 50.0 5.0\"\n";
        let legs = parse_setdest(trace).expect("parses");
        let at = |t: f64| {
            let t = (t * 1e9) as u64;
            legs[0]
                .iter()
                .find(|l| t < l.until_ns)
                .expect("a leg")
                .at(t)
        };
        assert_eq!(at(0.5), [0.0, 0.0]);
        assert_eq!(at(3.5), [25.0, 0.0]);
        // At 6 s the node is at 50 m, cut short; then 50 m north at 5 m/s.
        assert_eq!(at(6.0), [50.0, 0.0]);
        assert_eq!(at(11.0), [50.0, 25.0]);
        assert_eq!(at(100.0), [50.0, 50.0]);
        assert!(parse_setdest("$node_(0) fly").is_err());
    }
}
