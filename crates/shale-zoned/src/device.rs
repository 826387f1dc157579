//! The zoned block device model: zones, their conditions, the device's
//! geometry, typed errors and the [`ZonedDevice`] trait.
//!
//! The model is the Linux kernel's (`linux/blkzoned.h`), which is the NVMe
//! Zoned Namespace (ZNS) model seen through the block layer. All offsets and
//! sizes here are in **bytes** from the start of the device (the kernel counts
//! 512-byte sectors; [`crate::linux::LinuxZoned`] converts). The rules every
//! implementation enforces, as the kernel's `null_blk` zoned emulation and a
//! ZNS controller apply them:
//!
//! * A zone is written only **at its write pointer**, in multiples of the
//!   device's logical block size ([`ZonedGeometry::block_size`]); the write
//!   pointer then advances by the length written. A write must fit below the
//!   zone's *capacity* (`start + capacity`), which may be smaller than its size;
//!   the bytes between capacity and size are never writable.
//! * Writing to an **empty** or **closed** zone opens it *implicitly*. Open
//!   zones (implicitly plus explicitly open) are limited to
//!   [`ZonedGeometry::max_open_zones`]: when an implicit or explicit open would
//!   exceed it, the device first closes an implicitly open zone if there is one,
//!   else the operation fails with [`ZonedError::TooManyOpenZones`] (the
//!   kernel's `ETOOMANYREFS`).
//! * Active zones (open plus closed) are limited to
//!   [`ZonedGeometry::max_active_zones`]: making an empty zone active (a write,
//!   an explicit open or a finish) beyond it fails with
//!   [`ZonedError::TooManyActiveZones`] (the kernel's `EOVERFLOW`). A limit of
//!   0 means no limit, as in sysfs.
//! * A zone whose write pointer reaches its capacity becomes **full**.
//!   `finish` makes a zone full at once; `reset` makes it **empty** with its
//!   write pointer at its start; `close` turns an open zone **closed** (or
//!   empty if nothing was written); `open` makes it **explicitly open**.
//! * A full zone reports its write pointer at `start + size` (what the kernel's
//!   NVMe driver reports).
//! * Reads may be at any offset and length inside the device. Bytes at or
//!   above a zone's write pointer (or above the last byte written in a full
//!   zone) read as **zeros**, as `null_blk` and QEMU's NVMe ZNS namespace
//!   (without DULBE) return them; a read past the end of the device is
//!   [`ZonedError::OutOfRange`]. The emulator can be made strict
//!   ([`crate::EmulatedOptions::strict_reads`]) to fail such reads instead.
//! * Read-only zones refuse writes and zone operations; offline zones refuse
//!   everything, reads included.
//!
//! Which operation is valid in which condition (anything else is
//! [`ZonedError::InvalidState`]):
//!
//! | op \ condition | empty | imp. open | exp. open | closed | full | read-only | offline |
//! |---|---|---|---|---|---|---|---|
//! | write | implicit open | yes | yes | implicit open | no | no | no |
//! | open | exp. open | exp. open | no-op | exp. open | no | no | no |
//! | close | no | closed/empty | closed/empty | no-op | no | no | no |
//! | finish | full | full | full | full | no-op | no | no |
//! | reset | no-op | empty | empty | empty | empty | no | no |
//! | read | zeros | yes | yes | yes | yes | yes | no |

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Result of a zoned device operation.
pub type Result<T> = std::result::Result<T, ZonedError>;

/// The condition (state) of a zone.
///
/// **Frozen**: the numeric codes ([`ZoneCondition::code`]) are the kernel's
/// `enum blk_zone_cond` values and are persisted by the emulator's state file
/// (`docs/format/zoned-emulator.md`); a code never changes meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ZoneCondition {
    /// A conventional zone without a write pointer (`BLK_ZONE_COND_NOT_WP`,
    /// code 0). Some SMR disks have them; ZNS namespaces and the emulator never
    /// do. Every zone operation and write on it is refused.
    NotWritePointer,
    /// Nothing written, write pointer at the start, not active (code 1).
    Empty,
    /// Opened by a write (code 2); counts as open and active. The device may
    /// close it to open another zone.
    ImplicitOpen,
    /// Opened by [`ZonedDevice::open_zone`] (code 3); counts as open and active,
    /// and stays open until closed, finished, reset or filled.
    ExplicitOpen,
    /// Partly written and not open (code 4); counts as active.
    Closed,
    /// Read-only (code 0xD): readable, refuses writes and zone operations.
    ReadOnly,
    /// Full (code 0xE): write pointer at the end, not active.
    Full,
    /// Offline (code 0xF): neither readable nor writable.
    Offline,
}

impl ZoneCondition {
    /// The kernel's `BLK_ZONE_COND_*` value (frozen, also the persisted code).
    pub fn code(self) -> u8 {
        match self {
            ZoneCondition::NotWritePointer => 0x0,
            ZoneCondition::Empty => 0x1,
            ZoneCondition::ImplicitOpen => 0x2,
            ZoneCondition::ExplicitOpen => 0x3,
            ZoneCondition::Closed => 0x4,
            ZoneCondition::ReadOnly => 0xD,
            ZoneCondition::Full => 0xE,
            ZoneCondition::Offline => 0xF,
        }
    }

    /// The condition of a kernel code, `None` for a code the model does not know.
    pub fn from_code(code: u8) -> Option<ZoneCondition> {
        Some(match code {
            0x0 => ZoneCondition::NotWritePointer,
            0x1 => ZoneCondition::Empty,
            0x2 => ZoneCondition::ImplicitOpen,
            0x3 => ZoneCondition::ExplicitOpen,
            0x4 => ZoneCondition::Closed,
            0xD => ZoneCondition::ReadOnly,
            0xE => ZoneCondition::Full,
            0xF => ZoneCondition::Offline,
            _ => return None,
        })
    }

    /// Open, implicitly or explicitly.
    pub fn is_open(self) -> bool {
        matches!(
            self,
            ZoneCondition::ImplicitOpen | ZoneCondition::ExplicitOpen
        )
    }

    /// Active: open or closed (holds one of the device's active resources).
    pub fn is_active(self) -> bool {
        self.is_open() || self == ZoneCondition::Closed
    }
}

impl fmt::Display for ZoneCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ZoneCondition::NotWritePointer => "conventional",
            ZoneCondition::Empty => "empty",
            ZoneCondition::ImplicitOpen => "implicitly open",
            ZoneCondition::ExplicitOpen => "explicitly open",
            ZoneCondition::Closed => "closed",
            ZoneCondition::ReadOnly => "read-only",
            ZoneCondition::Full => "full",
            ZoneCondition::Offline => "offline",
        })
    }
}

/// One zone as reported by [`ZonedDevice::report_zones`]. Offsets are device
/// bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zone {
    /// Index of the zone (its start divided by the zone size).
    pub index: u32,
    /// First byte of the zone.
    pub start: u64,
    /// Size of the zone in bytes (the stride between zone starts).
    pub size: u64,
    /// Writable bytes from the start (`<= size`).
    pub capacity: u64,
    /// Where the next write must go: `start` when empty, `start + size` when
    /// full (a real device may report `start + capacity` for a zone filled by
    /// writes, as `null_blk` does), meaningless when offline or conventional.
    pub write_pointer: u64,
    /// The zone's condition.
    pub condition: ZoneCondition,
}

impl Zone {
    /// Bytes that can still be written before the zone is full.
    pub fn remaining(&self) -> u64 {
        match self.condition {
            ZoneCondition::Empty
            | ZoneCondition::ImplicitOpen
            | ZoneCondition::ExplicitOpen
            | ZoneCondition::Closed => {
                (self.start + self.capacity).saturating_sub(self.write_pointer)
            }
            _ => 0,
        }
    }
}

/// The shape and limits of a zoned device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZonedGeometry {
    /// Number of zones.
    pub nr_zones: u32,
    /// Size of every zone in bytes (a multiple of `block_size`).
    pub zone_size: u64,
    /// Writable bytes of every zone (`<= zone_size`, a multiple of
    /// `block_size`). On a real device each zone reports its own capacity
    /// ([`Zone::capacity`]); this is the smallest.
    pub zone_capacity: u64,
    /// Logical block size in bytes: the write granularity (every write's offset
    /// and length are multiples of it) and the `O_DIRECT` alignment.
    pub block_size: u32,
    /// Most zones open at once (implicitly plus explicitly); 0 = no limit.
    pub max_open_zones: u32,
    /// Most zones active at once (open plus closed); 0 = no limit.
    pub max_active_zones: u32,
}

impl ZonedGeometry {
    /// `nr_zones` zones of `zone_size` bytes, capacity equal to size, 4 KiB
    /// blocks and the limits of the project's QEMU ZNS namespace: 14 open and
    /// 14 active zones.
    pub fn new(nr_zones: u32, zone_size: u64) -> ZonedGeometry {
        ZonedGeometry {
            nr_zones,
            zone_size,
            zone_capacity: zone_size,
            block_size: 4096,
            max_open_zones: 14,
            max_active_zones: 14,
        }
    }

    /// Total size of the device in bytes.
    pub fn device_size(&self) -> u64 {
        u64::from(self.nr_zones) * self.zone_size
    }

    /// First byte of zone `index` (not checked against `nr_zones`).
    pub fn zone_start(&self, index: u32) -> u64 {
        u64::from(index) * self.zone_size
    }

    /// The zone holding device byte `offset`, `None` past the end.
    pub fn zone_of(&self, offset: u64) -> Option<u32> {
        if self.zone_size == 0 || offset >= self.device_size() {
            return None;
        }
        u32::try_from(offset / self.zone_size).ok()
    }

    /// The zone a write of `len` bytes at `offset` starts in, or
    /// [`ZonedError::OutOfRange`] if `offset` is past the end.
    pub fn write_zone(&self, offset: u64, len: u64) -> Result<u32> {
        self.zone_of(offset).ok_or(ZonedError::OutOfRange {
            offset,
            len,
            device_size: self.device_size(),
        })
    }

    /// The end of a read of `len` bytes at `offset`, or
    /// [`ZonedError::OutOfRange`] if it does not lie within the device.
    pub fn read_end(&self, offset: u64, len: u64) -> Result<u64> {
        offset
            .checked_add(len)
            .filter(|&end| end <= self.device_size())
            .ok_or(ZonedError::OutOfRange {
                offset,
                len,
                device_size: self.device_size(),
            })
    }

    /// Checks that the geometry is usable: at least one zone, sizes and
    /// capacity non-zero multiples of a power-of-two block size of at least 512
    /// bytes, capacity within the size.
    pub fn validate(&self) -> Result<()> {
        let bad = |reason: String| Err(ZonedError::InvalidGeometry { reason });
        let block = u64::from(self.block_size);
        if self.nr_zones == 0 {
            return bad("no zones".into());
        }
        if !self.block_size.is_power_of_two() || self.block_size < 512 {
            return bad(format!(
                "block size {} is not a power of two of at least 512",
                self.block_size
            ));
        }
        if self.zone_size == 0 || !self.zone_size.is_multiple_of(block) {
            return bad(format!(
                "zone size {} is not a non-zero multiple of the block size {block}",
                self.zone_size
            ));
        }
        if self.zone_capacity == 0
            || !self.zone_capacity.is_multiple_of(block)
            || self.zone_capacity > self.zone_size
        {
            return bad(format!(
                "zone capacity {} is not a non-zero multiple of the block size {block} \
                 within the zone size {}",
                self.zone_capacity, self.zone_size
            ));
        }
        if self
            .zone_size
            .checked_mul(u64::from(self.nr_zones))
            .is_none()
        {
            return bad("device size overflows 64 bits".into());
        }
        Ok(())
    }
}

impl fmt::Display for ZonedGeometry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let limit = |n: u32| {
            if n == 0 {
                "unlimited".to_string()
            } else {
                n.to_string()
            }
        };
        write!(
            f,
            "{} zones of {} bytes (capacity {}), {}-byte blocks, max open {}, max active {}",
            self.nr_zones,
            self.zone_size,
            self.zone_capacity,
            self.block_size,
            limit(self.max_open_zones),
            limit(self.max_active_zones)
        )
    }
}

/// A zone operation, named in [`ZonedError::InvalidState`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneOp {
    /// A write (or append) at the write pointer.
    Write,
    /// A read.
    Read,
    /// An explicit open.
    Open,
    /// A close.
    Close,
    /// A finish.
    Finish,
    /// A reset.
    Reset,
}

impl fmt::Display for ZoneOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ZoneOp::Write => "write",
            ZoneOp::Read => "read",
            ZoneOp::Open => "open",
            ZoneOp::Close => "close",
            ZoneOp::Finish => "finish",
            ZoneOp::Reset => "reset",
        })
    }
}

/// Every way a zoned device operation can fail.
///
/// Converts into [`io::Error`] (the `ZonedError` stays inside, reachable with
/// `get_ref()` and `downcast_ref`) with these kinds: bad arguments
/// `InvalidInput`; writing to a full zone or past the capacity `StorageFull`;
/// a read-only zone `ReadOnlyFilesystem`; the open and active limits
/// `ResourceBusy`; a strict read above the write pointer `UnexpectedEof`;
/// files that are not devices or are damaged `InvalidData`; a path that is not
/// a zoned block device `Unsupported`; system call failures their own kind.
/// [`ZonedError::errno`] gives the errno the kernel uses for the same failure.
#[derive(Debug)]
#[non_exhaustive]
pub enum ZonedError {
    /// A zone index at or past the number of zones.
    NoSuchZone {
        /// The index asked for.
        zone: u32,
        /// The device's number of zones.
        nr_zones: u32,
    },
    /// A byte range that does not lie inside the device.
    OutOfRange {
        /// First byte asked for.
        offset: u64,
        /// Length asked for.
        len: u64,
        /// The device's size.
        device_size: u64,
    },
    /// A write whose offset or length is not a multiple of the block size.
    Unaligned {
        /// Offset of the write.
        offset: u64,
        /// Length of the write.
        len: u64,
        /// The device's block size.
        block_size: u32,
    },
    /// A write that does not start at its zone's write pointer.
    NotAtWritePointer {
        /// The zone written.
        zone: u32,
        /// Where the write was asked to start.
        offset: u64,
        /// Where the zone's write pointer is.
        write_pointer: u64,
    },
    /// A write that would end past its zone's capacity (including writes that
    /// would cross into the next zone).
    BeyondCapacity {
        /// The zone written.
        zone: u32,
        /// Where the write starts.
        offset: u64,
        /// Its length.
        len: u64,
        /// The first byte past the zone's capacity.
        capacity_end: u64,
    },
    /// An operation the zone's condition does not allow (see the table in the
    /// module documentation): writing to a full, read-only or offline zone,
    /// opening a full zone, closing an empty one, reading an offline one...
    InvalidState {
        /// The zone.
        zone: u32,
        /// Its condition.
        condition: ZoneCondition,
        /// The operation refused.
        op: ZoneOp,
    },
    /// Opening `zone` (implicitly or explicitly) would exceed the open-zone
    /// limit and no implicitly open zone could be closed (kernel:
    /// `ETOOMANYREFS`).
    TooManyOpenZones {
        /// The zone that could not be opened.
        zone: u32,
        /// The device's limit.
        max_open: u32,
    },
    /// Making `zone` active would exceed the active-zone limit (kernel:
    /// `EOVERFLOW`).
    TooManyActiveZones {
        /// The zone that could not become active.
        zone: u32,
        /// The device's limit.
        max_active: u32,
    },
    /// A read at or above the write pointer on a device in strict-read mode.
    ReadBeyondWritePointer {
        /// The zone read.
        zone: u32,
        /// First byte asked for.
        offset: u64,
        /// The zone's write pointer (or end of written data when full).
        write_pointer: u64,
    },
    /// The geometry asked for is not usable.
    InvalidGeometry {
        /// What is wrong with it.
        reason: String,
    },
    /// An emulated device exists at the path with another geometry.
    GeometryMismatch {
        /// The device's data file.
        path: PathBuf,
        /// The geometry it has.
        existing: ZonedGeometry,
        /// The geometry asked for.
        requested: ZonedGeometry,
    },
    /// The file is not an emulated zoned device (no or foreign state file,
    /// wrong magic, unknown version, data file of the wrong size).
    NotEmulatedDevice {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The emulator's state file has the right magic but is damaged (checksum
    /// or field values).
    Corrupt {
        /// The state file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The path is not a zoned block device (not a block device, or
    /// `BLKGETZONESZ` reports 0 or is not supported).
    NotZonedDevice {
        /// The path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A system call failed.
    Io {
        /// What was being done, with the path and offset.
        context: String,
        /// The error.
        source: io::Error,
    },
}

impl ZonedError {
    /// An I/O error with its context.
    pub fn io(context: impl Into<String>, source: io::Error) -> ZonedError {
        ZonedError::Io {
            context: context.into(),
            source,
        }
    }

    /// The errno the Linux kernel returns for the same failure.
    pub fn errno(&self) -> i32 {
        match self {
            ZonedError::NoSuchZone { .. }
            | ZonedError::OutOfRange { .. }
            | ZonedError::Unaligned { .. }
            | ZonedError::InvalidGeometry { .. }
            | ZonedError::GeometryMismatch { .. } => libc::EINVAL,
            ZonedError::NotAtWritePointer { .. } | ZonedError::InvalidState { .. } => libc::EIO,
            ZonedError::BeyondCapacity { .. } => libc::ENOSPC,
            ZonedError::TooManyOpenZones { .. } => libc::ETOOMANYREFS,
            ZonedError::TooManyActiveZones { .. } => libc::EOVERFLOW,
            ZonedError::ReadBeyondWritePointer { .. } => libc::EIO,
            ZonedError::NotEmulatedDevice { .. } | ZonedError::Corrupt { .. } => libc::EUCLEAN,
            ZonedError::NotZonedDevice { .. } => libc::ENOTTY,
            ZonedError::Io { source, .. } => source.raw_os_error().unwrap_or(libc::EIO),
        }
    }

    /// The [`io::ErrorKind`] of the error (see the type's documentation).
    pub fn kind(&self) -> io::ErrorKind {
        match self {
            ZonedError::NoSuchZone { .. }
            | ZonedError::OutOfRange { .. }
            | ZonedError::Unaligned { .. }
            | ZonedError::NotAtWritePointer { .. }
            | ZonedError::InvalidGeometry { .. }
            | ZonedError::GeometryMismatch { .. } => io::ErrorKind::InvalidInput,
            ZonedError::BeyondCapacity { .. } => io::ErrorKind::StorageFull,
            ZonedError::InvalidState { condition, .. } => match condition {
                ZoneCondition::Full => io::ErrorKind::StorageFull,
                ZoneCondition::ReadOnly => io::ErrorKind::ReadOnlyFilesystem,
                _ => io::ErrorKind::InvalidInput,
            },
            ZonedError::TooManyOpenZones { .. } | ZonedError::TooManyActiveZones { .. } => {
                io::ErrorKind::ResourceBusy
            }
            ZonedError::ReadBeyondWritePointer { .. } => io::ErrorKind::UnexpectedEof,
            ZonedError::NotEmulatedDevice { .. } | ZonedError::Corrupt { .. } => {
                io::ErrorKind::InvalidData
            }
            ZonedError::NotZonedDevice { .. } => io::ErrorKind::Unsupported,
            ZonedError::Io { source, .. } => source.kind(),
        }
    }
}

impl fmt::Display for ZonedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZonedError::NoSuchZone { zone, nr_zones } => {
                write!(f, "no zone {zone}: the device has {nr_zones} zones")
            }
            ZonedError::OutOfRange {
                offset,
                len,
                device_size,
            } => write!(
                f,
                "{len} bytes at offset {offset} lie outside the device of {device_size} bytes"
            ),
            ZonedError::Unaligned {
                offset,
                len,
                block_size,
            } => write!(
                f,
                "write of {len} bytes at offset {offset} is not aligned to the block size {block_size}"
            ),
            ZonedError::NotAtWritePointer {
                zone,
                offset,
                write_pointer,
            } => write!(
                f,
                "zone {zone}: write at offset {offset}, not at the write pointer {write_pointer}"
            ),
            ZonedError::BeyondCapacity {
                zone,
                offset,
                len,
                capacity_end,
            } => write!(
                f,
                "zone {zone}: write of {len} bytes at offset {offset} ends past the zone's capacity (end {capacity_end})"
            ),
            ZonedError::InvalidState {
                zone,
                condition,
                op,
            } => write!(f, "zone {zone}: cannot {op} a zone that is {condition}"),
            ZonedError::TooManyOpenZones { zone, max_open } => write!(
                f,
                "zone {zone}: cannot open: {max_open} zones are open and none can be closed implicitly"
            ),
            ZonedError::TooManyActiveZones { zone, max_active } => write!(
                f,
                "zone {zone}: cannot activate: {max_active} zones are active (open or closed)"
            ),
            ZonedError::ReadBeyondWritePointer {
                zone,
                offset,
                write_pointer,
            } => write!(
                f,
                "zone {zone}: read at offset {offset} reaches past the written data (write pointer {write_pointer})"
            ),
            ZonedError::InvalidGeometry { reason } => write!(f, "invalid zoned geometry: {reason}"),
            ZonedError::GeometryMismatch {
                path,
                existing,
                requested,
            } => write!(
                f,
                "{}: an emulated zoned device of another geometry exists ({existing}; asked for {requested})",
                path.display()
            ),
            ZonedError::NotEmulatedDevice { path, reason } => write!(
                f,
                "{}: not an emulated zoned device: {reason}",
                path.display()
            ),
            ZonedError::Corrupt { path, reason } => {
                write!(f, "{}: damaged zone state: {reason}", path.display())
            }
            ZonedError::NotZonedDevice { path, reason } => {
                write!(f, "{}: not a zoned block device: {reason}", path.display())
            }
            ZonedError::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for ZonedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ZonedError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<ZonedError> for io::Error {
    fn from(e: ZonedError) -> io::Error {
        io::Error::new(e.kind(), e)
    }
}

/// Write and zone-operation counts of one zone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneStats {
    /// Bytes written to the zone.
    pub bytes_written: u64,
    /// Resets of the zone that changed it (a reset of an empty zone is not
    /// counted).
    pub resets: u64,
    /// Finishes of the zone that changed it (a finish of a full zone is not
    /// counted).
    pub finishes: u64,
}

/// A snapshot of a device's write counters, for write-amplification figures.
///
/// The emulator's counters are lifetime totals persisted with the zone state
/// (as of the last sync after a crash); [`crate::linux::LinuxZoned`] counts
/// from when it was opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZonedStats {
    /// Bytes written to the device.
    pub bytes_written: u64,
    /// Zone resets.
    pub resets: u64,
    /// Zone finishes.
    pub finishes: u64,
    /// The same per zone, indexed by zone.
    pub zones: Vec<ZoneStats>,
}

impl ZonedStats {
    /// Totals from per-zone counters.
    pub fn from_zones(zones: Vec<ZoneStats>) -> ZonedStats {
        let mut s = ZonedStats {
            zones,
            ..ZonedStats::default()
        };
        for z in &s.zones {
            s.bytes_written += z.bytes_written;
            s.resets += z.resets;
            s.finishes += z.finishes;
        }
        s
    }

    /// The counts since `earlier` (a snapshot of the same device), zone by zone.
    pub fn since(&self, earlier: &ZonedStats) -> ZonedStats {
        let zones = self
            .zones
            .iter()
            .enumerate()
            .map(|(i, z)| {
                let e = earlier.zones.get(i).copied().unwrap_or_default();
                ZoneStats {
                    bytes_written: z.bytes_written.saturating_sub(e.bytes_written),
                    resets: z.resets.saturating_sub(e.resets),
                    finishes: z.finishes.saturating_sub(e.finishes),
                }
            })
            .collect();
        ZonedStats::from_zones(zones)
    }
}

/// A zoned block device.
///
/// Shared between threads: every method takes `&self`. Writes to one zone are
/// serialized by the caller's protocol (a zone has one write pointer);
/// implementations keep their own state consistent under concurrent calls.
pub trait ZonedDevice: Send + Sync {
    /// The device's geometry (constant while it is open).
    fn geometry(&self) -> ZonedGeometry;

    /// The zones `first..first + count` (clamped to the device's last zone).
    /// `first` past the last zone is [`ZonedError::NoSuchZone`].
    fn report_zones(&self, first: u32, count: u32) -> Result<Vec<Zone>>;

    /// Every zone.
    fn report_all(&self) -> Result<Vec<Zone>> {
        self.report_zones(0, self.geometry().nr_zones)
    }

    /// One zone.
    fn zone(&self, index: u32) -> Result<Zone> {
        self.report_zones(index, 1)?
            .into_iter()
            .next()
            .ok_or(ZonedError::NoSuchZone {
                zone: index,
                nr_zones: self.geometry().nr_zones,
            })
    }

    /// Opens a zone explicitly (see the module documentation for the limits).
    fn open_zone(&self, zone: u32) -> Result<()>;

    /// Closes an open zone: closed, or empty if nothing was written.
    fn close_zone(&self, zone: u32) -> Result<()>;

    /// Makes a zone full: its write pointer moves to the end.
    fn finish_zone(&self, zone: u32) -> Result<()>;

    /// Makes a zone empty, its write pointer at its start. Its data is gone.
    fn reset_zone(&self, zone: u32) -> Result<()>;

    /// Writes `data` at device offset `offset`, which must be the write pointer
    /// of its zone; `offset` and `data.len()` must be multiples of the block
    /// size and the write must end within the zone's capacity.
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()>;

    /// Writes `data` at the current write pointer of `zone` and returns the
    /// device offset it was written at (a zone append, done as a write at the
    /// write pointer). Same rules as [`ZonedDevice::write_at`].
    fn append(&self, zone: u32, data: &[u8]) -> Result<u64>;

    /// Fills `buf` with the bytes at device offset `offset` (any offset and
    /// length inside the device; bytes above a write pointer read as zeros).
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;

    /// Makes every write and zone operation done so far durable.
    fn sync(&self) -> Result<()>;

    /// The write counters.
    fn stats(&self) -> ZonedStats;
}
