//! The event listener: the events a flush, a compaction, a write stall and a
//! background failure raise, in order.

use std::sync::Arc;

use parking_lot::Mutex;
use shale::env::{FaultFs, FaultRule, FileSystem, MemFs, OpKind};
use shale::events::{CompactionReason, TableReason};
use shale::{Db, Event, EventListener, Options};

/// Keeps every event it is told of.
#[derive(Default)]
struct Recorder(Mutex<Vec<Event>>);

impl EventListener for Recorder {
    fn on_event(&self, event: &Event) {
        self.0.lock().push(event.clone());
    }
}

fn options(fs: Arc<dyn FileSystem>, recorder: &Arc<Recorder>) -> Options {
    Options::default()
        .fs(fs)
        .listeners(vec![recorder.clone() as Arc<dyn EventListener>])
}

fn put_range(db: &Db, from: u32, to: u32) {
    for i in from..to {
        db.put(format!("key{i:06}").as_bytes(), &[7u8; 100])
            .expect("put");
    }
}

/// One line per event, with what a test can predict (no sizes or times).
fn describe(e: &Event) -> String {
    match e {
        Event::FlushBegin { job, .. } => format!("flush-begin {job}"),
        Event::FlushEnd { job, error, .. } => format!("flush-end {job} ok={}", error.is_none()),
        Event::CompactionBegin {
            job,
            reason,
            input_level,
            output_level,
            input_tables,
            trivial_move,
            ..
        } => format!(
            "compaction-begin {job} {reason:?} L{input_level}->L{output_level} \
             tables={input_tables} trivial={trivial_move}"
        ),
        Event::CompactionEnd {
            job,
            reason,
            input_level,
            output_level,
            error,
            ..
        } => format!(
            "compaction-end {job} {reason:?} L{input_level}->L{output_level} ok={}",
            error.is_none()
        ),
        Event::TableCreated {
            job, level, reason, ..
        } => format!("table-created {job} L{level} {reason:?}"),
        Event::TableDeleted { .. } => "table-deleted".to_string(),
        Event::StallBegin { condition, cause } => format!("stall-begin {condition:?} {cause:?}"),
        Event::StallEnd {
            condition, cause, ..
        } => format!("stall-end {condition:?} {cause:?}"),
        Event::BackgroundError { .. } => "background-error".to_string(),
        other => format!("{other:?}"),
    }
}

#[test]
fn a_flush_and_a_manual_compaction_raise_their_sequence() {
    let recorder = Arc::new(Recorder::default());
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs, &recorder)).expect("open");
    put_range(&db, 0, 200);
    db.flush().expect("flush");
    put_range(&db, 100, 300);
    db.flush().expect("flush");
    db.compact_all().expect("compact");
    db.close().expect("close");

    let events = recorder.0.lock().clone();
    let lines: Vec<String> = events.iter().map(describe).collect();
    assert_eq!(
        lines,
        [
            "flush-begin 1",
            "table-created 1 L0 Flush",
            "flush-end 1 ok=true",
            "flush-begin 2",
            "table-created 2 L0 Flush",
            "flush-end 2 ok=true",
            "compaction-begin 3 Manual L0->L6 tables=2 trivial=false",
            "table-created 3 L6 Compaction",
            "compaction-end 3 Manual L0->L6 ok=true",
            "table-deleted",
            "table-deleted",
        ],
        "{events:#?}"
    );

    // The figures agree with each other: the flushes' tables are the ones
    // deleted, and the compaction read them and wrote its table.
    let created = |level: usize| -> Vec<(u64, u64)> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::TableCreated {
                    number,
                    level: l,
                    bytes,
                    ..
                } if *l == level => Some((*number, *bytes)),
                _ => None,
            })
            .collect()
    };
    let l0 = created(0);
    let mut deleted: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            Event::TableDeleted { number } => Some(*number),
            _ => None,
        })
        .collect();
    deleted.sort_unstable();
    let mut flushed: Vec<u64> = l0.iter().map(|(n, _)| *n).collect();
    flushed.sort_unstable();
    assert_eq!(deleted, flushed);
    let end = events
        .iter()
        .find_map(|e| match e {
            Event::CompactionEnd {
                bytes_read,
                bytes_written,
                output_tables,
                ..
            } => Some((*bytes_read, *bytes_written, *output_tables)),
            _ => None,
        })
        .expect("compaction end");
    assert_eq!(end.0, l0.iter().map(|(_, b)| b).sum::<u64>());
    assert_eq!(end.1, created(6).iter().map(|(_, b)| b).sum::<u64>());
    assert_eq!(end.2, 1);
    for e in &events {
        if let Event::FlushEnd { bytes, .. } = e {
            assert!(*bytes > 0, "{e:?}");
        }
    }
}

#[test]
fn an_automatic_compaction_pairs_its_begin_and_end() {
    let recorder = Arc::new(Recorder::default());
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let opts = (options(fs, &recorder)).l0_compaction_trigger(Some(2));
    let db = Db::open("/db", opts).expect("open");
    put_range(&db, 0, 200);
    db.flush().expect("flush");
    put_range(&db, 100, 300);
    db.flush().expect("flush");
    db.wait_for_compactions().expect("compactions");
    assert_eq!(db.metrics().running_compactions, 0);
    db.close().expect("close");

    let events = recorder.0.lock().clone();
    let begin = events
        .iter()
        .find_map(|e| match e {
            Event::CompactionBegin {
                job,
                reason,
                input_level,
                input_tables,
                ..
            } => Some((*job, *reason, *input_level, *input_tables)),
            _ => None,
        })
        .expect("a compaction began");
    assert_eq!(begin.1, CompactionReason::Automatic);
    assert_eq!((begin.2, begin.3), (0, 2), "{events:#?}");
    let end = events
        .iter()
        .position(|e| matches!(e, Event::CompactionEnd { job, error: None, .. } if *job == begin.0))
        .expect("the compaction ended without error");
    let tables = events[..end]
        .iter()
        .filter(|e| {
            matches!(e, Event::TableCreated { job, reason: TableReason::Compaction, .. } if *job == begin.0)
        })
        .count();
    assert!(
        matches!(&events[end], Event::CompactionEnd { output_tables, .. } if *output_tables == tables),
        "{events:#?}"
    );
}

#[test]
fn a_write_stall_begins_once_and_ends_at_close() {
    let recorder = Arc::new(Recorder::default());
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    // A soft compaction-debt limit of 0 delays every write group.
    let opts = (options(fs, &recorder)).soft_pending_compaction_bytes(0);
    let db = Db::open("/db", opts).expect("open");
    put_range(&db, 0, 5);
    let m = db.metrics();
    assert_eq!(m.write_stalled, 1);
    assert_eq!(m.stall_count, 5);
    db.close().expect("close");
    let lines: Vec<String> = recorder.0.lock().iter().map(describe).collect();
    assert_eq!(
        lines,
        [
            "stall-begin Delayed PendingCompactionBytes",
            "stall-end Delayed PendingCompactionBytes",
        ]
    );
}

#[test]
fn a_failed_flush_raises_a_background_error_and_its_end() {
    let recorder = Arc::new(Recorder::default());
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let db = Db::open("/db", options(fault.clone(), &recorder)).expect("open");
    put_range(&db, 0, 50);
    fault.inject(FaultRule::io(OpKind::WriteObject, 0).persistent());
    assert!(db.flush().is_err());
    assert!(db.close().is_err(), "the database is poisoned");
    let events = recorder.0.lock().clone();
    let lines: Vec<String> = events.iter().map(describe).collect();
    assert_eq!(
        lines,
        ["flush-begin 1", "background-error", "flush-end 1 ok=false"],
        "{events:#?}"
    );
    assert!(
        matches!(&events[1], Event::BackgroundError { error } if error.to_string().contains("inject")),
        "{events:#?}"
    );
}
