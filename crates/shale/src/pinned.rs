//! Values returned without a copy: [`PinnedValue`], what
//! [`Db::get_pinned`](crate::Db::get_pinned) returns.

use std::fmt;
use std::ops::{Deref, Range};
use std::sync::Arc;

use crate::table::cached::CachedBlock;

/// A value read by [`Db::get_pinned`](crate::Db::get_pinned): a slice of the
/// cached data block that holds it (no copy; the block stays in memory while
/// the value lives, even if the cache evicts it meanwhile), or an owned copy
/// when it came from a memtable. Dereferences to `[u8]`. `Send + Sync`.
#[derive(Clone)]
pub struct PinnedValue(Repr);

#[derive(Clone)]
enum Repr {
    Owned(Vec<u8>),
    Block {
        block: Arc<CachedBlock>,
        range: Range<usize>,
    },
}

impl PinnedValue {
    /// An owned value.
    pub(crate) fn owned(v: Vec<u8>) -> PinnedValue {
        PinnedValue(Repr::Owned(v))
    }

    /// `range` of the data block `block`; `None` if the block is not a data
    /// block or the range lies outside it (so that `deref` never fails).
    pub(crate) fn in_block(block: Arc<CachedBlock>, range: Range<usize>) -> Option<PinnedValue> {
        block.as_block()?.slice(range.clone())?;
        Some(PinnedValue(Repr::Block { block, range }))
    }

    /// True if the value is a slice of a cached block (not a copy).
    pub fn is_pinned(&self) -> bool {
        matches!(self.0, Repr::Block { .. })
    }

    /// The value as a `Vec` (a copy when pinned).
    pub fn into_vec(self) -> Vec<u8> {
        match self.0 {
            Repr::Owned(v) => v,
            Repr::Block { .. } => self.deref().to_vec(),
        }
    }
}

impl Deref for PinnedValue {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.0 {
            Repr::Owned(v) => v,
            // Checked in `in_block`; blocks are immutable.
            Repr::Block { block, range } => block
                .as_block()
                .and_then(|b| b.slice(range.clone()))
                .unwrap_or_default(),
        }
    }
}

impl AsRef<[u8]> for PinnedValue {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl PartialEq for PinnedValue {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for PinnedValue {}

impl PartialEq<[u8]> for PinnedValue {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}

impl PartialEq<Vec<u8>> for PinnedValue {
    fn eq(&self, other: &Vec<u8>) -> bool {
        **self == other[..]
    }
}

impl From<Vec<u8>> for PinnedValue {
    fn from(v: Vec<u8>) -> Self {
        PinnedValue::owned(v)
    }
}

impl fmt::Debug for PinnedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedValue")
            .field("pinned", &self.is_pinned())
            .field("len", &self.len())
            .finish()
    }
}
