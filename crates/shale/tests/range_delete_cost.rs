//! The cost of many range deletions: each `delete_range` is one small write,
//! so thousands of them in one memtable must cost about as much as thousands
//! of puts (milliseconds), not a rebuild of all the memtable's range
//! deletions per write (quadratic: about 15 s for 4,000 in a release build
//! when this test was written).

use std::sync::Arc;
use std::time::{Duration, Instant};

use shale::env::MemFs;
use shale::{Db, Options, ReadOptions};

#[test]
fn thousands_of_range_deletions_in_one_memtable_stay_cheap() {
    let fs = Arc::new(MemFs::new());
    // One memtable for all of them.
    let db = Db::open("/db", Options::default().fs(fs).write_buffer_size(64 << 20)).expect("open");
    let key = |i: u32| format!("k{i:08}").into_bytes();
    for i in 0..10_000u32 {
        db.put(&key(i), b"v").expect("put");
    }
    let n = 4_000u32;
    let start = Instant::now();
    for i in 0..n {
        // Disjoint ranges of one key each: [k(2i), k(2i+1)).
        db.delete_range(&key(2 * i), &key(2 * i + 1))
            .expect("delete_range");
    }
    let took = start.elapsed();
    // Right: every even key below 2n is gone, the odd ones stay.
    for i in (0..10_000u32).step_by(97) {
        let want = (i % 2 == 1 || i >= 2 * n).then(|| b"v".to_vec());
        assert_eq!(db.get(&key(i)).expect("get"), want, "key {i}");
    }
    let mut it = db.iter(&ReadOptions::default()).expect("iter");
    it.seek_to_first();
    let mut rows = 0;
    while it.valid() {
        rows += 1;
        it.next();
    }
    it.status().expect("scan");
    assert_eq!(rows, 10_000 - n as usize);
    // Thousands of times the cost of a put would be a few milliseconds; the
    // bound leaves room for a slow machine and an unoptimized build.
    assert!(
        took < Duration::from_secs(3),
        "{n} range deletions took {took:?}"
    );
}
