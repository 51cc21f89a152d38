//! `wireless-plots`: the figures of `docs/wireless.md` from the CSVs the
//! sweeps write: the wireless chain's ping RTT and TCP goodput against
//! hops (`bench/wireless-chain --out`), and the MANET's delivery ratio
//! and routing overhead against pause time (`bench/manet --out`, one
//! file per mobility model). Line charts (plotters), 960 × 540 PNGs, text
//! in the DejaVu Sans Mono that `elvis plot` embeds.

use plotters::prelude::*;
use std::path::Path;

const SIZE: (u32, u32) = (960, 540);
const FONT: &[u8] = include_bytes!("../../cli/assets/DejaVuSansMono.ttf");

/// One line: its name and its points.
type Series = (String, Vec<(f64, f64)>);

/// Reads a CSV with a header into (column name, values) rows.
fn csv(path: &Path) -> Result<(Vec<String>, Vec<Vec<f64>>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    let head: Vec<String> = (lines.next().unwrap_or_default().split(','))
        .map(str::to_string)
        .collect();
    let rows = lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            l.split(',')
                .map(|v| v.parse().unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    Ok((head, rows))
}

/// Returns column `name` against column `x` of a CSV.
fn column(data: &(Vec<String>, Vec<Vec<f64>>), x: &str, name: &str) -> Vec<(f64, f64)> {
    let at = |c: &str| data.0.iter().position(|h| h == c);
    let (Some(i), Some(j)) = (at(x), at(name)) else {
        return Vec::new();
    };
    (data.1.iter())
        .filter_map(|r| Some((*r.get(i)?, *r.get(j)?)))
        .filter(|p| p.0.is_finite() && p.1.is_finite())
        .collect()
}

/// Draws `series` as lines with markers into `path`; the y axis starts
/// at 0, or (`zoom`) just below the lowest point.
fn chart(
    path: &Path,
    title: &str,
    axes: (&str, &str),
    series: &[Series],
    zoom: bool,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let pts = series.iter().flat_map(|s| s.1.iter());
    let (x1, y1) = pts.fold((0f64, 0f64), |(a, b), p| (a.max(p.0), b.max(p.1)));
    let low = (series.iter().flat_map(|s| s.1.iter())).fold(y1, |a, p| a.min(p.1));
    let y0 = if zoom { low - 0.2 * (y1 - low) } else { 0.0 };
    let area = BitMapBackend::new(path, SIZE).into_drawing_area();
    area.fill(&WHITE).map_err(|e| err(&e))?;
    let mut c = ChartBuilder::on(&area)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..x1 * 1.05 + 1e-9, y0..y1 + 0.1 * (y1 - y0) + 1e-9)
        .map_err(|e| err(&e))?;
    c.configure_mesh()
        .x_desc(axes.0)
        .y_desc(axes.1)
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(|e| err(&e))?;
    for (k, (name, p)) in series.iter().enumerate() {
        let colour = Palette99::pick(k).to_rgba();
        c.draw_series(LineSeries::new(p.iter().copied(), colour.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(2)));
        c.draw_series(p.iter().map(|&q| Circle::new(q, 4, colour.filled())))
            .map_err(|e| err(&e))?;
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()
        .map_err(|e| err(&e))?;
    area.present().map_err(|e| err(&e))
}

/// Draws the chain's and the MANETs' figures into `out`; `manet` pairs a
/// label (the mobility model) with its CSV.
///
/// # Errors
/// A CSV that cannot be read, a PNG that cannot be written.
pub fn run(chain: &Path, manet: &[(String, std::path::PathBuf)], out: &Path) -> Result<(), String> {
    let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let c = csv(chain)?;
    let first = column(&c, "hops", "first_ping_ms");
    let rtt = column(&c, "hops", "ping_avg_ms");
    let tcp = column(&c, "hops", "tcp_goodput_mbps");
    chart(
        &out.join("wireless-chain-first-ping.png"),
        "Wireless chain: first ping (AODV discovery) vs hops",
        ("hops", "RTT (ms)"),
        &[("first ping".into(), first)],
        false,
    )?;
    chart(
        &out.join("wireless-chain-rtt.png"),
        "Wireless chain: ping RTT with a route vs hops",
        ("hops", "RTT (ms)"),
        &[("ping, route known".into(), rtt)],
        false,
    )?;
    chart(
        &out.join("wireless-chain-tcp.png"),
        "Wireless chain: TCP goodput vs hops",
        ("hops", "goodput (Mbit/s)"),
        &[("CUBIC, 2 MB".into(), tcp)],
        false,
    )?;
    let mut pdr = Vec::new();
    let mut overhead = Vec::new();
    for (label, path) in manet {
        let m = csv(path)?;
        pdr.push((label.clone(), column(&m, "pause_s", "pdr")));
        overhead.push((
            label.clone(),
            column(&m, "pause_s", "routing_per_delivered"),
        ));
    }
    chart(
        &out.join("manet-pdr.png"),
        "MANET (50 nodes, AODV): packet delivery ratio vs pause time",
        ("pause time (s)", "delivery ratio"),
        &pdr,
        true,
    )?;
    chart(
        &out.join("manet-overhead.png"),
        "MANET (50 nodes, AODV): routing packets per delivered datagram",
        ("pause time (s)", "AODV packets per delivered datagram"),
        &overhead,
        false,
    )
}
