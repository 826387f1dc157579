//! End to end: RocksDB's harness records a block-cache trace of a read
//! phase, shale decodes it, and `shale simulate` replays it through a plain
//! LRU at the cache size RocksDB ran with.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use shale::trace::TraceRecord;
use shale::BlockKind;
use shale_bench::client::Client;
use shale_bench::rocksdb_trace;
use shale_workload::protocol::{DatasetSpec, LoadRequest, OpenRequest, ReadRequest};

mod common;
use common::ok;

fn write_indices(path: &Path, indices: impl Iterator<Item = u64>) {
    let bytes: Vec<u8> = indices.flat_map(u64::to_le_bytes).collect();
    std::fs::write(path, bytes).expect("write indices");
}

/// Uniform indices in 0..n (splitmix64), one in ten beyond the dataset.
fn indices(seed: u64, count: usize, keys: u64) -> impl Iterator<Item = u64> {
    let mut s = seed;
    (0..count).map(move |k| {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        if k % 10 == 9 {
            keys + z % keys
        } else {
            z % keys
        }
    })
}

fn harness() -> Client {
    if std::env::var_os("SHALE_ROCKSDB_HARNESS").is_none() {
        // scripts/peers.sh builds into <repo>/target/peers whatever
        // CARGO_TARGET_DIR is.
        let built = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/peers/shale-rocksdb-harness");
        std::env::set_var("SHALE_ROCKSDB_HARNESS", built);
    }
    Client::locate("rocksdb").expect("the RocksDB harness (scripts/peers.sh rocksdb)")
}

/// Needs the RocksDB harness (`scripts/peers.sh`), so `cargo test` leaves
/// it out; `.ci/slow`'s peers stage builds it, then runs this with
/// `--ignored`.
#[test]
#[ignore = "needs the peers' harnesses (scripts/peers.sh); .ci/run runs it"]
fn a_rocksdb_trace_replays_to_what_rocksdb_measured() {
    let dir = tempfile::tempdir().expect("tempdir");
    let client = harness();
    let t = Duration::from_secs(300);
    let keys = 20_000;
    let target = OpenRequest {
        dir: dir.path().join("db"),
        dataset: DatasetSpec {
            keys,
            scheme: "hash".into(),
            value_size: 110,
            seed: 0,
        },
        config: "pebble-like".into(),
    };
    client
        .load(
            LoadRequest {
                target: target.clone(),
                threads: 1,
                batch: 1000,
            },
            t,
        )
        .expect("load");
    let (warmup, reads) = (dir.path().join("warmup.bin"), dir.path().join("reads.bin"));
    write_indices(&warmup, indices(1, 2000, keys));
    write_indices(&reads, indices(2, 3000, keys));
    let trace = dir.path().join("read.trc");
    let cache_bytes = 1 << 20;
    // One reader thread: the trace's order is the cache's.
    let reply = client
        .read(
            ReadRequest {
                target,
                cache_bytes,
                threads: 1,
                warmup_file: warmup,
                reads_file: reads,
                direct_io: false,
                trace: Some(trace.clone()),
            },
            t,
        )
        .expect("a traced read");
    assert_eq!(reply.gets, 3000);

    // The decoded trace counts the measured Gets, and its hit flags from
    // the measure mark on are RocksDB's counters.
    let (raw, bt) = rocksdb_trace::load(&trace).expect("decodes");
    assert_eq!(raw.version, (7, 8));
    let from = bt
        .records
        .iter()
        .position(|r| matches!(r, TraceRecord::Mark(m) if m == rocksdb_trace::MEASURE_MARK))
        .expect("a measure mark");
    let (mut gets, mut found) = (0, 0);
    let mut counts = std::collections::HashMap::new();
    for r in &bt.records[from..] {
        match r {
            TraceRecord::Get { found: f } => {
                gets += 1;
                found += u64::from(*f);
            }
            TraceRecord::Access(a) => {
                let c = counts.entry(a.kind).or_insert((0u64, 0u64));
                if a.hit {
                    c.0 += 1;
                } else {
                    c.1 += 1;
                }
            }
            _ => {}
        }
    }
    assert_eq!(gets, reply.gets);
    assert_eq!(found, reply.found);
    let got = |k| counts.get(&k).copied().unwrap_or((0, 0));
    let want = |c: &shale_workload::protocol::KindCounts| {
        (c.cache_hits.unwrap_or(0), c.cache_misses.unwrap_or(0))
    };
    assert_eq!(got(BlockKind::Data), want(&reply.blocks.data));
    assert_eq!(got(BlockKind::IndexPartition), want(&reply.blocks.index));
    assert_eq!(got(BlockKind::Filter), want(&reply.blocks.filter));

    // shale simulate tells the format, replays through a plain LRU, and at
    // RocksDB's own cache size comes near what RocksDB measured (RocksDB's
    // cache is sharded, keeps a high-priority pool and charges the pinned
    // top-level index and filter, which the plain LRU does not).
    let out = dir.path().join("sim");
    let json = ok(&[
        "simulate",
        "--trace",
        &trace.to_string_lossy(),
        "--cache",
        "256KiB,1MiB,16MiB",
        "--out",
        &out.to_string_lossy(),
        "--json",
    ]);
    let doc: Value = serde_json::from_str(&json).expect("simulate --json prints JSON");
    assert_eq!(doc["format"], "rocksdb");
    assert_eq!(doc["policy"], "lru");
    assert_eq!(doc["from_mark"], "measure");
    assert_eq!(doc["gets"], reply.gets);
    let sizes = doc["sizes"].as_array().expect("sizes");
    let misses = |i: usize| sizes[i]["misses_per_get"].as_f64().expect("a number");
    let measured = (reply.blocks.data.cache_misses.unwrap_or(0)
        + reply.blocks.index.cache_misses.unwrap_or(0)
        + reply.blocks.filter.cache_misses.unwrap_or(0)) as f64
        / reply.gets as f64;
    assert!(
        (misses(1) - measured).abs() <= 0.15 * measured + 0.02,
        "simulated {} misses per Get at 1 MiB, RocksDB measured {measured}",
        misses(1)
    );
    // More cache, fewer misses; 16 MiB holds every block (cold misses only).
    assert!(misses(0) > misses(1) && misses(1) > misses(2), "{sizes:?}");
}
