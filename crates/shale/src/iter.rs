//! The internal iterator protocol shared by memtables, blocks, tables and the
//! merging iterator.
//!
//! Positions are *encoded internal keys* (see [`crate::format`]) in internal order.
//! An iterator is either positioned on an entry (`valid()`) or not. An I/O or
//! corruption error makes it invalid and is reported by `status()`; after an error
//! the iterator stays invalid until the next seek.

use crate::error::Result;
use crate::format::compare_internal;

/// A cursor over internal entries in internal-key order.
pub(crate) trait InternalIterator: Send {
    /// True if positioned on an entry.
    fn valid(&self) -> bool;
    /// Positions on the first entry.
    fn seek_to_first(&mut self);
    /// Positions on the last entry.
    fn seek_to_last(&mut self);
    /// Positions on the first entry `>= target` (an encoded internal key).
    fn seek(&mut self, target: &[u8]);
    /// Positions on the last entry `<= target`.
    fn seek_for_prev(&mut self, target: &[u8]);
    /// Moves to the next entry. Requires `valid()`.
    fn next(&mut self);
    /// Moves to the previous entry. Requires `valid()`.
    fn prev(&mut self);
    /// The current encoded internal key. Requires `valid()`.
    fn key(&self) -> &[u8];
    /// The current value. Requires `valid()`.
    fn value(&self) -> &[u8];
    /// The first error met, if any.
    fn status(&self) -> Result<()>;
}

/// Merges several internal iterators into one sorted stream.
///
/// Children are few (memtables, L0 tables, one iterator per deeper level), so the
/// current child is found by a linear scan rather than a heap. Entries with equal
/// keys cannot occur across children (sequence numbers are unique); ties are
/// broken by child order.
///
/// A child's error stops the merge: the iterator becomes invalid with that error
/// (until the next seek) instead of going on without the child, whose missing
/// entries (a tombstone, say) would make the merged stream silently wrong.
pub(crate) struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
    forward: bool,
    error: Option<crate::error::Error>,
}

impl MergingIterator {
    pub(crate) fn new(children: Vec<Box<dyn InternalIterator>>) -> MergingIterator {
        MergingIterator {
            children,
            current: None,
            forward: true,
            error: None,
        }
    }

    /// Records the first error of any child; true if there is one (then the
    /// iterator is invalid). An error makes a child invalid, so only invalid
    /// children (exhausted or failed) are asked: a step of a long merge pays
    /// nothing for the children still positioned.
    fn failed(&mut self) -> bool {
        if self.error.is_none() {
            self.error = self
                .children
                .iter()
                .filter(|c| !c.valid())
                .find_map(|c| c.status().err());
        }
        if self.error.is_some() {
            self.current = None;
        }
        self.error.is_some()
    }

    fn find_smallest(&mut self) {
        if self.failed() {
            return;
        }
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate() {
            if !c.valid() {
                continue;
            }
            best = match best {
                Some(b) if compare_internal(self.children[b].key(), c.key()).is_le() => Some(b),
                _ => Some(i),
            };
        }
        self.current = best;
    }

    fn find_largest(&mut self) {
        if self.failed() {
            return;
        }
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate().rev() {
            if !c.valid() {
                continue;
            }
            best = match best {
                Some(b) if compare_internal(self.children[b].key(), c.key()).is_ge() => Some(b),
                _ => Some(i),
            };
        }
        self.current = best;
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        self.error = None;
        self.children.iter_mut().for_each(|c| c.seek_to_first());
        self.forward = true;
        self.find_smallest();
    }

    fn seek_to_last(&mut self) {
        self.error = None;
        self.children.iter_mut().for_each(|c| c.seek_to_last());
        self.forward = false;
        self.find_largest();
    }

    fn seek(&mut self, target: &[u8]) {
        self.error = None;
        self.children.iter_mut().for_each(|c| c.seek(target));
        self.forward = true;
        self.find_smallest();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.error = None;
        self.children
            .iter_mut()
            .for_each(|c| c.seek_for_prev(target));
        self.forward = false;
        self.find_largest();
    }

    fn next(&mut self) {
        let Some(cur) = self.current else { return };
        if !self.forward {
            // Put every other child on its first entry after the current key.
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.seek(&key);
                    if c.valid() && compare_internal(c.key(), &key).is_eq() {
                        c.next();
                    }
                }
            }
            self.forward = true;
        }
        self.children[cur].next();
        self.find_smallest();
    }

    fn prev(&mut self) {
        let Some(cur) = self.current else { return };
        if self.forward {
            // Put every other child on its last entry before the current key.
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.seek_for_prev(&key);
                    if c.valid() && compare_internal(c.key(), &key).is_eq() {
                        c.prev();
                    }
                }
            }
            self.forward = false;
        }
        self.children[cur].prev();
        self.find_largest();
    }

    fn key(&self) -> &[u8] {
        match self.current {
            Some(i) => self.children[i].key(),
            None => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match self.current {
            Some(i) => self.children[i].value(),
            None => &[],
        }
    }

    fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.clone()),
            None => self.children.iter().try_for_each(|c| c.status()),
        }
    }
}

/// Opens the iterator of one file of a level.
pub(crate) type OpenFn<F> = Box<dyn Fn(&F) -> Result<Box<dyn InternalIterator>> + Send>;
/// The largest internal key of one file of a level.
pub(crate) type LargestFn<F> = Box<dyn Fn(&F) -> &[u8] + Send>;

/// Iterates over the key-ordered, non-overlapping tables of one level, opening
/// each table only when the cursor reaches it.
pub(crate) struct ConcatIterator<F> {
    files: Vec<F>,
    open: OpenFn<F>,
    largest: LargestFn<F>,
    index: usize,
    current: Option<Box<dyn InternalIterator>>,
    error: Option<crate::error::Error>,
}

impl<F: Send> ConcatIterator<F> {
    /// `files` in key order; `largest(f)` is the file's largest internal key.
    pub(crate) fn new(files: Vec<F>, open: OpenFn<F>, largest: LargestFn<F>) -> Self {
        ConcatIterator {
            files,
            open,
            largest,
            index: 0,
            current: None,
            error: None,
        }
    }

    fn open_at(&mut self, index: usize) -> bool {
        self.index = index;
        self.current = None;
        let Some(f) = self.files.get(index) else {
            return false;
        };
        match (self.open)(f) {
            Ok(it) => {
                self.current = Some(it);
                true
            }
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }

    fn skip_forward(&mut self) {
        while self
            .current
            .as_ref()
            .is_some_and(|c| !c.valid() && c.status().is_ok())
        {
            if !self.open_at(self.index + 1) {
                return;
            }
            if let Some(c) = self.current.as_mut() {
                c.seek_to_first();
            }
        }
    }

    fn skip_backward(&mut self) {
        while self
            .current
            .as_ref()
            .is_some_and(|c| !c.valid() && c.status().is_ok())
        {
            if self.index == 0 || !self.open_at(self.index - 1) {
                self.current = None;
                return;
            }
            if let Some(c) = self.current.as_mut() {
                c.seek_to_last();
            }
        }
    }
}

impl<F: Send> InternalIterator for ConcatIterator<F> {
    fn valid(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.valid())
    }

    fn seek_to_first(&mut self) {
        self.error = None;
        if self.open_at(0) {
            if let Some(c) = self.current.as_mut() {
                c.seek_to_first();
            }
            self.skip_forward();
        }
    }

    fn seek_to_last(&mut self) {
        self.error = None;
        if !self.files.is_empty() && self.open_at(self.files.len() - 1) {
            if let Some(c) = self.current.as_mut() {
                c.seek_to_last();
            }
            self.skip_backward();
        }
    }

    fn seek(&mut self, target: &[u8]) {
        self.error = None;
        let largest = &self.largest;
        let i = self
            .files
            .partition_point(|f| compare_internal(largest(f), target).is_lt());
        if self.open_at(i) {
            if let Some(c) = self.current.as_mut() {
                c.seek(target);
            }
            self.skip_forward();
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.error = None;
        let largest = &self.largest;
        let i = self
            .files
            .partition_point(|f| compare_internal(largest(f), target).is_lt());
        let i = i.min(self.files.len().saturating_sub(1));
        if !self.files.is_empty() && self.open_at(i) {
            if let Some(c) = self.current.as_mut() {
                c.seek_for_prev(target);
            }
            self.skip_backward();
        }
    }

    fn next(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.next();
        }
        self.skip_forward();
    }

    fn prev(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.prev();
        }
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |c| c.key())
    }

    fn value(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |c| c.value())
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        self.current.as_ref().map_or(Ok(()), |c| c.status())
    }
}
