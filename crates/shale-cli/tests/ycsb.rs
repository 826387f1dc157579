//! End-to-end tests of `shale bench ycsb` on tiny databases.

mod common;
use common::run;

fn json(args: &[&str]) -> serde_json::Value {
    let o = run(args);
    assert!(
        o.status.success(),
        "shale {args:?} failed with {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("--json prints JSON")
}

fn count(run: &serde_json::Value, kind: &str) -> u64 {
    run["ops"][kind]["count"].as_u64().unwrap_or(0)
}

/// Every workload on one 2,000-record database: the operation counts add up
/// to the operations asked, and each kind's count is within a bound of its
/// share that is over 8 standard deviations wide.
#[test]
fn every_workload_runs_its_mix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("ycsb");
    let db = db.to_str().expect("utf-8 path");
    let ops = 2000u64;
    let mixes: [(&str, &[(&str, f64)]); 6] = [
        ("a", &[("read", 0.5), ("update", 0.5)]),
        ("b", &[("read", 0.95), ("update", 0.05)]),
        ("c", &[("read", 1.0)]),
        ("d", &[("read", 0.95), ("insert", 0.05)]),
        ("e", &[("scan", 0.95), ("insert", 0.05)]),
        ("f", &[("read", 0.5), ("read-modify-write", 0.5)]),
    ];
    for (workload, mix) in mixes {
        let v = json(&[
            "bench",
            "ycsb",
            "--workload",
            workload,
            "--db",
            db,
            "--records",
            "2000",
            "--operations",
            "2000",
            "--threads",
            "2",
            "--json",
        ]);
        assert_eq!(v["workload"], workload);
        let runs = v["runs"].as_array().expect("runs");
        assert_eq!(runs.len(), 1, "{workload}");
        let r = &runs[0];
        assert_eq!(r["operations"].as_u64(), Some(ops), "{workload}");
        assert_eq!(r["interrupted"], false);
        let total: u64 = r["ops"]
            .as_object()
            .expect("ops")
            .values()
            .map(|o| o["count"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(total, ops, "{workload}: {}", r["ops"]);
        for &(kind, share) in mix {
            let got = count(r, kind) as f64;
            let want = share * ops as f64;
            let sd = (ops as f64 * share * (1.0 - share)).sqrt();
            assert!(
                (got - want).abs() <= 8.0 * sd + 1.0,
                "{workload} {kind}: {got} vs {want}"
            );
            let o = &r["ops"][kind];
            assert!(o["p50_us"].as_f64() <= o["p99_us"].as_f64(), "{o}");
            assert!(o["mean_us"].as_f64().is_some_and(|m| m > 0.0), "{o}");
        }
        assert_eq!(r["settings"]["preset"], "default");
        // Block reads per Get: counted where the mix has Gets (workload E
        // only scans and inserts).
        let reads = r["block_reads_per_get"].as_f64();
        if workload == "e" {
            assert!(r["block_reads_per_get"].is_null(), "{workload}: {r}");
        } else {
            assert!(
                reads.is_some_and(|x| (0.0..10.0).contains(&x)),
                "{workload}: {r}"
            );
        }
    }
    // The database is reused; another record count is refused, by name.
    let o = run(&[
        "bench",
        "ycsb",
        "--db",
        db,
        "--records",
        "3000",
        "--operations",
        "10",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("2000 records") && err.contains("--records 3000"),
        "{err}"
    );
}

#[test]
fn unknown_workload_is_a_usage_error() {
    let o = run(&["bench", "ycsb", "--workload", "g"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("a, b, c, d, e, f"), "{err}");
    let o = run(&["bench", "ycsb", "--presets", "turbo"]);
    assert_eq!(o.status.code(), Some(2));
}

/// All four presets once: one row per preset in the summary, each run with
/// its scaled cache and its filter layout's database.
#[test]
fn all_presets_make_one_row_each() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("ycsb");
    let v = json(&[
        "bench",
        "ycsb",
        "--db",
        db.to_str().expect("utf-8 path"),
        "--records",
        "2000",
        "--operations",
        "1000",
        "--threads",
        "2",
        "--presets",
        "all",
        "--repeat",
        "1",
        "--json",
    ]);
    let summary = v["summary"].as_array().expect("summary");
    let names: Vec<&str> = summary
        .iter()
        .map(|s| s["preset"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        ["baseline", "readopt-512mb", "readopt-1gb", "mild-pressure"]
    );
    for s in summary {
        assert_eq!(s["runs"], 1);
        assert!(s["ops_per_sec"]["mean"].as_f64().is_some_and(|x| x > 0.0));
        assert!(s["read_mean_us"]["mean"].as_f64().is_some());
        assert!(s["update_p99_us"]["mean"].as_f64().is_some());
    }
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 4);
    // 2,000 records of 1,000 bytes: caches of 2.2%, 4.4%, 8.8% and 4.4%.
    let caches: Vec<u64> = runs
        .iter()
        .map(|r| r["settings"]["block_cache_bytes"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(caches, [44_000, 88_000, 176_000, 88_000]);
    assert_eq!(runs[0]["settings"]["filters"], "nofilter");
    assert_eq!(runs[1]["settings"]["filters"], "bloom10");
    assert!(runs[3]["settings"]["compaction_rate_limit"]
        .as_u64()
        .is_some());
    assert!(db.join("nofilter").join("CURRENT").exists());
    assert!(db.join("bloom10").join("CURRENT").exists());
}

/// RocksDB runs only under presets.
#[test]
fn rocksdb_needs_a_preset() {
    let o = run(&["bench", "ycsb", "--engines", "rocksdb", "--records", "100"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--preset"), "{err}");
}

/// One preset on every engine, with the same operation mix. Needs the
/// peers' harnesses (`scripts/peers.sh`), so `cargo test` leaves it out;
/// `.ci/run` builds them, then runs it with `--ignored`.
#[test]
#[ignore = "needs the peers' harnesses (scripts/peers.sh); .ci/run runs it"]
fn every_peer_runs_next_to_shale() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engines = ["shale", "rocksdb", "pebble", "leveldb"];
    let v = json(&[
        "bench",
        "ycsb",
        "--engines",
        &engines.join(","),
        "--preset",
        "readopt-512mb",
        "--workload",
        "f",
        "--db",
        dir.path().join("ycsb").to_str().expect("utf-8 path"),
        "--records",
        "2000",
        "--operations",
        "1000",
        "--threads",
        "2",
        "--json",
    ]);
    let runs = v["runs"].as_array().expect("runs");
    let ran: Vec<&str> = runs.iter().filter_map(|r| r["engine"].as_str()).collect();
    assert_eq!(ran, engines);
    // One thread's generator is the same in every engine; with two threads
    // the mix is the same in total.
    for r in runs {
        assert_eq!(r["operations"], 1000);
        assert_eq!(count(r, "read") + count(r, "read-modify-write"), 1000);
        assert_eq!(count(r, "read"), count(&runs[0], "read"), "{r}");
        // Every engine but Pebble counts the blocks its Gets read.
        let reads = r["block_reads_per_get"].as_f64();
        if r["engine"] == "pebble" {
            assert!(reads.is_none(), "{r}");
        } else {
            assert!(reads.is_some_and(|x| (0.0..10.0).contains(&x)), "{r}");
        }
    }
    // LevelDB keeps no stall or compaction-debt figures: null, not zero.
    let leveldb = &runs[3];
    assert!(leveldb["stall_count"].is_null() && leveldb["pending_compaction_bytes_max"].is_null());
    assert!(runs[1]["stall_count"].is_u64(), "{}", runs[1]);
    for peer in &engines[1..] {
        assert!(dir
            .path()
            .join(format!("ycsb/{peer}-bloom10/CURRENT"))
            .exists());
        assert!(dir
            .path()
            .join(format!("ycsb/{peer}-bloom10.json"))
            .is_file());
    }
}

/// A peer whose harness does not serve the ycsb op is named, with the op
/// and the command that builds one that does, before anything is loaded.
#[test]
fn a_peer_without_the_ycsb_op_is_refused_before_any_work() {
    let dir = tempfile::tempdir().expect("tempdir");
    let harness = common::base_ops_harness(dir.path(), "leveldb");
    let db = dir.path().join("ycsb");
    let o = common::shale()
        .env("SHALE_LEVELDB_HARNESS", &harness)
        .args([
            "bench",
            "ycsb",
            "--engines",
            "shale,leveldb",
            "--preset",
            "baseline",
            "--records",
            "100",
            "--operations",
            "100",
            "--db",
            db.to_str().expect("utf-8 path"),
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run shale");
    assert_eq!(o.status.code(), Some(1));
    let err = common::stderr(&o);
    assert!(
        err.contains("the leveldb harness")
            && err.contains("does not serve the ycsb op")
            && err.contains("scripts/peers.sh leveldb"),
        "{err}"
    );
    assert!(!db.exists(), "nothing was loaded");
}
