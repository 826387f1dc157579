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
mod mem;
mod posix;
pub mod priority;
mod trace;
#[cfg(target_os = "linux")]
mod uring;

pub use crash::CrashFs;
pub use fault::{FaultFs, FaultRule, OpKind};
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
    /// Size of the file in bytes.
    fn size(&self) -> u64;
    /// The file as `Any`, for a file system that recognizes its own files in
    /// [`FileSystem::read_batch`]. None by default.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

/// One positioned read of a batch (see [`FileSystem::read_batch`]).
pub struct BatchRead<'a> {
    /// The file to read.
    pub file: &'a dyn RandomAccessFile,
    /// Where in the file the read starts.
    pub offset: u64,
    /// Filled with the bytes at `offset..offset + buf.len()`.
    pub buf: &'a mut [u8],
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
    /// True if [`FileSystem::read_batch`] keeps many reads in flight at once
    /// (false by default: it reads them one after the other).
    fn batches_reads(&self) -> bool {
        false
    }
    /// Reads every request of `reads`, as many in flight at once as the file
    /// system can keep; one result per request, in order, each as
    /// [`RandomAccessFile::read_exact_at`] would give it (one physical read
    /// request each). By default one after the other.
    fn read_batch(&self, reads: &mut [BatchRead<'_>]) -> Vec<io::Result<()>> {
        reads
            .iter_mut()
            .map(|r| r.file.read_exact_at(r.offset, r.buf))
            .collect()
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
