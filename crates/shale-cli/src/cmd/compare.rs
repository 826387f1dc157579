//! `bench compare`: the I/O-per-Get study on several engines in one run.
//!
//! Each engine is driven by its harness (`docs/harness-protocol.md`) in a
//! process of its own: `shale harness` for shale, the programs that
//! `scripts/peers.sh` builds for Pebble, RocksDB and LevelDB. Every engine
//! loads the same dataset once (kept under `--data-dir`, with a marker file
//! naming engine, configuration and dataset), then reads the same key indices
//! (written once to `--out`) at each cache size. An engine that is not built,
//! fails, hangs past `--timeout` or replies nonsense is reported with its
//! standard error; the others' results are kept.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use shale_workload::engine::Composition;
use shale_workload::protocol::{
    thread_slice, write_indices, DatasetSpec, InfoReply, InspectReply, LoadReply, LoadRequest, Op,
    OpenRequest, ReadReply, ReadRequest, Request, PROTOCOL_VERSION,
};
use shale_workload::results::{BudgetRun, CompareResults, EngineResults, EngineRun, Run};
use shale_workload::{Distribution, KeyChooser, MEASURE_SEED, WARMUP_SEED};

use super::bench::{check_workload, parse_size};
use crate::args::BenchCompareArgs;
use crate::error::{CliError, CliResult};
use crate::sampler::Sampler;

/// Keys per load batch.
const LOAD_BATCH: u64 = 1000;
/// The file in a dataset directory that says what it holds.
pub const MARKER: &str = "shale-dataset.json";
/// Engines with a harness, in the order of the default list.
pub const ENGINES: [&str; 4] = ["shale", "pebble", "rocksdb", "leveldb"];

/// What a dataset directory holds, written once its load succeeded.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Marker {
    engine: String,
    config: String,
    dataset: DatasetSpec,
}

/// `shale bench compare`.
pub fn run(a: &BenchCompareArgs, out: &mut dyn Write) -> CliResult {
    let (wanted, dataset, distribution) = check_args(a)?;
    let threads = a.workload.threads.unwrap_or_else(cores).max(1);
    std::fs::create_dir_all(&a.out).map_err(|e| {
        CliError::msg(format!(
            "cannot create --out {}: {e}; pass a writable directory",
            a.out.display()
        ))
    })?;
    let out_dir = absolute(&a.out)?;
    let data_dir = absolute(&a.data_dir)?;
    let warmup_n = (a.workload.warmup * a.workload.keys as f64).round() as u64;
    let warmup_file = out_dir.join("warmup.bin");
    let reads_file = out_dir.join("reads.bin");
    write_reads(
        &warmup_file,
        distribution,
        a,
        threads,
        warmup_n,
        WARMUP_SEED,
    )?;
    write_reads(
        &reads_file,
        distribution,
        a,
        threads,
        a.workload.reads,
        MEASURE_SEED,
    )?;

    let cache_list = match (&a.cache, &a.memory) {
        (Some(c), _) => c.clone(),
        (None, Some(_)) => String::new(),
        (None, None) => DEFAULT_CACHE.to_string(),
    };
    let budgets = match &a.memory {
        Some(list) => parse_budgets(list)?,
        None => Vec::new(),
    };
    let slack = parse_size(&a.memory_slack, &Composition::default())
        .map_err(|e| CliError::msg(format!("--memory-slack: {e}")))?;
    let shares = parse_shares(&a.memory_caches)?;
    let mut results = CompareResults {
        keys: a.workload.keys,
        value_size: a.workload.value_size,
        scheme: dataset.scheme.clone(),
        distribution: distribution.to_string(),
        missing: a.workload.missing,
        threads,
        reads: a.workload.reads,
        warmup_reads: warmup_n,
        direct_io: a.workload.direct_io,
        memory_budgets: budgets.clone(),
        memory_slack: slack,
        memory_cache_shares: shares,
        cache_specs: cache_list
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
        engines: Vec::new(),
    };
    let timeout = Duration::from_secs(a.timeout.max(1));
    let read_timeout = Duration::from_secs(a.read_timeout.max(1));
    let mut harnesses = Vec::new();
    for w in &wanted {
        let (engine, config) = (&w.engine, &w.config);
        let mut er = EngineResults {
            engine: engine.clone(),
            config: config.clone().unwrap_or_default(),
            read_mode: w.direct_io.map(read_mode),
            ..Default::default()
        };
        match prepare(
            engine,
            config.as_deref(),
            &dataset,
            &data_dir,
            threads,
            timeout,
        ) {
            Ok((h, shape_reply, load)) => {
                er.config = h.config.clone();
                er.label = match w.direct_io {
                    Some(d) => format!("{} {}", shape_reply.engine, read_mode(d)),
                    None => shape_reply.engine.clone(),
                };
                er.status = "ok".into();
                er.load = load;
                er.shape = Some(shape_reply.shape);
                harnesses.push(Some(h));
            }
            Err(reason) => {
                eprintln!("{engine}: {reason}");
                er.status = reason;
                harnesses.push(None);
            }
        }
        results.engines.push(er);
    }
    write_report(&results, &out_dir)?;

    // The read phases' time series: the engines run in their harnesses'
    // processes, so it holds the machine's CPU and device only.
    let interval = a.sample.interval().map_err(CliError::msg)?;
    let sampler = Sampler::start(interval, &data_dir, Some(&out_dir), None, None)
        .map_err(|e| CliError::msg(format!("starting the sampler: {e}")))?;
    for spec in results.cache_specs.clone() {
        for (er, h) in results.engines.iter_mut().zip(&harnesses) {
            let (Some(h), Some(shape)) = (h, &er.shape) else {
                continue;
            };
            let comp = shape.composition;
            let cache_bytes = parse_size(&spec, &comp).map_err(CliError::msg)?;
            eprintln!(
                "{}: {} Gets at cache {spec} ({} bytes)",
                er.label, a.workload.reads, cache_bytes
            );
            let request = Op::Read(ReadRequest {
                target: h.target(&dataset),
                cache_bytes,
                threads,
                warmup_file: warmup_file.clone(),
                reads_file: reads_file.clone(),
                direct_io: er.direct_io(a.workload.direct_io),
            });
            match h.call::<ReadReply>(request, read_timeout) {
                Ok(reply) => er.runs.push(EngineRun {
                    spec: spec.clone(),
                    run: Run::from_reply(&reply, &comp),
                    reply,
                }),
                Err(reason) => {
                    eprintln!("{}: {reason}", er.engine);
                    er.status = format!("read at cache {spec} failed: {reason}");
                }
            }
        }
        // Written after every cache size, so an interrupted run keeps what
        // finished.
        write_report(&results, &out_dir)?;
    }

    if !budgets.is_empty() {
        let files = ReadFiles {
            warmup: &warmup_file,
            reads: &reads_file,
        };
        run_budgets(
            &mut results,
            &harnesses,
            &dataset,
            &files,
            threads,
            read_timeout,
            &out_dir,
        )?;
    }

    let title = format!("bench compare: read phases, {} keys", a.workload.keys);
    crate::sampler::write_files(&sampler.finish(), &out_dir, &title).map_err(CliError::msg)?;

    if a.json {
        let s = serde_json::to_string_pretty(&results)
            .map_err(|e| CliError::msg(format!("encoding JSON: {e}")))?;
        writeln!(out, "{s}").map_err(CliError::output)
    } else {
        write!(out, "{}", crate::report::compare::terminal_tables(&results))
            .map_err(CliError::output)?;
        writeln!(out, "results in {}", a.out.display()).map_err(CliError::output)
    }
}

fn write_report(results: &CompareResults, out_dir: &Path) -> CliResult {
    crate::report::compare::write_all(results, out_dir)
        .map(|_| ())
        .map_err(CliError::msg)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

fn absolute(p: &Path) -> CliResult<PathBuf> {
    std::path::absolute(p).map_err(|e| CliError::msg(format!("{}: {e}", p.display())))
}

/// The default `--cache` (without `--memory`): the study's points.
pub const DEFAULT_CACHE: &str = "0.07%,0.1%,0.15%,0.3%,0.6%,1%";

/// One item of `--engines`: `engine[:config][@direct|@buffered]`.
struct WantedEngine {
    engine: String,
    config: Option<String>,
    /// A read mode of its own instead of `--direct-io`.
    direct_io: Option<bool>,
}

type Wanted = Vec<WantedEngine>;

fn read_mode(direct_io: bool) -> String {
    if direct_io { "O_DIRECT" } else { "buffered" }.to_string()
}

fn parse_budgets(list: &str) -> CliResult<Vec<u64>> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            if s.ends_with('%') || s.to_ascii_lowercase().starts_with("ip") {
                return Err(CliError::msg(format!(
                    "--memory {s:?}: a budget is an amount of memory (48MiB, 1GiB)"
                )));
            }
            parse_size(s, &Composition::default())
                .map_err(|e| CliError::msg(format!("--memory: {e}")))
        })
        .collect()
}

/// `--memory-caches`: shares in (0, 1].
fn parse_shares(list: &str) -> CliResult<Vec<f64>> {
    let mut shares = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match item.parse::<f64>() {
            Ok(x) if x > 0.0 && x <= 1.0 => shares.push(x),
            _ => {
                return Err(CliError::msg(format!(
                    "--memory-caches: {item:?} is not a share of free memory in (0, 1] \
                     (for example 1,0.5,0.1)"
                )))
            }
        }
    }
    if shares.is_empty() {
        return Err(CliError::msg("--memory-caches: give at least one share"));
    }
    Ok(shares)
}

fn check_args(a: &BenchCompareArgs) -> CliResult<(Wanted, DatasetSpec, Distribution)> {
    let (scheme, distribution) = check_workload(&a.workload)?;
    let mut wanted = Vec::new();
    for item in a
        .engines
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let (item, direct_io) = match item.split_once('@') {
            Some((e, "direct")) => (e, Some(true)),
            Some((e, "buffered")) => (e, Some(false)),
            Some((_, m)) => {
                return Err(CliError::msg(format!(
                    "--engines: unknown read mode @{m}; use @direct or @buffered"
                )))
            }
            None => (item, None),
        };
        let (engine, config) = match item.split_once(':') {
            Some((e, c)) => (e.trim(), Some(c.trim().to_string())),
            None => (item, None),
        };
        let engine = engine.to_ascii_lowercase();
        if !ENGINES.contains(&engine.as_str()) {
            return Err(CliError::msg(format!(
                "--engines: unknown engine {engine:?}; use {}",
                ENGINES.join(", ")
            )));
        }
        wanted.push(WantedEngine {
            engine,
            config,
            direct_io,
        });
    }
    if wanted.is_empty() {
        return Err(CliError::msg("--engines names no engine"));
    }
    let probe = Composition::default();
    let cache = a.cache.as_deref().unwrap_or(DEFAULT_CACHE);
    for spec in cache.split(',').filter(|s| !s.trim().is_empty()) {
        parse_size(spec, &probe).map_err(|e| CliError::msg(format!("--cache: {e}")))?;
    }
    let dataset = DatasetSpec {
        keys: a.workload.keys,
        scheme: scheme.name().to_string(),
        value_size: a.workload.value_size,
        seed: 0,
    };
    Ok((wanted, dataset, distribution))
}

/// Writes the key indices of `n` Gets: thread `t`'s slice holds the draws of
/// `KeyChooser::for_thread(t)`, so every engine reads what `bench kvdb`
/// reads with the same seed.
fn write_reads(
    path: &Path,
    distribution: Distribution,
    a: &BenchCompareArgs,
    threads: usize,
    n: u64,
    seed: u64,
) -> CliResult {
    let chooser = KeyChooser::new(distribution, a.workload.keys, a.workload.missing, seed)
        .map_err(|e| CliError::msg(format!("read workload: {e}")))?;
    let n = usize::try_from(n).map_err(|_| CliError::msg("too many reads"))?;
    let mut indices = Vec::with_capacity(n);
    for t in 0..threads {
        let mut c = chooser.for_thread(t as u64);
        indices.extend((0..thread_slice(n, threads, t).len()).map(|_| c.next().0));
    }
    write_indices(path, &indices)
        .map_err(|e| CliError::msg(format!("cannot write {}: {e}", path.display())))
}

/// The key-index files of every read phase.
struct ReadFiles<'a> {
    warmup: &'a Path,
    reads: &'a Path,
}

/// View (b): every engine under the same total memory. For each budget, an
/// engine's free memory is the budget minus its resident memory with a tiny
/// cache (measured first) minus `--memory-slack`; each share of it in
/// `--memory-caches` is tried as its block cache, in a read phase that runs in
/// a control group limited to the budget after the page cache was dropped (so
/// that whatever its buffered reads keep in the page cache counts too), and
/// the try with the most Gets/s is marked best.
#[allow(clippy::too_many_arguments)]
fn run_budgets(
    results: &mut CompareResults,
    harnesses: &[Option<Harness>],
    dataset: &DatasetSpec,
    files: &ReadFiles<'_>,
    threads: usize,
    timeout: Duration,
    out_dir: &Path,
) -> CliResult {
    let budgets = results.memory_budgets.clone();
    let slack = results.memory_slack;
    for n in 0..results.engines.len() {
        let Some(h) = harnesses.get(n).and_then(Option::as_ref) else {
            continue;
        };
        let er = &mut results.engines[n];
        let Some(comp) = er.shape.as_ref().map(|s| s.composition) else {
            continue;
        };
        let direct_io = er.direct_io(results.direct_io);
        // Baseline: resident memory after the warm-up Gets with a 1 MiB cache.
        let probe = Op::Read(ReadRequest {
            target: h.target(dataset),
            cache_bytes: 1 << 20,
            threads,
            warmup_file: files.warmup.to_path_buf(),
            reads_file: files.warmup.to_path_buf(),
            direct_io,
        });
        let baseline = match h.call::<ReadReply>(probe, timeout) {
            Ok(r) => r.rss_bytes.unwrap_or(0),
            Err(reason) => {
                er.status = format!("baseline memory: {reason}");
                continue;
            }
        };
        er.baseline_rss_bytes = Some(baseline);
        for &budget in &budgets {
            let er = &mut results.engines[n];
            let Some(free) = budget
                .checked_sub(baseline + slack)
                .filter(|&c| c >= 1 << 20)
            else {
                eprintln!(
                    "{}: a budget of {budget} bytes is below its resident memory ({baseline}) \
                     + slack ({slack}) + 1 MiB of cache: skipped",
                    er.label
                );
                continue;
            };
            let first_try = er.budget_runs.len();
            let mut tried = Vec::new();
            for &share in &results.memory_cache_shares {
                let cache_bytes = ((free as f64 * share) as u64).max(1 << 20);
                if tried.contains(&cache_bytes) {
                    continue;
                }
                tried.push(cache_bytes);
                let er = &mut results.engines[n];
                eprintln!(
                    "{}: Gets in {budget} bytes of memory (cache {cache_bytes} bytes)",
                    er.label
                );
                super::cgroup::drop_page_cache().map_err(CliError::msg)?;
                let name = format!("shale-bench-{}-{n}", std::process::id());
                let group =
                    super::cgroup::MemoryGroup::create(&name, budget).map_err(CliError::msg)?;
                let (program, args) = group.wrap(&h.program, &h.args);
                let inside = Harness {
                    engine: h.engine.clone(),
                    config: h.config.clone(),
                    program,
                    args,
                    dir: h.dir.clone(),
                };
                let request = Op::Read(ReadRequest {
                    target: h.target(dataset),
                    cache_bytes,
                    threads,
                    warmup_file: files.warmup.to_path_buf(),
                    reads_file: files.reads.to_path_buf(),
                    direct_io,
                });
                let reply = inside.call::<ReadReply>(request, timeout);
                drop(group);
                match reply {
                    Ok(reply) => er.budget_runs.push(BudgetRun {
                        budget_bytes: budget,
                        cache_share: share,
                        best: false,
                        run: Run::from_reply(&reply, &comp),
                        reply,
                    }),
                    Err(reason) => {
                        eprintln!("{}: {reason}", er.engine);
                        er.status = format!(
                            "read in {budget} bytes of memory with a {cache_bytes}-byte cache \
                         failed: {reason}"
                        );
                    }
                }
                mark_best(&mut results.engines[n].budget_runs[first_try..]);
                write_report(results, out_dir)?;
            }
        }
    }
    Ok(())
}

/// Marks the try with the most Gets/s among `tries` (one engine, one budget).
fn mark_best(tries: &mut [BudgetRun]) {
    let best = tries
        .iter()
        .enumerate()
        .max_by(|(_, a), (_, b)| a.run.ops_per_sec.total_cmp(&b.run.ops_per_sec))
        .map(|(i, _)| i);
    for (i, t) in tries.iter_mut().enumerate() {
        t.best = Some(i) == best;
    }
}

/// A built harness of one engine and configuration.
struct Harness {
    engine: String,
    config: String,
    program: PathBuf,
    args: Vec<String>,
    dir: PathBuf,
}

impl Harness {
    fn target(&self, dataset: &DatasetSpec) -> OpenRequest {
        OpenRequest {
            dir: self.dir.clone(),
            dataset: dataset.clone(),
            config: self.config.clone(),
        }
    }

    /// Runs the harness with one request and parses its reply.
    fn call<T: for<'de> Deserialize<'de>>(&self, op: Op, timeout: Duration) -> Result<T, String> {
        let request = Request {
            protocol: PROTOCOL_VERSION,
            op,
        };
        let input =
            serde_json::to_string(&request).map_err(|e| format!("encoding the request: {e}"))?;
        let (status, stdout, stderr) =
            run_with_timeout(&self.program, &self.args, &input, timeout)?;
        let tail = stderr_tail(&stderr);
        if !status {
            let reason = serde_json::from_str::<shale_workload::protocol::ErrorReply>(&stdout)
                .map(|r| r.error)
                .unwrap_or_else(|_| "exited with an error and no reply".into());
            return Err(format!("{reason}{tail}"));
        }
        serde_json::from_str(&stdout)
            .map_err(|e| format!("malformed reply ({e}): {:?}{tail}", clip(&stdout, 300)))
    }
}

pub(super) fn clip(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The last lines of a harness's standard error, for a failure message.
pub(super) fn stderr_tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(5)..];
    if tail.is_empty() {
        String::new()
    } else {
        format!("; its standard error ends: {}", tail.join(" | "))
    }
}

/// Runs `program args` with `input` on standard input; kills it after
/// `timeout`. Returns (exited with 0, stdout, stderr).
pub(super) fn run_with_timeout(
    program: &Path,
    args: &[String],
    input: &str,
    timeout: Duration,
) -> Result<(bool, String, String), String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input.as_bytes())
            .map_err(|e| format!("writing the request: {e}"))?;
    }
    // Each pipe is read by a thread of its own into a shared buffer, so that
    // a harness that fills one is never blocked, and what a killed harness
    // wrote can be read even if its children still hold the pipe open.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let (tx, done) = std::sync::mpsc::channel::<()>();
        let sink = buf.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            if let Some(mut p) = pipe {
                while let Ok(n) = p.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    if let (Ok(mut b), Some(bytes)) = (sink.lock(), chunk.get(..n)) {
                        b.extend_from_slice(bytes);
                    }
                }
            }
            let _ = tx.send(());
        });
        (buf, done)
    };
    let collect = |(buf, done): (Arc<Mutex<Vec<u8>>>, std::sync::mpsc::Receiver<()>),
                   wait: Duration| {
        let _ = done.recv_timeout(wait);
        let bytes = buf.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                let stderr = collect(err, Duration::from_secs(1));
                return Err(format!(
                    "no reply within {} s: killed{}",
                    timeout.as_secs(),
                    stderr_tail(&stderr)
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("waiting for {}: {e}", program.display())),
        }
    };
    let stdout = collect(out, Duration::from_secs(10));
    let stderr = collect(err, Duration::from_secs(10));
    Ok((status.success(), stdout, stderr))
}

/// Where an engine's harness is: `shale harness` for shale; for a peer,
/// `$SHALE_<ENGINE>_HARNESS`, else `shale-<engine>-harness` in `target/peers/`
/// next to this executable's `target/` directory or under the working
/// directory.
pub(super) fn locate(engine: &str) -> Result<(PathBuf, Vec<String>), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    if engine == "shale" {
        return Ok((exe, vec!["harness".into()]));
    }
    let var = format!("SHALE_{}_HARNESS", engine.to_ascii_uppercase());
    if let Some(p) = std::env::var_os(&var) {
        return Ok((PathBuf::from(p), Vec::new()));
    }
    let name = format!("shale-{engine}-harness");
    let mut candidates = Vec::new();
    // target/release/shale -> target/peers/
    if let Some(target) = exe.parent().and_then(Path::parent) {
        candidates.push(target.join("peers").join(&name));
    }
    candidates.push(PathBuf::from("target").join("peers").join(&name));
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .map(|p| (p, Vec::new()))
        .ok_or_else(|| {
            format!("not built: run `scripts/peers.sh {engine}` (or set {var} to its harness)")
        })
}

fn describe(m: &Marker) -> String {
    format!(
        "{} ({}) with {} {} keys and {}-byte values of seed {}",
        m.engine, m.config, m.dataset.keys, m.dataset.scheme, m.dataset.value_size, m.dataset.seed
    )
}

/// Finds and asks the harness, then loads the dataset or checks the one
/// already loaded. Returns the harness, the database's shape and, if it was
/// loaded now, the load's figures.
fn prepare(
    engine: &str,
    config: Option<&str>,
    dataset: &DatasetSpec,
    data_dir: &Path,
    threads: usize,
    timeout: Duration,
) -> Result<(Harness, InspectReply, Option<LoadReply>), String> {
    let (program, args) = locate(engine)?;
    let mut h = Harness {
        engine: engine.to_string(),
        config: String::new(),
        program,
        args,
        dir: PathBuf::new(),
    };
    let info: InfoReply = h.call(Op::Info, timeout)?;
    if info.engine != engine {
        return Err(format!(
            "{} says it serves {:?}, not {engine}",
            h.program.display(),
            info.engine
        ));
    }
    h.config = match config {
        Some(c) if info.configs.iter().any(|k| k == c) => c.to_string(),
        Some(c) => {
            return Err(format!(
                "unknown configuration {c:?} (known: {})",
                info.configs.join(", ")
            ))
        }
        None => info
            .configs
            .first()
            .cloned()
            .ok_or("the harness names no configuration")?,
    };
    h.dir = data_dir.join(format!(
        "compare-{}-{}-{}-{}-v{}",
        h.engine, h.config, dataset.keys, dataset.scheme, dataset.value_size
    ));
    let marker = Marker {
        engine: h.engine.clone(),
        config: h.config.clone(),
        dataset: dataset.clone(),
    };
    let marker_path = h.dir.join(MARKER);
    let has_files = std::fs::read_dir(&h.dir).is_ok_and(|mut d| d.next().is_some());
    if has_files {
        let text = std::fs::read_to_string(&marker_path).map_err(|_| {
            format!(
                "{} holds files but no {MARKER}: an interrupted load or files of something else; \
                 remove it or pass another --data-dir",
                h.dir.display()
            )
        })?;
        let found: Marker =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", marker_path.display()))?;
        if found != marker {
            return Err(format!(
                "{} holds {}, not {}; remove it or pass another --data-dir",
                h.dir.display(),
                describe(&found),
                describe(&marker)
            ));
        }
        let shape: InspectReply = h.call(Op::Inspect(h.target(dataset)), timeout)?;
        return Ok((h, shape, None));
    }
    std::fs::create_dir_all(&h.dir).map_err(|e| format!("{}: {e}", h.dir.display()))?;
    eprintln!(
        "{engine} ({}): loading {} keys into {}",
        h.config,
        dataset.keys,
        h.dir.display()
    );
    let load: LoadReply = h.call(
        Op::Load(LoadRequest {
            target: h.target(dataset),
            threads,
            batch: LOAD_BATCH,
        }),
        timeout,
    )?;
    let text = serde_json::to_string_pretty(&marker).map_err(|e| e.to_string())?;
    std::fs::write(&marker_path, text).map_err(|e| format!("{}: {e}", marker_path.display()))?;
    let shape = InspectReply {
        engine: load.engine.clone(),
        shape: load.shape.clone(),
    };
    Ok((h, shape, Some(load)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_tail_keeps_the_last_lines() {
        assert_eq!(stderr_tail(""), "");
        let s = "a\nb\n\nc\nd\ne\nf\n";
        assert_eq!(
            stderr_tail(s),
            "; its standard error ends: b | c | d | e | f"
        );
    }

    #[test]
    fn the_fastest_try_of_a_budget_is_the_best() {
        let try_at = |share: f64, ops: f64| BudgetRun {
            budget_bytes: 64 << 20,
            cache_share: share,
            best: true,
            run: Run {
                ops_per_sec: ops,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut tries = vec![try_at(1.0, 900.0), try_at(0.5, 1200.0), try_at(0.1, 300.0)];
        mark_best(&mut tries);
        let best: Vec<bool> = tries.iter().map(|t| t.best).collect();
        assert_eq!(best, [false, true, false]);
    }

    #[test]
    fn cache_shares_must_lie_in_zero_to_one() {
        assert_eq!(parse_shares("1, 0.5,0.1").expect("valid"), [1.0, 0.5, 0.1]);
        for bad in ["0", "1.5", "half", "", "-0.2"] {
            let e = parse_shares(bad).expect_err(bad).to_string();
            assert!(e.contains("--memory-caches"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_harness_that_hangs_is_killed_and_one_that_fails_is_reported() {
        let sh = PathBuf::from("/bin/sh");
        let hang = run_with_timeout(
            &sh,
            &["-c".into(), "echo started >&2; sleep 30".into()],
            "",
            Duration::from_millis(1000),
        );
        assert!(hang.is_err_and(|e| e.contains("killed") && e.contains("started")));
        let (ok, out, err) = run_with_timeout(
            &sh,
            &["-c".into(), "cat; echo oops >&2; exit 1".into()],
            "{\"x\":1}",
            Duration::from_secs(10),
        )
        .expect("runs");
        assert!(!ok);
        assert_eq!(out, "{\"x\":1}");
        assert_eq!(err.trim(), "oops");
    }
}
