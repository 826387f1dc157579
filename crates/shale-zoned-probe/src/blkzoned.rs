//! The zoned block device ioctls of `linux/blkzoned.h` (and the two block
//! device size ioctls of `linux/fs.h`), on an open block device.
//!
//! Sectors are always 512 bytes here, whatever the device's logical block
//! size, as in the kernel's interface.

// The ioctl calls are this program's only unsafe code; every block states why
// it is sound.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// `_IOC(dir, 0x12, nr, size)`: the request numbers of the block layer's
/// ioctls (type 0x12), built as `asm-generic/ioctl.h` builds them.
const fn block_ioc(dir: u32, nr: u32, size: u32) -> u32 {
    (dir << 30) | (size << 16) | (0x12 << 8) | nr
}
const IOC_NONE: u32 = 0;
const IOC_WRITE: u32 = 1;
const IOC_READ: u32 = 2;

/// `BLKSSZGET`: the logical block size in bytes (an `int`).
pub(crate) const BLKSSZGET: u32 = block_ioc(IOC_NONE, 104, 0);
/// `BLKGETSIZE64`: the device size in bytes (a `u64`).
pub(crate) const BLKGETSIZE64: u32 = block_ioc(IOC_READ, 114, 8);
/// `BLKREPORTZONE`: `struct blk_zone_report` followed by its zones.
pub(crate) const BLKREPORTZONE: u32 = block_ioc(IOC_READ | IOC_WRITE, 130, 16);
/// `BLKRESETZONE`: `struct blk_zone_range`.
pub(crate) const BLKRESETZONE: u32 = block_ioc(IOC_WRITE, 131, 16);
/// `BLKGETZONESZ`: the zone size in sectors (a `u32`).
pub(crate) const BLKGETZONESZ: u32 = block_ioc(IOC_READ, 132, 4);
/// `BLKGETNRZONES`: the number of zones (a `u32`).
pub(crate) const BLKGETNRZONES: u32 = block_ioc(IOC_READ, 133, 4);
/// `BLKOPENZONE`: `struct blk_zone_range`.
pub(crate) const BLKOPENZONE: u32 = block_ioc(IOC_WRITE, 134, 16);
/// `BLKCLOSEZONE`: `struct blk_zone_range`.
pub(crate) const BLKCLOSEZONE: u32 = block_ioc(IOC_WRITE, 135, 16);
/// `BLKFINISHZONE`: `struct blk_zone_range`.
pub(crate) const BLKFINISHZONE: u32 = block_ioc(IOC_WRITE, 136, 16);

/// `BLK_ZONE_REP_CAPACITY`: the report's `capacity` fields are valid.
pub(crate) const REPORT_FLAG_CAPACITY: u32 = 1;

/// Bytes of `struct blk_zone_report` before its zones.
const REPORT_HEADER_BYTES: usize = 16;
/// Bytes of one `struct blk_zone`.
const ZONE_BYTES: usize = 64;

/// A zone's type (`enum blk_zone_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ZoneType {
    /// No write pointer: written anywhere.
    Conventional,
    /// Written only at the write pointer.
    SequentialRequired,
    /// Written anywhere, best at the write pointer.
    SequentialPreferred,
    /// A value this program does not know.
    Other(u8),
}

impl ZoneType {
    fn from_raw(raw: u8) -> Self {
        match raw {
            1 => Self::Conventional,
            2 => Self::SequentialRequired,
            3 => Self::SequentialPreferred,
            other => Self::Other(other),
        }
    }
}

/// A zone's condition (`enum blk_zone_cond`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ZoneCond {
    /// Conventional zone: no write pointer.
    NotWp,
    /// Write pointer at the zone's start.
    Empty,
    /// Open because it was written.
    ImplicitOpen,
    /// Opened by an open command.
    ExplicitOpen,
    /// Closed after writing.
    Closed,
    /// Full: written to its capacity, or finished.
    Full,
    /// Read only.
    ReadOnly,
    /// Neither readable nor writable.
    Offline,
    /// A value this program does not know.
    Other(u8),
}

impl ZoneCond {
    fn from_raw(raw: u8) -> Self {
        match raw {
            0x0 => Self::NotWp,
            0x1 => Self::Empty,
            0x2 => Self::ImplicitOpen,
            0x3 => Self::ExplicitOpen,
            0x4 => Self::Closed,
            0xd => Self::ReadOnly,
            0xe => Self::Full,
            0xf => Self::Offline,
            other => Self::Other(other),
        }
    }
}

/// One zone of a report (`struct blk_zone`), in sectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Zone {
    /// First sector.
    pub(crate) start: u64,
    /// Length in sectors (the zone size).
    pub(crate) len: u64,
    /// Write pointer (absolute sector).
    pub(crate) wp: u64,
    /// Writable sectors from the start; valid with [`REPORT_FLAG_CAPACITY`].
    pub(crate) capacity: u64,
    /// Type.
    pub(crate) kind: ZoneType,
    /// Condition.
    pub(crate) cond: ZoneCond,
}

/// A zone report: its flags and zones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Report {
    /// `BLK_ZONE_REP_*` flags.
    pub(crate) flags: u32,
    /// The zones reported, in order.
    pub(crate) zones: Vec<Zone>,
}

/// Decodes a report buffer filled by `BLKREPORTZONE`: the header's zone
/// count, then that many zones (native byte order, as the kernel wrote them).
fn decode_report(words: &[u64]) -> io::Result<Report> {
    let header = words.get(..2).ok_or_else(|| short("report header"))?;
    let count_and_flags = header[1].to_ne_bytes();
    let count = u32::from_ne_bytes([
        count_and_flags[0],
        count_and_flags[1],
        count_and_flags[2],
        count_and_flags[3],
    ]) as usize;
    let flags = u32::from_ne_bytes([
        count_and_flags[4],
        count_and_flags[5],
        count_and_flags[6],
        count_and_flags[7],
    ]);
    let per_zone = ZONE_BYTES / 8;
    let mut zones = Vec::with_capacity(count);
    for i in 0..count {
        let at = REPORT_HEADER_BYTES / 8 + i * per_zone;
        let w = words
            .get(at..at + per_zone)
            .ok_or_else(|| short("report zones"))?;
        // Word 3: type, cond, non_seq, reset, 4 reserved bytes.
        let bytes = w[3].to_ne_bytes();
        zones.push(Zone {
            start: w[0],
            len: w[1],
            wp: w[2],
            kind: ZoneType::from_raw(bytes[0]),
            cond: ZoneCond::from_raw(bytes[1]),
            capacity: w[4],
        });
    }
    Ok(Report { flags, zones })
}

fn short(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{what}: the kernel's answer is shorter than its count"),
    )
}

/// Reports up to `max` zones from the zone containing `sector`.
pub(crate) fn report_zones(file: &File, sector: u64, max: u32) -> io::Result<Report> {
    let words = (REPORT_HEADER_BYTES + max as usize * ZONE_BYTES) / 8;
    let mut buf = vec![0u64; words];
    buf[0] = sector;
    buf[1] = u64::from_ne_bytes({
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&max.to_ne_bytes());
        b
    });
    // SAFETY: `buf` is a live, 8-byte aligned buffer of `16 + max * 64` bytes:
    // a `struct blk_zone_report` whose `nr_zones` is `max`, followed by room
    // for `max` `struct blk_zone`s, which is all the kernel writes.
    let rc = unsafe {
        libc::ioctl(
            file.as_raw_fd(),
            BLKREPORTZONE as libc::Ioctl,
            buf.as_mut_ptr(),
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    decode_report(&buf)
}

/// A zone management operation on a range of zones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ZoneOp {
    /// Write pointer back to the start (`BLKRESETZONE`).
    Reset,
    /// Explicitly open (`BLKOPENZONE`).
    Open,
    /// Close (`BLKCLOSEZONE`).
    Close,
    /// Make full (`BLKFINISHZONE`).
    Finish,
}

/// Applies `op` to the zones of `nr_sectors` sectors from `sector` (a zone
/// start; the length a multiple of the zone size).
pub(crate) fn zone_op(file: &File, op: ZoneOp, sector: u64, nr_sectors: u64) -> io::Result<()> {
    let request = match op {
        ZoneOp::Reset => BLKRESETZONE,
        ZoneOp::Open => BLKOPENZONE,
        ZoneOp::Close => BLKCLOSEZONE,
        ZoneOp::Finish => BLKFINISHZONE,
    };
    // struct blk_zone_range { __u64 sector; __u64 nr_sectors; }
    let range: [u64; 2] = [sector, nr_sectors];
    // SAFETY: `range` is a live `struct blk_zone_range` (two u64s, C layout),
    // which the kernel only reads.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), request as libc::Ioctl, range.as_ptr()) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The zone size in sectors (`BLKGETZONESZ`; 0 on a device that is not zoned).
pub(crate) fn zone_sectors(file: &File) -> io::Result<u32> {
    let mut value: u32 = 0;
    // SAFETY: the kernel writes one u32 to the live `value`.
    let rc = unsafe {
        libc::ioctl(
            file.as_raw_fd(),
            BLKGETZONESZ as libc::Ioctl,
            &mut value as *mut u32,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value)
}

/// The number of zones (`BLKGETNRZONES`; 0 on a device that is not zoned).
pub(crate) fn zone_count(file: &File) -> io::Result<u32> {
    let mut value: u32 = 0;
    // SAFETY: the kernel writes one u32 to the live `value`.
    let rc = unsafe {
        libc::ioctl(
            file.as_raw_fd(),
            BLKGETNRZONES as libc::Ioctl,
            &mut value as *mut u32,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value)
}

/// The device size in bytes (`BLKGETSIZE64`).
pub(crate) fn size_bytes(file: &File) -> io::Result<u64> {
    let mut value: u64 = 0;
    // SAFETY: the kernel writes one u64 to the live `value`.
    let rc = unsafe {
        libc::ioctl(
            file.as_raw_fd(),
            BLKGETSIZE64 as libc::Ioctl,
            &mut value as *mut u64,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value)
}

/// The logical block size in bytes (`BLKSSZGET`).
pub(crate) fn logical_block_size(file: &File) -> io::Result<u32> {
    let mut value: libc::c_int = 0;
    // SAFETY: the kernel writes one int to the live `value`.
    let rc = unsafe {
        libc::ioctl(
            file.as_raw_fd(),
            BLKSSZGET as libc::Ioctl,
            &mut value as *mut libc::c_int,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    u32::try_from(value).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("negative logical block size {value}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_numbers_match_the_kernel_headers() {
        // The values of linux/blkzoned.h and linux/fs.h on x86_64.
        assert_eq!(BLKSSZGET, 0x1268);
        assert_eq!(BLKGETSIZE64, 0x8008_1272);
        assert_eq!(BLKREPORTZONE, 0xc010_1282);
        assert_eq!(BLKRESETZONE, 0x4010_1283);
        assert_eq!(BLKGETZONESZ, 0x8004_1284);
        assert_eq!(BLKGETNRZONES, 0x8004_1285);
        assert_eq!(BLKOPENZONE, 0x4010_1286);
        assert_eq!(BLKCLOSEZONE, 0x4010_1287);
        assert_eq!(BLKFINISHZONE, 0x4010_1288);
    }

    fn zone_words(start: u64, len: u64, wp: u64, kind: u8, cond: u8, cap: u64) -> [u64; 8] {
        let mut meta = [0u8; 8];
        meta[0] = kind;
        meta[1] = cond;
        [start, len, wp, u64::from_ne_bytes(meta), cap, 0, 0, 0]
    }

    #[test]
    fn decodes_a_report() {
        let mut words = vec![0u64, 0];
        let mut header = [0u8; 8];
        header[..4].copy_from_slice(&2u32.to_ne_bytes());
        header[4..].copy_from_slice(&REPORT_FLAG_CAPACITY.to_ne_bytes());
        words[1] = u64::from_ne_bytes(header);
        words.extend(zone_words(0, 2048, 8, 2, 2, 1536));
        words.extend(zone_words(2048, 2048, 2048 + 2048, 2, 0xe, 1536));
        let report = decode_report(&words).expect("decodes");
        assert_eq!(report.flags, REPORT_FLAG_CAPACITY);
        assert_eq!(report.zones.len(), 2);
        assert_eq!(
            report.zones[0],
            Zone {
                start: 0,
                len: 2048,
                wp: 8,
                capacity: 1536,
                kind: ZoneType::SequentialRequired,
                cond: ZoneCond::ImplicitOpen,
            }
        );
        assert_eq!(report.zones[1].cond, ZoneCond::Full);
    }

    #[test]
    fn a_count_beyond_the_buffer_is_an_error() {
        let mut header = [0u8; 8];
        header[..4].copy_from_slice(&3u32.to_ne_bytes());
        let mut words = vec![0u64, u64::from_ne_bytes(header)];
        words.extend(zone_words(0, 2048, 0, 2, 1, 2048));
        let err = decode_report(&words).expect_err("two zones are missing");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(decode_report(&[0]).is_err());
    }

    #[test]
    fn unknown_types_and_conditions_are_kept() {
        assert_eq!(ZoneType::from_raw(9), ZoneType::Other(9));
        assert_eq!(ZoneCond::from_raw(7), ZoneCond::Other(7));
        assert_eq!(ZoneCond::from_raw(0xf), ZoneCond::Offline);
    }
}
