//! Block-access traces and the cache simulator.
//!
//! [`crate::Db::start_block_trace`] records every block access of the read
//! path (filter, top-level index, index partition, data block: which block,
//! hit or miss, the cache priority it is kept at, its charge, the lookup it
//! belongs to), every answered Get, and the bytes pinned in the cache, into
//! a sink the caller gives, until [`crate::Db::end_block_trace`]. Accesses
//! may be sampled by block (SHARDS-style spatial sampling: a block's
//! accesses are all kept or all left out). The byte format is in
//! [`format`](self#format) below and in `docs/format/block-trace.md`.
//!
//! [`simulate`] replays a trace through the engine's own block cache (or,
//! with [`Policy::Lru`], a plain LRU) at other capacities and gives misses and reads per Get by block kind
//! (exact for one reader thread reading one key at a time; see the
//! function's module for where it is not). [`decode_trace`] reads a trace,
//! reporting a damaged or truncated part with its offset.
//!
//! # Format
//!
//! A header (magic `shaleBTR`, format version, what the trace was recorded
//! on: cache capacity and shards, pinned bytes, sampling threshold, the
//! database's size, inflection-point metadata and table fingerprint; with
//! a CRC-32C), then chunks (length, CRC-32C, records) of at most 1 MiB,
//! the last ending with an end record. See [`encode_trace`].

mod format;
mod simulate;
mod tracer;

pub use format::{
    decode_header, decode_trace, encode_trace, sampled, BlockAccess, BlockTrace, TraceDbShape,
    TraceError, TraceHeader, TracePlacement, TraceRecord, SAMPLE_ALL, TRACE_FORMAT_VERSION,
};
pub use simulate::{
    simulate, touched_metadata, KindCounts, Policy, SimulateError, SimulatedSize, TouchedMetadata,
    READ_KINDS,
};
pub use tracer::TraceSummary;
pub(crate) use tracer::{LookupScope, Tracer};

/// How [`crate::Db::start_block_trace`] records.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct BlockTraceOptions {
    /// The share of blocks whose accesses are recorded, in (0, 1]: 1 records
    /// all; 0.01 keeps the accesses of about one block in a hundred (chosen
    /// by a hash of the block), for a trace a hundredth the size whose
    /// replay scales the cache by the same share.
    pub sample_rate: f64,
}

impl Default for BlockTraceOptions {
    fn default() -> Self {
        BlockTraceOptions { sample_rate: 1.0 }
    }
}

crate::setters::setters!(BlockTraceOptions { sample_rate: f64 });

impl BlockTraceOptions {
    /// The header's sampling threshold for `sample_rate`, or why it is out
    /// of range.
    pub(crate) fn threshold(&self) -> Result<u64, String> {
        let r = self.sample_rate;
        if !(r > 0.0 && r <= 1.0) {
            return Err(format!("block trace sample rate {r} is not in (0, 1]"));
        }
        Ok(((r * SAMPLE_ALL as f64).round() as u64).clamp(1, SAMPLE_ALL))
    }
}
