//! The web applications' metrics: running counts and p50/p90/p99 of
//! durations, published live in the run report.
//!
//! One [`Recorder`] is shared by every machine of a group running the same
//! application (it sits in the group's `Rc<Config>`), so the report holds
//! one set of numbers per group and application, published on the first
//! machine that started. Applications that run until their `stop` or
//! forever (a server) are never asked for a final result, so every metric
//! is kept current as samples arrive.
//!
//! Percentiles come from a log histogram with 1 % wide buckets (values
//! are exact to 1 %), with a cursor per percentile that moves as samples
//! arrive: a sample costs O(1) amortized, whatever the run's size.

use elvis_api::{Host, LiveMetric};
use std::cell::{Cell, RefCell};

/// The ratio between successive bucket bounds.
const STEP: f64 = 1.01;
/// Buckets: values up to 1.01^3200 (about 7e13 ns, 19 hours).
const BUCKETS: usize = 3200;

/// A log histogram with cursors at fixed quantiles.
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Vec<u64>,
    n: u64,
    /// Per quantile: (quantile, bucket, samples in lower buckets).
    cursors: Vec<(f64, usize, u64)>,
}

fn bucket_of(v: u64) -> usize {
    if v <= 1 {
        return 0;
    }
    ((v as f64).ln() / STEP.ln())
        .floor()
        .max(0.0)
        .min((BUCKETS - 1) as f64) as usize
}

/// Returns the value standing for bucket `b` (its geometric middle).
fn value_of(b: usize) -> f64 {
    STEP.powf(b as f64 + 0.5)
}

impl Histogram {
    /// A histogram tracking the quantiles `qs` (0 < q ≤ 1).
    pub fn new(qs: &[f64]) -> Histogram {
        Histogram {
            counts: vec![0; BUCKETS],
            n: 0,
            cursors: qs.iter().map(|&q| (q, 0, 0)).collect(),
        }
    }

    /// Returns the samples recorded.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Records `v`.
    pub fn record(&mut self, v: u64) {
        let b = bucket_of(v);
        self.counts[b] += 1;
        self.n += 1;
        for c in &mut self.cursors {
            if b < c.1 {
                c.2 += 1;
            }
            // The rank wanted: the ceil(q·n)-th smallest sample.
            let rank = ((c.0 * self.n as f64).ceil() as u64).max(1);
            while c.2 + self.counts[c.1] < rank {
                c.2 += self.counts[c.1];
                c.1 += 1;
            }
            while c.1 > 0 && c.2 >= rank {
                c.1 -= 1;
                c.2 -= self.counts[c.1];
            }
        }
    }

    /// Returns quantile `i`'s value (0 with no samples).
    pub fn quantile(&self, i: usize) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let b = self.cursors[i].1;
        if b == 0 {
            // 0 or 1 ns: a server delay of nothing.
            return 0.0;
        }
        value_of(b)
    }
}

/// The quantiles every duration metric publishes.
pub const QS: [f64; 3] = [0.5, 0.9, 0.99];

/// One duration published as `<name>_p50_ns`, `_p90_ns`, `_p99_ns`.
struct Timing {
    hist: Histogram,
    metrics: [LiveMetric; 3],
}

/// One count published as `<name>`.
struct Count {
    n: u64,
    metric: LiveMetric,
}

/// A ratio: count `num` over the sum of counts `den`.
pub type RatioDef = (&'static str, &'static str, &'static [&'static str]);

/// One quotient of counts published as `<name>` (0 while the denominator
/// is 0).
struct Ratio {
    name: &'static str,
    num: &'static str,
    den: &'static [&'static str],
    metric: LiveMetric,
}

/// A group's shared metrics: counts, durations, quotients of counts and
/// rates (gauges), each made and published when first touched.
#[derive(Default)]
pub struct Recorder {
    counts: RefCell<Vec<(&'static str, Count)>>,
    timings: RefCell<Vec<(&'static str, Timing)>>,
    ratios: RefCell<Vec<Ratio>>,
    gauges: RefCell<Vec<(&'static str, LiveMetric)>>,
    /// The first machine that published (the metrics' owner).
    started: Cell<bool>,
    /// When the group's first machine opened its metrics, ns.
    since: Cell<u64>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Recorder")
    }
}

impl Recorder {
    /// Publishes `timings` (their percentiles, at 0), then `counts` (at
    /// 0) on the first call, so the report lists them in a fixed order
    /// even when nothing happens; later calls do nothing.
    pub fn open(&self, host: &Host, counts: &[&'static str], timings: &[&'static str]) {
        self.open_full(host, counts, timings, &[], &[]);
    }

    /// [`Recorder::open`], then publishes `ratios`: each `(name, num,
    /// den)` is count `num` over the sum of the counts `den`, kept
    /// current.
    pub fn open_with_ratios(
        &self,
        host: &Host,
        counts: &[&'static str],
        timings: &[&'static str],
        ratios: &[RatioDef],
    ) {
        self.open_full(host, counts, timings, ratios, &[]);
    }

    /// As [`Recorder::open`], then publishes `gauges` (values set with
    /// [`Recorder::set`], at 0), and remembers the time of the first call
    /// ([`Recorder::since`]).
    pub fn open_with_gauges(
        &self,
        host: &Host,
        counts: &[&'static str],
        timings: &[&'static str],
        gauges: &[&'static str],
    ) {
        self.open_full(host, counts, timings, &[], gauges);
    }

    /// [`Recorder::open`] with ratios and gauges.
    fn open_full(
        &self,
        host: &Host,
        counts: &[&'static str],
        timings: &[&'static str],
        ratios: &[RatioDef],
        gauges: &[&'static str],
    ) {
        if self.started.replace(true) {
            return;
        }
        self.since.set(host.now().as_nanos());
        for &t in timings {
            let metrics =
                ["p50", "p90", "p99"].map(|q| host.publish_live(&format!("{t}_{q}_ns"), 0.0));
            self.timings.borrow_mut().push((
                t,
                Timing {
                    hist: Histogram::new(&QS),
                    metrics,
                },
            ));
        }
        for &c in counts {
            self.counts.borrow_mut().push((
                c,
                Count {
                    n: 0,
                    metric: host.publish_live(c, 0.0),
                },
            ));
        }
        for &(name, num, den) in ratios {
            self.ratios.borrow_mut().push(Ratio {
                name,
                num,
                den,
                metric: host.publish_live(name, 0.0),
            });
        }
        for &g in gauges {
            self.gauges
                .borrow_mut()
                .push((g, host.publish_live(g, 0.0)));
        }
    }

    /// Returns when the group's metrics were opened (its first machine's
    /// start), ns.
    pub fn since(&self) -> u64 {
        self.since.get()
    }

    /// Sets gauge `name` (one of those opened) to `v`.
    pub fn set(&self, name: &str, v: f64) {
        if let Some((_, m)) = self.gauges.borrow().iter().find(|(n, _)| *n == name) {
            m.set(v);
        }
    }

    /// Adds `k` to count `name` (one of those opened).
    pub fn add(&self, name: &str, k: u64) {
        if let Some((_, c)) = self
            .counts
            .borrow_mut()
            .iter_mut()
            .find(|(n, _)| *n == name)
        {
            c.n += k;
            c.metric.set(c.n as f64);
        }
        for r in self.ratios.borrow().iter() {
            if r.num == name || r.den.contains(&name) {
                r.metric.set(self.quotient(r));
            }
        }
    }

    fn quotient(&self, r: &Ratio) -> f64 {
        match r.den.iter().map(|d| self.get(d)).sum::<u64>() {
            0 => 0.0,
            d => self.get(r.num) as f64 / d as f64,
        }
    }

    /// Returns ratio `name`'s value (0 if there is none or its
    /// denominator is 0).
    pub fn ratio(&self, name: &str) -> f64 {
        let ratios = self.ratios.borrow();
        ratios
            .iter()
            .find(|r| r.name == name)
            .map_or(0.0, |r| self.quotient(r))
    }

    /// Records duration `ns` in timing `name` (one of those opened).
    pub fn time(&self, name: &str, ns: u64) {
        if let Some((_, t)) = self
            .timings
            .borrow_mut()
            .iter_mut()
            .find(|(n, _)| *n == name)
        {
            t.hist.record(ns);
            for (i, m) in t.metrics.iter().enumerate() {
                m.set(t.hist.quantile(i).round());
            }
        }
    }

    /// Returns count `name`'s value.
    pub fn get(&self, name: &str) -> u64 {
        self.counts
            .borrow()
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |(_, c)| c.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_track_exact_quantiles_within_a_bucket() {
        let mut h = Histogram::new(&QS);
        // 1..=1000 µs in a scrambled order.
        let mut vals: Vec<u64> = (1..=1000).map(|i| i * 1000).collect();
        let mut x = 7u64;
        for i in (1..vals.len()).rev() {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            vals.swap(i, (x >> 33) as usize % (i + 1));
        }
        for v in &vals {
            h.record(*v);
        }
        for (i, want) in [(0, 500_000.0), (1, 900_000.0), (2, 990_000.0)] {
            let got = h.quantile(i);
            assert!((got - want).abs() / want < 0.011, "q{i}: {got} vs {want}");
        }
    }

    #[test]
    fn one_sample_is_every_quantile() {
        let mut h = Histogram::new(&QS);
        h.record(42_000);
        for i in 0..3 {
            assert!((h.quantile(i) - 42_000.0).abs() < 42_000.0 * 0.011);
        }
    }
}
