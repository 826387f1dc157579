//! Reading a table: open (footer, properties, optional pinned metadata) and
//! point lookups here; batched lookups in `batch`, the two-level iterator in
//! `iter`, layout inspection in `inspect`.
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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;

mod batch;
mod inspect;
mod iter;
pub(crate) use batch::{BatchScope, Planned};
pub(crate) use inspect::check_metadata;
pub use inspect::inspect_table;
use iter::TableIter;

use shale_env::RandomAccessFile;

use super::block::{
    cmp_internal_to, split_target, Block, Corrupt, Cursor, EntryFormat, BLOCK_TRAILER_LEN,
    PAGE_SIZE,
};
use super::filter::Filter;
use super::layout::{decode_properties, unwrap_block, BlockHandle, Footer, FOOTER_LEN};
use super::paged::{unwrap_paged, KeyArray, Locator};
use super::{CachedBlock, ReadContext, TableGet, TableProperties};
use crate::cache::Priority;
use crate::error::{Error, Result};
use crate::format::{
    compare_bytes, pack_trailer, ValueKind, MAX_SEQNO, MIN_TABLE_FORMAT_VERSION,
    RANGE_DEL_TABLE_FORMAT_VERSION, TABLE_FORMAT_VERSION,
};
use crate::iter::InternalIterator;
use crate::metrics::{BlockKind, MetadataKind, Stats};
use crate::pinned::PinnedValue;
use crate::rangedel::Fragments;

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
    /// The grammar of the table's index partitions.
    fn partition_format(&self) -> EntryFormat {
        if self.props.format_version >= 2 {
            EntryFormat::PagedIndex
        } else {
            EntryFormat::Index
        }
    }

    /// True if data blocks start on page boundaries (versions 2 and 3).
    fn aligned(&self) -> bool {
        self.props.format_version >= 2
    }

    /// True for version 3: paged data blocks, filter partitions, locators
    /// and key-array top-level indexes.
    fn paged(&self) -> bool {
        self.props.format_version >= 3
    }

    /// True if blocks of `kind` are paged blocks in this table.
    fn is_paged(&self, kind: BlockKind) -> bool {
        self.paged()
            && matches!(
                kind,
                BlockKind::Data | BlockKind::Filter | BlockKind::IndexPartition
            )
    }

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

/// Where a block lies: a classic block (contents of `len` bytes, then the
/// 5-byte trailer) or a version-3 paged block of `len` stored bytes.
#[derive(Clone, Copy, Debug)]
struct BlockRef {
    offset: u64,
    len: u64,
    paged: bool,
}

impl BlockRef {
    fn classic(h: BlockHandle) -> BlockRef {
        BlockRef {
            offset: h.offset,
            len: h.size,
            paged: false,
        }
    }

    fn paged(offset: u64, len: u64) -> BlockRef {
        BlockRef {
            offset,
            len,
            paged: true,
        }
    }

    /// Bytes read: the stored block with its trailer.
    fn read_len(&self) -> u64 {
        if self.paged {
            self.len
        } else {
            self.len.saturating_add(super::block::BLOCK_TRAILER_LEN)
        }
    }

    fn end(&self) -> u64 {
        self.offset.saturating_add(self.read_len())
    }
}

fn read_block_contents(
    file: &dyn RandomAccessFile,
    path: &Path,
    handle: BlockHandle,
    kind: BlockKind,
    stats: Option<&Stats>,
    verify: bool,
) -> Result<Vec<u8>> {
    read_ref(file, path, BlockRef::classic(handle), kind, stats, verify)
}

fn read_ref(
    file: &dyn RandomAccessFile,
    path: &Path,
    r: BlockRef,
    kind: BlockKind,
    stats: Option<&Stats>,
    verify: bool,
) -> Result<Vec<u8>> {
    let len = usize::try_from(r.read_len())
        .map_err(|_| Error::corruption(path, r.offset, "block too large for memory"))?;
    let res = file.read_vec_at(r.offset, len);
    if let Some(s) = stats {
        s.physical_read(kind, len as u64);
    }
    let buf = res.map_err(|e| Error::io("read table block", path, e))?;
    unwrap_ref(path, r, buf, verify)
}

/// The contents of the block `r` read into `buf` (trailer or page checks).
fn unwrap_ref(path: &Path, r: BlockRef, buf: Vec<u8>, verify: bool) -> Result<Vec<u8>> {
    let contents = if r.paged {
        unwrap_paged(buf, verify)
    } else {
        unwrap_block(buf, verify)
    };
    contents.map_err(|c| Error::corruption(path, r.offset, c.0))
}

/// A compaction's read-ahead over a table's data blocks: one large read from
/// a handle of its own ([`FileSystem::open_scan`](shale_env::FileSystem::open_scan))
/// covers the blocks ahead, which are then served from memory, so that a
/// compaction issues a few large reads per table rather than one per block.
struct ReadAhead {
    file: Arc<dyn RandomAccessFile>,
    /// Bytes per read (a block larger than this is read alone).
    size: u64,
    /// File offset of `buf[0]`.
    start: u64,
    buf: Vec<u8>,
}

impl ReadAhead {
    /// The stored bytes of block `r` (whose end is at most `data_end`),
    /// reading the window from `r` on when `r` is not in the current one.
    fn block(&mut self, r: BlockRef, data_end: u64, path: &Path) -> Result<Vec<u8>> {
        let end = r.end();
        let held = self.start + self.buf.len() as u64;
        if r.offset < self.start || end > held {
            let stop = end.max(r.offset.saturating_add(self.size).min(data_end));
            let len = usize::try_from(stop - r.offset)
                .map_err(|_| Error::corruption(path, r.offset, "block too large for memory"))?;
            self.buf.clear();
            self.buf.resize(len, 0);
            self.start = r.offset;
            if let Err(e) = self.file.read_exact_at(r.offset, &mut self.buf) {
                self.buf.clear();
                return Err(Error::io("read table blocks ahead", path, e));
            }
        }
        let from = (r.offset - self.start) as usize;
        let to = (end - self.start) as usize;
        Ok(self.buf[from..to].to_vec())
    }
}

/// Decodes a data block, of a version-3 table if `paged`.
fn decode_data_block(contents: Vec<u8>, paged: bool) -> Result<CachedBlock, Corrupt> {
    let block = Block::new(contents, EntryFormat::Data)?;
    Ok(if paged {
        CachedBlock::PagedData(block)
    } else {
        CachedBlock::Data(block)
    })
}

/// Decodes a block of `kind` of a table described by `meta`.
fn decode_block(kind: BlockKind, contents: Vec<u8>, meta: &Meta) -> Result<CachedBlock, Corrupt> {
    let v3 = meta.paged();
    Ok(match kind {
        BlockKind::Data => return decode_data_block(contents, v3),
        BlockKind::TopIndex if v3 => CachedBlock::Keys(KeyArray::new(contents)?),
        BlockKind::TopIndex => CachedBlock::Index(Block::new(contents, EntryFormat::Index)?),
        BlockKind::IndexPartition if v3 => CachedBlock::Locator(Locator::new(contents)?),
        BlockKind::IndexPartition => {
            CachedBlock::Index(Block::new(contents, meta.partition_format())?)
        }
        BlockKind::Filter if v3 => {
            CachedBlock::PagedFilter(super::filter::PartitionFilter::new(contents)?)
        }
        BlockKind::Filter => CachedBlock::Filter(Filter::new(contents)?),
        BlockKind::Footer | BlockKind::Properties => {
            return Err(Corrupt("footer and properties are not cached blocks"))
        }
    })
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
    // Version 3: the partitions lie somewhere between the data and the
    // top-level blocks; their key arrays place them, and each use is checked.
    let partitions_start = if props.format_version >= 3 {
        meta_start
    } else {
        th.offset
            .checked_sub(props.index_partition_bytes)
            .filter(|&s| footer.filter.is_none_or(|f| f.end() <= s))
            .ok_or_else(|| bad_props("index partition bytes out of range"))?
    };
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
    // Version 3 counts the padding inside the data pages' bytes.
    let data_region = if props.format_version >= 3 {
        Some(props.data_bytes).filter(|b| b.is_multiple_of(PAGE_SIZE))
    } else {
        props.data_bytes.checked_add(props.data_padding_bytes)
    };
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

/// The metadata a reader holds, each block set once by its first use.
struct HeldMeta {
    kinds: HeldKinds,
    top_index: OnceLock<Arc<CachedBlock>>,
    top_filter: OnceLock<Arc<CachedBlock>>,
    /// Version 3: one slot per page of the partition region (from the end of
    /// the data to the top-level blocks), a partition in the slot of its
    /// first page. Empty when no partitions are held.
    pages: Box<[OnceLock<Arc<CachedBlock>>]>,
    /// Versions 1 and 2: index partitions by offset.
    classic: RwLock<HashMap<u64, Arc<CachedBlock>>>,
    /// Bytes held, per [`MetadataKind`] (what the reader gives back to
    /// `Stats::metadata_held` when it closes).
    bytes: [AtomicU64; 4],
}

/// Where a held block lives.
enum HeldSlot<'a> {
    Once(&'a OnceLock<Arc<CachedBlock>>),
    Classic,
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
        let mut reader = TableReader {
            file,
            path,
            file_number,
            ctx,
            meta,
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
            // Version 3 pins only the top-level filter index.
            let kind = if reader.meta.paged() {
                BlockKind::TopIndex
            } else {
                BlockKind::Filter
            };
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
        let pages = if partitions && self.meta.paged() {
            let region = self
                .meta
                .top_levels_start()
                .saturating_sub(self.meta.data_end);
            // Within the file, whose size the properties checked; the last
            // partition may end short of a page.
            usize::try_from(region.div_ceil(PAGE_SIZE)).unwrap_or(0)
        } else {
            0
        };
        self.held = Some(Box::new(HeldMeta {
            kinds,
            top_index: OnceLock::new(),
            top_filter: OnceLock::new(),
            pages: (0..pages).map(|_| OnceLock::new()).collect(),
            classic: RwLock::new(HashMap::new()),
            bytes: Default::default(),
        }));
        self
    }

    /// The held slot of the block `r` of `kind`, if this reader holds it
    /// (`r` already checked by `check_handle`).
    fn held_slot<'a>(
        &self,
        h: &'a HeldMeta,
        kind: BlockKind,
        r: BlockRef,
    ) -> Option<(HeldSlot<'a>, MetadataKind)> {
        let paged = self.meta.paged();
        let footer = &self.meta.footer;
        match kind {
            BlockKind::TopIndex if h.kinds.top_index && r.offset == footer.top_index.offset => {
                Some((HeldSlot::Once(&h.top_index), MetadataKind::TopIndex))
            }
            BlockKind::TopIndex | BlockKind::Filter
                if h.kinds.top_filter
                    && (kind == BlockKind::TopIndex) == paged
                    && footer.filter.is_some_and(|f| f.offset == r.offset) =>
            {
                Some((HeldSlot::Once(&h.top_filter), MetadataKind::TopFilter))
            }
            BlockKind::IndexPartition | BlockKind::Filter if paged => {
                let mk = if kind == BlockKind::Filter {
                    (h.kinds.filter_partitions).then_some(MetadataKind::FilterPartitions)
                } else {
                    (h.kinds.index_partitions).then_some(MetadataKind::IndexPartitions)
                }?;
                let page = r.offset.checked_sub(self.meta.data_end)? / PAGE_SIZE;
                let slot = h.pages.get(usize::try_from(page).ok()?)?;
                Some((HeldSlot::Once(slot), mk))
            }
            BlockKind::IndexPartition if h.kinds.index_partitions => {
                Some((HeldSlot::Classic, MetadataKind::IndexPartitions))
            }
            _ => None,
        }
    }

    /// A held block already loaded, if `r` is one (no read).
    fn held_peek(&self, kind: BlockKind, r: BlockRef) -> Option<Arc<CachedBlock>> {
        let h = self.held.as_deref()?;
        let b = match self.held_slot(h, kind, r)?.0 {
            HeldSlot::Once(slot) => slot.get().cloned(),
            HeldSlot::Classic => h.classic.read().get(&r.offset).cloned(),
        }?;
        b.is_kind(kind).then_some(b)
    }

    /// The held block `r`, read by the first use. `None` if this reader does
    /// not hold it.
    fn held_block(&self, kind: BlockKind, r: BlockRef) -> Option<Result<Arc<CachedBlock>>> {
        let h = self.held.as_deref()?;
        let (slot, mk) = self.held_slot(h, kind, r)?;
        let found = match &slot {
            HeldSlot::Once(slot) => slot.get().cloned(),
            HeldSlot::Classic => h.classic.read().get(&r.offset).cloned(),
        };
        let b = match found {
            Some(b) => b,
            None => {
                // No lock held over the read: two first uses may both read.
                let b = match self.read_uncached(kind, r) {
                    Ok(b) => b,
                    Err(e) => return Some(Err(e)),
                };
                let (kept, won) = match slot {
                    HeldSlot::Once(slot) => {
                        let won = slot.set(b.clone()).is_ok();
                        (slot.get().cloned().unwrap_or(b), won)
                    }
                    HeldSlot::Classic => {
                        let mut map = h.classic.write();
                        let mut won = false;
                        let kept = map
                            .entry(r.offset)
                            .or_insert_with(|| {
                                won = true;
                                b
                            })
                            .clone();
                        (kept, won)
                    }
                };
                if won {
                    // The block as read (contents and trailer or tail): the
                    // buffer it was decoded in, which it keeps.
                    let bytes = r.read_len();
                    h.bytes[mk.index()].fetch_add(bytes, Ordering::Relaxed);
                    self.ctx.stats.metadata_held_add(mk, bytes);
                }
                kept
            }
        };
        if !b.is_kind(kind) {
            return Some(Err(Error::corruption(
                &self.path,
                r.offset,
                "table reader holds a block of another kind at this offset",
            )));
        }
        Some(Ok(b))
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

    fn read_uncached(&self, kind: BlockKind, r: BlockRef) -> Result<Arc<CachedBlock>> {
        let contents = read_ref(
            self.file.as_ref(),
            &self.path,
            r,
            kind,
            Some(&self.ctx.stats),
            self.ctx.verify_checksums,
        )?;
        let block = decode_block(kind, contents, &self.meta)
            .map_err(|c| Error::corruption(&self.path, r.offset, c.0))?;
        Ok(Arc::new(block))
    }

    /// Fetches a block through the cache. `referrer` is the offset of the block
    /// that holds its handle, blamed if the handle is out of place.
    fn block(&self, kind: BlockKind, r: BlockRef, referrer: u64) -> Result<Arc<CachedBlock>> {
        self.check_handle(kind, r, referrer)?;
        if let Some(held) = self.held_block(kind, r) {
            return held;
        }
        let key = (self.file_number, r.offset);
        let stats = &self.ctx.stats;
        if let Some(b) = self.ctx.cache.get(&key) {
            if !batch::resuming() {
                stats.cache_hit(kind);
            }
            if !b.is_kind(kind) {
                return Err(Error::corruption(
                    &self.path,
                    r.offset,
                    "block cache holds a block of another kind at this offset",
                ));
            }
            return Ok(b);
        }
        stats.cache_miss(kind);
        let b = self.read_uncached(kind, r)?;
        let priority = match kind {
            BlockKind::Data => Priority::Low,
            BlockKind::IndexPartition => Priority::Medium,
            _ => Priority::High,
        };
        self.ctx.cache.insert(key, b.clone(), b.charge(), priority);
        Ok(b)
    }

    /// A data block for a Get, through the cache. While a batch plans its
    /// reads on this thread ([`batch`]), a block the cache lacks is not read:
    /// its read is recorded for the batch and the answer is `None`.
    fn data_block(&self, r: BlockRef, referrer: u64) -> Result<Option<Arc<CachedBlock>>> {
        if !batch::planning() {
            return self.block(BlockKind::Data, r, referrer).map(Some);
        }
        self.check_handle(BlockKind::Data, r, referrer)?;
        let key = (self.file_number, r.offset);
        if let Some(b) = batch::fetched(key) {
            // A resumed Get is back where it stopped: what it looks up from
            // here on is new, and counts.
            batch::resumed();
            return b.map(Some);
        }
        if let Some(b) = self.ctx.cache.get(&key) {
            self.ctx.stats.cache_hit(BlockKind::Data);
            if !b.is_kind(BlockKind::Data) {
                return Err(Error::corruption(
                    &self.path,
                    r.offset,
                    "block cache holds a block of another kind at this offset",
                ));
            }
            return Ok(Some(b));
        }
        if batch::defer(key, &self.file, &self.path, r, &self.meta) {
            self.ctx.stats.cache_miss(BlockKind::Data);
        }
        Ok(None)
    }

    /// Fetches a block for a scan that must neither disturb the block cache nor
    /// count as a Get's read (a compaction): a cached copy is used if present,
    /// otherwise the block is read without being cached or counted.
    fn block_for_scan(
        &self,
        kind: BlockKind,
        r: BlockRef,
        referrer: u64,
    ) -> Result<Arc<CachedBlock>> {
        self.check_handle(kind, r, referrer)?;
        if let Some(b) = self.held_peek(kind, r) {
            return Ok(b);
        }
        if let Some(b) = self.ctx.cache.get(&(self.file_number, r.offset)) {
            if b.is_kind(kind) {
                return Ok(b);
            }
        }
        let contents = read_ref(
            self.file.as_ref(),
            &self.path,
            r,
            kind,
            None,
            self.ctx.verify_checksums,
        )?;
        let block = decode_block(kind, contents, &self.meta)
            .map_err(|c| Error::corruption(&self.path, r.offset, c.0))?;
        Ok(Arc::new(block))
    }

    /// Checks that `r` lies in the region of the file where blocks of `kind`
    /// live, and is a paged block exactly where the format wants one;
    /// `referrer` is blamed otherwise.
    fn check_handle(&self, kind: BlockKind, r: BlockRef, referrer: u64) -> Result<()> {
        let paged = self.meta.is_paged(kind);
        let (lo, hi) = match kind {
            BlockKind::Data => (0, self.meta.data_end),
            BlockKind::IndexPartition | BlockKind::Filter if paged => {
                (self.meta.data_end, self.meta.top_levels_start())
            }
            BlockKind::IndexPartition => (
                self.meta.partitions_start,
                self.meta.footer.top_index.offset,
            ),
            _ => (0, self.meta.footer.properties.offset),
        };
        let misaligned = ((kind == BlockKind::Data && self.meta.aligned()) || paged)
            && !r.offset.is_multiple_of(PAGE_SIZE);
        if r.offset < lo || r.end() > hi || misaligned || r.paged != paged {
            return Err(Error::corruption(
                &self.path,
                referrer,
                format!(
                    "{} block handle {}+{} out of place",
                    kind.name(),
                    r.offset,
                    r.len
                ),
            ));
        }
        Ok(())
    }

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
        let kind = if self.meta.paged() {
            BlockKind::TopIndex
        } else {
            BlockKind::Filter
        };
        match (&self.pinned_filter, self.meta.footer.filter) {
            (Some(b), _) => Ok(Some(b.clone())),
            (None, Some(h)) => self.block(kind, BlockRef::classic(h), h.offset).map(Some),
            (None, None) => Ok(None),
        }
    }

    fn corrupt(&self, offset: u64) -> impl Fn(Corrupt) -> Error + '_ {
        move |c| Error::corruption(&self.path, offset, c.0)
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
        } else if self.meta.paged() {
            self.get_paged(user_key, seq, deleted_at)?
        } else {
            self.get_classic(user_key, seq, deleted_at)?
        };
        Ok(match (deleted_at, got) {
            // Older tables hold only versions older than the range deletion.
            (Some(_), TableGet::FilteredOut | TableGet::Absent) => {
                TableGet::Found(ValueKind::Delete, PinnedValue::owned(Vec::new()))
            }
            (_, got) => got,
        })
    }

    fn get_classic(&self, user_key: &[u8], seq: u64, deleted_at: Option<u64>) -> Result<TableGet> {
        let trailer = pack_trailer(seq.min(MAX_SEQNO), ValueKind::SEEK);
        let top_off = self.meta.footer.top_index.offset;
        let top = self.top_index()?;
        let top_block = top
            .as_block()
            .ok_or_else(|| self.corrupt(top_off)(Corrupt("not an index")))?;
        let mut top_cur = Cursor::default();
        top_cur
            .seek_by(top_block, |k| compare_bytes(k, user_key))
            .map_err(self.corrupt(top_off))?;
        if !top_cur.valid() {
            return Ok(TableGet::Absent);
        }
        let (mut part_off, size) = top_cur.handle();
        let mut part = self.block(
            BlockKind::IndexPartition,
            BlockRef::classic(BlockHandle {
                offset: part_off,
                size,
            }),
            top_off,
        )?;
        let mut part_cur = Cursor::default();
        let mut part_block = part
            .as_block()
            .ok_or_else(|| self.corrupt(part_off)(Corrupt("not an index")))?;
        part_cur
            .seek_by(part_block, |k| compare_bytes(k, user_key))
            .map_err(self.corrupt(part_off))?;
        if !part_cur.valid() {
            return Err(self.corrupt(part_off)(Corrupt(
                "index partition ends before its top-level separator",
            )));
        }
        loop {
            let (offset, size) = part_cur.handle();
            let data_ref = BlockRef::classic(BlockHandle { offset, size });
            let Some(data) = self.data_block(data_ref, part_off)? else {
                return Ok(TableGet::Deferred);
            };
            let block = data
                .as_block()
                .ok_or_else(|| self.corrupt(offset)(Corrupt("not data")))?;
            let mut cur = Cursor::default();
            cur.seek_by(block, |k| cmp_internal_to(k, user_key, trailer))
                .map_err(self.corrupt(offset))?;
            if cur.valid() {
                return self.entry_found(&cur, &data, user_key, offset, deleted_at);
            }
            // Every entry of this block sorts before the seek key. The next block
            // can only hold the key if this block's separator is the key itself.
            if part_cur.key() != user_key {
                return Ok(TableGet::Absent);
            }
            part_cur.next(part_block).map_err(self.corrupt(part_off))?;
            if !part_cur.valid() {
                top_cur.next(top_block).map_err(self.corrupt(top_off))?;
                if !top_cur.valid() {
                    return Ok(TableGet::Absent);
                }
                let (off, size) = top_cur.handle();
                part_off = off;
                part = self.block(
                    BlockKind::IndexPartition,
                    BlockRef::classic(BlockHandle { offset: off, size }),
                    top_off,
                )?;
                part_block = part
                    .as_block()
                    .ok_or_else(|| self.corrupt(part_off)(Corrupt("not an index")))?;
                part_cur
                    .seek_to_first(part_block)
                    .map_err(self.corrupt(part_off))?;
                if !part_cur.valid() {
                    return Err(self.corrupt(part_off)(Corrupt("empty index partition")));
                }
            }
        }
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
        let may = match f.as_keys() {
            Some(keys) => {
                let p = keys.lower_bound(user_key);
                if p < keys.len() {
                    let r = BlockRef::paged(keys.offset(p), keys.value(p));
                    let part = self.block(BlockKind::Filter, r, f_off)?;
                    part.filter_may_contain(user_key)
                        .ok_or_else(|| self.corrupt(r.offset)(Corrupt("not a filter")))?
                } else {
                    false
                }
            }
            None => f
                .filter_may_contain(user_key)
                .ok_or_else(|| self.corrupt(f_off)(Corrupt("not a filter")))?,
        };
        self.ctx.stats.filter_probe(may);
        Ok(!may)
    }

    /// The version-3 `get` after the filter: locator through the top-level
    /// index, then one data block (more only where the key's versions
    /// continue into the next block).
    fn get_paged(&self, user_key: &[u8], seq: u64, deleted_at: Option<u64>) -> Result<TableGet> {
        let trailer = pack_trailer(seq.min(MAX_SEQNO), ValueKind::SEEK);
        let top_off = self.meta.footer.top_index.offset;
        let top = self.top_index()?;
        let keys = top
            .as_keys()
            .ok_or_else(|| self.corrupt(top_off)(Corrupt("not a key array")))?;
        let mut p = keys.lower_bound(user_key);
        let mut first_partition = true;
        while p < keys.len() {
            let r = BlockRef::paged(keys.offset(p), keys.value(p));
            let part = self.block(BlockKind::IndexPartition, r, top_off)?;
            let loc = part
                .as_locator()
                .ok_or_else(|| self.corrupt(r.offset)(Corrupt("not a locator")))?;
            let mut g = if first_partition {
                loc.find(user_key)
            } else {
                0
            };
            first_partition = false;
            loop {
                let (page, pages) = loc.pages(g);
                let data_ref = page
                    .checked_mul(PAGE_SIZE)
                    .zip(pages.checked_mul(PAGE_SIZE))
                    .map(|(off, len)| BlockRef::paged(off, len))
                    .ok_or_else(|| self.corrupt(r.offset)(Corrupt("data page out of range")))?;
                let Some(data) = self.data_block(data_ref, r.offset)? else {
                    return Ok(TableGet::Deferred);
                };
                let block = data
                    .as_block()
                    .ok_or_else(|| self.corrupt(data_ref.offset)(Corrupt("not data")))?;
                let mut cur = Cursor::default();
                // Checked once per cached block: only this locator refers to
                // it, always as block `g`.
                if g > 0 && !block.verified() {
                    cur.seek_to_first(block)
                        .map_err(self.corrupt(data_ref.offset))?;
                    let (first_user, _) = split_target(cur.key());
                    if !cur.valid() || !loc.agrees_with_first(g, first_user) {
                        return Err(self.corrupt(r.offset)(Corrupt(
                            "locator disagrees with the first key of its data block",
                        )));
                    }
                    block.set_verified();
                }
                cur.seek_by(block, |k| cmp_internal_to(k, user_key, trailer))
                    .map_err(self.corrupt(data_ref.offset))?;
                if cur.valid() {
                    return self.entry_found(&cur, &data, user_key, data_ref.offset, deleted_at);
                }
                // Every entry of this block sorts before the seek key.
                if loc.continues(g + 1, user_key) {
                    g += 1;
                } else if g + 1 < loc.len() {
                    return Ok(TableGet::Absent);
                } else {
                    break;
                }
            }
            // The partition ended: the key's versions continue in the next one
            // only if this partition's separator is the key itself.
            if !keys.key_eq(p, user_key) {
                return Ok(TableGet::Absent);
            }
            p += 1;
        }
        Ok(TableGet::Absent)
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
