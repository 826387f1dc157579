//! `shale advise`: the cache size for a target I/O per Get, from the
//! database's inflection points, and (`--keys`) a projection of IP1 and IP2
//! to other key counts from what the database measures.
//!
//! # The projection model
//!
//! Measured on the database (`Db::summary`, the tables' properties), per key
//! or per block, so that any table format is modelled by its own costs:
//!
//! * `w`: table bytes per key, filters excluded (data blocks with their
//!   padding, index blocks, properties, footers);
//! * `β`: data blocks per key, and `ι`: bytes of index partitions per data
//!   block;
//! * `τ`: bytes of top-level index per table;
//! * `φ`: filter bytes per key in the levels that have filters (where no such
//!   level holds keys, on a sample table of the database's own keys written
//!   in memory with its filter policy).
//!
//! The level shape at `N` keys is the picker's ([`shale::tools::level_plan`]) for a
//! database of `D` bytes: every level from the base level to the one above the
//! last holds its target (the settled shape of a database that grew to that
//! size: measured at 20M keys, L4 64.0 of 64 MiB and L5 407 of 409 MiB), L0 is
//! empty and the last level holds the remaining keys. A key costs `w + φ` in a
//! level with filters and `w` elsewhere, so `D` depends on the shape and the
//! shape on `D`: a few rounds of `D ← Σ keys_l · (w + φ·filter_l)` settle it.
//! Then
//!
//! * filters (IP1's) = `φ · Σ keys_l` over the levels with filters but the last;
//! * tables = `Σ ⌈bytes_l / table target_l⌉`; top-level indexes = `τ · tables`;
//! * index blocks = `N · β · ι` + top-level indexes;
//! * IP1 = filters + top-level indexes; IP2 = filters + index blocks.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::engine::{Composition, EngineOpener, ShaleOpener};
use shale::{Db, FilterPolicy, Options, WriteBatch, WriteOptions, NUM_LEVELS};
use shale_workload::{Dataset, Distribution, KeyGen, KeyScheme};

use crate::args::{AdviseArgs, BenchKvdbArgs, WorkloadArgs};
use crate::error::{Error, Result};
use crate::filter_budget;
use crate::kvdb::{cores, run_one, Workload, SETUP_CACHE};
use crate::simulate;
use shale::trace::BlockTrace;

const MIB: f64 = 1024.0 * 1024.0;
const LAST: usize = NUM_LEVELS - 1;
/// Keys of the sample table that measures filter bytes per key when no level
/// with filters holds keys (about the keys of a 16 MiB table).
const FILTER_SAMPLE_KEYS: u64 = 100_000;

/// The cache size for `target` block-cache misses per Get, from the study's
/// model: about 2 misses at IP1, about 1 at IP2, linear in between; above 2 the
/// cache can be smaller than IP1 but the curve rises steeply, so IP1 is
/// advised; below 1 no cache size helps (every Get reads its data block).
pub fn advised_size(target: f64, comp: &Composition) -> u64 {
    advised_between(target, comp.ip1_bytes() as f64, comp.ip2_bytes() as f64)
}

fn advised_between(target: f64, ip1: f64, ip2: f64) -> u64 {
    let t = target.clamp(1.0, 2.0);
    (ip1 + (2.0 - t) * (ip2 - ip1)).round() as u64
}

/// Where the filter bytes per key of a projection come from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FilterSource {
    /// Measured over this many keys in the database's levels with filters.
    Levels(u64),
    /// Measured on a sample table of this many of the database's keys, written
    /// with its filter policy (no level with filters holds keys).
    Sample(u64),
    /// The filter policy writes no filters.
    None,
}

/// What a projection starts from: the database's measured costs and the
/// options its level shape follows.
#[derive(Clone, Debug, PartialEq)]
pub struct Costs {
    /// Entries of the measured database.
    pub keys: u64,
    /// Table bytes per key, filters excluded.
    pub table_bytes_per_key: f64,
    /// Data blocks per key.
    pub data_blocks_per_key: f64,
    /// Bytes of index partitions per data block.
    pub index_bytes_per_data_block: f64,
    /// Bytes of top-level index per table.
    pub top_index_bytes_per_table: f64,
    /// Filter bytes per key in a level with filters.
    pub filter_bytes_per_key: f64,
    /// Where `filter_bytes_per_key` was measured.
    pub filter_source: FilterSource,
    /// Per level: tables carry filters (the filter policy).
    pub filter_at: [bool; NUM_LEVELS],
    /// `Options::base_level_bytes`.
    pub base_level_bytes: u64,
    /// `Options::level_size_multiplier`.
    pub level_size_multiplier: f64,
    /// `Options::target_file_size_base`.
    pub target_file_size_base: u64,
}

/// The database the model expects at a key count.
#[derive(Clone, Debug, PartialEq)]
pub struct Projection {
    /// Keys.
    pub keys: u64,
    /// The level L0 compacts into.
    pub base_level: usize,
    /// Keys per level.
    pub level_keys: [f64; NUM_LEVELS],
    /// Bytes per level.
    pub level_bytes: [f64; NUM_LEVELS],
    /// Bytes of all tables.
    pub db_bytes: f64,
    /// Tables.
    pub tables: u64,
    /// Filters of every level but the last (what a Get consults).
    pub filter_bytes_except_last_level: f64,
    /// Filters if every level, the last included, had them (the study counts
    /// Pebble's, which has them on every level).
    pub filter_bytes_every_level: f64,
    /// Top-level indexes.
    pub top_level_index_bytes: f64,
    /// All index blocks: partitions and top-level indexes.
    pub index_bytes: f64,
}

impl Projection {
    /// IP1: filters of all levels but the last + top-level indexes.
    pub fn ip1(&self) -> f64 {
        self.filter_bytes_except_last_level + self.top_level_index_bytes
    }

    /// IP2: filters of all levels but the last + all index blocks.
    pub fn ip2(&self) -> f64 {
        self.filter_bytes_except_last_level + self.index_bytes
    }

    /// Bytes above the last level, as a share of the database.
    pub fn share_above_last(&self) -> f64 {
        let above: f64 = self.level_bytes[..LAST].iter().sum();
        above / self.db_bytes.max(1.0)
    }
}

/// The projection of `c` to `keys` keys (see the module doc).
pub fn project(c: &Costs, keys: u64) -> Projection {
    let n = keys as f64;
    let w = c.table_bytes_per_key.max(0.0);
    let phi = c.filter_bytes_per_key.max(0.0);
    let per_key = |level: usize| w + if c.filter_at[level] { phi } else { 0.0 };
    let plan_of = |bytes: f64| {
        shale::tools::level_plan(
            bytes.round() as u64,
            c.base_level_bytes,
            c.level_size_multiplier,
            c.target_file_size_base,
        )
    };
    let shape = |plan: &shale::tools::LevelPlan| {
        let mut level_keys = [0.0; NUM_LEVELS];
        let mut left = n;
        for (level, slot) in level_keys.iter_mut().enumerate().take(LAST) {
            if let Some(target) = plan.target_bytes[level] {
                let k = (target as f64 / per_key(level).max(f64::MIN_POSITIVE)).min(left);
                *slot = k;
                left -= k;
            }
        }
        level_keys[LAST] = left;
        let bytes: f64 = (0..NUM_LEVELS).map(|l| level_keys[l] * per_key(l)).sum();
        (level_keys, bytes)
    };
    // The shape depends on the size and the size (filters) on the shape; the
    // filters are ~1% of the bytes, so this settles in a round or two.
    let mut db_bytes = n * per_key(LAST);
    let mut plan = plan_of(db_bytes);
    let (mut level_keys, mut bytes) = shape(&plan);
    for _ in 0..8 {
        if (bytes - db_bytes).abs() < 1.0 {
            break;
        }
        db_bytes = bytes;
        plan = plan_of(db_bytes);
        (level_keys, bytes) = shape(&plan);
    }
    let level_bytes: [f64; NUM_LEVELS] = std::array::from_fn(|l| level_keys[l] * per_key(l));
    let tables: u64 = (0..NUM_LEVELS)
        .filter(|&l| level_bytes[l] > 0.0)
        .map(|l| match plan.table_bytes[l] {
            Some(t) if t > 0 => (level_bytes[l] / t as f64).ceil() as u64,
            _ => 1,
        })
        .sum();
    let filters: f64 = (0..LAST)
        .filter(|&l| c.filter_at[l])
        .map(|l| level_keys[l] * phi)
        .sum();
    let top = tables as f64 * c.top_index_bytes_per_table.max(0.0);
    let partitions = n * c.data_blocks_per_key.max(0.0) * c.index_bytes_per_data_block.max(0.0);
    Projection {
        keys,
        base_level: plan.base_level,
        level_keys,
        level_bytes,
        db_bytes: bytes,
        tables,
        filter_bytes_except_last_level: filters,
        filter_bytes_every_level: n * phi,
        top_level_index_bytes: top,
        index_bytes: partitions + top,
    }
}

/// The study's published figures for Pebble v1.1.5 on the same dataset
/// (32-byte keys, 110-byte values), in decimal units as published; `None`
/// where the study gives none.
struct Study {
    keys: u64,
    db: &'static str,
    tables: Option<&'static str>,
    filters_every_level: &'static str,
    index: &'static str,
    ip1: Option<(&'static str, &'static str)>,
    ip2: Option<(&'static str, &'static str)>,
}

const STUDY: [Study; 3] = [
    Study {
        keys: 200_000_000,
        db: "22 GB",
        tables: Some("1,418"),
        filters_every_level: "238 MB",
        index: "176 MB",
        ip1: Some(("~32 MB", "0.11-0.14%")),
        ip2: Some(("~207 MB", "~0.9%")),
    },
    Study {
        keys: 2_000_000_000,
        db: "224 GB",
        tables: None,
        filters_every_level: "2.3 GB",
        index: "1.7 GB",
        ip1: None,
        ip2: None,
    },
    Study {
        keys: 20_000_000_000,
        db: "2.2 TB",
        tables: None,
        filters_every_level: "23 GB",
        index: "18 GB",
        ip1: None,
        ip2: None,
    },
];

/// Measures the projection's costs on `db` (opened with `opts`).
fn measure(db: &Db, opts: &Options) -> Result<Costs> {
    let s = db.summary()?;
    let t = s.total();
    if t.entries == 0 {
        return Err(Error::msg(
            "the database holds no table to measure; load it (and let it settle) first",
        ));
    }
    let keys = t.entries;
    let policy = opts.filter_policy;
    let filter_at: [bool; NUM_LEVELS] = std::array::from_fn(|l| policy.applies_to(l));
    let (filtered_keys, filtered_bytes) = s
        .levels
        .iter()
        .filter(|l| filter_at[l.level] && l.filter_bytes > 0)
        .fold((0u64, 0u64), |(k, b), l| {
            (k + l.entries, b + l.filter_bytes)
        });
    let (filter_bytes_per_key, filter_source) = if !filter_at.iter().any(|&f| f) {
        (0.0, FilterSource::None)
    } else if filtered_keys > 0 {
        (
            filtered_bytes as f64 / filtered_keys as f64,
            FilterSource::Levels(filtered_keys),
        )
    } else {
        let (per_key, n) = sample_filter_cost(db, policy)?;
        (per_key, FilterSource::Sample(n))
    };
    Ok(Costs {
        keys,
        table_bytes_per_key: t.bytes.saturating_sub(t.filter_bytes) as f64 / keys as f64,
        data_blocks_per_key: t.data_blocks as f64 / keys as f64,
        index_bytes_per_data_block: t.index_partition_bytes as f64 / t.data_blocks.max(1) as f64,
        top_index_bytes_per_table: t.top_level_index_bytes as f64 / t.tables.max(1) as f64,
        filter_bytes_per_key,
        filter_source,
        filter_at,
        base_level_bytes: opts.base_level_bytes,
        level_size_multiplier: opts.level_size_multiplier,
        target_file_size_base: opts.target_file_size_base,
    })
}

/// Filter bytes per key of a table written with `policy` from the first
/// [`FILTER_SAMPLE_KEYS`] entries of `db`, in memory: a flush to L0, which
/// has filters under every policy that writes any.
fn sample_filter_cost(db: &Db, policy: FilterPolicy) -> Result<(f64, u64)> {
    let opts = Options::default()
        .fs(Arc::new(shale::env::MemFs::new()))
        .filter_policy(policy);
    let sample = Db::open("/advise-filter-sample", opts)?;
    let mut batch = WriteBatch::new();
    let mut n = 0u64;
    for row in db.range::<&[u8], _>(..)? {
        let (key, value) = row?;
        batch.put(&key, &value);
        n += 1;
        if n.is_multiple_of(1000) {
            sample.write(
                std::mem::replace(&mut batch, WriteBatch::new()),
                &WriteOptions::default(),
            )?;
        }
        if n >= FILTER_SAMPLE_KEYS {
            break;
        }
    }
    sample.write(batch, &WriteOptions::default())?;
    sample.flush()?;
    let s = sample.summary()?;
    sample.close()?;
    let (keys, bytes) = s
        .levels
        .iter()
        .filter(|l| l.filter_bytes > 0)
        .fold((0u64, 0u64), |(k, b), l| {
            (k + l.entries, b + l.filter_bytes)
        });
    if keys == 0 {
        return Err(Error::msg(
            "measuring filter bytes per key: a sample table written with the filter policy has no filter",
        ));
    }
    Ok((bytes as f64 / keys as f64, keys))
}

/// A byte count in decimal units, as the study publishes them: `22.0 GB`,
/// `207 MB`, `989 B`.
fn decimal_bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["kB", "MB", "GB", "TB", "PB"];
    if b < 1000.0 {
        return format!("{b:.0} B");
    }
    let mut x = b / 1000.0;
    let mut unit = UNITS[0];
    for u in UNITS.iter().skip(1) {
        if x < 999.5 {
            break;
        }
        x /= 1000.0;
        unit = u;
    }
    if x < 9.995 {
        format!("{x:.2} {unit}")
    } else if x < 99.95 {
        format!("{x:.1} {unit}")
    } else {
        format!("{x:.0} {unit}")
    }
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// The measured database's shape, for its own row.
struct Shape {
    tables: u64,
    /// Bytes above the last level / all bytes.
    share_above_last: f64,
}

/// One row of the projection table.
struct Row {
    keys: u64,
    source: String,
    db: String,
    tables: String,
    above_last: String,
    filters_every_level: String,
    index: String,
    ip1: String,
    ip1_pct: String,
    ip2: String,
    ip2_pct: String,
    cache: String,
}

impl Row {
    fn model(p: &Projection, target: f64, source: &str) -> Row {
        let pct = |b: f64| format!("{:.3}%", 100.0 * b / p.db_bytes.max(1.0));
        let cache = advised_between(target, p.ip1(), p.ip2()) as f64;
        Row {
            keys: p.keys,
            source: source.into(),
            db: decimal_bytes(p.db_bytes),
            tables: thousands(p.tables),
            above_last: format!("{:.1}%", 100.0 * p.share_above_last()),
            filters_every_level: decimal_bytes(p.filter_bytes_every_level),
            index: decimal_bytes(p.index_bytes),
            ip1: decimal_bytes(p.ip1()),
            ip1_pct: pct(p.ip1()),
            ip2: decimal_bytes(p.ip2()),
            ip2_pct: pct(p.ip2()),
            cache: decimal_bytes(cache),
        }
    }

    fn study(s: &Study) -> Row {
        let dash = || "-".to_string();
        Row {
            keys: s.keys,
            source: "study (Pebble)".into(),
            db: s.db.into(),
            tables: s.tables.map_or_else(dash, String::from),
            above_last: dash(),
            filters_every_level: s.filters_every_level.into(),
            index: s.index.into(),
            ip1: s.ip1.map_or_else(dash, |(b, _)| b.into()),
            ip1_pct: s.ip1.map_or_else(dash, |(_, p)| p.into()),
            ip2: s.ip2.map_or_else(dash, |(b, _)| b.into()),
            ip2_pct: s.ip2.map_or_else(dash, |(_, p)| p.into()),
            cache: dash(),
        }
    }
}

fn write_rows(out: &mut dyn Write, rows: &[Row], target: f64) -> Result {
    let header = format!(
        "{:>15}  {:<15} {:>9} {:>7} {:>8} {:>11} {:>10} {:>9} {:>10} {:>9} {:>7} {:>12}",
        "keys",
        "source",
        "DB",
        "tables",
        "above L6",
        "filters*",
        "index",
        "IP1",
        "IP1 %",
        "IP2",
        "IP2 %",
        format!("for {target:.2} I/O")
    );
    writeln!(out, "{header}").map_err(Error::output)?;
    for r in rows {
        writeln!(
            out,
            "{:>15}  {:<15} {:>9} {:>7} {:>8} {:>11} {:>10} {:>9} {:>10} {:>9} {:>7} {:>12}",
            thousands(r.keys),
            r.source,
            r.db,
            r.tables,
            r.above_last,
            r.filters_every_level,
            r.index,
            r.ip1,
            r.ip1_pct,
            r.ip2,
            r.ip2_pct,
            r.cache
        )
        .map_err(Error::output)?;
    }
    Ok(())
}

/// The lines of `--keys`: the measured costs, the model's assumptions, and a
/// table of this database (measured and modelled), each requested key count
/// and the study's figures at the same counts.
fn write_projection(
    out: &mut dyn Write,
    c: &Costs,
    comp: &Composition,
    measured: &Shape,
    keys: &[u64],
    target: f64,
) -> Result {
    let w = |out: &mut dyn Write, line: String| writeln!(out, "{line}").map_err(Error::output);
    w(out, String::new())?;
    w(
        out,
        format!(
            "projection (--keys), from this database's measured costs at {} keys:",
            thousands(c.keys)
        ),
    )?;
    w(
        out,
        format!(
            "  {:.2} table bytes per key (filters not counted), {:.5} data blocks per key, {:.2} index-partition bytes per data block, {:.1} top-level-index bytes per table",
            c.table_bytes_per_key,
            c.data_blocks_per_key,
            c.index_bytes_per_data_block,
            c.top_index_bytes_per_table
        ),
    )?;
    let filters = match c.filter_source {
        FilterSource::Levels(n) => format!(
            "  {:.4} filter bytes per key, over the {} keys of the levels with filters",
            c.filter_bytes_per_key,
            thousands(n)
        ),
        FilterSource::Sample(n) => format!(
            "  {:.4} filter bytes per key, measured on a table of {} of this database's keys written in memory with its filter policy (no level with filters holds keys here)",
            c.filter_bytes_per_key,
            thousands(n)
        ),
        FilterSource::None => "  no filters: the filter policy writes none".into(),
    };
    w(out, filters)?;
    let own = project(c, c.keys);
    w(
        out,
        format!(
            "  levels: each from the base level to L5 at the picker's target, L0 empty, the other keys in L6 (a settled database that grew to that size); this database has {:.1}% of its bytes above L6, the model {:.1}% at its size",
            100.0 * measured.share_above_last,
            100.0 * own.share_above_last()
        ),
    )?;
    w(out, "  decimal units (kB, MB, GB = 10^3, 10^6, 10^9 bytes) as the study's; filters* = filters if every level had them (shale's L6 has none; Pebble's has), index = all index blocks".into())?;
    let pct = |b: u64| format!("{:.3}%", 100.0 * b as f64 / comp.db_bytes.max(1) as f64);
    let mut rows = vec![
        Row {
            keys: c.keys,
            source: "this database".into(),
            db: decimal_bytes(comp.db_bytes as f64),
            tables: thousands(measured.tables),
            above_last: format!("{:.1}%", 100.0 * measured.share_above_last),
            filters_every_level: "-".into(),
            index: decimal_bytes(comp.index_bytes as f64),
            ip1: decimal_bytes(comp.ip1_bytes() as f64),
            ip1_pct: pct(comp.ip1_bytes()),
            ip2: decimal_bytes(comp.ip2_bytes() as f64),
            ip2_pct: pct(comp.ip2_bytes()),
            cache: decimal_bytes(advised_size(target, comp) as f64),
        },
        Row::model(&own, target, "model"),
    ];
    for &n in keys {
        // The database's own size already has its model row.
        if n != c.keys {
            rows.push(Row::model(&project(c, n), target, "model"));
        }
        if let Some(s) = STUDY.iter().find(|s| s.keys == n) {
            rows.push(Row::study(s));
        }
    }
    write_rows(out, &rows, target)?;
    let base = |p: &Projection| {
        let levels: Vec<String> = (0..NUM_LEVELS)
            .filter(|&l| p.level_bytes[l] > 0.0)
            .map(|l| format!("L{l} {}", decimal_bytes(p.level_bytes[l])))
            .collect();
        levels.join(", ")
    };
    for &n in keys {
        w(
            out,
            format!(
                "  levels at {} keys: {}",
                thousands(n),
                base(&project(c, n))
            ),
        )?;
    }
    Ok(())
}

/// The advice from a trace: the smallest cache whose replay reads at most
/// `target` blocks per Get, beside `uniform`, the uniform-key advice.
fn write_trace_advice(
    out: &mut dyn Write,
    t: &BlockTrace,
    path: Option<&Path>,
    target: f64,
    comp: &Composition,
    uniform: u64,
) -> Result {
    let pct = |b: u64| 100.0 * b as f64 / comp.db_bytes.max(1) as f64;
    let mark = simulate::start_mark(t, None)?;
    let threads = cores();
    // Up to a tenth of the database: past it, caching data blocks is what
    // a target asks for, and a bigger cache is the user's call.
    let max = (comp.db_bytes / 10).max(1 << 20);
    let found = simulate::smallest_cache_for(
        t,
        target,
        max,
        threads,
        mark.as_deref(),
        shale::trace::Policy::Shale,
    )?;
    let name = path.map_or(String::new(), |p| format!(" {}", p.display()));
    let at_uniform = simulate::replay(
        t,
        &[uniform],
        threads,
        mark.as_deref(),
        shale::trace::Policy::Shale,
    )?;
    let mut lines = vec![format!(
        "on the access pattern of the trace{name} (block reads per Get, replayed through the block cache):"
    )];
    match found {
        Some(s) => {
            let bytes = s.capacity;
            lines.push(format!(
                "  smallest cache for at most {target:.2} reads per Get: {bytes} bytes ({:.2} MiB, {:.3}% of the database): {:.3} reads per Get (misses per Get: {})",
                bytes as f64 / MIB,
                pct(bytes),
                s.reads_per_get(),
                simulate::kinds_text(&s)
            ));
        }
        None => lines.push(format!(
            "  no cache up to {:.2} MiB ({:.3}% of the database) reaches {target:.2} reads per Get",
            max as f64 / MIB,
            pct(max)
        )),
    }
    if let Some(s) = at_uniform.first() {
        lines.push(format!(
            "  the uniform-key advice above ({:.2} MiB) gives {:.3} reads per Get on it",
            uniform as f64 / MIB,
            s.reads_per_get()
        ));
    }
    for line in lines {
        writeln!(out, "{line}").map_err(Error::output)?;
    }
    Ok(())
}

/// The filter bits per level for a budget, and how to load with them.
fn write_filter_plan(
    out: &mut dyn Write,
    p: &filter_budget::FilterPlan,
    comp: &Composition,
) -> Result {
    let pct = |b: u64| 100.0 * b as f64 / comp.db_bytes.max(1) as f64;
    let budget = p.budget;
    let mut lines = vec![format!(
        "filter bits per level for a cache of {:.2} MiB ({:.3}% of the database), binary fuse filters{}:",
        budget as f64 / MIB,
        pct(budget),
        if p.over_budget {
            " (OVER BUDGET: even 4-bit fingerprints do not fit; the narrowest plan is shown)"
        } else {
            ""
        }
    )];
    for l in &p.levels {
        lines.push(format!(
            "  L{}: {} keys, {} bits a key ({}-bit fingerprints), {:.2} MiB, {:.2}% false positives: {:+.4} reads per Get",
            l.level,
            thousands(l.keys),
            l.bits_per_key,
            l.fingerprint_bits,
            l.bytes as f64 / MIB,
            100.0 * l.false_positive_rate,
            l.reads_per_get
        ));
    }
    lines.push(format!(
        "  filters {:.2} MiB + index blocks {:.2} MiB + {:.2} MiB kept free for data blocks and shards",
        p.filter_bytes as f64 / MIB,
        p.index_bytes as f64 / MIB,
        p.reserve as f64 / MIB
    ));
    lines.push(format!(
        "  expected with them cached: {:.3} block reads per Get (uniform reads of stored keys; the level shape of this database)",
        p.reads_per_get
    ));
    let bits: Vec<String> = p
        .levels
        .iter()
        .map(|l| format!("L{}={}", l.level, l.bits_per_key))
        .collect();
    if !bits.is_empty() {
        lines.push(format!(
            "  load with: shale load --filter-bits {} (Options: FilterPolicy::level_bits_per_key)",
            bits.join(",")
        ));
    }
    for line in lines {
        writeln!(out, "{line}").map_err(Error::output)?;
    }
    Ok(())
}

/// `shale advise`.
pub fn advise(a: &AdviseArgs, out: &mut dyn Write) -> Result {
    let opener = ShaleOpener {
        direct_io: true,
        ..ShaleOpener::default()
    };
    let target = a.target_io.unwrap_or(1.0);
    if !(target.is_finite() && target > 0.0) {
        return Err(Error::Usage("--target-io must be a positive number".into()));
    }
    let trace = a.trace.as_deref().map(simulate::load_trace).transpose()?;
    let comp = match (&a.db, &trace) {
        (Some(dir), _) => {
            if !dir.join("CURRENT").exists() {
                return Err(Error::msg(format!(
                    "{} is not a shale database (no CURRENT); pass the directory of one",
                    dir.display()
                )));
            }
            // Advice only reads: nothing in the database is written.
            let e = opener
                .open_read_only(dir, SETUP_CACHE)
                .map_err(Error::msg)?;
            let comp = e.composition().map_err(Error::msg)?;
            e.close().map_err(Error::msg)?;
            if let Some(t) = &trace {
                let db = Db::open_read_only(dir, Options::default())?;
                let fingerprint = db.table_fingerprint();
                db.close()?;
                if fingerprint != t.header.db.fingerprint {
                    return Err(Error::msg(format!(
                        "the trace was recorded on other tables than those of {} (its table fingerprint is {:016x}, the database's {fingerprint:016x}); trace this database, or leave --db out to advise from the trace alone",
                        dir.display(),
                        t.header.db.fingerprint
                    )));
                }
            }
            comp
        }
        (None, Some(t)) => simulate::trace_composition(t),
        (None, None) => return Err(Error::Usage("pass --db DIR or --trace FILE".into())),
    };
    let size = advised_size(target, &comp);
    let pct = |b: u64| 100.0 * b as f64 / comp.db_bytes.max(1) as f64;
    let w = |out: &mut dyn Write, line: String| writeln!(out, "{line}").map_err(Error::output);
    w(
        out,
        format!("database: {:.1} MiB in tables", comp.db_bytes as f64 / MIB),
    )?;
    w(
        out,
        format!(
            "IP1 = {} bytes ({:.2} MiB, {:.3}% of the database): filters of all levels but the last + top-level indexes",
            comp.ip1_bytes(),
            comp.ip1_bytes() as f64 / MIB,
            pct(comp.ip1_bytes())
        ),
    )?;
    w(
        out,
        format!(
            "IP2 = {} bytes ({:.2} MiB, {:.3}% of the database): filters of all levels but the last + all index blocks",
            comp.ip2_bytes(),
            comp.ip2_bytes() as f64 / MIB,
            pct(comp.ip2_bytes())
        ),
    )?;
    w(
        out,
        format!(
            "advised block cache for about {target:.2} I/Os per Get: {size} bytes ({:.2} MiB, {:.3}% of the database)",
            size as f64 / MIB,
            pct(size)
        ),
    )?;
    if target < 1.0 {
        w(out, "note: below 1 I/O per Get needs more than index caching: every Get of a key outside the cache reads its data block".into())?;
    }
    w(out, "phases: below IP1 a Get also reads filters and top-level indexes from disk (well over 2 I/Os); between IP1 and IP2 it reads an index partition and a data block (about 2);".into())?;
    w(out, "        at IP2 and above only the data block (about 1); caching data blocks beyond that helps little for random keys.".into())?;
    if let Some(t) = &trace {
        write_trace_advice(out, t, a.trace.as_deref(), target, &comp, size)?;
    }
    if let (Some(budget), Some(dir)) = (&a.budget, &a.db) {
        let bytes = crate::kvdb::parse_size(budget, &comp)
            .map_err(|e| Error::Usage(format!("--budget: {e}")))?;
        let db = Db::open_read_only(dir, Options::default())?;
        let summary = db.summary();
        let tables = db.tables();
        db.close()?;
        let input = filter_budget::BudgetInput {
            level_keys: summary?.levels.iter().map(|l| l.entries).collect(),
            level_coverage: filter_budget::level_coverage(&tables?),
            index_bytes: comp.index_bytes,
            budget: bytes,
        };
        write_filter_plan(out, &filter_budget::plan(&input), &comp)?;
    }
    let needs_db =
        |flag: &str| Error::Usage(format!("{flag} reads the database: pass --db DIR with it"));
    if !a.keys.is_empty() {
        let dir = a.db.as_deref().ok_or_else(|| needs_db("--keys"))?;
        let opts = Options::default();
        let db = Db::open_read_only(dir, opts.clone())?;
        let costs = measure(&db, &opts);
        let shape = db.summary().map(|s| {
            let t = s.total();
            let above: u64 = s.levels.iter().take(LAST).map(|l| l.bytes).sum();
            Shape {
                tables: t.tables,
                share_above_last: above as f64 / t.bytes.max(1) as f64,
            }
        });
        db.close()?;
        write_projection(out, &costs?, &comp, &shape?, &a.keys, target)?;
    }
    if a.verify {
        let dir = a.db.as_deref().ok_or_else(|| needs_db("--verify"))?;
        let dataset = Dataset::default();
        let keys = comp.entries;
        let args = BenchKvdbArgs {
            db: Some(dir.to_path_buf()),
            zoned: crate::args::ZonedArg::default(),
            workload: WorkloadArgs {
                keys,
                reads: a.reads,
                warmup: 0.0005,
                threads: None,
                missing: 0.0,
                scheme: "hash".into(),
                distribution: "uniform".into(),
                value_size: dataset.value_size,
                direct_io: true,
            },
            cache: None,
            sweep: false,
            out: PathBuf::from("."),
            json: false,
            device_limit_seconds: 0.0,
            device_limit_depth: None,
            batch: 1,
            stream: false,
            read_threads: None,
            io_uring: true,
            sample: crate::args::SampleArgs {
                sample_interval: 5.0,
            },
            trace: crate::args::TraceArgs {
                trace: None,
                trace_sample: 1.0,
            },
        };
        let workload = Workload {
            keygen: KeyGen::new(KeyScheme::Hash),
            dataset,
            keys,
            distribution: Distribution::Uniform,
            missing: 0.0,
        };
        let run = run_one(
            &opener,
            dir,
            &args,
            &workload,
            cores(),
            size,
            &comp,
            "verifying",
            &crate::live::LiveStats::new(1),
            Default::default(),
        )?;
        w(
            out,
            format!(
                "measured at {:.2} MiB: {:.3} I/Os per Get (cache misses), {:.3} physical reads per Get over {} Gets",
                size as f64 / MIB,
                run.io_per_get,
                run.physical_reads_per_get,
                run.gets
            ),
        )?;
    }
    Ok(())
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
    fn advice_interpolates_between_the_inflection_points() {
        let c = comp();
        assert_eq!(advised_size(1.0, &c), c.ip2_bytes());
        assert_eq!(advised_size(2.0, &c), c.ip1_bytes());
        assert_eq!(advised_size(5.0, &c), c.ip1_bytes());
        assert_eq!(advised_size(0.5, &c), c.ip2_bytes());
        let mid = advised_size(1.5, &c);
        assert_eq!(mid, (c.ip1_bytes() + c.ip2_bytes()) / 2);
    }

    /// Costs like shale's table format 2 (round figures), default options.
    fn costs() -> Costs {
        let o = Options::default();
        Costs {
            keys: 2_000_000,
            table_bytes_per_key: 150.0,
            data_blocks_per_key: 1.0 / 27.0,
            index_bytes_per_data_block: 6.5,
            top_index_bytes_per_table: 30.0,
            filter_bytes_per_key: 1.25,
            filter_source: FilterSource::Sample(100_000),
            filter_at: std::array::from_fn(|l| o.filter_policy.applies_to(l)),
            base_level_bytes: o.base_level_bytes,
            level_size_multiplier: o.level_size_multiplier,
            target_file_size_base: o.target_file_size_base,
        }
    }

    const MB: f64 = 1024.0 * 1024.0;

    #[test]
    fn projection_fills_the_levels_above_the_last_to_their_targets() {
        let c = costs();
        let p = project(&c, 20_000_000);
        // Every key is somewhere, and the bytes add up per level.
        let keys: f64 = p.level_keys.iter().sum();
        assert!((keys - 20e6).abs() < 1e-3, "{keys}");
        assert!((p.db_bytes - p.level_bytes.iter().sum::<f64>()).abs() < 1.0);
        // The shape is the picker's plan for the projected size: base L4 at
        // 64 MiB, L5 at its target, L6 the rest.
        let plan = shale::tools::level_plan(
            p.db_bytes.round() as u64,
            c.base_level_bytes,
            c.level_size_multiplier,
            c.target_file_size_base,
        );
        assert_eq!(p.base_level, 4);
        assert_eq!(plan.base_level, 4);
        for l in 4..LAST {
            let target = plan.target_bytes[l].unwrap_or(0) as f64;
            assert!((p.level_bytes[l] - target).abs() < 1.0, "L{l}");
        }
        assert!((p.level_bytes[4] - 64.0 * MB).abs() < 1.0);
        assert_eq!(p.level_bytes[..4], [0.0; 4]);
        // By hand: 20M keys at 150 bytes plus 1.25 per key above L6 is about
        // 3.0 GB; L6 expects 90% of it, L5 is sqrt(64 MiB * L6), so ~16% of
        // the bytes (about 3.2M keys) sit above L6 and carry filters.
        let d = p.db_bytes;
        let l6 = 0.9 * d / MB;
        let l5 = (64.0 * l6).sqrt() * MB;
        assert!(
            (p.level_bytes[5] - l5).abs() / l5 < 1e-3,
            "{} {l5}",
            p.level_bytes[5]
        );
        let above_keys = (64.0 * MB + l5) / 151.25;
        let filters = above_keys * 1.25;
        assert!((p.filter_bytes_except_last_level - filters).abs() < 1.0);
        assert!((d - (20e6 * 150.0 + filters)).abs() < 2.0, "{d}");
        assert!(
            (0.15..0.18).contains(&p.share_above_last()),
            "{}",
            p.share_above_last()
        );
        // Index partitions from blocks per key and bytes per block; top-level
        // indexes from the tables of each level at its table target.
        let partitions = 20e6 / 27.0 * 6.5;
        assert!((p.index_bytes - p.top_level_index_bytes - partitions).abs() < 1.0);
        let tables = (64.0 * MB / (4.0 * MB)).ceil()
            + (p.level_bytes[5] / (8.0 * MB)).ceil()
            + (p.level_bytes[6] / (16.0 * MB)).ceil();
        assert_eq!(p.tables, tables as u64);
        assert!((p.top_level_index_bytes - tables * 30.0).abs() < 1e-6);
        assert!((p.ip1() - (filters + tables * 30.0)).abs() < 1.0);
        assert!((p.ip2() - (p.ip1() + partitions)).abs() < 1.0);
        assert!((p.filter_bytes_every_level - 20e6 * 1.25).abs() < 1e-6);
    }

    #[test]
    fn projection_grows_levels_and_keeps_the_filter_share_falling() {
        let c = costs();
        let small = project(&c, 200_000);
        // 30 MB: L6 alone, as the picker's base level is the last one.
        assert_eq!(small.base_level, LAST);
        assert_eq!(small.filter_bytes_except_last_level, 0.0);
        assert!((small.ip1() - small.top_level_index_bytes).abs() < 1e-9);
        let mut last_base = LAST;
        let mut last_share = 1.0;
        for n in [20_000_000u64, 200_000_000, 2_000_000_000, 20_000_000_000] {
            let p = project(&c, n);
            assert!(p.base_level <= last_base, "{n}: base L{}", p.base_level);
            let share = p.share_above_last();
            assert!(share < last_share, "{n}: {share}");
            assert!(share > 0.1, "{n}: {share}");
            last_base = p.base_level;
            last_share = share;
        }
        // No filters: IP1 is the top-level indexes alone at any size.
        let none = Costs {
            filter_bytes_per_key: 0.0,
            filter_source: FilterSource::None,
            filter_at: [false; NUM_LEVELS],
            ..c
        };
        let p = project(&none, 20_000_000);
        assert_eq!(p.filter_bytes_except_last_level, 0.0);
        assert!((p.db_bytes - 20e6 * 150.0).abs() < 1.0);
    }

    /// A database in memory holding `n` dataset keys, flushed to L0 or (with
    /// `compact`) merged into L6.
    fn memory_db(n: u64, policy: FilterPolicy, compact: bool) -> (Db, Options) {
        let opts = Options::default()
            .fs(Arc::new(shale::env::MemFs::new()))
            .filter_policy(policy);
        let db = Db::open("/db", opts.clone()).expect("open");
        let (keygen, dataset) = (KeyGen::new(KeyScheme::Hash), Dataset::default());
        let mut batch = WriteBatch::new();
        for i in 0..n {
            batch.put(&keygen.key_vec(i), &dataset.value(i));
        }
        db.write(batch, &WriteOptions::default()).expect("write");
        db.flush().expect("flush");
        if compact {
            db.compact_all().expect("compact");
        }
        (db, opts)
    }

    #[test]
    fn costs_come_from_the_tables_or_a_sample_of_the_keys() {
        // Keys in L0, which has filters: measured there.
        let (db, opts) = memory_db(5000, FilterPolicy::default(), false);
        let c = measure(&db, &opts).expect("measure");
        let s = db.summary().expect("summary");
        let t = s.total();
        assert_eq!(c.keys, 5000);
        assert_eq!(c.filter_source, FilterSource::Levels(5000));
        assert!(t.filter_bytes > 0);
        assert_eq!(c.filter_bytes_per_key, t.filter_bytes as f64 / 5000.0);
        assert_eq!(
            c.table_bytes_per_key,
            (t.bytes - t.filter_bytes) as f64 / 5000.0
        );
        assert_eq!(c.data_blocks_per_key, t.data_blocks as f64 / 5000.0);
        assert_eq!(
            c.index_bytes_per_data_block,
            t.index_partition_bytes as f64 / t.data_blocks as f64
        );
        assert_eq!(
            c.top_index_bytes_per_table,
            t.top_level_index_bytes as f64 / t.tables as f64
        );
        assert_eq!(c.filter_at, [true, true, true, true, true, true, false]);
        let in_l0 = c.filter_bytes_per_key;
        // The default policy's budget, 9 bits a key (binary fuse filters of
        // 8.7 bits in full pages, the last partition of each table less full).
        assert!((1.05..1.25).contains(&in_l0), "{in_l0}");
        db.close().expect("close");

        // All in L6, which has none: a sample table of the same keys gives the
        // same cost per key.
        let (db, opts) = memory_db(5000, FilterPolicy::default(), true);
        assert_eq!(db.summary().expect("summary").total().filter_bytes, 0);
        let c = measure(&db, &opts).expect("measure");
        assert_eq!(c.filter_source, FilterSource::Sample(5000));
        assert!((c.filter_bytes_per_key - in_l0).abs() < 1e-9, "{c:?}");
        db.close().expect("close");

        // No filter anywhere by policy.
        let none = FilterPolicy::default().levels(shale::FilterLevels::None);
        let (db, opts) = memory_db(2000, none, false);
        let c = measure(&db, &opts).expect("measure");
        assert_eq!(c.filter_source, FilterSource::None);
        assert_eq!(c.filter_bytes_per_key, 0.0);
        assert_eq!(c.filter_at, [false; NUM_LEVELS]);
        db.close().expect("close");
    }

    #[test]
    fn decimal_units_like_the_study() {
        assert_eq!(decimal_bytes(989.0), "989 B");
        assert_eq!(decimal_bytes(2179.0), "2.18 kB");
        assert_eq!(decimal_bytes(32e6), "32.0 MB");
        assert_eq!(decimal_bytes(207e6), "207 MB");
        assert_eq!(decimal_bytes(22e9), "22.0 GB");
        assert_eq!(decimal_bytes(2.2e12), "2.20 TB");
        assert_eq!(decimal_bytes(999.6e6), "1.00 GB");
        assert_eq!(thousands(20_000_000_000), "20,000,000,000");
        assert_eq!(thousands(999), "999");
    }
}
