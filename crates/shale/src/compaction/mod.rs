//! Compaction: the pure picker (what to compact) and the job (doing it).

pub(crate) mod job;
pub(crate) mod picker;
pub(crate) mod subcompact;
