//! Options of a database, of reads and of writes.

use std::sync::Arc;

use shale_env::{FileSystem, PosixFs, PosixOptions};

pub use crate::table::{fuse_fingerprint_bits, Compression, FilterKind};

use crate::events::EventListener;
pub use crate::format::NUM_LEVELS;
pub use crate::wal::WalRecoveryMode;

pub(crate) use crate::setters::setters;

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

/// The filter policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FilterPolicy {
    /// Bits per key, the memory budget of a filter (a Bloom filter of 10
    /// gives about 1% false positives; a binary fuse filter of 9, 0.8%).
    pub bits_per_key: u32,
    /// Where filters are written and consulted.
    pub levels: FilterLevels,
    /// The filter of table format 3's filter partitions (format 1 and 2
    /// tables always get a Bloom filter).
    pub kind: FilterKind,
    /// Bits per key of single levels, overriding `bits_per_key` where set.
    pub level_bits_per_key: [Option<u32>; NUM_LEVELS],
}

setters!(FilterPolicy {
    bits_per_key: u32,
    levels: FilterLevels,
    kind: FilterKind,
    level_bits_per_key: [Option<u32>; NUM_LEVELS],
});

impl Default for FilterPolicy {
    /// Binary fuse filters of 9 bits a key (7-bit fingerprints, about 0.8%
    /// false positives) on every level but the last.
    fn default() -> Self {
        FilterPolicy {
            bits_per_key: 9,
            levels: FilterLevels::AllButLast,
            kind: FilterKind::BinaryFuse,
            level_bits_per_key: [None; NUM_LEVELS],
        }
    }
}

impl FilterPolicy {
    /// A Bloom filter policy of `bits_per_key` on every level but the last
    /// (the read path of the study and of Pebble).
    pub fn bloom(bits_per_key: u32) -> FilterPolicy {
        FilterPolicy {
            bits_per_key,
            kind: FilterKind::Bloom,
            ..FilterPolicy::default()
        }
    }

    /// Bits per key of tables written to `level`.
    pub fn bits_per_key_at(&self, level: usize) -> u32 {
        self.level_bits_per_key
            .get(level)
            .copied()
            .flatten()
            .unwrap_or(self.bits_per_key)
    }

    /// True if tables of `level` carry a filter and Gets consult it.
    pub fn applies_to(&self, level: usize) -> bool {
        match self.levels {
            FilterLevels::AllButLast => level + 1 < NUM_LEVELS,
            FilterLevels::All => true,
            FilterLevels::None => false,
        }
    }
}

/// A set of levels (L0 = bit 0 ... L6 = bit 6), for [`MetadataPlacement`].
///
/// Built with [`LevelSet::NONE`], [`LevelSet::ALL`], [`LevelSet::all_but_last`]
/// or [`LevelSet::with`]; a level at or past [`NUM_LEVELS`] makes
/// [`crate::Db::open`] fail with `InvalidArgument`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LevelSet(u64);

impl LevelSet {
    /// No level.
    pub const NONE: LevelSet = LevelSet(0);
    /// Every level.
    pub const ALL: LevelSet = LevelSet((1 << NUM_LEVELS) - 1);

    /// Every level but the last (L6), which holds about 90% of the data and
    /// so most of the metadata.
    pub const fn all_but_last() -> LevelSet {
        LevelSet(Self::ALL.0 & !(1 << (NUM_LEVELS - 1)))
    }

    /// This set and `level` (a level past [`NUM_LEVELS`] is kept, so that
    /// validation refuses it).
    pub const fn with(self, level: usize) -> LevelSet {
        let bit = if level < 63 { level } else { 63 };
        LevelSet(self.0 | (1 << bit))
    }

    /// The set of `levels`.
    pub fn of(levels: &[usize]) -> LevelSet {
        levels.iter().fold(LevelSet::NONE, |s, &l| s.with(l))
    }

    /// True if `level` is in the set.
    pub const fn contains(self, level: usize) -> bool {
        level < 64 && self.0 & (1 << level) != 0
    }

    /// True if the set names no level.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The smallest level named that does not exist, if any.
    fn out_of_range(self) -> Option<usize> {
        (NUM_LEVELS..64).find(|&l| self.contains(l))
    }
}

/// Where each kind of table metadata lives, per level: with the open table
/// reader (a level in the kind's set) or in the block cache (the default).
///
/// Metadata held with a reader is what LevelDB does and RocksDB by default
/// (`cache_index_and_filter_blocks = false`): a Get never looks it up in the
/// block cache, so a block cache smaller than the metadata of the tables a
/// Get visits does not make every Get re-read and re-decode it.
///
/// - **Loaded lazily**, by the first use (a Get or an iterator reaching the
///   block), with one physical read counted under the block's kind as any
///   read; later uses count nothing, as pinned blocks. A table opened but
///   never searched (or whose filter answers every Get) reads nothing more
///   than its footer and properties, and only the filter partitions Gets need
///   are loaded. A block read by two threads at once may be read twice (both
///   reads counted); one copy is kept.
/// - **Lives as long as the reader**: the placement is decided when the
///   reader opens, at the level where its table is then (a table moved down
///   by a trivial move keeps its reader); the bytes go when the reader closes
///   (its table deleted by a compaction, or evicted from the table cache).
/// - **Not charged to the block cache** (as RocksDB's default and LevelDB):
///   held bytes come on top of [`Options::block_cache_bytes`]. They are
///   counted in [`crate::Metrics::metadata_held_bytes`] per
///   [`crate::MetadataKind`] (`shale stats` prints them).
///
/// [`Options::pin_table_metadata`] is the older, charged form of holding the
/// top-level index and filter (read at open and charged to the block cache as
/// pinned bytes); where it applies it takes precedence over this placement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MetadataPlacement {
    /// Levels whose tables hold their top-level index.
    pub top_index: LevelSet,
    /// Levels whose tables hold the index partitions (format 3's locators)
    /// Gets and iterators use.
    pub index_partitions: LevelSet,
    /// Levels whose tables hold their top-level filter (format 3's top-level
    /// filter index; the whole filter of formats 1 and 2).
    pub top_filter: LevelSet,
    /// Levels whose tables hold the filter partitions Gets use (format 3).
    pub filter_partitions: LevelSet,
}

impl MetadataPlacement {
    /// Everything in the block cache (the default).
    pub const NONE: MetadataPlacement = MetadataPlacement {
        top_index: LevelSet::NONE,
        index_partitions: LevelSet::NONE,
        top_filter: LevelSet::NONE,
        filter_partitions: LevelSet::NONE,
    };

    /// The top-level index and the index partitions held with the reader at
    /// `levels`; filters in the block cache.
    pub const fn indexes_at(levels: LevelSet) -> MetadataPlacement {
        MetadataPlacement {
            top_index: levels,
            index_partitions: levels,
            ..MetadataPlacement::NONE
        }
    }

    /// Every kind held with the reader at `levels`.
    pub const fn all_kinds_at(levels: LevelSet) -> MetadataPlacement {
        MetadataPlacement {
            top_index: levels,
            index_partitions: levels,
            top_filter: levels,
            filter_partitions: levels,
        }
    }

    /// The levels at which metadata of `kind` is held with the reader.
    pub fn levels(&self, kind: crate::metrics::MetadataKind) -> LevelSet {
        use crate::metrics::MetadataKind as K;
        match kind {
            K::TopIndex => self.top_index,
            K::IndexPartitions => self.index_partitions,
            K::TopFilter => self.top_filter,
            K::FilterPartitions => self.filter_partitions,
        }
    }

    /// True if metadata of `kind` is held with readers of tables at `level`.
    pub fn holds(&self, kind: crate::metrics::MetadataKind, level: usize) -> bool {
        self.levels(kind).contains(level)
    }
}

/// Options of [`crate::Db::open`].
#[derive(Clone)]
#[non_exhaustive]
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
    /// Each memtable carries a Bloom filter over its keys, of
    /// `write_buffer_size / 32` bytes (counted in the memtable's size), so
    /// that a Get of a key it lacks skips the skiplist search (default true;
    /// RocksDB's `memtable_whole_key_filtering`). Worth its memory unless
    /// most Gets find their key in the memtable.
    pub memtable_filter: bool,
    /// Target uncompressed size of a data block (default 4 KiB).
    pub block_size: usize,
    /// Keys between restart points in a data block (default 16).
    pub block_restart_interval: usize,
    /// Target size of an index partition (default 4 KiB).
    pub index_partition_size: usize,
    /// Compression of data blocks (default none).
    pub compression: Compression,
    /// Filters (default: binary fuse filters of 9 bits per key on all levels
    /// but the last; see [`FilterPolicy`]).
    pub filter_policy: FilterPolicy,
    /// Block cache capacity in bytes (default 32 MiB). Pinned metadata is
    /// charged to it too. Memtables are not.
    pub block_cache_bytes: u64,
    /// Most shards of the block cache and the table cache (default 16); small
    /// caches use fewer, so that each block-cache shard holds at least 4 MiB
    /// and each table-cache shard 16 readers.
    pub cache_shards: usize,
    /// Pin each table's top-level index and (outside the last level) its filter
    /// in the table reader instead of the block cache, read when the table
    /// opens and charged to the block cache's budget (default false). The
    /// charged counterpart of [`MetadataPlacement`] for the top-level blocks
    /// (see [`Options::table_metadata`]); where both apply, this wins.
    pub pin_table_metadata: bool,
    /// Table readers kept open (default 1000).
    pub max_open_files: usize,
    /// Target size of the tables compactions write, at L0 (default 2 MiB); it
    /// doubles per level counted from the base level (the level L0 compacts
    /// into), whose tables get twice this, as in Pebble: a table at level `L`
    /// targets `target_file_size_base << (1 + L - base level)`. Outputs are
    /// cut between half and twice the target, preferably where a table of the
    /// next level starts.
    pub target_file_size_base: u64,
    /// Table format version written by flushes and compactions (default 4:
    /// version 3 with room for range deletions; 3: data blocks, filter
    /// partitions and compact index partitions each on a 4 KiB page, so a Get
    /// reads one page per block; 2: page-aligned data blocks, one filter block
    /// per table; 1: blocks back to back). A table holding range deletions is
    /// written in version 4 whatever this says. Tables of every version are
    /// read.
    pub table_format_version: u32,
    /// Verify block checksums on every read (default true).
    pub verify_checksums: bool,
    /// Background threads running flushes and compactions (default 2). One
    /// flush runs at a time; the other threads compact.
    pub max_background_jobs: usize,
    /// Most subcompactions one compaction is split into (default 2; 1 to
    /// at most [`MAX_SUBCOMPACTIONS`]). A compaction whose input tables
    /// hold at least two output tables' worth of bytes (an L0 -> base
    /// compaction above all) is cut into up to this many disjoint user-key
    /// ranges at input tables' boundaries, balanced by estimated bytes; each
    /// range is merged on a thread of its own into tables of its own, and
    /// all of them are installed in one manifest edit, as one compaction.
    /// The extra threads are started by the compaction and end with it:
    /// they are not taken from the `max_background_jobs` threads, so the
    /// thread kept free for flushes stays free. The default of 2 suits a
    /// two-core machine: one background thread compacts while the one kept
    /// for flushes is idle most of the time, so a second range uses the
    /// second core; more ranges than cores only contend for them.
    pub max_subcompactions: usize,
    /// CPU nice value of the threads that merge compactions (default 0: the
    /// process's priority). 1 to 19 lower them (and put their I/O in the
    /// lowest level of the best-effort class, which priority-aware I/O
    /// schedulers serve after Gets' reads), so that on a machine whose cores
    /// are all busy, Gets and writes run first and compactions take what is
    /// left, as with RocksDB's `LowerThreadPoolCPUPriority`. Every range of
    /// a compaction then runs on a thread of its own that lowers itself
    /// (a thread cannot raise its priority back without privilege); flushes
    /// keep the process's priority. Above 19, or any but 0 where thread
    /// priorities are not supported (outside Linux), is `InvalidArgument`.
    pub compaction_nice: i32,
    /// L0 tables that make L0 eligible for compaction (score 1; at least
    /// 1). `None`, the default, lets the filter policy decide:
    /// [`L0_COMPACTION_TRIGGER_WITH_FILTERS`] (8) when L0 tables carry
    /// filters, so that each rewrite of the base level takes down several
    /// times its size (a Get pays an L0 table a filter probe, about 1% of
    /// a read), and [`L0_COMPACTION_TRIGGER_WITHOUT_FILTERS`] (4, RocksDB's,
    /// Pebble's and LevelDB's default) when they do not, as every L0 table
    /// then costs a Get a data-block read. See
    /// [`Options::effective_l0_compaction_trigger`].
    pub l0_compaction_trigger: Option<usize>,
    /// L0 tables at which writes are delayed to
    /// [`Options::delayed_write_rate`] (default 20).
    pub l0_slowdown_writes_trigger: usize,
    /// L0 tables at which writes wait for compactions (default 36).
    pub l0_stop_writes_trigger: usize,
    /// Target size of the base level, the level L0 compacts into (default
    /// 64 MiB). Levels are sized dynamically from the last level up, as with
    /// RocksDB's `level_compaction_dynamic_level_bytes` and Pebble.
    pub base_level_bytes: u64,
    /// Size ratio between adjacent levels (default 10).
    pub level_size_multiplier: f64,
    /// Estimated compaction debt at which writes are delayed to
    /// [`Options::delayed_write_rate`] (default 64 GiB).
    pub soft_pending_compaction_bytes: u64,
    /// Estimated compaction debt at which writes wait (default 256 GiB).
    pub hard_pending_compaction_bytes: u64,
    /// Bytes per second writes are let through while delayed (L0 at
    /// `l0_slowdown_writes_trigger` or the compaction debt at
    /// `soft_pending_compaction_bytes`; default 16 MiB/s; must be positive),
    /// as RocksDB's write controller does: each write group waits its
    /// bytes over the rate. While the delay lasts the rate adapts from one
    /// write group to the next: it falls to 0.8 times itself while the L0
    /// table count or the debt behind the delay keeps growing, rises 1.25
    /// times (at most back to this) when it shrinks, and never falls below
    /// [`MIN_DELAYED_WRITE_RATE`]. It starts again from this value at the
    /// next delay.
    pub delayed_write_rate: u64,
    /// Cap on the bytes per second written by flushes and compactions together
    /// (a token bucket; default none).
    pub compaction_rate_limit: Option<u64>,
    /// Bytes a compaction reads from one input table at a time (default
    /// 512 KiB; at most [`MAX_COMPACTION_READAHEAD`]). The inputs are opened
    /// again for the compaction with [`FileSystem::open_scan`], which on the
    /// operating system's file system bypasses the page cache, so that
    /// compactions neither evict what Gets read from it nor spend a device
    /// request per block. 0 reads block by block through the table's own
    /// handle, as Gets do.
    pub compaction_readahead_bytes: u64,
    /// Size past which the manifest is rewritten as a snapshot into a new file
    /// (default 64 MiB).
    pub max_manifest_bytes: u64,
    /// What recovery accepts at the end of a write-ahead log (default
    /// [`WalRecoveryMode::TornWrites`]).
    pub wal_recovery_mode: WalRecoveryMode,
    /// Threads that look up the keys of one [`crate::Db::multi_get`]
    /// together with the calling thread, so that one caller keeps many
    /// device reads in flight (default 32; at most 1024). On a file system
    /// that batches reads ([`FileSystem::batches_reads`]: io_uring on Linux)
    /// no thread is used: the calling thread defers the data-block reads of
    /// its lookups and issues them together. Elsewhere, a call of more
    /// than one key answers the keys a memtable holds itself and shares the
    /// table lookups of the others between itself and up to this many of
    /// the threads. All callers share the threads, so at most this many
    /// reads plus one per caller are in flight: 32 lets two callers keep a
    /// device at a queue depth of about 32. Waking a thread costs more than
    /// a lookup the block cache answers, so the calling thread looks keys up
    /// alone until one reads the device. 0 looks every key up on the
    /// calling thread, one after the other. The threads start with the first `multi_get` that needs them
    /// and stop when the database closes. Single Gets never use them.
    pub read_threads: usize,
    /// Told of flushes, compactions, write stalls, background errors and
    /// tables created and deleted, on a thread of their own (default none;
    /// see [`crate::events`]).
    pub listeners: Vec<Arc<dyn EventListener>>,
    /// Which table metadata each level keeps with its open table readers,
    /// outside the block cache and not charged to it (default: none, all
    /// metadata goes through the block cache; see [`MetadataPlacement`]).
    pub table_metadata: MetadataPlacement,
}

setters!(Options {
    fs: Arc<dyn FileSystem>,
    create_if_missing: bool,
    error_if_exists: bool,
    write_buffer_size: usize,
    max_immutable_memtables: usize,
    memtable_filter: bool,
    block_size: usize,
    block_restart_interval: usize,
    index_partition_size: usize,
    compression: Compression,
    filter_policy: FilterPolicy,
    block_cache_bytes: u64,
    cache_shards: usize,
    pin_table_metadata: bool,
    max_open_files: usize,
    target_file_size_base: u64,
    table_format_version: u32,
    verify_checksums: bool,
    max_background_jobs: usize,
    max_subcompactions: usize,
    compaction_nice: i32,
    l0_compaction_trigger: Option<usize>,
    l0_slowdown_writes_trigger: usize,
    l0_stop_writes_trigger: usize,
    base_level_bytes: u64,
    level_size_multiplier: f64,
    soft_pending_compaction_bytes: u64,
    hard_pending_compaction_bytes: u64,
    delayed_write_rate: u64,
    compaction_rate_limit: Option<u64>,
    compaction_readahead_bytes: u64,
    max_manifest_bytes: u64,
    wal_recovery_mode: WalRecoveryMode,
    read_threads: usize,
    listeners: Vec<Arc<dyn EventListener>>,
    table_metadata: MetadataPlacement,
});

impl Default for Options {
    fn default() -> Self {
        Options {
            fs: Arc::new(PosixFs::new(PosixOptions::default())),
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 64 << 20,
            max_immutable_memtables: 2,
            memtable_filter: true,
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
            table_format_version: crate::format::TABLE_FORMAT_VERSION,
            verify_checksums: true,
            max_background_jobs: 2,
            max_subcompactions: 2,
            compaction_nice: 0,
            l0_compaction_trigger: None,
            l0_slowdown_writes_trigger: 20,
            l0_stop_writes_trigger: 36,
            base_level_bytes: 64 << 20,
            level_size_multiplier: 10.0,
            soft_pending_compaction_bytes: 64 << 30,
            hard_pending_compaction_bytes: 256 << 30,
            delayed_write_rate: 16 << 20,
            compaction_rate_limit: None,
            compaction_readahead_bytes: 512 << 10,
            max_manifest_bytes: 64 << 20,
            wal_recovery_mode: WalRecoveryMode::default(),
            listeners: Vec::new(),
            read_threads: 32,
            table_metadata: MetadataPlacement::NONE,
        }
    }
}

/// The largest [`Options::compaction_readahead_bytes`] (64 MiB): every input
/// of a compaction holds a buffer of this size.
pub const MAX_COMPACTION_READAHEAD: u64 = 64 << 20;

/// The most background threads [`Options::max_background_jobs`] may ask for.
pub const MAX_BACKGROUND_JOBS: usize = 256;

/// The most ranges [`Options::max_subcompactions`] may split a compaction
/// into (each runs on a thread of its own while the compaction lasts).
pub const MAX_SUBCOMPACTIONS: usize = 64;

/// The floor of the adaptive delayed-write rate (16 KiB/s): however long
/// the delay lasts and however the debt grows, writes go on at least this
/// fast until a stop condition stops them (RocksDB's floor is the same).
pub const MIN_DELAYED_WRITE_RATE: u64 = 16 << 10;

/// The most threads [`Options::read_threads`] may ask for.
pub const MAX_READ_THREADS: usize = 1024;

/// L0's compaction trigger by default when L0 tables carry filters.
pub const L0_COMPACTION_TRIGGER_WITH_FILTERS: usize = 8;

/// L0's compaction trigger by default when L0 tables carry no filter.
pub const L0_COMPACTION_TRIGGER_WITHOUT_FILTERS: usize = 4;

impl Options {
    /// The L0 table count that makes L0 eligible for compaction:
    /// [`Options::l0_compaction_trigger`] when set, else the default for
    /// whether the filter policy gives L0 tables a filter.
    pub fn effective_l0_compaction_trigger(&self) -> usize {
        self.l0_compaction_trigger.unwrap_or(
            if self.filter_policy.applies_to(0) && self.filter_policy.bits_per_key_at(0) > 0 {
                L0_COMPACTION_TRIGGER_WITH_FILTERS
            } else {
                L0_COMPACTION_TRIGGER_WITHOUT_FILTERS
            },
        )
    }

    /// Bytes of each live memtable's key filter (0: none); see
    /// [`Options::memtable_filter`].
    pub(crate) fn memtable_filter_bytes(&self) -> usize {
        if self.memtable_filter {
            self.write_buffer_size / 32
        } else {
            0
        }
    }

    /// Checks that the options make sense together.
    pub(crate) fn validate(&self) -> crate::error::Result<()> {
        let bad = |what: &str| Err(crate::error::Error::InvalidArgument(what.to_string()));
        if !(crate::format::MIN_TABLE_FORMAT_VERSION..=crate::format::TABLE_FORMAT_VERSION)
            .contains(&self.table_format_version)
        {
            return bad("table_format_version must be 1, 2, 3 or 4");
        }
        if !(0..=shale_env::priority::MAX_NICE).contains(&self.compaction_nice) {
            return bad("compaction_nice must be within 0 to 19");
        }
        if self.compaction_nice != 0 && !cfg!(target_os = "linux") {
            return bad("compaction_nice needs thread priorities, which are set on Linux only");
        }
        if self.l0_compaction_trigger == Some(0) {
            return bad("l0_compaction_trigger must be at least 1");
        }
        if self.l0_slowdown_writes_trigger < self.effective_l0_compaction_trigger()
            || self.l0_stop_writes_trigger < self.l0_slowdown_writes_trigger
        {
            return bad("L0 triggers must satisfy compaction <= slowdown <= stop");
        }
        if self.soft_pending_compaction_bytes > self.hard_pending_compaction_bytes {
            return bad("soft_pending_compaction_bytes exceeds the hard limit");
        }
        if self.level_size_multiplier.is_nan() || self.level_size_multiplier < 2.0 {
            return bad("level_size_multiplier must be at least 2");
        }
        if self.write_buffer_size == 0 || self.block_size == 0 || self.base_level_bytes == 0 {
            return bad("write_buffer_size, block_size and base_level_bytes must be positive");
        }
        if self.compaction_rate_limit == Some(0) {
            return bad("compaction_rate_limit must be positive (None for no limit)");
        }
        if self.compaction_readahead_bytes > MAX_COMPACTION_READAHEAD {
            return bad(&format!(
                "compaction_readahead_bytes must be at most {MAX_COMPACTION_READAHEAD}, not {}",
                self.compaction_readahead_bytes
            ));
        }
        if !(1..=MAX_BACKGROUND_JOBS).contains(&self.max_background_jobs) {
            return bad(&format!(
                "max_background_jobs must be between 1 and {MAX_BACKGROUND_JOBS}, not {}",
                self.max_background_jobs
            ));
        }
        if !(1..=MAX_SUBCOMPACTIONS).contains(&self.max_subcompactions) {
            return bad(&format!(
                "max_subcompactions must be between 1 and {MAX_SUBCOMPACTIONS}, not {}",
                self.max_subcompactions
            ));
        }
        if self.delayed_write_rate == 0 {
            return bad("delayed_write_rate must be positive (bytes per second)");
        }
        if self.read_threads > MAX_READ_THREADS {
            return Err(crate::error::Error::InvalidArgument(format!(
                "read_threads must be at most {} (got {}; 0 reads a multi_get's keys on the calling thread)",
                MAX_READ_THREADS,
                self.read_threads
            )));
        }
        for kind in crate::metrics::MetadataKind::ALL {
            if let Some(level) = self.table_metadata.levels(kind).out_of_range() {
                return Err(crate::error::Error::InvalidArgument(format!(
                    "table_metadata.{} names level {level}; levels are 0 to {}",
                    kind.name(),
                    NUM_LEVELS - 1
                )));
            }
        }
        Ok(())
    }
}

/// Options of one write.
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub struct WriteOptions {
    /// Sync the WAL before acknowledging (survives a machine crash). Without it
    /// a write survives a process crash but may be lost by a machine crash.
    pub sync: bool,
}

setters!(WriteOptions { sync: bool });

impl WriteOptions {
    /// A synced write: acknowledged once its WAL record is on stable storage.
    pub const SYNC: WriteOptions = WriteOptions { sync: true };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_policies_choose_the_kind_and_the_bits_per_level() {
        let fuse = FilterPolicy::default();
        assert_eq!((fuse.kind, fuse.bits_per_key), (FilterKind::BinaryFuse, 9));
        assert_eq!(fuse_fingerprint_bits(fuse.bits_per_key), 7);
        let mut bloom = FilterPolicy::bloom(10);
        assert_eq!(bloom.kind, FilterKind::Bloom);
        assert_eq!(bloom.levels, FilterLevels::AllButLast);
        bloom.level_bits_per_key[5] = Some(6);
        assert_eq!(bloom.bits_per_key_at(5), 6);
        assert_eq!(bloom.bits_per_key_at(4), 10);
        assert_eq!(bloom.bits_per_key_at(99), 10);
        assert!(bloom.applies_to(5) && !bloom.applies_to(6));
    }

    #[test]
    fn l0_compacts_sooner_without_filters_unless_told() {
        let with = Options::default();
        assert_eq!(with.effective_l0_compaction_trigger(), 8);
        let without = Options {
            filter_policy: FilterPolicy {
                levels: FilterLevels::None,
                ..FilterPolicy::default()
            },
            ..Options::default()
        };
        assert_eq!(without.effective_l0_compaction_trigger(), 4);
        let mut zero_bits_at_l0 = FilterPolicy::bloom(10);
        zero_bits_at_l0.level_bits_per_key[0] = Some(0);
        let o = Options {
            filter_policy: zero_bits_at_l0,
            ..Options::default()
        };
        assert_eq!(o.effective_l0_compaction_trigger(), 4);
        let told = Options {
            l0_compaction_trigger: Some(12),
            ..without.clone()
        };
        assert_eq!(told.effective_l0_compaction_trigger(), 12);
        assert!(told.validate().is_ok());
        // The slowdown trigger is checked against the trigger in effect.
        let slow5 = |o: &Options| Options {
            l0_slowdown_writes_trigger: 5,
            ..o.clone()
        };
        assert!(slow5(&without).validate().is_ok());
        assert!(slow5(&with).validate().is_err());
        assert!(Options {
            l0_compaction_trigger: Some(0),
            ..Options::default()
        }
        .validate()
        .is_err());
    }

    #[test]
    fn subcompaction_counts_and_a_zero_delayed_write_rate_are_refused() {
        let ok = |o: Options| o.validate().is_ok();
        assert!(ok(Options {
            max_subcompactions: 1,
            ..Options::default()
        }));
        assert!(ok(Options {
            max_subcompactions: MAX_SUBCOMPACTIONS,
            ..Options::default()
        }));
        assert!(ok(Options {
            delayed_write_rate: 1,
            ..Options::default()
        }));
        for (opts, what) in [
            (
                Options {
                    max_subcompactions: 0,
                    ..Options::default()
                },
                "max_subcompactions",
            ),
            (
                Options {
                    max_subcompactions: MAX_SUBCOMPACTIONS + 1,
                    ..Options::default()
                },
                "max_subcompactions",
            ),
            (
                Options {
                    delayed_write_rate: 0,
                    ..Options::default()
                },
                "delayed_write_rate",
            ),
        ] {
            let err = opts.validate().expect_err("refused");
            assert!(
                matches!(err, crate::error::Error::InvalidArgument(ref m) if m.contains(what)),
                "{err}"
            );
        }
    }

    #[test]
    fn a_zero_rate_limit_and_absurd_thread_counts_are_refused() {
        assert!(Options::default().validate().is_ok());
        assert!(Options {
            compaction_nice: 19,
            ..Options::default()
        }
        .validate()
        .is_ok());
        for opts in [
            Options {
                compaction_rate_limit: Some(0),
                ..Options::default()
            },
            Options {
                max_background_jobs: 0,
                ..Options::default()
            },
            Options {
                max_background_jobs: MAX_BACKGROUND_JOBS + 1,
                ..Options::default()
            },
            Options {
                compaction_readahead_bytes: MAX_COMPACTION_READAHEAD + 1,
                ..Options::default()
            },
            Options {
                compaction_nice: 20,
                ..Options::default()
            },
            Options {
                compaction_nice: -1,
                ..Options::default()
            },
        ] {
            let err = opts.validate().expect_err("refused");
            assert!(
                matches!(err, crate::error::Error::InvalidArgument(ref m)
                    if m.contains("compaction_rate_limit") || m.contains("max_background_jobs")
                        || m.contains("compaction_readahead_bytes")
                        || m.contains("compaction_nice")),
                "{err}"
            );
        }
    }
}
