//! Table metadata held with the open table readers (`Options::table_metadata`):
//! per placement, Gets and scans return the right rows, held kinds are read
//! once per table rather than per Get while data blocks still come from the
//! device through a tiny block cache, the held-bytes gauge equals the bytes of
//! the blocks held and drops when compactions delete their tables, damage in a
//! held block is a typed error naming the file and offset, and levels that do
//! not exist are refused.

use shale_testkit as common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use shale::env::{FileSystem, MemFs};
use shale::{
    BlockKind, Db, Error, FilterLevels, FilterPolicy, LevelSet, MetadataKind, MetadataPlacement,
    Metrics, Options,
};

fn key(i: u64) -> Vec<u8> {
    // Hash-like keys spread over the key space, as in the study.
    common::Rng::new(i).bytes(32)
}

/// A 10 KB block cache (smaller than one table's metadata), filters on every
/// level (so that L6 tables have filter partitions too), no automatic
/// compaction.
fn options(fs: Arc<MemFs>, placement: MetadataPlacement) -> Options {
    Options::default()
        .fs(fs)
        .write_buffer_size(256 << 10)
        .block_cache_bytes(10_000)
        .filter_policy(FilterPolicy::default().levels(FilterLevels::All))
        .l0_compaction_trigger(Some(1000))
        .l0_slowdown_writes_trigger(1000)
        .l0_stop_writes_trigger(1000)
        .table_metadata(placement)
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// L6 tables of keys 0..12000, then L0 tables of keys 12000..16000 and of
/// new values of keys 0..2000; returns the model. The database is closed.
fn build(fs: &Arc<MemFs>) -> Model {
    let db = Db::open("/db", options(fs.clone(), MetadataPlacement::NONE)).expect("open");
    let mut model = Model::new();
    for i in 0..12_000u64 {
        let v = vec![i as u8; 110];
        db.put(&key(i), &v).expect("put");
        model.insert(key(i), v);
    }
    db.compact_all().expect("compact");
    for i in (12_000..16_000u64).chain(0..2000) {
        let v = vec![(i as u8).wrapping_add(1); 100];
        db.put(&key(i), &v).expect("put");
        model.insert(key(i), v);
    }
    db.flush().expect("flush");
    let levels: Vec<usize> = db
        .tables()
        .expect("tables")
        .iter()
        .map(|t| t.level)
        .collect();
    assert!(levels.contains(&0) && levels.contains(&6), "{levels:?}");
    db.close().expect("close");
    model
}

/// Gets every key of the model and 1000 absent ones, checking each answer.
fn get_all(db: &Db, model: &Model) {
    for (k, v) in model {
        assert_eq!(db.get(k).expect("get").as_deref(), Some(&v[..]));
    }
    for i in 0..1000u64 {
        assert_eq!(db.get(&key(1_000_000 + i)).expect("get"), None);
    }
}

/// Blocks of each kind over every table of the database: (top-level
/// indexes, top-level filter indexes, index partitions, filter partitions).
fn metadata_blocks(fs: &Arc<MemFs>, db: &Db) -> [u64; 4] {
    let mut n = [0u64; 4];
    for t in db.tables().expect("tables") {
        let file = fs.open_random(&t.path).expect("open table");
        let layout = shale::inspect_table(file, t.path.clone()).expect("inspect");
        n[0] += 1;
        for b in &layout.blocks {
            match b.kind.name() {
                "filter_index" => n[1] += 1,
                "index" => n[2] += 1,
                "filter" => n[3] += 1,
                _ => {}
            }
        }
    }
    n
}

fn physical(d: &Metrics, kind: BlockKind) -> u64 {
    d.block(kind).physical_reads
}

fn lookups(d: &Metrics, kind: BlockKind) -> u64 {
    d.block(kind).cache_hits + d.block(kind).cache_misses
}

/// Runs the Gets twice on a fresh open with `placement`; returns the
/// metrics of each pass and of the end, and the metadata blocks.
fn two_passes(placement: MetadataPlacement) -> (Metrics, Metrics, Metrics, [u64; 4], Model) {
    let fs = Arc::new(MemFs::new());
    let model = build(&fs);
    let db = Db::open("/db", options(fs.clone(), placement)).expect("reopen");
    let start = db.metrics();
    assert_eq!(
        start.metadata_held_total(),
        0,
        "held metadata is loaded lazily"
    );
    get_all(&db, &model);
    let mid = db.metrics();
    get_all(&db, &model);
    let end = db.metrics();
    assert_eq!(common::scan_all(&db), model, "a scan over held metadata");
    let blocks = metadata_blocks(&fs, &db);
    (mid.delta(&start), end.delta(&mid), end, blocks, model)
}

#[test]
fn held_metadata_is_read_once_per_table_and_data_blocks_still_come_from_the_device() {
    let all = MetadataPlacement::all_kinds_at(LevelSet::ALL);
    let (first, second, end, [tops, top_filters, parts, filter_parts], _) = two_passes(all);
    assert!(tops > 0 && top_filters > 0 && parts > 0 && filter_parts > 0);
    // The first pass reads every metadata block exactly once (no block-cache
    // lookups), the second none.
    assert_eq!(physical(&first, BlockKind::TopIndex), tops + top_filters);
    assert_eq!(physical(&first, BlockKind::IndexPartition), parts);
    assert_eq!(physical(&first, BlockKind::Filter), filter_parts);
    for kind in [
        BlockKind::TopIndex,
        BlockKind::IndexPartition,
        BlockKind::Filter,
    ] {
        assert_eq!(lookups(&first, kind), 0, "{kind:?}");
        assert_eq!(lookups(&second, kind), 0, "{kind:?}");
        assert_eq!(physical(&second, kind), 0, "{kind:?}");
    }
    // Data blocks: through the 10 KB cache, mostly from the file.
    let data = second.block(BlockKind::Data);
    assert!(data.cache_misses > 5_000, "{data:?}");
    assert_eq!(data.physical_reads, data.cache_misses);
    // The gauge is the bytes of the blocks held: each was read once.
    assert_eq!(
        end.metadata_held(MetadataKind::TopIndex) + end.metadata_held(MetadataKind::TopFilter),
        first.block(BlockKind::TopIndex).bytes_read
    );
    assert_eq!(
        end.metadata_held(MetadataKind::IndexPartitions),
        first.block(BlockKind::IndexPartition).bytes_read
    );
    assert_eq!(
        end.metadata_held(MetadataKind::FilterPartitions),
        first.block(BlockKind::Filter).bytes_read
    );
    assert!(end.metadata_held(MetadataKind::TopFilter) > 0);
    // Not charged to the block cache.
    assert_eq!(end.block_cache_pinned, 0);
    assert!(end.block_cache_usage <= 10_000);
}

#[test]
fn without_held_metadata_a_tiny_cache_rereads_it_on_every_get() {
    let (_, second, end, [_, _, parts, filter_parts], _) = two_passes(MetadataPlacement::NONE);
    assert_eq!(end.metadata_held_total(), 0);
    // The cliff the placement removes: far more metadata reads than blocks.
    assert!(physical(&second, BlockKind::IndexPartition) > 10 * parts);
    assert!(physical(&second, BlockKind::Filter) > 10 * filter_parts);
}

#[test]
fn each_kind_is_held_alone() {
    // Only the index partitions.
    let p = MetadataPlacement {
        index_partitions: LevelSet::ALL,
        ..MetadataPlacement::NONE
    };
    let (first, second, end, [_, _, parts, _], _) = two_passes(p);
    assert_eq!(physical(&first, BlockKind::IndexPartition), parts);
    assert_eq!(physical(&second, BlockKind::IndexPartition), 0);
    assert!(physical(&second, BlockKind::Filter) > 0);
    assert!(lookups(&second, BlockKind::TopIndex) > 0);
    assert_eq!(
        end.metadata_held_total(),
        end.metadata_held(MetadataKind::IndexPartitions)
    );
    // Only the filters, top-level and partitions.
    let p = MetadataPlacement {
        top_filter: LevelSet::ALL,
        filter_partitions: LevelSet::ALL,
        ..MetadataPlacement::NONE
    };
    let (first, second, end, [_, top_filters, _, filter_parts], _) = two_passes(p);
    assert_eq!(physical(&first, BlockKind::Filter), filter_parts);
    assert_eq!(physical(&second, BlockKind::Filter), 0);
    assert!(lookups(&second, BlockKind::IndexPartition) > 0);
    assert_eq!(end.metadata_held(MetadataKind::IndexPartitions), 0);
    assert_eq!(end.metadata_held(MetadataKind::TopIndex), 0);
    // Top-level indexes go through the cache; top-level filter indexes not.
    assert!(lookups(&second, BlockKind::TopIndex) > 0);
    assert!(end.metadata_held(MetadataKind::TopFilter) > 0);
    assert!(top_filters > 0);
}

#[test]
fn placement_is_per_level() {
    let all = two_passes(MetadataPlacement::all_kinds_at(LevelSet::ALL));
    let l0 = two_passes(MetadataPlacement::all_kinds_at(LevelSet::of(&[0])));
    let l6 = two_passes(MetadataPlacement::all_kinds_at(LevelSet::of(&[6])));
    for kind in MetadataKind::ALL {
        let (a, b, c) = (
            all.2.metadata_held(kind),
            l0.2.metadata_held(kind),
            l6.2.metadata_held(kind),
        );
        assert!(b > 0 && c > 0, "{kind:?}: L0 {b}, L6 {c}");
        assert_eq!(a, b + c, "{kind:?}: the levels' shares add up");
    }
    // The other level's partitions go through the cache.
    assert!(lookups(&l0.1, BlockKind::IndexPartition) > 0);
    assert!(lookups(&l6.1, BlockKind::IndexPartition) > 0);
    assert_eq!(lookups(&all.1, BlockKind::IndexPartition), 0);
}

#[test]
fn held_bytes_go_with_the_tables_a_compaction_deletes() {
    let fs = Arc::new(MemFs::new());
    let model = build(&fs);
    let placement = MetadataPlacement::all_kinds_at(LevelSet::ALL);
    let db = Db::open("/db", options(fs.clone(), placement)).expect("reopen");
    get_all(&db, &model);
    let before = db.metrics();
    assert!(before.metadata_held_total() > 0);
    db.compact_all().expect("compact");
    // Every table was rewritten: the old readers closed, the new ones have
    // read nothing yet.
    assert_eq!(db.metrics().metadata_held_total(), 0);
    let start = db.metrics();
    get_all(&db, &model);
    let end = db.metrics();
    let d = end.delta(&start);
    let metadata_read = [
        BlockKind::TopIndex,
        BlockKind::IndexPartition,
        BlockKind::Filter,
    ]
    .iter()
    .map(|&k| d.block(k).bytes_read)
    .sum::<u64>();
    assert!(metadata_read > 0);
    assert_eq!(end.metadata_held_total(), metadata_read);
    db.close().expect("close");
}

#[test]
fn damage_in_a_held_block_is_corruption_naming_its_file_and_offset() {
    let fs = Arc::new(MemFs::new());
    let model = build(&fs);
    // A locator of an L6 table.
    let (name, offset) = {
        let db = Db::open("/db", options(fs.clone(), MetadataPlacement::NONE)).expect("open");
        let t = db
            .tables()
            .expect("tables")
            .into_iter()
            .find(|t| t.level == 6)
            .expect("an L6 table");
        let file = fs.open_random(&t.path).expect("open table");
        let layout = shale::inspect_table(file, t.path.clone()).expect("inspect");
        let b = layout
            .blocks
            .iter()
            .find(|b| b.kind == shale::LayoutKind::Index)
            .expect("a locator");
        let name = t.path.file_name().expect("name").to_owned();
        db.close().expect("close");
        (name, b.offset)
    };
    let name = name.to_str().expect("utf-8").to_owned();
    common::xor_byte(&fs, &name, offset + 8, 0x40);
    let placement = MetadataPlacement {
        index_partitions: LevelSet::ALL,
        ..MetadataPlacement::NONE
    };
    let db = Db::open("/db", options(fs.clone(), placement)).expect("reopen");
    let mut failed = Vec::new();
    for k in model.keys() {
        match db.get(k) {
            Ok(_) => {}
            Err(Error::Corruption {
                file,
                offset: at,
                reason,
            }) => {
                assert!(
                    file.ends_with(Path::new(&name)),
                    "{} {reason}",
                    file.display()
                );
                assert_eq!(at, offset, "{reason}");
                failed.push(k.clone());
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(!failed.is_empty(), "no Get met the damage");
    // Nothing was held: the same Get fails the same way again.
    assert!(
        matches!(db.get(&failed[0]), Err(Error::Corruption { offset: at, .. }) if at == offset)
    );
    assert!(db.metrics().metadata_held(MetadataKind::IndexPartitions) > 0);
}

#[test]
fn levels_that_do_not_exist_are_refused() {
    for placement in [
        MetadataPlacement {
            top_filter: LevelSet::of(&[7]),
            ..MetadataPlacement::NONE
        },
        MetadataPlacement {
            index_partitions: LevelSet::ALL.with(100),
            ..MetadataPlacement::NONE
        },
    ] {
        let fs = Arc::new(MemFs::new());
        match Db::open("/db", options(fs, placement)) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("table_metadata"), "{m}"),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("{placement:?} accepted"),
        }
    }
    let fs = Arc::new(MemFs::new());
    let ok = MetadataPlacement::all_kinds_at(LevelSet::all_but_last().with(6));
    assert_eq!(ok, MetadataPlacement::all_kinds_at(LevelSet::ALL));
    Db::open("/db", options(fs, ok)).expect("every level exists");
}

#[test]
fn pinned_top_level_blocks_stay_pinned_and_charged_beside_held_partitions() {
    let fs = Arc::new(MemFs::new());
    let model = build(&fs);
    let opts =
        (options(fs, MetadataPlacement::all_kinds_at(LevelSet::ALL))).pin_table_metadata(true);
    let db = Db::open("/db", opts).expect("reopen");
    get_all(&db, &model);
    let m = db.metrics();
    assert!(m.block_cache_pinned > 0);
    assert_eq!(m.metadata_held(MetadataKind::TopIndex), 0);
    assert_eq!(m.metadata_held(MetadataKind::TopFilter), 0);
    assert!(m.metadata_held(MetadataKind::IndexPartitions) > 0);
    assert!(m.metadata_held(MetadataKind::FilterPartitions) > 0);
}

/// Total held bytes after one Get in each of 30 L0 tables, with readers kept
/// open up to `max_open_files`.
fn held_over_l0_tables(max_open_files: usize) -> u64 {
    let fs = Arc::new(MemFs::new());
    let opts = (options(fs, MetadataPlacement::all_kinds_at(LevelSet::ALL)))
        .max_open_files(max_open_files);
    let db = Db::open("/db", opts).expect("open");
    for t in 0..30u64 {
        for i in 0..50 {
            db.put(&key(t * 1000 + i), b"v").expect("put");
        }
        db.flush().expect("flush");
    }
    assert_eq!(db.metrics().l0_files, 30);
    // Each Get consults the filters of every L0 table, newest first.
    for t in 0..30u64 {
        assert_eq!(
            db.get(&key(t * 1000 + 7)).expect("get").as_deref(),
            Some(&b"v"[..])
        );
    }
    db.metrics().metadata_held_total()
}

#[test]
fn readers_the_table_cache_closes_give_their_held_bytes_back() {
    // 1000: every reader stays open. 16: none is held with its table, 16
    // share the LRU list, and the others closed with what they held.
    let all_open = held_over_l0_tables(1000);
    let sixteen = held_over_l0_tables(16);
    assert!(all_open > 0 && sixteen > 0);
    assert!(
        sixteen * 30 <= all_open * 20,
        "{sixteen} held by 16 open readers, {all_open} by 30"
    );
}
