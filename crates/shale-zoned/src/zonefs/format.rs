//! The on-device format of [`crate::ZoneFs`]: the superblock and the records
//! of the metadata log (`docs/format/zonefs.md`).
//!
//! Grammar (all integers little-endian):
//!
//! ```text
//! superblock := magic "SHZONEFS" (8 bytes) version u32 (1 or 2) uuid [16]
//!               nr_zones u32 zone_size u64 zone_capacity u64 block_size u32
//!               meta_zones u32 sequence u64 crc u32    ; crc32c of the bytes before it
//!               zeros up to the end of the first block
//! log        := frame* (zeros up to a block boundary)*
//! frame      := len u32 (> 0) crc u32 body[len]      ; crc32c of body
//!               ; a frame never starts in the last 7 bytes of a block (zeros);
//!               ; len = 0 means "padding: continue at the next block"
//! body       := kind u8 payload
//! kind 1 snapshot := next_id u64 ndirs u32 name{ndirs} nfiles u32 file{nfiles}
//!        file     := id u64 name size u64 lifetime u8 nextents u32 extent{nextents}
//! kind 2 create   := id u64 name lifetime u8        ; replaces a file of that name
//! kind 3 extents  := id u64 size u64 nextents u32 extent{nextents} ; appended
//! kind 4 delete   := name
//! kind 5 rename   := from:name to:name              ; replaces `to`
//! kind 6 mkdir    := name
//! kind 7 seal     := (empty)                         ; the log of this zone ends
//! kind 8 relocate := id u64 old:extent nextents u32 extent{nextents}
//!                    ; version 2: garbage collection moved extent `old` of file
//!                    ; `id` to the new extents (same bytes, same total len)
//! extent   := zone u32 offset u64 len u64   ; offset in the zone, len = file bytes
//! name     := n u16 utf8[n]
//! lifetime := 0 not set | 1 short | 2 medium | 3 long | 4 extreme
//! ```
//!
//! The record kinds and lifetime codes are frozen: a code never changes meaning.

use crate::state::crc32c;

/// Magic of a superblock.
pub(crate) const MAGIC: &[u8; 8] = b"SHZONEFS";
/// Format version written. Version 2 added the relocate record; a version 1
/// file system is read and rolled to version 2 at mount, before any record
/// of version 2 is written.
pub(crate) const VERSION: u32 = 2;
/// Oldest format version read.
pub(crate) const MIN_VERSION: u32 = 1;
/// Encoded superblock length (before the padding to a block).
pub(crate) const SUPERBLOCK_LEN: usize = 8 + 4 + 16 + 4 + 8 + 8 + 4 + 4 + 8 + 4;
/// Frame header: length and CRC.
pub(crate) const FRAME_HEADER: usize = 8;

pub(crate) const KIND_SNAPSHOT: u8 = 1;
pub(crate) const KIND_CREATE: u8 = 2;
pub(crate) const KIND_EXTENTS: u8 = 3;
pub(crate) const KIND_DELETE: u8 = 4;
pub(crate) const KIND_RENAME: u8 = 5;
pub(crate) const KIND_MKDIR: u8 = 6;
pub(crate) const KIND_SEAL: u8 = 7;
pub(crate) const KIND_RELOCATE: u8 = 8;

/// A piece of a file: `len` file bytes at `offset` inside `zone` (never
/// crossing the zone's end). On the device the piece occupies `len` rounded
/// up to the block size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// The data zone.
    pub zone: u32,
    /// Byte offset inside the zone (a multiple of the block size).
    pub offset: u64,
    /// File bytes in the extent.
    pub len: u64,
}

/// The superblock of a metadata zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Superblock {
    pub(crate) uuid: [u8; 16],
    pub(crate) nr_zones: u32,
    pub(crate) zone_size: u64,
    pub(crate) zone_capacity: u64,
    pub(crate) block_size: u32,
    pub(crate) meta_zones: u32,
    pub(crate) sequence: u64,
    /// Format version: what `decode` read; `encode` always writes [`VERSION`].
    pub(crate) version: u32,
}

/// Why a block is not a superblock.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SuperblockError {
    /// No magic: never formatted (or wiped).
    NoMagic,
    /// Magic present, other version.
    Version(u32),
    /// Magic present, CRC fails (a torn write).
    Damaged,
}

impl Superblock {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut e = Enc::default();
        e.0.extend_from_slice(MAGIC);
        e.u32(VERSION);
        e.0.extend_from_slice(&self.uuid);
        e.u32(self.nr_zones);
        e.u64(self.zone_size);
        e.u64(self.zone_capacity);
        e.u32(self.block_size);
        e.u32(self.meta_zones);
        e.u64(self.sequence);
        let crc = crc32c(&e.0);
        e.u32(crc);
        e.0
    }

    pub(crate) fn decode(b: &[u8]) -> Result<Superblock, SuperblockError> {
        if b.len() < SUPERBLOCK_LEN || &b[..8] != MAGIC {
            return Err(SuperblockError::NoMagic);
        }
        let mut d = Dec::new(&b[8..SUPERBLOCK_LEN]);
        let version = d.u32().ok_or(SuperblockError::Damaged)?;
        let stored = u32::from_le_bytes([
            b[SUPERBLOCK_LEN - 4],
            b[SUPERBLOCK_LEN - 3],
            b[SUPERBLOCK_LEN - 2],
            b[SUPERBLOCK_LEN - 1],
        ]);
        if crc32c(&b[..SUPERBLOCK_LEN - 4]) != stored {
            return Err(SuperblockError::Damaged);
        }
        if !(MIN_VERSION..=VERSION).contains(&version) {
            return Err(SuperblockError::Version(version));
        }
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(d.bytes(16).ok_or(SuperblockError::Damaged)?);
        let sb = (|| {
            Some(Superblock {
                uuid,
                nr_zones: d.u32()?,
                zone_size: d.u64()?,
                zone_capacity: d.u64()?,
                block_size: d.u32()?,
                meta_zones: d.u32()?,
                sequence: d.u64()?,
                version,
            })
        })();
        sb.ok_or(SuperblockError::Damaged)
    }
}

/// Little-endian encoder.
#[derive(Default)]
pub(crate) struct Enc(pub(crate) Vec<u8>);

impl Enc {
    pub(crate) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// A name (callers keep names under 64 KiB).
    pub(crate) fn name(&mut self, s: &str) {
        self.0
            .extend_from_slice(&(s.len().min(u16::MAX as usize) as u16).to_le_bytes());
        self.0
            .extend_from_slice(&s.as_bytes()[..s.len().min(u16::MAX as usize)]);
    }
    pub(crate) fn extent(&mut self, x: &Extent) {
        self.u32(x.zone);
        self.u64(x.offset);
        self.u64(x.len);
    }
}

/// Little-endian decoder; every getter gives `None` past the end.
pub(crate) struct Dec<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Dec<'a> {
    pub(crate) fn new(b: &'a [u8]) -> Dec<'a> {
        Dec { b, pos: 0 }
    }
    pub(crate) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.b.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
    pub(crate) fn u8(&mut self) -> Option<u8> {
        Some(self.bytes(1)?[0])
    }
    pub(crate) fn u16(&mut self) -> Option<u16> {
        let s = self.bytes(2)?;
        Some(u16::from_le_bytes([s[0], s[1]]))
    }
    pub(crate) fn u32(&mut self) -> Option<u32> {
        let s = self.bytes(4)?;
        Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    pub(crate) fn u64(&mut self) -> Option<u64> {
        let s = self.bytes(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Some(u64::from_le_bytes(a))
    }
    pub(crate) fn name(&mut self) -> Option<String> {
        let n = self.u16()? as usize;
        String::from_utf8(self.bytes(n)?.to_vec()).ok()
    }
    pub(crate) fn extent(&mut self) -> Option<Extent> {
        Some(Extent {
            zone: self.u32()?,
            offset: self.u64()?,
            len: self.u64()?,
        })
    }
    pub(crate) fn done(&self) -> bool {
        self.pos == self.b.len()
    }
}

/// Appends one frame holding `body` to `buf`, which starts at a block
/// boundary on the device; first pads to the next block when fewer than
/// [`FRAME_HEADER`] bytes are left in the current one.
pub(crate) fn push_frame(buf: &mut Vec<u8>, body: &[u8], block: usize) {
    let in_block = buf.len() % block;
    if in_block != 0 && block - in_block < FRAME_HEADER {
        buf.resize(buf.len() + block - in_block, 0);
    }
    buf.extend_from_slice(&(body.len() as u32).to_le_bytes());
    buf.extend_from_slice(&crc32c(body).to_le_bytes());
    buf.extend_from_slice(body);
}

/// Pads `buf` with zeros to a multiple of `block`.
pub(crate) fn pad_to_block(buf: &mut Vec<u8>, block: usize) {
    let r = buf.len() % block;
    if r != 0 {
        buf.resize(buf.len() + block - r, 0);
    }
}

/// Reads the frames of `log` (which starts at a block boundary) in order:
/// calls `f` with each body until the end, a torn or CRC-failing frame, or
/// `f` returning false. Returns the offset just after the last good frame
/// and whether the log ended cleanly (end of `log` or `f`'s stop, not a torn
/// or damaged frame).
pub(crate) fn read_frames(
    log: &[u8],
    block: usize,
    mut f: impl FnMut(&[u8]) -> bool,
) -> (usize, bool) {
    let mut pos = 0usize;
    let mut good_end = 0usize;
    loop {
        let in_block = pos % block;
        if in_block != 0 && block - in_block < FRAME_HEADER {
            pos += block - in_block;
        }
        if pos >= log.len() {
            return (good_end, true);
        }
        let Some(h) = log.get(pos..pos + FRAME_HEADER) else {
            return (good_end, false);
        };
        let len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
        let crc = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
        if len == 0 {
            // Padding: the next frame (if any) starts at the next block.
            pos = (pos / block + 1) * block;
            continue;
        }
        let Some(body) = log.get(pos + FRAME_HEADER..pos + FRAME_HEADER + len) else {
            return (good_end, false);
        };
        if crc32c(body) != crc {
            return (good_end, false);
        }
        pos += FRAME_HEADER + len;
        good_end = pos;
        if !f(body) {
            return (good_end, true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn superblock_round_trips_and_rejects_damage() {
        let sb = Superblock {
            uuid: [9; 16],
            nr_zones: 10,
            zone_size: 1 << 20,
            zone_capacity: 1 << 19,
            block_size: 4096,
            meta_zones: 3,
            sequence: 77,
            version: VERSION,
        };
        let b = sb.encode();
        assert_eq!(b.len(), SUPERBLOCK_LEN);
        assert_eq!(Superblock::decode(&b), Ok(sb));
        let mut bad = b.clone();
        bad[40] ^= 1;
        assert_eq!(Superblock::decode(&bad), Err(SuperblockError::Damaged));
        assert_eq!(
            Superblock::decode(&vec![0u8; 4096]),
            Err(SuperblockError::NoMagic)
        );
        assert_eq!(
            Superblock::decode(&b[..SUPERBLOCK_LEN - 1]),
            Err(SuperblockError::NoMagic)
        );
    }

    #[test]
    fn versions_1_and_2_are_read_and_others_refused() {
        let sb = Superblock {
            uuid: [1; 16],
            nr_zones: 4,
            zone_size: 1 << 20,
            zone_capacity: 1 << 20,
            block_size: 4096,
            meta_zones: 2,
            sequence: 3,
            version: VERSION,
        };
        let with_version = |v: u32| {
            let mut b = sb.encode();
            b[8..12].copy_from_slice(&v.to_le_bytes());
            let crc = crc32c(&b[..SUPERBLOCK_LEN - 4]);
            b[SUPERBLOCK_LEN - 4..].copy_from_slice(&crc.to_le_bytes());
            b
        };
        assert_eq!(
            Superblock::decode(&with_version(1)).map(|s| s.version),
            Ok(1)
        );
        assert_eq!(
            Superblock::decode(&with_version(2)).map(|s| s.version),
            Ok(2)
        );
        assert_eq!(
            Superblock::decode(&with_version(3)),
            Err(SuperblockError::Version(3))
        );
        assert_eq!(
            Superblock::decode(&with_version(0)),
            Err(SuperblockError::Version(0))
        );
    }

    #[test]
    fn frames_skip_padding_and_stop_at_a_torn_frame() {
        let block = 64;
        let mut log = Vec::new();
        push_frame(&mut log, &[1, 2, 3], block);
        pad_to_block(&mut log, block);
        // 50 bytes of body: the next header would start 6 bytes before the
        // block's end, so it is pushed to the next block.
        push_frame(&mut log, &[4; 50], block);
        push_frame(&mut log, &[5; 5], block);
        assert_eq!((log.len() - 5 - FRAME_HEADER) % block, 0);
        let end_of_good = log.len();
        pad_to_block(&mut log, block);
        let mut seen = Vec::new();
        let (end, clean) = read_frames(&log, block, |b| {
            seen.push(b.to_vec());
            true
        });
        assert_eq!(seen, vec![vec![1, 2, 3], vec![4; 50], vec![5; 5]]);
        assert_eq!((end, clean), (end_of_good, true));
        // A torn frame: header present, body cut or CRC wrong.
        let mut torn = log.clone();
        torn.truncate(end_of_good - 2);
        let (end, clean) = read_frames(&torn, block, |_| true);
        assert!(!clean);
        assert!(end < end_of_good);
        let mut flipped = log.clone();
        flipped[end_of_good - 1] ^= 0xFF;
        let mut n = 0;
        let (_, clean) = read_frames(&flipped, block, |_| {
            n += 1;
            true
        });
        assert_eq!((n, clean), (2, false));
    }
}
