//! Options of a database, of reads and of writes.

use std::sync::Arc;

use shale_env::{FileSystem, PosixFs, PosixOptions};

pub use crate::table::Compression;

/// Number of levels: L0 and L1..L6.
pub const NUM_LEVELS: usize = 7;

/// Which levels get Bloom filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterLevels {
    /// Every level except the last one (L6): the read path of Pebble and of the
    /// study. The last level holds ~90% of the data, so its filters would cost
    /// most of the filter memory and help only negative lookups.
    AllButLast,
    /// Every level.
    All,
    /// No filters.
    None,
}

/// The Bloom filter policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilterPolicy {
    /// Bits per key (10 gives about 1% false positives).
    pub bits_per_key: u32,
    /// Where filters are written and consulted.
    pub levels: FilterLevels,
}

impl Default for FilterPolicy {
    fn default() -> Self {
        FilterPolicy {
            bits_per_key: 10,
            levels: FilterLevels::AllButLast,
        }
    }
}

impl FilterPolicy {
    /// True if tables of `level` carry a filter and Gets consult it.
    pub fn applies_to(&self, level: usize) -> bool {
        match self.levels {
            FilterLevels::AllButLast => level + 1 < NUM_LEVELS,
            FilterLevels::All => true,
            FilterLevels::None => false,
        }
    }
}

/// Options of [`crate::Db::open`].
#[derive(Clone)]
pub struct Options {
    /// File system to run on (default: [`PosixFs`] with buffered I/O).
    pub fs: Arc<dyn FileSystem>,
    /// Create the database if the directory holds none (default true).
    pub create_if_missing: bool,
    /// Fail if a database exists (default false).
    pub error_if_exists: bool,
    /// Size at which the memtable becomes immutable and is flushed (default 64 MiB).
    pub write_buffer_size: usize,
    /// Immutable memtables waiting for flush before writes wait (default 2).
    pub max_immutable_memtables: usize,
    /// Target uncompressed size of a data block (default 4 KiB).
    pub block_size: usize,
    /// Keys between restart points in a data block (default 16).
    pub block_restart_interval: usize,
    /// Target size of an index partition (default 4 KiB).
    pub index_partition_size: usize,
    /// Compression of data blocks (default none).
    pub compression: Compression,
    /// Bloom filters (default 10 bits per key on all levels but the last).
    pub filter_policy: FilterPolicy,
    /// Block cache capacity in bytes (default 32 MiB). Pinned metadata is
    /// charged to it too. Memtables are not.
    pub block_cache_bytes: u64,
    /// Shards of the block cache and the table cache (default 16).
    pub cache_shards: usize,
    /// Pin each table's top-level index and (outside the last level) its filter
    /// in the table reader instead of the block cache, charged to the block
    /// cache's budget (default false).
    pub pin_table_metadata: bool,
    /// Table readers kept open (default 1000).
    pub max_open_files: usize,
    /// Target size of tables written at L0; doubles per level (default 2 MiB).
    pub target_file_size_base: u64,
    /// Verify block checksums on every read (default true).
    pub verify_checksums: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fs: Arc::new(PosixFs::new(PosixOptions::default())),
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 64 << 20,
            max_immutable_memtables: 2,
            block_size: 4096,
            block_restart_interval: 16,
            index_partition_size: 4096,
            compression: Compression::None,
            filter_policy: FilterPolicy::default(),
            block_cache_bytes: 32 << 20,
            cache_shards: 16,
            pin_table_metadata: false,
            max_open_files: 1000,
            target_file_size_base: 2 << 20,
            verify_checksums: true,
        }
    }
}

impl Options {
    /// Target table size at `level`.
    pub fn target_file_size(&self, level: usize) -> u64 {
        self.target_file_size_base.saturating_mul(1 << level.min(6))
    }
}

/// Options of one write.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteOptions {
    /// Sync the WAL before acknowledging (survives a machine crash). Without it
    /// a write survives a process crash but may be lost by a machine crash.
    pub sync: bool,
}

/// Options of a read or an iterator.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Read as of this snapshot's sequence number (default: the latest).
    pub snapshot: Option<crate::format::SeqNo>,
    /// Iterators: first key to return (inclusive).
    pub lower_bound: Option<Vec<u8>>,
    /// Iterators: key to stop before (exclusive).
    pub upper_bound: Option<Vec<u8>>,
}
