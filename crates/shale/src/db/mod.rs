//! The database: open and recovery, the public API, and the shared state that
//! the write path, the background threads and readers work on.
//!
//! # Concurrency
//!
//! * Readers load the current [`SuperVersion`] (memtable, immutable memtables,
//!   version) from an `ArcSwap` and the visible sequence number from an atomic;
//!   they take no lock that a writer holds for long, so they never wait for a WAL
//!   write, a sync or a flush.
//! * Writers queue in `DbInner::queue`; the writer at the front becomes the leader,
//!   commits a group of batches with one WAL write (and one sync if any asked for
//!   it), applies them to the memtable and publishes their sequence numbers.
//!   Only the leader switches memtables.
//! * `DbInner::state` (the state lock) guards the [`VersionSet`] (file
//!   numbers, the manifest writer, the last sequence number), the poison flag
//!   and every change of the super version. Lock order: `queue`, then `state`,
//!   then `wal`. No device I/O happens under `state`: the leader writes and
//!   syncs the WAL, and a memtable switch syncs the old WAL, creates the new
//!   one and syncs the directory, without it (file numbers are taken under
//!   it); the manifest is written without it; obsolete files are chosen under
//!   it and listed and deleted without it.
//! * Background threads flush immutable memtables, compact, and delete
//!   obsolete files.
//! * `multi_get` shares its table lookups with the read pool's threads
//!   (`read_pool`), which own what they read and are joined at close.

mod background;
mod block_trace;
mod destroy;
mod group_commit;
mod open;
mod quarantine;
mod range;
mod read;
mod read_pool;
mod repair;
mod survey;
mod table_cache;
mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex, MutexGuard};
use shale_env::{FileLock, FileSystem};

use crate::stat::{DbSummary, LevelSummary};

pub use crate::filenames::LOST_DIR;
pub use range::{prefix_successor, Range};
pub use read::{DbIterator, ReadOptions, Readable, Snapshot};
pub use repair::{DamagedFile, DamagedKind, KeyRange, RepairOptions, RepairReport};

impl Readable for Db {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Db::get(self, key)
    }
    fn iter(&self, opts: &ReadOptions) -> Result<DbIterator> {
        Db::iter(self, opts)
    }
}

pub(crate) use crate::filenames;

use self::open::{open_inner, Access};
use self::table_cache::TableCache;
use self::write::WriteQueue;
use crate::batch::WriteBatch;
use crate::compaction::picker;
use crate::error::{Error, Result};
use crate::events::{ActiveStall, Event, Events};
use crate::filenames::{parse, FileType};
use crate::format::SeqNo;
use crate::memtable::MemTable;
use crate::metrics::{Metrics, Stats};
use crate::options::{Options, WriteOptions, NUM_LEVELS};
use crate::pinned::PinnedValue;
use crate::table::{BlockCache, TableProperties};
use crate::trace::Tracer;
use crate::version::set::VersionSet;
use crate::version::{ObsoleteFiles, Version, VersionEdit};
use crate::wal::LogWriter;

/// What a read needs: the memtables and the version, swapped as one.
pub(crate) struct SuperVersion {
    pub mem: Arc<MemTable>,
    /// Immutable memtables, newest first.
    pub imms: Vec<Arc<MemTable>>,
    /// The tables; the compaction picker reads its levels as they are.
    pub version: Arc<Version>,
}

/// State guarded by the state lock.
pub(crate) struct State {
    /// The manifest, file numbers and the last sequence number.
    pub versions: VersionSet,
    /// WAL number of the mutable memtable.
    pub mem_log: u64,
    /// WAL numbers of the immutable memtables, newest first (parallel to
    /// `SuperVersion::imms`).
    pub imm_logs: Vec<u64>,
    /// The first failure of a sync or a background job; writes fail while set.
    pub poison: Option<Error>,
    pub shutting_down: bool,
    /// Numbers of tables being written that are not in the version yet.
    pub pending_outputs: std::collections::HashSet<u64>,
    /// A flush is running (one at a time).
    pub flush_running: bool,
    /// Tables that are inputs of a running compaction.
    pub compacting: std::collections::HashSet<u64>,
    pub running_compactions: usize,
    /// A manual compaction waits for or runs instead of automatic ones.
    pub manual_compaction: bool,
    /// Callers of [`Db::settle`] waiting: L0 is compacted even below its
    /// trigger.
    pub settling: usize,
    /// Estimated compaction debt of the current version.
    pub pending_compaction_bytes: u64,
    /// A manual compaction is merging (past its wait for running ones).
    pub manual_running: bool,
    /// The write stall writers are under, as last raised to listeners.
    pub stall: Option<ActiveStall>,
    /// The delayed write rate while writes are delayed.
    pub delay: write::WriteDelay,
    /// The inputs the picker last found nothing to compact in: until the
    /// version or the running compactions change, a wake-up does not ask it
    /// again.
    pub idle_pick: Option<background::IdlePick>,
}

impl State {
    /// The error writes get while poisoned.
    pub(crate) fn check_poison(&self) -> Result<()> {
        match &self.poison {
            Some(cause) => Err(Error::Poisoned {
                cause: Box::new(cause.clone()),
            }),
            None if self.shutting_down => Err(Error::Closed),
            None => Ok(()),
        }
    }
}

pub(crate) struct DbInner {
    pub path: PathBuf,
    pub fs: Arc<dyn FileSystem>,
    pub opts: Options,
    pub stats: Arc<Stats>,
    pub block_cache: Arc<BlockCache>,
    /// The block-access tracer the table readers share (see [`crate::trace`]).
    pub tracer: Arc<Tracer>,
    pub table_cache: TableCache,
    pub obsolete: Arc<ObsoleteFiles>,
    pub sv: ArcSwap<SuperVersion>,
    /// Highest sequence number visible to readers.
    pub visible_seq: AtomicU64,
    pub state: Mutex<State>,
    /// Signalled when the super version or the poison flag changes, and to wake
    /// the background threads.
    pub cv: Condvar,
    pub wal: Mutex<LogWriter>,
    pub queue: WriteQueue,
    /// Live snapshots: sequence number -> count.
    pub snapshots: Mutex<BTreeMap<SeqNo, usize>>,
    /// Serializes manual compactions.
    pub compaction_lock: Mutex<()>,
    /// Serializes file deletions, so that a caller of
    /// `delete_obsolete_files` returns only after every file made obsolete
    /// before the call is gone, even if another thread took it to delete.
    /// Holds the oldest log and manifest still needed at the last run-time
    /// listing of the directory that deleted everything it found.
    pub deletion_lock: Mutex<Option<(u64, u64)>>,
    /// Set when closing starts; long jobs check it and give up.
    pub closing: AtomicBool,
    /// Caps flush and compaction writes, if configured.
    pub rate_limiter: Option<Arc<crate::rate_limit::RateLimiter>>,
    /// Listeners' event channel ([`crate::events`]).
    pub events: Events,
    /// Number of the next flush or compaction job (for events).
    pub next_job: AtomicU64,
    /// Opened with [`Db::open_read_only`]: no background work, no writes.
    pub read_only: bool,
    /// The directory lock, released when the database closes (even while
    /// snapshots or iterators still hold the rest of this state).
    lock: Mutex<Option<Box<dyn FileLock>>>,
    /// Iterators alive (`DbIterator`s, and the two of each `Range`).
    pub live_iterators: AtomicUsize,
    /// Set when a table with range deletions is installed or a snapshot is
    /// released: a background thread looks for tables to delete whole.
    pub delete_only_check: AtomicBool,
    /// The threads that look up the keys of a `multi_get` together
    /// (`Options::read_threads`; started by the first call that needs them,
    /// joined when the database closes).
    pub read_pool: read_pool::ReadPool,
}

/// An open database.
///
/// `Db` is `Send + Sync`: share it by reference or in an `Arc`. Reads never wait
/// for writes. Call [`Db::close`] to stop the background threads and sync the
/// WAL; dropping a `Db` stops the threads too but syncs nothing.
pub struct Db {
    inner: Arc<DbInner>,
    background: Mutex<Vec<JoinHandle<()>>>,
}

/// One table of the current version.
#[derive(Clone, Debug)]
pub struct TableInfo {
    /// Level of the table.
    pub level: usize,
    /// File number (the file is `NNNNNN.sst` in the database directory).
    pub file_number: u64,
    /// Path of the file.
    pub path: PathBuf,
    /// Size of the file in bytes.
    pub file_size: u64,
    /// The table's properties block.
    pub properties: TableProperties,
    /// Its smallest and largest user keys.
    pub smallest_key: Vec<u8>,
    /// (the largest)
    pub largest_key: Vec<u8>,
}

impl Db {
    /// Opens (or creates, with `create_if_missing`) the database in `path`.
    ///
    /// Recovery replays the write-ahead logs newer than the manifest's log
    /// number; a record torn by a crash at the end of the newest log is dropped
    /// (it was never acknowledged as synced). Damage anywhere else is
    /// [`Error::Corruption`]. Fails with [`Error::Locked`] if another handle or
    /// process has the database open, and [`Error::NotADatabase`] for a directory
    /// that holds other files but no database.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let inner = Arc::new(open_inner(path.as_ref(), options, Access::ReadWrite)?);
        // A table whose last reader lets go is deleted at once, not at the
        // background threads' next idle wake-up.
        let weak = Arc::downgrade(&inner);
        inner.obsolete.set_waker(Box::new(move || {
            if let Some(db) = weak.upgrade() {
                db.cv.notify_all();
            }
        }));
        let db = Db {
            inner,
            background: Mutex::new(Vec::new()),
        };
        for i in 0..db.inner.opts.max_background_jobs.max(1) {
            let inner = db.inner.clone();
            let handle = std::thread::Builder::new()
                .name(format!("shale-bg-{i}"))
                .spawn(move || background::run(&inner))
                .map_err(|e| Error::io("spawn background thread", path.as_ref(), e))?;
            db.background.lock().push(handle);
        }
        // Compactions the recovered shape already needs.
        db.inner.cv.notify_all();
        Ok(db)
    }

    /// Opens the database in `path` for reading only: recovery replays the
    /// write-ahead logs into memory and writes nothing (no table, no log, no
    /// manifest, no deletion), so a database on a full or read-only file system
    /// can still be read. Takes a shared lock: any number of read-only handles
    /// may be open at once, but not together with a read-write one
    /// ([`Error::Locked`]). Never creates a database. Writes, flushes and
    /// compactions fail with [`Error::ReadOnly`]; no background thread runs.
    pub fn open_read_only(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let inner = Arc::new(open_inner(path.as_ref(), options, Access::ReadOnly)?);
        Ok(Db {
            inner,
            background: Mutex::new(Vec::new()),
        })
    }

    /// True if opened with [`Db::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.inner.read_only
    }

    fn check_writable(&self) -> Result<()> {
        if self.inner.read_only {
            return Err(Error::ReadOnly {
                path: self.inner.path.clone(),
            });
        }
        Ok(())
    }

    /// The value of `key` in the latest state, or `None` if it is absent or
    /// deleted. Errors are I/O failures or corruption of a block read.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner
            .get(key, self.inner.visible_seq.load(Ordering::Acquire))
    }

    /// Like [`Db::get`], but a value read from a table is not copied: the
    /// [`PinnedValue`] is a slice of the cached data block, which it keeps in
    /// memory while it lives (RocksDB's `PinnableSlice`). A value from a
    /// memtable is a copy. Counted like any Get.
    pub fn get_pinned(&self, key: &[u8]) -> Result<Option<PinnedValue>> {
        self.inner
            .get_pinned(key, self.inner.visible_seq.load(Ordering::Acquire))
    }

    /// The database's statistics as text, in the spirit of Pebble's metrics
    /// table: tables and bytes per level, the LSM table (sizes against
    /// targets, scores, compactions, write amplification, stalls), then the
    /// read counters per block kind, the caches and the bytes written (what
    /// `shale stats` prints; [`Db::summary`] and [`Db::metrics`] give the
    /// same as numbers).
    pub fn stat(&self) -> Result<String> {
        let summary = self.summary()?;
        Ok(crate::stat::stat_text(&summary, &self.metrics()))
    }

    /// The values of `keys` (in their order) read in one state of the
    /// database: no write lands between two of them. The first error (in
    /// key order) ends the call. With [`Options::read_threads`] above 0 the
    /// device reads of the keys no memtable answers are in flight together:
    /// issued at once by this thread on a file system that batches reads
    /// (io_uring), else by this thread and the database's read threads.
    /// Counted as one Get per key either way.
    pub fn multi_get<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        self.inner
            .multi_get(keys, self.inner.visible_seq.load(Ordering::Acquire))
    }

    /// Reads each key of `keys` and calls `answer(i, value)` with the key's
    /// index in `keys` and its value, in the order the answers come rather
    /// than the keys' order: with up to `reads_in_flight` device reads in
    /// flight from this thread (at most 64), a key the block cache cannot
    /// answer waits for its read while the next keys start, and answers as
    /// soon as its read completes. The keys are drawn from `keys` as room
    /// frees up, so a long or endless iterator keeps the device busy at
    /// that depth. All are read in one state (the one current when the call
    /// starts; it stays pinned, with its tables, until the call returns).
    /// `answer` returning [`ControlFlow::Break`](std::ops::ControlFlow::Break) ends the call; the first
    /// error ends it too (the keys answered before it stay answered).
    /// Counted as one Get per key looked up: per answered key, or per key
    /// of the groups below.
    ///
    /// On a file system that does not batch reads (or with
    /// [`Options::read_threads`] 0) the keys go in groups of
    /// `reads_in_flight`, each one [`Db::multi_get`], answered in order.
    /// [`Error::InvalidArgument`] if `reads_in_flight` is 0.
    pub fn multi_get_each<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
        reads_in_flight: usize,
        mut answer: impl FnMut(usize, Option<Vec<u8>>) -> std::ops::ControlFlow<()>,
    ) -> Result<()> {
        self.inner.multi_get_each(
            keys,
            self.inner.visible_seq.load(Ordering::Acquire),
            reads_in_flight,
            &mut answer,
        )
    }

    /// Like [`Db::get`], as of `opts.snapshot` when set.
    pub fn get_with(&self, key: &[u8], opts: &ReadOptions) -> Result<Option<Vec<u8>>> {
        let seq = opts.seq_for(&self.inner, self.inner.visible_seq.load(Ordering::Acquire))?;
        self.inner.get(key, seq)
    }

    /// Sets `key` to `value` (not synced; see [`WriteOptions::sync`]).
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(b, &WriteOptions::default())
    }

    /// Deletes `key` (not synced).
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(b, &WriteOptions::default())
    }

    /// Deletes every key in `[start, end)` (not synced): one small write
    /// whatever the range holds, as Pebble's and RocksDB's `DeleteRange`. Keys
    /// written later are not affected; a snapshot taken before still sees the
    /// keys. Compaction drops what it covers and deletes tables it covers
    /// whole without reading them. `start == end` does nothing; `start > end`
    /// is [`Error::InvalidArgument`].
    pub fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_range(start, end);
        self.write(b, &WriteOptions::default())
    }

    /// Applies `batch` atomically. When this returns `Ok`, the batch is visible
    /// to reads and in the WAL (handed to the OS; synced if `opts.sync`). After a
    /// failed WAL write or sync the database is poisoned: this and every later
    /// write fail with [`Error::Poisoned`] until it is reopened.
    pub fn write(&self, batch: WriteBatch, opts: &WriteOptions) -> Result<()> {
        self.check_writable()?;
        self.inner.write(batch, opts.sync)
    }

    /// An iterator over the latest state (or `opts.snapshot`), within the bounds
    /// of `opts`. Unpositioned until a seek.
    pub fn iter(&self, opts: &ReadOptions) -> Result<DbIterator> {
        let seq = opts.seq_for(&self.inner, self.inner.visible_seq.load(Ordering::Acquire))?;
        Ok(DbIterator::new(&self.inner, seq, opts))
    }

    /// A snapshot of the current state. Reads through it are repeatable while it
    /// lives.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(self.inner.clone())
    }

    /// Makes the memtable immutable and waits until every memtable is flushed to
    /// tables (then the WALs they came from are deleted).
    pub fn flush(&self) -> Result<()> {
        self.check_writable()?;
        self.inner.flush()
    }

    /// Makes every write acknowledged so far durable by syncing the
    /// write-ahead log (older logs were synced when retired), without
    /// flushing the memtable: what go-ethereum's `SyncKeyValue` asks, and
    /// much cheaper than [`Db::flush`]. A failed sync poisons the database
    /// ([`Error::Poisoned`] for this and every later write).
    pub fn sync_wal(&self) -> Result<()> {
        self.check_writable()?;
        self.inner.sync_wal()
    }

    /// Flushes, then merges every table into the last level, dropping versions
    /// that no snapshot can see and deletions that shadow nothing.
    pub fn compact_all(&self) -> Result<()> {
        self.check_writable()?;
        self.flush()?;
        background::compact_all(&self.inner)
    }

    /// Compacts the keys in `[start, end]` (`None`: open at that end) down
    /// the tree: the memtable is flushed, then level by level from L0 the
    /// tables holding keys of the range are merged into the next level that
    /// holds tables, and the last one is rewritten in place, so that
    /// overwritten versions and deletions in the range that no snapshot
    /// needs are gone from disk (RocksDB's and Pebble's `CompactRange`).
    /// Runs beside the automatic flushes and compactions, waiting only for
    /// the tables it needs; one manual compaction (this or
    /// [`Db::compact_all`]) at a time. A range holding no table is no work.
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.check_writable()?;
        if let (Some(s), Some(e)) = (start, end) {
            if s > e {
                return Err(Error::InvalidArgument(
                    "compact_range: start is after end".into(),
                ));
            }
        }
        self.flush()?;
        background::compact_range(&self.inner, background::KeyRange { start, end })
    }

    /// Waits until no flush or compaction runs and none is needed (every level
    /// scores below 1). Tables below L0's trigger stay in L0. Fails if the
    /// database is poisoned meanwhile.
    pub fn wait_for_compactions(&self) -> Result<()> {
        self.wait_until_settled(false)
    }

    /// The shape a bulk load should end in: flushes, then waits until no flush
    /// or compaction runs, every level scores below 1 and L0 is empty (the
    /// tables left in L0 below its trigger are compacted into the base level,
    /// so that a Get probes no L0 table). Writes may go on meanwhile; this
    /// returns once all of that holds at one moment. Fails if the database is
    /// poisoned meanwhile.
    pub fn settle(&self) -> Result<()> {
        self.flush()?;
        self.wait_until_settled(true)
    }

    fn wait_until_settled(&self, drain_l0: bool) -> Result<()> {
        let db = &self.inner;
        if db.read_only {
            return Ok(());
        }
        let mut st = db.state.lock();
        if drain_l0 {
            st.settling += 1;
            db.cv.notify_all();
        }
        let result = loop {
            if let Err(e) = st.check_poison() {
                break Err(e);
            }
            let sv = db.sv.load();
            let busy = st.flush_running
                || !sv.imms.is_empty()
                || st.running_compactions > 0
                || background::needs_compaction(&sv.version.levels, &db.opts, drain_l0);
            if !busy {
                break Ok(());
            }
            drop(sv);
            db.cv.wait(&mut st);
        };
        if drain_l0 {
            st.settling -= 1;
        }
        result
    }

    /// A snapshot of the counters. Subtract two with [`Metrics::delta`].
    pub fn metrics(&self) -> Metrics {
        let mut m = self.inner.stats.snapshot();
        {
            let st = self.inner.state.lock();
            m.pending_compaction_bytes = st.pending_compaction_bytes;
            m.running_flushes = u64::from(st.flush_running);
            m.running_compactions = st.running_compactions as u64 + u64::from(st.manual_running);
            m.write_stalled = u64::from(st.stall.is_some());
            m.delayed_write_rate = st.delay.rate();
        }
        m.l0_files = self.inner.sv.load().version.levels[0].len() as u64;
        m.block_cache_usage = self.inner.block_cache.usage();
        m.block_cache_capacity = self.inner.block_cache.capacity();
        m.block_cache_pinned = self.inner.block_cache.pinned();
        m.table_readers_held = self.inner.table_cache.held() as u64;
        m
    }

    /// Changes the block cache capacity (evicting as needed).
    pub fn set_block_cache_capacity(&self, bytes: u64) {
        self.inner.block_cache.set_capacity(bytes);
    }

    /// Every table of the current version with its properties. Opens tables not
    /// yet in the table cache (their footer and properties reads are counted).
    pub fn tables(&self) -> Result<Vec<TableInfo>> {
        let version = self.inner.sv.load().version.clone();
        let mut out = Vec::new();
        for (level, f) in version.all_files() {
            let reader = self.inner.table_cache.get(f, level)?;
            out.push(TableInfo {
                level,
                file_number: f.number,
                path: self.inner.path.join(filenames::table_name(f.number)),
                file_size: f.size,
                properties: reader.properties().clone(),
                smallest_key: f.smallest.user_key().to_vec(),
                largest_key: f.largest.user_key().to_vec(),
            });
        }
        Ok(out)
    }

    /// Per-level totals of the current version.
    pub fn summary(&self) -> Result<DbSummary> {
        let mut levels: Vec<LevelSummary> = (0..NUM_LEVELS)
            .map(|level| LevelSummary {
                level,
                ..Default::default()
            })
            .collect();
        for t in self.tables()? {
            let l = &mut levels[t.level];
            let p = &t.properties;
            l.tables += 1;
            l.bytes += t.file_size;
            l.entries += p.num_entries;
            l.data_blocks += p.data_blocks;
            l.data_bytes += p.data_bytes;
            l.data_padding_bytes += p.data_padding_bytes;
            l.index_partition_bytes += p.index_partition_bytes;
            l.top_level_index_bytes += p.top_level_index_bytes;
            l.filter_bytes += p.filter_bytes;
            l.raw_key_bytes += p.raw_key_bytes;
            l.raw_value_bytes += p.raw_value_bytes;
            l.range_deletions += p.range_deletions;
        }
        let compacting = self.inner.state.lock().compacting.clone();
        let version = self.inner.sv.load().version.clone();
        let popts = background::picker_options(&self.inner.opts);
        let targets = picker::level_targets(&picker::level_bytes(&version.levels), &popts);
        let scores = picker::level_scores(&version.levels, &compacting, &targets, &popts);
        for l in &mut levels {
            l.score = scores[l.level];
            l.target_bytes = (l.level > 0 && targets.max_bytes[l.level] != u64::MAX)
                .then_some(targets.max_bytes[l.level]);
        }
        let filter_bytes_except_last_level = levels
            .iter()
            .filter(|l| l.level != NUM_LEVELS - 1)
            .map(|l| l.filter_bytes)
            .sum();
        Ok(DbSummary {
            levels,
            base_level: targets.base_level,
            filter_bytes_except_last_level,
        })
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Stops the background threads and syncs the WAL, so that every write
    /// acknowledged before survives a machine crash. Errors of the final sync
    /// are returned.
    /// Tables that became obsolete and are no longer read are deleted.
    ///
    /// The database is closed whatever this returns, and its lock released
    /// (another process may open it). Snapshots, iterators and ranges still
    /// open then fail with [`Error::Closed`]; when there were any, this
    /// returns [`Error::LiveHandles`] naming how many (after a successful
    /// sync), so that a caller learns it closed under them.
    pub fn close(self) -> Result<()> {
        self.stop_background();
        if !self.inner.read_only {
            self.inner.wal.lock().sync()?;
            if let Some(cause) = self.inner.state.lock().poison.clone() {
                return Err(Error::Poisoned {
                    cause: Box::new(cause),
                });
            }
            self.inner.delete_obsolete_files(false)?;
        }
        let snapshots: usize = self.inner.snapshots.lock().values().sum();
        let iterators = self.inner.live_iterators.load(Ordering::Acquire);
        if snapshots + iterators > 0 {
            return Err(Error::LiveHandles {
                snapshots,
                iterators,
            });
        }
        Ok(())
    }

    fn stop_background(&self) {
        self.inner.closing.store(true, Ordering::Release);
        // A multi_get still running (through a snapshot) gets `Closed`.
        self.inner.read_pool.shutdown();
        {
            let mut st = self.inner.state.lock();
            st.shutting_down = true;
            self.inner.cv.notify_all();
        }
        for handle in self.background.lock().drain(..) {
            // A panic in a background thread is a bug; there is nothing better
            // to report here than what it printed.
            let _ = handle.join();
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        self.stop_background();
        // Writes are over (`self` is going): a stall still raised ends here,
        // and every event is delivered before the handle is gone.
        {
            let mut st = self.inner.state.lock();
            let st = &mut *st;
            self.inner.events.set_stall(&mut st.stall, None);
        }
        self.inner.events.stop();
        // Snapshots and iterators may keep the rest alive; they fail with
        // `Closed` from now on, and the directory is free for another opener.
        drop(self.inner.lock.lock().take());
    }
}

impl DbInner {
    /// Appends `edit` to the manifest, syncs it, and installs the new version
    /// (keeping the memtables of the super version current at install time,
    /// minus the oldest `drop_imms` immutable ones).
    ///
    /// Caller holds the state lock, which is released while the manifest is
    /// written and synced (see [`crate::version::set`]), so that writers never
    /// wait for a manifest fsync. A failure poisons the database: the edit may
    /// or may not be on disk, and only a reopen can tell.
    pub(crate) fn log_and_apply(
        &self,
        st: &mut MutexGuard<'_, State>,
        edit: VersionEdit,
        drop_imms: usize,
    ) -> Result<()> {
        loop {
            st.check_poison()?;
            if !st.versions.is_writing() {
                break;
            }
            self.cv.wait(st);
        }
        let oldest_log = st.imm_logs.last().copied().unwrap_or(st.mem_log);
        let added_range_dels = edit.added.iter().any(|(_, f)| f.range_deletions > 0);
        let write = st.versions.begin(
            edit,
            &self.sv.load().version,
            oldest_log,
            self.stats.lifetime(),
            &self.obsolete,
        )?;
        let written = MutexGuard::unlocked(st, || write.write());
        let version = match st.versions.finish(written) {
            Ok(version) => version,
            Err(e) => {
                self.poison(st, &e);
                return Err(e);
            }
        };
        let sv = self.sv.load_full();
        let keep = sv.imms.len().saturating_sub(drop_imms);
        self.sv.store(Arc::new(SuperVersion {
            mem: sv.mem.clone(),
            imms: sv.imms[..keep].to_vec(),
            version: Arc::new(version),
        }));
        st.imm_logs.truncate(keep);
        if added_range_dels {
            self.delete_only_check.store(true, Ordering::Release);
        }
        background::update_pending_bytes(self, st);
        self.cv.notify_all();
        Ok(())
    }

    /// A flush, compaction or file deletion failed: counted, and the database
    /// is poisoned so that the next write reports it.
    pub(crate) fn background_failed(&self, st: &mut State, e: &Error) {
        self.stats.background_errors.incr();
        self.events
            .raise(Event::BackgroundError { error: e.clone() });
        self.poison(st, e);
    }

    /// Records the first background or sync failure and wakes waiters.
    pub(crate) fn poison(&self, st: &mut State, e: &Error) {
        st.poison.get_or_insert_with(|| e.clone());
        self.cv.notify_all();
    }

    /// Deletes files no version needs: tables whose last reference dropped, WALs
    /// older than the oldest live memtable, old manifests and temporary files.
    /// `at_open`: also delete tables missing from the version (leftovers of a
    /// crashed flush or compaction); at run time an old version held by an
    /// iterator may still use such tables, so they go only through `obsolete`.
    ///
    /// What may go is decided under the state lock, in memory; the directory
    /// is listed and the files removed without it (see [`Deletable`]).
    /// Deleters are serialized by `deletion_lock`.
    pub(crate) fn delete_obsolete_files(&self, at_open: bool) -> Result<()> {
        let mut last_listed = self.deletion_lock.lock();
        let mut doomed: Vec<(PathBuf, Option<u64>)> = Vec::new();
        for number in self.obsolete.take() {
            doomed.push((self.path.join(filenames::table_name(number)), Some(number)));
        }
        let deletable = {
            let st = self.state.lock();
            Deletable::capture(&st, &self.sv.load().version, at_open)
        };
        // At run time the listing finds something new to delete only once a
        // log or manifest became obsolete since the last complete pass: new
        // files get numbers above everything listed before.
        let list = at_open || *last_listed != Some(deletable.marks());
        if list {
            let names = self
                .fs
                .list(&self.path)
                .map_err(|e| Error::io("list", &self.path, e))?;
            for name in names {
                let Some(kind) = parse(&name) else { continue };
                if deletable.contains(kind) {
                    let table = match kind {
                        FileType::Table(n) => Some(n),
                        _ => None,
                    };
                    doomed.push((self.path.join(&name), table));
                }
            }
        }
        for (p, table) in doomed {
            if let Some(n) = table {
                self.table_cache.evict(n);
            }
            match self.fs.remove(&p) {
                Ok(()) => {
                    if let Some(number) = table {
                        self.events.raise(Event::TableDeleted { number });
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io("remove obsolete file", &p, e)),
            }
        }
        if list && !at_open {
            *last_listed = Some(deletable.marks());
        }
        Ok(())
    }
}

/// Which files in the directory may be deleted, decided under the state lock
/// and applied to a listing taken without it.
///
/// A file created after the decision (a new WAL, a table output, a new
/// manifest) has a number from `versions.new_file_number()` taken after it,
/// so at least `bound`: nothing numbered `bound` or above is deleted, and
/// whatever the listing shows below it was already there, or numbered, when
/// the decision was made. Below `bound`:
///
/// * a WAL older than the oldest log a live memtable writes to: its memtable
///   is flushed and the manifest's log number is past it (the log number is
///   recorded, and synced, before the flush's version is installed and
///   `imm_logs` shrinks); a WAL being created by a memtable switch has a
///   number above `mem_log`;
/// * a manifest older than the live one (a new one being written by a
///   rollover has a higher number);
/// * at open only, when nothing else runs: a table in neither the version nor
///   `pending_outputs`, and temporary files.
struct Deletable {
    bound: u64,
    oldest_log: u64,
    manifest: u64,
    /// At open: tables of the version and outputs being written.
    keep_tables: Option<std::collections::HashSet<u64>>,
}

impl Deletable {
    fn capture(st: &State, version: &Version, at_open: bool) -> Deletable {
        let keep_tables = at_open.then(|| {
            version
                .all_files()
                .map(|(_, f)| f.number)
                .chain(st.pending_outputs.iter().copied())
                .collect()
        });
        Deletable {
            bound: st.versions.next_file_number(),
            oldest_log: st.imm_logs.last().copied().unwrap_or(st.mem_log),
            manifest: st.versions.manifest_number(),
            keep_tables,
        }
    }

    /// What makes files obsolete at run time: the oldest log and manifest
    /// still needed.
    fn marks(&self) -> (u64, u64) {
        (self.oldest_log, self.manifest)
    }

    /// True if a file of this kind and number may be deleted.
    fn contains(&self, kind: FileType) -> bool {
        let below = |n: u64| n < self.bound;
        match kind {
            FileType::Wal(n) => below(n) && n < self.oldest_log,
            FileType::Manifest(n) => below(n) && n < self.manifest,
            FileType::Table(n) => {
                below(n) && self.keep_tables.as_ref().is_some_and(|k| !k.contains(&n))
            }
            FileType::Temp => self.keep_tables.is_some(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deletable_files_are_below_the_bound_and_obsolete() {
        let run_time = Deletable {
            bound: 20,
            oldest_log: 12,
            manifest: 15,
            keep_tables: None,
        };
        // Logs older than the oldest live memtable's, never one being created.
        assert!(run_time.contains(FileType::Wal(11)));
        assert!(!run_time.contains(FileType::Wal(12)));
        assert!(!run_time.contains(FileType::Wal(21)));
        assert!(run_time.contains(FileType::Manifest(14)));
        assert!(!run_time.contains(FileType::Manifest(15)));
        // At run time tables go only when their last reader lets go.
        assert!(!run_time.contains(FileType::Table(3)));
        assert!(!run_time.contains(FileType::Temp));
        assert!(!run_time.contains(FileType::Current));
        assert!(!run_time.contains(FileType::Lock));
        let at_open = Deletable {
            keep_tables: Some([5, 7].into_iter().collect()),
            ..run_time
        };
        assert!(at_open.contains(FileType::Table(6)));
        assert!(!at_open.contains(FileType::Table(5)), "in the version");
        assert!(!at_open.contains(FileType::Table(7)), "a pending output");
        assert!(
            !at_open.contains(FileType::Table(20)),
            "numbered after the decision"
        );
        assert!(at_open.contains(FileType::Temp));
    }
}
