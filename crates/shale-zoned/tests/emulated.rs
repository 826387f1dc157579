//! Every rule of the zoned device model on `EmulatedZoned`, its durability,
//! its errors for foreign files, and the conformance suite.

use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use shale_zoned::testing::conformance;
use shale_zoned::{
    EmulatedOptions, EmulatedZoned, ZoneCondition, ZoneOp, ZonedDevice, ZonedError, ZonedGeometry,
};

const BS: usize = 4096;
const B: u64 = BS as u64;
const ZONE: u64 = 256 << 10;

fn geometry(nr_zones: u32, max_open: u32, max_active: u32) -> ZonedGeometry {
    ZonedGeometry {
        max_open_zones: max_open,
        max_active_zones: max_active,
        ..ZonedGeometry::new(nr_zones, ZONE)
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("zns.img");
    Fixture { _dir: dir, path }
}

fn create(path: &Path, g: &ZonedGeometry) -> EmulatedZoned {
    EmulatedZoned::create(path, g, EmulatedOptions::default()).expect("create")
}

fn reopen(path: &Path) -> EmulatedZoned {
    EmulatedZoned::open(path, EmulatedOptions::default()).expect("open")
}

fn block(seed: u64) -> Vec<u8> {
    (0..BS as u64)
        .map(|i| (i.wrapping_mul(31) ^ seed) as u8)
        .collect()
}

fn cond(dev: &EmulatedZoned, zone: u32) -> ZoneCondition {
    dev.zone(zone).expect("report").condition
}

fn wp(dev: &EmulatedZoned, zone: u32) -> u64 {
    dev.zone(zone).expect("report").write_pointer
}

#[test]
fn conformance_passes_on_the_qemu_like_geometry() {
    let f = fixture();
    let mut g = ZonedGeometry::new(32, 1 << 20);
    g.zone_capacity = 768 << 10;
    let dev = create(&f.path, &g);
    let report = conformance(&dev).expect("conformance");
    assert!(report.passed.contains(&"active limit"), "{report:?}");
    assert_eq!(report.skipped.len(), 2, "{report:?}");
}

#[test]
fn conformance_runs_every_check_when_the_active_limit_is_above_the_open_limit() {
    let f = fixture();
    let mut g = geometry(12, 4, 6);
    g.zone_capacity = 192 << 10;
    let dev = create(&f.path, &g);
    let report = conformance(&dev).expect("conformance");
    assert!(report.skipped.is_empty(), "{report:?}");
    assert_eq!(report.passed.len(), 17, "{report:?}");
}

/// Every check of the table runs and is reported by its name, in order,
/// once; names are unique.
#[test]
fn conformance_reports_every_check_by_name() {
    let f = fixture();
    let mut g = geometry(12, 4, 6);
    g.zone_capacity = 192 << 10;
    let dev = create(&f.path, &g);
    let mut seen = Vec::new();
    let failed = shale_zoned::testing::run_checks(&dev, |name, outcome| {
        seen.push((name, outcome.clone()));
    });
    assert_eq!(failed, None);
    let names: Vec<&str> = shale_zoned::testing::check_names().collect();
    let reported: Vec<&str> = seen.iter().map(|(n, _)| *n).collect();
    assert_eq!(reported, names);
    let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "duplicate check names");
    assert!(seen
        .iter()
        .all(|(_, o)| *o == shale_zoned::testing::Outcome::Passed));
}

#[test]
fn conformance_passes_without_limits_and_with_strict_reads() {
    let f = fixture();
    let g = geometry(6, 0, 0);
    let dev = EmulatedZoned::create(
        &f.path,
        &g,
        EmulatedOptions {
            strict_reads: true,
            ..EmulatedOptions::default()
        },
    )
    .expect("create");
    let report = conformance(&dev).expect("conformance");
    assert_eq!(report.skipped.len(), 3, "{report:?}");
}

#[test]
fn writes_only_at_the_write_pointer() {
    let f = fixture();
    let dev = create(&f.path, &geometry(4, 14, 14));
    let start = ZONE; // zone 1
    dev.write_at(start, &block(1)).expect("write at the start");
    assert_eq!(wp(&dev, 1), start + B);
    assert_eq!(cond(&dev, 1), ZoneCondition::ImplicitOpen);
    for offset in [start, start + 2 * B] {
        let err = dev
            .write_at(offset, &block(2))
            .expect_err("off the write pointer");
        assert!(
            matches!(err, ZonedError::NotAtWritePointer { zone: 1, offset: o, write_pointer } if o == offset && write_pointer == start + B),
            "{err}"
        );
        assert_eq!(io::Error::from(err).kind(), io::ErrorKind::InvalidInput);
    }
    assert_eq!(wp(&dev, 1), start + B);
    // An append lands at the write pointer and says where.
    assert_eq!(dev.append(1, &block(3)).expect("append"), start + B);
    let mut buf = vec![0u8; 2 * BS];
    dev.read_at(start, &mut buf).expect("read");
    assert_eq!(&buf[..BS], &block(1)[..]);
    assert_eq!(&buf[BS..], &block(3)[..]);
    assert_eq!(dev.stats().bytes_written, 2 * B);
}

#[test]
fn unaligned_writes_are_refused() {
    let f = fixture();
    let dev = create(&f.path, &geometry(4, 14, 14));
    let err = dev.write_at(0, &[1u8; 100]).expect_err("short");
    assert!(
        matches!(
            err,
            ZonedError::Unaligned {
                offset: 0,
                len: 100,
                block_size: 4096
            }
        ),
        "{err}"
    );
    let err = dev.write_at(512, &block(0)).expect_err("unaligned offset");
    assert!(
        matches!(err, ZonedError::Unaligned { offset: 512, .. }),
        "{err}"
    );
    let err = dev
        .append(0, &vec![0u8; BS + 1])
        .expect_err("unaligned append");
    assert!(matches!(err, ZonedError::Unaligned { .. }), "{err}");
    assert_eq!(cond(&dev, 0), ZoneCondition::Empty);
    // A zero-length write at the write pointer changes nothing.
    dev.write_at(0, &[]).expect("empty write");
    assert_eq!(cond(&dev, 0), ZoneCondition::Empty);
}

#[test]
fn implicit_opens_close_the_oldest_implicitly_open_zone() {
    let f = fixture();
    let dev = create(&f.path, &geometry(8, 3, 0));
    for z in 0..3 {
        dev.append(z, &block(z.into())).expect("append");
    }
    dev.append(3, &block(3)).expect("a fourth zone opens");
    assert_eq!(cond(&dev, 0), ZoneCondition::Closed);
    for z in 1..4 {
        assert_eq!(cond(&dev, z), ZoneCondition::ImplicitOpen, "zone {z}");
    }
    // Writing the closed zone reopens it, closing the next oldest.
    dev.append(0, &block(9)).expect("reopen");
    assert_eq!(cond(&dev, 0), ZoneCondition::ImplicitOpen);
    assert_eq!(cond(&dev, 1), ZoneCondition::Closed);
    // An explicit open also takes the place of an implicitly open zone.
    dev.open_zone(5).expect("explicit open");
    assert_eq!(cond(&dev, 2), ZoneCondition::Closed);
    assert_eq!(cond(&dev, 5), ZoneCondition::ExplicitOpen);
}

#[test]
fn explicit_opens_fail_past_the_open_limit() {
    let f = fixture();
    let dev = create(&f.path, &geometry(8, 3, 0));
    for z in 0..3 {
        dev.open_zone(z).expect("open");
    }
    let err = dev.open_zone(3).expect_err("a fourth open");
    assert!(
        matches!(
            err,
            ZonedError::TooManyOpenZones {
                zone: 3,
                max_open: 3
            }
        ),
        "{err}"
    );
    assert_eq!(err.errno(), libc::ETOOMANYREFS);
    let err = dev.append(4, &block(0)).expect_err("an implicit open");
    assert!(
        matches!(err, ZonedError::TooManyOpenZones { zone: 4, .. }),
        "{err}"
    );
    let err = dev
        .finish_zone(4)
        .expect_err("finishing an empty zone opens it");
    assert!(
        matches!(err, ZonedError::TooManyOpenZones { zone: 4, .. }),
        "{err}"
    );
    assert_eq!(cond(&dev, 4), ZoneCondition::Empty);
    // Writing an explicitly open zone needs no new resource.
    dev.append(0, &block(0)).expect("write an open zone");
    assert_eq!(cond(&dev, 0), ZoneCondition::ExplicitOpen);
    dev.close_zone(1).expect("close");
    assert_eq!(
        cond(&dev, 1),
        ZoneCondition::Empty,
        "nothing written: empty"
    );
    dev.open_zone(3).expect("room again");
}

#[test]
fn the_active_limit_is_a_distinct_error() {
    let f = fixture();
    let dev = create(&f.path, &geometry(8, 2, 3));
    dev.append(0, &block(0)).expect("z0");
    dev.append(1, &block(1)).expect("z1");
    dev.append(2, &block(2)).expect("z2 closes z0");
    assert_eq!(cond(&dev, 0), ZoneCondition::Closed);
    let err = dev.append(3, &block(3)).expect_err("a fourth active zone");
    assert!(
        matches!(
            err,
            ZonedError::TooManyActiveZones {
                zone: 3,
                max_active: 3
            }
        ),
        "{err}"
    );
    assert_eq!(err.errno(), libc::EOVERFLOW);
    let io_err = io::Error::from(err);
    assert_eq!(io_err.kind(), io::ErrorKind::ResourceBusy);
    let inner = io_err
        .get_ref()
        .and_then(|e| e.downcast_ref::<ZonedError>());
    assert!(
        matches!(inner, Some(ZonedError::TooManyActiveZones { .. })),
        "{inner:?}"
    );
    let err = dev.open_zone(3).expect_err("explicit open");
    assert!(
        matches!(err, ZonedError::TooManyActiveZones { .. }),
        "{err}"
    );
    let err = dev.finish_zone(3).expect_err("finish of an empty zone");
    assert!(
        matches!(err, ZonedError::TooManyActiveZones { .. }),
        "{err}"
    );
    // A closed zone can still be opened (it is already active).
    dev.open_zone(0).expect("open a closed zone");
    // Finishing or resetting an active zone frees its place.
    dev.finish_zone(1).expect("finish");
    dev.append(3, &block(3)).expect("room again");
    dev.reset_zone(0).expect("reset");
    dev.append(4, &block(4)).expect("room again");
}

#[test]
fn reset_and_finish() {
    let f = fixture();
    let dev = create(&f.path, &geometry(4, 14, 14));
    dev.append(2, &block(7)).expect("append");
    dev.append(2, &block(8)).expect("append");
    dev.finish_zone(2).expect("finish");
    let z = dev.zone(2).expect("report");
    assert_eq!(z.condition, ZoneCondition::Full);
    assert_eq!(z.write_pointer, z.start + z.size);
    assert_eq!(z.remaining(), 0);
    // The data stays readable; what was never written reads as zeros.
    let mut buf = vec![0xFFu8; 3 * BS];
    dev.read_at(z.start, &mut buf).expect("read");
    assert_eq!(&buf[..BS], &block(7)[..]);
    assert_eq!(&buf[BS..2 * BS], &block(8)[..]);
    assert!(buf[2 * BS..].iter().all(|&x| x == 0));
    for err in [
        dev.append(2, &block(0)).expect_err("append to full"),
        dev.open_zone(2).expect_err("open a full zone"),
    ] {
        assert!(
            matches!(
                err,
                ZonedError::InvalidState {
                    zone: 2,
                    condition: ZoneCondition::Full,
                    ..
                }
            ),
            "{err}"
        );
    }
    let err = dev.append(2, &block(0)).expect_err("append to full");
    assert_eq!(io::Error::from(err).kind(), io::ErrorKind::StorageFull);
    dev.finish_zone(2)
        .expect("finish of a full zone is no error");
    dev.reset_zone(2).expect("reset");
    let z = dev.zone(2).expect("report");
    assert_eq!(
        (z.condition, z.write_pointer),
        (ZoneCondition::Empty, z.start)
    );
    dev.read_at(z.start, &mut buf).expect("read");
    assert!(buf.iter().all(|&x| x == 0), "a reset zone reads as zeros");
    dev.reset_zone(2)
        .expect("reset of an empty zone is no error");
    let err = dev.close_zone(2).expect_err("close of an empty zone");
    assert!(
        matches!(
            err,
            ZonedError::InvalidState {
                op: ZoneOp::Close,
                ..
            }
        ),
        "{err}"
    );
    dev.finish_zone(3).expect("finish of an empty zone");
    assert_eq!(cond(&dev, 3), ZoneCondition::Full);
    let s = dev.stats();
    assert_eq!((s.resets, s.finishes, s.bytes_written), (1, 2, 2 * B));
    assert_eq!(s.zones[2].resets, 1);
    assert_eq!(s.zones[3].finishes, 1);
}

#[test]
fn capacity_below_size() {
    let f = fixture();
    let mut g = geometry(4, 14, 14);
    g.zone_capacity = 3 * B;
    let dev = create(&f.path, &g);
    let start = 3 * ZONE;
    dev.write_at(start, &[5u8; 2 * BS]).expect("two blocks");
    let err = dev
        .write_at(start + 2 * B, &[5u8; 2 * BS])
        .expect_err("past the capacity");
    assert!(
        matches!(err, ZonedError::BeyondCapacity { zone: 3, capacity_end, .. } if capacity_end == start + 3 * B),
        "{err}"
    );
    assert_eq!(io::Error::from(err).kind(), io::ErrorKind::StorageFull);
    assert_eq!(cond(&dev, 3), ZoneCondition::ImplicitOpen);
    dev.write_at(start + 2 * B, &[6u8; BS])
        .expect("the last block");
    let z = dev.zone(3).expect("report");
    assert_eq!(z.condition, ZoneCondition::Full, "full at capacity");
    assert_eq!(z.write_pointer, start + ZONE);
    assert_eq!(z.capacity, 3 * B);
    let err = dev.write_at(start + 3 * B, &[7u8; BS]).expect_err("full");
    assert!(matches!(err, ZonedError::InvalidState { .. }), "{err}");
    // The bytes between capacity and size read as zeros.
    let mut buf = vec![1u8; BS];
    dev.read_at(start + 3 * B, &mut buf).expect("read");
    assert!(buf.iter().all(|&x| x == 0));
    // Filling a zone released its open resource: 14 more zones can open.
    assert_eq!(dev.report_all().expect("report")[3].remaining(), 0);
}

#[test]
fn reads_above_the_write_pointer() {
    let f = fixture();
    let dev = create(&f.path, &geometry(4, 14, 14));
    dev.append(0, &block(1)).expect("append");
    dev.append(1, &block(2)).expect("append");
    // Across the write pointer of zone 0 and into zone 1: data, zeros, data.
    let mut buf = vec![0xEEu8; 10];
    dev.read_at(B - 5, &mut buf).expect("read");
    assert_eq!(&buf[..5], &block(1)[BS - 5..]);
    assert!(buf[5..].iter().all(|&x| x == 0));
    let mut buf = vec![0xEEu8; 2 * BS];
    dev.read_at(ZONE - B, &mut buf).expect("across zones");
    assert!(buf[..BS].iter().all(|&x| x == 0));
    assert_eq!(&buf[BS..], &block(2)[..]);
    let err = dev
        .read_at(4 * ZONE - 1, &mut [0u8; 2])
        .expect_err("past the end");
    assert!(matches!(err, ZonedError::OutOfRange { .. }), "{err}");
    drop(dev);
    let strict = EmulatedZoned::open(
        &f.path,
        EmulatedOptions {
            strict_reads: true,
            ..EmulatedOptions::default()
        },
    )
    .expect("open");
    // Nothing was synced: both zones are empty again.
    let err = strict.read_at(0, &mut [0u8; 1]).expect_err("strict");
    assert!(
        matches!(
            err,
            ZonedError::ReadBeyondWritePointer {
                zone: 0,
                offset: 0,
                write_pointer: 0
            }
        ),
        "{err}"
    );
    assert_eq!(io::Error::from(err).kind(), io::ErrorKind::UnexpectedEof);
    strict.append(0, &block(1)).expect("append");
    strict.read_at(0, &mut [0u8; BS]).expect("below the wp");
    let err = strict
        .read_at(B - 1, &mut [0u8; 2])
        .expect_err("across the wp");
    assert!(
        matches!(err, ZonedError::ReadBeyondWritePointer { offset, write_pointer, .. } if offset == B && write_pointer == B),
        "{err}"
    );
}

#[test]
fn zone_state_persists_across_reopen() {
    let f = fixture();
    let mut g = geometry(6, 14, 14);
    g.zone_capacity = 2 * B;
    let dev = create(&f.path, &g);
    dev.append(0, &block(0)).expect("z0 implicitly open");
    dev.append(1, &block(1)).expect("z1");
    dev.close_zone(1).expect("z1 closed");
    dev.append(2, &block(2)).expect("z2");
    dev.append(2, &block(3)).expect("z2 full");
    dev.open_zone(3).expect("z3 explicitly open, empty");
    dev.append(4, &block(4)).expect("z4");
    dev.finish_zone(4).expect("z4 finished");
    dev.sync().expect("sync");
    let before = dev.report_all().expect("report");
    let stats = dev.stats();
    drop(dev);
    let dev = reopen(&f.path);
    assert_eq!(dev.geometry(), g);
    let after = dev.report_all().expect("report");
    let conds: Vec<ZoneCondition> = after.iter().map(|z| z.condition).collect();
    assert_eq!(
        conds,
        [
            ZoneCondition::Closed, // was implicitly open
            ZoneCondition::Closed,
            ZoneCondition::Full,
            ZoneCondition::Empty, // was explicitly open, nothing written
            ZoneCondition::Full,
            ZoneCondition::Empty,
        ]
    );
    for (a, b) in before.iter().zip(&after) {
        assert_eq!(a.write_pointer, b.write_pointer, "zone {}", a.index);
    }
    assert_eq!(dev.stats(), stats, "the counters are persisted");
    let mut buf = vec![0u8; 2 * BS];
    dev.read_at(2 * ZONE, &mut buf).expect("read");
    assert_eq!(&buf[..BS], &block(2)[..]);
    assert_eq!(&buf[BS..], &block(3)[..]);
    dev.append(0, &block(5))
        .expect("a closed zone takes writes again");
    assert_eq!(cond(&dev, 0), ZoneCondition::Full);
}

#[test]
fn a_crash_loses_what_was_written_after_the_last_sync() {
    let f = fixture();
    let dev = create(&f.path, &geometry(4, 14, 14));
    dev.append(1, &block(1)).expect("append");
    dev.sync().expect("sync");
    dev.append(1, &block(2)).expect("unsynced append");
    dev.append(2, &block(3)).expect("unsynced append");
    dev.open_zone(3).expect("unsynced open");
    drop(dev); // no sync: a crash
    let dev = reopen(&f.path);
    assert_eq!(wp(&dev, 1), ZONE + B, "back at the last sync");
    assert_eq!(cond(&dev, 1), ZoneCondition::Closed);
    assert_eq!(cond(&dev, 2), ZoneCondition::Empty);
    assert_eq!(cond(&dev, 3), ZoneCondition::Empty);
    assert_eq!(dev.stats().bytes_written, B, "counters as of the sync");
    let mut buf = vec![0xAAu8; 2 * BS];
    dev.read_at(ZONE, &mut buf).expect("read");
    assert_eq!(&buf[..BS], &block(1)[..]);
    assert!(
        buf[BS..].iter().all(|&x| x == 0),
        "lost bytes read as zeros"
    );
    dev.append(1, &block(9)).expect("write at the recovered wp");
    dev.read_at(ZONE, &mut buf).expect("read");
    assert_eq!(&buf[BS..], &block(9)[..]);
}

#[test]
fn resets_and_finishes_are_durable_when_they_return() {
    let f = fixture();
    let dev = create(&f.path, &geometry(4, 14, 14));
    dev.append(0, &block(0)).expect("append");
    dev.append(1, &block(1)).expect("append");
    dev.sync().expect("sync");
    dev.finish_zone(1).expect("finish");
    dev.reset_zone(0).expect("reset");
    // Unsynced: lost in the crash below, while the reset before it stays.
    dev.append(0, &block(5)).expect("unsynced append");
    drop(dev);
    let dev = reopen(&f.path);
    assert_eq!(cond(&dev, 0), ZoneCondition::Empty, "the reset survived");
    assert_eq!(cond(&dev, 1), ZoneCondition::Full, "the finish survived");
    let mut buf = vec![1u8; BS];
    dev.read_at(0, &mut buf).expect("read");
    assert!(buf.iter().all(|&x| x == 0));
}

#[test]
fn read_only_and_offline_zones() {
    let f = fixture();
    let dev = create(&f.path, &geometry(4, 14, 14));
    dev.append(1, &block(1)).expect("append");
    dev.append(2, &block(2)).expect("append");
    dev.set_zone_read_only(1).expect("read-only");
    dev.set_zone_offline(2).expect("offline");
    let err = dev.append(1, &block(0)).expect_err("read-only");
    assert!(
        matches!(
            err,
            ZonedError::InvalidState {
                condition: ZoneCondition::ReadOnly,
                op: ZoneOp::Write,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        io::Error::from(err).kind(),
        io::ErrorKind::ReadOnlyFilesystem
    );
    for err in [
        dev.reset_zone(1).expect_err("reset"),
        dev.finish_zone(1).expect_err("finish"),
        dev.open_zone(1).expect_err("open"),
        dev.append(2, &block(0)).expect_err("offline write"),
        dev.reset_zone(2).expect_err("offline reset"),
    ] {
        assert!(matches!(err, ZonedError::InvalidState { .. }), "{err}");
    }
    let mut buf = vec![0u8; BS];
    dev.read_at(ZONE, &mut buf)
        .expect("read-only zones are readable");
    assert_eq!(buf, block(1));
    let err = dev.read_at(2 * ZONE, &mut buf).expect_err("offline");
    assert!(
        matches!(
            err,
            ZonedError::InvalidState {
                condition: ZoneCondition::Offline,
                op: ZoneOp::Read,
                ..
            }
        ),
        "{err}"
    );
    drop(dev);
    let dev = reopen(&f.path);
    assert_eq!(cond(&dev, 1), ZoneCondition::ReadOnly);
    assert_eq!(cond(&dev, 2), ZoneCondition::Offline);
    // Neither counts as active: 14 other zones could still open.
    dev.append(0, &block(0)).expect("append");
}

#[test]
fn creating_over_another_geometry_or_a_foreign_file_is_refused() {
    let f = fixture();
    let g = geometry(4, 14, 14);
    drop(create(&f.path, &g));
    // The same geometry opens the existing device.
    let dev = create(&f.path, &g);
    assert_eq!(dev.geometry(), g);
    drop(dev);
    let other = geometry(8, 14, 14);
    let err = EmulatedZoned::create(&f.path, &other, EmulatedOptions::default())
        .err()
        .expect("another geometry");
    assert!(
        matches!(err, ZonedError::GeometryMismatch { ref path, existing, requested } if *path == f.path && existing == g && requested == other),
        "{err}"
    );
    assert!(err.to_string().contains("4 zones"), "{err}");
    // A file that is not a device is neither overwritten nor opened.
    let foreign = f.path.with_file_name("notes.txt");
    std::fs::write(&foreign, b"precious").expect("write");
    let err = EmulatedZoned::create(&foreign, &g, EmulatedOptions::default())
        .err()
        .expect("foreign file");
    assert!(
        matches!(err, ZonedError::NotEmulatedDevice { ref path, .. } if *path == foreign),
        "{err}"
    );
    assert_eq!(std::fs::read(&foreign).expect("read"), b"precious");
    let err = EmulatedZoned::open(&foreign, EmulatedOptions::default())
        .err()
        .expect("foreign file");
    assert!(
        matches!(err, ZonedError::NotEmulatedDevice { ref path, .. } if *path == foreign),
        "{err}"
    );
    assert!(err.to_string().contains("notes.txt"), "{err}");
    assert_eq!(io::Error::from(err).kind(), io::ErrorKind::InvalidData);
    // A foreign file where the state file should be.
    std::fs::write(EmulatedZoned::state_path_of(&foreign), b"not a state file").expect("write");
    let err = EmulatedZoned::open(&foreign, EmulatedOptions::default())
        .err()
        .expect("foreign state");
    assert!(
        matches!(err, ZonedError::NotEmulatedDevice { ref reason, .. } if reason.contains("magic")),
        "{err}"
    );
    let err = EmulatedZoned::open(
        &f.path.with_file_name("missing.img"),
        EmulatedOptions::default(),
    )
    .err()
    .expect("missing");
    assert!(
        matches!(err, ZonedError::Io { ref source, .. } if source.kind() == io::ErrorKind::NotFound),
        "{err}"
    );
}

#[test]
fn damaged_state_and_wrong_sizes_are_reported() {
    let f = fixture();
    let g = geometry(4, 14, 14);
    drop(create(&f.path, &g));
    let state = EmulatedZoned::state_path_of(&f.path);
    let good = std::fs::read(&state).expect("read");
    let mut bad = good.clone();
    bad[60] ^= 1;
    std::fs::write(&state, &bad).expect("write");
    let err = EmulatedZoned::open(&f.path, EmulatedOptions::default())
        .err()
        .expect("damaged");
    assert!(
        matches!(err, ZonedError::Corrupt { ref path, ref reason } if *path == state && reason.contains("checksum")),
        "{err}"
    );
    std::fs::write(&state, &good).expect("write");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&f.path)
        .expect("open");
    file.set_len(3 * ZONE).expect("truncate");
    let err = EmulatedZoned::open(&f.path, EmulatedOptions::default())
        .err()
        .expect("wrong size");
    assert!(
        matches!(err, ZonedError::NotEmulatedDevice { ref reason, .. } if reason.contains("bytes")),
        "{err}"
    );
    let err = ZonedGeometry {
        zone_capacity: ZONE + B,
        ..g
    }
    .validate()
    .expect_err("capacity above size");
    assert!(matches!(err, ZonedError::InvalidGeometry { .. }), "{err}");
}

#[test]
fn a_device_is_opened_once() {
    let f = fixture();
    let dev = create(&f.path, &geometry(4, 14, 14));
    let err = EmulatedZoned::open(&f.path, EmulatedOptions::default())
        .err()
        .expect("second open");
    assert!(
        matches!(err, ZonedError::Io { ref source, .. } if source.kind() == io::ErrorKind::WouldBlock),
        "{err}"
    );
    drop(dev);
    reopen(&f.path);
}

#[test]
fn direct_io_is_used_where_the_file_system_takes_it() {
    let f = fixture();
    let dev = create(&f.path, &geometry(4, 14, 14));
    let probe = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&f.path)
        .is_ok();
    assert_eq!(dev.direct_io(), probe);
    drop(dev);
    let buffered = EmulatedZoned::open(
        &f.path,
        EmulatedOptions {
            direct_io: false,
            ..EmulatedOptions::default()
        },
    )
    .expect("open");
    assert!(!buffered.direct_io());
    // Unaligned buffers and offsets work either way.
    let data = vec![3u8; BS + 1];
    buffered.append(0, &data[1..]).expect("unaligned buffer");
    let mut out = vec![0u8; 7];
    buffered.read_at(3, &mut out).expect("unaligned read");
    assert_eq!(out, vec![3u8; 7]);
}

#[test]
fn concurrent_writers_on_different_zones() {
    let f = fixture();
    let dev = create(&f.path, &geometry(8, 4, 8));
    std::thread::scope(|s| {
        for z in 0..8u32 {
            let dev = &dev;
            s.spawn(move || {
                for i in 0..8u64 {
                    let at = dev
                        .append(z, &block(u64::from(z) * 100 + i))
                        .expect("append");
                    assert_eq!(at, u64::from(z) * ZONE + i * B);
                }
            });
        }
    });
    for z in 0..8u32 {
        assert_eq!(wp(&dev, z), u64::from(z) * ZONE + 8 * B);
        let mut buf = vec![0u8; BS];
        dev.read_at(u64::from(z) * ZONE + 7 * B, &mut buf)
            .expect("read");
        assert_eq!(buf, block(u64::from(z) * 100 + 7));
    }
    let open = dev
        .report_all()
        .expect("report")
        .iter()
        .filter(|z| z.condition.is_open())
        .count();
    assert!(open <= 4, "{open} open zones, limit 4");
    assert_eq!(dev.stats().bytes_written, 64 * B);
}

/// A device that breaks one rule, to show the conformance suite notices.
struct Broken {
    inner: EmulatedZoned,
    /// `write_at` ignores its offset and writes at the write pointer.
    writes_anywhere: bool,
    /// `reset_zone` does nothing.
    resets_nothing: bool,
}

impl ZonedDevice for Broken {
    fn geometry(&self) -> ZonedGeometry {
        self.inner.geometry()
    }
    fn report_zones(&self, first: u32, count: u32) -> shale_zoned::Result<Vec<shale_zoned::Zone>> {
        self.inner.report_zones(first, count)
    }
    fn open_zone(&self, zone: u32) -> shale_zoned::Result<()> {
        self.inner.open_zone(zone)
    }
    fn close_zone(&self, zone: u32) -> shale_zoned::Result<()> {
        self.inner.close_zone(zone)
    }
    fn finish_zone(&self, zone: u32) -> shale_zoned::Result<()> {
        self.inner.finish_zone(zone)
    }
    fn reset_zone(&self, zone: u32) -> shale_zoned::Result<()> {
        if self.resets_nothing {
            return Ok(());
        }
        self.inner.reset_zone(zone)
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> shale_zoned::Result<()> {
        if self.writes_anywhere {
            let zone = u32::try_from(offset / ZONE).expect("zone index");
            return self.inner.append(zone, data).map(|_| ());
        }
        self.inner.write_at(offset, data)
    }
    fn append(&self, zone: u32, data: &[u8]) -> shale_zoned::Result<u64> {
        self.inner.append(zone, data)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> shale_zoned::Result<()> {
        self.inner.read_at(offset, buf)
    }
    fn sync(&self) -> shale_zoned::Result<()> {
        self.inner.sync()
    }
    fn stats(&self) -> shale_zoned::ZonedStats {
        self.inner.stats()
    }
}

#[test]
fn conformance_catches_a_device_that_breaks_a_rule() {
    for (writes_anywhere, resets_nothing, failing_check) in [
        (true, false, "writes off the write pointer are refused"),
        (false, true, "reset:"),
    ] {
        let f = fixture();
        let dev = Broken {
            inner: create(&f.path, &geometry(6, 14, 14)),
            writes_anywhere,
            resets_nothing,
        };
        let err = conformance(&dev).expect_err("a broken device");
        assert!(err.starts_with(failing_check), "{err}");
    }
}
