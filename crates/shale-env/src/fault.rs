//! A file system wrapper that injects errors on schedule.
//!
//! [`FaultFs`] forwards every call to an inner [`FileSystem`] and counts it by
//! [`OpKind`]. It checks nearly every call, so it implements `FileSystem`
//! itself rather than [`crate::FsLayer`]; its `read_queue` and `read_all` read
//! through its own files, so that their reads can fail too. A [`FaultRule`] makes the N-th matching operation after the rule
//! was injected fail (N counted from zero) and, if persistent, every matching
//! operation after it, as a dead disk would. A failed operation has no effect on
//! the inner file system.
//!
//! # Concurrency
//!
//! Counters are atomics and the rules sit behind one mutex taken for every
//! operation; `FaultFs` is for tests, not for speed.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::{AppendFile, FileLock, FileSystem, ObjectWriter, RandomAccessFile, WriteLifetime};

/// The operations [`FaultFs`] counts and can fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OpKind {
    /// Matches every operation (only in rules and `ops_seen`).
    Any,
    /// `FileSystem::create_append`.
    CreateAppend,
    /// `AppendFile::append`.
    Append,
    /// `AppendFile::flush`.
    FlushAppend,
    /// `AppendFile::sync`.
    SyncAppend,
    /// `FileSystem::create_object`.
    CreateObject,
    /// `ObjectWriter::write`.
    WriteObject,
    /// `ObjectWriter::finish`.
    FinishObject,
    /// `ObjectWriter::abort`.
    AbortObject,
    /// `FileSystem::open_random`.
    OpenRandom,
    /// `RandomAccessFile::read_exact_at`.
    Read,
    /// `FileSystem::list`.
    List,
    /// `FileSystem::rename`.
    Rename,
    /// `FileSystem::remove`.
    Remove,
    /// `FileSystem::create_dir_all`.
    CreateDir,
    /// `FileSystem::exists`.
    Exists,
    /// `FileSystem::file_size`.
    FileSize,
    /// `FileSystem::sync_dir`.
    SyncDir,
    /// `FileSystem::lock` and `FileSystem::lock_shared`.
    Lock,
}

const KINDS: usize = 19;

impl OpKind {
    fn index(self) -> usize {
        self as usize
    }
    fn matches(self, op: OpKind) -> bool {
        self == OpKind::Any || self == op
    }
}

/// What error a rule produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FaultError {
    Io,
    NoSpace,
}

/// When and how [`FaultFs`] fails an operation.
#[derive(Clone, Debug)]
pub struct FaultRule {
    kind: OpKind,
    skip: u64,
    error: FaultError,
    persistent: bool,
}

impl FaultRule {
    /// Fails the matching operation after `skip` matching ones succeeded, with a
    /// generic I/O error.
    pub fn io(kind: OpKind, skip: u64) -> FaultRule {
        FaultRule {
            kind,
            skip,
            error: FaultError::Io,
            persistent: false,
        }
    }
    /// Like [`FaultRule::io`] with `ENOSPC` (the disk is full).
    pub fn no_space(kind: OpKind, skip: u64) -> FaultRule {
        FaultRule {
            error: FaultError::NoSpace,
            ..FaultRule::io(kind, skip)
        }
    }
    /// Once triggered, fails every later matching operation too.
    pub fn persistent(mut self) -> FaultRule {
        self.persistent = true;
        self
    }
}

struct ArmedRule {
    rule: FaultRule,
    seen: u64,
    fired: bool,
}

struct State {
    seen: [AtomicU64; KINDS],
    triggered: AtomicU64,
    rules: Mutex<Vec<ArmedRule>>,
}

impl State {
    fn check(&self, op: OpKind) -> io::Result<()> {
        self.seen[op.index()].fetch_add(1, Ordering::Relaxed);
        self.seen[OpKind::Any.index()].fetch_add(1, Ordering::Relaxed);
        let mut rules = self.rules.lock();
        for armed in rules.iter_mut().filter(|a| a.rule.kind.matches(op)) {
            let fail = if armed.fired {
                armed.rule.persistent
            } else if armed.seen == armed.rule.skip {
                armed.fired = true;
                true
            } else {
                armed.seen += 1;
                false
            };
            if fail {
                self.triggered.fetch_add(1, Ordering::Relaxed);
                return Err(match armed.rule.error {
                    FaultError::Io => io::Error::other(format!("injected I/O error on {op:?}")),
                    FaultError::NoSpace => io::Error::from_raw_os_error(libc::ENOSPC),
                });
            }
        }
        Ok(())
    }
}

/// Wraps a file system and fails operations by [`FaultRule`]s.
pub struct FaultFs {
    inner: Arc<dyn FileSystem>,
    state: Arc<State>,
}

impl FaultFs {
    /// Wraps `inner`; no rule is armed.
    pub fn new(inner: Arc<dyn FileSystem>) -> Arc<FaultFs> {
        Arc::new(FaultFs {
            inner,
            state: Arc::new(State {
                seen: Default::default(),
                triggered: AtomicU64::new(0),
                rules: Mutex::new(Vec::new()),
            }),
        })
    }
    /// Arms a rule; its count starts now.
    pub fn inject(&self, rule: FaultRule) {
        self.state.rules.lock().push(ArmedRule {
            rule,
            seen: 0,
            fired: false,
        });
    }
    /// Disarms every rule (the disk works again).
    pub fn clear(&self) {
        self.state.rules.lock().clear();
    }
    /// Operations of `kind` attempted so far (failed ones included).
    pub fn ops_seen(&self, kind: OpKind) -> u64 {
        self.state.seen[kind.index()].load(Ordering::Relaxed)
    }
    /// Operations failed by a rule so far.
    pub fn faults_triggered(&self) -> u64 {
        self.state.triggered.load(Ordering::Relaxed)
    }
}

struct FaultAppend {
    inner: Box<dyn AppendFile>,
    state: Arc<State>,
}

impl AppendFile for FaultAppend {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.state.check(OpKind::Append)?;
        self.inner.append(data)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.state.check(OpKind::FlushAppend)?;
        self.inner.flush()
    }
    fn sync(&mut self) -> io::Result<()> {
        self.state.check(OpKind::SyncAppend)?;
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

struct FaultObject {
    inner: Box<dyn ObjectWriter>,
    state: Arc<State>,
}

impl ObjectWriter for FaultObject {
    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        self.state.check(OpKind::WriteObject)?;
        self.inner.write(data)
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn finish(self: Box<Self>) -> io::Result<()> {
        self.state.check(OpKind::FinishObject)?;
        self.inner.finish()
    }
    fn abort(self: Box<Self>) -> io::Result<()> {
        self.state.check(OpKind::AbortObject)?;
        self.inner.abort()
    }
}

struct FaultRandom {
    inner: Arc<dyn RandomAccessFile>,
    state: Arc<State>,
}

impl RandomAccessFile for FaultRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.state.check(OpKind::Read)?;
        self.inner.read_exact_at(offset, buf)
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

impl FileSystem for FaultFs {
    fn create_append(&self, path: &Path, hint: WriteLifetime) -> io::Result<Box<dyn AppendFile>> {
        self.state.check(OpKind::CreateAppend)?;
        Ok(Box::new(FaultAppend {
            inner: self.inner.create_append(path, hint)?,
            state: self.state.clone(),
        }))
    }
    fn create_object(&self, path: &Path, hint: WriteLifetime) -> io::Result<Box<dyn ObjectWriter>> {
        self.state.check(OpKind::CreateObject)?;
        Ok(Box::new(FaultObject {
            inner: self.inner.create_object(path, hint)?,
            state: self.state.clone(),
        }))
    }
    fn open_random(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.state.check(OpKind::OpenRandom)?;
        Ok(Arc::new(FaultRandom {
            inner: self.inner.open_random(path)?,
            state: self.state.clone(),
        }))
    }
    /// The inner file system's scan file (counted and failed as
    /// [`OpKind::OpenRandom`]), whose reads can fail as those of
    /// `open_random`'s files.
    fn open_scan(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.state.check(OpKind::OpenRandom)?;
        Ok(Arc::new(FaultRandom {
            inner: self.inner.open_scan(path)?,
            state: self.state.clone(),
        }))
    }
    // `read_queue` and `read_all` keep the trait's defaults, which read
    // through this file system's files, so that each of their reads can fail.
    /// As the inner file system; a batch reads through this one's files, one
    /// after the other, so that each read can fail.
    fn batches_reads(&self) -> bool {
        self.inner.batches_reads()
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.state.check(OpKind::List)?;
        self.inner.list(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.state.check(OpKind::Rename)?;
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.state.check(OpKind::Remove)?;
        self.inner.remove(path)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.state.check(OpKind::CreateDir)?;
        self.inner.create_dir_all(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.state.check(OpKind::Exists)?;
        self.inner.exists(path)
    }
    fn file_size(&self, path: &Path) -> io::Result<u64> {
        self.state.check(OpKind::FileSize)?;
        self.inner.file_size(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.state.check(OpKind::SyncDir)?;
        self.inner.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        self.state.check(OpKind::Lock)?;
        self.inner.lock(path)
    }
    fn lock_shared(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        self.state.check(OpKind::Lock)?;
        self.inner.lock_shared(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemFs;

    #[test]
    fn the_nth_matching_op_fails_and_persistent_rules_keep_failing() {
        let fs = FaultFs::new(Arc::new(MemFs::new()));
        let mut f = fs
            .create_append(Path::new("/log"), WriteLifetime::Short)
            .expect("create");
        fs.inject(FaultRule::io(OpKind::Append, 2));
        f.append(b"a").expect("first");
        f.sync().expect("syncs do not match");
        f.append(b"b").expect("second");
        assert!(f.append(b"c").is_err(), "third append fails");
        f.append(b"d").expect("a one-shot rule fires once");
        assert_eq!(fs.faults_triggered(), 1);
        assert_eq!(fs.ops_seen(OpKind::Append), 4);
        fs.inject(FaultRule::no_space(OpKind::Any, 0).persistent());
        let err = f.sync().expect_err("disk full");
        assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
        assert!(fs.exists(Path::new("/log")).is_err(), "still failing");
        fs.clear();
        assert_eq!(fs.read_all(Path::new("/log")).expect("read"), b"abd");
    }

    /// A `MemFs` that counts the calls of its `open_scan`.
    struct CountScans {
        mem: MemFs,
        scans: AtomicU64,
    }

    impl crate::FsLayer for CountScans {
        fn inner(&self) -> &dyn FileSystem {
            &self.mem
        }
        fn open_scan(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
            self.scans.fetch_add(1, Ordering::Relaxed);
            self.mem.open_scan(path)
        }
    }

    #[test]
    fn scans_open_the_inner_scan_file_and_can_fail() {
        let inner = Arc::new(CountScans {
            mem: MemFs::new(),
            scans: AtomicU64::new(0),
        });
        let fs = FaultFs::new(inner.clone());
        let mut o = fs
            .create_object(Path::new("/t"), WriteLifetime::Long)
            .expect("create");
        o.write(b"table").expect("write");
        o.finish().expect("finish");
        let file = fs.open_scan(Path::new("/t")).expect("open_scan");
        assert_eq!(inner.scans.load(Ordering::Relaxed), 1);
        assert_eq!(fs.ops_seen(OpKind::OpenRandom), 1);
        fs.inject(FaultRule::io(OpKind::Read, 0));
        assert!(file.read_vec_at(0, 5).is_err(), "a scan's read fails");
        assert_eq!(file.read_vec_at(0, 5).expect("read"), b"table");
        fs.inject(FaultRule::io(OpKind::OpenRandom, 0));
        assert!(fs.open_scan(Path::new("/t")).is_err());
        assert_eq!(
            inner.scans.load(Ordering::Relaxed),
            1,
            "a failed open has no effect"
        );
    }
}
