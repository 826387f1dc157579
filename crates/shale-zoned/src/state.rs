//! The emulator's zone state file (format version 1;
//! `docs/format/zoned-emulator.md`): the geometry, every zone's written bytes
//! and condition, and its write counters, under a CRC32C.

use std::path::Path;

use crate::device::{Result, ZoneCondition, ZoneStats, ZonedError, ZonedGeometry};

/// First 8 bytes of a state file.
pub(crate) const MAGIC: [u8; 8] = *b"SHZONED\0";
/// The format version written and read.
pub(crate) const VERSION: u32 = 1;
/// Bytes of the header (magic through max_active).
const HEADER_LEN: usize = 52;
/// Bytes per zone record.
const ZONE_LEN: usize = 40;

/// One zone as persisted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ZoneRecord {
    /// Bytes written from the zone's start (the write pointer unless full).
    pub(crate) written: u64,
    /// The condition.
    pub(crate) condition: ZoneCondition,
    /// The zone's lifetime counters.
    pub(crate) stats: ZoneStats,
}

/// The whole state file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StateFile {
    /// Incremented by every write of the file.
    pub(crate) sequence: u64,
    /// The device's geometry.
    pub(crate) geometry: ZonedGeometry,
    /// One record per zone.
    pub(crate) zones: Vec<ZoneRecord>,
}

/// CRC32C (Castagnoli, reflected polynomial 0x82F63B78) of `data`, from
/// the `crc32c` crate (hardware-accelerated where the CPU has it).
pub(crate) fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// The CRC32C of the bytes whose CRC32C is `crc`, followed by `data` (`0`
/// for a fresh CRC). For checking every prefix of a buffer against a
/// stored CRC in one pass.
pub(crate) fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

impl StateFile {
    /// Encodes the state. Grammar (all integers little-endian; also in
    /// `docs/format/zoned-emulator.md`):
    ///
    /// ```text
    /// state   := header zone{nr_zones} crc
    /// header  := magic "SHZONED\0" (8 bytes) | version u32 (= 1) | sequence u64
    ///            | nr_zones u32 | block_size u32 | zone_size u64 | zone_capacity u64
    ///            | max_open_zones u32 | max_active_zones u32            (52 bytes)
    /// zone    := written u64 | condition u8 | reserved [u8; 7] (zero)
    ///            | bytes_written u64 | resets u64 | finishes u64        (40 bytes)
    /// crc     := crc32c of every byte before it, u32
    /// ```
    ///
    /// `condition` is the frozen [`ZoneCondition::code`] (the kernel's
    /// `BLK_ZONE_COND_*`); `written` is the write pointer minus the zone start,
    /// or for a full zone the end of the data written before it became full.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let g = &self.geometry;
        let mut out = Vec::with_capacity(HEADER_LEN + self.zones.len() * ZONE_LEN + 4);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&self.sequence.to_le_bytes());
        out.extend_from_slice(&g.nr_zones.to_le_bytes());
        out.extend_from_slice(&g.block_size.to_le_bytes());
        out.extend_from_slice(&g.zone_size.to_le_bytes());
        out.extend_from_slice(&g.zone_capacity.to_le_bytes());
        out.extend_from_slice(&g.max_open_zones.to_le_bytes());
        out.extend_from_slice(&g.max_active_zones.to_le_bytes());
        for z in &self.zones {
            out.extend_from_slice(&z.written.to_le_bytes());
            out.push(z.condition.code());
            out.extend_from_slice(&[0u8; 7]);
            out.extend_from_slice(&z.stats.bytes_written.to_le_bytes());
            out.extend_from_slice(&z.stats.resets.to_le_bytes());
            out.extend_from_slice(&z.stats.finishes.to_le_bytes());
        }
        let crc = crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes a state file read from `path` (named in errors): a foreign
    /// magic or unknown version is [`ZonedError::NotEmulatedDevice`], any other
    /// damage [`ZonedError::Corrupt`].
    pub(crate) fn decode(path: &Path, bytes: &[u8]) -> Result<StateFile> {
        let foreign = |reason: String| ZonedError::NotEmulatedDevice {
            path: path.to_path_buf(),
            reason,
        };
        let corrupt = |reason: String| ZonedError::Corrupt {
            path: path.to_path_buf(),
            reason,
        };
        if bytes.len() < MAGIC.len() + 4 || bytes[..MAGIC.len()] != MAGIC {
            return Err(foreign(
                "the zone state file has no shale-zoned magic".into(),
            ));
        }
        let mut r = Reader { bytes, pos: 8 };
        let version = r.u32();
        if version != VERSION {
            return Err(foreign(format!(
                "zone state format version {version}; this build reads version {VERSION}"
            )));
        }
        if bytes.len() < HEADER_LEN + 4 {
            return Err(corrupt(format!(
                "{} bytes, shorter than a header",
                bytes.len()
            )));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        let stored = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        let actual = crc32c(body);
        if stored != actual {
            return Err(corrupt(format!(
                "checksum mismatch (stored {stored:#010x}, computed {actual:#010x})"
            )));
        }
        let sequence = r.u64();
        let nr_zones = r.u32();
        let block_size = r.u32();
        let zone_size = r.u64();
        let zone_capacity = r.u64();
        let max_open_zones = r.u32();
        let max_active_zones = r.u32();
        let geometry = ZonedGeometry {
            nr_zones,
            zone_size,
            zone_capacity,
            block_size,
            max_open_zones,
            max_active_zones,
        };
        geometry
            .validate()
            .map_err(|e| corrupt(format!("recorded geometry: {e}")))?;
        let expected = HEADER_LEN + nr_zones as usize * ZONE_LEN + 4;
        if bytes.len() != expected {
            return Err(corrupt(format!(
                "{} bytes, {expected} expected for {nr_zones} zones",
                bytes.len()
            )));
        }
        let mut zones = Vec::with_capacity(nr_zones as usize);
        let mut active = 0u32;
        for index in 0..nr_zones {
            let written = r.u64();
            let code = r.u8();
            r.skip(7);
            let stats = ZoneStats {
                bytes_written: r.u64(),
                resets: r.u64(),
                finishes: r.u64(),
            };
            let condition = match ZoneCondition::from_code(code) {
                Some(ZoneCondition::NotWritePointer) | None => {
                    return Err(corrupt(format!(
                        "zone {index}: condition code {code:#x} is not one an emulated zone has"
                    )))
                }
                Some(c) => c,
            };
            if written > zone_capacity || !written.is_multiple_of(u64::from(block_size)) {
                return Err(corrupt(format!(
                    "zone {index}: {written} bytes written, beyond the capacity or unaligned"
                )));
            }
            let consistent = match condition {
                ZoneCondition::Empty => written == 0,
                ZoneCondition::Closed => written > 0,
                _ => true,
            };
            if !consistent {
                return Err(corrupt(format!(
                    "zone {index}: {condition} with {written} bytes written"
                )));
            }
            if condition.is_active() {
                active += 1;
            }
            zones.push(ZoneRecord {
                written,
                condition,
                stats,
            });
        }
        if max_active_zones != 0 && active > max_active_zones {
            return Err(corrupt(format!(
                "{active} active zones, more than the limit {max_active_zones}"
            )));
        }
        Ok(StateFile {
            sequence,
            geometry,
            zones,
        })
    }
}

/// Little-endian reads from a buffer whose length was checked beforehand.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(src) = self.bytes.get(self.pos..self.pos + N) {
            out.copy_from_slice(src);
        }
        self.pos += N;
        out
    }
    fn skip(&mut self, n: usize) {
        self.pos += n;
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> StateFile {
        let mut g = ZonedGeometry::new(3, 1 << 20);
        g.zone_capacity = 768 << 10;
        StateFile {
            sequence: 7,
            geometry: g,
            zones: vec![
                ZoneRecord {
                    written: 0,
                    condition: ZoneCondition::Empty,
                    stats: ZoneStats::default(),
                },
                ZoneRecord {
                    written: 8192,
                    condition: ZoneCondition::Closed,
                    stats: ZoneStats {
                        bytes_written: 8192,
                        resets: 1,
                        finishes: 2,
                    },
                },
                ZoneRecord {
                    written: 4096,
                    condition: ZoneCondition::Full,
                    stats: ZoneStats::default(),
                },
            ],
        }
    }

    /// The bytewise CRC32C this crate computed before it used the `crc32c`
    /// crate: the formats' checksums must not change.
    fn bytewise_register(mut register: u32, data: &[u8]) -> u32 {
        for &b in data {
            register ^= u32::from(b);
            for _ in 0..8 {
                register = if register & 1 != 0 {
                    (register >> 1) ^ 0x82F6_3B78
                } else {
                    register >> 1
                };
            }
        }
        register
    }

    #[test]
    fn crc32c_matches_the_reference() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 31 % 256) as u8).collect();
        for len in [0, 1, 7, 8, 15, 16, 63, 64, 1000, 4096, 5000] {
            let d = &data[..len];
            assert_eq!(crc32c(d), !bytewise_register(!0, d), "length {len}");
        }
        // Every prefix, one byte at a time, as the torn-frame check does it.
        let mut crc = 0;
        for (i, b) in data[..300].iter().enumerate() {
            crc = crc32c_append(crc, std::slice::from_ref(b));
            assert_eq!(crc, !bytewise_register(!0, &data[..=i]), "prefix {i}");
        }
    }

    #[test]
    fn state_round_trips_and_every_flipped_byte_is_caught() {
        let s = sample();
        let bytes = s.encode();
        assert_eq!(bytes.len(), HEADER_LEN + 3 * ZONE_LEN + 4);
        let path = Path::new("dev.zones");
        assert_eq!(StateFile::decode(path, &bytes).expect("decode"), s);
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            let err = StateFile::decode(path, &bad).expect_err("flipped byte");
            assert!(
                matches!(
                    err,
                    ZonedError::Corrupt { .. } | ZonedError::NotEmulatedDevice { .. }
                ),
                "byte {i}: {err}"
            );
        }
        let err = StateFile::decode(path, &bytes[..bytes.len() - 1]).expect_err("short");
        assert!(matches!(err, ZonedError::Corrupt { .. }), "{err}");
    }

    #[test]
    fn every_truncation_and_pseudo_random_garbage_is_a_typed_error() {
        let bytes = sample().encode();
        let path = Path::new("dev.zones");
        for len in 0..bytes.len() {
            assert!(StateFile::decode(path, &bytes[..len]).is_err(), "{len}");
        }
        // Garbage behind a valid magic and version, with lengths that claim
        // many zones: rejected without allocating by the claimed count.
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for len in [12usize, 52, 56, 96, 200, 1000] {
            let mut buf = bytes[..12].to_vec();
            while buf.len() < len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                buf.push(x as u8);
            }
            assert!(StateFile::decode(path, &buf).is_err(), "{len}");
        }
    }

    #[test]
    fn foreign_files_and_versions_are_not_devices() {
        let path = Path::new("x");
        let err = StateFile::decode(path, b"hello world, a text file").expect_err("foreign");
        assert!(matches!(err, ZonedError::NotEmulatedDevice { .. }), "{err}");
        let mut bytes = sample().encode();
        bytes[8] = 2;
        let err = StateFile::decode(path, &bytes).expect_err("version 2");
        assert!(
            matches!(err, ZonedError::NotEmulatedDevice { ref reason, .. } if reason.contains("version 2")),
            "{err}"
        );
    }
}
