//! `Db::repair` with range deletions: an undamaged database repairs to the
//! same state; a damaged range deletion (its log record, or a table's
//! range-deletion block) never lets a key it deleted come back with an older
//! value; and a range deletion that survives is replayed whole, whatever
//! happened to the keys around it.
//!
//! The rule is the repair's quarantine (`db/repair.rs`): a key whose newer
//! version or deletion may have been lost reads as absent, never as an older
//! value. A range deletion is the deletion of every key in its range.

use shale_testkit as common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{files, log_records, scan_all, xor_byte};
use shale::env::{FileSystem, MemFs};
use shale::{Db, Options, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const DIR: &str = "/db";

fn options(fs: Arc<MemFs>) -> Options {
    Options::default()
        .fs(fs)
        .write_buffer_size(1 << 20)
        .max_background_jobs(1)
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

fn path(name: &str) -> PathBuf {
    Path::new(DIR).join(name)
}

fn synced(db: &Db, b: WriteBatch) {
    db.write(b, &WriteOptions::SYNC).expect("write");
}

/// Repairs, reopens and reads everything.
fn repair(fs: &Arc<MemFs>) -> Model {
    Db::repair(DIR, options(fs.clone())).expect("repair");
    let db = Db::open(DIR, options(fs.clone())).expect("open after repair");
    let got = scan_all(&db);
    for (k, v) in &got {
        assert_eq!(db.get(k).expect("get").as_ref(), Some(v), "get agrees");
    }
    db.close().expect("close");
    got
}

/// 40 keys in a flushed table, with an older version of each below it in L6.
fn base(fs: &Arc<MemFs>) -> (Db, Model) {
    let db = Db::open(DIR, options(fs.clone())).expect("open");
    let mut model = Model::new();
    for i in 0..40 {
        db.put(&key(i), b"old").expect("put");
    }
    db.compact_all().expect("compact");
    for i in 0..40 {
        db.put(&key(i), b"v1").expect("put");
        model.insert(key(i), b"v1".to_vec());
    }
    db.flush().expect("flush");
    (db, model)
}

fn remove_range(model: &mut Model, start: &[u8], end: &[u8]) {
    model.retain(|k, _| !(k.as_slice() >= start && k.as_slice() < end));
}

#[test]
fn an_undamaged_database_with_range_deletions_repairs_to_the_same_state() {
    let fs = Arc::new(MemFs::new());
    let (db, mut model) = base(&fs);
    // In a table (flushed), and in the log.
    db.delete_range(&key(5), &key(12)).expect("delete_range");
    remove_range(&mut model, &key(5), &key(12));
    db.flush().expect("flush");
    let mut b = WriteBatch::new();
    b.delete_range(&key(20), &key(30));
    b.put(&key(25), b"v2");
    synced(&db, b);
    remove_range(&mut model, &key(20), &key(30));
    model.insert(key(25), b"v2".to_vec());
    assert_eq!(scan_all(&db), model, "before the repair");
    drop(db);
    assert_eq!(repair(&fs), model, "after the repair");
}

/// The log record of a range deletion is damaged (its checksum: the keys it
/// names are read exactly). It is lost; every key it deleted may have been
/// deleted, so none may come back with its older value.
#[test]
fn a_lost_range_deletion_in_the_log_resurrects_no_key() {
    let fs = Arc::new(MemFs::new());
    let (db, _) = base(&fs);
    let mut b = WriteBatch::new();
    b.delete_range(&key(10), &key(20));
    synced(&db, b);
    let mut b = WriteBatch::new();
    b.put(&key(30), b"v2");
    synced(&db, b);
    drop(db);
    let logs = files(&fs, ".log");
    let log = logs.last().expect("a log");
    let bytes = fs.read_all(&path(log)).expect("read");
    let records = log_records(&bytes);
    assert_eq!(records.len(), 2, "the range deletion and the put");
    // The first byte of the range deletion's checksum.
    xor_byte(&fs, log, records[0].offset, 0x01);
    let got = repair(&fs);
    for i in 10..20 {
        assert_eq!(
            got.get(&key(i)),
            None,
            "key {i}: deleted by the lost range deletion, back with its older value"
        );
    }
    for i in (0..10).chain(20..40) {
        let want: &[u8] = if i == 30 { b"v2" } else { b"v1" };
        assert_eq!(
            got.get(&key(i)).map(|v| v.as_slice()),
            Some(want),
            "key {i}"
        );
    }
}

/// A put of the range's start key is lost (its record damaged), so that key
/// is quarantined; the range deletion after it is intact and must still
/// delete every other key of its range.
#[test]
fn an_intact_range_deletion_is_replayed_whole_when_its_start_key_is_quarantined() {
    let fs = Arc::new(MemFs::new());
    let (db, _) = base(&fs);
    let mut b = WriteBatch::new();
    b.put(&key(10), b"v2");
    synced(&db, b);
    let mut b = WriteBatch::new();
    b.delete_range(&key(10), &key(20));
    synced(&db, b);
    drop(db);
    let logs = files(&fs, ".log");
    let log = logs.last().expect("a log");
    let bytes = fs.read_all(&path(log)).expect("read");
    let records = log_records(&bytes);
    assert_eq!(records.len(), 2, "the put and the range deletion");
    xor_byte(&fs, log, records[0].offset, 0x01);
    let got = repair(&fs);
    for i in 10..20 {
        assert_eq!(
            got.get(&key(i)),
            None,
            "key {i}: deleted by an intact range deletion"
        );
    }
    for i in (0..10).chain(20..40) {
        assert_eq!(
            got.get(&key(i)).map(|v| v.as_slice()),
            Some(&b"v1"[..]),
            "key {i}"
        );
    }
}

/// A table's range-deletion block is damaged: the table's range deletions
/// are lost, so no key they may have deleted comes back with an older value
/// (the keys the table itself holds, newer than them, stay).
#[test]
fn a_damaged_range_deletion_block_resurrects_no_key() {
    let fs = Arc::new(MemFs::new());
    let (db, mut model) = base(&fs);
    db.delete_range(&key(10), &key(20)).expect("delete_range");
    remove_range(&mut model, &key(10), &key(20));
    db.put(&key(15), b"v2").expect("put");
    model.insert(key(15), b"v2".to_vec());
    db.flush().expect("flush");
    let tables = db.tables().expect("tables");
    let t = tables
        .iter()
        .find(|t| t.properties.range_deletions > 0)
        .expect("a table with the range deletion");
    let name = format!("{:06}.sst", t.file_number);
    db.close().expect("close");
    let p = path(&name);
    let layout = shale::inspect_table(fs.open_random(&p).expect("open"), p).expect("layout");
    let props = layout
        .blocks
        .iter()
        .find(|b| b.kind == shale::LayoutKind::Properties)
        .expect("properties");
    // A byte of the block's contents.
    xor_byte(
        &fs,
        &name,
        props.offset - layout.properties.range_del_bytes,
        0x04,
    );
    let got = repair(&fs);
    for (k, v) in &got {
        assert_eq!(
            model.get(k),
            Some(v),
            "{}: a wrong or resurrected row",
            String::from_utf8_lossy(k)
        );
    }
}
