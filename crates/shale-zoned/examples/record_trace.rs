//! Records a write trace of the engine on `MemFs`, for `ftl_replay`.

use std::path::Path;
use std::sync::Arc;

use shale::{Db, Options, WriteBatch, WriteOptions};
use shale_env::{encode_trace, MemFs, TraceFs};

/// Records a larger trace with the engine's default options (64 MiB
/// memtables, 2 MiB tables) on `MemFs`, like `shale load` (batches of 1,000,
/// not synced; PASSES > 1 overwrites every key again, in a
/// scrambled order, that many times over; the key count must not be a
/// multiple of 7919), and saves it for `examples/ftl_replay.rs`:
///
/// ```text
/// cargo run --release -p shale-zoned --example record_trace -- 2000000 1 /tmp/load.trace
/// ```
fn main() {
    let mut args = std::env::args().skip(1);
    let mut arg = |default: &str| args.next().unwrap_or_else(|| default.to_string());
    let (keys, passes, out) = (arg("1000000"), arg("1"), arg("load.trace"));
    let (Ok(keys), Ok(passes)) = (keys.parse::<u64>(), passes.parse::<u64>()) else {
        eprintln!("usage: record_trace [KEYS] [PASSES] [OUT]");
        std::process::exit(2);
    };
    let traced = Arc::new(TraceFs::new(Arc::new(MemFs::new())));
    let options = Options::default().fs(traced.clone());
    let db = Db::open(Path::new("/db"), options).unwrap_or_else(|e| fail("open", e));
    let mut batch = WriteBatch::new();
    for i in 0..keys * passes {
        // Each pass writes every key once; later passes in a scrambled order.
        let k = if i < keys {
            i
        } else {
            (i % keys) * 7919 % keys
        };
        let key = k.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes();
        let mut key32 = [0u8; 32];
        for (i, chunk) in key32.chunks_mut(8).enumerate() {
            chunk.copy_from_slice(&(u64::from_be_bytes(key) ^ i as u64).to_be_bytes());
        }
        batch.put(&key32, &[(k % 251) as u8; 110]);
        if batch.len() == 1000 {
            db.write(std::mem::take(&mut batch), &WriteOptions::default())
                .unwrap_or_else(|e| fail("write", e));
        }
    }
    db.write(batch, &WriteOptions::default())
        .unwrap_or_else(|e| fail("write", e));
    db.settle().unwrap_or_else(|e| fail("settle", e));
    db.close().unwrap_or_else(|e| fail("close", e));
    let events = traced.take_events();
    std::fs::write(&out, encode_trace(&events)).unwrap_or_else(|e| fail("save the trace", e));
    eprintln!("{} events saved to {out}", events.len());
}

fn fail(what: &str, e: impl std::fmt::Display) -> ! {
    eprintln!("record_trace: {what}: {e}");
    std::process::exit(1);
}
