//! The fuzz targets on stable Rust: every target over its seed corpus (the
//! committed files under `fuzz/corpus/<target>/`, which include the inputs of
//! past findings) and a few thousand deterministic mutations of the seeds.
//! Also checks that the committed seeds are the ones generated here
//! (`SHALE_WRITE_FUZZ_SEEDS=1 cargo test -p shale fuzz_api` rewrites them).

use std::path::PathBuf;

use super::*;
use crate::table::block::BlockBuilder;
use crate::table::test_util::Rng;

const TABLE: &[u8] = include_bytes!("../../tests/fixtures/table-v1.sst");
const TABLE_V4: &[u8] = include_bytes!("../../tests/fixtures/table-v4.sst");
const WAL: &[u8] = include_bytes!("../../tests/fixtures/wal-v1.log");
const MANIFEST: &[u8] = include_bytes!("../../tests/fixtures/manifest-v1");

fn corpus_dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

fn with(prefix: u8, bytes: &[u8]) -> Vec<u8> {
    let mut v = vec![prefix];
    v.extend_from_slice(bytes);
    v
}

/// Reads the stored bytes (contents + trailer) of a block of the fixture.
fn stored(h: BlockHandle) -> Vec<u8> {
    TABLE[h.offset as usize..(h.offset + h.size + 5) as usize].to_vec()
}

fn contents(h: BlockHandle) -> Vec<u8> {
    unwrap_block(stored(h), true).expect("fixture block")
}

fn log_records(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut r = LogReader::new(mem_file(bytes), PathBuf::from("fixture"));
    let mut out = Vec::new();
    while let Some(rec) = r.read_record().expect("fixture log reads") {
        out.push(rec);
    }
    out
}

/// A small table written by this build: LZ4, no filter, several partitions;
/// format version 2, whose blocks need not fill pages (a seed stays small).
fn small_table() -> Vec<u8> {
    small_table_of(2)
}

/// [`small_table`] in `format_version` (in version 3: one data page and its
/// locator, about 4 KiB).
fn small_table_of(format_version: u32) -> Vec<u8> {
    small_table_with(format_version, Fragments::default())
}

/// [`small_table`] in version 4 with overlapping range deletions over its
/// keys (`k000` to `k019`), some newer than the versions they cover.
fn small_table_v4_range_dels() -> Vec<u8> {
    let t = |start: &[u8], end: &[u8], seq: u64| RangeTombstone {
        start: start.to_vec(),
        end: end.to_vec(),
        seq,
    };
    small_table_with(
        4,
        Fragments::build(vec![
            t(b"k003", b"k009", 90),
            t(b"k005", b"k012", 75),
            t(b"k007", b"k007\0", 200),
            t(b"", b"k001", 150),
        ]),
    )
}

fn small_table_with(format_version: u32, dels: Fragments) -> Vec<u8> {
    let mut rng = Rng::new(3);
    let mut case = TableCase {
        block_size: 200,
        restart_interval: 3,
        index_partition_size: 40,
        lz4: true,
        filter_bits: None,
        pin_top: false,
        pin_filter: false,
        verify: true,
        entries: Vec::new(),
        ops: Vec::new(),
        format_version,
    };
    for i in 0..40u64 {
        case.entries.push(CaseEntry {
            user_key: format!("k{:03}", i / 2).into_bytes(),
            seq: 100 - i,
            delete: i % 5 == 0,
            value: if i % 5 == 0 {
                Vec::new()
            } else {
                vec![b'v'; rng.index(40)]
            },
        });
    }
    let fs = MemFs::new();
    let path = Path::new("/small.sst");
    let w = fs
        .create_object(path, WriteLifetime::NotSet)
        .expect("create");
    let opts = TableBuildOptions {
        block_size: case.block_size,
        block_restart_interval: case.restart_interval,
        index_partition_size: case.index_partition_size,
        compression: Compression::Lz4,
        filter_bits_per_key: None,
        filter_kind: crate::table::FilterKind::Bloom,
        format_version: case.format_version,
    };
    let mut b = TableBuilder::new(w, path.into(), opts);
    let mut keys = case.encoded_entries();
    keys.sort_by(|a, b| compare_internal(&a.0, &b.0));
    for (k, v) in &keys {
        b.add(k, v).expect("add");
    }
    b.set_range_dels(dels).expect("range deletions");
    b.finish().expect("finish");
    fs.read_all(path).expect("read")
}

/// The seed corpus of every target: `(target, file name, bytes)`.
fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut out: Vec<(&'static str, String, Vec<u8>)> = Vec::new();
    let mut add = |t: &'static str, name: &str, bytes: Vec<u8>| out.push((t, name.into(), bytes));

    let footer_bytes = &TABLE[TABLE.len() - FOOTER_LEN as usize..];
    let footer = Footer::decode(footer_bytes).expect("fixture footer");
    let layout = inspect_table(mem_file(TABLE), "fixture".into()).expect("fixture inspects");
    let handle = |kind: &str| {
        let b = layout
            .blocks
            .iter()
            .find(|b| b.kind.name() == kind)
            .expect("fixture block kind");
        BlockHandle {
            offset: b.offset,
            size: b.size,
        }
    };

    // Blocks: cut out of the fixture and built here.
    add("block", "fixture-data", with(0, &contents(handle("data"))));
    add(
        "block",
        "fixture-index",
        with(1, &contents(handle("index"))),
    );
    add(
        "block",
        "fixture-top-index",
        with(1, &contents(footer.top_index)),
    );
    let mut bb = BlockBuilder::new(EntryFormat::Data, 3);
    for i in 0..12u64 {
        let mut user = vec![b'x'; if i % 4 == 0 { 70 } else { 3 }];
        user.extend_from_slice(format!("{i:02}").as_bytes());
        let k = InternalKey::new(&user, 50 - i, ValueKind::Value);
        bb.add_data(k.encoded(), &vec![i as u8; i as usize]);
    }
    add("block", "built-data", with(0, &bb.finish()));
    add("block", "empty", with(0, &[0, 0, 0, 0]));

    // Filters.
    let filter = footer.filter.expect("fixture has a filter");
    add("filter", "fixture", contents(filter));
    let hashes: Vec<u64> = (0..20u32).map(|i| filter_hash(&i.to_le_bytes())).collect();
    add("filter", "built", build_filter(&hashes, 10));
    add("filter", "fuse-built", build_fuse(&hashes, 8));
    add("filter", "fuse-empty", build_fuse(&[], 7));

    // Footer, properties, stored blocks, LZ4.
    add("layout", "footer", with(0, footer_bytes));
    add("layout", "footer-fix-crc", with(0x10, footer_bytes));
    add(
        "layout",
        "properties",
        with(1, &contents(footer.properties)),
    );
    add("layout", "lz4-data-block", with(2, &stored(handle("data"))));
    add(
        "layout",
        "lz4-data-block-fix-crc",
        with(0x12, &stored(handle("data"))),
    );
    add(
        "layout",
        "lz4-roundtrip",
        with(3, &b"abcabcabcabc shale shale shale".repeat(4)),
    );

    // Whole tables.
    let small = small_table();
    add("table_inspect", "fixture-fix-crc", with(1, TABLE));
    add("table_inspect", "small", with(0, &small));
    add("table_read", "fixture-fix-crc-verify", with(3, TABLE));
    add("table_read", "small-pinned", with(0x0c, &small));
    let small_v3 = small_table_of(3);
    add("table_inspect", "small-v3", with(0, &small_v3));
    add("table_read", "small-v3-fix-crc", with(0x0f, &small_v3));

    // Logs: the manifest whole, the WAL cut inside its second record.
    add("log_reader", "manifest", with(0, MANIFEST));
    add("log_reader", "wal-torn", with(0, &WAL[..1024]));
    add("log_reader", "write-records", with(1, b"one\ntwo\n\nthree"));
    add("log_reader", "write-spanning", with(3, b"x\ny"));

    for (i, r) in log_records(MANIFEST).into_iter().enumerate() {
        add("version_edit", &format!("manifest-{i}"), r);
    }
    let wal = log_records(WAL);
    add("write_batch", "wal-0", wal[0].clone());
    add("write_batch", "wal-2", wal[2].clone());
    let mut b = WriteBatch::new();
    b.put(b"key", b"value");
    b.delete(b"gone");
    b.put(b"", b"");
    add("write_batch", "built", b.encode(99).to_vec());
    let mut b = WriteBatch::new();
    b.put(b"a", b"1");
    b.delete_range(b"", b"b");
    b.put(b"a", b"2");
    b.delete_range(b"c", b"c\0");
    add("write_batch", "built-range", b.encode(7).to_vec());

    let mut rng = Rng::new(11);
    for i in 0..4 {
        add("table_roundtrip", &format!("random-{i}"), rng.bytes(1024));
    }

    add("salvage", "table-v1", with(0, TABLE));
    add("salvage", "small-v2-fix-crc", with(2, &small_table()));
    add("salvage", "small-v3", with(0, &small_table_of(3)));
    add("salvage", "wal", with(1, &WAL[..8192]));
    let small_v4 = small_table_v4_range_dels();
    add(
        "table_read",
        "small-v4-range-dels-fix-crc",
        with(0x01, &small_v4),
    );
    add("salvage", "small-v4-range-dels-fix-crc", with(2, &small_v4));

    // Range-deletion blocks: the golden v4 table's, built ones, and
    // tombstones to fragment.
    add(
        "range_del",
        "fixture-v4",
        with(0, &range_del_block(TABLE_V4)),
    );
    add("range_del", "empty", with(0, &[0]));
    let t = |start: &[u8], end: &[u8], seq: u64| RangeTombstone {
        start: start.to_vec(),
        end: end.to_vec(),
        seq,
    };
    let built = Fragments::build(vec![
        t(b"", b"b", 3),
        t(b"a", b"d", 9),
        t(b"c", b"c\0", MAX_SEQNO),
        t(b"c", b"x", 1),
        t(b"y", b"z", 0),
    ]);
    add("range_del", "built", with(0, &built.encode()));
    let trace = sample_trace();
    add(
        "block_trace",
        "whole",
        with(0, &crate::trace::encode_trace(&trace, 40)),
    );
    let whole = crate::trace::encode_trace(&trace, 1 << 20);
    // The records of the one chunk, without the end record (mode 1 frames
    // them): the header is 100 bytes, a chunk header 8.
    add(
        "block_trace",
        "records",
        with(0b0100_0011, &whole[108..whole.len() - 1]),
    );
    add(
        "range_del",
        "tombstones",
        with(
            1,
            b"\x01\x02\x07a\x00\x02\x09bc\x02\x03\xffbbbcd\x03\x01\x05xyzz",
        ),
    );
    out
}

/// A small trace: Gets hitting and missing blocks of each kind, a held
/// block, pins, a mark and a deferred read's charge.
fn sample_trace() -> crate::trace::BlockTrace {
    use crate::trace::{BlockAccess, TraceHeader, TracePlacement, TraceRecord};
    use crate::BlockKind;
    let access = |lookup, offset, kind, placement, hit| {
        TraceRecord::Access(BlockAccess {
            lookup,
            file: 9 + offset % 3,
            offset: offset * 4096,
            kind,
            placement,
            hit,
            charge: if kind == BlockKind::Data && !hit {
                0
            } else {
                4101
            },
        })
    };
    let mut records = vec![TraceRecord::Pin(8192), TraceRecord::Mark("measure".into())];
    for g in 1..12u64 {
        records.push(access(g, 1, BlockKind::Filter, TracePlacement::High, g > 1));
        records.push(access(
            g,
            2,
            BlockKind::TopIndex,
            TracePlacement::Held,
            g > 1,
        ));
        records.push(access(
            g,
            3 + g % 4,
            BlockKind::IndexPartition,
            TracePlacement::Medium,
            g > 4,
        ));
        records.push(access(
            g,
            10 + g,
            BlockKind::Data,
            TracePlacement::Low,
            false,
        ));
        records.push(TraceRecord::Charge {
            file: 9 + (10 + g) % 3,
            offset: (10 + g) * 4096,
            charge: 4096,
        });
        records.push(TraceRecord::Get { found: g % 3 != 0 });
    }
    records.push(TraceRecord::Unpin(8192));
    crate::trace::BlockTrace {
        header: TraceHeader {
            created_unix_secs: 1_800_000_000,
            table_format_version: 3,
            sample_threshold: crate::trace::SAMPLE_ALL,
            cache_capacity: 16 << 10,
            cache_shards: 16,
            pinned_at_start: 0,
            db: Default::default(),
        },
        records,
    }
}

/// The contents of the range-deletion block of `table`, which ends where the
/// properties begin.
fn range_del_block(table: &[u8]) -> Vec<u8> {
    let layout = inspect_table(mem_file(table), "fixture".into()).expect("fixture inspects");
    let props = layout
        .blocks
        .iter()
        .find(|b| b.kind == crate::table::LayoutKind::Properties)
        .expect("properties");
    let start = props.offset - layout.properties.range_del_bytes;
    unwrap_block(table[start as usize..props.offset as usize].to_vec(), true)
        .expect("the fixture's range-deletion block")
}

#[test]
fn committed_seeds_match_the_generator() {
    let write = std::env::var_os("SHALE_WRITE_FUZZ_SEEDS").is_some();
    for (target, name, bytes) in seeds() {
        let path = corpus_dir(target).join(&name);
        if write {
            std::fs::create_dir_all(corpus_dir(target)).expect("create corpus dir");
            std::fs::write(&path, &bytes).expect("write seed");
        }
        let committed = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (SHALE_WRITE_FUZZ_SEEDS=1 writes it)",
                path.display()
            )
        });
        assert!(committed == bytes, "{} is stale", path.display());
        assert!(bytes.len() <= 12 * 1024, "{name}: seeds stay small");
    }
}

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut d = seed.to_vec();
    for _ in 0..1 + rng.index(4) {
        let len = d.len();
        match rng.index(8) {
            0 | 1 if len > 0 => {
                let i = rng.index(len);
                d[i] ^= 1 << rng.index(8);
            }
            2 if len > 0 => {
                let i = rng.index(len);
                d[i] = [0, 0xff, 0x7f, 0x80, 1, rng.next_u64() as u8][rng.index(6)];
            }
            3 => d.truncate(rng.index(len + 1)),
            4 => {
                let i = rng.index(len + 1);
                let n = 1 + rng.index(8);
                let ins = rng.bytes(n);
                d.splice(i..i, ins);
            }
            5 if len > 0 => {
                let i = rng.index(len);
                let n = (1 + rng.index(16)).min(len - i);
                d.drain(i..i + n);
            }
            6 if len > 0 => {
                let i = rng.index(len);
                let n = (1 + rng.index(32)).min(len - i);
                let chunk = d[i..i + n].to_vec();
                let at = rng.index(len + 1);
                d.splice(at..at, chunk);
            }
            _ if len > 0 => {
                // A varint-looking byte somewhere in the first bytes.
                let i = rng.index(len.min(64));
                d[i] = 0x80 | rng.next_u64() as u8;
            }
            _ => d.push(rng.next_u64() as u8),
        }
    }
    d
}

/// Runs `target` over its seeds (generated, committed, `extra`) and `mutations`
/// mutations of them; returns how many inputs decoded and how many were
/// rejected.
fn replay(target: &str, extra: &[&[u8]], mutations: usize) -> (usize, usize) {
    let run = TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, f)| *f)
        .expect("known target");
    let mut inputs: Vec<Vec<u8>> = seeds()
        .into_iter()
        .filter(|(t, _, _)| *t == target)
        .map(|(_, _, b)| b)
        .collect();
    if let Ok(dir) = std::fs::read_dir(corpus_dir(target)) {
        let mut paths: Vec<_> = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for p in paths {
            inputs.push(std::fs::read(&p).expect("read corpus file"));
        }
    }
    inputs.extend(extra.iter().map(|e| e.to_vec()));
    assert!(!inputs.is_empty(), "{target} has seeds");
    let mut counts = (0, 0);
    let tally = |counts: &mut (usize, usize), o: Outcome| match o {
        Outcome::Decoded => counts.0 += 1,
        Outcome::Rejected => counts.1 += 1,
    };
    for input in &inputs {
        tally(&mut counts, run(input));
    }
    assert!(counts.0 > 0, "{target}: no seed decodes");
    let mut rng = Rng::new(0x5eed ^ target.len() as u64);
    for _ in 0..mutations {
        let seed = &inputs[rng.index(inputs.len())];
        tally(&mut counts, run(&mutate(&mut rng, seed)));
    }
    counts
}

fn replay_decoder(target: &str, extra: &[&[u8]], mutations: usize) {
    let (decoded, rejected) = replay(target, extra, mutations);
    assert!(rejected > 0, "{target}: no mutation was rejected");
    eprintln!("{target}: {decoded} decoded, {rejected} rejected");
}

#[test]
fn replay_block() {
    replay_decoder("block", &[], 4000);
}

#[test]
fn replay_filter() {
    replay_decoder("filter", &[], 3000);
}

#[test]
fn replay_layout() {
    replay_decoder("layout", &[], 4000);
}

#[test]
fn replay_table_inspect() {
    replay_decoder("table_inspect", &[], 2000);
}

#[test]
fn replay_table_read() {
    replay_decoder("table_read", &[], 2000);
}

#[test]
fn replay_log_reader() {
    let whole_wal = with(0, WAL);
    replay_decoder("log_reader", &[&whole_wal], 2000);
}

#[test]
fn replay_version_edit() {
    replay_decoder("version_edit", &[], 3000);
}

#[test]
fn replay_write_batch() {
    let big = log_records(WAL).swap_remove(1);
    replay_decoder("write_batch", &[&big], 3000);
}

#[test]
fn replay_salvage() {
    replay_decoder("salvage", &[], 2000);
}

#[test]
fn replay_range_del() {
    replay_decoder("range_del", &[], 3000);
}

#[test]
fn replay_block_trace() {
    for (target, name, bytes) in seeds() {
        if target == "block_trace" {
            assert_eq!(fuzz_block_trace(&bytes), Outcome::Decoded, "seed {name}");
        }
    }
    replay_decoder("block_trace", &[], 3000);
}

#[test]
fn replay_table_roundtrip() {
    let (decoded, _) = replay("table_roundtrip", &[], 1500);
    eprintln!("table_roundtrip: {decoded} cases");
}

#[test]
fn the_checksum_fixer_restores_every_checksum_of_the_fixture() {
    let layout = inspect_table(mem_file(TABLE), "fixture".into()).expect("fixture inspects");
    let mut t = TABLE.to_vec();
    let n = t.len();
    t[n - 12] ^= 0xff; // the footer's checksum
    for b in &layout.blocks {
        t[(b.offset + b.size + 1) as usize] ^= 0x5a; // each block trailer's
    }
    let err = inspect_table(mem_file(&t), "t".into()).expect_err("damaged checksums");
    assert!(err.is_corruption());
    fix_table_checksums(&mut t);
    assert!(t == TABLE, "the fixer restores the written checksums");
}

#[test]
fn the_checksum_fixer_restores_the_range_deletion_block_of_the_v4_fixture() {
    let layout = inspect_table(mem_file(TABLE_V4), "fixture".into()).expect("fixture inspects");
    let props = layout
        .blocks
        .iter()
        .find(|b| b.kind == crate::table::LayoutKind::Properties)
        .expect("properties");
    let mut t = TABLE_V4.to_vec();
    // The last byte of the range-deletion block's trailer: its checksum's.
    t[props.offset as usize - 1] ^= 0x5a;
    let err = TableReader::open(
        mem_file(&t),
        "t".into(),
        1,
        read_context(true),
        false,
        false,
    )
    .map(|_| ())
    .expect_err("a damaged range-deletion block");
    assert!(err.is_corruption());
    fix_table_checksums(&mut t);
    assert!(t == TABLE_V4, "the fixer restores the written checksum");
}
