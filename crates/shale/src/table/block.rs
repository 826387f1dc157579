//! Blocks with restart points: the shared shape of data blocks and index blocks
//! (index partitions and the top-level index), their builders and a cursor.
//!
//! Grammar (byte-exact; also in `docs/format/table.md`):
//!
//! ```text
//! block          := entry* restart{num_restarts} num_restarts
//! restart        := fixed32_le        // offset of a restart entry within the block
//! num_restarts   := fixed32_le        // 0 only in an empty block
//!
//! data_entry     := shared:varint32 unshared:varint32 value_len:varint32
//!                   key_delta:byte{unshared} value:byte{value_len}
//! index_entry    := shared:varint32 unshared:varint32 key_delta:byte{unshared}
//!                   size:varint64 [offset:varint64]     // offset only at restarts
//! ```
//!
//! An entry's key is the first `shared` bytes of the previous entry's key followed by
//! `key_delta`; a restart entry has `shared == 0`. Restart offsets start at 0 and
//! strictly increase. Data keys are encoded internal keys in internal order; index
//! keys are user-key separators in bytewise order. A non-restart index entry's
//! block offset is implied by the previous entry's: in an `Index` block (blocks
//! back to back: the top-level index, and the partitions of a version-1 table)
//! it is `offset + size + BLOCK_TRAILER_LEN`; in a `PagedIndex` block (the
//! partitions of a version-2 table, whose data blocks start on page
//! boundaries) that end rounded up to a multiple of [`PAGE_SIZE`].
//!
//! Decoding never trusts the bytes: every length and offset is bounds-checked and a
//! violation is reported as [`Corrupt`], which the reader turns into
//! `Error::Corruption` naming the block's offset.

use std::cmp::Ordering;

use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use crate::format::{
    decode_fixed32, get_varint32, get_varint64, put_fixed32, put_varint32, put_varint64,
    varint_len, ValueKind, TRAILER_LEN,
};

/// Length of the trailer after every block: compression type byte + masked CRC32C.
pub(crate) const BLOCK_TRAILER_LEN: u64 = 5;

/// The page data blocks of a version-2 table are aligned to: each starts on a
/// multiple of it and, unless one entry alone is larger, fits in one.
pub(crate) const PAGE_SIZE: u64 = 4096;

/// Restart interval of index blocks (partitions and the top-level index). Fixed by
/// the format: readers find restarts through the restart array, so the value is not
/// needed to decode, but writers of format version 1 always use it.
pub(crate) const INDEX_RESTART_INTERVAL: usize = 16;

/// Why a block did not decode. Converted to `Error::Corruption` by the reader, which
/// knows the file and the block offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Corrupt(pub &'static str);

/// Which entry grammar a block uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryFormat {
    /// `data_entry`: internal keys and values.
    Data,
    /// `index_entry`: user-key separators and delta-encoded handles of blocks
    /// that lie back to back.
    Index,
    /// `index_entry` over page-aligned blocks: a non-restart entry's block
    /// starts on the first page boundary at or after the previous block's end.
    PagedIndex,
}

impl EntryFormat {
    /// True for either index grammar.
    pub(crate) fn is_index(self) -> bool {
        matches!(self, EntryFormat::Index | EntryFormat::PagedIndex)
    }
}

/// A decoded (uncompressed) block whose restart array has been validated.
#[derive(Debug)]
pub(crate) struct Block {
    data: Vec<u8>,
    restarts_off: usize,
    num_restarts: usize,
    format: EntryFormat,
    /// Set once a reader has checked the block against what refers to it
    /// (a version-3 data block's first key against its locator boundary), so
    /// that a cached block is checked once rather than on every Get.
    verified: AtomicBool,
}

impl Block {
    /// Validates the restart array of `data` and wraps it.
    pub(crate) fn new(data: Vec<u8>, format: EntryFormat) -> Result<Block, Corrupt> {
        let len = data.len();
        let count = data
            .get(len.wrapping_sub(4)..)
            .filter(|_| len >= 4)
            .and_then(decode_fixed32)
            .ok_or(Corrupt("block shorter than its restart count"))? as usize;
        let array_len = count
            .checked_mul(4)
            .ok_or(Corrupt("restart count overflows"))?;
        let restarts_off = (len - 4)
            .checked_sub(array_len)
            .ok_or(Corrupt("restart array longer than the block"))?;
        let block = Block {
            data,
            restarts_off,
            num_restarts: count,
            format,
            verified: AtomicBool::new(false),
        };
        if count == 0 {
            if restarts_off != 0 {
                return Err(Corrupt("entries without restart points"));
            }
            return Ok(block);
        }
        let mut prev = None;
        for i in 0..count {
            let r = block.restart(i)?;
            match prev {
                None if r != 0 => return Err(Corrupt("first restart is not at offset 0")),
                Some(p) if r <= p => return Err(Corrupt("restart offsets not increasing")),
                _ => {}
            }
            if r >= restarts_off {
                return Err(Corrupt("restart offset beyond the entries"));
            }
            prev = Some(r);
        }
        Ok(block)
    }

    /// The bytes at `range` of the block's contents, if inside it.
    pub(crate) fn slice(&self, range: std::ops::Range<usize>) -> Option<&[u8]> {
        self.data.get(range)
    }

    /// Bytes held by the block (its decoded contents).
    pub(crate) fn size(&self) -> usize {
        self.data.len()
    }

    /// True once [`Block::set_verified`] was called.
    pub(crate) fn verified(&self) -> bool {
        self.verified.load(AtomicOrdering::Relaxed)
    }

    /// Records that the block agreed with what refers to it.
    pub(crate) fn set_verified(&self) {
        self.verified.store(true, AtomicOrdering::Relaxed);
    }

    /// True if the block holds no entry.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.num_restarts == 0
    }

    fn restart(&self, i: usize) -> Result<usize, Corrupt> {
        let at = self.restarts_off + 4 * i;
        self.data
            .get(at..)
            .and_then(decode_fixed32)
            .map(|v| v as usize)
            .ok_or(Corrupt("restart index out of range"))
    }

    /// The full key stored at restart `i` (restart entries share no prefix).
    fn restart_key(&self, i: usize) -> Result<&[u8], Corrupt> {
        let off = self.restart(i)?;
        let mut src = self
            .data
            .get(off..self.restarts_off)
            .ok_or(Corrupt("entry out of range"))?;
        let (shared, unshared, _) = entry_header(&mut src, self.format)?;
        if shared != 0 {
            return Err(Corrupt("restart entry shares a prefix"));
        }
        let key = src
            .get(..unshared)
            .ok_or(Corrupt("key extends past the entries"))?;
        if self.format == EntryFormat::Data {
            check_internal_key(key)?;
        }
        Ok(key)
    }
}

/// Decodes an entry's `(shared, unshared, value_len)` (`value_len` 0 in index
/// blocks) from the front of `src`. Lengths below 128 (one byte each, the
/// common case) take a branch-light path.
#[inline]
fn entry_header(src: &mut &[u8], format: EntryFormat) -> Result<(usize, usize, usize), Corrupt> {
    if format == EntryFormat::Data {
        if let Some(&[a, b, c]) = src.first_chunk::<3>() {
            if (a | b | c) < 0x80 {
                *src = &src[3..];
                return Ok((usize::from(a), usize::from(b), usize::from(c)));
            }
        }
    } else if let Some(&[a, b]) = src.first_chunk::<2>() {
        if (a | b) < 0x80 {
            *src = &src[2..];
            return Ok((usize::from(a), usize::from(b), 0));
        }
    }
    let shared = get_varint32(src).ok_or(Corrupt("bad shared length"))? as usize;
    let unshared = get_varint32(src).ok_or(Corrupt("bad key length"))? as usize;
    let value_len = match format {
        EntryFormat::Data => get_varint32(src).ok_or(Corrupt("bad value length"))? as usize,
        EntryFormat::Index | EntryFormat::PagedIndex => 0,
    };
    Ok((shared, unshared, value_len))
}

fn check_internal_key(key: &[u8]) -> Result<(), Corrupt> {
    if key.len() < TRAILER_LEN {
        return Err(Corrupt("internal key shorter than its trailer"));
    }
    let Some((_, trailer)) = key.split_last_chunk::<TRAILER_LEN>() else {
        return Err(Corrupt("internal key shorter than its trailer"));
    };
    ValueKind::from_u8(trailer[0]).ok_or(Corrupt("unknown value kind"))?;
    Ok(())
}

/// Bytes of a key a [`KeyBuf`] holds without allocating.
const INLINE_KEY: usize = 64;

/// A key being reassembled from prefix-compressed entries. Keys up to
/// [`INLINE_KEY`] bytes live inline so that a point lookup does not allocate;
/// a longer one moves the whole key to the heap.
#[derive(Clone)]
struct KeyBuf {
    len: usize,
    inline: [u8; INLINE_KEY],
    heap: Vec<u8>,
}

impl Default for KeyBuf {
    fn default() -> Self {
        KeyBuf {
            len: 0,
            inline: [0; INLINE_KEY],
            heap: Vec::new(),
        }
    }
}

impl KeyBuf {
    fn as_slice(&self) -> &[u8] {
        if self.len <= INLINE_KEY {
            &self.inline[..self.len]
        } else {
            &self.heap
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    /// Keeps the first `shared` bytes (at most `len()`) and appends `delta`.
    #[inline]
    fn splice(&mut self, shared: usize, delta: &[u8]) {
        let shared = shared.min(self.len);
        let len = shared + delta.len();
        if len <= INLINE_KEY {
            if self.len > INLINE_KEY {
                // Back inline from the heap: the kept prefix is there.
                self.inline[..shared].copy_from_slice(&self.heap[..shared]);
            }
            self.inline[shared..len].copy_from_slice(delta);
        } else {
            if self.len <= INLINE_KEY {
                self.heap.clear();
                self.heap.extend_from_slice(&self.inline[..shared]);
            } else {
                self.heap.truncate(shared);
            }
            self.heap.extend_from_slice(delta);
        }
        self.len = len;
    }
}

/// A position in a [`Block`]. The cursor does not hold the block: every method takes
/// it, so that an iterator can keep an `Arc` of the block next to its cursor.
///
/// After an error the cursor is invalid.
#[derive(Clone, Default)]
pub(crate) struct Cursor {
    valid: bool,
    /// Offset of the current entry.
    cur: usize,
    /// Offset just past the current entry.
    next: usize,
    /// Index of the last restart at or before `cur`.
    restart_idx: usize,
    key: KeyBuf,
    /// Where the current data entry's value lies in the block.
    value: std::ops::Range<usize>,
    handle_offset: u64,
    handle_size: u64,
}

impl Cursor {
    /// True if positioned on an entry.
    pub(crate) fn valid(&self) -> bool {
        self.valid
    }

    /// The current key. Requires `valid()`.
    pub(crate) fn key(&self) -> &[u8] {
        self.key.as_slice()
    }

    /// The current value of a data block: `None` unless the cursor is valid
    /// and `block` is the block it was positioned in.
    pub(crate) fn value<'b>(&self, block: &'b Block) -> Option<&'b [u8]> {
        if !self.valid {
            return None;
        }
        block.data.get(self.value.clone())
    }

    /// Where the current value lies in its block's contents (`None` unless
    /// valid).
    pub(crate) fn value_range(&self) -> Option<std::ops::Range<usize>> {
        self.valid.then(|| self.value.clone())
    }

    /// The block handle `(offset, size)` of the current index entry.
    pub(crate) fn handle(&self) -> (u64, u64) {
        (self.handle_offset, self.handle_size)
    }

    /// Makes the cursor invalid.
    pub(crate) fn invalidate(&mut self) {
        self.valid = false;
    }

    /// Decodes the entry at `off`, whose predecessor (if not a restart) is the
    /// current entry.
    fn parse_at(&mut self, b: &Block, off: usize, is_restart: bool) -> Result<(), Corrupt> {
        self.valid = false;
        let mut src = b
            .data
            .get(off..b.restarts_off)
            .ok_or(Corrupt("entry out of range"))?;
        let before = src.len();
        let (shared, unshared, value_len) = entry_header(&mut src, b.format)?;
        if is_restart {
            if shared != 0 {
                return Err(Corrupt("restart entry shares a prefix"));
            }
        } else if shared > self.key.len() {
            return Err(Corrupt("shared prefix longer than the previous key"));
        }
        let (delta, rest) = src
            .split_at_checked(unshared)
            .ok_or(Corrupt("key extends past the entries"))?;
        src = rest;
        self.key.splice(shared, delta);
        match b.format {
            EntryFormat::Data => {
                check_internal_key(self.key.as_slice())?;
                let start = off + (before - src.len());
                src = src
                    .get(value_len..)
                    .ok_or(Corrupt("value extends past the entries"))?;
                self.value = start..start + value_len;
            }
            EntryFormat::Index | EntryFormat::PagedIndex => {
                let size = get_varint64(&mut src).ok_or(Corrupt("bad block size"))?;
                let offset = if is_restart {
                    get_varint64(&mut src).ok_or(Corrupt("bad block offset"))?
                } else {
                    let end = self
                        .handle_offset
                        .checked_add(self.handle_size)
                        .and_then(|v| v.checked_add(BLOCK_TRAILER_LEN));
                    match b.format {
                        EntryFormat::PagedIndex => {
                            end.and_then(|e| e.checked_next_multiple_of(PAGE_SIZE))
                        }
                        _ => end,
                    }
                    .ok_or(Corrupt("block offset overflows"))?
                };
                if offset.checked_add(size).is_none() {
                    return Err(Corrupt("block handle overflows"));
                }
                self.handle_offset = offset;
                self.handle_size = size;
            }
        }
        self.cur = off;
        self.next = off + (before - src.len());
        self.valid = true;
        Ok(())
    }

    fn seek_to_restart(&mut self, b: &Block, i: usize) -> Result<(), Corrupt> {
        self.restart_idx = i;
        let off = b.restart(i)?;
        self.parse_at(b, off, true)
    }

    /// Positions on the first entry.
    pub(crate) fn seek_to_first(&mut self, b: &Block) -> Result<(), Corrupt> {
        if b.num_restarts == 0 {
            self.valid = false;
            return Ok(());
        }
        self.seek_to_restart(b, 0)
    }

    /// Positions on the last entry.
    pub(crate) fn seek_to_last(&mut self, b: &Block) -> Result<(), Corrupt> {
        if b.num_restarts == 0 {
            self.valid = false;
            return Ok(());
        }
        self.seek_to_restart(b, b.num_restarts - 1)?;
        while self.next < b.restarts_off {
            self.next(b)?;
        }
        Ok(())
    }

    /// Moves to the next entry (invalid past the last). Requires `valid()`.
    pub(crate) fn next(&mut self, b: &Block) -> Result<(), Corrupt> {
        let off = self.next;
        if off >= b.restarts_off {
            self.valid = false;
            // Every restart point must start an entry: one that the last entry
            // overlaps would let a seek decode bytes a scan never sees.
            if self.restart_idx + 1 < b.num_restarts {
                return Err(Corrupt("entries end before the last restart point"));
            }
            return Ok(());
        }
        let mut is_restart = false;
        if self.restart_idx + 1 < b.num_restarts {
            let r = b.restart(self.restart_idx + 1)?;
            if off == r {
                self.restart_idx += 1;
                is_restart = true;
            } else if off > r {
                self.valid = false;
                return Err(Corrupt("entry overlaps a restart point"));
            }
        }
        self.parse_at(b, off, is_restart)
    }

    /// Moves to the previous entry (invalid before the first). Requires `valid()`.
    pub(crate) fn prev(&mut self, b: &Block) -> Result<(), Corrupt> {
        let target = self.cur;
        let mut r = self.restart_idx;
        if b.restart(r)? >= target {
            if r == 0 {
                self.valid = false;
                return Ok(());
            }
            r -= 1;
        }
        self.seek_to_restart(b, r)?;
        while self.next < target {
            self.next(b)?;
        }
        if self.next != target {
            self.valid = false;
            return Err(Corrupt("entries do not chain to the current one"));
        }
        Ok(())
    }

    /// Positions on the first entry whose key is not less than the target, where
    /// `cmp(key)` orders a key against the target. Invalid if every key is less.
    pub(crate) fn seek_by(
        &mut self,
        b: &Block,
        cmp: impl Fn(&[u8]) -> Ordering,
    ) -> Result<(), Corrupt> {
        if b.num_restarts == 0 {
            self.valid = false;
            return Ok(());
        }
        // Last restart whose key is less than the target (or restart 0).
        let (mut lo, mut hi) = (0usize, b.num_restarts - 1);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if cmp(b.restart_key(mid)?) == Ordering::Less {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        self.seek_to_restart(b, lo)?;
        while self.valid && cmp(self.key.as_slice()) == Ordering::Less {
            self.next(b)?;
        }
        Ok(())
    }
}

/// Orders an encoded internal key against the target `(user_key, trailer)`, where a
/// trailer is `seqno << 8 | kind` and larger trailers sort first. `key` must be at
/// least [`TRAILER_LEN`] long (data block keys are checked when decoded).
#[inline]
pub(crate) fn cmp_internal_to(key: &[u8], user_key: &[u8], trailer: u64) -> Ordering {
    let n = key.len().saturating_sub(TRAILER_LEN);
    let (ku, kt) = key.split_at(n);
    match crate::format::compare_bytes(ku, user_key) {
        Ordering::Equal => {
            let kt = crate::format::decode_fixed64(kt).unwrap_or(0);
            trailer.cmp(&kt)
        }
        o => o,
    }
}

/// Splits a caller-supplied internal key into `(user_key, trailer)`; a target
/// shorter than a trailer is taken as a user key sorting before all its versions.
pub(crate) fn split_target(target: &[u8]) -> (&[u8], u64) {
    if target.len() < TRAILER_LEN {
        return (target, u64::MAX);
    }
    let (u, t) = target.split_at(target.len() - TRAILER_LEN);
    (u, crate::format::decode_fixed64(t).unwrap_or(u64::MAX))
}

/// Builds a block of either grammar.
#[derive(Debug)]
pub(crate) struct BlockBuilder {
    format: EntryFormat,
    restart_interval: usize,
    buf: Vec<u8>,
    restarts: Vec<u32>,
    counter: usize,
    entries: usize,
    last_key: Vec<u8>,
}

impl BlockBuilder {
    /// An empty builder; `restart_interval` is clamped to at least 1.
    pub(crate) fn new(format: EntryFormat, restart_interval: usize) -> BlockBuilder {
        BlockBuilder {
            format,
            restart_interval: restart_interval.max(1),
            buf: Vec::new(),
            restarts: Vec::new(),
            counter: 0,
            entries: 0,
            last_key: Vec::new(),
        }
    }

    /// True if no entry was added since the last `finish`.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Size of the block if finished now.
    pub(crate) fn estimated_size(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// Exactly what [`Self::estimated_size`] would be after `add_data(key,
    /// value)` with a value of `value_len` bytes.
    pub(crate) fn size_with_data(&self, key: &[u8], value_len: usize) -> usize {
        let restart = self.counter == 0;
        let shared = if restart {
            0
        } else {
            key.iter()
                .zip(self.last_key.iter())
                .take_while(|(a, b)| a == b)
                .count()
        };
        let unshared = key.len() - shared;
        self.estimated_size()
            + if restart { 4 } else { 0 }
            + varint_len(shared as u64)
            + varint_len(unshared as u64)
            + varint_len(value_len as u64)
            + unshared
            + value_len
    }

    /// The last key added.
    pub(crate) fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Starts an entry for `key`: whether it is a restart, and `key` split
    /// into the length it shares with the previous key and the rest.
    fn start_entry<'k>(&mut self, key: &'k [u8]) -> (bool, usize, &'k [u8]) {
        let restart = self.counter == 0;
        let shared = if restart {
            self.restarts.push(self.buf.len() as u32);
            0
        } else {
            key.iter()
                .zip(self.last_key.iter())
                .take_while(|(a, b)| a == b)
                .count()
        };
        self.counter += 1;
        if self.counter == self.restart_interval {
            self.counter = 0;
        }
        self.entries += 1;
        // `shared <= key.len()`; sharing nothing is a valid encoding too.
        match key.split_at_checked(shared) {
            Some((_, rest)) => (restart, shared, rest),
            None => (restart, 0, key),
        }
    }

    fn end_entry(&mut self, key: &[u8]) {
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
    }

    /// Appends a data entry; keys must be added in increasing order.
    pub(crate) fn add_data(&mut self, key: &[u8], value: &[u8]) {
        debug_assert_eq!(self.format, EntryFormat::Data);
        let (_, shared, rest) = self.start_entry(key);
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, rest.len() as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(rest);
        self.buf.extend_from_slice(value);
        self.end_entry(key);
    }

    /// Appends an index entry for the block at `offset` of `size` bytes (without
    /// trailer). Unless the entry is a restart, `offset` must be the one its
    /// grammar implies (see the module doc).
    pub(crate) fn add_index(&mut self, separator: &[u8], offset: u64, size: u64) {
        debug_assert!(self.format.is_index());
        let (restart, shared, rest) = self.start_entry(separator);
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, rest.len() as u32);
        self.buf.extend_from_slice(rest);
        put_varint64(&mut self.buf, size);
        if restart {
            put_varint64(&mut self.buf, offset);
        }
        self.end_entry(separator);
    }

    /// Returns the finished block contents and resets the builder.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        for &r in &self.restarts {
            put_fixed32(&mut out, r);
        }
        put_fixed32(&mut out, self.restarts.len() as u32);
        self.restarts.clear();
        self.counter = 0;
        self.entries = 0;
        self.last_key.clear();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::InternalKey;
    use crate::table::test_util::Rng;

    fn ikey(i: u32, seq: u64) -> Vec<u8> {
        InternalKey::new(format!("key{i:06}").as_bytes(), seq, ValueKind::Value)
            .encoded()
            .to_vec()
    }

    type Model = Vec<(Vec<u8>, Vec<u8>)>;

    fn data_block(n: u32, interval: usize) -> (Block, Model) {
        let mut b = BlockBuilder::new(EntryFormat::Data, interval);
        let mut model = Vec::new();
        for i in 0..n {
            let k = ikey(i, 7);
            let v = vec![i as u8; (i % 13) as usize];
            b.add_data(&k, &v);
            model.push((k, v));
        }
        (Block::new(b.finish(), EntryFormat::Data).unwrap(), model)
    }

    #[test]
    fn a_cursor_has_no_value_when_invalid_or_asked_about_another_block() {
        let (big, _) = data_block(200, 16);
        let (small, _) = data_block(2, 16);
        let mut c = Cursor::default();
        assert_eq!(c.value(&big), None);
        c.seek_to_last(&big).unwrap();
        assert!(c.value(&big).is_some());
        // The last value of the big block lies past the end of the small one.
        assert_eq!(c.value(&small), None);
        c.next(&big).unwrap();
        assert_eq!(c.value(&big), None);
    }

    #[test]
    fn data_block_roundtrip_forward_backward_and_seek() {
        for interval in [1, 2, 16] {
            let (block, model) = data_block(200, interval);
            let mut c = Cursor::default();
            c.seek_to_first(&block).unwrap();
            for (k, v) in &model {
                assert!(c.valid());
                assert_eq!(c.key(), &k[..]);
                assert_eq!(c.value(&block), Some(&v[..]));
                c.next(&block).unwrap();
            }
            assert!(!c.valid());
            c.seek_to_last(&block).unwrap();
            for (k, _) in model.iter().rev() {
                assert_eq!(c.key(), &k[..]);
                c.prev(&block).unwrap();
            }
            assert!(!c.valid());
            for (i, (k, _)) in model.iter().enumerate() {
                let (u, t) = split_target(k);
                c.seek_by(&block, |key| cmp_internal_to(key, u, t)).unwrap();
                assert_eq!(c.key(), &k[..], "seek {i}");
                // A newer version of the same key lands on this entry too.
                let seek = InternalKey::seek_key(u, 100);
                let (u2, t2) = split_target(seek.encoded());
                c.seek_by(&block, |key| cmp_internal_to(key, u2, t2))
                    .unwrap();
                assert_eq!(c.key(), &k[..]);
            }
            let past = InternalKey::seek_key(b"zzz", 1);
            let (u, t) = split_target(past.encoded());
            c.seek_by(&block, |key| cmp_internal_to(key, u, t)).unwrap();
            assert!(!c.valid());
        }
    }

    #[test]
    fn index_block_roundtrip_reconstructs_offsets() {
        let mut b = BlockBuilder::new(EntryFormat::Index, INDEX_RESTART_INTERVAL);
        let mut model = Vec::new();
        let mut off = 0u64;
        for i in 0..100u64 {
            let sep = format!("s{:05}", i * 3).into_bytes();
            let size = 4000 + (i * 37) % 200;
            b.add_index(&sep, off, size);
            model.push((sep, off, size));
            off += size + BLOCK_TRAILER_LEN;
        }
        let block = Block::new(b.finish(), EntryFormat::Index).unwrap();
        let mut c = Cursor::default();
        c.seek_to_first(&block).unwrap();
        for (sep, off, size) in &model {
            assert_eq!(c.key(), &sep[..]);
            assert_eq!(c.handle(), (*off, *size));
            c.next(&block).unwrap();
        }
        assert!(!c.valid());
        c.seek_to_last(&block).unwrap();
        for (sep, off, size) in model.iter().rev() {
            assert_eq!((c.key(), c.handle()), (&sep[..], (*off, *size)));
            c.prev(&block).unwrap();
        }
        for (i, (sep, off, size)) in model.iter().enumerate() {
            c.seek_by(&block, |k| k.cmp(&sep[..])).unwrap();
            assert_eq!(c.handle(), (*off, *size));
            // A key between the previous separator and this one lands here too.
            let mut below = if i == 0 {
                Vec::new()
            } else {
                model[i - 1].0.clone()
            };
            below.push(0);
            c.seek_by(&block, |k| k.cmp(&below[..])).unwrap();
            assert_eq!(c.handle(), (*off, *size));
        }
        c.seek_by(&block, |k| k.cmp(&b"t"[..])).unwrap();
        assert!(!c.valid());
    }

    #[test]
    fn empty_block_is_valid_and_has_no_entries() {
        let mut b = BlockBuilder::new(EntryFormat::Data, 16);
        let block = Block::new(b.finish(), EntryFormat::Data).unwrap();
        assert!(block.is_empty());
        let mut c = Cursor::default();
        c.seek_to_first(&block).unwrap();
        assert!(!c.valid());
        c.seek_to_last(&block).unwrap();
        assert!(!c.valid());
        c.seek_by(&block, |_| Ordering::Less).unwrap();
        assert!(!c.valid());
    }

    #[test]
    fn long_keys_spill_out_of_the_inline_buffer() {
        let mut b = BlockBuilder::new(EntryFormat::Data, 4);
        let mut keys = Vec::new();
        for i in 0..50u32 {
            let len = if i % 3 == 0 { 10 } else { 150 };
            let mut u = vec![b'a'; len];
            u.extend_from_slice(format!("{i:04}").as_bytes());
            keys.push(InternalKey::new(&u, 1, ValueKind::Value).encoded().to_vec());
        }
        keys.sort_by(|a, b| crate::format::compare_internal(a, b));
        for k in &keys {
            b.add_data(k, b"v");
        }
        let block = Block::new(b.finish(), EntryFormat::Data).unwrap();
        let mut c = Cursor::default();
        c.seek_to_first(&block).unwrap();
        for k in &keys {
            assert_eq!(c.key(), &k[..]);
            c.next(&block).unwrap();
        }
        c.seek_to_last(&block).unwrap();
        for k in keys.iter().rev() {
            assert_eq!(c.key(), &k[..]);
            c.prev(&block).unwrap();
        }
    }

    #[test]
    fn key_buffer_moves_between_inline_and_heap_keeping_the_prefix() {
        let mut buf = KeyBuf::default();
        let mut model: Vec<u8> = Vec::new();
        let mut x = 12345u64;
        for _ in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let shared = (x >> 33) as usize % (model.len() + 1);
            let delta: Vec<u8> = (0..(x >> 20) as usize % 100)
                .map(|i| (x >> (i % 50)) as u8)
                .collect();
            model.truncate(shared);
            model.extend_from_slice(&delta);
            buf.splice(shared, &delta);
            assert_eq!(buf.as_slice(), &model[..]);
            assert_eq!(buf.len(), model.len());
        }
    }

    #[test]
    fn an_entry_overlapping_the_last_restart_is_corrupt() {
        // Found by the fuzz target `block`: the last restart pointed inside the
        // last entry, so a scan ended cleanly while seeks decoded from the middle
        // of that entry.
        let mut b = BlockBuilder::new(EntryFormat::Data, 1);
        b.add_data(&ikey(1, 7), b"one");
        b.add_data(&ikey(2, 7), b"two");
        let mut d = b.finish();
        let n = d.len();
        let last_restart = u32::from_le_bytes(d[n - 8..n - 4].try_into().unwrap());
        d[n - 8..n - 4].copy_from_slice(&(last_restart + 1).to_le_bytes());
        let block = Block::new(d, EntryFormat::Data).unwrap();
        let mut c = Cursor::default();
        c.seek_to_first(&block).unwrap();
        assert!(c.valid());
        c.next(&block).unwrap();
        assert_eq!(c.key(), &ikey(2, 7)[..]);
        assert_eq!(
            c.next(&block),
            Err(Corrupt("entries end before the last restart point"))
        );
        assert!(!c.valid());
    }

    #[test]
    fn damaged_blocks_error_and_never_panic() {
        let (block, _) = data_block(100, 4);
        let good = block.data.clone();
        assert!(Block::new(vec![1, 2], EntryFormat::Data).is_err());
        assert!(Block::new(vec![0, 0, 0, 9], EntryFormat::Data).is_err());
        let mut rng = Rng::new(42);
        let mut errors = 0;
        for _ in 0..3000 {
            let mut d = good.clone();
            for _ in 0..1 + rng.below(3) {
                let i = rng.below(d.len() as u64) as usize;
                d[i] ^= 1 << rng.below(8);
            }
            if rng.below(10) == 0 {
                d.truncate(rng.below(d.len() as u64) as usize);
            }
            let Ok(b) = Block::new(d, EntryFormat::Data) else {
                errors += 1;
                continue;
            };
            let mut c = Cursor::default();
            let mut walk = || -> Result<(), Corrupt> {
                c.seek_to_first(&b)?;
                let mut n = 0;
                while c.valid() && n < 1000 {
                    let _ = c.value(&b);
                    c.next(&b)?;
                    n += 1;
                }
                c.seek_to_last(&b)?;
                while c.valid() && n < 2000 {
                    c.prev(&b)?;
                    n += 1;
                }
                let t = ikey(50, 7);
                let (u, tr) = split_target(&t);
                c.seek_by(&b, |k| cmp_internal_to(k, u, tr))
            };
            if walk().is_err() {
                errors += 1;
            }
        }
        assert!(errors > 0, "some damage must be detected without checksums");
    }
}
