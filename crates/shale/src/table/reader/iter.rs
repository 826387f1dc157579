//! A table's iterator: top-level index, index partition (or locator), data block.

use std::sync::Arc;

use super::block_ref::{unwrap_ref, BlockRef, ReadAhead};
use super::TableReader;
use crate::error::{Error, Result};
use crate::format::compare_bytes;
use crate::iter::InternalIterator;
use crate::metrics::BlockKind;
use crate::table::block::{cmp_internal_to, split_target, Block, Corrupt, Cursor, PAGE_SIZE};
use crate::table::layout::BlockHandle;
use crate::table::paged::{KeyArray, Locator};
use crate::table::CachedBlock;

/// Iterator over a table: top-level index → index partition → data block.
pub(super) struct TableIter {
    table: Arc<TableReader>,
    /// A compaction's scan (see [`TableReader::scan`]).
    scan: bool,
    /// A compaction's read-ahead over the data blocks, if it has one.
    ahead: Option<ReadAhead>,
    top: Option<Arc<CachedBlock>>,
    top_cur: Cursor,
    part: Option<(u64, Arc<CachedBlock>)>,
    part_cur: Cursor,
    data: Option<(u64, Arc<CachedBlock>)>,
    data_cur: Cursor,
    /// Version 3: the position in the top-level index and the locator.
    pos: PagedPos,
    err: Option<Error>,
}

/// The index position of an iterator over a version-3 table: locator `p` of
/// the top-level index, block `g` of that locator.
#[derive(Clone, Copy, Debug, Default)]
struct PagedPos {
    p: usize,
    g: usize,
    valid: bool,
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
                    .block_for_scan(BlockKind::TopIndex, BlockRef::classic(h), h.offset)?
            }
            _ => self.table.top_index()?,
        };
        if t.as_block().is_none() && t.as_keys().is_none() {
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
        if self.table.index.paged() {
            return self.pos.valid;
        }
        self.top_cur.valid() && self.part_cur.valid()
    }

    /// Fetches a block for this iterator: through the cache, or as a scan.
    fn fetch(&self, kind: BlockKind, r: BlockRef, referrer: u64) -> Result<Arc<CachedBlock>> {
        if self.scan {
            self.table.block_for_scan(kind, r, referrer)
        } else {
            self.table.block(kind, r, referrer)
        }
    }

    /// Version 3: the top-level key array, and its number of locators.
    fn paged_top(&mut self) -> Result<(u64, Arc<CachedBlock>, usize)> {
        let (off, top) = self.top_block()?;
        let n = top
            .as_keys()
            .map(KeyArray::len)
            .ok_or_else(|| Error::corruption(&self.table.path, off, "not a key array"))?;
        Ok((off, top, n))
    }

    /// Version 3: loads locator `self.pos.p`; returns its number of blocks.
    fn paged_load_part(&mut self) -> Result<usize> {
        let (top_off, top, _) = self.paged_top()?;
        let keys = top
            .as_keys()
            .ok_or_else(|| Error::corruption(&self.table.path, top_off, "not a key array"))?;
        let r = BlockRef::paged(keys.offset(self.pos.p), keys.value(self.pos.p));
        if self.part.as_ref().map(|p| p.0) != Some(r.offset) {
            let b = self.fetch(BlockKind::IndexPartition, r, top_off)?;
            self.part = Some((r.offset, b));
        }
        self.paged_locator().map(|(_, loc)| loc.len())
    }

    /// Version 3: the loaded locator.
    fn paged_locator(&self) -> Result<(u64, &Locator)> {
        match &self.part {
            Some((off, b)) => b
                .as_locator()
                .map(|l| (*off, l))
                .ok_or_else(|| Error::corruption(&self.table.path, *off, "not a locator")),
            None => Err(Error::corruption(
                &self.table.path,
                0,
                "iterator lost its locator",
            )),
        }
    }

    /// Version 3: the first (or last) block of the table.
    fn paged_edge(&mut self, first: bool) -> Result<()> {
        let (_, _, n) = self.paged_top()?;
        self.pos.valid = false;
        if n == 0 {
            return Ok(());
        }
        self.pos.p = if first { 0 } else { n - 1 };
        let len = self.paged_load_part()?;
        self.pos.g = if first { 0 } else { len - 1 };
        self.pos.valid = true;
        Ok(())
    }

    /// Version 3: the next (or previous) block.
    fn paged_step(&mut self, forward: bool) -> Result<()> {
        let (_, _, n) = self.paged_top()?;
        let len = self.paged_locator()?.1.len();
        if forward {
            if self.pos.g + 1 < len {
                self.pos.g += 1;
            } else if self.pos.p + 1 < n {
                self.pos.p += 1;
                self.paged_load_part()?;
                self.pos.g = 0;
            } else {
                self.pos.valid = false;
            }
        } else if self.pos.g > 0 {
            self.pos.g -= 1;
        } else if self.pos.p > 0 {
            self.pos.p -= 1;
            self.pos.g = self.paged_load_part()? - 1;
        } else {
            self.pos.valid = false;
        }
        Ok(())
    }

    /// Version 3: the first block that can hold `user_key`.
    fn paged_seek(&mut self, user_key: &[u8]) -> Result<()> {
        let (_, top, n) = self.paged_top()?;
        let p = top.as_keys().map_or(n, |k| k.lower_bound(user_key));
        self.pos.valid = false;
        if p >= n {
            return Ok(());
        }
        self.pos.p = p;
        self.paged_load_part()?;
        self.pos.g = self.paged_locator()?.1.find(user_key);
        self.pos.valid = true;
        Ok(())
    }

    /// Loads the partition the top-level cursor points at.
    fn load_part(&mut self) -> Result<()> {
        let (offset, size) = self.top_cur.handle();
        if self.part.as_ref().map(|p| p.0) != Some(offset) {
            let referrer = self.table.meta.footer.top_index.offset;
            let handle = BlockRef::classic(BlockHandle { offset, size });
            let b = self.fetch(BlockKind::IndexPartition, handle, referrer)?;
            self.part = Some((offset, b));
        }
        Ok(())
    }

    /// Loads the data block the partition cursor points at.
    fn load_data(&mut self) -> Result<()> {
        let (referrer, handle) = if self.table.index.paged() {
            let (off, loc) = self.paged_locator()?;
            let (page, pages) = loc.pages(self.pos.g);
            let r = page
                .checked_mul(PAGE_SIZE)
                .zip(pages.checked_mul(PAGE_SIZE))
                .map(|(o, l)| BlockRef::paged(o, l))
                .ok_or_else(|| {
                    Error::corruption(&self.table.path, off, "data page out of range")
                })?;
            (off, r)
        } else {
            let (offset, size) = self.part_cur.handle();
            let referrer = self.part.as_ref().map_or(0, |p| p.0);
            (referrer, BlockRef::classic(BlockHandle { offset, size }))
        };
        if self.data.as_ref().map(|d| d.0) != Some(handle.offset) {
            let b = match self.ahead.as_mut() {
                Some(ahead) => {
                    let t = &self.table;
                    t.check_handle(BlockKind::Data, handle, referrer)?;
                    let raw = ahead.block(handle, t.meta.data_end, &t.path)?;
                    let contents = unwrap_ref(&t.path, handle, raw, t.ctx.verify_checksums)?;
                    let block = t
                        .index
                        .decode(BlockKind::Data, contents)
                        .map_err(|c| Error::corruption(&t.path, handle.offset, c.0))?;
                    Arc::new(block)
                }
                None => self.fetch(BlockKind::Data, handle, referrer)?,
            };
            self.data = Some((handle.offset, b));
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
        if self.table.index.paged() {
            return self.paged_step(forward);
        }
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
        if self.table.index.paged() {
            return self.paged_edge(first);
        }
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
        if self.table.index.paged() {
            return self.paged_seek(user_key);
        }
        let table = self.table.clone();
        let (top_off, top_arc) = self.top_block()?;
        let top = as_index(&table, top_off, &top_arc)?;
        self.top_cur
            .seek_by(top, |k| compare_bytes(k, user_key))
            .map_err(table.corrupt(top_off))?;
        self.part_cur.invalidate();
        if !self.top_cur.valid() {
            return Ok(());
        }
        self.load_part()?;
        let (off, part) = held(&table, &self.part)?;
        self.part_cur
            .seek_by(part, |k| compare_bytes(k, user_key))
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

impl TableIter {
    pub(super) fn new(table: Arc<TableReader>, scan: bool, ahead: Option<ReadAhead>) -> TableIter {
        TableIter {
            table,
            scan,
            ahead,
            top: None,
            top_cur: Cursor::default(),
            part: None,
            part_cur: Cursor::default(),
            data: None,
            data_cur: Cursor::default(),
            pos: PagedPos::default(),
            err: None,
        }
    }
}
