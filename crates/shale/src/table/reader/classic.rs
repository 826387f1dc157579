//! The classic index family: table format versions 1 and 2.
//!
//! A top-level index block (entry format `Index`) names the index
//! partitions, which lie back to back before it; each partition (entry
//! format `Index` in version 1, `PagedIndex` in version 2) names data blocks.
//! Every block is contents and a 5-byte trailer; version 2 starts each data
//! block on a page boundary. The filter is one Bloom filter for the whole
//! table, between the data and the partitions. A Get reads the filter, the
//! top-level index, one partition and one data block (more only where one
//! user key's versions straddle a data-block boundary).

use std::collections::HashMap;

use parking_lot::RwLock;

use super::block_io::{HeldMeta, HeldPartitions, HeldSlot, Placement};
use super::block_ref::{decode_data_block, BlockRef};
use super::{Meta, TableReader};
use crate::error::Result;
use crate::format::{compare_bytes, pack_trailer, ValueKind, MAX_SEQNO};
use crate::metrics::{BlockKind, MetadataKind};
use crate::table::block::{cmp_internal_to, Block, Corrupt, Cursor, EntryFormat};
use crate::table::filter::Filter;
use crate::table::layout::{BlockHandle, Footer};
use crate::table::{CachedBlock, TableGet, TableProperties};

/// The index reader of a version-1 or version-2 table.
#[derive(Clone, Copy, Debug)]
pub(super) struct ClassicIndex {
    /// The grammar of the index partitions: `PagedIndex` from version 2 on.
    partition_format: EntryFormat,
    /// True if data blocks start on page boundaries (version 2).
    aligned_data: bool,
}

impl ClassicIndex {
    /// The reader of a table of `version` (1 or 2).
    pub(super) fn new(version: u32) -> ClassicIndex {
        ClassicIndex {
            partition_format: if version >= 2 {
                EntryFormat::PagedIndex
            } else {
                EntryFormat::Index
            },
            aligned_data: version >= 2,
        }
    }

    /// The grammar of the table's index partitions.
    pub(super) fn partition_format(&self) -> EntryFormat {
        self.partition_format
    }

    /// True if data blocks start on page boundaries (version 2).
    pub(super) fn aligned_data(&self) -> bool {
        self.aligned_data
    }

    /// Where the index partitions begin: `index_partition_bytes` before the
    /// top-level index, and not inside the filter. `None` if that is out of
    /// range.
    pub(super) fn partitions_start(footer: &Footer, props: &TableProperties) -> Option<u64> {
        footer
            .top_index
            .offset
            .checked_sub(props.index_partition_bytes)
            .filter(|&s| footer.filter.is_none_or(|f| f.end() <= s))
    }

    /// The end of the data region: the data blocks and the padding between
    /// them (`None` on overflow).
    pub(super) fn data_region(props: &TableProperties) -> Option<u64> {
        props.data_bytes.checked_add(props.data_padding_bytes)
    }

    /// Decodes a block of `kind` of this table.
    pub(super) fn decode(
        &self,
        kind: BlockKind,
        contents: Vec<u8>,
    ) -> Result<CachedBlock, Corrupt> {
        Ok(match kind {
            BlockKind::Data => return decode_data_block(contents, false),
            BlockKind::TopIndex => CachedBlock::Index(Block::new(contents, EntryFormat::Index)?),
            BlockKind::IndexPartition => {
                CachedBlock::Index(Block::new(contents, self.partition_format)?)
            }
            BlockKind::Filter => CachedBlock::Filter(Filter::new(contents)?),
            BlockKind::Footer | BlockKind::Properties => {
                return Err(Corrupt("footer and properties are not cached blocks"))
            }
        })
    }

    /// Where blocks of `kind` live in the table `meta` describes.
    pub(super) fn placement(&self, kind: BlockKind, meta: &Meta) -> Placement {
        let (lo, hi) = match kind {
            BlockKind::Data => (0, meta.data_end),
            BlockKind::IndexPartition => (meta.partitions_start, meta.footer.top_index.offset),
            _ => (0, meta.footer.properties.offset),
        };
        Placement {
            lo,
            hi,
            aligned: kind == BlockKind::Data && self.aligned_data,
        }
    }

    /// The slots for held partitions: a map by offset, filled by first uses.
    pub(super) fn held_partitions() -> HeldPartitions {
        HeldPartitions::Classic(RwLock::new(HashMap::new()))
    }

    /// The held slot of a block of `kind` other than the top-level blocks:
    /// index partitions, when held (the whole filter is a top-level block).
    pub(super) fn held_slot(h: &HeldMeta, kind: BlockKind) -> Option<(HeldSlot<'_>, MetadataKind)> {
        match (&h.partitions, kind) {
            (HeldPartitions::Classic(map), BlockKind::IndexPartition)
                if h.kinds.index_partitions =>
            {
                Some((HeldSlot::ByOffset(map), MetadataKind::IndexPartitions))
            }
            _ => None,
        }
    }

    /// True if the whole-table filter `f` (at `f_off`) may hold `user_key`.
    pub(super) fn filter_may_contain(
        &self,
        t: &TableReader,
        f: &CachedBlock,
        f_off: u64,
        user_key: &[u8],
    ) -> Result<bool> {
        f.filter_may_contain(user_key)
            .ok_or_else(|| t.corrupt(f_off)(Corrupt("not a filter")))
    }

    /// The `get` of table `t` after the filter: top-level index, one
    /// partition, one data block (more only where the key's versions
    /// continue into the next block, or the next partition).
    pub(super) fn get(
        &self,
        t: &TableReader,
        user_key: &[u8],
        seq: u64,
        deleted_at: Option<u64>,
    ) -> Result<TableGet> {
        let trailer = pack_trailer(seq.min(MAX_SEQNO), ValueKind::SEEK);
        let top_off = t.meta.footer.top_index.offset;
        let top = t.top_index()?;
        let top_block = top
            .as_block()
            .ok_or_else(|| t.corrupt(top_off)(Corrupt("not an index")))?;
        let mut top_cur = Cursor::default();
        top_cur
            .seek_by(top_block, |k| compare_bytes(k, user_key))
            .map_err(t.corrupt(top_off))?;
        if !top_cur.valid() {
            return Ok(TableGet::Absent);
        }
        let (mut part_off, size) = top_cur.handle();
        let mut part = t.block(
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
            .ok_or_else(|| t.corrupt(part_off)(Corrupt("not an index")))?;
        part_cur
            .seek_by(part_block, |k| compare_bytes(k, user_key))
            .map_err(t.corrupt(part_off))?;
        if !part_cur.valid() {
            return Err(t.corrupt(part_off)(Corrupt(
                "index partition ends before its top-level separator",
            )));
        }
        loop {
            let (offset, size) = part_cur.handle();
            let data_ref = BlockRef::classic(BlockHandle { offset, size });
            let Some(data) = t.data_block(data_ref, part_off)? else {
                return Ok(TableGet::Deferred);
            };
            let block = data
                .as_block()
                .ok_or_else(|| t.corrupt(offset)(Corrupt("not data")))?;
            let mut cur = Cursor::default();
            cur.seek_by(block, |k| cmp_internal_to(k, user_key, trailer))
                .map_err(t.corrupt(offset))?;
            if cur.valid() {
                return t.entry_found(&cur, &data, user_key, offset, deleted_at);
            }
            // Every entry of this block sorts before the seek key. The next block
            // can only hold the key if this block's separator is the key itself.
            if part_cur.key() != user_key {
                return Ok(TableGet::Absent);
            }
            part_cur.next(part_block).map_err(t.corrupt(part_off))?;
            if !part_cur.valid() {
                top_cur.next(top_block).map_err(t.corrupt(top_off))?;
                if !top_cur.valid() {
                    return Ok(TableGet::Absent);
                }
                let (off, size) = top_cur.handle();
                part_off = off;
                part = t.block(
                    BlockKind::IndexPartition,
                    BlockRef::classic(BlockHandle { offset: off, size }),
                    top_off,
                )?;
                part_block = part
                    .as_block()
                    .ok_or_else(|| t.corrupt(part_off)(Corrupt("not an index")))?;
                part_cur
                    .seek_to_first(part_block)
                    .map_err(t.corrupt(part_off))?;
                if !part_cur.valid() {
                    return Err(t.corrupt(part_off)(Corrupt("empty index partition")));
                }
            }
        }
    }
}
