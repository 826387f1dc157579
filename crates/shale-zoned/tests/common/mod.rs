//! Helpers shared by the zone file system tests: a seeded random source (the
//! shared test kit's) and a device whose power can fail.
#![allow(dead_code)] // each test binary uses a different subset

use std::io;

use shale_zoned::{EmulatedZoned, GcOptions, MountOptions, ZonedDevice, ZonedGeometry};

/// The seeded generator and the long-run switch every crate's tests share.
#[allow(unused_imports)] // each test binary uses a different subset
pub(crate) use shale_testkit::{long_tests, Rng};

/// A device that can "lose power": once crashed every call fails, so nothing
/// after the crash point reaches the emulator, whose unsynced writes are then
/// lost when it is opened again.
///
/// With `tear` set, the write that the power fails in is torn as on a real
/// zoned device: its first blocks (at most `tear`, always fewer than all)
/// reach the medium and the write pointer covers them, the rest is lost.
pub(crate) struct CrashDev {
    pub(crate) dev: EmulatedZoned,
    pub(crate) down: std::sync::atomic::AtomicBool,
    /// Changing operations (writes, zone operations, syncs) left before the
    /// power fails; negative: no limit.
    pub(crate) budget: std::sync::atomic::AtomicI64,
    /// Blocks of the failing write that persist (0: none).
    pub(crate) tear: std::sync::atomic::AtomicUsize,
    /// Every changing operation in order: the device offset and length of
    /// a write, `(u64::MAX, 0)` for anything else.
    pub(crate) ops: std::sync::Mutex<Vec<(u64, usize)>>,
}

impl CrashDev {
    pub(crate) fn new(dev: EmulatedZoned, budget: i64) -> CrashDev {
        CrashDev {
            dev,
            down: std::sync::atomic::AtomicBool::new(false),
            budget: std::sync::atomic::AtomicI64::new(budget),
            tear: std::sync::atomic::AtomicUsize::new(0),
            ops: std::sync::Mutex::new(Vec::new()),
        }
    }

    fn check(&self) -> shale_zoned::Result<()> {
        if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(shale_zoned::ZonedError::io(
                "crash device",
                io::Error::other("simulated power loss"),
            ));
        }
        Ok(())
    }

    /// A changing operation (a write of `len` bytes at `offset`, or
    /// `(u64::MAX, 0)`): fails (and the power stays off) once the budget is
    /// spent; the error says whether this operation is the one that failed.
    fn spend(&self, offset: u64, len: usize) -> Result<(), (shale_zoned::ZonedError, bool)> {
        self.check().map_err(|e| (e, false))?;
        self.ops
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((offset, len));
        if self
            .budget
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst)
            == 0
        {
            self.down.store(true, std::sync::atomic::Ordering::SeqCst);
            return self.check().map_err(|e| (e, true));
        }
        Ok(())
    }

    /// The power fails during a write of `data` at `offset`: with `tear`,
    /// its first blocks persist.
    fn tear_write(&self, offset: u64, data: &[u8]) {
        let block = self.dev.geometry().block_size as usize;
        let blocks = data.len() / block;
        let keep = self
            .tear
            .load(std::sync::atomic::Ordering::SeqCst)
            .min(blocks.saturating_sub(1));
        if keep > 0 {
            // What the medium kept; the sync only makes the emulator keep it.
            let _ = self.dev.write_at(offset, &data[..keep * block]);
            let _ = self.dev.sync();
        }
    }
}

impl ZonedDevice for CrashDev {
    fn geometry(&self) -> ZonedGeometry {
        self.dev.geometry()
    }
    fn report_zones(&self, first: u32, count: u32) -> shale_zoned::Result<Vec<shale_zoned::Zone>> {
        self.check()?;
        self.dev.report_zones(first, count)
    }
    fn open_zone(&self, zone: u32) -> shale_zoned::Result<()> {
        self.spend(u64::MAX, 0).map_err(|(e, _)| e)?;
        self.dev.open_zone(zone)
    }
    fn close_zone(&self, zone: u32) -> shale_zoned::Result<()> {
        self.spend(u64::MAX, 0).map_err(|(e, _)| e)?;
        self.dev.close_zone(zone)
    }
    fn finish_zone(&self, zone: u32) -> shale_zoned::Result<()> {
        self.spend(u64::MAX, 0).map_err(|(e, _)| e)?;
        self.dev.finish_zone(zone)
    }
    fn reset_zone(&self, zone: u32) -> shale_zoned::Result<()> {
        self.spend(u64::MAX, 0).map_err(|(e, _)| e)?;
        self.dev.reset_zone(zone)
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> shale_zoned::Result<()> {
        if let Err((e, failing)) = self.spend(offset, data.len()) {
            if failing {
                self.tear_write(offset, data);
            }
            return Err(e);
        }
        self.dev.write_at(offset, data)
    }
    fn append(&self, zone: u32, data: &[u8]) -> shale_zoned::Result<u64> {
        let offset = self.dev.zone(zone)?.write_pointer;
        if let Err((e, failing)) = self.spend(offset, data.len()) {
            if failing {
                self.tear_write(offset, data);
            }
            return Err(e);
        }
        self.dev.append(zone, data)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> shale_zoned::Result<()> {
        self.check()?;
        self.dev.read_at(offset, buf)
    }
    fn sync(&self) -> shale_zoned::Result<()> {
        self.spend(u64::MAX, 0).map_err(|(e, _)| e)?;
        self.dev.sync()
    }
    fn stats(&self) -> shale_zoned::ZonedStats {
        self.dev.stats()
    }
}

/// Mount options with collection only when asked or when a writer needs
/// space: deterministic.
pub(crate) fn foreground() -> MountOptions {
    MountOptions {
        gc: GcOptions {
            background: false,
            ..GcOptions::default()
        },
        ..MountOptions::default()
    }
}
