//! The JSON documents of a database's shape and counters: `shale stats
//! --json`, and the `stats` of `bench db`'s results.

use serde_json::{json, Map, Value};
use shale::stat::index_bytes_per_data_block;
use shale::{BlockKind, DbSummary, LevelSummary, MetadataKind, Metrics};

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
    let mut doc = level_fields(&total);
    let lsm = json!({
        "base_level": summary.base_level,
        "write_amplification": metrics.write_amplification(),
        "pending_compaction_bytes": metrics.pending_compaction_bytes,
        "l0_files": metrics.l0_files,
        "compactions": metrics.compactions(),
        "flushes": metrics.flushes,
        "stall_count": metrics.stall_count,
        "stall_micros": metrics.stall_micros,
    });
    if let Value::Object(m) = lsm {
        doc.extend(m);
    }
    doc.insert(
        "filter_bytes_except_last_level".into(),
        summary.filter_bytes_except_last_level.into(),
    );
    doc.insert(
        "index_bytes_per_data_block".into(),
        index_bytes_per_data_block(&total).into(),
    );
    let levels: Vec<Value> = summary
        .levels
        .iter()
        .map(|l| {
            let mut obj = Map::new();
            obj.insert("level".into(), l.level.into());
            obj.extend(level_fields(l));
            let c = metrics.levels.get(l.level).copied().unwrap_or_default();
            obj.insert("score".into(), l.score.into());
            obj.insert("target_bytes".into(), l.target_bytes.into());
            obj.insert("compactions".into(), c.compactions.into());
            obj.insert(
                "compaction_bytes_read".into(),
                c.compaction_bytes_read.into(),
            );
            obj.insert(
                "compaction_bytes_written".into(),
                c.compaction_bytes_written.into(),
            );
            Value::Object(obj)
        })
        .collect();
    doc.insert("levels".into(), levels.into());
    doc.insert("metrics".into(), metrics_json(metrics));
    Value::Object(doc)
}

fn level_fields(l: &LevelSummary) -> Map<String, Value> {
    let v = json!({
        "tables": l.tables,
        "bytes": l.bytes,
        "entries": l.entries,
        "data_blocks": l.data_blocks,
        "data_bytes": l.data_bytes,
        "data_padding_bytes": l.data_padding_bytes,
        "index_partition_bytes": l.index_partition_bytes,
        "top_level_index_bytes": l.top_level_index_bytes,
        "filter_bytes": l.filter_bytes,
        "raw_key_bytes": l.raw_key_bytes,
        "raw_value_bytes": l.raw_value_bytes,
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

// Bytes of table metadata held with open readers outside the block cache,
// per kind and in total.
fn metadata_held_json(m: &Metrics) -> Value {
    let mut o = Map::new();
    for kind in MetadataKind::ALL {
        o.insert(kind.name().into(), json!(m.metadata_held(kind)));
    }
    o.insert("total".into(), json!(m.metadata_held_total()));
    Value::Object(o)
}

/// Every counter of [`Metrics`] as JSON: the Get counters, one object per block
/// kind (named by [`BlockKind::name`]) with its cache hits, misses, physical
/// reads, bytes read and hit rate, the same four summed over all kinds, the
/// table cache, filter, write and block cache counters, and `io_per_get`
/// (block-cache misses / Gets, the study's metric) and `physical_reads_per_get`,
/// both `null` without Gets.
pub fn metrics_json(m: &Metrics) -> Value {
    let mut obj = match json!({
        "gets": m.gets,
        "gets_found": m.gets_found,
        "gets_not_found": m.gets_not_found(),
        "gets_memtable_hits": m.gets_memtable_hits,
        "gets_table_hits": m.gets_table_hits,
        "gets_table_misses": m.gets_table_misses,
        "io_per_get": m.cache_misses_per_get(),
        "physical_reads_per_get": m.physical_reads_per_get(),
        "cache_hits": m.cache_hits(),
        "cache_misses": m.cache_misses(),
        "physical_reads": m.physical_reads(),
        "bytes_read": m.bytes_read(),
        "hit_rate": m.hit_rate(),
        "table_cache_hits": m.table_cache_hits,
        "table_cache_misses": m.table_cache_misses,
        "filter_negatives": m.filter_negatives,
        "filter_positives": m.filter_positives,
        "bytes_written_user": m.bytes_written_user,
        "bytes_written_wal": m.bytes_written_wal,
        "bytes_written_tables": m.bytes_written_tables,
        "wal_syncs": m.wal_syncs,
        "flushes": m.flushes,
        "flush_bytes": m.flush_bytes,
        "compactions": m.compactions(),
        "trivial_moves": m.trivial_moves,
        "stall_count": m.stall_count,
        "stall_micros": m.stall_micros,
        "background_errors": m.background_errors,
        "pending_compaction_bytes": m.pending_compaction_bytes,
        "l0_files": m.l0_files,
        "write_amplification": m.write_amplification(),
        "block_cache_usage": m.block_cache_usage,
        "block_cache_capacity": m.block_cache_capacity,
        "block_cache_pinned": m.block_cache_pinned,
        "table_readers_held": m.table_readers_held,
        "metadata_held_bytes": metadata_held_json(m),
    }) {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    for kind in BlockKind::ALL {
        let b = m.block(kind);
        obj.insert(
            kind.name().into(),
            json!({
                "cache_hits": b.cache_hits,
                "cache_misses": b.cache_misses,
                "physical_reads": b.physical_reads,
                "bytes_read": b.bytes_read,
                "hit_rate": b.hit_rate(),
            }),
        );
    }
    Value::Object(obj)
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
