//! The settings of the benchmarks and of the advisor, as command-line
//! arguments (clap): the `shale` tool parses them, and the runners of this
//! crate take them.

use std::path::PathBuf;

use clap::builder::TypedValueParser;
use clap::{Args, ValueEnum};

use crate::client::PEERS;

/// The benchmarks `bench db` knows, in the order of `--help`.
pub const BENCHMARK_NAMES: [&str; 15] = [
    "fillseq",
    "fillrandom",
    "overwrite",
    "fillsync",
    "readrandom",
    "readseq",
    "readreverse",
    "readhot",
    "readmissing",
    "seekrandom",
    "readwhilewriting",
    "readrandomwriterandom",
    "deleterandom",
    "compact",
    "stats",
];

/// The benchmarks a sweep may run at each value: the ones that only read.
pub const SWEEP_BENCHMARK_NAMES: [&str; 6] = [
    "readrandom",
    "readhot",
    "seekrandom",
    "readmissing",
    "readseq",
    "readreverse",
];

/// The geometry of an emulated zoned device to create.
#[derive(Clone, Debug, Default, Args)]
pub struct GeometryArgs {
    /// Number of zones (default 64).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub zones: Option<u32>,
    /// Zone size in bytes, with an optional unit: K, M, G (KiB, MiB, GiB) or
    /// KB, MB, GB (default 64MiB).
    #[arg(long, value_name = "BYTES", value_parser = crate::parse::parse_byte_size)]
    pub zone_size: Option<u64>,
    /// Writable bytes of every zone, at most the zone size (default: the zone
    /// size).
    #[arg(long, value_name = "BYTES", value_parser = crate::parse::parse_byte_size)]
    pub zone_capacity: Option<u64>,
    /// Logical block size in bytes: the write granularity (default 4096).
    #[arg(long, value_name = "BYTES", value_parser = crate::parse::parse_byte_size)]
    pub block_size: Option<u64>,
    /// Most zones open at once, 0 for no limit (default 14).
    #[arg(long, value_name = "N")]
    pub max_open: Option<u32>,
    /// Most zones active (open or closed) at once, 0 for no limit (default
    /// 14).
    #[arg(long, value_name = "N")]
    pub max_active: Option<u32>,
}

/// A YCSB core workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum YcsbWorkloadArg {
    /// 50% read, 50% update, Zipfian.
    A,
    /// 95% read, 5% update, Zipfian.
    B,
    /// 100% read, Zipfian.
    C,
    /// 95% read, 5% insert, latest.
    D,
    /// 95% scan (1 to 100 records), 5% insert, Zipfian.
    E,
    /// 50% read, 50% read-modify-write, Zipfian.
    F,
}

/// A configuration of the RocksDB read-latency-under-compaction study,
/// scaled to the dataset (docs/bench-ycsb.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum)]
pub enum YcsbPreset {
    /// Block cache of 2.2% of the data (the study's 256 MB), no filters.
    #[value(name = "baseline")]
    Baseline,
    /// Cache of 4.4% of the data (the study's 512 MB), 10-bit Bloom filters on every
    /// level, index and filter blocks charged to the cache.
    #[value(name = "readopt-512mb")]
    ReadOpt512Mb,
    /// As readopt-512mb with a cache of 8.8% of the data (the study's 1 GB).
    #[value(name = "readopt-1gb")]
    ReadOpt1Gb,
    /// readopt-512mb with small write buffers and tables, one compaction
    /// thread and a 200 MB/s flush and compaction rate limit.
    #[value(name = "mild-pressure")]
    MildPressure,
}

/// Records `bench ycsb` loads by default.
pub const YCSB_DEFAULT_RECORDS: u64 = 100_000;

/// `shale bench ycsb`.
#[derive(Debug, Args)]
pub struct BenchYcsbArgs {
    /// The YCSB core workload.
    #[arg(long, value_enum, ignore_case = true, default_value = "a")]
    pub workload: YcsbWorkloadArg,
    /// Records to load (default 100,000 records of 1,000 bytes: a 100 MB
    /// database that loads and runs in well under a minute; the RocksDB study
    /// used 10,000,000).
    #[arg(long, value_name = "N", default_value_t = YCSB_DEFAULT_RECORDS,
          value_parser = clap::value_parser!(u64).range(3..))]
    pub records: u64,
    /// Operations per run (the study ran 1,000,000).
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub operations: u64,
    /// Client threads (default 8, as in the RocksDB study; YCSB's own default
    /// is 1).
    #[arg(long, value_name = "T", default_value_t = 8,
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub threads: u64,
    /// Fields per record.
    #[arg(long, value_name = "N", default_value_t = shale_workload::ycsb::DEFAULT_FIELD_COUNT,
          value_parser = clap::value_parser!(u16).range(1..).map(usize::from))]
    pub field_count: usize,
    /// Bytes per field.
    #[arg(long, value_name = "BYTES", default_value_t = shale_workload::ycsb::DEFAULT_FIELD_LENGTH,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000).map(|v| v as usize))]
    pub field_length: usize,
    /// Directory holding one database per filter layout the runs need
    /// (DIR/fuse9 for shale's defaults, DIR/nofilter for baseline,
    /// DIR/bloom10 for the other presets); each is loaded once and reused
    /// while its record count and field layout match (default:
    /// shale-data/ycsb-<records>-<fields>x<length>; with --zoned, the same
    /// name at the root of the zone file system).
    #[arg(long, value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// The zoned device shale's databases are on (a missing emulated device
    /// is created with the default geometry and formatted; shale only).
    #[command(flatten)]
    pub zoned: ZonedArg,
    /// Run with one preset's options (default: shale's defaults).
    #[arg(long, value_enum, value_name = "PRESET", conflicts_with = "presets")]
    pub preset: Option<YcsbPreset>,
    /// Run several presets in turn and print their comparison: `all` or a
    /// comma-separated list of baseline, readopt-512mb, readopt-1gb,
    /// mild-pressure.
    #[arg(long, value_name = "LIST", value_parser = parse_presets)]
    pub presets: Option<PresetList>,
    /// Runs of each configuration (the study made 5); repetitions take the
    /// configurations in turn (all of them once, then again).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Flush and compaction write limit of mild-pressure, bytes per second
    /// (default 200 MB/s, the study's, not scaled).
    #[arg(long, value_name = "BYTES_PER_SEC", value_parser = clap::value_parser!(u64).range(1..))]
    pub rate_limit: Option<u64>,
    /// Read tables with O_DIRECT (default false: through the page cache,
    /// as RocksDB reads by default).
    #[arg(long, value_name = "BOOL", default_value_t = false, action = clap::ArgAction::Set)]
    pub direct_io: bool,
    /// CPU nice value of shale's compaction threads (0 to 19; default 0,
    /// the engine's default: the process's priority). shale only.
    #[arg(long, value_name = "N", default_value_t = 0,
          value_parser = clap::value_parser!(i32).range(0..=19))]
    pub compaction_nice: i32,
    /// Engines, comma-separated: shale, pebble, rocksdb, leveldb (a peer
    /// through its harness, built by `scripts/peers.sh <engine>`, with
    /// --preset or --presets only). Each configuration runs on every engine
    /// in turn.
    #[arg(long, value_name = "LIST", default_value = "shale", value_parser = parse_engines)]
    pub engines: EngineList,
    /// Seed of the operations and of the record contents.
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// Print the results as one JSON document instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Write results.json and each run's time series (RUN/samples.csv,
    /// samples.json, time_series.svg/.png) into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The time-series sampler (CPU and device columns of the summary come
    /// from it).
    #[command(flatten)]
    pub sample: SampleArgs,
    /// A block-access trace of shale's first run, marked "measure" where
    /// its operations begin.
    #[command(flatten)]
    pub trace: TraceArgs,
}

/// The engines of `bench ycsb --engines`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineList(pub Vec<YcsbEngine>);

/// An engine `bench ycsb` can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum YcsbEngine {
    /// shale, in process.
    Shale,
    /// A peer ([`crate::client::PEERS`]), through its harness's `ycsb` op.
    Peer(&'static str),
}

impl YcsbEngine {
    /// `shale` or the peer's name.
    pub fn name(self) -> &'static str {
        match self {
            YcsbEngine::Shale => "shale",
            YcsbEngine::Peer(name) => name,
        }
    }
}

/// Parses a comma-separated list of engines: shale and the peers.
fn parse_engines(s: &str) -> Result<EngineList, String> {
    let expected = || {
        format!(
            "expected a comma-separated list of shale, {}",
            PEERS.join(", ")
        )
    };
    let mut list = Vec::new();
    for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let lower = name.to_ascii_lowercase();
        let e = match PEERS.iter().find(|&&p| p == lower) {
            _ if lower == "shale" => YcsbEngine::Shale,
            Some(p) => YcsbEngine::Peer(p),
            None => return Err(format!("unknown engine {name:?} ({})", expected())),
        };
        if !list.contains(&e) {
            list.push(e);
        }
    }
    if list.is_empty() {
        return Err(format!("no engine given ({})", expected()));
    }
    Ok(EngineList(list))
}

/// The presets of `--presets`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PresetList(pub Vec<YcsbPreset>);

/// Parses `all` or a comma-separated list of preset names.
fn parse_presets(s: &str) -> Result<PresetList, String> {
    if s.trim().eq_ignore_ascii_case("all") {
        return Ok(PresetList(YcsbPreset::value_variants().to_vec()));
    }
    let mut list = Vec::new();
    for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let p = YcsbPreset::from_str(name, true).map_err(|_| {
            format!(
                "unknown preset {name:?} (expected all, or a comma-separated list of \
                 baseline, readopt-512mb, readopt-1gb, mild-pressure)"
            )
        })?;
        if !list.contains(&p) {
            list.push(p);
        }
    }
    if list.is_empty() {
        return Err(
            "no preset given (expected all, or a comma-separated list of \
                    baseline, readopt-512mb, readopt-1gb, mild-pressure)"
                .into(),
        );
    }
    Ok(PresetList(list))
}

/// Keys of `bench kvdb`'s default dataset.
pub const KVDB_DEFAULT_KEYS: &str = "4000000";

/// The dataset and read workload shared by `bench kvdb` and `bench compare`.
#[derive(Debug, Args)]
pub struct WorkloadArgs {
    /// Keys of the dataset.
    #[arg(long, value_name = "N", default_value_t = 2_000_000)]
    pub keys: u64,
    /// Gets measured per cache size (and engine).
    #[arg(long, value_name = "N", default_value_t = 200_000)]
    pub reads: u64,
    /// Warm-up Gets per cache size (and engine), as a fraction of the keys.
    #[arg(long, value_name = "F", default_value_t = 0.0005)]
    pub warmup: f64,
    /// Reader (and loader) threads (default: the number of cores; 1 to
    /// 1024).
    #[arg(long, value_name = "T",
          value_parser = clap::value_parser!(u32).range(1..=1024).map(|v| v as usize))]
    pub threads: Option<usize>,
    /// Share of Gets for keys that were never loaded.
    #[arg(long, value_name = "F", default_value_t = 0.0)]
    pub missing: f64,
    /// Key scheme: hash (the study's keccak256 keys), hash8 (keccak256 of the
    /// 8 index bytes, shale's keys before 2026-11) or path.
    #[arg(long, value_name = "SCHEME", default_value = "hash")]
    pub scheme: String,
    /// Key distribution of the Gets: uniform, zipf[:theta], hotset[:fraction:probability].
    #[arg(long, value_name = "DIST", default_value = "uniform")]
    pub distribution: String,
    /// Value size in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = shale_workload::DEFAULT_VALUE_SIZE)]
    pub value_size: usize,
    /// Read tables with O_DIRECT where the engine can (shale, RocksDB), so
    /// that physical reads are device reads (`--direct-io false` reads
    /// through the page cache).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub direct_io: bool,
}

/// `shale bench compare`.
#[derive(Debug, Args)]
pub struct BenchCompareArgs {
    /// Engines to compare, comma-separated, each
    /// `engine[:config][@direct|@buffered]`: shale, pebble (config geth),
    /// rocksdb (pebble-like or default), leveldb; `@` gives the engine a read
    /// mode of its own (shale@buffered). An engine whose harness is not built
    /// is reported with the command that builds it.
    #[arg(
        long,
        value_name = "LIST",
        default_value = "shale,pebble,rocksdb,leveldb"
    )]
    pub engines: String,
    /// The dataset and its Gets.
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Cache sizes, comma-separated: a percentage of each engine's own
    /// database (0.1%), bytes (8MiB) for every engine alike, or ip1 / ip2 of
    /// each engine.
    /// (Default: 0.07%,0.1%,0.15%,0.3%,0.6%,1%, unless --memory is given.)
    #[arg(long, value_name = "LIST")]
    pub cache: Option<String>,
    /// Total memory budgets, comma-separated (48MiB,64MiB,96MiB,160MiB): each
    /// engine reads in a control group limited to the budget, after the page
    /// cache is dropped, with a block cache of the budget minus its resident
    /// memory minus --memory-slack (at least 1 MiB; every budget that holds
    /// its resident memory and 1 MiB runs, the slack being what remains).
    /// Needs root (cgroups, drop_caches).
    #[arg(long, value_name = "LIST")]
    pub memory: Option<String>,
    /// Memory of each budget left to the page cache and the engine's growth
    /// (less where the budget cannot hold it).
    #[arg(long, value_name = "SIZE", default_value = "32MiB")]
    pub memory_slack: String,
    /// Block caches each engine tries in each budget, comma-separated, as
    /// shares of its free memory there (the budget minus its resident memory
    /// minus --memory-slack; 1,0.5,0.1): the try with the most Gets/s is the
    /// engine's result for the budget; every try is kept in compare.json.
    #[arg(long, value_name = "LIST", default_value = "1")]
    pub memory_caches: String,
    /// Where each engine's database is kept between runs
    /// (DIR/compare-<engine>-<config>-<keys>-<scheme>-v<value size>).
    #[arg(long, value_name = "DIR", default_value = "shale-data")]
    pub data_dir: PathBuf,
    /// Directory for compare.json, compare.csv, plots and compare.html.
    #[arg(long, value_name = "DIR", default_value = "shale-report/compare")]
    pub out: PathBuf,
    /// Seconds a harness may take to load or inspect a database before it is
    /// killed and reported.
    #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
    pub timeout: u64,
    /// Seconds a harness may take for one read phase (a cache size, or a
    /// budget) before it is killed and reported.
    #[arg(long, value_name = "SECONDS", default_value_t = 900)]
    pub read_timeout: u64,
    /// Print compare.json on standard output instead of the tables.
    #[arg(long)]
    pub json: bool,
    /// The time-series sampler (of the machine: the engines run in their
    /// harnesses' processes).
    #[command(flatten)]
    pub sample: SampleArgs,
}

/// `shale bench kvdb`.
#[derive(Debug, Args)]
// 4,000,000 keys by default, not the 2,000,000 of `bench compare`: 2M keys are
// seven flushes, too few for L0's trigger, so the settled database has every
// table in the last level (no filters) and the default run would never show
// phase 1; at 4M a tenth of the bytes sits in L5 with filters
// (docs/bench-kvdb.md, "Why 4,000,000 keys").
#[command(mut_arg("keys", |a| a.default_value(KVDB_DEFAULT_KEYS)))]
pub struct BenchKvdbArgs {
    /// Database directory (default: ./shale-data/kvdb-<keys>-<scheme>-v<value
    /// size>; with --zoned, /kvdb-<keys>-<scheme>-v<value size> inside the
    /// zone file system). Loaded if it holds no database; reused if it holds
    /// this dataset.
    #[arg(long, value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// The zoned device the database is on (a missing emulated device is
    /// created with the default geometry and formatted).
    #[command(flatten)]
    pub zoned: ZonedArg,
    /// The dataset and its Gets.
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Cache sizes, comma-separated: bytes (8MiB, 512KiB, 1GB, 123456), a
    /// percentage of the database (0.2%), ip1 / ip2, or a range LO..HI[/N]
    /// of N sizes spaced geometrically (10 by default: 0.05%..3% is the
    /// sweep's ten).
    #[arg(long, value_name = "LIST")]
    pub cache: Option<String>,
    /// Sweep from 0.05% to 3% of the database, with IP1, IP2 and points between
    /// them.
    #[arg(long, conflicts_with = "cache")]
    pub sweep: bool,
    /// Directory for results.json, results.csv, plots and report.html.
    #[arg(long, value_name = "DIR", default_value = "shale-report")]
    pub out: PathBuf,
    /// Print results.json on standard output instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Seconds of raw O_DIRECT page reads at random offsets of the table
    /// files, before the runs, to measure the device's own random-read rate
    /// (each run's Gets/s is reported as a share of it); 0 skips it.
    #[arg(long, value_name = "S", default_value_t = 3.0)]
    pub device_limit_seconds: f64,
    /// Threads of the device-limit reads, each with one read in flight: the
    /// queue depth the limit is measured at (default: --threads; 1 to 1024).
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1024).map(|v| v as usize))]
    pub device_limit_depth: Option<usize>,
    /// Keys per read call of each reader thread: 1 (the default) reads with
    /// single Gets; N > 1 with one `multi_get` of N keys at a time, whose
    /// device reads the engine keeps in flight together. A Get's
    /// latency is then its batch's: every key of a `multi_get` is recorded
    /// with the call's latency (1 to 65536).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=65536).map(|v| v as usize))]
    pub batch: usize,
    /// With --batch N: each reader thread reads all its keys in one
    /// `multi_get_each`, which keeps N device reads in flight and draws the
    /// next key as each read completes, rather than one `multi_get` of N
    /// keys after the other (each waiting for its slowest read). A Get's
    /// latency is then from the drawing of its key to its answer.
    #[arg(long)]
    pub stream: bool,
    /// shale's read threads for `multi_get` (`Options::read_threads`;
    /// default: the engine's, 32; 0 looks a batch's keys up one after the
    /// other on the reader thread).
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(0..=1024).map(|v| v as usize))]
    pub read_threads: Option<usize>,
    /// Issue a `multi_get`'s device reads together through io_uring, from
    /// the reader thread (the default, where the kernel offers it); false
    /// looks the keys up on shale's read threads instead.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub io_uring: bool,
    /// The time-series sampler.
    #[command(flatten)]
    pub sample: SampleArgs,
    /// A block-access trace of the first cache size's run.
    #[command(flatten)]
    pub trace: TraceArgs,
}

/// Recording a block-access trace (`shale simulate` and `shale advise
/// --trace` replay it).
#[derive(Clone, Debug, Args)]
pub struct TraceArgs {
    /// Record every block access of the read path (which block, hit or
    /// miss, its cache priority and charge, the Get it belongs to) into
    /// FILE, marked "measure" where the measured Gets begin. `bench kvdb`
    /// traces its first cache size's run: the blocks a Get reads do not
    /// depend on the cache, so one trace serves every size.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Keep the accesses of this share of the blocks (chosen by a hash of
    /// the block, so that a block's accesses are all kept or all left
    /// out), for a smaller trace whose replay scales the cache by the same
    /// share (0 < RATE <= 1).
    #[arg(long, value_name = "RATE", default_value_t = 1.0, requires = "trace")]
    pub trace_sample: f64,
}

/// The time-series sampler's flags, shared by the benches.
#[derive(Debug, Args)]
pub struct SampleArgs {
    /// Seconds between samples of throughput, latency, CPU, device and engine
    /// gauges (written to samples.csv and samples.json in the output
    /// directory).
    #[arg(long, value_name = "S", default_value_t = 5.0)]
    pub sample_interval: f64,
}

impl SampleArgs {
    /// The interval, checked.
    pub fn interval(&self) -> Result<std::time::Duration, String> {
        if self.sample_interval.is_finite() && self.sample_interval >= 0.01 {
            Ok(std::time::Duration::from_secs_f64(self.sample_interval))
        } else {
            Err(format!(
                "--sample-interval must be a number of seconds, at least 0.01 (got {})",
                self.sample_interval
            ))
        }
    }
}

/// Parses a db_bench boolean: `1`, `0`, `true`, `false` (a bare flag is true).
fn parse_flag_bool(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" => Ok(true),
        "0" | "false" | "no" => Ok(false),
        _ => Err(format!("{s:?} is not a boolean: use 1, 0, true or false")),
    }
}

/// The database options shared by `bench db` and `bench db-sweep`, spelt as
/// db_bench spells them (`--value_size=100` or `--value_size 100`).
#[derive(Debug, Args)]
pub struct DbBenchDbArgs {
    /// Entries written by the fill benchmarks, and the key range every
    /// benchmark draws from (keys 0..num).
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub num: u64,
    /// Value size in bytes (values are half compressible, as db_bench's).
    #[arg(
        long = "value_size",
        alias = "value-size",
        value_name = "BYTES",
        default_value_t = 100
    )]
    pub value_size: usize,
    /// Key size in bytes: the key index in decimal, zero-padded to this width
    /// (db_bench's `%016d` at 16). Must hold num-1's digits.
    #[arg(long = "key_size", alias = "key-size", value_name = "BYTES", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub key_size: u32,
    /// Block cache in bytes (db_bench's default, 8 MiB).
    #[arg(long = "cache_size", alias = "cache-size", value_name = "BYTES", default_value_t = 8 << 20)]
    pub cache_size: u64,
    /// Table readers kept open (shale's `max_open_files`; default 1000).
    #[arg(long = "open_files", alias = "open-files", value_name = "N")]
    pub open_files: Option<usize>,
    /// Bloom filter bits per key on every level; 0: no filters; negative or
    /// absent: shale's default policy (binary fuse filters of 9 bits a key on
    /// every level but the last).
    #[arg(
        long = "bloom_bits",
        alias = "bloom-bits",
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub bloom_bits: Option<i64>,
    /// Compression of data blocks: none or lz4.
    #[arg(long = "compression_type", alias = "compression-type", value_name = "TYPE",
          default_value = "none", value_parser = ["none", "lz4"])]
    pub compression_type: String,
    /// Memtable size in bytes (default: shale's, 64 MiB).
    #[arg(
        long = "write_buffer_size",
        alias = "write-buffer-size",
        value_name = "BYTES"
    )]
    pub write_buffer_size: Option<usize>,
    /// Where table metadata lives: none (in the block cache, shale's
    /// default), pin (top-level index and filter pinned, charged to the
    /// cache), index (top-level index and index partitions held with the
    /// table readers, outside the cache, at every level), all-but-last
    /// (every metadata kind held outside the cache at L0-L5) or all (every
    /// kind at every level). Default: as --cache_index_and_filter_blocks
    /// says.
    #[arg(long = "table_metadata", alias = "table-metadata", value_name = "PLACEMENT",
          value_parser = ["none", "pin", "index", "all-but-last", "all"])]
    pub table_metadata: Option<String>,
    /// db_bench's flag: index and filter blocks in the block cache, charged
    /// to it (true: --table_metadata none), or held with the open tables
    /// outside it (false, db_bench's default and RocksDB's and LevelDB's
    /// way: --table_metadata all). --table_metadata, if given, decides.
    #[arg(long = "cache_index_and_filter_blocks", alias = "cache-index-and-filter-blocks",
          value_name = "BOOL", num_args = 0..=1, default_missing_value = "true",
          default_value = "false", value_parser = parse_flag_bool)]
    pub cache_index_and_filter_blocks: bool,
    /// db_bench's flag: verify each block's checksum when it is read from
    /// the file (shale's default). false reads without checking, as
    /// LevelDB's db_bench does: a damaged block is then not detected.
    #[arg(long = "verify_checksum", alias = "verify-checksum", value_name = "BOOL",
          num_args = 0..=1, default_missing_value = "true", default_value = "true",
          value_parser = parse_flag_bool)]
    pub verify_checksum: bool,
    /// db_bench's flag: read table files through read-only memory mappings
    /// (a block the page cache holds is then a copy, not a system call), as
    /// LevelDB's default environment does. A device error while reading a
    /// mapping ends the process (SIGBUS) instead of failing the read. Needs
    /// the regular file system.
    #[arg(long = "mmap_read", alias = "mmap-read", value_name = "BOOL", num_args = 0..=1,
          default_missing_value = "true", default_value = "false", value_parser = parse_flag_bool)]
    pub mmap_read: bool,
    /// Use the database in --db as it is: the fill benchmarks are skipped.
    /// Refused unless it holds db_bench keys of --key_size.
    #[arg(long = "use_existing_db", alias = "use-existing-db", value_name = "BOOL",
          num_args = 0..=1, default_missing_value = "true", default_value = "false",
          value_parser = parse_flag_bool)]
    pub use_existing_db: bool,
    /// Database directory (default: shale-data/dbbench; with --zoned, /db
    /// inside the zone file system). Without --use_existing_db it is removed
    /// and recreated, but only when it is absent, empty or holds a shale
    /// database.
    #[arg(long, value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// The zoned device the database is on (a missing emulated device is
    /// created with the default geometry and formatted).
    #[command(flatten)]
    pub zoned: ZonedArg,
    /// Seed of the key generators (each thread and benchmark derives its own).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
}

/// `shale bench db`.
#[derive(Debug, Args)]
pub struct BenchDbArgs {
    /// Benchmarks to run, in order, comma-separated: fillseq, fillrandom,
    /// overwrite, fillsync, readrandom, readseq, readreverse, readhot,
    /// readmissing, seekrandom, readwhilewriting, readrandomwriterandom,
    /// deleterandom, compact, stats.
    #[arg(long, value_name = "LIST", value_delimiter = ',',
          default_value = "fillseq,fillrandom,overwrite,readrandom,readseq,readreverse,readhot,readmissing,seekrandom,stats",
          value_parser = BENCHMARK_NAMES)]
    pub benchmarks: Vec<String>,
    /// The database and its options.
    #[command(flatten)]
    pub db: DbBenchDbArgs,
    /// A block-access trace of the run's last database, each benchmark
    /// marked by its name (`shale simulate --from-mark readrandom`).
    #[command(flatten)]
    pub trace: TraceArgs,
    /// Operations of each read benchmark per thread (default: --num).
    #[arg(long, value_name = "N")]
    pub reads: Option<u64>,
    /// Threads of each benchmark (each does the whole count, as in db_bench);
    /// readwhilewriting adds one writer.
    #[arg(long, value_name = "T", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: u32,
    /// Time each operation and print a latency histogram after each result
    /// line (without it, as in db_bench, only each benchmark is timed).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true",
          default_value = "false", value_parser = parse_flag_bool)]
    pub histogram: bool,
    /// Share of reads in readrandomwriterandom, in percent.
    #[arg(long, value_name = "PCT", default_value_t = 90,
          value_parser = clap::value_parser!(u32).range(0..=100))]
    pub readwritepercent: u32,
    /// Print every result as one JSON document instead of the text lines.
    #[arg(long)]
    pub json: bool,
    /// Also write results.json, and the time series (samples.csv,
    /// samples.json, time_series.svg/.png), into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The time-series sampler (with --out).
    #[command(flatten)]
    pub sample: SampleArgs,
}

/// `shale bench zns`.
#[derive(Debug, Args)]
// The zoned device's default size follows --num (docs/bench-zns.md).
#[command(mut_arg("zones", |a| a.help(
    "Number of zones of the emulated device (default: the SSD model's logical capacity, \
     the posix run's peak live data over --utilisation, plus one zone per placement slot, \
     the collector's reserve and 2 metadata zones)")))]
pub struct BenchZnsArgs {
    /// Entries each benchmark writes (default: 500 MB of keys and values,
    /// num x (16 + value_size) = 500,000,000, which is 4,310,345 entries of
    /// 100 bytes).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub num: Option<u64>,
    /// Value size in bytes (values are half compressible, as db_bench's).
    #[arg(
        long = "value_size",
        alias = "value-size",
        value_name = "BYTES",
        default_value_t = 100
    )]
    pub value_size: usize,
    /// Memtable size in bytes (default: shale's, 64 MiB).
    #[arg(
        long = "write_buffer_size",
        alias = "write-buffer-size",
        value_name = "BYTES"
    )]
    pub write_buffer_size: Option<usize>,
    /// Database directory of the posix run, on the regular file system
    /// (removed and recreated, but only when it is absent, empty or holds a
    /// shale database).
    #[arg(long, value_name = "DIR", default_value = "shale-data/zns/posix")]
    pub db: PathBuf,
    /// The zoned device of the zoned run, formatted afresh: an emulated
    /// device file (created; an emulated device of another geometry there is
    /// replaced) or a zoned block device (erased).
    #[arg(long, value_name = "PATH", default_value = "shale-data/zns/zns.img")]
    pub device: PathBuf,
    /// Geometry of the emulated device (default: 64 MiB zones, capacity = size,
    /// 4 KiB blocks, 14 open and 14 active zones).
    #[command(flatten)]
    pub geometry: GeometryArgs,
    /// Over-provisioning levels of the conventional-SSD model, comma-separated
    /// fractions of its logical capacity.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "0.07,0.28"
    )]
    pub op: Vec<f64>,
    /// The conventional SSD's logical capacity is the posix run's peak live
    /// data over this fraction (docs/zoned.md, "The conventional-SSD model").
    #[arg(long, value_name = "F", default_value_t = 0.9)]
    pub utilisation: f64,
    /// Erase block of the conventional-SSD model (a multiple of 4 KiB; 1MiB,
    /// 64MiB). Real drives erase superblocks striped over many dies; give the
    /// zone size to compare the two devices at the same erase unit.
    #[arg(long, value_name = "BYTES", default_value = "1MiB",
          value_parser = crate::parse::parse_byte_size)]
    pub erase_block: u64,
    /// Seed of the key generators.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Print the results as one JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write results.json into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `shale bench db-sweep`.
#[derive(Debug, Args)]
pub struct DbSweepArgs {
    /// The option swept: open_files or cache_size.
    #[arg(long, value_name = "NAME", value_parser = ["open_files", "cache_size"])]
    pub param: String,
    /// Its values, comma-separated (default: 0,10,100,1000,10000 for
    /// open_files; 1 KB to 1 GB by factors of 10 for cache_size).
    #[arg(long, value_name = "LIST")]
    pub values: Option<String>,
    /// Read benchmarks run at each value, comma-separated (readrandom,
    /// readhot, seekrandom, readmissing, readseq, readreverse).
    #[arg(long, value_name = "LIST", value_delimiter = ',',
          default_value = "readrandom,readhot,seekrandom",
          value_parser = SWEEP_BENCHMARK_NAMES)]
    pub benchmarks: Vec<String>,
    /// The database and its options (the swept one is overridden).
    #[command(flatten)]
    pub db: DbBenchDbArgs,
    /// Operations of each benchmark at each value, per thread.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub reads: u64,
    /// Reader threads.
    #[arg(long, value_name = "T", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: u32,
    /// Engines, comma-separated: shale (in this process), pebble, rocksdb,
    /// leveldb (a peer through its harness, built by `scripts/peers.sh
    /// <engine>`; its database is --db with `-<engine>` appended).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "shale",
          value_parser = ["shale", PEERS[0], PEERS[1], PEERS[2]])]
    pub engines: Vec<String>,
    /// Seconds a harness may take for one request (the fill, or one value).
    #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
    pub timeout: u64,
    /// Directory for sweep.csv, sweep.json, the charts and the time series.
    #[arg(long, value_name = "DIR", default_value = "shale-report/db-sweep")]
    pub out: PathBuf,
    /// Print sweep.json on standard output instead of the table.
    #[arg(long)]
    pub json: bool,
    /// The time-series sampler.
    #[command(flatten)]
    pub sample: SampleArgs,
}

/// `shale advise`.
#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// Database directory (must exist; optional with --trace, whose header
    /// describes the database it was recorded on).
    #[arg(long, value_name = "DIR", required_unless_present = "trace")]
    pub db: Option<PathBuf>,
    /// Target block-cache misses per Get (default: about 1, the smallest cache
    /// that lets a Get read only its data block); with --trace, block reads
    /// per Get on the trace's access pattern.
    #[arg(long, alias = "target", value_name = "X")]
    pub target_io: Option<f64>,
    /// A block-access trace (`bench kvdb --trace FILE`): also advise the
    /// smallest cache whose replay of it reads at most the target per Get,
    /// next to the uniform-key advice. With --db, the trace must have been
    /// recorded on that database's tables.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// A cache budget (bytes, or a percentage of the database: 0.1%): print
    /// the filter bits per level (binary fuse filters) that fit the filters
    /// and every index block into it with the fewest expected reads per
    /// Get, to load the database with (`shale load --filter-bits`).
    #[arg(long, value_name = "SIZE", requires = "db")]
    pub budget: Option<String>,
    /// Also project IP1, IP2 and the advised cache to these key counts,
    /// comma-separated, with k, M, B (or G), T suffixes (200M,2B,20B), from the
    /// database's measured per-key costs and the picker's level targets, next
    /// to the study's Pebble figures where it published some.
    #[arg(long, value_name = "N,...", value_delimiter = ',',
          value_parser = crate::parse::parse_key_count)]
    pub keys: Vec<u64>,
    /// Run a short bench at the advised size and print the measured figure.
    #[arg(long)]
    pub verify: bool,
    /// Gets of the verification run.
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    pub reads: u64,
}

/// `--zoned DEVICE`: run on the zone file system of a zoned device.
#[derive(Clone, Debug, Default, Args)]
pub struct ZonedArg {
    /// Run on the zone file system (ZoneFs) of this zoned device instead of
    /// the regular file system: an emulated device file or a zoned block
    /// device (/dev/nvme0n1), formatted by `shale zoned mkfs`. --db then
    /// names a directory inside it (default /db).
    #[arg(long, value_name = "DEVICE")]
    pub zoned: Option<PathBuf>,
}

/// The format of a trace `shale simulate` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TraceFormat {
    /// shale's block-access trace (`docs/format/block-trace.md`).
    Shale,
    /// A RocksDB 7.x block-cache trace (`DB::StartBlockCacheTrace`, the
    /// RocksDB harness's read `trace`), with its `.measure` side file.
    Rocksdb,
}

/// The cache `shale simulate` replays through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SimPolicy {
    /// shale's own block cache (shards, priority pools, pinned bytes).
    Shale,
    /// One plain LRU list charged in bytes.
    Lru,
}

/// `shale simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The block-access trace to replay (`bench kvdb --trace FILE`, or a
    /// RocksDB block-cache trace).
    #[arg(long, value_name = "FILE")]
    pub trace: PathBuf,
    /// The trace's format; default: told by its first bytes.
    #[arg(long, value_enum)]
    pub format: Option<TraceFormat>,
    /// The cache to replay through; default: shale's for a shale trace,
    /// lru for a RocksDB one.
    #[arg(long, value_enum)]
    pub policy: Option<SimPolicy>,
    /// Cache sizes, as for `bench kvdb --cache` (bytes, a percentage of the
    /// database, ip1 / ip2, or a range LO..HI[/N]); default: the sweep of
    /// `bench kvdb --sweep` (0.05% to 3%, IP1, IP2 and three sizes between),
    /// or for a trace that does not know its database (RocksDB's), 12
    /// sizes from 1% to 100% of the bytes of the blocks it touches.
    #[arg(long, value_name = "LIST")]
    pub cache: Option<String>,
    /// A `bench kvdb` results.json: its cache sizes are replayed too, and
    /// each is shown with the misses per Get it measured and the
    /// difference.
    #[arg(long, value_name = "FILE")]
    pub measured: Option<PathBuf>,
    /// Count from the first mark of this label (records before it warm the
    /// cache); default: from "measure" where the trace has it (bench kvdb
    /// marks the end of its warm-up), else the whole trace.
    #[arg(long, value_name = "LABEL")]
    pub from_mark: Option<String>,
    /// Sizes replayed at once (default: the cores).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Directory for simulate.json, simulate.csv and the chart.
    #[arg(long, value_name = "DIR", default_value = "shale-simulate")]
    pub out: PathBuf,
    /// Print simulate.json on standard output instead of the table.
    #[arg(long)]
    pub json: bool,
}
