//! Parsers of argument values: byte sizes and key counts. A leaf: it
//! imports nothing of the CLI.

/// Parses a byte count: digits with an optional unit, `K`/`KiB`, `M`/`MiB`,
/// `G`/`GiB` (powers of 1024) or `KB`, `MB`, `GB` (powers of 1000).
pub fn parse_byte_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad =
        || format!("invalid size {s:?}: use bytes with an optional unit (4096, 1MiB, 64M, 1GB)");
    let n: u64 = num.parse().map_err(|_| bad())?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return Err(bad()),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size {s:?} overflows 64 bits"))
}

/// Parses a key count of `--keys`: digits with an optional decimal suffix
/// `k` (10^3), `M` (10^6), `B` or `G` (10^9), `T` (10^12): `200M`, `2B`,
/// `1.5M`, `20000000`.
pub fn parse_key_count(s: &str) -> Result<u64, String> {
    let bad = || {
        format!("{s:?} is not a key count: use a whole number, optionally with k, M, B (or G) or T (200M, 2B, 20000000)")
    };
    let t = s.trim().replace('_', "");
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let mult: f64 = match suffix {
        "" => 1.0,
        "k" | "K" => 1e3,
        "m" | "M" => 1e6,
        "b" | "B" | "g" | "G" => 1e9,
        "t" | "T" => 1e12,
        _ => return Err(bad()),
    };
    if num.is_empty() {
        return Err(bad());
    }
    if suffix.is_empty() {
        return match num.parse::<u64>() {
            Ok(0) => Err("a key count must be at least 1".into()),
            Ok(n) => Ok(n),
            Err(_) => Err(bad()),
        };
    }
    let x: f64 = num.parse().map_err(|_| bad())?;
    let n = x * mult;
    if !(n.is_finite() && (1.0..9.0e18).contains(&n)) || (n - n.round()).abs() > 1e-6 {
        return Err(bad());
    }
    Ok(n.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_parse_binary_and_decimal_units() {
        assert_eq!(parse_byte_size("4096"), Ok(4096));
        assert_eq!(parse_byte_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_byte_size("64M"), Ok(64 << 20));
        assert_eq!(parse_byte_size("768K"), Ok(768 << 10));
        assert_eq!(parse_byte_size("1GB"), Ok(1_000_000_000));
        assert_eq!(parse_byte_size(" 2 g "), Ok(2 << 30));
        for bad in ["", "x", "1.5M", "-1", "12XB", "99999999999999999999"] {
            assert!(parse_byte_size(bad).is_err(), "{bad}");
        }
        assert!(parse_byte_size("17179869184G")
            .expect_err("overflow")
            .contains("overflows"));
    }

    #[test]
    fn key_counts_take_suffixes() {
        assert_eq!(parse_key_count("20000000"), Ok(20_000_000));
        assert_eq!(parse_key_count("200M"), Ok(200_000_000));
        assert_eq!(parse_key_count("2B"), Ok(2_000_000_000));
        assert_eq!(parse_key_count("20b"), Ok(20_000_000_000));
        assert_eq!(parse_key_count("2G"), Ok(2_000_000_000));
        assert_eq!(parse_key_count("1.5M"), Ok(1_500_000));
        assert_eq!(parse_key_count("200k"), Ok(200_000));
        assert_eq!(parse_key_count("1T"), Ok(1_000_000_000_000));
        assert_eq!(parse_key_count("2_000_000"), Ok(2_000_000));
        for bad in [
            "",
            "M",
            "0",
            "0M",
            "2X",
            "-5",
            "1.5",
            "1.2345k",
            "nan",
            "1e9",
            "99999999T",
        ] {
            assert!(parse_key_count(bad).is_err(), "{bad:?}");
        }
    }
}

/// Filter bits per key of single levels (`FilterPolicy::level_bits_per_key`),
/// as `shale advise --budget` prints them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelBits(pub [Option<u32>; shale::NUM_LEVELS]);

/// Parses `L4=7,L5=5`: bits per key (1 to 64) of levels L0 to L6.
pub fn parse_level_bits(s: &str) -> Result<LevelBits, String> {
    let mut out = LevelBits::default();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let bad =
            || format!("invalid level bits {item:?}: use L<level>=<bits per key>, as in L4=7,L5=5");
        let (level, bits) = item.split_once('=').ok_or_else(bad)?;
        let level: usize = level
            .trim()
            .strip_prefix(['L', 'l'])
            .and_then(|l| l.parse().ok())
            .filter(|&l| l < shale::NUM_LEVELS)
            .ok_or_else(|| format!("{}; levels are L0 to L{}", bad(), shale::NUM_LEVELS - 1))?;
        let bits: u32 = bits
            .trim()
            .parse()
            .ok()
            .filter(|b| (1..=64).contains(b))
            .ok_or_else(|| format!("{}; bits per key are 1 to 64", bad()))?;
        out.0[level] = Some(bits);
    }
    if out.0.iter().all(Option::is_none) {
        return Err("no level bits given: use L<level>=<bits per key>, as in L4=7,L5=5".into());
    }
    Ok(out)
}

#[cfg(test)]
mod level_bits_tests {
    use super::*;

    #[test]
    fn level_bits_parse_and_bad_ones_are_refused() {
        let b = parse_level_bits("L4=7, l5=5").expect("parse");
        assert_eq!(b.0[4], Some(7));
        assert_eq!(b.0[5], Some(5));
        assert_eq!(b.0[6], None);
        for bad in ["", "L7=5", "L4", "L4=0", "L4=65", "X4=5", "L4=x"] {
            assert!(parse_level_bits(bad).is_err(), "{bad}");
        }
    }
}
