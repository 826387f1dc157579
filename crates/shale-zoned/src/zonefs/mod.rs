//! `ZoneFs`: shale's [`FileSystem`] on any [`ZonedDevice`] (format in
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
//! 2. `Inner::slots[i]` (a [`Slot`]): the write side of placement slot `i`.
//!    Its holder alone writes to the slot's open zone, so writes to a zone
//!    stay in order at its write pointer; it is held across those device
//!    writes, and across the finish of the slot's nearly full zone. The
//!    collector's copies into a slot take the same lock. Functions that
//!    write to a slot take the guard as a parameter.
//! 3. `Inner::log` (a [`LogToken`]): the metadata log. Its holder alone
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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Duration;

use shale_env::{AppendFile, FileLock, FileSystem, ObjectWriter, RandomAccessFile, WriteLifetime};

use crate::device::{ZoneCondition, ZonedDevice, ZonedError};

pub(crate) mod format;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod fuzz;
pub mod gc;
mod inspect;
mod mount;

use format::{pad_to_block, push_frame, Dec, Enc, Superblock};

pub use format::Extent;
pub use gc::GcReport;
pub use inspect::{CheckReport, FileInfo, ZoneFsStats, ZoneRole, ZoneUsage};

/// Most metadata zones a file system may have.
pub const MAX_META_ZONES: u32 = 16;

/// Options of [`ZoneFs::format`].
#[derive(Clone, Copy, Debug)]
pub struct FormatOptions {
    /// Zones reserved for metadata, from zone 0 (at least 2, at most
    /// [`MAX_META_ZONES`]; default 2).
    pub meta_zones: u32,
    /// How the new file system is mounted.
    pub mount: MountOptions,
}

impl Default for FormatOptions {
    fn default() -> Self {
        FormatOptions {
            meta_zones: 2,
            mount: MountOptions::default(),
        }
    }
}

/// Options of [`ZoneFs::mount_with`] (not persisted: each mount chooses).
#[derive(Clone, Copy, Debug, Default)]
pub struct MountOptions {
    /// Garbage collection.
    pub gc: GcOptions,
    /// Mount without writing anything to the device: no zone is reset or
    /// finished, the metadata log is not rolled, no collector runs, and
    /// every change (create, rename, remove, mkdir, collection) fails with
    /// `ReadOnlyFilesystem`. For looking at a device (`shale zoned ls`, a
    /// read-only database open); default false.
    pub read_only: bool,
    /// A file about to start in its class's open zone starts in a new zone
    /// instead when less than this percentage of the open zone is left; the
    /// nearly full zone is finished (default 0: never). Fewer files then
    /// straddle two zones, at the cost of the unwritten tails.
    pub finish_threshold_percent: u32,
}

/// When and how much garbage collection runs.
#[derive(Clone, Copy, Debug)]
pub struct GcOptions {
    /// Run a collector thread that wakes every `interval`, and at once when
    /// an allocation leaves fewer empty data zones than the low-water mark
    /// (default true). Without it, collection runs only in writers that find
    /// no free zone and in [`ZoneFs::collect_garbage`].
    pub background: bool,
    /// The collector thread's timer (default 10 s).
    pub interval: Duration,
    /// The low-water mark, as a percentage of the data zones (default 5):
    /// collection reclaims zones until at least this many are empty (and
    /// always at least `reserve_zones + 1`). A low mark copies less: the
    /// engine's compactions empty zones of their own, and a zone collected
    /// early copies data they would have deleted.
    pub low_water_percent: u32,
    /// Empty zones that only the collector may take (default 1): the room it
    /// needs to move live data out of a zone before resetting it.
    pub reserve_zones: u32,
}

impl Default for GcOptions {
    fn default() -> Self {
        GcOptions {
            background: true,
            interval: Duration::from_secs(10),
            low_water_percent: 5,
            reserve_zones: 1,
        }
    }
}

/// Every way formatting, mounting or running a [`ZoneFs`] can fail.
///
/// Converts into [`io::Error`]: `NotFormatted`, `UnsupportedVersion`,
/// `GeometryMismatch` and `Corrupt` are `InvalidData`; `MetadataFull` and
/// `DeviceFull` are `StorageFull`; `InvalidOptions` is `InvalidInput`; device
/// errors keep their kind.
#[derive(Debug)]
pub enum ZoneFsError {
    /// Zones 0 and 1, where every zone file system keeps its superblocks,
    /// are both empty: the device was never formatted (or a format was cut
    /// before its first superblock and snapshot were written).
    NotFormatted,
    /// A superblock of another format version.
    UnsupportedVersion {
        /// The version found.
        found: u32,
    },
    /// Formatted for another zone geometry.
    GeometryMismatch {
        /// `nr_zones, zone_size, zone_capacity, block_size` of the superblock.
        formatted: (u32, u64, u64, u32),
        /// The same of the device.
        device: (u32, u64, u64, u32),
    },
    /// The metadata is damaged: a superblock whose magic is there and whose
    /// checksum fails, a metadata zone holding data but no superblock, a
    /// metadata frame that fails its checksum or does not decode, or
    /// anything else that no crash leaves (only a last record cut by the
    /// write pointer is dropped). The reason names the zone (and the byte
    /// offset of a bad frame). The mount that returns it wrote nothing.
    Corrupt {
        /// What is wrong.
        reason: String,
    },
    /// The metadata snapshot does not fit in one metadata zone.
    MetadataFull {
        /// Bytes the superblock and snapshot need.
        needed: u64,
        /// Capacity of a metadata zone.
        capacity: u64,
    },
    /// No empty data zone is left and garbage collection cannot free one
    /// (every zone with room to win holds only live data).
    DeviceFull,
    /// Bad format options or a device too small for them.
    InvalidOptions {
        /// Why.
        reason: String,
    },
    /// The device failed.
    Device(ZonedError),
}

impl fmt::Display for ZoneFsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZoneFsError::NotFormatted => f.write_str(
                "not a zone file system: zones 0 and 1, where its superblocks go, are empty \
                 (never formatted, or formatting was cut short)",
            ),
            ZoneFsError::UnsupportedVersion { found } => write!(
                f,
                "zone file system format version {found} is not supported (this build reads {})",
                format::VERSION
            ),
            ZoneFsError::GeometryMismatch { formatted, device } => write!(
                f,
                "zone file system made for another geometry: formatted for (zones, zone size, \
                 capacity, block) {formatted:?}, device has {device:?}"
            ),
            ZoneFsError::Corrupt { reason } => write!(f, "zone file system damaged: {reason}"),
            ZoneFsError::MetadataFull { needed, capacity } => write!(
                f,
                "metadata does not fit: the snapshot needs {needed} bytes, a metadata zone holds \
                 {capacity} (format with larger zones or fewer files)"
            ),
            ZoneFsError::DeviceFull => f.write_str(
                "zone file system full: no empty zone left and no zone holds garbage to collect",
            ),
            ZoneFsError::InvalidOptions { reason } => {
                write!(f, "invalid zone file system: {reason}")
            }
            ZoneFsError::Device(e) => write!(f, "zoned device: {e}"),
        }
    }
}

impl std::error::Error for ZoneFsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ZoneFsError::Device(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ZonedError> for ZoneFsError {
    fn from(e: ZonedError) -> Self {
        ZoneFsError::Device(e)
    }
}

impl From<ZoneFsError> for io::Error {
    fn from(e: ZoneFsError) -> io::Error {
        let kind = match &e {
            ZoneFsError::NotFormatted
            | ZoneFsError::UnsupportedVersion { .. }
            | ZoneFsError::GeometryMismatch { .. }
            | ZoneFsError::Corrupt { .. } => io::ErrorKind::InvalidData,
            ZoneFsError::MetadataFull { .. } | ZoneFsError::DeviceFull => {
                io::ErrorKind::StorageFull
            }
            ZoneFsError::InvalidOptions { .. } => io::ErrorKind::InvalidInput,
            ZoneFsError::Device(d) => d.kind(),
        };
        io::Error::new(kind, e)
    }
}

type FsResult<T> = std::result::Result<T, ZoneFsError>;

fn lifetime_code(h: WriteLifetime) -> u8 {
    match h {
        WriteLifetime::NotSet => 0,
        WriteLifetime::Short => 1,
        WriteLifetime::Medium => 2,
        WriteLifetime::Long => 3,
        WriteLifetime::Extreme => 4,
    }
}

/// A file's extents with the file offset each starts at, in file order.
/// Shared by the file's entry and its open readers (see "Concurrency").
type FileMap = RwLock<Vec<(u64, Extent)>>;

fn read_map(m: &FileMap) -> std::sync::RwLockReadGuard<'_, Vec<(u64, Extent)>> {
    m.read().unwrap_or_else(PoisonError::into_inner)
}

fn write_map(m: &FileMap) -> std::sync::RwLockWriteGuard<'_, Vec<(u64, Extent)>> {
    m.write().unwrap_or_else(PoisonError::into_inner)
}

/// `extents` with the file offset of each, the first at `start`.
fn with_starts(mut start: u64, extents: &[Extent]) -> impl Iterator<Item = (u64, Extent)> + '_ {
    extents.iter().map(move |x| {
        let e = (start, *x);
        start += x.len;
        e
    })
}

fn map_of(extents: &[Extent]) -> Arc<FileMap> {
    Arc::new(RwLock::new(with_starts(0, extents).collect()))
}

fn extents_of(m: &FileMap) -> Vec<Extent> {
    read_map(m).iter().map(|(_, x)| *x).collect()
}

#[derive(Debug)]
struct FileEntry {
    id: u64,
    size: u64,
    lifetime: u8,
    map: Arc<FileMap>,
}

#[derive(Clone, Copy, Debug, Default)]
struct ZoneInfo {
    /// Extents in the zone: recorded in a file (or a removed file that open
    /// readers still hold), written by an open writer and not recorded yet,
    /// or a hold of the collector on the zone it empties.
    refs: u32,
    /// Written since its last reset.
    used: bool,
    /// Offline or read-only: never allocated.
    unusable: bool,
    /// Our write pointer, relative to the zone start.
    wp: u64,
    capacity: u64,
    /// Being reset by the metadata log's holder (still `used` until done).
    resetting: bool,
    /// Resets since mount (tells the collector whether its victim was).
    resets: u64,
}

struct State {
    meta_zones: u32,
    uuid: [u8; 16],
    sequence: u64,
    active_meta: u32,
    /// Device offset where the next metadata write goes.
    meta_wp: u64,
    /// Encoded records not on the device yet (starts at a block boundary).
    log_buf: Vec<u8>,
    files: BTreeMap<String, FileEntry>,
    ids: HashMap<u64, String>,
    next_id: u64,
    dirs: BTreeSet<String>,
    zones: Vec<ZoneInfo>,
    /// Open data zone of each placement slot.
    open: Vec<Option<u32>>,
    /// Zones without live data, reset after the next metadata sync.
    pending_reset: Vec<u32>,
    /// Set (needed bytes, zone capacity) when the metadata no longer fits:
    /// every later metadata sync fails with it.
    broken: Option<(u64, u64)>,
    /// Set when a device sync or a metadata write failed: what it should
    /// have made durable may be lost, so every later sync fails with it.
    poisoned: Option<String>,
    /// Removed files that open readers still hold, by id: their extents keep
    /// their zones until the last reader is dropped.
    zombies: HashMap<u64, Arc<FileMap>>,
    /// Counters since mount (the gauges of `ZoneFsStats` are filled in by
    /// `stats`).
    counters: ZoneFsStats,
}

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

/// What the lock of a placement slot guards: its holder alone writes to the
/// slot's open zone.
struct Slot {
    index: usize,
}

/// A held slot lock: the proof a function that writes to a slot asks for.
type SlotGuard<'a> = MutexGuard<'a, Slot>;

/// What the metadata log's lock guards: its holder alone writes, syncs and
/// rolls the log.
struct LogToken;

/// A held metadata log lock.
type LogGuard<'a> = MutexGuard<'a, LogToken>;

/// A metadata write prepared under `state`, done by the log's holder.
enum LogWrite {
    /// Records appended at the log's write pointer.
    Append { at: u64, buf: Vec<u8> },
    /// A roll: superblock and snapshot into metadata zone `next`.
    Roll { old: u32, next: u32, buf: Vec<u8> },
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

/// Number of placement slots for a device: one per lifetime class, at most
/// the open/active limit minus one (the metadata zone).
fn slot_count(dev: &dyn ZonedDevice) -> usize {
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
fn slot_of(lifetime: u8, slots: usize) -> usize {
    match lifetime {
        1 => 0,
        0 => 1.min(slots - 1),
        l => (l as usize).min(slots - 1),
    }
}

fn path_key(path: &Path) -> io::Result<String> {
    let s = path.to_str().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not UTF-8", path.display()),
        )
    })?;
    let trimmed = s.trim_end_matches('/');
    let s = if trimmed.is_empty() && s.starts_with('/') {
        "/"
    } else {
        trimmed
    };
    if s.len() > 4096 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "path too long"));
    }
    Ok(s.to_string())
}

fn parent_of(key: &str) -> &str {
    match key.rfind('/') {
        Some(0) => "/",
        Some(i) => &key[..i],
        None => "",
    }
}

fn not_found(key: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{key}: no such file"))
}

impl ZoneInfo {
    /// What a mount knows of a zone from the device's report.
    fn of(z: &crate::device::Zone) -> ZoneInfo {
        ZoneInfo {
            refs: 0,
            used: z.condition != ZoneCondition::Empty,
            unusable: matches!(
                z.condition,
                ZoneCondition::Offline | ZoneCondition::ReadOnly | ZoneCondition::NotWritePointer
            ),
            wp: z.write_pointer.saturating_sub(z.start).min(z.capacity),
            capacity: z.capacity,
            resetting: false,
            resets: 0,
        }
    }
}

impl State {
    /// A state without files or directories, for a mount to replay into.
    fn new(
        meta_zones: u32,
        uuid: [u8; 16],
        sequence: u64,
        zones: Vec<ZoneInfo>,
        slots: usize,
    ) -> State {
        State {
            meta_zones,
            uuid,
            sequence,
            active_meta: 0,
            meta_wp: 0,
            log_buf: Vec::new(),
            files: BTreeMap::new(),
            ids: HashMap::new(),
            next_id: 1,
            dirs: BTreeSet::new(),
            zones,
            open: vec![None; slots],
            pending_reset: Vec::new(),
            broken: None,
            poisoned: None,
            zombies: HashMap::new(),
            counters: ZoneFsStats::default(),
        }
    }

    fn release(&mut self, extents: &[Extent], live: bool) {
        for x in extents {
            let z = &mut self.zones[x.zone as usize];
            z.refs = z.refs.saturating_sub(1);
            if live
                && z.refs == 0
                && z.used
                && !self.open.contains(&Some(x.zone))
                && !self.pending_reset.contains(&x.zone)
            {
                self.pending_reset.push(x.zone);
            }
        }
    }

    /// Removes a file. Its extents are released now, or when the last of
    /// its open readers is dropped.
    fn drop_file(&mut self, name: &str, live: bool) -> bool {
        match self.files.remove(name) {
            Some(f) => {
                self.ids.remove(&f.id);
                if Arc::strong_count(&f.map) > 1 {
                    self.zombies.insert(f.id, f.map);
                } else {
                    self.release(&extents_of(&f.map), live);
                }
                true
            }
            None => false,
        }
    }

    fn file_by_id(&self, id: u64) -> Option<&FileEntry> {
        self.files.get(self.ids.get(&id)?)
    }

    fn apply_create(&mut self, id: u64, name: String, lifetime: u8, live: bool) {
        self.drop_file(&name, live);
        self.ids.insert(id, name.clone());
        self.next_id = self.next_id.max(id + 1);
        self.files.insert(
            name,
            FileEntry {
                id,
                size: 0,
                lifetime,
                map: map_of(&[]),
            },
        );
    }

    fn apply_extents(&mut self, id: u64, size: u64, extents: &[Extent]) -> bool {
        let Some(name) = self.ids.get(&id) else {
            return false;
        };
        let Some(f) = self.files.get_mut(name) else {
            return false;
        };
        f.size = size;
        let mut m = write_map(&f.map);
        let start = m.last().map_or(0, |(s, x)| s + x.len);
        m.extend(with_starts(start, extents));
        true
    }

    /// Replaces extent `old` of file `id` by `new` (the same bytes moved by
    /// the collector). False when the file or the extent is gone.
    fn apply_relocate(&mut self, id: u64, old: Extent, new: &[Extent]) -> bool {
        let Some(f) = self.file_by_id(id) else {
            return false;
        };
        let mut m = write_map(&f.map);
        let Some(i) = m.iter().position(|(_, x)| *x == old) else {
            return false;
        };
        let moved: Vec<(u64, Extent)> = with_starts(m[i].0, new).collect();
        m.splice(i..=i, moved);
        true
    }

    fn apply_rename(&mut self, from: &str, to: String, live: bool) -> bool {
        let Some(f) = self.files.remove(from) else {
            return false;
        };
        self.drop_file(&to, live);
        self.ids.insert(f.id, to.clone());
        self.files.insert(to, f);
        true
    }

    /// Applies one record body (replay). False for an unknown or malformed
    /// record: damage, which refuses the mount.
    fn apply_record(&mut self, body: &[u8]) -> bool {
        let mut d = Dec::new(body);
        let ok = (|| {
            match d.u8()? {
                format::KIND_CREATE => {
                    let id = d.u64()?;
                    let name = d.name()?;
                    let lt = d.u8()?;
                    // Ids are never reused: one held by a file is damage
                    // (two files would share one id's records).
                    if self.ids.contains_key(&id) {
                        return None;
                    }
                    self.apply_create(id, name, lt, false);
                }
                format::KIND_EXTENTS => {
                    let id = d.u64()?;
                    let size = d.u64()?;
                    let xs = self.extent_list(&mut d)?;
                    if self.apply_extents(id, size, &xs) {
                        self.add_refs(&xs);
                    }
                }
                format::KIND_DELETE => {
                    let name = d.name()?;
                    self.drop_file(&name, false);
                }
                format::KIND_RENAME => {
                    let from = d.name()?;
                    let to = d.name()?;
                    self.apply_rename(&from, to, false);
                }
                format::KIND_MKDIR => {
                    self.dirs.insert(d.name()?);
                }
                format::KIND_RELOCATE => {
                    let id = d.u64()?;
                    let old = d.extent()?;
                    let xs = self.extent_list(&mut d)?;
                    if self.apply_relocate(id, old, &xs) {
                        self.add_refs(&xs);
                        self.release(&[old], false);
                    }
                }
                _ => return None,
            }
            Some(())
        })();
        ok.is_some() && d.done()
    }

    /// `n u32 extent{n}`, each checked.
    fn extent_list(&self, d: &mut Dec<'_>) -> Option<Vec<Extent>> {
        (0..d.u32()?)
            .map(|_| self.check_extent(d.extent()?))
            .collect()
    }

    fn add_refs(&mut self, extents: &[Extent]) {
        for x in extents {
            self.zones[x.zone as usize].refs += 1;
        }
    }

    fn check_extent(&self, x: Extent) -> Option<Extent> {
        let z = self.zones.get(x.zone as usize)?;
        (x.zone >= self.meta_zones && x.offset.checked_add(x.len)? <= z.capacity).then_some(x)
    }

    fn snapshot(&self) -> Vec<u8> {
        let mut e = Enc::default();
        e.u8(format::KIND_SNAPSHOT);
        e.u64(self.next_id);
        e.u32(self.dirs.len() as u32);
        for d in &self.dirs {
            e.name(d);
        }
        e.u32(self.files.len() as u32);
        for (name, f) in &self.files {
            e.u64(f.id);
            e.name(name);
            e.u64(f.size);
            e.u8(f.lifetime);
            let m = read_map(&f.map);
            e.u32(m.len() as u32);
            for (_, x) in m.iter() {
                e.extent(x);
            }
        }
        e.0
    }

    fn load_snapshot(&mut self, body: &[u8]) -> bool {
        let mut d = Dec::new(body);
        let ok = (|| {
            if d.u8()? != format::KIND_SNAPSHOT {
                return None;
            }
            self.next_id = d.u64()?;
            for _ in 0..d.u32()? {
                self.dirs.insert(d.name()?);
            }
            for _ in 0..d.u32()? {
                let id = d.u64()?;
                let name = d.name()?;
                let size = d.u64()?;
                let lifetime = d.u8()?;
                let n = d.u32()?;
                // One file per id and per name (found by the fuzzer: a
                // duplicate left a file its records could not reach).
                if self.ids.contains_key(&id) || self.files.contains_key(&name) {
                    return None;
                }
                let mut extents = Vec::new();
                for _ in 0..n {
                    let x = self.check_extent(d.extent()?)?;
                    self.zones[x.zone as usize].refs += 1;
                    extents.push(x);
                }
                self.ids.insert(id, name.clone());
                self.files.insert(
                    name,
                    FileEntry {
                        id,
                        size,
                        lifetime,
                        map: map_of(&extents),
                    },
                );
            }
            Some(())
        })();
        ok.is_some() && d.done()
    }

    fn push_record(&mut self, body: &[u8], block: usize) {
        push_frame(&mut self.log_buf, body, block);
    }

    /// Empty data zones that allocation may take.
    fn free_zones(&self) -> usize {
        self.zones[self.meta_zones as usize..]
            .iter()
            .filter(|z| !z.used && !z.unusable)
            .count()
    }

    fn data_zones(&self) -> usize {
        self.zones.len() - self.meta_zones as usize
    }

    /// The error every sync returns once the metadata no longer fits or a
    /// sync failed.
    fn usable(&self) -> FsResult<()> {
        if let Some((needed, capacity)) = self.broken {
            return Err(ZoneFsError::MetadataFull { needed, capacity });
        }
        if let Some(why) = &self.poisoned {
            return Err(ZoneFsError::Device(ZonedError::io(
                "zone file system",
                io::Error::other(format!(
                    "an earlier sync failed ({why}); nothing more is made durable until it is \
                     mounted again"
                )),
            )));
        }
        Ok(())
    }

    /// Records a failed sync or metadata write (see [`State::usable`]).
    fn poison(&mut self, e: &ZoneFsError) {
        if self.poisoned.is_none() {
            self.poisoned = Some(e.to_string());
        }
    }
}

impl Inner {
    fn zone_start(&self, zone: u32) -> u64 {
        u64::from(zone) * self.zone_size
    }

    /// The superblock and snapshot of the next roll of the log, into the
    /// next metadata zone (under `state`). Drops `log_buf`: the snapshot
    /// holds its effects. Sets `broken` when the snapshot does not fit.
    fn roll_image(&self, st: &mut State) -> FsResult<(u32, Vec<u8>)> {
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
    fn roll_write(&self, old: u32, next: u32, buf: &[u8]) -> FsResult<bool> {
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
    fn roll_done(&self, st: &mut State, next: u32, len: u64, finished_old: bool) {
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
    fn log_sync(&self) -> FsResult<()> {
        self.log_sync_resets().map(drop)
    }

    /// [`Inner::log_sync`], returning the zones it reset.
    fn log_sync_resets(&self) -> FsResult<Vec<u32>> {
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
    fn write_log(&self, _log: &LogGuard<'_>, write: Option<LogWrite>) -> FsResult<()> {
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
    fn reset_zones(&self, _log: &LogGuard<'_>, zones: Vec<u32>) -> FsResult<Vec<u32>> {
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

    /// Finishes the slot's open zone when less than the finish threshold of
    /// it is left (a file is about to start in it).
    fn finish_if_nearly_full(&self, slot: &SlotGuard<'_>) -> FsResult<()> {
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
    fn low_water(&self, st: &State) -> usize {
        let pct = st.data_zones() * self.gc.low_water_percent as usize;
        pct.div_ceil(100).max(self.gc.reserve_zones as usize + 1)
    }

    /// The open zone of the slot with room, taking an empty zone if needed:
    /// `(zone, write pointer, capacity)`. Host writes (`gc` false) never
    /// take the last `reserve_zones` empty zones: `DeviceFull` then means
    /// "collect garbage and try again". Syncs the log (to reset the zones
    /// waiting for it) when that frees one; the caller holds no `state`.
    fn alloc(&self, slot: &SlotGuard<'_>, gc: bool) -> FsResult<(u32, u64, u64)> {
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
            if attempt == 0 && !st.pending_reset.is_empty() {
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
    fn write_blocks(
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

    fn create(&self, path: &Path, hint: WriteLifetime, exclusive: bool) -> io::Result<Writer> {
        self.inner.writable()?;
        let key = path_key(path)?;
        let mut st = lock(&self.inner.state);
        st.usable()?;
        if exclusive && st.files.contains_key(&key) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{key}: exists"),
            ));
        }
        let id = st.next_id;
        let lt = lifetime_code(hint);
        st.apply_create(id, key.clone(), lt, true);
        let mut e = Enc::default();
        e.u8(format::KIND_CREATE);
        e.u64(id);
        e.name(&key);
        e.u8(lt);
        st.push_record(&e.0, self.inner.block as usize);
        let slots = st.open.len();
        Ok(Writer {
            inner: self.inner.clone(),
            id,
            lifetime: lt,
            slot: slot_of(lt, slots),
            buf: Vec::new(),
            len: 0,
            recorded: 0,
            pending: Vec::new(),
            started: false,
            failed: false,
        })
    }
}

/// The write side shared by append files and objects.
struct Writer {
    inner: Arc<Inner>,
    id: u64,
    lifetime: u8,
    slot: usize,
    buf: Vec<u8>,
    len: u64,
    /// The size last recorded in the metadata.
    recorded: u64,
    /// Extents written but not recorded in the metadata yet.
    pending: Vec<Extent>,
    /// A device write failed: buffered bytes may be lost, so every later
    /// write and sync fails rather than record a size its extents lack.
    failed: bool,
    /// The file's first bytes went to the device (where the finish
    /// threshold is applied).
    started: bool,
}

/// Buffered bytes above which whole blocks are written out.
const WRITE_CHUNK: usize = 64 << 10;

impl Writer {
    fn check(&self) -> io::Result<()> {
        if self.failed {
            return Err(io::Error::other(
                "an earlier write of this file failed; it cannot be written or synced",
            ));
        }
        Ok(())
    }

    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        self.check()?;
        self.buf.extend_from_slice(data);
        self.len += data.len() as u64;
        if self.buf.len() >= WRITE_CHUNK {
            self.write_out(false)?;
        }
        Ok(())
    }

    /// Writes the whole blocks of the buffer (and the padded tail if `all`).
    fn write_out(&mut self, all: bool) -> io::Result<()> {
        let block = self.inner.block as usize;
        let whole = self.buf.len() / block * block;
        let (n, pad) = if all && whole < self.buf.len() {
            let n = whole + block;
            (n, n - self.buf.len())
        } else {
            (whole, 0)
        };
        if n == 0 {
            return Ok(());
        }
        let mut data = std::mem::take(&mut self.buf);
        let rest = if pad == 0 {
            data.split_off(n)
        } else {
            Vec::new()
        };
        data.resize(n, 0);
        let mut done = 0;
        let mut slot = lock(&self.inner.slots[self.slot]);
        if !self.started {
            self.started = true;
            if let Err(e) = self.inner.finish_if_nearly_full(&slot) {
                self.failed = true;
                return Err(e.into());
            }
        }
        let r = loop {
            let r = self.inner.write_blocks(
                &slot,
                self.lifetime,
                false,
                &data,
                pad,
                &mut self.pending,
                &mut done,
            );
            if !matches!(r, Err(ZoneFsError::DeviceFull)) {
                break r;
            }
            // No zone for host writes: wait for (or run) a collection
            // round, and go on if it left more than the reserve free. The
            // slot lock comes after `gc_lock` in the lock order: dropped.
            drop(slot);
            let target = self.inner.low_water(&lock(&self.inner.state));
            let collected = self.inner.collect(target);
            slot = lock(&self.inner.slots[self.slot]);
            let free = lock(&self.inner.state).free_zones();
            match collected {
                Ok(_) if free > self.inner.gc.reserve_zones as usize => {}
                Ok(_) => break r,
                Err(e) => break Err(e),
            }
        };
        drop(slot);
        self.buf = rest;
        if r.is_err() {
            self.failed = true;
        }
        r.map_err(io::Error::from)
    }

    /// Data, device sync, extents record, device sync.
    fn sync(&mut self) -> io::Result<()> {
        self.check()?;
        self.write_out(true)?;
        if !self.pending.is_empty() || self.recorded != self.len {
            // No lock held: other files' writes and syncs go on meanwhile.
            if let Err(e) = self.inner.dev.sync() {
                let e = ZoneFsError::from(e);
                lock(&self.inner.state).poison(&e);
                self.failed = true;
                return Err(e.into());
            }
            let mut st = lock(&self.inner.state);
            let xs = std::mem::take(&mut self.pending);
            if st.apply_extents(self.id, self.len, &xs) {
                let mut e = Enc::default();
                e.u8(format::KIND_EXTENTS);
                e.u64(self.id);
                e.u64(self.len);
                e.u32(xs.len() as u32);
                for x in &xs {
                    e.extent(x);
                }
                st.push_record(&e.0, self.inner.block as usize);
                self.recorded = self.len;
            } else {
                st.release(&xs, true);
            }
        }
        self.inner.log_sync().map_err(io::Error::from)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if !self.pending.is_empty() {
            let xs = std::mem::take(&mut self.pending);
            lock(&self.inner.state).release(&xs, true);
        }
    }
}

impl AppendFile for Writer {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.write(data)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        Writer::sync(self)
    }
    fn len(&self) -> u64 {
        self.len
    }
}

impl ObjectWriter for Writer {
    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        Writer::write(self, data)
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn finish(mut self: Box<Self>) -> io::Result<()> {
        Writer::sync(&mut self)
    }
    fn abort(mut self: Box<Self>) -> io::Result<()> {
        let xs = std::mem::take(&mut self.pending);
        let mut st = lock(&self.inner.state);
        st.release(&xs, true);
        if let Some(name) = st.ids.get(&self.id).cloned() {
            st.drop_file(&name, true);
            let mut e = Enc::default();
            e.u8(format::KIND_DELETE);
            e.name(&name);
            st.push_record(&e.0, self.inner.block as usize);
        }
        Ok(())
    }
}

/// A file opened for reads, with the file's size as of the open. It shares
/// the file's extent map, so it reads moved extents where the collector put
/// them; a file removed while open stays readable (its zones are reset only
/// after the last reader is dropped), as on a POSIX file system.
struct Reader {
    inner: Arc<Inner>,
    id: u64,
    /// The file's extent map, shared with its entry (taken out in `drop`,
    /// under the state lock).
    map: Option<Arc<FileMap>>,
    size: u64,
}

impl RandomAccessFile for Reader {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.size)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "read of {} bytes at {offset} past the end of a {}-byte file",
                        buf.len(),
                        self.size
                    ),
                )
            })?;
        let Some(map) = &self.map else {
            return Err(io::Error::other("file handle closed"));
        };
        // Held across the device reads: the collector cannot reset a zone
        // this read is in (it swaps extents under the write lock first).
        let extents = read_map(map);
        let mut pos = offset;
        let mut i = extents.partition_point(|(start, x)| start + x.len <= pos);
        while pos < end {
            let Some(&(start, x)) = extents.get(i) else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "file extents end before its size",
                ));
            };
            let within = pos - start;
            let n = (x.len - within).min(end - pos);
            let dst = &mut buf[(pos - offset) as usize..(pos - offset + n) as usize];
            self.inner
                .dev
                .read_at(self.inner.zone_start(x.zone) + x.offset + within, dst)
                .map_err(io::Error::from)?;
            pos += n;
            i += 1;
        }
        Ok(())
    }
    fn size(&self) -> u64 {
        self.size
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let mut st = lock(&self.inner.state);
        drop(self.map.take());
        // The last reader of a removed file releases its extents.
        if st
            .zombies
            .get(&self.id)
            .is_some_and(|m| Arc::strong_count(m) == 1)
        {
            if let Some(m) = st.zombies.remove(&self.id) {
                st.release(&extents_of(&m), true);
            }
        }
    }
}

struct ZLock {
    inner: Arc<Inner>,
    key: String,
}

impl FileLock for ZLock {}

impl Drop for ZLock {
    fn drop(&mut self) {
        let mut locks = lock(&self.inner.locks);
        if let Some(n) = locks.get_mut(&self.key) {
            // usize::MAX marks the exclusive holder.
            if *n == usize::MAX || *n <= 1 {
                locks.remove(&self.key);
            } else {
                *n -= 1;
            }
        }
    }
}

impl ZoneFs {
    fn take_lock(&self, path: &Path, exclusive: bool) -> io::Result<Box<dyn FileLock>> {
        let key = path_key(path)?;
        {
            let mut locks = lock(&self.inner.locks);
            let held = locks.get(&key).copied().unwrap_or(0);
            let busy = if exclusive {
                held != 0
            } else {
                held == usize::MAX
            };
            if busy {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!("{key}: locked"),
                ));
            }
            locks.insert(key.clone(), if exclusive { usize::MAX } else { held + 1 });
        }
        let exists = lock(&self.inner.state).files.contains_key(&key);
        if !exists {
            // The lock file exists as an empty file, as on a POSIX system.
            if let Err(e) = self.create(path, WriteLifetime::NotSet, false) {
                drop(ZLock {
                    inner: self.inner.clone(),
                    key,
                });
                return Err(e);
            }
        }
        Ok(Box::new(ZLock {
            inner: self.inner.clone(),
            key,
        }))
    }
}

impl FileSystem for ZoneFs {
    fn create_append(&self, path: &Path, hint: WriteLifetime) -> io::Result<Box<dyn AppendFile>> {
        Ok(Box::new(self.create(path, hint, false)?))
    }

    fn create_object(&self, path: &Path, hint: WriteLifetime) -> io::Result<Box<dyn ObjectWriter>> {
        Ok(Box::new(self.create(path, hint, true)?))
    }

    fn open_random(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        let key = path_key(path)?;
        let st = lock(&self.inner.state);
        let f = st.files.get(&key).ok_or_else(|| not_found(&key))?;
        let mapped = read_map(&f.map).last().map_or(0, |(s, x)| s + x.len);
        Ok(Arc::new(Reader {
            inner: self.inner.clone(),
            id: f.id,
            map: Some(f.map.clone()),
            size: f.size.min(mapped),
        }))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let key = path_key(dir)?;
        let st = lock(&self.inner.state);
        let mut out = BTreeSet::new();
        let mut found = st.dirs.contains(&key);
        for name in st.files.keys().chain(st.dirs.iter()) {
            if parent_of(name) == key && name != &key {
                found = true;
                let base = name.rsplit('/').next().unwrap_or(name);
                out.insert(base.to_string());
            }
        }
        if !found {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{key}: no such directory"),
            ));
        }
        Ok(out.into_iter().collect())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.writable()?;
        let (f, t) = (path_key(from)?, path_key(to)?);
        let mut st = lock(&self.inner.state);
        if !st.apply_rename(&f, t.clone(), true) {
            return Err(not_found(&f));
        }
        let mut e = Enc::default();
        e.u8(format::KIND_RENAME);
        e.name(&f);
        e.name(&t);
        st.push_record(&e.0, self.inner.block as usize);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.writable()?;
        let key = path_key(path)?;
        let mut st = lock(&self.inner.state);
        if !st.drop_file(&key, true) {
            return Err(not_found(&key));
        }
        let mut e = Enc::default();
        e.u8(format::KIND_DELETE);
        e.name(&key);
        st.push_record(&e.0, self.inner.block as usize);
        Ok(())
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let key = path_key(dir)?;
        let mut st = lock(&self.inner.state);
        if !st.dirs.contains(&key) && key != "/" && !key.is_empty() {
            self.inner.writable()?;
        }
        let mut cur = key.as_str();
        while !cur.is_empty() && cur != "/" && !st.dirs.contains(cur) {
            st.dirs.insert(cur.to_string());
            let mut e = Enc::default();
            e.u8(format::KIND_MKDIR);
            e.name(cur);
            st.push_record(&e.0, self.inner.block as usize);
            cur = parent_of(cur);
        }
        Ok(())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let key = path_key(path)?;
        let st = lock(&self.inner.state);
        Ok(key.is_empty() || key == "/" || st.files.contains_key(&key) || st.dirs.contains(&key))
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        let key = path_key(path)?;
        let st = lock(&self.inner.state);
        st.files
            .get(&key)
            .map(|f| f.size)
            .ok_or_else(|| not_found(&key))
    }

    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        self.sync_metadata()
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        self.take_lock(path, true)
    }

    fn lock_shared(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        self.take_lock(path, false)
    }
}
