//! `elvis plot`: figures from a run's report and time series (plotters,
//! SVG and PNG).
//!
//! | file | from | shows |
//! |---|---|---|
//! | `cwnd` | `--tcp-trace` CSVs | congestion window over time, one line per sending connection |
//! | `srtt` | `--tcp-trace` CSVs | smoothed RTT over time, one line per sending connection |
//! | `queues` | `--queue-trace` CSVs | frames waiting over time at the queues that held most |
//! | `shares` | the report's `tcp_shares` | throughput share per congestion-control algorithm |
//! | `ping` | the `ping` metrics of the report | each pinging machine's mean RTT, with a whisker from the least to the most |
//! | `fct` | the report's `tcp_connections` | the CDF of flow completion times (opening to last acknowledgement) of the connections that sent data |
//! | `slowdown` | the report's `flows` | FCT slowdown (FCT / ideal FCT) per flow-size bucket: median and 99th percentile, as datacenter papers draw it |
//!
//! A figure whose data is absent (no TCP, no queue trace) is not
//! written. Text is drawn with DejaVu Sans Mono, embedded (its licence is
//! `assets/DejaVu-LICENSE`), so PNGs look the same on every machine.

use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Width and height of every figure, pixels.
const SIZE: (u32, u32) = (960, 540);

/// Most lines in one figure (the rest are left out, largest first kept).
const MAX_LINES: usize = 10;

/// The embedded font, registered once as plotters' `sans-serif`.
const FONT: &[u8] = include_bytes!("../assets/DejaVuSansMono.ttf");

/// Which files to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Png,
    Svg,
    Both,
}

/// One line of a figure: a label and (x, y) points.
struct Line {
    label: String,
    points: Vec<(f64, f64)>,
}

/// What went wrong, for the command line.
pub type PlotError = String;

/// Draws every figure the inputs allow into `out`; returns the files
/// written.
///
/// # Errors
/// An unreadable report or trace, or a file that cannot be written.
pub fn plot(
    report: &Path,
    tcp_trace: Option<&Path>,
    queue_trace: Option<&Path>,
    out: &Path,
    format: Format,
) -> Result<Vec<PathBuf>, PlotError> {
    use std::sync::Once;
    static FONT_ONCE: Once = Once::new();
    FONT_ONCE.call_once(|| {
        // The embedded font is known good; a failure would show as
        // missing text, not as a crash.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
    let text = std::fs::read_to_string(report)
        .map_err(|e| format!("cannot read report {}: {e}", report.display()))?;
    let r: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a run report: {e}", report.display()))?;
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let mut written = Vec::new();
    let mut emit = |name: &str, fig: Figure| -> Result<(), PlotError> {
        if matches!(format, Format::Svg | Format::Both) {
            let p = out.join(format!("{name}.svg"));
            fig.draw(SVGBackend::new(&p, SIZE).into_drawing_area())
                .map_err(|e| format!("{}: {e}", p.display()))?;
            written.push(p);
        }
        if matches!(format, Format::Png | Format::Both) {
            let p = out.join(format!("{name}.png"));
            fig.draw(BitMapBackend::new(&p, SIZE).into_drawing_area())
                .map_err(|e| format!("{}: {e}", p.display()))?;
            written.push(p);
        }
        Ok(())
    };
    let time = "time (s)";
    if let Some(dir) = tcp_trace {
        let (cwnd, srtt) = tcp_lines(dir, &r)?;
        if !cwnd.is_empty() {
            let title = "Congestion window per sending connection";
            emit("cwnd", Figure::Lines(title, time, "cwnd (KB)", &cwnd))?;
            let title = "Smoothed RTT per sending connection";
            emit("srtt", Figure::Lines(title, time, "srtt (ms)", &srtt))?;
        }
    }
    if let Some(dir) = queue_trace {
        let q = queue_lines(dir)?;
        if !q.is_empty() {
            let title = "Frames waiting at the busiest queues";
            emit("queues", Figure::Lines(title, time, "frames waiting", &q))?;
        }
    }
    from_report(&r, &mut emit)?;
    Ok(written)
}

/// Draws the figures whose data is in the report `r` alone, through
/// `emit`.
fn from_report(
    r: &serde_json::Value,
    emit: &mut dyn FnMut(&str, Figure) -> Result<(), PlotError>,
) -> Result<(), PlotError> {
    let shares = tcp_shares(r);
    if !shares.is_empty() {
        let title = "Throughput share by congestion control";
        emit(
            "shares",
            Figure::Bars(title, "share of throughput (%)", &shares),
        )?;
    }
    let pings = ping_rtts(r);
    if !pings.is_empty() {
        let title = "Ping RTT: mean, least and most";
        emit("ping", Figure::Bars(title, "RTT (ms)", &pings))?;
    }
    let fct = completion_cdf(r);
    if !fct.is_empty() {
        let title = "Flow completion times (TCP connections that sent data)";
        let line = [Line {
            label: format!("{} flows", fct.len() / 2),
            points: fct,
        }];
        let (x, y) = ("completion time (ms)", "fraction of flows");
        emit("fct", Figure::Lines(title, x, y, &line))?;
    }
    let (buckets, slow) = slowdown_lines(r);
    if !slow.is_empty() {
        let title = "FCT slowdown by flow size (finished flows)";
        let x = "flow size";
        emit(
            "slowdown",
            Figure::Categories(title, x, "slowdown (FCT / ideal)", &buckets, &slow),
        )?;
    }
    Ok(())
}

/// One figure: a line chart (title, x and y axis names, lines) or a bar
/// chart (title, y axis name, bars).
#[derive(Clone, Copy)]
enum Figure<'a> {
    Lines(&'a str, &'a str, &'a str, &'a [Line]),
    Bars(&'a str, &'a str, &'a [Bar]),
    /// A line chart over named categories: title, x and y axis names,
    /// the categories, lines whose x is a category's index.
    Categories(&'a str, &'a str, &'a str, &'a [String], &'a [Line]),
}

impl Figure<'_> {
    /// Draws the figure on `area`.
    fn draw<DB: DrawingBackend>(self, area: DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        match self {
            Figure::Lines(title, x, y, data) => lines(area, title, x, y, data),
            Figure::Bars(title, y, data) => bars(area, title, y, data),
            Figure::Categories(title, x, y, names, data) => {
                categories(area, (title, x, y), names, data)
            }
        }
    }
}

/// The empirical CDF of the completion times (ms, from opening to the
/// last acknowledgement) of the connections that sent data, as a step
/// line: two points per flow.
fn completion_cdf(r: &serde_json::Value) -> Vec<(f64, f64)> {
    let mut t: Vec<f64> = (r["tcp_connections"].as_array())
        .into_iter()
        .flatten()
        .filter(|c| c["bytes_acked"].as_u64().is_some_and(|b| b > 0))
        .filter_map(|c| {
            let (o, l) = (c["opened_ns"].as_u64()?, c["last_ack_ns"].as_u64()?);
            Some(l.saturating_sub(o) as f64 / 1e6)
        })
        .collect();
    t.sort_by(f64::total_cmp);
    let n = t.len() as f64;
    let mut points = Vec::with_capacity(2 * t.len());
    for (i, &x) in t.iter().enumerate() {
        points.push((x, i as f64 / n));
        points.push((x, (i + 1) as f64 / n));
    }
    points
}

/// The size buckets of the report's `flows` section that hold a finished
/// flow (`<100KB` … `>=10MB`, with their flow counts), and two lines over
/// them: the median and the 99th-percentile slowdown.
fn slowdown_lines(r: &serde_json::Value) -> (Vec<String>, Vec<Line>) {
    let mut names = Vec::new();
    let (mut p50, mut p99) = (Vec::new(), Vec::new());
    for b in r["flows"]["buckets"].as_array().into_iter().flatten() {
        let (Some(name), Some(m), Some(t)) = (
            b["bucket"].as_str(),
            b["slowdown_p50"].as_f64(),
            b["slowdown_p99"].as_f64(),
        ) else {
            continue;
        };
        let x = names.len() as f64;
        let n = b["finished"].as_u64().unwrap_or(0);
        names.push(format!("{name} ({n})"));
        p50.push((x, m));
        p99.push((x, t));
    }
    if names.is_empty() {
        return (names, Vec::new());
    }
    let line = |label: &str, points| Line {
        label: label.to_string(),
        points,
    };
    (names, vec![line("p50", p50), line("p99", p99)])
}

/// The cwnd (KB) and srtt (ms) lines of the connections that sent data,
/// the ones that acknowledged most bytes first.
fn tcp_lines(dir: &Path, r: &serde_json::Value) -> Result<(Vec<Line>, Vec<Line>), PlotError> {
    let mut senders: Vec<(u64, u64, String)> = (r["tcp_connections"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let acked = c["bytes_acked"].as_u64()?;
            (acked > 0).then(|| {
                let label = format!(
                    "{} {} ({})",
                    c["machine"].as_str().unwrap_or("?"),
                    c["remote"].as_str().unwrap_or(""),
                    c["congestion"].as_str().unwrap_or("?")
                );
                (acked, c["id"].as_u64().unwrap_or(u64::MAX), label)
            })
        })
        .collect();
    senders.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    senders.truncate(MAX_LINES);
    let files = list(dir)?;
    let (mut cwnd, mut srtt) = (Vec::new(), Vec::new());
    for (_, id, label) in senders {
        let prefix = format!("tcp-{id}-");
        let Some(file) = files.iter().find(|f| file_name(f).starts_with(&prefix)) else {
            continue;
        };
        let rows = csv(file)?;
        let col = |name: &str| rows.0.iter().position(|h| h == name);
        let (Some(t), Some(c), Some(s), Some(a)) = (
            col("time_ns"),
            col("cwnd"),
            col("srtt_ns"),
            col("bytes_acked"),
        ) else {
            return Err(format!("{}: not a TCP trace", file.display()));
        };
        // Up to the last row with new bytes acknowledged: after that the
        // connection only waits out its close (TIME-WAIT is a minute).
        let acked = |row: &Vec<Option<f64>>| row.get(a).copied().flatten();
        let last = (1..rows.1.len())
            .rev()
            .find(|&i| acked(&rows.1[i]) != acked(&rows.1[i - 1]))
            .map_or(rows.1.len(), |i| i + 1);
        let pick = |k: usize, scale: f64| -> Vec<(f64, f64)> {
            (rows.1[..last].iter())
                .filter_map(|row| {
                    Some((row.get(t)?.as_ref()? / 1e9, row.get(k)?.as_ref()? / scale))
                })
                .collect()
        };
        cwnd.push(Line {
            label: label.clone(),
            points: pick(c, 1e3),
        });
        srtt.push(Line {
            label,
            points: pick(s, 1e6).into_iter().filter(|&(_, y)| y > 0.0).collect(),
        });
    }
    Ok((cwnd, srtt))
}

/// The occupancy lines of the queues whose most frames waiting was
/// highest.
fn queue_lines(dir: &Path) -> Result<Vec<Line>, PlotError> {
    let mut all = Vec::new();
    for file in list(dir)? {
        let name = file_name(&file);
        let Some(label) = name
            .strip_prefix("queue-")
            .and_then(|n| n.strip_suffix(".csv"))
        else {
            continue;
        };
        let rows = csv(&file)?;
        let col = |n: &str| rows.0.iter().position(|h| h == n);
        let (Some(t), Some(p)) = (col("time_ns"), col("packets")) else {
            return Err(format!("{}: not a queue trace", file.display()));
        };
        let points: Vec<(f64, f64)> = (rows.1.iter())
            .filter_map(|row| Some((row.get(t)?.as_ref()? / 1e9, *row.get(p)?.as_ref()?)))
            .collect();
        let peak = points.iter().map(|&(_, y)| y).fold(0.0, f64::max);
        all.push((peak, label.to_string(), points));
    }
    all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    Ok(all
        .into_iter()
        .filter(|(peak, _, _)| *peak > 0.0)
        .take(MAX_LINES)
        .map(|(_, label, points)| Line { label, points })
        .collect())
}

/// (algorithm, throughput share in %) from the report.
fn tcp_shares(r: &serde_json::Value) -> Vec<Bar> {
    (r["tcp_shares"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|s| {
            Some(Bar {
                label: s["congestion"].as_str()?.to_string(),
                value: s["throughput_share"].as_f64()? * 100.0,
                range: None,
            })
        })
        .collect()
}

/// Each pinging machine's mean RTT (ms), with its least and most, from
/// the metrics `ping` publishes.
fn ping_rtts(r: &serde_json::Value) -> Vec<Bar> {
    let mut out: Vec<Bar> = Vec::new();
    let metrics = r["metrics"].as_array().into_iter().flatten();
    for m in metrics.filter(|m| m["application"] == "ping") {
        let (Some(machine), Some(name), Some(v)) = (
            m["machine"].as_str(),
            m["name"].as_str(),
            m["value"].as_f64(),
        ) else {
            continue;
        };
        let i = match out.iter().position(|b| b.label == machine) {
            Some(i) => i,
            None => {
                out.push(Bar {
                    label: machine.to_string(),
                    value: 0.0,
                    range: Some((0.0, 0.0)),
                });
                out.len() - 1
            }
        };
        let (b, ms) = (&mut out[i], v / 1e6);
        let range = b.range.get_or_insert((0.0, 0.0));
        match name {
            "rtt_avg_ns" => b.value = ms,
            "rtt_min_ns" => range.0 = ms,
            "rtt_max_ns" => range.1 = ms,
            _ => {}
        }
    }
    out
}

/// The files of `dir`, sorted.
fn list(dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    v.sort();
    Ok(v)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A CSV of numbers with a header line; empty cells are `None`.
type Table = (Vec<String>, Vec<Vec<Option<f64>>>);

fn csv(path: &Path) -> Result<Table, PlotError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .ok_or_else(|| format!("{}: empty", path.display()))?
        .split(',')
        .map(str::to_string)
        .collect();
    let mut rows = Vec::new();
    for (i, line) in lines.enumerate() {
        let row = line
            .split(',')
            .map(|c| match c.trim() {
                "" => Ok(None),
                v => v.parse::<f64>().map(Some),
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| format!("{}:{}: not a number in `{line}`", path.display(), i + 2))?;
        rows.push(row);
    }
    Ok((header, rows))
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// A line chart with a legend.
fn lines<DB: DrawingBackend>(
    area: DrawingArea<DB, Shift>,
    title: &str,
    x: &str,
    y: &str,
    data: &[Line],
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE).map_err(err)?;
    let xs = data.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let ys = data.iter().flat_map(|l| l.points.iter().map(|p| p.1));
    let x_max = xs.fold(0.0, f64::max).max(1e-9);
    let y_max = ys.fold(0.0, f64::max).max(1e-9) * 1.05;
    let mut chart = ChartBuilder::on(&area)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(x)
        .y_desc(y)
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    for (i, l) in data.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                l.points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(err)?
            .label(l.label.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)?;
    area.present().map_err(err)
}

/// A line chart with markers over named categories (x: a category's
/// index), from 0 up, with a legend.
fn categories<DB: DrawingBackend>(
    area: DrawingArea<DB, Shift>,
    (title, x, y): (&str, &str, &str),
    names: &[String],
    data: &[Line],
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE).map_err(err)?;
    let n = names.len() as u32;
    let ys = data.iter().flat_map(|l| l.points.iter().map(|p| p.1));
    let y_max = ys.fold(0.0, f64::max).max(1e-9) * 1.1;
    let mut chart = ChartBuilder::on(&area)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d((0..n.saturating_sub(1)).into_segmented(), 0.0..y_max)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc(x)
        .y_desc(y)
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => names.get(*i as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    let at = |p: &(f64, f64)| (SegmentValue::CenterOf(p.0 as u32), p.1);
    for (i, l) in data.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                l.points.iter().map(at),
                color.stroke_width(2),
            ))
            .map_err(err)?
            .label(l.label.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        chart
            .draw_series((l.points.iter()).map(|p| Circle::new(at(p), 4, color.filled())))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(err)?;
    area.present().map_err(err)
}

/// A bar chart of percentages.
fn bars<DB: DrawingBackend>(
    area: DrawingArea<DB, Shift>,
    title: &str,
    y: &str,
    data: &[Bar],
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE).map_err(err)?;
    // (A segmented 0..k has k + 1 slots.)
    let n = data.len() as u32;
    let names: Vec<String> = data.iter().map(|d| d.label.clone()).collect();
    let mut chart = ChartBuilder::on(&area)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d((0..n.saturating_sub(1)).into_segmented(), 0.0..y_max(data))
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc(y)
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => names.get(*i as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(data.iter().enumerate().map(|(i, b)| {
            let i = i as u32;
            let mut bar = Rectangle::new(
                [
                    (SegmentValue::Exact(i), 0.0),
                    (SegmentValue::Exact(i + 1), b.value),
                ],
                Palette99::pick(i as usize).filled(),
            );
            bar.set_margin(0, 0, 20, 20);
            bar
        }))
        .map_err(err)?;
    // Whiskers from the least to the most, where given.
    chart
        .draw_series(data.iter().enumerate().filter_map(|(i, b)| {
            let (lo, hi) = b.range?;
            let x = SegmentValue::CenterOf(i as u32);
            Some(PathElement::new(
                vec![(x.clone(), lo), (x, hi)],
                BLACK.stroke_width(2),
            ))
        }))
        .map_err(err)?;
    area.present().map_err(err)
}

/// One bar: its label, its height and, if any, a whisker's range.
struct Bar {
    label: String,
    value: f64,
    range: Option<(f64, f64)>,
}

/// The top of a bar chart's axis: 100 for shares in %, else a tenth
/// above the highest bar or whisker.
fn y_max(data: &[Bar]) -> f64 {
    let top = (data.iter())
        .map(|b| b.range.map_or(b.value, |r| r.1.max(b.value)))
        .fold(0.0, f64::max);
    if data.iter().all(|b| b.range.is_none()) && top <= 100.0 {
        100.0
    } else {
        (top * 1.1).max(1e-9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report and traces made by hand: two senders, one queue.
    fn fixture(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
        let report = dir.join("r.json");
        std::fs::write(
            &report,
            r#"{"tcp_connections": [
                {"id": 0, "machine": "a", "remote": "10.0.0.2:80", "congestion": "cubic", "bytes_acked": 100,
                 "opened_ns": 0, "last_ack_ns": 30000000},
                {"id": 1, "machine": "b", "remote": "10.0.0.1:5", "congestion": "cubic", "bytes_acked": 0,
                 "opened_ns": 0, "last_ack_ns": 5000000},
                {"id": 2, "machine": "c", "remote": "10.0.0.2:81", "congestion": "newreno", "bytes_acked": 50,
                 "opened_ns": 10000000, "last_ack_ns": 20000000}],
              "tcp_shares": [{"congestion": "cubic", "throughput_share": 0.6},
                             {"congestion": "newreno", "throughput_share": 0.4}]}"#,
        )
        .unwrap();
        let tcp = dir.join("tcp");
        std::fs::create_dir_all(&tcp).unwrap();
        for (id, m) in [(0, "a"), (1, "b"), (2, "c")] {
            std::fs::write(
                tcp.join(format!("tcp-{id}-{m}-80.csv")),
                "time_ns,cwnd,ssthresh,srtt_ns,bytes_acked,retransmitted_segments,throughput_bps\n\
                 0,14600,,0,0,0,\n10000000,29200,,10000000,14600,0,0\n20000000,20000,20000,12000000,30000,1,100\n",
            )
            .unwrap();
        }
        let q = dir.join("q");
        std::fs::create_dir_all(&q).unwrap();
        std::fs::write(
            q.join("queue-lan-a-nic.csv"),
            "time_ns,packets,bytes\n0,0,0\n5,3,4500\n9,0,0\n",
        )
        .unwrap();
        std::fs::write(
            q.join("queue-lan-b-nic.csv"),
            "time_ns,packets,bytes\n0,0,0\n",
        )
        .unwrap();
        (report, tcp, q)
    }

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("elvis-plot-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn every_figure_is_written_in_both_formats_and_is_not_blank() {
        let d = temp("both");
        let (r, tcp, q) = fixture(&d);
        let out = d.join("out");
        let files = plot(&r, Some(&tcp), Some(&q), &out, Format::Both).unwrap();
        let names: Vec<String> = files.iter().map(|f| file_name(f)).collect();
        assert_eq!(
            names,
            [
                "cwnd.svg",
                "cwnd.png",
                "srtt.svg",
                "srtt.png",
                "queues.svg",
                "queues.png",
                "shares.svg",
                "shares.png",
                "fct.svg",
                "fct.png"
            ]
        );
        for f in &files {
            let bytes = std::fs::read(f).unwrap();
            if file_name(f).ends_with(".png") {
                assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{}", f.display());
                // 960 x 540 in the IHDR chunk.
                assert_eq!(&bytes[16..24], &[0, 0, 3, 192, 0, 0, 2, 28]);
            } else {
                let text = String::from_utf8(bytes.clone()).unwrap();
                assert!(text.starts_with("<svg") && text.contains("</svg>"));
                // Lines or bars were drawn, with the legend's text.
                assert!(text.contains("<polyline") || text.contains("<rect"));
            }
            assert!(
                bytes.len() > 2_000,
                "{} is {} bytes",
                f.display(),
                bytes.len()
            );
        }
        // The legend names the senders only, and the idle queue is left out.
        let cwnd = std::fs::read_to_string(out.join("cwnd.svg")).unwrap();
        assert!(cwnd.contains("a 10.0.0.2:80 (cubic)") && cwnd.contains("c 10.0.0.2:81 (newreno)"));
        assert!(!cwnd.contains("b 10.0.0.1:5"));
        let queues = std::fs::read_to_string(out.join("queues.svg")).unwrap();
        assert!(queues.contains("lan-a-nic") && !queues.contains("lan-b-nic"));
    }

    #[test]
    fn a_png_is_not_blank() {
        let d = temp("png");
        let (r, tcp, _) = fixture(&d);
        let out = d.join("out");
        let files = plot(&r, Some(&tcp), None, &out, Format::Png).unwrap();
        assert_eq!(files.len(), 4, "cwnd, srtt, shares, fct");
        // A blank white 960x540 PNG compresses to well under 2 KB; drawn
        // axes, lines and text do not.
        for f in files {
            let len = std::fs::metadata(&f).unwrap().len();
            assert!(len > 10_000, "{}: {len} bytes", f.display());
        }
    }

    /// The CDF steps at each sender's completion time (10 and 30 ms), and
    /// the receiver (nothing acknowledged) is left out.
    #[test]
    fn the_completion_cdf_steps_at_each_sending_flows_time() {
        let d = temp("fct");
        let (r, _, _) = fixture(&d);
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(r).unwrap()).unwrap();
        assert_eq!(
            completion_cdf(&r),
            [(10.0, 0.0), (10.0, 0.5), (30.0, 0.5), (30.0, 1.0)]
        );
    }

    /// The ping figure takes each pinger's mean, least and most RTT.
    #[test]
    fn ping_rtts_come_from_the_ping_metrics() {
        let r: serde_json::Value = serde_json::from_str(
            r#"{"metrics": [
                {"machine": "p", "application": "ping", "name": "rtt_min_ns", "value": 1000000.0},
                {"machine": "p", "application": "ping", "name": "rtt_avg_ns", "value": 2000000.0},
                {"machine": "p", "application": "ping", "name": "rtt_max_ns", "value": 5000000.0},
                {"machine": "p", "application": "ping", "name": "sent", "value": 4.0},
                {"machine": "q", "application": "bulk_send", "name": "srtt_ns", "value": 9.0}]}"#,
        )
        .unwrap();
        let b = ping_rtts(&r);
        assert_eq!(b.len(), 1);
        assert_eq!(
            (b[0].label.as_str(), b[0].value, b[0].range),
            ("p", 2.0, Some((1.0, 5.0)))
        );
        let d = temp("ping");
        let rf = d.join("r.json");
        std::fs::write(&rf, r.to_string()).unwrap();
        let files = plot(&rf, None, None, &d.join("out"), Format::Png).unwrap();
        assert_eq!(files.len(), 1);
        assert!(std::fs::metadata(&files[0]).unwrap().len() > 10_000);
    }

    /// A report with a `flows` section gets the slowdown figure: the
    /// buckets with finished flows on x (the empty one left out), p50 and
    /// p99 as its two lines.
    #[test]
    fn the_slowdown_figure_has_p50_and_p99_per_size_bucket() {
        let r: serde_json::Value = serde_json::from_str(
            r#"{"flows": {"flows": 7, "finished": 6, "buckets": [
                {"bucket": "<100KB", "flows": 4, "finished": 4, "slowdown_p50": 1.5, "slowdown_p99": 9.0},
                {"bucket": "100KB-1MB", "flows": 2, "finished": 2, "slowdown_p50": 2.0, "slowdown_p99": 4.0},
                {"bucket": "1MB-10MB", "flows": 1, "finished": 0, "slowdown_p50": null, "slowdown_p99": null},
                {"bucket": ">=10MB", "flows": 0, "finished": 0}]}}"#,
        )
        .unwrap();
        let (names, lines) = slowdown_lines(&r);
        assert_eq!(names, ["<100KB (4)", "100KB-1MB (2)"]);
        assert_eq!(lines.len(), 2);
        assert_eq!(
            (lines[0].label.as_str(), lines[1].label.as_str()),
            ("p50", "p99")
        );
        assert_eq!(lines[0].points, [(0.0, 1.5), (1.0, 2.0)]);
        assert_eq!(lines[1].points, [(0.0, 9.0), (1.0, 4.0)]);
        let d = temp("slowdown");
        let rf = d.join("r.json");
        std::fs::write(&rf, r.to_string()).unwrap();
        let files = plot(&rf, None, None, &d.join("out"), Format::Both).unwrap();
        let names: Vec<String> = files.iter().map(|f| file_name(f)).collect();
        assert_eq!(names, ["slowdown.svg", "slowdown.png"]);
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        for text in ["p50", "p99", "&lt;100KB (4)", "100KB-1MB (2)"] {
            assert!(svg.contains(text), "{text} missing");
        }
        assert!(!svg.contains("1MB-10MB"));
        assert!(svg.contains("<polyline") && svg.contains("<circle"));
        assert!(std::fs::metadata(&files[1]).unwrap().len() > 10_000);
        // No finished flow: no figure.
        std::fs::write(&rf, r#"{"flows": {"buckets": []}}"#).unwrap();
        assert!(plot(&rf, None, None, &d.join("none"), Format::Svg)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn one_algorithm_gets_one_bar() {
        let d = temp("one");
        let r = d.join("r.json");
        std::fs::write(
            &r,
            r#"{"tcp_shares": [{"congestion": "cubic", "throughput_share": 1.0}]}"#,
        )
        .unwrap();
        let files = plot(&r, None, None, &d.join("out"), Format::Svg).unwrap();
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(svg.lines().any(|l| l.trim() == "cubic"), "{svg}");
    }

    #[test]
    fn a_bad_trace_is_an_error_naming_the_line() {
        let d = temp("bad");
        let (r, tcp, _) = fixture(&d);
        std::fs::write(
            tcp.join("tcp-0-a-80.csv"),
            "time_ns,cwnd,ssthresh,srtt_ns\n0,x,,0\n",
        )
        .unwrap();
        let e = plot(&r, Some(&tcp), None, &d.join("out"), Format::Svg).unwrap_err();
        assert!(e.contains("tcp-0-a-80.csv:2:"), "{e}");
    }
}
