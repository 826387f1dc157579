//! Micro-benchmarks of the pieces of a cached Get and of a write: a seek in a
//! 4 KiB data block (restart interval 16, as by default), a locator lookup
//! (a table-format-3 index partition), a filter probe (a binary fuse filter
//! at the default 9 bits per key) and a memtable insert, on 32-byte hash
//! keys.
//!
//! `cargo bench -p shale --features bench-internals --bench internals`
//! measures; CI runs each once (`cargo test ... --bench internals`).

// `criterion_group!` defines a function it cannot document.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use shale::bench_api::{DataBlock, Filter, LocatorIndex, Memtable};

/// A 32-byte key, `i` spread over the key space by a multiplicative hash.
fn key(i: u64) -> Vec<u8> {
    let mut k = vec![0u8; 32];
    let h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    k[..8].copy_from_slice(&h.to_be_bytes());
    k[8..16].copy_from_slice(&i.to_be_bytes());
    k
}

fn sorted_keys(n: u64) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = (0..n).map(key).collect();
    keys.sort();
    keys
}

/// Cycles through `keys` in a fixed scattered order.
struct Picker(u64);

impl Picker {
    fn pick<'a>(&mut self, keys: &'a [Vec<u8>]) -> &'a [u8] {
        self.0 = self.0.wrapping_add(0x5851_f42d_4c95_7f2d);
        &keys[(self.0 % keys.len() as u64) as usize]
    }
}

fn block_seek(c: &mut Criterion) {
    // 54 entries of a 40-byte internal key and a 32-byte value: about 4 KiB.
    let keys = sorted_keys(54);
    let block = DataBlock::new(&keys, 32, 16);
    assert!(keys.iter().all(|k| block.seek(k)), "every key is found");
    let mut p = Picker(1);
    c.bench_function("block/seek_4k_restart16", |b| {
        b.iter(|| black_box(block.seek(p.pick(&keys))))
    });
}

fn locator(c: &mut Criterion) {
    // A partition's worth of blocks: 4,000 keys in blocks of 54.
    let keys = sorted_keys(4000);
    let loc = LocatorIndex::new(&keys, 54);
    assert_eq!(loc.find(&keys[54 * 3 + 5]), 3, "a key's block");
    let mut p = Picker(2);
    c.bench_function("locator/find_74_blocks", |b| {
        b.iter(|| black_box(loc.find(p.pick(&keys))))
    });
}

fn filter(c: &mut Criterion) {
    let keys = sorted_keys(4000);
    let f = Filter::new(&keys, 9);
    assert!(keys.iter().all(|k| f.may_contain(k)), "no false negative");
    let absent: Vec<Vec<u8>> = (1_000_000..1_004_000).map(key).collect();
    let mut p = Picker(3);
    c.bench_function("filter/fuse_probe_present", |b| {
        b.iter(|| black_box(f.may_contain(p.pick(&keys))))
    });
    c.bench_function("filter/fuse_probe_absent", |b| {
        b.iter(|| black_box(f.may_contain(p.pick(&absent))))
    });
}

fn memtable(c: &mut Criterion) {
    let mut mem = Memtable::default();
    let mut i = 0u64;
    c.bench_function("memtable/insert_32b_key_32b_value", |b| {
        b.iter(|| {
            i += 1;
            if i.is_multiple_of(1_000_000) {
                // A memtable is flushed long before this; keep memory bounded.
                mem = Memtable::default();
            }
            mem.insert(&key(i), &[7u8; 32]);
        })
    });
    assert!(mem.bytes() > 0);
}

criterion_group!(benches, block_seek, locator, filter, memtable);
criterion_main!(benches);
