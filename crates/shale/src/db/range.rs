//! [`Db::range`]: a range of keys as a Rust iterator, from either end.

use std::ops::{Bound, RangeBounds};

use super::ReadOptions;
use super::{Db, DbIterator, Snapshot};
use crate::error::Result;

/// The keys and values of a key range, in key order, as of the moment
/// [`Db::range`] was called: a Rust [`DoubleEndedIterator`] (`next` walks up
/// from the start, `next_back` down from the end, and they stop where they
/// meet). Holds a snapshot while it lives.
///
/// Each item is `Ok((key, value))`; a read error (I/O, corruption) is yielded
/// once as `Err` and ends the iteration at both ends.
pub struct Range {
    front: DbIterator,
    back: DbIterator,
    /// Last key yielded from the front and from the back.
    front_key: Option<Vec<u8>>,
    back_key: Option<Vec<u8>>,
    started: (bool, bool),
    done: bool,
    _snapshot: Snapshot,
}

impl Db {
    /// Every key in `range` with its value, as a Rust iterator over a
    /// snapshot: `db.range(&b"a"[..]..&b"m"[..])`, `db.range::<&[u8], _>(..)`.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Result<Range> {
        Range::new(self.snapshot(), bounds(range))
    }

    /// Every key that starts with `prefix`, in key order, over a snapshot
    /// (an empty prefix: every key).
    pub fn prefix(&self, prefix: &[u8]) -> Result<Range> {
        self.prefix_from(prefix, &[])
    }

    /// The keys that start with `prefix` and are at least `prefix ++ start`,
    /// in key order, over a snapshot: exactly go-ethereum's
    /// `NewIterator(prefix, start)`.
    pub fn prefix_from(&self, prefix: &[u8], start: &[u8]) -> Result<Range> {
        Range::new(self.snapshot(), prefix_bounds(prefix, start))
    }
}

impl Snapshot {
    /// [`Db::range`] as of the snapshot.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Result<Range> {
        Range::new(self.another(), bounds(range))
    }

    /// [`Db::prefix`] as of the snapshot.
    pub fn prefix(&self, prefix: &[u8]) -> Result<Range> {
        self.prefix_from(prefix, &[])
    }

    /// [`Db::prefix_from`] as of the snapshot.
    pub fn prefix_from(&self, prefix: &[u8], start: &[u8]) -> Result<Range> {
        Range::new(self.another(), prefix_bounds(prefix, start))
    }
}

/// The smallest key above every key that starts with `prefix`: `prefix` with
/// its trailing `0xff` bytes dropped and its last byte incremented. `None`
/// when there is none (an empty prefix, or one of `0xff` bytes only): the
/// keys with that prefix run to the end of the key space. The upper bound of
/// a prefix scan with [`ReadOptions`].
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut out = prefix[..=keep].to_vec();
    out[keep] += 1;
    Some(out)
}

/// Read options bounding an iterator to `range`.
fn bounds<K: AsRef<[u8]>, R: RangeBounds<K>>(range: R) -> ReadOptions<'static> {
    // An exclusive lower or inclusive upper bound is the next key in byte
    // order: the bound followed by a zero byte.
    let successor = |k: &K| [k.as_ref(), &[0]].concat();
    ReadOptions {
        lower_bound: match range.start_bound() {
            Bound::Included(k) => Some(k.as_ref().to_vec()),
            Bound::Excluded(k) => Some(successor(k)),
            Bound::Unbounded => None,
        },
        upper_bound: match range.end_bound() {
            Bound::Included(k) => Some(successor(k)),
            Bound::Excluded(k) => Some(k.as_ref().to_vec()),
            Bound::Unbounded => None,
        },
        ..ReadOptions::default()
    }
}

/// Read options bounding an iterator to the keys with `prefix` from
/// `prefix ++ start` on.
fn prefix_bounds(prefix: &[u8], start: &[u8]) -> ReadOptions<'static> {
    ReadOptions {
        lower_bound: Some([prefix, start].concat()),
        upper_bound: prefix_successor(prefix),
        ..ReadOptions::default()
    }
}

impl Range {
    fn new(snapshot: Snapshot, opts: ReadOptions<'_>) -> Result<Range> {
        Ok(Range {
            front: snapshot.iter(&opts)?,
            back: snapshot.iter(&opts)?,
            front_key: None,
            back_key: None,
            started: (false, false),
            done: false,
            _snapshot: snapshot,
        })
    }

    /// The current entry of `it`, an error, or the end.
    fn take(it: &DbIterator) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        if it.valid() {
            return Some(Ok((it.key().to_vec(), it.value().to_vec())));
        }
        it.status().err().map(Err)
    }

    fn finish(
        &mut self,
        item: Option<Result<(Vec<u8>, Vec<u8>)>>,
    ) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
}

impl Iterator for Range {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.started.0 {
            self.front.next();
        } else {
            self.front.seek_to_first();
            self.started.0 = true;
        }
        let item = match Range::take(&self.front) {
            // Met the keys already yielded from the back.
            Some(Ok((k, _))) if self.back_key.as_ref().is_some_and(|b| &k >= b) => None,
            other => other,
        };
        if let Some(Ok((k, _))) = &item {
            self.front_key = Some(k.clone());
        }
        self.finish(item)
    }
}

impl DoubleEndedIterator for Range {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.started.1 {
            self.back.prev();
        } else {
            self.back.seek_to_last();
            self.started.1 = true;
        }
        let item = match Range::take(&self.back) {
            Some(Ok((k, _))) if self.front_key.as_ref().is_some_and(|f| &k <= f) => None,
            other => other,
        };
        if let Some(Ok((k, _))) = &item {
            self.back_key = Some(k.clone());
        }
        self.finish(item)
    }
}

impl std::iter::FusedIterator for Range {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Options;
    use shale_env::MemFs;
    use std::sync::Arc;

    #[test]
    fn ranges_with_every_kind_of_bound_from_both_ends() {
        let fs = Arc::new(MemFs::new());
        let db = Db::open(
            "/db",
            Options {
                fs,
                ..Options::default()
            },
        )
        .expect("open");
        for k in [b"a", b"b", b"c", b"d", b"e"] {
            db.put(k, k).expect("put");
        }
        let keys = |r: Range| -> Vec<u8> { r.map(|x| x.expect("row").0[0]).collect() };
        assert_eq!(keys(db.range::<&[u8], _>(..).expect("range")), b"abcde");
        assert_eq!(keys(db.range(&b"b"[..]..&b"d"[..]).expect("range")), b"bc");
        assert_eq!(
            keys(db.range(&b"b"[..]..=&b"d"[..]).expect("range")),
            b"bcd"
        );
        assert_eq!(keys(db.range(&b"c"[..]..).expect("range")), b"cde");
        let excl: (Bound<&[u8]>, Bound<&[u8]>) = (Bound::Excluded(&b"b"[..]), Bound::Unbounded);
        assert_eq!(keys(db.range::<&[u8], _>(excl).expect("range")), b"cde");
        let back: Vec<u8> = db
            .range::<&[u8], _>(..)
            .expect("range")
            .rev()
            .map(|x| x.expect("row").0[0])
            .collect();
        assert_eq!(back, b"edcba");
        // Both ends meet in the middle without repeating a key.
        let mut r = db.range::<&[u8], _>(..).expect("range");
        let mut seen = Vec::new();
        loop {
            match (r.next(), r.next_back()) {
                (Some(a), Some(b)) => seen.extend([a.expect("a").0[0], b.expect("b").0[0]]),
                (Some(a), None) => seen.push(a.expect("a").0[0]),
                (None, Some(b)) => seen.push(b.expect("b").0[0]),
                (None, None) => break,
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, b"abcde");
        // The range reads its snapshot: later writes are not in it.
        let r = db.range::<&[u8], _>(..).expect("range");
        db.put(b"f", b"f").expect("put");
        db.delete(b"a").expect("delete");
        assert_eq!(keys(r), b"abcde");
    }
}
