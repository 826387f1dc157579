//! A real zoned block device through the kernel's `linux/blkzoned.h` ioctls.
//!
//! [`LinuxZoned`] opens a zoned block device (an NVMe ZNS namespace such as
//! `/dev/nvme0n2`, a `null_blk` zoned device, an SMR disk) with
//! `O_RDWR | O_DIRECT | O_EXCL` and drives it with:
//!
//! * `BLKGETZONESZ` (zone size in 512-byte sectors; 0 or `ENOTTY` means the
//!   path is not a zoned block device), `BLKGETNRZONES`, `BLKSSZGET` (logical
//!   block size: the write granularity and `O_DIRECT` alignment),
//!   `BLKGETSIZE64`;
//! * `BLKREPORTZONE` for zone reports (start, length, write pointer, condition
//!   and, when the kernel sets `BLK_ZONE_REP_CAPACITY`, capacity);
//! * `BLKOPENZONE`, `BLKCLOSEZONE`, `BLKFINISHZONE`, `BLKRESETZONE` on one zone
//!   each;
//! * `pwrite` at the write pointer and `pread` anywhere, from 4 KiB-aligned
//!   buffers (`O_DIRECT`); `fdatasync` for [`ZonedDevice::sync`] (a cache
//!   flush on the device).
//!
//! The open and active limits come from sysfs
//! (`/sys/dev/block/<major>:<minor>/queue/max_open_zones` and
//! `max_active_zones`, the same files as `/sys/block/<dev>/queue/...`).
//!
//! The device enforces the zone rules itself; this backend checks what it
//! can before a system call (range, alignment, capacity) and turns the
//! kernel's errors into typed errors: `ETOOMANYREFS` is
//! [`ZonedError::TooManyOpenZones`], `EOVERFLOW`
//! [`ZonedError::TooManyActiveZones`], and any other failure of a write or a
//! zone operation is classified by reporting the zone afterwards (a write off
//! the write pointer, to a full zone...). Reads above a write pointer return
//! what the device returns (zeros on `null_blk` and QEMU's ZNS namespace
//! without DULBE). The write counters are kept in memory from the open.
//!
//! Conventional zones (SMR disks) are reported with
//! [`ZoneCondition::NotWritePointer`]; writes and zone operations on them are
//! refused.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::aligned::{is_aligned, AlignedBuf};
use crate::device::{
    Result, Zone, ZoneCondition, ZoneOp, ZoneStats, ZonedDevice, ZonedError, ZonedGeometry,
    ZonedStats,
};
use crate::sys::{self, ZoneMgmt};

/// Bytes per sector in the kernel's zone ioctls.
const SECTOR: u64 = 512;
/// Zones asked for per `BLKREPORTZONE` call.
const REPORT_BATCH: u32 = 1024;

/// A zoned block device (see the module documentation).
pub struct LinuxZoned {
    path: PathBuf,
    file: File,
    geometry: ZonedGeometry,
    /// Capacity of every zone in bytes, from the report at open.
    capacities: Vec<u64>,
    /// Serializes this process's writes and operations per zone.
    zone_locks: Vec<Mutex<()>>,
    stats: Mutex<Vec<ZoneStats>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `major:minor` of a Linux device number (glibc's encoding).
fn major_minor(dev: u64) -> (u64, u64) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & 0xffff_f000);
    let minor = (dev & 0xff) | ((dev >> 12) & 0xffff_ff00);
    (major, minor)
}

/// A limit from sysfs, 0 (no limit) when the file is missing or unreadable.
fn sysfs_limit(major: u64, minor: u64, name: &str) -> u32 {
    std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/queue/{name}"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

impl LinuxZoned {
    /// Opens the zoned block device at `path` (exclusively: `O_EXCL` fails
    /// with `EBUSY` while it is mounted or claimed).
    ///
    /// Errors: [`ZonedError::NotZonedDevice`] naming the path when it is not a
    /// block device or the kernel does not report zones for it
    /// (`BLKGETZONESZ` fails with `ENOTTY`/`EINVAL` or returns 0); I/O errors.
    pub fn open(path: &Path) -> Result<LinuxZoned> {
        let not_zoned = |reason: String| ZonedError::NotZonedDevice {
            path: path.to_path_buf(),
            reason,
        };
        let io_err =
            |what: &str, e: io::Error| ZonedError::io(format!("{}: {what}", path.display()), e);
        let meta = std::fs::metadata(path).map_err(|e| io_err("cannot open", e))?;
        if !meta.file_type().is_block_device() {
            return Err(not_zoned("not a block device".into()));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_DIRECT | libc::O_EXCL)
            .open(path)
            .map_err(|e| io_err("cannot open", e))?;
        let zone_sectors = match sys::get_zone_sectors(&file) {
            Ok(0) => {
                return Err(not_zoned(
                    "the kernel reports no zones (BLKGETZONESZ is 0)".into(),
                ))
            }
            Ok(n) => u64::from(n),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTTY | libc::EINVAL)) => {
                return Err(not_zoned(format!("BLKGETZONESZ is not supported: {e}")))
            }
            Err(e) => return Err(io_err("BLKGETZONESZ", e)),
        };
        let nr_zones = sys::get_nr_zones(&file).map_err(|e| io_err("BLKGETNRZONES", e))?;
        let block_size = sys::logical_block_size(&file).map_err(|e| io_err("BLKSSZGET", e))?;
        let bytes = sys::device_bytes(&file).map_err(|e| io_err("BLKGETSIZE64", e))?;
        let (major, minor) = major_minor(meta.rdev());
        let mut geometry = ZonedGeometry {
            nr_zones,
            zone_size: zone_sectors * SECTOR,
            zone_capacity: zone_sectors * SECTOR,
            block_size,
            max_open_zones: sysfs_limit(major, minor, "max_open_zones"),
            max_active_zones: sysfs_limit(major, minor, "max_active_zones"),
        };
        if geometry.device_size() > bytes {
            return Err(not_zoned(format!(
                "{nr_zones} zones of {} bytes do not fit in the device's {bytes} bytes",
                geometry.zone_size
            )));
        }
        let mut dev = LinuxZoned {
            path: path.to_path_buf(),
            file,
            geometry,
            capacities: Vec::new(),
            zone_locks: (0..nr_zones).map(|_| Mutex::new(())).collect(),
            stats: Mutex::new(vec![ZoneStats::default(); nr_zones as usize]),
        };
        let zones = dev.report_zones(0, nr_zones)?;
        if zones.len() != nr_zones as usize {
            return Err(dev.io_error(
                "BLKREPORTZONE",
                io::Error::other(format!(
                    "{} zones reported, {nr_zones} expected",
                    zones.len()
                )),
            ));
        }
        dev.capacities = zones.iter().map(|z| z.capacity).collect();
        geometry.zone_capacity = dev
            .capacities
            .iter()
            .copied()
            .min()
            .unwrap_or(geometry.zone_size);
        geometry.validate()?;
        dev.geometry = geometry;
        Ok(dev)
    }

    /// The device path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io_error(&self, what: &str, e: io::Error) -> ZonedError {
        ZonedError::io(format!("{}: {what}", self.path.display()), e)
    }

    fn check_zone(&self, zone: u32) -> Result<()> {
        if zone >= self.geometry.nr_zones {
            return Err(ZonedError::NoSuchZone {
                zone,
                nr_zones: self.geometry.nr_zones,
            });
        }
        Ok(())
    }

    /// Turns a failed write or zone operation into a typed error: the
    /// resource errnos directly, anything else by looking at the zone.
    fn classify(
        &self,
        zone: u32,
        op: ZoneOp,
        write: Option<(u64, u64)>,
        e: io::Error,
    ) -> ZonedError {
        match e.raw_os_error() {
            Some(libc::ETOOMANYREFS) => {
                return ZonedError::TooManyOpenZones {
                    zone,
                    max_open: self.geometry.max_open_zones,
                }
            }
            Some(libc::EOVERFLOW) => {
                return ZonedError::TooManyActiveZones {
                    zone,
                    max_active: self.geometry.max_active_zones,
                }
            }
            _ => {}
        }
        let what = match write {
            Some((offset, len)) => format!("zone {zone}: write of {len} bytes at offset {offset}"),
            None => format!("zone {zone}: {op}"),
        };
        let Ok(z) = self.zone(zone) else {
            return self.io_error(&what, e);
        };
        let allowed = match op {
            ZoneOp::Write => matches!(
                z.condition,
                ZoneCondition::Empty
                    | ZoneCondition::ImplicitOpen
                    | ZoneCondition::ExplicitOpen
                    | ZoneCondition::Closed
            ),
            ZoneOp::Open | ZoneOp::Finish => z.condition != ZoneCondition::Full,
            ZoneOp::Close => z.condition != ZoneCondition::Empty,
            ZoneOp::Reset | ZoneOp::Read => true,
        } && !matches!(
            z.condition,
            ZoneCondition::ReadOnly | ZoneCondition::Offline | ZoneCondition::NotWritePointer
        );
        if !allowed {
            return ZonedError::InvalidState {
                zone,
                condition: z.condition,
                op,
            };
        }
        if let Some((offset, len)) = write {
            if offset != z.write_pointer {
                return ZonedError::NotAtWritePointer {
                    zone,
                    offset,
                    write_pointer: z.write_pointer,
                };
            }
            if offset + len > z.start + z.capacity {
                return ZonedError::BeyondCapacity {
                    zone,
                    offset,
                    len,
                    capacity_end: z.start + z.capacity,
                };
            }
        }
        self.io_error(&what, e)
    }

    fn mgmt(&self, zone: u32, op: ZoneOp) -> Result<()> {
        self.check_zone(zone)?;
        let _w = lock(&self.zone_locks[zone as usize]);
        let which = match op {
            ZoneOp::Open => ZoneMgmt::Open,
            ZoneOp::Close => ZoneMgmt::Close,
            ZoneOp::Finish => ZoneMgmt::Finish,
            _ => ZoneMgmt::Reset,
        };
        let sectors = self.geometry.zone_size / SECTOR;
        sys::zone_mgmt(&self.file, which, u64::from(zone) * sectors, sectors)
            .map_err(|e| self.classify(zone, op, None, e))?;
        let mut stats = lock(&self.stats);
        match op {
            ZoneOp::Finish => stats[zone as usize].finishes += 1,
            ZoneOp::Reset => stats[zone as usize].resets += 1,
            _ => {}
        }
        Ok(())
    }

    /// A write at `offset` of `zone` with the zone's lock held.
    fn write_locked(&self, zone: u32, offset: u64, data: &[u8]) -> Result<()> {
        let g = &self.geometry;
        let len = data.len() as u64;
        let block = u64::from(g.block_size);
        if !offset.is_multiple_of(block) || !len.is_multiple_of(block) {
            return Err(ZonedError::Unaligned {
                offset,
                len,
                block_size: g.block_size,
            });
        }
        let start = g.zone_start(zone);
        let capacity_end = start + self.capacities[zone as usize];
        if offset + len > capacity_end {
            return Err(ZonedError::BeyondCapacity {
                zone,
                offset,
                len,
                capacity_end,
            });
        }
        if len == 0 {
            return Ok(());
        }
        let r = if is_aligned(data) {
            self.file.write_all_at(data, offset)
        } else {
            self.file
                .write_all_at(AlignedBuf::copy_of(data).as_slice(), offset)
        };
        r.map_err(|e| self.classify(zone, ZoneOp::Write, Some((offset, len)), e))?;
        lock(&self.stats)[zone as usize].bytes_written += len;
        Ok(())
    }
}

/// A kernel zone report entry as a [`Zone`].
fn to_zone(index: u32, z: &sys::BlkZone, has_capacity: bool) -> Result<Zone> {
    let condition = if z.zone_type == sys::BLK_ZONE_TYPE_CONVENTIONAL {
        ZoneCondition::NotWritePointer
    } else {
        ZoneCondition::from_code(z.cond).ok_or_else(|| {
            ZonedError::io(
                format!("zone {index}"),
                io::Error::other(format!("unknown zone condition {:#x}", z.cond)),
            )
        })?
    };
    let capacity = if has_capacity && z.capacity != 0 {
        z.capacity
    } else {
        z.len
    };
    Ok(Zone {
        index,
        start: z.start * SECTOR,
        size: z.len * SECTOR,
        capacity: capacity * SECTOR,
        write_pointer: z.wp * SECTOR,
        condition,
    })
}

impl ZonedDevice for LinuxZoned {
    fn geometry(&self) -> ZonedGeometry {
        self.geometry
    }

    fn report_zones(&self, first: u32, count: u32) -> Result<Vec<Zone>> {
        self.check_zone(first)?;
        let end = first.saturating_add(count).min(self.geometry.nr_zones);
        let sectors = self.geometry.zone_size / SECTOR;
        let mut out = Vec::with_capacity((end - first) as usize);
        let mut next = first;
        while next < end {
            let want = (end - next).min(REPORT_BATCH);
            let (zones, flags) = sys::report_zones(&self.file, u64::from(next) * sectors, want)
                .map_err(|e| self.io_error("BLKREPORTZONE", e))?;
            if zones.is_empty() {
                return Err(self.io_error(
                    "BLKREPORTZONE",
                    io::Error::other(format!("no zones reported from zone {next}")),
                ));
            }
            for z in zones.iter().take(want as usize) {
                out.push(to_zone(next, z, flags & sys::BLK_ZONE_REP_CAPACITY != 0)?);
                next += 1;
            }
        }
        Ok(out)
    }

    fn open_zone(&self, zone: u32) -> Result<()> {
        self.mgmt(zone, ZoneOp::Open)
    }

    fn close_zone(&self, zone: u32) -> Result<()> {
        self.mgmt(zone, ZoneOp::Close)
    }

    fn finish_zone(&self, zone: u32) -> Result<()> {
        self.mgmt(zone, ZoneOp::Finish)
    }

    fn reset_zone(&self, zone: u32) -> Result<()> {
        self.mgmt(zone, ZoneOp::Reset)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        let zone = self.geometry.write_zone(offset, data.len() as u64)?;
        let _w = lock(&self.zone_locks[zone as usize]);
        self.write_locked(zone, offset, data)
    }

    fn append(&self, zone: u32, data: &[u8]) -> Result<u64> {
        self.check_zone(zone)?;
        let _w = lock(&self.zone_locks[zone as usize]);
        let z = self.zone(zone)?;
        match z.condition {
            ZoneCondition::Empty
            | ZoneCondition::ImplicitOpen
            | ZoneCondition::ExplicitOpen
            | ZoneCondition::Closed => {}
            condition => {
                return Err(ZonedError::InvalidState {
                    zone,
                    condition,
                    op: ZoneOp::Write,
                })
            }
        }
        self.write_locked(zone, z.write_pointer, data)?;
        Ok(z.write_pointer)
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let g = &self.geometry;
        let len = buf.len() as u64;
        let end = g.read_end(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        let block = u64::from(g.block_size);
        let fail = |e: io::Error| {
            let zone = (offset / g.zone_size) as u32;
            if e.raw_os_error() == Some(libc::EIO) {
                if let Ok(z) = self.zone(zone) {
                    if z.condition == ZoneCondition::Offline {
                        return ZonedError::InvalidState {
                            zone,
                            condition: z.condition,
                            op: ZoneOp::Read,
                        };
                    }
                }
            }
            self.io_error(&format!("read of {len} bytes at offset {offset}"), e)
        };
        if offset.is_multiple_of(block) && len.is_multiple_of(block) && is_aligned(buf) {
            return self.file.read_exact_at(buf, offset).map_err(fail);
        }
        let start = offset - offset % block;
        let aligned_end = end.div_ceil(block) * block;
        let mut window = AlignedBuf::zeroed((aligned_end - start) as usize);
        self.file
            .read_exact_at(window.as_mut_slice(), start)
            .map_err(fail)?;
        let from = (offset - start) as usize;
        buf.copy_from_slice(&window.as_slice()[from..from + buf.len()]);
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| self.io_error("cannot sync", e))
    }

    fn stats(&self) -> ZonedStats {
        ZonedStats::from_zones(lock(&self.stats).clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_numbers_split_like_glibc() {
        // makedev(259, 3) and makedev(8, 300).
        assert_eq!(major_minor((259 << 8) | 3), (259, 3));
        let dev = ((300u64 & 0xff) | ((8u64 & 0xfff) << 8)) | ((300u64 & !0xff) << 12);
        assert_eq!(major_minor(dev), (8, 300));
    }

    #[test]
    fn paths_that_are_not_zoned_block_devices_are_refused_by_name() {
        let file = tempfile::NamedTempFile::new().expect("tempfile");
        let err = LinuxZoned::open(file.path()).err().expect("regular file");
        assert!(
            matches!(err, ZonedError::NotZonedDevice { ref path, .. } if path == file.path()),
            "{err}"
        );
        assert!(err.to_string().contains("not a block device"), "{err}");
        let err = LinuxZoned::open(Path::new("/nonexistent/zoned"))
            .err()
            .expect("missing");
        assert!(
            matches!(err, ZonedError::Io { ref source, .. } if source.kind() == io::ErrorKind::NotFound),
            "{err}"
        );
        // A block device that is not zoned, where the machine has one to read.
        for dev in ["/dev/loop0", "/dev/vda", "/dev/sda", "/dev/nvme0n1"] {
            if let Err(ZonedError::NotZonedDevice { reason, .. }) = LinuxZoned::open(Path::new(dev))
            {
                assert!(reason.contains("BLKGETZONESZ"), "{dev}: {reason}");
            }
        }
    }
}

/// The `linux/blkzoned.h` ioctls (and the block size and device size ioctls
/// of `linux/fs.h`) on an open block device, as the kernel answers them:
/// no zone model, no checks. For tools that test a device's kernel interface
/// itself (`shale-zoned-probe`); everything else uses [`LinuxZoned`].
///
/// Sectors are 512 bytes, whatever the device's logical block size, as in
/// the kernel's interface. The unsafe calls behind these are the crate's
/// `sys` module's.
pub mod ioctl {
    use std::fs::File;
    use std::io;

    use crate::sys::{self, ZoneMgmt};

    /// `BLK_ZONE_REP_CAPACITY`: the report's `capacity` fields are valid.
    pub const REPORT_FLAG_CAPACITY: u32 = sys::BLK_ZONE_REP_CAPACITY;

    /// One zone of a report (`struct blk_zone`), in sectors, with its type
    /// and condition codes as the kernel gave them.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct RawZone {
        /// First sector.
        pub start: u64,
        /// Length in sectors (the zone size).
        pub len: u64,
        /// Write pointer (absolute sector).
        pub wp: u64,
        /// Writable sectors from the start; valid with
        /// [`REPORT_FLAG_CAPACITY`].
        pub capacity: u64,
        /// `enum blk_zone_type`.
        pub zone_type: u8,
        /// `enum blk_zone_cond`.
        pub cond: u8,
    }

    /// A zone report: its `BLK_ZONE_REP_*` flags and zones, in order.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct RawReport {
        /// `BLK_ZONE_REP_*` flags.
        pub flags: u32,
        /// The zones reported.
        pub zones: Vec<RawZone>,
    }

    /// A zone management operation (the `struct blk_zone_range` ioctls).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum ZoneOp {
        /// `BLKRESETZONE`: write pointer back to the start.
        Reset,
        /// `BLKOPENZONE`: explicitly open.
        Open,
        /// `BLKCLOSEZONE`: close.
        Close,
        /// `BLKFINISHZONE`: make full.
        Finish,
    }

    /// `BLKREPORTZONE`: up to `max` zones from the zone containing `sector`.
    pub fn report_zones(file: &File, sector: u64, max: u32) -> io::Result<RawReport> {
        let (zones, flags) = sys::report_zones(file, sector, max)?;
        Ok(RawReport {
            flags,
            zones: zones
                .iter()
                .map(|z| RawZone {
                    start: z.start,
                    len: z.len,
                    wp: z.wp,
                    capacity: z.capacity,
                    zone_type: z.zone_type,
                    cond: z.cond,
                })
                .collect(),
        })
    }

    /// Applies `op` to the zones of `nr_sectors` sectors from `sector` (a
    /// zone start; the length a multiple of the zone size).
    pub fn zone_op(file: &File, op: ZoneOp, sector: u64, nr_sectors: u64) -> io::Result<()> {
        let op = match op {
            ZoneOp::Reset => ZoneMgmt::Reset,
            ZoneOp::Open => ZoneMgmt::Open,
            ZoneOp::Close => ZoneMgmt::Close,
            ZoneOp::Finish => ZoneMgmt::Finish,
        };
        sys::zone_mgmt(file, op, sector, nr_sectors)
    }

    /// `BLKGETZONESZ`: the zone size in sectors (0 on a device that is not
    /// zoned).
    pub fn zone_sectors(file: &File) -> io::Result<u32> {
        sys::get_zone_sectors(file)
    }

    /// `BLKGETNRZONES`: the number of zones (0 on a device that is not
    /// zoned).
    pub fn zone_count(file: &File) -> io::Result<u32> {
        sys::get_nr_zones(file)
    }

    /// `BLKGETSIZE64`: the device size in bytes.
    pub fn size_bytes(file: &File) -> io::Result<u64> {
        sys::device_bytes(file)
    }

    /// `BLKSSZGET`: the logical block size in bytes.
    pub fn logical_block_size(file: &File) -> io::Result<u32> {
        sys::logical_block_size(file)
    }
}
