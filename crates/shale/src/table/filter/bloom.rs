//! The blocked Bloom filter: cache-line blocked, over user keys (a whole
//! table's filter in versions 1 and 2, a filter partition's in version 3).
//!
//! Each key selects one 64-byte line from its 64-bit XXH3 hash and sets `k` bits in
//! that line, so a probe touches one cache line. Grammar (also in
//! `docs/format/table.md`):
//!
//! ```text
//! filter_block := line{num_lines} num_lines:fixed32_le k:u8 format:u8
//! line         := byte{64}          // bit b of a line is bit (b % 8) of byte (b / 8)
//!
//! h      = xxh3_64(user_key)
//! line   = (h * num_lines) >> 64    // 128-bit product
//! x      = h ^ (h >> 29); x *= 0xbf58476d1ce4e5b9; x ^= x >> 32
//! probe i in 0..k: bit = x >> 55 (9 bits); x *= 0x9e3779b97f4a7c15 (wrapping)
//! ```
//!
//! `format` is [`FILTER_FORMAT_BLOCKED_XXH3`]; readers reject other values. A filter
//! with `num_lines == 0` holds no key and answers "absent" for every probe.

use super::hash::filter_hash;
use crate::format::put_fixed32;
use crate::table::block::Corrupt;

/// The only filter format of table format version 1. Persisted: DO NOT CHANGE.
pub(crate) const FILTER_FORMAT_BLOCKED_XXH3: u8 = 1;

const LINE_BYTES: usize = 64;
const LINE_BITS: u64 = 512;
pub(crate) const FILTER_TRAILER: usize = 6;

/// Number of probes for `bits_per_key` (about `0.69 * bits_per_key`, in 1..=16).
pub(crate) fn num_probes(bits_per_key: u32) -> u8 {
    let k = (f64::from(bits_per_key) * 0.69).round() as u32;
    k.clamp(1, 16) as u8
}

#[inline]
fn line_of(h: u64, num_lines: usize) -> usize {
    ((u128::from(h) * num_lines as u128) >> 64) as usize
}

#[inline]
fn probe_seed(h: u64) -> u64 {
    let mut x = h ^ (h >> 29);
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^ (x >> 32)
}

/// Builds the filter block of a table from the hashes of its distinct user keys.
pub(crate) fn build_filter(hashes: &[u64], bits_per_key: u32) -> Vec<u8> {
    let k = num_probes(bits_per_key);
    let total_bits = hashes.len() as u64 * u64::from(bits_per_key.max(1));
    let num_lines = total_bits.div_ceil(LINE_BITS) as usize;
    let mut out = vec![0u8; num_lines * LINE_BYTES];
    if num_lines > 0 {
        for &h in hashes {
            let base = line_of(h, num_lines) * LINE_BYTES;
            let mut x = probe_seed(h);
            for _ in 0..k {
                let bit = (x >> 55) as usize;
                if let Some(byte) = out.get_mut(base + bit / 8) {
                    *byte |= 1 << (bit % 8);
                }
                x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            }
        }
    }
    put_fixed32(&mut out, num_lines as u32);
    out.push(k);
    out.push(FILTER_FORMAT_BLOCKED_XXH3);
    out
}

/// A decoded filter block.
#[derive(Debug)]
pub(crate) struct Filter {
    data: Vec<u8>,
    num_lines: usize,
    k: u8,
}

impl Filter {
    /// Checks the trailer of a filter block and wraps it.
    pub(crate) fn new(mut data: Vec<u8>) -> Result<Filter, Corrupt> {
        let len = data.len();
        let Some((_, &[l0, l1, l2, l3, k, format])) = data.split_last_chunk::<FILTER_TRAILER>()
        else {
            return Err(Corrupt("filter block shorter than its trailer"));
        };
        let num_lines = u32::from_le_bytes([l0, l1, l2, l3]) as usize;
        if format != FILTER_FORMAT_BLOCKED_XXH3 {
            return Err(Corrupt("unknown filter format"));
        }
        if k == 0 || k > 64 {
            return Err(Corrupt("bad number of filter probes"));
        }
        if num_lines.checked_mul(LINE_BYTES) != Some(len - FILTER_TRAILER) {
            return Err(Corrupt("filter size disagrees with its line count"));
        }
        data.truncate(len - FILTER_TRAILER);
        Ok(Filter { data, num_lines, k })
    }

    /// False only if no key with this user key was added. Never allocates.
    #[inline]
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(filter_hash(user_key))
    }

    /// [`Filter::may_contain`] for a precomputed [`filter_hash`].
    pub(crate) fn may_contain_hash(&self, h: u64) -> bool {
        if self.num_lines == 0 {
            return false;
        }
        let base = line_of(h, self.num_lines) * LINE_BYTES;
        let Some(line) = self.data.get(base..base + LINE_BYTES) else {
            return true;
        };
        let mut x = probe_seed(h);
        for _ in 0..self.k {
            let bit = (x >> 55) as usize;
            if line.get(bit / 8).is_some_and(|b| b & (1 << (bit % 8)) == 0) {
                return false;
            }
            x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
        true
    }

    /// Bytes held.
    pub(crate) fn size(&self) -> usize {
        self.data.len()
    }

    /// Number of 64-byte lines.
    #[cfg(test)]
    pub(crate) fn num_lines(&self) -> usize {
        self.num_lines
    }

    /// Number of probes per key.
    #[cfg(test)]
    pub(crate) fn num_probes(&self) -> u8 {
        self.k
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::test_util::Rng;

    fn random_keys(rng: &mut Rng, n: usize) -> Vec<[u8; 32]> {
        (0..n).map(|_| rng.bytes32()).collect()
    }

    /// Measured false-positive rate at `bits` bits per key over 100k random keys.
    fn fp_rate(bits: u32) -> f64 {
        let mut rng = Rng::new(7 + u64::from(bits));
        let keys = random_keys(&mut rng, 100_000);
        let hashes: Vec<u64> = keys.iter().map(|k| filter_hash(k)).collect();
        let f = Filter::new(build_filter(&hashes, bits)).unwrap();
        for k in &keys {
            assert!(f.may_contain(k), "no false negatives");
        }
        let probes = 100_000;
        let fps = (0..probes)
            .filter(|_| f.may_contain(&rng.bytes32()))
            .count();
        fps as f64 / probes as f64
    }

    #[test]
    fn false_positive_rate_at_10_bits_per_key_is_below_2_percent() {
        let rate = fp_rate(10);
        eprintln!("filter FP rate at 10 bits/key: {:.3}%", rate * 100.0);
        assert!(rate < 0.02, "FP rate {rate}");
        // Fewer bits must cost accuracy: the measurement is not vacuous.
        assert!(fp_rate(4) > rate);
    }

    #[test]
    fn empty_filter_excludes_everything_and_sizes_follow_bits() {
        let f = Filter::new(build_filter(&[], 10)).unwrap();
        assert!(!f.may_contain(b"x"));
        let f = Filter::new(build_filter(&[1, 2, 3], 10)).unwrap();
        assert_eq!(f.num_lines(), 1);
        assert_eq!(f.num_probes(), 7);
        let hashes: Vec<u64> = (0..1000u64)
            .map(|i| filter_hash(&i.to_le_bytes()))
            .collect();
        let f = Filter::new(build_filter(&hashes, 10)).unwrap();
        assert_eq!(f.size(), 10_000usize.div_ceil(512) * 64);
    }

    #[test]
    fn damaged_trailers_are_rejected() {
        let good = build_filter(&[1, 2, 3], 10);
        assert!(Filter::new(good[..3].to_vec()).is_err());
        let mut bad_format = good.clone();
        *bad_format.last_mut().unwrap() = 9;
        assert!(Filter::new(bad_format).is_err());
        let mut bad_lines = good.clone();
        let n = bad_lines.len();
        bad_lines[n - 6] = 200;
        assert!(Filter::new(bad_lines).is_err());
        let mut bad_k = good;
        bad_k[n - 2] = 0;
        assert!(Filter::new(bad_k).is_err());
    }
}
