//! Where a command's database lives: a directory of the regular (POSIX) file
//! system, or a directory inside the zone file system (`ZoneFs`) of a zoned
//! device (`--zoned DEVICE`).
//!
//! Commands build one [`Storage`] from their arguments and do everything on
//! the database directory through its [`FileSystem`]: the engine's options
//! get it ([`Storage::options`]), and checking for a database, removing one
//! and listing it go through the trait, never `std::fs`. The device itself
//! is opened, mounted and formatted by `shale_zoned::setup`; this module adds
//! the advice a `shale` user gets with its errors ([`setup_error`]).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use shale::env::FileSystem;
use shale::{Db, Options};
pub use shale_zoned::setup::{
    default_geometry, remove_emulated, Backend, Mount, MountedDevice, OpenedDevice, SetupError,
};
use shale_zoned::{setup, FormatOptions, ZoneFsError, ZoneFsStats, ZonedGeometry};

use crate::args::GeometryArgs;
use crate::error::{Error, Result};
use crate::fmt::human_bytes;

/// The database directory inside a zone file system when `--db` is not given.
pub const ZONED_DEFAULT_DB: &str = "/db";

/// Opens the zoned device at `path` ([`setup::open_device`]), with the
/// advice of [`setup_error`] on failure. Every zoned command opens its
/// device here.
pub fn open_device(path: &Path, create: Option<ZonedGeometry>) -> Result<OpenedDevice> {
    setup::open_device(path, create).map_err(setup_error)
}

/// Mounts the zone file system of `device` ([`setup::mount`]).
pub fn mount(device: OpenedDevice, how: Mount) -> Result<MountedDevice> {
    setup::mount(device, how).map_err(setup_error)
}

/// Formats `device` with `meta_zones` metadata zones and returns it mounted
/// ([`setup::format`]).
pub fn format(device: OpenedDevice, meta_zones: u32) -> Result<MountedDevice> {
    setup::format(device, meta_zones).map_err(setup_error)
}

/// Refuses to format a device holding files other than under `own_dir`
/// ([`setup::check_formattable`]).
pub fn check_formattable(device: &OpenedDevice, own_dir: Option<&Path>) -> Result {
    setup::check_formattable(device, own_dir).map_err(setup_error)
}

/// A device setup error with what to do about it. Only a blank device
/// (zones 0 and 1 empty: [`ZoneFsError::NotFormatted`]) gets the advice to
/// run `mkfs`, which erases every zone; a damaged file system gets `shale
/// zoned check`, which writes nothing.
pub fn setup_error(e: SetupError) -> Error {
    let p = e.path().display().to_string();
    Error::msg(match &e {
        SetupError::Missing { .. } => format!(
            "{e}; create and format an emulated device with `shale zoned mkfs --device {p}`"
        ),
        SetupError::FileSystem {
            source: ZoneFsError::NotFormatted,
            ..
        } => format!(
            "{p} holds no zone file system (not formatted); run `shale zoned mkfs --device {p}` first"
        ),
        SetupError::FileSystem {
            source: ZoneFsError::Corrupt { .. },
            ..
        } => format!(
            "{e}. `shale zoned check --device {p}` reports the damage without writing; do not \
             format the device (`shale zoned mkfs` erases every zone)"
        ),
        SetupError::Unmountable { .. } => {
            format!("{e}: look with `shale zoned check --device {p}`")
        }
        _ => e.to_string(),
    })
}

/// Whether a command may create (and format) an emulated device that does
/// not exist yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Create {
    /// The device must exist and be formatted (commands that write to an
    /// existing database).
    No,
    /// The device must exist and be formatted; it is mounted read-only, so
    /// that nothing is written to it (`get`, `scan`, `stats`, `load
    /// --verify`).
    ReadOnly,
    /// A missing emulated device is created with [`default_geometry`] and
    /// formatted (commands that create a database: `put`, `load`, benches).
    IfMissing,
}

/// True for the names of the files a database of `engine` (shale, or
/// leveldb, which adds `LOG`, `LOG.old` and `*.ldb`) holds.
pub fn is_db_file(engine: &str, name: &str, is_dir: bool) -> bool {
    if is_dir {
        return engine == "shale" && name == shale::LOST_DIR;
    }
    let numbered = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let own = match engine {
        "leveldb" => {
            name == "LOG" || name == "LOG.old" || name.strip_suffix(".ldb").is_some_and(numbered)
        }
        "rocksdb" => {
            name == "LOG"
                || name == "IDENTITY"
                || name.starts_with("LOG.old.")
                || name.strip_prefix("OPTIONS-").is_some_and(numbered)
        }
        // Its format-version and manifest markers replace CURRENT in newer
        // formats.
        "pebble" => {
            name.starts_with("marker.") || name.strip_prefix("OPTIONS-").is_some_and(numbered)
        }
        _ => false,
    };
    own || name == "CURRENT"
        || name == "LOCK"
        || name.ends_with(".tmp")
        || name.ends_with(".dbtmp")
        || name.strip_prefix("MANIFEST-").is_some_and(numbered)
        || name.strip_suffix(".log").is_some_and(numbered)
        || name.strip_suffix(".sst").is_some_and(numbered)
}

/// The refusal of `--mmap_read` on a zone file system.
pub fn mmap_needs_posix() -> Error {
    Error::Usage(
        "--mmap_read needs the regular file system: a zone file system reads its own device".into(),
    )
}

/// The file system a command's database is on; see the module documentation.
pub struct Storage {
    fs: Arc<dyn FileSystem>,
    zoned: Option<MountedDevice>,
}

impl Storage {
    /// The regular file system, as the engine's default options have it.
    pub fn posix() -> Storage {
        Storage {
            fs: Options::default().fs,
            zoned: None,
        }
    }

    /// This storage with its table files read through a memory mapping
    /// ([`PosixOptions::mmap_reads`](shale::env::PosixOptions::mmap_reads));
    /// the regular file system only.
    pub fn mmap_reads(self) -> Result<Storage> {
        if self.zoned.is_some() {
            return Err(mmap_needs_posix());
        }
        Ok(Storage {
            fs: Arc::new(shale::env::PosixFs::new(shale::env::PosixOptions {
                mmap_reads: true,
                ..shale::env::PosixOptions::default()
            })),
            zoned: None,
        })
    }

    /// Storage on an already mounted zone file system.
    pub fn on_zoned(handle: MountedDevice) -> Storage {
        Storage {
            fs: Arc::new(handle.fs.clone()),
            zoned: Some(handle),
        }
    }

    /// The storage of `--zoned DEVICE` (posix without it). A missing emulated
    /// device is created and formatted with the default geometry when
    /// `create` allows it (a line on standard error says so); an existing one
    /// must be formatted.
    pub fn open(zoned: Option<&Path>, create: Create) -> Result<Storage> {
        let Some(path) = zoned else {
            return Ok(Storage::posix());
        };
        let missing = !path
            .try_exists()
            .map_err(|e| Error::msg(format!("{}: {e}", path.display())))?;
        let handle = if missing && create == Create::IfMissing {
            let g = default_geometry();
            let device = open_device(path, Some(g))?;
            eprintln!(
                "created an emulated zoned device {}: {}; formatting it",
                path.display(),
                geometry_line(&g)
            );
            format(device, FormatOptions::default().meta_zones)?
        } else {
            let how = if create == Create::ReadOnly {
                Mount::ReadOnly
            } else {
                Mount::ReadWrite
            };
            mount(open_device(path, None)?, how)?
        };
        Ok(Storage::on_zoned(handle))
    }

    /// The file system the database is on.
    pub fn fs(&self) -> Arc<dyn FileSystem> {
        self.fs.clone()
    }

    /// The zone file system, with `--zoned`.
    pub fn zoned(&self) -> Option<&MountedDevice> {
        self.zoned.as_ref()
    }

    /// `opts` with this storage's file system.
    pub fn options(&self, opts: Options) -> Options {
        opts.fs(self.fs())
    }

    /// The database directory: `--db`, else `default` (a command's default
    /// directory on the regular file system). On a zone file system the
    /// default is the last component of `default` at the root (`/dbbench`
    /// for `shale-data/dbbench`), or [`ZONED_DEFAULT_DB`] without one, and a
    /// relative `--db` is taken from the root (`db` is `/db`).
    pub fn db_dir(&self, db: Option<&Path>, default: Option<&Path>) -> Result<PathBuf> {
        match (db, &self.zoned) {
            (Some(d), Some(_)) if d.is_relative() => Ok(Path::new("/").join(d)),
            (Some(d), _) => Ok(d.to_path_buf()),
            (None, Some(_)) => Ok(match default.and_then(Path::file_name) {
                Some(name) => Path::new("/").join(name),
                None => PathBuf::from(ZONED_DEFAULT_DB),
            }),
            (None, None) => default
                .map(Path::to_path_buf)
                .ok_or_else(|| Error::Usage("--db DIR is required (or --zoned DEVICE)".into())),
        }
    }

    /// A description for reports: `posix` or `zoned (emulated) PATH`.
    pub fn label(&self) -> String {
        match &self.zoned {
            Some(z) => z.device.label(),
            None => "posix".into(),
        }
    }

    /// True if `dir` holds a database (its `CURRENT` file).
    pub fn has_db(&self, dir: &Path) -> Result<bool> {
        self.fs
            .exists(&dir.join("CURRENT"))
            .map_err(|e| Error::msg(format!("checking {}: {e}", dir.display())))
    }

    /// The path whose device the time-series sampler watches: the database
    /// directory, or the zoned device (an emulated device's file lies on the
    /// disk that takes its writes).
    pub fn sample_path(&self, db_dir: &Path) -> PathBuf {
        match &self.zoned {
            Some(z) => z.device.path.clone(),
            None => db_dir.to_path_buf(),
        }
    }

    /// What the time series' device columns show on this storage (nothing to
    /// say on posix).
    pub fn sampler_notes(&self) -> Vec<String> {
        match &self.zoned {
            Some(z) if z.device.backend == Backend::Emulated => vec![format!(
                "device: the database is on the emulated zoned device {}; the device columns are \
                 the disk holding that file{}",
                z.device.path.display(),
                if z.device.direct_io {
                    " (written and read with O_DIRECT)"
                } else {
                    " (through the page cache: the host file system refused O_DIRECT)"
                }
            )],
            _ => Vec::new(),
        }
    }

    /// Deletes the shale database in `dir` for a fresh one
    /// ([`Db::destroy`](shale::Db::destroy)): only when `dir` is absent,
    /// empty or holds a shale database and nothing else, and only under the
    /// database's lock, so a database another process has open (a running
    /// `load`, a reader) is refused with the lock error and nothing is
    /// deleted. The directory itself stays.
    pub fn remove_db_dir(&self, dir: &Path) -> Result {
        Db::destroy(dir, &self.options(Options::default())).map_err(|e| {
            Error::msg(format!(
                "refusing to remove {}: {e}; pass another --db (or --use_existing_db)",
                dir.display()
            ))
        })
    }

    /// Checks that `dir` (on the regular file system) is absent, empty or
    /// holds only files of a peer `engine`'s database ([`is_db_file`]), with
    /// its `CURRENT` (or Pebble's manifest marker), before the engine's harness is asked for a fresh one. The
    /// harness deletes it with the engine's own destroy, under the engine's
    /// lock; nothing is removed here.
    pub fn check_peer_db_dir(dir: &Path, engine: &str) -> Result {
        let refuse = |why: String| {
            Error::msg(format!(
                "refusing to remove {}: {why}; pass another --db (or --use_existing_db)",
                dir.display()
            ))
        };
        let names = match std::fs::read_dir(dir) {
            Ok(entries) => entries
                .map(|e| e.map(|e| (e.file_name().to_string_lossy().into_owned(), e.path())))
                .collect::<io::Result<Vec<_>>>()
                .map_err(|e| Error::msg(format!("reading {}: {e}", dir.display())))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotADirectory || dir.is_file() => {
                return Err(refuse("it is not a directory".into()))
            }
            Err(e) => return Err(Error::msg(format!("reading {}: {e}", dir.display()))),
        };
        for (name, path) in &names {
            if !is_db_file(engine, name, path.is_dir()) {
                return Err(refuse(format!(
                    "it holds {name:?}, which is not a {engine} file"
                )));
            }
        }
        let current = |n: &str| n == "CURRENT" || n.starts_with("marker.manifest.");
        if !names.is_empty() && !names.iter().any(|(n, _)| current(n)) {
            return Err(refuse(format!(
                "it holds files but no {engine} database (no CURRENT)"
            )));
        }
        Ok(())
    }

    /// Makes the zone file system's metadata durable (creates, renames and
    /// removes since the last sync); nothing to do on posix. Call it once the
    /// databases are closed, before exiting. A command that fails before
    /// leaves the file system as a crash would: as of its last metadata sync,
    /// which the engine's own syncs make (nothing durable is lost).
    pub fn finish(self) -> Result {
        self.sync()
    }

    /// Syncs the zone file system's metadata.
    pub fn sync(&self) -> Result {
        match &self.zoned {
            Some(z) => z.fs.sync_metadata().map_err(|e| {
                Error::msg(format!(
                    "syncing the zone file system on {}: {e}",
                    z.device.path.display()
                ))
            }),
            None => Ok(()),
        }
    }
}

/// One line describing a geometry: zones, sizes, block size and limits.
pub fn geometry_line(g: &ZonedGeometry) -> String {
    let limit = |n: u32| {
        if n == 0 {
            "no limit".to_string()
        } else {
            n.to_string()
        }
    };
    format!(
        "{} zones of {} (capacity {}), {}-byte blocks, {} in all; max open zones {}, max active zones {}",
        g.nr_zones,
        human_bytes(g.zone_size),
        human_bytes(g.zone_capacity),
        g.block_size,
        human_bytes(g.device_size()),
        limit(g.max_open_zones),
        limit(g.max_active_zones)
    )
}

impl GeometryArgs {
    /// True if any geometry flag was given.
    pub fn any(&self) -> bool {
        self.zones.is_some()
            || self.zone_size.is_some()
            || self.zone_capacity.is_some()
            || self.block_size.is_some()
            || self.max_open.is_some()
            || self.max_active.is_some()
    }

    /// The geometry asked for: [`default_geometry`] with the flags given;
    /// the capacity follows the zone size unless given.
    pub fn geometry(&self) -> Result<ZonedGeometry> {
        let d = default_geometry();
        let zone_size = self.zone_size.unwrap_or(d.zone_size);
        let block_size = match self.block_size {
            None => d.block_size,
            Some(b) => u32::try_from(b)
                .map_err(|_| Error::Usage(format!("--block-size {b} is too large")))?,
        };
        let g = ZonedGeometry {
            nr_zones: self.zones.unwrap_or(d.nr_zones),
            zone_size,
            zone_capacity: self.zone_capacity.unwrap_or(zone_size),
            block_size,
            max_open_zones: self.max_open.unwrap_or(d.max_open_zones),
            max_active_zones: self.max_active.unwrap_or(d.max_active_zones),
        };
        g.validate()
            .map_err(|e| Error::Usage(format!("bad device geometry: {e}")))?;
        Ok(g)
    }
}

/// A zone geometry as JSON: `zones`, sizes, block size, limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct GeometryDoc {
    /// Zones on the device.
    pub zones: u32,
    /// Bytes from one zone's start to the next's.
    pub zone_size: u64,
    /// Writable bytes of a zone.
    pub zone_capacity: u64,
    /// The device's write unit.
    pub block_size: u32,
    /// Zones open for writing at once.
    pub max_open_zones: u32,
    /// Zones open or closed but not full at once.
    pub max_active_zones: u32,
}

impl From<&ZonedGeometry> for GeometryDoc {
    fn from(g: &ZonedGeometry) -> GeometryDoc {
        GeometryDoc {
            zones: g.nr_zones,
            zone_size: g.zone_size,
            zone_capacity: g.zone_capacity,
            block_size: g.block_size,
            max_open_zones: g.max_open_zones,
            max_active_zones: g.max_active_zones,
        }
    }
}

/// Bytes the zone file system was asked to write, per lifetime hint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HostBytesDoc {
    /// Without a hint.
    pub not_set: u64,
    /// Short-lived (the WAL).
    pub short: u64,
    /// Medium.
    pub medium: u64,
    /// Long.
    pub long: u64,
    /// Extreme.
    pub extreme: u64,
    /// All of them.
    pub total: u64,
}

/// Every counter and derived figure of [`ZoneFsStats`] as JSON (`bench
/// zns`, `zoned df --json`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ZoneFsDoc {
    /// Bytes of files written, per lifetime hint.
    pub host_bytes: HostBytesDoc,
    /// Bytes written to fill blocks.
    pub padding_bytes: u64,
    /// Bytes of the metadata log.
    pub metadata_bytes: u64,
    /// Bytes the collector moved.
    pub gc_bytes: u64,
    /// Zones the collector emptied.
    pub gc_zones: u64,
    /// Collections that failed.
    pub gc_errors: u64,
    /// Zone resets.
    pub resets: u64,
    /// Zone finishes.
    pub finishes: u64,
    /// Bytes the file system wrote for its files.
    pub fs_bytes: u64,
    /// Bytes it wrote to the device.
    pub device_bytes: u64,
    /// `device_bytes / host total`.
    pub waf: f64,
    /// `device_bytes / fs_bytes`.
    pub fs_overhead: f64,
}

impl From<&ZoneFsStats> for ZoneFsDoc {
    fn from(s: &ZoneFsStats) -> ZoneFsDoc {
        ZoneFsDoc {
            host_bytes: HostBytesDoc {
                not_set: s.host_bytes[0],
                short: s.host_bytes[1],
                medium: s.host_bytes[2],
                long: s.host_bytes[3],
                extreme: s.host_bytes[4],
                total: s.host_total(),
            },
            padding_bytes: s.padding_bytes,
            metadata_bytes: s.metadata_bytes,
            gc_bytes: s.gc_bytes,
            gc_zones: s.gc_zones,
            gc_errors: s.gc_errors,
            resets: s.resets,
            finishes: s.finishes,
            fs_bytes: s.fs_bytes(),
            device_bytes: s.device_bytes(),
            waf: s.waf(),
            fs_overhead: s.fs_overhead(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_device_without_create_names_mkfs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("zns.img");
        let e = open_device(&path, None).err().expect("must fail");
        let text = e.to_string();
        assert!(
            text.contains("does not exist") && text.contains("shale zoned mkfs --device"),
            "{text}"
        );
        assert!(!path.exists());
    }

    #[test]
    fn only_a_blank_device_is_told_to_run_mkfs() {
        let path = Path::new("/dev/zns");
        let fs_error = |source| {
            setup_error(SetupError::FileSystem {
                path: path.to_path_buf(),
                source,
            })
        };
        let blank = fs_error(ZoneFsError::NotFormatted).to_string();
        assert!(
            blank.contains("not formatted")
                && blank.contains("run `shale zoned mkfs --device /dev/zns` first"),
            "{blank}"
        );
        let damaged = fs_error(ZoneFsError::Corrupt {
            reason: "the superblock in zone 0 is damaged".into(),
        })
        .to_string();
        assert!(
            damaged.contains("damaged")
                && damaged.contains("the superblock in zone 0")
                && damaged.contains("shale zoned check --device /dev/zns")
                && !damaged.contains("run `shale zoned mkfs"),
            "{damaged}"
        );
    }

    #[test]
    fn zoned_db_dirs_default_to_slash_db_and_are_absolute() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("zns.img");
        let mut g = ZonedGeometry::new(8, 1 << 20);
        g.max_open_zones = 6;
        g.max_active_zones = 6;
        let handle = format(open_device(&path, Some(g)).expect("create"), 2).expect("format");
        let s = Storage::on_zoned(handle);
        assert_eq!(s.db_dir(None, None).expect("dir"), PathBuf::from("/db"));
        assert_eq!(
            s.db_dir(None, Some(Path::new("shale-data/dbbench")))
                .expect("dir"),
            PathBuf::from("/dbbench")
        );
        assert_eq!(
            s.db_dir(Some(Path::new("x/y")), None).expect("dir"),
            PathBuf::from("/x/y")
        );
        assert!(s.label().starts_with("zoned (emulated) "), "{}", s.label());
        assert!(!s.has_db(Path::new("/db")).expect("check"));
        s.finish().expect("sync");
        let p = Storage::posix();
        match p.db_dir(None, None) {
            Err(Error::Usage(m)) => assert!(m.contains("--db DIR is required"), "{m}"),
            other => panic!("expected a usage error, got {other:?}"),
        }
        assert_eq!(
            p.db_dir(None, Some(Path::new("d"))).expect("dir"),
            PathBuf::from("d")
        );
    }
}
