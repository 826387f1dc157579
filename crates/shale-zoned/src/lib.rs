//! Zoned block devices for shale: the device layer a zone file system builds
//! on.
//!
//! * [`ZonedDevice`] (in [`device`]): the Linux kernel's zoned block device
//!   model — zones with a start, size, capacity, write pointer and
//!   [`ZoneCondition`]; report, open, close, finish and reset; writes only at
//!   the write pointer; open- and active-zone limits; typed [`ZonedError`]s.
//! * [`EmulatedZoned`]: the model on a preallocated regular file, written with
//!   `O_DIRECT`, with zone state persisted durably in a side file (format in
//!   `docs/format/zoned-emulator.md`).
//! * [`linux::LinuxZoned`]: a real zoned block device (an NVMe ZNS
//!   namespace, `null_blk`, an SMR disk) through the `linux/blkzoned.h` ioctls.
//! * [`ZoneFs`] (in [`zonefs`]): shale's `FileSystem` on any `ZonedDevice`
//!   (metadata log in the first zones, files as extents, placement by
//!   lifetime hint; format in `docs/format/zonefs.md`).
//! * [`testing::conformance`]: the rules as one test suite, run on any
//!   `ZonedDevice` (the emulator in `cargo test`; a real device with
//!   `cargo run -p shale-zoned --example conformance -- /dev/nvme0n2`).
//!
//! * [`ftl`]: a conventional (page-mapped) SSD with greedy garbage
//!   collection, to compare the write amplification of zoned storage with;
//!   it replays write traces recorded by `shale_env::TraceFs`.
//!
//! The crate depends on std, libc and `shale-env`. Its system calls that std does not
//! wrap (ioctls, `fallocate`, `flock`) live in one private module, the only
//! one allowed unsafe code. The crate is for Linux (it uses `O_DIRECT`,
//! `fallocate` and the kernel's zoned ioctls). See `docs/zoned.md`.

#![cfg_attr(not(test), warn(clippy::unwrap_used))]

mod aligned;
pub mod device;
mod emulated;
pub mod ftl;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzz_api;
pub mod linux;
pub mod setup;
mod state;
mod sys;
pub mod testing;
pub mod zonefs;

pub use device::{
    Result, Zone, ZoneCondition, ZoneOp, ZoneStats, ZonedDevice, ZonedError, ZonedGeometry,
    ZonedStats,
};
pub use emulated::{EmulatedOptions, EmulatedZoned};
pub use zonefs::{
    CheckReport, Extent, FileInfo, FormatOptions, GcOptions, GcReport, MountOptions, ZoneFs,
    ZoneFsError, ZoneFsStats, ZoneRole, ZoneUsage,
};
