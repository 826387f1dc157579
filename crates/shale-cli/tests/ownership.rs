//! No command deletes, recreates or rewrites what it does not own: every
//! command that can delete or recreate a database, run beside a live writer,
//! is refused with the lock error and changes nothing; repair refuses another
//! program's directory; commands that only read leave every byte as it was;
//! a zoned device holding files is not formatted over.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{mkfs_small, ok, run, stderr};
use shale::{Db, Options};
use shale_zoned::{EmulatedOptions, EmulatedZoned, ZoneFs};

fn path(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Every file below `dir` with its bytes (the directory's whole state).
fn contents(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).expect("read");
                out.insert(p.strip_prefix(dir).expect("prefix").to_path_buf(), bytes);
            }
        }
    }
    out
}

/// Runs `args`, expects exit code 1 with `needle` in the error, and the
/// directory `dir` unchanged.
fn refused(args: &[&str], needle: &str, dir: &Path) {
    let before = contents(dir);
    let o = run(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert_eq!(contents(dir), before, "{args:?} changed {}", dir.display());
}

#[test]
fn commands_that_delete_or_recreate_a_database_are_refused_beside_a_live_writer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().join("db");
    let db = path(&d);
    ok(&["load", "--db", &db, "--keys", "5000"]);
    // A live writer: this process holds the database open, with a write in
    // its log that no table has yet.
    let live = Db::open(&d, Options::default()).expect("open");
    live.put(b"live", b"writer").expect("put");
    let zns_device = path(&dir.path().join("zns.img"));
    for args in [
        &[
            "bench",
            "db",
            "--num",
            "100",
            "--benchmarks",
            "fillseq",
            "--db",
            &db,
        ][..],
        &[
            "bench",
            "db-sweep",
            "--param",
            "open_files",
            "--values",
            "0",
            "--num",
            "100",
            "--reads",
            "10",
            "--db",
            &db,
            "--out",
            &path(&dir.path().join("sweep")),
        ],
        &[
            "bench",
            "zns",
            "--num",
            "1000",
            "--db",
            &db,
            "--device",
            &zns_device,
        ],
        &["repair", "--db", &db],
        &["repair", "--db", &db, "--force"],
        &["compact", "--db", &db],
        &["load", "--db", &db, "--keys", "10"],
        &["put", "--db", &db, "k", "v"],
        &["delete", "--db", &db, "k"],
    ] {
        refused(args, "locked", &d);
    }
    assert!(!Path::new(&zns_device).exists(), "bench zns stopped first");
    assert_eq!(live.get(b"live").expect("get"), Some(b"writer".to_vec()));
    live.close().expect("close");
    // Once the writer is gone, the bench may replace its database.
    ok(&[
        "bench",
        "db",
        "--num",
        "100",
        "--benchmarks",
        "fillseq",
        "--db",
        &db,
    ]);
}

/// LevelDB's files for a new database: `CURRENT`, a manifest whose first
/// edit names LevelDB's comparator, a log and a table (with LevelDB's magic).
fn leveldb_dir(dir: &Path) {
    fn framed(payload: &[u8]) -> Vec<u8> {
        let mut typed = vec![1u8];
        typed.extend_from_slice(payload);
        let crc = crc32c(&typed).rotate_right(15).wrapping_add(0xa282_ead8);
        let mut out = crc.to_le_bytes().to_vec();
        out.extend_from_slice(&(payload.len() as u16).to_le_bytes());
        out.extend_from_slice(&typed);
        out
    }
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::write(dir.join("CURRENT"), b"MANIFEST-000002\n").expect("CURRENT");
    let comparator = b"leveldb.BytewiseComparator";
    let mut edit = vec![1u8, comparator.len() as u8];
    edit.extend_from_slice(comparator);
    edit.extend_from_slice(&[2, 3, 3, 4, 4, 0]);
    std::fs::write(dir.join("MANIFEST-000002"), framed(&edit)).expect("manifest");
    std::fs::write(dir.join("000003.log"), b"").expect("log");
    let mut table = vec![0u8; 48];
    table.extend_from_slice(&0xdb47_7524_8b80_fb57u64.to_le_bytes());
    std::fs::write(dir.join("000005.ldb"), table).expect("table");
}

/// CRC-32C (Castagnoli), bit by bit: the test needs a few bytes of it.
fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82f6_3b78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn repair_refuses_another_programs_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().join("leveldb");
    leveldb_dir(&d);
    let db = path(&d);
    refused(&["repair", "--db", &db], "not shale's", &d);
    refused(&["repair", "--db", &db], "--force", &d);
    // Every other command refuses it too, and writes nothing.
    refused(&["stats", "--db", &db], "MANIFEST-000002", &d);
    // Told to, repair takes it over, and the old CURRENT is kept in lost/.
    let report = ok(&["repair", "--db", &db, "--force"]);
    assert!(report.contains("moved to lost/: CURRENT"), "{report}");
    assert_eq!(
        std::fs::read(d.join("lost/CURRENT")).expect("kept"),
        b"MANIFEST-000002\n"
    );
    assert!(d.join("lost/MANIFEST-000002").exists());
}

#[test]
fn commands_that_only_read_leave_the_database_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().join("db");
    let db = path(&d);
    ok(&["load", "--db", &db, "--keys", "20000"]);
    let before = contents(&d);
    // advise: a bad argument is refused before anything is opened; a run
    // reads only.
    let o = run(&["advise", "--db", &db, "--target-io", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let text = ok(&["advise", "--db", &db]);
    assert!(text.contains("IP1"), "{text}");
    // Benches refusing a database of another dataset.
    let o = run(&[
        "bench",
        "db",
        "--use_existing_db",
        "--benchmarks",
        "readrandom",
        "--db",
        &db,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("db_bench keys"), "{}", stderr(&o));
    let o = run(&[
        "bench",
        "kvdb",
        "--db",
        &db,
        "--keys",
        "1000",
        "--reads",
        "10",
        "--out",
        &path(&dir.path().join("report")),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("another dataset"), "{}", stderr(&o));
    assert_eq!(contents(&d), before, "not a byte written");

    // A read-only open of a directory whose CURRENT names a missing
    // manifest creates no lock file.
    let broken = dir.path().join("broken");
    std::fs::create_dir(&broken).expect("mkdir");
    std::fs::write(broken.join("CURRENT"), b"MANIFEST-000009\n").expect("write");
    refused(
        &["stats", "--db", &path(&broken)],
        "MANIFEST-000009",
        &broken,
    );
    assert!(!broken.join("LOCK").exists());
}

#[test]
fn a_zoned_device_with_files_is_not_formatted_over() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dev = dir.path().join("z.img");
    let z = path(&dev);
    mkfs_small(&z);
    ok(&["put", "--zoned", &z, "--db", "/mine", "k", "v"]);
    let image = || (std::fs::read(&dev).expect("read"), contents(dir.path()));
    let before = image();
    let o = run(&["zoned", "mkfs", "--device", &z]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("/mine") && stderr(&o).contains("--force"),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "bench",
        "zns",
        "--num",
        "1000",
        "--db",
        &path(&dir.path().join("posix")),
        "--device",
        &z,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("/mine"), "{}", stderr(&o));
    assert!(before == image(), "the device is unchanged");
    assert_eq!(ok(&["get", "--zoned", &z, "--db", "/mine", "k"]), "v\n");

    // While another process has the device open, even --force is refused.
    {
        let held = EmulatedZoned::open(&dev, EmulatedOptions::default()).expect("open");
        let fs = ZoneFs::mount(Arc::new(held)).expect("mount");
        let o = run(&["zoned", "mkfs", "--device", &z, "--force"]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        drop(fs);
    }
    assert_eq!(ok(&["get", "--zoned", &z, "--db", "/mine", "k"]), "v\n");
    ok(&["zoned", "mkfs", "--device", &z, "--force"]);
    let o = run(&["get", "--zoned", &z, "--db", "/mine", "k"]);
    assert_eq!(o.status.code(), Some(1), "formatted: {}", stderr(&o));

    // A device that cannot be made leaves nothing behind.
    let huge = dir.path().join("huge.img");
    let o = run(&[
        "zoned",
        "mkfs",
        "--device",
        &path(&huge),
        "--zones",
        "40",
        "--zone-size",
        "1T",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!huge.exists());
    assert!(!EmulatedZoned::state_path_of(&huge).exists());
}

#[test]
fn bench_zns_too_small_for_the_ssd_model_is_refused_before_it_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("posix");
    let dev = dir.path().join("z.img");
    let o = run(&[
        "bench",
        "zns",
        "--num",
        "100",
        "--db",
        &path(&db),
        "--device",
        &path(&dev),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("use --num"), "{}", stderr(&o));
    assert!(!db.exists() && !dev.exists(), "nothing ran");
}
