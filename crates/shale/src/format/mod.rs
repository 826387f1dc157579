//! The shared vocabulary of every on-disk format: internal keys, sequence
//! numbers, value kinds, varints, checksums and format versions.

mod coding;
mod keys;

pub(crate) use coding::{
    decode_fixed32, decode_fixed64, get_length_prefixed, get_varint32, get_varint64, put_fixed32,
    put_fixed64, put_length_prefixed, put_varint32, put_varint64, varint_len,
};
pub(crate) use keys::compare_bytes;
pub(crate) use keys::{compare_internal, pack_trailer, InternalKey, MAX_SEQNO, TRAILER_LEN};
pub use keys::{parse_internal_key, user_key_text, InternalKeyRef, SeqNo, ValueKind};

/// CRC32C with the masking LevelDB introduced: a CRC stored next to the data it
/// covers is rotated and offset, so that the CRC of a string containing embedded
/// CRCs stays well distributed.
pub(crate) fn masked_crc(data: &[u8]) -> u32 {
    mask_crc(crc32c::crc32c(data))
}

/// CRC32C of `a` followed by `b`, masked.
pub(crate) fn masked_crc2(a: &[u8], b: &[u8]) -> u32 {
    mask_crc(crc32c::crc32c_append(crc32c::crc32c(a), b))
}

/// Number of levels: L0 and L1..L6.
pub const NUM_LEVELS: usize = 7;

const MASK_DELTA: u32 = 0xa282_ead8;

/// LevelDB's masking of a stored CRC (rotate right by 15, add a constant), so
/// that a CRC of data holding CRCs is not weak.
pub(crate) fn mask_crc(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Version of the table format written by this build by default (see
/// `docs/format/table.md`): 4, page-structured tables (data blocks, filter
/// partitions and locators each on a page, as in version 3) that may carry a
/// range-deletion block. Versions 1 (blocks back to back), 2 (page-aligned
/// data blocks) and 3 are still read, and written when asked, but for a table
/// holding range deletions, which is always version 4.
pub const TABLE_FORMAT_VERSION: u32 = 4;
/// The first table format version that carries range deletions.
pub(crate) const RANGE_DEL_TABLE_FORMAT_VERSION: u32 = 4;
/// The oldest table format version this build reads.
pub const MIN_TABLE_FORMAT_VERSION: u32 = 1;
/// Version of the database layout (WAL, manifest, `CURRENT`) written by this build.
pub const DB_FORMAT_VERSION: u32 = 1;
