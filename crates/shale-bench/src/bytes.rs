//! Keys and values on the command line: text, or hex with a `0x` prefix.
//!
//! Output uses the same notation and always parses back to the same bytes: text
//! when the bytes are printable UTF-8 that does not itself start with `0x`,
//! otherwise `0x` followed by lower-case hex (`0x` alone for no bytes).

use std::fmt::Write as _;

/// Bytes given on the command line (a key or a value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bytes(pub Vec<u8>);

/// Parses `s` as text, or as hex when it starts with `0x`.
pub fn parse_bytes(s: &str) -> Result<Vec<u8>, String> {
    match s.strip_prefix("0x") {
        Some(digits) => decode_hex(digits),
        None => Ok(s.as_bytes().to_vec()),
    }
}

/// A clap value parser for keys: [`parse_bytes`], and not empty.
pub fn parse_key(s: &str) -> Result<Bytes, String> {
    let key = parse_bytes(s)?;
    if key.is_empty() {
        return Err("a key must not be empty".into());
    }
    Ok(Bytes(key))
}

/// A clap value parser for values: [`parse_bytes`] (may be empty).
pub fn parse_value(s: &str) -> Result<Bytes, String> {
    parse_bytes(s).map(Bytes)
}

/// Decodes an even number of hex digits (either case).
pub fn decode_hex(digits: &str) -> Result<Vec<u8>, String> {
    let pairs = digits.as_bytes().chunks_exact(2);
    if !pairs.remainder().is_empty() {
        return Err(format!(
            "odd number of hex digits after 0x ({})",
            digits.len()
        ));
    }
    let nibble = |pos: usize, c: u8| -> Result<u8, String> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(format!(
                "invalid hex digit {:?} at position {} after 0x",
                char::from(c),
                pos
            )),
        }
    };
    pairs
        .enumerate()
        .map(|(i, pair)| match pair {
            [hi, lo] => Ok(nibble(2 * i, *hi)? << 4 | nibble(2 * i + 1, *lo)?),
            _ => Err("odd number of hex digits".to_string()),
        })
        .collect()
}

/// Lower-case hex with a `0x` prefix.
pub fn to_hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(2 + 2 * bytes.len());
    s.push_str("0x");
    for b in bytes {
        // Writing to a String cannot fail.
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// How a value is shown: text if printable (spaces allowed), else hex.
pub fn display_value(bytes: &[u8]) -> String {
    display(bytes, true)
}

/// How a key is shown: text if printable without whitespace, else hex, so that
/// the first space of a `key value` line separates the two.
pub fn display_key(bytes: &[u8]) -> String {
    display(bytes, false)
}

fn display(bytes: &[u8], spaces: bool) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) if is_plain_text(s, spaces) => s.to_string(),
        _ => to_hex(bytes),
    }
}

fn is_plain_text(s: &str, spaces: bool) -> bool {
    !s.is_empty()
        && !s.starts_with("0x")
        && s.chars()
            .all(|c| !c.is_control() && (!c.is_whitespace() || (spaces && c == ' ')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_text_and_hex() {
        assert_eq!(parse_bytes("hello").as_deref(), Ok(&b"hello"[..]));
        assert_eq!(parse_bytes("0x").as_deref(), Ok(&b""[..]));
        assert_eq!(
            parse_bytes("0x00ff10Ab").as_deref(),
            Ok(&[0, 0xff, 0x10, 0xab][..])
        );
        assert_eq!(parse_bytes("").as_deref(), Ok(&b""[..]));
        // Only a lower-case prefix means hex.
        assert_eq!(parse_bytes("0X12").as_deref(), Ok(&b"0X12"[..]));
        assert_eq!(parse_bytes("x0").as_deref(), Ok(&b"x0"[..]));
    }

    #[test]
    fn rejects_bad_hex() {
        let odd = parse_bytes("0xabc").unwrap_err();
        assert!(odd.contains("odd number"), "{odd}");
        let bad = parse_bytes("0x0g").unwrap_err();
        assert!(bad.contains("'g'") && bad.contains("position 1"), "{bad}");
        // Multi-byte UTF-8 after the prefix is an invalid digit, not a panic.
        assert!(parse_bytes("0xé1").is_err());
        assert!(parse_bytes("0xéé").is_err());
    }

    #[test]
    fn keys_must_not_be_empty() {
        assert!(parse_key("").is_err());
        assert!(parse_key("0x").is_err());
        assert_eq!(parse_key("0x01"), Ok(Bytes(vec![1])));
        assert_eq!(parse_value("0x"), Ok(Bytes(vec![])));
    }

    #[test]
    fn displays_text_or_hex() {
        assert_eq!(display_value(b"hello world"), "hello world");
        assert_eq!(display_key(b"hello world"), "0x68656c6c6f20776f726c64");
        assert_eq!(display_key(b"k1"), "k1");
        assert_eq!(display_value("héllo".as_bytes()), "héllo");
        assert_eq!(display_value(&[0xff, 0x00]), "0xff00");
        assert_eq!(display_value(b"tab\there"), "0x7461620968657265");
        assert_eq!(display_value(b"line\n"), "0x6c696e650a");
        assert_eq!(display_value(b""), "0x");
        // Text that looks like hex is shown as hex so that it parses back.
        assert_eq!(display_value(b"0x12"), "0x30783132");
    }

    #[test]
    fn display_roundtrips_through_parse() {
        let samples: [&[u8]; 8] = [
            b"",
            b"a",
            b"0x",
            b"0xzz",
            b"two words",
            &[0, 1, 2, 255],
            "ünïcødé".as_bytes(),
            b" leading space",
        ];
        for s in samples {
            assert_eq!(parse_bytes(&display_value(s)).as_deref(), Ok(s));
            assert_eq!(parse_bytes(&display_key(s)).as_deref(), Ok(s));
        }
    }
}
