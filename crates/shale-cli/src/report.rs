//! The report of `shale bench kvdb` (the I/O-per-Get study).
//!
//! The plots are drawn by our own code ([`chart`] lays them out, [`raster`]
//! and [`font`] rasterize them): no system font or graphics library is
//! needed, so the report renders the same on any machine that builds shale.

mod chart;
mod font;
mod raster;
