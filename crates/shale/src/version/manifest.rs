//! The manifest on disk: recovering a version from it, writing a new one, and
//! pointing `CURRENT` at it (format in `docs/format/manifest.md`).
//!
//! # Recovery deletes nothing it cannot prove obsolete
//!
//! A manifest record is appended and synced before the change it describes takes
//! effect (tables of a compaction's inputs are deleted only after its record is
//! durable). So the only damage a crash can leave is a *torn* last record (cut
//! short, or zeroed from some point): an edit whose sync never returned, whose
//! effects never happened. Every other kind of damage, and any sign that edits
//! after the readable ones took effect (a table the recovered version names is
//! missing or has another size, the write-ahead log it names is gone), fails
//! recovery with [`Error::Corruption`] before anything is written or deleted.
//! `shale repair` salvages such a database.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale_env::{FileSystem, WriteLifetime};

use super::{LifetimeStats, ObsoleteFiles, Version, VersionEdit};
use crate::error::{Error, Result};
use crate::filenames::{manifest_name, parse, table_name, wal_name, FileType, CURRENT};
use crate::format::{SeqNo, DB_FORMAT_VERSION};
use crate::wal::{LogReader, LogWriter};

/// What recovery learned from the manifest.
pub(crate) struct Recovered {
    pub version: Version,
    pub log_number: u64,
    pub next_file_number: u64,
    pub last_sequence: SeqNo,
    pub lifetime: LifetimeStats,
    /// The manifest read.
    pub manifest_path: PathBuf,
    /// Offset of the record that added each table of `version`.
    pub added_at: HashMap<u64, u64>,
}

/// Reads `CURRENT` and replays the manifest it names. A torn last record (see
/// the module docs) is dropped; any other damage is `Corruption`.
pub(crate) fn recover(
    dir: &Path,
    fs: &dyn FileSystem,
    sink: &Arc<ObsoleteFiles>,
) -> Result<Recovered> {
    let current_path = dir.join(CURRENT);
    let current = fs
        .read_all(&current_path)
        .map_err(|e| Error::io("read", &current_path, e))?;
    let name = std::str::from_utf8(&current)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .filter(|s| matches!(parse(s), Some(FileType::Manifest(_))))
        .ok_or_else(|| Error::corruption(&current_path, 0, "CURRENT does not name a manifest"))?;
    let manifest_path = dir.join(name);
    let file = fs
        .open_random(&manifest_path)
        .map_err(|e| Error::io("open manifest", &manifest_path, e))?;
    let mut reader = LogReader::new(file, manifest_path.clone());
    let mut version = Version::default();
    let mut log_number = None;
    let mut next_file = None;
    let mut last_sequence = None;
    let mut lifetime = LifetimeStats::default();
    let mut format = None;
    let mut records = 0u64;
    let mut added_at = HashMap::new();
    while let Some(record) = reader.read_record()? {
        let at = reader.last_record_offset();
        let edit = VersionEdit::decode(&record).map_err(|reason| {
            Error::corruption(
                &manifest_path,
                at,
                format!("version edit {records}: {reason}"),
            )
        })?;
        records += 1;
        format = edit.db_format.or(format);
        log_number = edit.log_number.or(log_number);
        next_file = edit.next_file_number.or(next_file);
        last_sequence = edit.last_sequence.or(last_sequence);
        lifetime = edit.lifetime.unwrap_or(lifetime);
        for (_, f) in &edit.added {
            added_at.entry(f.number).or_insert(at);
        }
        version = version.apply(&edit, sink).map_err(|reason| {
            Error::corruption(
                &manifest_path,
                at,
                format!("version edit {}: {reason}", records - 1),
            )
        })?;
    }
    match format {
        Some(DB_FORMAT_VERSION) => {}
        Some(v) => {
            return Err(Error::NotADatabase {
                path: dir.into(),
                reason: format!(
                    "database format version {v} is not supported (this build reads {DB_FORMAT_VERSION})"
                ),
            })
        }
        None => {
            return Err(Error::corruption(
                &manifest_path,
                0,
                "manifest has no format record",
            ))
        }
    }
    let (Some(log_number), Some(next_file_number), Some(last_sequence)) =
        (log_number, next_file, last_sequence)
    else {
        return Err(Error::corruption(
            &manifest_path,
            0,
            "manifest lacks log number, next file or last sequence",
        ));
    };
    Ok(Recovered {
        version,
        log_number,
        next_file_number,
        last_sequence,
        lifetime,
        manifest_path,
        added_at,
    })
}

/// Checks that every file the recovered state needs is in `names` (the
/// directory listing) with the recorded size: each table of the version, and
/// the write-ahead log the manifest names as the oldest one still needed. A
/// missing or resized file means edits after the readable ones took effect, or
/// a damaged directory: `Corruption` naming the manifest and the record that
/// added the table, before recovery writes or deletes anything.
pub(crate) fn check_files_present(
    dir: &Path,
    fs: &dyn FileSystem,
    rec: &Recovered,
    names: &[String],
) -> Result<()> {
    let present: std::collections::HashSet<&str> = names.iter().map(String::as_str).collect();
    for (level, f) in rec.version.all_files() {
        let name = table_name(f.number);
        let at = rec.added_at.get(&f.number).copied().unwrap_or(0);
        let problem = if !present.contains(name.as_str()) {
            Some("is missing".to_string())
        } else {
            let path = dir.join(&name);
            let size = fs
                .file_size(&path)
                .map_err(|e| Error::io("stat", &path, e))?;
            (size != f.size).then(|| format!("has {size} bytes"))
        };
        if let Some(problem) = problem {
            return Err(Error::corruption(
                &rec.manifest_path,
                at,
                format!(
                    "the manifest names table {name} (L{level}, {} bytes), which {problem}: \
                     the manifest may have lost edits; `shale repair` rebuilds one from the files present",
                    f.size
                ),
            ));
        }
    }
    if rec.log_number != 0 {
        let name = wal_name(rec.log_number);
        if !present.contains(name.as_str()) {
            return Err(Error::corruption(
                &rec.manifest_path,
                0,
                format!(
                    "the manifest names {name} as the oldest write-ahead log still needed, \
                     which is missing: the manifest may have lost edits; `shale repair` \
                     rebuilds one from the files present"
                ),
            ));
        }
    }
    Ok(())
}

/// The counters a new manifest starts with.
pub(crate) struct ManifestHeader {
    pub log_number: u64,
    pub next_file_number: u64,
    pub last_sequence: SeqNo,
    pub lifetime: LifetimeStats,
}

/// Writes a manifest holding a snapshot of `version`, syncs it, and points
/// `CURRENT` at it (write to a temporary file, sync, rename, sync directory).
pub(crate) fn write_new(
    dir: &Path,
    fs: &dyn FileSystem,
    number: u64,
    version: &Version,
    header: ManifestHeader,
) -> Result<LogWriter> {
    let path = dir.join(manifest_name(number));
    let file = fs
        .create_append(&path, WriteLifetime::Medium)
        .map_err(|e| Error::io("create manifest", &path, e))?;
    let mut manifest = LogWriter::new(file, path);
    let mut edit = version.snapshot_edit();
    edit.db_format = Some(DB_FORMAT_VERSION);
    edit.log_number = Some(header.log_number);
    edit.next_file_number = Some(header.next_file_number);
    edit.last_sequence = Some(header.last_sequence);
    edit.lifetime = Some(header.lifetime);
    manifest.add_record(&edit.encode())?;
    manifest.sync()?;
    set_current(dir, fs, number)?;
    Ok(manifest)
}

fn set_current(dir: &Path, fs: &dyn FileSystem, manifest_number: u64) -> Result<()> {
    let tmp = dir.join(format!("{CURRENT}.tmp"));
    let current = dir.join(CURRENT);
    if fs.exists(&tmp).map_err(|e| Error::io("stat", &tmp, e))? {
        fs.remove(&tmp).map_err(|e| Error::io("remove", &tmp, e))?;
    }
    let mut w = fs
        .create_object(&tmp, WriteLifetime::NotSet)
        .map_err(|e| Error::io("create", &tmp, e))?;
    w.write(format!("{}\n", manifest_name(manifest_number)).as_bytes())
        .map_err(|e| Error::io("write", &tmp, e))?;
    w.finish().map_err(|e| Error::io("sync", &tmp, e))?;
    fs.rename(&tmp, &current)
        .map_err(|e| Error::io("rename", &current, e))?;
    fs.sync_dir(dir)
        .map_err(|e| Error::io("sync directory", dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{InternalKey, ValueKind};
    use crate::version::TableMeta;
    use shale_env::MemFs;

    /// A manifest whose edit deletes a table the version does not hold is
    /// `Corruption` of the manifest at that edit's record, not a version
    /// that silently keeps (or loses) tables.
    #[test]
    fn an_edit_that_does_not_fit_is_corruption_at_its_record() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).expect("mkdir");
        let sink = Arc::new(ObsoleteFiles::default());
        let table = TableMeta {
            number: 5,
            size: 100,
            smallest: InternalKey::new(b"a", 1, ValueKind::Value),
            largest: InternalKey::new(b"b", 1, ValueKind::Value),
            smallest_seqno: 1,
            largest_seqno: 1,
            num_entries: 1,
            range_deletions: 0,
        };
        let add = VersionEdit {
            added: vec![(6, table)],
            ..VersionEdit::default()
        };
        let version = Version::default().apply(&add, &sink).expect("fits");
        let header = ManifestHeader {
            log_number: 1,
            next_file_number: 10,
            last_sequence: 1,
            lifetime: LifetimeStats::default(),
        };
        let mut w = write_new(dir, &fs, 2, &version, header).expect("manifest");
        assert_eq!(
            recover(dir, &fs, &sink).expect("recovers").version.levels[6].len(),
            1
        );
        let at = w.len();
        let bad = VersionEdit {
            deleted: vec![(6, 9)],
            ..VersionEdit::default()
        };
        w.add_record(&bad.encode()).expect("append");
        w.sync().expect("sync");
        match recover(dir, &fs, &sink).err().expect("refused") {
            Error::Corruption {
                file,
                offset,
                reason,
            } => {
                assert_eq!(file, dir.join(manifest_name(2)));
                assert_eq!(offset, at);
                assert!(
                    reason.contains("deletes table 9, which L6 does not hold"),
                    "{reason}"
                );
            }
            e => panic!("not corruption: {e}"),
        }
    }
}
