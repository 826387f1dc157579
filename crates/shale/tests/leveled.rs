//! The leveled LSM under load: level shape, concurrency with compactions,
//! crashes and a full disk during compactions, write stalls, manifest rollover,
//! lifetime write counters, and the read trait shared by `Db` and `Snapshot`.

use shale_testkit as common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use common::{scan_all, Rng};
use shale::env::{
    CrashFs, FaultFs, FaultRule, FileSystem, MemFs, ObjectWriter, OpKind, WriteLifetime,
};
use shale::events::{StallCause, StallCondition};
use shale::{
    Db, Error, Event, EventListener, Options, ReadOptions, Readable, WriteBatch, WriteOptions,
};

/// Hash-like keys, as in the study.
fn key(i: u64) -> Vec<u8> {
    Rng::new(i ^ 0x5eed).bytes(16)
}

fn value(i: u64, round: u64) -> Vec<u8> {
    let mut v = format!("{i}:{round}:").into_bytes();
    v.resize(40 + (i % 50) as usize, b'v');
    v
}

/// Small memtables and levels so that data spreads over several levels fast.
/// Table format 2: at 4 KiB tables, version 3's page per filter partition and
/// per locator would outweigh the data and distort the level sizes these
/// tests check (the picker does not depend on the table format).
fn small_levels(fs: Arc<dyn FileSystem>) -> Options {
    Options::default()
        .fs(fs)
        .table_format_version(2)
        .write_buffer_size(16 << 10)
        .block_size(512)
        .index_partition_size(256)
        .base_level_bytes(32 << 10)
        .level_size_multiplier(4.0)
        .target_file_size_base(4 << 10)
        .l0_compaction_trigger(Some(2))
        .l0_slowdown_writes_trigger(16)
        .l0_stop_writes_trigger(24)
}

fn load(db: &Db, range: std::ops::Range<u64>, round: u64, sync: bool) {
    for chunk in range.collect::<Vec<_>>().chunks(100) {
        let mut b = WriteBatch::new();
        for &i in chunk {
            b.put(&key(i), &value(i, round));
        }
        db.write(b, &WriteOptions::default().sync(sync))
            .expect("write");
    }
}

#[test]
fn compactions_spread_data_over_levels_and_lose_nothing() {
    let db = Db::open("/db", small_levels(Arc::new(MemFs::new()))).expect("open");
    load(&db, 0..20_000, 0, false);
    load(&db, 0..5_000, 1, false);
    for i in (0..20_000).step_by(3) {
        if i % 7 == 0 {
            db.delete(&key(i)).expect("delete");
        }
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");

    let summary = db.summary().expect("summary");
    let nonempty: Vec<usize> = summary
        .levels
        .iter()
        .filter(|l| l.tables > 0)
        .map(|l| l.level)
        .collect();
    assert!(nonempty.len() >= 2, "levels in use: {nonempty:?}");
    assert_eq!(nonempty.last(), Some(&6), "the last level holds data");
    let total = summary.total();
    let last = &summary.levels[6];
    assert!(
        last.bytes * 100 >= total.bytes * 70,
        "L6 holds {} of {} bytes",
        last.bytes,
        total.bytes
    );
    // Settled: no level's priority reaches 1. A level at or over its target
    // waits while the level below is fuller still (its score is divided by
    // that level's fullness: the score for L1-L5, bytes over target for
    // L6), so a score a little over 1 can remain above a full L6.
    let fullness = |level: usize| {
        let l = &summary.levels[level];
        if level == 6 {
            l.bytes as f64 / l.target_bytes.unwrap_or(u64::MAX).max(1) as f64
        } else {
            l.score
        }
    };
    for l in &summary.levels[1..6] {
        let priority = if l.score >= 1.0 && l.level >= summary.base_level {
            l.score / fullness(l.level + 1).max(0.01)
        } else {
            l.score
        };
        assert!(
            priority < 1.0,
            "L{} still needs compacting: score {}, priority {priority}",
            l.level,
            l.score
        );
    }
    assert_eq!(
        summary.levels[6].filter_bytes, 0,
        "L6 is written without filters"
    );
    let m = db.metrics();
    assert!(m.write_amplification().is_some_and(|w| w > 1.0));
    assert!(m.compactions() > 0);

    let state = scan_all(&db);
    for i in 0..20_000u64 {
        let expect = if i % 3 == 0 && i % 7 == 0 {
            None
        } else if i < 5_000 {
            Some(value(i, 1))
        } else {
            Some(value(i, 0))
        };
        assert_eq!(state.get(&key(i)), expect.as_ref(), "key {i}");
        if i % 97 == 0 {
            assert_eq!(db.get(&key(i)).expect("get"), expect, "get {i}");
        }
    }
    db.close().expect("close");
}

/// Writers rewrite every key once per round, in key-index order; readers and
/// iterators run meanwhile. A point read sees a round at least as new as the
/// last one completed before it started; an iterator (one consistent state)
/// sees, in key-index order, a prefix of keys in round r + 1 followed by keys in
/// round r.
#[test]
fn settle_drains_l0_below_its_trigger() {
    let opts = small_levels(Arc::new(MemFs::new())).l0_compaction_trigger(Some(4));
    let db = Db::open("/db", opts).expect("open");
    // Data in the deeper levels, then three flushes: under the trigger.
    load(&db, 0..5_000, 0, false);
    db.settle().expect("settle");
    for round in 1..4 {
        load(&db, round * 100..round * 100 + 50, round, false);
        db.flush().expect("flush");
    }
    db.wait_for_compactions().expect("wait");
    let l0 = |db: &Db| db.summary().expect("summary").levels[0].tables;
    assert_eq!(l0(&db), 3, "three flushes stay below a trigger of 4");

    db.settle().expect("settle");
    assert_eq!(l0(&db), 0, "settle leaves nothing in L0");
    assert_eq!(db.metrics().l0_files, 0);
    for round in 1..4 {
        for i in round * 100..round * 100 + 50 {
            assert_eq!(db.get(&key(i)).expect("get"), Some(value(i, round)));
        }
    }
    // Settled, nothing more is due: a later wait returns at once and L0 stays
    // empty.
    db.wait_for_compactions().expect("wait");
    assert_eq!(l0(&db), 0);
}

#[test]
fn readers_and_iterators_stay_consistent_while_compactions_run() {
    const KEYS: u64 = 3_000;
    let rounds = if common::long_tests() { 40 } else { 12 };
    let db = Arc::new(Db::open("/db", small_levels(Arc::new(MemFs::new()))).expect("open"));
    load(&db, 0..KEYS, 0, false);
    let completed = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    // Key index of each key, to check order-dependent prefixes.
    let index: Arc<BTreeMap<Vec<u8>, u64>> = Arc::new((0..KEYS).map(|i| (key(i), i)).collect());
    let round_of = |v: &[u8]| -> u64 {
        let s = std::str::from_utf8(v).expect("utf8 value");
        s.split(':')
            .nth(1)
            .and_then(|r| r.parse().ok())
            .expect("round")
    };

    std::thread::scope(|s| {
        let writer = {
            let (db, completed) = (db.clone(), completed.clone());
            s.spawn(move || {
                for r in 1..=rounds {
                    for i in 0..KEYS {
                        db.put(&key(i), &value(i, r)).expect("put");
                    }
                    completed.store(r, Ordering::Release);
                }
            })
        };
        let getter = {
            let (db, completed, done) = (db.clone(), completed.clone(), done.clone());
            s.spawn(move || {
                let mut rng = Rng::new(7);
                let mut reads = 0u64;
                while !done.load(Ordering::Acquire) {
                    let i = rng.below(KEYS);
                    let floor = completed.load(Ordering::Acquire);
                    let v = db.get(&key(i)).expect("get").expect("every key exists");
                    let ceiling = completed.load(Ordering::Acquire) + 1;
                    let r = round_of(&v);
                    assert!(
                        r >= floor,
                        "key {i}: round {r} older than completed {floor}"
                    );
                    assert!(
                        r <= ceiling,
                        "key {i}: round {r} not written yet ({ceiling})"
                    );
                    reads += 1;
                }
                reads
            })
        };
        let scanner = {
            let (db, completed, done, index) =
                (db.clone(), completed.clone(), done.clone(), index.clone());
            s.spawn(move || {
                let mut scans = 0u64;
                let mut backward = false;
                while !done.load(Ordering::Acquire) {
                    let floor = completed.load(Ordering::Acquire);
                    let snap = db.snapshot();
                    let mut it = snap.iter(&ReadOptions::default()).expect("iter");
                    // (key index, round) of every key, by a forward or backward scan.
                    let mut seen: Vec<(u64, u64)> = Vec::new();
                    if backward {
                        it.seek_to_last();
                    } else {
                        it.seek_to_first();
                    }
                    while it.valid() {
                        seen.push((index[it.key()], round_of(it.value())));
                        if backward {
                            it.prev();
                        } else {
                            it.next();
                        }
                    }
                    it.status().expect("scan");
                    assert_eq!(seen.len() as u64, KEYS, "a scan sees every key");
                    seen.sort_unstable();
                    let newest = seen.iter().map(|&(_, r)| r).max().unwrap_or(0);
                    let oldest = seen.iter().map(|&(_, r)| r).min().unwrap_or(0);
                    assert!(
                        oldest >= floor && newest <= oldest + 1,
                        "rounds {oldest}..{newest}"
                    );
                    // In key-index order: newest round first, then the older.
                    let switch = seen.iter().position(|&(_, r)| r == oldest).unwrap_or(0);
                    if newest != oldest {
                        assert!(
                            seen[switch..].iter().all(|&(_, r)| r == oldest),
                            "the scan saw a state no single moment had"
                        );
                    }
                    // The snapshot answers point reads from the same state.
                    for &(i, r) in seen.iter().step_by(97) {
                        let v = snap.get(&key(i)).expect("snapshot get").expect("exists");
                        assert_eq!(round_of(&v), r, "snapshot get of key {i}");
                    }
                    backward = !backward;
                    scans += 1;
                }
                scans
            })
        };
        writer.join().expect("writer");
        done.store(true, Ordering::Release);
        let reads = getter.join().expect("getter");
        let scans = scanner.join().expect("scanner");
        assert!(reads > 0 && scans > 0, "reads {reads}, scans {scans}");
    });
    let m = db.metrics();
    assert!(m.compactions() > 0, "compactions ran during the test");
    let state = scan_all(&*db);
    for i in 0..KEYS {
        assert_eq!(state.get(&key(i)), Some(&value(i, rounds)));
    }
}

/// Synced writes survive crashes that hit while flushes and compactions run.
#[test]
fn crashes_during_compactions_keep_every_synced_write() {
    let iterations = if common::long_tests() { 30 } else { 8 };
    let fs = Arc::new(CrashFs::new());
    // L0 -> base compactions of 32 KiB and more over 4 KiB tables: they run
    // split into subcompactions, which the crashes land in.
    let opts = small_levels(fs.clone()).max_subcompactions(3);
    let mut split = 0;
    let mut durable: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut next = 0u64;
    let mut rng = Rng::new(99);
    for round in 0..iterations {
        let db = Db::open("/db", opts.clone()).expect("open after crash");
        assert_eq!(
            scan_all(&db),
            durable,
            "round {round}: synced state after crash"
        );
        let compactions = db.metrics().compactions();
        // Write synced batches until a compaction completed, then a random number
        // more, so that the crash lands in the middle of background work.
        let extra = rng.below(20);
        let mut after = None;
        loop {
            let mut b = WriteBatch::new();
            for _ in 0..50 {
                let k = key(next % 6_000);
                let v = value(next % 6_000, next);
                b.put(&k, &v);
                durable.insert(k, v);
                next += 1;
            }
            db.write(b, &WriteOptions::SYNC).expect("write");
            if after.is_none() && db.metrics().compactions() > compactions {
                after = Some(0);
            }
            if let Some(n) = after.as_mut() {
                *n += 1;
                if *n > extra {
                    break;
                }
            }
        }
        split += db.metrics().split_compactions;
        fs.crash();
        drop(db);
        fs.restart();
    }
    assert!(split > 0, "no compaction was split into subcompactions");
    let db = Db::open("/db", opts).expect("final open");
    assert_eq!(scan_all(&db), durable);
    db.close().expect("close");
}

/// A full disk while flushes and compactions write tables (compactions write
/// most of the bytes here) poisons the database: writes fail, nothing
/// acknowledged is lost, and once space is back it reopens intact.
#[test]
fn a_full_disk_during_compactions_poisons_and_reopens_intact() {
    let mem = Arc::new(MemFs::new());
    let fault = FaultFs::new(mem.clone());
    let db = Db::open("/db", small_levels(fault.clone())).expect("open");
    load(&db, 0..3_000, 0, false);
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    let before = db.metrics().compactions();
    // The disk fills up after a few more table writes.
    fault.inject(FaultRule::no_space(OpKind::WriteObject, 3).persistent());
    let mut failed = None;
    for round in 1..200u64 {
        let mut b = WriteBatch::new();
        for i in 0..100 {
            b.put(&key(i), &value(i, round));
        }
        if let Err(e) = db.write(b, &WriteOptions::default()) {
            failed = Some(e);
            break;
        }
    }
    let err = failed.expect("writes fail once the disk is full");
    assert!(
        matches!(err, Error::Poisoned { .. }),
        "a background failure poisons: {err}"
    );
    assert!(fault.faults_triggered() > 0);
    assert!(db.metrics().background_errors > 0, "the failure is counted");
    assert!(db.get(&key(2_999)).expect("reads still work").is_some());
    drop(db);
    fault.clear();
    let db = Db::open("/db", small_levels(mem)).expect("reopen after space is freed");
    let state = scan_all(&db);
    assert_eq!(state.len(), 3_000, "every key is there");
    for i in 100..3_000 {
        assert_eq!(state.get(&key(i)), Some(&value(i, 0)), "key {i}");
    }
    db.wait_for_compactions().expect("compactions resume");
    assert!(db.metrics().compactions() >= before);
    db.close().expect("close");
}

/// With a tight L0 limit and a slow compaction budget, writers stall; stalls
/// are counted and timed, and lose nothing.
#[test]
fn writes_stall_when_l0_fills() {
    let opts = small_levels(Arc::new(MemFs::new()))
        .l0_compaction_trigger(Some(1))
        .l0_slowdown_writes_trigger(1)
        .l0_stop_writes_trigger(2)
        .compaction_rate_limit(Some(4 << 20));
    let db = Db::open("/db", opts).expect("open");
    load(&db, 0..4_000, 0, false);
    db.flush().expect("flush");
    let m = db.metrics();
    assert!(m.stall_count > 0, "no stall: {m:?}");
    assert!(m.stall_micros > 0);
    db.wait_for_compactions().expect("settle");
    assert_eq!(scan_all(&db).len(), 4_000);
}

/// A manifest that outgrows its limit is rewritten into a new file; the old
/// one is deleted and the database reopens to the same state.
#[test]
fn the_manifest_rolls_over() {
    let fs = Arc::new(MemFs::new());
    let opts = small_levels(fs.clone()).max_manifest_bytes(2 << 10);
    let manifests = |fs: &MemFs| -> Vec<String> {
        fs.list(Path::new("/db"))
            .expect("list")
            .into_iter()
            .filter(|n| n.starts_with("MANIFEST-"))
            .collect()
    };
    let db = Db::open("/db", opts.clone()).expect("open");
    let first = manifests(&fs);
    load(&db, 0..6_000, 0, false);
    db.flush().expect("flush");
    db.wait_for_compactions().expect("settle");
    let now = manifests(&fs);
    assert!(
        now.iter().all(|m| !first.contains(m)),
        "the manifest was rewritten: {first:?} -> {now:?}"
    );
    let wamp = db.metrics().write_amplification();
    db.close().expect("close");
    let db = Db::open("/db", opts).expect("reopen");
    let after = manifests(&fs);
    assert_eq!(after.len(), 1, "old manifests are deleted: {after:?}");
    assert_eq!(scan_all(&db).len(), 6_000);
    // Lifetime write counters come back from the manifest.
    assert_eq!(db.metrics().write_amplification(), wamp);
    db.close().expect("close");
}

/// Code written against `Readable` reads the latest state or a snapshot.
#[test]
fn db_and_snapshot_share_the_read_trait() {
    fn count(r: &dyn Readable) -> usize {
        let mut it = r.iter(&ReadOptions::default()).expect("iter");
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next();
        }
        n
    }
    let db = Db::open("/db", small_levels(Arc::new(MemFs::new()))).expect("open");
    load(&db, 0..100, 0, false);
    let snap = db.snapshot();
    load(&db, 100..150, 0, false);
    assert_eq!(count(&db), 150);
    assert_eq!(count(&snap), 100);
    assert!(Readable::get(&snap, &key(120)).expect("get").is_none());
    assert!(Readable::get(&db, &key(120)).expect("get").is_some());
}

/// Open (true) or shut; syncs wait while it is shut.
type Gate = Arc<(parking_lot::Mutex<bool>, parking_lot::Condvar)>;

/// A file system whose manifest syncs wait until the test lets them go.
struct SlowManifestFs {
    inner: MemFs,
    gate: Gate,
    blocked: Arc<AtomicBool>,
}

struct GatedAppend {
    inner: Box<dyn shale::env::AppendFile>,
    gate: Option<(Gate, Arc<AtomicBool>)>,
}

impl shale::env::AppendFile for GatedAppend {
    fn append(&mut self, data: &[u8]) -> std::io::Result<()> {
        self.inner.append(data)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> std::io::Result<()> {
        if let Some((gate, blocked)) = &self.gate {
            let (open, cv) = &**gate;
            let mut open = open.lock();
            while !*open {
                blocked.store(true, Ordering::Release);
                cv.wait(&mut open);
            }
        }
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl shale::env::FsLayer for SlowManifestFs {
    fn inner(&self) -> &dyn FileSystem {
        &self.inner
    }
    fn create_append(
        &self,
        path: &Path,
        hint: shale::env::WriteLifetime,
    ) -> std::io::Result<Box<dyn shale::env::AppendFile>> {
        let inner = self.inner.create_append(path, hint)?;
        let manifest = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("MANIFEST-"));
        Ok(Box::new(GatedAppend {
            inner,
            gate: manifest.then(|| (self.gate.clone(), self.blocked.clone())),
        }))
    }
}

/// Writers never wait for a manifest sync: with a flush's manifest edit stuck
/// in its sync, writes (and reads) still complete.
#[test]
fn writes_go_on_while_a_manifest_sync_waits() {
    let gate = Arc::new((parking_lot::Mutex::new(true), parking_lot::Condvar::new()));
    let blocked = Arc::new(AtomicBool::new(false));
    let fs = Arc::new(SlowManifestFs {
        inner: MemFs::new(),
        gate: gate.clone(),
        blocked: blocked.clone(),
    });
    // Room for many immutable memtables, so that no write needs the stuck
    // flush to finish.
    let opts = small_levels(fs)
        .max_immutable_memtables(64)
        .l0_slowdown_writes_trigger(1000)
        .l0_stop_writes_trigger(1000);
    let db = Db::open("/db", opts).expect("open");
    *gate.0.lock() = false;
    // Fill memtables until a flush reaches its manifest sync and blocks there.
    let mut i = 0;
    while !blocked.load(Ordering::Acquire) {
        db.put(&key(i), &value(i, 0)).expect("put");
        i += 1;
        assert!(i < 200_000, "no flush reached the manifest");
    }
    // The flush holds no lock writers need: these complete while it waits.
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            for j in 0..20 {
                db.put(&key(1_000_000 + j), b"during").expect("put");
            }
            assert_eq!(
                db.get(&key(1_000_000)).expect("get"),
                Some(b"during".to_vec())
            );
            done_tx.send(()).expect("send");
        });
        let finished = done_rx.recv_timeout(std::time::Duration::from_secs(10));
        let still_blocked = blocked.load(Ordering::Acquire) && !*gate.0.lock();
        *gate.0.lock() = true;
        gate.1.notify_all();
        assert!(finished.is_ok(), "writes waited for the manifest sync");
        assert!(still_blocked);
    });
    db.flush().expect("flush");
    db.close().expect("close");
}

/// A `MemFs` whose table creations for any level but L0 (compaction
/// outputs; flushes write L0 tables, hinted `Medium`) wait while the gate
/// is shut: compactions are held back, flushes are not.
struct GateFs {
    inner: MemFs,
    shut: parking_lot::Mutex<bool>,
    opened: parking_lot::Condvar,
    /// Compaction outputs that waited at the gate.
    held: AtomicU64,
    /// The hint of every table created and the nice value of the thread
    /// that created it.
    creators: parking_lot::Mutex<Vec<(WriteLifetime, i32)>>,
}

impl GateFs {
    fn new() -> GateFs {
        GateFs {
            inner: MemFs::new(),
            shut: parking_lot::Mutex::new(false),
            opened: parking_lot::Condvar::new(),
            held: AtomicU64::new(0),
            creators: parking_lot::Mutex::new(Vec::new()),
        }
    }
    fn set_shut(&self, shut: bool) {
        *self.shut.lock() = shut;
        self.opened.notify_all();
    }
}

impl shale::env::FsLayer for GateFs {
    fn inner(&self) -> &dyn FileSystem {
        &self.inner
    }
    fn create_object(
        &self,
        path: &Path,
        hint: WriteLifetime,
    ) -> std::io::Result<Box<dyn ObjectWriter>> {
        let nice = shale::env::priority::current_thread_nice()?;
        self.creators.lock().push((hint, nice));
        if hint != WriteLifetime::Medium {
            let mut shut = self.shut.lock();
            if *shut {
                self.held.fetch_add(1, Ordering::Relaxed);
            }
            while *shut {
                self.opened.wait(&mut shut);
            }
        }
        self.inner.create_object(path, hint)
    }
}

/// The stall conditions raised to listeners, in order.
#[derive(Default)]
struct Stalls(parking_lot::Mutex<Vec<(StallCondition, StallCause)>>);

impl EventListener for Stalls {
    fn on_event(&self, event: &Event) {
        if let Event::StallBegin { condition, cause } = event {
            self.0.lock().push((*condition, *cause));
        }
    }
}

/// With the L0 -> base compaction held back (at its outputs, split into
/// subcompactions), flushes go on and fill L0 past its slowdown trigger:
/// writes are delayed, at a rate that falls as L0 keeps growing, and never
/// stopped while L0 stays below the stop trigger. Once the compaction runs,
/// L0 drains, the delay ends and the rate is reset.
#[test]
fn delayed_writes_slow_down_and_never_stop_below_the_stop_trigger() {
    let gate = Arc::new(GateFs::new());
    let stalls = Arc::new(Stalls::default());
    let rate = 4 << 20;
    let opts = small_levels(gate.clone())
        // Flushes only when asked.
        .write_buffer_size(1 << 20)
        .l0_compaction_trigger(Some(2))
        .l0_slowdown_writes_trigger(3)
        .l0_stop_writes_trigger(9)
        .delayed_write_rate(rate)
        .max_subcompactions(2)
        .listeners(vec![stalls.clone()]);
    let db = Db::open("/db", opts).expect("open");
    gate.set_shut(true);
    // Eight flushes: L0 holds 8 tables, one below the stop trigger, and the
    // compaction of the first ones waits at the gate meanwhile.
    for round in 0..8u64 {
        for chunk in (0..400u64).collect::<Vec<_>>().chunks(20) {
            let mut b = WriteBatch::new();
            for &i in chunk {
                b.put(&key(i + round * 400), &value(i, round));
            }
            db.write(b, &WriteOptions::default()).expect("write");
        }
        db.flush()
            .expect("a flush does not wait for the held compaction");
    }
    // One more group, delayed at L0 = 8.
    db.put(b"last", b"x").expect("put");
    // The compaction picked at L0 = 2 waits at the gate (it gets there on
    // its own time; the deadline only bounds a hang).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while gate.held.load(Ordering::Relaxed) == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let m = db.metrics();
    assert_eq!(m.l0_files, 8, "{m:?}");
    assert!(
        gate.held.load(Ordering::Relaxed) > 0,
        "the compaction reached the gate"
    );
    assert_eq!(m.running_compactions, 1, "{m:?}");
    assert!(m.stalls_delayed > 0, "no delayed write group: {m:?}");
    assert_eq!(m.stalls_stopped, 0, "stopped below the stop trigger: {m:?}");
    assert!(
        m.delayed_write_rate >= shale::MIN_DELAYED_WRITE_RATE && m.delayed_write_rate < rate,
        "the rate falls while L0 grows: {}",
        m.delayed_write_rate
    );
    gate.set_shut(false);
    db.wait_for_compactions().expect("settle");
    // L0 drained: the next group goes through, and the delay is over.
    db.put(b"after", b"y").expect("put");
    let after = db.metrics();
    assert!(after.l0_files < 3, "{after:?}");
    assert!(after.split_compactions > 0, "{after:?}");
    assert_eq!(after.delayed_write_rate, 0);
    assert_eq!(after.write_stalled, 0);
    db.close().expect("close");
    let seen = stalls.0.lock().clone();
    assert!(
        seen.contains(&(StallCondition::Delayed, StallCause::L0Tables)),
        "{seen:?}"
    );
    assert!(
        seen.iter().all(|(c, _)| *c != StallCondition::Stopped),
        "a stop below the stop trigger: {seen:?}"
    );
}

/// With `compaction_nice`, every compaction output is written by a thread at
/// that nice value, whether the compaction is split into subcompactions or
/// not, automatic or manual; flushes keep the process's priority. Without
/// it, compactions run at the process's priority too.
#[test]
fn compactions_run_at_their_nice_value_and_flushes_do_not() {
    let base = shale::env::priority::current_thread_nice().expect("nice");
    let nice = (base + 7).min(shale::env::priority::MAX_NICE);
    for (compaction_nice, subcompactions) in [(nice, 1), (nice, 4), (0, 4)] {
        let fs = Arc::new(GateFs::new());
        let opts = Options::default()
            .fs(fs.clone())
            .create_if_missing(true)
            .write_buffer_size(64 << 10)
            .target_file_size_base(32 << 10)
            .l0_compaction_trigger(Some(2))
            .max_subcompactions(subcompactions)
            .compaction_nice(compaction_nice);
        let db = Db::open("/db", opts).expect("open");
        let mut rng = Rng::new(7);
        for i in 0..6_000u32 {
            let key = rng.next_u64().to_be_bytes();
            db.put(&key, &i.to_le_bytes().repeat(20)).expect("put");
        }
        db.flush().expect("flush");
        db.compact_range(None, None).expect("manual compaction");
        db.close().expect("close");
        let creators = fs.creators.lock().clone();
        let flushes: Vec<i32> = creators
            .iter()
            .filter(|(h, _)| *h == WriteLifetime::Medium)
            .map(|&(_, n)| n)
            .collect();
        // Compaction outputs are hinted by their level (L1 and below: long
        // or extreme); other objects (CURRENT, NotSet) are neither.
        let compactions: Vec<i32> = creators
            .iter()
            .filter(|(h, _)| matches!(h, WriteLifetime::Long | WriteLifetime::Extreme))
            .map(|&(_, n)| n)
            .collect();
        assert!(flushes.len() >= 2 && compactions.len() >= 2, "{creators:?}");
        assert!(flushes.iter().all(|&n| n == base), "{creators:?}");
        let want = if compaction_nice == 0 {
            base
        } else {
            nice.max(base)
        };
        assert!(
            compactions.iter().all(|&n| n == want),
            "{compaction_nice}: {creators:?}"
        );
    }
}
