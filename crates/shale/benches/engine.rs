//! Micro-benchmarks of the engine's CPU per operation, where no device read
//! happens: a Get whose blocks are all in the block cache (from a table, from
//! the memtable, of an absent key), a pinned Get, a `multi_get` of 100 keys
//! (on the read pool, and on the calling thread alone) and a Put into the
//! memtable. The database lives in a `MemFs`, so the
//! figures are the engine's own work.
//!
//! `cargo bench -p shale --bench engine` measures; CI runs each benchmark
//! once (`cargo test -p shale --bench engine`) so that they keep working.

// `criterion_group!` defines a function it cannot document.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use shale::env::MemFs;
use shale::{Db, Options, WriteBatch, WriteOptions};

/// Keys in the table; every one is read once before measuring, so that all
/// blocks are cached.
const KEYS: u64 = 100_000;

/// A 32-byte key (as a blockchain client's hashes), `i` spread over the key
/// space by a multiplicative hash so that neighbours are far apart.
fn key(i: u64) -> [u8; 32] {
    let mut k = [0u8; 32];
    let h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    k[..8].copy_from_slice(&h.to_be_bytes());
    k[8..16].copy_from_slice(&i.to_be_bytes());
    k
}

/// A database of `KEYS` keys with 32-byte values in the last level, its
/// blocks all cached, with `read_threads` for multi_get.
fn cached_db(read_threads: usize) -> Db {
    let db = Db::open(
        "/bench",
        Options::default()
            .fs(Arc::new(MemFs::new()))
            .block_cache_bytes(256 << 20)
            .read_threads(read_threads),
    )
    .expect("open");
    let mut b = WriteBatch::new();
    for i in 0..KEYS {
        b.put(&key(i), &[7u8; 32]);
        if b.len() == 1000 {
            db.write(std::mem::take(&mut b), &WriteOptions::default())
                .expect("write");
        }
    }
    db.write(b, &WriteOptions::default()).expect("write");
    db.compact_all().expect("compact");
    for i in 0..KEYS {
        db.get(&key(i)).expect("warm");
    }
    db
}

/// Cycles through the keys in a fixed random order.
struct Keys(u64);

impl Keys {
    fn next(&mut self) -> [u8; 32] {
        self.0 = self.0.wrapping_add(0x5851_f42d_4c95_7f2d);
        key(self.0 % KEYS)
    }
}

fn gets(c: &mut Criterion) {
    let db = cached_db(Options::default().read_threads);
    let mut ks = Keys(1);
    c.bench_function("get/table_cached", |b| {
        b.iter(|| black_box(db.get(&ks.next()).expect("get")))
    });
    c.bench_function("get_pinned/table_cached", |b| {
        b.iter(|| black_box(db.get_pinned(&ks.next()).expect("get")))
    });
    c.bench_function("get/absent", |b| {
        b.iter(|| {
            let mut k = ks.next();
            k[31] ^= 0xff;
            black_box(db.get(&k).expect("get"))
        })
    });
    c.bench_function("multi_get/100_table_cached", |b| {
        b.iter_batched(
            || (0..100).map(|_| ks.next()).collect::<Vec<_>>(),
            |batch| black_box(db.multi_get(&batch).expect("multi_get")),
            BatchSize::SmallInput,
        )
    });
    {
        // The same batches looked up on the calling thread alone: what the
        // read pool costs when no lookup waits for the device.
        let inline = cached_db(0);
        c.bench_function("multi_get/100_table_cached_inline", |b| {
            b.iter_batched(
                || (0..100).map(|_| ks.next()).collect::<Vec<_>>(),
                |batch| black_box(inline.multi_get(&batch).expect("multi_get")),
                BatchSize::SmallInput,
            )
        });
    }
    db.put(b"in the memtable", &[1u8; 32]).expect("put");
    c.bench_function("get/memtable", |b| {
        b.iter(|| black_box(db.get(b"in the memtable").expect("get")))
    });
}

fn puts(c: &mut Criterion) {
    let db = Db::open("/bench", Options::default().fs(Arc::new(MemFs::new()))).expect("open");
    let mut i = 0u64;
    c.bench_function("put/memtable", |b| {
        b.iter(|| {
            i += 1;
            db.put(&key(i), &[7u8; 32]).expect("put")
        })
    });
}

criterion_group!(benches, gets, puts);
criterion_main!(benches);
