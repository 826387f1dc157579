//! `ZoneFs`: shale's [`FileSystem`](shale_env::FileSystem) on any [`ZonedDevice`] (format in
//! `docs/format/zonefs.md`, design in `docs/zoned.md`).
//!
//! * The first `meta_zones` zones hold the metadata: a superblock, then a
//!   log of CRC-framed records starting with a full snapshot. When the active
//!   metadata zone is full the log rolls to the next metadata zone (reset,
//!   superblock with sequence + 1, fresh snapshot). A snapshot that does not
//!   fit in one zone fails with [`ZoneFsError::MetadataFull`].
//! * The other zones hold file data. A file is a list of extents that never
//!   cross zones. Files of one lifetime class are appended to one open zone.
//! * Writes are buffered per file and written in whole blocks; `sync` pads the
//!   partial last block (the file's size, in the metadata, says where its data
//!   stops; the next append starts a new block).
//! * Durability order of `sync`/`finish`: data, device sync, metadata record,
//!   device sync. `sync_dir` syncs the metadata log (names are durable then).
//! * Directories are a flat namespace of path prefixes created by
//!   `create_dir_all` (persisted); locks are in-process only.
//!
//! * Garbage collection ([`gc`]) relocates the live extents of the zones with
//!   the most garbage into zones of the same lifetime and resets them, from a
//!   background thread and, when an allocation finds no free zone, from the
//!   writer itself (writers wait for space rather than fail while it can be
//!   freed).
//!
//! # Concurrency
//!
//! No device write, sync, reset or finish happens under the state lock: a
//! WAL's sync does not wait for a compaction's table writes or for the
//! collector's copies into other zones. The locks, in the order they are
//! taken (a thread holding one takes only those after it):
//!
//! 1. `Inner::gc_lock`: serializes collection rounds. Held across a round's
//!    device reads, writes and syncs; a writer that finds no free zone drops
//!    its slot lock before it waits here.
//! 2. `Inner::slots[i]` (a `Slot`): the write side of placement slot `i`.
//!    Its holder alone writes to the slot's open zone, so writes to a zone
//!    stay in order at its write pointer; it is held across those device
//!    writes, and across the finish of the slot's nearly full zone. The
//!    collector's copies into a slot take the same lock. Functions that
//!    write to a slot take the guard as a parameter.
//! 3. `Inner::log` (a `LogToken`): the metadata log. Its holder alone
//!    writes the log, rolls it, syncs after it and resets the zones the
//!    synced records freed; it changes `State::meta_wp`, `active_meta` and
//!    `sequence` (under `state` too, so readers of those see them whole).
//!    Records are appended to `State::log_buf` under `state` alone, in the
//!    order of the changes they describe; a log sync takes the buffer and
//!    the zones waiting for reset in one `state` hold, so a zone is reset
//!    only after the records that freed it are durable.
//! 4. `Inner::state`: metadata and allocator bookkeeping, held for memory
//!    work only. Between allocating room in a zone (advancing nothing) and
//!    recording the written extent, the zone is its slot's open zone, which
//!    nothing resets or collects.
//! 5. A file's extent map (`RwLock`), shared with the file's open readers: a
//!    read holds the map's read lock across its device reads and takes no
//!    other lock; the collector swaps moved extents under the write lock
//!    (with `state` held), so no read sees a zone that is reset after the
//!    swap. Every clone and drop of a map's `Arc` happens under `state`, so
//!    its strong count says whether readers remain.
//!
//! Zone resets: only a zone without references (no file, removed file with
//! readers, unrecorded writer extent or collector hold) is queued for reset,
//! and it is marked `resetting` while the log holder resets it outside
//! `state`, so neither allocation nor the collector takes it meanwhile.
//!
//! Durability is as with one lock: `sync` writes the file's blocks (slot
//! lock), syncs the device (no lock), appends its extents record (`state`)
//! and syncs the log (log lock), whose holder writes every record buffered
//! so far. A failed device sync or log write poisons the file system: every
//! later sync fails (the records it dropped may be lost, and a later sync
//! must not report them durable).

//! # Modules
//!
//! Each depends only on those listed before it, and on this module's
//! `Inner`, `ZoneFs` and `lock`: `format` (byte formats), `options`,
//! `error`, `stats` (counters), `meta` (the `State` and its replay), `log`
//! (the metadata log), `alloc` (slots and zone allocation), `files`
//! (writers, readers, locks and the `FileSystem` implementation), `gc`,
//! `mount`, `inspect`.

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::device::{ZoneCondition, ZonedDevice, ZonedError};

mod alloc;
mod error;
mod files;
pub(crate) mod format;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod fuzz;
pub mod gc;
mod inspect;
mod log;
mod meta;
mod mount;
mod options;
mod stats;

use alloc::{slot_count, slot_of, Slot};
use files::{not_found, path_key};
use format::{pad_to_block, push_frame, Enc, Superblock};
use log::LogToken;
use meta::{extents_of, read_map, State, ZoneInfo};

pub(crate) use error::FsResult;
pub use error::ZoneFsError;
pub use format::Extent;
pub use gc::GcReport;
pub use inspect::{CheckReport, FileInfo, ZoneRole, ZoneUsage};
pub use options::{FormatOptions, GcOptions, MountOptions, MAX_META_ZONES};
pub use stats::ZoneFsStats;

struct Inner {
    dev: Arc<dyn ZonedDevice>,
    block: u64,
    zone_size: u64,
    gc: GcOptions,
    /// Mounted read-only: nothing is written to the device.
    read_only: bool,
    /// `MountOptions::finish_threshold_percent`.
    finish_threshold_percent: u32,
    /// The write side of each placement slot (see "Concurrency").
    slots: Vec<Mutex<Slot>>,
    /// The metadata log's writes, syncs and rolls (see "Concurrency").
    log: Mutex<LogToken>,
    state: Mutex<State>,
    /// Serializes collection rounds (the thread's and writers').
    gc_lock: Mutex<()>,
    /// Wakes the collector thread.
    gc_signal: Arc<gc::Signal>,
    locks: Mutex<HashMap<String, usize>>,
}

/// A zone file system on a [`ZonedDevice`]; see the module documentation.
/// Cheap to clone (shared state). Dropping the last handle stops the
/// collector thread, waiting for a round under way to end; it writes nothing
/// else (call `sync_dir` first). Open files keep the device open until they
/// are dropped too.
#[derive(Clone)]
pub struct ZoneFs {
    inner: Arc<Inner>,
    _collector: Arc<gc::Collector>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn shape(nr: u32, size: u64, cap: u64, block: u32) -> (u32, u64, u64, u32) {
    (nr, size, cap, block)
}

fn new_uuid() -> [u8; 16] {
    use std::hash::{BuildHasher, Hasher};
    let mut out = [0u8; 16];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        h.write_u32(std::process::id());
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
    out
}

impl Inner {
    fn zone_start(&self, zone: u32) -> u64 {
        u64::from(zone) * self.zone_size
    }
}

impl ZoneFs {
    /// Formats `dev`: resets every zone, writes a superblock and an empty
    /// snapshot into zone 0, syncs, and mounts the new file system.
    ///
    /// Errors: [`ZoneFsError::InvalidOptions`] when `meta_zones` is outside
    /// `2..=MAX_META_ZONES`, the device has no data zone, or its open/active
    /// zone limit is below 3; device errors.
    pub fn format(dev: Arc<dyn ZonedDevice>, options: FormatOptions) -> FsResult<ZoneFs> {
        let g = dev.geometry();
        let bad = |reason: String| Err(ZoneFsError::InvalidOptions { reason });
        if !(2..=MAX_META_ZONES).contains(&options.meta_zones) {
            return bad(format!(
                "{} metadata zones: must be 2 to {MAX_META_ZONES}",
                options.meta_zones
            ));
        }
        if g.nr_zones <= options.meta_zones {
            return bad(format!(
                "the device has {} zones: none left for data after {} metadata zones",
                g.nr_zones, options.meta_zones
            ));
        }
        if slot_count(dev.as_ref()) < 2 {
            return bad("the device's open or active zone limit is below 3".into());
        }
        for z in dev.report_all()? {
            if z.condition != ZoneCondition::Empty
                && z.condition != ZoneCondition::Offline
                && z.condition != ZoneCondition::ReadOnly
            {
                dev.reset_zone(z.index)?;
            }
        }
        let sb = Superblock {
            uuid: new_uuid(),
            nr_zones: g.nr_zones,
            zone_size: g.zone_size,
            zone_capacity: g.zone_capacity,
            block_size: g.block_size,
            meta_zones: options.meta_zones,
            sequence: 1,
            version: format::VERSION,
        };
        let block = g.block_size as usize;
        let mut buf = sb.encode();
        pad_to_block(&mut buf, block);
        let mut snap = Enc::default();
        snap.u8(format::KIND_SNAPSHOT);
        snap.u64(1);
        snap.u32(0);
        snap.u32(0);
        push_frame(&mut buf, &snap.0, block);
        pad_to_block(&mut buf, block);
        dev.write_at(0, &buf)?;
        dev.sync()?;
        ZoneFs::mount_with(dev, options.mount)
    }

    /// Mounts the file system on `dev` with the default [`MountOptions`]
    /// (a garbage collector thread); see [`ZoneFs::mount_with`].
    pub fn mount(dev: Arc<dyn ZonedDevice>) -> FsResult<ZoneFs> {
        ZoneFs::mount_with(dev, MountOptions::default())
    }

    /// Mounts the file system on `dev`: replays the metadata from the newest
    /// metadata zone (the snapshot after its superblock, then the records
    /// up to the write pointer), or from the zone before it when a crash
    /// cut the roll into it. Only a last record cut by the write pointer (a
    /// torn write) is dropped; any other damage to the superblocks or the
    /// log is [`ZoneFsError::Corrupt`], returned before anything is written
    /// (`docs/format/zonefs.md`, "Mount"). Then, unless read-only: a partly
    /// written data zone that holds live data becomes again the open zone
    /// of its files' lifetime class (the first such zone of each class; the
    /// others are finished); data zones that hold none are reset; the log
    /// rolls after a torn tail. Starts the collector thread when
    /// `options.gc.background`.
    ///
    /// Errors: [`ZoneFsError::NotFormatted`] (zones 0 and 1 empty),
    /// [`ZoneFsError::GeometryMismatch`], [`ZoneFsError::UnsupportedVersion`],
    /// [`ZoneFsError::Corrupt`]; device errors.
    pub fn mount_with(dev: Arc<dyn ZonedDevice>, options: MountOptions) -> FsResult<ZoneFs> {
        let g = dev.geometry();
        let block = u64::from(g.block_size);
        let report = dev.report_all()?;
        // Nothing is written before the metadata is read whole: every
        // error below leaves the device as it was.
        let heads = mount::read_heads(dev.as_ref(), &report, block)?;
        let candidates = mount::superblocks(&heads)?;
        let newest = candidates[0].0;
        let found = shape(
            newest.nr_zones,
            newest.zone_size,
            newest.zone_capacity,
            newest.block_size,
        );
        let device = shape(g.nr_zones, g.zone_size, g.zone_capacity, g.block_size);
        if found != device {
            return Err(ZoneFsError::GeometryMismatch {
                formatted: found,
                device,
            });
        }
        let meta_zones = newest.meta_zones;
        let max_seq = newest.sequence;
        let slots = slot_count(dev.as_ref()).max(1);
        let zones: Vec<ZoneInfo> = report.iter().map(ZoneInfo::of).collect();
        let fresh =
            |meta_zones: u32| State::new(meta_zones, newest.uuid, max_seq, zones.clone(), slots);
        // The newest metadata zone, or, when a crash cut the roll into it,
        // the zone that roll started from: one below it in the ring, and the
        // next superblock down in sequence. Damage in either is an error,
        // never a reason to look further back.
        let (zone, sb) = (candidates[0].1, candidates[0].0);
        let mut st = fresh(meta_zones);
        let (mut st, chosen, replayed, cut_roll) = match mount::replay(
            dev.as_ref(),
            &report[zone as usize],
            sb.sequence,
            block,
            &mut st,
        )? {
            mount::Replay::Log { torn, sealed } => (st, (zone, sb), (torn, sealed), None),
            mount::Replay::RollCut if sb.sequence == 1 && candidates.len() == 1 => {
                // Format writes the first superblock and snapshot
                // together after resetting every zone: it was cut.
                return Err(ZoneFsError::NotFormatted);
            }
            mount::Replay::RollCut => {
                let from = (zone + meta_zones - 1) % meta_zones;
                let Some(&(prev_sb, prev)) = candidates.get(1).filter(|(_, z)| *z == from) else {
                    return Err(ZoneFsError::Corrupt {
                        reason: format!(
                            "metadata zone {zone} holds the newest superblock (sequence {}) but \
                             its snapshot was cut by the write pointer (a roll cut by a crash), \
                             and zone {from}, where that roll started, does not hold the next \
                             superblock down. Nothing was mounted or written",
                            sb.sequence
                        ),
                    });
                };
                let mut st = fresh(meta_zones);
                let prev_zone = &report[prev as usize];
                match mount::replay(dev.as_ref(), prev_zone, prev_sb.sequence, block, &mut st)? {
                    mount::Replay::Log { torn, sealed } => {
                        (st, (prev, prev_sb), (torn, sealed), Some(zone))
                    }
                    mount::Replay::RollCut => {
                        return Err(ZoneFsError::Corrupt {
                            reason: format!(
                                "metadata zones {zone} and {prev} both hold a superblock without \
                                 a snapshot; a crash cuts one roll, not two. Nothing was mounted \
                                 or written"
                            ),
                        })
                    }
                }
            }
        };
        let (torn, sealed) = replayed;
        let z = report[chosen.0 as usize];
        st.active_meta = chosen.0;
        // Clean or torn, the log is read up to the write pointer; after a
        // torn tail the mount rolls, so nothing follows the cut frame.
        st.meta_wp = z.write_pointer.min(z.start + z.capacity);
        let roll = torn || sealed || chosen.1.version < format::VERSION;
        let inner = Inner {
            block,
            zone_size: g.zone_size,
            gc: options.gc,
            read_only: options.read_only,
            finish_threshold_percent: options.finish_threshold_percent,
            slots: (0..slots).map(|index| Mutex::new(Slot { index })).collect(),
            log: Mutex::new(LogToken),
            state: Mutex::new(fresh(meta_zones)),
            gc_lock: Mutex::new(()),
            gc_signal: Arc::new(gc::Signal::default()),
            dev,
            locks: Mutex::new(HashMap::new()),
        };
        if !options.read_only {
            inner.settle_zones(&mut st, &report, roll, cut_roll)?;
        }
        *lock(&inner.state) = st;
        let inner = Arc::new(inner);
        let collector = if options.gc.background && !options.read_only {
            gc::Collector::spawn(&inner).map_err(|source| {
                ZoneFsError::Device(ZonedError::Io {
                    context: "starting the garbage collector thread".into(),
                    source,
                })
            })?
        } else {
            gc::Collector::none(&inner)
        };
        Ok(ZoneFs {
            inner,
            _collector: Arc::new(collector),
        })
    }
}

impl Inner {
    /// The writes of a read-write mount, after the replay: the metadata
    /// zone of a roll cut by a crash (`cut_roll`) reset, data zones without
    /// live data reset, partly written ones adopted or finished, the log
    /// rolled when `roll`, other metadata zones finished, a sync.
    fn settle_zones(
        &self,
        st: &mut State,
        report: &[crate::device::Zone],
        roll: bool,
        cut_roll: Option<u32>,
    ) -> FsResult<()> {
        if let Some(z) = cut_roll {
            // Its superblock is newer than the zone the mount replayed, and
            // its snapshot is cut: reset, so that the zone is empty (as the
            // emulator leaves it) rather than finished around a frame that
            // would then look complete and damaged.
            self.dev.reset_zone(z)?;
            st.counters.resets += 1;
        }
        let slots = st.open.len();
        // The lifetime class of each data zone's files (placement keeps one
        // class per zone; the first file found decides).
        let mut zone_slot: HashMap<u32, usize> = HashMap::new();
        for f in st.files.values() {
            for x in extents_of(&f.map) {
                zone_slot
                    .entry(x.zone)
                    .or_insert(slot_of(f.lifetime, slots));
            }
        }
        // Data zones: reset those without live data; a partly written one
        // becomes its class's open zone again (writes go on at its write
        // pointer), or is finished when the class has one already.
        for i in st.meta_zones..st.zones.len() as u32 {
            let info = st.zones[i as usize];
            let z = report[i as usize];
            if info.unusable || z.condition == ZoneCondition::Empty {
                continue;
            }
            if info.refs == 0 {
                self.dev.reset_zone(i)?;
                st.zones[i as usize].used = false;
                st.zones[i as usize].wp = 0;
                st.counters.resets += 1;
            } else if z.condition != ZoneCondition::Full {
                match zone_slot.get(&i) {
                    Some(&slot) if st.open[slot].is_none() && info.wp < info.capacity => {
                        st.open[slot] = Some(i);
                    }
                    _ => {
                        self.dev.finish_zone(i)?;
                        st.zones[i as usize].wp = info.capacity;
                        st.counters.finishes += 1;
                    }
                }
            }
        }
        if roll {
            // Records after a torn one would follow a frame that runs past
            // them, records of this version must not follow an older
            // superblock, and earlier builds stop reading at a seal: start a
            // new metadata zone. (The mount is not shared yet: `st` is its
            // own, no lock is needed.)
            let old = st.active_meta;
            let (next, buf) = self.roll_image(st)?;
            let finished = self.roll_write(old, next, &buf)?;
            self.roll_done(st, next, buf.len() as u64, finished);
        }
        // Other metadata zones (superseded, or a roll cut short by a crash)
        // must not hold active-zone resources.
        for i in 0..st.meta_zones {
            if i != st.active_meta && self.dev.zone(i)?.condition.is_active() {
                self.dev.finish_zone(i)?;
            }
        }
        self.dev.sync()?;
        Ok(())
    }

    /// `ReadOnlyFilesystem` on a read-only mount.
    fn writable(&self) -> io::Result<()> {
        if self.read_only {
            return Err(io::Error::new(
                io::ErrorKind::ReadOnlyFilesystem,
                "the zone file system is mounted read-only",
            ));
        }
        Ok(())
    }
}

impl ZoneFs {
    /// The device the file system is on.
    pub fn device(&self) -> &Arc<dyn ZonedDevice> {
        &self.inner.dev
    }

    /// Sequence number of the active metadata zone's superblock (grows by one
    /// at every roll of the metadata log). After a mount that went back from
    /// a roll cut by a crash, it is the cut zone's (one above the active
    /// zone's), so that the next roll writes a sequence above every
    /// superblock the device held.
    pub fn metadata_sequence(&self) -> u64 {
        lock(&self.inner.state).sequence
    }

    /// Data zones that are empty (free for allocation).
    pub fn empty_data_zones(&self) -> usize {
        lock(&self.inner.state).free_zones()
    }

    /// The zones holding a file's extents, in file order (one entry per
    /// extent).
    pub fn file_zones(&self, path: &Path) -> io::Result<Vec<u32>> {
        let key = path_key(path)?;
        let st = lock(&self.inner.state);
        let f = st.files.get(&key).ok_or_else(|| not_found(&key))?;
        Ok(extents_of(&f.map).iter().map(|x| x.zone).collect())
    }

    /// Runs garbage collection now, until no zone holds garbage to win (its
    /// written bytes above its live extents' by a block or more), waiting
    /// for a round of the collector thread to end first.
    pub fn collect_garbage(&self) -> io::Result<gc::GcReport> {
        self.inner.writable()?;
        self.inner.collect(usize::MAX).map_err(io::Error::from)
    }

    /// Makes every metadata change so far durable (what `sync_dir` does).
    pub fn sync_metadata(&self) -> io::Result<()> {
        self.inner.log_sync().map_err(io::Error::from)
    }
}
