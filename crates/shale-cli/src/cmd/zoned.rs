//! `shale zoned ...`: format a zoned device with the zone file system
//! (`mkfs`) and inspect it. Every command opens its device through
//! [`crate::storage::open_device`].

use std::io::Write;

use shale_zoned::ZonedGeometry;

use crate::args::{GeometryArgs, ZonedMkfsArgs};
use crate::error::{CliError, CliResult};
use crate::storage::{self, default_geometry, geometry_line, open_device, Backend};

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
    pub fn geometry(&self) -> CliResult<ZonedGeometry> {
        let d = default_geometry();
        let zone_size = self.zone_size.unwrap_or(d.zone_size);
        let block_size = match self.block_size {
            None => d.block_size,
            Some(b) => u32::try_from(b)
                .map_err(|_| CliError::Usage(format!("--block-size {b} is too large")))?,
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
            .map_err(|e| CliError::Usage(format!("bad device geometry: {e}")))?;
        Ok(g)
    }
}

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
    let handle = storage::format(device, a.meta_zones)?;
    let data_zones = g.nr_zones.saturating_sub(a.meta_zones);
    let lines = [
        format!("device: {label} ({how})"),
        format!("geometry: {}", geometry_line(&g)),
        format!(
            "formatted: {} metadata zones, {data_zones} data zones ({} writable)",
            a.meta_zones,
            crate::fmt::human_bytes(u64::from(data_zones) * g.zone_capacity)
        ),
    ];
    drop(handle);
    for l in lines {
        writeln!(out, "{l}").map_err(CliError::output)?;
    }
    Ok(())
}
