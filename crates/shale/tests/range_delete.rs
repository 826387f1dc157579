//! Range deletions (`Db::delete_range`, `WriteBatch::delete_range`): honoured
//! by gets, both iteration directions, snapshots, flushes, compactions and
//! reopening; bad ranges refused; the cost of deleting a large range.

use std::collections::BTreeMap;
use std::sync::Arc;

use shale::env::MemFs;
use shale::{Db, Error, Options, ReadOptions, WriteBatch, WriteOptions};

fn opts(fs: &Arc<MemFs>) -> Options {
    Options {
        fs: fs.clone(),
        write_buffer_size: 8 << 10,
        target_file_size_base: 16 << 10,
        max_background_jobs: 1,
        ..Options::default()
    }
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
        assert_eq!(db.get(&k).expect("get"), model.get(&k).cloned(), "{stage}: get {i}");
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
    model.retain(|k, _| !(k.as_slice() >= key(50).as_slice() && k.as_slice() < key(150).as_slice()));
    // Written after the deletion: not affected.
    db.put(&key(100), b"new").expect("put");
    model.insert(key(100), b"new".to_vec());
    expect_state(&db, &model, "memtable");
    assert_eq!(before.get(&key(60)).expect("get"), Some(b"old".to_vec()), "snapshot sees it");
    db.flush().expect("flush");
    expect_state(&db, &model, "after flush");
    db.compact_range(None, None).expect("compact");
    expect_state(&db, &model, "after compaction");
    // The snapshot taken before still sees every key.
    let rows = scan(&db, &ReadOptions { snapshot: Some(&before), ..Default::default() });
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
    db.write(b, &WriteOptions { sync: true }).expect("write");
    drop(db);
    let db = Db::open("/db", opts(&fs)).expect("reopen");
    assert_eq!(db.get(&key(6)).expect("get"), None);
    assert_eq!(db.get(&key(7)).expect("get"), Some(b"same batch, later op".to_vec()));
    assert_eq!(db.get(&key(10)).expect("get"), Some(b"v".to_vec()), "end is exclusive");
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
    assert!(matches!(db.write(b, &WriteOptions::default()), Err(Error::InvalidArgument(_))));
    assert_eq!(db.get(b"x").expect("get"), None, "a refused batch writes nothing");
    db.delete_range(b"a", b"a").expect("an empty range is allowed");
    assert_eq!(db.get(b"a").expect("get"), Some(b"1".to_vec()));
    // The empty key is the smallest key: [ "", "b" ) deletes "a".
    db.delete_range(b"", b"b").expect("from the empty key");
    assert_eq!(db.get(b"a").expect("get"), None);
}
