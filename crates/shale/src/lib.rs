//! shale: an LSM-tree key-value engine for blockchain execution-layer state.
//!
//! The public surface is small: [`Db`] (open, get, put, delete, write, iterate,
//! snapshot, flush, metrics, close), its [`Options`], [`WriteBatch`],
//! [`Snapshot`], [`DbIterator`], [`Error`] and [`Metrics`]. Everything a Get reads
//! is counted per block kind in [`Metrics`]; see `docs/design.md` for the read path.

// Library code returns errors; it never unwraps what can fail at run time.
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

mod batch;
mod cache;
mod compaction;
mod db;
mod error;
pub mod events;
mod filenames;
mod format;
mod iter;
mod memtable;
mod metrics;
mod options;
mod pinned;
mod rangedel;
mod rate_limit;
mod setters;
pub mod stat;
mod sync;
mod table;
pub mod trace;
mod version;
mod wal;

mod golden;

/// Entry points of the micro-benchmarks of engine internals; not part of the API.
#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod bench_api;

/// Entry points of the fuzz targets (`fuzz/`, `docs/fuzzing.md`); not part of the API.
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzz_api;

pub use batch::{BatchEntry, WriteBatch};
pub use db::{
    prefix_successor, DamagedFile, DamagedKind, Db, DbIterator, KeyRange, Range, ReadOptions,
    Readable, RepairOptions, RepairReport, Snapshot, TableInfo, LOST_DIR,
};
pub use error::{Error, Result};
pub use events::{Event, EventListener};
pub use metrics::{BlockKind, BlockMetrics, LevelMetrics, MetadataKind, Metrics};
pub use options::{
    fuse_fingerprint_bits, Compression, FilterKind, FilterLevels, FilterPolicy, LevelSet,
    MetadataPlacement, Options, WalRecoveryMode, WriteOptions,
    L0_COMPACTION_TRIGGER_WITHOUT_FILTERS, L0_COMPACTION_TRIGGER_WITH_FILTERS, MAX_BACKGROUND_JOBS,
    MAX_COMPACTION_READAHEAD, MAX_READ_THREADS, MAX_SUBCOMPACTIONS, MIN_DELAYED_WRITE_RATE,
    NUM_LEVELS,
};
pub use pinned::PinnedValue;
pub use shale_env as env;
pub use stat::{DbSummary, LevelSummary};
pub use table::{inspect_table, BlockInfo, LayoutKind, TableLayout, TableProperties};

/// For tools built on shale (the `shale` CLI's `sst` and `advise`, the C
/// API, tests of the on-disk formats): decoding an internal key, printing a
/// user key, the format versions this build writes and reads, and the level
/// shape the compaction picker aims at. Not needed to use a database; kept
/// apart so that the engine's internals stay out of its API.
pub mod tools {
    pub use crate::compaction::picker::{level_plan, LevelPlan};
    pub use crate::format::{
        parse_internal_key, user_key_text, InternalKeyRef, SeqNo, ValueKind, DB_FORMAT_VERSION,
        MIN_TABLE_FORMAT_VERSION, TABLE_FORMAT_VERSION,
    };
    pub use crate::table::keys_per_filter_page;
}

/// The README's Rust example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctest;
