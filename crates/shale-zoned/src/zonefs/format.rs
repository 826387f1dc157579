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
//! log        := sync* , up to the zone's write pointer
//! sync       := frame+ zeros    ; one write: starts at a block boundary, zeros
//!                               ; up to the next one; a zone's first sync is
//!                               ; its snapshot frame, written with the superblock
//! frame      := len u32 (> 0) crc u32 body[len]      ; crc32c of body
//!               ; a frame never starts in the last 7 bytes of a block (zeros);
//!               ; len = 0 means "padding: zeros up to the next block"
//!               ; only the log's last frame may run past the write pointer (a
//!               ; write cut by a crash); any other deviation is damage
//! body       := kind u8 payload
//! kind 1 snapshot := next_id u64 ndirs u32 name{ndirs} nfiles u32 file{nfiles}
//!        file     := id u64 name size u64 lifetime u8 nextents u32 extent{nextents}
//! kind 2 create   := id u64 name lifetime u8        ; replaces a file of that name
//! kind 3 extents  := id u64 size u64 nextents u32 extent{nextents} ; appended
//! kind 4 delete   := name
//! kind 5 rename   := from:name to:name              ; replaces `to`
//! kind 6 mkdir    := name
//! kind 7 seal     := (empty)                         ; written by earlier builds
//!                                                    ; when a roll began; read as
//!                                                    ; a no-op, never written now
//! kind 8 relocate := id u64 old:extent nextents u32 extent{nextents}
//!                    ; version 2: garbage collection moved extent `old` of file
//!                    ; `id` to the new extents (same bytes, same total len)
//! extent   := zone u32 offset u64 len u64   ; offset in the zone, len = file bytes
//! name     := n u16 utf8[n]
//! lifetime := 0 not set | 1 short | 2 medium | 3 long | 4 extreme
//! ```
//!
//! The record kinds and lifetime codes are frozen: a code never changes meaning.

use crate::state::{crc32c, crc32c_append};

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
    /// Magic present, CRC fails: damage (a superblock is written whole, in
    /// one block, so no crash leaves this).
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

/// How a metadata log without damage ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LogEnd {
    /// Frames and zero padding up to the end of the log.
    Clean,
    /// The last frame, at byte `at` of the log, runs past the end of the
    /// log: a write cut by a crash at the write pointer (never acknowledged),
    /// which the reader drops.
    Torn {
        /// Where the cut frame starts in the log.
        at: usize,
    },
}

/// Bytes of a metadata log that no write leaves, whole or cut by a crash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LogDamage {
    /// Byte offset in the log of the damaged frame (or padding).
    pub(crate) at: usize,
    /// What is wrong.
    pub(crate) what: String,
}

/// Bytes of CRC a cut frame's scan for later frames may hash, beyond
/// [`SCAN_BUDGET_FACTOR`] times the bytes after the cut frame.
const SCAN_BUDGET_BASE: usize = 16 << 20;
/// See [`SCAN_BUDGET_BASE`].
const SCAN_BUDGET_FACTOR: usize = 16;

/// Reads the frames of `log` in order, calling `f` with each complete
/// frame's offset in the log and body (`f` returns why a body does not
/// decode). `log` holds a metadata zone's bytes after its superblock block,
/// up to the zone's write pointer (a multiple of `block`); `room` is how
/// many bytes the log could ever hold (the zone's capacity minus the
/// superblock block).
///
/// The rule (`docs/format/zonefs.md`, "Mount"): only a torn tail is
/// dropped. A log ends [`LogEnd::Clean`] when frames and zero padding reach
/// its end, and [`LogEnd::Torn`] when its last frame runs past its end and
/// nothing shows that it was not cut there by the write pointer. Everything
/// else is [`LogDamage`]: a complete frame whose checksum fails (or whose
/// body `f` refuses), non-zero bytes where the format has zeros, a length
/// that could not fit in the zone, and a frame that looks cut but is
/// followed by a valid frame or whose checksum matches a complete frame
/// inside the log (a damaged length field).
pub(crate) fn read_frames(
    log: &[u8],
    block: usize,
    room: usize,
    mut f: impl FnMut(usize, &[u8]) -> Result<(), String>,
) -> Result<LogEnd, LogDamage> {
    let damage = |at: usize, what: String| Err(LogDamage { at, what });
    let mut pos = 0usize;
    let mut first = true;
    loop {
        let in_block = pos % block;
        if in_block != 0 && block - in_block < FRAME_HEADER {
            // A frame never starts here: the writer left zeros.
            let next = pos - in_block + block;
            if !zeros(log, pos, next) {
                return damage(
                    pos,
                    format!(
                        "non-zero bytes in the last {} bytes of a block, where the format has zeros",
                        block - in_block
                    ),
                );
            }
            pos = next;
        }
        if pos >= log.len() {
            return Ok(LogEnd::Clean);
        }
        let Some((len, crc)) = header_at(log, pos) else {
            // The log ends at a block boundary and a header never crosses one.
            return damage(pos, "a frame header cut by the end of the log".into());
        };
        if len == 0 {
            // Padding: zeros up to the next block.
            let next = pos - pos % block + block;
            if !zeros(log, pos, next) {
                return damage(
                    pos,
                    "a zero length (padding) followed by non-zero bytes in its block".into(),
                );
            }
            pos = next;
            continue;
        }
        let end = pos
            .checked_add(FRAME_HEADER)
            .and_then(|p| p.checked_add(len))
            .filter(|&e| e <= room);
        let Some(end) = end else {
            return damage(
                pos,
                format!(
                    "frame length {len} runs past the zone's capacity (the log holds at most \
                     {room} bytes): no write had that length"
                ),
            );
        };
        if end > log.len() {
            return cut_frame(log, block, pos, len, crc, first);
        }
        let body = &log[pos + FRAME_HEADER..end];
        if crc32c(body) != crc {
            return damage(
                pos,
                format!("the checksum of a complete {len}-byte frame fails"),
            );
        }
        if let Err(what) = f(pos, body) {
            return damage(pos, what);
        }
        first = false;
        pos = end;
    }
}

/// `(len, crc)` of the frame header at `pos`, if the log holds one there.
fn header_at(log: &[u8], pos: usize) -> Option<(usize, u32)> {
    let h = log.get(pos..pos.checked_add(FRAME_HEADER)?)?;
    let len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
    let crc = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
    Some((len, crc))
}

/// True if `log[from..to]` (clipped to the log) is all zeros.
fn zeros(log: &[u8], from: usize, to: usize) -> bool {
    log.get(from..to.min(log.len()))
        .is_none_or(|s| s.iter().all(|&b| b == 0))
}

/// A complete frame with a valid checksum starts at `pos`; its length.
fn valid_frame_at(log: &[u8], pos: usize) -> Option<usize> {
    let (len, crc) = header_at(log, pos)?;
    let body = log.get(pos + FRAME_HEADER..(pos + FRAME_HEADER).checked_add(len)?)?;
    (len > 0 && crc32c(body) == crc).then_some(len)
}

/// What follows the end `e` of a frame is what the writer leaves after one:
/// the end of the log, zeros up to the next block (the padding of a sync, or
/// the bytes too short for a header), or another valid frame.
fn a_frame_may_end_at(log: &[u8], block: usize, e: usize) -> bool {
    e == log.len()
        || (!e.is_multiple_of(block) && zeros(log, e, e - e % block + block))
        || valid_frame_at(log, e).is_some()
}

/// The frame at `pos` claims `len` body bytes and the log ends before them.
/// A crash leaves exactly that: a write cut at the write pointer, which is
/// a block boundary, with nothing after it. It is [`LogEnd::Torn`] unless
/// the bytes show otherwise:
///
/// * the body's first byte (its kind) is one no writer puts there: a
///   snapshot is the first frame of a zone and only it;
/// * the checksum field and the body bytes present are all zeros: padding
///   whose length field is damaged;
/// * the frame's checksum matches the bytes up to some point inside the
///   log, and what follows there is what follows a frame's end: the frame
///   is complete and its length field is damaged (a false alarm needs a
///   32-bit checksum to match by chance);
/// * a valid frame starts at a later block boundary (every metadata sync
///   starts at one): the log goes on past the "cut".
fn cut_frame(
    log: &[u8],
    block: usize,
    pos: usize,
    len: usize,
    crc: u32,
    first: bool,
) -> Result<LogEnd, LogDamage> {
    let damage = |what: String| Err(LogDamage { at: pos, what });
    let body = &log[pos + FRAME_HEADER..];
    if let Some(&kind) = body.first() {
        let possible = if first {
            kind == KIND_SNAPSHOT
        } else {
            (KIND_CREATE..=KIND_RELOCATE).contains(&kind)
        };
        if !possible {
            return damage(format!(
                "a {len}-byte frame of kind {kind} cut by the write pointer: no write puts that \
                 kind {}",
                if first {
                    "first after a superblock"
                } else {
                    "after a snapshot"
                }
            ));
        }
    }
    if crc == 0 && body.iter().all(|&b| b == 0) {
        // Padding with a damaged length: a writer's checksum is zero once
        // in 2^32 frames, and its body starts with a non-zero kind.
        return damage(format!(
            "a {len}-byte length in what reads as padding (its checksum field and the bytes \
             after it are zeros)"
        ));
    }
    let mut prefix_crc = 0u32;
    for (i, b) in body.iter().enumerate() {
        prefix_crc = crc32c_append(prefix_crc, std::slice::from_ref(b));
        if prefix_crc == crc && a_frame_may_end_at(log, block, pos + FRAME_HEADER + i + 1) {
            return damage(format!(
                "the length field says {len} bytes, past the write pointer, but the checksum \
                 matches the first {} bytes: a complete frame whose length is damaged",
                i + 1
            ));
        }
    }
    let mut budget = SCAN_BUDGET_BASE.saturating_add(body.len().saturating_mul(SCAN_BUDGET_FACTOR));
    let mut at = pos - pos % block + block;
    while at < log.len() {
        if let Some((n, _)) = header_at(log, at) {
            let kind = log.get(at + FRAME_HEADER).copied().unwrap_or(0);
            let fits = n > 0 && at + FRAME_HEADER + n <= log.len();
            if fits && (KIND_CREATE..=KIND_RELOCATE).contains(&kind) {
                if budget < n {
                    break;
                }
                budget -= n;
                if valid_frame_at(log, at).is_some() {
                    return damage(format!(
                        "a frame cut by the end of the log ({len} bytes claimed) is followed by \
                         a valid frame at log byte {at}: the log goes on, so the write pointer \
                         did not cut it"
                    ));
                }
            }
        }
        at += block;
    }
    Ok(LogEnd::Torn { at: pos })
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

    /// A log as the writer makes it, with 64-byte blocks: a snapshot, then
    /// syncs of records (one with a body that skips a block's last bytes,
    /// one that spans blocks), each padded to a block.
    fn sample_log() -> (Vec<u8>, Vec<Vec<u8>>) {
        let block = 64;
        let mut bodies = Vec::new();
        let mut log = Vec::new();
        let mut sync = |log: &mut Vec<u8>, frames: &[Vec<u8>]| {
            for b in frames {
                push_frame(log, b, block);
                bodies.push(b.clone());
            }
            pad_to_block(log, block);
        };
        sync(&mut log, &[vec![KIND_SNAPSHOT, 1, 2, 3]]);
        // 50 bytes of body: the next header would start 6 bytes before the
        // block's end, so it is pushed to the next block.
        let mut rec = vec![KIND_CREATE];
        rec.extend((0..49).map(|i| i as u8 + 1));
        sync(&mut log, &[rec, vec![KIND_DELETE, 5, 5, 5, 5]]);
        let mut long = vec![KIND_EXTENTS];
        long.extend((0..150).map(|i| (i * 7) as u8 | 1));
        sync(
            &mut log,
            &[vec![KIND_MKDIR, 9], long, vec![KIND_RENAME, 1, 2]],
        );
        sync(&mut log, &[vec![KIND_RELOCATE, 8, 8]]);
        (log, bodies)
    }

    fn read(log: &[u8], room: usize) -> (Result<LogEnd, LogDamage>, Vec<Vec<u8>>) {
        let mut seen = Vec::new();
        let r = read_frames(log, 64, room, |_, b| {
            seen.push(b.to_vec());
            Ok(())
        });
        (r, seen)
    }

    #[test]
    fn frames_skip_padding_and_every_block_boundary_cut_is_a_clean_or_torn_log() {
        let (log, bodies) = sample_log();
        assert_eq!(log.len() % 64, 0);
        let (r, seen) = read(&log, 4096);
        assert_eq!(r, Ok(LogEnd::Clean));
        assert_eq!(seen, bodies);
        // What a crash leaves: the log cut at any block boundary (the write
        // pointer). Never damage; the frames read are a prefix.
        let mut torn = 0;
        for cut in (0..=log.len()).step_by(64) {
            let (r, seen) = read(&log[..cut], 4096);
            assert!(
                matches!(r, Ok(LogEnd::Clean) | Ok(LogEnd::Torn { .. })),
                "cut at {cut}: {r:?}"
            );
            torn += usize::from(matches!(r, Ok(LogEnd::Torn { .. })));
            assert_eq!(seen[..], bodies[..seen.len()], "cut at {cut}");
        }
        assert!(torn >= 2, "{torn} cuts fell inside a frame");
        // A genuinely cut record: header and part of the body written.
        let cut = 64 * 4;
        assert!(matches!(read(&log[..cut], 4096).0, Ok(LogEnd::Torn { .. })));
    }

    #[test]
    fn every_flipped_byte_of_a_log_is_damage() {
        let (log, _) = sample_log();
        for i in 0..log.len() {
            for bit in [0x01u8, 0x10, 0x80, 0xFF] {
                let mut bad = log.clone();
                bad[i] ^= bit;
                let (r, _) = read(&bad, 4096);
                assert!(
                    matches!(r, Err(LogDamage { .. })),
                    "byte {i} ^ {bit:#x}: {r:?}"
                );
                // Also when the log was cut after the damaged byte's block.
                let cut = (i / 64 + 1) * 64;
                if cut < log.len() {
                    let (r, _) = read(&bad[..cut], 4096);
                    assert!(
                        !matches!(r, Ok(LogEnd::Clean)),
                        "byte {i} ^ {bit:#x}, cut at {cut}: {r:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn what_a_cut_frame_cannot_be() {
        let (log, _) = sample_log();
        // The frame at 192 (mkdir, then a 151-byte extents record from 203).
        assert_eq!(&log[192..196], &2u32.to_le_bytes());
        let at_long = 192 + FRAME_HEADER + 2;
        assert_eq!(log[at_long + FRAME_HEADER], KIND_EXTENTS);
        let cut = 64 * 5;
        // Cut genuinely: torn.
        assert_eq!(read(&log[..cut], 4096).0, Ok(LogEnd::Torn { at: at_long }));
        // A length no write could have had: past the zone's capacity.
        let (r, _) = read(&log[..cut], 300);
        assert!(
            matches!(r, Err(LogDamage { at, .. }) if at == at_long),
            "{r:?}"
        );
        // A kind no writer puts there.
        let mut bad = log[..cut].to_vec();
        bad[at_long + FRAME_HEADER] = KIND_SNAPSHOT;
        assert!(matches!(read(&bad, 4096).0, Err(LogDamage { at, .. }) if at == at_long));
        bad[at_long + FRAME_HEADER] = 0;
        assert!(matches!(read(&bad, 4096).0, Err(LogDamage { at, .. }) if at == at_long));
        // A middle frame whose length now runs past the end: its checksum
        // matches the bytes up to its real end.
        let mut bad = log.clone();
        bad[at_long + 1] ^= 0x04;
        let (r, _) = read(&bad, 1 << 20);
        assert!(
            matches!(&r, Err(LogDamage { at, what }) if *at == at_long && what.contains("length is damaged")),
            "{r:?}"
        );
        // Length and checksum both damaged: the next sync's frame, at a
        // block boundary, shows the log goes on.
        bad[at_long + 4] ^= 0x01;
        let (r, _) = read(&bad, 1 << 20);
        assert!(
            matches!(&r, Err(LogDamage { at, what }) if *at == at_long && what.contains("log goes on")),
            "{r:?}"
        );
        // Padding in a block's last 8 bytes whose length is damaged: the
        // "body" would start at the end of the log.
        let mut pad = Vec::new();
        push_frame(&mut pad, &[KIND_SNAPSHOT; 48], 64);
        pad_to_block(&mut pad, 64);
        assert_eq!(read(&pad, 4096).0, Ok(LogEnd::Clean));
        pad[56] = 1;
        let (r, _) = read(&pad, 4096);
        assert!(matches!(r, Err(LogDamage { at: 56, .. })), "{r:?}");
        // A body the caller refuses is damage at its frame.
        let r = read_frames(&log, 64, 4096, |at, b| {
            if b[0] == KIND_RENAME {
                Err(format!("refused at {at}"))
            } else {
                Ok(())
            }
        });
        assert!(
            matches!(&r, Err(LogDamage { what, .. }) if what.starts_with("refused")),
            "{r:?}"
        );
    }
}
