//! The byte-flip sweep: damage one byte of one file of a real database (several
//! tables in two levels, a manifest of many records, a live write-ahead log)
//! and check that shale either reports a typed error or returns exactly the
//! right data: never a wrong row, never a missing row without an error, and
//! never a database that is destroyed (once the byte is restored, everything
//! is there again, whatever opens and compactions ran on the damaged copy).
//!
//! Every byte of the small files (CURRENT, the manifest, the log) is flipped;
//! tables get a sample that always includes their footer and properties. Set
//! `SHALE_LONG_TESTS=1` for every byte of every file.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{long_tests, Rng};
use shale::env::{FileSystem, MemFs, WriteLifetime};
use shale::{Db, Error, Options, ReadOptions, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const DIR: &str = "/db";

fn options(fs: Arc<MemFs>) -> Options {
    Options {
        fs,
        write_buffer_size: 8 << 10,
        block_size: 512,
        index_partition_size: 256,
        target_file_size_base: 16 << 10,
        block_cache_bytes: 64 << 10,
        max_background_jobs: 1,
        ..Options::default()
    }
}

/// Builds the database: bulk data compacted into L6, newer versions and
/// deletions in L0 tables, and the last writes only in the (synced) log.
fn build() -> (Arc<MemFs>, Model) {
    let fs = Arc::new(MemFs::new());
    let mut model = Model::new();
    let db = Db::open(DIR, options(fs.clone())).expect("open");
    let sync = WriteOptions { sync: true };
    let mut rng = Rng::new(7);
    let put = |db: &Db, model: &mut Model, k: String, v: Vec<u8>| {
        let mut b = shale::WriteBatch::new();
        b.put(k.as_bytes(), &v);
        db.write(b, &sync).expect("put");
        model.insert(k.into_bytes(), v);
    };
    for i in 0..600u32 {
        let v = rng.bytes(20 + (i % 40) as usize);
        put(&db, &mut model, format!("key{i:05}"), v);
    }
    db.compact_all().expect("compact");
    for i in (0..600u32).step_by(5) {
        let v = rng.bytes(30);
        put(&db, &mut model, format!("key{i:05}"), v);
    }
    for i in (3..600u32).step_by(11) {
        let k = format!("key{i:05}");
        let mut b = shale::WriteBatch::new();
        b.delete(k.as_bytes());
        db.write(b, &sync).expect("delete");
        model.remove(k.as_bytes());
    }
    db.flush().expect("flush");
    // The live log: a few synced writes, newest last.
    for i in 0..8u32 {
        put(&db, &mut model, format!("wal{i:02}"), vec![b'w'; 9]);
    }
    let shape: Vec<usize> = db
        .tables()
        .expect("tables")
        .iter()
        .map(|t| t.level)
        .collect();
    assert!(
        shape.contains(&0) && shape.contains(&6),
        "tables in L0 and L6: {shape:?}"
    );
    db.close().expect("close");
    (fs, model)
}

fn copy_fs(src: &MemFs) -> Arc<MemFs> {
    let dst = Arc::new(MemFs::new());
    dst.create_dir_all(Path::new(DIR)).expect("mkdir");
    for name in src.list(Path::new(DIR)).expect("list") {
        let p = Path::new(DIR).join(&name);
        let data = src.read_all(&p).expect("read");
        let mut w = dst
            .create_object(&p, WriteLifetime::NotSet)
            .expect("create");
        w.write(&data).expect("write");
        w.finish().expect("finish");
    }
    dst.sync_dir(Path::new(DIR)).expect("sync");
    dst
}

fn set_byte(fs: &MemFs, path: &Path, offset: usize, value: u8) {
    let mut data = fs.read_all(path).expect("read");
    data[offset] = value;
    fs.remove(path).expect("remove");
    let mut w = fs
        .create_object(path, WriteLifetime::NotSet)
        .expect("create");
    w.write(&data).expect("write");
    w.finish().expect("finish");
}

/// An error shale may report for damage: typed, never a panic.
fn acceptable(e: &Error) -> bool {
    match e {
        Error::Corruption { .. } | Error::NotADatabase { .. } => true,
        // CURRENT naming a manifest that does not exist.
        Error::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
        Error::Poisoned { cause } => acceptable(cause),
        _ => false,
    }
}

#[derive(Default, Debug)]
struct Tally {
    flips: u64,
    refused_at_open: u64,
    errors_on_read: u64,
    exact: u64,
}

/// Reads everything through `db`: every row must be right; an error may cut a
/// read short. Returns whether any read reported an error.
fn check_reads(db: &Db, model: &Model, what: &str) -> bool {
    let mut errored = false;
    // Forward scan: the rows before an error are exactly the model's prefix.
    let mut it = db.iter(&ReadOptions::default()).expect("iter");
    it.seek_to_first();
    let mut expected = model.iter();
    while it.valid() {
        assert_eq!(
            Some((&it.key().to_vec(), &it.value().to_vec())),
            expected.next(),
            "{what}: forward scan returned a wrong row"
        );
        it.next();
    }
    match it.status() {
        Ok(()) => assert!(expected.next().is_none(), "{what}: forward scan lost rows"),
        Err(e) => {
            assert!(acceptable(&e), "{what}: {e:?}");
            errored = true;
        }
    }
    // Backward scan.
    it.seek_to_last();
    let mut expected = model.iter().rev();
    while it.valid() {
        assert_eq!(
            Some((&it.key().to_vec(), &it.value().to_vec())),
            expected.next(),
            "{what}: backward scan returned a wrong row"
        );
        it.prev();
    }
    match it.status() {
        Ok(()) => assert!(expected.next().is_none(), "{what}: backward scan lost rows"),
        Err(e) => {
            assert!(acceptable(&e), "{what}: {e:?}");
            errored = true;
        }
    }
    drop(it);
    // Point reads of present, deleted and absent keys.
    for i in (0..600u32).step_by(3).chain([3, 14, 9999]) {
        let k = format!("key{i:05}").into_bytes();
        match db.get(&k) {
            Ok(v) => assert_eq!(v.as_ref(), model.get(&k), "{what}: get {i}"),
            Err(e) => {
                assert!(acceptable(&e), "{what}: {e:?}");
                errored = true;
            }
        }
    }
    errored
}

/// One flip: read-only and read-write opens of the damaged copy, then the
/// byte restored and everything checked again.
fn flip(original: &MemFs, model: &Model, name: &str, offset: usize, xor: u8, tally: &mut Tally) {
    let fs = copy_fs(original);
    let path: PathBuf = Path::new(DIR).join(name);
    let byte = fs.read_all(&path).expect("read")[offset];
    set_byte(&fs, &path, offset, byte ^ xor);
    let what = format!("{name} offset {offset} ^{xor:#04x}");
    tally.flips += 1;
    let mut refused = false;
    let mut errored = false;
    match Db::open_read_only(DIR, options(fs.clone())) {
        Ok(db) => errored |= check_reads(&db, model, &format!("{what} (read-only)")),
        Err(e) => {
            assert!(acceptable(&e), "{what}: read-only open: {e:?}");
            refused = true;
        }
    }
    match Db::open(DIR, options(fs.clone())) {
        Ok(db) => {
            errored |= check_reads(&db, model, &format!("{what} (read-write)"));
            // Let compactions the open started run into the damage too.
            let _ = db.wait_for_compactions();
            drop(db);
        }
        Err(e) => {
            assert!(acceptable(&e), "{what}: open: {e:?}");
            refused = true;
        }
    }
    match (refused, errored) {
        (true, _) => tally.refused_at_open += 1,
        (false, true) => tally.errors_on_read += 1,
        (false, false) => tally.exact += 1,
    }
    // Not destroyed: with the byte restored (where the file still exists; a
    // successful open may have replaced the log), everything is back.
    if fs.exists(&path).expect("exists") {
        set_byte(&fs, &path, offset, byte);
    }
    let db = Db::open(DIR, options(fs)).unwrap_or_else(|e| panic!("{what}: destroyed: {e}"));
    assert!(
        !check_reads(&db, model, &format!("{what} (restored)")),
        "{what}: errors after the byte was restored"
    );
}

#[test]
fn every_flip_is_a_typed_error_or_the_right_data() {
    let (fs, model) = build();
    let mut names = fs.list(Path::new(DIR)).expect("list");
    names.sort();
    let long = long_tests();
    let mut rng = Rng::new(0x5eed);
    let mut tally = Tally::default();
    let mut per_kind: BTreeMap<&str, u64> = BTreeMap::new();
    for name in &names {
        if name == "LOCK" {
            continue;
        }
        let len = fs.file_size(&Path::new(DIR).join(name)).expect("size") as usize;
        let kind = if name.ends_with(".sst") {
            "table"
        } else if name.ends_with(".log") {
            "wal"
        } else if name.starts_with("MANIFEST-") {
            "manifest"
        } else {
            "current"
        };
        let offsets: Vec<usize> = if long || kind != "table" {
            (0..len).collect()
        } else {
            // The footer and properties at the end, and a sample of blocks.
            let mut v: Vec<usize> = (len.saturating_sub(160)..len).step_by(3).collect();
            v.extend((0..24).map(|_| rng.below(len as u64) as usize));
            v
        };
        for offset in offsets {
            // The log's length fields and checksums are where a crash and
            // damage look most alike: three flips of each of its bytes.
            let tries = if kind == "wal" || long { 3 } else { 1 };
            for t in 0..tries {
                let xor = match t {
                    0 => 1u8 << rng.below(8),
                    1 => 0x80,
                    _ => (rng.below(255) + 1) as u8,
                };
                flip(&fs, &model, name, offset, xor, &mut tally);
                *per_kind.entry(kind).or_default() += 1;
            }
        }
    }
    eprintln!("byte flips: {tally:?}, per file kind: {per_kind:?}");
    assert!(tally.flips >= 300, "{tally:?}");
    for kind in ["table", "wal", "manifest", "current"] {
        assert!(
            per_kind.get(kind).copied().unwrap_or(0) > 0,
            "no {kind} flipped"
        );
    }
}
