//! [`ZoneFsStats`], the counters a mount keeps (in its `State`) and the
//! gauges `ZoneFs::stats` adds.

/// Counters since mount, and gauges as of the call (`ZoneFs::stats`).
///
/// Byte counts are what the file system wrote to the device: file data
/// (`host_bytes`), the zeros that pad a sync to a whole block, the metadata
/// log, and the collector's copies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneFsStats {
    /// File bytes written by the host, by the creating file's lifetime hint:
    /// `[NotSet, Short (the WAL), Medium (L0, the manifest), Long, Extreme]`.
    pub host_bytes: [u64; 5],
    /// Zeros written to pad partial blocks at syncs and finishes.
    pub padding_bytes: u64,
    /// Metadata written: superblocks, snapshots, records, with their padding.
    pub metadata_bytes: u64,
    /// Bytes the collector copied (block-rounded extents).
    pub gc_bytes: u64,
    /// Zones the collector emptied and reset.
    pub gc_zones: u64,
    /// Collection rounds of the background thread that failed (a writer that
    /// needs space runs its own round and reports its error).
    pub gc_errors: u64,
    /// Zone resets (data and metadata zones).
    pub resets: u64,
    /// Zone finishes.
    pub finishes: u64,
    /// Gauge: bytes of the files (their sizes).
    pub live_bytes: u64,
    /// Gauge: bytes written in the data zones since their last reset (up to
    /// the write pointer, or the capacity for a finished zone): live data
    /// plus garbage and padding.
    pub written_bytes: u64,
    /// Gauge: data zones.
    pub data_zones: u32,
    /// Gauge: empty data zones.
    pub empty_zones: u32,
    /// Gauge: capacity of a zone.
    pub zone_capacity: u64,
}

impl ZoneFsStats {
    /// File bytes written by the host.
    pub fn host_total(&self) -> u64 {
        self.host_bytes.iter().sum()
    }

    /// What the file system asked the device to write for the host: file
    /// data, padding and metadata.
    pub fn fs_bytes(&self) -> u64 {
        self.host_total() + self.padding_bytes + self.metadata_bytes
    }

    /// Everything written to the device: `fs_bytes` plus the collector's
    /// copies.
    pub fn device_bytes(&self) -> u64 {
        self.fs_bytes() + self.gc_bytes
    }

    /// Device write amplification, `(host + GC writes) / host writes` with
    /// the file system's writes (data, padding, metadata) as host writes:
    /// what the device writes beyond what it is asked to, the figure an
    /// FTL's WAF measures on a conventional SSD. 1.0 with nothing written.
    pub fn waf(&self) -> f64 {
        ratio(self.device_bytes(), self.fs_bytes())
    }

    /// The file system's own overhead, `fs_bytes / host_total`: padding and
    /// metadata per file byte. 1.0 with nothing written.
    pub fn fs_overhead(&self) -> f64 {
        ratio(self.fs_bytes(), self.host_total())
    }

    /// Space amplification, `written_bytes / live_bytes` (1.0 when empty).
    pub fn space_amplification(&self) -> f64 {
        ratio(self.written_bytes, self.live_bytes)
    }

    /// The counters since `earlier` (an earlier `stats()` of the same mount);
    /// the gauges are this snapshot's.
    pub fn since(&self, earlier: &ZoneFsStats) -> ZoneFsStats {
        let mut host_bytes = [0; 5];
        for (i, h) in host_bytes.iter_mut().enumerate() {
            *h = self.host_bytes[i].saturating_sub(earlier.host_bytes[i]);
        }
        ZoneFsStats {
            host_bytes,
            padding_bytes: self.padding_bytes.saturating_sub(earlier.padding_bytes),
            metadata_bytes: self.metadata_bytes.saturating_sub(earlier.metadata_bytes),
            gc_bytes: self.gc_bytes.saturating_sub(earlier.gc_bytes),
            gc_zones: self.gc_zones.saturating_sub(earlier.gc_zones),
            gc_errors: self.gc_errors.saturating_sub(earlier.gc_errors),
            resets: self.resets.saturating_sub(earlier.resets),
            finishes: self.finishes.saturating_sub(earlier.finishes),
            ..self.clone()
        }
    }
}

fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        1.0
    } else {
        num as f64 / den as f64
    }
}
