//! The zoned block device ioctls of `linux/blkzoned.h` (and the two block
//! device size ioctls of `linux/fs.h`), on an open block device: the raw
//! calls of `shale_zoned::linux::ioctl` (the one place of the workspace that
//! binds them), with the kernel's type and condition codes decoded into
//! this program's enums, unknown values kept.
//!
//! Sectors are always 512 bytes here, whatever the device's logical block
//! size, as in the kernel's interface.

use std::fs::File;
use std::io;

use shale_zoned::linux::ioctl::{self, RawReport, RawZone};

pub(crate) use shale_zoned::linux::ioctl::{
    logical_block_size, size_bytes, zone_count, zone_op, zone_sectors, ZoneOp, REPORT_FLAG_CAPACITY,
};

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

impl From<&RawZone> for Zone {
    fn from(z: &RawZone) -> Zone {
        Zone {
            start: z.start,
            len: z.len,
            wp: z.wp,
            capacity: z.capacity,
            kind: ZoneType::from_raw(z.zone_type),
            cond: ZoneCond::from_raw(z.cond),
        }
    }
}

impl From<RawReport> for Report {
    fn from(r: RawReport) -> Report {
        Report {
            flags: r.flags,
            zones: r.zones.iter().map(Zone::from).collect(),
        }
    }
}

/// Reports up to `max` zones from the zone containing `sector`.
pub(crate) fn report_zones(file: &File, sector: u64, max: u32) -> io::Result<Report> {
    ioctl::report_zones(file, sector, max).map(Report::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_a_raw_report() {
        let raw = |start, wp, cond| RawZone {
            start,
            len: 2048,
            wp,
            capacity: 1536,
            zone_type: 2,
            cond,
        };
        let report = Report::from(RawReport {
            flags: REPORT_FLAG_CAPACITY,
            zones: vec![raw(0, 8, 2), raw(2048, 4096, 0xe)],
        });
        assert_eq!(report.flags, REPORT_FLAG_CAPACITY);
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
    fn unknown_types_and_conditions_are_kept() {
        assert_eq!(ZoneType::from_raw(9), ZoneType::Other(9));
        assert_eq!(ZoneCond::from_raw(7), ZoneCond::Other(7));
        assert_eq!(ZoneCond::from_raw(0xf), ZoneCond::Offline);
    }
}
