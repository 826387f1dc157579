//! The write path does no device I/O under the state lock: while the memtable
//! switch of a write leader waits for a WAL sync, the creation of the next WAL
//! or the directory sync, and while a background thread lists the directory
//! for obsolete files, whatever takes the state lock (here `Db::metrics`, which
//! reads the running jobs and the stall state under it) goes on. And a crash
//! at any of those steps loses no acknowledged write that was durable.
//!
//! And `compact_all` does not take tables another job is removing.
//!
//! A `GateFs` wraps the file system and holds one chosen operation until the
//! test releases it; every wait in the test has a timeout, so a regression
//! fails instead of hanging.

use shale_testkit as common;

use std::io;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use common::files;

use shale::env::{AppendFile, CrashFs, FileSystem, MemFs, WriteLifetime};
use shale::{Db, Options, WriteOptions};

/// How long a step that must not wait may take before the test fails.
const PROMPT: Duration = Duration::from_secs(10);

/// The operations a [`Gate`] can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hold {
    /// `sync` of a write-ahead log (`*.log`).
    WalSync,
    /// `create_append` of a write-ahead log.
    WalCreate,
    /// `sync_dir`.
    SyncDir,
    /// `list`.
    List,
    /// `sync` of a manifest (`MANIFEST-*`).
    ManifestSync,
}

#[derive(Default)]
struct GateState {
    armed: Option<Hold>,
    /// Operations of the armed kind to let through before holding one.
    skip: usize,
    /// The armed operation arrived and waits.
    held: bool,
    released: bool,
}

/// Holds the first operation of the armed kind until released.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    cv: Condvar,
}

impl Gate {
    fn arm(&self, hold: Hold) {
        self.arm_after(hold, 0);
    }

    /// Arms the gate to hold the operation of kind `hold` that follows the
    /// next `skip` ones.
    fn arm_after(&self, hold: Hold, skip: usize) {
        let mut g = self.state.lock().expect("gate");
        *g = GateState {
            armed: Some(hold),
            skip,
            ..GateState::default()
        };
    }

    /// Called by every gated operation before it runs.
    fn pass(&self, op: Hold) {
        let mut g = self.state.lock().expect("gate");
        if g.armed != Some(op) {
            return;
        }
        if g.skip > 0 {
            g.skip -= 1;
            return;
        }
        g.armed = None;
        g.held = true;
        self.cv.notify_all();
        while !g.released {
            g = self.cv.wait(g).expect("gate");
        }
    }

    /// True once the armed operation waits (false after `PROMPT`).
    fn wait_held(&self) -> bool {
        let g = self.state.lock().expect("gate");
        let (g, _) = self
            .cv
            .wait_timeout_while(g, PROMPT, |g| !g.held)
            .expect("gate");
        g.held
    }

    fn release(&self) {
        let mut g = self.state.lock().expect("gate");
        g.armed = None;
        g.released = true;
        self.cv.notify_all();
    }
}

/// Releases the gate when dropped, so that a failing assertion does not leave
/// a thread of the database blocked for ever.
struct ReleaseOnDrop(Arc<Gate>);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.0.release();
    }
}

fn is_wal(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "log")
}

fn is_manifest(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("MANIFEST-"))
}

struct GateFs {
    inner: Arc<dyn FileSystem>,
    gate: Arc<Gate>,
}

struct GateAppend {
    inner: Box<dyn AppendFile>,
    /// What a sync of this file is, if the gate may hold it.
    sync: Option<Hold>,
    gate: Arc<Gate>,
}

impl AppendFile for GateAppend {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.inner.append(data)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> io::Result<()> {
        if let Some(hold) = self.sync {
            self.gate.pass(hold);
        }
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl shale::env::FsLayer for GateFs {
    fn inner(&self) -> &dyn FileSystem {
        &*self.inner
    }
    fn create_append(&self, path: &Path, hint: WriteLifetime) -> io::Result<Box<dyn AppendFile>> {
        let wal = is_wal(path);
        if wal {
            self.gate.pass(Hold::WalCreate);
        }
        let sync = if wal {
            Some(Hold::WalSync)
        } else if is_manifest(path) {
            Some(Hold::ManifestSync)
        } else {
            None
        };
        Ok(Box::new(GateAppend {
            inner: self.inner.create_append(path, hint)?,
            sync,
            gate: self.gate.clone(),
        }))
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.gate.pass(Hold::List);
        self.inner.list(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.gate.pass(Hold::SyncDir);
        self.inner.sync_dir(dir)
    }
}

const WRITE_BUFFER: usize = 4 << 10;

fn options(fs: Arc<dyn FileSystem>) -> Options {
    Options::default().fs(fs).write_buffer_size(WRITE_BUFFER)
}

/// A value that fills a memtable by itself: the next write switches.
fn big_value(tag: u8) -> Vec<u8> {
    vec![tag; WRITE_BUFFER + 1]
}

/// Runs `f` on a thread of its own; its result comes down the channel (after
/// `f` and what it captured are gone).
fn spawn<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> mpsc::Receiver<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let result = f();
        let _ = tx.send(result);
    });
    rx
}

/// Runs `f` on a thread of its own; its result, or `None` if it did not
/// return within `PROMPT`.
fn within_prompt<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    spawn(f).recv_timeout(PROMPT).ok()
}

/// Opens a database on `inner` behind a gate, with nothing in flight: the
/// open's own I/O and any flush are done before the test arms the gate.
fn open_gated(inner: Arc<dyn FileSystem>) -> (Arc<Db>, Arc<Gate>) {
    let gate = Arc::new(Gate::default());
    let fs = Arc::new(GateFs {
        inner,
        gate: gate.clone(),
    });
    let db = Db::open("/db", options(fs)).expect("open");
    db.put(b"before", b"1").expect("put");
    db.flush().expect("flush");
    (Arc::new(db), gate)
}

/// While a write leader's memtable switch is held at each of its I/O steps,
/// `Db::metrics` (state lock) and Gets answer, the write completes once the
/// step is released, and everything reads back after a reopen.
#[test]
fn the_memtable_switch_does_its_io_without_the_state_lock() {
    for hold in [Hold::WalSync, Hold::WalCreate, Hold::SyncDir] {
        let mem = Arc::new(MemFs::new());
        let (db, gate) = open_gated(mem.clone());
        let release = ReleaseOnDrop(gate.clone());
        db.put(b"full", &big_value(1)).expect("fill the memtable");
        gate.arm(hold);
        let writer = {
            let db = db.clone();
            spawn(move || db.put(b"after", b"2"))
        };
        assert!(
            gate.wait_held(),
            "{hold:?}: the switch never reached the step"
        );
        let metrics = {
            let db = db.clone();
            within_prompt(move || db.metrics())
        };
        assert!(
            metrics.is_some(),
            "{hold:?}: Db::metrics waited for the WAL switch's I/O (state lock held)"
        );
        assert_eq!(
            db.get(b"full").expect("get"),
            Some(big_value(1)),
            "{hold:?}"
        );
        assert!(
            writer.try_recv().is_err(),
            "{hold:?}: the write finished while its switch was held"
        );
        drop(release);
        let written = writer.recv_timeout(PROMPT);
        assert!(
            matches!(written, Ok(Ok(()))),
            "{hold:?}: the write after the switch: {written:?}"
        );
        assert_eq!(db.get(b"after").expect("get"), Some(b"2".to_vec()));
        let db = Arc::try_unwrap(db).unwrap_or_else(|_| panic!("db still shared"));
        db.close().expect("close");
        let db = Db::open("/db", options(mem)).expect("reopen");
        for (k, v) in [
            (&b"before"[..], b"1".to_vec()),
            (b"full", big_value(1)),
            (b"after", b"2".to_vec()),
        ] {
            assert_eq!(db.get(k).expect("get"), Some(v), "{hold:?}: {k:?}");
        }
        db.close().expect("close");
    }
}

/// While a background thread lists the directory for obsolete files after a
/// flush, `Db::metrics` answers and a write that switches memtables (which
/// takes the state lock) completes.
#[test]
fn obsolete_files_are_listed_without_the_state_lock() {
    let mem = Arc::new(MemFs::new());
    let (db, gate) = open_gated(mem.clone());
    let release = ReleaseOnDrop(gate.clone());
    db.put(b"full", &big_value(3)).expect("put");
    gate.arm(Hold::List);
    // The flush's WAL is obsolete once its table is installed: a background
    // thread then lists the directory to delete it. (On a thread: were the
    // listing under the state lock, the flush could wait for it to return.)
    let flushed = {
        let db = db.clone();
        within_prompt(move || db.flush())
    };
    assert!(matches!(flushed, Some(Ok(()))), "flush: {flushed:?}");
    assert!(gate.wait_held(), "no listing after the flush");
    let metrics = {
        let db = db.clone();
        within_prompt(move || db.metrics())
    };
    assert!(
        metrics.is_some(),
        "Db::metrics waited for the directory listing (state lock held)"
    );
    let switched = {
        let db = db.clone();
        within_prompt(move || {
            db.put(b"big", &big_value(4))?;
            db.put(b"small", b"5")
        })
    };
    assert!(
        matches!(switched, Some(Ok(()))),
        "writes that switch memtables during the listing: {switched:?}"
    );
    drop(release);
    let db = Arc::try_unwrap(db).unwrap_or_else(|_| panic!("db still shared"));
    db.close().expect("close");
    let db = Db::open("/db", options(mem)).expect("reopen");
    assert_eq!(db.get(b"big").expect("get"), Some(big_value(4)));
    assert_eq!(db.get(b"small").expect("get"), Some(b"5".to_vec()));
    db.close().expect("close");
}

/// `compact_all` takes every table, so it must wait for a delete-only job
/// whose edit is still on its way to the manifest: the tables that edit
/// deletes are then still in the current version. (It used to wait only for
/// the automatic compactions and took them as inputs; its own edit then
/// deleted tables no longer there, which `Version::apply` refuses.)
#[test]
fn compact_all_waits_for_a_delete_only_job_being_installed() {
    let mem = Arc::new(MemFs::new());
    let (db, gate) = open_gated(mem.clone());
    let release = ReleaseOnDrop(gate.clone());
    for i in 0..100u32 {
        db.put(format!("k{i:03}").as_bytes(), b"v").expect("put");
    }
    db.flush().expect("flush");
    db.delete_range(b"k", b"l").expect("delete_range");
    // The flush installs the range deletion (one manifest sync); the
    // delete-only job it starts then drops the table of k000..k099, whose
    // keys the deletion covers whole: its manifest sync is held.
    gate.arm_after(Hold::ManifestSync, 1);
    db.flush().expect("flush");
    assert!(gate.wait_held(), "no delete-only job after the flush");
    let compacted = {
        let db = db.clone();
        spawn(move || db.compact_all())
    };
    // Time for a compact_all that does not wait to take its inputs.
    std::thread::sleep(Duration::from_millis(300));
    gate.release();
    let result = compacted
        .recv_timeout(PROMPT)
        .expect("compact_all returned");
    assert!(matches!(result, Ok(())), "compact_all: {result:?}");
    for i in 0..100u32 {
        assert_eq!(db.get(format!("k{i:03}").as_bytes()).expect("get"), None);
    }
    assert_eq!(db.get(b"before").expect("get"), Some(b"1".to_vec()));
    drop(release);
    let db = Arc::try_unwrap(db).unwrap_or_else(|_| panic!("db still shared"));
    db.close().expect("close");
    let db = Db::open("/db", options(mem)).expect("reopen");
    assert_eq!(db.get(b"k050").expect("get"), None);
    assert_eq!(db.get(b"before").expect("get"), Some(b"1".to_vec()));
    db.close().expect("close");
}

/// A crash while the memtable switch is held at each of its steps: every
/// synced write survives, and once the old log was synced (the switch's
/// first step) so does every acknowledged write.
#[test]
fn a_crash_during_the_memtable_switch_keeps_acknowledged_writes() {
    for (i, hold) in [Hold::WalSync, Hold::WalCreate, Hold::SyncDir]
        .into_iter()
        .enumerate()
    {
        let crash = Arc::new(CrashFs::new());
        let (db, gate) = open_gated(crash.clone());
        let release = ReleaseOnDrop(gate.clone());
        db.write(
            {
                let mut b = shale::WriteBatch::new();
                b.put(b"synced", b"s");
                b
            },
            &WriteOptions::SYNC,
        )
        .expect("synced put");
        db.put(b"full", &big_value(6)).expect("unsynced put");
        gate.arm(hold);
        let writer = {
            let db = db.clone();
            spawn(move || db.put(b"after", b"7"))
        };
        assert!(
            gate.wait_held(),
            "{hold:?}: the switch never reached the step"
        );
        crash.crash_with_torn_tails(i as u64);
        drop(release);
        // The held step now fails on the crashed file system: the write fails
        // (poisoning the database) instead of being acknowledged.
        let written = writer.recv_timeout(PROMPT);
        assert!(
            matches!(written, Ok(Err(_))),
            "{hold:?}: the write after the crash: {written:?}"
        );
        drop(Arc::try_unwrap(db).unwrap_or_else(|_| panic!("db still shared")));
        crash.restart();
        let db = Db::open("/db", options(crash.clone())).expect("reopen after the crash");
        assert_eq!(db.get(b"before").expect("get"), Some(b"1".to_vec()));
        assert_eq!(db.get(b"synced").expect("get"), Some(b"s".to_vec()));
        let full = db.get(b"full").expect("get");
        if hold == Hold::WalSync {
            // Not synced yet when the crash came: it may be lost, never damaged.
            assert!(full.is_none() || full == Some(big_value(6)), "{hold:?}");
        } else {
            assert_eq!(full, Some(big_value(6)), "{hold:?}: synced by the switch");
        }
        assert_eq!(
            db.get(b"after").expect("get"),
            None,
            "{hold:?}: never acknowledged"
        );
        db.close().expect("close");
    }
}

/// Deleting outside the state lock still deletes: after each flush the
/// flushed memtable's log goes, and after each manifest rollover the old
/// manifest, while the live ones stay.
#[test]
fn obsolete_logs_and_manifests_still_go() {
    let mem = Arc::new(MemFs::new());
    // Every edit rolls the manifest over.
    let opts = options(mem.clone()).max_manifest_bytes(1);
    let db = Db::open("/db", opts.clone()).expect("open");
    for round in 0..5u8 {
        db.put(&[b'k', round], &big_value(round)).expect("put");
        db.put(&[b'l', round], b"x").expect("put");
        db.flush().expect("flush");
        // The deletion runs on a background thread after the flush.
        let logs_and_manifests = || {
            let names = files(&mem, "");
            let logs: Vec<_> = names
                .iter()
                .filter(|n| n.ends_with(".log"))
                .cloned()
                .collect();
            let manifests: Vec<_> = names
                .into_iter()
                .filter(|n| n.starts_with("MANIFEST"))
                .collect();
            (logs, manifests)
        };
        let deadline = Instant::now() + PROMPT;
        let (mut logs, mut manifests) = logs_and_manifests();
        while (logs.len(), manifests.len()) != (1, 1) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
            (logs, manifests) = logs_and_manifests();
        }
        assert_eq!(
            (logs.len(), manifests.len()),
            (1, 1),
            "round {round}: {logs:?} {manifests:?}"
        );
    }
    db.close().expect("close");
    let db = Db::open("/db", opts).expect("reopen");
    for round in 0..5u8 {
        assert_eq!(db.get(&[b'k', round]).expect("get"), Some(big_value(round)));
    }
    db.close().expect("close");
}
