//! The byte format of a block-access trace, its encoder and its decoder.
//! `docs/format/block-trace.md` is the reference; this comment is its
//! summary.
//!
//! ```text
//! trace   = header chunk*
//! header  = magic[8] = "shaleBTR"  version:u32 = 1  fields_len:u32
//!           fields[fields_len]  crc32c(magic .. fields):u32
//! fields  = created_unix_secs:u64  table_format_version:u32
//!           sample_threshold:u64  cache_capacity:u64  cache_shards:u32
//!           pinned_at_start:u64  db_bytes:u64
//!           filter_bytes_except_last_level:u64  top_level_index_bytes:u64
//!           index_bytes:u64  db_fingerprint:u64
//! chunk   = len:u32  crc32c(payload):u32  payload[len]      (len >= 1)
//! payload = record+
//! record  = 0x01                                   a Get, nothing found
//!         | 0x02                                   a Get that found a value
//!         | 0x03 len:varint label[len]             a mark (UTF-8)
//!         | 0x04 bytes:varint                      bytes pinned in the cache
//!         | 0x05 bytes:varint                      pinned bytes released
//!         | 0x06 file:varint offset:varint charge:varint
//!                                                  charge of a block whose
//!                                                  access gave none
//!         | 0x07                                   clean end (last record)
//!         | 0x80|flags lookup_delta:zigzag-varint file:varint
//!           offset:varint charge:varint            a block access
//! flags   = kind (bits 0-1: 0 filter, 1 top index, 2 index partition,
//!           3 data) | placement << 2 (bits 2-3: 0 low, 1 medium, 2 high
//!           priority in the cache, 3 held by its table outside the cache)
//!           | hit << 4 (bit 4) ; bits 5-6 are zero
//! ```
//!
//! Integers are little-endian; varints are LEB128; `zigzag` maps a signed
//! delta `d` to `(d << 1) ^ (d >> 63)`. `lookup_delta` is the access's
//! lookup id minus the previous access's (the first access's is relative
//! to 0). A charge of 0 means "given by a later 0x06 record" (a data block
//! whose read a batch deferred). The trace ends with a chunk whose last
//! record is 0x07; nothing follows it.

use std::fmt;

use crate::format::{
    decode_fixed32, decode_fixed64, get_varint64, put_fixed32, put_fixed64, put_varint64,
};
use crate::metrics::BlockKind;

/// The first bytes of a trace. Persisted: DO NOT CHANGE.
pub(crate) const MAGIC: &[u8; 8] = b"shaleBTR";

/// The trace format version this code writes and reads.
pub const TRACE_FORMAT_VERSION: u32 = 1;

/// Bytes of the version-1 header fields.
const FIELDS_LEN: u32 = 80;

/// Largest chunk payload a reader accepts (the writer cuts chunks at 1 MiB).
pub(crate) const MAX_CHUNK: u32 = 16 << 20;

/// Record tags. Persisted: DO NOT CHANGE.
const TAG_GET: u8 = 0x01;
const TAG_GET_FOUND: u8 = 0x02;
const TAG_MARK: u8 = 0x03;
const TAG_PIN: u8 = 0x04;
const TAG_UNPIN: u8 = 0x05;
const TAG_CHARGE: u8 = 0x06;
const TAG_END: u8 = 0x07;
const TAG_ACCESS: u8 = 0x80;

/// `sample_threshold` of a trace that records every access.
pub const SAMPLE_ALL: u64 = 1 << 32;

/// What a trace says about where and how it was recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceHeader {
    /// Seconds since the Unix epoch when tracing started.
    pub created_unix_secs: u64,
    /// The table format version the database wrote new tables in.
    pub table_format_version: u32,
    /// Accesses to a block are recorded when the block's sampling hash
    /// (see [`sampled`]) is below this; [`SAMPLE_ALL`] records all.
    pub sample_threshold: u64,
    /// The block cache's capacity when tracing started.
    pub cache_capacity: u64,
    /// The most shards the database gives its block cache
    /// (`Options::cache_shards`); a cache gets fewer when small.
    pub cache_shards: u32,
    /// Bytes pinned in the cache when tracing started.
    pub pinned_at_start: u64,
    /// The database's tables when tracing started.
    pub db: TraceDbShape,
}

/// The database a trace was recorded on: its size, the metadata that
/// makes up its inflection points, and a fingerprint of its tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceDbShape {
    /// Bytes of all table files.
    pub db_bytes: u64,
    /// Filter bytes of every level but the last.
    pub filter_bytes_except_last_level: u64,
    /// Top-level index bytes.
    pub top_level_index_bytes: u64,
    /// All index bytes: partitions and top-level indexes.
    pub index_bytes: u64,
    /// A hash of the live tables' numbers and sizes: two traces with the
    /// same fingerprint were recorded on the same tables.
    pub fingerprint: u64,
}

impl TraceDbShape {
    /// First inflection point: filters of the levels above the last and
    /// top-level indexes.
    pub fn ip1_bytes(&self) -> u64 {
        self.filter_bytes_except_last_level + self.top_level_index_bytes
    }

    /// Second inflection point: those filters and every index block.
    pub fn ip2_bytes(&self) -> u64 {
        self.filter_bytes_except_last_level + self.index_bytes
    }
}

impl TraceHeader {
    /// The share of blocks whose accesses the trace records.
    pub fn sample_rate(&self) -> f64 {
        self.sample_threshold as f64 / SAMPLE_ALL as f64
    }
}

/// Where a traced block lives, and so how the cache treats it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TracePlacement {
    /// In the cache at low priority (data blocks).
    Low,
    /// In the cache at medium priority (index partitions).
    Medium,
    /// In the cache at high priority (filters, top-level indexes).
    High,
    /// Held by its table reader outside the cache (`MetadataPlacement`):
    /// read by its first use, never looked up in the cache.
    Held,
}

impl TracePlacement {
    fn code(self) -> u8 {
        match self {
            TracePlacement::Low => 0,
            TracePlacement::Medium => 1,
            TracePlacement::High => 2,
            TracePlacement::Held => 3,
        }
    }

    fn from_code(code: u8) -> TracePlacement {
        match code & 3 {
            0 => TracePlacement::Low,
            1 => TracePlacement::Medium,
            2 => TracePlacement::High,
            _ => TracePlacement::Held,
        }
    }
}

/// One block access of the read path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockAccess {
    /// The lookup (one Get's search of the tables) it belongs to; 0 for
    /// an access outside a Get (an iterator's).
    pub lookup: u64,
    /// The table's file number.
    pub file: u64,
    /// The block's offset in the table: with `file`, its cache key.
    pub offset: u64,
    /// Filter, top-level index, index partition or data block.
    pub kind: BlockKind,
    /// The cache's priority for it, or held outside the cache.
    pub placement: TracePlacement,
    /// Found in the cache (or already held); false when it was read.
    pub hit: bool,
    /// Bytes it is charged in the cache; 0 when a later
    /// [`TraceRecord::Charge`] gives it.
    pub charge: u64,
}

/// One record of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceRecord {
    /// A Get answered; `found` if it found a value.
    Get {
        /// It found a value.
        found: bool,
    },
    /// A block access.
    Access(BlockAccess),
    /// A label put in the trace by its recorder (`Db::mark_block_trace`).
    Mark(String),
    /// Bytes pinned in the cache (a table opened with pinned metadata).
    Pin(u64),
    /// Pinned bytes released (that table closed).
    Unpin(u64),
    /// The charge of a block whose access gave none.
    Charge {
        /// The table's file number.
        file: u64,
        /// The block's offset.
        offset: u64,
        /// Its charge.
        charge: u64,
    },
}

/// A decoded trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockTrace {
    /// Its header.
    pub header: TraceHeader,
    /// Its records in order (the end record is not listed).
    pub records: Vec<TraceRecord>,
}

/// Why a trace cannot be read. Offsets are from the start of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceError {
    /// The file does not start with a trace's magic.
    NotATrace,
    /// A trace of a format version this build does not read.
    UnsupportedVersion(u32),
    /// The file ends inside the header or a chunk, or before the end
    /// record: `offset` is where the incomplete part starts.
    Truncated {
        /// Start of the incomplete header, chunk or record.
        offset: u64,
        /// What is missing.
        what: String,
    },
    /// Bytes that are not what the format allows.
    Damaged {
        /// Where the damage was found.
        offset: u64,
        /// What is wrong there.
        what: String,
    },
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::NotATrace => write!(f, "not a shale block trace (bad magic)"),
            TraceError::UnsupportedVersion(v) => write!(
                f,
                "block trace format version {v} is not supported (this build reads version {TRACE_FORMAT_VERSION})"
            ),
            TraceError::Truncated { offset, what } => {
                write!(f, "block trace truncated at offset {offset}: {what}")
            }
            TraceError::Damaged { offset, what } => {
                write!(f, "block trace damaged at offset {offset}: {what}")
            }
        }
    }
}

impl std::error::Error for TraceError {}

/// True if accesses to block (`file`, `offset`) are recorded at
/// `threshold`: its sampling hash, the low 32 bits of an xxh3 of the key
/// (independent of the cache's own hash), is below it.
pub fn sampled(file: u64, offset: u64, threshold: u64) -> bool {
    if threshold >= SAMPLE_ALL {
        return true;
    }
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&file.to_le_bytes());
    key[8..].copy_from_slice(&offset.to_le_bytes());
    u64::from(xxhash_rust::xxh3::xxh3_64(&key) as u32) < threshold
}

/// Encodes the header (magic to checksum).
pub(crate) fn encode_header(h: &TraceHeader) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + 8 + FIELDS_LEN as usize + 4);
    out.extend_from_slice(MAGIC);
    put_fixed32(&mut out, TRACE_FORMAT_VERSION);
    put_fixed32(&mut out, FIELDS_LEN);
    put_fixed64(&mut out, h.created_unix_secs);
    put_fixed32(&mut out, h.table_format_version);
    put_fixed64(&mut out, h.sample_threshold);
    put_fixed64(&mut out, h.cache_capacity);
    put_fixed32(&mut out, h.cache_shards);
    put_fixed64(&mut out, h.pinned_at_start);
    put_fixed64(&mut out, h.db.db_bytes);
    put_fixed64(&mut out, h.db.filter_bytes_except_last_level);
    put_fixed64(&mut out, h.db.top_level_index_bytes);
    put_fixed64(&mut out, h.db.index_bytes);
    put_fixed64(&mut out, h.db.fingerprint);
    debug_assert_eq!(out.len(), 16 + FIELDS_LEN as usize);
    let crc = crc32c::crc32c(&out);
    put_fixed32(&mut out, crc);
    out
}

/// Appends a chunk holding `payload` to `out`.
pub(crate) fn encode_chunk(out: &mut Vec<u8>, payload: &[u8]) {
    put_fixed32(out, payload.len() as u32);
    put_fixed32(out, crc32c::crc32c(payload));
    out.extend_from_slice(payload);
}

/// Encodes records into chunk payloads, delta-coding lookup ids.
#[derive(Default)]
pub(crate) struct RecordEncoder {
    last_lookup: u64,
}

impl RecordEncoder {
    /// Appends `r` to `out`.
    pub(crate) fn record(&mut self, out: &mut Vec<u8>, r: &TraceRecord) {
        match r {
            TraceRecord::Get { found: false } => out.push(TAG_GET),
            TraceRecord::Get { found: true } => out.push(TAG_GET_FOUND),
            TraceRecord::Mark(label) => {
                out.push(TAG_MARK);
                put_varint64(out, label.len() as u64);
                out.extend_from_slice(label.as_bytes());
            }
            TraceRecord::Pin(bytes) => {
                out.push(TAG_PIN);
                put_varint64(out, *bytes);
            }
            TraceRecord::Unpin(bytes) => {
                out.push(TAG_UNPIN);
                put_varint64(out, *bytes);
            }
            TraceRecord::Charge {
                file,
                offset,
                charge,
            } => {
                out.push(TAG_CHARGE);
                put_varint64(out, *file);
                put_varint64(out, *offset);
                put_varint64(out, *charge);
            }
            TraceRecord::Access(a) => {
                let flags = kind_code(a.kind) | a.placement.code() << 2 | u8::from(a.hit) << 4;
                out.push(TAG_ACCESS | flags);
                let delta = a.lookup.wrapping_sub(self.last_lookup) as i64;
                self.last_lookup = a.lookup;
                put_varint64(out, ((delta << 1) ^ (delta >> 63)) as u64);
                put_varint64(out, a.file);
                put_varint64(out, a.offset);
                put_varint64(out, a.charge);
            }
        }
    }

    /// Appends the end record.
    pub(crate) fn end(&mut self, out: &mut Vec<u8>) {
        out.push(TAG_END);
    }
}

/// The code of a read-path block kind. Persisted: DO NOT CHANGE.
fn kind_code(kind: BlockKind) -> u8 {
    match kind {
        BlockKind::Filter => 0,
        BlockKind::TopIndex => 1,
        BlockKind::IndexPartition => 2,
        // Only the four read-path kinds are traced; the table-open kinds
        // never reach the cache.
        BlockKind::Data | BlockKind::Footer | BlockKind::Properties => 3,
    }
}

fn kind_from_code(code: u8) -> BlockKind {
    match code & 3 {
        0 => BlockKind::Filter,
        1 => BlockKind::TopIndex,
        2 => BlockKind::IndexPartition,
        _ => BlockKind::Data,
    }
}

/// Encodes a whole trace as the tracer would write it, in chunks of at
/// most `chunk` payload bytes (tests and fuzzing).
pub fn encode_trace(trace: &BlockTrace, chunk: usize) -> Vec<u8> {
    let mut out = encode_header(&trace.header);
    let mut enc = RecordEncoder::default();
    let mut payload = Vec::new();
    for r in &trace.records {
        enc.record(&mut payload, r);
        if payload.len() >= chunk.max(1) {
            encode_chunk(&mut out, &payload);
            payload.clear();
        }
    }
    enc.end(&mut payload);
    encode_chunk(&mut out, &payload);
    out
}

/// Decodes only the header of `bytes` (what `shale simulate` checks
/// before reading the rest).
pub fn decode_header(bytes: &[u8]) -> Result<TraceHeader, TraceError> {
    decode_header_len(bytes).map(|(h, _)| h)
}

fn decode_header_len(bytes: &[u8]) -> Result<(TraceHeader, usize), TraceError> {
    if bytes.len() < 8 {
        return if MAGIC.starts_with(bytes) {
            Err(TraceError::Truncated {
                offset: 0,
                what: "the file ends inside the magic".into(),
            })
        } else {
            Err(TraceError::NotATrace)
        };
    }
    if &bytes[..8] != MAGIC {
        return Err(TraceError::NotATrace);
    }
    let trunc = |what: &str| TraceError::Truncated {
        offset: 0,
        what: what.into(),
    };
    let version = decode_fixed32(&bytes[8..]).ok_or_else(|| trunc("the header ends early"))?;
    if version != TRACE_FORMAT_VERSION {
        return Err(TraceError::UnsupportedVersion(version));
    }
    let fields_len =
        decode_fixed32(&bytes[12..]).ok_or_else(|| trunc("the header ends early"))? as usize;
    if fields_len != FIELDS_LEN as usize {
        return Err(TraceError::Damaged {
            offset: 12,
            what: format!(
                "header fields of {fields_len} bytes, version {version} has {FIELDS_LEN}"
            ),
        });
    }
    let end = 16 + fields_len;
    let crc = decode_fixed32(bytes.get(end..).unwrap_or_default())
        .ok_or_else(|| trunc("the header ends early"))?;
    if crc32c::crc32c(&bytes[..end]) != crc {
        return Err(TraceError::Damaged {
            offset: end as u64,
            what: "header checksum mismatch".into(),
        });
    }
    let f = &bytes[16..end];
    let u64_at = |at: usize| decode_fixed64(&f[at..]).unwrap_or(0);
    let u32_at = |at: usize| decode_fixed32(&f[at..]).unwrap_or(0);
    let header = TraceHeader {
        created_unix_secs: u64_at(0),
        table_format_version: u32_at(8),
        sample_threshold: u64_at(12),
        cache_capacity: u64_at(20),
        cache_shards: u32_at(28),
        pinned_at_start: u64_at(32),
        db: TraceDbShape {
            db_bytes: u64_at(40),
            filter_bytes_except_last_level: u64_at(48),
            top_level_index_bytes: u64_at(56),
            index_bytes: u64_at(64),
            fingerprint: u64_at(72),
        },
    };
    if header.sample_threshold == 0 || header.sample_threshold > SAMPLE_ALL {
        return Err(TraceError::Damaged {
            offset: 16 + 12,
            what: format!(
                "sample threshold {} out of range 1..={SAMPLE_ALL}",
                header.sample_threshold
            ),
        });
    }
    Ok((header, end + 4))
}

/// Decodes a whole trace. Every damaged or truncated part is an error
/// naming its offset; the trace must end with its end record.
pub fn decode_trace(bytes: &[u8]) -> Result<BlockTrace, TraceError> {
    let (header, mut at) = decode_header_len(bytes)?;
    let mut records = Vec::new();
    let mut last_lookup = 0u64;
    loop {
        let rest = &bytes[at..];
        if rest.is_empty() {
            return Err(TraceError::Truncated {
                offset: at as u64,
                what: "the trace has no end record (was tracing ended?)".into(),
            });
        }
        let (Some(len), Some(crc)) = (
            decode_fixed32(rest),
            decode_fixed32(rest.get(4..).unwrap_or_default()),
        ) else {
            return Err(TraceError::Truncated {
                offset: at as u64,
                what: format!("a chunk header needs 8 bytes, {} remain", rest.len()),
            });
        };
        if len == 0 || len > MAX_CHUNK {
            return Err(TraceError::Damaged {
                offset: at as u64,
                what: format!("chunk length {len} out of range 1..={MAX_CHUNK}"),
            });
        }
        let payload = rest
            .get(8..8 + len as usize)
            .ok_or_else(|| TraceError::Truncated {
                offset: at as u64,
                what: format!(
                    "a chunk of {len} bytes, {} remain after its header",
                    rest.len() - 8
                ),
            })?;
        if crc32c::crc32c(payload) != crc {
            return Err(TraceError::Damaged {
                offset: at as u64,
                what: "chunk checksum mismatch".into(),
            });
        }
        let start = at + 8;
        at = start + len as usize;
        let ended = decode_payload(payload, start as u64, &mut last_lookup, &mut records)?;
        if ended {
            if at != bytes.len() {
                return Err(TraceError::Damaged {
                    offset: at as u64,
                    what: format!("{} bytes after the end record", bytes.len() - at),
                });
            }
            return Ok(BlockTrace { header, records });
        }
    }
}

/// Decodes one chunk's records (the payload starts at file offset `base`);
/// true if it ends with the end record.
fn decode_payload(
    payload: &[u8],
    base: u64,
    last_lookup: &mut u64,
    records: &mut Vec<TraceRecord>,
) -> Result<bool, TraceError> {
    let mut p = payload;
    while let Some((&tag, rest)) = p.split_first() {
        let offset = base + (payload.len() - p.len()) as u64;
        let damaged = |what: &str| TraceError::Damaged {
            offset,
            what: what.into(),
        };
        p = rest;
        let varint = |p: &mut &[u8]| {
            get_varint64(p).ok_or_else(|| damaged("a record's varint is cut or overlong"))
        };
        let r = match tag {
            TAG_GET => TraceRecord::Get { found: false },
            TAG_GET_FOUND => TraceRecord::Get { found: true },
            TAG_MARK => {
                let len = varint(&mut p)?;
                let bytes = usize::try_from(len)
                    .ok()
                    .and_then(|n| p.get(..n))
                    .ok_or_else(|| damaged("a mark's label is cut"))?;
                let label = std::str::from_utf8(bytes)
                    .map_err(|_| damaged("a mark's label is not UTF-8"))?
                    .to_string();
                p = &p[bytes.len()..];
                TraceRecord::Mark(label)
            }
            TAG_PIN => TraceRecord::Pin(varint(&mut p)?),
            TAG_UNPIN => TraceRecord::Unpin(varint(&mut p)?),
            TAG_CHARGE => TraceRecord::Charge {
                file: varint(&mut p)?,
                offset: varint(&mut p)?,
                charge: varint(&mut p)?,
            },
            TAG_END => {
                if !p.is_empty() {
                    return Err(damaged("records after the end record"));
                }
                return Ok(true);
            }
            t if t & TAG_ACCESS != 0 => {
                if t & 0x60 != 0 {
                    return Err(damaged("an access record with reserved flag bits set"));
                }
                let z = varint(&mut p)?;
                let delta = ((z >> 1) as i64) ^ -((z & 1) as i64);
                *last_lookup = last_lookup.wrapping_add(delta as u64);
                TraceRecord::Access(BlockAccess {
                    lookup: *last_lookup,
                    kind: kind_from_code(t),
                    placement: TracePlacement::from_code(t >> 2),
                    hit: t & 0x10 != 0,
                    file: varint(&mut p)?,
                    offset: varint(&mut p)?,
                    charge: varint(&mut p)?,
                })
            }
            t => return Err(damaged(&format!("unknown record tag {t:#04x}"))),
        };
        records.push(r);
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> TraceHeader {
        TraceHeader {
            created_unix_secs: 1_800_000_000,
            table_format_version: 3,
            sample_threshold: SAMPLE_ALL,
            cache_capacity: 64 << 20,
            cache_shards: 16,
            pinned_at_start: 123,
            db: TraceDbShape {
                db_bytes: 1 << 30,
                filter_bytes_except_last_level: 1 << 20,
                top_level_index_bytes: 4096,
                index_bytes: 300_000,
                fingerprint: 0xfeed,
            },
        }
    }

    fn sample() -> BlockTrace {
        let access = |lookup, kind, placement, hit, charge| {
            TraceRecord::Access(BlockAccess {
                lookup,
                file: 17,
                offset: lookup.wrapping_mul(4096),
                kind,
                placement,
                hit,
                charge,
            })
        };
        BlockTrace {
            header: header(),
            records: vec![
                TraceRecord::Pin(4096),
                TraceRecord::Mark("measure".into()),
                access(7, BlockKind::Filter, TracePlacement::High, true, 4101),
                access(7, BlockKind::Data, TracePlacement::Low, false, 0),
                TraceRecord::Charge {
                    file: 17,
                    offset: 4096 * 7,
                    charge: 4096,
                },
                TraceRecord::Get { found: true },
                access(
                    3,
                    BlockKind::IndexPartition,
                    TracePlacement::Held,
                    false,
                    900,
                ),
                access(
                    u64::MAX,
                    BlockKind::TopIndex,
                    TracePlacement::Medium,
                    true,
                    1,
                ),
                TraceRecord::Get { found: false },
                TraceRecord::Unpin(4096),
            ],
        }
    }

    #[test]
    fn a_trace_round_trips_in_any_chunking() {
        let t = sample();
        for chunk in [1, 7, 1 << 20] {
            let bytes = encode_trace(&t, chunk);
            assert_eq!(decode_trace(&bytes), Ok(t.clone()), "chunk {chunk}");
        }
    }

    #[test]
    fn every_truncation_is_reported_with_an_offset() {
        let bytes = encode_trace(&sample(), 16);
        for cut in 0..bytes.len() {
            match decode_trace(&bytes[..cut]) {
                Err(TraceError::Truncated { offset, .. }) => assert!(offset <= cut as u64),
                other => panic!("cut at {cut}: {other:?}"),
            }
        }
    }

    #[test]
    fn damage_is_found_where_it_is() {
        let bytes = encode_trace(&sample(), 16);
        let header_len = 16 + FIELDS_LEN as usize + 4;
        for at in 0..bytes.len() {
            let mut b = bytes.clone();
            b[at] ^= 0x40;
            let e = decode_trace(&b).expect_err("a flipped bit is noticed");
            match e {
                TraceError::NotATrace => assert!(at < 8),
                TraceError::UnsupportedVersion(_) => assert!((8..12).contains(&at)),
                TraceError::Damaged { offset, .. } | TraceError::Truncated { offset, .. } => {
                    if at >= header_len {
                        // The chunk holding the flipped byte is blamed.
                        assert!(
                            offset <= at as u64 && at as u64 - offset < 8 + 64,
                            "{at}: {offset}"
                        );
                    }
                }
            }
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(matches!(
            decode_trace(&extra),
            Err(TraceError::Damaged { offset, .. }) if offset == bytes.len() as u64
        ));
    }

    #[test]
    fn another_file_or_version_is_refused_by_its_header() {
        assert_eq!(
            decode_trace(b"SQLite format 3\0"),
            Err(TraceError::NotATrace)
        );
        let mut b = encode_trace(&sample(), 64);
        b[8] = 2;
        assert_eq!(decode_trace(&b), Err(TraceError::UnsupportedVersion(2)));
    }

    #[test]
    fn sampling_keeps_about_its_share_of_blocks() {
        let threshold = SAMPLE_ALL / 10;
        let kept = (0..100_000u64)
            .filter(|i| sampled(i / 1000, (i % 1000) * 4096, threshold))
            .count();
        assert!((9_000..11_000).contains(&kept), "{kept}");
        assert!(sampled(1, 2, SAMPLE_ALL));
    }
}
