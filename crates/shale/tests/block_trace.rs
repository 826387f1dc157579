//! A block-access trace lists what the read path did, and replaying it
//! through the simulated cache at another capacity gives exactly what a run
//! at that capacity measures (one reader, one key at a time).

use shale_testkit as common;

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use shale::env::MemFs;
use shale::trace::{self, BlockTraceOptions, TracePlacement, TraceRecord};
use shale::{BlockKind, Db, LevelSet, MetadataPlacement, Metrics, Options};

fn key(i: u64) -> Vec<u8> {
    common::Rng::new(i).bytes(32)
}

/// A sink whose bytes the test reads back.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn options(fs: Arc<MemFs>, cache: u64) -> Options {
    Options::default()
        .fs(fs)
        .write_buffer_size(256 << 10)
        .block_cache_bytes(cache)
        .read_threads(0)
        .l0_compaction_trigger(Some(1000))
        .l0_slowdown_writes_trigger(1000)
        .l0_stop_writes_trigger(1000)
}

/// 40,000 keys in L6 and 6,000 newer ones in L0 tables (filtered).
fn build(fs: &Arc<MemFs>) {
    let db = Db::open("/db", options(fs.clone(), 8 << 20)).expect("open");
    for i in 0..40_000 {
        db.put(&key(i), &[i as u8; 100]).expect("put");
    }
    db.compact_all().expect("compact");
    for i in 40_000..46_000 {
        db.put(&key(i), &[i as u8; 100]).expect("put");
    }
    db.flush().expect("flush");
    db.close().expect("close");
}

/// Keys read: present ones drawn unevenly (a hot tenth gets half the
/// reads), and a few absent ones.
fn reads(seed: u64, n: u64) -> Vec<Vec<u8>> {
    let mut rng = common::Rng::new(seed);
    (0..n)
        .map(|_| match rng.below(10) {
            0 => key(1_000_000 + rng.below(1_000_000)),
            1..=5 => key(rng.below(4_600)),
            _ => key(rng.below(46_000)),
        })
        .collect()
}

/// Opens with `cache`, reads the warm-up keys and then the measured ones,
/// and returns the metrics of the measured ones (and the trace, if asked).
fn run(fs: &Arc<MemFs>, opts: Options, trace: Option<BlockTraceOptions>) -> (Metrics, Vec<u8>) {
    let db = Db::open("/db", opts).expect("open");
    let sink = Shared::default();
    if let Some(t) = trace {
        db.start_block_trace(Box::new(sink.clone()), t)
            .expect("start");
    }
    for k in reads(1, 1_500) {
        db.get(&k).expect("get");
    }
    db.mark_block_trace("measure");
    let before = db.metrics();
    for k in reads(2, 4_000) {
        db.get(&k).expect("get");
    }
    let d = db.metrics().delta(&before);
    if trace.is_some() {
        db.end_block_trace().expect("end");
    }
    db.close().expect("close");
    let _ = fs;
    let bytes = sink.0.lock().expect("lock").clone();
    (d, bytes)
}

const SIZES: [u64; 4] = [3 << 10, 200 << 10, 700 << 10, 3 << 20];

#[test]
fn a_replay_at_each_size_equals_a_run_at_that_size() {
    let fs = Arc::new(MemFs::new());
    build(&fs);
    let (traced, bytes) = run(
        &fs,
        options(fs.clone(), 200 << 10),
        Some(BlockTraceOptions::default()),
    );
    let t = trace::decode_trace(&bytes).expect("decode");
    assert_eq!(
        t.header.db.db_bytes,
        Db::open("/db", options(fs.clone(), 1 << 20))
            .and_then(|db| {
                let total = db.summary()?.total().bytes;
                db.close()?;
                Ok(total)
            })
            .expect("summary")
    );

    // The trace lists exactly the counted lookups of the traced run.
    let sims =
        trace::simulate(&t, &SIZES, 2, Some("measure"), trace::Policy::Shale).expect("simulate");
    let at_traced = &sims[1];
    assert_eq!(at_traced.gets, traced.gets);
    assert_eq!(at_traced.found, traced.gets_found);
    let mut hits_in_trace = 0;
    let mut measuring = false;
    for r in &t.records {
        match r {
            TraceRecord::Mark(m) if m == "measure" => measuring = true,
            TraceRecord::Access(a) if measuring && a.hit => hits_in_trace += 1,
            _ => {}
        }
    }
    let hits: u64 = trace::READ_KINDS
        .iter()
        .map(|&k| traced.block(k).cache_hits)
        .sum();
    assert_eq!(hits_in_trace, hits, "hits recorded as they happened");

    let mut seen_misses = Vec::new();
    for (size, sim) in SIZES.iter().zip(&sims) {
        let (m, _) = run(&fs, options(fs.clone(), *size), None);
        assert_eq!(sim.gets, m.gets);
        for kind in trace::READ_KINDS {
            let k = sim.kind(kind);
            assert_eq!(
                (k.hits as u64, k.misses as u64),
                (m.block(kind).cache_hits, m.block(kind).cache_misses),
                "{} blocks at a cache of {size} bytes",
                kind.name()
            );
        }
        seen_misses.push(sim.misses_per_get());
    }
    // The sizes span the curve: more cache, fewer misses.
    assert!(
        seen_misses.windows(2).all(|w| w[1] < w[0]),
        "{seen_misses:?}"
    );
    assert!(
        seen_misses[0] > 1.5 && seen_misses[3] < 0.6,
        "{seen_misses:?}"
    );
}

#[test]
fn held_metadata_is_traced_as_reads_outside_the_cache() {
    let fs = Arc::new(MemFs::new());
    build(&fs);
    let held = MetadataPlacement {
        top_index: LevelSet::ALL,
        top_filter: LevelSet::ALL,
        ..MetadataPlacement::NONE
    };
    let opts = |cache| options(fs.clone(), cache).table_metadata(held);
    let (traced, bytes) = run(&fs, opts(100 << 10), Some(BlockTraceOptions::default()));
    let t = trace::decode_trace(&bytes).expect("decode");
    assert!(t.records.iter().any(|r| matches!(
        r,
        TraceRecord::Access(a) if a.placement == TracePlacement::Held && a.kind == BlockKind::TopIndex
    )));
    let sim = &trace::simulate(&t, &[100 << 10], 1, Some("measure"), trace::Policy::Shale)
        .expect("simulate")[0];
    for kind in trace::READ_KINDS {
        let b = traced.block(kind);
        let k = sim.kind(kind);
        assert_eq!(k.misses as u64, b.cache_misses, "{}", kind.name());
        assert_eq!(
            (k.misses + k.held_reads) as u64,
            b.physical_reads,
            "{}: a held block's first use is a read",
            kind.name()
        );
    }
    let reads: u64 = trace::READ_KINDS
        .iter()
        .map(|&k| traced.block(k).physical_reads)
        .sum();
    assert_eq!(sim.reads_per_get(), reads as f64 / traced.gets as f64);
}

#[test]
fn a_sampled_trace_is_smaller_and_its_replay_close() {
    let fs = Arc::new(MemFs::new());
    build(&fs);
    let (_, all) = run(
        &fs,
        options(fs.clone(), 2 << 20),
        Some(BlockTraceOptions::default()),
    );
    let (_, part) = run(
        &fs,
        options(fs.clone(), 2 << 20),
        Some(BlockTraceOptions::default().sample_rate(0.25)),
    );
    assert!(
        part.len() * 2 < all.len(),
        "{} against {}",
        part.len(),
        all.len()
    );
    let all = trace::decode_trace(&all).expect("decode");
    let part = trace::decode_trace(&part).expect("decode");
    assert_eq!(part.header.sample_rate(), 0.25);
    let a = &trace::simulate(&all, &[2 << 20], 1, Some("measure"), trace::Policy::Shale)
        .expect("simulate")[0];
    let p = &trace::simulate(&part, &[2 << 20], 1, Some("measure"), trace::Policy::Shale)
        .expect("simulate")[0];
    assert_eq!(a.gets, p.gets, "every Get is recorded");
    let (x, y) = (a.misses_per_get(), p.misses_per_get());
    assert!((x - y).abs() < 0.15 * x, "sampled {y} against {x}");
}

#[test]
fn tracing_twice_or_ending_without_a_trace_is_refused() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs, 1 << 20)).expect("open");
    assert!(matches!(
        db.end_block_trace(),
        Err(shale::Error::InvalidArgument(_))
    ));
    db.start_block_trace(Box::new(Shared::default()), BlockTraceOptions::default())
        .expect("start");
    assert!(matches!(
        db.start_block_trace(Box::new(Shared::default()), BlockTraceOptions::default()),
        Err(shale::Error::InvalidArgument(_))
    ));
    let bad = BlockTraceOptions::default().sample_rate(0.0);
    db.end_block_trace().expect("end");
    assert!(matches!(
        db.start_block_trace(Box::new(Shared::default()), bad),
        Err(shale::Error::InvalidArgument(_))
    ));
    db.close().expect("close");
}

/// A sink that fails after some bytes.
struct Failing(usize);

impl Write for Failing {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.len() > self.0 {
            return Err(io::Error::other("disk full"));
        }
        self.0 -= buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failing_sink_stops_the_trace_and_is_reported_at_its_end() {
    let fs = Arc::new(MemFs::new());
    build(&fs);
    let db = Db::open("/db", options(fs, 64 << 10)).expect("open");
    db.start_block_trace(Box::new(Failing(200)), BlockTraceOptions::default())
        .expect("the header fits");
    for k in reads(3, 200) {
        db.get(&k).expect("Gets go on whatever the trace does");
    }
    let Err(e) = db.end_block_trace() else {
        panic!("the lost records are not reported");
    };
    assert!(e.to_string().contains("disk full"), "{e}");
    db.close().expect("close");
}

#[test]
fn a_multi_get_on_the_read_pool_is_traced_key_by_key() {
    let fs = Arc::new(MemFs::new());
    build(&fs);
    let db = Db::open("/db", options(fs, 64 << 10).read_threads(4)).expect("open");
    let sink = Shared::default();
    db.start_block_trace(Box::new(sink.clone()), BlockTraceOptions::default())
        .expect("start");
    let keys = reads(4, 300);
    let before = db.metrics();
    db.multi_get(&keys).expect("multi_get");
    let d = db.metrics().delta(&before);
    db.end_block_trace().expect("end");
    db.close().expect("close");
    let t = trace::decode_trace(&sink.0.lock().expect("lock")).expect("decode");
    let gets = t
        .records
        .iter()
        .filter(|r| matches!(r, TraceRecord::Get { .. }))
        .count() as u64;
    assert_eq!(gets, 300);
    let accesses: Vec<_> = t
        .records
        .iter()
        .filter_map(|r| match r {
            TraceRecord::Access(a) => Some(a),
            _ => None,
        })
        .collect();
    let counted: u64 = trace::READ_KINDS
        .iter()
        .map(|&k| d.block(k).cache_hits + d.block(k).cache_misses)
        .sum();
    assert_eq!(
        accesses.len() as u64,
        counted,
        "every counted lookup is traced"
    );
    assert!(
        accesses.iter().all(|a| a.lookup != 0),
        "each belongs to a Get"
    );
    let lookups: std::collections::HashSet<u64> = accesses.iter().map(|a| a.lookup).collect();
    assert!(
        lookups.len() > 250,
        "one lookup per key that reached the tables: {}",
        lookups.len()
    );
}
