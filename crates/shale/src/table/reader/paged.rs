//! The paged index family: table format version 3 (and 4, which is 3 with
//! an optional range-deletion block).
//!
//! Data blocks take whole 4 KiB pages and are read whole. Index partitions
//! are locators and the filter is cut into partitions; both are paged
//! blocks, of their stored length, lying anywhere between the data and the
//! top-level blocks, found through key arrays (`table/paged.rs`): the
//! top-level index names the locators, the top-level filter index the filter
//! partitions. A Get reads the top-level filter index and one filter
//! partition, the top-level index, one locator and one data block (a second
//! where a locator's code is ambiguous, or where the key's versions continue).

use std::sync::OnceLock;

use super::block_io::{HeldMeta, HeldPartitions, HeldSlot, Placement};
use super::block_ref::{decode_data_block, BlockRef};
use super::{Meta, TableReader};
use crate::error::Result;
use crate::format::{pack_trailer, ValueKind, MAX_SEQNO};
use crate::metrics::{BlockKind, MetadataKind};
use crate::table::block::{cmp_internal_to, split_target, Corrupt, Cursor, PAGE_SIZE};
use crate::table::filter::PartitionFilter;
use crate::table::layout::Footer;
use crate::table::paged::{KeyArray, Locator};
use crate::table::{CachedBlock, TableGet, TableProperties};

/// The index reader of a version-3 (or 4) table.
#[derive(Clone, Copy, Debug)]
pub(super) struct PagedIndex;

impl PagedIndex {
    /// True if blocks of `kind` are paged blocks: data blocks, locators and
    /// filter partitions.
    pub(super) fn is_paged(kind: BlockKind) -> bool {
        matches!(
            kind,
            BlockKind::Data | BlockKind::Filter | BlockKind::IndexPartition
        )
    }

    /// Where the partitions' region begins: the start of the top-level
    /// blocks, since the key arrays place each partition (and each use is
    /// checked).
    pub(super) fn partitions_start(footer: &Footer) -> u64 {
        footer.filter.map_or(footer.top_index.offset, |f| f.offset)
    }

    /// The end of the data region: the data pages, padding included (`None`
    /// if not whole pages).
    pub(super) fn data_region(props: &TableProperties) -> Option<u64> {
        Some(props.data_bytes).filter(|b| b.is_multiple_of(PAGE_SIZE))
    }

    /// Decodes a block of `kind` of this table.
    pub(super) fn decode(
        &self,
        kind: BlockKind,
        contents: Vec<u8>,
    ) -> Result<CachedBlock, Corrupt> {
        Ok(match kind {
            BlockKind::Data => return decode_data_block(contents, true),
            BlockKind::TopIndex => CachedBlock::Keys(KeyArray::new(contents)?),
            BlockKind::IndexPartition => CachedBlock::Locator(Locator::new(contents)?),
            BlockKind::Filter => CachedBlock::PagedFilter(PartitionFilter::new(contents)?),
            BlockKind::Footer | BlockKind::Properties => {
                return Err(Corrupt("footer and properties are not cached blocks"))
            }
        })
    }

    /// Where blocks of `kind` live in the table `meta` describes: paged
    /// blocks on page boundaries, locators and filter partitions between the
    /// data and the top-level blocks.
    pub(super) fn placement(&self, kind: BlockKind, meta: &Meta) -> Placement {
        let (lo, hi) = match kind {
            BlockKind::Data => (0, meta.data_end),
            BlockKind::IndexPartition | BlockKind::Filter => {
                (meta.data_end, meta.top_levels_start())
            }
            _ => (0, meta.footer.properties.offset),
        };
        Placement {
            lo,
            hi,
            aligned: PagedIndex::is_paged(kind),
        }
    }

    /// The slots for held partitions: one per page of the partition region
    /// when `partitions` are held, else none.
    pub(super) fn held_partitions(meta: &Meta, partitions: bool) -> HeldPartitions {
        let pages = if partitions {
            let region = meta.top_levels_start().saturating_sub(meta.data_end);
            // Within the file, whose size the properties checked; the last
            // partition may end short of a page.
            usize::try_from(region.div_ceil(PAGE_SIZE)).unwrap_or(0)
        } else {
            0
        };
        HeldPartitions::Paged((0..pages).map(|_| OnceLock::new()).collect())
    }

    /// The held slot of the block `r` of a kind other than the top-level
    /// blocks: locators and filter partitions, each in the slot of its first
    /// page past `data_end`, when held.
    pub(super) fn held_slot(
        h: &HeldMeta,
        kind: BlockKind,
        r: BlockRef,
        data_end: u64,
    ) -> Option<(HeldSlot<'_>, MetadataKind)> {
        let mk = match kind {
            BlockKind::Filter => {
                (h.kinds.filter_partitions).then_some(MetadataKind::FilterPartitions)
            }
            BlockKind::IndexPartition => {
                (h.kinds.index_partitions).then_some(MetadataKind::IndexPartitions)
            }
            _ => None,
        }?;
        let HeldPartitions::Paged(pages) = &h.partitions else {
            return None;
        };
        let page = r.offset.checked_sub(data_end)? / PAGE_SIZE;
        let slot = pages.get(usize::try_from(page).ok()?)?;
        Some((HeldSlot::Once(slot), mk))
    }

    /// True if the filter may hold `user_key`: asks the one partition the
    /// top-level filter index `f` (at `f_off`) names; a key past the last
    /// partition is excluded without one.
    pub(super) fn filter_may_contain(
        &self,
        t: &TableReader,
        f: &CachedBlock,
        f_off: u64,
        user_key: &[u8],
    ) -> Result<bool> {
        let Some(keys) = f.as_keys() else {
            return Err(t.corrupt(f_off)(Corrupt("not a filter")));
        };
        let p = keys.lower_bound(user_key);
        if p >= keys.len() {
            return Ok(false);
        }
        let r = BlockRef::paged(keys.offset(p), keys.value(p));
        let part = t.block(BlockKind::Filter, r, f_off)?;
        part.filter_may_contain(user_key)
            .ok_or_else(|| t.corrupt(r.offset)(Corrupt("not a filter")))
    }

    /// The `get` of table `t` after the filter: locator through the
    /// top-level index, then one data block (more only where the key's
    /// versions continue into the next block).
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
        let keys = top
            .as_keys()
            .ok_or_else(|| t.corrupt(top_off)(Corrupt("not a key array")))?;
        let mut p = keys.lower_bound(user_key);
        let mut first_partition = true;
        while p < keys.len() {
            let r = BlockRef::paged(keys.offset(p), keys.value(p));
            let part = t.block(BlockKind::IndexPartition, r, top_off)?;
            let loc = part
                .as_locator()
                .ok_or_else(|| t.corrupt(r.offset)(Corrupt("not a locator")))?;
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
                    .ok_or_else(|| t.corrupt(r.offset)(Corrupt("data page out of range")))?;
                let Some(data) = t.data_block(data_ref, r.offset)? else {
                    return Ok(TableGet::Deferred);
                };
                let block = data
                    .as_block()
                    .ok_or_else(|| t.corrupt(data_ref.offset)(Corrupt("not data")))?;
                let mut cur = Cursor::default();
                // Checked once per cached block: only this locator refers to
                // it, always as block `g`.
                if g > 0 && !block.verified() {
                    cur.seek_to_first(block)
                        .map_err(t.corrupt(data_ref.offset))?;
                    let (first_user, _) = split_target(cur.key());
                    if !cur.valid() || !loc.agrees_with_first(g, first_user) {
                        return Err(t.corrupt(r.offset)(Corrupt(
                            "locator disagrees with the first key of its data block",
                        )));
                    }
                    block.set_verified();
                }
                cur.seek_by(block, |k| cmp_internal_to(k, user_key, trailer))
                    .map_err(t.corrupt(data_ref.offset))?;
                if cur.valid() {
                    return t.entry_found(&cur, &data, user_key, data_ref.offset, deleted_at);
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
}
