//! A minimal rasterizer for the plots' PNG form: filled rectangles and
//! convex polygons, thick line segments, discs and bitmap-font text, drawn
//! opaque into an RGB canvas at a multiple of the output resolution and then
//! averaged down, which smooths the edges. Encoding is the `png` crate's.

use super::font;

/// An opaque sRGB colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

/// Where a text's anchor point lies along it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

/// A canvas of `width` x `height` output pixels, stored `scale` times finer in
/// each direction. Coordinates of the drawing calls are output pixels
/// (fractions allowed), as in the SVG.
pub struct Canvas {
    width: usize,
    height: usize,
    scale: usize,
    /// Fine pixels, row-major, `width * scale` per row.
    px: Vec<Rgb>,
}

impl Canvas {
    pub fn new(width: usize, height: usize, scale: usize, background: Rgb) -> Canvas {
        let scale = scale.max(1);
        Canvas {
            width,
            height,
            scale,
            px: vec![background; width * scale * height * scale],
        }
    }

    fn fine_width(&self) -> usize {
        self.width * self.scale
    }

    fn fine_height(&self) -> usize {
        self.height * self.scale
    }

    /// Output coordinate to fine coordinate.
    fn fine(&self, v: f64) -> f64 {
        v * self.scale as f64
    }

    /// Sets the fine pixels whose centres `inside` accepts, within the fine
    /// bounding box `[x0, x1) x [y0, y1)` (clipped to the canvas).
    fn fill_where(
        &mut self,
        (x0, y0, x1, y1): (f64, f64, f64, f64),
        color: Rgb,
        inside: impl Fn(f64, f64) -> bool,
    ) {
        let clamp = |v: f64, max: usize| -> usize {
            if v.is_nan() || v <= 0.0 {
                0
            } else {
                (v as usize).min(max)
            }
        };
        let (fw, fh) = (self.fine_width(), self.fine_height());
        let (xa, xb) = (clamp(x0.floor(), fw), clamp(x1.ceil(), fw));
        let (ya, yb) = (clamp(y0.floor(), fh), clamp(y1.ceil(), fh));
        for y in ya..yb {
            let cy = y as f64 + 0.5;
            let row = y * fw;
            for x in xa..xb {
                if inside(x as f64 + 0.5, cy) {
                    self.px[row + x] = color;
                }
            }
        }
    }

    /// Fills the rectangle with corners `(x, y)` and `(x + w, y + h)`.
    pub fn fill_rect(&mut self, x: f64, y: f64, w: f64, h: f64, color: Rgb) {
        let (x0, y0) = (self.fine(x.min(x + w)), self.fine(y.min(y + h)));
        let (x1, y1) = (self.fine(x.max(x + w)), self.fine(y.max(y + h)));
        self.fill_where((x0, y0, x1, y1), color, |px, py| {
            px >= x0 && px < x1 && py >= y0 && py < y1
        });
    }

    /// Outlines the rectangle with a stroke of `width` centred on its edges.
    pub fn stroke_rect(&mut self, x: f64, y: f64, w: f64, h: f64, width: f64, color: Rgb) {
        let corners = [(x, y), (x + w, y), (x + w, y + h), (x, y + h), (x, y)];
        for pair in corners.windows(2) {
            if let [(ax, ay), (bx, by)] = pair {
                self.segment(*ax, *ay, *bx, *by, width, color);
            }
        }
    }

    /// A straight stroke of `width` from `(ax, ay)` to `(bx, by)` with round
    /// ends (so that consecutive segments join smoothly).
    pub fn segment(&mut self, ax: f64, ay: f64, bx: f64, by: f64, width: f64, color: Rgb) {
        let (ax, ay, bx, by) = (self.fine(ax), self.fine(ay), self.fine(bx), self.fine(by));
        let r = self.fine(width / 2.0).max(0.5);
        let (dx, dy) = (bx - ax, by - ay);
        let len2 = dx * dx + dy * dy;
        let bbox = (
            ax.min(bx) - r,
            ay.min(by) - r,
            ax.max(bx) + r,
            ay.max(by) + r,
        );
        self.fill_where(bbox, color, |px, py| {
            let t = if len2 > 0.0 {
                (((px - ax) * dx + (py - ay) * dy) / len2).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let (ex, ey) = (ax + t * dx - px, ay + t * dy - py);
            ex * ex + ey * ey <= r * r
        });
    }

    /// A filled disc.
    pub fn disc(&mut self, cx: f64, cy: f64, radius: f64, color: Rgb) {
        let (cx, cy, r) = (self.fine(cx), self.fine(cy), self.fine(radius));
        self.fill_where((cx - r, cy - r, cx + r, cy + r), color, |px, py| {
            (px - cx).powi(2) + (py - cy).powi(2) <= r * r
        });
    }

    /// A filled convex polygon (vertices in either winding order).
    pub fn convex_polygon(&mut self, points: &[(f64, f64)], color: Rgb) {
        if points.len() < 3 {
            return;
        }
        let pts: Vec<(f64, f64)> = points
            .iter()
            .map(|&(x, y)| (self.fine(x), self.fine(y)))
            .collect();
        let bbox = pts.iter().fold(
            (f64::MAX, f64::MAX, f64::MIN, f64::MIN),
            |(x0, y0, x1, y1), &(x, y)| (x0.min(x), y0.min(y), x1.max(x), y1.max(y)),
        );
        let n = pts.len();
        self.fill_where(bbox, color, |px, py| {
            let (mut pos, mut neg) = (false, false);
            for i in 0..n {
                let (ax, ay) = pts[i];
                let (bx, by) = pts[(i + 1) % n];
                let cross = (bx - ax) * (py - ay) - (by - ay) * (px - ax);
                pos |= cross > 0.0;
                neg |= cross < 0.0;
            }
            !(pos && neg)
        });
    }

    /// The side of a font unit, in fine pixels, for text of `size` (the
    /// nominal em, 10 font units, as in the SVG's `font-size`).
    fn unit(&self, size: f64) -> usize {
        let u = (size / 10.0 * self.scale as f64).round();
        if u.is_finite() && u >= 1.0 {
            u as usize
        } else {
            1
        }
    }

    /// The width of `text` at `size`, in output pixels.
    pub fn text_width(&self, text: &str, size: f64) -> f64 {
        let unit = self.unit(size);
        let n = text.chars().count();
        let fine = if n == 0 {
            0
        } else {
            (n * font::ADVANCE - (font::ADVANCE - font::WIDTH)) * unit
        };
        fine as f64 / self.scale as f64
    }

    /// Draws `text` with its baseline through `(x, y)`, `anchor` saying where
    /// `x` falls along it. `vertical` turns it a quarter left (reading
    /// upwards, like a y-axis label) about the anchor point. `bold` thickens
    /// the strokes.
    #[allow(clippy::too_many_arguments)]
    pub fn text(
        &mut self,
        x: f64,
        y: f64,
        text: &str,
        size: f64,
        anchor: Anchor,
        color: Rgb,
        bold: bool,
        vertical: bool,
    ) {
        let unit = self.unit(size);
        let fine_width = self.fine(self.text_width(text, size));
        // Rounded once, so that every cell is a whole number of fine pixels
        // from the next.
        let start = match anchor {
            Anchor::Start => 0.0,
            Anchor::Middle => -fine_width / 2.0,
            Anchor::End => -fine_width,
        }
        .round();
        let (ox, oy) = (self.fine(x), self.fine(y));
        let thick = if bold { unit + unit.div_ceil(2) } else { unit };
        let (u, t) = (unit as f64, thick as f64);
        for (i, c) in text.chars().enumerate() {
            let pen = i * font::ADVANCE * unit;
            for (row, bits) in font::glyph(c).iter().enumerate() {
                for col in 0..font::WIDTH {
                    if bits & (1 << (font::WIDTH - 1 - col)) == 0 {
                        continue;
                    }
                    // Cell offset from the anchor along and across the text.
                    let along = start + (pen + col * unit) as f64;
                    let across = (row as f64 - font::ASCENT as f64) * u;
                    let (cx, cy, w, h) = if vertical {
                        (ox + across, oy - along - t, u, t)
                    } else {
                        (ox + along, oy + across, t, u)
                    };
                    let (cx, cy) = (cx.round(), cy.round());
                    self.fill_where((cx, cy, cx + w, cy + h), color, |_, _| true);
                }
            }
        }
    }

    /// The output image: each output pixel the mean of its fine pixels, as
    /// RGB bytes row by row.
    pub fn to_rgb(&self) -> Vec<u8> {
        let s = self.scale;
        let fw = self.fine_width();
        let n = (s * s) as u32;
        let mut out = Vec::with_capacity(self.width * self.height * 3);
        for y in 0..self.height {
            for x in 0..self.width {
                let mut sum = [0u32; 3];
                for fy in y * s..(y + 1) * s {
                    for p in &self.px[fy * fw + x * s..fy * fw + (x + 1) * s] {
                        sum[0] += u32::from(p.0);
                        sum[1] += u32::from(p.1);
                        sum[2] += u32::from(p.2);
                    }
                }
                // Rounded mean; at most 255, so the cast is exact.
                out.extend(sum.iter().map(|v| ((v + n / 2) / n) as u8));
            }
        }
        out
    }

    /// The output image encoded as a PNG file.
    pub fn to_png(&self) -> Result<Vec<u8>, String> {
        encode_png(self.width, self.height, &self.to_rgb())
    }
}

/// Encodes 8-bit RGB rows as a PNG file.
pub fn encode_png(width: usize, height: usize, rgb: &[u8]) -> Result<Vec<u8>, String> {
    let (w, h) = match (u32::try_from(width), u32::try_from(height)) {
        (Ok(w), Ok(h)) if w > 0 && h > 0 => (w, h),
        _ => return Err(format!("cannot encode a {width}x{height} PNG")),
    };
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::High);
    let mut writer = encoder
        .write_header()
        .map_err(|e| format!("encoding PNG: {e}"))?;
    writer
        .write_image_data(rgb)
        .map_err(|e| format!("encoding PNG: {e}"))?;
    writer.finish().map_err(|e| format!("encoding PNG: {e}"))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const WHITE: Rgb = Rgb(255, 255, 255);
    const BLACK: Rgb = Rgb(0, 0, 0);

    fn pixel(rgb: &[u8], width: usize, x: usize, y: usize) -> [u8; 3] {
        let i = (y * width + x) * 3;
        [rgb[i], rgb[i + 1], rgb[i + 2]]
    }

    #[test]
    fn shapes_cover_their_pixels_and_average_at_edges() {
        let mut c = Canvas::new(20, 10, 2, WHITE);
        c.fill_rect(2.0, 2.0, 3.0, 3.0, BLACK);
        // A rectangle edge through the middle of a pixel: half covered.
        c.fill_rect(10.5, 0.0, 5.0, 10.0, Rgb(0, 0, 200));
        let rgb = c.to_rgb();
        assert_eq!(rgb.len(), 20 * 10 * 3);
        assert_eq!(pixel(&rgb, 20, 3, 3), [0, 0, 0]);
        assert_eq!(pixel(&rgb, 20, 1, 1), [255, 255, 255]);
        assert_eq!(pixel(&rgb, 20, 12, 5), [0, 0, 200]);
        assert_eq!(pixel(&rgb, 20, 10, 5), [128, 128, 228]);
    }

    #[test]
    fn segments_discs_and_polygons_draw_inside_the_canvas_only() {
        let mut c = Canvas::new(30, 30, 3, WHITE);
        c.segment(-10.0, 15.0, 40.0, 15.0, 2.0, BLACK);
        c.disc(5.0, 5.0, 3.0, BLACK);
        c.convex_polygon(&[(20.0, 2.0), (28.0, 2.0), (24.0, 9.0)], BLACK);
        let rgb = c.to_rgb();
        assert_eq!(pixel(&rgb, 30, 0, 15), [0, 0, 0]);
        assert_eq!(pixel(&rgb, 30, 29, 14), [0, 0, 0]);
        assert_eq!(pixel(&rgb, 30, 15, 10), [255, 255, 255]);
        assert_eq!(pixel(&rgb, 30, 5, 5), [0, 0, 0]);
        assert_eq!(pixel(&rgb, 30, 24, 4), [0, 0, 0]);
        assert_eq!(pixel(&rgb, 30, 21, 8), [255, 255, 255]);
    }

    #[test]
    fn text_lands_on_its_anchor() {
        let mut c = Canvas::new(100, 40, 1, WHITE);
        // Size 10: one pixel per font unit, "I" is 5 units wide, 7 tall.
        assert_eq!(c.text_width("II", 10.0), 11.0);
        c.text(50.0, 20.0, "I", 10.0, Anchor::Middle, BLACK, false, false);
        let rgb = c.to_rgb();
        // The glyph starts at x 47 (50 - 2.5, rounded): its top bar spans
        // x 48..=50 at row 13, its stem is x 49 down to the baseline row 19.
        for x in 48..=50 {
            assert_eq!(pixel(&rgb, 100, x, 13), [0, 0, 0]);
        }
        assert_eq!(pixel(&rgb, 100, 47, 13), [255, 255, 255]);
        assert_eq!(pixel(&rgb, 100, 51, 13), [255, 255, 255]);
        assert_eq!(pixel(&rgb, 100, 49, 16), [0, 0, 0]);
        assert_eq!(pixel(&rgb, 100, 49, 20), [255, 255, 255]);
        assert_eq!(pixel(&rgb, 100, 49, 12), [255, 255, 255]);
        // Turned: the text reads upwards, glyph rows run along x.
        let mut v = Canvas::new(40, 100, 1, WHITE);
        v.text(20.0, 50.0, "-", 10.0, Anchor::Start, BLACK, false, true);
        let rgb = v.to_rgb();
        // The minus is row 3, columns 1..3: x = 20 - 4, y = 50 - 1 - 1..3.
        assert_eq!(pixel(&rgb, 40, 16, 48), [0, 0, 0]);
        assert_eq!(pixel(&rgb, 40, 16, 46), [0, 0, 0]);
        assert_eq!(pixel(&rgb, 40, 16, 49), [255, 255, 255]);
    }

    #[test]
    fn png_has_the_signature_and_size() {
        let png = Canvas::new(7, 3, 2, WHITE).to_png().expect("png");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[16..24], &[0, 0, 0, 7, 0, 0, 0, 3]);
        assert!(encode_png(0, 3, &[]).is_err());
    }
}
