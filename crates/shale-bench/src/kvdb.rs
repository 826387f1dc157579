//! `bench kvdb`: the I/O-per-Get study (brief, section 1) on one engine through
//! the adapter of `crate::engine` (its single-run machinery also
//! serves `advise --verify`).
//!
//! For each cache size the database is opened afresh (cold block and table
//! caches), warmed up with a few Gets, then read by `--threads` threads. The
//! engine's own counters give the study's I/Os per Get (block-cache misses per
//! Get) and physical reads per Get; `/proc/self/io` gives the device's view.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::engine::{Composition, EngineOpener, KvEngine, ShaleFsOpener, ShaleOpener};
use shale_workload::results::{phase, BenchResults, DeviceLimit, HitRates, Run};
use shale_workload::{
    Dataset, Distribution, KeyChooser, KeyGen, KeyScheme, MEASURE_SEED, WARMUP_SEED,
};

use crate::args::{BenchKvdbArgs, WorkloadArgs};
use crate::error::{Error, Result};
use crate::live::LiveStats;
use crate::runner::{self, Done, Failure, Phase, Plan, Sink, Step, Units, Worker};
use crate::sampler::Sampler;
use crate::storage::{Create, Storage};

const MIB: f64 = 1024.0 * 1024.0;
/// Keys per load batch.
const LOAD_BATCH: u64 = 1000;
/// Cache used while checking or loading a database (not measured).
pub(super) const SETUP_CACHE: u64 = 8 << 20;

fn err(e: String) -> Error {
    Error::msg(e)
}

/// What the Gets of a bench read: the keys of a scheme, drawn from a
/// distribution.
#[derive(Clone, Copy)]
pub(super) struct Workload {
    pub(super) keygen: KeyGen,
    pub(super) dataset: Dataset,
    pub(super) keys: u64,
    pub(super) distribution: Distribution,
    pub(super) missing: f64,
}

/// `shale bench kvdb`.
pub fn kvdb(a: &BenchKvdbArgs, out: &mut dyn Write) -> Result {
    let (scheme, distribution) = check_workload(&a.workload)?;
    let threads = a.workload.threads.unwrap_or_else(cores).max(1);
    // clap checks the flags' ranges; these hold for arguments built in code.
    if a.batch == 0 {
        return Err(Error::msg(
            "--batch must be at least 1 (keys per read call)",
        ));
    }
    let storage = Storage::open(a.zoned.zoned.as_deref(), Create::IfMissing)?;
    let dir = storage.db_dir(a.db.as_deref(), Some(&default_db_dir(a)))?;
    let dataset = Dataset::with_value_size(a.workload.value_size);
    let w = Workload {
        keygen: KeyGen::new(scheme),
        dataset,
        keys: a.workload.keys,
        distribution,
        missing: a.workload.missing,
    };
    // On a zone file system every read goes to the device: with O_DIRECT
    // on a block device, and on an emulated one where its host allows it.
    let (opener, setup_opener, direct_io): (Box<dyn EngineOpener>, Box<dyn EngineOpener>, bool) =
        match storage.zoned() {
            Some(z) => (
                Box::new(ShaleFsOpener {
                    fs: storage.fs(),
                    read_threads: a.read_threads,
                }),
                Box::new(ShaleFsOpener {
                    fs: storage.fs(),
                    read_threads: None,
                }),
                z.device.direct_io,
            ),
            None => (
                Box::new(ShaleOpener {
                    direct_io: a.workload.direct_io,
                    read_threads: a.read_threads,
                    io_uring: Some(a.io_uring),
                }),
                Box::new(ShaleOpener::default()),
                a.workload.direct_io,
            ),
        };
    std::fs::create_dir_all(&a.out).map_err(|e| {
        Error::msg(format!(
            "cannot create --out {}: {e}; pass a writable directory",
            a.out.display()
        ))
    })?;
    // Loading and checking read through the page cache: compactions read whole
    // tables, which O_DIRECT would turn into one synchronous 4 KiB read per
    // block. Only the measured runs use `--direct-io`.
    prepare(&*setup_opener, &storage, &dir, &w, threads)?;
    let (engine_name, comp) = {
        let e = opener.open_read_only(&dir, SETUP_CACHE).map_err(err)?;
        let c = e.composition().map_err(err)?;
        let name = e.name();
        e.close().map_err(err)?;
        (name, c)
    };
    let sizes = plan_sizes(a.cache.as_deref(), a.sweep, &comp).map_err(err)?;
    let mut results = header(&engine_name, a, &w, threads, &comp);
    results.direct_io = direct_io;
    if !(a.device_limit_seconds.is_finite() && a.device_limit_seconds >= 0.0) {
        return Err(Error::msg(
            "--device-limit-seconds must be a number of seconds, 0 or more",
        ));
    }
    if a.device_limit_seconds > 0.0 {
        let seconds = std::time::Duration::from_secs_f64(a.device_limit_seconds);
        let depth = a.device_limit_depth.unwrap_or(threads);
        match device_limit(&storage, &dir, depth, seconds) {
            Ok(limit) => results.device_limit = Some(limit),
            // Not every file system supports O_DIRECT (tmpfs does not): the
            // bench goes on without the limit and says so.
            Err(e) => eprintln!("device limit not measured: {e}"),
        }
    }
    crate::runner::install_interrupt();
    let live = Arc::new(LiveStats::new(threads));
    let interval = a.sample.interval().map_err(err)?;
    let sampler = Sampler::start(
        interval,
        &storage.sample_path(&dir),
        Some(&a.out),
        Some(live.clone()),
        None,
    )
    .map_err(|e| Error::msg(format!("starting the sampler: {e}")))?;
    for (i, &cache) in sizes.iter().enumerate() {
        let label = format!(
            "run {}/{}: cache {}",
            i + 1,
            sizes.len(),
            size_text(cache, &comp)
        );
        let trace = if i == 0 {
            a.trace.trace.as_deref()
        } else {
            None
        };
        let traced = Traced {
            file: trace,
            sample_rate: a.trace.trace_sample,
        };
        let mut run = run_one(
            &*opener, &dir, a, &w, threads, cache, &comp, &label, &live, traced,
        )?;
        run.device_limit_share = results
            .device_limit
            .as_ref()
            .and_then(|l| l.share(run.ops_per_sec));
        results.runs.push(run);
        // Written after every run, so an interrupted bench keeps what finished.
        crate::report::write_all(&results, &a.out).map_err(Error::msg)?;
        if crate::runner::interrupted() {
            break;
        }
    }
    let title = format!("bench kvdb: {engine_name}, {} keys", a.workload.keys);
    let mut series = sampler.finish();
    series.notes.extend(storage.sampler_notes());
    crate::sampler::write_files(&series, &a.out, &title).map_err(Error::msg)?;
    let on = storage.zoned().map(|_| storage.label());
    storage.finish()?;

    if a.json {
        let s = serde_json::to_string_pretty(&results)
            .map_err(|e| Error::msg(format!("encoding JSON: {e}")))?;
        writeln!(out, "{s}").map_err(Error::output)
    } else {
        write!(out, "{}", crate::report::terminal_table(&results)).map_err(Error::output)?;
        if crate::runner::interrupted() {
            writeln!(
                out,
                "interrupted: the last run was cut short; the runs after it were not run"
            )
            .map_err(Error::output)?;
        }
        if let Some(on) = on {
            writeln!(out, "database {} on {on}", dir.display()).map_err(Error::output)?;
        }
        writeln!(out, "results in {}", a.out.display()).map_err(Error::output)
    }
}

/// Checks the workload flags shared by `bench kvdb` and `bench compare`.
pub fn check_workload(w: &WorkloadArgs) -> Result<(KeyScheme, Distribution)> {
    let (keys, missing, warmup) = (w.keys, w.missing, w.warmup);
    let (scheme, distribution) = (&w.scheme, &w.distribution);
    if keys == 0 {
        return Err(Error::msg("--keys must be at least 1"));
    }
    if !(0.0..1.0).contains(&missing) {
        return Err(Error::msg("--missing must be a fraction in [0, 1)"));
    }
    if !(0.0..=1.0).contains(&warmup) {
        return Err(Error::msg("--warmup must be a fraction in [0, 1]"));
    }
    let parsed_scheme: KeyScheme = scheme
        .parse()
        .map_err(|e| Error::msg(format!("--scheme {scheme}: {e}; use hash, hash8 or path")))?;
    let parsed_distribution: Distribution = distribution.parse().map_err(|e| {
        Error::msg(format!(
            "--distribution {distribution}: {e}; use uniform, zipf[:theta] or hotset[:fraction[:probability]]"
        ))
    })?;
    Ok((parsed_scheme, parsed_distribution))
}

pub(super) fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

fn default_db_dir(a: &BenchKvdbArgs) -> PathBuf {
    PathBuf::from("shale-data").join(format!(
        "kvdb-{}-{}-v{}",
        a.workload.keys, a.workload.scheme, a.workload.value_size
    ))
}

/// Reuses the database in `dir` if it holds exactly this dataset, loads it if
/// there is none, and refuses anything else.
fn prepare(
    opener: &dyn EngineOpener,
    storage: &Storage,
    dir: &Path,
    w: &Workload,
    threads: usize,
) -> Result {
    let (keys, dataset) = (w.keys, &w.dataset);
    if storage.has_db(dir)? {
        // Read-only: a refused database is left exactly as it was.
        let e = opener.open_read_only(dir, SETUP_CACHE).map_err(err)?;
        let c = e.composition().map_err(err)?;
        let wanted_values = keys * dataset.value_size as u64;
        // Tables count internal keys: the user key and an 8-byte trailer. Hash
        // keys are 32 bytes; path keys 33 to 40.
        let hash_key_bytes = keys * (shale_workload::KEY_LEN as u64 + 8);
        let keys_match = match w.keygen.scheme {
            KeyScheme::Hash | KeyScheme::Hash8 => c.raw_key_bytes == hash_key_bytes,
            KeyScheme::Path => c.raw_key_bytes > hash_key_bytes,
        };
        let same = c.entries == keys
            && keys_match
            && c.raw_value_bytes == wanted_values
            && e.get(&w.keygen.key_vec(0)).map_err(err)? == Some(dataset.value(0))
            && e.get(&w.keygen.key_vec(keys - 1)).map_err(err)? == Some(dataset.value(keys - 1));
        e.close().map_err(err)?;
        if !same {
            return Err(Error::msg(format!(
                "{} holds another dataset ({} entries, {} value bytes) than --keys {} of the {} scheme with {}-byte values; pass another --db or remove it",
                dir.display(),
                c.entries,
                c.raw_value_bytes,
                keys,
                w.keygen.scheme,
                dataset.value_size
            )));
        }
        return Ok(());
    }
    load(opener, dir, w, threads)
}

/// Loads keys `0..keys` with `threads` writers, then lets compactions settle.
fn load(opener: &dyn EngineOpener, dir: &Path, w: &Workload, threads: usize) -> Result {
    let keys = w.keys;
    let e = opener.open(dir, SETUP_CACHE, true).map_err(err)?;
    let pb = runner::bar(keys, format!("loading {keys} keys into {}", dir.display()));
    let loaded = crate::load::load(
        0..keys,
        LOAD_BATCH,
        threads,
        &pb,
        &|| false,
        |i, k, v| {
            w.keygen.key(i, k);
            v.resize(w.dataset.value_size, 0);
            w.dataset.fill_value(i, v);
        },
        |pairs| e.load_batch(pairs),
    );
    pb.finish_and_clear();
    loaded.map_err(Error::msg)?;
    e.settle().map_err(err)?;
    e.close().map_err(err)
}

/// Parses one cache size: bytes with an optional unit, a percentage of the
/// database, or `ip1`/`ip2`.
pub fn parse_size(spec: &str, comp: &Composition) -> Result<u64, String> {
    let s = spec.trim();
    let bad = || {
        format!(
            "invalid cache size {spec:?}: use bytes (8MiB, 512KiB, 1GB, 4096), a percentage of the database (0.2%), ip1 or ip2"
        )
    };
    match s.to_ascii_lowercase().as_str() {
        "ip1" => return Ok(comp.ip1_bytes()),
        "ip2" => return Ok(comp.ip2_bytes()),
        _ => {}
    }
    if let Some(p) = s.strip_suffix('%') {
        let pct: f64 = p.trim().parse().map_err(|_| bad())?;
        if !(pct.is_finite() && pct >= 0.0) {
            return Err(bad());
        }
        return Ok((comp.db_bytes as f64 * pct / 100.0).round() as u64);
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().map_err(|_| bad())?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => MIB,
        "g" | "gib" => MIB * 1024.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        _ => return Err(bad()),
    };
    if !(n.is_finite() && n >= 0.0) {
        return Err(bad());
    }
    Ok((n * mult).round() as u64)
}

/// The cache sizes to run, ascending and without near-duplicates.
pub fn plan_sizes(list: Option<&str>, sweep: bool, comp: &Composition) -> Result<Vec<u64>, String> {
    let pct = |p: f64| (comp.db_bytes as f64 * p / 100.0).round() as u64;
    let (ip1, ip2) = (comp.ip1_bytes(), comp.ip2_bytes());
    let mut sizes: Vec<u64> = match (list, sweep) {
        (Some(list), _) => {
            let mut v = Vec::new();
            for item in list.split(',').filter(|s| !s.trim().is_empty()) {
                match item.split_once("..") {
                    Some((lo, hi)) => v.extend(size_range(lo, hi, comp)?),
                    None => v.push(parse_size(item, comp)?),
                }
            }
            v
        }
        (None, true) => {
            let mut v: Vec<u64> = (0..10)
                .map(|i| pct(0.05 * (3.0f64 / 0.05).powf(i as f64 / 9.0)))
                .collect();
            v.extend([ip1, ip2]);
            // Three points spaced geometrically between the inflection points.
            if ip1 > 0 && ip2 > ip1 {
                let r = (ip2 as f64 / ip1 as f64).powf(0.25);
                v.extend((1..4).map(|k| (ip1 as f64 * r.powi(k)).round() as u64));
            }
            v
        }
        (None, false) => vec![
            below_ip1(pct(0.05), ip1),
            ip1,
            ip1 + (ip2.saturating_sub(ip1)) / 2,
            ip2,
            pct(3.0),
        ],
    };
    if sizes.is_empty() {
        return Err("no cache size given".into());
    }
    sizes.sort_unstable();
    // Sizes within 0.5% of each other measure the same thing.
    sizes.dedup_by(|b, a| (*b as f64) <= *a as f64 * 1.005);
    Ok(sizes)
}

/// Points of a cache-size range `LO..HI[/N]`: N sizes (10 by default, 2 to
/// 100) spaced geometrically from LO to HI, both included.
fn size_range(lo: &str, hi: &str, comp: &Composition) -> Result<Vec<u64>, String> {
    let (hi, points) = match hi.split_once('/') {
        Some((hi, n)) => {
            let n: usize = n
                .trim()
                .parse()
                .ok()
                .filter(|n| (2..=100).contains(n))
                .ok_or_else(|| {
                    format!("cache range {lo}..{hi}/{n}: the points after / must be 2 to 100")
                })?;
            (hi, n)
        }
        None => (hi, 10),
    };
    let (a, b) = (parse_size(lo, comp)?, parse_size(hi, comp)?);
    if a == 0 || b <= a {
        return Err(format!(
            "cache range {}..{}: the range must go from a size above 0 up to a larger one ({a} and {b} bytes)",
            lo.trim(),
            hi.trim()
        ));
    }
    let ratio = b as f64 / a as f64;
    Ok((0..points)
        .map(|i| (a as f64 * ratio.powf(i as f64 / (points - 1) as f64)).round() as u64)
        .collect())
}

/// The lowest default cache size: `low` (0.05% of the database) if it lies
/// below IP1, else half of IP1, so that the default run always has a phase-1
/// point (a small database can have an IP1 of a few hundred bytes, when every
/// table is in the last level and IP1 is only top-level indexes).
fn below_ip1(low: u64, ip1: u64) -> u64 {
    if low < ip1 {
        low
    } else {
        ip1 / 2
    }
}

/// Bytes the kernel read from storage for this process (`/proc/self/io`).
fn device_read_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/io").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("read_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

fn header(
    engine: &str,
    a: &BenchKvdbArgs,
    w: &Workload,
    threads: usize,
    c: &Composition,
) -> BenchResults {
    let pct = |b: u64| 100.0 * b as f64 / c.db_bytes.max(1) as f64;
    BenchResults {
        engine: engine.to_string(),
        keys: a.workload.keys,
        value_size: a.workload.value_size,
        scheme: w.keygen.scheme.to_string(),
        distribution: w.distribution.to_string(),
        missing: a.workload.missing,
        threads,
        batch: a.batch,
        stream: a.stream && a.batch > 1,
        reads: a.workload.reads,
        warmup: a.workload.warmup,
        direct_io: a.workload.direct_io,
        db_bytes: c.db_bytes,
        filter_bytes_except_last_level: c.filter_bytes_except_last_level,
        filter_bytes: c.filter_bytes,
        top_level_index_bytes: c.top_level_index_bytes,
        index_bytes: c.index_bytes,
        data_bytes: c.data_bytes,
        ip1_bytes: c.ip1_bytes(),
        ip2_bytes: c.ip2_bytes(),
        ip1_percent: pct(c.ip1_bytes()),
        ip2_percent: pct(c.ip2_bytes()),
        device_limit: None,
        runs: Vec::new(),
    }
}

/// Bytes per read of the device-limit probe.
const PAGE: u64 = 4096;

/// The device's random-read rate over the table files of `dir`: `threads`
/// threads read one page each at random page offsets (files chosen in
/// proportion to their pages) with `O_DIRECT` for `duration`, through the
/// same file system shale reads with (on a zone file system, its reads go
/// to the zoned device; an emulated device read through the page cache is
/// not measured).
fn device_limit(
    storage: &Storage,
    dir: &Path,
    threads: usize,
    duration: std::time::Duration,
) -> Result<DeviceLimit, String> {
    use shale::env::{FileSystem, PosixFs, PosixOptions, RandomAccessFile};
    let fs: std::sync::Arc<dyn FileSystem> = match storage.zoned() {
        Some(z) if !z.device.direct_io => {
            return Err(format!(
                "{} reads through the page cache (its host file system refused O_DIRECT)",
                z.device.label()
            ))
        }
        Some(_) => storage.fs(),
        None => std::sync::Arc::new(PosixFs::new(PosixOptions {
            direct_io: true,
            ..PosixOptions::default()
        })),
    };
    let mut files: Vec<(std::sync::Arc<dyn RandomAccessFile>, u64)> = Vec::new();
    let names = fs
        .list(dir)
        .map_err(|e| format!("listing {}: {e}", dir.display()))?;
    for name in names.iter().filter(|n| n.ends_with(".sst")) {
        let path = dir.join(name);
        let file = fs
            .open_random(&path)
            .map_err(|e| format!("opening {}: {e}", path.display()))?;
        let pages = file.size() / PAGE;
        if pages > 0 {
            files.push((file, pages));
        }
    }
    // Cumulative page counts, to choose a page uniformly over all files.
    let mut ends = Vec::with_capacity(files.len());
    let mut total = 0u64;
    for (_, pages) in &files {
        total += pages;
        ends.push(total);
    }
    if total == 0 {
        return Err(format!("no table of {} holds a whole page", dir.display()));
    }
    let threads = threads.max(1);
    let plan = Plan {
        threads,
        units: Units::Until(Instant::now() + duration),
        sink: Sink::Own,
        progress: None,
    };
    let done = plan
        .run(
            |w| {
                let rng = shale_workload::Rng::new(0x0de7_11e1 + w.thread as u64);
                Ok((rng, vec![0u8; PAGE as usize], 0u64))
            },
            |(rng, buf, n), _| {
                let page = rng.below(total);
                let i = ends.partition_point(|&end| end <= page);
                let first = if i == 0 { 0 } else { ends[i - 1] };
                let (file, _) = &files[i];
                file.read_exact_at((page - first) * PAGE, buf)
                    .map_err(|e| format!("reading a page: {e}"))?;
                *n += 1;
                Ok(Step::Did(1))
            },
        )
        .map_err(|f: Failure<String>| f.error)?;
    let seconds = done.seconds;
    let reads: u64 = done.states.iter().map(|(_, _, n)| n).sum();
    Ok(DeviceLimit {
        reads_per_sec: reads as f64 / seconds.max(1e-9),
        threads,
        page_bytes: PAGE,
        reads,
        seconds,
    })
}

/// Where a run's block-access trace goes, if it records one.
#[derive(Clone, Copy, Default)]
pub(super) struct Traced<'a> {
    pub(super) file: Option<&'a Path>,
    pub(super) sample_rate: f64,
}

/// Measures one cache size.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_one(
    opener: &dyn EngineOpener,
    dir: &Path,
    a: &BenchKvdbArgs,
    w: &Workload,
    threads: usize,
    cache: u64,
    comp: &Composition,
    label: &str,
    live: &LiveStats,
    traced: Traced,
) -> Result<Run> {
    // The measured runs only read: nothing in the database is written.
    let e = opener.open_read_only(dir, cache).map_err(err)?;
    if let Some(file) = traced.file {
        e.start_block_trace(file, traced.sample_rate).map_err(err)?;
    }
    let warm = (a.workload.warmup * a.workload.keys as f64).round() as u64;
    let pb = runner::bar(warm + a.workload.reads, label.to_string());
    let chooser = |seed| {
        KeyChooser::new(w.distribution, w.keys, w.missing, seed)
            .map_err(|e| Error::msg(format!("read workload: {e}")))
    };
    let (warm_keys, measured_keys) = (chooser(WARMUP_SEED)?, chooser(MEASURE_SEED)?);
    let phases = Phases {
        warmup: Keys::Drawn(&warm_keys, warm),
        measured: Keys::Drawn(&measured_keys, a.workload.reads),
    };
    let reads = Reads {
        e: &*e,
        keygen: w.keygen,
        dataset: &w.dataset,
        keys: w.keys,
    };
    let plan = Plan {
        threads,
        units: phases.measured.units(),
        sink: Sink::Live(live),
        progress: Some(&pb),
    };
    // The warm-up is not measured: the counters are taken after it.
    let between = || {
        e.mark_block_trace("measure");
        (e.counters(), live.total("get"), device_read_bytes())
    };
    let ran = match (a.batch.max(1), a.stream) {
        (1, _) => gets(reads, &plan, phases, between).map(|(b, d)| (b, d.seconds)),
        (batch, false) => multi_gets(reads, &plan, phases, batch, between),
        (in_flight, true) => streamed_gets(reads, &plan, phases, in_flight, between),
    };
    let ((before, latency_before, io_before), seconds) = ran.map_err(|f| err(f.error))?;
    let io_after = device_read_bytes();
    let d = e.counters().since(&before);
    pb.finish_and_clear();
    if let Some(file) = traced.file {
        let (records, bytes) = e.end_block_trace().map_err(err)?;
        eprintln!(
            "block trace of the run at cache {}: {} records, {} in {}",
            size_text(cache, comp),
            records,
            crate::fmt::human_bytes(bytes),
            file.display()
        );
    }
    e.close().map_err(err)?;
    let gets = d.gets.max(1) as f64;
    let latency = live.total("get").since(&latency_before);
    let q = |p: f64| latency.quantile_micros(p);
    Ok(Run {
        cache_bytes: cache,
        cache_percent: 100.0 * cache as f64 / comp.db_bytes.max(1) as f64,
        phase: phase(cache, comp.ip1_bytes(), comp.ip2_bytes()),
        gets: d.gets,
        found: d.found,
        io_per_get: d.cache_misses() as f64 / gets,
        physical_reads_per_get: d.physical_reads() as f64 / gets,
        device_reads_per_get: match (io_before, io_after) {
            (Some(b), Some(a)) => Some(a.saturating_sub(b) as f64 / 4096.0 / gets),
            _ => None,
        },
        hit_rate: HitRates {
            filter: d.filter.hit_rate(),
            top_index: d.top_index.hit_rate(),
            index: d.index.hit_rate(),
            data: d.data.hit_rate(),
            overall: d.hit_rate(),
        },
        ops_per_sec: d.gets as f64 / seconds.max(1e-9),
        p50_us: q(0.5),
        p99_us: q(0.99),
        p999_us: q(0.999),
        device_limit_share: None,
    })
}

/// What verified Gets read: an engine and the dataset it holds (indices
/// from `keys` on were never loaded).
#[derive(Clone, Copy)]
pub(crate) struct Reads<'a> {
    pub(crate) e: &'a dyn KvEngine,
    pub(crate) keygen: KeyGen,
    pub(crate) dataset: &'a Dataset,
    pub(crate) keys: u64,
}

/// The dataset indices one phase of Gets reads.
#[derive(Clone, Copy)]
pub(crate) enum Keys<'a> {
    /// This many indices drawn by each thread's own chooser
    /// ([`KeyChooser::for_thread`] of the thread's index), the Gets split
    /// between the threads as [`runner::share`] says.
    Drawn(&'a KeyChooser, u64),
    /// These indices, each thread reading its [`runner::share`] in order.
    Listed(&'a [u64]),
}

impl Keys<'_> {
    /// The phase's Gets, split between the threads.
    pub(crate) fn units(&self) -> Units {
        match self {
            Keys::Drawn(_, n) => Units::Split(*n),
            Keys::Listed(list) => Units::Split(list.len() as u64),
        }
    }
}

/// The keys of a warm-up and of the measured phase after it.
#[derive(Clone, Copy)]
pub(crate) struct Phases<'a> {
    pub(crate) warmup: Keys<'a>,
    pub(crate) measured: Keys<'a>,
}

/// A reader thread: where its indices come from, and its buffers.
pub(crate) struct Reader<'a> {
    source: Source<'a>,
    key: Vec<u8>,
    scratch: Vec<u8>,
}

enum Source<'a> {
    Drawn(KeyChooser),
    Listed(&'a [u64]),
}

impl<'a> Reader<'a> {
    /// The reader of thread `w.thread` in phase `w.phase`.
    fn new(phases: Phases<'a>, w: &Worker) -> Reader<'a> {
        let keys = match w.phase {
            Phase::Warmup => phases.warmup,
            Phase::Measured => phases.measured,
        };
        Reader {
            source: match keys {
                Keys::Drawn(chooser, _) => Source::Drawn(chooser.for_thread(w.thread as u64)),
                Keys::Listed(list) => Source::Listed(list),
            },
            key: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// The index of the Get at position `pos` of the phase.
    fn index(&mut self, pos: u64) -> Result<u64, String> {
        match &mut self.source {
            // Missing reads draw indices from `keys` on.
            Source::Drawn(chooser) => Ok(chooser.next().0),
            Source::Listed(list) => usize::try_from(pos)
                .ok()
                .and_then(|p| list.get(p).copied())
                .ok_or_else(|| "thread slice out of range".to_string()),
        }
    }
}

/// Single Gets, each checked against the dataset and its latency recorded
/// under `get`: the Get loop of `bench kvdb` (one key per call) and of
/// shale's harness serving `read`. The warm-up's keys, then `between()`,
/// then the measured keys, on `plan.threads` threads (the plan's units are
/// the phases' keys).
pub(crate) fn gets<'a, B>(
    r: Reads<'a>,
    plan: &Plan<'a>,
    phases: Phases<'a>,
    between: impl FnOnce() -> B,
) -> Result<(B, Done<Reader<'a>>), Failure<String>> {
    let plan = Plan {
        units: phases.measured.units(),
        ..*plan
    };
    plan.warm_then_measure(
        phases.warmup.units(),
        |w| Ok(Reader::new(phases, w)),
        |reader, w| {
            let i = reader.index(w.pos)?;
            r.keygen.key(i, &mut reader.key);
            let t0 = Instant::now();
            let got = r.e.get(&reader.key)?;
            w.record("get", runner::elapsed_nanos(t0), 1);
            r.dataset
                .check_get(i, r.keys, got.as_deref(), &mut reader.scratch)?;
            Ok(Step::Did(1))
        },
        between,
    )
}

/// Gets as `multi_get`s of `batch` keys (a thread's last one shorter), each
/// checked against the dataset; each key is recorded with its call's
/// latency. Returns `between()` and the measured phase's seconds.
fn multi_gets<'a, B>(
    r: Reads<'a>,
    plan: &Plan<'a>,
    phases: Phases<'a>,
    batch: usize,
    between: impl FnOnce() -> B,
) -> Result<(B, f64), Failure<String>> {
    let plan = Plan {
        units: phases.measured.units(),
        ..*plan
    };
    let (b, done) = plan.warm_then_measure(
        phases.warmup.units(),
        |w| {
            let indices: Vec<u64> = Vec::with_capacity(batch);
            let keys: Vec<Vec<u8>> = Vec::with_capacity(batch);
            Ok((Reader::new(phases, w), indices, keys))
        },
        |(reader, indices, keys), w| {
            let len = w.left().min(batch as u64);
            indices.clear();
            keys.clear();
            for j in 0..len {
                let i = reader.index(w.pos + j)?;
                indices.push(i);
                keys.push(r.keygen.key_vec(i));
            }
            let t0 = Instant::now();
            let got = r.e.multi_get(keys)?;
            w.record("get", runner::elapsed_nanos(t0), len);
            if got.len() != indices.len() {
                return Err(format!(
                    "multi_get of {} keys returned {} values",
                    indices.len(),
                    got.len()
                ));
            }
            for (&i, value) in indices.iter().zip(&got) {
                r.dataset
                    .check_get(i, r.keys, value.as_deref(), &mut reader.scratch)?;
            }
            Ok(Step::Did(len))
        },
        between,
    )?;
    Ok((b, done.seconds))
}

/// Each thread's Gets in one `multi_get_each` with `in_flight` reads in
/// flight, each checked against the dataset and recorded from the drawing
/// of its key to its answer. Returns `between()` and the measured phase's
/// seconds.
fn streamed_gets<'a, B>(
    r: Reads<'a>,
    plan: &Plan<'a>,
    phases: Phases<'a>,
    in_flight: usize,
    between: impl FnOnce() -> B,
) -> Result<(B, f64), Failure<String>> {
    let plan = Plan {
        units: phases.measured.units(),
        ..*plan
    };
    let (b, done) = plan.warm_then_measure(
        phases.warmup.units(),
        |w| Ok(Reader::new(phases, w)),
        |reader, w| {
            stream(r, reader, w, in_flight)?;
            // The whole share is one unit, its progress moved as it goes.
            Ok(Step::End)
        },
        between,
    )?;
    Ok((b, done.seconds))
}

/// One reader thread's share of Gets in one `multi_get_each` (see
/// [`streamed_gets`]); stops early on Ctrl-C.
fn stream(r: Reads, reader: &mut Reader, w: &mut Worker, in_flight: usize) -> Result<(), String> {
    let share = w.left();
    let start = w.pos;
    // The keys drawn and not yet answered, from the `first`-th on: their
    // dataset index and when they were drawn (`None` once answered).
    let drawn: std::cell::RefCell<std::collections::VecDeque<Option<(u64, Instant)>>> =
        Default::default();
    let mut first = 0usize;
    let mut asked = 0u64;
    let (source, scratch) = (&mut reader.source, &mut reader.scratch);
    let mut failed = None;
    let mut keys = std::iter::from_fn(|| {
        if asked == share {
            return None;
        }
        let i = match source {
            // Missing reads draw indices from `keys` on.
            Source::Drawn(chooser) => chooser.next().0,
            Source::Listed(list) => *list.get(usize::try_from(start + asked).ok()?)?,
        };
        asked += 1;
        drawn.borrow_mut().push_back(Some((i, Instant::now())));
        Some(r.keygen.key_vec(i))
    });
    let mut answered = 0u64;
    r.e.multi_get_each(&mut keys, in_flight, &mut |n, value| {
        let mut d = drawn.borrow_mut();
        let Some((i, at)) = d.get_mut(n.wrapping_sub(first)).and_then(Option::take) else {
            failed = Some(format!("multi_get_each answered key {n} twice or unasked"));
            return ControlFlow::Break(());
        };
        w.record("get", runner::elapsed_nanos(at), 1);
        if let Err(m) = r.dataset.check_get(i, r.keys, value.as_deref(), scratch) {
            failed = Some(m);
            return ControlFlow::Break(());
        }
        while d.front().is_some_and(Option::is_none) {
            d.pop_front();
            first += 1;
        }
        answered += 1;
        w.tick(1);
        if runner::interrupted() {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    })?;
    if let Some(m) = failed {
        return Err(m);
    }
    if answered < share && !runner::interrupted() {
        return Err(format!(
            "multi_get_each answered {answered} of {share} keys"
        ));
    }
    Ok(())
}

fn size_text(bytes: u64, comp: &Composition) -> String {
    format!(
        "{:.2} MiB ({:.3}%)",
        bytes as f64 / MIB,
        100.0 * bytes as f64 / comp.db_bytes.max(1) as f64
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comp() -> Composition {
        Composition {
            db_bytes: 100 << 20,
            filter_bytes_except_last_level: 1 << 20,
            top_level_index_bytes: 1 << 18,
            index_bytes: 3 << 20,
            ..Default::default()
        }
    }

    #[test]
    fn cache_sizes_parse_every_notation() {
        let c = comp();
        assert_eq!(parse_size("8MiB", &c), Ok(8 << 20));
        assert_eq!(parse_size("512KiB", &c), Ok(512 << 10));
        assert_eq!(parse_size("1GB", &c), Ok(1_000_000_000));
        assert_eq!(parse_size("4096", &c), Ok(4096));
        assert_eq!(parse_size(" 2 m ", &c), Ok(2 << 20));
        assert_eq!(parse_size("1%", &c), Ok(1_048_576)); // 1% of 100 MiB
        assert_eq!(parse_size("IP1", &c), Ok(c.ip1_bytes()));
        assert_eq!(parse_size("ip2", &c), Ok(c.ip2_bytes()));
        for bad in ["", "abc", "12XB", "-1MiB", "%", "1e3%x", "nan%"] {
            let e = parse_size(bad, &c).expect_err(bad);
            assert!(e.contains("invalid cache size"), "{e}");
        }
    }

    #[test]
    fn a_range_is_geometric_and_a_bad_one_refused() {
        let c = comp();
        let v = plan_sizes(Some("0.05%..3%"), false, &c).expect("range");
        let sweep = plan_sizes(None, true, &c).expect("sweep");
        assert_eq!(v.len(), 10);
        // The sweep's ten (rounded to bytes from the percentages; the sweep
        // keeps one of two sizes within 0.5%).
        assert!(
            v.iter().all(|&s| sweep
                .iter()
                .any(|&w| s.abs_diff(w) as f64 <= 0.005 * s as f64)),
            "{v:?} against {sweep:?}"
        );
        let v = plan_sizes(Some("1MiB..4MiB/3, ip1"), false, &c).expect("range");
        assert!(v.contains(&(1 << 20)) && v.contains(&(2 << 20)) && v.contains(&(4 << 20)));
        assert!(v.contains(&c.ip1_bytes()));
        for bad in [
            "3%..1%",
            "0..1MiB",
            "1MiB..2MiB/1",
            "1MiB..2MiB/x",
            "1MiB..",
            ",",
        ] {
            assert!(plan_sizes(Some(bad), false, &c).is_err(), "{bad}");
        }
    }

    #[test]
    fn default_sizes_bracket_the_inflection_points() {
        let c = comp();
        let v = plan_sizes(None, false, &c).expect("plan");
        assert_eq!(v.len(), 5);
        assert!(v.windows(2).all(|w| w[0] < w[1]));
        assert!(v.contains(&c.ip1_bytes()) && v.contains(&c.ip2_bytes()));
        let sweep = plan_sizes(None, true, &c).expect("sweep");
        assert!(sweep.len() >= 12, "{sweep:?}");
        let between = sweep
            .iter()
            .filter(|&&s| s > c.ip1_bytes() && s < c.ip2_bytes())
            .count();
        assert!(between >= 3, "{sweep:?}");
        assert!(sweep
            .first()
            .is_some_and(|&s| s <= (c.db_bytes as f64 * 0.0005) as u64 + 1));
        // 0.05% of the database lies below IP1 here, so it is the first size;
        // when it does not, half of IP1 takes its place.
        assert_eq!(v[0], (c.db_bytes as f64 * 0.0005).round() as u64);
        let small_ip1 = Composition {
            filter_bytes_except_last_level: 0,
            top_level_index_bytes: 1000,
            index_bytes: 500_000,
            ..c
        };
        let v = plan_sizes(None, false, &small_ip1).expect("plan");
        assert_eq!(v.len(), 5, "{v:?}");
        assert_eq!(v[0], 500);
        assert_eq!(v[1], small_ip1.ip1_bytes());
        assert_eq!(phase(v[0], small_ip1.ip1_bytes(), small_ip1.ip2_bytes()), 1);
        let list = plan_sizes(Some("ip2,8MiB,ip1,8MiB"), false, &c).expect("list");
        assert_eq!(list, vec![c.ip1_bytes(), c.ip2_bytes(), 8 << 20]);
        assert!(plan_sizes(Some("8XiB"), false, &c).is_err());
    }
}
