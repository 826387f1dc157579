//! The hash every filter kind is built from and probed with.

use xxhash_rust::xxh3::xxh3_64;

/// The 64-bit XXH3 hash of `user_key`. Persisted through every filter
/// built from it: DO NOT CHANGE.
#[inline]
pub(crate) fn filter_hash(user_key: &[u8]) -> u64 {
    xxh3_64(user_key)
}
