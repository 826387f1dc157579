//! The read path: point lookups, snapshots and user-facing iterators.
//!
//! A Get is the study's read path: the mutable memtable, the immutable memtables
//! newest first, then for each level the tables whose key range holds the key
//! (every overlapping table in L0, newest first; at most one per deeper level).
//! For each table, [`TableReader::get`](crate::table::TableReader::get) probes
//! the filter (where the level has filters), then reads the top-level index, one
//! index partition and one data block. The first entry found (a value or a
//! deletion) ends the search.

use std::collections::{HashMap, VecDeque};
use std::ops::ControlFlow;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use shale_env::ReadQueue;

use super::{DbInner, SuperVersion};
use crate::error::{Error, Result};
use crate::format::{parse_internal_key, InternalKey, SeqNo, ValueKind, MAX_SEQNO};
use crate::iter::{ConcatIterator, InternalIterator, MergingIterator};
use crate::memtable::MemGet;
use crate::metrics::thread_physical_reads;
use crate::options::NUM_LEVELS;
use crate::pinned::PinnedValue;
use crate::rangedel::Fragments;
use crate::table::reader::{BatchScope, Planned};
use crate::table::BlockCacheKey;
use crate::table::TableGet;
use crate::trace::LookupScope;
use crate::version::FileMeta;

impl DbInner {
    pub(crate) fn get(&self, key: &[u8], seq: SeqNo) -> Result<Option<Vec<u8>>> {
        Ok(self.get_pinned(key, seq)?.map(PinnedValue::into_vec))
    }

    /// A Get whose value stays in its cached block (see [`PinnedValue`]).
    pub(crate) fn get_pinned(&self, key: &[u8], seq: SeqNo) -> Result<Option<PinnedValue>> {
        // Only snapshots outlive their database's handle.
        if self.closing.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let sv = self.sv.load();
        let result = self.get_in(&sv, key, seq);
        self.count_get(&result);
        result
    }

    /// The values of `keys` read in one state (the super version current
    /// now, at `seq`), in their order; an error ends the call. With a read
    /// pool (`Options::read_threads`) and more than one key, the keys a
    /// memtable answers are answered here and the others are looked up in
    /// the tables: on a file system that batches reads, by this thread with
    /// their data-block reads in flight together ([`Self::multi_get_queued`]);
    /// elsewhere by this thread alone until one lookup reads the device, then
    /// by this thread and the pool's at once, so that their device reads are
    /// in flight together (see [`super::read_pool`]). Only the keys answered
    /// before an error are counted as Gets.
    pub(crate) fn multi_get<K: AsRef<[u8]>>(
        self: &Arc<Self>,
        keys: &[K],
        seq: SeqNo,
    ) -> Result<Vec<Option<Vec<u8>>>> {
        if self.closing.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        // One super version for all: the keys are read in one state.
        let sv = self.sv.load_full();
        self.multi_get_in(&sv, keys, seq)
    }

    /// [`Self::multi_get`] in the state `sv`.
    fn multi_get_in<K: AsRef<[u8]>>(
        self: &Arc<Self>,
        sv: &Arc<SuperVersion>,
        keys: &[K],
        seq: SeqNo,
    ) -> Result<Vec<Option<Vec<u8>>>> {
        if keys.len() < 2 || self.read_pool.size() == 0 {
            return keys
                .iter()
                .map(|key| {
                    let result = self.get_in(sv, key.as_ref(), seq);
                    self.count_get(&result);
                    result.map(|v| v.map(PinnedValue::into_vec))
                })
                .collect();
        }
        if self.opts.fs.batches_reads() {
            let mut out: Vec<Option<Option<Vec<u8>>>> = vec![None; keys.len()];
            let mut failed = None;
            self.multi_get_queued(sv, keys.iter(), seq, usize::MAX, &mut |i, answer| {
                match answer {
                    Ok(v) => match out.get_mut(i) {
                        Some(slot) => *slot = Some(v),
                        None => {
                            failed = Some(Error::Internal(format!("multi_get: no key {i}")));
                            return ControlFlow::Break(());
                        }
                    },
                    Err(e) => {
                        failed = Some(e);
                        return ControlFlow::Break(());
                    }
                }
                ControlFlow::Continue(())
            })?;
            if let Some(e) = failed {
                return Err(e);
            }
            return out
                .into_iter()
                .map(|v| v.ok_or_else(|| Error::Internal("multi_get: a key has no answer".into())))
                .collect();
        }
        // `Some(answer)` for the keys a memtable answers; the rest go to the
        // tables.
        let from_mem: Vec<Option<Option<Vec<u8>>>> = keys
            .iter()
            .map(|key| self.get_mem(sv, key.as_ref(), seq))
            .collect();
        let mut rest = keys
            .iter()
            .zip(&from_mem)
            .filter(|(_, m)| m.is_none())
            .map(|(key, _)| key.as_ref());
        // This thread looks keys up until one reads the device (or fails): a
        // batch the block cache holds is done before a hand-off to the pool
        // would pay for itself; from the first device read on, the other
        // keys go to the pool as well.
        let mut from_tables = Vec::new();
        for key in rest.by_ref() {
            let reads = thread_physical_reads();
            let result = self
                .get_tables(sv, key, seq)
                .map(|v| v.map(PinnedValue::into_vec));
            let stop = result.is_err() || thread_physical_reads() != reads;
            from_tables.push(result);
            if stop {
                break;
            }
        }
        let rest: Arc<Vec<Vec<u8>>> = Arc::new(rest.map(<[u8]>::to_vec).collect());
        if !rest.is_empty() && from_tables.last().is_some_and(|r| r.is_ok()) {
            let (db, lookup_keys, sv) = (self.clone(), rest.clone(), sv.clone());
            let pooled = self
                .read_pool
                .run(rest.len(), self.read_pool.size(), move |i| {
                    // A close stops the lookups not yet begun.
                    if db.closing.load(Ordering::Acquire) {
                        return Err(Error::Closed);
                    }
                    let key = lookup_keys.get(i).ok_or_else(|| {
                        Error::Internal(format!("multi_get: no key {i} to look up"))
                    })?;
                    Ok(db.get_tables(&sv, key, seq)?.map(PinnedValue::into_vec))
                })?;
            from_tables.extend(pooled);
        }
        // In key order, counted as the one-by-one Gets would be.
        let mut from_tables = from_tables.into_iter();
        let mut out = Vec::with_capacity(keys.len());
        for mem in from_mem {
            let result = match mem {
                Some(answer) => {
                    self.stats.gets_memtable_hits.incr();
                    Ok(answer)
                }
                None => from_tables.next().ok_or_else(|| {
                    Error::Internal("multi_get: a key's lookup has no answer".into())
                })?,
            };
            self.count_get(&result);
            out.push(result?);
        }
        Ok(out)
    }

    /// Counts one Get and, if it found a value, a found one.
    fn count_get<V>(&self, result: &Result<Option<V>>) {
        self.stats.gets.incr();
        let found = matches!(result, Ok(Some(_)));
        if found {
            self.stats.gets_found.incr();
        }
        self.tracer.get(found);
    }

    fn get_in(&self, sv: &SuperVersion, key: &[u8], seq: SeqNo) -> Result<Option<PinnedValue>> {
        if let Some(answer) = self.get_mem(sv, key, seq) {
            self.stats.gets_memtable_hits.incr();
            return Ok(answer.map(PinnedValue::owned));
        }
        self.get_tables(sv, key, seq)
    }

    /// The answer of the memtables (the mutable one, then the immutable ones
    /// newest first), if one holds an entry for `key` at `seq`: a value, or
    /// `None` for a deletion. `None` when the tables must be asked.
    fn get_mem(&self, sv: &SuperVersion, key: &[u8], seq: SeqNo) -> Option<Option<Vec<u8>>> {
        for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
            match mem.get(key, seq) {
                MemGet::Value(v) => return Some(Some(v)),
                MemGet::Deleted => return Some(None),
                MemGet::Absent => {}
            }
        }
        None
    }

    /// The answer of the tables, level by level.
    #[inline]
    fn get_tables(&self, sv: &SuperVersion, key: &[u8], seq: SeqNo) -> Result<Option<PinnedValue>> {
        if self.tracer.on() {
            return self.get_tables_traced(sv, key, seq);
        }
        match self.look_in_tables(sv, key, seq, &mut None)? {
            Some(answer) => Ok(answer),
            None => Err(Error::Internal(
                "a Get deferred a read outside a batch".into(),
            )),
        }
    }

    /// [`Self::get_tables`] while a block trace is recorded: as a lookup of
    /// its own, whose id the accesses it traces carry. Apart, so that the
    /// Get path pays only a flag test while no trace is.
    #[cold]
    #[inline(never)]
    fn get_tables_traced(
        &self,
        sv: &SuperVersion,
        key: &[u8],
        seq: SeqNo,
    ) -> Result<Option<PinnedValue>> {
        let _lookup = LookupScope::enter(self.tracer.new_lookup());
        match self.look_in_tables(sv, key, seq, &mut None)? {
            Some(answer) => Ok(answer),
            None => Err(Error::Internal(
                "a Get deferred a read outside a batch".into(),
            )),
        }
    }

    /// The answer of the tables, level by level; `None` if a batch plans its
    /// reads on this thread and the lookup deferred one (see [`BatchScope`]),
    /// with `resume` set to the table that deferred it. A lookup given a
    /// `resume` point goes on from that table: the tables before it, in the
    /// same state, answered nothing the first time, and are neither searched
    /// nor counted again; the table's own lookups of blocks it already
    /// looked up are not counted again either ([`BatchScope::resuming`]).
    fn look_in_tables(
        &self,
        sv: &SuperVersion,
        key: &[u8],
        seq: SeqNo,
        resume: &mut Option<Resume>,
    ) -> Result<Option<Option<PinnedValue>>> {
        let policy = self.opts.filter_policy;
        let from = resume.take();
        for level in from.map_or(0, |r| r.level)..NUM_LEVELS {
            let mut skip_to = from.filter(|r| r.level == level).map(|r| r.table);
            for f in sv.version.candidates(level, key) {
                let again = match skip_to {
                    Some(table) if f.number != table => continue,
                    Some(_) => {
                        skip_to = None;
                        true
                    }
                    None => false,
                };
                let get = |table: &crate::table::TableReader| {
                    table.get(key, seq, policy.applies_to(level))
                };
                let got = if again {
                    BatchScope::resuming(|| self.table_cache.with(f, level, get))?
                } else {
                    self.table_cache.with(f, level, get)?
                };
                match got {
                    TableGet::Found(ValueKind::Value, v) => {
                        self.stats.gets_table_hits[level].incr();
                        return Ok(Some(Some(v)));
                    }
                    // A deletion, or a range deletion over the key.
                    TableGet::Found(ValueKind::Delete | ValueKind::RangeDelete, _) => {
                        self.stats.gets_table_hits[level].incr();
                        return Ok(Some(None));
                    }
                    TableGet::Absent => self.stats.gets_table_misses[level].incr(),
                    TableGet::FilteredOut => {}
                    TableGet::Deferred => {
                        *resume = Some(Resume {
                            level,
                            table: f.number,
                        });
                        return Ok(None);
                    }
                }
            }
            if let Some(table) = skip_to {
                return Err(Error::Internal(format!(
                    "a Get resumed at table {table} of L{level}, which no longer holds its key"
                )));
            }
        }
        Ok(Some(None))
    }

    /// `answer(i, value)` for each key `i` of `keys`, all read in one state
    /// (the super version current now, at `seq`), in the order the answers
    /// come, with up to `reads_in_flight` device reads in flight (see
    /// [`crate::Db::multi_get_each`]). `answer` returning
    /// [`ControlFlow::Break`] ends the call; an error ends it too.
    pub(crate) fn multi_get_each<K: AsRef<[u8]>>(
        self: &Arc<Self>,
        keys: impl IntoIterator<Item = K>,
        seq: SeqNo,
        reads_in_flight: usize,
        answer: &mut dyn FnMut(usize, Option<Vec<u8>>) -> ControlFlow<()>,
    ) -> Result<()> {
        if reads_in_flight == 0 {
            return Err(Error::InvalidArgument(
                "multi_get_each: reads_in_flight must be at least 1".into(),
            ));
        }
        if self.closing.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let sv = self.sv.load_full();
        if self.opts.fs.batches_reads() && self.read_pool.size() > 0 {
            let mut failed = None;
            self.multi_get_queued(
                &sv,
                keys.into_iter(),
                seq,
                reads_in_flight,
                &mut |i, r| match r {
                    Ok(v) => answer(i, v),
                    Err(e) => {
                        failed = Some(e);
                        ControlFlow::Break(())
                    }
                },
            )?;
            return failed.map_or(Ok(()), Err);
        }
        // Elsewhere: groups of `reads_in_flight` keys, each one multi_get.
        let mut keys = keys.into_iter();
        let mut first = 0;
        loop {
            if self.closing.load(Ordering::Acquire) {
                return Err(Error::Closed);
            }
            let group: Vec<K> = keys.by_ref().take(reads_in_flight).collect();
            if group.is_empty() {
                return Ok(());
            }
            for (i, v) in self.multi_get_in(&sv, &group, seq)?.into_iter().enumerate() {
                if answer(first + i, v).is_break() {
                    return Ok(());
                }
            }
            first += group.len();
        }
    }

    /// The keys of `keys` looked up on this thread, on a file system that
    /// batches reads, with up to `window` data-block reads in flight (at
    /// most the file system's queue holds): a key the block cache cannot
    /// answer defers its read (see [`BatchScope`]) and the next key starts;
    /// when a read completes, the keys that wait for it go on, and answer
    /// or defer their next read. `answer(i, result)` gets each key's answer
    /// (memtables' included) as it comes, counted as a Get; it ends the
    /// call with [`ControlFlow::Break`]. The error returned is the engine's
    /// own, or [`Error::Closed`] once the database closes (a key's error
    /// goes to `answer`).
    fn multi_get_queued<K: AsRef<[u8]>>(
        &self,
        sv: &SuperVersion,
        keys: impl Iterator<Item = K>,
        seq: SeqNo,
        window: usize,
        answer: &mut dyn FnMut(usize, Result<Option<Vec<u8>>>) -> ControlFlow<()>,
    ) -> Result<()> {
        let mut p = Pipeline {
            db: self,
            sv,
            seq,
            scope: BatchScope::begin()?,
            queue: self.opts.fs.read_queue(),
            waiting: HashMap::new(),
            waiters: HashMap::new(),
            reads: HashMap::new(),
            unread: Vec::new(),
            next_tag: 0,
        };
        let window = window.clamp(1, p.queue.capacity());
        let mut keys = keys.enumerate();
        let mut exhausted = false;
        // Reads completed and not yet gone on with: not in flight any more,
        // so new keys take their room before they are gone through.
        let mut completed = VecDeque::new();
        loop {
            // New keys while there is room for their reads.
            while !exhausted && p.in_flight() < window {
                // A close (through a snapshot, which outlives the handle)
                // ends a long stream of keys.
                if self.closing.load(Ordering::Acquire) {
                    return Err(Error::Closed);
                }
                let Some((i, key)) = keys.next() else {
                    exhausted = true;
                    break;
                };
                if let Some(v) = self.get_mem(sv, key.as_ref(), seq) {
                    self.stats.gets_memtable_hits.incr();
                    if p.deliver(i, Ok(v), answer).is_break() {
                        return Ok(());
                    }
                    continue;
                }
                let w = Waiting {
                    key,
                    held: Vec::new(),
                    resume: None,
                    lookup: p.db.tracer.new_lookup(),
                };
                if p.look_up(i, w, answer)?.is_break() {
                    return Ok(());
                }
            }
            // One completed read: the keys that waited for it go on.
            if let Some((tag, got)) = completed.pop_front() {
                if p.finished(tag, got, answer)?.is_break() {
                    return Ok(());
                }
                continue;
            }
            if p.in_flight() == 0 {
                break;
            }
            completed.extend(p.unread.drain(..).map(|tag| (tag, None)));
            if completed.is_empty() {
                let reads = p.queue.complete().into_iter();
                completed.extend(reads.map(|c| (c.tag, Some(c.result))));
            }
        }
        if p.waiting.is_empty() {
            Ok(())
        } else {
            Err(Error::Internal(format!(
                "multi_get: {} keys wait for no read",
                p.waiting.len()
            )))
        }
    }
}

/// Where a lookup that deferred a read goes on (see
/// [`DbInner::look_in_tables`]).
#[derive(Clone, Copy, Debug)]
struct Resume {
    level: usize,
    /// The file number of the table that deferred the read.
    table: u64,
}

/// One [`DbInner::multi_get_queued`] under way.
struct Pipeline<'a, K> {
    db: &'a DbInner,
    sv: &'a SuperVersion,
    seq: SeqNo,
    scope: BatchScope,
    queue: Box<dyn ReadQueue>,
    /// Keys waiting for a read (by index), with the blocks they hold and
    /// where their lookup goes on.
    waiting: HashMap<usize, Waiting<K>>,
    /// The keys each block being read is waited for by.
    waiters: HashMap<BlockCacheKey, Vec<usize>>,
    /// The reads in flight, by tag.
    reads: HashMap<u64, Planned>,
    /// Reads that cannot be submitted (too large for memory), answered by
    /// the next round without a read.
    unread: Vec<u64>,
    next_tag: u64,
}

/// A key of a [`Pipeline`] waiting for a read.
struct Waiting<K> {
    key: K,
    /// The blocks read for it so far, held until it answers.
    held: Vec<BlockCacheKey>,
    resume: Option<Resume>,
    /// Its lookup's id in a block trace (0 while none is recorded).
    lookup: u64,
}

impl<K: AsRef<[u8]>> Pipeline<'_, K> {
    fn in_flight(&self) -> usize {
        self.queue.pending() + self.unread.len()
    }

    /// Looks key `i` up in the tables (from where it stopped, for a key
    /// that waited): its answer, or it waits for the read it deferred.
    fn look_up(
        &mut self,
        i: usize,
        mut w: Waiting<K>,
        answer: &mut dyn FnMut(usize, Result<Option<Vec<u8>>>) -> ControlFlow<()>,
    ) -> Result<ControlFlow<()>> {
        let got = {
            let _lookup = (w.lookup != 0).then(|| LookupScope::enter(w.lookup));
            self.db
                .look_in_tables(self.sv, w.key.as_ref(), self.seq, &mut w.resume)
        };
        if let Ok(None) = got {
            let block = self
                .scope
                .take_waited()
                .ok_or_else(|| Error::Internal("multi_get: a Get deferred no read".into()))?;
            self.waiters.entry(block).or_default().push(i);
            self.waiting.insert(i, w);
            for x in self.scope.take_planned() {
                let tag = self.next_tag;
                self.next_tag += 1;
                match x.read() {
                    (file, offset, Some(len)) => self.queue.submit(file, offset, len, tag),
                    (_, _, None) => self.unread.push(tag),
                }
                self.reads.insert(tag, x);
            }
            return Ok(ControlFlow::Continue(()));
        }
        for b in w.held {
            self.scope.release(b);
        }
        let got = got.map(|v| v.flatten().map(PinnedValue::into_vec));
        Ok(self.deliver(i, got, answer))
    }

    /// The read `tag` completed with `got`: the keys that waited for it go
    /// on.
    fn finished(
        &mut self,
        tag: u64,
        got: Option<std::io::Result<Vec<u8>>>,
        answer: &mut dyn FnMut(usize, Result<Option<Vec<u8>>>) -> ControlFlow<()>,
    ) -> Result<ControlFlow<()>> {
        let x = self
            .reads
            .remove(&tag)
            .ok_or_else(|| Error::Internal(format!("multi_get: read {tag} completed twice")))?;
        let waiting = self.waiters.remove(&x.block()).unwrap_or_default();
        let opts = &self.db.opts;
        let (block, charge) = self.scope.finish_read(
            x,
            got,
            waiting.len(),
            &self.db.block_cache,
            &self.db.stats,
            opts.verify_checksums,
        );
        if let Some(charge) = charge {
            // The lookup that deferred the read traced it without a charge.
            self.db.tracer.charge(block.0, block.1, charge);
        }
        for i in waiting {
            let mut w = self
                .waiting
                .remove(&i)
                .ok_or_else(|| Error::Internal(format!("multi_get: key {i} waits twice")))?;
            w.held.push(block);
            if self.look_up(i, w, answer)?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Counts key `i`'s answer as a Get and gives it to `answer`.
    fn deliver(
        &self,
        i: usize,
        got: Result<Option<Vec<u8>>>,
        answer: &mut dyn FnMut(usize, Result<Option<Vec<u8>>>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        self.db.count_get(&got);
        // The callback may read the database itself.
        self.scope.outside(|| answer(i, got))
    }
}

/// The reads a [`crate::Db`] and a [`Snapshot`] both offer, so that code can read
/// the latest state or a fixed one alike.
pub trait Readable {
    /// The value of `key`, `None` if it is absent or deleted (in the state this
    /// reader sees). Errors are I/O failures or corruption.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// An iterator over that state within the bounds of `opts`.
    fn iter(&self, opts: &ReadOptions) -> Result<DbIterator>;
}

impl Readable for Snapshot {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Snapshot::get(self, key)
    }
    fn iter(&self, opts: &ReadOptions) -> Result<DbIterator> {
        Snapshot::iter(self, opts)
    }
}

/// Options of a read or an iterator.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ReadOptions<'a> {
    /// Read as of this snapshot (default: the latest state). It must be a
    /// snapshot of the database read ([`Error::InvalidArgument`] otherwise).
    pub snapshot: Option<&'a Snapshot>,
    /// Iterators: first key to return (inclusive).
    pub lower_bound: Option<Vec<u8>>,
    /// Iterators: key to stop before (exclusive).
    pub upper_bound: Option<Vec<u8>>,
}

crate::options::setters!(ReadOptions<'a> {
    snapshot: Option<&'a Snapshot>,
    lower_bound: Option<Vec<u8>>,
    upper_bound: Option<Vec<u8>>,
});

impl ReadOptions<'_> {
    /// The sequence number to read `db` at: the snapshot's, or `latest`.
    pub(crate) fn seq_for(&self, db: &Arc<DbInner>, latest: SeqNo) -> Result<SeqNo> {
        match self.snapshot {
            None => Ok(latest),
            Some(s) if Arc::ptr_eq(&s.db, db) => Ok(s.seq),
            Some(_) => Err(Error::InvalidArgument(
                "ReadOptions::snapshot belongs to another database".into(),
            )),
        }
    }
}

/// A consistent read-only view of the database as of the moment it was taken.
///
/// Reads through a snapshot are repeatable: later writes are invisible to it,
/// and compactions keep the versions it can see for as long as it lives.
/// `Send + Sync`; dropping it releases those versions.
pub struct Snapshot {
    db: Arc<DbInner>,
    seq: SeqNo,
}

impl Snapshot {
    pub(crate) fn new(db: Arc<DbInner>) -> Snapshot {
        let mut snaps = db.snapshots.lock();
        // Read under the lock so a compaction listing snapshots sees this one
        // before it could drop what the snapshot needs.
        let seq = db.visible_seq.load(Ordering::Acquire);
        *snaps.entry(seq).or_insert(0) += 1;
        drop(snaps);
        Snapshot { db, seq }
    }

    /// A second handle on the same state (both must be dropped to release
    /// it).
    pub(crate) fn another(&self) -> Snapshot {
        let mut snaps = self.db.snapshots.lock();
        *snaps.entry(self.seq).or_insert(0) += 1;
        Snapshot {
            db: self.db.clone(),
            seq: self.seq,
        }
    }

    /// The sequence number the snapshot reads at.
    pub fn seq(&self) -> SeqNo {
        self.seq
    }

    /// The value of `key` as of the snapshot, `None` if absent or deleted then.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.db.get(key, self.seq)
    }

    /// Like [`Snapshot::get`], without copying a value that comes from a
    /// cached block (see [`PinnedValue`]).
    pub fn get_pinned(&self, key: &[u8]) -> Result<Option<PinnedValue>> {
        self.db.get_pinned(key, self.seq)
    }

    /// The values of `keys` (in their order) as of the snapshot, like
    /// [`crate::Db::multi_get`].
    pub fn multi_get<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        self.db.multi_get(keys, self.seq)
    }

    /// [`crate::Db::multi_get_each`] as of the snapshot.
    pub fn multi_get_each<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
        reads_in_flight: usize,
        mut answer: impl FnMut(usize, Option<Vec<u8>>) -> ControlFlow<()>,
    ) -> Result<()> {
        self.db
            .multi_get_each(keys, self.seq, reads_in_flight, &mut answer)
    }

    /// An iterator over the snapshot's state within the bounds of `opts`
    /// (`opts.snapshot` is ignored). [`Error::Closed`] once the database is
    /// closed.
    pub fn iter(&self, opts: &ReadOptions) -> Result<DbIterator> {
        if self.db.closing.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(DbIterator::new(&self.db, self.seq, opts))
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").field("seq", &self.seq).finish()
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let mut snaps = self.db.snapshots.lock();
        if let Some(n) = snaps.get_mut(&self.seq) {
            *n -= 1;
            if *n == 0 {
                snaps.remove(&self.seq);
                // Tables this snapshot kept may now go whole.
                self.db.delete_only_check.store(true, Ordering::Release);
            }
        }
    }
}

/// An iterator's place in its database's count of live iterators
/// ([`crate::Db::close`] reports them).
struct Live(Arc<DbInner>);

impl Live {
    fn new(db: &Arc<DbInner>) -> Live {
        db.live_iterators.fetch_add(1, Ordering::AcqRel);
        Live(db.clone())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.live_iterators.fetch_sub(1, Ordering::AcqRel);
    }
}

/// An iterator over the user keys and values of the database (or of a
/// snapshot), in key order, within optional bounds (lower inclusive, upper
/// exclusive), forward and backward.
///
/// It reads a consistent state: the memtables and tables it started with stay
/// alive (tables are not deleted) until it is dropped. Unpositioned until a seek.
/// Errors (I/O, corruption) end the iteration and are reported by
/// [`DbIterator::status`]. Owned by one thread at a time (`Send`).
pub struct DbIterator {
    /// Keeps the tables of the iterator's version from being deleted.
    _sv: Arc<SuperVersion>,
    /// Counts the iterator as live in its database.
    live: Live,
    it: MergingIterator,
    /// The range deletions of every source, fragmented together: a version
    /// is hidden when one newer than it (and visible at `seq`) covers it.
    range_dels: Fragments,
    seq: SeqNo,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    key: Vec<u8>,
    value: Vec<u8>,
    valid: bool,
    /// Where the internal cursor is relative to the current entry: on its
    /// newest visible version (forward) or on the entry before all of its
    /// versions (reverse).
    reverse: bool,
    error: Option<Error>,
}

impl DbIterator {
    pub(crate) fn new(db: &Arc<DbInner>, seq: SeqNo, opts: &ReadOptions) -> DbIterator {
        let sv = db.sv.load_full();
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        let mut error = None;
        let mut dels: Vec<Arc<Fragments>> = Vec::new();
        for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
            children.push(Box::new(mem.iter()));
            dels.push(mem.range_dels());
        }
        for f in &sv.version.levels[0] {
            match db.table_cache.get(f, 0) {
                Ok(t) => {
                    dels.push(t.range_dels().clone());
                    children.push(t.iter());
                }
                Err(e) => error = Some(e),
            }
        }
        for level in 1..NUM_LEVELS {
            let files = sv.version.levels[level].clone();
            if files.is_empty() {
                continue;
            }
            // Only tables that have range deletions are opened here; the
            // others open as the iteration reaches them.
            for f in files.iter().filter(|f| f.range_deletions > 0) {
                match db.table_cache.get(f, level) {
                    Ok(t) => dels.push(t.range_dels().clone()),
                    Err(e) => error = Some(e),
                }
            }
            let db = db.clone();
            children.push(Box::new(ConcatIterator::new(
                files,
                Box::new(move |f: &Arc<FileMeta>| Ok(db.table_cache.get(f, level)?.iter())),
                Box::new(|f: &Arc<FileMeta>| f.largest.encoded()),
            )));
        }
        DbIterator {
            _sv: sv,
            live: Live::new(db),
            it: MergingIterator::new(children),
            range_dels: Fragments::merge(dels.iter().map(|d| d.as_ref())),
            seq,
            lower: opts.lower_bound.clone(),
            upper: opts.upper_bound.clone(),
            key: Vec::new(),
            value: Vec::new(),
            valid: false,
            reverse: false,
            error,
        }
    }

    /// Positions on the last key (before the upper bound).
    pub fn seek_to_last(&mut self) {
        match self.upper.clone() {
            Some(upper) => self
                .it
                .seek_for_prev(InternalKey::seek_key(&upper, MAX_SEQNO).encoded()),
            None => self.it.seek_to_last(),
        }
        self.find_prev_entry();
    }

    /// Positions on the last key `<= key` (and within the bounds).
    pub fn seek_for_prev(&mut self, key: &[u8]) {
        match &self.upper {
            Some(upper) if key >= upper.as_slice() => {
                let target = InternalKey::seek_key(upper, MAX_SEQNO);
                self.it.seek_for_prev(target.encoded());
            }
            // Sorts after every version of `key`.
            _ => self
                .it
                .seek_for_prev(InternalKey::new(key, 0, ValueKind::Delete).encoded()),
        }
        self.find_prev_entry();
    }

    /// Moves to the previous key. Does nothing when not valid.
    pub fn prev(&mut self) {
        if !self.valid {
            return;
        }
        if !self.reverse {
            // Step before every version of the current key.
            let target = InternalKey::seek_key(&self.key, MAX_SEQNO);
            self.it.seek_for_prev(target.encoded());
        }
        self.find_prev_entry();
    }

    /// Moves the internal cursor backward to the newest visible version of the
    /// previous user key that is not deleted, leaving the cursor on the entry
    /// before all of that key's versions.
    fn find_prev_entry(&mut self) {
        self.valid = false;
        self.reverse = true;
        self.check_open();
        if self.error.is_some() {
            return;
        }
        // Versions of one user key come oldest first when walking backward; the
        // last visible one seen before the user key changes is the newest.
        let mut found = false;
        loop {
            if !self.it.valid() {
                self.error = self.it.status().err();
                break;
            }
            let Some(ik) = parse_internal_key(self.it.key()) else {
                self.error = Some(malformed(self.it.key()));
                return;
            };
            if self.lower.as_deref().is_some_and(|l| ik.user_key < l) {
                break;
            }
            if found && ik.user_key < self.key.as_slice() {
                break;
            }
            if ik.seq <= self.seq {
                match ik.value_kind() {
                    Some(ValueKind::Value) if !self.range_deleted(ik.user_key, ik.seq) => {
                        self.key.clear();
                        self.key.extend_from_slice(ik.user_key);
                        self.value.clear();
                        self.value.extend_from_slice(self.it.value());
                        found = true;
                    }
                    _ => found = false,
                }
            }
            self.it.prev();
        }
        self.valid = found && self.error.is_none();
    }

    /// Positions on the first key (at or after the lower bound).
    pub fn seek_to_first(&mut self) {
        match self.lower.clone() {
            Some(lower) => self.seek(&lower),
            None => {
                self.it.seek_to_first();
                self.find_entry(None);
            }
        }
    }

    /// Positions on the first key `>= key` (and within the bounds).
    pub fn seek(&mut self, key: &[u8]) {
        let target = match &self.lower {
            Some(lower) if lower.as_slice() > key => lower.clone(),
            _ => key.to_vec(),
        };
        self.it
            .seek(InternalKey::seek_key(&target, self.seq).encoded());
        self.find_entry(None);
    }

    /// True if positioned on a key.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// Moves to the next key. Does nothing when not valid.
    pub fn next(&mut self) {
        if !self.valid {
            return;
        }
        if self.reverse {
            // Back onto the current key's newest visible version.
            let target = InternalKey::seek_key(&self.key, self.seq);
            self.it.seek(target.encoded());
        }
        let skip = std::mem::take(&mut self.key);
        self.find_entry(Some(skip));
    }

    /// The current key (empty when not valid).
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The current value (empty when not valid).
    pub fn value(&self) -> &[u8] {
        &self.value
    }

    /// The error that ended the iteration, if any.
    pub fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// True if a range deletion visible to the iterator hides `user_key#seq`.
    fn range_deleted(&self, user_key: &[u8], seq: SeqNo) -> bool {
        !self.range_dels.is_empty() && self.range_dels.covers(user_key, seq, self.seq)
    }

    /// Once the database is closed, the iterator ends with `Closed`.
    fn check_open(&mut self) {
        if self.error.is_none() && self.live.0.closing.load(Ordering::Acquire) {
            self.error = Some(Error::Closed);
        }
    }

    /// Advances the internal cursor to the newest visible version of the next
    /// user key that is not `skip` and not deleted.
    fn find_entry(&mut self, mut skip: Option<Vec<u8>>) {
        self.valid = false;
        self.reverse = false;
        self.check_open();
        if self.error.is_some() {
            return;
        }
        loop {
            if !self.it.valid() {
                self.error = self.it.status().err();
                return;
            }
            let Some(ik) = parse_internal_key(self.it.key()) else {
                self.error = Some(malformed(self.it.key()));
                return;
            };
            if self.upper.as_deref().is_some_and(|u| ik.user_key >= u) {
                return;
            }
            let skipped = ik.seq > self.seq || skip.as_deref() == Some(ik.user_key);
            if !skipped {
                match ik.value_kind() {
                    Some(ValueKind::Value) if !self.range_deleted(ik.user_key, ik.seq) => {
                        self.key.clear();
                        self.key.extend_from_slice(ik.user_key);
                        self.value.clear();
                        self.value.extend_from_slice(self.it.value());
                        self.valid = true;
                        return;
                    }
                    _ => skip = Some(ik.user_key.to_vec()),
                }
            }
            self.it.next();
        }
    }
}

/// The error for an entry whose key cannot be decoded (tables check their
/// blocks' checksums, so this is a bug or memory corruption, never a bad disk).
fn malformed(key: &[u8]) -> Error {
    Error::corruption(
        "(iterator)",
        0,
        format!("malformed internal key {key:02x?}"),
    )
}
