//! The block cache: a sharded LRU cache charged in bytes, with priority pools so
//! that metadata (filters, top-level indexes, index partitions) is evicted after
//! data blocks.
//!
//! STUB: interface only; implementation in progress.

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

/// A sharded LRU cache of `V` values keyed by `K`, bounded by the sum of the
/// charges of its entries plus the bytes pinned outside it.
pub struct LruCache<K, V> {
    _p: std::marker::PhantomData<(K, V)>,
}

impl<K: Hash + Eq + Clone + Send, V: Clone + Send> LruCache<K, V> {
    /// A cache of `capacity` charge units split into `shards` shards (rounded up to a power of two).
    pub fn new(capacity: u64, shards: usize) -> Self {
        let _ = (capacity, shards);
        todo!()
    }
    /// Looks `key` up; a hit makes it most recently used.
    pub fn get(&self, key: &K) -> Option<V> {
        let _ = key;
        todo!()
    }
    /// Inserts (or replaces) `key`, then evicts until within capacity.
    pub fn insert(&self, key: K, value: V, charge: u64, priority: Priority) {
        let _ = (key, value, charge, priority);
        todo!()
    }
    /// Removes `key` if present.
    pub fn erase(&self, key: &K) {
        let _ = key;
        todo!()
    }
    /// Charges `bytes` pinned outside the cache against its capacity (evicting entries).
    pub fn reserve_pinned(&self, bytes: u64) {
        let _ = bytes;
        todo!()
    }
    /// Returns bytes reserved with `reserve_pinned`.
    pub fn release_pinned(&self, bytes: u64) {
        let _ = bytes;
        todo!()
    }
    /// Sum of charges plus pinned bytes.
    pub fn usage(&self) -> u64 {
        todo!()
    }
    /// Pinned bytes.
    pub fn pinned(&self) -> u64 {
        todo!()
    }
    /// Capacity.
    pub fn capacity(&self) -> u64 {
        todo!()
    }
    /// Changes the capacity, evicting as needed.
    pub fn set_capacity(&self, capacity: u64) {
        let _ = capacity;
        todo!()
    }
}
