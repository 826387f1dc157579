//! What a blockchain client's store needs beyond get and put: prefix
//! iteration with a start key (go-ethereum's `NewIterator(prefix, start)`),
//! ranges over snapshots, many keys in one call, and a close that says when
//! handles were still open.

use std::sync::Arc;

use shale::env::MemFs;
use shale::{prefix_successor, Db, Error, Options};

fn open(fs: &Arc<MemFs>) -> Db {
    Db::open(
        "/db",
        Options::default()
            .fs(fs.clone())
            .write_buffer_size(4 << 10)
            .max_background_jobs(1),
    )
    .expect("open")
}

fn keys(r: shale::Range) -> Vec<Vec<u8>> {
    r.map(|row| row.expect("row").0).collect()
}

#[test]
fn prefix_iteration_follows_new_iterator_prefix_start() {
    let fs = Arc::new(MemFs::new());
    let db = open(&fs);
    let all: Vec<&[u8]> = vec![
        b"",
        b"a",
        b"ab",
        b"ab\x00",
        b"abc",
        b"abd",
        b"ab\xff",
        b"ab\xff\xff",
        b"ac",
        b"b",
        b"\xff",
        b"\xff\xff",
    ];
    for k in &all {
        db.put(k, b"v").expect("put (the empty key too)");
    }
    db.flush().expect("flush");
    db.put(b"abb", b"memtable").expect("put");
    let expect = |prefix: &[u8], start: &[u8]| -> Vec<Vec<u8>> {
        let from = [prefix, start].concat();
        let mut v: Vec<Vec<u8>> = all
            .iter()
            .chain(std::iter::once(&&b"abb"[..]))
            .filter(|k| k.starts_with(prefix) && **k >= from.as_slice())
            .map(|k| k.to_vec())
            .collect();
        v.sort();
        v
    };
    for (prefix, start) in [
        (&b"ab"[..], &b""[..]),
        (b"ab", b"c"),
        (b"ab", b"\xff"),
        (b"ab\xff", b""),
        (b"", b""),
        (b"", b"b"),
        (b"\xff", b""),
        (b"zz", b""),
        (b"a", b"zzz"),
    ] {
        assert_eq!(
            keys(db.prefix_from(prefix, start).expect("prefix")),
            expect(prefix, start),
            "prefix {prefix:?} start {start:?}"
        );
    }
    assert_eq!(keys(db.prefix(b"ab").expect("prefix")), expect(b"ab", b""));
    // Backward too.
    let back: Vec<Vec<u8>> = db
        .prefix(b"ab")
        .expect("prefix")
        .rev()
        .map(|r| r.expect("row").0)
        .collect();
    let mut want = expect(b"ab", b"");
    want.reverse();
    assert_eq!(back, want);
    assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
    assert_eq!(prefix_successor(b"a\xff\xff"), Some(b"b".to_vec()));
    assert_eq!(prefix_successor(b"\xff\xff"), None);
    assert_eq!(prefix_successor(b""), None);
    drop(back);
    db.close().expect("close");
}

#[test]
fn snapshots_read_ranges_and_prefixes_as_of_their_moment() {
    let fs = Arc::new(MemFs::new());
    let db = open(&fs);
    for i in 0..200u32 {
        db.put(format!("k{i:03}").as_bytes(), b"old").expect("put");
    }
    let snap = db.snapshot();
    for i in 0..200u32 {
        if i % 2 == 0 {
            db.delete(format!("k{i:03}").as_bytes()).expect("delete");
        } else {
            db.put(format!("k{i:03}").as_bytes(), b"new").expect("put");
        }
    }
    db.put(b"k999", b"new").expect("put");
    db.flush().expect("flush");
    let rows: Vec<(Vec<u8>, Vec<u8>)> = snap
        .range(&b"k010"[..]..&b"k020"[..])
        .expect("range")
        .map(|r| r.expect("row"))
        .collect();
    assert_eq!(rows.len(), 10);
    assert!(rows.iter().all(|(_, v)| v == b"old"), "{rows:?}");
    assert_eq!(keys(snap.prefix(b"k1").expect("prefix")).len(), 100);
    assert_eq!(
        keys(snap.prefix_from(b"k1", b"5").expect("prefix")).len(),
        50
    );
    assert_eq!(keys(db.prefix(b"k1").expect("prefix")).len(), 50);
    // The snapshot's range outlives the snapshot handle itself.
    let r = snap.prefix(b"k0").expect("prefix");
    drop(snap);
    assert_eq!(keys(r).len(), 100);
    db.close().expect("close");
}

#[test]
fn multi_get_reads_many_keys_in_one_state() {
    let fs = Arc::new(MemFs::new());
    let db = open(&fs);
    for i in 0..500u32 {
        db.put(format!("k{i:03}").as_bytes(), format!("v{i}").as_bytes())
            .expect("put");
    }
    db.flush().expect("flush");
    db.delete(b"k007").expect("delete");
    let got = db
        .multi_get(&[&b"k001"[..], b"k007", b"nope", b"k499"])
        .expect("multi_get");
    assert_eq!(
        got,
        vec![Some(b"v1".to_vec()), None, None, Some(b"v499".to_vec())]
    );
    assert!(db.multi_get::<&[u8]>(&[]).expect("none").is_empty());
    db.close().expect("close");
}

#[test]
fn close_with_open_handles_says_so_and_releases_the_database() {
    let fs = Arc::new(MemFs::new());
    let db = open(&fs);
    for i in 0..100u32 {
        db.put(format!("k{i:03}").as_bytes(), b"v").expect("put");
    }
    let snap = db.snapshot();
    let mut it = db.iter(&shale::ReadOptions::default()).expect("iter");
    it.seek_to_first();
    assert!(it.valid());
    let range = db.prefix(b"k").expect("range");
    let e = db.close().expect_err("handles are open");
    assert!(
        matches!(
            e,
            Error::LiveHandles {
                snapshots: 2,
                iterators: 3
            }
        ),
        "{e}"
    );
    // The handles now fail with Closed, and the database opens again.
    assert!(matches!(snap.get(b"k001"), Err(Error::Closed)));
    assert!(matches!(snap.iter(&Default::default()), Err(Error::Closed)));
    it.next();
    assert!(!it.valid());
    assert!(matches!(it.status(), Err(Error::Closed)));
    let rows: Vec<_> = range.collect();
    assert!(matches!(rows.as_slice(), [Err(Error::Closed)]), "{rows:?}");
    let db = open(&fs);
    assert_eq!(db.get(b"k099").expect("get"), Some(b"v".to_vec()));
    drop((snap, it));
    db.close().expect("a close without open handles");
}

/// Keys `k00000`..: 6 bytes, in order.
fn k(i: u32) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

/// The user key of an internal key as a table's properties record it.
fn user_key(internal: &[u8]) -> &[u8] {
    &internal[..internal.len().saturating_sub(8)]
}

#[test]
fn compact_range_rewrites_the_range_down_to_the_bottom() {
    let fs = Arc::new(MemFs::new());
    let db = open(&fs);
    let mut model = std::collections::BTreeMap::new();
    for round in 0..3u32 {
        for i in 0..3000u32 {
            let v = format!("v{round}-{i}").into_bytes();
            db.put(&k(i), &v).expect("put");
            model.insert(k(i), v);
        }
    }
    db.settle().expect("settle");
    // Deletions and overwrites in [k01000, k01999], some in L0.
    for i in 1000..2000u32 {
        if i % 3 == 0 {
            db.put(&k(i), b"newest").expect("put");
            model.insert(k(i), b"newest".to_vec());
        } else {
            db.delete(&k(i)).expect("delete");
            model.remove(&k(i));
        }
    }
    let snap = db.snapshot();
    let at_snap: Vec<_> = snap
        .range(&k(1000)[..]..&k(1010)[..])
        .expect("range")
        .collect();
    db.compact_range(Some(&k(1000)), Some(&k(1999)))
        .expect("compact_range");
    let rows: std::collections::BTreeMap<Vec<u8>, Vec<u8>> = db
        .range::<&[u8], _>(..)
        .expect("range")
        .map(|r| r.expect("row"))
        .collect();
    assert_eq!(rows, model);
    // The snapshot still reads what it read.
    let again: Vec<_> = snap
        .range(&k(1000)[..]..&k(1010)[..])
        .expect("range")
        .collect();
    assert_eq!(format!("{again:?}"), format!("{at_snap:?}"));
    drop((snap, at_snap, again));
    db.compact_range(Some(&k(1000)), Some(&k(1999)))
        .expect("compact_range");
    // Without the snapshot, the range's tables hold its live keys only, at
    // one level.
    let tables = db.tables().expect("tables");
    let in_range: Vec<_> = tables
        .iter()
        .filter(|t| {
            user_key(&t.properties.largest_key) >= &k(1000)[..]
                && user_key(&t.properties.smallest_key) <= &k(1999)[..]
        })
        .collect();
    assert!(!in_range.is_empty());
    let bottom = in_range.iter().map(|t| t.level).max().expect("level");
    assert!(
        in_range.iter().all(|t| t.level == bottom),
        "{:?}",
        in_range.iter().map(|t| t.level).collect::<Vec<_>>()
    );
    assert!(in_range.iter().all(|t| t.properties.num_deletions == 0));
    // Bad bounds are the caller's bug.
    assert!(matches!(
        db.compact_range(Some(b"b"), Some(b"a")),
        Err(Error::InvalidArgument(_))
    ));
    db.compact_range(None, None).expect("everything");
    db.close().expect("close");
}

#[test]
fn compact_range_runs_beside_writes_and_background_compactions() {
    let fs = Arc::new(MemFs::new());
    let db = Arc::new(open(&fs));
    for i in 0..4000u32 {
        db.put(&k(i), b"first").expect("put");
    }
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || {
            for i in 0..4000u32 {
                db.put(&k(i), format!("second-{i}").as_bytes())
                    .expect("put");
            }
        })
    };
    for _ in 0..5 {
        db.compact_range(Some(&k(500)), Some(&k(3500)))
            .expect("compact_range");
    }
    writer.join().expect("writer");
    db.compact_range(None, None).expect("compact_range");
    for i in (0..4000u32).step_by(97) {
        assert_eq!(
            db.get(&k(i)).expect("get"),
            Some(format!("second-{i}").into_bytes())
        );
    }
    let Ok(db) = Arc::try_unwrap(db) else {
        panic!("the writer is done")
    };
    db.close().expect("close");
}

#[test]
fn stat_is_a_text_table_of_the_levels_and_counters() {
    let fs = Arc::new(MemFs::new());
    let db = open(&fs);
    for i in 0..2000u32 {
        db.put(&k(i), b"value").expect("put");
    }
    db.compact_all().expect("compact");
    assert_eq!(db.get(&k(7)).expect("get"), Some(b"value".to_vec()));
    let text = db.stat().expect("stat");
    let l6 = text
        .lines()
        .find(|l| l.starts_with("L6 "))
        .expect("a row for L6");
    assert!(l6.contains("2000"), "the entries of L6: {l6}\n{text}");
    assert!(text.contains("write amplification"), "{text}");
    assert!(text.contains("gets: 1 (found 1"), "{text}");
    db.close().expect("close");
}

#[test]
fn the_empty_key_is_a_key_in_every_table_format() {
    for version in [1u32, 2, 3] {
        let fs = Arc::new(MemFs::new());
        let options = || {
            Options::default()
                .fs(fs.clone())
                .write_buffer_size(4 << 10)
                .max_background_jobs(1)
                .table_format_version(version)
        };
        let db = Db::open("/db", options()).expect("open");
        db.put(b"", b"empty").expect("put the empty key");
        for i in 0..500u32 {
            db.put(&k(i), b"v").expect("put");
        }
        assert_eq!(db.get(b"").expect("get"), Some(b"empty".to_vec()));
        db.flush().expect("flush");
        assert_eq!(db.get(b"").expect("get"), Some(b"empty".to_vec()));
        db.compact_all().expect("compact");
        assert_eq!(
            db.get(b"").expect("get"),
            Some(b"empty".to_vec()),
            "v{version}"
        );
        let first = db
            .range::<&[u8], _>(..)
            .expect("range")
            .next()
            .expect("a row")
            .expect("row");
        assert_eq!(first, (Vec::new(), b"empty".to_vec()));
        assert_eq!(keys(db.prefix(b"").expect("prefix")).len(), 501);
        let last = db
            .range::<&[u8], _>(..=&b""[..])
            .expect("range")
            .next_back()
            .expect("a row")
            .expect("row");
        assert_eq!(last.0, Vec::<u8>::new());
        db.delete(b"").expect("delete");
        db.compact_all().expect("compact");
        assert_eq!(db.get(b"").expect("get"), None);
        db.close().expect("close");
        let db = Db::open("/db", options()).expect("reopen");
        assert_eq!(db.get(b"").expect("get"), None);
        assert_eq!(db.get(&k(499)).expect("get"), Some(b"v".to_vec()));
        db.close().expect("close");
    }
}

#[test]
fn a_pinned_get_is_a_slice_of_the_cached_block_and_outlives_eviction() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open(
        "/db",
        Options::default()
            .fs(fs.clone())
            .block_cache_bytes(16 << 10),
    )
    .expect("open");
    for i in 0..2000u32 {
        db.put(
            format!("key{i:05}").as_bytes(),
            format!("value{i}").as_bytes(),
        )
        .expect("put");
    }
    db.put(b"fresh", b"in the memtable").expect("put");
    let memtable = db.get_pinned(b"fresh").expect("get").expect("found");
    assert!(!memtable.is_pinned(), "a memtable value is a copy");
    assert_eq!(&*memtable, b"in the memtable");
    db.flush().expect("flush");
    let v = db.get_pinned(b"key00042").expect("get").expect("found");
    assert!(v.is_pinned(), "a table value is not copied");
    assert_eq!(&*v, b"value42");
    assert_eq!(
        db.get(b"key00042").expect("get").as_deref(),
        Some(&b"value42"[..])
    );
    assert_eq!(db.get_pinned(b"nope").expect("get"), None);
    // Reading every other key evicts the block from the small cache: the
    // pinned value keeps it alive.
    for i in 0..2000u32 {
        db.get(format!("key{i:05}").as_bytes()).expect("get");
    }
    assert_eq!(&*v, b"value42");
    let snap = db.snapshot();
    db.delete(b"key00042").expect("delete");
    assert_eq!(db.get_pinned(b"key00042").expect("get"), None);
    let old = snap
        .get_pinned(b"key00042")
        .expect("get")
        .expect("the snapshot sees it");
    assert_eq!(old.into_vec(), b"value42".to_vec());
    drop(snap);
    db.close().expect("close");
    assert_eq!(&*v, b"value42", "a pinned value outlives its database");
}

#[test]
fn sync_wal_makes_writes_durable_without_a_flush() {
    use shale::env::CrashFs;
    let fs = Arc::new(CrashFs::new());
    let opts = || Options::default().fs(fs.clone());
    let db = Db::open("/db", opts()).expect("open");
    db.put(b"a", b"1").expect("put");
    db.delete_range(b"x", b"z").expect("delete_range");
    db.sync_wal().expect("sync");
    assert_eq!(db.metrics().flushes, 0, "no flush");
    db.put(b"b", b"2").expect("put, not synced");
    fs.crash();
    drop(db);
    fs.restart();
    let db = Db::open("/db", opts()).expect("reopen");
    assert_eq!(db.get(b"a").expect("get"), Some(b"1".to_vec()), "synced");
    assert_eq!(
        db.get(b"b").expect("get"),
        None,
        "written after the sync, lost in the crash"
    );
}

#[test]
fn a_failed_sync_wal_poisons_the_database() {
    use shale::env::{FaultFs, FaultRule, OpKind};
    let mem = Arc::new(MemFs::new());
    let fault = FaultFs::new(mem.clone());
    let db = Db::open("/db", Options::default().fs(fault.clone())).expect("open");
    db.put(b"a", b"1").expect("put");
    fault.inject(FaultRule::io(OpKind::SyncAppend, 0));
    assert!(db.sync_wal().is_err(), "the failed sync is reported");
    fault.clear();
    assert!(matches!(db.sync_wal(), Err(Error::Poisoned { .. })));
    assert!(matches!(db.put(b"b", b"2"), Err(Error::Poisoned { .. })));
}

#[test]
fn a_synced_empty_write_makes_earlier_writes_durable() {
    use shale::env::CrashFs;
    use shale::{WriteBatch, WriteOptions};
    let fs = Arc::new(CrashFs::new());
    let opts = || Options::default().fs(fs.clone());
    let db = Db::open("/db", opts()).expect("open");
    db.put(b"a", b"1").expect("put, not synced");
    let mut b = WriteBatch::new();
    b.delete_range(b"k", b"k"); // an empty range: no op
    assert!(b.is_empty());
    db.write(b, &WriteOptions::SYNC)
        .expect("synced empty write");
    fs.crash();
    drop(db);
    fs.restart();
    let db = Db::open("/db", opts()).expect("reopen");
    assert_eq!(db.get(b"a").expect("get"), Some(b"1".to_vec()));
}
