//! What the block cache holds: a table block decoded, of any kind.

use super::{block, filter, paged};
use crate::metrics::BlockKind;

/// A decoded block in the cache: stored decompressed, shared by `Arc`, immutable.
#[derive(Debug)]
pub(crate) enum CachedBlock {
    /// A data block (versions 1 and 2).
    Data(block::Block),
    /// A data block stored on pages (version 3).
    PagedData(block::Block),
    /// An index partition or a top-level index (versions 1 and 2).
    Index(block::Block),
    /// A top-level index or top-level filter index (version 3).
    Keys(paged::KeyArray),
    /// A locator, the index partition of version 3.
    Locator(paged::Locator),
    /// A whole-table Bloom filter (versions 1 and 2).
    Filter(filter::Filter),
    /// A filter partition (version 3).
    PagedFilter(filter::PartitionFilter),
}

impl CachedBlock {
    /// The block of a data or index entry, `None` for the other kinds.
    pub(crate) fn as_block(&self) -> Option<&block::Block> {
        match self {
            CachedBlock::Data(b) | CachedBlock::PagedData(b) | CachedBlock::Index(b) => Some(b),
            _ => None,
        }
    }

    /// The key array of a version-3 top-level block.
    pub(crate) fn as_keys(&self) -> Option<&paged::KeyArray> {
        match self {
            CachedBlock::Keys(k) => Some(k),
            _ => None,
        }
    }

    /// The locator of a version-3 index partition.
    pub(crate) fn as_locator(&self) -> Option<&paged::Locator> {
        match self {
            CachedBlock::Locator(l) => Some(l),
            _ => None,
        }
    }

    /// True if the filter (either version) may hold `user_key`; `None` if
    /// this is not a filter.
    pub(crate) fn filter_may_contain(&self, user_key: &[u8]) -> Option<bool> {
        match self {
            CachedBlock::Filter(f) => Some(f.may_contain(user_key)),
            CachedBlock::PagedFilter(f) => Some(f.may_contain(user_key)),
            _ => None,
        }
    }

    /// True if this block can serve a read of `kind`.
    pub(crate) fn is_kind(&self, kind: BlockKind) -> bool {
        matches!(
            (self, kind),
            (
                CachedBlock::Data(_) | CachedBlock::PagedData(_),
                BlockKind::Data
            ) | (
                CachedBlock::Index(_),
                BlockKind::TopIndex | BlockKind::IndexPartition
            ) | (CachedBlock::Keys(_), BlockKind::TopIndex)
                | (CachedBlock::Locator(_), BlockKind::IndexPartition)
                | (
                    CachedBlock::Filter(_) | CachedBlock::PagedFilter(_),
                    BlockKind::Filter
                )
        )
    }

    /// Bytes charged to the cache: the block as stored, without padding
    /// (decoded contents plus the 5-byte trailer, or the 9-byte tail of a
    /// version-3 paged block), so that a cache of N bytes holds exactly the
    /// blocks whose table bytes add up to N — the arithmetic of the study's
    /// inflection points, which are sums of table bytes. The few dozen bytes
    /// of bookkeeping per entry are not charged (under 1.5% for 4 KiB blocks).
    pub(crate) fn charge(&self) -> u64 {
        let (contents, tail) = match self {
            CachedBlock::Data(b) | CachedBlock::Index(b) => (b.size(), block::BLOCK_TRAILER_LEN),
            CachedBlock::PagedData(b) => (b.size(), paged::PAGED_TAIL_LEN as u64),
            CachedBlock::Keys(k) => (k.size(), block::BLOCK_TRAILER_LEN),
            CachedBlock::Locator(l) => (l.size(), paged::PAGED_TAIL_LEN as u64),
            CachedBlock::Filter(f) => (f.size(), block::BLOCK_TRAILER_LEN),
            CachedBlock::PagedFilter(f) => (f.stored_len(), paged::PAGED_TAIL_LEN as u64),
        };
        contents as u64 + tail
    }
}
