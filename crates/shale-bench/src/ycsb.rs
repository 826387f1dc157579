//! `bench ycsb`: YCSB's core workloads A–F on shale, and the presets of the
//! RocksDB read-latency-under-compaction study (method and presets in
//! `docs/bench-ycsb.md`).
//!
//! The records are loaded once per filter layout into `DIR/<layout>` and
//! reused while their marker key says they match; every run reopens the
//! database with its configuration's options, runs the operations on
//! `--threads` threads (each with its own generator of
//! `shale_workload::ycsb`), records every operation's latency through
//! [`LiveStats`], samples the compaction debt, then settles the database
//! (flush, compactions done) so that the next run starts from the same kind
//! of shape. Ctrl-C stops the runs and keeps what was measured.
//!
//! With `--engines shale,pebble,rocksdb,leveldb` each configuration also
//! runs on each peer, through its harness's `ycsb` op
//! (docs/harness-protocol.md), on databases of its own
//! (`DIR/<peer>-<layout>`, with a marker beside each once its load
//! succeeded).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use shale::{
    BlockKind, Db, FilterLevels, FilterPolicy, LevelSet, MetadataPlacement, Options, ReadOptions,
    WriteBatch, WriteOptions,
};
use shale_workload::protocol::{YcsbPhase, YcsbReply, YcsbRequest};
use shale_workload::ycsb::{key_into, Generator, Operation, Shared, Values, Workload, KEY_PREFIX};

use crate::args::{BenchYcsbArgs, YcsbEngine, YcsbPreset, YcsbWorkloadArg};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::live::{LiveStats, OpStats};
use crate::runner::{self, interrupted, Failure, Plan, Sink, Step, Units};
use crate::sampler::{DbSlot, Sampler, Timeline};
use crate::storage::{Create, Storage};

/// The key of the marker record: it sorts before every `user` key, so no
/// scan meets it.
pub const MARKER_KEY: &[u8] = b"!ycsb";

/// Records per load batch.
const LOAD_BATCH: u64 = 1000;
/// Block cache while loading (not measured).
const LOAD_CACHE: u64 = 8 << 20;
/// How often the sampler reads the compaction debt.
const SAMPLE_EVERY: Duration = Duration::from_millis(250);
/// Data size of the RocksDB study: 10M records of 1,000 bytes.
const STUDY_DATA_BYTES: f64 = 1e10;
/// The study's flush and compaction rate limit of mild-pressure.
const STUDY_RATE_LIMIT: u64 = 200_000_000;
/// Upper bound of keys: every record key starts with `user` and a digit.
const KEY_END: &[u8] = b"user:";
/// The presets' base level target: RocksDB's `max_bytes_for_level_base`
/// default (256 MiB, in 7.8 as in the study's 10.8), which the peer runs with.
/// Not scaled with the data: the peer's is not either, and without filters
/// every level above the last costs a Get a data-block probe, so both engines
/// must have the same number of levels.
const PRESET_BASE_LEVEL_BYTES: u64 = 256 << 20;

/// The filters a database is loaded with: tables carry them for good, so
/// configurations of different filters need databases of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Filters {
    /// shale's default: binary fuse filters of 9 bits a key, all levels but
    /// the last.
    Fuse9,
    /// None (baseline).
    NoFilter,
    /// Bloom filters of 10 bits a key on every level (the read-optimized
    /// presets).
    Bloom10,
}

impl Filters {
    fn name(self) -> &'static str {
        match self {
            Filters::Fuse9 => "fuse9",
            Filters::NoFilter => "nofilter",
            Filters::Bloom10 => "bloom10",
        }
    }

    /// The base level target of databases of this layout, from their load
    /// on: the base level moves up as a database grows but never back down,
    /// so the load sets the number of levels the runs see. The presets'
    /// layouts take RocksDB's (see [`PRESET_BASE_LEVEL_BYTES`]); shale's
    /// default layout, shale's.
    fn base_level_bytes(self) -> u64 {
        match self {
            Filters::Fuse9 => Options::default().base_level_bytes,
            Filters::NoFilter | Filters::Bloom10 => PRESET_BASE_LEVEL_BYTES,
        }
    }

    fn policy(self) -> FilterPolicy {
        match self {
            Filters::Fuse9 => FilterPolicy::default(),
            Filters::NoFilter => FilterPolicy::default().levels(FilterLevels::None),
            Filters::Bloom10 => FilterPolicy::bloom(10).levels(FilterLevels::All),
        }
    }
}

/// What a run's database is opened with (reported with each run, and sent
/// to a peer's harness).
pub use shale_workload::protocol::YcsbSettings as Settings;

/// Latencies of one operation kind in a run.
pub use shale_workload::protocol::YcsbOpResult as OpResult;

fn preset_name(p: Option<YcsbPreset>) -> &'static str {
    match p {
        None => "default",
        Some(YcsbPreset::Baseline) => "baseline",
        Some(YcsbPreset::ReadOpt512Mb) => "readopt-512mb",
        Some(YcsbPreset::ReadOpt1Gb) => "readopt-1gb",
        Some(YcsbPreset::MildPressure) => "mild-pressure",
    }
}

fn filters_of(p: Option<YcsbPreset>) -> Filters {
    match p {
        None => Filters::Fuse9,
        Some(YcsbPreset::Baseline) => Filters::NoFilter,
        Some(_) => Filters::Bloom10,
    }
}

/// `study_bytes` of the study's 10 GB scaled to `data_bytes`, within
/// `min..=max`.
fn scaled(data_bytes: u64, study_bytes: f64, min: u64, max: u64) -> u64 {
    ((data_bytes as f64 * study_bytes / STUDY_DATA_BYTES) as u64).clamp(min, max)
}

/// The options of a configuration for `data_bytes` of records; see
/// docs/bench-ycsb.md for the ratios.
pub fn settings(preset: Option<YcsbPreset>, data_bytes: u64, rate_limit: Option<u64>) -> Settings {
    let d = Options::default();
    let cache_share = match preset {
        None => None,
        Some(YcsbPreset::Baseline) => Some(0.022),
        Some(YcsbPreset::ReadOpt512Mb | YcsbPreset::MildPressure) => Some(0.044),
        Some(YcsbPreset::ReadOpt1Gb) => Some(0.088),
    };
    let block_cache_bytes = cache_share.map_or(d.block_cache_bytes, |s| {
        (data_bytes as f64 * s).round() as u64
    });
    // RocksDB's default memtable (64 MiB) against the study's 10 GB, at
    // least 256 KiB and at most shale's default (64 MiB).
    let write_buffer = scaled(data_bytes, (64u64 << 20) as f64, 256 << 10, 64 << 20) as usize;
    let mut s = Settings {
        preset: preset_name(preset).to_string(),
        filters: filters_of(preset).name().to_string(),
        block_cache_bytes,
        pin_table_metadata: false,
        metadata_with_tables: false,
        write_buffer_size: d.write_buffer_size,
        target_file_size_base: d.target_file_size_base,
        base_level_bytes: filters_of(preset).base_level_bytes(),
        max_background_jobs: d.max_background_jobs,
        compaction_rate_limit: None,
        compaction_nice: 0,
    };
    match preset {
        None => {}
        Some(YcsbPreset::Baseline) => {
            s.write_buffer_size = write_buffer;
            s.metadata_with_tables = true;
        }
        Some(YcsbPreset::ReadOpt512Mb | YcsbPreset::ReadOpt1Gb) => {
            s.write_buffer_size = write_buffer;
            s.pin_table_metadata = true;
        }
        Some(YcsbPreset::MildPressure) => {
            s.pin_table_metadata = true;
            // A quarter of the memtable (16 MiB at 10 GB), tables of half
            // shale's default at L0 (1 MiB at 10 GB).
            s.write_buffer_size =
                scaled(data_bytes, (16u64 << 20) as f64, 256 << 10, 16 << 20) as usize;
            s.target_file_size_base = scaled(data_bytes, (1u64 << 20) as f64, 64 << 10, 1 << 20);
            // One flush thread and one compaction thread.
            s.max_background_jobs = 2;
            s.compaction_rate_limit = Some(rate_limit.unwrap_or(STUDY_RATE_LIMIT));
        }
    }
    s
}

/// The marker record of a loaded database.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Marker {
    /// Records the load wrote.
    records: u64,
    /// Records present: loaded and inserted by runs (key numbers
    /// `0..present`).
    present: u64,
    field_count: usize,
    field_length: usize,
    filters: Filters,
    /// The base level target the load ran with (0 in markers written
    /// before it was recorded: such databases are refused).
    #[serde(default)]
    base_level_bytes: u64,
}

/// The latencies of `s`, over a run of `seconds`.
fn op_result(s: &OpStats, seconds: f64) -> OpResult {
    OpResult {
        count: s.count,
        ops_per_sec: s.count as f64 / seconds.max(1e-9),
        mean_us: s.mean_micros(),
        p50_us: s.quantile_micros(0.5),
        p95_us: s.quantile_micros(0.95),
        p99_us: s.quantile_micros(0.99),
        p999_us: s.quantile_micros(0.999),
    }
}

/// One run: a configuration's operations on its database. Samplers of other
/// resources (CPU, devices) add fields of their own here.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// `shale` or the peer's name.
    pub engine: String,
    /// The engine and its version.
    pub engine_version: String,
    /// What the database was opened with.
    pub settings: Settings,
    /// Repetition, from 1.
    pub repetition: u32,
    /// Operations done (fewer than asked if interrupted).
    pub operations: u64,
    /// Wall time of the operations.
    pub seconds: f64,
    /// Operations per second.
    pub ops_per_sec: f64,
    /// Per operation kind (read, update, insert, scan, read-modify-write).
    pub ops: BTreeMap<String, OpResult>,
    /// Largest estimated compaction debt sampled during the run (`null`
    /// for an engine without that figure).
    pub pending_compaction_bytes_max: Option<u64>,
    /// Write stalls during the run (`null` for an engine that does not
    /// count them).
    pub stall_count: Option<u64>,
    /// Time writers spent stalled, µs.
    pub stall_micros: Option<u64>,
    /// Blocks (data, index, filter) read from files by the run's Gets, per
    /// Get: a reader's cache misses, the device reads the operations waited
    /// for (shale: its metrics' physical reads of those kinds; RocksDB: its
    /// per-thread perf context's `block_read_count` over `rocksdb.number.keys.read`;
    /// LevelDB: the reads of its operation threads). `None` without Gets or
    /// from a harness that does not count them (Pebble).
    #[serde(default)]
    pub block_reads_per_get: Option<f64>,
    /// Per level (L0 to L6), the tables a Get searched past their filters,
    /// found or not (each an index lookup and a data block from the cache or
    /// the device), per Get. RocksDB's where its index and filter blocks stay
    /// with the open tables (baseline): its per-level perf context's
    /// block-cache lookups, each a data block.
    #[serde(default)]
    pub tables_searched_per_get: Option<Vec<f64>>,
    /// The share of data-block lookups the block cache answered (RocksDB's:
    /// where `tables_searched_per_get` is).
    #[serde(default)]
    pub data_hit_rate: Option<f64>,
    /// Stopped by Ctrl-C before its operations were done.
    pub interrupted: bool,
    /// CPU user time during the operations, percent of all CPUs (the time
    /// series' average; `None` where `/proc/stat` cannot be read).
    #[serde(default)]
    pub cpu_user: Option<f64>,
    /// CPU system time, percent.
    #[serde(default)]
    pub cpu_system: Option<f64>,
    /// CPU I/O wait, percent.
    #[serde(default)]
    pub cpu_iowait: Option<f64>,
    /// Utilisation of the database's device, percent (`None` where
    /// `/proc/diskstats` does not list it).
    #[serde(default)]
    pub device_util: Option<f64>,
}

/// Mean, spread and extremes of one figure over repetitions.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (0 for one value).
    pub stddev: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = if values.len() > 1 {
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Some(Spread {
            mean,
            stddev: var.sqrt(),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }
}

/// One configuration's runs summed up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// `shale` or the peer's name.
    pub engine: String,
    /// `default` or the preset.
    pub preset: String,
    /// Runs summed up.
    pub runs: usize,
    /// Operations per second.
    pub ops_per_sec: Spread,
    /// Mean read latency, µs (absent without reads).
    pub read_mean_us: Option<Spread>,
    /// p99 read latency, µs.
    pub read_p99_us: Option<Spread>,
    /// Mean update latency, µs (absent without updates).
    pub update_mean_us: Option<Spread>,
    /// p99 update latency, µs.
    pub update_p99_us: Option<Spread>,
    /// Largest compaction debt seen in a run, bytes (`null` for an engine
    /// without that figure).
    pub pending_compaction_bytes_max: Option<Spread>,
    /// Write stalls per run.
    pub stall_count: Option<Spread>,
    /// Stalled time per run, seconds.
    pub stall_seconds: Option<Spread>,
    /// Block reads per Get.
    #[serde(default)]
    pub block_reads_per_get: Option<Spread>,
    /// CPU user time, percent.
    pub cpu_user: Option<Spread>,
    /// CPU system time, percent.
    pub cpu_system: Option<Spread>,
    /// CPU I/O wait, percent.
    pub cpu_iowait: Option<Spread>,
    /// Device utilisation, percent.
    pub device_util: Option<Spread>,
}

/// What `bench ycsb` prints as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct YcsbResults {
    /// The engines, in the order they run each configuration.
    pub engines: Vec<String>,
    /// The workload's letter.
    pub workload: String,
    /// Records loaded.
    pub records: u64,
    /// Fields per record.
    pub field_count: usize,
    /// Bytes per field.
    pub field_length: usize,
    /// Operations asked per run.
    pub operations: u64,
    /// Client threads.
    pub threads: u64,
    /// Seed.
    pub seed: u64,
    /// Tables read with O_DIRECT.
    pub direct_io: bool,
    /// Every run, in the order run.
    pub runs: Vec<RunResult>,
    /// Per configuration, over its repetitions.
    pub summary: Vec<Summary>,
    /// Stopped by Ctrl-C.
    pub interrupted: bool,
}

fn workload_of(w: YcsbWorkloadArg) -> Workload {
    match w {
        YcsbWorkloadArg::A => Workload::A,
        YcsbWorkloadArg::B => Workload::B,
        YcsbWorkloadArg::C => Workload::C,
        YcsbWorkloadArg::D => Workload::D,
        YcsbWorkloadArg::E => Workload::E,
        YcsbWorkloadArg::F => Workload::F,
    }
}

/// `shale bench ycsb`.
pub fn run(a: &BenchYcsbArgs, out: &mut dyn Write) -> Result {
    runner::install_interrupt();
    let workload = workload_of(a.workload);
    let values = Values {
        field_count: a.field_count,
        field_length: a.field_length,
        seed: a.seed,
    };
    let data_bytes = a.records * values.record_len() as u64;
    let configs: Vec<Option<YcsbPreset>> = match (&a.presets, a.preset) {
        (Some(list), _) => list.0.iter().copied().map(Some).collect(),
        (None, p) => vec![p],
    };
    let threads = a.threads as usize;
    let engines = &a.engines.0;
    let has_peer = engines.iter().any(|e| matches!(e, YcsbEngine::Peer(_)));
    if a.zoned.zoned.is_some() && has_peer {
        return Err(Error::Usage(
            "--zoned runs shale only: the peers' harnesses use the regular file system \
             (pass --engines shale)"
                .into(),
        ));
    }
    if has_peer && configs.contains(&None) {
        return Err(Error::msg(
            "the peers run only under --preset or --presets (shale's default filter layout has \
             no counterpart in them)",
        ));
    }
    // Each peer's harness, asked whether it serves the ycsb op before any
    // work starts.
    let mut peers = BTreeMap::new();
    for &engine in engines {
        if let YcsbEngine::Peer(name) = engine {
            let client = Client::locate(name).map_err(|e| Error::msg(format!("{name}: {e}")))?;
            let info = client
                .info(INFO_TIMEOUT)
                .map_err(|e| Error::msg(format!("{name}: {e}")))?;
            client.require(&info, "ycsb").map_err(Error::msg)?;
            peers.insert(name, client);
        }
    }
    let storage = Storage::open(a.zoned.zoned.as_deref(), Create::IfMissing)?;
    let default_base = PathBuf::from("shale-data").join(format!(
        "ycsb-{}-{}x{}",
        a.records, a.field_count, a.field_length
    ));
    let base = storage.db_dir(a.db.as_deref(), Some(&default_base))?;
    let mut layouts: Vec<Filters> = configs.iter().map(|&p| filters_of(p)).collect();
    layouts.sort_by_key(|l| l.name());
    layouts.dedup();
    for &engine in engines {
        for &layout in &layouts {
            if interrupted() {
                break;
            }
            let dir = db_dir(&base, engine, layout);
            match engine {
                YcsbEngine::Shale => prepare(&storage, &dir, layout, a.records, &values, threads)?,
                YcsbEngine::Peer(name) => {
                    let preset = configs
                        .iter()
                        .copied()
                        .find(|&p| filters_of(p) == layout)
                        .flatten();
                    let s = settings(preset, data_bytes, a.rate_limit);
                    let client = peers.get(name).ok_or_else(|| Error::msg("no harness"))?;
                    prepare_peer(client, a, s, &dir)?;
                }
            }
        }
    }
    let mut results = YcsbResults {
        engines: engines.iter().map(|e| e.name().to_string()).collect(),
        workload: workload.letter().to_string(),
        records: a.records,
        field_count: a.field_count,
        field_length: a.field_length,
        operations: a.operations,
        threads: a.threads,
        seed: a.seed,
        direct_io: a.direct_io,
        runs: Vec::new(),
        summary: Vec::new(),
        interrupted: false,
    };
    let total = configs.len() * engines.len() * a.repeat as usize;
    // Only the first of shale's runs is traced (into --trace).
    let mut traced = false;
    'runs: for rep in 1..=a.repeat {
        for &preset in &configs {
            for &engine in engines {
                if interrupted() {
                    break 'runs;
                }
                let mut s = settings(preset, data_bytes, a.rate_limit);
                if engine == YcsbEngine::Shale {
                    s.compaction_nice = a.compaction_nice;
                }
                let dir = db_dir(&base, engine, filters_of(preset));
                let label = format!(
                    "run {}/{total}: {} {} workload {}",
                    results.runs.len() + 1,
                    engine.name(),
                    s.preset,
                    workload.letter()
                );
                let run_dir = a.out.as_ref().map(|o| {
                    o.join(format!(
                        "run-{:02}-{}-{}-r{rep}",
                        results.runs.len() + 1,
                        engine.name(),
                        s.preset
                    ))
                });
                let run_dir = run_dir.as_deref();
                let r = match engine.name() {
                    name if peers.contains_key(name) => {
                        eprintln!("{label}");
                        let client = peers.get(name).ok_or_else(|| Error::msg("no harness"))?;
                        match run_peer(client, a, s, &dir, rep, run_dir) {
                            Ok(r) => r,
                            // Ctrl-C reaches the harness too: its run is lost.
                            Err(_) if interrupted() => break 'runs,
                            Err(e) => return Err(e),
                        }
                    }
                    _ => {
                        let first = !traced;
                        traced = true;
                        run_one(
                            a, &storage, workload, &values, &dir, s, rep, &label, run_dir, first,
                        )?
                    }
                };
                if !a.json {
                    write_run(out, &label, &r).map_err(Error::output)?;
                }
                results.runs.push(r);
            }
        }
    }
    results.interrupted = interrupted();
    results.summary = configs
        .iter()
        .flat_map(|&p| {
            let runs = &results.runs;
            engines
                .iter()
                .map(move |&e| summarize(e.name(), preset_name(p), runs))
        })
        .filter(|s| s.runs > 0)
        .collect();
    storage.finish()?;
    let json = serde_json::to_string_pretty(&results)
        .map_err(|e| Error::msg(format!("encoding JSON: {e}")))?;
    if let Some(o) = &a.out {
        std::fs::create_dir_all(o)
            .and_then(|()| std::fs::write(o.join("results.json"), format!("{json}\n")))
            .map_err(|e| Error::msg(format!("writing {}/results.json: {e}", o.display())))?;
    }
    if a.json {
        writeln!(out, "{json}").map_err(Error::output)?;
    } else {
        if results.runs.len() > 1 {
            write_summary(out, &results.summary).map_err(Error::output)?;
        }
        if results.interrupted {
            writeln!(out, "interrupted: results so far").map_err(Error::output)?;
        }
    }
    Ok(())
}

/// Where an engine's database of a filter layout lives: `DIR/<layout>` for
/// shale, `DIR/<peer>-<layout>` for a peer.
fn db_dir(base: &Path, engine: YcsbEngine, filters: Filters) -> PathBuf {
    match engine {
        YcsbEngine::Shale => base.join(filters.name()),
        YcsbEngine::Peer(name) => base.join(format!("{name}-{}", filters.name())),
    }
}

/// How long a harness may take to say what it serves.
const INFO_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a harness may take for one load or run.
const PEER_TIMEOUT: Duration = Duration::from_secs(6 * 3600);

/// A `ycsb` request of `phase` for the settings `s`.
fn peer_request(a: &BenchYcsbArgs, s: &Settings, dir: &Path, phase: YcsbPhase) -> YcsbRequest {
    YcsbRequest {
        phase,
        dir: dir.to_path_buf(),
        workload: workload_of(a.workload).letter().to_string(),
        records: a.records,
        field_count: a.field_count,
        field_length: a.field_length,
        seed: a.seed,
        threads: a.threads as usize,
        operations: a.operations,
        direct_io: a.direct_io,
        settings: s.clone(),
    }
}

/// What a peer's database of a filter layout was loaded with: written
/// beside it (`DIR/<peer>-<layout>.json`) once its load succeeded.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct PeerMarker {
    engine: String,
    filters: String,
    records: u64,
    field_count: usize,
    field_length: usize,
    seed: u64,
}

/// Loads a peer's database of `s`'s filter layout unless its marker says
/// it holds these records; refuses a directory that holds files but no
/// marker (an interrupted load, or something else's).
fn prepare_peer(client: &Client, a: &BenchYcsbArgs, s: Settings, dir: &Path) -> Result {
    let engine = client.engine().to_string();
    let marker = PeerMarker {
        engine: engine.clone(),
        filters: s.filters.clone(),
        records: a.records,
        field_count: a.field_count,
        field_length: a.field_length,
        seed: a.seed,
    };
    let marker_path = dir.with_extension("json");
    if let Ok(text) = std::fs::read_to_string(&marker_path) {
        let found: PeerMarker = serde_json::from_str(&text)
            .map_err(|e| Error::msg(format!("{}: {e}", marker_path.display())))?;
        if found == marker && dir.is_dir() {
            return Ok(());
        }
        return Err(Error::msg(format!(
            "{} holds another load ({found:?}); remove {} and it, or pass another --db",
            dir.display(),
            marker_path.display()
        )));
    }
    if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
        return Err(Error::msg(format!(
            "{} holds files but no {}: an interrupted load or files of something else; remove \
             it or pass another --db",
            dir.display(),
            marker_path.display()
        )));
    }
    eprintln!("loading {} records into {}", a.records, dir.display());
    client
        .ycsb_load(peer_request(a, &s, dir, YcsbPhase::Load), PEER_TIMEOUT)
        .map_err(|e| Error::msg(format!("{engine} load: {e}")))?;
    let text = serde_json::to_string_pretty(&marker)
        .map_err(|e| Error::msg(format!("encoding {}: {e}", marker_path.display())))?;
    std::fs::write(&marker_path, format!("{text}\n"))
        .map_err(|e| Error::msg(format!("writing {}: {e}", marker_path.display())))
}

/// Tables searched per Get at each level and the data-block hit rate of a
/// peer's run, when every block-cache lookup is a data block: with index and
/// filter blocks held by the open tables (`metadata_with_tables`, RocksDB's
/// default) a Get looks up one data block per table it searches.
fn tables_searched(r: &YcsbReply, s: &Settings) -> (Option<Vec<f64>>, Option<f64>) {
    let (Some(lookups), Some(misses), Some(gets)) = (&r.level_lookups, &r.level_misses, r.gets)
    else {
        return (None, None);
    };
    if !s.metadata_with_tables || gets == 0 {
        return (None, None);
    }
    let per_get = lookups.iter().map(|&n| n as f64 / gets as f64).collect();
    let (all, missed): (u64, u64) = (lookups.iter().sum(), misses.iter().sum());
    let hit_rate = (all > 0).then(|| 1.0 - missed as f64 / all as f64);
    (Some(per_get), hit_rate)
}

/// One run on a peer's database through its harness.
fn run_peer(
    client: &Client,
    a: &BenchYcsbArgs,
    settings: Settings,
    dir: &Path,
    repetition: u32,
    run_dir: Option<&Path>,
) -> Result<RunResult> {
    // The operations run in the harness's process: the sampler sees the
    // machine (CPU, device) but not the operations or the engine's gauges.
    let sampler = start_sampler(a, dir, run_dir, None, None)?;
    let engine = client.engine();
    let r = client
        .ycsb_run(
            peer_request(a, &settings, dir, YcsbPhase::Run),
            PEER_TIMEOUT,
        )
        .map_err(|e| Error::msg(format!("{engine} run: {e}")))?;
    let series = sampler.finish();
    if let Some(d) = run_dir {
        let title = format!(
            "bench ycsb: {engine} {}, repetition {repetition}",
            settings.preset
        );
        crate::sampler::write_files(&series, d, &title).map_err(Error::msg)?;
    }
    // The call also opens the database (well under a second) and settles it
    // after the operations: the machine's figures are those of the call's
    // first `seconds`.
    let machine = series.summary_until(r.seconds);
    let (tables_searched_per_get, data_hit_rate) = tables_searched(&r, &settings);
    Ok(RunResult {
        engine: engine.to_string(),
        engine_version: r.engine,
        settings,
        repetition,
        interrupted: r.operations < a.operations,
        operations: r.operations,
        seconds: r.seconds,
        ops_per_sec: r.ops_per_sec,
        ops: r.ops,
        pending_compaction_bytes_max: r.pending_compaction_bytes_max,
        stall_count: r.stall_count,
        stall_micros: r.stall_micros,
        block_reads_per_get: match (r.block_reads, r.gets) {
            (Some(reads), Some(gets)) if gets > 0 => Some(reads as f64 / gets as f64),
            _ => None,
        },
        tables_searched_per_get,
        data_hit_rate,
        cpu_user: machine.cpu_user,
        cpu_system: machine.cpu_system,
        cpu_iowait: machine.cpu_iowait,
        device_util: machine.device_util,
    })
}

/// Starts a run's sampler (`ops` and `metrics` as [`Sampler::start`] takes
/// them), writing its rows into `run_dir` if there is one.
fn start_sampler(
    a: &BenchYcsbArgs,
    db_dir: &Path,
    run_dir: Option<&Path>,
    ops: Option<Arc<dyn crate::live::OpsSource>>,
    metrics: Option<crate::sampler::MetricsSource>,
) -> Result<Sampler> {
    if let Some(d) = run_dir {
        std::fs::create_dir_all(d)
            .map_err(|e| Error::msg(format!("cannot create {}: {e}", d.display())))?;
    }
    let interval = a.sample.interval().map_err(Error::msg)?;
    Sampler::start(interval, db_dir, run_dir, ops, metrics)
        .map_err(|e| Error::msg(format!("starting the sampler: {e}")))
}

fn load_options(storage: &Storage, filters: Filters, create: bool) -> Options {
    storage.options(
        Options::default()
            .create_if_missing(create)
            .block_cache_bytes(LOAD_CACHE)
            .filter_policy(filters.policy())
            .base_level_bytes(filters.base_level_bytes()),
    )
}

fn read_marker(db: &Db) -> Result<Option<Marker>> {
    match db.get(MARKER_KEY)? {
        None => Ok(None),
        Some(v) => serde_json::from_slice(&v)
            .map(Some)
            .map_err(|e| Error::msg(format!("unreadable YCSB marker record: {e}"))),
    }
}

fn write_marker(db: &Db, m: &Marker) -> Result {
    let v = serde_json::to_vec(m).map_err(|e| Error::msg(format!("encoding marker: {e}")))?;
    db.put(MARKER_KEY, &v)?;
    Ok(())
}

/// Reuses the database in `dir` if its marker matches, loads it if there is
/// none, refuses anything else.
fn prepare(
    storage: &Storage,
    dir: &Path,
    filters: Filters,
    records: u64,
    values: &Values,
    threads: usize,
) -> Result {
    if storage.has_db(dir)? {
        let db = Db::open(dir, load_options(storage, filters, false))?;
        let marker = read_marker(&db)?;
        let mut key = Vec::new();
        key_into(0, &mut key);
        let first = db.get(&key)?;
        db.close()?;
        let Some(m) = marker else {
            return Err(Error::msg(format!(
                "{} holds a database without a complete YCSB load (no marker record); \
                 pass another --db or remove it",
                dir.display()
            )));
        };
        let same = m.records == records
            && m.field_count == values.field_count
            && m.field_length == values.field_length
            && m.filters == filters
            && m.base_level_bytes == filters.base_level_bytes()
            && first.is_some_and(|v| v.len() == values.record_len());
        if !same {
            return Err(Error::msg(format!(
                "{} holds a YCSB database of {} records of {} fields of {} bytes with {} \
                 filters and a base level target of {} bytes (0: not recorded), not \
                 --records {records} --field-count {} --field-length {} with {} filters and \
                 {} bytes; pass another --db or remove it",
                dir.display(),
                m.records,
                m.field_count,
                m.field_length,
                m.filters.name(),
                m.base_level_bytes,
                values.field_count,
                values.field_length,
                filters.name(),
                filters.base_level_bytes()
            )));
        }
        return Ok(());
    }
    load(storage, dir, filters, records, values, threads)
}

/// Loads records `0..records` with `threads` writers, settles, then writes
/// the marker.
fn load(
    storage: &Storage,
    dir: &Path,
    filters: Filters,
    records: u64,
    values: &Values,
    threads: usize,
) -> Result {
    storage
        .fs()
        .create_dir_all(dir)
        .map_err(|e| Error::msg(format!("cannot create {}: {e}", dir.display())))?;
    let db = Db::open(dir, load_options(storage, filters, true))?;
    let pb = runner::bar(
        records,
        format!("loading {records} records into {}", dir.display()),
    );
    let loaded = crate::load::load(
        0..records,
        LOAD_BATCH,
        threads,
        &pb,
        &interrupted,
        |k, key, value| {
            key_into(k, key);
            values.fill_record(k, value);
        },
        |pairs| {
            let mut batch = WriteBatch::new();
            for (k, v) in pairs {
                batch.put(k, v);
            }
            db.write(batch, &WriteOptions::default())
        },
    );
    pb.finish_and_clear();
    let loaded = loaded?;
    if loaded.stopped {
        db.close()?;
        return Err(Error::msg(format!(
            "interrupted while loading {}; it has no marker and will be refused: remove it",
            dir.display()
        )));
    }
    db.settle()?;
    write_marker(
        &db,
        &Marker {
            records,
            present: records,
            field_count: values.field_count,
            field_length: values.field_length,
            filters,
            base_level_bytes: filters.base_level_bytes(),
        },
    )?;
    db.flush()?;
    db.close()?;
    Ok(())
}

fn run_options(a: &BenchYcsbArgs, storage: &Storage, s: &Settings, filters: Filters) -> Options {
    // On a zone file system every read goes to the device (--direct-io is
    // the posix file system's).
    let fs: Arc<dyn shale::env::FileSystem> = match storage.zoned() {
        Some(_) => storage.fs(),
        None => Arc::new(shale::env::PosixFs::new(shale::env::PosixOptions {
            direct_io: a.direct_io,
            ..Default::default()
        })),
    };
    let open_files = shale::env::raise_open_files_limit().unwrap_or(1024);
    Options::default()
        .fs(fs)
        .create_if_missing(false)
        .block_cache_bytes(s.block_cache_bytes)
        .filter_policy(filters.policy())
        .pin_table_metadata(s.pin_table_metadata)
        .table_metadata(if s.metadata_with_tables {
            MetadataPlacement::all_kinds_at(LevelSet::ALL)
        } else {
            MetadataPlacement::NONE
        })
        .write_buffer_size(s.write_buffer_size)
        .target_file_size_base(s.target_file_size_base)
        .base_level_bytes(s.base_level_bytes)
        .max_background_jobs(s.max_background_jobs)
        .compaction_rate_limit(s.compaction_rate_limit)
        .compaction_nice(s.compaction_nice)
        .max_open_files(
            usize::try_from(open_files.saturating_sub(256).clamp(64, 1_000_000))
                .unwrap_or(1_000_000),
        )
}

/// One run of `a.operations` operations on the database in `dir`; its time
/// series goes into `run_dir`, if any.
#[allow(clippy::too_many_arguments)]
fn run_one(
    a: &BenchYcsbArgs,
    storage: &Storage,
    workload: Workload,
    values: &Values,
    dir: &Path,
    settings: Settings,
    repetition: u32,
    label: &str,
    run_dir: Option<&Path>,
    first_run: bool,
) -> Result<RunResult> {
    let filters = filters_of_name(&settings.filters);
    let threads = a.threads as usize;
    let live = Arc::new(LiveStats::new(threads));
    let slot = Arc::new(DbSlot::default());
    let sampler = start_sampler(
        a,
        &storage.sample_path(dir),
        run_dir,
        Some(live.clone()),
        Some(slot.metrics_source()),
    )?;
    let timeline = Arc::new(Timeline::new(sampler.started_at()));
    let mut opts = run_options(a, storage, &settings, filters);
    opts.listeners.push(timeline.clone());
    let db = slot.open(Db::open(dir, opts)?);
    let trace = a.trace.trace.as_deref().filter(|_| first_run);
    if let Some(file) = trace {
        crate::trace_file::start_trace(&db, file, a.trace.trace_sample)?;
        db.mark_block_trace("measure");
    }
    let marker = read_marker(&db)?
        .ok_or_else(|| Error::msg(format!("{} lost its YCSB marker", dir.display())))?;
    let shared = Shared::new(workload, marker.records, marker.present, a.operations);
    let pb = runner::bar(a.operations, label.to_string());
    let before = db.metrics();
    let pending_max = AtomicU64::new(before.pending_compaction_bytes);
    let plan = Plan {
        threads,
        units: Units::Split(a.operations),
        sink: Sink::Live(&live),
        progress: Some(&pb),
    };
    let ran: Result<_, Failure<String>> = plan.run_beside(
        |w| {
            let g = Generator::new(&shared, a.seed, w.thread as u64, values.field_count);
            Ok((g, Worker::new(&db, values)))
        },
        |(g, worker), w| {
            let op = g.next_op();
            let t0 = Instant::now();
            let r = worker.perform(op);
            let ns = runner::elapsed_nanos(t0);
            r?;
            if let Operation::Insert { keynum } = op {
                shared.acknowledge(keynum);
            }
            w.record(op.kind().name(), ns, 1);
            Ok(Step::Did(1))
        },
        // The engine's pending compaction bytes, sampled beside the workers.
        |b| {
            while b.running() {
                std::thread::sleep(SAMPLE_EVERY);
                pending_max.fetch_max(db.metrics().pending_compaction_bytes, Ordering::Relaxed);
            }
        },
    );
    // The operations' time, not the sampler's last sleep.
    let (seconds, first_error) = match ran {
        Ok(done) => (done.seconds, None),
        Err(f) => (0.0, Some(f.error)),
    };
    pb.finish_and_clear();
    // The time series covers the operations, not the settling below.
    let mut series = sampler.finish();
    series.spans = timeline.spans();
    series.notes.extend(storage.sampler_notes());
    if let Some(d) = run_dir {
        let title = format!(
            "bench ycsb: shale {}, repetition {repetition}",
            settings.preset
        );
        crate::sampler::write_files(&series, d, &title).map_err(Error::msg)?;
    }
    let machine = series.summary();
    let after = db.metrics();
    let trace_end = trace.map(|file| crate::trace_file::end_trace(&db, file, label));
    pending_max.fetch_max(after.pending_compaction_bytes, Ordering::Relaxed);
    // Record the inserts, then let the database settle so that the next run
    // starts with no compaction pending.
    let present = shared.last() + 1;
    let result_marker = Marker { present, ..marker };
    let write_back = write_marker(&db, &result_marker).and_then(|()| Ok(db.settle()?));
    let close = slot.close(db);
    if let Some(m) = first_error {
        return Err(Error::msg(m));
    }
    write_back?;
    close?;
    trace_end.transpose()?;
    let totals = live.totals();
    let operations: u64 = totals.values().map(|s| s.count).sum();
    let delta = after.delta(&before);
    Ok(RunResult {
        engine: YcsbEngine::Shale.name().to_string(),
        engine_version: format!("shale {}", env!("CARGO_PKG_VERSION")),
        settings,
        repetition,
        operations,
        seconds,
        ops_per_sec: operations as f64 / seconds.max(1e-9),
        ops: totals
            .iter()
            .map(|(k, s)| (k.to_string(), op_result(s, seconds)))
            .collect(),
        pending_compaction_bytes_max: Some(pending_max.load(Ordering::Relaxed)),
        stall_count: Some(after.stall_count.saturating_sub(before.stall_count)),
        stall_micros: Some(after.stall_micros.saturating_sub(before.stall_micros)),
        block_reads_per_get: block_reads_per_get(&delta),
        tables_searched_per_get: tables_searched_per_get(&delta),
        data_hit_rate: {
            let data = delta.block(BlockKind::Data);
            let lookups = data.cache_hits + data.cache_misses;
            (lookups > 0).then(|| data.cache_hits as f64 / lookups as f64)
        },
        interrupted: operations < a.operations,
        cpu_user: machine.cpu_user,
        cpu_system: machine.cpu_system,
        cpu_iowait: machine.cpu_iowait,
        device_util: machine.device_util,
    })
}

/// Tables searched per Get at each level over `d` (see
/// [`RunResult::tables_searched_per_get`]).
fn tables_searched_per_get(d: &shale::Metrics) -> Option<Vec<f64>> {
    (d.gets > 0).then(|| {
        (0..shale::NUM_LEVELS)
            .map(|l| (d.gets_table_hits[l] + d.gets_table_misses[l]) as f64 / d.gets as f64)
            .collect()
    })
}

/// Blocks (filter, index, data) read from files per Get over `d`, a run's
/// metrics delta; table opens' footer and properties reads are left out, as
/// RocksDB's `block_read_count` leaves its own out.
fn block_reads_per_get(d: &shale::Metrics) -> Option<f64> {
    let kinds = [
        BlockKind::Filter,
        BlockKind::TopIndex,
        BlockKind::IndexPartition,
        BlockKind::Data,
    ];
    let reads: u64 = kinds.iter().map(|&k| d.block(k).physical_reads).sum();
    (d.gets > 0).then(|| reads as f64 / d.gets as f64)
}

fn filters_of_name(name: &str) -> Filters {
    match name {
        "nofilter" => Filters::NoFilter,
        "bloom10" => Filters::Bloom10,
        _ => Filters::Fuse9,
    }
}

/// One thread's way of performing operations, as YCSB's RocksDB binding
/// does: an update reads the record, replaces its field and writes the whole
/// record back; a read-modify-write is a read followed by such an update.
struct Worker<'a> {
    db: &'a Db,
    values: &'a Values,
    key: Vec<u8>,
    value: Vec<u8>,
}

impl<'a> Worker<'a> {
    fn new(db: &'a Db, values: &'a Values) -> Worker<'a> {
        Worker {
            db,
            values,
            key: Vec::new(),
            value: Vec::new(),
        }
    }

    fn perform(&mut self, op: Operation) -> Result<(), String> {
        match op {
            Operation::Read { keynum } => self.read(keynum).map(|_| ()),
            Operation::Update {
                keynum,
                field,
                version,
            } => self.update(keynum, field, version),
            Operation::Insert { keynum } => {
                key_into(keynum, &mut self.key);
                self.values.fill_record(keynum, &mut self.value);
                self.db
                    .put(&self.key, &self.value)
                    .map_err(|e| format!("insert of record {keynum}: {e}"))
            }
            Operation::Scan { keynum, length } => self.scan(keynum, length),
            Operation::ReadModifyWrite {
                keynum,
                field,
                version,
            } => {
                self.read(keynum)?;
                self.update(keynum, field, version)
            }
        }
    }

    /// Reads record `keynum`, which must be present with a whole record.
    fn read(&mut self, keynum: u64) -> Result<Vec<u8>, String> {
        key_into(keynum, &mut self.key);
        let got = self
            .db
            .get(&self.key)
            .map_err(|e| format!("read of record {keynum}: {e}"))?;
        match got {
            Some(v) if v.len() == self.values.record_len() => Ok(v),
            Some(v) => Err(format!(
                "record {keynum} has {} bytes, expected {}",
                v.len(),
                self.values.record_len()
            )),
            None => Err(format!("record {keynum} is missing")),
        }
    }

    fn update(&mut self, keynum: u64, field: usize, version: u64) -> Result<(), String> {
        let mut record = self.read(keynum)?;
        if !self
            .values
            .update_field(keynum, field, version, &mut record)
        {
            return Err(format!("record {keynum}: field {field} out of range"));
        }
        self.db
            .put(&self.key, &record)
            .map_err(|e| format!("update of record {keynum}: {e}"))
    }

    /// Reads up to `length` records in key order from record `keynum`'s key
    /// (fewer at the end of the keys), copying each value as a client would.
    fn scan(&mut self, keynum: u64, length: u64) -> Result<(), String> {
        key_into(keynum, &mut self.key);
        let opts = ReadOptions::default().upper_bound(Some(KEY_END.to_vec()));
        let mut it = self
            .db
            .iter(&opts)
            .map_err(|e| format!("scan from record {keynum}: {e}"))?;
        it.seek(&self.key);
        let mut n = 0;
        while n < length && it.valid() {
            if !it.key().starts_with(KEY_PREFIX.as_bytes()) {
                break;
            }
            self.value.clear();
            self.value.extend_from_slice(it.value());
            n += 1;
            it.next();
        }
        it.status()
            .map_err(|e| format!("scan from record {keynum}: {e}"))?;
        if n == 0 {
            return Err(format!("scan from record {keynum} found nothing"));
        }
        Ok(())
    }
}

fn summarize(engine: &str, preset: &str, runs: &[RunResult]) -> Summary {
    let mine: Vec<&RunResult> = runs
        .iter()
        .filter(|r| r.engine == engine && r.settings.preset == preset)
        .collect();
    let of = |f: &dyn Fn(&RunResult) -> Option<f64>| {
        let v: Vec<f64> = mine.iter().filter_map(|r| f(r)).collect();
        Spread::of(&v)
    };
    let zero = Spread {
        mean: 0.0,
        stddev: 0.0,
        min: 0.0,
        max: 0.0,
    };
    let op = |kind: &'static str, p99: bool| {
        of(&move |r: &RunResult| {
            r.ops
                .get(kind)
                .map(|o| if p99 { o.p99_us } else { o.mean_us })
        })
    };
    Summary {
        engine: engine.to_string(),
        preset: preset.to_string(),
        runs: mine.len(),
        ops_per_sec: of(&|r| Some(r.ops_per_sec)).unwrap_or(zero),
        read_mean_us: op("read", false),
        read_p99_us: op("read", true),
        update_mean_us: op("update", false),
        update_p99_us: op("update", true),
        pending_compaction_bytes_max: of(&|r| r.pending_compaction_bytes_max.map(|b| b as f64)),
        stall_count: of(&|r| r.stall_count.map(|n| n as f64)),
        stall_seconds: of(&|r| r.stall_micros.map(|us| us as f64 / 1e6)),
        block_reads_per_get: of(&|r| r.block_reads_per_get),
        cpu_user: of(&|r| r.cpu_user),
        cpu_system: of(&|r| r.cpu_system),
        cpu_iowait: of(&|r| r.cpu_iowait),
        device_util: of(&|r| r.device_util),
    }
}

fn write_run(out: &mut dyn Write, label: &str, r: &RunResult) -> std::io::Result<()> {
    writeln!(
        out,
        "{label}{}: {} operations in {:.3} s, {:.0} ops/s",
        if r.interrupted { " (interrupted)" } else { "" },
        r.operations,
        r.seconds,
        r.ops_per_sec
    )?;
    writeln!(
        out,
        "  {:<18} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "operation", "count", "ops/s", "avg µs", "p50 µs", "p95 µs", "p99 µs", "p99.9 µs"
    )?;
    for (kind, o) in &r.ops {
        writeln!(
            out,
            "  {:<18} {:>9} {:>10.0} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
            kind, o.count, o.ops_per_sec, o.mean_us, o.p50_us, o.p95_us, o.p99_us, o.p999_us
        )?;
    }
    writeln!(
        out,
        "  cache {:.1} MiB, {} block reads per Get, pending compaction max {} MiB, {} stalls ({} s)",
        r.settings.block_cache_bytes as f64 / (1 << 20) as f64,
        r.block_reads_per_get
            .map_or("-".to_string(), |x| format!("{x:.3}")),
        r.pending_compaction_bytes_max
            .map_or("-".to_string(), |b| format!("{:.1}", b as f64 / (1 << 20) as f64)),
        r.stall_count.map_or("-".to_string(), |n| n.to_string()),
        r.stall_micros
            .map_or("-".to_string(), |us| format!("{:.3}", us as f64 / 1e6))
    )?;
    if let (Some(levels), Some(hit)) = (&r.tables_searched_per_get, r.data_hit_rate) {
        let searched: Vec<String> = levels
            .iter()
            .enumerate()
            .filter(|(_, &x)| x > 0.0)
            .map(|(l, x)| format!("L{l} {x:.3}"))
            .collect();
        writeln!(
            out,
            "  tables searched per Get: {}; data-block cache hit rate {:.1}%",
            if searched.is_empty() {
                "none".to_string()
            } else {
                searched.join(", ")
            },
            hit * 100.0
        )?;
    }
    Ok(())
}

/// `mean (min-max)`, or `mean` alone for one run; `-` when absent.
fn spread_text(s: Option<&Spread>, runs: usize, scale: f64, decimals: usize) -> String {
    match s {
        None => "-".to_string(),
        Some(s) if runs > 1 => format!(
            "{:.d$} ({:.d$}-{:.d$})",
            s.mean * scale,
            s.min * scale,
            s.max * scale,
            d = decimals
        ),
        Some(s) => format!("{:.d$}", s.mean * scale, d = decimals),
    }
}

fn write_summary(out: &mut dyn Write, rows: &[Summary]) -> std::io::Result<()> {
    writeln!(out, "\nper configuration: mean (min-max over repetitions)")?;
    writeln!(
        out,
        "{:<8} {:<14} {:>4} {:>24} {:>20} {:>20} {:>20} {:>20} {:>20} {:>20} {:>14} {:>16} {:>16} {:>16} {:>16} {:>16}",
        "engine",
        "preset",
        "runs",
        "ops/s",
        "block reads/Get",
        "read avg µs",
        "read p99 µs",
        "update avg µs",
        "update p99 µs",
        "pending max MiB",
        "stalls",
        "stall s",
        "CPU user %",
        "CPU sys %",
        "iowait %",
        "device util %"
    )?;
    for s in rows {
        let n = s.runs;
        writeln!(
            out,
            "{:<8} {:<14} {:>4} {:>24} {:>20} {:>20} {:>20} {:>20} {:>20} {:>20} {:>14} {:>16} {:>16} {:>16} {:>16} {:>16}",
            s.engine,
            s.preset,
            n,
            spread_text(Some(&s.ops_per_sec), n, 1.0, 0),
            spread_text(s.block_reads_per_get.as_ref(), n, 1.0, 3),
            spread_text(s.read_mean_us.as_ref(), n, 1.0, 1),
            spread_text(s.read_p99_us.as_ref(), n, 1.0, 1),
            spread_text(s.update_mean_us.as_ref(), n, 1.0, 1),
            spread_text(s.update_p99_us.as_ref(), n, 1.0, 1),
            spread_text(
                s.pending_compaction_bytes_max.as_ref(),
                n,
                1.0 / (1 << 20) as f64,
                1
            ),
            spread_text(s.stall_count.as_ref(), n, 1.0, 0),
            spread_text(s.stall_seconds.as_ref(), n, 1.0, 3),
            spread_text(s.cpu_user.as_ref(), n, 1.0, 1),
            spread_text(s.cpu_system.as_ref(), n, 1.0, 1),
            spread_text(s.cpu_iowait.as_ref(), n, 1.0, 1),
            spread_text(s.device_util.as_ref(), n, 1.0, 1),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_scale_with_the_data() {
        let study = 10_000_000 * 1000;
        let b = settings(Some(YcsbPreset::Baseline), study, None);
        assert_eq!(b.block_cache_bytes, 220_000_000);
        assert_eq!(b.filters, "nofilter");
        assert!(!b.pin_table_metadata);
        assert!(b.metadata_with_tables, "as RocksDB's default");
        assert_eq!(b.write_buffer_size, 64 << 20);
        for p in [
            YcsbPreset::Baseline,
            YcsbPreset::ReadOpt512Mb,
            YcsbPreset::ReadOpt1Gb,
            YcsbPreset::MildPressure,
        ] {
            let s = settings(Some(p), study, None);
            assert_eq!(s.base_level_bytes, 256 << 20, "RocksDB's default, unscaled");
        }
        let r = settings(Some(YcsbPreset::ReadOpt512Mb), study, None);
        assert_eq!(
            (r.block_cache_bytes, r.filters.as_str()),
            (440_000_000, "bloom10")
        );
        assert!(r.pin_table_metadata);
        let r1 = settings(Some(YcsbPreset::ReadOpt1Gb), study, None);
        assert_eq!(r1.block_cache_bytes, 880_000_000);
        let m = settings(Some(YcsbPreset::MildPressure), study, None);
        assert_eq!(m.block_cache_bytes, r.block_cache_bytes);
        assert_eq!(m.write_buffer_size, 16 << 20);
        assert_eq!(m.target_file_size_base, 1 << 20);
        assert_eq!(m.max_background_jobs, 2);
        assert_eq!(m.compaction_rate_limit, Some(200_000_000));
        // 100,000 records: a hundredth of the cache, floors for the rest.
        let small = 100_000 * 1000;
        let m = settings(Some(YcsbPreset::MildPressure), small, Some(5_000_000));
        assert_eq!(m.block_cache_bytes, 4_400_000);
        assert_eq!(m.write_buffer_size, 256 << 10);
        assert_eq!(m.target_file_size_base, 64 << 10);
        assert_eq!(m.compaction_rate_limit, Some(5_000_000));
        let b = settings(Some(YcsbPreset::Baseline), small, None);
        assert_eq!(b.write_buffer_size, 671_088);
        let d = settings(None, small, None);
        assert_eq!(d.preset, "default");
        assert_eq!(d.block_cache_bytes, Options::default().block_cache_bytes);
        assert_eq!(filters_of_name(&d.filters), Filters::Fuse9);
        assert_eq!(d.base_level_bytes, Options::default().base_level_bytes);
    }

    #[test]
    fn a_peers_per_level_lookups_are_its_tables_searched_at_baseline_only() {
        let reply = serde_json::json!({
            "engine": "rocksdb 7.8.3", "operations": 10, "seconds": 1.0, "ops_per_sec": 10.0,
            "ops": {}, "pending_compaction_bytes_max": 0, "stall_count": 0, "stall_micros": 0,
            "gets": 100, "block_reads": 50,
            "level_lookups": [150, 60, 0, 0, 0, 0, 40],
            "level_misses": [50, 30, 0, 0, 0, 0, 20]
        });
        let r: YcsbReply = serde_json::from_value(reply).expect("a reply");
        let data_bytes = 100_000 * 1000;
        let base = settings(Some(YcsbPreset::Baseline), data_bytes, None);
        let (levels, hit) = tables_searched(&r, &base);
        assert_eq!(levels, Some(vec![1.5, 0.6, 0.0, 0.0, 0.0, 0.0, 0.4]));
        let hit = hit.expect("a hit rate");
        assert!((hit - 0.6).abs() < 1e-9, "{hit}");
        // With index and filter blocks in the cache a lookup is not a table.
        let readopt = settings(Some(YcsbPreset::ReadOpt512Mb), data_bytes, None);
        assert_eq!(tables_searched(&r, &readopt), (None, None));
        // An older harness sends neither list.
        let old: YcsbReply = serde_json::from_value(serde_json::json!({
            "engine": "rocksdb 7.8.3", "operations": 10, "seconds": 1.0, "ops_per_sec": 10.0,
            "ops": {}, "pending_compaction_bytes_max": 0, "stall_count": 0, "stall_micros": 0
        }))
        .expect("an older reply");
        assert_eq!(tables_searched(&old, &base), (None, None));
    }

    #[test]
    fn spreads_and_their_text() {
        let s = Spread::of(&[1.0, 2.0, 3.0]).expect("values");
        assert_eq!((s.mean, s.min, s.max), (2.0, 1.0, 3.0));
        assert!((s.stddev - 1.0).abs() < 1e-12);
        assert!(Spread::of(&[]).is_none());
        assert_eq!(spread_text(Some(&s), 3, 1.0, 1), "2.0 (1.0-3.0)");
        assert_eq!(spread_text(Some(&s), 1, 1.0, 0), "2");
        assert_eq!(spread_text(None, 1, 1.0, 0), "-");
    }
}
