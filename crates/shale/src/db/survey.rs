//! Whose files a directory holds, judged by their bytes, before a command
//! that replaces or deletes files ([`Db::repair`](super::Db::repair),
//! [`Db::destroy`](super::Db::destroy)) touches anything.
//!
//! A name proves little: LevelDB's logs and manifests carry the same names
//! (and its logs the very same framing), and other engines keep a
//! `CURRENT` too. So each entry is looked at:
//!
//! | entry | shale's when | foreign when | otherwise |
//! |---|---|---|---|
//! | `NNNNNN.sst` | it ends in shale's table magic | it ends in another engine's table magic | damaged (unknown) |
//! | `MANIFEST-NNNNNN` | its first record is a version edit that starts with the database format | its first record is intact but is not such an edit | empty: a leftover; unreadable: damaged |
//! | `NNNNNN.log` | its first record is a write batch | its first record is intact but is not one | empty: a leftover; unreadable: damaged |
//! | `CURRENT` | it names a manifest that is shale's | it does not hold `MANIFEST-N\n`, or names a foreign manifest | it names a missing or damaged manifest |
//! | `LOCK`, `*.tmp` | | | leftovers any engine may leave |
//! | `lost/` | a directory: repair's own | a file | |
//! | anything else | | always | |
//!
//! A directory is shale's when nothing in it is foreign and something in it
//! is shale's; one holding only leftovers is an abandoned creation.
//! Looking reads a few bytes of each file (a table's last 8, a log's first
//! record) and writes nothing, not even a lock file.

use std::path::Path;

use shale_env::FileSystem;

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::filenames::LOST_DIR;
use crate::filenames::{parse, FileType};
use crate::table::layout::TABLE_MAGIC;
use crate::version::VersionEdit;
use crate::wal::LogReader;

/// Table magics of the engines whose directories look like ours (LevelDB's,
/// also RocksDB's legacy tables; RocksDB's block-based tables; Pebble's own
/// formats), as the last 8 bytes of a table read little-endian.
const FOREIGN_TABLE_MAGICS: [(u64, &str); 3] = [
    (0xdb47_7524_8b80_fb57, "LevelDB"),
    (0x88e2_41b7_85f4_cff7, "RocksDB"),
    (0xb3aa_9ff0_b3aa_9ff0, "Pebble"),
];

/// What one entry of the directory is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Its bytes are shale's.
    Shale,
    /// Its bytes or its name say another program wrote it; the reason.
    Foreign(String),
    /// A file shale writes, damaged so that its owner cannot be told; the
    /// reason.
    Damaged(String),
    /// Anything may leave it (`LOCK`, `*.tmp`, an empty log or manifest).
    Leftover,
}

/// The verdict on every entry of a directory.
#[derive(Clone, Debug, Default)]
pub(crate) struct Survey {
    /// `(name, verdict)` in listing order.
    pub entries: Vec<(String, Verdict)>,
}

impl Survey {
    /// The first foreign entry and why.
    pub(crate) fn foreign(&self) -> Option<(&str, &str)> {
        self.entries.iter().find_map(|(n, v)| match v {
            Verdict::Foreign(why) => Some((n.as_str(), why.as_str())),
            _ => None,
        })
    }

    /// True when some entry is shale's.
    pub(crate) fn any_shale(&self) -> bool {
        self.entries.iter().any(|(_, v)| *v == Verdict::Shale)
    }

    /// True when every entry is a leftover (or there is none).
    pub(crate) fn only_leftovers(&self) -> bool {
        self.entries.iter().all(|(_, v)| *v == Verdict::Leftover)
    }

    /// The verdict on `name`, if the directory holds it.
    pub(crate) fn verdict(&self, name: &str) -> Option<&Verdict> {
        self.entries
            .iter()
            .find_map(|(n, v)| (n == name).then_some(v))
    }

    /// `Ok` when the directory is shale's (see the module documentation),
    /// else `NotADatabase` naming the first foreign entry, or saying that
    /// nothing in it could be recognised. `what` names the command for the
    /// message.
    pub(crate) fn require_shale(&self, dir: &Path, what: &str) -> Result<()> {
        if let Some((name, why)) = self.foreign() {
            return Err(Error::NotADatabase {
                path: dir.into(),
                reason: format!("{what} refused: {name:?} is not shale's ({why})"),
            });
        }
        if !self.any_shale() && !self.only_leftovers() {
            return Err(Error::NotADatabase {
                path: dir.into(),
                reason: format!(
                    "{what} refused: no file in it can be recognised as shale's (every one is \
                     damaged or a leftover)"
                ),
            });
        }
        Ok(())
    }
}

/// Looks at every entry of `dir` (which must exist).
pub(crate) fn survey(dir: &Path, fs: &dyn FileSystem) -> Result<Survey> {
    let names = fs.list(dir).map_err(|e| Error::io("list", dir, e))?;
    let mut s = Survey::default();
    for name in names {
        let verdict = entry(dir, fs, &name)?;
        s.entries.push((name, verdict));
    }
    Ok(s)
}

fn entry(dir: &Path, fs: &dyn FileSystem, name: &str) -> Result<Verdict> {
    let path = dir.join(name);
    let is_dir = fs.list(&path).is_ok();
    if name == LOST_DIR {
        return Ok(if is_dir {
            Verdict::Shale
        } else {
            Verdict::Foreign("a file where repair keeps a directory".into())
        });
    }
    if is_dir {
        return Ok(Verdict::Foreign("a directory shale never makes".into()));
    }
    Ok(match parse(name) {
        None => Verdict::Foreign("a name shale never writes".into()),
        Some(FileType::Lock | FileType::Temp) => Verdict::Leftover,
        Some(FileType::Table(_)) => table(fs, &path)?,
        Some(FileType::Manifest(_)) => first_record(fs, &path, |r| match VersionEdit::decode(r) {
            Ok(edit) if edit.db_format.is_some() => Ok(()),
            Ok(_) => Err("its first record is an edit without the database format".into()),
            Err(e) => Err(format!("its first record is not a shale version edit: {e}")),
        })?,
        Some(FileType::Wal(_)) => first_record(fs, &path, |r| {
            WriteBatch::decode(r)
                .map(|_| ())
                .map_err(|e| format!("its first record is not a shale write batch: {e}"))
        })?,
        Some(FileType::Current) => current(dir, fs, &path)?,
    })
}

fn table(fs: &dyn FileSystem, path: &Path) -> Result<Verdict> {
    let file = fs
        .open_random(path)
        .map_err(|e| Error::io("open table", path, e))?;
    let size = file.size();
    if size < 8 {
        return Ok(Verdict::Damaged(format!(
            "{size} bytes: shorter than a footer"
        )));
    }
    let mut tail = [0u8; 8];
    file.read_exact_at(size - 8, &mut tail)
        .map_err(|e| Error::io("read table", path, e))?;
    let magic = u64::from_le_bytes(tail);
    if magic == TABLE_MAGIC {
        return Ok(Verdict::Shale);
    }
    Ok(
        match FOREIGN_TABLE_MAGICS.iter().find(|(m, _)| *m == magic) {
            Some((_, engine)) => Verdict::Foreign(format!("it ends in {engine}'s table magic")),
            None => Verdict::Damaged("its last 8 bytes are no table magic".into()),
        },
    )
}

/// Judges a log-framed file by its first record: `check` says whether the
/// record is shale's.
fn first_record(
    fs: &dyn FileSystem,
    path: &Path,
    check: impl FnOnce(&[u8]) -> std::result::Result<(), String>,
) -> Result<Verdict> {
    let file = fs
        .open_random(path)
        .map_err(|e| Error::io("open", path, e))?;
    if file.size() == 0 {
        return Ok(Verdict::Leftover);
    }
    let mut reader = LogReader::new(file, path.into());
    Ok(match reader.read_record() {
        Ok(Some(record)) => match check(&record) {
            Ok(()) => Verdict::Shale,
            Err(why) => Verdict::Foreign(why),
        },
        // A torn first record: nothing was ever acknowledged from it.
        Ok(None) => Verdict::Leftover,
        Err(Error::Corruption { reason, .. }) => {
            Verdict::Damaged(format!("its first record is damaged: {reason}"))
        }
        Err(e) => return Err(e),
    })
}

fn current(dir: &Path, fs: &dyn FileSystem, path: &Path) -> Result<Verdict> {
    let bytes = fs.read_all(path).map_err(|e| Error::io("read", path, e))?;
    let Some(manifest) = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .filter(|s| matches!(parse(s), Some(FileType::Manifest(_))))
    else {
        return Ok(Verdict::Foreign(
            "it does not hold the name of a manifest".into(),
        ));
    };
    let manifest_path = dir.join(manifest);
    if !fs
        .exists(&manifest_path)
        .map_err(|e| Error::io("stat", &manifest_path, e))?
    {
        return Ok(Verdict::Damaged(format!(
            "it names {manifest}, which is missing"
        )));
    }
    Ok(match entry(dir, fs, manifest)? {
        Verdict::Shale => Verdict::Shale,
        Verdict::Foreign(why) => Verdict::Foreign(format!("it names {manifest}: {why}")),
        Verdict::Damaged(why) => Verdict::Damaged(format!("it names {manifest}: {why}")),
        Verdict::Leftover => Verdict::Damaged(format!("it names {manifest}, which is empty")),
    })
}
