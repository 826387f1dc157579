//! Injected I/O failures: an error at any step of writing, flushing, compacting
//! or opening surfaces as an error, and nothing acknowledged is lost.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::scan_all;
use shale::env::{FaultFs, FaultRule, FileSystem, MemFs, OpKind};
use shale::{Db, Error, Options, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// What a run acknowledged, and the one write in flight when it failed: that
/// write's outcome is unknown, so either state of its key is correct.
#[derive(Default)]
struct Outcome {
    acked: Model,
    in_flight: Option<(Vec<u8>, Option<Vec<u8>>)>,
}

fn options(fs: Arc<dyn FileSystem>) -> Options {
    Options {
        fs,
        write_buffer_size: 4 << 10,
        block_size: 512,
        index_partition_size: 256,
        ..Options::default()
    }
}

/// Opens, writes, flushes, compacts and closes; records each acknowledged write
/// in `out`. Stops at the first error.
fn workload(fs: Arc<dyn FileSystem>, out: &mut Outcome) -> Result<(), Error> {
    let db = Db::open("/db", options(fs))?;
    for i in 0..60u32 {
        let mut b = WriteBatch::new();
        let k = format!("key{:03}", i % 40).into_bytes();
        let v = format!("value-{i}-{}", "x".repeat(40)).into_bytes();
        b.put(&k, &v);
        out.in_flight = Some((k.clone(), Some(v.clone())));
        db.write(b, &WriteOptions { sync: i % 9 == 0 })?;
        out.in_flight = None;
        out.acked.insert(k, v);
        if i == 25 {
            db.flush()?;
        }
        if i == 40 {
            db.compact_all()?;
        }
    }
    out.in_flight = Some((b"key005".to_vec(), None));
    db.delete(b"key005")?;
    out.in_flight = None;
    out.acked.remove(&b"key005"[..]);
    db.flush()?;
    db.close()
}

fn check_recovers(mem: Arc<MemFs>, out: &Outcome, what: &str) {
    let db = Db::open("/db", options(mem)).unwrap_or_else(|e| panic!("{what}: reopen failed: {e}"));
    let state = scan_all(&db);
    for (k, v) in &out.acked {
        if let Some((fk, fv)) = &out.in_flight {
            if fk == k && state.get(k) == fv.as_ref() {
                continue;
            }
        }
        assert_eq!(
            state.get(k),
            Some(v),
            "{what}: acknowledged write of {} lost",
            String::from_utf8_lossy(k)
        );
    }
    // Nothing that was never written appears.
    for k in state.keys() {
        assert!(k.starts_with(b"key"), "{what}: unexpected key {k:?}");
    }
    db.close().expect("close");
}

#[test]
fn an_error_at_every_step_loses_nothing_acknowledged() {
    // Count the steps of a clean run.
    let mem = Arc::new(MemFs::new());
    let fault = FaultFs::new(mem.clone());
    let mut clean = Outcome::default();
    workload(fault.clone(), &mut clean).expect("clean run");
    let steps = fault.ops_seen(OpKind::Any);
    assert!(
        steps > 50,
        "the workload performs many file-system operations ({steps})"
    );

    let stride = if common::long_tests() {
        1
    } else {
        (steps / 120).max(1)
    };
    let mut failures_seen = 0;
    for skip in (0..steps).step_by(stride as usize) {
        let mem = Arc::new(MemFs::new());
        let fault = FaultFs::new(mem.clone());
        fault.inject(FaultRule::io(OpKind::Any, skip).persistent());
        let mut out = Outcome::default();
        let result = workload(fault.clone(), &mut out);
        if fault.faults_triggered() > 0 {
            assert!(
                result.is_err(),
                "step {skip}: an injected fault was swallowed"
            );
            failures_seen += 1;
        }
        check_recovers(mem, &out, &format!("fault at step {skip}"));
    }
    assert!(failures_seen > 10);
}

#[test]
fn failed_wal_sync_poisons_the_database() {
    let mem = Arc::new(MemFs::new());
    let fault = FaultFs::new(mem.clone());
    let db = Db::open("/db", options(fault.clone())).expect("open");
    db.put(b"a", b"1").expect("put");
    fault.inject(FaultRule::io(OpKind::SyncAppend, 0));
    let mut b = WriteBatch::new();
    b.put(b"b", b"2");
    assert!(db.write(b, &WriteOptions { sync: true }).is_err());
    fault.clear();
    let err = db.put(b"c", b"3").expect_err("poisoned");
    assert!(matches!(err, Error::Poisoned { .. }), "{err}");
    assert!(db.get(b"a").expect("reads still work").is_some());
    drop(db);
    let db = Db::open("/db", options(mem)).expect("reopen");
    assert_eq!(db.get(b"a").expect("get"), Some(b"1".to_vec()));
    assert_eq!(db.get(b"c").expect("get"), None);
}

#[test]
fn a_full_disk_during_flush_is_an_error_and_the_database_reopens_intact() {
    let mem = Arc::new(MemFs::new());
    let fault = FaultFs::new(mem.clone());
    let db = Db::open("/db", options(fault.clone())).expect("open");
    let mut out = Outcome::default();
    for i in 0..30u32 {
        let k = format!("key{i:03}").into_bytes();
        db.put(&k, b"v").expect("put");
        out.acked.insert(k, b"v".to_vec());
    }
    fault.inject(FaultRule::no_space(OpKind::WriteObject, 0).persistent());
    let err = db.flush().expect_err("flush must fail on a full disk");
    assert!(
        matches!(err, Error::Poisoned { .. } | Error::Io { .. }),
        "{err}"
    );
    drop(db);
    fault.clear();
    check_recovers(mem, &out, "after ENOSPC");
}
