//! The quarantine of a repair: the rule that keeps an older version of a key
//! from becoming its visible value when its newer version (or deletion) was
//! in a data block or log record that was lost.
//!
//! What a lost piece may have held is bounded, and every entry the repair
//! would keep, from any table or log, is checked against those bounds:
//!
//! - **A lost range of a table's data blocks** held entries whose internal
//!   keys lie strictly between the last key of the block before it and the
//!   first key of the block after it (or from the table's smallest key, to
//!   its largest, when the range is at an end and the properties read;
//!   unbounded when they do not), with sequence numbers at most the table's
//!   largest (unknown without the properties: any). An entry elsewhere is
//!   *at risk* if a lost entry could be a newer version of the same user
//!   key: same user key inside that range and a sequence number below the
//!   largest a lost entry of that user key could have. At the bounds' own
//!   user keys only the versions past the bound can be lost, so the table's
//!   surviving entries are at risk only where one user key's versions
//!   continue past the lost range: where the index shows that the block
//!   after the range starts a new user key, no version of that key is at
//!   risk; where it cannot tell (a quantized locator code that collides),
//!   that key's surviving versions are quarantined. When the table's filter reads, a user key
//!   it excludes was in no block of the table and is not at risk.
//! - **A lost log record** named the keys its bytes parse to (see
//!   `wal::salvage`: a repaired payload names them exactly, the payload as
//!   found may have one damaged byte in a key) and had sequence numbers below
//!   the next intact record's. An entry is at risk if its user key is one of
//!   those, or (for keys read from unrepaired bytes) differs from one in
//!   exactly one byte, and its sequence number is below that bound.
//!
//! An entry at risk is quarantined: not restored, counted, and its key listed
//! if it would otherwise have been the key's visible value. An entry newer
//! than every lost one it could be confused with stays. So a quarantined key
//! reads as absent, never as a value older than one that was lost.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use crate::format::{parse_internal_key, SeqNo, ValueKind};
use crate::table::salvage::{KeyBound, SalvageFilter};

/// What the quarantine says of an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Verdict {
    /// No lost piece can have held its user key.
    Clear,
    /// A lost piece may have held its user key, but only older versions.
    Named,
    /// A lost piece may have held a newer version of it: not restored.
    Quarantined,
}

/// One lost range of a table, as bounds on user keys and sequence numbers.
#[derive(Debug)]
struct TableGap {
    /// Lowest user key, and the largest sequence number a lost entry of that
    /// user key can have (`None`: none can).
    lo: Option<(Vec<u8>, Option<SeqNo>)>,
    /// Highest user key, and the smallest sequence number a lost entry of
    /// that user key can have (`None`: none can).
    hi: Option<(Vec<u8>, Option<SeqNo>)>,
    /// The largest sequence number of any lost entry.
    max_seq: SeqNo,
    filter: Option<Arc<SalvageFilter>>,
}

impl TableGap {
    fn verdict(&self, user_key: &[u8], seq: SeqNo) -> Verdict {
        let mut max = self.max_seq;
        if let Some((lo, cap)) = &self.lo {
            match user_key.cmp(lo.as_slice()) {
                std::cmp::Ordering::Less => return Verdict::Clear,
                std::cmp::Ordering::Equal => match cap {
                    Some(c) => max = max.min(*c),
                    None => return Verdict::Clear,
                },
                std::cmp::Ordering::Greater => {}
            }
        }
        let mut min = 0;
        if let Some((hi, floor)) = &self.hi {
            match user_key.cmp(hi.as_slice()) {
                std::cmp::Ordering::Greater => return Verdict::Clear,
                std::cmp::Ordering::Equal => match floor {
                    Some(f) => min = *f,
                    None => return Verdict::Clear,
                },
                std::cmp::Ordering::Less => {}
            }
        }
        if min > max
            || self
                .filter
                .as_ref()
                .is_some_and(|f| !f.may_contain(user_key))
        {
            return Verdict::Clear;
        }
        if seq < max {
            Verdict::Quarantined
        } else {
            Verdict::Named
        }
    }
}

/// Multiplier of the rolling hash over key bytes.
const HASH_BASE: u64 = 0x100_0000_01b3;

/// The hash of `key` with the byte at `pos` taken out, from the full hash.
fn hash_without(full: u64, key: &[u8], pos: usize, powers: &[u64]) -> u64 {
    let b = key.get(pos).copied().unwrap_or(0);
    let p = powers.get(pos).copied().unwrap_or(0);
    full.wrapping_sub(u64::from(b).wrapping_mul(p))
}

fn rolling_hash(key: &[u8], powers: &[u64]) -> u64 {
    key.iter().zip(powers).fold(0u64, |h, (&b, &p)| {
        h.wrapping_add(u64::from(b).wrapping_mul(p))
    })
}

/// The quarantine of one repair, and its tally.
#[derive(Debug, Default)]
pub(crate) struct Quarantine {
    /// Sorted by lowest user key (unbounded first).
    gaps: Vec<TableGap>,
    /// For `gaps[..=i]`, the highest of their highest user keys (`None`:
    /// unbounded).
    reach: Vec<Option<Vec<u8>>>,
    /// Keys named exactly by lost records, with the bound below which their
    /// versions are at risk.
    exact: HashMap<Vec<u8>, SeqNo>,
    /// Keys read from unrepaired bytes (one byte may be wrong), with bounds.
    fuzzy: Vec<(Vec<u8>, SeqNo)>,
    /// `(length, position, hash without that position)` of each fuzzy key.
    fuzzy_index: HashMap<(usize, usize, u64), Vec<usize>>,
    fuzzy_lens: HashSet<usize>,
    powers: Vec<u64>,
    /// Entries quarantined.
    entries: u64,
    /// Per user key, the newest entry quarantined.
    removed: BTreeMap<Vec<u8>, (SeqNo, ValueKind)>,
    /// Per user key that some lost piece names, the newest entry kept.
    kept: HashMap<Vec<u8>, SeqNo>,
}

/// How a bound treats the versions of its own user key.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Edge {
    Included,
    Excluded,
    /// No version of the user key is inside.
    WholeUserKey,
}

/// The user key and sequence number of an encoded internal key bound.
fn split_bound(b: &KeyBound) -> Option<(Vec<u8>, SeqNo, Edge)> {
    let (k, edge) = match b {
        KeyBound::Unbounded => return None,
        KeyBound::Included(k) => (k, Edge::Included),
        KeyBound::Excluded(k) => (k, Edge::Excluded),
        KeyBound::BeforeUserKey(k) => (k, Edge::WholeUserKey),
    };
    let ik = parse_internal_key(k)?;
    Some((ik.user_key.to_vec(), ik.seq, edge))
}

impl Quarantine {
    /// True if nothing was lost that could hide a newer version.
    pub(crate) fn is_empty(&self) -> bool {
        self.gaps.is_empty() && self.exact.is_empty() && self.fuzzy.is_empty()
    }

    /// Adds a lost range of a table whose entries sort after `after` and
    /// before `before`, in a table whose sequence numbers are at most
    /// `largest_seqno` (`None`: unknown), whose filter (if it reads) is
    /// `filter`.
    pub(crate) fn add_table_range(
        &mut self,
        after: &KeyBound,
        before: &KeyBound,
        largest_seqno: Option<SeqNo>,
        filter: Option<Arc<SalvageFilter>>,
    ) {
        let lo = split_bound(after).map(|(k, s, edge)| {
            let cap = match edge {
                Edge::Included => Some(s),
                Edge::Excluded => s.checked_sub(1),
                Edge::WholeUserKey => None,
            };
            (k, cap)
        });
        let hi = split_bound(before).map(|(k, s, edge)| {
            let floor = match edge {
                Edge::Included => Some(s),
                Edge::Excluded => s.checked_add(1),
                Edge::WholeUserKey => None,
            };
            (k, floor)
        });
        self.gaps.push(TableGap {
            lo,
            hi,
            max_seq: largest_seqno.unwrap_or(SeqNo::MAX),
            filter,
        });
        self.gaps.sort_by(|a, b| {
            a.lo.as_ref()
                .map(|l| &l.0)
                .cmp(&b.lo.as_ref().map(|l| &l.0))
        });
        let mut reach: Vec<Option<Vec<u8>>> = Vec::with_capacity(self.gaps.len());
        let mut top: Option<Option<Vec<u8>>> = None;
        for g in &self.gaps {
            let hi = g.hi.as_ref().map(|h| h.0.clone());
            top = Some(match (top, hi) {
                (None, h) => h,
                (Some(None), _) | (_, None) => None,
                (Some(Some(a)), Some(b)) => Some(a.max(b)),
            });
            reach.push(top.clone().flatten());
        }
        self.reach = reach;
    }

    /// Adds the keys a lost log record named, at risk below `bound`: `exact`
    /// ones as they are, `fuzzy` ones (from unrepaired bytes) with every key
    /// one byte away.
    pub(crate) fn add_log_keys(&mut self, exact: &[Vec<u8>], fuzzy: &[Vec<u8>], bound: SeqNo) {
        for k in exact {
            let b = self.exact.entry(k.clone()).or_insert(bound);
            *b = (*b).max(bound);
        }
        for k in fuzzy {
            while self.powers.len() < k.len() {
                let next = self.powers.last().map_or(1, |p| p.wrapping_mul(HASH_BASE));
                self.powers.push(next);
            }
            let i = self.fuzzy.len();
            self.fuzzy.push((k.clone(), bound));
            self.fuzzy_lens.insert(k.len());
            let full = rolling_hash(k, &self.powers);
            for pos in 0..k.len() {
                let h = hash_without(full, k, pos, &self.powers);
                self.fuzzy_index
                    .entry((k.len(), pos, h))
                    .or_default()
                    .push(i);
            }
        }
    }

    /// True if a table whose user keys lie in `smallest..=largest` may hold
    /// an entry some lost piece names.
    pub(crate) fn may_touch(&self, smallest: &[u8], largest: &[u8]) -> bool {
        if !self.exact.is_empty() || !self.fuzzy.is_empty() {
            return true;
        }
        self.gaps.iter().any(|g| {
            g.lo.as_ref().is_none_or(|(lo, _)| lo.as_slice() <= largest)
                && g.hi
                    .as_ref()
                    .is_none_or(|(hi, _)| hi.as_slice() >= smallest)
        })
    }

    /// What the quarantine says of the entry `(user_key, seq)`.
    pub(crate) fn verdict(&self, user_key: &[u8], seq: SeqNo) -> Verdict {
        let mut v = Verdict::Clear;
        // Gaps whose lowest key is at most `user_key`, back while one of them
        // may still reach it.
        let n = self.gaps.partition_point(|g| {
            g.lo.as_ref()
                .is_none_or(|(lo, _)| lo.as_slice() <= user_key)
        });
        for i in (0..n).rev() {
            if self
                .reach
                .get(i)
                .is_some_and(|r| r.as_ref().is_some_and(|r| r.as_slice() < user_key))
            {
                break;
            }
            if let Some(g) = self.gaps.get(i) {
                v = v.max(g.verdict(user_key, seq));
            }
        }
        let by_bound = |bound: SeqNo| {
            if seq < bound {
                Verdict::Quarantined
            } else {
                Verdict::Named
            }
        };
        if let Some(&b) = self.exact.get(user_key) {
            v = v.max(by_bound(b));
        }
        if self.fuzzy_lens.contains(&user_key.len()) {
            let full = rolling_hash(user_key, &self.powers);
            for pos in 0..user_key.len() {
                let h = hash_without(full, user_key, pos, &self.powers);
                for &i in self
                    .fuzzy_index
                    .get(&(user_key.len(), pos, h))
                    .into_iter()
                    .flatten()
                {
                    let Some((k, b)) = self.fuzzy.get(i) else {
                        continue;
                    };
                    let differ = k.iter().zip(user_key).filter(|(a, b)| a != b).count();
                    if differ <= 1 {
                        v = v.max(by_bound(*b));
                    }
                }
            }
        }
        v
    }

    /// True if the entry is to be restored; tallies it.
    pub(crate) fn keep(&mut self, user_key: &[u8], seq: SeqNo, kind: ValueKind) -> bool {
        match self.verdict(user_key, seq) {
            Verdict::Clear => true,
            Verdict::Named => {
                let s = self.kept.entry(user_key.to_vec()).or_insert(seq);
                *s = (*s).max(seq);
                true
            }
            Verdict::Quarantined => {
                self.entries += 1;
                let e = self.removed.entry(user_key.to_vec()).or_insert((seq, kind));
                if seq > e.0 {
                    *e = (seq, kind);
                }
                false
            }
        }
    }

    /// Entries quarantined, and the keys that lost their visible value to it
    /// (the newest entry of the key was a value, and was quarantined).
    pub(crate) fn tally(&self) -> (u64, Vec<Vec<u8>>) {
        let keys = self
            .removed
            .iter()
            .filter(|(k, (seq, kind))| {
                *kind == ValueKind::Value && self.kept.get(*k).is_none_or(|kept| kept < seq)
            })
            .map(|(k, _)| k.clone())
            .collect();
        (self.entries, keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::InternalKey;

    fn ik(k: &[u8], seq: SeqNo) -> Vec<u8> {
        InternalKey::new(k, seq, ValueKind::Value)
            .encoded()
            .to_vec()
    }

    #[test]
    fn a_lost_range_quarantines_older_versions_inside_it() {
        let mut q = Quarantine::default();
        // Lost: entries after (c, 50) and before (f, 40), table seqnos <= 100.
        q.add_table_range(
            &KeyBound::Excluded(ik(b"c", 50)),
            &KeyBound::Excluded(ik(b"f", 40)),
            Some(100),
            None,
        );
        assert_eq!(q.verdict(b"b", 1), Verdict::Clear);
        assert_eq!(q.verdict(b"g", 1), Verdict::Clear);
        assert_eq!(q.verdict(b"d", 99), Verdict::Quarantined);
        assert_eq!(q.verdict(b"d", 100), Verdict::Named);
        assert_eq!(q.verdict(b"d", 500), Verdict::Named);
        // At the lower bound only versions older than (c, 50) were in the gap:
        // (c, 50) itself and newer ones are safe, older ones are not.
        assert_eq!(q.verdict(b"c", 50), Verdict::Named);
        assert_eq!(q.verdict(b"c", 48), Verdict::Quarantined);
        // At the upper bound the lost versions were newer than (f, 40).
        assert_eq!(q.verdict(b"f", 40), Verdict::Quarantined);
        assert_eq!(q.verdict(b"f", 100), Verdict::Named);
        // When the index shows the lost range ends before the next user key,
        // no version of that key is at risk.
        let mut q2 = Quarantine::default();
        q2.add_table_range(
            &KeyBound::Excluded(ik(b"c", 50)),
            &KeyBound::BeforeUserKey(ik(b"f", 40)),
            Some(100),
            None,
        );
        assert_eq!(q2.verdict(b"f", 40), Verdict::Clear);
        assert_eq!(q2.verdict(b"e", 40), Verdict::Quarantined);
        // Unbounded ends and an unknown largest sequence number.
        let mut q = Quarantine::default();
        q.add_table_range(&KeyBound::Unbounded, &KeyBound::Unbounded, None, None);
        assert_eq!(q.verdict(b"anything", 1 << 50), Verdict::Quarantined);
    }

    #[test]
    fn overlapping_ranges_of_several_tables_are_all_checked() {
        let mut q = Quarantine::default();
        q.add_table_range(
            &KeyBound::Excluded(ik(b"a", 5)),
            &KeyBound::Excluded(ik(b"z", 5)),
            Some(10),
            None,
        );
        q.add_table_range(
            &KeyBound::Excluded(ik(b"m", 5)),
            &KeyBound::Excluded(ik(b"n", 5)),
            Some(1000),
            None,
        );
        q.add_table_range(
            &KeyBound::Excluded(ik(b"b", 5)),
            &KeyBound::Excluded(ik(b"c", 5)),
            Some(1000),
            None,
        );
        assert_eq!(q.verdict(b"x", 9), Verdict::Quarantined);
        assert_eq!(q.verdict(b"x", 11), Verdict::Named);
        assert_eq!(q.verdict(b"mm", 500), Verdict::Quarantined);
        assert_eq!(q.verdict(b"bb", 500), Verdict::Quarantined);
        assert_eq!(q.verdict(b"d", 500), Verdict::Named);
    }

    #[test]
    fn log_keys_quarantine_their_neighbours_one_byte_away() {
        let mut q = Quarantine::default();
        q.add_log_keys(&[b"exact-key".to_vec()], &[b"fuzzy-key".to_vec()], 70);
        assert_eq!(q.verdict(b"exact-key", 69), Verdict::Quarantined);
        assert_eq!(q.verdict(b"exact-kez", 69), Verdict::Clear);
        assert_eq!(q.verdict(b"exact-key", 70), Verdict::Named);
        assert_eq!(q.verdict(b"fuzzy-key", 1), Verdict::Quarantined);
        assert_eq!(q.verdict(b"fuzzy-kez", 1), Verdict::Quarantined);
        assert_eq!(q.verdict(b"Fuzzy-key", 1), Verdict::Quarantined);
        assert_eq!(q.verdict(b"Fuzzy-kez", 1), Verdict::Clear);
        assert_eq!(q.verdict(b"fuzzy-ke", 1), Verdict::Clear);
    }

    #[test]
    fn the_tally_lists_keys_whose_visible_value_was_quarantined() {
        let mut q = Quarantine::default();
        q.add_log_keys(&[b"a".to_vec(), b"b".to_vec(), b"c".to_vec()], &[], 50);
        assert!(!q.keep(b"a", 10, ValueKind::Value));
        assert!(q.keep(b"b", 60, ValueKind::Value));
        assert!(!q.keep(b"b", 10, ValueKind::Value));
        assert!(!q.keep(b"c", 20, ValueKind::Delete));
        assert!(!q.keep(b"c", 10, ValueKind::Value));
        assert!(q.keep(b"d", 10, ValueKind::Value));
        let (n, keys) = q.tally();
        assert_eq!(n, 4);
        assert_eq!(keys, vec![b"a".to_vec()]);
    }
}
