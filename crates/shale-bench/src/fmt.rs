//! Small formatting helpers shared by the reports (the engine's own, which
//! its statistics text uses).

pub use shale::stat::{human_bytes, rate_text, ratio};
