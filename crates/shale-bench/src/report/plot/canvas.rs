//! One backend type for both outputs, so that the drawing code (and
//! plotters' chart code under it) is compiled once rather than once per
//! backend: the SVG backend or the PNG one ([`Png`]), every call passed on
//! to the one inside (the SVG backend writes its own elements for paths,
//! circles, polygons and text; the PNG one rasterizes them).

use std::error::Error;
use std::fmt;

use plotters::backend::{DrawingBackend, SVGBackend};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};

use super::bitmap::Png;

/// The SVG or the PNG being drawn.
pub(super) enum Canvas<'a> {
    /// The SVG document.
    Svg(SVGBackend<'a>),
    /// The PNG's pixels.
    Png(Png<'a>),
}

/// A backend's failure, as its message.
#[derive(Debug)]
pub(super) struct CanvasError(String);

impl fmt::Display for CanvasError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for CanvasError {}

fn lift<E: Error + Send + Sync>(e: DrawingErrorKind<E>) -> DrawingErrorKind<CanvasError> {
    match e {
        DrawingErrorKind::DrawingError(e) => {
            DrawingErrorKind::DrawingError(CanvasError(e.to_string()))
        }
        DrawingErrorKind::FontError(e) => DrawingErrorKind::FontError(e),
    }
}

type Done = Result<(), DrawingErrorKind<CanvasError>>;

/// `$call` on the backend inside, its error lifted.
macro_rules! each {
    ($self:ident, $b:ident => $call:expr) => {
        match $self {
            Canvas::Svg($b) => $call.map_err(lift),
            Canvas::Png($b) => $call.map_err(lift),
        }
    };
}

impl DrawingBackend for Canvas<'_> {
    type ErrorType = CanvasError;

    fn get_size(&self) -> (u32, u32) {
        match self {
            Canvas::Svg(b) => b.get_size(),
            Canvas::Png(b) => b.get_size(),
        }
    }

    fn ensure_prepared(&mut self) -> Done {
        each!(self, b => b.ensure_prepared())
    }

    fn present(&mut self) -> Done {
        each!(self, b => b.present())
    }

    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Done {
        each!(self, b => b.draw_pixel(point, color))
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Done {
        each!(self, b => b.draw_line(from, to, style))
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Done {
        each!(self, b => b.draw_rect(upper_left, bottom_right, style, fill))
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Done {
        each!(self, b => b.draw_path(path, style))
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Done {
        each!(self, b => b.draw_circle(center, radius, style, fill))
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Done {
        each!(self, b => b.fill_polygon(vert, style))
    }

    fn draw_text<S: BackendTextStyle>(&mut self, text: &str, style: &S, pos: BackendCoord) -> Done {
        each!(self, b => b.draw_text(text, style, pos))
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<CanvasError>> {
        each!(self, b => b.estimate_text_size(text, style))
    }

    fn blit_bitmap(&mut self, pos: BackendCoord, size: (u32, u32), src: &[u8]) -> Done {
        each!(self, b => b.blit_bitmap(pos, size, src))
    }
}
