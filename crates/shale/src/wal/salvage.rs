//! Reading a damaged log past its damage (`Db::repair`).
//!
//! [`salvage_log`] returns every record whose fragments' checksums all hold,
//! in order, and in between a [`DamagedRecord`] for each stretch of damage.
//! After a damaged fragment the reader resynchronises at the next fragment
//! whose checksum holds: the first valid one later in the same 32 KiB block
//! (found by trying every offset), or else the start of the next block.
//! Valid MIDDLE and LAST fragments that follow damage belong to the damaged
//! record (its start is gone) and are taken into it; the next FULL or FIRST
//! fragment starts a record of its own again. Sequence numbers are in the
//! records, so the records after the damage keep their place.
//!
//! A damaged record is never replayed, but its keys are wanted (the repair
//! must not let older values of those keys come back), so its bytes are kept
//! as found, together with candidate repairs, each of which makes the
//! damaged fragment match its checksum:
//!
//! - its length taken from where the next valid fragment (or the end of the
//!   block, less the zero padding a writer leaves) begins: a damaged length
//!   field;
//! - its checksum field differing from the checksum of the bytes in one byte
//!   only: a damaged checksum field, the payload intact;
//! - one byte of the type and payload changed ([`single_byte_fixes`], from
//!   the checksum's syndrome, in time linear in the length): any one damaged
//!   byte there. A long fragment can have more than one such fix; all are
//!   returned.
//!
//! A repair is only a guess that fits 32 bits of checksum; the caller uses it
//! to name keys, never to restore the record.

use super::{parse_fragment, Fragment, BLOCK_SIZE, FIRST, FULL, HEADER_SIZE, LAST};
use crate::format::mask_crc;

/// One piece of a log, in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LogPiece {
    /// A record whose every fragment's checksum holds.
    Record { offset: u64, payload: Vec<u8> },
    /// A record with damage, or the remains of one.
    Damaged(DamagedRecord),
    /// Damaged bytes that held no record: non-zero padding at the end of a
    /// block.
    Padding { offset: u64, len: u64 },
}

/// A damaged record: where it lies and what its bytes may have been.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DamagedRecord {
    /// Offset of its first fragment (or of the damage, if its start is lost).
    pub offset: u64,
    /// Bytes from there to the next record (or the end of the file).
    pub len: u64,
    /// What was wrong first.
    pub reason: &'static str,
    /// Its payload as found (the damaged fragments' bytes as their length
    /// fields, or the space before the next fragment, delimit them).
    pub raw: Vec<u8>,
    /// Whole payloads in which every damaged fragment was repaired to match
    /// its checksum (see the module documentation).
    pub repaired: Vec<Vec<u8>>,
    /// True if the file ends inside it (what a torn write leaves).
    pub cut_short: bool,
}

/// A fragment of a record being assembled.
#[derive(Debug)]
enum Part {
    Good(Vec<u8>),
    Damaged {
        raw: Vec<u8>,
        /// `(type, payload)` of each repair.
        repairs: Vec<(u8, Vec<u8>)>,
    },
}

/// A record whose end has not been seen yet.
#[derive(Debug)]
struct Open {
    offset: u64,
    parts: Vec<Part>,
    reason: Option<&'static str>,
}

impl Open {
    fn new(offset: u64) -> Open {
        Open {
            offset,
            parts: Vec::new(),
            reason: None,
        }
    }

    /// The piece this record makes, ending at `end`.
    fn finish(self, end: u64, reason: &'static str, cut_short: bool) -> LogPiece {
        let damaged = self.reason.is_some() || !reason.is_empty() || cut_short;
        if !damaged {
            let mut payload = Vec::new();
            for p in &self.parts {
                if let Part::Good(b) = p {
                    payload.extend_from_slice(b);
                }
            }
            return LogPiece::Record {
                offset: self.offset,
                payload,
            };
        }
        let mut raw = Vec::new();
        for p in &self.parts {
            match p {
                Part::Good(b) | Part::Damaged { raw: b, .. } => raw.extend_from_slice(b),
            }
        }
        LogPiece::Damaged(DamagedRecord {
            offset: self.offset,
            len: end.saturating_sub(self.offset),
            reason: self.reason.unwrap_or(reason),
            repaired: repaired_payloads(&self.parts),
            raw,
            cut_short,
        })
    }
}

/// Every whole payload with each damaged part replaced by one of its
/// repairs (at most a few dozen combinations; none if a damaged part has
/// no repair).
fn repaired_payloads(parts: &[Part]) -> Vec<Vec<u8>> {
    const MAX: usize = 64;
    let mut out: Vec<Vec<u8>> = vec![Vec::new()];
    for p in parts {
        match p {
            Part::Good(b) => out.iter_mut().for_each(|o| o.extend_from_slice(b)),
            Part::Damaged { repairs, .. } => {
                if repairs.is_empty() || out.len() * repairs.len() > MAX {
                    return Vec::new();
                }
                out = out
                    .iter()
                    .flat_map(|o| {
                        repairs.iter().map(move |(_, r)| {
                            let mut v = o.clone();
                            v.extend_from_slice(r);
                            v
                        })
                    })
                    .collect();
            }
        }
    }
    out
}

/// Every record of the log in `bytes` whose checksums hold, and the damaged
/// ones between them (see the module documentation). Never panics.
pub(crate) fn salvage_log(bytes: &[u8]) -> Vec<LogPiece> {
    let mut out = Vec::new();
    let mut open: Option<Open> = None;
    let mut block_start = 0usize;
    while block_start < bytes.len() {
        let block = bytes
            .get(block_start..bytes.len().min(block_start + BLOCK_SIZE))
            .unwrap_or_default();
        let mut i = 0usize;
        while i < block.len() {
            let here = (block_start + i) as u64;
            let rest = block.get(i..).unwrap_or_default();
            match parse_fragment(rest) {
                Fragment::Padding => break,
                Fragment::Valid { kind, payload } => {
                    let next = here + (HEADER_SIZE + payload.len()) as u64;
                    take_fragment(&mut out, &mut open, here, next, kind, payload.to_vec());
                    i += HEADER_SIZE + payload.len();
                }
                Fragment::Damaged { .. } if rest.len() < HEADER_SIZE => {
                    out.push(LogPiece::Padding {
                        offset: here,
                        len: rest.len() as u64,
                    });
                    break;
                }
                Fragment::Damaged { reason, .. } => {
                    let end = next_valid(block, i + 1).unwrap_or(block.len());
                    let at_block_end = end == block.len();
                    let frag = block.get(i..end).unwrap_or_default();
                    let (raw, repairs) = repair_fragment(frag, at_block_end);
                    // The type the repairs agree on places the fragment.
                    let kind = repairs
                        .first()
                        .map(|r| r.0)
                        .filter(|k| repairs.iter().all(|r| r.0 == *k));
                    let part = Part::Damaged { raw, repairs };
                    let next = (block_start + end) as u64;
                    take_damaged(&mut out, &mut open, here, next, kind, part, reason);
                    i = end;
                }
            }
        }
        block_start += BLOCK_SIZE;
    }
    if let Some(o) = open {
        out.push(o.finish(bytes.len() as u64, "the log ends inside the record", true));
    }
    out
}

/// Places a valid fragment.
fn take_fragment(
    out: &mut Vec<LogPiece>,
    open: &mut Option<Open>,
    here: u64,
    next: u64,
    kind: u8,
    payload: Vec<u8>,
) {
    match kind {
        FULL | FIRST => {
            if let Some(o) = open.take() {
                out.push(o.finish(here, "record cut off by the start of another", false));
            }
            let mut o = Open::new(here);
            o.parts.push(Part::Good(payload));
            if kind == FULL {
                out.push(o.finish(next, "", false));
            } else {
                *open = Some(o);
            }
        }
        _ => {
            let o = open.get_or_insert_with(|| Open {
                reason: Some("fragment out of sequence (its record's start is lost)"),
                ..Open::new(here)
            });
            o.parts.push(Part::Good(payload));
            if kind == LAST {
                if let Some(o) = open.take() {
                    out.push(o.finish(next, "", false));
                }
            }
        }
    }
}

/// Places a damaged fragment whose type, if the repairs agree on one, is
/// `kind`; without one it joins the record being assembled.
fn take_damaged(
    out: &mut Vec<LogPiece>,
    open: &mut Option<Open>,
    here: u64,
    next: u64,
    kind: Option<u8>,
    part: Part,
    reason: &'static str,
) {
    if matches!(kind, Some(FULL | FIRST)) {
        if let Some(o) = open.take() {
            out.push(o.finish(here, "record cut off by the start of another", false));
        }
    }
    let o = open.get_or_insert_with(|| Open::new(here));
    o.reason.get_or_insert(reason);
    o.parts.push(part);
    if matches!(kind, Some(FULL | LAST)) {
        if let Some(o) = open.take() {
            out.push(o.finish(next, reason, false));
        }
    }
}

/// The offset of the first valid fragment (non-empty, checksum holding) at
/// or after `from` in `block`.
fn next_valid(block: &[u8], from: usize) -> Option<usize> {
    let last = block.len().checked_sub(HEADER_SIZE)?;
    (from..=last).find(|&j| {
        let Some(rest) = block.get(j..) else {
            return false;
        };
        // Cheap checks first: a known type and a length that fits.
        let (Some(&t), Some(&l0), Some(&l1)) = (rest.get(6), rest.get(4), rest.get(5)) else {
            return false;
        };
        let len = usize::from(u16::from_le_bytes([l0, l1]));
        (FULL..=LAST).contains(&t)
            && len > 0
            && HEADER_SIZE + len <= rest.len()
            && matches!(parse_fragment(rest), Fragment::Valid { .. })
    })
}

/// The damaged fragment `frag` (its header and everything up to the next
/// valid fragment, or to the end of its block if `at_block_end`): its
/// payload as found, and `(type, payload)` for each repair that makes it
/// match its checksum.
fn repair_fragment(frag: &[u8], at_block_end: bool) -> (Vec<u8>, Vec<(u8, Vec<u8>)>) {
    let Some((&[s0, s1, s2, s3, l0, l1, _], _)) = frag.split_first_chunk::<HEADER_SIZE>() else {
        return (Vec::new(), Vec::new());
    };
    let stored = u32::from_le_bytes([s0, s1, s2, s3]);
    let header_len = usize::from(u16::from_le_bytes([l0, l1]));
    let room = frag.len() - HEADER_SIZE;
    // Where the payload may end: its length field, the next fragment, or the
    // end of the block less up to six bytes of zero padding.
    let mut lens = vec![room];
    if at_block_end {
        for pad in 1..HEADER_SIZE {
            if pad <= room && frag[frag.len() - pad..].iter().all(|&b| b == 0) {
                lens.push(room - pad);
            }
        }
    }
    if header_len <= room {
        lens.push(header_len);
    }
    lens.sort_unstable();
    lens.dedup();
    let raw_len = if header_len <= room { header_len } else { room };
    let raw = frag
        .get(HEADER_SIZE..HEADER_SIZE + raw_len)
        .unwrap_or_default()
        .to_vec();
    let mut repairs: Vec<(u8, Vec<u8>)> = Vec::new();
    let mut add = |msg: Vec<u8>| {
        if let Some((&kind, payload)) = msg.split_first() {
            if (FULL..=LAST).contains(&kind)
                && !repairs.iter().any(|r| r.0 == kind && r.1 == payload)
            {
                repairs.push((kind, payload.to_vec()));
            }
        }
    };
    for len in lens {
        // The checksum covers the type byte and the payload.
        let Some(msg) = frag.get(HEADER_SIZE - 1..HEADER_SIZE + len) else {
            continue;
        };
        let crc = crc32c::crc32c(msg);
        let diff = mask_crc(crc) ^ stored;
        if diff == 0 || diff.to_le_bytes().iter().filter(|&&b| b != 0).count() == 1 {
            // Intact, or only the checksum field is damaged.
            add(msg.to_vec());
            continue;
        }
        for (pos, xor) in single_byte_fixes(msg.len(), crc ^ unmask_crc(stored)) {
            let mut fixed = msg.to_vec();
            if let Some(b) = fixed.get_mut(pos) {
                *b ^= xor;
                add(fixed);
            }
        }
    }
    (raw, repairs)
}

/// The inverse of [`mask_crc`].
fn unmask_crc(masked: u32) -> u32 {
    masked.wrapping_sub(0xa282_ead8).rotate_left(15)
}

/// The CRC32C (Castagnoli, reflected) table: `T[i]` is the register after
/// feeding byte `i` to a zero register.
fn crc_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    for (i, e) in t.iter_mut().enumerate() {
        let mut r = i as u32;
        for _ in 0..8 {
            r = if r & 1 == 1 {
                (r >> 1) ^ 0x82f6_3b78
            } else {
                r >> 1
            };
        }
        *e = r;
    }
    t
}

/// Every `(position, xor)` such that changing the byte at `position` of a
/// message of `len` bytes by `xor` changes its CRC32C by `syndrome` (the
/// stored checksum XOR the checksum of the bytes found): the single-byte
/// errors that explain a mismatch.
///
/// A CRC is linear: an error byte `v` at `position`, followed by `k = len -
/// 1 - position` bytes, changes the register by `Z^k(T[v])`, where `Z` feeds
/// a zero byte. `Z` is invertible (the top byte of `T[i]` tells `i`), so the
/// syndrome is walked back one byte at a time and matched against the table.
pub(crate) fn single_byte_fixes(len: usize, syndrome: u32) -> Vec<(usize, u8)> {
    let t = crc_table();
    let mut by_top = [0u8; 256];
    for (i, &v) in t.iter().enumerate() {
        by_top[(v >> 24) as usize] = i as u8;
    }
    let mut out = Vec::new();
    if syndrome == 0 {
        return out;
    }
    let mut s = syndrome;
    for k in 0..len {
        let v = by_top[(s >> 24) as usize];
        if t[usize::from(v)] == s {
            out.push((len - 1 - k, v));
        }
        // Undo one zero byte: s = (r >> 8) ^ T[r & 0xff] with r & 0xff = i.
        let i = by_top[(s >> 24) as usize];
        s = ((s ^ t[usize::from(i)]) << 8) | u32::from(i);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::test_util::Rng;
    use crate::wal::LogWriter;
    use shale_env::{FileSystem, MemFs, WriteLifetime};
    use std::path::Path;

    fn log(records: &[Vec<u8>]) -> Vec<u8> {
        let fs = MemFs::new();
        let file = fs
            .create_append(Path::new("/log"), WriteLifetime::Short)
            .expect("create");
        let mut w = LogWriter::new(file, "/log".into());
        for r in records {
            w.add_record(r).expect("add");
        }
        w.sync().expect("sync");
        fs.read_all(Path::new("/log")).expect("read")
    }

    fn records(rng: &mut Rng) -> Vec<Vec<u8>> {
        // Small ones, ones near a block, and ones spanning blocks.
        [100, 3000, 40_000, 7, 32_000, 500, 70_000, 12, 900]
            .iter()
            .map(|&n| rng.bytes(n))
            .collect()
    }

    fn good(pieces: &[LogPiece]) -> Vec<Vec<u8>> {
        pieces
            .iter()
            .filter_map(|p| match p {
                LogPiece::Record { payload, .. } => Some(payload.clone()),
                _ => None,
            })
            .collect()
    }

    fn damaged(pieces: &[LogPiece]) -> Vec<&DamagedRecord> {
        pieces
            .iter()
            .filter_map(|p| match p {
                LogPiece::Damaged(d) => Some(d),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_syndrome_finds_every_single_byte_error() {
        let mut rng = Rng::new(3);
        for len in [1usize, 2, 7, 100, 4096, 32_000] {
            let msg = rng.bytes(len);
            let crc = crc32c::crc32c(&msg);
            for _ in 0..20 {
                let pos = rng.index(len);
                let xor = (rng.below(255) + 1) as u8;
                let mut bad = msg.clone();
                bad[pos] ^= xor;
                let fixes = single_byte_fixes(len, crc32c::crc32c(&bad) ^ crc);
                assert!(
                    fixes.contains(&(pos, xor)),
                    "len {len} pos {pos}: {fixes:?}"
                );
                for (p, x) in fixes {
                    let mut f = bad.clone();
                    f[p] ^= x;
                    assert_eq!(crc32c::crc32c(&f), crc);
                }
            }
        }
        assert!(single_byte_fixes(10, 0).is_empty());
    }

    #[test]
    fn an_intact_log_is_all_records() {
        let mut rng = Rng::new(1);
        let recs = records(&mut rng);
        let pieces = salvage_log(&log(&recs));
        assert_eq!(good(&pieces), recs);
        assert_eq!(pieces.len(), recs.len());
    }

    #[test]
    fn one_flipped_byte_loses_one_record_and_its_repair_is_the_original() {
        let mut rng = Rng::new(2);
        let recs = records(&mut rng);
        let bytes = log(&recs);
        let mut worst = 0;
        for _ in 0..300 {
            let at = rng.index(bytes.len());
            let mut bad = bytes.clone();
            bad[at] ^= 1 << rng.below(8);
            let pieces = salvage_log(&bad);
            let got = good(&pieces);
            let lost: Vec<_> = recs.iter().filter(|r| !got.contains(r)).collect();
            assert!(lost.len() <= 1, "flip at {at}: {} records lost", lost.len());
            // Every record kept is one written, in order.
            let mut it = recs.iter();
            for g in &got {
                assert!(it.any(|r| r == g), "flip at {at}: a record out of order");
            }
            let d = damaged(&pieces);
            if let Some(l) = lost.first() {
                assert_eq!(d.len(), 1, "flip at {at}");
                assert!(
                    d[0].repaired.iter().any(|r| r == *l),
                    "flip at {at}: no repair gives the record back"
                );
                worst = worst.max(d[0].repaired.len());
            } else {
                // A flip in block padding loses nothing.
                assert!(d.is_empty(), "flip at {at}: {d:?}");
            }
        }
        assert!(worst <= 4, "{worst} repairs for one flip");
    }

    #[test]
    fn damage_in_a_length_field_resynchronises_at_the_next_fragment() {
        let recs: Vec<Vec<u8>> = (0..20u8).map(|i| vec![i + 1; 50]).collect();
        let bytes = log(&recs);
        let at = 5 * (HEADER_SIZE + 50) + 4;
        let mut bad = bytes.clone();
        bad[at] ^= 0x40;
        let pieces = salvage_log(&bad);
        let got = good(&pieces);
        assert_eq!(got.len(), 19);
        assert!(!got.contains(&recs[5]));
        let d = damaged(&pieces);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].offset, (5 * (HEADER_SIZE + 50)) as u64);
        assert_eq!(d[0].len, (HEADER_SIZE + 50) as u64);
        assert_eq!(d[0].repaired, vec![recs[5].clone()]);
    }

    #[test]
    fn a_torn_tail_is_cut_short() {
        let recs: Vec<Vec<u8>> = vec![vec![1; 100], vec![2; 100]];
        let bytes = log(&recs);
        let pieces = salvage_log(&bytes[..bytes.len() - 30]);
        assert_eq!(good(&pieces), vec![recs[0].clone()]);
        let d = damaged(&pieces);
        assert!(
            d.len() == 1 && d[0].cut_short && d[0].repaired.is_empty(),
            "{d:?}"
        );
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = Rng::new(4);
        let recs = records(&mut rng);
        let bytes = log(&recs);
        for _ in 0..100 {
            let mut bad = bytes.clone();
            for _ in 0..1 + rng.index(50) {
                let i = rng.index(bad.len());
                bad[i] = rng.next_u64() as u8;
            }
            bad.truncate(rng.index(bad.len() + 1));
            let _ = salvage_log(&bad);
        }
        for n in [0, 1, 6, 7, 8, 32768, 32775] {
            let _ = salvage_log(&vec![0u8; n]);
            let _ = salvage_log(&rng.bytes(n));
        }
    }
}
