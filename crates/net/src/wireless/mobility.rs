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
//! - **Manhattan** (Bai, Sadagopan and Helmy, "IMPORTANT: a framework to
//!   systematically analyze the impact of mobility on performance of
//!   routing protocols for ad hoc networks", INFOCOM 2003): streets run
//!   every `block` metres in both directions; a station moves from one
//!   intersection to the next and there goes straight, turns left or
//!   turns right (probabilities 0.5, 0.25, 0.25 in the paper). Where the
//!   map ends, the choices that would leave it are dropped and the others
//!   keep their proportions; a station with none turns back. Its speed is
//!   drawn uniformly in [min, max] for each block (the paper's speed has
//!   memory from one time slot to the next and slows behind a nearer
//!   station on its lane; neither is modelled). A station starts on the
//!   street nearest its placed position; it may pause at each
//!   intersection.
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
    /// Manhattan street grid in `area`: streets every `block` metres,
    /// `turns` the probabilities of going straight, left and right at an
    /// intersection, `pause_ns` at each one.
    Manhattan {
        area: (f64, f64),
        block: f64,
        speed: (f64, f64),
        turns: [f64; 3],
        pause_ns: u64,
    },
}

impl Model {
    /// Returns the fastest a station moves under the model, m/s (no leg
    /// it draws is faster: travel times are rounded up, and a reflected
    /// walk is shorter than its straight line).
    pub fn max_speed(&self) -> f64 {
        match *self {
            Model::Static => 0.0,
            Model::RandomWaypoint { speed, .. }
            | Model::RandomWalk { speed, .. }
            | Model::Manhattan { speed, .. } => speed.1,
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

    /// A straight move from `from` to `to` at `speed` m/s starting at
    /// `start_ns`, then a pause of `pause_ns`.
    fn travel(from: [f64; 2], to: [f64; 2], start_ns: u64, speed: f64, pause_ns: u64) -> Leg {
        let arrive_ns = start_ns + travel_ns(dist(from, to), speed);
        Leg {
            from,
            to,
            start_ns,
            arrive_ns,
            until_ns: arrive_ns + pause_ns,
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
            Leg::travel(from, to, start, v, pause_ns)
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
        Model::Manhattan { .. } => manhattan_leg(model, prev, rng),
    }
}

/// A direction on the street grid: (dx, dy), one of them ±1.
type Heading = (i64, i64);

/// Draws the way a Manhattan station heading `(dx, dy)` leaves
/// intersection `at` of a map of intersections (0..=nx, 0..=ny): straight,
/// left or right with probabilities `turns` among the ways that stay on
/// the map, back when none does.
fn turn(
    (dx, dy): Heading,
    (i, j): (i64, i64),
    (nx, ny): (i64, i64),
    turns: [f64; 3],
    rng: &mut Rng,
) -> Heading {
    let inside = |(ox, oy): Heading| (0..=nx).contains(&(i + ox)) && (0..=ny).contains(&(j + oy));
    // Straight, left (counter-clockwise), right.
    let options: [Heading; 3] = [(dx, dy), (-dy, dx), (dy, -dx)];
    let open = [0, 1, 2].map(|k| if inside(options[k]) { turns[k] } else { 0.0 });
    let total: f64 = open.iter().sum();
    let mut u = rng.random::<f64>() * total;
    if total <= 0.0 {
        return (-dx, -dy);
    }
    for k in 0..3 {
        if u < open[k] {
            return options[k];
        }
        u -= open[k];
    }
    // Rounding left `u` past the last open way.
    let k = open.iter().rposition(|&p| p > 0.0).unwrap_or(0);
    options[k]
}

/// Draws the next block of a Manhattan station (see the module docs);
/// `prev` is the block it just finished, or where it was placed.
fn manhattan_leg(model: &Model, prev: &Leg, rng: &mut Rng) -> Leg {
    let Model::Manhattan {
        area,
        block,
        speed,
        turns,
        pause_ns,
    } = *model
    else {
        unreachable!("a Manhattan leg of another model")
    };
    let start = prev.until_ns;
    // Intersections (i, j) at (i·block, j·block), 0 ≤ i ≤ nx, 0 ≤ j ≤ ny.
    let (nx, ny) = (
        (area.0 / block).floor() as i64,
        (area.1 / block).floor() as i64,
    );
    let inside = |i: i64, j: i64| (0..=nx).contains(&i) && (0..=ny).contains(&j);
    let node = |v: f64, n: i64| ((v / block).round() as i64).clamp(0, n);
    let placed = prev.from == prev.to;
    let (mut i, mut j) = (node(prev.to[0], nx), node(prev.to[1], ny));
    let mut from = [i as f64 * block, j as f64 * block];
    let heading: Heading = if placed {
        // The nearest street; on it, towards the intersection on one
        // side or the other.
        let [x, y] = prev.to;
        let vertical = (x - from[0]).abs() <= (y - from[1]).abs();
        let (v, n) = if vertical { (y, ny) } else { (x, nx) };
        let v = v.clamp(0.0, n as f64 * block);
        let (mut lo, mut hi) = ((v / block).floor() as i64, (v / block).ceil() as i64);
        if lo == hi {
            (lo, hi) = (lo - 1, hi + 1);
        }
        let up = rng.random::<bool>();
        let k = match (up, (0..=n).contains(&lo), (0..=n).contains(&hi)) {
            (true, _, true) | (false, false, true) => hi,
            _ => lo,
        };
        if vertical {
            (from[1], j) = (v, k);
        } else {
            (from[0], i) = (v, k);
        }
        (0, 0)
    } else {
        let (dx, dy) = (prev.to[0] - prev.from[0], prev.to[1] - prev.from[1]);
        if dx.abs() > dy.abs() {
            (dx.signum() as i64, 0)
        } else {
            (0, dy.signum() as i64)
        }
    };
    if heading != (0, 0) {
        let (dx, dy) = turn(heading, (i, j), (nx, ny), turns, rng);
        (i, j) = (i + dx, j + dy);
    }
    let to = [i as f64 * block, j as f64 * block];
    if !inside(i, j) || to == from {
        return Leg::stay(from, start, u64::MAX);
    }
    let v = speed.0 + rng.random::<f64>() * (speed.1 - speed.0);
    Leg::travel(from, to, start, v, pause_ns)
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

    fn manhattan(area: (f64, f64)) -> Model {
        Model::Manhattan {
            area,
            block: 100.0,
            speed: (5.0, 15.0),
            turns: [0.5, 0.25, 0.25],
            pause_ns: 0,
        }
    }

    /// Whether `v` is a multiple of 100 m.
    fn on_street(v: f64) -> bool {
        (v / 100.0 - (v / 100.0).round()).abs() < 1e-9
    }

    #[test]
    fn manhattan_stations_stay_on_the_streets_at_speeds_in_range() {
        let model = manhattan((1050.0, 530.0));
        for k in 0..20 {
            let mut rng = elvis_kernel::rng::stream(7, elvis_kernel::rng::StreamKind::Network, k);
            let placed = [rng.random::<f64>() * 1050.0, rng.random::<f64>() * 530.0];
            let mut leg = Leg::stay(placed, 0, 0);
            for _ in 0..500 {
                leg = next_leg(&model, &leg, &mut rng);
                for f in 0..=10 {
                    let t = leg.start_ns + (leg.until_ns - leg.start_ns) * f / 10;
                    let [x, y] = leg.at(t);
                    assert!(
                        on_street(x) || on_street(y),
                        "({x}, {y}) is off the streets"
                    );
                    assert!((0.0..=1000.0).contains(&x) && (0.0..=500.0).contains(&y));
                }
                // A block at most, along one street.
                let (dx, dy) = (leg.to[0] - leg.from[0], leg.to[1] - leg.from[1]);
                assert!(dx == 0.0 || dy == 0.0);
                assert!(dx.abs() + dy.abs() <= 100.0 + 1e-9);
                assert!((4.999_999..=15.0).contains(&leg.speed()), "{}", leg.speed());
            }
        }
    }

    #[test]
    fn manhattan_turns_follow_the_probabilities() {
        // A large map: count the choices at intersections away from its
        // edges, where all three are open.
        let model = manhattan((10_000.0, 10_000.0));
        let mut rng = elvis_kernel::rng::stream(3, elvis_kernel::rng::StreamKind::Network, 1);
        let mut leg = Leg::stay([5_000.0, 5_000.0], 0, 0);
        let mut counts = [0u32; 3];
        for _ in 0..20_000 {
            let next = next_leg(&model, &leg, &mut rng);
            let [x, y] = leg.to;
            let interior = (100.0..=9_900.0).contains(&x) && (100.0..=9_900.0).contains(&y);
            if interior && leg.from != leg.to {
                let h = (leg.to[0] - leg.from[0], leg.to[1] - leg.from[1]);
                let n = (next.to[0] - next.from[0], next.to[1] - next.from[1]);
                // The cross product's sign: left turns are counter-clockwise.
                let cross = h.0 * n.1 - h.1 * n.0;
                let k = if cross == 0.0 {
                    0
                } else if cross > 0.0 {
                    1
                } else {
                    2
                };
                counts[k] += 1;
            }
            leg = next;
        }
        let n: u32 = counts.iter().sum();
        assert!(n > 15_000, "{n}");
        // Within four standard deviations of the binomial counts.
        for (c, p) in counts.iter().zip([0.5, 0.25, 0.25]) {
            let (mean, sd) = (n as f64 * p, (n as f64 * p * (1.0 - p)).sqrt());
            assert!((*c as f64 - mean).abs() < 4.0 * sd, "{counts:?}");
        }
    }

    #[test]
    fn manhattan_paths_depend_on_the_seed_only() {
        let model = manhattan((1000.0, 1000.0));
        let path = |seed| {
            let mut rng =
                elvis_kernel::rng::stream(seed, elvis_kernel::rng::StreamKind::Network, 4);
            let mut leg = Leg::stay([333.0, 250.0], 0, 0);
            (0..100)
                .map(|_| {
                    leg = next_leg(&model, &leg, &mut rng);
                    leg.to
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(path(1), path(1));
        assert_ne!(path(1), path(2));
        // The placed station went to the nearest street (x = 300 m).
        assert_eq!(path(1)[0][0], 300.0);
    }
}
