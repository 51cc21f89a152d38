//! The study's figures as PNGs (plotters): one grouped bar chart per
//! figure of the paper (`fig02.png` … `fig14.png`), the scenarios or
//! cases on the x axis, one colour per series, a whisker of ± one
//! standard deviation over the seeds, and the paper's value as a black
//! diamond where its text gives one (Fig. 12).
//!
//! Text is drawn with the DejaVu Sans Mono that `elvis plot` embeds.

use super::tables::{bars, Bar};
use super::Outcome;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

const SIZE: (u32, u32) = (960, 540);
const FONT: &[u8] = include_bytes!("../../../cli/assets/DejaVuSansMono.ttf");

/// Draws every figure that has data into `out`.
///
/// # Errors
/// A file that cannot be written.
pub fn write(outcomes: &[Outcome], out: &Path) -> Result<(), String> {
    let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    let all = bars(outcomes);
    for f in figures(&all) {
        let these: Vec<&Bar> = all
            .iter()
            .filter(|b| b.figure == f && b.stat.mean.is_finite())
            .collect();
        if these.is_empty() {
            continue;
        }
        let num: u32 = f.trim_start_matches("Fig. ").parse().unwrap_or(0);
        let p = out.join(format!("fig{num:02}.png"));
        let area = BitMapBackend::new(&p, SIZE).into_drawing_area();
        draw(area, f, &these).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}

/// Returns the figures of `bars`, each once, in number order.
pub fn figures(bars: &[Bar]) -> Vec<&'static str> {
    let mut figs: Vec<&'static str> = Vec::new();
    for b in bars {
        if !figs.contains(&b.figure) {
            figs.push(b.figure);
        }
    }
    figs.sort_by_key(|f| f.trim_start_matches("Fig. ").parse::<u32>().unwrap_or(0));
    figs
}

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Draws one grouped bar chart.
///
/// Long because it is one chart drawn in order: axes, each series' bars
/// and whiskers, the paper's markers, the legend and the category
/// labels, each a few plotters calls.
fn draw<DB: DrawingBackend>(
    area: DrawingArea<DB, plotters::coord::Shift>,
    figure: &str,
    bars: &[&Bar],
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE).map_err(err)?;
    let mut xs: Vec<&str> = Vec::new();
    let mut series: Vec<&str> = Vec::new();
    for b in bars {
        if !xs.contains(&b.x.as_str()) {
            xs.push(&b.x);
        }
        if !series.contains(&b.series.as_str()) {
            series.push(&b.series);
        }
    }
    let top = bars
        .iter()
        .map(|b| (b.stat.mean + b.stat.sd).max(b.paper.unwrap_or(0.0)))
        .fold(0.0, f64::max)
        * 1.25;
    let title = format!("{figure} {} (elvis)", bars[0].title);
    let mut chart = ChartBuilder::on(&area)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..xs.len() as f64, 0.0..top.max(1e-9))
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc(bars[0].unit)
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    let w = 0.8 / series.len() as f64;
    let place = |b: &Bar| {
        let i = xs.iter().position(|x| *x == b.x).unwrap_or(0) as f64;
        let k = series.iter().position(|s| *s == b.series).unwrap_or(0) as f64;
        i + 0.1 + k * w
    };
    for (k, s) in series.iter().enumerate() {
        let colour = Palette99::pick(k).mix(0.9);
        chart
            .draw_series(bars.iter().filter(|b| b.series == *s).map(|b| {
                let x = place(b);
                Rectangle::new([(x, 0.0), (x + w * 0.9, b.stat.mean)], colour.filled())
            }))
            .map_err(err)?
            .label(*s)
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 10, y + 5)], Palette99::pick(k).filled())
            });
        chart
            .draw_series(
                bars.iter()
                    .filter(|b| b.series == *s && b.stat.n > 1)
                    .map(|b| {
                        let x = place(b) + w * 0.45;
                        PathElement::new(
                            vec![(x, b.stat.mean - b.stat.sd), (x, b.stat.mean + b.stat.sd)],
                            BLACK.stroke_width(2),
                        )
                    }),
            )
            .map_err(err)?;
    }
    let papers: Vec<(f64, f64)> = bars
        .iter()
        .filter_map(|b| Some((place(b) + w * 0.45, b.paper?)))
        .collect();
    if !papers.is_empty() {
        chart
            .draw_series(
                papers
                    .iter()
                    .map(|&(x, y)| TriangleMarker::new((x, y), 7, BLACK.filled())),
            )
            .map_err(err)?
            .label("paper")
            .legend(|(x, y)| TriangleMarker::new((x + 5, y), 5, BLACK.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)?;
    let style =
        TextStyle::from(("sans-serif", 15).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    for (i, x) in xs.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        area.draw(&Text::new(x.to_string(), (px, py + 8), style.clone()))
            .map_err(err)?;
    }
    area.present().map_err(err)
}
