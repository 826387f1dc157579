//! The partitioned index: short user-key separators and the builder of index
//! partitions.
//!
//! One index entry per data block, in index partitions of about
//! `index_partition_size` bytes; the top-level index has one entry per partition
//! (the partition's last separator and its handle). Both use the `index_entry`
//! grammar of [`super::block`].
//!
//! Separator rule, for data block `i` with last user key `a` and next block's first
//! user key `b` (`a <= b`): `a <= S < b`, or `S == a` when `a == b` (one user key's
//! versions straddle the boundary). The last block gets a short successor of its
//! last user key. A point lookup for `k` therefore reads the first block whose
//! separator is `>= k`, and needs the next block only when that separator equals
//! `k`.

use super::block::{BlockBuilder, EntryFormat, INDEX_RESTART_INTERVAL};

/// The shortest `S` with `a <= S < b`; `a` itself when `a == b` or when `a` is a
/// prefix of `b`. Requires `a <= b`.
pub(crate) fn shortest_separator(a: &[u8], b: &[u8]) -> Vec<u8> {
    let p = a.iter().zip(b.iter()).take_while(|(x, y)| x == y).count();
    let (Some(&ap), Some(&bp)) = (a.get(p), b.get(p)) else {
        return a.to_vec(); // equal, or a is a prefix of b
    };
    debug_assert!(ap < bp, "separator inputs out of order");
    if ap.checked_add(1).is_some_and(|next| next < bp) {
        if let Some(s) = prefix_bumped(a, p) {
            return s;
        }
    }
    // S keeps a[..=p] (so S < b) and must be >= a: bump the first byte after p
    // that is not 0xff, if that makes S shorter than a.
    if let Some(j) = a
        .iter()
        .skip(p + 1)
        .position(|&x| x != 0xff)
        .map(|j| j + p + 1)
    {
        if j + 1 < a.len() {
            if let Some(s) = prefix_bumped(a, j) {
                return s;
            }
        }
    }
    a.to_vec()
}

/// A short key `>= a`: `a` with its first non-0xff byte incremented and the rest
/// dropped, or `a` itself.
pub(crate) fn short_successor(a: &[u8]) -> Vec<u8> {
    match a.iter().position(|&x| x != 0xff) {
        Some(j) if j + 1 < a.len() => prefix_bumped(a, j).unwrap_or_else(|| a.to_vec()),
        _ => a.to_vec(),
    }
}

/// `a[..j]` followed by `a[j] + 1`; `None` if `j` is out of range or `a[j] == 0xff`.
fn prefix_bumped(a: &[u8], j: usize) -> Option<Vec<u8>> {
    let next = a.get(j)?.checked_add(1)?;
    let mut s = Vec::with_capacity(j + 1);
    s.extend_from_slice(a.get(..j)?);
    s.push(next);
    Some(s)
}

/// A finished index partition, waiting to be written after the filter.
pub(crate) struct Partition {
    /// The partition's last separator (its top-level index key).
    pub last_separator: Vec<u8>,
    /// Encoded block contents.
    pub contents: Vec<u8>,
}

/// Accumulates index entries into partitions.
pub(crate) struct IndexBuilder {
    partition_size: usize,
    current: BlockBuilder,
    /// Partitions finished so far.
    pub partitions: Vec<Partition>,
    /// Bytes of finished partitions (contents only).
    pub finished_bytes: u64,
}

impl IndexBuilder {
    /// A builder cutting partitions of `format` (`Index` or `PagedIndex`) at
    /// about `partition_size` bytes.
    pub(crate) fn new(partition_size: usize, format: EntryFormat) -> IndexBuilder {
        IndexBuilder {
            partition_size: partition_size.max(1),
            current: BlockBuilder::new(format, INDEX_RESTART_INTERVAL),
            partitions: Vec::new(),
            finished_bytes: 0,
        }
    }

    /// Adds the entry of one data block.
    pub(crate) fn add(&mut self, separator: &[u8], offset: u64, size: u64) {
        self.current.add_index(separator, offset, size);
        if self.current.estimated_size() >= self.partition_size {
            self.cut();
        }
    }

    /// Bytes of index written if finished now.
    pub(crate) fn estimated_size(&self) -> u64 {
        let open = if self.current.is_empty() {
            0
        } else {
            self.current.estimated_size()
        };
        self.finished_bytes + open as u64
    }

    fn cut(&mut self) {
        let last_separator = self.current.last_key().to_vec();
        let contents = self.current.finish();
        self.finished_bytes += contents.len() as u64;
        self.partitions.push(Partition {
            last_separator,
            contents,
        });
    }

    /// Closes the open partition and returns all partitions.
    pub(crate) fn finish(mut self) -> Vec<Partition> {
        if !self.current.is_empty() {
            self.cut();
        }
        self.partitions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::test_util::Rng;

    fn check(a: &[u8], b: &[u8]) -> Vec<u8> {
        let s = shortest_separator(a, b);
        assert!(a <= &s[..], "{a:?} <= {s:?}");
        if a == b {
            assert_eq!(s, a);
        } else {
            assert!(&s[..] < b, "{s:?} < {b:?}");
        }
        s
    }

    #[test]
    fn separators_are_short_and_bracket_the_boundary() {
        assert_eq!(check(b"abc", b"abc"), b"abc");
        assert_eq!(check(b"abc", b"abd"), b"abc");
        assert_eq!(check(b"abc", b"abz"), b"abd");
        assert_eq!(check(b"ab", b"abc"), b"ab");
        assert_eq!(check(b"abcdef", b"abd"), b"abce");
        assert_eq!(check(b"ab\xff\xff\x05x", b"ac"), b"ab\xff\xff\x06");
        assert_eq!(check(b"ab\xff", b"ac"), b"ab\xff");
        assert_eq!(check(b"", b"a"), b"");
        let mut rng = Rng::new(1);
        for _ in 0..10_000 {
            let mut a = rng.bytes32().to_vec();
            let mut b = rng.bytes32().to_vec();
            let p = rng.below(4) as usize;
            b[..p].copy_from_slice(&a[..p]);
            a.truncate(8 + rng.below(24) as usize);
            if a > b {
                std::mem::swap(&mut a, &mut b);
            }
            check(&a, &b);
        }
    }

    #[test]
    fn successors_are_short_and_not_smaller() {
        assert_eq!(short_successor(b"abc"), b"b");
        assert_eq!(short_successor(b"\xff\xffab"), b"\xff\xffb");
        assert_eq!(short_successor(b"\xff\xff"), b"\xff\xff");
        assert_eq!(short_successor(b"\xffa"), b"\xffa");
        assert_eq!(short_successor(b""), b"");
    }
}
