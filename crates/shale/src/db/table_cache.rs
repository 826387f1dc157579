//! The table cache: open table readers, bounded by `max_open_files`.
//!
//! A reader holds the table's file handle, footer and properties (and its pinned
//! metadata when `pin_table_metadata` is on, and the metadata
//! `Options::table_metadata` keeps with readers at the table's level, loaded
//! by first use). Opening one costs the footer and properties reads, counted
//! in [`crate::Metrics`].
//!
//! Readers live in one of two places. Up to three quarters of the budget
//! (`max_open_files - reserve`, the reserve being a quarter of it, at least 16
//! and at most all of it) are *held* with their table's metadata
//! ([`FileMeta::held_reader`]): a Get reaches them with no lookup, no lock and
//! no reference count, and they close when the last version placing the table
//! goes. Tables opened once that share is used go to an LRU list of the
//! reserve's size, as LevelDB's table cache does. So at most `max_open_files`
//! readers are open, and a database whose tables fit the held share never
//! looks a reader up.
//!
//! # Concurrency
//!
//! Shared by all readers; the LRU cache is sharded. Two threads missing on the
//! same table may both open it; one reader wins the slot.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use shale_env::FileSystem;

use crate::cache::{LruCache, Priority};
use crate::error::{Error, Result};
use crate::filenames::table_name;
use crate::iter::InternalIterator;
use crate::metrics::MetadataKind;
use crate::metrics::Stats;
use crate::options::Options;
use crate::table::reader::HeldKinds;
use crate::table::{ReadContext, TableReader};
use crate::version::{FileMeta, HeldReader};

pub(crate) struct TableCache {
    readers: LruCache<u64, Arc<TableReader>>,
    /// Readers held with their metadata (each counted while it lives).
    held: Arc<AtomicUsize>,
    /// The most readers that may be held.
    hold_limit: usize,
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    ctx: ReadContext,
    stats: Arc<Stats>,
    opts: Options,
}

impl TableCache {
    pub(crate) fn new(dir: &Path, opts: &Options, ctx: ReadContext) -> TableCache {
        let budget = opts.max_open_files.max(1);
        let reserve = (budget / 4).max(16).min(budget);
        // Each shard gets an equal share of the capacity: keep at least 16
        // readers per shard so that a small limit is not spread too thin.
        let shards = (reserve / 16).clamp(1, opts.cache_shards.max(1));
        TableCache {
            readers: LruCache::new(reserve as u64, shards),
            held: Arc::new(AtomicUsize::new(0)),
            hold_limit: budget - reserve,
            fs: opts.fs.clone(),
            dir: dir.to_path_buf(),
            stats: ctx.stats.clone(),
            ctx,
            opts: opts.clone(),
        }
    }

    /// Runs `op` on the reader of table `f`, which lives at `level`, without
    /// touching a reference count when the reader is held with `f`.
    pub(crate) fn with<R>(
        &self,
        f: &FileMeta,
        level: usize,
        op: impl FnOnce(&TableReader) -> Result<R>,
    ) -> Result<R> {
        match f.held_reader() {
            Some(r) => {
                self.stats.table_cache_hits.incr();
                op(r)
            }
            None => op(self.get(f, level)?.as_ref()),
        }
    }

    /// The reader of table `f`, which lives at `level`.
    pub(crate) fn get(&self, f: &FileMeta, level: usize) -> Result<Arc<TableReader>> {
        if let Some(r) = f.held_reader() {
            self.stats.table_cache_hits.incr();
            return Ok(r.clone());
        }
        let number = f.number;
        if let Some(r) = self.readers.get(&number) {
            self.stats.table_cache_hits.incr();
            return Ok(r);
        }
        self.stats.table_cache_misses.incr();
        let path = self.dir.join(table_name(number));
        let file = self
            .fs
            .open_random(&path)
            .map_err(|e| Error::io("open table", &path, e))?;
        let pin = self.opts.pin_table_metadata;
        let pin_filter = pin && self.opts.filter_policy.applies_to(level);
        let place = &self.opts.table_metadata;
        let held = HeldKinds {
            top_index: place.holds(MetadataKind::TopIndex, level),
            index_partitions: place.holds(MetadataKind::IndexPartitions, level),
            top_filter: place.holds(MetadataKind::TopFilter, level),
            filter_partitions: place.holds(MetadataKind::FilterPartitions, level),
        };
        let reader = Arc::new(
            TableReader::open(file, path, number, self.ctx.clone(), pin, pin_filter)?.hold(held),
        );
        let counted = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.hold_limit).then_some(n + 1)
            })
            .is_ok();
        if counted {
            let held = HeldReader::new(reader, self.held.clone());
            return Ok(f.hold_reader(held).clone());
        }
        self.readers
            .insert(number, reader.clone(), 1, Priority::Low);
        Ok(reader)
    }

    /// A compaction's iterator over table `f`, which lives at `level`: its
    /// data blocks read `compaction_readahead_bytes` at a time through a
    /// handle opened for the scan ([`FileSystem::open_scan`]), or block by
    /// block through the reader's own when that is 0.
    pub(crate) fn scan(&self, f: &FileMeta, level: usize) -> Result<Box<dyn InternalIterator>> {
        let reader = self.get(f, level)?;
        let readahead = self.opts.compaction_readahead_bytes;
        if readahead == 0 {
            return Ok(reader.scan());
        }
        let path = self.dir.join(table_name(f.number));
        let file = self
            .fs
            .open_scan(&path)
            .map_err(|e| Error::io("open table for compaction", &path, e))?;
        Ok(reader.scan_ahead(file, readahead))
    }

    /// Readers currently held with their tables' metadata.
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// Forgets a deleted table.
    pub(crate) fn evict(&self, number: u64) {
        self.readers.erase(&number);
    }
}
