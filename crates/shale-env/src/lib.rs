//! The file-system seam of shale.
//!
//! Every byte the engine reads or writes goes through [`FileSystem`], so that a
//! test can inject an error at any step ([`FaultFs`]), simulate a crash that keeps
//! only synced bytes ([`CrashFs`]), record the write I/O for replay on a
//! storage model ([`TraceFs`]), and so that a zoned-storage backend can later
//! place files by their expected lifetime.
//!
//! The seam distinguishes two kinds of written files, because storage treats them
//! differently:
//!
//! * **append-only files** ([`AppendFile`]): the write-ahead log and the manifest.
//!   They grow by appends, are synced many times, and are read back only during
//!   recovery.
//! * **write-once objects** ([`ObjectWriter`]): tables. They are written front to
//!   back exactly once, then either [`ObjectWriter::finish`]ed (made durable and
//!   visible under their name) or [`ObjectWriter::abort`]ed (removed). They are
//!   never modified after `finish`.
//!
//! Every create carries a [`WriteLifetime`] hint.
//!
//! # Concurrency
//!
//! A `FileSystem` is shared (`Send + Sync`) and its methods may be called from any
//! thread. A [`RandomAccessFile`] is shared by all readers of a table and must
//! support concurrent `read_exact_at` calls. Writers ([`AppendFile`],
//! [`ObjectWriter`]) are owned by one thread at a time (`Send`, not `Sync`).
//!
//! # Durability contract
//!
//! Data appended or written is durable only after `sync` (append files) or
//! `finish` (objects) returned `Ok`. A newly created, renamed or removed name is
//! durable only after [`FileSystem::sync_dir`] on its parent directory returned
//! `Ok`. [`CrashFs`] enforces exactly this contract and nothing more.
//!
//! # File systems that wrap another
//!
//! A file system that wraps another and changes a few of its calls
//! ([`TraceFs`], [`CrashFs`], a test's gate) implements [`FsLayer`] instead
//! of [`FileSystem`]: it names the file system underneath and overrides only
//! what it changes; every other call, the defaulted ones (`open_scan`,
//! `batches_reads`, `read_queue`, `read_all`) included, goes to the inner
//! file system, and every `FsLayer` is a `FileSystem`. A wrapper written
//! against `FileSystem` directly would silently replace the inner file
//! system's overrides of the defaulted methods with the trait's defaults.
//! [`FaultFs`], which checks nearly every call against its rules, implements
//! `FileSystem` itself.

// The system calls of `PosixFs` (O_DIRECT buffers, fadvise, write-life hints,
// flock) and of thread priorities are the engine's only unsafe code; every
// block states why it is sound.
#![allow(unsafe_code)]
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

use std::io;
use std::path::Path;
use std::sync::Arc;

mod crash;
mod fault;
mod layer;
mod mem;
mod posix;
pub mod priority;
mod trace;
#[cfg(target_os = "linux")]
mod uring;

pub use crash::CrashFs;
pub use fault::{FaultFs, FaultRule, OpKind};
pub use layer::FsLayer;
pub use mem::MemFs;
pub use posix::{raise_open_files_limit, PosixFs, PosixOptions};
pub use trace::{
    decode_trace, encode_trace, summarize_trace, TraceDecodeError, TraceEvent, TraceFileKind,
    TraceFs, TraceSummary, TRACE_FORMAT_VERSION,
};

/// Expected lifetime of the data in a new file, from the shortest to the longest.
///
/// A hint only: a regular file system may ignore it (on Linux `PosixFs` passes it
/// to `F_SET_RW_HINT` where supported); a zoned backend places files with the same
/// hint in the same zones so that whole zones die together.
/// Not persisted by the engine; the numbering may still change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WriteLifetime {
    /// No expectation (lock files, `CURRENT`, temporary files).
    NotSet,
    /// Write-ahead logs: deleted as soon as their memtable is flushed.
    Short,
    /// The manifest and L0 tables: rewritten within minutes.
    Medium,
    /// Tables of the middle levels.
    Long,
    /// Tables of the last levels: live for as long as the data does.
    Extreme,
}

/// An open file that only grows at its end: a write-ahead log or the manifest.
pub trait AppendFile: Send {
    /// Appends `data` at the end of the file. Not durable until [`AppendFile::sync`].
    fn append(&mut self, data: &[u8]) -> io::Result<()>;
    /// Pushes buffered bytes to the operating system (not durable).
    fn flush(&mut self) -> io::Result<()>;
    /// Makes every byte appended so far durable.
    fn sync(&mut self) -> io::Result<()>;
    /// Number of bytes appended so far (synced or not).
    fn len(&self) -> u64;
    /// True if nothing was appended yet.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A write-once object being written: a table.
///
/// Dropping an `ObjectWriter` without calling `finish` or `abort` leaves a file that
/// is not durable; the engine removes such leftovers when it opens the database.
pub trait ObjectWriter: Send {
    /// Writes `data` after the bytes written so far.
    fn write(&mut self, data: &[u8]) -> io::Result<()>;
    /// Number of bytes written so far.
    fn len(&self) -> u64;
    /// True if nothing was written yet.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Makes the whole object durable (data synced). Its name becomes durable with
    /// the next `sync_dir` of its directory.
    fn finish(self: Box<Self>) -> io::Result<()>;
    /// Abandons the object and removes it.
    fn abort(self: Box<Self>) -> io::Result<()>;
}

/// A file opened for positioned reads. Shared by many threads.
pub trait RandomAccessFile: Send + Sync {
    /// Fills `buf` with the bytes at `offset..offset + buf.len()`.
    ///
    /// A range that extends beyond the end of the file is an error of kind
    /// [`io::ErrorKind::UnexpectedEof`]. One call is one physical read request.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// The `len` bytes at `offset` in a buffer of their own, with one physical
    /// read request, as [`read_exact_at`](Self::read_exact_at) reads them. The
    /// default zero-fills the buffer first; a file that can fill a buffer
    /// without that (a memory mapping) overrides it.
    fn read_vec_at(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.read_exact_at(offset, &mut buf)?;
        Ok(buf)
    }
    /// Size of the file in bytes.
    fn size(&self) -> u64;
    /// The file as `Any`, for a file system that recognizes its own files in
    /// [`FileSystem::read_queue`]. None by default.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

/// A read of a [`ReadQueue`] that completed.
#[derive(Debug)]
pub struct CompletedRead {
    /// The tag the read was submitted with.
    pub tag: u64,
    /// The bytes read (all that were asked for), or why they could not be
    /// read: the error [`RandomAccessFile::read_exact_at`] would give.
    pub result: io::Result<Vec<u8>>,
}

/// Positioned reads in flight from one thread ([`FileSystem::read_queue`]):
/// the thread submits reads as it finds it needs them and takes their
/// answers as they come, so that it keeps many device reads in flight while
/// it goes on working. Each read is one physical read request.
///
/// Dropping a queue waits for the reads still in flight (their answers are
/// dropped).
pub trait ReadQueue {
    /// The most reads the queue keeps in flight at once; submitting more
    /// holds them back until earlier ones complete.
    fn capacity(&self) -> usize;
    /// Reads submitted whose answers [`ReadQueue::complete`] has not yet
    /// returned.
    fn pending(&self) -> usize;
    /// Starts reading `len` bytes of `file` at `offset`; `tag` names the read
    /// in its answer. Never fails: a read that cannot start is answered with
    /// its error.
    fn submit(&mut self, file: &Arc<dyn RandomAccessFile>, offset: u64, len: usize, tag: u64);
    /// Waits until at least one pending read has completed and returns every
    /// read that has, in the order they completed; empty only when none is
    /// pending.
    fn complete(&mut self) -> Vec<CompletedRead>;
}

/// A [`ReadQueue`] that runs its reads one after the other, each when
/// [`ReadQueue::complete`] is called (the default of
/// [`FileSystem::read_queue`]).
pub struct SerialReadQueue {
    waiting: std::collections::VecDeque<(Arc<dyn RandomAccessFile>, u64, usize, u64)>,
    newest_first: bool,
}

impl SerialReadQueue {
    /// Reads the oldest submitted read first.
    pub fn new() -> SerialReadQueue {
        SerialReadQueue {
            waiting: std::collections::VecDeque::new(),
            newest_first: false,
        }
    }

    /// Reads the newest submitted read first, so that answers come back in
    /// another order than the reads were submitted (for tests of callers
    /// that must not depend on it).
    pub fn newest_first() -> SerialReadQueue {
        SerialReadQueue {
            newest_first: true,
            ..SerialReadQueue::new()
        }
    }
}

impl Default for SerialReadQueue {
    fn default() -> Self {
        SerialReadQueue::new()
    }
}

/// How many reads a [`SerialReadQueue`] takes before the caller must take
/// answers: what a caller sizes its work by, not a limit of its own.
const SERIAL_QUEUE_CAPACITY: usize = 64;

impl ReadQueue for SerialReadQueue {
    fn capacity(&self) -> usize {
        SERIAL_QUEUE_CAPACITY
    }
    fn pending(&self) -> usize {
        self.waiting.len()
    }
    fn submit(&mut self, file: &Arc<dyn RandomAccessFile>, offset: u64, len: usize, tag: u64) {
        self.waiting.push_back((file.clone(), offset, len, tag));
    }
    fn complete(&mut self) -> Vec<CompletedRead> {
        let next = if self.newest_first {
            self.waiting.pop_back()
        } else {
            self.waiting.pop_front()
        };
        next.map(|(file, offset, len, tag)| CompletedRead {
            tag,
            result: file.read_vec_at(offset, len),
        })
        .into_iter()
        .collect()
    }
}

/// A lock on a database directory (exclusive or shared), released when dropped.
pub trait FileLock: Send + Sync {}

/// The file system the engine runs on.
pub trait FileSystem: Send + Sync + 'static {
    /// Creates (or truncates) an append-only file.
    fn create_append(&self, path: &Path, hint: WriteLifetime) -> io::Result<Box<dyn AppendFile>>;
    /// Creates a write-once object; fails if `path` exists.
    fn create_object(&self, path: &Path, hint: WriteLifetime) -> io::Result<Box<dyn ObjectWriter>>;
    /// Opens an existing file for positioned reads.
    fn open_random(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>>;
    /// Opens an existing file for one pass of large reads by background work
    /// (a compaction reading its inputs): a file system with a cache should
    /// keep these reads out of it, so that they do not evict what foreground
    /// reads need. By default the same as [`FileSystem::open_random`].
    fn open_scan(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.open_random(path)
    }
    /// True if [`FileSystem::read_queue`] keeps many reads in flight at
    /// once (false by default: it reads them one after the other).
    fn batches_reads(&self) -> bool {
        false
    }
    /// A queue of reads for the calling thread (see [`ReadQueue`]), with as
    /// many in flight at once as the file system can keep. By default one
    /// after the other ([`SerialReadQueue`]).
    fn read_queue(&self) -> Box<dyn ReadQueue> {
        Box::new(SerialReadQueue::new())
    }
    /// Reads a whole (small) file: `CURRENT`, options, a manifest during recovery.
    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        let file = self.open_random(path)?;
        let len = usize::try_from(file.size()).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidData, "file too large to read whole")
        })?;
        let mut buf = vec![0u8; len];
        file.read_exact_at(0, &mut buf)?;
        Ok(buf)
    }
    /// Names of the entries of a directory (not paths), in no particular order.
    /// An existing empty directory gives an empty list, never `NotFound`.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Atomically replaces `to` with `from`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Creates a directory and its parents; succeeds if it exists.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// True if the path names an existing file or directory.
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// Size of a file in bytes.
    fn file_size(&self, path: &Path) -> io::Result<u64>;
    /// Makes the names created, renamed or removed in `dir` durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Takes an exclusive lock on `path` (created if missing). Fails with
    /// [`io::ErrorKind::WouldBlock`] if another holder has it, in this process or
    /// another.
    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>>;
    /// Takes a shared lock on `path` (created if missing): any number of
    /// shared holders at once, none while the exclusive lock is held. Fails
    /// with [`io::ErrorKind::WouldBlock`] if the exclusive lock is held, and
    /// [`FileSystem::lock`] fails while a shared lock is held.
    fn lock_shared(&self, path: &Path) -> io::Result<Box<dyn FileLock>>;
}

/// Shared handle on a file system.
pub type FsRef = Arc<dyn FileSystem>;
