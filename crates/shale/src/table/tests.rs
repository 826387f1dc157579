//! Table-level tests: roundtrips, iteration against a model, accounting,
//! corruption, and the golden fixture.

use std::cmp::Ordering;
use std::path::PathBuf;
use std::sync::Arc;

use super::test_util::{MemFile, MemWriter, Rng};
use super::*;
use crate::cache::LruCache;
use crate::error::Error;
use crate::format::{compare_internal, InternalKey, ValueKind};
use crate::iter::InternalIterator;
use crate::metrics::{BlockKind, Metrics, Stats};

type Entry = (Vec<u8>, Vec<u8>);

fn ikey(user_key: &[u8], seq: u64, kind: ValueKind) -> Vec<u8> {
    InternalKey::new(user_key, seq, kind).encoded().to_vec()
}

fn build(entries: &[Entry], opts: TableBuildOptions) -> (Vec<u8>, TableProperties) {
    let (writer, buf) = MemWriter::new();
    let mut b = TableBuilder::new(Box::new(writer), PathBuf::from("test.sst"), opts);
    for (k, v) in entries {
        b.add(k, v).unwrap();
    }
    let props = b.finish().unwrap();
    let data = buf.lock().unwrap().clone();
    assert_eq!(props.file_size, data.len() as u64);
    (data, props)
}

fn ctx() -> ReadContext {
    ReadContext {
        cache: Arc::new(LruCache::new(64 << 20, 1)),
        stats: Arc::new(Stats::default()),
        verify_checksums: true,
        tracer: Arc::default(),
    }
}

fn open_with(
    data: Vec<u8>,
    ctx: &ReadContext,
    pin: bool,
) -> crate::error::Result<Arc<TableReader>> {
    let file = MemFile::new(data);
    TableReader::open(file, PathBuf::from("test.sst"), 7, ctx.clone(), pin, pin).map(Arc::new)
}

fn open(data: Vec<u8>, ctx: &ReadContext) -> Arc<TableReader> {
    open_with(data, ctx, false).unwrap()
}

/// `n` random 32-byte user keys, sorted, each with one value of `value_len` bytes.
fn random_entries(seed: u64, n: usize, value_len: usize) -> Vec<Entry> {
    let mut rng = Rng::new(seed);
    let mut keys: Vec<[u8; 32]> = (0..n).map(|_| rng.bytes32()).collect();
    keys.sort();
    keys.dedup();
    keys.iter()
        .enumerate()
        .map(|(i, k)| {
            let v: Vec<u8> = (0..value_len).map(|j| (i * 31 + j) as u8).collect();
            (ikey(k, 1 + i as u64, ValueKind::Value), v)
        })
        .collect()
}

fn small_opts() -> TableBuildOptions {
    TableBuildOptions {
        block_size: 256,
        block_restart_interval: 4,
        index_partition_size: 64,
        compression: Compression::None,
        filter_bits_per_key: Some(10),
        filter_kind: super::FilterKind::Bloom,
        format_version: crate::format::TABLE_FORMAT_VERSION,
    }
}

/// Default options of table format version 2 (one filter block, index
/// partitions of entries), for the tests of its accounting.
fn v2_opts() -> TableBuildOptions {
    TableBuildOptions {
        format_version: 2,
        ..TableBuildOptions::default()
    }
}

fn user(k: &[u8]) -> &[u8] {
    &k[..k.len() - 8]
}

fn seq_of(k: &[u8]) -> u64 {
    u64::from_le_bytes(k[k.len() - 8..].try_into().unwrap()) >> 8
}

fn kind_of(k: &[u8]) -> ValueKind {
    ValueKind::from_u8(k[k.len() - 8]).unwrap()
}

/// What a get must return according to the sorted entries.
fn model_get(entries: &[Entry], user_key: &[u8], seq: u64) -> TableGet {
    entries
        .iter()
        .find(|(k, _)| user(k) == user_key && seq_of(k) <= seq)
        .map_or(TableGet::Absent, |(k, v)| {
            TableGet::Found(kind_of(k), v.clone().into())
        })
}

fn delta(stats: &Stats, before: &Metrics) -> Metrics {
    stats.snapshot().delta(before)
}

#[test]
fn roundtrip_many_keys_with_each_option_set() {
    let entries = random_entries(1, 20_000, 40);
    for (name, opts) in [
        ("default", TableBuildOptions::default()),
        ("small blocks and partitions", small_opts()),
        (
            "lz4",
            TableBuildOptions {
                compression: Compression::Lz4,
                ..TableBuildOptions::default()
            },
        ),
        (
            "no filter",
            TableBuildOptions {
                filter_bits_per_key: None,
                ..small_opts()
            },
        ),
        (
            "version 1",
            TableBuildOptions {
                format_version: 1,
                ..TableBuildOptions::default()
            },
        ),
        (
            "version 1, small blocks",
            TableBuildOptions {
                format_version: 1,
                ..small_opts()
            },
        ),
        (
            "binary fuse filters",
            TableBuildOptions {
                filter_bits_per_key: Some(9),
                filter_kind: super::FilterKind::BinaryFuse,
                ..TableBuildOptions::default()
            },
        ),
        (
            "binary fuse filters, small partitions",
            TableBuildOptions {
                filter_bits_per_key: Some(9),
                filter_kind: super::FilterKind::BinaryFuse,
                ..small_opts()
            },
        ),
        (
            "version 2",
            TableBuildOptions {
                format_version: 2,
                ..TableBuildOptions::default()
            },
        ),
        (
            "version 2, small blocks",
            TableBuildOptions {
                format_version: 2,
                ..small_opts()
            },
        ),
    ] {
        let (data, props) = build(&entries, opts.clone());
        assert_eq!(props.format_version, opts.format_version, "{name}");
        if opts.format_version == 1 {
            assert_eq!(props.data_padding_bytes, 0, "{name}");
        }
        assert_eq!(props.num_entries, entries.len() as u64, "{name}");
        assert_eq!(props.smallest_key, entries[0].0);
        assert_eq!(props.largest_key, entries.last().unwrap().0);
        assert_eq!(
            (props.smallest_seqno, props.largest_seqno),
            (1, entries.len() as u64)
        );
        assert!(props.data_blocks > 1 && props.index_partitions >= 1);
        if opts.compression == Compression::Lz4 {
            // Version 3 counts the pages, whose padding compression grows.
            assert!(
                props.data_bytes - props.data_padding_bytes
                    < props.raw_key_bytes + props.raw_value_bytes,
                "lz4 saved nothing"
            );
        }
        if name == "small blocks and partitions" {
            assert!(props.index_partitions > 10, "{}", props.index_partitions);
        }
        let c = ctx();
        let t = open(data, &c);
        assert_eq!(t.properties(), &props);
        assert_eq!(t.has_filter(), opts.filter_bits_per_key.is_some());
        for (k, v) in &entries {
            let got = t.get(user(k), u64::MAX, true).unwrap();
            assert_eq!(
                got,
                TableGet::Found(ValueKind::Value, v.clone().into()),
                "{name}"
            );
            // Older than the entry: invisible.
            assert_eq!(
                t.get(user(k), seq_of(k) - 1, false).unwrap(),
                TableGet::Absent
            );
        }
        let mut rng = Rng::new(99);
        let mut filtered = 0;
        for _ in 0..2000 {
            match t.get(&rng.bytes32(), u64::MAX, true).unwrap() {
                TableGet::FilteredOut => filtered += 1,
                TableGet::Absent => {}
                other => panic!("absent key found: {other:?}"),
            }
        }
        if t.has_filter() {
            assert!(filtered > 1900, "filter excluded only {filtered}");
        } else {
            assert_eq!(filtered, 0);
        }
        // Keys below the first and above the last.
        assert_eq!(t.get(b"", u64::MAX, false).unwrap(), TableGet::Absent);
        assert_eq!(
            t.get(&[0xff; 40], u64::MAX, false).unwrap(),
            TableGet::Absent
        );
    }
}

/// Options for blocks that the versions of one user key span, and the entries
/// (see [`straddling_entries_of`]): 128-byte blocks in version 1; in version
/// 2, whose blocks fill a page, values 80 times longer.
fn straddling_case(format_version: u32) -> (Vec<Entry>, TableBuildOptions) {
    let opts = TableBuildOptions {
        block_size: 128,
        index_partition_size: 32,
        format_version,
        ..small_opts()
    };
    let repeat = if format_version >= 2 { 320 } else { 4 };
    (straddling_entries_of(repeat), opts)
}

/// One user key with many versions (values and tombstones, values of `repeat`
/// times a few bytes) between neighbours.
fn straddling_entries_of(repeat: usize) -> Vec<Entry> {
    let mut entries = vec![(ikey(b"a", 5, ValueKind::Value), b"a5".to_vec())];
    for seq in (10..=200u64).rev().step_by(3) {
        let kind = if seq % 7 == 0 {
            ValueKind::Delete
        } else {
            ValueKind::Value
        };
        let v = if kind == ValueKind::Delete {
            Vec::new()
        } else {
            format!("k@{seq}").repeat(repeat).into_bytes()
        };
        entries.push((ikey(b"k", seq, kind), v));
    }
    entries.push((ikey(b"z", 1, ValueKind::Value), b"z1".to_vec()));
    entries
}

#[test]
fn versions_straddling_blocks_honour_sequence_numbers_and_deletes() {
    for version in [1, 2] {
        versions_straddling_blocks(version);
    }
}

fn versions_straddling_blocks(version: u32) {
    let (entries, opts) = straddling_case(version);
    let (data, props) = build(&entries, opts);
    assert!(
        props.data_blocks >= 10,
        "versions must span blocks: {}",
        props.data_blocks
    );
    assert!(
        props.index_partitions >= 3,
        "and partitions: {}",
        props.index_partitions
    );
    assert!(props.num_deletions > 0);
    let t = open(data, &ctx());
    for seq in 0..=210u64 {
        for uk in [&b"a"[..], b"k", b"z", b"j", b"ka", b"zz"] {
            let want = model_get(&entries, uk, seq);
            assert_eq!(t.get(uk, seq, false).unwrap(), want, "{uk:?}@{seq}");
            let filtered = t.get(uk, seq, true).unwrap();
            assert!(
                filtered == want || (filtered == TableGet::FilteredOut && want == TableGet::Absent)
            );
        }
    }
    assert!(
        matches!(t.get(b"k", 14, true).unwrap(), TableGet::Found(ValueKind::Delete, ref v) if v.is_empty())
    );
}

#[test]
fn a_get_reads_past_a_block_only_when_the_key_straddles() {
    for version in [1, 2] {
        reads_past_a_block_only_when_the_key_straddles(version);
    }
}

fn reads_past_a_block_only_when_the_key_straddles(version: u32) {
    let (entries, opts) = straddling_case(version);
    let (data, _) = build(&entries, opts);
    let c = ctx();
    let t = open(data, &c);
    // The oldest version of "k" sits in the last block holding "k": the lookup walks
    // every block of "k" up to it.
    let before = c.stats.snapshot();
    assert_eq!(
        t.get(b"k", 10, false).unwrap(),
        model_get(&entries, b"k", 10)
    );
    let walked = delta(&c.stats, &before).block(BlockKind::Data).cache_misses;
    assert!(walked > 3, "walked {walked} blocks");
    // The newest version is in the first block holding "k": one data block.
    let before = c.stats.snapshot();
    assert_eq!(
        t.get(b"k", 1000, false).unwrap(),
        model_get(&entries, b"k", 1000)
    );
    let d = delta(&c.stats, &before).block(BlockKind::Data);
    assert_eq!(d.cache_hits + d.cache_misses, 1);
}

#[test]
fn absent_keys_between_blocks_read_one_data_block() {
    let entries = random_entries(5, 2000, 40);
    let (data, _) = build(
        &entries,
        TableBuildOptions {
            filter_bits_per_key: None,
            ..small_opts()
        },
    );
    let c = ctx();
    let t = open(data, &c);
    let mut rng = Rng::new(6);
    for _ in 0..500 {
        let before = c.stats.snapshot();
        assert_eq!(
            t.get(&rng.bytes32(), u64::MAX, true).unwrap(),
            TableGet::Absent
        );
        let d = delta(&c.stats, &before).block(BlockKind::Data);
        assert!(d.cache_hits + d.cache_misses <= 1, "{d:?}");
    }
}

/// Entries with several versions per key and deletions, sorted.
fn versioned_entries(seed: u64, users: usize) -> Vec<Entry> {
    let mut rng = Rng::new(seed);
    let mut entries = Vec::new();
    for _ in 0..users {
        let uk = rng.bytes32()[..4 + rng.below(8) as usize].to_vec();
        for _ in 0..1 + rng.below(4) {
            let seq = rng.below(1000);
            let kind = if rng.below(5) == 0 {
                ValueKind::Delete
            } else {
                ValueKind::Value
            };
            let v = vec![rng.below(256) as u8; rng.below(60) as usize];
            entries.push((ikey(&uk, seq, kind), v));
        }
    }
    entries.sort_by(|a, b| compare_internal(&a.0, &b.0));
    entries.dedup_by(|a, b| a.0 == b.0);
    entries
}

fn lower_bound(entries: &[Entry], target: &[u8]) -> usize {
    entries.partition_point(|(k, _)| compare_internal(k, target) == Ordering::Less)
}

fn check_at(it: &dyn InternalIterator, entries: &[Entry], pos: Option<usize>, what: &str) {
    it.status().unwrap();
    match pos {
        Some(i) => {
            assert!(it.valid(), "{what}: expected entry {i}");
            assert_eq!(it.key(), &entries[i].0[..], "{what}");
            assert_eq!(it.value(), &entries[i].1[..], "{what}");
        }
        None => assert!(!it.valid(), "{what}: expected exhausted"),
    }
}

#[test]
fn iterator_matches_a_sorted_model() {
    let entries = versioned_entries(11, 1500);
    for opts in [
        small_opts(),
        TableBuildOptions {
            compression: Compression::Lz4,
            ..TableBuildOptions::default()
        },
    ] {
        let (data, props) = build(&entries, opts);
        assert!(props.data_blocks > 3);
        let t = open(data, &ctx());
        let mut it = t.iter();
        let n = entries.len();

        it.seek_to_first();
        for i in 0..n {
            check_at(it.as_ref(), &entries, Some(i), "forward");
            it.next();
        }
        check_at(it.as_ref(), &entries, None, "forward end");

        it.seek_to_last();
        for i in (0..n).rev() {
            check_at(it.as_ref(), &entries, Some(i), "backward");
            it.prev();
        }
        check_at(it.as_ref(), &entries, None, "backward end");

        let mut rng = Rng::new(3);
        for round in 0..3000 {
            // Targets: existing keys, neighbours with other seqnos, random keys.
            let target = match round % 3 {
                0 => entries[rng.below(n as u64) as usize].0.clone(),
                1 => {
                    let k = &entries[rng.below(n as u64) as usize].0;
                    InternalKey::seek_key(user(k), rng.below(1100))
                        .encoded()
                        .to_vec()
                }
                _ => ikey(
                    &rng.bytes32()[..1 + rng.below(6) as usize],
                    rng.below(1000),
                    ValueKind::Value,
                ),
            };
            let lb = lower_bound(&entries, &target);
            it.seek(&target);
            check_at(it.as_ref(), &entries, (lb < n).then_some(lb), "seek");
            // Walk a few steps either way from there.
            let mut pos = (lb < n).then_some(lb);
            for _ in 0..rng.below(6) {
                let Some(p) = pos else { break };
                if rng.below(2) == 0 {
                    it.next();
                    pos = (p + 1 < n).then_some(p + 1);
                } else {
                    it.prev();
                    pos = p.checked_sub(1);
                }
                check_at(it.as_ref(), &entries, pos, "walk");
            }
            // seek_for_prev: last entry <= target.
            let ub =
                entries.partition_point(|(k, _)| compare_internal(k, &target) != Ordering::Greater);
            it.seek_for_prev(&target);
            check_at(it.as_ref(), &entries, ub.checked_sub(1), "seek_for_prev");
        }
        // Seeks outside the table.
        it.seek(&ikey(&[0xff; 40], 0, ValueKind::Delete));
        check_at(it.as_ref(), &entries, None, "seek past end");
        it.seek_for_prev(&ikey(b"", u64::MAX >> 8, ValueKind::Value));
        check_at(it.as_ref(), &entries, None, "seek_for_prev before start");
        it.seek(b"");
        check_at(it.as_ref(), &entries, Some(0), "seek to empty target");
    }
}

#[test]
fn index_costs_at_most_10_bytes_per_data_block() {
    // The study's shape: 32-byte hash keys, 110-byte values, default options.
    let entries = random_entries(2024, 120_000, 110);
    let (data, props) = build(&entries, TableBuildOptions::default());
    let per_block = (props.index_partition_bytes + props.top_level_index_bytes) as f64
        / props.data_blocks as f64;
    eprintln!(
        "index bytes per data block: {per_block:.2} ({} partitions, {} data blocks, {} B index)",
        props.index_partitions,
        props.data_blocks,
        props.index_partition_bytes + props.top_level_index_bytes
    );
    assert!(props.data_blocks > 3000);
    assert!(per_block <= 10.0, "{per_block}");
    // The index still finds everything.
    let t = open(data, &ctx());
    for (k, v) in entries.iter().step_by(97) {
        assert_eq!(
            t.get(user(k), u64::MAX, true).unwrap(),
            TableGet::Found(ValueKind::Value, v.clone().into())
        );
    }
}

fn block_sizes(data: &[u8]) -> TableLayout {
    inspect_table(MemFile::new(data.to_vec()), PathBuf::from("test.sst")).unwrap()
}

fn bytes_of(layout: &TableLayout, kind: &str, offset: u64) -> u64 {
    let b = layout
        .blocks
        .iter()
        .find(|b| b.kind.name() == kind && b.offset == offset)
        .unwrap();
    b.size + 5
}

#[test]
fn v2_a_cold_get_costs_one_miss_and_one_read_per_block_kind_then_hits() {
    let entries = random_entries(8, 5000, 110);
    let (data, _) = build(&entries, v2_opts());
    let layout = block_sizes(&data);
    let c = ctx();
    let file = MemFile::new(data);
    let before = c.stats.snapshot();
    let t = TableReader::open(file.clone(), "t.sst".into(), 1, c.clone(), false, false).unwrap();
    let d = delta(&c.stats, &before);
    assert_eq!(d.block(BlockKind::Footer).physical_reads, 1);
    assert_eq!(d.block(BlockKind::Footer).bytes_read, 64);
    assert_eq!(d.block(BlockKind::Properties).physical_reads, 1);
    assert_eq!(d.physical_reads(), 2);
    assert_eq!(d.cache_misses() + d.cache_hits(), 0);
    assert_eq!(file.reads(), 2);

    let (k, v) = &entries[1234];
    let before = c.stats.snapshot();
    assert_eq!(
        t.get(user(k), u64::MAX, true).unwrap(),
        TableGet::Found(ValueKind::Value, v.clone().into())
    );
    let d = delta(&c.stats, &before);
    for kind in [
        BlockKind::Filter,
        BlockKind::TopIndex,
        BlockKind::IndexPartition,
        BlockKind::Data,
    ] {
        let m = d.block(kind);
        assert_eq!(
            (m.cache_misses, m.physical_reads, m.cache_hits),
            (1, 1, 0),
            "{kind:?}"
        );
    }
    assert_eq!(d.physical_reads(), 4);
    assert_eq!(file.reads(), 6);
    assert_eq!(d.filter_positives, 1);
    let filter = layout
        .blocks
        .iter()
        .find(|b| b.kind == crate::table::LayoutKind::Filter)
        .unwrap();
    assert_eq!(d.block(BlockKind::Filter).bytes_read, filter.size + 5);
    let top = layout
        .blocks
        .iter()
        .find(|b| b.kind == crate::table::LayoutKind::TopIndex)
        .unwrap();
    assert_eq!(d.block(BlockKind::TopIndex).bytes_read, top.size + 5);
    let data_bytes = d.block(BlockKind::Data).bytes_read;
    assert!(data_bytes > 3000 && data_bytes <= 4096 + 5, "{data_bytes}");

    let before = c.stats.snapshot();
    t.get(user(k), u64::MAX, true).unwrap();
    let d = delta(&c.stats, &before);
    for kind in [
        BlockKind::Filter,
        BlockKind::TopIndex,
        BlockKind::IndexPartition,
        BlockKind::Data,
    ] {
        let m = d.block(kind);
        assert_eq!(
            (m.cache_hits, m.cache_misses, m.physical_reads),
            (1, 0, 0),
            "{kind:?}"
        );
    }
    assert_eq!(file.reads(), 6);
    // The cache holds the four blocks.
    assert!(c.cache.usage() >= bytes_of(&layout, "top_index", top.offset));
}

#[test]
fn v2_a_filtered_out_get_touches_only_the_filter() {
    let entries = random_entries(9, 3000, 20);
    let (data, _) = build(&entries, v2_opts());
    let c = ctx();
    let t = open(data, &c);
    let mut rng = Rng::new(10);
    let mut seen = 0;
    for _ in 0..200 {
        let before = c.stats.snapshot();
        let got = t.get(&rng.bytes32(), u64::MAX, true).unwrap();
        let d = delta(&c.stats, &before);
        if got == TableGet::FilteredOut {
            seen += 1;
            assert_eq!(d.filter_negatives, 1);
            let f = d.block(BlockKind::Filter);
            assert_eq!(f.cache_hits + f.cache_misses, 1);
            for kind in [
                BlockKind::TopIndex,
                BlockKind::IndexPartition,
                BlockKind::Data,
            ] {
                assert_eq!(d.block(kind), Default::default(), "{kind:?}");
            }
        } else {
            assert_eq!(got, TableGet::Absent);
            assert_eq!(d.filter_positives, 1);
        }
    }
    assert!(seen > 190);
}

/// Version 3, through the counters and the file seam: a cold Get reads the
/// top-level filter index, one filter partition, the top-level index, one
/// locator and one data block, each in one read; the data read is exactly
/// one aligned page and every partition read at most one page. Warm, it
/// reads nothing. Pinned, open reads only the two top-level blocks.
#[test]
fn v3_a_get_reads_one_filter_partition_and_one_page_per_data_block() {
    let entries = random_entries(8, 30_000, 110);
    let (data, props) = build(&entries, TableBuildOptions::default());
    assert!(props.filter_partitions > 5, "{props:?}");
    for pin in [false, true] {
        let c = ctx();
        let file = MemFile::new(data.clone());
        let t = TableReader::open(file.clone(), "t.sst".into(), 1, c.clone(), pin, pin).unwrap();
        let opened = file.take_log();
        assert_eq!(opened.len(), if pin { 4 } else { 2 }, "{opened:?}");
        let pinned = t.pinned_bytes();
        assert_eq!(
            pinned,
            if pin {
                props.top_level_index_bytes + props.top_level_filter_index_bytes
            } else {
                0
            }
        );
        for (i, (k, v)) in entries.iter().enumerate().step_by(997) {
            let before = c.stats.snapshot();
            assert_eq!(
                t.get(user(k), u64::MAX, true).unwrap(),
                TableGet::Found(ValueKind::Value, v.clone().into())
            );
            let d = delta(&c.stats, &before);
            let reads = file.take_log();
            let expect_top = if pin || i > 0 { 0 } else { 2 };
            assert_eq!(d.block(BlockKind::TopIndex).physical_reads, expect_top);
            assert!(d.block(BlockKind::Filter).physical_reads <= 1);
            assert_eq!(
                d.block(BlockKind::Filter).cache_misses + d.block(BlockKind::Filter).cache_hits,
                1,
                "one filter partition per Get"
            );
            assert!(d.block(BlockKind::IndexPartition).physical_reads <= 1);
            assert_eq!(d.block(BlockKind::Data).physical_reads, 1);
            assert_eq!(d.block(BlockKind::Data).bytes_read, 4096);
            assert_eq!(reads.len() as u64, d.physical_reads(), "{reads:?}");
            let data_read = reads.last().unwrap();
            assert_eq!((data_read.0 % 4096, data_read.1), (0, 4096), "{reads:?}");
            for &(off, len) in &reads {
                let top_level = off >= props.data_bytes
                    && (off + len as u64)
                        > props.file_size
                            - 200
                            - props.top_level_index_bytes
                            - props.top_level_filter_index_bytes;
                if !top_level {
                    assert_eq!(off % 4096, 0, "{reads:?}");
                    assert!(len <= 4096, "{reads:?}");
                }
            }
            // Warm: the same Get reads nothing.
            let before = c.stats.snapshot();
            t.get(user(k), u64::MAX, true).unwrap();
            assert_eq!(delta(&c.stats, &before).physical_reads(), 0);
            assert!(file.take_log().is_empty());
        }
    }
}

/// Version 3: a negative filter answer costs the filter index and one
/// partition, nothing else; a key past the table's last filter partition
/// costs only the filter index.
#[test]
fn v3_a_filtered_out_get_touches_only_the_filter() {
    let entries = random_entries(9, 10_000, 20);
    let (data, _) = build(&entries, TableBuildOptions::default());
    let c = ctx();
    let t = open(data, &c);
    let mut rng = Rng::new(10);
    let mut seen = 0;
    for _ in 0..300 {
        let before = c.stats.snapshot();
        let got = t.get(&rng.bytes32(), u64::MAX, true).unwrap();
        let d = delta(&c.stats, &before);
        if got == TableGet::FilteredOut {
            seen += 1;
            assert_eq!(d.filter_negatives, 1);
            let f = d.block(BlockKind::Filter);
            assert!(f.cache_hits + f.cache_misses <= 1);
            let top = d.block(BlockKind::TopIndex);
            assert_eq!(
                top.cache_hits + top.cache_misses,
                1,
                "the filter index only"
            );
            for kind in [BlockKind::IndexPartition, BlockKind::Data] {
                assert_eq!(d.block(kind), Default::default(), "{kind:?}");
            }
        } else {
            assert_eq!(got, TableGet::Absent);
        }
    }
    assert!(seen > 285, "{seen}");
    assert_eq!(
        t.get(&[0xff; 40], u64::MAX, true).unwrap(),
        TableGet::FilteredOut
    );
}

/// Version 3: a damaged byte in any block kind is corruption at that block.
#[test]
fn v3_a_damaged_byte_in_each_block_kind_is_corruption_at_that_block() {
    let entries = random_entries(16, 20_000, 50);
    let opts = TableBuildOptions {
        index_partition_size: 1024,
        ..TableBuildOptions::default()
    };
    let (data, _) = build(&entries, opts);
    let layout = block_sizes(&data);
    let mut targets: Vec<(&str, u64, u64)> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for b in &layout.blocks {
        // The middle, and for paged blocks the tail, of the first two blocks
        // of each kind.
        let kind = b.kind.name();
        if seen.iter().filter(|k| *k == &kind).count() < 2 {
            seen.insert(kind);
            targets.push((kind, b.offset, b.offset + b.size / 2));
            if matches!(kind, "data" | "filter" | "index") {
                targets.push((kind, b.offset, b.offset + b.size - 7));
            }
        }
    }
    targets.push(("footer", layout.footer_offset, layout.footer_offset + 20));
    let mut kinds = std::collections::BTreeSet::new();
    for (kind, block_offset, at) in targets {
        let mut bad = data.clone();
        bad[at as usize] ^= 0x40;
        match first_error(bad, &entries, true) {
            Some(Error::Corruption { offset, reason, .. }) => {
                assert_eq!(offset, block_offset, "{kind} at {at}: {reason}");
                kinds.insert(kind);
            }
            other => panic!("{kind} at {at}: expected corruption, got {other:?}"),
        }
    }
    for k in [
        "data",
        "filter",
        "index",
        "filter_index",
        "top_index",
        "properties",
        "footer",
    ] {
        assert!(kinds.contains(k), "{k} not tested");
    }
}

/// Version 3's filter partitions of either kind: no present key is ever
/// filtered out, and the false-positive rate over absent keys stays near
/// the kind's own (Bloom, 10 bits: about 0.9%; binary fuse, 9 bits and 7-bit
/// fingerprints: about 0.8%, in fewer bytes).
#[test]
fn v3_filter_partitions_have_no_false_negatives_and_a_bounded_fpr() {
    let entries = random_entries(31, 40_000, 8);
    let mut sizes = Vec::new();
    for (kind, bits, max_fpr) in [
        (super::FilterKind::Bloom, 10, 0.013),
        (super::FilterKind::BinaryFuse, 9, 0.011),
    ] {
        let opts = TableBuildOptions {
            filter_bits_per_key: Some(bits),
            filter_kind: kind,
            ..TableBuildOptions::default()
        };
        let (data, props) = build(&entries, opts);
        assert!(props.filter_partitions > 5, "{props:?}");
        let t = open(data, &ctx());
        for (k, _) in &entries {
            assert_ne!(
                t.get(user(k), u64::MAX, true).unwrap(),
                TableGet::FilteredOut
            );
        }
        let mut rng = Rng::new(32);
        let probes = 100_000;
        let passed = (0..probes)
            .filter(|_| t.get(&rng.bytes32(), u64::MAX, true).unwrap() != TableGet::FilteredOut)
            .count();
        let fpr = passed as f64 / probes as f64;
        assert!(fpr <= max_fpr, "{kind:?}: false-positive rate {fpr}");
        assert!(
            fpr >= max_fpr / 4.0,
            "{kind:?}: {fpr} is too good to be measured"
        );
        sizes.push(props.filter_bytes as f64 * 8.0 / entries.len() as f64);
        eprintln!(
            "{kind:?} {bits}: false-positive rate {fpr:.4}, {:.2} bits a key",
            sizes.last().unwrap()
        );
    }
    // The fuse filters take fewer bits a key than the Bloom filters.
    assert!(sizes[1] < sizes[0] - 1.0, "bits a key: {sizes:?}");
}

#[test]
fn consult_filter_false_never_reads_the_filter() {
    let entries = random_entries(12, 3000, 20);
    let (data, _) = build(&entries, TableBuildOptions::default());
    let c = ctx();
    let t = open(data, &c);
    let mut rng = Rng::new(13);
    for (i, (k, _)) in entries.iter().take(200).enumerate() {
        let uk = if i % 2 == 0 {
            rng.bytes32().to_vec()
        } else {
            user(k).to_vec()
        };
        let got = t.get(&uk, u64::MAX, false).unwrap();
        assert_ne!(got, TableGet::FilteredOut);
    }
    let m = c.stats.snapshot();
    assert_eq!(m.block(BlockKind::Filter), Default::default());
    assert_eq!(m.filter_negatives + m.filter_positives, 0);
    assert!(m.block(BlockKind::Data).cache_misses > 0);
}

#[test]
fn v2_pinned_metadata_is_read_at_open_and_reserved_in_the_cache() {
    let entries = random_entries(14, 5000, 110);
    let (data, _) = build(&entries, v2_opts());
    let layout = block_sizes(&data);
    let c = ctx();
    let t = open_with(data, &c, true).unwrap();
    let m = c.stats.snapshot();
    for kind in [
        BlockKind::Footer,
        BlockKind::Properties,
        BlockKind::TopIndex,
        BlockKind::Filter,
    ] {
        let b = m.block(kind);
        assert_eq!(
            (b.physical_reads, b.cache_misses, b.cache_hits),
            (1, 0, 0),
            "{kind:?}"
        );
    }
    let filter = layout
        .blocks
        .iter()
        .find(|b| b.kind == crate::table::LayoutKind::Filter)
        .unwrap();
    assert_eq!(m.block(BlockKind::Filter).bytes_read, filter.size + 5);
    assert!(t.pinned_bytes() > filter.size);
    assert_eq!(c.cache.pinned(), t.pinned_bytes());

    let before = c.stats.snapshot();
    let (k, v) = &entries[77];
    assert_eq!(
        t.get(user(k), u64::MAX, true).unwrap(),
        TableGet::Found(ValueKind::Value, v.clone().into())
    );
    let d = delta(&c.stats, &before);
    assert_eq!(d.block(BlockKind::Filter), Default::default());
    assert_eq!(d.block(BlockKind::TopIndex), Default::default());
    assert_eq!(d.filter_positives, 1);
    assert_eq!(d.block(BlockKind::IndexPartition).cache_misses, 1);
    assert_eq!(d.block(BlockKind::Data).cache_misses, 1);
    drop(t);
    assert_eq!(c.cache.pinned(), 0);
}

#[test]
fn iterators_count_their_block_reads() {
    let entries = random_entries(15, 3000, 110);
    let (data, props) = build(&entries, TableBuildOptions::default());
    let c = ctx();
    let t = open(data, &c);
    let mut it = t.iter();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, entries.len());
    let m = c.stats.snapshot();
    assert_eq!(m.block(BlockKind::Data).cache_misses, props.data_blocks);
    assert_eq!(
        m.block(BlockKind::IndexPartition).cache_misses,
        props.index_partitions
    );
    assert_eq!(m.block(BlockKind::TopIndex).cache_misses, 1);
    assert_eq!(m.block(BlockKind::Filter), Default::default());
}

/// Damages one byte of `data` and returns the first error of opening the table,
/// reading every key, and iterating, checking that nothing wrong is returned.
fn first_error(data: Vec<u8>, entries: &[Entry], verify: bool) -> Option<Error> {
    let c = ReadContext {
        verify_checksums: verify,
        ..ctx()
    };
    let t = match open_with(data, &c, false) {
        Ok(t) => t,
        Err(e) => return Some(e),
    };
    for (k, v) in entries {
        match t.get(user(k), u64::MAX, true) {
            Ok(got) if verify => assert_eq!(got, TableGet::Found(kind_of(k), v.clone().into())),
            Ok(_) => {}
            Err(e) => return Some(e),
        }
    }
    let mut it = t.iter();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() && n <= entries.len() {
        n += 1;
        it.next();
    }
    it.status().err()
}

#[test]
fn v2_a_damaged_byte_in_each_block_kind_is_corruption_at_that_block() {
    let entries = random_entries(16, 3000, 50);
    let (data, _) = build(&entries, v2_opts());
    let layout = block_sizes(&data);
    let mut targets: Vec<(&str, u64, u64)> = layout
        .blocks
        .iter()
        .map(|b| (b.kind.name(), b.offset, b.offset + b.size / 2))
        .collect();
    // Also the trailer of a data block, and the footer (a handle and the magic).
    let first = &layout.blocks[0];
    targets.push(("data trailer", first.offset, first.offset + first.size + 2));
    targets.push(("footer", layout.footer_offset, layout.footer_offset + 20));
    targets.push((
        "footer magic",
        layout.footer_offset,
        layout.footer_offset + 60,
    ));
    let mut kinds = std::collections::BTreeSet::new();
    for (kind, block_offset, at) in targets {
        let mut bad = data.clone();
        bad[at as usize] ^= 0x40;
        match first_error(bad, &entries, true) {
            Some(Error::Corruption {
                offset,
                file,
                reason,
            }) => {
                assert_eq!(offset, block_offset, "{kind} at {at}: {reason}");
                assert_eq!(file, PathBuf::from("test.sst"));
                kinds.insert(kind);
            }
            other => panic!("{kind} at {at}: expected corruption, got {other:?}"),
        }
    }
    for k in [
        "data",
        "filter",
        "index",
        "top_index",
        "properties",
        "footer",
    ] {
        assert!(kinds.contains(k), "{k} not tested");
    }
}

#[test]
fn random_damage_without_checksums_never_panics() {
    let entries = versioned_entries(17, 300);
    let (data, _) = build(&entries, small_opts());
    let mut rng = Rng::new(18);
    let mut errors = 0;
    for _ in 0..400 {
        let mut bad = data.clone();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(bad.len() as u64) as usize;
            bad[at] ^= 1 << rng.below(8);
        }
        if first_error(bad, &entries, false).is_some() {
            errors += 1;
        }
    }
    assert!(errors > 0);
}

#[test]
fn truncated_or_foreign_files_are_corruption() {
    let entries = random_entries(19, 500, 20);
    let (data, _) = build(&entries, TableBuildOptions::default());
    for len in [
        0,
        1,
        63,
        64,
        100,
        data.len() / 2,
        data.len() - 64,
        data.len() - 1,
    ] {
        let err = open_with(data[..len].to_vec(), &ctx(), false)
            .err()
            .expect("must fail");
        let Error::Corruption { offset, .. } = err else {
            panic!("{len}: {err:?}")
        };
        let expected = if len < 64 { 0 } else { len as u64 - 64 };
        assert_eq!(offset, expected, "{len}");
    }
    // Bytes appended after a table: the footer is not where the properties say.
    let mut longer = data.clone();
    longer.extend_from_slice(&[0; 100]);
    assert!(open_with(longer, &ctx(), false)
        .err()
        .unwrap()
        .is_corruption());
}

#[test]
fn an_unknown_format_version_is_corruption() {
    for version in [0u32, crate::format::TABLE_FORMAT_VERSION + 1] {
        let (mut data, _) = build(&random_entries(20, 100, 20), TableBuildOptions::default());
        let footer_offset = data.len() - 64;
        data[footer_offset + 48..footer_offset + 52].copy_from_slice(&version.to_le_bytes());
        let crc = crate::format::masked_crc(&data[footer_offset..footer_offset + 52]);
        data[footer_offset + 52..footer_offset + 56].copy_from_slice(&crc.to_le_bytes());
        match open_with(data, &ctx(), false) {
            Err(Error::Corruption { offset, reason, .. }) => {
                assert_eq!(offset, footer_offset as u64);
                assert!(reason.contains(&format!("version {version}")), "{reason}");
            }
            other => panic!("{:?}", other.err()),
        }
    }
}

#[test]
fn a_version_disagreeing_with_the_properties_is_corruption() {
    // A version-2 table whose footer claims version 1 (its partitions would be
    // decoded with the wrong offset rule).
    let (mut data, _) = build(&random_entries(20, 100, 20), TableBuildOptions::default());
    let footer_offset = data.len() - 64;
    data[footer_offset + 48..footer_offset + 52].copy_from_slice(&1u32.to_le_bytes());
    let crc = crate::format::masked_crc(&data[footer_offset..footer_offset + 52]);
    data[footer_offset + 52..footer_offset + 56].copy_from_slice(&crc.to_le_bytes());
    match open_with(data, &ctx(), false) {
        Err(Error::Corruption { reason, .. }) => {
            assert!(reason.contains("disagrees"), "{reason}");
        }
        other => panic!("{:?}", other.err()),
    }
}

#[test]
fn an_empty_table_reads_as_empty() {
    let (data, props) = build(&[], TableBuildOptions::default());
    assert_eq!(
        (props.num_entries, props.data_blocks, props.index_partitions),
        (0, 0, 0)
    );
    let t = open(data.clone(), &ctx());
    assert_eq!(t.get(b"x", u64::MAX, true).unwrap(), TableGet::FilteredOut);
    assert_eq!(t.get(b"x", u64::MAX, false).unwrap(), TableGet::Absent);
    let mut it = t.iter();
    it.seek_to_first();
    assert!(!it.valid());
    it.seek_to_last();
    assert!(!it.valid());
    it.seek(b"anything");
    assert!(!it.valid());
    it.status().unwrap();
    let layout = block_sizes(&data);
    assert_eq!(
        layout
            .blocks
            .iter()
            .map(|b| b.kind.name())
            .collect::<Vec<_>>(),
        ["filter_index", "top_index", "properties"]
    );
    let (data, _) = build(&[], v2_opts());
    let t = open(data.clone(), &ctx());
    assert_eq!(t.get(b"x", u64::MAX, true).unwrap(), TableGet::FilteredOut);
    assert_eq!(
        block_sizes(&data)
            .blocks
            .iter()
            .map(|b| b.kind.name())
            .collect::<Vec<_>>(),
        ["filter", "top_index", "properties"]
    );
}

#[test]
fn the_builder_rejects_bad_keys() {
    let (writer, _) = MemWriter::new();
    let mut b = TableBuilder::new(
        Box::new(writer),
        "x.sst".into(),
        TableBuildOptions::default(),
    );
    b.add(&ikey(b"b", 5, ValueKind::Value), b"v").unwrap();
    assert!(
        b.add(&ikey(b"b", 5, ValueKind::Value), b"v").is_err(),
        "duplicate"
    );
    assert!(
        b.add(&ikey(b"b", 6, ValueKind::Value), b"v").is_err(),
        "newer after older"
    );
    assert!(
        b.add(&ikey(b"a", 9, ValueKind::Value), b"v").is_err(),
        "smaller user key"
    );
    assert!(b.add(b"short", b"v").is_err(), "not an internal key");
    b.add(&ikey(b"b", 4, ValueKind::Delete), b"").unwrap();
    assert_eq!(b.num_entries(), 2);
    assert!(b.estimated_size() > 0);
    b.abort().unwrap();
}

#[test]
fn inspect_lists_every_block_back_to_back() {
    for version in [1, 2] {
        inspect_lists_every_block(version);
    }
}

/// Version 3: data blocks, filter partitions and locators each start on a
/// page (data blocks take whole pages, partitions at most one), the
/// top-level blocks follow the last locator directly, and the counts and
/// bytes add up to the properties.
#[test]
fn inspect_lists_every_paged_block() {
    let entries = random_entries(21, 60_000, 110);
    // Half-page partitions, so that this table has several of each.
    let opts = TableBuildOptions {
        index_partition_size: 2048,
        ..TableBuildOptions::default()
    };
    let (data, props) = build(&entries, opts);
    let layout = block_sizes(&data);
    let count = |k: &str| layout.blocks.iter().filter(|b| b.kind.name() == k).count() as u64;
    let bytes = |k: &str| {
        layout
            .blocks
            .iter()
            .filter(|b| b.kind.name() == k)
            .map(|b| b.size)
            .sum::<u64>()
    };
    assert_eq!(count("data"), props.data_blocks);
    assert_eq!(count("index"), props.index_partitions);
    assert_eq!(count("filter"), props.filter_partitions);
    assert!(
        props.index_partitions > 1 && props.filter_partitions > 10,
        "{props:?}"
    );
    assert_eq!(
        (
            count("filter_index"),
            count("top_index"),
            count("properties")
        ),
        (1, 1, 1)
    );
    assert_eq!(bytes("data"), props.data_bytes);
    assert_eq!(bytes("index"), props.index_partition_bytes);
    assert_eq!(
        bytes("filter") + props.top_level_filter_index_bytes,
        props.filter_bytes
    );
    let mut expect = 0u64;
    for b in &layout.blocks {
        match b.kind.name() {
            "data" => {
                assert_eq!(b.offset, expect, "{b:?}");
                assert!(b.size > 0 && b.size % 4096 == 0, "{b:?}");
                expect = b.offset + b.size;
            }
            "filter" | "index" => {
                assert_eq!(b.offset, expect.next_multiple_of(4096), "{b:?}");
                assert!(b.size <= 2048, "{b:?}");
                expect = b.offset + b.size;
            }
            _ => {
                assert_eq!(b.offset, expect, "{b:?}");
                expect = b.offset + b.size + 5;
            }
        }
    }
    assert_eq!(expect, layout.footer_offset);
    // 27 entries of 150 bytes fill a page to within one entry.
    assert!(
        props.data_padding_bytes < props.data_blocks * 160,
        "padding {} over {} blocks",
        props.data_padding_bytes,
        props.data_blocks
    );
    let per_block = (props.index_partition_bytes + props.top_level_index_bytes) as f64
        / props.data_blocks as f64;
    assert!(per_block <= 3.0, "{per_block:.2} index bytes a data block");
}

/// Every block of a table of `version` is listed, in file order, each starting
/// where the previous one ends; in version 2 data blocks start on the next page
/// boundary instead, and the padding adds up to the property.
fn inspect_lists_every_block(version: u32) {
    let entries = random_entries(21, 20_000, 110);
    let opts = TableBuildOptions {
        format_version: version,
        ..TableBuildOptions::default()
    };
    let (data, props) = build(&entries, opts);
    let layout = block_sizes(&data);
    let count = |k: &str| layout.blocks.iter().filter(|b| b.kind.name() == k).count() as u64;
    assert_eq!(count("data"), props.data_blocks);
    assert_eq!(count("index"), props.index_partitions);
    assert!(props.index_partitions > 1);
    assert_eq!(
        (count("filter"), count("top_index"), count("properties")),
        (1, 1, 1)
    );
    let mut expect = 0u64;
    let mut padding = 0;
    for b in &layout.blocks {
        if version >= 2 && b.kind == crate::table::LayoutKind::Data {
            let aligned = expect.next_multiple_of(4096);
            padding += aligned - expect;
            expect = aligned;
            assert!(b.size + 5 <= 4096, "{b:?} spills out of its page");
        }
        assert_eq!(b.offset, expect, "{b:?}");
        expect = b.offset + b.size + 5;
    }
    assert_eq!(padding, props.data_padding_bytes);
    if version >= 2 {
        // A block is cut only when the next entry (about 150 bytes here) does
        // not fit: less than one entry of padding per page.
        assert!(
            padding < props.data_blocks * 160,
            "padding {padding} over {} blocks",
            props.data_blocks
        );
    }
    assert_eq!(expect, layout.footer_offset);
    assert_eq!(layout.footer_offset + 64, layout.file_size);
    assert_eq!(layout.properties, props);
}

// ---- Golden fixtures ------------------------------------------------------------

/// The committed table of each format version, written from `fixture_entries()`
/// with `fixture_opts(version)`, and from version 4 on with the range
/// deletions of `fixture_range_dels()` (see [`build_fixture`]).
fn fixture_path(version: u32) -> String {
    format!(
        "{}/tests/fixtures/table-v{version}.sst",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn read_fixture(version: u32) -> Vec<u8> {
    let path = fixture_path(version);
    std::fs::read(&path).unwrap_or_else(|e| panic!("committed fixture {path}: {e}"))
}

/// The fixture's contents: 500 user keys, every 10th with an older version, every
/// 7th newest version a tombstone; compressible values so that LZ4 is used.
fn fixture_entries() -> Vec<Entry> {
    let mut entries = Vec::new();
    for i in 0..500u64 {
        let uk = format!("user{i:05}").into_bytes();
        let seq = 1000 + i;
        if i % 7 == 3 {
            entries.push((ikey(&uk, seq, ValueKind::Delete), Vec::new()));
        } else {
            entries.push((
                ikey(&uk, seq, ValueKind::Value),
                format!("value-{i}-")
                    .repeat(1 + (i % 5) as usize)
                    .into_bytes(),
            ));
        }
        if i % 10 == 0 {
            entries.push((
                ikey(&uk, i + 1, ValueKind::Value),
                format!("old-{i}").into_bytes(),
            ));
        }
    }
    entries
}

/// Version 1: 1 KiB blocks in 128-byte partitions; version 2, whose blocks
/// fill a page whatever `block_size`: 32-byte partitions, so that it too has
/// several.
fn fixture_opts(format_version: u32) -> TableBuildOptions {
    TableBuildOptions {
        block_size: 1024,
        block_restart_interval: 8,
        index_partition_size: if format_version >= 2 { 32 } else { 128 },
        compression: Compression::Lz4,
        filter_bits_per_key: Some(10),
        // Bloom partitions: at 32-byte partitions a fuse partition would hold
        // one key (its bytes are frozen by `fuse::tests` instead).
        filter_kind: super::FilterKind::Bloom,
        format_version,
    }
}

/// The range deletions of the fixture (version 4 on): overlapping tombstones
/// that fragment into several pieces, some of two or three sequence numbers;
/// one from the empty key, one of a single key (`k ++ [0]` as its end), one
/// past the last entry. Against the entries' sequence numbers (`1000 + i` for
/// `user{i}`, `i + 1` for the older versions), they hide some versions and not
/// others: `[user00100, user00200)` at 1150 hides `user00100`..`user00149`
/// but not `user00150`, written at 1150.
fn fixture_range_dels() -> Vec<crate::rangedel::RangeTombstone> {
    let t = |start: &[u8], end: &[u8], seq: u64| crate::rangedel::RangeTombstone {
        start: start.to_vec(),
        end: end.to_vec(),
        seq,
    };
    vec![
        t(b"user00100", b"user00200", 1150),
        t(b"user00150", b"user00260", 1250),
        t(b"user00180", b"user00190", 1100),
        t(b"user00400", b"user00400\0", 2000),
        t(b"user00490", b"user99999", 1495),
        t(b"", b"user00005", 500),
    ]
}

/// The fragments of [`fixture_range_dels`], as the fixture stores them.
fn fixture_fragments() -> crate::rangedel::Fragments {
    crate::rangedel::Fragments::build(fixture_range_dels())
}

/// The fixture of `version`: [`fixture_entries`] with [`fixture_opts`], and
/// from version 4 on the range deletions of [`fixture_range_dels`].
fn build_fixture(version: u32) -> (Vec<u8>, TableProperties) {
    let (writer, buf) = MemWriter::new();
    let mut b = TableBuilder::new(
        Box::new(writer),
        PathBuf::from("test.sst"),
        fixture_opts(version),
    );
    for (k, v) in &fixture_entries() {
        b.add(k, v).unwrap();
    }
    if version >= crate::format::RANGE_DEL_TABLE_FORMAT_VERSION {
        b.set_range_dels(fixture_fragments()).unwrap();
    }
    let props = b.finish().unwrap();
    let data = buf.lock().unwrap().clone();
    assert_eq!(props.file_size, data.len() as u64);
    (data, props)
}

/// What a get of the fixture of `version` must return: the newest entry at
/// or below `seq`, unless a range deletion visible at `seq` and newer than
/// it covers the key (then a deletion, also where the table has no entry).
fn fixture_get(version: u32, entries: &[Entry], user_key: &[u8], seq: u64) -> TableGet {
    let found = model_get(entries, user_key, seq);
    if version < crate::format::RANGE_DEL_TABLE_FORMAT_VERSION {
        return found;
    }
    // Straight from the tombstones as written, not from the fragments.
    let newest = fixture_range_dels()
        .into_iter()
        .filter(|t| t.start.as_slice() <= user_key && user_key < t.end.as_slice() && t.seq <= seq)
        .map(|t| t.seq)
        .max();
    let found_seq = entries
        .iter()
        .find(|(k, _)| user(k) == user_key && seq_of(k) <= seq)
        .map(|(k, _)| seq_of(k));
    match (newest, found_seq) {
        (Some(t), Some(p)) if t > p => TableGet::Found(ValueKind::Delete, Vec::new().into()),
        (Some(_), None) => TableGet::Found(ValueKind::Delete, Vec::new().into()),
        _ => found,
    }
}

/// The writer still produces the committed bytes of every version: a change to
/// the table encoding must come with a new format version and a new fixture.
/// `SHALE_WRITE_TABLE_FIXTURE=N` writes the fixture of version `N` (only for a
/// new version).
#[test]
fn this_build_writes_the_golden_fixtures_byte_for_byte() {
    for version in crate::format::MIN_TABLE_FORMAT_VERSION..=crate::format::TABLE_FORMAT_VERSION {
        let (data, _) = build_fixture(version);
        if std::env::var("SHALE_WRITE_TABLE_FIXTURE").is_ok_and(|v| v == version.to_string()) {
            std::fs::write(fixture_path(version), &data).expect("write the fixture");
        }
        assert!(
            data == read_fixture(version),
            "the table encoding of format v{version} changed"
        );
    }
}

#[test]
fn golden_fixture_v1_still_reads() {
    check_golden_fixture(1);
}

#[test]
fn golden_fixture_v2_still_reads() {
    check_golden_fixture(2);
}

#[test]
fn golden_fixture_v3_still_reads() {
    check_golden_fixture(3);
    let p = open(read_fixture(3), &ctx()).properties().clone();
    assert!(p.filter_partitions > 1, "{p:?}");
}

#[test]
fn golden_fixture_v4_still_reads() {
    check_golden_fixture(4);
    let data = read_fixture(4);
    let t = open(data.clone(), &ctx());
    let p = t.properties().clone();
    assert!(p.filter_partitions > 1, "{p:?}");
    // The range deletions: six overlapping tombstones, eight fragments.
    let frags = fixture_fragments();
    let f = |start: &[u8], end: &[u8], seqs: &[u64]| crate::rangedel::Fragment {
        start: start.to_vec(),
        end: end.to_vec(),
        seqs: seqs.to_vec(),
    };
    assert_eq!(
        frags.fragments(),
        &[
            f(b"", b"user00005", &[500]),
            f(b"user00100", b"user00150", &[1150]),
            f(b"user00150", b"user00180", &[1250, 1150]),
            f(b"user00180", b"user00190", &[1250, 1150, 1100]),
            f(b"user00190", b"user00200", &[1250, 1150]),
            f(b"user00200", b"user00260", &[1250]),
            f(b"user00400", b"user00400\0", &[2000]),
            f(b"user00490", b"user99999", &[1495]),
        ]
    );
    assert_eq!(t.range_dels().as_ref(), &frags, "the range deletions read");
    assert_eq!(p.range_deletions, 12);
    // The sequence range covers the range deletions (2000 is only there).
    assert_eq!((p.smallest_seqno, p.largest_seqno), (1, 2000));
    // The block sits right before the properties, unwrapped and uncompressed,
    // and holds exactly the encoding of the fragments.
    let layout = block_sizes(&data);
    let props_at = layout
        .blocks
        .iter()
        .find(|b| b.kind == crate::table::LayoutKind::Properties)
        .unwrap()
        .offset;
    let top_end = layout
        .blocks
        .iter()
        .find(|b| b.kind == crate::table::LayoutKind::TopIndex)
        .map(|b| b.offset + b.size + 5)
        .unwrap();
    let start = props_at - p.range_del_bytes;
    assert!(start >= top_end, "after the top-level index");
    let stored = data[start as usize..props_at as usize].to_vec();
    assert_eq!(stored[stored.len() - 5], Compression::None as u8);
    let contents = super::layout::unwrap_block(stored, true).unwrap();
    assert_eq!(contents, frags.encode(), "the block is the encoding");
    assert_eq!(
        crate::rangedel::Fragments::decode(&contents),
        Ok(frags.clone())
    );
    // Gets the range deletions hide (the entries are there, iteration shows
    // them all: a table does not apply its own range deletions to a scan).
    let hidden = |uk: &[u8], seq: u64| {
        assert_eq!(
            t.get(uk, seq, true).unwrap(),
            TableGet::Found(ValueKind::Delete, Vec::new().into()),
            "{uk:?}@{seq}"
        );
    };
    hidden(b"user00120", u64::MAX);
    hidden(b"user00185", u64::MAX);
    // At 1120, only the tombstone at 1100 is visible: it hides the old
    // version of user00180 (at 181) and nothing newer.
    hidden(b"user00180", 1120);
    hidden(b"user00400", 2000);
    hidden(b"user00490", u64::MAX);
    hidden(b"user00000", 999);
    // Keys the table does not hold, inside ranges: deleted.
    hidden(b"user00120x", u64::MAX);
    hidden(b"", u64::MAX);
    hidden(b"a", 500);
    hidden(b"user01000", u64::MAX);
    let visible = |uk: &[u8], seq: u64| {
        assert!(
            matches!(
                t.get(uk, seq, false).unwrap(),
                TableGet::Found(ValueKind::Value, _)
            ),
            "{uk:?}@{seq}"
        );
    };
    // Written at 1151, after the tombstone at 1150: hidden only once the
    // one at 1250 is visible.
    visible(b"user00151", 1249);
    hidden(b"user00151", u64::MAX);
    hidden(b"user00249", u64::MAX);
    // Written at 1250, as new as the tombstone there: a tombstone hides only
    // older versions.
    visible(b"user00250", u64::MAX);
    visible(b"user00260", u64::MAX);
    visible(b"user00400", 1999);
    visible(b"user00401", u64::MAX);
    visible(b"user00495", u64::MAX);
    visible(b"user00000", u64::MAX);
    visible(b"user00005", u64::MAX);
    assert_eq!(t.get(b"a", 499, false).unwrap(), TableGet::Absent);
    assert_eq!(
        t.get(b"user00300x", u64::MAX, false).unwrap(),
        TableGet::Absent
    );
    // Encoding the same input again gives the same bytes.
    let (again, _) = build_fixture(4);
    assert!(
        again == data,
        "the v4 fixture is not reproduced byte for byte"
    );
}

fn check_golden_fixture(version: u32) {
    let data = read_fixture(version);
    let entries = fixture_entries();
    let c = ctx();
    let t = open(data.clone(), &c);
    let p = t.properties().clone();
    assert_eq!(p.format_version, version);
    assert_eq!(p.num_entries, entries.len() as u64);
    assert_eq!(
        p.num_deletions,
        entries
            .iter()
            .filter(|(k, _)| kind_of(k) == ValueKind::Delete)
            .count() as u64
    );
    assert_eq!(p.compression, Compression::Lz4);
    assert!(p.index_partitions > 1 && p.data_blocks > 4 && p.filter_bits_per_key == 10);
    for (k, _) in &entries {
        let uk = user(k);
        for seq in [u64::MAX, seq_of(k), seq_of(k).saturating_sub(1)] {
            assert_eq!(
                t.get(uk, seq, true).unwrap(),
                fixture_get(version, &entries, uk, seq),
                "{uk:?}@{seq}"
            );
            assert_eq!(
                t.get(uk, seq, false).unwrap(),
                fixture_get(version, &entries, uk, seq),
                "{uk:?}@{seq}"
            );
        }
    }
    if version >= crate::format::RANGE_DEL_TABLE_FORMAT_VERSION {
        // Around every tombstone's bounds too, at every sequence number
        // that matters.
        for d in fixture_range_dels() {
            let mut keys = vec![d.start.clone(), d.end.clone()];
            keys.push([d.start.as_slice(), b"\0"].concat());
            if let Some((_, head)) = d.end.split_last() {
                keys.push(head.to_vec());
            }
            for uk in &keys {
                for seq in [u64::MAX, d.seq, d.seq - 1, d.seq + 1, 1150, 1120, 999] {
                    assert_eq!(
                        t.get(uk, seq, false).unwrap(),
                        fixture_get(version, &entries, uk, seq),
                        "{uk:?}@{seq}"
                    );
                }
            }
        }
    } else {
        assert!(t.range_dels().is_empty());
        assert_eq!((p.range_deletions, p.range_del_bytes), (0, 0));
    }
    let mut it = t.iter();
    it.seek_to_first();
    for i in 0..entries.len() {
        check_at(it.as_ref(), &entries, Some(i), "fixture scan");
        it.next();
    }
    check_at(it.as_ref(), &entries, None, "fixture end");
    // Some blocks really are LZ4 (trailer byte 1).
    let layout = block_sizes(&data);
    // The compression byte: after the contents (v1, v2), or 5 bytes before
    // the end of the pages (v3).
    let ctype_at = |b: &&crate::table::BlockInfo| {
        if version >= 3 {
            b.offset + b.size - 5
        } else {
            b.offset + b.size
        }
    };
    let lz4 = layout
        .blocks
        .iter()
        .filter(|b| {
            b.kind == crate::table::LayoutKind::Data
                && data[ctype_at(b) as usize] == Compression::Lz4 as u8
        })
        .count();
    assert!(lz4 > 0);
    let data_blocks: Vec<_> = layout
        .blocks
        .iter()
        .filter(|b| b.kind == crate::table::LayoutKind::Data)
        .collect();
    if version >= 2 {
        assert!(p.data_padding_bytes > 0);
        for b in &data_blocks {
            assert_eq!(
                b.offset % 4096,
                0,
                "data block at {} not page-aligned",
                b.offset
            );
            let stored = if version >= 3 { b.size } else { b.size + 5 };
            assert!(stored <= 4096, "data block at {} spills", b.offset);
        }
    } else {
        assert_eq!(p.data_padding_bytes, 0);
    }
}

/// A filter partition fills its page: the key counts the format documents.
#[test]
fn filter_partitions_fill_a_page() {
    use super::builder::filter_partition_keys;
    use super::FilterKind;
    assert_eq!(filter_partition_keys(FilterKind::Bloom, 10, 4096), 3225);
    let k = filter_partition_keys(FilterKind::BinaryFuse, 9, 4096);
    eprintln!("binary fuse, 9 bits a key: {k} keys a page");
    let room = 4096 - super::paged::PAGED_TAIL_LEN;
    assert!(super::filter::fuse::fuse_size(k, 7) <= room);
    assert!(super::filter::fuse::fuse_size(k + 1, 7) > room);
    assert_eq!(k, 3731);
}

/// Version 3 with keys and values larger than a page: data blocks of several
/// pages (the locator's long blocks) and boundaries of kilobytes (which end
/// up in the top-level index) read back exactly, by Get and by iteration.
#[test]
fn v3_keys_and_values_larger_than_a_page() {
    let mut rng = Rng::new(41);
    // Pairs of keys sharing a random 5,000-byte prefix: the boundary inside
    // a pair needs all of it.
    let prefixes: Vec<Vec<u8>> = (0..30).map(|_| rng.bytes(5000)).collect();
    let mut entries: Vec<Entry> = (0..60u64)
        .map(|i| {
            let mut uk = prefixes[(i / 2) as usize].clone();
            uk.push(i as u8 % 2);
            let value = vec![i as u8; if i % 3 == 0 { 9000 } else { 20 }];
            (ikey(&uk, i + 1, ValueKind::Value), value)
        })
        .collect();
    entries.sort_by(|a, b| crate::format::compare_internal(&a.0, &b.0));
    let (data, props) = build(&entries, TableBuildOptions::default());
    let layout = block_sizes(&data);
    assert!(
        layout
            .blocks
            .iter()
            .any(|b| b.kind == crate::table::LayoutKind::Data && b.size > 4096),
        "a data block of several pages"
    );
    // Every locator still fits a page: a boundary too long for one falls
    // between two locators, in the top-level index.
    assert!(layout
        .blocks
        .iter()
        .all(|b| b.kind != crate::table::LayoutKind::Index || b.size <= 4096));
    assert!(layout
        .blocks
        .iter()
        .any(|b| b.kind == crate::table::LayoutKind::TopIndex && b.size > 4096));
    assert_eq!(props.num_entries, entries.len() as u64);
    let t = open(data, &ctx());
    for (k, v) in &entries {
        assert_eq!(
            t.get(user(k), u64::MAX, true).unwrap(),
            TableGet::Found(ValueKind::Value, v.clone().into())
        );
    }
    let mut it = t.iter();
    it.seek_to_first();
    for (k, _) in &entries {
        assert!(it.valid());
        assert_eq!(it.key(), k.as_slice());
        it.next();
    }
    assert!(!it.valid());
    it.status().unwrap();
}

/// Metadata held with the reader, in every format version: the first Gets
/// read each held block once (no cache lookup), later Gets read none of it,
/// the gauge in `Stats` is the reader's held bytes per kind, and dropping the
/// reader gives them back.
#[test]
fn held_metadata_is_read_once_counted_and_given_back_in_every_version() {
    use crate::metrics::MetadataKind;
    use crate::table::reader::HeldKinds;
    let entries = random_entries(21, 20_000, 110);
    for version in [1u32, 2, 3, 4] {
        let opts = TableBuildOptions {
            format_version: version,
            index_partition_size: 512,
            ..TableBuildOptions::default()
        };
        let (data, _) = build(&entries, opts);
        let c = ReadContext {
            cache: Arc::new(LruCache::new(10_000, 1)),
            ..ctx()
        };
        let all = HeldKinds {
            top_index: true,
            index_partitions: true,
            top_filter: true,
            filter_partitions: true,
        };
        let t = TableReader::open(
            MemFile::new(data),
            "t.sst".into(),
            1,
            c.clone(),
            false,
            false,
        )
        .unwrap()
        .hold(all);
        let meta_kinds = [
            BlockKind::TopIndex,
            BlockKind::IndexPartition,
            BlockKind::Filter,
        ];
        let before = c.stats.snapshot();
        for (k, v) in &entries {
            assert_eq!(
                t.get(user(k), u64::MAX, true).unwrap(),
                TableGet::Found(ValueKind::Value, v.clone().into())
            );
        }
        let first = delta(&c.stats, &before);
        let mid = c.stats.snapshot();
        for (k, _) in entries.iter().step_by(7) {
            assert!(matches!(
                t.get(user(k), u64::MAX, true).unwrap(),
                TableGet::Found(ValueKind::Value, _)
            ));
        }
        let second = delta(&c.stats, &mid);
        let mut read = 0;
        for kind in meta_kinds {
            let (f, s) = (first.block(kind), second.block(kind));
            assert_eq!(f.cache_hits + f.cache_misses, 0, "v{version} {kind:?}");
            assert_eq!(
                s.cache_hits + s.cache_misses + s.physical_reads,
                0,
                "v{version} {kind:?}"
            );
            read += f.bytes_read;
        }
        assert!(
            first.block(BlockKind::IndexPartition).physical_reads > 1,
            "v{version}"
        );
        assert!(
            second.block(BlockKind::Data).physical_reads > 0,
            "v{version}"
        );
        let gauge = c.stats.snapshot();
        let mut held = 0;
        for kind in MetadataKind::ALL {
            assert_eq!(
                gauge.metadata_held(kind),
                t.held_bytes(kind),
                "v{version} {kind:?}"
            );
            held += t.held_bytes(kind);
        }
        assert_eq!(held, read, "v{version}: held bytes are the bytes read");
        assert!(t.held_bytes(MetadataKind::TopFilter) > 0, "v{version}");
        assert_eq!(
            t.held_bytes(MetadataKind::FilterPartitions) > 0,
            version >= 3,
            "v{version}"
        );
        assert_eq!(c.cache.pinned(), 0, "held bytes are not charged");
        drop(t);
        assert_eq!(c.stats.snapshot().metadata_held_total(), 0, "v{version}");
    }
}
