//! The file system of the operating system.
//!
//! Writes are buffered in user space and issued in large `write` calls; table
//! objects are written with `create_new` and synced by `finish`. Reads are
//! positioned `pread`s, either through the page cache (after
//! `posix_fadvise(RANDOM)`, so the kernel does not read ahead around each block)
//! or, with [`PosixOptions::direct_io`], with `O_DIRECT` into aligned buffers so
//! that every read of the engine is a device read. Where the file system refuses
//! `O_DIRECT` (tmpfs), reads fall back to the page cache. A direct read is
//! widened to the file's direct-I/O offset alignment, which Linux reports with
//! `statx(STATX_DIOALIGN)` (the device's logical block size, often 512 bytes),
//! else to 4 KiB: a 4 KiB block at an unaligned offset then costs 4.5 KiB of
//! device reads on a 512-byte-sector device, not 8 KiB. On Linux, files are
//! opened for reading with `O_NOATIME` where the kernel allows it (the
//! file's owner): no read checks or updates the access time. With
//! [`PosixOptions::mmap_reads`], [`FileSystem::open_random`] maps the file
//! instead and a read copies out of the mapping (no system call).
//!
//! A compaction opens its inputs with [`FileSystem::open_scan`]: `O_DIRECT`
//! whatever `direct_io` says (buffered with `POSIX_FADV_NOREUSE` where the file
//! system refuses it), so its large one-pass reads neither fill the page cache
//! nor evict the blocks Gets read from it.
//!
//! Every create passes its [`WriteLifetime`] to the kernel with
//! `fcntl(F_SET_RW_HINT)` on Linux; refusal is ignored, the hint is advisory.
//!
//! # Concurrency
//!
//! A [`RandomAccessFile`] is a file descriptor used only with `pread`, safe from
//! any number of threads. Locks are `flock` locks: exclusive between processes
//! and between two opens in one process.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::{AppendFile, FileLock, FileSystem, ObjectWriter, RandomAccessFile, WriteLifetime};

/// Alignment of `O_DIRECT` buffers in memory, and of offsets where the file
/// system does not report its own (a safe bound for logical block sizes).
const DIRECT_ALIGN: usize = 4096;
/// User-space write buffer of append files.
const APPEND_BUFFER: usize = 64 << 10;
/// User-space write buffer of table objects.
const OBJECT_BUFFER: usize = 1 << 20;

/// Options of [`PosixFs`].
#[derive(Clone, Debug)]
pub struct PosixOptions {
    /// Read table files with `O_DIRECT` (bypassing the page cache), so that every
    /// engine read is a device read. Default: false.
    pub direct_io: bool,
    /// Advise the kernel that reads are random (no read-ahead). Default: true.
    pub fadvise_random: bool,
    /// Keep the reads of [`FileSystem::read_queue`] in flight together through
    /// io_uring where the kernel offers it. False reads them one after the
    /// other and answers false to [`FileSystem::batches_reads`] (the engine's
    /// `multi_get` then uses its read threads). Default: true.
    pub io_uring: bool,
    /// Read through a read-only shared mapping of each file opened with
    /// [`FileSystem::open_random`] (the table files, and the WAL and
    /// manifest read at open), as LevelDB does and RocksDB's
    /// `allow_mmap_reads`: a block read from the page cache is then a copy
    /// from memory, not a system call. The catch is the one of every mapping:
    /// a device error, or another process truncating a table file, is a
    /// `SIGBUS` that ends the process rather than an error the engine can
    /// report, so it is off by default. Incompatible with `direct_io` (an
    /// open refuses the pair). Default: false.
    pub mmap_reads: bool,
}

impl Default for PosixOptions {
    fn default() -> Self {
        PosixOptions {
            direct_io: false,
            fadvise_random: true,
            io_uring: true,
            mmap_reads: false,
        }
    }
}

/// The operating system's file system.
#[derive(Clone, Debug, Default)]
pub struct PosixFs {
    options: PosixOptions,
}

impl PosixFs {
    /// A file system with `options`.
    pub fn new(options: PosixOptions) -> PosixFs {
        PosixFs { options }
    }
}

fn with_path(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Passes a lifetime hint to the kernel; errors (old kernels, file systems
/// without hints) are ignored because the hint is advisory.
#[cfg(target_os = "linux")]
fn set_write_hint(file: &File, hint: WriteLifetime) {
    const F_SET_RW_HINT: libc::c_int = 1036;
    let value: u64 = match hint {
        WriteLifetime::NotSet => 0,
        WriteLifetime::Short => 2,
        WriteLifetime::Medium => 3,
        WriteLifetime::Long => 4,
        WriteLifetime::Extreme => 5,
    };
    // SAFETY: F_SET_RW_HINT reads one u64 through the pointer, which points to a
    // live local; the descriptor is owned by `file` and open.
    unsafe {
        libc::fcntl(file.as_raw_fd(), F_SET_RW_HINT, &value as *const u64);
    }
}

#[cfg(not(target_os = "linux"))]
fn set_write_hint(_file: &File, _hint: WriteLifetime) {}

/// Passes `advice` for the whole file to the kernel; advisory, so a refusal
/// is ignored.
#[cfg(target_os = "linux")]
fn advise(file: &File, advice: Advice) {
    let flag = match advice {
        Advice::Normal => return,
        Advice::Random => libc::POSIX_FADV_RANDOM,
        Advice::NoReuse => libc::POSIX_FADV_NOREUSE,
    };
    // SAFETY: plain system call on an open descriptor owned by `file`.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), 0, 0, flag);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_file: &File, _advice: Advice) {}

/// The offset alignment `O_DIRECT` reads of `file` need: what
/// `statx(STATX_DIOALIGN)` reports when it is a power of two up to
/// [`DIRECT_ALIGN`], else [`DIRECT_ALIGN`].
#[cfg(all(target_os = "linux", any(target_env = "gnu", target_env = "musl")))]
fn direct_offset_align(file: &File) -> u64 {
    // SAFETY: `statx` only writes into `buf`, a zeroed struct of the type it
    // expects; the path is an empty C string with AT_EMPTY_PATH, so it reads
    // the open descriptor owned by `file`.
    let (rc, buf) = unsafe {
        let mut buf: libc::statx = std::mem::zeroed();
        let rc = libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut buf,
        );
        (rc, buf)
    };
    let reported = u64::from(buf.stx_dio_offset_align);
    if rc == 0
        && buf.stx_mask & libc::STATX_DIOALIGN != 0
        && reported.is_power_of_two()
        && reported <= DIRECT_ALIGN as u64
    {
        reported
    } else {
        DIRECT_ALIGN as u64
    }
}

#[cfg(not(all(target_os = "linux", any(target_env = "gnu", target_env = "musl"))))]
fn direct_offset_align(_file: &File) -> u64 {
    DIRECT_ALIGN as u64
}

struct PosixAppend {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    len: u64,
}

impl PosixAppend {
    fn write_out(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.file
                .write_all(&self.buf)
                .map_err(|e| with_path(&self.path, e))?;
            self.buf.clear();
        }
        Ok(())
    }
}

impl AppendFile for PosixAppend {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        if self.buf.len() + data.len() > APPEND_BUFFER {
            self.write_out()?;
        }
        if data.len() >= APPEND_BUFFER {
            self.file
                .write_all(data)
                .map_err(|e| with_path(&self.path, e))?;
        } else {
            self.buf.extend_from_slice(data);
        }
        self.len += data.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.write_out()
    }
    fn sync(&mut self) -> io::Result<()> {
        self.write_out()?;
        self.file.sync_data().map_err(|e| with_path(&self.path, e))
    }
    fn len(&self) -> u64 {
        self.len
    }
}

struct PosixObject {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    len: u64,
}

impl ObjectWriter for PosixObject {
    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        self.buf.extend_from_slice(data);
        self.len += data.len() as u64;
        if self.buf.len() >= OBJECT_BUFFER {
            self.file
                .write_all(&self.buf)
                .map_err(|e| with_path(&self.path, e))?;
            self.buf.clear();
        }
        Ok(())
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn finish(mut self: Box<Self>) -> io::Result<()> {
        self.file
            .write_all(&self.buf)
            .map_err(|e| with_path(&self.path, e))?;
        self.file.sync_all().map_err(|e| with_path(&self.path, e))
    }
    fn abort(self: Box<Self>) -> io::Result<()> {
        let PosixObject { file, path, .. } = *self;
        drop(file);
        std::fs::remove_file(&path).map_err(|e| with_path(&path, e))
    }
}

struct PosixRandom {
    file: File,
    path: PathBuf,
    size: u64,
    direct: bool,
    /// Offset and length alignment of direct reads (a power of two, at most
    /// [`DIRECT_ALIGN`]).
    align: u64,
}

/// A buffer aligned for `O_DIRECT` covering `offset..offset + len` of a file
/// whose direct reads need offsets aligned to `align`.
struct DirectWindow {
    /// Over-allocated so that `raw[skip..skip + len]` is aligned.
    raw: Vec<u8>,
    skip: usize,
    /// File offset of the window's first byte.
    start: u64,
    len: usize,
}

impl DirectWindow {
    fn new(offset: u64, len: usize, align: u64) -> io::Result<DirectWindow> {
        let start = offset - offset % align;
        let end = offset
            .checked_add(len as u64)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "offset overflow"))?;
        let aligned_end = end.div_ceil(align) * align;
        let len = usize::try_from(aligned_end - start)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "read too large"))?;
        let raw = vec![0u8; len + DIRECT_ALIGN];
        let skip = raw.as_ptr().align_offset(DIRECT_ALIGN);
        if skip + len > raw.len() {
            return Err(io::Error::other("cannot align a read buffer"));
        }
        Ok(DirectWindow {
            raw,
            skip,
            start,
            len,
        })
    }

    fn window(&mut self) -> &mut [u8] {
        &mut self.raw[self.skip..self.skip + self.len]
    }

    /// Copies `buf.len()` bytes at file offset `offset` out of the window's
    /// first `done` bytes; `UnexpectedEof` if they were not all read.
    fn copy_out(&self, done: usize, offset: u64, buf: &mut [u8], path: &Path) -> io::Result<()> {
        let from = (offset - self.start) as usize;
        if done < from + buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{}: read of {} bytes at offset {offset} beyond the end",
                    path.display(),
                    buf.len()
                ),
            ));
        }
        buf.copy_from_slice(&self.raw[self.skip + from..self.skip + from + buf.len()]);
        Ok(())
    }
}

impl PosixRandom {
    /// An aligned read covering `offset..offset + buf.len()`, copied out.
    fn read_direct(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut w = DirectWindow::new(offset, buf.len(), self.align)?;
        let start = w.start;
        let window = w.window();
        let len = window.len();
        let mut done = 0usize;
        while done < len {
            let n = self
                .file
                .read_at(&mut window[done..], start + done as u64)?;
            if n == 0 {
                break;
            }
            done += n;
        }
        w.copy_out(done, offset, buf, &self.path)
    }

    fn with_context(&self, offset: u64, e: io::Error) -> io::Error {
        io::Error::new(
            e.kind(),
            format!("{}: read at offset {offset}: {e}", self.path.display()),
        )
    }
}

impl RandomAccessFile for PosixRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let r = if self.direct {
            self.read_direct(offset, buf)
        } else {
            self.file.read_exact_at(buf, offset)
        };
        r.map_err(|e| self.with_context(offset, e))
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

/// [`PosixFs::read_queue`] with io_uring: the reads of this file system's
/// files (direct ones through aligned windows) go to the thread's ring as
/// they are submitted; a read on another file, one the ring could not start
/// or ran short, and every read after the ring failed, is read alone, which
/// gives the precise answer (the rest of the bytes, or the end of the file).
#[cfg(target_os = "linux")]
struct UringQueue {
    /// `None` once the ring failed: reads then run one after the other.
    ring: Option<crate::uring::Ring>,
    /// The reads in the ring, by their `user_data`.
    slots: Vec<Option<InRing>>,
    free: Vec<usize>,
    /// Submitted while the ring was full.
    held: std::collections::VecDeque<(Arc<dyn RandomAccessFile>, u64, usize, u64)>,
    /// Answered without the ring, returned by the next `complete`.
    ready: Vec<crate::CompletedRead>,
}

/// A read in the ring and the buffer the kernel writes into.
#[cfg(target_os = "linux")]
struct InRing {
    tag: u64,
    file: Arc<dyn RandomAccessFile>,
    offset: u64,
    len: usize,
    buf: RingBuf,
}

#[cfg(target_os = "linux")]
enum RingBuf {
    Plain(Vec<u8>),
    Direct(DirectWindow),
}

#[cfg(target_os = "linux")]
impl UringQueue {
    fn new() -> UringQueue {
        UringQueue {
            ring: crate::uring::Ring::take(),
            slots: Vec::new(),
            free: Vec::new(),
            held: std::collections::VecDeque::new(),
            ready: Vec::new(),
        }
    }

    /// Puts the read in the ring if it has room (else holds it back); a
    /// read the ring cannot take is read alone.
    fn start(&mut self, file: Arc<dyn RandomAccessFile>, offset: u64, len: usize, tag: u64) {
        use std::os::unix::io::AsRawFd;
        let Some(ring) = self.ring.as_mut() else {
            return self.read_alone(&file, offset, len, tag);
        };
        let Some(f) = posix_file(&file) else {
            return self.read_alone(&file, offset, len, tag);
        };
        if ring.in_flight() >= crate::uring::RING_ENTRIES {
            self.held.push_back((file, offset, len, tag));
            return;
        }
        let (mut buf, at) = if f.direct {
            match DirectWindow::new(offset, len, f.align) {
                Ok(w) => {
                    let start = w.start;
                    (RingBuf::Direct(w), start)
                }
                Err(e) => {
                    let result = Err(f.with_context(offset, e));
                    self.ready.push(crate::CompletedRead { tag, result });
                    return;
                }
            }
        } else {
            (RingBuf::Plain(vec![0u8; len]), offset)
        };
        let window = match &mut buf {
            RingBuf::Plain(v) => &mut v[..],
            RingBuf::Direct(w) => w.window(),
        };
        let (ptr, window_len) = (window.as_mut_ptr(), window.len());
        let fd = f.file.as_raw_fd();
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        // SAFETY: the buffer's heap memory is owned by the slot below, which
        // is neither dropped nor reused until the ring returns this read's
        // completion (or is leaked if the ring fails).
        match unsafe { ring.start(fd, at, ptr, window_len, slot as u64) } {
            Ok(()) => {
                self.slots[slot] = Some(InRing {
                    tag,
                    file,
                    offset,
                    len,
                    buf,
                })
            }
            Err(_) => {
                self.free.push(slot);
                self.read_alone(&file, offset, len, tag);
            }
        }
    }

    fn read_alone(&mut self, file: &Arc<dyn RandomAccessFile>, offset: u64, len: usize, tag: u64) {
        let result = file.read_vec_at(offset, len);
        self.ready.push(crate::CompletedRead { tag, result });
    }

    /// The answer of a read the ring completed with `got`.
    fn finish(r: InRing, got: io::Result<usize>) -> crate::CompletedRead {
        let result = match (posix_file(&r.file), got, r.buf) {
            // Interrupted or refused for now: read it alone below.
            (Some(f), Err(e), _)
                if !matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                ) =>
            {
                Err(f.with_context(r.offset, e))
            }
            (Some(f), Ok(n), RingBuf::Direct(w)) if n >= w.len => {
                let mut buf = vec![0u8; r.len];
                w.copy_out(n, r.offset, &mut buf, &f.path)
                    .map(|()| buf)
                    .map_err(|e| f.with_context(r.offset, e))
            }
            (_, Ok(n), RingBuf::Plain(buf)) if n == r.len => Ok(buf),
            // Short (or interrupted): read it alone.
            _ => r.file.read_vec_at(r.offset, r.len),
        };
        crate::CompletedRead { tag: r.tag, result }
    }

    /// After a failed wait: leaks every buffer still in the ring (the kernel
    /// may write into it yet), drops the ring, and reads what was in it
    /// alone.
    fn abandon_ring(&mut self) {
        self.ring = None;
        for slot in std::mem::take(&mut self.slots).into_iter().flatten() {
            let InRing {
                tag,
                file,
                offset,
                len,
                buf,
            } = slot;
            std::mem::forget(buf);
            self.read_alone(&file, offset, len, tag);
        }
        self.free.clear();
    }
}

#[cfg(target_os = "linux")]
impl crate::ReadQueue for UringQueue {
    fn capacity(&self) -> usize {
        crate::uring::RING_ENTRIES
    }
    fn pending(&self) -> usize {
        self.ring.as_ref().map_or(0, |r| r.in_flight()) + self.held.len() + self.ready.len()
    }
    fn submit(&mut self, file: &Arc<dyn RandomAccessFile>, offset: u64, len: usize, tag: u64) {
        self.start(file.clone(), offset, len, tag);
    }
    fn complete(&mut self) -> Vec<crate::CompletedRead> {
        let mut out = std::mem::take(&mut self.ready);
        let in_flight = self.ring.as_ref().map_or(0, |r| r.in_flight());
        if !out.is_empty() || (in_flight == 0 && self.held.is_empty()) {
            return out;
        }
        if in_flight > 0 {
            match self.ring.as_mut().map(|r| r.wait()) {
                Some(Ok(done)) => {
                    for (slot, got) in done {
                        let r = self.slots.get_mut(slot as usize).and_then(Option::take);
                        if let Some(r) = r {
                            self.free.push(slot as usize);
                            out.push(Self::finish(r, got));
                        }
                    }
                }
                Some(Err(_)) | None => self.abandon_ring(),
            }
        }
        // Reads held back take the room the completed ones left.
        while !self.held.is_empty()
            && self
                .ring
                .as_ref()
                .is_none_or(|r| r.in_flight() < crate::uring::RING_ENTRIES)
        {
            if let Some((file, offset, len, tag)) = self.held.pop_front() {
                self.start(file, offset, len, tag);
            }
        }
        out.append(&mut self.ready);
        out
    }
}

#[cfg(target_os = "linux")]
impl Drop for UringQueue {
    /// Waits for the reads in the ring: their buffers are freed only after.
    fn drop(&mut self) {
        while let Some(ring) = self.ring.as_mut() {
            if ring.in_flight() == 0 {
                break;
            }
            match ring.wait() {
                Ok(done) => {
                    for (slot, _) in done {
                        if let Some(s) = self.slots.get_mut(slot as usize) {
                            *s = None;
                        }
                    }
                }
                Err(_) => {
                    for slot in std::mem::take(&mut self.slots).into_iter().flatten() {
                        std::mem::forget(slot.buf);
                    }
                    self.ring = None;
                }
            }
        }
    }
}

/// `file` as one of this file system's files.
#[cfg(target_os = "linux")]
fn posix_file(file: &Arc<dyn RandomAccessFile>) -> Option<&PosixRandom> {
    file.as_any().and_then(|a| a.downcast_ref::<PosixRandom>())
}

/// What a read-only open tells the kernel about the reads to come.
#[derive(Clone, Copy)]
enum Advice {
    Normal,
    /// Random reads: no read-ahead around each block.
    Random,
    /// Read once: not worth keeping in the page cache.
    NoReuse,
}

/// Opens `path` read-only, with `O_DIRECT` if `direct`, and on Linux with
/// `O_NOATIME`: a read then does not update the file's access time, which
/// the kernel otherwise checks (a clock read and the inode) on every read, a
/// few percent of a block read from the page cache. Only the file's owner
/// (or a process with `CAP_FOWNER`) may ask for it, so `EPERM` opens again
/// without it.
fn open_read_only(path: &Path, direct: bool) -> io::Result<File> {
    let open = |noatime: bool| {
        let mut o = OpenOptions::new();
        o.read(true);
        #[cfg(target_os = "linux")]
        {
            let mut flags = 0;
            if direct {
                flags |= libc::O_DIRECT;
            }
            if noatime {
                flags |= libc::O_NOATIME;
            }
            o.custom_flags(flags);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (direct, noatime);
        o.open(path)
    };
    match open(true) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => open(false),
        r => r,
    }
}

/// Opens `path` for positioned reads, with `O_DIRECT` if `direct` and the
/// file system accepts it (else buffered).
fn open_read(path: &Path, direct: bool, advice: Advice) -> io::Result<Arc<dyn RandomAccessFile>> {
    let open = |direct: bool| open_read_only(path, direct);
    let (file, direct) = match direct {
        true => match open(true) {
            Ok(f) => (f, true),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                (open(false).map_err(|e| with_path(path, e))?, false)
            }
            Err(e) => return Err(with_path(path, e)),
        },
        false => (open(false).map_err(|e| with_path(path, e))?, false),
    };
    if !direct {
        advise(&file, advice);
    }
    let size = file.metadata().map_err(|e| with_path(path, e))?.len();
    let align = if direct {
        direct_offset_align(&file)
    } else {
        DIRECT_ALIGN as u64
    };
    Ok(Arc::new(PosixRandom {
        file,
        path: path.to_path_buf(),
        size,
        align,
        direct,
    }))
}

/// A file read through a read-only shared mapping
/// ([`PosixOptions::mmap_reads`]): a read is a copy out of the mapping.
struct MappedRandom {
    map: memmap2::Mmap,
    path: PathBuf,
}

impl MappedRandom {
    /// The mapped bytes at `offset..offset + len`; `UnexpectedEof` past the end.
    fn slice(&self, offset: u64, len: usize) -> io::Result<&[u8]> {
        usize::try_from(offset)
            .ok()
            .and_then(|start| self.map.get(start..start.checked_add(len)?))
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "{}: read of {len} bytes at offset {offset} beyond the end ({} bytes)",
                        self.path.display(),
                        self.map.len()
                    ),
                )
            })
    }
}

impl RandomAccessFile for MappedRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        buf.copy_from_slice(self.slice(offset, buf.len())?);
        Ok(())
    }
    fn read_vec_at(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        Ok(self.slice(offset, len)?.to_vec())
    }
    fn size(&self) -> u64 {
        self.map.len() as u64
    }
}

/// Opens `path` for reads out of a read-only mapping, advised random (no
/// read-ahead around a faulted page). An empty file, which cannot be mapped,
/// is opened for `pread`s.
fn open_mapped(path: &Path, advice: Advice) -> io::Result<Arc<dyn RandomAccessFile>> {
    let file = open_read_only(path, false).map_err(|e| with_path(path, e))?;
    let size = file.metadata().map_err(|e| with_path(path, e))?.len();
    if size == 0 {
        return open_read(path, false, advice);
    }
    // SAFETY: the mapping is read-only and shared, and the engine never
    // writes a file it has opened for reading (tables are written once,
    // under `create_new`, before they are opened; the WAL and manifest are
    // read at open, before any write). What the engine cannot rule out is
    // another process truncating the file: that is a SIGBUS on access, the
    // caveat `PosixOptions::mmap_reads` documents.
    let map = unsafe { memmap2::MmapOptions::new().map(&file) }.map_err(|e| with_path(path, e))?;
    if matches!(advice, Advice::Random) {
        // Advisory: a refusal only leaves the kernel's read-ahead on.
        let _ = map.advise(memmap2::Advice::Random);
    }
    Ok(Arc::new(MappedRandom {
        map,
        path: path.to_path_buf(),
    }))
}

struct PosixLock {
    _file: File,
}

impl FileLock for PosixLock {}

impl FileSystem for PosixFs {
    fn create_append(&self, path: &Path, hint: WriteLifetime) -> io::Result<Box<dyn AppendFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| with_path(path, e))?;
        set_write_hint(&file, hint);
        Ok(Box::new(PosixAppend {
            file,
            path: path.to_path_buf(),
            buf: Vec::with_capacity(APPEND_BUFFER),
            len: 0,
        }))
    }

    fn create_object(&self, path: &Path, hint: WriteLifetime) -> io::Result<Box<dyn ObjectWriter>> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| with_path(path, e))?;
        set_write_hint(&file, hint);
        Ok(Box::new(PosixObject {
            file,
            path: path.to_path_buf(),
            buf: Vec::with_capacity(OBJECT_BUFFER),
            len: 0,
        }))
    }

    fn open_random(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        let advice = if self.options.fadvise_random {
            Advice::Random
        } else {
            Advice::Normal
        };
        if self.options.mmap_reads {
            if self.options.direct_io {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{}: mmap_reads and direct_io cannot both be set (a mapping reads through the page cache)",
                        path.display()
                    ),
                ));
            }
            return open_mapped(path, advice);
        }
        open_read(path, self.options.direct_io, advice)
    }

    /// With `O_DIRECT` whatever `direct_io` says, so that a compaction's reads
    /// neither fill the page cache nor evict the blocks Gets read from it;
    /// where the file system refuses `O_DIRECT`, buffered with
    /// `POSIX_FADV_NOREUSE`.
    fn open_scan(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        open_read(path, true, Advice::NoReuse)
    }

    fn batches_reads(&self) -> bool {
        #[cfg(target_os = "linux")]
        return self.options.io_uring && crate::uring::available();
        #[cfg(not(target_os = "linux"))]
        return false;
    }

    /// With io_uring where the kernel offers it (see `uring`) and
    /// [`PosixOptions::io_uring`] allows it, else one read after the other.
    fn read_queue(&self) -> Box<dyn crate::ReadQueue> {
        #[cfg(target_os = "linux")]
        if self.batches_reads() {
            return Box::new(UringQueue::new());
        }
        Box::new(crate::SerialReadQueue::new())
    }

    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path).map_err(|e| with_path(path, e))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| with_path(dir, e))? {
            let entry = entry.map_err(|e| with_path(dir, e))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        Ok(names)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to).map_err(|e| with_path(from, e))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path).map_err(|e| with_path(path, e))
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| with_path(dir, e))
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists().map_err(|e| with_path(path, e))
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        Ok(std::fs::metadata(path)
            .map_err(|e| with_path(path, e))?
            .len())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| with_path(dir, e))
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        flock(path, libc::LOCK_EX)
    }
    fn lock_shared(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        flock(path, libc::LOCK_SH)
    }
}

/// Opens (creating if missing) and `flock`s `path` with `how` (without waiting).
fn flock(path: &Path, how: libc::c_int) -> io::Result<Box<dyn FileLock>> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| with_path(path, e))?;
    // SAFETY: plain system call on an open descriptor owned by `file`.
    let rc = unsafe { libc::flock(file.as_raw_fd(), how | libc::LOCK_NB) };
    if rc != 0 {
        let e = io::Error::last_os_error();
        let kind = if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            io::ErrorKind::WouldBlock
        } else {
            e.kind()
        };
        return Err(io::Error::new(
            kind,
            format!("{}: cannot lock: {e}", path.display()),
        ));
    }
    Ok(Box::new(PosixLock { _file: file }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags of an open file, from `/proc/self/fdinfo`.
    #[cfg(target_os = "linux")]
    fn open_flags(file: &File) -> i32 {
        use std::os::fd::AsRawFd;
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", file.as_raw_fd()))
            .expect("fdinfo");
        let octal = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .expect("flags line")
            .trim();
        i32::from_str_radix(octal, 8).expect("octal flags")
    }

    /// Table files are read without updating their access time; a file of
    /// another owner (where the kernel refuses the flag) still opens.
    #[cfg(target_os = "linux")]
    #[test]
    fn reads_do_not_update_the_access_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.sst");
        std::fs::write(&path, b"table").expect("write");
        let file = open_read_only(&path, false).expect("open");
        assert!(
            open_flags(&file) & libc::O_NOATIME != 0,
            "{:o}",
            open_flags(&file)
        );
        // A file of another owner (root's, unless the tests run as root,
        // whose CAP_FOWNER allows the flag anyway) opens too: the kernel
        // refuses the flag with EPERM, and the open goes on without it.
        use std::os::unix::fs::MetadataExt;
        let ours = path.metadata().expect("metadata").uid();
        let other = Path::new("/etc/passwd");
        let file = open_read_only(other, false).expect("a file of another owner opens");
        if other.metadata().expect("metadata").uid() != ours {
            assert_eq!(open_flags(&file) & libc::O_NOATIME, 0);
        }
    }

    fn round_trip(options: PosixOptions) {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = PosixFs::new(options);
        let path = dir.path().join("t.sst");
        let mut o = fs
            .create_object(&path, WriteLifetime::Long)
            .expect("create");
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        o.write(&data[..5000]).expect("write");
        o.write(&data[5000..]).expect("write");
        assert_eq!(o.len(), 20_000);
        o.finish().expect("finish");
        assert!(fs.create_object(&path, WriteLifetime::Long).is_err());
        let r = fs.open_random(&path).expect("open");
        assert_eq!(r.size(), 20_000);
        let reads = [
            (0u64, 10usize),
            (511, 2),
            (1000, 3000),
            (4090, 20),
            (4095, 4098),
            (12_345, 4096),
            (19_990, 10),
        ];
        for (off, len) in reads {
            let mut buf = vec![0u8; len];
            r.read_exact_at(off, &mut buf).expect("read");
            assert_eq!(buf, &data[off as usize..off as usize + len]);
        }
        let mut buf = vec![0u8; 20];
        let err = r.read_exact_at(19_990, &mut buf).expect_err("past the end");
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        // A compaction's handle (direct whatever `direct_io` says) reads the
        // same bytes, in one large read and at unaligned offsets.
        let scan = fs.open_scan(&path).expect("open scan");
        assert_eq!(scan.size(), 20_000);
        for (off, len) in [(0u64, 20_000usize), (4095, 9000), (19_999, 1)] {
            let mut buf = vec![0u8; len];
            scan.read_exact_at(off, &mut buf).expect("scan read");
            assert_eq!(buf, &data[off as usize..off as usize + len]);
        }
        let err = scan
            .read_exact_at(19_990, &mut buf)
            .expect_err("past the end");
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        // More reads than the ring holds, over both handles, one past the
        // end, answers taken while more are submitted: each answer is what
        // `read_exact_at` gives, under its own tag.
        let mut wanted: Vec<(u64, usize)> = (0..150u64)
            .map(|i| ((i * 4099) % 19_000, 1 + (i as usize * 37) % 900))
            .collect();
        wanted.push((19_990, 20));
        let mut queue = fs.read_queue();
        let mut answers: Vec<Option<io::Result<Vec<u8>>>> = wanted.iter().map(|_| None).collect();
        let mut take = |done: Vec<crate::CompletedRead>| {
            for d in done {
                let slot = &mut answers[d.tag as usize];
                assert!(slot.is_none(), "read {} answered twice", d.tag);
                *slot = Some(d.result);
            }
        };
        for (i, &(offset, len)) in wanted.iter().enumerate() {
            let file = if i % 2 == 0 { &r } else { &scan };
            queue.submit(file, offset, len, i as u64);
            if i % 40 == 39 {
                take(queue.complete());
            }
        }
        while queue.pending() > 0 {
            let done = queue.complete();
            assert!(
                !done.is_empty(),
                "complete returned nothing with reads pending"
            );
            take(done);
        }
        for (res, &(off, len)) in answers.iter().zip(&wanted) {
            let res = res.as_ref().expect("every read answered");
            if off as usize + len > data.len() {
                let err = res.as_ref().expect_err("past the end");
                assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
            } else {
                let buf = res.as_ref().expect("queued read");
                assert_eq!(buf, &data[off as usize..off as usize + len]);
            }
        }
        // A queue dropped with reads in flight waits for them.
        let mut queue = fs.read_queue();
        for i in 0..10u64 {
            queue.submit(&r, i * 100, 100, i);
        }
        drop(queue);
    }

    #[test]
    fn batches_go_through_io_uring_where_the_kernel_offers_it() {
        // This machine's kernel (and CI's) offers io_uring: a regression that
        // loses it would silently fall back to one read at a time.
        assert!(PosixFs::default().batches_reads());
    }

    #[test]
    fn objects_round_trip_buffered() {
        round_trip(PosixOptions::default());
    }

    #[test]
    fn objects_round_trip_direct() {
        round_trip(PosixOptions {
            direct_io: true,
            ..PosixOptions::default()
        });
    }

    #[test]
    fn objects_round_trip_mapped() {
        round_trip(PosixOptions {
            mmap_reads: true,
            ..PosixOptions::default()
        });
    }

    /// The path's lines in this process's memory map.
    fn mapped_lines(path: &Path) -> usize {
        let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
        let name = path.to_str().expect("utf-8 path");
        maps.lines().filter(|l| l.ends_with(name)).count()
    }

    #[test]
    fn mmap_reads_map_the_file_and_refuse_direct_io() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.sst");
        std::fs::write(&path, vec![7u8; 10_000]).expect("write");
        let empty = dir.path().join("empty.log");
        std::fs::write(&empty, b"").expect("write");
        let fs = PosixFs::new(PosixOptions {
            mmap_reads: true,
            ..PosixOptions::default()
        });
        assert_eq!(mapped_lines(&path), 0);
        let r = fs.open_random(&path).expect("open");
        assert_eq!(mapped_lines(&path), 1, "the file is read through a mapping");
        let mut buf = [0u8; 3];
        r.read_exact_at(9_997, &mut buf).expect("read");
        assert_eq!(buf, [7, 7, 7]);
        let err = r
            .read_exact_at(u64::MAX - 1, &mut buf)
            .expect_err("offset past the end");
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        drop(r);
        assert_eq!(mapped_lines(&path), 0, "dropping the handle unmaps it");
        // An empty file cannot be mapped: it is opened for preads.
        let e = fs.open_random(&empty).expect("open empty");
        assert_eq!(e.size(), 0);
        let err = e.read_exact_at(0, &mut buf).expect_err("empty");
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        // The pair with direct_io is refused, naming both.
        let both = PosixFs::new(PosixOptions {
            mmap_reads: true,
            direct_io: true,
            ..PosixOptions::default()
        });
        let err = both.open_random(&path).err().expect("refused");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(
            err.to_string().contains("mmap_reads and direct_io"),
            "{err}"
        );
    }

    #[test]
    fn the_kernel_takes_direct_reads_at_the_reported_alignment() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.sst");
        let data: Vec<u8> = (0..3 * DIRECT_ALIGN).map(|i| (i % 253) as u8).collect();
        std::fs::write(&path, &data).expect("write");
        let mut o = OpenOptions::new();
        o.read(true);
        #[cfg(target_os = "linux")]
        o.custom_flags(libc::O_DIRECT);
        let Ok(file) = o.open(&path) else {
            // No O_DIRECT here (tmpfs): the fallback alignment is 4 KiB.
            let file = File::open(&path).expect("open");
            assert_eq!(direct_offset_align(&file), DIRECT_ALIGN as u64);
            return;
        };
        let align = direct_offset_align(&file);
        assert!(
            align.is_power_of_two() && align <= DIRECT_ALIGN as u64,
            "{align}"
        );
        // One aligned unit at an offset of one unit, into a 4 KiB-aligned
        // buffer: the kernel refuses it (EINVAL) if the alignment is wrong.
        let mut raw = vec![0u8; 2 * DIRECT_ALIGN];
        let skip = raw.as_ptr().align_offset(DIRECT_ALIGN);
        let window = &mut raw[skip..skip + align as usize];
        file.read_exact_at(window, align)
            .expect("direct read at the alignment");
        assert_eq!(window, &data[align as usize..2 * align as usize]);
    }

    #[test]
    fn append_files_sync_and_locks_exclude() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = PosixFs::default();
        let path = dir.path().join("000001.log");
        let mut f = fs
            .create_append(&path, WriteLifetime::Short)
            .expect("create");
        f.append(b"abc").expect("append");
        f.append(&vec![9u8; APPEND_BUFFER + 10])
            .expect("append big");
        f.sync().expect("sync");
        assert_eq!(
            fs.file_size(&path).expect("size"),
            3 + APPEND_BUFFER as u64 + 10
        );
        assert_eq!(&fs.read_all(&path).expect("read")[..3], b"abc");
        let lock_path = dir.path().join("LOCK");
        let held = fs.lock(&lock_path).expect("lock");
        let err = fs.lock(&lock_path).err().expect("second lock fails");
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        drop(held);
        fs.lock(&lock_path).expect("lock again");
        let mut names = fs.list(dir.path()).expect("list");
        names.sort();
        assert_eq!(names, vec!["000001.log".to_string(), "LOCK".to_string()]);
        fs.sync_dir(dir.path()).expect("sync dir");
    }
}

/// Raises the process's soft limit of open files to its hard limit and
/// returns the limit now in force. A database keeps one descriptor open per
/// table in its table cache, so a tool that wants every table of a large
/// database open (as the read-cost study assumes) raises the limit first.
/// The limit is process-wide: applications call this, the engine never does.
///
/// Errors: the `getrlimit`/`setrlimit` failure.
pub fn raise_open_files_limit() -> io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit for getrlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: `raised` is a valid rlimit that only lifts the soft limit
        // up to the hard one, which an unprivileged process may do.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim = raised;
        }
    }
    Ok(lim.rlim_cur)
}

#[cfg(test)]
mod limit_tests {
    use super::raise_open_files_limit;

    #[test]
    fn the_open_files_limit_is_raised_to_the_hard_limit() {
        let soft = raise_open_files_limit().expect("rlimit");
        assert!(soft >= 64, "{soft}");
        // Raising again changes nothing.
        assert_eq!(raise_open_files_limit().expect("rlimit"), soft);
    }
}
