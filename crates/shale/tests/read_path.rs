//! The Get path reads exactly what the study describes, and the counters add up.

use shale_testkit as common;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use shale::env::{MemFs, RandomAccessFile};
use shale::{BlockKind, Db, FilterLevels, FilterPolicy, Metrics, Options};

fn key(i: u64) -> Vec<u8> {
    // Hash-like keys spread over the key space, as in the study.
    let mut rng = common::Rng::new(i);
    rng.bytes(32)
}

/// Small memtables, a big cache, and no automatic compaction: flushed tables
/// stay in L0 (filtered) until a test compacts them into L6 (unfiltered).
fn options(fs: Arc<MemFs>) -> Options {
    Options::default()
        .fs(fs)
        .write_buffer_size(256 << 10)
        .block_cache_bytes(64 << 20)
        .l0_compaction_trigger(Some(1000))
        .l0_slowdown_writes_trigger(1000)
        .l0_stop_writes_trigger(1000)
}

fn load(db: &Db, n: u64) {
    for i in 0..n {
        db.put(&key(i), &[i as u8; 110]).expect("put");
    }
    db.flush().expect("flush");
}

fn accesses(m: &Metrics, kind: BlockKind) -> u64 {
    let b = m.block(kind);
    b.cache_hits + b.cache_misses
}

#[test]
fn filtered_out_get_reads_no_index_or_data_block() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs)).expect("open");
    load(&db, 5000);
    // Warm the table cache so table opening does not blur the picture.
    assert!(db.get(&key(1)).expect("get").is_some());
    let mut checked = 0;
    for j in 0..200u64 {
        let before = db.metrics();
        assert_eq!(db.get(&key(1_000_000 + j)).expect("get"), None);
        let d = db.metrics().delta(&before);
        assert_eq!(d.gets, 1);
        if d.filter_positives == 0 {
            assert!(d.filter_negatives >= 1);
            // Version 3 counts the top-level filter index as a top-level
            // index block: one per table probed, and no other.
            assert_eq!(
                accesses(&d, BlockKind::TopIndex),
                d.filter_negatives,
                "top index read after a negative filter"
            );
            assert_eq!(
                accesses(&d, BlockKind::IndexPartition),
                0,
                "index read after a negative filter"
            );
            assert_eq!(
                accesses(&d, BlockKind::Data),
                0,
                "data read after a negative filter"
            );
            checked += 1;
        }
    }
    assert!(
        checked > 150,
        "almost every absent key is filtered out, got {checked}/200"
    );
}

#[test]
fn last_level_filter_is_never_read_by_default() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs)).expect("open");
    load(&db, 5000);
    db.compact_all().expect("compact");
    let summary = db.summary().expect("summary");
    assert!(summary.levels[6].tables > 0);
    assert_eq!(
        summary.levels[6].filter_bytes, 0,
        "the last level is written without filters"
    );
    let before = db.metrics();
    for i in (0..5000).step_by(7) {
        assert!(db.get(&key(i)).expect("get").is_some());
    }
    for j in 0..100 {
        assert_eq!(db.get(&key(2_000_000 + j)).expect("get"), None);
    }
    let d = db.metrics().delta(&before);
    assert_eq!(accesses(&d, BlockKind::Filter), 0);
    assert_eq!(d.filter_positives + d.filter_negatives, 0);
}

#[test]
fn all_levels_policy_filters_the_last_level() {
    let fs = Arc::new(MemFs::new());
    let opts = options(fs).filter_policy(
        FilterPolicy::default()
            .bits_per_key(10)
            .levels(FilterLevels::All),
    );
    let db = Db::open("/db", opts).expect("open");
    load(&db, 3000);
    db.compact_all().expect("compact");
    assert!(db.summary().expect("summary").levels[6].filter_bytes > 0);
    let before = db.metrics();
    for j in 0..100 {
        assert_eq!(db.get(&key(3_000_000 + j)).expect("get"), None);
    }
    let d = db.metrics().delta(&before);
    assert!(
        d.filter_negatives >= 90,
        "negatives: {}",
        d.filter_negatives
    );
    assert!(accesses(&d, BlockKind::Data) <= 10);
}

#[test]
fn a_get_in_the_last_level_reads_one_block_of_each_index_kind_and_one_data_block() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs)).expect("open");
    load(&db, 20_000);
    db.compact_all().expect("compact");
    let before = db.metrics();
    let n = 500;
    for i in 0..n {
        assert_eq!(
            db.get(&key(i * 37 % 20_000)).expect("get"),
            Some(vec![(i * 37 % 20_000) as u8; 110])
        );
    }
    let d = db.metrics().delta(&before);
    assert_eq!(d.gets, n);
    assert_eq!(d.gets_found, n);
    assert_eq!(
        d.gets_table_hits,
        [0, 0, 0, 0, 0, 0, n],
        "all answered by L6"
    );
    assert_eq!(accesses(&d, BlockKind::TopIndex), n);
    assert_eq!(accesses(&d, BlockKind::IndexPartition), n);
    // A locator's code can leave a key next to a block boundary ambiguous:
    // about one Get in 500 then reads the block before the key's.
    let data = accesses(&d, BlockKind::Data);
    assert!(
        n <= data && data <= n + n / 100,
        "{data} data blocks for {n} Gets"
    );
    assert_eq!(accesses(&d, BlockKind::Filter), 0);
}

#[test]
fn physical_reads_equal_cache_misses_when_caches_are_cold() {
    let fs = Arc::new(MemFs::new());
    {
        let db = Db::open("/db", options(fs.clone())).expect("open");
        load(&db, 20_000);
        db.close().expect("close");
    }
    // A fresh open: empty block cache and table cache.
    let db = Db::open("/db", options(fs)).expect("reopen");
    let before = db.metrics();
    for i in 0..300 {
        assert!(db.get(&key(i * 11)).expect("get").is_some());
    }
    let d = db.metrics().delta(&before);
    for kind in [
        BlockKind::Filter,
        BlockKind::TopIndex,
        BlockKind::IndexPartition,
        BlockKind::Data,
    ] {
        let b = d.block(kind);
        assert_eq!(b.physical_reads, b.cache_misses, "{kind:?}");
        assert!(b.bytes_read >= b.physical_reads, "{kind:?}");
    }
    // Table opens read each table's footer and properties once.
    let opens = d.table_cache_misses;
    assert!(opens > 0);
    assert_eq!(d.block(BlockKind::Footer).physical_reads, opens);
    assert_eq!(d.block(BlockKind::Properties).physical_reads, opens);
    assert_eq!(d.physical_reads(), d.cache_misses() + 2 * opens);
    assert!(accesses(&d, BlockKind::Data) >= 300);
}

#[test]
fn pinned_metadata_is_charged_to_the_block_cache() {
    let fs = Arc::new(MemFs::new());
    let opts = options(fs).pin_table_metadata(true);
    let db = Db::open("/db", opts).expect("open");
    load(&db, 20_000);
    let before = db.metrics();
    for i in 0..200 {
        assert!(db.get(&key(i)).expect("get").is_some());
    }
    let m = db.metrics();
    let d = m.delta(&before);
    assert!(m.block_cache_pinned > 0);
    assert!(m.block_cache_usage >= m.block_cache_pinned);
    assert_eq!(
        d.block(BlockKind::TopIndex).cache_misses + d.block(BlockKind::TopIndex).cache_hits,
        0
    );
    // Version 3 pins the top-level filter index, not the partitions: each
    // probe reads at most one of them through the cache.
    let probes = d.filter_positives + d.filter_negatives;
    let partitions = accesses(&d, BlockKind::Filter);
    assert!(
        probes > 0 && partitions <= probes,
        "{partitions} for {probes}"
    );
}

/// A table file that logs every positional read: (path, offset, length).
struct LoggedFile {
    inner: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    reads: Arc<Mutex<Vec<(PathBuf, u64, usize)>>>,
}

impl RandomAccessFile for LoggedFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        if let Ok(mut r) = self.reads.lock() {
            r.push((self.path.clone(), offset, buf.len()));
        }
        self.inner.read_exact_at(offset, buf)
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

/// The data-block reads (reads below each table's data region end) that
/// `reads` of Gets made: (offset, length).
fn data_reads(db: &Db, reads: &[(PathBuf, u64, usize)]) -> Vec<(u64, usize)> {
    let tables = db.tables().expect("tables");
    reads
        .iter()
        .filter(|(path, offset, _)| {
            tables.iter().any(|t| {
                let p = &t.properties;
                // Version 3 counts the padding inside `data_bytes`.
                let end = if p.format_version >= 3 {
                    p.data_bytes
                } else {
                    p.data_bytes + p.data_padding_bytes
                };
                path.ends_with(t.path.file_name().unwrap_or_default()) && *offset < end
            })
        })
        .map(|&(_, offset, len)| (offset, len))
        .collect()
}

/// Loads hash keys into L6 through a read-logging file system, then runs Gets
/// with a cache too small for data blocks; returns the data reads the Gets
/// made and the data-block physical reads they counted.
fn gets_through_the_seam(table_format_version: u32) -> (Vec<(u64, usize)>, u64) {
    let reads = Arc::new(Mutex::new(Vec::new()));
    let log = reads.clone();
    let fs = Arc::new(common::WrapReads {
        inner: MemFs::new(),
        wrap: move |path: &Path, _, inner| -> Arc<dyn RandomAccessFile> {
            Arc::new(LoggedFile {
                inner,
                path: path.to_path_buf(),
                reads: log.clone(),
            })
        },
    });
    let opts = Options::default()
        .fs(fs)
        .write_buffer_size(256 << 10)
        .table_format_version(table_format_version)
        // Room for the index, not for the data blocks.
        .block_cache_bytes(256 << 10)
        .pin_table_metadata(true);
    let db = Db::open("/db", opts).expect("open");
    for i in 0..20_000u64 {
        db.put(&key(i), &[i as u8; 110]).expect("put");
    }
    db.compact_all().expect("compact");
    assert!(db.tables().expect("tables").iter().all(|t| t.level == 6));
    for i in 0..200u64 {
        db.get(&key(i * 97))
            .expect("warm the table cache and indexes");
    }
    reads.lock().expect("log").clear();
    let before = db.metrics();
    for i in 0..500u64 {
        assert!(db.get(&key(i * 31)).expect("get").is_some());
    }
    let d = db.metrics().delta(&before);
    let log = reads.lock().expect("log").clone();
    (
        data_reads(&db, &log),
        d.block(BlockKind::Data).physical_reads,
    )
}

#[test]
fn a_version_2_data_block_is_read_as_exactly_one_page() {
    let (reads, counted) = gets_through_the_seam(2);
    assert!(
        counted >= 400,
        "the cache kept data blocks: {counted} reads"
    );
    assert_eq!(
        reads.len() as u64,
        counted,
        "one file read per data block read"
    );
    for (offset, len) in &reads {
        assert_eq!(
            offset % 4096,
            0,
            "data read at {offset} is not page-aligned"
        );
        assert!(
            *len <= 4096,
            "data read of {len} bytes at {offset} spans pages"
        );
    }
    // Pages are well filled: a 4 KiB block read takes most of its page.
    let mean = reads.iter().map(|r| r.1).sum::<usize>() / reads.len();
    assert!(mean > 3900, "mean data read {mean} bytes");

    // The same Gets on version-1 tables straddle pages, so the check above can
    // fail.
    let (v1, _) = gets_through_the_seam(1);
    let straddling = v1
        .iter()
        .filter(|(offset, len)| offset / 4096 != (offset + *len as u64 - 1) / 4096)
        .count();
    assert!(straddling * 2 > v1.len(), "{straddling} of {}", v1.len());
}

#[test]
fn a_version_3_data_block_is_read_as_exactly_one_page() {
    let (reads, counted) = gets_through_the_seam(3);
    assert!(
        counted >= 400,
        "the cache kept data blocks: {counted} reads"
    );
    assert_eq!(
        reads.len() as u64,
        counted,
        "one file read per data block read"
    );
    for (offset, len) in &reads {
        assert_eq!(
            (offset % 4096, *len),
            (0, 4096),
            "data read of {len} bytes at {offset} is not one page"
        );
    }
}

#[test]
fn filter_bits_per_key_can_be_set_per_level() {
    let fs = Arc::new(MemFs::new());
    let mut policy = FilterPolicy::default();
    policy.level_bits_per_key[0] = Some(14);
    let opts = options(fs).filter_policy(policy);
    let db = Db::open("/db", opts).expect("open");
    load(&db, 3000);
    let tables = db.tables().expect("tables");
    assert!(!tables.is_empty());
    for t in &tables {
        assert_eq!(t.level, 0);
        assert_eq!(t.properties.filter_bits_per_key, 14);
    }
    let per_key = |db: &Db| {
        let s = db.summary().expect("summary");
        s.total().filter_bytes as f64 * 8.0 / s.total().entries as f64
    };
    let wide = per_key(&db);
    db.compact_all().expect("compact");
    // L6 takes the policy's default (none on the last level); a level in
    // between would take `bits_per_key`.
    assert_eq!(per_key(&db), 0.0);
    assert!(wide > 13.0, "{wide} bits a key at 14");
}

/// Tables of format versions 1, 2 and 3 live in one database: each version's
/// flush is read back with the others', scans merge them, and a compaction
/// rewrites them all in the version it writes.
#[test]
fn tables_of_every_format_version_live_side_by_side() {
    let fs = Arc::new(MemFs::new());
    let mut expected = std::collections::BTreeMap::new();
    for version in [1u32, 2, 3] {
        let opts = options(fs.clone()).table_format_version(version);
        let db = Db::open("/db", opts).expect("open");
        for i in 0..3000u64 {
            // Each version overwrites a third of the keys and adds its own.
            let k = key(i + u64::from(version) * 1000);
            let v = vec![version as u8; 50 + (i % 60) as usize];
            db.put(&k, &v).expect("put");
            expected.insert(k, v);
        }
        db.flush().expect("flush");
        db.close().expect("close");
    }
    let db = Db::open("/db", options(fs)).expect("open");
    let versions: std::collections::BTreeSet<u32> = db
        .tables()
        .expect("tables")
        .iter()
        .map(|t| t.properties.format_version)
        .collect();
    assert_eq!(versions, [1, 2, 3].into_iter().collect());
    let check = |db: &Db| {
        for (k, v) in &expected {
            assert_eq!(db.get(k).expect("get").as_ref(), Some(v));
        }
        let rows: Vec<(Vec<u8>, Vec<u8>)> = db
            .range::<&[u8], _>(..)
            .expect("range")
            .collect::<shale::Result<_>>()
            .expect("scan");
        let want: Vec<(Vec<u8>, Vec<u8>)> = expected
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert!(rows == want, "scan differs from the model");
    };
    check(&db);
    db.compact_all().expect("compact");
    assert!(db
        .tables()
        .expect("tables")
        .iter()
        .all(|t| t.properties.format_version == shale::tools::TABLE_FORMAT_VERSION));
    check(&db);
}

#[test]
fn gets_are_counted_where_they_end() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs)).expect("open");
    load(&db, 2_000);
    db.compact_all().expect("compact");
    // A deletion flushed to L0 and an overwrite left in the memtable.
    db.delete(&key(1)).expect("delete");
    db.flush().expect("flush");
    db.put(&key(2), b"new").expect("put");
    let before = db.metrics();
    assert_eq!(db.get(&key(1)).expect("get"), None, "deleted in L0");
    assert_eq!(db.get(&key(2)).expect("get"), Some(b"new".to_vec()));
    assert!(db.get(&key(3)).expect("get").is_some(), "in L6");
    assert_eq!(db.get(&key(9_999_999)).expect("get"), None, "nowhere");
    // A key next to one in L6, so within the L6 table's range: the table
    // (which has no filter) is searched and lacks it.
    let mut beside = key(3);
    if let Some(last) = beside.last_mut() {
        *last ^= 1;
    }
    assert_eq!(
        db.get(&beside).expect("get"),
        None,
        "nowhere, inside L6's range"
    );
    let d = db.metrics().delta(&before);
    assert_eq!(d.gets, 5);
    assert_eq!(d.gets_memtable_hits, 1);
    assert_eq!(d.gets_table_hits, [1, 0, 0, 0, 0, 0, 1]);
    // key(9_999_999) may fall outside L6's range (no table is searched) or
    // inside it (one miss); `beside` is always one.
    let l6 = d.gets_table_misses[6];
    assert!((1..=2).contains(&l6), "{l6}");
    assert_eq!(
        d.gets_table_misses[..6],
        [0; 6],
        "the L0 table holds key(1) only"
    );
}
