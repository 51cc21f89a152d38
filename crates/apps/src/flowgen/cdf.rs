//! Flow-size distributions: an empirical CDF given as points (size in
//! bytes, cumulative probability), linearly interpolated between them,
//! as the pFabric and HPCC simulators and `empirical-traffic-gen` draw
//! from their CDF files.
//!
//! Built in:
//! - [`Cdf::websearch`]: the web-search workload of the DCTCP paper
//!   (Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010, Fig. 4),
//!   as the points the pFabric/HPCC simulations use (`DCTCP_CDF` of
//!   `github.com/datacenter/empirical-traffic-gen`, the same points as
//!   `traffic_gen/WebSearch_distribution.txt` of
//!   `github.com/alibaba-edu/High-Precision-Congestion-Control`): 15 % of
//!   flows below 10 kB, half below 60 kB, 3 % from 10 to 30 MB; mean
//!   1.71 MB.
//! - [`Cdf::datamining`]: the data-mining workload of VL2 (Greenberg et
//!   al., "VL2: A Scalable and Flexible Data Center Network", SIGCOMM
//!   2009, Fig. 2), as `VL2_CDF` of `empirical-traffic-gen`: half the
//!   flows below 1.1 kB, 2 % from 100 MB to 1 GB; mean 12.7 MB.

/// A flow-size CDF: points (bytes, P(size ≤ bytes)), sizes and
/// probabilities non-decreasing, the last probability 1. Mass below the
/// first point's probability sits on the first size.
#[derive(Clone, Debug, PartialEq)]
pub struct Cdf {
    points: Vec<(f64, f64)>,
}

/// The DCTCP paper's web-search workload (see the module docs).
const WEBSEARCH: &[(f64, f64)] = &[
    (0.0, 0.0),
    (10e3, 0.15),
    (20e3, 0.2),
    (30e3, 0.3),
    (50e3, 0.4),
    (80e3, 0.53),
    (200e3, 0.6),
    (1e6, 0.7),
    (2e6, 0.8),
    (5e6, 0.9),
    (10e6, 0.97),
    (30e6, 1.0),
];

/// VL2's data-mining workload (see the module docs).
const DATAMINING: &[(f64, f64)] = &[
    (0.0, 0.0),
    (180.0, 0.1),
    (216.0, 0.2),
    (560.0, 0.3),
    (900.0, 0.4),
    (1100.0, 0.5),
    (1870.0, 0.6),
    (3160.0, 0.7),
    (10e3, 0.8),
    (400e3, 0.9),
    (3.16e6, 0.95),
    (100e6, 0.98),
    (1e9, 1.0),
];

/// Why a CDF was refused: the 1-based line (0: the whole file) and what
/// is wrong.
pub type CdfError = (usize, String);

impl Cdf {
    /// The web-search workload of the DCTCP paper.
    pub fn websearch() -> Cdf {
        Cdf {
            points: WEBSEARCH.to_vec(),
        }
    }

    /// The data-mining workload of VL2.
    pub fn datamining() -> Cdf {
        Cdf {
            points: DATAMINING.to_vec(),
        }
    }

    /// A built-in workload by name (`websearch`, `datamining`).
    pub fn builtin(name: &str) -> Option<Cdf> {
        match name {
            "websearch" => Some(Cdf::websearch()),
            "datamining" => Some(Cdf::datamining()),
            _ => None,
        }
    }

    /// Checks points (bytes, cumulative probability), each with its
    /// 1-based line.
    ///
    /// # Errors
    /// No point, a size or probability that is negative or not finite, a
    /// probability above 1, sizes or probabilities that decrease, or a
    /// last probability other than 1; with the line of the offending
    /// point.
    pub fn from_points(points: &[(usize, f64, f64)]) -> Result<Cdf, CdfError> {
        let Some(&(last_line, _, last_p)) = points.last() else {
            return Err((
                0,
                "no points: write lines of size,cumulative-probability".into(),
            ));
        };
        let mut prev: Option<(f64, f64)> = None;
        for &(line, x, p) in points {
            if !x.is_finite() || x < 0.0 {
                return Err((line, format!("size {x} is not a number of bytes ≥ 0")));
            }
            if !p.is_finite() || !(0.0..=1.0).contains(&p) {
                return Err((line, format!("probability {p} is not between 0 and 1")));
            }
            if let Some((px, pp)) = prev {
                if x < px {
                    return Err((line, format!("sizes must not decrease ({x} after {px})")));
                }
                if p < pp {
                    return Err((
                        line,
                        format!("the CDF is not monotone: probability {p} after {pp}"),
                    ));
                }
            }
            prev = Some((x, p));
        }
        if (last_p - 1.0).abs() > 1e-9 {
            return Err((
                last_line,
                format!("the CDF ends at {last_p}, not 1 (the last point must hold every flow)"),
            ));
        }
        Ok(Cdf {
            points: points.iter().map(|&(_, x, p)| (x, p)).collect(),
        })
    }

    /// Parses a CSV of `size,cumulative-probability` lines (bytes; 0 to
    /// 1). Blank lines, `#` comments and a first line that is not numbers
    /// (a header) are skipped; whitespace separates as well as a comma.
    ///
    /// # Errors
    /// A line that is not two numbers, and what [`Cdf::from_points`]
    /// refuses; with the 1-based line.
    pub fn parse_csv(text: &str) -> Result<Cdf, CdfError> {
        let mut points = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let fields: Vec<&str> = line
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|f| !f.is_empty())
                .collect();
            let nums: Option<Vec<f64>> = fields.iter().map(|f| f.parse().ok()).collect();
            match nums.as_deref() {
                Some(&[x, p]) => points.push((i + 1, x, p)),
                None if points.is_empty() && i == 0 => continue, // a header
                _ => {
                    return Err((
                        i + 1,
                        format!("'{line}' is not size,cumulative-probability"),
                    ))
                }
            }
        }
        Cdf::from_points(&points)
    }

    /// Returns the size with cumulative probability `u` (0 ≤ u < 1): the
    /// inverse of the piecewise-linear CDF, in whole bytes (at least 1).
    pub fn quantile(&self, u: f64) -> u64 {
        let pts = &self.points;
        let (x0, p0) = pts[0];
        if u <= p0 {
            return (x0.round() as u64).max(1);
        }
        let i = pts.partition_point(|&(_, p)| p < u).min(pts.len() - 1);
        let ((xa, pa), (xb, pb)) = (pts[i - 1], pts[i]);
        let x = if pb > pa {
            xa + (u - pa) / (pb - pa) * (xb - xa)
        } else {
            xb
        };
        (x.round() as u64).max(1)
    }

    /// Draws a size from 64 random bits.
    pub fn sample(&self, bits: u64) -> u64 {
        self.quantile(unit(bits))
    }

    /// Returns P(size ≤ x).
    pub fn cdf(&self, x: f64) -> f64 {
        let pts = &self.points;
        if x < pts[0].0 {
            return 0.0;
        }
        let i = pts.partition_point(|&(px, _)| px <= x);
        if i == pts.len() {
            return 1.0;
        }
        let ((xa, pa), (xb, pb)) = (pts[i - 1], pts[i]);
        pa + (x - xa) / (xb - xa) * (pb - pa)
    }

    /// Returns the mean size in bytes: the first point's mass at its size,
    /// then each segment's mass at its midpoint.
    pub fn mean(&self) -> f64 {
        let pts = &self.points;
        let head = pts[0].0 * pts[0].1;
        head + pts
            .windows(2)
            .map(|w| (w[1].1 - w[0].1) * (w[0].0 + w[1].0) / 2.0)
            .sum::<f64>()
    }
}

/// 64 random bits as a uniform number in [0, 1) (53 bits).
pub fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SplitMix64, a fixed stream for the tests.
    fn stream(seed: u64) -> impl FnMut() -> u64 {
        let mut s = seed;
        move || {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
    }

    /// The Kolmogorov–Smirnov statistic of `samples` against `cdf` (as in
    /// `elvis-web`'s model tests).
    fn ks(mut samples: Vec<f64>, cdf: impl Fn(f64) -> f64) -> f64 {
        samples.sort_by(f64::total_cmp);
        let n = samples.len() as f64;
        samples
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let f = cdf(x);
                (f - i as f64 / n).abs().max((f - (i + 1) as f64 / n).abs())
            })
            .fold(0.0, f64::max)
    }

    /// The KS critical value at α = 0.01 for n samples.
    fn critical(n: usize) -> f64 {
        1.628 / (n as f64).sqrt()
    }

    #[test]
    fn drawn_sizes_pass_kolmogorov_smirnov_against_the_published_cdfs() {
        let n = 20_000;
        for (cdf, what) in [
            (Cdf::websearch(), "websearch"),
            (Cdf::datamining(), "datamining"),
        ] {
            let mut r = stream(7);
            let xs: Vec<f64> = (0..n).map(|_| cdf.sample(r()) as f64).collect();
            // Sizes are whole bytes: compare against the CDF half a byte on.
            let d = ks(xs, |x| cdf.cdf(x + 0.5));
            assert!(d < critical(n), "{what}: D = {d}");
        }
    }

    #[test]
    fn the_other_workloads_sizes_fail_the_same_test() {
        let n = 20_000;
        let (web, dm) = (Cdf::websearch(), Cdf::datamining());
        let mut r = stream(7);
        let xs: Vec<f64> = (0..n).map(|_| dm.sample(r()) as f64).collect();
        assert!(ks(xs, |x| web.cdf(x + 0.5)) > critical(n));
    }

    #[test]
    fn the_built_in_cdfs_are_the_published_points() {
        let web = Cdf::websearch();
        // DCTCP Fig. 4 as the simulators tabulate it.
        for (x, p) in [(10e3, 0.15), (80e3, 0.53), (1e6, 0.7), (30e6, 1.0)] {
            assert!((web.cdf(x) - p).abs() < 1e-12, "{x}");
        }
        assert_eq!(web.quantile(0.53), 80_000);
        assert_eq!(web.quantile(0.65), 600_000);
        let dm = Cdf::datamining();
        assert!((dm.cdf(1100.0) - 0.5).abs() < 1e-12);
        assert_eq!(dm.quantile(0.98), 100_000_000);
        // Means of the piecewise-linear CDFs, summed by hand.
        assert!((web.mean() - 1_711_250.0).abs() < 1.0, "{}", web.mean());
        assert!((dm.mean() - 12_658_198.6).abs() < 1.0, "{}", dm.mean());
    }

    #[test]
    fn the_sample_mean_is_the_cdf_mean() {
        let web = Cdf::websearch();
        let mut r = stream(11);
        let n = 200_000;
        let m = (0..n).map(|_| web.sample(r()) as f64).sum::<f64>() / n as f64;
        assert!((m / web.mean() - 1.0).abs() < 0.02, "{m}");
    }

    #[test]
    fn a_csv_parses_with_header_comments_and_spaces() {
        let c = Cdf::parse_csv("size,cdf\n# bytes, P\n100,0.5\n\n200 1\n").unwrap();
        assert_eq!(c.quantile(0.25), 100);
        assert_eq!(c.quantile(0.75), 150);
        assert_eq!(c.mean(), 100.0 * 0.5 + 150.0 * 0.5);
    }

    #[test]
    fn bad_cdfs_are_refused_at_their_line() {
        let e = Cdf::parse_csv("0,0\n10,0.6\n20,0.5\n30,1\n").unwrap_err();
        assert_eq!(e.0, 3);
        assert!(e.1.contains("not monotone"), "{}", e.1);
        let e = Cdf::parse_csv("0,0\n10,0.6\n20,0.9\n").unwrap_err();
        assert_eq!(e.0, 3);
        assert!(e.1.contains("not 1"), "{}", e.1);
        let e = Cdf::parse_csv("0,0\n10,abc\n").unwrap_err();
        assert_eq!(e.0, 2);
        let e = Cdf::parse_csv("0,0\n5,0.5\n3,1\n").unwrap_err();
        assert_eq!(e.0, 3);
        assert_eq!(Cdf::parse_csv("# nothing\n").unwrap_err().0, 0);
        assert_eq!(Cdf::parse_csv("0,0\n10,1.5\n").unwrap_err().0, 2);
    }
}
