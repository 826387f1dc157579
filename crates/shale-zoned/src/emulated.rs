//! A zoned device emulated on a regular file, with durable zone state.
//!
//! # Files
//!
//! * The **data file** (the path given): `nr_zones * zone_size` bytes,
//!   preallocated with `fallocate`, zone `i` at offset `i * zone_size`. It is
//!   written with `O_DIRECT` from 4 KiB-aligned buffers when the file system
//!   accepts it and the block size is a multiple of 4 KiB; otherwise (tmpfs on
//!   older kernels, 512-byte blocks) through the page cache, which
//!   [`EmulatedZoned::direct_io`] reports. It is `flock`ed while open, so a
//!   second open (in this process or another) fails.
//! * The **state file** (the path with `.zones` appended,
//!   [`EmulatedZoned::state_path_of`]): the geometry, every zone's write
//!   pointer and condition, and the write counters, with a magic, a version
//!   and a CRC32C (`docs/format/zoned-emulator.md`). It is replaced atomically:
//!   written to `<state>.tmp`, fsynced, renamed over the state file, and the
//!   directory fsynced.
//!
//! # Durability
//!
//! * Writes and explicit opens and closes are **not durable** until
//!   [`ZonedDevice::sync`] returns: `sync` snapshots the zone state, fsyncs the
//!   data file (so every byte below the snapshot's write pointers is on disk),
//!   then replaces the state file. A crash (or dropping the device without
//!   `sync`, which writes nothing) brings every write pointer back to the last
//!   sync; the bytes written after it are lost (they read as zeros), as
//!   unsynced writes are on a real device with a volatile write cache.
//! * **Resets, finishes** and [`EmulatedZoned::set_zone_offline`] /
//!   [`EmulatedZoned::set_zone_read_only`] are durable when they return: each
//!   ends with a `sync`. A reset therefore never comes back after a crash over
//!   data written into the zone after it, as on a ZNS device whose zone state
//!   changes are persistent.
//! * Open zones are volatile, as on a ZNS controller after a reset or power
//!   cycle: when the device is opened again, every zone that was implicitly or
//!   explicitly open at the last sync comes back **closed** (or empty if
//!   nothing was written). Every other condition comes back as it was.
//! * The write counters ([`ZonedStats`]) are persisted with the state: lifetime
//!   totals as of the last sync.
//!
//! # Concurrency
//!
//! Every method takes `&self`. A zone's writes and operations are serialized
//! by a lock of that zone (the kernel's zone write lock); the zone table is
//! under one short-held mutex, released during data I/O, so writes to
//! different zones run in parallel. An implicit close picks the oldest idle
//! implicitly open zone, or else one with a write under way (which then
//! completes into a closed zone). Reads take a snapshot of the write pointers
//! they need and do not wait for writes.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::aligned::{is_aligned, AlignedBuf, MEM_ALIGN};
use crate::device::{
    Result, Zone, ZoneCondition, ZoneOp, ZoneStats, ZonedDevice, ZonedError, ZonedGeometry,
    ZonedStats,
};
use crate::state::{StateFile, ZoneRecord};
use crate::sys;

/// Options of [`EmulatedZoned`].
#[derive(Clone, Copy, Debug)]
pub struct EmulatedOptions {
    /// Try `O_DIRECT` for the data file (default true); refused by the file
    /// system, the device falls back to buffered I/O.
    pub direct_io: bool,
    /// Fail reads that reach at or above a zone's write pointer (or the end of
    /// the data of a full zone) with [`ZonedError::ReadBeyondWritePointer`]
    /// instead of returning zeros as the kernel's devices do (default false).
    /// Catches a layer above that reads what it never wrote.
    pub strict_reads: bool,
}

impl Default for EmulatedOptions {
    fn default() -> Self {
        EmulatedOptions {
            direct_io: true,
            strict_reads: false,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct ZoneMeta {
    /// Bytes written from the zone's start.
    written: u64,
    condition: ZoneCondition,
    stats: ZoneStats,
    /// A write's data I/O is under way (never closed implicitly meanwhile).
    in_flight: bool,
}

/// The zone table and the resource counters, as `null_blk` keeps them.
struct Zones {
    zones: Vec<ZoneMeta>,
    /// Implicitly open zones, oldest first (the first is closed to make room).
    implicit_open: VecDeque<u32>,
    explicit_open: u32,
    closed: u32,
}

impl Zones {
    fn open_count(&self) -> u32 {
        self.implicit_open.len() as u32 + self.explicit_open
    }

    fn active_count(&self) -> u32 {
        self.open_count() + self.closed
    }

    fn meta(&self, zone: u32) -> &ZoneMeta {
        &self.zones[zone as usize]
    }

    fn meta_mut(&mut self, zone: u32) -> &mut ZoneMeta {
        &mut self.zones[zone as usize]
    }

    /// Moves `zone` to `to`, keeping the counters right.
    fn set_condition(&mut self, zone: u32, to: ZoneCondition) {
        let from = self.meta(zone).condition;
        if from == to {
            return;
        }
        match from {
            ZoneCondition::ImplicitOpen => self.implicit_open.retain(|&z| z != zone),
            ZoneCondition::ExplicitOpen => self.explicit_open -= 1,
            ZoneCondition::Closed => self.closed -= 1,
            _ => {}
        }
        match to {
            ZoneCondition::ImplicitOpen => self.implicit_open.push_back(zone),
            ZoneCondition::ExplicitOpen => self.explicit_open += 1,
            ZoneCondition::Closed => self.closed += 1,
            _ => {}
        }
        self.meta_mut(zone).condition = to;
    }

    /// A zone that stops being open: closed, or empty if nothing was written
    /// (or is being written).
    fn close(&mut self, zone: u32) {
        let m = self.meta(zone);
        let to = if m.written == 0 && !m.in_flight {
            ZoneCondition::Empty
        } else {
            ZoneCondition::Closed
        };
        self.set_condition(zone, to);
    }

    /// Room for one more open zone: closes the oldest implicitly open zone
    /// (other than `zone`, without a write under way) if the limit is reached.
    fn check_open(&mut self, g: &ZonedGeometry, zone: u32) -> Result<()> {
        if g.max_open_zones == 0 || self.open_count() < g.max_open_zones {
            return Ok(());
        }
        // An idle zone if there is one, else one whose write is under way (it
        // completes into a closed zone, as a device completes a command
        // before it closes the zone).
        let candidates = || self.implicit_open.iter().copied().filter(|&z| z != zone);
        let victim = candidates()
            .find(|&z| !self.meta(z).in_flight)
            .or_else(|| candidates().next());
        match victim {
            Some(v) => {
                self.close(v);
                Ok(())
            }
            None => Err(ZonedError::TooManyOpenZones {
                zone,
                max_open: g.max_open_zones,
            }),
        }
    }

    /// Room for `zone` to become open from empty or closed (active limit
    /// first, then open limit, as `null_blk` checks them).
    fn check_resources(&mut self, g: &ZonedGeometry, zone: u32) -> Result<()> {
        match self.meta(zone).condition {
            ZoneCondition::Empty => {
                if g.max_active_zones != 0 && self.active_count() >= g.max_active_zones {
                    return Err(ZonedError::TooManyActiveZones {
                        zone,
                        max_active: g.max_active_zones,
                    });
                }
                self.check_open(g, zone)
            }
            ZoneCondition::Closed => self.check_open(g, zone),
            _ => Ok(()),
        }
    }
}

/// A zoned device emulated on a preallocated regular file (see the module
/// documentation for the files, durability and concurrency).
///
/// Dropping it writes nothing: what was not synced is lost, as in a crash.
pub struct EmulatedZoned {
    path: PathBuf,
    state_path: PathBuf,
    geometry: ZonedGeometry,
    options: EmulatedOptions,
    data: File,
    direct: bool,
    zone_locks: Vec<Mutex<()>>,
    zones: Mutex<Zones>,
    /// Serializes syncs; holds the state file's sequence number.
    sync_lock: Mutex<u64>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn io_at(path: &Path, what: &str, e: io::Error) -> ZonedError {
    ZonedError::io(format!("{}: {what}", path.display()), e)
}

impl EmulatedZoned {
    /// The state file of the device whose data file is `path`: `path` with
    /// `.zones` appended.
    pub fn state_path_of(path: &Path) -> PathBuf {
        let mut s = OsString::from(path.as_os_str());
        s.push(".zones");
        PathBuf::from(s)
    }

    /// Creates an emulated device at `path` (data file) with every zone empty,
    /// durably; if a device with the same geometry already exists there, opens
    /// it instead.
    ///
    /// Errors: [`ZonedError::InvalidGeometry`];
    /// [`ZonedError::GeometryMismatch`] when a device of another geometry
    /// exists; [`ZonedError::NotEmulatedDevice`] when `path` exists but is not
    /// one (it is never overwritten); I/O errors.
    pub fn create(
        path: &Path,
        geometry: &ZonedGeometry,
        options: EmulatedOptions,
    ) -> Result<EmulatedZoned> {
        geometry.validate()?;
        let state_path = Self::state_path_of(path);
        let data_exists = path
            .try_exists()
            .map_err(|e| io_at(path, "cannot check", e))?;
        let state_exists = state_path
            .try_exists()
            .map_err(|e| io_at(&state_path, "cannot check", e))?;
        if data_exists || state_exists {
            if !state_exists {
                return Err(ZonedError::NotEmulatedDevice {
                    path: path.to_path_buf(),
                    reason: format!(
                        "the file exists but has no zone state file {}; not overwriting it",
                        state_path.display()
                    ),
                });
            }
            let state = read_state(&state_path)?;
            if state.geometry != *geometry {
                return Err(ZonedError::GeometryMismatch {
                    path: path.to_path_buf(),
                    existing: state.geometry,
                    requested: *geometry,
                });
            }
            return Self::open(path, options);
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| io_at(path, "cannot create", e))?;
        let made = (|| {
            sys::preallocate(&file, geometry.device_size())
                .map_err(|e| io_at(path, "cannot preallocate", e))?;
            file.sync_all().map_err(|e| io_at(path, "cannot sync", e))?;
            let empty = ZoneRecord {
                written: 0,
                condition: ZoneCondition::Empty,
                stats: ZoneStats::default(),
            };
            write_state(
                &state_path,
                &StateFile {
                    sequence: 0,
                    geometry: *geometry,
                    zones: vec![empty; geometry.nr_zones as usize],
                },
            )
        })();
        drop(file);
        if let Err(e) = made {
            // Nothing of a device that could not be made stays behind (both
            // files are this call's own: neither existed before).
            let mut tmp = OsString::from(state_path.as_os_str());
            tmp.push(".tmp");
            for f in [PathBuf::from(tmp), state_path, path.to_path_buf()] {
                let _ = std::fs::remove_file(f);
            }
            return Err(e);
        }
        Self::open(path, options)
    }

    /// Opens the emulated device whose data file is `path`, as of its last
    /// sync (open zones come back closed).
    ///
    /// Errors: [`ZonedError::NotEmulatedDevice`] naming the file when it has
    /// no state file, a foreign one, or the wrong size;
    /// [`ZonedError::Corrupt`] for a damaged state file; an I/O error (kind
    /// `WouldBlock` when the device is already open).
    pub fn open(path: &Path, options: EmulatedOptions) -> Result<EmulatedZoned> {
        let state_path = Self::state_path_of(path);
        let meta = std::fs::metadata(path).map_err(|e| io_at(path, "cannot open", e))?;
        if !meta.is_file() {
            return Err(ZonedError::NotEmulatedDevice {
                path: path.to_path_buf(),
                reason: "not a regular file".into(),
            });
        }
        let state = match std::fs::read(&state_path) {
            Ok(bytes) => StateFile::decode(&state_path, &bytes).map_err(|e| match e {
                ZonedError::NotEmulatedDevice { reason, .. } => ZonedError::NotEmulatedDevice {
                    path: path.to_path_buf(),
                    reason: format!("{}: {reason}", state_path.display()),
                },
                other => other,
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(ZonedError::NotEmulatedDevice {
                    path: path.to_path_buf(),
                    reason: format!("no zone state file {}", state_path.display()),
                })
            }
            Err(e) => return Err(io_at(&state_path, "cannot read", e)),
        };
        let geometry = state.geometry;
        if meta.len() != geometry.device_size() {
            return Err(ZonedError::NotEmulatedDevice {
                path: path.to_path_buf(),
                reason: format!(
                    "the file is {} bytes; its zone state describes {} bytes ({geometry})",
                    meta.len(),
                    geometry.device_size()
                ),
            });
        }
        let open = |direct: bool| {
            let mut o = OpenOptions::new();
            o.read(true).write(true);
            if direct {
                o.custom_flags(libc::O_DIRECT);
            }
            o.open(path)
        };
        let want_direct =
            options.direct_io && u64::from(geometry.block_size) % MEM_ALIGN as u64 == 0;
        let (data, direct) = match want_direct {
            true => match open(true) {
                Ok(f) => (f, true),
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => (
                    open(false).map_err(|e| io_at(path, "cannot open", e))?,
                    false,
                ),
                Err(e) => return Err(io_at(path, "cannot open", e)),
            },
            false => (
                open(false).map_err(|e| io_at(path, "cannot open", e))?,
                false,
            ),
        };
        sys::lock_exclusive(&data).map_err(|e| {
            let msg = if e.kind() == io::ErrorKind::WouldBlock {
                "already open (locked)"
            } else {
                "cannot lock"
            };
            io_at(path, msg, e)
        })?;
        let mut zones = Zones {
            zones: Vec::with_capacity(state.zones.len()),
            implicit_open: VecDeque::new(),
            explicit_open: 0,
            closed: 0,
        };
        for r in &state.zones {
            // Open zones come back closed (or empty), as after a ZNS controller reset.
            let condition = match r.condition {
                c if c.is_open() && r.written == 0 => ZoneCondition::Empty,
                c if c.is_open() => ZoneCondition::Closed,
                c => c,
            };
            if condition == ZoneCondition::Closed {
                zones.closed += 1;
            }
            zones.zones.push(ZoneMeta {
                written: r.written,
                condition,
                stats: r.stats,
                in_flight: false,
            });
        }
        Ok(EmulatedZoned {
            path: path.to_path_buf(),
            state_path,
            geometry,
            options,
            data,
            direct,
            zone_locks: (0..geometry.nr_zones).map(|_| Mutex::new(())).collect(),
            zones: Mutex::new(zones),
            sync_lock: Mutex::new(state.sequence),
        })
    }

    /// True if the data file is written and read with `O_DIRECT`; false when
    /// the file system refused it (or it was not asked for) and I/O goes
    /// through the page cache.
    pub fn direct_io(&self) -> bool {
        self.direct
    }

    /// The data file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The state file.
    pub fn state_path(&self) -> &Path {
        &self.state_path
    }

    /// Fault injection: turns `zone` read-only, as a device does when the
    /// zone's media wears out (readable, no longer writable or resettable).
    /// Durable when it returns.
    pub fn set_zone_read_only(&self, zone: u32) -> Result<()> {
        self.fail_zone(zone, ZoneCondition::ReadOnly)
    }

    /// Fault injection: takes `zone` offline (neither readable nor writable).
    /// Durable when it returns.
    pub fn set_zone_offline(&self, zone: u32) -> Result<()> {
        self.fail_zone(zone, ZoneCondition::Offline)
    }

    fn fail_zone(&self, zone: u32, to: ZoneCondition) -> Result<()> {
        self.check_zone(zone)?;
        let _w = lock(&self.zone_locks[zone as usize]);
        {
            let mut z = lock(&self.zones);
            let from = z.meta(zone).condition;
            if from == ZoneCondition::Offline && to == ZoneCondition::ReadOnly {
                return Err(ZonedError::InvalidState {
                    zone,
                    condition: from,
                    op: ZoneOp::Write,
                });
            }
            z.set_condition(zone, to);
        }
        self.sync()
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

    /// A write at `offset` (or the write pointer when `None`) of `zone`.
    fn write_zone(&self, zone: u32, offset: Option<u64>, data: &[u8]) -> Result<u64> {
        let g = &self.geometry;
        self.check_zone(zone)?;
        let len = data.len() as u64;
        let block = u64::from(g.block_size);
        if !len.is_multiple_of(block) || offset.is_some_and(|o| o % block != 0) {
            return Err(ZonedError::Unaligned {
                offset: offset.unwrap_or(g.zone_start(zone)),
                len,
                block_size: g.block_size,
            });
        }
        let _w = lock(&self.zone_locks[zone as usize]);
        let start = g.zone_start(zone);
        let at = {
            let mut z = lock(&self.zones);
            let m = *z.meta(zone);
            match m.condition {
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
            let wp = start + m.written;
            let at = offset.unwrap_or(wp);
            if at != wp {
                return Err(ZonedError::NotAtWritePointer {
                    zone,
                    offset: at,
                    write_pointer: wp,
                });
            }
            if m.written + len > g.zone_capacity {
                return Err(ZonedError::BeyondCapacity {
                    zone,
                    offset: at,
                    len,
                    capacity_end: start + g.zone_capacity,
                });
            }
            if len == 0 {
                return Ok(at);
            }
            z.check_resources(g, zone)?;
            if m.condition != ZoneCondition::ExplicitOpen {
                z.set_condition(zone, ZoneCondition::ImplicitOpen);
            }
            z.meta_mut(zone).in_flight = true;
            at
        };
        let written = self.write_data(at, data);
        let mut z = lock(&self.zones);
        z.meta_mut(zone).in_flight = false;
        if written.is_err()
            && z.meta(zone).condition == ZoneCondition::Closed
            && z.meta(zone).written == 0
        {
            // Closed during the failed write: nothing landed, so empty.
            z.set_condition(zone, ZoneCondition::Empty);
        }
        written?;
        let m = z.meta_mut(zone);
        m.written += len;
        m.stats.bytes_written += len;
        if m.written == g.zone_capacity {
            z.set_condition(zone, ZoneCondition::Full);
        }
        Ok(at)
    }

    fn write_data(&self, offset: u64, data: &[u8]) -> Result<()> {
        let r = if self.direct && !is_aligned(data) {
            self.data
                .write_all_at(AlignedBuf::copy_of(data).as_slice(), offset)
        } else {
            self.data.write_all_at(data, offset)
        };
        r.map_err(|e| {
            io_at(
                &self.path,
                &format!("write of {} bytes at offset {offset}", data.len()),
                e,
            )
        })
    }

    /// Reads file bytes `offset..offset + buf.len()` (inside the file).
    fn read_data(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let block = u64::from(self.geometry.block_size);
        let len = buf.len() as u64;
        let fail = |e: io::Error| {
            io_at(
                &self.path,
                &format!("read of {len} bytes at offset {offset}"),
                e,
            )
        };
        if !self.direct
            || (offset.is_multiple_of(block) && len.is_multiple_of(block) && is_aligned(buf))
        {
            return self.data.read_exact_at(buf, offset).map_err(fail);
        }
        let start = offset - offset % block;
        let end = (offset + len).div_ceil(block) * block;
        let mut window = AlignedBuf::zeroed((end - start) as usize);
        self.data
            .read_exact_at(window.as_mut_slice(), start)
            .map_err(fail)?;
        let from = (offset - start) as usize;
        buf.copy_from_slice(&window.as_slice()[from..from + buf.len()]);
        Ok(())
    }

    /// The report of zone `index` from the zone table.
    fn zone_report(&self, z: &Zones, index: u32) -> Zone {
        let g = &self.geometry;
        let m = z.meta(index);
        let start = g.zone_start(index);
        Zone {
            index,
            start,
            size: g.zone_size,
            capacity: g.zone_capacity,
            write_pointer: if m.condition == ZoneCondition::Full {
                start + g.zone_size
            } else {
                start + m.written
            },
            condition: m.condition,
        }
    }
}

fn read_state(state_path: &Path) -> Result<StateFile> {
    let bytes = std::fs::read(state_path).map_err(|e| io_at(state_path, "cannot read", e))?;
    StateFile::decode(state_path, &bytes)
}

/// Replaces the state file atomically and durably.
fn write_state(state_path: &Path, state: &StateFile) -> Result<()> {
    let mut tmp = OsString::from(state_path.as_os_str());
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let bytes = state.encode();
    let mut f = File::create(&tmp).map_err(|e| io_at(&tmp, "cannot create", e))?;
    f.write_all(&bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| io_at(&tmp, "cannot write", e))?;
    drop(f);
    std::fs::rename(&tmp, state_path).map_err(|e| io_at(&tmp, "cannot rename", e))?;
    let dir = match state_path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_at(dir, "cannot sync directory", e))
}

impl ZonedDevice for EmulatedZoned {
    fn geometry(&self) -> ZonedGeometry {
        self.geometry
    }

    fn report_zones(&self, first: u32, count: u32) -> Result<Vec<Zone>> {
        self.check_zone(first)?;
        let end = first.saturating_add(count).min(self.geometry.nr_zones);
        let z = lock(&self.zones);
        Ok((first..end).map(|i| self.zone_report(&z, i)).collect())
    }

    fn open_zone(&self, zone: u32) -> Result<()> {
        self.check_zone(zone)?;
        let _w = lock(&self.zone_locks[zone as usize]);
        let mut z = lock(&self.zones);
        match z.meta(zone).condition {
            ZoneCondition::ExplicitOpen => Ok(()),
            ZoneCondition::Empty | ZoneCondition::Closed => {
                z.check_resources(&self.geometry, zone)?;
                z.set_condition(zone, ZoneCondition::ExplicitOpen);
                Ok(())
            }
            ZoneCondition::ImplicitOpen => {
                z.set_condition(zone, ZoneCondition::ExplicitOpen);
                Ok(())
            }
            condition => Err(ZonedError::InvalidState {
                zone,
                condition,
                op: ZoneOp::Open,
            }),
        }
    }

    fn close_zone(&self, zone: u32) -> Result<()> {
        self.check_zone(zone)?;
        let _w = lock(&self.zone_locks[zone as usize]);
        let mut z = lock(&self.zones);
        match z.meta(zone).condition {
            ZoneCondition::Closed => Ok(()),
            ZoneCondition::ImplicitOpen | ZoneCondition::ExplicitOpen => {
                z.close(zone);
                Ok(())
            }
            condition => Err(ZonedError::InvalidState {
                zone,
                condition,
                op: ZoneOp::Close,
            }),
        }
    }

    fn finish_zone(&self, zone: u32) -> Result<()> {
        self.check_zone(zone)?;
        let _w = lock(&self.zone_locks[zone as usize]);
        {
            let mut z = lock(&self.zones);
            match z.meta(zone).condition {
                ZoneCondition::Full => return Ok(()),
                ZoneCondition::Empty | ZoneCondition::Closed => {
                    z.check_resources(&self.geometry, zone)?
                }
                ZoneCondition::ImplicitOpen | ZoneCondition::ExplicitOpen => {}
                condition => {
                    return Err(ZonedError::InvalidState {
                        zone,
                        condition,
                        op: ZoneOp::Finish,
                    })
                }
            }
            z.set_condition(zone, ZoneCondition::Full);
            z.meta_mut(zone).stats.finishes += 1;
        }
        self.sync()
    }

    fn reset_zone(&self, zone: u32) -> Result<()> {
        self.check_zone(zone)?;
        let _w = lock(&self.zone_locks[zone as usize]);
        {
            let mut z = lock(&self.zones);
            match z.meta(zone).condition {
                ZoneCondition::Empty => return Ok(()),
                ZoneCondition::ImplicitOpen
                | ZoneCondition::ExplicitOpen
                | ZoneCondition::Closed
                | ZoneCondition::Full => {}
                condition => {
                    return Err(ZonedError::InvalidState {
                        zone,
                        condition,
                        op: ZoneOp::Reset,
                    })
                }
            }
            z.set_condition(zone, ZoneCondition::Empty);
            let m = z.meta_mut(zone);
            m.written = 0;
            m.stats.resets += 1;
        }
        self.sync()
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        let zone = self.geometry.write_zone(offset, data.len() as u64)?;
        self.write_zone(zone, Some(offset), data).map(|_| ())
    }

    fn append(&self, zone: u32, data: &[u8]) -> Result<u64> {
        self.write_zone(zone, None, data)
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let g = &self.geometry;
        let len = buf.len() as u64;
        let end = g.read_end(offset, len)?;
        let mut pos = offset;
        while pos < end {
            let zone = (pos / g.zone_size) as u32;
            let zone_start = g.zone_start(zone);
            let piece_end = end.min(zone_start + g.zone_size);
            let m = *lock(&self.zones).meta(zone);
            if m.condition == ZoneCondition::Offline {
                return Err(ZonedError::InvalidState {
                    zone,
                    condition: m.condition,
                    op: ZoneOp::Read,
                });
            }
            let valid_end = zone_start + m.written;
            if self.options.strict_reads && piece_end > valid_end {
                return Err(ZonedError::ReadBeyondWritePointer {
                    zone,
                    offset: pos.max(valid_end),
                    write_pointer: valid_end,
                });
            }
            let piece = &mut buf[(pos - offset) as usize..(piece_end - offset) as usize];
            let valid = valid_end.clamp(pos, piece_end) - pos;
            let (data, zeros) = piece.split_at_mut(valid as usize);
            if !data.is_empty() {
                self.read_data(pos, data)?;
            }
            zeros.fill(0);
            pos = piece_end;
        }
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        let mut sequence = lock(&self.sync_lock);
        let zones: Vec<ZoneRecord> = lock(&self.zones)
            .zones
            .iter()
            .map(|m| ZoneRecord {
                written: m.written,
                condition: m.condition,
                stats: m.stats,
            })
            .collect();
        // The data first: every byte below the snapshot's write pointers is
        // durable before the state that makes it readable.
        self.data
            .sync_data()
            .map_err(|e| io_at(&self.path, "cannot sync", e))?;
        *sequence += 1;
        write_state(
            &self.state_path,
            &StateFile {
                sequence: *sequence,
                geometry: self.geometry,
                zones,
            },
        )
    }

    fn stats(&self) -> ZonedStats {
        let z = lock(&self.zones);
        ZonedStats::from_zones(z.zones.iter().map(|m| m.stats).collect())
    }
}
