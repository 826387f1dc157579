//! The error of a command: printed by `main` as one line `shale: <message>`.

use std::fmt;
use std::io;

/// Why a command failed.
#[derive(Debug)]
pub enum CliError {
    /// Anything worth reporting; exit code 1.
    Msg(String),
    /// A bad combination of arguments that clap cannot check; exit code 2,
    /// like clap's own usage errors.
    Usage(String),
    /// Standard output was closed by its reader (`shale scan | head`): not a
    /// failure of the command, so `main` exits quietly with success.
    BrokenPipe,
}

impl CliError {
    /// An error with this message.
    pub fn msg(m: impl Into<String>) -> CliError {
        CliError::Msg(m.into())
    }

    /// An error of writing the command's output.
    pub fn output(e: io::Error) -> CliError {
        if e.kind() == io::ErrorKind::BrokenPipe {
            CliError::BrokenPipe
        } else {
            CliError::Msg(format!("writing output: {e}"))
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Msg(m) | CliError::Usage(m) => f.write_str(m),
            CliError::BrokenPipe => f.write_str("output closed"),
        }
    }
}

impl From<shale::Error> for CliError {
    fn from(e: shale::Error) -> CliError {
        let hint = match &e {
            shale::Error::Corruption { file, .. }
                if file
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("MANIFEST-"))
                    && !e.to_string().contains("shale repair") =>
            {
                " (`shale repair --db DIR` rebuilds the manifest from the tables and logs present)"
            }
            _ => "",
        };
        CliError::Msg(format!("{e}{hint}"))
    }
}

/// Result of a command.
pub type CliResult<T = ()> = Result<T, CliError>;
