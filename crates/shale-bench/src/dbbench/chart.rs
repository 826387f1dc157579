//! The sweep's charts: micros/op, table-cache and block-cache hit rates
//! against the swept value on a log axis, one line per engine and benchmark
//! (colour by benchmark, marker by engine).

use crate::report::plot::{Axis, LineChart, Rgb, Series, Shape, BLUE, GRAY, GREEN, ORANGE, RED};

use super::points::{SweepPoint, SweepResults};

/// File stem and chart, for each chart of `r`.
pub(crate) fn charts(r: &SweepResults) -> Vec<(&'static str, LineChart)> {
    let x_label = match r.param.as_str() {
        "cache_size" => "cache_size (bytes, log scale)",
        _ => "open_files (log scale)",
    };
    let what = format!(
        "{} keys of {} + {} bytes, {} reads a point",
        r.num, r.key_size, r.value_size, r.reads
    );
    let chart = |title: &str, y: Axis, get: fn(&SweepPoint) -> Option<f64>| {
        let mut c = LineChart::new(format!("{title}: {what}"), Axis::log10(x_label), y);
        for engine in &r.engines {
            for bench in &r.benchmarks {
                let points: Vec<(f64, f64)> = r
                    .points
                    .iter()
                    .filter(|p| &p.engine == engine && &p.benchmark == bench)
                    .filter_map(|p| get(p).map(|y| (p.value as f64, y)))
                    .collect();
                if points.is_empty() {
                    continue;
                }
                c.series.push(
                    Series::new(format!("{engine} {bench}"), points)
                        .color(bench_color(bench))
                        .marker(engine_marker(engine)),
                );
            }
        }
        if r.values.contains(&0) {
            c.note = Some(format!(
                "{} = 0 has no place on the log axis: see sweep.csv",
                r.param
            ));
        }
        c
    };
    vec![
        (
            "sweep_micros",
            chart("micros/op", Axis::log10("micros/op (log scale)"), |p| {
                Some(p.micros_per_op)
            }),
        ),
        (
            "sweep_table_cache",
            chart(
                "table-cache hit rate",
                Axis::linear("hit rate (%)").range(0.0, 100.0),
                |p| p.table_cache_hit_rate.map(|h| h * 100.0),
            ),
        ),
        (
            "sweep_block_cache",
            chart(
                "block-cache hit rate",
                Axis::linear("hit rate (%)").range(0.0, 100.0),
                |p| p.block_cache_hit_rate.map(|h| h * 100.0),
            ),
        ),
    ]
}

fn bench_color(bench: &str) -> Rgb {
    match bench {
        "readrandom" => BLUE,
        "readhot" => ORANGE,
        "seekrandom" => GREEN,
        "readmissing" => RED,
        _ => GRAY,
    }
}

fn engine_marker(engine: &str) -> Shape {
    match engine {
        "shale" => Shape::Circle,
        "leveldb" => Shape::Square,
        _ => Shape::Triangle,
    }
}
