//! The write path: group commit into the WAL, then the memtable.
//!
//! Writers queue their batch in [`DbInner::queue`](super::DbInner), a
//! [`GroupCommit`] (see `group_commit.rs` for the queue and leader protocol).
//! The leader of a group makes room in the memtable, assigns sequence numbers
//! and appends one WAL record for the group (synced if any writer of the group
//! asked for it); then every writer of the group inserts its own batch into the
//! memtable (the leader its own, the followers theirs, in parallel); once all
//! have, the leader publishes the new visible sequence number. Readers never see
//! part of a group: nothing of it is visible before the sequence number is
//! published.
//!
//! # Concurrency
//!
//! * The hand-off between writers is [`GroupCommit`]'s (its module documents
//!   the rules, and its model tests check them); the steps it runs for the
//!   database are [`WalSteps`].
//! * Lock order: the queue lock, then `state`, then `wal`. No step below runs
//!   under the queue lock except `cost` and `share`, which take no lock. The
//!   leader takes `state` to stall, switch memtables and reserve sequence
//!   numbers, releases it, then takes `wal` to append (and sync) the record.
//! * No device I/O under `state`: a memtable switch takes the new log's number
//!   under it, releases it to sync the old log, create the new one and sync
//!   the directory (holding `wal`), and takes it again to make the switch
//!   (see [`DbInner::switch_memtable`]).
//! * Only a leader, or [`DbInner::flush`] inside [`GroupCommit::exclusive`],
//!   switches memtables, so the memtable handed to a group is the one its
//!   sequence numbers belong to.
//! * Followers insert into the memtable outside every lock; the memtable takes
//!   concurrent inserts. The leader stores the visible sequence number (Release)
//!   after every insert of the group, which it learns of under the queue lock.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use shale_env::WriteLifetime;

use super::filenames::wal_name;
use super::group_commit::{GroupCommit, GroupSteps};
use super::{DbInner, State, SuperVersion};
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::events::{StallCause, StallCondition};
use crate::format::SeqNo;
use crate::memtable::MemTable;
use crate::options::MIN_DELAYED_WRITE_RATE;
use crate::wal::LogWriter;

/// Upper bound on the bytes of one commit group.
const MAX_GROUP_BYTES: usize = 1 << 20;

/// A delayed group whose turn comes sooner than this goes at once; what it
/// owes stays charged to the next ones (waits shorter than a timer's
/// resolution would only be overslept).
const MIN_DELAY_WAIT: Duration = Duration::from_millis(1);

/// The delayed write rate, RocksDB's `WriteController` in small: while
/// writes are delayed, each write group is charged its bytes at the current
/// rate on a virtual clock, and waits until the clock's time for it comes.
/// Charges shorter than [`MIN_DELAY_WAIT`] add up until one is worth a wait,
/// so small groups pay exactly as large ones do, and bursts earn no credit
/// (the clock never lags behind now). Between delayed groups the rate
/// follows the measure behind the delay (L0 tables, or compaction debt
/// bytes): lowered to 0.8 times itself while it grows, raised 1.25 times
/// (up to [`crate::Options::delayed_write_rate`]) when it shrinks, never
/// below [`MIN_DELAYED_WRITE_RATE`] (or the option, if lower). Kept under the
/// state lock; only the write leader charges it.
#[derive(Default)]
pub(crate) struct WriteDelay {
    /// Bytes per second now; 0 while writes are not delayed.
    rate: u64,
    /// When the bytes charged so far have been paid for.
    paid_until: Option<Instant>,
    /// The cause and measure seen by the last delayed group.
    last: Option<(StallCause, u64)>,
}

impl WriteDelay {
    /// The rate now (0: not delaying), for [`crate::Metrics`].
    pub(crate) fn rate(&self) -> u64 {
        self.rate
    }

    /// Ends a delay: the next one starts at the full rate.
    fn reset(&mut self) {
        *self = WriteDelay::default();
    }

    /// Charges a group of `bytes` delayed by `cause` at `measure`, with the
    /// rate adapted to how the measure moved since the last delayed group;
    /// returns when the group may go.
    fn charge(
        &mut self,
        max_rate: u64,
        cause: StallCause,
        measure: u64,
        bytes: u64,
        now: Instant,
    ) -> Instant {
        let max_rate = max_rate.max(1);
        let floor = MIN_DELAYED_WRITE_RATE.min(max_rate);
        self.rate = match self.last {
            _ if self.rate == 0 => max_rate,
            Some((c, m)) if c == cause && measure > m => (self.rate / 5 * 4).max(floor),
            Some((c, m)) if c == cause && measure < m => {
                self.rate.saturating_add(self.rate / 4).min(max_rate)
            }
            _ => self.rate,
        };
        self.last = Some((cause, measure));
        let from = self.paid_until.filter(|&t| t > now).unwrap_or(now);
        let cost = Duration::from_secs_f64(bytes as f64 / self.rate as f64);
        let until = from + cost;
        self.paid_until = Some(until);
        until
    }
}

/// The write queue of a database.
pub(crate) type WriteQueue = GroupCommit<Request, Share>;

/// A writer's batch, waiting in the queue.
pub(crate) struct Request {
    batch: WriteBatch,
    sync: bool,
}

/// A writer's part of a committed group: where its batch goes.
pub(crate) struct Share {
    /// Sequence number of the batch's first op.
    seq: SeqNo,
    mem: Arc<MemTable>,
}

/// A committed group, from the leader's WAL write to its publish.
pub(crate) struct Committed {
    /// First sequence number of the next batch to hand out.
    next: SeqNo,
    /// Last sequence number of the group.
    last: SeqNo,
    mem: Arc<MemTable>,
    user_bytes: u64,
}

/// The group commit steps of a database: one WAL record per group, memtable
/// inserts, the visible sequence number.
struct WalSteps<'a>(&'a DbInner);

/// Inserts the ops of `batch` into `mem` with sequence numbers from `seq` on.
fn insert(mem: &MemTable, batch: &WriteBatch, seq: SeqNo) {
    for (i, op) in batch.ops().enumerate() {
        // Validated before queueing, so every op decodes.
        if let Ok(op) = op {
            mem.add(seq + i as u64, op.kind, op.key, op.value);
        }
    }
}

impl GroupSteps<Request> for WalSteps<'_> {
    type Committed = Committed;
    type Share = Share;

    fn cost(&self, request: &Request) -> usize {
        request.batch.encoded_len()
    }

    fn max_group_cost(&self) -> usize {
        MAX_GROUP_BYTES
    }

    /// Room, sequence numbers, one WAL record (synced if any writer asked).
    fn commit(&self, group: &[Request]) -> Result<Committed> {
        let db = self.0;
        let sync = group.iter().any(|w| w.sync);
        let (first, rest) = group
            .split_first()
            .ok_or(Error::Internal("empty commit group".into()))?;
        let mut record = first.batch.clone();
        for w in rest {
            record.append(&w.batch);
        }
        let count = record.len() as u64;
        let (seq, mem) = {
            let mut st = db.state.lock();
            let stalled = db.stall_if_needed(&mut st, record.encoded_len() as u64)?;
            if !db.make_room(&mut st, false)? && !stalled {
                // This group went through unhindered: any stall is over.
                let st = &mut *st;
                db.events.set_stall(&mut st.stall, None);
            }
            let seq = st.versions.last_sequence + 1;
            st.versions.last_sequence += count;
            (seq, db.sv.load().mem.clone())
        };
        let user_bytes = record.encoded_len() as u64;
        let wal_result = {
            let mut wal = db.wal.lock();
            let before = wal.len();
            let r = wal.add_record(record.encode(seq)).and_then(|()| {
                if sync {
                    wal.sync()
                } else {
                    wal.flush()
                }
            });
            db.stats.bytes_written_wal.add(wal.len() - before);
            r
        };
        if let Err(e) = wal_result {
            let mut st = db.state.lock();
            db.poison(&mut st, &e);
            return Err(e);
        }
        if sync {
            db.stats.wal_syncs.incr();
        }
        Ok(Committed {
            next: seq,
            last: seq + count - 1,
            mem,
            user_bytes,
        })
    }

    fn share(&self, committed: &mut Committed, request: &Request) -> Share {
        let share = Share {
            seq: committed.next,
            mem: committed.mem.clone(),
        };
        committed.next += request.batch.len() as u64;
        share
    }

    fn apply(&self, request: &Request, share: Share) {
        insert(&share.mem, &request.batch, share.seq);
    }

    fn publish(&self, committed: Committed) {
        let db = self.0;
        db.stats.bytes_written_user.add(committed.user_bytes);
        db.visible_seq.store(committed.last, Ordering::Release);
    }
}

impl DbInner {
    /// Syncs the live WAL (see [`crate::Db::sync_wal`]).
    pub(crate) fn sync_wal(&self) -> Result<()> {
        if self.closing.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        self.state.lock().check_poison()?;
        let result = self.wal.lock().sync();
        match &result {
            Ok(()) => self.stats.wal_syncs.incr(),
            Err(e) => {
                let mut st = self.state.lock();
                self.poison(&mut st, e);
            }
        }
        result
    }

    pub(crate) fn write(&self, batch: WriteBatch, sync: bool) -> Result<()> {
        batch.validate()?;
        if batch.is_empty() {
            // Nothing to write, but a synced write still makes the writes
            // before it durable (as LevelDB's does).
            return if sync { self.sync_wal() } else { Ok(()) };
        }
        self.queue.write(&WalSteps(self), Request { batch, sync })
    }

    /// Write stalls: waits while L0 holds `l0_stop_writes_trigger` tables or the
    /// compaction debt reaches its hard limit (*stopped*); while L0 is at its
    /// slowdown trigger or the debt at its soft limit (*delayed*), holds the
    /// group of `bytes` to the delayed write rate ([`WriteDelay`]), so that
    /// compactions catch up. Counted in the stall metrics and raised to
    /// listeners as it begins. True if the group was held back.
    fn stall_if_needed(&self, st: &mut MutexGuard<'_, State>, bytes: u64) -> Result<bool> {
        let start = Instant::now();
        let mut stalled = false;
        let mut stopped = false;
        // When the group may go, once charged to the delay.
        let mut delayed_until: Option<Instant> = None;
        let opts = &self.opts;
        loop {
            st.check_poison()?;
            let l0 = self.sv.load().version.levels[0].len();
            let debt = st.pending_compaction_bytes;
            let stop = if l0 >= opts.l0_stop_writes_trigger {
                Some(StallCause::L0Tables)
            } else if debt >= opts.hard_pending_compaction_bytes {
                Some(StallCause::PendingCompactionBytes)
            } else {
                None
            };
            if let Some(cause) = stop {
                stalled = true;
                stopped = true;
                let state = &mut **st;
                self.events
                    .set_stall(&mut state.stall, Some((StallCondition::Stopped, cause)));
                // Woken by every installed version; the timeout only bounds a
                // lost wake-up.
                self.cv.wait_for(st, Duration::from_millis(100));
                continue;
            }
            let delay = if l0 >= opts.l0_slowdown_writes_trigger {
                Some((StallCause::L0Tables, l0 as u64))
            } else if debt >= opts.soft_pending_compaction_bytes {
                Some((StallCause::PendingCompactionBytes, debt))
            } else {
                None
            };
            let Some((cause, measure)) = delay else {
                // Not (or no longer) delayed: the next delay starts afresh.
                st.delay.reset();
                break;
            };
            stalled = true;
            let state = &mut **st;
            self.events
                .set_stall(&mut state.stall, Some((StallCondition::Delayed, cause)));
            let until = match delayed_until {
                Some(until) => until,
                None => {
                    let until = state.delay.charge(
                        opts.delayed_write_rate,
                        cause,
                        measure,
                        bytes,
                        Instant::now(),
                    );
                    delayed_until = Some(until);
                    until
                }
            };
            if until <= Instant::now() + MIN_DELAY_WAIT {
                break;
            }
            // Woken early by installed versions and memtable switches, to
            // look at the conditions again (a stop, or the delay over).
            self.cv.wait_until(st, until);
        }
        if stalled {
            if stopped {
                self.stats.stalls_stopped.incr();
            }
            if delayed_until.is_some() {
                self.stats.stalls_delayed.incr();
            }
            self.record_stall(start);
        }
        Ok(stalled)
    }

    fn record_stall(&self, start: Instant) {
        self.stats.stalls.incr();
        self.stats
            .stall_micros
            .add(start.elapsed().as_micros().min(u128::from(u64::MAX)) as u64);
    }

    /// Ensures the mutable memtable has room (or, with `force`, switches a
    /// non-empty one). Waits while too many immutable memtables are queued;
    /// true if it waited. Only the write leader (or `flush` holding the queue,
    /// with `force`) calls this; a leader's wait is a write stall, raised to
    /// listeners.
    fn make_room(&self, st: &mut MutexGuard<'_, State>, force: bool) -> Result<bool> {
        let mut stalled_since = None;
        let result = loop {
            if let Err(e) = st.check_poison() {
                break Err(e);
            }
            let sv = self.sv.load();
            let full = sv.mem.approximate_bytes() >= self.opts.write_buffer_size;
            if !(full || (force && !sv.mem.is_empty())) {
                break Ok(());
            }
            if sv.imms.len() >= self.opts.max_immutable_memtables.max(1) {
                drop(sv);
                if stalled_since.is_none() && !force {
                    self.stats.stalls_stopped.incr();
                }
                stalled_since.get_or_insert_with(Instant::now);
                if !force {
                    let state = &mut **st;
                    self.events.set_stall(
                        &mut state.stall,
                        Some((StallCondition::Stopped, StallCause::Memtables)),
                    );
                }
                self.cv.wait(st);
                continue;
            }
            drop(sv);
            break self.switch_memtable(st);
        };
        if let Some(start) = stalled_since {
            self.record_stall(start);
        }
        result.map(|()| stalled_since.is_some())
    }

    /// Makes the memtable immutable and starts a new WAL for its successor.
    ///
    /// The caller holds the write queue (a leader, or `flush` in
    /// [`GroupCommit::exclusive`]), so no writer appends to the log and no
    /// one else switches until this returns. The new log's number is taken
    /// under `state`; the I/O (syncing the old log, creating the new one,
    /// syncing the directory) runs with `state` released, so that the
    /// background threads, flushes, snapshot listings and stats do not wait
    /// for it; the switch itself (the super version, `imm_logs`, `mem_log`)
    /// is made under `state` again, in one step.
    ///
    /// Until that step the old log is still `mem_log` and its memtable the
    /// mutable one, so nothing deletes the old log or flushes its memtable
    /// early; the new log's number is above every number handed out before,
    /// so no deleter takes it for an obsolete file. Every write acknowledged
    /// before the switch is in the old log, which recovery replays (the
    /// manifest's log number is at most `mem_log`), and the new log is empty
    /// (or missing) until the switch is made: a crash at any step loses no
    /// synced write, and none at all once the old log's sync returned.
    fn switch_memtable(&self, st: &mut MutexGuard<'_, State>) -> Result<()> {
        let number = st.versions.new_file_number();
        let path = self.path.join(wal_name(number));
        if let Err(e) = MutexGuard::unlocked(st, || self.start_wal(&path)) {
            self.poison(st, &e);
            return Err(e);
        }
        let sv = self.sv.load_full();
        let mut imms = Vec::with_capacity(sv.imms.len() + 1);
        imms.push(sv.mem.clone());
        imms.extend(sv.imms.iter().cloned());
        self.sv.store(Arc::new(SuperVersion {
            mem: Arc::new(MemTable::with_filter(self.opts.memtable_filter_bytes())),
            imms,
            version: sv.version.clone(),
        }));
        let old_log = std::mem::replace(&mut st.mem_log, number);
        st.imm_logs.insert(0, old_log);
        self.cv.notify_all();
        Ok(())
    }

    /// The I/O of a memtable switch (without `state`): syncs the live log,
    /// creates log `path` and makes its name durable, then makes it the log
    /// that writes go to. On failure the old log stays the live one.
    fn start_wal(&self, path: &Path) -> Result<()> {
        let mut wal = self.wal.lock();
        // The old log is complete: sync it so that only the newest log can
        // end in a torn record.
        wal.sync()?;
        let file = self
            .fs
            .create_append(path, WriteLifetime::Short)
            .map_err(|e| Error::io("create wal", path, e))?;
        self.fs
            .sync_dir(&self.path)
            .map_err(|e| Error::io("sync directory", &self.path, e))?;
        *wal = LogWriter::new(file, path.to_path_buf());
        Ok(())
    }

    /// Switches a non-empty memtable and waits until every immutable memtable is
    /// flushed.
    pub(crate) fn flush(&self) -> Result<()> {
        // Hold the write queue so that no leader switches memtables meanwhile.
        self.queue.exclusive(|| {
            let mut st = self.state.lock();
            self.make_room(&mut st, true).map(|_waited| ())
        })?;
        let mut st = self.state.lock();
        loop {
            st.check_poison()?;
            if self.sv.load().imms.is_empty() {
                return Ok(());
            }
            self.cv.wait(&mut st);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::env::MemFs;
    use crate::{Db, Options, WriteOptions};

    /// The rate falls while the measure behind the delay grows, rises back
    /// (capped) as it shrinks, never falls below the floor, and each group
    /// is charged its bytes at the rate on a clock that never lags now.
    #[test]
    fn the_delayed_write_rate_follows_the_debt() {
        let t0 = Instant::now();
        let mut d = WriteDelay::default();
        let max = 1 << 20;
        let l0 = StallCause::L0Tables;
        // The first group pays at the full rate: 1 MiB at 1 MiB/s.
        assert_eq!(
            d.charge(max, l0, 20, 1 << 20, t0),
            t0 + Duration::from_secs(1)
        );
        assert_eq!(d.rate(), max);
        // Unchanged measure: same rate; charged after the first.
        let until = d.charge(max, l0, 20, 1 << 19, t0);
        assert_eq!(until, t0 + Duration::from_millis(1500));
        assert_eq!(d.rate(), max);
        // Growing: 0.8 times per group.
        d.charge(max, l0, 21, 0, t0);
        assert_eq!(d.rate(), max / 5 * 4);
        d.charge(max, l0, 22, 0, t0);
        assert_eq!(d.rate(), max / 5 * 4 / 5 * 4);
        // Shrinking: 1.25 times, capped at the option.
        for m in (0..22).rev() {
            d.charge(max, l0, m, 0, t0);
        }
        assert_eq!(d.rate(), max);
        // Never below the floor, however long the growth.
        for m in 100..200 {
            d.charge(max, l0, m, 0, t0);
        }
        assert_eq!(d.rate(), MIN_DELAYED_WRITE_RATE);
        // A clock behind now restarts from now: no credit for idle time.
        let later = t0 + Duration::from_secs(3600);
        let until = d.charge(max, l0, 200, MIN_DELAYED_WRITE_RATE, later);
        assert_eq!(until, later + Duration::from_secs(1));
        d.reset();
        assert_eq!(d.rate(), 0);
        d.charge(max, StallCause::PendingCompactionBytes, 5, 0, t0);
        assert_eq!(d.rate(), max, "a new delay starts at the full rate");
    }

    /// A memtable switch makes a new super version holding the same
    /// version (so the picker's last idle answer, keyed by the version,
    /// holds); a flush brings a new version.
    #[test]
    fn a_memtable_switch_keeps_the_version() {
        let opts = Options {
            fs: Arc::new(MemFs::new()),
            ..Options::default()
        };
        let db = Db::open("/db", opts).expect("open");
        db.put(b"a", b"1").expect("put");
        db.flush().expect("flush");
        db.put(b"b", b"2").expect("put");
        let inner = &db.inner;
        let before = inner.sv.load_full();
        // No background flush may install a version between the two loads.
        inner.state.lock().flush_running = true;
        inner
            .queue
            .exclusive(|| {
                let mut st = inner.state.lock();
                inner.make_room(&mut st, true).map(|_| ())
            })
            .expect("switch");
        let switched = inner.sv.load_full();
        assert!(!Arc::ptr_eq(&before, &switched), "a new super version");
        assert!(Arc::ptr_eq(&before.version, &switched.version));
        {
            let mut st = inner.state.lock();
            st.flush_running = false;
            inner.cv.notify_all();
        }
        db.flush().expect("flush");
        let flushed = inner.sv.load_full();
        assert!(!Arc::ptr_eq(&switched.version, &flushed.version));
        assert_eq!(flushed.version.levels[0].len(), 2, "both flushes' tables");
        db.close().expect("close");
    }

    /// Writers on several threads (some syncing, memtables switching under
    /// them, flushes in between) while a reader checks that every batch
    /// becomes visible whole: the group commit with the real steps.
    #[test]
    fn concurrent_writers_commit_whole_batches() {
        const THREADS: u64 = 4;
        const BATCHES: u64 = 1000;
        let opts = Options {
            fs: Arc::new(MemFs::new()),
            write_buffer_size: 16 << 10,
            ..Options::default()
        };
        let db = Db::open("/db", opts).expect("open");
        let key = |name: &str, t: u64| format!("{name}{t}").into_bytes();
        let writers_done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let writers: Vec<_> = (0..THREADS)
                .map(|t| {
                    let db = &db;
                    s.spawn(move || {
                        for i in 1..=BATCHES {
                            let mut b = WriteBatch::new();
                            b.put(&key("a", t), &i.to_be_bytes());
                            b.put(&key("b", t), &i.to_be_bytes());
                            let opts = WriteOptions { sync: i % 20 == 0 };
                            db.write(b, &opts).expect("write");
                        }
                    })
                })
                .collect();
            s.spawn(|| {
                for _ in 0..3 {
                    db.flush().expect("flush");
                }
            });
            s.spawn(|| {
                let mut seen = [0u64; THREADS as usize];
                while !writers_done.load(Ordering::Acquire) {
                    let snap = db.snapshot();
                    for t in 0..THREADS {
                        let a = snap.get(&key("a", t)).expect("get a");
                        let b = snap.get(&key("b", t)).expect("get b");
                        assert_eq!(a, b, "half a batch of writer {t} visible");
                        let v = a.map_or(0, |v| u64::from_be_bytes(v.try_into().expect("u64")));
                        assert!(v >= seen[t as usize], "writer {t} went back");
                        seen[t as usize] = v;
                    }
                }
            });
            for w in writers {
                w.join().expect("writer");
            }
            writers_done.store(true, Ordering::Release);
        });
        for t in 0..THREADS {
            let want = Some(BATCHES.to_be_bytes().to_vec());
            assert_eq!(db.get(&key("a", t)).expect("get"), want);
            assert_eq!(db.get(&key("b", t)).expect("get"), want);
        }
        let ops = THREADS * BATCHES * 2;
        assert_eq!(db.inner.visible_seq.load(Ordering::Acquire), ops);
        assert_eq!(db.inner.state.lock().versions.last_sequence, ops);
        db.close().expect("close");
    }
}
