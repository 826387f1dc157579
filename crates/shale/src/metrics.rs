//! Counters of everything the engine reads, cheap enough for the Get path.
//!
//! Every block access is attributed to a [`BlockKind`] and counted as a cache hit,
//! a cache miss, or (for reads that never go through the cache, such as a table's
//! footer) only as a physical read. A *physical read* is one read request issued to
//! the [`FileSystem`](shale_env::FileSystem); its bytes are counted too.
//!
//! # Concurrency
//!
//! Counters are striped: each thread adds to one of [`STRIPES`] cache-padded cells
//! chosen once per thread, so that two cores updating counters do not fight over a
//! cache line. Reading a counter sums the stripes; a [`Metrics`] snapshot is
//! therefore not atomic across counters, which is fine for statistics.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;

use crate::format::NUM_LEVELS;

/// Number of stripes per counter.
pub(crate) const STRIPES: usize = 8;

/// What a block read was for. Persisted nowhere; used as an index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockKind {
    /// A table's Bloom filter.
    Filter,
    /// A table's top-level index (points at index partitions).
    TopIndex,
    /// One partition of a table's index (points at data blocks).
    IndexPartition,
    /// A data block.
    Data,
    /// A table's footer, read when the table is opened.
    Footer,
    /// A table's properties block, read when the table is opened.
    Properties,
}

impl BlockKind {
    /// All kinds, in reporting order.
    pub const ALL: [BlockKind; 6] = [
        BlockKind::Filter,
        BlockKind::TopIndex,
        BlockKind::IndexPartition,
        BlockKind::Data,
        BlockKind::Footer,
        BlockKind::Properties,
    ];

    /// Stable lower-case name used in JSON and tables.
    pub fn name(self) -> &'static str {
        match self {
            BlockKind::Filter => "filter",
            BlockKind::TopIndex => "top_index",
            BlockKind::IndexPartition => "index",
            BlockKind::Data => "data",
            BlockKind::Footer => "footer",
            BlockKind::Properties => "properties",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The kinds of table metadata [`crate::MetadataPlacement`] may keep with an
/// open table reader instead of in the block cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetadataKind {
    /// The top-level index (a key array in table format 3), a `TopIndex` read.
    TopIndex,
    /// Index partitions: format 3's locators, the separator blocks of formats
    /// 1 and 2 (`IndexPartition` reads).
    IndexPartitions,
    /// The top-level filter: format 3's top-level filter index (a `TopIndex`
    /// read), the whole filter block of formats 1 and 2 (a `Filter` read).
    TopFilter,
    /// Format 3's filter partitions (`Filter` reads; formats 1 and 2 have
    /// none).
    FilterPartitions,
}

impl MetadataKind {
    /// All kinds, in reporting order.
    pub const ALL: [MetadataKind; 4] = [
        MetadataKind::TopIndex,
        MetadataKind::IndexPartitions,
        MetadataKind::TopFilter,
        MetadataKind::FilterPartitions,
    ];

    /// Stable lower-case name used in JSON and tables.
    pub fn name(self) -> &'static str {
        match self {
            MetadataKind::TopIndex => "top_index",
            MetadataKind::IndexPartitions => "index_partitions",
            MetadataKind::TopFilter => "top_filter",
            MetadataKind::FilterPartitions => "filter_partitions",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// Write counters over the whole life of a database (not only this open),
/// recorded with every edit so that write amplification survives reopening.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LifetimeStats {
    /// Bytes of keys and values passed to writes (recorded at each edit, so a
    /// crash loses the count of writes after the last flush or compaction).
    pub user_bytes: u64,
    /// Memtable flushes and the table bytes they wrote.
    pub flushes: u64,
    pub flush_bytes: u64,
    /// Per output level: compactions (trivial moves included), bytes of input
    /// tables read and of output tables written.
    pub compactions: [u64; NUM_LEVELS],
    pub compaction_read: [u64; NUM_LEVELS],
    pub compaction_written: [u64; NUM_LEVELS],
}

thread_local! {
    static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

#[inline]
fn stripe() -> usize {
    STRIPE.with(|s| {
        let v = s.get();
        if v != usize::MAX {
            return v;
        }
        let v = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
        s.set(v);
        v
    })
}

/// A striped monotonically increasing counter.
#[derive(Default)]
pub(crate) struct Counter {
    cells: [CachePadded<AtomicU64>; STRIPES],
}

impl Counter {
    /// Adds `n`.
    #[inline]
    pub(crate) fn add(&self, n: u64) {
        self.cells[stripe()].fetch_add(n, Ordering::Relaxed);
    }

    /// Adds one.
    #[inline]
    pub(crate) fn incr(&self) {
        self.add(1);
    }

    /// Current total.
    pub(crate) fn get(&self) -> u64 {
        self.cells.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }
}

/// Counters of one block kind.
#[derive(Default)]
struct BlockCounters {
    cache_hits: Counter,
    cache_misses: Counter,
    physical_reads: Counter,
    bytes_read: Counter,
}

thread_local! {
    /// Read requests this thread issued for any database (see
    /// [`thread_physical_reads`]).
    static THREAD_PHYSICAL_READS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Read requests the calling thread has issued so far, over all databases: a
/// change across a call tells whether it read the device.
pub(crate) fn thread_physical_reads() -> u64 {
    THREAD_PHYSICAL_READS.with(std::cell::Cell::get)
}

/// The live counters of one database. Shared by all threads.
#[derive(Default)]
pub(crate) struct Stats {
    blocks: [BlockCounters; 6],
    pub(crate) gets: Counter,
    pub(crate) gets_found: Counter,
    pub(crate) gets_memtable_hits: Counter,
    /// Per level: Gets a table of that level answered.
    pub(crate) gets_table_hits: [Counter; NUM_LEVELS],
    /// Per level: tables searched past their filter without the key.
    pub(crate) gets_table_misses: [Counter; NUM_LEVELS],
    pub(crate) table_cache_hits: Counter,
    pub(crate) table_cache_misses: Counter,
    pub(crate) filter_negatives: Counter,
    pub(crate) filter_positives: Counter,
    pub(crate) bytes_written_user: Counter,
    pub(crate) bytes_written_wal: Counter,
    pub(crate) bytes_written_tables: Counter,
    pub(crate) wal_syncs: Counter,
    pub(crate) flushes: Counter,
    pub(crate) flush_bytes: Counter,
    /// Per output level.
    pub(crate) compactions: [Counter; NUM_LEVELS],
    pub(crate) compaction_read: [Counter; NUM_LEVELS],
    pub(crate) compaction_written: [Counter; NUM_LEVELS],
    pub(crate) trivial_moves: Counter,
    pub(crate) split_compactions: Counter,
    pub(crate) subcompactions: Counter,
    pub(crate) stalls: Counter,
    pub(crate) stalls_delayed: Counter,
    pub(crate) stalls_stopped: Counter,
    pub(crate) stall_micros: Counter,
    pub(crate) background_errors: Counter,
    pub(crate) range_del_dropped_entries: Counter,
    pub(crate) range_del_dropped_bytes: Counter,
    pub(crate) range_dels_dropped: Counter,
    pub(crate) delete_only_tables: Counter,
    pub(crate) delete_only_bytes: Counter,
    /// Bytes of table metadata held with open readers, outside the block
    /// cache, per [`MetadataKind`] (a gauge: readers add what they load and
    /// subtract it when they close).
    pub(crate) metadata_held: [AtomicU64; 4],
}

impl Stats {
    /// Records a block found in the block cache.
    #[inline]
    pub(crate) fn cache_hit(&self, kind: BlockKind) {
        self.blocks[kind.index()].cache_hits.incr();
    }

    /// Records a block looked up in the block cache and not found there.
    #[inline]
    pub(crate) fn cache_miss(&self, kind: BlockKind) {
        self.blocks[kind.index()].cache_misses.incr();
    }

    /// Records one read request of `bytes` bytes issued to the file system.
    #[inline]
    pub(crate) fn physical_read(&self, kind: BlockKind, bytes: u64) {
        THREAD_PHYSICAL_READS.with(|n| n.set(n.get().wrapping_add(1)));
        let c = &self.blocks[kind.index()];
        c.physical_reads.incr();
        c.bytes_read.add(bytes);
    }

    /// Records `bytes` of metadata of `kind` now held with a table reader.
    pub(crate) fn metadata_held_add(&self, kind: MetadataKind, bytes: u64) {
        self.metadata_held[kind.index()].fetch_add(bytes, Ordering::Relaxed);
    }

    /// Records `bytes` of metadata of `kind` let go by a closing table reader.
    pub(crate) fn metadata_held_sub(&self, kind: MetadataKind, bytes: u64) {
        let cell = &self.metadata_held[kind.index()];
        let _ = cell.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
            Some(b.saturating_sub(bytes))
        });
    }

    /// Records a filter probe and its answer.
    #[inline]
    pub(crate) fn filter_probe(&self, may_contain: bool) {
        if may_contain {
            self.filter_positives.incr();
        } else {
            self.filter_negatives.incr();
        }
    }

    /// Adds the write counters recovered from the manifest, so that they count
    /// over the database's whole life.
    pub(crate) fn seed(&self, l: &LifetimeStats) {
        self.bytes_written_user.add(l.user_bytes);
        self.flushes.add(l.flushes);
        self.flush_bytes.add(l.flush_bytes);
        self.bytes_written_tables.add(l.flush_bytes);
        for level in 0..NUM_LEVELS {
            self.compactions[level].add(l.compactions[level]);
            self.compaction_read[level].add(l.compaction_read[level]);
            self.compaction_written[level].add(l.compaction_written[level]);
            self.bytes_written_tables.add(l.compaction_written[level]);
        }
    }

    /// The write counters to record in the manifest.
    pub(crate) fn lifetime(&self) -> LifetimeStats {
        let mut l = LifetimeStats {
            user_bytes: self.bytes_written_user.get(),
            flushes: self.flushes.get(),
            flush_bytes: self.flush_bytes.get(),
            ..Default::default()
        };
        for level in 0..NUM_LEVELS {
            l.compactions[level] = self.compactions[level].get();
            l.compaction_read[level] = self.compaction_read[level].get();
            l.compaction_written[level] = self.compaction_written[level].get();
        }
        l
    }

    /// A point-in-time copy of every counter.
    pub(crate) fn snapshot(&self) -> Metrics {
        let mut blocks = [BlockMetrics::default(); 6];
        for kind in BlockKind::ALL {
            let c = &self.blocks[kind.index()];
            blocks[kind.index()] = BlockMetrics {
                cache_hits: c.cache_hits.get(),
                cache_misses: c.cache_misses.get(),
                physical_reads: c.physical_reads.get(),
                bytes_read: c.bytes_read.get(),
            };
        }
        Metrics {
            gets: self.gets.get(),
            gets_found: self.gets_found.get(),
            gets_memtable_hits: self.gets_memtable_hits.get(),
            gets_table_hits: std::array::from_fn(|l| self.gets_table_hits[l].get()),
            gets_table_misses: std::array::from_fn(|l| self.gets_table_misses[l].get()),
            blocks,
            table_cache_hits: self.table_cache_hits.get(),
            table_cache_misses: self.table_cache_misses.get(),
            filter_negatives: self.filter_negatives.get(),
            filter_positives: self.filter_positives.get(),
            bytes_written_user: self.bytes_written_user.get(),
            bytes_written_wal: self.bytes_written_wal.get(),
            bytes_written_tables: self.bytes_written_tables.get(),
            wal_syncs: self.wal_syncs.get(),
            flushes: self.flushes.get(),
            flush_bytes: self.flush_bytes.get(),
            levels: std::array::from_fn(|l| LevelMetrics {
                compactions: self.compactions[l].get(),
                compaction_bytes_read: self.compaction_read[l].get(),
                compaction_bytes_written: self.compaction_written[l].get(),
            }),
            trivial_moves: self.trivial_moves.get(),
            split_compactions: self.split_compactions.get(),
            subcompactions: self.subcompactions.get(),
            stall_count: self.stalls.get(),
            stalls_delayed: self.stalls_delayed.get(),
            stalls_stopped: self.stalls_stopped.get(),
            stall_micros: self.stall_micros.get(),
            background_errors: self.background_errors.get(),
            range_del_dropped_entries: self.range_del_dropped_entries.get(),
            range_del_dropped_bytes: self.range_del_dropped_bytes.get(),
            range_dels_dropped: self.range_dels_dropped.get(),
            delete_only_tables: self.delete_only_tables.get(),
            delete_only_bytes: self.delete_only_bytes.get(),
            pending_compaction_bytes: 0,
            l0_files: 0,
            running_flushes: 0,
            running_compactions: 0,
            write_stalled: 0,
            delayed_write_rate: 0,
            block_cache_usage: 0,
            block_cache_capacity: 0,
            block_cache_pinned: 0,
            table_readers_held: 0,
            metadata_held_bytes: std::array::from_fn(|i| {
                self.metadata_held[i].load(Ordering::Relaxed)
            }),
        }
    }
}

/// Compaction counters of one level in a [`Metrics`] snapshot, attributed to
/// the level compactions write into (lifetime totals, see [`Metrics`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelMetrics {
    /// Compactions into this level (trivial moves included).
    pub compactions: u64,
    /// Bytes of input tables those compactions read (both levels).
    pub compaction_bytes_read: u64,
    /// Bytes of tables they wrote.
    pub compaction_bytes_written: u64,
}

impl LevelMetrics {
    fn delta(&self, e: &LevelMetrics) -> LevelMetrics {
        LevelMetrics {
            compactions: self.compactions.saturating_sub(e.compactions),
            compaction_bytes_read: self
                .compaction_bytes_read
                .saturating_sub(e.compaction_bytes_read),
            compaction_bytes_written: self
                .compaction_bytes_written
                .saturating_sub(e.compaction_bytes_written),
        }
    }
}

/// Counters of one block kind in a [`Metrics`] snapshot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockMetrics {
    /// Lookups answered by the block cache.
    pub cache_hits: u64,
    /// Lookups the block cache could not answer.
    pub cache_misses: u64,
    /// Read requests issued to the file system.
    pub physical_reads: u64,
    /// Bytes those requests read.
    pub bytes_read: u64,
}

impl BlockMetrics {
    /// Hit rate of the block cache for this kind, or `None` with no lookups.
    pub fn hit_rate(&self) -> Option<f64> {
        let total = self.cache_hits + self.cache_misses;
        (total > 0).then(|| self.cache_hits as f64 / total as f64)
    }

    fn delta(&self, earlier: &BlockMetrics) -> BlockMetrics {
        BlockMetrics {
            cache_hits: self.cache_hits.saturating_sub(earlier.cache_hits),
            cache_misses: self.cache_misses.saturating_sub(earlier.cache_misses),
            physical_reads: self.physical_reads.saturating_sub(earlier.physical_reads),
            bytes_read: self.bytes_read.saturating_sub(earlier.bytes_read),
        }
    }
}

/// A snapshot of a database's counters ([`crate::Db::metrics`]).
///
/// Counters only grow; subtract two snapshots with [`Metrics::delta`] to measure
/// an interval. Gauges (cache usage, pending compaction bytes, L0 tables, running
/// jobs, metadata held with table readers) are
/// copied from the later snapshot. Read counters count since the database was
/// opened; the write counters (user bytes, flushes, compactions and the table
/// bytes they wrote) are lifetime totals recorded in the manifest, so that write
/// amplification means the same in a new process.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Metrics {
    /// Completed `get` calls (on the database and on snapshots).
    pub gets: u64,
    /// Gets that found a value.
    pub gets_found: u64,
    /// Gets answered by a memtable (found or deleted) without touching a table.
    pub gets_memtable_hits: u64,
    /// Per level: Gets answered by a table of that level (found, deleted or
    /// covered by a range deletion there). With the memtable hits, where
    /// Gets end, which with the shape of the tree sets how many tables a Get
    /// searches: RocksDB's `rocksdb.l0.hit`, `l1.hit`, `l2andup.hit`.
    pub gets_table_hits: [u64; NUM_LEVELS],
    /// Per level: tables a Get searched without finding its key there, past
    /// the table's filter (a filter that passed a key the table lacks) or
    /// with none. Each cost the Get an index lookup and a data block (from
    /// the cache or the device): with the hits, the data blocks Gets looked
    /// at per level, which tells where a Get's reads go when filters are
    /// off or too small. A batched `multi_get` counts each table once per
    /// key too: a key that waited for a read goes on from the table that
    /// deferred it.
    pub gets_table_misses: [u64; NUM_LEVELS],
    blocks: [BlockMetrics; 6],
    /// Table readers found open in the table cache.
    pub table_cache_hits: u64,
    /// Table readers that had to be opened.
    pub table_cache_misses: u64,
    /// Filter probes that excluded a table.
    pub filter_negatives: u64,
    /// Filter probes that let a table through (true or false positive).
    pub filter_positives: u64,
    /// Bytes of keys and values passed to writes.
    pub bytes_written_user: u64,
    /// Bytes appended to write-ahead logs.
    pub bytes_written_wal: u64,
    /// Bytes of tables written by flushes and compactions.
    pub bytes_written_tables: u64,
    /// WAL syncs.
    pub wal_syncs: u64,
    /// Memtable flushes completed.
    pub flushes: u64,
    /// Bytes of tables written by flushes.
    pub flush_bytes: u64,
    /// Compaction counters per output level.
    pub levels: [LevelMetrics; NUM_LEVELS],
    /// Compactions that moved a table down without rewriting it.
    pub trivial_moves: u64,
    /// Compactions installed that ran as several subcompactions
    /// ([`crate::Options::max_subcompactions`]); counted since open.
    pub split_compactions: u64,
    /// Subcompactions those compactions ran, in all (a compaction split in
    /// three adds three; one not split adds nothing); counted since open.
    pub subcompactions: u64,
    /// Write groups delayed or stopped by a write stall.
    pub stall_count: u64,
    /// Write groups delayed: held to the delayed write rate because L0 was
    /// at `l0_slowdown_writes_trigger` or the debt at
    /// `soft_pending_compaction_bytes` (a group whose charge was too small
    /// to wait for counts too: it is paid by the next).
    pub stalls_delayed: u64,
    /// Write groups stopped: waiting for L0 below `l0_stop_writes_trigger`,
    /// the debt below `hard_pending_compaction_bytes`, or a flush to free a
    /// memtable.
    pub stalls_stopped: u64,
    /// Time writers spent in stalls, in microseconds.
    pub stall_micros: u64,
    /// Flushes, compactions and file deletions that failed (each poisons the
    /// database; see [`crate::Error::Poisoned`]).
    pub background_errors: u64,
    /// Key versions compactions dropped because a range deletion covers them.
    pub range_del_dropped_entries: u64,
    /// Bytes (keys and values) of those versions.
    pub range_del_dropped_bytes: u64,
    /// Range deletions compactions dropped (shadowed by a newer one, or at the
    /// last level with nothing left to delete).
    pub range_dels_dropped: u64,
    /// Tables deleted without being read because a newer range deletion
    /// covers them whole (delete-only compactions).
    pub delete_only_tables: u64,
    /// Bytes of those tables: with `range_del_dropped_bytes`, what range
    /// deletions reclaimed.
    pub delete_only_bytes: u64,
    /// Estimated bytes compactions must still rewrite (gauge).
    pub pending_compaction_bytes: u64,
    /// Tables in L0 (gauge).
    pub l0_files: u64,
    /// Flushes running now (gauge: 0 or 1).
    pub running_flushes: u64,
    /// Compactions running now, a manual one included (gauge).
    pub running_compactions: u64,
    /// Writes are held back now (gauge: 1 while stalled, delayed or stopped,
    /// as the last write group found it).
    pub write_stalled: u64,
    /// The delayed write rate now, in bytes per second (gauge: 0 while
    /// writes are not delayed; see [`crate::Options::delayed_write_rate`]).
    pub delayed_write_rate: u64,
    /// Bytes charged to the block cache now (cached blocks and pinned blocks).
    pub block_cache_usage: u64,
    /// Capacity of the block cache.
    pub block_cache_capacity: u64,
    /// Bytes of pinned table metadata charged to the block cache.
    pub block_cache_pinned: u64,
    /// Table readers held open with their tables' metadata (the rest of the
    /// open readers are in the table cache's LRU list).
    pub table_readers_held: u64,
    /// Bytes of table metadata held with open table readers outside the block
    /// cache (not charged to it), per [`MetadataKind`] (gauge; see
    /// [`crate::MetadataPlacement`]). Read with [`Metrics::metadata_held`].
    pub metadata_held_bytes: [u64; 4],
}

impl Metrics {
    /// Counters of one block kind.
    pub fn block(&self, kind: BlockKind) -> BlockMetrics {
        self.blocks[kind.index()]
    }

    /// Bytes of metadata of `kind` held with open table readers, outside the
    /// block cache.
    pub fn metadata_held(&self, kind: MetadataKind) -> u64 {
        self.metadata_held_bytes[kind.index()]
    }

    /// Bytes of metadata of every kind held with open table readers, outside
    /// the block cache.
    pub fn metadata_held_total(&self) -> u64 {
        self.metadata_held_bytes.iter().sum()
    }

    /// Gets that found nothing (absent or deleted).
    pub fn gets_not_found(&self) -> u64 {
        self.gets - self.gets_found.min(self.gets)
    }

    /// Block-cache misses over all kinds (the study's I/O count).
    pub fn cache_misses(&self) -> u64 {
        self.blocks.iter().map(|b| b.cache_misses).sum()
    }

    /// Block-cache hits over all kinds.
    pub fn cache_hits(&self) -> u64 {
        self.blocks.iter().map(|b| b.cache_hits).sum()
    }

    /// Read requests issued to the file system over all kinds.
    pub fn physical_reads(&self) -> u64 {
        self.blocks.iter().map(|b| b.physical_reads).sum()
    }

    /// Bytes read from the file system over all kinds.
    pub fn bytes_read(&self) -> u64 {
        self.blocks.iter().map(|b| b.bytes_read).sum()
    }

    /// The study's "I/Os per Get": block-cache misses / Gets.
    pub fn cache_misses_per_get(&self) -> Option<f64> {
        (self.gets > 0).then(|| self.cache_misses() as f64 / self.gets as f64)
    }

    /// Physical reads / Gets: what the device was actually asked for.
    pub fn physical_reads_per_get(&self) -> Option<f64> {
        (self.gets > 0).then(|| self.physical_reads() as f64 / self.gets as f64)
    }

    /// Compactions completed, over all levels.
    pub fn compactions(&self) -> u64 {
        self.levels.iter().map(|l| l.compactions).sum()
    }

    /// Write amplification: bytes written to tables (flushes and compactions)
    /// per byte written by the user, or `None` before any write.
    pub fn write_amplification(&self) -> Option<f64> {
        (self.bytes_written_user > 0)
            .then(|| self.bytes_written_tables as f64 / self.bytes_written_user as f64)
    }

    /// Overall block-cache hit rate, or `None` with no lookups.
    pub fn hit_rate(&self) -> Option<f64> {
        let total = self.cache_hits() + self.cache_misses();
        (total > 0).then(|| self.cache_hits() as f64 / total as f64)
    }

    /// Counters accumulated since `earlier`, a snapshot of the same database.
    pub fn delta(&self, earlier: &Metrics) -> Metrics {
        let mut blocks = [BlockMetrics::default(); 6];
        for (i, b) in blocks.iter_mut().enumerate() {
            *b = self.blocks[i].delta(&earlier.blocks[i]);
        }
        let d = |a: u64, b: u64| a.saturating_sub(b);
        Metrics {
            gets: d(self.gets, earlier.gets),
            gets_found: d(self.gets_found, earlier.gets_found),
            gets_memtable_hits: d(self.gets_memtable_hits, earlier.gets_memtable_hits),
            gets_table_hits: std::array::from_fn(|l| {
                d(self.gets_table_hits[l], earlier.gets_table_hits[l])
            }),
            gets_table_misses: std::array::from_fn(|l| {
                d(self.gets_table_misses[l], earlier.gets_table_misses[l])
            }),
            blocks,
            table_cache_hits: d(self.table_cache_hits, earlier.table_cache_hits),
            table_cache_misses: d(self.table_cache_misses, earlier.table_cache_misses),
            filter_negatives: d(self.filter_negatives, earlier.filter_negatives),
            filter_positives: d(self.filter_positives, earlier.filter_positives),
            bytes_written_user: d(self.bytes_written_user, earlier.bytes_written_user),
            bytes_written_wal: d(self.bytes_written_wal, earlier.bytes_written_wal),
            bytes_written_tables: d(self.bytes_written_tables, earlier.bytes_written_tables),
            wal_syncs: d(self.wal_syncs, earlier.wal_syncs),
            flushes: d(self.flushes, earlier.flushes),
            flush_bytes: d(self.flush_bytes, earlier.flush_bytes),
            levels: std::array::from_fn(|l| self.levels[l].delta(&earlier.levels[l])),
            trivial_moves: d(self.trivial_moves, earlier.trivial_moves),
            split_compactions: d(self.split_compactions, earlier.split_compactions),
            subcompactions: d(self.subcompactions, earlier.subcompactions),
            stall_count: d(self.stall_count, earlier.stall_count),
            stalls_delayed: d(self.stalls_delayed, earlier.stalls_delayed),
            stalls_stopped: d(self.stalls_stopped, earlier.stalls_stopped),
            stall_micros: d(self.stall_micros, earlier.stall_micros),
            background_errors: d(self.background_errors, earlier.background_errors),
            range_del_dropped_entries: d(
                self.range_del_dropped_entries,
                earlier.range_del_dropped_entries,
            ),
            range_del_dropped_bytes: d(
                self.range_del_dropped_bytes,
                earlier.range_del_dropped_bytes,
            ),
            range_dels_dropped: d(self.range_dels_dropped, earlier.range_dels_dropped),
            delete_only_tables: d(self.delete_only_tables, earlier.delete_only_tables),
            delete_only_bytes: d(self.delete_only_bytes, earlier.delete_only_bytes),
            pending_compaction_bytes: self.pending_compaction_bytes,
            l0_files: self.l0_files,
            running_flushes: self.running_flushes,
            running_compactions: self.running_compactions,
            write_stalled: self.write_stalled,
            delayed_write_rate: self.delayed_write_rate,
            block_cache_usage: self.block_cache_usage,
            block_cache_capacity: self.block_cache_capacity,
            block_cache_pinned: self.block_cache_pinned,
            table_readers_held: self.table_readers_held,
            metadata_held_bytes: self.metadata_held_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_sum_across_threads_and_deltas_subtract() {
        let stats = std::sync::Arc::new(Stats::default());
        let before = stats.snapshot();
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let s = stats.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        s.cache_miss(BlockKind::Data);
                        s.physical_read(BlockKind::Data, 4096);
                    }
                    s.gets.add(1000);
                })
            })
            .collect();
        for h in handles {
            h.join().expect("counter thread");
        }
        let after = stats.snapshot().delta(&before);
        assert_eq!(after.block(BlockKind::Data).cache_misses, 4000);
        assert_eq!(after.block(BlockKind::Data).bytes_read, 4000 * 4096);
        assert_eq!(after.cache_misses_per_get(), Some(1.0));
        assert_eq!(after.physical_reads_per_get(), Some(1.0));
        assert_eq!(after.block(BlockKind::Filter), BlockMetrics::default());
    }
}
