//! Range deletions: tombstones that delete every key of a half-open user-key
//! range `[start, end)` written before them.
//!
//! A range deletion is one entry whatever the range holds. It travels as one
//! op of a write batch (WAL), sits in the memtable beside the point entries,
//! and is flushed into a table's range-deletion block. Readers never see the
//! tombstones as written: every source (a memtable, a table, a compaction's
//! inputs) turns its tombstones into [`Fragments`], non-overlapping ranges each
//! carrying the sequence numbers of the tombstones that cover all of it, so
//! that "the newest tombstone over key `k` visible at sequence `s`" is one
//! binary search.
//!
//! A key version `k#p` is deleted for a reader at `s` when some tombstone over
//! `k` has a sequence number `t` with `p < t <= s`. Sequence numbers are
//! global, so this holds across memtables and levels alike.
//!
//! # Encoding (the range-deletion block of a table, `docs/format/table.md`)
//!
//! ```text
//! range_del_block := count:varint32 fragment{count}
//! fragment        := start:varint32-length-prefixed end:varint32-length-prefixed
//!                    seqs:varint32 seq:varint64{seqs}
//! ```
//!
//! Fragments are in key order and do not overlap (`end_i <= start_{i+1}`),
//! each non-empty (`start < end`), with `1 <= seqs` sequence numbers in
//! strictly decreasing order, each at most `2^56 - 1`. Stored as a classic
//! block (5-byte trailer, never compressed) right before the properties.

use std::cmp::Ordering;

use crate::format::{get_length_prefixed, get_varint32, get_varint64, put_length_prefixed};
use crate::format::{
    put_varint32, put_varint64, varint_len, InternalKey, SeqNo, ValueKind, MAX_SEQNO,
};

/// One range deletion as written: every key in `[start, end)` with a sequence
/// number below `seq` is deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RangeTombstone {
    pub start: Vec<u8>,
    pub end: Vec<u8>,
    pub seq: SeqNo,
}

/// A range covered by the same tombstones: `seqs` newest first, never empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fragment {
    pub start: Vec<u8>,
    pub end: Vec<u8>,
    pub seqs: Vec<SeqNo>,
}

impl Fragment {
    /// The newest sequence number visible at `snapshot`.
    pub(crate) fn visible_seq(&self, snapshot: SeqNo) -> Option<SeqNo> {
        self.seqs.iter().copied().find(|&s| s <= snapshot)
    }
}

/// Non-overlapping fragments in key order (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Fragments {
    frags: Vec<Fragment>,
}

impl Fragments {
    /// Fragments the tombstones `tombs` (in any order, overlapping or not;
    /// empty ranges are ignored).
    pub(crate) fn build(mut tombs: Vec<RangeTombstone>) -> Fragments {
        tombs.retain(|t| t.start < t.end);
        if tombs.is_empty() {
            return Fragments::default();
        }
        tombs.sort_by(|a, b| a.start.cmp(&b.start));
        let mut bounds: Vec<&[u8]> = tombs
            .iter()
            .flat_map(|t| [t.start.as_slice(), t.end.as_slice()])
            .collect();
        bounds.sort_unstable();
        bounds.dedup();
        let mut frags: Vec<Fragment> = Vec::new();
        // Tombstones started at or before the current bound: (end, seq).
        let mut active: Vec<(&[u8], SeqNo)> = Vec::new();
        let mut next = 0;
        for pair in bounds.windows(2) {
            let (lo, hi) = (pair[0], pair[1]);
            while let Some(t) = tombs.get(next).filter(|t| t.start.as_slice() <= lo) {
                active.push((t.end.as_slice(), t.seq));
                next += 1;
            }
            active.retain(|&(end, _)| end > lo);
            if active.is_empty() {
                continue;
            }
            let mut seqs: Vec<SeqNo> = active.iter().map(|&(_, s)| s).collect();
            seqs.sort_unstable_by(|a, b| b.cmp(a));
            seqs.dedup();
            match frags.last_mut() {
                // The same tombstones go on: one fragment.
                Some(last) if last.end.as_slice() == lo && last.seqs == seqs => {
                    last.end = hi.to_vec()
                }
                _ => frags.push(Fragment {
                    start: lo.to_vec(),
                    end: hi.to_vec(),
                    seqs,
                }),
            }
        }
        Fragments { frags }
    }

    /// The fragments of several sources together.
    pub(crate) fn merge<'a>(sources: impl IntoIterator<Item = &'a Fragments>) -> Fragments {
        let tombs: Vec<RangeTombstone> = sources.into_iter().flat_map(|f| f.tombstones()).collect();
        Fragments::build(tombs)
    }

    /// The fragments as tombstones (one per fragment and sequence number).
    pub(crate) fn tombstones(&self) -> impl Iterator<Item = RangeTombstone> + '_ {
        self.frags.iter().flat_map(|f| {
            f.seqs.iter().map(|&seq| RangeTombstone {
                start: f.start.clone(),
                end: f.end.clone(),
                seq,
            })
        })
    }

    /// True if there are no fragments.
    pub(crate) fn is_empty(&self) -> bool {
        self.frags.is_empty()
    }

    /// The fragments, in key order.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn fragments(&self) -> &[Fragment] {
        &self.frags
    }

    /// Tombstones counted as stored: one per fragment and sequence number.
    pub(crate) fn count(&self) -> u64 {
        self.frags.iter().map(|f| f.seqs.len() as u64).sum()
    }

    /// The fragment holding `key`, if any.
    pub(crate) fn fragment_at(&self, key: &[u8]) -> Option<&Fragment> {
        let i = self.frags.partition_point(|f| f.end.as_slice() <= key);
        self.frags.get(i).filter(|f| f.start.as_slice() <= key)
    }

    /// The newest tombstone sequence number over `key` visible at `snapshot`.
    pub(crate) fn covering_seq(&self, key: &[u8], snapshot: SeqNo) -> Option<SeqNo> {
        self.fragment_at(key)?.visible_seq(snapshot)
    }

    /// True if the version `key#seq` is deleted for a reader at `snapshot`.
    pub(crate) fn covers(&self, key: &[u8], seq: SeqNo, snapshot: SeqNo) -> bool {
        self.covering_seq(key, snapshot).is_some_and(|t| t > seq)
    }

    /// True if every key from `lo` to `hi` (both included) lies in fragments
    /// that each pass `pred`.
    pub(crate) fn spans(
        &self,
        lo: &[u8],
        hi: &[u8],
        mut pred: impl FnMut(&Fragment) -> bool,
    ) -> bool {
        let mut i = self.frags.partition_point(|f| f.end.as_slice() <= lo);
        let mut from = lo;
        while let Some(f) = self.frags.get(i) {
            if f.start.as_slice() > from || !pred(f) {
                return false;
            }
            if f.end.as_slice() > hi {
                return true;
            }
            from = &f.end;
            i += 1;
        }
        false
    }

    /// The part within `[lower, upper)` (`None`: unbounded).
    pub(crate) fn clip(&self, lower: Option<&[u8]>, upper: Option<&[u8]>) -> Fragments {
        let frags = self
            .frags
            .iter()
            .filter_map(|f| {
                let start = match lower {
                    Some(l) if l > f.start.as_slice() => l,
                    _ => f.start.as_slice(),
                };
                let end = match upper {
                    Some(u) if u < f.end.as_slice() => u,
                    _ => f.end.as_slice(),
                };
                (start < end).then(|| Fragment {
                    start: start.to_vec(),
                    end: end.to_vec(),
                    seqs: f.seqs.clone(),
                })
            })
            .collect();
        Fragments { frags }
    }

    /// Keeps in each fragment the sequence numbers `keep` accepts (its
    /// arguments: the sequence number, the next newer one kept, if any);
    /// fragments left without any go.
    pub(crate) fn retain_seqs(&mut self, mut keep: impl FnMut(SeqNo, Option<SeqNo>) -> bool) {
        for f in &mut self.frags {
            let mut newer = None;
            f.seqs.retain(|&s| {
                let k = keep(s, newer);
                if k {
                    newer = Some(s);
                }
                k
            });
        }
        self.frags.retain(|f| !f.seqs.is_empty());
    }

    /// Smallest and largest sequence numbers, `None` when empty.
    pub(crate) fn seq_range(&self) -> Option<(SeqNo, SeqNo)> {
        let seqs = self.frags.iter().flat_map(|f| f.seqs.iter().copied());
        seqs.fold(None, |acc, s| match acc {
            None => Some((s, s)),
            Some((lo, hi)) => Some((lo.min(s), hi.max(s))),
        })
    }

    /// The smallest internal key the fragments cover: the first start at its
    /// newest sequence number.
    pub(crate) fn smallest_key(&self) -> Option<InternalKey> {
        let f = self.frags.first()?;
        Some(InternalKey::new(
            &f.start,
            f.seqs[0],
            ValueKind::RangeDelete,
        ))
    }

    /// An upper bound of the keys covered, for a table's key range. An end
    /// `x ++ [0]` covers exactly the keys up to `x`: the bound is the last
    /// internal key of `x`. Any other end is exclusive: the bound is a
    /// sentinel at the end that sorts before every real version of it.
    pub(crate) fn largest_key(&self) -> Option<InternalKey> {
        let f = self.frags.last()?;
        Some(match f.end.split_last() {
            Some((0, x)) => InternalKey::new(x, 0, ValueKind::Delete),
            _ => InternalKey::new(&f.end, MAX_SEQNO, ValueKind::RangeDelete),
        })
    }

    /// Encodes the block contents (grammar in the module doc).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint32(&mut out, self.frags.len() as u32);
        for f in &self.frags {
            put_length_prefixed(&mut out, &f.start);
            put_length_prefixed(&mut out, &f.end);
            put_varint32(&mut out, f.seqs.len() as u32);
            for &s in &f.seqs {
                put_varint64(&mut out, s);
            }
        }
        out
    }

    /// Bytes of [`Fragments::encode`]'s output.
    fn encoded_len(&self) -> usize {
        let mut n = varint_len(self.frags.len() as u64);
        for f in &self.frags {
            n += varint_len(f.start.len() as u64) + f.start.len();
            n += varint_len(f.end.len() as u64) + f.end.len();
            n += varint_len(f.seqs.len() as u64);
            n += f.seqs.iter().map(|&s| varint_len(s)).sum::<usize>();
        }
        n
    }

    /// Decodes block contents, checking every rule of the grammar; the error
    /// says what is wrong (the caller names file and offset).
    pub(crate) fn decode(mut src: &[u8]) -> Result<Fragments, String> {
        let total = src.len();
        let count = get_varint32(&mut src).ok_or("truncated fragment count")?;
        let mut frags: Vec<Fragment> = Vec::new();
        for i in 0..count {
            let start =
                get_length_prefixed(&mut src).ok_or(format!("fragment {i}: truncated start"))?;
            let end =
                get_length_prefixed(&mut src).ok_or(format!("fragment {i}: truncated end"))?;
            if start >= end {
                return Err(format!("fragment {i}: start is not below end"));
            }
            if frags
                .last()
                .is_some_and(|p| p.end.as_slice().cmp(start) == Ordering::Greater)
            {
                return Err(format!("fragment {i} overlaps or precedes the one before"));
            }
            let n = get_varint32(&mut src).ok_or(format!("fragment {i}: truncated count"))?;
            if n == 0 {
                return Err(format!("fragment {i} has no sequence number"));
            }
            // Each sequence number takes at least one byte.
            if n as usize > src.len() {
                return Err(format!("fragment {i}: {n} sequence numbers pass the block"));
            }
            let mut seqs = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let s = get_varint64(&mut src).ok_or(format!("fragment {i}: truncated seq"))?;
                if s > MAX_SEQNO || seqs.last().is_some_and(|&p| p <= s) {
                    return Err(format!(
                        "fragment {i}: sequence numbers out of order or range"
                    ));
                }
                seqs.push(s);
            }
            frags.push(Fragment {
                start: start.to_vec(),
                end: end.to_vec(),
                seqs,
            });
        }
        if !src.is_empty() {
            return Err(format!("{} bytes after the last fragment", src.len()));
        }
        let frags = Fragments { frags };
        // One encoding per block: a varint padded with continuation bytes
        // (which the varint reader accepts) is not this writer's.
        if frags.encoded_len() != total {
            return Err("varints not in their shortest form".into());
        }
        Ok(frags)
    }
}

/// The smallest key greater than `key` (`key ++ [0]`): as the exclusive end
/// of a range, it covers exactly the keys up to `key`.
pub(crate) fn key_successor(key: &[u8]) -> Vec<u8> {
    let mut s = Vec::with_capacity(key.len() + 1);
    s.extend_from_slice(key);
    s.push(0);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(start: &str, end: &str, seq: SeqNo) -> RangeTombstone {
        RangeTombstone {
            start: start.into(),
            end: end.into(),
            seq,
        }
    }

    fn f(start: &str, end: &str, seqs: &[SeqNo]) -> Fragment {
        Fragment {
            start: start.into(),
            end: end.into(),
            seqs: seqs.to_vec(),
        }
    }

    #[test]
    fn overlapping_tombstones_fragment_into_disjoint_ranges() {
        let frags = Fragments::build(vec![t("c", "g", 5), t("a", "e", 3), t("x", "x", 9)]);
        assert_eq!(
            frags.fragments(),
            &[f("a", "c", &[3]), f("c", "e", &[5, 3]), f("e", "g", &[5])]
        );
        assert_eq!(frags.count(), 4);
        assert_eq!(frags.covering_seq(b"d", 10), Some(5));
        assert_eq!(frags.covering_seq(b"d", 4), Some(3));
        assert_eq!(frags.covering_seq(b"d", 2), None);
        assert_eq!(frags.covering_seq(b"g", 10), None, "end is exclusive");
        assert_eq!(frags.covering_seq(b"a", 10), Some(3), "start is inclusive");
        assert!(frags.covers(b"b", 2, 10));
        assert!(
            !frags.covers(b"b", 3, 10),
            "a version as new as the tombstone stays"
        );
        assert_eq!(frags.seq_range(), Some((3, 5)));
    }

    #[test]
    fn equal_neighbours_merge_and_merge_of_sources_is_a_rebuild() {
        let a = Fragments::build(vec![t("a", "c", 2), t("c", "e", 2)]);
        assert_eq!(a.fragments(), &[f("a", "e", &[2])]);
        let b = Fragments::build(vec![t("b", "d", 7)]);
        let m = Fragments::merge([&a, &b]);
        assert_eq!(
            m.fragments(),
            &[f("a", "b", &[2]), f("b", "d", &[7, 2]), f("d", "e", &[2])]
        );
    }

    #[test]
    fn clip_and_retain() {
        let m = Fragments::build(vec![t("a", "e", 2), t("b", "d", 7)]);
        let c = m.clip(Some(b"c"), Some(b"d\0"));
        assert_eq!(c.fragments(), &[f("c", "d", &[7, 2]), f("d", "d\0", &[2])]);
        let mut r = m.clone();
        r.retain_seqs(|s, _| s > 2);
        assert_eq!(r.fragments(), &[f("b", "d", &[7])]);
    }

    #[test]
    fn encoding_roundtrips_and_every_damage_is_an_error() {
        let m = Fragments::build(vec![t("a", "e", 2), t("b", "d", 7), t("", "\0", 1)]);
        let bytes = m.encode();
        assert_eq!(Fragments::decode(&bytes), Ok(m.clone()));
        for cut in 0..bytes.len() {
            assert!(Fragments::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(Fragments::decode(&extra).is_err());
        // Out of order fragments, an empty range, unordered sequence numbers.
        let bad = |frags: Vec<Fragment>| Fragments { frags }.encode();
        assert!(Fragments::decode(&bad(vec![f("c", "d", &[1]), f("a", "b", &[1])])).is_err());
        assert!(Fragments::decode(&bad(vec![f("b", "b", &[1])])).is_err());
        assert!(Fragments::decode(&bad(vec![f("a", "b", &[1, 2])])).is_err());
        assert!(Fragments::decode(&bad(vec![f("a", "b", &[])])).is_err());
        assert!(Fragments::decode(&bad(vec![f("a", "b", &[MAX_SEQNO + 1])])).is_err());
        // A count padded with a continuation byte: the same value, not the
        // writer's bytes.
        assert!(Fragments::decode(&[0x80, 0x00]).is_err());
        assert_eq!(Fragments::decode(&[0x00]), Ok(Fragments::default()));
    }

    #[test]
    fn spans_need_contiguous_fragments_that_all_pass() {
        let m = Fragments::build(vec![t("b", "d", 7), t("d", "f", 5), t("g", "h", 9)]);
        assert!(m.spans(b"b", b"e", |_| true));
        assert!(m.spans(b"c", b"c", |_| true));
        assert!(!m.spans(b"b", b"f", |_| true), "f is not covered");
        assert!(!m.spans(b"a", b"c", |_| true), "a is not covered");
        assert!(!m.spans(b"e", b"g", |_| true), "the gap between f and g");
        assert!(
            !m.spans(b"b", b"e", |f| f.seqs[0] > 6),
            "the second fragment fails"
        );
        assert!(m.spans(b"b", b"c", |f| f.seqs[0] > 6));
    }

    #[test]
    fn bounds_of_a_table() {
        let m = Fragments::build(vec![t("b", "d", 7)]);
        let lo = m.smallest_key().expect("smallest");
        let hi = m.largest_key().expect("largest");
        assert_eq!(lo.user_key(), b"b");
        assert_eq!(hi.user_key(), b"d");
        // The sentinel sorts before every real version of "d".
        assert!(hi < InternalKey::new(b"d", MAX_SEQNO, ValueKind::Value));
        assert_eq!(key_successor(b"k"), b"k\0");
    }
}
