//! The system calls std does not wrap: the zoned block device ioctls of
//! `linux/blkzoned.h` (with their structs, defined here from the kernel's UAPI
//! header), `BLKSSZGET`/`BLKGETSIZE64`, `fallocate` and `flock`. This is the
//! crate's only unsafe code; every block states why it is sound.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;

/// `struct blk_zone` (linux/blkzoned.h), 64 bytes, all fields in 512-byte
/// sectors:
///
/// ```text
/// offset  0  __u64 start      first sector of the zone
/// offset  8  __u64 len        zone size in sectors
/// offset 16  __u64 wp         write pointer position (sector)
/// offset 24  __u8  type       BLK_ZONE_TYPE_* (1 conventional, 2 seq. write required, 3 seq. write preferred)
/// offset 25  __u8  cond       BLK_ZONE_COND_* (ZoneCondition codes)
/// offset 26  __u8  non_seq    non-sequential write resources active
/// offset 27  __u8  reset      reset write pointer recommended
/// offset 28  __u8  resv[4]
/// offset 32  __u64 capacity   zone capacity in sectors (valid if the report
///                             has BLK_ZONE_REP_CAPACITY)
/// offset 40  __u8  reserved[24]
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BlkZone {
    pub(crate) start: u64,
    pub(crate) len: u64,
    pub(crate) wp: u64,
    pub(crate) zone_type: u8,
    pub(crate) cond: u8,
    pub(crate) non_seq: u8,
    pub(crate) reset: u8,
    pub(crate) resv: [u8; 4],
    pub(crate) capacity: u64,
    pub(crate) reserved: [u8; 24],
}

/// `struct blk_zone_report` (linux/blkzoned.h), a 16-byte header followed by
/// `nr_zones` `struct blk_zone`s (a flexible array member):
///
/// ```text
/// offset  0  __u64 sector     first sector to report from (in)
/// offset  8  __u32 nr_zones   zones room for (in), zones reported (out)
/// offset 12  __u32 flags      BLK_ZONE_REP_CAPACITY (1) if capacity is valid (out)
/// offset 16  struct blk_zone zones[]
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct BlkZoneReportHeader {
    sector: u64,
    nr_zones: u32,
    flags: u32,
}

/// `BLK_ZONE_REP_CAPACITY`: the report's zones carry a valid `capacity`.
pub(crate) const BLK_ZONE_REP_CAPACITY: u32 = 1;
/// `BLK_ZONE_TYPE_CONVENTIONAL`.
pub(crate) const BLK_ZONE_TYPE_CONVENTIONAL: u8 = 1;

/// `struct blk_zone_range` (linux/blkzoned.h), 16 bytes: the argument of
/// `BLKRESETZONE`, `BLKOPENZONE`, `BLKCLOSEZONE` and `BLKFINISHZONE`.
///
/// ```text
/// offset 0  __u64 sector      first sector of the range (a zone start)
/// offset 8  __u64 nr_sectors  length of the range (whole zones)
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct BlkZoneRange {
    sector: u64,
    nr_sectors: u64,
}

// The ioctl request numbers, built as the kernel's _IOC macro builds them. The
// generic layout (x86, arm, riscv...): direction in bits 30-31 (write 1, read
// 2), size in bits 16-29, type in bits 8-15, number in bits 0-7; powerpc, mips
// and sparc use 3 direction bits at 29-31 (none 1, read 2, write 4) and 13
// size bits.
#[cfg(not(any(
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc",
    target_arch = "sparc64"
)))]
mod ioc {
    pub(super) const NONE: u32 = 0;
    pub(super) const WRITE: u32 = 1;
    pub(super) const READ: u32 = 2;
    pub(super) const DIR_SHIFT: u32 = 30;
}
#[cfg(any(
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc",
    target_arch = "sparc64"
))]
mod ioc {
    pub(super) const NONE: u32 = 1;
    pub(super) const WRITE: u32 = 4;
    pub(super) const READ: u32 = 2;
    pub(super) const DIR_SHIFT: u32 = 29;
}

const fn ioc(dir: u32, nr: u32, size: usize) -> u32 {
    (dir << ioc::DIR_SHIFT) | ((size as u32) << 16) | (0x12 << 8) | nr
}

/// `_IOWR(0x12, 130, struct blk_zone_report)`.
const BLKREPORTZONE: u32 = ioc(
    ioc::READ | ioc::WRITE,
    130,
    size_of::<BlkZoneReportHeader>(),
);
/// `_IOW(0x12, 131, struct blk_zone_range)`.
const BLKRESETZONE: u32 = ioc(ioc::WRITE, 131, size_of::<BlkZoneRange>());
/// `_IOR(0x12, 132, __u32)`: zone size in sectors, 0 if not zoned.
const BLKGETZONESZ: u32 = ioc(ioc::READ, 132, size_of::<u32>());
/// `_IOR(0x12, 133, __u32)`: number of zones.
const BLKGETNRZONES: u32 = ioc(ioc::READ, 133, size_of::<u32>());
/// `_IOW(0x12, 134, struct blk_zone_range)`.
const BLKOPENZONE: u32 = ioc(ioc::WRITE, 134, size_of::<BlkZoneRange>());
/// `_IOW(0x12, 135, struct blk_zone_range)`.
const BLKCLOSEZONE: u32 = ioc(ioc::WRITE, 135, size_of::<BlkZoneRange>());
/// `_IOW(0x12, 136, struct blk_zone_range)`.
const BLKFINISHZONE: u32 = ioc(ioc::WRITE, 136, size_of::<BlkZoneRange>());
/// `_IO(0x12, 104)`: logical block size (an `int`).
const BLKSSZGET: u32 = ioc(ioc::NONE, 104, 0);
/// `_IOR(0x12, 114, size_t)`: device size in bytes (a `u64`).
const BLKGETSIZE64: u32 = ioc(ioc::READ, 114, size_of::<usize>());

/// A zone management operation (`blk_zone_range` ioctls).
#[derive(Clone, Copy, Debug)]
pub(crate) enum ZoneMgmt {
    Reset,
    Open,
    Close,
    Finish,
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `BLKGETZONESZ`: the zone size in sectors (0 for a device that is not zoned).
pub(crate) fn get_zone_sectors(file: &File) -> io::Result<u32> {
    let mut v: u32 = 0;
    // SAFETY: BLKGETZONESZ writes one u32 through the pointer, which points to
    // a live local; the descriptor is open and owned by `file`.
    check(unsafe { libc::ioctl(file.as_raw_fd(), BLKGETZONESZ as _, &mut v as *mut u32) })?;
    Ok(v)
}

/// `BLKGETNRZONES`: the number of zones.
pub(crate) fn get_nr_zones(file: &File) -> io::Result<u32> {
    let mut v: u32 = 0;
    // SAFETY: BLKGETNRZONES writes one u32 through the pointer, which points to
    // a live local; the descriptor is open and owned by `file`.
    check(unsafe { libc::ioctl(file.as_raw_fd(), BLKGETNRZONES as _, &mut v as *mut u32) })?;
    Ok(v)
}

/// `BLKSSZGET`: the logical block size in bytes.
pub(crate) fn logical_block_size(file: &File) -> io::Result<u32> {
    let mut v: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int through the pointer, which points to a
    // live local; the descriptor is open and owned by `file`.
    check(unsafe { libc::ioctl(file.as_raw_fd(), BLKSSZGET as _, &mut v as *mut libc::c_int) })?;
    u32::try_from(v).map_err(|_| io::Error::other("negative logical block size"))
}

/// `BLKGETSIZE64`: the device size in bytes.
pub(crate) fn device_bytes(file: &File) -> io::Result<u64> {
    let mut v: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 (size_t on 64-bit targets; the
    // kernel writes a u64 on every target) through the pointer, which points to
    // a live local; the descriptor is open and owned by `file`.
    check(unsafe { libc::ioctl(file.as_raw_fd(), BLKGETSIZE64 as _, &mut v as *mut u64) })?;
    Ok(v)
}

/// `BLKREPORTZONE` from `sector`, for at most `max` zones; the zones reported
/// and the report's flags.
pub(crate) fn report_zones(file: &File, sector: u64, max: u32) -> io::Result<(Vec<BlkZone>, u32)> {
    let header = size_of::<BlkZoneReportHeader>();
    let zone = size_of::<BlkZone>();
    let count = max as usize;
    // The argument is the header followed by room for `count` zones, in a
    // buffer of u64s so that it is 8-byte aligned like the structs.
    let bytes = header + count * zone;
    let mut buf = vec![0u64; bytes.div_ceil(8)];
    let head = BlkZoneReportHeader {
        sector,
        nr_zones: max,
        flags: 0,
    };
    let ptr = buf.as_mut_ptr().cast::<u8>();
    // SAFETY: `buf` holds at least `header` bytes, is 8-byte aligned (a Vec
    // of u64) and the header type is plain data of that alignment.
    unsafe { ptr.cast::<BlkZoneReportHeader>().write(head) };
    // SAFETY: the buffer is the kernel's `struct blk_zone_report` with room for
    // `max` zones after the header, as `nr_zones` says; the kernel writes at
    // most that many zones and the header, all inside `buf`, which outlives the
    // call. The descriptor is open and owned by `file`.
    check(unsafe { libc::ioctl(file.as_raw_fd(), BLKREPORTZONE as _, ptr) })?;
    // SAFETY: the header is inside `buf`, aligned, and any bit pattern is a
    // valid header.
    let out = unsafe { ptr.cast::<BlkZoneReportHeader>().read() };
    let reported = (out.nr_zones as usize).min(count);
    let mut zones = Vec::with_capacity(reported);
    for i in 0..reported {
        // SAFETY: zone `i < count` lies inside `buf` at `header + i * zone`,
        // an 8-byte aligned offset (both sizes are multiples of 8), and any
        // bit pattern is a valid `BlkZone` (integers and byte arrays).
        zones.push(unsafe { ptr.add(header + i * zone).cast::<BlkZone>().read() });
    }
    Ok((zones, out.flags))
}

/// A zone management ioctl on `nr_sectors` from `sector`.
pub(crate) fn zone_mgmt(file: &File, op: ZoneMgmt, sector: u64, nr_sectors: u64) -> io::Result<()> {
    let request = match op {
        ZoneMgmt::Reset => BLKRESETZONE,
        ZoneMgmt::Open => BLKOPENZONE,
        ZoneMgmt::Close => BLKCLOSEZONE,
        ZoneMgmt::Finish => BLKFINISHZONE,
    };
    let range = BlkZoneRange { sector, nr_sectors };
    // SAFETY: the zone management ioctls read one `struct blk_zone_range`
    // through the pointer, which points to a live local of that layout; the
    // descriptor is open and owned by `file`.
    check(unsafe {
        libc::ioctl(
            file.as_raw_fd(),
            request as _,
            &range as *const BlkZoneRange,
        )
    })
}

/// Allocates `len` bytes of `file` (`fallocate` mode 0), so that the emulator's
/// writes never meet a full file system. Falls back to extending the file
/// (sparse) where the file system does not support it.
pub(crate) fn preallocate(file: &File, len: u64) -> io::Result<()> {
    let off_len = libc::off_t::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file too large"))?;
    // SAFETY: plain system call on an open descriptor owned by `file`.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, off_len) };
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
        file.set_len(len)
    } else {
        Err(e)
    }
}

/// Takes an exclusive `flock` on `file` without waiting; `WouldBlock` if
/// another open description holds it.
pub(crate) fn lock_exclusive(file: &File) -> io::Result<()> {
    // SAFETY: plain system call on an open descriptor owned by `file`.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Err(io::Error::new(io::ErrorKind::WouldBlock, e))
    } else {
        Err(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_layouts_match_the_kernel_header() {
        assert_eq!(size_of::<BlkZone>(), 64);
        assert_eq!(std::mem::offset_of!(BlkZone, zone_type), 24);
        assert_eq!(std::mem::offset_of!(BlkZone, cond), 25);
        assert_eq!(std::mem::offset_of!(BlkZone, capacity), 32);
        assert_eq!(size_of::<BlkZoneReportHeader>(), 16);
        assert_eq!(size_of::<BlkZoneRange>(), 16);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn ioctl_numbers_match_the_kernel_on_x86_64() {
        assert_eq!(BLKREPORTZONE, 0xC010_1282);
        assert_eq!(BLKRESETZONE, 0x4010_1283);
        assert_eq!(BLKGETZONESZ, 0x8004_1284);
        assert_eq!(BLKGETNRZONES, 0x8004_1285);
        assert_eq!(BLKOPENZONE, 0x4010_1286);
        assert_eq!(BLKCLOSEZONE, 0x4010_1287);
        assert_eq!(BLKFINISHZONE, 0x4010_1288);
        assert_eq!(BLKSSZGET, 0x1268);
        assert_eq!(BLKGETSIZE64, 0x8008_1272);
    }

    #[test]
    fn a_regular_file_is_not_a_zoned_device() {
        let f = tempfile::tempfile().expect("tempfile");
        let err = get_zone_sectors(&f).expect_err("not a block device");
        assert_eq!(err.raw_os_error(), Some(libc::ENOTTY));
    }
}
