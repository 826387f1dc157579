//! Salvage of a database whose manifest is damaged or lost (after LevelDB's
//! `RepairDB`): rebuild a manifest from the tables and write-ahead logs present.
//!
//! 1. Every table is read in full. A table that reads cleanly is kept as it is;
//!    one that fails (at open or at some block) has the entries it yields before
//!    the damage rewritten into a new table, and the original is moved to
//!    `lost/`.
//! 2. Every write-ahead log is replayed up to its first damage and written as
//!    tables.
//! 3. A new manifest places all these tables in L0 (newest first by sequence
//!    number) and names a fresh, empty log; `CURRENT` points at it. The old
//!    manifests and logs are moved to `lost/` (nothing is deleted).
//! 4. The database is opened and fully compacted, so that the newest version
//!    of every key wins, whatever table it came from.
//!
//! What it cannot know without the manifest: which tables were already
//! obsolete. A compaction's inputs still on disk (a crash before their
//! deletion) come back; their keys are older than the compaction's output and
//! lose to it, except where the compaction had dropped a tombstone at the last
//! level: such a deleted key can reappear. Entries after damage in a table or
//! log are lost.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale_env::{FileSystem, WriteLifetime};

use super::survey::survey;
use super::{background, Db};
use crate::error::{Error, Result};
use crate::filenames::{parse, table_name, wal_name, FileType, CURRENT, LOCK};
use crate::format::{parse_internal_key, InternalKey, SeqNo, ValueKind};
use crate::memtable::MemTable;
use crate::metrics::Stats;
use crate::options::{Options, WalRecoveryMode};
use crate::table::{BlockCache, ReadContext, TableReader};
use crate::version::manifest::{self, ManifestHeader};
use crate::version::{LifetimeStats, NewFile, ObsoleteFiles, Version, VersionEdit};
use crate::wal::LogReader;

/// Where repair moves the files it replaces, inside the database directory.
pub const LOST_DIR: &str = "lost";

/// How [`Db::repair_with`] treats a directory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RepairOptions {
    /// Repair a directory that cannot be recognised as shale's (foreign
    /// files are moved to `lost/` with the rest). Off by default: only for a
    /// database whose files are too damaged to be recognised.
    pub force: bool,
}

/// What [`Db::repair`] found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// Tables that read cleanly and were kept as they are.
    pub tables_kept: u64,
    /// Damaged tables whose readable entries were rewritten into a new table.
    pub tables_salvaged: u64,
    /// Damaged tables of which nothing could be read.
    pub tables_unreadable: u64,
    /// Write-ahead log records replayed.
    pub wal_records: u64,
    /// Logs that ended in damage (the rest of each was lost).
    pub wals_damaged: u64,
    /// Entries (values and tombstones) in the rebuilt database before its
    /// final compaction.
    pub entries: u64,
    /// Highest sequence number found.
    pub last_sequence: SeqNo,
    /// Files moved to the `lost/` directory, by name.
    pub moved_to_lost: Vec<String>,
    /// One line per problem met (the file, offset and reason).
    pub problems: Vec<String>,
}

impl Db {
    /// Rebuilds the manifest of the database in `path` from the tables and
    /// logs present, then compacts it (see the module documentation of
    /// `db/repair.rs` for what is kept and what can be lost). For a database
    /// that [`Db::open`] refuses with [`Error::Corruption`] in its manifest.
    /// Nothing is deleted: replaced files (the old `CURRENT` included) go to
    /// `lost/` in the directory.
    ///
    /// Refuses with [`Error::NotADatabase`], touching nothing, a directory
    /// that is not recognisably shale's: one holding a file shale never
    /// writes or whose bytes are another program's (a `CURRENT` naming a
    /// manifest that is not shale's, a table with another engine's magic), or
    /// nothing that can be recognised as shale's at all (see `db/survey.rs`).
    /// [`Db::repair_with`] with [`RepairOptions::force`] repairs it anyway.
    /// [`Error::Locked`] while the database is open elsewhere.
    pub fn repair(path: impl AsRef<Path>, options: Options) -> Result<RepairReport> {
        Db::repair_with(path, options, RepairOptions::default())
    }

    /// [`Db::repair`] with [`RepairOptions`].
    pub fn repair_with(
        path: impl AsRef<Path>,
        options: Options,
        repair: RepairOptions,
    ) -> Result<RepairReport> {
        let path = path.as_ref();
        let report = rebuild_manifest(path, &options, repair)?;
        let db = Db::open(path, options)?;
        db.compact_all()?;
        db.close()?;
        Ok(report)
    }
}

fn rebuild_manifest(path: &Path, opts: &Options, repair: RepairOptions) -> Result<RepairReport> {
    opts.validate()?;
    let fs = opts.fs.clone();
    let not_a_db = |reason: &str| Error::NotADatabase {
        path: path.into(),
        reason: reason.into(),
    };
    if !fs.exists(path).map_err(|e| Error::io("stat", path, e))? {
        return Err(not_a_db("directory does not exist"));
    }
    // Whose directory it is, before anything (even the lock file) is
    // written in it.
    if !repair.force {
        survey(path, &*fs)?.require_shale(path, "repair (--force repairs it anyway)")?;
    }
    let names = fs.list(path).map_err(|e| Error::io("list", path, e))?;
    let mut tables = Vec::new();
    let mut wals = Vec::new();
    let mut manifests = Vec::new();
    for n in &names {
        match parse(n) {
            Some(FileType::Table(x)) => tables.push(x),
            Some(FileType::Wal(x)) => wals.push(x),
            Some(FileType::Manifest(x)) => manifests.push(x),
            _ => {}
        }
    }
    if tables.is_empty() && wals.is_empty() && manifests.is_empty() {
        return Err(not_a_db("no table, log or manifest to repair from"));
    }
    tables.sort_unstable();
    wals.sort_unstable();
    let lock_path = path.join(LOCK);
    let _lock = fs.lock(&lock_path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::WouldBlock {
            Error::Locked { path: path.into() }
        } else {
            Error::io("lock", &lock_path, e)
        }
    })?;

    let highest = names
        .iter()
        .filter_map(|n| parse(n).and_then(FileType::number))
        .max()
        .unwrap_or(0);
    let mut r = Repairer {
        dir: path,
        fs: &*fs,
        opts,
        stats: Stats::default(),
        ctx: ReadContext {
            cache: Arc::new(BlockCache::new(8 << 20, 1)),
            stats: Arc::new(Stats::default()),
            verify_checksums: true,
        },
        next_file_number: highest + 1,
        edit: VersionEdit::default(),
        report: RepairReport::default(),
        to_lost: Vec::new(),
    };
    for &number in &tables {
        r.table(number)?;
    }
    for &number in &wals {
        r.wal(number)?;
        r.to_lost.push(wal_name(number));
    }
    if !r.edit.added.is_empty() {
        fs.sync_dir(path)
            .map_err(|e| Error::io("sync directory", path, e))?;
    }

    let last_sequence = r
        .edit
        .added
        .iter()
        .map(|(_, f)| f.largest_seqno)
        .max()
        .unwrap_or(0);
    r.report.last_sequence = last_sequence;
    r.report.entries = r.edit.added.iter().map(|(_, f)| f.num_entries).sum();
    let version = Version::default().apply(&r.edit, &Arc::new(ObsoleteFiles::default()));
    let log_number = r.next_file_number;
    let manifest_number = r.next_file_number + 1;
    // The old CURRENT goes to lost/ first: it is never overwritten.
    if names.iter().any(|n| n == CURRENT) {
        r.move_current_to_lost()?;
    }
    let wal_path = path.join(wal_name(log_number));
    fs.create_append(&wal_path, WriteLifetime::Short)
        .map_err(|e| Error::io("create wal", &wal_path, e))?;
    manifest::write_new(
        path,
        &*fs,
        manifest_number,
        &version,
        ManifestHeader {
            log_number,
            next_file_number: manifest_number + 1,
            last_sequence,
            lifetime: LifetimeStats::default(),
        },
    )?;
    // The new manifest is durable and names none of these: keep them aside.
    for m in manifests {
        r.to_lost.push(crate::filenames::manifest_name(m));
    }
    r.move_to_lost()?;
    Ok(r.report)
}

struct Repairer<'a> {
    dir: &'a Path,
    fs: &'a dyn FileSystem,
    opts: &'a Options,
    stats: Stats,
    ctx: ReadContext,
    next_file_number: u64,
    edit: VersionEdit,
    report: RepairReport,
    /// Names to move to `lost/` once the new manifest is durable.
    to_lost: Vec<String>,
}

/// Bounds of the entries of a table.
#[derive(Default)]
struct Extent {
    smallest: Option<Vec<u8>>,
    largest: Vec<u8>,
    smallest_seqno: SeqNo,
    largest_seqno: SeqNo,
    entries: u64,
}

impl Repairer<'_> {
    fn new_number(&mut self) -> u64 {
        let n = self.next_file_number;
        self.next_file_number += 1;
        n
    }

    /// Reads table `number` in full: kept if clean, else salvaged.
    fn table(&mut self, number: u64) -> Result<()> {
        let path = self.dir.join(table_name(number));
        let file = self
            .fs
            .open_random(&path)
            .map_err(|e| Error::io("open table", &path, e))?;
        let size = file.size();
        let reader = TableReader::open(file, path.clone(), number, self.ctx.clone(), false, false);
        let (extent, damage) = match reader {
            Ok(reader) => {
                let reader = Arc::new(reader);
                let mut extent = Extent::default();
                let damage = scan(&reader, &path, |key, seq, _, _| {
                    if extent.smallest.is_none() {
                        extent.smallest = Some(key.to_vec());
                        extent.smallest_seqno = seq;
                    }
                    extent.largest.clear();
                    extent.largest.extend_from_slice(key);
                    extent.smallest_seqno = extent.smallest_seqno.min(seq);
                    extent.largest_seqno = extent.largest_seqno.max(seq);
                    extent.entries += 1;
                })
                .err()
                .map(|e| {
                    // Read the entries before the damage again, to keep them.
                    let mem = MemTable::new();
                    let _ = scan(&reader, &path, |key, seq, kind, value| {
                        if let (Some(ik), Some(kind)) = (parse_internal_key(key), kind) {
                            mem.add(seq, kind, ik.user_key, value);
                        }
                    });
                    (e, mem)
                });
                (extent, damage)
            }
            Err(e) => (Extent::default(), Some((e, MemTable::new()))),
        };
        match damage {
            None => {
                let (Some(smallest), false) = (extent.smallest, extent.entries == 0) else {
                    // An empty table holds nothing; keep it aside.
                    self.to_lost.push(table_name(number));
                    return Ok(());
                };
                self.report.tables_kept += 1;
                self.edit.added.push((
                    0,
                    NewFile {
                        number,
                        size,
                        smallest: internal_key(&path, smallest)?,
                        largest: internal_key(&path, extent.largest)?,
                        smallest_seqno: extent.smallest_seqno,
                        largest_seqno: extent.largest_seqno,
                        num_entries: extent.entries,
                    },
                ));
            }
            Some((e, mem)) => {
                self.report.problems.push(e.to_string());
                self.to_lost.push(table_name(number));
                if mem.is_empty() {
                    self.report.tables_unreadable += 1;
                } else {
                    self.report.tables_salvaged += 1;
                    self.write_table(Arc::new(mem))?;
                }
            }
        }
        Ok(())
    }

    /// Replays log `number` up to its first damage into tables.
    fn wal(&mut self, number: u64) -> Result<()> {
        let path = self.dir.join(wal_name(number));
        let file = self
            .fs
            .open_random(&path)
            .map_err(|e| Error::io("open wal", &path, e))?;
        let mut reader = LogReader::with_mode(file, path.clone(), WalRecoveryMode::PointInTime);
        let mut mem = Arc::new(MemTable::new());
        loop {
            let record = match reader.read_record() {
                Ok(Some(record)) => record,
                Ok(None) => break,
                Err(e) => {
                    // Reading failed (I/O): keep what was read.
                    self.report.problems.push(e.to_string());
                    self.report.wals_damaged += 1;
                    break;
                }
            };
            let at = reader.last_record_offset();
            let Ok((seq, batch)) = crate::batch::WriteBatch::decode(&record) else {
                self.report.problems.push(
                    Error::corruption(&path, at, "bad write batch; the rest of the log is lost")
                        .to_string(),
                );
                self.report.wals_damaged += 1;
                break;
            };
            let ops: Vec<_> = batch.ops().collect();
            if ops.iter().any(|op| op.is_err()) {
                self.report.problems.push(
                    Error::corruption(&path, at, "bad write batch; the rest of the log is lost")
                        .to_string(),
                );
                self.report.wals_damaged += 1;
                break;
            }
            for (j, op) in ops.into_iter().flatten().enumerate() {
                mem.add(seq + j as u64, op.kind, op.key, op.value);
            }
            self.report.wal_records += 1;
            if mem.approximate_bytes() >= self.opts.write_buffer_size {
                self.write_table(mem)?;
                mem = Arc::new(MemTable::new());
            }
        }
        if let crate::wal::LogEnd::TornTail { offset } = reader.end() {
            self.report.problems.push(format!(
                "{}: damage at offset {offset}; the rest of the log is lost",
                path.display()
            ));
            self.report.wals_damaged += 1;
        }
        if !mem.is_empty() {
            self.write_table(mem)?;
        }
        Ok(())
    }

    fn write_table(&mut self, mem: Arc<MemTable>) -> Result<()> {
        let number = self.new_number();
        if let Some(f) =
            background::write_level0(self.dir, self.opts, &self.stats, None, &mem, number)?
        {
            self.edit.added.push((0, f));
        }
        Ok(())
    }

    /// Moves `CURRENT` to `lost/` (durably) before a new one is written.
    fn move_current_to_lost(&mut self) -> Result<()> {
        let lost = self.dir.join(LOST_DIR);
        self.fs
            .create_dir_all(&lost)
            .map_err(|e| Error::io("create directory", &lost, e))?;
        // An earlier repair's CURRENT there is kept too.
        let mut name = CURRENT.to_string();
        for n in 1.. {
            let taken = lost.join(&name);
            if !self
                .fs
                .exists(&taken)
                .map_err(|e| Error::io("stat", &taken, e))?
            {
                break;
            }
            name = format!("{CURRENT}.{n}");
        }
        let from = self.dir.join(CURRENT);
        self.fs
            .rename(&from, &lost.join(&name))
            .map_err(|e| Error::io("move to lost/", &from, e))?;
        for dir in [lost.as_path(), self.dir] {
            self.fs
                .sync_dir(dir)
                .map_err(|e| Error::io("sync directory", dir, e))?;
        }
        self.report.moved_to_lost.push(name);
        Ok(())
    }

    fn move_to_lost(&mut self) -> Result<()> {
        if self.to_lost.is_empty() {
            return Ok(());
        }
        let lost = self.dir.join(LOST_DIR);
        self.fs
            .create_dir_all(&lost)
            .map_err(|e| Error::io("create directory", &lost, e))?;
        for name in std::mem::take(&mut self.to_lost) {
            let from = self.dir.join(&name);
            let to: PathBuf = lost.join(&name);
            self.fs
                .rename(&from, &to)
                .map_err(|e| Error::io("move to lost/", &from, e))?;
            self.report.moved_to_lost.push(name);
        }
        self.fs
            .sync_dir(&lost)
            .map_err(|e| Error::io("sync directory", &lost, e))?;
        self.fs
            .sync_dir(self.dir)
            .map_err(|e| Error::io("sync directory", self.dir, e))
    }
}

/// Calls `f(internal key, seq, kind, value)` for every entry of the table in
/// order, up to the first error, which is returned.
fn scan(
    reader: &Arc<TableReader>,
    path: &Path,
    mut f: impl FnMut(&[u8], SeqNo, Option<ValueKind>, &[u8]),
) -> Result<()> {
    let mut it = reader.scan();
    it.seek_to_first();
    while it.valid() {
        let Some(ik) = parse_internal_key(it.key()) else {
            return Err(Error::corruption(path, 0, "malformed internal key"));
        };
        f(it.key(), ik.seq, ik.value_kind(), it.value());
        it.next();
    }
    it.status()
}

fn internal_key(path: &Path, encoded: Vec<u8>) -> Result<InternalKey> {
    InternalKey::from_encoded(encoded)
        .ok_or_else(|| Error::corruption(path, 0, "malformed internal key"))
}
