//! What a `bench db-sweep` measured ([`SweepResults`]: its points, fills and
//! parameters), as written to `sweep.json` and `sweep.csv`, printed, and
//! drawn by the charts.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use shale_workload::csv_rows::{fixed, to_csv};

/// One measured point: one benchmark at one value of the swept option.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// The engine measured (`shale`, `leveldb`).
    pub engine: String,
    /// The swept option's value (files, or bytes).
    pub value: u64,
    /// The benchmark's db_bench name.
    pub benchmark: String,
    /// Operations done.
    pub ops: u64,
    /// db_bench's micros/op (wall time x threads / ops).
    pub micros_per_op: f64,
    /// Operations per second.
    pub ops_per_sec: f64,
    /// Reads that found their key.
    pub found: u64,
    /// Table readers found open in the table cache (`None`: the engine
    /// cannot tell, as LevelDB).
    pub table_cache_hits: Option<u64>,
    /// Table readers opened.
    pub table_cache_misses: Option<u64>,
    /// `hits / (hits + misses)` of the table cache, `None` without lookups.
    pub table_cache_hit_rate: Option<f64>,
    /// Block-cache hits over every block kind (LevelDB's block cache holds
    /// data blocks only).
    pub block_cache_hits: Option<u64>,
    /// Block-cache misses over every block kind.
    pub block_cache_misses: Option<u64>,
    /// `hits / (hits + misses)` of the block cache, `None` without lookups.
    pub block_cache_hit_rate: Option<f64>,
    /// True if Ctrl-C cut the benchmark short.
    pub interrupted: bool,
}

/// The fill a sweep starts with, per engine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepFill {
    /// The engine.
    pub engine: String,
    /// Entries written.
    pub ops: u64,
    /// db_bench's micros/op of the fill.
    pub micros_per_op: f64,
    /// Seconds of the fill, then of settling (flush and compactions).
    pub seconds: f64,
    /// Seconds spent settling after the writes.
    pub settle_seconds: f64,
}

/// A sweep's results (`sweep.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepResults {
    /// The swept option: `open_files` or `cache_size`.
    pub param: String,
    /// Its values, in the order run.
    pub values: Vec<u64>,
    /// The benchmarks run at each value.
    pub benchmarks: Vec<String>,
    /// The engines, in the order run.
    pub engines: Vec<String>,
    /// Entries filled (keys 0..num).
    pub num: u64,
    /// Operations per benchmark and value, per thread.
    pub reads: u64,
    /// Key size in bytes.
    pub key_size: usize,
    /// Value size in bytes.
    pub value_size: usize,
    /// Threads per benchmark.
    pub threads: usize,
    /// Block cache when the table cache is swept.
    pub cache_size: u64,
    /// Table cache when the block cache is swept (`None`: shale's default).
    pub open_files: Option<usize>,
    /// The fills, one per engine, unless `--use_existing_db`.
    pub fills: Vec<SweepFill>,
    /// One point per engine, value and benchmark, in the order run.
    pub points: Vec<SweepPoint>,
    /// True if Ctrl-C stopped the sweep.
    pub interrupted: bool,
}

/// The points of one engine and benchmark: what one curve of a chart of
/// micros/op against the swept value draws.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The engine.
    pub engine: String,
    /// The benchmark.
    pub benchmark: String,
    /// `(value, micros/op)`, in the order run (ascending for the defaults).
    /// A log x axis must leave out or place separately a value of 0.
    pub points: Vec<(u64, f64)>,
}

/// One row of `sweep.csv`: one benchmark at one value of the parameter.
#[derive(Default, Serialize)]
struct SweepRow<'a> {
    engine: &'a str,
    param: &'a str,
    value: u64,
    benchmark: &'a str,
    ops: u64,
    #[serde(serialize_with = "fixed::d3")]
    micros_per_op: f64,
    #[serde(serialize_with = "fixed::d1")]
    ops_per_sec: f64,
    found: u64,
    table_cache_hits: Option<u64>,
    table_cache_misses: Option<u64>,
    #[serde(serialize_with = "fixed::opt_d6")]
    table_cache_hit_rate: Option<f64>,
    block_cache_hits: Option<u64>,
    block_cache_misses: Option<u64>,
    #[serde(serialize_with = "fixed::opt_d6")]
    block_cache_hit_rate: Option<f64>,
    interrupted: bool,
}

impl SweepResults {
    /// One series per engine and benchmark, in order of first appearance.
    pub fn series(&self) -> Vec<Series> {
        let mut out: Vec<Series> = Vec::new();
        for p in &self.points {
            let i = match out
                .iter()
                .position(|s| s.engine == p.engine && s.benchmark == p.benchmark)
            {
                Some(i) => i,
                None => {
                    out.push(Series {
                        engine: p.engine.clone(),
                        benchmark: p.benchmark.clone(),
                        points: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            out[i].points.push((p.value, p.micros_per_op));
        }
        out
    }

    /// `sweep.csv`: a header, then one row per point.
    pub fn csv(&self) -> Result<String, String> {
        to_csv(self.points.iter().map(|p| SweepRow {
            engine: &p.engine,
            param: &self.param,
            value: p.value,
            benchmark: &p.benchmark,
            ops: p.ops,
            micros_per_op: p.micros_per_op,
            ops_per_sec: p.ops_per_sec,
            found: p.found,
            table_cache_hits: p.table_cache_hits,
            table_cache_misses: p.table_cache_misses,
            table_cache_hit_rate: p.table_cache_hit_rate,
            block_cache_hits: p.block_cache_hits,
            block_cache_misses: p.block_cache_misses,
            block_cache_hit_rate: p.block_cache_hit_rate,
            interrupted: p.interrupted,
        }))
    }

    /// The terminal table: one row per point, then micros/op per value and
    /// engine and benchmark.
    pub fn text(&self) -> String {
        let pct = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{:.1}%", 100.0 * r));
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<8} {:>12}  {:<12} {:>11} {:>10} {:>16} {:>16} {:>16}",
            "engine",
            self.param,
            "benchmark",
            "micros/op",
            "ops/sec",
            "found",
            "table-cache hit",
            "block-cache hit"
        );
        for p in &self.points {
            let _ = writeln!(
                s,
                "{:<8} {:>12}  {:<12} {:>11.3} {:>10.0} {:>16} {:>16} {:>16}",
                p.engine,
                p.value,
                p.benchmark,
                p.micros_per_op,
                p.ops_per_sec,
                format!("{}/{}", p.found, p.ops),
                pct(p.table_cache_hit_rate),
                pct(p.block_cache_hit_rate),
            );
        }
        let series = self.series();
        if !series.is_empty() {
            let label = |se: &Series| {
                if self.engines.len() > 1 {
                    format!("{}:{}", se.engine, se.benchmark)
                } else {
                    se.benchmark.clone()
                }
            };
            let width = series
                .iter()
                .map(|se| label(se).len())
                .max()
                .unwrap_or(0)
                .max(10);
            let _ = write!(s, "\nmicros/op\n{:>12}", self.param);
            for se in &series {
                let _ = write!(s, " {:>width$}", label(se));
            }
            s.push('\n');
            for &v in &self.values {
                let _ = write!(s, "{v:>12}");
                for se in &series {
                    match se.points.iter().find(|(x, _)| *x == v) {
                        Some((_, m)) => {
                            let _ = write!(s, " {m:>width$.3}");
                        }
                        None => {
                            let _ = write!(s, " {:>width$}", "-");
                        }
                    }
                }
                s.push('\n');
            }
        }
        s
    }
}
