//! What a mounted [`ZoneFs`] can tell about itself: counters and gauges
//! ([`ZoneFsStats`]), its files and zones, and a consistency check that reads
//! every file.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use shale_env::{FileSystem, WriteLifetime};

use super::stats::ZoneFsStats;
use super::{extents_of, lock, Extent, ZoneFs};
use crate::device::ZoneCondition;

/// A file of [`ZoneFs::files`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileInfo {
    /// Full path.
    pub path: String,
    /// Size as of its last sync.
    pub size: u64,
    /// The lifetime hint it was created with.
    pub lifetime: WriteLifetime,
    /// Its extents in file order.
    pub extents: Vec<Extent>,
}

/// What a zone holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneRole {
    /// A metadata zone; `active` for the one the log appends to.
    Metadata {
        /// The log appends here.
        active: bool,
    },
    /// A data zone.
    Data,
}

/// A zone of [`ZoneFs::zones`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneUsage {
    /// Zone index.
    pub zone: u32,
    /// Metadata or data.
    pub role: ZoneRole,
    /// The device's condition of the zone.
    pub condition: ZoneCondition,
    /// Writable bytes.
    pub capacity: u64,
    /// Bytes written since the last reset (the file system's view).
    pub written: u64,
    /// Block-rounded bytes of the files' extents in the zone (0 for a
    /// metadata zone).
    pub live: u64,
    /// Block-rounded bytes in the zone of removed files that open readers
    /// still hold: garbage the collector cannot win until they close.
    pub removed_open: u64,
    /// The placement slot whose open zone this is.
    pub open_slot: Option<usize>,
}

/// The result of [`ZoneFs::check`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Files checked.
    pub files: usize,
    /// Extents checked.
    pub extents: usize,
    /// File bytes read back.
    pub bytes_read: u64,
    /// What is wrong, one line each (empty: consistent).
    pub problems: Vec<String>,
}

fn lifetime_of(code: u8) -> WriteLifetime {
    match code {
        1 => WriteLifetime::Short,
        2 => WriteLifetime::Medium,
        3 => WriteLifetime::Long,
        4 => WriteLifetime::Extreme,
        _ => WriteLifetime::NotSet,
    }
}

impl ZoneFs {
    /// Counters since mount and gauges now.
    pub fn stats(&self) -> ZoneFsStats {
        let st = lock(&self.inner.state);
        let data = &st.zones[st.meta_zones as usize..];
        ZoneFsStats {
            live_bytes: st.files.values().map(|f| f.size).sum(),
            written_bytes: data.iter().filter(|z| z.used).map(|z| z.wp).sum(),
            data_zones: data.len() as u32,
            empty_zones: st.free_zones() as u32,
            zone_capacity: self.inner.dev.geometry().zone_capacity,
            ..st.counters.clone()
        }
    }

    /// Every file, in path order.
    pub fn files(&self) -> Vec<FileInfo> {
        let st = lock(&self.inner.state);
        st.files
            .iter()
            .map(|(path, f)| FileInfo {
                path: path.clone(),
                size: f.size,
                lifetime: lifetime_of(f.lifetime),
                extents: extents_of(&f.map),
            })
            .collect()
    }

    /// Every zone, metadata zones first.
    pub fn zones(&self) -> io::Result<Vec<ZoneUsage>> {
        let report = self.inner.dev.report_all().map_err(io::Error::from)?;
        let st = lock(&self.inner.state);
        let block = self.inner.block;
        let mut live = vec![0u64; st.zones.len()];
        for f in st.files.values() {
            for x in extents_of(&f.map) {
                live[x.zone as usize] += x.len.div_ceil(block) * block;
            }
        }
        let mut removed_open = vec![0u64; st.zones.len()];
        for map in st.zombies.values() {
            for x in extents_of(map) {
                removed_open[x.zone as usize] += x.len.div_ceil(block) * block;
            }
        }
        Ok(st
            .zones
            .iter()
            .enumerate()
            .map(|(i, z)| {
                let meta = (i as u32) < st.meta_zones;
                let written = if meta && i as u32 == st.active_meta {
                    st.meta_wp - self.inner.zone_start(i as u32)
                } else if meta {
                    report[i]
                        .write_pointer
                        .saturating_sub(report[i].start)
                        .min(z.capacity)
                } else if z.used {
                    z.wp
                } else {
                    0
                };
                ZoneUsage {
                    zone: i as u32,
                    role: if meta {
                        ZoneRole::Metadata {
                            active: i as u32 == st.active_meta,
                        }
                    } else {
                        ZoneRole::Data
                    },
                    condition: report[i].condition,
                    capacity: z.capacity,
                    written,
                    live: live[i],
                    removed_open: removed_open[i],
                    open_slot: st.open.iter().position(|o| *o == Some(i as u32)),
                }
            })
            .collect())
    }

    /// Checks the metadata (every extent in a data zone, block-aligned,
    /// below the zone's write pointer; no two extents overlapping; extents
    /// covering each file's size) and reads every byte of every file.
    /// Problems are listed in the report; an `Err` is a failure to read.
    pub fn check(&self) -> io::Result<CheckReport> {
        let files = self.files();
        let mut report = CheckReport {
            files: files.len(),
            ..CheckReport::default()
        };
        {
            let st = lock(&self.inner.state);
            let block = self.inner.block;
            let mut by_zone: BTreeMap<u32, Vec<(u64, u64, &str)>> = BTreeMap::new();
            for f in &files {
                let mut covered = 0;
                for x in &f.extents {
                    report.extents += 1;
                    covered += x.len;
                    let Some(z) = st.zones.get(x.zone as usize) else {
                        report.problems.push(format!(
                            "{}: extent in zone {}, past the device's {} zones",
                            f.path,
                            x.zone,
                            st.zones.len()
                        ));
                        continue;
                    };
                    let end = x.offset + x.len.div_ceil(block) * block;
                    if x.zone < st.meta_zones {
                        report
                            .problems
                            .push(format!("{}: extent in metadata zone {}", f.path, x.zone));
                    } else if x.offset % block != 0 {
                        report.problems.push(format!(
                            "{}: extent at zone {} offset {} is not block-aligned",
                            f.path, x.zone, x.offset
                        ));
                    } else if !z.used || end > z.wp {
                        report.problems.push(format!(
                            "{}: extent at zone {} bytes {}..{} is past the zone's write \
                             pointer {}",
                            f.path,
                            x.zone,
                            x.offset,
                            end,
                            if z.used { z.wp } else { 0 }
                        ));
                    }
                    by_zone
                        .entry(x.zone)
                        .or_default()
                        .push((x.offset, end, &f.path));
                }
                if covered < f.size {
                    report.problems.push(format!(
                        "{}: extents hold {covered} bytes, the size is {}",
                        f.path, f.size
                    ));
                }
            }
            for (zone, mut xs) in by_zone {
                xs.sort();
                for w in xs.windows(2) {
                    if w[1].0 < w[0].1 {
                        report.problems.push(format!(
                            "zone {zone}: {} (bytes {}..{}) overlaps {} (from {})",
                            w[0].2, w[0].0, w[0].1, w[1].2, w[1].0
                        ));
                    }
                }
            }
        }
        let mut buf = vec![0u8; 1 << 20];
        for f in &files {
            let r = match self.open_random(Path::new(&f.path)) {
                Ok(r) => r,
                // Removed since the listing.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            let mut off = 0;
            while off < r.size() {
                let n = (r.size() - off).min(buf.len() as u64) as usize;
                if let Err(e) = r.read_exact_at(off, &mut buf[..n]) {
                    report
                        .problems
                        .push(format!("{}: read at {off} failed: {e}", f.path));
                    break;
                }
                off += n as u64;
                report.bytes_read += n as u64;
            }
        }
        Ok(report)
    }
}
