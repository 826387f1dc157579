//! Versions: the set of tables per level, the edits that change it, and the
//! manifest that records those edits.
//!
//! A [`Version`] is immutable; a change (flush, compaction) builds a new one by
//! applying a [`VersionEdit`] and installs it. Readers hold an `Arc<Version>` for
//! as long as they read, so tables they use are never deleted under them: a table
//! file is deleted only when the last [`FileMeta`] reference drops after it was
//! marked obsolete (see [`ObsoleteFiles`]).
//!
//! # Concurrency
//!
//! `Version` and `FileMeta` are immutable and shared. Edits are applied one at
//! a time; the manifest is appended and synced without the database's state
//! lock (see [`set`]).

mod edit;
pub(crate) mod manifest;
pub(crate) mod set;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;

pub(crate) use crate::metrics::LifetimeStats;
pub(crate) use edit::{TableMeta, VersionEdit};

use crate::format::NUM_LEVELS;
use crate::format::{compare_bytes, compare_internal};
use crate::table::TableReader;

/// Table file numbers whose last reference dropped after they left the version;
/// a background thread deletes their files.
#[derive(Default)]
pub(crate) struct ObsoleteFiles {
    numbers: Mutex<Vec<u64>>,
    /// Called after a number is recorded: wakes the thread that deletes.
    waker: std::sync::OnceLock<Box<dyn Fn() + Send + Sync>>,
}

impl ObsoleteFiles {
    /// Sets what to call when a number is recorded (once; later calls are
    /// ignored). It may run on any thread, with any lock held, so it must
    /// only signal (a condition variable's `notify`), never lock.
    pub(crate) fn set_waker(&self, wake: Box<dyn Fn() + Send + Sync>) {
        let _ = self.waker.set(wake);
    }

    /// Takes every pending number.
    pub(crate) fn take(&self) -> Vec<u64> {
        std::mem::take(&mut *self.numbers.lock())
    }

    /// True if some numbers wait for deletion.
    pub(crate) fn has_pending(&self) -> bool {
        !self.numbers.lock().is_empty()
    }
}

/// The table file behind one or more [`FileMeta`]s: a table moved to another
/// level (a trivial move) gets a new `FileMeta` sharing its predecessor's
/// `TableFile`, so the file is deleted only after every version that places it
/// in any level is gone.
struct TableFile {
    number: u64,
    obsolete: AtomicBool,
    sink: Weak<ObsoleteFiles>,
    /// The table's open reader, when the table cache holds it here rather
    /// than in its LRU list (see `TableCache`).
    reader: OnceLock<HeldReader>,
}

/// An open table reader kept with its table's metadata, counted as one open
/// file (in `count`) for as long as it lives.
pub(crate) struct HeldReader {
    reader: Arc<TableReader>,
    count: Arc<AtomicUsize>,
}

impl HeldReader {
    /// Holds `reader`, which the caller has already counted in `count`.
    pub(crate) fn new(reader: Arc<TableReader>, count: Arc<AtomicUsize>) -> HeldReader {
        HeldReader { reader, count }
    }
}

impl Drop for HeldReader {
    fn drop(&mut self) {
        self.count.fetch_sub(1, AtomicOrdering::AcqRel);
    }
}

impl Drop for TableFile {
    fn drop(&mut self) {
        // Close the file before its number can reach the deleting thread.
        drop(self.reader.take());
        // Only records the number; the file is deleted by a background thread.
        if self.obsolete.load(AtomicOrdering::Acquire) {
            if let Some(sink) = self.sink.upgrade() {
                sink.numbers.lock().push(self.number);
                if let Some(wake) = sink.waker.get() {
                    wake();
                }
            }
        }
    }
}

/// One table in a version (its placement in a level): what the database
/// records of it ([`TableMeta`], through `Deref`) and its file.
pub(crate) struct FileMeta {
    pub meta: TableMeta,
    file: Arc<TableFile>,
}

impl std::ops::Deref for FileMeta {
    type Target = TableMeta;
    fn deref(&self) -> &TableMeta {
        &self.meta
    }
}

impl FileMeta {
    pub(crate) fn new(f: &TableMeta, sink: &Arc<ObsoleteFiles>) -> FileMeta {
        let file = Arc::new(TableFile {
            number: f.number,
            obsolete: AtomicBool::new(false),
            sink: Arc::downgrade(sink),
            reader: OnceLock::new(),
        });
        FileMeta::placed(f, file)
    }

    fn placed(f: &TableMeta, file: Arc<TableFile>) -> FileMeta {
        FileMeta {
            meta: f.clone(),
            file,
        }
    }

    /// The table's reader, if the table cache holds it with the metadata.
    pub(crate) fn held_reader(&self) -> Option<&Arc<TableReader>> {
        self.file.reader.get().map(|h| &h.reader)
    }

    /// Keeps `held` with the metadata (shared by every placement of the
    /// table). If a reader is already held, `held` is dropped (releasing its
    /// count) and the one held is returned.
    pub(crate) fn hold_reader(&self, held: HeldReader) -> &Arc<TableReader> {
        &self.file.reader.get_or_init(|| held).reader
    }

    /// Marks the file for deletion once no version or iterator references it.
    pub(crate) fn mark_obsolete(&self) {
        self.file.obsolete.store(true, AtomicOrdering::Release);
    }

    /// True if `user_key` is within the file's key range.
    pub(crate) fn contains(&self, user_key: &[u8]) -> bool {
        compare_bytes(self.smallest.user_key(), user_key).is_le()
            && compare_bytes(user_key, self.largest.user_key()).is_le()
    }
}

/// The tables of every level at one point in time.
///
/// L0 tables may overlap and are ordered newest first (by largest sequence
/// number). Tables of L1 and deeper do not overlap and are ordered by key.
#[derive(Clone, Default)]
pub(crate) struct Version {
    pub levels: [Vec<Arc<FileMeta>>; NUM_LEVELS],
}

impl Version {
    /// The version after `edit`; files the edit deletes are marked obsolete.
    ///
    /// An edit that does not fit this version is refused with the reason,
    /// and nothing is marked: a deletion of a table the level does not hold,
    /// an addition at a level that does not exist or of a table the version
    /// already holds, or a result whose tables of a level below L0 overlap
    /// or have an inverted key range. Replaying a manifest makes that a
    /// `Corruption` of the manifest; for an edit the engine built, a bug.
    pub(crate) fn apply(
        &self,
        edit: &VersionEdit,
        sink: &Arc<ObsoleteFiles>,
    ) -> Result<Version, String> {
        let mut next = self.clone();
        let mut removed: Vec<Arc<FileMeta>> = Vec::new();
        for &(level, number) in &edit.deleted {
            let files = next.levels.get_mut(level).ok_or_else(|| {
                format!("deletes table {number} at level {level}, which does not exist")
            })?;
            let Some(pos) = files.iter().position(|f| f.number == number) else {
                let held = match next.all_files().find(|(_, f)| f.number == number) {
                    Some((at, _)) => format!("L{at} does"),
                    None => "no level does".to_string(),
                };
                return Err(format!(
                    "deletes table {number}, which L{level} does not hold ({held})"
                ));
            };
            removed.push(files.remove(pos));
        }
        // Where each table lives, to refuse a second placement (one pass:
        // a manifest's snapshot edit adds thousands of tables at once).
        let mut placed: std::collections::HashMap<u64, usize> =
            next.all_files().map(|(l, g)| (g.number, l)).collect();
        for (level, f) in &edit.added {
            if let Some(at) = placed.insert(f.number, *level) {
                return Err(format!(
                    "adds table {} to L{level}, but L{at} already holds it",
                    f.number
                ));
            }
            let files = next.levels.get_mut(*level).ok_or_else(|| {
                format!(
                    "adds table {} at level {level}, which does not exist",
                    f.number
                )
            })?;
            // A table moved from another level keeps its file identity.
            let meta = match removed.iter().position(|r| r.number == f.number) {
                Some(i) => FileMeta::placed(f, removed.swap_remove(i).file.clone()),
                None => FileMeta::new(f, sink),
            };
            files.push(Arc::new(meta));
        }
        for (level, files) in next.levels.iter_mut().enumerate() {
            if level == 0 {
                files.sort_by(|a, b| {
                    b.largest_seqno
                        .cmp(&a.largest_seqno)
                        .then(b.number.cmp(&a.number))
                });
            } else {
                files.sort_by(|a, b| compare_internal(a.smallest.encoded(), b.smallest.encoded()));
            }
        }
        next.check_shape()?;
        for f in removed {
            f.mark_obsolete();
        }
        Ok(next)
    }

    /// The shape every version keeps: each table's smallest key at most its
    /// largest, and the tables of each level below L0 disjoint in user keys
    /// (in key order, as `apply` sorts them).
    fn check_shape(&self) -> Result<(), String> {
        for (level, files) in self.levels.iter().enumerate() {
            for f in files {
                if compare_internal(f.smallest.encoded(), f.largest.encoded()).is_gt() {
                    return Err(format!(
                        "table {} has smallest key {} after its largest {}",
                        f.number, f.smallest, f.largest
                    ));
                }
            }
            if level > 0 {
                for w in files.windows(2) {
                    if compare_bytes(w[0].largest.user_key(), w[1].smallest.user_key()).is_ge() {
                        return Err(format!(
                            "L{level} tables {} and {} overlap",
                            w[0].number, w[1].number
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Tables of `level` that may hold `user_key`, in the order a Get must try
    /// them (newest first in L0; at most one elsewhere).
    pub(crate) fn candidates<'a>(
        &'a self,
        level: usize,
        user_key: &'a [u8],
    ) -> impl Iterator<Item = &'a Arc<FileMeta>> + 'a {
        let files = &self.levels[level];
        let range = if level == 0 {
            0..files.len()
        } else {
            // First file whose largest user key >= user_key.
            let i =
                files.partition_point(|f| compare_bytes(f.largest.user_key(), user_key).is_lt());
            i..(i + 1).min(files.len())
        };
        files[range].iter().filter(move |f| f.contains(user_key))
    }

    /// Every file with its level.
    pub(crate) fn all_files(&self) -> impl Iterator<Item = (usize, &Arc<FileMeta>)> {
        self.levels
            .iter()
            .enumerate()
            .flat_map(|(l, fs)| fs.iter().map(move |f| (l, f)))
    }

    /// An edit that recreates this version from nothing (a manifest snapshot).
    pub(crate) fn snapshot_edit(&self) -> VersionEdit {
        let mut edit = VersionEdit::default();
        for (level, f) in self.all_files() {
            edit.added.push((level, f.meta.clone()));
        }
        edit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{InternalKey, ValueKind};

    fn nf(number: u64, lo: &[u8], hi: &[u8], seq: u64) -> TableMeta {
        TableMeta {
            number,
            size: 100,
            smallest: InternalKey::new(lo, seq, ValueKind::Value),
            largest: InternalKey::new(hi, seq, ValueKind::Value),
            smallest_seqno: seq,
            largest_seqno: seq,
            num_entries: 1,
            range_deletions: 0,
        }
    }

    #[test]
    fn apply_orders_levels_and_finds_candidates() {
        let sink = Arc::new(ObsoleteFiles::default());
        let mut edit = VersionEdit::default();
        edit.added.push((0, nf(1, b"a", b"m", 5)));
        edit.added.push((0, nf(2, b"c", b"z", 9)));
        edit.added.push((6, nf(3, b"n", b"r", 1)));
        edit.added.push((6, nf(4, b"a", b"f", 1)));
        let v = Version::default().apply(&edit, &sink).expect("fits");
        let l0: Vec<u64> = v.candidates(0, b"d").map(|f| f.number).collect();
        assert_eq!(l0, vec![2, 1], "newest L0 table first");
        let l6: Vec<u64> = v.candidates(6, b"p").map(|f| f.number).collect();
        assert_eq!(l6, vec![3]);
        assert_eq!(v.candidates(6, b"g").count(), 0, "gap between files");
        assert_eq!(v.candidates(6, b"zz").count(), 0);
    }

    #[test]
    fn deleted_files_become_obsolete_when_unreferenced() {
        let sink = Arc::new(ObsoleteFiles::default());
        let mut add = VersionEdit::default();
        add.added.push((0, nf(7, b"a", b"b", 1)));
        let v1 = Version::default().apply(&add, &sink).expect("fits");
        let mut del = VersionEdit::default();
        del.deleted.push((0, 7));
        let v2 = v1.apply(&del, &sink).expect("fits");
        assert!(v2.levels[0].is_empty());
        assert!(sink.take().is_empty(), "v1 still references the file");
        drop(v1);
        assert_eq!(sink.take(), vec![7]);
    }

    #[test]
    fn a_moved_table_lives_until_every_placement_is_gone() {
        let sink = Arc::new(ObsoleteFiles::default());
        let mut add = VersionEdit::default();
        add.added.push((4, nf(9, b"a", b"b", 1)));
        let v1 = Version::default().apply(&add, &sink).expect("fits");
        // Trivial move L4 -> L5.
        let mut mv = VersionEdit::default();
        mv.deleted.push((4, 9));
        mv.added.push((5, nf(9, b"a", b"b", 1)));
        let v2 = v1.apply(&mv, &sink).expect("fits");
        assert_eq!(v2.levels[5].len(), 1);
        // Then compacted away.
        let mut del = VersionEdit::default();
        del.deleted.push((5, 9));
        let v3 = v2.apply(&del, &sink).expect("fits");
        drop(v2);
        assert!(v3.levels[5].is_empty());
        assert!(
            sink.take().is_empty(),
            "a reader of v1 still finds the table in L4"
        );
        drop(v1);
        assert_eq!(sink.take(), vec![9]);
    }

    #[test]
    fn edits_that_do_not_fit_are_refused_and_mark_nothing() {
        let sink = Arc::new(ObsoleteFiles::default());
        let mut add = VersionEdit::default();
        add.added.push((0, nf(1, b"a", b"c", 5)));
        add.added.push((6, nf(2, b"d", b"f", 1)));
        add.added.push((6, nf(3, b"k", b"m", 1)));
        let v = Version::default().apply(&add, &sink).expect("fits");
        let refused = |edit: VersionEdit| v.apply(&edit, &sink).err().expect("refused");
        let cases: Vec<(VersionEdit, &str)> = vec![
            (
                VersionEdit {
                    deleted: vec![(6, 1)],
                    ..VersionEdit::default()
                },
                "deletes table 1, which L6 does not hold",
            ),
            (
                VersionEdit {
                    deleted: vec![(0, 9)],
                    ..VersionEdit::default()
                },
                "deletes table 9, which L0 does not hold",
            ),
            (
                VersionEdit {
                    deleted: vec![(7, 1)],
                    ..VersionEdit::default()
                },
                "level 7, which does not exist",
            ),
            (
                VersionEdit {
                    added: vec![(9, nf(4, b"x", b"y", 1))],
                    ..VersionEdit::default()
                },
                "adds table 4 at level 9, which does not exist",
            ),
            (
                VersionEdit {
                    added: vec![(5, nf(2, b"d", b"f", 1))],
                    ..VersionEdit::default()
                },
                "adds table 2 to L5, but L6 already holds it",
            ),
            (
                VersionEdit {
                    added: vec![(6, nf(4, b"e", b"h", 1))],
                    ..VersionEdit::default()
                },
                "L6 tables 2 and 4 overlap",
            ),
            (
                VersionEdit {
                    added: vec![(6, nf(4, b"f", b"g", 1))],
                    ..VersionEdit::default()
                },
                "L6 tables 2 and 4 overlap",
            ),
            (
                VersionEdit {
                    added: vec![(6, nf(4, b"y", b"x", 1))],
                    ..VersionEdit::default()
                },
                "table 4 has smallest key",
            ),
            (
                // The deletion fits; the addition after it does not.
                VersionEdit {
                    deleted: vec![(6, 3)],
                    added: vec![(4, nf(1, b"a", b"c", 5))],
                    ..VersionEdit::default()
                },
                "adds table 1 to L4, but L0 already holds it",
            ),
        ];
        for (edit, want) in cases {
            let reason = refused(edit);
            assert!(reason.contains(want), "{reason:?} should say {want:?}");
        }
        drop(v);
        // Nothing the refused edits deleted was marked obsolete: only the
        // numbers of tables marked reach the sink when the version goes.
        assert!(sink.take().is_empty());
    }
}
