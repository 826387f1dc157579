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
//! Plotters lays them out: `ChartBuilder` sizes the label areas, the title
//! is a titled drawing area, `configure_mesh` picks the ticks (1-2-5 steps
//! on a linear axis; powers of ten, and their multiples when there is room,
//! on a `log_scale()` one) and draws the grid, the tick labels and the axis
//! names, `configure_series_labels` draws the legend, and `LineSeries`,
//! `PointSeries` and `DashedLineSeries` the lines, point markers and the
//! dashed markers. What is ours is what plotters has no notion of, each
//! said where it is: the tick labels' number format ([`tick_label`]), the
//! range an axis fits to its values, shrinking a title or legend to its
//! room, the names above the plot, the timeline's bars, and the PNG's text
//! (`bitmap`).
//!
//! Text is measured, and set in the PNG, in DejaVu Sans, whose bytes the
//! `dejavu` crate embeds in the binary (registered with plotters' `ab_glyph`
//! font table, which its layout measures the SVG's text with; the PNG's
//! glyphs are placed and measured by the `bitmap` module): no font is read
//! from the system and no system library is linked, so a report renders the
//! same on every machine that builds shale. The SVG names DejaVu Sans first
//! and falls back to Helvetica, Arial or the viewer's sans-serif.
//!
//! Values a chart cannot place are left out, never a panic: a point whose x
//! or y is NaN or infinite, or is 0 or negative on a log axis, is not drawn
//! and the series' line breaks there; a series without points is drawn in
//! the legend only; an axis with no usable value gets a default range.

use std::fmt;
use std::ops::Range;
use std::sync::OnceLock;

use plotters::backend::{BitMapBackend, DrawingBackend, RGBPixel, SVGBackend};
use plotters::chart::{ChartContext, SeriesLabelPosition};
use plotters::coord::cartesian::Cartesian2d;
use plotters::coord::combinators::{IntoLogRange, LogCoord};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::{
    ChartBuilder, Color, DrawingArea, EmptyElement, FontDesc, FontFamily, FontStyle,
    IntoDrawingArea, PathElement, Polygon, RGBColor, Rectangle, Text, TextStyle, TRANSPARENT,
};
use plotters::series::{DashedLineSeries, LineSeries, PointSeries};
use plotters::style::text_anchor::{HPos, Pos, VPos};

mod bitmap;
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
const LIGHT_GRID: Rgb = Rgb(240, 240, 240);
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
    /// the lowest value to the highest (a y axis to a little above it), a
    /// log axis between the powers of ten around them. Points beyond a
    /// given x range are left out; y values beyond a given y range are
    /// drawn at its edge.
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

type Area<DB> = DrawingArea<DB, Shift>;

/// A chart whose x axis is `Coord` and whose y axis is `Y`.
type Chart<'a, DB, Y = Coord> = ChartContext<'a, DB, Cartesian2d<Coord, Y>>;

/// Something drawn onto a whole picture, SVG or PNG.
trait Figure {
    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Result<(), PlotError>;
}

impl Figure for LineChart {
    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Result<(), PlotError> {
        draw_line_chart(root, self)
    }
}

/// `figure` as an SVG document of `size`, titled `title`.
fn svg(figure: &impl Figure, size: (u32, u32), title: &str) -> Result<String, PlotError> {
    fonts()?;
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
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
        let root = bitmap::Png::new(backend).into_drawing_area();
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

/// Whether `v` has a place on an axis of `scale` (not necessarily in its
/// range).
/// Values beyond a quarter of `f64::MAX` are not: a range between two of
/// them would be wider than any `f64`.
fn usable(scale: Scale, v: f64) -> bool {
    v.is_finite() && v.abs() <= f64::MAX / 4.0 && (scale == Scale::Linear || v > 0.0)
}

/// Whether `v` lies in `range` on an axis of `scale`.
fn shows(scale: Scale, range: &Range<f64>, v: f64) -> bool {
    let slack = (range.end - range.start).abs() * 1e-9;
    usable(scale, v) && v >= range.start - slack && v <= range.end + slack
}

/// The range `axis` shows for `values`. Ours: plotters takes a range and
/// fits no values. Its own range when that can be shown; else a linear axis
/// from 0 (or the lowest value) to the highest, 5% above it with
/// `headroom`, a log axis between the 1-2-5 steps just beyond the values
/// (so that at least its two ends are labelled); with no usable value, 0..1
/// or 0.01..10.
fn fit(axis: &Axis, values: impl Iterator<Item = f64>, headroom: bool) -> Range<f64> {
    let scale = axis.scale;
    // Plotters' log ticks never end for a range whose ends' ratio is not
    // a finite number: a log axis shows at most 300 decades, the top ones.
    let limit = |r: Range<f64>| match scale {
        Scale::Linear => r,
        Scale::Log10 => r.start.max(r.end / 1e300)..r.end,
    };
    if let Some((lo, hi)) = axis.range {
        if usable(scale, lo) && usable(scale, hi) && lo < hi {
            return limit(lo..hi);
        }
    }
    let (min, max) = values
        .filter(|v| usable(scale, *v))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    match scale {
        _ if min > max => match scale {
            Scale::Linear => 0.0..1.0,
            Scale::Log10 => 0.01..10.0,
        },
        Scale::Linear => {
            let (lo, hi) = (min.min(0.0), max.max(0.0));
            let pad = if headroom { (hi - lo) * 0.05 } else { 0.0 };
            match (lo < 0.0, hi > 0.0) {
                (false, false) => 0.0..1.0,
                (true, false) => lo - pad..0.0,
                (false, true) => 0.0..hi + pad,
                (true, true) => lo - pad..hi + pad,
            }
        }
        Scale::Log10 => {
            let (lo, hi) = (step_125(min, false), step_125(max, true));
            limit(lo..if hi > lo { hi } else { lo * 10.0 })
        }
    }
}

/// The 1-2-5 step (1, 2 or 5 times a power of ten) next below `v` (`up`:
/// next above), never `v` itself, so that no point sits on the frame: a
/// log axis ends on a labelled step just beyond its values.
fn step_125(v: f64, up: bool) -> f64 {
    let decade = v.log10().clamp(-300.0, 300.0).floor() as i32;
    let steps = (decade - 1..=decade + 1).flat_map(|d| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(d)));
    if up {
        steps
            .filter(|s| *s > v * (1.0 + 1e-9))
            .fold(f64::INFINITY, f64::min)
    } else {
        steps
            .filter(|s| *s < v * (1.0 - 1e-9))
            .fold(f64::NEG_INFINITY, f64::max)
    }
}

/// Every step `m * 10^d` (`m` of 1 to 9) from `lo` to `hi`, both positive.
fn log_steps(lo: f64, hi: f64) -> Vec<f64> {
    let first = lo.log10().clamp(-300.0, 300.0).floor() as i32;
    let last = hi.log10().clamp(-300.0, 300.0).ceil() as i32;
    (first..=last)
        .flat_map(|d| (1..=9).map(move |m| f64::from(m) * 10f64.powi(d)))
        .filter(|v| *v >= lo && *v <= hi)
        .collect()
}

/// An axis as plotters sees it: plotters' own linear or `log_scale()`
/// coordinate, chosen at run time. Ours only because a plotters chart's
/// coordinate type is fixed when it is compiled: this lets one chart type
/// serve both scales, every call passed on to plotters'.
enum Coord {
    Linear(RangedCoordf64),
    Log(LogCoord<f64>),
}

impl Coord {
    fn new(scale: Scale, range: Range<f64>) -> Coord {
        match scale {
            Scale::Linear => Coord::Linear(range.into()),
            // Plotters' log ticks are found by rounding from the range's
            // ends, which can lose a power of ten right at an end: the
            // range reaches a hair beyond both.
            Scale::Log10 => {
                let wider = range.start * (1.0 - 1e-9)..range.end * (1.0 + 1e-9);
                Coord::Log(wider.log_scale().into())
            }
        }
    }
}

impl Ranged for Coord {
    // The labels are always formatted by the chart's own formatters.
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        match self {
            Coord::Linear(c) => c.map(value, limit),
            Coord::Log(c) => c.map(value, limit),
        }
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        match self {
            Coord::Linear(c) => c.key_points(hint),
            Coord::Log(c) => {
                // Every step of each decade when that many points are asked
                // for: ours, as plotters' steps leave out those below the
                // first power of ten in the range (0.02 and 0.05 of
                // 0.02..5) and give each power twice.
                let range = c.range();
                let steps = log_steps(range.start, range.end);
                if steps.len() <= hint.max_num_points() {
                    return steps;
                }
                let mut points = c.key_points(hint);
                points.dedup_by(|a, b| (*a / *b - 1.0).abs() < 1e-9);
                points
            }
        }
    }

    fn range(&self) -> Range<f64> {
        match self {
            Coord::Linear(c) => c.range(),
            Coord::Log(c) => c.range(),
        }
    }
}

/// How many tick labels to ask plotters for on an axis of `scale` over
/// `range` (`n` on a linear one), and how many light lines between them.
/// Plotters marks a log axis' powers of ten, or every step of each decade
/// when asked for enough labels: the steps where the axis spans at most
/// `max_decades` (their labels thinned to 1-2-5 by [`labelled`]), else
/// the powers, with light lines at the steps between.
fn ticks(scale: Scale, range: &Range<f64>, n: usize, max_decades: usize) -> (usize, usize) {
    if scale == Scale::Linear {
        return (n, 0);
    }
    let decades = (range.end / range.start).log10().ceil().max(1.0) as usize;
    if decades <= max_decades {
        (10 * decades, 0)
    } else {
        (n, 10)
    }
}

/// Whether a tick at `v` on an axis of `scale` is labelled: on a log axis
/// only the 1, 2 and 5 steps of a decade are, as the others crowd.
fn labelled(scale: Scale, v: f64) -> bool {
    let step = v / 10f64.powf(v.log10().floor());
    scale == Scale::Linear
        || [1.0, 2.0, 5.0, 10.0]
            .iter()
            .any(|s| (step - s).abs() < 1e-6)
}

/// The tick labels plotters writes on an axis (see [`ticks`]).
fn tick_texts(
    scale: Scale,
    range: Range<f64>,
    (n, max_decades): (usize, usize),
    unit: &str,
) -> Vec<String> {
    let coord = Coord::new(scale, range);
    let (count, _) = ticks(scale, &coord.range(), n, max_decades);
    let values = coord.key_points(count).into_iter();
    values
        .filter(|v| labelled(scale, *v))
        .map(|v| label(v, unit))
        .collect()
}

/// A tick value and its unit.
fn label(v: f64, unit: &str) -> String {
    format!("{}{unit}", tick_label(v))
}

/// Text of `css` CSS pixels (the size the SVG states; plotters' sizes are
/// 1.24 times that).
fn font(css: f64, bold: bool, color: Rgb) -> TextStyle<'static> {
    let style = if bold {
        FontStyle::Bold
    } else {
        FontStyle::Normal
    };
    FontDesc::new(FontFamily::Name(FONT_FAMILY), css * 1.24, style).color(&color.color())
}

/// `text` at (x, y) of `area`, anchored there by `style`.
fn text<DB: DrawingBackend>(
    area: &Area<DB>,
    text: &str,
    at: (i32, i32),
    style: &TextStyle<'_>,
) -> Result<(), PlotError> {
    area.draw(&Text::new(text, at, style.clone())).map_err(fail)
}

/// The width of `text` in `style` as the backend measures it.
fn width<DB: DrawingBackend>(
    area: &Area<DB>,
    text: &str,
    style: &TextStyle<'_>,
) -> Result<i32, PlotError> {
    let (w, _) = area.estimate_text_size(text, style).map_err(fail)?;
    Ok(i32::try_from(w).unwrap_or(i32::MAX))
}

/// The largest size up to `max` CSS pixels (down to 7) at which `text` is
/// at most `room` pixels wide. Ours: plotters sets text at the size it is
/// given, whether it fits or not.
fn fit_size<DB: DrawingBackend>(
    area: &Area<DB>,
    text: &str,
    max: f64,
    bold: bool,
    room: i32,
) -> Result<f64, PlotError> {
    let mut size = max;
    while size > 7.0 && width(area, text, &font(size, bold, DARK))? > room {
        size -= 0.5;
    }
    Ok(size)
}

/// Tick labels up the y axis of a line chart, and of a time series' panel
/// (on a linear axis).
const Y_LABELS: usize = 10;
const PANEL_Y_LABELS: usize = 8;
/// The most decades a log axis of a line chart (x, y), or of a panel, has
/// its 1-2-5 steps labelled on; a wider one, its powers of ten only.
const X_DECADES: usize = 3;
const Y_DECADES: usize = 2;
const PANEL_DECADES: usize = 1;
/// Height of the label area under the x axis: tick labels and the name.
const X_LABEL_AREA: u32 = 52;
/// Width of the legend column right of a plot, unless its names need more.
const LEGEND_WIDTH: u32 = 214;
/// Above a line chart's plot, under the title: the markers' and bands'
/// names.
const PLOT_TOP: u32 = 24;
/// Room left of a legend entry's name for its line and marker.
const LEGEND_GLYPH: u32 = 36;

/// The width of a y label area holding `labels` (the tick labels plotters
/// will write, at 11 pixels) right of the axis' name. Ours: plotters takes
/// a fixed size.
fn y_label_area<DB: DrawingBackend>(
    area: &Area<DB>,
    labels: impl Iterator<Item = String>,
) -> Result<u32, PlotError> {
    let style = font(11.0, false, DARK);
    let mut widest = 0;
    for l in labels {
        widest = widest.max(width(area, &l, &style)?);
    }
    // Tick mark and gap (plotters: twice the tick size), then the name.
    Ok(u32::try_from(widest + 10 + 26).unwrap_or(0).max(60))
}

/// The width of a legend column for `names`, and the size of the names:
/// [`LEGEND_WIDTH`], wider for long names up to a third of the picture,
/// and names smaller than 11 pixels only past that.
fn legend_layout<'s, DB: DrawingBackend>(
    area: &Area<DB>,
    names: impl Iterator<Item = &'s str>,
) -> Result<(u32, f64), PlotError> {
    let (w, _) = area.dim_in_pixel();
    let style = font(11.0, false, DARK);
    let names: Vec<&str> = names.collect();
    let mut widest = 0;
    for name in &names {
        widest = widest.max(width(area, name, &style)?);
    }
    let room = |column: u32| (column - LEGEND_GLYPH - 24) as i32;
    let column =
        (widest.max(0) as u32 + LEGEND_GLYPH + 24).clamp(LEGEND_WIDTH, LEGEND_WIDTH.max(w / 3));
    let mut size: f64 = 11.0;
    for name in names {
        size = size.min(fit_size(area, name, 11.0, false, room(column))?);
    }
    Ok((column, size))
}

/// Draws the grid, the ticks, their labels and the axis names of `chart`
/// (plotters' mesh), and a frame round the plot. The x axis' labels are
/// written where the chart has an x label area.
fn mesh<DB: DrawingBackend, Y: Ranged<ValueType = f64, FormatOption = DefaultFormatting>>(
    chart: &mut Chart<'_, DB, Y>,
    (x, x_decades): (&Axis, usize),
    (y_name, y_scale, y_labels, y_decades): (&str, Scale, usize, usize),
    y_format: &dyn Fn(&f64) -> String,
    y_grid: bool,
) -> Result<(), PlotError> {
    let (x_labels, x_light) = ticks(x.scale, &chart.x_range(), 12, x_decades);
    let (y_labels, y_light) = ticks(y_scale, &chart.y_range(), y_labels, y_decades);
    let x_format = |v: &f64| match labelled(x.scale, *v) {
        true => label(*v, &x.unit),
        false => String::new(),
    };
    let y_format = |v: &f64| match labelled(y_scale, *v) {
        true => y_format(v),
        false => String::new(),
    };
    let mut mesh = chart.configure_mesh();
    mesh.bold_line_style(GRID.color().stroke_width(1))
        .light_line_style(LIGHT_GRID.color().stroke_width(1))
        .x_max_light_lines(x_light)
        .y_max_light_lines(y_light)
        .axis_style(DARK.color().stroke_width(1))
        .set_all_tick_mark_size(5)
        .label_style(font(11.0, false, DARK))
        .axis_desc_style(font(12.0, false, DARK))
        .x_labels(x_labels)
        .y_labels(y_labels)
        .x_label_formatter(&x_format)
        .y_label_formatter(&y_format)
        .x_desc(x.label.as_str())
        .y_desc(y_name);
    if !y_grid {
        mesh.disable_y_mesh();
    }
    mesh.draw().map_err(fail)?;
    // Plotters draws the axes left of and under the plot; this closes it.
    let (xs, ys) = (chart.x_range(), chart.y_range());
    chart
        .plotting_area()
        .draw(&Rectangle::new(
            [(xs.start, ys.start), (xs.end, ys.end)],
            DARK.color().stroke_width(1),
        ))
        .map_err(fail)
}

/// The corners of a point marker of `shape` (none: no corner) centred
/// `at` pixels from its point. Ours: plotters has a circle and a triangle
/// marker but no square or diamond one, and its legend takes one element
/// type for every shape, so every marker is a polygon (a disc one of 16
/// sides).
fn corners(shape: Option<Shape>, (x, y): (i32, i32)) -> Vec<(i32, i32)> {
    let offsets: Vec<(f64, f64)> = match shape {
        None => Vec::new(),
        Some(Shape::Circle) => (0..16)
            .map(|i| {
                let a = f64::from(i) * std::f64::consts::PI / 8.0;
                (4.5 * a.cos(), 4.5 * a.sin())
            })
            .collect(),
        Some(Shape::Square) => vec![(-4.0, -4.0), (4.0, -4.0), (4.0, 4.0), (-4.0, 4.0)],
        Some(Shape::Triangle) => vec![(0.0, -5.0), (5.0, 4.0), (-5.0, 4.0)],
        Some(Shape::Diamond) => vec![(0.0, -5.0), (5.0, 0.0), (0.0, 5.0), (-5.0, 0.0)],
    };
    offsets
        .iter()
        .map(|(dx, dy)| (x + dx.round() as i32, y + dy.round() as i32))
        .collect()
}

fn series_color(s: &Series, index: usize) -> Rgb {
    s.color.unwrap_or(PALETTE[index % PALETTE.len()])
}

/// Draws `series` into `chart` on axes of scales `scales`, each named in
/// the legend: the line through each run of placeable points (plotters'
/// `LineSeries`), the markers on top (`PointSeries`). A point alone, or a
/// series without a line, still shows as a disc; y values beyond the range
/// are drawn at its edge.
fn draw_series<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    (x_scale, y_scale): (Scale, Scale),
    series: &[Series],
) -> Result<(), PlotError> {
    let (xs, ys) = (chart.x_range(), chart.y_range());
    let placeable = |&(px, py): &(f64, f64)| shows(x_scale, &xs, px) && usable(y_scale, py);
    let at = |&(px, py): &(f64, f64)| (px, py.clamp(ys.start, ys.end));
    for (i, s) in series.iter().enumerate() {
        let color = series_color(s, i).color();
        let line = color.stroke_width(s.width);
        for run in s.points.split(|p| !placeable(p)).filter(|r| !r.is_empty()) {
            if s.width > 0 && run.len() > 1 {
                chart
                    .draw_series(LineSeries::new(run.iter().map(at), line))
                    .map_err(fail)?;
            }
            let shape = s
                .marker
                .or((s.width == 0 || run.len() == 1).then_some(Shape::Circle));
            if shape.is_some() {
                let dot =
                    |c, _, style| EmptyElement::at(c) + Polygon::new(corners(shape, (0, 0)), style);
                chart
                    .draw_series(PointSeries::of_element(
                        run.iter().map(at),
                        4,
                        color.filled(),
                        &dot,
                    ))
                    .map_err(fail)?;
            }
        }
    }
    Ok(())
}

/// A legend column: a chart of its own in `column`, `top` pixels down
/// (where the plot's top is), for [`legend`] to draw the rows [`rows`]
/// give it. Plotters draws a legend in a chart's plotting area and keeps
/// what it draws there, so one right of a plot needs a plotting area there.
fn legend_column<DB: DrawingBackend>(
    column: &Area<DB>,
    top: u32,
) -> Result<Chart<'_, DB>, PlotError> {
    let unit = || Coord::new(Scale::Linear, 0.0..1.0);
    ChartBuilder::on(column)
        .margin_top(top)
        .margin_right(8)
        .build_cartesian_2d(unit(), unit())
        .map_err(fail)
}

/// A legend row per series of `series`: its line and marker, and its name.
fn rows<'a, DB: DrawingBackend + 'a>(
    legend: &mut Chart<'a, DB>,
    series: &[Series],
) -> Result<(), PlotError> {
    for (i, s) in series.iter().enumerate() {
        let color = series_color(s, i).color();
        let shape = s.marker.or((s.width == 0).then_some(Shape::Circle));
        let line = match s.width {
            0 => TRANSPARENT.into(),
            w => color.stroke_width(w),
        };
        let fill = match shape {
            Some(_) => color.filled(),
            None => TRANSPARENT.into(),
        };
        legend
            .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())
            .map_err(fail)?
            .label(s.name.as_str())
            .legend(move |c| {
                EmptyElement::at(c)
                    + PathElement::new(vec![(0, 0), (28, 0)], line)
                    + Polygon::new(corners(shape, (14, 0)), fill)
            });
    }
    Ok(())
}

/// Draws the rows given to a [`legend_column`], in names of `size`:
/// plotters' series labels, in a box at the column's top left.
fn legend<'a, DB: DrawingBackend + 'a>(
    legend: &mut Chart<'a, DB>,
    size: f64,
) -> Result<(), PlotError> {
    legend
        .configure_series_labels()
        .position(SeriesLabelPosition::Coordinate(0, 0))
        .legend_area_size(LEGEND_GLYPH)
        .margin(6)
        .background_style(WHITE.color().filled())
        .border_style(GRID.color())
        .label_font(font(size, false, DARK))
        .draw()
        .map_err(fail)
}

/// The picture's title, bold, centred at its top and shrunk to fit; the
/// rest of the picture.
fn titled<DB: DrawingBackend>(root: &Area<DB>, title: &str) -> Result<Area<DB>, PlotError> {
    let (w, _) = root.dim_in_pixel();
    let size = fit_size(root, title, 16.0, true, w as i32 - 16)?;
    root.titled(title, font(size, true, DARK)).map_err(fail)
}

fn draw_line_chart<DB: DrawingBackend>(root: &Area<DB>, c: &LineChart) -> Result<(), PlotError> {
    root.fill(&WHITE.color()).map_err(fail)?;
    let (_, h) = root.dim_in_pixel();
    let scales = (c.x.scale, c.y.scale);
    let xs = fit(
        &c.x,
        c.series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .chain(c.markers.iter().map(|m| m.x)),
        false,
    );
    let ys = fit(
        &c.y,
        c.series.iter().flat_map(|s| {
            s.points
                .iter()
                .filter(|p| shows(c.x.scale, &xs, p.0))
                .map(|p| p.1)
        }),
        true,
    );
    let markers: Vec<&Marker> = c
        .markers
        .iter()
        .filter(|m| shows(c.x.scale, &xs, m.x))
        .collect();
    let has_legend = !c.series.is_empty() || !markers.is_empty();
    let (x, y) = (
        Coord::new(c.x.scale, xs.clone()),
        Coord::new(c.y.scale, ys.clone()),
    );
    let y_format = |v: &f64| label(*v, &c.y.unit);
    let y_texts = tick_texts(c.y.scale, ys.clone(), (Y_LABELS, Y_DECADES), &c.y.unit);
    let y_area = y_label_area(root, y_texts.into_iter())?;

    let names = c.series.iter().map(|s| s.name.as_str());
    let (legend_width, legend_names) = legend_layout(root, names)?;
    let below = titled(root, &c.title)?;
    let (w, _) = below.dim_in_pixel();
    let (plot, column) = below.split_horizontally(w.saturating_sub(legend_width + 8));
    let mut chart = ChartBuilder::on(if has_legend { &plot } else { &below })
        // Room for the markers' and bands' names above the plot, and for
        // the note under the x axis' name.
        .margin_top(PLOT_TOP)
        .margin_bottom(if c.note.is_some() { 22 } else { 8 })
        .margin_left(8)
        .margin_right(if has_legend { 16 } else { 24 })
        .x_label_area_size(X_LABEL_AREA)
        .y_label_area_size(y_area)
        .build_cartesian_2d(x, y)
        .map_err(fail)?;
    let (bottom, top) = (ys.start, ys.end);

    // Bands under the grid.
    let band_range = |b: &Band| {
        let from = b.from.filter(|v| shows(c.x.scale, &xs, *v));
        let to = b.to.filter(|v| shows(c.x.scale, &xs, *v));
        (from.unwrap_or(xs.start), to.unwrap_or(xs.end))
    };
    for band in &c.bands {
        let (from, to) = band_range(band);
        if from < to {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(from, bottom), (to, top)],
                    band.color.color().filled(),
                )))
                .map_err(fail)?;
        }
    }
    mesh(
        &mut chart,
        (&c.x, X_DECADES),
        (&c.y.label, c.y.scale, Y_LABELS, Y_DECADES),
        &y_format,
        true,
    )?;

    // Names above the plot, where no line runs. Ours: plotters writes text
    // at a point, and knows no labels for bands or vertical lines.
    let label_y = chart.backend_coord(&(xs.start, top)).1 - 12;
    for band in &c.bands {
        let Some(name) = &band.label else { continue };
        let (from, to) = band_range(band);
        let (a, b) = (
            chart.backend_coord(&(from, top)).0,
            chart.backend_coord(&(to, top)).0,
        );
        if b - a >= 100 {
            let style = font(11.0, false, MUTED).pos(Pos::new(HPos::Center, VPos::Center));
            text(root, name, ((a + b) / 2, label_y), &style)?;
        }
    }
    // Of two close markers the left one's name goes left of its line, the
    // right one's right of it.
    let mut shown: Vec<(i32, &Marker)> = markers
        .iter()
        .map(|m| (chart.backend_coord(&(m.x, top)).0, *m))
        .collect();
    shown.sort_by_key(|m| m.0);
    let dash = MUTED.color().stroke_width(1);
    for (i, &(px, m)) in shown.iter().enumerate() {
        chart
            .draw_series(DashedLineSeries::new(
                [(m.x, bottom), (m.x, top)],
                6,
                4,
                dash,
            ))
            .map_err(fail)?;
        let close_left = i > 0 && px - shown[i - 1].0 < 36;
        let close_right = i + 1 < shown.len() && shown[i + 1].0 - px < 36;
        let (dx, anchor) = match (close_left, close_right) {
            (true, _) => (3, HPos::Left),
            (false, true) => (-3, HPos::Right),
            (false, false) => (0, HPos::Center),
        };
        let style = font(12.0, true, DARK).pos(Pos::new(anchor, VPos::Center));
        text(root, &m.label, (px + dx, label_y), &style)?;
    }

    draw_series(&mut chart, scales, &c.series)?;
    let mut side = legend_column(&column, PLOT_TOP)?;
    rows(&mut side, &c.series)?;
    if !markers.is_empty() {
        // The markers' row of the legend: their names together.
        let names: Vec<&str> = markers.iter().map(|m| m.label.as_str()).collect();
        side.draw_series(std::iter::empty::<PathElement<(f64, f64)>>())
            .map_err(fail)?
            .label(names.join(", "))
            .legend(move |(lx, ly)| {
                DashedPathElement::new(vec![(lx, ly), (lx + 28, ly)], 6, 4, dash)
            });
    }
    if has_legend {
        legend(&mut side, legend_names)?;
    }
    if let Some(note) = &c.note {
        let left = chart.backend_coord(&(xs.start, top)).0;
        let style = font(10.0, false, MUTED).pos(Pos::new(HPos::Left, VPos::Center));
        text(root, note, (left, h as i32 - 12), &style)?;
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
            c.series.push(Series::new(
                "extremes",
                vec![
                    (f64::MAX, 1.0),
                    (1.0, -f64::MAX),
                    (1e300, 1e-300),
                    (f64::MIN_POSITIVE / 8.0, 2.0),
                ],
            ));
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
        let close = |r: &Range<f64>, lo: f64, hi: f64| {
            assert!(
                (r.start / lo - 1.0).abs() < 1e-9 && (r.end / hi - 1.0).abs() < 1e-9,
                "{r:?} is not {lo}..{hi}"
            );
        };
        // A log axis spans the 1-2-5 steps just beyond its values, labelled
        // at every 1-2-5 step.
        let log = fit(&Axis::log10("x"), [0.05, 3.0, 0.12, 0.9].into_iter(), true);
        close(&log, 0.02, 5.0);
        assert_eq!(
            tick_texts(Scale::Log10, log.clone(), (12, 3), "%"),
            ["0.02%", "0.05%", "0.1%", "0.2%", "0.5%", "1%", "2%", "5%"]
        );
        // Wider than the decades asked for: the powers of ten alone.
        assert_eq!(tick_texts(Scale::Log10, log, (12, 2), ""), ["0.1", "1"]);
        // A narrow one still has its two ends labelled.
        let narrow = fit(&Axis::log10("x"), [0.3, 0.4].into_iter(), true);
        close(&narrow, 0.2, 0.5);
        assert_eq!(
            tick_texts(Scale::Log10, narrow, (Y_LABELS, 1), ""),
            ["0.2", "0.5"]
        );
        // Values on a step get the next one out.
        close(
            &fit(&Axis::log10("x"), [1.0, 10.0].into_iter(), true),
            0.5,
            20.0,
        );
        // No usable value: a default range.
        let none = fit(&Axis::log10("x"), [0.0, f64::NAN].into_iter(), true);
        assert_eq!(none, 0.01..10.0);

        // A linear axis starts at 0 and ends a little above the highest.
        let lin = fit(&Axis::linear("y"), [2.7, 1.0].into_iter(), true);
        assert!(
            lin.start == 0.0 && lin.end > 2.7 && lin.end < 3.0,
            "{lin:?}"
        );
        assert_eq!(fit(&Axis::linear("y"), [0.0].into_iter(), true), 0.0..1.0);
        let neg = fit(&Axis::linear("y"), [-3.0, 7.0].into_iter(), true);
        assert!(neg.start < -3.0 && neg.end > 7.0, "{neg:?}");
        assert!(tick_texts(Scale::Linear, neg, (Y_LABELS, 0), "").contains(&"0".to_string()));
        // A range given is kept, and labelled in round steps.
        let fixed = fit(
            &Axis::linear("y").range(0.0, 100.0),
            std::iter::empty(),
            true,
        );
        assert_eq!(fixed, 0.0..100.0);
        assert_eq!(
            tick_texts(Scale::Linear, fixed, (Y_LABELS, 0), ""),
            ["0", "20", "40", "60", "80", "100"]
        );
        // One that cannot be shown is not.
        let bad = fit(&Axis::log10("x").range(0.0, 10.0), [2.0].into_iter(), true);
        close(&bad, 1.0, 5.0);
        // A log axis spans 300 decades at most.
        let wide = fit(&Axis::log10("x"), [1e-300, 1e300].into_iter(), true);
        assert!((wide.end / wide.start).is_finite(), "{wide:?}");
        assert!(
            (wide.start / (wide.end / 1e300) - 1.0).abs() < 1e-9 && wide.end > 0.99e300,
            "{wide:?}"
        );
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
