//! Salvage of a damaged database (after LevelDB's `RepairDB`, block by block):
//! rebuild a manifest from the tables and write-ahead logs present, keeping
//! every data block and log record whose own checksum holds.
//!
//! 1. Every table is read in full and every block of it checked (footer,
//!    properties, index, filter, data). One that reads cleanly is kept as it
//!    is. A damaged one is salvaged block by block (`table::salvage`): every
//!    data block whose checksum holds is recovered, whether or not the
//!    footer, properties, index or filter read (in format 3 each data block
//!    is recognised by the checksummed tail that ends its last page; in
//!    format 2 by the trailer its page holds; in format 1 by following the
//!    chain of blocks, resuming at the next block the index names). The
//!    recovered entries are written into new tables and the original moves
//!    to `lost/`.
//! 2. Every write-ahead log is read past its damage (`wal::salvage`): every
//!    record whose fragments' checksums hold is replayed; after a damaged
//!    record the reader resynchronises at the next valid record start.
//!    A damaged record is not replayed; the keys it named are read from its
//!    bytes (exactly, where a one-byte repair or its length makes the damaged
//!    fragment match its checksum again). If its bytes name no keys, the
//!    replay stops there (point in time): that log's later records and every
//!    newer log are not replayed, since applying them on top of a gap of
//!    unknown writes would give a state that never existed.
//! 3. The quarantine (`db/quarantine.rs`): a lost block or record may have
//!    held the newest version or the deletion of some keys. Every entry the
//!    repair would restore, from any table or log, whose key a lost piece may
//!    have held in a newer version is quarantined instead: not restored,
//!    counted and listed. A table that read cleanly but holds quarantined
//!    entries is rewritten without them. So the repair never makes an older
//!    value the visible value of a key whose newer version was lost; such a
//!    key reads as absent.
//! 4. A new manifest places all these tables in L0 (newest first by sequence
//!    number) and names a fresh, empty log; `CURRENT` points at it. The old
//!    manifests and logs and the damaged or rewritten tables are moved to
//!    `lost/` (nothing is deleted, nothing is written outside the database
//!    directory).
//! 5. The database is opened and fully compacted, so that the newest version
//!    of every key wins, whatever table it came from.
//!
//! The report ([`RepairReport`]) gives per damaged file the byte ranges lost,
//! the blocks or records recovered and lost and the key ranges or keys they
//! may have held, and the entries quarantined.
//!
//! Limits. Without the manifest the repair cannot know which tables were
//! already obsolete: a compaction's inputs still on disk (a crash before
//! their deletion) come back; their keys are older than the compaction's
//! output and lose to it, except where the compaction had dropped a
//! tombstone at the last level: such a deleted key can reappear. For the
//! same reason a lost block of such an obsolete input quarantines the copies
//! of its entries in the compaction's output. A lost block whose table's
//! properties are also damaged is bounded only by its neighbours' keys and
//! may have held any sequence number, so its whole key range is
//! quarantined; with the footer and the properties both damaged a lost
//! *last* data block goes unseen. A table file in which no footer,
//! properties or data block is recognised (a table cut short by a crash in
//! its first page, or one destroyed whole) bounds nothing: it is reported
//! and moved aside, and nothing is quarantined for it. A format-1 table
//! whose index does not read loses everything after its first damaged data
//! block. Keys of a lost log record are exact when its damage is one byte
//! (or its length or checksum field); from more damage than that they are
//! read as found, and keys damaged in more than one byte are not
//! recognised; a record whose bytes do not parse stops the replay (above).
//! A block or record repaired to match its checksum is never restored (a
//! 32-bit checksum can be matched by chance): it is lost, visibly. Damaged
//! tables and the logs are read whole into memory.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale_env::{FileSystem, RandomAccessFile, WriteLifetime};

use super::quarantine::Quarantine;
use super::survey::survey;
use super::Db;
use crate::batch::WriteBatch;
use crate::compaction::job;
use crate::error::{Error, Result};
use crate::filenames::{parse, table_name, wal_name, FileType, CURRENT, LOCK};
use crate::format::{parse_internal_key, InternalKey, SeqNo, ValueKind, MAX_SEQNO};
use crate::memtable::MemTable;
use crate::metrics::Stats;
use crate::options::Options;
use crate::rangedel::Fragments;
use crate::table::salvage::{salvage_table, KeyBound, TableSalvage};
use crate::table::{check_metadata, BlockCache, ReadContext, TableReader};
use crate::version::manifest::{self, ManifestHeader};
use crate::version::{LifetimeStats, ObsoleteFiles, TableMeta, Version, VersionEdit};
use crate::wal::salvage::{salvage_log, DamagedRecord, LogPiece};

use crate::filenames::LOST_DIR;

/// How [`Db::repair_with`] treats a directory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RepairOptions {
    /// Repair a directory that cannot be recognised as shale's (foreign
    /// files are moved to `lost/` with the rest). Off by default: only for a
    /// database whose files are too damaged to be recognised.
    pub force: bool,
}

crate::options::setters!(RepairOptions { force: bool });

/// What [`Db::repair`] found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RepairReport {
    /// Tables that read cleanly and were kept as they are.
    pub tables_kept: u64,
    /// Damaged tables of which some entries were recovered into new tables.
    pub tables_salvaged: u64,
    /// Damaged tables of which nothing could be recovered.
    pub tables_unreadable: u64,
    /// Tables that read cleanly but held quarantined entries: rewritten
    /// without them (the original moved to `lost/`).
    pub tables_rewritten: u64,
    /// Write-ahead log records replayed.
    pub wal_records: u64,
    /// Logs with damage (damaged records, or a replay that stopped).
    pub wals_damaged: u64,
    /// Entries (values and tombstones) in the rebuilt database before its
    /// final compaction.
    pub entries: u64,
    /// Highest sequence number found.
    pub last_sequence: SeqNo,
    /// What was lost of each damaged table and log, in the order read.
    pub damaged_files: Vec<DamagedFile>,
    /// Entries not restored because a lost block or record may have held a
    /// newer version of their key (the quarantine; module documentation of
    /// `db/repair.rs`).
    pub entries_quarantined: u64,
    /// Keys whose visible value the quarantine removed (their newest entry
    /// found was a value, and was quarantined): they read as absent after
    /// the repair. Sorted.
    pub quarantined_keys: Vec<Vec<u8>>,
    /// Files moved to the `lost/` directory, by name.
    pub moved_to_lost: Vec<String>,
    /// One line per problem met (the file, offset and reason).
    pub problems: Vec<String>,
}

/// Whether a damaged file was a table or a log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DamagedKind {
    /// A table (`*.sst`): its units are data blocks.
    #[default]
    Table,
    /// A write-ahead log (`*.log`): its units are records.
    Log,
}

/// An inclusive range of user keys; `None` is unbounded on that side.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyRange {
    /// The lowest user key the range may hold.
    pub start: Option<Vec<u8>>,
    /// The highest user key the range may hold.
    pub end: Option<Vec<u8>>,
}

/// What [`Db::repair`] recovered and lost of one damaged table or log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DamagedFile {
    /// Its name in the database directory (it is now in `lost/`).
    pub name: String,
    /// Table or log.
    pub kind: DamagedKind,
    /// Byte ranges `(offset, length)` whose contents were not recovered, in
    /// file order: data pages or bytes holding no intact data block (a table;
    /// damage outside the data region loses nothing), damaged records and
    /// records not replayed (a log).
    pub lost_bytes: Vec<(u64, u64)>,
    /// Data blocks recovered (a table) or records replayed (a log).
    pub recovered: u64,
    /// Data blocks lost (exact when the table's properties read, else the
    /// number of lost ranges) or records lost (damaged, or not replayed after
    /// the replay stopped).
    pub lost: u64,
    /// Entries recovered from the file (before the quarantine).
    pub entries_recovered: u64,
    /// A table: the user keys each lost range may have held, one per range
    /// of `lost_bytes`.
    pub lost_key_ranges: Vec<KeyRange>,
    /// A log: the keys its damaged records named, read from their bytes
    /// (exact when a repair made the record match its checksum; else as
    /// found, possibly one byte off).
    pub lost_keys: Vec<Vec<u8>>,
    /// A log: where the replay stopped, at a damaged record whose keys could
    /// not be read (point in time: nothing after it, in this log or newer
    /// ones, was replayed).
    pub replay_stopped_at: Option<u64>,
}

impl Db {
    /// Rebuilds the manifest of the database in `path` from the tables and
    /// logs present, then compacts it: every data block and log record whose
    /// own checksum holds is kept (damaged tables are salvaged block by
    /// block, logs read past their damage), and no key comes back with a
    /// value older than a version that was lost (see the module
    /// documentation of `db/repair.rs` for what is kept, held back and
    /// lost). For a database that [`Db::open`] refuses with
    /// [`Error::Corruption`]. The report says what was lost, file by file.
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
            tracer: Arc::default(),
        },
        next_file_number: highest + 1,
        edit: VersionEdit::default(),
        report: RepairReport::default(),
        to_lost: Vec::new(),
    };
    r.salvage(&tables, &wals)?;
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
    let version = Version::default()
        .apply(&r.edit, &Arc::new(ObsoleteFiles::default()))
        .map_err(|reason| {
            Error::Internal(format!("salvaged tables do not fit a version: {reason}"))
        })?;
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
    range_dels: Arc<Fragments>,
}

/// A table as first read.
enum TableRead {
    /// Every block reads; kept unless the quarantine touches it.
    Clean {
        number: u64,
        size: u64,
        extent: Extent,
    },
    /// Reads cleanly and holds nothing.
    Empty { number: u64 },
    /// Damaged: what its blocks gave, and the first damage met.
    Damaged {
        number: u64,
        problem: String,
        salvage: Box<TableSalvage>,
    },
}

/// The keys a damaged log record named, at risk below `bound` (the sequence
/// number of the next intact record, which is above all of its own).
struct LostKeys {
    exact: Vec<Vec<u8>>,
    fuzzy: Vec<Vec<u8>>,
    /// The `[start, end)` of the range deletions it held: every key in them
    /// is at risk, not only the start.
    ranges: Vec<(Vec<u8>, Vec<u8>)>,
    bound: SeqNo,
}

/// A log as read: the batches to replay, and what was lost.
struct LogRead {
    number: u64,
    batches: Vec<(SeqNo, WriteBatch)>,
    file: DamagedFile,
    damaged: bool,
}

/// The sequence number and batch of a record, if it is a whole batch.
fn decode_batch(payload: &[u8]) -> Option<(SeqNo, WriteBatch)> {
    let (seq, batch) = WriteBatch::decode(payload).ok()?;
    batch.ops().all(|op| op.is_ok()).then_some((seq, batch))
}

/// The keys of a damaged record: exact from each repaired payload that
/// parses as a batch; from the bytes as found, those that differ from every
/// exact one (a damaged byte may be in a key). `None` if nothing parses.
fn named_keys(d: &DamagedRecord) -> Option<LostKeys> {
    let mut ranges: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut keys_of = |payload: &[u8]| -> Option<Vec<Vec<u8>>> {
        let (_, batch) = decode_batch(payload)?;
        let mut keys = Vec::new();
        for op in batch.ops().flatten() {
            if op.kind == ValueKind::RangeDelete {
                ranges.push((op.key.to_vec(), op.value.to_vec()));
            }
            keys.push(op.key.to_vec());
        }
        Some(keys)
    };
    let repaired: Vec<Vec<Vec<u8>>> = d.repaired.iter().filter_map(|p| keys_of(p)).collect();
    let raw = keys_of(&d.raw);
    if repaired.is_empty() && raw.is_none() {
        return None;
    }
    let mut exact: Vec<Vec<u8>> = repaired.into_iter().flatten().collect();
    exact.sort_unstable();
    exact.dedup();
    let mut fuzzy: Vec<Vec<u8>> = raw
        .unwrap_or_default()
        .into_iter()
        .filter(|k| exact.binary_search(k).is_err())
        .collect();
    fuzzy.sort_unstable();
    fuzzy.dedup();
    ranges.sort_unstable();
    ranges.dedup();
    Some(LostKeys {
        exact,
        fuzzy,
        ranges,
        bound: SeqNo::MAX,
    })
}

fn user_key_of(bound: &KeyBound) -> Option<Vec<u8>> {
    bound
        .key()
        .and_then(parse_internal_key)
        .map(|ik| ik.user_key.to_vec())
}

impl Repairer<'_> {
    fn new_number(&mut self) -> u64 {
        let n = self.next_file_number;
        self.next_file_number += 1;
        n
    }

    /// Reads every table and log, decides what the quarantine holds back,
    /// then writes what is restored.
    fn salvage(&mut self, tables: &[u64], wals: &[u64]) -> Result<()> {
        let mut read = Vec::with_capacity(tables.len());
        for &number in tables {
            read.push(self.read_table(number)?);
        }
        let (logs, lost_records) = self.read_logs(wals)?;
        let mut q = Quarantine::default();
        for t in &mut read {
            if let TableRead::Damaged { salvage, .. } = t {
                let filter = salvage.filter.take().map(Arc::new);
                for l in &salvage.lost {
                    q.add_table_range(&l.after, &l.before, salvage.largest_seqno(), filter.clone());
                }
                if salvage.range_dels_lost {
                    // They may have deleted any older version anywhere (no
                    // filter holds range deletions).
                    q.add_table_range(
                        &KeyBound::Unbounded,
                        &KeyBound::Unbounded,
                        salvage.largest_seqno(),
                        None,
                    );
                }
            }
        }
        for l in &lost_records {
            q.add_log_keys(&l.exact, &l.fuzzy, l.bound);
            for (start, end) in &l.ranges {
                // Every version of the keys in [start, end) older than the
                // record is at risk: the lost range deletion may have
                // deleted any of them.
                q.add_table_range(
                    &KeyBound::Included(
                        InternalKey::new(start, MAX_SEQNO, ValueKind::RangeDelete)
                            .encoded()
                            .to_vec(),
                    ),
                    &KeyBound::BeforeUserKey(
                        InternalKey::new(end, MAX_SEQNO, ValueKind::RangeDelete)
                            .encoded()
                            .to_vec(),
                    ),
                    Some(l.bound),
                    None,
                );
            }
        }
        for t in read {
            self.emit_table(t, &mut q)?;
        }
        self.emit_logs(logs, &mut q)?;
        let (entries, keys) = q.tally();
        self.report.entries_quarantined = entries;
        self.report.quarantined_keys = keys;
        Ok(())
    }

    fn read_all(&self, path: &Path, what: &'static str) -> Result<Vec<u8>> {
        let file = self
            .fs
            .open_random(path)
            .map_err(|e| Error::io(what, path, e))?;
        let len = usize::try_from(file.size())
            .map_err(|_| Error::corruption(path, 0, "file too large for memory"))?;
        let mut buf = vec![0u8; len];
        file.read_exact_at(0, &mut buf)
            .map_err(|e| Error::io(what, path, e))?;
        Ok(buf)
    }

    /// Reads table `number` in full, checking every block: clean, empty, or
    /// damaged and salvaged block by block.
    fn read_table(&mut self, number: u64) -> Result<TableRead> {
        let path = self.dir.join(table_name(number));
        let file = self
            .fs
            .open_random(&path)
            .map_err(|e| Error::io("open table", &path, e))?;
        let size = file.size();
        match self.check_table(file, &path, number) {
            Ok(extent)
                if (extent.entries == 0 || extent.smallest.is_none())
                    && extent.range_dels.is_empty() =>
            {
                Ok(TableRead::Empty { number })
            }
            Ok(extent) => Ok(TableRead::Clean {
                number,
                size,
                extent,
            }),
            Err(e) => {
                let bytes = self.read_all(&path, "read table")?;
                Ok(TableRead::Damaged {
                    number,
                    problem: e.to_string(),
                    salvage: Box::new(salvage_table(&bytes)),
                })
            }
        }
    }

    /// Opens and scans a table, then checks its other blocks; its extent if
    /// every block reads.
    fn check_table(
        &self,
        file: Arc<dyn RandomAccessFile>,
        path: &Path,
        number: u64,
    ) -> Result<Extent> {
        let reader = Arc::new(TableReader::open(
            file.clone(),
            path.to_path_buf(),
            number,
            self.ctx.clone(),
            false,
            false,
        )?);
        let mut extent = Extent::default();
        scan(&reader, path, |key, seq, _, _| {
            if extent.smallest.is_none() {
                extent.smallest = Some(key.to_vec());
                extent.smallest_seqno = seq;
            }
            extent.largest.clear();
            extent.largest.extend_from_slice(key);
            extent.smallest_seqno = extent.smallest_seqno.min(seq);
            extent.largest_seqno = extent.largest_seqno.max(seq);
            extent.entries += 1;
        })?;
        extent.range_dels = reader.range_dels().clone();
        if let Some((lo, hi)) = extent.range_dels.seq_range() {
            if extent.entries == 0 {
                extent.smallest_seqno = lo;
            }
            extent.smallest_seqno = extent.smallest_seqno.min(lo);
            extent.largest_seqno = extent.largest_seqno.max(hi);
        }
        check_metadata(file, path.to_path_buf())?;
        Ok(extent)
    }

    /// Keeps, rewrites or salvages a table, as what was read and the
    /// quarantine say.
    fn emit_table(&mut self, t: TableRead, q: &mut Quarantine) -> Result<()> {
        match t {
            TableRead::Empty { number } => {
                // An empty table holds nothing; keep it aside.
                self.to_lost.push(table_name(number));
                Ok(())
            }
            TableRead::Clean {
                number,
                size,
                extent,
            } => {
                let path = self.dir.join(table_name(number));
                let dels = &extent.range_dels;
                // The key range spans the entries and the range deletions.
                let (smallest, largest) = match (&extent.smallest, dels.smallest_key()) {
                    (None, Some(lo)) => {
                        let hi = dels.largest_key().unwrap_or_else(|| lo.clone());
                        (lo, hi)
                    }
                    (Some(first), lo) => {
                        let first = internal_key(&path, first.clone())?;
                        let last = internal_key(&path, extent.largest.clone())?;
                        (
                            lo.filter(|lo| *lo < first).unwrap_or(first),
                            dels.largest_key().filter(|hi| *hi > last).unwrap_or(last),
                        )
                    }
                    (None, None) => return Err(Error::Internal("an empty table kept".into())),
                };
                if !q.is_empty()
                    && q.may_touch(smallest.user_key(), largest.user_key())
                    && self.quarantine_clean(number, q)? > 0
                {
                    return self.rewrite_clean(number, q);
                }
                self.report.tables_kept += 1;
                self.edit.added.push((
                    0,
                    TableMeta {
                        number,
                        size,
                        smallest,
                        largest,
                        smallest_seqno: extent.smallest_seqno,
                        largest_seqno: extent.largest_seqno,
                        num_entries: extent.entries,
                        range_deletions: extent.range_dels.count(),
                    },
                ));
                Ok(())
            }
            TableRead::Damaged {
                number,
                problem,
                salvage,
            } => self.emit_damaged(number, problem, *salvage, q),
        }
    }

    /// A clean table's entries through the quarantine's tally: how many it
    /// holds back.
    fn quarantine_clean(&mut self, number: u64, q: &mut Quarantine) -> Result<u64> {
        let path = self.dir.join(table_name(number));
        let reader = self.open_reader(&path, number)?;
        let mut held = 0;
        scan(&reader, &path, |key, seq, kind, _| {
            if let (Some(ik), Some(kind)) = (parse_internal_key(key), kind) {
                if !q.keep(ik.user_key, seq, kind) {
                    held += 1;
                }
            }
        })?;
        Ok(held)
    }

    /// Writes a clean table's entries but the quarantined ones into new
    /// tables; the original goes to `lost/`.
    fn rewrite_clean(&mut self, number: u64, q: &Quarantine) -> Result<()> {
        let path = self.dir.join(table_name(number));
        let reader = self.open_reader(&path, number)?;
        let mut mem = Arc::new(MemTable::new());
        // Range deletions are kept whole: they only ever hide older versions.
        for t in reader.range_dels().tombstones() {
            mem.add(t.seq, ValueKind::RangeDelete, &t.start, &t.end);
        }
        let mut it = reader.scan();
        it.seek_to_first();
        while it.valid() {
            if let Some(ik) = parse_internal_key(it.key()) {
                if let Some(kind) = ik.value_kind() {
                    if q.verdict(ik.user_key, ik.seq) != super::quarantine::Verdict::Quarantined {
                        mem.add(ik.seq, kind, ik.user_key, it.value());
                    }
                }
            }
            mem = self.write_if_full(mem)?;
            it.next();
        }
        it.status()?;
        if !mem.is_empty() {
            self.write_table(mem)?;
        }
        self.report.tables_rewritten += 1;
        self.to_lost.push(table_name(number));
        Ok(())
    }

    fn open_reader(&self, path: &Path, number: u64) -> Result<Arc<TableReader>> {
        let file = self
            .fs
            .open_random(path)
            .map_err(|e| Error::io("open table", path, e))?;
        let reader = TableReader::open(
            file,
            path.to_path_buf(),
            number,
            self.ctx.clone(),
            false,
            false,
        )?;
        Ok(Arc::new(reader))
    }

    /// Writes the recovered entries of a damaged table (but the quarantined
    /// ones) into new tables and reports what was lost.
    fn emit_damaged(
        &mut self,
        number: u64,
        problem: String,
        salvage: TableSalvage,
        q: &mut Quarantine,
    ) -> Result<()> {
        let name = table_name(number);
        let path = self.dir.join(&name);
        let size = self.fs.file_size(&path).unwrap_or(0);
        self.report.problems.push(problem);
        for note in &salvage.notes {
            self.report
                .problems
                .push(format!("{}: {note}", path.display()));
        }
        if salvage.unrecognised {
            self.report.problems.push(format!(
                "{}: no footer, properties or data block recognised: its keys and sequence \
                 numbers are unknown, nothing is quarantined for it (if it was a live table, \
                 older versions of keys it held may be visible)",
                path.display()
            ));
        }
        let entries = salvage.entries() + salvage.range_dels.count();
        self.report.damaged_files.push(DamagedFile {
            name: name.clone(),
            kind: DamagedKind::Table,
            lost_bytes: if salvage.unrecognised {
                vec![(0, size)]
            } else {
                salvage.lost.iter().map(|l| (l.offset, l.len)).collect()
            },
            recovered: salvage.blocks.len() as u64,
            lost: salvage.blocks_lost(),
            entries_recovered: entries,
            lost_key_ranges: salvage
                .lost
                .iter()
                .map(|l| KeyRange {
                    start: user_key_of(&l.after),
                    end: user_key_of(&l.before),
                })
                .collect(),
            ..DamagedFile::default()
        });
        self.to_lost.push(name);
        if entries == 0 {
            self.report.tables_unreadable += 1;
            return Ok(());
        }
        self.report.tables_salvaged += 1;
        let mut mem = Arc::new(MemTable::new());
        for t in salvage.range_dels.tombstones() {
            mem.add(t.seq, ValueKind::RangeDelete, &t.start, &t.end);
        }
        for b in &salvage.blocks {
            b.for_each(|key, value| {
                let Some(ik) = parse_internal_key(key) else {
                    return;
                };
                if let Some(kind) = ik.value_kind() {
                    if q.keep(ik.user_key, ik.seq, kind) {
                        mem.add(ik.seq, kind, ik.user_key, value);
                    }
                }
            });
            mem = self.write_if_full(mem)?;
        }
        if !mem.is_empty() {
            self.write_table(mem)?;
        }
        Ok(())
    }

    /// Reads every log past its damage. Returns the logs and the keys each
    /// damaged record named, with their bounds.
    fn read_logs(&mut self, wals: &[u64]) -> Result<(Vec<LogRead>, Vec<LostKeys>)> {
        let mut logs = Vec::with_capacity(wals.len());
        let mut lost: Vec<LostKeys> = Vec::new();
        // `lost[waiting..]` wait for the next intact record's sequence number.
        let mut waiting = 0usize;
        let mut stopped = false;
        for &number in wals {
            let name = wal_name(number);
            let path = self.dir.join(&name);
            let bytes = self.read_all(&path, "read wal")?;
            let mut log = LogRead {
                number,
                batches: Vec::new(),
                file: DamagedFile {
                    name,
                    kind: DamagedKind::Log,
                    ..DamagedFile::default()
                },
                damaged: false,
            };
            if stopped && !bytes.is_empty() {
                log.damaged = true;
                log.file.replay_stopped_at = Some(0);
                log.file.lost_bytes.push((0, bytes.len() as u64));
                self.report.problems.push(format!(
                    "{}: not replayed (an older log's replay stopped at damage)",
                    path.display()
                ));
            }
            for piece in salvage_log(&bytes) {
                let (offset, len) = match &piece {
                    LogPiece::Record { offset, payload } => (*offset, payload.len() as u64),
                    LogPiece::Damaged(d) => (d.offset, d.len),
                    LogPiece::Padding { offset, len } => (*offset, *len),
                };
                let batch = match piece {
                    LogPiece::Padding { .. } => {
                        self.report.problems.push(format!(
                            "{}: non-zero block padding at offset {offset}; no record lost",
                            path.display()
                        ));
                        log.damaged = true;
                        continue;
                    }
                    LogPiece::Record { payload, .. } => decode_batch(&payload),
                    LogPiece::Damaged(d) => {
                        log.damaged = true;
                        log.file.lost += 1;
                        if stopped {
                            continue;
                        }
                        log.file.lost_bytes.push((offset, len));
                        match named_keys(&d) {
                            Some(keys) => {
                                self.report.problems.push(format!(
                                    "{}: damaged record at offset {offset} ({len} bytes): {}; \
                                     not replayed, older versions of its {} keys (and of the \
                                     keys in its {} deleted ranges) quarantined",
                                    path.display(),
                                    d.reason,
                                    keys.exact.len() + keys.fuzzy.len(),
                                    keys.ranges.len()
                                ));
                                log.file.lost_keys.extend(keys.exact.iter().cloned());
                                log.file.lost_keys.extend(keys.fuzzy.iter().cloned());
                                log.file.lost_key_ranges.extend(keys.ranges.iter().map(
                                    |(start, end)| KeyRange {
                                        start: Some(start.clone()),
                                        end: Some(end.clone()),
                                    },
                                ));
                                lost.push(keys);
                            }
                            None => {
                                self.report.problems.push(format!(
                                    "{}: damaged record at offset {offset} ({len} bytes): {}; \
                                     its keys cannot be read: replay stopped here (point in time)",
                                    path.display(),
                                    d.reason
                                ));
                                stopped = true;
                                log.file.replay_stopped_at = Some(offset);
                                if let Some(last) = log.file.lost_bytes.last_mut() {
                                    *last = (offset, bytes.len() as u64 - offset);
                                }
                            }
                        }
                        continue;
                    }
                };
                let Some((seq, batch)) = batch else {
                    // Intact framing around bytes that are no batch.
                    log.damaged = true;
                    log.file.lost += 1;
                    if !stopped {
                        self.report.problems.push(
                            Error::corruption(
                                &path,
                                offset,
                                "bad write batch; replay stopped here (point in time)",
                            )
                            .to_string(),
                        );
                        stopped = true;
                        log.file.replay_stopped_at = Some(offset);
                        log.file
                            .lost_bytes
                            .push((offset, bytes.len() as u64 - offset));
                    }
                    continue;
                };
                for l in lost.get_mut(waiting..).into_iter().flatten() {
                    l.bound = seq;
                }
                waiting = lost.len();
                if stopped {
                    log.file.lost += 1;
                } else {
                    log.file.recovered += 1;
                    log.batches.push((seq, batch));
                }
            }
            logs.push(log);
        }
        Ok((logs, lost))
    }

    /// Replays the logs' batches (but the quarantined entries) into tables.
    fn emit_logs(&mut self, logs: Vec<LogRead>, q: &mut Quarantine) -> Result<()> {
        for log in logs {
            let mut mem = Arc::new(MemTable::new());
            for (seq, batch) in &log.batches {
                for (j, op) in batch.ops().flatten().enumerate() {
                    let s = seq + j as u64;
                    if q.keep(op.key, s, op.kind) {
                        mem.add(s, op.kind, op.key, op.value);
                    }
                }
                self.report.wal_records += 1;
                mem = self.write_if_full(mem)?;
            }
            if !mem.is_empty() {
                self.write_table(mem)?;
            }
            if log.damaged {
                self.report.wals_damaged += 1;
                let mut file = log.file;
                file.entries_recovered = log.batches.iter().map(|(_, b)| b.len() as u64).sum();
                self.report.damaged_files.push(file);
            }
            self.to_lost.push(wal_name(log.number));
        }
        Ok(())
    }

    /// Writes `mem` as a table if it reached the write buffer size; the
    /// memtable to go on with.
    fn write_if_full(&mut self, mem: Arc<MemTable>) -> Result<Arc<MemTable>> {
        if mem.approximate_bytes() < self.opts.write_buffer_size {
            return Ok(mem);
        }
        self.write_table(mem)?;
        Ok(Arc::new(MemTable::new()))
    }

    fn write_table(&mut self, mem: Arc<MemTable>) -> Result<()> {
        let number = self.new_number();
        // Repair runs no database: no rate limiter.
        if let Some(f) = job::write_memtable(self.dir, self.opts, &self.stats, None, &mem, number)?
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
