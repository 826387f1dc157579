//! The engine's error type.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

/// Result alias of the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in shale.
///
/// Corruption (bytes on disk that do not decode or fail their checksum) is kept
/// apart from I/O failures (the file system refused an operation). A missing key
/// is not an error: reads return `Option`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// The file system failed an operation on `path`.
    Io {
        /// What the engine was doing.
        op: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error (shared so that a poisoned database can return it
        /// again).
        source: Arc<io::Error>,
    },
    /// Bytes in `file` at `offset` do not decode.
    Corruption {
        /// The damaged file.
        file: PathBuf,
        /// Byte offset of the damaged block or record within the file.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A sync or background write failed earlier; the database accepts no more
    /// writes until it is reopened. `cause` is the first failure.
    Poisoned {
        /// The failure that poisoned the database.
        cause: Box<Error>,
    },
    /// The caller passed something unusable (a bad option, a range whose
    /// start is after its end).
    InvalidArgument(String),
    /// The directory is not a shale database (and `create_if_missing` is off), or
    /// it is one of an unsupported format version.
    NotADatabase {
        /// The directory.
        path: PathBuf,
        /// Why it was rejected.
        reason: String,
    },
    /// Another process or handle holds the database lock.
    Locked {
        /// The database directory.
        path: PathBuf,
    },
    /// The database was closed.
    Closed,
    /// [`crate::Db::close`] found snapshots or iterators still open. The
    /// database is closed all the same (synced, its lock released); those
    /// handles now fail with [`Error::Closed`].
    LiveHandles {
        /// Snapshots still open (a `Range` holds one).
        snapshots: usize,
        /// Iterators still open (a `Range` holds two).
        iterators: usize,
    },
    /// A broken internal invariant: a bug in shale, never a caller's mistake
    /// or bad input. The operation is refused rather than given a wrong answer.
    Internal(String),
    /// A write, flush or compaction on a database opened with
    /// [`crate::Db::open_read_only`].
    ReadOnly {
        /// The database directory.
        path: PathBuf,
    },
}

impl Error {
    /// Wraps an I/O error with the operation and path.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Error {
        Error::Io {
            op,
            path: path.into(),
            source: Arc::new(source),
        }
    }

    /// A corruption error.
    pub fn corruption(file: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> Error {
        Error::Corruption {
            file: file.into(),
            offset,
            reason: reason.into(),
        }
    }

    /// True for [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { op, path, source } => {
                write!(f, "I/O error: {op} {}: {source}", path.display())
            }
            Error::Corruption {
                file,
                offset,
                reason,
            } => {
                write!(
                    f,
                    "corruption in {} at offset {offset}: {reason}",
                    file.display()
                )
            }
            Error::Poisoned { cause } => {
                write!(
                    f,
                    "database poisoned by an earlier failure (reopen it): {cause}"
                )
            }
            Error::InvalidArgument(msg) => write!(f, "invalid argument: {msg}"),
            Error::NotADatabase { path, reason } => {
                write!(f, "{} is not a shale database: {reason}", path.display())
            }
            Error::Locked { path } => {
                write!(
                    f,
                    "database {} is locked by another process or handle",
                    path.display()
                )
            }
            Error::Closed => write!(f, "database is closed"),
            Error::LiveHandles {
                snapshots,
                iterators,
            } => write!(
                f,
                "database closed with {snapshots} snapshot(s) and {iterators} iterator(s) still \
                 open (a range holds one snapshot and two iterators): they now fail with \
                 \"database is closed\"; drop them before closing"
            ),
            Error::Internal(msg) => write!(f, "internal error (a bug in shale): {msg}"),
            Error::ReadOnly { path } => {
                write!(f, "database {} is open read-only", path.display())
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source.as_ref()),
            Error::Poisoned { cause } => Some(cause.as_ref()),
            _ => None,
        }
    }
}
