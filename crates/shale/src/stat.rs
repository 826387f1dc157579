//! The database's shape and statistics: [`DbSummary`] (per-level totals
//! from the tables' properties, [`Db::summary`](crate::Db::summary)), and as
//! text for people [`stat_text`], which renders a [`DbSummary`] and [`Metrics`] (what [`Db::stat`](crate::Db::stat) and
//! `shale stats` print), with the number formats it uses.

use std::fmt::Write as _;

use crate::format::NUM_LEVELS;
use crate::metrics::{BlockKind, MetadataKind, Metrics};

/// Totals of one level, summed from its tables' properties, with its
/// compaction score.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LevelSummary {
    /// The level.
    pub level: usize,
    /// Number of tables.
    pub tables: u64,
    /// Bytes of table files.
    pub bytes: u64,
    /// Entries (values and tombstones).
    pub entries: u64,
    /// Data blocks.
    pub data_blocks: u64,
    /// Bytes of data blocks.
    pub data_bytes: u64,
    /// Zero bytes between data blocks that align them to pages (format 2).
    pub data_padding_bytes: u64,
    /// Bytes of index partitions.
    pub index_partition_bytes: u64,
    /// Bytes of top-level indexes.
    pub top_level_index_bytes: u64,
    /// Bytes of Bloom filters.
    pub filter_bytes: u64,
    /// Bytes of user keys written.
    pub raw_key_bytes: u64,
    /// Bytes of values written.
    pub raw_value_bytes: u64,
    /// Range deletions in the level's tables (one per fragment and sequence
    /// number, as stored).
    pub range_deletions: u64,
    /// Compaction score (>= 1: the level needs compacting; 0 for the last level
    /// and for sums over levels).
    pub score: f64,
    /// Target size of the level (`None` above the base level and for L0).
    pub target_bytes: Option<u64>,
}

/// Shape of the database: one [`LevelSummary`] per level (L0..L6).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DbSummary {
    /// Per-level totals, index = level.
    pub levels: Vec<LevelSummary>,
    /// The level L0 compacts into (levels between L0 and it are empty).
    pub base_level: usize,
    /// Filter bytes of every level except the last (L6): the filters a Get
    /// consults under the default policy, which the study's first inflection
    /// point caches.
    pub filter_bytes_except_last_level: u64,
}

impl DbSummary {
    /// Sum over all levels.
    pub fn total(&self) -> LevelSummary {
        let mut t = LevelSummary {
            level: usize::MAX,
            ..Default::default()
        };
        for l in &self.levels {
            t.tables += l.tables;
            t.bytes += l.bytes;
            t.entries += l.entries;
            t.data_blocks += l.data_blocks;
            t.data_bytes += l.data_bytes;
            t.data_padding_bytes += l.data_padding_bytes;
            t.index_partition_bytes += l.index_partition_bytes;
            t.top_level_index_bytes += l.top_level_index_bytes;
            t.filter_bytes += l.filter_bytes;
            t.raw_key_bytes += l.raw_key_bytes;
            t.raw_value_bytes += l.raw_value_bytes;
            t.range_deletions += l.range_deletions;
        }
        t
    }
}

/// `num / den`, or `None` when `den` is 0.
pub fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// A byte count for people: `512 B`, `1.50 KiB`, `22.00 GiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut x = n as f64 / 1024.0;
    let mut unit = "KiB";
    for u in UNITS.iter().skip(1) {
        if x < 1024.0 {
            break;
        }
        x /= 1024.0;
        unit = u;
    }
    format!("{x:.2} {unit}")
}

/// A hit rate as a percentage, `-` when undefined.
pub fn rate_text(rate: Option<f64>) -> String {
    rate.map_or("-".into(), |r| format!("{:.1}%", r * 100.0))
}

/// Index bytes (partitions and top-level indexes) per data block, `None` without
/// data blocks.
pub fn index_bytes_per_data_block(l: &LevelSummary) -> Option<f64> {
    ratio(
        l.index_partition_bytes + l.top_level_index_bytes,
        l.data_blocks,
    )
}

/// The LSM table: per level its size against its target, score and
/// the compactions into it (like Pebble's metrics table), then the totals.
fn lsm_text(s: &mut String, summary: &DbSummary, m: &Metrics) {
    let _ = writeln!(
        s,
        "{:<6} {:>11} {:>11} {:>7} {:>12} {:>11} {:>11} {:>7}",
        "level", "size", "target", "score", "compactions", "read", "written", "w-amp"
    );
    let user = m.bytes_written_user;
    for l in &summary.levels {
        let c = m.levels.get(l.level).copied().unwrap_or_default();
        let written = if l.level == 0 {
            m.flush_bytes
        } else {
            c.compaction_bytes_written
        };
        let marker = if l.level == summary.base_level {
            "*"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "{:<6} {:>11} {:>11} {:>7.2} {:>12} {:>11} {:>11} {:>7}",
            format!("L{}{marker}", l.level),
            human_bytes(l.bytes),
            l.target_bytes.map_or("-".into(), human_bytes),
            l.score,
            c.compactions,
            human_bytes(c.compaction_bytes_read),
            human_bytes(written),
            ratio(written, user).map_or("-".into(), |x| format!("{x:.2}")),
        );
    }
    let _ = writeln!(
        s,
        "(* base level; L0 \"written\" is flushes) write amplification {}, \
         pending compaction {}, L0 tables {}, {} flushes, {} compactions ({} trivial moves), \
         {} stalls ({:.3} s)",
        m.write_amplification()
            .map_or("-".into(), |x| format!("{x:.2}")),
        human_bytes(m.pending_compaction_bytes),
        m.l0_files,
        m.flushes,
        m.compactions(),
        m.trivial_moves,
        m.stall_count,
        m.stall_micros as f64 / 1e6,
    );
}

/// The text of [`Db::stat`](crate::Db::stat) (and of `shale stats`): a table
/// of the levels with totals, the LSM table, then the read and write
/// counters.
pub fn stat_text(summary: &DbSummary, m: &Metrics) -> String {
    let mut s = String::new();
    // Writing to a String cannot fail; results are ignored below.
    let _ = writeln!(
        s,
        "{:<6} {:>7} {:>11} {:>12} {:>9} {:>11} {:>11} {:>11} {:>11} {:>11}",
        "level",
        "tables",
        "size",
        "entries",
        "rangedels",
        "data blocks",
        "data",
        "index",
        "top index",
        "filter"
    );
    let row = |s: &mut String, name: &str, l: &LevelSummary| {
        let _ = writeln!(
            s,
            "{:<6} {:>7} {:>11} {:>12} {:>9} {:>11} {:>11} {:>11} {:>11} {:>11}",
            name,
            l.tables,
            human_bytes(l.bytes),
            l.entries,
            l.range_deletions,
            l.data_blocks,
            human_bytes(l.data_bytes),
            human_bytes(l.index_partition_bytes),
            human_bytes(l.top_level_index_bytes),
            human_bytes(l.filter_bytes),
        );
    };
    for l in &summary.levels {
        row(&mut s, &format!("L{}", l.level), l);
    }
    let total = summary.total();
    row(&mut s, "total", &total);
    let _ = writeln!(s);
    lsm_text(&mut s, summary, m);
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "filters except last level: {}",
        human_bytes(summary.filter_bytes_except_last_level)
    );
    let _ = writeln!(
        s,
        "index bytes per data block: {}",
        index_bytes_per_data_block(&total).map_or("-".into(), |x| format!("{x:.2}"))
    );
    let _ = writeln!(
        s,
        "data padding (page-aligned blocks): {} ({})",
        human_bytes(total.data_padding_bytes),
        match total.data_bytes {
            0 => "-".to_string(),
            d => format!(
                "{:.2}% of data bytes",
                total.data_padding_bytes as f64 * 100.0 / d as f64
            ),
        }
    );
    let _ = writeln!(
        s,
        "user data: {} of keys, {} of values",
        human_bytes(total.raw_key_bytes),
        human_bytes(total.raw_value_bytes)
    );
    let _ = writeln!(
        s,
        "range deletions: {} stored; compactions dropped {} of them and {} versions they covered ({}); \
         {} tables deleted whole without a read ({})",
        total.range_deletions,
        m.range_dels_dropped,
        m.range_del_dropped_entries,
        human_bytes(m.range_del_dropped_bytes),
        m.delete_only_tables,
        human_bytes(m.delete_only_bytes),
    );
    let _ = writeln!(s);
    let per_get = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.3}"));
    let _ = writeln!(
        s,
        "gets: {} (found {}, not found {}, memtable hits {}); I/Os per get {}, physical reads per get {}",
        m.gets,
        m.gets_found,
        m.gets_not_found(),
        m.gets_memtable_hits,
        per_get(m.cache_misses_per_get()),
        per_get(m.physical_reads_per_get()),
    );
    let hits: Vec<String> = (0..NUM_LEVELS)
        .map(|l| format!("L{l} {}", m.gets_table_hits[l]))
        .collect();
    let _ = writeln!(s, "gets answered by tables: {}", hits.join(", "));
    let misses: Vec<String> = (0..NUM_LEVELS)
        .map(|l| format!("L{l} {}", m.gets_table_misses[l]))
        .collect();
    let _ = writeln!(s, "tables searched without the key: {}", misses.join(", "));
    let _ = writeln!(
        s,
        "{:<11} {:>12} {:>12} {:>9} {:>15} {:>11}",
        "block kind", "cache hits", "cache misses", "hit rate", "physical reads", "bytes read"
    );
    for kind in BlockKind::ALL {
        let b = m.block(kind);
        let _ = writeln!(
            s,
            "{:<11} {:>12} {:>12} {:>9} {:>15} {:>11}",
            kind.name(),
            b.cache_hits,
            b.cache_misses,
            rate_text(b.hit_rate()),
            b.physical_reads,
            human_bytes(b.bytes_read),
        );
    }
    let _ = writeln!(
        s,
        "{:<11} {:>12} {:>12} {:>9} {:>15} {:>11}",
        "all",
        m.cache_hits(),
        m.cache_misses(),
        rate_text(m.hit_rate()),
        m.physical_reads(),
        human_bytes(m.bytes_read()),
    );
    let _ = writeln!(
        s,
        "table cache: {} hits, {} misses; filter probes: {} negative, {} positive",
        m.table_cache_hits, m.table_cache_misses, m.filter_negatives, m.filter_positives
    );
    let _ = writeln!(
        s,
        "written: {} user, {} WAL, {} tables; {} WAL syncs, {} flushes, {} compactions",
        human_bytes(m.bytes_written_user),
        human_bytes(m.bytes_written_wal),
        human_bytes(m.bytes_written_tables),
        m.wal_syncs,
        m.flushes,
        m.compactions()
    );
    let _ = writeln!(
        s,
        "block cache: {} used of {} ({} pinned metadata); {} table readers held",
        human_bytes(m.block_cache_usage),
        human_bytes(m.block_cache_capacity),
        human_bytes(m.block_cache_pinned),
        m.table_readers_held
    );
    let _ = writeln!(
        s,
        "table metadata held with readers (outside the block cache): {} top index, {} index partitions, {} top filter, {} filter partitions",
        human_bytes(m.metadata_held(MetadataKind::TopIndex)),
        human_bytes(m.metadata_held(MetadataKind::IndexPartitions)),
        human_bytes(m.metadata_held(MetadataKind::TopFilter)),
        human_bytes(m.metadata_held(MetadataKind::FilterPartitions)),
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_bytes_picks_units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.50 KiB");
        assert_eq!(human_bytes(32 << 20), "32.00 MiB");
        assert_eq!(human_bytes(22 << 30), "22.00 GiB");
        assert_eq!(human_bytes(u64::MAX), "16.00 EiB");
    }

    #[test]
    fn ratios_and_rates() {
        assert_eq!(ratio(7, 2), Some(3.5));
        assert_eq!(ratio(7, 0), None);
        assert_eq!(rate_text(Some(0.9876)), "98.8%");
        assert_eq!(rate_text(None), "-");
    }
}
