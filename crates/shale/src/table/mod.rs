//! STUB: interface only; implementation in progress.
use std::path::PathBuf;
use std::sync::Arc;

use shale_env::{ObjectWriter, RandomAccessFile};

use crate::cache::LruCache;
use crate::error::Result;
use crate::format::ValueKind;
use crate::iter::InternalIterator;
use crate::metrics::Stats;

/// Block compression. Persisted in every block trailer: DO NOT CHANGE the values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Compression {
    /// Stored as is.
    None = 0,
    /// LZ4 block format.
    Lz4 = 1,
}

/// How to build one table.
#[derive(Clone, Debug)]
pub struct TableBuildOptions {
    /// Target uncompressed size of a data block.
    pub block_size: usize,
    /// Keys between restart points in data blocks.
    pub block_restart_interval: usize,
    /// Target size of an index partition.
    pub index_partition_size: usize,
    /// Compression of data blocks.
    pub compression: Compression,
    /// Bits per key of the table's Bloom filter; `None` writes no filter.
    pub filter_bits_per_key: Option<u32>,
}

/// Summary written in a table's properties block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableProperties {
    pub format_version: u32,
    pub num_entries: u64,
    pub num_deletions: u64,
    pub raw_key_bytes: u64,
    pub raw_value_bytes: u64,
    pub data_bytes: u64,
    pub data_blocks: u64,
    pub index_partition_bytes: u64,
    pub index_partitions: u64,
    pub top_level_index_bytes: u64,
    pub filter_bytes: u64,
    pub filter_bits_per_key: u32,
    pub smallest_key: Vec<u8>,
    pub largest_key: Vec<u8>,
    pub smallest_seqno: u64,
    pub largest_seqno: u64,
    pub file_size: u64,
    pub compression: u8,
}

/// Writes a table.
pub struct TableBuilder;

impl TableBuilder {
    pub fn new(
        writer: Box<dyn ObjectWriter>,
        path: PathBuf,
        opts: TableBuildOptions,
    ) -> TableBuilder {
        let _ = (writer, path, opts);
        todo!()
    }
    pub fn add(&mut self, internal_key: &[u8], value: &[u8]) -> Result<()> {
        let _ = (internal_key, value);
        todo!()
    }
    pub fn num_entries(&self) -> u64 {
        todo!()
    }
    pub fn estimated_size(&self) -> u64 {
        todo!()
    }
    pub fn finish(self) -> Result<TableProperties> {
        todo!()
    }
    pub fn abort(self) -> Result<()> {
        todo!()
    }
}

/// Cache key of a block: (table file number, block offset).
pub type BlockCacheKey = (u64, u64);
/// A decoded block in the cache.
pub struct CachedBlock;
/// The block cache.
pub type BlockCache = LruCache<BlockCacheKey, Arc<CachedBlock>>;

/// What a table reader needs from its database.
#[derive(Clone)]
pub struct ReadContext {
    pub cache: Arc<BlockCache>,
    pub stats: Arc<Stats>,
    pub verify_checksums: bool,
}

/// Result of a point lookup in one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableGet {
    Found(ValueKind, Vec<u8>),
    /// The filter excluded the table.
    FilteredOut,
    /// No entry for the key.
    Absent,
}

pub struct TableReader;

impl TableReader {
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        file_number: u64,
        ctx: ReadContext,
        pin_top_index: bool,
        pin_filter: bool,
    ) -> Result<TableReader> {
        let _ = (file, path, file_number, ctx, pin_top_index, pin_filter);
        todo!()
    }
    pub fn properties(&self) -> &TableProperties {
        todo!()
    }
    pub fn has_filter(&self) -> bool {
        todo!()
    }
    pub fn get(&self, user_key: &[u8], seq: u64, consult_filter: bool) -> Result<TableGet> {
        let _ = (user_key, seq, consult_filter);
        todo!()
    }
    pub fn iter(self: &Arc<Self>) -> Box<dyn InternalIterator> {
        todo!()
    }
}

/// One block of a table, as `shale sst` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockInfo {
    /// "data", "filter", "index", "top_index", "properties".
    pub kind: &'static str,
    /// Offset of the block in the file.
    pub offset: u64,
    /// Size of the block contents (without trailer).
    pub size: u64,
}

/// Layout of a table file.
#[derive(Clone, Debug)]
pub struct TableLayout {
    pub properties: TableProperties,
    pub blocks: Vec<BlockInfo>,
}

/// Reads a table's footer, properties and block list.
pub fn inspect_table(file: Arc<dyn RandomAccessFile>, path: PathBuf) -> Result<TableLayout> {
    let _ = (file, path);
    todo!()
}
