//! Garbage collection: moving the live extents out of the zones with the
//! most garbage, so that the zones can be reset and written again.
//!
//! A round (`Inner::collect`) runs under `gc_lock`, so rounds never overlap.
//! It repeats until enough data zones are empty (the low-water mark of
//! [`GcOptions`](super::GcOptions), or every zone with garbage for
//! [`ZoneFs::collect_garbage`](super::ZoneFs::collect_garbage)):
//!
//! 1. Under the state lock: pick the victim, the data zone that is not open
//!    and whose extents all belong to files (no writer's unrecorded extents,
//!    no removed file's readers) with the most garbage (written bytes minus
//!    the block-rounded bytes of its live extents); hold it so it is not
//!    reset under the copy.
//! 2. For each live extent, in chunks: read it from the victim without a
//!    lock, then under the lock of the file's placement slot (not the state
//!    lock) write it into the slot's open zone, as the file's own writes go
//!    there (the collector may take the reserved empty zones, host writes
//!    may not). A file removed meanwhile drops the copy.
//! 3. Device sync without a lock (the copies are durable), then under the
//!    state lock and each file's map write lock: swap the extents and
//!    append a relocate record per extent; release the hold and sync the
//!    metadata, which resets the victim (a crash before that sync keeps the
//!    old extents, which are still intact).
//!
//! Writers that find no free zone run a round themselves (waiting for the
//! thread's round first, through `gc_lock`) and fail with `DeviceFull` only
//! when it leaves no more than the reserve free. Zones another thread's log
//! sync is resetting (under the log lock, not the state lock) count as free
//! once it is done: allocation, a round and a writer's count all wait for
//! it by taking the log lock (`State::resets_waiting`).

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use super::{extents_of, format, lock, read_map, slot_of, Enc, Extent, FsResult, Inner, State};

/// Bytes the collector copies per device read and per state-lock hold.
const GC_CHUNK: u64 = 1 << 20;

/// What a collection round did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Zones emptied and reset.
    pub zones_reclaimed: u64,
    /// Extents moved.
    pub extents_moved: u64,
    /// Bytes written by the copies (block-rounded extents).
    pub bytes_moved: u64,
}

/// Wakes the collector thread: on a timer, at an allocation below the
/// low-water mark, or to stop it when the file system is dropped.
#[derive(Default)]
pub(super) struct Signal {
    /// (woken, stopped)
    flags: Mutex<(bool, bool)>,
    cv: Condvar,
}

impl Signal {
    pub(super) fn wake(&self) {
        let mut f = self.flags.lock().unwrap_or_else(PoisonError::into_inner);
        f.0 = true;
        self.cv.notify_one();
    }

    pub(super) fn stop(&self) {
        let mut f = self.flags.lock().unwrap_or_else(PoisonError::into_inner);
        f.1 = true;
        self.cv.notify_one();
    }

    /// Waits for a wake or `interval`; false once stopped.
    fn wait(&self, interval: Duration) -> bool {
        let mut f = self.flags.lock().unwrap_or_else(PoisonError::into_inner);
        if !f.0 && !f.1 {
            f = self
                .cv
                .wait_timeout(f, interval)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        f.0 = false;
        !f.1
    }
}

/// The collector thread of a mount, stopped and joined when the last
/// `ZoneFs` handle is dropped.
pub(super) struct Collector {
    signal: Arc<Signal>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Collector {
    /// No thread (`GcOptions::background` false).
    pub(super) fn none(inner: &Arc<Inner>) -> Collector {
        Collector {
            signal: inner.gc_signal.clone(),
            thread: None,
        }
    }

    /// Starts the thread. It holds the file system weakly, and strongly only
    /// during a round.
    pub(super) fn spawn(inner: &Arc<Inner>) -> std::io::Result<Collector> {
        let weak = Arc::downgrade(inner);
        let signal = inner.gc_signal.clone();
        let interval = inner.gc.interval;
        let thread = std::thread::Builder::new()
            .name("shale-zonefs-gc".into())
            .spawn({
                let signal = signal.clone();
                move || {
                    while signal.wait(interval) {
                        let Some(inner) = weak.upgrade() else {
                            break;
                        };
                        let target = inner.low_water(&lock(&inner.state));
                        if inner.collect(target).is_err() {
                            // Nothing acknowledged depends on a round: a
                            // writer that needs space runs its own and
                            // reports what it meets.
                            lock(&inner.state).counters.gc_errors += 1;
                        }
                    }
                }
            })?;
        Ok(Collector {
            signal,
            thread: Some(thread),
        })
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.signal.stop();
        if let Some(t) = self.thread.take() {
            // A panic in the thread has been reported on stderr already.
            let _ = t.join();
        }
    }
}

fn round_up(n: u64, block: u64) -> u64 {
    n.div_ceil(block) * block
}

/// A live extent to move: (file id, extent, the file's lifetime code).
type Move = (u64, Extent, u8);

/// The victim of the next step, with its live extents, or `None` when no
/// zone has garbage to win.
fn pick_victim(st: &State, block: u64) -> Option<(u32, Vec<Move>)> {
    let n = st.zones.len();
    let mut live = vec![0u64; n];
    let mut file_refs = vec![0u32; n];
    for f in st.files.values() {
        for (_, x) in read_map(&f.map).iter() {
            live[x.zone as usize] += round_up(x.len, block);
            file_refs[x.zone as usize] += 1;
        }
    }
    let victim = (st.meta_zones as usize..n)
        .filter(|&i| {
            let z = &st.zones[i];
            z.used
                && !z.unusable
                && z.refs == file_refs[i]
                && !st.open.contains(&Some(i as u32))
                && !st.pending_reset.contains(&(i as u32))
                && !z.resetting
                && z.wp >= live[i] + block
        })
        .max_by_key(|&i| (st.zones[i].wp - live[i], std::cmp::Reverse(live[i])))?;
    let mut moves = Vec::new();
    for f in st.files.values() {
        for x in extents_of(&f.map) {
            if x.zone as usize == victim {
                moves.push((f.id, x, f.lifetime));
            }
        }
    }
    Some((victim as u32, moves))
}

impl Inner {
    /// Runs a collection round until at least `target` data zones are
    /// empty or no zone has garbage to win (see the module documentation).
    pub(super) fn collect(&self, target: usize) -> FsResult<GcReport> {
        let _round = lock(&self.gc_lock);
        let mut report = GcReport::default();
        let max_steps = lock(&self.state).data_zones();
        for _ in 0..max_steps {
            // Zones queued for a reset, or being reset by another thread's
            // log sync, are free once it is done: count them as such.
            if lock(&self.state).resets_waiting() {
                self.log_sync()?;
            }
            let (victim, moves, resets) = {
                let mut st = lock(&self.state);
                if st.free_zones() >= target {
                    break;
                }
                let Some((victim, moves)) = pick_victim(&st, self.block) else {
                    break;
                };
                st.zones[victim as usize].refs += 1;
                (victim, moves, st.zones[victim as usize].resets)
            };
            let moved = self.evacuate(victim, &moves, &mut report);
            {
                let mut st = lock(&self.state);
                // Release the hold: with the last extent moved, the victim
                // waits for the metadata sync below to be reset.
                st.zones[victim as usize].refs -= 1;
                if st.zones[victim as usize].refs == 0 && !st.pending_reset.contains(&victim) {
                    st.pending_reset.push(victim);
                }
            }
            moved?;
            self.log_sync()?;
            // Reset by this sync or by another thread's (which wrote the
            // relocate records first, with the reset queue).
            let mut st = lock(&self.state);
            if st.zones[victim as usize].resets != resets {
                report.zones_reclaimed += 1;
                st.counters.gc_zones += 1;
            }
        }
        Ok(report)
    }

    /// Copies the live extents of `victim` (step 2) and records the moves
    /// (step 3, up to the metadata sync).
    fn evacuate(&self, victim: u32, moves: &[Move], report: &mut GcReport) -> FsResult<()> {
        let block = self.block;
        let mut copies: Vec<(u64, Extent, Vec<Extent>)> = Vec::new();
        let mut result = Ok(());
        'extents: for &(id, old, lifetime) in moves {
            let dev_len = round_up(old.len, block);
            let mut new = Vec::new();
            let mut off = 0;
            while off < dev_len {
                let n = GC_CHUNK.min(dev_len - off);
                let mut buf = vec![0u8; n as usize];
                if let Err(e) = self
                    .dev
                    .read_at(self.zone_start(victim) + old.offset + off, &mut buf)
                {
                    lock(&self.state).release(&new, true);
                    result = Err(e.into());
                    break 'extents;
                }
                {
                    let mut st = lock(&self.state);
                    let present = st
                        .file_by_id(id)
                        .is_some_and(|f| read_map(&f.map).iter().any(|(_, x)| *x == old));
                    if !present {
                        st.release(&new, true);
                        continue 'extents;
                    }
                }
                // A file removed from here on drops the copy when the moves
                // are recorded (`apply_relocate` finds no file).
                let pad = if off + n == dev_len {
                    dev_len - old.len
                } else {
                    0
                };
                let mut done = 0;
                let slot = lock(&self.slots[slot_of(lifetime, self.slots.len())]);
                let written = self.write_blocks(
                    &slot,
                    lifetime,
                    true,
                    &buf,
                    pad as usize,
                    &mut new,
                    &mut done,
                );
                drop(slot);
                if let Err(e) = written {
                    lock(&self.state).release(&new, true);
                    result = Err(e);
                    break 'extents;
                }
                off += n;
            }
            copies.push((id, old, new));
        }
        if copies.is_empty() {
            return result;
        }
        // No lock held: the copies are made durable while writers go on.
        let synced = self.dev.sync();
        let mut st = lock(&self.state);
        if let Err(e) = synced {
            let e = super::ZoneFsError::from(e);
            st.poison(&e);
            for (_, _, new) in &copies {
                st.release(new, true);
            }
            return Err(e);
        }
        for (id, old, new) in copies {
            if !st.apply_relocate(id, old, &new) {
                st.release(&new, true);
                continue;
            }
            let mut e = Enc::default();
            e.u8(format::KIND_RELOCATE);
            e.u64(id);
            e.extent(&old);
            e.u32(new.len() as u32);
            for x in &new {
                e.extent(x);
            }
            st.push_record(&e.0, block as usize);
            st.release(&[old], true);
            report.extents_moved += 1;
            report.bytes_moved += round_up(old.len, block);
        }
        result
    }
}
