//! The byte-flip sweep: damage one byte of one file of a real database (several
//! tables in two levels, a manifest of many records, a live write-ahead log)
//! and check that shale either reports a typed error or returns exactly the
//! right data: never a wrong row, never a missing row without an error, and
//! never a database that is destroyed (once the byte is restored, everything
//! is there again, whatever opens and compactions ran on the damaged copy).
//!
//! Range deletions are in every kind of file: overlapping ones in a flushed L0
//! table, ones a snapshot kept through a compaction in an L6 table (over the
//! versions they hide), one in the log, and the manifest's count of each
//! table's. A damaged range-deletion block must be a typed error (`Corruption`
//! naming the file and the block's offset), never a key come back or a key
//! wrongly deleted.
//!
//! Every byte of the small files (CURRENT, the manifest, the log) is flipped;
//! tables get a sample that always includes their footer and properties and
//! every byte of their range-deletion block. Set `SHALE_LONG_TESTS=1` for every
//! byte of every file.

use shale_testkit as common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{long_tests, Rng};
use shale::env::{FileSystem, MemFs, RandomAccessFile, WriteLifetime};
use shale::{Db, Error, Options, ReadOptions, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const DIR: &str = "/db";

fn options(fs: Arc<MemFs>) -> Options {
    Options::default()
        .fs(fs)
        .write_buffer_size(8 << 10)
        .block_size(512)
        .index_partition_size(256)
        .target_file_size_base(16 << 10)
        .block_cache_bytes(64 << 10)
        .max_background_jobs(1)
}

/// Deletes `[start, end)` (synced) in the database and the model.
fn delete_range(db: &Db, model: &mut Model, start: &[u8], end: &[u8]) {
    let mut b = shale::WriteBatch::new();
    b.delete_range(start, end);
    db.write(b, &WriteOptions::SYNC).expect("delete_range");
    model.retain(|k, _| !(k.as_slice() >= start && k.as_slice() < end));
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// Builds the database: bulk data compacted into L6, then range deletions a
/// snapshot keeps through a compaction into L6 (with the versions they hide),
/// newer versions, deletions and overlapping range deletions in an L0 table,
/// and the last writes, a range deletion among them, only in the (synced) log.
fn build() -> (Arc<MemFs>, Model) {
    let fs = Arc::new(MemFs::new());
    let mut model = Model::new();
    let db = Db::open(DIR, options(fs.clone())).expect("open");
    let sync = WriteOptions::SYNC;
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
    // Seen by every reader: dropped at L6 with what they hide.
    delete_range(&db, &mut model, &key(100), &key(150));
    delete_range(&db, &mut model, &key(120), &key(130));
    delete_range(&db, &mut model, b"", &key(5));
    let snapshot = db.snapshot();
    // Newer than the snapshot: kept at L6, over the older versions the
    // snapshot still sees. Overlapping, one of a single key, one past every
    // key, and a key written again after its deletion.
    delete_range(&db, &mut model, &key(140), &key(200));
    delete_range(&db, &mut model, &key(170), &key(230));
    delete_range(&db, &mut model, &key(300), b"key00300\0");
    delete_range(&db, &mut model, &key(590), &[0xff]);
    put(
        &db,
        &mut model,
        "key00160".into(),
        b"after the range deletion".to_vec(),
    );
    db.compact_all().expect("compact");
    drop(snapshot);
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
    // Overlapping range deletions in the flushed L0 table.
    delete_range(&db, &mut model, &key(400), &key(420));
    delete_range(&db, &mut model, &key(410), &key(415));
    delete_range(&db, &mut model, &key(418), &key(440));
    db.flush().expect("flush");
    // The live log: a few synced writes, newest last, and a batch of a range
    // deletion and a put of a key in its range, which stays.
    for i in 0..6u32 {
        put(&db, &mut model, format!("wal{i:02}"), vec![b'w'; 9]);
    }
    let mut b = shale::WriteBatch::new();
    b.delete_range(b"wal02", b"wal05");
    b.put(b"wal03", b"x");
    db.write(b, &WriteOptions::SYNC).expect("write");
    model.retain(|k, _| !(k.as_slice() >= &b"wal02"[..] && k.as_slice() < &b"wal05"[..]));
    model.insert(b"wal03".to_vec(), b"x".to_vec());
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
    let with_range_dels: Vec<usize> = db
        .tables()
        .expect("tables")
        .iter()
        .filter(|t| t.properties.range_deletions > 0)
        .map(|t| t.level)
        .collect();
    assert!(
        with_range_dels.contains(&0) && with_range_dels.contains(&6),
        "range deletions in L0 and L6 tables: {with_range_dels:?}"
    );
    db.close().expect("close");
    (fs, model)
}

/// Where the range-deletion block of table `name` lies (with its trailer),
/// if it has one: right before the properties, `range_del_bytes` long.
fn range_del_block(fs: &MemFs, name: &str) -> Option<(usize, usize)> {
    let path = Path::new(DIR).join(name);
    let file: Arc<dyn RandomAccessFile> = fs.open_random(&path).expect("open");
    let layout = shale::inspect_table(file, path).expect("the undamaged table inspects");
    let size = layout.properties.range_del_bytes as usize;
    if size == 0 {
        return None;
    }
    let props = layout
        .blocks
        .iter()
        .find(|b| b.kind == shale::LayoutKind::Properties)
        .expect("properties");
    Some((props.offset as usize - size, props.offset as usize))
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

/// A damaged block the errors must name: `Corruption` of this file at this
/// offset (the block's).
struct Damage {
    file: String,
    offset: u64,
}

/// Checks an error reported for a flip: typed, and naming the damaged block
/// when it is known.
fn check_error(e: &Error, damage: Option<&Damage>, what: &str) {
    assert!(acceptable(e), "{what}: {e:?}");
    let Some(d) = damage else {
        return;
    };
    let mut root = e;
    while let Error::Poisoned { cause } = root {
        root = cause;
    }
    match root {
        Error::Corruption { file, offset, .. } => assert!(
            file.file_name().is_some_and(|n| n == d.file.as_str()) && *offset == d.offset,
            "{what}: the error does not name the damaged block ({} at {}): {e:?}",
            d.file,
            d.offset
        ),
        _ => panic!("{what}: not corruption: {e:?}"),
    }
}

#[derive(Default, Debug)]
struct Tally {
    flips: u64,
    refused_at_open: u64,
    errors_on_read: u64,
    exact: u64,
    /// Flips inside a range-deletion block (each one also counted above).
    range_del_flips: u64,
}

/// Reads everything through `db`: every row must be right; an error may cut a
/// read short. Returns whether any read reported an error.
fn check_reads(db: &Db, model: &Model, what: &str, damage: Option<&Damage>) -> bool {
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
            check_error(&e, damage, what);
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
            check_error(&e, damage, what);
            errored = true;
        }
    }
    drop(it);
    // Point reads of present, deleted and absent keys.
    let in_ranges = [
        0, 4, 5, 121, 125, 145, 160, 199, 229, 300, 301, 410, 412, 415, 439, 595,
    ];
    for i in (0..600u32).step_by(3).chain([3, 14, 9999]).chain(in_ranges) {
        let k = format!("key{i:05}").into_bytes();
        match db.get(&k) {
            Ok(v) => assert_eq!(v.as_ref(), model.get(&k), "{what}: get {i}"),
            Err(e) => {
                check_error(&e, damage, what);
                errored = true;
            }
        }
    }
    for k in ["wal01", "wal02", "wal03", "wal04", "wal05"] {
        match db.get(k.as_bytes()) {
            Ok(v) => assert_eq!(v.as_ref(), model.get(k.as_bytes()), "{what}: get {k}"),
            Err(e) => {
                check_error(&e, damage, what);
                errored = true;
            }
        }
    }
    errored
}

/// One flip: read-only and read-write opens of the damaged copy, then the
/// byte restored and everything checked again. With `damage`, every error
/// must name that block, and there must be one.
fn flip(
    original: &MemFs,
    model: &Model,
    name: &str,
    offset: usize,
    xor: u8,
    damage: Option<&Damage>,
    tally: &mut Tally,
) {
    let fs = copy_fs(original);
    let path: PathBuf = Path::new(DIR).join(name);
    let byte = fs.read_all(&path).expect("read")[offset];
    set_byte(&fs, &path, offset, byte ^ xor);
    let what = format!("{name} offset {offset} ^{xor:#04x}");
    tally.flips += 1;
    let mut refused = false;
    let mut errored = false;
    match Db::open_read_only(DIR, options(fs.clone())) {
        Ok(db) => errored |= check_reads(&db, model, &format!("{what} (read-only)"), damage),
        Err(e) => {
            check_error(&e, damage, &format!("{what}: read-only open"));
            refused = true;
        }
    }
    match Db::open(DIR, options(fs.clone())) {
        Ok(db) => {
            errored |= check_reads(&db, model, &format!("{what} (read-write)"), damage);
            // Let compactions the open started run into the damage too.
            let _ = db.wait_for_compactions();
            drop(db);
        }
        Err(e) => {
            check_error(&e, damage, &format!("{what}: open"));
            refused = true;
        }
    }
    if damage.is_some() {
        // The block is checksummed and every scan reads it.
        assert!(refused || errored, "{what}: the damage went unnoticed");
        tally.range_del_flips += 1;
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
        !check_reads(&db, model, &format!("{what} (restored)"), None),
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
        let range_dels = if kind == "table" {
            range_del_block(&fs, name)
        } else {
            None
        };
        let mut offsets: Vec<usize> = if long || kind != "table" {
            (0..len).collect()
        } else {
            // The footer and properties at the end, and a sample of blocks.
            let mut v: Vec<usize> = (len.saturating_sub(160)..len).step_by(3).collect();
            v.extend((0..24).map(|_| rng.below(len as u64) as usize));
            v
        };
        if let Some((start, end)) = range_dels {
            // Every byte of the range-deletion block, trailer included.
            offsets.extend(start..end);
            offsets.sort_unstable();
            offsets.dedup();
        }
        for offset in offsets {
            let damage = range_dels
                .filter(|&(start, end)| (start..end).contains(&offset))
                .map(|(start, _)| Damage {
                    file: name.clone(),
                    offset: start as u64,
                });
            // The log's length fields and checksums are where a crash and
            // damage look most alike: three flips of each of its bytes.
            let tries = if kind == "wal" || long { 3 } else { 1 };
            for t in 0..tries {
                let xor = match t {
                    0 => 1u8 << rng.below(8),
                    1 => 0x80,
                    _ => (rng.below(255) + 1) as u8,
                };
                flip(&fs, &model, name, offset, xor, damage.as_ref(), &mut tally);
                *per_kind.entry(kind).or_default() += 1;
            }
        }
    }
    eprintln!("byte flips: {tally:?}, per file kind: {per_kind:?}");
    assert!(tally.flips >= 300, "{tally:?}");
    assert!(tally.range_del_flips >= 100, "{tally:?}");
    for kind in ["table", "wal", "manifest", "current"] {
        assert!(
            per_kind.get(kind).copied().unwrap_or(0) > 0,
            "no {kind} flipped"
        );
    }
}
