//! `shale-zoned-probe`: checks that a Linux zoned block device behaves as a
//! zoned backend expects, through the kernel's blkzoned ioctls and O_DIRECT
//! reads and writes.
//!
//! ```text
//! shale-zoned-probe DEVICE [--zone INDEX] [--expect-zone-size BYTES]
//!                   [--expect-zone-capacity BYTES] [--expect-max-open N]
//!                   [--expect-max-active N]
//! ```
//!
//! It prints one `PASS <check>: <detail>` or `FAIL <check>: <detail>` line per
//! check, then `probe: N passed, N failed`, and exits with 0 when every check
//! passed, 1 when one failed and 2 on a usage error. It writes to the device:
//! every zone is reset at the end. `scripts/qemu-zns.sh` builds it static and
//! runs it in a QEMU guest on an emulated NVMe zoned namespace.

mod blkzoned;

use blkzoned::{Zone, ZoneCond, ZoneOp, ZoneType};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage: shale-zoned-probe DEVICE [--zone INDEX] [--expect-zone-size BYTES] \
[--expect-zone-capacity BYTES] [--expect-max-open N] [--expect-max-active N]";

/// Bytes per sector in the kernel's zone interface.
const SECTOR: u64 = 512;
/// The size of the single-block writes and reads (4 KiB, or the logical
/// block size when that is larger).
const BLOCK: u64 = 4096;
/// Largest write when filling a zone.
const CHUNK: u64 = 64 * 1024;

/// The command line.
#[derive(Debug, Default, PartialEq, Eq)]
struct Args {
    device: PathBuf,
    zone: Option<u32>,
    zone_size: Option<u64>,
    zone_capacity: Option<u64>,
    max_open: Option<u32>,
    max_active: Option<u32>,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut parsed = Args::default();
    let mut device = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "--zone" => parsed.zone = Some(number(&value(arg)?, arg)?),
            "--expect-zone-size" => parsed.zone_size = Some(number(&value(arg)?, arg)?),
            "--expect-zone-capacity" => parsed.zone_capacity = Some(number(&value(arg)?, arg)?),
            "--expect-max-open" => parsed.max_open = Some(number(&value(arg)?, arg)?),
            "--expect-max-active" => parsed.max_active = Some(number(&value(arg)?, arg)?),
            "-h" | "--help" => return Err(String::new()),
            other if other.starts_with('-') => {
                return Err(format!(
                    "unknown option '{other}' (valid: --zone, --expect-zone-size, \
                     --expect-zone-capacity, --expect-max-open, --expect-max-active)"
                ))
            }
            other if device.is_none() => device = Some(PathBuf::from(other)),
            other => return Err(format!("unexpected argument '{other}'")),
        }
    }
    parsed.device = device.ok_or("the DEVICE argument is missing")?;
    Ok(parsed)
}

fn number<T: std::str::FromStr>(text: &str, option: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{option}: '{text}' is not a non-negative integer"))
}

/// Counts and prints the checks.
#[derive(Debug, Default)]
struct Checks {
    passed: u32,
    failed: u32,
}

impl Checks {
    /// Prints the outcome of one check; returns whether it passed.
    fn record(&mut self, name: &str, outcome: Result<String, String>) -> bool {
        match outcome {
            Ok(detail) => {
                self.passed += 1;
                println!("PASS {name}: {detail}");
                true
            }
            Err(detail) => {
                self.failed += 1;
                println!("FAIL {name}: {detail}");
                false
            }
        }
    }
}

/// A buffer aligned for O_DIRECT (4 KiB), in safe code: a larger vector and
/// the aligned window inside it.
struct AlignedBuf {
    storage: Vec<u8>,
    offset: usize,
    len: usize,
}

impl AlignedBuf {
    const ALIGN: usize = 4096;

    fn new(len: usize) -> Self {
        let storage = vec![0u8; len + Self::ALIGN];
        let misalignment = storage.as_ptr() as usize % Self::ALIGN;
        let offset = (Self::ALIGN - misalignment) % Self::ALIGN;
        AlignedBuf {
            storage,
            offset,
            len,
        }
    }

    fn as_slice(&self) -> &[u8] {
        &self.storage[self.offset..self.offset + self.len]
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage[self.offset..self.offset + self.len]
    }
}

/// The test pattern: each 8-byte word holds its own device byte offset mixed
/// with a constant, so that data read from the wrong place does not match.
fn fill_pattern(buf: &mut [u8], device_offset: u64) {
    for (i, word) in buf.chunks_mut(8).enumerate() {
        let value = (device_offset + i as u64 * 8) ^ 0x5a4f_4e45_445f_5052;
        let bytes = value.to_le_bytes();
        word.copy_from_slice(&bytes[..word.len()]);
    }
}

fn pattern_matches(buf: &[u8], device_offset: u64) -> bool {
    let mut expected = vec![0u8; buf.len()];
    fill_pattern(&mut expected, device_offset);
    expected == buf
}

fn read_sysfs(device: &Path, attribute: &str) -> Result<String, String> {
    let canonical = device
        .canonicalize()
        .map_err(|e| format!("{}: {e}", device.display()))?;
    let name = canonical
        .file_name()
        .ok_or_else(|| format!("{} has no file name", canonical.display()))?;
    let path = Path::new("/sys/block")
        .join(name)
        .join("queue")
        .join(attribute);
    std::fs::read_to_string(&path)
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn kib(bytes: u64) -> String {
    if bytes.is_multiple_of(1024 * 1024) {
        format!("{} MiB", bytes / (1024 * 1024))
    } else {
        format!("{} KiB", bytes / 1024)
    }
}

/// Reports every zone of the device, in batches.
fn report_all(file: &File, zone_sectors: u64, zone_count: u32) -> io::Result<blkzoned::Report> {
    let mut all = blkzoned::Report {
        flags: 0,
        zones: Vec::with_capacity(zone_count as usize),
    };
    let mut sector = 0;
    while all.zones.len() < zone_count as usize {
        let batch = blkzoned::report_zones(file, sector, 256)?;
        all.flags = batch.flags;
        let Some(last) = batch.zones.last() else {
            break;
        };
        sector = last.start + last.len.max(zone_sectors);
        all.zones.extend(batch.zones);
    }
    Ok(all)
}

fn report_one(file: &File, zone: &Zone) -> Result<Zone, String> {
    let report = blkzoned::report_zones(file, zone.start, 1)
        .map_err(|e| format!("BLKREPORTZONE at sector {}: {e}", zone.start))?;
    report
        .zones
        .first()
        .copied()
        .ok_or_else(|| format!("BLKREPORTZONE at sector {} returned no zone", zone.start))
}

/// Writes the pattern over `[from, to)` (bytes) in chunks of at most [`CHUNK`].
fn write_range(file: &File, from: u64, to: u64) -> io::Result<()> {
    let mut at = from;
    while at < to {
        let len = CHUNK.min(to - at);
        let mut buf = AlignedBuf::new(len as usize);
        fill_pattern(buf.as_mut_slice(), at);
        file.write_all_at(buf.as_slice(), at)?;
        at += len;
    }
    Ok(())
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&argv) {
        Ok(args) => args,
        Err(message) => {
            if message.is_empty() {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            eprintln!("shale-zoned-probe: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut checks = Checks::default();
    run(&args, &mut checks);
    println!("probe: {} passed, {} failed", checks.passed, checks.failed);
    if checks.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Runs the checks in order; returns early (after recording a failure) when
/// a check the later ones depend on fails.
fn run(args: &Args, checks: &mut Checks) {
    let device = &args.device;
    let opened = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(device)
        .map_err(|e| format!("{}: {e}", device.display()));
    let file = match opened {
        Ok(file) => {
            checks.record(
                "open with O_DIRECT",
                Ok(format!("{} read-write", device.display())),
            );
            file
        }
        Err(e) => {
            checks.record("open with O_DIRECT", Err(e));
            return;
        }
    };

    checks.record(
        "host-managed zoned device",
        read_sysfs(device, "zoned").and_then(|model| {
            if model == "host-managed" {
                Ok(format!("queue/zoned is {model}"))
            } else {
                Err(format!("queue/zoned is '{model}'"))
            }
        }),
    );

    let geometry = (|| -> io::Result<(u64, u32, u64, u64)> {
        Ok((
            u64::from(blkzoned::zone_sectors(&file)?),
            blkzoned::zone_count(&file)?,
            blkzoned::size_bytes(&file)?,
            u64::from(blkzoned::logical_block_size(&file)?),
        ))
    })();
    let (zone_sectors, zone_count, size, block_size) = match geometry {
        Ok(g) => g,
        Err(e) => {
            checks.record("zone geometry ioctls", Err(e.to_string()));
            return;
        }
    };
    let zone_bytes = zone_sectors * SECTOR;
    let size_ok = checks.record(
        "zone size (BLKGETZONESZ)",
        if zone_sectors == 0 || !zone_sectors.is_power_of_two() {
            Err(format!("{zone_sectors} sectors: not a power of two"))
        } else if args.zone_size.is_some_and(|want| want != zone_bytes) {
            Err(format!(
                "{} ({zone_sectors} sectors), expected {}",
                kib(zone_bytes),
                kib(args.zone_size.unwrap_or(0))
            ))
        } else {
            Ok(format!("{} ({zone_sectors} sectors)", kib(zone_bytes)))
        },
    );
    let expected_count = if zone_bytes == 0 {
        0
    } else {
        size.div_ceil(zone_bytes)
    };
    let count_ok = checks.record(
        "zone count (BLKGETNRZONES)",
        if zone_count > 0 && u64::from(zone_count) == expected_count {
            Ok(format!("{zone_count} zones in {}", kib(size)))
        } else {
            Err(format!(
                "{zone_count} zones, expected {expected_count} for {size} bytes"
            ))
        },
    );
    if !size_ok || !count_ok {
        return;
    }
    let block = BLOCK.max(block_size);

    let report = match report_all(&file, zone_sectors, zone_count) {
        Ok(report) => report,
        Err(e) => {
            checks.record("report every zone (BLKREPORTZONE)", Err(e.to_string()));
            return;
        }
    };
    let layout_error = report.zones.iter().enumerate().find_map(|(i, z)| {
        let start = i as u64 * zone_sectors;
        let last = i + 1 == report.zones.len();
        (z.start != start || (z.len != zone_sectors && !last))
            .then(|| format!("zone {i}: start {} len {}", z.start, z.len))
    });
    let report_ok = checks.record(
        "report every zone (BLKREPORTZONE)",
        if report.zones.len() != zone_count as usize {
            Err(format!(
                "{} zones reported of {zone_count}",
                report.zones.len()
            ))
        } else if let Some(error) = layout_error {
            Err(format!("zones not back to back: {error}"))
        } else if report.flags & blkzoned::REPORT_FLAG_CAPACITY == 0 {
            Err("the report does not carry zone capacities (BLK_ZONE_REP_CAPACITY)".into())
        } else {
            Ok(format!(
                "{} zones back to back, with capacities",
                report.zones.len()
            ))
        },
    );
    if !report_ok {
        return;
    }
    let sequential: Vec<&Zone> = report
        .zones
        .iter()
        .filter(|z| z.kind == ZoneType::SequentialRequired)
        .collect();
    let capacity_error = sequential.iter().find_map(|z| {
        (z.capacity == 0 || z.capacity >= z.len)
            .then(|| format!("zone at {}: capacity {} of {}", z.start, z.capacity, z.len))
    });
    let capacity_bytes = sequential.first().map_or(0, |z| z.capacity * SECTOR);
    checks.record(
        "zone capacity below zone size",
        if sequential.is_empty() {
            Err("no sequential-write-required zone".into())
        } else if let Some(error) = capacity_error {
            Err(error)
        } else if args
            .zone_capacity
            .is_some_and(|want| sequential.iter().any(|z| z.capacity * SECTOR != want))
        {
            Err(format!(
                "capacity {}, expected {}",
                kib(capacity_bytes),
                kib(args.zone_capacity.unwrap_or(0))
            ))
        } else {
            Ok(format!(
                "{} of {} in {} sequential zones",
                kib(capacity_bytes),
                kib(zone_bytes),
                sequential.len()
            ))
        },
    );

    let mut open_limit = None;
    for (name, attribute, expected) in [
        ("open zone limit", "max_open_zones", args.max_open),
        ("active zone limit", "max_active_zones", args.max_active),
    ] {
        let outcome = read_sysfs(device, attribute)
            .and_then(|text| number::<u32>(&text, attribute))
            .and_then(|limit| match expected {
                Some(want) if want != limit => {
                    Err(format!("{attribute} is {limit}, expected {want}"))
                }
                _ => Ok(limit),
            });
        if let (Ok(limit), "max_open_zones") = (&outcome, attribute) {
            open_limit = Some(*limit);
        }
        checks.record(name, outcome.map(|limit| format!("{attribute} is {limit}")));
    }

    // The zone the I/O checks use.
    let zone = match args.zone {
        Some(index) => report.zones.get(index as usize).copied(),
        None => sequential.first().map(|z| **z),
    };
    let Some(zone) = zone.filter(|z| z.kind == ZoneType::SequentialRequired) else {
        checks.record(
            "pick a sequential zone",
            Err(format!(
                "zone {:?} is not a sequential-write-required zone of the report",
                args.zone
            )),
        );
        return;
    };
    let index = zone.start / zone_sectors;
    if !zone_io_checks(&file, zone, index, block, checks) {
        return;
    }

    if let Some(limit) = open_limit.filter(|&l| l > 0 && (l as usize) < sequential.len()) {
        checks.record(
            "open zone limit enforced",
            open_limit_check(&file, &sequential, limit as usize),
        );
    }

    checks.record(
        "reset every zone",
        blkzoned::zone_op(
            &file,
            ZoneOp::Reset,
            0,
            u64::from(zone_count) * zone_sectors,
        )
        .map_err(|e| format!("BLKRESETZONE over the device: {e}"))
        .and_then(|()| report_all(&file, zone_sectors, zone_count).map_err(|e| e.to_string()))
        .and_then(|after| {
            match after
                .zones
                .iter()
                .find(|z| z.kind == ZoneType::SequentialRequired && z.cond != ZoneCond::Empty)
            {
                Some(z) => Err(format!("zone at {} is {:?}", z.start, z.cond)),
                None => Ok(format!("{} zones empty", after.zones.len())),
            }
        }),
    );
}

/// The reset, write, read and finish checks on one zone; false when one the
/// later checks depend on failed.
fn zone_io_checks(file: &File, zone: Zone, index: u64, block: u64, checks: &mut Checks) -> bool {
    let start = zone.start * SECTOR;
    let capacity = zone.capacity * SECTOR;

    let reset = blkzoned::zone_op(file, ZoneOp::Reset, zone.start, zone.len)
        .map_err(|e| format!("BLKRESETZONE: {e}"))
        .and_then(|()| report_one(file, &zone))
        .and_then(|z| {
            if z.cond == ZoneCond::Empty && z.wp == z.start {
                Ok(format!("empty, write pointer at sector {}", z.wp))
            } else {
                Err(format!("{:?} with the write pointer at {}", z.cond, z.wp))
            }
        });
    if !checks.record(&format!("reset zone {index}"), reset) {
        return false;
    }

    let mut buf = AlignedBuf::new(block as usize);
    fill_pattern(buf.as_mut_slice(), start);
    let written = file
        .write_all_at(buf.as_slice(), start)
        .map(|()| format!("{} at byte {start} with O_DIRECT", kib(block)))
        .map_err(|e| format!("pwrite at byte {start}: {e}"));
    if !checks.record("write at the write pointer", written) {
        return false;
    }

    let moved = report_one(file, &zone).and_then(|z| {
        let want = zone.start + block / SECTOR;
        if z.wp == want && z.cond == ZoneCond::ImplicitOpen {
            Ok(format!(
                "at sector {} (+{}), implicitly open",
                z.wp,
                z.wp - z.start
            ))
        } else {
            Err(format!(
                "{:?} with the write pointer at {}, expected {want}",
                z.cond, z.wp
            ))
        }
    });
    checks.record("write pointer moved", moved);

    let mut back = AlignedBuf::new(block as usize);
    let read = file
        .read_exact_at(back.as_mut_slice(), start)
        .map_err(|e| format!("pread at byte {start}: {e}"))
        .and_then(|()| {
            if back.as_slice() == buf.as_slice() {
                Ok(format!("{} match", kib(block)))
            } else {
                Err("the bytes read differ from those written".into())
            }
        });
    checks.record("read back with O_DIRECT", read);

    // A write behind the write pointer (over the block just written).
    let rejected = match file.write_all_at(buf.as_slice(), start) {
        Ok(()) => Err(format!(
            "a write at byte {start}, behind the write pointer, succeeded"
        )),
        Err(e) => report_one(file, &zone).and_then(|z| {
            if z.wp == zone.start + block / SECTOR {
                Ok(format!("{e}; write pointer unchanged"))
            } else {
                Err(format!(
                    "rejected ({e}) but the write pointer is at {}",
                    z.wp
                ))
            }
        }),
    };
    checks.record("write off the write pointer rejected", rejected);

    let filled = write_range(file, start + block, start + capacity)
        .map_err(|e| format!("writing up to the capacity: {e}"))
        .and_then(|()| report_one(file, &zone))
        .and_then(|z| {
            if z.cond == ZoneCond::Full {
                Ok(format!("full after {} (its capacity)", kib(capacity)))
            } else {
                Err(format!(
                    "{:?} after {} written, expected Full",
                    z.cond,
                    kib(capacity)
                ))
            }
        });
    let full = checks.record("zone full at its capacity", filled);

    if full && capacity < zone.len * SECTOR {
        let past = start + capacity;
        let outcome = match file.write_all_at(buf.as_slice(), past) {
            Ok(()) => Err(format!(
                "a write at byte {past}, past the capacity, succeeded"
            )),
            Err(e) => Ok(format!("{e}")),
        };
        checks.record("write past the capacity rejected", outcome);
    }

    let mut whole = AlignedBuf::new(capacity as usize);
    let verified = file
        .read_exact_at(whole.as_mut_slice(), start)
        .map_err(|e| format!("pread of {}: {e}", kib(capacity)))
        .and_then(|()| {
            if pattern_matches(whole.as_slice(), start) {
                Ok(format!("{} as written", kib(capacity)))
            } else {
                Err("the zone's bytes differ from those written".into())
            }
        });
    checks.record("read the whole zone back", verified);

    let finished = blkzoned::zone_op(file, ZoneOp::Reset, zone.start, zone.len)
        .and_then(|()| file.write_all_at(buf.as_slice(), start))
        .and_then(|()| blkzoned::zone_op(file, ZoneOp::Finish, zone.start, zone.len))
        .map_err(|e| format!("reset, write, BLKFINISHZONE: {e}"))
        .and_then(|()| report_one(file, &zone))
        .and_then(|z| {
            if z.cond == ZoneCond::Full {
                Ok("full after one block".to_string())
            } else {
                Err(format!("{:?} after BLKFINISHZONE", z.cond))
            }
        });
    checks.record("finish a zone (BLKFINISHZONE)", finished);

    // A closed zone keeps its write pointer and takes writes again there.
    let closed = blkzoned::zone_op(file, ZoneOp::Reset, zone.start, zone.len)
        .and_then(|()| file.write_all_at(buf.as_slice(), start))
        .and_then(|()| blkzoned::zone_op(file, ZoneOp::Close, zone.start, zone.len))
        .map_err(|e| format!("reset, write, BLKCLOSEZONE: {e}"))
        .and_then(|()| report_one(file, &zone))
        .and_then(|z| match z.cond {
            ZoneCond::Closed => {
                let mut next = AlignedBuf::new(block as usize);
                let at = start + block;
                fill_pattern(next.as_mut_slice(), at);
                file.write_all_at(next.as_slice(), at)
                    .map_err(|e| format!("write at byte {at} after the close: {e}"))?;
                let after = report_one(file, &zone)?;
                if after.wp == zone.start + 2 * block / SECTOR {
                    Ok(format!(
                        "closed with the write pointer at +{}, written on to +{}",
                        z.wp - z.start,
                        after.wp - after.start
                    ))
                } else {
                    Err(format!("write pointer at {} after writing on", after.wp))
                }
            }
            other => Err(format!("{other:?} after BLKCLOSEZONE")),
        });
    checks.record("close a written zone (BLKCLOSEZONE)", closed);
    true
}

/// Resets `limit + 1` sequential zones, opens `limit` of them explicitly,
/// checks that they report as explicitly open and that one more open is
/// refused, then resets them (back to empty; closing would leave them closed,
/// and so still active).
fn open_limit_check(file: &File, sequential: &[&Zone], limit: usize) -> Result<String, String> {
    let zones = &sequential[..=limit];
    let reset_all = || -> Result<(), String> {
        for z in zones {
            blkzoned::zone_op(file, ZoneOp::Reset, z.start, z.len)
                .map_err(|e| format!("BLKRESETZONE at {}: {e}", z.start))?;
        }
        Ok(())
    };
    reset_all()?;
    let mut outcome = Ok(());
    for z in &zones[..limit] {
        if let Err(e) = blkzoned::zone_op(file, ZoneOp::Open, z.start, z.len) {
            outcome = Err(format!(
                "BLKOPENZONE at {} (within the limit): {e}",
                z.start
            ));
            break;
        }
    }
    if outcome.is_ok() {
        for z in &zones[..limit] {
            match report_one(file, z) {
                Ok(now) if now.cond == ZoneCond::ExplicitOpen => {}
                Ok(now) => {
                    outcome = Err(format!(
                        "zone at {} is {:?} after BLKOPENZONE",
                        z.start, now.cond
                    ));
                    break;
                }
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
        }
    }
    let extra = zones[limit];
    let refused = match (
        &outcome,
        blkzoned::zone_op(file, ZoneOp::Open, extra.start, extra.len),
    ) {
        (Err(_), _) => None,
        (Ok(()), Ok(())) => {
            outcome = Err(format!(
                "opening zone {} more than {limit} succeeded",
                limit + 1
            ));
            None
        }
        (Ok(()), Err(e)) => Some(e),
    };
    let released = reset_all();
    outcome?;
    released?;
    let not_empty = zones
        .iter()
        .map(|z| report_one(file, z))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .filter(|z| z.cond != ZoneCond::Empty)
        .count();
    if not_empty > 0 {
        return Err(format!("{not_empty} zones not empty after BLKRESETZONE"));
    }
    Ok(format!(
        "{limit} zones explicitly open, one more refused ({}), all reset",
        refused.map_or_else(String::new, |e| e.to_string())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_the_device_and_expectations() {
        let args = parse_args(&strings(&[
            "/dev/nvme0n1",
            "--expect-zone-size",
            "1048576",
            "--expect-max-open",
            "14",
            "--zone",
            "3",
        ]))
        .expect("valid");
        assert_eq!(args.device, PathBuf::from("/dev/nvme0n1"));
        assert_eq!(args.zone_size, Some(1_048_576));
        assert_eq!(args.max_open, Some(14));
        assert_eq!(args.zone, Some(3));
        assert_eq!(args.max_active, None);
    }

    #[test]
    fn usage_errors_name_the_problem() {
        let unknown = parse_args(&strings(&["/dev/x", "--bogus"])).expect_err("unknown");
        assert!(unknown.contains("--bogus") && unknown.contains("--expect-max-open"));
        let missing = parse_args(&strings(&["--zone", "1"])).expect_err("no device");
        assert!(missing.contains("DEVICE"));
        let bad = parse_args(&strings(&["/dev/x", "--zone", "one"])).expect_err("not a number");
        assert!(bad.contains("'one'"));
        let no_value = parse_args(&strings(&["/dev/x", "--zone"])).expect_err("no value");
        assert!(no_value.contains("needs a value"));
    }

    #[test]
    fn aligned_buffers_are_aligned() {
        for len in [4096, 65536, 12288] {
            let buf = AlignedBuf::new(len);
            assert_eq!(buf.as_slice().len(), len);
            assert_eq!(buf.as_slice().as_ptr() as usize % AlignedBuf::ALIGN, 0);
        }
    }

    #[test]
    fn the_pattern_depends_on_the_offset() {
        let mut a = vec![0u8; 4096];
        fill_pattern(&mut a, 8192);
        assert!(pattern_matches(&a, 8192));
        assert!(!pattern_matches(&a, 4096));
    }
}
