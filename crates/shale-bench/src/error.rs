//! The error of a runner: the `shale` tool prints it as one line
//! `shale: <message>`.

use std::fmt;
use std::io;

/// Why a runner failed.
#[derive(Debug)]
pub enum Error {
    /// Anything worth reporting; exit code 1.
    Msg(String),
    /// A bad combination of arguments that clap cannot check; exit code 2,
    /// like clap's own usage errors.
    Usage(String),
    /// Standard output was closed by its reader (`shale scan | head`): not a
    /// failure of the command, so `main` exits quietly with success.
    BrokenPipe,
}

impl Error {
    /// An error with this message.
    pub fn msg(m: impl Into<String>) -> Error {
        Error::Msg(m.into())
    }

    /// An error of writing the command's output.
    pub fn output(e: io::Error) -> Error {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Error::BrokenPipe
        } else {
            Error::Msg(format!("writing output: {e}"))
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Msg(m) | Error::Usage(m) => f.write_str(m),
            Error::BrokenPipe => f.write_str("output closed"),
        }
    }
}

impl From<shale::Error> for Error {
    fn from(e: shale::Error) -> Error {
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
        Error::Msg(format!("{e}{hint}"))
    }
}

/// Result of a runner; `Result<T, E>` is the standard one.
pub type Result<T = (), E = Error> = std::result::Result<T, E>;
