//! Entry points of the micro-benchmarks of engine internals
//! (`benches/internals.rs`): a data-block seek, a locator lookup, a filter
//! probe and a memtable insert, each on structures built here from plain
//! keys. Not part of the API: compiled only with the `bench-internals`
//! feature.

use crate::format::{pack_trailer, InternalKey, ValueKind, MAX_SEQNO, TRAILER_LEN};
use crate::memtable::MemTable;
use crate::options::fuse_fingerprint_bits;
use crate::table::block::{cmp_internal_to, Block, BlockBuilder, Cursor, EntryFormat};
use crate::table::filter::filter_hash;
use crate::table::filter::fuse::{build_fuse, FuseFilter};
use crate::table::paged::{encode_locator, BlockSpan, Locator};

/// A data block of one version of each of its keys.
pub struct DataBlock {
    block: Block,
}

impl DataBlock {
    /// A block of `keys` (sorted, distinct user keys) with `value_len`-byte
    /// values and a restart point every `restart_interval` entries.
    pub fn new(keys: &[Vec<u8>], value_len: usize, restart_interval: usize) -> DataBlock {
        let mut b = BlockBuilder::new(EntryFormat::Data, restart_interval);
        let value = vec![7u8; value_len];
        for k in keys {
            b.add_data(InternalKey::new(k, 1, ValueKind::Value).encoded(), &value);
        }
        let block = Block::new(b.finish(), EntryFormat::Data)
            .unwrap_or_else(|c| panic!("bench block does not decode: {}", c.0));
        DataBlock { block }
    }

    /// Seeks `user_key`'s newest version as a Get does; true if found.
    pub fn seek(&self, user_key: &[u8]) -> bool {
        let trailer = pack_trailer(MAX_SEQNO, ValueKind::SEEK);
        let mut cur = Cursor::default();
        if cur
            .seek_by(&self.block, |k| cmp_internal_to(k, user_key, trailer))
            .is_err()
        {
            return false;
        }
        cur.valid()
            && cur.key().len() == user_key.len() + TRAILER_LEN
            && cur.key().starts_with(user_key)
    }
}

/// A version-3 locator over data blocks of `keys_per_block` keys each.
pub struct LocatorIndex {
    locator: Locator,
}

impl LocatorIndex {
    /// The locator of `keys` (sorted, distinct) cut into blocks.
    pub fn new(keys: &[Vec<u8>], keys_per_block: usize) -> LocatorIndex {
        let spans: Vec<BlockSpan> = keys
            .chunks(keys_per_block.max(1))
            .map(|c| BlockSpan {
                first: c.first().cloned().unwrap_or_default(),
                last: c.last().cloned().unwrap_or_default(),
                pages: 1,
            })
            .collect();
        let locator = Locator::new(encode_locator(0, &spans))
            .unwrap_or_else(|c| panic!("bench locator does not decode: {}", c.0));
        LocatorIndex { locator }
    }

    /// The first block that can hold `key`.
    pub fn find(&self, key: &[u8]) -> usize {
        self.locator.find(key)
    }

    /// Bytes of the encoded locator.
    pub fn size(&self) -> usize {
        self.locator.size()
    }
}

/// A binary fuse filter of keys, as a table's filter partition holds.
pub struct Filter {
    fuse: FuseFilter,
}

impl Filter {
    /// The filter of `keys` at `bits_per_key`.
    pub fn new(keys: &[Vec<u8>], bits_per_key: u32) -> Filter {
        let hashes: Vec<u64> = keys.iter().map(|k| filter_hash(k)).collect();
        let fuse = FuseFilter::new(build_fuse(&hashes, fuse_fingerprint_bits(bits_per_key)))
            .unwrap_or_else(|c| panic!("bench filter does not decode: {}", c.0));
        Filter { fuse }
    }

    /// True if `key` may be in the set.
    pub fn may_contain(&self, key: &[u8]) -> bool {
        self.fuse.may_contain(key)
    }
}

/// A memtable taking inserts with increasing sequence numbers.
#[derive(Default)]
pub struct Memtable {
    mem: MemTable,
    seq: u64,
}

impl Memtable {
    /// Inserts `key` -> `value` at the next sequence number.
    pub fn insert(&mut self, key: &[u8], value: &[u8]) {
        self.seq += 1;
        self.mem.add(self.seq, ValueKind::Value, key, value);
    }

    /// Approximate bytes held.
    pub fn bytes(&self) -> usize {
        self.mem.approximate_bytes()
    }
}
