//! Commands that delete or replace files touch only what is shale's, and only
//! under the database's lock: `Db::destroy` and `Db::repair` refuse an open
//! database and a directory of another program, and change nothing then.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use shale::{Db, Error, Options, RepairOptions};

fn options() -> Options {
    Options::default()
        .write_buffer_size(16 << 10)
        .max_background_jobs(1)
}

/// Every file below `dir` with its bytes.
fn contents(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).expect("read");
                out.insert(p.strip_prefix(dir).expect("prefix").to_path_buf(), bytes);
            }
        }
    }
    out
}

fn fill(db: &Db, n: u32) {
    for i in 0..n {
        db.put(format!("key{i:05}").as_bytes(), &[i as u8; 40])
            .expect("put");
    }
}

/// One log-framed record (a FULL fragment), as LevelDB and shale write them.
fn framed(payload: &[u8]) -> Vec<u8> {
    let mut typed = vec![1u8];
    typed.extend_from_slice(payload);
    let crc = crc32c::crc32c(&typed);
    let masked = crc.rotate_right(15).wrapping_add(0xa282_ead8);
    let mut out = masked.to_le_bytes().to_vec();
    out.extend_from_slice(&(payload.len() as u16).to_le_bytes());
    out.extend_from_slice(&typed);
    out
}

/// A directory laid out as LevelDB lays out a new database: `CURRENT`, a
/// manifest whose first edit names LevelDB's comparator, a log, a table.
fn leveldb_dir(dir: &Path) {
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::write(dir.join("CURRENT"), b"MANIFEST-000002\n").expect("CURRENT");
    let comparator = b"leveldb.BytewiseComparator";
    let mut edit = vec![1u8, comparator.len() as u8];
    edit.extend_from_slice(comparator);
    edit.extend_from_slice(&[2, 3, 3, 4, 4, 0]);
    std::fs::write(dir.join("MANIFEST-000002"), framed(&edit)).expect("manifest");
    // A write batch: sequence 1, one put of "k" = "v".
    let mut batch = 1u64.to_le_bytes().to_vec();
    batch.extend_from_slice(&1u32.to_le_bytes());
    batch.extend_from_slice(&[1, 1, b'k', 1, b'v']);
    std::fs::write(dir.join("000003.log"), framed(&batch)).expect("log");
    let mut table = vec![0u8; 48];
    table.extend_from_slice(&0xdb47_7524_8b80_fb57u64.to_le_bytes());
    std::fs::write(dir.join("000005.ldb"), table).expect("table");
}

#[test]
fn destroy_refuses_an_open_database_and_deletes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    let db = Db::open(&path, options()).expect("open");
    fill(&db, 3000);
    db.settle().expect("settle");
    db.close().expect("close");
    // Reopened settled, with one write in its log: no background job
    // changes files meanwhile.
    let db = Db::open(&path, options()).expect("open");
    db.put(b"live", b"writer").expect("put");
    let before = contents(&path);
    let e = Db::destroy(&path, &options()).expect_err("destroy of an open database");
    assert!(matches!(e, Error::Locked { .. }), "{e}");
    assert_eq!(contents(&path), before);
    db.close().expect("close");

    // A read-only handle holds it too.
    let ro = Db::open_read_only(&path, options()).expect("open read-only");
    let e = Db::destroy(&path, &options()).expect_err("destroy beside a reader");
    assert!(matches!(e, Error::Locked { .. }), "{e}");
    assert_eq!(ro.get(b"key00007").expect("get"), Some(vec![7u8; 40]));
    drop(ro);

    Db::destroy(&path, &options()).expect("destroy");
    let left: Vec<_> = std::fs::read_dir(&path).expect("list").collect();
    assert!(left.is_empty(), "{left:?}");
    let db = Db::open(&path, options()).expect("a new database in its place");
    assert_eq!(db.get(b"key00007").expect("get"), None);
    db.close().expect("close");
    // A missing directory is nothing to destroy.
    Db::destroy(dir.path().join("absent"), &options()).expect("absent");
}

#[test]
fn destroy_and_repair_refuse_another_programs_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("leveldb");
    leveldb_dir(&path);
    let before = contents(&path);
    let e = Db::destroy(&path, &options()).expect_err("destroy");
    assert!(matches!(e, Error::NotADatabase { .. }), "{e}");
    let e = Db::repair(&path, options()).expect_err("repair");
    assert!(matches!(e, Error::NotADatabase { .. }), "{e}");
    assert!(e.to_string().contains("--force"), "{e}");
    assert_eq!(contents(&path), before, "not even a LOCK file");

    // Without the foreign table, the manifest's first edit gives it away.
    std::fs::remove_file(path.join("000005.ldb")).expect("rm");
    let before = contents(&path);
    let e = Db::repair(&path, options()).expect_err("repair");
    assert!(e.to_string().contains("MANIFEST-000002"), "{e}");
    assert_eq!(contents(&path), before);

    // A foreign file beside a shale database.
    let shale = dir.path().join("shale");
    let db = Db::open(&shale, options()).expect("open");
    fill(&db, 100);
    db.close().expect("close");
    std::fs::write(shale.join("notes.txt"), b"mine").expect("write");
    let before = contents(&shale);
    let e = Db::destroy(&shale, &options()).expect_err("destroy");
    assert!(e.to_string().contains("notes.txt"), "{e}");
    let e = Db::repair(&shale, options()).expect_err("repair");
    assert!(e.to_string().contains("notes.txt"), "{e}");
    assert_eq!(contents(&shale), before);
}

#[test]
fn forced_repair_keeps_the_foreign_current() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("leveldb");
    leveldb_dir(&path);
    std::fs::remove_file(path.join("000005.ldb")).expect("rm");
    Db::repair_with(&path, options(), RepairOptions::default().force(true)).expect("forced repair");
    let lost = contents(&path.join(shale::LOST_DIR));
    assert_eq!(
        lost.get(Path::new("CURRENT")).map(Vec::as_slice),
        Some(&b"MANIFEST-000002\n"[..]),
        "{:?}",
        lost.keys()
    );
    assert!(lost.contains_key(Path::new("MANIFEST-000002")));
    // The log's batch was a valid one: its key is recovered.
    let db = Db::open(&path, options()).expect("open");
    assert_eq!(db.get(b"k").expect("get"), Some(b"v".to_vec()));
    db.close().expect("close");
}

#[test]
fn repair_accepts_a_shale_database_with_a_damaged_manifest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    let db = Db::open(&path, options()).expect("open");
    fill(&db, 2000);
    db.close().expect("close");
    // Damage the first record of the manifest: the tables still say whose
    // directory it is.
    let manifest = std::fs::read_dir(&path)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("MANIFEST-"))
        })
        .expect("manifest");
    let mut bytes = std::fs::read(&manifest).expect("read");
    bytes[10] ^= 0x5a;
    std::fs::write(&manifest, bytes).expect("write");
    assert!(Db::open(&path, options()).is_err());
    Db::repair(&path, options()).expect("repair");
    let db = Db::open(&path, options()).expect("open after repair");
    assert_eq!(
        db.get(b"key01999").expect("get"),
        Some(vec![1999u32 as u8; 40])
    );
    db.close().expect("close");
}

#[test]
fn destroy_finishes_what_a_crash_left() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    let db = Db::open(&path, options()).expect("open");
    fill(&db, 3000);
    db.close().expect("close");
    // A destroy that stopped after removing CURRENT.
    std::fs::remove_file(path.join("CURRENT")).expect("rm");
    assert!(Db::open(&path, options()).is_err());
    Db::destroy(&path, &options()).expect("destroy again");
    let db = Db::open(&path, options()).expect("open");
    db.close().expect("close");
}
