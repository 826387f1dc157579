//! The block cache: a sharded LRU cache charged in bytes, with priority pools so
//! that metadata (filters, top-level indexes, index partitions) is evicted after
//! data blocks, and a segmented LRU for data blocks so that blocks read once do
//! not push out blocks read again and again.
//!
//! [`LruCache`] holds clones of `V` (the block cache stores `Arc`s) under keys
//! `K`, each with a caller-given *charge* (bytes for the block cache, 1 per reader
//! for the table cache). The sum of the charges plus the bytes pinned outside the
//! cache ([`LruCache::reserve_pinned`]) is kept within the capacity.
//!
//! # Layout
//!
//! The cache is split into a power-of-two number of shards. A key is hashed once
//! per call ([`CacheKey::hash64`], a multiply-fold mix of its fixed-size
//! fields); its shard comes from bits 32..48 of that hash (the low bits and the
//! top seven bits are what the shard's own hash table uses, so they are left
//! independent), and the shard's map reuses the same hash. Each shard has a
//! hash map from key to a slot of a slab, and the slab's slots are
//! linked (by index, no pointers) into one circular doubly-linked LRU list per
//! pool, each with its own sentinel slot: two for [`Priority::Low`] (probation
//! and protected, below) and one each for Medium and High.
//!
//! # Budgets and eviction
//!
//! The capacity left after pinned bytes, `capacity - pinned` (zero if pinned
//! bytes exceed the capacity), is split evenly across the shards, the remainder
//! going to the first shard; that share is the shard's *budget*. While a shard's
//! charges exceed its budget it evicts the least recently used entry of its
//! lowest non-empty pool: every Low entry goes before any Medium one, every Medium
//! one before any High one. Hence, once no call is in flight, `usage() <=
//! capacity()` whenever the pinned bytes fit in the capacity, and every entry is
//! evicted when they do not.
//!
//! Low entries form a segmented LRU. They are inserted into the *probation*
//! pool, and a hit moves one to the *protected* pool, whose charges are kept
//! within [`PROTECTED_SHARE`] of the shard's budget: when a promotion takes it
//! over, protected entries leave its least recently used end for the most
//! recently used end of probation. Eviction takes probation's least recently
//! used entry first, then protected's. A stream of blocks each read once
//! (Gets of cold keys reading a block in every level they search, a long
//! scan) thus cycles through probation and leaves the blocks
//! that are read again alone, where a plain LRU would let the stream flush
//! them. RocksDB's LRU cache gets the same effect by moving entries that were
//! hit into its high-priority pool.
//!
//! An entry whose charge alone exceeds its shard's budget is not cached at all
//! (and any entry already under its key is dropped), rather than flushing the
//! shard and then being evicted anyway. With many shards and a small capacity
//! this rejects entries smaller than the whole capacity, so callers should keep
//! `capacity / shards` well above their largest charge (a cache of capacity
//! below the shard count leaves some shards with no room at all).
//!
//! # Concurrency
//!
//! `LruCache` is `Send + Sync` when `K` and `V` are `Send`. Each shard sits
//! behind its own mutex (`parking_lot`'s, through `crate::sync`; padded to a
//! cache line), held only for the map and list updates of one call; values
//! that leave the cache (evicted, replaced, erased or rejected) are dropped
//! after the lock is released, so a block's memory is never freed under a
//! shard lock. `get` clones `V` under the lock, so `V` should be cheap to
//! clone.
//!
//! The capacity and the pinned bytes are atomics. Every shard reads them under
//! its lock when it evicts, and [`LruCache::reserve_pinned`] and
//! [`LruCache::set_capacity`] update them and then lock and trim every shard in
//! turn. An insert racing with a reservation may briefly leave a shard over its
//! new budget, but the reservation's sweep reaches that shard after the insert
//! releases it and trims it, so the bound holds once both calls return.
//! [`LruCache::usage`] locks the shards one at a time, so under concurrent
//! writes it is a sum of per-shard snapshots, not an atomic snapshot.
//!
//! The `model_check` tests (feature `shuttle`) run inserts, lookups and erases
//! against reservations, releases and capacity changes on a one- and a
//! two-shard cache under shuttle's schedulers, and check the bound above at
//! every point where no call is in flight. Shuttle runs the atomics as
//! sequentially consistent: that the Relaxed orderings suffice rests on the
//! shard mutex argument in `LruCache::budget`'s docs, not on the checker.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::atomic::Ordering;

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicU64, Mutex};

/// Priority of a cached entry. Entries of a lower priority are always evicted
/// before entries of a higher one; within a priority, least recently used first
/// (Low entries not hit since inserted before those hit: see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Priority {
    /// Data blocks.
    Low,
    /// Index partitions.
    Medium,
    /// Filters and top-level indexes.
    High,
}

/// Number of pools (and of sentinel slots at the start of a slab): Low's
/// probation and protected pools, Medium, High.
const POOLS: usize = 4;

/// Pool of Low entries not hit since they were inserted.
const PROBATION: usize = 0;

/// Pool of Low entries hit since they were inserted.
const PROTECTED: usize = 1;

/// The share of a shard's budget that protected Low entries may hold, as a
/// fraction `numerator / denominator`: the rest is left to probation, where
/// a block must be hit before it is evicted to earn a place.
const PROTECTED_SHARE: (u64, u64) = (1, 2);

/// Shard counts are capped here (before rounding to a power of two) so that the
/// shard index fits the 16 hash bits used to pick it.
const MAX_SHARDS: usize = 1 << 16;

impl Priority {
    /// Pool index of a new entry, which is also the slab index of the pool's
    /// sentinel. Eviction scans pools in increasing index.
    fn pool(self) -> usize {
        match self {
            Priority::Low => PROBATION,
            Priority::Medium => 2,
            Priority::High => 3,
        }
    }
}

/// Shards of a block cache of `capacity` bytes when the options allow up
/// to `max_shards`. Each gets an equal share of the capacity, so a small
/// cache is split into fewer shards (a power of two, at least 4 MiB each):
/// with 16 shards a cache the size of the index would overflow in the
/// fuller shards while others sit idle, and a table's filter (one block,
/// hundreds of KiB for a 64 MiB table) would not fit a shard at all.
pub(crate) fn shards_for(capacity: u64, max_shards: usize) -> usize {
    let per_4mib = (capacity >> 22).max(1);
    let floor_pow2 = 1u64 << (63 - per_4mib.leading_zeros());
    usize::try_from(floor_pow2)
        .unwrap_or(usize::MAX)
        .clamp(1, max_shards.max(1))
}

/// A cache of `V` values keyed by `K`, bounded by the sum of the charges of its
/// entries plus the bytes pinned outside it. See the [module docs](self) for
/// sharding, eviction order and concurrency.
pub(crate) struct LruCache<K, V> {
    shards: Box<[ShardLock<K, V>]>,
    capacity: AtomicU64,
    pinned: AtomicU64,
}

impl<K: CacheKey, V: Clone + Send> LruCache<K, V> {
    /// A cache of `capacity` charge units split over `shards` shards (rounded up
    /// to a power of two; at least 1, at most 65536).
    pub(crate) fn new(capacity: u64, shards: usize) -> Self {
        let n = shards.clamp(1, MAX_SHARDS).next_power_of_two();
        let shards = (0..n)
            .map(|_| CachePadded::new(Mutex::new(Shard::new())))
            .collect();
        LruCache {
            shards,
            capacity: AtomicU64::new(capacity),
            pinned: AtomicU64::new(0),
        }
    }

    /// Looks `key` up; a hit makes it the most recently used entry of its pool
    /// (a Low entry's first hit promotes it from probation to protected).
    pub(crate) fn get(&self, key: &K) -> Option<V> {
        let (key, i, shard) = self.shard_of(key);
        // The budget (two atomic loads and a division) is needed only when
        // a hit promotes an entry out of probation.
        shard.lock().get(&key, || self.budget(i))
    }

    /// Inserts `value` under `key` with `charge` and `priority`, replacing (value,
    /// charge and priority of) any entry already there and making it the most
    /// recently used of its pool (a Low entry starts on probation, replaced or
    /// not), then evicts until the shard is within its
    /// budget. If `charge` alone exceeds the shard's budget, nothing is cached
    /// and any previous entry under `key` is removed.
    pub(crate) fn insert(&self, key: K, value: V, charge: u64, priority: Priority) {
        let (key, i, shard) = self.shard_of(&key);
        let mut garbage = Vec::new();
        {
            let mut s = shard.lock();
            let budget = self.budget(i);
            s.insert(key, value, charge, priority, budget, &mut garbage);
        }
        drop(garbage);
    }

    /// Removes `key` if present.
    pub(crate) fn erase(&self, key: &K) {
        let (key, _, shard) = self.shard_of(key);
        let removed = shard.lock().remove(&key);
        drop(removed);
    }

    /// Charges `bytes` held outside the cache (pinned table metadata) against its
    /// capacity, evicting from every shard as needed.
    pub(crate) fn reserve_pinned(&self, bytes: u64) {
        update_saturating(&self.pinned, |p| p.saturating_add(bytes));
        self.trim_all();
    }

    /// Returns bytes reserved with [`reserve_pinned`](Self::reserve_pinned)
    /// (saturating at zero). Nothing is evicted; the room becomes available to
    /// later inserts.
    pub(crate) fn release_pinned(&self, bytes: u64) {
        update_saturating(&self.pinned, |p| p.saturating_sub(bytes));
    }

    /// Sum of the charges of the cached entries plus the pinned bytes.
    pub(crate) fn usage(&self) -> u64 {
        let charges = self
            .shards
            .iter()
            .fold(0u64, |acc, s| acc.saturating_add(s.lock().usage));
        charges.saturating_add(self.pinned())
    }

    /// Bytes currently reserved with [`reserve_pinned`](Self::reserve_pinned).
    pub(crate) fn pinned(&self) -> u64 {
        self.pinned.load(Ordering::Relaxed)
    }

    /// The capacity, in charge units.
    pub(crate) fn capacity(&self) -> u64 {
        self.capacity.load(Ordering::Relaxed)
    }

    /// Changes the capacity, evicting from every shard as needed.
    pub(crate) fn set_capacity(&self, capacity: u64) {
        self.capacity.store(capacity, Ordering::Relaxed);
        self.trim_all();
    }

    /// `key` with its hash, and its shard's index and lock.
    fn shard_of(&self, key: &K) -> (Hashed<K>, usize, &Mutex<Shard<K, V>>) {
        let hash = key.hash64();
        // The slab length is a power of two, so the mask keeps `i` in range.
        let i = ((hash >> 32) as usize) & (self.shards.len() - 1);
        let key = Hashed {
            hash,
            key: key.clone(),
        };
        (key, i, &self.shards[i])
    }

    /// Budget of shard `i`: its share of `capacity - pinned`. Called with shard
    /// `i` locked, so that a concurrent `reserve_pinned` or `set_capacity` either
    /// is seen here or trims this shard after we unlock it (Relaxed is enough:
    /// the shard mutex orders the atomics' updates before that trim).
    fn budget(&self, i: usize) -> u64 {
        let total = self.capacity().saturating_sub(self.pinned());
        let n = self.shards.len() as u64;
        let share = total / n;
        if i == 0 {
            share + total % n
        } else {
            share
        }
    }

    /// Evicts every shard down to its current budget.
    fn trim_all(&self) {
        for (i, shard) in self.shards.iter().enumerate() {
            let mut garbage = Vec::new();
            {
                let mut s = shard.lock();
                let budget = self.budget(i);
                s.evict_to(budget, &mut garbage);
            }
            drop(garbage);
        }
    }
}

/// A shard behind its lock, padded so that neighbouring locks do not share a
/// cache line.
type ShardLock<K, V> = CachePadded<Mutex<Shard<K, V>>>;

/// Atomically replaces `a` by `f(a)`.
fn update_saturating(a: &AtomicU64, f: impl Fn(u64) -> u64) {
    // The closure always returns `Some`, so `fetch_update` cannot fail.
    let _ = a.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |p| Some(f(p)));
}

/// One cached entry.
struct Entry<K, V> {
    key: Hashed<K>,
    value: V,
    charge: u64,
    /// The pool whose list links the entry.
    pool: usize,
}

/// A slab slot: its links in a pool's circular list (to itself when unlinked)
/// and its entry. Sentinel and free slots have no entry.
struct Slot<K, V> {
    prev: usize,
    next: usize,
    entry: Option<Entry<K, V>>,
}

/// Values leaving a shard, dropped once its lock is released.
type Garbage<K, V> = Vec<(Hashed<K>, V)>;

/// One shard: slots `0..POOLS` are the sentinels of the probation, protected,
/// Medium and High lists; `sentinel.next` is the pool's least recently used
/// entry and `sentinel.prev` its most recently used.
struct Shard<K, V> {
    map: HashMap<Hashed<K>, usize, BuildHasherDefault<PassHash>>,
    slots: Vec<Slot<K, V>>,
    free: Vec<usize>,
    /// Sum of the charges of the entries.
    usage: u64,
    /// Sum of the charges of each pool's entries.
    pool_usage: [u64; POOLS],
}

impl<K: CacheKey, V: Clone> Shard<K, V> {
    fn new() -> Self {
        let slots = (0..POOLS)
            .map(|i| Slot {
                prev: i,
                next: i,
                entry: None,
            })
            .collect();
        Shard {
            map: HashMap::default(),
            slots,
            free: Vec::new(),
            usage: 0,
            pool_usage: [0; POOLS],
        }
    }

    /// The value under `key`, made the most recently used of its pool; a
    /// probation entry moves to protected, which then gives its least
    /// recently used entries back to probation until it is within its share
    /// of `budget`.
    fn get(&mut self, key: &Hashed<K>, budget: impl FnOnce() -> u64) -> Option<V> {
        let i = *self.map.get(key)?;
        let entry = self.slots.get_mut(i)?.entry.as_mut()?;
        let value = entry.value.clone();
        let (pool, charge) = (entry.pool, entry.charge);
        self.unlink(i);
        if pool == PROBATION {
            self.move_to(i, PROBATION, PROTECTED, charge);
            self.demote(budget());
        } else {
            self.push_mru(i, pool);
        }
        Some(value)
    }

    /// Moves protected entries, least recently used first, to the most
    /// recently used end of probation until protected charges are within
    /// [`PROTECTED_SHARE`] of what `budget` leaves to Low entries (the budget
    /// less the Medium and High charges). Leaving probation room this way keeps
    /// new blocks admitted: with none, a new block would be evicted at once and
    /// never hit.
    fn demote(&mut self, budget: u64) {
        let low = budget.saturating_sub(self.pool_usage[2] + self.pool_usage[3]);
        let limit = low / PROTECTED_SHARE.1 * PROTECTED_SHARE.0;
        while self.pool_usage[PROTECTED] > limit {
            let i = self.slots[PROTECTED].next;
            let Some(charge) = self
                .slots
                .get(i)
                .and_then(|s| s.entry.as_ref())
                .map(|e| e.charge)
            else {
                debug_assert!(false, "protected charges with no protected entry");
                self.pool_usage[PROTECTED] = 0;
                return;
            };
            self.unlink(i);
            self.move_to(i, PROTECTED, PROBATION, charge);
        }
    }

    /// Links unlinked slot `i`, an entry of `from` with `charge`, at the most
    /// recently used end of `to`.
    fn move_to(&mut self, i: usize, from: usize, to: usize, charge: u64) {
        if let Some(entry) = self.slots[i].entry.as_mut() {
            entry.pool = to;
        }
        self.pool_usage[from] -= charge;
        self.pool_usage[to] += charge;
        self.push_mru(i, to);
    }

    fn insert(
        &mut self,
        key: Hashed<K>,
        value: V,
        charge: u64,
        priority: Priority,
        budget: u64,
        garbage: &mut Garbage<K, V>,
    ) {
        if charge > budget {
            // Too big to ever fit: caching it would only flush the shard. Drop a
            // previous entry too, since its value is being superseded.
            if let Some(old) = self.remove(&key) {
                garbage.push(old);
            }
            garbage.push((key, value));
            return;
        }
        if let Some(&i) = self.map.get(&key) {
            if let Some(entry) = self.slots.get_mut(i).and_then(|s| s.entry.as_mut()) {
                let old = std::mem::replace(&mut entry.value, value);
                self.usage = self.usage - entry.charge + charge;
                self.pool_usage[entry.pool] -= entry.charge;
                self.pool_usage[priority.pool()] += charge;
                entry.charge = charge;
                entry.pool = priority.pool();
                garbage.push((key, old));
                self.unlink(i);
                self.push_mru(i, priority.pool());
                self.evict_to(budget, garbage);
                return;
            }
            // A map entry without a slot entry would be a bug; repair by
            // forgetting it and inserting afresh.
            debug_assert!(false, "cache map points at an empty slot");
            self.map.remove(&key);
        }
        let entry = Entry {
            key: key.clone(),
            value,
            charge,
            pool: priority.pool(),
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i].entry = Some(entry);
                i
            }
            None => {
                let i = self.slots.len();
                self.slots.push(Slot {
                    prev: i,
                    next: i,
                    entry: Some(entry),
                });
                i
            }
        };
        self.map.insert(key, i);
        self.usage += charge;
        self.pool_usage[priority.pool()] += charge;
        self.push_mru(i, priority.pool());
        self.evict_to(budget, garbage);
    }

    /// Removes `key`'s entry, returning its key and value.
    fn remove(&mut self, key: &Hashed<K>) -> Option<(Hashed<K>, V)> {
        let i = self.map.remove(key)?;
        self.release_slot(i)
    }

    /// Evicts least-recently-used entries of the lowest non-empty pool until the
    /// charges fit `budget`, after giving protected's excess over its share
    /// back to probation (the budget may have shrunk, or Medium and High
    /// entries grown, since the last promotion).
    fn evict_to(&mut self, budget: u64, garbage: &mut Garbage<K, V>) {
        self.demote(budget);
        while self.usage > budget {
            let Some(i) = (0..POOLS)
                .map(|pool| self.slots[pool].next)
                .find(|&i| i >= POOLS)
            else {
                debug_assert!(false, "cache usage {} with no entries", self.usage);
                self.usage = 0;
                return;
            };
            let Some((key, value)) = self.release_slot(i) else {
                debug_assert!(false, "cache list links an empty slot");
                self.unlink(i);
                continue;
            };
            self.map.remove(&key);
            garbage.push((key, value));
        }
    }

    /// Unlinks slot `i`, takes its entry, subtracts its charge and frees the
    /// slot. The caller removes the map entry.
    fn release_slot(&mut self, i: usize) -> Option<(Hashed<K>, V)> {
        self.unlink(i);
        let entry = self.slots.get_mut(i)?.entry.take()?;
        self.free.push(i);
        self.usage -= entry.charge;
        self.pool_usage[entry.pool] -= entry.charge;
        Some((entry.key, entry.value))
    }

    fn unlink(&mut self, i: usize) {
        let (prev, next) = (self.slots[i].prev, self.slots[i].next);
        self.slots[prev].next = next;
        self.slots[next].prev = prev;
        self.slots[i].prev = i;
        self.slots[i].next = i;
    }

    /// Links (unlinked) slot `i` at the most recently used end of `pool`.
    fn push_mru(&mut self, i: usize, pool: usize) {
        let last = self.slots[pool].prev;
        self.slots[i].prev = last;
        self.slots[i].next = pool;
        self.slots[last].next = i;
        self.slots[pool].prev = i;
    }
}

/// A key of an [`LruCache`]: small, fixed-size and chosen by the engine (block
/// addresses, file numbers), not by an adversary, so an unseeded mix suffices.
pub(crate) trait CacheKey: Eq + Clone + Send {
    /// A hash whose every bit depends on every bit of the key.
    fn hash64(&self) -> u64;
}

impl CacheKey for u64 {
    fn hash64(&self) -> u64 {
        mix(*self, 0)
    }
}

impl CacheKey for u32 {
    fn hash64(&self) -> u64 {
        mix(u64::from(*self), 0)
    }
}

/// A block address: (file number, offset).
impl CacheKey for (u64, u64) {
    fn hash64(&self) -> u64 {
        mix(self.0, self.1)
    }
}

/// The high and low halves of the 128-bit product, folded together.
#[inline]
fn fold_mul(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Two 64-bit words mixed into one hash: two multiply-folds, the second
/// spreading the first's result over all 64 bits. The odd constants (digits
/// of pi) keep a zero word from zeroing a product.
#[inline]
fn mix(a: u64, b: u64) -> u64 {
    let x = fold_mul(a ^ 0x243f_6a88_85a3_08d3, b ^ 0x1319_8a2e_0370_7345);
    fold_mul(x ^ 0xa409_3822_299f_31d1, 0x082e_fa98_ec4e_6c89)
}

/// A key with its hash, computed once per cache call and reused by the
/// shard's map (through [`PassHash`]).
#[derive(Clone, Debug)]
struct Hashed<K> {
    hash: u64,
    key: K,
}

impl<K: Eq> PartialEq for Hashed<K> {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.key == other.key
    }
}

impl<K: Eq> Eq for Hashed<K> {}

impl<K> Hash for Hashed<K> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// The hasher of a shard's map: passes a [`Hashed`] key's precomputed hash
/// through.
#[derive(Default)]
struct PassHash(u64);

impl Hasher for PassHash {
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used by `Hashed`; fold anything else in anyway.
        for &b in bytes {
            self.0 = fold_mul(self.0 ^ u64::from(b), 0x9e37_79b9_7f4a_7c15);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::test_util::Rng;
    use std::sync::Arc;

    fn priority(r: u64) -> Priority {
        match r % 3 {
            0 => Priority::Low,
            1 => Priority::Medium,
            _ => Priority::High,
        }
    }

    impl<K: CacheKey, V: Clone + Send> LruCache<K, V> {
        /// Keys present, without touching recency.
        fn keys(&self) -> Vec<K> {
            let mut keys = Vec::new();
            for s in self.shards.iter() {
                keys.extend(s.lock().map.keys().map(|k| k.key.clone()));
            }
            keys
        }

        /// Checks every shard's map, lists and charge sum, and that no shard is
        /// over its budget.
        fn check(&self) {
            for (i, s) in self.shards.iter().enumerate() {
                let s = s.lock();
                let mut linked = 0;
                let mut charges = 0;
                for pool in 0..POOLS {
                    let mut prev = pool;
                    let mut at = s.slots[pool].next;
                    let mut pool_charges = 0;
                    while at != pool {
                        assert_eq!(s.slots[at].prev, prev, "back link");
                        let e = s.slots[at].entry.as_ref().expect("linked slot has entry");
                        assert_eq!(e.pool, pool, "entry in its pool");
                        assert_eq!(s.map.get(&e.key), Some(&at), "map points at slot");
                        linked += 1;
                        pool_charges += e.charge;
                        prev = at;
                        at = s.slots[at].next;
                    }
                    assert_eq!(s.slots[pool].prev, prev, "sentinel back link");
                    assert_eq!(pool_charges, s.pool_usage[pool], "pool {pool} charges");
                    charges += pool_charges;
                }
                assert_eq!(linked, s.map.len(), "every entry linked once");
                assert_eq!(linked + s.free.len() + POOLS, s.slots.len(), "slots");
                assert_eq!(charges, s.usage, "usage is the sum of charges");
                assert!(s.usage <= self.budget(i), "shard {i} over budget");
            }
        }
    }

    fn cache(capacity: u64) -> LruCache<u32, u32> {
        LruCache::new(capacity, 1)
    }

    fn present(c: &LruCache<u32, u32>) -> Vec<u32> {
        let mut k = c.keys();
        k.sort_unstable();
        k
    }

    #[test]
    fn send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<LruCache<u64, u64>>();
        check::<crate::table::BlockCache>();
    }

    #[test]
    fn shard_count_is_a_power_of_two() {
        for (asked, got) in [(0, 1), (1, 1), (3, 4), (16, 16), (17, 32)] {
            assert_eq!(cache_with_shards(asked).shards.len(), got);
        }
        assert_eq!(cache_with_shards(usize::MAX).shards.len(), MAX_SHARDS);
    }

    fn cache_with_shards(n: usize) -> LruCache<u32, u32> {
        LruCache::new(100, n)
    }

    #[test]
    fn budgets_split_capacity_minus_pinned() {
        let c: LruCache<u32, u32> = LruCache::new(103, 4);
        assert_eq!(
            (0..4).map(|i| c.budget(i)).collect::<Vec<_>>(),
            [28, 25, 25, 25]
        );
        c.reserve_pinned(10);
        assert_eq!((0..4).map(|i| c.budget(i)).sum::<u64>(), 93);
        c.reserve_pinned(1000);
        assert!((0..4).all(|i| c.budget(i) == 0));
    }

    #[test]
    fn lru_order_within_a_pool() {
        let c = cache(3);
        for k in 1..=3 {
            c.insert(k, k * 10, 1, Priority::Low);
        }
        assert_eq!(c.get(&1), Some(10));
        c.insert(4, 40, 1, Priority::Low);
        assert_eq!(present(&c), [1, 3, 4], "2 was least recently used");
        c.insert(5, 50, 1, Priority::Low);
        assert_eq!(present(&c), [1, 4, 5], "then 3");
        // Replacing refreshes recency too.
        c.insert(1, 11, 1, Priority::Low);
        c.insert(6, 60, 1, Priority::Low);
        assert_eq!(present(&c), [1, 5, 6]);
        assert_eq!(c.get(&1), Some(11));
        c.check();
    }

    #[test]
    fn blocks_hit_again_survive_a_stream_read_once() {
        let c = cache(100);
        // Ten blocks read again and again (hot keys' blocks) ...
        for k in 0..10 {
            c.insert(k, k, 4, Priority::Low);
            assert_eq!(c.get(&k), Some(k));
        }
        // ... and a long stream of blocks each read once (cold keys' blocks in
        // every level a Get searches), with the hot blocks read in between.
        for k in 100..10_000 {
            c.insert(k, k, 4, Priority::Low);
            if k % 50 == 0 {
                for hot in 0..10 {
                    assert_eq!(c.get(&hot), Some(hot), "hot block {hot} evicted at {k}");
                }
            }
        }
        // The stream still cycles through probation: the newest are cached.
        assert_eq!(c.get(&9_999), Some(9_999));
        assert_eq!(c.get(&100), None);
        c.check();
    }

    #[test]
    fn protected_blocks_leave_room_to_admit_new_ones() {
        let c = cache(100);
        for k in 0..25 {
            c.insert(k, k, 4, Priority::Low);
            assert_eq!(c.get(&k), Some(k));
        }
        // Half the budget at most stays protected; the oldest hit blocks went
        // back to probation and were the first evicted.
        assert_eq!(c.shards[0].lock().pool_usage[PROTECTED], 48);
        for k in 100..120 {
            c.insert(k, k, 4, Priority::Low);
        }
        assert!((13..25).all(|k| c.keys().contains(&k)), "{:?}", present(&c));
        // A new block is admitted and, once hit, protected in turn.
        assert_eq!(c.get(&119), Some(119));
        c.insert(200, 200, 4, Priority::Low);
        assert_eq!(c.get(&119), Some(119));
        // When the budget shrinks or metadata grows, protected gives way too.
        c.set_capacity(40);
        c.insert(300, 300, 20, Priority::High);
        assert!(c.shards[0].lock().pool_usage[PROTECTED] <= 10);
        c.insert(301, 301, 4, Priority::Low);
        assert!(c.keys().contains(&301), "a new block is admitted");
        c.check();
    }

    #[test]
    fn high_survives_many_low_inserts() {
        let c = cache(10);
        c.insert(0, 0, 3, Priority::High);
        for k in 1..1000 {
            c.insert(k, k, 1, Priority::Low);
            assert!(c.keys().contains(&0), "high entry evicted at {k}");
        }
        assert_eq!(c.get(&0), Some(0));
        assert_eq!(c.usage(), 10);
        c.check();
    }

    #[test]
    fn pools_are_evicted_low_then_medium_then_high() {
        let c = cache(4);
        c.insert(1, 1, 1, Priority::High);
        c.insert(2, 2, 1, Priority::Medium);
        c.insert(3, 3, 1, Priority::Low);
        c.insert(4, 4, 1, Priority::Low);
        // Even the oldest Medium and High stay while a Low is left.
        c.insert(5, 5, 1, Priority::Medium);
        assert_eq!(present(&c), [1, 2, 4, 5]);
        c.insert(6, 6, 1, Priority::High);
        assert_eq!(present(&c), [1, 2, 5, 6]);
        // A new Low entry is itself the only Low, so it goes first.
        c.insert(7, 7, 1, Priority::Low);
        assert_eq!(present(&c), [1, 2, 5, 6]);
        // With no Low left, Medium goes next; a hit on 2 makes 5 its LRU.
        assert_eq!(c.get(&2), Some(2));
        c.insert(8, 8, 1, Priority::High);
        assert_eq!(present(&c), [1, 2, 6, 8]);
        c.insert(9, 9, 1, Priority::High);
        assert_eq!(present(&c), [1, 6, 8, 9]);
        c.insert(10, 10, 1, Priority::High);
        assert_eq!(present(&c), [6, 8, 9, 10], "High LRU last");
        c.check();
    }

    #[test]
    fn charges_are_accounted() {
        let c = cache(100);
        c.insert(1, 1, 30, Priority::Low);
        c.insert(2, 2, 20, Priority::High);
        assert_eq!(c.usage(), 50);
        c.erase(&1);
        assert_eq!(c.usage(), 20);
        c.erase(&1);
        assert_eq!(c.usage(), 20, "erasing a missing key is a no-op");
        c.insert(2, 22, 45, Priority::Low);
        assert_eq!(c.usage(), 45, "replace updates the charge");
        assert_eq!(c.get(&2), Some(22));
        // The replacement moved 2 to the Low pool: a Medium insert evicts it.
        c.insert(3, 3, 60, Priority::Medium);
        assert_eq!(present(&c), [3]);
        assert_eq!(c.usage(), 60);
        c.check();

        let c: LruCache<u64, u64> = LruCache::new(1000, 8);
        let mut rng = Rng::new(7);
        for _ in 0..5000 {
            let k = rng.below(500);
            if rng.below(4) == 0 {
                c.erase(&k);
            } else {
                c.insert(k, k, 1 + rng.below(60), priority(rng.next_u64()));
            }
            assert!(c.usage() <= c.capacity());
        }
        c.check();
    }

    #[test]
    fn pinned_bytes_evict_and_release_restores_room() {
        let c: LruCache<u64, u64> = LruCache::new(100, 4);
        for k in 0..1000 {
            c.insert(k, k, 1, Priority::Low);
        }
        assert_eq!(c.usage(), 100, "each shard fills exactly its budget");
        c.reserve_pinned(60);
        assert_eq!(c.pinned(), 60);
        assert_eq!(c.usage(), 100);
        assert_eq!(c.keys().len(), 40);
        c.check();
        for k in 1000..2000 {
            c.insert(k, k, 1, Priority::High);
        }
        assert_eq!(c.keys().len(), 40, "pinned bytes keep their room");
        c.release_pinned(60);
        assert_eq!((c.pinned(), c.usage()), (0, 40));
        for k in 2000..3000 {
            c.insert(k, k, 1, Priority::Low);
        }
        assert_eq!(c.usage(), 100, "released room is used again");
        c.check();

        // Pinning more than the capacity evicts everything.
        c.reserve_pinned(150);
        assert!(c.keys().is_empty());
        assert_eq!(c.usage(), 150);
        c.insert(1, 1, 1, Priority::High);
        assert!(c.keys().is_empty());
        c.release_pinned(1000);
        assert_eq!((c.pinned(), c.usage()), (0, 0), "release saturates");
        c.check();
    }

    #[test]
    fn set_capacity_shrink_evicts() {
        let c: LruCache<u64, u64> = LruCache::new(1000, 4);
        for k in 0..2000 {
            c.insert(k, k, 1 + k % 7, priority(k));
        }
        assert!(c.usage() <= 1000);
        c.set_capacity(50);
        assert_eq!(c.capacity(), 50);
        assert!(c.usage() <= 50);
        c.check();
        c.set_capacity(0);
        assert!(c.keys().is_empty());
        assert_eq!(c.usage(), 0);
        c.set_capacity(1000);
        for k in 0..2000 {
            c.insert(k, k, 1, Priority::Low);
        }
        assert!(c.usage() > 900, "room is back after growing");
        c.check();
    }

    #[test]
    fn oversized_entry_is_not_retained() {
        let c = cache(10);
        c.insert(1, 1, 4, Priority::Low);
        c.insert(2, 2, 11, Priority::High);
        assert_eq!(
            present(&c),
            [1],
            "oversized entry rejected without flushing"
        );
        c.insert(1, 100, 11, Priority::High);
        assert_eq!(c.get(&1), None, "the stale value is dropped");
        assert_eq!(c.usage(), 0);
        c.insert(3, 3, 10, Priority::Low);
        assert_eq!(present(&c), [3], "an entry of the whole budget fits");

        // With shards the bound is the shard's budget.
        let c: LruCache<u64, u64> = LruCache::new(40, 4);
        for k in 0..100 {
            c.insert(k, k, 11, Priority::High);
        }
        assert!(c.keys().is_empty());
        assert_eq!(c.usage(), 0);
        c.check();
    }

    #[test]
    fn threads_share_the_cache() {
        type Key = (u64, u64);
        let c: Arc<LruCache<Key, Arc<Key>>> = Arc::new(LruCache::new(4096, 16));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let c = c.clone();
                std::thread::spawn(move || {
                    let mut rng = Rng::new(t);
                    let (mut hits, mut misses) = (0u64, 0u64);
                    for _ in 0..20_000 {
                        let key = (rng.below(8), rng.below(256) * 4096);
                        match c.get(&key) {
                            Some(v) => {
                                assert_eq!(*v, key, "value under another key");
                                hits += 1;
                            }
                            None => {
                                misses += 1;
                                let charge = 1 + rng.below(64);
                                c.insert(key, Arc::new(key), charge, priority(rng.next_u64()));
                            }
                        }
                        match rng.below(100) {
                            0 => c.erase(&key),
                            1 => c.reserve_pinned(16),
                            2 => c.release_pinned(16),
                            _ => {}
                        }
                    }
                    (hits, misses)
                })
            })
            .collect();
        let mut hits = 0;
        for t in threads {
            hits += t.join().expect("thread").0;
        }
        assert!(hits > 0);
        c.release_pinned(u64::MAX);
        assert_eq!(c.pinned(), 0);
        assert!(c.usage() <= c.capacity());
        c.check();
        for key in c.keys() {
            assert_eq!(c.get(&key).as_deref(), Some(&key));
        }
    }

    /// An O(n) single-shard reference: entries (key, value, charge, pool,
    /// tick) with a recency tick; the victim is the entry of least (pool,
    /// tick), where pools are probation, protected, Medium, High; a hit on a
    /// probation entry makes it protected, and protected's least recent go
    /// back to probation, as most recent, while protected holds more than
    /// half of what the budget leaves after Medium and High.
    struct Model {
        capacity: u64,
        pinned: u64,
        tick: u64,
        entries: Vec<(u32, u32, u64, u8, u64)>,
    }

    fn model_pool(prio: Priority) -> u8 {
        match prio {
            Priority::Low => 0,
            Priority::Medium => 2,
            Priority::High => 3,
        }
    }

    impl Model {
        fn budget(&self) -> u64 {
            self.capacity.saturating_sub(self.pinned)
        }

        fn usage(&self) -> u64 {
            self.entries.iter().map(|e| e.2).sum()
        }

        fn pool_usage(&self, pools: &[u8]) -> u64 {
            let of = |e: &&(u32, u32, u64, u8, u64)| pools.contains(&e.3);
            self.entries.iter().filter(of).map(|e| e.2).sum()
        }

        fn demote(&mut self) {
            let low = self.budget().saturating_sub(self.pool_usage(&[2, 3]));
            while self.pool_usage(&[1]) > low / 2 {
                self.tick += 1;
                let tick = self.tick;
                let lru = self
                    .entries
                    .iter_mut()
                    .filter(|e| e.3 == 1)
                    .min_by_key(|e| e.4)
                    .expect("protected usage means protected entries");
                (lru.3, lru.4) = (0, tick);
            }
        }

        fn evict(&mut self) {
            self.demote();
            while self.usage() > self.budget() {
                let victim = (0..self.entries.len())
                    .min_by_key(|&i| (self.entries[i].3, self.entries[i].4))
                    .expect("usage > 0 means entries");
                self.entries.swap_remove(victim);
            }
        }

        fn get(&mut self, key: u32) -> Option<u32> {
            self.tick += 1;
            let tick = self.tick;
            let e = self.entries.iter_mut().find(|e| e.0 == key)?;
            e.4 = tick;
            let (value, promoted) = (e.1, e.3 == 0);
            if promoted {
                e.3 = 1;
                self.demote();
            }
            Some(value)
        }

        fn insert(&mut self, key: u32, value: u32, charge: u64, prio: Priority) {
            self.tick += 1;
            self.erase(key);
            if charge <= self.budget() {
                self.entries
                    .push((key, value, charge, model_pool(prio), self.tick));
                self.evict();
            }
        }

        fn erase(&mut self, key: u32) {
            self.entries.retain(|e| e.0 != key);
        }

        fn keys(&self) -> Vec<u32> {
            let mut k: Vec<u32> = self.entries.iter().map(|e| e.0).collect();
            k.sort_unstable();
            k
        }
    }

    #[test]
    fn matches_a_reference_model() {
        for seed in 0..20 {
            let mut rng = Rng::new(seed);
            let capacity = 20 + rng.below(80);
            let c = cache(capacity);
            let mut m = Model {
                capacity,
                pinned: 0,
                tick: 0,
                entries: Vec::new(),
            };
            for step in 0..3000 {
                let key = rng.below(64) as u32;
                match rng.below(100) {
                    0..=39 => assert_eq!(c.get(&key), m.get(key), "seed {seed} step {step}"),
                    40..=84 => {
                        let (value, charge) = (rng.next_u64() as u32, 1 + rng.below(16));
                        let prio = priority(rng.next_u64());
                        c.insert(key, value, charge, prio);
                        m.insert(key, value, charge, prio);
                    }
                    85..=92 => {
                        c.erase(&key);
                        m.erase(key);
                    }
                    93..=95 => {
                        let bytes = rng.below(40);
                        c.reserve_pinned(bytes);
                        m.pinned += bytes;
                        m.evict();
                    }
                    96..=98 => {
                        let bytes = rng.below(40);
                        c.release_pinned(bytes);
                        m.pinned = m.pinned.saturating_sub(bytes);
                    }
                    _ => {
                        let cap = 10 + rng.below(100);
                        c.set_capacity(cap);
                        m.capacity = cap;
                        m.evict();
                    }
                }
                assert_eq!(present(&c), m.keys(), "seed {seed} step {step}");
                assert_eq!(c.usage(), m.usage() + m.pinned, "seed {seed} step {step}");
            }
            c.check();
        }
    }

    #[test]
    fn hasher_is_deterministic_and_spreads_shards() {
        assert_eq!((1u64, 2u64).hash64(), (1u64, 2u64).hash64());
        assert_ne!((1u64, 2u64).hash64(), (2u64, 1u64).hash64());
        // The map's low bits spread too: block offsets of one file fill the
        // low 8 bits' buckets evenly.
        let mut low = [0u32; 256];
        for off in 0..4096u64 {
            low[((7u64, off * 4096).hash64() & 255) as usize] += 1;
        }
        assert!(
            low.iter().all(|&n| (2..=40).contains(&n)),
            "uneven low bits: {low:?}"
        );
        // Block offsets of a few files reach every one of 16 shards.
        let c: LruCache<(u64, u64), ()> = LruCache::new(1 << 20, 16);
        let mut seen = [0u32; 16];
        for f in 0..4u64 {
            for off in 0..256u64 {
                seen[c.shard_of(&(f, off * 4096)).1] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n > 20), "uneven shards: {seen:?}");
    }

    /// The pinned-bytes reservation and capacity changes racing with inserts,
    /// lookups and erases, under shuttle's schedulers: at every point where no
    /// call is in flight, the bound of the module docs holds and the shards are
    /// consistent; nothing panics or deadlocks.
    #[cfg(feature = "shuttle")]
    mod model_check {
        use std::sync::Arc;

        use super::*;
        use crate::sync::{check_schedules, thread};

        fn value(k: u32) -> u32 {
            k.wrapping_mul(31).wrapping_add(7)
        }

        /// `n` keys from each shard of `c`.
        fn keys(c: &LruCache<u32, u32>, n: usize) -> Vec<u32> {
            let shards = c.shards.len();
            let mut per_shard = vec![Vec::new(); shards];
            for k in 0.. {
                let i = c.shard_of(&k).1;
                if per_shard[i].len() < n {
                    per_shard[i].push(k);
                }
                if per_shard.iter().all(|s| s.len() == n) {
                    break;
                }
            }
            per_shard.concat()
        }

        /// The module's bound where no call is in flight: every shard within
        /// its budget (so the charges plus the pinned bytes within the
        /// capacity while the pinned bytes fit), no entry at all when they do
        /// not fit, and every cached value the one inserted under its key.
        fn check_quiescent(c: &LruCache<u32, u32>) {
            c.check();
            if c.pinned() <= c.capacity() {
                assert!(
                    c.usage() <= c.capacity(),
                    "usage {} over capacity {} with {} pinned",
                    c.usage(),
                    c.capacity(),
                    c.pinned()
                );
            } else {
                assert!(
                    c.keys().is_empty(),
                    "entries left with pinned bytes over capacity"
                );
                assert_eq!(c.usage(), c.pinned());
            }
            for k in c.keys() {
                assert_eq!(c.get(&k), Some(value(k)));
            }
        }

        /// Two cache users, a pinner and a resizer, in three phases with a
        /// quiescent check after each.
        fn pinned_and_capacity_race_inserts(shards: usize) {
            let c = Arc::new(LruCache::new(8, shards));
            // Six keys, spread evenly over the shards.
            let ks = Arc::new(keys(&c, 6 / c.shards.len()));
            let user = |t: usize, c: &Arc<LruCache<u32, u32>>, ks: &Arc<Vec<u32>>| {
                let (c, ks) = (c.clone(), ks.clone());
                thread::spawn(move || {
                    for (j, &k) in ks.iter().enumerate().skip(t).step_by(2) {
                        c.insert(k, value(k), 1 + (j % 3) as u64, priority(j as u64));
                        if let Some(v) = c.get(&k) {
                            assert_eq!(v, value(k));
                        }
                    }
                    c.erase(&ks[t]);
                })
            };
            let run = |handles: Vec<thread::JoinHandle<()>>| {
                for h in handles {
                    h.join().expect("cache thread");
                }
                check_quiescent(&c);
            };

            // Pinned bytes come and go and the capacity shrinks while the cache
            // fills.
            let (p, r) = (c.clone(), c.clone());
            run(vec![
                user(0, &c, &ks),
                user(1, &c, &ks),
                thread::spawn(move || {
                    p.reserve_pinned(3);
                    p.release_pinned(1);
                }),
                thread::spawn(move || r.set_capacity(6)),
            ]);
            assert_eq!((c.pinned(), c.capacity()), (2, 6));

            // Pinned bytes beyond the capacity: everything goes.
            let p = c.clone();
            run(vec![
                user(1, &c, &ks),
                thread::spawn(move || p.reserve_pinned(5)),
            ]);
            assert_eq!(c.pinned(), 7);

            // They shrink back while the capacity grows and shrinks.
            let (p, r) = (c.clone(), c.clone());
            run(vec![
                user(0, &c, &ks),
                thread::spawn(move || p.release_pinned(6)),
                thread::spawn(move || {
                    r.set_capacity(12);
                    r.set_capacity(5);
                }),
            ]);
            assert_eq!((c.pinned(), c.capacity()), (1, 5));
        }

        #[test]
        fn cache_one_shard() {
            check_schedules(|| pinned_and_capacity_race_inserts(1), 3);
        }

        #[test]
        fn cache_two_shards() {
            check_schedules(|| pinned_and_capacity_race_inserts(2), 3);
        }
    }
}
