//! [`ZoneFsError`], every way a zone file system can fail.

use std::fmt;
use std::io;

use super::format;
use crate::device::ZonedError;

/// Every way formatting, mounting or running a [`ZoneFs`](super::ZoneFs) can fail.
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

pub(crate) type FsResult<T> = std::result::Result<T, ZoneFsError>;
