//! Opening: locks, foreign directories, corruption of the manifest, of CURRENT
//! and of tables, and the persistence of writes across reopen.

mod common;

use std::path::Path;
use std::sync::Arc;

use shale::env::{FileSystem, MemFs, WriteLifetime};
use shale::{Db, Error, Options};

fn options(fs: Arc<MemFs>) -> Options {
    Options {
        fs,
        write_buffer_size: 16 << 10,
        ..Options::default()
    }
}

fn files(fs: &MemFs, suffix: &str) -> Vec<String> {
    let mut v: Vec<String> = fs
        .list(Path::new("/db"))
        .expect("list")
        .into_iter()
        .filter(|n| n.ends_with(suffix))
        .collect();
    v.sort();
    v
}

/// Overwrites one byte of a file in place (MemFs has no in-place writes, so the
/// file is rewritten).
fn flip_byte(fs: &MemFs, name: &str, offset: u64) {
    let path = Path::new("/db").join(name);
    let mut data = fs.read_all(&path).expect("read");
    data[offset as usize] ^= 0x40;
    fs.remove(&path).expect("remove");
    let mut w = fs
        .create_object(&path, WriteLifetime::NotSet)
        .expect("create");
    w.write(&data).expect("write");
    w.finish().expect("finish");
}

#[test]
fn writes_survive_close_and_reopen() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone())).expect("open");
    for i in 0..2000u32 {
        db.put(format!("k{i:05}").as_bytes(), &i.to_le_bytes())
            .expect("put");
    }
    db.delete(b"k00007").expect("delete");
    db.close().expect("close");
    let db = Db::open("/db", options(fs)).expect("reopen");
    assert_eq!(
        db.get(b"k01999").expect("get"),
        Some(1999u32.to_le_bytes().to_vec())
    );
    assert_eq!(db.get(b"k00007").expect("get"), None);
    assert_eq!(common::scan_all(&db).len(), 1999);
}

#[test]
fn a_second_open_is_refused_while_locked() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone())).expect("open");
    let err = Db::open("/db", options(fs.clone()))
        .err()
        .expect("second open must fail");
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    db.close().expect("close");
    Db::open("/db", options(fs)).expect("open after close");
}

#[test]
fn a_foreign_directory_is_not_a_database() {
    let fs = Arc::new(MemFs::new());
    fs.create_dir_all(Path::new("/db")).expect("mkdir");
    let mut w = fs
        .create_object(Path::new("/db/notes.txt"), WriteLifetime::NotSet)
        .expect("create");
    w.write(b"hello").expect("write");
    w.finish().expect("finish");
    let err = Db::open("/db", options(fs.clone()))
        .err()
        .expect("must fail");
    assert!(matches!(err, Error::NotADatabase { .. }), "{err}");
    let missing = Options {
        create_if_missing: false,
        ..options(fs)
    };
    let err = Db::open("/nothing", missing).err().expect("must fail");
    assert!(matches!(err, Error::NotADatabase { .. }), "{err}");
}

#[test]
fn corrupt_current_and_manifest_are_reported() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone())).expect("open");
    db.put(b"a", b"1").expect("put");
    db.flush().expect("flush");
    db.close().expect("close");

    let manifest = files(&fs, "")
        .into_iter()
        .find(|n| n.starts_with("MANIFEST-"))
        .expect("manifest");
    flip_byte(&fs, &manifest, 10);
    let err = Db::open("/db", options(fs.clone()))
        .err()
        .expect("must fail");
    assert!(err.is_corruption(), "{err}");
    assert!(
        err.to_string().contains(&manifest),
        "error names the manifest: {err}"
    );
    flip_byte(&fs, &manifest, 10);
    Db::open("/db", options(fs.clone()))
        .expect("restored manifest opens")
        .close()
        .expect("close");

    flip_byte(&fs, "CURRENT", 0);
    let err = Db::open("/db", options(fs)).err().expect("must fail");
    assert!(err.is_corruption(), "{err}");
}

#[test]
fn a_flipped_byte_in_a_table_is_corruption_naming_the_file() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone())).expect("open");
    for i in 0..500u32 {
        db.put(format!("k{i:05}").as_bytes(), &[7u8; 100])
            .expect("put");
    }
    db.compact_all().expect("compact");
    db.close().expect("close");
    let table = files(&fs, ".sst").pop().expect("a table");
    flip_byte(&fs, &table, 100); // inside the first data block
    let db = Db::open("/db", options(fs)).expect("open does not read data blocks");
    let err = db.get(b"k00000").expect_err("must fail");
    assert!(err.is_corruption(), "{err}");
    assert!(
        err.to_string().contains(&table),
        "error names the table: {err}"
    );
    let mut it = db.iter(&Default::default()).expect("iter");
    it.seek_to_first();
    assert!(!it.valid());
    assert!(it.status().err().is_some_and(|e| e.is_corruption()));
}

#[test]
fn a_damaged_wal_record_is_corruption_but_a_torn_tail_is_not() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone())).expect("open");
    for i in 0..20u32 {
        db.put(format!("k{i:02}").as_bytes(), b"value")
            .expect("put");
    }
    // Dropping without close syncs nothing, but MemFs keeps every byte, as the
    // page cache does after a process crash.
    drop(db);
    let wal = files(&fs, ".log").pop().expect("a wal");
    let len = fs.file_size(&Path::new("/db").join(&wal)).expect("size");

    // A damaged last byte: a torn tail, the last write is dropped.
    flip_byte(&fs, &wal, len - 1);
    let db = Db::open("/db", options(fs.clone())).expect("a torn tail opens");
    assert_eq!(db.get(b"k18").expect("get"), Some(b"value".to_vec()));
    assert_eq!(db.get(b"k19").expect("get"), None, "the torn write is gone");
    drop(db);

    // Damage in the first record with valid records after it: corruption at 0.
    let db = Db::open("/db", options(fs.clone())).expect("open");
    db.put(b"x", b"1").expect("put");
    db.put(b"y", b"2").expect("put");
    drop(db);
    let wal = files(&fs, ".log").pop().expect("a wal");
    flip_byte(&fs, &wal, 9);
    let err = Db::open("/db", options(fs)).err().expect("must fail");
    match &err {
        Error::Corruption { file, offset, .. } => {
            assert!(file.ends_with(&wal), "{err}");
            assert_eq!(*offset, 0, "{err}");
        }
        other => panic!("expected corruption, got {other}"),
    }
}
