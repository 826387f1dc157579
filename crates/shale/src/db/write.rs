//! The write path: group commit into the WAL, then the memtable.
//!
//! Writers enqueue their batch and wait. The writer at the front of the queue,
//! when no other leader is active, becomes the leader: it takes a group of queued
//! batches (up to [`MAX_GROUP_BYTES`]), makes room in the memtable, assigns
//! sequence numbers, appends one WAL record for the group (synced if any writer
//! of the group asked for it), then has every writer of the group insert its own
//! batch into the memtable (the leader its own, the followers theirs, in
//! parallel), waits for all of them, publishes the new visible sequence number,
//! and hands the result to every writer of the group. Readers never see part of
//! a group: nothing of it is visible before the sequence number is published.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use shale_env::WriteLifetime;

use super::filenames::wal_name;
use super::{DbInner, State, SuperVersion};
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::format::SeqNo;
use crate::memtable::MemTable;
use crate::wal::LogWriter;

/// Upper bound on the bytes of one commit group.
const MAX_GROUP_BYTES: usize = 1 << 20;

/// A writer waiting in the queue.
struct Waiter {
    ticket: u64,
    batch: Arc<WriteBatch>,
    sync: bool,
}

/// Writers waiting for a leader, memtable inserts handed out by the leader, and
/// results handed back.
#[derive(Default)]
pub(crate) struct WriteQueue {
    next_ticket: u64,
    waiting: VecDeque<Waiter>,
    /// Follower ticket -> (first sequence number of its batch, memtable): the
    /// follower inserts its own batch, in parallel with the rest of its group.
    inserts: HashMap<u64, (SeqNo, Arc<MemTable>)>,
    /// Followers of the current group that finished inserting.
    inserted: usize,
    done: HashMap<u64, Result<()>>,
    leader_active: bool,
}

/// Inserts the ops of `batch` into `mem` with sequence numbers from `seq` on.
fn insert(mem: &MemTable, batch: &WriteBatch, seq: SeqNo) {
    for (i, op) in batch.ops().enumerate() {
        // Validated before queueing, so every op decodes.
        if let Ok(op) = op {
            mem.add(seq + i as u64, op.kind, op.key, op.value);
        }
    }
}

impl DbInner {
    pub(crate) fn write(&self, batch: WriteBatch, sync: bool) -> Result<()> {
        batch.validate()?;
        if batch.is_empty() {
            return Ok(());
        }
        let batch = Arc::new(batch);
        let mut q = self.queue.lock();
        let ticket = q.next_ticket;
        q.next_ticket += 1;
        q.waiting.push_back(Waiter {
            ticket,
            batch: batch.clone(),
            sync,
        });
        loop {
            if let Some(result) = q.done.remove(&ticket) {
                return result;
            }
            if let Some((seq, mem)) = q.inserts.remove(&ticket) {
                // A follower: the group is in the WAL; insert our own batch.
                MutexGuard::unlocked(&mut q, || insert(&mem, &batch, seq));
                q.inserted += 1;
                self.queue_cv.notify_all();
                continue;
            }
            if !q.leader_active && q.waiting.front().map(|w| w.ticket) == Some(ticket) {
                break;
            }
            self.queue_cv.wait(&mut q);
        }
        q.leader_active = true;
        let mut group = Vec::new();
        let mut bytes = 0;
        while let Some(front) = q.waiting.front() {
            let len = front.batch.encoded_len();
            if !group.is_empty() && bytes + len > MAX_GROUP_BYTES {
                break;
            }
            bytes += len;
            if let Some(w) = q.waiting.pop_front() {
                group.push(w);
            }
        }
        drop(q);

        let result = self.commit_group(&group);

        let mut q = self.queue.lock();
        for w in &group[1..] {
            q.done.insert(w.ticket, result.clone());
        }
        q.leader_active = false;
        self.queue_cv.notify_all();
        result
    }

    /// The leader's work for a group: room, sequence numbers, one WAL record,
    /// then the memtable inserts (each follower inserts its own batch while the
    /// leader inserts its own), and only then the new visible sequence number.
    fn commit_group(&self, group: &[Waiter]) -> Result<()> {
        let sync = group.iter().any(|w| w.sync);
        let (first, rest) = group
            .split_first()
            .ok_or(Error::InvalidArgument("empty group".into()))?;
        let mut record = (*first.batch).clone();
        for w in rest {
            record.append(&w.batch);
        }
        let count = record.len() as u64;
        let (seq, mem) = {
            let mut st = self.state.lock();
            self.stall_if_needed(&mut st)?;
            self.make_room(&mut st, false)?;
            let seq = st.last_sequence + 1;
            st.last_sequence += count;
            (seq, self.sv.load().mem.clone())
        };
        let user_bytes = record.encoded_len() as u64;
        let wal_result = {
            let mut wal = self.wal.lock();
            let before = wal.len();
            let r = wal.add_record(record.encode(seq)).and_then(|()| {
                if sync {
                    wal.sync()
                } else {
                    wal.flush()
                }
            });
            self.stats.bytes_written_wal.add(wal.len() - before);
            r
        };
        if let Err(e) = wal_result {
            let mut st = self.state.lock();
            self.poison(&mut st, &e);
            return Err(e);
        }
        if sync {
            self.stats.wal_syncs.incr();
        }
        if !rest.is_empty() {
            let mut q = self.queue.lock();
            q.inserted = 0;
            let mut next = seq + first.batch.len() as u64;
            for w in rest {
                q.inserts.insert(w.ticket, (next, mem.clone()));
                next += w.batch.len() as u64;
            }
            self.queue_cv.notify_all();
        }
        insert(&mem, &first.batch, seq);
        if !rest.is_empty() {
            let mut q = self.queue.lock();
            while q.inserted < rest.len() {
                self.queue_cv.wait(&mut q);
            }
        }
        self.stats.bytes_written_user.add(user_bytes);
        self.visible_seq.store(seq + count - 1, Ordering::Release);
        Ok(())
    }

    /// Write stalls: waits while L0 holds `l0_stop_writes_trigger` tables or the
    /// compaction debt reaches its hard limit, then delays the group by a
    /// millisecond while L0 is at its slowdown trigger or the debt at its soft
    /// limit, so that compactions catch up. Counted in the stall metrics.
    fn stall_if_needed(&self, st: &mut MutexGuard<'_, State>) -> Result<()> {
        let start = Instant::now();
        let mut stalled = false;
        let opts = &self.opts;
        loop {
            st.check_poison()?;
            let l0 = self.sv.load().version.levels[0].len();
            if l0 < opts.l0_stop_writes_trigger
                && st.pending_compaction_bytes < opts.hard_pending_compaction_bytes
            {
                if l0 >= opts.l0_slowdown_writes_trigger
                    || st.pending_compaction_bytes >= opts.soft_pending_compaction_bytes
                {
                    stalled = true;
                    MutexGuard::unlocked(st, || std::thread::sleep(Duration::from_millis(1)));
                }
                break;
            }
            stalled = true;
            // Woken by every installed version; the timeout only bounds a lost
            // wake-up.
            self.cv.wait_for(st, Duration::from_millis(100));
        }
        if stalled {
            self.record_stall(start);
        }
        Ok(())
    }

    fn record_stall(&self, start: Instant) {
        self.stats.stalls.incr();
        self.stats
            .stall_micros
            .add(start.elapsed().as_micros().min(u128::from(u64::MAX)) as u64);
    }

    /// Ensures the mutable memtable has room (or, with `force`, switches a
    /// non-empty one). Waits while too many immutable memtables are queued.
    /// Only the write leader (or `flush` holding the queue) calls this.
    fn make_room(&self, st: &mut MutexGuard<'_, State>, force: bool) -> Result<()> {
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
                stalled_since.get_or_insert_with(Instant::now);
                self.cv.wait(st);
                continue;
            }
            drop(sv);
            break self.switch_memtable(st);
        };
        if let Some(start) = stalled_since {
            self.record_stall(start);
        }
        result
    }

    /// Makes the memtable immutable and starts a new WAL for its successor.
    fn switch_memtable(&self, st: &mut State) -> Result<()> {
        let number = st.new_file_number();
        let path = self.path.join(wal_name(number));
        let result = (|| {
            let mut wal = self.wal.lock();
            // The old log is complete: sync it so that only the newest log can
            // end in a torn record.
            wal.sync()?;
            let file = self
                .fs
                .create_append(&path, WriteLifetime::Short)
                .map_err(|e| Error::io("create wal", &path, e))?;
            self.fs
                .sync_dir(&self.path)
                .map_err(|e| Error::io("sync directory", &self.path, e))?;
            *wal = LogWriter::new(file, path.clone());
            Ok(())
        })();
        if let Err(e) = result {
            self.poison(st, &e);
            return Err(e);
        }
        let sv = self.sv.load_full();
        let mut imms = Vec::with_capacity(sv.imms.len() + 1);
        imms.push(sv.mem.clone());
        imms.extend(sv.imms.iter().cloned());
        self.sv.store(Arc::new(SuperVersion {
            mem: Arc::new(MemTable::new()),
            imms,
            version: sv.version.clone(),
        }));
        st.imm_logs.insert(0, st.mem_log);
        st.mem_log = number;
        self.cv.notify_all();
        Ok(())
    }

    /// Switches a non-empty memtable and waits until every immutable memtable is
    /// flushed.
    pub(crate) fn flush(&self) -> Result<()> {
        // Hold the write queue so that no leader switches memtables meanwhile.
        {
            let mut q = self.queue.lock();
            while q.leader_active {
                self.queue_cv.wait(&mut q);
            }
            q.leader_active = true;
            drop(q);
            let result = {
                let mut st = self.state.lock();
                self.make_room(&mut st, true)
            };
            let mut q = self.queue.lock();
            q.leader_active = false;
            self.queue_cv.notify_all();
            drop(q);
            result?;
        }
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
