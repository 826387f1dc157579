//! A file system wrapper that records the engine's write I/O.
//!
//! [`TraceFs`] forwards every call to an inner [`FileSystem`] and records, in
//! order, what reaches storage: file creates (with their kind and
//! [`WriteLifetime`] hint), appends and object writes (file, offset, length),
//! syncs, finishes, aborts, renames and removes. Reads, listings and locks are
//! forwarded but not recorded. Only operations that succeeded on the inner file
//! system are recorded.
//!
//! The trace is a `Vec<`[`TraceEvent`]`>` ([`TraceFs::events`],
//! [`TraceFs::take_events`]); [`encode_trace`] and [`decode_trace`] turn it into
//! a compact versioned byte format (`docs/format/write-trace.md`) so that a
//! trace recorded by one run can be replayed later, for example on the
//! conventional-SSD model of `shale-zoned`.
//!
//! # Cost
//!
//! Recording an event is one push onto a `Vec` behind a mutex (a create also
//! clones its path). No data bytes are copied.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::{AppendFile, FileSystem, ObjectWriter, WriteLifetime};

/// The kind of a traced file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TraceFileKind {
    /// Created by [`FileSystem::create_append`]: a log or the manifest.
    Append,
    /// Created by [`FileSystem::create_object`]: a table (or a temporary file).
    Object,
}

/// One recorded operation. Files are named by an id assigned at their create
/// (0, 1, 2, ... in the order of the creates), paths appear only in creates,
/// renames and removes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// A file was created (an append file truncates any file at `path`).
    Create {
        /// The id later events use for this file.
        file: u32,
        /// Append file or write-once object.
        kind: TraceFileKind,
        /// The lifetime hint given at the create.
        hint: WriteLifetime,
        /// Where it was created.
        path: PathBuf,
    },
    /// `len` bytes were appended (or written, for an object) at `offset`, which
    /// is always the file's length before the write.
    Write {
        /// File id.
        file: u32,
        /// Byte offset of the write in the file.
        offset: u64,
        /// Bytes written.
        len: u64,
    },
    /// An append file was synced.
    Sync {
        /// File id.
        file: u32,
    },
    /// An object was finished (made durable).
    Finish {
        /// File id.
        file: u32,
    },
    /// An object was aborted, which removes it.
    Abort {
        /// File id.
        file: u32,
    },
    /// `from` replaced `to`.
    Rename {
        /// Old name.
        from: PathBuf,
        /// New name (a file there before is gone).
        to: PathBuf,
    },
    /// The file at `path` was removed.
    Remove {
        /// The removed name.
        path: PathBuf,
    },
}

struct Recorder {
    events: Mutex<Vec<TraceEvent>>,
    next_id: Mutex<u32>,
}

impl Recorder {
    fn push(&self, event: TraceEvent) {
        self.events.lock().push(event);
    }
}

/// Wraps a file system and records its write I/O as [`TraceEvent`]s.
pub struct TraceFs {
    inner: Arc<dyn FileSystem>,
    rec: Arc<Recorder>,
}

impl TraceFs {
    /// Wraps `inner`; the trace starts empty.
    pub fn new(inner: Arc<dyn FileSystem>) -> TraceFs {
        TraceFs {
            inner,
            rec: Arc::new(Recorder {
                events: Mutex::new(Vec::new()),
                next_id: Mutex::new(0),
            }),
        }
    }
    /// A copy of the events recorded so far, in order.
    pub fn events(&self) -> Vec<TraceEvent> {
        self.rec.events.lock().clone()
    }
    /// Takes the events recorded so far; recording goes on into an empty list
    /// (file ids keep counting, so later events still name the same files).
    pub fn take_events(&self) -> Vec<TraceEvent> {
        std::mem::take(&mut *self.rec.events.lock())
    }
    /// Number of events recorded so far.
    pub fn len(&self) -> usize {
        self.rec.events.lock().len()
    }
    /// True if nothing was recorded yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn create_event(&self, kind: TraceFileKind, hint: WriteLifetime, path: &Path) -> u32 {
        // The id is taken under the events lock so that ids appear in order.
        let mut events = self.rec.events.lock();
        let mut next = self.rec.next_id.lock();
        let file = *next;
        *next = next.wrapping_add(1);
        events.push(TraceEvent::Create {
            file,
            kind,
            hint,
            path: path.to_path_buf(),
        });
        file
    }
}

struct TraceAppend {
    inner: Box<dyn AppendFile>,
    rec: Arc<Recorder>,
    file: u32,
}

impl AppendFile for TraceAppend {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        let offset = self.inner.len();
        self.inner.append(data)?;
        self.rec.push(TraceEvent::Write {
            file: self.file,
            offset,
            len: data.len() as u64,
        });
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> io::Result<()> {
        self.inner.sync()?;
        self.rec.push(TraceEvent::Sync { file: self.file });
        Ok(())
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

struct TraceObject {
    inner: Box<dyn ObjectWriter>,
    rec: Arc<Recorder>,
    file: u32,
}

impl ObjectWriter for TraceObject {
    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        let offset = self.inner.len();
        self.inner.write(data)?;
        self.rec.push(TraceEvent::Write {
            file: self.file,
            offset,
            len: data.len() as u64,
        });
        Ok(())
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn finish(self: Box<Self>) -> io::Result<()> {
        let (rec, file) = (self.rec, self.file);
        self.inner.finish()?;
        rec.push(TraceEvent::Finish { file });
        Ok(())
    }
    fn abort(self: Box<Self>) -> io::Result<()> {
        let (rec, file) = (self.rec, self.file);
        self.inner.abort()?;
        rec.push(TraceEvent::Abort { file });
        Ok(())
    }
}

/// Records creates, renames and removes; everything else (reads, listings,
/// locks, the read queue) goes to the inner file system as is.
impl crate::FsLayer for TraceFs {
    fn inner(&self) -> &dyn FileSystem {
        &*self.inner
    }
    fn create_append(&self, path: &Path, hint: WriteLifetime) -> io::Result<Box<dyn AppendFile>> {
        let inner = self.inner.create_append(path, hint)?;
        let file = self.create_event(TraceFileKind::Append, hint, path);
        Ok(Box::new(TraceAppend {
            inner,
            rec: self.rec.clone(),
            file,
        }))
    }
    fn create_object(&self, path: &Path, hint: WriteLifetime) -> io::Result<Box<dyn ObjectWriter>> {
        let inner = self.inner.create_object(path, hint)?;
        let file = self.create_event(TraceFileKind::Object, hint, path);
        Ok(Box::new(TraceObject {
            inner,
            rec: self.rec.clone(),
            file,
        }))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)?;
        self.rec.push(TraceEvent::Rename {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
        });
        Ok(())
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)?;
        self.rec.push(TraceEvent::Remove {
            path: path.to_path_buf(),
        });
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Serialization.

/// The trace format's magic.
const MAGIC: &[u8; 8] = b"SHTRACE\0";
/// The trace format version [`encode_trace`] writes and [`decode_trace`] reads.
pub const TRACE_FORMAT_VERSION: u32 = 1;

const TAG_END: u8 = 0x00;
const TAG_CREATE_APPEND: u8 = 0x01;
const TAG_CREATE_OBJECT: u8 = 0x02;
const TAG_WRITE: u8 = 0x03;
const TAG_SYNC: u8 = 0x04;
const TAG_FINISH: u8 = 0x05;
const TAG_ABORT: u8 = 0x06;
const TAG_RENAME: u8 = 0x07;
const TAG_REMOVE: u8 = 0x08;

/// The frozen code of a lifetime hint in the trace format (independent of the
/// enum's own numbering, which may change).
fn hint_code(hint: WriteLifetime) -> u8 {
    match hint {
        WriteLifetime::NotSet => 0,
        WriteLifetime::Short => 1,
        WriteLifetime::Medium => 2,
        WriteLifetime::Long => 3,
        WriteLifetime::Extreme => 4,
    }
}

fn hint_of(code: u8) -> Option<WriteLifetime> {
    Some(match code {
        0 => WriteLifetime::NotSet,
        1 => WriteLifetime::Short,
        2 => WriteLifetime::Medium,
        3 => WriteLifetime::Long,
        4 => WriteLifetime::Extreme,
        _ => return None,
    })
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_path(out: &mut Vec<u8>, path: &Path) {
    let bytes = path.as_os_str().as_bytes();
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Encodes a trace (format version 1, `docs/format/write-trace.md`).
///
/// ```text
/// trace  := magic "SHTRACE\0" (8 bytes) | version u32 LE (= 1) | event* | end
/// event  := 0x01 file:varint hint:u8 path        create an append file
///         | 0x02 file:varint hint:u8 path        create an object
///         | 0x03 file:varint offset:varint len:varint   write / append
///         | 0x04 file:varint                     sync (append file)
///         | 0x05 file:varint                     finish (object)
///         | 0x06 file:varint                     abort (object; removes it)
///         | 0x07 from:path to:path               rename
///         | 0x08 path                            remove
/// path   := len:varint bytes{len}                the path's bytes (Unix)
/// hint   := 0 not set | 1 short | 2 medium | 3 long | 4 extreme   (frozen)
/// end    := 0x00 count:varint                    count = number of events
/// varint := LEB128: 7 bits per byte, least significant first, high bit = more
/// ```
///
/// Nothing may follow `end`.
pub fn encode_trace(events: &[TraceEvent]) -> Vec<u8> {
    let mut out = Vec::with_capacity(12 + events.len() * 6);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&TRACE_FORMAT_VERSION.to_le_bytes());
    for event in events {
        match event {
            TraceEvent::Create {
                file,
                kind,
                hint,
                path,
            } => {
                out.push(match kind {
                    TraceFileKind::Append => TAG_CREATE_APPEND,
                    TraceFileKind::Object => TAG_CREATE_OBJECT,
                });
                put_varint(&mut out, u64::from(*file));
                out.push(hint_code(*hint));
                put_path(&mut out, path);
            }
            TraceEvent::Write { file, offset, len } => {
                out.push(TAG_WRITE);
                put_varint(&mut out, u64::from(*file));
                put_varint(&mut out, *offset);
                put_varint(&mut out, *len);
            }
            TraceEvent::Sync { file } => {
                out.push(TAG_SYNC);
                put_varint(&mut out, u64::from(*file));
            }
            TraceEvent::Finish { file } => {
                out.push(TAG_FINISH);
                put_varint(&mut out, u64::from(*file));
            }
            TraceEvent::Abort { file } => {
                out.push(TAG_ABORT);
                put_varint(&mut out, u64::from(*file));
            }
            TraceEvent::Rename { from, to } => {
                out.push(TAG_RENAME);
                put_path(&mut out, from);
                put_path(&mut out, to);
            }
            TraceEvent::Remove { path } => {
                out.push(TAG_REMOVE);
                put_path(&mut out, path);
            }
        }
    }
    out.push(TAG_END);
    put_varint(&mut out, events.len() as u64);
    out
}

/// Why a byte string is not a valid trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceDecodeError {
    /// The magic is missing or wrong: not a write trace.
    NotATrace,
    /// A trace of a version this code does not read.
    UnsupportedVersion(u32),
    /// The bytes end inside an event or before the end marker.
    Truncated {
        /// Byte offset where more bytes were needed.
        offset: usize,
    },
    /// A byte that makes no sense at this place.
    Invalid {
        /// Byte offset of the bad field.
        offset: usize,
        /// What is wrong.
        what: &'static str,
    },
}

impl fmt::Display for TraceDecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceDecodeError::NotATrace => write!(f, "not a shale write trace (bad magic)"),
            TraceDecodeError::UnsupportedVersion(v) => write!(
                f,
                "write trace version {v} is not supported (this build reads version {TRACE_FORMAT_VERSION})"
            ),
            TraceDecodeError::Truncated { offset } => {
                write!(f, "write trace truncated at byte {offset}")
            }
            TraceDecodeError::Invalid { offset, what } => {
                write!(f, "invalid write trace at byte {offset}: {what}")
            }
        }
    }
}

impl std::error::Error for TraceDecodeError {}

impl From<TraceDecodeError> for io::Error {
    fn from(e: TraceDecodeError) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, e)
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, TraceDecodeError> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or(TraceDecodeError::Truncated { offset: self.pos })?;
        self.pos += 1;
        Ok(b)
    }
    fn varint(&mut self) -> Result<u64, TraceDecodeError> {
        let start = self.pos;
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            let bits = u64::from(b & 0x7f);
            if shift == 63 && bits > 1 {
                break;
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(TraceDecodeError::Invalid {
            offset: start,
            what: "varint longer than 64 bits",
        })
    }
    fn file(&mut self) -> Result<u32, TraceDecodeError> {
        let start = self.pos;
        u32::try_from(self.varint()?).map_err(|_| TraceDecodeError::Invalid {
            offset: start,
            what: "file id above 2^32 - 1",
        })
    }
    fn path(&mut self) -> Result<PathBuf, TraceDecodeError> {
        let start = self.pos;
        let len = self.varint()?;
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| self.pos.checked_add(len))
            .ok_or(TraceDecodeError::Invalid {
                offset: start,
                what: "path length too large",
            })?;
        let bytes = self
            .buf
            .get(self.pos..end)
            .ok_or(TraceDecodeError::Truncated {
                offset: self.buf.len(),
            })?;
        self.pos = end;
        Ok(PathBuf::from(std::ffi::OsString::from_vec(bytes.to_vec())))
    }
}

/// Decodes a trace written by [`encode_trace`] (any version this build reads).
pub fn decode_trace(bytes: &[u8]) -> Result<Vec<TraceEvent>, TraceDecodeError> {
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(TraceDecodeError::NotATrace);
    }
    let version = bytes
        .get(8..12)
        .ok_or(TraceDecodeError::Truncated { offset: 8 })?;
    let version = u32::from_le_bytes([version[0], version[1], version[2], version[3]]);
    if version != TRACE_FORMAT_VERSION {
        return Err(TraceDecodeError::UnsupportedVersion(version));
    }
    let mut r = Reader {
        buf: bytes,
        pos: 12,
    };
    let mut events = Vec::new();
    loop {
        let at = r.pos;
        let tag = r.byte()?;
        let event = match tag {
            TAG_END => {
                let count_at = r.pos;
                let count = r.varint()?;
                if count != events.len() as u64 {
                    return Err(TraceDecodeError::Invalid {
                        offset: count_at,
                        what: "event count does not match the events",
                    });
                }
                if r.pos != bytes.len() {
                    return Err(TraceDecodeError::Invalid {
                        offset: r.pos,
                        what: "bytes after the end marker",
                    });
                }
                return Ok(events);
            }
            TAG_CREATE_APPEND | TAG_CREATE_OBJECT => {
                let file = r.file()?;
                let hint_at = r.pos;
                let hint = hint_of(r.byte()?).ok_or(TraceDecodeError::Invalid {
                    offset: hint_at,
                    what: "unknown lifetime hint code",
                })?;
                let path = r.path()?;
                let kind = if tag == TAG_CREATE_APPEND {
                    TraceFileKind::Append
                } else {
                    TraceFileKind::Object
                };
                TraceEvent::Create {
                    file,
                    kind,
                    hint,
                    path,
                }
            }
            TAG_WRITE => TraceEvent::Write {
                file: r.file()?,
                offset: r.varint()?,
                len: r.varint()?,
            },
            TAG_SYNC => TraceEvent::Sync { file: r.file()? },
            TAG_FINISH => TraceEvent::Finish { file: r.file()? },
            TAG_ABORT => TraceEvent::Abort { file: r.file()? },
            TAG_RENAME => TraceEvent::Rename {
                from: r.path()?,
                to: r.path()?,
            },
            TAG_REMOVE => TraceEvent::Remove { path: r.path()? },
            _ => {
                return Err(TraceDecodeError::Invalid {
                    offset: at,
                    what: "unknown event tag",
                })
            }
        };
        events.push(event);
    }
}

/// Totals of a trace, for sizing a replay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceSummary {
    /// Files created.
    pub files: u64,
    /// Bytes written (appends and object writes).
    pub bytes_written: u64,
    /// Largest sum of the sizes of the files alive at one time (files
    /// created in the trace; removed, aborted or replaced files no longer
    /// count).
    pub peak_live_bytes: u64,
    /// Sum of the sizes of the files alive at the end.
    pub final_live_bytes: u64,
}

/// Computes a trace's totals (see [`TraceSummary`]).
pub fn summarize_trace(events: &[TraceEvent]) -> TraceSummary {
    let mut s = TraceSummary::default();
    let mut size: HashMap<u32, u64> = HashMap::new();
    let mut names: HashMap<PathBuf, u32> = HashMap::new();
    let mut live = 0u64;
    fn drop_name(
        names: &mut HashMap<PathBuf, u32>,
        size: &mut HashMap<u32, u64>,
        live: &mut u64,
        path: &Path,
    ) {
        if let Some(old) = names.remove(path) {
            *live = live.saturating_sub(size.remove(&old).unwrap_or(0));
        }
    }
    for event in events {
        match event {
            TraceEvent::Create { file, path, .. } => {
                s.files += 1;
                drop_name(&mut names, &mut size, &mut live, path);
                names.insert(path.clone(), *file);
                size.insert(*file, 0);
            }
            TraceEvent::Write { file, offset, len } => {
                s.bytes_written += len;
                if let Some(sz) = size.get_mut(file) {
                    let end = offset + len;
                    if end > *sz {
                        live += end - *sz;
                        *sz = end;
                    }
                }
                s.peak_live_bytes = s.peak_live_bytes.max(live);
            }
            TraceEvent::Abort { file } => {
                live = live.saturating_sub(size.remove(file).unwrap_or(0));
                names.retain(|_, id| id != file);
            }
            TraceEvent::Rename { from, to } => {
                if from != to {
                    if let Some(id) = names.remove(from) {
                        drop_name(&mut names, &mut size, &mut live, to);
                        names.insert(to.clone(), id);
                    }
                }
            }
            TraceEvent::Remove { path } => drop_name(&mut names, &mut size, &mut live, path),
            TraceEvent::Sync { .. } | TraceEvent::Finish { .. } => {}
        }
    }
    s.final_live_bytes = live;
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemFs;

    fn sample(fs: &TraceFs) {
        let mut log = fs
            .create_append(Path::new("/db/000001.log"), WriteLifetime::Short)
            .expect("create log");
        log.append(b"hello").expect("append");
        log.append(&[7u8; 5000]).expect("append");
        log.sync().expect("sync");
        let mut t = fs
            .create_object(Path::new("/db/000002.sst"), WriteLifetime::Extreme)
            .expect("create table");
        t.write(&[1u8; 4096]).expect("write");
        t.write(&[2u8; 100]).expect("write");
        t.finish().expect("finish");
        let mut a = fs
            .create_object(Path::new("/db/000003.sst"), WriteLifetime::Long)
            .expect("create table");
        a.write(b"x").expect("write");
        a.abort().expect("abort");
        let mut tmp = fs
            .create_object(Path::new("/db/CURRENT.tmp"), WriteLifetime::NotSet)
            .expect("create tmp");
        tmp.write(b"MANIFEST-000004\n").expect("write");
        tmp.finish().expect("finish");
        fs.rename(Path::new("/db/CURRENT.tmp"), Path::new("/db/CURRENT"))
            .expect("rename");
        fs.remove(Path::new("/db/000001.log")).expect("remove");
    }

    #[test]
    fn records_writes_in_order_and_forwards_them() {
        let mem = Arc::new(MemFs::new());
        let fs = TraceFs::new(mem.clone());
        fs.create_dir_all(Path::new("/db")).expect("mkdir");
        sample(&fs);
        assert!(fs.remove(Path::new("/db/nothing")).is_err());
        let events = fs.events();
        assert_eq!(events.len(), 16, "{events:#?}");
        assert_eq!(
            events[0],
            TraceEvent::Create {
                file: 0,
                kind: TraceFileKind::Append,
                hint: WriteLifetime::Short,
                path: PathBuf::from("/db/000001.log"),
            }
        );
        assert_eq!(
            events[2],
            TraceEvent::Write {
                file: 0,
                offset: 5,
                len: 5000
            }
        );
        assert_eq!(events[3], TraceEvent::Sync { file: 0 });
        assert_eq!(events[7], TraceEvent::Finish { file: 1 });
        assert_eq!(events[10], TraceEvent::Abort { file: 2 });
        assert!(matches!(events[15], TraceEvent::Remove { .. }));
        assert_eq!(
            mem.read_all(Path::new("/db/CURRENT")).expect("read"),
            b"MANIFEST-000004\n"
        );
        let s = summarize_trace(&events);
        assert_eq!(s.files, 4);
        assert_eq!(s.bytes_written, 5 + 5000 + 4196 + 1 + 16);
        assert_eq!(s.peak_live_bytes, 5005 + 4196 + 16);
        assert_eq!(s.final_live_bytes, 4196 + 16);
        assert_eq!(fs.take_events().len(), 16);
        assert!(fs.is_empty());
    }

    #[test]
    fn encoding_round_trips_and_rejects_damage() {
        let fs = TraceFs::new(Arc::new(MemFs::new()));
        fs.create_dir_all(Path::new("/db")).expect("mkdir");
        sample(&fs);
        let events = fs.events();
        let bytes = encode_trace(&events);
        assert_eq!(decode_trace(&bytes).expect("decode"), events);
        assert_eq!(
            decode_trace(&encode_trace(&[])).expect("empty"),
            Vec::<TraceEvent>::new()
        );
        for cut in 0..bytes.len() {
            assert!(decode_trace(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        assert_eq!(
            decode_trace(b"garbage!...."),
            Err(TraceDecodeError::NotATrace)
        );
        let mut v2 = bytes.clone();
        v2[8] = 2;
        assert_eq!(
            decode_trace(&v2),
            Err(TraceDecodeError::UnsupportedVersion(2))
        );
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(matches!(
            decode_trace(&extra),
            Err(TraceDecodeError::Invalid { .. })
        ));
        let mut bad_tag = bytes.clone();
        bad_tag[12] = 0x7f;
        assert!(matches!(
            decode_trace(&bad_tag),
            Err(TraceDecodeError::Invalid {
                offset: 12,
                what: "unknown event tag"
            })
        ));
        // A big offset takes a multi-byte varint.
        let big = vec![TraceEvent::Write {
            file: u32::MAX,
            offset: u64::MAX,
            len: 1 << 40,
        }];
        assert_eq!(decode_trace(&encode_trace(&big)).expect("decode"), big);
    }
}
