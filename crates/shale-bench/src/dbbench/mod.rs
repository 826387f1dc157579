//! `bench db`: benchmarks named, flagged and reported as db_bench (LevelDB's
//! and RocksDB's) does, run on shale; and `bench db-sweep`
//! ([`sweep`]), LevelDB's cache-structure sweep. Definitions and the
//! deliberate differences from db_bench are in docs/bench-db.md.
//!
//! Keys are the key index in decimal, zero-padded to `--key_size` bytes
//! (db_bench's `%016d` at the default 16). Every operation is counted in a
//! [`LiveStats`] of its benchmark, and with `--histogram` timed into it (as
//! db_bench, which otherwise times only the whole benchmark: two clock
//! reads and a histogram update cost a tenth of a cached Get); a
//! benchmark's micros/op is its wall time times its threads over its
//! operations, as db_bench computes it. Ctrl-C stops the running benchmark where it is: its line and those
//! before it are printed (and written as JSON), the rest are skipped.

mod chart;
mod format;
mod points;
pub mod sweep;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use shale::{
    Compression, Db, FilterLevels, FilterPolicy, LevelSet, MetadataPlacement, Metrics, Options,
    ReadOptions, WriteBatch, WriteOptions,
};
use shale_workload::Rng;

pub use format::{histogram_text, result_line};

use crate::args::{BenchDbArgs, DbBenchDbArgs};
pub use crate::args::{BENCHMARK_NAMES, SWEEP_BENCHMARK_NAMES};
use crate::error::{Error, Result};
use crate::live::{self, LiveSlot, LiveStats, OpStats};
use crate::runner::{interrupted, Plan, Sink, Step, Units, Worker};
use crate::sampler::{DbSlot, Sampler, Timeline};
use crate::storage::{Create, Storage};

/// The database directory of `bench db` and `bench db-sweep` without `--db`.
pub const DEFAULT_DB: &str = "shale-data/dbbench";

/// One benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bench {
    /// `num` writes of keys 0, 1, 2, ... in order, into a fresh database.
    FillSeq,
    /// `num` writes of uniformly random keys (with replacement), fresh.
    FillRandom,
    /// `num` writes of random keys into the existing database.
    Overwrite,
    /// `num / 1000` random writes, each synced, fresh.
    FillSync,
    /// `reads` Gets of random keys.
    ReadRandom,
    /// Up to `reads` entries read forward from the first.
    ReadSeq,
    /// Up to `reads` entries read backward from the last.
    ReadReverse,
    /// `reads` Gets of random keys among the first 1% of the key range.
    ReadHot,
    /// `reads` Gets of keys that cannot exist.
    ReadMissing,
    /// `reads` seeks to random keys, reading the entry landed on.
    SeekRandom,
    /// `threads` readers of random keys, plus one writer of random keys
    /// until the readers finish.
    ReadWhileWriting,
    /// `reads` operations per thread, `readwritepercent`% Gets, the rest
    /// writes, of random keys.
    ReadRandomWriteRandom,
    /// `num` deletions of random keys.
    DeleteRandom,
    /// A full compaction.
    Compact,
    /// Prints the engine's statistics.
    Stats,
}

impl Bench {
    /// The benchmark named `name` (one of [`BENCHMARK_NAMES`]).
    pub fn parse(name: &str) -> Option<Bench> {
        Some(match name {
            "fillseq" => Bench::FillSeq,
            "fillrandom" => Bench::FillRandom,
            "overwrite" => Bench::Overwrite,
            "fillsync" => Bench::FillSync,
            "readrandom" => Bench::ReadRandom,
            "readseq" => Bench::ReadSeq,
            "readreverse" => Bench::ReadReverse,
            "readhot" => Bench::ReadHot,
            "readmissing" => Bench::ReadMissing,
            "seekrandom" => Bench::SeekRandom,
            "readwhilewriting" => Bench::ReadWhileWriting,
            "readrandomwriterandom" => Bench::ReadRandomWriteRandom,
            "deleterandom" => Bench::DeleteRandom,
            "compact" => Bench::Compact,
            "stats" => Bench::Stats,
            _ => return None,
        })
    }

    /// The fill benchmarks start from an empty database.
    pub fn fresh(self) -> bool {
        matches!(self, Bench::FillSeq | Bench::FillRandom | Bench::FillSync)
    }

    /// True if the benchmark changes the database.
    fn writes(self) -> bool {
        matches!(
            self,
            Bench::FillSeq
                | Bench::FillRandom
                | Bench::Overwrite
                | Bench::FillSync
                | Bench::ReadWhileWriting
                | Bench::ReadRandomWriteRandom
                | Bench::DeleteRandom
                | Bench::Compact
        )
    }
}

/// The workload of a run: what every benchmark reads and writes.
#[derive(Clone, Debug)]
pub struct Config {
    /// Key range and fill size.
    pub num: u64,
    /// Operations of a read benchmark per thread.
    pub reads: u64,
    /// Value size in bytes.
    pub value_size: usize,
    /// Key size in bytes.
    pub key_size: usize,
    /// Threads per benchmark.
    pub threads: usize,
    /// Share of reads in readrandomwriterandom, percent.
    pub readwritepercent: u32,
    /// Seed of the generators.
    pub seed: u64,
    /// Time each operation (`--histogram`), for the latencies; otherwise
    /// only the whole benchmark is timed, as db_bench does.
    pub histogram: bool,
}

/// Digits of `n` in decimal.
fn decimal_digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// Writes key `k` into `buf`: `k` in decimal, zero-padded to `width` bytes
/// (`width` must hold its digits).
pub fn encode_key(k: u64, width: usize, buf: &mut Vec<u8>) {
    buf.clear();
    buf.resize(width, b'0');
    let mut i = width;
    let mut v = k;
    while v > 0 && i > 0 {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

/// True if `key` is a key [`encode_key`] writes at `width`.
pub fn is_db_bench_key(key: &[u8], width: usize) -> bool {
    key.len() == width && key.iter().all(u8::is_ascii_digit)
}

/// Values: slices of a pool in which every 100-byte stretch is 50 random
/// printable bytes repeated once, so that values compress to about half, as
/// db_bench's default `--compression_ratio 0.5` makes them.
struct Values {
    pool: Vec<u8>,
    pos: usize,
}

impl Values {
    fn new(seed: u64, value_size: usize) -> Values {
        let len = (1usize << 20).max(value_size);
        let mut rng = Rng::new(seed ^ 0x7a1e_5eed);
        let mut pool = Vec::with_capacity(len + 100);
        while pool.len() < len {
            let half: Vec<u8> = (0..50).map(|_| b' ' + rng.below(95) as u8).collect();
            pool.extend_from_slice(&half);
            pool.extend_from_slice(&half);
        }
        pool.truncate(len);
        Values { pool, pos: 0 }
    }

    fn next(&mut self, len: usize) -> &[u8] {
        if self.pos + len > self.pool.len() {
            self.pos = 0;
        }
        let start = self.pos;
        self.pos += len;
        &self.pool[start..start + len]
    }
}

/// Latency figures of a benchmark, in microseconds.
#[derive(Clone, Debug, Serialize)]
pub struct Latency {
    /// Operations timed.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub stddev: f64,
    /// Fastest.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 75th percentile.
    pub p75: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// 99.99th percentile.
    pub p9999: f64,
    /// Slowest.
    pub max: f64,
}

impl Latency {
    fn of(s: &OpStats) -> Latency {
        let h = &s.nanos;
        let empty = !s.timed();
        let f = |v: f64| if empty { 0.0 } else { v };
        Latency {
            count: h.len(),
            mean: s.mean_micros(),
            stddev: f(h.stdev() / 1000.0),
            min: f(h.min() as f64 / 1000.0),
            p50: f(s.quantile_micros(0.5)),
            p75: f(s.quantile_micros(0.75)),
            p99: f(s.quantile_micros(0.99)),
            p999: f(s.quantile_micros(0.999)),
            p9999: f(s.quantile_micros(0.9999)),
            max: f(h.max() as f64 / 1000.0),
        }
    }
}

/// What the engine's counters say about a benchmark (deltas over it).
#[derive(Clone, Debug, Default, Serialize)]
pub struct EngineCounters {
    /// Block-cache hits over every block kind.
    pub block_cache_hits: u64,
    /// Block-cache misses over every block kind.
    pub block_cache_misses: u64,
    /// `hits / (hits + misses)`, `None` without lookups.
    pub block_cache_hit_rate: Option<f64>,
    /// Table readers found open.
    pub table_cache_hits: u64,
    /// Table readers opened.
    pub table_cache_misses: u64,
    /// `hits / (hits + misses)`, `None` without lookups.
    pub table_cache_hit_rate: Option<f64>,
    /// Bytes of table metadata held with the open table readers outside the
    /// block cache when the benchmark ended (a gauge, per
    /// `--table_metadata`).
    pub metadata_held_bytes: u64,
}

impl EngineCounters {
    fn of(d: &Metrics) -> EngineCounters {
        let t = d.table_cache_hits + d.table_cache_misses;
        EngineCounters {
            block_cache_hits: d.cache_hits(),
            block_cache_misses: d.cache_misses(),
            block_cache_hit_rate: d.hit_rate(),
            table_cache_hits: d.table_cache_hits,
            table_cache_misses: d.table_cache_misses,
            table_cache_hit_rate: (t > 0).then(|| d.table_cache_hits as f64 / t as f64),
            metadata_held_bytes: d.metadata_held_total(),
        }
    }
}

/// The result of one benchmark.
#[derive(Clone, Serialize)]
pub struct BenchResult {
    /// Its db_bench name.
    pub name: String,
    /// Operations measured (over all threads; the writer of
    /// readwhilewriting is not counted).
    pub ops: u64,
    /// Threads that did them.
    pub threads: usize,
    /// Wall time in seconds.
    pub seconds: f64,
    /// Wall time x threads / ops, in microseconds (db_bench's micros/op).
    pub micros_per_op: f64,
    /// Ops / wall time.
    pub ops_per_sec: f64,
    /// Bytes of keys and values written or read (found), MiB per wall
    /// second; `None` when the benchmark counts no bytes.
    pub mb_per_sec: Option<f64>,
    /// Those bytes.
    pub bytes: u64,
    /// Reads that found their key, for the benchmarks that read keys.
    pub found: Option<u64>,
    /// Reads attempted, for the benchmarks that read keys.
    pub reads: Option<u64>,
    /// Writes (readrandomwriterandom, and the writer of readwhilewriting).
    pub writes: Option<u64>,
    /// db_bench's message after the rates, such as `(632 of 1000 found)`.
    pub message: String,
    /// True if Ctrl-C cut the benchmark short.
    pub interrupted: bool,
    /// True if skipped (a fill with --use_existing_db).
    pub skipped: bool,
    /// Latency of the measured operations.
    pub latency: Option<Latency>,
    /// Latency by operation kind (`read`, `write`, `seek`, `delete`, ...).
    pub kinds: BTreeMap<String, Latency>,
    /// Engine counters over the benchmark.
    pub engine: EngineCounters,
    /// `stats`: the engine's statistics (as `shale stats --json`).
    pub stats: Option<Value>,
    /// The latencies behind `latency`, for `--histogram`.
    #[serde(skip)]
    pub histogram: Option<OpStats>,
}

impl BenchResult {
    /// db_bench's result line of this benchmark.
    pub fn line(&self) -> String {
        if self.skipped {
            return format!("{:<12} : skipped (--use_existing_db is true)", self.name);
        }
        result_line(
            &self.name,
            self.micros_per_op,
            self.ops_per_sec,
            self.mb_per_sec,
            &self.message,
        )
    }

    fn skipped(name: &str) -> BenchResult {
        BenchResult {
            name: name.to_string(),
            ops: 0,
            threads: 0,
            seconds: 0.0,
            micros_per_op: 0.0,
            ops_per_sec: 0.0,
            mb_per_sec: None,
            bytes: 0,
            found: None,
            reads: None,
            writes: None,
            message: String::new(),
            interrupted: false,
            skipped: true,
            latency: None,
            kinds: BTreeMap::new(),
            engine: EngineCounters::default(),
            stats: None,
            histogram: None,
        }
    }
}

/// What one thread did.
#[derive(Default)]
struct ThreadOut {
    ops: u64,
    found: u64,
    reads: u64,
    writes: u64,
    bytes: u64,
}

/// A running benchmark's shared state.
struct Ctx<'a> {
    db: &'a Db,
    cfg: &'a Config,
    live: &'a LiveStats,
    /// Seed of this benchmark (the run's seed and the benchmark's position).
    seed: u64,
}

impl<'a> Ctx<'a> {
    fn rng(&self, thread: usize) -> Rng {
        Rng::new(
            self.seed
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .wrapping_add(thread as u64 + 1),
        )
    }

    /// Where the threads' operations go: timed with `--histogram`, else only
    /// counted (db_bench times only the whole benchmark).
    fn sink(&self) -> Sink<'a> {
        if self.cfg.histogram {
            Sink::Live(self.live)
        } else {
            Sink::Count(self.live)
        }
    }
}

/// What a benchmark's threads did: the measured threads' counts summed, the
/// background writer's (readwhilewriting), and the measured threads' wall
/// time in seconds.
type Ran = (ThreadOut, ThreadOut, f64);

/// Runs a benchmark's `threads` threads of `n` operations each through the
/// runner (`init` and `unit` as [`Plan::run`]'s, with the thread's counts
/// beside its state), with readwhilewriting's writer beside them if
/// `writer`.
fn run_threads<'a, S: Send>(
    ctx: &Ctx<'a>,
    threads: usize,
    n: u64,
    writer: bool,
    init: impl Fn(&mut Worker<'a>) -> Result<S, String> + Sync,
    unit: impl Fn(&mut S, &mut ThreadOut, &mut Worker<'a>) -> Result<Step, String> + Sync,
) -> Result<Ran, String> {
    let plan = Plan {
        threads,
        units: Units::Each(n),
        sink: ctx.sink(),
        progress: None,
    };
    let done = plan
        .run_beside(
            |w| Ok((init(w)?, ThreadOut::default())),
            |(state, out), w| unit(state, out, w),
            |b| -> Result<ThreadOut, String> {
                let mut out = ThreadOut::default();
                if !writer {
                    return Ok(out);
                }
                let mut rng = ctx.rng(threads);
                let mut values = Values::new(ctx.seed ^ 0x5717e, ctx.cfg.value_size);
                let mut key = Vec::new();
                while b.running() {
                    encode_key(rng.below(ctx.cfg.num), ctx.cfg.key_size, &mut key);
                    let value = values.next(ctx.cfg.value_size);
                    b.worker
                        .time("write", || ctx.db.put(&key, value))
                        .map_err(|e| e.to_string())?;
                    out.writes += 1;
                }
                Ok(out)
            },
        )
        .map_err(|f| f.error)?;
    let mut sum = ThreadOut::default();
    for (_, o) in &done.states {
        sum.ops += o.ops;
        sum.found += o.found;
        sum.reads += o.reads;
        sum.writes += o.writes;
        sum.bytes += o.bytes;
    }
    Ok((sum, done.beside?, done.seconds))
}

/// Which keys a write benchmark writes.
#[derive(Clone, Copy)]
enum Order {
    Sequential,
    Random,
}

fn write_loop(ctx: &Ctx, threads: usize, n: u64, order: Order, sync: bool) -> Result<Ran, String> {
    let opts = WriteOptions::default().sync(sync);
    run_threads(
        ctx,
        threads,
        n,
        false,
        |w| {
            let values = Values::new(ctx.seed.wrapping_add(w.thread as u64), ctx.cfg.value_size);
            Ok((ctx.rng(w.thread), values, Vec::new()))
        },
        |(rng, values, key), out, w| {
            let k = match order {
                Order::Sequential => w.pos,
                Order::Random => rng.below(ctx.cfg.num),
            };
            encode_key(k, ctx.cfg.key_size, key);
            let value = values.next(ctx.cfg.value_size);
            let mut batch = WriteBatch::new();
            batch.put(key, value);
            w.time("write", || ctx.db.write(batch, &opts))
                .map_err(|e| e.to_string())?;
            out.ops += 1;
            out.writes += 1;
            out.bytes += (key.len() + value.len()) as u64;
            Ok(Step::Did(1))
        },
    )
}

/// Gets of random keys below `range`; `missing` appends a `.` to every key,
/// which no stored key has; `writer` writes beside the readers
/// (readwhilewriting).
fn read_loop(
    ctx: &Ctx,
    threads: usize,
    n: u64,
    range: u64,
    missing: bool,
    writer: bool,
) -> Result<Ran, String> {
    run_threads(
        ctx,
        threads,
        n,
        writer,
        |w| Ok((ctx.rng(w.thread), Vec::new())),
        |(rng, key), out, w| {
            encode_key(rng.below(range), ctx.cfg.key_size, key);
            if missing {
                key.push(b'.');
            }
            let got = w
                .time("read", || ctx.db.get(key))
                .map_err(|e| e.to_string())?;
            out.ops += 1;
            out.reads += 1;
            if let Some(v) = got {
                out.found += 1;
                out.bytes += (key.len() + v.len()) as u64;
            }
            Ok(Step::Did(1))
        },
    )
}

/// Seeks to random keys with a new iterator each (so that each sees the
/// latest state), reading the entry landed on; found when it is the key.
fn seek_loop(ctx: &Ctx, threads: usize, n: u64) -> Result<Ran, String> {
    run_threads(
        ctx,
        threads,
        n,
        false,
        |w| Ok((ctx.rng(w.thread), Vec::new())),
        |(rng, key), out, w| {
            encode_key(rng.below(ctx.cfg.num), ctx.cfg.key_size, key);
            let key = &*key;
            let (landed, bytes) = w
                .time("seek", || -> shale::Result<(bool, u64)> {
                    let mut it = ctx.db.iter(&ReadOptions::default())?;
                    it.seek(key);
                    it.status()?;
                    if it.valid() {
                        Ok((it.key() == key, (it.key().len() + it.value().len()) as u64))
                    } else {
                        Ok((false, 0))
                    }
                })
                .map_err(|e| e.to_string())?;
            out.ops += 1;
            out.reads += 1;
            out.found += u64::from(landed);
            out.bytes += bytes;
            Ok(Step::Did(1))
        },
    )
}

/// Reads up to `n` entries in key order (or reverse), timing each step.
fn scan_loop(ctx: &Ctx, threads: usize, n: u64, reverse: bool) -> Result<Ran, String> {
    run_threads(
        ctx,
        threads,
        n,
        false,
        |w| {
            let it = w
                .time("read", || -> shale::Result<_> {
                    let mut it = ctx.db.iter(&ReadOptions::default())?;
                    if reverse {
                        it.seek_to_last();
                    } else {
                        it.seek_to_first();
                    }
                    Ok(it)
                })
                .map_err(|e| e.to_string())?;
            if !it.valid() {
                it.status().map_err(|e| e.to_string())?;
            }
            Ok(it)
        },
        |it, out, w| {
            if !it.valid() {
                return Ok(Step::End);
            }
            out.ops += 1;
            out.reads += 1;
            out.found += 1;
            out.bytes += (it.key().len() + it.value().len()) as u64;
            w.time("read", || {
                if reverse {
                    it.prev();
                } else {
                    it.next();
                }
            });
            // An iterator that fails turns invalid: its status says why.
            if !it.valid() {
                it.status().map_err(|e| e.to_string())?;
            }
            Ok(Step::Did(1))
        },
    )
}

fn mixed_loop(ctx: &Ctx, threads: usize, n: u64) -> Result<Ran, String> {
    run_threads(
        ctx,
        threads,
        n,
        false,
        |w| {
            let values = Values::new(ctx.seed.wrapping_add(w.thread as u64), ctx.cfg.value_size);
            Ok((ctx.rng(w.thread), values, Vec::new()))
        },
        |(rng, values, key), out, w| {
            encode_key(rng.below(ctx.cfg.num), ctx.cfg.key_size, key);
            if rng.below(100) < u64::from(ctx.cfg.readwritepercent) {
                let got = w
                    .time("read", || ctx.db.get(key))
                    .map_err(|e| e.to_string())?;
                out.reads += 1;
                if let Some(v) = got {
                    out.found += 1;
                    out.bytes += (key.len() + v.len()) as u64;
                }
            } else {
                let value = values.next(ctx.cfg.value_size);
                w.time("write", || ctx.db.put(key, value))
                    .map_err(|e| e.to_string())?;
                out.writes += 1;
                out.bytes += (key.len() + value.len()) as u64;
            }
            out.ops += 1;
            Ok(Step::Did(1))
        },
    )
}

fn delete_loop(ctx: &Ctx, threads: usize, n: u64) -> Result<Ran, String> {
    run_threads(
        ctx,
        threads,
        n,
        false,
        |w| Ok((ctx.rng(w.thread), Vec::new())),
        |(rng, key), out, w| {
            encode_key(rng.below(ctx.cfg.num), ctx.cfg.key_size, key);
            w.time("delete", || ctx.db.delete(key))
                .map_err(|e| e.to_string())?;
            out.ops += 1;
            out.writes += 1;
            Ok(Step::Did(1))
        },
    )
}

/// One full compaction, timed, on one thread.
fn compact_once(ctx: &Ctx) -> Result<Ran, String> {
    run_threads(
        ctx,
        1,
        1,
        false,
        |_| Ok(()),
        |(), out, w| {
            w.time("compact", || ctx.db.compact_all())
                .map_err(|e| e.to_string())?;
            out.ops = 1;
            Ok(Step::Did(1))
        },
    )
}

/// The seed of the benchmark `name` at position `index` of a run: distinct
/// per benchmark name, so that a readrandom never replays the keys of the
/// fillrandom before it (in this process or another with the same --seed),
/// and reproducible for the same command line.
pub(super) fn bench_seed(seed: u64, name: &str, index: usize) -> u64 {
    // FNV-1a over the name, then the run's seed and the position.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name
        .bytes()
        .chain(seed.to_le_bytes())
        .chain((index as u64).to_le_bytes())
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Runs one benchmark on `db` (not `stats`'s printing: the caller does
/// that). `index` is the benchmark's position in the run, which seeds it.
pub fn run_bench(
    db: &Db,
    cfg: &Config,
    bench: Bench,
    name: &str,
    index: usize,
    sampled: Option<&LiveSlot>,
) -> Result<BenchResult> {
    let threads = cfg.threads.max(1);
    let live = Arc::new(LiveStats::new(threads + 1));
    if let Some(slot) = sampled {
        slot.set(live.clone());
    }
    let ctx = Ctx {
        db,
        cfg,
        live: &live,
        seed: bench_seed(cfg.seed, name, index),
    };
    let before = db.metrics();
    let (num, reads) = (cfg.num, cfg.reads);
    let hot = cfg.num.div_ceil(100).max(1);
    let measured_threads = match bench {
        Bench::Compact | Bench::Stats => 1,
        _ => threads,
    };
    let ran = match bench {
        Bench::FillSeq => write_loop(&ctx, threads, num, Order::Sequential, false),
        Bench::FillRandom | Bench::Overwrite => {
            write_loop(&ctx, threads, num, Order::Random, false)
        }
        Bench::FillSync => write_loop(&ctx, threads, num / 1000, Order::Random, true),
        Bench::ReadRandom => read_loop(&ctx, threads, reads, num, false, false),
        Bench::ReadHot => read_loop(&ctx, threads, reads, hot, false, false),
        Bench::ReadMissing => read_loop(&ctx, threads, reads, num, true, false),
        Bench::ReadWhileWriting => read_loop(&ctx, threads, reads, num, false, true),
        Bench::SeekRandom => seek_loop(&ctx, threads, reads),
        Bench::ReadSeq => scan_loop(&ctx, threads, reads, false),
        Bench::ReadReverse => scan_loop(&ctx, threads, reads, true),
        Bench::ReadRandomWriteRandom => mixed_loop(&ctx, threads, reads),
        Bench::DeleteRandom => delete_loop(&ctx, threads, num),
        Bench::Compact => compact_once(&ctx),
        Bench::Stats => run_threads(&ctx, 1, 0, false, |_| Ok(()), |(), _, _| Ok(Step::End)),
    };
    let (sum, writer_out, wall) = ran.map_err(Error::msg)?;
    let delta = db.metrics().delta(&before);
    let totals = live.totals();
    let measured = match bench {
        Bench::ReadWhileWriting => totals
            .get("read")
            .cloned()
            .unwrap_or_else(|| live::all_kinds(&live::ByKind::new())),
        _ => live::all_kinds(&totals),
    };
    // db_bench reports at least one operation, so that a benchmark that did
    // nothing still gets a line.
    let ops = sum.ops.max(1);
    let wall_pos = wall.max(1e-9);
    let found_msg = |found: u64, of: u64| format!("({found} of {of} found)");
    let (found, read_count, message) = match bench {
        Bench::ReadRandom
        | Bench::ReadHot
        | Bench::ReadMissing
        | Bench::SeekRandom
        | Bench::ReadWhileWriting => (
            Some(sum.found),
            Some(sum.reads),
            found_msg(sum.found, sum.reads),
        ),
        Bench::ReadRandomWriteRandom => (
            Some(sum.found),
            Some(sum.reads),
            format!(
                "( reads:{} writes:{} total:{} found:{})",
                sum.reads, sum.writes, sum.ops, sum.found
            ),
        ),
        Bench::ReadSeq | Bench::ReadReverse => (Some(sum.found), Some(sum.reads), String::new()),
        _ => (None, None, String::new()),
    };
    let writes = match bench {
        Bench::ReadWhileWriting => Some(writer_out.writes),
        Bench::ReadRandomWriteRandom => Some(sum.writes),
        _ => None,
    };
    Ok(BenchResult {
        name: name.to_string(),
        ops: sum.ops,
        threads: measured_threads,
        seconds: wall,
        micros_per_op: wall * 1e6 * measured_threads as f64 / ops as f64,
        ops_per_sec: sum.ops as f64 / wall_pos,
        mb_per_sec: (sum.bytes > 0).then(|| sum.bytes as f64 / 1_048_576.0 / wall_pos),
        bytes: sum.bytes,
        found,
        reads: read_count,
        writes,
        message,
        interrupted: interrupted(),
        skipped: false,
        latency: measured.timed().then(|| Latency::of(&measured)),
        kinds: totals
            .iter()
            .filter(|(_, s)| s.timed())
            .map(|(k, s)| (k.to_string(), Latency::of(s)))
            .collect(),
        engine: EngineCounters::of(&delta),
        stats: None,
        histogram: measured.timed().then_some(measured),
    })
}

/// The storage a run's database is on: the zone file system of `--zoned`,
/// or the regular file system, its tables read through memory mappings with
/// `--mmap_read` (refused with `--zoned` before anything is created).
pub fn open_storage(a: &DbBenchDbArgs) -> Result<Storage> {
    let zoned = a.zoned.zoned.as_deref();
    if a.mmap_read && zoned.is_some() {
        return Err(crate::storage::mmap_needs_posix());
    }
    let storage = Storage::open(zoned, Create::IfMissing)?;
    if a.mmap_read {
        storage.mmap_reads()
    } else {
        Ok(storage)
    }
}

/// The options a run opens its database with.
pub fn db_options(a: &DbBenchDbArgs) -> Result<Options> {
    let mut o = Options::default()
        .block_cache_bytes(a.cache_size)
        .verify_checksums(a.verify_checksum);
    if let Some(n) = a.open_files {
        o.max_open_files = n;
    }
    if let Some(n) = a.write_buffer_size {
        if n == 0 {
            return Err(Error::Usage(
                "--write_buffer_size must be at least 1 byte".into(),
            ));
        }
        o.write_buffer_size = n;
    }
    match a.bloom_bits {
        Some(0) => o.filter_policy = FilterPolicy::default().levels(FilterLevels::None),
        Some(n) if n > 0 => {
            let bits = u32::try_from(n)
                .ok()
                .filter(|&b| b <= 64)
                .ok_or_else(|| Error::Usage(format!("--bloom_bits {n}: use 0 to 64")))?;
            o.filter_policy = FilterPolicy::bloom(bits).levels(FilterLevels::All);
        }
        _ => {}
    }
    let placement = match &a.table_metadata {
        Some(p) => p.as_str(),
        None if a.cache_index_and_filter_blocks => "none",
        None => "all",
    };
    match placement {
        "none" => {}
        "pin" => o.pin_table_metadata = true,
        "index" => o.table_metadata = MetadataPlacement::indexes_at(LevelSet::ALL),
        "all-but-last" => {
            o.table_metadata = MetadataPlacement::all_kinds_at(LevelSet::all_but_last())
        }
        "all" => o.table_metadata = MetadataPlacement::all_kinds_at(LevelSet::ALL),
        other => {
            return Err(Error::Usage(format!(
                "--table_metadata {other}: use none, pin, index, all-but-last or all"
            )))
        }
    }
    o.compression = match a.compression_type.as_str() {
        "none" => Compression::None,
        "lz4" => Compression::Lz4,
        other => {
            return Err(Error::Usage(format!(
                "--compression_type {other}: use none or lz4"
            )))
        }
    };
    Ok(o)
}

/// Checks that `num` keys fit in `key_size` decimal digits.
pub fn check_key_size(num: u64, key_size: usize) -> Result {
    let digits = decimal_digits(num.saturating_sub(1));
    if digits > key_size {
        return Err(Error::Usage(format!(
            "--key_size {key_size} cannot hold --num {num}: keys are decimal and need {digits} bytes; pass --key_size {digits} or more"
        )));
    }
    Ok(())
}

/// True for the names of the files a shale database directory holds.
#[cfg(test)]
fn is_shale_file(name: &str, is_dir: bool) -> bool {
    crate::storage::is_db_file("shale", name, is_dir)
}

/// Opens the database of `--use_existing_db` after checking that it holds
/// db_bench keys of `key_size` (its first and last keys).
pub fn open_existing(storage: &Storage, dir: &Path, opts: Options, key_size: usize) -> Result<Db> {
    if !storage.has_db(dir)? {
        return Err(Error::msg(format!(
            "--use_existing_db: {} holds no database; run a fill benchmark without --use_existing_db first",
            dir.display()
        )));
    }
    // The check reads only: a refused database is left exactly as it was.
    let check = Db::open_read_only(dir, storage.options(opts.clone().create_if_missing(false)))?;
    let bad = {
        let mut it = check.iter(&ReadOptions::default())?;
        let mut bad = None;
        for last in [false, true] {
            if last {
                it.seek_to_last();
            } else {
                it.seek_to_first();
            }
            it.status()?;
            if it.valid() && !is_db_bench_key(it.key(), key_size) {
                bad = Some(crate::bytes::display_key(it.key()));
                break;
            }
        }
        bad
    };
    check.close()?;
    if let Some(key) = bad {
        return Err(Error::msg(format!(
            "--use_existing_db: {} does not hold db_bench keys of --key_size {key_size} (it holds {key}); pass the --key_size it was filled with, or another --db",
            dir.display()
        )));
    }
    Ok(Db::open(
        dir,
        storage.options(opts.create_if_missing(false)),
    )?)
}

/// The whole run's JSON document.
#[derive(Serialize)]
struct RunDoc<'a> {
    engine: &'static str,
    config: RunConfig<'a>,
    results: &'a [BenchResult],
    interrupted: bool,
}

/// What a `bench db` run was asked to do, as its JSON document says.
#[derive(Serialize)]
struct RunConfig<'a> {
    benchmarks: &'a [String],
    num: u64,
    reads: u64,
    value_size: usize,
    key_size: usize,
    threads: usize,
    cache_size: u64,
    open_files: Option<usize>,
    bloom_bits: Option<i64>,
    compression_type: &'a str,
    write_buffer_size: Option<usize>,
    use_existing_db: bool,
    db: &'a Path,
    storage: &'a str,
    seed: u64,
    readwritepercent: u32,
    histogram: bool,
}

fn run_config<'a>(
    a: &'a BenchDbArgs,
    cfg: &Config,
    dir: &'a Path,
    storage: &'a str,
) -> RunConfig<'a> {
    RunConfig {
        benchmarks: &a.benchmarks,
        num: cfg.num,
        reads: cfg.reads,
        value_size: cfg.value_size,
        key_size: cfg.key_size,
        threads: cfg.threads,
        cache_size: a.db.cache_size,
        open_files: a.db.open_files,
        bloom_bits: a.db.bloom_bits,
        compression_type: &a.db.compression_type,
        write_buffer_size: a.db.write_buffer_size,
        use_existing_db: a.db.use_existing_db,
        db: dir,
        storage,
        seed: cfg.seed,
        readwritepercent: cfg.readwritepercent,
        histogram: a.histogram,
    }
}

/// `shale bench db`.
pub fn run(a: &BenchDbArgs, out: &mut dyn Write) -> Result {
    let benches: Vec<(Bench, &str)> = a
        .benchmarks
        .iter()
        .map(|n| {
            Bench::parse(n).map(|b| (b, n.as_str())).ok_or_else(|| {
                Error::Usage(format!(
                    "unknown benchmark {n:?}; valid: {}",
                    BENCHMARK_NAMES.join(", ")
                ))
            })
        })
        .collect::<Result<_>>()?;
    let key_size = a.db.key_size as usize;
    check_key_size(a.db.num, key_size)?;
    let storage = open_storage(&a.db)?;
    let opts = storage.options(db_options(&a.db)?);
    let cfg = Config {
        num: a.db.num,
        reads: a.reads.unwrap_or(a.db.num),
        value_size: a.db.value_size,
        key_size,
        threads: a.threads as usize,
        readwritepercent: a.readwritepercent,
        seed: a.db.seed,
        histogram: a.histogram,
    };
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::msg(format!("cannot create --out {}: {e}", dir.display())))?;
    }
    let dir = &storage.db_dir(a.db.db.as_deref(), Some(Path::new(DEFAULT_DB)))?;
    let label = storage.label();
    let mut opts = opts;
    // With --out, the time-series sampler: operations of whichever benchmark
    // runs, gauges of whichever database is open, flushes and compactions.
    let slot = Arc::new(DbSlot::default());
    let ops = Arc::new(LiveSlot::default());
    let sampling = match &a.out {
        Some(out_dir) => {
            let interval = a.sample.interval().map_err(Error::Usage)?;
            let sampler = Sampler::start(
                interval,
                &storage.sample_path(dir),
                Some(out_dir),
                Some(ops.clone()),
                Some(slot.metrics_source()),
            )
            .map_err(|e| Error::msg(format!("starting the sampler: {e}")))?;
            let timeline = Arc::new(Timeline::new(sampler.started_at()));
            opts.listeners.push(timeline.clone());
            Some((sampler, timeline, out_dir))
        }
        None => None,
    };
    let mut db = slot.open(if a.db.use_existing_db {
        open_existing(&storage, dir, opts.clone(), key_size)?
    } else {
        storage.remove_db_dir(dir)?;
        Db::open(dir, opts.clone())?
    });
    // The trace follows the database: a fresh benchmark's new database
    // starts it again, so that it ends up holding the last one's.
    let trace = a.trace.trace.as_deref();
    if let Some(file) = trace {
        crate::trace_file::start_trace(&db, file, a.trace.trace_sample)?;
    }
    crate::runner::install_interrupt();
    let mut dirty = a.db.use_existing_db;
    let mut results: Vec<BenchResult> = Vec::new();
    let write_results = |results: &[BenchResult]| -> Result {
        if let Some(o) = &a.out {
            let doc = RunDoc {
                engine: "shale",
                config: run_config(a, &cfg, dir, &label),
                results,
                interrupted: interrupted(),
            };
            let s = serde_json::to_string_pretty(&doc)
                .map_err(|e| Error::msg(format!("encoding JSON: {e}")))?;
            let path = o.join("results.json");
            std::fs::write(&path, s + "\n")
                .map_err(|e| Error::msg(format!("writing {}: {e}", path.display())))?;
        }
        Ok(())
    };
    if !a.json {
        writeln!(
            out,
            "shale bench db: keys {} bytes each, values {} bytes, {} entries, {} threads, cache {} bytes, db {}{}",
            key_size,
            cfg.value_size,
            cfg.num,
            cfg.threads,
            a.db.cache_size,
            dir.display(),
            if storage.zoned().is_some() {
                format!(" on {label}")
            } else {
                String::new()
            }
        )
        .map_err(Error::output)?;
        writeln!(out, "{}", "-".repeat(48)).map_err(Error::output)?;
        out.flush().map_err(Error::output)?;
    }
    for (index, &(bench, name)) in benches.iter().enumerate() {
        if interrupted() {
            break;
        }
        if bench.fresh() {
            if a.db.use_existing_db {
                let r = BenchResult::skipped(name);
                if !a.json {
                    writeln!(out, "{}", r.line()).map_err(Error::output)?;
                }
                results.push(r);
                continue;
            }
            if dirty {
                if let Some(file) = trace {
                    crate::trace_file::end_trace(&db, file, "a database replaced by a fresh one")?;
                }
                slot.close(db)?;
                storage.remove_db_dir(dir)?;
                db = slot.open(Db::open(dir, opts.clone())?);
                if let Some(file) = trace {
                    crate::trace_file::start_trace(&db, file, a.trace.trace_sample)?;
                }
                dirty = false;
            }
        }
        db.mark_block_trace(name);
        let mut r = run_bench(&db, &cfg, bench, name, index, Some(&ops))?;
        dirty |= bench.writes();
        if bench == Bench::Stats {
            let summary = db.summary()?;
            let metrics = db.metrics();
            if !a.json {
                write!(out, "{}", shale::stat::stat_text(&summary, &metrics))
                    .map_err(Error::output)?;
            }
            r.stats = Some(crate::stats_doc::stats_json(&summary, &metrics));
        } else if !a.json {
            writeln!(out, "{}", r.line()).map_err(Error::output)?;
            if a.histogram {
                let what = match bench {
                    Bench::SeekRandom => "seek",
                    Bench::DeleteRandom => "delete",
                    Bench::Compact => "compaction",
                    Bench::FillSeq | Bench::FillRandom | Bench::Overwrite | Bench::FillSync => {
                        "write"
                    }
                    Bench::ReadRandomWriteRandom => "op",
                    _ => "read",
                };
                let stats = r
                    .histogram
                    .clone()
                    .unwrap_or_else(|| live::all_kinds(&live::ByKind::new()));
                writeln!(out, "\n{}", histogram_text(what, &stats)).map_err(Error::output)?;
            }
        }
        out.flush().map_err(Error::output)?;
        results.push(r);
        write_results(&results)?;
    }
    if let Some(file) = trace {
        crate::trace_file::end_trace(&db, file, "the last database")?;
    }
    slot.close(db)?;
    write_results(&results)?;
    if let Some((sampler, timeline, out_dir)) = sampling {
        let mut series = sampler.finish();
        series.spans = timeline.spans();
        series.notes.extend(storage.sampler_notes());
        let title = format!("bench db: {}", a.benchmarks.join(","));
        crate::sampler::write_files(&series, out_dir, &title).map_err(Error::msg)?;
    }
    storage.finish()?;
    if a.json {
        let doc = RunDoc {
            engine: "shale",
            config: run_config(a, &cfg, dir, &label),
            results: &results,
            interrupted: interrupted(),
        };
        let s = serde_json::to_string_pretty(&doc)
            .map_err(|e| Error::msg(format!("encoding JSON: {e}")))?;
        writeln!(out, "{s}").map_err(Error::output)?;
    } else if interrupted() {
        writeln!(
            out,
            "interrupted: the benchmarks after this point were not run"
        )
        .map_err(Error::output)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_zero_padded_decimal() {
        let mut k = Vec::new();
        encode_key(0, 16, &mut k);
        assert_eq!(k, b"0000000000000000");
        encode_key(1234567, 16, &mut k);
        assert_eq!(k, b"0000000001234567");
        encode_key(42, 4, &mut k);
        assert_eq!(k, b"0042");
        assert!(is_db_bench_key(b"0042", 4));
        assert!(!is_db_bench_key(b"0042", 16));
        assert!(!is_db_bench_key(b"00x2", 4));
        assert_eq!(decimal_digits(0), 1);
        assert_eq!(decimal_digits(9), 1);
        assert_eq!(decimal_digits(10), 2);
        assert_eq!(decimal_digits(999_999), 6);
        assert!(check_key_size(1_000_000, 6).is_ok());
        assert!(matches!(check_key_size(1_000_001, 6), Err(Error::Usage(_))));
    }

    #[test]
    fn every_name_parses_and_seeds_differ_by_benchmark() {
        for n in BENCHMARK_NAMES {
            assert!(Bench::parse(n).is_some(), "{n}");
        }
        assert!(SWEEP_BENCHMARK_NAMES
            .iter()
            .all(|n| BENCHMARK_NAMES.contains(n)));
        assert_eq!(Bench::parse("fill100K"), None);
        assert_ne!(
            bench_seed(0, "fillrandom", 0),
            bench_seed(0, "readrandom", 0)
        );
        assert_ne!(
            bench_seed(0, "readrandom", 0),
            bench_seed(0, "readrandom", 1)
        );
        assert_ne!(
            bench_seed(0, "readrandom", 0),
            bench_seed(1, "readrandom", 0)
        );
        assert_eq!(bench_seed(7, "readhot", 3), bench_seed(7, "readhot", 3));
    }

    #[test]
    fn values_are_half_compressible_and_of_the_asked_size() {
        let mut v = Values::new(1, 100);
        let a = v.next(100).to_vec();
        assert_eq!(a.len(), 100);
        assert_eq!(a[..50], a[50..]);
        let big = Values::new(1, 3 << 20).next(3 << 20).len();
        assert_eq!(big, 3 << 20);
    }

    #[test]
    fn only_shale_directories_are_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("db");
        // Absent, then empty: nothing to remove.
        let storage = Storage::posix();
        storage.remove_db_dir(&db).expect("absent");
        std::fs::create_dir(&db).expect("mkdir");
        storage.remove_db_dir(&db).expect("empty");
        // A shale database goes, but not while it is open.
        let open = Db::open(&db, Options::default()).expect("open");
        open.put(b"k", b"v").expect("put");
        let e = storage.remove_db_dir(&db).expect_err("open elsewhere");
        assert!(e.to_string().contains("locked"), "{e}");
        open.close().expect("close");
        storage.remove_db_dir(&db).expect("shale database");
        assert_eq!(std::fs::read_dir(&db).expect("list").count(), 0);
        // Anything else stays, with an error naming it.
        std::fs::write(db.join("notes.txt"), "keep me").expect("write");
        let e = storage.remove_db_dir(&db).expect_err("foreign file");
        assert!(e.to_string().contains("notes.txt"), "{e}");
        assert!(db.join("notes.txt").exists());
        std::fs::remove_file(db.join("notes.txt")).expect("rm");
        std::fs::write(db.join("000005.sst"), "").expect("write");
        let e = storage
            .remove_db_dir(&db)
            .expect_err("nothing recognisable");
        assert!(e.to_string().contains("recognised"), "{e}");
        assert!(db.join("000005.sst").exists());
        // A peer's directory is only checked here (its harness destroys it).
        std::fs::remove_file(db.join("000005.sst")).expect("rm");
        std::fs::write(db.join("000007.ldb"), "").expect("write");
        let e = Storage::check_peer_db_dir(&db, "leveldb").expect_err("no CURRENT");
        assert!(e.to_string().contains("no CURRENT"), "{e}");
        std::fs::write(db.join("CURRENT"), "MANIFEST-000002\n").expect("write");
        Storage::check_peer_db_dir(&db, "leveldb").expect("a leveldb database");
        assert!(db.join("000007.ldb").exists());
        std::fs::write(db.join("notes.txt"), "keep me").expect("write");
        let e = Storage::check_peer_db_dir(&db, "leveldb").expect_err("foreign file");
        assert!(e.to_string().contains("notes.txt"), "{e}");
        assert!(is_shale_file("MANIFEST-000001", false));
        assert!(is_shale_file("000012.log", false));
        assert!(is_shale_file(shale::LOST_DIR, true));
        assert!(!is_shale_file("MANIFEST-x", false));
        assert!(!is_shale_file(".sst", false));
        assert!(!is_shale_file("sub", true));
    }

    /// `bench db`'s arguments as the command line gives them.
    #[derive(clap::Parser)]
    struct BenchDb {
        #[command(flatten)]
        a: BenchDbArgs,
    }

    fn db_args(extra: &[&str]) -> DbBenchDbArgs {
        use clap::Parser;
        let cli =
            BenchDb::try_parse_from(["db"].iter().chain(extra.iter()).copied()).expect("parses");
        cli.a.db
    }

    #[test]
    fn flags_map_to_options() {
        let o = db_options(&db_args(&[])).expect("defaults");
        assert_eq!(o.block_cache_bytes, 8 << 20);
        assert_eq!(o.max_open_files, Options::default().max_open_files);
        assert_eq!(o.filter_policy, FilterPolicy::default());
        assert_eq!(o.compression, Compression::None);
        assert!(o.verify_checksums);
        let o = db_options(&db_args(&["--verify_checksum=false"])).expect("no checks");
        assert!(!o.verify_checksums);
        let o = db_options(&db_args(&[
            "--cache_size=1000",
            "--open_files",
            "0",
            "--bloom_bits=10",
            "--compression_type=lz4",
            "--write_buffer_size=65536",
        ]))
        .expect("options");
        assert_eq!(o.block_cache_bytes, 1000);
        assert_eq!(o.max_open_files, 0);
        assert_eq!(o.filter_policy.kind, shale::FilterKind::Bloom);
        assert_eq!(o.filter_policy.bits_per_key, 10);
        assert_eq!(o.filter_policy.levels, FilterLevels::All);
        assert_eq!(o.compression, Compression::Lz4);
        assert_eq!(o.write_buffer_size, 65536);
        let none = db_options(&db_args(&["--bloom_bits", "0"])).expect("no filters");
        assert_eq!(none.filter_policy.levels, FilterLevels::None);
        let default = db_options(&db_args(&["--bloom_bits=-1"])).expect("default filters");
        assert_eq!(default.filter_policy, FilterPolicy::default());
        assert!(matches!(
            db_options(&db_args(&["--bloom_bits=65"])),
            Err(Error::Usage(_))
        ));
        assert!(matches!(
            db_options(&db_args(&["--write_buffer_size=0"])),
            Err(Error::Usage(_))
        ));
        // Where table metadata lives: by default with the tables, outside
        // the cache, as db_bench's --cache_index_and_filter_blocks=false.
        assert_eq!(
            o.table_metadata,
            MetadataPlacement::all_kinds_at(LevelSet::ALL)
        );
        assert!(!o.pin_table_metadata);
        let cached = db_options(&db_args(&["--cache_index_and_filter_blocks"])).expect("cached");
        assert_eq!(cached.table_metadata, MetadataPlacement::NONE);
        let explicit = db_options(&db_args(&[
            "--cache_index_and_filter_blocks=false",
            "--table_metadata=none",
        ]))
        .expect("explicit");
        assert_eq!(
            explicit.table_metadata,
            MetadataPlacement::NONE,
            "explicit wins"
        );
        let pin = db_options(&db_args(&["--table_metadata=pin"])).expect("pin");
        assert!(pin.pin_table_metadata);
        assert_eq!(pin.table_metadata, MetadataPlacement::NONE);
        let index = db_options(&db_args(&["--table_metadata", "index"])).expect("index");
        assert_eq!(index.table_metadata.index_partitions, LevelSet::ALL);
        assert_eq!(index.table_metadata.top_index, LevelSet::ALL);
        assert!(index.table_metadata.top_filter.is_empty());
        let all = db_options(&db_args(&["--table_metadata=all"])).expect("all");
        assert_eq!(
            all.table_metadata,
            MetadataPlacement::all_kinds_at(LevelSet::ALL)
        );
        let upper = db_options(&db_args(&["--table_metadata=all-but-last"])).expect("upper");
        assert!(upper
            .table_metadata
            .holds(shale::MetadataKind::FilterPartitions, 5));
        assert!(!upper
            .table_metadata
            .holds(shale::MetadataKind::IndexPartitions, 6));
        // db_bench's boolean spellings.
        assert!(db_args(&["--use_existing_db"]).use_existing_db);
        assert!(db_args(&["--use_existing_db=1"]).use_existing_db);
        assert!(!db_args(&["--use_existing_db=false"]).use_existing_db);
        assert!(!db_args(&[]).use_existing_db);
    }
}
