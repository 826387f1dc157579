//! `shale simulate`: the I/O-per-Get curve of a block-access trace at
//! every cache size, from one traced run (`bench kvdb --trace FILE`).
//!
//! The trace is replayed through the engine's own block cache at each size
//! (`shale::trace::simulate`): misses and block reads per Get by block
//! kind, the inflection points, and the curve as a table, `simulate.json`,
//! `simulate.csv` and a chart. With `--measured`, a `bench kvdb`
//! `results.json` is set beside it: its sizes are replayed too and the
//! difference of each is printed.
//!
//! A RocksDB block-cache trace (`--format rocksdb`, or told by its first
//! bytes: see [`crate::rocksdb_trace`]) is replayed the same way, through a
//! plain LRU unless `--policy shale` asks for shale's cache: RocksDB's own
//! cache is not modelled, and the LRU is the yardstick both engines' traces
//! can be replayed through. Such a trace does not know its database, so
//! its sizes and percentages are of the bytes of the blocks it touches.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use shale::trace::{self, BlockTrace, Policy, SimulatedSize, TraceRecord, READ_KINDS};
use shale::BlockKind;
use shale_workload::results::{phase, BenchResults};

use crate::args::{SimPolicy, SimulateArgs, TraceFormat};
use crate::error::{Error, Result};
use crate::fmt::human_bytes;
use crate::report::plot::{Axis, LineChart, Marker, Series, Shape, BLUE, GREEN, ORANGE};
use shale_workload::protocol::Composition;

/// The JSON file of a simulation.
pub const SIMULATE_JSON: &str = "simulate.json";
/// One row per cache size.
pub const SIMULATE_CSV: &str = "simulate.csv";
/// Misses and reads per Get against cache size (SVG and PNG).
pub const SIMULATE_SVG: &str = "simulate.svg";
/// (the PNG).
pub const SIMULATE_PNG: &str = "simulate.png";

const MIB: f64 = 1024.0 * 1024.0;

/// A simulation's results.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SimulateResults {
    /// The trace replayed.
    pub trace: String,
    /// Its format: "shale" or "rocksdb".
    #[serde(default)]
    pub format: String,
    /// The cache replayed through: "shale" or "lru".
    #[serde(default)]
    pub policy: String,
    /// What `cache_percent` is a percentage of: "database", or "touched
    /// blocks" for a trace that does not know its database (RocksDB's).
    #[serde(default)]
    pub percent_base: String,
    /// The bytes of the distinct blocks the trace touches.
    #[serde(default)]
    pub touched_bytes: u64,
    /// The share of blocks it recorded.
    pub sample_rate: f64,
    /// The table format version the database wrote.
    pub table_format_version: u32,
    /// The mark counting starts from (`None`: the whole trace).
    pub from_mark: Option<String>,
    /// Gets counted.
    pub gets: u64,
    /// Block accesses in the trace.
    pub accesses: u64,
    /// The cache the trace was recorded with (0: unknown).
    pub traced_cache_bytes: u64,
    /// Bytes of all table files.
    pub db_bytes: u64,
    /// The database's first inflection point (filters of every level but
    /// the last and top-level indexes) in bytes and as a share of it.
    pub ip1_bytes: u64,
    /// (as a percentage of the database).
    pub ip1_percent: f64,
    /// The second (those filters and every index block).
    pub ip2_bytes: u64,
    /// (as a percentage of the database).
    pub ip2_percent: f64,
    /// The filters and top-level indexes the trace's Gets touched.
    pub touched_ip1_bytes: f64,
    /// Those and the index partitions they touched.
    pub touched_ip2_bytes: f64,
    /// Seconds the replays took.
    pub seconds: f64,
    /// One per cache size, ascending.
    pub sizes: Vec<SimulatedRow>,
}

/// One cache size of a simulation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SimulatedRow {
    /// Capacity in bytes.
    pub cache_bytes: u64,
    /// As a percentage of the database.
    pub cache_percent: f64,
    /// The study's phase (1 below IP1, 2 up to IP2, 3 above).
    pub phase: u8,
    /// The cache's shards at that size.
    pub shards: usize,
    /// Block-cache misses per Get (the study's I/Os per Get).
    pub misses_per_get: f64,
    /// Block reads per Get: misses and first reads of held blocks.
    pub reads_per_get: f64,
    /// Misses per Get of filters, top-level indexes, index partitions and
    /// data blocks.
    pub filter_misses_per_get: f64,
    /// (top-level indexes)
    pub top_index_misses_per_get: f64,
    /// (index partitions)
    pub index_misses_per_get: f64,
    /// (data blocks)
    pub data_misses_per_get: f64,
    /// Hits over lookups, all kinds.
    pub hit_rate: f64,
    /// What `bench kvdb` measured at this size (with `--measured`).
    pub measured_misses_per_get: Option<f64>,
}

impl SimulatedRow {
    fn new(s: &SimulatedSize, db_bytes: u64, ip: (u64, u64)) -> SimulatedRow {
        SimulatedRow {
            cache_bytes: s.capacity,
            cache_percent: 100.0 * s.capacity as f64 / db_bytes.max(1) as f64,
            phase: phase(s.capacity, ip.0, ip.1),
            shards: s.shards,
            misses_per_get: s.misses_per_get(),
            reads_per_get: s.reads_per_get(),
            filter_misses_per_get: s.kind_misses_per_get(BlockKind::Filter),
            top_index_misses_per_get: s.kind_misses_per_get(BlockKind::TopIndex),
            index_misses_per_get: s.kind_misses_per_get(BlockKind::IndexPartition),
            data_misses_per_get: s.kind_misses_per_get(BlockKind::Data),
            hit_rate: s.hit_rate(),
            measured_misses_per_get: None,
        }
    }

    /// Simulated over measured misses per Get, minus one.
    pub fn difference(&self) -> Option<f64> {
        self.measured_misses_per_get
            .filter(|m| *m > 0.0)
            .map(|m| self.misses_per_get / m - 1.0)
    }
}

/// Reads the trace at `path` in `format` (`None`: shale's if it starts
/// with shale's magic, RocksDB's if it starts like one); an error names
/// the file.
pub fn load_any_trace(
    path: &Path,
    format: Option<TraceFormat>,
) -> Result<(BlockTrace, TraceFormat)> {
    let format = match format {
        Some(f) => f,
        None => {
            let mut head = [0u8; 32];
            let n = std::fs::File::open(path)
                .and_then(|mut f| read_up_to(&mut f, &mut head))
                .map_err(|e| {
                    Error::msg(format!("cannot read the trace {}: {e}", path.display()))
                })?;
            if head[..n].starts_with(b"shaleBTR") {
                TraceFormat::Shale
            } else if crate::rocksdb_trace::looks_like(&head[..n]) {
                TraceFormat::Rocksdb
            } else {
                return Err(Error::msg(format!(
                    "{}: neither a shale block trace (magic shaleBTR) nor a RocksDB block-cache trace; --format says which",
                    path.display()
                )));
            }
        }
    };
    match format {
        TraceFormat::Shale => Ok((load_trace(path)?, format)),
        TraceFormat::Rocksdb => Ok((crate::rocksdb_trace::load(path)?.1, format)),
    }
}

/// Fills `buf` from `r` as far as `r` goes; the bytes read.
fn read_up_to(r: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Reads and decodes the shale trace at `path`; an error names the file.
pub fn load_trace(path: &Path) -> Result<BlockTrace> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::msg(format!("cannot read the trace {}: {e}", path.display())))?;
    trace::decode_trace(&bytes).map_err(|e| Error::msg(format!("{}: {e}", path.display())))
}

/// The composition a trace's header describes (the parts the inflection
/// points and cache percentages need).
pub fn trace_composition(t: &BlockTrace) -> Composition {
    let db = &t.header.db;
    Composition {
        db_bytes: db.db_bytes,
        filter_bytes_except_last_level: db.filter_bytes_except_last_level,
        top_level_index_bytes: db.top_level_index_bytes,
        index_bytes: db.index_bytes,
        ..Composition::default()
    }
}

/// The mark counting starts from: the one asked for (which must be in the
/// trace), else "measure" where the trace has it, else none.
pub fn start_mark(t: &BlockTrace, asked: Option<&str>) -> Result<Option<String>> {
    let has = |label: &str| {
        t.records
            .iter()
            .any(|r| matches!(r, TraceRecord::Mark(m) if m == label))
    };
    match asked {
        Some(label) if has(label) => Ok(Some(label.to_string())),
        Some(label) => Err(Error::msg(format!(
            "the trace has no mark '{label}' to count from"
        ))),
        None => Ok(has("measure").then(|| "measure".to_string())),
    }
}

/// Replays `t` at `sizes` (bytes) on `threads` threads through `policy`'s
/// cache.
pub fn replay(
    t: &BlockTrace,
    sizes: &[u64],
    threads: usize,
    mark: Option<&str>,
    policy: Policy,
) -> Result<Vec<SimulatedSize>> {
    trace::simulate(t, sizes, threads, mark, policy).map_err(|e| Error::msg(e.to_string()))
}

/// `shale simulate`.
pub fn run(a: &SimulateArgs, out: &mut dyn Write) -> Result {
    let (t, format) = load_any_trace(&a.trace, a.format)?;
    let policy = match (a.policy, format) {
        (Some(SimPolicy::Shale), _) | (None, TraceFormat::Shale) => Policy::Shale,
        (Some(SimPolicy::Lru), _) | (None, TraceFormat::Rocksdb) => Policy::Lru,
    };
    let touched = trace::touched_metadata(&t);
    let touched_total = touched.all_bytes.round() as u64;
    let mut comp = trace_composition(&t);
    // A trace that does not know its database: sizes and percentages are
    // of the blocks it touches.
    let db_known = comp.db_bytes > 0;
    if !db_known {
        comp.db_bytes = touched_total;
    }
    let measured: Option<BenchResults> = match &a.measured {
        None => None,
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| Error::msg(format!("cannot read {}: {e}", p.display())))?;
            Some(serde_json::from_str(&text).map_err(|e| {
                Error::msg(format!(
                    "{} is not a bench kvdb results.json: {e}",
                    p.display()
                ))
            })?)
        }
    };
    let mut sizes = match (&a.cache, &measured) {
        (Some(list), _) => crate::kvdb::plan_sizes(Some(list), false, &comp),
        (None, Some(m)) => Ok(m.runs.iter().map(|r| r.cache_bytes).collect()),
        (None, None) if db_known => crate::kvdb::plan_sizes(None, true, &comp),
        (None, None) => Ok((0..12)
            .map(|i| (touched_total as f64 * 0.01 * 100f64.powf(i as f64 / 11.0)).round() as u64)
            .filter(|&b| b > 0)
            .collect()),
    }
    .map_err(|e| Error::Usage(format!("--cache: {e}")))?;
    if let Some(m) = &measured {
        sizes.extend(m.runs.iter().map(|r| r.cache_bytes));
        sizes.sort_unstable();
        sizes.dedup();
    }
    if sizes.is_empty() {
        return Err(Error::Usage("--cache: no cache size given".into()));
    }
    let mark = start_mark(&t, a.from_mark.as_deref())?;
    let threads = a.threads.unwrap_or_else(crate::kvdb::cores).max(1);
    let started = Instant::now();
    let sims = replay(&t, &sizes, threads, mark.as_deref(), policy)?;
    let seconds = started.elapsed().as_secs_f64();
    let ip = (comp.ip1_bytes(), comp.ip2_bytes());
    let pct = |b: u64| 100.0 * b as f64 / comp.db_bytes.max(1) as f64;
    let mut rows: Vec<SimulatedRow> = sims
        .iter()
        .map(|s| SimulatedRow::new(s, comp.db_bytes, ip))
        .collect();
    if let Some(m) = &measured {
        for row in &mut rows {
            row.measured_misses_per_get = m
                .runs
                .iter()
                .find(|r| r.cache_bytes == row.cache_bytes)
                .map(|r| r.io_per_get);
        }
    }
    let results = SimulateResults {
        trace: a.trace.display().to_string(),
        format: match format {
            TraceFormat::Shale => "shale",
            TraceFormat::Rocksdb => "rocksdb",
        }
        .into(),
        policy: policy.name().into(),
        percent_base: if db_known {
            "database"
        } else {
            "touched blocks"
        }
        .into(),
        touched_bytes: touched_total,
        sample_rate: t.header.sample_rate(),
        table_format_version: t.header.table_format_version,
        from_mark: mark,
        gets: sims.first().map_or(0, |s| s.gets),
        accesses: t
            .records
            .iter()
            .filter(|r| matches!(r, TraceRecord::Access(_)))
            .count() as u64,
        traced_cache_bytes: t.header.cache_capacity,
        db_bytes: if db_known { comp.db_bytes } else { 0 },
        ip1_bytes: ip.0,
        ip1_percent: pct(ip.0),
        ip2_bytes: ip.1,
        ip2_percent: pct(ip.1),
        touched_ip1_bytes: touched.ip1_bytes,
        touched_ip2_bytes: touched.ip2_bytes,
        seconds,
        sizes: rows,
    };
    write_files(&results, &a.out)?;
    if a.json {
        if a.policy.is_none() && format == TraceFormat::Rocksdb {
            eprintln!("a RocksDB trace: replayed through a plain LRU (--policy lru; --policy shale for shale's cache)");
        }
        let s = serde_json::to_string_pretty(&results)
            .map_err(|e| Error::msg(format!("encoding JSON: {e}")))?;
        writeln!(out, "{s}").map_err(Error::output)
    } else {
        write!(out, "{}", terminal_table(&results)).map_err(Error::output)?;
        writeln!(out, "results in {}", a.out.display()).map_err(Error::output)
    }
}

/// The terminal's table: a line on the trace, one on the inflection
/// points, then one line per size.
pub fn terminal_table(r: &SimulateResults) -> String {
    let traced = if r.traced_cache_bytes > 0 {
        format!("a {} cache", human_bytes(r.traced_cache_bytes))
    } else {
        "a cache of unknown size".to_string()
    };
    let policy = match r.policy.as_str() {
        "lru" if r.format == "rocksdb" => {
            " through a plain LRU (a RocksDB trace's default; --policy shale for shale's cache)"
        }
        "lru" => " through a plain LRU",
        _ => " through shale's block cache",
    };
    let mut out = format!(
        "{}trace {}: {} Gets{}, {} block accesses{}, recorded with {}; replayed{} in {:.2} s\n",
        if r.format == "rocksdb" {
            "RocksDB "
        } else {
            ""
        },
        r.trace,
        r.gets,
        r.from_mark
            .as_ref()
            .map_or(String::new(), |m| format!(" from mark '{m}'")),
        r.accesses,
        if r.sample_rate < 1.0 {
            format!(" (sampled: {:.4} of the blocks)", r.sample_rate)
        } else {
            String::new()
        },
        traced,
        policy,
        r.seconds
    );
    if r.db_bytes == 0 {
        out.push_str(&format!(
            "DB unknown to the trace: cache % is of the {} of distinct blocks it touches ({:.2} MiB of filters and top-level indexes, {:.2} MiB with index partitions)\n\n",
            human_bytes(r.touched_bytes),
            r.touched_ip1_bytes / MIB,
            r.touched_ip2_bytes / MIB,
        ));
    } else {
        out.push_str(&format!(
        "DB {}: IP1 = {:.2} MiB ({:.3}%), IP2 = {:.2} MiB ({:.3}%); touched by these Gets: {:.2} MiB ({:.3}%) and {:.2} MiB ({:.3}%)\n\n",
        human_bytes(r.db_bytes),
        r.ip1_bytes as f64 / MIB,
        r.ip1_percent,
        r.ip2_bytes as f64 / MIB,
        r.ip2_percent,
        r.touched_ip1_bytes / MIB,
        100.0 * r.touched_ip1_bytes / r.db_bytes.max(1) as f64,
        r.touched_ip2_bytes / MIB,
        100.0 * r.touched_ip2_bytes / r.db_bytes.max(1) as f64,
    ));
    }
    let measured = r.sizes.iter().any(|s| s.measured_misses_per_get.is_some());
    let mut head = format!(
        "{:>10}  {:>8}  {:>5}  {:>10}  {:>9}  {:>8}  {:>8}  {:>8}  {:>8}  {:>7}",
        "cache MiB",
        "cache %",
        "phase",
        "misses/Get",
        "reads/Get",
        "filter",
        "top",
        "index",
        "data",
        "hit"
    );
    if measured {
        head.push_str(&format!("  {:>10}  {:>7}", "measured", "diff"));
    }
    out.push_str(&head);
    out.push('\n');
    out.push_str(&"-".repeat(head.chars().count()));
    out.push('\n');
    for s in &r.sizes {
        let mut line = format!(
            "{:>10.2}  {:>7.3}%  {:>5}  {:>10.4}  {:>9.4}  {:>8.4}  {:>8.4}  {:>8.4}  {:>8.4}  {:>6.1}%",
            s.cache_bytes as f64 / MIB,
            s.cache_percent,
            s.phase,
            s.misses_per_get,
            s.reads_per_get,
            s.filter_misses_per_get,
            s.top_index_misses_per_get,
            s.index_misses_per_get,
            s.data_misses_per_get,
            100.0 * s.hit_rate
        );
        if measured {
            match (s.measured_misses_per_get, s.difference()) {
                (Some(m), Some(d)) => line.push_str(&format!("  {m:>10.4}  {:>+6.2}%", 100.0 * d)),
                (Some(m), None) => line.push_str(&format!("  {m:>10.4}  {:>7}", "-")),
                _ => line.push_str(&format!("  {:>10}  {:>7}", "-", "-")),
            }
        }
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str("misses/Get: block-cache misses per Get (the study's I/Os per Get), by kind in the next four columns; reads/Get adds the first reads of metadata held outside the cache\n");
    out
}

/// The CSV: a header line and one row per size.
pub fn to_csv(r: &SimulateResults) -> String {
    let mut out = String::from(
        "cache_bytes,cache_percent,phase,shards,misses_per_get,reads_per_get,filter_misses_per_get,top_index_misses_per_get,index_misses_per_get,data_misses_per_get,hit_rate,measured_misses_per_get\n",
    );
    for s in &r.sizes {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{}\n",
            s.cache_bytes,
            s.cache_percent,
            s.phase,
            s.shards,
            s.misses_per_get,
            s.reads_per_get,
            s.filter_misses_per_get,
            s.top_index_misses_per_get,
            s.index_misses_per_get,
            s.data_misses_per_get,
            s.hit_rate,
            s.measured_misses_per_get
                .map_or(String::new(), |m| m.to_string())
        ));
    }
    out
}

/// The chart: misses and reads per Get against the cache size, with the
/// inflection points (and the measured figures, when given).
pub fn chart(r: &SimulateResults) -> LineChart {
    let points = |y: fn(&SimulatedRow) -> Option<f64>| -> Vec<(f64, f64)> {
        r.sizes
            .iter()
            .filter(|s| s.cache_percent > 0.0)
            .filter_map(|s| y(s).map(|v| (s.cache_percent, v)))
            .collect()
    };
    let mut series = vec![
        Series::new(
            "misses per Get (simulated)",
            points(|s| Some(s.misses_per_get)),
        )
        .color(BLUE)
        .marker(Shape::Circle)
        .width(3),
        Series::new(
            "reads per Get (simulated)",
            points(|s| Some(s.reads_per_get)),
        )
        .color(ORANGE)
        .marker(Shape::Square)
        .width(2),
    ];
    let measured = points(|s| s.measured_misses_per_get);
    if !measured.is_empty() {
        series.push(
            Series::new("misses per Get (measured)", measured)
                .color(GREEN)
                .marker(Shape::Triangle)
                .width(1),
        );
    }
    let markers = [(r.ip1_percent, "IP1"), (r.ip2_percent, "IP2")]
        .into_iter()
        .filter(|(x, _)| x.is_finite() && *x > 0.0)
        .map(|(x, label)| Marker {
            x,
            label: label.into(),
        })
        .collect();
    LineChart {
        series,
        markers,
        ..LineChart::new(
            format!(
                "Simulated I/Os per Get vs cache size ({}): {} Gets of {}",
                if r.policy == "lru" {
                    "plain LRU"
                } else {
                    "shale's cache"
                },
                r.gets,
                r.trace
            ),
            Axis::log10(if r.db_bytes == 0 {
                "block cache size (% of the blocks touched, log scale)"
            } else {
                "block cache size (% of DB, log scale)"
            })
            .unit("%"),
            Axis::linear("I/Os per Get"),
        )
    }
}

/// Writes the JSON, the CSV and the chart into `dir`.
pub fn write_files(r: &SimulateResults, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::msg(format!("cannot create {}: {e}", dir.display())))?;
    let c = chart(r);
    let drawn = |name: &str, e| Error::msg(format!("cannot draw {name}: {e}"));
    let svg = c.to_svg().map_err(|e| drawn(SIMULATE_SVG, e))?;
    let png = c.to_png().map_err(|e| drawn(SIMULATE_PNG, e))?;
    let mut json =
        serde_json::to_string_pretty(r).map_err(|e| Error::msg(format!("encoding JSON: {e}")))?;
    json.push('\n');
    let files: [(&str, Vec<u8>); 4] = [
        (SIMULATE_JSON, json.into_bytes()),
        (SIMULATE_CSV, to_csv(r).into_bytes()),
        (SIMULATE_SVG, svg.into_bytes()),
        (SIMULATE_PNG, png),
    ];
    let mut written = Vec::new();
    for (name, bytes) in files {
        let path = dir.join(name);
        std::fs::write(&path, bytes)
            .map_err(|e| Error::msg(format!("cannot write {}: {e}", path.display())))?;
        written.push(path);
    }
    Ok(written)
}

/// The replay of the smallest cache whose replay of `t` gives at most
/// `target` block reads per Get (its `capacity` is the size); `None` if
/// even `max_bytes` does not reach it. Searched on a geometric grid, then
/// by bisection to within 1%.
pub fn smallest_cache_for(
    t: &BlockTrace,
    target: f64,
    max_bytes: u64,
    threads: usize,
    mark: Option<&str>,
    policy: Policy,
) -> Result<Option<SimulatedSize>> {
    let lo = 4096u64.min(max_bytes).max(1);
    let grid: Vec<u64> = (0..32)
        .map(|i| (lo as f64 * (max_bytes as f64 / lo as f64).powf(i as f64 / 31.0)).round() as u64)
        .collect();
    let sims = replay(t, &grid, threads, mark, policy)?;
    let Some(first) = sims.iter().position(|s| s.reads_per_get() <= target) else {
        return Ok(None);
    };
    let mut ok = sims[first].clone();
    let mut bad = if first == 0 { 0 } else { grid[first - 1] };
    while ok.capacity as f64 > bad as f64 * 1.01 && ok.capacity - bad > 1 {
        // Probe `threads` sizes at once, evenly between the bounds.
        let span = ok.capacity - bad;
        let probes: Vec<u64> = (1..=threads as u64)
            .map(|k| bad + span * k / (threads as u64 + 1))
            .filter(|&p| p > bad && p < ok.capacity)
            .collect();
        if probes.is_empty() {
            break;
        }
        for s in replay(t, &probes, threads, mark, policy)? {
            if s.reads_per_get() <= target {
                ok = s;
                break;
            }
            bad = s.capacity;
        }
    }
    Ok(Some(ok))
}

/// Which kinds a row's misses come from, for the notes of `advise`.
pub fn kinds_text(s: &SimulatedSize) -> String {
    READ_KINDS
        .iter()
        .map(|&k| format!("{} {:.3}", k.name(), s.kind_misses_per_get(k)))
        .collect::<Vec<_>>()
        .join(", ")
}
