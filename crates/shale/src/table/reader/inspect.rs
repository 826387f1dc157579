//! A table's layout, block by block, for `shale sst` and the checks that
//! read a table's metadata without its data.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale_env::RandomAccessFile;

use super::block_ref::{read_block_contents, read_ref, BlockRef};
use super::classic::ClassicIndex;
use super::paged::PagedIndex;
use super::{read_meta, read_range_dels, IndexReader, Meta};
use crate::error::{Error, Result};
use crate::metrics::BlockKind;
use crate::table::block::{Block, Corrupt, Cursor, EntryFormat, PAGE_SIZE};
use crate::table::filter::Filter;
use crate::table::layout::BlockHandle;
use crate::table::{BlockInfo, CachedBlock, LayoutKind, TableLayout};

/// Reads a table's footer, properties and the list of all its blocks (reading the
/// top-level index and every index partition, not the data), verifying checksums.
/// Nothing is counted or cached.
pub fn inspect_table(file: Arc<dyn RandomAccessFile>, path: PathBuf) -> Result<TableLayout> {
    let meta = read_meta(file.as_ref(), &path, None, true)?;
    match IndexReader::for_version(meta.props.format_version) {
        IndexReader::Classic(c) => inspect_classic(file.as_ref(), &path, meta, c),
        IndexReader::Paged(p) => inspect_paged(file.as_ref(), &path, meta, p),
    }
}

/// [`inspect_table`] of a version-1 or version-2 table: the partitions
/// through the top-level index, the data blocks through the partitions.
fn inspect_classic(
    file: &dyn RandomAccessFile,
    path: &Path,
    meta: Meta,
    index: ClassicIndex,
) -> Result<TableLayout> {
    let read_index = |kind: BlockKind, h: BlockHandle| -> Result<Block> {
        let contents = read_block_contents(file, path, h, kind, None, true)?;
        let format = match kind {
            BlockKind::IndexPartition => index.partition_format(),
            _ => EntryFormat::Index,
        };
        Block::new(contents, format).map_err(|c| Error::corruption(path, h.offset, c.0))
    };
    let top_h = meta.footer.top_index;
    let top = read_index(BlockKind::TopIndex, top_h)?;
    let mut data = Vec::new();
    let mut partitions = Vec::new();
    let mut tc = Cursor::default();
    let path_ref = path;
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
            kind: LayoutKind::Index,
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
            if end > meta.data_end || (index.aligned_data() && !doff.is_multiple_of(PAGE_SIZE)) {
                return Err(corrupt(offset)(Corrupt("data block handle out of place")));
            }
            data.push(BlockInfo {
                kind: LayoutKind::Data,
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
            kind: LayoutKind::Filter,
            offset: f.offset,
            size: f.size,
        });
    }
    blocks.extend(partitions);
    Ok(layout_with_tail(blocks, meta))
}

/// Checks every block of a table but its data blocks (a full scan reads
/// those): the footer, the properties, every index block and the filter
/// (in version 3 the top-level filter index and every filter partition),
/// with their checksums. Nothing is counted or cached. `Corruption` names the
/// first damaged block.
pub(crate) fn check_metadata(file: Arc<dyn RandomAccessFile>, path: PathBuf) -> Result<()> {
    let meta = read_meta(file.as_ref(), &path, None, true)?;
    let index = IndexReader::for_version(meta.props.format_version);
    if let (IndexReader::Classic(_), Some(fh)) = (index, meta.footer.filter) {
        let contents =
            read_block_contents(file.as_ref(), &path, fh, BlockKind::Filter, None, true)?;
        Filter::new(contents).map_err(|c| Error::corruption(&path, fh.offset, c.0))?;
    }
    if let Some(h) = meta.range_del_handle() {
        read_range_dels(file.as_ref(), &path, h, None, true)?;
    }
    inspect_table(file, path).map(|_| ())
}

/// The layout of `blocks` followed by the top-level index and the properties.
fn layout_with_tail(mut blocks: Vec<BlockInfo>, meta: Meta) -> TableLayout {
    let top_h = meta.footer.top_index;
    blocks.push(BlockInfo {
        kind: LayoutKind::TopIndex,
        offset: top_h.offset,
        size: top_h.size,
    });
    if let Some(h) = meta.range_del_handle() {
        blocks.push(BlockInfo {
            kind: LayoutKind::RangeDel,
            offset: h.offset,
            size: h.size,
        });
    }
    let ph = meta.footer.properties;
    blocks.push(BlockInfo {
        kind: LayoutKind::Properties,
        offset: ph.offset,
        size: ph.size,
    });
    TableLayout {
        footer_offset: ph.end(),
        file_size: meta.props.file_size,
        properties: meta.props,
        blocks,
    }
}

/// [`inspect_table`] of a version-3 or 4 table: the paged blocks are listed with
/// their stored lengths (`size` of a data block is its pages).
fn inspect_paged(
    file: &dyn RandomAccessFile,
    path: &Path,
    meta: Meta,
    index: PagedIndex,
) -> Result<TableLayout> {
    let read = |kind: BlockKind, r: BlockRef| -> Result<CachedBlock> {
        let contents = read_ref(file, path, r, kind, None, true)?;
        index
            .decode(kind, contents)
            .map_err(|c| Error::corruption(path, r.offset, c.0))
    };
    let out_of_place = |referrer: u64, what: &'static str| {
        Error::corruption(path, referrer, format!("{what} handle out of place"))
    };
    let paged_lo = meta.data_end;
    let paged_hi = meta.top_levels_start();
    let in_region = |r: BlockRef| {
        r.offset >= paged_lo && r.end() <= paged_hi && r.offset.is_multiple_of(PAGE_SIZE)
    };
    let mut blocks = Vec::new();
    let mut partitions = Vec::new();
    let mut filters = Vec::new();
    let top_h = meta.footer.top_index;
    let top = read(BlockKind::TopIndex, BlockRef::classic(top_h))?;
    let keys = top
        .as_keys()
        .ok_or_else(|| Error::corruption(path, top_h.offset, "not a key array"))?;
    let mut next_page = 0u64;
    for p in 0..keys.len() {
        let r = BlockRef::paged(keys.offset(p), keys.value(p));
        if !in_region(r) {
            return Err(out_of_place(top_h.offset, "locator"));
        }
        partitions.push(BlockInfo {
            kind: LayoutKind::Index,
            offset: r.offset,
            size: r.len,
        });
        let part = read(BlockKind::IndexPartition, r)?;
        let loc = part
            .as_locator()
            .ok_or_else(|| Error::corruption(path, r.offset, "not a locator"))?;
        for g in 0..loc.len() {
            let (page, pages) = loc.pages(g);
            if page != next_page
                || page.saturating_add(pages).saturating_mul(PAGE_SIZE) > meta.data_end
            {
                return Err(out_of_place(r.offset, "data block"));
            }
            next_page = page + pages;
            blocks.push(BlockInfo {
                kind: LayoutKind::Data,
                offset: page * PAGE_SIZE,
                size: pages * PAGE_SIZE,
            });
        }
    }
    if next_page * PAGE_SIZE != meta.data_end {
        return Err(out_of_place(top_h.offset, "data region"));
    }
    if let Some(fh) = meta.footer.filter {
        let fi = read(BlockKind::TopIndex, BlockRef::classic(fh))?;
        let fkeys = fi
            .as_keys()
            .ok_or_else(|| Error::corruption(path, fh.offset, "not a key array"))?;
        for p in 0..fkeys.len() {
            let r = BlockRef::paged(fkeys.offset(p), fkeys.value(p));
            if !in_region(r) {
                return Err(out_of_place(fh.offset, "filter partition"));
            }
            read(BlockKind::Filter, r)?;
            filters.push(BlockInfo {
                kind: LayoutKind::Filter,
                offset: r.offset,
                size: r.len,
            });
        }
        partitions.push(BlockInfo {
            kind: LayoutKind::FilterIndex,
            offset: fh.offset,
            size: fh.size,
        });
    }
    blocks.extend(filters);
    blocks.extend(partitions);
    Ok(layout_with_tail(blocks, meta))
}
