//! File-level framing: block trailers, the footer and the properties block.
//!
//! Grammar (also in `docs/format/table.md`):
//!
//! ```text
//! table        := data_block* [filter_block] index_partition* top_index
//!                 [range_del_block] properties footer   // range_del_block: version 4
//! X_block      := contents trailer       // every block, including the properties
//! trailer      := compression:u8 crc:fixed32_le
//!                 // crc = masked_crc32c(contents ++ [compression])
//! contents     := raw                                  if compression == 0 (None)
//!               | uncompressed_len:varint64 lz4_block  if compression == 1 (Lz4)
//!
//! footer       := properties_handle top_index_handle filter_handle   // 48 bytes
//!                 format_version:fixed32_le footer_crc:fixed32_le magic:fixed64_le
//! handle       := offset:fixed64_le size:fixed64_le    // size excludes the trailer
//!                 // filter_handle.size == 0: no filter
//! footer_crc   := masked_crc32c(first 52 bytes of the footer)
//! magic        := fixed64_le(0x0be5_3145_4c41_4853)  // bytes "SHALE1" 0xe5 0x0b
//!
//! properties   := property*
//! property     := tag:varint32 len:varint32 payload:byte{len}
//!                 // integer payloads are one varint64 filling the payload, except
//!                 // file_size (tag 17): fixed64_le; keys (tags 13, 14): raw bytes.
//!                 // Unknown tags are skipped; a later duplicate wins.
//! ```

use super::block::{Corrupt, BLOCK_TRAILER_LEN};
use super::{Compression, TableProperties};
use crate::format::{
    decode_fixed32, decode_fixed64, get_varint32, get_varint64, masked_crc, masked_crc2,
    put_fixed32, put_fixed64, put_varint32, put_varint64, varint_len,
};

/// Size of the footer at the end of every table.
pub(crate) const FOOTER_LEN: u64 = 64;

/// Magic number closing every table file. Persisted: DO NOT CHANGE.
pub(crate) const TABLE_MAGIC: u64 = 0x0be5_3145_4c41_4853;

/// Location of a block: offset in the file and size of its contents (the trailer
/// follows).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BlockHandle {
    /// Offset of the block's first byte.
    pub offset: u64,
    /// Size of the stored contents, without the trailer.
    pub size: u64,
}

impl BlockHandle {
    /// Offset just past the block's trailer (saturating).
    pub(crate) fn end(&self) -> u64 {
        self.offset
            .saturating_add(self.size)
            .saturating_add(BLOCK_TRAILER_LEN)
    }
}

/// The decoded footer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Footer {
    /// The properties block.
    pub properties: BlockHandle,
    /// The top-level index block.
    pub top_index: BlockHandle,
    /// The filter block; `None` when the table has none.
    pub filter: Option<BlockHandle>,
    /// Table format version.
    pub format_version: u32,
}

impl Footer {
    /// Encodes the footer (exactly [`FOOTER_LEN`] bytes).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FOOTER_LEN as usize);
        for h in [
            self.properties,
            self.top_index,
            self.filter.unwrap_or_default(),
        ] {
            put_fixed64(&mut out, h.offset);
            put_fixed64(&mut out, h.size);
        }
        put_fixed32(&mut out, self.format_version);
        let crc = masked_crc(&out);
        put_fixed32(&mut out, crc);
        put_fixed64(&mut out, TABLE_MAGIC);
        debug_assert_eq!(out.len() as u64, FOOTER_LEN);
        out
    }

    /// Decodes a footer; the caller checks the version and the handles.
    pub(crate) fn decode(src: &[u8]) -> Result<Footer, Corrupt> {
        if src.len() as u64 != FOOTER_LEN {
            return Err(Corrupt("footer has the wrong length"));
        }
        let magic = src.get(56..).and_then(decode_fixed64);
        if magic != Some(TABLE_MAGIC) {
            return Err(Corrupt("bad magic number: not a shale table"));
        }
        let (body, crc) = src
            .split_at_checked(52)
            .ok_or(Corrupt("footer has the wrong length"))?;
        if decode_fixed32(crc) != Some(masked_crc(body)) {
            return Err(Corrupt("footer checksum mismatch"));
        }
        let field = |i: usize| {
            src.get(8 * i..)
                .and_then(decode_fixed64)
                .ok_or(Corrupt("footer has the wrong length"))
        };
        let handle = |i: usize| -> Result<BlockHandle, Corrupt> {
            Ok(BlockHandle {
                offset: field(2 * i)?,
                size: field(2 * i + 1)?,
            })
        };
        let filter = handle(2)?;
        Ok(Footer {
            properties: handle(0)?,
            top_index: handle(1)?,
            filter: (filter.size != 0).then_some(filter),
            format_version: src
                .get(48..)
                .and_then(decode_fixed32)
                .ok_or(Corrupt("footer has the wrong length"))?,
        })
    }
}

/// Builds a block trailer for `contents` stored with `compression`.
pub(crate) fn block_trailer(contents: &[u8], compression: Compression) -> [u8; 5] {
    let c = compression as u8;
    let crc = masked_crc2(contents, &[c]).to_le_bytes();
    [c, crc[0], crc[1], crc[2], crc[3]]
}

/// Checks the trailer of a block read with it and returns the uncompressed
/// contents. `raw` is `contents ++ trailer`.
pub(crate) fn unwrap_block(mut raw: Vec<u8>, verify: bool) -> Result<Vec<u8>, Corrupt> {
    let Some((contents, &[ctype, c0, c1, c2, c3])) =
        raw.split_last_chunk::<{ BLOCK_TRAILER_LEN as usize }>()
    else {
        return Err(Corrupt("block shorter than its trailer"));
    };
    if verify && u32::from_le_bytes([c0, c1, c2, c3]) != masked_crc2(contents, &[ctype]) {
        return Err(Corrupt("block checksum mismatch"));
    }
    raw.truncate(contents.len());
    decompress(raw, ctype)
}

/// The uncompressed form of block contents stored with compression byte `ctype`.
pub(crate) fn decompress(raw: Vec<u8>, ctype: u8) -> Result<Vec<u8>, Corrupt> {
    match ctype {
        0 => Ok(raw),
        1 => {
            let mut src = &raw[..];
            let n = get_varint64(&mut src).ok_or(Corrupt("bad uncompressed length"))?;
            // LZ4 expands at most ~255x; refuse absurd sizes before allocating.
            let limit = (src.len() as u64).saturating_mul(255).saturating_add(64);
            if n > limit || n > (1 << 31) {
                return Err(Corrupt("implausible uncompressed length"));
            }
            let mut out = vec![0u8; n as usize];
            match lz4_flex::block::decompress_into(src, &mut out) {
                Ok(got) if got as u64 == n => Ok(out),
                _ => Err(Corrupt("lz4 data does not decompress")),
            }
        }
        _ => Err(Corrupt("unknown compression type")),
    }
}

/// Compresses `raw` with LZ4 in the `contents` form above; `None` unless that
/// saves at least 1/8 of the bytes.
pub(crate) fn lz4_contents(raw: &[u8]) -> Option<Vec<u8>> {
    let compressed = lz4_flex::block::compress(raw);
    let mut out = Vec::with_capacity(compressed.len() + 5);
    put_varint64(&mut out, raw.len() as u64);
    out.extend_from_slice(&compressed);
    (out.len() <= raw.len() - raw.len() / 8).then_some(out)
}

mod tag {
    pub(super) const FORMAT_VERSION: u32 = 1;
    pub(super) const NUM_ENTRIES: u32 = 2;
    pub(super) const NUM_DELETIONS: u32 = 3;
    pub(super) const RAW_KEY_BYTES: u32 = 4;
    pub(super) const RAW_VALUE_BYTES: u32 = 5;
    pub(super) const DATA_BYTES: u32 = 6;
    pub(super) const DATA_BLOCKS: u32 = 7;
    pub(super) const INDEX_PARTITION_BYTES: u32 = 8;
    pub(super) const INDEX_PARTITIONS: u32 = 9;
    pub(super) const TOP_LEVEL_INDEX_BYTES: u32 = 10;
    pub(super) const FILTER_BYTES: u32 = 11;
    pub(super) const FILTER_BITS_PER_KEY: u32 = 12;
    pub(super) const SMALLEST_KEY: u32 = 13;
    pub(super) const LARGEST_KEY: u32 = 14;
    pub(super) const SMALLEST_SEQNO: u32 = 15;
    pub(super) const LARGEST_SEQNO: u32 = 16;
    pub(super) const FILE_SIZE: u32 = 17;
    pub(super) const COMPRESSION: u32 = 18;
    pub(super) const DATA_PADDING_BYTES: u32 = 19;
    pub(super) const FILTER_PARTITIONS: u32 = 20;
    pub(super) const TOP_LEVEL_FILTER_INDEX_BYTES: u32 = 21;
    pub(super) const RANGE_DELETIONS: u32 = 22;
    pub(super) const RANGE_DEL_BYTES: u32 = 23;
}

fn put_prop_u64(out: &mut Vec<u8>, t: u32, v: u64) {
    put_varint32(out, t);
    put_varint32(out, varint_len(v) as u32);
    put_varint64(out, v);
}

fn put_prop_bytes(out: &mut Vec<u8>, t: u32, v: &[u8]) {
    put_varint32(out, t);
    put_varint32(out, v.len() as u32);
    out.extend_from_slice(v);
}

/// Encodes the properties block contents. Its length does not depend on
/// `file_size` (stored fixed-width), so a writer can encode once to learn the
/// length, then again with the final size.
pub(crate) fn encode_properties(p: &TableProperties) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + p.smallest_key.len() + p.largest_key.len());
    put_prop_u64(&mut out, tag::FORMAT_VERSION, u64::from(p.format_version));
    put_prop_u64(&mut out, tag::NUM_ENTRIES, p.num_entries);
    put_prop_u64(&mut out, tag::NUM_DELETIONS, p.num_deletions);
    put_prop_u64(&mut out, tag::RAW_KEY_BYTES, p.raw_key_bytes);
    put_prop_u64(&mut out, tag::RAW_VALUE_BYTES, p.raw_value_bytes);
    put_prop_u64(&mut out, tag::DATA_BYTES, p.data_bytes);
    put_prop_u64(&mut out, tag::DATA_BLOCKS, p.data_blocks);
    put_prop_u64(
        &mut out,
        tag::INDEX_PARTITION_BYTES,
        p.index_partition_bytes,
    );
    put_prop_u64(&mut out, tag::INDEX_PARTITIONS, p.index_partitions);
    put_prop_u64(
        &mut out,
        tag::TOP_LEVEL_INDEX_BYTES,
        p.top_level_index_bytes,
    );
    put_prop_u64(&mut out, tag::FILTER_BYTES, p.filter_bytes);
    put_prop_u64(
        &mut out,
        tag::FILTER_BITS_PER_KEY,
        u64::from(p.filter_bits_per_key),
    );
    put_prop_bytes(&mut out, tag::SMALLEST_KEY, &p.smallest_key);
    put_prop_bytes(&mut out, tag::LARGEST_KEY, &p.largest_key);
    put_prop_u64(&mut out, tag::SMALLEST_SEQNO, p.smallest_seqno);
    put_prop_u64(&mut out, tag::LARGEST_SEQNO, p.largest_seqno);
    put_prop_bytes(&mut out, tag::FILE_SIZE, &p.file_size.to_le_bytes());
    put_prop_u64(&mut out, tag::COMPRESSION, u64::from(p.compression as u8));
    // Tags of later versions are written from their version on (and before
    // it only when set, so that every decoded block re-encodes to itself).
    if p.format_version >= 2 || p.data_padding_bytes != 0 {
        put_prop_u64(&mut out, tag::DATA_PADDING_BYTES, p.data_padding_bytes);
    }
    if p.format_version >= 3 || p.filter_partitions != 0 || p.top_level_filter_index_bytes != 0 {
        put_prop_u64(&mut out, tag::FILTER_PARTITIONS, p.filter_partitions);
        put_prop_u64(
            &mut out,
            tag::TOP_LEVEL_FILTER_INDEX_BYTES,
            p.top_level_filter_index_bytes,
        );
    }
    if p.format_version >= 4 || p.range_deletions != 0 || p.range_del_bytes != 0 {
        put_prop_u64(&mut out, tag::RANGE_DELETIONS, p.range_deletions);
        put_prop_u64(&mut out, tag::RANGE_DEL_BYTES, p.range_del_bytes);
    }
    out
}

/// Decodes a properties block; unknown tags are skipped, missing ones stay 0.
pub(crate) fn decode_properties(mut src: &[u8]) -> Result<TableProperties, Corrupt> {
    let mut p = TableProperties::default();
    while !src.is_empty() {
        let t = get_varint32(&mut src).ok_or(Corrupt("bad property tag"))?;
        let len = get_varint32(&mut src).ok_or(Corrupt("bad property length"))? as usize;
        let (payload, rest) = src
            .split_at_checked(len)
            .ok_or(Corrupt("property extends past the block"))?;
        src = rest;
        let int = || -> Result<u64, Corrupt> {
            let mut s = payload;
            let v = get_varint64(&mut s).ok_or(Corrupt("bad integer property"))?;
            if !s.is_empty() {
                return Err(Corrupt("integer property has trailing bytes"));
            }
            Ok(v)
        };
        let small = |v: u64| u32::try_from(v).map_err(|_| Corrupt("property out of range"));
        match t {
            tag::FORMAT_VERSION => p.format_version = small(int()?)?,
            tag::NUM_ENTRIES => p.num_entries = int()?,
            tag::NUM_DELETIONS => p.num_deletions = int()?,
            tag::RAW_KEY_BYTES => p.raw_key_bytes = int()?,
            tag::RAW_VALUE_BYTES => p.raw_value_bytes = int()?,
            tag::DATA_BYTES => p.data_bytes = int()?,
            tag::DATA_BLOCKS => p.data_blocks = int()?,
            tag::INDEX_PARTITION_BYTES => p.index_partition_bytes = int()?,
            tag::INDEX_PARTITIONS => p.index_partitions = int()?,
            tag::TOP_LEVEL_INDEX_BYTES => p.top_level_index_bytes = int()?,
            tag::FILTER_BYTES => p.filter_bytes = int()?,
            tag::FILTER_BITS_PER_KEY => p.filter_bits_per_key = small(int()?)?,
            tag::SMALLEST_KEY => p.smallest_key = payload.to_vec(),
            tag::LARGEST_KEY => p.largest_key = payload.to_vec(),
            tag::SMALLEST_SEQNO => p.smallest_seqno = int()?,
            tag::LARGEST_SEQNO => p.largest_seqno = int()?,
            tag::FILE_SIZE => {
                let bytes: [u8; 8] = payload
                    .try_into()
                    .map_err(|_| Corrupt("file size property is not 8 bytes"))?;
                p.file_size = u64::from_le_bytes(bytes);
            }
            tag::COMPRESSION => {
                p.compression = u8::try_from(int()?)
                    .ok()
                    .and_then(Compression::from_code)
                    .ok_or(Corrupt("unknown compression type in the properties"))?
            }
            tag::DATA_PADDING_BYTES => p.data_padding_bytes = int()?,
            tag::FILTER_PARTITIONS => p.filter_partitions = int()?,
            tag::TOP_LEVEL_FILTER_INDEX_BYTES => p.top_level_filter_index_bytes = int()?,
            tag::RANGE_DELETIONS => p.range_deletions = int()?,
            tag::RANGE_DEL_BYTES => p.range_del_bytes = int()?,
            _ => {} // a property of a later version
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TableProperties {
        TableProperties {
            format_version: 1,
            num_entries: 500,
            num_deletions: 20,
            raw_key_bytes: 12345,
            raw_value_bytes: 1 << 40,
            data_bytes: 99,
            data_blocks: 3,
            index_partition_bytes: 70,
            index_partitions: 1,
            top_level_index_bytes: 20,
            filter_bytes: 77,
            filter_bits_per_key: 10,
            smallest_key: b"a\0\0\0\0\0\0\0\x01".to_vec(),
            largest_key: vec![0xff; 40],
            smallest_seqno: 1,
            largest_seqno: u64::MAX >> 8,
            file_size: 123_456,
            compression: Compression::Lz4,
            data_padding_bytes: 0,
            filter_partitions: 0,
            top_level_filter_index_bytes: 0,
            range_deletions: 0,
            range_del_bytes: 0,
        }
    }

    #[test]
    fn properties_roundtrip_and_skip_unknown_tags() {
        let p = sample();
        let mut enc = encode_properties(&p);
        assert_eq!(decode_properties(&enc).unwrap(), p);
        let len = enc.len();
        // A future property is ignored.
        put_prop_bytes(&mut enc, 999, b"future");
        assert_eq!(decode_properties(&enc).unwrap(), p);
        // Truncation inside a property is an error, not a panic.
        assert!(decode_properties(&enc[..len - 2]).is_err());
        assert!(decode_properties(&enc[..len - 5]).is_err());
        // The length does not depend on the file size.
        let mut q = p.clone();
        q.file_size = u64::MAX;
        assert_eq!(encode_properties(&q).len(), len);
        // Version 2 carries its padding; version 1 has no such field.
        let v2 = TableProperties {
            format_version: 2,
            data_padding_bytes: 4000,
            ..p.clone()
        };
        let enc2 = encode_properties(&v2);
        assert!(enc2.len() > len);
        assert_eq!(decode_properties(&enc2).unwrap(), v2);
    }

    /// The compression is typed: a code this build does not know is damage,
    /// not a number passed on.
    #[test]
    fn an_unknown_compression_code_is_refused() {
        let mut enc = encode_properties(&sample());
        // A later property overrides the earlier one of the same tag.
        put_prop_u64(&mut enc, tag::COMPRESSION, 7);
        let err = decode_properties(&enc).expect_err("code 7");
        assert!(err.0.contains("unknown compression"), "{}", err.0);
        let mut enc = encode_properties(&sample());
        put_prop_u64(&mut enc, tag::COMPRESSION, 0);
        assert_eq!(
            decode_properties(&enc).unwrap().compression,
            Compression::None
        );
    }

    #[test]
    fn footer_roundtrip_and_damage() {
        let f = Footer {
            properties: BlockHandle {
                offset: 100,
                size: 50,
            },
            top_index: BlockHandle {
                offset: 80,
                size: 15,
            },
            filter: None,
            format_version: 1,
        };
        let enc = f.encode();
        assert_eq!(Footer::decode(&enc).unwrap(), f);
        for i in 0..enc.len() {
            let mut bad = enc.clone();
            bad[i] ^= 0x10;
            assert!(Footer::decode(&bad).is_err(), "byte {i}");
        }
    }

    #[test]
    fn trailers_detect_damage_and_lz4_roundtrips() {
        let raw: Vec<u8> = (0..4000u32).map(|i| (i % 17) as u8).collect();
        let c = lz4_contents(&raw).expect("compressible");
        let mut stored = c.clone();
        stored.extend_from_slice(&block_trailer(&c, Compression::Lz4));
        assert_eq!(unwrap_block(stored.clone(), true).unwrap(), raw);
        stored[3] ^= 1;
        assert!(unwrap_block(stored.clone(), true).is_err());
        // Without verification, damaged LZ4 data still never panics.
        let _ = unwrap_block(stored, false);
        let random: Vec<u8> = (0..1000u64)
            .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8)
            .collect();
        assert!(lz4_contents(&random).is_none());
    }
}
