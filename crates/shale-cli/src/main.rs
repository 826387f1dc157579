//! `shale`: the command-line tool of the shale engine. See `shale --help`.
//!
//! Every failure is reported as one line `shale: <message>` on standard error
//! with exit code 1; usage errors exit with 2 (clap's convention).

// A binary has no outside users: `pub` here only marks what other modules of
// the tool use.
#![allow(unreachable_pub)]

mod args;
mod cmd;

use std::io::Write;
use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;

use clap::Parser;

use shale_bench::Error as CliError;

fn main() -> ExitCode {
    install_panic_hook();
    let cli = args::Cli::parse();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = panic::catch_unwind(AssertUnwindSafe(|| cmd::run(cli.command, &mut out)));
    match result {
        Ok(Ok(())) | Ok(Err(CliError::BrokenPipe)) => ExitCode::SUCCESS,
        Ok(Err(CliError::Usage(m))) => {
            let _ = out.flush();
            report(&m);
            ExitCode::from(2)
        }
        Ok(Err(e)) => {
            // Whatever the command printed before failing still goes out.
            let _ = out.flush();
            report(&e.to_string());
            ExitCode::FAILURE
        }
        // The hook already reported it.
        Err(_) => ExitCode::FAILURE,
    }
}

/// Prints `shale: <message>` as one line on standard error.
fn report(message: &str) {
    let one_line = message.replace(['\n', '\r'], " ");
    let _ = writeln!(std::io::stderr(), "shale: {one_line}");
}

/// Reports a panic (a bug) as one line instead of a backtrace, unless
/// `RUST_BACKTRACE` asks for the details.
fn install_panic_hook() {
    if std::env::var_os("RUST_BACKTRACE").is_some() {
        return;
    }
    panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("panic");
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        report(&format!("internal error: {msg}{at}"));
    }));
}
