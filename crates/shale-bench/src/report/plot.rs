//! Charts for the bench reports, drawn with `plotters` and written twice from
//! the same drawing code: as SVG text (text kept as `<text>` elements, so a
//! browser lays it out with its own fonts) and as PNG bytes (plotters' bitmap
//! backend, encoded by the `png` crate).
//!
//! Two kinds of figure:
//! * [`LineChart`]: named series of (x, y) points against a linear or log10
//!   x and y axis, a legend right of the plot, optionally dashed vertical
//!   markers and tinted x bands (the study's inflection points and phases).
//! * [`TimeSeries`](time_series::TimeSeries): panels stacked over a shared x axis of seconds since
//!   the start (throughput, latency, CPU, ...), and under them a timeline
//!   whose lanes show events (flushes, compactions, stalls) as bars.
//!
//! Text is measured, and set in the PNG, in DejaVu Sans, whose bytes the
//! `dejavu` crate embeds in the binary (registered with plotters' `ab_glyph`
//! font table, which its axis layout measures with; the PNG's glyphs are
//! placed by the `bitmap` module): no font is read from the system and no system
//! library is linked, so a report renders the same on every machine that
//! builds shale. The SVG names DejaVu Sans first and falls back to
//! Helvetica, Arial or the viewer's sans-serif.
//!
//! Values a chart cannot place are left out, never a panic: a point whose x
//! or y is NaN or infinite, or is 0 or negative on a log axis, is not drawn
//! and the series' line breaks there; a series without points is drawn in
//! the legend only; an axis with no usable value gets a default range.

use std::fmt;
use std::ops::Range;
use std::sync::OnceLock;

use plotters::backend::{BitMapBackend, RGBPixel, SVGBackend};
use plotters::coord::cartesian::Cartesian2d;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::prelude::{
    ChartBuilder, ChartContext, Circle, Color, DrawingArea, FontDesc, FontFamily, FontStyle,
    FontTransform, IntoDrawingArea, PathElement, Polygon, RGBColor, Rectangle, Text, TextStyle,
    TRANSPARENT,
};
use plotters::style::text_anchor::{HPos, Pos, VPos};

use self::canvas::Canvas;

mod bitmap;
mod canvas;
pub mod time_series;

/// An opaque sRGB colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    fn color(self) -> RGBColor {
        RGBColor(self.0, self.1, self.2)
    }
}

/// The series colours of the reports, in the order [`Series`] without a
/// colour of its own gets them.
pub const BLUE: Rgb = Rgb(31, 119, 180);
/// Second series colour.
pub const ORANGE: Rgb = Rgb(230, 115, 15);
/// Third series colour.
pub const GREEN: Rgb = Rgb(44, 160, 44);
/// Fourth series colour.
pub const RED: Rgb = Rgb(214, 39, 40);
/// Fifth series colour.
pub const PURPLE: Rgb = Rgb(148, 103, 189);
/// Sixth series colour.
pub const BROWN: Rgb = Rgb(140, 86, 75);
/// Seventh series colour.
pub const PINK: Rgb = Rgb(227, 119, 194);
/// Eighth series colour.
pub const GRAY: Rgb = Rgb(127, 127, 127);
/// Text, axes and frames; also a series colour for totals.
pub const DARK: Rgb = Rgb(34, 34, 34);
/// The colours series get by their index when they have none.
pub const PALETTE: [Rgb; 8] = [BLUE, ORANGE, GREEN, RED, PURPLE, BROWN, PINK, GRAY];

const WHITE: Rgb = Rgb(255, 255, 255);
const GRID: Rgb = Rgb(221, 221, 221);
const MUTED: Rgb = Rgb(102, 102, 102);

/// The size of a [`LineChart`] unless it says otherwise, in pixels.
pub const CHART_SIZE: (u32, u32) = (920, 540);

/// The family the SVG names: DejaVu Sans (the PNG's font) where the viewer
/// has it, else a look-alike. Also the name the embedded font is registered
/// under, so the PNG's text measures as the SVG's is meant to.
const FONT_FAMILY: &str = "DejaVu Sans, Helvetica, Arial, sans-serif";

/// A chart that could not be drawn or encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlotError(String);

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PlotError {}

fn fail(e: impl fmt::Display) -> PlotError {
    PlotError(format!("drawing a chart: {e}"))
}

/// Registers the embedded font with plotters, once per process: plotters
/// measures tick labels with it when it lays out the axes.
fn fonts() -> Result<(), PlotError> {
    static REGISTERED: OnceLock<Result<(), PlotError>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            let bad = |style: &str| PlotError(format!("the embedded {style} font does not parse"));
            plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, dejavu::sans::regular())
                .map_err(|_| bad("regular"))?;
            plotters::style::register_font(FONT_FAMILY, FontStyle::Bold, dejavu::sans::bold())
                .map_err(|_| bad("bold"))
        })
        .clone()
}

/// How an axis maps values to positions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scale {
    /// Equal steps for equal differences; the automatic range includes 0.
    #[default]
    Linear,
    /// Equal steps for equal ratios (base 10); only values > 0 are shown.
    Log10,
}

/// One axis of a chart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Axis {
    /// The axis' name, under the x axis or along the y axis.
    pub label: String,
    /// Linear or log10.
    pub scale: Scale,
    /// The range shown; `None` (or a range that is empty, not finite or,
    /// on a log axis, not above 0) fits the values: a linear axis from 0 or
    /// the lowest value to a round number above the highest, a log axis
    /// between 1-2-5 steps around the values. Points beyond a given x range
    /// are left out; y values beyond a given y range are drawn at its edge.
    pub range: Option<(f64, f64)>,
    /// Written after each tick value: `"%"`, `" s"`.
    pub unit: String,
}

impl Axis {
    /// A linear axis with this name.
    pub fn linear(label: impl Into<String>) -> Axis {
        Axis {
            label: label.into(),
            ..Axis::default()
        }
    }

    /// A log10 axis with this name.
    pub fn log10(label: impl Into<String>) -> Axis {
        Axis {
            label: label.into(),
            scale: Scale::Log10,
            ..Axis::default()
        }
    }

    /// The same axis showing `lo..hi`.
    pub fn range(mut self, lo: f64, hi: f64) -> Axis {
        self.range = Some((lo, hi));
        self
    }

    /// The same axis with `unit` after each tick value.
    pub fn unit(mut self, unit: impl Into<String>) -> Axis {
        self.unit = unit.into();
        self
    }
}

/// How a series marks its points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A disc.
    Circle,
    /// A square.
    Square,
    /// A triangle, point up.
    Triangle,
    /// A square on its corner.
    Diamond,
}

/// A named line of (x, y) points, drawn in the order given.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The name in the legend.
    pub name: String,
    /// `None`: [`PALETTE`] by the series' index.
    pub color: Option<Rgb>,
    /// The points; those a chart cannot place are left out and break the
    /// line (see the module's documentation).
    pub points: Vec<(f64, f64)>,
    /// A marker at each point, or none.
    pub marker: Option<Shape>,
    /// Line width in pixels; 0 draws the markers alone.
    pub width: u32,
}

impl Series {
    /// A line 2 pixels wide without markers, in the palette's colour.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            color: None,
            points,
            marker: None,
            width: 2,
        }
    }

    /// The same series in `color`.
    pub fn color(mut self, color: Rgb) -> Series {
        self.color = Some(color);
        self
    }

    /// The same series with a `shape` at each point.
    pub fn marker(mut self, shape: Shape) -> Series {
        self.marker = Some(shape);
        self
    }

    /// The same series with lines `width` pixels wide.
    pub fn width(mut self, width: u32) -> Series {
        self.width = width;
        self
    }
}

/// A dashed vertical line across the plot, named above it.
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    /// Where, in x values; not drawn when outside the x range.
    pub x: f64,
    /// The name above the plot, in bold.
    pub label: String,
}

/// A tinted stretch of the x axis behind the series.
#[derive(Clone, Debug, PartialEq)]
pub struct Band {
    /// Where it starts; `None`: the left edge.
    pub from: Option<f64>,
    /// Where it ends; `None`: the right edge.
    pub to: Option<f64>,
    /// The tint.
    pub color: Rgb,
    /// Named above the plot when the band is at least 100 pixels wide.
    pub label: Option<String>,
}

/// A line chart: series against two axes, with a legend right of the plot.
#[derive(Clone, Debug, PartialEq)]
pub struct LineChart {
    /// Above the plot, in bold; smaller when it would not fit.
    pub title: String,
    /// The x axis.
    pub x: Axis,
    /// The y axis.
    pub y: Axis,
    /// The lines, in drawing order (the last on top).
    pub series: Vec<Series>,
    /// Dashed vertical lines; the legend names them together.
    pub markers: Vec<Marker>,
    /// Tinted x stretches behind the series.
    pub bands: Vec<Band>,
    /// A line of small print under the x axis.
    pub note: Option<String>,
    /// Width and height in pixels.
    pub size: (u32, u32),
}

impl LineChart {
    /// An empty chart of [`CHART_SIZE`] with this title and axes.
    pub fn new(title: impl Into<String>, x: Axis, y: Axis) -> LineChart {
        LineChart {
            title: title.into(),
            x,
            y,
            series: Vec::new(),
            markers: Vec::new(),
            bands: Vec::new(),
            note: None,
            size: CHART_SIZE,
        }
    }

    /// The chart as a standalone SVG document (no XML declaration, so that
    /// it can also be inlined into HTML as it is).
    pub fn to_svg(&self) -> Result<String, PlotError> {
        svg(self, self.size, &self.title)
    }

    /// The chart as a PNG file (8-bit RGB).
    pub fn to_png(&self) -> Result<Vec<u8>, PlotError> {
        png(self, self.size)
    }
}

type Root<'a> = DrawingArea<Canvas<'a>, Shift>;

/// Something drawn onto a whole picture, SVG or PNG.
trait Figure {
    fn draw(&self, root: &Root<'_>) -> Result<(), PlotError>;
}

impl Figure for LineChart {
    fn draw(&self, root: &Root<'_>) -> Result<(), PlotError> {
        draw_line_chart(root, self)
    }
}

/// `figure` as an SVG document of `size`, titled `title`.
fn svg(figure: &impl Figure, size: (u32, u32), title: &str) -> Result<String, PlotError> {
    fonts()?;
    let mut text = String::new();
    {
        let root = Canvas::Svg(SVGBackend::with_string(&mut text, size)).into_drawing_area();
        figure.draw(&root)?;
        root.present().map_err(fail)?;
    }
    // A <title> right after the opening tag names the picture for readers
    // and screen readers.
    if let Some(end) = text.find(">\n") {
        text.insert_str(end + 2, &format!("<title>{}</title>\n", escape(title)));
    }
    Ok(text)
}

/// `figure` drawn into an RGB bitmap of `size`, encoded as PNG.
fn png(figure: &impl Figure, size: (u32, u32)) -> Result<Vec<u8>, PlotError> {
    fonts()?;
    let (w, h) = size;
    let bytes = (w as usize)
        .checked_mul(h as usize)
        .and_then(|n| n.checked_mul(3))
        .filter(|n| *n > 0)
        .ok_or_else(|| PlotError(format!("cannot draw a {w}x{h} picture")))?;
    let mut rgb = vec![0u8; bytes];
    {
        let backend =
            BitMapBackend::<RGBPixel>::with_buffer_and_format(&mut rgb, size).map_err(fail)?;
        let root = Canvas::Png(bitmap::Png::new(backend)).into_drawing_area();
        figure.draw(&root)?;
        root.present().map_err(fail)?;
    }
    encode_png(w, h, &rgb)
}

/// Encodes 8-bit RGB rows as a PNG file.
fn encode_png(width: u32, height: u32, rgb: &[u8]) -> Result<Vec<u8>, PlotError> {
    let encoding = |e: png::EncodingError| PlotError(format!("encoding PNG: {e}"));
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::High);
    let mut writer = encoder.write_header().map_err(encoding)?;
    writer.write_image_data(rgb).map_err(encoding)?;
    writer.finish().map_err(encoding)?;
    Ok(bytes)
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

/// A tick value for people: at most four significant digits, no trailing
/// zeros, `k`, `M` and `G` from 10,000 on, exponent form below 0.0001.
pub fn tick_label(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_nan() { "-".into() } else { "0".into() };
    }
    let a = v.abs();
    if a >= 1e4 {
        for (div, suffix) in [(1e9, "G"), (1e6, "M"), (1e3, "k")] {
            if a >= div {
                return format!("{}{suffix}", tick_label(v / div));
            }
        }
    }
    if a < 1e-4 {
        return format!("{v:e}");
    }
    let decimals = (3 - a.log10().floor() as i32).clamp(0, 8) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// An axis fitted to its values: the range shown and the ticks, in values.
#[derive(Clone, Debug, PartialEq)]
struct Fitted {
    scale: Scale,
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Fitted {
    /// Whether `v` has a place on this axis' scale (not necessarily in its
    /// range).
    fn usable(scale: Scale, v: f64) -> bool {
        v.is_finite() && (scale == Scale::Linear || v > 0.0)
    }

    /// Fits `axis` to `values`; a log axis with more than `max_ticks` 1-2-5
    /// steps gets only its powers of ten.
    fn fit(axis: &Axis, values: impl Iterator<Item = f64>, max_ticks: usize) -> Fitted {
        let scale = axis.scale;
        if let Some((lo, hi)) = axis.range {
            if Fitted::usable(scale, lo) && Fitted::usable(scale, hi) && lo < hi {
                let ticks = match scale {
                    Scale::Linear => linear_ticks(lo, hi, linear_step(hi - lo)),
                    Scale::Log10 => log_ticks(lo, hi, max_ticks),
                };
                return Fitted {
                    scale,
                    lo,
                    hi,
                    ticks,
                };
            }
        }
        let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| Fitted::usable(scale, *v)) {
            min = min.min(v);
            max = max.max(v);
        }
        match scale {
            Scale::Linear => {
                let (lo, hi) = if min > max {
                    (0.0, 1.0)
                } else {
                    (min.min(0.0), max.max(0.0))
                };
                let hi = if hi > lo { hi } else { lo + 1.0 };
                let step = linear_step(hi - lo);
                let lo = (lo / step + 1e-9).floor() * step;
                let hi = ((hi / step - 1e-9).ceil() * step).max(lo + step);
                Fitted {
                    scale,
                    lo,
                    hi,
                    ticks: linear_ticks(lo, hi, step),
                }
            }
            Scale::Log10 => {
                let (lo, hi) = if min > max {
                    (0.01, 10.0)
                } else {
                    // Keep the extreme points off the frame.
                    (step_125(min / 1.15, false), step_125(max * 1.15, true))
                };
                let hi = if hi > lo { hi } else { lo * 10.0 };
                Fitted {
                    scale,
                    lo,
                    hi,
                    ticks: log_ticks(lo, hi, max_ticks),
                }
            }
        }
    }

    /// A value in plotting coordinates (log10 of it on a log axis).
    fn t(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => v,
            Scale::Log10 => v.log10(),
        }
    }

    /// A value back from plotting coordinates.
    fn value(&self, t: f64) -> f64 {
        match self.scale {
            Scale::Linear => t,
            Scale::Log10 => 10f64.powf(t),
        }
    }

    /// Whether `v` lies in the range shown.
    fn shows(&self, v: f64) -> bool {
        Fitted::usable(self.scale, v)
            && v >= self.lo - (self.hi - self.lo).abs() * 1e-9
            && v <= self.hi + (self.hi - self.lo).abs() * 1e-9
    }

    /// `v` moved into the range shown.
    fn clamp(&self, v: f64) -> f64 {
        v.clamp(self.lo, self.hi)
    }

    /// The axis as a plotters coordinate.
    fn coord(&self) -> Ticked {
        Ticked {
            lo: self.t(self.lo),
            hi: self.t(self.hi),
            ticks: self.ticks.iter().map(|v| self.t(*v)).collect(),
        }
    }

    fn label(&self, t: f64, unit: &str) -> String {
        format!("{}{unit}", tick_label(self.value(t)))
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

/// About five intervals of a 1-2-5 step over `span` > 0, at most eight.
fn linear_step(span: f64) -> f64 {
    let mut step = step_125(span / 5.0, false);
    if span / step > 8.0 {
        step = step_125(step * 1.5, true);
    }
    step
}

/// The multiples of `step` from `lo` to `hi`.
fn linear_ticks(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last.min(first + 100))
        .map(|i| {
            let v = i as f64 * step;
            // -0.0 and rounding noise such as 0.30000000000000004 read badly.
            if v.abs() < step * 1e-9 {
                0.0
            } else {
                v
            }
        })
        .collect()
}

/// Log-axis ticks: the 1-2-5 steps, all nine per decade if that gives fewer
/// than 4, only the powers of ten if more than `max`.
fn log_ticks(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    let in_range = |v: &f64| *v >= lo * (1.0 - 1e-9) && *v <= hi * (1.0 + 1e-9);
    let (first, last) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let with = |mantissas: &[f64]| -> Vec<f64> {
        (first..=last)
            .flat_map(|d| mantissas.iter().map(move |m| m * 10f64.powi(d)))
            .filter(in_range)
            .collect()
    };
    let ticks = with(&[1.0, 2.0, 5.0]);
    if ticks.len() < 4 {
        with(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
    } else if ticks.len() > max {
        with(&[1.0])
    } else {
        ticks
    }
}

/// Text of `css` CSS pixels (the size the SVG states; plotters' sizes are
/// 1.24 times that).
fn font(css: f64, bold: bool, color: Rgb, h: HPos, v: VPos) -> TextStyle<'static> {
    let style = if bold {
        FontStyle::Bold
    } else {
        FontStyle::Normal
    };
    TextStyle {
        font: FontDesc::new(FontFamily::Name(FONT_FAMILY), css * 1.24, style),
        color: color.color().to_backend_color(),
        pos: Pos::new(h, v),
    }
}

/// `text` at (x, y), anchored there by `style`.
fn text(
    root: &Root<'_>,
    text: &str,
    (x, y): (i32, i32),
    style: &TextStyle<'_>,
) -> Result<(), PlotError> {
    if text.is_empty() {
        return Ok(());
    }
    root.draw(&Text::new(text.to_string(), (x, y), style.clone()))
        .map_err(fail)
}

/// The width `text` takes in `style`, in pixels, measured with the embedded
/// font whatever the backend, so that the SVG and the PNG make the same
/// layout decisions.
fn text_width(text: &str, style: &TextStyle<'_>) -> Result<i32, PlotError> {
    let css = style.font.get_size() / 1.24;
    let bold = matches!(style.font.get_style(), FontStyle::Bold);
    let w = bitmap::measure(text, css, bold)?.ceil();
    // Saturates: no text is 2^31 pixels wide.
    Ok(w.min(f64::from(i32::MAX)) as i32)
}

/// The largest size up to `max` (CSS pixels, down to 7) at which `text`
/// fits in `width` pixels.
fn fitting_size(text: &str, max: f64, bold: bool, width: i32) -> Result<f64, PlotError> {
    let mut size = max;
    while size > 7.0 {
        let style = font(size, bold, DARK, HPos::Left, VPos::Center);
        if text_width(text, &style)? <= width {
            break;
        }
        size -= 0.5;
    }
    Ok(size)
}

/// A straight line between pixel positions.
fn segment(
    root: &Root<'_>,
    points: Vec<(i32, i32)>,
    color: Rgb,
    width: u32,
) -> Result<(), PlotError> {
    root.draw(&PathElement::new(points, color.color().stroke_width(width)))
        .map_err(fail)
}

/// A dashed line between two pixel positions: 6 on, 4 off.
fn dashed(
    root: &Root<'_>,
    (ax, ay): (i32, i32),
    (bx, by): (i32, i32),
    color: Rgb,
) -> Result<(), PlotError> {
    let (dx, dy) = (f64::from(bx - ax), f64::from(by - ay));
    let len = (dx * dx + dy * dy).sqrt();
    if len < 1.0 {
        return Ok(());
    }
    let at = |d: f64| {
        (
            ax + (dx * d / len).round() as i32,
            ay + (dy * d / len).round() as i32,
        )
    };
    let mut d = 0.0;
    while d < len {
        segment(root, vec![at(d), at((d + 6.0).min(len))], color, 1)?;
        d += 10.0;
    }
    Ok(())
}

/// A point marker centred on a pixel position.
fn marker(root: &Root<'_>, (x, y): (i32, i32), shape: Shape, color: Rgb) -> Result<(), PlotError> {
    let fill = color.color().filled();
    let r = 4;
    match shape {
        Shape::Circle => root.draw(&Circle::new((x, y), r, fill)),
        Shape::Square => root.draw(&Rectangle::new([(x - r, y - r), (x + r, y + r)], fill)),
        Shape::Triangle => root.draw(&Polygon::new(
            vec![(x, y - 5), (x + 5, y + 4), (x - 5, y + 4)],
            fill,
        )),
        Shape::Diamond => root.draw(&Polygon::new(
            vec![(x, y - 5), (x + 5, y), (x, y + 5), (x - 5, y)],
            fill,
        )),
    }
    .map_err(fail)
}

/// Where a plot's frame lies in the picture, in pixels.
#[derive(Clone, Copy, Debug)]
struct Frame {
    left: i32,
    right: i32,
    top: i32,
    bottom: i32,
}

/// Width of the legend column right of a plot.
const LEGEND_WIDTH: i32 = 214;

/// A plotting coordinate (a value, or its log10 on a log axis) between `lo`
/// and `hi`, with grid lines and tick labels at `ticks`.
#[derive(Clone, Debug)]
struct Ticked {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ranged for Ticked {
    // The labels are always formatted by the chart's own formatters.
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, (from, to): (i32, i32)) -> i32 {
        let share = (value - self.lo) / (self.hi - self.lo);
        let at = f64::from(from) + share * f64::from(to - from);
        // Out-of-range and non-finite values never reach here (the chart
        // leaves them out); saturate all the same.
        at.round()
            .clamp(f64::from(i32::MIN / 2), f64::from(i32::MAX / 2)) as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        // Grid lines at the ticks only, none between them.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

type Chart<'a, 'b> = ChartContext<'a, Canvas<'b>, Cartesian2d<Ticked, Ticked>>;

/// A chart whose plotting area is `frame`, with `x` and `y`, tinted
/// `bands` under the grid, and tick labels on the x axis if `x_ticks`.
#[allow(clippy::too_many_arguments)]
fn plot_area<'a, 'b>(
    root: &'a Root<'b>,
    frame: Frame,
    (x, x_unit): (&Fitted, &str),
    (y, y_unit): (&Fitted, &str),
    x_ticks: bool,
    y_labels: Option<&dyn Fn(f64) -> String>,
    y_grid: bool,
    bands: &[Band],
) -> Result<Chart<'a, 'b>, PlotError> {
    let (w, h) = root.dim_in_pixel();
    let (w, h) = (w as i32, h as i32);
    let x_area = if x_ticks {
        (h - frame.bottom).max(0)
    } else {
        0
    };
    let mut chart = ChartBuilder::on(root)
        .margin_top(frame.top.max(0) as u32)
        .margin_right((w - frame.right).max(0) as u32)
        .margin_bottom((h - frame.bottom - x_area).max(0) as u32)
        .x_label_area_size(x_area as u32)
        .y_label_area_size(frame.left.max(0) as u32)
        .build_cartesian_2d(x.coord(), y.coord())
        .map_err(fail)?;
    for band in bands {
        let from = band.from.filter(|v| x.shows(*v)).unwrap_or(x.lo);
        let to = band.to.filter(|v| x.shows(*v)).unwrap_or(x.hi);
        if from < to {
            chart
                .plotting_area()
                .draw(&Rectangle::new(
                    [(x.t(from), y.t(y.lo)), (x.t(to), y.t(y.hi))],
                    band.color.color().filled(),
                ))
                .map_err(fail)?;
        }
    }
    let x_label = |t: &f64| x.label(*t, x_unit);
    let y_label = |t: &f64| match y_labels {
        Some(f) => f(*t),
        None => y.label(*t, y_unit),
    };
    let mut mesh = chart.configure_mesh();
    // The axis lines and tick marks are the frame's (see `outline`): drawn
    // here in no colour (which no backend writes), the tick size still sets
    // how far from the frame the labels go.
    mesh.bold_line_style(GRID.color().stroke_width(1))
        .light_line_style(TRANSPARENT)
        .axis_style(TRANSPARENT)
        .set_all_tick_mark_size(5)
        .label_style(font(11.0, false, DARK, HPos::Center, VPos::Center))
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label);
    if !y_grid {
        mesh.disable_y_mesh();
    }
    mesh.draw().map_err(fail)?;
    Ok(chart)
}

/// A series' points in pixels, split where a point cannot be shown: runs
/// of consecutive drawable points.
fn pixel_runs(
    chart: &Chart<'_, '_>,
    x: &Fitted,
    y: &Fitted,
    points: &[(f64, f64)],
) -> Vec<Vec<(i32, i32)>> {
    let mut runs = vec![Vec::new()];
    for &(px, py) in points {
        if x.shows(px) && Fitted::usable(y.scale, py) {
            let at = chart.backend_coord(&(x.t(px), y.t(y.clamp(py))));
            if let Some(run) = runs.last_mut() {
                run.push(at);
            }
        } else if runs.last().is_some_and(|r| !r.is_empty()) {
            runs.push(Vec::new());
        }
    }
    runs.retain(|r| !r.is_empty());
    runs
}

/// Draws `series` into `chart`: the lines, then the markers on top.
fn draw_series(
    root: &Root<'_>,
    chart: &Chart<'_, '_>,
    x: &Fitted,
    y: &Fitted,
    series: &[Series],
) -> Result<(), PlotError> {
    for (i, s) in series.iter().enumerate() {
        let color = series_color(s, i);
        let runs = pixel_runs(chart, x, y, &s.points);
        if s.width > 0 {
            for run in runs.iter().filter(|r| r.len() >= 2) {
                segment(root, run.clone(), color, s.width)?;
            }
        }
        // A point alone, or a series without a line, still shows.
        let shape = s
            .marker
            .or((s.width == 0 || runs.iter().any(|r| r.len() == 1)).then_some(Shape::Circle));
        if let Some(shape) = shape {
            for run in &runs {
                if s.marker.is_some() || s.width == 0 || run.len() == 1 {
                    for &at in run {
                        marker(root, at, shape, color)?;
                    }
                }
            }
        }
    }
    Ok(())
}

fn series_color(s: &Series, index: usize) -> Rgb {
    s.color.unwrap_or(PALETTE[index % PALETTE.len()])
}

/// The frame over the series' ends, through the ends of both axes (so
/// that the grid lines at the ends fall on it), and tick marks out of it:
/// under the x axis if `x_ticks`, left of the y axis always.
fn outline(
    root: &Root<'_>,
    chart: &Chart<'_, '_>,
    (x, y): (&Fitted, &Fitted),
    x_ticks: bool,
) -> Result<(), PlotError> {
    let (left, bottom) = chart.backend_coord(&(x.t(x.lo), y.t(y.lo)));
    let (right, top) = chart.backend_coord(&(x.t(x.hi), y.t(y.hi)));
    root.draw(&Rectangle::new(
        [(left, top), (right, bottom)],
        DARK.color().stroke_width(1),
    ))
    .map_err(fail)?;
    if x_ticks {
        for t in &x.ticks {
            let (px, _) = chart.backend_coord(&(x.t(*t), y.t(y.lo)));
            segment(root, vec![(px, bottom), (px, bottom + 5)], DARK, 1)?;
        }
    }
    for t in &y.ticks {
        let (_, py) = chart.backend_coord(&(x.t(x.lo), y.t(*t)));
        segment(root, vec![(left - 5, py), (left, py)], DARK, 1)?;
    }
    Ok(())
}

/// The legend right of a plot: a row per series, then one for the markers.
fn legend(
    root: &Root<'_>,
    (left, top): (i32, i32),
    series: &[Series],
    markers: &[&Marker],
) -> Result<(), PlotError> {
    let (w, _) = root.dim_in_pixel();
    let right = w as i32 - 8;
    let row = 22;
    let rows = series.len() as i32 + i32::from(!markers.is_empty());
    if rows == 0 {
        return Ok(());
    }
    root.draw(&Rectangle::new(
        [(left, top), (right, top + row * rows + 12)],
        WHITE.color().filled(),
    ))
    .map_err(fail)?;
    root.draw(&Rectangle::new(
        [(left, top), (right, top + row * rows + 12)],
        GRID.color().stroke_width(1),
    ))
    .map_err(fail)?;
    let mut y = top + 6 + row / 2;
    let room = right - left - 52;
    for (i, s) in series.iter().enumerate() {
        let color = series_color(s, i);
        if s.width > 0 {
            segment(root, vec![(left + 8, y), (left + 36, y)], color, s.width)?;
        }
        if let Some(shape) = s.marker.or((s.width == 0).then_some(Shape::Circle)) {
            marker(root, (left + 22, y), shape, color)?;
        }
        // Smaller when a long name would run past the legend's edge.
        let size = fitting_size(&s.name, 11.0, false, room)?;
        let style = font(size, false, DARK, HPos::Left, VPos::Center);
        text(root, &s.name, (left + 44, y), &style)?;
        y += row;
    }
    if !markers.is_empty() {
        dashed(root, (left + 8, y), (left + 36, y), MUTED)?;
        let names: Vec<&str> = markers.iter().map(|m| m.label.as_str()).collect();
        let names = names.join(", ");
        let size = fitting_size(&names, 11.0, false, room)?;
        let style = font(size, false, DARK, HPos::Left, VPos::Center);
        text(root, &names, (left + 44, y), &style)?;
    }
    Ok(())
}

/// The title, centred over the plot, smaller and moved right if it would
/// not fit.
fn title(root: &Root<'_>, title: &str, frame: Frame, y: i32) -> Result<(), PlotError> {
    let (w, _) = root.dim_in_pixel();
    let w = w as i32;
    let size = fitting_size(title, 16.0, true, w - 16)?;
    let style = font(size, true, DARK, HPos::Center, VPos::Center);
    let half = text_width(title, &style)? / 2;
    let x = ((frame.left + frame.right) / 2)
        .max(half + 8)
        .min(w - half - 8);
    text(root, title, (x, y), &style)
}

/// An axis' name under the x axis, centred and shrunk like the title.
fn x_name(root: &Root<'_>, name: &str, frame: Frame, y: i32) -> Result<(), PlotError> {
    let (w, _) = root.dim_in_pixel();
    let w = w as i32;
    let size = fitting_size(name, 12.0, false, w - 16)?;
    let style = font(size, false, DARK, HPos::Center, VPos::Center);
    let half = text_width(name, &style)? / 2;
    let x = ((frame.left + frame.right) / 2)
        .max(half + 8)
        .min(w - half - 8);
    text(root, name, (x, y), &style)
}

/// An axis' name along the y axis, reading upwards, centred on the frame,
/// left of tick labels `widest` pixels wide.
fn y_name(root: &Root<'_>, name: &str, frame: Frame, widest: i32) -> Result<(), PlotError> {
    let size = fitting_size(name, 12.0, false, frame.bottom - frame.top)?;
    let style =
        font(size, false, DARK, HPos::Center, VPos::Center).transform(FontTransform::Rotate270);
    let x = (frame.left - widest - 24).max(12);
    text(root, name, (x, (frame.top + frame.bottom) / 2), &style)
}

/// The width of the widest of `labels` as tick labels.
fn widest(labels: impl Iterator<Item = String>) -> Result<i32, PlotError> {
    let style = font(11.0, false, DARK, HPos::Left, VPos::Center);
    let mut widest = 0;
    for label in labels {
        widest = widest.max(text_width(&label, &style)?);
    }
    Ok(widest)
}

/// The left edge of a frame whose widest tick label is `widest` pixels:
/// room for it and the y axis' name left of it.
fn frame_left(widest: i32) -> i32 {
    (widest + 44).max(72)
}

fn draw_line_chart(root: &Root<'_>, c: &LineChart) -> Result<(), PlotError> {
    root.fill(&WHITE.color()).map_err(fail)?;
    let (w, h) = root.dim_in_pixel();
    let (w, h) = (w as i32, h as i32);
    let x = Fitted::fit(
        &c.x,
        c.series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .chain(c.markers.iter().map(|m| m.x)),
        12,
    );
    let y = Fitted::fit(
        &c.y,
        c.series
            .iter()
            .flat_map(|s| s.points.iter().filter(|p| x.shows(p.0)).map(|p| p.1)),
        12,
    );
    let markers: Vec<&Marker> = c.markers.iter().filter(|m| x.shows(m.x)).collect();
    let has_legend = !c.series.is_empty() || !markers.is_empty();
    let y_widest = widest(y.ticks.iter().map(|v| y.label(y.t(*v), &c.y.unit)))?;
    let frame = Frame {
        left: frame_left(y_widest),
        right: if has_legend {
            w - LEGEND_WIDTH - 16
        } else {
            w - 24
        },
        top: 50,
        bottom: h - 78,
    };
    let chart = plot_area(
        root,
        frame,
        (&x, &c.x.unit),
        (&y, &c.y.unit),
        true,
        None,
        true,
        &c.bands,
    )?;
    let label_y = frame.top - 10;

    // Band names above the frame, where no line runs.
    for band in &c.bands {
        let Some(label) = &band.label else { continue };
        let from = band.from.filter(|v| x.shows(*v)).unwrap_or(x.lo);
        let to = band.to.filter(|v| x.shows(*v)).unwrap_or(x.hi);
        let (a, b) = (
            chart.backend_coord(&(x.t(from), y.t(y.hi))).0,
            chart.backend_coord(&(x.t(to), y.t(y.hi))).0,
        );
        if b - a >= 100 {
            let style = font(11.0, false, MUTED, HPos::Center, VPos::Center);
            text(root, label, ((a + b) / 2, label_y), &style)?;
        }
    }

    // Markers, named above the frame; of two close ones the left one's name
    // goes left of its line, the right one's right of it.
    let mut shown: Vec<(i32, &str)> = markers
        .iter()
        .map(|m| {
            (
                chart.backend_coord(&(x.t(m.x), y.t(y.hi))).0,
                m.label.as_str(),
            )
        })
        .collect();
    shown.sort_by_key(|m| m.0);
    for (i, &(px, label)) in shown.iter().enumerate() {
        dashed(root, (px, frame.top), (px, frame.bottom), MUTED)?;
        let close_left = i > 0 && px - shown[i - 1].0 < 36;
        let close_right = i + 1 < shown.len() && shown[i + 1].0 - px < 36;
        let (dx, anchor) = match (close_left, close_right) {
            (true, _) => (3, HPos::Left),
            (false, true) => (-3, HPos::Right),
            (false, false) => (0, HPos::Center),
        };
        let style = font(12.0, true, DARK, anchor, VPos::Center);
        text(root, label, (px + dx, label_y), &style)?;
    }

    draw_series(root, &chart, &x, &y, &c.series)?;
    outline(root, &chart, (&x, &y), true)?;

    title(root, &c.title, frame, 22)?;
    x_name(root, &c.x.label, frame, frame.bottom + 44)?;
    y_name(root, &c.y.label, frame, y_widest)?;
    if let Some(note) = &c.note {
        let style = font(10.0, false, MUTED, HPos::Left, VPos::Center);
        text(root, note, (frame.left, h - 12), &style)?;
    }
    if has_legend {
        legend(root, (frame.right + 16, frame.top), &c.series, &markers)?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) fn decode(bytes: &[u8]) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("png header");
    let mut buf = vec![0; reader.output_buffer_size().expect("buffer size")];
    let info = reader.next_frame(&mut buf).expect("png frame");
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

/// The text of every `<text>` element of an SVG document, trimmed, with
/// the character references of [`escape`] (and XML's `&apos;`) resolved.
#[cfg(test)]
pub(crate) fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let start = t.find('>')? + 1;
            let end = t.find("</text>")?;
            let text = t[start..end]
                .trim()
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&#39;", "'")
                .replace("&amp;", "&");
            Some(text)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_chart() -> LineChart {
        let mut c = LineChart::new(
            "Throughput <by> threads",
            Axis::log10("threads").unit(" thr"),
            Axis::linear("ops/s"),
        );
        c.series = vec![
            Series::new("shale", vec![(1.0, 1000.0), (2.0, 1900.0), (4.0, 3500.0)])
                .marker(Shape::Circle)
                .width(3),
            Series::new("rocksdb", vec![(1.0, 900.0), (2.0, 1500.0), (4.0, 2000.0)])
                .marker(Shape::Diamond),
        ];
        c.markers = vec![Marker {
            x: 2.0,
            label: "cores".into(),
        }];
        c.note = Some("a note".into());
        c
    }

    #[test]
    fn line_chart_renders_to_svg_and_png() {
        let c = sample_chart();
        let svg = c.to_svg().expect("svg");
        assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("<title>Throughput &lt;by&gt; threads</title>"));
        let texts = svg_texts(&svg);
        for want in [
            "Throughput <by> threads",
            "threads",
            "ops/s",
            "shale",
            "rocksdb",
            "cores",
            "a note",
            "1 thr",
            "2 thr",
        ] {
            assert!(texts.iter().any(|t| t == want), "{want} in {texts:?}");
        }
        assert!(svg.contains(FONT_FAMILY));

        let (w, h, rgb) = decode(&c.to_png().expect("png"));
        assert_eq!((w, h), CHART_SIZE);
        let pixels: Vec<&[u8]> = rgb.chunks_exact(3).collect();
        // Not blank: the first series' colour, and text (dark pixels).
        assert!(pixels.iter().any(|p| *p == [31, 119, 180]));
        assert!(pixels.iter().any(|p| *p == [34, 34, 34]));
        let background = pixels.iter().filter(|p| **p == [255, 255, 255]).count();
        assert!(background > pixels.len() / 2 && background < pixels.len());
    }

    #[test]
    fn unplaceable_points_are_skipped() {
        let bad = vec![
            (f64::NAN, 1.0),
            (1.0, f64::INFINITY),
            (0.0, 5.0),
            (-1.0, 2.0),
            (2.0, 0.0),
            (3.0, f64::NEG_INFINITY),
        ];
        for (xs, ys) in [
            (Scale::Log10, Scale::Log10),
            (Scale::Linear, Scale::Log10),
            (Scale::Log10, Scale::Linear),
            (Scale::Linear, Scale::Linear),
        ] {
            let mut c = LineChart::new(
                "bad points",
                Axis {
                    scale: xs,
                    ..Axis::default()
                },
                Axis {
                    scale: ys,
                    ..Axis::default()
                },
            );
            c.series = vec![
                Series::new("bad", bad.clone()).marker(Shape::Triangle),
                Series::new("empty", Vec::new()),
                Series::new("one", vec![(5.0, 5.0)]),
            ];
            c.markers = vec![Marker {
                x: f64::NAN,
                label: "nowhere".into(),
            }];
            c.bands = vec![Band {
                from: Some(f64::NAN),
                to: None,
                color: GRID,
                label: Some("all".into()),
            }];
            let svg = c.to_svg().expect("svg");
            assert!(svg_texts(&svg).iter().any(|t| t == "empty"));
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
            let (w, h, _) = decode(&c.to_png().expect("png"));
            assert_eq!((w, h), CHART_SIZE);
        }
        // Ranges that cannot be shown fall back to fitting the values.
        let mut c = LineChart::new(
            "",
            Axis::log10("x").range(0.0, 10.0),
            Axis::linear("y").range(5.0, 5.0),
        );
        c.series = vec![Series::new("s", vec![(1.0, 1.0), (10.0, 2.0)])];
        c.to_png().expect("png");
    }

    #[test]
    fn axes_fit_their_values() {
        let log = Fitted::fit(&Axis::log10("x"), [0.05, 3.0, 0.12, 0.9].into_iter(), 12);
        assert!((log.lo - 0.02).abs() < 1e-12, "{}", log.lo);
        assert!((log.hi - 5.0).abs() < 1e-12, "{}", log.hi);
        let labels: Vec<String> = log.ticks.iter().map(|v| tick_label(*v)).collect();
        assert_eq!(labels, ["0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5"]);
        // Narrow ranges get every step of the decade; no values, a default.
        let narrow = Fitted::fit(&Axis::log10("x"), [0.3, 0.4].into_iter(), 12);
        assert_eq!(narrow.ticks.len(), 4);
        let none = Fitted::fit(&Axis::log10("x"), [0.0, f64::NAN].into_iter(), 12);
        assert_eq!((none.lo, none.hi), (0.01, 10.0));

        let lin = Fitted::fit(&Axis::linear("y"), [2.7, 1.0].into_iter(), 12);
        assert_eq!((lin.lo, lin.hi), (0.0, 3.0));
        assert_eq!(lin.ticks.len(), 7);
        let zero = Fitted::fit(&Axis::linear("y"), [0.0].into_iter(), 12);
        assert_eq!((zero.lo, zero.hi), (0.0, 1.0));
        let neg = Fitted::fit(&Axis::linear("y"), [-3.0, 7.0].into_iter(), 12);
        assert_eq!((neg.lo, neg.hi), (-4.0, 8.0));
        assert!(neg.ticks.contains(&0.0));
        let fixed = Fitted::fit(&Axis::linear("y").range(0.0, 100.0), std::iter::empty(), 12);
        assert_eq!(fixed.ticks, [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
    }

    #[test]
    fn tick_labels_read_well() {
        assert_eq!(tick_label(0.0), "0");
        assert_eq!(tick_label(0.0001), "0.0001");
        assert_eq!(tick_label(0.00005), "5e-5");
        assert_eq!(tick_label(0.30000000000000004), "0.3");
        assert_eq!(tick_label(2.5), "2.5");
        assert_eq!(tick_label(100.0), "100");
        assert_eq!(tick_label(20_000.0), "20k");
        assert_eq!(tick_label(1_500_000.0), "1.5M");
        assert_eq!(tick_label(-2_000.0), "-2000");
        assert_eq!(escape("a<b & \"c\"'"), "a&lt;b &amp; &quot;c&quot;&#39;");
    }

    #[test]
    fn long_text_shrinks_to_fit() {
        let mut c = sample_chart();
        c.title = "a title far too long for one line at sixteen pixels, ".repeat(3);
        c.series[0].name = "a series name much longer than the legend".into();
        let (w, h, rgb) = decode(&c.to_png().expect("png"));
        let (w, h) = (w as usize, h as usize);
        let dark = |x: usize, y: usize| {
            let i = (y * w + x) * 3;
            rgb[i..i + 3].iter().all(|c| *c < 128)
        };
        // The title's band: ink, but none in the 6 pixels at either edge.
        let title_rows = 8..36;
        assert!(title_rows.clone().any(|y| (0..w).any(|x| dark(x, y))));
        for y in title_rows {
            for x in (0..6).chain(w - 6..w) {
                assert!(!dark(x, y), "title ink at ({x}, {y})");
            }
        }
        // Nothing dark in the legend's last 8 pixels (right of its frame).
        for y in 0..h {
            for x in w - 7..w {
                assert!(!dark(x, y), "ink at ({x}, {y})");
            }
        }
        // The SVG shrinks the same text the same way.
        let svg = c.to_svg().expect("svg");
        let title = svg
            .split("<text")
            .find(|t| t.contains("a title far too long"))
            .expect("the title");
        assert!(!title.contains("font-size=\"16\""), "{title}");
    }
}
