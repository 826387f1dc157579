//! The salvage sweep, the acceptance check of "salvage must keep every
//! undamaged block": a database of 300,000 keys (32-byte hash-like keys,
//! 110-byte values) in tables on two levels, with overwrites and deletions
//! in an L0 table and in the write-ahead log only. For one flipped byte at a
//! time, in a copy: `Db::repair`, reopen, and compare every key with a
//! `BTreeMap` model:
//!
//! - **0 wrong values**: every key returned has the model's value;
//! - **0 resurrections**: no key the model says is deleted is returned;
//! - **every missing key is accounted for**: it was in the damaged data
//!   block or log record, or the report lists it as quarantined;
//! - **recovery of at least 99% of the keys** after a flip in a table.
//!
//! The default run flips a fixed sample that covers every kind of region:
//! footers, properties, top-level indexes, locators, filter partitions and
//! filter indexes, data blocks of both levels, and log records (a value, a
//! key, a length and a checksum field, the middle fragment of a record
//! spanning blocks). `SHALE_LONG_TESTS=1` adds many more: 400 random
//! positions over the tables (by size), 200 over the log, and one in every
//! non-data block and footer of every table (`SHALE_SALVAGE_FLIPS=N` sets
//! the 400). A summary line per region is printed (`--nocapture`).

use shale_testkit as common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use common::{batch_keys, log_records, Rng};
use shale::env::{FileSystem, MemFs, WriteLifetime};
use shale::{Db, Options, TableLayout, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const DIR: &str = "/db";
const KEYS: u64 = 300_000;

fn options(fs: Arc<MemFs>) -> Options {
    Options::default()
        .fs(fs)
        .write_buffer_size(8 << 20)
        .max_background_jobs(2)
}

/// Key `i`: 32 bytes of a 64-bit mix of `i`, as random as a keccak256 key.
fn key(i: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    let mut rng = Rng::new(i.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ 0x5a17);
    for _ in 0..4 {
        out.extend_from_slice(&rng.next_u64().to_be_bytes());
    }
    out
}

/// The value of key `i` written in `round`: 110 bytes.
fn value(i: u64, round: u64) -> Vec<u8> {
    let mut v = format!("{i:012}:{round:03}:").into_bytes();
    let mut rng = Rng::new(i ^ (round << 40));
    while v.len() < 110 {
        v.push(b'a' + (rng.next_u64() % 26) as u8);
    }
    v
}

struct Built {
    fs: Arc<MemFs>,
    model: Model,
    /// Keys whose last write was a deletion.
    deleted: BTreeSet<Vec<u8>>,
}

/// The database: 300,000 keys, 200,000 of them compacted into L6 and
/// 100,000 flushed on top (L0 tables, below the compaction trigger); then
/// keys 0..6,000 overwritten and 6,000..9,000 deleted, flushed to another
/// L0 table; then in the log only, batches of 1 to 350 operations
/// overwriting 9,000..11,000 and 0..1,000 again, deleting 11,000..12,000 and
/// 3,000..3,500, and adding 1,000 new keys. Prints the tables per level.
fn build() -> Built {
    let fs = Arc::new(MemFs::new());
    let db = Db::open(DIR, options(fs.clone())).expect("open");
    let mut model = Model::new();
    let mut deleted = BTreeSet::new();
    let write = |db: &Db,
                 model: &mut Model,
                 deleted: &mut BTreeSet<Vec<u8>>,
                 ops: &[(u64, Option<u64>)]| {
        let mut b = WriteBatch::new();
        for &(i, round) in ops {
            let k = key(i);
            match round {
                Some(r) => {
                    let v = value(i, r);
                    b.put(&k, &v);
                    deleted.remove(&k);
                    model.insert(k, v);
                }
                None => {
                    b.delete(&k);
                    model.remove(&k);
                    deleted.insert(k);
                }
            }
        }
        db.write(b, &WriteOptions::default()).expect("write");
    };
    let puts = |range: std::ops::Range<u64>, round: u64| -> Vec<(u64, Option<u64>)> {
        range.map(|i| (i, Some(round))).collect()
    };
    let dels = |range: std::ops::Range<u64>| -> Vec<(u64, Option<u64>)> {
        range.map(|i| (i, None)).collect()
    };
    for chunk in puts(0..200_000, 0).chunks(1000) {
        write(&db, &mut model, &mut deleted, chunk);
    }
    db.compact_all().expect("compact");
    for chunk in puts(200_000..KEYS, 0).chunks(1000) {
        write(&db, &mut model, &mut deleted, chunk);
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("compactions");
    for chunk in puts(0..6000, 1).chunks(1000) {
        write(&db, &mut model, &mut deleted, chunk);
    }
    for chunk in dels(6000..9000).chunks(1000) {
        write(&db, &mut model, &mut deleted, chunk);
    }
    db.flush().expect("flush");
    db.wait_for_compactions().expect("compactions");
    // The log only: batches of mixed sizes (350 operations span log blocks).
    let mut ops = puts(9000..11_000, 2);
    ops.extend(puts(0..1000, 2));
    ops.extend(dels(11_000..12_000));
    ops.extend(dels(3000..3500));
    ops.extend(puts(KEYS..KEYS + 1000, 0));
    let mut rest = &ops[..];
    let sizes = [1, 10, 100, 350, 1, 3];
    let mut s = 0;
    while !rest.is_empty() {
        let n = sizes[s % sizes.len()].min(rest.len());
        s += 1;
        let (batch, tail) = rest.split_at(n);
        write(&db, &mut model, &mut deleted, batch);
        rest = tail;
    }
    let levels: Vec<usize> = db
        .tables()
        .expect("tables")
        .iter()
        .map(|t| t.level)
        .collect();
    assert!(levels.contains(&0), "an L0 table: {levels:?}");
    assert!(levels.iter().any(|&l| l > 0), "tables below L0: {levels:?}");
    let mut per_level = [0usize; shale::NUM_LEVELS];
    for &l in &levels {
        per_level[l] += 1;
    }
    eprintln!("salvage sweep: tables per level {per_level:?}");
    db.close().expect("close");
    Built { fs, model, deleted }
}

fn path(name: &str) -> PathBuf {
    Path::new(DIR).join(name)
}

fn copy_with_flip(src: &MemFs, name: &str, offset: u64, xor: u8) -> Arc<MemFs> {
    let dst = Arc::new(MemFs::new());
    dst.create_dir_all(Path::new(DIR)).expect("mkdir");
    for n in src.list(Path::new(DIR)).expect("list") {
        let p = path(&n);
        let Ok(mut data) = src.read_all(&p) else {
            continue;
        };
        if n == name {
            data[offset as usize] ^= xor;
        }
        let mut w = dst
            .create_object(&p, WriteLifetime::NotSet)
            .expect("create");
        w.write(&data).expect("write");
        w.finish().expect("finish");
    }
    dst
}

fn layout(fs: &MemFs, name: &str) -> TableLayout {
    let p = path(name);
    shale::inspect_table(fs.open_random(&p).expect("open"), p).expect("layout")
}

/// The user keys of the format-3 data block (uncompressed) at `offset`,
/// `pages` bytes long: the block's tail gives its contents' length; the
/// contents are prefix-compressed entries `shared unshared value_len
/// key_delta value`, then the restart array and its count.
fn block_user_keys(file: &[u8], offset: usize, len: usize) -> Vec<Vec<u8>> {
    let end = offset + len;
    let tail = &file[end - 9..end];
    assert_eq!(tail[4], 0, "an uncompressed block");
    let n = u32::from_le_bytes(tail[..4].try_into().expect("4 bytes")) as usize;
    let contents = &file[offset..offset + n];
    let restarts = u32::from_le_bytes(contents[n - 4..].try_into().expect("4 bytes")) as usize;
    let entries_end = n - 4 - 4 * restarts;
    let mut p = 0;
    let varint = |p: &mut usize| {
        let (mut v, mut shift) = (0usize, 0);
        loop {
            let b = contents[*p];
            *p += 1;
            v |= ((b & 0x7f) as usize) << shift;
            if b < 0x80 {
                return v;
            }
            shift += 7;
        }
    };
    let mut last: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    while p < entries_end {
        let shared = varint(&mut p);
        let unshared = varint(&mut p);
        let vlen = varint(&mut p);
        last.truncate(shared);
        last.extend_from_slice(&contents[p..p + unshared]);
        p += unshared + vlen;
        out.push(last[..last.len() - 8].to_vec());
    }
    out
}

/// One byte to flip, and the keys whose newest version may be lost with it.
struct Flip {
    region: String,
    name: String,
    offset: u64,
    /// Keys of the damaged data block or log record (none for metadata).
    unit_keys: BTreeSet<Vec<u8>>,
    table: bool,
}

/// Where a byte of a table lies: its block's kind and, for a data block,
/// its keys.
fn table_flip(fs: &MemFs, name: &str, l: &TableLayout, offset: u64) -> Flip {
    let file = fs.read_all(&path(name)).expect("read");
    let footer = l.file_size - 64;
    // Paged blocks (data, locators, filter partitions) are listed with their
    // stored length; the others with their contents, a 5-byte trailer after.
    let block = l.blocks.iter().find(|b| {
        let trailer = match b.kind.name() {
            "data" | "index" | "filter" => 0,
            _ => 5,
        };
        offset >= b.offset && offset < b.offset + b.size + trailer
    });
    let (region, unit_keys) = match block {
        _ if offset >= footer => ("footer".to_string(), BTreeSet::new()),
        Some(b) if b.kind == shale::LayoutKind::Data => (
            "data".to_string(),
            block_user_keys(&file, b.offset as usize, b.size as usize)
                .into_iter()
                .collect(),
        ),
        Some(b) => (b.kind.to_string(), BTreeSet::new()),
        None => ("padding".to_string(), BTreeSet::new()),
    };
    Flip {
        region,
        name: name.to_string(),
        offset,
        unit_keys,
        table: true,
    }
}

/// A byte of the log and the keys of the record it lies in.
fn log_flip(bytes: &[u8], name: &str, offset: u64, region: &str) -> Flip {
    let records = log_records(bytes);
    let unit_keys = records
        .iter()
        .find(|r| {
            r.fragments
                .iter()
                .any(|&(o, l)| offset >= o && offset < o + l)
        })
        .map(|r| batch_keys(&r.payload).into_iter().collect())
        .unwrap_or_default();
    Flip {
        region: region.to_string(),
        name: name.to_string(),
        offset,
        unit_keys,
        table: false,
    }
}

/// The fixed sample: every kind of region at least once.
fn sample(b: &Built) -> Vec<Flip> {
    let fs = &b.fs;
    let names = fs.list(Path::new(DIR)).expect("list");
    let mut tables: Vec<String> = names
        .iter()
        .filter(|n| n.ends_with(".sst"))
        .cloned()
        .collect();
    tables.sort();
    let log = names
        .iter()
        .find(|n| n.ends_with(".log"))
        .expect("a log")
        .clone();
    let mut out = Vec::new();
    // The L0 table (the newest) and two tables below it.
    let db = Db::open_read_only(DIR, options(fs.clone())).expect("open");
    let infos = db.tables().expect("tables");
    drop(db);
    let l0 = infos.iter().find(|t| t.level == 0).expect("L0");
    let deep: Vec<_> = infos.iter().filter(|t| t.level > 0).collect();
    let picks = [
        (format!("{:06}.sst", l0.file_number), true),
        (format!("{:06}.sst", deep[0].file_number), false),
        (
            format!("{:06}.sst", deep[deep.len() / 2].file_number),
            false,
        ),
    ];
    for (name, all_kinds) in picks {
        let l = layout(fs, &name);
        let mut offsets = vec![l.file_size - 30];
        let mut seen = Vec::new();
        for blk in &l.blocks {
            let want = match blk.kind.name() {
                "data" => false,
                _ => {
                    all_kinds
                        || blk.kind == shale::LayoutKind::Index
                        || blk.kind == shale::LayoutKind::Properties
                }
            };
            if want && !seen.contains(&blk.kind) {
                seen.push(blk.kind);
                offsets.push(blk.offset + blk.size / 3);
            }
        }
        let data: Vec<_> = l
            .blocks
            .iter()
            .filter(|b| b.kind == shale::LayoutKind::Data)
            .collect();
        offsets.push(data[data.len() / 3].offset + 700);
        offsets.push(data[2 * data.len() / 3].offset + 2100);
        for o in offsets {
            out.push(table_flip(fs, &name, &l, o));
        }
    }
    let bytes = fs.read_all(&path(&log)).expect("read");
    let records = log_records(&bytes);
    let small = records
        .iter()
        .filter(|r| r.fragments.len() == 1 && (150..200).contains(&r.payload.len()))
        .nth(3)
        .expect("a record of one put");
    let spanning = records
        .iter()
        .find(|r| r.fragments.len() >= 2)
        .expect("a record spanning blocks");
    let mid = records.len() / 2;
    for (region, o) in [
        ("log value", small.offset + 7 + 12 + 1 + 1 + 32 + 1 + 40),
        ("log key", small.offset + 7 + 12 + 1 + 1 + 9),
        ("log length", records[mid].offset + 5),
        ("log checksum", records[mid + 1].offset + 2),
        ("log spanning", spanning.fragments[1].0 + 300),
        ("log record", records[mid + 2].offset + 7 + 200),
    ] {
        out.push(log_flip(&bytes, &log, o, region));
    }
    out
}

/// Many more positions: `n` at random over the tables (by size, so mostly
/// data blocks), `n / 2` at random over the log, and one in every block of
/// every table but its data blocks, and in its footer.
fn random_flips(b: &Built, n: usize) -> Vec<Flip> {
    if n == 0 {
        return Vec::new();
    }
    let fs = &b.fs;
    let mut tables: Vec<(String, u64)> = fs
        .list(Path::new(DIR))
        .expect("list")
        .into_iter()
        .filter(|n| n.ends_with(".sst"))
        .map(|n| {
            let size = fs.file_size(&path(&n)).expect("size");
            (n, size)
        })
        .collect();
    tables.sort();
    let total: u64 = tables.iter().map(|f| f.1).sum();
    let layouts: BTreeMap<String, TableLayout> = tables
        .iter()
        .map(|f| (f.0.clone(), layout(fs, &f.0)))
        .collect();
    let mut rng = Rng::new(0x5a1_4a6e);
    let mut out = Vec::new();
    for _ in 0..n {
        let mut at = rng.below(total);
        let (name, size) = tables
            .iter()
            .find(|f| {
                if at < f.1 {
                    true
                } else {
                    at -= f.1;
                    false
                }
            })
            .expect("a table");
        out.push(table_flip(fs, name, &layouts[name], at.min(size - 1)));
    }
    for (name, l) in &layouts {
        out.push(table_flip(fs, name, l, l.file_size - 1 - rng.below(64)));
        for blk in l
            .blocks
            .iter()
            .filter(|b| b.kind != shale::LayoutKind::Data)
        {
            let o = blk.offset + rng.below(blk.size.max(1));
            out.push(table_flip(fs, name, l, o));
        }
    }
    let log = fs
        .list(Path::new(DIR))
        .expect("list")
        .into_iter()
        .find(|n| n.ends_with(".log"))
        .expect("a log");
    let bytes = fs.read_all(&path(&log)).expect("read");
    for _ in 0..n / 2 {
        let o = rng.below(bytes.len() as u64);
        out.push(log_flip(&bytes, &log, o, "log"));
    }
    out
}

#[derive(Default)]
struct RegionTally {
    flips: u64,
    min_recovery: f64,
    sum_recovery: f64,
    lost_keys: u64,
    quarantined_entries: u64,
    quarantined_keys: u64,
}

#[test]
fn salvage_sweep_keeps_every_undamaged_block_and_record() {
    let started = Instant::now();
    let b = build();
    let built_in = started.elapsed();
    let mut flips = sample(&b);
    let extra = std::env::var("SHALE_SALVAGE_FLIPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if common::long_tests() { 400 } else { 0 });
    flips.extend(random_flips(&b, extra));
    let total_keys = b.model.len() as f64;
    let mut regions: BTreeMap<String, RegionTally> = BTreeMap::new();
    let (mut wrong, mut resurrected) = (0u64, 0u64);
    let mut failures: Vec<String> = Vec::new();
    let mut rng = Rng::new(99);
    for f in &flips {
        let xor = 1u8 << rng.below(8);
        let what = format!("{} {} offset {} ^{xor:#04x}", f.region, f.name, f.offset);
        let fs = copy_with_flip(&b.fs, &f.name, f.offset, xor);
        let report = Db::repair(DIR, options(fs.clone()))
            .unwrap_or_else(|e| panic!("{what}: repair failed: {e}"));
        let db = Db::open(DIR, options(fs)).unwrap_or_else(|e| panic!("{what}: open: {e}"));
        let got = common::scan_all(&db);
        drop(db);
        let quarantined: BTreeSet<&Vec<u8>> = report.quarantined_keys.iter().collect();
        for (k, v) in &got {
            match b.model.get(k) {
                Some(m) if m == v => {}
                Some(_) => {
                    wrong += 1;
                    failures.push(format!("{what}: a wrong value for {k:02x?}"));
                }
                None => {
                    resurrected += 1;
                    let how = if b.deleted.contains(k) {
                        "deleted"
                    } else {
                        "never written"
                    };
                    failures.push(format!("{what}: {k:02x?} returned, {how}"));
                }
            }
        }
        let missing: Vec<&Vec<u8>> = b.model.keys().filter(|k| !got.contains_key(*k)).collect();
        for k in &missing {
            assert!(
                f.unit_keys.contains(*k) || quarantined.contains(k),
                "{what}: {k:02x?} lost, neither in the damaged unit nor quarantined \
                 ({} missing, report {:?})",
                missing.len(),
                report.damaged_files
            );
        }
        for k in &report.quarantined_keys {
            assert!(!got.contains_key(k), "{what}: a quarantined key is back");
        }
        let recovery = 100.0 * (total_keys - missing.len() as f64) / total_keys;
        if f.table {
            assert!(recovery >= 99.0, "{what}: {recovery:.3}% recovered");
        }
        if f.unit_keys.is_empty() && !f.region.starts_with("log") {
            // Metadata: nothing at all is lost.
            assert!(missing.is_empty(), "{what}: {} keys lost", missing.len());
        }
        let t = regions.entry(f.region.clone()).or_insert(RegionTally {
            min_recovery: 100.0,
            ..RegionTally::default()
        });
        t.flips += 1;
        t.min_recovery = t.min_recovery.min(recovery);
        t.sum_recovery += recovery;
        t.lost_keys += missing.len() as u64;
        t.quarantined_entries += report.entries_quarantined;
        t.quarantined_keys += report.quarantined_keys.len() as u64;
    }
    let n = flips.len() as f64;
    let (min, sum) = regions.values().fold((100f64, 0f64), |(m, s), t| {
        (m.min(t.min_recovery), s + t.sum_recovery)
    });
    let quarantined: u64 = regions.values().map(|t| t.quarantined_entries).sum();
    eprintln!(
        "salvage sweep: {} keys, built in {:.1} s; {} flips in {:.1} s: recovery min {min:.3}% \
         mean {:.3}%, wrong values {wrong}, resurrected {resurrected}, quarantined {quarantined} \
         entries",
        b.model.len(),
        built_in.as_secs_f64(),
        flips.len(),
        (started.elapsed() - built_in).as_secs_f64(),
        sum / n,
    );
    for (region, t) in &regions {
        eprintln!(
            "  {region:<14} flips {:>4}  recovery min {:.3}% mean {:.4}%  keys lost {:>5}  \
             quarantined {} entries, {} keys",
            t.flips,
            t.min_recovery,
            t.sum_recovery / t.flips as f64,
            t.lost_keys,
            t.quarantined_entries,
            t.quarantined_keys
        );
    }
    assert_eq!(
        (wrong, resurrected),
        (0, 0),
        "{:?}",
        &failures[..failures.len().min(10)]
    );
    for want in [
        "footer",
        "properties",
        "top_index",
        "index",
        "filter",
        "filter_index",
        "data",
    ] {
        assert!(regions.contains_key(want), "no {want} flipped");
    }
    assert!(regions.keys().any(|r| r.starts_with("log")), "no log flip");
}
