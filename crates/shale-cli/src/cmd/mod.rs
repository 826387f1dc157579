//! The subcommands. Each writes its normal output to the `out` it is given and
//! returns its failure as a [`CliError`]; `main` prints it.

mod kv;
mod load;
mod sst;
mod stats;

use std::io::Write;
use std::path::Path;

use shale::{Db, Options};

use crate::args::Command;
use crate::error::{CliError, CliResult};

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
    }?;
    out.flush().map_err(CliError::output)
}

/// Opens the database in `dir` with default options.
fn open(dir: &Path, create_if_missing: bool) -> CliResult<Db> {
    let opts = Options {
        create_if_missing,
        ..Options::default()
    };
    Ok(Db::open(dir, opts)?)
}
