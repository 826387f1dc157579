//! The engine adapter: what a benchmark needs from a key-value engine, so that
//! one bench drives shale today and the Pebble and RocksDB harnesses later.
//!
//! An adapter opens a database with a given block-cache size, loads batches,
//! serves Gets, and reports two things the study needs: counters of the blocks
//! its Gets read (per block kind: cache hits, cache misses, physical reads) and
//! the composition of the database (filter, index and data bytes) from which the
//! inflection points follow.
//!
//! # Concurrency
//!
//! An opened [`KvEngine`] is shared by the bench's reader threads (`Send +
//! Sync`); `get` may be called from all of them at once.

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;

pub use shale_workload::protocol::Composition;
use shale_workload::protocol::{HitMiss, LevelShape};

use shale::{BlockKind, Db, Metrics, Options, WriteBatch, WriteOptions};

/// Counters of one block kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KindCounters {
    /// Lookups answered by the block cache.
    pub cache_hits: u64,
    /// Lookups the block cache could not answer.
    pub cache_misses: u64,
    /// Reads issued to the file system.
    pub physical_reads: u64,
    /// Bytes those reads asked for.
    pub physical_bytes: u64,
}

impl KindCounters {
    fn minus(&self, e: &KindCounters) -> KindCounters {
        KindCounters {
            cache_hits: self.cache_hits.saturating_sub(e.cache_hits),
            cache_misses: self.cache_misses.saturating_sub(e.cache_misses),
            physical_reads: self.physical_reads.saturating_sub(e.physical_reads),
            physical_bytes: self.physical_bytes.saturating_sub(e.physical_bytes),
        }
    }

    /// Hits / lookups, `None` without lookups.
    pub fn hit_rate(&self) -> Option<f64> {
        let n = self.cache_hits + self.cache_misses;
        (n > 0).then(|| self.cache_hits as f64 / n as f64)
    }
}

/// Read counters of an engine: Gets and the blocks they read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadCounters {
    /// Gets completed.
    pub gets: u64,
    /// Gets that found their key.
    pub found: u64,
    /// Bloom filter blocks.
    pub filter: KindCounters,
    /// Top-level index blocks.
    pub top_index: KindCounters,
    /// Index partitions.
    pub index: KindCounters,
    /// Data blocks.
    pub data: KindCounters,
    /// Physical reads of table metadata outside the cache (footers,
    /// properties) when tables are opened.
    pub table_open_reads: u64,
}

impl ReadCounters {
    /// Counters accumulated since `earlier`.
    pub fn since(&self, earlier: &ReadCounters) -> ReadCounters {
        ReadCounters {
            gets: self.gets.saturating_sub(earlier.gets),
            found: self.found.saturating_sub(earlier.found),
            filter: self.filter.minus(&earlier.filter),
            top_index: self.top_index.minus(&earlier.top_index),
            index: self.index.minus(&earlier.index),
            data: self.data.minus(&earlier.data),
            table_open_reads: self
                .table_open_reads
                .saturating_sub(earlier.table_open_reads),
        }
    }

    fn kinds(&self) -> [KindCounters; 4] {
        [self.filter, self.top_index, self.index, self.data]
    }

    /// Block-cache misses of all kinds.
    pub fn cache_misses(&self) -> u64 {
        self.kinds().iter().map(|k| k.cache_misses).sum()
    }

    /// Physical reads of all kinds, table opening included.
    pub fn physical_reads(&self) -> u64 {
        self.kinds().iter().map(|k| k.physical_reads).sum::<u64>() + self.table_open_reads
    }

    /// Bytes of the physical reads of blocks (table opening not included).
    pub fn physical_bytes(&self) -> u64 {
        self.kinds().iter().map(|k| k.physical_bytes).sum()
    }

    /// Overall block-cache hit rate.
    pub fn hit_rate(&self) -> Option<f64> {
        let hits: u64 = self.kinds().iter().map(|k| k.cache_hits).sum();
        let n = hits + self.cache_misses();
        (n > 0).then(|| hits as f64 / n as f64)
    }
}

/// Bytes an engine wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteCounters {
    /// Bytes of the user's write batches.
    pub user_bytes: u64,
    /// Table files written by flushes and compactions.
    pub table_bytes: u64,
    /// Write-ahead log.
    pub wal_bytes: u64,
}

/// An open database as a bench sees it.
pub trait KvEngine: Send + Sync {
    /// Engine name and version.
    fn name(&self) -> String;
    /// Writes the pairs as one batch, without sync.
    fn load_batch(&self, pairs: &[(&[u8], &[u8])]) -> Result<(), String>;
    /// The value of `key`, `None` if absent.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String>;
    /// The values of `keys`, in their order (by default one Get after the
    /// other; an engine with a batched read overrides it).
    fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>, String> {
        keys.iter().map(|k| self.get(k)).collect()
    }
    /// `answer(i, value)` for each key `i` drawn from `keys`, with up to
    /// `in_flight` reads in flight, in the order the answers come;
    /// `answer` returning `Break` ends the call. By default one
    /// [`KvEngine::multi_get`] of `in_flight` keys after the other.
    fn multi_get_each(
        &self,
        keys: &mut dyn Iterator<Item = Vec<u8>>,
        in_flight: usize,
        answer: &mut dyn FnMut(usize, Option<Vec<u8>>) -> ControlFlow<()>,
    ) -> Result<(), String> {
        let mut first = 0;
        loop {
            let group: Vec<Vec<u8>> = (&mut *keys).take(in_flight.max(1)).collect();
            if group.is_empty() {
                return Ok(());
            }
            for (i, v) in self.multi_get(&group)?.into_iter().enumerate() {
                if answer(first + i, v).is_break() {
                    return Ok(());
                }
            }
            first += group.len();
        }
    }
    /// Starts recording a block-access trace into `file` (see
    /// `shale::trace`), keeping the accesses of about `sample_rate` of the
    /// blocks; engines without one say so.
    fn start_block_trace(&self, file: &Path, sample_rate: f64) -> Result<(), String> {
        let _ = (file, sample_rate);
        Err(format!(
            "{} does not record block-access traces",
            self.name()
        ))
    }
    /// Puts a label in the trace being recorded (nothing without one).
    fn mark_block_trace(&self, _label: &str) {}
    /// Ends the trace: records and bytes written.
    fn end_block_trace(&self) -> Result<(u64, u64), String> {
        Err(format!(
            "{} does not record block-access traces",
            self.name()
        ))
    }
    /// Read counters since the database was opened.
    fn counters(&self) -> ReadCounters;
    /// The composition of the database's tables.
    fn composition(&self) -> Result<Composition, String>;
    /// Files and bytes per level, from level 0 down (empty without the
    /// information).
    fn levels(&self) -> Result<Vec<LevelShape>, String> {
        Ok(Vec::new())
    }
    /// Bytes written since the database was opened (zero without the
    /// information).
    fn write_counters(&self) -> WriteCounters {
        WriteCounters::default()
    }
    /// Hits and misses of the open-table cache since the database was opened.
    fn table_cache(&self) -> Option<HitMiss> {
        None
    }
    /// Flushes memory to tables and waits until no compaction is needed.
    fn settle(&self) -> Result<(), String>;
    /// Closes cleanly.
    fn close(self: Box<Self>) -> Result<(), String>;
}

/// Opens databases of one engine.
pub trait EngineOpener: Send + Sync {
    /// Opens (or with `create`, creates) the database in `dir` with a block
    /// cache of `cache_bytes`.
    fn open(&self, dir: &Path, cache_bytes: u64, create: bool)
        -> Result<Box<dyn KvEngine>, String>;
    /// Opens the database in `dir` to read it only: nothing in the directory
    /// is written, and other readers may have it open at the same time.
    /// [`KvEngine::settle`] and writes fail on it.
    fn open_read_only(&self, dir: &Path, cache_bytes: u64) -> Result<Box<dyn KvEngine>, String>;
}

/// Opens shale databases.
#[derive(Clone, Debug, Default)]
pub struct ShaleOpener {
    /// Read tables with O_DIRECT, so that physical reads are device reads.
    pub direct_io: bool,
    /// `Options::read_threads` (`None`: the engine's default).
    pub read_threads: Option<usize>,
    /// `PosixOptions::io_uring` (`None`: its default, on).
    pub io_uring: Option<bool>,
}

impl ShaleOpener {
    fn fs(&self) -> shale::env::PosixFs {
        let defaults = shale::env::PosixOptions::default();
        shale::env::PosixFs::new(shale::env::PosixOptions {
            direct_io: self.direct_io,
            io_uring: self.io_uring.unwrap_or(defaults.io_uring),
            ..defaults
        })
    }
}

impl EngineOpener for ShaleOpener {
    fn open(
        &self,
        dir: &Path,
        cache_bytes: u64,
        create: bool,
    ) -> Result<Box<dyn KvEngine>, String> {
        open_shale(
            Arc::new(self.fs()),
            dir,
            cache_bytes,
            Access::Create(create),
            self.read_threads,
        )
    }

    fn open_read_only(&self, dir: &Path, cache_bytes: u64) -> Result<Box<dyn KvEngine>, String> {
        open_shale(
            Arc::new(self.fs()),
            dir,
            cache_bytes,
            Access::ReadOnly,
            self.read_threads,
        )
    }
}

/// Opens shale databases on a given file system (a zone file system, a
/// traced one), with the bench options of [`ShaleOpener`].
#[derive(Clone)]
pub struct ShaleFsOpener {
    /// The file system the databases are on.
    pub fs: shale::env::FsRef,
    /// `Options::read_threads` (`None`: the engine's default).
    pub read_threads: Option<usize>,
}

impl EngineOpener for ShaleFsOpener {
    fn open(
        &self,
        dir: &Path,
        cache_bytes: u64,
        create: bool,
    ) -> Result<Box<dyn KvEngine>, String> {
        open_shale(
            self.fs.clone(),
            dir,
            cache_bytes,
            Access::Create(create),
            self.read_threads,
        )
    }

    fn open_read_only(&self, dir: &Path, cache_bytes: u64) -> Result<Box<dyn KvEngine>, String> {
        open_shale(
            self.fs.clone(),
            dir,
            cache_bytes,
            Access::ReadOnly,
            self.read_threads,
        )
    }
}

/// How a bench opens a shale database.
enum Access {
    /// Read-write, creating it if asked.
    Create(bool),
    /// Read-only (`Db::open_read_only`).
    ReadOnly,
}

fn open_shale(
    fs: shale::env::FsRef,
    dir: &Path,
    cache_bytes: u64,
    access: Access,
    read_threads: Option<usize>,
) -> Result<Box<dyn KvEngine>, String> {
    let defaults = Options::default();
    let read_threads = read_threads.unwrap_or(defaults.read_threads);
    let opts = defaults
        .fs(fs)
        .create_if_missing(matches!(access, Access::Create(true)))
        .block_cache_bytes(cache_bytes)
        .max_open_files(table_cache_files())
        .read_threads(read_threads);
    let db = match access {
        Access::ReadOnly => Db::open_read_only(dir, opts),
        Access::Create(_) => Db::open(dir, opts),
    }
    .map_err(|e| e.to_string())?;
    Ok(Box::new(ShaleEngine { db }))
}

/// The table cache of a bench: every table open, as the study assumes (a
/// table's top-level index is loaded when it is opened, and a table cache
/// smaller than the database makes Gets reread footers and properties; at
/// 200M keys shale has about 1,500 tables against the engine's default of
/// 1,000). It takes the process's open-file limit, raised to its hard limit,
/// less 256 descriptors for everything else, and at most a million.
fn table_cache_files() -> usize {
    let limit = shale::env::raise_open_files_limit().unwrap_or(1024);
    usize::try_from(limit.saturating_sub(256).clamp(64, 1_000_000)).unwrap_or(1_000_000)
}

/// A shale database behind the adapter.
pub struct ShaleEngine {
    db: Db,
}

fn kind(m: &Metrics, k: BlockKind) -> KindCounters {
    let b = m.block(k);
    KindCounters {
        cache_hits: b.cache_hits,
        cache_misses: b.cache_misses,
        physical_reads: b.physical_reads,
        physical_bytes: b.bytes_read,
    }
}

impl KvEngine for ShaleEngine {
    fn name(&self) -> String {
        format!("shale {}", env!("CARGO_PKG_VERSION"))
    }

    fn load_batch(&self, pairs: &[(&[u8], &[u8])]) -> Result<(), String> {
        let mut b = WriteBatch::new();
        for (k, v) in pairs {
            b.put(k, v);
        }
        self.db
            .write(b, &WriteOptions::default())
            .map_err(|e| e.to_string())
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.db.get(key).map_err(|e| e.to_string())
    }

    fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>, String> {
        self.db.multi_get(keys).map_err(|e| e.to_string())
    }

    fn multi_get_each(
        &self,
        keys: &mut dyn Iterator<Item = Vec<u8>>,
        in_flight: usize,
        answer: &mut dyn FnMut(usize, Option<Vec<u8>>) -> ControlFlow<()>,
    ) -> Result<(), String> {
        self.db
            .multi_get_each(keys, in_flight, answer)
            .map_err(|e| e.to_string())
    }

    fn start_block_trace(&self, file: &Path, sample_rate: f64) -> Result<(), String> {
        crate::trace_file::start_trace(&self.db, file, sample_rate).map_err(|e| e.to_string())
    }

    fn mark_block_trace(&self, label: &str) {
        self.db.mark_block_trace(label);
    }

    fn end_block_trace(&self) -> Result<(u64, u64), String> {
        let (_, s) = self.db.end_block_trace().map_err(|e| e.to_string())?;
        Ok((s.records, s.bytes))
    }

    fn counters(&self) -> ReadCounters {
        let m = self.db.metrics();
        ReadCounters {
            gets: m.gets,
            found: m.gets_found,
            filter: kind(&m, BlockKind::Filter),
            top_index: kind(&m, BlockKind::TopIndex),
            index: kind(&m, BlockKind::IndexPartition),
            data: kind(&m, BlockKind::Data),
            table_open_reads: m.block(BlockKind::Footer).physical_reads
                + m.block(BlockKind::Properties).physical_reads,
        }
    }

    fn composition(&self) -> Result<Composition, String> {
        let s = self.db.summary().map_err(|e| e.to_string())?;
        let t = s.total();
        Ok(Composition {
            entries: t.entries,
            raw_key_bytes: t.raw_key_bytes,
            raw_value_bytes: t.raw_value_bytes,
            db_bytes: t.bytes,
            data_bytes: t.data_bytes,
            filter_bytes: t.filter_bytes,
            filter_bytes_except_last_level: s.filter_bytes_except_last_level,
            top_level_index_bytes: t.top_level_index_bytes,
            index_bytes: t.index_partition_bytes + t.top_level_index_bytes,
        })
    }

    fn levels(&self) -> Result<Vec<LevelShape>, String> {
        let s = self.db.summary().map_err(|e| e.to_string())?;
        Ok(s.levels
            .iter()
            .map(|l| LevelShape {
                level: l.level as u32,
                files: l.tables,
                bytes: l.bytes,
            })
            .collect())
    }

    fn write_counters(&self) -> WriteCounters {
        let m = self.db.metrics();
        WriteCounters {
            user_bytes: m.bytes_written_user,
            table_bytes: m.bytes_written_tables,
            wal_bytes: m.bytes_written_wal,
        }
    }

    fn table_cache(&self) -> Option<HitMiss> {
        let m = self.db.metrics();
        Some(HitMiss {
            hits: m.table_cache_hits,
            misses: m.table_cache_misses,
        })
    }

    fn settle(&self) -> Result<(), String> {
        self.db.settle().map_err(|e| e.to_string())
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        self.db.close().map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inflection_points_add_the_right_parts() {
        let c = Composition {
            filter_bytes: 900,
            filter_bytes_except_last_level: 100,
            top_level_index_bytes: 10,
            index_bytes: 400,
            ..Default::default()
        };
        assert_eq!(c.ip1_bytes(), 110);
        assert_eq!(c.ip2_bytes(), 500);
    }

    #[test]
    fn shale_adapter_loads_reads_and_counts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let opener = ShaleOpener::default();
        let e = opener.open(dir.path(), 1 << 20, true).expect("open");
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..1000u32)
            .map(|i| (i.to_be_bytes().to_vec(), vec![i as u8; 20]))
            .collect();
        let refs: Vec<(&[u8], &[u8])> = pairs
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_slice()))
            .collect();
        e.load_batch(&refs).expect("load");
        e.settle().expect("settle");
        let c = e.composition().expect("composition");
        assert_eq!(c.entries, 1000);
        assert!(c.index_bytes > 0 && c.db_bytes > c.data_bytes);
        e.close().expect("close");

        let e = opener.open(dir.path(), 1 << 20, false).expect("reopen");
        let before = e.counters();
        assert_eq!(
            e.get(&7u32.to_be_bytes()).expect("get"),
            Some(vec![7u8; 20])
        );
        assert_eq!(e.get(&5000u32.to_be_bytes()).expect("get"), None);
        let d = e.counters().since(&before);
        assert_eq!(d.gets, 2);
        assert_eq!(d.found, 1);
        assert!(d.data.cache_misses >= 1, "a cold cache misses: {d:?}");
        assert!(d.physical_reads() >= d.cache_misses());
        e.close().expect("close");
    }
}
