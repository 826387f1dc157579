//! The benchmarks of shale and its peers, as a library: what `shale bench`,
//! `shale advise` and `shale load` run. Each runner takes its settings
//! ([`args`]) and writes its human-readable output to the `out` it is given;
//! the `shale` tool parses the settings and prints the failure.
//!
//! - Runners: [`kvdb`] (the I/O-per-Get study), [`compare`] (the same study
//!   on shale and its peers, each in a harness process), [`ycsb`], [`dbbench`]
//!   (db_bench's benchmarks and LevelDB's cache sweep), [`zns`] (write
//!   amplification on a zoned device and on a conventional SSD's model) and
//!   [`advise`] (the cache to configure for a target I/O per Get).
//! - What they share: [`storage`] (the regular file system or a zoned
//!   device), [`live`] (operation counters and latency histograms),
//!   [`sampler`] (the time series of a run), [`report`] (results files and
//!   charts), [`load`] (the one loader), [`runner`] (the one runner of the
//!   operation loops: threads, warm-up, progress, the first failure, and
//!   Ctrl-C, which ends a run with the results so far).

pub mod advise;
// The settings' doc comments are their `--help` text, written for a
// terminal (`zipf[:theta]`, `DIR/<engine>`), not links or HTML.
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
pub mod args;
pub mod bytes;
pub mod cgroup;
pub mod client;
pub mod compare;
pub mod dbbench;
pub mod engine;
pub mod error;
pub mod filter_budget;
pub mod fmt;
pub mod harness;
pub mod kvdb;
pub mod live;
pub mod load;
pub mod parse;
pub mod report;
pub mod rocksdb_trace;
pub mod runner;
pub mod sampler;
pub mod simulate;
pub mod stats_doc;
pub mod storage;
pub mod trace_file;
pub mod ycsb;
pub mod zns;

pub use error::{Error, Result};
