//! Line charts against cache size on a logarithmic x axis, laid out once as
//! a list of shapes and written out twice: as SVG text and, through
//! [`raster`](super::raster), as a PNG, so both files show the same picture.

use std::fmt::Write as _;

use super::raster::{Anchor, Canvas, Rgb};

/// Output size of every chart, in pixels.
pub const WIDTH: f64 = 920.0;
pub const HEIGHT: f64 = 540.0;

/// The plot area's edges; the legend sits right of it.
const LEFT: f64 = 72.0;
const RIGHT: f64 = 690.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 462.0;
/// Baseline of the labels above the frame (inflection points, phases).
const LABEL_Y: f64 = TOP - 6.0;
/// A character's advance per unit of font size, at most: the bitmap font's
/// 0.6 rounded up at small sizes; most sans-serif fonts' is less.
const EM_ADVANCE: f64 = 0.63;

/// The largest font size up to `max` at which `chars` characters fit in
/// `width` pixels. A size that has to shrink is rounded down to the PNG's
/// steps (its bitmap font scales by whole fine pixels, 10 / [`SUPERSAMPLE`]
/// sizes apart), so that the PNG does not round it back up past the width.
fn fitting_size(max: f64, width: f64, chars: f64) -> f64 {
    let fit = width / (chars.max(1.0) * EM_ADVANCE);
    if fit >= max {
        return max;
    }
    let step = 10.0 / SUPERSAMPLE as f64;
    (fit / step).floor().max(1.0) * step
}

/// Fine pixels per output pixel (each direction) when rasterizing.
const SUPERSAMPLE: usize = 3;

const WHITE: Rgb = Rgb(255, 255, 255);
const INK: Rgb = Rgb(34, 34, 34);
const GRID: Rgb = Rgb(221, 221, 221);
const MUTED: Rgb = Rgb(102, 102, 102);
/// Background tints of the three phases.
const PHASE_TINTS: [Rgb; 3] = [Rgb(252, 238, 236), Rgb(253, 248, 228), Rgb(236, 246, 236)];

/// How a series marks its points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Circle,
    Square,
    Triangle,
    Diamond,
}

/// One line of a chart: a point per run, `None` where the run has no value
/// (the line breaks there).
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub color: Rgb,
    pub shape: Shape,
    pub width: f64,
    /// (x, y) with x > 0 (x values that are not are left out by the caller).
    pub points: Vec<(f64, Option<f64>)>,
}

/// The y axis of a chart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum YAxis {
    /// From 0 to a round number above the largest value.
    Linear,
    /// Fractions 0..1 shown as 0..100 %.
    Fraction,
}

/// What to draw.
#[derive(Clone, Debug)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    /// Written after each x tick value ("%", " MiB").
    pub x_suffix: &'static str,
    pub y_label: String,
    pub y_axis: YAxis,
    pub series: Vec<Series>,
    /// Vertical dashed markers: x and label (`IP1`, `IP2`); markers at x <= 0
    /// or not finite are left out.
    pub markers: Vec<(f64, String)>,
    /// Tint the phases split by the first two markers.
    pub phases: bool,
    /// A line of small print under the x axis.
    pub note: Option<String>,
}

/// A shape of the picture, in output pixels.
#[derive(Clone, Debug, PartialEq)]
enum Item {
    Rect {
        x: f64,
        y: f64,
        w: f64,
        h: f64,
        fill: Option<Rgb>,
        stroke: Option<Rgb>,
    },
    Line {
        points: Vec<(f64, f64)>,
        color: Rgb,
        width: f64,
        /// Dash and gap lengths.
        dash: Option<(f64, f64)>,
    },
    Marker {
        x: f64,
        y: f64,
        shape: Shape,
        color: Rgb,
    },
    Text {
        x: f64,
        y: f64,
        text: String,
        size: f64,
        anchor: Anchor,
        color: Rgb,
        bold: bool,
        vertical: bool,
    },
}

/// A laid-out chart.
#[derive(Clone, Debug)]
pub struct Figure {
    title: String,
    items: Vec<Item>,
}

/// Marker size: circle radius, half the side of the others.
const MARK: f64 = 3.6;

impl Figure {
    fn text(&mut self, x: f64, y: f64, text: impl Into<String>, size: f64, anchor: Anchor) {
        self.items.push(Item::Text {
            x,
            y,
            text: text.into(),
            size,
            anchor,
            color: INK,
            bold: false,
            vertical: false,
        });
    }

    fn line(&mut self, points: Vec<(f64, f64)>, color: Rgb, width: f64) {
        self.items.push(Item::Line {
            points,
            color,
            width,
            dash: None,
        });
    }

    /// The chart as a standalone SVG document (no XML declaration, so that
    /// it can also be inlined into HTML as it is).
    pub fn to_svg(&self) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
             viewBox=\"0 0 {WIDTH} {HEIGHT}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n\
             <title>{}</title>\n",
            escape(&self.title)
        );
        for item in &self.items {
            svg_item(&mut s, item);
        }
        s.push_str("</svg>\n");
        s
    }

    /// The chart as a PNG file.
    pub fn to_png(&self) -> Result<Vec<u8>, String> {
        // Whole pixels: the constants are integers.
        let mut c = Canvas::new(WIDTH as usize, HEIGHT as usize, SUPERSAMPLE, WHITE);
        for item in &self.items {
            raster_item(&mut c, item);
        }
        c.to_png()
    }
}

/// `&`, `<`, `>`, `"` and `'` as character references, for text and
/// attribute values alike.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

fn hex(c: Rgb) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// A coordinate for SVG: one decimal, no trailing `.0`.
fn num(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// The vertices of a marker's polygon (triangle, diamond).
fn marker_polygon(x: f64, y: f64, shape: Shape) -> Vec<(f64, f64)> {
    let r = MARK * 1.25;
    match shape {
        Shape::Triangle => vec![(x, y - r), (x + r, y + r * 0.8), (x - r, y + r * 0.8)],
        _ => vec![(x, y - r), (x + r, y), (x, y + r), (x - r, y)],
    }
}

fn svg_item(s: &mut String, item: &Item) {
    let _ = match item {
        Item::Rect {
            x,
            y,
            w,
            h,
            fill,
            stroke,
        } => writeln!(
            s,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}/>",
            num(*x),
            num(*y),
            num(*w),
            num(*h),
            fill.map_or("none".to_string(), hex),
            stroke.map_or(String::new(), |c| format!(" stroke=\"{}\"", hex(c))),
        ),
        Item::Line {
            points,
            color,
            width,
            dash,
        } => {
            let pts: Vec<String> = points
                .iter()
                .map(|(x, y)| format!("{},{}", num(*x), num(*y)))
                .collect();
            writeln!(
                s,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" \
                 stroke-linejoin=\"round\" stroke-linecap=\"round\"{}/>",
                pts.join(" "),
                hex(*color),
                num(*width),
                dash.map_or(String::new(), |(on, off)| format!(
                    " stroke-dasharray=\"{} {}\"",
                    num(on),
                    num(off)
                )),
            )
        }
        Item::Marker { x, y, shape, color } => match shape {
            Shape::Circle => writeln!(
                s,
                "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"/>",
                num(*x),
                num(*y),
                num(MARK),
                hex(*color)
            ),
            Shape::Square => writeln!(
                s,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>",
                num(x - MARK),
                num(y - MARK),
                num(2.0 * MARK),
                num(2.0 * MARK),
                hex(*color)
            ),
            Shape::Triangle | Shape::Diamond => {
                let pts: Vec<String> = marker_polygon(*x, *y, *shape)
                    .iter()
                    .map(|(x, y)| format!("{},{}", num(*x), num(*y)))
                    .collect();
                writeln!(
                    s,
                    "<polygon points=\"{}\" fill=\"{}\"/>",
                    pts.join(" "),
                    hex(*color)
                )
            }
        },
        Item::Text {
            x,
            y,
            text,
            size,
            anchor,
            color,
            bold,
            vertical,
        } => {
            let anchor = match anchor {
                Anchor::Start => "start",
                Anchor::Middle => "middle",
                Anchor::End => "end",
            };
            let rotate = if *vertical {
                format!(" transform=\"rotate(-90 {} {})\"", num(*x), num(*y))
            } else {
                String::new()
            };
            writeln!(
                s,
                "<text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"{anchor}\" fill=\"{}\"{}{rotate}>{}</text>",
                num(*x),
                num(*y),
                num(*size),
                hex(*color),
                if *bold { " font-weight=\"bold\"" } else { "" },
                escape(text)
            )
        }
    };
}

fn raster_item(c: &mut Canvas, item: &Item) {
    match item {
        Item::Rect {
            x,
            y,
            w,
            h,
            fill,
            stroke,
        } => {
            if let Some(f) = fill {
                c.fill_rect(*x, *y, *w, *h, *f);
            }
            if let Some(s) = stroke {
                c.stroke_rect(*x, *y, *w, *h, 1.0, *s);
            }
        }
        Item::Line {
            points,
            color,
            width,
            dash,
        } => {
            for pair in points.windows(2) {
                if let [(ax, ay), (bx, by)] = pair {
                    match dash {
                        None => c.segment(*ax, *ay, *bx, *by, *width, *color),
                        Some((on, off)) => {
                            dashed(c, (*ax, *ay), (*bx, *by), *on, *off, *width, *color)
                        }
                    }
                }
            }
        }
        Item::Marker { x, y, shape, color } => match shape {
            Shape::Circle => c.disc(*x, *y, MARK, *color),
            Shape::Square => c.fill_rect(x - MARK, y - MARK, 2.0 * MARK, 2.0 * MARK, *color),
            Shape::Triangle | Shape::Diamond => {
                c.convex_polygon(&marker_polygon(*x, *y, *shape), *color)
            }
        },
        Item::Text {
            x,
            y,
            text,
            size,
            anchor,
            color,
            bold,
            vertical,
        } => c.text(*x, *y, text, *size, *anchor, *color, *bold, *vertical),
    }
}

/// A dashed straight line, as the SVG's `stroke-dasharray` draws it (butt
/// ends: the dashes are shortened by the round caps' width).
fn dashed(c: &mut Canvas, a: (f64, f64), b: (f64, f64), on: f64, off: f64, width: f64, color: Rgb) {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let len = (dx * dx + dy * dy).sqrt();
    if !(len > 0.0 && on > 0.0 && off >= 0.0) {
        return;
    }
    let (ux, uy) = (dx / len, dy / len);
    let mut t = 0.0;
    while t < len {
        let end = (t + on).min(len);
        let cap = (width / 2.0).min((end - t) / 2.0);
        c.segment(
            a.0 + ux * (t + cap),
            a.1 + uy * (t + cap),
            a.0 + ux * (end - cap),
            a.1 + uy * (end - cap),
            width,
            color,
        );
        t += on + off;
    }
}

/// `v` with at most 4 decimals and no trailing zeros.
pub fn trim_number(v: f64) -> String {
    let s = format!("{v:.4}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The x axis: a range of positive values shown on a log scale.
struct LogAxis {
    lo: f64,
    hi: f64,
}

impl LogAxis {
    /// A range from the 1-2-5 steps around the finite positive `values`
    /// (0.01..10 without any).
    fn around(values: impl Iterator<Item = f64>) -> LogAxis {
        let (mut min, mut max) = (f64::MAX, f64::MIN);
        for v in values.filter(|v| v.is_finite() && *v > 0.0) {
            min = min.min(v);
            max = max.max(v);
        }
        if min > max {
            return LogAxis { lo: 0.01, hi: 10.0 };
        }
        // Keep the extreme points off the frame.
        LogAxis {
            lo: step_125(min / 1.15, false),
            hi: step_125(max * 1.15, true),
        }
    }

    fn px(&self, v: f64) -> f64 {
        let (a, b) = (self.lo.log10(), self.hi.log10());
        LEFT + (v.log10() - a) / (b - a) * (RIGHT - LEFT)
    }

    /// Tick values: the 1-2-5 steps, all nine per decade if that gives
    /// fewer than 4, only the powers of ten if more than 12.
    fn ticks(&self) -> Vec<f64> {
        let in_range = |v: &f64| *v >= self.lo * (1.0 - 1e-9) && *v <= self.hi * (1.0 + 1e-9);
        let decades = || {
            let first = self.lo.log10().floor() as i32;
            let last = self.hi.log10().ceil() as i32;
            first..=last
        };
        let with = |mantissas: &[f64]| -> Vec<f64> {
            decades()
                .flat_map(|d| mantissas.iter().map(move |m| m * 10f64.powi(d)))
                .filter(in_range)
                .collect()
        };
        let ticks = with(&[1.0, 2.0, 5.0]);
        if ticks.len() < 4 {
            with(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
        } else if ticks.len() > 12 {
            with(&[1.0])
        } else {
            ticks
        }
    }
}

/// The 1-2-5 step at or below (`up` false) or at or above `v` > 0.
fn step_125(v: f64, up: bool) -> f64 {
    let decade = 10f64.powf(v.log10().floor());
    let m = v / decade;
    let steps = [1.0, 2.0, 5.0, 10.0];
    let pick = if up {
        steps.iter().find(|s| **s >= m * (1.0 - 1e-9))
    } else {
        steps.iter().rev().find(|s| **s <= m * (1.0 + 1e-9))
    };
    pick.copied().unwrap_or(1.0) * decade
}

/// The y axis: a linear range from 0.
struct LinearAxis {
    hi: f64,
    step: f64,
    /// Tick labels are `value * label_scale`.
    label_scale: f64,
}

impl LinearAxis {
    fn for_max(max: f64) -> LinearAxis {
        let max = if max.is_finite() && max > 0.0 {
            max
        } else {
            1.0
        };
        // About five intervals of a 1-2-5 step, at most eight.
        let mut step = step_125(max / 5.0, false);
        if max / step > 8.0 {
            step = step_125(step * 1.5, true);
        }
        let hi = (max / step - 1e-9).ceil().max(1.0) * step;
        LinearAxis {
            hi,
            step,
            label_scale: 1.0,
        }
    }

    fn px(&self, v: f64) -> f64 {
        BOTTOM - v / self.hi * (BOTTOM - TOP)
    }

    fn ticks(&self) -> Vec<f64> {
        let n = (self.hi / self.step).round() as usize;
        (0..=n).map(|i| i as f64 * self.step).collect()
    }
}

/// Lays out `chart`.
pub fn plot(chart: &Chart) -> Figure {
    let mut f = Figure {
        title: chart.title.clone(),
        items: Vec::new(),
    };
    let markers: Vec<&(f64, String)> = chart
        .markers
        .iter()
        .filter(|(x, _)| x.is_finite() && *x > 0.0)
        .collect();
    let xs = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .chain(markers.iter().map(|m| m.0));
    let x_axis = LogAxis::around(xs);
    let ys = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().filter_map(|p| p.1))
        .filter(|y| y.is_finite());
    let y_axis = match chart.y_axis {
        YAxis::Linear => LinearAxis::for_max(ys.fold(0.0, f64::max)),
        YAxis::Fraction => LinearAxis {
            hi: 1.0,
            step: 0.2,
            label_scale: 100.0,
        },
    };
    let visible_x = |x: f64| x.is_finite() && x >= x_axis.lo && x <= x_axis.hi;

    f.items.push(Item::Rect {
        x: 0.0,
        y: 0.0,
        w: WIDTH,
        h: HEIGHT,
        fill: Some(WHITE),
        stroke: None,
    });

    // Phase tints: below the first marker, between the two, above.
    if chart.phases {
        if let [(ip1, _), (ip2, _), ..] = markers.as_slice() {
            let cuts = [LEFT, x_axis.px(*ip1), x_axis.px(*ip2), RIGHT];
            for (i, tint) in PHASE_TINTS.iter().enumerate() {
                let (a, b) = (cuts[i].clamp(LEFT, RIGHT), cuts[i + 1].clamp(LEFT, RIGHT));
                if b - a < 1.0 {
                    continue;
                }
                f.items.push(Item::Rect {
                    x: a,
                    y: TOP,
                    w: b - a,
                    h: BOTTOM - TOP,
                    fill: Some(*tint),
                    stroke: None,
                });
                // Named above the frame, where no curve runs, if there is
                // room beside the markers' labels.
                if b - a >= 100.0 {
                    f.items.push(Item::Text {
                        x: (a + b) / 2.0,
                        y: LABEL_Y,
                        text: format!("phase {}", i + 1),
                        size: 11.0,
                        anchor: Anchor::Middle,
                        color: MUTED,
                        bold: false,
                        vertical: false,
                    });
                }
            }
        }
    }

    // Grid and tick labels.
    for t in x_axis.ticks() {
        let x = x_axis.px(t);
        f.line(vec![(x, TOP), (x, BOTTOM)], GRID, 1.0);
        f.line(vec![(x, BOTTOM), (x, BOTTOM + 5.0)], INK, 1.0);
        f.text(
            x,
            BOTTOM + 19.0,
            format!("{}{}", trim_number(t), chart.x_suffix),
            11.0,
            Anchor::Middle,
        );
    }
    for t in y_axis.ticks() {
        let y = y_axis.px(t);
        f.line(vec![(LEFT, y), (RIGHT, y)], GRID, 1.0);
        f.line(vec![(LEFT - 5.0, y), (LEFT, y)], INK, 1.0);
        f.text(
            LEFT - 8.0,
            y + 4.0,
            trim_number(t * y_axis.label_scale),
            11.0,
            Anchor::End,
        );
    }
    f.items.push(Item::Rect {
        x: LEFT,
        y: TOP,
        w: RIGHT - LEFT,
        h: BOTTOM - TOP,
        fill: None,
        stroke: Some(INK),
    });

    // Inflection points, labelled above the frame; of two close ones the
    // left one's label goes left of its line, the right one's right of it.
    let mut shown: Vec<(f64, &String)> = markers
        .iter()
        .filter(|m| visible_x(m.0))
        .map(|m| (x_axis.px(m.0), &m.1))
        .collect();
    shown.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut anchors = vec![(0.0, Anchor::Middle); shown.len()];
    for i in 0..shown.len() {
        let close_left = i > 0 && shown[i].0 - shown[i - 1].0 < 36.0;
        let close_right = i + 1 < shown.len() && shown[i + 1].0 - shown[i].0 < 36.0;
        anchors[i] = match (close_left, close_right) {
            (true, _) => (3.0, Anchor::Start),
            (false, true) => (-3.0, Anchor::End),
            (false, false) => (0.0, Anchor::Middle),
        };
    }
    for (&(px, label), (dx, anchor)) in shown.iter().zip(anchors) {
        f.items.push(Item::Line {
            points: vec![(px, TOP), (px, BOTTOM)],
            color: MUTED,
            width: 1.4,
            dash: Some((6.0, 4.0)),
        });
        f.items.push(Item::Text {
            x: px + dx,
            y: LABEL_Y,
            text: label.clone(),
            size: 12.0,
            anchor,
            color: INK,
            bold: true,
            vertical: false,
        });
    }

    // The series: lines broken where a value is missing, then the markers.
    for s in &chart.series {
        let mut points: Vec<(f64, Option<f64>)> = s
            .points
            .iter()
            .filter(|p| visible_x(p.0))
            .map(|&(x, y)| (x, y.filter(|v| v.is_finite())))
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let to_px = |x: f64, y: f64| (x_axis.px(x), y_axis.px(y.clamp(0.0, y_axis.hi)));
        for run in points.split(|p| p.1.is_none()) {
            let line: Vec<(f64, f64)> = run
                .iter()
                .filter_map(|&(x, y)| y.map(|y| to_px(x, y)))
                .collect();
            if line.len() >= 2 {
                f.line(line, s.color, s.width);
            }
        }
        for &(x, y) in &points {
            if let Some(y) = y {
                let (px, py) = to_px(x, y);
                f.items.push(Item::Marker {
                    x: px,
                    y: py,
                    shape: s.shape,
                    color: s.color,
                });
            }
        }
    }

    // Title and axis labels.
    // Centred over the plot, smaller and moved right if it would not fit.
    let title_chars = chart.title.chars().count().max(1) as f64;
    let title_size = fitting_size(16.0, WIDTH - 16.0, title_chars);
    let half = title_chars * EM_ADVANCE * title_size / 2.0;
    f.items.push(Item::Text {
        x: ((LEFT + RIGHT) / 2.0)
            .max(half + 8.0)
            .min(WIDTH - half - 8.0),
        y: 26.0,
        text: chart.title.clone(),
        size: title_size,
        anchor: Anchor::Middle,
        color: INK,
        bold: true,
        vertical: false,
    });
    // Centred under the plot, smaller and moved like the title if too long.
    let x_label_chars = chart.x_label.chars().count().max(1) as f64;
    let x_label_size = fitting_size(12.0, WIDTH - 16.0, x_label_chars);
    let half = x_label_chars * EM_ADVANCE * x_label_size / 2.0;
    f.text(
        ((LEFT + RIGHT) / 2.0)
            .max(half + 8.0)
            .min(WIDTH - half - 8.0),
        BOTTOM + 44.0,
        chart.x_label.clone(),
        x_label_size,
        Anchor::Middle,
    );
    f.items.push(Item::Text {
        x: 24.0,
        y: (TOP + BOTTOM) / 2.0,
        text: chart.y_label.clone(),
        size: 12.0,
        anchor: Anchor::Middle,
        color: INK,
        bold: false,
        vertical: true,
    });
    if let Some(note) = &chart.note {
        f.items.push(Item::Text {
            x: LEFT,
            y: HEIGHT - 10.0,
            text: note.clone(),
            size: 10.0,
            anchor: Anchor::Start,
            color: MUTED,
            bold: false,
            vertical: false,
        });
    }

    // Legend, right of the plot.
    let lx = RIGHT + 16.0;
    let row = 22.0;
    let n = chart.series.len() + usize::from(!markers.is_empty());
    f.items.push(Item::Rect {
        x: lx,
        y: TOP,
        w: WIDTH - lx - 8.0,
        h: row * n as f64 + 12.0,
        fill: Some(WHITE),
        stroke: Some(GRID),
    });
    let mut y = TOP + 6.0 + row / 2.0;
    for s in &chart.series {
        f.line(vec![(lx + 8.0, y), (lx + 36.0, y)], s.color, s.width);
        f.items.push(Item::Marker {
            x: lx + 22.0,
            y,
            shape: s.shape,
            color: s.color,
        });
        // Smaller when a long name would run past the legend's edge.
        let chars = s.name.chars().count().max(1) as f64;
        let size = fitting_size(11.0, WIDTH - lx - 52.0, chars);
        f.text(lx + 44.0, y + 4.0, s.name.clone(), size, Anchor::Start);
        y += row;
    }
    if !markers.is_empty() {
        f.items.push(Item::Line {
            points: vec![(lx + 8.0, y), (lx + 36.0, y)],
            color: MUTED,
            width: 1.4,
            dash: Some((6.0, 4.0)),
        });
        let names: Vec<&str> = markers.iter().map(|m| m.1.as_str()).collect();
        f.text(lx + 44.0, y + 4.0, names.join(", "), 11.0, Anchor::Start);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shrunk_text_fits_its_width_in_the_png_too() {
        assert_eq!(fitting_size(16.0, 904.0, 40.0), 16.0);
        for chars in [30.0, 80.0, 115.0, 140.0] {
            let size = fitting_size(16.0, 904.0, chars);
            let c = Canvas::new(10, 10, SUPERSAMPLE, WHITE);
            let text = "x".repeat(chars as usize);
            assert!(
                c.text_width(&text, size) <= 904.0,
                "{chars} chars at {size}"
            );
        }
    }

    #[test]
    fn log_axis_spans_the_values_on_125_steps() {
        let a = LogAxis::around([0.05, 3.0, 0.12, 0.9].into_iter());
        assert!((a.lo - 0.02).abs() < 1e-12, "{}", a.lo);
        assert!((a.hi - 5.0).abs() < 1e-12, "{}", a.hi);
        let labels: Vec<String> = a.ticks().into_iter().map(trim_number).collect();
        assert_eq!(labels, ["0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5"]);
        assert!((a.px(0.02) - LEFT).abs() < 1e-9);
        assert!((a.px(5.0) - RIGHT).abs() < 1e-9);
        // Narrow ranges get every step of the decade, no values a default.
        let narrow = LogAxis::around([0.3, 0.4].into_iter());
        assert_eq!(narrow.ticks().len(), 4);
        let none = LogAxis::around([0.0, f64::NAN].into_iter());
        assert_eq!((none.lo, none.hi), (0.01, 10.0));
    }

    #[test]
    fn linear_axis_rounds_up() {
        let a = LinearAxis::for_max(2.7);
        assert_eq!((a.hi, a.step), (3.0, 0.5));
        assert_eq!(a.ticks().len(), 7);
        let z = LinearAxis::for_max(0.0);
        assert_eq!(z.hi, 1.0);
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape("a<b & \"c\"'"), "a&lt;b &amp; &quot;c&quot;&#39;");
        assert_eq!(num(3.0), "3");
        assert_eq!(num(2.26), "2.3");
        assert_eq!(trim_number(0.050), "0.05");
        assert_eq!(trim_number(20.0), "20");
    }
}
