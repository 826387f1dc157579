//! Filter bits per level for a cache budget (`shale advise --budget`).
//!
//! At the second inflection point a Get reads its data block and, for each
//! level above the one holding its key, one more block when that level's
//! filter answers "maybe" for a key it does not hold. With binary fuse
//! filters of `f`-bit fingerprints that happens with probability `2^-f`,
//! and a key costs `4096 / k(f)` filter bytes, `k(f)` being the keys of a
//! page-sized partition (`shale::tools::keys_per_filter_page`). A Get of a
//! key stored in level `j` probes the filter of each level above `j` that
//! has a table whose range holds the key, so a false positive in level `l`
//! is paid by the share of the keys stored below `l`, times the share `c_l`
//! of those that fall inside `l`'s tables (compactions into the next level
//! leave gaps between a level's tables: at 20M keys L4 and L5 each cover
//! about half of the key space):
//!
//! ```text
//! reads per Get = 1 + sum over l of 2^-f_l * c_l * (keys below l) / (all keys)
//! cache needed  = index blocks + sum over l of keys_l * 4096 / k(f_l)
//! ```
//!
//! As in Monkey's allocation, the small upper levels, whose false positives
//! every Get deeper down pays, get more bits; the big level above the last,
//! whose false positives only the last level's Gets pay, fewer. The plan
//! starts every level at the narrowest fingerprint (4 bits) and, while the
//! budget allows, widens the fingerprint that removes the most expected
//! reads per byte added (the cost of each level is convex in `f`, so this
//! greedy choice is the best integer allocation up to the last step). Some
//! of the budget is kept for the data blocks passing through and for
//! shards filling unevenly ([`reserve`]).

use shale::tools::keys_per_filter_page;
use shale::FilterKind;

/// Narrowest and widest fingerprints the planner chooses between.
const FINGERPRINT_BITS: std::ops::RangeInclusive<u8> = 4..=16;

/// What a plan must fit: the metadata a Get needs cached besides the
/// filters, and the budget.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetInput {
    /// Keys per level, L0 first; the last entry is the last level (no
    /// filter).
    pub level_keys: Vec<u64>,
    /// Per level, the share of the Gets of keys stored below it that fall
    /// inside one of its tables (and so probe its filter): 1 for a level
    /// whose tables cover the key space; compactions leave gaps.
    pub level_coverage: Vec<f64>,
    /// Index blocks (partitions and top-level indexes) of every level.
    pub index_bytes: u64,
    /// The cache budget in bytes.
    pub budget: u64,
}

/// One level's filter in a plan.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelFilter {
    /// The level.
    pub level: usize,
    /// Its keys.
    pub keys: u64,
    /// The `FilterPolicy::level_bits_per_key` to ask for.
    pub bits_per_key: u32,
    /// The fingerprint width those give.
    pub fingerprint_bits: u8,
    /// Filter bytes of the level.
    pub bytes: u64,
    /// Chance that a probe of a key the level does not hold passes.
    pub false_positive_rate: f64,
    /// Expected extra reads per Get this level's false positives cost.
    pub reads_per_get: f64,
}

/// A plan of filter bits per level for a budget.
#[derive(Clone, Debug, PartialEq)]
pub struct FilterPlan {
    /// The budget planned for.
    pub budget: u64,
    /// The levels with filters (above the last, holding keys).
    pub levels: Vec<LevelFilter>,
    /// Filter bytes of the plan.
    pub filter_bytes: u64,
    /// Index bytes it leaves room for.
    pub index_bytes: u64,
    /// What it keeps free for data blocks and uneven shards.
    pub reserve: u64,
    /// Expected block reads per Get with the filters and index cached
    /// (uniform reads of stored keys).
    pub reads_per_get: f64,
    /// True if even the narrowest fingerprints do not fit: the plan is
    /// then the narrowest one, over budget.
    pub over_budget: bool,
}

/// The smallest bits per key that give `f`-bit fingerprints without the
/// 4-bit floor (so that 4 reads as 5 bits a key, what such a filter costs).
pub fn bits_per_key_for(f: u8) -> u32 {
    (1..=64u32)
        .find(|&b| b * 100 / 124 >= u32::from(f))
        .unwrap_or(64)
}

/// Filter bytes of `keys` keys at `f`-bit fingerprints.
pub fn filter_bytes(keys: u64, f: u8) -> u64 {
    let per_page = keys_per_filter_page(FilterKind::BinaryFuse, bits_per_key_for(f)).max(1) as u64;
    keys.div_ceil(per_page) * 4096
}

/// The budget kept free. A cache below 8 MiB is one shard, where the
/// metadata (high and medium priority) is evicted only after every data
/// block: two data blocks' room is enough. Larger caches are split into
/// shards of equal budgets that the metadata fills unevenly: 2% and 64 KiB.
pub fn reserve(budget: u64) -> u64 {
    if budget < 8 << 20 {
        8 << 10
    } else {
        budget / 50 + (64 << 10)
    }
}

/// Per level, the share of the key space its tables' ranges cover, reading
/// a key's first 8 bytes as a big-endian number: right for keys spread
/// uniformly, as hashes are (the study's); keys sharing long prefixes make
/// it an estimate only.
pub fn level_coverage(tables: &[shale::TableInfo]) -> Vec<f64> {
    let point = |key: &[u8]| {
        let mut b = [0u8; 8];
        let n = key.len().min(8);
        b[..n].copy_from_slice(&key[..n]);
        u64::from_be_bytes(b) as f64
    };
    let mut out = [0.0; shale::NUM_LEVELS];
    for t in tables {
        if let Some(c) = out.get_mut(t.level) {
            *c += (point(&t.largest_key) - point(&t.smallest_key)).max(0.0) / u64::MAX as f64;
        }
    }
    // L0's tables overlap: each is probed on its own, so its share is
    // capped at the whole key space, like any level's.
    out.iter().map(|c| c.min(1.0)).collect()
}

/// Plans the filter bits per level for `input` (binary fuse filters).
pub fn plan(input: &BudgetInput) -> FilterPlan {
    let n = input.level_keys.len();
    let total: u64 = input.level_keys.iter().sum();
    // The levels with filters: above the last, holding keys; each with the
    // share of keys stored below it.
    let mut levels: Vec<(usize, u64, f64, u8)> = (0..n.saturating_sub(1))
        .filter(|&l| input.level_keys[l] > 0)
        .map(|l| {
            let below: u64 = input.level_keys[l + 1..].iter().sum();
            let coverage = input.level_coverage.get(l).copied().unwrap_or(1.0);
            (
                l,
                input.level_keys[l],
                coverage.clamp(0.0, 1.0) * below as f64 / total.max(1) as f64,
                *FINGERPRINT_BITS.start(),
            )
        })
        .collect();
    let reserve = reserve(input.budget);
    let room = input
        .budget
        .saturating_sub(input.index_bytes)
        .saturating_sub(reserve);
    let bytes_of = |levels: &[(usize, u64, f64, u8)]| -> u64 {
        levels.iter().map(|&(_, k, _, f)| filter_bytes(k, f)).sum()
    };
    let mut used = bytes_of(&levels);
    let over_budget = used > room;
    if !over_budget {
        loop {
            // The widening that removes the most expected reads per byte.
            let best = levels
                .iter()
                .enumerate()
                .filter(|(_, &(_, _, _, f))| f < *FINGERPRINT_BITS.end())
                .filter_map(|(i, &(_, k, w, f))| {
                    let added = filter_bytes(k, f + 1).saturating_sub(filter_bytes(k, f));
                    let saved = w * (0.5f64.powi(f.into()) - 0.5f64.powi(i32::from(f) + 1));
                    (used + added <= room).then(|| (i, saved / added.max(1) as f64, added))
                })
                .max_by(|a, b| a.1.total_cmp(&b.1));
            let Some((i, _, added)) = best else { break };
            levels[i].3 += 1;
            used += added;
        }
    }
    let levels: Vec<LevelFilter> = levels
        .into_iter()
        .map(|(level, keys, w, f)| {
            let fpr = 0.5f64.powi(f.into());
            LevelFilter {
                level,
                keys,
                bits_per_key: bits_per_key_for(f),
                fingerprint_bits: f,
                bytes: filter_bytes(keys, f),
                false_positive_rate: fpr,
                reads_per_get: w * fpr,
            }
        })
        .collect();
    FilterPlan {
        budget: input.budget,
        reads_per_get: 1.0 + levels.iter().map(|l| l.reads_per_get).sum::<f64>(),
        filter_bytes: used,
        index_bytes: input.index_bytes,
        reserve,
        over_budget,
        levels,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale::fuse_fingerprint_bits;

    /// The 20M-key shape: L4 0.41M keys, L5 2.68M, L6 16.9M; 1 MiB of index.
    fn shape(budget: u64) -> BudgetInput {
        BudgetInput {
            level_keys: vec![0, 0, 0, 0, 405_799, 2_678_030, 16_916_171],
            level_coverage: vec![1.0; 7],
            index_bytes: 1_048_000,
            budget,
        }
    }

    #[test]
    fn bits_per_key_give_the_fingerprint_asked_for() {
        for f in FINGERPRINT_BITS {
            let b = bits_per_key_for(f);
            assert_eq!(fuse_fingerprint_bits(b), f);
            assert!((b - 1) * 100 / 124 < u32::from(f));
        }
        // A 9-bit key gives the default's 7-bit fingerprints.
        assert_eq!(bits_per_key_for(7), 9);
    }

    #[test]
    fn a_budget_is_kept_and_upper_levels_get_more_bits() {
        let budget = 3_060_000; // 0.10% of the 20M database
        let p = plan(&shape(budget));
        assert!(!p.over_budget);
        assert!(p.filter_bytes + p.index_bytes + p.reserve <= budget);
        let (l4, l5) = (&p.levels[0], &p.levels[1]);
        assert_eq!((l4.level, l5.level), (4, 5));
        assert!(l4.fingerprint_bits > l5.fingerprint_bits, "{p:?}");
        assert!(p.reads_per_get < 1.10, "{p:?}");
        // One more bit anywhere would not fit.
        for l in &p.levels {
            let more = filter_bytes(l.keys, l.fingerprint_bits + 1) - l.bytes;
            assert!(p.filter_bytes + more + p.index_bytes + p.reserve > budget);
        }
        // A larger budget buys fewer false positives.
        let q = plan(&shape(2 * budget));
        assert!(q.reads_per_get < p.reads_per_get);
    }

    #[test]
    fn a_level_with_gaps_costs_less_per_bit() {
        let full = plan(&shape(3_060_000));
        let mut gappy = shape(3_060_000);
        gappy.level_coverage[4] = 0.5;
        gappy.level_coverage[5] = 0.5;
        let half = plan(&gappy);
        assert!(half.reads_per_get - 1.0 < 0.6 * (full.reads_per_get - 1.0));
    }

    #[test]
    fn a_budget_below_the_narrowest_filters_says_so() {
        let p = plan(&shape(1 << 20));
        assert!(p.over_budget);
        assert!(p.levels.iter().all(|l| l.fingerprint_bits == 4));
    }
}
