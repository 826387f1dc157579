//! End-to-end tests of `shale zoned ...` and of the engine commands with
//! `--zoned`, on emulated zoned devices in temporary directories.

use std::path::Path;

use serde_json::Value;
use shale_workload::Dataset;
use shale_zoned::{EmulatedOptions, EmulatedZoned, ZonedGeometry};

mod common;
use common::{mkfs_small, ok, run, stderr, stdout};

fn path(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn hex(bytes: &[u8]) -> String {
    let digits: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("0x{digits}")
}

#[test]
fn load_get_scan_stats_and_verify_on_an_emulated_device() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dev = path(&dir.path().join("zns.img"));
    let text = mkfs_small(&dev);
    assert!(
        text.contains("emulated device, created")
            && text.contains("24 zones of 1.00 MiB (capacity 768.00 KiB)")
            && text.contains("max open zones 6, max active zones 6")
            && text.contains("2 metadata zones, 22 data zones (16.50 MiB writable)"),
        "{text}"
    );
    assert!(dir.path().join("zns.img.zones").is_file());

    // 3,000 keys with 64 KiB memtables: several flushes and a compaction.
    let loaded = ok(&[
        "load",
        "--zoned",
        &dev,
        "--keys",
        "3000",
        "--write-buffer-size",
        "65536",
    ]);
    assert!(loaded.starts_with("loaded 3000 keys"), "{loaded}");
    let zoned_line = loaded
        .lines()
        .find(|l| l.starts_with("zone file system: "))
        .expect("the zone file system's counters");
    assert!(
        zoned_line.contains("device WAF 1.") && zoned_line.contains("of 22 data zones empty"),
        "{zoned_line}"
    );
    let d = Dataset::default();
    for i in [0u64, 1234, 2999] {
        let got = ok(&["get", "--zoned", &dev, &hex(&d.key(i))]);
        assert_eq!(got.trim_end(), hex(&d.value(i)), "key {i}");
    }
    // --db names the directory inside the zone file system: /db by default.
    let got = ok(&["get", "--zoned", &dev, "--db", "/db", &hex(&d.key(7))]);
    assert_eq!(got.trim_end(), hex(&d.value(7)));
    let o = run(&["get", "--zoned", &dev, "--db", "/other", &hex(&d.key(7))]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));

    // Settled by load: every entry in a table.
    let stats: Value =
        serde_json::from_str(&ok(&["stats", "--zoned", &dev, "--json"])).expect("stats JSON");
    assert_eq!(stats["entries"].as_u64(), Some(3000), "{stats}");
    assert!(stats["flushes"].as_u64().is_some_and(|f| f >= 2), "{stats}");

    ok(&["put", "--zoned", &dev, "zz-last", "value"]);
    assert_eq!(ok(&["get", "--zoned", &dev, "zz-last"]), "value\n");
    let scanned = ok(&["scan", "--zoned", &dev, "--from", "zz-", "--to", "zz-z"]);
    assert_eq!(scanned, "zz-last value\n");
    let all = ok(&["scan", "--zoned", &dev]);
    assert_eq!(all.lines().count(), 3001);
    ok(&["delete", "--zoned", &dev, "zz-last"]);
    let o = run(&["get", "--zoned", &dev, "zz-last"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not found"), "{}", stderr(&o));

    // The file system, as ls, df and check see it.
    let ls: Value =
        serde_json::from_str(&ok(&["zoned", "ls", "--device", &dev, "--json"])).expect("ls JSON");
    let files = ls["files"].as_array().expect("files");
    let tables: Vec<&Value> = files
        .iter()
        .filter(|f| f["path"].as_str().is_some_and(|p| p.ends_with(".sst")))
        .collect();
    assert!(!tables.is_empty(), "{ls}");
    for f in files {
        let path = f["path"].as_str().expect("path");
        assert!(path.starts_with("/db/"), "{path}");
        let size = f["size"].as_u64().expect("size");
        let in_extents: u64 = f["extents"]
            .as_array()
            .expect("extents")
            .iter()
            .map(|x| x["len"].as_u64().expect("len"))
            .sum();
        assert_eq!(in_extents, size, "{f}");
        for x in f["extents"].as_array().expect("extents") {
            let zone = x["zone"].as_u64().expect("zone");
            assert!((2..24).contains(&zone), "{f}");
            assert!(
                x["offset"].as_u64().expect("offset") + x["len"].as_u64().expect("len")
                    <= 768 << 10,
                "{f}"
            );
        }
    }
    assert!(
        files
            .iter()
            .any(|f| f["path"] == "/db/CURRENT" && f["lifetime"] == "not-set"),
        "{ls}"
    );
    let text = ok(&["zoned", "ls", "--device", &dev]);
    assert!(
        text.lines()
            .last()
            .is_some_and(|l| l.starts_with(&format!("{} files, ", files.len()))),
        "{text}"
    );
    let df: Value =
        serde_json::from_str(&ok(&["zoned", "df", "--device", &dev, "--json"])).expect("df JSON");
    assert_eq!(df["zones"]["total"], 24, "{df}");
    assert_eq!(df["zones"]["metadata"], 2, "{df}");
    let live: u64 = files
        .iter()
        .map(|f| f["size"].as_u64().expect("size"))
        .sum();
    assert_eq!(df["live_bytes"].as_u64(), Some(live), "{df}");
    let written = df["written_bytes"].as_u64().expect("written");
    assert!(written >= live, "{df}");
    let used = df["zones"]["used"].as_u64().expect("used");
    let empty = df["zones"]["empty"].as_u64().expect("empty");
    assert_eq!(used + empty, 22, "{df}");
    assert_eq!(df["free_bytes"].as_u64(), Some(empty * (768 << 10)), "{df}");
    assert!(
        df["space_amplification"].as_f64().is_some_and(|a| a >= 1.0),
        "{df}"
    );
    let checked = ok(&["zoned", "check", "--device", &dev]);
    assert!(
        checked.contains(&format!("{} files", files.len())) && checked.contains("no problem"),
        "{checked}"
    );
    let stats: Value =
        serde_json::from_str(&ok(&["stats", "--zoned", &dev, "--json"])).expect("stats JSON");
    assert_eq!(stats["zoned"]["live_bytes"].as_u64(), Some(live), "{stats}");

    let compacted = ok(&["compact", "--zoned", &dev]);
    assert!(compacted.contains("in L6"), "{compacted}");

    // Every key, in another process (a fresh mount).
    let verified = ok(&["load", "--zoned", &dev, "--keys", "3000", "--verify"]);
    assert!(verified.starts_with("verified 3000 keys"), "{verified}");
    // A key range that was never loaded fails at its first key.
    let o = run(&[
        "load", "--zoned", &dev, "--keys", "10", "--start", "3000", "--verify",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("key 3000") && stderr(&o).contains("is missing"),
        "{}",
        stderr(&o)
    );
    // Nothing of it went to the regular file system.
    assert!(!Path::new("db").join("CURRENT").exists());
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn mkfs_refuses_a_file_that_is_not_an_emulated_device() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, b"keep me").expect("write");
    for args in [
        &["zoned", "mkfs", "--device", &path(&file)][..],
        &["zoned", "mkfs", "--device", &path(&file), "--zones", "8"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert!(
            err.contains("not an emulated zoned device") && err.contains("nothing was formatted"),
            "{err}"
        );
        assert_eq!(std::fs::read(&file).expect("read"), b"keep me");
    }
    assert!(!dir.path().join("notes.txt.zones").exists());
    // A bad geometry is a usage error; nothing is created.
    let dev = dir.path().join("zns.img");
    let o = run(&[
        "zoned",
        "mkfs",
        "--device",
        &path(&dev),
        "--zone-size",
        "1M",
        "--zone-capacity",
        "2M",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("zone capacity"), "{}", stderr(&o));
    assert!(!dev.exists());
    // A device is never resized: another geometry is refused.
    mkfs_small(&path(&dev));
    let o = run(&["zoned", "mkfs", "--device", &path(&dev), "--zones", "32"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("another geometry"), "{}", stderr(&o));
    // Without geometry flags, an existing device is formatted again as it is.
    let again = ok(&["zoned", "mkfs", "--device", &path(&dev)]);
    assert!(
        again.contains("24 zones of 1.00 MiB") && !again.contains("created"),
        "{again}"
    );
}

#[test]
fn zoned_commands_on_unformatted_or_missing_devices_say_to_run_mkfs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dev = dir.path().join("raw.img");
    let mut g = ZonedGeometry::new(8, 1 << 20);
    g.max_open_zones = 6;
    g.max_active_zones = 6;
    drop(EmulatedZoned::create(&dev, &g, EmulatedOptions::default()).expect("create"));
    let dev = path(&dev);
    for args in [
        &["get", "--zoned", &dev, "k"][..],
        &["stats", "--zoned", &dev],
        &["load", "--zoned", &dev, "--keys", "10"],
        &["put", "--zoned", &dev, "k", "v"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert!(
            err.contains("not formatted")
                && err.contains(&format!("shale zoned mkfs --device {dev}")),
            "{args:?}: {err}"
        );
    }
    // A missing device: reading commands name mkfs and create nothing.
    let missing = path(&dir.path().join("missing.img"));
    let o = run(&["scan", "--zoned", &missing]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("does not exist") && stderr(&o).contains("shale zoned mkfs"),
        "{}",
        stderr(&o)
    );
    assert!(!Path::new(&missing).exists());
}

#[test]
fn put_creates_a_missing_emulated_device_with_the_default_geometry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dev = path(&dir.path().join("auto.img"));
    let o = run(&["put", "--zoned", &dev, "k", "v"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("created an emulated zoned device")
            && stderr(&o).contains("64 zones of 64.00 MiB"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::metadata(&dev).expect("device").len(),
        64 * (64 << 20)
    );
    assert_eq!(ok(&["get", "--zoned", &dev, "k"]), "v\n");
}

#[test]
fn bench_db_runs_on_a_zoned_device() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dev = path(&dir.path().join("zns.img"));
    mkfs_small(&dev);
    let o = run(&[
        "bench",
        "db",
        "--zoned",
        &dev,
        "--benchmarks",
        "fillrandom,overwrite,readrandom",
        "--num",
        "5000",
        "--write_buffer_size",
        "65536",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(doc["config"]["db"], "/dbbench", "{doc}");
    assert!(
        doc["config"]["storage"]
            .as_str()
            .is_some_and(|s| s.starts_with("zoned (emulated) ")),
        "{doc}"
    );
    let results = doc["results"].as_array().expect("results");
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["ops"].as_u64(), Some(5000));
    // fillrandom writes keys drawn with replacement: about 63% are distinct.
    let found = results[2]["found"].as_u64().expect("found");
    assert!((3500..=5000).contains(&found), "{found}");
    // The database is in the zone file system, where stats finds it.
    let stats: Value = serde_json::from_str(&ok(&[
        "stats", "--zoned", &dev, "--db", "/dbbench", "--json",
    ]))
    .expect("stats JSON");
    assert!(
        stats["entries"].as_u64().is_some_and(|e| e >= found),
        "{stats}"
    );
}

#[test]
fn check_reports_a_file_it_cannot_read_and_exits_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dev_path = dir.path().join("zns.img");
    let dev = path(&dev_path);
    mkfs_small(&dev);
    ok(&["load", "--zoned", &dev, "--keys", "2000"]);
    let ls: Value =
        serde_json::from_str(&ok(&["zoned", "ls", "--device", &dev, "--json"])).expect("ls JSON");
    let table = ls["files"]
        .as_array()
        .expect("files")
        .iter()
        .find(|f| f["path"].as_str().is_some_and(|p| p.ends_with(".sst")))
        .expect("a table")
        .clone();
    let zone = table["extents"][0]["zone"].as_u64().expect("zone") as u32;
    // The zone holding the table's first extent goes offline.
    let d = EmulatedZoned::open(&dev_path, EmulatedOptions::default()).expect("open");
    d.set_zone_offline(zone).expect("offline");
    drop(d);
    let o = run(&["zoned", "check", "--device", &dev]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let table_path = table["path"].as_str().expect("path");
    assert!(
        stdout(&o)
            .lines()
            .any(|l| l.starts_with("problem: ") && l.contains(table_path)),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("the zone file system has") && stderr(&o).contains("problem"),
        "{}",
        stderr(&o)
    );
    let o = run(&["zoned", "check", "--device", &dev, "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let doc: Value = serde_json::from_str(&stdout(&o)).expect("check JSON");
    assert_eq!(doc["ok"], false);
    assert!(
        doc["problems"].as_array().is_some_and(|p| !p.is_empty()),
        "{doc}"
    );
}

#[test]
fn a_tiny_bench_zns_reports_both_backends_with_their_device_waf() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let device = dir.path().join("zns.img");
    let o = run(&[
        "bench",
        "zns",
        "--num",
        "20000",
        "--write_buffer_size",
        "262144",
        "--zone-size",
        "1M",
        "--erase-block",
        "64KiB",
        "--db",
        &path(&dir.path().join("posix")),
        "--device",
        &path(&device),
        "--out",
        &path(&out),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let saved: Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).expect("results.json"))
            .expect("results.json is JSON");
    assert_eq!(saved, doc);
    assert_eq!(doc["config"]["num"], 20000);
    assert_eq!(doc["config"]["user_bytes_per_benchmark"], 20000 * 116);
    assert_eq!(doc["config"]["zoned_geometry"]["zone_size"], 1 << 20);
    assert!(doc["config"]["trace_events"]
        .as_u64()
        .is_some_and(|n| n > 20000));
    let runs = doc["runs"].as_array().expect("runs");
    let order: Vec<(String, String)> = runs
        .iter()
        .map(|r| {
            (
                r["benchmark"].as_str().expect("benchmark").to_string(),
                r["backend"].as_str().expect("backend").to_string(),
            )
        })
        .collect();
    let pair = |b: &str, k: &str| (b.to_string(), k.to_string());
    assert_eq!(
        order,
        [
            pair("fillrandom", "posix"),
            pair("fillrandom", "zoned"),
            pair("overwrite", "posix"),
            pair("overwrite", "zoned"),
        ]
    );
    for r in runs {
        assert_eq!(r["ops"], 20000, "{r}");
        assert!(r["mb_per_sec"].as_f64().is_some_and(|m| m > 0.0), "{r}");
        assert!(r["micros_per_op"].as_f64().is_some_and(|m| m > 0.0), "{r}");
        // The engine counts its batches' bytes: keys, values and framing.
        assert!(
            r["engine"]["user_bytes"]
                .as_u64()
                .is_some_and(|b| b >= 20000 * 116),
            "{r}"
        );
        // Flushes and compactions: the engine writes more than the user.
        assert!(
            r["engine"]["write_amplification"]
                .as_f64()
                .is_some_and(|w| w > 1.0),
            "{r}"
        );
        let host = r["device_host_bytes"].as_u64().expect("device host bytes");
        assert!(host >= 20000 * 116, "{r}");
        let waf = r["waf"].as_array().expect("waf");
        match r["backend"].as_str() {
            Some("posix") => {
                let ops: Vec<f64> = waf
                    .iter()
                    .map(|w| w["over_provisioning"].as_f64().expect("op"))
                    .collect();
                assert_eq!(ops, [0.07, 0.28], "{r}");
                assert!(waf.iter().all(|w| w["model"] == "ftl"), "{r}");
                let ftl = r["ftl"].as_array().expect("ftl");
                assert_eq!(ftl.len(), 2);
                assert!(ftl
                    .iter()
                    .all(|f| f["host_pages"].as_u64() == Some(host / 4096)));
                // One erase block size for every level, so that they compare,
                // at most the 16 pages of --erase-block.
                assert_eq!(ftl[0]["pages_per_block"], ftl[1]["pages_per_block"], "{r}");
                assert!(
                    ftl[0]["pages_per_block"].as_u64().is_some_and(|p| p <= 16),
                    "{r}"
                );
            }
            Some("zoned") => {
                assert_eq!(waf.len(), 1, "{r}");
                assert_eq!(waf[0]["model"], "zonefs");
                let z = &r["zonefs"];
                assert_eq!(z["fs_bytes"].as_u64(), Some(host), "{r}");
                assert!(
                    z["host_bytes"]["short"].as_u64().is_some_and(|b| b > 0),
                    "{r}"
                );
            }
            other => panic!("unknown backend {other:?}"),
        }
        for w in waf {
            assert!(w["waf"].as_f64().is_some_and(|x| x >= 1.0), "{r}");
        }
    }
    // Both backends ran the same writes: the engine wrote the same user bytes
    // in each benchmark, and about the same table bytes over both (a
    // compaction runs at its own pace, so whether it lands in the fill or in
    // the overwrite that follows depends on timing: one CI run's fill wrote
    // 6.3 MB of tables on posix and 4.9 MB on the zoned device, with the same
    // totals after the overwrite).
    let engine = |i: usize, what: &str| runs[i]["engine"][what].as_f64().expect(what);
    for (posix, zoned) in [(0, 1), (2, 3)] {
        assert_eq!(
            engine(posix, "user_bytes"),
            engine(zoned, "user_bytes"),
            "{runs:?}"
        );
    }
    let tables = |a: usize, b: usize| engine(a, "table_bytes") + engine(b, "table_bytes");
    assert!((tables(0, 2) / tables(1, 3) - 1.0).abs() < 0.2, "{runs:?}");
    // The device was formatted for the run: the zone file system is there.
    let checked = ok(&["zoned", "check", "--device", &path(&device)]);
    assert!(checked.contains("no problem"), "{checked}");
}

#[test]
fn bench_kvdb_ycsb_and_db_sweep_run_on_a_zoned_device() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dev = path(&dir.path().join("zns.img"));
    ok(&[
        "zoned",
        "mkfs",
        "--device",
        &dev,
        "--zones",
        "48",
        "--zone-size",
        "1M",
    ]);
    let kvdb_out = dir.path().join("kvdb");
    let o = run(&[
        "bench",
        "kvdb",
        "--zoned",
        &dev,
        "--keys",
        "5000",
        "--reads",
        "1000",
        "--cache",
        "0,1MiB",
        "--device-limit-seconds",
        "0.1",
        "--sample-interval",
        "0.2",
        "--out",
        &path(&kvdb_out),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: Value = serde_json::from_str(&stdout(&o)).expect("kvdb JSON");
    let runs = r["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2, "{r}");
    assert!(
        runs.iter().all(|x| x["gets"] == 1000 && x["found"] == 1000),
        "{r}"
    );
    // The time series says where its device columns come from.
    let samples: Value = serde_json::from_slice(
        &std::fs::read(kvdb_out.join("samples.json")).expect("samples.json"),
    )
    .expect("samples JSON");
    assert!(
        samples["notes"]
            .as_array()
            .is_some_and(|n| n.iter().any(|t| t
                .as_str()
                .is_some_and(|t| t.contains("emulated zoned device")))),
        "{samples}"
    );

    let o = run(&[
        "bench",
        "ycsb",
        "--zoned",
        &dev,
        "--records",
        "1000",
        "--operations",
        "1000",
        "--threads",
        "2",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let y: Value = serde_json::from_str(&stdout(&o)).expect("ycsb JSON");
    assert_eq!(y["runs"][0]["operations"], 1000, "{y}");

    let sweep_out = dir.path().join("sweep");
    let o = run(&[
        "bench",
        "db-sweep",
        "--zoned",
        &dev,
        "--param",
        "open_files",
        "--values",
        "0,100",
        "--num",
        "2000",
        "--reads",
        "200",
        "--out",
        &path(&sweep_out),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s: Value = serde_json::from_str(&stdout(&o)).expect("sweep JSON");
    assert_eq!(s["points"].as_array().map(Vec::len), Some(2 * 3), "{s}");
    let o = run(&[
        "bench",
        "db-sweep",
        "--zoned",
        &dev,
        "--param",
        "open_files",
        "--engines",
        "shale,leveldb",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--zoned runs shale only"),
        "{}",
        stderr(&o)
    );

    // All three databases are in the one zone file system.
    let ls: Value =
        serde_json::from_str(&ok(&["zoned", "ls", "--device", &dev, "--json"])).expect("ls JSON");
    let dirs: std::collections::BTreeSet<String> = ls["files"]
        .as_array()
        .expect("files")
        .iter()
        .filter_map(|f| f["path"].as_str())
        .filter_map(|p| p.split('/').nth(1).map(str::to_string))
        .collect();
    assert_eq!(
        dirs.into_iter().collect::<Vec<_>>(),
        ["dbbench", "kvdb-5000-hash-v110", "ycsb-1000-10x100"],
    );
    assert!(ok(&["zoned", "check", "--device", &dev]).contains("no problem"));
}

#[test]
fn bench_zns_refuses_an_erase_block_that_is_not_whole_pages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = run(&[
        "bench",
        "zns",
        "--num",
        "100",
        "--erase-block",
        "1000",
        "--db",
        &path(&dir.path().join("posix")),
        "--device",
        &path(&dir.path().join("zns.img")),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--erase-block 1000"), "{}", stderr(&o));
    assert!(!dir.path().join("posix").exists());
}

/// The data and zone state files of an emulated device.
fn device_files(dev: &Path) -> (Vec<u8>, Vec<u8>) {
    (
        std::fs::read(dev).expect("data file"),
        std::fs::read(EmulatedZoned::state_path_of(dev)).expect("state file"),
    )
}

/// XORs one byte of a (closed) emulated device's data file.
fn xor_byte(dev: &Path, offset: u64, bits: u8) {
    let mut data = std::fs::read(dev).expect("read");
    data[offset as usize] ^= bits;
    std::fs::write(dev, &data).expect("write");
}

/// The active metadata zone (the one of zones 0 and 1 whose superblock has
/// the higher sequence) and the device offsets of its log's frames.
fn active_log_frames(dev: &Path, zone_size: u64) -> (u64, Vec<u64>) {
    let data = std::fs::read(dev).expect("read");
    let u64_at = |p: usize| u64::from_le_bytes(data[p..p + 8].try_into().expect("8 bytes"));
    let seq = |z: u64| {
        let s = (z * zone_size) as usize;
        (&data[s..s + 8] == b"SHZONEFS").then(|| u64_at(s + 56))
    };
    let zone = if seq(1) > seq(0) { 1 } else { 0 };
    let (start, end) = (zone * zone_size, (zone + 1) * zone_size);
    let mut frames = Vec::new();
    let mut pos = start + 4096;
    while pos + 8 <= end {
        let in_block = pos % 4096;
        if in_block != 0 && 4096 - in_block < 8 {
            pos += 4096 - in_block;
            continue;
        }
        let p = pos as usize;
        let len = u64::from(u32::from_le_bytes(data[p..p + 4].try_into().expect("4")));
        if len == 0 {
            pos = (pos / 4096 + 1) * 4096;
            continue;
        }
        frames.push(pos);
        pos += 8 + len;
    }
    (zone, frames)
}

/// Issue 20: one byte flipped in a middle frame of the metadata log
/// destroyed a zoned database: `check` failed, but a read-write mount (any
/// `--zoned` command that writes, even to another database) rolled the
/// truncated log and reset the zones of the files the unread records
/// held. Now every command refuses the damage, nothing is written, and
/// restoring the byte brings every key back.
#[test]
fn a_flipped_metadata_byte_is_refused_and_restoring_it_brings_everything_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dev_path = dir.path().join("z.img");
    let dev = path(&dev_path);
    mkfs_small(&dev);
    ok(&[
        "load",
        "--zoned",
        &dev,
        "--keys",
        "3000",
        "--write-buffer-size",
        "65536",
    ]);
    let (zone, frames) = active_log_frames(&dev_path, 1 << 20);
    assert!(frames.len() >= 10, "{} frames", frames.len());
    // 10 bytes into a middle frame: its body.
    let at = frames[frames.len() / 2] + 10;
    xor_byte(&dev_path, at, 0x40);
    let before = device_files(&dev_path);

    let o = run(&["zoned", "check", "--device", &dev]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).starts_with("problem: the zone file system is damaged")
            && stdout(&o).contains(&format!("metadata zone {zone}"))
            && stdout(&o).contains(&format!("device byte {}", at - 10)),
        "{}",
        stdout(&o)
    );
    assert!(stderr(&o).contains("nothing was written"), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&run(&[
        "zoned", "check", "--device", &dev, "--json",
    ])))
    .expect("check JSON");
    assert_eq!(
        (doc["ok"].clone(), doc["mounted"].clone()),
        (false.into(), false.into())
    );

    for args in [
        &["put", "--zoned", &dev, "--db", "/other", "k", "v"][..],
        &["load", "--zoned", &dev, "--keys", "10", "--db", "/other"],
        &["get", "--zoned", &dev, "key"],
        &["zoned", "ls", "--device", &dev],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stdout(&o));
        let err = stderr(&o);
        assert!(
            err.contains("damaged")
                && err.contains(&format!("shale zoned check --device {dev}"))
                && !err.contains("run `shale zoned mkfs"),
            "{args:?}: {err}"
        );
        assert!(
            device_files(&dev_path) == before,
            "{args:?} wrote to the device"
        );
    }

    xor_byte(&dev_path, at, 0x40);
    let verified = ok(&["load", "--zoned", &dev, "--keys", "3000", "--verify"]);
    assert!(verified.contains("verified 3000 keys"), "{verified}");
    assert!(ok(&["zoned", "check", "--device", &dev]).contains("no problem"));
    ok(&["put", "--zoned", &dev, "--db", "/other", "k", "v"]);
    assert_eq!(ok(&["get", "--zoned", &dev, "--db", "/other", "k"]), "v\n");
}

/// A damaged superblock is damage, not a blank device: no command says to
/// run mkfs (which erases the device); the message names the damaged zone
/// and the intact backup, and points to `shale zoned check`.
#[test]
fn a_damaged_superblock_is_reported_as_damage_not_as_unformatted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dev_path = dir.path().join("z.img");
    let dev = path(&dev_path);
    // 64 KiB zones: the metadata log rolls, so zones 0 and 1 both hold a
    // superblock.
    ok(&[
        "zoned",
        "mkfs",
        "--device",
        &dev,
        "--zones",
        "96",
        "--zone-size",
        "64K",
        "--max-open",
        "6",
        "--max-active",
        "6",
    ]);
    // How many metadata records a load writes depends on how compaction
    // runs beside it, so load until the log has rolled (one load nearly
    // always does; a loaded machine can take two).
    let both_superblocks = || {
        let data = std::fs::read(&dev_path).expect("read");
        &data[..8] == b"SHZONEFS" && &data[64 << 10..(64 << 10) + 8] == b"SHZONEFS"
    };
    for _ in 0..6 {
        ok(&[
            "load",
            "--zoned",
            &dev,
            "--keys",
            "2000",
            "--write-buffer-size",
            "16384",
        ]);
        if both_superblocks() {
            break;
        }
    }
    assert!(both_superblocks(), "both superblocks written");
    for (zone, offset) in [(0u64, 30u64), (1, 57), (0, 0)] {
        let at = zone * (64 << 10) + offset;
        xor_byte(&dev_path, at, 0x08);
        let before = device_files(&dev_path);
        for args in [
            &["get", "--zoned", &dev, "key"][..],
            &["put", "--zoned", &dev, "k", "v"],
            &["zoned", "df", "--device", &dev],
            &["zoned", "check", "--device", &dev],
        ] {
            let o = run(args);
            assert_eq!(o.status.code(), Some(1), "{args:?}");
            let text = format!("{}{}", stdout(&o), stderr(&o));
            let backup = 1 - zone;
            assert!(
                text.contains("damaged")
                    && text.contains(&format!("zone {zone}"))
                    && text.contains(&format!("the backup in zone {backup} is intact"))
                    && !text.contains("not formatted")
                    && !text.contains("run `shale zoned mkfs"),
                "{args:?}, byte {at}: {text}"
            );
            if args[0] != "zoned" {
                assert!(
                    text.contains(&format!("shale zoned check --device {dev}")),
                    "{args:?}: {text}"
                );
            }
            assert!(
                device_files(&dev_path) == before,
                "{args:?} wrote to the device"
            );
        }
        xor_byte(&dev_path, at, 0x08);
    }
    let verified = ok(&["load", "--zoned", &dev, "--keys", "2000", "--verify"]);
    assert!(verified.contains("verified 2000 keys"), "{verified}");
}
