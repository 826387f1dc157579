//! The JSON documents of a database's shape and counters: `shale stats
//! --json`, and the `stats` of `bench db`'s results.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use shale::stat::index_bytes_per_data_block;
use shale::{BlockKind, DbSummary, LevelSummary, MetadataKind, Metrics, NUM_LEVELS};

/// The JSON document of `stats --json`.
///
/// Top level: the totals over all levels (`tables`, `bytes`, `entries`,
/// `data_blocks`, `data_bytes`, `data_padding_bytes`, `index_partition_bytes`,
/// `top_level_index_bytes`,
/// `filter_bytes`, `raw_key_bytes`, `raw_value_bytes`),
/// `filter_bytes_except_last_level`, `index_bytes_per_data_block`, the LSM
/// figures (`base_level`, `write_amplification`, `pending_compaction_bytes`,
/// `l0_files`, `compactions`, `flushes`, `stall_count`, `stall_micros`), `levels`
/// (one object per level with the same per-level fields plus `score`,
/// `target_bytes`, `compactions`, `compaction_bytes_read` and
/// `compaction_bytes_written`) and `metrics` ([`metrics_json`]).
pub fn stats_json(summary: &DbSummary, metrics: &Metrics) -> Value {
    let total = summary.total();
    let doc = StatsDoc {
        totals: LevelFields::of(&total),
        base_level: summary.base_level,
        write_amplification: metrics.write_amplification(),
        pending_compaction_bytes: metrics.pending_compaction_bytes,
        l0_files: metrics.l0_files,
        compactions: metrics.compactions(),
        flushes: metrics.flushes,
        stall_count: metrics.stall_count,
        stall_micros: metrics.stall_micros,
        filter_bytes_except_last_level: summary.filter_bytes_except_last_level,
        index_bytes_per_data_block: index_bytes_per_data_block(&total),
        levels: summary
            .levels
            .iter()
            .map(|l| {
                let c = metrics.levels.get(l.level).copied().unwrap_or_default();
                LevelDoc {
                    level: l.level,
                    fields: LevelFields::of(l),
                    score: l.score,
                    target_bytes: l.target_bytes,
                    compactions: c.compactions,
                    compaction_bytes_read: c.compaction_bytes_read,
                    compaction_bytes_written: c.compaction_bytes_written,
                }
            })
            .collect(),
        metrics: MetricsDoc::of(metrics),
    };
    // Every map of the document has string keys: encoding cannot fail.
    serde_json::to_value(doc).unwrap_or(Value::Null)
}

/// The `stats --json` document ([`stats_json`]).
#[derive(Serialize)]
struct StatsDoc {
    #[serde(flatten)]
    totals: LevelFields,
    base_level: usize,
    write_amplification: Option<f64>,
    pending_compaction_bytes: u64,
    l0_files: u64,
    compactions: u64,
    flushes: u64,
    stall_count: u64,
    stall_micros: u64,
    filter_bytes_except_last_level: u64,
    index_bytes_per_data_block: Option<f64>,
    levels: Vec<LevelDoc>,
    metrics: MetricsDoc,
}

/// One level of the document.
#[derive(Serialize)]
struct LevelDoc {
    level: usize,
    #[serde(flatten)]
    fields: LevelFields,
    score: f64,
    target_bytes: Option<u64>,
    compactions: u64,
    compaction_bytes_read: u64,
    compaction_bytes_written: u64,
}

/// The figures of a level, or of all of them together.
#[derive(Serialize)]
struct LevelFields {
    tables: u64,
    bytes: u64,
    entries: u64,
    data_blocks: u64,
    data_bytes: u64,
    data_padding_bytes: u64,
    index_partition_bytes: u64,
    top_level_index_bytes: u64,
    filter_bytes: u64,
    raw_key_bytes: u64,
    raw_value_bytes: u64,
}

impl LevelFields {
    fn of(l: &LevelSummary) -> LevelFields {
        LevelFields {
            tables: l.tables,
            bytes: l.bytes,
            entries: l.entries,
            data_blocks: l.data_blocks,
            data_bytes: l.data_bytes,
            data_padding_bytes: l.data_padding_bytes,
            index_partition_bytes: l.index_partition_bytes,
            top_level_index_bytes: l.top_level_index_bytes,
            filter_bytes: l.filter_bytes,
            raw_key_bytes: l.raw_key_bytes,
            raw_value_bytes: l.raw_value_bytes,
        }
    }
}

/// Every counter of [`Metrics`] as JSON: the Get counters, one object per block
/// kind (named by [`BlockKind::name`]) with its cache hits, misses, physical
/// reads, bytes read and hit rate, the same four summed over all kinds, the
/// table cache, filter, write and block cache counters, and `io_per_get`
/// (block-cache misses / Gets, the study's metric) and `physical_reads_per_get`,
/// both `null` without Gets.
pub fn metrics_json(m: &Metrics) -> Value {
    serde_json::to_value(MetricsDoc::of(m)).unwrap_or(Value::Null)
}

/// [`metrics_json`]'s document.
#[derive(Serialize)]
struct MetricsDoc {
    gets: u64,
    gets_found: u64,
    gets_not_found: u64,
    gets_memtable_hits: u64,
    gets_table_hits: [u64; NUM_LEVELS],
    gets_table_misses: [u64; NUM_LEVELS],
    io_per_get: Option<f64>,
    physical_reads_per_get: Option<f64>,
    cache_hits: u64,
    cache_misses: u64,
    physical_reads: u64,
    bytes_read: u64,
    hit_rate: Option<f64>,
    table_cache_hits: u64,
    table_cache_misses: u64,
    filter_negatives: u64,
    filter_positives: u64,
    bytes_written_user: u64,
    bytes_written_wal: u64,
    bytes_written_tables: u64,
    wal_syncs: u64,
    flushes: u64,
    flush_bytes: u64,
    compactions: u64,
    trivial_moves: u64,
    stall_count: u64,
    stall_micros: u64,
    background_errors: u64,
    pending_compaction_bytes: u64,
    l0_files: u64,
    write_amplification: Option<f64>,
    block_cache_usage: u64,
    block_cache_capacity: u64,
    block_cache_pinned: u64,
    table_readers_held: u64,
    /// Bytes of table metadata held with open readers outside the block
    /// cache, per kind and in total.
    metadata_held_bytes: BTreeMap<&'static str, u64>,
    /// One object per block kind, under its name.
    #[serde(flatten)]
    blocks: BTreeMap<&'static str, BlockDoc>,
}

/// One block kind's counters.
#[derive(Serialize)]
struct BlockDoc {
    cache_hits: u64,
    cache_misses: u64,
    physical_reads: u64,
    bytes_read: u64,
    hit_rate: Option<f64>,
}

impl MetricsDoc {
    fn of(m: &Metrics) -> MetricsDoc {
        let mut metadata_held_bytes: BTreeMap<&'static str, u64> = MetadataKind::ALL
            .iter()
            .map(|&k| (k.name(), m.metadata_held(k)))
            .collect();
        metadata_held_bytes.insert("total", m.metadata_held_total());
        let blocks = BlockKind::ALL
            .iter()
            .map(|&kind| {
                let b = m.block(kind);
                let doc = BlockDoc {
                    cache_hits: b.cache_hits,
                    cache_misses: b.cache_misses,
                    physical_reads: b.physical_reads,
                    bytes_read: b.bytes_read,
                    hit_rate: b.hit_rate(),
                };
                (kind.name(), doc)
            })
            .collect();
        MetricsDoc {
            gets: m.gets,
            gets_found: m.gets_found,
            gets_not_found: m.gets_not_found(),
            gets_memtable_hits: m.gets_memtable_hits,
            gets_table_hits: m.gets_table_hits,
            gets_table_misses: m.gets_table_misses,
            io_per_get: m.cache_misses_per_get(),
            physical_reads_per_get: m.physical_reads_per_get(),
            cache_hits: m.cache_hits(),
            cache_misses: m.cache_misses(),
            physical_reads: m.physical_reads(),
            bytes_read: m.bytes_read(),
            hit_rate: m.hit_rate(),
            table_cache_hits: m.table_cache_hits,
            table_cache_misses: m.table_cache_misses,
            filter_negatives: m.filter_negatives,
            filter_positives: m.filter_positives,
            bytes_written_user: m.bytes_written_user,
            bytes_written_wal: m.bytes_written_wal,
            bytes_written_tables: m.bytes_written_tables,
            wal_syncs: m.wal_syncs,
            flushes: m.flushes,
            flush_bytes: m.flush_bytes,
            compactions: m.compactions(),
            trivial_moves: m.trivial_moves,
            stall_count: m.stall_count,
            stall_micros: m.stall_micros,
            background_errors: m.background_errors,
            pending_compaction_bytes: m.pending_compaction_bytes,
            l0_files: m.l0_files,
            write_amplification: m.write_amplification(),
            block_cache_usage: m.block_cache_usage,
            block_cache_capacity: m.block_cache_capacity,
            block_cache_pinned: m.block_cache_pinned,
            table_readers_held: m.table_readers_held,
            metadata_held_bytes,
            blocks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale::stat::stat_text;

    fn sample() -> DbSummary {
        let mut levels: Vec<LevelSummary> = (0..shale::NUM_LEVELS)
            .map(|level| LevelSummary {
                level,
                ..Default::default()
            })
            .collect();
        levels[0] = LevelSummary {
            level: 0,
            tables: 2,
            bytes: 3000,
            entries: 100,
            data_blocks: 10,
            data_bytes: 2500,
            data_padding_bytes: 100,
            index_partition_bytes: 60,
            top_level_index_bytes: 20,
            filter_bytes: 150,
            raw_key_bytes: 4000,
            raw_value_bytes: 11000,
            range_deletions: 3,
            score: 0.5,
            target_bytes: None,
        };
        levels[6] = LevelSummary {
            level: 6,
            tables: 1,
            bytes: 1000,
            entries: 50,
            data_blocks: 10,
            data_bytes: 900,
            data_padding_bytes: 0,
            index_partition_bytes: 50,
            top_level_index_bytes: 10,
            filter_bytes: 0,
            raw_key_bytes: 2000,
            raw_value_bytes: 5500,
            range_deletions: 0,
            score: 0.0,
            target_bytes: Some(900),
        };
        DbSummary {
            levels,
            base_level: 6,
            filter_bytes_except_last_level: 150,
        }
    }

    #[test]
    fn json_has_the_required_fields() {
        let mut m = Metrics::default();
        m.gets = 4;
        m.gets_found = 3;
        m.flushes = 2;
        let v = stats_json(&sample(), &m);
        for field in [
            "entries",
            "data_blocks",
            "data_bytes",
            "index_partition_bytes",
            "top_level_index_bytes",
            "filter_bytes",
            "filter_bytes_except_last_level",
            "index_bytes_per_data_block",
            "levels",
            "metrics",
            "write_amplification",
            "pending_compaction_bytes",
            "l0_files",
            "compactions",
            "flushes",
            "stall_count",
            "stall_micros",
        ] {
            assert!(v.get(field).is_some(), "missing {field}");
        }
        assert_eq!(v["flushes"], 2);
        assert_eq!(v["write_amplification"], serde_json::Value::Null);
        assert_eq!(v["entries"], 150);
        assert_eq!(v["tables"], 3);
        assert_eq!(v["data_blocks"], 20);
        assert_eq!(v["filter_bytes"], 150);
        assert_eq!(v["filter_bytes_except_last_level"], 150);
        assert_eq!(v["index_bytes_per_data_block"], 7.0);
        let levels = v["levels"].as_array().expect("levels array");
        assert_eq!(levels.len(), 7);
        for (i, l) in levels.iter().enumerate() {
            assert_eq!(l["level"], i);
            for field in [
                "tables",
                "bytes",
                "entries",
                "data_bytes",
                "index_partition_bytes",
                "top_level_index_bytes",
                "filter_bytes",
                "data_blocks",
                "score",
                "compaction_bytes_read",
                "compaction_bytes_written",
            ] {
                assert!(l.get(field).is_some(), "level {i} lacks {field}");
            }
        }
        assert_eq!(levels[6]["entries"], 50);
        assert_eq!(levels[6]["bytes"], 1000);

        let metrics = &v["metrics"];
        assert_eq!(metrics["gets"], 4);
        assert_eq!(metrics["gets_found"], 3);
        assert_eq!(metrics["gets_not_found"], 1);
        assert_eq!(metrics["flushes"], 2);
        assert_eq!(metrics["io_per_get"], 0.0);
        assert_eq!(metrics["physical_reads_per_get"], 0.0);
        for kind in BlockKind::ALL {
            let b = &metrics[kind.name()];
            for field in ["cache_hits", "cache_misses", "physical_reads", "bytes_read"] {
                assert_eq!(b[field], 0, "{} {field}", kind.name());
            }
            assert!(b["hit_rate"].is_null());
        }
        for field in [
            "gets_memtable_hits",
            "table_cache_hits",
            "table_cache_misses",
            "filter_negatives",
            "filter_positives",
            "bytes_written_user",
            "bytes_written_wal",
            "bytes_written_tables",
            "wal_syncs",
            "compactions",
            "block_cache_usage",
            "block_cache_capacity",
            "block_cache_pinned",
            "table_readers_held",
        ] {
            assert_eq!(metrics[field], 0, "{field}");
        }
        for kind in MetadataKind::ALL {
            assert_eq!(metrics["metadata_held_bytes"][kind.name()], 0);
        }
        assert_eq!(metrics["metadata_held_bytes"]["total"], 0);
    }

    #[test]
    fn ratios_are_null_without_denominators() {
        let v = stats_json(&DbSummary::default(), &Metrics::default());
        assert!(v["index_bytes_per_data_block"].is_null());
        assert!(v["metrics"]["io_per_get"].is_null());
        assert!(v["metrics"]["physical_reads_per_get"].is_null());
        assert_eq!(v["levels"].as_array().map(Vec::len), Some(0));
        assert_eq!(v["entries"], 0);
    }

    #[test]
    fn text_lists_levels_totals_and_counters() {
        let text = stat_text(&sample(), &Metrics::default());
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("level"));
        assert!(lines[1].starts_with("L0 "), "{}", lines[1]);
        assert!(lines[7].starts_with("L6 "), "{}", lines[7]);
        assert!(lines[8].starts_with("total"), "{}", lines[8]);
        assert!(lines[8].contains(" 150 "), "{}", lines[8]);
        assert!(text.contains("index bytes per data block: 7.00"));
        // 100 bytes of padding over 3,400 data bytes.
        assert!(
            text.contains("data padding (page-aligned blocks): 100 B (2.94% of data bytes)"),
            "{text}"
        );
        assert!(text.contains("I/Os per get -"));
        for kind in BlockKind::ALL {
            assert!(
                lines.iter().any(|l| l.starts_with(kind.name())),
                "{}",
                kind.name()
            );
        }
    }
}
