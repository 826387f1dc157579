//! Record framing of the write-ahead log and the manifest (`docs/format/wal.md`).
//!
//! A log is a sequence of 32 KiB blocks. A logical record is cut into fragments
//! so that no fragment crosses a block boundary; each fragment has a 7-byte
//! header:
//!
//! ```text
//! fragment := crc: u32 LE (masked CRC32C of type byte and payload)
//!             length: u16 LE (payload bytes)
//!             type: u8 (FULL=1 | FIRST=2 | MIDDLE=3 | LAST=4, frozen)
//!             payload: [u8; length]
//! ```
//!
//! When fewer than 7 bytes remain in a block, they are zero-filled and the next
//! fragment starts in the next block.
//!
//! # Recovery
//!
//! The reader returns records in order and stops at the first *damage* (a CRC
//! mismatch, an impossible length or type, a fragment out of sequence, a record
//! cut short by the end of the file). What it makes of damage depends on its
//! [`WalRecoveryMode`]. Under the default, [`WalRecoveryMode::TornWrites`], only
//! what a crash can leave behind is a *torn tail*: a record cut short by the end
//! of the file, or a record whose bytes from some point on were never written
//! and read back as zeros (the file ends in zeros from inside the damaged
//! fragment, at a 512-byte sector boundary or at the fragment's start). Such a
//! record was never acknowledged as synced; the reader stops there and reports
//! [`LogEnd::TornTail`]. Any other damage, such as a full-length record with a bad
//! checksum, is [`Error::Corruption`] naming the file and offset.
//!
//! # Concurrency
//!
//! A writer or reader is used by one thread at a time.

use std::path::PathBuf;
use std::sync::Arc;

use shale_env::{AppendFile, RandomAccessFile};

use crate::error::{Error, Result};
use crate::format::{mask_crc, masked_crc2};

pub(crate) mod salvage;

/// What recovery does with damage at the end of a write-ahead log (after
/// RocksDB's `WALRecoveryMode`). The manifest is always read under
/// [`WalRecoveryMode::TornWrites`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WalRecoveryMode {
    /// Drop only what a crash during an unsynced append can leave at the end of
    /// the newest log: a record cut short by the end of the file, or one whose
    /// bytes from some point on read back as zeros. Any other damage (a
    /// full-length record with a bad checksum, damage followed by valid
    /// records) fails the open with [`crate::Error::Corruption`]. No write
    /// acknowledged as synced is ever dropped.
    #[default]
    TornWrites,
    /// Drop any damage at the end of the newest log that no valid record
    /// follows, whatever it looks like (LevelDB's behaviour, RocksDB's
    /// `kTolerateCorruptedTailRecords`). A synced write whose bytes were later
    /// damaged on disk is dropped silently.
    TolerateCorruptedTail,
    /// Stop replay at the first damage of any kind, dropping everything after it
    /// in that log and in every newer log: the database opens at the last
    /// consistent point before the damage, possibly without writes that were
    /// acknowledged as synced (RocksDB's `kPointInTimeRecovery`).
    PointInTime,
    /// Fail the open on any damage, even a torn write that was never synced
    /// (RocksDB's `kAbsoluteConsistency`).
    AbsoluteConsistency,
}

/// Size of a log block.
pub(crate) const BLOCK_SIZE: usize = 32 * 1024;
/// Size of a fragment header.
pub(crate) const HEADER_SIZE: usize = 7;
/// Granularity of a write the device may lose in a crash (a sector): zeros
/// from such a boundary to the end of the file can be a torn write.
const SECTOR: u64 = 512;

/// Fragment types; persisted, never renumber.
const FULL: u8 = 1;
const FIRST: u8 = 2;
const MIDDLE: u8 = 3;
const LAST: u8 = 4;

/// Writes records to a log file (a WAL or the manifest).
pub(crate) struct LogWriter {
    file: Box<dyn AppendFile>,
    path: PathBuf,
    /// Bytes used in the current block.
    block_offset: usize,
    /// Scratch buffer for one record's fragments.
    buf: Vec<u8>,
}

impl LogWriter {
    /// A writer appending to `file` (which is empty), named `path` in errors.
    pub(crate) fn new(file: Box<dyn AppendFile>, path: PathBuf) -> LogWriter {
        let block_offset = (file.len() % BLOCK_SIZE as u64) as usize;
        LogWriter {
            file,
            path,
            block_offset,
            buf: Vec::new(),
        }
    }

    /// Appends one record (possibly empty). Not durable until `sync`.
    ///
    /// Grammar of what is appended: zero padding to the next block when fewer
    /// than [`HEADER_SIZE`] bytes remain, then fragments as in the module
    /// documentation: one FULL, or FIRST, MIDDLE*, LAST.
    pub(crate) fn add_record(&mut self, record: &[u8]) -> Result<()> {
        self.buf.clear();
        let mut rest = record;
        let mut first = true;
        loop {
            let left = BLOCK_SIZE - self.block_offset;
            if left < HEADER_SIZE {
                self.buf.extend_from_slice(&[0u8; HEADER_SIZE][..left]);
                self.block_offset = 0;
                continue;
            }
            let room = left - HEADER_SIZE;
            let n = rest.len().min(room);
            let last = n == rest.len();
            let kind = match (first, last) {
                (true, true) => FULL,
                (true, false) => FIRST,
                (false, false) => MIDDLE,
                (false, true) => LAST,
            };
            let (payload, tail) = rest.split_at(n);
            self.buf
                .extend_from_slice(&masked_crc2(&[kind], payload).to_le_bytes());
            self.buf.extend_from_slice(&(n as u16).to_le_bytes());
            self.buf.push(kind);
            self.buf.extend_from_slice(payload);
            self.block_offset += HEADER_SIZE + n;
            rest = tail;
            first = false;
            if last {
                break;
            }
        }
        self.file
            .append(&self.buf)
            .map_err(|e| Error::io("append to log", &self.path, e))
    }

    /// Pushes buffered bytes to the operating system and makes them durable.
    pub(crate) fn sync(&mut self) -> Result<()> {
        self.file
            .sync()
            .map_err(|e| Error::io("sync log", &self.path, e))
    }

    /// Pushes buffered bytes to the operating system (survives a process crash,
    /// not a machine crash).
    pub(crate) fn flush(&mut self) -> Result<()> {
        self.file
            .flush()
            .map_err(|e| Error::io("flush log", &self.path, e))
    }

    /// Bytes written so far.
    pub(crate) fn len(&self) -> u64 {
        self.file.len()
    }
}

/// How a log ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LogEnd {
    /// Every byte belonged to a complete, valid record.
    Clean,
    /// The log ended in a record that recovery drops, at this offset: under
    /// the default mode, a write torn by a crash; under the tolerant modes, any
    /// damage the mode accepts (see [`WalRecoveryMode`]).
    TornTail { offset: u64 },
}

/// One fragment found at a position, or why there is none.
enum Fragment<'a> {
    Valid {
        kind: u8,
        payload: &'a [u8],
    },
    /// Fewer than a header's bytes left in the block (padding).
    Padding,
    /// Not a valid fragment; `claimed` is how many bytes it claims from its
    /// start (its header and the payload its length field names).
    Damaged {
        reason: &'static str,
        claimed: u64,
    },
}

/// Parses the fragment at the start of `block` (the rest of a block).
fn parse_fragment(block: &[u8]) -> Fragment<'_> {
    if block.len() < HEADER_SIZE {
        return if block.iter().all(|&b| b == 0) {
            Fragment::Padding
        } else {
            Fragment::Damaged {
                reason: "non-zero block padding",
                claimed: HEADER_SIZE as u64,
            }
        };
    }
    let crc = u32::from_le_bytes([block[0], block[1], block[2], block[3]]);
    let len = u16::from_le_bytes([block[4], block[5]]) as usize;
    let kind = block[6];
    let claimed = (HEADER_SIZE + len) as u64;
    if !(FULL..=LAST).contains(&kind) {
        return Fragment::Damaged {
            reason: "unknown fragment type",
            claimed,
        };
    }
    let Some(payload) = block.get(HEADER_SIZE..HEADER_SIZE + len) else {
        return Fragment::Damaged {
            reason: "fragment extends past the end of its block or file",
            claimed,
        };
    };
    if masked_crc2(&[kind], payload) != crc {
        return Fragment::Damaged {
            reason: "fragment checksum mismatch",
            claimed,
        };
    }
    Fragment::Valid { kind, payload }
}

/// Reads records back.
pub(crate) struct LogReader {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    size: u64,
    /// The block being read and its file offset.
    block: Vec<u8>,
    block_start: u64,
    /// Position inside `block`.
    pos: usize,
    /// File offset of the first fragment of the last record returned.
    record_offset: u64,
    end: Option<LogEnd>,
    mode: WalRecoveryMode,
}

impl LogReader {
    /// A reader over `file`, named `path` in errors, accepting only torn writes
    /// at the end ([`WalRecoveryMode::TornWrites`]).
    pub(crate) fn new(file: Arc<dyn RandomAccessFile>, path: PathBuf) -> LogReader {
        LogReader::with_mode(file, path, WalRecoveryMode::TornWrites)
    }

    /// A reader that treats damage as `mode` says.
    pub(crate) fn with_mode(
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        mode: WalRecoveryMode,
    ) -> LogReader {
        let size = file.size();
        LogReader {
            file,
            path,
            size,
            block: Vec::new(),
            block_start: 0,
            pos: 0,
            record_offset: 0,
            end: None,
            mode,
        }
    }

    /// File offset where the last record returned by `read_record` begins.
    pub(crate) fn last_record_offset(&self) -> u64 {
        self.record_offset
    }

    fn load_block(&mut self, start: u64) -> Result<bool> {
        if start >= self.size {
            return Ok(false);
        }
        let len = (self.size - start).min(BLOCK_SIZE as u64) as usize;
        self.block.resize(len, 0);
        self.file
            .read_exact_at(start, &mut self.block)
            .map_err(|e| Error::io("read log", &self.path, e))?;
        self.block_start = start;
        self.pos = 0;
        Ok(true)
    }

    /// The next record, `Ok(None)` at the end. Damage followed by a valid record is
    /// `Error::Corruption` with the file and offset.
    pub(crate) fn read_record(&mut self) -> Result<Option<Vec<u8>>> {
        if self.end.is_some() {
            return Ok(None);
        }
        if self.block.is_empty() && !self.load_block(0)? {
            self.end = Some(LogEnd::Clean);
            return Ok(None);
        }
        let mut record: Vec<u8> = Vec::new();
        let mut in_record = false;
        let mut record_start = 0u64;
        loop {
            if self.pos >= self.block.len() {
                let next = self.block_start + self.block.len() as u64;
                if !self.load_block(next)? {
                    // End of file: clean unless a record was left unfinished.
                    return self.finish(in_record.then_some(record_start));
                }
            }
            let here = self.block_start + self.pos as u64;
            match parse_fragment(&self.block[self.pos..]) {
                Fragment::Padding => self.pos = self.block.len(),
                Fragment::Damaged { reason, claimed } => {
                    return self.damaged(here, claimed, reason)
                }
                Fragment::Valid { kind, payload } => {
                    let plen = payload.len();
                    match (kind, in_record) {
                        (FULL, false) => {
                            record.extend_from_slice(payload);
                            self.pos += HEADER_SIZE + plen;
                            self.record_offset = here;
                            return Ok(Some(record));
                        }
                        (FIRST, false) => {
                            record.extend_from_slice(payload);
                            in_record = true;
                            record_start = here;
                        }
                        (MIDDLE, true) => record.extend_from_slice(payload),
                        (LAST, true) => {
                            record.extend_from_slice(payload);
                            self.pos += HEADER_SIZE + plen;
                            self.record_offset = record_start;
                            return Ok(Some(record));
                        }
                        _ => {
                            let claimed = (HEADER_SIZE + plen) as u64;
                            return self.damaged(here, claimed, "fragment out of sequence");
                        }
                    }
                    self.pos += HEADER_SIZE + plen;
                }
            }
        }
    }

    /// End of file reached; `open_record` is where an unfinished record began
    /// (a record cut short: what a crash leaves behind).
    fn finish(&mut self, open_record: Option<u64>) -> Result<Option<Vec<u8>>> {
        self.end = Some(match open_record {
            None => LogEnd::Clean,
            Some(offset) if self.mode == WalRecoveryMode::AbsoluteConsistency => {
                return Err(Error::corruption(
                    &self.path,
                    offset,
                    "log ends inside a record (a torn write; absolute-consistency recovery accepts none)",
                ));
            }
            Some(offset) => LogEnd::TornTail { offset },
        });
        Ok(None)
    }

    /// Damage at `offset` in a fragment claiming `claimed` bytes: a torn tail or
    /// corruption, as the recovery mode decides.
    fn damaged(
        &mut self,
        offset: u64,
        claimed: u64,
        reason: &'static str,
    ) -> Result<Option<Vec<u8>>> {
        let torn = self.is_torn_write(offset, claimed)?;
        let tail = match self.mode {
            WalRecoveryMode::TornWrites => torn,
            WalRecoveryMode::TolerateCorruptedTail => {
                torn || !self.valid_fragment_after(offset + 1)?
            }
            WalRecoveryMode::PointInTime => true,
            WalRecoveryMode::AbsoluteConsistency => false,
        };
        if tail {
            self.end = Some(LogEnd::TornTail { offset });
            return Ok(None);
        }
        let why = if torn {
            "a torn write; absolute-consistency recovery accepts none"
        } else if self.valid_fragment_after(offset + 1)? {
            "followed by valid log records"
        } else {
            "not a torn write (a crash leaves a record cut short or zeroed; this one is neither)"
        };
        Err(Error::corruption(
            &self.path,
            offset,
            format!("{reason}, {why}"),
        ))
    }

    /// True if the damaged fragment at `offset`, claiming `claimed` bytes, is
    /// what a crash during an unsynced append can leave: cut short by the end of
    /// the file (within its block), or zeroed from its start or from a sector
    /// boundary inside it to the end of the file.
    fn is_torn_write(&mut self, offset: u64, claimed: u64) -> Result<bool> {
        let end = offset + claimed;
        let block_end = offset - offset % BLOCK_SIZE as u64 + BLOCK_SIZE as u64;
        if end > self.size && end <= block_end {
            // A length field damaged to point past the end of the file looks
            // the same, unless something valid follows or the bytes present
            // are a complete fragment under a shorter length.
            return Ok(!self.valid_fragment_after(offset + 1)?
                && !self.complete_under_a_shorter_length(offset)?);
        }
        // Everything from `zeros_from` on is zero, so a lost write explains
        // the damage if the zeros cover the whole fragment or reach back to a
        // sector boundary inside it (data before that boundary may end in
        // zeros of its own).
        let zeros_from = self.trailing_zeros_start()?;
        if zeros_from >= self.size {
            return Ok(false);
        }
        Ok(zeros_from <= offset || zeros_from.div_ceil(SECTOR) * SECTOR < end.min(self.size))
    }

    /// True if the fragment at `offset`, whose length field points past the
    /// end of the file, has a payload length that fits the bytes present and
    /// matches its checksum: a damaged length, not a write cut short.
    fn complete_under_a_shorter_length(&mut self, offset: u64) -> Result<bool> {
        if self.size < offset + HEADER_SIZE as u64 {
            return Ok(false);
        }
        let mut bytes = vec![0u8; (self.size - offset) as usize];
        self.file
            .read_exact_at(offset, &mut bytes)
            .map_err(|e| Error::io("read log", &self.path, e))?;
        let stored = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let mut crc = crc32c::crc32c(&bytes[6..7]);
        let matches = |crc: u32| mask_crc(crc) == stored;
        if matches(crc) {
            return Ok(true);
        }
        for b in &bytes[HEADER_SIZE..] {
            crc = crc32c::crc32c_append(crc, std::slice::from_ref(b));
            if matches(crc) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Offset where the run of zero bytes that ends the file begins (the file
    /// size if its last byte is not zero).
    fn trailing_zeros_start(&mut self) -> Result<u64> {
        let mut end = self.size;
        let mut buf = vec![0u8; BLOCK_SIZE];
        while end > 0 {
            let start = end.saturating_sub(BLOCK_SIZE as u64);
            let chunk = &mut buf[..(end - start) as usize];
            self.file
                .read_exact_at(start, chunk)
                .map_err(|e| Error::io("read log", &self.path, e))?;
            match chunk.iter().rposition(|&b| b != 0) {
                Some(i) => return Ok(start + i as u64 + 1),
                None => end = start,
            }
        }
        Ok(0)
    }

    /// True if a valid fragment starts anywhere at or after `from`. Only run on
    /// damage, which after a crash is near the end of the file.
    fn valid_fragment_after(&mut self, from: u64) -> Result<bool> {
        let mut start = from - from % BLOCK_SIZE as u64;
        let mut first = (from - start) as usize;
        while self.load_block(start)? {
            for i in first..self.block.len() {
                let rest = &self.block[i..];
                if rest.len() >= HEADER_SIZE
                    && matches!(parse_fragment(rest), Fragment::Valid { payload, .. } if !payload.is_empty())
                {
                    return Ok(true);
                }
            }
            start += BLOCK_SIZE as u64;
            first = 0;
        }
        Ok(false)
    }

    /// How the log ended (valid after `read_record` returned `Ok(None)`).
    pub(crate) fn end(&self) -> LogEnd {
        self.end.clone().unwrap_or(LogEnd::Clean)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale_env::{FileSystem, MemFs, WriteLifetime};
    use std::path::Path;

    fn write_log(fs: &MemFs, records: &[Vec<u8>]) {
        let file = fs
            .create_append(Path::new("/log"), WriteLifetime::Short)
            .expect("create");
        let mut w = LogWriter::new(file, "/log".into());
        for r in records {
            w.add_record(r).expect("add");
        }
        w.sync().expect("sync");
    }

    fn read_log(fs: &MemFs) -> (Result<Vec<Vec<u8>>>, LogEnd) {
        read_log_with(fs, WalRecoveryMode::TornWrites)
    }

    fn rewrite(fs: &MemFs, data: &[u8]) {
        fs.remove(Path::new("/log")).expect("remove");
        let mut f = fs
            .create_append(Path::new("/log"), WriteLifetime::Short)
            .expect("create");
        f.append(data).expect("append");
    }

    fn records() -> Vec<Vec<u8>> {
        let mut v = vec![Vec::new(), b"small".to_vec()];
        // Sizes that land exactly on and around block boundaries.
        for (i, n) in [
            BLOCK_SIZE - 2 * HEADER_SIZE - 5,
            3,
            100_000,
            1,
            40_000,
            0,
            7,
        ]
        .into_iter()
        .enumerate()
        {
            v.push((0..n).map(|j| (i * 31 + j) as u8).collect());
        }
        v
    }

    #[test]
    fn records_round_trip_across_blocks() {
        let fs = MemFs::new();
        let recs = records();
        write_log(&fs, &recs);
        let (got, end) = read_log(&fs);
        assert_eq!(got.expect("read"), recs);
        assert_eq!(end, LogEnd::Clean);
    }

    #[test]
    fn every_truncation_is_a_torn_tail_with_a_prefix_of_records() {
        let fs = MemFs::new();
        let recs = records();
        write_log(&fs, &recs);
        let full = fs.read_all(Path::new("/log")).expect("read");
        for cut in (0..full.len()).step_by(997).chain([full.len() - 1, 6, 8]) {
            rewrite(&fs, &full[..cut]);
            let (got, _) = read_log(&fs);
            let got = got.unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
            assert_eq!(got[..], recs[..got.len()], "cut at {cut}");
        }
    }

    #[test]
    fn damage_in_the_middle_is_corruption_with_the_offset() {
        let fs = MemFs::new();
        let recs = records();
        write_log(&fs, &recs);
        let mut data = fs.read_all(Path::new("/log")).expect("read");
        // Flip a payload byte of the second record ("small" at offset 7 + 7).
        data[HEADER_SIZE * 2 + 1] ^= 1;
        rewrite(&fs, &data);
        let (got, _) = read_log(&fs);
        match got {
            Err(Error::Corruption { file, offset, .. }) => {
                assert_eq!(file, Path::new("/log"));
                assert_eq!(offset, HEADER_SIZE as u64);
            }
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    fn read_log_with(fs: &MemFs, mode: WalRecoveryMode) -> (Result<Vec<Vec<u8>>>, LogEnd) {
        let file = fs.open_random(Path::new("/log")).expect("open");
        let mut r = LogReader::with_mode(file, "/log".into(), mode);
        let mut out = Vec::new();
        loop {
            match r.read_record() {
                Ok(Some(rec)) => out.push(rec),
                Ok(None) => return (Ok(out), r.end()),
                Err(e) => return (Err(e), r.end()),
            }
        }
    }

    /// Writes `recs`, then lets `damage` change the bytes.
    fn damaged_log(recs: &[Vec<u8>], damage: impl FnOnce(&mut Vec<u8>)) -> MemFs {
        let fs = MemFs::new();
        write_log(&fs, recs);
        let mut data = fs.read_all(Path::new("/log")).expect("read");
        damage(&mut data);
        rewrite(&fs, &data);
        fs
    }

    #[test]
    fn a_full_length_record_with_a_bad_checksum_is_corruption_by_default() {
        let recs = vec![b"one".to_vec(), b"two".to_vec()];
        let fs = damaged_log(&recs, |d| {
            let n = d.len();
            d[n - 1] ^= 0xff;
        });
        let (got, _) = read_log(&fs);
        match got {
            Err(Error::Corruption { offset, reason, .. }) => {
                assert_eq!(offset, (HEADER_SIZE + 3) as u64);
                assert!(reason.contains("not a torn write"), "{reason}");
            }
            other => panic!("expected corruption, got {other:?}"),
        }
        // The tolerant modes drop it, as LevelDB does.
        for mode in [
            WalRecoveryMode::TolerateCorruptedTail,
            WalRecoveryMode::PointInTime,
        ] {
            let (got, end) = read_log_with(&fs, mode);
            assert_eq!(got.expect("read"), vec![b"one".to_vec()], "{mode:?}");
            let offset = (HEADER_SIZE + 3) as u64;
            assert_eq!(end, LogEnd::TornTail { offset }, "{mode:?}");
        }
    }

    #[test]
    fn a_zeroed_tail_is_a_torn_write() {
        let big: Vec<u8> = (0..3000u32).map(|i| (i % 251 + 1) as u8).collect();
        let recs = vec![b"one".to_vec(), big.clone()];
        let second = HEADER_SIZE + 3;
        // Zeros from the record's start, and from a sector boundary inside it.
        for zero_from in [second, 512, 1024, 2560] {
            let fs = damaged_log(&recs, |d| d[zero_from..].fill(0));
            let (got, end) = read_log(&fs);
            assert_eq!(
                got.expect("torn"),
                vec![b"one".to_vec()],
                "zeros from {zero_from}"
            );
            let offset = second as u64;
            assert_eq!(end, LogEnd::TornTail { offset }, "zeros from {zero_from}");
        }
        // Zeros that reach back to no sector boundary inside the record (it
        // ends at 3017) cannot come from a lost write.
        let fs = damaged_log(&recs, |d| d[2600..].fill(0));
        let (got, _) = read_log(&fs);
        assert!(got.is_err_and(|e| e.is_corruption()));
        // Absolute consistency accepts no torn write, zeroed or cut short.
        let fs = damaged_log(&recs, |d| d[512..].fill(0));
        let (got, _) = read_log_with(&fs, WalRecoveryMode::AbsoluteConsistency);
        assert!(got.is_err_and(|e| e.is_corruption()));
        let fs = damaged_log(&recs, |d| d.truncate(600));
        let (got, _) = read_log_with(&fs, WalRecoveryMode::AbsoluteConsistency);
        assert!(got.is_err_and(|e| e.is_corruption()));
        let (got, _) = read_log(&fs);
        assert_eq!(got.expect("cut short"), vec![b"one".to_vec()]);
    }

    #[test]
    fn a_length_field_pointing_past_the_end_is_not_taken_for_a_cut() {
        let recs: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i + 1; 30]).collect();
        let record = HEADER_SIZE + 30;
        // The length of the last record, then of the one before it, made to
        // reach past the end of the file.
        for (rec, dropped_if_tolerant) in [(3, 1), (2, 2)] {
            let at = record * rec;
            let fs = damaged_log(&recs, |d| d[at + 4] ^= 0x80);
            let (got, _) = read_log(&fs);
            match got {
                Err(Error::Corruption { offset, .. }) => assert_eq!(offset, at as u64),
                other => panic!("record {rec}: expected corruption, got {other:?}"),
            }
            let (got, _) = read_log_with(&fs, WalRecoveryMode::PointInTime);
            assert_eq!(got.expect("read").len(), 4 - dropped_if_tolerant);
        }
    }

    #[test]
    fn point_in_time_stops_at_damage_in_the_middle() {
        let recs = records();
        let fs = damaged_log(&recs, |d| d[HEADER_SIZE * 2 + 1] ^= 1);
        let (got, end) = read_log_with(&fs, WalRecoveryMode::PointInTime);
        assert_eq!(got.expect("read"), recs[..1].to_vec());
        let offset = HEADER_SIZE as u64;
        assert_eq!(end, LogEnd::TornTail { offset });
        for mode in [
            WalRecoveryMode::TornWrites,
            WalRecoveryMode::TolerateCorruptedTail,
        ] {
            let (got, _) = read_log_with(&fs, mode);
            assert!(got.is_err_and(|e| e.is_corruption()), "{mode:?}");
        }
    }
}
