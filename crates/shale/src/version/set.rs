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

    /// The number [`VersionSet::new_file_number`] hands out next: every file
    /// the database created or is creating has a lower one.
    pub(crate) fn next_file_number(&self) -> u64 {
        self.next_file_number
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
        let version = base.apply(&edit, obsolete).map_err(|reason| {
            Error::Internal(format!("an edit does not fit its version: {reason}"))
        })?;
        let Some(writer) = self.writer.take() else {
            return Err(Error::Internal(
                "a manifest edit began while another was being written".into(),
            ));
        };
        edit.next_file_number = Some(self.next_file_number);
        edit.last_sequence = Some(self.last_sequence);
        edit.lifetime = Some(lifetime);
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use shale_env::{FaultFs, FaultRule, MemFs, OpKind};

    use super::*;
    use crate::format::{InternalKey, ValueKind};
    use crate::version::TableMeta;

    /// An edit adding L1 table `number`, whose keys are `[number]` and
    /// `[number, 1]` (so the tables of one test do not overlap).
    fn table(number: u64) -> VersionEdit {
        let mut edit = VersionEdit::default();
        let key = [number as u8];
        edit.added.push((
            1,
            TableMeta {
                number,
                size: 100,
                smallest: InternalKey::new(&key, 1, ValueKind::Value),
                largest: InternalKey::new(&[key[0], 1], 2, ValueKind::Value),
                smallest_seqno: 1,
                largest_seqno: 2,
                num_entries: 2,
                range_deletions: 0,
            },
        ));
        edit
    }

    fn create(fs: Arc<dyn FileSystem>, max_manifest_bytes: u64) -> VersionSet {
        fs.create_dir_all(Path::new("/db")).expect("MemFs creates");
        let header = ManifestHeader {
            log_number: 3,
            next_file_number: 5,
            last_sequence: 0,
            lifetime: LifetimeStats::default(),
        };
        let new = NewManifest {
            number: 4,
            version: &Version::default(),
            header,
        };
        VersionSet::create("/db".into(), fs, max_manifest_bytes, new).expect("created")
    }

    /// Records `edit` on top of `base` in the three steps.
    fn record(set: &mut VersionSet, base: &Version, edit: VersionEdit) -> Result<Version> {
        let sink = Arc::new(ObsoleteFiles::default());
        let write = set.begin(edit, base, 3, LifetimeStats::default(), &sink)?;
        set.finish(write.write())
    }

    fn recovered_tables(fs: &dyn FileSystem) -> Vec<u64> {
        let sink = Arc::new(ObsoleteFiles::default());
        let rec = manifest::recover(Path::new("/db"), fs, &sink).expect("recovers");
        rec.version.all_files().map(|(_, f)| f.number).collect()
    }

    #[test]
    fn one_edit_at_a_time_and_each_is_durable_once_finished() {
        let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
        let mut set = create(fs.clone(), u64::MAX);
        let sink = Arc::new(ObsoleteFiles::default());
        let base = Version::default();
        let first = set
            .begin(table(5), &base, 3, LifetimeStats::default(), &sink)
            .expect("begins");
        assert!(set.is_writing());
        let second = set.begin(table(6), &base, 3, LifetimeStats::default(), &sink);
        assert!(matches!(second, Err(Error::Internal(_))));
        let v = set.finish(first.write()).expect("written");
        assert!(!set.is_writing());
        let v = record(&mut set, &v, table(6)).expect("second edit");
        assert_eq!(v.all_files().count(), 2);
        assert_eq!(recovered_tables(&*fs), vec![5, 6]);
        assert_eq!(set.manifest_number(), 4);
    }

    #[test]
    fn a_full_manifest_rolls_over_to_a_snapshot_named_by_current() {
        let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
        let mut set = create(fs.clone(), 0);
        let v = record(&mut set, &Version::default(), table(5)).expect("edit");
        // The rollover took file number 5 from the counter (the table's own
        // number is the test's choice), and the old manifest stays until the
        // database deletes it as obsolete.
        assert_eq!(set.manifest_number(), 5);
        let current = fs.read_all(Path::new("/db/CURRENT")).expect("CURRENT");
        assert_eq!(current, b"MANIFEST-000005\n");
        assert_eq!(recovered_tables(&*fs), vec![5]);
        record(&mut set, &v, table(7)).expect("edit after the rollover");
        assert_eq!(set.manifest_number(), 6);
        assert_eq!(recovered_tables(&*fs), vec![5, 7]);
    }

    #[test]
    fn a_failed_sync_is_reported_and_the_writer_comes_back() {
        let fault = FaultFs::new(Arc::new(MemFs::new()));
        let mut set = create(fault.clone(), u64::MAX);
        fault.inject(FaultRule::io(OpKind::SyncAppend, 0));
        let failed = record(&mut set, &Version::default(), table(5));
        assert!(
            matches!(failed, Err(Error::Io { .. })),
            "{:?}",
            failed.err()
        );
        assert!(!set.is_writing());
    }
}
