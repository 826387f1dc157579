//! The block plumbing both index families share: the fetch through the
//! block cache with its accounting (and the batch path of `multi_get`), the
//! placement check of every handle, and the metadata a reader holds outside
//! the cache. Where a block lies and how its bytes are read is `block_ref`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;

use super::block_ref::{read_ref, BlockRef};
use super::{batch, HeldKinds, TableReader};
use crate::cache::Priority;
use crate::error::{Error, Result};
use crate::metrics::{BlockKind, MetadataKind};
use crate::table::block::{Corrupt, PAGE_SIZE};
use crate::table::CachedBlock;

/// The metadata a reader holds, each block set once by its first use.
pub(super) struct HeldMeta {
    pub(super) kinds: HeldKinds,
    pub(super) top_index: OnceLock<Arc<CachedBlock>>,
    pub(super) top_filter: OnceLock<Arc<CachedBlock>>,
    /// The held partitions, laid out as the table's index family wants.
    pub(super) partitions: HeldPartitions,
    /// Bytes held, per [`MetadataKind`] (what the reader gives back to
    /// `Stats::metadata_held` when it closes).
    pub(super) bytes: [AtomicU64; 4],
}

/// Where a reader holds its index (and filter) partitions, per family.
pub(super) enum HeldPartitions {
    /// Versions 1 and 2: index partitions by offset.
    Classic(RwLock<HashMap<u64, Arc<CachedBlock>>>),
    /// Version 3: one slot per page of the partition region (from the end of
    /// the data to the top-level blocks), a partition in the slot of its
    /// first page. Empty when no partitions are held.
    Paged(Box<[OnceLock<Arc<CachedBlock>>]>),
}

/// The cache priority of a block of `kind`: data blocks are evicted first,
/// index partitions next, filters and top-level indexes last.
#[inline]
fn priority_of(kind: BlockKind) -> Priority {
    match kind {
        BlockKind::Data => Priority::Low,
        BlockKind::IndexPartition => Priority::Medium,
        _ => Priority::High,
    }
}

/// Where a held block lives.
pub(super) enum HeldSlot<'a> {
    /// A slot set once.
    Once(&'a OnceLock<Arc<CachedBlock>>),
    /// The classic map of partitions by offset.
    ByOffset(&'a RwLock<HashMap<u64, Arc<CachedBlock>>>),
}

impl HeldSlot<'_> {
    /// The block in this slot for the block at `offset`, if loaded.
    fn get(&self, offset: u64) -> Option<Arc<CachedBlock>> {
        match self {
            HeldSlot::Once(slot) => slot.get().cloned(),
            HeldSlot::ByOffset(map) => map.read().get(&offset).cloned(),
        }
    }
}

/// The region of the file where blocks of one kind live, and whether they
/// start on page boundaries there.
pub(super) struct Placement {
    pub(super) lo: u64,
    pub(super) hi: u64,
    pub(super) aligned: bool,
}

impl TableReader {
    /// The held slot of the block `r` of `kind`, if this reader holds it
    /// (`r` already checked by `check_handle`).
    fn held_slot<'a>(
        &self,
        h: &'a HeldMeta,
        kind: BlockKind,
        r: BlockRef,
    ) -> Option<(HeldSlot<'a>, MetadataKind)> {
        let footer = &self.meta.footer;
        if kind == BlockKind::TopIndex && h.kinds.top_index && r.offset == footer.top_index.offset {
            return Some((HeldSlot::Once(&h.top_index), MetadataKind::TopIndex));
        }
        if kind == self.index.filter_kind()
            && h.kinds.top_filter
            && footer.filter.is_some_and(|f| f.offset == r.offset)
        {
            return Some((HeldSlot::Once(&h.top_filter), MetadataKind::TopFilter));
        }
        self.index.held_partition(h, kind, r, &self.meta)
    }

    /// A held block already loaded, if `r` is one (no read).
    pub(super) fn held_peek(&self, kind: BlockKind, r: BlockRef) -> Option<Arc<CachedBlock>> {
        let h = self.held.as_deref()?;
        let b = self.held_slot(h, kind, r)?.0.get(r.offset)?;
        b.is_kind(kind).then_some(b)
    }

    /// The held block `r`, read by the first use. `None` if this reader does
    /// not hold it.
    fn held_block(&self, kind: BlockKind, r: BlockRef) -> Option<Result<Arc<CachedBlock>>> {
        let h = self.held.as_deref()?;
        let (slot, mk) = self.held_slot(h, kind, r)?;
        let b = match slot.get(r.offset) {
            Some(b) => {
                self.trace(kind, r, None, true, || b.charge());
                b
            }
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
                    HeldSlot::ByOffset(map) => {
                        let mut map = map.write();
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
                self.trace(kind, r, None, false, || kept.charge());
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

    /// Reads and decodes the block `r` of `kind`, counted as a physical read
    /// and not cached.
    pub(super) fn read_uncached(&self, kind: BlockKind, r: BlockRef) -> Result<Arc<CachedBlock>> {
        self.read_decoded(kind, r, true)
    }

    /// Reads and decodes the block `r` of `kind`, not cached; counted as a
    /// physical read if `counted` (a Get's read, not a compaction's).
    fn read_decoded(
        &self,
        kind: BlockKind,
        r: BlockRef,
        counted: bool,
    ) -> Result<Arc<CachedBlock>> {
        let stats = counted.then_some(&*self.ctx.stats);
        let contents = read_ref(
            self.file.as_ref(),
            &self.path,
            r,
            kind,
            stats,
            self.ctx.verify_checksums,
        )?;
        let block = self
            .index
            .decode(kind, contents)
            .map_err(|c| Error::corruption(&self.path, r.offset, c.0))?;
        Ok(Arc::new(block))
    }

    /// Fetches a block through the cache. `referrer` is the offset of the block
    /// that holds its handle, blamed if the handle is out of place.
    pub(super) fn block(
        &self,
        kind: BlockKind,
        r: BlockRef,
        referrer: u64,
    ) -> Result<Arc<CachedBlock>> {
        self.check_handle(kind, r, referrer)?;
        if let Some(held) = self.held_block(kind, r) {
            return held;
        }
        let key = (self.file_number, r.offset);
        let stats = &self.ctx.stats;
        if let Some(b) = self.ctx.cache.get(&key) {
            if !batch::resuming() {
                stats.cache_hit(kind);
                self.trace(kind, r, Some(priority_of(kind)), true, || b.charge());
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
        let priority = priority_of(kind);
        self.trace(kind, r, Some(priority), false, || b.charge());
        self.ctx.cache.insert(key, b.clone(), b.charge(), priority);
        Ok(b)
    }

    /// Traces a counted access to block `r` (see [`crate::trace`]): at
    /// `priority` in the cache, or held (`None`); found (`hit`) or read.
    /// `charge` is called only while a trace is recorded, so that off the
    /// hook is one flag test.
    #[inline(always)]
    fn trace(
        &self,
        kind: BlockKind,
        r: BlockRef,
        priority: Option<Priority>,
        hit: bool,
        charge: impl FnOnce() -> u64,
    ) {
        let t = &self.ctx.tracer;
        if t.on() {
            t.access(self.file_number, r.offset, kind, priority, hit, charge());
        }
    }

    /// A data block for a Get, through the cache. While a batch plans its
    /// reads on this thread ([`batch`]), a block the cache lacks is not read:
    /// its read is recorded for the batch and the answer is `None`.
    pub(super) fn data_block(
        &self,
        r: BlockRef,
        referrer: u64,
    ) -> Result<Option<Arc<CachedBlock>>> {
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
            self.trace(BlockKind::Data, r, Some(Priority::Low), true, || b.charge());
            if !b.is_kind(BlockKind::Data) {
                return Err(Error::corruption(
                    &self.path,
                    r.offset,
                    "block cache holds a block of another kind at this offset",
                ));
            }
            return Ok(Some(b));
        }
        let paged_data = self.index.is_paged(BlockKind::Data);
        if batch::defer(key, &self.file, &self.path, r, paged_data) {
            self.ctx.stats.cache_miss(BlockKind::Data);
            // The charge is known once the batch reads the block.
            self.trace(BlockKind::Data, r, Some(Priority::Low), false, || 0);
        }
        Ok(None)
    }

    /// Fetches a block for a scan that must neither disturb the block cache nor
    /// count as a Get's read (a compaction): a cached copy is used if present,
    /// otherwise the block is read without being cached or counted.
    pub(super) fn block_for_scan(
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
        self.read_decoded(kind, r, false)
    }

    /// Checks that `r` lies in the region of the file where blocks of `kind`
    /// live, and is a paged block exactly where the format wants one;
    /// `referrer` is blamed otherwise.
    pub(super) fn check_handle(&self, kind: BlockKind, r: BlockRef, referrer: u64) -> Result<()> {
        let paged = self.index.is_paged(kind);
        let Placement { lo, hi, aligned } = self.index.placement(kind, &self.meta);
        let misaligned = aligned && !r.offset.is_multiple_of(PAGE_SIZE);
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

    /// A `Corruption` error at `offset` of this table, from a decoder's
    /// complaint.
    pub(super) fn corrupt(&self, offset: u64) -> impl Fn(Corrupt) -> Error + '_ {
        move |c| Error::corruption(&self.path, offset, c.0)
    }
}
