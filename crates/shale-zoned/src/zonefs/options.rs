//! The options of formatting and mounting a [`ZoneFs`](super::ZoneFs).

use std::time::Duration;

/// Most metadata zones a file system may have.
pub const MAX_META_ZONES: u32 = 16;

/// Options of [`ZoneFs::format`](super::ZoneFs::format).
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

/// Options of [`ZoneFs::mount_with`](super::ZoneFs::mount_with) (not persisted: each mount chooses).
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
    /// no free zone and in [`ZoneFs::collect_garbage`](super::ZoneFs::collect_garbage).
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
