//! ZoneFs under concurrency: a small file's sync does not wait for another
//! thread's device writes, and several writers, removers and the collector
//! running at once lose nothing acknowledged across a power loss.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

mod common;

use common::{foreground, long_tests, CrashDev, Rng};
use shale_env::{FileSystem, WriteLifetime};
use shale_zoned::{
    EmulatedOptions, EmulatedZoned, FormatOptions, GcOptions, MountOptions, ZoneFs, ZonedDevice,
    ZonedGeometry, ZonedStats,
};

/// How long a test waits for something that must happen before it calls it
/// a failure (never a pass condition: the tests wait on gates and channels).
const PATIENCE: Duration = Duration::from_secs(60);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A gate on a device: once armed, the first write of at least `min_len`
/// bytes (or, made by [`GateDev::on_resets`], the first zone reset) stops
/// inside the device (before it reaches the emulator), reports that it is
/// there, and waits until the gate is opened.
struct GateDev {
    dev: EmulatedZoned,
    min_len: usize,
    /// Resets are held, not writes.
    resets: bool,
    /// (armed, a write is held, opened)
    gate: Mutex<(bool, bool, bool)>,
    cv: Condvar,
}

impl GateDev {
    fn new(dev: EmulatedZoned, min_len: usize) -> GateDev {
        GateDev {
            dev,
            min_len,
            resets: false,
            gate: Mutex::new((false, false, false)),
            cv: Condvar::new(),
        }
    }

    fn on_resets(dev: EmulatedZoned) -> GateDev {
        GateDev {
            resets: true,
            ..GateDev::new(dev, 0)
        }
    }

    fn arm(&self) {
        lock(&self.gate).0 = true;
    }

    /// Waits until a write is held at the gate; false after `PATIENCE`.
    fn wait_held(&self) -> bool {
        let g = lock(&self.gate);
        let (g, _) = self
            .cv
            .wait_timeout_while(g, PATIENCE, |g| !g.1)
            .unwrap_or_else(PoisonError::into_inner);
        g.1
    }

    fn open(&self) {
        lock(&self.gate).2 = true;
        self.cv.notify_all();
    }

    fn pass(&self, len: usize) {
        let mut g = lock(&self.gate);
        if !g.0 || len < self.min_len {
            return;
        }
        g.0 = false;
        g.1 = true;
        self.cv.notify_all();
        // Held until opened (the test opens it on every path).
        while !g.2 {
            g = self.cv.wait(g).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl ZonedDevice for GateDev {
    fn geometry(&self) -> ZonedGeometry {
        self.dev.geometry()
    }
    fn report_zones(&self, first: u32, count: u32) -> shale_zoned::Result<Vec<shale_zoned::Zone>> {
        self.dev.report_zones(first, count)
    }
    fn open_zone(&self, zone: u32) -> shale_zoned::Result<()> {
        self.dev.open_zone(zone)
    }
    fn close_zone(&self, zone: u32) -> shale_zoned::Result<()> {
        self.dev.close_zone(zone)
    }
    fn finish_zone(&self, zone: u32) -> shale_zoned::Result<()> {
        self.dev.finish_zone(zone)
    }
    fn reset_zone(&self, zone: u32) -> shale_zoned::Result<()> {
        if self.resets {
            self.pass(usize::MAX);
        }
        self.dev.reset_zone(zone)
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> shale_zoned::Result<()> {
        if !self.resets {
            self.pass(data.len());
        }
        self.dev.write_at(offset, data)
    }
    fn append(&self, zone: u32, data: &[u8]) -> shale_zoned::Result<u64> {
        if !self.resets {
            self.pass(data.len());
        }
        self.dev.append(zone, data)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> shale_zoned::Result<()> {
        self.dev.read_at(offset, buf)
    }
    fn sync(&self) -> shale_zoned::Result<()> {
        self.dev.sync()
    }
    fn stats(&self) -> ZonedStats {
        self.dev.stats()
    }
}

fn read_file(fs: &ZoneFs, name: &str) -> io::Result<Vec<u8>> {
    let f = fs.open_random(Path::new(name))?;
    let mut buf = vec![0u8; f.size() as usize];
    f.read_exact_at(0, &mut buf)?;
    Ok(buf)
}

/// A WAL append + sync completes while another thread's large table write
/// is held inside the device (in another zone: another lifetime class).
/// With the state lock held across device writes, the WAL's create (or its
/// sync) waits for the table write and the test fails at `PATIENCE`.
#[test]
fn a_wal_sync_does_not_wait_for_another_threads_data_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dev");
    let g = ZonedGeometry::new(16, 1 << 20);
    let emu = EmulatedZoned::create(&path, &g, EmulatedOptions::default()).expect("device");
    // A table's write-out chunk is 64 KiB; the WAL's writes are one block.
    let gate = Arc::new(GateDev::new(emu, 64 << 10));
    let fs = ZoneFs::format(
        gate.clone(),
        FormatOptions {
            mount: foreground(),
            ..FormatOptions::default()
        },
    )
    .expect("format");
    fs.create_dir_all(Path::new("/db")).expect("mkdir");
    fs.sync_metadata().expect("sync");

    gate.arm();
    let table = std::thread::spawn({
        let fs = fs.clone();
        move || -> io::Result<()> {
            let mut t = fs.create_object(Path::new("/db/000007.sst"), WriteLifetime::Long)?;
            t.write(&vec![7u8; 256 << 10])?;
            t.finish()
        }
    });
    let held = gate.wait_held();

    let (tx, rx) = mpsc::channel();
    let wal = std::thread::spawn({
        let fs = fs.clone();
        move || {
            let r = (|| -> io::Result<()> {
                let mut w = fs.create_append(Path::new("/db/000008.log"), WriteLifetime::Short)?;
                w.append(b"a small batch")?;
                w.sync()
            })();
            let _ = tx.send(r);
        }
    });
    let synced = held.then(|| rx.recv_timeout(PATIENCE));
    // Let the table go on, whatever happened, so the threads end.
    gate.open();
    table.join().expect("table thread").expect("table write");
    wal.join().expect("wal thread");
    assert!(held, "the table write never reached the gate");
    match synced {
        Some(Ok(r)) => r.expect("wal append + sync"),
        _ => panic!("the WAL sync waited for the held table write"),
    }
    assert_eq!(
        read_file(&fs, "/db/000008.log").expect("read wal"),
        b"a small batch"
    );
    assert_eq!(
        read_file(&fs, "/db/000007.sst").expect("read table"),
        vec![7u8; 256 << 10]
    );
}

/// A writer that needs a zone while the only ones left are being reset (by
/// another thread's metadata sync, which resets the zones of a removed file
/// under the log lock, not the state lock) waits for the reset and goes on.
/// Before, it saw no free zone and nothing queued for a reset, found nothing
/// to collect (the zones being reset are no victims) and failed with
/// "zone file system full" on a device about to be empty.
#[test]
fn a_writer_waits_for_zones_being_reset_instead_of_failing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dev");
    let zone = 256u64 << 10;
    let g = ZonedGeometry::new(8, zone);
    let emu = EmulatedZoned::create(&path, &g, EmulatedOptions::default()).expect("device");
    let gate = Arc::new(GateDev::on_resets(emu));
    let fs = ZoneFs::format(
        gate.clone(),
        FormatOptions {
            mount: foreground(),
            ..FormatOptions::default()
        },
    )
    .expect("format");
    fs.create_dir_all(Path::new("/db")).expect("mkdir");
    // Six data zones: fill five (the sixth is the collector's reserve) with
    // one file of the `Long` class, so its last zone is full too.
    let mut big = fs
        .create_object(Path::new("/db/000001.sst"), WriteLifetime::Long)
        .expect("create");
    big.write(&vec![1u8; 5 * zone as usize]).expect("write");
    big.finish().expect("finish");
    let zones_used = |fs: &ZoneFs| {
        fs.zones()
            .expect("zones")
            .iter()
            .filter(|z| z.written > 0 && matches!(z.role, shale_zoned::ZoneRole::Data))
            .count()
    };
    assert_eq!(zones_used(&fs), 5, "the file fills five data zones");
    fs.remove(Path::new("/db/000001.sst")).expect("remove");

    // A metadata sync resets the file's zones; the first reset is held.
    gate.arm();
    let syncer = std::thread::spawn({
        let fs = fs.clone();
        move || fs.sync_metadata()
    });
    let held = gate.wait_held();

    // Meanwhile a WAL (another class, so no open zone of its own) needs a
    // zone: none is free but the reserve, and the others are being reset.
    let (tx, rx) = mpsc::channel();
    let wal = std::thread::spawn({
        let fs = fs.clone();
        move || {
            let r = (|| -> io::Result<()> {
                let mut w = fs.create_append(Path::new("/db/000002.log"), WriteLifetime::Short)?;
                w.append(&vec![2u8; 64 << 10])?;
                w.sync()
            })();
            let _ = tx.send(r);
        }
    });
    // The WAL must not finish (nor fail) while the reset is held.
    let early = held.then(|| rx.recv_timeout(Duration::from_millis(300)));
    gate.open();
    syncer.join().expect("sync thread").expect("metadata sync");
    let later = rx.recv_timeout(PATIENCE);
    wal.join().expect("wal thread");
    assert!(held, "the metadata sync never reset a zone");
    match early {
        Some(Err(mpsc::RecvTimeoutError::Timeout)) => {}
        Some(Ok(r)) => panic!("the WAL did not wait for the zones being reset: {r:?}"),
        other => panic!("unexpected: {other:?}"),
    }
    later
        .expect("the WAL finished after the resets")
        .expect("the WAL's write and sync, once the zones are reset");
    assert_eq!(
        read_file(&fs, "/db/000002.log").expect("read wal"),
        vec![2u8; 64 << 10]
    );
}

/// What a stress thread knows of one of its files after a power loss.
#[derive(Clone, Debug)]
struct Known {
    /// The bytes of its last sync that returned Ok, then those of a sync the
    /// power failed in (its extents record may have been made durable by
    /// another thread's metadata sync): the file holds one of them.
    versions: Vec<Vec<u8>>,
    /// Removed, and the removal may not be durable: it may be absent.
    maybe_removed: bool,
}

/// One writer thread: creates files of its own (appending and syncing in
/// several steps, table-sized or WAL-sized), removes old ones (keeping at
/// most six), syncs the metadata now and then; stops at the first error,
/// which must come from the power loss.
fn stress_thread(
    fs: &ZoneFs,
    dev: &CrashDev,
    t: usize,
    seed: u64,
    steps: usize,
) -> BTreeMap<String, Known> {
    let mut rng = Rng::new(seed);
    let mut known: BTreeMap<String, Known> = BTreeMap::new();
    let mut live: Vec<String> = Vec::new();
    let hints = [
        WriteLifetime::Short,
        WriteLifetime::Medium,
        WriteLifetime::Long,
        WriteLifetime::Extreme,
    ];
    for step in 0..steps {
        let r = (|| -> io::Result<()> {
            let op = if live.len() >= 6 { 7 } else { rng.below(10) };
            match op {
                0..=5 => {
                    let name = format!("/s/t{t}-{step}");
                    let hint = hints[rng.below(hints.len() as u64) as usize];
                    let mut f = fs.create_append(Path::new(&name), hint)?;
                    let mut data = Vec::new();
                    for _ in 0..1 + rng.below(3) {
                        let len = if rng.below(3) == 0 {
                            1 + rng.below(300) as usize
                        } else {
                            1 + rng.below(100 << 10) as usize
                        };
                        let chunk = rng.bytes(len);
                        data.extend_from_slice(&chunk);
                        let r = f.append(&chunk).and_then(|()| f.sync());
                        match known.get_mut(&name) {
                            Some(k) if r.is_err() => k.versions.push(data.clone()),
                            _ if r.is_ok() => {
                                let k = Known {
                                    versions: vec![data.clone()],
                                    maybe_removed: false,
                                };
                                known.insert(name.clone(), k);
                            }
                            _ => {}
                        }
                        r?;
                    }
                    live.push(name);
                }
                6..=8 if live.len() > 3 => {
                    let name = live.remove(rng.below(live.len() as u64) as usize);
                    if let Some(k) = known.get_mut(&name) {
                        k.maybe_removed = true;
                    }
                    fs.remove(Path::new(&name))?;
                }
                _ => {
                    fs.sync_metadata()?;
                    // Every removal so far is durable now.
                    known.retain(|_, k| !k.maybe_removed);
                }
            }
            Ok(())
        })();
        if let Err(e) = r {
            assert!(
                dev.down.load(Ordering::SeqCst),
                "thread {t} step {step}: {e} with the power on"
            );
            break;
        }
    }
    known
}

/// Several writers, removals, the background collector and foreground
/// collections at once, then a power loss at a random point (or at the
/// end), a remount, and every acknowledged file checked. Returns the zones
/// collected and whether the power failed before the writers were done.
fn stress_round(seed: u64, threads: usize, steps: usize) -> (u64, bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dev");
    // 40 zones of 512 KiB: the writers' live data fills about half, and
    // what they remove keeps the collector busy.
    let g = ZonedGeometry::new(40, 512 << 10);
    let emu = EmulatedZoned::create(&path, &g, EmulatedOptions::default()).expect("device");
    let dev = Arc::new(CrashDev::new(emu, -1));
    let mount = MountOptions {
        gc: GcOptions {
            background: true,
            interval: Duration::from_millis(2),
            low_water_percent: 30,
            reserve_zones: 1,
        },
        ..MountOptions::default()
    };
    let fs = ZoneFs::format(
        dev.clone(),
        FormatOptions {
            meta_zones: 3,
            mount,
        },
    )
    .expect("format");
    fs.create_dir_all(Path::new("/s")).expect("mkdir");
    fs.sync_metadata().expect("sync");

    let mut rng = Rng::new(seed);
    // Power fails after this many changing device operations (or never).
    let budget = if rng.below(3) == 0 {
        -1
    } else {
        200 + rng.below(2000) as i64
    };
    dev.budget.store(budget, Ordering::SeqCst);
    let stop = Arc::new(AtomicBool::new(false));
    let collector = std::thread::spawn({
        let fs = fs.clone();
        let stop = stop.clone();
        let dev = dev.clone();
        move || {
            while !stop.load(Ordering::SeqCst) {
                if let Err(e) = fs.collect_garbage() {
                    assert!(dev.down.load(Ordering::SeqCst), "collection: {e}");
                    break;
                }
                std::thread::yield_now();
            }
        }
    });
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let fs = fs.clone();
            let dev = dev.clone();
            let s = seed.wrapping_mul(31).wrapping_add(t as u64);
            std::thread::spawn(move || stress_thread(&fs, &dev, t, s, steps))
        })
        .collect();
    let mut known = BTreeMap::new();
    for w in workers {
        known.extend(w.join().expect("writer thread"));
    }
    stop.store(true, Ordering::SeqCst);
    collector.join().expect("collector thread");
    let collected = fs.stats().gc_zones;
    let crashed = dev.down.load(Ordering::SeqCst);
    // The power fails (if it has not yet): nothing unsynced survives.
    dev.down.store(true, Ordering::SeqCst);
    drop(fs);
    drop(dev);

    let emu = EmulatedZoned::open(&path, EmulatedOptions::default()).expect("reopen");
    let fs = ZoneFs::mount_with(Arc::new(emu), foreground())
        .unwrap_or_else(|e| panic!("seed {seed}: mount after the crash: {e}"));
    for (name, k) in &known {
        let got = match read_file(&fs, name) {
            Ok(got) => Some(got),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => panic!("seed {seed}: {name}: {e}"),
        };
        match got {
            Some(got) => assert!(
                k.versions.contains(&got),
                "seed {seed}: {name}: {} bytes, none of the synced versions ({:?} bytes)",
                got.len(),
                k.versions.iter().map(Vec::len).collect::<Vec<_>>()
            ),
            None => assert!(k.maybe_removed, "seed {seed}: synced {name} lost"),
        }
    }
    // The remounted file system is consistent and writable.
    let report = fs.check().expect("check");
    assert!(report.problems.is_empty(), "seed {seed}: {report:?}");
    let mut f = fs
        .create_append(Path::new("/s/after"), WriteLifetime::Short)
        .expect("create after");
    f.append(b"after").expect("append after");
    f.sync().expect("sync after");
    (collected, crashed)
}

#[test]
fn concurrent_writers_and_the_collector_lose_nothing_synced_across_a_crash() {
    let (seeds, steps) = if long_tests() { (40, 200) } else { (4, 40) };
    let (mut collected, mut crashes) = (0, 0);
    for seed in 0..seeds {
        let (c, crashed) = stress_round(seed, 4, steps);
        collected += c;
        crashes += usize::from(crashed);
    }
    // The rounds did what they are for: collections ran among the writers,
    // and the power failed in the middle of some.
    assert!(collected > 0, "no zone was collected");
    assert!(crashes > 0, "the power never failed while the writers ran");
}
