//! Opening: locks, foreign directories, corruption of the manifest, of CURRENT
//! and of tables, and the persistence of writes across reopen.

use shale_testkit as common;

use common::files;

use std::path::Path;
use std::sync::Arc;

use shale::env::{FileSystem, MemFs, WriteLifetime};
use shale::{Db, Error, Options, WalRecoveryMode};

fn options(fs: Arc<MemFs>) -> Options {
    Options::default().fs(fs).write_buffer_size(16 << 10)
}

/// Puts keys `k00000`.. with their index as value.
fn fill(db: &Db, n: u32) {
    for i in 0..n {
        db.put(format!("k{i:05}").as_bytes(), &i.to_le_bytes())
            .expect("put");
    }
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
    fill(&db, 2000);
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
    let err = Db::open_read_only("/db", options(fs.clone()))
        .err()
        .expect("must fail");
    assert!(matches!(err, Error::NotADatabase { .. }), "{err}");
    let missing = options(fs.clone()).create_if_missing(false);
    let err = Db::open("/nothing", missing).err().expect("must fail");
    assert!(matches!(err, Error::NotADatabase { .. }), "{err}");
    fs.create_dir_all(Path::new("/empty")).expect("mkdir");
    let err = Db::open_read_only("/empty", options(fs.clone()))
        .err()
        .expect("must fail");
    assert!(matches!(err, Error::NotADatabase { .. }), "{err}");
    // D5: a refused open used to leave a LOCK file behind.
    assert_eq!(files(&fs, ""), vec!["notes.txt".to_string()]);
    assert!(fs.list(Path::new("/empty")).expect("list").is_empty());
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
fn a_damaged_last_wal_record_is_corruption_but_a_torn_tail_is_not() {
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
    let wal_path = Path::new("/db").join(&wal);
    let len = fs.file_size(&wal_path).expect("size");
    let intact = fs.read_all(&wal_path).expect("read");

    // D3: a damaged byte in the last, full-length record is not what a crash
    // leaves: corruption (naming the WAL and the record), nothing dropped.
    flip_byte(&fs, &wal, len - 3);
    let err = Db::open("/db", options(fs.clone()))
        .err()
        .expect("must fail");
    match &err {
        Error::Corruption { file, offset, .. } => {
            assert!(file.ends_with(&wal), "{err}");
            assert!(*offset > 0 && *offset < len, "{err}");
        }
        other => panic!("expected corruption, got {other}"),
    }
    assert_eq!(files(&fs, ".log"), vec![wal.clone()], "nothing deleted");
    // Tolerating a corrupted tail (LevelDB's behaviour) drops that write.
    let tolerant = options(fs.clone()).wal_recovery_mode(WalRecoveryMode::TolerateCorruptedTail);
    let db = Db::open_read_only("/db", tolerant).expect("tolerant open");
    assert_eq!(db.get(b"k18").expect("get"), Some(b"value".to_vec()));
    assert_eq!(
        db.get(b"k19").expect("get"),
        None,
        "the damaged write is gone"
    );
    drop(db);

    // A torn write: the last record cut short, or zeroed from its start (the
    // 20 records have the same size).
    let record = intact.len() / 20;
    assert_eq!(intact.len() % 20, 0);
    for torn in [
        intact[..intact.len() - 2].to_vec(),
        [&intact[..intact.len() - record], &vec![0u8; record][..]].concat(),
    ] {
        rewrite(&fs, &wal, &torn);
        let db = Db::open_read_only("/db", options(fs.clone())).expect("a torn tail opens");
        assert_eq!(db.get(b"k18").expect("get"), Some(b"value".to_vec()));
        assert_eq!(db.get(b"k19").expect("get"), None, "the torn write is gone");
    }
    rewrite(&fs, &wal, &intact);
    let db = Db::open("/db", options(fs.clone())).expect("open");
    assert_eq!(db.get(b"k19").expect("get"), Some(b"value".to_vec()));
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

/// Replaces a file's bytes.
fn rewrite(fs: &MemFs, name: &str, data: &[u8]) {
    let path = Path::new("/db").join(name);
    fs.remove(&path).expect("remove");
    let mut w = fs
        .create_object(&path, WriteLifetime::NotSet)
        .expect("create");
    w.write(data).expect("write");
    w.finish().expect("finish");
}

/// Positions an iterator.
type Position<'a> = &'a dyn Fn(&mut shale::DbIterator);

/// A database whose last manifest edit is a compaction: its inputs are gone,
/// and every key lives in the compaction's output.
fn compacted_db(fs: &Arc<MemFs>) {
    let db = Db::open("/db", options(fs.clone())).expect("open");
    fill(&db, 3000);
    db.compact_all().expect("compact");
    db.close().expect("close");
}

#[test]
fn damage_in_the_last_manifest_record_fails_the_open_and_deletes_nothing() {
    // D1: recovery used to take the damaged last edit for a torn write, roll
    // back to the version before it and delete the tables that version does
    // not name: the whole database.
    let fs = Arc::new(MemFs::new());
    compacted_db(&fs);
    let manifest = files(&fs, "")
        .into_iter()
        .find(|n| n.starts_with("MANIFEST-"))
        .expect("manifest");
    let len = fs
        .file_size(&Path::new("/db").join(&manifest))
        .expect("size");
    let before = files(&fs, "");
    flip_byte(&fs, &manifest, len - 20);
    let err = Db::open("/db", options(fs.clone()))
        .err()
        .expect("must fail");
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains(&manifest), "{err}");
    assert_eq!(files(&fs, ""), before, "nothing written or deleted");
    let err = Db::open_read_only("/db", options(fs.clone()))
        .err()
        .expect("must fail");
    assert!(err.is_corruption(), "{err}");
}

#[test]
fn a_manifest_that_lost_edits_is_caught_by_the_missing_tables() {
    // A manifest cut back to an earlier, self-consistent state (a torn tail in
    // form) whose tables were deleted by the lost edits: corruption naming the
    // missing table, and nothing deleted.
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone())).expect("open");
    fill(&db, 3000);
    db.flush().expect("flush");
    drop(db);
    let manifest = files(&fs, "")
        .into_iter()
        .find(|n| n.starts_with("MANIFEST-"))
        .expect("manifest");
    let path = Path::new("/db").join(&manifest);
    let old = fs.read_all(&path).expect("read");
    let db = Db::open("/db", options(fs.clone())).expect("open");
    db.compact_all().expect("compact");
    db.close().expect("close");
    // Put the old manifest back under the current name, as if the newer one
    // had lost its records.
    let current = files(&fs, "")
        .into_iter()
        .find(|n| n.starts_with("MANIFEST-"))
        .expect("manifest");
    rewrite(&fs, &current, &old);
    let before = files(&fs, "");
    let err = Db::open("/db", options(fs.clone()))
        .err()
        .expect("must fail");
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains(".sst"), "names the table: {err}");
    assert_eq!(files(&fs, ""), before, "nothing written or deleted");
}

#[test]
fn a_read_only_open_writes_nothing_and_shares_its_lock() {
    // D6: every open used to flush the WAL and write a new manifest, so a
    // database on a full file system could not even be read.
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone())).expect("open");
    fill(&db, 3000);
    db.delete(b"k00001").expect("delete");
    drop(db); // the WAL holds unflushed writes
    let before: Vec<(String, Vec<u8>)> = files(&fs, "")
        .into_iter()
        .map(|n| {
            let data = fs.read_all(&Path::new("/db").join(&n)).expect("read");
            (n, data)
        })
        .collect();
    let a = Db::open_read_only("/db", options(fs.clone())).expect("read-only");
    let b = Db::open_read_only("/db", options(fs.clone())).expect("a second reader");
    assert!(a.is_read_only());
    assert_eq!(
        a.get(b"k02999").expect("get"),
        Some(2999u32.to_le_bytes().to_vec())
    );
    assert_eq!(b.get(b"k00001").expect("get"), None);
    assert_eq!(common::scan_all(&a).len(), 2999);
    let err = a.put(b"x", b"y").expect_err("read-only");
    assert!(matches!(err, Error::ReadOnly { .. }), "{err}");
    assert!(matches!(a.flush(), Err(Error::ReadOnly { .. })));
    assert!(matches!(a.compact_all(), Err(Error::ReadOnly { .. })));
    let err = Db::open("/db", options(fs.clone()))
        .err()
        .expect("a writer must wait");
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    a.close().expect("close");
    drop(b);
    let after: Vec<(String, Vec<u8>)> = files(&fs, "")
        .into_iter()
        .map(|n| {
            let data = fs.read_all(&Path::new("/db").join(&n)).expect("read");
            (n, data)
        })
        .collect();
    assert!(before == after, "a read-only open changed the directory");
    let w = Db::open("/db", options(fs.clone())).expect("writer after readers");
    let err = Db::open_read_only("/db", options(fs))
        .err()
        .expect("locked");
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    drop(w);
}

#[test]
fn a_damaged_table_stops_every_scan_instead_of_hiding_its_rows() {
    // D2: the merging iterator took a child's error for its end, so a scan went
    // on without the damaged table; a tombstone in it no longer hid the older
    // value, and the deleted key came back.
    let fs = Arc::new(MemFs::new());
    compacted_db(&fs);
    let db = Db::open("/db", options(fs.clone())).expect("open");
    db.delete(b"k00050").expect("delete");
    db.flush().expect("flush");
    let snapshot = db.snapshot();
    drop(snapshot);
    db.close().expect("close");
    // The smallest table holds only the tombstone.
    let mut tables: Vec<(u64, String)> = files(&fs, ".sst")
        .into_iter()
        .map(|n| (fs.file_size(&Path::new("/db").join(&n)).expect("size"), n))
        .collect();
    tables.sort();
    let (_, tombstone_table) = tables.first().cloned().expect("tables");
    flip_byte(&fs, &tombstone_table, 5);

    let db = Db::open("/db", options(fs.clone())).expect("open reads no data block");
    let snapshot = db.snapshot();
    for label in ["db", "snapshot"] {
        let mut it = match label {
            "db" => db.iter(&Default::default()),
            _ => snapshot.iter(&Default::default()),
        }
        .expect("iter");
        let positions: [(&str, Position); 4] = [
            ("seek", &|it| it.seek(b"k00050")),
            ("seek_to_first", &|it| it.seek_to_first()),
            ("seek_to_last", &|it| it.seek_to_last()),
            ("seek_for_prev", &|it| it.seek_for_prev(b"k00050")),
        ];
        for (name, position) in positions {
            position(&mut it);
            assert!(!it.valid(), "{label} {name}: a row past the damage");
            let err = it.status().expect_err("the damage is reported");
            assert!(err.is_corruption(), "{label} {name}: {err}");
            assert!(err.to_string().contains(&tombstone_table), "{err}");
        }
    }
    // A bounded iterator whose range the damaged table covers fails too.
    let mut it = db
        .iter(
            &shale::ReadOptions::default()
                .lower_bound(Some(b"k00040".to_vec()))
                .upper_bound(Some(b"k00060".to_vec())),
        )
        .expect("iter");
    it.seek_to_first();
    assert!(!it.valid() && it.status().is_err());
}

#[test]
fn obsolete_tables_are_deleted_when_their_last_reader_lets_go() {
    // D4: `compact_all` kept its inputs referenced while it deleted obsolete
    // files, so they stayed on disk until the next open.
    let live_tables = |db: &Db| -> Vec<String> {
        let mut v: Vec<String> = db
            .tables()
            .expect("tables")
            .iter()
            .map(|t| format!("{:06}.sst", t.file_number))
            .collect();
        v.sort();
        v
    };
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone())).expect("open");
    fill(&db, 3000);
    db.flush().expect("flush");
    db.compact_all().expect("compact");
    // compact_all deletes its inputs itself unless a background thread still
    // held the old version for a moment; then that thread deletes them as it
    // lets go (it is woken at once, not at its next idle wake-up of 1 s).
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(300);
    while files(&fs, ".sst") != live_tables(&db) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(
        files(&fs, ".sst"),
        live_tables(&db),
        "right after compact_all"
    );

    // An iterator keeps the tables of its version alive; once it is dropped,
    // the background thread deletes them without any other trigger.
    for i in 0..3000u32 {
        db.put(format!("k{i:05}").as_bytes(), b"new").expect("put");
    }
    db.flush().expect("flush");
    let mut it = db.iter(&Default::default()).expect("iter");
    it.seek_to_first();
    db.compact_all().expect("compact");
    assert!(
        files(&fs, ".sst").len() > live_tables(&db).len(),
        "the iterator's tables stay"
    );
    assert_eq!(it.key(), b"k00000");
    drop(it);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while files(&fs, ".sst") != live_tables(&db) {
        assert!(
            std::time::Instant::now() < deadline,
            "obsolete tables stayed"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }

    // At close, whatever became obsolete is deleted too.
    let mut it = db.iter(&Default::default()).expect("iter");
    it.seek_to_first();
    db.delete(b"k00001").expect("delete");
    db.compact_all().expect("compact");
    let live = live_tables(&db);
    drop(it);
    db.close().expect("close");
    assert_eq!(files(&fs, ".sst"), live, "after close");
}

#[test]
fn repair_rebuilds_a_damaged_manifest_from_tables_and_logs() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone())).expect("open");
    fill(&db, 3000);
    db.compact_all().expect("compact");
    // Newer versions in L0 tables and in the WAL, and deletions of both kinds.
    for i in (0..3000u32).step_by(7) {
        db.put(format!("k{i:05}").as_bytes(), b"newer")
            .expect("put");
    }
    db.delete(b"k00003").expect("delete");
    db.flush().expect("flush");
    db.put(b"k00010", b"in the wal").expect("put");
    db.delete(b"k00011").expect("delete");
    let expected = common::scan_all(&db);
    drop(db);

    let manifest = files(&fs, "")
        .into_iter()
        .find(|n| n.starts_with("MANIFEST-"))
        .expect("manifest");
    let len = fs
        .file_size(&Path::new("/db").join(&manifest))
        .expect("size");
    flip_byte(&fs, &manifest, len - 20);
    assert!(Db::open("/db", options(fs.clone())).is_err());

    let report = Db::repair("/db", options(fs.clone())).expect("repair");
    assert!(report.tables_kept > 0, "{report:?}");
    assert_eq!(
        report.tables_salvaged + report.tables_unreadable,
        0,
        "{report:?}"
    );
    assert!(report.wal_records >= 2, "{report:?}");
    assert!(
        report.moved_to_lost.contains(&manifest),
        "the damaged manifest is kept aside: {report:?}"
    );
    let db = Db::open("/db", options(fs.clone())).expect("open after repair");
    assert_eq!(common::scan_all(&db), expected);
    assert_eq!(
        db.get(b"k00010").expect("get"),
        Some(b"in the wal".to_vec())
    );
    db.put(b"after", b"repair").expect("writes work");
    db.close().expect("close");
    let names = fs
        .list(&Path::new("/db").join(shale::LOST_DIR))
        .expect("lost/");
    assert!(names.contains(&manifest), "{names:?}");
}

#[test]
fn repair_salvages_the_readable_part_of_a_damaged_table() {
    let fs = Arc::new(MemFs::new());
    compacted_db(&fs);
    let db = Db::open("/db", options(fs.clone())).expect("open");
    let expected = common::scan_all(&db);
    let tables = db.tables().expect("tables");
    db.close().expect("close");
    // Damage the last data block of the first table: the entries before it
    // survive, those in it are lost.
    let t = &tables[0];
    let name = format!("{:06}.sst", t.file_number);
    let layout = shale::inspect_table(
        fs.open_random(&Path::new("/db").join(&name)).expect("open"),
        Path::new("/db").join(&name),
    )
    .expect("layout");
    let last_data = layout
        .blocks
        .iter()
        .rfind(|b| b.kind == shale::LayoutKind::Data)
        .expect("data blocks")
        .offset;
    flip_byte(&fs, &name, last_data + 3);
    let report = Db::repair("/db", options(fs.clone())).expect("repair");
    assert_eq!(report.tables_salvaged, 1, "{report:?}");
    assert!(report.moved_to_lost.contains(&name), "{report:?}");
    let db = Db::open("/db", options(fs)).expect("open");
    let got = common::scan_all(&db);
    assert!(got.len() < expected.len() && !got.is_empty());
    for (k, v) in &got {
        assert_eq!(expected.get(k), Some(v), "no wrong row");
    }
}

#[test]
fn read_options_take_a_snapshot_of_the_same_database() {
    let db = Db::open("/db", options(Arc::new(MemFs::new()))).expect("open");
    db.put(b"k", b"old").expect("put");
    let snap = db.snapshot();
    db.put(b"k", b"new").expect("put");
    let at_snap = shale::ReadOptions::default().snapshot(Some(&snap));
    assert_eq!(
        db.get_with(b"k", &at_snap).expect("get"),
        Some(b"old".to_vec())
    );
    let mut it = db.iter(&at_snap).expect("iter");
    it.seek_to_first();
    assert_eq!(it.value(), b"old");
    let other = Db::open("/other", options(Arc::new(MemFs::new()))).expect("open");
    let err = other
        .get_with(b"k", &at_snap)
        .expect_err("foreign snapshot");
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}
