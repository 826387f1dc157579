//! Version edits: the records of the manifest.
//!
//! One edit is the payload of one log record (framing in `docs/format/wal.md`).
//! Encoding (`docs/format/manifest.md`):
//!
//! ```text
//! edit       := field*
//! field      := tag: varint32 payload
//! tag 1  DB_FORMAT       payload := version varint32      (first edit of a manifest)
//! tag 2  LOG_NUMBER      payload := varint64              (oldest WAL still needed)
//! tag 3  NEXT_FILE       payload := varint64
//! tag 4  LAST_SEQUENCE   payload := varint64
//! tag 5  DELETED_FILE    payload := level varint32 | file number varint64
//! tag 6  NEW_FILE        payload := level varint32 | number varint64 | size varint64
//!                                   | smallest internal key (length-prefixed)
//!                                   | largest internal key (length-prefixed)
//!                                   | smallest seqno varint64 | largest seqno varint64
//!                                   | entries varint64
//! tag 8  NEW_FILE_RANGE_DELS  payload := the NEW_FILE payload | range deletions varint64
//!                                   (written instead of NEW_FILE for a table with
//!                                   range deletions, so that a build that does not
//!                                   know them refuses the manifest)
//! tag 7  LIFETIME_STATS  payload := count varint32 | value varint64{count}
//!                                   (the counters of `LifetimeStats`, in its
//!                                   field order; a reader takes the ones it
//!                                   knows and ignores extra trailing values)
//! ```
//!
//! Tags are frozen: DO NOT CHANGE their numbers or payloads; new fields take new
//! tags. An unknown tag is corruption (a newer writer would bump `DB_FORMAT`).

use crate::format::NUM_LEVELS;
use crate::format::{
    get_length_prefixed, get_varint32, get_varint64, put_length_prefixed, put_varint32,
    put_varint64, InternalKey, SeqNo,
};
use crate::metrics::LifetimeStats;

const TAG_DB_FORMAT: u32 = 1;
const TAG_LOG_NUMBER: u32 = 2;
const TAG_NEXT_FILE: u32 = 3;
const TAG_LAST_SEQUENCE: u32 = 4;
const TAG_DELETED_FILE: u32 = 5;
const TAG_NEW_FILE: u32 = 6;
const TAG_LIFETIME_STATS: u32 = 7;
const TAG_NEW_FILE_RANGE_DELS: u32 = 8;

// `LifetimeStats` lives in `metrics`, which keeps the counters; its encoding
// in an edit is here.
impl LifetimeStats {
    fn values(&self) -> Vec<u64> {
        let mut v = vec![self.user_bytes, self.flushes, self.flush_bytes];
        v.extend_from_slice(&self.compactions);
        v.extend_from_slice(&self.compaction_read);
        v.extend_from_slice(&self.compaction_written);
        v
    }

    fn from_values(v: &[u64]) -> Option<LifetimeStats> {
        let mut it = v.iter().copied();
        let mut next = || it.next();
        let mut s = LifetimeStats {
            user_bytes: next()?,
            flushes: next()?,
            flush_bytes: next()?,
            ..Default::default()
        };
        for slot in s
            .compactions
            .iter_mut()
            .chain(s.compaction_read.iter_mut())
            .chain(s.compaction_written.iter_mut())
        {
            *slot = next()?;
        }
        Some(s)
    }
}

/// What the database records of a table: its number, size, key and
/// sequence-number ranges and counts. An edit adds tables with it; a
/// version's [`FileMeta`](super::FileMeta) holds it with the table's file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TableMeta {
    pub number: u64,
    pub size: u64,
    pub smallest: InternalKey,
    pub largest: InternalKey,
    pub smallest_seqno: SeqNo,
    pub largest_seqno: SeqNo,
    pub num_entries: u64,
    /// Range deletions in the table's range-deletion block.
    pub range_deletions: u64,
}

/// A change to the version and to the database's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct VersionEdit {
    pub db_format: Option<u32>,
    pub log_number: Option<u64>,
    pub next_file_number: Option<u64>,
    pub last_sequence: Option<SeqNo>,
    pub deleted: Vec<(usize, u64)>,
    pub added: Vec<(usize, TableMeta)>,
    pub lifetime: Option<LifetimeStats>,
}

impl VersionEdit {
    /// Encodes the edit (grammar in the module doc).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(v) = self.db_format {
            put_varint32(&mut out, TAG_DB_FORMAT);
            put_varint32(&mut out, v);
        }
        if let Some(v) = self.log_number {
            put_varint32(&mut out, TAG_LOG_NUMBER);
            put_varint64(&mut out, v);
        }
        if let Some(v) = self.next_file_number {
            put_varint32(&mut out, TAG_NEXT_FILE);
            put_varint64(&mut out, v);
        }
        if let Some(v) = self.last_sequence {
            put_varint32(&mut out, TAG_LAST_SEQUENCE);
            put_varint64(&mut out, v);
        }
        for &(level, number) in &self.deleted {
            put_varint32(&mut out, TAG_DELETED_FILE);
            put_varint32(&mut out, level as u32);
            put_varint64(&mut out, number);
        }
        for (level, f) in &self.added {
            let tag = if f.range_deletions > 0 {
                TAG_NEW_FILE_RANGE_DELS
            } else {
                TAG_NEW_FILE
            };
            put_varint32(&mut out, tag);
            put_varint32(&mut out, *level as u32);
            put_varint64(&mut out, f.number);
            put_varint64(&mut out, f.size);
            put_length_prefixed(&mut out, f.smallest.encoded());
            put_length_prefixed(&mut out, f.largest.encoded());
            put_varint64(&mut out, f.smallest_seqno);
            put_varint64(&mut out, f.largest_seqno);
            put_varint64(&mut out, f.num_entries);
            if f.range_deletions > 0 {
                put_varint64(&mut out, f.range_deletions);
            }
        }
        if let Some(stats) = &self.lifetime {
            let values = stats.values();
            put_varint32(&mut out, TAG_LIFETIME_STATS);
            put_varint32(&mut out, values.len() as u32);
            for v in values {
                put_varint64(&mut out, v);
            }
        }
        out
    }

    /// Decodes an edit; the error says what is wrong (the caller adds file and
    /// offset).
    pub(crate) fn decode(mut src: &[u8]) -> Result<VersionEdit, String> {
        let mut edit = VersionEdit::default();
        while !src.is_empty() {
            let tag = get_varint32(&mut src).ok_or("truncated tag")?;
            match tag {
                TAG_DB_FORMAT => {
                    edit.db_format = Some(get_varint32(&mut src).ok_or("truncated format")?)
                }
                TAG_LOG_NUMBER => {
                    edit.log_number = Some(get_varint64(&mut src).ok_or("truncated log number")?)
                }
                TAG_NEXT_FILE => {
                    edit.next_file_number =
                        Some(get_varint64(&mut src).ok_or("truncated next file number")?)
                }
                TAG_LAST_SEQUENCE => {
                    edit.last_sequence =
                        Some(get_varint64(&mut src).ok_or("truncated last sequence")?)
                }
                TAG_DELETED_FILE => {
                    let level = decode_level(&mut src)?;
                    let number = get_varint64(&mut src).ok_or("truncated deleted file")?;
                    edit.deleted.push((level, number));
                }
                TAG_NEW_FILE | TAG_NEW_FILE_RANGE_DELS => {
                    let level = decode_level(&mut src)?;
                    let mut field =
                        |what: &str| get_varint64(&mut src).ok_or(format!("truncated {what}"));
                    let number = field("file number")?;
                    let size = field("file size")?;
                    let smallest = decode_key(&mut src, "smallest key")?;
                    let largest = decode_key(&mut src, "largest key")?;
                    let mut field =
                        |what: &str| get_varint64(&mut src).ok_or(format!("truncated {what}"));
                    let smallest_seqno = field("smallest seqno")?;
                    let largest_seqno = field("largest seqno")?;
                    let num_entries = field("entry count")?;
                    let range_deletions = if tag == TAG_NEW_FILE_RANGE_DELS {
                        field("range deletion count")?
                    } else {
                        0
                    };
                    edit.added.push((
                        level,
                        TableMeta {
                            number,
                            size,
                            smallest,
                            largest,
                            smallest_seqno,
                            largest_seqno,
                            num_entries,
                            range_deletions,
                        },
                    ));
                }
                TAG_LIFETIME_STATS => {
                    let n = get_varint32(&mut src).ok_or("truncated stats count")?;
                    let mut values = Vec::new();
                    for _ in 0..n {
                        values.push(get_varint64(&mut src).ok_or("truncated stats")?);
                    }
                    edit.lifetime =
                        Some(LifetimeStats::from_values(&values).ok_or("too few stats values")?);
                }
                other => return Err(format!("unknown version edit tag {other}")),
            }
        }
        Ok(edit)
    }
}

fn decode_level(src: &mut &[u8]) -> Result<usize, String> {
    let level = get_varint32(src).ok_or("truncated level")? as usize;
    if level >= NUM_LEVELS {
        return Err(format!("level {level} out of range"));
    }
    Ok(level)
}

fn decode_key(src: &mut &[u8], what: &str) -> Result<InternalKey, String> {
    let bytes = get_length_prefixed(src).ok_or(format!("truncated {what}"))?;
    InternalKey::from_encoded(bytes.to_vec()).ok_or(format!("malformed {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ValueKind;

    fn sample() -> VersionEdit {
        VersionEdit {
            db_format: Some(1),
            log_number: Some(12),
            next_file_number: Some(40),
            last_sequence: Some(123_456),
            deleted: vec![(0, 3), (6, 9)],
            added: vec![
                (
                    6,
                    TableMeta {
                        number: 33,
                        size: 1 << 20,
                        smallest: InternalKey::new(b"aa", 5, ValueKind::Value),
                        largest: InternalKey::new(b"zz", 7, ValueKind::Delete),
                        smallest_seqno: 5,
                        largest_seqno: 7,
                        num_entries: 1000,
                        range_deletions: 0,
                    },
                ),
                (
                    1,
                    TableMeta {
                        number: 34,
                        size: 4096,
                        smallest: InternalKey::new(b"a", 9, ValueKind::RangeDelete),
                        largest: InternalKey::new(
                            b"b",
                            crate::format::MAX_SEQNO,
                            ValueKind::RangeDelete,
                        ),
                        smallest_seqno: 9,
                        largest_seqno: 9,
                        num_entries: 0,
                        range_deletions: 1,
                    },
                ),
            ],
            lifetime: Some(LifetimeStats {
                user_bytes: 1 << 33,
                flushes: 12,
                flush_bytes: 7 << 20,
                compactions: [0, 0, 0, 0, 3, 9, 27],
                compaction_read: [0, 0, 0, 0, 1, 2, 3],
                compaction_written: [0, 0, 0, 0, 4, 5, 6],
            }),
        }
    }

    #[test]
    fn roundtrip() {
        let e = sample();
        assert_eq!(VersionEdit::decode(&e.encode()), Ok(e));
    }

    #[test]
    fn every_truncation_and_bad_tag_is_an_error() {
        let bytes = sample().encode();
        // Cutting inside a field must fail; cutting exactly between fields decodes
        // a shorter edit, which the log's checksum prevents in practice.
        let mut failures = 0;
        for cut in 1..bytes.len() {
            if VersionEdit::decode(&bytes[..cut]).is_err() {
                failures += 1;
            }
        }
        assert!(failures > bytes.len() / 2);
        assert!(VersionEdit::decode(&[99, 1]).is_err());
        assert!(
            VersionEdit::decode(&[TAG_DELETED_FILE as u8, 7, 1]).is_err(),
            "level 7"
        );
    }
}
