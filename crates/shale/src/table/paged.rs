//! The page-structured pieces of table format version 3: the framing of a
//! block that starts on a page, the key array of the top-level indexes, and
//! the compact block locator that stands in for an index partition.
//!
//! Grammar (byte-exact; also in `docs/format/table.md`, "Format version 3"):
//!
//! ```text
//! paged_block := contents zero{n} contents_len:fixed32_le compression:u8 crc:fixed32_le
//!                // starts on a page boundary; crc = masked_crc32c(every byte
//!                // before it); a data block fills whole pages (n pads it), a
//!                // partition has n = 0
//!
//! key_array   := count:varint32 base:varint64 prefix_len:varint32
//!                prefix:byte{prefix_len} entry{count}
//! entry       := suffix_len:varint32 suffix:byte{suffix_len} value:varint64
//!                // key = prefix ++ suffix, non-decreasing; in a top-level
//!                // index value = the stored length of the partition it names,
//!                // and partition i starts at base + the page-rounded lengths
//!                // of partitions 0..i
//!
//! locator     := mode:u8 first_page:varint64 num_blocks:varint32
//!                num_long:varint32 long{num_long}
//!                ambiguous:byte{ceil(num_blocks / 8)}   // bit i: bit (i % 8) of byte (i / 8)
//!                boundaries
//! long        := block:varint32 pages:varint32          // blocks increasing, pages >= 2
//! boundaries  := key_array                               // mode 0 (exact): num_blocks - 1 keys
//!              | prefix_len:varint32 prefix:byte{prefix_len} shift:u8 base:varint64
//!                low_bits:u8 max_high:varint64
//!                low:byte{ceil((num_blocks - 1) * low_bits / 8)}
//!                high:byte{ceil((num_blocks - 1 + max_high + 1) / 8)}   // mode 1 (quantized)
//! ```
//!
//! A locator covers `num_blocks` consecutive data blocks; block `i` starts on
//! page `first_page + i + (extra pages of the long blocks before i)` and takes
//! one page unless listed in `long`. Boundary `i` (for blocks `1..num_blocks`)
//! is a code `Q_i` of block `i`'s first user key `b_i`, and `ambiguous` bit `i`
//! says that the code does not tell `b_i` from the previous block's last user
//! key `a_i`:
//!
//! - mode 0: `Q_i` is the shortest prefix of `b_i` greater than `a_i`, or `b_i`
//!   itself when `a_i == b_i` (one user key's versions continue in block `i`);
//!   ambiguous exactly then.
//! - mode 1: `v(x) = (be64(x[prefix_len..][..8], zero-padded) >> shift) - base`
//!   for a key `x` starting with `prefix`; `Q_i = v(b_i)`, ambiguous iff
//!   `v(a_i) == v(b_i)`. The codes are an Elias-Fano sequence: code `j` (of
//!   block `j + 1`) has low part `low` bits `j * low_bits ..` (least significant
//!   bit first) and high part `h_j = Q >> low_bits`, recorded by setting bit
//!   `h_j + j` of `high`.
//!
//! Lookup of user key `k`: `g` = the number of boundaries with `Q_i <= v(k)`,
//! then, while boundary `g` is ambiguous and `Q_g == v(k)`, `g -= 1`. Block `g`
//! is the first block that can hold `k`. If `k`'s entries continue past block
//! `g`, the next block `g + 1` can hold more only if boundary `g + 1` is
//! ambiguous and `Q_{g+1} == v(k)`. The writer chooses the mode, prefix and
//! shift per partition (fewest bytes among the codes that leave at most one
//! boundary in 16 ambiguous beyond the continuations), so keccak256 keys take
//! about 11 bits a block and any keys stay exact.

use std::cmp::Ordering;

use super::block::{Corrupt, PAGE_SIZE};
use super::layout::decompress;
use super::Compression;
use crate::format::{
    compare_bytes, get_varint32, get_varint64, masked_crc, put_fixed32, put_varint32, put_varint64,
};

/// Bytes after the contents of a paged block: length, compression, checksum.
pub(crate) const PAGED_TAIL_LEN: usize = 9;

/// Locator mode byte: exact boundary keys. Persisted: DO NOT CHANGE.
const MODE_EXACT: u8 = 0;
/// Locator mode byte: quantized Elias-Fano codes. Persisted: DO NOT CHANGE.
const MODE_QUANTIZED: u8 = 1;

/// Frames `contents` as a paged block of `stored_len` bytes (at least
/// `contents.len() + PAGED_TAIL_LEN`), zero-padded before the tail.
pub(crate) fn frame_paged(contents: &[u8], compression: Compression, stored_len: usize) -> Vec<u8> {
    let stored_len = stored_len.max(contents.len() + PAGED_TAIL_LEN);
    let mut out = Vec::with_capacity(stored_len);
    out.extend_from_slice(contents);
    out.resize(stored_len - PAGED_TAIL_LEN, 0);
    put_fixed32(&mut out, contents.len() as u32);
    out.push(compression as u8);
    let crc = masked_crc(&out);
    put_fixed32(&mut out, crc);
    out
}

/// The stored length of a data block of `contents_len` bytes: whole pages.
pub(crate) fn paged_data_len(contents_len: usize) -> usize {
    (contents_len + PAGED_TAIL_LEN).next_multiple_of(PAGE_SIZE as usize)
}

/// Checks a paged block read whole and returns its uncompressed contents.
pub(crate) fn unwrap_paged(mut raw: Vec<u8>, verify: bool) -> Result<Vec<u8>, Corrupt> {
    let Some((body, &[l0, l1, l2, l3, ctype, c0, c1, c2, c3])) =
        raw.split_last_chunk::<PAGED_TAIL_LEN>()
    else {
        return Err(Corrupt("paged block shorter than its tail"));
    };
    let crc_covered = raw.len() - 4;
    if verify
        && raw
            .get(..crc_covered)
            .is_none_or(|b| masked_crc(b) != u32::from_le_bytes([c0, c1, c2, c3]))
    {
        return Err(Corrupt("block checksum mismatch"));
    }
    let len = u32::from_le_bytes([l0, l1, l2, l3]) as usize;
    if len > body.len() {
        return Err(Corrupt("paged block contents longer than the block"));
    }
    raw.truncate(len);
    decompress(raw, ctype)
}

/// Orders `prefix ++ suffix` against `k` without building the key.
#[inline]
fn cmp_concat(prefix: &[u8], suffix: &[u8], k: &[u8]) -> Ordering {
    let n = prefix.len().min(k.len());
    match compare_bytes(&prefix[..n], &k[..n]) {
        Ordering::Equal => {}
        o => return o,
    }
    if k.len() < prefix.len() {
        return Ordering::Greater;
    }
    compare_bytes(suffix, &k[prefix.len()..])
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Encodes a key array (see the grammar above) of `(key, value)` pairs with
/// non-decreasing keys.
pub(crate) fn encode_key_array(out: &mut Vec<u8>, base: u64, entries: &[(Vec<u8>, u64)]) {
    let prefix_len = match (entries.first(), entries.last()) {
        (Some((a, _)), Some((b, _))) if entries.len() > 1 => common_prefix(a, b),
        _ => 0,
    };
    put_varint32(out, entries.len() as u32);
    put_varint64(out, base);
    put_varint32(out, prefix_len as u32);
    if let Some((first, _)) = entries.first() {
        out.extend_from_slice(&first[..prefix_len]);
    }
    for (key, value) in entries {
        let suffix = &key[prefix_len..];
        put_varint32(out, suffix.len() as u32);
        out.extend_from_slice(suffix);
        put_varint64(out, *value);
    }
}

/// One decoded key-array entry: where its suffix lies, its value, and (for a
/// top-level index) where the block it names starts.
#[derive(Debug, Clone, Copy)]
struct KeyEntry {
    start: u32,
    len: u32,
    value: u64,
    offset: u64,
}

/// A decoded key array: sorted keys sharing a prefix, each with a value.
#[derive(Debug)]
pub(crate) struct KeyArray {
    data: Vec<u8>,
    prefix: std::ops::Range<usize>,
    entries: Vec<KeyEntry>,
}

impl KeyArray {
    /// Decodes a key array that fills `data` exactly. Each entry's offset is
    /// `base` plus the page-rounded values of the entries before it.
    pub(crate) fn new(data: Vec<u8>) -> Result<KeyArray, Corrupt> {
        let (array, used) = KeyArray::decode_at(&data, 0)?;
        if used != data.len() {
            return Err(Corrupt("bytes after the key array"));
        }
        Ok(KeyArray { data, ..array })
    }

    /// Decodes a key array starting at `at` in `data`; returns it (holding an
    /// empty buffer: the caller keeps `data`) and where it ends.
    fn decode_at(data: &[u8], at: usize) -> Result<(KeyArray, usize), Corrupt> {
        let mut src = data.get(at..).ok_or(Corrupt("key array out of range"))?;
        let start_len = src.len();
        let bad = Corrupt("truncated key array");
        let count = get_varint32(&mut src).ok_or(bad)? as usize;
        let base = get_varint64(&mut src).ok_or(bad)?;
        let prefix_len = get_varint32(&mut src).ok_or(bad)? as usize;
        let pos = |src: &[u8]| at + (start_len - src.len());
        let prefix_start = pos(src);
        let (_, rest) = src.split_at_checked(prefix_len).ok_or(bad)?;
        src = rest;
        // Each entry takes at least two bytes, which bounds the allocation.
        if count > src.len() / 2 {
            return Err(Corrupt("key array count exceeds its bytes"));
        }
        let mut entries = Vec::with_capacity(count);
        let mut offset = base;
        for _ in 0..count {
            let len = get_varint32(&mut src).ok_or(bad)? as usize;
            let start = pos(src);
            let (_, rest) = src.split_at_checked(len).ok_or(bad)?;
            src = rest;
            let value = get_varint64(&mut src).ok_or(bad)?;
            entries.push(KeyEntry {
                start: start as u32,
                len: len as u32,
                value,
                offset,
            });
            offset = value
                .checked_next_multiple_of(PAGE_SIZE)
                .and_then(|v| offset.checked_add(v))
                .ok_or(Corrupt("key array offsets overflow"))?;
        }
        let array = KeyArray {
            data: Vec::new(),
            prefix: prefix_start..prefix_start + prefix_len,
            entries,
        };
        for i in 1..array.entries.len() {
            if array.suffix_in(data, i - 1) > array.suffix_in(data, i) {
                return Err(Corrupt("key array keys out of order"));
            }
        }
        Ok((array, pos(src)))
    }

    fn suffix_in<'a>(&self, data: &'a [u8], i: usize) -> &'a [u8] {
        self.entries
            .get(i)
            .and_then(|e| data.get(e.start as usize..(e.start + e.len) as usize))
            .unwrap_or_default()
    }

    fn suffix(&self, i: usize) -> &[u8] {
        self.suffix_in(&self.data, i)
    }

    fn prefix(&self) -> &[u8] {
        self.data.get(self.prefix.clone()).unwrap_or_default()
    }

    /// Number of keys.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Bytes held (the encoded array).
    pub(crate) fn size(&self) -> usize {
        self.data.len()
    }

    /// Orders key `i` against `k`.
    fn cmp(&self, i: usize, k: &[u8]) -> Ordering {
        cmp_concat(self.prefix(), self.suffix(i), k)
    }

    /// The first index whose key is `>= k` (`len()` if none).
    pub(crate) fn lower_bound(&self, k: &[u8]) -> usize {
        self.partition(|i| self.cmp(i, k) == Ordering::Less)
    }

    /// The number of keys `<= k`.
    pub(crate) fn count_le(&self, k: &[u8]) -> usize {
        self.partition(|i| self.cmp(i, k) != Ordering::Greater)
    }

    /// Binary search: the first index for which `pred` is false (`pred` true
    /// on a prefix of the indexes).
    fn partition(&self, pred: impl Fn(usize) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.entries.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// True if key `i` equals `k`.
    pub(crate) fn key_eq(&self, i: usize, k: &[u8]) -> bool {
        i < self.len() && self.cmp(i, k) == Ordering::Equal
    }

    /// True if key `i` is a prefix of `k` (or equal to it).
    fn is_prefix_of(&self, i: usize, k: &[u8]) -> bool {
        let len = self.prefix.len() + self.suffix(i).len();
        i < self.len()
            && k.get(..len)
                .is_some_and(|head| self.cmp(i, head) == Ordering::Equal)
    }

    /// Key `i`, built (for tests).
    #[cfg(test)]
    pub(crate) fn key(&self, i: usize) -> Vec<u8> {
        let mut k = self.prefix().to_vec();
        k.extend_from_slice(self.suffix(i));
        k
    }

    /// The value of entry `i` (0 if out of range).
    pub(crate) fn value(&self, i: usize) -> u64 {
        self.entries.get(i).map_or(0, |e| e.value)
    }

    /// Where the block named by entry `i` starts (0 if out of range).
    pub(crate) fn offset(&self, i: usize) -> u64 {
        self.entries.get(i).map_or(0, |e| e.offset)
    }
}

/// The code of a lookup key in a quantized locator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Code {
    /// Below every boundary code.
    Below,
    /// A code comparable with the boundaries'.
    At(u64),
    /// Above every boundary code.
    Above,
}

/// The quantizer of a mode-1 locator: `v(x)`.
#[derive(Clone, Debug)]
struct Quantizer {
    prefix: Vec<u8>,
    shift: u8,
    base: u64,
}

impl Quantizer {
    /// The 64-bit window of `x` after the prefix, shifted (no base).
    fn window(prefix_len: usize, shift: u8, x: &[u8]) -> u64 {
        let mut w = [0u8; 8];
        if let Some(rest) = x.get(prefix_len..) {
            let n = rest.len().min(8);
            w[..n].copy_from_slice(&rest[..n]);
        }
        u64::from_be_bytes(w) >> shift
    }

    fn code(&self, k: &[u8]) -> Code {
        let n = self.prefix.len().min(k.len());
        match k[..n].cmp(&self.prefix[..n]) {
            Ordering::Less => return Code::Below,
            Ordering::Greater => return Code::Above,
            Ordering::Equal if k.len() < self.prefix.len() => return Code::Below,
            Ordering::Equal => {}
        }
        let w = Quantizer::window(self.prefix.len(), self.shift, k);
        match w.checked_sub(self.base) {
            Some(v) => Code::At(v),
            None => Code::Below,
        }
    }
}

/// An Elias-Fano coded non-decreasing sequence, decoded in place.
#[derive(Clone, Debug)]
struct EliasFano {
    n: usize,
    low_bits: u8,
    max_high: u64,
    /// Byte ranges of the low and high parts in the locator's buffer.
    low: std::ops::Range<usize>,
    high: std::ops::Range<usize>,
    /// Built at decode, not stored: entry `k` is the bit position just past
    /// the `k * ZERO_SAMPLE`-th zero of the high part and the ones before it,
    /// so that a lookup starts next to its bucket instead of at bit 0.
    samples: Vec<(u32, u32)>,
}

/// Zeros (buckets) between two entries of [`EliasFano::samples`].
const ZERO_SAMPLE: u64 = 64;

/// Bit `pos` of `bytes` (0 past the end).
fn bit(bytes: &[u8], pos: usize) -> bool {
    bytes
        .get(pos / 8)
        .is_some_and(|b| (b >> (pos % 8)) & 1 == 1)
}

/// `width` bits (at most 64) of `bytes` from bit `pos` on, the first one
/// least significant; bits past the end of `bytes` read as 0. An unaligned
/// 8-byte load and one more byte where 9 bytes remain (a Get decodes several
/// codes), a copy into a zeroed buffer only near the end.
fn get_bits(bytes: &[u8], pos: usize, width: u8) -> u64 {
    if width == 0 {
        return 0;
    }
    let shift = pos % 8;
    let src = bytes.get(pos / 8..).unwrap_or_default();
    let v = match src.first_chunk::<9>() {
        Some(c) => {
            let lo = c.first_chunk::<8>().map_or(0, |b| u64::from_le_bytes(*b));
            let hi = u64::from(c[8]);
            if shift == 0 {
                lo
            } else {
                (lo >> shift) | (hi << (64 - shift))
            }
        }
        None => {
            let mut buf = [0u8; 16];
            buf[..src.len()].copy_from_slice(src);
            (u128::from_le_bytes(buf) >> shift) as u64
        }
    };
    if width >= 64 {
        v
    } else {
        v & ((1u64 << width) - 1)
    }
}

fn put_bits(bytes: &mut [u8], pos: usize, width: u8, v: u64) {
    for b in 0..usize::from(width) {
        if (v >> b) & 1 == 1 {
            let p = pos + b;
            if let Some(byte) = bytes.get_mut(p / 8) {
                *byte |= 1 << (p % 8);
            }
        }
    }
}

impl EliasFano {
    fn high_bits_len(n: usize, max_high: u64) -> Option<usize> {
        usize::try_from(max_high)
            .ok()?
            .checked_add(n)?
            .checked_add(1)
    }

    /// The low-bit width for `n` values below `universe`.
    fn low_bits_for(n: usize, universe: u64) -> u8 {
        if n == 0 || universe <= n as u64 {
            return 0;
        }
        (63 - (universe / n as u64).leading_zeros()) as u8
    }

    fn encode(out: &mut Vec<u8>, values: &[u64]) {
        let n = values.len();
        let max = values.last().copied().unwrap_or(0);
        let l = EliasFano::low_bits_for(n, max.saturating_add(1));
        let max_high = max >> l;
        out.push(l);
        put_varint64(out, max_high);
        let mut low = vec![0u8; (n * usize::from(l)).div_ceil(8)];
        let mut high = vec![0u8; (n + max_high as usize + 1).div_ceil(8)];
        let mask = if l == 0 { 0 } else { u64::MAX >> (64 - l) };
        for (j, &x) in values.iter().enumerate() {
            put_bits(&mut low, j * usize::from(l), l, x & mask);
            put_bits(&mut high, (x >> l) as usize + j, 1, 1);
        }
        out.extend_from_slice(&low);
        out.extend_from_slice(&high);
    }

    /// Decodes the sequence of `n` values starting at `*src` (a suffix of
    /// `data` at offset `at`) and checks its shape.
    fn decode(data: &[u8], at: usize, n: usize) -> Result<(EliasFano, usize), Corrupt> {
        let bad = Corrupt("truncated locator codes");
        let mut src = data.get(at..).ok_or(bad)?;
        let total = src.len();
        let (&l, rest) = src.split_first().ok_or(bad)?;
        src = rest;
        if l > 63 {
            return Err(Corrupt("locator low-bit width over 63"));
        }
        let max_high = get_varint64(&mut src).ok_or(bad)?;
        let low_len = n
            .checked_mul(usize::from(l))
            .ok_or(Corrupt("locator codes overflow"))?
            .div_ceil(8);
        let high_bits = EliasFano::high_bits_len(n, max_high)
            .filter(|&b| b <= src.len().saturating_mul(8))
            .ok_or(Corrupt("locator high bits exceed the block"))?;
        let high_len = high_bits.div_ceil(8);
        let low_start = at + (total - src.len());
        let high_start = low_start + low_len;
        let end = high_start
            .checked_add(high_len)
            .filter(|&e| e <= data.len())
            .ok_or(bad)?;
        let mut ef = EliasFano {
            n,
            low_bits: l,
            max_high,
            low: low_start..high_start,
            high: high_start..end,
            samples: vec![(0, 0)],
        };
        let sample_at = |p: usize, j: usize| Some((u32::try_from(p).ok()?, u32::try_from(j).ok()?));
        // Exactly n ones, the last one at the top of the bit vector, and no
        // bit set past its length.
        let high = data.get(ef.high.clone()).ok_or(bad)?;
        let ones: usize = high.iter().map(|b| b.count_ones() as usize).sum();
        if ones != n {
            return Err(Corrupt("locator codes disagree with the block count"));
        }
        let top = high_bits - 1;
        if n > 0 && !bit(high, top - 1) {
            return Err(Corrupt("locator codes do not reach their maximum"));
        }
        if (high_bits..high_len * 8).any(|p| bit(high, p)) {
            return Err(Corrupt("locator code bits past their end"));
        }
        // Within a bucket the low parts must not decrease.
        let (mut j, mut bucket, mut prev) = (0usize, 0u64, None);
        for p in 0..high_bits {
            if !bit(high, p) {
                bucket += 1;
                prev = None;
                if bucket % ZERO_SAMPLE == 0 {
                    let sample = sample_at(p + 1, j).ok_or(Corrupt("locator codes overflow"))?;
                    ef.samples.push(sample);
                }
                continue;
            }
            let low = ef.low(data, j);
            if prev.is_some_and(|q| q > low) {
                return Err(Corrupt("locator codes out of order"));
            }
            prev = Some(low);
            j += 1;
        }
        debug_assert!(bucket > ef.max_high || n == 0);
        Ok((ef, end))
    }

    fn low(&self, data: &[u8], j: usize) -> u64 {
        let low = data.get(self.low.clone()).unwrap_or_default();
        get_bits(low, j * usize::from(self.low_bits), self.low_bits)
    }

    /// Value `j` (for tests).
    #[cfg(test)]
    fn get(&self, data: &[u8], j: usize) -> Option<u64> {
        if j >= self.n {
            return None;
        }
        let high = data.get(self.high.clone())?;
        let mut seen = 0;
        for p in 0..high.len() * 8 {
            if get_bits(high, p, 1) == 1 {
                if seen == j {
                    let h = (p - j) as u64;
                    return Some((h << self.low_bits) | self.low(data, j));
                }
                seen += 1;
            }
        }
        None
    }

    /// The number of values `<= y`.
    fn count_le(&self, data: &[u8], y: u64) -> usize {
        let hy = y >> self.low_bits;
        if hy > self.max_high {
            return self.n;
        }
        let ly = y & (u64::MAX >> (63 - u32::from(self.low_bits)) >> 1);
        let high = data.get(self.high.clone()).unwrap_or_default();
        let bits = high.len() * 8;
        // From the sample below bucket hy, skip the rest of its hy zeros a
        // word at a time, counting the ones (values) met.
        let k = hy / ZERO_SAMPLE;
        let (mut pos, mut ones, mut need) =
            match usize::try_from(k).ok().and_then(|k| self.samples.get(k)) {
                Some(&(p, o)) => (p as usize, o as usize, hy - k * ZERO_SAMPLE),
                None => (0, 0, hy),
            };
        while need > 0 && pos < bits {
            let width = (bits - pos).min(64);
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            let word = get_bits(high, pos, 64) & mask;
            let zeros = !word & mask;
            let z = u64::from(zeros.count_ones());
            if z < need {
                need -= z;
                ones += word.count_ones() as usize;
                pos += width;
                continue;
            }
            // The need-th zero of this word ends the skip.
            let mut rest = zeros;
            for _ in 1..need {
                rest &= rest - 1;
            }
            let at = rest.trailing_zeros() as usize;
            ones += (word & ((1u64 << at) - 1)).count_ones() as usize;
            pos += at + 1;
            need = 0;
        }
        // In bucket hy, values are ordered by their low parts.
        while ones < self.n && bit(high, pos) && self.low(data, ones) <= ly {
            ones += 1;
            pos += 1;
        }
        ones
    }
}

/// How a locator codes its boundaries.
#[derive(Debug)]
enum Boundaries {
    Exact(KeyArray),
    Quantized(Quantizer, EliasFano),
}

/// One data block as the locator writer sees it.
#[derive(Clone, Debug)]
pub(crate) struct BlockSpan {
    /// First user key of the block.
    pub first: Vec<u8>,
    /// Last user key of the block.
    pub last: Vec<u8>,
    /// Pages the block takes (at least 1).
    pub pages: u64,
}

/// A decoded locator: finds the data block of a key within one partition.
#[derive(Debug)]
pub(crate) struct Locator {
    /// The encoded locator (in exact mode only up to the key array, which
    /// holds the rest).
    data: Vec<u8>,
    encoded_len: usize,
    first_page: u64,
    num_blocks: usize,
    /// `(block, pages)` of the blocks longer than a page, by block.
    long: Vec<(usize, u64)>,
    ambiguous: std::ops::Range<usize>,
    boundaries: Boundaries,
}

impl Locator {
    /// Decodes a locator that fills `data` exactly.
    pub(crate) fn new(data: Vec<u8>) -> Result<Locator, Corrupt> {
        let bad = Corrupt("truncated locator");
        let mut src = &data[..];
        let total = src.len();
        let (&mode, rest) = src.split_first().ok_or(bad)?;
        src = rest;
        let first_page = get_varint64(&mut src).ok_or(bad)?;
        let num_blocks = get_varint32(&mut src).ok_or(bad)? as usize;
        if num_blocks == 0 {
            return Err(Corrupt("locator of no block"));
        }
        let num_long = get_varint32(&mut src).ok_or(bad)? as usize;
        if num_long > num_blocks || num_long > src.len() / 2 {
            return Err(Corrupt("more long blocks than blocks"));
        }
        let mut long = Vec::with_capacity(num_long);
        for _ in 0..num_long {
            let block = get_varint32(&mut src).ok_or(bad)? as usize;
            let pages = get_varint32(&mut src).ok_or(bad)?;
            if block >= num_blocks || pages < 2 || long.last().is_some_and(|&(b, _)| b >= block) {
                return Err(Corrupt("bad long block in locator"));
            }
            long.push((block, u64::from(pages)));
        }
        let amb_len = num_blocks.div_ceil(8);
        let amb_start = total - src.len();
        let (_, rest) = src.split_at_checked(amb_len).ok_or(bad)?;
        src = rest;
        let at = total - src.len();
        let n = num_blocks - 1;
        let (boundaries, end) = match mode {
            MODE_EXACT => {
                let tail = data.get(at..).ok_or(bad)?;
                let (keys, used) = KeyArray::decode_at(tail, 0)?;
                let keys = KeyArray {
                    data: tail.get(..used).ok_or(bad)?.to_vec(),
                    ..keys
                };
                let end = at + used;
                if keys.len() != n {
                    return Err(Corrupt("locator key count disagrees with its blocks"));
                }
                (Boundaries::Exact(keys), end)
            }
            MODE_QUANTIZED => {
                let prefix_len = get_varint32(&mut src).ok_or(bad)? as usize;
                let (prefix, rest) = src.split_at_checked(prefix_len).ok_or(bad)?;
                src = rest;
                let (&shift, rest) = src.split_first().ok_or(bad)?;
                src = rest;
                if shift > 63 {
                    return Err(Corrupt("locator shift over 63"));
                }
                let base = get_varint64(&mut src).ok_or(bad)?;
                let q = Quantizer {
                    prefix: prefix.to_vec(),
                    shift,
                    base,
                };
                let (ef, end) = EliasFano::decode(&data, total - src.len(), n)?;
                (Boundaries::Quantized(q, ef), end)
            }
            _ => return Err(Corrupt("unknown locator mode")),
        };
        if end != data.len() {
            return Err(Corrupt("bytes after the locator"));
        }
        let mut data = data;
        if let Boundaries::Exact(_) = boundaries {
            data.truncate(at);
        }
        let loc = Locator {
            encoded_len: end,
            first_page,
            num_blocks,
            long,
            ambiguous: amb_start..amb_start + amb_len,
            boundaries,
            data,
        };
        if loc.is_ambiguous(0) || (num_blocks..amb_len * 8).any(|i| loc.is_ambiguous(i)) {
            return Err(Corrupt("ambiguity bit outside the boundaries"));
        }
        if loc.last_page().is_none() {
            return Err(Corrupt("locator pages overflow"));
        }
        Ok(loc)
    }

    /// Number of data blocks.
    pub(crate) fn len(&self) -> usize {
        self.num_blocks
    }

    /// Bytes held (the encoded locator).
    pub(crate) fn size(&self) -> usize {
        self.encoded_len
    }

    /// True if "exact" mode (for statistics and tests).
    #[cfg(test)]
    fn is_exact(&self) -> bool {
        matches!(self.boundaries, Boundaries::Exact(_))
    }

    fn is_ambiguous(&self, i: usize) -> bool {
        let amb = self.data.get(self.ambiguous.clone()).unwrap_or_default();
        get_bits(amb, i, 1) == 1
    }

    /// `(first page, pages)` of block `g`.
    pub(crate) fn pages(&self, g: usize) -> (u64, u64) {
        let mut page = self.first_page.saturating_add(g as u64);
        let mut pages = 1;
        for &(b, p) in &self.long {
            match b.cmp(&g) {
                Ordering::Less => page = page.saturating_add(p - 1),
                Ordering::Equal => pages = p,
                Ordering::Greater => break,
            }
        }
        (page, pages)
    }

    /// The page after the last block.
    pub(crate) fn last_page(&self) -> Option<u64> {
        let extra = self
            .long
            .iter()
            .try_fold(0u64, |acc, &(_, p)| acc.checked_add(p - 1))?;
        self.first_page
            .checked_add(self.num_blocks as u64)?
            .checked_add(extra)
    }

    /// Number of boundaries whose code is `<= k`'s.
    fn count_le(&self, k: &[u8]) -> usize {
        match &self.boundaries {
            Boundaries::Exact(keys) => keys.count_le(k),
            Boundaries::Quantized(q, ef) => match q.code(k) {
                Code::Below => 0,
                Code::Above => ef.n,
                Code::At(v) => ef.count_le(&self.data, v),
            },
        }
    }

    /// True if boundary `i` (of block `i`, `1 <= i < len()`) has `k`'s code.
    fn code_eq(&self, i: usize, k: &[u8]) -> bool {
        let Some(j) = i.checked_sub(1) else {
            return false;
        };
        match &self.boundaries {
            Boundaries::Exact(keys) => keys.key_eq(j, k),
            Boundaries::Quantized(q, ef) => match q.code(k) {
                Code::At(v) => {
                    // Codes are sorted: `Q_i == v` iff exactly the boundaries
                    // up to i are <= v and i's is not < v.
                    let le = ef.count_le(&self.data, v);
                    le >= i && (v == 0 || ef.count_le(&self.data, v - 1) < i)
                }
                _ => false,
            },
        }
    }

    /// The first block that can hold `k`.
    pub(crate) fn find(&self, k: &[u8]) -> usize {
        let mut g = self.count_le(k).min(self.num_blocks - 1);
        while g > 0 && self.is_ambiguous(g) && self.code_eq(g, k) {
            g -= 1;
        }
        g
    }

    /// True if `k`'s entries may continue from block `next - 1` into block
    /// `next` (false when `next` is past the last block).
    pub(crate) fn continues(&self, next: usize, k: &[u8]) -> bool {
        next < self.num_blocks && self.is_ambiguous(next) && self.code_eq(next, k)
    }

    /// True if block `g`'s actual first user key agrees with the code of its
    /// boundary. A Get checks this on the data block it lands on, so that a
    /// locator sending it to a wrong block is caught by the block's own keys.
    pub(crate) fn agrees_with_first(&self, g: usize, first_user: &[u8]) -> bool {
        if g == 0 || g >= self.num_blocks {
            return g == 0;
        }
        match &self.boundaries {
            Boundaries::Exact(keys) => keys.is_prefix_of(g - 1, first_user),
            Boundaries::Quantized(..) => self.code_eq(g, first_user),
        }
    }

    /// Boundary code `i` as text (for `shale sst` and tests).
    #[cfg(test)]
    fn code(&self, i: usize) -> Option<u64> {
        match &self.boundaries {
            Boundaries::Quantized(_, ef) => ef.get(&self.data, i.checked_sub(1)?),
            Boundaries::Exact(_) => None,
        }
    }
}

/// The writer accepts a quantized code when at most one boundary in
/// `AMBIGUITY_LIMIT` is ambiguous beyond the continuations (each costs a
/// second block read for the few keys that share its code).
const AMBIGUITY_LIMIT: usize = 16;

/// Bits per boundary the writer first tries above the Elias-Fano minimum.
const FIRST_CODE_BITS: u32 = 6;

/// The shortest prefix of `b` greater than `a` (`a < b`), or `b` if `a == b`.
fn exact_boundary(a: &[u8], b: &[u8]) -> Vec<u8> {
    if a == b {
        return b.to_vec();
    }
    let p = common_prefix(a, b);
    b[..(p + 1).min(b.len())].to_vec()
}

/// Encodes the locator of `blocks` (consecutive data blocks starting on
/// `first_page`), choosing the smaller of the exact and the best acceptable
/// quantized coding.
pub(crate) fn encode_locator(first_page: u64, blocks: &[BlockSpan]) -> Vec<u8> {
    let m = blocks.len();
    let mut head = Vec::new();
    put_varint64(&mut head, first_page);
    put_varint32(&mut head, m as u32);
    let long: Vec<(usize, u64)> = blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.pages > 1)
        .map(|(i, b)| (i, b.pages))
        .collect();
    put_varint32(&mut head, long.len() as u32);
    for (i, p) in &long {
        put_varint32(&mut head, *i as u32);
        put_varint32(&mut head, *p as u32);
    }
    let pairs: Vec<(&[u8], &[u8])> = blocks
        .windows(2)
        .map(|w| (w[0].last.as_slice(), w[1].first.as_slice()))
        .collect();

    let mut exact_amb = vec![0u8; m.div_ceil(8)];
    let mut keys = Vec::with_capacity(pairs.len());
    for (i, (a, b)) in pairs.iter().enumerate() {
        if a == b {
            put_bits(&mut exact_amb, i + 1, 1, 1);
        }
        keys.push((exact_boundary(a, b), 0));
    }
    let mut exact = vec![MODE_EXACT];
    exact.extend_from_slice(&head);
    exact.extend_from_slice(&exact_amb);
    encode_key_array(&mut exact, 0, &keys);

    match quantized(&pairs, m) {
        Some((q, amb, codes)) => {
            let mut out = vec![MODE_QUANTIZED];
            out.extend_from_slice(&head);
            out.extend_from_slice(&amb);
            put_varint32(&mut out, q.prefix.len() as u32);
            out.extend_from_slice(&q.prefix);
            out.push(q.shift);
            put_varint64(&mut out, q.base);
            EliasFano::encode(&mut out, &codes);
            if out.len() < exact.len() {
                out
            } else {
                exact
            }
        }
        None => exact,
    }
}

/// The quantized coding of the boundaries `(a_i, b_i)`, if one is acceptable:
/// the quantizer, the ambiguity bits and the codes.
fn quantized(pairs: &[(&[u8], &[u8])], m: usize) -> Option<(Quantizer, Vec<u8>, Vec<u64>)> {
    let (first, last) = (pairs.first()?, pairs.last()?);
    let prefix_len = common_prefix(first.0, last.1);
    let prefix = first.0[..prefix_len].to_vec();
    let n = pairs.len();
    let span = Quantizer::window(prefix_len, 0, last.1) - Quantizer::window(prefix_len, 0, first.1);
    let span_bits = 64 - span.leading_zeros();
    let n_bits = 64 - (n as u64).leading_zeros();
    let mut shift = span_bits.saturating_sub(n_bits + FIRST_CODE_BITS);
    let continuations = pairs.iter().filter(|(a, b)| a == b).count();
    loop {
        let s = shift as u8;
        let base = Quantizer::window(prefix_len, s, first.1);
        let mut amb = vec![0u8; m.div_ceil(8)];
        let mut codes = Vec::with_capacity(n);
        let mut ambiguous = 0;
        for (i, (a, b)) in pairs.iter().enumerate() {
            let qb = Quantizer::window(prefix_len, s, b);
            if Quantizer::window(prefix_len, s, a) == qb {
                put_bits(&mut amb, i + 1, 1, 1);
                ambiguous += 1;
            }
            codes.push(qb - base);
        }
        if (ambiguous - continuations) * AMBIGUITY_LIMIT <= n {
            let q = Quantizer {
                prefix,
                shift: s,
                base,
            };
            return Some((q, amb, codes));
        }
        if shift == 0 {
            return None;
        }
        shift -= 1;
    }
}

#[cfg(test)]
mod tests;
