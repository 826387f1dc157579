//! Background work: flushing immutable memtables to L0, leveled compactions,
//! manual full compaction, and deleting obsolete files.
//!
//! # Scheduling
//!
//! `max_background_jobs` threads share one loop. Under the state lock a thread
//! takes, in order of preference: the flush of the oldest immutable memtable (one
//! flush at a time, so L0 tables are installed in age order), or a compaction
//! chosen by the pure picker over the tables not already being compacted. At most
//! `max_background_jobs - 1` compactions run at once (at least one), so a thread
//! is always free for flushes. A compaction big enough is split into
//! subcompactions ([`subcompact`]) that run on threads the compaction starts
//! and joins itself: they are not taken from the background threads, and the
//! compaction counts once against the limit, so the thread free for flushes
//! stays free. A failed flush or compaction poisons the database: writes
//! fail until it is reopened, and nothing already installed is lost.
//!
//! The picker reads the current version's levels as they are (nothing is
//! copied for it) and the set of tables being compacted. When it finds
//! nothing, the question is kept ([`IdlePick`]), and the wake-ups that follow
//! (memtable switches, the idle timer, other jobs ending) ask again only once
//! the version, the set or the draining of L0 changed.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use shale_env::FileSystem;

use super::{DbInner, State, SuperVersion};
use crate::compaction::job::{self, MergeOutput};
use crate::compaction::picker::{self, Compacting, Pick, PickerOptions, LAST_LEVEL};
use crate::compaction::subcompact;
use crate::error::{Error, Result};
use crate::events::{CompactionReason, Event, TableReason};
use crate::format::SeqNo;
use crate::iter::InternalIterator;
use crate::memtable::MemTable;
use crate::metrics::Stats;
use crate::options::{Options, NUM_LEVELS};
use crate::rangedel::Fragments;
use crate::version::{FileMeta, Version, VersionEdit};

/// A version's levels, as the picker reads them.
type Levels = picker::Levels<Arc<FileMeta>>;

enum Job {
    Flush {
        imm: Arc<MemTable>,
        number: u64,
    },
    Compact(Compaction),
    /// Tables whose last reader let go (an iterator or snapshot dropped after
    /// the compaction that removed them).
    DeleteObsolete,
    /// Tables a newer range deletion may cover whole.
    DeleteOnly,
}

/// How long an idle background thread sleeps before it looks for obsolete
/// tables again: a table's last reader may drop it without waking anyone.
const IDLE_WAKEUP: Duration = Duration::from_secs(1);

/// A picked compaction with its input tables.
struct Compaction {
    pick: Pick,
    inputs: Vec<(usize, Arc<FileMeta>)>,
}

/// The loop of one background thread. Exits on shutdown.
pub(crate) fn run(db: &DbInner) {
    while let Some(job) = next_job(db) {
        match job {
            Job::Flush { imm, number } => flush(db, imm, number),
            Job::Compact(c) => compact(db, c),
            Job::DeleteObsolete => {}
            Job::DeleteOnly => {
                if let Err(e) = delete_only(db) {
                    if !matches!(e, Error::Closed) {
                        let mut st = db.state.lock();
                        db.background_failed(&mut st, &e);
                    }
                }
            }
        }
        if let Err(e) = db.delete_obsolete_files(false) {
            let mut st = db.state.lock();
            db.background_failed(&mut st, &e);
        }
    }
}

impl job::JobHost for DbInner {
    fn dir(&self) -> &Path {
        &self.path
    }
    fn fs(&self) -> &dyn FileSystem {
        &*self.fs
    }
    fn opts(&self) -> &Options {
        &self.opts
    }
    fn stats(&self) -> &Stats {
        &self.stats
    }
    fn rate_limiter(&self) -> Option<Arc<crate::rate_limit::RateLimiter>> {
        self.rate_limiter.clone()
    }
    fn snapshots(&self) -> Vec<SeqNo> {
        self.snapshots.lock().keys().copied().collect()
    }
    fn closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }
    fn scan_table(&self, f: &FileMeta, level: usize) -> Result<Box<dyn InternalIterator>> {
        self.table_cache.scan(f, level)
    }
    fn table_range_dels(&self, f: &FileMeta, level: usize) -> Result<Arc<Fragments>> {
        self.table_cache
            .with(f, level, |t| Ok(t.range_dels().clone()))
    }
    fn new_output(&self) -> u64 {
        let mut st = self.state.lock();
        let number = st.versions.new_file_number();
        st.pending_outputs.insert(number);
        number
    }
    fn outputs_done(&self, numbers: &[u64]) {
        let mut st = self.state.lock();
        for n in numbers {
            st.pending_outputs.remove(n);
        }
    }
}

/// Waits for work; `None` on shutdown.
fn next_job(db: &DbInner) -> Option<Job> {
    let mut st = db.state.lock();
    loop {
        if st.shutting_down {
            return None;
        }
        if st.poison.is_none() {
            let sv = db.sv.load();
            if !st.flush_running {
                if let Some(imm) = sv.imms.last() {
                    st.flush_running = true;
                    let number = st.versions.new_file_number();
                    st.pending_outputs.insert(number);
                    return Some(Job::Flush {
                        imm: imm.clone(),
                        number,
                    });
                }
            }
            let max_compactions = db.opts.max_background_jobs.saturating_sub(1).max(1);
            if !st.manual_compaction && st.running_compactions < max_compactions {
                let drain_l0 = st.settling > 0;
                let asked = st
                    .idle_pick
                    .as_ref()
                    .is_some_and(|idle| idle.is(&sv.version, &st.compacting, drain_l0));
                if !asked {
                    match pick_compaction(&sv, &st.compacting, &db.opts, drain_l0) {
                        Some(c) => {
                            for (_, f) in &c.inputs {
                                st.compacting.insert(f.number);
                            }
                            st.running_compactions += 1;
                            return Some(Job::Compact(c));
                        }
                        None => {
                            st.idle_pick = Some(IdlePick {
                                version: Arc::downgrade(&sv.version),
                                compacting: st.compacting.clone(),
                                drain_l0,
                            });
                        }
                    }
                }
            }
            if db.delete_only_check.swap(false, Ordering::AcqRel)
                && sv.version.all_files().any(|(_, f)| f.range_deletions > 0)
            {
                return Some(Job::DeleteOnly);
            }
        }
        if db.obsolete.has_pending() {
            return Some(Job::DeleteObsolete);
        }
        db.cv.wait_for(&mut st, IDLE_WAKEUP);
    }
}

/// The picker's options, from the database's.
pub(crate) fn picker_options(opts: &Options) -> PickerOptions {
    PickerOptions {
        l0_compaction_trigger: opts.effective_l0_compaction_trigger(),
        base_level_bytes: opts.base_level_bytes,
        level_size_multiplier: opts.level_size_multiplier,
        filter_at: std::array::from_fn(|l| opts.filter_policy.applies_to(l)),
        target_file_size_base: opts.target_file_size_base,
        drain_l0: false,
    }
}

/// What the picker was last asked without finding a compaction: a version,
/// the tables running compactions held and whether L0 was being drained.
/// The picker is pure, so while all three are unchanged it would answer the
/// same, and a background thread's wake-up skips it. The version is held
/// weakly: an idle question must not keep an old version's tables (their
/// readers, their files) alive; the weak reference keeps its allocation, so
/// no later version can have its address.
pub(crate) struct IdlePick {
    version: std::sync::Weak<Version>,
    compacting: Compacting,
    drain_l0: bool,
}

impl IdlePick {
    /// True if the picker was asked exactly this.
    fn is(&self, version: &Arc<Version>, compacting: &Compacting, drain_l0: bool) -> bool {
        std::ptr::eq(self.version.as_ptr(), Arc::as_ptr(version))
            && self.drain_l0 == drain_l0
            && self.compacting == *compacting
    }
}

/// The level L0 compacts into, for the tree of `levels`.
fn base_level(levels: &Levels, opts: &Options) -> usize {
    picker::level_targets(&picker::level_bytes(levels), &picker_options(opts)).base_level
}

/// True if the picker would start a compaction on `levels` (none running),
/// draining L0 below its trigger if `drain_l0`.
pub(crate) fn needs_compaction(levels: &Levels, opts: &Options, drain_l0: bool) -> bool {
    let popts = PickerOptions {
        drain_l0,
        ..picker_options(opts)
    };
    picker::pick(levels, &Compacting::new(), &popts).is_some()
}

fn pick_compaction(
    sv: &SuperVersion,
    compacting: &Compacting,
    opts: &Options,
    drain_l0: bool,
) -> Option<Compaction> {
    let popts = PickerOptions {
        drain_l0,
        ..picker_options(opts)
    };
    let pick = picker::pick(&sv.version.levels, compacting, &popts)?;
    let version = &sv.version;
    let find = |level: usize, numbers: &[u64]| -> Vec<(usize, Arc<FileMeta>)> {
        version.levels[level]
            .iter()
            .filter(|f| numbers.contains(&f.number))
            .map(|f| (level, f.clone()))
            .collect()
    };
    let mut inputs = find(pick.start_level, &pick.inputs);
    inputs.extend(find(pick.output_level, &pick.output_inputs));
    Some(Compaction { pick, inputs })
}

/// Flushes the oldest immutable memtable and installs its table.
fn flush(db: &DbInner, imm: Arc<MemTable>, number: u64) {
    let job = db.next_job.fetch_add(1, Ordering::Relaxed);
    let started = Instant::now();
    db.events.raise(Event::FlushBegin {
        job,
        memtable_bytes: imm.approximate_bytes() as u64,
    });
    let limiter = db.rate_limiter.clone();
    let built =
        job::write_memtable(&db.path, &db.opts, &db.stats, limiter, &imm, number).and_then(|f| {
            db.fs
                .sync_dir(&db.path)
                .map_err(|e| Error::io("sync directory", &db.path, e))?;
            Ok(f)
        });
    let mut st = db.state.lock();
    st.pending_outputs.remove(&number);
    let (bytes, error) = match built {
        Ok(file) => {
            let mut edit = VersionEdit::default();
            // Once this memtable is in a table, the oldest WAL still needed is
            // that of the next newer memtable.
            let n = st.imm_logs.len();
            let next_log = if n >= 2 {
                st.imm_logs[n - 2]
            } else {
                st.mem_log
            };
            edit.log_number = Some(next_log);
            let table = file.as_ref().map(|f| (f.number, f.size));
            let bytes = table.map_or(0, |(_, size)| size);
            if let Some(f) = file {
                edit.added.push((0, f));
            }
            db.stats.flushes.incr();
            db.stats.flush_bytes.add(bytes);
            match db.log_and_apply(&mut st, edit, 1) {
                Ok(()) => {
                    if let Some((number, bytes)) = table {
                        db.events.raise(Event::TableCreated {
                            job,
                            number,
                            level: 0,
                            bytes,
                            reason: TableReason::Flush,
                        });
                    }
                    (bytes, None)
                }
                // log_and_apply has poisoned the database.
                Err(e) => {
                    db.stats.background_errors.incr();
                    db.events.raise(Event::BackgroundError { error: e.clone() });
                    (0, Some(e))
                }
            }
        }
        Err(e) => {
            db.background_failed(&mut st, &e);
            (0, Some(e))
        }
    };
    db.events.raise(Event::FlushEnd {
        job,
        bytes,
        duration: started.elapsed(),
        error,
    });
    // Only now: log_and_apply releases the state lock while it writes the
    // manifest, and the memtable stays in the super version until it installs;
    // another flush must not pick it up meanwhile.
    st.flush_running = false;
    db.cv.notify_all();
}

/// Runs a picked compaction and installs its result.
fn compact(db: &DbInner, c: Compaction) {
    let mut events = CompactionEvents::begin(
        db,
        CompactionReason::Automatic,
        &c.inputs,
        c.pick.output_level,
        c.pick.trivial_move,
    );
    let result = run_compaction(db, &c, &mut events);
    let mut st = db.state.lock();
    for (_, f) in &c.inputs {
        st.compacting.remove(&f.number);
    }
    st.running_compactions -= 1;
    if let Err(e) = &result {
        if !matches!(e, Error::Closed) {
            db.background_failed(&mut st, e);
        }
    }
    events.end(db, result);
    db.cv.notify_all();
}

/// What an installed compaction wrote.
struct Installed {
    /// Number and size of each output table.
    tables: Vec<(u64, u64)>,
    bytes_read: u64,
    bytes_written: u64,
}

/// The begin of a compaction, as raised to listeners, so that its end can
/// be raised with the same job number and levels.
struct CompactionEvents {
    job: u64,
    reason: CompactionReason,
    input_level: usize,
    output_level: usize,
    started: Instant,
    /// Subcompactions the merge was split into (1: not split; 0: a trivial
    /// move), set once decided.
    subcompactions: usize,
}

impl CompactionEvents {
    fn begin(
        db: &DbInner,
        reason: CompactionReason,
        inputs: &[(usize, Arc<FileMeta>)],
        output_level: usize,
        trivial_move: bool,
    ) -> CompactionEvents {
        let e = CompactionEvents {
            job: db.next_job.fetch_add(1, Ordering::Relaxed),
            reason,
            input_level: inputs.iter().map(|(l, _)| *l).min().unwrap_or(output_level),
            output_level,
            started: Instant::now(),
            subcompactions: 0,
        };
        db.events.raise(Event::CompactionBegin {
            job: e.job,
            reason,
            input_level: e.input_level,
            output_level: e.output_level,
            input_tables: inputs.len(),
            input_bytes: inputs.iter().map(|(_, f)| f.size).sum(),
            trivial_move,
        });
        e
    }

    /// Raises the tables created and the end. A compaction given up because
    /// the database closes ends without an error and without tables.
    fn end(self, db: &DbInner, result: Result<Installed>) {
        let (installed, error) = match result {
            Ok(installed) => (installed, None),
            Err(Error::Closed) => (Installed::none(), None),
            Err(e) => (Installed::none(), Some(e)),
        };
        for &(number, bytes) in &installed.tables {
            db.events.raise(Event::TableCreated {
                job: self.job,
                number,
                level: self.output_level,
                bytes,
                reason: TableReason::Compaction,
            });
        }
        db.events.raise(Event::CompactionEnd {
            job: self.job,
            reason: self.reason,
            input_level: self.input_level,
            output_level: self.output_level,
            bytes_read: installed.bytes_read,
            bytes_written: installed.bytes_written,
            output_tables: installed.tables.len(),
            subcompactions: self.subcompactions,
            duration: self.started.elapsed(),
            error,
        });
    }
}

impl Installed {
    fn none() -> Installed {
        Installed {
            tables: Vec::new(),
            bytes_read: 0,
            bytes_written: 0,
        }
    }
}

fn run_compaction(
    db: &DbInner,
    c: &Compaction,
    events: &mut CompactionEvents,
) -> Result<Installed> {
    let out_level = c.pick.output_level;
    if c.pick.trivial_move {
        let mut edit = VersionEdit::default();
        for (level, f) in &c.inputs {
            edit.deleted.push((*level, f.number));
            edit.added.push((out_level, f.meta.clone()));
        }
        let mut st = db.state.lock();
        db.stats.compactions[out_level].incr();
        db.stats.trivial_moves.incr();
        return db
            .log_and_apply(&mut st, edit, 0)
            .map(|()| Installed::none());
    }
    let version = db.sv.load().version.clone();
    let bottommost = is_bottommost(&version, &c.inputs, out_level);
    let grandparents = first_keys(&version, out_level + 1);
    let output = job::Outputs {
        level: out_level,
        target_file_size: c.pick.target_file_size,
        grandparents: &grandparents,
    };
    let cuts = subcompaction_cuts(&db.opts, &c.inputs, output.target_file_size);
    events.subcompactions = cuts.len() + 1;
    let merged = job::merge(db, &c.inputs, &output, bottommost, &cuts)?;
    install(db, &c.inputs, out_level, merged)
}

/// Where a merge of `inputs` writing tables of `target_file_size` is cut
/// into subcompactions (none: one range), by [`subcompact::split_points`]:
/// at most [`Options::max_subcompactions`] ranges, each with at least one
/// output table's worth of input bytes, so that a small compaction is not
/// split into ranges that each write a fraction of a table.
fn subcompaction_cuts(
    opts: &Options,
    inputs: &[(usize, Arc<FileMeta>)],
    target_file_size: u64,
) -> Vec<Vec<u8>> {
    let spans: Vec<subcompact::Span<'_>> = inputs
        .iter()
        .map(|(_, f)| subcompact::Span {
            smallest: f.smallest.user_key(),
            largest: f.largest.user_key(),
            size: f.size,
        })
        .collect();
    subcompact::split_points(&spans, opts.max_subcompactions, target_file_size)
}

/// Smallest user keys of the tables of `level`, in key order (none past the
/// last level).
fn first_keys(version: &Version, level: usize) -> Vec<Vec<u8>> {
    version.levels.get(level).map_or_else(Vec::new, |tables| {
        tables
            .iter()
            .map(|f| f.smallest.user_key().to_vec())
            .collect()
    })
}

/// Replaces `inputs` by the merge's output tables at `level`.
fn install(
    db: &DbInner,
    inputs: &[(usize, Arc<FileMeta>)],
    level: usize,
    merged: MergeOutput,
) -> Result<Installed> {
    let subcompactions = merged.subcompactions;
    let installed = Installed {
        tables: merged.tables.iter().map(|f| (f.number, f.size)).collect(),
        bytes_read: merged.bytes_read,
        bytes_written: merged.bytes_written,
    };
    let edit = VersionEdit {
        deleted: inputs.iter().map(|(l, f)| (*l, f.number)).collect(),
        added: merged.tables.into_iter().map(|f| (level, f)).collect(),
        ..Default::default()
    };
    let mut st = db.state.lock();
    db.stats.compactions[level].incr();
    db.stats.compaction_read[level].add(installed.bytes_read);
    db.stats.compaction_written[level].add(installed.bytes_written);
    let result = db.log_and_apply(&mut st, edit, 0);
    if result.is_ok() && subcompactions > 1 {
        db.stats.split_compactions.incr();
        db.stats.subcompactions.add(subcompactions as u64);
    }
    result.map(|()| installed)
}

/// True if no level below `output_level` holds a table overlapping the inputs'
/// user-key range.
fn is_bottommost(
    version: &Version,
    inputs: &[(usize, Arc<FileMeta>)],
    output_level: usize,
) -> bool {
    let lo = inputs.iter().map(|(_, f)| f.smallest.user_key()).min();
    let hi = inputs.iter().map(|(_, f)| f.largest.user_key()).max();
    let (Some(lo), Some(hi)) = (lo, hi) else {
        return true;
    };
    version.levels[output_level + 1..]
        .iter()
        .flatten()
        .all(|f| f.largest.user_key() < lo || hi < f.smallest.user_key())
}

/// Merges every table into the last level (after waiting for running
/// compactions and keeping new ones from starting).
pub(crate) fn compact_all(db: &DbInner) -> Result<()> {
    let _serial = db.compaction_lock.lock();
    delete_only(db)?;
    let inputs: Vec<(usize, Arc<FileMeta>)> = {
        let mut st = db.state.lock();
        st.manual_compaction = true;
        // Every table goes in, so nothing may be compacting: not only the
        // automatic compactions counted in `running_compactions` but a
        // delete-only job too, whose edit may still be on its way to the
        // manifest (its tables are then still in the current version).
        while (st.running_compactions > 0 || !st.compacting.is_empty()) && st.poison.is_none() {
            db.cv.wait(&mut st);
        }
        if let Err(e) = st.check_poison() {
            st.manual_compaction = false;
            return Err(e);
        }
        let version = db.sv.load().version.clone();
        let inputs: Vec<_> = version.all_files().map(|(l, f)| (l, f.clone())).collect();
        for (_, f) in &inputs {
            st.compacting.insert(f.number);
        }
        st.manual_running = !inputs.is_empty();
        inputs
    };
    let result = if inputs.is_empty() {
        Ok(())
    } else {
        let mut events =
            CompactionEvents::begin(db, CompactionReason::Manual, &inputs, LAST_LEVEL, false);
        let base_level = base_level(&db.sv.load().version.levels, &db.opts);
        let output = job::Outputs {
            level: LAST_LEVEL,
            target_file_size: picker::output_file_size(
                db.opts.target_file_size_base,
                LAST_LEVEL,
                base_level,
            ),
            grandparents: &[],
        };
        let cuts = subcompaction_cuts(&db.opts, &inputs, output.target_file_size);
        events.subcompactions = cuts.len() + 1;
        let result = job::merge(db, &inputs, &output, true, &cuts)
            .and_then(|merged| install(db, &inputs, LAST_LEVEL, merged));
        let mut st = db.state.lock();
        if let Err(e) = &result {
            if !matches!(e, Error::Closed) {
                db.background_failed(&mut st, e);
            }
        }
        let outcome = result.as_ref().map(|_| ()).map_err(Clone::clone);
        events.end(db, result);
        outcome
    };
    let mut st = db.state.lock();
    for (_, f) in &inputs {
        st.compacting.remove(&f.number);
    }
    st.manual_compaction = false;
    st.manual_running = false;
    db.cv.notify_all();
    drop(st);
    result?;
    // The inputs are obsolete once their last reference goes.
    drop(inputs);
    db.delete_obsolete_files(false)
}

/// Pebble's delete-only compaction: deletes, without reading them, the
/// tables that a newer range deletion covers whole. A table goes when its
/// whole key range lies under range deletions (of tables: durable ones) each
/// newer than every version in it and in the same snapshot stripe as all of
/// them (so no reader, snapshot or not, sees any of its versions). Returns
/// the number of tables deleted.
pub(crate) fn delete_only(db: &DbInner) -> Result<usize> {
    let version = db.sv.load().version.clone();
    let mut sources = Vec::new();
    for (level, f) in version.all_files() {
        if f.range_deletions > 0 {
            sources.push(
                db.table_cache
                    .with(f, level, |t| Ok(t.range_dels().clone()))?,
            );
        }
    }
    if sources.is_empty() {
        return Ok(0);
    }
    let dels = Fragments::merge(sources.iter().map(|d| d.as_ref()));
    let snapshots = job::JobHost::snapshots(db);
    let stripe = |seq: SeqNo| snapshots.partition_point(|&s| s < seq);
    let mut victims: Vec<(usize, Arc<FileMeta>)> = version
        .all_files()
        .filter(|(_, f)| {
            let (lo, hi) = (f.smallest.user_key(), f.largest.user_key());
            dels.spans(lo, hi, |frag| {
                frag.seqs
                    .iter()
                    .any(|&t| t > f.largest_seqno && stripe(t) == stripe(f.smallest_seqno))
            })
        })
        .map(|(l, f)| (l, f.clone()))
        .collect();
    let mut st = db.state.lock();
    let current = db.sv.load().version.clone();
    victims.retain(|(l, f)| {
        !st.compacting.contains(&f.number)
            && current.levels[*l].iter().any(|g| g.number == f.number)
    });
    if victims.is_empty() {
        return Ok(0);
    }
    // Marked as compacting so that no compaction picks them meanwhile.
    for (_, f) in &victims {
        st.compacting.insert(f.number);
    }
    let edit = VersionEdit {
        deleted: victims.iter().map(|(l, f)| (*l, f.number)).collect(),
        ..Default::default()
    };
    let result = db.log_and_apply(&mut st, edit, 0);
    for (_, f) in &victims {
        st.compacting.remove(&f.number);
    }
    // A manual compaction may wait for these tables.
    db.cv.notify_all();
    result?;
    db.stats.delete_only_tables.add(victims.len() as u64);
    db.stats
        .delete_only_bytes
        .add(victims.iter().map(|(_, f)| f.size).sum());
    Ok(victims.len())
}

/// The user-key range of a manual compaction: `None` ends are open.
#[derive(Clone, Copy)]
pub(crate) struct KeyRange<'a> {
    pub start: Option<&'a [u8]>,
    pub end: Option<&'a [u8]>,
}

impl KeyRange<'_> {
    /// True if `f`'s keys meet the range (`end` inclusive).
    fn overlaps(&self, f: &FileMeta) -> bool {
        self.start.is_none_or(|s| f.largest.user_key() >= s)
            && self.end.is_none_or(|e| f.smallest.user_key() <= e)
    }
}

/// One step of a manual range compaction: `inputs` merged into `output_level`.
struct RangeStep {
    inputs: Vec<(usize, Arc<FileMeta>)>,
    output_level: usize,
}

/// The step that compacts `level`'s tables meeting `range`, on `version`:
/// into the next level below that holds tables, or (the last level holding
/// any) rewritten in place, so that the range is rewritten down to the
/// bottom of the tree and its deletions can go. L0 takes every L0 table as
/// soon as one meets the range (they overlap each other: a newer one must
/// never be left above an older one that went down), into the base level
/// when nothing lies below.
fn range_step(
    sv: &SuperVersion,
    level: usize,
    range: KeyRange<'_>,
    opts: &Options,
) -> Option<RangeStep> {
    let version = &sv.version;
    let files = &version.levels[level];
    let mine: Vec<Arc<FileMeta>> = if level == 0 {
        if files.iter().any(|f| range.overlaps(f)) {
            files.clone()
        } else {
            Vec::new()
        }
    } else {
        files
            .iter()
            .filter(|f| range.overlaps(f))
            .cloned()
            .collect()
    };
    if mine.is_empty() {
        return None;
    }
    let below = (level + 1..NUM_LEVELS).find(|&l| !version.levels[l].is_empty());
    let output_level = match below {
        Some(l) => l,
        None if level == 0 => base_level(&sv.version.levels, opts),
        None => level,
    };
    let mut inputs: Vec<(usize, Arc<FileMeta>)> = mine.into_iter().map(|f| (level, f)).collect();
    if output_level != level {
        let lo = inputs.iter().map(|(_, f)| f.smallest.user_key()).min();
        let hi = inputs.iter().map(|(_, f)| f.largest.user_key()).max();
        let hull = KeyRange { start: lo, end: hi };
        let under: Vec<_> = version.levels[output_level]
            .iter()
            .filter(|f| hull.overlaps(f))
            .map(|f| (output_level, f.clone()))
            .collect();
        inputs.extend(under);
    }
    Some(RangeStep {
        inputs,
        output_level,
    })
}

/// Compacts the tables holding keys in `range` down the tree, one level at a
/// time from L0 (see [`range_step`]), beside the background work: automatic
/// flushes and compactions go on, and a step waits only while a table it
/// needs is being compacted. One manual compaction (this or
/// [`compact_all`]) runs at a time.
pub(crate) fn compact_range(db: &DbInner, range: KeyRange<'_>) -> Result<()> {
    let _serial = db.compaction_lock.lock();
    // Tables a range deletion covers whole go without being read.
    delete_only(db)?;
    let mut level = 0;
    while level < NUM_LEVELS {
        let step = {
            let mut st = db.state.lock();
            loop {
                st.check_poison()?;
                if db.closing.load(Ordering::Acquire) {
                    return Err(Error::Closed);
                }
                let sv = db.sv.load_full();
                match range_step(&sv, level, range, &db.opts) {
                    Some(s)
                        if s.inputs
                            .iter()
                            .any(|(_, f)| st.compacting.contains(&f.number)) =>
                    {
                        db.cv.wait(&mut st);
                    }
                    Some(s) => {
                        for (_, f) in &s.inputs {
                            st.compacting.insert(f.number);
                        }
                        st.manual_running = true;
                        break Some(s);
                    }
                    None => break None,
                }
            }
        };
        let Some(step) = step else {
            level += 1;
            continue;
        };
        let result = run_range_step(db, &step);
        let mut st = db.state.lock();
        for (_, f) in &step.inputs {
            st.compacting.remove(&f.number);
        }
        st.manual_running = false;
        if let Err(e) = &result {
            if !matches!(e, Error::Closed) {
                db.background_failed(&mut st, e);
            }
        }
        db.cv.notify_all();
        drop(st);
        result?;
        level += 1;
    }
    db.delete_obsolete_files(false)
}

fn run_range_step(db: &DbInner, step: &RangeStep) -> Result<()> {
    let out_level = step.output_level;
    let mut events =
        CompactionEvents::begin(db, CompactionReason::Manual, &step.inputs, out_level, false);
    let sv = db.sv.load_full();
    let version = &sv.version;
    let base_level = base_level(&sv.version.levels, &db.opts);
    let grandparents = first_keys(version, out_level + 1);
    let output = job::Outputs {
        level: out_level,
        target_file_size: picker::output_file_size(
            db.opts.target_file_size_base,
            out_level,
            base_level,
        ),
        grandparents: &grandparents,
    };
    let bottommost = is_bottommost(version, &step.inputs, out_level);
    let cuts = subcompaction_cuts(&db.opts, &step.inputs, output.target_file_size);
    events.subcompactions = cuts.len() + 1;
    let result = job::merge(db, &step.inputs, &output, bottommost, &cuts)
        .and_then(|merged| install(db, &step.inputs, out_level, merged));
    let outcome = result.as_ref().map(|_| ()).map_err(Clone::clone);
    events.end(db, result);
    outcome
}

/// Recomputes the compaction debt of the current version (after a change).
pub(crate) fn update_pending_bytes(db: &DbInner, st: &mut State) {
    let version = db.sv.load().version.clone();
    st.pending_compaction_bytes =
        picker::pending_compaction_bytes(&version.levels, &picker_options(&db.opts));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::MemFs;
    use crate::{Db, WriteOptions};

    #[test]
    fn an_idle_pick_matches_only_the_same_question() {
        let version = Arc::new(Version::default());
        let busy: Compacting = [3].into_iter().collect();
        let idle = IdlePick {
            version: Arc::downgrade(&version),
            compacting: busy.clone(),
            drain_l0: false,
        };
        assert!(idle.is(&version, &busy, false));
        assert!(!idle.is(&version, &busy, true), "draining L0 may pick");
        assert!(
            !idle.is(&version, &Compacting::new(), false),
            "a compaction ended"
        );
        let same_content = Arc::new(Version::default());
        assert!(!idle.is(&same_content, &busy, false), "another version");
        // The question does not keep its version (and the version's tables)
        // alive.
        assert_eq!(Arc::strong_count(&version), 1);
        drop(version);
        assert!(idle.version.upgrade().is_none());
    }

    /// Once the background threads found nothing to compact in the current
    /// version, they remember it: later wake-ups (a memtable switch, the idle
    /// timer) do not run the picker again.
    #[test]
    fn background_threads_remember_an_idle_version() {
        let opts = Options {
            fs: Arc::new(MemFs::new()),
            write_buffer_size: 4 << 10,
            ..Options::default()
        };
        let db = Db::open("/db", opts).expect("open");
        for i in 0..3u32 {
            let mut b = crate::WriteBatch::new();
            b.put(&i.to_be_bytes(), &[7; 5000]);
            db.write(b, &WriteOptions::default()).expect("put");
        }
        db.flush().expect("flush");
        let inner = &db.inner;
        let deadline = Instant::now() + Duration::from_secs(10);
        let remembered = loop {
            let remembered = {
                let st = inner.state.lock();
                let sv = inner.sv.load();
                st.idle_pick
                    .as_ref()
                    .is_some_and(|idle| idle.is(&sv.version, &st.compacting, false))
            };
            if remembered || Instant::now() > deadline {
                break remembered;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        assert!(remembered, "no idle pick recorded for the current version");
        db.close().expect("close");
    }
}
