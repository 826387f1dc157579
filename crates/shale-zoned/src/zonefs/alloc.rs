//! Placement: the slots (one open zone per lifetime class), allocation of
//! zones, and writing blocks into a slot's open zone under its lock (see
//! "Concurrency" in the module documentation).

use std::sync::MutexGuard;

use super::format::Extent;
use super::{lock, FsResult, Inner, State, ZoneFsError};
use crate::device::ZonedDevice;

/// What the lock of a placement slot guards: its holder alone writes to the
/// slot's open zone.
pub(super) struct Slot {
    pub(super) index: usize,
}

/// A held slot lock: the proof a function that writes to a slot asks for.
pub(super) type SlotGuard<'a> = MutexGuard<'a, Slot>;

/// Number of placement slots for a device: one per lifetime class, at most
/// the open/active limit minus one (the metadata zone).
pub(super) fn slot_count(dev: &dyn ZonedDevice) -> usize {
    let g = dev.geometry();
    let limit = [g.max_open_zones, g.max_active_zones]
        .into_iter()
        .filter(|&n| n != 0)
        .min()
        .unwrap_or(u32::MAX);
    (limit.saturating_sub(1) as usize).min(5)
}

/// The slot of a lifetime class: the WAL (`Short`) has its own, the others
/// share what is left when the device allows fewer than five.
pub(super) fn slot_of(lifetime: u8, slots: usize) -> usize {
    match lifetime {
        1 => 0,
        0 => 1.min(slots - 1),
        l => (l as usize).min(slots - 1),
    }
}

impl Inner {
    /// Finishes the slot's open zone when less than the finish threshold of
    /// it is left (a file is about to start in it).
    pub(super) fn finish_if_nearly_full(&self, slot: &SlotGuard<'_>) -> FsResult<()> {
        let (z, info) = {
            let st = lock(&self.state);
            let Some(z) = st.open[slot.index] else {
                return Ok(());
            };
            (z, st.zones[z as usize])
        };
        let room = info.capacity - info.wp;
        if room == 0 || room * 100 >= info.capacity * u64::from(self.finish_threshold_percent) {
            return Ok(());
        }
        // The slot lock keeps the zone open and unwritten meanwhile.
        self.dev.finish_zone(z)?;
        let mut st = lock(&self.state);
        st.counters.finishes += 1;
        st.zones[z as usize].wp = info.capacity;
        st.open[slot.index] = None;
        if st.zones[z as usize].refs == 0 {
            st.pending_reset.push(z);
        }
        Ok(())
    }

    /// Empty zones a collection round leaves at least (the low-water mark).
    pub(super) fn low_water(&self, st: &State) -> usize {
        let pct = st.data_zones() * self.gc.low_water_percent as usize;
        pct.div_ceil(100).max(self.gc.reserve_zones as usize + 1)
    }

    /// The open zone of the slot with room, taking an empty zone if needed:
    /// `(zone, write pointer, capacity)`. Host writes (`gc` false) never
    /// take the last `reserve_zones` empty zones: `DeviceFull` then means
    /// "collect garbage and try again". Syncs the log when zones wait to be
    /// reset, or another thread is resetting some (the log lock waits for
    /// it), and tries again; the caller holds no `state`.
    pub(super) fn alloc(&self, slot: &SlotGuard<'_>, gc: bool) -> FsResult<(u32, u64, u64)> {
        let reserve = if gc {
            0
        } else {
            self.gc.reserve_zones as usize
        };
        for attempt in 0..2 {
            let mut st = lock(&self.state);
            if let Some(z) = st.open[slot.index] {
                let info = st.zones[z as usize];
                if info.wp < info.capacity {
                    return Ok((z, info.wp, info.capacity));
                }
                st.open[slot.index] = None;
                if info.refs == 0 {
                    st.pending_reset.push(z);
                }
            }
            let free = (st.meta_zones as usize..st.zones.len())
                .find(|&i| !st.zones[i].used && !st.zones[i].unusable);
            if let Some(i) = free.filter(|_| st.free_zones() > reserve) {
                st.zones[i].used = true;
                st.zones[i].wp = 0;
                st.open[slot.index] = Some(i as u32);
                if st.free_zones() < self.low_water(&st) {
                    self.gc_signal.wake();
                }
                return Ok((i as u32, 0, st.zones[i].capacity));
            }
            if attempt == 0 && st.resets_waiting() {
                drop(st);
                self.log_sync()?;
            } else {
                break;
            }
        }
        self.gc_signal.wake();
        Err(ZoneFsError::DeviceFull)
    }

    /// Writes `data[*done..]` (`data` a multiple of the block size; its
    /// last `pad` bytes are padding, not file data) into the slot's zones,
    /// advancing `*done`; adds the extents to `out`, merging with the last
    /// one where contiguous. `lifetime` and `gc` say whose bytes they are
    /// (counters; only the collector may take reserved zones). On an error
    /// `*done` says how far it got, so a writer can collect garbage and go on.
    /// The device writes happen under the slot lock only.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_blocks(
        &self,
        slot: &SlotGuard<'_>,
        lifetime: u8,
        gc: bool,
        data: &[u8],
        pad: usize,
        out: &mut Vec<Extent>,
        done: &mut usize,
    ) -> FsResult<()> {
        let file_bytes = data.len() - pad;
        while *done < data.len() {
            let (z, wp, capacity) = self.alloc(slot, gc)?;
            let take = ((capacity - wp) as usize).min(data.len() - *done);
            self.dev
                .write_at(self.zone_start(z) + wp, &data[*done..*done + take])?;
            let mut st = lock(&self.state);
            debug_assert_eq!(
                st.zones[z as usize].wp, wp,
                "zone {z} written outside its slot"
            );
            st.zones[z as usize].wp += take as u64;
            let len = (file_bytes.saturating_sub(*done)).min(take) as u64;
            if gc {
                st.counters.gc_bytes += take as u64;
            } else {
                st.counters.host_bytes[usize::from(lifetime).min(4)] += len;
                st.counters.padding_bytes += take as u64 - len;
            }
            match out.last_mut() {
                Some(last)
                    if last.zone == z
                        && last.offset + last.len == wp
                        && last.len % self.block == 0 =>
                {
                    last.len += len;
                }
                _ => {
                    st.zones[z as usize].refs += 1;
                    out.push(Extent {
                        zone: z,
                        offset: wp,
                        len,
                    });
                }
            }
            *done += take;
        }
        Ok(())
    }
}
