//! Internal keys: a user key plus an 8-byte trailer holding the sequence number
//! and the kind of entry.
//!
//! Encoding (used in memtables, tables and iterators):
//!
//! ```text
//! internal_key := user_key trailer
//! trailer      := fixed64_le( seqno << 8 | kind )     // 8 bytes
//! ```
//!
//! Order: user key ascending (bytewise), then sequence number descending, then
//! kind descending, so that the newest version of a key comes first.
//! Textual form (logs, tests, tools): `key#seq,KIND`, with the user key printed as
//! text when it is printable ASCII and as `0x`-prefixed hex otherwise.

use std::cmp::Ordering;
use std::fmt;

/// A sequence number: the order of a write in the database's history. 56 bits.
pub type SeqNo = u64;

/// The largest representable sequence number.
pub(crate) const MAX_SEQNO: SeqNo = (1 << 56) - 1;

/// Length of the trailer after the user key.
pub(crate) const TRAILER_LEN: usize = 8;

/// The kind of an entry. Persisted in every table and WAL.
///
/// DO NOT CHANGE the numeric values: they are part of the on-disk format.
/// New kinds take new numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ValueKind {
    /// A deletion tombstone.
    Delete = 0,
    /// A value.
    Value = 1,
    /// A range deletion: the key is the range's start, the value its end
    /// (exclusive). Carried by write batches and memtables; in tables it lives
    /// in the range-deletion block, never among the data entries, and as the
    /// kind of a table's bound keys.
    RangeDelete = 2,
}

impl ValueKind {
    /// Decodes a persisted kind byte.
    pub fn from_u8(b: u8) -> Option<ValueKind> {
        match b {
            0 => Some(ValueKind::Delete),
            1 => Some(ValueKind::Value),
            2 => Some(ValueKind::RangeDelete),
            _ => None,
        }
    }

    /// The kind used when seeking: sorts before (is newer than) every real kind
    /// at the same sequence number.
    pub const SEEK: u8 = 0xff;
}

/// Packs a sequence number and a kind byte into a trailer value.
#[inline]
pub(crate) fn pack_trailer(seq: SeqNo, kind: u8) -> u64 {
    debug_assert!(seq <= MAX_SEQNO);
    (seq << 8) | u64::from(kind)
}

/// An owned internal key.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct InternalKey {
    encoded: Vec<u8>,
}

impl InternalKey {
    /// Builds `user_key#seq,kind`.
    pub(crate) fn new(user_key: &[u8], seq: SeqNo, kind: ValueKind) -> InternalKey {
        Self::with_kind_byte(user_key, seq, kind as u8)
    }

    /// The key that sorts first among all versions of `user_key` visible at `seq`:
    /// seeking to it lands on the newest entry with sequence number `<= seq`.
    pub(crate) fn seek_key(user_key: &[u8], seq: SeqNo) -> InternalKey {
        Self::with_kind_byte(user_key, seq, ValueKind::SEEK)
    }

    fn with_kind_byte(user_key: &[u8], seq: SeqNo, kind: u8) -> InternalKey {
        let mut encoded = Vec::with_capacity(user_key.len() + TRAILER_LEN);
        encoded.extend_from_slice(user_key);
        encoded.extend_from_slice(&pack_trailer(seq, kind).to_le_bytes());
        InternalKey { encoded }
    }

    /// Wraps an encoded internal key after checking its length and kind.
    pub(crate) fn from_encoded(encoded: Vec<u8>) -> Option<InternalKey> {
        parse_internal_key(&encoded)?;
        Some(InternalKey { encoded })
    }

    /// Wraps a seek target: any encoded key at least a trailer long, seek kind
    /// included. Never stored.
    pub(crate) fn seek_target(encoded: &[u8]) -> Option<InternalKey> {
        (encoded.len() >= TRAILER_LEN).then(|| InternalKey {
            encoded: encoded.to_vec(),
        })
    }

    /// The encoded bytes.
    pub(crate) fn encoded(&self) -> &[u8] {
        &self.encoded
    }

    /// A borrowed view.
    pub(crate) fn as_ref(&self) -> InternalKeyRef<'_> {
        split(&self.encoded)
    }

    /// The user key.
    pub(crate) fn user_key(&self) -> &[u8] {
        &self.encoded[..self.encoded.len() - TRAILER_LEN]
    }
}

impl fmt::Debug for InternalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.as_ref(), f)
    }
}

impl fmt::Display for InternalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.as_ref(), f)
    }
}

/// A decoded, borrowed internal key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct InternalKeyRef<'a> {
    /// The user key.
    pub user_key: &'a [u8],
    /// The sequence number.
    pub seq: SeqNo,
    /// The kind byte (a [`ValueKind`] for stored entries, `0xff` for seek keys).
    pub kind: u8,
}

impl InternalKeyRef<'_> {
    /// The kind, if it is a stored kind.
    pub fn value_kind(&self) -> Option<ValueKind> {
        ValueKind::from_u8(self.kind)
    }
}

impl fmt::Display for InternalKeyRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&user_key_text(self.user_key))?;
        let kind = match self.kind {
            0 => "DEL".to_string(),
            1 => "SET".to_string(),
            2 => "RANGEDEL".to_string(),
            0xff => "MAX".to_string(),
            other => format!("KIND{other}"),
        };
        write!(f, "#{},{kind}", self.seq)
    }
}

/// A user key as text: itself when it is printable ASCII, else `0x` and hex.
pub fn user_key_text(key: &[u8]) -> String {
    let printable = !key.is_empty() && key.iter().all(|b| b.is_ascii_graphic() || *b == b' ');
    if printable {
        String::from_utf8_lossy(key).into_owned()
    } else {
        let mut s = String::with_capacity(2 + 2 * key.len());
        s.push_str("0x");
        for b in key {
            s.push_str(&format!("{b:02x}"));
        }
        s
    }
}

fn split(encoded: &[u8]) -> InternalKeyRef<'_> {
    let n = encoded.len() - TRAILER_LEN;
    let mut t = [0u8; 8];
    t.copy_from_slice(&encoded[n..]);
    let trailer = u64::from_le_bytes(t);
    InternalKeyRef {
        user_key: &encoded[..n],
        seq: trailer >> 8,
        kind: trailer as u8,
    }
}

/// Decodes an encoded internal key; `None` if it is shorter than the trailer or
/// its kind is unknown (seek kind included: seek keys are never stored).
pub fn parse_internal_key(encoded: &[u8]) -> Option<InternalKeyRef<'_>> {
    if encoded.len() < TRAILER_LEN {
        return None;
    }
    let k = split(encoded);
    ValueKind::from_u8(k.kind)?;
    Some(k)
}

/// Bytewise comparison of keys, the same order as `a.cmp(b)` on byte
/// slices. Keys are compared eight bytes at a time as big-endian integers,
/// inline: a Get compares its key at every step of its searches (the
/// level's tables, a block's restarts and entries, a locator's keys), the
/// memtable and merges compare constantly, and a call to `memcmp` for a 16-
/// or 32-byte key costs more than the comparison. Hash keys almost always differ in
/// their first eight bytes; db_bench's decimal keys in their second eight.
#[inline]
pub(crate) fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let (mut ac, mut bc) = (a[..n].chunks_exact(8), b[..n].chunks_exact(8));
    for (x, y) in (&mut ac).zip(&mut bc) {
        let (x, y) = (be64(x), be64(y));
        if x != y {
            return x.cmp(&y);
        }
    }
    for (x, y) in ac.remainder().iter().zip(bc.remainder()) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

/// Eight bytes (a chunk of `chunks_exact(8)`) as a big-endian integer.
#[inline(always)]
fn be64(chunk: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(chunk);
    u64::from_be_bytes(w)
}

/// Compares two encoded internal keys (both at least [`TRAILER_LEN`] long).
#[inline]
pub(crate) fn compare_internal(a: &[u8], b: &[u8]) -> Ordering {
    let (au, at) = split_trailer(a);
    let (bu, bt) = split_trailer(b);
    match compare_bytes(au, bu) {
        Ordering::Equal => u64::from_le_bytes(*bt).cmp(&u64::from_le_bytes(*at)),
        o => o,
    }
}

/// Splits an encoded internal key into user key and trailer.
///
/// # Panics
///
/// If `key` is shorter than [`TRAILER_LEN`]: every internal key is checked
/// when it is decoded or built, so this is a bug, and ordering it anyhow
/// could return wrong rows.
#[inline]
fn split_trailer(key: &[u8]) -> (&[u8], &[u8; TRAILER_LEN]) {
    match key.split_last_chunk::<TRAILER_LEN>() {
        Some(parts) => parts,
        None => panic!("internal key of {} bytes has no trailer", key.len()),
    }
}

impl PartialOrd for InternalKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for InternalKey {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_internal(&self.encoded, &other.encoded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_user_key_then_newest_first() {
        let a1 = InternalKey::new(b"a", 1, ValueKind::Value);
        let a2 = InternalKey::new(b"a", 2, ValueKind::Value);
        let a2d = InternalKey::new(b"a", 2, ValueKind::Delete);
        let b1 = InternalKey::new(b"b", 1, ValueKind::Value);
        let mut keys = vec![b1.clone(), a1.clone(), a2d.clone(), a2.clone()];
        keys.sort();
        assert_eq!(keys, vec![a2, a2d, a1, b1]);
        let seek = InternalKey::seek_key(b"a", 2);
        assert_eq!(
            seek.cmp(&InternalKey::new(b"a", 2, ValueKind::Value)),
            Ordering::Less
        );
        assert_eq!(
            seek.cmp(&InternalKey::new(b"a", 3, ValueKind::Value)),
            Ordering::Greater
        );
    }

    #[test]
    fn compare_bytes_is_bytewise() {
        let samples: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0; 8],
            vec![0; 9],
            b"abcdefgh".to_vec(),
            b"abcdefgha".to_vec(),
            b"abcdefgz".to_vec(),
            vec![0xff; 7],
            vec![0xff; 8],
            vec![0xff; 32],
            [vec![1; 8], vec![0]].concat(),
            [vec![1; 8], vec![2]].concat(),
            b"0000000000012345".to_vec(),
            b"0000000000012346".to_vec(),
            b"00000000000123450".to_vec(),
            [vec![7; 24], vec![0x80]].concat(),
            [vec![7; 24], vec![0x7f, 0]].concat(),
        ];
        for a in &samples {
            for b in &samples {
                assert_eq!(compare_bytes(a, b), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
        // Random keys of 0-40 bytes over a two-letter alphabet, so that long
        // common prefixes and every chunk boundary are common.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut key = || -> Vec<u8> {
            let len = next() % 41;
            (0..len)
                .map(|_| if next() % 8 == 0 { 0xff } else { b'0' })
                .collect()
        };
        for _ in 0..20_000 {
            let (a, b) = (key(), key());
            assert_eq!(compare_bytes(&a, &b), a.cmp(&b), "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn textual_form() {
        assert_eq!(
            InternalKey::new(b"key", 7, ValueKind::Value).to_string(),
            "key#7,SET"
        );
        assert_eq!(
            InternalKey::new(&[0, 0xab], 3, ValueKind::Delete).to_string(),
            "0x00ab#3,DEL"
        );
    }

    #[test]
    fn parse_rejects_short_and_unknown_kinds() {
        assert!(parse_internal_key(b"short").is_none());
        let mut k = InternalKey::new(b"k", 1, ValueKind::Value)
            .encoded()
            .to_vec();
        let n = k.len();
        k[n - 8] = 3;
        assert!(parse_internal_key(&k).is_none());
    }
}
