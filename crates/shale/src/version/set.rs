//! The version set: the live manifest and the counters every edit records
//! (next file number, last sequence), and the three steps of recording an edit.
//!
//! # Recording an edit without holding the state lock
//!
//! The database keeps its `VersionSet` under its state lock. Appending an edit
//! to the manifest and syncing it takes a device flush, and no writer may wait
//! for that, so [`VersionSet::begin`], [`ManifestWrite::write`] and
//! [`VersionSet::finish`] split the work as LevelDB's `LogAndApply` and
//! Pebble's `logAndApply` do:
//!
//! 1. `begin`, under the lock: stamp the edit with the counters, apply it to
//!    the current version, decide whether the manifest rolls over, and check
//!    the manifest writer out of the set.
//! 2. `write`, without the lock: append and sync the record (or write a new
//!    manifest holding a snapshot and point `CURRENT` at it).
//! 3. `finish`, under the lock again: check the writer back in and return the
//!    new version for the caller to install.
//!
//! While the writer is checked out ([`VersionSet::is_writing`]) no other edit
//! may begin; the caller waits on its condition variable. So edits stay
//! serialized, and since nothing else installs versions, the version an edit
//! was applied to is still current when the edit is installed.

use std::path::PathBuf;
use std::sync::Arc;

use shale_env::FileSystem;

use super::manifest::{self, ManifestHeader};
use super::{LifetimeStats, ObsoleteFiles, Version, VersionEdit};
use crate::error::{Error, Result};
use crate::format::SeqNo;
use crate::wal::LogWriter;

/// The manifest and the counters recorded with each edit.
pub(crate) struct VersionSet {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    /// Past this length the next edit writes a new manifest instead.
    max_manifest_bytes: u64,
    next_file_number: u64,
    /// Last sequence number handed to a write group.
    pub last_sequence: SeqNo,
    manifest_number: u64,
    manifest_len: u64,
    /// The manifest writer; `None` while an edit is being written.
    writer: Option<LogWriter>,
}

/// What a freshly opened database records in its new manifest.
pub(crate) struct NewManifest<'a> {
    pub number: u64,
    pub version: &'a Version,
    pub header: ManifestHeader,
}

impl VersionSet {
    /// Writes a manifest holding a snapshot of `new.version` and points
    /// `CURRENT` at it: the start of a read-write database's life after
    /// recovery. `next_file_number` must exceed every number in use.
    pub(crate) fn create(
        dir: PathBuf,
        fs: Arc<dyn FileSystem>,
        max_manifest_bytes: u64,
        new: NewManifest<'_>,
    ) -> Result<VersionSet> {
        let next_file_number = new.header.next_file_number;
        let last_sequence = new.header.last_sequence;
        let writer = manifest::write_new(&dir, &*fs, new.number, new.version, new.header)?;
        Ok(VersionSet {
            dir,
            fs,
            max_manifest_bytes,
            next_file_number,
            last_sequence,
            manifest_number: new.number,
            manifest_len: writer.len(),
            writer: Some(writer),
        })
    }

    /// A version set whose manifest is `writer` as it is (a read-only
    /// database's detached writer): nothing is written here.
    pub(crate) fn attach(
        dir: PathBuf,
        fs: Arc<dyn FileSystem>,
        next_file_number: u64,
        last_sequence: SeqNo,
        writer: LogWriter,
    ) -> VersionSet {
        VersionSet {
            dir,
            fs,
            max_manifest_bytes: u64::MAX,
            next_file_number,
            last_sequence,
            manifest_number: 0,
            manifest_len: writer.len(),
            writer: Some(writer),
        }
    }

    /// Hands out a file number never used before.
    pub(crate) fn new_file_number(&mut self) -> u64 {
        let n = self.next_file_number;
        self.next_file_number += 1;
        n
    }

    /// Number of the live manifest (older ones are obsolete).
    pub(crate) fn manifest_number(&self) -> u64 {
        self.manifest_number
    }

    /// An edit is between [`VersionSet::begin`] and [`VersionSet::finish`].
    pub(crate) fn is_writing(&self) -> bool {
        self.writer.is_none()
    }

    /// Step 1 (under the state lock): stamps `edit` with the counters and
    /// `lifetime`, applies it to `base` (the current version) and checks the
    /// manifest writer out. `oldest_log` is the oldest write-ahead log still
    /// needed, recorded if the manifest rolls over and the edit names none.
    ///
    /// Fails with [`Error::Internal`] if another edit is being written: the
    /// caller must wait until [`VersionSet::is_writing`] is false.
    pub(crate) fn begin(
        &mut self,
        mut edit: VersionEdit,
        base: &Version,
        oldest_log: u64,
        lifetime: LifetimeStats,
        obsolete: &Arc<ObsoleteFiles>,
    ) -> Result<ManifestWrite> {
        let Some(writer) = self.writer.take() else {
            return Err(Error::Internal(
                "a manifest edit began while another was being written".into(),
            ));
        };
        edit.next_file_number = Some(self.next_file_number);
        edit.last_sequence = Some(self.last_sequence);
        edit.lifetime = Some(lifetime);
        let version = base.apply(&edit, obsolete);
        let step = if self.manifest_len > self.max_manifest_bytes {
            let number = self.new_file_number();
            Step::Rollover {
                number,
                header: ManifestHeader {
                    log_number: edit.log_number.unwrap_or(oldest_log),
                    next_file_number: self.next_file_number,
                    last_sequence: self.last_sequence,
                    lifetime,
                },
            }
        } else {
            Step::Append(edit.encode())
        };
        Ok(ManifestWrite {
            dir: self.dir.clone(),
            fs: self.fs.clone(),
            writer,
            version,
            step,
        })
    }

    /// Step 3 (under the state lock): checks the writer back in and returns
    /// the version to install, or the error of step 2. After an error the
    /// edit may or may not be on disk (only a reopen can tell), so the caller
    /// must poison the database.
    pub(crate) fn finish(&mut self, written: WrittenEdit) -> Result<Version> {
        let WrittenEdit {
            writer,
            version,
            outcome,
        } = written;
        self.writer = Some(writer);
        let new_manifest = outcome?;
        if let Some(number) = new_manifest {
            self.manifest_number = number;
        }
        self.manifest_len = self.writer.as_ref().map_or(0, LogWriter::len);
        Ok(version)
    }
}

/// How step 2 records the edit.
enum Step {
    /// Append the encoded edit to the live manifest.
    Append(Vec<u8>),
    /// Write manifest `number` holding a snapshot of the new version.
    Rollover { number: u64, header: ManifestHeader },
}

/// An edit checked out by [`VersionSet::begin`], to be written without the
/// state lock.
pub(crate) struct ManifestWrite {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    writer: LogWriter,
    version: Version,
    step: Step,
}

/// The result of [`ManifestWrite::write`], for [`VersionSet::finish`].
pub(crate) struct WrittenEdit {
    writer: LogWriter,
    version: Version,
    /// The number of the new manifest if it rolled over.
    outcome: Result<Option<u64>>,
}

impl ManifestWrite {
    /// Step 2 (without the state lock): makes the edit durable.
    pub(crate) fn write(self) -> WrittenEdit {
        let ManifestWrite {
            dir,
            fs,
            mut writer,
            version,
            step,
        } = self;
        let outcome = match step {
            Step::Append(record) => writer
                .add_record(&record)
                .and_then(|()| writer.sync())
                .map(|()| None),
            Step::Rollover { number, header } => {
                manifest::write_new(&dir, &*fs, number, &version, header).map(|new| {
                    writer = new;
                    Some(number)
                })
            }
        };
        WrittenEdit {
            writer,
            version,
            outcome,
        }
    }
}
