//! The report of `shale bench kvdb` (the I/O-per-Get study): from one
//! [`BenchResults`] it writes `results.json`, `results.csv`, two plots (I/Os
//! per Get and hit rates per block type, both against cache size) as SVG and
//! PNG, and `report.html`, one self-contained page with all of it; and it
//! prints the study's table for the terminal.
//!
//! The plots are drawn with `plotters` through [`plot`], with a font embedded
//! in the binary: no system font or graphics library is needed, so the report
//! renders the same on any machine that builds shale.

pub mod compare;
pub mod plot;

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use shale_workload::results::{BenchResults, Run};

use self::plot::{
    escape, Axis, Band, LineChart, Marker, Rgb, Series, Shape, BLUE, DARK, GREEN, ORANGE, PURPLE,
    RED,
};
use crate::fmt::{human_bytes, rate_text, ratio};

/// The files [`write_all`] writes, in that order: the results as JSON,
pub const RESULTS_JSON: &str = "results.json";
/// one row per cache size as CSV,
pub const RESULTS_CSV: &str = "results.csv";
/// I/O per Get over the cache size (SVG and PNG),
pub const IO_PER_GET_SVG: &str = "io_per_get.svg";
/// (the PNG),
pub const IO_PER_GET_PNG: &str = "io_per_get.png";
/// hit rates per block kind over the cache size (SVG and PNG),
pub const HIT_RATES_SVG: &str = "hit_rates.svg";
/// (the PNG),
pub const HIT_RATES_PNG: &str = "hit_rates.png";
/// and the page that shows them all.
pub const REPORT_HTML: &str = "report.html";

const MIB: f64 = (1u64 << 20) as f64;

/// Background tints of the study's three phases.
const PHASE_TINTS: [Rgb; 3] = [Rgb(252, 238, 236), Rgb(253, 248, 228), Rgb(236, 246, 236)];

/// Writes every file of the report into `out_dir` (created if missing) and
/// returns their paths. An error is one line naming the path it concerns.
pub fn write_all(results: &BenchResults, out_dir: &Path) -> Result<Vec<PathBuf>, String> {
    fs::create_dir_all(out_dir)
        .map_err(|e| format!("cannot create {}: {}", out_dir.display(), reason(&e)))?;
    let in_dir = |name: &str| out_dir.join(name);
    let mut json = serde_json::to_string_pretty(results)
        .map_err(|e| format!("cannot write {}: {e}", in_dir(RESULTS_JSON).display()))?;
    json.push('\n');

    let drawn =
        |name: &str, e: plot::PlotError| format!("cannot write {}: {e}", in_dir(name).display());
    let (io_chart, hit_chart) = (io_per_get_chart(results), hit_rate_chart(results));
    let io_svg = io_chart.to_svg().map_err(|e| drawn(IO_PER_GET_SVG, e))?;
    let hit_svg = hit_chart.to_svg().map_err(|e| drawn(HIT_RATES_SVG, e))?;
    let io_png = io_chart.to_png().map_err(|e| drawn(IO_PER_GET_PNG, e))?;
    let hit_png = hit_chart.to_png().map_err(|e| drawn(HIT_RATES_PNG, e))?;
    let html = html_report(results, &io_svg, &hit_svg);
    let files: [(&str, Vec<u8>); 7] = [
        (RESULTS_JSON, json.into_bytes()),
        (RESULTS_CSV, results.to_csv()?.into_bytes()),
        (IO_PER_GET_SVG, io_svg.into_bytes()),
        (IO_PER_GET_PNG, io_png),
        (HIT_RATES_SVG, hit_svg.into_bytes()),
        (HIT_RATES_PNG, hit_png),
        (REPORT_HTML, html.into_bytes()),
    ];
    let mut written = Vec::with_capacity(files.len());
    for (name, bytes) in files {
        let path = in_dir(name);
        fs::write(&path, bytes)
            .map_err(|e| format!("cannot write {}: {}", path.display(), reason(&e)))?;
        written.push(path);
    }
    Ok(written)
}

/// An I/O error's message without the `(os error N)` suffix.
pub(crate) fn reason(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// `n` with thousands separators: `200,000,000`.
pub(crate) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate, count per second or such for people: grouped whole number, `-`
/// when not a finite non-negative number.
pub(crate) fn grouped_f64(v: f64) -> String {
    if v.is_finite() && v >= 0.0 {
        // Saturates at u64::MAX, far above any measured rate.
        grouped(v.round() as u64)
    } else {
        "-".into()
    }
}

pub(crate) fn mib(bytes: u64) -> String {
    format!("{:.2}", bytes as f64 / MIB)
}

pub(crate) fn optional(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.3}"))
}

/// `v` with at most 4 decimals and no trailing zeros.
pub(crate) fn trim_number(v: f64) -> String {
    let s = format!("{v:.4}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// `part` as a percentage of the DB, `-` for an empty DB.
fn share_of_db(part: u64, db: u64) -> String {
    ratio(part, db).map_or("-".into(), |r| format!("{:.3}%", r * 100.0))
}

/// The runs a log-scale cache axis can show (a cache of 0 bytes cannot be).
fn plottable(results: &BenchResults) -> (Vec<&Run>, usize) {
    let runs: Vec<&Run> = results
        .runs
        .iter()
        .filter(|r| r.cache_percent.is_finite() && r.cache_percent > 0.0)
        .collect();
    let left_out = results.runs.len() - runs.len();
    (runs, left_out)
}

fn left_out_note(left_out: usize) -> Option<String> {
    (left_out > 0).then(|| {
        format!("{left_out} run(s) with no cache not shown: a log axis has no 0 (see the table)")
    })
}

/// The inflection points as dashed markers, and the phases they split the
/// axis into as tinted bands; none where IP1 and IP2 have no place on a log
/// axis (an empty database).
fn inflection_points(results: &BenchResults) -> (Vec<Marker>, Vec<Band>) {
    let (ip1, ip2) = (results.ip1_percent, results.ip2_percent);
    let markers: Vec<Marker> = [(ip1, "IP1"), (ip2, "IP2")]
        .into_iter()
        .filter(|(x, _)| x.is_finite() && *x > 0.0)
        .map(|(x, label)| Marker {
            x,
            label: label.into(),
        })
        .collect();
    let bands = if markers.len() == 2 {
        let cuts = [None, Some(ip1), Some(ip2), None];
        PHASE_TINTS
            .iter()
            .enumerate()
            .map(|(i, tint)| Band {
                from: cuts[i],
                to: cuts[i + 1],
                color: *tint,
                label: Some(format!("phase {}", i + 1)),
            })
            .collect()
    } else {
        Vec::new()
    };
    (markers, bands)
}

fn subject(results: &BenchResults) -> String {
    let batch = if results.batch > 1 && results.stream {
        format!(", multi_get_each, {} reads in flight", results.batch)
    } else if results.batch > 1 {
        format!(", multi_get of {} keys", results.batch)
    } else {
        String::new()
    };
    format!("{}, {} keys{batch}", results.engine, grouped(results.keys))
}

const X_LABEL: &str = "block cache size (% of DB, log scale)";

/// A chart against cache size, with the inflection points and phases.
fn study_chart(results: &BenchResults, title: String, y: Axis, series: Vec<Series>) -> LineChart {
    let (_, left_out) = plottable(results);
    let (markers, bands) = inflection_points(results);
    LineChart {
        series,
        markers,
        bands,
        note: left_out_note(left_out),
        ..LineChart::new(title, Axis::log10(X_LABEL).unit("%"), y)
    }
}

/// A series of one figure per plottable run; a run without it is a gap.
fn run_series(
    results: &BenchResults,
    name: &str,
    (color, shape, width): (Rgb, Shape, u32),
    y: impl Fn(&Run) -> Option<f64>,
) -> Series {
    let (runs, _) = plottable(results);
    let mut points: Vec<(f64, f64)> = runs
        .iter()
        .map(|r| (r.cache_percent, y(r).unwrap_or(f64::NAN)))
        .collect();
    // A curve along the cache axis, whatever order the runs were in.
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    Series::new(name, points)
        .color(color)
        .marker(shape)
        .width(width)
}

/// Plot 1: I/Os per Get against cache size.
fn io_per_get_chart(results: &BenchResults) -> LineChart {
    let mut series = vec![
        run_series(
            results,
            "io_per_get (misses)",
            (BLUE, Shape::Circle, 3),
            |r| Some(r.io_per_get),
        ),
        run_series(
            results,
            "physical_reads_per_get",
            (ORANGE, Shape::Square, 2),
            |r| Some(r.physical_reads_per_get),
        ),
    ];
    let (runs, _) = plottable(results);
    if runs.iter().any(|r| r.device_reads_per_get.is_some()) {
        series.push(run_series(
            results,
            "device_reads_per_get",
            (GREEN, Shape::Triangle, 2),
            |r| r.device_reads_per_get,
        ));
    }
    study_chart(
        results,
        format!("I/Os per Get vs cache size: {}", subject(results)),
        Axis::linear("I/Os per Get"),
        series,
    )
}

/// Plot 2: block-cache hit rate per block kind against cache size.
fn hit_rate_chart(results: &BenchResults) -> LineChart {
    type Pick = fn(&Run) -> Option<f64>;
    let kinds: [(&str, Rgb, Shape, u32, Pick); 5] = [
        ("filter", PURPLE, Shape::Diamond, 2, |r| r.hit_rate.filter),
        ("top_index", RED, Shape::Triangle, 2, |r| {
            r.hit_rate.top_index
        }),
        ("index", ORANGE, Shape::Square, 2, |r| r.hit_rate.index),
        ("data", BLUE, Shape::Circle, 2, |r| r.hit_rate.data),
        ("overall", DARK, Shape::Circle, 3, |r| r.hit_rate.overall),
    ];
    let series = kinds
        .iter()
        .map(|&(name, color, shape, width, pick)| {
            run_series(results, name, (color, shape, width), |r| {
                pick(r).map(|rate| rate * 100.0)
            })
        })
        .collect();
    study_chart(
        results,
        format!(
            "Hit rate per block type vs cache size: {}",
            subject(results)
        ),
        Axis::linear("block-cache hit rate (%)").range(0.0, 100.0),
        series,
    )
}

/// The study's table for the terminal: a line on the inflection points, a
/// line of column names, a rule, and one line per run in the order run.
pub fn terminal_table(results: &BenchResults) -> String {
    const COLUMNS: [(&str, usize); 13] = [
        ("cache MiB", 10),
        ("cache %", 8),
        ("phase", 5),
        ("I/O/Get(miss)", 13),
        ("phys/Get", 9),
        ("dev/Get", 8),
        ("filter", 7),
        ("top", 7),
        ("index", 7),
        ("data", 7),
        ("ops/s", 11),
        ("p99 µs", 9),
        ("÷dev.limit", 10),
    ];
    let line = |cells: &[String]| -> String {
        let mut out = String::new();
        for (i, (cell, (_, width))) in cells.iter().zip(COLUMNS.iter()).enumerate() {
            if i > 0 {
                out.push_str("  ");
            }
            let _ = write!(out, "{cell:>width$}");
        }
        out.push('\n');
        out
    };
    let mut out = format!(
        "{}, DB {}: IP1 = {} MiB ({:.3}% of DB), IP2 = {} MiB ({:.3}% of DB)\n",
        subject(results),
        human_bytes(results.db_bytes),
        mib(results.ip1_bytes),
        results.ip1_percent,
        mib(results.ip2_bytes),
        results.ip2_percent,
    );
    out.push_str(&device_limit_line(results));
    out.push('\n');
    let names: Vec<String> = COLUMNS.iter().map(|(n, _)| n.to_string()).collect();
    let header = line(&names);
    out.push_str(&header);
    out.push_str(&"-".repeat(header.chars().count().saturating_sub(1)));
    out.push('\n');
    for r in &results.runs {
        out.push_str(&line(&[
            mib(r.cache_bytes),
            format!("{:.3}%", r.cache_percent),
            r.phase.to_string(),
            format!("{:.3}", r.io_per_get),
            format!("{:.3}", r.physical_reads_per_get),
            optional(r.device_reads_per_get),
            rate_text(r.hit_rate.filter),
            rate_text(r.hit_rate.top_index),
            rate_text(r.hit_rate.index),
            rate_text(r.hit_rate.data),
            grouped_f64(r.ops_per_sec),
            format!("{:.1}", r.p99_us),
            share_text(r.device_limit_share),
        ]));
    }
    out
}

/// What the device's own random-read rate was, in one sentence.
fn device_limit_line(results: &BenchResults) -> String {
    match &results.device_limit {
        Some(l) => format!(
            "device limit: {} random {}-byte O_DIRECT reads/s over the table files ({} threads, {:.1} s); ÷dev.limit = Gets/s as a share of it",
            grouped_f64(l.reads_per_sec),
            l.page_bytes,
            l.threads,
            l.seconds
        ),
        None => "device limit: not measured".to_string(),
    }
}

/// A share as a whole percentage, `-` when unknown.
fn share_text(share: Option<f64>) -> String {
    share.map_or("-".into(), |s| format!("{:.0}%", s * 100.0))
}

pub(crate) const STYLE: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;\
margin:2em auto;max-width:1100px;padding:0 1em;color:#222;line-height:1.4}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em}\
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}\
th,td{border:1px solid #ccc;padding:.25em .6em}th{background:#f3f3f3;text-align:left}\
td.n{text-align:right;font-variant-numeric:tabular-nums}\
tr.phase1 td.p{background:#fceeec}tr.phase2 td.p{background:#fdf8e4}\
tr.phase3 td.p{background:#ecf6ec}\
figure{margin:1em 0}svg{max-width:100%;height:auto}\
figcaption{color:#555;font-size:.9em}";

/// `report.html`: everything on one page, the plots inline, no external
/// assets and no scripts.
fn html_report(results: &BenchResults, io_svg: &str, hit_svg: &str) -> String {
    let r = results;
    let mut h = String::new();
    let title = format!("shale bench kvdb: {}", subject(r));
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n\
         <p>I/Os per Get against block cache size. I/Os per Get counts block-cache misses \
         (filter, index and data blocks) per completed Get, the study's measure; physical \
         reads count the read requests the engine issued to its file system, and device \
         reads the bytes the operating system read from the device, in 4 KiB pages.</p>\n",
        escape(&title),
        escape(&title)
    );

    h.push_str("<h2>Parameters</h2>\n<table>\n");
    let warmup_gets = (r.warmup * r.keys as f64).round();
    let params: [(&str, String); 11] = [
        ("engine", r.engine.clone()),
        ("keys", grouped(r.keys)),
        ("value size", format!("{} bytes", r.value_size)),
        ("key scheme", r.scheme.clone()),
        ("read distribution", r.distribution.clone()),
        (
            "missing keys read",
            format!("{:.1}% of Gets", r.missing * 100.0),
        ),
        (
            "reader threads",
            if r.batch > 1 && r.stream {
                format!(
                    "{}, each with one multi_get_each keeping {} reads in flight \
                     (a Get's latency from the drawing of its key to its answer)",
                    r.threads, r.batch
                )
            } else if r.batch > 1 {
                format!(
                    "{}, each reading {} keys per multi_get (a Get's latency is its call's)",
                    r.threads, r.batch
                )
            } else {
                format!("{}, single Gets", r.threads)
            },
        ),
        ("Gets per cache size", grouped(r.reads)),
        (
            "warm-up per cache size",
            format!(
                "{}% of the keys ({} Gets)",
                trim_number(r.warmup * 100.0),
                grouped_f64(warmup_gets)
            ),
        ),
        (
            "direct I/O",
            if r.direct_io {
                "yes (O_DIRECT, no page cache)".into()
            } else {
                "no (reads may hit the page cache)".into()
            },
        ),
        (
            "device random-read limit",
            match &r.device_limit {
                Some(l) => format!(
                    "{} reads/s ({}-byte O_DIRECT reads at random pages of the table files, {} threads, {:.1} s)",
                    grouped_f64(l.reads_per_sec),
                    l.page_bytes,
                    l.threads,
                    l.seconds
                ),
                None => "not measured".into(),
            },
        ),
    ];
    for (name, value) in &params {
        let _ = writeln!(
            h,
            "<tr><th>{}</th><td>{}</td></tr>",
            escape(name),
            escape(value)
        );
    }
    h.push_str("</table>\n");

    h.push_str(
        "<h2>DB composition</h2>\n<table>\n<tr><th>part</th><th>bytes</th><th>size</th>\
         <th>% of DB</th></tr>\n",
    );
    let parts: [(&str, u64, String); 8] = [
        (
            "DB (all table files)",
            r.db_bytes,
            share_of_db(r.db_bytes, r.db_bytes),
        ),
        (
            "filters, all levels but the last",
            r.filter_bytes_except_last_level,
            share_of_db(r.filter_bytes_except_last_level, r.db_bytes),
        ),
        (
            "filters, all levels",
            r.filter_bytes,
            share_of_db(r.filter_bytes, r.db_bytes),
        ),
        (
            "top-level indexes",
            r.top_level_index_bytes,
            share_of_db(r.top_level_index_bytes, r.db_bytes),
        ),
        (
            "all index blocks (partitions and top-level)",
            r.index_bytes,
            share_of_db(r.index_bytes, r.db_bytes),
        ),
        (
            "data blocks",
            r.data_bytes,
            share_of_db(r.data_bytes, r.db_bytes),
        ),
        (
            "IP1: filters but the last level's + top-level indexes",
            r.ip1_bytes,
            format!("{:.3}%", r.ip1_percent),
        ),
        (
            "IP2: filters but the last level's + all index blocks",
            r.ip2_bytes,
            format!("{:.3}%", r.ip2_percent),
        ),
    ];
    for (name, bytes, share) in &parts {
        let _ = writeln!(
            h,
            "<tr><th>{}</th><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td></tr>",
            escape(name),
            grouped(*bytes),
            escape(&human_bytes(*bytes)),
            escape(share)
        );
    }
    h.push_str("</table>\n");

    h.push_str("<h2>Phases</h2>\n");
    let _ = writeln!(
        h,
        "<p>Below IP1 ({} MiB) the cache cannot keep the filters of all levels but the \
         last and the top-level indexes, so Gets read that metadata from disk and cost well \
         over 2 I/Os (phase 1). From IP1 to IP2 ({} MiB) a Get costs about 2 I/Os, an index \
         partition and a data block (phase 2), and from IP2 on, with every index block \
         cached, about 1, the data block, which random reads rarely find cached \
         (phase 3).</p>",
        mib(r.ip1_bytes),
        mib(r.ip2_bytes)
    );

    h.push_str(
        "<h2>Runs</h2>\n<table>\n<tr><th>cache (MiB)</th><th>cache (% of DB)</th>\
         <th>phase</th><th>Gets</th><th>I/Os per Get (cache misses)</th>\
         <th>physical reads per Get</th><th>device reads per Get</th>\
         <th>hit filter</th><th>hit top index</th><th>hit index</th><th>hit data</th>\
         <th>hit overall</th><th>ops/s</th><th>p50 µs</th><th>p99 µs</th>\
         <th>p99.9 µs</th><th>ops/s ÷ device limit</th></tr>\n",
    );
    for run in &r.runs {
        let cells = [
            mib(run.cache_bytes),
            format!("{:.3}%", run.cache_percent),
            run.phase.to_string(),
            grouped(run.gets),
            format!("{:.3}", run.io_per_get),
            format!("{:.3}", run.physical_reads_per_get),
            optional(run.device_reads_per_get),
            rate_text(run.hit_rate.filter),
            rate_text(run.hit_rate.top_index),
            rate_text(run.hit_rate.index),
            rate_text(run.hit_rate.data),
            rate_text(run.hit_rate.overall),
            grouped_f64(run.ops_per_sec),
            format!("{:.1}", run.p50_us),
            format!("{:.1}", run.p99_us),
            format!("{:.1}", run.p999_us),
            share_text(run.device_limit_share),
        ];
        let _ = write!(h, "<tr class=\"run phase{}\">", run.phase);
        for (i, cell) in cells.iter().enumerate() {
            let class = if i == 2 { "n p" } else { "n" };
            let _ = write!(h, "<td class=\"{class}\">{}</td>", escape(cell));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");

    let _ = write!(
        h,
        "<h2>Plots</h2>\n<figure>\n{io_svg}<figcaption>I/Os per Get against block cache \
         size; dashed lines at IP1 and IP2, tints for the three phases. Also \
         {IO_PER_GET_SVG} and {IO_PER_GET_PNG}.</figcaption>\n</figure>\n<figure>\n{hit_svg}\
         <figcaption>Block-cache hit rate per block type against cache size. Also \
         {HIT_RATES_SVG} and {HIT_RATES_PNG}.</figcaption>\n</figure>\n\
         <p>The same numbers: {RESULTS_JSON}, {RESULTS_CSV}.</p>\n</body>\n</html>\n"
    );
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale_workload::results::{phase, HitRates};

    /// A bench like the study's at a small scale: six cache sizes across both
    /// inflection points, one of them without device figures, one hit rate
    /// undefined.
    fn sample() -> BenchResults {
        let db: u64 = 2 << 30;
        let (ip1, ip2) = (db * 13 / 10_000, db * 9 / 1_000);
        let percents = [0.05, 0.1, 0.2, 0.5, 1.0, 3.0];
        let runs = percents
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let cache_bytes = (db as f64 * p / 100.0) as u64;
                let ph = phase(cache_bytes, ip1, ip2);
                let io = [3.4, 3.0, 2.3, 1.9, 1.1, 1.0][i];
                Run {
                    cache_bytes,
                    cache_percent: *p,
                    phase: ph,
                    gets: 100_000,
                    found: 100_000,
                    io_per_get: io,
                    physical_reads_per_get: io * 0.98,
                    device_reads_per_get: (i != 2).then_some(io * 1.02),
                    hit_rate: HitRates {
                        filter: Some([0.6, 0.8, 0.99, 1.0, 1.0, 1.0][i]),
                        top_index: (i != 0).then_some([0.7, 0.9, 1.0, 1.0, 1.0, 1.0][i]),
                        index: Some([0.1, 0.2, 0.4, 0.7, 0.97, 0.99][i]),
                        data: Some(0.01 + 0.005 * i as f64),
                        overall: Some([0.4, 0.5, 0.6, 0.7, 0.75, 0.76][i]),
                    },
                    ops_per_sec: 250_000.0 + 10_000.0 * i as f64,
                    p50_us: 12.5,
                    p99_us: 80.0 - i as f64,
                    p999_us: 250.0,
                    device_limit_share: (i != 2)
                        .then_some((250_000.0 + 10_000.0 * i as f64) / 500_000.0),
                }
            })
            .collect();
        BenchResults {
            engine: "shale 0.1.0 <test & co>".into(),
            keys: 20_000_000,
            value_size: 110,
            scheme: "hash".into(),
            distribution: "uniform".into(),
            missing: 0.0,
            threads: 2,
            batch: 1,
            stream: false,
            reads: 100_000,
            warmup: 0.0005,
            direct_io: true,
            db_bytes: db,
            filter_bytes_except_last_level: db / 1000,
            filter_bytes: db / 100,
            top_level_index_bytes: ip1 - db / 1000,
            index_bytes: ip2 - db / 1000,
            data_bytes: db * 97 / 100,
            ip1_bytes: ip1,
            ip2_bytes: ip2,
            ip1_percent: 0.13,
            ip2_percent: 0.9,
            device_limit: Some(shale_workload::results::DeviceLimit {
                reads_per_sec: 500_000.0,
                threads: 2,
                page_bytes: 4096,
                reads: 1_500_000,
                seconds: 3.0,
            }),
            runs,
        }
    }

    /// Width and height from a PNG's IHDR chunk.
    fn png_size(bytes: &[u8]) -> (u32, u32) {
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
        assert_eq!(&bytes[12..16], b"IHDR");
        let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        (be(&bytes[16..20]), be(&bytes[20..24]))
    }

    #[test]
    fn write_all_writes_every_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("shale-report");
        let r = sample();
        let written = write_all(&r, &out).expect("write_all");
        let names: Vec<String> = written
            .iter()
            .map(|p| {
                assert_eq!(p.parent(), Some(out.as_path()));
                p.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            })
            .collect();
        assert_eq!(
            names,
            [
                RESULTS_JSON,
                RESULTS_CSV,
                IO_PER_GET_SVG,
                IO_PER_GET_PNG,
                HIT_RATES_SVG,
                HIT_RATES_PNG,
                REPORT_HTML
            ]
        );
        let read = |name: &str| fs::read(out.join(name)).expect(name);
        let text = |name: &str| String::from_utf8(read(name)).expect(name);

        // JSON round-trips; the CSV is the schema's.
        let back: BenchResults = serde_json::from_str(&text(RESULTS_JSON)).expect("parse json");
        assert_eq!(back, r);
        assert_eq!(text(RESULTS_CSV), r.to_csv().expect("csv"));

        // PNGs: signature, header size, and they decode to that many pixels.
        for name in [IO_PER_GET_PNG, HIT_RATES_PNG] {
            let bytes = read(name);
            assert_eq!(png_size(&bytes), plot::CHART_SIZE, "{name}");
            let (w, h, pixels) = plot::decode(&bytes);
            assert_eq!((w, h), plot::CHART_SIZE);
            // Not blank: the series' blue and the first phase's tint are
            // somewhere.
            assert!(
                pixels.chunks_exact(3).any(|p| p == [31, 119, 180]),
                "{name} shows no series colour"
            );
            assert!(
                pixels.chunks_exact(3).any(|p| p == [252, 238, 236]),
                "{name} shows no phase 1"
            );
        }

        // SVGs: a document each, with the series, the inflection points and
        // escaped text.
        let io_svg = text(IO_PER_GET_SVG);
        let hit_svg = text(HIT_RATES_SVG);
        for svg in [&io_svg, &hit_svg] {
            assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
            assert!(svg.trim_end().ends_with("</svg>"));
            let texts = plot::svg_texts(svg);
            for label in [
                "IP1", "IP2", "phase 1", "phase 3", "IP1, IP2", X_LABEL, "1%",
            ] {
                assert!(texts.iter().any(|t| t == label), "{label} in {texts:?}");
            }
            assert!(svg.contains("&lt;test &amp; co&gt;"));
            assert!(!svg.contains("<test"));
            assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
        }
        let texts = plot::svg_texts(&io_svg);
        for name in [
            "io_per_get (misses)",
            "physical_reads_per_get",
            "device_reads_per_get",
            "I/Os per Get",
        ] {
            assert!(texts.iter().any(|t| t == name), "{name} in {texts:?}");
        }
        let texts = plot::svg_texts(&hit_svg);
        for name in [
            "filter",
            "top_index",
            "index",
            "data",
            "overall",
            "block-cache hit rate (%)",
            "100",
        ] {
            assert!(texts.iter().any(|t| t == name), "{name} in {texts:?}");
        }

        // HTML: self-contained, both plots inline, a row per run.
        let html = text(REPORT_HTML);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert_eq!(html.matches("<svg").count(), 2);
        assert!(html.contains(&io_svg) && html.contains(&hit_svg));
        assert_eq!(html.matches("<tr class=\"run").count(), r.runs.len());
        assert!(!html.contains("<script") && !html.contains("src=") && !html.contains("href="));
        assert!(html.contains("<td class=\"n\">3.000%</td>"));
        assert!(
            html.contains("<td>20,000,000</td>"),
            "keys in the parameters"
        );
        assert!(html.contains("shale 0.1.0 &lt;test &amp; co&gt;"));
        assert!(html.contains("phase 1") && html.contains("phase 3"));
        assert!(html.contains("<td>500,000 reads/s (4096-byte O_DIRECT reads"));
        assert!(html.contains("<th>ops/s ÷ device limit</th>"));
        assert!(html.contains("<td class=\"n\">50%</td>"));
    }

    #[test]
    fn write_all_names_the_path_it_cannot_write() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("plain-file");
        fs::write(&file, b"x").expect("write file");
        let out = file.join("report");
        let err = write_all(&sample(), &out).expect_err("under a regular file");
        assert!(err.starts_with("cannot create "), "{err}");
        assert!(err.contains(&out.display().to_string()), "{err}");
        assert!(!err.contains('\n') && !err.contains("os error"), "{err}");

        // A directory exists but a file in it cannot be written.
        let out = dir.path().join("out");
        fs::create_dir_all(out.join(RESULTS_CSV)).expect("mkdir");
        let err = write_all(&sample(), &out).expect_err("results.csv is a directory");
        assert!(
            err.starts_with(&format!(
                "cannot write {}: ",
                out.join(RESULTS_CSV).display()
            )),
            "{err}"
        );
    }

    #[test]
    fn runs_without_cache_or_values_still_plot() {
        let mut r = sample();
        r.runs[0].cache_bytes = 0;
        r.runs[0].cache_percent = 0.0;
        for run in &mut r.runs {
            run.device_reads_per_get = None;
            run.hit_rate.index = None;
        }
        let io = io_per_get_chart(&r).to_svg().expect("svg");
        assert!(!io.contains("device_reads_per_get"));
        assert!(io.contains("1 run(s) with no cache not shown"));
        let hit = hit_rate_chart(&r).to_svg().expect("svg");
        // The index series is in the legend but draws no point.
        assert!(plot::svg_texts(&hit).iter().any(|t| t == "index"));
        // An empty bench gives a report too.
        let empty = BenchResults::default();
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(write_all(&empty, dir.path()).expect("empty").len(), 7);
        assert_eq!(terminal_table(&empty).lines().count(), 4);
    }

    #[test]
    fn terminal_table_has_a_line_per_run() {
        let r = sample();
        let table = terminal_table(&r);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 4 + r.runs.len(), "{table}");
        assert!(lines[0].contains("IP1 = ") && lines[0].contains("(0.130% of DB)"));
        assert!(lines[0].contains("IP2 = ") && lines[0].contains("(0.900% of DB)"));
        assert!(
            lines[1].starts_with("device limit: 500,000 random 4096-byte"),
            "{}",
            lines[1]
        );
        assert!(lines[2].contains("I/O/Get(miss)") && lines[2].contains("÷dev.limit"));
        // Fixed width: every line under the header is as wide as it.
        let width = lines[2].chars().count();
        for line in &lines[3..] {
            assert_eq!(line.chars().count(), width, "{line:?}");
        }
        assert!(lines[4].contains("0.050%") && lines[4].contains("3.400"));
        // 250,000 of 500,000 reads/s.
        assert!(lines[4].ends_with("50%"), "{}", lines[4]);
        assert!(
            lines[6].contains("    -"),
            "no device reads in run 3: {}",
            lines[6]
        );
        assert!(lines[9].contains("3.000%") && lines[9].contains("300,000"));
        assert!(lines[9].ends_with("60%"), "{}", lines[9]);
        let unmeasured = BenchResults {
            device_limit: None,
            ..r
        };
        assert!(terminal_table(&unmeasured).contains("device limit: not measured"));
    }

    #[test]
    fn numbers_for_people() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(200_000_000), "200,000,000");
        assert_eq!(grouped_f64(f64::NAN), "-");
        assert_eq!(grouped_f64(1234.6), "1,235");
        assert_eq!(trim_number(0.050), "0.05");
        assert_eq!(trim_number(20.0), "20");
        assert_eq!(share_of_db(5, 0), "-");
        assert_eq!(share_of_db(1, 8), "12.500%");
        let e = io::Error::from_raw_os_error(13);
        assert_eq!(reason(&e), "Permission denied");
    }
}
