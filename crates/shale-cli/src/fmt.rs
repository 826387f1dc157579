//! Small formatting helpers shared by the reports.

/// `num / den`, or `None` when `den` is 0.
pub fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// A byte count for people: `512 B`, `1.50 KiB`, `22.00 GiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut x = n as f64 / 1024.0;
    let mut unit = "KiB";
    for u in UNITS.iter().skip(1) {
        if x < 1024.0 {
            break;
        }
        x /= 1024.0;
        unit = u;
    }
    format!("{x:.2} {unit}")
}

/// A hit rate as a percentage, `-` when undefined.
pub fn rate_text(rate: Option<f64>) -> String {
    rate.map_or("-".into(), |r| format!("{:.1}%", r * 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_bytes_picks_units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.50 KiB");
        assert_eq!(human_bytes(32 << 20), "32.00 MiB");
        assert_eq!(human_bytes(22 << 30), "22.00 GiB");
        assert_eq!(human_bytes(u64::MAX), "16.00 EiB");
    }

    #[test]
    fn ratios_and_rates() {
        assert_eq!(ratio(7, 2), Some(3.5));
        assert_eq!(ratio(7, 0), None);
        assert_eq!(rate_text(Some(0.9876)), "98.8%");
        assert_eq!(rate_text(None), "-");
    }
}
