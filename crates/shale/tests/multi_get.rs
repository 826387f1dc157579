//! `Db::multi_get` on the read pool (`Options::read_threads`), and with
//! deferred reads issued together on a file system that batches them: the same
//! answers as one Get per key, from memtables and tables, for absent,
//! deleted and range-deleted keys, duplicates and empty batches, under a
//! snapshot; the first error when a read fails, counted as one-by-one Gets
//! would be; `multi_get_each`'s answers as reads complete; the pool's threads start with the first call and are joined
//! when the database closes, even while a call runs.

use shale_testkit as common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use common::{apply, Model, Op, Rng, Write};
use shale::env::{FaultFs, FaultRule, FileSystem, MemFs, OpKind};
use shale::{Db, Error, Options, WriteBatch, WriteOptions};

/// The tests count this process's read threads, so they run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn options(fs: Arc<dyn FileSystem>, read_threads: usize) -> Options {
    Options::default()
        .fs(fs)
        .write_buffer_size(8 << 10)
        .block_size(512)
        .index_partition_size(256)
        .read_threads(read_threads)
}

/// Threads of this process named `shale-read-*`; `None` where `/proc` does
/// not list them.
fn read_threads_running() -> Option<usize> {
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    Some(
        tasks
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|name| name.starts_with("shale-read-"))
            .count(),
    )
}

/// Checks that `n` read threads run, once `/proc` shows it: a new thread
/// names itself after it starts, and a joined one leaves the list a moment
/// after its join returns.
fn expect_read_threads(n: usize, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match read_threads_running() {
            None => return,
            Some(running) if running == n => return,
            Some(running) if std::time::Instant::now() > deadline => {
                panic!("{what}: {running} read threads, not {n}")
            }
            Some(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
        }
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

/// A random write: mostly puts of 600 keys, some deletions, and range
/// deletions of a few keys or of many.
fn random_write(rng: &mut Rng, round: u64) -> Write {
    let i = rng.below(600);
    let value = format!("v{round}-{i}-{}", "x".repeat(rng.below(60) as usize)).into_bytes();
    match rng.below(100) {
        0..=69 => vec![Op::Put(key(i), value)],
        70..=86 => vec![Op::Delete(key(i))],
        87..=95 => vec![Op::DeleteRange(key(i), key(i + 1 + rng.below(8)))],
        _ => vec![Op::DeleteRange(key(i), key(i + 40 + rng.below(150)))],
    }
}

fn write(db: &Db, w: &Write) {
    let mut b = WriteBatch::new();
    for op in w {
        match op {
            Op::Put(k, v) => b.put(k, v),
            Op::Delete(k) => b.delete(k),
            Op::DeleteRange(start, end) => b.delete_range(start, end),
        }
    }
    db.write(b, &WriteOptions::default()).expect("write");
}

/// A batch of keys to read: every key the model may hold and some it
/// cannot (beyond the key space, between keys, empty), a few twice, in a
/// shuffled order.
fn query(rng: &mut Rng) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = (0..640).map(key).collect();
    keys.push(Vec::new());
    keys.push(b"key0100\x00".to_vec());
    keys.push(b"zzz".to_vec());
    for _ in 0..40 {
        keys.push(key(rng.below(640)));
    }
    for i in (1..keys.len()).rev() {
        keys.swap(i, rng.below(i as u64 + 1) as usize);
    }
    keys
}

/// `multi_get` of `keys` on `db` gives the model's answers, the same as one
/// Get per key, and counts one Get per key.
fn check(db: &Db, model: &Model, keys: &[Vec<u8>], what: &str) {
    let before = db.metrics();
    let got = db.multi_get(keys).expect("multi_get");
    let after = db.metrics();
    assert_eq!(got.len(), keys.len(), "{what}");
    for (k, v) in keys.iter().zip(&got) {
        assert_eq!(v.as_ref(), model.get(k), "{what}: multi_get {k:?}");
    }
    let found = got.iter().filter(|v| v.is_some()).count() as u64;
    assert_eq!(after.gets - before.gets, keys.len() as u64, "{what}: gets");
    assert_eq!(after.gets_found - before.gets_found, found, "{what}: found");
    assert!(
        found > 0 && found < keys.len() as u64,
        "{what}: a mixed batch"
    );
    let one_by_one: Vec<Option<Vec<u8>>> = keys.iter().map(|k| db.get(k).expect("get")).collect();
    assert_eq!(got, one_by_one, "{what}: multi_get differs from Gets");
}

#[test]
fn multi_get_answers_as_gets_do_from_every_source_and_under_a_snapshot() {
    answers_as_gets(false);
}

#[test]
fn batched_reads_answer_as_gets_do_from_every_source_and_under_a_snapshot() {
    answers_as_gets(true);
}

/// The answers of `multi_get` against a model and one Get per key; with
/// `batching`, on a file system that batches reads (the calling thread
/// defers data-block reads and issues them together; no read thread runs).
fn answers_as_gets(batching: bool) {
    let _serial = serial();
    let mem = Arc::new(MemFs::new());
    mem.set_batches_reads(batching);
    // Threads the pool runs once a call needed it.
    let pool = |n: usize| if batching { 0 } else { n };
    // L0 keeps its tables until a manual compaction takes them down.
    let opts = (options(mem.clone(), 4))
        .l0_compaction_trigger(Some(1000))
        .l0_slowdown_writes_trigger(1000)
        .l0_stop_writes_trigger(1000);
    let db = Db::open("/db", opts).expect("open");
    let mut rng = Rng::new(0x6d75_6c74);
    let mut model = Model::new();
    let mut snapshot = None;
    let running_at_start = read_threads_running();
    assert!(
        running_at_start.is_none_or(|n| n == 0),
        "{running_at_start:?}"
    );
    // An empty batch and one key need no pool.
    assert!(db.multi_get::<&[u8]>(&[]).expect("empty").is_empty());
    assert_eq!(db.multi_get(&[b"a"]).expect("one"), vec![None]);
    for round in 0..8u64 {
        for _ in 0..300 {
            let w = random_write(&mut rng, round);
            write(&db, &w);
            apply(&mut model, &w);
        }
        // Tables in L0, in deeper levels, and keys left in the memtable.
        match round {
            1 | 3 | 6 => db.flush().expect("flush"),
            2 => db.compact_all().expect("compact_all"),
            4 => db
                .compact_range(Some(&key(100)), Some(&key(400)))
                .expect("compact_range"),
            _ => {}
        }
        if round == 3 {
            snapshot = Some((db.snapshot(), model.clone()));
        }
        let keys = query(&mut rng);
        check(&db, &model, &keys, &format!("round {round}"));
    }
    let tables = db.tables().expect("tables");
    assert!(
        tables.iter().any(|t| t.level == 0) && tables.iter().any(|t| t.level > 0),
        "tables in L0 and below: {:?}",
        tables.iter().map(|t| t.level).collect::<Vec<_>>()
    );
    expect_read_threads(pool(4), "after the first multi_gets");
    if batching {
        assert!(mem.batched_reads() > 0, "no read went through a read queue");
    }

    // The snapshot reads its state, through flushes and compactions since.
    let (snap, snap_model) = snapshot.expect("taken");
    db.flush().expect("flush");
    db.compact_all().expect("compact_all");
    let keys = query(&mut rng);
    let got = snap.multi_get(&keys).expect("snapshot multi_get");
    for (k, v) in keys.iter().zip(&got) {
        assert_eq!(v.as_ref(), snap_model.get(k), "snapshot: {k:?}");
        assert_eq!(v, &snap.get(k).expect("get"), "snapshot Get {k:?}");
    }
    assert_ne!(
        got,
        db.multi_get(&keys).expect("latest"),
        "the latest state differs from the snapshot's"
    );
    drop(snap);
    db.close().expect("close");
    expect_read_threads(0, "after close");

    // The same answers with no pool (0: inline), one thread and many.
    for read_threads in [0, 1, 7] {
        let db = Db::open("/db", options(mem.clone(), read_threads)).expect("reopen");
        let keys = query(&mut rng);
        check(&db, &model, &keys, &format!("read_threads {read_threads}"));
        expect_read_threads(pool(read_threads), "after a multi_get");
        db.close().expect("close");
        expect_read_threads(0, "after close");
    }
}

/// A database of 3000 keys, all in tables (settled), closed.
fn tables_only(mem: &Arc<MemFs>) -> Model {
    let db = Db::open("/db", options(mem.clone(), 0)).expect("open");
    let mut model = Model::new();
    for i in 0..3000 {
        let w = vec![Op::Put(key(i), format!("value {i}").into_bytes())];
        write(&db, &w);
        apply(&mut model, &w);
    }
    db.settle().expect("settle");
    db.close().expect("close");
    model
}

#[test]
fn a_failed_read_is_the_calls_error_and_counts_as_one_by_one_gets() {
    a_failed_read_is_the_calls_error(false);
}

#[test]
fn a_failed_batched_read_is_the_calls_error_and_counts_as_one_by_one_gets() {
    a_failed_read_is_the_calls_error(true);
}

fn a_failed_read_is_the_calls_error(batching: bool) {
    let _serial = serial();
    let mem = Arc::new(MemFs::new());
    let model = tables_only(&mem);
    mem.set_batches_reads(batching);
    let fault = FaultFs::new(mem.clone());
    let opts = (options(fault.clone(), 8)).max_background_jobs(1);
    let db = Db::open("/db", opts).expect("open");
    db.put(b"in the memtable", b"yes").expect("put");
    let mut keys: Vec<Vec<u8>> = vec![b"in the memtable".to_vec()];
    keys.extend((0..3000).step_by(11).map(key));

    // Every read fails: the first key a table must answer fails whoever
    // looks it up, so the call's Gets are the memtable's key and that one.
    fault.inject(FaultRule::io(OpKind::Read, 0).persistent());
    let before = db.metrics();
    let err = db.multi_get(&keys).expect_err("every read fails");
    assert!(matches!(err, Error::Io { .. }), "{err}");
    let after = db.metrics();
    assert_eq!(after.gets - before.gets, 2);
    assert_eq!(after.gets_found - before.gets_found, 1);
    fault.clear();

    // One read fails, somewhere among the lookups.
    let reversed: Vec<Vec<u8>> = keys.iter().rev().cloned().collect();
    let mut struck = 0;
    for skip in [0, 5, 40] {
        let (triggered, reads) = (fault.faults_triggered(), fault.ops_seen(OpKind::Read));
        fault.inject(FaultRule::io(OpKind::Read, skip));
        let result = db.multi_get(&reversed);
        fault.clear();
        if fault.faults_triggered() > triggered {
            let err = result.expect_err("an injected read failure");
            assert!(matches!(err, Error::Io { .. }), "skip {skip}: {err}");
            struck += 1;
        } else {
            let reads = fault.ops_seen(OpKind::Read) - reads;
            assert!(reads <= skip, "skip {skip}: {reads} reads and no fault");
            result.expect("no fault struck");
        }
    }
    assert!(struck >= 2, "the faults struck ({struck})");

    // Nothing failed is cached: the same call now reads everything.
    let got = db.multi_get(&keys).expect("after the faults");
    assert_eq!(got[0], Some(b"yes".to_vec()));
    for (k, v) in keys.iter().zip(&got).skip(1) {
        assert_eq!(v.as_ref(), model.get(k), "{k:?}");
    }
    db.close().expect("close");
}

#[test]
fn closing_while_multi_gets_run_joins_the_pool_and_ends_them_with_closed() {
    let _serial = serial();
    let mem = Arc::new(MemFs::new());
    let model = tables_only(&mem);
    let keys: Vec<Vec<u8>> = (0..3000).step_by(3).map(key).collect();
    let want: Vec<Option<Vec<u8>>> = keys.iter().map(|k| model.get(k).cloned()).collect();
    for close in [true, false] {
        let db = Db::open("/db", options(mem.clone(), 6)).expect("open");
        let calls = Arc::new(AtomicUsize::new(0));
        // Two callers through snapshots, which outlive the handle.
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (snap, calls) = (db.snapshot(), calls.clone());
                let (keys, want) = (keys.clone(), want.clone());
                std::thread::spawn(move || loop {
                    match snap.multi_get(&keys) {
                        Ok(got) => assert_eq!(got, want),
                        Err(Error::Closed) => {
                            // Closed stays closed, with or without the pool.
                            assert!(matches!(snap.multi_get(&keys), Err(Error::Closed)));
                            assert!(matches!(snap.get(&keys[0]), Err(Error::Closed)));
                            return;
                        }
                        Err(e) => panic!("multi_get during close: {e}"),
                    }
                    calls.fetch_add(1, Ordering::AcqRel);
                })
            })
            .collect();
        while calls.load(Ordering::Acquire) < 4 {
            std::thread::yield_now();
        }
        let closed = if close {
            Some(db.close())
        } else {
            drop(db);
            None
        };
        for r in readers {
            r.join().expect("a reader panicked");
        }
        // The readers may have let their snapshots go (at `Closed`) before
        // close counts what is still open.
        match closed {
            None | Some(Ok(())) | Some(Err(Error::LiveHandles { .. })) => {}
            Some(Err(e)) => panic!("close under two snapshots: {e}"),
        }
        expect_read_threads(0, &format!("close = {close}"));
    }
}

#[test]
fn absurd_read_threads_are_refused_by_name() {
    let _serial = serial();
    let mem = Arc::new(MemFs::new());
    for n in [1025, usize::MAX] {
        match Db::open("/db", options(mem.clone(), n)) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("read_threads"), "{m}"),
            Err(e) => panic!("read_threads {n}: {e}"),
            Ok(_) => panic!("read_threads {n} accepted"),
        }
    }
    // The largest allowed opens (and starts no thread before a multi_get).
    let db = Db::open("/db", options(mem, 1024)).expect("1024 threads");
    expect_read_threads(0, "before any multi_get");
    db.close().expect("close");
}

/// On the operating system's file system (io_uring where the kernel offers
/// it), buffered, `O_DIRECT` and through memory mappings: the same answers
/// as Gets, and the same physical reads of data blocks as those Gets would
/// make cold.
#[test]
fn batched_reads_on_the_operating_systems_file_system() {
    use shale::env::{PosixFs, PosixOptions};
    use shale::BlockKind;
    let _serial = serial();
    for (direct_io, mmap_reads) in [(false, false), (true, false), (false, true)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs: Arc<dyn FileSystem> = Arc::new(PosixFs::new(PosixOptions {
            direct_io,
            mmap_reads,
            ..PosixOptions::default()
        }));
        let mode = format!("direct_io {direct_io}, mmap_reads {mmap_reads}");
        let opts = || {
            (options(fs.clone(), 4))
                // Room for the index and filter blocks, not for the data.
                .block_cache_bytes(256 << 10)
                .pin_table_metadata(true)
        };
        let mut model = Model::new();
        {
            let db = Db::open(dir.path(), opts()).expect("open");
            for i in 0..6000 {
                let w = vec![Op::Put(key(i * 2), format!("value {i}").into_bytes())];
                write(&db, &w);
                apply(&mut model, &w);
            }
            db.settle().expect("settle");
            db.close().expect("close");
        }
        // Present and absent keys, spread over the tables.
        let keys: Vec<Vec<u8>> = (0..12_000).step_by(37).map(key).collect();
        let db = Db::open(dir.path(), opts()).expect("reopen");
        let batched = db.multi_get(&keys).expect("multi_get");
        let data = |db: &Db| db.metrics().block(BlockKind::Data).physical_reads;
        let batch_reads = data(&db);
        db.close().expect("close");
        let db = Db::open(dir.path(), opts()).expect("reopen");
        let one_by_one: Vec<Option<Vec<u8>>> =
            keys.iter().map(|k| db.get(k).expect("get")).collect();
        assert_eq!(batched, one_by_one, "{mode}");
        for (k, v) in keys.iter().zip(&batched) {
            assert_eq!(v.as_ref(), model.get(k), "{mode}: {k:?}");
        }
        assert!(batch_reads > 0, "{mode}: no data read");
        assert_eq!(
            batch_reads,
            data(&db),
            "{mode}: a batch reads the data blocks the Gets read"
        );
        db.close().expect("close");
        // Eight reads in flight at a time, answers as they come.
        let db = Db::open(dir.path(), opts()).expect("reopen");
        let mut each: Vec<Option<Option<Vec<u8>>>> = vec![None; keys.len()];
        db.multi_get_each(&keys, 8, |i, v| {
            each[i] = Some(v);
            std::ops::ControlFlow::Continue(())
        })
        .expect("multi_get_each");
        let each: Vec<Option<Vec<u8>>> = each.into_iter().map(|v| v.expect("answered")).collect();
        assert_eq!(each, one_by_one, "{mode}: multi_get_each");
        assert_eq!(batch_reads, data(&db), "{mode}: its reads");
        db.close().expect("close");
    }
}

/// `multi_get_each` draws keys as reads free room and answers each key
/// once, as its reads complete (`MemFs`'s queue answers the newest read
/// first, so out of key order), with the answers of one Get per key and
/// one data-block read per queued read; with a block cache too small to
/// keep a block between two keys every key still ends. Without batched
/// reads it answers in groups, in key order. `Break` ends the call; no
/// read in flight is refused.
#[test]
fn multi_get_each_answers_every_key_once_as_its_reads_complete() {
    use shale::BlockKind;
    use std::ops::ControlFlow;
    let _serial = serial();
    let mem = Arc::new(MemFs::new());
    let model = tables_only(&mem);
    let mut keys: Vec<Vec<u8>> = vec![b"in the memtable".to_vec()];
    keys.extend((0..3300).step_by(7).map(key));
    keys.extend((0..3000).step_by(301).map(key));
    for batching in [true, false] {
        mem.set_batches_reads(batching);
        for cache in [8 << 20, 4 << 10] {
            let what = format!("batching {batching}, cache {cache}");
            let opts = (options(mem.clone(), 4)).block_cache_bytes(cache);
            let db = Db::open("/db", opts).expect("open");
            db.put(b"in the memtable", b"yes").expect("put");
            let data = |db: &Db| db.metrics().block(BlockKind::Data).physical_reads;
            let (before, data_before, queued_before) =
                (db.metrics(), data(&db), mem.batched_reads());
            let mut got: Vec<Option<Option<Vec<u8>>>> = vec![None; keys.len()];
            let mut order = Vec::new();
            let mut nested = 0u64;
            db.multi_get_each(&keys, 16, |i, v| {
                assert!(got[i].is_none(), "{what}: key {i} answered twice");
                // The callback may read the database, with a Get or a batch.
                if i % 50 == 1 {
                    assert_eq!(db.get(&keys[i]).expect("a Get inside"), v, "{what}");
                    let two = [keys[i].clone(), keys[i - 1].clone()];
                    let inner = db.multi_get(&two).expect("a multi_get inside");
                    assert_eq!(inner[0], v, "{what}");
                    nested += 3;
                }
                got[i] = Some(v);
                order.push(i);
                ControlFlow::Continue(())
            })
            .expect("multi_get_each");
            let after = db.metrics();
            let gets = keys.len() as u64 + nested;
            assert_eq!(after.gets - before.gets, gets, "{what}: gets");
            assert_eq!(got[0], Some(Some(b"yes".to_vec())), "{what}: memtable");
            for (k, v) in keys.iter().zip(&got).skip(1) {
                let v = v.as_ref().expect("every key answered");
                assert_eq!(v.as_ref(), model.get(k), "{what}: {k:?}");
            }
            let sorted = order.windows(2).all(|w| w[0] < w[1]);
            if batching {
                assert!(!sorted, "{what}: answers come as their reads complete");
                let queued = mem.batched_reads() - queued_before;
                assert!(queued > 0, "{what}: no read queued");
                // One read per queued read, and the nested Gets' own.
                let data_reads = data(&db) - data_before;
                assert!(data_reads >= queued, "{what}: {data_reads} < {queued}");
                assert!(
                    data_reads <= queued + nested,
                    "{what}: {data_reads} reads for {queued} queued"
                );
            } else {
                assert!(sorted, "{what}: groups answer in key order");
            }

            // Break after ten answers: ten answers, ten Gets (the two
            // groups of eight looked up without batched reads).
            let before = db.metrics();
            let mut answered = 0;
            db.multi_get_each(keys.iter().rev(), 8, |_, _| {
                answered += 1;
                if answered == 10 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .expect("multi_get_each with a break");
            assert_eq!(answered, 10, "{what}");
            let looked_up = if batching { 10 } else { 16 };
            assert_eq!(db.metrics().gets - before.gets, looked_up, "{what}: gets");

            let err = db
                .multi_get_each(&keys, 0, |_, _| ControlFlow::Continue(()))
                .expect_err("no read in flight");
            assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
            db.close().expect("close");
        }
    }
}

/// A key that waited for a read goes on from the table that deferred it:
/// the filter and index blocks its lookups visit are counted once each,
/// as one Get per key counts them, and so are the tables searched without
/// the key; data blocks are counted at most as often (a key that waits for
/// a block another key already asked for counts nothing).
#[test]
fn resumed_lookups_count_each_block_once() {
    use shale::BlockKind;
    use std::ops::ControlFlow;
    let _serial = serial();
    let mem = Arc::new(MemFs::new());
    let model = tables_only(&mem);
    // L0 tables over the settled levels (kept there), so that lookups pass
    // several tables before the one that holds the key.
    let opts = |read_threads| {
        (options(mem.clone(), read_threads))
            .l0_compaction_trigger(Some(1000))
            .l0_slowdown_writes_trigger(1000)
            .l0_stop_writes_trigger(1000)
    };
    {
        let db = Db::open("/db", opts(0)).expect("open");
        for round in 0..3u64 {
            for i in (round..3000).step_by(9) {
                db.put(&key(i), format!("value {i}").as_bytes())
                    .expect("put");
            }
            db.flush().expect("flush");
        }
        db.close().expect("close");
    }
    mem.set_batches_reads(true);
    let keys: Vec<Vec<u8>> = (0..3300).step_by(5).map(key).collect();
    let lookups = |db: &Db, kind: BlockKind| {
        let b = db.metrics().block(kind);
        b.cache_hits + b.cache_misses
    };
    let counts = |each: bool| {
        let db = Db::open("/db", opts(4)).expect("open");
        assert!(
            db.tables().expect("tables").iter().any(|t| t.level == 0),
            "tables in L0"
        );
        if each {
            db.multi_get_each(&keys, 16, |i, v| {
                assert_eq!(v.as_ref(), model.get(&keys[i]), "key {i}");
                ControlFlow::Continue(())
            })
            .expect("multi_get_each");
        } else {
            for k in &keys {
                db.get(k).expect("get");
            }
        }
        let m = db.metrics();
        let out = (
            lookups(&db, BlockKind::Filter),
            lookups(&db, BlockKind::TopIndex),
            lookups(&db, BlockKind::IndexPartition),
            lookups(&db, BlockKind::Data),
            m.gets_table_misses,
        );
        db.close().expect("close");
        out
    };
    let (one, each) = (counts(false), counts(true));
    assert!(one.3 > 0 && one.1 > 0, "blocks were looked up: {one:?}");
    assert_eq!(each.0, one.0, "filter lookups");
    assert_eq!(each.1, one.1, "top-level index lookups");
    assert_eq!(each.2, one.2, "index partition lookups");
    assert!(each.3 <= one.3, "data lookups: {} > {}", each.3, one.3);
    assert_eq!(each.4, one.4, "tables searched without the key");
}

/// A `multi_get_each` over an endless stream of keys, through a snapshot
/// (which outlives the handle), ends with `Closed` when the database
/// closes, on a file system that batches reads and on one that does not.
#[test]
fn an_endless_multi_get_each_ends_when_the_database_closes() {
    use std::ops::ControlFlow;
    let _serial = serial();
    let mem = Arc::new(MemFs::new());
    let model = tables_only(&mem);
    for batching in [true, false] {
        mem.set_batches_reads(batching);
        let opts = (options(mem.clone(), 2)).block_cache_bytes(16 << 10);
        let db = Db::open("/db", opts).expect("open");
        let snap = db.snapshot();
        let answered = Arc::new(AtomicUsize::new(0));
        let reader = {
            let (answered, model) = (answered.clone(), model.clone());
            std::thread::spawn(move || {
                let keys = (0..3000u64).cycle().map(key);
                snap.multi_get_each(keys, 8, |i, v| {
                    assert_eq!(v.as_ref(), model.get(&key(i as u64 % 3000)), "key {i}");
                    answered.fetch_add(1, Ordering::AcqRel);
                    ControlFlow::Continue(())
                })
            })
        };
        while answered.load(Ordering::Acquire) < 5000 {
            std::thread::yield_now();
        }
        match db.close() {
            Ok(()) | Err(Error::LiveHandles { .. }) => {}
            Err(e) => panic!("close: {e}"),
        }
        let ended = reader.join().expect("the reader panicked");
        assert!(
            matches!(ended, Err(Error::Closed)),
            "batching {batching}: {ended:?}"
        );
    }
}
