//! The forwarding base of the file systems that wrap another: [`FsLayer`].

use std::io;
use std::path::Path;
use std::sync::Arc;

use crate::{
    AppendFile, FileLock, FileSystem, ObjectWriter, RandomAccessFile, ReadQueue, WriteLifetime,
};

/// A file system that wraps another one and changes only some of its calls:
/// fault injection, tracing, a test that holds or observes an operation.
///
/// [`FsLayer::inner`] names the file system underneath. Every other method
/// mirrors the [`FileSystem`] method of the same name and by default
/// forwards the call to `inner()` unchanged, the methods `FileSystem`
/// gives a default body ([`FileSystem::open_scan`],
/// [`FileSystem::batches_reads`], [`FileSystem::read_queue`],
/// [`FileSystem::read_all`]) included: a layer over a file system that
/// batches its reads (io_uring) still batches them, and one over a file
/// system with its own scan files still scans with them. Every `FsLayer` is
/// a `FileSystem` (a blanket implementation calls the layer's method for
/// each `FileSystem` method), so a wrapper implements `FsLayer` with
/// `inner()` and the methods it changes, and nothing else:
///
/// ```
/// use std::io;
/// use std::path::Path;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use shale_env::{FileSystem, MemFs};
///
/// /// Counts the directory syncs of the file system it wraps.
/// struct CountSyncs {
///     inner: Arc<dyn FileSystem>,
///     syncs: AtomicU64,
/// }
///
/// impl shale_env::FsLayer for CountSyncs {
///     fn inner(&self) -> &dyn FileSystem {
///         &*self.inner
///     }
///     fn sync_dir(&self, dir: &Path) -> io::Result<()> {
///         self.syncs.fetch_add(1, Ordering::Relaxed);
///         self.inner.sync_dir(dir)
///     }
/// }
///
/// let fs = CountSyncs { inner: Arc::new(MemFs::new()), syncs: AtomicU64::new(0) };
/// fs.create_dir_all(Path::new("/d")).unwrap();
/// fs.sync_dir(Path::new("/d")).unwrap();
/// assert_eq!(fs.syncs.load(Ordering::Relaxed), 1);
/// let fs: Arc<dyn FileSystem> = Arc::new(fs);
/// assert!(fs.exists(Path::new("/d")).unwrap());
/// ```
///
/// # Why a trait with a blanket implementation
///
/// Without specialization a wrapper that implements `FileSystem` itself must
/// spell out every required method, and it silently keeps the trait's
/// default of every defaulted one instead of forwarding it: the inner file
/// system's own `open_scan`, `batches_reads`, `read_queue` and `read_all`
/// are lost. Here the forwarding is written once, for every method, and a
/// `FileSystem` method added without a forwarding `FsLayer` method fails to
/// compile (a required one) or fails this module's tests (a defaulted one).
///
/// The wrapper stays its own type: it keeps its fields, constructors and
/// methods, and may own a concrete file system (as [`crate::CrashFs`] owns a
/// [`crate::MemFs`] whose state it cuts). A separate layer value inside a
/// generic wrapper struct would make every wrapper that struct, reached
/// through an accessor, and a `macro_rules!` macro that forwards all but the
/// listed methods cannot compare method names.
///
/// The one cost: a type that implements `FsLayer` has each method twice
/// (the layer's and the `FileSystem` one), so where both traits are in scope
/// a call on the wrapper's own type is ambiguous. Name the trait by its path
/// (`impl shale_env::FsLayer for X`) instead of importing it, or call
/// `FileSystem::list(&x, dir)`; calls through `dyn FileSystem` are never
/// ambiguous.
pub trait FsLayer: Send + Sync + 'static {
    /// The file system underneath, which every method not overridden calls.
    fn inner(&self) -> &dyn FileSystem;

    /// [`FileSystem::create_append`]; forwards by default.
    fn create_append(&self, path: &Path, hint: WriteLifetime) -> io::Result<Box<dyn AppendFile>> {
        self.inner().create_append(path, hint)
    }
    /// [`FileSystem::create_object`]; forwards by default.
    fn create_object(&self, path: &Path, hint: WriteLifetime) -> io::Result<Box<dyn ObjectWriter>> {
        self.inner().create_object(path, hint)
    }
    /// [`FileSystem::open_random`]; forwards by default.
    fn open_random(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.inner().open_random(path)
    }
    /// [`FileSystem::open_scan`]; forwards by default (to the inner file
    /// system's `open_scan`, not to this layer's `open_random`).
    fn open_scan(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.inner().open_scan(path)
    }
    /// [`FileSystem::batches_reads`]; forwards by default.
    fn batches_reads(&self) -> bool {
        self.inner().batches_reads()
    }
    /// [`FileSystem::read_queue`]; forwards by default. The inner queue is
    /// handed the files this layer's `open_random` returned; the queues of
    /// this crate read a file they do not recognize by its own
    /// [`RandomAccessFile::read_vec_at`].
    fn read_queue(&self) -> Box<dyn ReadQueue> {
        self.inner().read_queue()
    }
    /// [`FileSystem::read_all`]; forwards by default (to the inner file
    /// system's `read_all`, not through this layer's `open_random`).
    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.inner().read_all(path)
    }
    /// [`FileSystem::list`]; forwards by default.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner().list(dir)
    }
    /// [`FileSystem::rename`]; forwards by default.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner().rename(from, to)
    }
    /// [`FileSystem::remove`]; forwards by default.
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner().remove(path)
    }
    /// [`FileSystem::create_dir_all`]; forwards by default.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner().create_dir_all(dir)
    }
    /// [`FileSystem::exists`]; forwards by default.
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.inner().exists(path)
    }
    /// [`FileSystem::file_size`]; forwards by default.
    fn file_size(&self, path: &Path) -> io::Result<u64> {
        self.inner().file_size(path)
    }
    /// [`FileSystem::sync_dir`]; forwards by default.
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner().sync_dir(dir)
    }
    /// [`FileSystem::lock`]; forwards by default.
    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        self.inner().lock(path)
    }
    /// [`FileSystem::lock_shared`]; forwards by default.
    fn lock_shared(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        self.inner().lock_shared(path)
    }
}

/// Every layer is a file system: each method calls the layer's.
impl<L: FsLayer> FileSystem for L {
    fn create_append(&self, path: &Path, hint: WriteLifetime) -> io::Result<Box<dyn AppendFile>> {
        FsLayer::create_append(self, path, hint)
    }
    fn create_object(&self, path: &Path, hint: WriteLifetime) -> io::Result<Box<dyn ObjectWriter>> {
        FsLayer::create_object(self, path, hint)
    }
    fn open_random(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        FsLayer::open_random(self, path)
    }
    fn open_scan(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        FsLayer::open_scan(self, path)
    }
    fn batches_reads(&self) -> bool {
        FsLayer::batches_reads(self)
    }
    fn read_queue(&self) -> Box<dyn ReadQueue> {
        FsLayer::read_queue(self)
    }
    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        FsLayer::read_all(self, path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        FsLayer::list(self, dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        FsLayer::rename(self, from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        FsLayer::remove(self, path)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        FsLayer::create_dir_all(self, dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        FsLayer::exists(self, path)
    }
    fn file_size(&self, path: &Path) -> io::Result<u64> {
        FsLayer::file_size(self, path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        FsLayer::sync_dir(self, dir)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        FsLayer::lock(self, path)
    }
    fn lock_shared(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        FsLayer::lock_shared(self, path)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use parking_lot::Mutex;

    use super::*;
    use crate::{CompletedRead, MemFs, SerialReadQueue};

    /// The capacity of [`Recorder`]'s read queue: not that of any queue of
    /// this crate, so that the test can tell it came from the recorder.
    const RECORDER_QUEUE_CAPACITY: usize = 3;

    /// A `SerialReadQueue` with a capacity of its own.
    struct MarkedQueue(SerialReadQueue);

    impl ReadQueue for MarkedQueue {
        fn capacity(&self) -> usize {
            RECORDER_QUEUE_CAPACITY
        }
        fn pending(&self) -> usize {
            self.0.pending()
        }
        fn submit(&mut self, file: &Arc<dyn RandomAccessFile>, offset: u64, len: usize, tag: u64) {
            self.0.submit(file, offset, len, tag);
        }
        fn complete(&mut self) -> Vec<CompletedRead> {
            self.0.complete()
        }
    }

    /// A `MemFs` that records the name of every method called on it,
    /// implements every method (the defaulted ones too), batches its reads
    /// and answers `read_all` with a marker, so that a layer that does not
    /// forward a call shows.
    #[derive(Default)]
    struct Recorder {
        mem: MemFs,
        calls: Mutex<Vec<&'static str>>,
    }

    const READ_ALL_MARKER: &[u8] = b"read_all of the recorder";

    impl Recorder {
        fn note(&self, method: &'static str) {
            self.calls.lock().push(method);
        }
    }

    impl FileSystem for Recorder {
        fn create_append(
            &self,
            path: &Path,
            hint: WriteLifetime,
        ) -> io::Result<Box<dyn AppendFile>> {
            self.note("create_append");
            self.mem.create_append(path, hint)
        }
        fn create_object(
            &self,
            path: &Path,
            hint: WriteLifetime,
        ) -> io::Result<Box<dyn ObjectWriter>> {
            self.note("create_object");
            self.mem.create_object(path, hint)
        }
        fn open_random(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
            self.note("open_random");
            self.mem.open_random(path)
        }
        fn open_scan(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
            self.note("open_scan");
            self.mem.open_random(path)
        }
        fn batches_reads(&self) -> bool {
            self.note("batches_reads");
            true
        }
        fn read_queue(&self) -> Box<dyn ReadQueue> {
            self.note("read_queue");
            Box::new(MarkedQueue(SerialReadQueue::new()))
        }
        fn read_all(&self, _path: &Path) -> io::Result<Vec<u8>> {
            self.note("read_all");
            Ok(READ_ALL_MARKER.to_vec())
        }
        fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
            self.note("list");
            self.mem.list(dir)
        }
        fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
            self.note("rename");
            self.mem.rename(from, to)
        }
        fn remove(&self, path: &Path) -> io::Result<()> {
            self.note("remove");
            self.mem.remove(path)
        }
        fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
            self.note("create_dir_all");
            self.mem.create_dir_all(dir)
        }
        fn exists(&self, path: &Path) -> io::Result<bool> {
            self.note("exists");
            self.mem.exists(path)
        }
        fn file_size(&self, path: &Path) -> io::Result<u64> {
            self.note("file_size");
            self.mem.file_size(path)
        }
        fn sync_dir(&self, dir: &Path) -> io::Result<()> {
            self.note("sync_dir");
            self.mem.sync_dir(dir)
        }
        fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
            self.note("lock");
            self.mem.lock(path)
        }
        fn lock_shared(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
            self.note("lock_shared");
            self.mem.lock_shared(path)
        }
    }

    /// A layer that overrides nothing.
    struct Transparent {
        inner: Arc<Recorder>,
    }

    impl FsLayer for Transparent {
        fn inner(&self) -> &dyn FileSystem {
            &*self.inner
        }
    }

    /// The names of the methods of `FileSystem`, read from its declaration
    /// in this crate's source.
    fn file_system_methods() -> BTreeSet<String> {
        let source = include_str!("lib.rs");
        let start = source
            .find("pub trait FileSystem:")
            .expect("the FileSystem trait in lib.rs");
        let body = &source[start..];
        let end = body.find("\n}\n").expect("the end of the FileSystem trait");
        body[..end]
            .split("fn ")
            .skip(1)
            .filter_map(|rest| rest.split('(').next())
            .filter(|name| name.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn a_layer_that_overrides_nothing_forwards_every_call() {
        let recorder = Arc::new(Recorder::default());
        let fs: Arc<dyn FileSystem> = Arc::new(Transparent {
            inner: recorder.clone(),
        });
        let d = Path::new("/d");
        let (a, b, c) = (Path::new("/d/a"), Path::new("/d/b"), Path::new("/d/c"));
        fs.create_dir_all(d).expect("create_dir_all");
        let mut log = fs
            .create_append(a, WriteLifetime::Short)
            .expect("create_append");
        log.append(b"abc").expect("append");
        let mut object = fs
            .create_object(b, WriteLifetime::Long)
            .expect("create_object");
        object.write(b"xy").expect("write");
        object.finish().expect("finish");
        assert_eq!(fs.open_random(a).expect("open_random").size(), 3);
        assert_eq!(fs.open_scan(a).expect("open_scan").size(), 3);
        assert!(fs.batches_reads(), "the recorder batches its reads");
        assert_eq!(fs.read_queue().capacity(), RECORDER_QUEUE_CAPACITY);
        assert_eq!(fs.read_all(a).expect("read_all"), READ_ALL_MARKER);
        let mut names = fs.list(d).expect("list");
        names.sort();
        assert_eq!(names, ["a", "b"]);
        fs.rename(a, c).expect("rename");
        fs.remove(c).expect("remove");
        assert!(!fs.exists(c).expect("exists"));
        assert_eq!(fs.file_size(b).expect("file_size"), 2);
        fs.sync_dir(d).expect("sync_dir");
        drop(fs.lock(Path::new("/d/LOCK")).expect("lock"));
        drop(fs.lock_shared(Path::new("/d/LOCK")).expect("lock_shared"));

        let calls = recorder.calls.lock().clone();
        assert_eq!(
            calls,
            [
                "create_dir_all",
                "create_append",
                "create_object",
                "open_random",
                "open_scan",
                "batches_reads",
                "read_queue",
                "read_all",
                "list",
                "rename",
                "remove",
                "exists",
                "file_size",
                "sync_dir",
                "lock",
                "lock_shared",
            ],
            "each call reached the inner file system once, as itself"
        );
        // A method added to `FileSystem` must be called above (and so be
        // forwarded) before this passes.
        let called: BTreeSet<String> = calls.iter().map(|s| s.to_string()).collect();
        assert_eq!(called, file_system_methods());
    }

    #[test]
    fn the_source_scan_finds_the_methods_of_file_system() {
        let methods = file_system_methods();
        for name in ["create_append", "open_scan", "read_all", "lock_shared"] {
            assert!(methods.contains(name), "{name} missing from {methods:?}");
        }
        assert!(!methods.contains("size"), "a method of another trait");
    }
}
