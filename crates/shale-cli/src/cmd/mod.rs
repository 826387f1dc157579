//! The subcommands. Each writes its normal output to the `out` it is given and
//! returns its failure as a [`CliError`]; `main` prints it.

mod harness;
mod kv;
mod load;
mod sst;
mod stats;
mod zoned;

use std::io::Write;
use std::path::{Path, PathBuf};

use shale::{Db, Options};

use crate::args::{BenchCommand, Command, ZonedArg, ZonedCommand};
use shale_bench::bytes::display_key;
use shale_bench::error::{Error as CliError, Result as CliResult};
use shale_bench::storage::{Create, Storage};

/// Runs one subcommand, writing its output to `out`.
pub fn run(command: Command, out: &mut dyn Write) -> CliResult {
    match command {
        Command::Put(a) => kv::put(&a),
        Command::Get(a) => kv::get(&a, out),
        Command::Delete(a) => kv::delete(&a),
        Command::DeleteRange(a) => kv::delete_range(&a),
        Command::Scan(a) => kv::scan(&a, out),
        Command::Load(a) => load::run(&a, out),
        Command::Stats(a) => stats::run(&a, out),
        Command::Sst(a) => sst::run(&a, out),
        Command::Compact(a) => compact(&a, out),
        Command::Repair(a) => repair(&a, out),
        Command::Bench(BenchCommand::Kvdb(a)) => shale_bench::kvdb::kvdb(&a, out),
        Command::Bench(BenchCommand::Compare(a)) => shale_bench::compare::run(&a, out),
        Command::Bench(BenchCommand::Ycsb(a)) => shale_bench::ycsb::run(&a, out),
        Command::Bench(BenchCommand::Db(a)) => shale_bench::dbbench::run(&a, out),
        Command::Bench(BenchCommand::DbSweep(a)) => shale_bench::dbbench::sweep::run(&a, out),
        Command::Bench(BenchCommand::Zns(a)) => shale_bench::zns::run(&a, out),
        Command::Advise(a) => shale_bench::advise::advise(&a, out),
        Command::Simulate(a) => shale_bench::simulate::run(&a, out),
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

/// `repair`: rebuild the manifest, then the problems met, what was lost of
/// each damaged file, the quarantine, the files moved aside and a summary.
/// Lists are capped ([`REPAIR_LIST_CAP`] items, then "... and N more").
fn repair(a: &crate::args::RepairArgs, out: &mut dyn Write) -> CliResult {
    let r = Db::repair_with(
        &a.db,
        Options::default(),
        shale::RepairOptions::default().force(a.force),
    )?;
    let mut w = |line: String| writeln!(out, "{line}").map_err(CliError::output);
    let problems = r.problems.len();
    for p in r.problems.iter().take(4 * REPAIR_LIST_CAP) {
        w(format!("problem: {p}"))?;
    }
    if problems > 4 * REPAIR_LIST_CAP {
        w(format!(
            "problem: ... and {} more",
            problems - 4 * REPAIR_LIST_CAP
        ))?;
    }
    for f in &r.damaged_files {
        w(damaged_file_line(f))?;
    }
    if r.entries_quarantined > 0 {
        w(format!(
            "quarantined: {} entries (older than a version that may have been lost); {} keys \
             lost their value{}",
            r.entries_quarantined,
            r.quarantined_keys.len(),
            capped(&r.quarantined_keys, |k| display_key(k), ": ")
        ))?;
    }
    for name in &r.moved_to_lost {
        w(format!("moved to {}/: {name}", shale::LOST_DIR))?;
    }
    w(format!(
        "repaired: {} tables kept, {} salvaged, {} unreadable, {} rewritten, {} log records \
         replayed ({} logs damaged), {} entries quarantined, {} entries, last sequence {}",
        r.tables_kept,
        r.tables_salvaged,
        r.tables_unreadable,
        r.tables_rewritten,
        r.wal_records,
        r.wals_damaged,
        r.entries_quarantined,
        r.entries,
        r.last_sequence
    ))
}

/// Items a `repair` list shows before "... and N more".
const REPAIR_LIST_CAP: usize = 8;

/// `prefix` and the first [`REPAIR_LIST_CAP`] items, comma-separated, then
/// "... and N more"; empty for no item.
fn capped<T>(items: &[T], show: impl Fn(&T) -> String, prefix: &str) -> String {
    if items.is_empty() {
        return String::new();
    }
    let mut s: Vec<String> = items.iter().take(REPAIR_LIST_CAP).map(show).collect();
    if items.len() > REPAIR_LIST_CAP {
        s.push(format!("... and {} more", items.len() - REPAIR_LIST_CAP));
    }
    format!("{prefix}{}", s.join(", "))
}

/// One line on a damaged table or log: counts, lost byte ranges
/// (`offset+length`) and the keys they may have held.
fn damaged_file_line(f: &shale::DamagedFile) -> String {
    let (unit, done) = match f.kind {
        shale::DamagedKind::Table => ("data blocks", "recovered"),
        shale::DamagedKind::Log => ("records", "replayed"),
    };
    let kind = match f.kind {
        shale::DamagedKind::Table => "table",
        shale::DamagedKind::Log => "log",
    };
    let mut line = format!(
        "damaged {kind} {}: {} {unit} {done}, {} lost, {} entries recovered",
        f.name, f.recovered, f.lost, f.entries_recovered
    );
    line += &capped(&f.lost_bytes, |(o, l)| format!("{o}+{l}"), "; lost bytes ");
    let bound = |k: &Option<Vec<u8>>| k.as_deref().map(display_key).unwrap_or_default();
    line += &capped(
        &f.lost_key_ranges,
        |r| format!("{}..={}", bound(&r.start), bound(&r.end)),
        "; keys ",
    );
    line += &capped(&f.lost_keys, |k| display_key(k), "; keys named ");
    if let Some(at) = f.replay_stopped_at {
        line += &format!("; replay stopped at offset {at} (point in time)");
    }
    line
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
    let opts = Options::default().create_if_missing(create_if_missing);
    Ok(Db::open(dir, storage.options(opts))?)
}

/// Opens (or creates) the database in `dir` with `opts` (on `storage`'s
/// file system).
fn open_with(storage: &Storage, dir: &Path, opts: Options) -> CliResult<Db> {
    Ok(Db::open(dir, storage.options(opts))?)
}
