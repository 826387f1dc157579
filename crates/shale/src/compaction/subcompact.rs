//! Subcompactions: where a compaction's key space is cut into ranges merged
//! on threads of their own (pure: table boundaries and sizes in, cut points
//! out).
//!
//! A compaction whose inputs hold enough bytes is split into up to
//! `max_subcompactions` disjoint user-key ranges. The cut points are user
//! keys; range `i` holds the user keys in `[cut[i-1], cut[i])` (the first
//! range is unbounded below, the last above), so every version of one user
//! key lands in one range, and the ranges together cover every key.
//!
//! Every cut point is the *successor* `a ++ [0]` of an input table's largest
//! user key `a`: the range below it holds the keys up to `a` and nothing
//! above. That matters for range deletions: a range's outputs carry the
//! fragments clipped to its range, and a fragment clipped at `a ++ [0]`
//! ends the table's key range at `a` itself (see
//! `Fragments::largest_key`), while the next range starts above `a`, so the
//! tables of the output level keep strictly disjoint user-key ranges, as an
//! unsplit compaction leaves them. A cut at any other key `b` would end the
//! lower range's last table at a sentinel of `b` and could start the next
//! range's first table at `b`.
//!
//! Only table ends are candidates, so a compaction whose tables all end at
//! the same key is not split: L0 tables of hash keys all span the key
//! space, and an L0 -> base compaction is cut at the base level's tables
//! (the first one, into an empty base level, runs unsplit).
//!
//! The bytes below a cut are estimated from the tables alone: a table lying
//! wholly below counts whole, one across the cut by the fraction of its key
//! span below it (keys read as numbers from their first differing bytes,
//! exact enough for the hash keys the engine is built for). The cuts are
//! chosen greedily, each the candidate whose estimate is nearest to its
//! share of the total.

/// An input table as the splitter sees it: its user-key span and size.
#[derive(Clone, Debug)]
pub(crate) struct Span<'a> {
    pub smallest: &'a [u8],
    pub largest: &'a [u8],
    pub size: u64,
}

/// The cut points (strictly increasing user keys) that split `tables` into
/// at most `max_ranges` ranges holding at least `min_range_bytes` each by
/// estimate; empty when the compaction is not worth splitting.
pub(crate) fn split_points(
    tables: &[Span<'_>],
    max_ranges: usize,
    min_range_bytes: u64,
) -> Vec<Vec<u8>> {
    let total: u64 = tables.iter().map(|t| t.size).sum();
    let by_size = total / min_range_bytes.max(1);
    let ranges = (max_ranges as u64).min(by_size);
    if ranges < 2 {
        return Vec::new();
    }
    // Candidates: the successor of every table's largest user key, below
    // the greatest of them (a cut there would leave the last range empty).
    let Some(top) = tables.iter().map(|t| t.largest).max() else {
        return Vec::new();
    };
    let mut candidates: Vec<&[u8]> = tables
        .iter()
        .map(|t| t.largest)
        .filter(|&l| l < top)
        .collect();
    candidates.sort_unstable();
    candidates.dedup();
    let below: Vec<(Vec<u8>, f64)> = candidates
        .into_iter()
        .map(|a| {
            let cut = successor(a);
            let bytes = tables.iter().map(|t| bytes_below(t, &cut)).sum();
            (cut, bytes)
        })
        .collect();
    // No more ranges than candidates can cut.
    let ranges = ranges.min(below.len() as u64 + 1);
    let mut cuts: Vec<Vec<u8>> = Vec::new();
    let mut from = 0usize;
    let mut last_bytes = 0.0f64;
    for k in 1..ranges {
        let share = total as f64 * k as f64 / ranges as f64;
        // The candidate nearest the share, past the previous cut, leaving
        // the ranges still to come a candidate each.
        let remaining = (ranges - k - 1) as usize;
        let end = below.len().saturating_sub(remaining);
        let best = (from..end)
            .filter(|&i| below[i].1 > last_bytes)
            .min_by(|&a, &b| {
                let da = (below[a].1 - share).abs();
                let db = (below[b].1 - share).abs();
                da.total_cmp(&db)
            });
        let Some(i) = best else {
            break;
        };
        cuts.push(below[i].0.clone());
        last_bytes = below[i].1;
        from = i + 1;
    }
    cuts
}

/// `a ++ [0]`: the smallest user key above `a`.
fn successor(a: &[u8]) -> Vec<u8> {
    let mut s = Vec::with_capacity(a.len() + 1);
    s.extend_from_slice(a);
    s.push(0);
    s
}

/// Estimated bytes of `t` holding user keys below `cut`.
fn bytes_below(t: &Span<'_>, cut: &[u8]) -> f64 {
    if cut <= t.smallest {
        0.0
    } else if cut > t.largest {
        t.size as f64
    } else {
        t.size as f64 * fraction(t.smallest, t.largest, cut)
    }
}

/// Where `x` lies between `lo` and `hi` (`lo <= x <= hi`), from 0 to 1, with
/// each key read as a number from the first byte where `lo` and `hi` differ.
fn fraction(lo: &[u8], hi: &[u8], x: &[u8]) -> f64 {
    let common = lo.iter().zip(hi).take_while(|(a, b)| a == b).count();
    let number = |k: &[u8]| -> f64 {
        let mut v = 0.0f64;
        let mut scale = 1.0f64;
        for i in 0..8 {
            scale /= 256.0;
            v += f64::from(k.get(common + i).copied().unwrap_or(0)) * scale;
        }
        v
    };
    let (l, h, p) = (number(lo), number(hi), number(x));
    if h <= l {
        0.5
    } else {
        ((p - l) / (h - l)).clamp(0.0, 1.0)
    }
}

/// The range `i` of `cuts.len() + 1`: `[lo, hi)`, `None` for an open end.
pub(crate) fn range_of(cuts: &[Vec<u8>], i: usize) -> (Option<&[u8]>, Option<&[u8]>) {
    let lo = i
        .checked_sub(1)
        .and_then(|j| cuts.get(j))
        .map(Vec::as_slice);
    let hi = cuts.get(i).map(Vec::as_slice);
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys as big-endian numbers, which the byte estimate reads exactly.
    fn key(i: u32) -> Vec<u8> {
        let mut k = b"k".to_vec();
        k.extend_from_slice(&i.to_be_bytes());
        k
    }

    /// The range a user key falls in.
    fn range_index(cuts: &[Vec<u8>], k: &[u8]) -> usize {
        cuts.partition_point(|c| c.as_slice() <= k)
    }

    /// Checks the properties every split must have: cuts strictly
    /// increasing, inside the inputs' span (no empty first or last range),
    /// each of the form `largest ++ [0]` of some input, so that no table's
    /// largest key lands in the range above.
    fn check(tables: &[Span<'_>], cuts: &[Vec<u8>]) {
        for w in cuts.windows(2) {
            assert!(w[0] < w[1], "cuts not increasing: {cuts:?}");
        }
        let lo = tables.iter().map(|t| t.smallest).min().expect("tables");
        let hi = tables.iter().map(|t| t.largest).max().expect("tables");
        for c in cuts {
            assert!(
                c.as_slice() > lo && c.as_slice() <= hi,
                "cut {c:?} outside the inputs"
            );
            let (last, body) = c.split_last().expect("non-empty cut");
            assert_eq!(*last, 0, "a cut is a successor");
            assert!(
                tables.iter().any(|t| t.largest == body),
                "cut {c:?} is no table's end"
            );
        }
        // Every version of a user key is in one range: a key and every key
        // equal to it fall in the same range (trivially), and a table's
        // largest key stays below the cut made from it.
        for t in tables {
            let r = range_index(cuts, t.largest);
            if let Some(c) = cuts.get(r) {
                assert!(t.largest < c.as_slice());
            }
        }
    }

    #[test]
    fn small_compactions_are_not_split() {
        let (a, b) = (key(0), key(9));
        let t = [Span {
            smallest: &a,
            largest: &b,
            size: 1000,
        }];
        assert!(split_points(&t, 4, 1000).is_empty(), "one range's worth");
        assert!(split_points(&t, 1, 10).is_empty(), "one range allowed");
        assert!(split_points(&[], 4, 10).is_empty());
        // One table: no cut below its largest key exists.
        assert!(split_points(&t, 4, 10).is_empty());
    }

    #[test]
    fn disjoint_equal_tables_split_evenly() {
        let keys: Vec<(Vec<u8>, Vec<u8>)> =
            (0..8).map(|i| (key(i * 10), key(i * 10 + 9))).collect();
        let tables: Vec<Span<'_>> = keys
            .iter()
            .map(|(s, l)| Span {
                smallest: s,
                largest: l,
                size: 100,
            })
            .collect();
        for ranges in [2usize, 4, 8] {
            let cuts = split_points(&tables, ranges, 1);
            check(&tables, &cuts);
            assert_eq!(cuts.len(), ranges - 1, "{ranges} ranges");
            let mut bytes = vec![0u64; ranges];
            for t in &tables {
                bytes[range_index(&cuts, t.smallest)] += t.size;
                assert_eq!(
                    range_index(&cuts, t.smallest),
                    range_index(&cuts, t.largest),
                    "a table split although its own end is a candidate"
                );
            }
            assert!(
                bytes.iter().all(|&b| b == 800 / ranges as u64),
                "{ranges}: {bytes:?}"
            );
        }
        // The byte floor limits the ranges: 800 bytes, 300 a range.
        assert_eq!(split_points(&tables, 8, 300).len(), 1);
    }

    #[test]
    fn l0_over_base_splits_by_estimated_bytes() {
        // Four L0 tables each spanning the whole key space over eight base
        // tables: half the bytes are L0's, spread evenly, so the cuts still
        // fall at the quarter points of the base level.
        let base: Vec<(Vec<u8>, Vec<u8>)> = (0..8)
            .map(|i| (key(i * 1000), key(i * 1000 + 999)))
            .collect();
        let (lo, hi) = (key(0), key(7999));
        let mut tables: Vec<Span<'_>> = base
            .iter()
            .map(|(s, l)| Span {
                smallest: s,
                largest: l,
                size: 100,
            })
            .collect();
        for _ in 0..4 {
            tables.push(Span {
                smallest: &lo,
                largest: &hi,
                size: 200,
            });
        }
        let cuts = split_points(&tables, 4, 1);
        check(&tables, &cuts);
        assert_eq!(
            cuts,
            vec![
                successor(&key(1999)),
                successor(&key(3999)),
                successor(&key(5999))
            ]
        );
    }

    #[test]
    fn fewer_candidates_than_ranges_still_cut_where_they_can() {
        // Two L0 tables over the whole span and one base table below: a
        // single candidate, taken although four ranges were allowed.
        let (lo, hi, mid) = (key(0), key(100), key(40));
        let tables = [
            Span {
                smallest: &lo,
                largest: &hi,
                size: 1000,
            },
            Span {
                smallest: &lo,
                largest: &hi,
                size: 1000,
            },
            Span {
                smallest: &lo,
                largest: &mid,
                size: 1000,
            },
            Span {
                smallest: &mid,
                largest: &hi,
                size: 1000,
            },
        ];
        let cuts = split_points(&tables, 4, 100);
        check(&tables, &cuts);
        assert_eq!(cuts, vec![successor(&mid)]);
    }

    #[test]
    fn skewed_sizes_move_the_cut() {
        // One big table at the start: the cut goes right after it.
        let k: Vec<(Vec<u8>, Vec<u8>)> = (0..5).map(|i| (key(i * 10), key(i * 10 + 9))).collect();
        let sizes = [1000, 10, 10, 10, 10];
        let tables: Vec<Span<'_>> = k
            .iter()
            .zip(sizes)
            .map(|((s, l), size)| Span {
                smallest: s,
                largest: l,
                size,
            })
            .collect();
        let cuts = split_points(&tables, 2, 1);
        check(&tables, &cuts);
        assert_eq!(cuts, vec![successor(&key(9))]);
    }

    #[test]
    fn overlapping_tables_and_shared_ends_give_valid_cuts() {
        // Random-ish overlapping spans, some ending at the same key: the
        // properties hold for every count of ranges.
        let mut seed = 7u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..200 {
            let n = 1 + next() % 12;
            let spans: Vec<(Vec<u8>, Vec<u8>, u64)> = (0..n)
                .map(|_| {
                    let a = (next() % 50) as u32;
                    let b = a + (next() % 20) as u32;
                    (key(a), key(b), 1 + next() % 500)
                })
                .collect();
            let tables: Vec<Span<'_>> = spans
                .iter()
                .map(|(s, l, size)| Span {
                    smallest: s,
                    largest: l,
                    size: *size,
                })
                .collect();
            for ranges in 1..6 {
                let cuts = split_points(&tables, ranges, 1);
                check(&tables, &cuts);
                assert!(cuts.len() < ranges.max(1));
            }
        }
    }

    #[test]
    fn ranges_are_half_open_and_cover_everything() {
        let cuts = vec![b"b\0".to_vec(), b"d\0".to_vec()];
        assert_eq!(range_of(&cuts, 0), (None, Some(&b"b\0"[..])));
        assert_eq!(range_of(&cuts, 1), (Some(&b"b\0"[..]), Some(&b"d\0"[..])));
        assert_eq!(range_of(&cuts, 2), (Some(&b"d\0"[..]), None));
        assert_eq!(range_of(&[], 0), (None, None));
        // "b" itself is below its successor: in range 0; "b\0" in range 1.
        assert_eq!(range_index(&cuts, b"b"), 0);
        assert_eq!(range_index(&cuts, b"b\0"), 1);
    }
}
