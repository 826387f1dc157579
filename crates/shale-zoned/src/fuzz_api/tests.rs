//! The stable replay of the zoned fuzz targets: every seed (generated here
//! from real encodings, and every file committed in `fuzz/corpus/<target>/`)
//! and a few thousand fixed-seed mutations of them through each entry point.
//!
//! `SHALE_REWRITE_FUZZ_SEEDS=1 cargo test -p shale-zoned --lib fuzz_api`
//! writes the generated seeds into `fuzz/corpus/` (review the diff).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale_env::{FileSystem, TraceEvent, TraceFileKind, WriteLifetime};

use super::{fuzz_metadata_log, fuzz_state_file, fuzz_superblock, fuzz_write_trace};
use crate::zonefs::fuzz::{LOG_BLOCK, LOG_ZONES, LOG_ZONE_BLOCKS};
use crate::zonefs::{FormatOptions, GcOptions, MountOptions, ZoneFs};
use crate::{EmulatedOptions, EmulatedZoned, ZonedDevice, ZonedGeometry};

type Entry = fn(&[u8]);

const TARGETS: [(&str, Entry); 4] = [
    ("zoned_superblock", fuzz_superblock),
    ("zoned_metadata_log", fuzz_metadata_log),
    ("zoned_state_file", fuzz_state_file),
    ("zoned_write_trace", fuzz_write_trace),
];

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        if b.is_empty() {
            b.push(rng.next() as u8);
            continue;
        }
        let i = rng.below(b.len());
        match rng.below(6) {
            0 => b[i] ^= 1 << rng.below(8),
            1 => b[i] = rng.next() as u8,
            2 => b.truncate(i),
            3 => b[i] = [0, 0xff, 1, 0x7f][rng.below(4)],
            4 => {
                let n = rng.below(16).min(b.len() - i);
                let copy = b[i..i + n].to_vec();
                let at = rng.below(b.len());
                b.splice(at..at, copy);
            }
            _ => {
                // A little-endian length field set to something large.
                let v = [u32::MAX, 1 << 20, 0, 4096][rng.below(4)].to_le_bytes();
                for (k, x) in v.iter().enumerate() {
                    if let Some(y) = b.get_mut(i + k) {
                        *y = *x;
                    }
                }
            }
        }
    }
    b
}

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

/// The metadata log of a file system that went through every record kind,
/// in the geometry `fuzz_metadata_log` replays against; and the raw
/// superblock block of it.
fn zonefs_images() -> (Vec<u8>, Vec<u8>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = ZonedGeometry::new(LOG_ZONES, LOG_BLOCK * LOG_ZONE_BLOCKS);
    let dev: Arc<dyn ZonedDevice> = Arc::new(
        EmulatedZoned::create(&dir.path().join("dev"), &g, EmulatedOptions::default())
            .expect("device"),
    );
    let fs = ZoneFs::format(
        dev.clone(),
        FormatOptions {
            meta_zones: 2,
            mount: MountOptions {
                gc: GcOptions {
                    background: false,
                    ..GcOptions::default()
                },
                ..MountOptions::default()
            },
        },
    )
    .expect("format");
    let write = |name: &str, len: usize, hint: WriteLifetime| {
        let mut f = fs.create_append(Path::new(name), hint).expect("create");
        f.append(&vec![name.len() as u8; len]).expect("append");
        f.sync().expect("sync");
    };
    fs.create_dir_all(Path::new("/db/sub")).expect("mkdir");
    write("/db/000001.log", 300, WriteLifetime::Short);
    write("/db/big", 200 << 10, WriteLifetime::Long);
    write("/db/next", 100 << 10, WriteLifetime::Long);
    write("/db/gone", 5000, WriteLifetime::Medium);
    fs.rename(Path::new("/db/gone"), Path::new("/db/moved"))
        .expect("rename");
    fs.remove(Path::new("/db/big")).expect("remove");
    fs.sync_metadata().expect("sync");
    // Relocate records: `/db/next` starts in the zone `/db/big` filled.
    let gc = fs.collect_garbage().expect("collect");
    assert!(gc.extents_moved > 0, "the seed has no relocate record");
    let zone = dev.zone(0).expect("zone 0");
    let mut log = vec![0u8; (zone.write_pointer - LOG_BLOCK) as usize];
    dev.read_at(LOG_BLOCK, &mut log).expect("read log");
    let mut sb = vec![0u8; LOG_BLOCK as usize];
    dev.read_at(0, &mut sb).expect("read superblock");
    (log, sb)
}

/// The bodies of a log's frames as `fuzz_metadata_log`'s mode 1 takes them.
fn bodies_of(log: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let read = crate::zonefs::format::read_frames(log, LOG_BLOCK as usize, log.len(), |_, b| {
        out.extend_from_slice(&(b.len() as u16).to_le_bytes());
        out.extend_from_slice(b);
        Ok(())
    });
    assert!(read.is_ok(), "the seed log reads");
    out
}

fn state_file_image() -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dev");
    let g = ZonedGeometry::new(4, 64 << 10);
    let dev = EmulatedZoned::create(&path, &g, EmulatedOptions::default()).expect("device");
    dev.write_at(0, &[1u8; 8192]).expect("write");
    dev.write_at(64 << 10, &[2u8; 4096]).expect("write");
    dev.finish_zone(1).expect("finish");
    dev.sync().expect("sync");
    std::fs::read(EmulatedZoned::state_path_of(&path)).expect("read state file")
}

fn trace_image() -> Vec<u8> {
    let p = |s: &str| PathBuf::from(s);
    let events = vec![
        TraceEvent::Create {
            file: 0,
            kind: TraceFileKind::Append,
            hint: WriteLifetime::Short,
            path: p("/db/000001.log"),
        },
        TraceEvent::Write {
            file: 0,
            offset: 0,
            len: 100,
        },
        TraceEvent::Sync { file: 0 },
        TraceEvent::Create {
            file: 1,
            kind: TraceFileKind::Object,
            hint: WriteLifetime::Long,
            path: p("/db/000002.sst"),
        },
        TraceEvent::Write {
            file: 1,
            offset: 0,
            len: 20000,
        },
        TraceEvent::Finish { file: 1 },
        TraceEvent::Create {
            file: 2,
            kind: TraceFileKind::Object,
            hint: WriteLifetime::Medium,
            path: p("/db/000003.tmp"),
        },
        TraceEvent::Write {
            file: 2,
            offset: 0,
            len: 5000,
        },
        TraceEvent::Abort { file: 2 },
        TraceEvent::Rename {
            from: p("/db/000002.sst"),
            to: p("/db/000004.sst"),
        },
        TraceEvent::Remove {
            path: p("/db/000001.log"),
        },
    ];
    shale_env::encode_trace(&events)
}

/// (target, file name, bytes) of every generated seed.
fn generated_seeds() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    let (log, sb) = zonefs_images();
    let mut raw = vec![0u8];
    raw.extend_from_slice(&log);
    let mut framed = vec![1u8];
    framed.extend_from_slice(&bodies_of(&log));
    let mut trace = vec![0u8];
    trace.extend_from_slice(&trace_image());
    vec![
        ("zoned_superblock", "seed-0", sb),
        ("zoned_metadata_log", "seed-raw", raw),
        ("zoned_metadata_log", "seed-bodies", framed),
        ("zoned_state_file", "seed-0", state_file_image()),
        ("zoned_write_trace", "seed-0", trace),
    ]
}

#[test]
fn generated_seeds_decode_whole() {
    use crate::zonefs::format::Superblock;
    let seeds = generated_seeds();
    for (target, name, bytes) in &seeds {
        let ok = match *target {
            "zoned_superblock" => Superblock::decode(bytes).is_ok(),
            "zoned_state_file" => crate::state::StateFile::decode(Path::new("seed"), bytes).is_ok(),
            "zoned_write_trace" => shale_env::decode_trace(&bytes[1..]).is_ok(),
            _ => {
                let log = if bytes[0] == 1 {
                    crate::zonefs::fuzz::frame_bodies(&bytes[1..])
                } else {
                    bytes[1..].to_vec()
                };
                crate::zonefs::format::read_frames(&log, LOG_BLOCK as usize, log.len(), |_, _| {
                    Ok(())
                })
                .is_ok()
            }
        };
        assert!(ok, "{target}/{name} does not decode");
    }
    if std::env::var_os("SHALE_REWRITE_FUZZ_SEEDS").is_some_and(|v| v != "0") {
        for (target, name, bytes) in &seeds {
            let dir = corpus_dir(target);
            std::fs::create_dir_all(&dir).expect("corpus dir");
            std::fs::write(dir.join(name), bytes).expect("write seed");
        }
    }
}

#[test]
fn every_seed_and_its_mutations_run_without_a_panic() {
    let generated = generated_seeds();
    let mut rng = Rng(0x5EED);
    let long = std::env::var_os("SHALE_LONG_TESTS").is_some_and(|v| v != "0");
    let mutations = if long { 30_000 } else { 600 };
    for (target, entry) in TARGETS {
        let mut seeds: Vec<Vec<u8>> = generated
            .iter()
            .filter(|(t, _, _)| *t == target)
            .map(|(_, _, b)| b.clone())
            .collect();
        if let Ok(dir) = std::fs::read_dir(corpus_dir(target)) {
            for f in dir.flatten() {
                seeds.push(std::fs::read(f.path()).expect("read committed seed"));
            }
        }
        assert!(!seeds.is_empty(), "{target}: no seed");
        for seed in &seeds {
            entry(seed);
            for _ in 0..mutations {
                entry(&mutate(&mut rng, seed));
            }
        }
        entry(&[]);
    }
}

/// `len u16, body` of each body, as `fuzz_metadata_log`'s mode 1 takes them.
fn bodies(list: &[Vec<u8>]) -> Vec<u8> {
    let mut out = vec![1u8];
    for b in list {
        out.extend_from_slice(&(b.len() as u16).to_le_bytes());
        out.extend_from_slice(b);
    }
    out
}

fn create_record(id: u64, name: &str) -> Vec<u8> {
    let mut e = crate::zonefs::format::Enc::default();
    e.u8(crate::zonefs::format::KIND_CREATE);
    e.u64(id);
    e.name(name);
    e.u8(1);
    e.0
}

fn snapshot_record(files: &[(u64, &str)]) -> Vec<u8> {
    let mut e = crate::zonefs::format::Enc::default();
    e.u8(crate::zonefs::format::KIND_SNAPSHOT);
    e.u64(100);
    e.u32(0);
    e.u32(files.len() as u32);
    for (id, name) in files {
        e.u64(*id);
        e.name(name);
        e.u64(0);
        e.u8(1);
        e.u32(0);
    }
    e.0
}

/// Found by the mutation replay: two files with one id were accepted, and
/// the first lost its id (its later records could not reach it). Now damage.
#[test]
fn a_reused_file_id_is_damage() {
    use crate::zonefs::fuzz::{frame_bodies, replay_for_test};
    let ok = bodies(&[snapshot_record(&[(1, "/a")]), create_record(2, "/b")]);
    assert!(replay_for_test(&frame_bodies(&ok[1..])).is_ok());
    for input in [
        bodies(&[snapshot_record(&[(1, "/a")]), create_record(1, "/b")]),
        bodies(&[snapshot_record(&[(1, "/a"), (1, "/b")])]),
        bodies(&[snapshot_record(&[(1, "/a"), (2, "/a")])]),
    ] {
        let err = replay_for_test(&frame_bodies(&input[1..])).expect_err("damage");
        assert!(err.contains("does not decode"), "{err}");
        fuzz_metadata_log(&input);
    }
}

/// Found by the fuzz stage of CI: a create record of id `u64::MAX` made the
/// next id overflow (a panic in a debug build, a wrapped id in a release
/// one). Such a record, and a snapshot file whose id is not below the
/// snapshot's next id (a new file would take it), are damage.
#[test]
fn the_last_file_id_and_an_id_past_the_next_are_damage() {
    use crate::zonefs::fuzz::{frame_bodies, replay_for_test};
    let ok = bodies(&[snapshot_record(&[(99, "/a")]), create_record(100, "/b")]);
    assert!(replay_for_test(&frame_bodies(&ok[1..])).is_ok());
    for input in [
        bodies(&[snapshot_record(&[(1, "/a")]), create_record(u64::MAX, "/b")]),
        bodies(&[snapshot_record(&[(100, "/a")])]),
        bodies(&[snapshot_record(&[(1, "/a"), (u64::MAX, "/b")])]),
    ] {
        let err = replay_for_test(&frame_bodies(&input[1..])).expect_err("damage");
        assert!(err.contains("does not decode"), "{err}");
        fuzz_metadata_log(&input);
    }
}
