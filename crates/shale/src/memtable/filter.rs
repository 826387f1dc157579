//! A memtable's key filter: a blocked Bloom filter over the user keys added to
//! it, so that a Get of a key the memtable lacks skips the skiplist search
//! (one cache line read instead of some twenty dependent node visits; in
//! `db_bench readrandom` the memtable search was a quarter of a Get's CPU).
//! RocksDB offers the same as `memtable_whole_key_filtering`.
//!
//! A key sets [`PROBES`] bits in one 512-bit block (a cache line): the block
//! from the top half of the key's 64-bit xxh3 hash, the bits from nine-bit
//! slices of a multiplicative remix of it. A filter of `n` bits per key
//! (the database sizes it at `write_buffer_size / 32` bytes, so `n` is
//! well above 16 for entries of up to about 500 bytes) has a false-positive
//! rate near `(1 - e^(-6/n))^6` plus the blocks' unevenness, about 0.1% at
//! 20 bits per key.
//!
//! # Concurrency
//!
//! Bits are set with `fetch_or` and read with plain loads, all `Relaxed`: a
//! key's bits are set before its entry goes into the skiplist, and a reader
//! only looks for entries whose sequence number it saw published by the
//! write path (a `Release` store after the batch is in the memtable, read
//! with `Acquire`), which orders the bit stores before the reader's loads.
//! Keys of writes a reader cannot see yet may or may not be seen: both are
//! correct.

use std::sync::atomic::{AtomicU64, Ordering};

use xxhash_rust::xxh3::xxh3_64;

/// Bits set per key.
const PROBES: u32 = 6;

/// Words of a block: 8 x 64 bits, one 64-byte cache line.
const BLOCK_WORDS: usize = 8;

/// A concurrent blocked Bloom filter over user keys (see the module docs).
pub(crate) struct KeyFilter {
    words: Box<[AtomicU64]>,
    blocks: u64,
}

impl KeyFilter {
    /// A filter of about `bytes` (whole 64-byte blocks, at least one).
    pub(crate) fn new(bytes: usize) -> KeyFilter {
        let blocks = (bytes / (BLOCK_WORDS * 8)).max(1);
        KeyFilter {
            words: (0..blocks * BLOCK_WORDS)
                .map(|_| AtomicU64::new(0))
                .collect(),
            blocks: blocks as u64,
        }
    }

    /// Bytes of memory the bits take.
    pub(crate) fn bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// Records `key`.
    pub(crate) fn add(&self, key: &[u8]) {
        let (base, mut bits) = self.locate(key);
        for _ in 0..PROBES {
            let bit = (bits & 511) as usize;
            self.words[base + bit / 64].fetch_or(1 << (bit % 64), Ordering::Relaxed);
            bits >>= 9;
        }
    }

    /// False only if `key` was never added (see the module docs for which
    /// adds a reader is sure to see).
    pub(crate) fn may_contain(&self, key: &[u8]) -> bool {
        let (base, mut bits) = self.locate(key);
        for _ in 0..PROBES {
            let bit = (bits & 511) as usize;
            if self.words[base + bit / 64].load(Ordering::Relaxed) & (1 << (bit % 64)) == 0 {
                return false;
            }
            bits >>= 9;
        }
        true
    }

    /// The first word of `key`'s block, and the bits to take its probes from
    /// (nine per probe, lowest first).
    fn locate(&self, key: &[u8]) -> (usize, u64) {
        let h = xxh3_64(key);
        // `(h >> 32) * blocks >> 32` maps the top half onto `0..blocks`
        // evenly without a division (blocks < 2^32 for any real memtable;
        // larger counts still land in range, only unevenly).
        let block = ((h >> 32) * self.blocks.min(u32::MAX as u64)) >> 32;
        let bits = h.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(31);
        (block as usize * BLOCK_WORDS, bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u64) -> Vec<u8> {
        let mut k = b"key-".to_vec();
        k.extend_from_slice(&i.to_be_bytes());
        k
    }

    #[test]
    fn added_keys_are_always_found() {
        let f = KeyFilter::new(4096);
        for i in 0..2000 {
            f.add(&key(i));
        }
        assert!((0..2000).all(|i| f.may_contain(&key(i))));
        assert_eq!(f.bytes(), 4096);
    }

    #[test]
    fn absent_keys_are_mostly_refused() {
        // 20 bits per key.
        let n = 50_000u64;
        let f = KeyFilter::new(n as usize * 20 / 8);
        for i in 0..n {
            f.add(&key(i));
        }
        let fp = (n..n + 100_000).filter(|&i| f.may_contain(&key(i))).count();
        assert!(fp < 1_000, "{fp} false positives in 100,000 (over 1%)");
        // An empty filter refuses everything.
        let empty = KeyFilter::new(0);
        assert_eq!(empty.bytes(), 64);
        assert!(!(0..1000).any(|i| empty.may_contain(&key(i))));
    }

    #[test]
    fn concurrent_adds_lose_no_bit() {
        let f = std::sync::Arc::new(KeyFilter::new(1 << 14));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let f = f.clone();
                std::thread::spawn(move || {
                    for i in 0..5000 {
                        f.add(&key(t * 1_000_000 + i));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("adder");
        }
        for t in 0..4u64 {
            assert!((0..5000).all(|i| f.may_contain(&key(t * 1_000_000 + i))));
        }
    }
}
