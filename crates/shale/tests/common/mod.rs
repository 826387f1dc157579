//! Helpers shared by the engine's integration tests.
#![allow(dead_code)] // each test binary uses a different subset

use std::collections::BTreeMap;

use shale::{ReadOptions, Readable};

/// SplitMix64: a tiny deterministic generator for randomized tests.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `p`.
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    pub(crate) fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

/// True when the long randomized tests were asked for.
pub(crate) fn long_tests() -> bool {
    std::env::var_os("SHALE_LONG_TESTS").is_some_and(|v| v != "0")
}

/// Every key and value a database or snapshot holds, by a full forward scan.
pub(crate) fn scan_all(db: &impl Readable) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut it = db.iter(&ReadOptions::default()).expect("iterator");
    it.seek_to_first();
    let mut out = BTreeMap::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().expect("scan status");
    out
}
