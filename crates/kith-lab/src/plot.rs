//! PNG charts for experiments and benchmarks: line, scatter and grouped bar charts, drawn
//! with plotters and the DejaVu Sans font compiled in (no system fonts needed).

use std::path::Path;
use std::sync::Once;

use anyhow::{Result, anyhow};
use plotters::prelude::*;

/// One named line of a chart.
#[derive(Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A line chart's labels and scales.
#[derive(Debug)]
pub struct LineChart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    /// Base-2 logarithmic x axis (e.g. community counts 2, 4, ..., 1024).
    pub log2_x: bool,
}

const COLOURS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn register_font() {
    static FONT: Once = Once::new();
    FONT.call_once(|| {
        // The bytes are a valid TrueType font shipped by the `dejavu` crate.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
    });
}

fn plot_error(e: impl std::fmt::Display, path: &Path) -> anyhow::Error {
    anyhow!("cannot draw {}: {e}", path.display())
}

/// Draws the legend and writes the file.
fn finish<'a, DB, CT>(
    mut ctx: ChartContext<'a, DB, CT>,
    root: &DrawingArea<DB, plotters::coord::Shift>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate,
{
    ctx.configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    root.present()
}

/// Draws `series` as lines with markers into a 900×560 PNG at `path`.
pub fn line_chart(path: &Path, chart: &LineChart<'_>, series: &[Series]) -> Result<()> {
    xy_chart(path, chart, series, true)
}

/// Draws `series` as markers only (a scatter plot) into a 900×560 PNG at `path`.
pub(crate) fn scatter_chart(path: &Path, chart: &LineChart<'_>, series: &[Series]) -> Result<()> {
    xy_chart(path, chart, series, false)
}

fn xy_chart(path: &Path, chart: &LineChart<'_>, series: &[Series], lines: bool) -> Result<()> {
    register_font();
    let err = |e: &dyn std::fmt::Display| plot_error(e, path);
    let all = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in all {
        let x = if chart.log2_x { x.log2() } else { x };
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    let pad = ((y1 - y0) * 0.08).max(1e-9);
    let (y0, y1) = (y0.min(0.0) - pad, y1 + pad);
    let x1 = if x1 > x0 { x1 } else { x0 + 1.0 };
    let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut ctx = ChartBuilder::on(&root)
        .caption(chart.title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(|e| err(&e))?;
    let log2_x = chart.log2_x;
    let x_format = move |x: &f64| {
        let v = if log2_x { 2f64.powf(*x) } else { *x };
        if (v - v.round()).abs() < 1e-9 { format!("{}", v.round()) } else { format!("{v:.2}") }
    };
    ctx.configure_mesh()
        .x_desc(chart.x_label)
        .y_desc(chart.y_label)
        .x_label_formatter(&x_format)
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(|e| err(&e))?;
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points: Vec<(f64, f64)> =
            s.points.iter().map(|&(x, y)| (if log2_x { x.log2() } else { x }, y)).collect();
        let legend = move |(x, y): (i32, i32)| {
            PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
        };
        if lines {
            ctx.draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(s.name.clone())
                .legend(legend);
        }
        let radius = if lines { 3 } else { 2 };
        let dots = ctx
            .draw_series(points.iter().map(|&p| Circle::new(p, radius, colour.filled())))
            .map_err(|e| err(&e))?;
        if !lines {
            dots.label(s.name.clone()).legend(legend);
        }
    }
    finish(ctx, &root).map_err(|e| err(&e))
}

/// A grouped bar chart: one group per entry of `groups`, one bar per entry of `bars` in each,
/// `values[group][bar]`.
pub(crate) fn bar_chart(
    path: &Path,
    title: &str,
    y_label: &str,
    groups: &[String],
    bars: &[String],
    values: &[Vec<f64>],
) -> Result<()> {
    register_font();
    let err = |e: &dyn std::fmt::Display| plot_error(e, path);
    let flat = values.iter().flatten().copied();
    let (lo, hi) = flat.fold((0.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let pad = ((hi - lo) * 0.1).max(1e-9);
    let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let width = groups.len() as f64;
    let mut ctx = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..width, (lo - pad)..(hi + pad))
        .map_err(|e| err(&e))?;
    let names = groups.to_vec();
    let group_label = move |x: &f64| {
        let i = x.floor() as usize;
        if (x - x.floor() - 0.5).abs() < 1e-6 {
            names.get(i).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    ctx.configure_mesh()
        .disable_x_mesh()
        .x_labels(2 * groups.len() + 1)
        .x_label_formatter(&group_label)
        .y_desc(y_label)
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(|e| err(&e))?;
    let slot = 0.8 / bars.len().max(1) as f64;
    for (b, name) in bars.iter().enumerate() {
        let colour = COLOURS[b % COLOURS.len()];
        let rects = values.iter().enumerate().map(|(g, row)| {
            let x = g as f64 + 0.1 + b as f64 * slot;
            Rectangle::new([(x, 0.0), (x + slot * 0.9, row[b])], colour.filled())
        });
        ctx.draw_series(rects)
            .map_err(|e| err(&e))?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour.filled()));
    }
    finish(ctx, &root).map_err(|e| err(&e))
}
