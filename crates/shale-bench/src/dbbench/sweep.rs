//! `bench db-sweep`: LevelDB's cache-structure sweep on shale. One
//! fillrandom of `--num` entries (settled, so that every entry is in a
//! table), then for each value of the swept option (`open_files`, the table
//! cache, or `cache_size`, the block cache) the database is opened afresh
//! with that value and each read benchmark runs `--reads` operations,
//! recording micros/op and the table-cache and block-cache hit rates.
//! `sweep.csv` and `sweep.json` (a [`SweepResults`]) are rewritten after
//! every value, so an interrupted sweep keeps what finished.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use shale::{Db, Options};
use shale_workload::protocol::{DbBenchReply, DbBenchRequest, DbBenchStep};

pub use super::points::{SweepFill, SweepPoint, SweepResults};
use super::{check_key_size, db_options, open_existing, run_bench, Bench, Config};
use crate::args::DbSweepArgs;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::live::LiveSlot;
use crate::runner::interrupted;
use crate::sampler::{DbSlot, Sampler, Timeline};
use crate::storage::Storage;

/// Default values of `--param open_files`.
pub const OPEN_FILES_VALUES: [u64; 5] = [0, 10, 100, 1000, 10_000];

/// Default values of `--param cache_size`: 1 KB to 1 GB by factors of 10.
pub const CACHE_SIZE_VALUES: [u64; 7] = [
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// Parses `--values`: non-negative integers, comma-separated.
fn parse_values(list: &str) -> Result<Vec<u64>> {
    let values: Vec<u64> = list
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            s.trim().parse::<u64>().map_err(|_| {
                Error::Usage(format!(
                    "--values {list}: {s:?} is not a whole number; give comma-separated integers (1000,10000)"
                ))
            })
        })
        .collect::<Result<_>>()?;
    if values.is_empty() {
        return Err(Error::Usage("--values is empty".into()));
    }
    Ok(values)
}

/// `sweep.json`, `sweep.csv` and the charts (`sweep_micros`,
/// `sweep_table_cache`, `sweep_block_cache`, each `.svg` and `.png`).
fn write_files(r: &SweepResults, dir: &Path) -> Result {
    let json =
        serde_json::to_string_pretty(r).map_err(|e| Error::msg(format!("encoding JSON: {e}")))?;
    let mut files = vec![
        ("sweep.json".to_string(), (json + "\n").into_bytes()),
        (
            "sweep.csv".to_string(),
            r.csv().map_err(Error::msg)?.into_bytes(),
        ),
    ];
    for (stem, chart) in super::chart::charts(r) {
        let drawn = |e| Error::msg(format!("drawing {stem}: {e}"));
        files.push((
            format!("{stem}.svg"),
            chart.to_svg().map_err(drawn)?.into_bytes(),
        ));
        files.push((format!("{stem}.png"), chart.to_png().map_err(drawn)?));
    }
    for (name, bytes) in files {
        let path = dir.join(name);
        std::fs::write(&path, bytes)
            .map_err(|e| Error::msg(format!("writing {}: {e}", path.display())))?;
    }
    Ok(())
}

/// The directory of `engine`'s database: `--db` for shale, `--db` with
/// `-<engine>` appended for a peer.
fn engine_dir(db: &Path, engine: &str) -> PathBuf {
    if engine == "shale" {
        return db.to_path_buf();
    }
    let mut name = db.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(format!("-{engine}"));
    db.with_file_name(name)
}

/// Everything one engine's sweep needs.
struct SweepCtx<'a> {
    /// Each peer's harness and configuration.
    peers: &'a BTreeMap<String, (Client, String)>,
    a: &'a DbSweepArgs,
    cfg: &'a Config,
    base: &'a Options,
    values: &'a [u64],
    benches: &'a [(Bench, String)],
    /// The sampler's view: shale's running benchmark and open database.
    ops: &'a LiveSlot,
    db: &'a DbSlot,
    /// Where shale's database is (`base` has its file system); the peers'
    /// are on the regular file system.
    storage: &'a Storage,
}

fn rate(hits: Option<u64>, misses: Option<u64>) -> Option<f64> {
    let (h, m) = (hits?, misses?);
    (h + m > 0).then(|| h as f64 / (h + m) as f64)
}

/// The shale side of a sweep: fill (unless --use_existing_db), then each
/// value on a fresh open.
fn sweep_shale(
    c: &SweepCtx,
    dir: &Path,
    results: &mut SweepResults,
    out: &mut dyn Write,
) -> Result {
    let (a, cfg) = (c.a, c.cfg);
    if a.db.use_existing_db {
        open_existing(c.storage, dir, c.base.clone(), cfg.key_size)?.close()?;
    } else {
        c.storage.remove_db_dir(dir)?;
        let db = c.db.open(Db::open(dir, c.base.clone())?);
        let fill_cfg = Config {
            threads: 1,
            ..cfg.clone()
        };
        let r = run_bench(
            &db,
            &fill_cfg,
            Bench::FillRandom,
            "fillrandom",
            0,
            Some(c.ops),
        )?;
        let t0 = std::time::Instant::now();
        db.settle()?;
        let settle_seconds = t0.elapsed().as_secs_f64();
        c.db.close(db)?;
        if !a.json {
            writeln!(out, "shale    {}", r.line()).map_err(Error::output)?;
            writeln!(out, "shale    settled in {settle_seconds:.3} s").map_err(Error::output)?;
            out.flush().map_err(Error::output)?;
        }
        results.fills.push(SweepFill {
            engine: "shale".into(),
            ops: r.ops,
            micros_per_op: r.micros_per_op,
            seconds: r.seconds,
            settle_seconds,
        });
    }
    for &value in c.values {
        if interrupted() {
            break;
        }
        let mut opts = c.base.clone().create_if_missing(false);
        match a.param.as_str() {
            "open_files" => {
                opts.max_open_files = usize::try_from(value).map_err(|_| {
                    Error::Usage(format!("--values: {value} open files is too many"))
                })?
            }
            _ => opts.block_cache_bytes = value,
        }
        let db = c.db.open(Db::open(dir, opts)?);
        for (i, (bench, name)) in c.benches.iter().enumerate() {
            if interrupted() {
                break;
            }
            let r = run_bench(&db, cfg, *bench, name, i + 1, Some(c.ops))?;
            if !a.json {
                writeln!(out, "shale    {:>12} = {value:<12} {}", a.param, r.line())
                    .map_err(Error::output)?;
                out.flush().map_err(Error::output)?;
            }
            results.points.push(SweepPoint {
                engine: "shale".into(),
                value,
                benchmark: name.clone(),
                ops: r.ops,
                micros_per_op: r.micros_per_op,
                ops_per_sec: r.ops_per_sec,
                found: r.found.unwrap_or(0),
                table_cache_hits: Some(r.engine.table_cache_hits),
                table_cache_misses: Some(r.engine.table_cache_misses),
                table_cache_hit_rate: r.engine.table_cache_hit_rate,
                block_cache_hits: Some(r.engine.block_cache_hits),
                block_cache_misses: Some(r.engine.block_cache_misses),
                block_cache_hit_rate: r.engine.block_cache_hit_rate,
                interrupted: r.interrupted,
            });
        }
        c.db.close(db)?;
        results.interrupted = interrupted();
        write_files(results, &a.out)?;
    }
    // A peer runs next, in its own process: no operations to count.
    c.ops.clear();
    Ok(())
}

/// LevelDB's side of a sweep, through its harness: the same fill and reads
/// (the same seeds, so the same keys), each value in a process of its own.
/// The harness of a peer `engine` that serves the dbbench op, and the
/// configuration to ask it for (its default: Pebble's is `geth`).
fn peer_harness(engine: &str, timeout: Duration) -> Result<(Client, String)> {
    let client = Client::locate(engine).map_err(|e| Error::msg(format!("{engine}: {e}")))?;
    let info = client
        .info(timeout)
        .map_err(|e| Error::msg(format!("{engine}: {e}")))?;
    client.require(&info, "dbbench").map_err(Error::msg)?;
    let config = info
        .configs
        .first()
        .cloned()
        .ok_or_else(|| Error::msg(format!("{engine}: its harness names no configuration")))?;
    Ok((client, config))
}

fn sweep_peer(
    c: &SweepCtx,
    engine: &str,
    dir: &Path,
    results: &mut SweepResults,
    out: &mut dyn Write,
) -> Result {
    let (a, cfg) = (c.a, c.cfg);
    let timeout = Duration::from_secs(a.timeout);
    let (client, config) = c
        .peers
        .get(engine)
        .ok_or_else(|| Error::msg(format!("{engine}: no harness was located")))?;
    let call = |r: DbBenchRequest| -> Result<DbBenchReply> {
        client
            .dbbench(r, timeout)
            .map_err(|e| Error::msg(format!("{}: {e}", client.program().display())))
    };
    let dir =
        std::path::absolute(dir).map_err(|e| Error::msg(format!("{}: {e}", dir.display())))?;
    let request = |fresh: bool, steps: Vec<DbBenchStep>, threads: usize, cache: u64, files: i64| {
        DbBenchRequest {
            dir: dir.clone(),
            config: config.clone(),
            fresh,
            settle: fresh,
            benchmarks: steps,
            num: cfg.num,
            reads: cfg.reads,
            key_size: cfg.key_size,
            value_size: cfg.value_size,
            threads,
            cache_bytes: cache,
            open_files: files,
            bloom_bits: a.db.bloom_bits.unwrap_or(-1).max(-1),
            compression: if a.db.compression_type == "none" {
                "none".into()
            } else {
                "default".into()
            },
        }
    };
    let default_files = a.db.open_files.map_or(-1, |n| n as i64);
    if a.db.use_existing_db {
        if !dir.join("CURRENT").exists() {
            return Err(Error::msg(format!(
                "--use_existing_db: {} holds no {engine} database",
                dir.display()
            )));
        }
    } else {
        Storage::check_peer_db_dir(&dir, engine)?;
        let steps = vec![DbBenchStep {
            name: "fillrandom".into(),
            seed: super::bench_seed(cfg.seed, "fillrandom", 0),
        }];
        let reply = call(request(true, steps, 1, a.db.cache_size, default_files))?;
        let r = reply
            .results
            .first()
            .ok_or_else(|| Error::msg(format!("{engine}: no result for the fill")))?;
        if !a.json {
            let line = super::result_line(
                "fillrandom",
                r.micros_per_op,
                r.ops as f64 / r.seconds.max(1e-9),
                (r.bytes > 0).then(|| r.bytes as f64 / 1_048_576.0 / r.seconds.max(1e-9)),
                "",
            );
            writeln!(out, "{engine:<8} {line}").map_err(Error::output)?;
            writeln!(out, "{engine:<8} settled in {:.3} s", reply.settle_seconds)
                .map_err(Error::output)?;
        }
        results.fills.push(SweepFill {
            engine: engine.into(),
            ops: r.ops,
            micros_per_op: r.micros_per_op,
            seconds: r.seconds,
            settle_seconds: reply.settle_seconds,
        });
    }
    for &value in c.values {
        if interrupted() {
            break;
        }
        let (cache, files) = match a.param.as_str() {
            "open_files" => (a.db.cache_size, value as i64),
            _ => (value, default_files),
        };
        let steps = c
            .benches
            .iter()
            .enumerate()
            .map(|(i, (_, name))| DbBenchStep {
                name: name.clone(),
                seed: super::bench_seed(cfg.seed, name, i + 1),
            })
            .collect();
        let reply = call(request(false, steps, cfg.threads, cache, files))?;
        for r in &reply.results {
            let wall = r.seconds.max(1e-9);
            if !a.json {
                let found_msg = format!("({} of {} found)", r.found, r.ops);
                let line = super::result_line(
                    &r.name,
                    r.micros_per_op,
                    r.ops as f64 / wall,
                    (r.bytes > 0).then(|| r.bytes as f64 / 1_048_576.0 / wall),
                    if matches!(r.name.as_str(), "readseq" | "readreverse") {
                        ""
                    } else {
                        &found_msg
                    },
                );
                writeln!(out, "{engine:<8} {:>12} = {value:<12} {line}", a.param)
                    .map_err(Error::output)?;
                out.flush().map_err(Error::output)?;
            }
            results.points.push(SweepPoint {
                engine: engine.into(),
                value,
                benchmark: r.name.clone(),
                ops: r.ops,
                micros_per_op: r.micros_per_op,
                ops_per_sec: r.ops as f64 / wall,
                found: r.found,
                table_cache_hits: r.table_cache_hits,
                table_cache_misses: r.table_cache_misses,
                table_cache_hit_rate: rate(r.table_cache_hits, r.table_cache_misses),
                block_cache_hits: r.block_cache_hits,
                block_cache_misses: r.block_cache_misses,
                block_cache_hit_rate: rate(r.block_cache_hits, r.block_cache_misses),
                interrupted: false,
            });
        }
        results.interrupted = interrupted();
        write_files(results, &a.out)?;
    }
    Ok(())
}

/// `shale bench db-sweep`.
pub fn run(a: &DbSweepArgs, out: &mut dyn Write) -> Result {
    let key_size = a.db.key_size as usize;
    check_key_size(a.db.num, key_size)?;
    if a.db.zoned.zoned.is_some() && a.engines.iter().any(|e| e != "shale") {
        return Err(Error::Usage(
            "--zoned runs shale only: the peers' harnesses use the regular file system \
             (pass --engines shale)"
                .into(),
        ));
    }
    let mut engines: Vec<String> = Vec::new();
    for e in &a.engines {
        if !engines.contains(e) {
            engines.push(e.clone());
        }
    }
    // Every peer's harness is asked whether it serves the dbbench op before
    // any work starts.
    let mut peers = BTreeMap::new();
    for e in engines.iter().filter(|e| *e != "shale") {
        peers.insert(e.clone(), peer_harness(e, Duration::from_secs(a.timeout))?);
    }
    let storage = super::open_storage(&a.db)?;
    let base = storage.options(db_options(&a.db)?);
    let db_dir = storage.db_dir(a.db.db.as_deref(), Some(Path::new(super::DEFAULT_DB)))?;
    let values = match (&a.values, a.param.as_str()) {
        (Some(list), _) => parse_values(list)?,
        (None, "open_files") => OPEN_FILES_VALUES.to_vec(),
        (None, "cache_size") => CACHE_SIZE_VALUES.to_vec(),
        (None, other) => {
            return Err(Error::Usage(format!(
                "--param {other}: use open_files or cache_size"
            )))
        }
    };
    let benches: Vec<(Bench, String)> = a
        .benchmarks
        .iter()
        .map(|n| {
            Bench::parse(n)
                .filter(|_| super::SWEEP_BENCHMARK_NAMES.contains(&n.as_str()))
                .map(|b| (b, n.clone()))
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "--benchmarks {n}: a sweep runs {}",
                        super::SWEEP_BENCHMARK_NAMES.join(", ")
                    ))
                })
        })
        .collect::<Result<_>>()?;
    let cfg = Config {
        num: a.db.num,
        reads: a.reads,
        value_size: a.db.value_size,
        key_size,
        threads: a.threads as usize,
        readwritepercent: 90,
        seed: a.db.seed,
        // Operations are counted, not timed one by one: the LevelDB
        // harness times only each benchmark, and so does db_bench.
        histogram: false,
    };
    std::fs::create_dir_all(&a.out)
        .map_err(|e| Error::msg(format!("cannot create --out {}: {e}", a.out.display())))?;
    crate::runner::install_interrupt();
    let mut results = SweepResults {
        param: a.param.clone(),
        values: values.clone(),
        benchmarks: benches.iter().map(|(_, n)| n.clone()).collect(),
        engines: engines.clone(),
        num: cfg.num,
        reads: cfg.reads,
        key_size,
        value_size: cfg.value_size,
        threads: cfg.threads,
        cache_size: a.db.cache_size,
        open_files: a.db.open_files,
        fills: Vec::new(),
        points: Vec::new(),
        interrupted: false,
    };
    // The time series of the whole sweep: shale's operations and gauges,
    // the machine's CPU and device throughout (the peers' phases included).
    let ops = Arc::new(LiveSlot::default());
    let db_slot = Arc::new(DbSlot::default());
    let interval = a.sample.interval().map_err(Error::Usage)?;
    let sampler = Sampler::start(
        interval,
        &storage.sample_path(&db_dir),
        Some(&a.out),
        Some(ops.clone()),
        Some(db_slot.metrics_source()),
    )
    .map_err(|e| Error::msg(format!("starting the sampler: {e}")))?;
    let timeline = Arc::new(Timeline::new(sampler.started_at()));
    let mut base = base;
    base.listeners.push(timeline.clone());
    let c = SweepCtx {
        a,
        peers: &peers,
        cfg: &cfg,
        base: &base,
        values: &values,
        benches: &benches,
        ops: &ops,
        db: &db_slot,
        storage: &storage,
    };
    for engine in &engines {
        if interrupted() {
            break;
        }
        let dir = engine_dir(&db_dir, engine);
        if engine == "shale" {
            sweep_shale(&c, &dir, &mut results, out)?;
        } else {
            sweep_peer(&c, engine, &dir, &mut results, out)?;
        }
    }
    results.interrupted = interrupted();
    write_files(&results, &a.out)?;
    let mut series = sampler.finish();
    series.spans = timeline.spans();
    series.notes.extend(storage.sampler_notes());
    storage.finish()?;
    let title = format!("bench db-sweep: {} on {}", a.param, engines.join(", "));
    crate::sampler::write_files(&series, &a.out, &title).map_err(Error::msg)?;
    if a.json {
        let s = serde_json::to_string_pretty(&results)
            .map_err(|e| Error::msg(format!("encoding JSON: {e}")))?;
        writeln!(out, "{s}").map_err(Error::output)
    } else {
        writeln!(out, "\n{}", results.text()).map_err(Error::output)?;
        writeln!(out, "results in {}", a.out.display()).map_err(Error::output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(value: u64, benchmark: &str, micros: f64) -> SweepPoint {
        SweepPoint {
            engine: "shale".into(),
            value,
            benchmark: benchmark.into(),
            ops: 10,
            micros_per_op: micros,
            ops_per_sec: 1e6 / micros,
            found: 6,
            table_cache_hits: Some(9),
            table_cache_misses: Some(1),
            table_cache_hit_rate: Some(0.9),
            block_cache_hits: Some(0),
            block_cache_misses: Some(0),
            block_cache_hit_rate: None,
            interrupted: false,
        }
    }

    #[test]
    fn series_group_points_per_benchmark_and_csv_has_a_row_each() {
        let r = SweepResults {
            param: "open_files".into(),
            values: vec![0, 10],
            benchmarks: vec!["readrandom".into(), "readhot".into()],
            engines: vec!["shale".into()],
            num: 100,
            reads: 10,
            key_size: 16,
            value_size: 100,
            threads: 1,
            cache_size: 8 << 20,
            open_files: None,
            fills: Vec::new(),
            points: vec![
                point(0, "readrandom", 5.0),
                point(0, "readhot", 2.0),
                point(10, "readrandom", 4.0),
                point(10, "readhot", 1.5),
            ],
            interrupted: false,
        };
        let s = r.series();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].benchmark, "readrandom");
        assert_eq!(s[0].points, vec![(0, 5.0), (10, 4.0)]);
        assert_eq!(s[1].points, vec![(0, 2.0), (10, 1.5)]);
        let csv = r.csv().expect("csv");
        assert_eq!(csv.lines().count(), 5);
        assert!(
            csv.lines().nth(1).is_some_and(|l| l
                == "shale,open_files,0,readrandom,10,5.000,200000.0,6,9,1,0.900000,0,0,,false"),
            "{csv}"
        );
        let text = r.text();
        assert!(text.contains("micros/op"), "{text}");
        let back: SweepResults =
            serde_json::from_str(&serde_json::to_string(&r).expect("encodes")).expect("decodes");
        assert_eq!(back, r);
    }

    #[test]
    fn values_parse_or_are_usage_errors() {
        assert_eq!(parse_values("0, 10,100").expect("parses"), vec![0, 10, 100]);
        for bad in ["", "1,x", "-1", "1.5"] {
            assert!(matches!(parse_values(bad), Err(Error::Usage(_))), "{bad}");
        }
    }
}
