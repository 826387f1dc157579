//! The compaction picker: level metadata in, a decision out. No I/O, no locks.
//!
//! The metadata comes in two parts: a version's levels ([`Levels`], read as
//! they are through [`PickTable`], nothing copied) and the numbers of the
//! tables running compactions use (which change without a new version).
//!
//! # Level sizing
//!
//! Levels are sized from the bottom up, as RocksDB's dynamic level bytes and
//! Pebble do. The last level (L6) is expected to hold all but a
//! `1/multiplier` share of the data; each level above it a `multiplier`-th of the
//! one below. Starting from the first non-empty level below L0, the *base
//! level* (the one L0 compacts into) moves up one level for every factor of
//! `multiplier` by which that level's expected size exceeds `base_level_bytes`,
//! where the expected size is taken from the smaller of the database's size
//! and L6's own (as RocksDB sizes from the last level): bytes in L0 and in
//! levels over their targets are a passing compaction debt, and the base
//! level never moves back down.
//! The base level's target is `base_level_bytes` (as in Pebble and RocksDB); the
//! targets of the levels below grow by a constant (smoothed) factor that reaches
//! the last level's expected size exactly. Levels above the base level are meant
//! to be empty. The effect: most bytes live in L6, and the base level moves up as
//! the database grows.
//!
//! One deliberate difference: when the base level is L5, directly above the
//! last level (a database below ~700 MiB), its target is its *expected* size,
//! a tenth of L6's, kept between `base_level_bytes / multiplier` and
//! `base_level_bytes`. With a 64 MiB target a few-hundred-MiB database could
//! keep a third of its bytes above L6; this keeps ~90% in L6 (smaller filters
//! and indexes for a Get to find cached) at the price of rewriting L6 more
//! often while the database is small. With more levels the full target keeps
//! write amplification lower (measured in `docs/benchmarks.md`).
//!
//! # Scores and choices
//!
//! * L0: tables not being compacted / `l0_compaction_trigger` (as LevelDB and
//!   Pebble count it; L0's bytes are not weighed against the base level's
//!   target, as RocksDB does with dynamic level sizes). Each L0 -> base
//!   compaction rewrites the whole base level, so the more L0 holds when it
//!   goes down, the fewer times the base level is rewritten per byte: with
//!   hash keys every flush spans the whole key space, and eight 64 MiB
//!   memtables' flushes (about 340 MB) merge into a 64 MiB base level at a
//!   cost of about 0.2 bytes of the base per byte of L0. Counting bytes made
//!   L0 go down after two flushes and cost 0.3 (measured in
//!   `docs/benchmarks.md`). While [`PickerOptions::drain_l0`] is set, any
//!   table in L0 makes it due.
//! * L1..L5: bytes not being compacted / the level's target; a non-empty level
//!   above the base level scores at least 1 so that it drains.
//! * L6: never compacted (0).
//!
//! A level's *priority* is its score divided by the score of the level it
//! compacts into (no less than 0.01; L6's score here is its size against its
//! expected size), once its score reaches 1 (Pebble's score ratio). A level
//! over its target waits while the level below is fuller still: it keeps
//! gathering bytes, so that when it does go down, each byte of the level below
//! that the compaction rewrites merges more new bytes. Levels above the base
//! level keep their score. Nothing piles up: when no priority reaches 1, every
//! level at or over its target is less full than the level under it, and L6 is
//! at most `multiplier / (multiplier - 1)` full (its target is the expected
//! size), so no level, L0 included, is more than that factor over target.
//!
//! The level with the highest priority >= 1 whose compaction does not conflict
//! with one already running is picked:
//!
//! * L0 -> base: every L0 table (L0 tables overlap, so taking them all keeps
//!   newer versions above older ones) plus the overlapping base tables. Only one
//!   L0 compaction runs at a time.
//! * Ln -> Ln+1: the table of Ln with the smallest ratio of overlapping bytes in
//!   Ln+1 to its own size (RocksDB's `kMinOverlappingRatio`, which keeps write
//!   amplification low), plus those overlapping tables. The input then grows by
//!   the neighbouring tables of Ln that fall inside the key range already being
//!   rewritten in Ln+1, as long as no other table of Ln+1 joins and the whole
//!   stays under 25 output table sizes (LevelDB's and Pebble's expansion): they
//!   go down without rewriting a byte more of Ln+1.
//! * A single input table with nothing to merge with in the output level is
//!   *moved* (a manifest edit, no I/O) when both levels agree on having a Bloom
//!   filter; otherwise it is rewritten so that it carries its new level's filter
//!   policy.
//!
//! # Output tables
//!
//! A compaction writes tables of [`output_file_size`]: the target doubles per
//! level counted from the base level (which gets twice `target_file_size_base`),
//! as in Pebble, so that a small database has small tables that compactions can
//! pick among finely; its outputs are cut at the first keys of the tables below
//! them (see the compaction job).

use std::collections::HashSet;

use crate::format::NUM_LEVELS;

/// The last level.
pub(crate) const LAST_LEVEL: usize = NUM_LEVELS - 1;

/// What the picker reads of a table: a version's tables
/// ([`FileMeta`](crate::version::FileMeta)), or the plain tables of its tests.
pub(crate) trait PickTable {
    fn number(&self) -> u64;
    fn size(&self) -> u64;
    /// Smallest and largest user keys.
    fn smallest(&self) -> &[u8];
    fn largest(&self) -> &[u8];
    fn overlaps(&self, lo: &[u8], hi: &[u8]) -> bool {
        self.smallest() <= hi && lo <= self.largest()
    }
}

impl PickTable for std::sync::Arc<crate::version::FileMeta> {
    fn number(&self) -> u64 {
        self.meta.number
    }
    fn size(&self) -> u64 {
        self.meta.size
    }
    fn smallest(&self) -> &[u8] {
        self.meta.smallest.user_key()
    }
    fn largest(&self) -> &[u8] {
        self.meta.largest.user_key()
    }
}

/// The shape of the tree: tables per level (L0 newest first, deeper levels in
/// key order).
pub(crate) type Levels<T> = [Vec<T>; NUM_LEVELS];

/// Numbers of the tables that are inputs of running compactions: the picker
/// neither scores nor picks them.
pub(crate) type Compacting = HashSet<u64>;

/// The options the picker reads.
#[derive(Clone, Debug)]
pub(crate) struct PickerOptions {
    pub l0_compaction_trigger: usize,
    pub base_level_bytes: u64,
    pub level_size_multiplier: f64,
    /// Per level: tables carry a Bloom filter.
    pub filter_at: [bool; NUM_LEVELS],
    /// Target size of L0 tables; see [`output_file_size`].
    pub target_file_size_base: u64,
    /// Compact L0 even below its trigger (a database settling after a bulk
    /// load: Gets then probe no L0 table).
    pub drain_l0: bool,
}

/// Bytes an expanded compaction may reach, in output table sizes (Pebble's
/// limit).
const EXPANSION_LIMIT_TABLES: u64 = 25;

/// The least score a level's priority is divided by (see the module doc).
const MIN_DIVISOR: f64 = 0.01;

/// Target size of the tables a compaction writes into `level` while L0
/// compacts into `base_level`: `target_file_size_base` doubled once per level
/// from L0 to the base level's distance, `base << (1 + level - base_level)`
/// (at most `base << 6`).
pub(crate) fn output_file_size(target_file_size_base: u64, level: usize, base_level: usize) -> u64 {
    let steps = (1 + level).saturating_sub(base_level).min(LAST_LEVEL) as u32;
    target_file_size_base.saturating_mul(1 << steps)
}

/// Target sizes of the levels.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LevelTargets {
    /// The level L0 compacts into.
    pub base_level: usize,
    /// Target bytes per level (`u64::MAX` above the base level and for L0).
    pub max_bytes: [u64; NUM_LEVELS],
}

/// Bytes per level.
pub(crate) fn level_bytes<T: PickTable>(levels: &Levels<T>) -> [u64; NUM_LEVELS] {
    let mut out = [0u64; NUM_LEVELS];
    for (l, files) in levels.iter().enumerate() {
        out[l] = files.iter().map(|f| f.size()).sum();
    }
    out
}

/// Computes the base level and the level targets (see the module doc).
pub(crate) fn level_targets(sizes: &[u64; NUM_LEVELS], opts: &PickerOptions) -> LevelTargets {
    let mut max_bytes = [u64::MAX; NUM_LEVELS];
    let mult = opts.level_size_multiplier.max(1.01);
    let base_bytes = opts.base_level_bytes.max(1) as f64;
    let Some(first_nonempty) = (1..NUM_LEVELS).find(|&l| sizes[l] > 0) else {
        return LevelTargets {
            base_level: LAST_LEVEL,
            max_bytes,
        };
    };
    let total: u64 = sizes.iter().sum();
    let last_expected = total as f64 - total as f64 / mult;
    // Expected size of the first non-empty level if the tree had its ideal shape.
    let mut size = last_expected / mult.powi((LAST_LEVEL - first_nonempty) as i32);
    // The base level moves up only once the last level itself is as large as
    // the ideal shape says: bytes waiting in L0 and above their targets are
    // a passing debt, and a base level moved up for them would never come
    // back down.
    let settled = match sizes[LAST_LEVEL] {
        0 => last_expected,
        last => last_expected.min(last as f64),
    };
    let mut settled_size = settled / mult.powi((LAST_LEVEL - first_nonempty) as i32);
    let mut base_level = first_nonempty;
    while base_level > 1 && settled_size > base_bytes {
        base_level -= 1;
        size /= mult;
        settled_size /= mult;
    }
    let base_target = if base_level + 1 >= LAST_LEVEL {
        size.clamp(base_bytes / mult, base_bytes)
    } else {
        base_bytes
    };
    let smoothed = if base_level < LAST_LEVEL {
        (last_expected / base_target)
            .max(1.0)
            .powf(1.0 / (LAST_LEVEL - base_level) as f64)
    } else {
        1.0
    };
    let mut target = base_target;
    for (level, slot) in max_bytes.iter_mut().enumerate().skip(base_level) {
        if level > base_level {
            target *= smoothed;
        }
        *slot = target.round().min(u64::MAX as f64) as u64;
    }
    LevelTargets {
        base_level,
        max_bytes,
    }
}

/// The shape the picker aims for in a database of a given size: what
/// [`level_plan`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelPlan {
    /// The level L0 compacts into.
    pub base_level: usize,
    /// Target bytes of each level, `None` for L0 and the levels above the
    /// base level. The last level's is its expected size: all but a
    /// `1/level_size_multiplier` share of the database.
    pub target_bytes: [Option<u64>; NUM_LEVELS],
    /// Target size of the tables compactions write into each level (see
    /// [`Options::target_file_size_base`](crate::Options::target_file_size_base)),
    /// `None` where `target_bytes` is.
    pub table_bytes: [Option<u64>; NUM_LEVELS],
}

/// The base level and level targets the compaction picker computes for a
/// database of `total_bytes` of tables in its settled shape (L0 empty, no
/// table above the base level), with the options of that name in
/// [`Options`](crate::Options). Pure: the same computation the picker runs on
/// a live version, for tools that model other sizes (`shale advise`).
pub fn level_plan(
    total_bytes: u64,
    base_level_bytes: u64,
    level_size_multiplier: f64,
    target_file_size_base: u64,
) -> LevelPlan {
    let mut sizes = [0u64; NUM_LEVELS];
    sizes[LAST_LEVEL] = total_bytes;
    let opts = PickerOptions {
        l0_compaction_trigger: 1,
        base_level_bytes,
        level_size_multiplier,
        filter_at: [false; NUM_LEVELS],
        target_file_size_base,
        drain_l0: false,
    };
    let targets = level_targets(&sizes, &opts);
    let mut target_bytes = [None; NUM_LEVELS];
    let mut table_bytes = [None; NUM_LEVELS];
    if total_bytes > 0 {
        for level in targets.base_level.max(1)..NUM_LEVELS {
            target_bytes[level] = Some(targets.max_bytes[level]);
            table_bytes[level] = Some(output_file_size(
                target_file_size_base,
                level,
                targets.base_level,
            ));
        }
    }
    LevelPlan {
        base_level: targets.base_level,
        target_bytes,
        table_bytes,
    }
}

/// Compaction score of every level (see the module doc).
pub(crate) fn level_scores<T: PickTable>(
    levels: &Levels<T>,
    compacting: &Compacting,
    targets: &LevelTargets,
    opts: &PickerOptions,
) -> [f64; NUM_LEVELS] {
    let mut scores = [0f64; NUM_LEVELS];
    let idle = |files: &Vec<T>| -> (usize, u64) {
        let mut n = 0;
        let mut bytes = 0;
        for f in files.iter().filter(|f| !compacting.contains(&f.number())) {
            n += 1;
            bytes += f.size();
        }
        (n, bytes)
    };
    let (l0_files, _) = idle(&levels[0]);
    scores[0] = l0_files as f64 / opts.l0_compaction_trigger.max(1) as f64;
    for level in 1..LAST_LEVEL {
        let (_, bytes) = idle(&levels[level]);
        scores[level] = if level < targets.base_level {
            if bytes > 0 {
                1.0 + bytes as f64 / opts.base_level_bytes.max(1) as f64
            } else {
                0.0
            }
        } else {
            bytes as f64 / targets.max_bytes[level].max(1) as f64
        };
    }
    scores
}

/// Priority of every level (see the module doc), from its `scores`.
pub(crate) fn level_priorities<T: PickTable>(
    levels: &Levels<T>,
    targets: &LevelTargets,
    scores: &[f64; NUM_LEVELS],
) -> [f64; NUM_LEVELS] {
    let last_fullness =
        level_bytes(levels)[LAST_LEVEL] as f64 / targets.max_bytes[LAST_LEVEL].max(1) as f64;
    let fullness = |level: usize| {
        if level == LAST_LEVEL {
            last_fullness
        } else {
            scores[level]
        }
    };
    let mut priorities = *scores;
    for (level, p) in priorities.iter_mut().enumerate().take(LAST_LEVEL) {
        let next = match level {
            0 => targets.base_level,
            l if l < targets.base_level => continue,
            l => l + 1,
        };
        if *p >= 1.0 && next != level {
            *p /= fullness(next).max(MIN_DIVISOR);
        }
    }
    priorities
}

/// One compaction to run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Pick {
    pub start_level: usize,
    pub output_level: usize,
    /// Tables of the start level.
    pub inputs: Vec<u64>,
    /// Overlapping tables of the output level.
    pub output_inputs: Vec<u64>,
    /// Move the single input down without rewriting it.
    pub trivial_move: bool,
    /// Priority of the start level when picked.
    pub score: f64,
    /// Target size of each output table.
    pub target_file_size: u64,
}

/// Chooses the next compaction, if any level needs one and can have one
/// without taking a table in `compacting`.
pub(crate) fn pick<T: PickTable>(
    levels: &Levels<T>,
    compacting: &Compacting,
    opts: &PickerOptions,
) -> Option<Pick> {
    let targets = level_targets(&level_bytes(levels), opts);
    let scores = level_scores(levels, compacting, &targets, opts);
    let mut priorities = level_priorities(levels, &targets, &scores);
    if opts.drain_l0 && levels[0].iter().any(|f| !compacting.contains(&f.number())) {
        priorities[0] = priorities[0].max(1.0);
    }
    let mut order: Vec<usize> = (0..LAST_LEVEL).filter(|&l| priorities[l] >= 1.0).collect();
    // Highest priority first; ties go to the higher level (L0 first).
    order.sort_by(|&a, &b| priorities[b].total_cmp(&priorities[a]).then(a.cmp(&b)));
    for level in order {
        let picked = if level == 0 {
            pick_l0(levels, compacting, targets.base_level, opts)
        } else {
            let output = if level < targets.base_level {
                level + 1
            } else {
                (level + 1).min(LAST_LEVEL)
            };
            pick_level(levels, compacting, level, output, targets.base_level, opts)
        };
        if let Some(mut p) = picked {
            p.score = priorities[level];
            p.target_file_size = output_file_size(
                opts.target_file_size_base,
                p.output_level,
                targets.base_level,
            );
            return Some(p);
        }
    }
    None
}

fn overlapping<T: PickTable>(files: &[T], lo: &[u8], hi: &[u8]) -> Vec<usize> {
    (0..files.len())
        .filter(|&i| files[i].overlaps(lo, hi))
        .collect()
}

fn pick_l0<T: PickTable>(
    levels: &Levels<T>,
    compacting: &Compacting,
    base: usize,
    opts: &PickerOptions,
) -> Option<Pick> {
    let l0 = &levels[0];
    if l0.is_empty() || l0.iter().any(|f| compacting.contains(&f.number())) {
        return None;
    }
    let lo = l0.iter().map(|f| f.smallest()).min()?;
    let hi = l0.iter().map(|f| f.largest()).max()?;
    let out = overlapping(&levels[base], lo, hi);
    if out
        .iter()
        .any(|&i| compacting.contains(&levels[base][i].number()))
    {
        return None;
    }
    let trivial_move = l0.len() == 1 && out.is_empty() && opts.filter_at[0] == opts.filter_at[base];
    Some(Pick {
        start_level: 0,
        output_level: base,
        // Oldest first, the order in which they were flushed.
        inputs: l0.iter().rev().map(|f| f.number()).collect(),
        output_inputs: out.iter().map(|&i| levels[base][i].number()).collect(),
        trivial_move,
        score: 0.0,
        target_file_size: 0,
    })
}

fn pick_level<T: PickTable>(
    levels: &Levels<T>,
    compacting: &Compacting,
    level: usize,
    output: usize,
    base_level: usize,
    opts: &PickerOptions,
) -> Option<Pick> {
    let mut best: Option<(u128, usize, Vec<usize>)> = None;
    for (i, f) in levels[level].iter().enumerate() {
        if compacting.contains(&f.number()) {
            continue;
        }
        let out = overlapping(&levels[output], f.smallest(), f.largest());
        if out
            .iter()
            .any(|&j| compacting.contains(&levels[output][j].number()))
        {
            continue;
        }
        let overlap: u64 = out.iter().map(|&j| levels[output][j].size()).sum();
        // Overlap per byte of input, in fixed point to compare exactly.
        let ratio = (u128::from(overlap) << 32) / u128::from(f.size().max(1));
        if best.as_ref().is_none_or(|(r, _, _)| ratio < *r) {
            best = Some((ratio, i, out));
        }
    }
    let (_, seed, out) = best?;
    let limit = output_file_size(opts.target_file_size_base, output, base_level)
        .saturating_mul(EXPANSION_LIMIT_TABLES);
    let inputs = expand(
        &levels[level],
        &levels[output],
        compacting,
        seed,
        &out,
        limit,
    );
    Some(Pick {
        start_level: level,
        output_level: output,
        inputs: inputs.iter().map(|&i| levels[level][i].number()).collect(),
        output_inputs: out.iter().map(|&j| levels[output][j].number()).collect(),
        trivial_move: out.is_empty() && opts.filter_at[level] == opts.filter_at[output],
        score: 0.0,
        target_file_size: 0,
    })
}

/// The smallest and largest user keys of the tables `picked` of `tables`.
fn span<'t, T: PickTable>(tables: &'t [T], picked: &[usize]) -> Option<(&'t [u8], &'t [u8])> {
    let lo = picked.iter().map(|&i| tables[i].smallest()).min();
    let hi = picked.iter().map(|&i| tables[i].largest()).max();
    lo.zip(hi)
}

/// The inputs of a compaction of table `seed` of `from` into `to`, where it
/// overlaps the tables `out`: `seed` and its neighbours in `from` that lie
/// within the key range rewritten in `to`, if taking them adds no table of `to`
/// and keeps the compaction under `limit` bytes.
fn expand<T: PickTable>(
    from: &[T],
    to: &[T],
    compacting: &Compacting,
    seed: usize,
    out: &[usize],
    limit: u64,
) -> Vec<usize> {
    let just_seed = vec![seed];
    let Some(f) = from.get(seed) else {
        return just_seed;
    };
    let Some((out_lo, out_hi)) = span(to, out) else {
        return just_seed;
    };
    let lo = out_lo.min(f.smallest());
    let hi = out_hi.max(f.largest());
    let grown = overlapping(from, lo, hi);
    if grown.len() <= 1
        || grown
            .iter()
            .any(|&i| compacting.contains(&from[i].number()))
    {
        return just_seed;
    }
    let Some((grown_lo, grown_hi)) = span(from, &grown) else {
        return just_seed;
    };
    if overlapping(to, grown_lo.min(lo), grown_hi.max(hi)) != out {
        return just_seed;
    }
    let bytes: u64 = grown.iter().map(|&i| from[i].size()).sum::<u64>()
        + out.iter().map(|&j| to[j].size()).sum::<u64>();
    if bytes >= limit {
        return just_seed;
    }
    grown
}

/// Estimated bytes compactions must still rewrite to bring every level within
/// its target (the debt that write stalls bound), computed like RocksDB's
/// `estimate-pending-compaction-bytes`:
///
/// * if L0 is at its trigger, all of L0 and all of the base level;
/// * then, walking down from the base level, each level's excess over its
///   target (including what the level above pushes into it) is carried to the
///   next level and costs itself times `1 + next level / this level` (the
///   fan-out of merging it into the level below).
pub(crate) fn pending_compaction_bytes<T: PickTable>(
    levels: &Levels<T>,
    opts: &PickerOptions,
) -> u64 {
    let sizes = level_bytes(levels);
    let targets = level_targets(&sizes, opts);
    let mut debt = 0f64;
    let mut carried = 0f64;
    let l0_due = levels[0].len() >= opts.l0_compaction_trigger.max(1);
    if l0_due {
        debt += sizes[0] as f64;
        carried = sizes[0] as f64;
    }
    for level in targets.base_level..LAST_LEVEL {
        if level == targets.base_level && l0_due {
            debt += sizes[level] as f64;
        }
        let size = sizes[level] as f64 + carried;
        carried = 0.0;
        let target = targets.max_bytes[level] as f64;
        if size > target {
            carried = size - target;
            let next = sizes[level + 1] as f64;
            if next > 0.0 {
                debt += carried * (next / size + 1.0);
            }
        }
    }
    debt.round() as u64
}

#[cfg(test)]
mod scenarios;

#[cfg(test)]
mod tests {
    //! Properties over many inputs; the cases one reads one by one are the
    //! scenario files (`testdata/picker/`, run by `scenarios`).
    use super::*;

    const MIB: u64 = 1 << 20;

    /// Database sizes from empty to 1.5 TiB, not all round.
    fn totals() -> impl Iterator<Item = u64> {
        (0..44u32).map(|i| {
            if i == 0 {
                0
            } else {
                (MIB << (i / 2)) / 4 * (2 + u64::from(i % 2)) + u64::from(i)
            }
        })
    }

    fn options(base_level_bytes: u64, level_size_multiplier: f64) -> PickerOptions {
        PickerOptions {
            l0_compaction_trigger: 4,
            base_level_bytes,
            level_size_multiplier,
            filter_at: [true, true, true, true, true, true, false],
            target_file_size_base: 2 * MIB,
            drain_l0: false,
        }
    }

    #[test]
    fn level_plan_is_the_pickers_targets_for_a_settled_database() {
        for (base, mult) in [(64 * MIB, 10.0), (256 * MIB, 8.0), (16 * MIB, 4.5)] {
            let o = options(base, mult);
            for total in totals() {
                let plan = level_plan(total, base, mult, o.target_file_size_base);
                let mut sizes = [0; NUM_LEVELS];
                sizes[LAST_LEVEL] = total;
                let t = level_targets(&sizes, &o);
                assert_eq!(plan.base_level, t.base_level, "{total}");
                for level in 0..NUM_LEVELS {
                    let target =
                        (total > 0 && level >= t.base_level.max(1)).then_some(t.max_bytes[level]);
                    assert_eq!(plan.target_bytes[level], target, "{total} L{level}");
                    let tables = target
                        .map(|_| output_file_size(o.target_file_size_base, level, t.base_level));
                    assert_eq!(plan.table_bytes[level], tables, "{total} L{level}");
                }
            }
        }
    }

    #[test]
    fn targets_grow_downwards_to_the_last_levels_expected_size() {
        for (base, mult) in [(64 * MIB, 10.0), (256 * MIB, 8.0), (16 * MIB, 4.5)] {
            let o = options(base, mult);
            for total in totals().filter(|&t| t > 0) {
                let mut sizes = [0; NUM_LEVELS];
                sizes[LAST_LEVEL] = total;
                let t = level_targets(&sizes, &o);
                let b = t.base_level;
                assert!(t.max_bytes[..b].iter().all(|&m| m == u64::MAX), "{total}");
                // The base level's target is at most base_level_bytes, and
                // at least its share when L6 is right below.
                let base_target = t.max_bytes[b] as f64;
                assert!(base_target <= base as f64 + 0.5, "{total}: {base_target}");
                if b + 1 == LAST_LEVEL {
                    assert!(base_target + 0.5 >= base as f64 / mult, "{total}");
                }
                assert!(t.max_bytes[b..].windows(2).all(|w| w[0] <= w[1]), "{total}");
                let expected = total as f64 - total as f64 / mult;
                let last = t.max_bytes[LAST_LEVEL] as f64;
                if b < LAST_LEVEL {
                    assert!(
                        (last - expected).abs() <= 1.0 + expected * 1e-9,
                        "{total}: {last}"
                    );
                }
                // The base level only moves up once the level below it
                // would exceed base_level_bytes.
                if b < LAST_LEVEL {
                    let below = expected / mult.powi((LAST_LEVEL - b - 1) as i32);
                    assert!(below > base as f64 * 0.999999, "{total}");
                }
                if b > 1 {
                    assert!(
                        expected / mult.powi((LAST_LEVEL - b) as i32) <= base as f64 * 1.000001,
                        "{total}"
                    );
                }
            }
        }
    }
}
