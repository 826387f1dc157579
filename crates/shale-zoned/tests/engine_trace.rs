//! Records a write trace of the engine on `MemFs` and replays it on the
//! conventional-SSD model at 7% and 28% over-provisioning.

use std::path::Path;
use std::sync::Arc;

use shale::{Db, Options, WriteBatch, WriteOptions};
use shale_env::{decode_trace, encode_trace, MemFs, TraceEvent, TraceFs};
use shale_zoned::ftl::{peak_live_pages, replay_trace, ReplayOptions, FTL_PAGE_SIZE};

/// Writes `keys` keys `passes` times over, each pass in a scrambled order
/// (values of 100 bytes),
/// in synced batches of 100, with small memtables and tables so that flushes
/// and compactions run many times.
fn engine_trace(keys: u64, passes: u64) -> Vec<TraceEvent> {
    let traced = Arc::new(TraceFs::new(Arc::new(MemFs::new())));
    let options = Options::default()
        .fs(traced.clone())
        .write_buffer_size(64 << 10)
        .target_file_size_base(64 << 10)
        .base_level_bytes(256 << 10)
        .l0_compaction_trigger(Some(4))
        .block_cache_bytes(1 << 20);
    let db = Db::open(Path::new("/db"), options).expect("open");
    let mut batch = WriteBatch::new();
    for i in 0..passes * keys {
        // A bijection of 0..keys (keys not a multiple of the prime 7919).
        let k = (i % keys) * 7919 % keys;
        let key = format!("key{:016x}", k.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let value = [(i % 251) as u8; 100];
        batch.put(key.as_bytes(), &value);
        if batch.len() == 100 {
            db.write(std::mem::take(&mut batch), &WriteOptions::SYNC)
                .expect("write");
        }
    }
    db.write(batch, &WriteOptions::SYNC).expect("write");
    db.settle().expect("settle");
    db.close().expect("close");
    traced.take_events()
}

#[test]
fn the_engine_trace_replays_on_a_conventional_ssd() {
    let events = engine_trace(8_001, 8);
    let decoded = decode_trace(&encode_trace(&events)).expect("round trip");
    assert_eq!(decoded, events);

    // Host pages as documented: each file's pages once, plus a partial last
    // page at every sync or finish that found new bytes in it (at most one
    // per sync/finish event).
    let mut full_pages = 0u64;
    let mut sizes = std::collections::HashMap::new();
    let mut syncs = 0u64;
    for e in &events {
        match e {
            TraceEvent::Write { file, offset, len } => {
                sizes.insert(*file, offset + len);
            }
            TraceEvent::Sync { .. } | TraceEvent::Finish { .. } => syncs += 1,
            _ => {}
        }
    }
    for size in sizes.values() {
        full_pages += size / FTL_PAGE_SIZE;
    }
    let bytes: u64 = sizes.values().sum();

    let mut wafs = Vec::new();
    for (op, trim) in [(0.07, true), (0.28, true), (0.07, false), (0.28, false)] {
        let options = ReplayOptions {
            pages_per_block: 16,
            trim,
            ..ReplayOptions::new(op)
        };
        let r = replay_trace(&events, &options).expect("replay");
        eprintln!(
            "op {op} trim {trim}: {} events, {} bytes written, peak live {} pages, logical {} pages, \
             physical {} pages, peak utilisation {:.3}, host pages {}, gc pages {}, erases {}, \
             trimmed {}, WAF {:.3}",
            events.len(),
            r.bytes_written,
            peak_live_pages(&events),
            r.logical_pages,
            r.physical_pages,
            r.peak_utilisation,
            r.stats.host_pages,
            r.stats.gc_pages,
            r.stats.erases,
            r.stats.trimmed_pages,
            r.waf()
        );
        assert_eq!(r.bytes_written, bytes);
        assert!(r.stats.host_pages >= full_pages);
        assert!(r.stats.host_pages <= full_pages + syncs);
        assert!(r.stats.host_pages >= bytes.div_ceil(FTL_PAGE_SIZE));
        assert!(r.peak_utilisation > 0.85 && r.peak_utilisation <= 0.9);
        assert!(r.waf() >= 1.0);
        wafs.push(r.waf());
    }
    // With TRIM, files that die whole leave little to relocate (the WAF may
    // be 1 at both); without it, the device relocates dead files' pages.
    assert!(
        wafs[0] >= wafs[1],
        "with TRIM, 7%: {}, 28%: {}",
        wafs[0],
        wafs[1]
    );
    assert!(
        wafs[2] > wafs[3],
        "without TRIM, 7%: {}, 28%: {}",
        wafs[2],
        wafs[3]
    );
    assert!(wafs[2] > wafs[0], "TRIM helps: {} vs {}", wafs[2], wafs[0]);
}
