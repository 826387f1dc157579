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
//!
//! [`Policy::Lru`] replays through a plain LRU instead: one list of
//! blocks, charged in bytes against the capacity, evicting the least
//! recently used until a new block fits; no shards, no priorities, no
//! pinned bytes (pin and unpin records are ignored) and no rejection rule
//! but "larger than the whole capacity". It is the common yardstick for
//! traces of engines whose own cache shale does not model (a RocksDB
//! block-cache trace). Held blocks stay outside it as in the engine's
//! replay: their table holds them whatever the cache.

use std::collections::{HashMap, HashSet};

use super::format::{BlockTrace, TracePlacement, TraceRecord};
use crate::cache::{shards_for, LruCache, Priority};
use crate::metrics::BlockKind;

/// Which cache a trace is replayed through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Policy {
    /// The engine's own block cache: shards, priority pools, segmented
    /// LRU, pinned bytes (the module's first paragraphs).
    #[default]
    Shale,
    /// One plain LRU list charged in bytes (see the module docs).
    Lru,
}

impl Policy {
    /// "shale" or "lru".
    pub fn name(self) -> &'static str {
        match self {
            Policy::Shale => "shale",
            Policy::Lru => "lru",
        }
    }
}

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
    /// The cache's shards at that capacity (before sampling's scaling); 1
    /// for [`Policy::Lru`].
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
    /// The distinct bytes of every block looked up in the cache, data
    /// blocks too: the cache that would miss each block once only.
    pub all_bytes: f64,
}

/// Replays `trace` at each of `capacities` (bytes), `threads` at a time,
/// through the cache of `policy`. With `from_mark`, records before the
/// first mark of that label warm the cache but are not counted.
pub fn simulate(
    trace: &BlockTrace,
    capacities: &[u64],
    threads: usize,
    from_mark: Option<&str>,
    policy: Policy,
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
            .map(|&c| replay(trace, c, start, &charges, policy))
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
                    *slot = Some(replay(trace, capacities[first + i], start, charges, policy));
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
    let (mut top, mut index, mut all) = (0u64, 0u64, 0u64);
    for r in &trace.records {
        let TraceRecord::Access(a) = r else { continue };
        if a.placement == TracePlacement::Held || !seen.insert((a.file, a.offset)) {
            continue;
        }
        let charge = charges.get(&(a.file, a.offset)).copied().unwrap_or(0);
        all += charge;
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
        all_bytes: all as f64 / rate,
    }
}

/// The cache a replay runs through.
enum SimCache {
    Engine(LruCache<(u64, u64), ()>),
    Plain(PlainLru),
}

impl SimCache {
    /// Looks `key` up (a hit moves it to the front).
    fn get(&mut self, key: &(u64, u64)) -> bool {
        match self {
            SimCache::Engine(c) => c.get(key).is_some(),
            SimCache::Plain(c) => c.touch(key),
        }
    }

    fn insert(&mut self, key: (u64, u64), charge: u64, priority: Priority) {
        match self {
            SimCache::Engine(c) => {
                c.insert(key, (), charge, priority);
            }
            SimCache::Plain(c) => c.insert(key, charge),
        }
    }

    fn pin(&mut self, bytes: u64) {
        if let SimCache::Engine(c) = self {
            c.reserve_pinned(bytes);
        }
    }

    fn unpin(&mut self, bytes: u64) {
        if let SimCache::Engine(c) = self {
            c.release_pinned(bytes);
        }
    }
}

/// No entry: the end of the list.
const NIL: usize = usize::MAX;

/// One LRU list of blocks charged in bytes ([`Policy::Lru`]), on a slab
/// of nodes linked by index.
struct PlainLru {
    capacity: u64,
    usage: u64,
    index: HashMap<(u64, u64), usize>,
    nodes: Vec<LruNode>,
    free: Vec<usize>,
    /// Most recently used.
    head: usize,
    /// Least recently used: evicted first.
    tail: usize,
}

struct LruNode {
    key: (u64, u64),
    charge: u64,
    prev: usize,
    next: usize,
}

impl PlainLru {
    fn new(capacity: u64) -> PlainLru {
        PlainLru {
            capacity,
            usage: 0,
            index: HashMap::new(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
        }
    }

    fn unlink(&mut self, i: usize) {
        let (prev, next) = (self.nodes[i].prev, self.nodes[i].next);
        match prev {
            NIL => self.head = next,
            p => self.nodes[p].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.nodes[n].prev = prev,
        }
    }

    fn push_front(&mut self, i: usize) {
        self.nodes[i].prev = NIL;
        self.nodes[i].next = self.head;
        match self.head {
            NIL => self.tail = i,
            h => self.nodes[h].prev = i,
        }
        self.head = i;
    }

    /// True if `key` is cached, and makes it the most recently used.
    fn touch(&mut self, key: &(u64, u64)) -> bool {
        let Some(&i) = self.index.get(key) else {
            return false;
        };
        if self.head != i {
            self.unlink(i);
            self.push_front(i);
        }
        true
    }

    /// Caches `key` (absent) at the front, evicting from the back until it
    /// fits; a block larger than the capacity is not cached.
    fn insert(&mut self, key: (u64, u64), charge: u64) {
        if charge > self.capacity {
            return;
        }
        while self.usage + charge > self.capacity && self.tail != NIL {
            let t = self.tail;
            self.unlink(t);
            self.usage -= self.nodes[t].charge;
            self.index.remove(&self.nodes[t].key);
            self.free.push(t);
        }
        let node = LruNode {
            key,
            charge,
            prev: NIL,
            next: NIL,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.nodes[i] = node;
                i
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        };
        self.push_front(i);
        self.usage += charge;
        self.index.insert(key, i);
    }
}

fn replay(
    trace: &BlockTrace,
    capacity: u64,
    start: usize,
    charges: &HashMap<(u64, u64), u64>,
    policy: Policy,
) -> SimulatedSize {
    let h = &trace.header;
    let rate = h.sample_rate();
    let scale = |bytes: u64| (bytes as f64 * rate).round() as u64;
    let (shards, mut cache) = match policy {
        Policy::Shale => {
            let shards = shards_for(capacity, h.cache_shards as usize);
            // A sampled trace sees about `rate` of every shard's blocks:
            // fewer shards of the same budget stand for them.
            let sim_shards = ((shards as f64 * rate).floor() as usize).max(1);
            let cache = SimCache::Engine(LruCache::new(scale(capacity), sim_shards));
            (shards, cache)
        }
        Policy::Lru => (1, SimCache::Plain(PlainLru::new(scale(capacity)))),
    };
    cache.pin(scale(h.pinned_at_start));
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
            TraceRecord::Pin(bytes) => cache.pin(scale(*bytes)),
            TraceRecord::Unpin(bytes) => cache.unpin(scale(*bytes)),
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
                if cache.get(&key) {
                    if counted {
                        k.hits += 1.0;
                    }
                } else {
                    if counted {
                        k.misses += 1.0;
                    }
                    if let Some(&charge) = charges.get(&key) {
                        cache.insert(key, charge, priority);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::format::{BlockAccess, TraceDbShape, TraceHeader, SAMPLE_ALL};

    fn header() -> TraceHeader {
        TraceHeader {
            created_unix_secs: 0,
            table_format_version: 0,
            sample_threshold: SAMPLE_ALL,
            cache_capacity: 0,
            cache_shards: 16,
            pinned_at_start: 0,
            db: TraceDbShape::default(),
        }
    }

    fn data(offset: u64, charge: u64) -> TraceRecord {
        TraceRecord::Access(BlockAccess {
            lookup: offset,
            file: 1,
            offset,
            kind: BlockKind::Data,
            placement: TracePlacement::Low,
            hit: false,
            charge,
        })
    }

    #[test]
    fn plain_lru_evicts_the_least_recently_used() {
        // A B A C B at room for two: A is touched after B, so C evicts B,
        // and B's return evicts A.
        let records = vec![
            data(0, 100),
            data(1, 100),
            data(0, 100),
            data(2, 100),
            data(1, 100),
            data(0, 100),
            TraceRecord::Get { found: true },
        ];
        let t = BlockTrace {
            header: header(),
            records,
        };
        let s = &simulate(&t, &[200], 1, None, Policy::Lru).expect("replay")[0];
        let d = s.kind(BlockKind::Data);
        assert_eq!((d.hits, d.misses), (1.0, 5.0));
        assert_eq!(s.shards, 1);
        assert_eq!(s.gets, 1);
        // Room for three: only the first touch of each misses.
        let s = &simulate(&t, &[300], 1, None, Policy::Lru).expect("replay")[0];
        let d = s.kind(BlockKind::Data);
        assert_eq!((d.hits, d.misses), (3.0, 3.0));
    }

    #[test]
    fn plain_lru_ignores_pins_and_skips_blocks_larger_than_it() {
        let records = vec![
            TraceRecord::Pin(1 << 30),
            data(0, 100),
            data(0, 100),
            data(1, 500),
            data(1, 500),
            data(0, 100),
        ];
        let t = BlockTrace {
            header: header(),
            records,
        };
        let s = &simulate(&t, &[400], 1, None, Policy::Lru).expect("replay")[0];
        let d = s.kind(BlockKind::Data);
        // The pin takes no room; the 500-byte block is never cached and
        // evicts nothing.
        assert_eq!((d.hits, d.misses), (2.0, 3.0));
        // The engine's cache counts the pin: nothing fits beside it.
        let s = &simulate(&t, &[400], 1, None, Policy::Shale).expect("replay")[0];
        assert_eq!(s.kind(BlockKind::Data).hits, 0.0);
    }
}
