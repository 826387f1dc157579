//! The block cache: a sharded LRU cache charged in bytes, with priority pools so
//! that metadata (filters, top-level indexes, index partitions) is evicted after
//! data blocks.
//!

use std::hash::Hash;

/// Priority of a cached entry. Entries of a lower priority are always evicted
/// before entries of a higher one; within a priority, least recently used first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Priority {
    /// Data blocks.
    Low,
    /// Index partitions.
    Medium,
    /// Filters and top-level indexes.
    High,
}

/// A cache of `V` values keyed by `K`, bounded by the sum of the charges of its
/// entries plus the bytes pinned outside it.
///
/// PLACEHOLDER: one lock, eviction by priority then insertion order; being
/// replaced by the sharded LRU.
pub struct LruCache<K, V> {
    inner: parking_lot::Mutex<Inner<K, V>>,
}

struct Inner<K, V> {
    capacity: u64,
    pinned: u64,
    usage: u64,
    tick: u64,
    map: std::collections::HashMap<K, (V, u64, Priority, u64)>,
}

impl<K: Hash + Eq + Clone + Send, V: Clone + Send> LruCache<K, V> {
    /// A cache of `capacity` charge units.
    pub fn new(capacity: u64, _shards: usize) -> Self {
        LruCache {
            inner: parking_lot::Mutex::new(Inner {
                capacity,
                pinned: 0,
                usage: 0,
                tick: 0,
                map: Default::default(),
            }),
        }
    }
    /// Looks `key` up; a hit makes it most recently used.
    pub fn get(&self, key: &K) -> Option<V> {
        let mut g = self.inner.lock();
        g.tick += 1;
        let t = g.tick;
        let e = g.map.get_mut(key)?;
        e.3 = t;
        Some(e.0.clone())
    }
    /// Inserts (or replaces) `key`, then evicts until within capacity.
    pub fn insert(&self, key: K, value: V, charge: u64, priority: Priority) {
        let mut g = self.inner.lock();
        g.tick += 1;
        let t = g.tick;
        if let Some(old) = g.map.insert(key, (value, charge, priority, t)) {
            g.usage -= old.1;
        }
        g.usage += charge;
        g.evict();
    }
    /// Removes `key` if present.
    pub fn erase(&self, key: &K) {
        let mut g = self.inner.lock();
        if let Some(old) = g.map.remove(key) {
            g.usage -= old.1;
        }
    }
    /// Charges `bytes` pinned outside the cache against its capacity.
    pub fn reserve_pinned(&self, bytes: u64) {
        let mut g = self.inner.lock();
        g.pinned += bytes;
        g.evict();
    }
    /// Returns bytes reserved with `reserve_pinned`.
    pub fn release_pinned(&self, bytes: u64) {
        let mut g = self.inner.lock();
        g.pinned = g.pinned.saturating_sub(bytes);
    }
    /// Sum of charges plus pinned bytes.
    pub fn usage(&self) -> u64 {
        let g = self.inner.lock();
        g.usage + g.pinned
    }
    /// Pinned bytes.
    pub fn pinned(&self) -> u64 {
        self.inner.lock().pinned
    }
    /// Capacity.
    pub fn capacity(&self) -> u64 {
        self.inner.lock().capacity
    }
    /// Changes the capacity, evicting as needed.
    pub fn set_capacity(&self, capacity: u64) {
        let mut g = self.inner.lock();
        g.capacity = capacity;
        g.evict();
    }
}

impl<K: Hash + Eq + Clone, V> Inner<K, V> {
    fn evict(&mut self) {
        while self.usage + self.pinned > self.capacity && !self.map.is_empty() {
            let victim = self
                .map
                .iter()
                .min_by_key(|(_, e)| (e.2, e.3))
                .map(|(k, _)| k.clone());
            if let Some(k) = victim {
                if let Some(old) = self.map.remove(&k) {
                    self.usage -= old.1;
                }
            }
        }
    }
}
