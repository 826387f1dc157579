//! Reading a table: open (footer, properties, optional pinned metadata), point
//! lookups, a two-level iterator and layout inspection.
//!
//! # Accounting
//!
//! Every read is counted in [`Stats`], per [`BlockKind`]:
//!
//! - `open` issues exactly one physical read for the footer (`Footer`) and one for
//!   the properties block (`Properties`); with `pin_top_index` / `pin_filter` one
//!   more physical read of that kind each. None of these are cache lookups. Pinned
//!   bytes are charged with `BlockCache::reserve_pinned` and released on drop.
//!   Later uses of a pinned block count nothing: the reader holds it.
//! - Every other block access is a block-cache lookup keyed by
//!   `(file_number, block_offset)`: a hit counts `cache_hit(kind)`; a miss counts
//!   `cache_miss(kind)`, then exactly one `read_exact_at` of contents + trailer
//!   (`physical_read(kind, bytes)`), then inserts the decoded block.
//! - A `get` touches, in order: the filter (if asked and present; a negative answer
//!   stops here), the top-level index, one index partition, one data block. Only when
//!   one user key's versions straddle a data-block boundary may it read the next
//!   data block(s), and the next partition.
//!
//! # Concurrency
//!
//! A `TableReader` is immutable after `open` and is shared by `Arc` between
//! threads; the cache and stats synchronize themselves. Iterators are owned by one
//! thread at a time.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale_env::RandomAccessFile;

use super::block::{cmp_internal_to, split_target, Block, Corrupt, Cursor, EntryFormat, PAGE_SIZE};
use super::filter::Filter;
use super::layout::{decode_properties, unwrap_block, BlockHandle, Footer, FOOTER_LEN};
use super::{BlockInfo, CachedBlock, ReadContext, TableGet, TableLayout, TableProperties};
use crate::cache::Priority;
use crate::error::{Error, Result};
use crate::format::{
    pack_trailer, ValueKind, MAX_SEQNO, MIN_TABLE_FORMAT_VERSION, TABLE_FORMAT_VERSION,
};
use crate::iter::InternalIterator;
use crate::metrics::{BlockKind, Stats};

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

    /// True if data blocks start on page boundaries (version 2).
    fn aligned(&self) -> bool {
        self.props.format_version >= 2
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
    let len = handle.size.saturating_add(super::block::BLOCK_TRAILER_LEN);
    let len = usize::try_from(len)
        .map_err(|_| Error::corruption(path, handle.offset, "block too large for memory"))?;
    let mut buf = vec![0u8; len];
    let res = file.read_exact_at(handle.offset, &mut buf);
    if let Some(s) = stats {
        s.physical_read(kind, len as u64);
    }
    res.map_err(|e| Error::io("read table block", path, e))?;
    unwrap_block(buf, verify).map_err(|c| Error::corruption(path, handle.offset, c.0))
}

/// Decodes a block of `kind`; `partitions` is the grammar of the table's index
/// partitions.
fn decode_block(
    kind: BlockKind,
    contents: Vec<u8>,
    partitions: EntryFormat,
) -> Result<CachedBlock, Corrupt> {
    Ok(match kind {
        BlockKind::Data => CachedBlock::Data(Block::new(contents, EntryFormat::Data)?),
        BlockKind::TopIndex => CachedBlock::Index(Block::new(contents, EntryFormat::Index)?),
        BlockKind::IndexPartition => CachedBlock::Index(Block::new(contents, partitions)?),
        BlockKind::Filter => CachedBlock::Filter(Filter::new(contents)?),
        BlockKind::Footer | BlockKind::Properties => {
            return Err(Corrupt("footer and properties are not cached blocks"))
        }
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
    let partitions_start = th
        .offset
        .checked_sub(props.index_partition_bytes)
        .filter(|&s| footer.filter.is_none_or(|f| f.end() <= s))
        .ok_or_else(|| bad_props("index partition bytes out of range"))?;
    if props.format_version < 2 && props.data_padding_bytes != 0 {
        return Err(bad_props(
            "padding between data blocks in a version-1 table",
        ));
    }
    let data_end = props
        .data_bytes
        .checked_add(props.data_padding_bytes)
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
        };
        if pin_top_index {
            let b = reader.read_uncached(BlockKind::TopIndex, reader.meta.footer.top_index)?;
            reader.pin(b.charge());
            reader.pinned_top = Some(b);
        }
        if let (true, Some(fh)) = (pin_filter, reader.meta.footer.filter) {
            let b = reader.read_uncached(BlockKind::Filter, fh)?;
            reader.pin(b.charge());
            reader.pinned_filter = Some(b);
        }
        Ok(reader)
    }

    fn pin(&mut self, bytes: u64) {
        self.ctx.cache.reserve_pinned(bytes);
        self.pinned_bytes += bytes;
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

    fn read_uncached(&self, kind: BlockKind, handle: BlockHandle) -> Result<Arc<CachedBlock>> {
        let contents = read_block_contents(
            self.file.as_ref(),
            &self.path,
            handle,
            kind,
            Some(&self.ctx.stats),
            self.ctx.verify_checksums,
        )?;
        let block = decode_block(kind, contents, self.meta.partition_format())
            .map_err(|c| Error::corruption(&self.path, handle.offset, c.0))?;
        Ok(Arc::new(block))
    }

    /// Fetches a block through the cache. `referrer` is the offset of the block
    /// that holds `handle`, blamed if the handle is out of place.
    fn block(
        &self,
        kind: BlockKind,
        handle: BlockHandle,
        referrer: u64,
    ) -> Result<Arc<CachedBlock>> {
        self.check_handle(kind, handle, referrer)?;
        let key = (self.file_number, handle.offset);
        let stats = &self.ctx.stats;
        if let Some(b) = self.ctx.cache.get(&key) {
            stats.cache_hit(kind);
            if !b.is_kind(kind) {
                return Err(Error::corruption(
                    &self.path,
                    handle.offset,
                    "block cache holds a block of another kind at this offset",
                ));
            }
            return Ok(b);
        }
        stats.cache_miss(kind);
        let b = self.read_uncached(kind, handle)?;
        let priority = match kind {
            BlockKind::Data => Priority::Low,
            BlockKind::IndexPartition => Priority::Medium,
            _ => Priority::High,
        };
        self.ctx.cache.insert(key, b.clone(), b.charge(), priority);
        Ok(b)
    }

    /// Fetches a block for a scan that must neither disturb the block cache nor
    /// count as a Get's read (a compaction): a cached copy is used if present,
    /// otherwise the block is read without being cached or counted.
    fn block_for_scan(
        &self,
        kind: BlockKind,
        handle: BlockHandle,
        referrer: u64,
    ) -> Result<Arc<CachedBlock>> {
        self.check_handle(kind, handle, referrer)?;
        if let Some(b) = self.ctx.cache.get(&(self.file_number, handle.offset)) {
            if b.is_kind(kind) {
                return Ok(b);
            }
        }
        let contents = read_block_contents(
            self.file.as_ref(),
            &self.path,
            handle,
            kind,
            None,
            self.ctx.verify_checksums,
        )?;
        let block = decode_block(kind, contents, self.meta.partition_format())
            .map_err(|c| Error::corruption(&self.path, handle.offset, c.0))?;
        Ok(Arc::new(block))
    }

    /// Checks that `handle` lies in the region of the file where blocks of
    /// `kind` live; `referrer` is blamed otherwise.
    fn check_handle(&self, kind: BlockKind, handle: BlockHandle, referrer: u64) -> Result<()> {
        let (lo, hi) = match kind {
            BlockKind::Data => (0, self.meta.data_end),
            BlockKind::IndexPartition => (
                self.meta.partitions_start,
                self.meta.footer.top_index.offset,
            ),
            _ => (0, self.meta.footer.properties.offset),
        };
        let misaligned = kind == BlockKind::Data
            && self.meta.aligned()
            && !handle.offset.is_multiple_of(PAGE_SIZE);
        if handle.offset < lo || handle.end() > hi || misaligned {
            return Err(Error::corruption(
                &self.path,
                referrer,
                format!(
                    "{} block handle {}+{} out of place",
                    kind.name(),
                    handle.offset,
                    handle.size
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
                self.block(BlockKind::TopIndex, h, h.offset)
            }
        }
    }

    fn filter(&self) -> Result<Option<Arc<CachedBlock>>> {
        match (&self.pinned_filter, self.meta.footer.filter) {
            (Some(b), _) => Ok(Some(b.clone())),
            (None, Some(h)) => self.block(BlockKind::Filter, h, h.offset).map(Some),
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
        if consult_filter {
            if let Some(f) = self.filter()? {
                let may = match f.as_ref() {
                    CachedBlock::Filter(f) => f.may_contain(user_key),
                    _ => true,
                };
                self.ctx.stats.filter_probe(may);
                if !may {
                    return Ok(TableGet::FilteredOut);
                }
            }
        }
        let trailer = pack_trailer(seq.min(MAX_SEQNO), ValueKind::SEEK);
        let top_off = self.meta.footer.top_index.offset;
        let top = self.top_index()?;
        let top_block = top
            .as_block()
            .ok_or_else(|| self.corrupt(top_off)(Corrupt("not an index")))?;
        let mut top_cur = Cursor::default();
        top_cur
            .seek_by(top_block, |k| k.cmp(user_key))
            .map_err(self.corrupt(top_off))?;
        if !top_cur.valid() {
            return Ok(TableGet::Absent);
        }
        let (mut part_off, size) = top_cur.handle();
        let mut part = self.block(
            BlockKind::IndexPartition,
            BlockHandle {
                offset: part_off,
                size,
            },
            top_off,
        )?;
        let mut part_cur = Cursor::default();
        let mut part_block = part
            .as_block()
            .ok_or_else(|| self.corrupt(part_off)(Corrupt("not an index")))?;
        part_cur
            .seek_by(part_block, |k| k.cmp(user_key))
            .map_err(self.corrupt(part_off))?;
        if !part_cur.valid() {
            return Err(self.corrupt(part_off)(Corrupt(
                "index partition ends before its top-level separator",
            )));
        }
        loop {
            let (offset, size) = part_cur.handle();
            let data = self.block(BlockKind::Data, BlockHandle { offset, size }, part_off)?;
            let block = data
                .as_block()
                .ok_or_else(|| self.corrupt(offset)(Corrupt("not data")))?;
            let mut cur = Cursor::default();
            cur.seek_by(block, |k| cmp_internal_to(k, user_key, trailer))
                .map_err(self.corrupt(offset))?;
            if cur.valid() {
                let (found_user, found_trailer) = split_target(cur.key());
                if found_user != user_key {
                    return Ok(TableGet::Absent);
                }
                let kind = ValueKind::from_u8(found_trailer as u8)
                    .ok_or_else(|| self.corrupt(offset)(Corrupt("unknown value kind")))?;
                let value = cur.value(block).ok_or_else(|| {
                    Error::Internal(format!(
                        "{}: a valid cursor's value lies outside its block at offset {offset}",
                        self.path.display()
                    ))
                })?;
                return Ok(TableGet::Found(kind, value.to_vec()));
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
                    BlockHandle { offset: off, size },
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

    fn new_iter(self: &Arc<Self>, scan: bool) -> Box<dyn InternalIterator> {
        Box::new(TableIter {
            table: self.clone(),
            scan,
            top: None,
            top_cur: Cursor::default(),
            part: None,
            part_cur: Cursor::default(),
            data: None,
            data_cur: Cursor::default(),
            err: None,
        })
    }
}

impl Drop for TableReader {
    fn drop(&mut self) {
        if self.pinned_bytes > 0 {
            self.ctx.cache.release_pinned(self.pinned_bytes);
        }
    }
}

/// Iterator over a table: top-level index → index partition → data block.
struct TableIter {
    table: Arc<TableReader>,
    /// A compaction's scan (see [`TableReader::scan`]).
    scan: bool,
    top: Option<Arc<CachedBlock>>,
    top_cur: Cursor,
    part: Option<(u64, Arc<CachedBlock>)>,
    part_cur: Cursor,
    data: Option<(u64, Arc<CachedBlock>)>,
    data_cur: Cursor,
    err: Option<Error>,
}

/// The block behind an optional `(offset, block)` pair, or a corruption error.
fn held<'a>(
    table: &TableReader,
    slot: &'a Option<(u64, Arc<CachedBlock>)>,
) -> Result<(u64, &'a Block)> {
    match slot {
        Some((off, b)) => b
            .as_block()
            .map(|b| (*off, b))
            .ok_or_else(|| Error::corruption(&table.path, *off, "expected an index or data block")),
        None => Err(Error::corruption(&table.path, 0, "iterator lost its block")),
    }
}

fn as_index<'a>(table: &TableReader, off: u64, b: &'a CachedBlock) -> Result<&'a Block> {
    b.as_block()
        .ok_or_else(|| Error::corruption(&table.path, off, "expected an index block"))
}

impl TableIter {
    /// The top-level index (loaded once per iterator) and its offset.
    fn top_block(&mut self) -> Result<(u64, Arc<CachedBlock>)> {
        let off = self.table.meta.footer.top_index.offset;
        if let Some(t) = &self.top {
            return Ok((off, t.clone()));
        }
        let t = match (&self.table.pinned_top, self.scan) {
            (None, true) => {
                let h = self.table.meta.footer.top_index;
                self.table
                    .block_for_scan(BlockKind::TopIndex, h, h.offset)?
            }
            _ => self.table.top_index()?,
        };
        if t.as_block().is_none() {
            return Err(Error::corruption(
                &self.table.path,
                off,
                "top-level index is not an index",
            ));
        }
        self.top = Some(t.clone());
        Ok((off, t))
    }

    fn index_valid(&self) -> bool {
        self.top_cur.valid() && self.part_cur.valid()
    }

    /// Loads the partition the top-level cursor points at.
    fn load_part(&mut self) -> Result<()> {
        let (offset, size) = self.top_cur.handle();
        if self.part.as_ref().map(|p| p.0) != Some(offset) {
            let referrer = self.table.meta.footer.top_index.offset;
            let handle = BlockHandle { offset, size };
            let b = if self.scan {
                self.table
                    .block_for_scan(BlockKind::IndexPartition, handle, referrer)?
            } else {
                self.table
                    .block(BlockKind::IndexPartition, handle, referrer)?
            };
            self.part = Some((offset, b));
        }
        Ok(())
    }

    /// Loads the data block the partition cursor points at.
    fn load_data(&mut self) -> Result<()> {
        let (offset, size) = self.part_cur.handle();
        if self.data.as_ref().map(|d| d.0) != Some(offset) {
            let referrer = self.part.as_ref().map_or(0, |p| p.0);
            let handle = BlockHandle { offset, size };
            let b = if self.scan {
                self.table
                    .block_for_scan(BlockKind::Data, handle, referrer)?
            } else {
                self.table.block(BlockKind::Data, handle, referrer)?
            };
            self.data = Some((offset, b));
        }
        Ok(())
    }

    /// Moves the top-level cursor forward or backward until the partition cursor
    /// is on an entry (first or last of its partition) or the index is exhausted.
    fn skip_partitions(&mut self, forward: bool) -> Result<()> {
        let table = self.table.clone();
        while !self.part_cur.valid() && self.top_cur.valid() {
            let (top_off, top_arc) = self.top_block()?;
            let top = as_index(&table, top_off, &top_arc)?;
            let r = if forward {
                self.top_cur.next(top)
            } else {
                self.top_cur.prev(top)
            };
            r.map_err(table.corrupt(top_off))?;
            if !self.top_cur.valid() {
                self.part_cur.invalidate();
                break;
            }
            self.load_part()?;
            let (off, part) = held(&table, &self.part)?;
            let r = if forward {
                self.part_cur.seek_to_first(part)
            } else {
                self.part_cur.seek_to_last(part)
            };
            r.map_err(table.corrupt(off))?;
        }
        Ok(())
    }

    fn index_step(&mut self, forward: bool) -> Result<()> {
        let table = self.table.clone();
        let (off, part) = held(&table, &self.part)?;
        let r = if forward {
            self.part_cur.next(part)
        } else {
            self.part_cur.prev(part)
        };
        r.map_err(table.corrupt(off))?;
        self.skip_partitions(forward)
    }

    fn index_edge(&mut self, first: bool) -> Result<()> {
        let table = self.table.clone();
        let (top_off, top_arc) = self.top_block()?;
        let top = as_index(&table, top_off, &top_arc)?;
        let r = if first {
            self.top_cur.seek_to_first(top)
        } else {
            self.top_cur.seek_to_last(top)
        };
        r.map_err(table.corrupt(top_off))?;
        self.part_cur.invalidate();
        if !self.top_cur.valid() {
            return Ok(());
        }
        self.load_part()?;
        let (off, part) = held(&table, &self.part)?;
        let r = if first {
            self.part_cur.seek_to_first(part)
        } else {
            self.part_cur.seek_to_last(part)
        };
        r.map_err(table.corrupt(off))?;
        self.skip_partitions(first)
    }

    fn index_seek(&mut self, user_key: &[u8]) -> Result<()> {
        let table = self.table.clone();
        let (top_off, top_arc) = self.top_block()?;
        let top = as_index(&table, top_off, &top_arc)?;
        self.top_cur
            .seek_by(top, |k| k.cmp(user_key))
            .map_err(table.corrupt(top_off))?;
        self.part_cur.invalidate();
        if !self.top_cur.valid() {
            return Ok(());
        }
        self.load_part()?;
        let (off, part) = held(&table, &self.part)?;
        self.part_cur
            .seek_by(part, |k| k.cmp(user_key))
            .map_err(table.corrupt(off))?;
        self.skip_partitions(true)
    }

    /// Positions the data cursor in the block under the index cursor, moving the
    /// index in `forward` direction past blocks where `position` finds nothing.
    fn settle(
        &mut self,
        forward: bool,
        mut position: impl FnMut(&mut Cursor, &Block) -> Result<(), Corrupt>,
    ) -> Result<()> {
        let table = self.table.clone();
        loop {
            if !self.index_valid() {
                self.data_cur.invalidate();
                return Ok(());
            }
            self.load_data()?;
            let (off, data) = held(&table, &self.data)?;
            position(&mut self.data_cur, data).map_err(table.corrupt(off))?;
            if self.data_cur.valid() {
                return Ok(());
            }
            self.index_step(forward)?;
        }
    }

    fn seek_impl(&mut self, target: &[u8]) -> Result<()> {
        let (user_key, trailer) = split_target(target);
        self.index_seek(user_key)?;
        self.settle(true, |c, b| {
            c.seek_by(b, |k| cmp_internal_to(k, user_key, trailer))
        })
    }

    fn next_impl(&mut self) -> Result<()> {
        let table = self.table.clone();
        let (off, data) = held(&table, &self.data)?;
        self.data_cur.next(data).map_err(table.corrupt(off))?;
        if self.data_cur.valid() {
            return Ok(());
        }
        self.index_step(true)?;
        self.settle(true, |c, b| c.seek_to_first(b))
    }

    fn prev_impl(&mut self) -> Result<()> {
        let table = self.table.clone();
        let (off, data) = held(&table, &self.data)?;
        self.data_cur.prev(data).map_err(table.corrupt(off))?;
        if self.data_cur.valid() {
            return Ok(());
        }
        self.index_step(false)?;
        self.settle(false, |c, b| c.seek_to_last(b))
    }

    fn run(&mut self, reset: bool, op: impl FnOnce(&mut Self) -> Result<()>) {
        if reset {
            self.err = None;
        } else if self.err.is_some() || !self.data_cur.valid() {
            return;
        }
        if let Err(e) = op(self).and_then(|()| self.check_value()) {
            self.data_cur.invalidate();
            self.err = Some(e);
        }
    }

    /// Checks that the entry the iterator stopped on has a value, so that
    /// `value()` never has to make one up.
    fn check_value(&self) -> Result<()> {
        if !self.data_cur.valid() || self.current_value().is_some() {
            return Ok(());
        }
        Err(Error::Internal(format!(
            "{}: the iterator stopped on an entry without a value",
            self.table.path.display()
        )))
    }

    fn current_value(&self) -> Option<&[u8]> {
        let (_, block) = self.data.as_ref()?;
        self.data_cur.value(block.as_block()?)
    }
}

impl InternalIterator for TableIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.data_cur.valid()
    }

    fn seek_to_first(&mut self) {
        self.run(true, |it| {
            it.index_edge(true)?;
            it.settle(true, |c, b| c.seek_to_first(b))
        });
    }

    fn seek_to_last(&mut self) {
        self.run(true, |it| {
            it.index_edge(false)?;
            it.settle(false, |c, b| c.seek_to_last(b))
        });
    }

    fn seek(&mut self, target: &[u8]) {
        self.run(true, |it| it.seek_impl(target));
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.run(true, |it| {
            it.seek_impl(target)?;
            if !it.data_cur.valid() {
                it.index_edge(false)?;
                return it.settle(false, |c, b| c.seek_to_last(b));
            }
            let (user_key, trailer) = split_target(target);
            if cmp_internal_to(it.data_cur.key(), user_key, trailer) == std::cmp::Ordering::Greater
            {
                it.prev_impl()?;
            }
            Ok(())
        });
    }

    fn next(&mut self) {
        self.run(false, Self::next_impl);
    }

    fn prev(&mut self) {
        self.run(false, Self::prev_impl);
    }

    fn key(&self) -> &[u8] {
        self.data_cur.key()
    }

    fn value(&self) -> &[u8] {
        // Only reached while valid, and `run` checked the value then.
        self.current_value().unwrap_or_default()
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

/// Reads a table's footer, properties and the list of all its blocks (reading the
/// top-level index and every index partition, not the data), verifying checksums.
/// Nothing is counted or cached.
pub fn inspect_table(file: Arc<dyn RandomAccessFile>, path: PathBuf) -> Result<TableLayout> {
    let meta = read_meta(file.as_ref(), &path, None, true)?;
    let read_index = |kind: BlockKind, h: BlockHandle| -> Result<Block> {
        let contents = read_block_contents(file.as_ref(), &path, h, kind, None, true)?;
        let format = match kind {
            BlockKind::IndexPartition => meta.partition_format(),
            _ => EntryFormat::Index,
        };
        Block::new(contents, format).map_err(|c| Error::corruption(&path, h.offset, c.0))
    };
    let top_h = meta.footer.top_index;
    let top = read_index(BlockKind::TopIndex, top_h)?;
    let mut data = Vec::new();
    let mut partitions = Vec::new();
    let mut tc = Cursor::default();
    let path_ref = &path;
    let corrupt = |off: u64| move |c: Corrupt| Error::corruption(path_ref, off, c.0);
    tc.seek_to_first(&top).map_err(corrupt(top_h.offset))?;
    while tc.valid() {
        let (offset, size) = tc.handle();
        let h = BlockHandle { offset, size };
        if offset < meta.partitions_start || h.end() > top_h.offset {
            return Err(corrupt(top_h.offset)(Corrupt(
                "partition handle out of place",
            )));
        }
        partitions.push(BlockInfo {
            kind: "index",
            offset,
            size,
        });
        let part = read_index(BlockKind::IndexPartition, h)?;
        let mut pc = Cursor::default();
        pc.seek_to_first(&part).map_err(corrupt(offset))?;
        while pc.valid() {
            let (doff, dsize) = pc.handle();
            let end = BlockHandle {
                offset: doff,
                size: dsize,
            }
            .end();
            if end > meta.data_end || (meta.aligned() && !doff.is_multiple_of(PAGE_SIZE)) {
                return Err(corrupt(offset)(Corrupt("data block handle out of place")));
            }
            data.push(BlockInfo {
                kind: "data",
                offset: doff,
                size: dsize,
            });
            pc.next(&part).map_err(corrupt(offset))?;
        }
        tc.next(&top).map_err(corrupt(top_h.offset))?;
    }
    let mut blocks = data;
    if let Some(f) = meta.footer.filter {
        blocks.push(BlockInfo {
            kind: "filter",
            offset: f.offset,
            size: f.size,
        });
    }
    blocks.extend(partitions);
    blocks.push(BlockInfo {
        kind: "top_index",
        offset: top_h.offset,
        size: top_h.size,
    });
    let ph = meta.footer.properties;
    blocks.push(BlockInfo {
        kind: "properties",
        offset: ph.offset,
        size: ph.size,
    });
    Ok(TableLayout {
        footer_offset: ph.end(),
        file_size: meta.props.file_size,
        properties: meta.props,
        blocks,
    })
}
