//! The harness protocol: how `shale bench compare` drives an engine (shale,
//! Pebble, RocksDB, LevelDB) in a process of its own. Documented for harness
//! authors in `docs/harness-protocol.md`; this module is its Rust definition.
//!
//! A harness reads one [`Request`] as JSON on standard input and writes one
//! JSON reply on standard output: the reply type of the request's `op` on
//! success (exit code 0), or an [`ErrorReply`] (exit code 1). Progress and
//! logs go to standard error.
//!
//! Every harness generates the dataset itself from [`DatasetSpec`] (keys of
//! the scheme, values of [`crate::Dataset`]), byte-identical in every language
//! (the vectors of `peers/testdata/vectors.json`). The Gets of a read phase
//! come from files of little-endian `u64` key indices written by the driver: an
//! index below `keys` must be found with its dataset value, any other must be
//! absent; a harness that sees anything else fails the phase.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Version of the protocol; a harness refuses a request of another version.
pub const PROTOCOL_VERSION: u32 = 1;

/// The dataset a request is about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatasetSpec {
    /// Keys `0..keys` are loaded.
    pub keys: u64,
    /// Key scheme name (`hash`, `hash8`, `path`; see [`crate::scheme`]).
    pub scheme: String,
    /// Bytes per value.
    pub value_size: usize,
    /// Seed of the values.
    pub seed: u64,
}

/// One request to a harness.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Must be [`PROTOCOL_VERSION`].
    pub protocol: u32,
    /// What to do.
    #[serde(flatten)]
    pub op: Op,
}

/// The operations, tagged by `"op"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Name, version and configurations of the engine: [`InfoReply`].
    Info,
    /// Create a database in `dir` and load the dataset: [`LoadReply`].
    Load(LoadRequest),
    /// Open the database in `dir`, check that it holds the dataset, and
    /// describe it: [`InspectReply`].
    Inspect(OpenRequest),
    /// Measure Gets: [`ReadReply`].
    Read(ReadRequest),
    /// Run db_bench-style benchmarks (`shale bench db-sweep --engines`):
    /// [`DbBenchReply`]. Optional: shale's own harness does not serve it
    /// (`shale bench db` runs shale in process).
    #[serde(rename = "dbbench")]
    DbBench(DbBenchRequest),
    /// Load or run one of YCSB's core workloads (`shale bench ycsb
    /// --engines`): [`YcsbLoadReply`] or [`YcsbReply`]. Optional: shale's
    /// own harness does not serve it (`shale bench ycsb` runs shale in
    /// process).
    Ycsb(YcsbRequest),
}

impl Op {
    /// The op's name on the wire (`"op"`), as [`InfoReply::ops`] lists it.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Info => "info",
            Op::Load(_) => "load",
            Op::Inspect(_) => "inspect",
            Op::Read(_) => "read",
            Op::DbBench(_) => "dbbench",
            Op::Ycsb(_) => "ycsb",
        }
    }
}

/// The phase of a [`YcsbRequest`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum YcsbPhase {
    /// Create the database in `dir` (replacing none: the directory must be
    /// new or empty) and insert records `0..records`.
    Load,
    /// Open the loaded database and run `operations` operations of the
    /// workload.
    Run,
}

/// One phase of a YCSB workload on a peer, with the options of
/// [`YcsbSettings`]. Keys, records and operation sequences are
/// `crate::ycsb`'s (checked against `peers/testdata/ycsb-vectors.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct YcsbRequest {
    /// Load or run.
    pub phase: YcsbPhase,
    /// Database directory.
    pub dir: PathBuf,
    /// The core workload: `a` to `f`.
    pub workload: String,
    /// Records loaded.
    pub records: u64,
    /// Fields per record.
    pub field_count: usize,
    /// Bytes per field.
    pub field_length: usize,
    /// Seed of the values and of the operation sequence.
    pub seed: u64,
    /// Client threads.
    pub threads: usize,
    /// Operations of the run (over all threads).
    pub operations: u64,
    /// Read table files with `O_DIRECT`.
    pub direct_io: bool,
    /// The options to open the database with.
    pub settings: YcsbSettings,
}

/// What a YCSB run's database is opened with (reported with each run).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct YcsbSettings {
    /// `default` (the engine's options) or the preset's name.
    pub preset: String,
    /// The filter layout of the database: fuse9, nofilter or bloom10.
    pub filters: String,
    /// Block cache bytes.
    pub block_cache_bytes: u64,
    /// Top-level indexes and filter indexes held by the table readers and
    /// charged to the cache.
    pub pin_table_metadata: bool,
    /// Every table's index (and filter, if any) held by its open reader,
    /// outside the cache and not charged to it: RocksDB's default
    /// (`cache_index_and_filter_blocks` false), which the study's baseline
    /// keeps.
    pub metadata_with_tables: bool,
    /// Memtable bytes.
    pub write_buffer_size: usize,
    /// Compaction output target at L0 (doubling per level).
    pub target_file_size_base: u64,
    /// Target size of the base level (the level L0 compacts into): shale's
    /// `base_level_bytes`, RocksDB's `max_bytes_for_level_base`. Fixed by
    /// the database's filter layout.
    pub base_level_bytes: u64,
    /// Background threads (one flushes, the others compact).
    pub max_background_jobs: usize,
    /// Flush and compaction bytes per second, if limited.
    pub compaction_rate_limit: Option<u64>,
    /// shale's `compaction_nice` (0: the process's priority).
    pub compaction_nice: i32,
}

/// Latencies of one operation kind in a YCSB run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct YcsbOpResult {
    /// Operations done.
    pub count: u64,
    /// Of them per second of the run.
    pub ops_per_sec: f64,
    /// Mean latency, µs.
    pub mean_us: f64,
    /// Median, µs.
    pub p50_us: f64,
    /// 95th percentile, µs.
    pub p95_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// 99.9th percentile, µs.
    pub p999_us: f64,
}

/// Reply to an [`Op::Ycsb`] load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct YcsbLoadReply {
    /// Engine, version and configuration.
    pub engine: String,
    /// Wall time of the load.
    pub seconds: f64,
    /// The [`YcsbSettings`] fields the engine has no counterpart for.
    #[serde(default)]
    pub settings_ignored: Vec<String>,
}

/// Reply to an [`Op::Ycsb`] run. A counter the engine does not keep is
/// `null`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct YcsbReply {
    /// Engine, version and configuration.
    pub engine: String,
    /// Operations done (fewer than asked if the harness was stopped).
    pub operations: u64,
    /// Wall time of the operations.
    pub seconds: f64,
    /// `operations / seconds`.
    pub ops_per_sec: f64,
    /// Latencies per operation kind (`read`, `update`, `insert`, `scan`,
    /// `read-modify-write`).
    pub ops: std::collections::BTreeMap<String, YcsbOpResult>,
    /// Largest pending-compaction estimate seen.
    pub pending_compaction_bytes_max: Option<u64>,
    /// Write stalls.
    pub stall_count: Option<u64>,
    /// Time stalled, µs.
    pub stall_micros: Option<u64>,
    /// Gets the operations made.
    #[serde(default)]
    pub gets: Option<u64>,
    /// Blocks those Gets read from files.
    #[serde(default)]
    pub block_reads: Option<u64>,
    /// Block-cache lookups of those Gets per level, L0 to L6.
    #[serde(default)]
    pub level_lookups: Option<Vec<u64>>,
    /// Of them, misses.
    #[serde(default)]
    pub level_misses: Option<Vec<u64>>,
    /// The [`YcsbSettings`] fields the engine has no counterpart for.
    #[serde(default)]
    pub settings_ignored: Vec<String>,
}

/// One benchmark of a [`DbBenchRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DbBenchStep {
    /// Its db_bench name: fillseq, fillrandom, overwrite, readrandom,
    /// readhot, readmissing, seekrandom, readseq or readreverse.
    pub name: String,
    /// Seed of its key generators: thread `t` draws keys with
    /// `Rng::new(seed * 0x9E3779B97F4A7C15 + t + 1)` (wrapping), as
    /// `shale bench db` does, so both engines read the same keys.
    pub seed: u64,
}

/// Run db_bench-style benchmarks on one database, in order. Keys are the
/// index in decimal zero-padded to `key_size` bytes; `readmissing` appends
/// a `.`; `readhot` draws from the first `ceil(num / 100)` keys. Each of
/// `threads` threads does `num` writes or `reads` reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DbBenchRequest {
    /// Database directory.
    pub dir: PathBuf,
    /// Engine configuration.
    pub config: String,
    /// Replace the database in the directory with a new one: the engine's
    /// own destroy first, under its lock (refused, deleting nothing, while
    /// another process has it open), then a create.
    pub fresh: bool,
    /// After the benchmarks, flush and wait for compactions.
    pub settle: bool,
    /// The benchmarks.
    pub benchmarks: Vec<DbBenchStep>,
    /// Key range and writes per thread.
    pub num: u64,
    /// Reads per thread.
    pub reads: u64,
    /// Key bytes.
    pub key_size: usize,
    /// Value bytes.
    pub value_size: usize,
    /// Threads per benchmark.
    pub threads: usize,
    /// Block-cache capacity in bytes.
    pub cache_bytes: u64,
    /// Table files kept open (`-1`: the configuration's).
    pub open_files: i64,
    /// Bloom filter bits a key (`0`: none; `-1`: the configuration's).
    pub bloom_bits: i64,
    /// `none` (blocks stored uncompressed) or `default` (the configuration's).
    pub compression: String,
}

/// One benchmark's figures in a [`DbBenchReply`]; counters are `null` where
/// the engine cannot tell them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DbBenchResult {
    /// The benchmark.
    pub name: String,
    /// Operations over all threads.
    pub ops: u64,
    /// Wall time.
    pub seconds: f64,
    /// Wall time x threads / ops, in microseconds.
    pub micros_per_op: f64,
    /// Reads that found their key (seekrandom: landed on it).
    pub found: u64,
    /// Key and value bytes written or found.
    pub bytes: u64,
    /// Block-cache hits of the reading threads.
    pub block_cache_hits: Option<u64>,
    /// Block-cache misses of the reading threads.
    pub block_cache_misses: Option<u64>,
    /// Table-cache hits.
    pub table_cache_hits: Option<u64>,
    /// Table-cache misses (tables opened by the reading threads).
    pub table_cache_misses: Option<u64>,
}

/// Reply to [`Op::DbBench`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DbBenchReply {
    /// Engine, version and configuration.
    pub engine: String,
    /// One per benchmark, in order.
    pub results: Vec<DbBenchResult>,
    /// Seconds of settling (0 without `settle`).
    pub settle_seconds: f64,
}

/// Which database, of which engine configuration, holding which dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenRequest {
    /// Database directory.
    pub dir: PathBuf,
    /// The dataset it holds.
    pub dataset: DatasetSpec,
    /// Engine configuration (one of [`InfoReply::configs`]).
    pub config: String,
}

/// Load the dataset into a new database.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadRequest {
    /// Database, dataset and configuration.
    #[serde(flatten)]
    pub target: OpenRequest,
    /// Writer threads, each writing batches of `batch` consecutive keys
    /// (which thread writes which batch is the harness's choice).
    pub threads: usize,
    /// Keys per write batch (keys `b * batch .. (b + 1) * batch`), no sync.
    pub batch: u64,
}

/// Measure Gets at one block-cache size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadRequest {
    /// Database, dataset and configuration.
    #[serde(flatten)]
    pub target: OpenRequest,
    /// Block-cache capacity in bytes.
    pub cache_bytes: u64,
    /// Reader threads.
    pub threads: usize,
    /// Key indices of the warm-up Gets (not measured), read by the threads
    /// like `reads_file`.
    pub warmup_file: PathBuf,
    /// Key indices of the measured Gets: thread `t` of `T` takes the `t`-th
    /// contiguous slice, of `n / T` indices plus one if `t < n % T`.
    pub reads_file: PathBuf,
    /// Read table files with `O_DIRECT` if the engine can (else ignored, and
    /// [`ReadReply::direct_io`] says so).
    pub direct_io: bool,
    /// Record a block-access trace of the Gets (warm-up, then a `measure`
    /// mark, then the measured ones) into this file, in the engine's own
    /// trace format; a harness that cannot fails the request. Absent: no
    /// trace (and not sent, so harnesses that predate it read the request
    /// as before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<PathBuf>,
}

/// Reply to [`Op::Info`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InfoReply {
    /// Engine name: `shale`, `pebble`, `rocksdb`, `leveldb`.
    pub engine: String,
    /// Engine version, e.g. `v1.1.5`.
    pub version: String,
    /// Configurations the harness knows; the first is the default.
    pub configs: Vec<String>,
    /// The engine can read table files with `O_DIRECT`.
    pub direct_io: bool,
    /// The ops the harness serves ([`Op::name`]); `load`, `inspect` and
    /// `read` are served by every harness, so a harness older than this
    /// list is taken to serve those.
    #[serde(default = "InfoReply::required_ops")]
    pub ops: Vec<String>,
}

impl InfoReply {
    /// The ops every harness serves.
    pub fn required_ops() -> Vec<String> {
        ["info", "load", "inspect", "read"]
            .map(String::from)
            .to_vec()
    }

    /// True if the harness serves `op` (an [`Op::name`]).
    pub fn serves(&self, op: &str) -> bool {
        self.ops.iter().any(|o| o == op)
    }
}

/// Files and bytes of one level (or of L0's sublevels together).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelShape {
    /// Level number.
    pub level: u32,
    /// Table files.
    pub files: u64,
    /// Bytes of its table files.
    pub bytes: u64,
}

/// What a database is made of, as the harness's engine reports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DbShape {
    /// Bytes of filters, indexes and data (see [`Composition`]). An engine
    /// without partitioned indexes reports its whole index as top-level.
    pub composition: Composition,
    /// Levels from 0 down, empty levels included.
    pub levels: Vec<LevelShape>,
}

/// Reply to [`Op::Load`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadReply {
    /// Engine name, version and configuration, e.g. `pebble v1.1.5 (geth)`.
    pub engine: String,
    /// Seconds from open to the end of the settle (flush and compactions).
    pub seconds: f64,
    /// Bytes of keys and values written by the load.
    pub user_bytes: u64,
    /// Bytes of table files written by flushes and compactions.
    pub table_bytes_written: u64,
    /// Bytes written to the write-ahead log.
    pub wal_bytes: u64,
    /// `table_bytes_written / user_bytes`: write amplification without the
    /// WAL, counted the same way for every engine.
    pub write_amp: f64,
    /// The database after the load settled.
    pub shape: DbShape,
}

/// Reply to [`Op::Inspect`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InspectReply {
    /// Engine name, version and configuration.
    pub engine: String,
    /// The database.
    pub shape: DbShape,
}

/// Counters of one block kind over the measured Gets; `None` where the
/// engine cannot tell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindCounts {
    /// Lookups the block cache answered.
    pub cache_hits: Option<u64>,
    /// Lookups the block cache could not answer.
    pub cache_misses: Option<u64>,
    /// Reads issued to the file system for this kind.
    pub physical_reads: Option<u64>,
}

/// Counters per block kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockCounts {
    /// Bloom filter blocks (or partitions).
    pub filter: KindCounts,
    /// Top-level index blocks (a whole index where it is not partitioned).
    pub top_index: KindCounts,
    /// Index partitions.
    pub index: KindCounts,
    /// Data blocks.
    pub data: KindCounts,
}

/// Hits and misses of a cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HitMiss {
    /// Lookups answered.
    pub hits: u64,
    /// Lookups not answered.
    pub misses: u64,
}

/// Get latency percentiles over the measured Gets, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
}

/// Reply to [`Op::Read`]. Every counter covers the measured Gets only.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadReply {
    /// Engine name, version and configuration.
    pub engine: String,
    /// Block-cache capacity used.
    pub cache_bytes: u64,
    /// Whether table files were read with `O_DIRECT`.
    pub direct_io: bool,
    /// Gets measured.
    pub gets: u64,
    /// Gets that found their key.
    pub found: u64,
    /// Wall-clock seconds of the measured Gets.
    pub seconds: f64,
    /// Get latency.
    pub latency: Latency,
    /// Block-cache counters per block kind.
    pub blocks: BlockCounts,
    /// Reads of table metadata when tables were opened (footers,
    /// properties, and where the engine reads them then, indexes and filters).
    pub table_open_reads: Option<u64>,
    /// The table cache (open table files), where the engine counts it.
    pub table_cache: Option<HitMiss>,
    /// Read calls the engine made on table files, counted by the harness's
    /// file-system wrapper (or the engine's own counter).
    pub read_requests: u64,
    /// Bytes those calls asked for.
    pub read_bytes: u64,
    /// Bytes the kernel read from the device for the process
    /// (`/proc/self/io` `read_bytes`); `None` where unavailable.
    pub device_read_bytes: Option<u64>,
    /// Resident set size at the end of the phase (`/proc/self/status`
    /// `VmRSS`).
    pub rss_bytes: Option<u64>,
}

/// The reply of a failed request (exit code 1).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorReply {
    /// What went wrong, in one line.
    pub error: String,
}

/// Writes `indices` as a file of little-endian `u64`s.
pub fn write_indices(path: &Path, indices: &[u64]) -> std::io::Result<()> {
    let mut bytes = Vec::with_capacity(indices.len() * 8);
    for i in indices {
        bytes.extend_from_slice(&i.to_le_bytes());
    }
    std::fs::write(path, bytes)
}

/// Reads a file of little-endian `u64` key indices.
pub fn read_indices(path: &Path) -> std::io::Result<Vec<u64>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.read_to_end(&mut bytes)?;
    let chunks = bytes.chunks_exact(8);
    if !chunks.remainder().is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{}: {} bytes is not a whole number of 8-byte indices",
                path.display(),
                bytes.len()
            ),
        ));
    }
    Ok(chunks
        .map(|c| {
            let mut le = [0u8; 8];
            le.copy_from_slice(c);
            u64::from_le_bytes(le)
        })
        .collect())
}

/// The slice of `n` Gets that thread `t` of `threads` runs: `n / threads`
/// indices, plus one for the first `n % threads` threads, contiguous.
pub fn thread_slice(n: usize, threads: usize, t: usize) -> std::ops::Range<usize> {
    let threads = threads.max(1);
    let (share, extra) = (n / threads, n % threads);
    let start = t * share + t.min(extra);
    start..start + share + usize::from(t < extra)
}

/// What the database is made of (bytes over all its tables).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Composition {
    /// Entries in tables.
    pub entries: u64,
    /// Bytes of user keys and values in tables.
    pub raw_key_bytes: u64,
    /// Bytes of values in tables.
    pub raw_value_bytes: u64,
    /// Bytes of all table files.
    pub db_bytes: u64,
    /// Bytes of data blocks.
    pub data_bytes: u64,
    /// Filters of all levels, and of all levels but the last.
    pub filter_bytes: u64,
    /// Filters of all levels but the last (what a Get consults).
    pub filter_bytes_except_last_level: u64,
    /// Top-level indexes, and all index blocks (partitions + top-level).
    pub top_level_index_bytes: u64,
    /// All index blocks: partitions and top-level indexes.
    pub index_bytes: u64,
}

impl Composition {
    /// First inflection point: what a cache must hold for a Get to read only an
    /// index partition and a data block (non-last-level filters and top-level
    /// indexes).
    pub fn ip1_bytes(&self) -> u64 {
        self.filter_bytes_except_last_level + self.top_level_index_bytes
    }

    /// Second inflection point: what a cache must hold for a Get to read only
    /// its data block (non-last-level filters and every index block).
    pub fn ip2_bytes(&self) -> u64 {
        self.filter_bytes_except_last_level + self.index_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> OpenRequest {
        OpenRequest {
            dir: "/data/db".into(),
            dataset: DatasetSpec {
                keys: 1000,
                scheme: "hash".into(),
                value_size: 110,
                seed: 0,
            },
            config: "geth".into(),
        }
    }

    fn dbbench() -> Op {
        Op::DbBench(DbBenchRequest {
            dir: "/data/db".into(),
            config: "default".into(),
            fresh: true,
            settle: true,
            benchmarks: vec![DbBenchStep {
                name: "fillrandom".into(),
                seed: 7,
            }],
            num: 1000,
            reads: 100,
            key_size: 16,
            value_size: 100,
            threads: 1,
            cache_bytes: 1000,
            open_files: -1,
            bloom_bits: 10,
            compression: "none".into(),
        })
    }

    #[test]
    fn the_dbbench_op_is_tagged_dbbench() {
        let r = Request {
            protocol: PROTOCOL_VERSION,
            op: dbbench(),
        };
        let v: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&r).expect("encodes")).expect("JSON");
        assert_eq!(v["op"], "dbbench");
        assert_eq!(v["benchmarks"][0]["name"], "fillrandom");
        assert_eq!(v["open_files"], -1);
        let reply: DbBenchReply = serde_json::from_str(
            r#"{"engine":"leveldb 1.23 (default)","settle_seconds":0,
                "results":[{"name":"readrandom","ops":10,"seconds":0.1,"micros_per_op":10,
                "found":6,"bytes":696,"block_cache_hits":1,"block_cache_misses":2,
                "table_cache_hits":null,"table_cache_misses":1}]}"#,
        )
        .expect("a harness's reply parses");
        assert_eq!(reply.results[0].table_cache_hits, None);
        assert_eq!(reply.results[0].table_cache_misses, Some(1));
    }

    #[test]
    fn requests_round_trip_with_the_op_as_a_tag() {
        let requests = [
            Op::Info,
            Op::Inspect(target()),
            Op::Load(LoadRequest {
                target: target(),
                threads: 2,
                batch: 1000,
            }),
            Op::Read(ReadRequest {
                target: target(),
                cache_bytes: 8 << 20,
                threads: 2,
                warmup_file: "/tmp/w".into(),
                reads_file: "/tmp/r".into(),
                direct_io: true,
                trace: Some("/tmp/t.trc".into()),
            }),
            dbbench(),
        ];
        for op in requests {
            let r = Request {
                protocol: PROTOCOL_VERSION,
                op,
            };
            let json = serde_json::to_string(&r).expect("encode");
            let back: Request = serde_json::from_str(&json).expect("decode");
            assert_eq!(back, r, "{json}");
        }
        // The documented wire form: flat objects tagged by "op".
        let read: Request = serde_json::from_str(
            r#"{"protocol":1,"op":"read","dir":"/d","dataset":{"keys":5,"scheme":"hash",
            "value_size":110,"seed":0},"config":"default","cache_bytes":4096,"threads":1,
            "warmup_file":"/w","reads_file":"/r","direct_io":false}"#,
        )
        .expect("documented form");
        assert!(matches!(
            read.op,
            Op::Read(ReadRequest {
                cache_bytes: 4096,
                ..
            })
        ));
        let info: Request = serde_json::from_str(r#"{"protocol":1,"op":"info"}"#).expect("info");
        assert_eq!(info.op, Op::Info);
        assert!(serde_json::from_str::<Request>(r#"{"protocol":1,"op":"drop"}"#).is_err());
    }

    #[test]
    fn replies_round_trip_and_unknown_counters_are_null() {
        let reply = ReadReply {
            engine: "leveldb 1.23 (default)".into(),
            gets: 10,
            blocks: BlockCounts {
                data: KindCounts {
                    physical_reads: Some(9),
                    ..Default::default()
                },
                ..Default::default()
            },
            ..Default::default()
        };
        let json = serde_json::to_string(&reply).expect("encode");
        assert!(json.contains(r#""cache_hits":null"#), "{json}");
        let back: ReadReply = serde_json::from_str(&json).expect("decode");
        assert_eq!(back, reply);
        let load = LoadReply {
            shape: DbShape {
                levels: vec![LevelShape {
                    level: 6,
                    files: 3,
                    bytes: 9,
                }],
                ..Default::default()
            },
            ..Default::default()
        };
        let json = serde_json::to_string(&load).expect("encode");
        assert_eq!(
            serde_json::from_str::<LoadReply>(&json).expect("decode"),
            load
        );
    }

    #[test]
    fn index_files_round_trip_and_threads_split_them_contiguously() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("reads.bin");
        let indices = vec![0, 1, u64::MAX, 1 << 40];
        write_indices(&p, &indices).expect("write");
        assert_eq!(std::fs::read(&p).expect("read").len(), 32);
        assert_eq!(read_indices(&p).expect("read"), indices);
        std::fs::write(&p, [0u8; 9]).expect("write");
        assert!(read_indices(&p).is_err());

        let slices: Vec<_> = (0..3).map(|t| thread_slice(10, 3, t)).collect();
        assert_eq!(slices, vec![0..4, 4..7, 7..10]);
        assert_eq!(thread_slice(2, 4, 3), 2..2);
    }
}
