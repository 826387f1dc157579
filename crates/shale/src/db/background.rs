//! Background work: flushing immutable memtables to L0 tables, manual full
//! compaction, and deleting obsolete files.

use std::path::Path;
use std::sync::Arc;

use shale_env::WriteLifetime;

use super::filenames::table_name;
use super::DbInner;
use crate::error::{Error, Result};
use crate::format::{parse_internal_key, InternalKey, SeqNo, ValueKind};
use crate::iter::{InternalIterator, MergingIterator};
use crate::memtable::MemTable;
use crate::metrics::Stats;
use crate::options::{Options, NUM_LEVELS};
use crate::table::{TableBuildOptions, TableBuilder, TableProperties};
use crate::version::{NewFile, VersionEdit};

/// The background thread: flushes the oldest immutable memtable whenever there
/// is one, and deletes obsolete files. Exits on shutdown. A failure poisons the
/// database (writes fail until reopen) and stops flushing.
pub(crate) fn run(db: &DbInner) {
    loop {
        let job = {
            let mut st = db.state.lock();
            loop {
                if st.shutting_down {
                    return;
                }
                let sv = db.sv.load();
                if st.poison.is_none() {
                    if let Some(imm) = sv.imms.last() {
                        let number = st.new_file_number();
                        st.pending_outputs.insert(number);
                        break (imm.clone(), number);
                    }
                }
                drop(sv);
                db.cv.wait(&mut st);
            }
        };
        let (imm, number) = job;
        let built = write_level0(&db.path, &db.opts, &db.stats, &imm, number).and_then(|f| {
            db.fs
                .sync_dir(&db.path)
                .map_err(|e| Error::io("sync directory", &db.path, e))?;
            Ok(f)
        });
        {
            let mut st = db.state.lock();
            st.pending_outputs.remove(&number);
            match built {
                Ok(file) => {
                    let mut edit = VersionEdit::default();
                    // Once this memtable is in a table, the oldest WAL still needed
                    // is that of the next newer memtable.
                    let n = st.imm_logs.len();
                    let next_log = if n >= 2 {
                        st.imm_logs[n - 2]
                    } else {
                        st.mem_log
                    };
                    edit.log_number = Some(next_log);
                    if let Some(f) = file {
                        edit.added.push((0, f));
                    }
                    if db.log_and_apply(&mut st, edit, 1).is_ok() {
                        db.stats.flushes.incr();
                    }
                }
                Err(e) => db.poison(&mut st, &e),
            }
        }
        if let Err(e) = db.delete_obsolete_files(false) {
            let mut st = db.state.lock();
            db.poison(&mut st, &e);
        }
    }
}

/// Writes the contents of `mem` as table `number` for L0. `None` if the memtable
/// is empty. The table is synced; its directory entry is not.
pub(crate) fn write_level0(
    dir: &Path,
    opts: &Options,
    stats: &Stats,
    mem: &Arc<MemTable>,
    number: u64,
) -> Result<Option<NewFile>> {
    if mem.is_empty() {
        return Ok(None);
    }
    let mut it = mem.iter();
    it.seek_to_first();
    let mut out = TableOutput::new(dir, opts, stats, 0);
    out.open(number)?;
    while it.valid() {
        out.add(it.key(), it.value())?;
        it.next();
    }
    it.status()?;
    out.finish()
}

/// A table being written, with the options of its level.
struct TableOutput<'a> {
    dir: &'a Path,
    opts: &'a Options,
    stats: &'a Stats,
    level: usize,
    builder: Option<(u64, TableBuilder)>,
}

impl<'a> TableOutput<'a> {
    fn new(dir: &'a Path, opts: &'a Options, stats: &'a Stats, level: usize) -> Self {
        TableOutput {
            dir,
            opts,
            stats,
            level,
            builder: None,
        }
    }

    fn open(&mut self, number: u64) -> Result<()> {
        let path = self.dir.join(table_name(number));
        let lifetime = match self.level {
            0 => WriteLifetime::Medium,
            l if l + 2 < NUM_LEVELS => WriteLifetime::Long,
            _ => WriteLifetime::Extreme,
        };
        let writer = self
            .opts
            .fs
            .create_object(&path, lifetime)
            .map_err(|e| Error::io("create table", &path, e))?;
        let build = TableBuildOptions {
            block_size: self.opts.block_size,
            block_restart_interval: self.opts.block_restart_interval,
            index_partition_size: self.opts.index_partition_size,
            compression: self.opts.compression,
            filter_bits_per_key: self
                .opts
                .filter_policy
                .applies_to(self.level)
                .then_some(self.opts.filter_policy.bits_per_key),
        };
        self.builder = Some((number, TableBuilder::new(writer, path, build)));
        Ok(())
    }

    fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        match self.builder.as_mut() {
            Some((_, b)) => b.add(key, value),
            None => Err(Error::InvalidArgument("table output not open".into())),
        }
    }

    fn estimated_size(&self) -> u64 {
        self.builder.as_ref().map_or(0, |(_, b)| b.estimated_size())
    }

    fn finish(&mut self) -> Result<Option<NewFile>> {
        let Some((number, builder)) = self.builder.take() else {
            return Ok(None);
        };
        if builder.num_entries() == 0 {
            builder.abort()?;
            return Ok(None);
        }
        let props = builder.finish()?;
        self.stats.bytes_written_tables.add(props.file_size);
        Ok(Some(new_file(number, &props)?))
    }
}

impl Drop for TableOutput<'_> {
    fn drop(&mut self) {
        // An unfinished output (an error path) is abandoned; removing it is best
        // effort and a leftover is deleted at the next open.
        if let Some((_, b)) = self.builder.take() {
            let _ = b.abort();
        }
    }
}

fn new_file(number: u64, p: &TableProperties) -> Result<NewFile> {
    let key = |k: &[u8], what: &str| {
        InternalKey::from_encoded(k.to_vec()).ok_or_else(|| {
            Error::InvalidArgument(format!("table {number} has a malformed {what} key"))
        })
    };
    Ok(NewFile {
        number,
        size: p.file_size,
        smallest: key(&p.smallest_key, "smallest")?,
        largest: key(&p.largest_key, "largest")?,
        smallest_seqno: p.smallest_seqno,
        largest_seqno: p.largest_seqno,
        num_entries: p.num_entries,
    })
}

/// Merges every table of the current version into the last level.
///
/// For each user key it keeps the newest entry of every snapshot stripe (the
/// newest version, plus the newest version visible to each live snapshot), and
/// drops a deletion when no older version survives under it.
pub(crate) fn compact_all(db: &DbInner) -> Result<()> {
    let _serial = db.compaction_lock.lock();
    let version = db.sv.load().version.clone();
    let inputs: Vec<(usize, u64)> = version.all_files().map(|(l, f)| (l, f.number)).collect();
    if inputs.is_empty() {
        return Ok(());
    }
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    for (level, f) in version.all_files() {
        children.push(db.table_cache.get(f.number, level)?.iter());
    }
    let mut it = MergingIterator::new(children);
    let snapshots: Vec<SeqNo> = db.snapshots.lock().keys().copied().collect();
    let last = NUM_LEVELS - 1;
    let target = db.opts.target_file_size(last);
    let mut out = TableOutput::new(&db.path, &db.opts, &db.stats, last);
    let mut outputs: Vec<NewFile> = Vec::new();
    let mut numbers: Vec<u64> = Vec::new();

    let result = (|| -> Result<()> {
        it.seek_to_first();
        let mut versions: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        while it.valid() || !versions.is_empty() {
            let same_key = it.valid()
                && versions
                    .first()
                    .is_some_and(|(k, _)| user_key(k) == user_key(it.key()));
            if it.valid() && (versions.is_empty() || same_key) {
                versions.push((it.key().to_vec(), it.value().to_vec()));
                it.next();
                continue;
            }
            // `versions` holds every version of one user key, newest first.
            let kept = select_versions(&versions, &snapshots);
            if !kept.is_empty() {
                if out.builder.is_none() || out.estimated_size() >= target {
                    if let Some(f) = out.finish()? {
                        outputs.push(f);
                    }
                    let number = {
                        let mut st = db.state.lock();
                        let n = st.new_file_number();
                        st.pending_outputs.insert(n);
                        n
                    };
                    numbers.push(number);
                    out.open(number)?;
                }
                for i in kept {
                    out.add(&versions[i].0, &versions[i].1)?;
                }
            }
            versions.clear();
        }
        it.status()?;
        if let Some(f) = out.finish()? {
            outputs.push(f);
        }
        db.fs
            .sync_dir(&db.path)
            .map_err(|e| Error::io("sync directory", &db.path, e))
    })();

    let mut st = db.state.lock();
    for n in &numbers {
        st.pending_outputs.remove(n);
    }
    result?;
    let edit = VersionEdit {
        deleted: inputs,
        added: outputs.into_iter().map(|f| (last, f)).collect(),
        ..Default::default()
    };
    db.log_and_apply(&mut st, edit, 0)?;
    db.stats.compactions.incr();
    drop(st);
    db.delete_obsolete_files(false)
}

fn user_key(internal: &[u8]) -> &[u8] {
    parse_internal_key(internal).map_or(internal, |k| k.user_key)
}

/// Indices of the versions (newest first) a full compaction keeps.
fn select_versions(versions: &[(Vec<u8>, Vec<u8>)], snapshots: &[SeqNo]) -> Vec<usize> {
    // The stripe of a sequence number: index of the oldest snapshot that sees it
    // (snapshots.len() = only the latest state sees it).
    let stripe = |seq: SeqNo| snapshots.partition_point(|&s| s < seq);
    let mut kept: Vec<usize> = Vec::new();
    let mut last_stripe = None;
    for (i, (k, _)) in versions.iter().enumerate() {
        let Some(ik) = parse_internal_key(k) else {
            continue;
        };
        let s = stripe(ik.seq);
        if last_stripe != Some(s) {
            kept.push(i);
            last_stripe = Some(s);
        }
    }
    // A deletion with nothing older under it hides nothing at the bottom level.
    while let Some(&i) = kept.last() {
        let is_delete = parse_internal_key(&versions[i].0)
            .is_some_and(|k| k.value_kind() == Some(ValueKind::Delete));
        if !is_delete {
            break;
        }
        kept.pop();
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(seq: SeqNo, kind: ValueKind) -> (Vec<u8>, Vec<u8>) {
        (
            InternalKey::new(b"k", seq, kind).encoded().to_vec(),
            Vec::new(),
        )
    }

    #[test]
    fn keeps_newest_per_snapshot_stripe_and_drops_bottom_deletes() {
        use ValueKind::*;
        let versions = vec![
            v(9, Value),
            v(7, Value),
            v(5, Delete),
            v(3, Value),
            v(1, Value),
        ];
        assert_eq!(select_versions(&versions, &[]), vec![0]);
        // Snapshot at 6 sees seq 5, a deletion with nothing kept under it.
        assert_eq!(select_versions(&versions, &[6]), vec![0]);
        // Snapshot at 4 sees seq 3.
        assert_eq!(select_versions(&versions, &[4, 8]), vec![0, 1, 3]);
        let deleted = vec![v(4, Delete), v(2, Value)];
        assert!(select_versions(&deleted, &[]).is_empty());
        assert_eq!(select_versions(&deleted, &[3]), vec![0, 1]);
    }
}
