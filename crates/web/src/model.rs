//! Web workload models: how large pages and objects are, how many images
//! and links a page has, how long a user thinks.
//!
//! Two kinds:
//!
//! - **SURGE** (the default), from Barford and Crovella, "Generating
//!   Representative Web Workloads for Network and Server Performance
//!   Evaluation", ACM SIGMETRICS 1998, Table 1:
//!   - file sizes: lognormal body (μ = 9.357, σ = 1.318) with a Pareto
//!     tail (α = 1.1, k = 133 KB = 133,000 bytes) above the cut, the two
//!     joined so that the CDF is continuous: the tail holds the mass the
//!     lognormal leaves above k, 3.2 %;
//!   - embedded references per page: Pareto (α = 2.43, k = 1);
//!   - inactive OFF (think) times: Pareto (α = 1.5, k = 1 s).
//!
//!   SURGE has no count of links per page; pages here carry
//!   [`SURGE_LINKS`] links each.
//! - **Histograms** (the Elvis format): a directory with `page_size.csv`,
//!   `num_links.csv`, `num_images.csv` and `image_size.csv`, each a
//!   `buckets,weights` table: a bucket's lower bound and its weight. A
//!   draw picks a bucket by weight, then a value uniformly inside it (up
//!   to the next bound; the last bucket is as wide as the one before).
//!   Sizes are in KB (1,000 bytes). Think times still follow SURGE.
//!
//! Every sampler is an inverse CDF of uniform draws, so a seeded stream
//! gives the same values on every run; [`Dist::cdf`] is the exact CDF the
//! tests check samples against (Kolmogorov–Smirnov).

use std::fmt;
use std::path::Path;

/// Links per page in the SURGE model (which does not model links).
pub const SURGE_LINKS: u32 = 10;
/// The largest object a model draws (the Pareto tails are unbounded).
pub const MAX_SIZE: u64 = 1 << 30;
/// The most images on a page.
pub const MAX_IMAGES: u32 = 200;
/// The longest think time, ns (a Pareto with α = 1.5 has no variance).
pub const MAX_THINK_NS: u64 = 3_600_000_000_000;

/// A continuous distribution.
#[derive(Clone, Debug, PartialEq)]
pub enum Dist {
    /// Pareto with shape `alpha` and scale (minimum) `k`.
    Pareto { alpha: f64, k: f64 },
    /// Lognormal (of `mu`, `sigma`) below `k`, Pareto (`alpha`, `k`)
    /// above, continuous at `k`.
    LognormalPareto {
        mu: f64,
        sigma: f64,
        alpha: f64,
        k: f64,
    },
    /// A bucket histogram: `bounds[i]` is bucket i's lower bound, bucket
    /// i ends at `bounds[i + 1]` (the last at `end`); `cum[i]` is the
    /// weight of buckets 0..=i over the total.
    Buckets {
        bounds: Vec<f64>,
        end: f64,
        cum: Vec<f64>,
    },
}

/// SURGE's file-size distribution (bytes).
pub fn surge_size() -> Dist {
    Dist::LognormalPareto {
        mu: 9.357,
        sigma: 1.318,
        alpha: 1.1,
        k: 133_000.0,
    }
}

/// SURGE's embedded references per page.
pub fn surge_embedded() -> Dist {
    Dist::Pareto {
        alpha: 2.43,
        k: 1.0,
    }
}

/// SURGE's inactive OFF (think) time, seconds.
pub fn surge_think() -> Dist {
    Dist::Pareto { alpha: 1.5, k: 1.0 }
}

/// Returns a uniform draw in (0, 1) from 64 random bits.
pub fn unit(bits: u64) -> f64 {
    ((bits >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

impl Dist {
    /// Returns the value at quantile `u` in (0, 1) (the inverse CDF).
    pub fn quantile(&self, u: f64) -> f64 {
        match self {
            Dist::Pareto { alpha, k } => k * (1.0 - u).powf(-1.0 / alpha),
            Dist::LognormalPareto {
                mu,
                sigma,
                alpha,
                k,
            } => {
                let cut = normal_cdf((k.ln() - mu) / sigma);
                if u < cut {
                    (mu + sigma * normal_quantile(u)).exp()
                } else {
                    k * ((1.0 - u) / (1.0 - cut)).powf(-1.0 / alpha)
                }
            }
            Dist::Buckets { bounds, end, cum } => {
                let i = cum.partition_point(|&c| c <= u).min(bounds.len() - 1);
                let lo_c = if i == 0 { 0.0 } else { cum[i - 1] };
                let hi = bounds.get(i + 1).copied().unwrap_or(*end);
                let w = cum[i] - lo_c;
                let f = if w > 0.0 { (u - lo_c) / w } else { 0.0 };
                bounds[i] + f * (hi - bounds[i])
            }
        }
    }

    /// Returns the CDF at `x`.
    pub fn cdf(&self, x: f64) -> f64 {
        match self {
            Dist::Pareto { alpha, k } => {
                if x < *k {
                    0.0
                } else {
                    1.0 - (k / x).powf(*alpha)
                }
            }
            Dist::LognormalPareto {
                mu,
                sigma,
                alpha,
                k,
            } => {
                if x <= 0.0 {
                    0.0
                } else if x < *k {
                    normal_cdf((x.ln() - mu) / sigma)
                } else {
                    let cut = normal_cdf((k.ln() - mu) / sigma);
                    1.0 - (1.0 - cut) * (k / x).powf(*alpha)
                }
            }
            Dist::Buckets { bounds, end, cum } => {
                if x < bounds[0] {
                    return 0.0;
                }
                let i = bounds.partition_point(|&b| b <= x) - 1;
                let lo_c = if i == 0 { 0.0 } else { cum[i - 1] };
                let hi = bounds.get(i + 1).copied().unwrap_or(*end);
                if x >= hi {
                    return cum[i];
                }
                lo_c + (cum[i] - lo_c) * (x - bounds[i]) / (hi - bounds[i])
            }
        }
    }

    /// Draws one value from 64 random bits.
    pub fn sample(&self, bits: u64) -> f64 {
        self.quantile(unit(bits))
    }
}

/// The standard normal CDF, Φ(x), through erfc (W. J. Cody's rational
/// approximation as in Numerical Recipes' `erfcc`, relative error below
/// 1.2e-7).
pub fn normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    if x >= 0.0 {
        1.0 - 0.5 * erfc
    } else {
        0.5 * erfc
    }
}

/// The standard normal quantile, Φ⁻¹(p) (P. J. Acklam's rational
/// approximation, relative error below 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// A workload model: what the server's pages are made of, and how long
/// users think.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    /// `"surge"` or the directory it was read from.
    pub name: String,
    /// The HTML page's size, bytes.
    pub page_size: Dist,
    /// Links per page (a count; `None`: [`SURGE_LINKS`]).
    pub links: Option<Dist>,
    /// Images per page.
    pub images: Dist,
    /// An image's size, bytes.
    pub image_size: Dist,
    /// Think time, seconds.
    pub think: Dist,
}

impl Model {
    /// The SURGE model (the default).
    pub fn surge() -> Model {
        Model {
            name: "surge".into(),
            page_size: surge_size(),
            links: None,
            images: surge_embedded(),
            image_size: surge_size(),
            think: surge_think(),
        }
    }

    /// Reads an Elvis-format model directory.
    ///
    /// # Errors
    /// A missing or unreadable file, or a malformed line, as
    /// `file:line: why`.
    pub fn from_dir(dir: &Path) -> Result<Model, String> {
        let read = |name: &str, scale: f64| -> Result<Dist, String> {
            let path = dir.join(name);
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            buckets(&text, scale).map_err(|(line, why)| format!("{}:{line}: {why}", path.display()))
        };
        Ok(Model {
            name: dir.display().to_string(),
            page_size: read("page_size.csv", 1000.0)?,
            links: Some(read("num_links.csv", 1.0)?),
            images: read("num_images.csv", 1.0)?,
            image_size: read("image_size.csv", 1000.0)?,
            think: surge_think(),
        })
    }

    /// Draws a page size, bytes (at least 1).
    pub fn draw_page_size(&self, bits: u64) -> u64 {
        size(self.page_size.sample(bits))
    }

    /// Draws an image size, bytes (at least 1).
    pub fn draw_image_size(&self, bits: u64) -> u64 {
        size(self.image_size.sample(bits))
    }

    /// Draws a page's image count.
    pub fn draw_images(&self, bits: u64) -> u32 {
        let n = self.images.sample(bits);
        // SURGE's Pareto starts at 1: every page has one embedded object
        // at least; a histogram may say 0.
        (n.floor().max(0.0) as u32).min(MAX_IMAGES)
    }

    /// Draws a page's link count.
    pub fn draw_links(&self, bits: u64) -> u32 {
        match &self.links {
            None => SURGE_LINKS,
            Some(d) => (d.sample(bits).floor().max(0.0) as u32).min(1000),
        }
    }

    /// Draws a think time, ns.
    pub fn draw_think_ns(&self, bits: u64) -> u64 {
        ((self.think.sample(bits) * 1e9) as u64).min(MAX_THINK_NS)
    }
}

fn size(x: f64) -> u64 {
    (x.round() as u64).clamp(1, MAX_SIZE)
}

/// Parses a `buckets,weights` table into a [`Dist::Buckets`], bounds
/// multiplied by `scale`.
///
/// # Errors
/// `(line, why)`: a missing header, a line that is not two numbers, a
/// negative weight, bounds not increasing, or no weight at all.
pub fn buckets(text: &str, scale: f64) -> Result<Dist, (usize, String)> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
    match lines.next() {
        Some((_, h)) if h.replace(' ', "").eq_ignore_ascii_case("buckets,weights") => {}
        Some((n, h)) => {
            return Err((
                n,
                format!("expected the header 'buckets,weights', got '{h}'"),
            ))
        }
        None => return Err((1, "the file is empty".into())),
    }
    let mut bounds: Vec<f64> = Vec::new();
    let mut weights = Vec::new();
    for (n, line) in lines.filter(|(_, l)| !l.is_empty()) {
        let mut cols = line.split(',').map(str::trim);
        let (Some(b), Some(w), None) = (cols.next(), cols.next(), cols.next()) else {
            return Err((n, format!("expected 'bucket,weight', got '{line}'")));
        };
        let num = |s: &str, what: &str| {
            s.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or((n, format!("{what} '{s}' is not a number")))
        };
        let (b, w) = (num(b, "bucket")? * scale, num(w, "weight")?);
        if w < 0.0 {
            return Err((n, format!("weight {w} is negative")));
        }
        if b < 0.0 {
            return Err((n, format!("bucket {b} is negative")));
        }
        if bounds.last().is_some_and(|&l| b <= l) {
            return Err((n, "bucket bounds must increase".into()));
        }
        bounds.push(b);
        weights.push(w);
    }
    let total: f64 = weights.iter().sum();
    if bounds.is_empty() || total <= 0.0 {
        return Err((text.lines().count().max(1), "no bucket has weight".into()));
    }
    let end = match bounds.len() {
        1 => bounds[0] + scale,
        n => bounds[n - 1] + (bounds[n - 1] - bounds[n - 2]),
    };
    let mut acc = 0.0;
    let cum = weights
        .iter()
        .map(|w| {
            acc += w;
            acc / total
        })
        .collect();
    Ok(Dist::Buckets { bounds, end, cum })
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

#[cfg(test)]
mod tests;
