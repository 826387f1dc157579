//! Entry points for fuzzing every decoder of the engine (`docs/fuzzing.md`).
//!
//! Compiled only with the `fuzzing` feature (which the cargo-fuzz targets in
//! `fuzz/` enable) and in this crate's own tests, which replay every target over
//! its seed corpus and a few thousand deterministic mutations on stable Rust. It
//! widens nothing else: the decoders stay `pub(crate)`.
//!
//! Each `fuzz_*` function is one target. It takes the fuzzer's bytes (or an
//! [`arbitrary`] input), must never panic, hang or allocate out of proportion to
//! its input, and checks that every rejection is a typed error: a block-level
//! `Corrupt`, an [`Error::Corruption`], or the decoders' `String` reasons. Where an
//! encoder exists the target also checks the round trip for exact equality. A
//! violated expectation panics, which is what the fuzzer reports.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arbitrary::{Arbitrary, Unstructured};
use shale_env::{FileSystem, MemFs, RandomAccessFile, WriteLifetime};

use crate::batch::WriteBatch;
use crate::cache::LruCache;
use crate::error::Error;
use crate::format::{compare_internal, masked_crc, masked_crc2, InternalKey, ValueKind, MAX_SEQNO};
use crate::iter::InternalIterator;
use crate::metrics::Stats;
use crate::options::WalRecoveryMode;
use crate::rangedel::{Fragment, Fragments, RangeTombstone};
use crate::table::block::{cmp_internal_to, split_target, Block, Corrupt, Cursor, EntryFormat};
use crate::table::filter::fuse::{
    build_fuse, filter_format, fuse_size, FuseFilter, FILTER_FORMAT_FUSE,
};
use crate::table::filter::{build_filter, filter_hash, Filter};
use crate::table::layout::{
    block_trailer, decode_properties, encode_properties, lz4_contents, unwrap_block, BlockHandle,
    Footer, FOOTER_LEN,
};
use crate::table::salvage::salvage_table;
use crate::table::{
    inspect_table, Compression, ReadContext, TableBuildOptions, TableBuilder, TableGet, TableReader,
};
use crate::version::VersionEdit;
use crate::wal::salvage::{salvage_log, LogPiece};
use crate::wal::{LogEnd, LogReader, LogWriter};

/// What a target did with its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The input decoded (and every check on the decoded value passed).
    Decoded,
    /// The input was rejected with a typed error (or is too short to select a
    /// mode).
    Rejected,
}

/// A target taking the fuzzer's bytes.
pub type Target = fn(&[u8]) -> Outcome;

/// The byte-input targets by name, as `fuzz/fuzz_targets/<name>.rs` calls them.
/// `table_roundtrip` takes its [`TableCase`] from the bytes through
/// [`fuzz_table_roundtrip_bytes`].
pub const TARGETS: &[(&str, Target)] = &[
    ("block", fuzz_block),
    ("filter", fuzz_filter),
    ("layout", fuzz_layout),
    ("table_inspect", fuzz_table_inspect),
    ("table_read", fuzz_table_read),
    ("log_reader", fuzz_log_reader),
    ("version_edit", fuzz_version_edit),
    ("write_batch", fuzz_write_batch),
    ("table_roundtrip", fuzz_table_roundtrip_bytes),
    ("salvage", fuzz_salvage),
    ("range_del", fuzz_range_del),
    ("block_trace", fuzz_block_trace),
];

/// Fails the fuzz run unless `e` is a corruption error: every bad byte the table
/// and log readers meet must be reported as corruption, never as I/O (the bytes
/// are all in memory and every read is bounds-checked before it is issued).
fn expect_corruption(e: &Error, what: &str) {
    assert!(
        e.is_corruption(),
        "{what}: expected a corruption error, got {e}"
    );
}

fn mem_file(bytes: &[u8]) -> Arc<dyn RandomAccessFile> {
    let fs = MemFs::new();
    let path = Path::new("/input");
    let mut f = fs
        .create_append(path, WriteLifetime::NotSet)
        .expect("MemFs creates a file in its root");
    f.append(bytes).expect("MemFs appends");
    fs.open_random(path).expect("MemFs opens what it holds")
}

// ---------------------------------------------------------------- blocks

/// One decoded block entry: key, data value, index handle.
type BlockEntry = (Vec<u8>, Vec<u8>, (u64, u64));

fn entry_at(c: &Cursor, b: &Block, format: EntryFormat) -> BlockEntry {
    match format {
        EntryFormat::Data => {
            let value = c
                .value(b)
                .expect("a valid data cursor has a value in its block");
            (c.key().to_vec(), value.to_vec(), (0, 0))
        }
        EntryFormat::Index | EntryFormat::PagedIndex => (c.key().to_vec(), Vec::new(), c.handle()),
    }
}

/// Walks a block front to back (`forward`) or back to front. An entry takes at
/// least three bytes, so more steps than bytes is a hang.
fn walk_block(b: &Block, format: EntryFormat, forward: bool) -> Result<Vec<BlockEntry>, Corrupt> {
    let mut c = Cursor::default();
    if forward {
        c.seek_to_first(b)?;
    } else {
        c.seek_to_last(b)?;
    }
    let mut out = Vec::new();
    while c.valid() {
        assert!(out.len() <= b.size(), "block walk does not end");
        out.push(entry_at(&c, b, format));
        if forward {
            c.next(b)?;
        } else {
            c.prev(b)?;
        }
    }
    Ok(out)
}

/// Seek targets around the keys of a block: each key, a key just below and just
/// above, prefixes, and the extremes.
fn targets_around(keys: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut out = vec![Vec::new(), vec![0xff; 12]];
    for k in keys.iter().take(64) {
        out.push(k.to_vec());
        let mut above = k.to_vec();
        above.push(0);
        out.push(above);
        if let Some((&last, head)) = k.split_last() {
            let mut below = head.to_vec();
            below.push(last.wrapping_sub(1));
            out.push(below);
            out.push(head.to_vec());
        }
    }
    out
}

/// Target `block`: a data block (first byte even) or an index block (odd) from
/// arbitrary bytes. `Block::new` validates or rejects; a valid block is walked
/// forward and backward (the walks must agree when both succeed), and when its
/// keys are in order every `seek_by` must land on the first key not below its
/// target, exactly as a linear scan does.
pub fn fuzz_block(data: &[u8]) -> Outcome {
    let Some((&sel, rest)) = data.split_first() else {
        return Outcome::Rejected;
    };
    let format = match sel & 3 {
        0 | 2 => EntryFormat::Data,
        1 => EntryFormat::Index,
        _ => EntryFormat::PagedIndex,
    };
    check_block(rest, format)
}

fn check_block(bytes: &[u8], format: EntryFormat) -> Outcome {
    let Ok(block) = Block::new(bytes.to_vec(), format) else {
        return Outcome::Rejected;
    };
    let forward = walk_block(&block, format, true);
    let backward = walk_block(&block, format, false);
    if let (Ok(f), Ok(b)) = (&forward, &backward) {
        let mut b = b.clone();
        b.reverse();
        assert_eq!(f, &b, "forward and backward walks disagree");
    }
    let Ok(entries) = forward else {
        return Outcome::Rejected;
    };
    let order = |a: &[u8], b: &[u8]| match format {
        EntryFormat::Data => compare_internal(a, b),
        EntryFormat::Index | EntryFormat::PagedIndex => a.cmp(b),
    };
    let sorted = entries
        .windows(2)
        .all(|w| order(&w[0].0, &w[1].0) != Ordering::Greater);
    if !sorted {
        // Keys out of order is a corrupt block the cursor cannot detect; seeks
        // must still end without a panic.
        let mut c = Cursor::default();
        for t in targets_around(&entries.iter().map(|e| &e.0[..]).collect::<Vec<_>>()) {
            let _ = seek_block(&mut c, &block, format, &t);
        }
        return Outcome::Rejected;
    }
    let keys: Vec<&[u8]> = entries.iter().map(|e| &e.0[..]).collect();
    let mut c = Cursor::default();
    for t in targets_around(&keys) {
        let cmp = target_cmp(format, &t);
        let want = entries.iter().position(|e| cmp(&e.0) != Ordering::Less);
        let got = seek_block(&mut c, &block, format, &t)
            .unwrap_or_else(|e| panic!("seek in a walkable block failed: {e:?}"));
        assert_eq!(got, want.map(|i| entries[i].clone()), "seek to {t:?}");
    }
    Outcome::Decoded
}

fn target_cmp(format: EntryFormat, target: &[u8]) -> impl Fn(&[u8]) -> Ordering + '_ {
    let (user, trailer) = split_target(target);
    move |k: &[u8]| match format {
        EntryFormat::Data => cmp_internal_to(k, user, trailer),
        EntryFormat::Index | EntryFormat::PagedIndex => k.cmp(target),
    }
}

fn seek_block(
    c: &mut Cursor,
    b: &Block,
    format: EntryFormat,
    target: &[u8],
) -> Result<Option<BlockEntry>, Corrupt> {
    c.seek_by(b, target_cmp(format, target))?;
    Ok(c.valid().then(|| entry_at(c, b, format)))
}

// ---------------------------------------------------------------- filter

/// Target `filter`: decodes the bytes as the filter kind their last byte names
/// (a blocked Bloom filter, or a binary fuse filter for [`FILTER_FORMAT_FUSE`])
/// and probes it; then builds a filter of each kind from keys cut out of the
/// bytes, which must decode and contain every one of them (no false
/// negatives), the fuse filter in exactly `fuse_size` bytes.
pub fn fuzz_filter(data: &[u8]) -> Outcome {
    let probes = || data.chunks(7).take(64).chain([&b""[..]]);
    let outcome = if filter_format(data) == Some(FILTER_FORMAT_FUSE) {
        match FuseFilter::new(data.to_vec()) {
            Ok(f) => {
                for k in probes() {
                    let _ = f.may_contain(k);
                }
                Outcome::Decoded
            }
            Err(Corrupt(_)) => Outcome::Rejected,
        }
    } else {
        match Filter::new(data.to_vec()) {
            Ok(f) => {
                for k in probes() {
                    let _ = f.may_contain(k);
                }
                Outcome::Decoded
            }
            Err(Corrupt(_)) => Outcome::Rejected,
        }
    };
    let width = 1 + usize::from(data.first().copied().unwrap_or(0) % 16);
    let keys: Vec<&[u8]> = data.chunks(width).collect();
    let bits = (data.len() % 25) as u32;
    let hashes: Vec<u64> = keys.iter().map(|k| filter_hash(k)).collect();
    let f = Filter::new(build_filter(&hashes, bits)).expect("a built filter decodes");
    for k in &keys {
        assert!(f.may_contain(k), "false negative for {k:?}");
    }
    let fingerprint_bits = 4 + (data.len() % 13) as u8;
    let built = build_fuse(&hashes, fingerprint_bits);
    let mut distinct = hashes.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(
        built.len(),
        fuse_size(distinct.len(), fingerprint_bits),
        "fuse filter size"
    );
    let f = FuseFilter::new(built).expect("a built fuse filter decodes");
    for k in &keys {
        assert!(f.may_contain(k), "fuse false negative for {k:?}");
    }
    outcome
}

// ---------------------------------------------------------------- layout

/// Target `layout`: the file-level framing. The first byte picks the decoder:
/// `% 4 == 0` the footer (bit 4: fix its checksum first, so that the fuzzer
/// reaches the fields), `1` the properties block, `2` a stored block through
/// `unwrap_block` (bit 4: fix its trailer checksum and verify it), `3` an LZ4
/// round trip of the bytes. Decoded values must survive encode + decode exactly.
pub fn fuzz_layout(data: &[u8]) -> Outcome {
    let Some((&sel, rest)) = data.split_first() else {
        return Outcome::Rejected;
    };
    let fix = sel & 0x10 != 0;
    match sel % 4 {
        0 => check_footer(rest, fix),
        1 => check_properties(rest),
        2 => check_unwrap_block(rest, fix),
        _ => check_lz4_roundtrip(rest),
    }
}

fn fix_footer_crc(footer: &mut [u8]) {
    if footer.len() == FOOTER_LEN as usize {
        let crc = masked_crc(&footer[..52]).to_le_bytes();
        footer[52..56].copy_from_slice(&crc);
    }
}

fn check_footer(bytes: &[u8], fix: bool) -> Outcome {
    let mut bytes = bytes.to_vec();
    if fix {
        fix_footer_crc(&mut bytes);
    }
    let Ok(footer) = Footer::decode(&bytes) else {
        return Outcome::Rejected;
    };
    let enc = footer.encode();
    assert_eq!(Footer::decode(&enc), Ok(footer), "footer round trip");
    // The encoding is exact, except that a filter handle of size 0 means "no
    // filter" whatever its offset says.
    if footer.filter.is_some() || bytes[32..48].iter().all(|&b| b == 0) {
        assert_eq!(enc, bytes, "footer re-encodes to other bytes");
    }
    Outcome::Decoded
}

fn check_properties(bytes: &[u8]) -> Outcome {
    let Ok(p) = decode_properties(bytes) else {
        return Outcome::Rejected;
    };
    let again = decode_properties(&encode_properties(&p)).expect("encoded properties decode");
    assert_eq!(again, p, "properties round trip");
    Outcome::Decoded
}

fn check_unwrap_block(bytes: &[u8], fix: bool) -> Outcome {
    let mut raw = bytes.to_vec();
    if fix && raw.len() >= 5 {
        let n = raw.len() - 5;
        let crc = masked_crc2(&raw[..n], &raw[n..n + 1]).to_le_bytes();
        raw[n + 1..].copy_from_slice(&crc);
    }
    let unverified = unwrap_block(raw.clone(), false);
    if let Ok(out) = &unverified {
        // No length field may make the decoder allocate out of proportion.
        assert!(
            out.len() <= raw.len().saturating_mul(255).saturating_add(64),
            "{} bytes decompressed from {}",
            out.len(),
            raw.len()
        );
    }
    match unwrap_block(raw, true) {
        Ok(out) => {
            assert_eq!(Ok(out), unverified, "verification changed the contents");
            Outcome::Decoded
        }
        Err(Corrupt(_)) => Outcome::Rejected,
    }
}

fn check_lz4_roundtrip(bytes: &[u8]) -> Outcome {
    let (contents, compression) = match lz4_contents(bytes) {
        Some(c) => (c, Compression::Lz4),
        None => (bytes.to_vec(), Compression::None),
    };
    let mut stored = contents.clone();
    stored.extend_from_slice(&block_trailer(&contents, compression));
    let out = unwrap_block(stored, true).expect("a block written by block_trailer unwraps");
    assert_eq!(out, bytes, "LZ4 round trip");
    Outcome::Decoded
}

// ---------------------------------------------------------------- tables

/// Rewrites the checksums of a table in place as far as its own handles lead
/// (footer, properties, top-level index, filter, index partitions, data blocks),
/// so that mutated tables get past checksum verification into the decoders.
/// Handles that fall outside the file are left alone.
pub fn fix_table_checksums(table: &mut [u8]) {
    let len = table.len();
    let Some(foot_start) = len.checked_sub(FOOTER_LEN as usize) else {
        return;
    };
    fix_footer_crc(&mut table[foot_start..]);
    let Ok(footer) = Footer::decode(&table[foot_start..]) else {
        return;
    };
    let props = fix_trailer(table, footer.properties).and_then(|c| decode_properties(&c).ok());
    // Version 4: the range-deletion block, which ends where the properties
    // begin.
    if let Some(bytes) = props.map(|p| p.range_del_bytes).filter(|&b| b > 5) {
        if let Some(offset) = footer.properties.offset.checked_sub(bytes) {
            let size = bytes - 5;
            fix_trailer(table, BlockHandle { offset, size });
        }
    }
    let filter = footer.filter.and_then(|f| fix_trailer(table, f));
    let Some(top) = fix_trailer(table, footer.top_index) else {
        return;
    };
    if footer.format_version >= 3 {
        fix_paged_table(table, top, filter);
        return;
    }
    let partitions = if footer.format_version >= 2 {
        EntryFormat::PagedIndex
    } else {
        EntryFormat::Index
    };
    for part in index_handles(top, EntryFormat::Index).into_iter().take(len) {
        if let Some(p) = fix_trailer(table, part) {
            for d in index_handles(p, partitions).into_iter().take(len) {
                fix_trailer(table, d);
            }
        }
    }
}

/// Version 3: fixes the tails of the paged blocks the two top-level key
/// arrays (`top`, `filter_index`) and the locators lead to.
fn fix_paged_table(table: &mut [u8], top: Vec<u8>, filter_index: Option<Vec<u8>>) {
    use crate::table::paged::{KeyArray, Locator};
    let len = table.len() as u64;
    let refs = |contents: Vec<u8>| -> Vec<(u64, u64)> {
        KeyArray::new(contents).map_or_else(
            |_| Vec::new(),
            |k| (0..k.len()).map(|i| (k.offset(i), k.value(i))).collect(),
        )
    };
    if let Some(f) = filter_index {
        for (off, n) in refs(f).into_iter().take(table.len()) {
            fix_tail(table, off, n);
        }
    }
    for (off, n) in refs(top).into_iter().take(table.len()) {
        let Some(loc) = fix_tail(table, off, n).and_then(|c| Locator::new(c).ok()) else {
            continue;
        };
        for g in 0..loc.len().min(table.len()) {
            let (page, pages) = loc.pages(g);
            if let (Some(o), Some(l)) = (page.checked_mul(4096), pages.checked_mul(4096)) {
                if o < len {
                    fix_tail(table, o, l);
                }
            }
        }
    }
}

/// Fixes the checksum of the paged block of `n` bytes at `offset` and
/// returns its contents.
fn fix_tail(table: &mut [u8], offset: u64, n: u64) -> Option<Vec<u8>> {
    let start = usize::try_from(offset).ok()?;
    let n = usize::try_from(n).ok()?;
    let raw = table.get_mut(start..start.checked_add(n)?)?;
    let covered = n.checked_sub(4)?;
    let crc = masked_crc(&raw[..covered]).to_le_bytes();
    raw[covered..].copy_from_slice(&crc);
    crate::table::paged::unwrap_paged(raw.to_vec(), false).ok()
}

/// Fixes the trailer of the block at `h` and returns its decoded contents.
fn fix_trailer(table: &mut [u8], h: BlockHandle) -> Option<Vec<u8>> {
    let start = usize::try_from(h.offset).ok()?;
    let size = usize::try_from(h.size).ok()?;
    let end = start.checked_add(size)?.checked_add(5)?;
    let raw = table.get_mut(start..end)?;
    let crc = masked_crc2(&raw[..size], &raw[size..size + 1]).to_le_bytes();
    raw[size + 1..].copy_from_slice(&crc);
    unwrap_block(raw.to_vec(), false).ok()
}

/// The handles of an index block of `format`, as far as it decodes.
fn index_handles(contents: Vec<u8>, format: EntryFormat) -> Vec<BlockHandle> {
    let Ok(block) = Block::new(contents, format) else {
        return Vec::new();
    };
    let mut c = Cursor::default();
    let mut out = Vec::new();
    let mut step = c.seek_to_first(&block);
    while step.is_ok() && c.valid() && out.len() <= block.size() {
        let (offset, size) = c.handle();
        out.push(BlockHandle { offset, size });
        step = c.next(&block);
    }
    out
}

/// Splits a table target's input into its mode byte and the table, with the
/// checksums fixed when the mode's bit 0 says so.
fn table_input(data: &[u8]) -> Option<(u8, Vec<u8>)> {
    let (&mode, rest) = data.split_first()?;
    let mut table = rest.to_vec();
    if mode & 1 != 0 {
        fix_table_checksums(&mut table);
    }
    Some((mode, table))
}

/// Target `table_inspect`: a whole table file through [`inspect_table`], the
/// path of `shale sst`. The first byte is a mode (bit 0: fix the checksums
/// first); the rest is the file. Errors must be corruption; a layout must stay
/// inside the file.
pub fn fuzz_table_inspect(data: &[u8]) -> Outcome {
    let Some((_, table)) = table_input(data) else {
        return Outcome::Rejected;
    };
    let size = table.len() as u64;
    match inspect_table(mem_file(&table), PathBuf::from("fuzz.sst")) {
        Ok(layout) => {
            assert_eq!(layout.file_size, size);
            assert_eq!(layout.footer_offset + FOOTER_LEN, size);
            for b in &layout.blocks {
                assert!(b.offset + b.size + 5 <= size, "block {b:?} past the end");
            }
            Outcome::Decoded
        }
        Err(e) => {
            expect_corruption(&e, "inspect_table");
            Outcome::Rejected
        }
    }
}

fn read_context(verify: bool) -> ReadContext {
    ReadContext {
        cache: Arc::new(LruCache::new(1 << 20, 1)),
        stats: Arc::new(Stats::default()),
        verify_checksums: verify,
        tracer: Arc::default(),
    }
}

/// Walks an internal iterator to its end, forward or backward, collecting the
/// entries; stops with the iterator's error. More than `limit` entries is a hang.
fn walk_iter(it: &mut dyn InternalIterator, forward: bool, limit: usize) -> Result<Model, Error> {
    if forward {
        it.seek_to_first();
    } else {
        it.seek_to_last();
    }
    let mut out = Vec::new();
    while it.valid() {
        assert!(out.len() <= limit, "table iteration does not end");
        out.push((it.key().to_vec(), it.value().to_vec()));
        if forward {
            it.next();
        } else {
            it.prev();
        }
    }
    it.status().map(|()| out)
}

/// Target `table_read`: a whole table file through [`TableReader`]: open, full
/// iteration both ways (and the compaction scan), a point get and a seek for
/// every key found. Mode byte: bit 0 fix the checksums, bit 1 verify them on
/// reads, bit 2 pin the top-level index, bit 3 pin the filter. Errors must be
/// corruption; walks that succeed must agree with each other.
pub fn fuzz_table_read(data: &[u8]) -> Outcome {
    let Some((mode, table)) = table_input(data) else {
        return Outcome::Rejected;
    };
    let limit = table.len();
    let reader = match TableReader::open(
        mem_file(&table),
        PathBuf::from("fuzz.sst"),
        1,
        read_context(mode & 2 != 0),
        mode & 4 != 0,
        mode & 8 != 0,
    ) {
        Ok(r) => Arc::new(r),
        Err(e) => {
            expect_corruption(&e, "TableReader::open");
            return Outcome::Rejected;
        }
    };
    // What the range-deletion block decoded to keeps the grammar's rules.
    check_fragments(reader.range_dels());
    let forward = walk_iter(reader.iter().as_mut(), true, limit);
    let backward = walk_iter(reader.iter().as_mut(), false, limit);
    let scan = walk_iter(reader.scan().as_mut(), true, limit);
    for r in [&forward, &backward, &scan] {
        if let Err(e) = r {
            expect_corruption(e, "table iteration");
        }
    }
    if let (Ok(f), Ok(b)) = (&forward, &backward) {
        let mut b = b.clone();
        b.reverse();
        assert_eq!(f, &b, "forward and backward iteration disagree");
    }
    if let (Ok(f), Ok(s)) = (&forward, &scan) {
        assert_eq!(f, s, "iteration and compaction scan disagree");
    }
    let keys: Vec<Vec<u8>> = match &forward {
        Ok(entries) => entries.iter().map(|e| e.0.clone()).collect(),
        Err(_) => Vec::new(),
    };
    let mut it = reader.iter();
    for k in keys.iter().take(64) {
        let (user, trailer) = split_target(k);
        for filter in [true, false] {
            if let Err(e) = reader.get(user, trailer >> 8, filter) {
                expect_corruption(&e, "TableReader::get");
            }
        }
        it.seek(k);
        it.seek_for_prev(k);
        if let Err(e) = it.status() {
            expect_corruption(&e, "table seek");
        }
    }
    match (forward, backward) {
        (Ok(_), Ok(_)) => Outcome::Decoded,
        _ => Outcome::Rejected,
    }
}

// ---------------------------------------------------------------- salvage

/// Target `salvage`: the block-by-block salvage of `Db::repair`. Mode byte
/// bit 0 clear: the rest is a table file (bit 1: its checksums fixed first)
/// through `table::salvage::salvage_table`; set: a log through
/// `wal::salvage::salvage_log`. Beyond "no panic, no hang": recovered data
/// blocks lie inside the file in order without overlapping, their entries in
/// strictly increasing order and as many as counted; lost ranges lie inside
/// the file and overlap no recovered block. A log's pieces lie inside the
/// file in order, and its first records (before any damage) are exactly the
/// records a point-in-time reader returns.
pub fn fuzz_salvage(data: &[u8]) -> Outcome {
    let Some((&mode, rest)) = data.split_first() else {
        return Outcome::Rejected;
    };
    if mode & 1 != 0 {
        return salvage_log_case(rest);
    }
    let mut table = rest.to_vec();
    if mode & 2 != 0 {
        fix_table_checksums(&mut table);
    }
    let s = salvage_table(&table);
    let size = table.len() as u64;
    let mut end = 0u64;
    let mut entries: Vec<Vec<u8>> = Vec::new();
    for b in &s.blocks {
        assert!(
            b.offset >= end && b.offset + b.len <= size,
            "recovered block {}+{} out of place",
            b.offset,
            b.len
        );
        end = b.offset + b.len;
        let before = entries.len();
        b.for_each(|k, _| entries.push(k.to_vec()));
        assert_eq!(
            (entries.len() - before) as u64,
            b.entries,
            "entries counted"
        );
        assert!(entries.get(before) == Some(&b.first), "first key");
        assert!(entries.last() == Some(&b.last), "last key");
    }
    for w in entries.windows(2) {
        assert_eq!(
            compare_internal(&w[0], &w[1]),
            Ordering::Less,
            "recovered entries out of order"
        );
    }
    for l in &s.lost {
        assert!(
            l.len > 0 && l.offset + l.len <= size,
            "lost range past the end"
        );
        assert!(
            s.blocks
                .iter()
                .all(|b| l.offset + l.len <= b.offset || b.offset + b.len <= l.offset),
            "a lost range overlaps a recovered block"
        );
    }
    assert!(s.blocks_lost() >= u64::from(!s.lost.is_empty()));
    check_fragments(&s.range_dels);
    assert!(
        !s.range_dels_lost || s.range_dels.is_empty(),
        "range deletions both read and lost"
    );
    if s.blocks.is_empty() {
        Outcome::Rejected
    } else {
        Outcome::Decoded
    }
}

fn salvage_log_case(bytes: &[u8]) -> Outcome {
    let pieces = salvage_log(bytes);
    let size = bytes.len() as u64;
    let mut end = 0u64;
    let mut records = 0;
    for p in &pieces {
        let (offset, len) = match p {
            LogPiece::Record { offset, payload } => {
                records += 1;
                (*offset, 7 + payload.len() as u64)
            }
            LogPiece::Damaged(d) => (d.offset, d.len),
            LogPiece::Padding { offset, len } => (*offset, *len),
        };
        assert!(offset >= end, "log pieces out of order");
        assert!(offset + len <= size, "a log piece past the end");
        end = offset + 1;
    }
    let (first, _) = read_log_with(bytes, WalRecoveryMode::PointInTime);
    let salvaged: Vec<&Vec<u8>> = pieces
        .iter()
        .map_while(|p| match p {
            LogPiece::Record { payload, .. } => Some(payload),
            _ => None,
        })
        .collect();
    assert!(
        salvaged.len() == first.len() && salvaged.iter().zip(&first).all(|(a, b)| *a == b),
        "salvage and point-in-time reading disagree before the first damage"
    );
    if records > 0 {
        Outcome::Decoded
    } else {
        Outcome::Rejected
    }
}

// ---------------------------------------------------------------- logs

/// Target `log_reader`: the record framing of the WAL and the manifest. Mode
/// byte bit 0 clear: the rest is a log file, read record by record to its end
/// or first error (which must be corruption); each record is also offered to
/// the batch and edit decoders. Bit 0 set: the rest, split at `\n`, is written
/// as records with `LogWriter` (bit 1 adds a record spanning several blocks)
/// and must read back exactly, ending clean.
pub fn fuzz_log_reader(data: &[u8]) -> Outcome {
    let Some((&mode, rest)) = data.split_first() else {
        return Outcome::Rejected;
    };
    if mode & 1 == 0 {
        return read_log(rest);
    }
    let mut records: Vec<Vec<u8>> = rest.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    if mode & 2 != 0 {
        let n = (rest.len() * 997) % 100_000;
        records.push((0..n).map(|i| (i % 251) as u8).collect());
    }
    let fs = MemFs::new();
    let path = Path::new("/log");
    let file = fs
        .create_append(path, WriteLifetime::NotSet)
        .expect("MemFs creates a file in its root");
    let mut w = LogWriter::new(file, path.into());
    for r in &records {
        w.add_record(r).expect("MemFs appends");
    }
    let file = fs.open_random(path).expect("MemFs opens what it holds");
    let mut reader = LogReader::new(file, path.into());
    let mut got = Vec::new();
    while let Some(r) = reader.read_record().expect("a written log reads back") {
        got.push(r);
    }
    assert_eq!(got, records, "log round trip");
    assert_eq!(reader.end(), LogEnd::Clean);
    Outcome::Decoded
}

fn read_log(bytes: &[u8]) -> Outcome {
    // Every recovery mode stops at the same first damage and differs only in
    // its verdict, so all of them must return the same records.
    let mut outcome = None;
    let mut first: Option<Vec<Vec<u8>>> = None;
    for mode in [
        WalRecoveryMode::TornWrites,
        WalRecoveryMode::TolerateCorruptedTail,
        WalRecoveryMode::PointInTime,
        WalRecoveryMode::AbsoluteConsistency,
    ] {
        let (records, this) = read_log_with(bytes, mode);
        match &first {
            None => first = Some(records),
            Some(f) => assert_eq!(f, &records, "{mode:?} read other records"),
        }
        outcome.get_or_insert(this);
    }
    outcome.unwrap_or(Outcome::Rejected)
}

fn read_log_with(bytes: &[u8], mode: WalRecoveryMode) -> (Vec<Vec<u8>>, Outcome) {
    let mut reader = LogReader::with_mode(mem_file(bytes), PathBuf::from("fuzz.log"), mode);
    let mut records = Vec::new();
    loop {
        match reader.read_record() {
            Ok(Some(record)) => {
                // A fragment header is 7 bytes: more records than that is a hang.
                assert!(
                    records.len() < bytes.len() / 7 + 1,
                    "log reading does not end"
                );
                let _ = fuzz_write_batch(&record);
                let _ = fuzz_version_edit(&record);
                records.push(record);
            }
            Ok(None) => {
                if let LogEnd::TornTail { offset } = reader.end() {
                    assert!(offset <= bytes.len() as u64, "torn tail past the end");
                    assert!(
                        mode != WalRecoveryMode::AbsoluteConsistency,
                        "absolute consistency accepted a torn tail"
                    );
                    return (records, Outcome::Rejected);
                }
                return (records, Outcome::Decoded);
            }
            Err(e) => {
                expect_corruption(&e, "LogReader::read_record");
                assert!(
                    mode != WalRecoveryMode::PointInTime,
                    "point-in-time recovery refused a log: {e}"
                );
                return (records, Outcome::Rejected);
            }
        }
    }
}

/// Target `version_edit`: a manifest record through `VersionEdit::decode`; a
/// decoded edit must encode and decode back to itself.
pub fn fuzz_version_edit(data: &[u8]) -> Outcome {
    match VersionEdit::decode(data) {
        Ok(edit) => {
            let again = VersionEdit::decode(&edit.encode()).expect("an encoded edit decodes");
            assert_eq!(again, edit, "version edit round trip");
            Outcome::Decoded
        }
        Err(reason) => {
            assert!(!reason.is_empty(), "an edit error says what is wrong");
            Outcome::Rejected
        }
    }
}

/// Target `write_batch`: a WAL record through `WriteBatch::decode` and its ops.
/// A decoded batch's ops must all decode, match its count, and rebuild into a
/// batch that encodes and decodes to the same sequence number and ops.
pub fn fuzz_write_batch(data: &[u8]) -> Outcome {
    let (seq, batch) = match WriteBatch::decode(data) {
        Ok(d) => d,
        Err(reason) => {
            assert!(!reason.is_empty(), "a batch error says what is wrong");
            return Outcome::Rejected;
        }
    };
    let ops: Vec<_> = batch
        .ops()
        .map(|op| op.expect("a decoded batch's ops decode"))
        .collect();
    assert_eq!(ops.len(), batch.len(), "op count");
    // A range deletion whose start is not below its end decodes (the log
    // keeps what was written) but is refused by validation, and only then.
    let bad_range =
        |op: &crate::batch::BatchOp<'_>| op.kind == ValueKind::RangeDelete && op.key >= op.value;
    assert_eq!(
        batch.validate().is_err(),
        ops.iter().any(bad_range),
        "validation refuses exactly the batches with a bad range"
    );
    let mut rebuilt = WriteBatch::new();
    for op in &ops {
        match op.kind {
            ValueKind::Value => rebuilt.put(op.key, op.value),
            ValueKind::Delete => rebuilt.delete(op.key),
            ValueKind::RangeDelete => rebuilt.delete_range(op.key, op.value),
        }
    }
    let (seq2, again) = WriteBatch::decode(rebuilt.encode(seq)).expect("a rebuilt batch decodes");
    assert_eq!(seq2, seq);
    let ops2: Vec<_> = again.ops().map(|op| op.expect("op")).collect();
    // `delete_range` adds nothing for an empty range (start == end).
    let kept: Vec<_> = ops
        .iter()
        .filter(|op| !(op.kind == ValueKind::RangeDelete && op.key == op.value))
        .copied()
        .collect();
    assert_eq!(ops2, kept, "write batch round trip");
    Outcome::Decoded
}

// ---------------------------------------------------------------- range deletions

/// Checks the invariants of the range-deletion block's grammar on `f`:
/// fragments in key order, not overlapping, each non-empty, with one or more
/// sequence numbers, strictly decreasing, none above [`MAX_SEQNO`]; and that
/// its lookups agree with a linear scan of the fragments.
fn check_fragments(f: &Fragments) {
    let frags = f.fragments();
    let mut prev: Option<&Fragment> = None;
    let mut count = 0u64;
    for fr in frags {
        assert!(fr.start < fr.end, "an empty fragment: {fr:?}");
        assert!(!fr.seqs.is_empty(), "a fragment without sequence numbers");
        assert!(
            fr.seqs.windows(2).all(|w| w[0] > w[1]),
            "sequence numbers not strictly decreasing: {:?}",
            fr.seqs
        );
        assert!(fr.seqs[0] <= MAX_SEQNO, "sequence number out of range");
        if let Some(p) = prev {
            assert!(p.end <= fr.start, "fragments overlap or are out of order");
        }
        count += fr.seqs.len() as u64;
        prev = Some(fr);
    }
    assert_eq!(f.count(), count, "count");
    assert_eq!(f.is_empty(), frags.is_empty());
    let all = frags.iter().flat_map(|fr| fr.seqs.iter().copied());
    let lo_hi = all.fold(None, |acc: Option<(u64, u64)>, s| {
        Some(acc.map_or((s, s), |(lo, hi)| (lo.min(s), hi.max(s))))
    });
    assert_eq!(f.seq_range(), lo_hi, "sequence range");
    // Lookups against a linear scan, around every bound.
    let bounds: Vec<&[u8]> = frags
        .iter()
        .flat_map(|fr| [fr.start.as_slice(), fr.end.as_slice()])
        .collect();
    for k in targets_around(&bounds[..bounds.len().min(48)]) {
        let linear = frags.iter().find(|fr| fr.start <= k && k < fr.end);
        assert_eq!(f.fragment_at(&k), linear, "fragment at {k:?}");
        if let Some(fr) = linear {
            for &s in fr.seqs.iter().take(16) {
                assert_eq!(f.covering_seq(&k, s), Some(s));
                assert!(s == 0 || f.covers(&k, s - 1, s), "hides older versions");
                assert!(!f.covers(&k, s, s), "a tombstone hides only older versions");
            }
            assert_eq!(f.covering_seq(&k, u64::MAX), Some(fr.seqs[0]));
        }
    }
    if let (Some(first), Some(last)) = (frags.first(), frags.last()) {
        let lo = f.smallest_key().expect("smallest");
        assert_eq!(lo.user_key(), first.start.as_slice());
        let hi = f.largest_key().expect("largest");
        // The bound covers the last end: the end itself when exclusive, or
        // `x` for an end `x ++ [0]`.
        match last.end.split_last() {
            Some((0, x)) => assert_eq!(hi.user_key(), x),
            _ => assert_eq!(hi.user_key(), last.end.as_slice()),
        }
    }
}

/// Checks that `f` covers exactly what `tombs` do, at the snapshots that
/// matter (a sample of the tombstones' sequence numbers, each and the one
/// below, and the latest), for keys at and around the bounds (a sample, so
/// that a run stays fast).
fn check_coverage(f: &Fragments, tombs: &[RangeTombstone], what: &str) {
    let bounds: Vec<&[u8]> = tombs
        .iter()
        .flat_map(|t| [t.start.as_slice(), t.end.as_slice()])
        .take(24)
        .collect();
    let mut seqs: Vec<u64> = tombs.iter().map(|t| t.seq).collect();
    seqs.sort_unstable();
    seqs.dedup();
    let step = seqs.len().div_ceil(8).max(1);
    let mut snapshots: Vec<u64> = seqs
        .iter()
        .step_by(step)
        .flat_map(|&s| [s, s.saturating_sub(1)])
        .collect();
    snapshots.push(u64::MAX);
    snapshots.sort_unstable();
    snapshots.dedup();
    for k in targets_around(&bounds) {
        // The sequence numbers of the tombstones over `k`, newest first: the
        // newest at most a snapshot is what the fragments must give.
        let mut over: Vec<u64> = tombs
            .iter()
            .filter(|t| t.start <= k && k < t.end)
            .map(|t| t.seq)
            .collect();
        over.sort_unstable_by(|a, b| b.cmp(a));
        for &s in &snapshots {
            assert_eq!(
                f.covering_seq(&k, s),
                over.iter().copied().find(|&t| t <= s),
                "{what}: newest tombstone over {k:?} at {s}"
            );
        }
    }
}

/// Tombstones cut out of fuzzer bytes: per tombstone, a start length and an
/// end length (0 to 3 bytes each, so that ranges overlap, touch and repeat),
/// a sequence number byte (255: [`MAX_SEQNO`]), then the two keys.
fn tombstones_from(mut rest: &[u8]) -> Vec<RangeTombstone> {
    let mut out = Vec::new();
    while rest.len() >= 3 && out.len() < 256 {
        let (ls, le, seq) = ((rest[0] % 4) as usize, (rest[1] % 4) as usize, rest[2]);
        rest = &rest[3..];
        let start = rest[..ls.min(rest.len())].to_vec();
        rest = &rest[start.len()..];
        let end = rest[..le.min(rest.len())].to_vec();
        rest = &rest[end.len()..];
        let seq = if seq == 255 {
            MAX_SEQNO
        } else {
            u64::from(seq)
        };
        out.push(RangeTombstone { start, end, seq });
    }
    out
}

/// Target `range_del`: the range-deletion block of a version-4 table
/// (`Fragments`). Mode bit 0 clear: the rest is block contents for
/// `Fragments::decode`, which must not panic; what decodes must encode to
/// exactly the same bytes and satisfy the grammar's invariants (sorted, not
/// overlapping, non-empty fragments, sequence numbers strictly decreasing),
/// with lookups that agree with a linear scan, and its tombstones
/// fragmented again must cover the same. Mode bit 0 set: tombstones cut out of
/// the rest (see [`tombstones_from`]) go through `Fragments::build`, which
/// must satisfy the same invariants, round-trip through the encoding, cover
/// exactly what the tombstones do at every snapshot, and equal the
/// `Fragments::merge` of the fragments of two halves of them.
pub fn fuzz_range_del(data: &[u8]) -> Outcome {
    let Some((&mode, rest)) = data.split_first() else {
        return Outcome::Rejected;
    };
    if mode & 1 == 0 {
        let f = match Fragments::decode(rest) {
            Ok(f) => f,
            Err(reason) => {
                assert!(
                    !reason.is_empty(),
                    "a range-deletion error says what is wrong"
                );
                return Outcome::Rejected;
            }
        };
        assert!(
            f.encode() == rest,
            "a decoded block re-encodes to its bytes"
        );
        check_fragments(&f);
        let tombs: Vec<RangeTombstone> = f.tombstones().collect();
        assert_eq!(tombs.len() as u64, f.count());
        check_coverage(&f, &tombs, "decoded");
        check_coverage(&Fragments::build(tombs.clone()), &tombs, "rebuilt");
        return Outcome::Decoded;
    }
    let tombs = tombstones_from(rest);
    if tombs.is_empty() {
        return Outcome::Rejected;
    }
    let f = Fragments::build(tombs.clone());
    check_fragments(&f);
    let bytes = f.encode();
    assert_eq!(
        Fragments::decode(&bytes).as_ref(),
        Ok(&f),
        "built fragments round trip"
    );
    check_coverage(&f, &tombs, "built");
    let (a, b) = tombs.split_at(tombs.len() / 2);
    let merged = Fragments::merge([&Fragments::build(a.to_vec()), &Fragments::build(b.to_vec())]);
    assert_eq!(merged, f, "the merge of two halves is the build of all");
    // Clipped to a window taken from the input, the fragments cover what
    // they did inside it and nothing outside.
    let lower = tombs[0].start.clone();
    let upper = tombs[tombs.len() - 1].end.clone();
    let clipped = f.clip(Some(&lower), Some(&upper));
    check_fragments(&clipped);
    let inside: Vec<RangeTombstone> = tombs
        .iter()
        .map(|t| RangeTombstone {
            start: t.start.clone().max(lower.clone()),
            end: t.end.clone().min(upper.clone()),
            seq: t.seq,
        })
        .collect();
    check_coverage(&clipped, &inside, "clipped");
    Outcome::Decoded
}

// ---------------------------------------------------------------- round trip

/// One entry of a [`TableCase`]: user key, sequence number, tombstone, value.
#[derive(Clone, Debug)]
struct CaseEntry {
    user_key: Vec<u8>,
    seq: u64,
    delete: bool,
    value: Vec<u8>,
}

/// A read checked by [`fuzz_table_roundtrip`] against the model.
#[derive(Clone, Debug)]
enum CaseOp {
    Get { user_key: Vec<u8>, seq: u64 },
    Seek { user_key: Vec<u8>, seq: u64 },
    SeekForPrev { user_key: Vec<u8>, seq: u64 },
    First,
    Last,
    Next,
    Prev,
}

/// A structure-aware input: table build options, entries (duplicated user keys
/// with several sequence numbers, tombstones, long keys and values) and a
/// sequence of reads. Built from the fuzzer's bytes by its [`Arbitrary`] impl.
#[derive(Clone, Debug)]
pub struct TableCase {
    block_size: usize,
    restart_interval: usize,
    index_partition_size: usize,
    lz4: bool,
    filter_bits: Option<u32>,
    pin_top: bool,
    pin_filter: bool,
    verify: bool,
    entries: Vec<CaseEntry>,
    ops: Vec<CaseOp>,
    /// Table format version written (drawn last, so that older seeds keep
    /// their meaning; input that ran out writes the current version).
    format_version: u32,
}

fn arbitrary_user_key(u: &mut Unstructured<'_>, known: &[Vec<u8>]) -> arbitrary::Result<Vec<u8>> {
    let pick = |u: &mut Unstructured<'_>| -> arbitrary::Result<Vec<u8>> {
        Ok(if known.is_empty() {
            Vec::new()
        } else {
            known[u.choose_index(known.len())?].clone()
        })
    };
    Ok(match u.int_in_range(0u8..=5)? {
        // A version of a key already present.
        0 | 1 => pick(u)?,
        // A key sharing a prefix with one present.
        2 => {
            let mut k = pick(u)?;
            let keep = u.int_in_range(0..=k.len())?;
            k.truncate(keep);
            k.push(*u.choose(&[0u8, 1, b'a', b'b', 0xfe, 0xff])?);
            k
        }
        // A long key (past the cursor's inline key buffer).
        3 => {
            let mut k = vec![*u.choose(&[b'k', 0xff, 0])?; u.int_in_range(60..=140)?];
            k.push(u.arbitrary()?);
            k
        }
        // A short key over a small alphabet, often colliding.
        _ => {
            let n = u.int_in_range(0..=6)?;
            let mut k = Vec::with_capacity(n);
            for _ in 0..n {
                k.push(*u.choose(&[0u8, b'a', b'b', b'c', 0xff])?);
            }
            k
        }
    })
}

fn arbitrary_seq(u: &mut Unstructured<'_>) -> arbitrary::Result<u64> {
    Ok(match u.int_in_range(0u8..=7)? {
        0 => MAX_SEQNO,
        1 => u.int_in_range(0..=MAX_SEQNO)?,
        _ => u.int_in_range(0..=64)?,
    })
}

impl<'a> Arbitrary<'a> for TableCase {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let block_size = match u.int_in_range(0u8..=3)? {
            0 => u.int_in_range(1..=64)?,
            1 => u.int_in_range(64..=512)?,
            _ => u.int_in_range(512..=8192)?,
        };
        let restart_interval = u.int_in_range(0..=20)?;
        let index_partition_size = match u.int_in_range(0u8..=2)? {
            0 => u.int_in_range(1..=32)?,
            _ => u.int_in_range(32..=4096)?,
        };
        let lz4 = u.arbitrary()?;
        let filter_bits = if u.arbitrary()? {
            Some(u.int_in_range(0..=24)?)
        } else {
            None
        };
        let (pin_top, pin_filter, verify) = (u.arbitrary()?, u.arbitrary()?, u.arbitrary()?);
        let n = u.int_in_range(0..=200)?;
        let mut entries: Vec<CaseEntry> = Vec::with_capacity(n);
        let mut known: Vec<Vec<u8>> = Vec::new();
        for _ in 0..n {
            if u.is_empty() {
                break;
            }
            let user_key = arbitrary_user_key(u, &known)?;
            let seq = arbitrary_seq(u)?;
            let delete = u.int_in_range(0u8..=3)? == 0;
            let value = if delete {
                Vec::new()
            } else if u.int_in_range(0u8..=9)? == 0 {
                // A large, compressible value.
                let len = u.int_in_range(100..=3000)?;
                let b: u8 = u.arbitrary()?;
                (0..len).map(|i| b.wrapping_add((i % 7) as u8)).collect()
            } else {
                let len = u.int_in_range(0..=16)?.min(u.len());
                u.bytes(len)?.to_vec()
            };
            known.push(user_key.clone());
            entries.push(CaseEntry {
                user_key,
                seq,
                delete,
                value,
            });
        }
        let n_ops = u.int_in_range(0..=64)?;
        let mut ops = Vec::with_capacity(n_ops);
        for _ in 0..n_ops {
            if u.is_empty() {
                break;
            }
            let op = match u.int_in_range(0u8..=6)? {
                0 => CaseOp::Get {
                    user_key: arbitrary_user_key(u, &known)?,
                    seq: arbitrary_seq(u)?,
                },
                1 => CaseOp::Seek {
                    user_key: arbitrary_user_key(u, &known)?,
                    seq: arbitrary_seq(u)?,
                },
                2 => CaseOp::SeekForPrev {
                    user_key: arbitrary_user_key(u, &known)?,
                    seq: arbitrary_seq(u)?,
                },
                3 => CaseOp::First,
                4 => CaseOp::Last,
                5 => CaseOp::Next,
                _ => CaseOp::Prev,
            };
            ops.push(op);
        }
        let format_version = u.int_in_range(
            crate::format::MIN_TABLE_FORMAT_VERSION..=crate::format::TABLE_FORMAT_VERSION,
        )?;
        Ok(TableCase {
            block_size,
            restart_interval,
            index_partition_size,
            lz4,
            filter_bits,
            pin_top,
            pin_filter,
            verify,
            entries,
            ops,
            format_version,
        })
    }
}

/// Target `table_roundtrip` from raw bytes: the [`TableCase`] they make through
/// [`Arbitrary`] (bytes that run out early give a smaller case).
pub fn fuzz_table_roundtrip_bytes(data: &[u8]) -> Outcome {
    match TableCase::arbitrary_take_rest(Unstructured::new(data)) {
        Ok(case) => fuzz_table_roundtrip(&case),
        Err(_) => Outcome::Rejected,
    }
}

/// The model of a table: its entries as `(internal key, value)`, sorted.
type Model = Vec<(Vec<u8>, Vec<u8>)>;

/// What `TableReader::get` must return for `user_key` at `seq`.
fn model_get(model: &Model, user_key: &[u8], seq: u64) -> TableGet {
    model
        .iter()
        .find(|(k, _)| {
            let (u, t) = split_target(k);
            u == user_key && t >> 8 <= seq
        })
        .map_or(TableGet::Absent, |(k, v)| {
            let kind = ValueKind::from_u8(k[k.len() - 8]).expect("model kinds are valid");
            TableGet::Found(kind, v.clone().into())
        })
}

impl TableCase {
    /// The case's entries as (encoded internal key, value), in input order.
    pub fn encoded_entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.entries
            .iter()
            .map(|e| {
                let kind = if e.delete {
                    ValueKind::Delete
                } else {
                    ValueKind::Value
                };
                let k = InternalKey::new(&e.user_key, e.seq, kind);
                (k.encoded().to_vec(), e.value.clone())
            })
            .collect()
    }
}

/// Target `table_roundtrip`: builds a table from the case's entries (sorted,
/// one entry per user key and sequence number) with its options, then checks
/// against the sorted model: the properties, `inspect_table`, full iteration
/// both ways and the compaction scan, a point get of every entry and of each
/// probe (with and without the filter: no false negatives), and the case's
/// sequence of seeks and steps.
pub fn fuzz_table_roundtrip(case: &TableCase) -> Outcome {
    let mut model: Model = case.encoded_entries();
    model.sort_by(|a, b| compare_internal(&a.0, &b.0));
    // One entry per (user key, sequence number), as in a real table.
    model.dedup_by(|a, b| {
        let (ua, ta) = split_target(&a.0);
        let (ub, tb) = split_target(&b.0);
        ua == ub && ta >> 8 == tb >> 8
    });
    let opts = TableBuildOptions {
        block_size: case.block_size,
        block_restart_interval: case.restart_interval,
        index_partition_size: case.index_partition_size,
        compression: if case.lz4 {
            Compression::Lz4
        } else {
            Compression::None
        },
        filter_bits_per_key: case.filter_bits,
        // Odd bit counts take the binary fuse filter (version 3 only).
        filter_kind: if case.filter_bits.is_some_and(|b| b % 2 == 1) {
            crate::table::FilterKind::BinaryFuse
        } else {
            crate::table::FilterKind::Bloom
        },
        format_version: case.format_version,
    };
    let fs = MemFs::new();
    let path = Path::new("/case.sst");
    let writer = fs
        .create_object(path, WriteLifetime::NotSet)
        .expect("MemFs creates a file in its root");
    let mut builder = TableBuilder::new(writer, path.into(), opts);
    for (k, v) in &model {
        builder.add(k, v).expect("sorted entries are accepted");
    }
    let props = builder.finish().expect("MemFs writes");
    assert_eq!(props.num_entries, model.len() as u64);
    let deletions = model
        .iter()
        .filter(|(k, _)| k[k.len() - 8] == ValueKind::Delete as u8)
        .count();
    assert_eq!(props.num_deletions, deletions as u64);
    let file = fs.open_random(path).expect("MemFs opens what it wrote");
    assert_eq!(props.file_size, file.size());

    let layout = inspect_table(file.clone(), path.into()).expect("a built table inspects");
    assert_eq!(layout.properties, props);
    let data_blocks = layout
        .blocks
        .iter()
        .filter(|b| b.kind == crate::table::LayoutKind::Data)
        .count();
    assert_eq!(data_blocks as u64, props.data_blocks);

    let reader = Arc::new(
        TableReader::open(
            file,
            path.into(),
            1,
            read_context(case.verify),
            case.pin_top,
            case.pin_filter,
        )
        .expect("a built table opens"),
    );
    assert_eq!(reader.properties(), &props);
    let limit = model.len();
    let forward = walk_iter(reader.iter().as_mut(), true, limit).expect("iteration");
    assert!(forward == model, "forward iteration differs from the model");
    let mut backward = walk_iter(reader.iter().as_mut(), false, limit).expect("iteration");
    backward.reverse();
    assert!(
        backward == model,
        "backward iteration differs from the model"
    );
    let scan = walk_iter(reader.scan().as_mut(), true, limit).expect("scan");
    assert!(scan == model, "compaction scan differs from the model");

    let check_get = |user_key: &[u8], seq: u64| {
        let want = model_get(&model, user_key, seq);
        let exact = reader.get(user_key, seq, false).expect("get");
        assert_eq!(exact, want, "get {user_key:?} at {seq}");
        let filtered = reader.get(user_key, seq, true).expect("get");
        match (&want, &filtered) {
            (TableGet::Absent, TableGet::FilteredOut) => {}
            _ => assert_eq!(filtered, want, "filtered get {user_key:?} at {seq}"),
        }
    };
    for (k, _) in model.iter().take(256) {
        let (user, trailer) = split_target(k);
        let seq = trailer >> 8;
        check_get(user, seq);
        check_get(user, seq.saturating_sub(1));
    }

    let mut it = reader.iter();
    let mut pos: Option<usize> = None;
    let lower_bound = |target: &[u8]| {
        model
            .iter()
            .position(|(k, _)| compare_internal(k, target) != Ordering::Less)
    };
    let last_at_or_before = |target: &[u8]| {
        model
            .iter()
            .rposition(|(k, _)| compare_internal(k, target) != Ordering::Greater)
    };
    for op in &case.ops {
        match op {
            CaseOp::Get { user_key, seq } => {
                check_get(user_key, *seq);
                continue;
            }
            CaseOp::Seek { user_key, seq } => {
                let t = InternalKey::seek_key(user_key, *seq);
                it.seek(t.encoded());
                pos = lower_bound(t.encoded());
            }
            CaseOp::SeekForPrev { user_key, seq } => {
                let t = InternalKey::seek_key(user_key, *seq);
                it.seek_for_prev(t.encoded());
                pos = last_at_or_before(t.encoded());
            }
            CaseOp::First => {
                it.seek_to_first();
                pos = (!model.is_empty()).then_some(0);
            }
            CaseOp::Last => {
                it.seek_to_last();
                pos = model.len().checked_sub(1);
            }
            CaseOp::Next => {
                if it.valid() {
                    it.next();
                }
                pos = pos.and_then(|p| (p + 1 < model.len()).then_some(p + 1));
            }
            CaseOp::Prev => {
                if it.valid() {
                    it.prev();
                }
                pos = pos.and_then(|p| p.checked_sub(1));
            }
        }
        it.status().expect("iterator status");
        match pos {
            Some(p) => {
                assert!(it.valid(), "{op:?}: iterator invalid, model at {p}");
                assert!(
                    it.key() == &model[p].0[..] && it.value() == &model[p].1[..],
                    "{op:?}: iterator and model disagree at {p}"
                );
            }
            None => assert!(!it.valid(), "{op:?}: iterator valid past the model"),
        }
    }
    Outcome::Decoded
}

// ---------------------------------------------------------------- block traces

/// Target `block_trace`: a block-access trace through
/// [`crate::trace::decode_trace`] (mode bit 0 clear: the bytes after the
/// mode byte as a whole file; set: as the records of one chunk, framed
/// behind a valid header with a correct checksum, so that mutations reach
/// the record decoder). A decoded trace re-encodes (in small chunks) and
/// decodes to itself, and replays at two cache sizes with counts that add
/// up; a rejection names an offset inside the input.
pub fn fuzz_block_trace(data: &[u8]) -> Outcome {
    use crate::trace::{self, BlockTrace, TraceError, TraceHeader, TraceRecord};
    let Some((&mode, rest)) = data.split_first() else {
        return Outcome::Rejected;
    };
    let bytes = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        let empty = BlockTrace {
            header: TraceHeader {
                created_unix_secs: 0,
                table_format_version: 3,
                sample_threshold: trace::SAMPLE_ALL >> (mode >> 5),
                cache_capacity: 1 << 20,
                cache_shards: u32::from(mode >> 1 & 15),
                pinned_at_start: u64::from(mode >> 3 & 3) << 12,
                db: Default::default(),
            },
            records: Vec::new(),
        };
        // The empty trace is its header then one chunk holding the end
        // record: put the input in that chunk, before the end record.
        let mut bytes = trace::encode_trace(&empty, 1);
        let header_len = bytes.len() - 9;
        bytes.truncate(header_len);
        let mut payload = rest.to_vec();
        payload.push(0x07);
        crate::format::put_fixed32(&mut bytes, payload.len() as u32);
        crate::format::put_fixed32(&mut bytes, crc32c::crc32c(&payload));
        bytes.extend_from_slice(&payload);
        bytes
    };
    let t = match trace::decode_trace(&bytes) {
        Ok(t) => t,
        Err(TraceError::Truncated { offset, .. } | TraceError::Damaged { offset, .. }) => {
            assert!(
                offset <= bytes.len() as u64,
                "damage at {offset} past the end"
            );
            return Outcome::Rejected;
        }
        Err(TraceError::NotATrace | TraceError::UnsupportedVersion(_)) => {
            return Outcome::Rejected;
        }
    };
    let again =
        trace::decode_trace(&trace::encode_trace(&t, 64)).expect("an encoded trace decodes");
    assert_eq!(again, t, "block trace round trip");
    let gets = t
        .records
        .iter()
        .filter(|r| matches!(r, TraceRecord::Get { .. }))
        .count() as u64;
    let accesses = t
        .records
        .iter()
        .filter(
            |r| matches!(r, TraceRecord::Access(a) if a.placement != trace::TracePlacement::Held),
        )
        .count() as f64;
    let mut sims = trace::simulate(&t, &[4 << 10, 1 << 20], 1, None, trace::Policy::Shale)
        .expect("two sizes replay");
    sims.extend(
        trace::simulate(&t, &[4 << 10, 1 << 20], 1, None, trace::Policy::Lru)
            .expect("two sizes replay through a plain LRU"),
    );
    for s in &sims {
        assert_eq!(s.gets, gets, "every Get is counted");
        let lookups: f64 = s.kinds.iter().map(|k| k.hits + k.misses).sum();
        let rate = t.header.sample_rate();
        assert!(
            (lookups * rate - accesses).abs() <= 1e-6 * accesses.max(1.0),
            "{lookups} lookups for {accesses} accesses"
        );
    }
    Outcome::Decoded
}

#[cfg(test)]
mod tests;
