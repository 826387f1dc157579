//! Deleting a database (after LevelDB's `DestroyDB`): only shale's files,
//! only under the database's own lock.

use std::path::Path;

use shale_env::FileSystem;

use super::open::{take_lock, Access};
use super::survey::survey;
use super::Db;
use crate::error::{Error, Result};
use crate::filenames::LOST_DIR;
use crate::filenames::{CURRENT, LOCK};
use crate::options::Options;

impl Db {
    /// Deletes the database in `path`: `CURRENT` first (from then on the
    /// directory is no database that opens), then its tables, logs,
    /// manifests, temporary files, what [`Db::repair`] kept in `lost/`, and
    /// last the lock file. The directory itself (and an emptied `lost/`)
    /// stays; [`Db::open`] creates a new database in it.
    ///
    /// Refuses, deleting nothing: with [`Error::Locked`] while another
    /// process or handle has the database open (read-only included); with
    /// [`Error::NotADatabase`] when the directory holds anything that is not
    /// shale's (judged by the files' bytes: see `db/survey.rs`), or nothing
    /// recognisable as shale's besides the leftovers of an abandoned
    /// creation. A missing directory is not an error (nothing to delete).
    /// Safe to run again after a crash part way through.
    pub fn destroy(path: impl AsRef<Path>, options: &Options) -> Result<()> {
        let path = path.as_ref();
        let fs = options.fs.as_ref();
        if !fs.exists(path).map_err(|e| Error::io("stat", path, e))? {
            return Ok(());
        }
        // Look before creating the lock file: a foreign directory gets none.
        survey(path, fs)?.require_shale(path, "destroy")?;
        let _lock = take_lock(path, fs, Access::ReadWrite)?;
        // What it holds now: another process may have changed it meanwhile.
        let s = survey(path, fs)?;
        s.require_shale(path, "destroy")?;
        if s.verdict(CURRENT).is_some() {
            remove(fs, &path.join(CURRENT))?;
            sync_dir(fs, path)?;
        }
        for (name, _) in &s.entries {
            match name.as_str() {
                CURRENT | LOCK => {}
                LOST_DIR => remove_files_under(fs, &path.join(LOST_DIR))?,
                _ => remove(fs, &path.join(name))?,
            }
        }
        let lock = path.join(LOCK);
        if fs.exists(&lock).map_err(|e| Error::io("stat", &lock, e))? {
            remove(fs, &lock)?;
        }
        sync_dir(fs, path)
    }
}

fn remove(fs: &dyn FileSystem, path: &Path) -> Result<()> {
    fs.remove(path).map_err(|e| Error::io("remove", path, e))
}

fn sync_dir(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    fs.sync_dir(dir)
        .map_err(|e| Error::io("sync directory", dir, e))
}

/// Removes every file below `dir` (the file system trait removes files, not
/// directories: the emptied directories stay).
fn remove_files_under(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    let names = fs.list(dir).map_err(|e| Error::io("list", dir, e))?;
    for name in names {
        let p = dir.join(&name);
        if fs.list(&p).is_ok() {
            remove_files_under(fs, &p)?;
        } else {
            remove(fs, &p)?;
        }
    }
    sync_dir(fs, dir)
}
