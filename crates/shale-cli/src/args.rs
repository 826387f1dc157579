//! Command-line arguments: the commands, and the arguments of the ones that
//! are not benchmarks (those are in `shale_bench::args`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use shale_bench::args::*;
use shale_bench::bytes::{parse_key, parse_value, Bytes};

/// The shale key-value engine's command-line tool.
///
/// Keys and values are text, or hex with a `0x` prefix (`0xdeadbeef`). Output
/// uses the same notation: text when printable, else hex.
#[derive(Debug, Parser)]
#[command(name = "shale", version)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
// Parsed once per process: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Set KEY to VALUE (synced to disk before returning).
    Put(PutArgs),
    /// Print the value of KEY (exit code 1 if absent).
    Get(GetArgs),
    /// Delete KEY (synced to disk before returning).
    Delete(DeleteArgs),
    /// Delete every key in [START, END) with one range deletion (synced to
    /// disk before returning); compactions reclaim the space.
    DeleteRange(DeleteRangeArgs),
    /// Print `key value` lines in key order.
    Scan(ScanArgs),
    /// Load keys of the study's dataset (keccak256 keys, reproducible values).
    Load(LoadArgs),
    /// Print the shape of the database and its read counters.
    Stats(StatsArgs),
    /// Print the layout and properties of one table file.
    Sst(SstArgs),
    /// Flush, then merge every table into the last level (a full manual
    /// compaction).
    Compact(CompactArgs),
    /// Rebuild a damaged or lost manifest from the tables and logs present,
    /// then compact (files it replaces go to DIR/lost/; nothing is deleted).
    Repair(RepairArgs),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Zoned storage: format a zoned device (emulated or real) with the zone
    /// file system the engine runs on with --zoned, and inspect it.
    #[command(subcommand)]
    Zoned(ZonedCommand),
    /// The cache size to configure for a target I/Os per Get, from the
    /// database's inflection points.
    Advise(AdviseArgs),
    /// Replay a block-access trace (`bench kvdb --trace FILE`) through the
    /// engine's block cache at other sizes: misses and reads per Get by
    /// block kind at every size, from one traced run.
    Simulate(SimulateArgs),
    /// Serve one request of the harness protocol (JSON on standard input,
    /// the reply on standard output): what `bench compare` runs.
    #[command(hide = true)]
    Harness,
}

/// `shale bench ...`.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// The I/O-per-Get study: Gets of the study's dataset at several block-cache
    /// sizes, each with a freshly opened database and a cold cache.
    Kvdb(BenchKvdbArgs),
    /// The I/O-per-Get study on shale and its peers side by side: the same
    /// dataset, Gets and cache sizes for every engine, each driven by its
    /// harness in a process of its own.
    Compare(BenchCompareArgs),
    /// YCSB's core workloads A-F on shale, optionally under the presets of
    /// the RocksDB read-latency-under-compaction study (baseline,
    /// readopt-512mb, readopt-1gb, mild-pressure) with repetitions.
    Ycsb(BenchYcsbArgs),
    /// db_bench-compatible benchmarks (fillseq, readrandom, ...), with
    /// db_bench's flags and result lines; see docs/bench-db.md.
    Db(BenchDbArgs),
    /// LevelDB's cache-structure sweep: one fill, then readrandom, readhot
    /// and seekrandom at each value of --open_files or --cache_size.
    #[command(name = "db-sweep")]
    DbSweep(DbSweepArgs),
    /// db_bench's fillrandom then overwrite on the regular file system and on
    /// a zoned device, with each backend's device write amplification: the
    /// zone file system's, and a conventional SSD's from the posix run's
    /// write trace replayed on the FTL model; see docs/bench-zns.md.
    Zns(BenchZnsArgs),
}

/// `shale zoned ...`.
#[derive(Debug, Subcommand)]
pub enum ZonedCommand {
    /// Format a zoned device with the zone file system: a zoned block device
    /// (/dev/nvme0n1), or an emulated device file, created with the given
    /// geometry when it does not exist. Erases everything on the device.
    Mkfs(ZonedMkfsArgs),
    /// List the files of the zone file system: size, lifetime hint and
    /// extents (zone, offset, length).
    Ls(ZonedInspectArgs),
    /// Space of the zone file system: zones empty and used, live and written
    /// bytes, space amplification, and the write counters since mount.
    Df(ZonedInspectArgs),
    /// Mount (recovering), check the metadata (every extent inside its
    /// zone's written area, no two overlapping) and read every byte of every
    /// file; exits 1 on any problem.
    Check(ZonedInspectArgs),
}
/// `shale zoned mkfs`.
#[derive(Debug, Args)]
pub struct ZonedMkfsArgs {
    /// The device: a zoned block device, or an emulated device file (created
    /// when missing; an existing file must be an emulated device).
    #[arg(long, value_name = "PATH")]
    pub device: PathBuf,
    /// Geometry of an emulated device to create (an existing emulated device
    /// must have it; a block device has its own and takes none).
    #[command(flatten)]
    pub geometry: GeometryArgs,
    /// Zones reserved for the zone file system's metadata log (2 to 16).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub meta_zones: u32,
    /// Format even a device whose zone file system holds files (or does not
    /// mount): everything on it is erased.
    #[arg(long)]
    pub force: bool,
}

/// `shale zoned ls`, `df` and `check`.
#[derive(Debug, Args)]
pub struct ZonedInspectArgs {
    /// The formatted zoned device (block device or emulated device file).
    #[arg(long, value_name = "PATH")]
    pub device: PathBuf,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `shale compact`.
#[derive(Debug, Args)]
pub struct CompactArgs {
    /// Database directory (must exist; with --zoned, inside the zone file
    /// system, default /db).
    #[arg(long, value_name = "DIR", required_unless_present = "zoned")]
    pub db: Option<PathBuf>,
    /// The zoned device the database is on.
    #[command(flatten)]
    pub zoned: ZonedArg,
}

/// `shale repair`.
#[derive(Debug, Args)]
pub struct RepairArgs {
    /// Database directory (must exist).
    #[arg(long, value_name = "DIR")]
    pub db: PathBuf,
    /// Repair even a directory that cannot be recognised as shale's (a
    /// foreign file in it, or every file too damaged to tell): its files go
    /// to lost/ with the rest.
    #[arg(long)]
    pub force: bool,
}
/// `shale put`.
#[derive(Debug, Args)]
pub struct PutArgs {
    /// Database directory (created if missing; with --zoned, inside the zone
    /// file system, default /db).
    #[arg(long, value_name = "DIR", required_unless_present = "zoned")]
    pub db: Option<PathBuf>,
    /// The zoned device the database is on.
    #[command(flatten)]
    pub zoned: ZonedArg,
    /// The key.
    #[arg(value_parser = parse_key, allow_hyphen_values = true)]
    pub key: Bytes,
    /// The value.
    #[arg(value_parser = parse_value, allow_hyphen_values = true)]
    pub value: Bytes,
}

/// `shale get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// Database directory (with --zoned, inside the zone file system, default
    /// /db).
    #[arg(long, value_name = "DIR", required_unless_present = "zoned")]
    pub db: Option<PathBuf>,
    /// The zoned device the database is on.
    #[command(flatten)]
    pub zoned: ZonedArg,
    /// The key.
    #[arg(value_parser = parse_key, allow_hyphen_values = true)]
    pub key: Bytes,
}

/// `shale delete`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// Database directory (with --zoned, inside the zone file system, default
    /// /db).
    #[arg(long, value_name = "DIR", required_unless_present = "zoned")]
    pub db: Option<PathBuf>,
    /// The zoned device the database is on.
    #[command(flatten)]
    pub zoned: ZonedArg,
    /// The key.
    #[arg(value_parser = parse_key, allow_hyphen_values = true)]
    pub key: Bytes,
}

/// `shale delete-range`.
#[derive(Debug, Args)]
pub struct DeleteRangeArgs {
    /// Database directory (with --zoned, inside the zone file system, default
    /// /db).
    #[arg(long, value_name = "DIR", required_unless_present = "zoned")]
    pub db: Option<PathBuf>,
    /// The zoned device the database is on.
    #[command(flatten)]
    pub zoned: ZonedArg,
    /// First key deleted.
    #[arg(value_parser = parse_key, allow_hyphen_values = true)]
    pub start: Bytes,
    /// First key kept after the range (exclusive).
    #[arg(value_parser = parse_key, allow_hyphen_values = true)]
    pub end: Bytes,
}

/// `shale scan`.
#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Database directory (with --zoned, inside the zone file system, default
    /// /db).
    #[arg(long, value_name = "DIR", required_unless_present = "zoned")]
    pub db: Option<PathBuf>,
    /// The zoned device the database is on.
    #[command(flatten)]
    pub zoned: ZonedArg,
    /// First key to print (inclusive).
    #[arg(long, value_name = "KEY", value_parser = parse_key, allow_hyphen_values = true)]
    pub from: Option<Bytes>,
    /// Key to stop before (exclusive).
    #[arg(long, value_name = "KEY", value_parser = parse_key, allow_hyphen_values = true)]
    pub to: Option<Bytes>,
    /// Print at most N keys.
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
}

/// `shale load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Database directory (created if missing; with --zoned, inside the zone
    /// file system, default /db).
    #[arg(long, value_name = "DIR", required_unless_present = "zoned")]
    pub db: Option<PathBuf>,
    /// The zoned device the database is on.
    #[command(flatten)]
    pub zoned: ZonedArg,
    /// Number of keys to load.
    #[arg(long, value_name = "N")]
    pub keys: u64,
    /// Bytes per value.
    #[arg(long, value_name = "BYTES", default_value_t = shale_workload::DEFAULT_VALUE_SIZE)]
    pub value_size: usize,
    /// Index of the first key.
    #[arg(long, value_name = "I", default_value_t = 0)]
    pub start: u64,
    /// Keys per write batch.
    #[arg(long, value_name = "N", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub batch: u64,
    /// Writer threads (each writes contiguous chunks of `--batch` keys).
    #[arg(long, value_name = "T", default_value_t = 2,
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub threads: u64,
    /// Sync the write-ahead log on every batch.
    #[arg(long)]
    pub sync: bool,
    /// Close right after the final flush instead of waiting for compactions to
    /// settle (the database then finishes compacting when next opened).
    #[arg(long)]
    pub no_settle: bool,
    /// Memtable size in bytes (default: the engine's, 64 MiB). Small values
    /// make flushes and compactions frequent, for experiments and tests.
    #[arg(long, value_name = "BYTES")]
    pub write_buffer_size: Option<usize>,
    /// Filter bits per key of single levels, as `shale advise --budget`
    /// prints them (`L4=7,L5=5`; the other levels keep the default 9). Tables
    /// get their filters when written, so load a database afresh with them.
    #[arg(long, value_name = "L<N>=BITS,...", value_parser = shale_bench::parse::parse_level_bits)]
    pub filter_bits: Option<shale_bench::parse::LevelBits>,
    /// Write nothing: Get keys start..start + keys and check every value
    /// against the dataset (run after a load, in another process, to check
    /// that what was loaded is there); exits 1 at the first key missing or
    /// different.
    #[arg(long, conflicts_with_all = ["sync", "no_settle", "write_buffer_size", "filter_bits"])]
    pub verify: bool,
}

/// `shale stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Database directory (with --zoned, inside the zone file system, default
    /// /db).
    #[arg(long, value_name = "DIR", required_unless_present = "zoned")]
    pub db: Option<PathBuf>,
    /// The zoned device the database is on.
    #[command(flatten)]
    pub zoned: ZonedArg,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// `shale sst`.
#[derive(Debug, Args)]
pub struct SstArgs {
    /// The table file (`NNNNNN.sst`).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::error::ErrorKind;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("shale").chain(args.iter().copied()))
    }

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn put_parses_text_and_hex() {
        let cli = parse(&["put", "--db", "d", "0x0102", "-v"]).expect("parses");
        let Command::Put(a) = cli.command else {
            panic!("not put: {cli:?}");
        };
        assert_eq!(a.db, Some(PathBuf::from("d")));
        assert_eq!(a.key, Bytes(vec![1, 2]));
        assert_eq!(a.value, Bytes(b"-v".to_vec()));
    }

    #[test]
    fn bad_hex_and_empty_keys_are_usage_errors() {
        for args in [
            &["get", "--db", "d", "0xz1"][..],
            &["get", "--db", "d", "0x1"],
            &["get", "--db", "d", ""],
            &["put", "--db", "d", "k", "0xq"],
            &["scan", "--db", "d", "--from", "0x0"],
        ] {
            let e = parse(args).expect_err("must fail");
            assert_eq!(e.kind(), ErrorKind::ValueValidation, "{args:?}");
            assert_eq!(e.exit_code(), 2);
        }
    }

    #[test]
    fn bench_kvdb_defaults_to_4m_keys_and_compare_to_2m() {
        let Command::Bench(BenchCommand::Kvdb(a)) =
            parse(&["bench", "kvdb"]).expect("parses").command
        else {
            panic!("not bench kvdb");
        };
        assert_eq!(a.workload.keys, 4_000_000);
        let Command::Bench(BenchCommand::Kvdb(a)) = parse(&["bench", "kvdb", "--keys", "200000"])
            .expect("parses")
            .command
        else {
            panic!("not bench kvdb");
        };
        assert_eq!(a.workload.keys, 200_000);
        let Command::Bench(BenchCommand::Compare(a)) =
            parse(&["bench", "compare"]).expect("parses").command
        else {
            panic!("not bench compare");
        };
        assert_eq!(a.workload.keys, 2_000_000);
    }

    #[test]
    fn bench_kvdb_batch_threads_and_depth_are_checked() {
        let kvdb = |args: &[&str]| -> Result<BenchKvdbArgs, String> {
            let all: Vec<&str> = ["bench", "kvdb"].iter().chain(args).copied().collect();
            match parse(&all).map_err(|e| e.to_string())?.command {
                Command::Bench(BenchCommand::Kvdb(a)) => Ok(a),
                _ => Err("not bench kvdb".into()),
            }
        };
        let a = kvdb(&[]).expect("defaults");
        assert_eq!(
            (
                a.batch,
                a.read_threads,
                a.device_limit_depth,
                a.workload.threads
            ),
            (1, None, None, None)
        );
        let a = kvdb(&[
            "--batch",
            "32",
            "--threads",
            "2",
            "--read-threads",
            "0",
            "--device-limit-depth",
            "32",
        ])
        .expect("parses");
        assert_eq!(
            (
                a.batch,
                a.read_threads,
                a.device_limit_depth,
                a.workload.threads
            ),
            (32, Some(0), Some(32), Some(2))
        );
        for (flag, value) in [
            ("--batch", "0"),
            ("--batch", "65537"),
            ("--threads", "0"),
            ("--threads", "1025"),
            ("--read-threads", "1025"),
            ("--device-limit-depth", "0"),
            ("--device-limit-depth", "5000"),
        ] {
            let e = kvdb(&[flag, value]).expect_err(&format!("{flag} {value}"));
            assert!(e.contains(flag), "{flag} {value}: {e}");
        }
        // `bench compare` shares the thread check.
        assert!(parse(&["bench", "compare", "--threads", "0"]).is_err());
    }

    #[test]
    fn load_defaults_and_ranges() {
        let cli = parse(&["load", "--db", "d", "--keys", "10"]).expect("parses");
        let Command::Load(a) = cli.command else {
            panic!("not load: {cli:?}");
        };
        assert_eq!(
            (a.keys, a.value_size, a.start, a.batch, a.threads, a.sync),
            (10, 110, 0, 1000, 2, false)
        );
        assert!(parse(&["load", "--db", "d", "--keys", "10", "--threads", "0"]).is_err());
        assert!(parse(&["load", "--db", "d", "--keys", "10", "--batch", "0"]).is_err());
        assert!(parse(&["load", "--db", "d"]).is_err());
        let cli = parse(&[
            "load",
            "--db",
            "d",
            "--keys",
            "5",
            "--start",
            "7",
            "--batch",
            "3",
            "--threads",
            "4",
            "--value-size",
            "16",
            "--sync",
        ])
        .expect("parses");
        let Command::Load(a) = cli.command else {
            panic!("not load: {cli:?}");
        };
        assert_eq!(
            (a.keys, a.value_size, a.start, a.batch, a.threads, a.sync),
            (5, 16, 7, 3, 4, true)
        );
    }

    #[test]
    fn bench_ycsb_parses_workloads_and_presets() {
        let Command::Bench(BenchCommand::Ycsb(a)) =
            parse(&["bench", "ycsb"]).expect("parses").command
        else {
            panic!("not bench ycsb");
        };
        assert_eq!(a.workload, YcsbWorkloadArg::A);
        assert_eq!((a.records, a.operations, a.threads), (100_000, 100_000, 8));
        assert_eq!((a.field_count, a.field_length, a.repeat), (10, 100, 1));
        assert!(a.preset.is_none() && a.presets.is_none());
        let Command::Bench(BenchCommand::Ycsb(a)) = parse(&[
            "bench",
            "ycsb",
            "--workload",
            "E",
            "--presets",
            "mild-pressure, baseline",
        ])
        .expect("parses")
        .command
        else {
            panic!("not bench ycsb");
        };
        assert_eq!(a.workload, YcsbWorkloadArg::E);
        assert_eq!(
            a.presets,
            Some(PresetList(vec![
                YcsbPreset::MildPressure,
                YcsbPreset::Baseline
            ]))
        );
        let Command::Bench(BenchCommand::Ycsb(a)) =
            parse(&["bench", "ycsb", "--presets", "all", "--repeat", "5"])
                .expect("parses")
                .command
        else {
            panic!("not bench ycsb");
        };
        assert_eq!(a.presets.map(|p| p.0.len()), Some(4));
        assert_eq!(a.repeat, 5);
        let e = parse(&["bench", "ycsb", "--workload", "g"]).expect_err("g");
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("a, b, c, d, e, f"), "{e}");
        let e = parse(&["bench", "ycsb", "--presets", "fast"]).expect_err("fast");
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("readopt-512mb"), "{e}");
        assert!(parse(&["bench", "ycsb", "--preset", "baseline", "--presets", "all"]).is_err());
        assert!(parse(&["bench", "ycsb", "--repeat", "0"]).is_err());
        let e = parse(&["bench", "ycsb", "--engines", "wiredtiger"]).expect_err("unknown");
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string().contains("shale, pebble, rocksdb, leveldb"),
            "{e}"
        );
        let Command::Bench(BenchCommand::Ycsb(a)) = parse(&[
            "bench",
            "ycsb",
            "--engines",
            "rocksdb,shale,LevelDB,rocksdb",
        ])
        .expect("parses")
        .command
        else {
            panic!("not bench ycsb");
        };
        assert_eq!(
            a.engines,
            EngineList(vec![
                YcsbEngine::Peer("rocksdb"),
                YcsbEngine::Shale,
                YcsbEngine::Peer("leveldb")
            ])
        );
        assert!(parse(&["bench", "ycsb", "--threads", "0"]).is_err());
        assert!(parse(&["bench", "ycsb", "--rate-limit", "0"]).is_err());
    }

    #[test]
    fn zoned_replaces_db_and_mkfs_takes_a_geometry() {
        let Command::Get(a) = parse(&["get", "--zoned", "z.img", "k"])
            .expect("parses")
            .command
        else {
            panic!("not get");
        };
        assert_eq!(a.db, None);
        assert_eq!(a.zoned.zoned, Some(PathBuf::from("z.img")));
        let e = parse(&["scan"]).expect_err("needs --db or --zoned");
        assert_eq!(e.kind(), ErrorKind::MissingRequiredArgument);
        let Command::Zoned(ZonedCommand::Mkfs(m)) = parse(&[
            "zoned",
            "mkfs",
            "--device",
            "z.img",
            "--zones",
            "8",
            "--zone-size",
            "1M",
            "--zone-capacity",
            "768K",
        ])
        .expect("parses")
        .command
        else {
            panic!("not zoned mkfs");
        };
        assert_eq!(m.meta_zones, 2);
        let g = m.geometry.geometry().expect("valid");
        assert_eq!(
            (g.nr_zones, g.zone_size, g.zone_capacity, g.block_size),
            (8, 1 << 20, 768 << 10, 4096)
        );
        assert!(m.geometry.any());
        assert!(parse(&["zoned", "mkfs", "--device", "z", "--zones", "0"]).is_err());
        assert!(parse(&["zoned", "mkfs", "--device", "z", "--zone-size", "1.5M"]).is_err());
        let e = parse(&["load", "--zoned", "z", "--keys", "1", "--verify", "--sync"])
            .expect_err("verify writes nothing");
        assert_eq!(e.kind(), ErrorKind::ArgumentConflict);
    }

    #[test]
    fn unknown_subcommand_and_missing_db_fail() {
        let e = parse(&["frobnicate"]).expect_err("must fail");
        assert_eq!(e.kind(), ErrorKind::InvalidSubcommand);
        assert_eq!(e.exit_code(), 2);
        assert!(parse(&["get", "k"]).is_err());
        assert!(parse(&["stats", "--db", "d", "--json"]).is_ok());
        assert!(parse(&["sst", "000005.sst", "--json"]).is_ok());
    }
}
