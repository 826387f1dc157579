//! Model-based randomized test: random puts, deletes, range deletions (alone
//! and inside batches), batches, gets, scans in both directions, snapshots,
//! flushes, full and sub-range compactions, reopens and simulated crashes
//! against shale and a `BTreeMap`, under several option sets.
//!
//! Range deletions come in every width: empty (`start == end`, which does
//! nothing), one key (`k ++ [0]` as the end), a few keys, hundreds, from the
//! empty key, to past every key, and between keys; a range whose start is above
//! its end must be refused and change nothing. A snapshot keeps seeing the state
//! it was taken in, through gets and bounded scans both ways, whatever flushes
//! and compactions (which drop what range deletions cover) ran since.
//!
//! After a crash, every write acknowledged as durable (a synced write, or any
//! write before a completed flush or close) must be present, and the writes
//! after that must survive as a prefix: the recovered state equals the durable
//! state plus the first `p` later writes, for some `p`.
//!
//! Short by default; `SHALE_LONG_TESTS=1` runs many more steps and seeds.

use shale_testkit as common;

use std::sync::Arc;

use common::{apply, long_tests, scan_all, Model, Op, Rng, Write};
use shale::env::CrashFs;
use shale::{
    Compression, Db, DbIterator, Error, FilterLevels, FilterPolicy, Options, ReadOptions, Snapshot,
    WriteBatch, WriteOptions,
};

/// The `i`-th key of the model's key space (300 keys are written; a larger
/// `i` is a key past all of them).
fn key_at(i: u64) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

/// The smallest key above `k`: as a range's end, the range holds `k` alone.
fn successor(k: &[u8]) -> Vec<u8> {
    let mut s = k.to_vec();
    s.push(0);
    s
}

struct Harness {
    fs: Arc<CrashFs>,
    opts: Options,
    db: Option<Db>,
    model: Model,
    /// State known to survive a crash.
    durable: Model,
    /// Acknowledged writes after `durable`, in order, with their sync flag.
    pending: Vec<(Write, bool)>,
    snapshots: Vec<(Snapshot, Model)>,
    rng: Rng,
    /// Range deletions, the empty key and the steps that go with them are in
    /// the mix (off only to replay a regression found before they existed,
    /// with the same random choices).
    range_dels: bool,
    coverage: Coverage,
}

/// What a run exercised of range deletions, so that a test can check that it
/// reached what it means to test.
#[derive(Clone, Copy, Debug, Default)]
struct Coverage {
    /// Tables seen in L0 holding range deletions (flushed).
    l0_tables: u64,
    /// Tables seen below L0 holding range deletions (compacted).
    deeper_tables: u64,
    /// Tables seen holding range deletions and no entry.
    dels_only_tables: u64,
    /// Key versions compactions dropped because a range deletion covered them.
    dropped_entries: u64,
    /// Range deletions compactions dropped.
    dels_dropped: u64,
    /// Compactions that ran as several subcompactions (key ranges merged
    /// on threads of their own, installed together).
    split_compactions: u64,
}

impl Harness {
    fn new(opts: Options, fs: Arc<CrashFs>, seed: u64, range_dels: bool) -> Harness {
        let db = Db::open("/db", opts.clone()).expect("open");
        Harness {
            fs,
            opts,
            db: Some(db),
            model: Model::new(),
            durable: Model::new(),
            pending: Vec::new(),
            snapshots: Vec::new(),
            rng: Rng::new(seed),
            range_dels,
            coverage: Coverage::default(),
        }
    }

    /// Counts the tables holding range deletions (after a flush or compaction).
    fn note_tables(&mut self) {
        for t in self.db().tables().expect("tables") {
            if t.properties.range_deletions > 0 {
                assert_eq!(t.properties.format_version, 4, "{t:?}");
                if t.level == 0 {
                    self.coverage.l0_tables += 1;
                } else {
                    self.coverage.deeper_tables += 1;
                }
                if t.properties.num_entries == 0 {
                    self.coverage.dels_only_tables += 1;
                }
            }
        }
    }

    /// Adds the counters of the open database (before it goes).
    fn note_metrics(&mut self) {
        let m = self.db().metrics();
        self.coverage.dropped_entries += m.range_del_dropped_entries;
        self.coverage.dels_dropped += m.range_dels_dropped;
        self.coverage.split_compactions += m.split_compactions;
    }

    fn db(&self) -> &Db {
        self.db.as_ref().expect("db is open")
    }

    fn key(&mut self) -> Vec<u8> {
        if self.range_dels && self.rng.chance(0.01) {
            // The empty key is a key like any other, the smallest.
            return Vec::new();
        }
        key_at(self.rng.below(300))
    }

    /// A range `[start, end)` with `start <= end`, of any width (see the
    /// module doc).
    fn range(&mut self) -> (Vec<u8>, Vec<u8>) {
        let i = self.rng.below(300);
        let start = match self.rng.below(12) {
            0 => Vec::new(),
            // A prefix of ten keys, which sorts between two of them.
            1 => format!("key{:03}", i / 10).into_bytes(),
            _ => key_at(i),
        };
        let end = match self.rng.below(12) {
            0 => start.clone(),
            1 => successor(&start),
            2 => vec![0xff],
            3 | 4 => key_at(i + self.rng.below(300)),
            5 => format!("key{:03}", (i + self.rng.below(40)) / 10).into_bytes(),
            _ => key_at(i + 1 + self.rng.below(6)),
        };
        if start <= end {
            (start, end)
        } else {
            (end, start)
        }
    }

    fn value(&mut self) -> Vec<u8> {
        let len = if self.rng.chance(0.05) {
            700
        } else {
            self.rng.below(60) as usize
        };
        self.rng.bytes(len)
    }

    fn mark_durable(&mut self) {
        self.durable = self.model.clone();
        self.pending.clear();
    }

    fn write(&mut self, w: Write, sync: bool) {
        let mut batch = WriteBatch::new();
        for op in &w {
            match op {
                Op::Put(k, v) => batch.put(k, v),
                Op::Delete(k) => batch.delete(k),
                Op::DeleteRange(start, end) => batch.delete_range(start, end),
            }
        }
        self.db()
            .write(batch, &WriteOptions::default().sync(sync))
            .expect("write");
        self.acknowledged(w, sync);
    }

    fn acknowledged(&mut self, w: Write, sync: bool) {
        if w.iter()
            .all(|op| matches!(op, Op::DeleteRange(start, end) if start == end))
        {
            // Only empty ranges: `delete_range` added nothing, and an empty
            // batch is no write at all (not even a sync of the log, so it
            // makes no earlier write durable).
            return;
        }
        apply(&mut self.model, &w);
        if sync {
            self.mark_durable();
        } else {
            self.pending.push((w, sync));
        }
    }

    /// `Db::delete_range` (not synced).
    fn delete_range(&mut self) {
        let (start, end) = self.range();
        self.db()
            .delete_range(&start, &end)
            .unwrap_or_else(|e| panic!("delete_range {start:?}..{end:?}: {e}"));
        self.acknowledged(vec![Op::DeleteRange(start, end)], false);
    }

    /// A batch mixing puts, deletes and range deletions, in any order: a range
    /// deletion hides the batch's earlier ops on its keys, not its later ones.
    fn mixed_batch(&mut self) {
        let n = 1 + self.rng.below(8);
        let mut w = Write::new();
        for _ in 0..n {
            let op = match self.rng.below(10) {
                0..=3 => Op::Put(self.key(), self.value()),
                4 | 5 => Op::Delete(self.key()),
                _ => {
                    let (start, end) = self.range();
                    Op::DeleteRange(start, end)
                }
            };
            w.push(op);
        }
        let sync = self.rng.chance(0.1);
        self.write(w, sync);
    }

    /// A range whose start is above its end is refused, alone or in a batch,
    /// and the batch writes nothing.
    fn bad_range(&mut self) {
        let (mut start, mut end) = self.range();
        if start == end {
            end = successor(&start);
        }
        std::mem::swap(&mut start, &mut end);
        let result = if self.rng.chance(0.5) {
            self.db().delete_range(&start, &end)
        } else {
            let mut batch = WriteBatch::new();
            batch.put(b"bad-range-batch", b"must not be written");
            batch.delete_range(&start, &end);
            self.db().write(batch, &WriteOptions::default())
        };
        match result {
            Err(Error::InvalidArgument(_)) => {}
            other => panic!("range {start:?}..{end:?} (start above end): {other:?}"),
        }
        assert_eq!(
            self.db().get(b"bad-range-batch").expect("get"),
            None,
            "a refused batch wrote something"
        );
    }

    /// `compact_range` over a sub-range (sometimes one key); it flushes first.
    fn compact_sub_range(&mut self) {
        let a = self.key();
        let b = if self.rng.chance(0.2) {
            a.clone()
        } else {
            self.key()
        };
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        self.db()
            .compact_range(Some(&lo), Some(&hi))
            .unwrap_or_else(|e| panic!("compact_range {lo:?}..={hi:?}: {e}"));
        self.mark_durable();
        self.note_tables();
    }

    /// Every key (and the empty key, and keys between) by `multi_get` and by
    /// `get`, in the latest state and in a snapshot.
    fn check_every_key(&mut self) {
        let mut keys: Vec<Vec<u8>> = (0..300).map(key_at).collect();
        keys.push(Vec::new());
        keys.push(b"key012".to_vec());
        keys.push(successor(&key_at(7)));
        let got = self.db().multi_get(&keys).expect("multi_get");
        for (k, v) in keys.iter().zip(got) {
            assert_eq!(v.as_ref(), self.model.get(k), "multi_get {k:?}");
        }
        if !self.snapshots.is_empty() {
            let i = self.rng.below(self.snapshots.len() as u64) as usize;
            let (snap, model) = &self.snapshots[i];
            for k in &keys {
                assert_eq!(
                    snap.get(k).expect("snapshot get").as_ref(),
                    model.get(k),
                    "snapshot get {k:?}"
                );
            }
        }
    }

    fn check_get(&mut self) {
        let k = self.key();
        assert_eq!(
            self.db().get(&k).expect("get"),
            self.model.get(&k).cloned(),
            "get {k:?}"
        );
    }

    /// Read options with a random lower bound, upper bound, both or neither.
    fn random_bounds(&mut self) -> ReadOptions<'static> {
        let a = self.key();
        let b = self.key();
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        ReadOptions::default()
            .lower_bound(self.rng.chance(0.5).then_some(lo))
            .upper_bound(self.rng.chance(0.5).then_some(hi))
    }

    /// An iterator over the latest state (`snap` `None`) or over snapshot
    /// `snap`, and the model of what it must see.
    fn reader(&mut self, snap: Option<usize>, opts: &ReadOptions<'static>) -> (DbIterator, Model) {
        match snap {
            None => (self.db().iter(opts).expect("iter"), self.model.clone()),
            Some(i) => {
                // Through the snapshot, or through the database with the
                // snapshot in the read options.
                let via_options = self.rng.chance(0.5);
                let (s, model) = &self.snapshots[i];
                let it = if via_options {
                    let o = opts.clone().snapshot(Some(s));
                    self.db().iter(&o)
                } else {
                    s.iter(opts)
                };
                (it.expect("snapshot iter"), model.clone())
            }
        }
    }

    fn check_scan(&mut self, snap: Option<usize>) {
        let opts = self.random_bounds();
        let (mut it, model) = self.reader(snap, &opts);
        let start = if self.rng.chance(0.5) {
            let s = self.key();
            it.seek(&s);
            Some(s)
        } else {
            it.seek_to_first();
            None
        };
        let from = match (&start, &opts.lower_bound) {
            (Some(s), Some(l)) => s.max(l).clone(),
            (Some(s), None) => s.clone(),
            (None, Some(l)) => l.clone(),
            (None, None) => Vec::new(),
        };
        let expected: Vec<(Vec<u8>, Vec<u8>)> = model
            .range(from..)
            .take_while(|(k, _)| opts.upper_bound.as_ref().is_none_or(|u| *k < u))
            .take(25)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut got = Vec::new();
        while it.valid() && got.len() < 25 {
            got.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        it.status().expect("scan");
        assert_eq!(
            got, expected,
            "scan from {start:?}, bounds {opts:?}, snapshot {snap:?}"
        );
        // Turning around: prev from where the forward scan stopped.
        if got.len() >= 2 && it.valid() {
            it.prev();
            assert_eq!(
                (it.key().to_vec(), it.value().to_vec()),
                got[got.len() - 1],
                "prev after next, bounds {opts:?}"
            );
        }
    }

    fn check_reverse_scan(&mut self, snap: Option<usize>) {
        let opts = self.random_bounds();
        let (mut it, model) = self.reader(snap, &opts);
        let start = if self.rng.chance(0.5) {
            let s = self.key();
            it.seek_for_prev(&s);
            Some(s)
        } else {
            it.seek_to_last();
            None
        };
        let in_bounds = |k: &Vec<u8>| {
            opts.lower_bound.as_ref().is_none_or(|l| k >= l)
                && opts.upper_bound.as_ref().is_none_or(|u| k < u)
                && start.as_ref().is_none_or(|s| k <= s)
        };
        let expected: Vec<(Vec<u8>, Vec<u8>)> = model
            .iter()
            .rev()
            .filter(|(k, _)| in_bounds(k))
            .take(25)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut got = Vec::new();
        while it.valid() && got.len() < 25 {
            got.push((it.key().to_vec(), it.value().to_vec()));
            it.prev();
        }
        it.status().expect("reverse scan");
        assert_eq!(
            got, expected,
            "reverse scan from {start:?}, bounds {opts:?}, snapshot {snap:?}"
        );
        if got.len() >= 2 && it.valid() {
            it.next();
            assert_eq!(
                (it.key().to_vec(), it.value().to_vec()),
                got[got.len() - 1],
                "next after prev, bounds {opts:?}"
            );
        }
    }

    fn reopen(&mut self) {
        self.note_metrics();
        self.snapshots.clear();
        let db = self.db.take().expect("open");
        db.close().expect("close");
        self.mark_durable();
        self.db = Some(Db::open("/db", self.opts.clone()).expect("reopen"));
        assert_eq!(scan_all(self.db()), self.model, "state after reopen");
    }

    fn crash(&mut self) {
        self.note_metrics();
        self.snapshots.clear();
        if self.rng.chance(0.5) {
            self.fs.crash();
        } else {
            self.fs.crash_with_torn_tails(self.rng.next_u64());
        }
        // The crashed process's threads stop; the file system stays down (every
        // call fails) until the machine "reboots".
        drop(self.db.take());
        self.fs.restart();
        let db = Db::open("/db", self.opts.clone()).expect("open after crash");
        let state = scan_all(&db);
        let mut candidate = self.durable.clone();
        let mut matched = state == candidate;
        for (w, _) in &self.pending {
            if matched {
                break;
            }
            apply(&mut candidate, w);
            matched = state == candidate;
        }
        assert!(
            matched,
            "state after crash is not the durable state plus a prefix of later writes \
             ({} pending writes, {} keys recovered, {} durable keys; against the durable \
             state: {})",
            self.pending.len(),
            state.len(),
            self.durable.len(),
            common::model_diff(&state, &self.durable)
        );
        self.model = state;
        self.mark_durable();
        self.db = Some(db);
    }

    fn step(&mut self) {
        let r = self.rng.below(if self.range_dels { 1130 } else { 1000 });
        match r {
            0..=299 => {
                let (k, v) = (self.key(), self.value());
                let sync = self.rng.chance(0.05);
                self.write(vec![Op::Put(k, v)], sync);
            }
            300..=399 => {
                let k = self.key();
                self.write(vec![Op::Delete(k)], false);
            }
            400..=479 => {
                let n = 1 + self.rng.below(12);
                let mut w = Write::new();
                for _ in 0..n {
                    let k = self.key();
                    let op = if self.rng.chance(0.8) {
                        Op::Put(k, self.value())
                    } else {
                        Op::Delete(k)
                    };
                    w.push(op);
                }
                let sync = self.rng.chance(0.1);
                self.write(w, sync);
            }
            480..=749 => self.check_get(),
            750..=799 => self.check_scan(None),
            800..=849 => self.check_reverse_scan(None),
            850..=889 => {
                if self.snapshots.len() < 3 && self.rng.chance(0.5) {
                    let s = self.db().snapshot();
                    self.snapshots.push((s, self.model.clone()));
                } else if !self.snapshots.is_empty() {
                    let i = self.rng.below(self.snapshots.len() as u64) as usize;
                    let k = self.key();
                    let (snap, model) = &self.snapshots[i];
                    assert_eq!(snap.get(&k).expect("snapshot get"), model.get(&k).cloned());
                    if self.rng.chance(0.3) {
                        assert_eq!(&scan_all(snap), model, "snapshot scan");
                        self.snapshots.remove(i);
                    }
                }
            }
            890..=929 => {
                self.db().flush().expect("flush");
                self.mark_durable();
                if self.range_dels {
                    self.note_tables();
                }
            }
            930..=944 => {
                self.db().compact_all().expect("compact");
                self.mark_durable();
                if self.range_dels {
                    self.note_tables();
                }
            }
            945..=969 => self.reopen(),
            970..=999 => self.crash(),
            // With range deletions only.
            1000..=1029 => self.delete_range(),
            1030..=1054 => self.mixed_batch(),
            1055..=1069 => self.compact_sub_range(),
            1070..=1074 => self.bad_range(),
            1075..=1099 => {
                if self.snapshots.is_empty() {
                    let s = self.db().snapshot();
                    self.snapshots.push((s, self.model.clone()));
                } else {
                    let i = self.rng.below(self.snapshots.len() as u64) as usize;
                    if self.rng.chance(0.5) {
                        self.check_scan(Some(i));
                    } else {
                        self.check_reverse_scan(Some(i));
                    }
                }
            }
            1100..=1119 => self.check_every_key(),
            _ => self.check_held_iterator(),
        }
    }

    /// An iterator keeps the state it was created in (without a snapshot)
    /// through a range deletion, a flush or a compaction after it, both ways.
    fn check_held_iterator(&mut self) {
        let model = self.model.clone();
        let mut it = self.db().iter(&ReadOptions::default()).expect("iter");
        self.delete_range();
        if self.rng.chance(0.3) {
            self.db().flush().expect("flush");
            self.mark_durable();
        } else if self.rng.chance(0.3) {
            self.compact_sub_range();
        }
        let mut got = Model::new();
        it.seek_to_first();
        while it.valid() {
            got.insert(it.key().to_vec(), it.value().to_vec());
            it.next();
        }
        it.status().expect("held iterator");
        assert_eq!(got, model, "an iterator created before a range deletion");
        let mut back = Vec::new();
        it.seek_to_last();
        while it.valid() {
            back.push(it.key().to_vec());
            it.prev();
        }
        it.status().expect("held iterator, backward");
        back.reverse();
        assert!(
            back.iter().eq(model.keys()),
            "an iterator created before a range deletion, backward"
        );
    }
}

/// Option sets without their file system.
fn option_sets() -> Vec<(&'static str, Options)> {
    let base = Options::default()
        .write_buffer_size(8 << 10)
        .block_size(256)
        .index_partition_size(128)
        .block_cache_bytes(64 << 10);
    vec![
        ("small-blocks", base.clone()),
        (
            "lz4-all-filters-pinned-no-cache",
            base.clone()
                .compression(Compression::Lz4)
                .filter_policy(
                    FilterPolicy::default()
                        .bits_per_key(8)
                        .levels(FilterLevels::All),
                )
                .pin_table_metadata(true)
                .block_cache_bytes(0)
                .max_open_files(2),
        ),
        (
            "no-filters-restart-1",
            base.clone()
                .filter_policy(
                    FilterPolicy::default()
                        .bits_per_key(10)
                        .levels(FilterLevels::None),
                )
                .block_restart_interval(1)
                .write_buffer_size(2 << 10)
                .max_immutable_memtables(1),
        ),
        (
            // Tiny levels: the ~30 KiB of live data spread over L4..L6, so
            // compactions run between several levels, with snapshots,
            // iterators and crashes in the middle of them.
            "leveled-tiny-levels",
            base.write_buffer_size(2 << 10)
                .base_level_bytes(4 << 10)
                .level_size_multiplier(2.0)
                .target_file_size_base(512)
                .l0_compaction_trigger(Some(2))
                .l0_slowdown_writes_trigger(8)
                .l0_stop_writes_trigger(12)
                // Compactions of a few KiB over 512-byte tables: most split.
                .max_subcompactions(4),
        ),
    ]
}

/// Options drawn from `seed`: every knob the model test can vary, so that runs
/// over many seeds cover combinations no fixed option set names.
fn random_options(seed: u64) -> Options {
    let mut r = Rng::new(seed ^ 0x0b7_1005);
    let pick = |r: &mut Rng, xs: &[usize]| xs[r.below(xs.len() as u64) as usize];
    let l0_trigger = pick(&mut r, &[1, 2, 4]);
    Options::default()
        .write_buffer_size(pick(&mut r, &[1 << 10, 4 << 10, 16 << 10]))
        .max_immutable_memtables(pick(&mut r, &[1, 2, 3]))
        .block_size(pick(&mut r, &[64, 256, 4096]))
        .block_restart_interval(pick(&mut r, &[1, 2, 16]))
        .index_partition_size(pick(&mut r, &[32, 128, 4096]))
        .compression(if r.chance(0.5) {
            Compression::Lz4
        } else {
            Compression::None
        })
        .filter_policy(
            FilterPolicy::default()
                .bits_per_key(pick(&mut r, &[1, 4, 10]) as u32)
                .levels(
                    [
                        FilterLevels::AllButLast,
                        FilterLevels::All,
                        FilterLevels::None,
                    ][r.below(3) as usize],
                ),
        )
        .block_cache_bytes([0, 4 << 10, 1 << 20][r.below(3) as usize])
        .pin_table_metadata(r.chance(0.5))
        .max_open_files(pick(&mut r, &[1, 3, 100]))
        .target_file_size_base([512, 4 << 10, 2 << 20][r.below(3) as usize])
        .max_background_jobs(pick(&mut r, &[1, 2, 3]))
        .max_subcompactions(pick(&mut r, &[1, 2, 4]))
        .l0_compaction_trigger(Some(l0_trigger))
        .l0_slowdown_writes_trigger(l0_trigger * 4)
        .l0_stop_writes_trigger(l0_trigger * 6)
        .base_level_bytes([2 << 10, 16 << 10, 64 << 20][r.below(3) as usize])
        .level_size_multiplier([2.0, 4.0, 10.0][r.below(3) as usize])
        .max_manifest_bytes([2 << 10, 64 << 20][r.below(2) as usize])
}

/// Runs `steps` random steps of the harness seeded with `seed` under `opts`,
/// naming the case in any failure so that it can be replayed with
/// `SHALE_SEED=<seed>` (and kept in [`REGRESSIONS`]).
fn run_case(name: &str, opts: Options, seed: u64, steps: usize) -> Harness {
    run_case_with(name, opts, seed, steps, true)
}

/// [`run_case`], with range deletions in the mix or not.
fn run_case_with(name: &str, opts: Options, seed: u64, steps: usize, range_dels: bool) -> Harness {
    let fs = Arc::new(CrashFs::new());
    let opts = opts.fs(fs.clone());
    let mut h = Harness::new(opts, fs, seed, range_dels);
    for i in 0..steps {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.step()));
        if let Err(e) = result {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!(
                "option set {name}, seed {seed}, step {i}: {msg}\n\
                 replay: SHALE_SEED={seed} cargo test -p shale --test model"
            );
        }
    }
    assert_eq!(
        scan_all(h.db()),
        h.model,
        "final state, option set {name}, seed {seed}"
    );
    h.note_metrics();
    h
}

/// Seeds to run: `SHALE_SEED` alone if set, else `count` seeds from `base`.
fn seeds(base: u64, count: u64) -> Vec<u64> {
    match std::env::var("SHALE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(seed) => vec![seed],
        None => (0..count).map(|i| base + i * 7919).collect(),
    }
}

fn steps() -> usize {
    if long_tests() {
        20_000
    } else {
        3_000
    }
}

#[test]
fn randomized_against_a_btreemap_with_crashes() {
    let mut coverage = Coverage::default();
    for seed in seeds(0, if long_tests() { 8 } else { 2 }) {
        for (name, opts) in option_sets() {
            let h = run_case(name, opts, seed + name.len() as u64, steps());
            coverage.l0_tables += h.coverage.l0_tables;
            coverage.deeper_tables += h.coverage.deeper_tables;
            coverage.dels_only_tables += h.coverage.dels_only_tables;
            coverage.dropped_entries += h.coverage.dropped_entries;
            coverage.dels_dropped += h.coverage.dels_dropped;
            coverage.split_compactions += h.coverage.split_compactions;
            if name == "leveled-tiny-levels" && std::env::var_os("SHALE_SEED").is_none() {
                let m = h.db().metrics();
                let levels = (1..shale::NUM_LEVELS)
                    .filter(|&l| m.levels[l].compactions > 0)
                    .count();
                assert!(levels >= 2, "compactions into {levels} levels: {m:?}");
            }
        }
    }
    eprintln!("range deletions: {coverage:?}");
    if std::env::var_os("SHALE_SEED").is_none() {
        // Range deletions reached flushed and compacted tables (some of
        // them with no entry beside), and compactions dropped what they
        // covered; compactions ran split into subcompactions, whose range
        // boundaries cut through range deletions and crashes hit.
        assert!(
            coverage.l0_tables > 0
                && coverage.deeper_tables > 0
                && coverage.dels_only_tables > 0
                && coverage.dropped_entries > 0
                && coverage.dels_dropped > 0
                && coverage.split_compactions > 0,
            "{coverage:?}"
        );
    }
}

#[test]
fn randomized_options_against_a_btreemap_with_crashes() {
    for seed in seeds(1_000_003, if long_tests() { 24 } else { 4 }) {
        let opts = random_options(seed);
        let name = format!(
            "random (buffer {}, blocks {}, filters {:?}, cache {}, background {})",
            opts.write_buffer_size,
            opts.block_size,
            opts.filter_policy,
            opts.block_cache_bytes,
            opts.max_background_jobs
        );
        run_case(&name, opts, seed, steps() / 2);
    }
}

/// Cases that once failed, replayed as they were found: (option set, seed,
/// steps, range deletions in the mix, what was wrong).
const REGRESSIONS: &[(&str, u64, usize, bool, &str)] = &[(
    "small-blocks",
    7919 + 12,
    1_900,
    false,
    "a crash left zeros from a sector boundary after log data that itself ended \
     in zeros; recovery took the torn write for corruption",
)];

#[test]
fn regressions_replay() {
    for &(name, seed, steps, range_dels, _why) in REGRESSIONS {
        let opts = option_sets()
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(_, o)| o)
            .unwrap_or_else(|| panic!("no option set {name}"));
        run_case_with(name, opts, seed, steps, range_dels);
    }
}

/// The multi-threaded variant: writers with disjoint keys (each with its own
/// model; range deletions over their own keys), a reader checking that
/// snapshots see whole batches, and a thread
/// flushing and compacting; at the end the database equals the union of the
/// writers' models, also after a reopen.
#[test]
fn concurrent_writers_readers_and_snapshots_against_models() {
    const WRITERS: u64 = 3;
    let ops = if long_tests() { 6_000 } else { 1_500 };
    for seed in seeds(42, if long_tests() { 4 } else { 1 }) {
        let fs = Arc::new(CrashFs::new());
        let opts = random_options(seed).fs(fs.clone());
        let db = Db::open("/db", opts.clone()).expect("open");
        let done = std::sync::atomic::AtomicBool::new(false);
        let models: Vec<Model> = std::thread::scope(|s| {
            let writers: Vec<_> = (0..WRITERS)
                .map(|w| {
                    let db = &db;
                    s.spawn(move || {
                        let mut rng = Rng::new(seed * 31 + w);
                        let mut model = Model::new();
                        for n in 0..ops {
                            // A batch writes the same stamp to a key and to
                            // its twin: readers must never see them differ.
                            let k = rng.below(100);
                            let stamp = format!("w{w}n{n}").into_bytes();
                            let mut batch = WriteBatch::new();
                            let (a, b) = (
                                format!("w{w}-{k:03}-a").into_bytes(),
                                format!("w{w}-{k:03}-b").into_bytes(),
                            );
                            if rng.chance(0.1) {
                                // A range deletion of this writer's keys
                                // `k..k2`: twins go together.
                                let k2 = k + 1 + rng.below(10);
                                let lo = format!("w{w}-{k:03}").into_bytes();
                                let hi = format!("w{w}-{k2:03}").into_bytes();
                                batch.delete_range(&lo, &hi);
                                model.retain(|key, _| !(*key >= lo && *key < hi));
                            } else if rng.chance(0.2) {
                                batch.delete(&a);
                                batch.delete(&b);
                                model.remove(&a);
                                model.remove(&b);
                            } else {
                                batch.put(&a, &stamp);
                                batch.put(&b, &stamp);
                                model.insert(a, stamp.clone());
                                model.insert(b, stamp);
                            }
                            let sync = rng.chance(0.05);
                            db.write(batch, &WriteOptions::default().sync(sync))
                                .expect("write");
                        }
                        model
                    })
                })
                .collect();
            let reader = s.spawn(|| {
                let mut checks = 0u64;
                while !done.load(std::sync::atomic::Ordering::Acquire) || checks == 0 {
                    let snap = db.snapshot();
                    let seen = scan_all(&snap);
                    for (k, v) in &seen {
                        if let Some(a) = k.strip_suffix(b"-a") {
                            let twin = [a, b"-b"].concat();
                            assert_eq!(seen.get(&twin), Some(v), "a snapshot saw half a batch");
                            assert_eq!(snap.get(&twin).expect("get").as_ref(), Some(v));
                        }
                    }
                    checks += 1;
                }
                checks
            });
            let maintenance = s.spawn(|| {
                let mut rng = Rng::new(seed);
                while !done.load(std::sync::atomic::Ordering::Acquire) {
                    if rng.chance(0.5) {
                        db.flush().expect("flush");
                    } else {
                        db.compact_all().expect("compact");
                    }
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            });
            let models = writers
                .into_iter()
                .map(|w| w.join().expect("writer"))
                .collect();
            done.store(true, std::sync::atomic::Ordering::Release);
            assert!(reader.join().expect("reader") > 0);
            maintenance.join().expect("maintenance");
            models
        });
        let union: Model = models.into_iter().flatten().collect();
        assert_eq!(scan_all(&db), union, "seed {seed}");
        db.close().expect("close");
        let db = Db::open("/db", opts).expect("reopen");
        assert_eq!(scan_all(&db), union, "seed {seed}, after reopen");
    }
}
