//! The time-series sampler of every bench: every interval (5 s by default,
//! `--sample-interval`) one row with the interval's throughput and latency
//! percentiles, the machine's CPU shares (`/proc/stat`), the device under the
//! database (`/proc/diskstats`: utilisation, read and write IOPS and bytes),
//! and the engine's gauges (L0 tables, pending compaction bytes, running
//! flushes and compactions, stalls). Alongside, [`Timeline`] listens to the
//! engine's events and keeps flushes, compactions and stalls as spans.
//!
//! What cannot be read (no `/proc`, a database on a device missing from
//! `/proc/diskstats`, an engine in another process) is left empty, and
//! [`TimeSeries::notes`] says why.
//!
//! # Concurrency
//!
//! One thread, `shale-sampler`, takes the samples; [`Sampler::finish`] stops
//! it (at once, not at the next tick) and takes a last, shorter sample.

mod chart;
mod proc;
mod timeline;

pub use timeline::{Span, SpanKind, Timeline};

use std::io::Write;
use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;
use shale::Metrics;

use shale_workload::csv_rows::{self, fixed};

use crate::live::{all_kinds, OpsSource};
use proc::{CpuTimes, DiskCounters};

/// Reads the engine's counters for a sample (`None` when it cannot, e.g. the
/// engine runs in another process).
pub type MetricsSource = Box<dyn Fn() -> Option<Metrics> + Send>;

/// The database a bench runs on now, shared with the sampler, which reads
/// its gauges; the bench opens and closes databases through it.
///
/// The sampler reads under the slot's lock and keeps no reference, so that
/// [`DbSlot::close`] gets the only one back and can close the database.
#[derive(Default)]
pub struct DbSlot(parking_lot::Mutex<Option<Arc<shale::Db>>>);

impl DbSlot {
    /// Puts `db` in the slot (closing nothing: the slot must be empty or the
    /// previous database closed) and returns the bench's handle on it.
    pub fn open(&self, db: shale::Db) -> Arc<shale::Db> {
        let db = Arc::new(db);
        *self.0.lock() = Some(db.clone());
        db
    }

    /// Takes the database out of the slot and closes it; `db` is the bench's
    /// handle, the last one besides the slot's.
    pub fn close(&self, db: Arc<shale::Db>) -> shale::Result<()> {
        drop(db);
        let taken = self.0.lock().take();
        match taken.map(Arc::try_unwrap) {
            Some(Ok(db)) => db.close(),
            Some(Err(_)) => Err(shale::Error::Internal(
                "a bench closed a database someone still holds".into(),
            )),
            None => Ok(()),
        }
    }

    /// A [`MetricsSource`] reading whichever database is in the slot.
    pub fn metrics_source(self: &Arc<DbSlot>) -> MetricsSource {
        let slot = self.clone();
        Box::new(move || slot.0.lock().as_ref().map(|db| db.metrics()))
    }
}

/// One interval.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Sample {
    /// Seconds since the sampler started, at the interval's end.
    pub t: f64,
    /// Length of the interval in seconds.
    pub seconds: f64,
    /// Operations completed in the interval (`None`: the bench's operations
    /// run where the sampler cannot count them, in a peer's process).
    pub ops: Option<u64>,
    /// Operations per second.
    pub ops_per_sec: Option<f64>,
    /// Mean latency in microseconds (`None` without operations).
    pub mean_us: Option<f64>,
    /// Median latency in microseconds.
    pub p50_us: Option<f64>,
    /// 95th percentile latency in microseconds.
    pub p95_us: Option<f64>,
    /// 99th percentile latency in microseconds.
    pub p99_us: Option<f64>,
    /// 99.9th percentile latency in microseconds.
    pub p999_us: Option<f64>,
    /// CPU user time, percent of all CPUs.
    pub cpu_user: Option<f64>,
    /// CPU system time, percent of all CPUs.
    pub cpu_system: Option<f64>,
    /// CPU I/O wait, percent of all CPUs.
    pub cpu_iowait: Option<f64>,
    /// Device utilisation (time with I/O in flight), percent.
    pub device_util: Option<f64>,
    /// Device reads per second.
    pub device_read_iops: Option<f64>,
    /// Device writes per second.
    pub device_write_iops: Option<f64>,
    /// Device bytes read per second.
    pub device_read_bytes: Option<f64>,
    /// Device bytes written per second.
    pub device_write_bytes: Option<f64>,
    /// Tables in L0 at the interval's end.
    pub l0_tables: Option<u64>,
    /// Estimated compaction debt at the interval's end.
    pub pending_compaction_bytes: Option<u64>,
    /// Flushes running at the interval's end.
    pub running_flushes: Option<u64>,
    /// Compactions running at the interval's end.
    pub running_compactions: Option<u64>,
    /// Write groups delayed or stopped during the interval.
    pub stalls: Option<u64>,
    /// Microseconds writers spent stalled during the interval.
    pub stall_micros: Option<u64>,
}

/// Every sample of a run, with the notes on what could not be read.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TimeSeries {
    /// The interval asked for, in seconds.
    pub interval: f64,
    /// The device sampled (`vda`), if any.
    pub device: Option<String>,
    /// One per interval, in order.
    pub samples: Vec<Sample>,
    /// Flushes, compactions and stalls (from a [`Timeline`], if the bench
    /// registered one), on the samples' time axis.
    pub spans: Vec<Span>,
    /// Why some columns are empty.
    pub notes: Vec<String>,
}

/// The running sampler.
pub struct Sampler {
    started: Instant,
    stop: Sender<()>,
    thread: JoinHandle<TimeSeries>,
}

/// The sampler thread's state between samples.
struct State {
    start: Instant,
    last: Instant,
    ops: Option<Arc<dyn OpsSource>>,
    metrics: MetricsSource,
    last_metrics: Option<Metrics>,
    cpu: Option<CpuTimes>,
    disk: Option<(u32, u32, DiskCounters)>,
    /// `samples.csv`, appended to as samples are taken.
    csv: Option<std::io::BufWriter<std::fs::File>>,
    series: TimeSeries,
}

impl Sampler {
    /// Starts sampling every `interval`: operations from `ops`, the device
    /// holding `db_dir`, the engine's gauges from `metrics` (`None` for
    /// either: the bench cannot give them, and a note says so). With `out_dir`, each
    /// sample is also appended to `out_dir/samples.csv` as it is taken, so
    /// that a long bench can be followed, and a killed one keeps its samples.
    pub fn start(
        interval: Duration,
        db_dir: &Path,
        out_dir: Option<&Path>,
        ops: Option<Arc<dyn OpsSource>>,
        metrics: Option<MetricsSource>,
    ) -> std::io::Result<Sampler> {
        let interval = interval.max(Duration::from_millis(10));
        let mut notes = Vec::new();
        let cpu = read_cpu(&mut notes);
        let disk = find_disk(db_dir, &mut notes);
        if ops.is_none() {
            notes.push(
                "throughput and latency: the operations run in another process, not sampled"
                    .to_string(),
            );
        }
        let metrics = metrics.unwrap_or_else(|| {
            notes.push("engine gauges: not sampled (the engine runs in another process, or the bench reopens it for every run)".to_string());
            Box::new(|| None)
        });
        let last_metrics = metrics();
        let csv = match out_dir {
            Some(dir) => {
                let path = dir.join("samples.csv");
                let mut file = std::io::BufWriter::new(std::fs::File::create(&path)?);
                let header = csv_rows::header::<SampleRow>().map_err(std::io::Error::other)?;
                file.write_all(header.as_bytes())?;
                file.flush()?;
                Some(file)
            }
            None => None,
        };
        let now = Instant::now();
        let mut state = State {
            start: now,
            last: now,
            ops,
            metrics,
            last_metrics,
            cpu,
            csv,
            series: TimeSeries {
                interval: interval.as_secs_f64(),
                device: disk.as_ref().map(|(_, _, d)| d.name.clone()),
                samples: Vec::new(),
                spans: Vec::new(),
                notes,
            },
            disk,
        };
        // The interval starts now: operations before this belong to no one.
        if let Some(ops) = &state.ops {
            ops.take_interval();
        }
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("shale-sampler".into())
            .spawn(move || {
                let mut next = state.start + interval;
                loop {
                    let wait = next.saturating_duration_since(Instant::now());
                    match stopped.recv_timeout(wait) {
                        Err(RecvTimeoutError::Timeout) => {
                            state.sample();
                            next += interval;
                        }
                        // Asked to stop, or the handle is gone.
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
                state.sample();
                state.series
            })?;
        Ok(Sampler {
            started: now,
            stop,
            thread,
        })
    }

    /// When the sampler started: time 0 of its samples (and of a
    /// [`Timeline`] that shares their axis).
    pub fn started_at(&self) -> Instant {
        self.started
    }

    /// Stops sampling and returns every sample, the last (partial) interval
    /// included.
    pub fn finish(self) -> TimeSeries {
        // The thread may have ended already; either way it is told.
        let _ = self.stop.send(());
        self.thread.join().unwrap_or_else(|_| TimeSeries {
            notes: vec!["the sampler thread panicked: no samples".to_string()],
            ..TimeSeries::default()
        })
    }
}

impl State {
    fn sample(&mut self) {
        let now = Instant::now();
        let seconds = now.duration_since(self.last).as_secs_f64();
        if seconds <= 0.0 {
            return;
        }
        self.last = now;
        let ops = self
            .ops
            .as_ref()
            .and_then(|o| o.take_interval())
            .map(|by_kind| all_kinds(&by_kind));
        let lat = |q: f64| {
            ops.as_ref()
                .filter(|o| o.timed())
                .map(|o| o.quantile_micros(q))
        };
        let mut s = Sample {
            t: now.duration_since(self.start).as_secs_f64(),
            seconds,
            ops: ops.as_ref().map(|o| o.count),
            ops_per_sec: ops.as_ref().map(|o| o.count as f64 / seconds),
            mean_us: ops.as_ref().filter(|o| o.timed()).map(|o| o.mean_micros()),
            p50_us: lat(0.5),
            p95_us: lat(0.95),
            p99_us: lat(0.99),
            p999_us: lat(0.999),
            ..Sample::default()
        };
        if let Some(before) = self.cpu {
            let mut ignored = Vec::new();
            if let Some(after) = read_cpu(&mut ignored) {
                if let Some(c) = after.shares_since(&before) {
                    s.cpu_user = Some(c.user);
                    s.cpu_system = Some(c.system);
                    s.cpu_iowait = Some(c.iowait);
                }
                self.cpu = Some(after);
            }
        }
        if let Some((major, minor, before)) = &self.disk {
            let after = std::fs::read_to_string("/proc/diskstats")
                .ok()
                .and_then(|t| proc::parse_disk(&t, *major, *minor));
            if let Some(after) = after {
                if let Some(r) = after.rates_since(before, seconds) {
                    s.device_util = Some(r.util);
                    s.device_read_iops = Some(r.read_iops);
                    s.device_write_iops = Some(r.write_iops);
                    s.device_read_bytes = Some(r.read_bytes);
                    s.device_write_bytes = Some(r.write_bytes);
                }
                self.disk = Some((*major, *minor, after));
            }
        }
        if let Some(m) = (self.metrics)() {
            s.l0_tables = Some(m.l0_files);
            s.pending_compaction_bytes = Some(m.pending_compaction_bytes);
            s.running_flushes = Some(m.running_flushes);
            s.running_compactions = Some(m.running_compactions);
            if let Some(before) = &self.last_metrics {
                s.stalls = Some(m.stall_count.saturating_sub(before.stall_count));
                s.stall_micros = Some(m.stall_micros.saturating_sub(before.stall_micros));
            }
            self.last_metrics = Some(m);
        }
        if let Some(file) = &mut self.csv {
            let written = csv_rows::row(&SampleRow::from(&s))
                .map_err(std::io::Error::other)
                .and_then(|row| file.write_all(row.as_bytes()))
                .and_then(|()| file.flush());
            if let Err(e) = written {
                self.series
                    .notes
                    .push(format!("samples.csv: writing stopped: {e}"));
                self.csv = None;
            }
        }
        self.series.samples.push(s);
    }
}

fn read_cpu(notes: &mut Vec<String>) -> Option<CpuTimes> {
    match std::fs::read_to_string("/proc/stat") {
        Ok(text) => {
            let cpu = proc::parse_cpu(&text);
            if cpu.is_none() {
                notes.push("CPU: /proc/stat has no readable cpu line".to_string());
            }
            cpu
        }
        Err(e) => {
            notes.push(format!("CPU: cannot read /proc/stat ({e})"));
            None
        }
    }
}

/// The `/proc/diskstats` counters of the device holding `dir` (or its
/// nearest existing ancestor), or of `dir` itself when it is a block device
/// (a zoned device the database is on).
fn find_disk(dir: &Path, notes: &mut Vec<String>) -> Option<(u32, u32, DiskCounters)> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let meta = dir.ancestors().find_map(|p| std::fs::metadata(p).ok());
    let Some(meta) = meta else {
        notes.push(format!("device: cannot stat {}", dir.display()));
        return None;
    };
    let dev = if meta.file_type().is_block_device() {
        meta.rdev()
    } else {
        meta.dev()
    };
    let (major, minor) = proc::split_dev(dev);
    let text = match std::fs::read_to_string("/proc/diskstats") {
        Ok(t) => t,
        Err(e) => {
            notes.push(format!("device: cannot read /proc/diskstats ({e})"));
            return None;
        }
    };
    match proc::parse_disk(&text, major, minor) {
        Some(d) => Some((major, minor, d)),
        None => {
            notes.push(format!(
                "device: {} is on device {major}:{minor}, which /proc/diskstats does not list \
                 (a virtual file system?): no device columns",
                dir.display()
            ));
            None
        }
    }
}

/// One row of `samples.csv`: a [`Sample`] with its figures rounded (rates
/// and times to three decimals, operations per second to one).
#[derive(Default, Serialize)]
struct SampleRow {
    #[serde(serialize_with = "fixed::d3")]
    t: f64,
    #[serde(serialize_with = "fixed::d3")]
    seconds: f64,
    ops: Option<u64>,
    #[serde(serialize_with = "fixed::opt_d1")]
    ops_per_sec: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d3")]
    mean_us: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d3")]
    p50_us: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d3")]
    p95_us: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d3")]
    p99_us: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d3")]
    p999_us: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d3")]
    cpu_user: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d3")]
    cpu_system: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d3")]
    cpu_iowait: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d3")]
    device_util: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d3")]
    device_read_iops: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d3")]
    device_write_iops: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d3")]
    device_read_bytes: Option<f64>,
    #[serde(serialize_with = "fixed::opt_d3")]
    device_write_bytes: Option<f64>,
    l0_tables: Option<u64>,
    pending_compaction_bytes: Option<u64>,
    running_flushes: Option<u64>,
    running_compactions: Option<u64>,
    stalls: Option<u64>,
    stall_micros: Option<u64>,
}

impl From<&Sample> for SampleRow {
    fn from(s: &Sample) -> SampleRow {
        SampleRow {
            t: s.t,
            seconds: s.seconds,
            ops: s.ops,
            ops_per_sec: s.ops_per_sec,
            mean_us: s.mean_us,
            p50_us: s.p50_us,
            p95_us: s.p95_us,
            p99_us: s.p99_us,
            p999_us: s.p999_us,
            cpu_user: s.cpu_user,
            cpu_system: s.cpu_system,
            cpu_iowait: s.cpu_iowait,
            device_util: s.device_util,
            device_read_iops: s.device_read_iops,
            device_write_iops: s.device_write_iops,
            device_read_bytes: s.device_read_bytes,
            device_write_bytes: s.device_write_bytes,
            l0_tables: s.l0_tables,
            pending_compaction_bytes: s.pending_compaction_bytes,
            running_flushes: s.running_flushes,
            running_compactions: s.running_compactions,
            stalls: s.stalls,
            stall_micros: s.stall_micros,
        }
    }
}

/// The samples as CSV, one row per interval; empty cells for what could
/// not be read.
pub fn to_csv(series: &TimeSeries) -> Result<String, String> {
    let text = csv_rows::to_csv(series.samples.iter().map(SampleRow::from))?;
    // No sample: the header alone.
    if text.is_empty() {
        return csv_rows::header::<SampleRow>();
    }
    Ok(text)
}

/// Writes `samples.csv` (the samples), `samples.json` (everything: the
/// samples, the spans and the notes) and the figure, `time_series.svg` and
/// `.png`, titled `title`, into `dir`.
pub fn write_files(series: &TimeSeries, dir: &Path, title: &str) -> Result<(), String> {
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| format!("writing {}: {e}", path.display()))
    };
    let csv = to_csv(series).map_err(|e| format!("samples.csv: {e}"))?;
    write("samples.csv", csv.as_bytes())?;
    let json =
        serde_json::to_string_pretty(series).map_err(|e| format!("encoding samples.json: {e}"))?;
    write("samples.json", json.as_bytes())?;
    let figure = chart::figure(series, title);
    let svg = figure
        .to_svg()
        .map_err(|e| format!("drawing time_series.svg: {e}"))?;
    write("time_series.svg", svg.as_bytes())?;
    let png = figure
        .to_png()
        .map_err(|e| format!("drawing time_series.png: {e}"))?;
    write("time_series.png", &png)
}

/// Averages of a run's samples, weighted by interval length, for summary
/// tables.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Summary {
    /// CPU user time, percent.
    pub cpu_user: Option<f64>,
    /// CPU system time, percent.
    pub cpu_system: Option<f64>,
    /// CPU I/O wait, percent.
    pub cpu_iowait: Option<f64>,
    /// Device utilisation, percent.
    pub device_util: Option<f64>,
    /// Largest compaction debt seen.
    pub max_pending_compaction_bytes: Option<u64>,
    /// Largest L0 seen.
    pub max_l0_tables: Option<u64>,
}

impl TimeSeries {
    /// Interval-weighted averages and maxima over every sample.
    pub fn summary(&self) -> Summary {
        self.summary_until(f64::INFINITY)
    }

    /// Interval-weighted averages and maxima over the first `until` seconds
    /// (a sample straddling `until` counts for the part before it).
    pub fn summary_until(&self, until: f64) -> Summary {
        let weight = |s: &Sample| (until.min(s.t) - (s.t - s.seconds)).clamp(0.0, s.seconds);
        let avg = |get: fn(&Sample) -> Option<f64>| {
            let (sum, secs) = self
                .samples
                .iter()
                .filter_map(|s| get(s).map(|v| (v, weight(s))))
                .fold((0.0, 0.0), |(a, b), (v, w)| (a + v * w, b + w));
            (secs > 0.0).then(|| sum / secs)
        };
        let within = || self.samples.iter().filter(|s| weight(s) > 0.0);
        Summary {
            cpu_user: avg(|s| s.cpu_user),
            cpu_system: avg(|s| s.cpu_system),
            cpu_iowait: avg(|s| s.cpu_iowait),
            device_util: avg(|s| s.device_util),
            max_pending_compaction_bytes: within().filter_map(|s| s.pending_compaction_bytes).max(),
            max_l0_tables: within().filter_map(|s| s.l0_tables).max(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::LiveStats;

    #[test]
    fn a_short_run_samples_operations_gauges_and_the_machine() {
        let dir = tempfile::tempdir().expect("tempdir");
        let live = Arc::new(LiveStats::new(1));
        let mut gauges = Metrics::default();
        gauges.l0_files = 3;
        gauges.pending_compaction_bytes = 1234;
        gauges.running_compactions = 1;
        let sampler = Sampler::start(
            Duration::from_millis(20),
            dir.path(),
            Some(dir.path()),
            Some(live.clone()),
            Some(Box::new(move || Some(gauges.clone()))),
        )
        .expect("start");
        for _ in 0..100 {
            live.record(0, "read", 2_000);
        }
        std::thread::sleep(Duration::from_millis(70));
        let series = sampler.finish();
        assert!(!series.samples.is_empty(), "{series:?}");
        assert_eq!(
            series.samples.iter().filter_map(|s| s.ops).sum::<u64>(),
            100
        );
        let last = series.samples.last().expect("a sample");
        assert_eq!(last.l0_tables, Some(3));
        assert_eq!(last.pending_compaction_bytes, Some(1234));
        assert_eq!(last.running_compactions, Some(1));
        assert_eq!(last.stalls, Some(0));
        let first = &series.samples[0];
        for s in series.samples.iter().filter(|s| s.ops > Some(0)) {
            assert!((s.p50_us.expect("latency") - 2.0).abs() < 0.01, "{s:?}");
        }
        // Times grow and intervals add up to the last time.
        let total: f64 = series.samples.iter().map(|s| s.seconds).sum();
        assert!((total - last.t).abs() < 1e-6);
        if std::path::Path::new("/proc/stat").exists() {
            assert!(first.cpu_user.is_some(), "{:?}", series.notes);
        }
        let csv = to_csv(&series).expect("csv");
        // The file written as samples were taken holds the same rows.
        let live_csv = std::fs::read_to_string(dir.path().join("samples.csv")).expect("file");
        assert_eq!(live_csv, csv);
        let mut lines = csv.lines();
        let header = lines.next().expect("header");
        assert_eq!(header.split(',').count(), 23);
        for line in lines {
            assert_eq!(line.split(',').count(), 23, "{line}");
        }
        let summary = series.summary();
        assert_eq!(summary.max_pending_compaction_bytes, Some(1234));
        assert_eq!(summary.max_l0_tables, Some(3));
    }

    #[test]
    fn a_summary_weighs_samples_by_their_time_in_the_window() {
        let sample = |t: f64, cpu: f64, l0: u64| Sample {
            t,
            seconds: 1.0,
            cpu_user: Some(cpu),
            l0_tables: Some(l0),
            ..Sample::default()
        };
        let series = TimeSeries {
            samples: vec![
                sample(1.0, 10.0, 1),
                sample(2.0, 40.0, 5),
                sample(3.0, 90.0, 9),
            ],
            ..TimeSeries::default()
        };
        let all = series.summary();
        assert!((all.cpu_user.expect("cpu") - 140.0 / 3.0).abs() < 1e-9);
        assert_eq!(all.max_l0_tables, Some(9));
        // Up to 1.5 s: all of the first sample, half of the second.
        let part = series.summary_until(1.5);
        assert!((part.cpu_user.expect("cpu") - (10.0 + 20.0) / 1.5).abs() < 1e-9);
        assert_eq!(part.max_l0_tables, Some(5));
        assert_eq!(series.summary_until(0.0).cpu_user, None);
    }

    #[test]
    fn an_engine_without_gauges_is_noted_and_left_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sampler =
            Sampler::start(Duration::from_millis(10), dir.path(), None, None, None).expect("start");
        let series = sampler.finish();
        assert!(series.notes.iter().any(|n| n.contains("engine gauges")));
        assert!(series.notes.iter().any(|n| n.contains("throughput")));
        assert!(series.samples.iter().all(|s| s.ops.is_none()));
        assert!(!series.samples.is_empty());
        assert!(series.samples.iter().all(|s| s.l0_tables.is_none()));
    }
}
