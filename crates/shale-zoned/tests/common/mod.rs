//! Helpers shared by the zone file system tests: a seeded random source and
//! a device whose power can fail.

use std::io;

use shale_zoned::{EmulatedZoned, ZonedDevice, ZonedGeometry};

/// SplitMix64.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    pub(crate) fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

/// A device that can "lose power": once crashed every call fails, so nothing
/// after the crash point reaches the emulator, whose unsynced writes are then
/// lost when it is opened again.
pub(crate) struct CrashDev {
    pub(crate) dev: EmulatedZoned,
    pub(crate) down: std::sync::atomic::AtomicBool,
    /// Changing operations (writes, zone operations, syncs) left before the
    /// power fails; negative: no limit.
    pub(crate) budget: std::sync::atomic::AtomicI64,
}

impl CrashDev {
    pub(crate) fn new(dev: EmulatedZoned, budget: i64) -> CrashDev {
        CrashDev {
            dev,
            down: std::sync::atomic::AtomicBool::new(false),
            budget: std::sync::atomic::AtomicI64::new(budget),
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

    /// A changing operation: fails (and the power stays off) once the budget
    /// is spent.
    fn spend(&self) -> shale_zoned::Result<()> {
        self.check()?;
        if self
            .budget
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst)
            == 0
        {
            self.down.store(true, std::sync::atomic::Ordering::SeqCst);
            return self.check();
        }
        Ok(())
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
        self.spend()?;
        self.dev.open_zone(zone)
    }
    fn close_zone(&self, zone: u32) -> shale_zoned::Result<()> {
        self.spend()?;
        self.dev.close_zone(zone)
    }
    fn finish_zone(&self, zone: u32) -> shale_zoned::Result<()> {
        self.spend()?;
        self.dev.finish_zone(zone)
    }
    fn reset_zone(&self, zone: u32) -> shale_zoned::Result<()> {
        self.spend()?;
        self.dev.reset_zone(zone)
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> shale_zoned::Result<()> {
        self.spend()?;
        self.dev.write_at(offset, data)
    }
    fn append(&self, zone: u32, data: &[u8]) -> shale_zoned::Result<u64> {
        self.spend()?;
        self.dev.append(zone, data)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> shale_zoned::Result<()> {
        self.check()?;
        self.dev.read_at(offset, buf)
    }
    fn sync(&self) -> shale_zoned::Result<()> {
        self.spend()?;
        self.dev.sync()
    }
    fn stats(&self) -> shale_zoned::ZonedStats {
        self.dev.stats()
    }
}
