//! `<scenario>-<design>.svg`: worst latency per 100 ms (Get, Put, Ping) and worst heartbeat
//! gap per 100 ms over the run, with the run's marks (measurement start, storm, snapshot, ...)
//! as vertical lines and the ping interval and active TTL as horizontal ones.

use super::options::Options;
use super::scenarios::RunResult;
use super::stats::{Op, BUCKET_MS};
use plotters::prelude::*;

const WIDTH: u32 = 960;
const PANEL: u32 = 280;
const SERIES: [(Op, RGBColor); 3] = [
    (Op::Get, RGBColor(31, 119, 180)),
    (Op::Put, RGBColor(44, 160, 44)),
    (Op::Ping, RGBColor(214, 39, 40)),
];

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// Renders one run as an SVG document.
pub(super) fn render_svg(opts: &Options, r: &RunResult) -> Result<String, String> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (WIDTH, PANEL * 2)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let areas = root.split_evenly((2, 1));
        latency_panel(&areas[0], r).map_err(|e| e.to_string())?;
        gap_panel(&areas[1], opts, r).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(buf)
}

fn x_max(r: &RunResult) -> f64 {
    (r.rec.timeline.gap.len() as f64 * BUCKET_MS as f64 / 1000.0).max(1.0)
}

fn secs(i: usize) -> f64 {
    i as f64 * BUCKET_MS as f64 / 1000.0
}

/// One panel's chart: `caption` on top, time since start (s) across, `y_desc` from 0 to `y_max`
/// up, a mesh without minor lines.
fn panel<'a, 'b>(
    area: &'a Area<'b>,
    r: &RunResult,
    caption: String,
    y_desc: &str,
    y_max: f64,
) -> Result<Chart<'a, 'b>, DrawingAreaErrorKind<std::io::Error>> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 15))
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(56)
        .build_cartesian_2d(0f64..x_max(r), 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("time since start (s)")
        .y_desc(y_desc)
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    Ok(chart)
}

fn latency_panel(area: &Area<'_>, r: &RunResult) -> DrawResult {
    let t = &r.rec.timeline;
    let y_max = t
        .latency
        .iter()
        .flat_map(|row| SERIES.iter().map(move |(op, _)| row[*op as usize]))
        .max()
        .unwrap_or(1)
        .max(1) as f64
        / 1000.0
        * 1.05;
    let caption = format!("{} / {}: worst latency per 100 ms", r.scenario.name(), r.design.name());
    let mut chart = panel(area, r, caption, "latency (ms)", y_max)?;
    for (op, color) in SERIES {
        chart
            .draw_series(LineSeries::new(
                t.latency
                    .iter()
                    .enumerate()
                    .map(|(i, row)| (secs(i), row[op as usize] as f64 / 1000.0)),
                color.stroke_width(1),
            ))?
            .label(op.key())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(2)));
    }
    marks(&mut chart, r, y_max)?;
    legend(&mut chart)
}

fn gap_panel(area: &Area<'_>, opts: &Options, r: &RunResult) -> DrawResult {
    let t = &r.rec.timeline;
    let worst = t.gap.iter().copied().max().unwrap_or(0) as f64 / 1000.0;
    let y_max = worst.max(opts.active_ttl_ms as f64) * 1.1;
    let caption = format!(
        "heartbeat gap as seen by the master (worst per 100 ms); ping every {} ms, active TTL {} ms",
        opts.ping_interval_ms, opts.active_ttl_ms
    );
    let mut chart = panel(area, r, caption, "gap (ms)", y_max)?;
    let red = RGBColor(214, 39, 40);
    chart
        .draw_series(LineSeries::new(
            t.gap.iter().enumerate().map(|(i, g)| (secs(i), *g as f64 / 1000.0)),
            red.stroke_width(2),
        ))?
        .label("gap")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], red.stroke_width(2)));
    for (label, ms, color) in [
        ("ping interval", opts.ping_interval_ms, BLACK.mix(0.4)),
        ("active TTL", opts.active_ttl_ms, RGBColor(230, 145, 20).mix(0.9)),
    ] {
        chart
            .draw_series(LineSeries::new(
                [(0.0, ms as f64), (x_max(r), ms as f64)],
                color.stroke_width(1),
            ))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(1)));
    }
    marks(&mut chart, r, y_max)?;
    legend(&mut chart)
}

type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

fn marks<'a, 'b: 'a>(chart: &mut Chart<'a, 'b>, r: &RunResult, y_max: f64) -> DrawResult {
    for (name, at) in &r.marks {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(*at, 0.0), (*at, y_max)],
            BLACK.mix(0.25).stroke_width(1),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            name.clone(),
            (*at, y_max * 0.95),
            ("sans-serif", 11).into_font(),
        )))?;
    }
    Ok(())
}

fn legend<'a, 'b: 'a>(chart: &mut Chart<'a, 'b>) -> DrawResult {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 12))
        .draw()
}
