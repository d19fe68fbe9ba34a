//! `states.svg`: clients per liveness state over simulated time, one panel per policy, with the
//! master pauses and heartbeat blocks shaded.

use super::counters::StateSample;
use super::report::{PolicyReport, SimReport};
use plotters::prelude::*;

const PANEL_HEIGHT: u32 = 260;
const WIDTH: u32 = 960;
const ACTIVE: RGBColor = RGBColor(46, 139, 87);
const SUSPECTED: RGBColor = RGBColor(230, 145, 20);
const OFFLINE: RGBColor = RGBColor(200, 30, 45);
const STALL: RGBColor = RGBColor(150, 150, 150);
const BLOCKED: RGBColor = RGBColor(90, 120, 200);

/// Renders the chart as an SVG document.
pub(super) fn render_svg(report: &SimReport) -> Result<String, String> {
    let mut buf = String::new();
    {
        let panels = report.policies.len().max(1) as u32;
        let root = SVGBackend::with_string(&mut buf, (WIDTH, PANEL_HEIGHT * panels)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let areas = root.split_evenly((panels as usize, 1));
        for (area, policy) in areas.iter().zip(&report.policies) {
            panel(area, policy, report).map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(buf)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// Reads one gauge of a sample.
type Gauge = fn(&StateSample) -> usize;

fn panel(
    area: &Area<'_>,
    p: &PolicyReport,
    report: &SimReport,
) -> Result<(), DrawingAreaErrorKind<<SVGBackend<'static> as DrawingBackend>::ErrorType>> {
    let x_max = report.duration_s.max(1.0);
    let y_max = (report.clients.max(1) as f64 * 1.05).ceil();
    let caption = format!(
        "{}: active TTL {} s + suspicion TTL {} s, stall brake {}, mass-suspicion brake {}",
        p.policy,
        p.active_ttl_s,
        p.suspicion_ttl_s,
        if p.stall_brake { "on" } else { "off" },
        if p.mass_suspicion_brake { "on" } else { "off" }
    );
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 15))
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(52)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("simulated time (s)")
        .y_desc("clients (worst in each second)")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    let w = &report.workload;
    for (label, events, color) in [
        ("master_pause", &w.master_pauses, STALL),
        ("heartbeat_blocked", &w.heartbeat_blocks, BLOCKED),
    ] {
        if events.is_empty() {
            continue;
        }
        chart
            .draw_series(events.iter().map(|e| {
                Rectangle::new(
                    [(e.at_s, 0.0), (e.at_s + e.duration_s, y_max)],
                    color.mix(0.25).filled(),
                )
            }))?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.mix(0.25).filled()));
    }
    let series: [(&str, RGBColor, Gauge); 3] = [
        ("Active", ACTIVE, |s| s.active),
        ("Suspected", SUSPECTED, |s| s.suspected),
        ("Offline (offboarding pending)", OFFLINE, |s| s.offline_pending),
    ];
    for (label, color, get) in series {
        chart
            .draw_series(LineSeries::new(
                p.states.iter().map(|s| (s.t_s as f64, get(s) as f64)),
                color.stroke_width(2),
            ))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::MiddleLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 12))
        .draw()?;
    Ok(())
}
