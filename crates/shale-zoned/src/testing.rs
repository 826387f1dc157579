//! The zone rules as one test suite, for any [`ZonedDevice`].
//!
//! [`conformance`] runs on the emulator in `cargo test` and on a real device
//! from the `conformance` example:
//!
//! ```text
//! cargo run -p shale-zoned --example conformance -- /dev/nvme0n2
//! ```
//!
//! The suite is a table of named checks (`CHECKS`; [`check_names`]) run in
//! order by [`run_checks`], which reports each by name as it ends;
//! [`conformance`] collects them into a [`ConformanceReport`].
//!
//! It is **destructive**: it resets every zone of the device at the start and
//! at the end. It needs at least 4 writable zones; the limit checks run when
//! the device has limits and enough zones, and are reported as skipped (with
//! the reason) otherwise. It writes about one zone capacity plus a few blocks
//! per zone it uses.

use crate::device::{Zone, ZoneCondition, ZonedDevice, ZonedError, ZonedGeometry};

/// What [`conformance`] checked.
#[derive(Clone, Debug, Default)]
pub struct ConformanceReport {
    /// The checks that ran and passed, in order.
    pub passed: Vec<&'static str>,
    /// The checks that did not apply to the device, with the reason.
    pub skipped: Vec<(&'static str, String)>,
}

type Check = std::result::Result<(), String>;

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

/// The bytes of a test block: a pattern of the device offset it is written at.
fn pattern(offset: u64, len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| {
            let x = (offset + i).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            (x >> 56) as u8 ^ (i as u8)
        })
        .collect()
}

fn zone(dev: &dyn ZonedDevice, z: u32) -> std::result::Result<Zone, String> {
    dev.zone(z).map_err(|e| format!("report of zone {z}: {e}"))
}

fn expect_cond(dev: &dyn ZonedDevice, z: u32, want: ZoneCondition, wp: Option<u64>) -> Check {
    let got = zone(dev, z)?;
    ensure!(
        got.condition == want,
        "zone {z} is {}, expected {want}",
        got.condition
    );
    if let Some(wp) = wp {
        // A full zone's write pointer is its end; `null_blk` reports a zone
        // filled by writes at its capacity instead, which is accepted too.
        let full_at_capacity =
            want == ZoneCondition::Full && got.write_pointer == got.start + got.capacity;
        ensure!(
            got.write_pointer == wp || full_at_capacity,
            "zone {z}: write pointer {}, expected {wp}",
            got.write_pointer
        );
    }
    Ok(())
}

fn write(dev: &dyn ZonedDevice, offset: u64, len: usize) -> Check {
    dev.write_at(offset, &pattern(offset, len))
        .map_err(|e| format!("write of {len} bytes at {offset}: {e}"))
}

fn append(dev: &dyn ZonedDevice, z: u32, len: usize) -> std::result::Result<u64, String> {
    let wp = zone(dev, z)?.write_pointer;
    let at = dev
        .append(z, &pattern(wp, len))
        .map_err(|e| format!("append of {len} bytes to zone {z}: {e}"))?;
    ensure!(
        at == wp,
        "append to zone {z} landed at {at}, not at the write pointer {wp}"
    );
    Ok(at)
}

/// Reads `len` bytes at `offset`: `Some(bytes)`, or `None` if the device
/// refuses reads above the write pointer (strict mode).
fn read(
    dev: &dyn ZonedDevice,
    offset: u64,
    len: usize,
) -> std::result::Result<Option<Vec<u8>>, String> {
    let mut buf = vec![0xA5u8; len];
    match dev.read_at(offset, &mut buf) {
        Ok(()) => Ok(Some(buf)),
        Err(ZonedError::ReadBeyondWritePointer { .. }) => Ok(None),
        Err(e) => Err(format!("read of {len} bytes at {offset}: {e}")),
    }
}

/// An error of the expected variant, or a message saying what happened.
fn refused<T: std::fmt::Debug>(
    what: &str,
    r: crate::device::Result<T>,
    ok: impl Fn(&ZonedError) -> bool,
) -> Check {
    match r {
        Err(e) if ok(&e) => Ok(()),
        Err(e) => Err(format!("{what}: refused with the wrong error: {e}")),
        Ok(v) => Err(format!("{what}: accepted ({v:?}), must be refused")),
    }
}

fn reset_all(dev: &dyn ZonedDevice, zones: &[u32]) -> Check {
    for &z in zones {
        if zone(dev, z)?.condition != ZoneCondition::Empty {
            dev.reset_zone(z)
                .map_err(|e| format!("reset of zone {z}: {e}"))?;
        }
    }
    Ok(())
}

/// What the checks share: the device, its geometry, and the writable zones
/// (found by "reset every zone").
struct Ctx<'a> {
    dev: &'a dyn ZonedDevice,
    g: ZonedGeometry,
    usable: Vec<u32>,
}

impl Ctx<'_> {
    /// The `i`th writable zone ("reset every zone" makes sure of 4).
    fn zone(&self, i: usize) -> std::result::Result<u32, String> {
        self.usable
            .get(i)
            .copied()
            .ok_or_else(|| format!("writable zone {i} missing (\"reset every zone\" did not run)"))
    }

    /// Whether the device has writable zones beyond `need`.
    fn has_zones(&self, need: u32) -> bool {
        self.usable.len() > need as usize
    }
}

/// One named check of the suite: why it does not apply to a device (if it
/// does not), and the check.
struct CheckDef {
    name: &'static str,
    skip: fn(&Ctx<'_>) -> Option<String>,
    run: fn(&mut Ctx<'_>) -> Check,
}

fn never(_: &Ctx<'_>) -> Option<String> {
    None
}

/// Why the open-limit checks cannot run on this device, if they cannot.
fn open_limit_skip(c: &Ctx<'_>) -> Option<String> {
    let g = c.g;
    if g.max_open_zones == 0 {
        Some("no open-zone limit".to_string())
    } else if g.max_active_zones != 0 && g.max_active_zones <= g.max_open_zones {
        Some("the active limit is not above the open limit: it is reached first".to_string())
    } else if !c.has_zones(g.max_open_zones) {
        Some(format!("needs {} writable zones", g.max_open_zones + 1))
    } else {
        None
    }
}

/// Why the active-limit check cannot run on this device, if it cannot.
fn active_limit_skip(c: &Ctx<'_>) -> Option<String> {
    let g = c.g;
    if g.max_active_zones == 0 {
        Some("no active-zone limit".into())
    } else if !c.has_zones(g.max_active_zones) {
        Some(format!("needs {} writable zones", g.max_active_zones + 1))
    } else {
        None
    }
}

/// The suite, in the order it runs: each check starts from the device state
/// the ones before it leave.
const CHECKS: [CheckDef; 17] = [
    CheckDef {
        name: "geometry and zone reports",
        skip: never,
        run: check_geometry_and_zone_reports,
    },
    CheckDef {
        name: "reset every zone",
        skip: never,
        run: check_reset_every_zone,
    },
    CheckDef {
        name: "writes at the write pointer",
        skip: never,
        run: check_writes_at_the_write_pointer,
    },
    CheckDef {
        name: "writes off the write pointer are refused",
        skip: never,
        run: check_writes_off_the_write_pointer_are_refused,
    },
    CheckDef {
        name: "unaligned writes are refused",
        skip: never,
        run: check_unaligned_writes_are_refused,
    },
    CheckDef {
        name: "reads above the write pointer return zeros",
        skip: never,
        run: check_reads_above_the_write_pointer_return_zeros,
    },
    CheckDef {
        name: "close",
        skip: never,
        run: check_close,
    },
    CheckDef {
        name: "explicit open",
        skip: never,
        run: check_explicit_open,
    },
    CheckDef {
        name: "finish",
        skip: never,
        run: check_finish,
    },
    CheckDef {
        name: "reset",
        skip: never,
        run: check_reset,
    },
    CheckDef {
        name: "capacity",
        skip: never,
        run: check_capacity,
    },
    CheckDef {
        name: "out-of-range arguments are refused",
        skip: never,
        run: check_out_of_range_arguments_are_refused,
    },
    CheckDef {
        name: "open limit: an implicit open closes an implicitly open zone",
        skip: open_limit_skip,
        run: check_open_limit_an_implicit_open_closes_an_implicitly_open_zone,
    },
    CheckDef {
        name: "open limit: explicit opens fail past it",
        skip: open_limit_skip,
        run: check_open_limit_explicit_opens_fail_past_it,
    },
    CheckDef {
        name: "active limit",
        skip: active_limit_skip,
        run: check_active_limit,
    },
    CheckDef {
        name: "write counters",
        skip: never,
        run: check_write_counters,
    },
    CheckDef {
        name: "sync and final reset",
        skip: never,
        run: check_sync_and_final_reset,
    },
];

/// The names of the checks, in the order they run.
pub fn check_names() -> impl Iterator<Item = &'static str> {
    CHECKS.iter().map(|c| c.name)
}

/// The outcome of one check of [`run_checks`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It ran and passed.
    Passed,
    /// It does not apply to the device (the reason).
    Skipped(String),
    /// It ran and failed (what went wrong).
    Failed(String),
}

/// Runs the checks on `dev` in order (destructive: see the module
/// documentation), calling `each` with every check's name and outcome as it
/// ends; stops after the first failure, since each check builds on the
/// device state the ones before it leave. Returns the name and reason of
/// the failure, if one failed.
pub fn run_checks(
    dev: &dyn ZonedDevice,
    mut each: impl FnMut(&'static str, &Outcome),
) -> Option<(&'static str, String)> {
    let mut c = Ctx {
        dev,
        g: dev.geometry(),
        usable: Vec::new(),
    };
    for check in &CHECKS {
        let outcome = match (check.skip)(&c) {
            Some(why) => Outcome::Skipped(why),
            None => match (check.run)(&mut c) {
                Ok(()) => Outcome::Passed,
                Err(e) => Outcome::Failed(e),
            },
        };
        each(check.name, &outcome);
        if let Outcome::Failed(e) = outcome {
            return Some((check.name, e));
        }
    }
    None
}

/// Runs every check on `dev` (destructive: see the module documentation).
/// The first failing check is the error, named, with what went wrong.
pub fn conformance(dev: &dyn ZonedDevice) -> std::result::Result<ConformanceReport, String> {
    let mut report = ConformanceReport::default();
    let failed = run_checks(dev, |name, outcome| match outcome {
        Outcome::Passed => report.passed.push(name),
        Outcome::Skipped(why) => report.skipped.push((name, why.clone())),
        Outcome::Failed(_) => {}
    });
    match failed {
        Some((name, e)) => Err(format!("{name}: {e}")),
        None => Ok(report),
    }
}

fn check_geometry_and_zone_reports(c: &mut Ctx<'_>) -> Check {
    let dev = c.dev;
    let g = c.g;
    g.validate().map_err(|e| e.to_string())?;
    let all = dev.report_all().map_err(|e| format!("report: {e}"))?;
    ensure!(
        all.len() == g.nr_zones as usize,
        "{} zones reported, {} in the geometry",
        all.len(),
        g.nr_zones
    );
    for (i, z) in all.iter().enumerate() {
        ensure!(
            z.index == i as u32 && z.start == g.zone_start(i as u32) && z.size == g.zone_size,
            "zone {i}: reported as index {} start {} size {}",
            z.index,
            z.start,
            z.size
        );
        ensure!(
            z.capacity >= g.zone_capacity && z.capacity <= z.size,
            "zone {i}: capacity {}",
            z.capacity
        );
    }
    let part = dev
        .report_zones(1.min(g.nr_zones - 1), 2)
        .map_err(|e| format!("report of a range: {e}"))?;
    ensure!(
        !part.is_empty() && part[0].index == 1.min(g.nr_zones - 1),
        "a range report starts at the wrong zone"
    );
    Ok(())
}

fn check_reset_every_zone(c: &mut Ctx<'_>) -> Check {
    let dev = c.dev;
    for z in dev.report_all().map_err(|e| format!("report: {e}"))? {
        match z.condition {
            ZoneCondition::ReadOnly | ZoneCondition::Offline | ZoneCondition::NotWritePointer => {
                continue
            }
            ZoneCondition::Empty => {}
            _ => dev
                .reset_zone(z.index)
                .map_err(|e| format!("reset of zone {}: {e}", z.index))?,
        }
        expect_cond(dev, z.index, ZoneCondition::Empty, Some(z.start))?;
        c.usable.push(z.index);
    }
    ensure!(
        c.usable.len() >= 4,
        "{} writable zones; the suite needs 4",
        c.usable.len()
    );
    Ok(())
}

fn check_writes_at_the_write_pointer(c: &mut Ctx<'_>) -> Check {
    let dev = c.dev;
    let g = c.g;
    let bs = g.block_size as usize;
    let b = u64::from(c.g.block_size);
    let z0 = c.zone(0)?;
    let s0 = g.zone_start(z0);
    ensure!(
        append(dev, z0, bs)? == s0,
        "first append not at the zone start"
    );
    expect_cond(dev, z0, ZoneCondition::ImplicitOpen, Some(s0 + b))?;
    write(dev, s0 + b, 2 * bs)?;
    expect_cond(dev, z0, ZoneCondition::ImplicitOpen, Some(s0 + 3 * b))?;
    let got = read(dev, s0, 3 * bs)?.ok_or("read below the write pointer refused")?;
    let mut want = pattern(s0, bs);
    want.extend(pattern(s0 + b, 2 * bs));
    ensure!(got == want, "read back differs from what was written");
    let got = read(dev, s0 + 100, 1000)?.ok_or("unaligned read below the write pointer refused")?;
    ensure!(got[..] == want[100..1100], "unaligned read differs");
    Ok(())
}

fn check_writes_off_the_write_pointer_are_refused(c: &mut Ctx<'_>) -> Check {
    let dev = c.dev;
    let g = c.g;
    let bs = g.block_size as usize;
    let b = u64::from(c.g.block_size);
    let z0 = c.zone(0)?;
    let s0 = g.zone_start(z0);
    let wp = s0 + 3 * b;
    let off_wp = |e: &ZonedError| matches!(e, ZonedError::NotAtWritePointer { .. });
    refused(
        "write behind the write pointer",
        dev.write_at(s0, &pattern(s0, bs)),
        off_wp,
    )?;
    refused(
        "write ahead of the write pointer",
        dev.write_at(wp + b, &pattern(wp + b, bs)),
        off_wp,
    )?;
    expect_cond(dev, z0, ZoneCondition::ImplicitOpen, Some(wp))
}

fn check_unaligned_writes_are_refused(c: &mut Ctx<'_>) -> Check {
    let dev = c.dev;
    let g = c.g;
    let bs = g.block_size as usize;
    let b = u64::from(c.g.block_size);
    let z0 = c.zone(0)?;
    let s0 = g.zone_start(z0);
    let wp = s0 + 3 * b;
    let unaligned = |e: &ZonedError| matches!(e, ZonedError::Unaligned { .. });
    refused(
        "write of half a block",
        dev.write_at(wp, &pattern(wp, bs / 2)),
        unaligned,
    )?;
    refused(
        "write at an unaligned offset",
        dev.write_at(wp + 512.min(b / 2), &pattern(wp, bs)),
        |e| unaligned(e) || matches!(e, ZonedError::NotAtWritePointer { .. }),
    )?;
    expect_cond(dev, z0, ZoneCondition::ImplicitOpen, Some(wp))
}

fn check_reads_above_the_write_pointer_return_zeros(c: &mut Ctx<'_>) -> Check {
    let dev = c.dev;
    let g = c.g;
    let bs = g.block_size as usize;
    let b = u64::from(c.g.block_size);
    let z0 = c.zone(0)?;
    let z1 = c.zone(1)?;
    let s0 = g.zone_start(z0);
    let wp = s0 + 3 * b;
    if let Some(got) = read(dev, wp, bs)? {
        ensure!(
            got.iter().all(|&x| x == 0),
            "bytes above the write pointer are not zeros"
        );
    }
    if let Some(got) = read(dev, wp - 10, 20)? {
        ensure!(
            got[..10] == pattern(s0 + b, 2 * bs)[2 * bs - 10..],
            "bytes below the write pointer differ"
        );
        ensure!(
            got[10..].iter().all(|&x| x == 0),
            "bytes above the write pointer are not zeros"
        );
    }
    if let Some(got) = read(dev, g.zone_start(z1), bs)? {
        ensure!(
            got.iter().all(|&x| x == 0),
            "an empty zone does not read as zeros"
        );
    }
    Ok(())
}

fn check_close(c: &mut Ctx<'_>) -> Check {
    let dev = c.dev;
    let g = c.g;
    let bs = g.block_size as usize;
    let b = u64::from(c.g.block_size);
    let z0 = c.zone(0)?;
    let z1 = c.zone(1)?;
    let s0 = g.zone_start(z0);
    let wp = s0 + 3 * b;
    dev.close_zone(z0).map_err(|e| format!("close: {e}"))?;
    expect_cond(dev, z0, ZoneCondition::Closed, Some(wp))?;
    dev.close_zone(z0)
        .map_err(|e| format!("close of a closed zone: {e}"))?;
    expect_cond(dev, z0, ZoneCondition::Closed, Some(wp))?;
    refused("close of an empty zone", dev.close_zone(z1), |e| {
        matches!(
            e,
            ZonedError::InvalidState {
                condition: ZoneCondition::Empty,
                ..
            }
        )
    })?;
    append(dev, z0, bs)?;
    expect_cond(dev, z0, ZoneCondition::ImplicitOpen, Some(wp + b))
}

fn check_explicit_open(c: &mut Ctx<'_>) -> Check {
    let dev = c.dev;
    let g = c.g;
    let bs = g.block_size as usize;
    let b = u64::from(c.g.block_size);
    let z0 = c.zone(0)?;
    let z1 = c.zone(1)?;
    let z2 = c.zone(2)?;
    let s1 = g.zone_start(z1);
    dev.open_zone(z1)
        .map_err(|e| format!("open of an empty zone: {e}"))?;
    expect_cond(dev, z1, ZoneCondition::ExplicitOpen, Some(s1))?;
    append(dev, z1, bs)?;
    expect_cond(dev, z1, ZoneCondition::ExplicitOpen, Some(s1 + b))?;
    dev.open_zone(z1)
        .map_err(|e| format!("open of an open zone: {e}"))?;
    dev.close_zone(z1).map_err(|e| format!("close: {e}"))?;
    expect_cond(dev, z1, ZoneCondition::Closed, Some(s1 + b))?;
    dev.open_zone(z1)
        .map_err(|e| format!("open of a closed zone: {e}"))?;
    expect_cond(dev, z1, ZoneCondition::ExplicitOpen, Some(s1 + b))?;
    dev.open_zone(z2)
        .map_err(|e| format!("open of an empty zone: {e}"))?;
    dev.close_zone(z2).map_err(|e| format!("close: {e}"))?;
    // Closing an opened zone that holds nothing: `null_blk` and ZBC
    // disks make it empty again, an NVMe ZNS namespace (QEMU's) makes
    // it closed, still active until reset. Either is the kernel's.
    let closed = zone(dev, z2)?;
    ensure!(
        matches!(
            closed.condition,
            ZoneCondition::Empty | ZoneCondition::Closed
        ) && closed.write_pointer == g.zone_start(z2),
        "zone {z2} is {} at {}, expected empty or closed at its start",
        closed.condition,
        closed.write_pointer
    );
    if closed.condition == ZoneCondition::Closed {
        dev.reset_zone(z2)
            .map_err(|e| format!("reset of a closed empty zone: {e}"))?;
    }
    dev.open_zone(z0)
        .map_err(|e| format!("open of an implicitly open zone: {e}"))?;
    expect_cond(dev, z0, ZoneCondition::ExplicitOpen, None)
}

fn check_finish(c: &mut Ctx<'_>) -> Check {
    let dev = c.dev;
    let g = c.g;
    let bs = g.block_size as usize;
    let b = u64::from(c.g.block_size);
    let z0 = c.zone(0)?;
    let z2 = c.zone(2)?;
    let s0 = g.zone_start(z0);
    let end = s0 + g.zone_size;
    dev.finish_zone(z0).map_err(|e| format!("finish: {e}"))?;
    expect_cond(dev, z0, ZoneCondition::Full, Some(end))?;
    let full = |e: &ZonedError| {
        matches!(
            e,
            ZonedError::InvalidState {
                condition: ZoneCondition::Full,
                ..
            }
        )
    };
    refused(
        "append to a full zone",
        dev.append(z0, &pattern(end, bs)),
        full,
    )?;
    refused(
        "write to a full zone",
        dev.write_at(s0 + 4 * b, &pattern(s0, bs)),
        |e| full(e) || matches!(e, ZonedError::NotAtWritePointer { .. }),
    )?;
    refused("open of a full zone", dev.open_zone(z0), full)?;
    dev.finish_zone(z0)
        .map_err(|e| format!("finish of a full zone: {e}"))?;
    let got = read(dev, s0, bs)?.ok_or("read of a finished zone's data refused")?;
    ensure!(got == pattern(s0, bs), "a finished zone's data changed");
    dev.finish_zone(z2)
        .map_err(|e| format!("finish of an empty zone: {e}"))?;
    expect_cond(
        dev,
        z2,
        ZoneCondition::Full,
        Some(g.zone_start(z2) + g.zone_size),
    )
}

fn check_reset(c: &mut Ctx<'_>) -> Check {
    let dev = c.dev;
    let g = c.g;
    let bs = g.block_size as usize;
    let z0 = c.zone(0)?;
    let z1 = c.zone(1)?;
    let z2 = c.zone(2)?;
    let s0 = g.zone_start(z0);
    for z in [z0, z1, z2] {
        dev.reset_zone(z)
            .map_err(|e| format!("reset of zone {z}: {e}"))?;
        expect_cond(dev, z, ZoneCondition::Empty, Some(g.zone_start(z)))?;
    }
    dev.reset_zone(z0)
        .map_err(|e| format!("reset of an empty zone: {e}"))?;
    if let Some(got) = read(dev, s0, bs)? {
        ensure!(
            got.iter().all(|&x| x == 0),
            "a reset zone does not read as zeros"
        );
    }
    ensure!(
        append(dev, z0, bs)? == s0,
        "a reset zone is not written from its start"
    );
    dev.reset_zone(z0).map_err(|e| format!("reset: {e}"))
}

fn check_capacity(c: &mut Ctx<'_>) -> Check {
    let dev = c.dev;
    let bs = c.g.block_size as usize;
    let b = u64::from(c.g.block_size);
    let z3 = c.zone(3)?;
    let z = zone(dev, z3)?;
    let cap_end = z.start + z.capacity;
    let chunk_max = (1u64 << 20).max(b) / b * b;
    let mut wp = z.start;
    while wp < cap_end - b {
        let chunk = chunk_max.min(cap_end - b - wp);
        write(dev, wp, chunk as usize)?;
        wp += chunk;
    }
    if z.capacity >= 2 * b {
        refused(
            "write past the capacity",
            dev.write_at(wp, &pattern(wp, 2 * bs)),
            |e| matches!(e, ZonedError::BeyondCapacity { .. }),
        )?;
    }
    expect_cond(dev, z3, ZoneCondition::ImplicitOpen, Some(wp))?;
    write(dev, wp, bs)?;
    expect_cond(dev, z3, ZoneCondition::Full, Some(z.start + z.size))?;
    let got = read(dev, cap_end - b, bs)?.ok_or("read of the last written block refused")?;
    ensure!(got == pattern(cap_end - b, bs), "last block differs");
    dev.reset_zone(z3).map_err(|e| format!("reset: {e}"))
}

fn check_out_of_range_arguments_are_refused(c: &mut Ctx<'_>) -> Check {
    let dev = c.dev;
    let g = c.g;
    let bs = g.block_size as usize;
    let n = g.nr_zones;
    let no_zone = |e: &ZonedError| matches!(e, ZonedError::NoSuchZone { .. });
    refused("report of a zone past the end", dev.zone(n), no_zone)?;
    refused("reset of a zone past the end", dev.reset_zone(n), no_zone)?;
    refused(
        "append to a zone past the end",
        dev.append(n, &pattern(0, bs)),
        no_zone,
    )?;
    let size = g.device_size();
    let out = |e: &ZonedError| matches!(e, ZonedError::OutOfRange { .. });
    let mut buf = vec![0u8; 20];
    refused("read past the end", dev.read_at(size - 10, &mut buf), out)?;
    refused(
        "write past the end",
        dev.write_at(size, &pattern(size, bs)),
        out,
    )
}

fn check_open_limit_an_implicit_open_closes_an_implicitly_open_zone(c: &mut Ctx<'_>) -> Check {
    let dev = c.dev;
    let g = c.g;
    let bs = g.block_size as usize;
    let zones = &c.usable[..=g.max_open_zones as usize];
    for &z in zones {
        append(dev, z, bs)?;
    }
    let reported: Vec<Zone> = zones
        .iter()
        .map(|&z| zone(dev, z))
        .collect::<Result<_, _>>()?;
    let open = reported.iter().filter(|z| z.condition.is_open()).count();
    let closed = reported
        .iter()
        .filter(|z| z.condition == ZoneCondition::Closed)
        .count();
    ensure!(
        open == g.max_open_zones as usize && closed == 1,
        "{open} open and {closed} closed zones after {} implicit opens (limit {})",
        zones.len(),
        g.max_open_zones
    );
    ensure!(
        reported
            .last()
            .is_some_and(|z| z.condition == ZoneCondition::ImplicitOpen),
        "the zone written last is not open"
    );
    reset_all(dev, zones)
}

fn check_open_limit_explicit_opens_fail_past_it(c: &mut Ctx<'_>) -> Check {
    let dev = c.dev;
    let g = c.g;
    let bs = g.block_size as usize;
    let zones = &c.usable[..=g.max_open_zones as usize];
    let (last, opened) = zones.split_last().ok_or("no zones")?;
    for &z in opened {
        dev.open_zone(z)
            .map_err(|e| format!("open of zone {z}: {e}"))?;
    }
    let too_many = |e: &ZonedError| matches!(e, ZonedError::TooManyOpenZones { .. });
    refused(
        "explicit open past the limit",
        dev.open_zone(*last),
        too_many,
    )?;
    refused(
        "write to an empty zone past the limit",
        dev.append(*last, &pattern(0, bs)),
        too_many,
    )?;
    expect_cond(dev, *last, ZoneCondition::Empty, None)?;
    dev.close_zone(opened[0])
        .map_err(|e| format!("close: {e}"))?;
    append(dev, *last, bs)?;
    reset_all(dev, zones)
}

fn check_active_limit(c: &mut Ctx<'_>) -> Check {
    let dev = c.dev;
    let g = c.g;
    let bs = g.block_size as usize;
    let zones = &c.usable[..=g.max_active_zones as usize];
    let (last, active) = zones.split_last().ok_or("no zones")?;
    for &z in active {
        append(dev, z, bs)?;
        dev.close_zone(z)
            .map_err(|e| format!("close of zone {z}: {e}"))?;
    }
    let too_many = |e: &ZonedError| matches!(e, ZonedError::TooManyActiveZones { .. });
    refused(
        "write to an empty zone past the limit",
        dev.append(*last, &pattern(0, bs)),
        too_many,
    )?;
    refused(
        "explicit open past the limit",
        dev.open_zone(*last),
        too_many,
    )?;
    expect_cond(dev, *last, ZoneCondition::Empty, None)?;
    append(dev, active[0], bs)?;
    dev.finish_zone(active[0])
        .map_err(|e| format!("finish: {e}"))?;
    append(dev, *last, bs)?;
    expect_cond(dev, *last, ZoneCondition::ImplicitOpen, None)?;
    reset_all(dev, zones)
}

fn check_write_counters(c: &mut Ctx<'_>) -> Check {
    let dev = c.dev;
    let g = c.g;
    let bs = g.block_size as usize;
    let b = u64::from(c.g.block_size);
    let z0 = c.zone(0)?;
    let z1 = c.zone(1)?;
    let before = dev.stats();
    append(dev, z0, 2 * bs)?;
    dev.reset_zone(z0).map_err(|e| format!("reset: {e}"))?;
    dev.finish_zone(z1).map_err(|e| format!("finish: {e}"))?;
    let d = dev.stats().since(&before);
    ensure!(
        d.bytes_written == 2 * b && d.resets == 1 && d.finishes == 1,
        "counted {} bytes, {} resets, {} finishes; expected {}, 1, 1",
        d.bytes_written,
        d.resets,
        d.finishes,
        2 * b
    );
    ensure!(
        d.zones
            .get(z0 as usize)
            .is_some_and(|s| s.bytes_written == 2 * b && s.resets == 1),
        "zone {z0}'s counters are wrong"
    );
    ensure!(
        d.zones.get(z1 as usize).is_some_and(|s| s.finishes == 1),
        "zone {z1}'s counters are wrong"
    );
    dev.reset_zone(z1).map_err(|e| format!("reset: {e}"))
}

fn check_sync_and_final_reset(c: &mut Ctx<'_>) -> Check {
    let dev = c.dev;
    dev.sync().map_err(|e| format!("sync: {e}"))?;
    reset_all(dev, &c.usable)
}
