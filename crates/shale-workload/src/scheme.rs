//! Key schemes: how key index `i` becomes the bytes stored in the engine.
//!
//! # `hash`
//!
//! The study's scheme and the default: key `i` is `keccak256(be256(i))` (24 zero
//! bytes, then `i` as 8 big-endian bytes, hashed), 32 bytes, exactly
//! [`Dataset::key`](crate::Dataset::key) and the study's harness. Consecutive
//! indices land at unrelated places of the key space, as hashed state keys do
//! in geth's hash-based state scheme.
//!
//! # `hash8`
//!
//! `keccak256(be64(i))`: the Keccak-256 of the 8 index bytes alone, shale's
//! `hash` keys before they matched the study's exactly. Statistically the same
//! keys (uniform 32-byte digests), other bytes; kept to read databases loaded
//! with it.
//!
//! # `path`
//!
//! A key with locality, shaped like the storage-trie node keys of geth's
//! path-based state scheme (an owning account's hash followed by a trie path).
//! Index `i` belongs to account `a = i / ACCOUNT_SLOTS` and is its slot
//! `s = i % ACCOUNT_SLOTS` ([`ACCOUNT_SLOTS`] = 16). The key is
//!
//! ```text
//! key(i)  := account(a) ++ suffix(i)                     33..=40 bytes
//! account(a) := keccak256(be64(a) ++ b"account")          32 bytes
//!               (Keccak-256 of 15 bytes: the 8-byte big-endian a, then the
//!                7 ASCII bytes "account")
//! h       := mix64(i)                                    (splitmix64 finalizer)
//! len     := 1 + (h & 7)                                 1..=8 bytes
//! suffix[0] := (s << 4) | ((h >> 3) & 0x0F)              first nibble: the slot
//! suffix[k] := (h >> 8k) & 0xFF   for k in 1..len         further path bytes
//! ```
//!
//! So the 16 keys of one account share their 32-byte prefix and are adjacent in
//! key order (no other account's key sorts between them), and within the account
//! they sort by slot, i.e. by `i`. The suffix's first nibble makes the suffixes
//! of one account distinct; the rest is a pseudo-random path of pseudo-random
//! length, standing in for trie nodes at different depths. This is geth-like,
//! not geth's exact byte layout (which adds a one-byte table prefix and a
//! compact-encoded nibble path). Accounts are spread over the key space by the
//! hash, as in geth. Keys of different indices are distinct (assuming no
//! Keccak-256 collision between two account prefixes), and no path key equals a
//! hash key (the lengths differ).
//!
//! A missing-key read of index `i >= n` (see [`crate::dist`]) whose account also
//! holds loaded indices asks for an absent slot of an existing account: it shares
//! the account prefix with present keys, as a real negative storage lookup does.

use std::fmt;
use std::str::FromStr;

use crate::{keccak256, mix64, Dataset, KEY_LEN};

/// Slots (consecutive key indices) per account in the `path` scheme.
pub const ACCOUNT_SLOTS: u64 = 16;

/// Shortest `path` key suffix (bytes).
pub const PATH_SUFFIX_MIN: usize = 1;

/// Longest `path` key suffix (bytes).
pub const PATH_SUFFIX_MAX: usize = 8;

/// Bytes appended to the big-endian account number before hashing it.
const ACCOUNT_TAG: &[u8; 7] = b"account";

/// How key index `i` is turned into key bytes; see the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum KeyScheme {
    /// `keccak256(be256(i))`, 32 bytes: the study's keys.
    #[default]
    Hash,
    /// `keccak256(be64(i))`, 32 bytes: shale's earlier hash keys.
    Hash8,
    /// Account hash plus a short trie path, 33..=40 bytes, with locality.
    Path,
}

impl KeyScheme {
    /// Every scheme, in the order of their names in help texts.
    pub const ALL: [KeyScheme; 3] = [KeyScheme::Hash, KeyScheme::Hash8, KeyScheme::Path];

    /// The scheme's name as parsed and displayed: `"hash"`, `"hash8"` or
    /// `"path"`.
    pub fn name(self) -> &'static str {
        match self {
            KeyScheme::Hash => "hash",
            KeyScheme::Hash8 => "hash8",
            KeyScheme::Path => "path",
        }
    }

    /// Shortest key of the scheme (bytes).
    pub fn min_key_len(self) -> usize {
        match self {
            KeyScheme::Hash | KeyScheme::Hash8 => KEY_LEN,
            KeyScheme::Path => KEY_LEN + PATH_SUFFIX_MIN,
        }
    }

    /// Longest key of the scheme (bytes).
    pub fn max_key_len(self) -> usize {
        match self {
            KeyScheme::Hash | KeyScheme::Hash8 => KEY_LEN,
            KeyScheme::Path => KEY_LEN + PATH_SUFFIX_MAX,
        }
    }
}

impl fmt::Display for KeyScheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A string that names no [`KeyScheme`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseKeySchemeError {
    input: String,
}

impl fmt::Display for ParseKeySchemeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown key scheme {:?} (expected \"hash\", \"hash8\" or \"path\")",
            self.input
        )
    }
}

impl std::error::Error for ParseKeySchemeError {}

impl FromStr for KeyScheme {
    type Err = ParseKeySchemeError;

    /// `"hash"`, `"hash8"` or `"path"`, ASCII case-insensitive, surrounding
    /// spaces ignored.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        KeyScheme::ALL
            .into_iter()
            .find(|scheme| t.eq_ignore_ascii_case(scheme.name()))
            .ok_or_else(|| ParseKeySchemeError {
                input: s.to_string(),
            })
    }
}

/// The 32-byte account prefix of the `path` scheme: `keccak256(be64(a) ++ b"account")`.
pub fn account_hash(account: u64) -> [u8; KEY_LEN] {
    let mut input = [0u8; 8 + ACCOUNT_TAG.len()];
    input[..8].copy_from_slice(&account.to_be_bytes());
    input[8..].copy_from_slice(ACCOUNT_TAG);
    keccak256(&input)
}

/// Generates the keys of one [`KeyScheme`]. Stateless and cheap to copy; share
/// it between threads freely.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyGen {
    /// The scheme the keys follow.
    pub scheme: KeyScheme,
}

impl KeyGen {
    /// A generator of `scheme` keys.
    pub fn new(scheme: KeyScheme) -> KeyGen {
        KeyGen { scheme }
    }

    /// Replaces the contents of `out` with key `i` (reusing its allocation).
    pub fn key(&self, i: u64, out: &mut Vec<u8>) {
        out.clear();
        match self.scheme {
            KeyScheme::Hash => out.extend_from_slice(&Dataset::default().key(i)),
            KeyScheme::Hash8 => out.extend_from_slice(&keccak256(&i.to_be_bytes())),
            KeyScheme::Path => {
                out.extend_from_slice(&account_hash(i / ACCOUNT_SLOTS));
                let (suffix, len) = path_suffix(i);
                out.extend_from_slice(&suffix[..len]);
            }
        }
    }

    /// Key `i` as a new vector.
    pub fn key_vec(&self, i: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.scheme.max_key_len());
        self.key(i, &mut out);
        out
    }
}

/// The `path` suffix of index `i`: a buffer and how many of its bytes are used.
fn path_suffix(i: u64) -> ([u8; PATH_SUFFIX_MAX], usize) {
    let h = mix64(i);
    let len = PATH_SUFFIX_MIN + (h & 7) as usize;
    let slot = (i % ACCOUNT_SLOTS) as u8;
    let mut suffix = h.to_le_bytes();
    suffix[0] = (slot << 4) | ((h >> 3) & 0x0F) as u8;
    (suffix, len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Dataset;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn parse_and_display_round_trip() {
        for scheme in KeyScheme::ALL {
            assert_eq!(scheme.to_string().parse::<KeyScheme>(), Ok(scheme));
        }
        assert_eq!("hash".parse(), Ok(KeyScheme::Hash));
        assert_eq!("hash8".parse(), Ok(KeyScheme::Hash8));
        assert_eq!(" PATH ".parse(), Ok(KeyScheme::Path));
        assert_eq!(KeyScheme::default(), KeyScheme::Hash);
        let err = "trie".parse::<KeyScheme>().unwrap_err();
        assert!(err.to_string().contains("trie"), "{err}");
        assert!("".parse::<KeyScheme>().is_err());
    }

    #[test]
    fn hash_scheme_is_the_dataset_key() {
        let gen = KeyGen::new(KeyScheme::Hash);
        let d = Dataset::default();
        let mut buf = vec![0xAA; 100];
        for i in [0, 1, 2, 15, 16, 1_000_000, u64::MAX] {
            gen.key(i, &mut buf);
            assert_eq!(buf.as_slice(), d.key(i).as_slice());
            assert_eq!(gen.key_vec(i), d.key(i).to_vec());
        }
    }

    /// The earlier keys, computed by Go's `NewLegacyKeccak256` of the 8 bytes.
    #[test]
    fn hash8_keys_are_keccak_of_the_eight_index_bytes() {
        let gen = KeyGen::new(KeyScheme::Hash8);
        assert_eq!(
            hex(&gen.key_vec(0)),
            "011b4d03dd8c01f1049143cf9c4c817e4b167f1d1b83e5c6f0f10d89ba1e7bce"
        );
        assert_eq!(
            hex(&gen.key_vec(1_000_000)),
            "a28104c5a2cbf18ca535d39c259b6dbb9040decc2c7e37958e8deed241107f11"
        );
    }

    #[test]
    fn keys_are_deterministic_and_sized() {
        for scheme in KeyScheme::ALL {
            let gen = KeyGen::new(scheme);
            let mut lens = std::collections::BTreeSet::new();
            for i in 0..2000 {
                let k = gen.key_vec(i);
                assert_eq!(k, gen.key_vec(i));
                assert!(k.len() >= scheme.min_key_len() && k.len() <= scheme.max_key_len());
                lens.insert(k.len());
            }
            let expected: Vec<usize> = (scheme.min_key_len()..=scheme.max_key_len()).collect();
            assert_eq!(lens.into_iter().collect::<Vec<_>>(), expected, "{scheme}");
        }
    }

    #[test]
    fn path_keys_of_one_account_share_a_prefix_and_sort_together() {
        let gen = KeyGen::new(KeyScheme::Path);
        let accounts = 200u64;
        let mut all = Vec::new();
        let mut prefixes = std::collections::HashSet::new();
        for a in 0..accounts {
            let first = gen.key_vec(a * ACCOUNT_SLOTS);
            let prefix = &first[..KEY_LEN];
            assert_eq!(prefix, account_hash(a).as_slice());
            assert!(prefixes.insert(prefix.to_vec()), "account prefixes differ");
            let mut previous: Option<Vec<u8>> = None;
            for s in 0..ACCOUNT_SLOTS {
                let i = a * ACCOUNT_SLOTS + s;
                let k = gen.key_vec(i);
                assert_eq!(&k[..KEY_LEN], prefix);
                assert_eq!(k[KEY_LEN] >> 4, s as u8, "first suffix nibble is the slot");
                // Within an account, keys sort by index.
                if let Some(p) = previous {
                    assert!(p < k, "key {i} sorts after key {}", i - 1);
                }
                previous = Some(k.clone());
                all.push((k, i));
            }
        }
        // In key order, each account's slots form one run of ACCOUNT_SLOTS keys.
        all.sort();
        let mut distinct = all.clone();
        distinct.dedup_by(|x, y| x.0 == y.0);
        assert_eq!(distinct.len(), all.len(), "keys are distinct");
        for run in all.chunks(ACCOUNT_SLOTS as usize) {
            let a = run[0].1 / ACCOUNT_SLOTS;
            for (s, (_, i)) in run.iter().enumerate() {
                assert_eq!(*i, a * ACCOUNT_SLOTS + s as u64);
            }
        }
    }

    /// Pins the `path` definition. The account hashes and keys were computed by an
    /// independent Python transcription of the module documentation (with a
    /// pure-Python Keccak-256 that reproduces the vectors in `lib.rs`).
    #[test]
    fn path_golden() {
        assert_eq!(hex(&account_hash(0)), ACCOUNT0_GOLDEN);
        let gen = KeyGen::new(KeyScheme::Path);
        for (i, expected) in PATH_GOLDEN {
            assert_eq!(hex(&gen.key_vec(i)), expected, "path key {i}");
        }
    }

    const ACCOUNT0_GOLDEN: &str =
        "c40fc8e53fb8c53bf9393006bb283c92d74c7bca3ba6b9e0efb817b6eb0eb110";
    const PATH_GOLDEN: [(u64, &str); 7] = [
        (
            0,
            "c40fc8e53fb8c53bf9393006bb283c92d74c7bca3ba6b9e0efb817b6eb0eb110\
             00",
        ),
        (
            1,
            "c40fc8e53fb8c53bf9393006bb283c92d74c7bca3ba6b9e0efb817b6eb0eb110\
             1c050b101d16",
        ),
        (
            15,
            "c40fc8e53fb8c53bf9393006bb283c92d74c7bca3ba6b9e0efb817b6eb0eb110\
             f715",
        ),
        (
            16,
            "6c00f32de83a65b51ebb8f024505c5b38f2194d9d3032a5c72ad0aab8a90694b\
             07a8a4ccce4b",
        ),
        (
            17,
            "6c00f32de83a65b51ebb8f024505c5b38f2194d9d3032a5c72ad0aab8a90694b\
             17511c7231862b",
        ),
        (
            1_000_000,
            "15d071ea417d20be2895beeac6025b8c9d5c8ef1e83b522fb0fc55b6144753ad\
             0a237cc56218fc",
        ),
        (
            u64::MAX,
            "6745d5b5b9c2d5964dfeb1f1f030d9fd95d4743010bbba5c5ca174dd83bc791b\
             ffbdcbf2",
        ),
    ];
}
