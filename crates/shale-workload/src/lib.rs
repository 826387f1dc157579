//! The read-cost study's dataset, defined exactly so that any engine (shale,
//! Pebble, RocksDB, LevelDB) can regenerate it and verify what it reads back.
//!
//! # Keys
//!
//! Key `i` (a `u64`) is `keccak256(be256(i))`: the 32-byte Keccak-256 digest
//! (the original Keccak padding used by Ethereum, not SHA3-256) of a 32-byte
//! buffer holding 24 zero bytes and then the 8-byte big-endian encoding of `i`
//! (`i` as a big-endian 256-bit integer, as Solidity's `keccak256(abi.encode(i))`
//! hashes it). These are exactly the keys of the study's harness, the public
//! benchmark QuarkChain/bench_kvdb. See [`Dataset::key`].
//!
//! # Values
//!
//! Value `i` is `value_size` bytes of a splitmix64 stream (see [`mix64`] and
//! [`Dataset::fill_value`]):
//!
//! ```text
//! state := mix64(seed XOR mix64(i))
//! for each 8-byte chunk j = 0, 1, ...:
//!     state := state + 0x9E37_79B9_7F4A_7C15   (wrapping)
//!     chunk j := little-endian bytes of mix64(state)   (the last chunk truncated)
//! ```
//!
//! so the value depends only on `(seed, i, value_size)`, and a shorter value is a
//! prefix of a longer one with the same seed and index.

// Library code returns errors; it never unwraps what can fail at run time.
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

//!
//! # Key schemes and read distributions
//!
//! [`scheme`] turns index `i` into key bytes (`hash`: the keys above; `hash8`:
//! Keccak-256 of the 8 index bytes alone, shale's keys before it matched the
//! study exactly; `path`: account-prefixed keys with locality), and [`dist`] draws which indices a
//! read workload asks for (`uniform`, `zipf`, `hotset`, plus a share of
//! never-loaded keys).
//!
//! [`ycsb`] generates YCSB's core workloads A–F (operation mixes, scrambled
//! Zipfian, latest and uniform request distributions, `user<hash>` keys and
//! records of 10 fields of 100 bytes).
//!
//! # Engines and results
//!
//! Nothing here knows an engine: [`protocol`] is how `shale bench compare`
//! drives an engine's harness in a process of its own (shale, Pebble,
//! RocksDB, LevelDB); [`results`] the schema of what the bench reports. The
//! adapter that drives shale in process, and shale's own harness, are in the
//! `shale-bench` crate.

pub mod csv_rows;
pub mod dist;
pub mod protocol;
pub mod results;
pub mod scheme;
pub mod ycsb;

pub use dist::{DistError, Distribution, KeyChooser, Rng, Scramble, MEASURE_SEED, WARMUP_SEED};
pub use scheme::{KeyGen, KeyScheme, ParseKeySchemeError, ACCOUNT_SLOTS};

use tiny_keccak::{Hasher, Keccak};

/// Value size of the study (bytes).
pub const DEFAULT_VALUE_SIZE: usize = 110;

/// Length of a dataset key (bytes).
pub const KEY_LEN: usize = 32;

/// The splitmix64 increment ("golden gamma").
pub(crate) const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The splitmix64 output function (Steele, Lea and Flood; the finalizer of
/// `java.util.SplittableRandom`): a bijection on `u64`.
///
/// ```text
/// z := (z XOR (z >> 30)) * 0xBF58_476D_1CE4_E5B9
/// z := (z XOR (z >> 27)) * 0x94D0_49BB_1331_11EB
/// z XOR (z >> 31)
/// ```
/// (multiplications wrap).
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Keccak-256 of `data` (Ethereum's hash).
pub fn keccak256(data: &[u8]) -> [u8; 32] {
    let mut hasher = Keccak::v256();
    hasher.update(data);
    let mut out = [0u8; 32];
    hasher.finalize(&mut out);
    out
}

/// The study's dataset: key `i` and value `i` for every `i: u64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dataset {
    /// Bytes per value (default 110).
    pub value_size: usize,
    /// Seed of the values (default 0). Keys do not depend on it.
    pub seed: u64,
}

impl Default for Dataset {
    fn default() -> Self {
        Dataset {
            value_size: DEFAULT_VALUE_SIZE,
            seed: 0,
        }
    }
}

impl Dataset {
    /// A dataset with values of `value_size` bytes and seed 0.
    pub fn with_value_size(value_size: usize) -> Dataset {
        Dataset {
            value_size,
            ..Dataset::default()
        }
    }

    /// Key `i`: Keccak-256 of 24 zero bytes followed by `i.to_be_bytes()`.
    pub fn key(&self, i: u64) -> [u8; KEY_LEN] {
        let mut word = [0u8; 32];
        if let Some(low) = word.last_chunk_mut::<8>() {
            *low = i.to_be_bytes();
        }
        keccak256(&word)
    }

    /// Value `i`: `value_size` bytes, see the module documentation.
    pub fn value(&self, i: u64) -> Vec<u8> {
        let mut v = vec![0u8; self.value_size];
        self.fill_value(i, &mut v);
        v
    }

    /// Checks what a Get of key `i` returned, for a database holding keys
    /// `0..keys`: `Ok(true)` if it found value `i`, `Ok(false)` if it
    /// rightly found nothing, else why the read is wrong. `scratch` is reused
    /// for the expected value.
    pub fn check_get(
        &self,
        i: u64,
        keys: u64,
        got: Option<&[u8]>,
        scratch: &mut Vec<u8>,
    ) -> Result<bool, String> {
        match got {
            Some(v) if i < keys => {
                scratch.resize(self.value_size, 0);
                self.fill_value(i, scratch);
                if v == scratch.as_slice() {
                    Ok(true)
                } else {
                    Err(format!("wrong value read for key index {i}"))
                }
            }
            None if i >= keys => Ok(false),
            None => Err(format!("key index {i} is missing")),
            Some(_) => Err(format!("key index {i} was never loaded but was found")),
        }
    }

    /// Fills `out` with the first `out.len()` bytes of value `i`'s stream
    /// (the whole value when `out.len() == value_size`).
    pub fn fill_value(&self, i: u64, out: &mut [u8]) {
        let mut state = mix64(self.seed ^ mix64(i));
        for chunk in out.chunks_mut(8) {
            state = state.wrapping_add(GAMMA);
            for (dst, src) in chunk.iter_mut().zip(mix64(state).to_le_bytes()) {
                *dst = src;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn keccak256_matches_known_vectors() {
        assert_eq!(
            hex(&keccak256(b"")),
            "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
        );
        assert_eq!(
            hex(&keccak256(b"abc")),
            "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"
        );
    }

    /// Golden keys, computed by Go's `golang.org/x/crypto/sha3`
    /// `NewLegacyKeccak256` (an independent implementation); key 0 is the
    /// well-known `keccak256(uint256(0))`. The same vectors are checked by
    /// every peer harness (`peers/testdata/vectors.json`).
    #[test]
    fn keys_are_keccak_of_the_index_as_a_256_bit_word() {
        let d = Dataset::default();
        assert_eq!(
            hex(&d.key(0)),
            "290decd9548b62a8d60345a988386fc84ba6bc95484008f6362f93160ef3e563"
        );
        assert_eq!(
            hex(&d.key(1)),
            "b10e2d527612073b26eecdfd717e6a320cf44b4afac2b0732d9fcbe2b7fa0cf6"
        );
        assert_eq!(
            hex(&d.key(1_000_000)),
            "c1af4b94166cd32fc49b7b926cbb91ee421de2d04450e8ae57857b9b56ac7e53"
        );
        let mut word = [0u8; 32];
        word[24..].copy_from_slice(&7u64.to_be_bytes());
        assert_eq!(d.key(7), keccak256(&word));
        // Keys do not depend on the value parameters.
        assert_eq!(
            Dataset {
                value_size: 3,
                seed: 9
            }
            .key(5),
            d.key(5)
        );
    }

    #[test]
    fn gets_are_checked_against_the_dataset() {
        let d = Dataset::with_value_size(16);
        let mut scratch = Vec::new();
        assert_eq!(
            d.check_get(3, 10, Some(&d.value(3)), &mut scratch),
            Ok(true)
        );
        assert_eq!(d.check_get(12, 10, None, &mut scratch), Ok(false));
        assert!(d.check_get(3, 10, Some(&d.value(4)), &mut scratch).is_err());
        assert!(d.check_get(3, 10, None, &mut scratch).is_err());
        assert!(d.check_get(12, 10, Some(&[1]), &mut scratch).is_err());
    }

    #[test]
    fn mix64_golden() {
        // First outputs of splitmix64 seeded with 0 (the reference sequence).
        assert_eq!(mix64(GAMMA), 0xE220_A839_7B1D_CDAF);
        assert_eq!(mix64(GAMMA.wrapping_mul(2)), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(mix64(0), 0);
    }

    #[test]
    fn values_are_deterministic_sized_and_distinct() {
        let d = Dataset::default();
        assert_eq!(d.value(0).len(), 110);
        assert_eq!(d.value(42), d.value(42));
        assert_ne!(d.value(0), d.value(1));
        assert_ne!(d.value(1), d.value(2));
        let other_seed = Dataset { seed: 1, ..d };
        assert_ne!(d.value(0), other_seed.value(0));
        assert_ne!(d.value(5), other_seed.value(5));
        for size in [0, 1, 7, 8, 9, 110, 4096] {
            assert_eq!(Dataset::with_value_size(size).value(3).len(), size);
        }
        // A shorter value is a prefix of a longer one.
        let long = Dataset::with_value_size(200).value(9);
        assert_eq!(&long[..110], d.value(9).as_slice());
        // fill_value writes the same bytes as value.
        let mut buf = [0u8; 110];
        d.fill_value(77, &mut buf);
        assert_eq!(buf.as_slice(), d.value(77).as_slice());
    }

    /// Pins the value stream so that a change of its definition is noticed.
    #[test]
    fn value_golden() {
        let d = Dataset::default();
        let mut expected = Vec::new();
        let mut state = mix64(mix64(0));
        for _ in 0..14 {
            state = state.wrapping_add(GAMMA);
            expected.extend_from_slice(&mix64(state).to_le_bytes());
        }
        expected.truncate(110);
        assert_eq!(d.value(0), expected);
        assert_eq!(&d.value(0)[..8], &0xE220_A839_7B1D_CDAFu64.to_le_bytes());
        // Computed by an independent Python transcription of the definition.
        assert_eq!(
            hex(&d.value(1)),
            "6f6177fb52b18141629d26526d649c1680723bd5d8e85d4af3ca5e6cbdeff790\
             f9f469cada2502b1d8cd50bfa840028cea17ad4c7ab65c360d7546d93708f368\
             3fda38dbf96e9701a3f96b91205b0f406a394915ad116f7e8eef45f7ecb19d5b\
             4621d82fbb675a9319a258fa1cd8"
        );
        let d7 = Dataset {
            value_size: 20,
            seed: 7,
        };
        assert_eq!(
            hex(&d7.value(123_456_789)),
            "da20180f7c0a290e83850a530b9c9122795241d7"
        );
    }
}
