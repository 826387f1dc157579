//! An in-memory file system that tracks exactly what is durable.
//!
//! [`MemFs`] keeps every file in memory. Besides the current contents it records,
//! per file, how many bytes were synced, and, per directory, which names were
//! made durable by `sync_dir`. [`crate::CrashFs`] uses that bookkeeping to
//! simulate a crash; a plain `MemFs` never crashes and behaves like a file system
//! whose machine never goes down.
//!
//! # Concurrency
//!
//! One mutex guards the name tables; each file's bytes sit behind their own
//! `RwLock`, so reads of different files (and concurrent reads of one file) do not
//! contend with each other or with writers of other files. A handle remembers the
//! crash epoch it was opened in and fails once a crash has happened since.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::{AppendFile, FileLock, FileSystem, ObjectWriter, RandomAccessFile, WriteLifetime};

/// The bytes of one file and how many of them are synced.
#[derive(Default)]
pub(crate) struct NodeData {
    pub(crate) data: Vec<u8>,
    pub(crate) synced: usize,
}

pub(crate) type Node = Arc<RwLock<NodeData>>;

#[derive(Default)]
pub(crate) struct Names {
    /// Names as a reader sees them now.
    pub(crate) live: HashMap<PathBuf, Node>,
    /// Names as they would be found after a crash (updated by `sync_dir`).
    pub(crate) durable: HashMap<PathBuf, Node>,
    pub(crate) dirs: BTreeSet<PathBuf>,
    /// Held locks: the epoch they were taken in and, for shared locks, how
    /// many holders (0 for an exclusive lock).
    pub(crate) locks: HashMap<PathBuf, (u64, usize)>,
    /// While true every operation fails (between a crash and `restart`).
    pub(crate) down: bool,
}

pub(crate) struct Core {
    pub(crate) names: Mutex<Names>,
    /// Incremented by every crash; handles of an older epoch fail.
    pub(crate) epoch: AtomicU64,
    /// Whether `batches_reads` says yes (see [`MemFs::set_batches_reads`]).
    batches: AtomicBool,
    /// Reads submitted to a `read_queue`.
    batched: AtomicU64,
}

impl Core {
    fn check(&self, epoch: u64) -> io::Result<()> {
        if self.epoch.load(Ordering::Acquire) != epoch {
            return Err(io::Error::other(
                "simulated crash: this handle belongs to a process that crashed",
            ));
        }
        Ok(())
    }
}

fn down_error() -> io::Error {
    io::Error::other("simulated crash: the file system is down until restart()")
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file", path.display()),
    )
}

fn parent(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// [`MemFs::read_queue`]: a [`crate::SerialReadQueue`] that counts its reads.
struct MemQueue {
    inner: crate::SerialReadQueue,
    core: Arc<Core>,
}

impl crate::ReadQueue for MemQueue {
    fn capacity(&self) -> usize {
        self.inner.capacity()
    }
    fn pending(&self) -> usize {
        self.inner.pending()
    }
    fn submit(&mut self, file: &Arc<dyn RandomAccessFile>, offset: u64, len: usize, tag: u64) {
        self.core.batched.fetch_add(1, Ordering::AcqRel);
        self.inner.submit(file, offset, len, tag);
    }
    fn complete(&mut self) -> Vec<crate::CompletedRead> {
        self.inner.complete()
    }
}

/// An in-memory [`FileSystem`]. Cheap to create; share it with `Arc`.
pub struct MemFs {
    pub(crate) core: Arc<Core>,
}

impl Default for MemFs {
    fn default() -> Self {
        MemFs::new()
    }
}

impl MemFs {
    /// An empty file system containing only the root directory.
    pub fn new() -> MemFs {
        let mut names = Names::default();
        names.dirs.insert(PathBuf::from("/"));
        names.dirs.insert(PathBuf::new());
        MemFs {
            core: Arc::new(Core {
                names: Mutex::new(names),
                epoch: AtomicU64::new(0),
                batches: AtomicBool::new(false),
                batched: AtomicU64::new(0),
            }),
        }
    }

    /// Makes [`FileSystem::batches_reads`] answer `on`, so that what the
    /// engine does on a file system that batches reads (io_uring) runs on
    /// memory too; a `read_queue` still reads one request after the other.
    pub fn set_batches_reads(&self, on: bool) {
        self.core.batches.store(on, Ordering::Release);
    }

    /// Reads submitted to a [`FileSystem::read_queue`] so far.
    pub fn batched_reads(&self) -> u64 {
        self.core.batched.load(Ordering::Acquire)
    }

    fn epoch(&self) -> u64 {
        self.core.epoch.load(Ordering::Acquire)
    }

    fn names(&self) -> io::Result<parking_lot::MutexGuard<'_, Names>> {
        let g = self.core.names.lock();
        if g.down {
            return Err(down_error());
        }
        Ok(g)
    }

    fn dir_exists(names: &Names, dir: &Path) -> bool {
        dir.as_os_str().is_empty() || names.dirs.contains(dir)
    }

    fn create_node(&self, path: &Path, exclusive: bool) -> io::Result<Node> {
        let mut g = self.names()?;
        if !Self::dir_exists(&g, &parent(path)) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{}: parent directory does not exist", path.display()),
            ));
        }
        if exclusive && g.live.contains_key(path) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{}: already exists", path.display()),
            ));
        }
        let node: Node = Arc::default();
        g.live.insert(path.to_path_buf(), node.clone());
        Ok(node)
    }
}

struct MemAppend {
    node: Node,
    core: Arc<Core>,
    epoch: u64,
    len: u64,
}

impl AppendFile for MemAppend {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.core.check(self.epoch)?;
        self.node.write().data.extend_from_slice(data);
        self.len += data.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.core.check(self.epoch)
    }
    fn sync(&mut self) -> io::Result<()> {
        self.core.check(self.epoch)?;
        let mut n = self.node.write();
        n.synced = n.data.len();
        Ok(())
    }
    fn len(&self) -> u64 {
        self.len
    }
}

struct MemObject {
    node: Node,
    core: Arc<Core>,
    epoch: u64,
    path: PathBuf,
    len: u64,
}

impl ObjectWriter for MemObject {
    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        self.core.check(self.epoch)?;
        self.node.write().data.extend_from_slice(data);
        self.len += data.len() as u64;
        Ok(())
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn finish(self: Box<Self>) -> io::Result<()> {
        self.core.check(self.epoch)?;
        let mut n = self.node.write();
        n.synced = n.data.len();
        Ok(())
    }
    fn abort(self: Box<Self>) -> io::Result<()> {
        self.core.check(self.epoch)?;
        let mut g = self.core.names.lock();
        if g.down {
            return Err(down_error());
        }
        if g.live
            .get(&self.path)
            .is_some_and(|n| Arc::ptr_eq(n, &self.node))
        {
            g.live.remove(&self.path);
        }
        Ok(())
    }
}

struct MemRandom {
    node: Node,
    core: Arc<Core>,
    epoch: u64,
}

impl RandomAccessFile for MemRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.core.check(self.epoch)?;
        let n = self.node.read();
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let end = start.saturating_add(buf.len());
        match n.data.get(start..end) {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "read of {} bytes at offset {offset} beyond the end ({} bytes)",
                    buf.len(),
                    n.data.len()
                ),
            )),
        }
    }
    fn size(&self) -> u64 {
        self.node.read().data.len() as u64
    }
}

struct MemLock {
    core: Arc<Core>,
    path: PathBuf,
    epoch: u64,
}

impl FileLock for MemLock {}

impl Drop for MemLock {
    fn drop(&mut self) {
        let mut g = self.core.names.lock();
        if let Some((epoch, shared)) = g.locks.get_mut(&self.path) {
            if *epoch == self.epoch {
                if *shared > 1 {
                    *shared -= 1;
                } else {
                    g.locks.remove(&self.path);
                }
            }
        }
    }
}

impl MemFs {
    /// Takes the lock on `path`, exclusive or one more shared holder.
    fn take_lock(&self, path: &Path, shared: bool) -> io::Result<Box<dyn FileLock>> {
        let epoch = self.epoch();
        {
            let mut g = self.names()?;
            match g.locks.get_mut(path) {
                Some((_, holders)) if shared && *holders > 0 => *holders += 1,
                Some(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::WouldBlock,
                        format!("{}: locked by another holder", path.display()),
                    ))
                }
                None => {
                    g.locks
                        .insert(path.to_path_buf(), (epoch, usize::from(shared)));
                }
            }
        }
        if !self.exists(path)? {
            self.create_node(path, false)?;
        }
        Ok(Box::new(MemLock {
            core: self.core.clone(),
            path: path.to_path_buf(),
            epoch,
        }))
    }
}

impl FileSystem for MemFs {
    fn create_append(&self, path: &Path, _hint: WriteLifetime) -> io::Result<Box<dyn AppendFile>> {
        let node = self.create_node(path, false)?;
        Ok(Box::new(MemAppend {
            node,
            core: self.core.clone(),
            epoch: self.epoch(),
            len: 0,
        }))
    }

    fn create_object(
        &self,
        path: &Path,
        _hint: WriteLifetime,
    ) -> io::Result<Box<dyn ObjectWriter>> {
        let node = self.create_node(path, true)?;
        Ok(Box::new(MemObject {
            node,
            core: self.core.clone(),
            epoch: self.epoch(),
            path: path.to_path_buf(),
            len: 0,
        }))
    }

    fn open_random(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        let g = self.names()?;
        let node = g.live.get(path).cloned().ok_or_else(|| not_found(path))?;
        Ok(Arc::new(MemRandom {
            node,
            core: self.core.clone(),
            epoch: self.epoch(),
        }))
    }

    fn batches_reads(&self) -> bool {
        self.core.batches.load(Ordering::Acquire)
    }

    /// One read after the other, the newest first (so that callers meet
    /// answers in another order than they asked), each counted.
    fn read_queue(&self) -> Box<dyn crate::ReadQueue> {
        Box::new(MemQueue {
            inner: crate::SerialReadQueue::newest_first(),
            core: self.core.clone(),
        })
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let g = self.names()?;
        if !Self::dir_exists(&g, dir) {
            return Err(not_found(dir));
        }
        let files = g.live.keys().map(PathBuf::as_path);
        let dirs = g.dirs.iter().map(PathBuf::as_path);
        Ok(files
            .chain(dirs)
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut g = self.names()?;
        if !Self::dir_exists(&g, &parent(to)) {
            return Err(not_found(&parent(to)));
        }
        let node = g.live.remove(from).ok_or_else(|| not_found(from))?;
        g.live.insert(to.to_path_buf(), node);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut g = self.names()?;
        g.live
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| not_found(path))
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut g = self.names()?;
        if g.live.contains_key(dir) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{}: is a file", dir.display()),
            ));
        }
        // Directories are durable at once: the engine creates its directory
        // before anything else and never removes it.
        for d in dir.ancestors() {
            g.dirs.insert(d.to_path_buf());
        }
        Ok(())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let g = self.names()?;
        Ok(g.live.contains_key(path) || g.dirs.contains(path))
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        let g = self.names()?;
        let node = g.live.get(path).ok_or_else(|| not_found(path))?;
        let len = node.read().data.len() as u64;
        Ok(len)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut g = self.names()?;
        if !Self::dir_exists(&g, dir) {
            return Err(not_found(dir));
        }
        let Names { live, durable, .. } = &mut *g;
        durable.retain(|p, _| p.parent() != Some(dir));
        for (p, n) in live.iter() {
            if p.parent() == Some(dir) {
                durable.insert(p.clone(), n.clone());
            }
        }
        Ok(())
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        self.take_lock(path, false)
    }
    fn lock_shared(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        self.take_lock(path, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_round_trip_and_list() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/a/b")).expect("mkdir");
        let mut f = fs
            .create_append(Path::new("/a/b/log"), WriteLifetime::Short)
            .expect("create");
        f.append(b"hello ").expect("append");
        f.append(b"world").expect("append");
        assert_eq!(f.len(), 11);
        let mut o = fs
            .create_object(Path::new("/a/b/t.sst"), WriteLifetime::Long)
            .expect("create");
        o.write(b"table").expect("write");
        o.finish().expect("finish");
        assert!(fs
            .create_object(Path::new("/a/b/t.sst"), WriteLifetime::Long)
            .is_err());
        assert_eq!(
            fs.read_all(Path::new("/a/b/log")).expect("read"),
            b"hello world"
        );
        let r = fs.open_random(Path::new("/a/b/t.sst")).expect("open");
        let mut buf = [0u8; 3];
        r.read_exact_at(1, &mut buf).expect("read");
        assert_eq!(&buf, b"abl");
        let err = r.read_exact_at(3, &mut buf).expect_err("beyond the end");
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        let mut names = fs.list(Path::new("/a/b")).expect("list");
        names.sort();
        assert_eq!(names, vec!["log".to_string(), "t.sst".to_string()]);
        assert_eq!(
            fs.list(Path::new("/a")).expect("list"),
            vec!["b".to_string()]
        );
        fs.rename(Path::new("/a/b/log"), Path::new("/a/b/log2"))
            .expect("rename");
        assert!(!fs.exists(Path::new("/a/b/log")).expect("exists"));
        assert_eq!(fs.file_size(Path::new("/a/b/log2")).expect("size"), 11);
        fs.remove(Path::new("/a/b/log2")).expect("remove");
        assert!(fs.remove(Path::new("/a/b/log2")).is_err());
    }

    #[test]
    fn aborted_objects_disappear_and_locks_exclude() {
        let fs = MemFs::new();
        let mut o = fs
            .create_object(Path::new("/x.sst"), WriteLifetime::Medium)
            .expect("create");
        o.write(b"partial").expect("write");
        o.abort().expect("abort");
        assert!(!fs.exists(Path::new("/x.sst")).expect("exists"));
        let l = fs.lock(Path::new("/LOCK")).expect("lock");
        let err = fs
            .lock(Path::new("/LOCK"))
            .err()
            .expect("second lock fails");
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        drop(l);
        fs.lock(Path::new("/LOCK")).expect("lock after release");
    }
}
