//! The PNG's drawing backend: plotters' RGB bitmap backend, with text set
//! here rather than by plotters' own `ab_glyph` text code, which places
//! each glyph at a whole pixel and without its left side bearing (uneven
//! letter spacing, spaces that vanish at small sizes). Glyphs are placed at
//! fractional pen positions with kerning, at the SVG's font size and with
//! the SVG's anchoring, so the PNG sets text as a browser sets the SVG's
//! (where the browser has DejaVu Sans). Ours because plotters' text code
//! cannot do that; its text is measured by [`measure`], so that what the
//! charts fit to their room (a title, a legend, a label in its bar) is
//! fitted to the PNG's own glyphs.

use std::sync::OnceLock;

use ab_glyph::{point, Font, FontRef, GlyphId, PxScale, ScaleFont};
use plotters::backend::{BitMapBackend, DrawingBackend, RGBPixel};
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind, FontStyle,
};

use super::PlotError;

/// DejaVu Sans regular and bold, parsed once.
fn faces() -> Result<&'static (FontRef<'static>, FontRef<'static>), PlotError> {
    static FACES: OnceLock<Result<(FontRef<'static>, FontRef<'static>), PlotError>> =
        OnceLock::new();
    FACES
        .get_or_init(|| {
            let parse = |bytes: &'static [u8], style: &str| {
                FontRef::try_from_slice(bytes)
                    .map_err(|e| PlotError(format!("the embedded {style} font: {e}")))
            };
            Ok((
                parse(dejavu::sans::regular(), "regular")?,
                parse(dejavu::sans::bold(), "bold")?,
            ))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// `text` set in one line at `em` pixels per em: the glyphs with their pen
/// positions from 0, and the advance width.
struct Line<'f> {
    font: &'f FontRef<'static>,
    scale: PxScale,
    glyphs: Vec<(GlyphId, f32)>,
    width: f32,
}

impl<'f> Line<'f> {
    fn set(font: &'f FontRef<'static>, em: f64, text: &str) -> Line<'f> {
        // ab_glyph scales so that ascent - descent spans the scale.
        let units = font.units_per_em().unwrap_or(2048.0);
        let scale = PxScale::from((em as f32) * font.height_unscaled() / units);
        let scaled = font.as_scaled(scale);
        let mut glyphs = Vec::with_capacity(text.len());
        let mut pen = 0f32;
        let mut prev: Option<GlyphId> = None;
        for c in text.chars() {
            let id = scaled.glyph_id(c);
            if let Some(p) = prev {
                pen += scaled.kern(p, id);
            }
            glyphs.push((id, pen));
            pen += scaled.h_advance(id);
            prev = Some(id);
        }
        Line {
            font,
            scale,
            glyphs,
            width: pen,
        }
    }

    /// Height of a lower-case x above the baseline, in pixels.
    fn x_height(&self) -> f32 {
        let scaled = self.font.as_scaled(self.scale);
        scaled
            .outline_glyph(scaled.scaled_glyph('x'))
            .map_or(self.scale.y * 0.45, |g| -g.px_bounds().min.y)
    }
}

/// The width `text` takes at `css` pixels (the SVG's font size), bold or
/// not, in pixels.
pub(super) fn measure(text: &str, css: f64, bold: bool) -> Result<f64, PlotError> {
    let (regular, bold_face) = faces()?;
    let font = if bold { bold_face } else { regular };
    Ok(f64::from(Line::set(font, css, text).width))
}

/// Plotters' RGB bitmap backend with this module's text.
pub(super) struct Png<'a> {
    inner: BitMapBackend<'a, RGBPixel>,
}

impl<'a> Png<'a> {
    pub(super) fn new(inner: BitMapBackend<'a, RGBPixel>) -> Png<'a> {
        Png { inner }
    }
}

type Failed<'a> = DrawingErrorKind<<BitMapBackend<'a, RGBPixel> as DrawingBackend>::ErrorType>;

impl<'a> DrawingBackend for Png<'a> {
    type ErrorType = <BitMapBackend<'a, RGBPixel> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), Failed<'a>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), Failed<'a>> {
        self.inner.present()
    }

    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Result<(), Failed<'a>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), Failed<'a>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), Failed<'a>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), Failed<'a>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), Failed<'a>> {
        let em = style.size() / 1.24;
        let width = measure(text, em, matches!(style.style(), FontStyle::Bold))
            .map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        Ok((width.ceil() as u32, (em * 1.2).ceil() as u32))
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        (x0, y0): BackendCoord,
    ) -> Result<(), Failed<'a>> {
        let color = style.color();
        if color.alpha == 0.0 || text.is_empty() {
            return Ok(());
        }
        let (regular, bold) = faces().map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let font = if matches!(style.style(), FontStyle::Bold) {
            bold
        } else {
            regular
        };
        // Plotters' sizes are 1.24 times the SVG's font-size.
        let em = style.size() / 1.24;
        let line = Line::set(font, em, text);
        let anchor = style.anchor();
        let dx = match anchor.h_pos {
            HPos::Left => 0.0,
            HPos::Center => -line.width / 2.0,
            HPos::Right => -line.width,
        };
        // Where the SVG's `dy` puts the baseline for each vertical anchor.
        let baseline = match anchor.v_pos {
            VPos::Top => 0.76 * em as f32,
            VPos::Center => 0.5 * line.x_height(),
            VPos::Bottom => -0.5 * line.x_height(),
        };
        let transform = style.transform();
        let scaled = font.as_scaled(line.scale);
        for &(id, pen) in &line.glyphs {
            let glyph = id.with_scale_and_position(line.scale, point(dx + pen, baseline));
            let Some(outline) = scaled.outline_glyph(glyph) else {
                continue;
            };
            let bounds = outline.px_bounds();
            let (left, top) = (bounds.min.x as i32, bounds.min.y as i32);
            let mut pixels = Vec::new();
            outline.draw(|gx, gy, coverage| {
                if coverage > 0.0 {
                    pixels.push((left + gx as i32, top + gy as i32, coverage));
                }
            });
            for (x, y, coverage) in pixels {
                let (x, y) = transform.transform(x, y);
                let shade = BackendColor {
                    alpha: color.alpha * f64::from(coverage.min(1.0)),
                    rgb: color.rgb,
                };
                self.inner.draw_pixel((x0 + x, y0 + y), shade)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_measures_by_the_font() {
        let narrow = measure("iiii", 12.0, false).expect("measure");
        let wide = measure("WWWW", 12.0, false).expect("measure");
        assert!(narrow > 0.0 && wide > 2.0 * narrow, "{narrow} {wide}");
        let bold = measure("WWWW", 12.0, true).expect("measure");
        assert!(bold > wide, "{bold} {wide}");
        // Twice the size, twice the width; a space has width.
        let big = measure("WWWW", 24.0, false).expect("measure");
        assert!((big - 2.0 * wide).abs() < 0.5, "{big} {wide}");
        assert!(
            measure("a b", 12.0, false).expect("measure")
                > measure("ab", 12.0, false).expect("measure")
        );
        assert_eq!(measure("", 12.0, false).expect("measure"), 0.0);
    }
}
