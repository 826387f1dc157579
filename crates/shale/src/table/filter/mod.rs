//! Table filters over user keys: the blocked Bloom filter ([`bloom`], a whole
//! table's in versions 1 and 2, a partition's in version 3) and the binary
//! fuse filter ([`fuse`], version-3 partitions), both built from and probed
//! with [`filter_hash`]. A version-3 partition is either kind, told apart by
//! its format byte ([`PartitionFilter`]).

pub(crate) mod bloom;
pub(crate) mod fuse;
mod hash;

pub(crate) use bloom::{build_filter, Filter, FILTER_TRAILER};
pub(crate) use hash::filter_hash;

use crate::table::block::Corrupt;

/// A version-3 filter partition: a blocked Bloom filter or a binary fuse
/// filter, told apart by the format byte that ends both.
#[derive(Debug)]
pub(crate) enum PartitionFilter {
    /// Format 1.
    Bloom(Filter),
    /// Format 2.
    Fuse(fuse::FuseFilter),
}

impl PartitionFilter {
    /// Decodes a filter partition of either kind.
    pub(crate) fn new(data: Vec<u8>) -> Result<PartitionFilter, Corrupt> {
        match fuse::filter_format(&data) {
            Some(fuse::FILTER_FORMAT_FUSE) => {
                fuse::FuseFilter::new(data).map(PartitionFilter::Fuse)
            }
            _ => Filter::new(data).map(PartitionFilter::Bloom),
        }
    }

    /// False only if no key with this user key was added.
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        match self {
            PartitionFilter::Bloom(f) => f.may_contain(user_key),
            PartitionFilter::Fuse(f) => f.may_contain(user_key),
        }
    }

    /// The partition's contents as stored (format trailer included).
    pub(crate) fn stored_len(&self) -> usize {
        match self {
            PartitionFilter::Bloom(f) => f.size() + FILTER_TRAILER,
            PartitionFilter::Fuse(f) => f.size(),
        }
    }
}
