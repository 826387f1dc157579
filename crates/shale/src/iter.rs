//! The internal iterator protocol shared by memtables, blocks, tables and the
//! merging iterator.
//!
//! Positions are *encoded internal keys* (see [`crate::format`]) in internal order.
//! An iterator is either positioned on an entry (`valid()`) or not. An I/O or
//! corruption error makes it invalid and is reported by `status()`; after an error
//! the iterator stays invalid until the next seek.

use crate::error::Result;

/// A cursor over internal entries in internal-key order.
pub trait InternalIterator: Send {
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
