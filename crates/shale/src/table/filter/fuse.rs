//! Binary fuse filters (Graf and Lemire, "Binary Fuse Filters: Fast and Smaller
//! Than Xor Filters", 2022): a filter-partition kind for table format version 3.
//!
//! Each key owns three slots of an array of `fingerprint_bits`-wide fingerprints,
//! one in each of three consecutive segments, and the array is filled so that the
//! three fingerprints of every key XOR to the key's own fingerprint. A probe reads
//! three slots and compares, so an absent key passes with probability
//! `2^-fingerprint_bits`, at about 1.13 (large sets) to 1.25 (a few thousand keys)
//! slots per key: f = 7 gives ~0.8% at ~9 bits per key in a 4 KiB partition,
//! where the blocked Bloom filter of [`super::bloom`] needs 10 bits per key for
//! ~1%.
//!
//! The array is filled by peeling: a slot that only one key uses can be set last
//! for that key, whatever the others hold, so keys are removed slot by slot and
//! then assigned in the reverse order. Peeling fails when a core of keys that share
//! all their slots remains; the builder then retries with the next seed of a fixed
//! sequence, so construction is deterministic. See [`build_fuse`] for the byte
//! grammar (also in `docs/format/table.md`, "Binary fuse filter (format 2)").
//!
//! Table format version 3 writes it into filter partitions when the filter
//! policy asks for [`super::FilterKind::BinaryFuse`] (the default).

use crate::format::{decode_fixed32, decode_fixed64, put_fixed32, put_fixed64};
use crate::table::block::Corrupt;

/// The last byte of a binary fuse filter. Persisted: DO NOT CHANGE.
pub(crate) const FILTER_FORMAT_FUSE: u8 = 2;

/// Smallest fingerprint width readers accept. Persisted: DO NOT CHANGE.
pub(crate) const FUSE_MIN_FINGERPRINT_BITS: u8 = 4;

/// Largest fingerprint width readers accept: a fingerprint spans at most three
/// bytes, read as one 4-byte word. Persisted: DO NOT CHANGE.
pub(crate) const FUSE_MAX_FINGERPRINT_BITS: u8 = 16;

/// Largest `segment_length_log2`. It is also the shift that picks the second
/// slot's in-segment offset from the mixed hash, so the two offsets come from
/// disjoint bits. Persisted: DO NOT CHANGE.
const MAX_SEGMENT_LENGTH_LOG2: u8 = 18;

/// `kind` of a filter whose fingerprints were placed by peeling.
/// Persisted: DO NOT CHANGE.
const KIND_PEELED: u8 = 0;

/// `kind` of a filter that answers "maybe" to every probe: what the builder
/// writes if no seed peels (see [`build_fuse`]). Persisted: DO NOT CHANGE.
const KIND_PASS_ALL: u8 = 1;

/// Bytes of the header before the fingerprints. Persisted: DO NOT CHANGE.
const HEADER_LEN: usize = 15;

/// Seeds a builder tries per geometry before it falls back. Not persisted: the
/// seed used is in the header. A seed peels a set sized by [`SIZING`] with
/// probability about 0.25 or more (test `each_seed_peels_often_enough`), so 128
/// failures in a row happen with probability below 1e-15.
const ATTEMPTS_PER_GEOMETRY: u32 = 128;

/// More distinct keys than this are not peeled (slot counts and slot indices are
/// `u32`); the builder writes a pass-all filter of the usual size instead. Far
/// beyond any filter partition.
const MAX_PEELED_KEYS: usize = 1 << 31;

/// The format of a serialized filter: its last byte, for every filter kind
/// ([`super::bloom::FILTER_FORMAT_BLOCKED_XXH3`] for the blocked Bloom filter,
/// [`FILTER_FORMAT_FUSE`] for this one), so that one decoder can dispatch on it.
/// `None` for empty input.
pub(crate) fn filter_format(data: &[u8]) -> Option<u8> {
    data.last().copied()
}

/// The shape of the slot array: `segment_count + 2` segments of
/// `1 << segment_length_log2` slots; a key's first slot lies in one of the first
/// `segment_count` segments and its other two in the next two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Geometry {
    segment_length_log2: u8,
    /// 0 only for the empty filter, which has no slots.
    segment_count: u32,
}

/// The builder's sizing rule, measured rather than derived (test
/// `peel_success_sweep`); not persisted, as the header holds the geometry. A set
/// of `n` keys uses the last row whose first entry is at most `n`:
/// `(fewest keys, segment_length_log2, slots per key * 1024)`.
///
/// Up to ~100k keys segments have `2^k` slots from `n = 3.33^(k - 0.5)` on, a
/// quarter of the paper's length (`3.33^(k - 2.25)`): at a few thousand keys
/// that takes ~3% fewer slots per key (measured at 3,300 keys: 1.235 slots per
/// key with segments of 128, 1.260 with 256), as the two extra segments at the
/// ends of the array, which are never full, are shorter. Longer segments win
/// again above ~200k keys (measured: 2^11 at 275k, 2^13 at 1M), and from 1.4M on
/// the rows follow the paper's rule. The slots per key are the fewest at which
/// one seed still peels about a quarter or more of random sets at the worst
/// sizes of the row (just below each step to one more segment), counting the
/// half segment `Geometry::for_keys` adds.
const SIZING: [(u64, u8, u64); 19] = [
    (1, 0, 3072),
    (2, 1, 1792),
    (7, 2, 1639),
    (21, 3, 1536),
    (68, 4, 1434),
    (225, 5, 1362),
    (748, 6, 1283),
    (2489, 7, 1247),
    (8286, 8, 1220),
    (27592, 9, 1197),
    (91880, 10, 1180),
    (180_000, 11, 1168),
    (400_000, 12, 1158),
    (900_000, 13, 1150),
    (1_376_321, 14, 1147),
    (4_583_149, 15, 1147),
    (15_261_886, 16, 1147),
    (50_822_081, 17, 1147),
    (169_237_530, 18, 1147),
];

impl Geometry {
    /// The geometry the builder uses for `n` distinct keys ([`SIZING`]):
    /// `capacity = ceil(n * per_key / 1024) + L / 2` slots, cut into
    /// `max(1, ceil(capacity / L) - 2)` segments plus the two at the end.
    fn for_keys(n: usize) -> Geometry {
        let n = n as u64;
        let Some(&(_, log2, per_key)) = SIZING.iter().take_while(|row| row.0 <= n).last() else {
            return Geometry {
                segment_length_log2: 0,
                segment_count: 0,
            };
        };
        let len = 1u64 << log2;
        let capacity = n
            .saturating_mul(per_key)
            .div_ceil(1024)
            .saturating_add(len / 2);
        let segments = capacity.div_ceil(len).saturating_sub(2).max(1);
        Geometry {
            segment_length_log2: log2,
            segment_count: u32::try_from(segments).unwrap_or(u32::MAX),
        }
    }

    /// The same slots cut into segments half as long (twice as many, plus 2),
    /// or `None` when segments are a single slot.
    fn halved(self) -> Option<Geometry> {
        let log2 = self.segment_length_log2.checked_sub(1)?;
        let count = self.segment_count.checked_mul(2)?.checked_add(2)?;
        Some(Geometry {
            segment_length_log2: log2,
            segment_count: count,
        })
    }

    /// Slots a first slot can take: `segment_count * segment_length`.
    fn span(self) -> u64 {
        u64::from(self.segment_count) << self.segment_length_log2
    }

    /// Slots in the array: `(segment_count + 2) * segment_length`, 0 if empty.
    fn array_len(self) -> u64 {
        if self.segment_count == 0 {
            0
        } else {
            (u64::from(self.segment_count) + 2) << self.segment_length_log2
        }
    }
}

/// Bytes holding `slots` packed fingerprints of `bits` bits, or `None` on
/// overflow.
fn packed_bytes(slots: u64, bits: u8) -> Option<usize> {
    let total = slots.checked_mul(u64::from(bits))?;
    usize::try_from(total.div_ceil(8)).ok()
}

/// The fingerprint width the builder uses for a requested one.
fn clamp_bits(fingerprint_bits: u8) -> u8 {
    fingerprint_bits.clamp(FUSE_MIN_FINGERPRINT_BITS, FUSE_MAX_FINGERPRINT_BITS)
}

/// A bijection of 64-bit words (the SplitMix64 output function) applied to
/// `h + seed`: distinct hashes stay distinct under every seed.
#[inline]
fn mix(h: u64, seed: u64) -> u64 {
    let mut x = h.wrapping_add(seed);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The `i`-th seed the builder tries. Not persisted (the header holds the seed
/// used); fixed so that the builder is deterministic.
fn seed_at(i: u32) -> u64 {
    mix(u64::from(i), 0x6675_7365_5f73_6565) // "fuse_see"
}

/// A key's fingerprint, from its mixed hash.
#[inline]
fn fingerprint(m: u64, mask: u32) -> u32 {
    (m ^ (m >> 32)) as u32 & mask
}

/// A key's three slots, from its mixed hash: one in segment `s`, one in `s + 1`,
/// one in `s + 2`. The in-segment offsets of the second and third are the first's
/// XORed with hash bits, which keeps each inside its segment (segments are
/// aligned powers of two).
#[inline]
fn slots(m: u64, span: u64, log2: u8) -> [u64; 3] {
    let len = 1u64 << log2;
    let offset_mask = len - 1;
    let s0 = ((u128::from(m) * u128::from(span)) >> 64) as u64;
    let s1 = (s0 + len) ^ ((m >> MAX_SEGMENT_LENGTH_LOG2) & offset_mask);
    let s2 = (s0 + 2 * len) ^ (m & offset_mask);
    [s0, s1, s2]
}

/// Working memory of the builder, reused across attempts.
#[derive(Default)]
struct Peeler {
    /// Keys using each slot.
    count: Vec<u32>,
    /// XOR of the mixed hashes of the keys using each slot.
    xor: Vec<u64>,
    /// Slots to look at, used by one key when pushed.
    pending: Vec<u32>,
    /// Peeled keys in order: (mixed hash, the slot it alone used).
    order: Vec<(u64, u32)>,
}

impl Peeler {
    /// Fills `fingerprints` (one entry per slot of `g`) for the distinct `keys`
    /// under `seed`; false if peeling leaves keys behind.
    fn peel(
        &mut self,
        keys: &[u64],
        g: Geometry,
        seed: u64,
        mask: u32,
        fingerprints: &mut Vec<u32>,
    ) -> bool {
        let Ok(slot_count) = usize::try_from(g.array_len()) else {
            return false;
        };
        let (span, log2) = (g.span(), g.segment_length_log2);
        self.count.clear();
        self.count.resize(slot_count, 0);
        self.xor.clear();
        self.xor.resize(slot_count, 0);
        for &k in keys {
            let m = mix(k, seed);
            for s in slots(m, span, log2) {
                let s = s as usize;
                if let (Some(c), Some(x)) = (self.count.get_mut(s), self.xor.get_mut(s)) {
                    *c += 1;
                    *x ^= m;
                }
            }
        }
        self.pending.clear();
        self.pending.extend(
            self.count
                .iter()
                .enumerate()
                .filter(|&(_, &c)| c == 1)
                .map(|(s, _)| s as u32),
        );
        self.order.clear();
        while let Some(slot) = self.pending.pop() {
            let i = slot as usize;
            // A slot can lose its last key after it was pushed.
            if self.count.get(i) != Some(&1) {
                continue;
            }
            let Some(&m) = self.xor.get(i) else {
                return false;
            };
            self.order.push((m, slot));
            for s in slots(m, span, log2) {
                let s = s as usize;
                if let (Some(c), Some(x)) = (self.count.get_mut(s), self.xor.get_mut(s)) {
                    *c -= 1;
                    *x ^= m;
                    if *c == 1 {
                        self.pending.push(s as u32);
                    }
                }
            }
        }
        if self.order.len() != keys.len() {
            return false;
        }
        fingerprints.clear();
        fingerprints.resize(slot_count, 0);
        // In reverse peeling order each key's own slot is still 0 and is not
        // touched by any key assigned after it.
        for &(m, own) in self.order.iter().rev() {
            let mut v = fingerprint(m, mask);
            for s in slots(m, span, log2) {
                v ^= fingerprints.get(s as usize).copied().unwrap_or(0);
            }
            if let Some(f) = fingerprints.get_mut(own as usize) {
                *f = v;
            }
        }
        true
    }
}

/// Exact length of the filter [`build_fuse`] writes for `num_keys` distinct keys
/// and `fingerprint_bits` (clamped to 4..=16 as [`build_fuse`] does). It does not
/// depend on the keys: retries change the seed, never the size. Saturates at
/// `usize::MAX` for impossible key counts.
pub(crate) fn fuse_size(num_keys: usize, fingerprint_bits: u8) -> usize {
    let g = Geometry::for_keys(num_keys);
    packed_bytes(g.array_len(), clamp_bits(fingerprint_bits))
        .and_then(|b| b.checked_add(HEADER_LEN + 1))
        .unwrap_or(usize::MAX)
}

/// Builds a binary fuse filter from the 64-bit hashes of a set of keys
/// ([`super::filter_hash`] of each user key; duplicates are ignored),
/// with fingerprints of `fingerprint_bits` bits (clamped to 4..=16). Its length is
/// exactly [`fuse_size`] of the number of distinct hashes.
///
/// Deterministic: the same hashes in any order give the same bytes. The builder
/// tries seeds [`seed_at`]`(0..128)` on the geometry of [`Geometry::for_keys`],
/// then the same slots cut into twice as many segments half as long with the
/// same seeds, and if all of that fails (probability below 1e-30) writes a
/// pass-all filter of the same size, which is never wrong, only useless. The
/// size never depends on which of these happened.
///
/// Grammar (byte-exact; also in `docs/format/table.md`):
///
/// ```text
/// fuse_filter  := header fingerprints format:u8
/// header       := seed:fixed64_le segment_count:fixed32_le
///                 segment_length_log2:u8 fingerprint_bits:u8 kind:u8
/// fingerprints := byte{ceil(array_len * fingerprint_bits / 8)}
///                 // slot j is bits [j*w, (j+1)*w) of the fingerprints, w =
///                 // fingerprint_bits, least significant bit first; bit b is bit
///                 // (b % 8) of byte (b / 8); bits past array_len * w are 0
/// format       := 2                        // FILTER_FORMAT_FUSE
///
/// fingerprint_bits    in 4..=16
/// segment_length_log2 in 0..=18;  L = 1 << segment_length_log2
/// array_len = (segment_count + 2) * L, or 0 if segment_count == 0
/// kind      := 0 (peeled) | 1 (pass-all: seed 0, every fingerprint byte 0)
/// segment_count == 0: the empty filter (seed 0, segment_length_log2 0, kind 0)
///
/// probe of h = xxh3_64(user_key), in 64-bit wrapping arithmetic:
///   x  = h + seed
///   x  = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
///   x  = (x ^ (x >> 27)) * 0x94d049bb133111eb
///   m  = x ^ (x >> 31)
///   s0 = (m * (segment_count * L)) >> 64              // 128-bit product
///   s1 = (s0 + L)     ^ ((m >> 18) & (L - 1))
///   s2 = (s0 + 2 * L) ^ (m & (L - 1))
///   fp = (m ^ (m >> 32)) & ((1 << w) - 1)
///   maybe present  iff  F[s0] ^ F[s1] ^ F[s2] == fp
/// ```
///
/// The empty filter answers "absent" and a pass-all filter "maybe" to every
/// probe.
pub(crate) fn build_fuse(hashes: &[u64], fingerprint_bits: u8) -> Vec<u8> {
    build_fuse_with(hashes, fingerprint_bits, [ATTEMPTS_PER_GEOMETRY; 2])
}

/// [`build_fuse`] trying `attempts[0]` seeds on the first geometry and
/// `attempts[1]` on the halved one (tests force the fallbacks with zeros).
fn build_fuse_with(hashes: &[u64], fingerprint_bits: u8, attempts: [u32; 2]) -> Vec<u8> {
    let bits = clamp_bits(fingerprint_bits);
    let mut keys = hashes.to_vec();
    keys.sort_unstable();
    keys.dedup();
    let g = Geometry::for_keys(keys.len());
    let mask = (1u32 << bits) - 1;
    let mut fingerprints = Vec::new();
    let mut found = None;
    if keys.is_empty() {
        found = Some((g, 0));
    } else if keys.len() <= MAX_PEELED_KEYS {
        let mut peeler = Peeler::default();
        let stages = [(Some(g), attempts[0]), (g.halved(), attempts[1])];
        'search: for (geometry, attempts) in stages {
            let Some(geometry) = geometry else { continue };
            for i in 0..attempts {
                let seed = seed_at(i);
                if peeler.peel(&keys, geometry, seed, mask, &mut fingerprints) {
                    found = Some((geometry, seed));
                    break 'search;
                }
            }
        }
    }
    let (geometry, seed, kind) = match found {
        Some((geometry, seed)) => (geometry, seed, KIND_PEELED),
        None => {
            fingerprints.clear();
            (g, 0, KIND_PASS_ALL)
        }
    };
    // Halving the segments keeps the slots, so every outcome has the same size.
    let array_bytes = packed_bytes(geometry.array_len(), bits).unwrap_or(0);
    let mut out = Vec::with_capacity(HEADER_LEN + array_bytes + 1);
    put_fixed64(&mut out, seed);
    put_fixed32(&mut out, geometry.segment_count);
    out.push(geometry.segment_length_log2);
    out.push(bits);
    out.push(kind);
    // Pack least significant bit first through a 64-bit accumulator.
    let (mut acc, mut acc_bits) = (0u64, 0u32);
    for &f in &fingerprints {
        acc |= u64::from(f) << acc_bits;
        acc_bits += u32::from(bits);
        while acc_bits >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            acc_bits -= 8;
        }
    }
    if acc_bits > 0 {
        out.push(acc as u8);
    }
    // A pass-all filter keeps the size with zero fingerprints.
    out.resize(HEADER_LEN + array_bytes, 0);
    out.push(FILTER_FORMAT_FUSE);
    out
}

/// What a decoded filter answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    /// "Absent" to every probe (no keys).
    Never,
    /// "Maybe" to every probe.
    Always,
    /// Compare fingerprints.
    Peeled,
}

/// A decoded binary fuse filter.
#[derive(Debug)]
pub(crate) struct FuseFilter {
    /// The serialized filter, header and format byte included.
    data: Vec<u8>,
    answer: Answer,
    seed: u64,
    /// `segment_count * segment_length`.
    span: u64,
    segment_length_log2: u8,
    fingerprint_bits: u8,
    mask: u32,
}

impl FuseFilter {
    /// Checks every header field and the exact length of a serialized filter and
    /// wraps it. Never panics.
    pub(crate) fn new(data: Vec<u8>) -> Result<FuseFilter, Corrupt> {
        let Some((header, rest)) = data.split_first_chunk::<HEADER_LEN>() else {
            return Err(Corrupt("fuse filter shorter than its header"));
        };
        let Some((&format, fingerprints)) = rest.split_last() else {
            return Err(Corrupt("fuse filter without a format byte"));
        };
        if format != FILTER_FORMAT_FUSE {
            return Err(Corrupt("not a fuse filter"));
        }
        let (Some(seed), Some(segment_count)) = (
            decode_fixed64(header),
            header.get(8..).and_then(decode_fixed32),
        ) else {
            return Err(Corrupt("fuse filter header"));
        };
        let &[.., log2, bits, kind] = header;
        if !(FUSE_MIN_FINGERPRINT_BITS..=FUSE_MAX_FINGERPRINT_BITS).contains(&bits) {
            return Err(Corrupt("fuse filter fingerprint width"));
        }
        if log2 > MAX_SEGMENT_LENGTH_LOG2 {
            return Err(Corrupt("fuse filter segment length"));
        }
        let g = Geometry {
            segment_length_log2: log2,
            segment_count,
        };
        let answer = match kind {
            _ if segment_count == 0 => {
                if seed != 0 || log2 != 0 || kind != KIND_PEELED {
                    return Err(Corrupt("empty fuse filter with a non-zero field"));
                }
                Answer::Never
            }
            KIND_PEELED => Answer::Peeled,
            KIND_PASS_ALL => {
                if seed != 0 || fingerprints.iter().any(|&b| b != 0) {
                    return Err(Corrupt("pass-all fuse filter with a non-zero field"));
                }
                Answer::Always
            }
            _ => return Err(Corrupt("unknown fuse filter kind")),
        };
        let Some(array_bits) = g.array_len().checked_mul(u64::from(bits)) else {
            return Err(Corrupt("fuse filter size overflows"));
        };
        if packed_bytes(g.array_len(), bits) != Some(fingerprints.len()) {
            return Err(Corrupt("fuse filter size disagrees with its geometry"));
        }
        let tail_bits = (array_bits % 8) as u32;
        if tail_bits != 0 && fingerprints.last().is_some_and(|&b| b >> tail_bits != 0) {
            return Err(Corrupt("fuse filter padding bits set"));
        }
        Ok(FuseFilter {
            answer,
            seed,
            span: g.span(),
            segment_length_log2: log2,
            fingerprint_bits: bits,
            mask: (1u32 << bits) - 1,
            data,
        })
    }

    /// The fingerprint in slot `j`, from the 4-byte word that ends at its last
    /// byte (the header in front makes such a word exist for every slot).
    #[inline]
    fn slot(&self, j: u64) -> Option<u32> {
        let w = u64::from(self.fingerprint_bits);
        let bit = (HEADER_LEN as u64 * 8).checked_add(j.checked_mul(w)?)?;
        let end = usize::try_from(bit.checked_add(w)?.div_ceil(8)).ok()?;
        let word = u32::from_le_bytes(*self.data.get(..end)?.last_chunk::<4>()?);
        // The word holds bits [8 * end - 32, 8 * end) and the slot ends in its
        // last byte, so the shift is in 9..=28.
        let shift = bit.checked_add(32)?.checked_sub(8 * end as u64)?;
        Some((word >> shift) & self.mask)
    }

    /// False only if no key with this hash was added. Never allocates.
    pub(crate) fn may_contain_hash(&self, h: u64) -> bool {
        match self.answer {
            Answer::Never => false,
            Answer::Always => true,
            Answer::Peeled => {
                let m = mix(h, self.seed);
                let [s0, s1, s2] = slots(m, self.span, self.segment_length_log2);
                match (self.slot(s0), self.slot(s1), self.slot(s2)) {
                    (Some(a), Some(b), Some(c)) => a ^ b ^ c == fingerprint(m, self.mask),
                    // Unreachable for a validated filter; never a false negative.
                    _ => true,
                }
            }
        }
    }

    /// [`FuseFilter::may_contain_hash`] of [`super::filter_hash`] of a user key.
    #[inline]
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(super::filter_hash(user_key))
    }

    /// Bytes held: the serialized filter, header and format byte included.
    pub(crate) fn size(&self) -> usize {
        self.data.len()
    }

    /// Width of a fingerprint in bits.
    #[cfg(test)]
    pub(crate) fn fingerprint_bits(&self) -> u8 {
        self.fingerprint_bits
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::table::filter::bloom::{build_filter, Filter, FILTER_FORMAT_BLOCKED_XXH3};
    use crate::table::filter::filter_hash;
    use crate::table::test_util::Rng;

    /// `n` distinct random hashes, in generation order.
    fn distinct_hashes(seed: u64, n: usize) -> Vec<u64> {
        let mut rng = Rng::new(seed);
        let mut seen = HashSet::with_capacity(n);
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let h = rng.next_u64();
            if seen.insert(h) {
                out.push(h);
            }
        }
        out
    }

    fn decode(bytes: Vec<u8>) -> FuseFilter {
        FuseFilter::new(bytes).expect("a built filter decodes")
    }

    /// Share of `probes` random hashes outside `keys` that `may_contain` admits.
    fn measured_fpr(may_contain: impl Fn(u64) -> bool, keys: &[u64], probes: usize) -> f64 {
        let present: HashSet<u64> = keys.iter().copied().collect();
        let mut rng = Rng::new(0xfa15e ^ keys.len() as u64);
        let (mut probed, mut passed) = (0usize, 0usize);
        while probed < probes {
            let h = rng.next_u64();
            if present.contains(&h) {
                continue;
            }
            probed += 1;
            passed += usize::from(may_contain(h));
        }
        passed as f64 / probes as f64
    }

    /// Bits per key of a serialized filter, everything included.
    fn bits_per_key_of(bytes: usize, keys: usize) -> f64 {
        (bytes * 8) as f64 / keys as f64
    }

    #[test]
    fn no_false_negatives_at_any_size_or_width() {
        for n in [0, 1, 2, 3, 10, 100, 1000, 3000, 5000, 100_000] {
            for bits in [4, 7, 8, 11, 16] {
                let keys = distinct_hashes(31 * n as u64 + u64::from(bits), n);
                let f = decode(build_fuse(&keys, bits));
                assert_eq!(f.fingerprint_bits(), bits);
                let want = if n == 0 {
                    Answer::Never
                } else {
                    Answer::Peeled
                };
                assert_eq!(f.answer, want, "n={n} f={bits}: no fallback");
                for &k in &keys {
                    assert!(f.may_contain_hash(k), "false negative: n={n} f={bits}");
                }
            }
        }
    }

    #[test]
    fn false_positive_rate_is_within_bounds() {
        let probes = 200_000;
        for n in [3000, 100_000] {
            for bits in [6u8, 7, 8, 10, 12] {
                let keys = distinct_hashes(7 * n as u64 + u64::from(bits), n);
                let f = decode(build_fuse(&keys, bits));
                let fpr = measured_fpr(|h| f.may_contain_hash(h), &keys, probes);
                let ideal = 0.5f64.powi(i32::from(bits));
                // Four standard deviations of the measurement.
                let slack = 4.0 * (ideal / probes as f64).sqrt();
                eprintln!(
                    "fuse n={n} f={bits}: FPR {:.4}% (2^-f = {:.4}%), {:.2} bits/key",
                    fpr * 100.0,
                    ideal * 100.0,
                    bits_per_key_of(f.size(), n)
                );
                assert!(fpr <= 1.3 * ideal + slack, "n={n} f={bits}: FPR {fpr}");
                // Far below 2^-f would be a broken measurement, not a better
                // filter.
                assert!(fpr >= 0.5 * ideal - slack, "n={n} f={bits}: FPR {fpr}");
            }
        }
    }

    /// Bits per key and measured FPR of a blocked Bloom filter over `keys`.
    fn bloom(keys: &[u64], bits_per_key: u32, probes: usize) -> (f64, f64) {
        let f = Filter::new(build_filter(keys, bits_per_key)).expect("bloom decodes");
        // The filter block's 6-byte trailer is part of its size.
        let per_key = bits_per_key_of(f.size() + 6, keys.len());
        (
            per_key,
            measured_fpr(|h| f.may_contain_hash(h), keys, probes),
        )
    }

    #[test]
    fn fewer_bits_per_key_than_the_bloom_filter_at_the_same_fpr() {
        let n = 3000; // about one page-sized partition
        let keys = distinct_hashes(3, n);
        let probes = 200_000;
        let (bloom10_bits, bloom10_fpr) = bloom(&keys, 10, probes);
        let (bloom12_bits, bloom12_fpr) = bloom(&keys, 12, probes);
        eprintln!(
            "bloom: {bloom10_bits:.2} bits/key {:.3}%",
            bloom10_fpr * 100.0
        );
        eprintln!(
            "bloom: {bloom12_bits:.2} bits/key {:.3}%",
            bloom12_fpr * 100.0
        );
        let mut fuse = Vec::new();
        for bits in [7u8, 8] {
            let f = decode(build_fuse(&keys, bits));
            let per_key = bits_per_key_of(f.size(), n);
            let fpr = measured_fpr(|h| f.may_contain_hash(h), &keys, probes);
            eprintln!("fuse f={bits}: {per_key:.2} bits/key {:.3}%", fpr * 100.0);
            fuse.push((per_key, fpr));
        }
        let ((bits7, fpr7), (bits8, fpr8)) = (fuse[0], fuse[1]);
        // f = 7 against the Bloom filter's 10 bits per key: fewer bits, fewer
        // false positives.
        assert!(
            bits7 < 9.1 && bits7 < bloom10_bits - 1.0,
            "f=7: {bits7} bits/key"
        );
        assert!(fpr7 < bloom10_fpr, "f=7 FPR {fpr7} vs {bloom10_fpr}");
        // f = 8 against 12 bits per key, which reaches the same rate.
        assert!(
            bits8 < 10.4 && bits8 < bloom12_bits - 1.5,
            "f=8: {bits8} bits/key"
        );
        assert!(fpr8 < 1.2 * bloom12_fpr, "f=8 FPR {fpr8} vs {bloom12_fpr}");
    }

    #[test]
    fn fuse_size_is_the_built_length() {
        let mut sizes: Vec<usize> = (0..=260).collect();
        let mut n = 261;
        while n < 40_000 {
            sizes.push(n);
            n = n * 7 / 6;
        }
        // Both sides of every change of segment length.
        for &(first, ..) in SIZING.iter().filter(|r| r.0 < 40_000) {
            sizes.extend([first as usize - 1, first as usize, first as usize + 1]);
        }
        for (i, &n) in sizes.iter().enumerate() {
            let keys = distinct_hashes(n as u64, n);
            let widths: Vec<u8> = if n <= 260 {
                (FUSE_MIN_FINGERPRINT_BITS..=FUSE_MAX_FINGERPRINT_BITS).collect()
            } else {
                vec![4 + (i % 13) as u8]
            };
            for bits in widths {
                let built = build_fuse(&keys, bits);
                assert_eq!(built.len(), fuse_size(n, bits), "n={n} f={bits}");
            }
        }
    }

    #[test]
    fn duplicates_and_order_do_not_change_the_bytes() {
        let keys = distinct_hashes(11, 2000);
        let once = build_fuse(&keys, 9);
        assert_eq!(once, build_fuse(&keys, 9), "same input, same bytes");
        let mut messy = keys.clone();
        messy.extend_from_slice(&keys[..700]);
        messy.reverse();
        assert_eq!(build_fuse(&messy, 9), once);
        assert_eq!(once.len(), fuse_size(2000, 9));
        assert!(fuse_size(2700, 9) > once.len(), "sized by distinct keys");
        let f = decode(build_fuse(&[5, 5, 5, 5], 8));
        assert!(f.may_contain_hash(5));
        assert_eq!(f.size(), fuse_size(1, 8));
    }

    #[test]
    fn the_bytes_of_a_small_filter_are_frozen() {
        // Persisted: a change here is a format change (or a builder change that
        // needs a reason).
        let bytes = build_fuse(&[1, 2, 3], 4);
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, GOLDEN_HEX);
        let f = decode(bytes);
        assert!((1..=3).all(|h| f.may_contain_hash(h)));
    }

    /// `build_fuse(&[1, 2, 3], 4)`: seed `seed_at(0)`, 2 segments of 2 slots
    /// (plus 2), 4-bit fingerprints, peeled; 8 slots in 4 bytes; format 2.
    const GOLDEN_HEX: &str = concat!(
        "f1b1df195c5d1323", // seed
        "02000000",         // segment_count
        "01",               // segment_length_log2
        "04",               // fingerprint_bits
        "00",               // kind: peeled
        "000026c0",         // fingerprints
        "02",               // format
    );

    #[test]
    fn every_truncation_and_extension_is_rejected() {
        for (n, bits) in [(0, 8), (1, 4), (300, 7), (1000, 13)] {
            let good = build_fuse(&distinct_hashes(n as u64, n), bits);
            assert!(FuseFilter::new(good.clone()).is_ok());
            for len in 0..good.len() {
                assert!(
                    FuseFilter::new(good[..len].to_vec()).is_err(),
                    "n={n}: truncated to {len}"
                );
            }
            let mut longer = good.clone();
            longer.insert(HEADER_LEN, 0);
            assert!(FuseFilter::new(longer).is_err(), "n={n}: one byte more");
        }
    }

    #[test]
    fn random_byte_changes_decode_safely() {
        let keys = distinct_hashes(21, 500);
        let good = build_fuse(&keys, 7);
        let mut rng = Rng::new(99);
        let (mut decoded, mut rejected) = (0, 0);
        for _ in 0..4000 {
            let mut bad = good.clone();
            let at = rng.index(bad.len());
            let flip = 1 + rng.below(255) as u8;
            bad[at] ^= flip;
            let Ok(f) = FuseFilter::new(bad) else {
                rejected += 1;
                continue;
            };
            decoded += 1;
            // Decodable damage must still probe safely.
            for &k in keys.iter().take(50) {
                let _ = f.may_contain_hash(k);
            }
            for _ in 0..50 {
                let _ = f.may_contain_hash(rng.next_u64());
            }
            // Only the seed and the fingerprints can change undetected.
            let in_fingerprints = (HEADER_LEN..good.len() - 1).contains(&at);
            assert!(at < 8 || in_fingerprints, "change at {at} accepted");
        }
        eprintln!("byte changes: {decoded} decoded, {rejected} rejected");
        assert!(decoded > 0 && rejected > 0);
        // The format byte is checked whatever it becomes.
        for b in (0..=255u8).filter(|&b| b != FILTER_FORMAT_FUSE) {
            let mut bad = good.clone();
            if let Some(last) = bad.last_mut() {
                *last = b;
            }
            assert!(FuseFilter::new(bad).is_err(), "format byte {b}");
        }
    }

    #[test]
    fn each_header_field_is_validated() {
        // 300 keys at 7 bits: 416 slots, 2912 bits, no padding; 10 keys at 5
        // bits: 20 slots, 100 bits, 4 padding bits in the last byte.
        let good = build_fuse(&distinct_hashes(1, 300), 7);
        let set = |at: usize, v: u8| {
            let mut b = good.clone();
            b[at] = v;
            FuseFilter::new(b)
        };
        let count_at = 8;
        let log2_at = 12;
        let bits_at = 13;
        let kind_at = 14;
        assert!(set(count_at, good[count_at] + 1).is_err(), "segment count");
        assert!(set(count_at, good[count_at] - 1).is_err(), "segment count");
        assert!(set(log2_at, MAX_SEGMENT_LENGTH_LOG2 + 1).is_err(), "log2");
        assert!(set(log2_at, good[log2_at] + 1).is_err(), "log2");
        for bits in [0, 1, 3, 6, 8, 17, 255] {
            assert!(set(bits_at, bits).is_err(), "fingerprint bits {bits}");
        }
        assert!(set(kind_at, 2).is_err(), "kind 2");
        assert!(set(kind_at, KIND_PASS_ALL).is_err(), "pass-all with a seed");

        let padded = build_fuse(&distinct_hashes(2, 10), 5);
        let g = Geometry::for_keys(10);
        assert_eq!(g.array_len() * 5 % 8, 4, "the case has padding bits");
        assert!(FuseFilter::new(padded.clone()).is_ok());
        let mut bad = padded.clone();
        let last = bad.len() - 2;
        bad[last] |= 0x80;
        assert!(FuseFilter::new(bad).is_err(), "padding bits");

        let empty = build_fuse(&[], 8);
        assert_eq!(empty.len(), HEADER_LEN + 1);
        for at in [0, 7, log2_at] {
            let mut bad = empty.clone();
            bad[at] = 1;
            assert!(FuseFilter::new(bad).is_err(), "empty filter, byte {at}");
        }
        let mut bad = empty.clone();
        bad[kind_at] = KIND_PASS_ALL;
        assert!(FuseFilter::new(bad).is_err(), "empty pass-all");
    }

    #[test]
    fn the_empty_filter_answers_absent() {
        let f = decode(build_fuse(&[], 8));
        assert_eq!(f.size(), fuse_size(0, 8));
        let mut rng = Rng::new(4);
        assert!((0..10_000).all(|_| !f.may_contain_hash(rng.next_u64())));
        assert!(!f.may_contain(b"anything"));
    }

    #[test]
    fn fallbacks_keep_the_size_and_lose_no_key() {
        let keys = distinct_hashes(8, 3000);
        let normal = build_fuse(&keys, 8);
        // No seed on the first geometry: the same slots in segments half as long.
        let halved = build_fuse_with(&keys, 8, [0, ATTEMPTS_PER_GEOMETRY]);
        assert_eq!(halved.len(), normal.len());
        let g = Geometry::for_keys(3000);
        assert_eq!(halved[HEADER_LEN - 3], g.segment_length_log2 - 1);
        let f = decode(halved);
        assert_eq!(f.answer, Answer::Peeled);
        assert!(keys.iter().all(|&k| f.may_contain_hash(k)));
        let fpr = measured_fpr(|h| f.may_contain_hash(h), &keys, 100_000);
        assert!(fpr < 0.006, "halved geometry FPR {fpr}");
        // No seed at all: pass-all, same size.
        let all = build_fuse_with(&keys, 8, [0, 0]);
        assert_eq!(all.len(), normal.len());
        let f = decode(all);
        assert_eq!(f.answer, Answer::Always);
        let mut rng = Rng::new(5);
        assert!((0..1000).all(|_| f.may_contain_hash(rng.next_u64())));
    }

    #[test]
    fn fingerprint_widths_are_clamped_to_4_through_16() {
        let keys = distinct_hashes(6, 100);
        for (asked, used) in [(0, 4), (3, 4), (4, 4), (16, 16), (17, 16), (255, 16)] {
            let bytes = build_fuse(&keys, asked);
            assert_eq!(bytes.len(), fuse_size(100, asked));
            assert_eq!(bytes.len(), fuse_size(100, used));
            let f = decode(bytes);
            assert_eq!(f.fingerprint_bits(), used);
            assert!(keys.iter().all(|&k| f.may_contain_hash(k)));
        }
    }

    #[test]
    fn the_last_byte_tells_the_filter_kinds_apart() {
        let keys: Vec<u64> = (0..100u32).map(|i| filter_hash(&i.to_le_bytes())).collect();
        let bloom = build_filter(&keys, 10);
        let fuse = build_fuse(&keys, 8);
        assert_eq!(filter_format(&bloom), Some(FILTER_FORMAT_BLOCKED_XXH3));
        assert_eq!(filter_format(&fuse), Some(FILTER_FORMAT_FUSE));
        assert_eq!(filter_format(&[]), None);
        assert!(FuseFilter::new(bloom).is_err());
        assert!(Filter::new(fuse.clone()).is_err());
        let f = decode(fuse);
        assert!((0..100u32).all(|i| f.may_contain(&i.to_le_bytes())));
    }

    /// Fraction of `sets` random sets of `n` keys that the first seed peels on
    /// the builder's geometry.
    fn peel_success(n: usize, sets: u64) -> f64 {
        let g = Geometry::for_keys(n);
        let mut peeler = Peeler::default();
        let mut fingerprints = Vec::new();
        let ok = (0..sets)
            .filter(|&t| {
                let mut keys = distinct_hashes(t * 7919 + n as u64, n);
                keys.sort_unstable();
                peeler.peel(&keys, g, seed_at(t as u32), 0xff, &mut fingerprints)
            })
            .count();
        ok as f64 / sets as f64
    }

    #[test]
    fn each_seed_peels_often_enough() {
        // For each segment length up to page-sized sets, the size with the
        // fewest slots per key.
        let slots_per_key = |n: usize| Geometry::for_keys(n).array_len() as f64 / n as f64;
        let rows: Vec<u64> = SIZING.iter().map(|r| r.0).collect();
        for w in rows.windows(2).filter(|w| w[1] <= 8286) {
            let (first, end) = (w[0] as usize, w[1] as usize);
            let tightest = (first..end)
                .min_by(|&a, &b| slots_per_key(a).total_cmp(&slots_per_key(b)))
                .unwrap_or(first);
            let rate = peel_success(tightest, 100);
            eprintln!(
                "n={tightest}: {:.3} slots/key, one seed peels {rate:.2}",
                slots_per_key(tightest)
            );
            assert!(rate >= 0.15, "n={tightest}: one seed peels {rate}");
        }
    }

    /// The probe exactly as `docs/format/table.md` writes it, on the raw bytes.
    fn documented_probe(bytes: &[u8], h: u64) -> bool {
        let seed = u64::from_le_bytes(bytes[0..8].try_into().unwrap());
        let segment_count = u64::from(u32::from_le_bytes(bytes[8..12].try_into().unwrap()));
        let l = 1u64 << bytes[12];
        let w = u64::from(bytes[13]);
        let fingerprints = &bytes[HEADER_LEN..bytes.len() - 1];
        let slot = |j: u64| -> u64 {
            (0..w)
                .map(|i| {
                    let b = j * w + i;
                    u64::from(fingerprints[(b / 8) as usize] >> (b % 8) & 1) << i
                })
                .sum()
        };
        let mut x = h.wrapping_add(seed);
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d049bb133111eb);
        let m = x ^ (x >> 31);
        let s0 = ((u128::from(m) * u128::from(segment_count * l)) >> 64) as u64;
        let s1 = (s0 + l) ^ ((m >> 18) & (l - 1));
        let s2 = (s0 + 2 * l) ^ (m & (l - 1));
        let fp = (m ^ (m >> 32)) & ((1 << w) - 1);
        slot(s0) ^ slot(s1) ^ slot(s2) == fp
    }

    #[test]
    fn the_documented_probe_gives_the_same_answers() {
        for (n, bits) in [
            (3, 4),
            (10, 5),
            (300, 7),
            (3000, 8),
            (20_000, 13),
            (5000, 16),
        ] {
            let keys = distinct_hashes(n as u64 + 17, n);
            let bytes = build_fuse(&keys, bits);
            let f = decode(bytes.clone());
            assert!(keys.iter().all(|&k| documented_probe(&bytes, k)));
            let mut rng = Rng::new(n as u64);
            let (mut agree, mut passed) = (0, 0);
            for _ in 0..20_000 {
                let h = rng.next_u64();
                let want = documented_probe(&bytes, h);
                agree += usize::from(f.may_contain_hash(h) == want);
                passed += usize::from(want);
            }
            assert_eq!(agree, 20_000, "n={n} f={bits}");
            assert!(passed < 20_000 / 8, "n={n} f={bits}: {passed} passed");
        }
    }

    #[test]
    #[ignore = "measurement: cargo test -p shale --release --lib fuse_table -- --ignored --nocapture"]
    fn fuse_table() {
        eprintln!("| keys | f | bits/key | FPR | 2^-f |");
        eprintln!("|---|---|---|---|---|");
        for n in [3000usize, 100_000] {
            for bits in 4u8..=12 {
                let keys = distinct_hashes(n as u64 ^ u64::from(bits) << 32, n);
                let f = decode(build_fuse(&keys, bits));
                let fpr = measured_fpr(|h| f.may_contain_hash(h), &keys, 1_000_000);
                eprintln!(
                    "| {n} | {bits} | {:.2} | {:.3}% | {:.3}% |",
                    bits_per_key_of(f.size(), n),
                    fpr * 100.0,
                    0.5f64.powi(i32::from(bits)) * 100.0
                );
            }
            for bpk in [8u32, 10, 12, 14] {
                let keys = distinct_hashes(n as u64 ^ u64::from(bpk) << 40, n);
                let bloom = Filter::new(build_filter(&keys, bpk)).expect("bloom decodes");
                let fpr = measured_fpr(|h| bloom.may_contain_hash(h), &keys, 1_000_000);
                eprintln!(
                    "| {n} | bloom {bpk} | {:.2} | {:.3}% | |",
                    bits_per_key_of(bloom.size() + 6, n),
                    fpr * 100.0
                );
            }
        }
    }

    #[test]
    #[ignore = "measurement: cargo test -p shale --release --lib page_filling -- --ignored --nocapture"]
    fn page_filling_partitions() {
        // A partition stored as a block: 4096 bytes less the 5-byte trailer.
        let budget = 4096 - 5;
        eprintln!("| f | keys | bytes | bits/key | FPR |");
        eprintln!("|---|---|---|---|---|");
        for bits in 4u8..=12 {
            let n = (1..20_000)
                .take_while(|&n| fuse_size(n, bits) <= budget)
                .last();
            let Some(n) = n else { continue };
            let keys = distinct_hashes(u64::from(bits), n);
            let f = decode(build_fuse(&keys, bits));
            let fpr = measured_fpr(|h| f.may_contain_hash(h), &keys, 1_000_000);
            eprintln!(
                "| {bits} | {n} | {} | {:.2} | {:.3}% |",
                f.size(),
                bits_per_key_of(f.size(), n),
                fpr * 100.0
            );
        }
    }

    #[test]
    #[ignore = "tuning of SIZING: SUCCESS_NS=1,2,... SETS=200"]
    fn peel_success_sweep() {
        let var = |name: &str| std::env::var(name).ok();
        let ns: Vec<usize> = var("SUCCESS_NS")
            .unwrap_or_else(|| "3000".into())
            .split(',')
            .filter_map(|s| s.parse().ok())
            .collect();
        let sets = var("SETS").and_then(|s| s.parse().ok()).unwrap_or(200);
        for n in ns {
            let g = Geometry::for_keys(n);
            eprintln!(
                "n={n} L=2^{} segments={} slots/key={:.3} success={:.3}",
                g.segment_length_log2,
                g.segment_count,
                g.array_len() as f64 / n as f64,
                peel_success(n, sets)
            );
        }
    }
}
