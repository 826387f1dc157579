//! The instructions of a cached Get, counted exactly: `scripts/get-instructions.sh`
//! runs this under callgrind, collecting only inside `measure_gets` and
//! `measure_absent`, and divides by the number of Gets. Instruction counts do
//! not move with the machine's load, so they compare builds where timings
//! cannot.
//!
//! The database is `engine`'s criterion bench's: 100,000 32-byte hash keys with
//! 32-byte values, compacted into the last level, every block cached.
//!
//! `cargo run --release -p shale --example cached_get -- GETS [RESTART_INTERVAL]`

use std::hint::black_box;
use std::sync::Arc;

use shale::env::MemFs;
use shale::{Db, Options, WriteBatch, WriteOptions};

const KEYS: u64 = 100_000;

fn key(i: u64) -> [u8; 32] {
    let mut k = [0u8; 32];
    let h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    k[..8].copy_from_slice(&h.to_be_bytes());
    k[8..16].copy_from_slice(&i.to_be_bytes());
    k
}

/// `n` Gets of present keys in a scattered order; returns how many were found.
#[inline(never)]
fn measure_gets(db: &Db, n: u64) -> shale::Result<u64> {
    let mut found = 0;
    let mut s = 1u64;
    for _ in 0..n {
        s = s.wrapping_add(0x5851_f42d_4c95_7f2d);
        found += u64::from(black_box(db.get(&key(s % KEYS))?).is_some());
    }
    Ok(found)
}

/// `n` Gets of absent keys (each beside a present one).
#[inline(never)]
fn measure_absent(db: &Db, n: u64) -> shale::Result<u64> {
    let mut found = 0;
    let mut s = 1u64;
    for _ in 0..n {
        s = s.wrapping_add(0x5851_f42d_4c95_7f2d);
        let mut k = key(s % KEYS);
        k[31] ^= 0xff;
        found += u64::from(black_box(db.get(&k)?).is_some());
    }
    Ok(found)
}

fn main() -> shale::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let restart_interval = args.next().and_then(|a| a.parse().ok()).unwrap_or(16);
    let db = Db::open(
        "/bench",
        Options::default()
            .fs(Arc::new(MemFs::new()))
            .block_cache_bytes(256 << 20)
            .block_restart_interval(restart_interval),
    )?;
    let mut b = WriteBatch::new();
    for i in 0..KEYS {
        b.put(&key(i), &[7u8; 32]);
        if b.len() == 1000 {
            db.write(std::mem::take(&mut b), &WriteOptions::default())?;
        }
    }
    db.write(b, &WriteOptions::default())?;
    db.compact_all()?;
    for i in 0..KEYS {
        db.get(&key(i))?;
    }
    let found = measure_gets(&db, n)?;
    let absent_found = measure_absent(&db, n)?;
    assert_eq!(found, n, "every present key is found");
    assert_eq!(absent_found, 0, "no absent key is found");
    Ok(())
}
