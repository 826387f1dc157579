//! Opening a database, step by step: check that the directory is (or may
//! become) a database, take its lock, recover the manifest, check that the
//! files it names are present, replay the write-ahead logs, and (read-write
//! only) start a fresh log and manifest and delete leftovers.
//!
//! Nothing is written or deleted before the recovered state has been checked
//! (see [`crate::version::manifest`]); a read-only open writes nothing at all.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex};
use shale_env::{AppendFile, FileLock, FileSystem, WriteLifetime};

use super::table_cache::TableCache;
use super::write::WriteQueue;
use super::{background, DbInner, State, SuperVersion};
use crate::batch::WriteBatch;
use crate::cache::shards_for;
use crate::compaction::job;
use crate::error::{Error, Result};
use crate::events::Events;
use crate::filenames::{parse, wal_name, FileType, CURRENT, LOCK};
use crate::format::SeqNo;
use crate::memtable::MemTable;
use crate::metrics::Stats;
use crate::options::{Options, WalRecoveryMode};
use crate::table::{BlockCache, ReadContext};
use crate::trace::Tracer;
use crate::version::manifest::{self, ManifestHeader, Recovered};
use crate::version::set::{NewManifest, VersionSet};
use crate::version::{LifetimeStats, ObsoleteFiles, Version, VersionEdit};
use crate::wal::{LogEnd, LogReader, LogWriter};

/// How a database is opened.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Exclusive lock; recovery flushes the logs into tables and starts a new
    /// log and manifest.
    ReadWrite,
    /// Shared lock; the logs are replayed into memory; nothing is written.
    ReadOnly,
}

pub(super) fn open_inner(path: &Path, opts: Options, access: Access) -> Result<DbInner> {
    opts.validate()?;
    let fs = opts.fs.clone();
    check_directory(path, &*fs, &opts, access)?;
    let lock_path = path.join(LOCK);
    if access == Access::ReadOnly
        && !fs
            .exists(&lock_path)
            .map_err(|e| Error::io("stat", &lock_path, e))?
    {
        // A reader creates the lock file only for a database it can open:
        // the manifest is recovered once before (reads only), so that a
        // refused directory is left exactly as it was.
        let names = fs.list(path).map_err(|e| Error::io("list", path, e))?;
        recover_manifest(path, &opts, &names, &Arc::new(ObsoleteFiles::default()))?;
    }
    let lock = take_lock(path, &*fs, access)?;
    let names = fs.list(path).map_err(|e| Error::io("list", path, e))?;
    let obsolete = Arc::new(ObsoleteFiles::default());
    let recovered = recover_manifest(path, &opts, &names, &obsolete)?;

    let stats = Arc::new(Stats::default());
    stats.seed(&recovered.lifetime);
    let block_cache = Arc::new(BlockCache::new(
        opts.block_cache_bytes,
        shards_for(opts.block_cache_bytes, opts.cache_shards),
    ));
    let tracer = Arc::new(Tracer::default());
    let ctx = ReadContext {
        cache: block_cache.clone(),
        stats: stats.clone(),
        verify_checksums: opts.verify_checksums,
        tracer: tracer.clone(),
    };
    let table_cache = TableCache::new(path, &opts, ctx);

    // Never reuse the number of a file left behind by a failed flush, open or
    // compaction: it is deleted below, but may still be in the directory.
    let highest_in_dir = names
        .iter()
        .filter_map(|n| parse(n).and_then(FileType::number))
        .max()
        .unwrap_or(0);
    let next_file_number = recovered.next_file_number.max(highest_in_dir + 1);
    let wals = wals_to_replay(&names, recovered.log_number);
    let (version, logs) = match access {
        Access::ReadOnly => replay_into_memory(path, &opts, recovered, &wals, next_file_number)?,
        Access::ReadWrite => {
            let replay = Replay {
                path,
                opts: &opts,
                stats: &stats,
                obsolete: &obsolete,
                next_file_number,
            };
            replay.into_tables(recovered, &wals)?
        }
    };

    let last_sequence = logs.versions.last_sequence;
    let state = State {
        versions: logs.versions,
        mem_log: logs.mem_log,
        imm_logs: Vec::new(),
        poison: None,
        shutting_down: false,
        pending_outputs: Default::default(),
        flush_running: false,
        compacting: Default::default(),
        running_compactions: 0,
        manual_compaction: false,
        settling: 0,
        pending_compaction_bytes: 0,
        manual_running: false,
        stall: None,
        delay: Default::default(),
        idle_pick: None,
    };
    let rate_limiter = opts
        .compaction_rate_limit
        .map(|r| Arc::new(crate::rate_limit::RateLimiter::new(r)));
    // A read-only handle writes nothing, so it has nothing to tell listeners.
    let listeners: &[_] = if access == Access::ReadOnly {
        &[]
    } else {
        &opts.listeners
    };
    let events = Events::start(listeners).map_err(|e| Error::io("spawn event thread", path, e))?;
    let read_threads = opts.read_threads;
    let inner = DbInner {
        path: path.to_path_buf(),
        fs,
        stats,
        block_cache,
        tracer,
        table_cache,
        obsolete,
        sv: ArcSwap::from_pointee(SuperVersion {
            mem: logs.mem,
            imms: Vec::new(),
            version: Arc::new(version),
        }),
        visible_seq: AtomicU64::new(last_sequence),
        state: Mutex::new(state),
        cv: Condvar::new(),
        wal: Mutex::new(logs.wal),
        queue: WriteQueue::new(),
        snapshots: Mutex::new(BTreeMap::new()),
        compaction_lock: Mutex::new(()),
        deletion_lock: Mutex::new(None),
        closing: AtomicBool::new(false),
        rate_limiter,
        events,
        next_job: AtomicU64::new(1),
        read_only: access == Access::ReadOnly,
        opts,
        lock: Mutex::new(Some(lock)),
        live_iterators: AtomicUsize::new(0),
        // Tables left by the last run may hold range deletions.
        delete_only_check: AtomicBool::new(access == Access::ReadWrite),
        read_pool: super::read_pool::ReadPool::new(read_threads),
    };
    if access == Access::ReadWrite {
        inner.delete_obsolete_files(true)?;
    }
    {
        let mut st = inner.state.lock();
        background::update_pending_bytes(&inner, &mut st);
    }
    Ok(inner)
}

/// Recovers the state the manifest records and checks that the files it
/// names are present; a new database (no `CURRENT`) starts empty.
fn recover_manifest(
    path: &Path,
    opts: &Options,
    names: &[String],
    obsolete: &Arc<ObsoleteFiles>,
) -> Result<Recovered> {
    let fs = &*opts.fs;
    if names.iter().any(|n| n == CURRENT) {
        if opts.error_if_exists {
            return Err(Error::InvalidArgument(format!(
                "database {} exists and error_if_exists is set",
                path.display()
            )));
        }
        let rec = manifest::recover(path, fs, obsolete)?;
        manifest::check_files_present(path, fs, &rec, names)?;
        Ok(rec)
    } else {
        // `check_directory` let only an empty directory or the leftovers of a
        // creation that failed before writing CURRENT through.
        check_leftovers(path, fs, names)?;
        Ok(Recovered {
            version: Version::default(),
            log_number: 0,
            next_file_number: 2,
            last_sequence: 0,
            lifetime: LifetimeStats::default(),
            manifest_path: PathBuf::new(),
            added_at: Default::default(),
        })
    }
}

/// The write-ahead log side of an opened database.
struct Logs {
    /// The mutable memtable.
    mem: Arc<MemTable>,
    /// The log `mem`'s writes go to, numbered `mem_log`.
    wal: LogWriter,
    mem_log: u64,
    versions: VersionSet,
}

/// Read-only open: the logs are replayed into the memtable, and the log and
/// manifest writers refuse every append.
fn replay_into_memory(
    path: &Path,
    opts: &Options,
    recovered: Recovered,
    wals: &[u64],
    next_file_number: u64,
) -> Result<(Version, Logs)> {
    let (mem, last_sequence) = replay_wals(
        path,
        &*opts.fs,
        opts.wal_recovery_mode,
        wals,
        recovered.last_sequence,
        usize::MAX,
        |_| Ok(()),
    )?;
    let detached = |p: &Path| LogWriter::new(Box::new(ReadOnlyLog), p.to_path_buf());
    let versions = VersionSet::attach(
        path.to_path_buf(),
        opts.fs.clone(),
        next_file_number,
        last_sequence,
        detached(&recovered.manifest_path),
    );
    let logs = Logs {
        mem,
        wal: detached(&path.join(wal_name(recovered.log_number))),
        mem_log: recovered.log_number,
        versions,
    };
    Ok((recovered.version, logs))
}

/// Read-write open: what the recovery of the logs needs.
struct Replay<'a> {
    path: &'a Path,
    opts: &'a Options,
    stats: &'a Arc<Stats>,
    obsolete: &'a Arc<ObsoleteFiles>,
    next_file_number: u64,
}

impl Replay<'_> {
    /// Replays the logs into level-0 tables (a memtable full of them is
    /// written as soon as it fills), then starts a fresh log and a fresh
    /// manifest naming it and the tables: everything older is obsolete.
    fn into_tables(mut self, recovered: Recovered, wals: &[u64]) -> Result<(Version, Logs)> {
        let (path, opts, fs) = (self.path, self.opts, &*self.opts.fs);
        let mut edit = VersionEdit::default();
        let (mem, last_sequence) = replay_wals(
            path,
            fs,
            opts.wal_recovery_mode,
            wals,
            recovered.last_sequence,
            opts.write_buffer_size,
            |full| self.write_table(full, &mut edit),
        )?;
        if !mem.is_empty() {
            self.write_table(&mem, &mut edit)?;
        }
        let mut version = recovered.version;
        if !edit.added.is_empty() {
            fs.sync_dir(path)
                .map_err(|e| Error::io("sync directory", path, e))?;
            version = version.apply(&edit, self.obsolete).map_err(|reason| {
                Error::Internal(format!("recovered tables do not fit the version: {reason}"))
            })?;
        }
        let mem_log = self.new_file_number();
        let manifest_number = self.new_file_number();
        let wal_path = path.join(wal_name(mem_log));
        let wal_file = fs
            .create_append(&wal_path, WriteLifetime::Short)
            .map_err(|e| Error::io("create wal", &wal_path, e))?;
        let versions = VersionSet::create(
            path.to_path_buf(),
            opts.fs.clone(),
            opts.max_manifest_bytes,
            NewManifest {
                number: manifest_number,
                version: &version,
                header: ManifestHeader {
                    log_number: mem_log,
                    next_file_number: self.next_file_number,
                    last_sequence,
                    lifetime: self.stats.lifetime(),
                },
            },
        )?;
        let logs = Logs {
            mem: Arc::new(MemTable::with_filter(opts.memtable_filter_bytes())),
            wal: LogWriter::new(wal_file, wal_path),
            mem_log,
            versions,
        };
        Ok((version, logs))
    }

    fn new_file_number(&mut self) -> u64 {
        let n = self.next_file_number;
        self.next_file_number += 1;
        n
    }

    /// Writes `mem` as a level-0 table and records it in `edit`.
    fn write_table(&mut self, mem: &Arc<MemTable>, edit: &mut VersionEdit) -> Result<()> {
        let number = self.new_file_number();
        // Recovery runs before the rate limiter exists: no limit.
        if let Some(f) = job::write_memtable(self.path, self.opts, self.stats, None, mem, number)? {
            edit.added.push((0, f));
        }
        Ok(())
    }
}

/// Refuses a directory that is not a database before anything is created in
/// it (not even the lock file): a missing directory unless creation is asked
/// for (then it is created), and one without `CURRENT` that holds files other
/// than the leftovers of a failed creation.
fn check_directory(path: &Path, fs: &dyn FileSystem, opts: &Options, access: Access) -> Result<()> {
    let may_create = opts.create_if_missing && access == Access::ReadWrite;
    let exists = fs.exists(path).map_err(|e| Error::io("stat", path, e))?;
    if !exists {
        if !may_create {
            return Err(Error::NotADatabase {
                path: path.into(),
                reason: "directory does not exist (and creating a database was not asked for)"
                    .into(),
            });
        }
        fs.create_dir_all(path)
            .map_err(|e| Error::io("create directory", path, e))?;
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs.sync_dir(parent)
                .map_err(|e| Error::io("sync directory", parent, e))?;
        }
        return Ok(());
    }
    let names = fs.list(path).map_err(|e| Error::io("list", path, e))?;
    if names.iter().any(|n| n == CURRENT) {
        return Ok(());
    }
    check_leftovers(path, fs, &names)?;
    if !may_create {
        return Err(Error::NotADatabase {
            path: path.into(),
            reason: "no CURRENT file (and creating a database was not asked for)".into(),
        });
    }
    Ok(())
}

/// In a directory without `CURRENT`: an earlier creation that failed before
/// writing it may have left its lock, temporary file, manifest and an empty
/// WAL. No write was ever acknowledged without CURRENT, so they hold nothing
/// and are reused or deleted. Anything else (a table, a non-empty log, a
/// foreign file) means this is not a database we may initialise.
fn check_leftovers(path: &Path, fs: &dyn FileSystem, names: &[String]) -> Result<()> {
    for n in names {
        let leftover = match parse(n) {
            // An emptied `lost/`: what Db::destroy leaves of repair's directory.
            None if n == super::LOST_DIR => {
                let p = path.join(n);
                fs.list(&p).is_ok_and(|entries| entries.is_empty())
            }
            Some(FileType::Lock | FileType::Temp | FileType::Manifest(_)) => true,
            Some(FileType::Wal(_)) => {
                let p = path.join(n);
                fs.file_size(&p).map_err(|e| Error::io("stat", &p, e))? == 0
            }
            _ => false,
        };
        if !leftover {
            return Err(Error::NotADatabase {
                path: path.into(),
                reason: format!(
                    "no CURRENT file, and the directory holds other files (such as {n:?})"
                ),
            });
        }
    }
    Ok(())
}

pub(crate) fn take_lock(
    path: &Path,
    fs: &dyn FileSystem,
    access: Access,
) -> Result<Box<dyn FileLock>> {
    let lock_path = path.join(LOCK);
    let taken = match access {
        Access::ReadWrite => fs.lock(&lock_path),
        Access::ReadOnly => fs.lock_shared(&lock_path),
    };
    taken.map_err(|e| {
        if e.kind() == io::ErrorKind::WouldBlock {
            Error::Locked { path: path.into() }
        } else {
            Error::io("lock", lock_path, e)
        }
    })
}

/// The WALs the manifest still needs (numbered `log_number` or later), oldest
/// first.
fn wals_to_replay(names: &[String], log_number: u64) -> Vec<u64> {
    let mut wals: Vec<u64> = names
        .iter()
        .filter_map(|n| match parse(n) {
            Some(FileType::Wal(num)) if num >= log_number => Some(num),
            _ => None,
        })
        .collect();
    wals.sort_unstable();
    wals
}

/// Replays `wals` (oldest first) into memtables. Each memtable that reaches
/// `flush_at` bytes is handed to `on_full` and replaced by an empty one; the
/// last memtable and the last sequence number are returned.
///
/// The end of each log is judged by `mode` (see [`WalRecoveryMode`]): a torn
/// tail is accepted only in the newest log, except under `PointInTime`, where
/// replay stops at the first damage and ignores every newer log.
fn replay_wals(
    path: &Path,
    fs: &dyn FileSystem,
    mode: WalRecoveryMode,
    wals: &[u64],
    mut last_sequence: SeqNo,
    flush_at: usize,
    mut on_full: impl FnMut(&Arc<MemTable>) -> Result<()>,
) -> Result<(Arc<MemTable>, SeqNo)> {
    let mut mem = Arc::new(MemTable::new());
    for (i, &num) in wals.iter().enumerate() {
        let wal_path = path.join(wal_name(num));
        let file = fs
            .open_random(&wal_path)
            .map_err(|e| Error::io("open wal", &wal_path, e))?;
        let mut reader = LogReader::with_mode(file, wal_path.clone(), mode);
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
            if mem.approximate_bytes() >= flush_at {
                on_full(&mem)?;
                mem = Arc::new(MemTable::new());
            }
        }
        if let LogEnd::TornTail { offset } = reader.end() {
            if mode == WalRecoveryMode::PointInTime {
                break;
            }
            if i + 1 != wals.len() {
                return Err(Error::corruption(
                    &wal_path,
                    offset,
                    "log ends in a damaged record but is not the newest log",
                ));
            }
        }
    }
    Ok((mem, last_sequence))
}

/// The WAL and manifest writer of a read-only database: nothing can be
/// appended (writes are refused before they get here), and there is nothing
/// to sync.
struct ReadOnlyLog;

impl AppendFile for ReadOnlyLog {
    fn append(&mut self, _data: &[u8]) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the database is open read-only",
        ))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        0
    }
}
