//! The study's outputs: the paper's Tables 2–4 and the data of its Figs.
//! 2–14, each measured value the mean over seeds (± the sample standard
//! deviation) beside the paper's number where the paper gives one.
//!
//! Files: `runs.csv` (one row per run), `figures.csv` (one row per bar
//! of every figure), `summary.md` (the tables, the figures' data and the
//! paper's stated orders checked against the runs).

use super::paper::{self, DELAY_CLAIMS};
use super::{Config, Kind, Outcome, Set, Timing, C1, C2, C3};
use std::fmt::Write as _;
use std::path::Path;

/// The mean and sample standard deviation of some runs' values.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stat {
    pub mean: f64,
    pub sd: f64,
    pub n: usize,
}

impl Stat {
    /// Returns the statistics of the finite values of `v`.
    pub fn of(v: impl IntoIterator<Item = f64>) -> Stat {
        let v: Vec<f64> = v.into_iter().filter(|x| x.is_finite()).collect();
        let n = v.len();
        if n == 0 {
            return Stat {
                mean: f64::NAN,
                sd: 0.0,
                n,
            };
        }
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        Stat {
            mean,
            sd: var.sqrt(),
            n,
        }
    }

    /// Formats as `mean ± sd` with `d` decimals (`mean` alone for one run).
    fn show(&self, d: usize) -> String {
        if self.n > 1 {
            format!("{:.d$} ± {:.d$}", self.mean, self.sd)
        } else {
            format!("{:.d$}", self.mean)
        }
    }
}

/// One bar of one figure.
#[derive(Clone, Debug)]
pub struct Bar {
    /// `Fig. 2`, …
    pub figure: &'static str,
    /// The figure's caption and unit.
    pub title: String,
    pub unit: &'static str,
    /// The group on the x axis (a scenario, or a case of §4.3).
    pub x: String,
    /// The series (the bar's colour).
    pub series: String,
    pub stat: Stat,
    /// The paper's value, where its text gives one.
    pub paper: Option<f64>,
}

/// The runs of one configuration, picked by its parts.
struct Pick<'a> {
    outcomes: &'a [Outcome],
}

impl Pick<'_> {
    /// Returns the runs whose id is `id`.
    fn runs(&self, id: &str) -> Vec<&Outcome> {
        self.outcomes.iter().filter(|o| o.id == id).collect()
    }

    /// Returns a statistic of `f` over the runs of the configuration.
    fn stat(&self, cfg: &Config, f: impl Fn(&Outcome) -> f64) -> Stat {
        Stat::of(self.runs(&cfg.id()).into_iter().map(f))
    }

    /// The same statistic over several configurations' runs.
    fn stat_over(&self, cfgs: &[Config], f: impl Fn(&Outcome) -> f64) -> Stat {
        Stat::of(
            cfgs.iter()
                .flat_map(|c| self.runs(&c.id()))
                .map(&f)
                .collect::<Vec<_>>(),
        )
    }
}

fn same(load: super::Load, kind: Kind, size_kb: u32) -> Config {
    Config {
        set: Set::Same,
        load,
        servers: vec![kind],
        bt: kind,
        size_kb,
    }
}

fn diff(load: super::Load, server: Kind, bt: Kind) -> Config {
    Config {
        set: Set::Different,
        load,
        servers: vec![server],
        bt,
        size_kb: 504,
    }
}

/// The three cases of §4.3 with the paper's labels.
fn competing() -> Vec<(&'static str, Config)> {
    let case = |s1, s2, bt| Config {
        set: Set::Competing,
        load: super::COMPETING,
        servers: vec![s1, s2],
        bt,
        size_kb: 504,
    };
    vec![
        (
            paper::TABLE4[0].0,
            case(Kind::Apache, Kind::Apache, Kind::Iis),
        ),
        (paper::TABLE4[1].0, case(Kind::Iis, Kind::Iis, Kind::Apache)),
        (
            paper::TABLE4[2].0,
            case(Kind::Iis, Kind::Apache, Kind::Apache),
        ),
    ]
}

const KINDS: [Kind; 2] = [Kind::Apache, Kind::Iis];

/// Returns the bars of Figs. 2–14.
///
/// Long because it is the flat list of the paper's thirteen figures, a
/// few lines each.
pub fn bars(outcomes: &[Outcome]) -> Vec<Bar> {
    let p = Pick { outcomes };
    let mut out = Vec::new();
    let mut bar = |figure, title: &str, unit, x: &str, series: String, stat, paper| {
        out.push(Bar {
            figure,
            title: title.to_string(),
            unit,
            x: x.to_string(),
            series,
            stat,
            paper,
        })
    };
    let sizes = [
        (504, "Fig. 2", "Fig. 5"),
        (320, "Fig. 3", "Fig. 6"),
        (160, "Fig. 4", "Fig. 7"),
    ];
    for (size, fd, ft) in sizes {
        for load in [C1, C2, C3] {
            for k in KINDS {
                let c = same(load, k, size);
                let d = p.stat(&c, |o| o.delay_s[0]);
                let title = format!("Server delay (same server type), {size} KB");
                bar(fd, &title, "s", load.name, k.name().into(), d, None);
                let t = p.stat(&c, |o| o.server_mbps[0]);
                let n = p.stat(&c, |o| o.server_nrt_mbps[0]);
                let title = format!("Server throughput (same server type), {size} KB");
                bar(ft, &title, "Mbit/s", load.name, k.name().into(), t, None);
                bar(
                    ft,
                    &title,
                    "Mbit/s",
                    load.name,
                    format!("{} NRT", k.name()),
                    n,
                    None,
                );
            }
        }
    }
    for load in [C1, C2, C3] {
        for k in KINDS {
            let c = same(load, k, 320);
            let title = "Client throughput (same server type), 320 KB";
            let s = p.stat(&c, |o| o.stress_mbps[0]);
            let b = p.stat(&c, |o| o.bt_mbps);
            bar(
                "Fig. 8",
                title,
                "Mbit/s",
                load.name,
                format!("{} stress", k.name()),
                s,
                None,
            );
            bar(
                "Fig. 8",
                title,
                "Mbit/s",
                load.name,
                format!("{} BT", k.name()),
                b,
                None,
            );
        }
    }
    for load in [C1, C2, C3] {
        for (server, bt) in [(Kind::Iis, Kind::Apache), (Kind::Apache, Kind::Iis)] {
            let c = diff(load, server, bt);
            let who = format!("{} (BT {})", server.name(), bt.name());
            let d = p.stat(&c, |o| o.delay_s[0]);
            bar(
                "Fig. 9",
                "Delay (different servers), 504 KB",
                "s",
                load.name,
                who.clone(),
                d,
                None,
            );
            let title = "Server throughput (different servers), 504 KB";
            let t = p.stat(&c, |o| o.server_mbps[0]);
            let n = p.stat(&c, |o| o.server_nrt_mbps[0]);
            bar("Fig. 10", title, "Mbit/s", load.name, who.clone(), t, None);
            bar(
                "Fig. 10",
                title,
                "Mbit/s",
                load.name,
                format!("{who} NRT"),
                n,
                None,
            );
            let title = "Client throughput (different servers), 504 KB";
            let s = p.stat(&c, |o| o.stress_mbps[0]);
            let b = p.stat(&c, |o| o.bt_mbps);
            bar(
                "Fig. 11",
                title,
                "Mbit/s",
                load.name,
                format!("{who} stress"),
                s,
                None,
            );
            bar(
                "Fig. 11",
                title,
                "Mbit/s",
                load.name,
                format!("{who} BT"),
                b,
                None,
            );
        }
    }
    for (k, (label, c)) in competing().into_iter().enumerate() {
        let title = "Server delay (competing servers), 504 KB";
        for i in 0..2 {
            let d = p.stat(&c, |o| o.delay_s[i]);
            let paper = Some(paper::FIG12[k].1[i]);
            bar(
                "Fig. 12",
                title,
                "s",
                label,
                format!("S{}", i + 1),
                d,
                paper,
            );
        }
        let title = "Server throughput (competing servers), 504 KB";
        for i in 0..2 {
            let t = p.stat(&c, |o| o.server_mbps[i]);
            let n = p.stat(&c, |o| o.server_nrt_mbps[i]);
            bar(
                "Fig. 13",
                title,
                "Mbit/s",
                label,
                format!("S{}", i + 1),
                t,
                None,
            );
            bar(
                "Fig. 13",
                title,
                "Mbit/s",
                label,
                format!("S{} NRT", i + 1),
                n,
                None,
            );
        }
        let title = "Client throughput (competing servers), 504 KB";
        for i in 0..2 {
            let s = p.stat(&c, |o| o.stress_mbps[i]);
            bar(
                "Fig. 14",
                title,
                "Mbit/s",
                label,
                format!("C{} Stress", i + 1),
                s,
                None,
            );
        }
        let b = p.stat(&c, |o| o.bt_mbps);
        bar("Fig. 14", title, "Mbit/s", label, "Cbt".into(), b, None);
    }
    out
}

/// Writes `runs.csv`, `figures.csv` and `summary.md`; returns the summary.
///
/// # Errors
/// A file that cannot be written.
pub fn write(
    configs: &[Config],
    outcomes: &[Outcome],
    seeds: u64,
    t: Timing,
    out: &Path,
) -> std::io::Result<String> {
    let mut csv = String::from(
        "id,seed,server,delay_s,fetch_s,server_mbps,server_nrt_mbps,server_retx_percent,stress_mbps,stress_share_percent,bt_mbps,bt_share_percent,bt_server_mbps,bt_server_nrt_mbps,udp_loss_percent,bottleneck_drops,events,wall_s,ok\n",
    );
    for o in outcomes {
        for i in 0..o.delay_s.len() {
            let _ = writeln!(
                csv,
                "{},{},{},{:.6},{:.6},{:.3},{:.3},{:.3},{:.3},{:.2},{:.3},{:.2},{:.3},{:.3},{:.3},{},{},{:.2},{}",
                o.id,
                o.seed,
                i + 1,
                o.delay_s[i],
                o.fetch_s[i],
                o.server_mbps[i],
                o.server_nrt_mbps[i],
                o.server_retx_percent[i],
                o.stress_mbps[i],
                o.stress_share[i],
                o.bt_mbps,
                o.bt_share,
                o.bt_server_mbps,
                o.bt_server_nrt_mbps,
                o.udp_loss_percent,
                o.bottleneck_drops,
                o.events,
                o.wall_s,
                o.ok
            );
        }
    }
    std::fs::write(out.join("runs.csv"), csv)?;
    let bars = bars(outcomes);
    let mut fcsv = String::from("figure,x,series,unit,mean,sd,runs,paper\n");
    for b in &bars {
        let _ = writeln!(
            fcsv,
            "{},{},{},{},{:.4},{:.4},{},{}",
            b.figure,
            b.x.replace(',', ";"),
            b.series,
            b.unit,
            b.stat.mean,
            b.stat.sd,
            b.stat.n,
            b.paper.map_or(String::new(), |v| v.to_string())
        );
    }
    std::fs::write(out.join("figures.csv"), fcsv)?;
    let md = summary(configs, outcomes, &bars, seeds, t);
    std::fs::write(out.join("summary.md"), &md)?;
    Ok(md)
}

/// Renders the tables, the figures' data and the claims.
fn summary(
    configs: &[Config],
    outcomes: &[Outcome],
    bars: &[Bar],
    seeds: u64,
    t: Timing,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Web server performance with CUBIC and Compound TCP: elvis against the paper\n\n\
         {} configurations × {seeds} seeds; loads for {} s, the browser's request at {} s, \
         TCP's initial RTO {} ms. \
         Each cell: mean ± sample standard deviation over the runs, then the paper's value.\n",
        configs.len(),
        t.load_s,
        t.browser_at,
        t.initial_rto_ms
    );
    let p = Pick { outcomes };
    tables_2_3(&mut s, &p);
    table_4(&mut s, &p);
    figures(&mut s, bars);
    claims(&mut s, &p);
    s
}

/// Tables 2 and 3: stress and BT shares of the allowed rate.
fn tables_2_3(s: &mut String, p: &Pick<'_>) {
    s.push_str(
        "## Table 2: shared bandwidth percentage (same server type)\n\n\
         Share of the maximum allowed rate reached at the client (`http_load` \
         `rate_share_percent`), all three object sizes pooled.\n\n",
    );
    header(
        s,
        "scenario",
        &["ST IIS", "BT IIS", "ST Apache", "BT Apache"],
    );
    for (k, load) in [C1, C2, C3].into_iter().enumerate() {
        let cfgs = |kind| [504, 320, 160].map(|z| same(load, kind, z)).to_vec();
        let (iis, apache) = (cfgs(Kind::Iis), cfgs(Kind::Apache));
        let cells = [
            p.stat_over(&iis, |o| o.stress_share[0]),
            p.stat_over(&iis, |o| o.bt_share),
            p.stat_over(&apache, |o| o.stress_share[0]),
            p.stat_over(&apache, |o| o.bt_share),
        ];
        row(s, load.name, &cells, &paper::TABLE2[k].1);
    }
    s.push_str("\n## Table 3: shared bandwidth percentage (different servers), 504 KB\n\n");
    header(
        s,
        "scenario",
        &["ST IIS", "BT Apache", "ST Apache", "BT IIS"],
    );
    for (k, load) in [C1, C2, C3].into_iter().enumerate() {
        let a = diff(load, Kind::Iis, Kind::Apache);
        let b = diff(load, Kind::Apache, Kind::Iis);
        let cells = [
            p.stat(&a, |o| o.stress_share[0]),
            p.stat(&a, |o| o.bt_share),
            p.stat(&b, |o| o.stress_share[0]),
            p.stat(&b, |o| o.bt_share),
        ];
        row(s, load.name, &cells, &paper::TABLE3[k].1);
    }
}

/// Table 4: the three flows' shares with competing servers.
fn table_4(s: &mut String, p: &Pick<'_>) {
    s.push_str(
        "\n## Table 4: client throughput (competing servers), 504 KB, % of the allowed rate\n\n",
    );
    header(s, "case", &["C1 Stress", "C2 Stress", "Cbt"]);
    for (k, (label, c)) in competing().into_iter().enumerate() {
        let cells = [
            p.stat(&c, |o| o.stress_share[0]),
            p.stat(&c, |o| o.stress_share[1]),
            p.stat(&c, |o| o.bt_share),
        ];
        row(s, label, &cells, &paper::TABLE4[k].1);
    }
}

/// Writes a table's head: each column as an elvis and a paper column.
fn header(s: &mut String, first: &str, cols: &[&str]) {
    let _ = write!(s, "| {first} |");
    for c in cols {
        let _ = write!(s, " {c} elvis | {c} paper |");
    }
    let _ = writeln!(s, "\n|---|{}", "---|---|".repeat(cols.len()));
}

/// Writes a table's row: each measured cell beside the paper's.
fn row(s: &mut String, label: &str, cells: &[Stat], paper: &[f64]) {
    let _ = write!(s, "| {label} |");
    for (c, p) in cells.iter().zip(paper) {
        let _ = write!(s, " {} | {p:.1} |", c.show(1));
    }
    s.push('\n');
}

/// The figures' data, one table per figure.
fn figures(s: &mut String, bars: &[Bar]) {
    for f in super::plot::figures(bars) {
        let these: Vec<&Bar> = bars.iter().filter(|b| b.figure == f).collect();
        let _ = writeln!(
            s,
            "\n## {f}: {} ({})\n\n| x | series | elvis | paper |\n|---|---|---|---|",
            these[0].title, these[0].unit
        );
        let d = if these[0].unit == "s" { 3 } else { 1 };
        for b in these {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                b.x,
                b.series,
                b.stat.show(d),
                b.paper.map_or("—".into(), |v| format!("{v}"))
            );
        }
    }
}

/// The orders of the paper's Figs. 2–4 and the ratio of Fig. 9, checked.
fn claims(s: &mut String, p: &Pick<'_>) {
    s.push_str(
        "\n## The paper's stated orders, checked\n\n\
         `>`/`<`: by more than 5 %; `≈`: within 15 %. Mean delays over the seeds.\n\n\
         | figure | paper | elvis (s) | holds |\n|---|---|---|---|\n",
    );
    for c in &DELAY_CLAIMS {
        let kind = |n: &str| if n == "IIS" { Kind::Iis } else { Kind::Apache };
        let load = |n: &str| match n {
            "C1" => C1,
            "C2" => C2,
            _ => C3,
        };
        let vals: Vec<f64> = c
            .chain
            .iter()
            .map(|(k, l)| {
                p.stat(&same(load(l), kind(k), c.size_kb), |o| o.delay_s[0])
                    .mean
            })
            .collect();
        let mut ours = format!("{:.3}", vals[0]);
        let mut ok = 0;
        for (i, op) in c.ops.iter().enumerate() {
            let h = paper::holds(vals[i], op, vals[i + 1]);
            ok += usize::from(h);
            let _ = write!(ours, " {op}{} {:.3}", if h { "" } else { "✗" }, vals[i + 1]);
        }
        let _ = writeln!(
            s,
            "| {} | {} | {ours} | {ok} of {} |",
            c.figure,
            c.text,
            c.ops.len()
        );
    }
    let a = p
        .stat(&diff(C2, Kind::Apache, Kind::Iis), |o| o.delay_s[0])
        .mean;
    let i = p
        .stat(&diff(C2, Kind::Iis, Kind::Apache), |o| o.delay_s[0])
        .mean;
    let _ = writeln!(
        s,
        "| Fig. 9 | under C2, Apache's delay is 3 × IIS's | Apache {a:.3}, IIS {i:.3}: {:.2} × | {} |",
        a / i,
        if a > 2.0 * i { "yes" } else { "no" }
    );
}
