//! Replaying a trace through the block cache at other capacities.
//!
//! Which blocks a Get reads does not depend on what the cache holds: the
//! filter, the top-level index, one index partition and the data block
//! are found from the key and the tables alone. So a trace recorded at
//! any cache size lists the accesses of every size, and replaying it
//! through a cache of capacity C gives the hits and misses a run at C
//! would have had. The replay uses the engine's own cache
//! ([`LruCache`], with unit values in place of blocks): the same shard
//! count for C, the same per-shard budgets after pinned bytes, priority
//! pools, segmented LRU and rejection of entries larger than a shard's
//! budget. The policy is not a stack algorithm (the pools, the budgets
//! split over a size-dependent number of shards and the rejection rule
//! make a hit at C no guarantee of a hit at 2C), so each size is its own
//! replay; sizes run in parallel.
//!
//! The replay is exact for one reader thread reading one key at a time:
//! the cache sees the same calls in the same order. It differs from a
//! measured run where the engine's order depends on the cache: with
//! several threads, their interleaving; with batched reads, a deferred
//! read's block is inserted when the batch reads it (the replay inserts
//! it at the lookup) and a resumed Get looks its blocks up again
//! (uncounted, and not traced). Compactions' uncounted lookups are not
//! traced either.
//!
//! A sampled trace (see [`super::format::sampled`]) is replayed through a
//! cache scaled by the sampling rate (capacity and pinned bytes), with
//! the shard count scaled too, so that each shard keeps the budget a
//! shard of the full cache has; its counts are divided by the rate.

use std::collections::{HashMap, HashSet};

use super::format::{BlockTrace, TracePlacement, TraceRecord};
use crate::cache::{shards_for, LruCache, Priority};
use crate::metrics::BlockKind;

/// The four block kinds of the read path, in reporting order.
pub const READ_KINDS: [BlockKind; 4] = [
    BlockKind::Filter,
    BlockKind::TopIndex,
    BlockKind::IndexPartition,
    BlockKind::Data,
];

fn kind_index(kind: BlockKind) -> usize {
    match kind {
        BlockKind::Filter => 0,
        BlockKind::TopIndex => 1,
        BlockKind::IndexPartition => 2,
        _ => 3,
    }
}

/// Counts of one block kind in a replay.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KindCounts {
    /// Cache lookups that hit.
    pub hits: f64,
    /// Cache lookups that missed (each one read of the block).
    pub misses: f64,
    /// First uses of held blocks (each one read, no cache lookup).
    pub held_reads: f64,
}

impl KindCounts {
    /// Hits over lookups (1 without lookups).
    pub fn hit_rate(&self) -> f64 {
        let lookups = self.hits + self.misses;
        if lookups == 0.0 {
            1.0
        } else {
            self.hits / lookups
        }
    }
}

/// What one cache size gives on a trace. Counts of a sampled trace are
/// scaled to the whole (divided by the rate), hence `f64`.
#[derive(Clone, Debug, PartialEq)]
pub struct SimulatedSize {
    /// The simulated capacity in bytes.
    pub capacity: u64,
    /// The cache's shards at that capacity (before sampling's scaling).
    pub shards: usize,
    /// Gets counted.
    pub gets: u64,
    /// Of which found a value.
    pub found: u64,
    /// Per kind, in [`READ_KINDS`] order.
    pub kinds: [KindCounts; 4],
}

impl SimulatedSize {
    /// Cache misses per Get (the study's I/Os per Get).
    pub fn misses_per_get(&self) -> f64 {
        self.kinds.iter().map(|k| k.misses).sum::<f64>() / self.gets.max(1) as f64
    }

    /// Block reads per Get: misses plus first reads of held blocks.
    pub fn reads_per_get(&self) -> f64 {
        self.kinds
            .iter()
            .map(|k| k.misses + k.held_reads)
            .sum::<f64>()
            / self.gets.max(1) as f64
    }

    /// Misses of `kind` per Get.
    pub fn kind_misses_per_get(&self, kind: BlockKind) -> f64 {
        self.kinds[kind_index(kind)].misses / self.gets.max(1) as f64
    }

    /// The counts of `kind`.
    pub fn kind(&self, kind: BlockKind) -> KindCounts {
        self.kinds[kind_index(kind)]
    }

    /// Hits over lookups of all kinds.
    pub fn hit_rate(&self) -> f64 {
        let hits: f64 = self.kinds.iter().map(|k| k.hits).sum();
        let lookups: f64 = self.kinds.iter().map(|k| k.hits + k.misses).sum();
        if lookups == 0.0 {
            1.0
        } else {
            hits / lookups
        }
    }
}

/// Why a trace cannot be replayed as asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimulateError {
    /// No cache size was given.
    NoSizes,
    /// The trace has no mark of this label to count from.
    NoSuchMark(String),
}

impl std::fmt::Display for SimulateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimulateError::NoSizes => write!(f, "no cache size to simulate"),
            SimulateError::NoSuchMark(m) => write!(f, "the trace has no mark '{m}' to count from"),
        }
    }
}

impl std::error::Error for SimulateError {}

/// The metadata a trace's Gets touched: the bytes a cache must hold for
/// them to find every filter and top-level index (`ip1_bytes`), and every
/// index block too (`ip2_bytes`), outside held blocks; scaled by the
/// sampling rate. For uniform keys over a whole database they approach
/// the database's inflection points; skewed keys touch less.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TouchedMetadata {
    /// Distinct filter and top-level index bytes looked up in the cache.
    pub ip1_bytes: f64,
    /// Those and the distinct index partition bytes.
    pub ip2_bytes: f64,
}

/// Replays `trace` at each of `capacities` (bytes), `threads` at a time.
/// With `from_mark`, records before the first mark of that label warm the
/// cache but are not counted.
pub fn simulate(
    trace: &BlockTrace,
    capacities: &[u64],
    threads: usize,
    from_mark: Option<&str>,
) -> Result<Vec<SimulatedSize>, SimulateError> {
    if capacities.is_empty() {
        return Err(SimulateError::NoSizes);
    }
    let start = match from_mark {
        None => 0,
        Some(label) => trace
            .records
            .iter()
            .position(|r| matches!(r, TraceRecord::Mark(m) if m == label))
            .ok_or_else(|| SimulateError::NoSuchMark(label.to_string()))?,
    };
    let charges = charges(trace);
    let threads = threads.clamp(1, capacities.len());
    if threads == 1 {
        return Ok(capacities
            .iter()
            .map(|&c| replay(trace, c, start, &charges))
            .collect());
    }
    let mut out: Vec<Option<SimulatedSize>> = vec![None; capacities.len()];
    std::thread::scope(|s| {
        for (t, slots) in out
            .chunks_mut(capacities.len().div_ceil(threads))
            .enumerate()
        {
            let first = t * capacities.len().div_ceil(threads);
            let charges = &charges;
            s.spawn(move || {
                for (i, slot) in slots.iter_mut().enumerate() {
                    *slot = Some(replay(trace, capacities[first + i], start, charges));
                }
            });
        }
    });
    Ok(out.into_iter().flatten().collect())
}

/// Every block's charge, from its accesses or its charge record.
fn charges(trace: &BlockTrace) -> HashMap<(u64, u64), u64> {
    let mut charges = HashMap::new();
    for r in &trace.records {
        match r {
            TraceRecord::Access(a) if a.charge > 0 => {
                charges.entry((a.file, a.offset)).or_insert(a.charge);
            }
            TraceRecord::Charge {
                file,
                offset,
                charge,
            } => {
                charges.entry((*file, *offset)).or_insert(*charge);
            }
            _ => {}
        }
    }
    charges
}

/// The metadata `trace`'s lookups touched (see [`TouchedMetadata`]).
pub fn touched_metadata(trace: &BlockTrace) -> TouchedMetadata {
    let charges = charges(trace);
    let mut seen = HashSet::new();
    let (mut top, mut index) = (0u64, 0u64);
    for r in &trace.records {
        let TraceRecord::Access(a) = r else { continue };
        if a.placement == TracePlacement::Held || !seen.insert((a.file, a.offset)) {
            continue;
        }
        let charge = charges.get(&(a.file, a.offset)).copied().unwrap_or(0);
        match a.kind {
            BlockKind::Filter | BlockKind::TopIndex => top += charge,
            BlockKind::IndexPartition => index += charge,
            _ => {}
        }
    }
    let rate = trace.header.sample_rate();
    TouchedMetadata {
        ip1_bytes: top as f64 / rate,
        ip2_bytes: (top + index) as f64 / rate,
    }
}

fn replay(
    trace: &BlockTrace,
    capacity: u64,
    start: usize,
    charges: &HashMap<(u64, u64), u64>,
) -> SimulatedSize {
    let h = &trace.header;
    let rate = h.sample_rate();
    let scale = |bytes: u64| (bytes as f64 * rate).round() as u64;
    let shards = shards_for(capacity, h.cache_shards as usize);
    // A sampled trace sees about `rate` of every shard's blocks: fewer
    // shards of the same budget stand for them.
    let sim_shards = ((shards as f64 * rate).floor() as usize).max(1);
    let cache: LruCache<(u64, u64), ()> = LruCache::new(scale(capacity), sim_shards);
    cache.reserve_pinned(scale(h.pinned_at_start));
    let mut kinds = [KindCounts::default(); 4];
    let (mut gets, mut found) = (0u64, 0u64);
    for (i, r) in trace.records.iter().enumerate() {
        let counted = i >= start;
        match r {
            TraceRecord::Get { found: f } => {
                if counted {
                    gets += 1;
                    found += u64::from(*f);
                }
            }
            TraceRecord::Pin(bytes) => cache.reserve_pinned(scale(*bytes)),
            TraceRecord::Unpin(bytes) => cache.release_pinned(scale(*bytes)),
            TraceRecord::Access(a) => {
                let k = &mut kinds[kind_index(a.kind)];
                let priority = match a.placement {
                    TracePlacement::Held => {
                        if counted && !a.hit {
                            k.held_reads += 1.0;
                        }
                        continue;
                    }
                    TracePlacement::Low => Priority::Low,
                    TracePlacement::Medium => Priority::Medium,
                    TracePlacement::High => Priority::High,
                };
                let key = (a.file, a.offset);
                if cache.get(&key).is_some() {
                    if counted {
                        k.hits += 1.0;
                    }
                } else {
                    if counted {
                        k.misses += 1.0;
                    }
                    if let Some(&charge) = charges.get(&key) {
                        cache.insert(key, (), charge, priority);
                    }
                }
            }
            TraceRecord::Mark(_) | TraceRecord::Charge { .. } => {}
        }
    }
    for k in &mut kinds {
        k.hits /= rate;
        k.misses /= rate;
        k.held_reads /= rate;
    }
    SimulatedSize {
        capacity,
        shards,
        gets,
        found,
        kinds,
    }
}
