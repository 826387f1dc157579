//! Names of the files in a database directory.
//!
//! ```text
//! CURRENT            name of the live manifest, followed by '\n'
//! LOCK               held while the database is open
//! MANIFEST-NNNNNN    version edits
//! NNNNNN.log         write-ahead log of one memtable
//! NNNNNN.sst         table
//! *.tmp              a file being written for an atomic rename
//! ```
//! Numbers come from one counter, so every file number is unique.

/// The kinds of files shale writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileType {
    Current,
    Lock,
    Manifest(u64),
    Wal(u64),
    Table(u64),
    Temp,
}

pub(crate) const CURRENT: &str = "CURRENT";
pub(crate) const LOCK: &str = "LOCK";
/// Where repair moves the files it replaces, inside the database directory.
pub const LOST_DIR: &str = "lost";

pub(crate) fn wal_name(number: u64) -> String {
    format!("{number:06}.log")
}

pub(crate) fn table_name(number: u64) -> String {
    format!("{number:06}.sst")
}

pub(crate) fn manifest_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

impl FileType {
    /// The file number of a numbered file.
    pub(crate) fn number(self) -> Option<u64> {
        match self {
            FileType::Manifest(n) | FileType::Wal(n) | FileType::Table(n) => Some(n),
            _ => None,
        }
    }
}

/// Recognizes a shale file name; `None` for anything else.
pub(crate) fn parse(name: &str) -> Option<FileType> {
    if name == CURRENT {
        return Some(FileType::Current);
    }
    if name == LOCK {
        return Some(FileType::Lock);
    }
    if name.ends_with(".tmp") {
        return Some(FileType::Temp);
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return n.parse().ok().map(FileType::Manifest);
    }
    if let Some(n) = name.strip_suffix(".log") {
        return n.parse().ok().map(FileType::Wal);
    }
    if let Some(n) = name.strip_suffix(".sst") {
        return n.parse().ok().map(FileType::Table);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_roundtrip() {
        assert_eq!(parse(&wal_name(7)), Some(FileType::Wal(7)));
        assert_eq!(parse(&table_name(1234567)), Some(FileType::Table(1234567)));
        assert_eq!(parse(&manifest_name(3)), Some(FileType::Manifest(3)));
        assert_eq!(parse("CURRENT"), Some(FileType::Current));
        assert_eq!(parse("CURRENT.tmp"), Some(FileType::Temp));
        assert_eq!(parse("notes.txt"), None);
        assert_eq!(parse("x.sst"), None);
    }
}
