//! The subcommands. Each writes its normal output to the `out` it is given and
//! returns its failure as a [`CliError`]; `main` prints it.

mod advise;
mod bench;
mod cgroup;
mod compare;
pub mod dbbench;
mod harness;
mod kv;
mod load;
mod sst;
mod stats;
mod ycsb;
mod zns;
mod zoned;

pub use advise::parse_key_count;

use std::io::Write;
use std::path::{Path, PathBuf};

use shale::{Db, Options};

use crate::args::{Command, ZonedArg, ZonedCommand};
use crate::error::{CliError, CliResult};
use crate::storage::{Create, Storage};

/// Runs one subcommand, writing its output to `out`.
pub fn run(command: Command, out: &mut dyn Write) -> CliResult {
    match command {
        Command::Put(a) => kv::put(&a),
        Command::Get(a) => kv::get(&a, out),
        Command::Delete(a) => kv::delete(&a),
        Command::Scan(a) => kv::scan(&a, out),
        Command::Load(a) => load::run(&a, out),
        Command::Stats(a) => stats::run(&a, out),
        Command::Sst(a) => sst::run(&a, out),
        Command::Compact(a) => compact(&a, out),
        Command::Repair(a) => repair(&a, out),
        Command::Bench(crate::args::BenchCommand::Kvdb(a)) => bench::kvdb(&a, out),
        Command::Bench(crate::args::BenchCommand::Compare(a)) => compare::run(&a, out),
        Command::Bench(crate::args::BenchCommand::Ycsb(a)) => ycsb::run(&a, out),
        Command::Bench(crate::args::BenchCommand::Db(a)) => dbbench::run(&a, out),
        Command::Bench(crate::args::BenchCommand::DbSweep(a)) => dbbench::sweep::run(&a, out),
        Command::Bench(crate::args::BenchCommand::Zns(a)) => zns::run(&a, out),
        Command::Advise(a) => advise::advise(&a, out),
        Command::Zoned(ZonedCommand::Mkfs(a)) => zoned::mkfs(&a, out),
        Command::Zoned(ZonedCommand::Ls(a)) => zoned::ls(&a, out),
        Command::Zoned(ZonedCommand::Df(a)) => zoned::df(&a, out),
        Command::Zoned(ZonedCommand::Check(a)) => zoned::check(&a, out),
        Command::Harness => harness::run(out),
    }?;
    out.flush().map_err(CliError::output)
}

/// `compact`: a full manual compaction, then one line with the new shape.
fn compact(a: &crate::args::CompactArgs, out: &mut dyn Write) -> CliResult {
    let (storage, dir) = storage_for(a.db.as_deref(), &a.zoned, Create::No)?;
    let db = open(&storage, &dir, false)?;
    let started = std::time::Instant::now();
    db.compact_all()?;
    let summary = db.summary()?;
    db.close()?;
    storage.finish()?;
    let total = summary.total();
    let levels: Vec<String> = summary
        .levels
        .iter()
        .filter(|l| l.tables > 0)
        .map(|l| format!("L{}", l.level))
        .collect();
    writeln!(
        out,
        "compacted in {:.3} s: {} tables, {} bytes, in {}",
        started.elapsed().as_secs_f64(),
        total.tables,
        total.bytes,
        if levels.is_empty() {
            "no level".to_string()
        } else {
            levels.join(", ")
        }
    )
    .map_err(CliError::output)
}

/// `repair`: rebuild the manifest, then one line per problem and a summary.
fn repair(a: &crate::args::RepairArgs, out: &mut dyn Write) -> CliResult {
    let r = Db::repair_with(
        &a.db,
        Options::default(),
        shale::RepairOptions { force: a.force },
    )?;
    for p in &r.problems {
        writeln!(out, "problem: {p}").map_err(CliError::output)?;
    }
    for name in &r.moved_to_lost {
        writeln!(out, "moved to {}/: {name}", shale::LOST_DIR).map_err(CliError::output)?;
    }
    writeln!(
        out,
        "repaired: {} tables kept, {} salvaged, {} unreadable, {} log records replayed \
         ({} logs damaged), {} entries, last sequence {}",
        r.tables_kept,
        r.tables_salvaged,
        r.tables_unreadable,
        r.wal_records,
        r.wals_damaged,
        r.entries,
        r.last_sequence
    )
    .map_err(CliError::output)
}

/// The storage of a command's `--zoned` and its database directory (`--db`,
/// or the zone file system's default).
fn storage_for(
    db: Option<&Path>,
    zoned: &ZonedArg,
    create: Create,
) -> CliResult<(Storage, PathBuf)> {
    let storage = Storage::open(zoned.zoned.as_deref(), create)?;
    let dir = storage.db_dir(db, None)?;
    Ok((storage, dir))
}

/// Opens the database in `dir` for reading only: writes nothing, so it works
/// on a full file system and next to other readers.
fn open_read_only(storage: &Storage, dir: &Path) -> CliResult<Db> {
    Ok(Db::open_read_only(
        dir,
        storage.options(Options::default()),
    )?)
}

/// Opens the database in `dir` with default options.
fn open(storage: &Storage, dir: &Path, create_if_missing: bool) -> CliResult<Db> {
    let opts = Options {
        create_if_missing,
        ..Options::default()
    };
    Ok(Db::open(dir, storage.options(opts))?)
}

/// Opens (or creates) the database in `dir` with `opts` (on `storage`'s
/// file system).
fn open_with(storage: &Storage, dir: &Path, opts: Options) -> CliResult<Db> {
    Ok(Db::open(dir, storage.options(opts))?)
}
