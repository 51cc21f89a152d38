use super::*;
use rand::RngCore;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// The Kolmogorov–Smirnov statistic of `samples` against `cdf`.
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

/// The critical value of the KS test at α = 0.01 for n samples.
fn critical(n: usize) -> f64 {
    1.628 / (n as f64).sqrt()
}

fn draws(d: &Dist, n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..n).map(|_| d.sample(rng.next_u64())).collect()
}

#[test]
fn surge_samplers_pass_kolmogorov_smirnov_against_their_cdfs() {
    let n = 20_000;
    for (d, what) in [
        (surge_size(), "file size"),
        (surge_embedded(), "embedded references"),
        (surge_think(), "think time"),
    ] {
        let s = ks(draws(&d, n, 7), |x| d.cdf(x));
        assert!(s < critical(n), "{what}: D = {s}");
    }
}

#[test]
fn the_surge_cdfs_are_the_published_ones() {
    // Independent closed forms from Barford and Crovella (1998), Table 1.
    let pareto = |a: f64, k: f64, x: f64| 1.0 - (k / x).powf(a);
    assert!((surge_think().cdf(3.0) - pareto(1.5, 1.0, 3.0)).abs() < 1e-12);
    assert!((surge_embedded().cdf(2.0) - pareto(2.43, 1.0, 2.0)).abs() < 1e-12);
    let size = surge_size();
    // The lognormal body's median is e^μ; the tail's mass is what the
    // lognormal leaves above k = 133 KB.
    assert!((size.cdf(9.357f64.exp()) - 0.5).abs() < 1e-6);
    let above = 1.0 - normal_cdf((133_000f64.ln() - 9.357) / 1.318);
    assert!((above - 0.032).abs() < 0.001, "tail mass {above}");
    assert!((1.0 - size.cdf(266_000.0) - above * 0.5f64.powf(1.1)).abs() < 1e-9);
    // Continuous at the cut, and the quantile function inverts the CDF.
    assert!((size.cdf(132_999.99) - size.cdf(133_000.0)).abs() < 1e-6);
    for u in [0.01, 0.3, 0.5, 0.9, 0.95, 0.999] {
        assert!((size.cdf(size.quantile(u)) - u).abs() < 1e-6, "u = {u}");
    }
}

#[test]
fn a_wrong_distribution_fails_the_same_test() {
    // The test can fail: lognormal samples of another σ are rejected.
    let n = 20_000;
    let other = Dist::LognormalPareto {
        mu: 9.357,
        sigma: 1.2,
        alpha: 1.1,
        k: 133_000.0,
    };
    let s = ks(draws(&other, n, 7), |x| surge_size().cdf(x));
    assert!(s > critical(n), "D = {s}");
}

const SMALL: &str = "buckets,weights\n0,1\n10,3\n20,0\n30,4\n";

#[test]
fn bucket_samplers_pass_kolmogorov_smirnov_against_the_bucket_cdf() {
    let d = buckets(SMALL, 1.0).unwrap();
    // Bucket CDF by hand: [0,10) 1/8, [10,20) 3/8, [20,30) 0, [30,40) 4/8.
    let hand = |x: f64| match x {
        x if x < 0.0 => 0.0,
        x if x < 10.0 => x / 80.0,
        x if x < 20.0 => 0.125 + (x - 10.0) * 3.0 / 80.0,
        x if x < 30.0 => 0.5,
        x if x < 40.0 => 0.5 + (x - 30.0) / 20.0,
        _ => 1.0,
    };
    for x in [0.0, 5.0, 10.0, 15.0, 25.0, 35.0, 40.0] {
        assert!((d.cdf(x) - hand(x)).abs() < 1e-12, "x = {x}");
    }
    let n = 20_000;
    let samples = draws(&d, n, 11);
    assert!(
        samples.iter().all(|&x| !(20.0..30.0).contains(&x)),
        "an empty bucket is drawn"
    );
    let s = ks(samples, hand);
    assert!(s < critical(n), "D = {s}");
}

#[test]
fn a_malformed_histogram_names_its_line() {
    assert_eq!(buckets("b,w\n", 1.0).unwrap_err().0, 1);
    assert_eq!(
        buckets("buckets,weights\n0,1\nx,2\n", 1.0).unwrap_err().0,
        3
    );
    assert_eq!(
        buckets("buckets,weights\n0,1\n5,-2\n", 1.0).unwrap_err().0,
        3
    );
    assert_eq!(
        buckets("buckets,weights\n5,1\n5,2\n", 1.0).unwrap_err().0,
        3
    );
    assert_eq!(buckets("buckets,weights\n0,1,2\n", 1.0).unwrap_err().0, 2);
    assert!(buckets("buckets,weights\n0,0\n", 1.0).is_err());
}

fn fixture() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-model")
}

#[test]
fn a_model_directory_loads_and_its_errors_say_file_and_line() {
    let m = Model::from_dir(&fixture()).unwrap();
    // Sizes are in KB: the tiny model's pages are 2 to 6 KB.
    for b in [1u64, 1 << 40, u64::MAX / 3, u64::MAX] {
        let s = m.draw_page_size(b);
        assert!((2000..=6000).contains(&s), "{s}");
        assert!(m.draw_images(b) <= 4);
        assert!(m.draw_links(b) <= 3);
    }
    let dir = std::env::temp_dir().join(format!("elvis-web-bad-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["page_size", "num_links", "num_images", "image_size"] {
        std::fs::copy(
            fixture().join(format!("{f}.csv")),
            dir.join(format!("{f}.csv")),
        )
        .unwrap();
    }
    std::fs::write(dir.join("num_images.csv"), "buckets,weights\n0,1\n1,oops\n").unwrap();
    let e = Model::from_dir(&dir).unwrap_err();
    assert!(
        e.ends_with("num_images.csv:3: weight 'oops' is not a number"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_yahoo_model_loads_when_given() {
    // The paper's Yahoo model is not shipped: point ELVIS_YAHOO_MODEL at
    // a copy of its directory to check it.
    let Some(dir) = std::env::var_os("ELVIS_YAHOO_MODEL") else {
        eprintln!("skipped: ELVIS_YAHOO_MODEL is not set");
        return;
    };
    let dir = std::path::Path::new(&dir);
    let m = Model::from_dir(dir).unwrap();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let n = 20_000;
    let s = ks(
        (0..n)
            .map(|_| m.image_size.sample(rng.next_u64()))
            .collect(),
        |x| m.image_size.cdf(x),
    );
    assert!(s < critical(n), "D = {s}");
}
