//! The samples drawn: throughput, latency, CPU, device and engine panels over
//! one time axis, with the flushes, compactions and stalls as a timeline
//! under them (`time_series.svg` and `.png`).

use crate::report::plot::time_series::{Event, Lane, Panel, TimeSeries as Figure};
use crate::report::plot::{Axis, Rgb, Series, BLUE, GREEN, ORANGE, PURPLE, RED};

use super::{Sample, SpanKind, TimeSeries};

/// One line of a panel: its name, the column it draws and its colour.
type Line = (&'static str, fn(&Sample) -> Option<f64>, Rgb);

/// The figure of `series`. A panel whose columns are empty in every sample
/// (the sampler could not read them) is left out; the timeline has a lane
/// per kind of span present.
pub(crate) fn figure(series: &TimeSeries, title: &str) -> Figure {
    let mut fig = Figure::new(title);
    let points = |get: fn(&Sample) -> Option<f64>| -> Vec<(f64, f64)> {
        series
            .samples
            .iter()
            .filter_map(|s| get(s).map(|v| (s.t, v)))
            .collect()
    };
    let mut panel = |y: Axis, lines: Vec<Line>| {
        let series: Vec<Series> = lines
            .into_iter()
            .map(|(name, get, color)| Series::new(name, points(get)).color(color))
            .filter(|s| !s.points.is_empty())
            .collect();
        if !series.is_empty() {
            fig.panels.push(Panel { y, series });
        }
    };
    panel(
        Axis::linear("ops/s"),
        vec![("throughput", |s| s.ops_per_sec, BLUE)],
    );
    panel(
        Axis::log10("latency (µs)"),
        vec![
            ("p50", |s| s.p50_us, GREEN),
            ("p99", |s| s.p99_us, ORANGE),
            ("p99.9", |s| s.p999_us, RED),
        ],
    );
    panel(
        Axis::linear("CPU (%)").range(0.0, 100.0),
        vec![
            ("user", |s| s.cpu_user, BLUE),
            ("system", |s| s.cpu_system, ORANGE),
            ("iowait", |s| s.cpu_iowait, RED),
        ],
    );
    panel(
        Axis::linear("device util (%)").range(0.0, 100.0),
        vec![("utilisation", |s| s.device_util, PURPLE)],
    );
    panel(
        Axis::linear("engine"),
        vec![
            ("L0 tables", |s| s.l0_tables.map(|v| v as f64), BLUE),
            (
                "pending compaction (GiB)",
                |s| {
                    s.pending_compaction_bytes
                        .map(|v| v as f64 / (1u64 << 30) as f64)
                },
                RED,
            ),
        ],
    );
    for (kind, name) in [
        (SpanKind::Flush, "flush"),
        (SpanKind::Compaction, "compaction"),
        (SpanKind::Stall, "stall"),
    ] {
        let events: Vec<Event> = series
            .spans
            .iter()
            .filter(|s| s.kind == kind)
            .map(|s| Event {
                start: s.start,
                end: s.end,
                label: (kind == SpanKind::Compaction).then(|| s.label.clone()),
            })
            .collect();
        if !events.is_empty() {
            fig.lanes.push(Lane {
                name: name.to_string(),
                color: None,
                events,
            });
        }
    }
    fig
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::Span;

    #[test]
    fn empty_columns_leave_their_panels_out_and_spans_make_lanes() {
        let samples = (1..=4)
            .map(|i| Sample {
                t: f64::from(i),
                seconds: 1.0,
                ops: Some(100),
                ops_per_sec: Some(100.0),
                p50_us: Some(10.0),
                p99_us: Some(50.0),
                p999_us: Some(90.0),
                l0_tables: Some(i as u64),
                ..Sample::default()
            })
            .collect();
        let series = TimeSeries {
            samples,
            spans: vec![
                Span {
                    kind: SpanKind::Flush,
                    label: "flush".into(),
                    start: 0.5,
                    end: 0.7,
                    bytes: 1,
                },
                Span {
                    kind: SpanKind::Compaction,
                    label: "L0->L6".into(),
                    start: 1.0,
                    end: 3.0,
                    bytes: 1,
                },
            ],
            ..TimeSeries::default()
        };
        let fig = figure(&series, "test");
        let names: Vec<&str> = fig.panels.iter().map(|p| p.y.label.as_str()).collect();
        assert_eq!(names, ["ops/s", "latency (µs)", "engine"]);
        let lanes: Vec<&str> = fig.lanes.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(lanes, ["flush", "compaction"]);
        let svg = fig.to_svg().expect("svg");
        assert!(svg.contains("L0 tables") && svg.contains("compaction"));
        assert!(!fig.to_png().expect("png").is_empty());
    }
}
