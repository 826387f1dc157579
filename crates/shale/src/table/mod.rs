//! Sorted string tables. Format version 3 is page-structured:
//! data blocks of whole 4 KiB pages, the filter cut into page-sized partitions
//! (blocked Bloom or binary fuse) under a top-level filter index, and locators
//! (compact Elias-Fano codes of the blocks' first keys, implicit page handles)
//! under a top-level index ([`paged`]). Versions 1 and 2 keep data blocks with
//! restart points, one cache-line-blocked Bloom filter over user keys, a
//! partitioned index with delta-encoded block handles, a tagged properties
//! block and a fixed footer. Version 4 (the default) is version 3 with an
//! optional range-deletion block ([`crate::rangedel`]) before the properties.
//! The byte formats are specified in
//! `docs/format/table.md` and in grammar comments on the encoders
//! ([`builder`], [`block`], [`filter`], [`paged`], [`layout`]).
//!
//! The reader's block accesses are exactly accounted (see [`reader`]): a point
//! lookup touches the filter (in version 3 the top-level filter index and one
//! partition), the top-level index, one index partition and one data block,
//! each counted as a cache hit or as a cache miss plus one physical read.
//!
//! # Concurrency
//!
//! [`TableBuilder`] is used by one thread. [`TableReader`] is immutable after
//! `open` and shared by `Arc`; cached blocks are immutable and shared by `Arc`.

use std::sync::Arc;

use crate::cache::LruCache;
use crate::format::ValueKind;
use crate::metrics::Stats;
use crate::pinned::PinnedValue;
use crate::trace::Tracer;

pub(crate) mod block;
pub(crate) mod builder;
pub(crate) mod cached;
pub(crate) mod filter;
pub(crate) mod index;
pub(crate) mod layout;
pub(crate) mod paged;
pub(crate) mod reader;
pub(crate) mod salvage;
#[cfg(test)]
pub(crate) mod test_util;
#[cfg(test)]
mod tests;

pub(crate) use builder::TableBuilder;
pub(crate) use cached::CachedBlock;
pub use reader::inspect_table;
pub(crate) use reader::{check_metadata, TableReader};

/// Block compression. Persisted in every block trailer and in the
/// properties: DO NOT CHANGE the values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum Compression {
    /// Stored as is.
    #[default]
    None = 0,
    /// LZ4 block format.
    Lz4 = 1,
}

impl Compression {
    /// The compression stored as `code`, `None` for a code this build does
    /// not know.
    pub fn from_code(code: u8) -> Option<Compression> {
        match code {
            0 => Some(Compression::None),
            1 => Some(Compression::Lz4),
            _ => None,
        }
    }

    /// Its name: `none` or `lz4`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
        }
    }
}

/// What a block of a table's layout ([`BlockInfo`]) holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LayoutKind {
    /// A data block.
    Data,
    /// A whole-table filter (versions 1 and 2) or a filter partition (3 and 4).
    Filter,
    /// The top-level filter index (versions 3 and 4).
    FilterIndex,
    /// An index partition (a locator in versions 3 and 4).
    Index,
    /// The top-level index.
    TopIndex,
    /// The range-deletion block (version 4).
    RangeDel,
    /// The properties block.
    Properties,
}

impl LayoutKind {
    /// Its name in `shale sst`'s output: `data`, `filter`, `filter_index`,
    /// `index`, `top_index`, `range_del` or `properties`.
    pub fn name(self) -> &'static str {
        match self {
            LayoutKind::Data => "data",
            LayoutKind::Filter => "filter",
            LayoutKind::FilterIndex => "filter_index",
            LayoutKind::Index => "index",
            LayoutKind::TopIndex => "top_index",
            LayoutKind::RangeDel => "range_del",
            LayoutKind::Properties => "properties",
        }
    }
}

impl std::fmt::Display for LayoutKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The filter a version-3 table's filter partitions use (versions 1 and 2
/// always write one blocked Bloom filter per table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterKind {
    /// Cache-line-blocked Bloom filter of `bits_per_key` bits a key (10 bits:
    /// about 0.9% false positives).
    Bloom,
    /// Binary fuse filter with fingerprints of [`fuse_fingerprint_bits`]
    /// bits: for the same false-positive rate, about 1.8 bits a key fewer than
    /// the Bloom filter (9 bits a key: 7-bit fingerprints, 8.7 bits a key in a
    /// full page, about 0.8% false positives).
    BinaryFuse,
}

/// The fingerprint width a binary fuse filter gets for a budget of
/// `bits_per_key`: the widest whose filter (about 1.24 slots a key in a
/// page-sized partition) stays within the budget, in 4..=16.
pub fn fuse_fingerprint_bits(bits_per_key: u32) -> u8 {
    (bits_per_key.saturating_mul(100) / 124).clamp(4, 16) as u8
}

/// Keys one page-sized filter partition of `kind` at `bits_per_key` holds
/// in table format 3 and later (the partition and its paged tail fill the
/// page): `4096 / keys` is what a key costs in filter bytes.
pub fn keys_per_filter_page(kind: FilterKind, bits_per_key: u32) -> usize {
    builder::filter_partition_keys(kind, bits_per_key, block::PAGE_SIZE as usize)
}

/// How to build one table.
#[derive(Clone, Debug)]
pub(crate) struct TableBuildOptions {
    /// Target uncompressed size of a data block: a block is cut before an entry
    /// that would take it past this size (a block holds at least one entry).
    pub block_size: usize,
    /// Keys between restart points in data blocks (at least 1).
    pub block_restart_interval: usize,
    /// Target size of an index partition: a partition is cut after the entry that
    /// reaches this size.
    pub index_partition_size: usize,
    /// Compression of data blocks (applied per block when it saves at least 1/8).
    pub compression: Compression,
    /// Bits per key of the table's filter; `None` writes no filter.
    pub filter_bits_per_key: Option<u32>,
    /// The filter of version-3 filter partitions.
    pub filter_kind: FilterKind,
    /// Table format version to write: 2 (page-aligned data blocks) or 1.
    pub format_version: u32,
}

impl Default for TableBuildOptions {
    /// 4 KiB data blocks, restarts every 16 keys, 4 KiB index partitions, no
    /// compression, 10-bit Bloom filters, the current format version.
    fn default() -> Self {
        TableBuildOptions {
            block_size: 4096,
            block_restart_interval: 16,
            index_partition_size: 4096,
            compression: Compression::None,
            filter_bits_per_key: Some(10),
            filter_kind: FilterKind::Bloom,
            format_version: crate::format::TABLE_FORMAT_VERSION,
        }
    }
}

/// Summary written in a table's properties block. Byte counts of blocks include
/// their 5-byte trailers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableProperties {
    /// Table format version (1 to 4).
    pub format_version: u32,
    /// Entries (values and tombstones).
    pub num_entries: u64,
    /// Tombstones among them.
    pub num_deletions: u64,
    /// Sum of the lengths of the encoded internal keys added.
    pub raw_key_bytes: u64,
    /// Sum of the lengths of the values added.
    pub raw_value_bytes: u64,
    /// Bytes of all data blocks as stored (compressed if so, with trailers).
    pub data_bytes: u64,
    /// Zero bytes between data blocks that start each block on a page
    /// boundary (version 2; 0 in version 1). The data region is
    /// `data_bytes + data_padding_bytes` long.
    pub data_padding_bytes: u64,
    /// Number of data blocks.
    pub data_blocks: u64,
    /// Bytes of all index partitions, with trailers.
    pub index_partition_bytes: u64,
    /// Number of index partitions.
    pub index_partitions: u64,
    /// Bytes of the top-level index, with its trailer.
    pub top_level_index_bytes: u64,
    /// Bytes of the filter block with its trailer; 0 without a filter.
    pub filter_bytes: u64,
    /// Bits per key the filter was built with; 0 without a filter.
    pub filter_bits_per_key: u32,
    /// First internal key of the table (empty for an empty table).
    pub smallest_key: Vec<u8>,
    /// Last internal key of the table (empty for an empty table).
    pub largest_key: Vec<u8>,
    /// Smallest sequence number (0 for an empty table).
    pub smallest_seqno: u64,
    /// Largest sequence number (0 for an empty table).
    pub largest_seqno: u64,
    /// Size of the whole file.
    pub file_size: u64,
    /// The [`Compression`] requested for data blocks (some may be stored raw).
    pub compression: Compression,
    /// Filter partitions (version 3; 0 without a filter or before version 3).
    pub filter_partitions: u64,
    /// Bytes of the top-level filter index, with its trailer (version 3; also
    /// counted in `filter_bytes`).
    pub top_level_filter_index_bytes: u64,
    /// Range deletions in the range-deletion block, one per fragment and
    /// sequence number (version 4; 0 before).
    pub range_deletions: u64,
    /// Bytes of the range-deletion block with its trailer, which sits right
    /// before the properties (version 4; 0 = none).
    pub range_del_bytes: u64,
}

/// Cache key of a block: (table file number, block offset).
pub(crate) type BlockCacheKey = (u64, u64);

/// The block cache.
pub(crate) type BlockCache = LruCache<BlockCacheKey, Arc<CachedBlock>>;

/// What a table reader needs from its database.
#[derive(Clone)]
pub(crate) struct ReadContext {
    /// The shared block cache (also charged with pinned metadata).
    pub cache: Arc<BlockCache>,
    /// Where block reads are counted.
    pub stats: Arc<Stats>,
    /// Verify block checksums on every read from the file.
    pub verify_checksums: bool,
    /// Where block accesses are traced (off unless a trace is started).
    pub tracer: Arc<Tracer>,
}

/// Result of a point lookup in one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TableGet {
    /// The newest visible entry: a value (a slice of its cached data block),
    /// or a tombstone (`ValueKind::Delete`, empty value).
    Found(ValueKind, PinnedValue),
    /// The filter excluded the table.
    FilteredOut,
    /// No entry for the key.
    Absent,
    /// A batch of reads is being planned on this thread and the Get needs a
    /// data block the cache lacks: its read is recorded (see
    /// [`reader::BatchScope`]), and the Get is to be run again once it is done.
    Deferred,
}

/// One block of a table, as `shale sst` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockInfo {
    /// What the block holds.
    pub kind: LayoutKind,
    /// Offset of the block in the file.
    pub offset: u64,
    /// Size of the block contents (without trailer).
    pub size: u64,
}

/// Layout of a table file.
#[derive(Clone, Debug)]
pub struct TableLayout {
    /// The decoded properties block.
    pub properties: TableProperties,
    /// Every block in file order: data blocks, the filter, index partitions, the
    /// top-level index, the properties (the footer follows at `footer_offset`).
    pub blocks: Vec<BlockInfo>,
    /// Offset of the 64-byte footer.
    pub footer_offset: u64,
    /// Size of the file.
    pub file_size: u64,
}
