//! STUB of the public API (signatures only; implementation in progress).
use std::path::{Path, PathBuf};

use crate::batch::WriteBatch;
use crate::error::Result;
use crate::metrics::Metrics;
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::table::TableProperties;

/// An open database. `Send + Sync`; share it with `Arc` or by reference.
pub struct Db;

/// A consistent read-only view as of the moment it was taken.
pub struct Snapshot;

/// Iterator over user keys and values.
pub struct DbIterator;

/// One table of the current version.
#[derive(Clone, Debug)]
pub struct TableInfo {
    pub level: usize,
    pub file_number: u64,
    pub path: PathBuf,
    pub file_size: u64,
    pub properties: TableProperties,
}

/// Totals of one level.
#[derive(Clone, Debug, Default)]
pub struct LevelSummary {
    pub level: usize,
    pub tables: u64,
    pub bytes: u64,
    pub entries: u64,
    pub data_blocks: u64,
    pub data_bytes: u64,
    pub index_partition_bytes: u64,
    pub top_level_index_bytes: u64,
    pub filter_bytes: u64,
    pub raw_key_bytes: u64,
    pub raw_value_bytes: u64,
}

/// Shape of the database: per-level totals.
#[derive(Clone, Debug, Default)]
pub struct DbSummary {
    pub levels: Vec<LevelSummary>,
    /// Filter bytes of every level except the last one.
    pub filter_bytes_except_last_level: u64,
}

impl Db {
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let _ = (path.as_ref(), options);
        todo!()
    }
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let _ = key;
        todo!()
    }
    pub fn get_with(&self, key: &[u8], opts: &ReadOptions) -> Result<Option<Vec<u8>>> {
        let _ = (key, opts);
        todo!()
    }
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let _ = (key, value);
        todo!()
    }
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        let _ = key;
        todo!()
    }
    pub fn write(&self, batch: WriteBatch, opts: &WriteOptions) -> Result<()> {
        let _ = (batch, opts);
        todo!()
    }
    pub fn iter(&self, opts: &ReadOptions) -> Result<DbIterator> {
        let _ = opts;
        todo!()
    }
    pub fn snapshot(&self) -> Snapshot {
        todo!()
    }
    pub fn flush(&self) -> Result<()> {
        todo!()
    }
    pub fn compact_all(&self) -> Result<()> {
        todo!()
    }
    pub fn metrics(&self) -> Metrics {
        todo!()
    }
    pub fn summary(&self) -> DbSummary {
        todo!()
    }
    pub fn tables(&self) -> Vec<TableInfo> {
        todo!()
    }
    pub fn close(self) -> Result<()> {
        todo!()
    }
}

impl Snapshot {
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let _ = key;
        todo!()
    }
    pub fn iter(&self, opts: &ReadOptions) -> Result<DbIterator> {
        let _ = opts;
        todo!()
    }
}

impl DbIterator {
    pub fn seek_to_first(&mut self) {}
    pub fn seek(&mut self, key: &[u8]) {
        let _ = key;
    }
    pub fn valid(&self) -> bool {
        todo!()
    }
    pub fn next(&mut self) {}
    pub fn key(&self) -> &[u8] {
        todo!()
    }
    pub fn value(&self) -> &[u8] {
        todo!()
    }
    pub fn status(&self) -> Result<()> {
        todo!()
    }
}
