//! RocksDB's block-cache traces (`DB::StartBlockCacheTrace`, as the RocksDB
//! harness writes them for a read request's `trace`), decoded into shale's
//! [`BlockTrace`] so that `shale simulate` replays them like its own.
//!
//! # The file (RocksDB 7.x, as 7.8.3 writes it)
//!
//! ```text
//! file    = record*                  (the first is the header; no trailer)
//! record  = timestamp:u64  type:u8  payload_len:u32  payload[payload_len]
//! header  : type 1, payload = magic_len:varint32 magic[magic_len]
//!           major:u32 minor:u32      (magic "feedcafedeadbeef", RocksDB's
//!                                     version, 7 and 8 for 7.8.3)
//! access  : type 7 index, 8 filter, 9 data, 10 uncompression dictionary,
//!           11 range deletion block, payload =
//!           block_key_len:varint32 block_key  block_size:u64  cf_id:u64
//!           cf_name_len:varint32 cf_name  level:u32  sst_number:u64
//!           caller:u8  hit:u8  no_insert:u8
//!           [caller 1 Get or 2 MultiGet:
//!              get_id:u64  from_user_snapshot:u8
//!              referenced_key_len:varint32 referenced_key
//!              [type 9: referenced_data_size:u64  keys_in_block:u64
//!                       key_exists_in_block:u8]]
//! end     : type 2 (a query trace's trailer; ends the file if present)
//! ```
//!
//! Integers are little-endian, varint32 is LEB128 of at most 5 bytes.
//! Timestamps are microseconds of the database's `SystemClock` (the
//! header's is when tracing started). A file that ends exactly after a
//! record is complete (RocksDB writes no trailer); one that ends inside a
//! record is truncated.
//!
//! # The mapping onto shale's records
//!
//! * block type → kind: filter → filter; data (and the rare dictionary
//!   and range-deletion blocks) → data; index → index partition, except
//!   an index read by caller 9 (Prefetch, a table being opened) → top-level
//!   index. RocksDB gives one type to both index levels; in the harness's
//!   `pebble-like` configuration the top level is pinned by its table when
//!   the table opens and a Get only looks partitions up, so this is exact
//!   there, and a guess elsewhere;
//! * placement: index and filter blocks → [`TracePlacement::High`], data →
//!   [`TracePlacement::Low`]: the `pebble-like` configuration caches index
//!   and filter blocks at high priority in an LRU cache whose high-priority
//!   pool is half of it. (A `--policy lru` replay ignores placement.);
//! * the SST file number → `file`;
//! * `offset`: a 64-bit FNV-1a hash of the block key. RocksDB 7.8's block
//!   key is a per-file base XOR the block's offset divided by 4, and the
//!   base is not in the trace, so the offset cannot be recovered; the hash
//!   tells blocks apart as the key does (two blocks of one file collide
//!   with a chance of about 2^-64);
//! * `block_size` (the block's charge in RocksDB's cache) → `charge`;
//! * hit → `hit`; `no_insert` is not kept (the harness's reads insert);
//! * `get_id` → `lookup` (0 when RocksDB gives none: other callers, and
//!   RocksDB 7.8 leaves the id of a Get's index-partition accesses at 0);
//! * one [`TraceRecord::Get`] per distinct non-zero get id of the Get
//!   caller, placed after that Get's last access; found if one of its data
//!   block accesses says the key exists in the block;
//! * a [`TraceRecord::Mark`] `"measure"` before the first access stamped at
//!   or after the `.measure` side file's timestamp, when there is one.
//!
//! The header: created at the start timestamp, every block recorded
//! (RocksDB's file does not say its sampling), cache capacity and the
//! database's shape unknown (0), 64 shards (the most RocksDB's LRU cache
//! gives itself), nothing pinned.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use shale::trace::{
    BlockAccess, BlockTrace, TraceDbShape, TraceHeader, TracePlacement, TraceRecord, SAMPLE_ALL,
};
use shale::BlockKind;

use crate::error::{Error, Result};

/// RocksDB's trace magic.
const MAGIC: &[u8] = b"feedcafedeadbeef";
/// The RocksDB major version whose block-cache trace layout this reads.
pub const SUPPORTED_MAJOR: u32 = 7;
/// Bytes before a record's payload.
const RECORD_HEAD: usize = 13;

const TYPE_BEGIN: u8 = 1;
const TYPE_END: u8 = 2;
const TYPE_INDEX: u8 = 7;
const TYPE_FILTER: u8 = 8;
const TYPE_DATA: u8 = 9;
const TYPE_DICT: u8 = 10;
const TYPE_RANGE_DEL: u8 = 11;

const CALLER_GET: u8 = 1;
const CALLER_MULTI_GET: u8 = 2;
const CALLER_PREFETCH: u8 = 9;

/// The label of the mark put where the measured Gets begin.
pub const MEASURE_MARK: &str = "measure";

/// Why a RocksDB block-cache trace cannot be read. Offsets are from the
/// start of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RocksTraceError {
    /// The file does not start with a RocksDB trace header.
    NotATrace,
    /// A trace of a RocksDB version whose layout this build does not read.
    UnsupportedVersion {
        /// RocksDB's major version in the header.
        major: u32,
        /// Its minor version.
        minor: u32,
    },
    /// The file ends inside a record.
    Truncated {
        /// Where the incomplete record starts.
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

impl fmt::Display for RocksTraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RocksTraceError::NotATrace => {
                write!(f, "not a RocksDB block-cache trace (no trace header)")
            }
            RocksTraceError::UnsupportedVersion { major, minor } => write!(
                f,
                "a block-cache trace of RocksDB {major}.{minor}: this build reads RocksDB {SUPPORTED_MAJOR}.x's"
            ),
            RocksTraceError::Truncated { offset, what } => {
                write!(f, "RocksDB trace truncated at offset {offset}: {what}")
            }
            RocksTraceError::Damaged { offset, what } => {
                write!(f, "RocksDB trace damaged at offset {offset}: {what}")
            }
        }
    }
}

impl std::error::Error for RocksTraceError {}

/// One access record of a RocksDB block-cache trace (the fields shale
/// uses, and a few more that describe it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RocksAccess {
    /// Microseconds of the database's clock.
    pub timestamp: u64,
    /// RocksDB's block type (7 index, 8 filter, 9 data, 10, 11).
    pub block_type: u8,
    /// The block's cache key.
    pub block_key: Vec<u8>,
    /// Its charge in the cache.
    pub block_size: u64,
    /// The LSM level of its table.
    pub level: u32,
    /// Its table's file number.
    pub sst_number: u64,
    /// RocksDB's `TableReaderCaller` (1 Get, 2 MultiGet, 3 iterator, 9
    /// prefetch, 10 compaction, ...).
    pub caller: u8,
    /// Found in the cache.
    pub hit: bool,
    /// The lookup would not insert the block on a miss.
    pub no_insert: bool,
    /// The Get's id (Get and MultiGet callers; 0: none given).
    pub get_id: u64,
    /// For a Get's data block: whether the key is in the block.
    pub key_exists: Option<bool>,
}

/// A decoded RocksDB block-cache trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RocksTrace {
    /// RocksDB's major and minor version.
    pub version: (u32, u32),
    /// The header's timestamp: when tracing started (microseconds).
    pub start: u64,
    /// The accesses in file order.
    pub accesses: Vec<RocksAccess>,
}

/// True if `bytes` start like a RocksDB trace: a begin record whose
/// payload starts with the magic.
pub fn looks_like(bytes: &[u8]) -> bool {
    let m = RECORD_HEAD + 1;
    bytes.len() >= m + MAGIC.len()
        && bytes[8] == TYPE_BEGIN
        && usize::from(bytes[RECORD_HEAD]) == MAGIC.len()
        && &bytes[m..m + MAGIC.len()] == MAGIC
}

/// Reads a record payload's fields, reporting offsets in the file.
struct Fields<'a> {
    p: &'a [u8],
    at: usize,
    /// File offset of the payload's first byte.
    base: usize,
    /// File offset of the record (for truncation reports).
    record: usize,
    /// The payload was cut short by the end of the file.
    cut: bool,
}

impl<'a> Fields<'a> {
    fn short(&self, what: &str) -> RocksTraceError {
        if self.cut {
            RocksTraceError::Truncated {
                offset: self.record as u64,
                what: format!("the file ends inside a record, at its {what}"),
            }
        } else {
            RocksTraceError::Damaged {
                offset: (self.base + self.at) as u64,
                what: format!("the record's payload ends before its {what}"),
            }
        }
    }

    fn take(&mut self, n: usize, what: &str) -> std::result::Result<&'a [u8], RocksTraceError> {
        if self.p.len() - self.at < n {
            return Err(self.short(what));
        }
        let s = &self.p[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    fn u8(&mut self, what: &str) -> std::result::Result<u8, RocksTraceError> {
        Ok(self.take(1, what)?[0])
    }

    fn flag(&mut self, what: &str) -> std::result::Result<bool, RocksTraceError> {
        let at = self.base + self.at;
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(RocksTraceError::Damaged {
                offset: at as u64,
                what: format!("{what} is {b}, not 0 or 1"),
            }),
        }
    }

    fn u32(&mut self, what: &str) -> std::result::Result<u32, RocksTraceError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &str) -> std::result::Result<u64, RocksTraceError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn varint32(&mut self, what: &str) -> std::result::Result<u32, RocksTraceError> {
        let at = self.base + self.at;
        let mut v: u32 = 0;
        for i in 0..5 {
            let b = self.u8(what)?;
            if i == 4 && b > 0x0f {
                break;
            }
            v |= u32::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(RocksTraceError::Damaged {
            offset: at as u64,
            what: format!("{what}: a varint32 longer than 32 bits"),
        })
    }

    fn slice(&mut self, what: &str) -> std::result::Result<&'a [u8], RocksTraceError> {
        let n = self.varint32(what)? as usize;
        self.take(n, what)
    }

    fn finish(&self) -> std::result::Result<(), RocksTraceError> {
        if self.at == self.p.len() {
            Ok(())
        } else {
            Err(RocksTraceError::Damaged {
                offset: (self.base + self.at) as u64,
                what: format!(
                    "{} bytes after the record's last field",
                    self.p.len() - self.at
                ),
            })
        }
    }
}

/// One record's frame: where it starts, its timestamp and type, and its
/// payload (possibly cut by the end of the file).
fn frame(bytes: &[u8], at: usize) -> std::result::Result<(u64, u8, Fields<'_>), RocksTraceError> {
    let rest = &bytes[at..];
    if rest.len() < RECORD_HEAD {
        return Err(RocksTraceError::Truncated {
            offset: at as u64,
            what: format!(
                "the file ends {} bytes into a record's 13-byte head",
                rest.len()
            ),
        });
    }
    let mut ts = [0u8; 8];
    ts.copy_from_slice(&rest[..8]);
    let len = u32::from_le_bytes([rest[9], rest[10], rest[11], rest[12]]) as usize;
    let avail = rest.len() - RECORD_HEAD;
    let cut = avail < len;
    let p = &rest[RECORD_HEAD..RECORD_HEAD + len.min(avail)];
    Ok((
        u64::from_le_bytes(ts),
        rest[8],
        Fields {
            p,
            at: 0,
            base: at + RECORD_HEAD,
            record: at,
            cut,
        },
    ))
}

/// Decodes a RocksDB block-cache trace file.
pub fn decode(bytes: &[u8]) -> std::result::Result<RocksTrace, RocksTraceError> {
    if !looks_like(bytes) {
        return Err(RocksTraceError::NotATrace);
    }
    let (start, _, mut h) = frame(bytes, 0)?;
    h.slice("magic")?;
    let major = h.u32("major version")?;
    let minor = h.u32("minor version")?;
    h.finish()?;
    if h.cut {
        return Err(h.short("end"));
    }
    if major != SUPPORTED_MAJOR {
        return Err(RocksTraceError::UnsupportedVersion { major, minor });
    }
    let mut at = RECORD_HEAD + h.p.len();
    let mut accesses = Vec::new();
    while at < bytes.len() {
        let (timestamp, block_type, mut f) = frame(bytes, at)?;
        let next = at + RECORD_HEAD + f.p.len();
        match block_type {
            TYPE_END => break,
            TYPE_INDEX | TYPE_FILTER | TYPE_DATA | TYPE_DICT | TYPE_RANGE_DEL => {}
            t => {
                return Err(RocksTraceError::Damaged {
                    offset: at as u64 + 8,
                    what: format!("record type {t} is not a block-cache access"),
                })
            }
        }
        let block_key = f.slice("block key")?.to_vec();
        let block_size = f.u64("block size")?;
        f.u64("column family id")?;
        f.slice("column family name")?;
        let level = f.u32("level")?;
        let sst_number = f.u64("SST file number")?;
        let caller = f.u8("caller")?;
        let hit = f.flag("cache hit flag")?;
        let no_insert = f.flag("no-insert flag")?;
        let (mut get_id, mut key_exists) = (0, None);
        if caller == CALLER_GET || caller == CALLER_MULTI_GET {
            get_id = f.u64("get id")?;
            f.flag("user-snapshot flag")?;
            f.slice("referenced key")?;
            if block_type == TYPE_DATA {
                f.u64("referenced data size")?;
                f.u64("keys in block")?;
                key_exists = Some(f.flag("key-exists flag")?);
            }
        }
        f.finish()?;
        if f.cut {
            return Err(f.short("end"));
        }
        accesses.push(RocksAccess {
            timestamp,
            block_type,
            block_key,
            block_size,
            level,
            sst_number,
            caller,
            hit,
            no_insert,
            get_id,
            key_exists,
        });
        at = next;
    }
    Ok(RocksTrace {
        version: (major, minor),
        start,
        accesses,
    })
}

/// 64-bit FNV-1a: the stand-in offset of a block key.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The kind and placement of an access (see the module docs).
fn kind_of(a: &RocksAccess) -> (BlockKind, TracePlacement) {
    match a.block_type {
        TYPE_FILTER => (BlockKind::Filter, TracePlacement::High),
        TYPE_INDEX if a.caller == CALLER_PREFETCH => (BlockKind::TopIndex, TracePlacement::High),
        TYPE_INDEX => (BlockKind::IndexPartition, TracePlacement::High),
        _ => (BlockKind::Data, TracePlacement::Low),
    }
}

/// shale's records for `t` (see the module docs), with a `measure` mark
/// before the first access stamped at or after `measure` if given (at the
/// end if none is).
pub fn to_block_trace(t: &RocksTrace, measure: Option<u64>) -> BlockTrace {
    let is_get = |a: &RocksAccess| a.caller == CALLER_GET && a.get_id != 0;
    let mut last: HashMap<u64, usize> = HashMap::new();
    let mut found: HashSet<u64> = HashSet::new();
    for (i, a) in t.accesses.iter().enumerate() {
        if is_get(a) {
            last.insert(a.get_id, i);
            if a.key_exists == Some(true) {
                found.insert(a.get_id);
            }
        }
    }
    let mut records = Vec::with_capacity(t.accesses.len() + last.len() + 1);
    let mut marked = measure.is_none();
    for (i, a) in t.accesses.iter().enumerate() {
        if !marked && measure.is_some_and(|m| a.timestamp >= m) {
            records.push(TraceRecord::Mark(MEASURE_MARK.into()));
            marked = true;
        }
        let (kind, placement) = kind_of(a);
        records.push(TraceRecord::Access(BlockAccess {
            lookup: if a.caller == CALLER_GET || a.caller == CALLER_MULTI_GET {
                a.get_id
            } else {
                0
            },
            file: a.sst_number,
            offset: fnv1a(&a.block_key),
            kind,
            placement,
            hit: a.hit,
            charge: a.block_size,
        }));
        if is_get(a) && last.get(&a.get_id) == Some(&i) {
            records.push(TraceRecord::Get {
                found: found.contains(&a.get_id),
            });
        }
    }
    if !marked {
        records.push(TraceRecord::Mark(MEASURE_MARK.into()));
    }
    BlockTrace {
        header: TraceHeader {
            created_unix_secs: t.start / 1_000_000,
            table_format_version: 0,
            sample_threshold: SAMPLE_ALL,
            cache_capacity: 0,
            cache_shards: 64,
            pinned_at_start: 0,
            db: TraceDbShape::default(),
        },
        records,
    }
}

/// The side file of a trace: `<trace>.measure`.
pub fn measure_file(trace: &Path) -> PathBuf {
    let mut s = trace.as_os_str().to_owned();
    s.push(".measure");
    PathBuf::from(s)
}

/// Reads the RocksDB trace at `path` and its `.measure` side file if there
/// is one; errors name the file.
pub fn load(path: &Path) -> Result<(RocksTrace, BlockTrace)> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::msg(format!("cannot read the trace {}: {e}", path.display())))?;
    let t = decode(&bytes).map_err(|e| Error::msg(format!("{}: {e}", path.display())))?;
    let side = measure_file(path);
    let measure = match std::fs::read_to_string(&side) {
        Ok(text) => Some(text.trim().parse::<u64>().map_err(|_| {
            Error::msg(format!(
                "{}: not a timestamp in microseconds: {:?}",
                side.display(),
                text.trim()
            ))
        })?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::msg(format!("cannot read {}: {e}", side.display()))),
    };
    let bt = to_block_trace(&t, measure);
    Ok((t, bt))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(out: &mut Vec<u8>, mut v: u32) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn record(out: &mut Vec<u8>, ts: u64, ty: u8, payload: &[u8]) {
        out.extend_from_slice(&ts.to_le_bytes());
        out.push(ty);
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        out.extend_from_slice(payload);
    }

    fn header(major: u32) -> Vec<u8> {
        let mut p = Vec::new();
        varint(&mut p, 16);
        p.extend_from_slice(MAGIC);
        p.extend_from_slice(&major.to_le_bytes());
        p.extend_from_slice(&8u32.to_le_bytes());
        let mut out = Vec::new();
        record(&mut out, 1_000_000, TYPE_BEGIN, &p);
        out
    }

    struct Acc {
        ts: u64,
        ty: u8,
        key: &'static [u8],
        size: u64,
        sst: u64,
        caller: u8,
        hit: bool,
        get_id: u64,
        exists: bool,
    }

    fn access(out: &mut Vec<u8>, a: &Acc) {
        let mut p = Vec::new();
        varint(&mut p, a.key.len() as u32);
        p.extend_from_slice(a.key);
        p.extend_from_slice(&a.size.to_le_bytes());
        p.extend_from_slice(&0u64.to_le_bytes());
        varint(&mut p, 7);
        p.extend_from_slice(b"default");
        p.extend_from_slice(&3u32.to_le_bytes());
        p.extend_from_slice(&a.sst.to_le_bytes());
        p.extend_from_slice(&[a.caller, u8::from(a.hit), 0]);
        if a.caller == CALLER_GET || a.caller == CALLER_MULTI_GET {
            p.extend_from_slice(&a.get_id.to_le_bytes());
            p.push(0);
            varint(&mut p, 3);
            p.extend_from_slice(b"key");
            if a.ty == TYPE_DATA {
                p.extend_from_slice(&150u64.to_le_bytes());
                p.extend_from_slice(&32u64.to_le_bytes());
                p.push(u8::from(a.exists));
            }
        }
        record(out, a.ts, a.ty, &p);
    }

    fn acc(ts: u64, ty: u8, key: &'static [u8], caller: u8, hit: bool, get_id: u64) -> Acc {
        Acc {
            ts,
            ty,
            key,
            size: if ty == TYPE_DATA { 4064 } else { 1584 },
            sst: 9,
            caller,
            hit,
            get_id,
            exists: true,
        }
    }

    /// A table opened (prefetch of its top-level index), then two Gets:
    /// each an index partition (get id 0, as RocksDB 7.8 writes it) and a
    /// data block; the second Get's key is absent.
    fn sample() -> Vec<u8> {
        let mut out = header(7);
        access(
            &mut out,
            &acc(1_000_010, TYPE_INDEX, b"top", CALLER_PREFETCH, false, 0),
        );
        access(
            &mut out,
            &acc(1_000_020, TYPE_INDEX, b"part1", CALLER_GET, false, 0),
        );
        access(
            &mut out,
            &acc(1_000_030, TYPE_DATA, b"data1", CALLER_GET, false, 1),
        );
        access(
            &mut out,
            &acc(1_000_040, TYPE_INDEX, b"part1", CALLER_GET, true, 0),
        );
        let mut d = acc(1_000_050, TYPE_DATA, b"data1", CALLER_GET, true, 2);
        d.exists = false;
        access(&mut out, &d);
        access(
            &mut out,
            &acc(1_000_060, TYPE_FILTER, b"filt", 10, false, 0),
        );
        out
    }

    #[test]
    fn decodes_a_trace_built_by_hand() {
        let bytes = sample();
        assert!(looks_like(&bytes));
        let t = decode(&bytes).expect("decodes");
        assert_eq!(t.version, (7, 8));
        assert_eq!(t.start, 1_000_000);
        assert_eq!(t.accesses.len(), 6);
        let d = &t.accesses[2];
        assert_eq!(
            (d.block_type, d.block_size, d.sst_number, d.level, d.get_id),
            (TYPE_DATA, 4064, 9, 3, 1)
        );
        assert_eq!(d.key_exists, Some(true));
        assert_eq!(t.accesses[4].key_exists, Some(false));
        assert_eq!(t.accesses[5].caller, 10);
        assert_eq!(t.accesses[5].key_exists, None);

        let bt = to_block_trace(&t, Some(1_000_040));
        let kinds: Vec<String> = bt
            .records
            .iter()
            .map(|r| match r {
                TraceRecord::Access(a) => {
                    format!("{}{}", a.kind.name(), if a.hit { "+" } else { "-" })
                }
                TraceRecord::Get { found } => format!("get{}", if *found { "+" } else { "-" }),
                TraceRecord::Mark(m) => format!("mark {m}"),
                other => format!("{other:?}"),
            })
            .collect();
        let names = |k: BlockKind| k.name();
        assert_eq!(
            kinds,
            vec![
                format!("{}-", names(BlockKind::TopIndex)),
                format!("{}-", names(BlockKind::IndexPartition)),
                format!("{}-", names(BlockKind::Data)),
                "get+".to_string(),
                "mark measure".to_string(),
                format!("{}+", names(BlockKind::IndexPartition)),
                format!("{}+", names(BlockKind::Data)),
                "get-".to_string(),
                format!("{}-", names(BlockKind::Filter)),
            ]
        );
        let TraceRecord::Access(part) = &bt.records[1] else {
            panic!("an access: {:?}", bt.records[1]);
        };
        assert_eq!(
            (part.file, part.offset, part.charge, part.lookup),
            (9, fnv1a(b"part1"), 1584, 0)
        );
        assert_eq!(part.placement, TracePlacement::High);
        // The same block key gives the same block.
        let TraceRecord::Access(again) = &bt.records[5] else {
            panic!("an access: {:?}", bt.records[5]);
        };
        assert_eq!((again.file, again.offset), (part.file, part.offset));
        assert_eq!(bt.header.created_unix_secs, 1);
        assert_eq!(bt.header.sample_threshold, SAMPLE_ALL);
    }

    #[test]
    fn a_trace_replays_from_its_measure_mark() {
        let t = decode(&sample()).expect("decodes");
        let bt = to_block_trace(&t, Some(1_000_040));
        let s = &shale::trace::simulate(
            &bt,
            &[1 << 20],
            1,
            Some(MEASURE_MARK),
            shale::trace::Policy::Lru,
        )
        .expect("replays")[0];
        // One Get counted; its partition and data block were read before.
        assert_eq!(s.gets, 1);
        assert_eq!(s.found, 0);
        assert_eq!(s.kind(BlockKind::IndexPartition).hits, 1.0);
        assert_eq!(s.kind(BlockKind::Data).hits, 1.0);
        assert_eq!(s.kind(BlockKind::Filter).misses, 1.0);
        // A measure stamp past every access puts the mark at the end.
        let late = to_block_trace(&t, Some(2_000_000));
        assert!(matches!(late.records.last(), Some(TraceRecord::Mark(m)) if m == MEASURE_MARK));
    }

    #[test]
    fn every_cut_of_the_file_is_truncated_at_its_record() {
        let bytes = sample();
        let full = decode(&bytes).expect("decodes");
        // Record starts, from the header on.
        let mut starts = vec![0usize];
        let mut at = 0;
        while at < bytes.len() {
            let len = u32::from_le_bytes([
                bytes[at + 9],
                bytes[at + 10],
                bytes[at + 11],
                bytes[at + 12],
            ]);
            at += RECORD_HEAD + len as usize;
            starts.push(at);
        }
        for cut in 1..bytes.len() {
            let got = decode(&bytes[..cut]);
            if let Some(k) = starts.iter().position(|&s| s == cut) {
                // A cut between records is a shorter, complete trace.
                let t = got.expect("a cut between records decodes");
                assert_eq!(t.accesses, full.accesses[..k - 1].to_vec(), "cut at {cut}");
                continue;
            }
            let record = *starts.iter().filter(|&&s| s < cut).max().expect("a start");
            match got {
                Err(RocksTraceError::Truncated { offset, .. }) => {
                    assert_eq!(offset, record as u64, "cut at {cut}")
                }
                // Cut inside the header's magic: no header to know it by.
                Err(RocksTraceError::NotATrace) => assert!(cut < RECORD_HEAD + 17, "cut at {cut}"),
                other => panic!("cut at {cut}: {other:?}"),
            }
        }
    }

    #[test]
    fn damage_is_reported_where_it_is() {
        let good = sample();
        let hlen = header(7).len();
        // An unknown record type.
        let mut bad = good.clone();
        bad[hlen + 8] = 4;
        assert_eq!(
            decode(&bad),
            Err(RocksTraceError::Damaged {
                offset: hlen as u64 + 8,
                what: "record type 4 is not a block-cache access".into()
            })
        );
        // A hit flag of 7: the first access's payload is key (1 + 3),
        // size 8, cf id 8, cf name 1 + 7, level 4, sst 8, caller 1.
        let mut bad = good.clone();
        let hit_at = hlen + RECORD_HEAD + 4 + 8 + 8 + 8 + 4 + 8 + 1;
        bad[hit_at] = 7;
        assert!(matches!(
            decode(&bad),
            Err(RocksTraceError::Damaged { offset, .. }) if offset == hit_at as u64
        ));
        // A payload longer than its fields.
        let mut bad = header(7);
        let mut extra = Vec::new();
        access(
            &mut extra,
            &acc(5, TYPE_INDEX, b"k", CALLER_PREFETCH, false, 0),
        );
        let len = u32::from_le_bytes([extra[9], extra[10], extra[11], extra[12]]) + 1;
        extra[9..13].copy_from_slice(&len.to_le_bytes());
        extra.push(0);
        bad.extend_from_slice(&extra);
        assert!(matches!(
            decode(&bad),
            Err(RocksTraceError::Damaged { offset, what })
                if offset == (bad.len() - 1) as u64 && what.contains("1 bytes after")
        ));
        // Another RocksDB major version, and not a trace at all.
        assert_eq!(
            decode(&header(6)),
            Err(RocksTraceError::UnsupportedVersion { major: 6, minor: 8 })
        );
        assert_eq!(
            decode(b"shaleBTR\x01\0\0\0"),
            Err(RocksTraceError::NotATrace)
        );
        // An end record stops the file.
        let mut ended = good.clone();
        record(&mut ended, 9, TYPE_END, &[]);
        ended.extend_from_slice(b"whatever follows");
        assert_eq!(decode(&ended), decode(&good));
    }
}
