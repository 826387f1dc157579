//! ZoneFs: format, mount, replay, crashes, metadata rolls, placement, and the
//! engine running on it.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::Path;
use std::sync::Arc;

mod common;

use common::{CrashDev, Rng};
use shale_env::{AppendFile, FileSystem, ObjectWriter, WriteLifetime};
use shale_zoned::{
    EmulatedOptions, EmulatedZoned, FormatOptions, GcOptions, MountOptions, ZoneFs, ZoneFsError,
    ZonedDevice, ZonedGeometry,
};

fn geometry(nr_zones: u32, zone_size: u64) -> ZonedGeometry {
    ZonedGeometry::new(nr_zones, zone_size)
}

fn open_dev(path: &Path, g: &ZonedGeometry) -> Arc<dyn ZonedDevice> {
    Arc::new(EmulatedZoned::create(path, g, EmulatedOptions::default()).expect("device"))
}

fn fs_error(e: &io::Error) -> Option<&ZoneFsError> {
    e.get_ref().and_then(|e| e.downcast_ref::<ZoneFsError>())
}

fn write_file(fs: &ZoneFs, name: &str, data: &[u8], hint: WriteLifetime) {
    let mut f = fs.create_append(Path::new(name), hint).expect("create");
    f.append(data).expect("append");
    f.sync().expect("sync");
}

#[test]
fn roundtrip_survives_remount_and_reads_through_extents() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dev");
    // Zone capacity below the zone size, as on ZNS.
    let g = ZonedGeometry {
        zone_capacity: 192 << 10,
        ..geometry(16, 256 << 10)
    };
    let mut rng = Rng::new(7);
    let big = rng.bytes(700 << 10); // crosses zones
    let small = rng.bytes(1000);
    {
        let fs = ZoneFs::format(open_dev(&path, &g), FormatOptions::default()).expect("format");
        fs.create_dir_all(Path::new("/db/sub")).expect("mkdir");
        let mut t = fs
            .create_object(Path::new("/db/t.sst"), WriteLifetime::Long)
            .expect("object");
        for chunk in big.chunks(10_000) {
            t.write(chunk).expect("write");
        }
        t.finish().expect("finish");
        let mut wal = fs
            .create_append(Path::new("/db/wal"), WriteLifetime::Short)
            .expect("wal");
        for chunk in small.chunks(100) {
            wal.append(chunk).expect("append");
            wal.sync().expect("sync");
        }
        fs.sync_dir(Path::new("/db")).expect("sync_dir");
        assert!(matches!(
            fs.create_object(Path::new("/db/t.sst"), WriteLifetime::Long),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists
        ));
    }
    let fs = ZoneFs::mount(open_dev(&path, &g)).expect("mount");
    assert_eq!(fs.read_all(Path::new("/db/t.sst")).expect("read"), big);
    assert_eq!(fs.read_all(Path::new("/db/wal")).expect("read"), small);
    let f = fs.open_random(Path::new("/db/t.sst")).expect("open");
    let mut buf = vec![0u8; 300_000];
    f.read_exact_at(200_000, &mut buf).expect("read at");
    assert_eq!(buf, big[200_000..500_000]);
    assert!(matches!(
        f.read_exact_at(big.len() as u64 - 10, &mut [0u8; 11]),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof
    ));
    let mut names = fs.list(Path::new("/db")).expect("list");
    names.sort();
    assert_eq!(names, ["sub", "t.sst", "wal"]);
    assert_eq!(
        fs.list(Path::new("/db/sub")).expect("list"),
        Vec::<String>::new()
    );
    assert!(fs.exists(Path::new("/db/sub")).expect("exists"));
    assert!(matches!(
        fs.list(Path::new("/nope")),
        Err(e) if e.kind() == io::ErrorKind::NotFound
    ));
}

#[test]
fn files_of_one_lifetime_share_zones_and_dead_zones_are_reused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = geometry(8, 64 << 10);
    let fs = ZoneFs::format(
        open_dev(&dir.path().join("dev"), &g),
        FormatOptions::default(),
    )
    .expect("format");
    // Same lifetime: same zone; another lifetime: another zone.
    write_file(&fs, "/m1", b"one", WriteLifetime::Medium);
    write_file(&fs, "/m2", b"two", WriteLifetime::Medium);
    write_file(&fs, "/w", b"wal", WriteLifetime::Short);
    let zones = |n: &str| fs.file_zones(Path::new(n)).expect("zones");
    assert_eq!(zones("/m1"), zones("/m2"));
    assert_ne!(zones("/m1"), zones("/w"));
    for n in ["/m1", "/m2", "/w"] {
        fs.remove(Path::new(n)).expect("remove");
    }
    let data = vec![7u8; 60 << 10];
    // A file removed while open stays readable: its zone is not reset until
    // the reader is dropped.
    let kept: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
    write_file(&fs, "/open", &kept, WriteLifetime::Long);
    let reader = fs.open_random(Path::new("/open")).expect("open");
    fs.remove(Path::new("/open")).expect("remove");
    fs.sync_dir(Path::new("/")).expect("sync_dir");
    // 6 data zones: write and delete far more than fits, one file at a time.
    for i in 0..40 {
        let name = format!("/f{i}");
        write_file(&fs, &name, &data, WriteLifetime::Medium);
        fs.remove(Path::new(&name)).expect("remove");
        fs.sync_dir(Path::new("/")).expect("sync_dir");
    }
    let mut buf = vec![0u8; kept.len()];
    reader
        .read_exact_at(0, &mut buf)
        .expect("read removed file");
    assert_eq!(buf, kept);
    drop(reader);
    // Fill the device with live data: then allocation fails with DeviceFull
    // (no garbage to collect), leaving the zone reserved for the collector.
    let mut err = None;
    for i in 0..20 {
        let mut f = fs
            .create_append(Path::new(&format!("/keep{i}")), WriteLifetime::Extreme)
            .expect("create");
        if let Err(e) = f.append(&data).and_then(|()| f.sync()) {
            err = Some(e);
            break;
        }
    }
    let err = err.expect("the device fills up");
    assert_eq!(err.kind(), io::ErrorKind::StorageFull);
    assert!(matches!(fs_error(&err), Some(ZoneFsError::DeviceFull)));
    assert_eq!(fs.empty_data_zones(), 1);
}

#[test]
fn unformatted_device_and_wrong_geometry_are_typed_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g1 = geometry(8, 64 << 10);
    let g2 = geometry(12, 64 << 10);
    let d2 = open_dev(&dir.path().join("b"), &g2);
    assert!(matches!(
        ZoneFs::mount(d2.clone()),
        Err(ZoneFsError::NotFormatted)
    ));
    let d1 = open_dev(&dir.path().join("a"), &g1);
    drop(ZoneFs::format(d1.clone(), FormatOptions::default()).expect("format"));
    // Copy the first metadata zone of a device made for g1 onto one of g2.
    let mut zone0 = vec![0u8; 8192];
    d1.read_at(0, &mut zone0).expect("read");
    d2.write_at(0, &zone0).expect("write");
    let e = ZoneFs::mount(d2).err().expect("mount must fail");
    assert!(matches!(e, ZoneFsError::GeometryMismatch { .. }), "{e}");
    assert!(e.to_string().contains("another geometry"));
    assert!(matches!(
        ZoneFs::format(
            d1,
            FormatOptions {
                meta_zones: 1,
                ..Default::default()
            }
        ),
        Err(ZoneFsError::InvalidOptions { .. })
    ));
}

/// The data file and the zone state file of an emulated device.
fn device_files(path: &Path) -> (Vec<u8>, Vec<u8>) {
    (
        std::fs::read(path).expect("data file"),
        std::fs::read(EmulatedZoned::state_path_of(path)).expect("state file"),
    )
}

/// A crash during a metadata sync can leave its last frame cut by the write
/// pointer (the write pointer covers only the blocks written): the cut
/// record was never acknowledged, and mount drops it.
#[test]
fn torn_last_metadata_record_is_ignored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dev");
    let g = geometry(8, 64 << 10);
    {
        let dev = open_dev(&path, &g);
        let fs = ZoneFs::format(dev.clone(), FormatOptions::default()).expect("format");
        write_file(&fs, "/a", b"hello", WriteLifetime::Medium);
        fs.sync_dir(Path::new("/")).expect("sync_dir");
        // The first block of a two-block sync: a create record of 6000
        // bytes whose body the write pointer cuts after 4088.
        let z = dev.zone(0).expect("zone");
        let mut body = vec![2u8];
        body.extend(Rng::new(5).bytes(5999));
        let mut block = vec![0u8; 4096];
        block[..4].copy_from_slice(&6000u32.to_le_bytes());
        block[4..8].copy_from_slice(&crc32c::crc32c(&body).to_le_bytes());
        block[8..].copy_from_slice(&body[..4088]);
        dev.write_at(z.write_pointer, &block)
            .expect("write cut frame");
        dev.sync().expect("sync");
    }
    {
        // Read-only: the cut record is ignored and nothing is written.
        let before = device_files(&path);
        let fs = ZoneFs::mount_with(
            open_dev(&path, &g),
            MountOptions {
                read_only: true,
                ..MountOptions::default()
            },
        )
        .expect("read-only mount");
        assert_eq!(fs.read_all(Path::new("/a")).expect("read"), b"hello");
        drop(fs);
        assert!(device_files(&path) == before, "a read-only mount wrote");
    }
    {
        let fs = ZoneFs::mount(open_dev(&path, &g)).expect("mount");
        assert_eq!(fs.read_all(Path::new("/a")).expect("read"), b"hello");
        // The log continues (in a new metadata zone) and stays readable.
        assert_eq!(fs.metadata_sequence(), 2, "no roll after the torn tail");
        write_file(&fs, "/b", b"world", WriteLifetime::Medium);
        fs.sync_dir(Path::new("/")).expect("sync_dir");
    }
    let fs = ZoneFs::mount(open_dev(&path, &g)).expect("mount");
    assert_eq!(fs.read_all(Path::new("/a")).expect("read"), b"hello");
    assert_eq!(fs.read_all(Path::new("/b")).expect("read"), b"world");
}

/// A complete frame after the log whose checksum fails is not a torn write
/// (the write pointer covers all of it): damage, which no mount drops, and
/// on which no mount writes.
#[test]
fn a_complete_metadata_record_with_a_bad_checksum_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dev");
    let g = geometry(8, 64 << 10);
    let bad_at;
    {
        let dev = open_dev(&path, &g);
        let fs = ZoneFs::format(dev.clone(), FormatOptions::default()).expect("format");
        write_file(&fs, "/a", b"hello", WriteLifetime::Medium);
        fs.sync_dir(Path::new("/")).expect("sync_dir");
        let z = dev.zone(0).expect("zone");
        bad_at = z.write_pointer;
        let mut block = vec![0u8; 4096];
        block[..4].copy_from_slice(&100u32.to_le_bytes());
        block[4..8].copy_from_slice(&0xDEAD_BEEFu32.to_le_bytes());
        block[8] = 2;
        dev.write_at(z.write_pointer, &block)
            .expect("write garbage");
        dev.sync().expect("sync");
    }
    let before = device_files(&path);
    for read_only in [false, true] {
        let e = ZoneFs::mount_with(
            open_dev(&path, &g),
            MountOptions {
                read_only,
                ..MountOptions::default()
            },
        )
        .err()
        .expect("a damaged record refuses the mount");
        assert!(matches!(e, ZoneFsError::Corrupt { .. }), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("metadata zone 0") && text.contains(&format!("byte {bad_at}")),
            "{text}"
        );
        assert_eq!(io::Error::from(e).kind(), io::ErrorKind::InvalidData);
        assert!(
            device_files(&path) == before,
            "read_only {read_only}: the device changed"
        );
    }
}

#[test]
fn metadata_log_rolls_many_times_and_every_roll_remounts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dev");
    // 32 KiB metadata zones: eight blocks, so the log rolls every few syncs;
    // three open/active zones: the metadata zone and two placement slots, so
    // a superseded metadata zone must not stay active.
    let g = ZonedGeometry {
        max_open_zones: 3,
        max_active_zones: 3,
        ..geometry(24, 32 << 10)
    };
    let hints = [
        WriteLifetime::Short,
        WriteLifetime::Medium,
        WriteLifetime::Extreme,
    ];
    let mut expected: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut fs = ZoneFs::format(
        open_dev(&path, &g),
        FormatOptions {
            meta_zones: 3,
            ..Default::default()
        },
    )
    .expect("format");
    let mut rng = Rng::new(11);
    let mut rolls = 0;
    for i in 0..200 {
        let name = format!("/f{}", i % 7);
        let n = rng.below(3000) as usize + 1;
        let data = rng.bytes(n);
        let before = fs.metadata_sequence();
        write_file(&fs, &name, &data, hints[i % 3]);
        expected.insert(name, data);
        if i % 3 == 0 {
            let victim = format!("/f{}", rng.below(7));
            if expected.remove(&victim).is_some() {
                fs.remove(Path::new(&victim)).expect("remove");
            }
        }
        fs.sync_dir(Path::new("/")).expect("sync_dir");
        if fs.metadata_sequence() != before {
            rolls += 1;
            drop(fs);
            fs = ZoneFs::mount(open_dev(&path, &g)).expect("remount after roll");
            for (name, data) in &expected {
                assert_eq!(&fs.read_all(Path::new(name)).expect("read"), data, "{name}");
            }
            let listed: BTreeSet<String> = fs
                .list(Path::new("/"))
                .expect("list")
                .into_iter()
                .map(|n| format!("/{n}"))
                .collect();
            assert_eq!(listed, expected.keys().cloned().collect());
        }
    }
    assert!(rolls >= 20, "only {rolls} rolls");
}

#[test]
fn a_snapshot_larger_than_a_zone_fails_with_metadata_full() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = geometry(400, 16 << 10);
    let fs = ZoneFs::format(
        open_dev(&dir.path().join("dev"), &g),
        FormatOptions::default(),
    )
    .expect("format");
    // Each sync of one byte costs an extent: the snapshot outgrows 16 KiB.
    let mut err = None;
    'outer: for i in 0..200 {
        let mut f = fs
            .create_append(
                Path::new(&format!("/wal-with-a-long-name-{i:04}")),
                WriteLifetime::Short,
            )
            .expect("create");
        for _ in 0..50 {
            if let Err(e) = f.append(b"x").and_then(|()| f.sync()) {
                err = Some(e);
                break 'outer;
            }
        }
    }
    let err = err.expect("the metadata outgrows a zone");
    assert!(
        matches!(
            fs_error(&err),
            Some(ZoneFsError::MetadataFull { .. }) | Some(ZoneFsError::DeviceFull)
        ),
        "{err}"
    );
    if let Some(&ZoneFsError::MetadataFull { needed, capacity }) = fs_error(&err) {
        assert!(needed > capacity);
        assert!(err.to_string().contains("metadata does not fit"));
        // Later changes fail the same way instead of looping.
        assert!(matches!(
            fs.sync_dir(Path::new("/")),
            Err(e) if matches!(fs_error(&e), Some(ZoneFsError::MetadataFull { needed: n, .. }) if *n == needed)
        ));
        assert!(matches!(
            fs.create_append(Path::new("/more"), WriteLifetime::Short),
            Err(e) if e.kind() == io::ErrorKind::StorageFull
        ));
    } else {
        panic!("expected MetadataFull before the data zones ran out: {err}");
    }
}

/// One file of the model: bytes readers see (synced) and bytes appended
/// since.
#[derive(Clone, Default)]
struct MFile {
    synced: Vec<u8>,
    pending: Vec<u8>,
}

enum W {
    Append(Box<dyn AppendFile>),
    Object(Box<dyn ObjectWriter>),
}

/// Runs one seed; returns how many crashes and sync points it went through.
/// (Its collections rarely find a zone to reclaim: crashes keep the data
/// small. `tests/zonefs_gc.rs` drives collection hard.)
fn run_model(seed: u64, steps: usize) -> (usize, usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dev");
    let g = geometry(40, 128 << 10);
    let mut rng = Rng::new(seed);
    // Collection runs only where the steps say (or where a writer needs
    // space), so that a seed replays exactly.
    let mount = MountOptions {
        gc: GcOptions {
            background: false,
            ..GcOptions::default()
        },
        ..MountOptions::default()
    };
    let mut fs = Some(
        ZoneFs::format(
            open_dev(&path, &g),
            FormatOptions {
                meta_zones: 3,
                mount,
            },
        )
        .expect("format"),
    );
    let mut live: BTreeMap<String, MFile> = BTreeMap::new();
    // Names with their synced bytes as of the last full metadata sync.
    let mut durable: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut touched: BTreeSet<String> = BTreeSet::new();
    let mut writers: BTreeMap<String, W> = BTreeMap::new();
    let hints = [
        WriteLifetime::NotSet,
        WriteLifetime::Short,
        WriteLifetime::Medium,
        WriteLifetime::Long,
        WriteLifetime::Extreme,
    ];
    let sync_point = |live: &BTreeMap<String, MFile>,
                      durable: &mut BTreeMap<String, Vec<u8>>,
                      touched: &mut BTreeSet<String>| {
        *durable = live
            .iter()
            .map(|(n, f)| (n.clone(), f.synced.clone()))
            .collect();
        touched.clear();
    };
    let (mut crashes, mut syncs) = (0, 0);
    for step in 0..steps {
        let z = fs.as_ref().expect("mounted");
        let op = rng.below(100);
        let name = format!("/d/f{}", rng.below(12));
        let ctx = format!("seed {seed} step {step} op {op} {name}");
        match op {
            0..=9 if !writers.contains_key(&name) => {
                let hint = hints[rng.below(5) as usize];
                if rng.below(2) == 0 {
                    let w = z.create_append(Path::new(&name), hint).expect(&ctx);
                    writers.insert(name.clone(), W::Append(w));
                    live.insert(name.clone(), MFile::default());
                    touched.insert(name);
                } else if !live.contains_key(&name) {
                    let w = z.create_object(Path::new(&name), hint).expect(&ctx);
                    writers.insert(name.clone(), W::Object(w));
                    live.insert(name.clone(), MFile::default());
                    touched.insert(name);
                }
            }
            10..=44 => {
                if let Some(w) = writers.get_mut(&name) {
                    let n = rng.below(6000) as usize + 1;
                    let data = rng.bytes(n);
                    match w {
                        W::Append(a) => a.append(&data).expect(&ctx),
                        W::Object(o) => o.write(&data).expect(&ctx),
                    }
                    live.get_mut(&name)
                        .expect("model")
                        .pending
                        .extend_from_slice(&data);
                }
            }
            45..=59 => match writers.remove(&name) {
                Some(W::Append(mut a)) => {
                    a.sync().expect(&ctx);
                    let f = live.get_mut(&name).expect("model");
                    let p = std::mem::take(&mut f.pending);
                    f.synced.extend_from_slice(&p);
                    if rng.below(3) == 0 {
                        writers.insert(name.clone(), W::Append(a));
                    }
                    sync_point(&live, &mut durable, &mut touched);
                    syncs += 1;
                }
                Some(W::Object(o)) => {
                    if rng.below(5) == 0 {
                        o.abort().expect(&ctx);
                        live.remove(&name);
                        touched.insert(name);
                    } else {
                        o.finish().expect(&ctx);
                        let f = live.get_mut(&name).expect("model");
                        let p = std::mem::take(&mut f.pending);
                        f.synced.extend_from_slice(&p);
                        sync_point(&live, &mut durable, &mut touched);
                        syncs += 1;
                    }
                }
                None => {}
            },
            60..=64 => {
                // Close an append file without syncing.
                if matches!(writers.get(&name), Some(W::Append(_))) {
                    writers.remove(&name);
                    live.get_mut(&name).expect("model").pending.clear();
                }
            }
            65..=72 => {
                let to = format!("/d/f{}", rng.below(12));
                if to != name
                    && live.contains_key(&name)
                    && !writers.contains_key(&name)
                    && !writers.contains_key(&to)
                {
                    z.rename(Path::new(&name), Path::new(&to)).expect(&ctx);
                    let f = live.remove(&name).expect("model");
                    live.insert(to.clone(), f);
                    touched.insert(name);
                    touched.insert(to);
                }
            }
            73..=79 => {
                if live.contains_key(&name) && !writers.contains_key(&name) {
                    z.remove(Path::new(&name)).expect(&ctx);
                    live.remove(&name);
                    touched.insert(name);
                }
            }
            80..=83 => {
                z.sync_dir(Path::new("/d")).expect(&ctx);
                sync_point(&live, &mut durable, &mut touched);
                syncs += 1;
            }
            84..=86 => {
                // Collect garbage (moving extents of files being written
                // and read too), then check every synced file.
                z.collect_garbage().expect(&ctx);
                for (n, f) in &live {
                    assert_eq!(
                        z.read_all(Path::new(n)).expect(&ctx),
                        f.synced,
                        "{ctx}: {n}"
                    );
                }
                let check = z.check().expect(&ctx);
                assert!(check.problems.is_empty(), "{ctx}: {:?}", check.problems);
            }
            87..=94 => {
                if let Some(f) = live.get(&name) {
                    assert_eq!(z.read_all(Path::new(&name)).expect(&ctx), f.synced, "{ctx}");
                    assert_eq!(
                        z.file_size(Path::new(&name)).expect(&ctx),
                        f.synced.len() as u64
                    );
                }
            }
            _ => {
                // Crash: drop everything unsynced, mount again.
                writers.clear();
                drop(fs.take());
                let m = ZoneFs::mount_with(open_dev(&path, &g), mount).expect(&ctx);
                let names: BTreeSet<String> = m
                    .list(Path::new("/d"))
                    .unwrap_or_default()
                    .into_iter()
                    .map(|n| format!("/d/{n}"))
                    .collect();
                for (n, data) in &durable {
                    if !touched.contains(n) {
                        assert!(names.contains(n), "{ctx}: durable {n} lost");
                        assert_eq!(&m.read_all(Path::new(n)).expect(&ctx), data, "{ctx}: {n}");
                    }
                }
                let mut recovered = BTreeMap::new();
                for n in &names {
                    let got = m.read_all(Path::new(n)).expect(&ctx);
                    if touched.contains(n) || !durable.contains_key(n) {
                        assert!(touched.contains(n), "{ctx}: {n} appeared from nowhere");
                        // Whatever version it is, it was synced at some point.
                        let ok = got.is_empty()
                            || durable.values().any(|d| d == &got)
                            || live.values().any(|f| f.synced == got);
                        assert!(ok, "{ctx}: {n} holds bytes never synced");
                    }
                    recovered.insert(
                        n.clone(),
                        MFile {
                            synced: got,
                            pending: Vec::new(),
                        },
                    );
                }
                live = recovered;
                sync_point(&live, &mut durable, &mut touched);
                syncs += 1;
                fs = Some(m);
                crashes += 1;
            }
        }
    }
    (crashes, syncs)
}

#[test]
fn randomized_against_a_model_with_crashes() {
    for seed in [1, 2, 3, 42, 1234, 99_999] {
        let (crashes, syncs) = run_model(seed, 400);
        assert!(
            crashes >= 5 && syncs >= 30,
            "seed {seed}: {crashes} crashes, {syncs} syncs"
        );
    }
}

#[test]
fn the_engine_runs_on_zonefs() {
    use shale::{Db, Options};
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dev");
    let g = geometry(64, 1 << 20);
    let options = |fs: ZoneFs| {
        Options::default()
            .fs(Arc::new(fs))
            .write_buffer_size(16 << 10)
            .target_file_size_base(32 << 10)
            .block_cache_bytes(64 << 10)
            .max_background_jobs(1)
    };
    let key = |i: u32| format!("key{:06}", (i * 7919) % 5000);
    let value = |i: u32| format!("value-{i}-{}", "x".repeat((i % 50) as usize));
    let mut expected = BTreeMap::new();
    {
        let fs = ZoneFs::format(open_dev(&path, &g), FormatOptions::default()).expect("format");
        let db = Db::open("/db", options(fs)).expect("open");
        for i in 0..4000u32 {
            db.put(key(i).as_bytes(), value(i).as_bytes()).expect("put");
            expected.insert(key(i), value(i));
        }
        db.close().expect("close");
    }
    let fs = ZoneFs::mount(open_dev(&path, &g)).expect("mount");
    let db = Db::open("/db", options(fs)).expect("reopen");
    for (k, v) in &expected {
        assert_eq!(
            db.get(k.as_bytes()).expect("get").as_deref(),
            Some(v.as_bytes()),
            "{k}"
        );
    }
    db.close().expect("close");
}

#[test]
fn the_engine_on_zonefs_survives_crashes_against_a_model() {
    use shale::{Db, Options, WriteBatch, WriteOptions};
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dev");
    // Limits of 4 open/active zones: three placement slots.
    let g = ZonedGeometry {
        max_open_zones: 4,
        max_active_zones: 4,
        ..geometry(96, 512 << 10)
    };
    let open = || {
        Arc::new(CrashDev::new(
            EmulatedZoned::create(&path, &g, EmulatedOptions::default()).expect("device"),
            -1,
        ))
    };
    let options = |fs: ZoneFs| {
        Options::default()
            .fs(Arc::new(fs))
            .write_buffer_size(8 << 10)
            .target_file_size_base(16 << 10)
            .block_cache_bytes(64 << 10)
            .max_background_jobs(1)
    };
    let read_state = |db: &Db| -> BTreeMap<u32, Vec<u8>> {
        (0..300u32)
            .filter_map(|k| {
                db.get(format!("k{k:04}").as_bytes())
                    .expect("get")
                    .map(|v| (k, v))
            })
            .collect()
    };
    for seed in [5u64, 77] {
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(EmulatedZoned::state_path_of(&path));
        let mut rng = Rng::new(seed);
        let mut dev = open();
        let fs = ZoneFs::format(dev.clone(), FormatOptions::default()).expect("format");
        let mut db = Db::open("/db", options(fs)).expect("open");
        let mut durable: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
        let mut pending: Vec<(u32, Option<Vec<u8>>)> = Vec::new();
        let mut crashes = 0;
        for step in 0..2500 {
            let r = rng.below(1000);
            if r < 6 {
                // Power loss.
                dev.down.store(true, std::sync::atomic::Ordering::SeqCst);
                drop(db);
                drop(dev);
                dev = open();
                let fs = ZoneFs::mount(dev.clone()).expect("mount after crash");
                db = Db::open("/db", options(fs)).expect("open after crash");
                let state = read_state(&db);
                let mut candidate = durable.clone();
                let mut matched = state == candidate;
                for (k, v) in &pending {
                    if matched {
                        break;
                    }
                    match v {
                        Some(v) => candidate.insert(*k, v.clone()),
                        None => candidate.remove(k),
                    };
                    matched = state == candidate;
                }
                assert!(
                    matched,
                    "seed {seed} step {step}: state after crash is not durable + a prefix"
                );
                durable = state;
                pending.clear();
                crashes += 1;
                continue;
            }
            let k = rng.below(300) as u32;
            let key = format!("k{k:04}");
            let sync = rng.below(10) == 0;
            let mut b = WriteBatch::new();
            let v = if rng.below(5) == 0 {
                b.delete(key.as_bytes());
                None
            } else {
                let n = rng.below(200) as usize + 1;
                let v = rng.bytes(n);
                b.put(key.as_bytes(), &v);
                Some(v)
            };
            db.write(b, &WriteOptions::default().sync(sync))
                .expect("write");
            pending.push((k, v));
            if sync {
                for (k, v) in pending.drain(..) {
                    match v {
                        Some(v) => durable.insert(k, v),
                        None => durable.remove(&k),
                    };
                }
            }
        }
        assert!(crashes > 3, "seed {seed}: only {crashes} crashes");
        db.close().expect("close");
    }
}

/// The power fails at every changing device operation in turn (writes, zone
/// resets and finishes, syncs: in the middle of metadata rolls, data writes,
/// zone reuse); every mount afterwards succeeds and holds every acknowledged
/// file, takes writes, and the mount after it holds those too.
#[test]
fn power_loss_at_every_device_operation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dev");
    // 16 KiB zones: the metadata log rolls every couple of syncs and data
    // zones fill and die quickly.
    let g = geometry(24, 16 << 10);
    let workload = |fs: &ZoneFs,
                    acked: &mut BTreeMap<String, Vec<u8>>,
                    in_flight: &mut Option<(String, Vec<u8>)>|
     -> io::Result<()> {
        let mut rng = Rng::new(3);
        for i in 0..16 {
            let name = format!("/f{}", i % 4);
            let n = rng.below(9000) as usize + 1;
            let data = rng.bytes(n);
            *in_flight = Some((name.clone(), data.clone()));
            let mut f = fs.create_append(Path::new(&name), WriteLifetime::Medium)?;
            f.append(&data)?;
            f.sync()?;
            fs.sync_dir(Path::new("/"))?;
            acked.insert(name, data);
            *in_flight = None;
        }
        Ok(())
    };
    let mut budget = 0;
    loop {
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(EmulatedZoned::state_path_of(&path));
        let dev = Arc::new(CrashDev::new(
            EmulatedZoned::create(&path, &g, EmulatedOptions::default()).expect("device"),
            -1,
        ));
        let fs = ZoneFs::format(dev.clone(), FormatOptions::default()).expect("format");
        dev.budget
            .store(budget, std::sync::atomic::Ordering::SeqCst);
        let mut acked = BTreeMap::new();
        let mut in_flight = None;
        let finished = workload(&fs, &mut acked, &mut in_flight).is_ok();
        let before: BTreeMap<String, Vec<u8>> = acked.clone();
        drop(fs);
        drop(dev);
        let dev: Arc<dyn ZonedDevice> =
            Arc::new(EmulatedZoned::open(&path, EmulatedOptions::default()).expect("reopen"));
        let fs = ZoneFs::mount(dev)
            .unwrap_or_else(|e| panic!("budget {budget}: mount after power loss: {e}"));
        for (name, data) in &before {
            let got = fs.read_all(Path::new(name)).expect("acked file");
            match &in_flight {
                // The old version, the new one, or the new one still empty.
                Some((n, new)) if n == name => assert!(
                    got.is_empty() || &got == data || &got == new,
                    "budget {budget}: {name}"
                ),
                _ => assert_eq!(&got, data, "budget {budget}: {name}"),
            }
        }
        if let Some((n, new)) = &in_flight {
            if !before.contains_key(n) && fs.exists(Path::new(n)).expect("exists") {
                let got = fs.read_all(Path::new(n)).expect("read");
                assert!(got.is_empty() || &got == new, "budget {budget}: {n}");
            }
        }
        // The file system works after the remount, and the next mount has
        // what it wrote (a log the mount went on in must read on).
        write_file(&fs, "/after", b"still works", WriteLifetime::Long);
        fs.sync_dir(Path::new("/")).expect("sync_dir after remount");
        let expected: BTreeMap<String, Vec<u8>> = fs
            .files()
            .into_iter()
            .map(|f| {
                let data = fs.read_all(Path::new(&f.path)).expect("read");
                (f.path, data)
            })
            .collect();
        drop(fs);
        let dev: Arc<dyn ZonedDevice> =
            Arc::new(EmulatedZoned::open(&path, EmulatedOptions::default()).expect("reopen"));
        let fs =
            ZoneFs::mount(dev).unwrap_or_else(|e| panic!("budget {budget}: second mount: {e}"));
        for (name, data) in &expected {
            assert_eq!(
                &fs.read_all(Path::new(name)).expect("read"),
                data,
                "budget {budget}: {name} after the second mount"
            );
        }
        if finished {
            assert!(
                budget > 50,
                "the workload made only {budget} device operations"
            );
            break;
        }
        budget += 1;
    }
}

/// A file whose bytes look like a newer superblock of the same file system,
/// claiming more metadata zones, lands at the start of a data zone: mount
/// must not trust it.
#[test]
fn superblock_lookalike_in_file_data_is_ignored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dev");
    let g = geometry(8, 64 << 10);
    {
        let dev = open_dev(&path, &g);
        let fs = ZoneFs::format(dev.clone(), FormatOptions::default()).expect("format");
        let mut sb = vec![0u8; 4096];
        dev.read_at(0, &mut sb).expect("read superblock");
        sb[52..56].copy_from_slice(&5u32.to_le_bytes()); // meta_zones
        sb[56..64].copy_from_slice(&1000u64.to_le_bytes()); // sequence
        let crc = crc32c::crc32c(&sb[..64]);
        sb[64..68].copy_from_slice(&crc.to_le_bytes());
        write_file(&fs, "/evil", &sb, WriteLifetime::Extreme);
        write_file(&fs, "/x", b"data in zone 3", WriteLifetime::Medium);
        assert_eq!(fs.file_zones(Path::new("/evil")).expect("zones"), [2]);
        fs.sync_dir(Path::new("/")).expect("sync_dir");
    }
    let fs = ZoneFs::mount(open_dev(&path, &g)).expect("mount");
    assert_eq!(
        fs.read_all(Path::new("/x")).expect("read"),
        b"data in zone 3"
    );
    assert_eq!(fs.read_all(Path::new("/evil")).expect("read").len(), 4096);
    assert!(fs.metadata_sequence() < 1000);
}
