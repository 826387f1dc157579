//! The byte-flip sweep on zoned storage: damage one byte of an emulated zoned
//! device holding a shale database (tables in two levels, a manifest, a live
//! write-ahead log, a metadata log that rolled) and check that no flip ever
//! destroys the database: a read-write mount of the zone file system after
//! the flip fails with a typed error and writes nothing, or succeeds and
//! changes nothing (the flip is somewhere the mount does not read); the
//! engine, opened read-only on what mounted, reports a typed error or
//! returns exactly the right data; and once the byte is restored, every key
//! is there again.
//!
//! Flipped by default: a third of the bytes of the active metadata zone's
//! superblock (a seventh of the superseded one's), a byte of the length,
//! of the checksum and of the body of every frame of the active zone (and
//! of every eighth frame of the superseded one), some padding, and two
//! bytes of each data zone. `SHALE_LONG_TESTS=1`: every superblock and
//! frame header byte, every 7th body byte and every 61st padding byte of
//! both metadata zones, and 24 bytes of each data zone.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;

use common::{long_tests, Rng};
use shale::{Db, Options, WriteBatch, WriteOptions};
use shale_zoned::{
    EmulatedOptions, EmulatedZoned, FileInfo, FormatOptions, GcOptions, MountOptions, ZoneFs,
    ZoneFsError, ZoneRole, ZonedDevice, ZonedGeometry,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const DB: &str = "/db";

fn geometry() -> ZonedGeometry {
    // Capacity below the zone size, as on ZNS; 24 blocks of metadata per
    // zone, so the metadata log rolls.
    ZonedGeometry {
        zone_capacity: 96 << 10,
        max_open_zones: 6,
        max_active_zones: 6,
        ..ZonedGeometry::new(40, 128 << 10)
    }
}

fn mount(path: &Path, read_only: bool) -> Result<ZoneFs, ZoneFsError> {
    let dev: Arc<dyn ZonedDevice> = Arc::new(
        EmulatedZoned::create(path, &geometry(), EmulatedOptions::default()).expect("device"),
    );
    ZoneFs::mount_with(
        dev,
        MountOptions {
            read_only,
            gc: GcOptions {
                background: false,
                ..GcOptions::default()
            },
            ..MountOptions::default()
        },
    )
}

fn options(fs: ZoneFs) -> Options {
    Options::default()
        .fs(Arc::new(fs))
        .write_buffer_size(8 << 10)
        .block_size(512)
        .target_file_size_base(16 << 10)
        .block_cache_bytes(64 << 10)
        .max_background_jobs(1)
}

/// The database: bulk data compacted into the last level, newer versions
/// and deletions in L0, the last writes only in the synced log.
fn build(path: &Path) -> Model {
    let dev: Arc<dyn ZonedDevice> = Arc::new(
        EmulatedZoned::create(path, &geometry(), EmulatedOptions::default()).expect("device"),
    );
    let fs = ZoneFs::format(dev, FormatOptions::default()).expect("format");
    let db = Db::open(DB, options(fs.clone())).expect("open");
    let mut model = Model::new();
    let mut rng = Rng::new(41);
    let sync = WriteOptions::SYNC;
    // Batches of ten rows, each synced (a WAL sync is a metadata sync).
    let mut write = |db: &Db, rows: Vec<(String, Option<Vec<u8>>)>| {
        let mut b = WriteBatch::new();
        for (k, v) in rows {
            match v {
                Some(v) => {
                    b.put(k.as_bytes(), &v);
                    model.insert(k.into_bytes(), v);
                }
                None => {
                    b.delete(k.as_bytes());
                    model.remove(k.as_bytes());
                }
            }
        }
        db.write(b, &sync).expect("write");
    };
    for chunk in (0..400u32).collect::<Vec<_>>().chunks(10) {
        let rows = chunk
            .iter()
            .map(|&i| {
                (
                    format!("key{i:05}"),
                    Some(rng.bytes(20 + (i % 40) as usize)),
                )
            })
            .collect();
        write(&db, rows);
    }
    db.compact_all().expect("compact");
    for chunk in (0..400u32).step_by(5).collect::<Vec<_>>().chunks(10) {
        let rows = chunk
            .iter()
            .map(|&i| (format!("key{i:05}"), Some(rng.bytes(30))))
            .collect();
        write(&db, rows);
    }
    for chunk in (3..400u32).step_by(11).collect::<Vec<_>>().chunks(10) {
        let rows = chunk
            .iter()
            .map(|&i| (format!("key{i:05}"), None))
            .collect();
        write(&db, rows);
    }
    db.flush().expect("flush");
    // The last writes only in the log, and enough of them that the active
    // metadata zone holds many records.
    let mut i = 0;
    loop {
        write(&db, vec![(format!("wal{i:02}"), Some(vec![b'w'; 9]))]);
        i += 1;
        let active = fs
            .zones()
            .expect("zones")
            .into_iter()
            .find(|z| matches!(z.role, ZoneRole::Metadata { active: true }))
            .expect("active metadata zone");
        if (i >= 6 && active.written >= 12 * 4096) || i >= 60 {
            break;
        }
    }
    db.close().expect("close");
    assert!(
        fs.metadata_sequence() >= 2,
        "the metadata log must have rolled"
    );
    drop(fs);
    // A read-write mount settles the zones, so that a later mount of the
    // undamaged device writes no data.
    drop(mount(path, false).expect("settling mount"));
    model
}

fn device_files(path: &Path) -> (Vec<u8>, Vec<u8>) {
    (
        std::fs::read(path).expect("data file"),
        std::fs::read(EmulatedZoned::state_path_of(path)).expect("state file"),
    )
}

fn xor(path: &Path, offset: u64, bits: u8) {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .expect("open data file");
    let mut b = [0u8; 1];
    f.seek(SeekFrom::Start(offset)).expect("seek");
    f.read_exact(&mut b).expect("read");
    b[0] ^= bits;
    f.seek(SeekFrom::Start(offset)).expect("seek");
    // The emulator's O_DIRECT reads write dirty cached pages back first.
    f.write_all(&b).expect("write");
}

/// Reads every key of the model and a few absent ones through a read-only
/// engine on `fs`: each answer is right or a typed error. False when the
/// engine refused to open or a read failed.
fn reads_are_right_or_errors(fs: ZoneFs, model: &Model, ctx: &str) -> bool {
    let db = match Db::open_read_only(DB, options(fs)) {
        Ok(db) => db,
        Err(_) => return false,
    };
    let mut clean = true;
    for (k, v) in model {
        match db.get(k) {
            Ok(got) => assert_eq!(got.as_ref(), Some(v), "{ctx}: wrong row"),
            Err(_) => clean = false,
        }
    }
    for k in ["key00003", "nokey", "wal-none"] {
        match db.get(k.as_bytes()) {
            Ok(got) => assert_eq!(got, None, "{ctx}: {k} came back"),
            Err(_) => clean = false,
        }
    }
    clean
}

#[derive(Debug, Default)]
struct Tally {
    flips: u64,
    refused: u64,
    mounted_unchanged: u64,
    engine_errors: u64,
}

/// One flip: see the module documentation. `original` is the device's data
/// file before the sweep.
#[allow(clippy::too_many_arguments)]
fn sweep_one(
    path: &Path,
    original: &[u8],
    model: &Model,
    listing: &[FileInfo],
    offset: u64,
    bits: u8,
    what: &str,
    t: &mut Tally,
) {
    let ctx = format!("{what}: byte {offset} ^ {bits:#04x}");
    xor(path, offset, bits);
    t.flips += 1;
    let before = device_files(path);
    match mount(path, false) {
        Err(e) => {
            assert!(matches!(e, ZoneFsError::Corrupt { .. }), "{ctx}: {e}");
            assert!(device_files(path) == before, "{ctx}: a refused mount wrote");
            t.refused += 1;
        }
        Ok(fs) => {
            assert!(fs.files() == listing, "{ctx}: the mount changed the files");
            if !reads_are_right_or_errors(fs, model, &ctx) {
                t.engine_errors += 1;
            }
            assert!(
                device_files(path).0 == before.0,
                "{ctx}: the read-write mount wrote data"
            );
            t.mounted_unchanged += 1;
        }
    }
    match mount(path, true) {
        Err(e) => assert!(
            matches!(e, ZoneFsError::Corrupt { .. }),
            "{ctx}: read-only: {e}"
        ),
        Ok(fs) => assert!(fs.files() == listing, "{ctx}: read-only: other files"),
    }
    assert!(
        device_files(path).0 == before.0,
        "{ctx}: a read-only mount wrote"
    );
    xor(path, offset, bits);
    // Restored: the device holds what it held before the flip, byte for
    // byte (so every key is there: the sweep read them all before it
    // began, and reads them all again at its end).
    assert!(
        device_files(path).0 == *original,
        "{ctx}: restored, the data differs"
    );
    let fs = mount(path, true).unwrap_or_else(|e| panic!("{ctx}: restored: {e}"));
    assert!(fs.files() == listing, "{ctx}: restored, other files");
}

/// Issue 20's sweep: no flip ever destroys a zoned database.
#[test]
fn no_flip_destroys_a_zoned_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dev");
    let model = build(&path);
    let g = geometry();
    let (listing, zones) = {
        let fs = mount(&path, true).expect("mount");
        let listing = fs.files();
        let zones = fs.zones().expect("zones");
        assert!(
            reads_are_right_or_errors(fs, &model, "before any flip"),
            "the database does not read back"
        );
        (listing, zones)
    };
    let data = device_files(&path).0;
    let long = long_tests();
    let mut rng = Rng::new(0x5eed);
    let mut tally = Tally::default();
    let mut per_kind: BTreeMap<&str, u64> = BTreeMap::new();
    for z in &zones {
        let start = u64::from(z.zone) * g.zone_size;
        let end = start + z.written;
        match z.role {
            ZoneRole::Metadata { .. } if z.written > 0 => {
                let active = matches!(z.role, ZoneRole::Metadata { active: true });
                let label = if active {
                    "active metadata zone"
                } else {
                    "superseded metadata zone"
                };
                // The superblock (the 68 bytes its checksum covers, and two
                // of the zeros after them); frames: the length and checksum
                // fields and a body byte, for every frame of the active zone
                // and a few of the superseded one (never read); padding.
                let stride = if long {
                    1
                } else if active {
                    3
                } else {
                    7
                };
                let mut offsets: Vec<u64> = (start..start + 68).step_by(stride).collect();
                offsets.extend([start + 67, start + 68, start + 4095]);
                let mut pos = start + 4096;
                let mut frame = 0;
                while pos + 8 <= end {
                    let in_block = pos % 4096;
                    if in_block != 0 && 4096 - in_block < 8 {
                        pos += 4096 - in_block;
                        continue;
                    }
                    let p = pos as usize;
                    let len = u64::from(u32::from_le_bytes([
                        data[p],
                        data[p + 1],
                        data[p + 2],
                        data[p + 3],
                    ]));
                    if len == 0 {
                        let next = (pos / 4096 + 1) * 4096;
                        if long {
                            offsets.extend((pos..next).step_by(61));
                        } else if active && rng.below(3) == 0 {
                            offsets.push(pos + rng.below(4096 - in_block));
                        }
                        pos = next;
                        continue;
                    }
                    if long {
                        // Every header byte, every 7th body byte.
                        offsets.extend(pos..pos + 8);
                        offsets.extend((pos + 8..pos + 8 + len).step_by(7));
                    } else if active || frame % 8 == 0 {
                        offsets.extend([
                            pos + rng.below(4),
                            pos + 4 + rng.below(4),
                            pos + 8 + rng.below(len),
                        ]);
                    }
                    frame += 1;
                    pos += 8 + len;
                }
                offsets.sort();
                offsets.dedup();
                for o in offsets {
                    let bits = 1u8 << rng.below(8);
                    sweep_one(&path, &data, &model, &listing, o, bits, label, &mut tally);
                    *per_kind.entry(label).or_default() += 1;
                }
            }
            ZoneRole::Data if z.written > 0 => {
                let n = if long { 24 } else { 2 };
                for _ in 0..n {
                    let o = start + rng.below(z.written);
                    let bits = 1u8 << rng.below(8);
                    sweep_one(
                        &path,
                        &data,
                        &model,
                        &listing,
                        o,
                        bits,
                        "data zone",
                        &mut tally,
                    );
                    *per_kind.entry("data zone").or_default() += 1;
                }
            }
            _ => {}
        }
    }
    eprintln!("zoned byte flips: {tally:?}, per kind: {per_kind:?}");
    for kind in [
        "active metadata zone",
        "superseded metadata zone",
        "data zone",
    ] {
        assert!(
            per_kind.get(kind).copied().unwrap_or(0) > 0,
            "no flip in a {kind}"
        );
    }
    // How many frames the active metadata zone holds (so how many flips it
    // gets) depends on how compaction ran beside the load; what holds
    // whatever the layout: every flip there is refused at mount (and a few
    // others too), and there are enough of them to mean something.
    let active = per_kind["active metadata zone"];
    assert!(
        active > 20 && tally.refused >= active,
        "{tally:?}, {per_kind:?}"
    );
    // After the sweep, a read-write mount and the engine read-write: all
    // there, and the device takes writes.
    let fs = mount(&path, false).expect("mount after the sweep");
    let db = Db::open(DB, options(fs.clone())).expect("open");
    for (k, v) in &model {
        assert_eq!(db.get(k).expect("get").as_ref(), Some(v));
    }
    db.put(b"after", b"the sweep").expect("put");
    db.close().expect("close");
    assert_eq!(fs.check().expect("check").problems, Vec::<String>::new());
}
