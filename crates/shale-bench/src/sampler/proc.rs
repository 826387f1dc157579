//! Parsers of the two `/proc` files the sampler reads, kept pure so that
//! tests can feed them recorded samples.
//!
//! * `/proc/stat`, first line: `cpu user nice system idle iowait irq softirq
//!   steal guest guest_nice`, cumulative clock ticks of all CPUs.
//! * `/proc/diskstats`, one line per block device: `major minor name` then
//!   cumulative counters; the ones used here are field 1 reads completed,
//!   3 sectors read, 5 writes completed, 7 sectors written and 10 milliseconds
//!   spent doing I/O (counted from the first counter after the name). Sectors
//!   are 512 bytes whatever the device's sector size.

/// Cumulative CPU time of all CPUs, in clock ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CpuTimes {
    /// User time, nice included.
    pub user: u64,
    /// System time, interrupts included.
    pub system: u64,
    /// Idle waiting for I/O.
    pub iowait: u64,
    /// Every field added up (the interval's denominator).
    pub total: u64,
}

/// CPU shares of an interval, in percent of all CPUs' time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct CpuShares {
    /// User time.
    pub user: f64,
    /// System time.
    pub system: f64,
    /// I/O wait.
    pub iowait: f64,
}

/// The aggregate `cpu` line of `/proc/stat`, or `None` if there is none or
/// it is malformed.
pub(crate) fn parse_cpu(stat: &str) -> Option<CpuTimes> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    // user nice system idle iowait irq softirq [steal guest guest_nice]; guest
    // time is already in user and nice, so it is not added again.
    let f = |i: usize| fields.get(i).copied().unwrap_or(0);
    if fields.len() < 7 {
        return None;
    }
    Some(CpuTimes {
        user: f(0) + f(1),
        system: f(2) + f(5) + f(6),
        iowait: f(4),
        total: (0..8).map(f).sum(),
    })
}

impl CpuTimes {
    /// Shares of the interval from `earlier` to `self`; `None` if no tick
    /// passed.
    pub(crate) fn shares_since(&self, earlier: &CpuTimes) -> Option<CpuShares> {
        let total = self.total.checked_sub(earlier.total).filter(|&t| t > 0)? as f64;
        let pct = |now: u64, then: u64| now.saturating_sub(then) as f64 * 100.0 / total;
        Some(CpuShares {
            user: pct(self.user, earlier.user),
            system: pct(self.system, earlier.system),
            iowait: pct(self.iowait, earlier.iowait),
        })
    }
}

/// Cumulative counters of one block device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DiskCounters {
    /// The kernel's name of the device (`vda`, `nvme0n1p2`).
    pub name: String,
    /// Reads completed.
    pub reads: u64,
    /// Sectors read (512 bytes).
    pub sectors_read: u64,
    /// Writes completed.
    pub writes: u64,
    /// Sectors written (512 bytes).
    pub sectors_written: u64,
    /// Milliseconds with I/O in flight.
    pub io_ms: u64,
}

/// Device rates over an interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct DiskRates {
    /// Share of the interval with I/O in flight, in percent (at most 100).
    pub util: f64,
    /// Reads per second.
    pub read_iops: f64,
    /// Writes per second.
    pub write_iops: f64,
    /// Bytes read per second.
    pub read_bytes: f64,
    /// Bytes written per second.
    pub write_bytes: f64,
}

/// The counters of device `major:minor` in `/proc/diskstats`, or `None` if
/// it is not listed or its line is malformed.
pub(crate) fn parse_disk(diskstats: &str, major: u32, minor: u32) -> Option<DiskCounters> {
    diskstats.lines().find_map(|line| {
        let mut it = line.split_whitespace();
        let ma: u32 = it.next()?.parse().ok()?;
        let mi: u32 = it.next()?.parse().ok()?;
        if (ma, mi) != (major, minor) {
            return None;
        }
        let name = it.next()?.to_string();
        let f: Vec<u64> = it.map(str::parse).collect::<Result<_, _>>().ok()?;
        if f.len() < 10 {
            return None;
        }
        Some(DiskCounters {
            name,
            reads: f[0],
            sectors_read: f[2],
            writes: f[4],
            sectors_written: f[6],
            io_ms: f[9],
        })
    })
}

impl DiskCounters {
    /// Rates over `seconds` since `earlier` (a reading of the same device).
    pub(crate) fn rates_since(&self, earlier: &DiskCounters, seconds: f64) -> Option<DiskRates> {
        if seconds <= 0.0 {
            return None;
        }
        let d = |now: u64, then: u64| now.saturating_sub(then) as f64;
        Some(DiskRates {
            util: (d(self.io_ms, earlier.io_ms) / (seconds * 1000.0) * 100.0).min(100.0),
            read_iops: d(self.reads, earlier.reads) / seconds,
            write_iops: d(self.writes, earlier.writes) / seconds,
            read_bytes: d(self.sectors_read, earlier.sectors_read) * 512.0 / seconds,
            write_bytes: d(self.sectors_written, earlier.sectors_written) * 512.0 / seconds,
        })
    }
}

/// Major and minor numbers of a device number (`st_dev`), in glibc's
/// encoding (12 + 20 bits split around the classic 8 + 8).
pub(crate) fn split_dev(dev: u64) -> (u32, u32) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major as u32, minor as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Recorded on the development machine, 5 s apart, during a load.
    const STAT_0: &str = "cpu  721030 124470 190307 1021877 181891 0 20023 1221 0 0
cpu0 341516 77236 61902 614471 49728 0 1004 597 0 0
cpu1 379514 47234 128405 407406 132163 0 19019 624 0 0
intr 1 2 3
ctxt 99
";
    const STAT_1: &str = "cpu  721630 124470 190507 1021977 182091 0 20123 1221 0 0
cpu0 341816 77236 62002 614521 49828 0 1054 597 0 0
";
    const DISK_0: &str = "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
 254       0 vda 62943643 47497 512004206 5426705 385049 191291 697706752 1425015 0 3058936 6949550 133654 130 598694592 92116 63103 5713
 254       1 vda1 62940000 47000 512000000 5426000 385000 191000 697700000 1425000 0 3058000 6949000 0 0 0 0 0 0
 253       0 zram0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
";
    const DISK_1: &str = " 254       0 vda 62953643 47497 512084206 5427705 386049 191291 697786752 1425515 2 3062686 6950550 133654 130 598694592 92116 63103 5713
";

    #[test]
    fn cpu_shares_of_an_interval() {
        let a = parse_cpu(STAT_0).expect("cpu line");
        assert_eq!(a.user, 721030 + 124470);
        assert_eq!(a.system, 190307 + 20023);
        assert_eq!(a.iowait, 181891);
        let b = parse_cpu(STAT_1).expect("cpu line");
        // 600 user + 200 system + 100 idle + 200 iowait + 100 softirq = 1200.
        let s = b.shares_since(&a).expect("ticks passed");
        assert!((s.user - 50.0).abs() < 1e-9, "{s:?}");
        assert!((s.system - 25.0).abs() < 1e-9, "{s:?}");
        assert!((s.iowait - 100.0 * 200.0 / 1200.0).abs() < 1e-9, "{s:?}");
        assert_eq!(a.shares_since(&a), None);
    }

    #[test]
    fn malformed_or_missing_cpu_lines_are_none() {
        assert_eq!(parse_cpu(""), None);
        assert_eq!(parse_cpu("cpu0 1 2 3 4 5 6 7\n"), None);
        assert_eq!(parse_cpu("cpu  1 2 x 4 5 6 7\n"), None);
        assert_eq!(parse_cpu("cpu  1 2 3\n"), None);
    }

    #[test]
    fn disk_rates_of_an_interval() {
        let a = parse_disk(DISK_0, 254, 0).expect("vda");
        assert_eq!(a.name, "vda");
        assert_eq!(a.io_ms, 3058936);
        let b = parse_disk(DISK_1, 254, 0).expect("vda");
        let r = b.rates_since(&a, 5.0).expect("rates");
        assert!((r.util - 3750.0 / 5000.0 * 100.0).abs() < 1e-9, "{r:?}");
        assert!((r.read_iops - 2000.0).abs() < 1e-9, "{r:?}");
        assert!((r.write_iops - 200.0).abs() < 1e-9, "{r:?}");
        assert!((r.read_bytes - 80000.0 * 512.0 / 5.0).abs() < 1e-6, "{r:?}");
        assert!(
            (r.write_bytes - 80000.0 * 512.0 / 5.0).abs() < 1e-6,
            "{r:?}"
        );
        assert_eq!(
            parse_disk(DISK_0, 254, 1).map(|d| d.name),
            Some("vda1".into())
        );
        assert_eq!(parse_disk(DISK_0, 8, 0), None);
        assert_eq!(parse_disk(" 8 0 sda 1 2\n", 8, 0), None);
    }

    #[test]
    fn device_numbers_split_as_glibc_does() {
        assert_eq!(split_dev(0xfe00), (254, 0));
        assert_eq!(split_dev(0x0801), (8, 1));
        // makedev(259, 70000): a large minor spills into the high bits.
        let dev = (259u64 & 0xfff) << 8 | (70000u64 & 0xff) | ((70000u64 & !0xff) << 12);
        assert_eq!(split_dev(dev), (259, 70000));
    }
}
