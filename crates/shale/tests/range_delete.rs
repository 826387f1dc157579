//! Range deletions (`Db::delete_range`, `WriteBatch::delete_range`): honoured
//! by gets, both iteration directions, snapshots, flushes, compactions and
//! reopening; bad ranges refused; the cost of deleting a large range.

use shale_testkit as common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{long_tests, Rng};
use shale::env::MemFs;
use shale::{Db, Error, Options, ReadOptions, WriteBatch, WriteOptions};

fn opts(fs: &Arc<MemFs>) -> Options {
    Options::default()
        .fs(fs.clone())
        .write_buffer_size(8 << 10)
        .target_file_size_base(16 << 10)
        .max_background_jobs(1)
}

fn key(i: u32) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

/// Every key and value, forward, and the keys backward (checked to agree).
fn scan(db: &Db, ro: &ReadOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter(ro).expect("iter");
    let mut fwd = Vec::new();
    it.seek_to_first();
    while it.valid() {
        fwd.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().expect("forward");
    let mut bwd = Vec::new();
    it.seek_to_last();
    while it.valid() {
        bwd.push(it.key().to_vec());
        it.prev();
    }
    it.status().expect("backward");
    bwd.reverse();
    assert_eq!(
        fwd.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(),
        bwd,
        "both directions agree"
    );
    fwd
}

fn expect_state(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, stage: &str) {
    let rows = scan(db, &ReadOptions::default());
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(rows, want, "{stage}: scan");
    for i in 0..200 {
        let k = key(i);
        assert_eq!(
            db.get(&k).expect("get"),
            model.get(&k).cloned(),
            "{stage}: get {i}"
        );
    }
}

#[test]
fn a_range_deletion_holds_through_flush_compaction_and_reopen() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", opts(&fs)).expect("open");
    let mut model = BTreeMap::new();
    for i in 0..200 {
        db.put(&key(i), b"old").expect("put");
        model.insert(key(i), b"old".to_vec());
    }
    db.flush().expect("flush");
    let before = db.snapshot();
    db.delete_range(&key(50), &key(150)).expect("delete_range");
    model
        .retain(|k, _| !(k.as_slice() >= key(50).as_slice() && k.as_slice() < key(150).as_slice()));
    // Written after the deletion: not affected.
    db.put(&key(100), b"new").expect("put");
    model.insert(key(100), b"new".to_vec());
    expect_state(&db, &model, "memtable");
    assert_eq!(
        before.get(&key(60)).expect("get"),
        Some(b"old".to_vec()),
        "snapshot sees it"
    );
    db.flush().expect("flush");
    expect_state(&db, &model, "after flush");
    db.compact_range(None, None).expect("compact");
    expect_state(&db, &model, "after compaction");
    // The snapshot taken before still sees every key.
    let rows = scan(&db, &ReadOptions::default().snapshot(Some(&before)));
    assert_eq!(rows.len(), 200, "the snapshot keeps the deleted keys");
    drop(before);
    db.compact_range(None, None).expect("compact");
    expect_state(&db, &model, "after the snapshot went");
    db.close().expect("close");
    let db = Db::open("/db", opts(&fs)).expect("reopen");
    expect_state(&db, &model, "after reopen");
}

#[test]
fn a_range_deletion_in_the_log_is_recovered() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", opts(&fs)).expect("open");
    for i in 0..20 {
        db.put(&key(i), b"v").expect("put");
    }
    db.flush().expect("flush");
    let mut b = WriteBatch::new();
    b.delete_range(&key(5), &key(10));
    b.put(&key(7), b"same batch, later op");
    db.write(b, &WriteOptions::SYNC).expect("write");
    drop(db);
    let db = Db::open("/db", opts(&fs)).expect("reopen");
    assert_eq!(db.get(&key(6)).expect("get"), None);
    assert_eq!(
        db.get(&key(7)).expect("get"),
        Some(b"same batch, later op".to_vec())
    );
    assert_eq!(
        db.get(&key(10)).expect("get"),
        Some(b"v".to_vec()),
        "end is exclusive"
    );
    assert_eq!(db.get(&key(4)).expect("get"), Some(b"v".to_vec()));
}

#[test]
fn bad_and_empty_ranges() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", opts(&fs)).expect("open");
    db.put(b"a", b"1").expect("put");
    let err = db.delete_range(b"b", b"a").expect_err("start above end");
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let mut b = WriteBatch::new();
    b.put(b"x", b"1");
    b.delete_range(b"z", b"y");
    assert!(matches!(
        db.write(b, &WriteOptions::default()),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(
        db.get(b"x").expect("get"),
        None,
        "a refused batch writes nothing"
    );
    db.delete_range(b"a", b"a")
        .expect("an empty range is allowed");
    assert_eq!(db.get(b"a").expect("get"), Some(b"1".to_vec()));
    // The empty key is the smallest key: [ "", "b" ) deletes "a".
    db.delete_range(b"", b"b").expect("from the empty key");
    assert_eq!(db.get(b"a").expect("get"), None);
}

/// 32-byte keys in order: `i` big-endian, then padding.
fn hash_key(i: u64) -> Vec<u8> {
    let mut k = i.to_be_bytes().to_vec();
    k.resize(32, 0x5a);
    k
}

/// The check: deleting a range of N keys (1M with
/// `SHALE_LONG_TESTS=1`, 200k by default) is one small write; Gets of the
/// deleted keys read no more blocks from the device than before it; after
/// `compact_range` the tables it covered are gone, most without being read,
/// and `stats` counts it.
#[test]
fn deleting_a_large_range_is_one_write_and_compaction_reclaims_it() {
    let n: u64 = if long_tests() { 1_000_000 } else { 200_000 };
    let fs = Arc::new(MemFs::new());
    let options = Options::default()
        .fs(fs.clone())
        .write_buffer_size(4 << 20)
        .target_file_size_base(2 << 20)
        .block_cache_bytes(64 << 10);
    let db = Db::open("/db", options).expect("open");
    let value = [7u8; 20];
    let mut b = WriteBatch::new();
    // Keys [0, n) are deleted later; [n, n + n/10) stay.
    for i in 0..n + n / 10 {
        b.put(&hash_key(i), &value);
        if b.len() == 1000 {
            db.write(std::mem::take(&mut b), &WriteOptions::default())
                .expect("write");
        }
    }
    db.write(b, &WriteOptions::default()).expect("write");
    db.compact_range(None, None).expect("settle");
    let bytes_before = db.summary().expect("summary").total().bytes;

    let mut rng = Rng::new(7);
    let probes: Vec<u64> = (0..2000).map(|_| rng.below(n)).collect();
    let reads = |db: &Db, expect_found: bool| {
        let before = db.metrics();
        for &i in &probes {
            assert_eq!(
                db.get(&hash_key(i)).expect("get").is_some(),
                expect_found,
                "key {i}"
            );
        }
        db.metrics().delta(&before).cache_misses()
    };
    let misses_before = reads(&db, true);

    let m0 = db.metrics();
    db.delete_range(&hash_key(0), &hash_key(n))
        .expect("delete_range");
    let wal = db.metrics().delta(&m0).bytes_written_wal;
    assert!(
        wal < 200,
        "one small write whatever the range holds: {wal} WAL bytes"
    );
    let misses_memtable = reads(&db, false);
    db.flush().expect("flush");
    let misses_flushed = reads(&db, false);
    assert!(
        misses_memtable <= misses_before && misses_flushed <= misses_before,
        "device reads for {} deleted keys: {misses_before} before, {misses_memtable} with the \
         range deletion in the memtable, {misses_flushed} in a table",
        probes.len()
    );
    // The keys after the range are untouched.
    assert_eq!(db.get(&hash_key(n)).expect("get"), Some(value.to_vec()));

    db.compact_range(None, None).expect("compact");
    // The background thread may have deleted covered tables since the flush.
    let m = db.metrics().delta(&m0);
    let summary = db.summary().expect("summary");
    let total = summary.total();
    assert!(
        m.delete_only_tables > 0,
        "tables covered whole are deleted without a read"
    );
    assert_eq!(
        total.range_deletions,
        0,
        "dropped at the last level: {}",
        db.stat().expect("stat")
    );
    assert_eq!(
        total.entries,
        n / 10,
        "only the keys after the range remain"
    );
    assert!(
        total.bytes * 5 < bytes_before,
        "{} of {} bytes remain",
        total.bytes,
        bytes_before
    );
    let stat = db.stat().expect("stat");
    assert!(
        stat.contains("tables deleted whole without a read"),
        "{stat}"
    );
    let mut it = db.iter(&ReadOptions::default()).expect("iter");
    it.seek_to_first();
    assert!(it.valid());
    assert_eq!(it.key(), hash_key(n).as_slice(), "the first key left");
    println!(
        "delete_range over {n} keys: {wal} WAL bytes; device reads for {} Gets of deleted keys: \
         {misses_before} before, {misses_memtable} after (memtable), {misses_flushed} after \
         (flushed); compact_range: {} tables ({} bytes) deleted without a read, {} versions \
         ({} bytes) dropped by compaction, table bytes {} -> {}",
        probes.len(),
        m.delete_only_tables,
        m.delete_only_bytes,
        m.range_del_dropped_entries,
        m.range_del_dropped_bytes,
        bytes_before,
        total.bytes
    );
}
