//! `shale zoned ...`: format a zoned device with the zone file system
//! (`mkfs`) and inspect it. Every command opens its device through
//! [`shale_bench::storage::open_device`].

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;
use shale::env::WriteLifetime;
use shale_zoned::{FileInfo, ZoneFsError, ZoneFsStats, ZoneRole, ZoneUsage, ZonedGeometry};

use crate::args::{ZonedInspectArgs, ZonedMkfsArgs};
use shale_bench::error::{Error as CliError, Result as CliResult};
use shale_bench::fmt::human_bytes;
use shale_bench::storage::{
    self, geometry_line, open_device, Backend, GeometryDoc, MountedDevice, OpenedDevice, SetupError,
};

/// `shale zoned mkfs`.
pub fn mkfs(a: &ZonedMkfsArgs, out: &mut dyn Write) -> CliResult {
    let path = &a.device;
    let backend = Backend::of(path);
    if backend == Backend::Block && a.geometry.any() {
        return Err(CliError::Usage(format!(
            "{} is a block device: it has its own geometry; the geometry flags (--zones, \
             --zone-size, ...) are for emulated devices",
            path.display()
        )));
    }
    let exists = path
        .try_exists()
        .map_err(|e| CliError::msg(format!("{}: {e}", path.display())))?;
    // An existing emulated device keeps its geometry unless flags ask for one
    // (then it must match: a device is never resized).
    let create = (backend == Backend::Emulated && (!exists || a.geometry.any()))
        .then(|| a.geometry.geometry())
        .transpose()?;
    let device = open_device(path, create).map_err(|e| match e {
        CliError::Msg(m) if exists => CliError::Msg(format!(
            "{m}; nothing was formatted (mkfs formats zoned block devices and emulated \
             device files only)"
        )),
        other => other,
    })?;
    let g = device.dev.geometry();
    let how = match (device.backend, device.created) {
        (Backend::Block, _) => "zoned block device".to_string(),
        (Backend::Emulated, created) => format!(
            "emulated device{}, {}",
            if created { ", created" } else { "" },
            if device.direct_io {
                "O_DIRECT"
            } else {
                "through the page cache (the host file system refused O_DIRECT)"
            }
        ),
    };
    let label = device.path.display().to_string();
    let created = device.created.then(|| device.path.clone());
    let formatted = if a.force {
        storage::format(device, a.meta_zones)
    } else {
        storage::check_formattable(&device, None)
            .map_err(|e| CliError::msg(format!("{e}; pass --force to format it anyway")))
            .and_then(|()| storage::format(device, a.meta_zones))
    };
    let handle = match formatted {
        Ok(h) => h,
        Err(e) => {
            // A device this command created and could not format goes.
            if let Some(path) = created {
                storage::remove_emulated(&path);
            }
            return Err(e);
        }
    };
    let data_zones = g.nr_zones.saturating_sub(a.meta_zones);
    let lines = [
        format!("device: {label} ({how})"),
        format!("geometry: {}", geometry_line(&g)),
        format!(
            "formatted: {} metadata zones, {data_zones} data zones ({} writable)",
            a.meta_zones,
            human_bytes(u64::from(data_zones) * g.zone_capacity)
        ),
    ];
    drop(handle);
    for l in lines {
        writeln!(out, "{l}").map_err(CliError::output)?;
    }
    Ok(())
}

/// Mounts the file system of `a.device` read-only, for looking at it: the
/// metadata log is replayed, nothing is written to the device.
fn mount_for_inspection(a: &ZonedInspectArgs) -> CliResult<MountedDevice> {
    storage::mount(open_device(&a.device, None)?, storage::Mount::ReadOnly)
}

/// How a device is driven, for the reports.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceDoc {
    path: PathBuf,
    backend: &'static str,
    direct_io: bool,
    geometry: GeometryDoc,
}

fn device_doc(d: &OpenedDevice) -> DeviceDoc {
    DeviceDoc {
        path: d.path.clone(),
        backend: match d.backend {
            Backend::Emulated => "emulated",
            Backend::Block => "block",
        },
        direct_io: d.direct_io,
        geometry: GeometryDoc::from(&d.dev.geometry()),
    }
}

/// A file of `ls --json`.
#[derive(Serialize)]
struct FileDoc<'a> {
    path: &'a str,
    size: u64,
    lifetime: &'static str,
    extents: Vec<ExtentDoc>,
}

/// One extent of a file.
#[derive(Serialize)]
struct ExtentDoc {
    zone: u32,
    offset: u64,
    len: u64,
}

/// The document of `ls --json`.
#[derive(Serialize)]
struct LsDoc<'a> {
    device: DeviceDoc,
    files: Vec<FileDoc<'a>>,
}

/// The document of `check --json`.
#[derive(Serialize)]
struct CheckDoc {
    device: DeviceDoc,
    mounted: bool,
    files: usize,
    extents: usize,
    bytes_read: u64,
    problems: Vec<String>,
    ok: bool,
}

/// `not-set`, `short`, `medium`, `long` or `extreme`.
pub fn lifetime_name(l: WriteLifetime) -> &'static str {
    match l {
        WriteLifetime::NotSet => "not-set",
        WriteLifetime::Short => "short",
        WriteLifetime::Medium => "medium",
        WriteLifetime::Long => "long",
        WriteLifetime::Extreme => "extreme",
    }
}

fn print_json(out: &mut dyn Write, v: &impl Serialize) -> CliResult {
    let s = serde_json::to_string_pretty(v)
        .map_err(|e| CliError::msg(format!("encoding JSON: {e}")))?;
    writeln!(out, "{s}").map_err(CliError::output)
}

/// `shale zoned ls`.
pub fn ls(a: &ZonedInspectArgs, out: &mut dyn Write) -> CliResult {
    let z = mount_for_inspection(a)?;
    let files = z.fs.files();
    if a.json {
        let files = files
            .iter()
            .map(|f| FileDoc {
                path: &f.path,
                size: f.size,
                lifetime: lifetime_name(f.lifetime),
                extents: f
                    .extents
                    .iter()
                    .map(|x| ExtentDoc {
                        zone: x.zone,
                        offset: x.offset,
                        len: x.len,
                    })
                    .collect(),
            })
            .collect();
        return print_json(
            out,
            &LsDoc {
                device: device_doc(&z.device),
                files,
            },
        );
    }
    write!(out, "{}", ls_text(&files)).map_err(CliError::output)
}

/// The table of `zoned ls`: one line per file, extents as
/// `zone:offset+length`, and a total.
fn ls_text(files: &[FileInfo]) -> String {
    let width = files.iter().map(|f| f.path.len()).max().unwrap_or(4).max(4);
    let mut s = format!(
        "{:<width$} {:>12} {:>9}  extents (zone:offset+length)\n",
        "path", "size", "lifetime"
    );
    let (mut bytes, mut extents) = (0u64, 0usize);
    for f in files {
        let xs: Vec<String> = f
            .extents
            .iter()
            .map(|x| format!("{}:{}+{}", x.zone, x.offset, x.len))
            .collect();
        s.push_str(&format!(
            "{:<width$} {:>12} {:>9}  {}\n",
            f.path,
            f.size,
            lifetime_name(f.lifetime),
            xs.join(" ")
        ));
        bytes += f.size;
        extents += f.extents.len();
    }
    s.push_str(&format!(
        "{} files, {} ({bytes} bytes), {extents} extents\n",
        files.len(),
        human_bytes(bytes)
    ));
    s
}

/// The zones of `df`, counted.
#[derive(Debug, Default, PartialEq, Eq)]
struct ZoneCounts {
    metadata: u32,
    data: u32,
    empty: u32,
    /// Data zones written to, with live data or not.
    used: u32,
    /// Data zones open for a placement slot.
    open: u32,
    /// Data zones written to that hold no live data (garbage only).
    garbage_only: u32,
}

fn count_zones(zones: &[ZoneUsage]) -> ZoneCounts {
    let mut c = ZoneCounts::default();
    for z in zones {
        match z.role {
            ZoneRole::Metadata { .. } => c.metadata += 1,
            ZoneRole::Data => {
                c.data += 1;
                if z.written == 0 {
                    c.empty += 1;
                } else {
                    c.used += 1;
                    if z.live == 0 {
                        c.garbage_only += 1;
                    }
                }
                if z.open_slot.is_some() {
                    c.open += 1;
                }
            }
        }
    }
    c
}

/// What `df` reports about a mounted zone file system.
pub struct Space {
    device: DeviceDoc,
    label: String,
    geometry: ZonedGeometry,
    stats: ZoneFsStats,
    zones: Vec<ZoneUsage>,
    counts: ZoneCounts,
    /// The device's own write counters (`ZonedDevice::stats`).
    device_counters: DeviceCounters,
}

/// The document of `df --json` ([`Space::doc`]).
#[derive(Serialize)]
pub struct SpaceDoc<'a> {
    device: &'a DeviceDoc,
    zones: ZoneCountsDoc,
    live_bytes: u64,
    written_bytes: u64,
    free_bytes: u64,
    data_capacity_bytes: u64,
    space_amplification: f64,
    device_counters: DeviceCountersDoc,
    zone_list: Vec<ZoneDoc>,
}

/// Zones by role and use.
#[derive(Serialize)]
struct ZoneCountsDoc {
    total: usize,
    metadata: u32,
    data: u32,
    empty: u32,
    used: u32,
    open: u32,
    garbage_only: u32,
}

/// The device's write counters, and since when.
#[derive(Serialize)]
struct DeviceCountersDoc {
    bytes_written: u64,
    resets: u64,
    finishes: u64,
    since: &'static str,
}

/// One zone of `df --json`'s list.
#[derive(Serialize)]
struct ZoneDoc {
    zone: u32,
    role: &'static str,
    condition: String,
    capacity: u64,
    written: u64,
    live: u64,
    removed_open: u64,
    open_slot: Option<usize>,
}

/// The device's write counters: lifetime totals on an emulated device
/// (persisted with its zone state), totals since the open on a block device.
#[derive(Clone, Copy, Debug, Default)]
struct DeviceCounters {
    bytes_written: u64,
    resets: u64,
    finishes: u64,
    /// Since the emulated device was created (else since it was opened).
    lifetime: bool,
}

/// Takes the figures of `df` from a mounted zone file system.
pub fn space(z: &MountedDevice) -> CliResult<Space> {
    let stats = z.fs.stats();
    let zones = z
        .fs
        .zones()
        .map_err(|e| CliError::msg(format!("{}: reporting zones: {e}", z.device.path.display())))?;
    Ok(Space {
        device: device_doc(&z.device),
        label: z.device.label(),
        geometry: z.device.dev.geometry(),
        counts: count_zones(&zones),
        stats,
        zones,
        device_counters: {
            let d = z.device.dev.stats();
            DeviceCounters {
                bytes_written: d.bytes_written,
                resets: d.resets,
                finishes: d.finishes,
                lifetime: z.device.backend == Backend::Emulated,
            }
        },
    })
}

impl Space {
    /// The JSON document of `df --json` (also `stats --zoned --json`'s
    /// `zoned`).
    pub fn doc(&self) -> SpaceDoc<'_> {
        let (stats, counts) = (&self.stats, &self.counts);
        SpaceDoc {
            device: &self.device,
            zones: ZoneCountsDoc {
                total: self.zones.len(),
                metadata: counts.metadata,
                data: counts.data,
                empty: counts.empty,
                used: counts.used,
                open: counts.open,
                garbage_only: counts.garbage_only,
            },
            live_bytes: stats.live_bytes,
            written_bytes: stats.written_bytes,
            free_bytes: u64::from(stats.empty_zones) * stats.zone_capacity,
            data_capacity_bytes: u64::from(stats.data_zones) * stats.zone_capacity,
            space_amplification: stats.space_amplification(),
            device_counters: DeviceCountersDoc {
                bytes_written: self.device_counters.bytes_written,
                resets: self.device_counters.resets,
                finishes: self.device_counters.finishes,
                since: if self.device_counters.lifetime {
                    "created"
                } else {
                    "opened"
                },
            },
            zone_list: self
                .zones
                .iter()
                .map(|u| ZoneDoc {
                    zone: u.zone,
                    role: match u.role {
                        ZoneRole::Metadata { active: true } => "metadata (active)",
                        ZoneRole::Metadata { active: false } => "metadata",
                        ZoneRole::Data => "data",
                    },
                    condition: format!("{:?}", u.condition),
                    capacity: u.capacity,
                    written: u.written,
                    live: u.live,
                    removed_open: u.removed_open,
                    open_slot: u.open_slot,
                })
                .collect(),
        }
    }

    /// The text of `df`.
    pub fn text(&self) -> String {
        let mut s = format!(
            "device: {}\ngeometry: {}\n",
            self.label,
            geometry_line(&self.geometry)
        );
        s.push_str(&df_text(
            &self.stats,
            &self.counts,
            self.zones.len(),
            &self.device_counters,
        ));
        s
    }
}

/// `shale zoned df`.
pub fn df(a: &ZonedInspectArgs, out: &mut dyn Write) -> CliResult {
    let z = mount_for_inspection(a)?;
    let space = space(&z)?;
    if a.json {
        return print_json(out, &space.doc());
    }
    out.write_all(space.text().as_bytes())
        .map_err(CliError::output)
}

fn df_text(s: &ZoneFsStats, c: &ZoneCounts, total: usize, d: &DeviceCounters) -> String {
    let cap = s.zone_capacity;
    let mut t = format!(
        "zones: {total} ({} metadata, {} data: {} empty, {} used of which {} open for writing \
         and {} hold garbage only)\n",
        c.metadata, c.data, c.empty, c.used, c.open, c.garbage_only
    );
    t.push_str(&format!(
        "space: {} live in files, {} written in data zones (space amplification {:.2}), {} \
         free in empty zones of {} for data\n",
        human_bytes(s.live_bytes),
        human_bytes(s.written_bytes),
        s.space_amplification(),
        human_bytes(u64::from(s.empty_zones) * cap),
        human_bytes(u64::from(s.data_zones) * cap),
    ));
    t.push_str(&format!(
        "device counters since it was {}: {} written, {} zone resets, {} zone finishes\n",
        if d.lifetime { "created" } else { "opened" },
        human_bytes(d.bytes_written),
        d.resets,
        d.finishes
    ));
    t
}

/// `shale zoned check`.
pub fn check(a: &ZonedInspectArgs, out: &mut dyn Write) -> CliResult {
    let device = open_device(&a.device, None)?;
    let json_device = device_doc(&device);
    let z = match shale_zoned::setup::mount(device, storage::Mount::ReadOnly) {
        Ok(z) => z,
        Err(SetupError::FileSystem {
            source: ZoneFsError::Corrupt { reason },
            ..
        }) => {
            // The mount refused damaged metadata and wrote nothing: that is
            // the report.
            let problem = format!("the zone file system is damaged: {reason}");
            if a.json {
                print_json(
                    out,
                    &CheckDoc {
                        device: json_device,
                        mounted: false,
                        files: 0,
                        extents: 0,
                        bytes_read: 0,
                        problems: vec![problem.clone()],
                        ok: false,
                    },
                )?;
            } else {
                writeln!(out, "problem: {problem}").map_err(CliError::output)?;
            }
            return Err(CliError::msg(format!(
                "{}: the zone file system is damaged (listed above); it was not mounted, and \
                 nothing was written to the device",
                a.device.display()
            )));
        }
        Err(e) => return Err(storage::setup_error(e)),
    };
    let report =
        z.fs.check()
            .map_err(|e| CliError::msg(format!("{}: check failed: {e}", a.device.display())))?;
    if a.json {
        print_json(
            out,
            &CheckDoc {
                device: device_doc(&z.device),
                mounted: true,
                files: report.files,
                extents: report.extents,
                bytes_read: report.bytes_read,
                problems: report.problems.clone(),
                ok: report.problems.is_empty(),
            },
        )?;
    } else {
        for p in &report.problems {
            writeln!(out, "problem: {p}").map_err(CliError::output)?;
        }
        if report.problems.is_empty() {
            writeln!(
                out,
                "checked {}: {} files, {} extents, {} read back; no problem",
                z.device.path.display(),
                report.files,
                report.extents,
                human_bytes(report.bytes_read)
            )
            .map_err(CliError::output)?;
        }
    }
    if report.problems.is_empty() {
        Ok(())
    } else {
        Err(CliError::msg(format!(
            "{}: the zone file system has {} problem{} (listed above)",
            a.device.display(),
            report.problems.len(),
            if report.problems.len() == 1 { "" } else { "s" }
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale_zoned::{Extent, ZoneCondition};

    fn zone(zone: u32, role: ZoneRole, written: u64, live: u64, slot: Option<usize>) -> ZoneUsage {
        ZoneUsage {
            zone,
            role,
            condition: ZoneCondition::Closed,
            capacity: 1 << 20,
            written,
            live,
            removed_open: 0,
            open_slot: slot,
        }
    }

    #[test]
    fn zones_are_counted_by_role_and_use() {
        let zones = [
            zone(0, ZoneRole::Metadata { active: true }, 8192, 0, None),
            zone(1, ZoneRole::Metadata { active: false }, 0, 0, None),
            zone(2, ZoneRole::Data, 4096, 4096, Some(0)),
            zone(3, ZoneRole::Data, 1 << 20, 0, None),
            zone(4, ZoneRole::Data, 0, 0, None),
            zone(5, ZoneRole::Data, 1 << 20, 512 << 10, None),
        ];
        assert_eq!(
            count_zones(&zones),
            ZoneCounts {
                metadata: 2,
                data: 4,
                empty: 1,
                used: 3,
                open: 1,
                garbage_only: 1,
            }
        );
    }

    #[test]
    fn ls_lists_extents_and_totals() {
        let files = vec![
            FileInfo {
                path: "/db/000007.sst".into(),
                size: 5000,
                lifetime: WriteLifetime::Long,
                extents: vec![
                    Extent {
                        zone: 3,
                        offset: 0,
                        len: 4096,
                    },
                    Extent {
                        zone: 4,
                        offset: 8192,
                        len: 904,
                    },
                ],
            },
            FileInfo {
                path: "/db/CURRENT".into(),
                size: 16,
                lifetime: WriteLifetime::NotSet,
                extents: vec![Extent {
                    zone: 2,
                    offset: 4096,
                    len: 16,
                }],
            },
        ];
        let text = ls_text(&files);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[1].starts_with("/db/000007.sst"), "{text}");
        assert!(lines[1].ends_with("long  3:0+4096 4:8192+904"), "{text}");
        assert!(lines[2].ends_with("not-set  2:4096+16"), "{text}");
        assert_eq!(lines[3], "2 files, 4.90 KiB (5016 bytes), 3 extents");
    }

    #[test]
    fn df_text_derives_free_space_and_amplification() {
        let s = ZoneFsStats {
            host_bytes: [0, 1000, 2000, 0, 0],
            padding_bytes: 500,
            metadata_bytes: 500,
            gc_bytes: 1000,
            live_bytes: 3 << 20,
            written_bytes: 6 << 20,
            data_zones: 10,
            empty_zones: 4,
            zone_capacity: 1 << 20,
            ..ZoneFsStats::default()
        };
        let d = DeviceCounters {
            bytes_written: 3 << 20,
            resets: 7,
            finishes: 2,
            lifetime: true,
        };
        let text = df_text(&s, &ZoneCounts::default(), 12, &d);
        assert!(text.contains("(space amplification 2.00)"), "{text}");
        assert!(
            text.contains("4.00 MiB free in empty zones of 10.00 MiB"),
            "{text}"
        );
        assert!(
            text.contains(
                "device counters since it was created: 3.00 MiB written, 7 zone resets, \
                 2 zone finishes"
            ),
            "{text}"
        );
        let j = serde_json::to_value(shale_bench::storage::ZoneFsDoc::from(&s)).expect("encodes");
        assert_eq!(j["host_bytes"]["total"], 3000);
        assert_eq!(j["device_bytes"], 5000);
    }
}
