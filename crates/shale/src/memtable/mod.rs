//! The memtable: a concurrent sorted map of internal keys to values.
//!
//! Entries are never removed or changed; a delete adds a tombstone with a newer
//! sequence number. Lookups find the newest entry at or below a sequence number,
//! so a memtable serves every snapshot at once.
//!
//! # Concurrency
//!
//! Built on a lock-free skiplist (`crossbeam_skiplist::SkipMap`): any number of
//! threads may `add` and `get` at the same time, and readers never wait for
//! writers. The write path still adds the entries of one batch from one thread,
//! and publishes the batch's sequence numbers only after all of them are in, so a
//! reader never observes half a batch.
//!
//! A live database's memtables carry a [`KeyFilter`] over their user keys
//! ([`Options::memtable_filter`](crate::Options::memtable_filter)): a Get of
//! a key the memtable lacks, the common case for random keys, reads one
//! cache line of it instead of searching the skiplist.
//!
//! Range deletions sit beside the skiplist, as written and as [`Fragments`]
//! rebuilt by the first read after a change (so a batch of many costs one
//! rebuild; a lookup is one binary search, and none at all while there are
//! none).

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use crossbeam_skiplist::SkipMap;
use parking_lot::RwLock;

use crate::format::{InternalKey, SeqNo, ValueKind};
use crate::rangedel::{Fragments, RangeTombstone};

mod filter;

use filter::KeyFilter;

/// Bytes charged per entry beyond its key and value: skiplist node, tower and the
/// two heap allocations (a rough figure, so that `write_buffer_size` tracks real
/// memory).
const ENTRY_OVERHEAD: usize = 80;

/// A concurrent sorted in-memory table.
pub(crate) struct MemTable {
    map: SkipMap<InternalKey, Vec<u8>>,
    /// Every user key of `map`, if the memtable has a filter.
    filter: Option<KeyFilter>,
    /// True once an entry was added (set before the entry: a reader that
    /// can see an entry sees it). While false a Get answers at once,
    /// without hashing its key for the filter: a database opened to be
    /// read has an empty memtable.
    has_entries: AtomicBool,
    bytes: AtomicUsize,
    /// True once a range deletion was added (read without the lock).
    has_range_dels: AtomicBool,
    range_dels: RwLock<RangeDels>,
}

/// The memtable's range deletions: as written, and fragmented (`None`
/// after a change, until the next read rebuilds it).
#[derive(Default)]
struct RangeDels {
    written: Vec<RangeTombstone>,
    fragments: Option<Arc<Fragments>>,
}

/// Result of a memtable lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MemGet {
    /// The newest visible entry is a value.
    Value(Vec<u8>),
    /// The newest visible entry is a deletion, or a range deletion newer
    /// than the newest visible entry covers the key (older sources hold only
    /// older versions, so the key is deleted).
    Deleted,
    /// No entry for the key at or below the sequence number.
    Absent,
}

impl Default for MemTable {
    fn default() -> Self {
        MemTable::new()
    }
}

impl MemTable {
    /// An empty memtable without a key filter (recovery and repair, which
    /// only add and then flush).
    pub(crate) fn new() -> MemTable {
        MemTable {
            map: SkipMap::new(),
            filter: None,
            has_entries: AtomicBool::new(false),
            bytes: AtomicUsize::new(0),
            has_range_dels: AtomicBool::new(false),
            range_dels: RwLock::new(RangeDels::default()),
        }
    }

    /// An empty memtable with a key filter of about `filter_bytes` (none for
    /// 0), counted in [`MemTable::approximate_bytes`] from the start.
    pub(crate) fn with_filter(filter_bytes: usize) -> MemTable {
        let mut m = MemTable::new();
        if filter_bytes > 0 {
            let f = KeyFilter::new(filter_bytes);
            m.bytes = AtomicUsize::new(f.bytes());
            m.filter = Some(f);
        }
        m
    }

    /// Adds an entry. Safe to call from several threads at once. `(key, seq)`
    /// must be new to this memtable (sequence numbers are unique). A range
    /// deletion (`RangeDelete`) has its start as `key` and its end as `value`.
    pub(crate) fn add(&self, seq: SeqNo, kind: ValueKind, key: &[u8], value: &[u8]) {
        if kind == ValueKind::RangeDelete {
            self.add_range_delete(seq, key, value);
            return;
        }
        let ikey = InternalKey::new(key, seq, kind);
        let charge = ikey.encoded().len() + value.len() + ENTRY_OVERHEAD;
        // Before the entry: a reader that finds the entry finds its bits.
        if !self.has_entries.load(Ordering::Relaxed) {
            self.has_entries.store(true, Ordering::Release);
        }
        if let Some(f) = &self.filter {
            f.add(key);
        }
        self.map.insert(ikey, value.to_vec());
        self.bytes.fetch_add(charge, Ordering::Relaxed);
    }

    fn add_range_delete(&self, seq: SeqNo, start: &[u8], end: &[u8]) {
        let charge = start.len() + end.len() + ENTRY_OVERHEAD;
        let mut dels = self.range_dels.write();
        dels.written.push(RangeTombstone {
            start: start.to_vec(),
            end: end.to_vec(),
            seq,
        });
        dels.fragments = None;
        self.has_range_dels.store(true, Ordering::Release);
        self.bytes.fetch_add(charge, Ordering::Relaxed);
    }

    /// The range deletions, fragmented (all of them: readers filter by
    /// sequence number).
    pub(crate) fn range_dels(&self) -> Arc<Fragments> {
        if !self.has_range_dels.load(Ordering::Acquire) {
            return Arc::default();
        }
        if let Some(f) = &self.range_dels.read().fragments {
            return f.clone();
        }
        let mut dels = self.range_dels.write();
        let rebuilt = match &dels.fragments {
            Some(f) => f.clone(),
            None => Arc::new(Fragments::build(dels.written.clone())),
        };
        dels.fragments = Some(rebuilt.clone());
        rebuilt
    }

    /// The newest entry for `key` with sequence number `<= seq`, unless a
    /// range deletion visible at `seq` deletes it.
    pub(crate) fn get(&self, key: &[u8], seq: SeqNo) -> MemGet {
        let deleted_at = if self.has_range_dels.load(Ordering::Acquire) {
            self.range_dels().covering_seq(key, seq)
        } else {
            None
        };
        if !self.has_entries.load(Ordering::Acquire)
            || self.filter.as_ref().is_some_and(|f| !f.may_contain(key))
        {
            return match deleted_at {
                Some(_) => MemGet::Deleted,
                None => MemGet::Absent,
            };
        }
        let target = InternalKey::seek_key(key, seq);
        let found = self
            .map
            .lower_bound(Bound::Included(&target))
            .filter(|e| e.key().user_key() == key);
        let Some(entry) = found else {
            return match deleted_at {
                Some(_) => MemGet::Deleted,
                None => MemGet::Absent,
            };
        };
        let found = entry.key().as_ref();
        if deleted_at.is_some_and(|t| t > found.seq) {
            return MemGet::Deleted;
        }
        match found.value_kind() {
            Some(ValueKind::Value) => MemGet::Value(entry.value().clone()),
            Some(ValueKind::Delete) => MemGet::Deleted,
            // `add` keeps range deletions out of the skiplist.
            Some(ValueKind::RangeDelete) | None => MemGet::Absent,
        }
    }

    /// Approximate memory used, in bytes.
    pub(crate) fn approximate_bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Number of entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// True if it holds no entry and no range deletion.
    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty() && !self.has_range_dels.load(Ordering::Acquire)
    }

    /// Calls `f` on every entry in internal-key order, stopping at its first
    /// error. A single pass over the skiplist, cheaper than [`MemTable::iter`]
    /// (which searches from its copied key at every step): the flush path.
    pub(crate) fn for_each<E>(
        &self,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        for e in self.map.iter() {
            f(e.key().encoded(), e.value())?;
        }
        Ok(())
    }

    /// An iterator over a shared memtable. It sees entries added after its
    /// creation too; callers bound what they read by sequence number.
    pub(crate) fn iter(self: &Arc<Self>) -> MemTableIterator {
        MemTableIterator {
            mem: self.clone(),
            current: None,
        }
    }
}

/// Iterator over a memtable (implements [`crate::iter::InternalIterator`]).
///
/// Holds a copy of the current entry; each step is a skiplist search from the
/// copied key, which keeps the iterator free of borrows so that it can be stored
/// next to the `Arc` it reads.
pub(crate) struct MemTableIterator {
    mem: Arc<MemTable>,
    current: Option<(InternalKey, Vec<u8>)>,
}

type Entry<'a> = crossbeam_skiplist::map::Entry<'a, InternalKey, Vec<u8>>;

fn copy(e: Option<Entry<'_>>) -> Option<(InternalKey, Vec<u8>)> {
    e.map(|e| (e.key().clone(), e.value().clone()))
}

/// An internal key to compare against, if `target` is long enough to be one.
fn target_key(target: &[u8]) -> Option<InternalKey> {
    InternalKey::seek_target(target)
}

impl crate::iter::InternalIterator for MemTableIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }
    fn seek_to_first(&mut self) {
        self.current = copy(self.mem.map.front());
    }
    fn seek_to_last(&mut self) {
        self.current = copy(self.mem.map.back());
    }
    fn seek(&mut self, target: &[u8]) {
        self.current =
            target_key(target).and_then(|t| copy(self.mem.map.lower_bound(Bound::Included(&t))));
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.current =
            target_key(target).and_then(|t| copy(self.mem.map.upper_bound(Bound::Included(&t))));
    }
    fn next(&mut self) {
        self.current = match &self.current {
            Some((k, _)) => copy(self.mem.map.lower_bound(Bound::Excluded(k))),
            None => None,
        };
    }
    fn prev(&mut self) {
        self.current = match &self.current {
            Some((k, _)) => copy(self.mem.map.upper_bound(Bound::Excluded(k))),
            None => None,
        };
    }
    fn key(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |(k, _)| k.encoded())
    }
    fn value(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |(_, v)| v.as_slice())
    }
    fn status(&self) -> crate::error::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::InternalIterator;

    /// A memtable without a key filter, one with a small filter (many
    /// false positives) and one with a large filter.
    fn variants() -> [MemTable; 3] {
        [
            MemTable::new(),
            MemTable::with_filter(64),
            MemTable::with_filter(1 << 16),
        ]
    }

    #[test]
    fn get_sees_the_newest_entry_at_or_below_a_sequence() {
        for m in variants() {
            get_sees_the_newest_entry(m);
        }
    }

    fn get_sees_the_newest_entry(m: MemTable) {
        m.add(1, ValueKind::Value, b"a", b"a1");
        m.add(2, ValueKind::Value, b"b", b"b2");
        m.add(3, ValueKind::Delete, b"a", b"");
        m.add(4, ValueKind::Value, b"a", b"a4");
        assert_eq!(m.get(b"a", 0), MemGet::Absent);
        assert_eq!(m.get(b"a", 1), MemGet::Value(b"a1".to_vec()));
        assert_eq!(m.get(b"a", 2), MemGet::Value(b"a1".to_vec()));
        assert_eq!(m.get(b"a", 3), MemGet::Deleted);
        assert_eq!(m.get(b"a", 9), MemGet::Value(b"a4".to_vec()));
        assert_eq!(m.get(b"b", 9), MemGet::Value(b"b2".to_vec()));
        assert_eq!(m.get(b"c", 9), MemGet::Absent);
        assert_eq!(m.get(b"", 9), MemGet::Absent);
        assert_eq!(m.len(), 4);
        assert!(m.approximate_bytes() > 4 * ENTRY_OVERHEAD);
    }

    #[test]
    fn range_deletions_hide_older_versions_only() {
        for m in variants() {
            range_deletions_hide_older_versions(m);
        }
    }

    fn range_deletions_hide_older_versions(m: MemTable) {
        m.add(1, ValueKind::Value, b"b", b"b1");
        m.add(2, ValueKind::RangeDelete, b"a", b"c");
        m.add(3, ValueKind::Value, b"b", b"b3");
        assert!(!m.is_empty());
        assert_eq!(m.get(b"b", 1), MemGet::Value(b"b1".to_vec()));
        assert_eq!(m.get(b"b", 2), MemGet::Deleted);
        assert_eq!(m.get(b"b", 3), MemGet::Value(b"b3".to_vec()));
        // No entry here, but older sources must not be asked either.
        assert_eq!(m.get(b"a", 2), MemGet::Deleted);
        assert_eq!(m.get(b"a", 1), MemGet::Absent);
        assert_eq!(m.get(b"c", 9), MemGet::Absent, "the end is exclusive");
        assert_eq!(m.range_dels().count(), 1);
        assert_eq!(m.len(), 2, "the range deletion is not a skiplist entry");
        let empty = MemTable::new();
        empty.add(1, ValueKind::RangeDelete, b"x", b"y");
        assert!(
            !empty.is_empty(),
            "a memtable of one range deletion is flushed"
        );
        // No skiplist entry: the Get answers without its filter, and still
        // from the range deletion.
        assert_eq!(empty.get(b"x", 1), MemGet::Deleted);
        assert_eq!(empty.get(b"x", 0), MemGet::Absent);
    }

    #[test]
    fn iterator_walks_both_ways_in_internal_order() {
        let m = Arc::new(MemTable::new());
        for (seq, k) in [(5, "c"), (1, "a"), (3, "b"), (4, "a"), (2, "c")] {
            m.add(seq, ValueKind::Value, k.as_bytes(), k.as_bytes());
        }
        let mut it = m.iter();
        it.seek_to_first();
        let mut fwd = Vec::new();
        while it.valid() {
            fwd.push(
                InternalKey::from_encoded(it.key().to_vec())
                    .expect("key")
                    .to_string(),
            );
            it.next();
        }
        let expect = ["a#4,SET", "a#1,SET", "b#3,SET", "c#5,SET", "c#2,SET"];
        assert_eq!(fwd, expect);
        it.seek_to_last();
        let mut bwd = Vec::new();
        while it.valid() {
            bwd.push(
                InternalKey::from_encoded(it.key().to_vec())
                    .expect("key")
                    .to_string(),
            );
            it.prev();
        }
        bwd.reverse();
        assert_eq!(fwd, bwd);
        it.seek(InternalKey::seek_key(b"b", 9).encoded());
        assert_eq!(it.value(), b"b");
        it.seek_for_prev(InternalKey::seek_key(b"b", 9).encoded());
        assert_eq!(it.value(), b"a", "last entry before b's newest");
        it.status().expect("no error");
    }

    #[test]
    fn concurrent_adds_are_all_visible() {
        for m in variants() {
            concurrent_adds_visible(Arc::new(m));
        }
    }

    #[test]
    fn a_filter_is_counted_in_the_memtable_size() {
        let m = MemTable::with_filter(4096);
        assert_eq!(m.approximate_bytes(), 4096);
        assert!(m.is_empty(), "a filter is not an entry");
        assert_eq!(MemTable::with_filter(0).approximate_bytes(), 0);
        // A Get of an absent key is refused by the filter before the search:
        // the answer is the same either way.
        m.add(1, ValueKind::Value, b"k", b"v");
        assert_eq!(m.get(b"k", 1), MemGet::Value(b"v".to_vec()));
        assert_eq!(m.get(b"other", 1), MemGet::Absent);
    }

    fn concurrent_adds_visible(m: Arc<MemTable>) {
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let m = m.clone();
                s.spawn(move || {
                    for i in 0..1000u64 {
                        let k = format!("k{:05}", i * 4 + t);
                        m.add(i * 4 + t + 1, ValueKind::Value, k.as_bytes(), b"v");
                    }
                });
            }
        });
        assert_eq!(m.len(), 4000);
        for i in 0..4000u64 {
            let k = format!("k{i:05}");
            assert_eq!(
                m.get(k.as_bytes(), u64::MAX >> 8),
                MemGet::Value(b"v".to_vec())
            );
        }
    }
}
