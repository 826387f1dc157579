//! The metadata log: appending records, syncing them, rolling to the next
//! metadata zone, and resetting the zones the synced records freed. Runs
//! under the log lock, with `state` held only for bookkeeping (see
//! "Concurrency" in the module documentation).

use std::sync::MutexGuard;

use super::format::{self, pad_to_block, push_frame, Superblock};
use super::{lock, FsResult, Inner, State, ZoneFsError};

/// What the metadata log's lock guards: its holder alone writes, syncs and
/// rolls the log.
pub(super) struct LogToken;

/// A held metadata log lock.
pub(super) type LogGuard<'a> = MutexGuard<'a, LogToken>;

/// A metadata write prepared under `state`, done by the log's holder.
pub(super) enum LogWrite {
    /// Records appended at the log's write pointer.
    Append { at: u64, buf: Vec<u8> },
    /// A roll: superblock and snapshot into metadata zone `next`.
    Roll { old: u32, next: u32, buf: Vec<u8> },
}

impl Inner {
    /// The superblock and snapshot of the next roll of the log, into the
    /// next metadata zone (under `state`). Drops `log_buf`: the snapshot
    /// holds its effects. Sets `broken` when the snapshot does not fit.
    pub(super) fn roll_image(&self, st: &mut State) -> FsResult<(u32, Vec<u8>)> {
        let block = self.block as usize;
        let next = (st.active_meta + 1) % st.meta_zones;
        let cap = st.zones[next as usize].capacity;
        let sb = Superblock {
            uuid: st.uuid,
            nr_zones: self.dev.geometry().nr_zones,
            zone_size: self.zone_size,
            zone_capacity: self.dev.geometry().zone_capacity,
            block_size: self.dev.geometry().block_size,
            meta_zones: st.meta_zones,
            sequence: st.sequence + 1,
            version: format::VERSION,
        };
        let mut buf = sb.encode();
        pad_to_block(&mut buf, block);
        push_frame(&mut buf, &st.snapshot(), block);
        pad_to_block(&mut buf, block);
        if buf.len() as u64 > cap {
            st.broken = Some((buf.len() as u64, cap));
            return Err(ZoneFsError::MetadataFull {
                needed: buf.len() as u64,
                capacity: cap,
            });
        }
        st.log_buf.clear();
        Ok((next, buf))
    }

    /// The device part of a roll (no `state` held): resets `next`, writes
    /// `buf` into it, syncs, finishes `old` if it holds an active-zone
    /// resource. True when it finished `old`.
    pub(super) fn roll_write(&self, old: u32, next: u32, buf: &[u8]) -> FsResult<bool> {
        // No seal is written in the current zone (earlier builds wrote one):
        // when a crash cuts this roll, the mount goes on in the current zone,
        // and its log must read on to the write pointer; and after a torn
        // tail a seal would be a valid frame after the cut one, which is
        // what damage looks like.
        self.dev.reset_zone(next)?;
        self.dev.write_at(self.zone_start(next), buf)?;
        self.dev.sync()?;
        // The superseded zone must not hold an active-zone resource.
        if self.dev.zone(old)?.condition.is_active() {
            self.dev.finish_zone(old)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Makes `next` the active metadata zone after [`Inner::roll_write`]
    /// wrote `len` bytes into it.
    pub(super) fn roll_done(&self, st: &mut State, next: u32, len: u64, finished_old: bool) {
        st.counters.resets += 1;
        st.counters.metadata_bytes += len;
        if finished_old {
            st.counters.finishes += 1;
        }
        st.active_meta = next;
        st.sequence += 1;
        st.meta_wp = self.zone_start(next) + len;
    }

    /// Writes the pending records, syncs the device, then resets the zones
    /// whose data died. Takes the log lock, then `state` for the
    /// bookkeeping only; the caller holds neither.
    pub(super) fn log_sync(&self) -> FsResult<()> {
        self.log_sync_resets().map(drop)
    }

    /// [`Inner::log_sync`], returning the zones it reset.
    pub(super) fn log_sync_resets(&self) -> FsResult<Vec<u32>> {
        let log = lock(&self.log);
        let (write, resets) = {
            let mut st = lock(&self.state);
            st.usable()?;
            let write = if st.log_buf.is_empty() {
                None
            } else {
                let block = self.block as usize;
                pad_to_block(&mut st.log_buf, block);
                let end =
                    self.zone_start(st.active_meta) + st.zones[st.active_meta as usize].capacity;
                if st.meta_wp + st.log_buf.len() as u64 > end {
                    let old = st.active_meta;
                    let (next, buf) = self.roll_image(&mut st)?;
                    Some(LogWrite::Roll { old, next, buf })
                } else {
                    Some(LogWrite::Append {
                        at: st.meta_wp,
                        buf: std::mem::take(&mut st.log_buf),
                    })
                }
            };
            // Taken with the records: the zones these records freed (and
            // only those) are reset once the records are durable.
            let mut resets = Vec::new();
            for z in std::mem::take(&mut st.pending_reset) {
                let info = &mut st.zones[z as usize];
                if info.refs == 0 && info.used && !info.resetting {
                    info.resetting = true;
                    resets.push(z);
                }
            }
            (write, resets)
        };
        let written = self.write_log(&log, write);
        let mut st = lock(&self.state);
        if let Err(e) = written {
            st.poison(&e);
            for &z in &resets {
                st.zones[z as usize].resetting = false;
            }
            return Err(e);
        }
        drop(st);
        self.reset_zones(&log, resets)
    }

    /// The device part of a log sync (the log lock held, `state` not), and
    /// its bookkeeping.
    pub(super) fn write_log(&self, _log: &LogGuard<'_>, write: Option<LogWrite>) -> FsResult<()> {
        match write {
            None => Ok(()),
            Some(LogWrite::Append { at, buf }) => {
                self.dev.write_at(at, &buf)?;
                self.dev.sync()?;
                let mut st = lock(&self.state);
                st.counters.metadata_bytes += buf.len() as u64;
                st.meta_wp = at + buf.len() as u64;
                Ok(())
            }
            Some(LogWrite::Roll { old, next, buf }) => {
                let finished = self.roll_write(old, next, &buf)?;
                self.roll_done(&mut lock(&self.state), next, buf.len() as u64, finished);
                Ok(())
            }
        }
    }

    /// Resets `zones` (marked `resetting`, their freeing records durable)
    /// and syncs; returns them.
    pub(super) fn reset_zones(&self, _log: &LogGuard<'_>, zones: Vec<u32>) -> FsResult<Vec<u32>> {
        if zones.is_empty() {
            return Ok(zones);
        }
        for (i, &z) in zones.iter().enumerate() {
            if let Err(e) = self.dev.reset_zone(z) {
                // Not reset: still used, queued again for a later sync.
                let mut st = lock(&self.state);
                for &z in &zones[i..] {
                    st.zones[z as usize].resetting = false;
                    st.pending_reset.push(z);
                }
                return Err(e.into());
            }
            let mut st = lock(&self.state);
            let info = &mut st.zones[z as usize];
            info.used = false;
            info.resetting = false;
            info.wp = 0;
            info.resets += 1;
            st.counters.resets += 1;
        }
        if let Err(e) = self.dev.sync() {
            let e = ZoneFsError::from(e);
            lock(&self.state).poison(&e);
            return Err(e);
        }
        Ok(zones)
    }
}
