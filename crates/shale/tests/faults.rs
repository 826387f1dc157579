//! Injected I/O failures: an error at any step of writing, flushing, compacting
//! or opening surfaces as an error, and nothing acknowledged is lost.
//!
//! The workload mixes puts, deletes and range deletions (alone and in batches,
//! from the empty key, of one key, of a few, of most of the keys, and empty),
//! with a snapshot held across a flush, a full compaction and a sub-range
//! compaction, so that range deletions are in the log, in flushed tables and
//! in compacted ones when the error strikes. The state a reopen finds must be
//! exactly the acknowledged writes (plus, perhaps, the one that failed): a
//! key a range deletion removed never comes back. With a crash after the error
//! (unsynced data dropped, [`CrashFs`]), it must be the durable writes plus a
//! prefix of the later ones.

use shale_testkit as common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::{apply, scan_all, Model, Op, Write};
use shale::env::{CrashFs, FaultFs, FaultRule, FileSystem, MemFs, OpKind};
use shale::{Db, Error, Event, EventListener, Options, Readable, WriteBatch, WriteOptions};

/// What a run acknowledged, and the one write in flight when it failed: that
/// write's outcome is unknown, so the state with or without it is correct.
#[derive(Default)]
struct Outcome {
    /// Acknowledged writes, in order.
    acked: Vec<Write>,
    /// How many of `acked` are durable: a synced write, or any write before
    /// a completed flush, compaction or close, makes those before it durable.
    durable: usize,
    in_flight: Option<Write>,
}

impl Outcome {
    /// The state after the first `n` acknowledged writes.
    fn state_after(&self, n: usize) -> Model {
        let mut m = Model::new();
        for w in &self.acked[..n] {
            apply(&mut m, w);
        }
        m
    }

    fn mark_durable(&mut self) {
        self.durable = self.acked.len();
    }
}

/// Small tables, so that the full and the sub-range compaction (a few KiB
/// over 512-byte output tables) run split into subcompactions, and an error
/// or a crash strikes inside them.
fn options(fs: Arc<dyn FileSystem>) -> Options {
    Options::default()
        .fs(fs)
        .write_buffer_size(4 << 10)
        .block_size(512)
        .index_partition_size(256)
        .target_file_size_base(256)
        .max_subcompactions(3)
}

/// Counts the background errors a database reports.
#[derive(Default)]
struct BackgroundErrors(AtomicUsize);

impl EventListener for BackgroundErrors {
    fn on_event(&self, event: &Event) {
        if matches!(event, Event::BackgroundError { .. }) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:03}").into_bytes()
}

/// The smallest key above `k`: as a range's end, the range holds `k` alone.
fn successor(k: &[u8]) -> Vec<u8> {
    let mut s = k.to_vec();
    s.push(0);
    s
}

/// The `i`-th write of the workload: mostly puts of `key(i % 40)`, with range
/// deletions of every shape among them.
fn nth_write(i: u32) -> Write {
    let k = key(i % 40);
    let v = format!("value-{i}-{}", "x".repeat(40)).into_bytes();
    let a = (i * 7) % 40;
    match i {
        // From the empty key, which is the smallest key.
        13 => vec![Op::DeleteRange(Vec::new(), key(3))],
        // Empty: nothing.
        23 => vec![Op::DeleteRange(key(20), key(20)), Op::Put(k, v)],
        // Most of the keys, to past every key.
        55 => vec![Op::DeleteRange(key(10), vec![0xff])],
        // A few keys.
        _ if i % 10 == 3 => vec![Op::DeleteRange(key(a), key(a + 1 + i % 7))],
        // In a batch: one key deleted after its put, one put after its
        // deletion (which survives), and a point deletion.
        _ if i % 10 == 7 => vec![
            Op::Put(key(a), v.clone()),
            Op::DeleteRange(key(a), successor(&key(a))),
            Op::DeleteRange(key(a + 1), key(a + 4)),
            Op::Put(key(a + 2), v),
            Op::Delete(k),
        ],
        _ => vec![Op::Put(k, v)],
    }
}

/// Writes, flushes and compacts through `db`, recording each acknowledged
/// write in `out`. Stops at the first error. A snapshot taken midway must
/// keep reading its state through the flush and compactions after it.
fn run(db: &Db, out: &mut Outcome) -> Result<(), Error> {
    let mut snapshot = None;
    for i in 0..60u32 {
        let w = nth_write(i);
        let sync = i % 9 == 0;
        out.in_flight = Some(w.clone());
        match (&w[..], sync) {
            ([Op::DeleteRange(start, end)], false) => db.delete_range(start, end)?,
            _ => {
                let mut b = WriteBatch::new();
                for op in &w {
                    match op {
                        Op::Put(k, v) => b.put(k, v),
                        Op::Delete(k) => b.delete(k),
                        Op::DeleteRange(start, end) => b.delete_range(start, end),
                    }
                }
                db.write(b, &WriteOptions::default().sync(sync))?;
            }
        }
        out.in_flight = None;
        out.acked.push(w);
        if sync {
            out.mark_durable();
        }
        match i {
            25 => {
                db.flush()?;
                out.mark_durable();
            }
            30 => snapshot = Some((db.snapshot(), out.state_after(out.acked.len()))),
            40 => {
                db.compact_all()?;
                out.mark_durable();
            }
            50 => {
                db.compact_range(Some(&key(5)), Some(&key(15)))?;
                out.mark_durable();
            }
            _ => {}
        }
    }
    if let Some((snap, model)) = &snapshot {
        // A read may fail on an injected error; a wrong row is a bug.
        let seen = try_scan(snap)?;
        assert_eq!(&seen, model, "the snapshot's state changed");
    }
    drop(snapshot);
    let w = vec![Op::Delete(key(5))];
    out.in_flight = Some(w.clone());
    db.delete(&key(5))?;
    out.in_flight = None;
    out.acked.push(w);
    db.flush()?;
    out.mark_durable();
    Ok(())
}

/// Every row, or the first error.
fn try_scan(r: &impl Readable) -> Result<Model, Error> {
    let mut it = r.iter(&Default::default())?;
    it.seek_to_first();
    let mut out = Model::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status()?;
    Ok(out)
}

/// Opens, runs the workload and closes.
fn workload(fs: Arc<dyn FileSystem>, out: &mut Outcome) -> Result<(), Error> {
    let db = Db::open("/db", options(fs))?;
    run(&db, out)?;
    db.close()?;
    out.mark_durable();
    Ok(())
}

/// The state a reopen finds must be every acknowledged write, and perhaps
/// the one in flight: nothing lost, nothing deleted come back.
fn check_recovers(mem: Arc<MemFs>, out: &Outcome, what: &str) {
    let db = Db::open("/db", options(mem)).unwrap_or_else(|e| panic!("{what}: reopen failed: {e}"));
    let state = scan_all(&db);
    let acked = out.state_after(out.acked.len());
    let mut with_in_flight = acked.clone();
    if let Some(w) = &out.in_flight {
        apply(&mut with_in_flight, w);
    }
    assert!(
        state == acked || state == with_in_flight,
        "{what}: the state is not the acknowledged writes (with or without the one in \
         flight): {}",
        common::model_diff(&state, &acked)
    );
    // Point reads agree with the scan.
    for i in 0..45 {
        assert_eq!(
            db.get(&key(i)).expect("get").as_ref(),
            state.get(&key(i)),
            "{what}: get {i}"
        );
    }
    db.close().expect("close");
}

#[test]
fn an_error_at_every_step_loses_nothing_acknowledged() {
    // Count the steps of a clean run.
    let mem = Arc::new(MemFs::new());
    let fault = FaultFs::new(mem.clone());
    let mut clean = Outcome::default();
    {
        let db = Db::open("/db", options(fault.clone())).expect("open");
        run(&db, &mut clean).expect("clean run");
        let split = db.metrics().split_compactions;
        assert!(split > 0, "no compaction ran split into subcompactions");
        db.close().expect("close");
        clean.mark_durable();
    }
    let steps = fault.ops_seen(OpKind::Any);
    assert!(
        steps > 50,
        "the workload performs many file-system operations ({steps})"
    );
    check_recovers(mem, &clean, "clean run");

    let stride = if common::long_tests() {
        1
    } else {
        (steps / 120).max(1)
    };
    let mut failures_seen = 0;
    for skip in (0..steps).step_by(stride as usize) {
        let mem = Arc::new(MemFs::new());
        let fault = FaultFs::new(mem.clone());
        fault.inject(FaultRule::io(OpKind::Any, skip).persistent());
        let mut out = Outcome::default();
        let result = workload(fault.clone(), &mut out);
        if fault.faults_triggered() > 0 {
            assert!(
                result.is_err(),
                "step {skip}: an injected fault was swallowed"
            );
            failures_seen += 1;
        }
        check_recovers(mem, &out, &format!("fault at step {skip}"));
    }
    eprintln!("{steps} steps, stride {stride}: {failures_seen} failures");
    assert!(failures_seen > 10);
}

/// An error at any step, then a crash that drops what was not synced (with
/// torn tails at every other step): the state is the durable writes plus a
/// prefix of the later ones, the write in flight last if at all.
#[test]
fn an_error_at_every_step_then_a_crash_keeps_a_prefix() {
    let crash = Arc::new(CrashFs::new());
    let fault = FaultFs::new(crash.clone());
    let mut clean = Outcome::default();
    {
        let db = Db::open("/db", options(fault.clone())).expect("open");
        run(&db, &mut clean).expect("clean run");
        let split = db.metrics().split_compactions;
        assert!(split > 0, "no compaction ran split into subcompactions");
        crash.crash();
    }
    let steps = fault.ops_seen(OpKind::Any);
    crash.restart();
    check_prefix(&crash, &clean, "clean run, then a crash");

    let stride = if common::long_tests() {
        1
    } else {
        (steps / 120).max(1)
    };
    let mut failures_seen = 0;
    for skip in (0..steps).step_by(stride as usize) {
        let crash = Arc::new(CrashFs::new());
        let fault = FaultFs::new(crash.clone());
        fault.inject(FaultRule::io(OpKind::Any, skip).persistent());
        let mut out = Outcome::default();
        let background_errors = Arc::new(BackgroundErrors::default());
        let opts = options(fault.clone()).listeners(vec![background_errors.clone()]);
        // The process dies where the error left it, its threads still
        // running: the file system goes down before the handle is dropped.
        let result = Db::open("/db", opts).and_then(|db| {
            let r = run(&db, &mut out);
            if skip % 2 == 0 {
                crash.crash();
            } else {
                crash.crash_with_torn_tails(skip);
            }
            drop(db);
            r
        });
        if !crash.is_down() {
            crash.crash();
        }
        if fault.faults_triggered() > 0 {
            // The fault may strike the background work that follows the
            // workload's last call (deleting the flushed log), which no call
            // reports: it must then be reported as a background error
            // (delivered by the time the dropped handle is gone).
            assert!(
                result.is_err() || background_errors.0.load(Ordering::Relaxed) > 0,
                "step {skip}: an injected fault was swallowed"
            );
            failures_seen += 1;
        }
        crash.restart();
        check_prefix(&crash, &out, &format!("fault at step {skip}, then a crash"));
    }
    eprintln!("{steps} steps, stride {stride}: {failures_seen} failures");
    assert!(failures_seen > 10);
}

fn check_prefix(fs: &Arc<CrashFs>, out: &Outcome, what: &str) {
    let db = Db::open("/db", options(fs.clone()))
        .unwrap_or_else(|e| panic!("{what}: reopen failed: {e}"));
    let state = scan_all(&db);
    let mut candidate = out.state_after(out.durable);
    let mut matched = state == candidate;
    for w in out.acked[out.durable..].iter().chain(&out.in_flight) {
        if matched {
            break;
        }
        apply(&mut candidate, w);
        matched = state == candidate;
    }
    assert!(
        matched,
        "{what}: the state is not the durable writes ({} of {}) plus a prefix of the \
         later ones: against the durable state, {}",
        out.durable,
        out.acked.len(),
        common::model_diff(&state, &out.state_after(out.durable))
    );
    db.close().expect("close");
}

#[test]
fn failed_wal_sync_poisons_the_database() {
    let mem = Arc::new(MemFs::new());
    let fault = FaultFs::new(mem.clone());
    let db = Db::open("/db", options(fault.clone())).expect("open");
    db.put(b"a", b"1").expect("put");
    fault.inject(FaultRule::io(OpKind::SyncAppend, 0));
    let mut b = WriteBatch::new();
    b.put(b"b", b"2");
    assert!(db.write(b, &WriteOptions::SYNC).is_err());
    fault.clear();
    let err = db.put(b"c", b"3").expect_err("poisoned");
    assert!(matches!(err, Error::Poisoned { .. }), "{err}");
    assert!(db.get(b"a").expect("reads still work").is_some());
    drop(db);
    let db = Db::open("/db", options(mem)).expect("reopen");
    assert_eq!(db.get(b"a").expect("get"), Some(b"1".to_vec()));
    assert_eq!(db.get(b"c").expect("get"), None);
}

#[test]
fn a_full_disk_during_flush_is_an_error_and_the_database_reopens_intact() {
    let mem = Arc::new(MemFs::new());
    let fault = FaultFs::new(mem.clone());
    let db = Db::open("/db", options(fault.clone())).expect("open");
    let mut out = Outcome::default();
    for i in 0..30u32 {
        let w = if i % 10 == 9 {
            vec![Op::DeleteRange(key(i - 5), key(i - 2))]
        } else {
            vec![Op::Put(key(i), b"v".to_vec())]
        };
        match &w[0] {
            Op::Put(k, v) => db.put(k, v).expect("put"),
            Op::DeleteRange(start, end) => db.delete_range(start, end).expect("delete_range"),
            Op::Delete(_) => unreachable!(),
        }
        out.acked.push(w);
    }
    fault.inject(FaultRule::no_space(OpKind::WriteObject, 0).persistent());
    let err = db.flush().expect_err("flush must fail on a full disk");
    assert!(
        matches!(err, Error::Poisoned { .. } | Error::Io { .. }),
        "{err}"
    );
    drop(db);
    fault.clear();
    check_recovers(mem, &out, "after ENOSPC");
}

/// What a listener saw of compactions' ends: (subcompactions, failed), and
/// every event, for messages.
#[derive(Default)]
struct CompactionEnds(
    parking_lot::Mutex<Vec<(usize, bool)>>,
    parking_lot::Mutex<Vec<String>>,
);

impl EventListener for CompactionEnds {
    fn on_event(&self, event: &Event) {
        self.1.lock().push(format!("{event:?}"));
        if let Event::CompactionEnd {
            subcompactions,
            error,
            ..
        } = event
        {
            self.0.lock().push((*subcompactions, error.is_some()));
        }
    }
}

/// An I/O error in the output of one subcompaction of an L0 -> base
/// compaction: the whole compaction fails, nothing of it is installed (the
/// version keeps every input table), the database is poisoned, and after a
/// reopen every key reads back and no output of the failed compaction is
/// left in the directory.
#[test]
fn a_failed_subcompaction_fails_the_whole_compaction() {
    let mem = Arc::new(MemFs::new());
    let fault = FaultFs::new(mem.clone());
    let ends = Arc::new(CompactionEnds::default());
    let opts = options(fault.clone())
        // No automatic compaction: L0 waits for the manual one.
        .l0_compaction_trigger(Some(100))
        .l0_slowdown_writes_trigger(100)
        .l0_stop_writes_trigger(100)
        .max_subcompactions(4)
        .listeners(vec![ends.clone()]);
    let db = Db::open("/db", opts.clone()).expect("open");
    let mut model = Model::new();
    for round in 0..4u32 {
        for i in 0..60u32 {
            let (k, v) = (key(i * 7 % 60), format!("{round}-{i}-{}", "v".repeat(30)));
            db.put(&k, v.as_bytes()).expect("put");
            model.insert(k, v.into_bytes());
        }
        if round == 2 {
            // A range deletion, which the ranges clip; narrow, so that it
            // covers no table whole (which a delete-only compaction would
            // remove meanwhile).
            db.delete_range(&key(28), &key(31)).expect("delete_range");
            model.retain(|k, _| !(k.as_slice() >= &key(28)[..] && k.as_slice() < &key(31)[..]));
        }
        db.flush().expect("flush");
        if round == 1 {
            // A base level: its tables' ends are where the L0 -> base
            // compaction can be cut (L0 tables all span every key).
            db.compact_range(None, None).expect("first compaction");
        }
    }
    let tables = |db: &Db| -> Vec<(usize, u64)> {
        let mut t: Vec<_> = db
            .tables()
            .expect("tables")
            .iter()
            .map(|t| (t.level, t.file_number))
            .collect();
        t.sort_unstable();
        t
    };
    let before = tables(&db);
    assert!(before.iter().any(|&(level, _)| level == 0), "{before:?}");
    assert!(
        before.iter().filter(|&&(level, _)| level > 0).count() >= 2,
        "{before:?}"
    );
    // The first table write from here on is a subcompaction's output.
    fault.inject(FaultRule::io(OpKind::WriteObject, 0));
    let err = db
        .compact_range(None, None)
        .expect_err("the compaction fails");
    assert!(fault.faults_triggered() > 0);
    assert!(
        matches!(err, Error::Io { .. } | Error::Poisoned { .. }),
        "{err}"
    );
    assert_eq!(tables(&db), before, "the version kept its tables");
    assert_eq!(scan_all(&db), model, "reads still see every key");
    let err = db.put(b"after", b"x").expect_err("poisoned");
    assert!(matches!(err, Error::Poisoned { .. }), "{err}");
    drop(db);
    let seen = ends.0.lock().clone();
    // The first `compact_range` compacted L0 into the last level, then
    // that level in place; the second failed at its first step.
    let events = ends.1.lock().clone();
    assert!(seen.len() >= 2, "{seen:?}: {events:#?}");
    let (last, earlier) = seen.split_last().expect("compactions");
    assert!(earlier.iter().all(|&(_, failed)| !failed), "{events:#?}");
    let &(subcompactions, failed) = last;
    assert!(failed, "the compaction reports its failure");
    assert!(
        subcompactions >= 2,
        "the compaction was not split: {events:#?}"
    );

    fault.clear();
    let db = Db::open("/db", options(mem.clone())).expect("reopen");
    assert_eq!(
        tables(&db),
        before,
        "nothing of the failed compaction installed"
    );
    assert_eq!(scan_all(&db), model, "every key reads back");
    for i in 0..60 {
        assert_eq!(db.get(&key(i)).expect("get").as_ref(), model.get(&key(i)));
    }
    let mut names: Vec<String> = before.iter().map(|&(_, n)| format!("{n:06}.sst")).collect();
    names.sort();
    assert_eq!(
        common::files(&mem, ".sst"),
        names,
        "the failed compaction's outputs are gone"
    );
    // And the compaction succeeds once the disk works.
    db.compact_range(None, None).expect("compact");
    assert_eq!(scan_all(&db), model);
    db.close().expect("close");
}
