//! The result schema of `shale bench kvdb` (`results.json`, documented in
//! `docs/bench-kvdb.md`): one document per bench, one run per cache size. Every
//! engine harness (shale, Pebble, RocksDB) writes this same shape so that the
//! reports and comparisons read them alike.

use serde::{Deserialize, Serialize};

use crate::csv_rows::{fixed, to_csv};

/// The three phases of the study's I/O-per-Get curve.
///
/// * 1: the cache holds less than IP1 (non-last-level filters and top-level
///   indexes): Gets read metadata from disk, well above 2 I/Os.
/// * 2: between IP1 and IP2: about 2 I/Os (an index partition and a data block).
/// * 3: at or above IP2 (all index blocks fit too): about 1 I/O (the data block).
pub fn phase(cache_bytes: u64, ip1_bytes: u64, ip2_bytes: u64) -> u8 {
    if cache_bytes < ip1_bytes {
        1
    } else if cache_bytes < ip2_bytes {
        2
    } else {
        3
    }
}

/// Block-cache hit rates (hits / lookups) per block kind; `None` without
/// lookups of that kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HitRates {
    /// Bloom filter blocks.
    pub filter: Option<f64>,
    /// Top-level index blocks.
    pub top_index: Option<f64>,
    /// Index partitions.
    pub index: Option<f64>,
    /// Data blocks.
    pub data: Option<f64>,
    /// All kinds together.
    pub overall: Option<f64>,
}

/// One cache size of a bench.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Block cache capacity for this run.
    pub cache_bytes: u64,
    /// The same as a percentage of `db_bytes`.
    pub cache_percent: f64,
    /// 1, 2 or 3 (see [`phase`]).
    pub phase: u8,
    /// Gets measured (after warm-up).
    pub gets: u64,
    /// Gets that found their key.
    pub found: u64,
    /// The study's "I/Os per Get": block-cache misses / Gets.
    pub io_per_get: f64,
    /// Read requests the engine issued to its file system / Gets.
    pub physical_reads_per_get: f64,
    /// Bytes the operating system read from the device for the process
    /// (`/proc/self/io` `read_bytes`) / 4096 / Gets; `None` where unavailable.
    pub device_reads_per_get: Option<f64>,
    /// Block-cache hit rates per block kind.
    pub hit_rate: HitRates,
    /// Gets per second over all threads.
    pub ops_per_sec: f64,
    /// Get latency percentiles in microseconds.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// `ops_per_sec` as a share of the device's own random-read rate
    /// ([`BenchResults::device_limit`]); `None` when that was not measured.
    #[serde(default)]
    pub device_limit_share: Option<f64>,
}

/// The device's own random-read rate over the database's table files: raw
/// `O_DIRECT` reads of one page at random page offsets, by as many threads as
/// the Gets use. A Get that costs one device read cannot go faster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceLimit {
    /// Page reads per second over all threads.
    pub reads_per_sec: f64,
    /// Reader threads.
    pub threads: usize,
    /// Bytes per read (one page).
    pub page_bytes: u64,
    /// Reads made.
    pub reads: u64,
    /// How long they took, in seconds.
    pub seconds: f64,
}

impl DeviceLimit {
    /// `ops_per_sec` as a share of this limit; `None` for a limit of 0.
    pub fn share(&self, ops_per_sec: f64) -> Option<f64> {
        (self.reads_per_sec > 0.0).then(|| ops_per_sec / self.reads_per_sec)
    }
}

/// The document `results.json` holds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BenchResults {
    /// Engine name and version, e.g. `shale 0.1.0`.
    pub engine: String,
    /// Keys loaded.
    pub keys: u64,
    /// Value size in bytes.
    pub value_size: usize,
    /// Key scheme (`hash` or `path`).
    pub scheme: String,
    /// Key distribution of the reads (`uniform`, `zipf`, `hotset`).
    pub distribution: String,
    /// Share of reads of keys that were never loaded.
    pub missing: f64,
    /// Reader threads.
    pub threads: usize,
    /// Keys per read call of each reader thread: 1, single Gets; more, one
    /// `multi_get` of that many keys at a time (each Get then recorded with
    /// its call's latency). Results from before the field read as 1.
    #[serde(default = "one_key")]
    pub batch: usize,
    /// With `batch` above 1: each reader thread read all its keys in one
    /// `multi_get_each` with `batch` reads in flight (each Get recorded
    /// from the drawing of its key to its answer). False in results from
    /// before the field.
    #[serde(default)]
    pub stream: bool,
    /// Gets measured per cache size.
    pub reads: u64,
    /// Warm-up Gets per cache size, as a fraction of `keys`.
    pub warmup: f64,
    /// Reads bypass the page cache (O_DIRECT).
    pub direct_io: bool,
    /// Bytes of all table files.
    pub db_bytes: u64,
    /// Filter bytes of every level but the last.
    pub filter_bytes_except_last_level: u64,
    /// Filter bytes of all levels.
    pub filter_bytes: u64,
    /// Top-level index bytes.
    pub top_level_index_bytes: u64,
    /// Index bytes: partitions plus top-level indexes.
    pub index_bytes: u64,
    /// Data block bytes.
    pub data_bytes: u64,
    /// First inflection point: non-last-level filters + top-level indexes.
    pub ip1_bytes: u64,
    /// Second inflection point: non-last-level filters + all index blocks.
    pub ip2_bytes: u64,
    /// IP1 and IP2 as percentages of `db_bytes`.
    pub ip1_percent: f64,
    /// IP2 as a percentage of `db_bytes`.
    pub ip2_percent: f64,
    /// The device's random-read rate, measured before the runs; `None` when
    /// not measured (`--device-limit-seconds 0`, or no `O_DIRECT`).
    #[serde(default)]
    pub device_limit: Option<DeviceLimit>,
    /// One entry per cache size, in the order run.
    pub runs: Vec<Run>,
}

fn one_key() -> usize {
    1
}

/// One row of `results.csv`: a run of `bench kvdb`, with its database's
/// figures.
#[derive(Default, Serialize)]
struct KvdbRow<'a> {
    engine: &'a str,
    keys: u64,
    db_bytes: u64,
    ip1_bytes: u64,
    ip2_bytes: u64,
    cache_bytes: u64,
    #[serde(serialize_with = "fixed::d6")]
    cache_percent: f64,
    phase: u8,
    gets: u64,
    found: u64,
    #[serde(serialize_with = "fixed::d6")]
    io_per_get: f64,
    #[serde(serialize_with = "fixed::d6")]
    physical_reads_per_get: f64,
    #[serde(serialize_with = "fixed::opt_d6")]
    device_reads_per_get: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d6")]
    hit_filter: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d6")]
    hit_top_index: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d6")]
    hit_index: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d6")]
    hit_data: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d6")]
    hit_overall: Option<f64>,
    #[serde(serialize_with = "fixed::d1")]
    ops_per_sec: f64,
    #[serde(serialize_with = "fixed::d1")]
    p50_us: f64,
    #[serde(serialize_with = "fixed::d1")]
    p99_us: f64,
    #[serde(serialize_with = "fixed::d1")]
    p999_us: f64,
    #[serde(serialize_with = "fixed::opt_d6")]
    device_limit_share: Option<f64>,
}

impl BenchResults {
    /// The CSV form: a header line and one line per run (hit rates empty when
    /// undefined).
    pub fn to_csv(&self) -> Result<String, String> {
        to_csv(self.runs.iter().map(|r| KvdbRow {
            engine: &self.engine,
            keys: self.keys,
            db_bytes: self.db_bytes,
            ip1_bytes: self.ip1_bytes,
            ip2_bytes: self.ip2_bytes,
            cache_bytes: r.cache_bytes,
            cache_percent: r.cache_percent,
            phase: r.phase,
            gets: r.gets,
            found: r.found,
            io_per_get: r.io_per_get,
            physical_reads_per_get: r.physical_reads_per_get,
            device_reads_per_get: r.device_reads_per_get,
            hit_filter: r.hit_rate.filter,
            hit_top_index: r.hit_rate.top_index,
            hit_index: r.hit_rate.index,
            hit_data: r.hit_rate.data,
            hit_overall: r.hit_rate.overall,
            ops_per_sec: r.ops_per_sec,
            p50_us: r.p50_us,
            p99_us: r.p99_us,
            p999_us: r.p999_us,
            device_limit_share: r.device_limit_share,
        }))
    }
}

/// The document `compare.json` of `shale bench compare` holds: one workload,
/// every engine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompareResults {
    /// Keys loaded into every engine.
    pub keys: u64,
    /// Value size in bytes.
    pub value_size: usize,
    /// Key scheme.
    pub scheme: String,
    /// Key distribution of the reads.
    pub distribution: String,
    /// Share of reads of keys that were never loaded.
    pub missing: f64,
    /// Reader threads.
    pub threads: usize,
    /// Gets measured per engine and cache size.
    pub reads: u64,
    /// Warm-up Gets per engine and cache size.
    pub warmup_reads: u64,
    /// Reads asked to bypass the page cache (engines that can), unless an
    /// engine has a read mode of its own.
    pub direct_io: bool,
    /// Total memory budgets of the memory-limited runs (view b), bytes.
    pub memory_budgets: Vec<u64>,
    /// Memory left to the page cache and the harness's growth in each budget
    /// that can hold it (each budget run says what it had:
    /// [`BudgetRun::slack_bytes`]).
    pub memory_slack: u64,
    /// Shares of an engine's free memory in a budget tried as its block cache.
    #[serde(default)]
    pub memory_cache_shares: Vec<f64>,
    /// The cache sizes as given: bytes, or a percentage of each engine's
    /// own database.
    pub cache_specs: Vec<String>,
    /// One entry per engine asked for, in the order asked.
    pub engines: Vec<EngineResults>,
}

/// What one engine did in a comparison.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineResults {
    /// Engine name as given (`shale`, `pebble`, `rocksdb`, `leveldb`).
    pub engine: String,
    /// Its configuration.
    pub config: String,
    /// `O_DIRECT` or `buffered` when the engine was asked for a read mode of
    /// its own (`shale@buffered`).
    pub read_mode: Option<String>,
    /// Name, version and configuration as the harness reports them.
    pub label: String,
    /// `ok`, or why the engine has no (or only some) results: not built (with
    /// the command that builds it), or the failure with its standard error.
    pub status: String,
    /// The load, if this run loaded the database.
    pub load: Option<crate::protocol::LoadReply>,
    /// The database read.
    pub shape: Option<crate::protocol::DbShape>,
    /// One entry per cache size measured.
    pub runs: Vec<EngineRun>,
    /// Resident memory with a 1 MiB cache, measured before the
    /// memory-limited runs.
    pub baseline_rss_bytes: Option<u64>,
    /// One entry per memory budget measured.
    pub budget_runs: Vec<BudgetRun>,
}

impl EngineResults {
    /// Whether this engine's reads use `O_DIRECT`: its own read mode, else
    /// the comparison's.
    pub fn direct_io(&self, default: bool) -> bool {
        match self.read_mode.as_deref() {
            Some("O_DIRECT") => true,
            Some(_) => false,
            None => default,
        }
    }
}

fn one() -> f64 {
    1.0
}

fn yes() -> bool {
    true
}

/// One memory budget of one engine and one block cache size (view b).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetRun {
    /// The control group's memory limit, bytes.
    pub budget_bytes: u64,
    /// The share of the engine's free memory in the budget (the budget minus
    /// its resident memory minus the slack) given to its block cache.
    #[serde(default = "one")]
    pub cache_share: f64,
    /// The try with the most Gets/s of this engine in this budget, the one
    /// tables and plots show.
    #[serde(default = "yes")]
    pub best: bool,
    /// The figures (`run.cache_bytes` is the block cache the engine got).
    pub run: Run,
    /// What the budget left beyond the engine's resident memory and its
    /// block cache: the page cache and the engine's growth had this much
    /// (the configured slack, or less where the budget is tighter).
    #[serde(default)]
    pub slack_bytes: u64,
    /// Pages of files read again after the budget had evicted them, per Get
    /// (`null` where the control group does not count refaults): near zero
    /// when the engine fits, and growing with every Get when it thrashes.
    #[serde(default)]
    pub refaults_per_get: Option<f64>,
    /// Everything the harness replied.
    pub reply: crate::protocol::ReadReply,
}

/// One cache size of one engine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineRun {
    /// The cache size as given.
    pub spec: String,
    /// The figures in the form of `bench kvdb`.
    pub run: Run,
    /// Everything the harness replied.
    pub reply: crate::protocol::ReadReply,
}

impl Run {
    /// The figures of a harness's read reply, against the database it read.
    /// The study's I/Os per Get sums the block-cache misses the engine
    /// reports; a kind it cannot tell adds nothing (the report says which).
    pub fn from_reply(r: &crate::protocol::ReadReply, c: &crate::protocol::Composition) -> Run {
        let b = &r.blocks;
        let kinds = [b.filter, b.top_index, b.index, b.data];
        let gets = r.gets.max(1) as f64;
        let misses: u64 = kinds.iter().filter_map(|k| k.cache_misses).sum();
        let rate = |k: &crate::protocol::KindCounts| match (k.cache_hits, k.cache_misses) {
            (Some(h), Some(m)) if h + m > 0 => Some(h as f64 / (h + m) as f64),
            _ => None,
        };
        let (hits, lookups) = kinds.iter().fold((0u64, 0u64), |(h, n), k| {
            match (k.cache_hits, k.cache_misses) {
                (Some(kh), Some(km)) => (h + kh, n + kh + km),
                _ => (h, n),
            }
        });
        Run {
            cache_bytes: r.cache_bytes,
            cache_percent: 100.0 * r.cache_bytes as f64 / c.db_bytes.max(1) as f64,
            phase: phase(r.cache_bytes, c.ip1_bytes(), c.ip2_bytes()),
            gets: r.gets,
            found: r.found,
            io_per_get: misses as f64 / gets,
            physical_reads_per_get: r.read_requests as f64 / gets,
            device_reads_per_get: r.device_read_bytes.map(|b| b as f64 / 4096.0 / gets),
            hit_rate: HitRates {
                filter: rate(&b.filter),
                top_index: rate(&b.top_index),
                index: rate(&b.index),
                data: rate(&b.data),
                overall: (lookups > 0).then(|| hits as f64 / lookups as f64),
            },
            ops_per_sec: r.gets as f64 / r.seconds.max(1e-9),
            p50_us: r.latency.p50_us,
            p99_us: r.latency.p99_us,
            p999_us: r.latency.p999_us,
            device_limit_share: None,
        }
    }
}

/// The `spec` of a budget's try in the CSV form.
fn budget_spec(b: &BudgetRun) -> String {
    if b.best {
        format!("memory:{}", b.budget_bytes)
    } else {
        format!("memory:{}:share={}", b.budget_bytes, b.cache_share)
    }
}

/// One row of `compare.csv`: a run of one engine at one cache size or
/// memory budget.
#[derive(Default, Serialize)]
struct CompareRow<'a> {
    engine: &'a str,
    config: &'a str,
    label: &'a str,
    spec: String,
    db_bytes: u64,
    cache_bytes: u64,
    #[serde(serialize_with = "fixed::d6")]
    cache_percent: f64,
    phase: u8,
    gets: u64,
    found: u64,
    #[serde(serialize_with = "fixed::d6")]
    io_per_get: f64,
    #[serde(serialize_with = "fixed::d6")]
    physical_reads_per_get: f64,
    #[serde(serialize_with = "fixed::opt_d6")]
    device_reads_per_get: Option<f64>,
    #[serde(serialize_with = "fixed::d1")]
    ops_per_sec: f64,
    #[serde(serialize_with = "fixed::d1")]
    p50_us: f64,
    #[serde(serialize_with = "fixed::d1")]
    p99_us: f64,
    #[serde(serialize_with = "fixed::d1")]
    p999_us: f64,
    rss_bytes: Option<u64>,
    slack_bytes: Option<u64>,
    #[serde(serialize_with = "fixed::opt_d6")]
    refaults_per_get: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d6")]
    write_amp: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d6")]
    load_seconds: Option<f64>,
}

impl CompareResults {
    /// The CSV form: one line per engine and cache size, then one per engine
    /// and memory budget (`spec` is `memory:<bytes>` for the best try,
    /// `memory:<bytes>:share=<share>` for the others; `slack_bytes` and
    /// `refaults_per_get` are a budget's).
    pub fn to_csv(&self) -> Result<String, String> {
        let mut rows = Vec::new();
        for e in &self.engines {
            let db_bytes = e.shape.as_ref().map_or(0, |s| s.composition.db_bytes);
            let cache_runs = e
                .runs
                .iter()
                .map(|er| (er.spec.clone(), &er.run, &er.reply, None));
            let budget_runs = e
                .budget_runs
                .iter()
                .map(|b| (budget_spec(b), &b.run, &b.reply, Some(b)));
            for (spec, r, reply, budget) in cache_runs.chain(budget_runs) {
                rows.push(CompareRow {
                    engine: &e.engine,
                    config: &e.config,
                    label: &e.label,
                    spec,
                    db_bytes,
                    cache_bytes: r.cache_bytes,
                    cache_percent: r.cache_percent,
                    phase: r.phase,
                    gets: r.gets,
                    found: r.found,
                    io_per_get: r.io_per_get,
                    physical_reads_per_get: r.physical_reads_per_get,
                    device_reads_per_get: r.device_reads_per_get,
                    ops_per_sec: r.ops_per_sec,
                    p50_us: r.p50_us,
                    p99_us: r.p99_us,
                    p999_us: r.p999_us,
                    rss_bytes: reply.rss_bytes,
                    slack_bytes: budget.map(|b| b.slack_bytes),
                    refaults_per_get: budget.and_then(|b| b.refaults_per_get),
                    write_amp: e.load.as_ref().map(|l| l.write_amp),
                    load_seconds: e.load.as_ref().map(|l| l.seconds),
                });
            }
        }
        to_csv(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_split_at_the_inflection_points() {
        assert_eq!(phase(0, 100, 500), 1);
        assert_eq!(phase(99, 100, 500), 1);
        assert_eq!(phase(100, 100, 500), 2);
        assert_eq!(phase(499, 100, 500), 2);
        assert_eq!(phase(500, 100, 500), 3);
        assert_eq!(phase(10_000, 100, 500), 3);
    }

    #[test]
    fn json_and_csv_carry_every_run() {
        let r = BenchResults {
            engine: "shale 0.1.0".into(),
            keys: 10,
            runs: vec![
                Run {
                    cache_bytes: 1,
                    phase: 1,
                    ..Default::default()
                },
                Run {
                    cache_bytes: 2,
                    phase: 3,
                    hit_rate: HitRates {
                        data: Some(0.5),
                        ..Default::default()
                    },
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let json = serde_json::to_string(&r).expect("json");
        let back: BenchResults = serde_json::from_str(&json).expect("parse");
        assert_eq!(back, r);
        let v: serde_json::Value = serde_json::from_str(&json).expect("value");
        for field in [
            "engine",
            "keys",
            "db_bytes",
            "ip1_bytes",
            "ip2_bytes",
            "runs",
        ] {
            assert!(v.get(field).is_some(), "{field}");
        }
        let csv = r.to_csv().expect("csv");
        assert_eq!(csv.lines().count(), 3);
        assert!(csv.lines().nth(2).is_some_and(|l| l.contains(",0.500000,")));
        // A document written before the device limit existed still reads.
        let mut old: serde_json::Value = serde_json::from_str(&json).expect("value");
        if let Some(o) = old.as_object_mut() {
            o.remove("device_limit");
        }
        let back: BenchResults = serde_json::from_value(old).expect("old document");
        assert_eq!(back.device_limit, None);
    }

    #[test]
    fn gets_as_a_share_of_the_device_limit() {
        let limit = DeviceLimit {
            reads_per_sec: 20_000.0,
            threads: 2,
            page_bytes: 4096,
            reads: 60_000,
            seconds: 3.0,
        };
        assert_eq!(limit.share(15_000.0), Some(0.75));
        let none = DeviceLimit::default();
        assert_eq!(none.share(15_000.0), None);
        let r = BenchResults {
            device_limit: Some(limit),
            runs: vec![Run {
                device_limit_share: Some(0.75),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(r
            .to_csv()
            .expect("csv")
            .lines()
            .nth(1)
            .is_some_and(|l| l.ends_with(",0.750000")));
    }
}
