//! Reading a table: open (footer, properties, optional pinned metadata) and
//! point lookups here. A table's index family, chosen at open from its
//! format version, is an [`IndexReader`]: `classic` (versions 1 and 2) and
//! `paged` (versions 3 and 4) each own how their index and filter are
//! located, decoded, held and searched, and their `get` after the filter.
//! What both share (block references and reads, the fetch through the
//! cache with its counts, handle checks, held metadata, read-ahead) is in
//! `block_io`; batched lookups in `batch`, the two-level iterator in `iter`,
//! layout inspection in `inspect`.
//!
//! # Accounting
//!
//! Every read is counted in [`Stats`], per [`BlockKind`]:
//!
//! - `open` issues exactly one physical read for the footer (`Footer`) and one for
//!   the properties block (`Properties`); with `pin_top_index` / `pin_filter` one
//!   more physical read of that kind each (in version 3 `pin_filter` pins the
//!   top-level filter index, a `TopIndex` read). None of these are cache lookups. Pinned
//!   bytes are charged with `BlockCache::reserve_pinned` and released on drop.
//!   Later uses of a pinned block count nothing: the reader holds it.
//! - Metadata *held* with the reader ([`TableReader::hold`], the engine's
//!   `MetadataPlacement`) is not looked up in the cache: its first use reads
//!   it (one physical read of its kind, no cache lookup counted), later uses
//!   count nothing. Held bytes are not charged to the cache; they are counted
//!   in `Stats::metadata_held` while the reader lives.
//! - Every other block access is a block-cache lookup keyed by
//!   `(file_number, block_offset)`: a hit counts `cache_hit(kind)`; a miss counts
//!   `cache_miss(kind)`, then exactly one `read_exact_at` of contents + trailer
//!   (`physical_read(kind, bytes)`), then inserts the decoded block.
//! - A `get` touches, in order: the filter (if asked and present; a negative answer
//!   stops here), the top-level index, one index partition, one data block. Only when
//!   one user key's versions straddle a data-block boundary may it read the next
//!   data block(s), and the next partition. In version 3 the filter is the
//!   top-level filter index (counted as `TopIndex`) and one filter partition,
//!   the index partition a locator, and about one Get in 1,000 reads a second
//!   data block where a locator's code is ambiguous. Paged blocks are read
//!   whole: a data block is its pages, a partition its stored length.
//!
//! # Concurrency
//!
//! A `TableReader` is immutable after `open` (and `hold`) except for its held
//! metadata, whose slots are each set once (`OnceLock`, or a map behind a
//! read-write lock for versions 1 and 2, never held across a read); it is
//! shared by `Arc` between threads; the cache and stats synchronize
//! themselves. Iterators are owned by one
//! thread at a time.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

mod batch;
mod block_io;
mod block_ref;
mod classic;
mod inspect;
mod iter;
mod paged;
pub(crate) use batch::{BatchScope, Planned};
use block_io::{HeldMeta, HeldPartitions, HeldSlot, Placement};
use block_ref::{read_block_contents, BlockRef, ReadAhead};
use classic::ClassicIndex;
pub(crate) use inspect::check_metadata;
pub use inspect::inspect_table;
use iter::TableIter;
use paged::PagedIndex;

use shale_env::RandomAccessFile;

use super::block::{split_target, Corrupt, Cursor, BLOCK_TRAILER_LEN};
use super::layout::{decode_properties, BlockHandle, Footer, FOOTER_LEN};
use super::{CachedBlock, ReadContext, TableGet, TableProperties};
use crate::error::{Error, Result};
use crate::format::{
    ValueKind, MIN_TABLE_FORMAT_VERSION, RANGE_DEL_TABLE_FORMAT_VERSION, TABLE_FORMAT_VERSION,
};
use crate::iter::InternalIterator;
use crate::metrics::{BlockKind, MetadataKind, Stats};
use crate::pinned::PinnedValue;
use crate::rangedel::Fragments;

/// The first table format version of the paged index family.
const PAGED_FORMAT_VERSION: u32 = 3;

/// What `open` learns from the footer and the properties block.
struct Meta {
    footer: Footer,
    props: TableProperties,
    /// Offset of the first index partition (== end of the filter or data).
    partitions_start: u64,
    /// End of the data region: data blocks and the padding between them.
    data_end: u64,
}

impl Meta {
    /// The range-deletion block's handle (version 4, when it has one).
    fn range_del_handle(&self) -> Option<BlockHandle> {
        let bytes = self.props.range_del_bytes;
        (bytes != 0).then(|| BlockHandle {
            offset: self.footer.properties.offset.saturating_sub(bytes),
            size: bytes.saturating_sub(BLOCK_TRAILER_LEN),
        })
    }

    /// Where the top-level blocks begin (the end of the paged region).
    fn top_levels_start(&self) -> u64 {
        self.footer
            .filter
            .map_or(self.footer.top_index.offset, |f| f.offset)
    }
}

/// How a table's index and filter are laid out, located, decoded and
/// searched: one variant per index family, chosen from the format version.
/// Everything family-specific of a reader goes through one `match` on it.
#[derive(Clone, Copy, Debug)]
enum IndexReader {
    /// Versions 1 and 2: block indexes with handles, a whole-table filter.
    Classic(ClassicIndex),
    /// Versions 3 and 4: paged blocks, key arrays, locators, filter
    /// partitions.
    Paged(PagedIndex),
}

impl IndexReader {
    /// The family of a table of format `version` (one `read_meta` accepts).
    fn for_version(version: u32) -> IndexReader {
        if version >= PAGED_FORMAT_VERSION {
            IndexReader::Paged(PagedIndex)
        } else {
            IndexReader::Classic(ClassicIndex::new(version))
        }
    }

    /// True for the paged family.
    fn paged(&self) -> bool {
        matches!(self, IndexReader::Paged(_))
    }

    /// True if blocks of `kind` are paged blocks in this table.
    fn is_paged(&self, kind: BlockKind) -> bool {
        match self {
            IndexReader::Classic(_) => false,
            IndexReader::Paged(_) => PagedIndex::is_paged(kind),
        }
    }

    /// The kind the block the footer names as the filter is read and
    /// counted as: the whole filter (`Filter`), or the top-level filter
    /// index (`TopIndex`).
    fn filter_kind(&self) -> BlockKind {
        match self {
            IndexReader::Classic(_) => BlockKind::Filter,
            IndexReader::Paged(_) => BlockKind::TopIndex,
        }
    }

    /// Where the index partitions begin (`None` if the properties place
    /// them out of range).
    fn partitions_start(&self, footer: &Footer, props: &TableProperties) -> Option<u64> {
        match self {
            IndexReader::Classic(_) => ClassicIndex::partitions_start(footer, props),
            IndexReader::Paged(_) => Some(PagedIndex::partitions_start(footer)),
        }
    }

    /// The end of the data region the properties give (`None` if invalid).
    fn data_region(&self, props: &TableProperties) -> Option<u64> {
        match self {
            IndexReader::Classic(_) => ClassicIndex::data_region(props),
            IndexReader::Paged(_) => PagedIndex::data_region(props),
        }
    }

    /// Decodes a block of `kind`.
    fn decode(&self, kind: BlockKind, contents: Vec<u8>) -> Result<CachedBlock, Corrupt> {
        match self {
            IndexReader::Classic(c) => c.decode(kind, contents),
            IndexReader::Paged(p) => p.decode(kind, contents),
        }
    }

    /// Where blocks of `kind` live in the table `meta` describes.
    fn placement(&self, kind: BlockKind, meta: &Meta) -> Placement {
        match self {
            IndexReader::Classic(c) => c.placement(kind, meta),
            IndexReader::Paged(p) => p.placement(kind, meta),
        }
    }

    /// Empty slots for the partitions a reader holds (`partitions`: whether
    /// it holds any).
    fn held_partitions(&self, meta: &Meta, partitions: bool) -> HeldPartitions {
        match self {
            IndexReader::Classic(_) => ClassicIndex::held_partitions(),
            IndexReader::Paged(_) => PagedIndex::held_partitions(meta, partitions),
        }
    }

    /// The held slot of the partition `r` of `kind` (not a top-level block),
    /// if `h` holds it.
    fn held_partition<'a>(
        &self,
        h: &'a HeldMeta,
        kind: BlockKind,
        r: BlockRef,
        meta: &Meta,
    ) -> Option<(HeldSlot<'a>, MetadataKind)> {
        match self {
            IndexReader::Classic(_) => ClassicIndex::held_slot(h, kind),
            IndexReader::Paged(_) => PagedIndex::held_slot(h, kind, r, meta.data_end),
        }
    }
}

/// Reads and decodes a range-deletion block; damage is `Corruption` at its
/// offset.
fn read_range_dels(
    file: &dyn RandomAccessFile,
    path: &Path,
    h: BlockHandle,
    stats: Option<&Stats>,
    verify: bool,
) -> Result<Fragments> {
    let contents = read_block_contents(file, path, h, BlockKind::Properties, stats, verify)?;
    Fragments::decode(&contents).map_err(|reason| {
        Error::corruption(path, h.offset, format!("range-deletion block: {reason}"))
    })
}

/// Reads a table's footer and properties (one physical read each) and checks
/// that the blocks they place fit the file and the table's index family.
fn read_meta(
    file: &dyn RandomAccessFile,
    path: &Path,
    stats: Option<&Stats>,
    verify: bool,
) -> Result<Meta> {
    let size = file.size();
    if size < FOOTER_LEN {
        return Err(Error::corruption(
            path,
            0,
            format!("file of {size} bytes is too short for a table (footer is {FOOTER_LEN} bytes)"),
        ));
    }
    let footer_offset = size - FOOTER_LEN;
    let mut buf = [0u8; FOOTER_LEN as usize];
    let res = file.read_exact_at(footer_offset, &mut buf);
    if let Some(s) = stats {
        s.physical_read(BlockKind::Footer, FOOTER_LEN);
    }
    res.map_err(|e| Error::io("read table footer", path, e))?;
    let bad_footer = |reason: String| Error::corruption(path, footer_offset, reason);
    let footer = Footer::decode(&buf).map_err(|c| bad_footer(c.0.to_string()))?;
    if !(MIN_TABLE_FORMAT_VERSION..=TABLE_FORMAT_VERSION).contains(&footer.format_version) {
        return Err(bad_footer(format!(
            "unsupported table format version {}",
            footer.format_version
        )));
    }
    let (ph, th) = (footer.properties, footer.top_index);
    let meta_start = footer.filter.map_or(th.offset, |f| f.offset);
    if ph.end() != footer_offset
        || th.end() > ph.offset
        || footer.filter.is_some_and(|f| f.end() > th.offset)
    {
        return Err(bad_footer("block handles out of place".into()));
    }
    let contents = read_block_contents(file, path, ph, BlockKind::Properties, stats, verify)?;
    let bad_props = |reason: &str| Error::corruption(path, ph.offset, reason.to_string());
    let props = decode_properties(&contents).map_err(|c| bad_props(c.0))?;
    if props.format_version != footer.format_version {
        return Err(bad_props("format version disagrees with the footer"));
    }
    if props.file_size != size {
        return Err(bad_props("file size disagrees with the properties"));
    }
    let index = IndexReader::for_version(props.format_version);
    let partitions_start = index
        .partitions_start(&footer, &props)
        .ok_or_else(|| bad_props("index partition bytes out of range"))?;
    if props.range_del_bytes != 0 {
        let fits = props.format_version >= RANGE_DEL_TABLE_FORMAT_VERSION
            && ph
                .offset
                .checked_sub(props.range_del_bytes)
                .is_some_and(|start| {
                    start >= th.end() && props.range_del_bytes > BLOCK_TRAILER_LEN
                });
        if !fits {
            return Err(bad_props("range-deletion block out of place"));
        }
    } else if props.range_deletions != 0 {
        return Err(bad_props("range deletions without a range-deletion block"));
    }
    if props.format_version < 2 && props.data_padding_bytes != 0 {
        return Err(bad_props(
            "padding between data blocks in a version-1 table",
        ));
    }
    let data_region = index.data_region(&props);
    let data_end = data_region
        .filter(|&end| end <= meta_start.min(partitions_start))
        .ok_or_else(|| bad_props("data bytes out of range"))?;
    Ok(Meta {
        footer,
        props,
        partitions_start,
        data_end,
    })
}

/// An open table. Immutable and shareable (`Arc`) across threads.
pub(crate) struct TableReader {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    file_number: u64,
    ctx: ReadContext,
    meta: Meta,
    /// The table's index family, chosen from its format version at open.
    index: IndexReader,
    pinned_top: Option<Arc<CachedBlock>>,
    pinned_filter: Option<Arc<CachedBlock>>,
    pinned_bytes: u64,
    /// Metadata kept with the reader, outside the block cache (`None`: none).
    held: Option<Box<HeldMeta>>,
    /// The range-deletion block, decoded at open (empty without one).
    range_dels: Arc<Fragments>,
}

/// Which kinds of metadata a reader keeps with itself, loaded on first use,
/// instead of in the block cache (the engine's `MetadataPlacement` at the
/// table's level).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct HeldKinds {
    pub top_index: bool,
    pub index_partitions: bool,
    pub top_filter: bool,
    pub filter_partitions: bool,
}

impl HeldKinds {
    fn any(self) -> bool {
        self.top_index || self.index_partitions || self.top_filter || self.filter_partitions
    }
}

impl TableReader {
    /// Opens the table in `file`: reads its footer and properties (two physical
    /// reads) and, if asked, pins its top-level index and filter (one physical read
    /// each, charged to the cache with `reserve_pinned`). `file_number` keys its
    /// blocks in `ctx.cache`, so it must be unique among live tables. `path` only
    /// names the file in errors.
    ///
    /// Errors: `Corruption` for a file that is not a valid table (too short, bad
    /// magic, unknown version, damaged footer or properties), `Io` if reads fail.
    pub(crate) fn open(
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        file_number: u64,
        ctx: ReadContext,
        pin_top_index: bool,
        pin_filter: bool,
    ) -> Result<TableReader> {
        let meta = read_meta(file.as_ref(), &path, Some(&ctx.stats), ctx.verify_checksums)?;
        let index = IndexReader::for_version(meta.props.format_version);
        let mut reader = TableReader {
            file,
            path,
            file_number,
            ctx,
            meta,
            index,
            pinned_top: None,
            pinned_filter: None,
            pinned_bytes: 0,
            held: None,
            range_dels: Arc::default(),
        };
        if let Some(h) = reader.meta.range_del_handle() {
            // Metadata read at open, like the properties.
            let dels = read_range_dels(
                reader.file.as_ref(),
                &reader.path,
                h,
                Some(&reader.ctx.stats),
                reader.ctx.verify_checksums,
            )?;
            if dels.count() != reader.meta.props.range_deletions || dels.is_empty() {
                return Err(Error::corruption(
                    &reader.path,
                    h.offset,
                    format!(
                        "range-deletion block holds {} range deletions, the properties say {}",
                        dels.count(),
                        reader.meta.props.range_deletions
                    ),
                ));
            }
            reader.range_dels = Arc::new(dels);
        }
        if pin_top_index {
            let h = reader.meta.footer.top_index;
            let b = reader.read_uncached(BlockKind::TopIndex, BlockRef::classic(h))?;
            reader.pin(b.charge());
            reader.pinned_top = Some(b);
        }
        if let (true, Some(fh)) = (pin_filter, reader.meta.footer.filter) {
            // The paged family pins only the top-level filter index.
            let kind = reader.index.filter_kind();
            let b = reader.read_uncached(kind, BlockRef::classic(fh))?;
            reader.pin(b.charge());
            reader.pinned_filter = Some(b);
        }
        Ok(reader)
    }

    /// Keeps the metadata of `kinds` with this reader from now on: each block
    /// is read by its first use (counted as a physical read of its kind) and
    /// held, outside the block cache and uncharged, until the reader drops.
    /// Blocks pinned at open stay pinned.
    pub(crate) fn hold(mut self, kinds: HeldKinds) -> TableReader {
        if !kinds.any() {
            self.held = None;
            return self;
        }
        let partitions = kinds.index_partitions || kinds.filter_partitions;
        let held_partitions = self.index.held_partitions(&self.meta, partitions);
        self.held = Some(Box::new(HeldMeta {
            kinds,
            top_index: OnceLock::new(),
            top_filter: OnceLock::new(),
            partitions: held_partitions,
            bytes: Default::default(),
        }));
        self
    }
    /// Bytes of metadata of `kind` this reader holds outside the block cache.
    #[cfg(test)]
    pub(crate) fn held_bytes(&self, kind: MetadataKind) -> u64 {
        self.held
            .as_deref()
            .map_or(0, |h| h.bytes[kind.index()].load(Ordering::Relaxed))
    }

    fn pin(&mut self, bytes: u64) {
        self.ctx.cache.reserve_pinned(bytes);
        self.ctx.tracer.pinned(bytes, true);
        self.pinned_bytes += bytes;
    }

    /// The table's range deletions (decoded at open; empty without).
    pub(crate) fn range_dels(&self) -> &Arc<Fragments> {
        &self.range_dels
    }

    /// The table's properties.
    pub(crate) fn properties(&self) -> &TableProperties {
        &self.meta.props
    }

    /// True if the table has a Bloom filter.
    #[cfg(test)]
    pub(crate) fn has_filter(&self) -> bool {
        self.meta.footer.filter.is_some()
    }

    /// Bytes of metadata this reader pins (charged to the block cache).
    #[cfg(test)]
    pub(crate) fn pinned_bytes(&self) -> u64 {
        self.pinned_bytes
    }

    /// The top-level index: pinned, held, or through the cache.
    fn top_index(&self) -> Result<Arc<CachedBlock>> {
        match &self.pinned_top {
            Some(b) => Ok(b.clone()),
            None => {
                let h = self.meta.footer.top_index;
                self.block(BlockKind::TopIndex, BlockRef::classic(h), h.offset)
            }
        }
    }

    /// The whole filter (versions 1 and 2) or the top-level filter index
    /// (version 3).
    fn filter(&self) -> Result<Option<Arc<CachedBlock>>> {
        let kind = self.index.filter_kind();
        match (&self.pinned_filter, self.meta.footer.filter) {
            (Some(b), _) => Ok(Some(b.clone())),
            (None, Some(h)) => self.block(kind, BlockRef::classic(h), h.offset).map(Some),
            (None, None) => Ok(None),
        }
    }

    /// Looks up the newest entry of `user_key` with sequence number `<= seq`.
    ///
    /// With `consult_filter` and a filter, probes it first and returns
    /// `FilteredOut` on a negative answer without touching any other block.
    /// `Found(Delete, _)` is a tombstone (the value is empty). `Absent`: no visible
    /// entry for the key in this table.
    pub(crate) fn get(&self, user_key: &[u8], seq: u64, consult_filter: bool) -> Result<TableGet> {
        // The table's own range deletions, decoded at open: no block read.
        let deleted_at = self.range_dels.covering_seq(user_key, seq);
        if deleted_at.is_some()
            && (self.meta.props.num_entries == 0
                || deleted_at == Some(self.meta.props.largest_seqno))
        {
            // No entry of the table is newer (sequence numbers are unique):
            // deleted, without reading a block.
            return Ok(TableGet::Found(
                ValueKind::Delete,
                PinnedValue::owned(Vec::new()),
            ));
        }
        let got = if consult_filter && self.filtered_out(user_key)? {
            TableGet::FilteredOut
        } else {
            match &self.index {
                IndexReader::Classic(c) => c.get(self, user_key, seq, deleted_at)?,
                IndexReader::Paged(p) => p.get(self, user_key, seq, deleted_at)?,
            }
        };
        Ok(match (deleted_at, got) {
            // Older tables hold only versions older than the range deletion.
            (Some(_), TableGet::FilteredOut | TableGet::Absent) => {
                TableGet::Found(ValueKind::Delete, PinnedValue::owned(Vec::new()))
            }
            (_, got) => got,
        })
    }

    /// What a Get returns for the first entry at or after its seek key, where
    /// `cur` stands in the data block at `offset`: the entry if it is of
    /// `user_key`, else `Absent`.
    fn entry_found(
        &self,
        cur: &Cursor,
        data: &Arc<CachedBlock>,
        user_key: &[u8],
        offset: u64,
        deleted_at: Option<u64>,
    ) -> Result<TableGet> {
        let (found_user, found_trailer) = split_target(cur.key());
        if found_user != user_key {
            return Ok(TableGet::Absent);
        }
        if deleted_at.is_some_and(|t| t > found_trailer >> 8) {
            return Ok(TableGet::Found(
                ValueKind::Delete,
                PinnedValue::owned(Vec::new()),
            ));
        }
        let kind = ValueKind::from_u8(found_trailer as u8)
            .filter(|&k| k != ValueKind::RangeDelete)
            .ok_or_else(|| self.corrupt(offset)(Corrupt("unknown value kind")))?;
        // The value stays in its block: a slice of it, no copy.
        let value = cur
            .value_range()
            .and_then(|range| PinnedValue::in_block(data.clone(), range))
            .ok_or_else(|| {
                Error::Internal(format!(
                    "{}: a valid cursor's value lies outside its block at offset {offset}",
                    self.path.display()
                ))
            })?;
        Ok(TableGet::Found(kind, value))
    }

    /// True if the table's filter excludes `user_key` (false without a
    /// filter), counted as a filter probe. Versions 1 and 2 ask the whole
    /// filter; version 3 the one partition the top-level filter index names
    /// (a key past the last partition is excluded without one).
    fn filtered_out(&self, user_key: &[u8]) -> Result<bool> {
        let Some(f) = self.filter()? else {
            return Ok(false);
        };
        let f_off = self.meta.footer.filter.map_or(0, |h| h.offset);
        let may = match &self.index {
            IndexReader::Classic(c) => c.filter_may_contain(self, &f, f_off, user_key)?,
            IndexReader::Paged(p) => p.filter_may_contain(self, &f, f_off, user_key)?,
        };
        self.ctx.stats.filter_probe(may);
        Ok(!may)
    }

    /// An iterator over every entry of the table, in internal-key order. Blocks are
    /// loaded through the block cache and counted like `get`'s.
    pub(crate) fn iter(self: &Arc<Self>) -> Box<dyn InternalIterator> {
        self.new_iter(false)
    }

    /// An iterator for a compaction: it reads blocks without filling the block
    /// cache or counting them as Get reads (compactions account their input
    /// bytes per table).
    pub(crate) fn scan(self: &Arc<Self>) -> Box<dyn InternalIterator> {
        self.new_iter(true)
    }

    /// A compaction's scan whose data blocks are read `readahead` bytes at a
    /// time through `file`, the table opened again for the scan (see
    /// [`ReadAhead`]); index blocks are read as [`TableReader::scan`] does.
    pub(crate) fn scan_ahead(
        self: &Arc<Self>,
        file: Arc<dyn RandomAccessFile>,
        readahead: u64,
    ) -> Box<dyn InternalIterator> {
        let ahead = ReadAhead {
            file,
            size: readahead,
            start: 0,
            buf: Vec::new(),
        };
        Box::new(TableIter::new(self.clone(), true, Some(ahead)))
    }

    fn new_iter(self: &Arc<Self>, scan: bool) -> Box<dyn InternalIterator> {
        Box::new(TableIter::new(self.clone(), scan, None))
    }
}

impl Drop for TableReader {
    fn drop(&mut self) {
        if self.pinned_bytes > 0 {
            self.ctx.cache.release_pinned(self.pinned_bytes);
            self.ctx.tracer.pinned(self.pinned_bytes, false);
        }
        if let Some(h) = self.held.as_deref() {
            for kind in MetadataKind::ALL {
                let bytes = h.bytes[kind.index()].load(Ordering::Relaxed);
                if bytes > 0 {
                    self.ctx.stats.metadata_held_sub(kind, bytes);
                }
            }
        }
    }
}
