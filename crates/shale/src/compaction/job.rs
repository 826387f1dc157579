//! The compaction job: merges input tables into new tables of the output level.
//!
//! The job reads its inputs through a merging iterator, keeps for every user key
//! the versions some reader can still see, writes them into tables of the output
//! level's target size, cut where possible just before a table of the level
//! below starts (see [`Splitter`]; never splitting one user key's versions
//! across two tables, so that tables of a level never share a user key), and
//! returns the new tables. Installing them in the version is the caller's job.
//!
//! # Which versions survive
//!
//! Live snapshots cut the sequence numbers into *stripes*; a reader in a stripe
//! sees the newest version at or below its snapshot. The job keeps the newest
//! version of each stripe and drops the rest. A deletion is dropped too when the
//! output is the *bottommost* data for its key range (no deeper level holds
//! overlapping tables) and nothing older survives under it.
//!
//! # Range deletions
//!
//! The inputs' range deletions are fragmented together. In each fragment the
//! newest sequence number of each stripe survives; at the bottommost level one
//! in the oldest stripe goes too (every reader sees it, and everything under it
//! goes with it). A key version is dropped when a range deletion of its own
//! stripe is newer than it. Each output table gets the fragments of its key
//! span: outputs end between user keys `a` and `b`, and the fragments are cut
//! at `a ++ [0]`, so that a table's range deletions never reach a key of the
//! next table (tables of a level keep disjoint user-key ranges).
//!
//! # Subcompactions
//!
//! A merge given cut points (see [`super::subcompact`]) runs one
//! subcompaction per user-key range: each has its own merging iterator over
//! the inputs reaching its range, sought to its start and stopped at its
//! end, its own output tables (numbered by [`JobHost::new_output`]) and the
//! range deletions clipped to its range; the snapshots and the fragmented
//! range deletions are read once for all of them. The caller installs every
//! output in one edit.
//!
//! # Concurrency
//!
//! A job runs on one background thread, plus one scoped thread per
//! subcompaction past the first, started and joined by [`merge`] (so they
//! never outlive it and are not background threads). It reaches the
//! database only through [`JobHost`] (which takes the state lock only to
//! allocate output file numbers; it is `Sync`, shared by the
//! subcompactions); the tables it reads are pinned by the `Arc<FileMeta>`s
//! it holds, so they outlive any version change made meanwhile. A failing
//! subcompaction sets a flag the others check with the closing check, every
//! few thousand keys.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use shale_env::{FileSystem, ObjectWriter, WriteLifetime};

use crate::error::{Error, Result};
use crate::filenames::table_name;
use crate::format::NUM_LEVELS;
use crate::format::RANGE_DEL_TABLE_FORMAT_VERSION;
use crate::format::{parse_internal_key, InternalKey, SeqNo, ValueKind, MAX_SEQNO};
use crate::iter::{InternalIterator, MergingIterator};
use crate::memtable::MemTable;
use crate::metrics::Stats;
use crate::options::Options;
use crate::rangedel::{key_successor, Fragments};
use crate::rate_limit::RateLimiter;
use crate::table::{TableBuildOptions, TableBuilder, TableProperties};
use crate::version::{FileMeta, TableMeta};

use super::subcompact;

/// Entries merged between two checks for a database being closed.
const CLOSE_CHECK_INTERVAL: u64 = 4096;

/// The tables a merge produced.
pub(crate) struct MergeOutput {
    pub tables: Vec<TableMeta>,
    /// Bytes of the input tables.
    pub bytes_read: u64,
    /// Bytes of the output tables.
    pub bytes_written: u64,
    /// Subcompactions the merge ran (1: not split).
    pub subcompactions: usize,
}

/// What a job needs from the database it runs for (implemented by the
/// database; a test can supply its own).
pub(crate) trait JobHost: Sync {
    /// The database directory.
    fn dir(&self) -> &Path;
    /// Its file system.
    fn fs(&self) -> &dyn FileSystem;
    /// Its options.
    fn opts(&self) -> &Options;
    /// Its counters.
    fn stats(&self) -> &Stats;
    /// The write rate limiter, if any.
    fn rate_limiter(&self) -> Option<Arc<RateLimiter>>;
    /// Sequence numbers of the live snapshots. Read once when a job starts: a
    /// snapshot taken later sees the newest version of every input key, which
    /// a job always keeps.
    fn snapshots(&self) -> Vec<SeqNo>;
    /// True once the database starts closing (the job gives up).
    fn closing(&self) -> bool;
    /// An iterator over table `number` of `level` for a compaction.
    fn scan_table(&self, f: &FileMeta, level: usize) -> Result<Box<dyn InternalIterator>>;
    /// The range deletions of table `number` of `level`.
    fn table_range_dels(&self, f: &FileMeta, level: usize) -> Result<Arc<Fragments>>;
    /// A new file number for an output table, registered as being written so
    /// that nothing deletes it before it is installed or abandoned.
    fn new_output(&self) -> u64;
    /// Ends the registration of the outputs `numbers`.
    fn outputs_done(&self, numbers: &[u64]);
}

/// Where a merge writes and how it cuts its output into tables.
pub(crate) struct Outputs<'a> {
    pub level: usize,
    /// Target size of each table (see [`Splitter`]).
    pub target_file_size: u64,
    /// Smallest user keys of the tables of the level below `level`, in key
    /// order (empty for the last level).
    pub grandparents: &'a [Vec<u8>],
}

/// Merges `inputs` (with their levels) into tables of `output.level`.
/// `bottommost`: no level below the output holds keys of the inputs' range, so
/// deletions with nothing under them can go. `cuts` (strictly increasing user
/// keys, see [`subcompact`](super::subcompact)) split the merge into
/// `cuts.len() + 1` subcompactions, each merging the user keys of its range
/// `[cut[i-1], cut[i])` on a thread of its own (the calling thread takes the
/// first, unless [`Options::compaction_nice`](crate::Options::compaction_nice)
/// puts every range on a lowered thread) into tables of its own; the tables
/// come back in key order, to be installed together. Fails with
/// [`Error::Closed`] if the database starts closing meanwhile. A
/// subcompaction that fails stops the others and fails the merge with its
/// error; no output of any of them is returned (the unfinished ones are
/// removed, the finished ones left to the next open, as for an unsplit
/// merge).
pub(crate) fn merge(
    db: &dyn JobHost,
    inputs: &[(usize, Arc<FileMeta>)],
    output: &Outputs<'_>,
    bottommost: bool,
    cuts: &[Vec<u8>],
) -> Result<MergeOutput> {
    let mut input_dels = Vec::new();
    for (level, f) in inputs {
        if f.range_deletions > 0 {
            input_dels.push(db.table_range_dels(f, *level)?);
        }
    }
    // Read once for every subcompaction, so that they all keep the same
    // versions.
    let snapshots = db.snapshots();
    // The stripe of a sequence number: index of the oldest snapshot that sees
    // it (snapshots.len(): only the latest state sees it).
    let stripe = |seq: SeqNo| snapshots.partition_point(|&s| s < seq);
    let mut dels = Fragments::merge(input_dels.iter().map(|d| d.as_ref()));
    let dels_in = dels.count();
    dels.retain_seqs(|seq, newer| newer.is_none_or(|n| stripe(n) != stripe(seq)));
    // What hides the inputs' versions; `dels` is what the outputs carry.
    let cover = dels.clone();
    if bottommost {
        dels.retain_seqs(|seq, _| stripe(seq) != 0);
    }
    db.stats()
        .range_dels_dropped
        .add(dels_in.saturating_sub(dels.count()));
    let plan = Plan {
        snapshots: &snapshots,
        dels: &dels,
        cover: &cover,
        bottommost,
    };
    let ranges = cuts.len() + 1;
    let cancel = AtomicBool::new(false);
    let nice = db.opts().compaction_nice;
    let results: Vec<Result<Vec<TableMeta>>> = if ranges == 1 && nice == 0 {
        vec![merge_range(
            db,
            inputs,
            &plan,
            output,
            (None, None),
            &cancel,
        )]
    } else {
        std::thread::scope(|s| {
            let (plan, cancel) = (&plan, &cancel);
            // With a nice value, only spawned threads run ranges (below).
            let run = move |bounds| {
                let r = lower_priority(db, nice)
                    .and_then(|()| merge_range(db, inputs, plan, output, bounds, cancel));
                if r.is_err() {
                    cancel.store(true, Ordering::Relaxed);
                }
                r
            };
            // With a nice value every range runs on a thread that lowers
            // itself: the calling thread may run a flush next, and could
            // not raise its priority back.
            let first = usize::from(nice == 0);
            let handles: Vec<_> = (first..ranges)
                .map(|i| {
                    let bounds = subcompact::range_of(cuts, i);
                    let spawned = std::thread::Builder::new()
                        .name("shale-compaction".into())
                        .spawn_scoped(s, move || run(bounds));
                    if spawned.is_err() {
                        cancel.store(true, Ordering::Relaxed);
                    }
                    spawned
                })
                .collect();
            let mut results = Vec::with_capacity(ranges);
            if first == 1 {
                results.push(run(subcompact::range_of(cuts, 0)));
            }
            for h in handles {
                results.push(match h {
                    Ok(h) => h.join().unwrap_or_else(|_| {
                        Err(Error::Internal("a subcompaction thread panicked".into()))
                    }),
                    Err(e) => Err(Error::io("start a subcompaction thread", db.dir(), e)),
                });
            }
            results
        })
    };
    let mut tables = Vec::new();
    let mut failure = None;
    for r in results {
        match r {
            Ok(t) => tables.extend(t),
            // A subcompaction stopped by another's failure reports
            // `Closed`: the other's error is the one to tell.
            Err(Error::Closed) => {
                failure.get_or_insert(Error::Closed);
            }
            Err(e) => {
                if matches!(failure, None | Some(Error::Closed)) {
                    failure = Some(e);
                }
            }
        }
    }
    if let Some(e) = failure {
        return Err(e);
    }
    db.fs()
        .sync_dir(db.dir())
        .map_err(|e| Error::io("sync directory", db.dir(), e))?;
    Ok(MergeOutput {
        bytes_read: inputs.iter().map(|(_, f)| f.size).sum(),
        bytes_written: tables.iter().map(|f| f.size).sum(),
        tables,
        subcompactions: ranges,
    })
}

/// Lowers the calling thread to CPU nice value `nice` (0: leaves it).
fn lower_priority(db: &dyn JobHost, nice: i32) -> Result<()> {
    if nice == 0 {
        return Ok(());
    }
    shale_env::priority::lower_current_thread(nice)
        .map_err(|e| Error::io("lower a compaction thread's priority", db.dir(), e))
}

/// What every subcompaction of one merge shares.
struct Plan<'a> {
    /// Live snapshots, oldest first.
    snapshots: &'a [SeqNo],
    /// The range deletions the outputs carry.
    dels: &'a Fragments,
    /// The range deletions that hide input versions.
    cover: &'a Fragments,
    bottommost: bool,
}

/// One subcompaction: merges the user keys of `inputs` in `[lo, hi)` (`None`:
/// unbounded) into tables of their own, with the range deletions of
/// `plan.dels` clipped to the range. Stops with [`Error::Closed`] when the
/// database closes or `cancel` is set (a sibling failed).
fn merge_range(
    db: &dyn JobHost,
    inputs: &[(usize, Arc<FileMeta>)],
    plan: &Plan<'_>,
    output: &Outputs<'_>,
    (lo, hi): (Option<&[u8]>, Option<&[u8]>),
    cancel: &AtomicBool,
) -> Result<Vec<TableMeta>> {
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    for (level, f) in inputs {
        let reaches = lo.is_none_or(|lo| f.largest.user_key() >= lo)
            && hi.is_none_or(|hi| f.smallest.user_key() < hi);
        if reaches {
            children.push(db.scan_table(f, *level)?);
        }
    }
    let mut it = MergingIterator::new(children);
    let snapshots = plan.snapshots;
    let bottommost = plan.bottommost;
    let stripe = |seq: SeqNo| snapshots.partition_point(|&s| s < seq);
    let dels = plan.dels.clip(lo, hi);
    let cover = plan.cover;
    // A version is gone if a range deletion of its stripe is newer.
    let covered = |user_key: &[u8], seq: SeqNo| {
        cover
            .fragment_at(user_key)
            .is_some_and(|f| f.seqs.iter().any(|&t| t > seq && stripe(t) == stripe(seq)))
    };
    // The merging iterator is positioned inside the range.
    let in_range = |it: &MergingIterator| it.valid() && hi.is_none_or(|h| user_key(it.key()) < h);
    let output_level = output.level;
    let mut splitter = Splitter::new(output.target_file_size, output.grandparents);
    let mut out = TableOutput::new(
        db.dir(),
        db.opts(),
        db.stats(),
        db.rate_limiter(),
        output_level,
    );
    out.range_dels = !dels.is_empty();
    let mut tables: Vec<TableMeta> = Vec::new();
    let mut numbers: Vec<u64> = Vec::new();
    // Range deletions from here on belong to the output being written.
    let mut dels_from: Option<Vec<u8>> = lo.map(<[u8]>::to_vec);
    let mut last_user_key: Vec<u8> = Vec::new();

    let result = (|| -> Result<()> {
        match lo {
            Some(lo) => it.seek(InternalKey::seek_key(lo, MAX_SEQNO).encoded()),
            None => it.seek_to_first(),
        }
        // The versions of the current user key are `pool[..n]`; the buffers are
        // reused from key to key, so merging allocates nothing per entry.
        let mut pool: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut n = 0usize;
        let mut merged = 0u64;
        loop {
            let valid = in_range(&it);
            if !valid && n == 0 {
                break;
            }
            let same_key = valid && n > 0 && user_key(&pool[0].0) == user_key(it.key());
            if valid && (n == 0 || same_key) {
                if n == pool.len() {
                    pool.push((Vec::new(), Vec::new()));
                }
                let (k, v) = &mut pool[n];
                k.clear();
                k.extend_from_slice(it.key());
                v.clear();
                v.extend_from_slice(it.value());
                n += 1;
                it.next();
                continue;
            }
            let versions = &pool[..n];
            merged += 1;
            if merged.is_multiple_of(CLOSE_CHECK_INTERVAL)
                && (db.closing() || cancel.load(Ordering::Relaxed))
            {
                return Err(Error::Closed);
            }
            // `versions` holds every version of one user key, newest first. The
            // common case, a single version, needs no selection.
            let mut selected;
            let mut kept: &[usize] = if n == 1 {
                let dropped = bottommost
                    && parse_internal_key(&versions[0].0)
                        .is_some_and(|k| k.value_kind() == Some(ValueKind::Delete));
                if dropped {
                    &[]
                } else {
                    &[0]
                }
            } else {
                selected = select_versions(versions, snapshots, bottommost);
                &selected
            };
            if !cover.is_empty() && !kept.is_empty() {
                // Versions a range deletion hides from every reader. (The newest
                // of a stripe hidden means all of the stripe is.)
                selected = kept
                    .iter()
                    .copied()
                    .filter(|&i| {
                        let live = parse_internal_key(&versions[i].0)
                            .is_none_or(|k| !covered(k.user_key, k.seq));
                        if !live {
                            let (k, v) = &versions[i];
                            db.stats().range_del_dropped_entries.incr();
                            db.stats()
                                .range_del_dropped_bytes
                                .add((k.len() + v.len()) as u64);
                        }
                        live
                    })
                    .collect();
                kept = &selected;
            }
            if !kept.is_empty() {
                let key = user_key(&versions[0].0);
                let split = splitter.split_before(key, out.estimated_size());
                if out.builder.is_none() || split {
                    if out.builder.is_some() {
                        // Cut the range deletions just after the last key.
                        let cut = key_successor(&last_user_key);
                        let part = dels.clip(dels_from.as_deref(), Some(&cut));
                        dels_from = Some(cut);
                        if let Some(f) = out.finish(part)? {
                            tables.push(f);
                        }
                    }
                    let number = db.new_output();
                    numbers.push(number);
                    out.open(number)?;
                    splitter.started();
                }
                for &i in kept {
                    out.add(&versions[i].0, &versions[i].1)?;
                }
                last_user_key.clear();
                last_user_key.extend_from_slice(key);
            }
            n = 0;
        }
        it.status()?;
        let rest = dels.clip(dels_from.as_deref(), None);
        if out.builder.is_none() && !rest.is_empty() {
            // Range deletions with no key left beside them.
            let number = db.new_output();
            numbers.push(number);
            out.open(number)?;
        }
        if let Some(f) = out.finish(rest)? {
            tables.push(f);
        }
        Ok(())
    })();
    db.outputs_done(&numbers);
    result.map(|()| tables)
}

/// Decides where one output table ends and the next begins.
///
/// An output ends near the target size, preferably just before the first key of
/// a table in the level below the output (a *grandparent*): an output that
/// ends there overlaps one grandparent table fewer, so that compacting it down
/// later does not rewrite a grandparent it barely touches. RocksDB and Pebble
/// cut their outputs the same way. The rules, with `size` the bytes written to
/// the current output:
///
/// * below half the target: never cut;
/// * at twice the target: always cut;
/// * where a grandparent starts: cut once `size` reaches 50% of the target,
///   plus 5% for every grandparent start already passed in this output (at
///   most 90%): where grandparents are dense, a later boundary comes soon;
/// * past the last grandparent: cut at the target.
struct Splitter<'g> {
    target: u64,
    /// Smallest user keys of the grandparent tables, in key order.
    grandparents: &'g [Vec<u8>],
    /// Grandparents whose first key the merge has not reached yet start here.
    next: usize,
    /// Grandparent starts passed since the current output began.
    passed: u64,
}

impl<'g> Splitter<'g> {
    fn new(target: u64, grandparents: &'g [Vec<u8>]) -> Self {
        Splitter {
            target: target.max(1),
            grandparents,
            next: 0,
            passed: 0,
        }
    }

    /// A new output begins: grandparent starts count from here.
    fn started(&mut self) {
        self.passed = 0;
    }

    /// True if the output holding `size` bytes should end before `key` (the
    /// caller then calls [`Splitter::started`] as the next output opens).
    fn split_before(&mut self, key: &[u8], size: u64) -> bool {
        let mut crossed = false;
        while let Some(g) = self.grandparents.get(self.next) {
            if g.as_slice() > key {
                break;
            }
            self.next += 1;
            self.passed += 1;
            crossed = true;
        }
        if size < self.target / 2 {
            false
        } else if size >= self.target.saturating_mul(2) {
            true
        } else if crossed {
            let percent = 50 + 5 * self.passed.saturating_sub(1).min(8);
            u128::from(size) * 100 >= u128::from(self.target) * u128::from(percent)
        } else {
            self.next >= self.grandparents.len() && size >= self.target
        }
    }
}

/// Writes the contents of a memtable as table `number` of L0. `None` if it is
/// empty. The table is synced; its directory entry is not. `limiter` is the
/// running database's rate limiter (a flush's); recovery and repair pass
/// `None`.
pub(crate) fn write_memtable(
    dir: &Path,
    opts: &Options,
    stats: &Stats,
    limiter: Option<Arc<RateLimiter>>,
    mem: &MemTable,
    number: u64,
) -> Result<Option<TableMeta>> {
    if mem.is_empty() {
        return Ok(None);
    }
    let mut out = TableOutput::new(dir, opts, stats, limiter, 0);
    let dels = mem.range_dels();
    out.range_dels = !dels.is_empty();
    out.open(number)?;
    mem.for_each(|k, v| out.add(k, v))?;
    out.finish(dels.as_ref().clone())
}

/// The write-lifetime hint of tables of `level`.
fn lifetime(level: usize) -> WriteLifetime {
    match level {
        0 => WriteLifetime::Medium,
        l if l + 2 < NUM_LEVELS => WriteLifetime::Long,
        _ => WriteLifetime::Extreme,
    }
}

/// A table being written, with the options of its level.
struct TableOutput<'a> {
    dir: &'a Path,
    opts: &'a Options,
    stats: &'a Stats,
    limiter: Option<Arc<RateLimiter>>,
    level: usize,
    builder: Option<(u64, TableBuilder)>,
    /// The tables will carry range deletions: written in the version that
    /// can (see [`RANGE_DEL_TABLE_FORMAT_VERSION`]).
    range_dels: bool,
}

impl<'a> TableOutput<'a> {
    fn new(
        dir: &'a Path,
        opts: &'a Options,
        stats: &'a Stats,
        limiter: Option<Arc<RateLimiter>>,
        level: usize,
    ) -> Self {
        TableOutput {
            dir,
            opts,
            stats,
            limiter,
            level,
            builder: None,
            range_dels: false,
        }
    }

    fn open(&mut self, number: u64) -> Result<()> {
        let path = self.dir.join(table_name(number));
        let mut writer = self
            .opts
            .fs
            .create_object(&path, lifetime(self.level))
            .map_err(|e| Error::io("create table", &path, e))?;
        if let Some(limiter) = &self.limiter {
            writer = Box::new(LimitedWriter {
                inner: writer,
                limiter: limiter.clone(),
            });
        }
        let build = TableBuildOptions {
            block_size: self.opts.block_size,
            block_restart_interval: self.opts.block_restart_interval,
            index_partition_size: self.opts.index_partition_size,
            compression: self.opts.compression,
            filter_bits_per_key: self
                .opts
                .filter_policy
                .applies_to(self.level)
                .then(|| self.opts.filter_policy.bits_per_key_at(self.level)),
            filter_kind: self.opts.filter_policy.kind,
            format_version: if self.range_dels {
                RANGE_DEL_TABLE_FORMAT_VERSION
            } else {
                self.opts.table_format_version
            },
        };
        self.builder = Some((number, TableBuilder::new(writer, path, build)));
        Ok(())
    }

    fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        match self.builder.as_mut() {
            Some((_, b)) => b.add(key, value),
            None => Err(Error::Internal("compaction output table not open".into())),
        }
    }

    fn estimated_size(&self) -> u64 {
        self.builder.as_ref().map_or(0, |(_, b)| b.estimated_size())
    }

    /// Finishes the table being written with the range deletions `dels`;
    /// `None` if nothing was written (the file is removed).
    fn finish(&mut self, dels: Fragments) -> Result<Option<TableMeta>> {
        let Some((number, mut builder)) = self.builder.take() else {
            return Ok(None);
        };
        if builder.num_entries() == 0 && dels.is_empty() {
            builder.abort()?;
            return Ok(None);
        }
        let smallest = dels.smallest_key();
        let largest = dels.largest_key();
        builder.set_range_dels(dels)?;
        let props = builder.finish()?;
        self.stats.bytes_written_tables.add(props.file_size);
        let mut file = new_file(number, &props, smallest.as_ref())?;
        // The table's key range covers its range deletions.
        if let Some(hi) = largest {
            if props.num_entries == 0 || hi > file.largest {
                file.largest = hi;
            }
        }
        Ok(Some(file))
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

/// An object writer that asks the rate limiter before each write.
struct LimitedWriter {
    inner: Box<dyn ObjectWriter>,
    limiter: Arc<RateLimiter>,
}

impl ObjectWriter for LimitedWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<()> {
        self.limiter.acquire(data.len() as u64);
        self.inner.write(data)
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn finish(self: Box<Self>) -> std::io::Result<()> {
        self.inner.finish()
    }
    fn abort(self: Box<Self>) -> std::io::Result<()> {
        self.inner.abort()
    }
}

/// The manifest's record of a table just written. Its key range spans its
/// entries and `dels_smallest`, the first range deletion's start (the caller
/// extends the largest key).
fn new_file(
    number: u64,
    p: &TableProperties,
    dels_smallest: Option<&InternalKey>,
) -> Result<TableMeta> {
    let key = |k: &[u8], what: &str| {
        InternalKey::from_encoded(k.to_vec()).ok_or_else(|| {
            Error::Internal(format!(
                "table {number} was written with a malformed {what} key"
            ))
        })
    };
    let (smallest, largest) = match (p.num_entries, dels_smallest) {
        (0, Some(lo)) => (lo.clone(), lo.clone()),
        (_, lo) => {
            let first = key(&p.smallest_key, "smallest")?;
            let smallest = match lo {
                Some(lo) if *lo < first => lo.clone(),
                _ => first,
            };
            (smallest, key(&p.largest_key, "largest")?)
        }
    };
    Ok(TableMeta {
        number,
        size: p.file_size,
        smallest,
        largest,
        smallest_seqno: p.smallest_seqno,
        largest_seqno: p.largest_seqno,
        num_entries: p.num_entries,
        range_deletions: p.range_deletions,
    })
}

fn user_key(internal: &[u8]) -> &[u8] {
    parse_internal_key(internal).map_or(internal, |k| k.user_key)
}

/// Indices of the versions (newest first) of one user key that a compaction
/// keeps: the newest of each snapshot stripe, minus trailing deletions when the
/// output is bottommost.
fn select_versions(
    versions: &[(Vec<u8>, Vec<u8>)],
    snapshots: &[SeqNo],
    bottommost: bool,
) -> Vec<usize> {
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
    if bottommost {
        // A deletion with nothing older under it hides nothing.
        while let Some(&i) = kept.last() {
            let is_delete = parse_internal_key(&versions[i].0)
                .is_some_and(|k| k.value_kind() == Some(ValueKind::Delete));
            if !is_delete {
                break;
            }
            kept.pop();
        }
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
    fn outputs_end_at_the_target_without_grandparents() {
        let mut s = Splitter::new(100, &[]);
        assert!(!s.split_before(b"a", 0));
        assert!(!s.split_before(b"b", 99));
        assert!(s.split_before(b"c", 100));
    }

    #[test]
    fn outputs_end_where_a_grandparent_starts_once_half_full() {
        let gp = [
            b"d".to_vec(),
            b"m".to_vec(),
            b"n".to_vec(),
            b"o".to_vec(),
            b"x".to_vec(),
        ];
        let mut s = Splitter::new(100, &gp);
        // The first key of the merge, before any output exists.
        assert!(!s.split_before(b"a", 0));
        s.started();
        // Crossing "d" below half the target: no cut.
        assert!(!s.split_before(b"e", 40));
        // Between grandparent starts, even past the target: no cut.
        assert!(!s.split_before(b"f", 120));
        // "m" is the second start passed in this output: the bar is 55%.
        assert!(s.split_before(b"m", 120));
        s.started();
        // A new output: "n" is its first start, the bar 50%.
        assert!(!s.split_before(b"n", 49));
        // "o" is its second: 55%.
        assert!(!s.split_before(b"o", 54));
        // Twice the target cuts anywhere.
        assert!(s.split_before(b"p", 200));
        s.started();
        // Past the last grandparent, the target cuts again.
        assert!(!s.split_before(b"x", 10));
        assert!(!s.split_before(b"y", 99));
        assert!(s.split_before(b"z", 100));
    }

    #[test]
    fn starts_passed_before_the_first_output_do_not_raise_its_bar() {
        let gp: Vec<Vec<u8>> = (0u8..20).map(|i| vec![i]).collect();
        let mut s = Splitter::new(100, &gp);
        // The merge's first key lies past twelve grandparent starts.
        assert!(!s.split_before(&[11], 0));
        s.started();
        // The first start inside the output: the bar is 50%, not 90%.
        assert!(s.split_before(&[12], 50));
    }

    #[test]
    fn the_bar_rises_with_every_grandparent_passed_up_to_90_percent() {
        let gp: Vec<Vec<u8>> = (0u8..20).map(|i| vec![i]).collect();
        let mut s = Splitter::new(100, &gp);
        s.started();
        // Starts 0..=11 passed below half the target.
        assert!(!s.split_before(&[11], 49));
        // Start 12 is the 13th: 50 + 5 * min(12, 8) = 90%.
        assert!(!s.split_before(&[12], 89));
        assert!(s.split_before(&[13], 90));
        s.started();
        // Starts passed before an output opens do not count for it: the
        // first start in the new output sets the bar at 50%.
        assert!(s.split_before(&[14], 50));
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
        assert_eq!(select_versions(&versions, &[], true), vec![0]);
        // Snapshot at 6 sees seq 5, a deletion with nothing kept under it.
        assert_eq!(select_versions(&versions, &[6], true), vec![0]);
        // ...which must stay when older data may sit in a deeper level.
        assert_eq!(select_versions(&versions, &[6], false), vec![0, 2]);
        // Snapshot at 4 sees seq 3.
        assert_eq!(select_versions(&versions, &[4, 8], true), vec![0, 1, 3]);
        let deleted = vec![v(4, Delete), v(2, Value)];
        assert!(select_versions(&deleted, &[], true).is_empty());
        assert_eq!(select_versions(&deleted, &[], false), vec![0]);
        assert_eq!(select_versions(&deleted, &[3], true), vec![0, 1]);
    }
}
