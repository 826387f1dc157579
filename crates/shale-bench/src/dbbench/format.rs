//! The text db_bench prints: the result line of a benchmark and the latency
//! histogram `--histogram` adds after it. Written here from the layout of
//! db_bench's output, not from its code.

use std::fmt::Write as _;

use crate::live::OpStats;

/// db_bench's result line:
/// `name (left-aligned in 12 columns) : %11.3f micros/op N ops/sec;` then,
/// after a space, `%6.1f MB/s` when bytes were counted and the message (such
/// as `(632000 of 1000000 found)`).
pub fn result_line(
    name: &str,
    micros_per_op: f64,
    ops_per_sec: f64,
    mb_per_sec: Option<f64>,
    message: &str,
) -> String {
    let mut extra = String::new();
    if let Some(mb) = mb_per_sec {
        let _ = write!(extra, "{mb:6.1} MB/s");
    }
    if !message.is_empty() {
        if !extra.is_empty() {
            extra.push(' ');
        }
        extra.push_str(message);
    }
    // db_bench truncates ops/sec to an integer.
    let ops = if ops_per_sec.is_finite() && ops_per_sec > 0.0 {
        ops_per_sec as u64
    } else {
        0
    };
    format!(
        "{name:<12} : {micros_per_op:11.3} micros/op {ops} ops/sec;{}{extra}",
        if extra.is_empty() { "" } else { " " }
    )
}

/// Upper bounds of the histogram's buckets in microseconds: 1, 1.5, 2, 3, 5
/// and 7 times each power of ten, from 1 us to 1000 s, then everything above.
fn bucket_bounds() -> Vec<f64> {
    let mut v = Vec::new();
    let mut decade = 1.0;
    while decade <= 1e8 {
        for m in [1.0, 1.5, 2.0, 3.0, 5.0, 7.0] {
            v.push(m * decade);
        }
        decade *= 10.0;
    }
    v.push(f64::INFINITY);
    v
}

/// The latency histogram of `stats` in db_bench's style: count, average,
/// standard deviation, min, median, max, the percentiles P50 P75 P99 P99.9
/// P99.99, then one line per non-empty bucket `[ low, high ) count share
/// cumulative-share` with a bar of `#` (one per 5%). Times in microseconds.
pub fn histogram_text(what: &str, stats: &OpStats) -> String {
    let h = &stats.nanos;
    let us = |ns: u64| ns as f64 / 1000.0;
    let mut s = String::new();
    let _ = writeln!(s, "Microseconds per {what}:");
    if stats.count == 0 {
        let _ = writeln!(s, "Count: 0");
        return s;
    }
    let _ = writeln!(
        s,
        "Count: {}  Average: {:.4}  StdDev: {:.2}",
        stats.count,
        h.mean() / 1000.0,
        h.stdev() / 1000.0
    );
    let _ = writeln!(
        s,
        "Min: {:.3}  Median: {:.4}  Max: {:.3}",
        us(h.min()),
        stats.quantile_micros(0.5),
        us(h.max())
    );
    let _ = writeln!(
        s,
        "Percentiles: P50: {:.2} P75: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}",
        stats.quantile_micros(0.5),
        stats.quantile_micros(0.75),
        stats.quantile_micros(0.99),
        stats.quantile_micros(0.999),
        stats.quantile_micros(0.9999)
    );
    s.push_str(&"-".repeat(54));
    s.push('\n');
    let bounds = bucket_bounds();
    let mut counts = vec![0u64; bounds.len()];
    for v in h.iter_recorded() {
        let x = us(v.value_iterated_to());
        let i = bounds.partition_point(|&b| b <= x).min(bounds.len() - 1);
        counts[i] += v.count_at_value();
    }
    let total: u64 = counts.iter().sum::<u64>().max(1);
    let mut cumulative = 0u64;
    let mut low = 0.0;
    for (&high, &n) in bounds.iter().zip(&counts) {
        if n > 0 {
            cumulative += n;
            let share = 100.0 * n as f64 / total as f64;
            let high_text = if high.is_finite() {
                format!("{high:9.1}")
            } else {
                format!("{:>9}", "inf")
            };
            let _ = writeln!(
                s,
                "[ {low:9.1}, {high_text} ) {n:9} {share:7.3}% {:7.3}% {}",
                100.0 * cumulative as f64 / total as f64,
                "#".repeat((share / 5.0).round() as usize)
            );
        }
        low = high;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::LiveStats;

    #[test]
    fn result_line_has_db_bench_columns() {
        let line = result_line(
            "readrandom",
            4.213,
            237_361.9,
            Some(26.3),
            "(632000 of 1000000 found)",
        );
        assert_eq!(
            line,
            "readrandom   :       4.213 micros/op 237361 ops/sec;   26.3 MB/s (632000 of 1000000 found)"
        );
        // The micros/op field ends at the same column whatever the value.
        let a = result_line("fillseq", 0.5, 2e6, Some(110.6), "");
        assert_eq!(
            a,
            "fillseq      :       0.500 micros/op 2000000 ops/sec;  110.6 MB/s"
        );
        assert_eq!(a.find(" micros/op"), line.find(" micros/op"));
        // No bytes and no message: nothing after the semicolon.
        assert_eq!(
            result_line("compact", 1234567.0, 0.81, None, ""),
            "compact      : 1234567.000 micros/op 0 ops/sec;"
        );
        // No bytes, a message: one space, then the message.
        assert_eq!(
            result_line("readmissing", 1.0, 1e6, None, "(0 of 10 found)"),
            "readmissing  :       1.000 micros/op 1000000 ops/sec; (0 of 10 found)"
        );
        // Names longer than 12 columns push the rest right, as in db_bench.
        assert!(result_line("readrandomwriterandom", 1.0, 1.0, None, "")
            .starts_with("readrandomwriterandom :"));
    }

    #[test]
    fn histogram_lists_percentiles_and_buckets_that_add_up() {
        let live = LiveStats::new(1);
        for ns in [500, 1_200, 1_300, 2_500, 2_600, 2_700, 40_000, 900_000] {
            live.record(0, "read", ns);
        }
        let totals = live.totals();
        let text = histogram_text("read", &totals["read"]);
        assert!(text.starts_with("Microseconds per read:\nCount: 8  Average: "));
        assert!(text.contains("Percentiles: P50: "), "{text}");
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with('[')).collect();
        let counted: u64 = rows
            .iter()
            .map(|r| {
                let after = r.split(')').nth(1).expect("count column");
                after
                    .split_whitespace()
                    .next()
                    .expect("count")
                    .parse::<u64>()
                    .expect("a number")
            })
            .sum();
        assert_eq!(counted, 8, "{text}");
        assert!(
            rows.last().is_some_and(|r| r.contains("100.000%")),
            "{text}"
        );
        // 0.5 us lands in the first bucket, [0, 1).
        assert!(
            rows[0].starts_with("[       0.0,       1.0 )         1"),
            "{text}"
        );
        let empty = histogram_text("seek", &crate::live::all_kinds(&Default::default()));
        assert_eq!(empty, "Microseconds per seek:\nCount: 0\n");
    }
}
