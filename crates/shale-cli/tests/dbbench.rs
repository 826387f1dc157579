//! End-to-end tests of `shale bench db` and `shale bench db-sweep` on tiny
//! databases, running the built binary.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

mod common;
use common::{ok, run, shale, stderr};

fn path(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The results of a `--json` run, by position.
fn results(json: &str) -> Vec<Value> {
    let doc: Value = serde_json::from_str(json).expect("bench db --json prints JSON");
    assert_eq!(doc["engine"], "shale");
    doc["results"].as_array().expect("results").clone()
}

fn u(v: &Value, field: &str) -> u64 {
    v[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} of {v}"))
}

#[test]
fn every_benchmark_runs_with_sane_found_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = path(&dir.path().join("db"));
    let out = ok(&[
        "bench",
        "db",
        "--db",
        &db,
        "--num=2000",
        "--reads",
        "1000",
        "--threads=2",
        "--write_buffer_size=65536",
        "--benchmarks=fillseq,readrandom,readmissing,readhot,seekrandom,readseq,readreverse,\
         overwrite,readwhilewriting,readrandomwriterandom,deleterandom,compact,fillsync,\
         fillrandom,stats",
        "--histogram",
        "--json",
    ]);
    let r = results(&out);
    let names: Vec<&str> = r
        .iter()
        .map(|x| x["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        [
            "fillseq",
            "readrandom",
            "readmissing",
            "readhot",
            "seekrandom",
            "readseq",
            "readreverse",
            "overwrite",
            "readwhilewriting",
            "readrandomwriterandom",
            "deleterandom",
            "compact",
            "fillsync",
            "fillrandom",
            "stats"
        ]
    );
    // Each of the 2 threads does the whole count, as in db_bench.
    assert_eq!(u(&r[0], "ops"), 4000);
    // After fillseq every key is there: readrandom, readhot and seekrandom
    // find all, readmissing none.
    for i in [1, 3, 4] {
        assert_eq!(u(&r[i], "found"), 2000, "{}", r[i]);
        assert_eq!(u(&r[i], "reads"), 2000, "{}", r[i]);
        let msg = r[i]["message"].as_str().expect("message");
        assert_eq!(msg, "(2000 of 2000 found)");
    }
    assert_eq!(u(&r[2], "found"), 0);
    assert_eq!(r[2]["message"], "(0 of 2000 found)");
    assert!(r[2]["mb_per_sec"].is_null(), "nothing read, no MB/s");
    // Scans stop at --reads entries per thread.
    assert_eq!(u(&r[5], "ops"), 2000);
    assert_eq!(u(&r[6], "ops"), 2000);
    // Overwrites and the writer keep every key present.
    assert_eq!(u(&r[8], "found"), u(&r[8], "reads"));
    assert!(r[8]["writes"].as_u64().is_some());
    assert_eq!(u(&r[9], "ops"), 2000);
    assert_eq!(u(&r[9], "found"), u(&r[9], "reads"));
    assert_eq!(u(&r[10], "ops"), 4000);
    assert_eq!(u(&r[11], "ops"), 1);
    // fillsync writes num / 1000 entries per thread.
    assert_eq!(u(&r[12], "ops"), 4);
    assert!(r[14]["stats"]["levels"].is_array(), "{}", r[14]);
    // Every operation was recorded by kind.
    assert_eq!(u(&r[4]["kinds"]["seek"], "count"), 2000);
    assert_eq!(u(&r[10]["kinds"]["delete"], "count"), 4000);
    assert!(u(&r[9]["kinds"]["read"], "count") + u(&r[9]["kinds"]["write"], "count") == 2000);
    for x in &r[..14] {
        assert!(x["micros_per_op"].as_f64().is_some_and(|m| m > 0.0), "{x}");
    }
}

/// As db_bench, operations are timed one by one only for `--histogram`:
/// without it the results carry no latencies, and the counts are the same.
#[test]
fn latencies_only_with_histogram() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = path(&dir.path().join("db"));
    for timed in [false, true] {
        let out = ok(&[
            "bench",
            "db",
            "--db",
            &db,
            "--num=2000",
            "--benchmarks=fillseq,readrandom",
            &format!("--histogram={timed}"),
            "--json",
        ]);
        let r = results(&out);
        assert_eq!((u(&r[0], "ops"), u(&r[1], "found")), (2000, 2000));
        for x in &r {
            let kinds = x["kinds"].as_object().expect("kinds");
            if timed {
                assert!(x["latency"]["p99"].as_f64().is_some_and(|p| p > 0.0), "{x}");
                assert_eq!(kinds.len(), 1, "{x}");
            } else {
                assert!(x["latency"].is_null() && kinds.is_empty(), "{x}");
            }
        }
    }
}

#[test]
fn text_lines_have_db_bench_columns_and_fillrandom_leaves_about_63_percent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = path(&dir.path().join("db"));
    let out = ok(&[
        "bench",
        "db",
        "--db",
        &db,
        "--num",
        "20000",
        "--benchmarks",
        "fillrandom,readrandom",
        "--histogram",
    ]);
    let line = out
        .lines()
        .find(|l| l.starts_with("readrandom"))
        .unwrap_or_else(|| panic!("no readrandom line in {out}"));
    // `readrandom   :       4.213 micros/op 237361 ops/sec;   26.3 MB/s (N of 20000 found)`
    assert_eq!(&line[..15], "readrandom   : ");
    assert_eq!(&line[26..37], " micros/op ");
    assert!(line[15..26].trim().parse::<f64>().is_ok(), "{line}");
    let found: u64 = line
        .rsplit_once('(')
        .and_then(|(_, m)| m.strip_suffix(" of 20000 found)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("found message in {line}"));
    // 1 - 1/e = 63.2% of the keys exist; the count is deterministic for the
    // seed, and 55%..71% is more than 20 standard deviations wide.
    assert!((11_000..=14_200).contains(&found), "{line}");
    assert!(line.contains(" MB/s ("), "{line}");
    assert!(out.contains("Microseconds per read:"), "{out}");
    assert!(out.contains("Percentiles: P50: "), "{out}");
    // --use_existing_db keeps the data and skips fills.
    let again = ok(&[
        "bench",
        "db",
        "--db",
        &db,
        "--num",
        "20000",
        "--reads=100",
        "--use_existing_db",
        "--benchmarks",
        "fillseq,readhot",
    ]);
    assert!(
        again.contains("fillseq      : skipped (--use_existing_db is true)"),
        "{again}"
    );
    assert!(again.contains("readhot      : "), "{again}");
}

/// `--mmap_read` reads the same keys through mappings: a cache of 1,000
/// bytes holds no block, so every read is served from the mapped file. With
/// `--zoned` it is refused before any device is created.
#[test]
fn mapped_reads_find_what_preads_find() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = path(&dir.path().join("db"));
    let fill = ok(&[
        "bench",
        "db",
        "--db",
        &db,
        "--num=3000",
        "--benchmarks=fillrandom",
        "--write_buffer_size=65536",
        "--json",
    ]);
    assert_eq!(u(&results(&fill)[0], "ops"), 3000);
    let reads = |mmap: &str| {
        let out = ok(&[
            "bench",
            "db",
            "--db",
            &db,
            "--num=3000",
            "--reads=2000",
            "--use_existing_db",
            "--cache_size=1000",
            "--benchmarks=readrandom,readhot,seekrandom,readseq",
            &format!("--mmap_read={mmap}"),
            "--json",
        ]);
        results(&out)
    };
    let (plain, mapped) = (reads("false"), reads("true"));
    for (i, (p, m)) in plain.iter().zip(&mapped).enumerate() {
        assert_eq!(
            (u(p, "found"), u(p, "ops")),
            (u(m, "found"), u(m, "ops")),
            "{p} / {m}"
        );
        if i < 3 {
            assert!(u(&m["engine"], "block_cache_misses") >= 1000, "{m}");
        }
    }
    assert!(u(&mapped[0], "found") > 1000, "{}", mapped[0]);
    let device = path(&dir.path().join("zoned.img"));
    let o = run(&[
        "bench",
        "db",
        "--zoned",
        &device,
        "--mmap_read",
        "--num=100",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--mmap_read needs the regular file system"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("zoned.img").exists(), "nothing created");
}

#[test]
fn usage_errors_exit_2_and_list_the_choices() {
    let o = run(&["bench", "db", "--benchmarks", "fillseq,nosuchbench"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("nosuchbench"), "{e}");
    for name in ["readrandomwriterandom", "seekrandom", "readhot", "stats"] {
        assert!(e.contains(name), "{e}");
    }
    let o = run(&["bench", "db", "--compression_type=zstd"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("lz4"), "{}", stderr(&o));
    let o = run(&["bench", "db", "--num", "100000", "--key_size", "4"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--key_size 5"), "{}", stderr(&o));
    let o = run(&["bench", "db-sweep", "--param", "block_size"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("open_files"), "{}", stderr(&o));
}

#[test]
fn existing_databases_of_other_keys_and_other_directories_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kv = path(&dir.path().join("kv"));
    ok(&["load", "--db", &kv, "--keys", "100"]);
    let o = run(&[
        "bench",
        "db",
        "--db",
        &kv,
        "--use_existing_db",
        "--benchmarks",
        "readrandom",
        "--num",
        "100",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("does not hold db_bench keys"), "{e}");
    let o = run(&[
        "bench",
        "db",
        "--db",
        &path(&dir.path().join("none")),
        "--use_existing_db=1",
        "--benchmarks",
        "readrandom",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("holds no database"), "{}", stderr(&o));
    // A directory with other files is never removed.
    let other = dir.path().join("other");
    std::fs::create_dir(&other).expect("mkdir");
    std::fs::write(other.join("thesis.tex"), "precious").expect("write");
    let o = run(&[
        "bench",
        "db",
        "--db",
        &path(&other),
        "--benchmarks",
        "fillseq",
        "--num",
        "10",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("thesis.tex"), "{}", stderr(&o));
    assert!(other.join("thesis.tex").exists());
}

#[test]
fn a_tiny_sweep_writes_a_row_per_point_and_benchmark() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = path(&dir.path().join("db"));
    let out_dir = dir.path().join("out");
    let text = ok(&[
        "bench",
        "db-sweep",
        "--param",
        "open_files",
        "--values",
        "0,10,1000",
        "--num",
        "3000",
        "--reads",
        "300",
        "--write_buffer_size",
        "32768",
        "--db",
        &db,
        "--out",
        &path(&out_dir),
    ]);
    assert!(text.contains("fillrandom   : "), "{text}");
    for stem in ["sweep_micros", "sweep_table_cache", "sweep_block_cache"] {
        let svg = std::fs::read_to_string(out_dir.join(format!("{stem}.svg"))).expect("svg");
        assert!(svg.contains("shale readrandom"), "{stem}");
        assert!(svg.contains("open_files = 0 has no place"), "{stem}");
        let png = std::fs::read(out_dir.join(format!("{stem}.png"))).expect("png");
        assert!(png.starts_with(b"\x89PNG"), "{stem}");
    }
    let csv = std::fs::read_to_string(out_dir.join("sweep.csv")).expect("sweep.csv");
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 1 + 3 * 3, "{csv}");
    assert!(
        rows[0].starts_with("engine,param,value,benchmark,"),
        "{csv}"
    );
    let json: Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("sweep.json")).expect("sweep.json"),
    )
    .expect("JSON");
    let points = json["points"].as_array().expect("points");
    assert_eq!(points.len(), 9);
    let benches: Vec<&str> = points[..3]
        .iter()
        .map(|p| p["benchmark"].as_str().expect("benchmark"))
        .collect();
    assert_eq!(benches, ["readrandom", "readhot", "seekrandom"]);
    for p in points {
        let rate = p["table_cache_hit_rate"].as_f64();
        assert!(rate.is_none_or(|r| (0.0..=1.0).contains(&r)), "{p}");
        assert!(p["block_cache_hit_rate"].is_number(), "{p}");
    }
    // The fill is settled into tables: every readrandom consults the table
    // cache, and a fresh open misses at least once.
    for p in points.iter().filter(|p| p["benchmark"] == "readrandom") {
        let hits = p["table_cache_hits"].as_u64().expect("hits");
        let misses = p["table_cache_misses"].as_u64().expect("misses");
        assert!(misses >= 1 && hits + misses >= 300, "{p}");
    }
    // Reusing the database: no fill.
    let json_out = ok(&[
        "bench",
        "db-sweep",
        "--param",
        "cache_size",
        "--values",
        "1000,1000000",
        "--num",
        "3000",
        "--reads",
        "100",
        "--benchmarks",
        "readmissing",
        "--db",
        &db,
        "--use_existing_db",
        "--out",
        &path(&out_dir),
        "--json",
    ]);
    let doc: Value = serde_json::from_str(&json_out).expect("--json prints JSON");
    assert!(doc["fill"].is_null());
    assert_eq!(doc["points"].as_array().map(Vec::len), Some(2));
    assert_eq!(doc["points"][0]["found"], 0);
}

#[test]
fn ctrl_c_prints_the_results_so_far() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = path(&dir.path().join("db"));
    let out_dir = dir.path().join("out");
    let mut child = shale()
        .args([
            "bench",
            "db",
            "--db",
            &db,
            "--num",
            "1000000000",
            "--benchmarks",
            "fillseq,readrandom",
            "--out",
            &path(&out_dir),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    // The header and its rule come just before the first benchmark starts;
    // the interrupt goes a moment later, into fillseq (of a billion keys),
    // not between the header and its start (a loaded machine once did that).
    for _ in 0..2 {
        lines.next().expect("a line").expect("utf-8");
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let rest: Vec<String> = lines.map(|l| l.expect("utf-8")).collect();
    let code = child.wait().expect("wait");
    assert!(code.success(), "{code:?}: {rest:?}");
    assert!(rest[0].starts_with("fillseq      : "), "{rest:?}");
    assert!(
        rest.iter().all(|l| !l.starts_with("readrandom")),
        "{rest:?}"
    );
    assert!(
        rest.iter().any(|l| l.starts_with("interrupted")),
        "{rest:?}"
    );
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("results.json")).expect("results.json"),
    )
    .expect("JSON");
    assert_eq!(doc["interrupted"], true);
    assert_eq!(doc["results"][0]["interrupted"], true);
    assert!(u(&doc["results"][0], "ops") < 1_000_000_000);
}

/// The sweep on shale and every peer. Needs the peers' harnesses
/// (`scripts/peers.sh`), so `cargo test` leaves it out; `.ci/run` builds
/// them, then runs it with `--ignored`.
#[test]
#[ignore = "needs the peers' harnesses (scripts/peers.sh); .ci/run runs it"]
fn a_sweep_on_every_peer_reads_the_same_keys_as_on_shale() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = path(&dir.path().join("db"));
    let out_dir = dir.path().join("out");
    ok(&[
        "bench",
        "db-sweep",
        "--engines",
        "shale,leveldb,rocksdb,pebble",
        "--param",
        "open_files",
        "--values",
        "0,100",
        "--num",
        "3000",
        "--reads",
        "300",
        "--db",
        &db,
        "--out",
        &path(&out_dir),
    ]);
    for peer in ["leveldb", "rocksdb", "pebble"] {
        assert!(dir
            .path()
            .join(format!("db-{peer}"))
            .join("CURRENT")
            .is_file());
    }
    let json: Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("sweep.json")).expect("sweep.json"),
    )
    .expect("JSON");
    let points = json["points"].as_array().expect("points");
    assert_eq!(points.len(), 4 * 2 * 3, "{json}");
    assert_eq!(json["fills"].as_array().map(Vec::len), Some(4));
    for p in points.iter().filter(|p| p["engine"] != "shale") {
        // The same seeds draw the same keys from the same fill.
        let twin = points
            .iter()
            .find(|q| {
                q["engine"] == "shale"
                    && q["value"] == p["value"]
                    && q["benchmark"] == p["benchmark"]
            })
            .expect("shale's point");
        assert_eq!(p["found"], twin["found"], "{p} vs {twin}");
        // LevelDB's table cache cannot be counted from outside but for its
        // misses (the tables its Env sees opened).
        if p["engine"] == "leveldb" {
            assert!(p["table_cache_hits"].is_null(), "{p}");
        }
        assert!(p["block_cache_hit_rate"].is_number(), "{p}");
    }
}

/// A peer whose harness does not serve the dbbench op is named, with the
/// op and the command that builds one that does, before shale's sweep runs.
#[test]
fn a_peer_without_the_dbbench_op_is_refused_before_any_work() {
    let dir = tempfile::tempdir().expect("tempdir");
    let harness = common::base_ops_harness(dir.path(), "rocksdb");
    let db = dir.path().join("db");
    let out_dir = dir.path().join("out");
    let o = shale()
        .env("SHALE_ROCKSDB_HARNESS", &harness)
        .args([
            "bench",
            "db-sweep",
            "--engines",
            "shale,rocksdb",
            "--param",
            "open_files",
            "--values",
            "0",
            "--num",
            "1000",
            "--reads",
            "100",
            "--db",
            &path(&db),
            "--out",
            &path(&out_dir),
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run shale");
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("the rocksdb harness")
            && err.contains("does not serve the dbbench op")
            && err.contains("scripts/peers.sh rocksdb"),
        "{err}"
    );
    assert!(!db.exists() && !out_dir.exists(), "nothing ran");
}
