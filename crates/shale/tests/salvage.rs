//! `Db::repair` after one damaged byte: every undamaged block and record is
//! recovered, metadata damage loses nothing, and no key comes back with an
//! older value (or at all, after a deletion) when its newer version was in
//! what was lost (the quarantine).

use shale_testkit as common;

use common::{files, xor_byte};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale::env::{FileSystem, MemFs, WriteLifetime};
use shale::{
    DamagedKind, Db, FilterLevels, FilterPolicy, Options, RepairReport, TableLayout, WriteBatch,
    WriteOptions,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const DIR: &str = "/db";

fn options(fs: Arc<MemFs>, version: u32) -> Options {
    Options::default()
        .fs(fs)
        .table_format_version(version)
        .write_buffer_size(1 << 20)
        // Small partitions: several locators and filter partitions a table.
        .index_partition_size(256)
        // Filters on every level, so that an L6 table has filter partitions.
        .filter_policy(FilterPolicy::default().levels(FilterLevels::All))
        .max_background_jobs(1)
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    format!("value {i} round {round} {}", "x".repeat(80)).into_bytes()
}

fn path(name: &str) -> PathBuf {
    Path::new(DIR).join(name)
}

fn layout(fs: &MemFs, name: &str) -> TableLayout {
    let p = path(name);
    shale::inspect_table(fs.open_random(&p).expect("open"), p).expect("layout")
}

/// A database of one table of 3,000 keys in `version`, and its contents.
fn one_table(version: u32) -> (Arc<MemFs>, Model, String) {
    let fs = Arc::new(MemFs::new());
    let db = Db::open(DIR, options(fs.clone(), version)).expect("open");
    for i in 0..3000 {
        db.put(&key(i), &value(i, 0)).expect("put");
    }
    db.compact_all().expect("compact");
    let model = common::scan_all(&db);
    let tables = db.tables().expect("tables");
    assert_eq!(tables.len(), 1, "one table");
    db.close().expect("close");
    let name = format!("{:06}.sst", tables[0].file_number);
    (fs, model, name)
}

/// Repairs and reopens the database; returns the report and what it holds.
fn repair(fs: &Arc<MemFs>, version: u32) -> (RepairReport, Model) {
    let report = Db::repair(DIR, options(fs.clone(), version)).expect("repair");
    let db = Db::open(DIR, options(fs.clone(), version)).expect("open after repair");
    let got = common::scan_all(&db);
    db.close().expect("close");
    (report, got)
}

/// Every row of `got` is the model's (no wrong value, nothing resurrected);
/// returns the model's keys missing from it.
fn missing(model: &Model, got: &Model) -> Vec<Vec<u8>> {
    for (k, v) in got {
        assert_eq!(
            model.get(k),
            Some(v),
            "{}: a wrong or resurrected row",
            String::from_utf8_lossy(k)
        );
    }
    model
        .keys()
        .filter(|k| !got.contains_key(*k))
        .cloned()
        .collect()
}

#[test]
fn a_flipped_data_block_loses_only_its_entries_in_every_format() {
    for version in [3, 2, 1] {
        let (fs, model, name) = one_table(version);
        let data: Vec<_> = layout(&fs, &name)
            .blocks
            .into_iter()
            .filter(|b| b.kind == shale::LayoutKind::Data)
            .collect();
        assert!(data.len() > 20, "v{version}: {} data blocks", data.len());
        let victim = &data[data.len() / 2];
        xor_byte(&fs, &name, victim.offset + 40, 0x08);
        let (report, got) = repair(&fs, version);
        let lost = missing(&model, &got);
        // One block's entries (about 30), no more.
        assert!(
            !lost.is_empty() && lost.len() <= 40,
            "v{version}: {} keys lost",
            lost.len()
        );
        // They were one block: a run of consecutive keys.
        let keys: Vec<&Vec<u8>> = model.keys().collect();
        let first = keys.iter().position(|k| **k == lost[0]).expect("in model");
        assert_eq!(
            &keys[first..first + lost.len()],
            &lost.iter().collect::<Vec<_>>()[..],
            "v{version}: the lost keys are one block's run"
        );
        assert_eq!(report.tables_salvaged, 1, "v{version}: {report:?}");
        assert_eq!(report.entries_quarantined, 0, "v{version}: {report:?}");
        let [f] = &report.damaged_files[..] else {
            panic!("v{version}: {:?}", report.damaged_files);
        };
        assert_eq!(f.name, name);
        assert_eq!(f.kind, DamagedKind::Table);
        assert_eq!(
            (f.recovered, f.lost),
            (data.len() as u64 - 1, 1),
            "v{version}"
        );
        assert_eq!(f.entries_recovered, (model.len() - lost.len()) as u64);
        let [(offset, len)] = f.lost_bytes[..] else {
            panic!("v{version}: {:?}", f.lost_bytes);
        };
        assert_eq!(offset, victim.offset, "v{version}");
        assert!(
            len >= victim.size && len <= victim.size + 4096,
            "v{version}: {len}"
        );
        // The key range reported holds the lost keys.
        let [range] = &f.lost_key_ranges[..] else {
            panic!("v{version}: {:?}", f.lost_key_ranges);
        };
        let (lo, hi) = (
            range.start.clone().expect("lo"),
            range.end.clone().expect("hi"),
        );
        assert!(lost.iter().all(|k| *k >= lo && *k <= hi), "v{version}");
        assert!(report.moved_to_lost.contains(&name));
    }
}

#[test]
fn flips_in_footer_properties_index_and_filter_lose_no_entry() {
    for version in [3, 2, 1] {
        let (fs, model, name) = one_table(version);
        let l = layout(&fs, &name);
        let mut spots: Vec<(String, u64)> = vec![
            ("footer".into(), l.file_size - 40),
            ("footer magic".into(), l.file_size - 3),
        ];
        // One of each kind of block but data: the properties, the top-level
        // index, an index partition (a locator in version 3), the filter (a
        // filter partition and the filter index in version 3).
        let mut seen = Vec::new();
        for b in l
            .blocks
            .iter()
            .filter(|b| b.kind != shale::LayoutKind::Data)
        {
            if !seen.contains(&b.kind) {
                seen.push(b.kind);
                spots.push((b.kind.to_string(), b.offset + b.size / 2));
            }
        }
        let kinds: Vec<&str> = spots.iter().map(|s| s.0.as_str()).collect();
        for want in ["properties", "top_index", "index", "filter"] {
            assert!(kinds.contains(&want), "v{version}: {kinds:?}");
        }
        if version == 3 {
            assert!(kinds.contains(&"filter_index"), "{kinds:?}");
        }
        for (what, at) in spots {
            let fs = copy(&fs);
            xor_byte(&fs, &name, at, 0x20);
            let (report, got) = repair(&fs, version);
            let lost = missing(&model, &got);
            assert!(
                lost.is_empty(),
                "v{version} {what}: {} keys lost",
                lost.len()
            );
            assert_eq!(report.tables_salvaged, 1, "v{version} {what}: {report:?}");
            let [f] = &report.damaged_files[..] else {
                panic!("v{version} {what}: {:?}", report.damaged_files);
            };
            assert_eq!(f.lost, 0, "v{version} {what}: {f:?}");
            assert!(f.lost_bytes.is_empty(), "v{version} {what}: {f:?}");
            assert_eq!(f.entries_recovered, model.len() as u64);
            assert!(!report.problems.is_empty());
        }
    }
}

fn copy(src: &MemFs) -> Arc<MemFs> {
    let dst = Arc::new(MemFs::new());
    dst.create_dir_all(Path::new(DIR)).expect("mkdir");
    for name in src.list(Path::new(DIR)).expect("list") {
        let p = path(&name);
        let Ok(data) = src.read_all(&p) else {
            continue; // a directory
        };
        let mut w = dst
            .create_object(&p, WriteLifetime::NotSet)
            .expect("create");
        w.write(&data).expect("write");
        w.finish().expect("finish");
    }
    dst
}

/// A database whose table holds `key(0..1000)` and whose log holds 200
/// records: record `r` writes `key(1000 + 5r .. 1005 + 5r)`, overwrites
/// `key(r)` and deletes `key(500 + r)`; every fifth record is large (spans
/// log blocks).
fn table_and_log(version: u32) -> (Arc<MemFs>, Model, String) {
    let fs = Arc::new(MemFs::new());
    let opts = (options(fs.clone(), version)).write_buffer_size(64 << 20);
    let db = Db::open(DIR, opts).expect("open");
    for i in 0..1000 {
        db.put(&key(i), &value(i, 0)).expect("put");
    }
    db.compact_all().expect("compact");
    let sync = WriteOptions::SYNC;
    for r in 0..200u32 {
        let mut b = WriteBatch::new();
        let n = if r % 5 == 4 { 400 } else { 5 };
        for i in 1000 + 5 * r..1000 + 5 * r + 5 {
            b.put(&key(i), &value(i, 1));
        }
        for j in 0..n - 5 {
            b.put(format!("big{r:03}-{j:04}").as_bytes(), &value(j, r));
        }
        b.put(&key(r), &value(r, 2));
        b.delete(&key(500 + r));
        db.write(b, &sync).expect("write");
    }
    let model = common::scan_all(&db);
    db.close().expect("close");
    let [log] = &files(&fs, ".log")[..] else {
        panic!("one log");
    };
    (fs, model, log.clone())
}

#[test]
fn a_flip_in_the_middle_of_a_log_loses_only_that_record() {
    let (fs, model, log) = table_and_log(3);
    let bytes = fs.read_all(&path(&log)).expect("read");
    let records = common::log_records(&bytes);
    assert_eq!(records.len(), 200);
    // A flip in a value of a small record, in a key of another, in a
    // fragment's length field, and in the middle fragment of a large one.
    let spanning = records
        .iter()
        .position(|r| r.fragments.len() >= 3)
        .expect("a record of three fragments");
    let cases: Vec<(&str, usize, u64)> = vec![
        ("value", 100, records[100].offset + 7 + 60),
        ("key", 101, records[101].offset + 7 + 12 + 1 + 1 + 4),
        ("length", 102, records[102].offset + 4),
        ("checksum", 103, records[103].offset + 1),
        (
            "middle fragment",
            spanning,
            records[spanning].fragments[1].0 + 500,
        ),
    ];
    for (what, r, at) in cases {
        let fs = copy(&fs);
        xor_byte(&fs, &log, at, 0x04);
        let (report, got) = repair(&fs, 3);
        let lost = missing(&model, &got);
        let names = common::batch_keys(&records[r].payload);
        // Only the damaged record's keys are gone: its new keys, and the
        // overwritten one, whose older value in the table is quarantined.
        assert!(
            lost.iter().all(|k| names.contains(k)),
            "{what}: {} lost, not all the record's",
            lost.len()
        );
        let overwritten = key(r as u32);
        assert!(lost.contains(&overwritten), "{what}");
        assert!(
            !got.contains_key(&key(500 + r as u32)),
            "{what}: the deleted key came back"
        );
        let [f] = &report.damaged_files[..] else {
            panic!("{what}: {:?}", report.damaged_files);
        };
        assert_eq!(f.kind, DamagedKind::Log);
        assert_eq!((f.recovered, f.lost), (199, 1), "{what}");
        assert_eq!(f.replay_stopped_at, None, "{what}");
        // Its bytes, up to the next record (block padding included).
        let span = records[r].fragments.iter().map(|fr| fr.1).sum::<u64>();
        let [(offset, len)] = f.lost_bytes[..] else {
            panic!("{what}: {:?}", f.lost_bytes);
        };
        assert_eq!(offset, records[r].offset, "{what}");
        assert!(len >= span && len < span + 7, "{what}: {len} for {span}");
        // The keys it named: all of its own (exact, from the one-byte
        // repair), and for a damaged key byte also the key as found.
        let mut want = names.clone();
        want.sort();
        want.dedup();
        assert!(want.iter().all(|k| f.lost_keys.contains(k)), "{what}");
        assert!(f.lost_keys.len() <= want.len() + 1, "{what}");
        assert!(report.quarantined_keys.contains(&overwritten), "{what}");
        assert_eq!(report.wal_records, 199, "{what}");
    }
}

#[test]
fn a_record_whose_keys_cannot_be_read_stops_the_replay_there() {
    let (fs, model, log) = table_and_log(3);
    let bytes = fs.read_all(&path(&log)).expect("read");
    let records = common::log_records(&bytes);
    // Several bytes of a small record's ops gone: no one-byte repair, and
    // its bytes do not parse.
    let start = &records[50].offset;
    for i in 0..24 {
        xor_byte(&fs, &log, start + 7 + 12 + i, 0xff);
    }
    let (report, got) = repair(&fs, 3);
    let f = &report.damaged_files[0];
    assert_eq!(f.replay_stopped_at, Some(*start));
    assert_eq!((f.recovered, f.lost), (50, 150));
    assert_eq!(f.lost_bytes, vec![(*start, bytes.len() as u64 - start)]);
    assert_eq!(report.wal_records, 50);
    // Point in time: the records before are there, none after.
    for r in 0..50u32 {
        assert_eq!(got.get(&key(1000 + 5 * r)), model.get(&key(1000 + 5 * r)));
    }
    for r in 50..200u32 {
        assert!(!got.contains_key(&key(1000 + 5 * r)), "record {r} replayed");
    }
    assert!(
        report.problems.iter().any(|p| p.contains("replay stopped")),
        "{:?}",
        report.problems
    );
}

#[test]
fn a_lost_block_quarantines_older_values_it_may_have_replaced() {
    // Old values of every key in L6; newer values and deletions of some in
    // an L0 table; one data block of the L0 table is damaged.
    for version in [3, 2] {
        let fs = Arc::new(MemFs::new());
        let db = Db::open(DIR, options(fs.clone(), version)).expect("open");
        for i in 0..3000 {
            db.put(&key(i), &value(i, 0)).expect("put");
        }
        db.compact_all().expect("compact");
        for i in (0..3000).step_by(3) {
            if i % 2 == 0 {
                db.put(&key(i), &value(i, 1)).expect("put");
            } else {
                db.delete(&key(i)).expect("delete");
            }
        }
        db.flush().expect("flush");
        let model = common::scan_all(&db);
        let l0 = db
            .tables()
            .expect("tables")
            .into_iter()
            .find(|t| t.level == 0)
            .expect("an L0 table");
        db.close().expect("close");
        let name = format!("{:06}.sst", l0.file_number);
        let data: Vec<_> = layout(&fs, &name)
            .blocks
            .into_iter()
            .filter(|b| b.kind == shale::LayoutKind::Data)
            .collect();
        let victim = &data[data.len() / 2];
        xor_byte(&fs, &name, victim.offset + 10, 0x01);
        let (report, got) = repair(&fs, version);
        // `missing` checks that no key shows its older L6 value or comes back
        // after its deletion in the lost block.
        let lost = missing(&model, &got);
        assert!(!lost.is_empty(), "v{version}");
        // The lost keys are overwritten ones of the lost block's range, and
        // each is listed as quarantined (its older value held back).
        let f = &report.damaged_files[0];
        let range = &f.lost_key_ranges[0];
        let (lo, hi) = (
            range.start.clone().expect("lo"),
            range.end.clone().expect("hi"),
        );
        for k in &lost {
            assert!(*k >= lo && *k <= hi, "v{version}");
            assert!(report.quarantined_keys.contains(k), "v{version}");
        }
        assert!(report.entries_quarantined >= lost.len() as u64);
        // The L6 table held quarantined entries: rewritten without them.
        assert_eq!(report.tables_rewritten, 1, "v{version}: {report:?}");
        // Keys the L0 table never held are there, but for the filter's few
        // false positives inside the lost range.
        let gone = (1..3000)
            .filter(|i| i % 3 != 0 && !got.contains_key(&key(*i)))
            .count();
        assert!(gone <= 3, "v{version}: {gone} keys the L0 table never held");
    }
}

#[test]
fn a_table_file_with_nothing_recognisable_quarantines_nothing() {
    // What a crash can leave of a table being written before its first page
    // was complete: nothing tells its keys, so it cannot bound a quarantine.
    let (fs, model, _) = one_table(3);
    let mut rng = common::Rng::new(8);
    let mut w = fs
        .create_object(&path("000999.sst"), WriteLifetime::NotSet)
        .expect("create");
    w.write(&rng.bytes(3000)).expect("write");
    w.finish().expect("finish");
    let (report, got) = repair(&fs, 3);
    assert!(missing(&model, &got).is_empty());
    assert_eq!(report.entries_quarantined, 0);
    assert_eq!(report.tables_unreadable, 1);
    assert_eq!(report.damaged_files[0].lost_bytes, vec![(0, 3000)]);
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("nothing is quarantined")),
        "{:?}",
        report.problems
    );
    assert!(report.moved_to_lost.contains(&"000999.sst".to_string()));
}
