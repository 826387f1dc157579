//! `bench zns`: db_bench's fillrandom then overwrite, through the code of
//! `bench db` ([`run_bench`]), once on the regular file system and once on a
//! freshly formatted zoned device, with each backend's device write
//! amplification per benchmark:
//!
//! * zoned: the zone file system's counters ([`ZoneFsStats::waf`]: what the
//!   device writes, the collector's copies included, over what the file
//!   system asks it to write), as differences over each benchmark;
//! * posix (a conventional SSD): the run's writes are recorded by a
//!   [`TraceFs`] around the posix file system and replayed on the FTL model
//!   ([`replay_trace`]) at each `--op`; a benchmark's figure is the replay of
//!   the trace up to its end less the replay up to its start, both on a
//!   device sized from the whole trace.
//!
//! After each benchmark the database settles (flush, then compactions until
//! none is needed; not timed), so that a benchmark's figures include the
//! compactions its writes caused. Method: docs/bench-zns.md.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use shale::env::{FileSystem, TraceEvent, TraceFs};
use shale::{Db, Metrics, Options};
use shale_zoned::ftl::{replay_trace, FtlStats, ReplayOptions, ReplayReport, FTL_PAGE_SIZE};
use shale_zoned::{EmulatedOptions, EmulatedZoned, ZoneFsStats, ZonedGeometry};

use crate::args::BenchZnsArgs;
use crate::dbbench::{check_key_size, run_bench, Bench, BenchResult, Config};
use crate::error::{Error, Result};
use crate::fmt::human_bytes;
use crate::runner::interrupted;
use crate::storage::{self, geometry_line, open_device, Backend, GeometryDoc, Storage, ZoneFsDoc};

/// Bytes of keys and values each benchmark writes by default.
pub const DEFAULT_BYTES: u64 = 500_000_000;
/// Key size: db_bench's default.
const KEY_SIZE: usize = 16;
/// The benchmarks, in order.
const BENCHES: [(Bench, &str); 2] = [
    (Bench::FillRandom, "fillrandom"),
    (Bench::Overwrite, "overwrite"),
];

/// Entries of `--num` by default: [`DEFAULT_BYTES`] of 16-byte keys and
/// `value_size`-byte values.
pub fn default_num(value_size: usize) -> u64 {
    (DEFAULT_BYTES as f64 / (KEY_SIZE + value_size) as f64).round() as u64
}

/// Data zones beyond the SSD model's logical capacity: one per placement
/// slot of the zone file system (its open zones are partly written at any
/// time) and the collector's reserved zone.
pub const HEADROOM_ZONES: u64 = 5 + 1;

/// Zones of the emulated device by default: as much data space as the
/// conventional-SSD model's logical capacity (the posix run's peak live
/// bytes over `utilisation`), in whole zones, plus [`HEADROOM_ZONES`] and the
/// 2 metadata zones. The two devices are then equally full, and the zoned
/// one has no spare space hidden from the host (an SSD's over-provisioning
/// comes on top of its logical capacity).
pub fn default_zones(peak_live_bytes: u64, utilisation: f64, zone_capacity: u64) -> u32 {
    let logical = (peak_live_bytes as f64 / utilisation).ceil() as u64;
    let data = logical.div_ceil(zone_capacity.max(1)) + HEADROOM_ZONES;
    u32::try_from(data + 2).unwrap_or(u32::MAX)
}

/// What the engine wrote over a benchmark.
#[derive(Clone, Debug, Serialize)]
pub struct EngineWrites {
    /// Bytes of the user's keys and values.
    pub user_bytes: u64,
    /// Write-ahead log bytes.
    pub wal_bytes: u64,
    /// Table bytes (flushes and compactions).
    pub table_bytes: u64,
    /// `(wal + tables) / user`, `None` without user bytes.
    pub write_amplification: Option<f64>,
}

impl EngineWrites {
    fn of(d: &Metrics) -> EngineWrites {
        let user = d.bytes_written_user;
        EngineWrites {
            user_bytes: user,
            wal_bytes: d.bytes_written_wal,
            table_bytes: d.bytes_written_tables,
            write_amplification: (user > 0)
                .then(|| (d.bytes_written_wal + d.bytes_written_tables) as f64 / user as f64),
        }
    }
}

/// One device write amplification figure.
#[derive(Clone, Debug, Serialize)]
pub struct Waf {
    /// `ftl` (the conventional-SSD model) or `zonefs`.
    pub model: &'static str,
    /// The FTL's over-provisioning; `None` for the zone file system.
    pub over_provisioning: Option<f64>,
    /// Device writes over host writes.
    pub waf: f64,
}

/// The FTL replay of one benchmark's writes at one over-provisioning.
#[derive(Clone, Debug, Serialize)]
pub struct FtlFigure {
    /// Over-provisioning asked for.
    pub over_provisioning: f64,
    /// What the device has after rounding to whole erase blocks.
    pub logical_bytes: u64,
    /// Physical capacity.
    pub physical_bytes: u64,
    /// Pages the host wrote in the benchmark.
    pub host_pages: u64,
    /// Pages garbage collection moved in the benchmark.
    pub gc_pages: u64,
    /// Blocks erased in the benchmark.
    pub erases: u64,
    /// `(host + gc) / host`.
    pub waf: f64,
    /// The trace's peak live data over the logical capacity (whole run).
    pub peak_utilisation: f64,
    /// 4 KiB pages per erase block: 256 (1 MiB), fewer when the device is
    /// too small for the model's spare blocks at the smallest `--op`.
    pub pages_per_block: u32,
}

/// One benchmark on one backend.
#[derive(Clone, Debug, Serialize)]
pub struct ZnsRun {
    /// `posix` or `zoned`.
    pub backend: &'static str,
    /// The db_bench name.
    pub benchmark: String,
    /// Writes done.
    pub ops: u64,
    /// Wall time in seconds (the settling after it not included).
    pub seconds: f64,
    /// db_bench's micros/op.
    pub micros_per_op: f64,
    /// Operations per second.
    pub ops_per_sec: f64,
    /// MiB of keys and values per second (db_bench's MB/s).
    pub mb_per_sec: Option<f64>,
    /// Seconds of settling after it.
    pub settle_seconds: f64,
    /// True if Ctrl-C cut it short.
    pub interrupted: bool,
    /// What the engine wrote, settling included.
    pub engine: EngineWrites,
    /// Bytes the device was asked to write for the host: the posix run's
    /// page writes (host pages x 4 KiB, as the FTL sees them), or the zone
    /// file system's writes (file data, padding, metadata).
    pub device_host_bytes: u64,
    /// The device write amplification: one per `--op` on posix, one on
    /// zoned.
    pub waf: Vec<Waf>,
    /// posix: the FTL replays behind `waf`.
    pub ftl: Vec<FtlFigure>,
    /// zoned: the zone file system's counters over the benchmark and its
    /// gauges at the end.
    pub zonefs: Option<ZonedRunDoc>,
}

/// The zone file system's figures of a zoned run of `bench zns`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ZonedRunDoc {
    /// Its counters over the benchmark.
    #[serde(flatten)]
    pub counters: ZoneFsDoc,
    /// Bytes of live files at the end.
    pub live_bytes: u64,
    /// Bytes written in the zones in use at the end.
    pub written_bytes: u64,
    /// `written_bytes / live_bytes`.
    pub space_amplification: f64,
    /// Zones for file data.
    pub data_zones: u32,
    /// Of them, empty.
    pub empty_zones: u32,
}

/// The document `bench zns --json` prints and writes to `results.json`.
#[derive(Serialize)]
struct ZnsResults<'a> {
    config: ZnsConfig<'a>,
    runs: &'a [ZnsRun],
    interrupted: bool,
}

/// What `bench zns` ran: its settings and the devices.
#[derive(Serialize)]
struct ZnsConfig<'a> {
    benchmarks: Vec<&'static str>,
    num: u64,
    key_size: usize,
    value_size: usize,
    user_bytes_per_benchmark: u64,
    write_buffer_size: Option<usize>,
    seed: u64,
    posix_db: &'a Path,
    zoned_device: &'a str,
    zoned_geometry: Option<GeometryDoc>,
    over_provisioning: &'a [f64],
    utilisation: f64,
    trace_events: usize,
}

/// A benchmark as measured, before the device figures are added.
struct Measured {
    result: BenchResult,
    settle_seconds: f64,
    engine: EngineWrites,
}

/// Runs the benchmarks on a database in `dir` on `fs`; `mark` is called
/// before the first benchmark and after each (after its settling; after the
/// last, once the database is closed), and its values are returned with the
/// measurements (one more mark than benchmarks run).
fn run_benches<M>(
    fs: Arc<dyn FileSystem>,
    dir: &Path,
    cfg: &Config,
    opts: &Options,
    label: &str,
    mut mark: impl FnMut() -> Result<M>,
) -> Result<(Vec<Measured>, Vec<M>)> {
    let db = Db::open(dir, opts.clone().fs(fs).create_if_missing(true))?;
    let mut marks = vec![mark()?];
    let mut measured = Vec::new();
    for (index, &(bench, name)) in BENCHES.iter().enumerate() {
        if interrupted() {
            break;
        }
        let before = db.metrics();
        let result = run_bench(&db, cfg, bench, name, index, None)?;
        let t0 = Instant::now();
        db.settle()?;
        let settle_seconds = t0.elapsed().as_secs_f64();
        let engine = EngineWrites::of(&db.metrics().delta(&before));
        eprintln!(
            "{label}: {} (settled in {settle_seconds:.1} s)",
            result.line()
        );
        measured.push(Measured {
            result,
            settle_seconds,
            engine,
        });
        if index + 1 < BENCHES.len() && !interrupted() {
            marks.push(mark()?);
        }
    }
    db.close()?;
    marks.push(mark()?);
    marks.truncate(measured.len() + 1);
    Ok((measured, marks))
}

fn run_of(backend: &'static str, m: &Measured) -> ZnsRun {
    let r = &m.result;
    ZnsRun {
        backend,
        benchmark: r.name.clone(),
        ops: r.ops,
        seconds: r.seconds,
        micros_per_op: r.micros_per_op,
        ops_per_sec: r.ops_per_sec,
        mb_per_sec: r.mb_per_sec,
        settle_seconds: m.settle_seconds,
        interrupted: r.interrupted,
        engine: m.engine.clone(),
        device_host_bytes: 0,
        waf: Vec::new(),
        ftl: Vec::new(),
        zonefs: None,
    }
}

/// Pages per erase block of the FTL model: `pages` (`--erase-block`, 1 MiB
/// by default), halved while a device sized for `events` at `utilisation`
/// is too small for the model's spare blocks at the smallest
/// over-provisioning `op` (a small run); the same for every `--op`, so that
/// their figures compare.
fn erase_block_pages(events: &[TraceEvent], op: f64, utilisation: f64, pages: u32) -> u32 {
    let peak = shale_zoned::ftl::peak_live_pages(events).max(1);
    let logical = (peak as f64 / utilisation).ceil() as u64;
    let mut pages = pages.max(1);
    while pages > 1 {
        let config = shale_zoned::ftl::FtlConfig {
            logical_pages: logical.div_ceil(u64::from(pages)) * u64::from(pages),
            over_provisioning: op,
            pages_per_block: pages,
            separate_gc_frontier: false,
        };
        if shale_zoned::ftl::Ftl::new(config).is_ok() {
            break;
        }
        pages /= 2;
    }
    pages
}

/// Whether the FTL model can be built for a run of `num` entries: the live
/// data of the run is at least its user bytes, so a model sized for those
/// (one page per erase block, the most room) is the smallest it replays on.
fn ftl_holds(num: u64, value_size: usize, op: f64, utilisation: f64) -> bool {
    let user_bytes = num.saturating_mul((KEY_SIZE + value_size) as u64);
    let logical = (user_bytes.div_ceil(FTL_PAGE_SIZE) as f64 / utilisation).ceil() as u64;
    shale_zoned::ftl::FtlConfig {
        logical_pages: logical.max(1),
        over_provisioning: op,
        pages_per_block: 1,
        separate_gc_frontier: false,
    }
    .erase_blocks()
    .is_ok()
}

/// The FTL figures of each benchmark window `ends[i-1]..ends[i]` of
/// `events` (`ends[0]` is where the first starts), at over-provisioning
/// `op`.
fn ftl_windows(
    events: &[TraceEvent],
    ends: &[usize],
    op: f64,
    utilisation: f64,
    pages_per_block: u32,
) -> Result<Vec<FtlFigure>> {
    let replay = |upto: usize, logical: Option<u64>| -> Result<ReplayReport> {
        let options = ReplayOptions {
            logical_bytes: logical,
            utilisation,
            pages_per_block,
            ..ReplayOptions::new(op)
        };
        replay_trace(&events[..upto], &options).map_err(|e| {
            Error::msg(format!(
                "replaying the posix run's writes on the FTL model at {:.0}% over-provisioning: {e}",
                op * 100.0
            ))
        })
    };
    let last = ends.last().copied().unwrap_or(0);
    let whole = replay(last, None)?;
    // Every prefix on the device the whole trace sized: a replay is
    // deterministic, so the prefix's counters are the whole replay's at that
    // point.
    let logical = Some(whole.logical_pages * FTL_PAGE_SIZE);
    let at = |end: usize| -> Result<FtlStats> {
        if end == last {
            Ok(whole.stats)
        } else if end == 0 {
            Ok(FtlStats::default())
        } else {
            Ok(replay(end, logical)?.stats)
        }
    };
    let mut figures = Vec::new();
    let mut start = at(0)?;
    for &end in &ends[1..] {
        let stop = at(end)?;
        let d = stop.since(&start);
        figures.push(FtlFigure {
            over_provisioning: op,
            logical_bytes: whole.logical_pages * FTL_PAGE_SIZE,
            physical_bytes: whole.physical_pages * FTL_PAGE_SIZE,
            host_pages: d.host_pages,
            gc_pages: d.gc_pages,
            erases: d.erases,
            waf: d.waf(),
            peak_utilisation: whole.peak_utilisation,
            pages_per_block,
        });
        start = stop;
    }
    Ok(figures)
}

/// The zoned device of the run, formatted afresh; `peak_live_bytes` of the
/// posix run sizes it by default.
fn fresh_zoned(a: &BenchZnsArgs, peak_live_bytes: u64) -> Result<Storage> {
    let path = &a.device;
    let backend = Backend::of(path);
    if backend == Backend::Block {
        if a.geometry.any() {
            return Err(Error::Usage(format!(
                "{} is a block device: it has its own geometry; the geometry flags are for \
                 emulated devices",
                path.display()
            )));
        }
        let device = open_device(path, None)?;
        storage::check_formattable(&device, Some(Path::new(ZONED_DIR)))
            .map_err(|e| Error::msg(format!("{e}; pass another --device")))?;
        return Ok(Storage::on_zoned(storage::format(device, 2)?));
    }
    let mut g: ZonedGeometry = a.geometry.geometry()?;
    if a.geometry.zones.is_none() {
        g.nr_zones = default_zones(peak_live_bytes, a.utilisation, g.zone_capacity);
        g.validate()
            .map_err(|e| Error::Usage(format!("bad device geometry: {e}")))?;
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::msg(format!("cannot create {}: {e}", parent.display())))?;
    }
    // An emulated device of another geometry from an earlier run is
    // replaced, when it holds nothing but an earlier run's database;
    // anything else at the path is left alone (create refuses it).
    if path.exists() {
        if let Ok(old) = EmulatedZoned::open(path, EmulatedOptions::default()) {
            let state = old.state_path().to_path_buf();
            let other = shale_zoned::ZonedDevice::geometry(&old) != g;
            let opened = storage::OpenedDevice {
                dev: Arc::new(old),
                path: path.clone(),
                backend,
                direct_io: false,
                created: false,
            };
            storage::check_formattable(&opened, Some(Path::new(ZONED_DIR)))
                .map_err(|e| Error::msg(format!("{e}; pass another --device")))?;
            drop(opened);
            if other {
                for f in [path.as_path(), state.as_path()] {
                    std::fs::remove_file(f)
                        .map_err(|e| Error::msg(format!("removing {}: {e}", f.display())))?;
                }
            }
        }
    }
    let device = open_device(path, Some(g))?;
    let created = device.created;
    storage::format(device, 2)
        .inspect_err(|_| {
            if created {
                storage::remove_emulated(path);
            }
        })
        .map(Storage::on_zoned)
}

/// The database directory of the zoned run, on the device's zone file system.
const ZONED_DIR: &str = "/zns";

/// `shale bench zns`.
pub fn run(a: &BenchZnsArgs, out: &mut dyn Write) -> Result {
    let num = a.num.unwrap_or_else(|| default_num(a.value_size));
    check_key_size(num, KEY_SIZE)?;
    if a.op.is_empty()
        || a.op
            .iter()
            .any(|&op| !(op.is_finite() && op > 0.0 && op <= 10.0))
    {
        return Err(Error::Usage(format!(
            "--op {:?}: over-provisioning levels are fractions above 0 (0.07 for 7%)",
            a.op
        )));
    }
    if a.erase_block == 0
        || !a.erase_block.is_multiple_of(FTL_PAGE_SIZE)
        || a.erase_block / FTL_PAGE_SIZE > u64::from(u32::MAX)
    {
        return Err(Error::Usage(format!(
            "--erase-block {}: a multiple of the model's {FTL_PAGE_SIZE}-byte page",
            a.erase_block
        )));
    }
    if !(a.utilisation > 0.0 && a.utilisation <= 1.0) {
        return Err(Error::Usage(format!(
            "--utilisation {}: a fraction in (0, 1]",
            a.utilisation
        )));
    }
    // The FTL model needs room for spare blocks: a run too small for it is
    // refused before anything runs.
    let smallest_op = a.op.iter().copied().fold(f64::INFINITY, f64::min);
    if !ftl_holds(num, a.value_size, smallest_op, a.utilisation) {
        let holds = |n| ftl_holds(n, a.value_size, smallest_op, a.utilisation);
        let (mut lo, mut hi) = (num, num.max(1));
        // Doubling ends: past 2^40 entries the model's page count overflows.
        while !holds(hi) && hi < 1 << 40 {
            (lo, hi) = (hi, hi.saturating_mul(2));
        }
        let advice = if holds(hi) {
            // The least that holds: in (lo, hi].
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if holds(mid) {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            format!("use --num {hi} or more")
        } else {
            "raise --op".to_string()
        };
        return Err(Error::Usage(format!(
            "--num {num}: too little data for the SSD model at --op {smallest_op} (it needs a \
             few spare erase blocks); {advice}"
        )));
    }
    let cfg = Config {
        num,
        reads: num,
        value_size: a.value_size,
        key_size: KEY_SIZE,
        threads: 1,
        readwritepercent: 90,
        seed: a.seed,
        // Each write timed: the time series' latency columns.
        histogram: true,
    };
    let mut opts = Options::default();
    if let Some(n) = a.write_buffer_size {
        if n == 0 {
            return Err(Error::Usage(
                "--write_buffer_size must be at least 1 byte".into(),
            ));
        }
        opts.write_buffer_size = n;
    }
    if let Some(o) = &a.out {
        std::fs::create_dir_all(o)
            .map_err(|e| Error::msg(format!("cannot create --out {}: {e}", o.display())))?;
    }
    crate::runner::install_interrupt();
    let user_bytes = num * (KEY_SIZE + a.value_size) as u64;
    if !a.json {
        writeln!(
            out,
            "shale bench zns: fillrandom then overwrite, {num} entries each ({KEY_SIZE}-byte keys, \
             {}-byte values: {:.1} MB), 1 thread",
            a.value_size,
            user_bytes as f64 / 1e6
        )
        .map_err(Error::output)?;
        out.flush().map_err(Error::output)?;
    }

    // The device is checked before anything runs: one that holds files
    // other than an earlier run's database, or that another process has
    // open, is refused now, not after the posix half.
    if a.device.exists() {
        let device = open_device(&a.device, None)?;
        storage::check_formattable(&device, Some(Path::new(ZONED_DIR)))
            .map_err(|e| Error::msg(format!("{e}; pass another --device")))?;
    }

    // posix, traced.
    let posix = Storage::posix();
    posix.remove_db_dir(&a.db)?;
    let traced = Arc::new(TraceFs::new(posix.fs()));
    let trace = traced.clone();
    let (measured, ends) = run_benches(traced, &a.db, &cfg, &opts, "posix", || Ok(trace.len()))?;
    let events = trace.take_events();
    let mut posix_runs: Vec<ZnsRun> = measured.iter().map(|m| run_of("posix", m)).collect();
    let pages_per_block = erase_block_pages(
        &events,
        smallest_op,
        a.utilisation,
        (a.erase_block / FTL_PAGE_SIZE) as u32,
    );
    for &op in &a.op {
        let figures = ftl_windows(&events, &ends, op, a.utilisation, pages_per_block)?;
        for (run, f) in posix_runs.iter_mut().zip(figures) {
            run.device_host_bytes = f.host_pages * FTL_PAGE_SIZE;
            run.waf.push(Waf {
                model: "ftl",
                over_provisioning: Some(op),
                waf: f.waf,
            });
            run.ftl.push(f);
        }
    }

    // zoned, on a freshly formatted device.
    let mut zoned_runs = Vec::new();
    let mut zoned_label = String::new();
    let mut geometry = None;
    if !interrupted() {
        let peak = shale_zoned::ftl::peak_live_pages(&events) * FTL_PAGE_SIZE;
        let storage = fresh_zoned(a, peak)?;
        let Some(z) = storage.zoned() else {
            return Err(Error::msg(
                "internal error: the zoned run has no zone file system",
            ));
        };
        zoned_label = z.device.label();
        geometry = Some(z.device.dev.geometry());
        let zfs = z.fs.clone();
        let sync = || storage.sync();
        let dir = storage.db_dir(None, Some(Path::new(ZONED_DIR)))?;
        let (measured, marks) = run_benches(storage.fs(), &dir, &cfg, &opts, "zoned", || {
            sync()?;
            Ok(zfs.stats())
        })?;
        for (m, w) in measured.iter().zip(marks.windows(2)) {
            let d: ZoneFsStats = w[1].since(&w[0]);
            let mut run = run_of("zoned", m);
            run.device_host_bytes = d.fs_bytes();
            run.waf.push(Waf {
                model: "zonefs",
                over_provisioning: None,
                waf: d.waf(),
            });
            run.zonefs = Some(ZonedRunDoc {
                counters: ZoneFsDoc::from(&d),
                live_bytes: d.live_bytes,
                written_bytes: d.written_bytes,
                space_amplification: d.space_amplification(),
                data_zones: d.data_zones,
                empty_zones: d.empty_zones,
            });
            zoned_runs.push(run);
        }
        storage.finish()?;
    }

    let mut runs = Vec::new();
    for (i, _) in BENCHES.iter().enumerate() {
        runs.extend(posix_runs.get(i).cloned());
        runs.extend(zoned_runs.get(i).cloned());
    }
    let doc = ZnsResults {
        config: ZnsConfig {
            benchmarks: BENCHES.iter().map(|(_, n)| *n).collect(),
            num,
            key_size: KEY_SIZE,
            value_size: a.value_size,
            user_bytes_per_benchmark: user_bytes,
            write_buffer_size: a.write_buffer_size,
            seed: a.seed,
            posix_db: &a.db,
            zoned_device: &zoned_label,
            zoned_geometry: geometry.as_ref().map(GeometryDoc::from),
            over_provisioning: &a.op,
            utilisation: a.utilisation,
            trace_events: events.len(),
        },
        runs: &runs,
        interrupted: interrupted(),
    };
    if let Some(o) = &a.out {
        let path = o.join("results.json");
        let s = serde_json::to_string_pretty(&doc)
            .map_err(|e| Error::msg(format!("encoding JSON: {e}")))?;
        std::fs::write(&path, s + "\n")
            .map_err(|e| Error::msg(format!("writing {}: {e}", path.display())))?;
    }
    if a.json {
        let s = serde_json::to_string_pretty(&doc)
            .map_err(|e| Error::msg(format!("encoding JSON: {e}")))?;
        return writeln!(out, "{s}").map_err(Error::output);
    }
    if let Some(g) = &geometry {
        writeln!(
            out,
            "posix: {}; zoned: {}, {}",
            a.db.display(),
            zoned_label,
            geometry_line(g)
        )
        .map_err(Error::output)?;
    }
    write!(out, "{}", table(&runs)).map_err(Error::output)?;
    if interrupted() {
        writeln!(
            out,
            "interrupted: the benchmarks after this point were not run"
        )
        .map_err(Error::output)?;
    }
    if let Some(o) = &a.out {
        writeln!(out, "results in {}", o.join("results.json").display()).map_err(Error::output)?;
    }
    Ok(())
}

/// The table of the text output: a line per benchmark and backend.
fn table(runs: &[ZnsRun]) -> String {
    let mut s = format!(
        "{:<11} {:<7} {:>9} {:>10} {:>9} {:>12}  device WAF\n",
        "benchmark", "backend", "MB/s", "micros/op", "engine WA", "device host"
    );
    s.push_str(&"-".repeat(90));
    s.push('\n');
    for r in runs {
        let wafs: Vec<String> = r
            .waf
            .iter()
            .map(|w| match w.over_provisioning {
                Some(op) => format!("{:.3} (SSD model, {:.0}% OP)", w.waf, op * 100.0),
                None => format!("{:.3} (ZoneFs)", w.waf),
            })
            .collect();
        let mut extra = String::new();
        if let Some(z) = &r.zonefs {
            let gc = z.counters.gc_bytes;
            let overhead = z.counters.fs_overhead;
            extra = format!("; GC moved {}, fs overhead {overhead:.3}", human_bytes(gc));
        }
        s.push_str(&format!(
            "{:<11} {:<7} {:>9} {:>10.3} {:>9} {:>12}  {}{extra}\n",
            r.benchmark,
            r.backend,
            r.mb_per_sec.map_or("-".into(), |m| format!("{m:.2}")),
            r.micros_per_op,
            r.engine
                .write_amplification
                .map_or("-".into(), |w| format!("{w:.2}")),
            human_bytes(r.device_host_bytes),
            wafs.join(", ")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_500_mb_of_keys_and_values() {
        assert_eq!(default_num(100), 4_310_345);
        let bytes = default_num(100) * 116;
        assert!((499_999_000..=500_001_000).contains(&bytes), "{bytes}");
        assert_eq!(default_num(1000), 492_126);
    }

    #[test]
    fn the_default_device_is_as_full_as_the_ssd_model() {
        // 900 MiB live at 90%: 1000 MiB, 16 zones of 64 MiB (1024 MiB), then
        // the headroom and the metadata zones.
        assert_eq!(default_zones(900 << 20, 0.9, 64 << 20), 16 + 6 + 2);
        assert_eq!(default_zones(0, 0.9, 64 << 20), 6 + 2);
        assert_eq!(default_zones(1 << 20, 1.0, 1 << 20), 1 + 6 + 2);
    }

    #[test]
    fn ftl_windows_add_up_to_the_whole_replay() {
        use shale::env::{TraceFileKind, WriteLifetime};
        // Two files written, the first rewritten: the second window
        // overwrites what the first wrote.
        let mut events = Vec::new();
        let mut write = |file: u32, path: &str, pages: u64| {
            events.push(TraceEvent::Create {
                file,
                kind: TraceFileKind::Object,
                hint: WriteLifetime::Long,
                path: path.into(),
            });
            events.push(TraceEvent::Write {
                file,
                offset: 0,
                len: pages * FTL_PAGE_SIZE,
            });
            events.push(TraceEvent::Finish { file });
        };
        write(0, "/a", 300);
        write(1, "/b", 300);
        let mid = 6;
        let mut tail = Vec::new();
        for i in 0..6u32 {
            tail.push(TraceEvent::Remove {
                path: if i % 2 == 0 { "/a".into() } else { "/b".into() },
            });
            let (file, path) = (2 + i, if i % 2 == 0 { "/a" } else { "/b" });
            tail.push(TraceEvent::Create {
                file,
                kind: TraceFileKind::Object,
                hint: WriteLifetime::Long,
                path: path.into(),
            });
            tail.push(TraceEvent::Write {
                file,
                offset: 0,
                len: 300 * FTL_PAGE_SIZE,
            });
            tail.push(TraceEvent::Finish { file });
        }
        events.extend(tail);
        let ends = [0, mid, events.len()];
        let pages = erase_block_pages(&events, 0.07, 0.9, 256);
        assert!(pages < 256, "{pages}");
        let f = ftl_windows(&events, &ends, 0.07, 0.9, pages).expect("replay");
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].host_pages, 600);
        assert_eq!(f[1].host_pages, 1800);
        let whole = replay_trace(
            &events,
            &ReplayOptions {
                pages_per_block: pages,
                ..ReplayOptions::new(0.07)
            },
        )
        .expect("whole");
        assert_eq!(f[0].host_pages + f[1].host_pages, whole.stats.host_pages);
        assert_eq!(f[0].gc_pages + f[1].gc_pages, whole.stats.gc_pages);
        assert!(f.iter().all(|x| x.waf >= 1.0));
        assert_eq!(f[0].logical_bytes, whole.logical_pages * FTL_PAGE_SIZE);
    }
}
