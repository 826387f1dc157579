//! The database: open and recovery, the public API, and the shared state that
//! the write path, the background thread and readers work on.
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
//! * `DbInner::state` (the state lock) guards file numbers, the manifest, the
//!   poison flag and every change of the super version. Lock order: `queue`, then
//!   `state`, then `wal`. The leader never holds `state` while writing the WAL.
//! * One background thread flushes immutable memtables and deletes obsolete files.

mod background;
pub(crate) mod filenames;
mod group_commit;
mod read;
mod table_cache;
mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex};
use shale_env::{FileLock, FileSystem, WriteLifetime};

pub use read::{DbIterator, Readable, Snapshot};

impl Readable for Db {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Db::get(self, key)
    }
    fn iter(&self, opts: &ReadOptions) -> Result<DbIterator> {
        Db::iter(self, opts)
    }
}

use self::filenames::{manifest_name, parse, wal_name, FileType, CURRENT, LOCK};
use self::table_cache::TableCache;
use self::write::WriteQueue;
use crate::batch::WriteBatch;
use crate::compaction::picker;
use crate::error::{Error, Result};
use crate::format::{SeqNo, DB_FORMAT_VERSION};
use crate::memtable::MemTable;
use crate::metrics::{Metrics, Stats};
use crate::options::{Options, ReadOptions, WriteOptions, NUM_LEVELS};
use crate::table::{BlockCache, ReadContext, TableProperties};
use crate::version::{LifetimeStats, ObsoleteFiles, Version, VersionEdit};
use crate::wal::{LogEnd, LogReader, LogWriter};

/// What a read needs: the memtables and the version, swapped as one.
pub(crate) struct SuperVersion {
    pub mem: Arc<MemTable>,
    /// Immutable memtables, newest first.
    pub imms: Vec<Arc<MemTable>>,
    pub version: Arc<Version>,
}

/// State guarded by the state lock.
pub(crate) struct State {
    pub next_file_number: u64,
    /// Last sequence number handed to a write group.
    pub last_sequence: SeqNo,
    pub manifest: LogWriter,
    pub manifest_number: u64,
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
    /// Estimated compaction debt of the current version.
    pub pending_compaction_bytes: u64,
}

impl State {
    pub(crate) fn new_file_number(&mut self) -> u64 {
        let n = self.next_file_number;
        self.next_file_number += 1;
        n
    }

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
    pub table_cache: TableCache,
    pub obsolete: Arc<ObsoleteFiles>,
    pub sv: ArcSwap<SuperVersion>,
    /// Highest sequence number visible to readers.
    pub visible_seq: AtomicU64,
    pub state: Mutex<State>,
    /// Signalled when the super version or the poison flag changes, and to wake
    /// the background thread.
    pub cv: Condvar,
    pub wal: Mutex<LogWriter>,
    pub queue: WriteQueue,
    /// Live snapshots: sequence number -> count.
    pub snapshots: Mutex<BTreeMap<SeqNo, usize>>,
    /// Serializes manual compactions.
    pub compaction_lock: Mutex<()>,
    /// Set when closing starts; long jobs check it and give up.
    pub closing: AtomicBool,
    /// Caps flush and compaction writes, if configured.
    pub rate_limiter: Option<Arc<crate::rate_limit::RateLimiter>>,
    _lock: Box<dyn FileLock>,
}

/// An open database.
///
/// `Db` is `Send + Sync`: share it by reference or in an `Arc`. Reads never wait
/// for writes. Call [`Db::close`] to stop the background thread and sync the WAL;
/// dropping a `Db` stops the thread too but syncs nothing.
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
}

/// Totals of one level, summed from its tables' properties, with its
/// compaction score.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LevelSummary {
    /// The level.
    pub level: usize,
    /// Number of tables.
    pub tables: u64,
    /// Bytes of table files.
    pub bytes: u64,
    /// Entries (values and tombstones).
    pub entries: u64,
    /// Data blocks.
    pub data_blocks: u64,
    /// Bytes of data blocks.
    pub data_bytes: u64,
    /// Bytes of index partitions.
    pub index_partition_bytes: u64,
    /// Bytes of top-level indexes.
    pub top_level_index_bytes: u64,
    /// Bytes of Bloom filters.
    pub filter_bytes: u64,
    /// Bytes of user keys written.
    pub raw_key_bytes: u64,
    /// Bytes of values written.
    pub raw_value_bytes: u64,
    /// Compaction score (>= 1: the level needs compacting; 0 for the last level
    /// and for sums over levels).
    pub score: f64,
    /// Target size of the level (`None` above the base level and for L0).
    pub target_bytes: Option<u64>,
}

/// Shape of the database: one [`LevelSummary`] per level (L0..L6).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DbSummary {
    /// Per-level totals, index = level.
    pub levels: Vec<LevelSummary>,
    /// The level L0 compacts into (levels between L0 and it are empty).
    pub base_level: usize,
    /// Filter bytes of every level except the last (L6): the filters a Get
    /// consults under the default policy, which the study's first inflection
    /// point caches.
    pub filter_bytes_except_last_level: u64,
}

impl DbSummary {
    /// Sum over all levels.
    pub fn total(&self) -> LevelSummary {
        let mut t = LevelSummary {
            level: usize::MAX,
            ..Default::default()
        };
        for l in &self.levels {
            t.tables += l.tables;
            t.bytes += l.bytes;
            t.entries += l.entries;
            t.data_blocks += l.data_blocks;
            t.data_bytes += l.data_bytes;
            t.index_partition_bytes += l.index_partition_bytes;
            t.top_level_index_bytes += l.top_level_index_bytes;
            t.filter_bytes += l.filter_bytes;
            t.raw_key_bytes += l.raw_key_bytes;
            t.raw_value_bytes += l.raw_value_bytes;
        }
        t
    }
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
        let inner = Arc::new(open_inner(path.as_ref(), options)?);
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

    /// The value of `key` in the latest state, or `None` if it is absent or
    /// deleted. Errors are I/O failures or corruption of a block read.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner
            .get(key, self.inner.visible_seq.load(Ordering::Acquire))
    }

    /// Like [`Db::get`], as of `opts.snapshot` when set.
    pub fn get_with(&self, key: &[u8], opts: &ReadOptions) -> Result<Option<Vec<u8>>> {
        let seq = opts
            .snapshot
            .unwrap_or_else(|| self.inner.visible_seq.load(Ordering::Acquire));
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

    /// Applies `batch` atomically. When this returns `Ok`, the batch is visible
    /// to reads and in the WAL (handed to the OS; synced if `opts.sync`). After a
    /// failed WAL write or sync the database is poisoned: this and every later
    /// write fail with [`Error::Poisoned`] until it is reopened.
    pub fn write(&self, batch: WriteBatch, opts: &WriteOptions) -> Result<()> {
        self.inner.write(batch, opts.sync)
    }

    /// An iterator over the latest state (or `opts.snapshot`), within the bounds
    /// of `opts`. Unpositioned until a seek.
    pub fn iter(&self, opts: &ReadOptions) -> Result<DbIterator> {
        let seq = opts
            .snapshot
            .unwrap_or_else(|| self.inner.visible_seq.load(Ordering::Acquire));
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
        self.inner.flush()
    }

    /// Flushes, then merges every table into the last level, dropping versions
    /// that no snapshot can see and deletions that shadow nothing.
    pub fn compact_all(&self) -> Result<()> {
        self.flush()?;
        background::compact_all(&self.inner)
    }

    /// Waits until no flush or compaction runs and none is needed (every level
    /// scores below 1): the steady shape a bulk load should end in. Fails if
    /// the database is poisoned meanwhile.
    pub fn wait_for_compactions(&self) -> Result<()> {
        let db = &self.inner;
        let mut st = db.state.lock();
        loop {
            st.check_poison()?;
            let sv = db.sv.load();
            let busy = st.flush_running
                || !sv.imms.is_empty()
                || st.running_compactions > 0
                || background::needs_compaction(&sv.version, &db.opts);
            if !busy {
                return Ok(());
            }
            drop(sv);
            db.cv.wait(&mut st);
        }
    }

    /// A snapshot of the counters. Subtract two with [`Metrics::delta`].
    pub fn metrics(&self) -> Metrics {
        let mut m = self.inner.stats.snapshot();
        m.pending_compaction_bytes = self.inner.state.lock().pending_compaction_bytes;
        m.l0_files = self.inner.sv.load().version.levels[0].len() as u64;
        m.block_cache_usage = self.inner.block_cache.usage();
        m.block_cache_capacity = self.inner.block_cache.capacity();
        m.block_cache_pinned = self.inner.block_cache.pinned();
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
            let reader = self.inner.table_cache.get(f.number, level)?;
            out.push(TableInfo {
                level,
                file_number: f.number,
                path: self.inner.path.join(filenames::table_name(f.number)),
                file_size: f.size,
                properties: reader.properties().clone(),
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
            l.index_partition_bytes += p.index_partition_bytes;
            l.top_level_index_bytes += p.top_level_index_bytes;
            l.filter_bytes += p.filter_bytes;
            l.raw_key_bytes += p.raw_key_bytes;
            l.raw_value_bytes += p.raw_value_bytes;
        }
        let compacting = self.inner.state.lock().compacting.clone();
        let shape = background::summarize(&self.inner.sv.load().version, &compacting);
        let popts = background::picker_options(&self.inner.opts);
        let targets = picker::level_targets(&picker::level_bytes(&shape), &popts);
        let scores = picker::level_scores(&shape, &targets, &popts);
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

    /// Stops the background thread and syncs the WAL, so that every write
    /// acknowledged before survives a machine crash. Errors of the final sync
    /// are returned.
    pub fn close(self) -> Result<()> {
        self.stop_background();
        let mut wal = self.inner.wal.lock();
        wal.sync()?;
        let st = self.inner.state.lock();
        match &st.poison {
            Some(cause) => Err(Error::Poisoned {
                cause: Box::new(cause.clone()),
            }),
            None => Ok(()),
        }
    }

    fn stop_background(&self) {
        self.inner.closing.store(true, Ordering::Release);
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
    }
}

/// What recovery learned from the manifest.
struct Recovered {
    version: Version,
    log_number: u64,
    next_file_number: u64,
    last_sequence: SeqNo,
    lifetime: LifetimeStats,
}

fn open_inner(path: &Path, opts: Options) -> Result<DbInner> {
    opts.validate()?;
    let fs = opts.fs.clone();
    let exists = fs.exists(path).map_err(|e| Error::io("stat", path, e))?;
    if !exists {
        if !opts.create_if_missing {
            return Err(Error::NotADatabase {
                path: path.into(),
                reason: "directory does not exist and create_if_missing is off".into(),
            });
        }
        fs.create_dir_all(path)
            .map_err(|e| Error::io("create directory", path, e))?;
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs.sync_dir(parent)
                .map_err(|e| Error::io("sync directory", parent, e))?;
        }
    }
    let lock = fs.lock(&path.join(LOCK)).map_err(|e| {
        if e.kind() == std::io::ErrorKind::WouldBlock {
            Error::Locked { path: path.into() }
        } else {
            Error::io("lock", path.join(LOCK), e)
        }
    })?;
    let names = fs.list(path).map_err(|e| Error::io("list", path, e))?;
    let obsolete = Arc::new(ObsoleteFiles::default());
    let recovered = if names.iter().any(|n| n == CURRENT) {
        if opts.error_if_exists {
            return Err(Error::InvalidArgument(format!(
                "database {} exists and error_if_exists is set",
                path.display()
            )));
        }
        recover_manifest(path, &*fs, &obsolete)?
    } else {
        // An earlier creation that failed before writing CURRENT may have left
        // its lock, temporary file, manifest and an empty WAL: no write was ever
        // acknowledged without CURRENT, so they hold nothing and are reused or
        // deleted. Anything else (a table, a non-empty log, a foreign file) means
        // this is not a database we may initialise.
        let mut foreign = Vec::new();
        for n in &names {
            let leftover = match parse(n) {
                Some(FileType::Lock | FileType::Temp | FileType::Manifest(_)) => true,
                Some(FileType::Wal(_)) => {
                    let p = path.join(n);
                    fs.file_size(&p).map_err(|e| Error::io("stat", &p, e))? == 0
                }
                _ => false,
            };
            if !leftover {
                foreign.push(n);
            }
        }
        if let Some(first) = foreign.first() {
            return Err(Error::NotADatabase {
                path: path.into(),
                reason: format!(
                    "no CURRENT file, and the directory holds other files (such as {first:?})"
                ),
            });
        }
        if !opts.create_if_missing {
            return Err(Error::NotADatabase {
                path: path.into(),
                reason: "no CURRENT file and create_if_missing is off".into(),
            });
        }
        Recovered {
            version: Version::default(),
            log_number: 0,
            next_file_number: 2,
            last_sequence: 0,
            lifetime: LifetimeStats::default(),
        }
    };

    let stats = Arc::new(Stats::default());
    stats.seed(&recovered.lifetime);
    // Each shard gets an equal share of the capacity, so a small cache is split
    // into fewer shards (a power of two, at least 4 MiB each): with 16 shards a
    // cache the size of the index would overflow in the fuller shards while
    // others sit idle, and a table's filter (one block, hundreds of KiB for a
    // 64 MiB table) would not fit a shard at all.
    let per_4mib = (opts.block_cache_bytes >> 22).max(1);
    let floor_pow2 = 1u64 << (63 - per_4mib.leading_zeros());
    let shards = usize::try_from(floor_pow2)
        .unwrap_or(usize::MAX)
        .clamp(1, opts.cache_shards.max(1));
    let block_cache = Arc::new(BlockCache::new(opts.block_cache_bytes, shards));
    let ctx = ReadContext {
        cache: block_cache.clone(),
        stats: stats.clone(),
        verify_checksums: opts.verify_checksums,
    };
    let table_cache = TableCache::new(path, &opts, ctx);

    // Replay the WALs the manifest still needs, oldest first.
    let mut wals: Vec<u64> = names
        .iter()
        .filter_map(|n| match parse(n) {
            Some(FileType::Wal(num)) if num >= recovered.log_number => Some(num),
            _ => None,
        })
        .collect();
    wals.sort_unstable();
    // Never reuse the number of a file left behind by a failed flush, open or
    // compaction: it is deleted below, but may still be in the directory.
    let highest_in_dir = names
        .iter()
        .filter_map(|n| parse(n).and_then(FileType::number))
        .max()
        .unwrap_or(0);
    let mut next_file_number = recovered.next_file_number.max(highest_in_dir + 1);
    let mut last_sequence = recovered.last_sequence;
    let mut version = recovered.version;
    let mut edit = VersionEdit::default();
    let mut mem = Arc::new(MemTable::new());
    for (i, &num) in wals.iter().enumerate() {
        let wal_path = path.join(wal_name(num));
        let file = fs
            .open_random(&wal_path)
            .map_err(|e| Error::io("open wal", &wal_path, e))?;
        let mut reader = LogReader::new(file, wal_path.clone());
        while let Some(record) = reader.read_record()? {
            let at = reader.last_record_offset();
            let (seq, batch) = WriteBatch::decode(&record).map_err(|reason| {
                Error::corruption(&wal_path, at, format!("bad write batch: {reason}"))
            })?;
            for (j, op) in batch.ops().enumerate() {
                let op = op.map_err(|reason| Error::corruption(&wal_path, at, reason))?;
                mem.add(seq + j as u64, op.kind, op.key, op.value);
            }
            last_sequence =
                last_sequence.max(seq + batch.len() as u64 - u64::from(!batch.is_empty()));
            if mem.approximate_bytes() >= opts.write_buffer_size {
                let number = next_file_number;
                next_file_number += 1;
                if let Some(f) = background::write_level0(path, &opts, &stats, None, &mem, number)?
                {
                    edit.added.push((0, f));
                }
                mem = Arc::new(MemTable::new());
            }
        }
        if let LogEnd::TornTail { offset } = reader.end() {
            if i + 1 != wals.len() {
                return Err(Error::corruption(
                    &wal_path,
                    offset,
                    "log ends in a damaged record but is not the newest log",
                ));
            }
        }
    }
    if !mem.is_empty() {
        let number = next_file_number;
        next_file_number += 1;
        if let Some(f) = background::write_level0(path, &opts, &stats, None, &mem, number)? {
            edit.added.push((0, f));
        }
    }
    if !edit.added.is_empty() {
        fs.sync_dir(path)
            .map_err(|e| Error::io("sync directory", path, e))?;
        version = version.apply(&edit, &obsolete);
    }

    // A fresh WAL, then a fresh manifest naming it: everything older is in tables.
    let mem_log = next_file_number;
    let manifest_number = next_file_number + 1;
    next_file_number += 2;
    let wal_path = path.join(wal_name(mem_log));
    let wal_file = fs
        .create_append(&wal_path, WriteLifetime::Short)
        .map_err(|e| Error::io("create wal", &wal_path, e))?;
    let wal = LogWriter::new(wal_file, wal_path);
    let manifest = write_manifest(
        path,
        &*fs,
        manifest_number,
        &version,
        ManifestHeader {
            log_number: mem_log,
            next_file_number,
            last_sequence,
            lifetime: stats.lifetime(),
        },
    )?;

    let state = State {
        next_file_number,
        last_sequence,
        manifest,
        manifest_number,
        mem_log,
        imm_logs: Vec::new(),
        poison: None,
        shutting_down: false,
        pending_outputs: Default::default(),
        flush_running: false,
        compacting: Default::default(),
        running_compactions: 0,
        manual_compaction: false,
        pending_compaction_bytes: 0,
    };
    let rate_limiter = opts
        .compaction_rate_limit
        .map(|r| Arc::new(crate::rate_limit::RateLimiter::new(r)));
    let inner = DbInner {
        path: path.to_path_buf(),
        fs,
        stats,
        block_cache,
        table_cache,
        obsolete,
        sv: ArcSwap::from_pointee(SuperVersion {
            mem: Arc::new(MemTable::new()),
            imms: Vec::new(),
            version: Arc::new(version),
        }),
        visible_seq: AtomicU64::new(last_sequence),
        state: Mutex::new(state),
        cv: Condvar::new(),
        wal: Mutex::new(wal),
        queue: WriteQueue::new(),
        snapshots: Mutex::new(BTreeMap::new()),
        compaction_lock: Mutex::new(()),
        closing: AtomicBool::new(false),
        rate_limiter,
        opts,
        _lock: lock,
    };
    inner.delete_obsolete_files(true)?;
    {
        let mut st = inner.state.lock();
        background::update_pending_bytes(&inner, &mut st);
    }
    Ok(inner)
}

/// Reads `CURRENT` and replays the manifest it names.
fn recover_manifest(
    dir: &Path,
    fs: &dyn FileSystem,
    sink: &Arc<ObsoleteFiles>,
) -> Result<Recovered> {
    let current_path = dir.join(CURRENT);
    let current = fs
        .read_all(&current_path)
        .map_err(|e| Error::io("read", &current_path, e))?;
    let name = std::str::from_utf8(&current)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .filter(|s| matches!(parse(s), Some(FileType::Manifest(_))))
        .ok_or_else(|| Error::corruption(&current_path, 0, "CURRENT does not name a manifest"))?;
    let manifest_path = dir.join(name);
    let file = fs
        .open_random(&manifest_path)
        .map_err(|e| Error::io("open manifest", &manifest_path, e))?;
    let mut reader = LogReader::new(file, manifest_path.clone());
    let mut version = Version::default();
    let mut log_number = None;
    let mut next_file = None;
    let mut last_sequence = None;
    let mut lifetime = LifetimeStats::default();
    let mut format = None;
    let mut records = 0u64;
    while let Some(record) = reader.read_record()? {
        let edit = VersionEdit::decode(&record).map_err(|reason| {
            Error::corruption(
                &manifest_path,
                reader.last_record_offset(),
                format!("version edit {records}: {reason}"),
            )
        })?;
        records += 1;
        format = edit.db_format.or(format);
        log_number = edit.log_number.or(log_number);
        next_file = edit.next_file_number.or(next_file);
        last_sequence = edit.last_sequence.or(last_sequence);
        lifetime = edit.lifetime.unwrap_or(lifetime);
        version = version.apply(&edit, sink);
    }
    // A torn last record is an edit whose sync never returned: not applied.
    match format {
        Some(DB_FORMAT_VERSION) => {}
        Some(v) => {
            return Err(Error::NotADatabase {
                path: dir.into(),
                reason: format!("database format version {v} is not supported (this build reads {DB_FORMAT_VERSION})"),
            })
        }
        None => return Err(Error::corruption(&manifest_path, 0, "manifest has no format record")),
    }
    let (Some(log_number), Some(next_file_number), Some(last_sequence)) =
        (log_number, next_file, last_sequence)
    else {
        return Err(Error::corruption(
            &manifest_path,
            0,
            "manifest lacks log number, next file or last sequence",
        ));
    };
    Ok(Recovered {
        version,
        log_number,
        next_file_number,
        last_sequence,
        lifetime,
    })
}

/// The counters a new manifest starts with.
struct ManifestHeader {
    log_number: u64,
    next_file_number: u64,
    last_sequence: SeqNo,
    lifetime: LifetimeStats,
}

/// Writes a manifest holding a snapshot of `version`, syncs it, and points
/// `CURRENT` at it (write to a temporary file, sync, rename, sync directory).
fn write_manifest(
    dir: &Path,
    fs: &dyn FileSystem,
    number: u64,
    version: &Version,
    header: ManifestHeader,
) -> Result<LogWriter> {
    let path = dir.join(manifest_name(number));
    let file = fs
        .create_append(&path, WriteLifetime::Medium)
        .map_err(|e| Error::io("create manifest", &path, e))?;
    let mut manifest = LogWriter::new(file, path);
    let mut edit = version.snapshot_edit();
    edit.db_format = Some(DB_FORMAT_VERSION);
    edit.log_number = Some(header.log_number);
    edit.next_file_number = Some(header.next_file_number);
    edit.last_sequence = Some(header.last_sequence);
    edit.lifetime = Some(header.lifetime);
    manifest.add_record(&edit.encode())?;
    manifest.sync()?;
    set_current(dir, fs, number)?;
    Ok(manifest)
}

fn set_current(dir: &Path, fs: &dyn FileSystem, manifest_number: u64) -> Result<()> {
    let tmp = dir.join(format!("{CURRENT}.tmp"));
    let current = dir.join(CURRENT);
    if fs.exists(&tmp).map_err(|e| Error::io("stat", &tmp, e))? {
        fs.remove(&tmp).map_err(|e| Error::io("remove", &tmp, e))?;
    }
    let mut w = fs
        .create_object(&tmp, WriteLifetime::NotSet)
        .map_err(|e| Error::io("create", &tmp, e))?;
    w.write(format!("{}\n", manifest_name(manifest_number)).as_bytes())
        .map_err(|e| Error::io("write", &tmp, e))?;
    w.finish().map_err(|e| Error::io("sync", &tmp, e))?;
    fs.rename(&tmp, &current)
        .map_err(|e| Error::io("rename", &current, e))?;
    fs.sync_dir(dir)
        .map_err(|e| Error::io("sync directory", dir, e))
}

impl DbInner {
    /// Appends `edit` to the manifest, syncs it, and installs the new version
    /// (keeping the memtables of the current super version, minus the oldest
    /// `drop_imms` immutable ones). Caller holds the state lock.
    pub(crate) fn log_and_apply(
        &self,
        st: &mut State,
        mut edit: VersionEdit,
        drop_imms: usize,
    ) -> Result<()> {
        st.check_poison()?;
        edit.next_file_number = Some(st.next_file_number);
        edit.last_sequence = Some(st.last_sequence);
        edit.lifetime = Some(self.stats.lifetime());
        let sv = self.sv.load_full();
        let version = sv.version.apply(&edit, &self.obsolete);
        let result = if st.manifest.len() > self.opts.max_manifest_bytes {
            let log_number = edit
                .log_number
                .unwrap_or(st.imm_logs.last().copied().unwrap_or(st.mem_log));
            let number = st.new_file_number();
            write_manifest(
                &self.path,
                &*self.fs,
                number,
                &version,
                ManifestHeader {
                    log_number,
                    next_file_number: st.next_file_number,
                    last_sequence: st.last_sequence,
                    lifetime: self.stats.lifetime(),
                },
            )
            .map(|m| {
                st.manifest = m;
                st.manifest_number = number;
            })
        } else {
            st.manifest
                .add_record(&edit.encode())
                .and_then(|()| st.manifest.sync())
        };
        if let Err(e) = result {
            // The edit may or may not be on disk; only a reopen can tell.
            st.poison.get_or_insert(e.clone());
            self.cv.notify_all();
            return Err(e);
        }
        let keep = sv.imms.len().saturating_sub(drop_imms);
        self.sv.store(Arc::new(SuperVersion {
            mem: sv.mem.clone(),
            imms: sv.imms[..keep].to_vec(),
            version: Arc::new(version),
        }));
        st.imm_logs.truncate(keep);
        background::update_pending_bytes(self, st);
        self.cv.notify_all();
        Ok(())
    }

    /// A flush, compaction or file deletion failed: counted, and the database
    /// is poisoned so that the next write reports it.
    pub(crate) fn background_failed(&self, st: &mut State, e: &Error) {
        self.stats.background_errors.incr();
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
    pub(crate) fn delete_obsolete_files(&self, at_open: bool) -> Result<()> {
        let mut doomed: Vec<(PathBuf, Option<u64>)> = Vec::new();
        for number in self.obsolete.take() {
            doomed.push((self.path.join(filenames::table_name(number)), Some(number)));
        }
        {
            // Decide under the state lock: files being created (table outputs,
            // CURRENT.tmp, a new manifest or WAL) are only created under it or
            // registered in `pending_outputs`.
            let st = self.state.lock();
            let oldest_log = st.imm_logs.last().copied().unwrap_or(st.mem_log);
            let live: std::collections::HashSet<u64> = self
                .sv
                .load()
                .version
                .all_files()
                .map(|(_, f)| f.number)
                .collect();
            let names = self
                .fs
                .list(&self.path)
                .map_err(|e| Error::io("list", &self.path, e))?;
            for name in names {
                let delete = match parse(&name) {
                    Some(FileType::Wal(n)) => n < oldest_log,
                    Some(FileType::Manifest(n)) => n < st.manifest_number,
                    Some(FileType::Table(n)) => {
                        at_open && !live.contains(&n) && !st.pending_outputs.contains(&n)
                    }
                    Some(FileType::Temp) => at_open,
                    _ => false,
                };
                if delete {
                    doomed.push((self.path.join(&name), None));
                }
            }
        }
        for (p, table) in doomed {
            if let Some(n) = table {
                self.table_cache.evict(n);
            }
            match self.fs.remove(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io("remove obsolete file", &p, e)),
            }
        }
        Ok(())
    }
}
