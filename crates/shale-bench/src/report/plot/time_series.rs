//! Time-series figures: panels stacked over a shared x axis of seconds since
//! the start (throughput, latency, CPU, device utilisation, ...), and under
//! them a timeline whose lanes show events (flushes, compactions, stalls) as
//! bars from their start to their end. Drawn like [`LineChart`]s; what
//! cannot be placed is left out as the [parent module](super) says.
//!
//! [`LineChart`]: super::LineChart

use std::ops::Range;

use plotters::backend::DrawingBackend;
use plotters::coord::combinators::BindKeyPoints;
use plotters::prelude::{ChartBuilder, Color, Rectangle};
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{
    draw_series, fail, fit, font, label, legend, legend_column, legend_layout, mesh, png, rows,
    shows, svg, text, tick_texts, titled, width, y_label_area, Area, Axis, Coord, Figure,
    PlotError, Rgb, Scale, Series, DARK, PALETTE, PANEL_DECADES, PANEL_Y_LABELS, WHITE,
};

/// Width of a [`TimeSeries`] figure unless it says otherwise, in pixels.
pub const TIME_SERIES_WIDTH: u32 = 920;

/// One panel of a [`TimeSeries`]: series against the shared time axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Panel {
    /// The y axis (its `label` along it: `"ops/s"`, `"latency (µs)"`).
    pub y: Axis,
    /// The lines; x is seconds since the start.
    pub series: Vec<Series>,
}

/// Something that happened from `start` to `end` seconds since the start.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// When it began, in seconds since the start.
    pub start: f64,
    /// When it ended; equal to `start` for an instant (drawn 2 pixels
    /// wide). An event whose start or end is not finite, or that ends
    /// before it starts, is left out.
    pub end: f64,
    /// Written in the bar when it fits there, else left out.
    pub label: Option<String>,
}

/// A row of the timeline: events of one kind.
#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    /// The row's name, left of it: `"flush"`, `"compaction L0→L5"`.
    pub name: String,
    /// `None`: [`PALETTE`] by the lane's index.
    pub color: Option<Rgb>,
    /// The bars.
    pub events: Vec<Event>,
}

/// Panels stacked over a shared x axis of seconds since the start, and a
/// timeline of [`Lane`]s under them.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeSeries {
    /// Above the panels, in bold.
    pub title: String,
    /// The shared x axis' name; its `range` and `unit` apply to every
    /// panel and the timeline. The scale is always linear.
    pub x: Axis,
    /// The panels, top to bottom.
    pub panels: Vec<Panel>,
    /// The timeline's rows, top to bottom; none: no timeline.
    pub lanes: Vec<Lane>,
    /// The figure's width in pixels; its height follows from the panels
    /// and lanes ([`TimeSeries::size`]).
    pub width: u32,
}

/// Height of one panel, its gap to the next included.
const PANEL_HEIGHT: u32 = 190;
/// Between two panels: room for the lower one's top tick label.
const PANEL_GAP: u32 = 22;
/// Height of one lane of the timeline.
const LANE_HEIGHT: u32 = 26;
/// Above the first panel: the title.
const TITLE_SPACE: u32 = 50;
/// Under the last panel or the timeline: tick labels and the x axis' name.
const X_AXIS_SPACE: u32 = 62;

impl TimeSeries {
    /// A figure of [`TIME_SERIES_WIDTH`] with this title, an x axis named
    /// "seconds since start", and no panels or lanes yet.
    pub fn new(title: impl Into<String>) -> TimeSeries {
        TimeSeries {
            title: title.into(),
            x: Axis::linear("seconds since start"),
            panels: Vec::new(),
            lanes: Vec::new(),
            width: TIME_SERIES_WIDTH,
        }
    }

    /// Width and height in pixels: the title, `PANEL_HEIGHT` per panel (one
    /// empty panel when there is neither a panel nor a lane), the timeline,
    /// and the x axis.
    pub fn size(&self) -> (u32, u32) {
        let lanes = self.lanes.len() as u32;
        let panels = if self.panels.is_empty() && lanes == 0 {
            1
        } else {
            self.panels.len() as u32
        };
        let timeline = if lanes > 0 {
            lanes * LANE_HEIGHT + 8
        } else {
            0
        };
        (
            self.width,
            TITLE_SPACE + panels * PANEL_HEIGHT + timeline + X_AXIS_SPACE,
        )
    }

    /// The figure as a standalone SVG document.
    pub fn to_svg(&self) -> Result<String, PlotError> {
        svg(self, self.size(), &self.title)
    }

    /// The figure as a PNG file (8-bit RGB).
    pub fn to_png(&self) -> Result<Vec<u8>, PlotError> {
        png(self, self.size())
    }
}

impl Figure for TimeSeries {
    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Result<(), PlotError> {
        draw_time_series(root, self)
    }
}

/// Whether an event can be drawn.
fn drawable(e: &Event) -> bool {
    e.start.is_finite() && e.end.is_finite() && e.start <= e.end
}

fn draw_time_series<DB: DrawingBackend>(root: &Area<DB>, f: &TimeSeries) -> Result<(), PlotError> {
    root.fill(&WHITE.color()).map_err(fail)?;
    let x_axis = Axis {
        scale: Scale::Linear,
        ..f.x.clone()
    };
    let xs = fit(
        &x_axis,
        f.panels
            .iter()
            .flat_map(|p| p.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)))
            .chain(
                f.lanes
                    .iter()
                    .flat_map(|l| l.events.iter().filter(|e| drawable(e)))
                    .flat_map(|e| [e.start, e.end]),
            ),
        false,
    );
    let empty = [Panel {
        y: Axis::default(),
        series: Vec::new(),
    }];
    let panels: &[Panel] = if f.panels.is_empty() && f.lanes.is_empty() {
        &empty
    } else {
        &f.panels
    };
    let ys: Vec<Range<f64>> = panels
        .iter()
        .map(|p| {
            fit(
                &p.y,
                p.series.iter().flat_map(|s| {
                    s.points
                        .iter()
                        .filter(|q| shows(Scale::Linear, &xs, q.0))
                        .map(|q| q.1)
                }),
                true,
            )
        })
        .collect();

    // One label area for all, fitting every tick label and lane name, and
    // one size for the legends' names.
    let mut labels: Vec<String> = f.lanes.iter().map(|l| l.name.clone()).collect();
    for (p, y) in panels.iter().zip(&ys) {
        let ticks = (PANEL_Y_LABELS, PANEL_DECADES);
        labels.extend(tick_texts(p.y.scale, y.clone(), ticks, &p.y.unit));
    }
    let y_area = y_label_area(root, labels.into_iter())?;
    let names = panels
        .iter()
        .flat_map(|p| &p.series)
        .map(|s| s.name.as_str());
    let (legend_width, legend_names) = legend_layout(root, names)?;
    let has_legend = panels.iter().any(|p| !p.series.is_empty());
    let right = if has_legend { 16 } else { 24 };
    let (w, _) = root.dim_in_pixel();

    titled(root, &f.title)?;
    // The panels and the timeline, each in its stretch of the picture; the
    // last one's stretch reaches the bottom, its x label area included.
    let mut cuts = vec![TITLE_SPACE];
    for _ in 1..panels.len() + usize::from(!f.lanes.is_empty()) {
        cuts.push(cuts[cuts.len() - 1] + PANEL_HEIGHT);
    }
    let areas = root.split_by_breakpoints::<u32, u32, _, _>([], cuts);
    for (i, (p, y)) in panels.iter().zip(ys).enumerate() {
        let bottom_most = i + 1 == panels.len() && f.lanes.is_empty();
        let (area, column) = areas[i + 1].split_horizontally(w.saturating_sub(legend_width + 8));
        let mut builder = ChartBuilder::on(if has_legend { &area } else { &areas[i + 1] });
        builder
            .margin_bottom(PANEL_GAP)
            .margin_left(8)
            .margin_right(right)
            .y_label_area_size(y_area);
        if bottom_most {
            builder.x_label_area_size(X_AXIS_SPACE);
        }
        let mut chart = builder
            .build_cartesian_2d(
                Coord::new(Scale::Linear, xs.clone()),
                Coord::new(p.y.scale, y),
            )
            .map_err(fail)?;
        let y_format = |v: &f64| label(*v, &p.y.unit);
        mesh(
            &mut chart,
            (&x_axis, 0),
            (&p.y.label, p.y.scale, PANEL_Y_LABELS, PANEL_DECADES),
            &y_format,
            true,
        )?;
        draw_series(&mut chart, (Scale::Linear, p.y.scale), &p.series)?;
        if !p.series.is_empty() {
            let mut side = legend_column(&column, 0)?;
            rows(&mut side, &p.series)?;
            legend(&mut side, legend_names)?;
        }
    }

    if let Some(area) = areas.get(panels.len() + 1).filter(|_| !f.lanes.is_empty()) {
        // Lane i (from the top) is the stretch n-1-i..n-i of the y axis,
        // named at its middle.
        let n = f.lanes.len();
        let middles = (0..n).map(|i| i as f64 + 0.5).collect();
        let mut chart = ChartBuilder::on(area)
            .margin_bottom(8)
            .margin_left(8)
            .margin_right(if has_legend {
                legend_width + 8 + right
            } else {
                right
            })
            .x_label_area_size(X_AXIS_SPACE)
            .y_label_area_size(y_area)
            .build_cartesian_2d(
                Coord::new(Scale::Linear, xs.clone()),
                Coord::new(Scale::Linear, 0.0..n as f64).with_key_points(middles),
            )
            .map_err(fail)?;
        let name = |t: &f64| {
            let i = n as f64 - 1.0 - t.floor();
            f.lanes
                .get(i.max(0.0) as usize)
                .map_or(String::new(), |l| l.name.clone())
        };
        let lanes = ("", Scale::Linear, n, 0);
        mesh(&mut chart, (&x_axis, 0), lanes, &name, false)?;
        // The bars: ours, plotters has no timeline. An instant is 2 pixels
        // wide; a label is written in its bar when it fits there.
        let style = font(10.0, false, DARK).pos(Pos::new(HPos::Left, VPos::Center));
        for (i, lane) in f.lanes.iter().enumerate() {
            let color = lane.color.unwrap_or(PALETTE[i % PALETTE.len()]).color();
            let middle = (n - 1 - i) as f64 + 0.5;
            for e in lane.events.iter().filter(|e| drawable(e)) {
                let clamp = |v: f64| v.clamp(xs.start, xs.end);
                let (x0, y0) = chart.backend_coord(&(clamp(e.start), middle + 0.32));
                let (x1, y1) = chart.backend_coord(&(clamp(e.end), middle - 0.32));
                let x1 = x1.max(x0 + 2);
                for style in [color.mix(0.35).filled(), color.stroke_width(1)] {
                    root.draw(&Rectangle::new([(x0, y0), (x1, y1)], style))
                        .map_err(fail)?;
                }
                if let Some(label) = &e.label {
                    if width(root, label, &style)? + 6 <= x1 - x0 {
                        text(root, label, (x0 + 3, (y0 + y1) / 2), &style)?;
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{decode, svg_texts, Shape, PURPLE, RED};
    use super::*;

    fn sample() -> TimeSeries {
        let secs: Vec<f64> = (0..=30).map(f64::from).collect();
        let mut f = TimeSeries::new("kvdb fill, 2 threads");
        f.panels = vec![
            Panel {
                y: Axis::linear("ops/s"),
                series: vec![Series::new(
                    "put",
                    secs.iter().map(|t| (*t, 50_000.0 + 1000.0 * t)).collect(),
                )],
            },
            Panel {
                y: Axis::log10("latency (µs)"),
                series: vec![
                    Series::new("p50", secs.iter().map(|t| (*t, 5.0 + t)).collect()),
                    Series::new("p99", secs.iter().map(|t| (*t, 80.0 + t * t)).collect())
                        .marker(Shape::Square),
                ],
            },
        ];
        f.lanes = vec![
            Lane {
                name: "flush".into(),
                color: None,
                events: vec![
                    Event {
                        start: 1.0,
                        end: 7.0,
                        label: Some("memtable 1".into()),
                    },
                    Event {
                        start: 12.0,
                        end: 12.0,
                        label: None,
                    },
                ],
            },
            Lane {
                name: "compaction L0→L5".into(),
                color: Some(PURPLE),
                events: vec![Event {
                    start: 4.0,
                    end: 20.0,
                    label: Some("L0→L5 64 MiB".into()),
                }],
            },
            Lane {
                name: "stall".into(),
                color: Some(RED),
                events: vec![Event {
                    start: 9.0,
                    end: 11.0,
                    label: Some("a label far too long for its bar".into()),
                }],
            },
        ];
        f
    }

    #[test]
    fn panels_and_timeline_render() {
        let f = sample();
        let (w, h) = f.size();
        assert_eq!(w, TIME_SERIES_WIDTH);
        assert_eq!(h, 50 + 2 * 190 + 3 * 26 + 8 + 62);
        let svg = f.to_svg().expect("svg");
        let texts = svg_texts(&svg);
        for want in [
            "kvdb fill, 2 threads",
            "ops/s",
            "latency (µs)",
            "put",
            "p50",
            "p99",
            "flush",
            "compaction L0→L5",
            "stall",
            "memtable 1",
            "L0→L5 64 MiB",
            "seconds since start",
            "30",
            "60k",
        ] {
            assert!(texts.iter().any(|t| t == want), "{want} in {texts:?}");
        }
        assert!(
            !texts.iter().any(|t| t.starts_with("a label far too long")),
            "a label wider than its bar is left out"
        );
        // The x tick labels are written once, under the timeline.
        assert_eq!(texts.iter().filter(|t| *t == "25").count(), 1, "{texts:?}");

        let (pw, ph, rgb) = decode(&f.to_png().expect("png"));
        assert_eq!((pw, ph), (w, h));
        let pixels: Vec<&[u8]> = rgb.chunks_exact(3).collect();
        assert!(pixels.iter().any(|p| *p == [31, 119, 180]), "a series");
        assert!(pixels.iter().any(|p| *p == [148, 103, 189]), "a lane");
    }

    #[test]
    fn panels_alone_or_nothing_at_all() {
        let mut f = sample();
        f.lanes.clear();
        let texts = svg_texts(&f.to_svg().expect("svg"));
        // The x tick labels move under the last panel.
        assert_eq!(texts.iter().filter(|t| *t == "25").count(), 1, "{texts:?}");
        assert_eq!(f.size().1, 50 + 2 * 190 + 62);

        let mut f = TimeSeries::new("empty");
        f.to_svg().expect("no panels, no lanes");
        let (w, h, _) = decode(&f.to_png().expect("no panels, no lanes"));
        assert_eq!((w, h), (TIME_SERIES_WIDTH, 50 + 190 + 62));
        f.lanes = vec![Lane {
            name: "only lanes".into(),
            color: None,
            events: Vec::new(),
        }];
        f.to_png().expect("only an empty lane");
    }

    #[test]
    fn unplaceable_points_and_events_are_skipped() {
        let mut f = TimeSeries::new("odd");
        f.panels = vec![Panel {
            y: Axis::log10("zeros"),
            series: vec![
                Series::new("zero", vec![(0.0, 0.0), (1.0, 0.0)]),
                Series::new("nan", vec![(f64::NAN, f64::NAN)]),
                Series::new("empty", Vec::new()),
            ],
        }];
        f.lanes = vec![Lane {
            name: "odd".into(),
            color: None,
            events: vec![
                Event {
                    start: 5.0,
                    end: 1.0,
                    label: Some("backwards".into()),
                },
                Event {
                    start: f64::NAN,
                    end: 1.0,
                    label: None,
                },
                Event {
                    start: 1.0,
                    end: f64::INFINITY,
                    label: None,
                },
            ],
        }];
        let svg = f.to_svg().expect("svg");
        assert!(!svg_texts(&svg).iter().any(|t| t == "backwards"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        let (w, h, _) = decode(&f.to_png().expect("png"));
        assert_eq!((w, h), f.size());
    }
}
