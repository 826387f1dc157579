//! The report of `shale bench compare`: `compare.json`, `compare.csv`, plots
//! with one curve per engine (misses per Get, device reads per Get and Gets/s
//! against cache size; device reads per Get, Gets/s and p99 latency against
//! the memory budget; as SVG and PNG), `compare.html`, and the terminal tables
//! with every engine's figures as a ratio to shale's.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use shale_workload::results::{CompareResults, EngineResults, EngineRun, Run};

use super::plot::{
    escape, Axis, LineChart, Rgb, Series, Shape, BLUE, BROWN, GREEN, ORANGE, PURPLE, RED,
};
use super::{grouped, grouped_f64, mib, optional, reason, STYLE};
use crate::fmt::human_bytes;

/// The files [`write_all`] writes: the results as JSON,
pub const COMPARE_JSON: &str = "compare.json";
/// one row per engine and cache size as CSV,
pub const COMPARE_CSV: &str = "compare.csv";
/// and the page with the plots.
pub const COMPARE_HTML: &str = "compare.html";
/// The plots, each written as `<name>.svg` and `<name>.png`.
pub const PLOTS: [&str; 3] = ["compare_io_per_get", "compare_device_reads", "compare_ops"];
/// The plots of view (b), written when some engine ran in a memory budget.
pub const BUDGET_PLOTS: [&str; 3] = [
    "compare_budget_device_reads",
    "compare_budget_ops",
    "compare_budget_p99",
];

const X_LABEL: &str = "block cache size (% of each engine's DB, log scale)";

/// Writes every file of the report into `out_dir` and returns their paths.
pub fn write_all(results: &CompareResults, out_dir: &Path) -> Result<Vec<PathBuf>, String> {
    fs::create_dir_all(out_dir)
        .map_err(|e| format!("cannot create {}: {}", out_dir.display(), reason(&e)))?;
    let in_dir = |name: &str| out_dir.join(name);
    let mut json = serde_json::to_string_pretty(results)
        .map_err(|e| format!("cannot write {}: {e}", in_dir(COMPARE_JSON).display()))?;
    json.push('\n');
    let mut charts: Vec<(&str, LineChart)> = PLOTS.into_iter().zip(charts(results)).collect();
    if results.engines.iter().any(|e| !e.budget_runs.is_empty()) {
        charts.extend(BUDGET_PLOTS.into_iter().zip(budget_charts(results)));
    }
    let mut files: Vec<(String, Vec<u8>)> = vec![
        (COMPARE_JSON.into(), json.into_bytes()),
        (COMPARE_CSV.into(), results.to_csv()?.into_bytes()),
    ];
    let mut svgs = Vec::new();
    for (name, c) in &charts {
        let svg = c
            .to_svg()
            .map_err(|e| format!("cannot write {}.svg: {e}", in_dir(name).display()))?;
        let png = c
            .to_png()
            .map_err(|e| format!("cannot write {}.png: {e}", in_dir(name).display()))?;
        files.push((format!("{name}.svg"), svg.clone().into_bytes()));
        files.push((format!("{name}.png"), png));
        svgs.push(svg);
    }
    files.push((COMPARE_HTML.into(), html(results, &svgs).into_bytes()));
    let mut written = Vec::with_capacity(files.len());
    for (name, bytes) in files {
        let path = in_dir(&name);
        fs::write(&path, bytes)
            .map_err(|e| format!("cannot write {}: {}", path.display(), reason(&e)))?;
        written.push(path);
    }
    Ok(written)
}

fn color(i: usize) -> (Rgb, Shape) {
    const STYLES: [(Rgb, Shape); 6] = [
        (BLUE, Shape::Circle),
        (ORANGE, Shape::Square),
        (GREEN, Shape::Triangle),
        (PURPLE, Shape::Diamond),
        (RED, Shape::Circle),
        (BROWN, Shape::Square),
    ];
    STYLES[i % STYLES.len()]
}

fn subject(r: &CompareResults) -> String {
    format!(
        "{} {} keys, {}-byte values, {} Gets, {} threads",
        grouped(r.keys),
        r.scheme,
        r.value_size,
        r.distribution,
        r.threads
    )
}

/// What a chart plots of a run.
type Pick = fn(&Run) -> Option<f64>;

/// One chart per plot of [`PLOTS`], one series per engine with runs.
fn charts(r: &CompareResults) -> Vec<LineChart> {
    let plots: [(&str, &str, Pick); 3] = [
        ("Block-cache misses per Get", "misses per Get", |r| {
            Some(r.io_per_get)
        }),
        (
            "Device reads per Get (4 KiB pages)",
            "device pages per Get",
            |r| r.device_reads_per_get,
        ),
        ("Gets per second", "Gets/s", |r| Some(r.ops_per_sec)),
    ];
    plots
        .iter()
        .map(|&(title, y_label, pick)| {
            engine_chart(r, title, (X_LABEL.into(), "%"), y_label, |e| {
                e.runs
                    .iter()
                    .filter(|er| er.run.cache_percent > 0.0)
                    .map(|er| (er.run.cache_percent, pick(&er.run)))
                    .collect()
            })
        })
        .collect()
}

/// One chart per plot of [`BUDGET_PLOTS`]: each engine's best try per budget.
fn budget_charts(r: &CompareResults) -> Vec<LineChart> {
    let plots: [(&str, &str, Pick); 3] = [
        (
            "Device reads per Get (4 KiB pages) in a memory budget",
            "device pages per Get",
            |r| r.device_reads_per_get,
        ),
        ("Gets per second in a memory budget", "Gets/s", |r| {
            Some(r.ops_per_sec)
        }),
        ("p99 Get latency in a memory budget", "p99 µs", |r| {
            Some(r.p99_us)
        }),
    ];
    let x_label = format!(
        "total memory budget (log scale; page cache included; {})",
        cache_rule(r)
    );
    plots
        .iter()
        .map(|&(title, y_label, pick)| {
            engine_chart(r, title, (x_label.clone(), " MiB"), y_label, |e| {
                e.budget_runs
                    .iter()
                    .filter(|b| b.best)
                    .map(|b| (b.budget_bytes as f64 / (1u64 << 20) as f64, pick(&b.run)))
                    .collect()
            })
        })
        .collect()
}

/// A chart with a series for every engine that has `points` (x on a log
/// axis; a point without a y value is a gap in its line).
fn engine_chart(
    r: &CompareResults,
    title: &str,
    (x_label, x_unit): (String, &str),
    y_label: &str,
    points: impl Fn(&EngineResults) -> Vec<(f64, Option<f64>)>,
) -> LineChart {
    let series = r
        .engines
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let points = points(e);
            if points.is_empty() {
                return None;
            }
            let (color, shape) = color(i);
            // A curve along the x axis, whatever order the runs were in.
            let mut points: Vec<(f64, f64)> = points
                .into_iter()
                .map(|(x, y)| (x, y.unwrap_or(f64::NAN)))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Some(
                Series::new(e.label.clone(), points)
                    .color(color)
                    .marker(shape)
                    .width(if e.engine == "shale" { 3 } else { 2 }),
            )
        })
        .collect();
    LineChart {
        series,
        ..LineChart::new(
            format!("{title}: {}", subject(r)),
            Axis::log10(x_label).unit(x_unit),
            Axis::linear(y_label),
        )
    }
}

fn shale_run<'a>(r: &'a CompareResults, spec: &str) -> Option<&'a Run> {
    r.engines
        .iter()
        .find(|e| e.engine == "shale")
        .and_then(|e| e.runs.iter().find(|er| er.spec == spec))
        .map(|er| &er.run)
}

fn run_of<'a>(e: &'a EngineResults, spec: &str) -> Option<&'a EngineRun> {
    e.runs.iter().find(|er| er.spec == spec)
}

/// A cache size as given, saying whose database a relative one refers to.
fn spec_text(spec: &str) -> String {
    let relative =
        spec.ends_with('%') || spec.eq_ignore_ascii_case("ip1") || spec.eq_ignore_ascii_case("ip2");
    if relative {
        format!("{spec} of each engine's database")
    } else {
        format!("{spec} for every engine")
    }
}

/// `x / shale's x`, or `-`.
fn vs_shale(x: f64, shale: Option<f64>) -> String {
    match shale {
        Some(s) if s > 0.0 && x.is_finite() => format!("{:.2}x", x / s),
        _ => "-".into(),
    }
}

fn engine_rows(e: &EngineResults) -> [String; 7] {
    let c = e.shape.as_ref().map(|s| s.composition);
    let pct = |b: u64| {
        c.filter(|c| c.db_bytes > 0).map_or("-".into(), |c| {
            format!("{:.3}%", 100.0 * b as f64 / c.db_bytes as f64)
        })
    };
    [
        if e.label.is_empty() {
            e.engine.clone()
        } else {
            e.label.clone()
        },
        c.map_or("-".into(), |c| human_bytes(c.db_bytes)),
        c.map_or("-".into(), |c| pct(c.ip1_bytes())),
        c.map_or("-".into(), |c| pct(c.ip2_bytes())),
        e.load
            .as_ref()
            .map_or("-".into(), |l| format!("{:.1}", l.seconds)),
        e.load
            .as_ref()
            .map_or("-".into(), |l| format!("{:.2}", l.write_amp)),
        short_status(&e.status),
    ]
}

/// Longest status the tables show; compare.json keeps the whole text (a
/// failed harness's status ends with its standard error).
const STATUS_CHARS: usize = 160;

fn short_status(status: &str) -> String {
    match status.char_indices().nth(STATUS_CHARS) {
        Some((cut, _)) => format!("{}… (whole text in {COMPARE_JSON})", &status[..cut]),
        None => status.to_string(),
    }
}

fn run_cells(er: &EngineRun, shale: Option<&Run>) -> [String; 8] {
    let r = &er.run;
    [
        mib(r.cache_bytes),
        format!("{:.3}", r.io_per_get),
        format!("{:.3}", r.physical_reads_per_get),
        optional(r.device_reads_per_get),
        grouped_f64(r.ops_per_sec),
        format!("{:.1}", r.p99_us),
        vs_shale(r.ops_per_sec, shale.map(|s| s.ops_per_sec)),
        match (
            r.device_reads_per_get,
            shale.and_then(|s| s.device_reads_per_get),
        ) {
            (Some(x), s) => vs_shale(x, s),
            _ => "-".into(),
        },
    ]
}

fn table(columns: &[(&str, usize)], rows: &[Vec<String>]) -> String {
    let line = |cells: &[String]| -> String {
        let mut out = String::new();
        for (i, (cell, (_, width))) in cells.iter().zip(columns).enumerate() {
            if i > 0 {
                out.push_str("  ");
            }
            if i == 0 || i + 1 == cells.len() && *width == 0 {
                let _ = write!(out, "{cell:<width$}");
            } else {
                let _ = write!(out, "{cell:>width$}");
            }
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
        out
    };
    let names: Vec<String> = columns.iter().map(|(n, _)| n.to_string()).collect();
    let header = line(&names);
    let mut out = header.clone();
    out.push_str(&"-".repeat(header.chars().count().saturating_sub(1)));
    out.push('\n');
    for row in rows {
        out.push_str(&line(row));
    }
    out
}

/// The terminal form: the engines and their databases, then one table per
/// cache size with every engine's figures and its ratio to shale's.
pub fn terminal_tables(r: &CompareResults) -> String {
    let mut out = format!("{}\n\n", subject(r));
    let engines: Vec<Vec<String>> = r.engines.iter().map(|e| engine_rows(e).to_vec()).collect();
    out.push_str(&table(
        &[
            ("engine", 28),
            ("DB", 10),
            ("IP1", 7),
            ("IP2", 7),
            ("load s", 7),
            ("w-amp", 6),
            ("status", 0),
        ],
        &engines,
    ));
    for &budget in &r.memory_budgets {
        let rows = budget_rows(r, budget);
        if rows.is_empty() {
            continue;
        }
        let _ = write!(
            out,
            "\nmemory budget {} (page cache included; {})\n",
            human_bytes(budget),
            cache_rule(r)
        );
        out.push_str(&table(&BUDGET_COLUMNS, &rows));
    }
    for spec in &r.cache_specs {
        let shale = shale_run(r, spec);
        let rows: Vec<Vec<String>> = r
            .engines
            .iter()
            .filter_map(|e| {
                run_of(e, spec).map(|er| {
                    let mut row = vec![e.label.clone()];
                    row.extend(run_cells(er, shale));
                    row
                })
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        let _ = write!(out, "\ncache {}\n", spec_text(spec));
        out.push_str(&table(
            &[
                ("engine", 28),
                ("cache MiB", 9),
                ("miss/Get", 8),
                ("reads/Get", 9),
                ("dev/Get", 7),
                ("Gets/s", 9),
                ("p99 µs", 8),
                ("Gets/s÷shale", 12),
                ("dev÷shale", 9),
            ],
            &rows,
        ));
    }
    out
}

const BUDGET_COLUMNS: [(&str, usize); 11] = [
    ("engine", 30),
    ("base RSS", 9),
    ("cache MiB", 9),
    ("slack MiB", 9),
    ("refault/Get", 11),
    ("dev/Get", 7),
    ("reads/Get", 9),
    ("Gets/s", 9),
    ("p99 µs", 8),
    ("Gets/s÷shale", 12),
    ("dev÷shale", 9),
];

/// How the block cache of each engine in a budget was chosen.
fn cache_rule(r: &CompareResults) -> String {
    let slack = human_bytes(r.memory_slack);
    match r.memory_cache_shares.as_slice() {
        [] | [1.0] => format!(
            "cache = budget - baseline RSS - {slack} slack, at least 1 MiB (the slack is what \
             remains in a tighter budget)"
        ),
        shares => {
            let list: Vec<String> = shares.iter().map(|s| format!("{s}")).collect();
            format!(
                "cache = the best for Gets/s of {} x (budget - baseline RSS - {slack} slack), at \
                 least 1 MiB (the slack is what remains in a tighter budget)",
                list.join(", ")
            )
        }
    }
}

/// One row per engine measured in `budget` (its best try), ratios to the
/// first shale row.
fn budget_rows(r: &CompareResults, budget: u64) -> Vec<Vec<String>> {
    let of = |e: &'_ EngineResults| {
        e.budget_runs
            .iter()
            .find(|b| b.budget_bytes == budget && b.best)
            .cloned()
    };
    let shale = r
        .engines
        .iter()
        .filter(|e| e.engine == "shale")
        .find_map(of)
        .map(|b| b.run);
    r.engines
        .iter()
        .filter_map(|e| {
            let b = of(e)?;
            let run = &b.run;
            Some(vec![
                e.label.clone(),
                e.baseline_rss_bytes.map_or("-".into(), mib),
                mib(run.cache_bytes),
                mib(b.slack_bytes),
                b.refaults_per_get.map_or("-".into(), |x| format!("{x:.3}")),
                optional(run.device_reads_per_get),
                format!("{:.3}", run.physical_reads_per_get),
                grouped_f64(run.ops_per_sec),
                format!("{:.1}", run.p99_us),
                vs_shale(run.ops_per_sec, shale.as_ref().map(|s| s.ops_per_sec)),
                match (
                    run.device_reads_per_get,
                    shale.as_ref().and_then(|s| s.device_reads_per_get),
                ) {
                    (Some(x), s) => vs_shale(x, s),
                    _ => "-".into(),
                },
            ])
        })
        .collect()
}

fn html(r: &CompareResults, svgs: &[String]) -> String {
    let title = format!("shale bench compare: {}", subject(r));
    let mut h = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{t}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{t}</h1>\n\
         <p>Every engine loaded the same dataset and read the same keys at each cache size, \
         each in a process of its own (its harness). Misses per Get count the block-cache \
         misses the engine reports (filter, index and data blocks; a kind it cannot report \
         adds nothing); reads per Get count the read calls on table files; device reads are \
         the bytes the kernel read for the process, in 4 KiB pages. Ratios divide by \
         shale's figure at the same cache size.</p>\n",
        t = escape(&title)
    );
    h.push_str("<h2>Engines</h2>\n<table>\n<tr>");
    for c in ["engine", "DB", "IP1", "IP2", "load s", "w-amp", "status"] {
        let _ = write!(h, "<th>{c}</th>");
    }
    h.push_str("</tr>\n");
    for e in &r.engines {
        h.push_str("<tr>");
        for (i, cell) in engine_rows(e).iter().enumerate() {
            let class = if (1..6).contains(&i) {
                " class=\"n\""
            } else {
                ""
            };
            let _ = write!(h, "<td{class}>{}</td>", escape(cell));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    for spec in &r.cache_specs {
        let shale = shale_run(r, spec);
        let _ = write!(
            h,
            "<h2>Cache {}</h2>\n<table>\n<tr>",
            escape(&spec_text(spec))
        );
        for c in [
            "engine",
            "cache MiB",
            "misses/Get",
            "reads/Get",
            "device pages/Get",
            "Gets/s",
            "p99 µs",
            "Gets/s ÷ shale",
            "device ÷ shale",
        ] {
            let _ = write!(h, "<th>{}</th>", escape(c));
        }
        h.push_str("</tr>\n");
        for e in &r.engines {
            if let Some(er) = run_of(e, spec) {
                let _ = write!(h, "<tr><td>{}</td>", escape(&e.label));
                for cell in run_cells(er, shale) {
                    let _ = write!(h, "<td class=\"n\">{}</td>", escape(&cell));
                }
                h.push_str("</tr>\n");
            }
        }
        h.push_str("</table>\n");
    }
    for &budget in &r.memory_budgets {
        let rows = budget_rows(r, budget);
        if rows.is_empty() {
            continue;
        }
        let _ = write!(
            h,
            "<h2>Memory budget {} (page cache included)</h2>\n<p>Each engine read in a control \
             group limited to the budget, after the page cache was dropped, with a block cache \
             of its free memory, the budget minus its resident memory with a 1 MiB cache \
             (base RSS) minus slack: {}.</p>\n<table>\n<tr>",
            escape(&human_bytes(budget)),
            escape(&cache_rule(r))
        );
        for (c, _) in BUDGET_COLUMNS {
            let _ = write!(h, "<th>{}</th>", escape(c));
        }
        h.push_str("</tr>\n");
        for row in rows {
            let _ = write!(h, "<tr><td>{}</td>", escape(&row[0]));
            for cell in &row[1..] {
                let _ = write!(h, "<td class=\"n\">{}</td>", escape(cell));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table>\n");
    }
    for svg in svgs {
        let _ = writeln!(h, "<figure>{svg}</figure>");
    }
    h.push_str("</body>\n</html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Composition;
    use shale_workload::protocol::{DbShape, ReadReply};

    fn engine(name: &str, ops: f64, status: &str) -> EngineResults {
        let comp = Composition {
            db_bytes: 1 << 30,
            ..Default::default()
        };
        let runs = if status == "ok" {
            vec![EngineRun {
                spec: "0.1%".into(),
                run: Run {
                    cache_bytes: 1 << 20,
                    cache_percent: 0.1,
                    ops_per_sec: ops,
                    device_reads_per_get: Some(ops / 1000.0),
                    ..Default::default()
                },
                reply: ReadReply::default(),
            }]
        } else {
            Vec::new()
        };
        EngineResults {
            engine: name.into(),
            config: "c".into(),
            label: format!("{name} 1.0 (c)"),
            status: status.into(),
            load: None,
            shape: Some(DbShape {
                composition: comp,
                levels: Vec::new(),
            }),
            runs,
            ..Default::default()
        }
    }

    fn sample() -> CompareResults {
        CompareResults {
            keys: 1000,
            scheme: "hash".into(),
            cache_specs: vec!["0.1%".into()],
            engines: vec![
                engine("shale", 2000.0, "ok"),
                engine("pebble", 1000.0, "ok"),
                engine("leveldb", 0.0, "not built: run `scripts/peers.sh leveldb`"),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn tables_show_ratios_to_shale_and_unbuilt_engines() {
        let t = terminal_tables(&sample());
        assert!(t.contains("scripts/peers.sh leveldb"), "{t}");
        let pebble = t
            .lines()
            .rfind(|l| l.starts_with("pebble"))
            .expect("a pebble row");
        assert!(pebble.contains("0.50x"), "{pebble}");
        let shale = t.lines().rfind(|l| l.starts_with("shale")).expect("row");
        assert!(shale.contains("1.00x"), "{shale}");
    }

    #[test]
    fn long_statuses_are_cut_in_tables() {
        let long = "é".repeat(STATUS_CHARS + 5);
        let short = short_status(&long);
        assert!(short.starts_with(&"é".repeat(STATUS_CHARS)), "{short}");
        assert!(short.ends_with("(whole text in compare.json)"), "{short}");
        assert!(!short.contains(&"é".repeat(STATUS_CHARS + 1)), "{short}");
        assert_eq!(short_status("ok"), "ok");
    }

    #[test]
    fn memory_budgets_get_a_table_each() {
        let mut r = sample();
        r.memory_budgets = vec![48 << 20, 64 << 20];
        for (i, e) in r.engines.iter_mut().take(2).enumerate() {
            e.baseline_rss_bytes = Some(10 << 20);
            e.budget_runs.push(shale_workload::results::BudgetRun {
                budget_bytes: 48 << 20,
                cache_share: 1.0,
                best: true,
                slack_bytes: 32 << 20,
                refaults_per_get: Some(0.25 * i as f64),
                run: Run {
                    cache_bytes: 6 << 20,
                    ops_per_sec: 1000.0 * (2 - i) as f64,
                    device_reads_per_get: Some(1.0 + i as f64),
                    ..Default::default()
                },
                reply: ReadReply::default(),
            });
            // A slower try with a smaller cache, which the tables leave out.
            e.budget_runs.push(shale_workload::results::BudgetRun {
                budget_bytes: 48 << 20,
                cache_share: 0.5,
                best: false,
                slack_bytes: 35 << 20,
                refaults_per_get: None,
                run: Run {
                    cache_bytes: 3 << 20,
                    ops_per_sec: 10.0,
                    device_reads_per_get: Some(9.0),
                    ..Default::default()
                },
                reply: ReadReply::default(),
            });
        }
        let t = terminal_tables(&r);
        assert!(t.contains("memory budget 48.00 MiB"), "{t}");
        assert!(
            !t.contains("memory budget 64.00 MiB"),
            "no runs, no table: {t}"
        );
        let pebble = t
            .lines()
            .find(|l| l.starts_with("pebble") && l.contains("6.00"))
            .expect("pebble's budget row");
        assert!(
            pebble.contains("32.00") && pebble.contains("0.250"),
            "slack and refaults per Get: {pebble}"
        );
        assert!(
            pebble.contains("0.50x") && pebble.contains("2.00x"),
            "{pebble}"
        );
        assert!(!t.contains("3.00"), "only the best try is shown: {t}");
        let dir = tempfile::tempdir().expect("tempdir");
        let written = write_all(&r, dir.path()).expect("written");
        assert_eq!(written.len(), 3 + 2 * (PLOTS.len() + BUDGET_PLOTS.len()));
        let svg = fs::read_to_string(dir.path().join("compare_budget_ops.svg")).expect("svg");
        assert!(svg.contains("budget"), "{svg}");
        let csv = r.to_csv().expect("csv");
        assert!(csv.contains(",memory:50331648,"), "{csv}");
        assert!(csv.contains(",memory:50331648:share=0.5,"), "{csv}");
    }

    #[test]
    fn every_file_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let written = write_all(&sample(), dir.path()).expect("written");
        assert_eq!(written.len(), 3 + 2 * PLOTS.len());
        let html = fs::read_to_string(dir.path().join(COMPARE_HTML)).expect("html");
        assert!(html.contains("pebble 1.0 (c)") && html.contains("<svg"));
        let csv = fs::read_to_string(dir.path().join(COMPARE_CSV)).expect("csv");
        assert_eq!(csv.lines().count(), 3, "a header and one line per run");
        for name in PLOTS {
            let svg = fs::read_to_string(dir.path().join(format!("{name}.svg"))).expect("svg");
            let texts = super::super::plot::svg_texts(&svg);
            for label in ["shale 1.0 (c)", "pebble 1.0 (c)", "0.1%", X_LABEL] {
                assert!(texts.iter().any(|t| t == label), "{label} in {texts:?}");
            }
            // leveldb has no runs: no series, no legend row.
            assert!(!texts.iter().any(|t| t.starts_with("leveldb")), "{texts:?}");
            let png = fs::read(dir.path().join(format!("{name}.png"))).expect("png");
            let (w, h, _) = super::super::plot::decode(&png);
            assert_eq!((w, h), super::super::plot::CHART_SIZE);
        }
    }

    #[test]
    fn curves_run_along_the_cache_axis() {
        let mut r = sample();
        let shale = &mut r.engines[0];
        let template = shale.runs[0].clone();
        // Runs in the order of --cache, not of their size.
        shale.runs = [0.5, 0.1, 4.0]
            .iter()
            .map(|p| {
                let mut er = template.clone();
                er.run.cache_percent = *p;
                er
            })
            .collect();
        let chart = &charts(&r)[0];
        let xs: Vec<f64> = chart.series[0].points.iter().map(|p| p.0).collect();
        assert_eq!(xs, [0.1, 0.5, 4.0]);
        assert_eq!(chart.series.len(), 2, "leveldb has no runs");
        assert_eq!(chart.series[0].width, 3, "shale's line is the heavier");
    }
}
