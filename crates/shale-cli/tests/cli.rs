//! End-to-end tests of the `shale` binary on a real directory.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use shale_workload::Dataset;

mod common;
use common::{ok, run, shale, stderr, stdout};

fn hex(bytes: &[u8]) -> String {
    let digits: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("0x{digits}")
}

fn db_arg(dir: &Path) -> String {
    dir.join("db").to_string_lossy().into_owned()
}

fn stats_json(db: &str) -> serde_json::Value {
    let text = ok(&["stats", "--db", db, "--json"]);
    serde_json::from_str(&text).expect("stats --json prints JSON")
}

/// Asserts that `shale get` of dataset key `i` prints dataset value `i`.
fn assert_dataset_value(db: &str, i: u64) {
    let d = Dataset::default();
    let got = ok(&["get", "--db", db, &hex(&d.key(i))]);
    assert_eq!(got.trim_end(), hex(&d.value(i)), "value of dataset key {i}");
}

#[test]
fn put_get_delete_roundtrip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = db_arg(dir.path());
    ok(&["put", "--db", &db, "hello", "big world"]);
    ok(&["put", "--db", &db, "0x00ff", "0xdeadbeef"]);
    ok(&["put", "--db", &db, "empty", "0x"]);
    assert_eq!(ok(&["get", "--db", &db, "hello"]), "big world\n");
    assert_eq!(ok(&["get", "--db", &db, "0x00ff"]), "0xdeadbeef\n");
    // Text keys can be given as hex too.
    assert_eq!(ok(&["get", "--db", &db, "0x68656c6c6f"]), "big world\n");
    assert_eq!(ok(&["get", "--db", &db, "empty"]), "0x\n");
    ok(&["put", "--db", &db, "hello", "again"]);
    assert_eq!(ok(&["get", "--db", &db, "hello"]), "again\n");

    ok(&["delete", "--db", &db, "hello"]);
    let o = run(&["get", "--db", &db, "hello"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not found"), "{}", stderr(&o));
    assert_eq!(ok(&["get", "--db", &db, "0x00ff"]), "0xdeadbeef\n");

    for k in ["r1", "r2", "r3"] {
        ok(&["put", "--db", &db, k, "v"]);
    }
    ok(&["delete-range", "--db", &db, "r1", "r3"]);
    assert_eq!(
        ok(&["scan", "--db", &db])
            .lines()
            .filter(|l| l.starts_with('r'))
            .count(),
        1
    );
    assert_eq!(
        ok(&["get", "--db", &db, "r3"]),
        "v\n",
        "the end is exclusive"
    );
    let o = run(&["delete-range", "--db", &db, "r3", "r1"]);
    assert_eq!(o.status.code(), Some(2), "start above end is a usage error");
    assert_eq!(ok(&["get", "--db", &db, "r3"]), "v\n");
}

#[test]
fn get_of_a_missing_key_exits_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = db_arg(dir.path());
    ok(&["put", "--db", &db, "a", "1"]);
    let o = run(&["get", "--db", &db, "b"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    let err = stderr(&o);
    assert!(
        err.starts_with("shale: ") && err.contains("not found"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn reading_a_missing_database_is_a_one_line_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = db_arg(dir.path());
    for args in [
        &["get", "--db", &db, "k"][..],
        &["scan", "--db", &db],
        &["stats", "--db", &db],
        &["delete", "--db", &db, "k"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert!(err.starts_with("shale: "), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // Nothing was created.
    assert!(!dir.path().join("db").exists());
    // Nor in a directory that is not a database (no LOCK file left behind).
    std::fs::write(dir.path().join("notes.txt"), "hello").expect("write");
    let here = dir.path().to_string_lossy().into_owned();
    for args in [
        &["get", "--db", &here, "k"][..],
        &["scan", "--db", &here],
        &["stats", "--db", &here],
        &["delete", "--db", &here, "k"],
        &["put", "--db", &here, "k", "v"],
        &["compact", "--db", &here],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(stderr(&o).contains("not a shale database"), "{args:?}");
    }
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, vec!["notes.txt"]);
}

/// Flips bit 0 of the byte `back` bytes before the end of `path`.
fn flip_from_end(path: &Path, back: u64) {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .expect("open");
    let len = f.metadata().expect("metadata").len();
    let mut b = [0u8];
    f.seek(SeekFrom::Start(len - back)).expect("seek");
    f.read_exact(&mut b).expect("read");
    f.seek(SeekFrom::Start(len - back)).expect("seek");
    f.write_all(&[b[0] ^ 1]).expect("write");
}

#[test]
fn a_damaged_manifest_is_refused_then_repaired_without_losing_keys() {
    // The reproduction of defect D1: damage in the last manifest record used
    // to roll back the compaction it recorded and delete the live table.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = db_arg(dir.path());
    ok(&[
        "load",
        "--db",
        &db,
        "--keys",
        "30000",
        "--write-buffer-size",
        "400000",
    ]);
    ok(&["put", "--db", &db, "extra", "in-the-wal"]);
    let tables_before = tables(&dir.path().join("db"));
    let manifest = std::fs::read_dir(dir.path().join("db"))
        .expect("list")
        .map(|e| e.expect("entry").path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("MANIFEST-"))
        })
        .expect("a manifest");
    flip_from_end(&manifest, 20);
    for args in [&["scan", "--db", &db][..], &["put", "--db", &db, "k", "v"]] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert!(
            err.contains("corruption in") && err.contains("MANIFEST-"),
            "{err}"
        );
        assert!(
            err.contains("shale repair"),
            "the error says what to do: {err}"
        );
        assert!(stdout(&o).is_empty(), "no rows from a refused open");
    }
    assert_eq!(
        tables(&dir.path().join("db")),
        tables_before,
        "nothing deleted"
    );
    let report = ok(&["repair", "--db", &db]);
    assert!(report.contains("repaired:"), "{report}");
    assert!(report.contains("moved to lost/: MANIFEST-"), "{report}");
    let rows = ok(&["scan", "--db", &db]);
    assert_eq!(rows.lines().count(), 30001, "every key and the WAL's write");
    assert_eq!(ok(&["get", "--db", &db, "extra"]).trim(), "in-the-wal");
    assert_dataset_value(&db, 29999);
}

#[test]
fn repair_of_a_damaged_table_keeps_its_other_blocks_and_prints_what_was_lost() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = db_arg(dir.path());
    ok(&["load", "--db", &db, "--keys", "30000"]);
    let data = dir.path().join("db");
    let largest = tables(&data)
        .into_iter()
        .max_by_key(|n| std::fs::metadata(data.join(n)).expect("metadata").len())
        .expect("a table");
    // A byte of the fifth data page (format 3: one data block a page).
    let path = data.join(&largest);
    let len = std::fs::metadata(&path).expect("metadata").len();
    flip_from_end(&path, len - (4 * 4096 + 100));
    let report = ok(&["repair", "--db", &db]);
    let line = report
        .lines()
        .find(|l| l.starts_with(&format!("damaged table {largest}: ")))
        .unwrap_or_else(|| panic!("no line on the damaged table: {report}"));
    assert!(line.contains(" 1 lost, "), "{line}");
    assert!(line.contains("; lost bytes 16384+4096"), "{line}");
    assert!(line.contains("; keys 0x"), "{line}");
    assert!(
        report.contains(&format!("moved to lost/: {largest}")),
        "{report}"
    );
    // One data block of about 28 entries lost, nothing else.
    let rows = ok(&["scan", "--db", &db]).lines().count();
    assert!((29_940..30_000).contains(&rows), "{rows} rows");
    assert_dataset_value(&db, 29999);
}

#[test]
fn usage_errors_exit_2() {
    let o = run(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("Usage"), "{}", stderr(&o));

    let dir = tempfile::tempdir().expect("tempdir");
    let db = db_arg(dir.path());
    for args in [
        &["get", "--db", &db, "0xabc"][..],
        &["get", "--db", &db, "0xzz"],
        &["put", "--db", &db, "k"],
        &["load", "--db", &db, "--keys", "x"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
    }
    assert!(!dir.path().join("db").exists());
}

#[test]
fn scan_prints_key_value_lines_within_bounds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = db_arg(dir.path());
    for (k, v) in [("a", "1"), ("b", "two words"), ("c", "0x00"), ("d", "4")] {
        ok(&["put", "--db", &db, k, v]);
    }
    assert_eq!(
        ok(&["scan", "--db", &db]),
        "a 1\nb two words\nc 0x00\nd 4\n"
    );
    assert_eq!(
        ok(&["scan", "--db", &db, "--from", "b", "--to", "d"]),
        "b two words\nc 0x00\n"
    );
    assert_eq!(ok(&["scan", "--db", &db, "--limit", "1"]), "a 1\n");
    assert_eq!(ok(&["scan", "--db", &db, "--from", "e"]), "");
}

#[test]
fn load_then_stats_and_dataset_values() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = db_arg(dir.path());
    let line = ok(&["load", "--db", &db, "--keys", "20000"]);
    assert!(
        line.starts_with("loaded 20000 keys in ") && line.contains("keys/s"),
        "{line}"
    );
    assert_eq!(line.lines().count(), 2, "{line}");
    assert!(line.contains("compactions settled"), "{line}");

    let v = stats_json(&db);
    assert_eq!(v["entries"], 20000);
    let per_block = v["index_bytes_per_data_block"]
        .as_f64()
        .expect("index_bytes_per_data_block is a number");
    assert!(per_block > 0.0 && per_block <= 10.0, "{per_block}");
    assert_eq!(v["levels"].as_array().map(Vec::len), Some(7));
    let level_entries: u64 = v["levels"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| l["entries"].as_u64().expect("entries"))
        .sum();
    assert_eq!(level_entries, 20000);
    assert!(v["metrics"]["io_per_get"].is_null());
    assert!(v["metrics"]["data"]["cache_misses"].is_u64());

    for i in [0, 1, 9_999, 19_999] {
        assert_dataset_value(&db, i);
    }
    let d = Dataset::default();
    let o = run(&["get", "--db", &db, &hex(&d.key(20_000))]);
    assert_eq!(o.status.code(), Some(1));

    // A second range lands next to the first.
    ok(&[
        "load",
        "--db",
        &db,
        "--keys",
        "1000",
        "--start",
        "20000",
        "--threads",
        "3",
        "--batch",
        "64",
    ]);
    assert_eq!(stats_json(&db)["entries"], 21000);
    assert_dataset_value(&db, 20_999);

    let text = ok(&["stats", "--db", &db]);
    assert!(text.contains("total") && text.contains("index bytes per data block"));
}

#[test]
fn sst_shows_a_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = db_arg(dir.path());
    ok(&["load", "--db", &db, "--keys", "5000"]);
    let table = std::fs::read_dir(dir.path().join("db"))
        .expect("list db")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "sst"))
        .expect("a table after load");
    let table = table.to_string_lossy().into_owned();
    let v: serde_json::Value =
        serde_json::from_str(&ok(&["sst", &table, "--json"])).expect("sst --json prints JSON");
    assert_eq!(v["properties"]["num_entries"], 5000);
    assert_eq!(v["blocks"]["data"]["count"], v["properties"]["data_blocks"]);
    assert_eq!(v["blocks"]["top_index"]["count"], 1);
    let text = ok(&["sst", &table]);
    assert!(
        text.contains("data blocks") && text.contains("top_index"),
        "{text}"
    );

    let o = run(&["sst", &dir.path().join("nope.sst").to_string_lossy()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with("shale: "), "{}", stderr(&o));
}

/// Bytes in the write-ahead logs (`*.log`) of the database in `dir`.
fn wal_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// A load killed with SIGKILL loses nothing of an earlier completed load, and
/// the database opens again.
#[test]
fn killed_load_keeps_earlier_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = db_arg(dir.path());
    ok(&["load", "--db", &db, "--keys", "20000"]);

    let mut child = shale()
        .args(["load", "--db", &db, "--start", "20000", "--keys", "5000000"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn load");
    std::thread::sleep(Duration::from_millis(1500));
    // Make sure the kill lands mid-load: the new write-ahead log has data.
    let deadline = Instant::now() + Duration::from_secs(30);
    while wal_bytes(&dir.path().join("db")) == 0 {
        assert!(Instant::now() < deadline, "the load never wrote its log");
        assert!(
            child.try_wait().expect("poll load").is_none(),
            "load exited"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // SIGKILL on unix.
    child.kill().expect("kill load");
    let status = child.wait().expect("wait for load");
    assert!(!status.success(), "the load finished before it was killed");

    for i in [0, 7, 12_345, 19_999] {
        assert_dataset_value(&db, i);
    }
    // The acknowledged part of the killed load was recovered from its log
    // (`stats` opens read-only: a read-write open writes the log into tables).
    ok(&["compact", "--db", &db]);
    let v = stats_json(&db);
    let entries = v["entries"].as_u64().expect("entries");
    assert!(entries > 20000, "{entries}");
}

/// Tables (`*.sst`) in the database directory `dir`.
fn tables(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sst"))
        .collect()
}

/// A load killed with SIGKILL while it flushes and compacts (a 256 KiB memtable
/// keeps both running all the time) leaves a database that opens, holds every
/// key of the earlier completed load, and compacts again.
#[test]
fn load_killed_during_compactions_keeps_earlier_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = db_arg(dir.path());
    ok(&[
        "load",
        "--db",
        &db,
        "--keys",
        "30000",
        "--write-buffer-size",
        "262144",
    ]);
    let before = tables(&dir.path().join("db"));

    let mut child = shale()
        .args([
            "load",
            "--db",
            &db,
            "--start",
            "30000",
            "--keys",
            "5000000",
            "--write-buffer-size",
            "262144",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn load");
    // Wait until background work replaced some of the tables of the first load
    // (a compaction finished), then a little more so that the next is running.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now = tables(&dir.path().join("db"));
        if before.iter().any(|t| !now.contains(t)) {
            break;
        }
        assert!(Instant::now() < deadline, "no compaction within a minute");
        assert!(
            child.try_wait().expect("poll load").is_none(),
            "load exited"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    child.kill().expect("kill load");
    let status = child.wait().expect("wait for load");
    assert!(!status.success(), "the load finished before it was killed");

    for i in [0, 1, 2_999, 17_777, 29_999] {
        assert_dataset_value(&db, i);
    }
    let v = stats_json(&db);
    assert!(v["entries"].as_u64().expect("entries") >= 30000);
    // The database still compacts: a manual compaction leaves everything in L6.
    let line = ok(&["compact", "--db", &db]);
    assert!(line.ends_with("in L6\n"), "{line}");
    for i in [5, 29_998] {
        assert_dataset_value(&db, i);
    }
}

/// The main job end to end on a tiny dataset: loads, runs the default five
/// cache sizes, writes valid results, and reuses the database the second time.
#[test]
fn bench_kvdb_runs_end_to_end_on_a_tiny_dataset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = db_arg(dir.path());
    let out = dir.path().join("report");
    let out_arg = out.to_string_lossy().into_owned();
    let args = [
        "bench",
        "kvdb",
        "--db",
        &db,
        "--keys",
        "20000",
        "--reads",
        "2000",
        "--threads",
        "2",
        "--direct-io",
        "false",
        "--device-limit-seconds",
        "0.3",
        "--out",
        &out_arg,
        "--json",
    ];
    let v: serde_json::Value = serde_json::from_str(&ok(&args)).expect("--json prints JSON");
    assert_eq!(v["keys"], 20000);
    // The device limit, where the file system takes O_DIRECT (not tmpfs), and
    // each run's Gets/s as a share of it.
    let limit = v["device_limit"]["reads_per_sec"].as_f64();
    if let Some(limit) = limit {
        assert!(limit > 0.0, "{}", v["device_limit"]);
        assert_eq!(v["device_limit"]["threads"], 2);
        assert_eq!(v["device_limit"]["page_bytes"], 4096);
    } else {
        assert!(v["device_limit"].is_null(), "{}", v["device_limit"]);
    }
    for r in v["runs"].as_array().expect("runs") {
        let share = r["device_limit_share"].as_f64();
        match (limit, r["ops_per_sec"].as_f64()) {
            (Some(l), Some(ops)) => {
                assert!(share.is_some_and(|s| (s - ops / l).abs() < 1e-9), "{r}")
            }
            _ => assert!(r["device_limit_share"].is_null(), "{r}"),
        }
    }
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 5, "the default five cache sizes");
    for r in runs {
        assert_eq!(r["gets"], 2000);
        assert_eq!(r["found"], 2000);
        for f in [
            "io_per_get",
            "physical_reads_per_get",
            "ops_per_sec",
            "p50_us",
            "p99_us",
        ] {
            assert!(r[f].as_f64().is_some_and(|x| x >= 0.0), "{f}: {r}");
        }
        assert!(r["phase"].as_u64().is_some_and(|p| (1..=3).contains(&p)));
    }
    let (ip1, ip2) = (v["ip1_bytes"].as_u64(), v["ip2_bytes"].as_u64());
    assert!(ip1.is_some() && ip2 > ip1, "{ip1:?} {ip2:?}");
    // IP1 and IP2 match what `stats` reports for the same database.
    let s = stats_json(&db);
    let index = s["index_partition_bytes"].as_u64().unwrap_or(0)
        + s["top_level_index_bytes"].as_u64().unwrap_or(0);
    let filters = s["filter_bytes_except_last_level"].as_u64().unwrap_or(0);
    assert_eq!(ip2, Some(filters + index));
    assert_eq!(
        ip1,
        Some(filters + s["top_level_index_bytes"].as_u64().unwrap_or(0))
    );
    let file: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("results.json")).expect("results.json"),
    )
    .expect("valid results.json");
    assert_eq!(file["runs"].as_array().map(Vec::len), Some(5));
    let csv = std::fs::read_to_string(out.join("results.csv")).expect("results.csv");
    assert_eq!(csv.lines().count(), 6, "{csv}");
    for plot in ["io_per_get", "hit_rates"] {
        let png = std::fs::read(out.join(format!("{plot}.png"))).expect("png plot");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{plot}.png is a PNG");
        let svg = std::fs::read_to_string(out.join(format!("{plot}.svg"))).expect("svg plot");
        assert!(svg.contains("<svg") && svg.contains("IP2"), "{plot}.svg");
    }
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert!(html.contains("<svg") && html.contains("IP1"), "report.html");

    // Reused, not reloaded; a mismatched request is a one-line error.
    let text = ok(&[
        "bench",
        "kvdb",
        "--db",
        &db,
        "--keys",
        "20000",
        "--reads",
        "500",
        "--cache",
        "1MiB",
        "--direct-io",
        "false",
        "--out",
        &out_arg,
    ]);
    assert!(
        text.contains("IP1") && text.contains("results in"),
        "{text}"
    );
    let o = run(&[
        "bench",
        "kvdb",
        "--db",
        &db,
        "--keys",
        "30000",
        "--reads",
        "500",
        "--direct-io",
        "false",
        "--out",
        &out_arg,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("another dataset"), "{}", stderr(&o));
    let o = run(&[
        "bench", "kvdb", "--db", &db, "--keys", "20000", "--cache", "lots", "--out", &out_arg,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("invalid cache size"), "{}", stderr(&o));

    let advice = ok(&["advise", "--db", &db]);
    assert!(
        advice.contains(&format!("IP1 = {} bytes", ip1.unwrap_or(0))),
        "{advice}"
    );
    assert!(
        advice.contains(&format!("IP2 = {} bytes", ip2.unwrap_or(0))),
        "{advice}"
    );
}

/// The numbers of a projection row: keys, then the cells after the source.
fn projection_row<'a>(text: &'a str, keys: &str, source: &str) -> Vec<&'a str> {
    let line = text
        .lines()
        .find(|l| {
            let l = l.trim_start();
            l.starts_with(keys) && l[keys.len()..].trim_start().starts_with(source)
        })
        .unwrap_or_else(|| panic!("no row {keys} {source} in:\n{text}"));
    let rest = line.trim_start()[keys.len()..].trim_start()[source.len()..].trim();
    rest.split_whitespace().collect()
}

/// A byte count printed in decimal units (`3.99 MB`) back to bytes.
fn decimal(number: &str, unit: &str) -> f64 {
    let x: f64 = number.parse().unwrap_or_else(|_| panic!("{number} {unit}"));
    x * match unit {
        "B" => 1.0,
        "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        _ => panic!("unit {unit}"),
    }
}

/// `advise --keys` on a small database: its own row, the model at its size
/// and at each requested count, the study's rows where it published figures,
/// and usage errors for bad counts.
#[test]
fn advise_projects_to_other_key_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = db_arg(dir.path());
    ok(&["load", "--db", &db, "--keys", "20000"]);
    let text = ok(&["advise", "--db", &db, "--keys", "20M,200M,2000000000"]);
    // The advice of the existing flags comes first, unchanged.
    assert!(text.starts_with("database: "), "{text}");
    assert!(text.contains("IP1 = ") && text.contains("advised block cache"));
    // All 20,000 keys are in L6 after the load, which has no filters: the
    // filter cost comes from a sample table of the database's keys.
    assert!(
        text.contains("filter bytes per key, measured on a table of 20,000"),
        "{text}"
    );
    let own = projection_row(&text, "20,000", "this database");
    assert_eq!(own[3], "0.0%", "no byte above L6: {own:?}");
    projection_row(&text, "20,000", "model");
    // Cells: DB 0-1, tables 2, above L6 3, filters* 4-5, index 6-7, IP1 8-9,
    // IP1 % 10, IP2 11-12, IP2 % 13, cache 14-15.
    let mut last_db = 0.0;
    for keys in ["20,000,000", "200,000,000", "2,000,000,000"] {
        let r = projection_row(&text, keys, "model");
        assert_eq!(r.len(), 16, "{keys}: {r:?}");
        let db_bytes = decimal(r[0], r[1]);
        let (ip1, ip2) = (decimal(r[8], r[9]), decimal(r[11], r[12]));
        assert!(db_bytes > last_db * 9.0, "{keys}: {r:?}");
        assert!(
            0.0 < ip1 && ip1 < ip2 && ip2 < db_bytes * 0.01,
            "{keys}: {r:?}"
        );
        let pct = |cell: &str| -> f64 { cell.trim_end_matches('%').parse().expect("percent") };
        // Percentages of the projected database, to the precision of the
        // printed figures (three digits, so within 1%).
        for (cell, bytes) in [(r[10], ip1), (r[13], ip2)] {
            let want = 100.0 * bytes / db_bytes;
            assert!((pct(cell) - want).abs() <= want * 0.01 + 0.0006, "{r:?}");
        }
        // The default target of 1 I/O per Get advises IP2.
        assert_eq!(&r[14..16], &r[11..13], "{r:?}");
        last_db = db_bytes;
    }
    // The study's figures follow the counts it published them for.
    let study = projection_row(&text, "200,000,000", "study (Pebble)");
    assert_eq!(&study[..3], &["22", "GB", "1,418"], "{study:?}");
    assert!(
        text.contains("~207 MB") && text.contains("224 GB"),
        "{text}"
    );
    assert!(!text.contains("20,000,000  study"), "{text}");
    assert!(text.contains("levels at 2,000,000,000 keys: L2 "), "{text}");

    // A target of 2 I/Os per Get advises IP1 in every model row.
    let text = ok(&["advise", "--db", &db, "--keys", "2B", "--target-io", "2"]);
    let r = projection_row(&text, "2,000,000,000", "model");
    assert_eq!(&r[14..16], &r[8..10], "{r:?}");

    for bad in ["0", "2X", "1.5", "", "20M,,x"] {
        let o = run(&["advise", "--db", &db, "--keys", bad]);
        assert_eq!(o.status.code(), Some(2), "--keys {bad:?}: {}", stderr(&o));
    }
}

/// Path-scheme keys with a Zipfian read distribution and negative reads.
#[test]
fn bench_kvdb_path_scheme_zipf_and_missing_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = db_arg(dir.path());
    let out = dir.path().join("report").to_string_lossy().into_owned();
    let reads = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "bench",
            "kvdb",
            "--db",
            &db,
            "--keys",
            "5000",
            "--reads",
            "4000",
            "--scheme",
            "path",
            "--distribution",
            "zipf",
            "--missing",
            "0.25",
            "--cache",
            "1MiB",
            "--out",
            &out,
            "--json",
        ];
        args.extend_from_slice(extra);
        serde_json::from_str(&ok(&args)).expect("json")
    };
    let v = reads(&["--direct-io", "false"]);
    assert_eq!(v["scheme"], "path");
    assert_eq!(v["distribution"], "zipf:0.99");
    let first = &v["runs"][0];
    assert_eq!(first["gets"], 4000);
    let found = first["found"].as_u64().expect("found");
    // A quarter of the Gets ask for keys never loaded (binomial, 4000 draws).
    assert!((2800..=3200).contains(&found), "found {found}");
    // The same reads through one multi_get_each per thread, 16 reads in
    // flight (each value checked against the dataset by the bench).
    let v = reads(&["--threads", "2", "--batch", "16", "--stream"]);
    assert_eq!(v["stream"], true);
    assert_eq!(v["batch"], 16);
    let streamed = &v["runs"][0];
    assert_eq!(streamed["gets"], 4000);
    let found = streamed["found"].as_u64().expect("found");
    assert!((2800..=3200).contains(&found), "found {found}");
    // The same directory is not a hash-scheme dataset.
    let o = run(&[
        "bench",
        "kvdb",
        "--db",
        &db,
        "--keys",
        "5000",
        "--reads",
        "100",
        "--direct-io",
        "false",
        "--out",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("another dataset"), "{}", stderr(&o));
    let o = run(&[
        "bench",
        "kvdb",
        "--db",
        &db,
        "--distribution",
        "pareto",
        "--out",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--distribution pareto"),
        "{}",
        stderr(&o)
    );
}

/// `bench compare` with shale's own harness (the peers' harnesses are built
/// by `scripts/peers.sh` and checked by `.ci/run`): the load, the reads at
/// two cache sizes, the report files, the reuse of the loaded dataset, and a
/// data directory that holds something else.
#[test]
fn bench_compare_runs_shale_through_its_harness_and_refuses_foreign_data() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let out = tmp.path().join("report");
    let (data_s, out_s) = (
        data.to_string_lossy().into_owned(),
        out.to_string_lossy().into_owned(),
    );
    let args = [
        "bench",
        "compare",
        "--engines",
        "shale,pebble",
        "--keys",
        "5000",
        "--reads",
        "2000",
        "--cache",
        "1%,4MiB",
        "--threads",
        "2",
        "--missing",
        "0.1",
        "--data-dir",
        &data_s,
        "--out",
        &out_s,
        "--json",
    ];
    let text = ok(&args);
    let r: serde_json::Value = serde_json::from_str(&text).expect("compare.json");
    let engines = r["engines"].as_array().expect("engines");
    assert_eq!(engines.len(), 2);
    let shale = &engines[0];
    assert_eq!(shale["status"], "ok", "{shale}");
    assert_eq!(shale["load"]["shape"]["composition"]["entries"], 5000);
    let runs = shale["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2);
    for run in runs {
        let gets = run["run"]["gets"].as_u64().expect("gets");
        let found = run["run"]["found"].as_u64().expect("found");
        assert_eq!(gets, 2000);
        assert!(
            found < gets && found > gets * 8 / 10,
            "missing share: {found}"
        );
        assert!(run["reply"]["blocks"]["data"]["physical_reads"].as_u64() > Some(0));
    }
    assert_eq!(runs[1]["run"]["cache_bytes"], 4 << 20);
    // Pebble is reported, not fatal, whether its harness is built or not.
    assert!(engines[1]["status"].is_string());
    for name in [
        "compare.json",
        "compare.csv",
        "compare.html",
        "compare_ops.png",
    ] {
        assert!(
            out.join(name).metadata().is_ok_and(|m| m.len() > 0),
            "{name}"
        );
    }

    // A second run reuses the database (no load) and reads the same keys.
    let again: serde_json::Value = serde_json::from_str(&ok(&args)).expect("json");
    assert!(again["engines"][0]["load"].is_null());
    assert_eq!(
        again["engines"][0]["runs"][0]["run"]["found"],
        runs[0]["run"]["found"]
    );

    // A directory with files of something else is refused, with the reason.
    let foreign = data.join("compare-shale-default-6000-hash-v110");
    std::fs::create_dir_all(&foreign).expect("mkdir");
    std::fs::write(foreign.join("000001.log"), b"not ours").expect("write");
    let mut args6 = args;
    args6[5] = "6000";
    let r: serde_json::Value = serde_json::from_str(&ok(&args6)).expect("json");
    let status = r["engines"][0]["status"].as_str().expect("status");
    assert!(status.contains("no shale-dataset.json"), "{status}");
    assert!(foreign.join("000001.log").exists(), "nothing deleted");
}

#[test]
fn an_interrupted_bench_keeps_its_results_and_samples() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = db_arg(dir.path());
    let out = dir.path().join("report");
    ok(&["load", "--db", &db, "--keys", "20000"]);
    let mut child = shale()
        .args(["bench", "kvdb", "--db", &db, "--keys", "20000"])
        .args(["--reads", "4000000000", "--cache", "1MiB,2MiB"])
        .args(["--sample-interval", "0.1", "--device-limit-seconds", "0"])
        .arg("--out")
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bench");
    // Samples appear once the measured runs have started (and with them the
    // Ctrl-C handler): wait for two.
    let samples = out.join("samples.csv");
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(&samples).map_or(0, |t| t.lines().count()) < 3 {
        assert!(Instant::now() < deadline, "no samples written");
        assert!(child.try_wait().expect("poll").is_none(), "bench exited");
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(status.success());
    let o = child.wait_with_output().expect("wait");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("interrupted"), "{}", stdout(&o));
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).expect("results"))
            .expect("JSON");
    let runs = results["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1, "the second run never started");
    let gets = runs[0]["gets"].as_u64().expect("gets");
    assert!(gets > 0 && gets < 4_000_000_000, "{gets}");
    let series: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("samples.json")).expect("samples"))
            .expect("JSON");
    assert!(series["samples"].as_array().expect("samples").len() >= 2);
}

/// A traced `bench kvdb` run, replayed by `simulate` at the sizes the bench
/// measured (one reader thread: the replay is exact), by `advise --trace`,
/// and refused where it must be.
#[test]
fn a_traced_run_simulates_its_own_sweep() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = db_arg(dir.path());
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let (trace, out, sim) = (path("t.trc"), path("report"), path("sim"));
    ok(&[
        "bench",
        "kvdb",
        "--db",
        &db,
        "--keys",
        "30000",
        "--reads",
        "3000",
        "--threads",
        "1",
        "--direct-io",
        "false",
        "--device-limit-seconds",
        "0",
        "--cache",
        "4KiB..2MiB/4",
        "--trace",
        &trace,
        "--out",
        &out,
    ]);
    let measured = format!("{out}/results.json");
    let text = ok(&[
        "simulate",
        "--trace",
        &trace,
        "--measured",
        &measured,
        "--out",
        &sim,
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&text).expect("--json prints JSON");
    let sizes = v["sizes"].as_array().expect("sizes");
    assert_eq!(sizes.len(), 4);
    assert_eq!(v["gets"], 3000);
    for s in sizes {
        let (sim, meas) = (
            s["misses_per_get"].as_f64(),
            s["measured_misses_per_get"].as_f64(),
        );
        assert_eq!(sim, meas, "one thread: the replay is the run ({s})");
    }
    for f in [
        "simulate.json",
        "simulate.csv",
        "simulate.svg",
        "simulate.png",
    ] {
        assert!(dir.path().join("sim").join(f).exists(), "{f}");
    }
    let advice = ok(&["advise", "--trace", &trace, "--target", "1.5"]);
    assert!(
        advice.contains("on the access pattern of the trace"),
        "{advice}"
    );

    // A damaged trace names the offset; an empty size list is a usage error.
    let bytes = std::fs::read(&trace).expect("read");
    let damaged = path("damaged.trc");
    let mut b = bytes.clone();
    let at = b.len() / 2;
    b[at] ^= 0x55;
    std::fs::write(&damaged, &b).expect("write");
    let o = run(&["simulate", "--trace", &damaged, "--out", &sim]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("damaged at offset"), "{}", stderr(&o));
    std::fs::write(&damaged, &bytes[..bytes.len() - 3]).expect("write");
    let o = run(&["simulate", "--trace", &damaged, "--out", &sim]);
    assert!(stderr(&o).contains("truncated at offset"), "{}", stderr(&o));
    let o = run(&["simulate", "--trace", &trace, "--cache", ",", "--out", &sim]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = run(&["simulate", "--trace", &db, "--out", &sim]);
    assert_eq!(o.status.code(), Some(1));

    // Another database's tables: refused.
    let other = tempfile::tempdir().expect("tempdir");
    let other_db = db_arg(other.path());
    ok(&["load", "--db", &other_db, "--keys", "1000"]);
    let o = run(&["advise", "--db", &other_db, "--trace", &trace]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("other tables"), "{}", stderr(&o));
}
