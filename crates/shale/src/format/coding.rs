//! Little-endian fixed-width integers and LEB128 varints.
//!
//! Decoders take `&mut &[u8]` and advance it; they return `None` on truncated or
//! overlong input and never panic.

/// Appends `v` as 4 little-endian bytes.
pub(crate) fn put_fixed32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as 8 little-endian bytes.
pub(crate) fn put_fixed64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Reads 4 little-endian bytes from the front of `src`.
pub(crate) fn decode_fixed32(src: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(src.get(..4)?.try_into().ok()?))
}

/// Reads 8 little-endian bytes from the front of `src`.
pub(crate) fn decode_fixed64(src: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(src.get(..8)?.try_into().ok()?))
}

/// Appends `v` as a varint (7 bits a byte, low groups first, high bit = more).
pub(crate) fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Appends `v` as a varint.
pub(crate) fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, u64::from(v));
}

/// Encoded length of `v` as a varint.
pub(crate) fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Decodes a varint from the front of `src` and advances it.
pub(crate) fn get_varint64(src: &mut &[u8]) -> Option<u64> {
    // One byte is the common case (block entries' lengths): no loop.
    if let Some((&b, rest)) = src.split_first() {
        if b < 0x80 {
            *src = rest;
            return Some(u64::from(b));
        }
    }
    let mut result = 0u64;
    for (i, &b) in src.iter().enumerate().take(10) {
        let shift = 7 * i as u32;
        if i == 9 && b > 1 {
            return None; // more than 64 bits
        }
        result |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            *src = &src[i + 1..];
            return Some(result);
        }
    }
    None
}

/// Decodes a varint that must fit 32 bits.
pub(crate) fn get_varint32(src: &mut &[u8]) -> Option<u32> {
    let mut probe = *src;
    let v = u32::try_from(get_varint64(&mut probe)?).ok()?;
    *src = probe;
    Some(v)
}

/// Appends a varint length followed by the bytes.
pub(crate) fn put_length_prefixed(dst: &mut Vec<u8>, data: &[u8]) {
    put_varint64(dst, data.len() as u64);
    dst.extend_from_slice(data);
}

/// Decodes a varint length followed by that many bytes, advancing `src`.
pub(crate) fn get_length_prefixed<'a>(src: &mut &'a [u8]) -> Option<&'a [u8]> {
    let mut probe = *src;
    let len = usize::try_from(get_varint64(&mut probe)?).ok()?;
    let data = probe.get(..len)?;
    *src = &probe[len..];
    Some(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_roundtrip_and_lengths() {
        let values = [
            0u64,
            1,
            127,
            128,
            300,
            16383,
            16384,
            u32::MAX as u64,
            u64::MAX,
        ];
        let mut buf = Vec::new();
        for &v in &values {
            let before = buf.len();
            put_varint64(&mut buf, v);
            assert_eq!(buf.len() - before, varint_len(v));
        }
        let mut src = &buf[..];
        for &v in &values {
            assert_eq!(get_varint64(&mut src), Some(v));
        }
        assert!(src.is_empty());
    }

    #[test]
    fn truncated_and_overlong_varints_are_rejected() {
        let mut src: &[u8] = &[0x80, 0x80];
        assert_eq!(get_varint64(&mut src), None);
        let mut src: &[u8] = &[0xff; 11];
        assert_eq!(get_varint64(&mut src), None);
        let mut buf = Vec::new();
        put_varint64(&mut buf, u64::from(u32::MAX) + 1);
        let mut src = &buf[..];
        assert_eq!(get_varint32(&mut src), None);
        assert_eq!(src.len(), buf.len(), "a failed decode does not advance");
    }

    #[test]
    fn length_prefixed_checks_bounds() {
        let mut buf = Vec::new();
        put_length_prefixed(&mut buf, b"hello");
        let mut src = &buf[..];
        assert_eq!(get_length_prefixed(&mut src), Some(&b"hello"[..]));
        let mut short = &buf[..4];
        assert_eq!(get_length_prefixed(&mut short), None);
    }
}
