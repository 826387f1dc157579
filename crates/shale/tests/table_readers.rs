//! Open table readers: held with their tables' metadata up to three quarters
//! of `max_open_files`, the rest in the table cache's LRU list, never more
//! than `max_open_files` open at once, and closed when their tables go. A
//! compaction reads its inputs ahead through handles of its own.

use shale_testkit as common;

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::Opened;
use shale::env::{MemFs, RandomAccessFile};
use shale::{Db, Options};

/// A file counted as open while it lives.
struct Counted {
    inner: Arc<dyn RandomAccessFile>,
    open: Arc<AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::SeqCst);
    }
}

impl RandomAccessFile for Counted {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.inner.read_exact_at(offset, buf)
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

fn key(table: u64, i: u64) -> Vec<u8> {
    format!("t{table:03}k{i:04}").into_bytes()
}

/// A database of `tables` L0 tables of 50 keys each (no compaction until the
/// test asks), on a file system counting open handles.
fn l0_tables(tables: u64, max_open_files: usize) -> (Db, Arc<AtomicUsize>) {
    let open = Arc::new(AtomicUsize::new(0));
    let count = open.clone();
    let fs = Arc::new(common::WrapReads {
        inner: MemFs::new(),
        wrap: move |_: &Path, _, inner| -> Arc<dyn RandomAccessFile> {
            count.fetch_add(1, Ordering::SeqCst);
            Arc::new(Counted {
                inner,
                open: count.clone(),
            })
        },
    });
    let db = Db::open(
        "/db",
        Options::default()
            .fs(fs)
            .max_open_files(max_open_files)
            .l0_compaction_trigger(Some(1000))
            .l0_slowdown_writes_trigger(1000)
            .l0_stop_writes_trigger(1000),
    )
    .expect("open");
    for t in 0..tables {
        for i in 0..50 {
            db.put(&key(t, i), b"v").expect("put");
        }
        db.flush().expect("flush");
    }
    (db, open)
}

/// Reads one key of every table, checking the open-handle bound after each.
fn read_all(db: &Db, tables: u64, open: &AtomicUsize, bound: usize) {
    for t in 0..tables {
        assert_eq!(db.get(&key(t, 7)).expect("get").as_deref(), Some(&b"v"[..]));
        let now = open.load(Ordering::SeqCst);
        assert!(now <= bound, "{now} table files open, bound {bound}");
    }
}

#[test]
fn readers_are_held_up_to_three_quarters_of_the_budget_and_the_rest_cycle() {
    // Budget 80: a reserve of 20 for the LRU list, 60 held.
    let (db, open) = l0_tables(100, 80);
    assert_eq!(db.metrics().l0_files, 100);
    for _ in 0..3 {
        read_all(&db, 100, &open, 80);
    }
    let m = db.metrics();
    assert_eq!(m.table_readers_held, 60);
    // A Get of a held table opens nothing.
    let before = db.metrics();
    read_all(&db, 100, &open, 80);
    let d = db.metrics().delta(&before);
    assert!(d.table_cache_misses > 0, "40 tables share 20 LRU slots");
    assert!(d.table_cache_misses <= 40, "{} opens", d.table_cache_misses);
    assert!(d.table_cache_hits >= 60, "{} hits", d.table_cache_hits);
}

#[test]
fn a_small_budget_holds_nothing_and_stays_within_it() {
    // Budget 10: all of it is the LRU list's reserve.
    let (db, open) = l0_tables(30, 10);
    read_all(&db, 30, &open, 10);
    assert_eq!(db.metrics().table_readers_held, 0);
}

#[test]
fn held_readers_close_when_their_tables_are_compacted_away() {
    let (db, open) = l0_tables(20, 1000);
    read_all(&db, 20, &open, 20);
    assert_eq!(db.metrics().table_readers_held, 20);
    let before = db.metrics();
    read_all(&db, 20, &open, 20);
    assert_eq!(db.metrics().delta(&before).table_cache_misses, 0);

    db.compact_all().expect("compact");
    let tables = db.tables().expect("tables").len();
    assert!(tables < 20, "{tables} tables after compaction");
    read_all(&db, 20, &open, tables);
    let m = db.metrics();
    assert_eq!(m.table_readers_held, tables as u64);
    assert_eq!(
        open.load(Ordering::SeqCst),
        tables,
        "compacted tables closed"
    );
    drop(db);
    assert_eq!(
        open.load(Ordering::SeqCst),
        0,
        "closing the database closes every table"
    );
}

/// A file whose reads are logged as (how it was opened, bytes read).
struct Logged {
    inner: Arc<dyn RandomAccessFile>,
    how: Opened,
    log: Arc<Mutex<Vec<(Opened, usize)>>>,
}

impl RandomAccessFile for Logged {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.log.lock().expect("log").push((self.how, buf.len()));
        self.inner.read_exact_at(offset, buf)
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

#[test]
fn a_compaction_reads_its_inputs_ahead_through_handles_of_its_own() {
    const READAHEAD: usize = 64 << 10;
    for readahead in [0, READAHEAD] {
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        let fs = Arc::new(common::WrapReads {
            inner: MemFs::new(),
            wrap: move |_: &Path, how, inner| -> Arc<dyn RandomAccessFile> {
                Arc::new(Logged {
                    inner,
                    how,
                    log: sink.clone(),
                })
            },
        });
        let db = Db::open(
            "/db",
            Options::default()
                .fs(fs)
                .compaction_readahead_bytes(readahead as u64)
                .l0_compaction_trigger(Some(1000))
                .l0_slowdown_writes_trigger(1000)
                .l0_stop_writes_trigger(1000),
        )
        .expect("open");
        let tables = 8u64;
        for t in 0..tables {
            for i in 0..1000 {
                db.put(&key(t, i), &[t as u8; 100]).expect("put");
            }
            db.flush().expect("flush");
        }
        let input_bytes: u64 = db
            .tables()
            .expect("tables")
            .iter()
            .map(|t| t.file_size)
            .sum();
        log.lock().expect("log").clear();
        db.compact_all().expect("compact");
        let reads = std::mem::take(&mut *log.lock().expect("log"));
        let scans: Vec<usize> = reads
            .iter()
            .filter(|(how, _)| *how == Opened::Scan)
            .map(|&(_, n)| n)
            .collect();
        if readahead == 0 {
            assert!(
                scans.is_empty(),
                "{} reads through scan handles",
                scans.len()
            );
        } else {
            // Each input's data blocks (about 27 of 4 KiB) in two reads of at
            // most the read-ahead, not one read per block.
            let scanned: usize = scans.iter().sum();
            assert!(
                scanned as u64 >= input_bytes * 9 / 10,
                "{scanned} of {input_bytes} input bytes read through scan handles"
            );
            assert!(scans.iter().all(|&n| n <= READAHEAD), "{scans:?}");
            assert!(
                scans.len() as u64 <= 2 * tables,
                "{} scan reads for {tables} tables: {scans:?}",
                scans.len()
            );
        }
        for t in 0..tables {
            for i in (0..1000).step_by(97) {
                assert_eq!(db.get(&key(t, i)).expect("get"), Some(vec![t as u8; 100]));
            }
        }
    }
}

/// Tables read through memory mappings (`PosixOptions::mmap_reads`) are
/// checked as `pread`s are: a damaged data block is `Corruption` naming the
/// table and the block, never a wrong value, and the other blocks still read.
#[test]
fn a_damaged_block_read_through_a_mapping_is_corruption() {
    use shale::env::{PosixFs, PosixOptions};
    use shale::Error;
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = || {
        Options::default()
            .fs(Arc::new(PosixFs::new(PosixOptions {
                mmap_reads: true,
                ..PosixOptions::default()
            })))
            .block_cache_bytes(0)
    };
    let value = |i: u64| format!("value {i} {}", "x".repeat(40)).into_bytes();
    let db = Db::open(dir.path(), opts()).expect("open");
    for i in 0..2000 {
        db.put(&key(0, i), &value(i)).expect("put");
    }
    db.flush().expect("flush");
    db.close().expect("close");
    let tables: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    assert_eq!(tables.len(), 1, "{tables:?}");
    let mut bytes = std::fs::read(&tables[0]).expect("read table");
    // Inside the first data block (blocks start at offset 0).
    bytes[100] ^= 0x5a;
    std::fs::write(&tables[0], &bytes).expect("damage");
    let db = Db::open(dir.path(), opts()).expect("reopen");
    let mut damaged = 0;
    for i in 0..2000 {
        match db.get(&key(0, i)) {
            Ok(v) => assert_eq!(v, Some(value(i)), "key {i}"),
            Err(Error::Corruption { file, offset, .. }) => {
                assert_eq!(file, tables[0], "key {i}");
                assert_eq!(offset, 0, "key {i}: the first block");
                damaged += 1;
            }
            Err(e) => panic!("key {i}: {e}"),
        }
    }
    assert!(
        (1..2000).contains(&damaged),
        "{damaged} keys in the damaged block"
    );
    db.close().expect("close");
}
