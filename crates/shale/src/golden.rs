//! Golden fixtures of the log formats: a WAL and a manifest written by format
//! version 1, committed under `tests/fixtures/`, that every later build must
//! still read to the same records (`docs/format/wal.md`, `manifest.md`).
//!
//! The expected contents are rebuilt here from the same definitions that
//! wrote the fixtures, so a change to an encoder that alters the bytes fails
//! these tests.

#![cfg(test)]

use std::path::Path;
use std::sync::Arc;

use shale_env::{FileSystem, MemFs, WriteLifetime};

use crate::batch::WriteBatch;
use crate::format::{InternalKey, ValueKind};
use crate::version::{LifetimeStats, TableMeta, VersionEdit};
use crate::wal::{LogEnd, LogReader, LogWriter};

const WAL: &[u8] = include_bytes!("../tests/fixtures/wal-v1.log");
const MANIFEST: &[u8] = include_bytes!("../tests/fixtures/manifest-v1");

/// The WAL's records: three batches, the second larger than a 32 KiB block.
fn wal_records() -> Vec<(u64, WriteBatch)> {
    let mut a = WriteBatch::new();
    a.put(b"alpha", b"1");
    a.delete(b"beta");
    a.put(b"gamma", b"");
    let mut b = WriteBatch::new();
    for i in 0..300u32 {
        b.put(format!("key{i:05}").as_bytes(), &[(i % 251) as u8; 110]);
    }
    let mut c = WriteBatch::new();
    c.delete(b"key00007");
    vec![(7, a), (10, b), (310, c)]
}

/// The manifest's edits: a snapshot, a flush and a compaction.
fn manifest_edits() -> Vec<VersionEdit> {
    let file = |number: u64, lo: &[u8], hi: &[u8], seq: u64| TableMeta {
        number,
        size: 4096 * number,
        smallest: InternalKey::new(lo, seq, ValueKind::Value),
        largest: InternalKey::new(hi, seq + 1, ValueKind::Delete),
        smallest_seqno: seq,
        largest_seqno: seq + 1,
        num_entries: 10 * number,
        range_deletions: 0,
    };
    let snapshot = VersionEdit {
        db_format: Some(1),
        log_number: Some(4),
        next_file_number: Some(9),
        last_sequence: Some(300),
        added: vec![(6, file(5, b"a", b"m", 1)), (6, file(6, b"n", b"z", 3))],
        lifetime: Some(LifetimeStats {
            user_bytes: 1_000_000,
            flushes: 3,
            flush_bytes: 900_000,
            compactions: [0, 0, 0, 0, 0, 0, 2],
            compaction_read: [0, 0, 0, 0, 0, 0, 1_800_000],
            compaction_written: [0, 0, 0, 0, 0, 0, 1_700_000],
        }),
        ..Default::default()
    };
    let flush = VersionEdit {
        log_number: Some(10),
        next_file_number: Some(12),
        last_sequence: Some(310),
        added: vec![(0, file(11, b"b", b"k", 301))],
        ..Default::default()
    };
    let compaction = VersionEdit {
        next_file_number: Some(13),
        last_sequence: Some(310),
        deleted: vec![(0, 11), (6, 5)],
        added: vec![(6, file(12, b"a", b"m", 1))],
        ..Default::default()
    };
    vec![snapshot, flush, compaction]
}

fn read_log(bytes: &[u8]) -> (Vec<Vec<u8>>, LogEnd) {
    let fs = MemFs::new();
    let path = Path::new("/fixture");
    let mut f = fs
        .create_append(path, WriteLifetime::NotSet)
        .expect("create");
    f.append(bytes).expect("append");
    let file: Arc<dyn shale_env::RandomAccessFile> = fs.open_random(path).expect("open");
    let mut r = LogReader::new(file, path.into());
    let mut out = Vec::new();
    while let Some(rec) = r.read_record().expect("fixture reads without error") {
        out.push(rec);
    }
    (out, r.end())
}

fn write_log(records: &[Vec<u8>]) -> Vec<u8> {
    let fs = MemFs::new();
    let path = Path::new("/written");
    let f = fs
        .create_append(path, WriteLifetime::NotSet)
        .expect("create");
    let mut w = LogWriter::new(f, path.into());
    for r in records {
        w.add_record(r).expect("add");
    }
    w.sync().expect("sync");
    fs.read_all(path).expect("read")
}

#[test]
fn the_v1_wal_fixture_reads_to_its_batches() {
    let (records, end) = read_log(WAL);
    assert_eq!(end, LogEnd::Clean);
    let expected = wal_records();
    assert_eq!(records.len(), expected.len());
    assert!(WAL.len() > 32 * 1024, "a record crosses a block boundary");
    for (rec, (seq, batch)) in records.iter().zip(&expected) {
        let (got_seq, got) = WriteBatch::decode(rec).expect("batch decodes");
        assert_eq!(got_seq, *seq);
        // A decoded batch carries its sequence number in its header.
        let mut stamped = batch.clone();
        stamped.encode(*seq);
        assert_eq!(got, stamped);
    }
}

#[test]
fn the_v1_manifest_fixture_reads_to_its_edits() {
    let (records, end) = read_log(MANIFEST);
    assert_eq!(end, LogEnd::Clean);
    let edits: Vec<VersionEdit> = records
        .iter()
        .map(|r| VersionEdit::decode(r).expect("edit decodes"))
        .collect();
    assert_eq!(edits, manifest_edits());
}

#[test]
fn this_build_writes_the_fixtures_byte_for_byte() {
    let wal: Vec<Vec<u8>> = wal_records()
        .into_iter()
        .map(|(seq, mut b)| b.encode(seq).to_vec())
        .collect();
    assert!(write_log(&wal) == WAL, "the WAL encoding changed");
    let manifest: Vec<Vec<u8>> = manifest_edits().iter().map(|e| e.encode()).collect();
    assert!(
        write_log(&manifest) == MANIFEST,
        "the manifest encoding changed"
    );
}
