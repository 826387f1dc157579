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

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::engine::Composition;
use serde::{Deserialize, Serialize};
use shale_workload::protocol::{
    thread_slice, write_indices, DatasetSpec, InspectReply, LoadReply, LoadRequest, OpenRequest,
    ReadRequest,
};
use shale_workload::results::{BudgetRun, CompareResults, EngineResults, EngineRun, Run};
use shale_workload::{Distribution, KeyChooser, MEASURE_SEED, WARMUP_SEED};

use crate::args::BenchCompareArgs;
use crate::client::{Client, PEERS};
use crate::error::{Error, Result};
use crate::kvdb::{check_workload, parse_size};
use crate::sampler::Sampler;

/// Keys per load batch.
const LOAD_BATCH: u64 = 1000;
/// The smallest block cache an engine is given in a memory budget.
const MIN_CACHE: u64 = 1 << 20;
/// The file in a dataset directory that says what it holds.
pub const MARKER: &str = "shale-dataset.json";
/// Engines with a harness, in the order of the default list.
pub const ENGINES: [&str; 4] = ["shale", PEERS[0], PEERS[1], PEERS[2]];

/// What a dataset directory holds, written once its load succeeded.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Marker {
    engine: String,
    config: String,
    dataset: DatasetSpec,
}

/// `shale bench compare`.
pub fn run(a: &BenchCompareArgs, out: &mut dyn Write) -> Result {
    let (wanted, dataset, distribution) = check_args(a)?;
    let threads = a.workload.threads.unwrap_or_else(cores).max(1);
    std::fs::create_dir_all(&a.out).map_err(|e| {
        Error::msg(format!(
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
        .map_err(|e| Error::msg(format!("--memory-slack: {e}")))?;
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
    let interval = a.sample.interval().map_err(Error::msg)?;
    let sampler = Sampler::start(interval, &data_dir, Some(&out_dir), None, None)
        .map_err(|e| Error::msg(format!("starting the sampler: {e}")))?;
    for spec in results.cache_specs.clone() {
        for (er, h) in results.engines.iter_mut().zip(&harnesses) {
            let (Some(h), Some(shape)) = (h, &er.shape) else {
                continue;
            };
            let comp = shape.composition;
            let cache_bytes = parse_size(&spec, &comp).map_err(Error::msg)?;
            eprintln!(
                "{}: {} Gets at cache {spec} ({} bytes)",
                er.label, a.workload.reads, cache_bytes
            );
            let request = ReadRequest {
                target: h.target(&dataset),
                cache_bytes,
                threads,
                warmup_file: warmup_file.clone(),
                reads_file: reads_file.clone(),
                direct_io: er.direct_io(a.workload.direct_io),
                trace: None,
            };
            match h.client.read(request, read_timeout) {
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
    crate::sampler::write_files(&sampler.finish(), &out_dir, &title).map_err(Error::msg)?;

    if a.json {
        let s = serde_json::to_string_pretty(&results)
            .map_err(|e| Error::msg(format!("encoding JSON: {e}")))?;
        writeln!(out, "{s}").map_err(Error::output)
    } else {
        write!(out, "{}", crate::report::compare::terminal_tables(&results))
            .map_err(Error::output)?;
        writeln!(out, "results in {}", a.out.display()).map_err(Error::output)
    }
}

fn write_report(results: &CompareResults, out_dir: &Path) -> Result {
    crate::report::compare::write_all(results, out_dir)
        .map(|_| ())
        .map_err(Error::msg)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| Error::msg(format!("{}: {e}", p.display())))
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

fn parse_budgets(list: &str) -> Result<Vec<u64>> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            if s.ends_with('%') || s.to_ascii_lowercase().starts_with("ip") {
                return Err(Error::msg(format!(
                    "--memory {s:?}: a budget is an amount of memory (48MiB, 1GiB)"
                )));
            }
            parse_size(s, &Composition::default()).map_err(|e| Error::msg(format!("--memory: {e}")))
        })
        .collect()
}

/// `--memory-caches`: shares in (0, 1].
fn parse_shares(list: &str) -> Result<Vec<f64>> {
    let mut shares = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match item.parse::<f64>() {
            Ok(x) if x > 0.0 && x <= 1.0 => shares.push(x),
            _ => {
                return Err(Error::msg(format!(
                    "--memory-caches: {item:?} is not a share of free memory in (0, 1] \
                     (for example 1,0.5,0.1)"
                )))
            }
        }
    }
    if shares.is_empty() {
        return Err(Error::msg("--memory-caches: give at least one share"));
    }
    Ok(shares)
}

fn check_args(a: &BenchCompareArgs) -> Result<(Wanted, DatasetSpec, Distribution)> {
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
                return Err(Error::msg(format!(
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
            return Err(Error::msg(format!(
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
        return Err(Error::msg("--engines names no engine"));
    }
    let probe = Composition::default();
    let cache = a.cache.as_deref().unwrap_or(DEFAULT_CACHE);
    for spec in cache.split(',').filter(|s| !s.trim().is_empty()) {
        parse_size(spec, &probe).map_err(|e| Error::msg(format!("--cache: {e}")))?;
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
) -> Result {
    let chooser = KeyChooser::new(distribution, a.workload.keys, a.workload.missing, seed)
        .map_err(|e| Error::msg(format!("read workload: {e}")))?;
    let n = usize::try_from(n).map_err(|_| Error::msg("too many reads"))?;
    let mut indices = Vec::with_capacity(n);
    for t in 0..threads {
        let mut c = chooser.for_thread(t as u64);
        indices.extend((0..thread_slice(n, threads, t).len()).map(|_| c.next().0));
    }
    write_indices(path, &indices)
        .map_err(|e| Error::msg(format!("cannot write {}: {e}", path.display())))
}

/// The key-index files of every read phase.
struct ReadFiles<'a> {
    warmup: &'a Path,
    reads: &'a Path,
}

/// View (b): every engine under the same total memory. For each budget that
/// holds an engine's resident memory with a tiny cache (measured first) and
/// a 1 MiB cache, the engine's free memory is the budget minus that resident
/// memory minus `--memory-slack` (at least 1 MiB: in a tighter budget the
/// slack is what remains); each share of it in `--memory-caches` is tried as
/// its block cache (at least 1 MiB), in a read phase that runs in
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
) -> Result {
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
        let probe = ReadRequest {
            target: h.target(dataset),
            cache_bytes: 1 << 20,
            threads,
            warmup_file: files.warmup.to_path_buf(),
            reads_file: files.warmup.to_path_buf(),
            direct_io,
            trace: None,
        };
        let baseline = match h.client.read(probe, timeout) {
            Ok(r) => r.rss_bytes.unwrap_or(0),
            Err(reason) => {
                er.status = format!("baseline memory: {reason}");
                continue;
            }
        };
        er.baseline_rss_bytes = Some(baseline);
        for &budget in &budgets {
            let er = &mut results.engines[n];
            // Every budget the engine's resident memory and the smallest
            // cache fit is run; the slack is what remains when the budget
            // cannot also hold the configured one.
            let Some(free) = budget.checked_sub(baseline).filter(|&f| f >= MIN_CACHE) else {
                eprintln!(
                    "{}: a budget of {budget} bytes cannot hold its resident memory \
                     ({baseline}) and a 1 MiB cache: skipped",
                    er.label
                );
                continue;
            };
            let for_cache = free.saturating_sub(slack).max(MIN_CACHE);
            let first_try = er.budget_runs.len();
            let mut tried = Vec::new();
            for &share in &results.memory_cache_shares {
                let cache_bytes = ((for_cache as f64 * share) as u64).max(MIN_CACHE);
                if tried.contains(&cache_bytes) {
                    continue;
                }
                tried.push(cache_bytes);
                let er = &mut results.engines[n];
                eprintln!(
                    "{}: Gets in {budget} bytes of memory (cache {cache_bytes} bytes)",
                    er.label
                );
                crate::cgroup::drop_page_cache().map_err(Error::msg)?;
                let name = format!("shale-bench-{}-{n}", std::process::id());
                let group =
                    crate::cgroup::MemoryGroup::create(&name, budget).map_err(Error::msg)?;
                let inside = h.client.wrapped(|program, args| group.wrap(program, args));
                let request = ReadRequest {
                    target: h.target(dataset),
                    cache_bytes,
                    threads,
                    warmup_file: files.warmup.to_path_buf(),
                    reads_file: files.reads.to_path_buf(),
                    direct_io,
                    trace: None,
                };
                let before = group.pressure();
                let reply = inside.read(request, timeout);
                let after = group.pressure();
                drop(group);
                match reply {
                    Ok(reply) => {
                        let run = Run::from_reply(&reply, &comp);
                        let refaults_per_get = match (before.refaults, after.refaults) {
                            (Some(b), Some(a)) if run.gets > 0 => {
                                Some(a.saturating_sub(b) as f64 / run.gets as f64)
                            }
                            _ => None,
                        };
                        er.budget_runs.push(BudgetRun {
                            budget_bytes: budget,
                            cache_share: share,
                            best: false,
                            slack_bytes: free.saturating_sub(cache_bytes),
                            refaults_per_get,
                            run,
                            reply,
                        })
                    }
                    Err(reason) => {
                        let killed = match (before.oom_kills, after.oom_kills) {
                            (Some(b), Some(a)) if a > b => {
                                " (the kernel killed it for memory: the budget cannot hold it)"
                            }
                            _ => "",
                        };
                        eprintln!("{}: {reason}{killed}", er.engine);
                        er.status = format!(
                            "read in {budget} bytes of memory with a {cache_bytes}-byte cache \
                         failed{killed}: {reason}"
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

/// A built harness of one engine and configuration, and its database.
struct Harness {
    client: Client,
    config: String,
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
    let client = Client::locate(engine)?;
    let info = client.info(timeout)?;
    client.require(&info, "read")?;
    let config = match config {
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
    let dir = data_dir.join(format!(
        "compare-{engine}-{config}-{}-{}-v{}",
        dataset.keys, dataset.scheme, dataset.value_size
    ));
    let h = Harness {
        client,
        config,
        dir,
    };
    let marker = Marker {
        engine: engine.to_string(),
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
        let shape = h.client.inspect(h.target(dataset), timeout)?;
        return Ok((h, shape, None));
    }
    std::fs::create_dir_all(&h.dir).map_err(|e| format!("{}: {e}", h.dir.display()))?;
    eprintln!(
        "{engine} ({}): loading {} keys into {}",
        h.config,
        dataset.keys,
        h.dir.display()
    );
    let load = h.client.load(
        LoadRequest {
            target: h.target(dataset),
            threads,
            batch: LOAD_BATCH,
        },
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
}
