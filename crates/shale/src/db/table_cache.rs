//! The table cache: open table readers, bounded by `max_open_files`.
//!
//! A reader holds the table's file handle, footer and properties (and its pinned
//! metadata when `pin_table_metadata` is on). Opening one costs the footer and
//! properties reads, counted in [`crate::Metrics`].
//!
//! # Concurrency
//!
//! Shared by all readers; the underlying [`LruCache`] is sharded. Two threads
//! missing on the same table may both open it; one reader wins the slot.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale_env::FileSystem;

use crate::cache::{LruCache, Priority};
use crate::error::{Error, Result};
use crate::filenames::table_name;
use crate::metrics::Stats;
use crate::options::Options;
use crate::table::{ReadContext, TableReader};

pub(crate) struct TableCache {
    readers: LruCache<u64, Arc<TableReader>>,
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    ctx: ReadContext,
    stats: Arc<Stats>,
    opts: Options,
}

impl TableCache {
    pub(crate) fn new(dir: &Path, opts: &Options, ctx: ReadContext) -> TableCache {
        // Each shard gets an equal share of the capacity: keep at least 16
        // readers per shard so that a small limit is not spread too thin.
        let capacity = opts.max_open_files.max(1);
        let shards = (capacity / 16).clamp(1, opts.cache_shards.max(1));
        TableCache {
            readers: LruCache::new(capacity as u64, shards),
            fs: opts.fs.clone(),
            dir: dir.to_path_buf(),
            stats: ctx.stats.clone(),
            ctx,
            opts: opts.clone(),
        }
    }

    /// The reader of table `number`, which lives at `level`.
    pub(crate) fn get(&self, number: u64, level: usize) -> Result<Arc<TableReader>> {
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
        let reader = Arc::new(TableReader::open(
            file,
            path,
            number,
            self.ctx.clone(),
            pin,
            pin_filter,
        )?);
        self.readers
            .insert(number, reader.clone(), 1, Priority::Low);
        Ok(reader)
    }

    /// Forgets a deleted table.
    pub(crate) fn evict(&self, number: u64) {
        self.readers.erase(&number);
    }
}
