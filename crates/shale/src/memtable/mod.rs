//! STUB: interface only; implementation in progress.
use std::sync::Arc;

use crate::format::{SeqNo, ValueKind};

/// A concurrent sorted in-memory table.
pub struct MemTable;

/// Result of a memtable lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemGet {
    /// The newest visible entry is a value.
    Value(Vec<u8>),
    /// The newest visible entry is a deletion.
    Deleted,
    /// No entry for the key at or below the sequence number.
    Absent,
}

impl MemTable {
    /// An empty memtable.
    pub fn new() -> MemTable {
        todo!()
    }
    /// Adds an entry. Safe to call from several threads at once.
    pub fn add(&self, seq: SeqNo, kind: ValueKind, key: &[u8], value: &[u8]) {
        let _ = (seq, kind, key, value);
        todo!()
    }
    /// The newest entry for `key` with sequence number `<= seq`.
    pub fn get(&self, key: &[u8], seq: SeqNo) -> MemGet {
        let _ = (key, seq);
        todo!()
    }
    /// Approximate memory used, in bytes.
    pub fn approximate_bytes(&self) -> usize {
        todo!()
    }
    /// Number of entries.
    pub fn len(&self) -> usize {
        todo!()
    }
    /// True if empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// An iterator over a shared memtable.
    pub fn iter(self: &Arc<Self>) -> MemTableIterator {
        todo!()
    }
}

/// Iterator over a memtable (implements [`crate::iter::InternalIterator`]).
pub struct MemTableIterator;
impl crate::iter::InternalIterator for MemTableIterator {
    fn valid(&self) -> bool {
        todo!()
    }
    fn seek_to_first(&mut self) {
        todo!()
    }
    fn seek_to_last(&mut self) {
        todo!()
    }
    fn seek(&mut self, _: &[u8]) {
        todo!()
    }
    fn seek_for_prev(&mut self, _: &[u8]) {
        todo!()
    }
    fn next(&mut self) {
        todo!()
    }
    fn prev(&mut self) {
        todo!()
    }
    fn key(&self) -> &[u8] {
        todo!()
    }
    fn value(&self) -> &[u8] {
        todo!()
    }
    fn status(&self) -> crate::error::Result<()> {
        todo!()
    }
}
