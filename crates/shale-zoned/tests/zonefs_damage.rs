//! Damage against crashes: a mount drops only a metadata record cut by the
//! write pointer (what a crash leaves); any other damage to the metadata
//! (a flipped byte in a superblock, the snapshot or any record of the log)
//! refuses the mount, read-write or read-only, and leaves the device byte
//! for byte as it was, so that restoring the byte brings every file back.
//! And the crashes a real device can produce (writes torn at a block
//! boundary, rolls cut after their superblock) stay recoverable.
//!
//! Short by default; `SHALE_LONG_TESTS=1` flips every byte of every frame
//! (and of the padding), and tears writes at every block boundary.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;

use common::{long_tests, CrashDev, Rng};
use shale_env::{FileSystem, WriteLifetime};
use shale_zoned::{
    EmulatedOptions, EmulatedZoned, FormatOptions, GcOptions, MountOptions, ZoneFs, ZoneFsError,
    ZoneRole, ZonedDevice, ZonedGeometry,
};

const BLOCK: u64 = 4096;

/// File path to contents.
type Files = BTreeMap<String, Vec<u8>>;

fn open_dev(path: &Path, g: &ZonedGeometry) -> Arc<dyn ZonedDevice> {
    Arc::new(EmulatedZoned::create(path, g, EmulatedOptions::default()).expect("device"))
}

/// Mount options without the collector thread (so that nothing runs behind
/// the test's back), read-only or not.
fn options(read_only: bool) -> MountOptions {
    MountOptions {
        read_only,
        gc: GcOptions {
            background: false,
            ..GcOptions::default()
        },
        ..MountOptions::default()
    }
}

fn mount(path: &Path, g: &ZonedGeometry, read_only: bool) -> Result<ZoneFs, ZoneFsError> {
    ZoneFs::mount_with(open_dev(path, g), options(read_only))
}

/// Every file of a mounted file system with its contents.
fn contents(fs: &ZoneFs) -> Files {
    fs.files()
        .into_iter()
        .map(|f| {
            let data = fs.read_all(Path::new(&f.path)).expect("read");
            (f.path, data)
        })
        .collect()
}

/// The data file and the zone state file of an emulated device: what a
/// mount that writes nothing leaves exactly as it was.
fn device_files(path: &Path) -> (Vec<u8>, Vec<u8>) {
    (
        std::fs::read(path).expect("data file"),
        std::fs::read(EmulatedZoned::state_path_of(path)).expect("state file"),
    )
}

/// XORs the byte at `offset` of the (closed) device's data file with `bits`.
fn flip(path: &Path, offset: u64, bits: u8) {
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
    // The emulator reads with O_DIRECT, which writes dirty cached pages of
    // the range back first: no sync needed.
    f.write_all(&b).expect("write");
}

/// A frame of a metadata log: its device offset and body length.
#[derive(Clone, Copy, Debug)]
struct Frame {
    at: u64,
    len: u64,
}

/// The frames of the metadata zone at `start`, read from the device's data
/// file up to `end` (the format's framing: no frame header in a block's
/// last 7 bytes; a zero length pads to the next block).
fn frames(data: &[u8], start: u64, end: u64) -> Vec<Frame> {
    let mut out = Vec::new();
    let mut pos = start + BLOCK;
    while pos + 8 <= end {
        let in_block = pos % BLOCK;
        if in_block != 0 && BLOCK - in_block < 8 {
            pos += BLOCK - in_block;
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
            pos = (pos / BLOCK + 1) * BLOCK;
            continue;
        }
        out.push(Frame { at: pos, len });
        pos += 8 + len;
    }
    out
}

/// The metadata zones after the last mount: (zone start, written end,
/// active) for each one written.
fn metadata_zones(fs: &ZoneFs) -> Vec<(u64, u64, bool)> {
    let size = fs.device().geometry().zone_size;
    fs.zones()
        .expect("zones")
        .into_iter()
        .filter_map(|z| match z.role {
            ZoneRole::Metadata { active } if z.written > 0 => {
                let start = u64::from(z.zone) * size;
                Some((start, start + z.written, active))
            }
            _ => None,
        })
        .collect()
}

/// A file system whose metadata log rolled at least once and whose active
/// zone holds a snapshot and many records (creates, extents, renames,
/// deletes, mkdirs) of files that were replaced, so that data zones were
/// reset and reused: a mount that lost the newer records would reset zones
/// of live files. Returns the files, after a read-write mount that settled
/// the zones (so that a later mount of the undamaged device writes no data).
fn build(path: &Path, g: &ZonedGeometry) -> Files {
    let fs = ZoneFs::format(
        open_dev(path, g),
        FormatOptions {
            meta_zones: 2,
            mount: options(false),
        },
    )
    .expect("format");
    let mut rng = Rng::new(23);
    let mut files = Files::new();
    let hints = [
        WriteLifetime::Short,
        WriteLifetime::Medium,
        WriteLifetime::Long,
    ];
    let mut i = 0;
    loop {
        let name = format!("/d{}/f{}", i % 2, i % 7);
        fs.create_dir_all(Path::new(&format!("/d{}", i % 2)))
            .expect("mkdir");
        let n = rng.below(6000) as usize + 1;
        let data = rng.bytes(n);
        let mut f = fs
            .create_append(Path::new(&name), hints[i % 3])
            .expect("create");
        f.append(&data[..n / 2]).expect("append");
        f.sync().expect("sync");
        f.append(&data[n / 2..]).expect("append");
        f.sync().expect("sync");
        files.insert(name.clone(), data);
        if i % 4 == 3 {
            let to = format!("/d{}/r{}", i % 2, i % 5);
            fs.rename(Path::new(&name), Path::new(&to)).expect("rename");
            let data = files.remove(&name).expect("model");
            files.insert(to, data);
        }
        if i % 5 == 4 {
            let victim = files.keys().next().cloned().expect("a file");
            fs.remove(Path::new(&victim)).expect("remove");
            files.remove(&victim);
        }
        fs.sync_dir(Path::new("/")).expect("sync_dir");
        i += 1;
        let active_frames = metadata_zones(&fs)
            .iter()
            .find(|z| z.2)
            .map_or(0, |z| (z.1 - z.0) / BLOCK);
        if fs.metadata_sequence() >= 3 && active_frames >= 8 {
            break;
        }
        assert!(i < 500, "the log never rolled");
    }
    drop(fs);
    let fs = mount(path, g, false).expect("settling mount");
    assert_eq!(contents(&fs), files);
    files
}

/// Flips `bits` into the byte at `offset`, then: a read-write mount must
/// fail with `Corrupt` (when `must_fail`) or hold exactly `files`; a
/// read-only mount must fail or hold exactly `files`; the device must be
/// byte for byte as before unless a read-write mount succeeded; after the
/// byte is restored, a mount holds exactly `files`.
fn flip_and_check(
    path: &Path,
    g: &ZonedGeometry,
    files: &Files,
    offset: u64,
    bits: u8,
    must_fail: bool,
    what: &str,
) {
    let ctx = format!("{what}: byte {offset} ^ {bits:#04x}");
    flip(path, offset, bits);
    let before = device_files(path);
    match mount(path, g, true) {
        Err(e) => assert!(matches!(e, ZoneFsError::Corrupt { .. }), "{ctx}: {e}"),
        Ok(fs) => assert!(
            !must_fail && contents(&fs) == *files,
            "{ctx}: a read-only mount accepted damage or lost data"
        ),
    }
    assert!(
        device_files(path) == before,
        "{ctx}: a read-only mount wrote"
    );
    match mount(path, g, false) {
        Err(e) => {
            assert!(matches!(e, ZoneFsError::Corrupt { .. }), "{ctx}: {e}");
            assert!(
                device_files(path) == before,
                "{ctx}: a read-write mount that failed wrote"
            );
        }
        Ok(fs) => {
            assert!(!must_fail, "{ctx}: a read-write mount accepted damage");
            assert!(contents(&fs) == *files, "{ctx}: data lost");
            drop(fs);
            assert!(
                device_files(path).0 == before.0,
                "{ctx}: a read-write mount of an undamaged file system wrote data"
            );
        }
    }
    flip(path, offset, bits);
    let fs = mount(path, g, true).unwrap_or_else(|e| panic!("{ctx}: restored: {e}"));
    assert!(contents(&fs) == *files, "{ctx}: restored: data differs");
}

/// The positions flipped in a frame: the length and checksum fields and a
/// few body bytes (first, middle, last); with `long_tests`, every byte.
fn frame_positions(f: Frame) -> Vec<u64> {
    if long_tests() {
        return (f.at..f.at + 8 + f.len).collect();
    }
    let body = f.at + 8;
    let mut v = vec![
        f.at,
        f.at + 1,
        f.at + 3,
        f.at + 4,
        f.at + 7,
        body,
        body + f.len / 2,
        body + f.len - 1,
    ];
    v.sort();
    v.dedup();
    v
}

/// Test 1 of issue 20: one byte flipped in any frame of the active
/// metadata log (the snapshot, middle records, the last one; body, length
/// or checksum), in either superblock: every mount refuses it with
/// `Corrupt` and writes nothing; restoring the byte brings every file back.
/// A flip in the superseded metadata zone's log is never read (the newest
/// zone's snapshot holds its effects): mounts hold every file.
#[test]
fn a_flipped_metadata_byte_refuses_every_mount_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dev");
    // 16 blocks per zone: the log rolls every few syncs.
    let g = ZonedGeometry {
        max_open_zones: 6,
        max_active_zones: 6,
        ..ZonedGeometry::new(20, 64 << 10)
    };
    let files = build(&path, &g);
    let fs = mount(&path, &g, true).expect("mount");
    let meta = metadata_zones(&fs);
    drop(fs);
    assert_eq!(meta.len(), 2, "{meta:?}: both metadata zones written");
    let data = device_files(&path).0;
    let &(start, end, _) = meta.iter().find(|z| z.2).expect("active zone");
    let active = frames(&data, start, end);
    assert!(active.len() >= 8, "{} frames", active.len());
    let mut flips = 0;
    for (i, f) in active.iter().enumerate() {
        let what = match i {
            0 => "the snapshot frame".to_string(),
            i if i + 1 == active.len() => "the last frame".to_string(),
            i => format!("frame {i} of {}", active.len()),
        };
        for pos in frame_positions(*f) {
            for bits in [0x01, 0x80] {
                flip_and_check(&path, &g, &files, pos, bits, true, &what);
                flips += 1;
            }
        }
    }
    // Zero padding after records and at the end of the log.
    let padding: Vec<u64> = (start + BLOCK..end)
        .filter(|&p| {
            data[p as usize] == 0 && !active.iter().any(|f| (f.at..f.at + 8 + f.len).contains(&p))
        })
        .collect();
    let stride = if long_tests() { 1 } else { 97 };
    for &p in padding.iter().step_by(stride) {
        flip_and_check(&path, &g, &files, p, 0x20, true, "padding of the log");
        flips += 1;
    }
    // Both superblocks: every byte of the 68 (the checksum and the 64 it
    // covers; and, harmlessly, a few of the zeros after them in the block).
    for &(zstart, _, active) in &meta {
        let what = if active {
            "the active zone's superblock"
        } else {
            "the superseded zone's superblock"
        };
        let step = if long_tests() { 1 } else { 5 };
        for p in (zstart..zstart + 68).step_by(step).chain([zstart + 67]) {
            flip_and_check(&path, &g, &files, p, 0x04, true, what);
            flips += 1;
        }
        for p in [zstart + 68, zstart + 1000, zstart + BLOCK - 1] {
            flip_and_check(&path, &g, &files, p, 0x04, false, what);
            flips += 1;
        }
    }
    // The superseded zone's snapshot and records: never read.
    let &(old_start, old_end, _) = meta.iter().find(|z| !z.2).expect("superseded zone");
    for f in frames(&data, old_start, old_end).iter().step_by(3) {
        flip_and_check(
            &path,
            &g,
            &files,
            f.at + 8 + f.len / 2,
            0x10,
            false,
            "a frame of the superseded zone",
        );
        flips += 1;
    }
    // Restored: a read-write mount holds everything, and the check is clean.
    let fs = mount(&path, &g, false).expect("mount after the sweep");
    assert_eq!(contents(&fs), files);
    assert_eq!(fs.check().expect("check").problems, Vec::<String>::new());
    assert!(flips > 100, "only {flips} flips");
}

/// Writes a superblock for the zone at `zone_start` copied from `from`
/// (a device offset holding one), with `sequence`.
fn write_superblock(dev: &dyn ZonedDevice, from: u64, zone_start: u64, sequence: u64) {
    let mut sb = vec![0u8; BLOCK as usize];
    dev.read_at(from, &mut sb).expect("read superblock");
    sb[56..64].copy_from_slice(&sequence.to_le_bytes());
    let crc = crc32c::crc32c(&sb[..64]);
    sb[64..68].copy_from_slice(&crc.to_le_bytes());
    dev.write_at(zone_start, &sb).expect("write superblock");
}

/// A roll cut by a crash on a real device leaves the next metadata zone
/// with a superblock of the next sequence and a cut snapshot, or none: the
/// mount goes back to the zone the roll started from (one below in the
/// ring and in sequence), and a read-write mount resets the cut zone. But
/// only from a cut snapshot, and only to that zone: a damaged snapshot, or
/// a damaged superblock in the zone before, refuses the mount.
#[test]
fn a_cut_roll_goes_back_one_zone_and_no_further() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = ZonedGeometry::new(12, 64 << 10);
    let mut rng = Rng::new(3);
    // Each case: what to write into the next metadata zone after its
    // superblock, whether to damage the zone before's superblock, and
    // whether the mount must succeed.
    let cases: [(&str, Option<Vec<u8>>, bool, bool); 5] = [
        ("superblock only", None, false, true),
        (
            "snapshot cut after 4088 of 9000 bytes",
            Some({
                let mut b = vec![0u8; BLOCK as usize];
                b[..4].copy_from_slice(&9000u32.to_le_bytes());
                b[4..8].copy_from_slice(&0x1234_5678u32.to_le_bytes());
                b[8] = 1;
                b[9..].copy_from_slice(&rng.bytes(BLOCK as usize - 9));
                b
            }),
            false,
            true,
        ),
        (
            "a cut frame that is no snapshot",
            Some({
                let mut b = vec![0u8; BLOCK as usize];
                b[..4].copy_from_slice(&9000u32.to_le_bytes());
                b[8] = 3;
                b[9..].copy_from_slice(&rng.bytes(BLOCK as usize - 9));
                b
            }),
            false,
            false,
        ),
        (
            "a complete snapshot frame that fails its checksum",
            Some({
                let mut b = vec![0u8; BLOCK as usize];
                b[..4].copy_from_slice(&21u32.to_le_bytes());
                b[8] = 1;
                b
            }),
            false,
            false,
        ),
        (
            "superblock only, the zone before damaged",
            None,
            true,
            false,
        ),
    ];
    for (n, (what, after, damage_before, mounts)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("dev{n}"));
        let mut files = Files::new();
        let (active, sequence) = {
            let dev = open_dev(&path, &g);
            let fs = ZoneFs::format(
                dev.clone(),
                FormatOptions {
                    meta_zones: 3,
                    mount: options(false),
                },
            )
            .expect("format");
            let mut i = 0;
            while fs.metadata_sequence() < 2 || i < 20 {
                let name = format!("/f{}", i % 4);
                let data = rng.bytes(100 + i * 10);
                let mut f = fs
                    .create_append(Path::new(&name), WriteLifetime::Medium)
                    .expect("create");
                f.append(&data).expect("append");
                f.sync().expect("sync");
                files.insert(name, data);
                i += 1;
            }
            let active = metadata_zones(&fs)
                .into_iter()
                .find(|z| z.2)
                .expect("active")
                .0;
            (active / g.zone_size, fs.metadata_sequence())
        };
        // The roll into the next zone, cut by a crash.
        let next = (active + 1) % 3;
        {
            let dev = open_dev(&path, &g);
            let start = next * g.zone_size;
            dev.reset_zone(next as u32).expect("reset");
            write_superblock(dev.as_ref(), active * g.zone_size, start, sequence + 1);
            if let Some(b) = &after {
                dev.write_at(start + BLOCK, b).expect("write");
            }
            dev.sync().expect("sync");
        }
        if damage_before {
            flip(&path, active * g.zone_size + 30, 1);
        }
        let before = device_files(&path);
        match mount(&path, &g, true) {
            Ok(fs) => {
                assert!(mounts, "{what}: a read-only mount accepted damage");
                assert_eq!(contents(&fs), files, "{what}");
            }
            Err(e) => {
                assert!(!mounts, "{what}: read-only mount: {e}");
                assert!(matches!(e, ZoneFsError::Corrupt { .. }), "{what}: {e}");
            }
        }
        assert!(
            device_files(&path) == before,
            "{what}: a read-only mount wrote"
        );
        let rw = mount(&path, &g, false);
        if !mounts {
            let e = rw.err().expect("the read-write mount must fail");
            assert!(matches!(e, ZoneFsError::Corrupt { .. }), "{what}: {e}");
            assert!(
                device_files(&path) == before,
                "{what}: a failed mount wrote"
            );
            continue;
        }
        let fs = rw.unwrap_or_else(|e| panic!("{what}: read-write mount: {e}"));
        assert_eq!(contents(&fs), files, "{what}");
        assert_eq!(
            fs.device().zone(next as u32).expect("zone").write_pointer,
            next * g.zone_size,
            "{what}: the cut zone is reset"
        );
        // Writes go on, a roll reuses the zone, and the next mount has it all.
        for i in 0..30 {
            let name = format!("/g{}", i % 3);
            let data = rng.bytes(200);
            let mut f = fs
                .create_append(Path::new(&name), WriteLifetime::Long)
                .expect("create");
            f.append(&data).expect("append");
            f.sync().expect("sync");
            files.insert(name, data);
        }
        assert!(fs.metadata_sequence() > sequence + 1, "{what}: no roll");
        drop(fs);
        let fs = mount(&path, &g, false).expect("remount");
        assert_eq!(contents(&fs), files, "{what}");
    }
}

/// Earlier builds wrote a seal frame when a roll began, and when a crash cut
/// the roll after the next zone's reset, the mount went on appending after
/// the seal, which the next mount stopped reading at: acknowledged records
/// were lost. A seal is now read as a no-op, and a log holding one is
/// rolled at mount.
#[test]
fn records_after_a_seal_from_an_earlier_build_are_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dev");
    let g = ZonedGeometry::new(8, 64 << 10);
    {
        let dev = open_dev(&path, &g);
        let fs = ZoneFs::format(dev.clone(), FormatOptions::default()).expect("format");
        let mut f = fs
            .create_append(Path::new("/a"), WriteLifetime::Medium)
            .expect("create");
        f.append(b"before the seal").expect("append");
        f.sync().expect("sync");
        drop(f);
        let wp = dev.zone(0).expect("zone").write_pointer;
        let mut frames = vec![0u8; 2 * BLOCK as usize];
        // The seal, as earlier builds wrote it, in a block of its own.
        frames[..4].copy_from_slice(&1u32.to_le_bytes());
        frames[4..8].copy_from_slice(&crc32c::crc32c(&[7]).to_le_bytes());
        frames[8] = 7;
        // A create record after it (a file earlier builds acknowledged).
        let mut create = vec![2u8];
        create.extend_from_slice(&1000u64.to_le_bytes());
        create.extend_from_slice(&2u16.to_le_bytes());
        create.extend_from_slice(b"/b");
        create.push(3);
        let b = BLOCK as usize;
        frames[b..b + 4].copy_from_slice(&(create.len() as u32).to_le_bytes());
        frames[b + 4..b + 8].copy_from_slice(&crc32c::crc32c(&create).to_le_bytes());
        frames[b + 8..b + 8 + create.len()].copy_from_slice(&create);
        dev.write_at(wp, &frames).expect("write");
        dev.sync().expect("sync");
    }
    let fs = mount(&path, &g, true).expect("read-only mount");
    assert!(
        fs.exists(Path::new("/b")).expect("exists"),
        "the record after the seal"
    );
    drop(fs);
    let fs = mount(&path, &g, false).expect("mount");
    assert_eq!(fs.metadata_sequence(), 2, "a sealed log is rolled at mount");
    assert_eq!(
        fs.read_all(Path::new("/a")).expect("read"),
        b"before the seal"
    );
    assert!(fs.exists(Path::new("/b")).expect("exists"));
    drop(fs);
    let fs = mount(&path, &g, false).expect("remount");
    assert!(fs.exists(Path::new("/b")).expect("exists"));
}

/// The workload of the torn-write test: a snapshot of several blocks (many
/// directories), records that cross block boundaries (bursts of creates
/// and removes in one sync), data of several blocks, rolls.
fn torn_workload(
    fs: &ZoneFs,
    dirs: &mut bool,
    acked: &mut Files,
    in_flight: &mut Option<(String, Vec<u8>)>,
) -> std::io::Result<()> {
    let mut rng = Rng::new(17);
    for d in 0..150 {
        fs.create_dir_all(Path::new(&format!(
            "/directory-with-a-long-name-{d:04}-and-more-to-span-blocks"
        )))?;
    }
    fs.sync_dir(Path::new("/"))?;
    *dirs = true;
    for i in 0..16 {
        let name = format!("/f{}", i % 4);
        let n = rng.below(10_000) as usize + 1;
        let data = rng.bytes(n);
        *in_flight = Some((name.clone(), data.clone()));
        let mut f = fs.create_append(Path::new(&name), WriteLifetime::Medium)?;
        f.append(&data)?;
        f.sync()?;
        fs.sync_dir(Path::new("/"))?;
        acked.insert(name, data);
        *in_flight = None;
        if i % 3 == 1 {
            for j in 0..80 {
                let t = format!("/tmp-{i}-{j}-a-name-long-enough-to-fill-blocks");
                drop(fs.create_append(Path::new(&t), WriteLifetime::Short)?);
                fs.remove(Path::new(&t))?;
            }
            fs.sync_dir(Path::new("/"))?;
        }
    }
    Ok(())
}

/// A crash on a real zoned device can tear a write: its first blocks
/// persist and the write pointer covers them. At every multi-block write
/// into a metadata zone (record syncs whose last frame is cut, rolls cut
/// after the superblock or inside the snapshot), torn after one block and
/// after all but one: every mount succeeds, holds every acknowledged file,
/// takes writes, and the next mount holds those too. With
/// `SHALE_LONG_TESTS=1`, data writes too, torn at every block.
#[test]
fn writes_torn_by_a_crash_are_recovered() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dev");
    // 16 blocks per zone: the snapshot takes 2, and the log rolls every
    // few bursts.
    let g = ZonedGeometry::new(32, 64 << 10);
    let meta_end = 3 * g.zone_size;
    let fresh = || {
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(EmulatedZoned::state_path_of(&path));
        let dev = Arc::new(CrashDev::new(
            EmulatedZoned::create(&path, &g, EmulatedOptions::default()).expect("device"),
            -1,
        ));
        let fs = ZoneFs::format(
            dev.clone(),
            FormatOptions {
                meta_zones: 3,
                mount: options(false),
            },
        )
        .expect("format");
        dev.ops
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        (dev, fs)
    };
    // A run without a crash lists the device operations.
    let ops = {
        let (dev, fs) = fresh();
        let mut acked = Files::new();
        torn_workload(&fs, &mut false, &mut acked, &mut None).expect("workload");
        assert!(fs.metadata_sequence() >= 3, "the workload must roll");
        drop(fs);
        let ops = dev
            .ops
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        ops
    };
    let mut runs = Vec::new();
    for (i, &(offset, len)) in ops.iter().enumerate() {
        let blocks = len / BLOCK as usize;
        if blocks < 2 || (offset >= meta_end && !long_tests()) {
            continue;
        }
        let keeps: BTreeSet<usize> = if long_tests() {
            (1..blocks).collect()
        } else {
            [1, blocks - 1].into()
        };
        for keep in keeps {
            runs.push((i as i64, keep, offset < meta_end));
        }
    }
    assert!(
        runs.iter().filter(|r| r.2).count() >= 8,
        "{} torn metadata writes",
        runs.len()
    );
    for (budget, keep, _) in runs {
        let ctx = format!("operation {budget}, {keep} blocks kept");
        let (dev, fs) = fresh();
        dev.tear.store(keep, std::sync::atomic::Ordering::SeqCst);
        dev.budget
            .store(budget, std::sync::atomic::Ordering::SeqCst);
        let mut acked = Files::new();
        let mut in_flight = None;
        let mut dirs = false;
        assert!(
            torn_workload(&fs, &mut dirs, &mut acked, &mut in_flight).is_err(),
            "{ctx}: no crash"
        );
        drop(fs);
        drop(dev);
        let fs = mount(&path, &g, false).unwrap_or_else(|e| panic!("{ctx}: mount: {e}"));
        let got = contents(&fs);
        for (name, data) in &acked {
            let now = got
                .get(name)
                .unwrap_or_else(|| panic!("{ctx}: {name} lost"));
            match &in_flight {
                Some((n, new)) if n == name => {
                    assert!(now.is_empty() || now == data || now == new, "{ctx}: {name}")
                }
                _ => assert_eq!(now, data, "{ctx}: {name}"),
            }
        }
        if dirs {
            assert!(
                fs.exists(Path::new(
                    "/directory-with-a-long-name-0149-and-more-to-span-blocks"
                ))
                .expect("exists"),
                "{ctx}: acknowledged directories lost"
            );
        }
        assert_eq!(
            fs.check().expect("check").problems,
            Vec::<String>::new(),
            "{ctx}"
        );
        let mut f = fs
            .create_append(Path::new("/after"), WriteLifetime::Long)
            .expect("create after");
        f.append(b"still works").expect("append");
        f.sync().expect("sync");
        fs.sync_dir(Path::new("/")).expect("sync_dir");
        drop(f);
        let expected = contents(&fs);
        drop(fs);
        let fs = mount(&path, &g, false).unwrap_or_else(|e| panic!("{ctx}: second mount: {e}"));
        assert_eq!(contents(&fs), expected, "{ctx}: second mount");
    }
}
