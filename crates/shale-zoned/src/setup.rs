//! A zoned device by its path, and the zone file system on it: the steps
//! every program built on `shale-zoned` takes before it opens a database
//! (the `shale` CLI's zoned commands and benches, the examples).
//!
//! [`open_device`] is the one place that decides which backend a path gets:
//! a block device is a real zoned device ([`LinuxZoned`]), anything else an
//! emulated one ([`EmulatedZoned`], a file plus its `.zones` state file),
//! created with a geometry when asked. [`mount`] and [`format()`] then give
//! the device's [`ZoneFs`]; [`check_formattable`] refuses to format a device
//! whose file system holds files other than the caller's own.
//!
//! Errors are typed ([`SetupError`]) and name the device; what a user should
//! do about one (which command to run) is left to the program, which knows
//! its commands.

use std::fmt;
use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::linux::LinuxZoned;
use crate::{
    EmulatedOptions, EmulatedZoned, FormatOptions, MountOptions, ZoneFs, ZoneFsError, ZonedDevice,
    ZonedError, ZonedGeometry,
};

/// Zones of an emulated device created with the default geometry.
pub const DEFAULT_ZONES: u32 = 64;
/// Zone size (and capacity) of an emulated device created with the default
/// geometry: 64 MiB, so that the default 64 zones make a 4 GiB device.
pub const DEFAULT_ZONE_SIZE: u64 = 64 << 20;

/// The geometry an emulated device gets when nothing else is asked for: 64
/// zones of 64 MiB (capacity = size), 4 KiB blocks, 14 open and 14 active
/// zones (the limits of the project's QEMU ZNS namespace).
pub fn default_geometry() -> ZonedGeometry {
    ZonedGeometry::new(DEFAULT_ZONES, DEFAULT_ZONE_SIZE)
}

/// Which backend drives a device path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// A file emulating a zoned device ([`EmulatedZoned`]).
    Emulated,
    /// A zoned block device of the kernel ([`LinuxZoned`]).
    Block,
}

impl Backend {
    /// The backend of `path`: [`Backend::Block`] for a block device, else
    /// [`Backend::Emulated`] (also when `path` does not exist yet).
    pub fn of(path: &Path) -> Backend {
        match std::fs::metadata(path) {
            Ok(m) if m.file_type().is_block_device() => Backend::Block,
            _ => Backend::Emulated,
        }
    }

    /// `emulated` or `block device`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Emulated => "emulated",
            Backend::Block => "block device",
        }
    }
}

/// An opened zoned device.
pub struct OpenedDevice {
    /// The device.
    pub dev: Arc<dyn ZonedDevice>,
    /// Its path.
    pub path: PathBuf,
    /// Which backend drives it.
    pub backend: Backend,
    /// Reads and writes bypass the page cache (`O_DIRECT`): always on a block
    /// device; on an emulated one where the host file system allows it.
    pub direct_io: bool,
    /// The emulated device was created by this open.
    pub created: bool,
}

impl OpenedDevice {
    /// `zoned (emulated) PATH` or `zoned (block device) PATH`.
    pub fn label(&self) -> String {
        format!("zoned ({}) {}", self.backend.name(), self.path.display())
    }
}

/// A mounted zone file system and its device.
pub struct MountedDevice {
    /// The device it is on.
    pub device: OpenedDevice,
    /// The file system.
    pub fs: ZoneFs,
}

/// How to mount a zone file system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mount {
    /// Read-write, with the garbage collector's background thread.
    ReadWrite,
    /// Read-only: nothing is written to the device.
    ReadOnly,
}

/// Why a device could not be opened, mounted, formatted or cleared for
/// formatting. Each names the device's path.
#[derive(Debug)]
#[non_exhaustive]
pub enum SetupError {
    /// No device at the path, and none was to be created.
    Missing {
        /// The device path.
        path: PathBuf,
    },
    /// The host file system failed on the path (looking for the device).
    Io {
        /// The device path.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The device failed or refused (opening it, or a geometry mismatch).
    Device {
        /// The device path.
        path: PathBuf,
        /// The device's error.
        source: ZonedError,
    },
    /// The zone file system failed: not formatted, damaged, or a device
    /// error underneath ([`ZoneFsError`] tells which).
    FileSystem {
        /// The device path.
        path: PathBuf,
        /// The file system's error.
        source: ZoneFsError,
    },
    /// Not formattable: the device holds a zone file system that does not
    /// mount, whose data may still be recovered.
    Unmountable {
        /// The device path.
        path: PathBuf,
        /// Why it does not mount.
        source: ZoneFsError,
    },
    /// Not formattable: the device's zone file system holds files that are
    /// not the caller's.
    HoldsFiles {
        /// The device path.
        path: PathBuf,
        /// How many such files.
        count: usize,
        /// The first of them.
        first: String,
    },
}

impl SetupError {
    /// The device path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            SetupError::Missing { path }
            | SetupError::Io { path, .. }
            | SetupError::Device { path, .. }
            | SetupError::FileSystem { path, .. }
            | SetupError::Unmountable { path, .. }
            | SetupError::HoldsFiles { path, .. } => path,
        }
    }

    fn device(path: &Path, source: ZonedError) -> SetupError {
        SetupError::Device {
            path: path.to_path_buf(),
            source,
        }
    }

    fn file_system(path: &Path, source: ZoneFsError) -> SetupError {
        match source {
            ZoneFsError::Device(d) => SetupError::device(path, d),
            source => SetupError::FileSystem {
                path: path.to_path_buf(),
                source,
            },
        }
    }
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.path().display();
        match self {
            SetupError::Missing { .. } => write!(f, "zoned device {p} does not exist"),
            SetupError::Io { source, .. } => write!(f, "{p}: {source}"),
            SetupError::Device { source, .. } => {
                // The device's errors mostly name the path already.
                let text = source.to_string();
                if text.contains(&p.to_string()) {
                    f.write_str(&text)
                } else {
                    write!(f, "{p}: {text}")
                }
            }
            SetupError::FileSystem { source, .. } => write!(f, "{p}: {source}"),
            SetupError::Unmountable { source, .. } => write!(
                f,
                "{p} holds a zone file system that does not mount ({source}); formatting it \
                 would erase what may still be recovered"
            ),
            SetupError::HoldsFiles { count, first, .. } => write!(
                f,
                "{p} holds a zone file system with {count} file(s) (such as {first}); \
                 formatting it would erase them"
            ),
        }
    }
}

impl std::error::Error for SetupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SetupError::Io { source, .. } => Some(source),
            SetupError::Device { source, .. } => Some(source),
            SetupError::FileSystem { source, .. } | SetupError::Unmountable { source, .. } => {
                Some(source)
            }
            SetupError::Missing { .. } | SetupError::HoldsFiles { .. } => None,
        }
    }
}

/// Opens the zoned device at `path`: a block device through the kernel's
/// zone ioctls, anything else as an emulated device. With `create`, an
/// emulated device is created with that geometry when `path` does not exist
/// (an existing one must have the same geometry); without, it must exist.
pub fn open_device(path: &Path, create: Option<ZonedGeometry>) -> Result<OpenedDevice, SetupError> {
    let backend = Backend::of(path);
    let at = |e: ZonedError| SetupError::device(path, e);
    match backend {
        Backend::Block => {
            let dev = LinuxZoned::open(path).map_err(at)?;
            Ok(OpenedDevice {
                dev: Arc::new(dev),
                path: path.to_path_buf(),
                backend,
                direct_io: true,
                created: false,
            })
        }
        Backend::Emulated => {
            let exists = path.try_exists().map_err(|source| SetupError::Io {
                path: path.to_path_buf(),
                source,
            })?;
            let options = EmulatedOptions::default();
            let dev = match create {
                Some(g) => EmulatedZoned::create(path, &g, options).map_err(at)?,
                None if !exists => {
                    return Err(SetupError::Missing {
                        path: path.to_path_buf(),
                    })
                }
                None => EmulatedZoned::open(path, options).map_err(at)?,
            };
            let direct_io = dev.direct_io();
            Ok(OpenedDevice {
                dev: Arc::new(dev),
                path: path.to_path_buf(),
                backend,
                direct_io,
                created: !exists,
            })
        }
    }
}

/// Mounts the zone file system of `device` (replaying its metadata log).
pub fn mount(device: OpenedDevice, how: Mount) -> Result<MountedDevice, SetupError> {
    let options = MountOptions {
        read_only: how == Mount::ReadOnly,
        ..MountOptions::default()
    };
    match ZoneFs::mount_with(device.dev.clone(), options) {
        Ok(fs) => Ok(MountedDevice { device, fs }),
        Err(e) => Err(SetupError::file_system(&device.path, e)),
    }
}

/// Formats `device` with `meta_zones` metadata zones and returns it mounted.
/// Formatting erases every zone: [`check_formattable`] first.
pub fn format(device: OpenedDevice, meta_zones: u32) -> Result<MountedDevice, SetupError> {
    let options = FormatOptions {
        meta_zones,
        ..FormatOptions::default()
    };
    match ZoneFs::format(device.dev.clone(), options) {
        Ok(fs) => Ok(MountedDevice { device, fs }),
        Err(e) => Err(SetupError::file_system(&device.path, e)),
    }
}

/// Refuses to format a device whose zone file system holds files, unless
/// they all lie under `own_dir` (the caller's own database directory): a
/// device that is not formatted, or formatted and empty, may be formatted. A
/// zone file system that does not mount (damaged) is refused too
/// ([`SetupError::Unmountable`]): its data may still be recovered. Looks
/// read-only: nothing is written.
pub fn check_formattable(device: &OpenedDevice, own_dir: Option<&Path>) -> Result<(), SetupError> {
    let options = MountOptions {
        read_only: true,
        ..MountOptions::default()
    };
    let fs = match ZoneFs::mount_with(device.dev.clone(), options) {
        Ok(fs) => fs,
        Err(ZoneFsError::NotFormatted) => return Ok(()),
        Err(ZoneFsError::Device(d)) => return Err(SetupError::device(&device.path, d)),
        Err(source) => {
            return Err(SetupError::Unmountable {
                path: device.path.clone(),
                source,
            })
        }
    };
    let foreign: Vec<String> = fs
        .files()
        .into_iter()
        .map(|f| f.path)
        .filter(|f| !own_dir.is_some_and(|d| Path::new(f).starts_with(d)))
        .collect();
    match foreign.first() {
        None => Ok(()),
        Some(first) => Err(SetupError::HoldsFiles {
            path: device.path.clone(),
            count: foreign.len(),
            first: first.clone(),
        }),
    }
}

/// Removes an emulated device (its data and zone state files) that this
/// program created, after it could not be formatted. Best effort: what
/// cannot be removed stays.
pub fn remove_emulated(path: &Path) {
    for f in [EmulatedZoned::state_path_of(path), path.to_path_buf()] {
        let _ = std::fs::remove_file(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_geometry_is_a_valid_4_gib_device() {
        let g = default_geometry();
        g.validate().expect("valid");
        assert_eq!(g.device_size(), 4 << 30);
        assert_eq!(g.zone_capacity, g.zone_size);
        assert_eq!((g.max_open_zones, g.max_active_zones), (14, 14));
    }

    #[test]
    fn backends_follow_the_file_type() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(Backend::of(&dir.path().join("missing")), Backend::Emulated);
        assert_eq!(Backend::of(dir.path()), Backend::Emulated);
    }

    #[test]
    fn a_missing_device_without_create_is_a_typed_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("absent.img");
        let err = open_device(&path, None)
            .err()
            .expect("a missing device is refused");
        assert!(matches!(&err, SetupError::Missing { path: p } if *p == path));
        assert!(err.to_string().contains("does not exist"), "{err}");
        assert!(!path.exists(), "nothing was created");
    }

    #[test]
    fn a_blank_device_mounts_as_not_formatted_and_may_be_formatted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("dev.img");
        let mut g = ZonedGeometry::new(8, 1 << 20);
        (g.max_open_zones, g.max_active_zones) = (6, 6);
        let dev = open_device(&path, Some(g)).expect("create");
        assert!(dev.created);
        check_formattable(&dev, None).expect("a blank device may be formatted");
        let err = mount(dev, Mount::ReadOnly)
            .err()
            .expect("a blank device does not mount");
        assert!(matches!(
            err,
            SetupError::FileSystem {
                source: ZoneFsError::NotFormatted,
                ..
            }
        ));
    }

    #[test]
    fn a_device_holding_foreign_files_is_not_formattable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("dev.img");
        let mut g = ZonedGeometry::new(8, 1 << 20);
        (g.max_open_zones, g.max_active_zones) = (6, 6);
        let mounted = format(open_device(&path, Some(g)).expect("create"), 2).expect("format");
        {
            use shale_env::{FileSystem, WriteLifetime};
            mounted.fs.create_dir_all(Path::new("/db")).expect("mkdir");
            let mut f = mounted
                .fs
                .create_append(Path::new("/db/CURRENT"), WriteLifetime::Short)
                .expect("create");
            f.append(b"x").expect("append");
            f.sync().expect("sync");
        }
        drop(mounted);
        let dev = open_device(&path, None).expect("open");
        assert!(!dev.created);
        check_formattable(&dev, Some(Path::new("/db"))).expect("the caller's own files");
        let err = check_formattable(&dev, Some(Path::new("/other")))
            .expect_err("another's files are refused");
        assert!(
            matches!(&err, SetupError::HoldsFiles { count: 1, first, .. } if first == "/db/CURRENT"),
            "{err:?}"
        );
    }
}
