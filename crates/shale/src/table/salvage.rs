//! Salvage of a damaged table block by block (`Db::repair`): every data block
//! whose own checksum holds is recovered, whether or not the footer, the
//! properties, the index or the filter can be read.
//!
//! Recognising a data block without the index (the grammar is in
//! `docs/format/table.md`):
//!
//! - **Version 3.** A data block fills whole pages and its 9-byte tail
//!   `contents_len compression crc` ends its last page, the CRC covering every
//!   byte before it. So at the end of every page the last 9 bytes are read as
//!   a tail: a known compression byte, and a length whose page-rounded stored
//!   size `ceil((len + 9) / 4096)` pages, counted back from this page end,
//!   starts at or after the end of the last block taken, name a candidate;
//!   it is a block if the CRC of its pages holds. One pass over the page ends
//!   finds blocks of any number of pages.
//! - **Version 2.** A data block starts on a page boundary and ends in a
//!   5-byte trailer `compression crc` somewhere in its last page, zeros
//!   padding the rest. At each page start not inside a block taken, the CRC of
//!   the bytes from the page start is extended one byte at a time and compared
//!   at every position with the 4 bytes after a known compression byte: the
//!   first match within reach (the block's handle when the index names it,
//!   else up to [`SCAN_WINDOW`] bytes) is the block; where none matches the
//!   page is skipped.
//! - **Version 1.** Blocks lie back to back from offset 0, so each block
//!   starts where the previous one's trailer ends, found the same way. Damage
//!   breaks that chain: the scan resumes at the next block the index names
//!   (its partitions are read one by one, a damaged one skipped); without a
//!   readable index the rest of the data region is lost.
//!
//! A candidate whose checksum holds is taken only if it decodes as a data
//! block: a valid restart array, at least one entry, every entry parsing as
//! an internal key of a known kind, keys strictly increasing, after the last
//! block taken, and (with readable properties) inside the table's key and
//! sequence-number ranges. A filter or locator partition that happens to fill
//! its page checksums but does not decode: it is not data and not a loss.
//!
//! The footer, the properties and the index are used when they are intact: the
//! properties give the format version, the end of the data region (so that a
//! lost last block is seen), the number of data blocks (so that the loss is
//! counted exactly), the key range and the largest sequence number; the index
//! gives block handles to resume at (versions 1 and 2). With the footer
//! damaged the properties block is found by its own checksum just before the
//! footer; with both damaged the format version is inferred from what the
//! scans recognise, and a lost last data block goes unseen.
//!
//! Nothing here trusts a length or an offset read from the file: every one is
//! bounds-checked and bad bytes are never a panic.

use std::collections::BTreeMap;

use super::block::{Block, Cursor, EntryFormat, BLOCK_TRAILER_LEN, PAGE_SIZE};
use super::filter::{Filter, PartitionFilter};
use super::layout::{decode_properties, decompress, unwrap_block, BlockHandle, Footer, FOOTER_LEN};
use super::paged::{unwrap_paged, KeyArray, Locator, PAGED_TAIL_LEN};
use super::TableProperties;
use crate::format::{
    compare_internal, mask_crc, parse_internal_key, SeqNo, MIN_TABLE_FORMAT_VERSION,
    TABLE_FORMAT_VERSION,
};
use crate::rangedel::Fragments;

/// How far past a block's start a version-1 or -2 scan looks for its trailer
/// when no index entry gives the block's size.
pub(crate) const SCAN_WINDOW: usize = 1 << 20;

/// The window when even the format version is inferred (a version-1 file
/// scanned as version 2 fails at nearly every page).
const INFER_WINDOW: usize = 64 << 10;

const PAGE: usize = PAGE_SIZE as usize;
const TRAILER: usize = BLOCK_TRAILER_LEN as usize;

/// One bound of the internal keys a lost range may have held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum KeyBound {
    /// Nothing is known.
    Unbounded,
    /// The lost entries sort at or past (or, as an upper bound, at or before)
    /// this internal key.
    Included(Vec<u8>),
    /// Strictly past (or before) this internal key.
    Excluded(Vec<u8>),
    /// As an upper bound: strictly before every version of this internal
    /// key's user key (the index shows that the block before it ends in
    /// another user key).
    BeforeUserKey(Vec<u8>),
}

impl KeyBound {
    /// The internal key of the bound, if any.
    pub(crate) fn key(&self) -> Option<&[u8]> {
        match self {
            KeyBound::Unbounded => None,
            KeyBound::Included(k) | KeyBound::Excluded(k) | KeyBound::BeforeUserKey(k) => Some(k),
        }
    }
}

/// A data block recovered intact.
#[derive(Debug)]
pub(crate) struct SalvagedBlock {
    /// Offset of its first byte.
    pub offset: u64,
    /// Bytes it occupies, trailer or tail included (not the padding after a
    /// version-2 block).
    pub len: u64,
    /// The decoded, validated block.
    pub block: Block,
    /// Its first and last internal keys.
    pub first: Vec<u8>,
    pub last: Vec<u8>,
    /// Its number of entries.
    pub entries: u64,
}

impl SalvagedBlock {
    /// Calls `f(internal key, value)` for every entry, in order.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&[u8], &[u8])) {
        let mut c = Cursor::default();
        if c.seek_to_first(&self.block).is_err() {
            return;
        }
        while c.valid() {
            if let Some(v) = c.value(&self.block) {
                f(c.key(), v);
            }
            if c.next(&self.block).is_err() {
                return;
            }
        }
    }
}

/// Bytes of the data region that hold no recovered block, and what they may
/// have held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LostRange {
    pub offset: u64,
    pub len: u64,
    /// The lost entries sort after this bound (the last key of the block
    /// before, or the table's smallest key)...
    pub after: KeyBound,
    /// ...and before this one (the first key of the block after, or the
    /// table's largest key).
    pub before: KeyBound,
}

/// The table's filter as far as it reads: a key it excludes was in no block
/// of the table, lost ones included.
#[derive(Debug)]
pub(crate) enum SalvageFilter {
    /// Versions 1 and 2: one filter.
    Whole(Filter),
    /// Version 3: the top-level filter index and each partition that reads
    /// (`None`: damaged, may hold anything).
    Partitioned {
        index: KeyArray,
        parts: Vec<Option<PartitionFilter>>,
    },
}

impl SalvageFilter {
    /// False only if the table held no entry of `user_key`.
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        match self {
            SalvageFilter::Whole(f) => f.may_contain(user_key),
            SalvageFilter::Partitioned { index, parts } => {
                let i = index.lower_bound(user_key);
                // Past the last separator, which is at or past the largest key.
                if i >= index.len() {
                    return false;
                }
                parts
                    .get(i)
                    .and_then(Option::as_ref)
                    .is_none_or(|f| f.may_contain(user_key))
            }
        }
    }
}

/// What [`salvage_table`] recovered of a table and what it knows was lost.
#[derive(Debug, Default)]
pub(crate) struct TableSalvage {
    /// The format version: read from the footer or properties, or inferred.
    pub format_version: Option<u32>,
    /// True if the version was inferred from the data blocks.
    pub version_inferred: bool,
    /// The properties block, if it reads.
    pub properties: Option<TableProperties>,
    /// The data blocks recovered, in file order.
    pub blocks: Vec<SalvagedBlock>,
    /// The data-region bytes not recovered, in file order.
    pub lost: Vec<LostRange>,
    /// Data blocks the properties count (`None` without them).
    pub expected_blocks: Option<u64>,
    /// End of the data region, when known.
    pub data_end: Option<u64>,
    /// The filter, when the footer and the filter index read.
    pub filter: Option<SalvageFilter>,
    /// Blocks that checksum but are not data blocks (partitions filling
    /// their page): neither recovered nor lost.
    pub non_data_blocks: u64,
    /// What was found damaged besides the data blocks.
    pub notes: Vec<String>,
    /// No footer, properties or data block was recognised: the file tells
    /// nothing of the keys or sequence numbers it may have held (a table
    /// cut short before its first page by a crash, or one destroyed whole).
    pub unrecognised: bool,
    /// The range deletions, when the table's range-deletion block reads.
    pub range_dels: Fragments,
    /// The table had range deletions (or may have: a version-4 table whose
    /// properties are lost) that do not read: any version older than the
    /// table may have been deleted by them.
    pub range_dels_lost: bool,
}

impl TableSalvage {
    /// Data blocks lost: exact with the properties, else the number of lost
    /// ranges (each holds at least one block).
    pub(crate) fn blocks_lost(&self) -> u64 {
        match self.expected_blocks {
            Some(n) => n.saturating_sub(self.blocks.len() as u64),
            None => self.lost.len() as u64,
        }
        .max(u64::from(!self.lost.is_empty()))
    }

    /// Entries recovered.
    pub(crate) fn entries(&self) -> u64 {
        self.blocks.iter().map(|b| b.entries).sum()
    }

    /// The largest sequence number the table may hold (`None`: unknown).
    pub(crate) fn largest_seqno(&self) -> Option<SeqNo> {
        self.properties.as_ref().map(|p| p.largest_seqno)
    }
}

/// Recovers every intact data block of the table in `bytes` (see the module
/// documentation). Never panics, whatever the bytes.
pub(crate) fn salvage_table(bytes: &[u8]) -> TableSalvage {
    let mut out = TableSalvage::default();
    let size = bytes.len();
    let footer = read_footer(bytes, &mut out.notes);
    let properties = match &footer {
        Some(f) => read_properties(bytes, f.properties, f.format_version, &mut out.notes),
        None => find_properties(bytes),
    };
    out.format_version = footer
        .as_ref()
        .map(|f| f.format_version)
        .or(properties.as_ref().map(|p| p.format_version));
    // The end of the data region: from the properties, else from the first
    // block after it that the footer leads to.
    let limit = size.saturating_sub(FOOTER_LEN as usize);
    out.data_end = properties
        .as_ref()
        .and_then(|p| data_end_from_properties(p, limit))
        .or_else(|| {
            let f = footer.as_ref()?;
            data_end_from_footer(bytes, f).filter(|&e| e <= limit as u64)
        });
    out.expected_blocks = properties.as_ref().map(|p| p.data_blocks);
    let check = Check {
        props: properties.as_ref(),
    };
    let region = out.data_end.map_or(limit, |e| e as usize);
    let mut index = IndexInfo::None;
    match out.format_version {
        Some(3 | 4) => {
            out.filter = footer.as_ref().and_then(|f| paged_filter(bytes, f));
            if let Some(f) = &footer {
                index = paged_index(bytes, f, &mut out.notes);
            }
            let (blocks, non_data) = scan_paged(bytes, region, &check);
            out.blocks = blocks;
            out.non_data_blocks = non_data;
        }
        Some(v) => {
            let seps = footer
                .as_ref()
                .map(|f| classic_handles(bytes, f, v, &mut out.notes))
                .unwrap_or_default();
            let known: BTreeMap<u64, u64> = seps.iter().map(|(&o, (s, _))| (o, *s)).collect();
            index = IndexInfo::Classic {
                aligned: v >= 2,
                seps,
            };
            out.filter = footer.as_ref().and_then(|f| whole_filter(bytes, f));
            out.blocks = if v >= 2 {
                scan_aligned(bytes, region, &known, SCAN_WINDOW, &check)
            } else {
                scan_chain(bytes, region, &known, &check)
            };
        }
        None => {
            out.version_inferred = true;
            let (v, blocks, non_data) = infer(bytes, region, &check);
            out.format_version = v;
            out.blocks = blocks;
            out.non_data_blocks = non_data;
        }
    }
    out.unrecognised = footer.is_none() && properties.is_none() && out.blocks.is_empty();
    match (&footer, &properties) {
        // The footer places the block: all between the top-level index and
        // the properties (nothing there: the table has none).
        (Some(f), _) if f.format_version >= crate::format::RANGE_DEL_TABLE_FORMAT_VERSION => {
            match read_range_dels(bytes, f) {
                Ok(dels) => out.range_dels = dels,
                Err(reason) => {
                    out.notes.push(format!("range-deletion block: {reason}"));
                    out.range_dels_lost = true;
                }
            }
        }
        (None, Some(p)) if p.range_del_bytes > 0 => {
            out.notes
                .push("footer lost: the range-deletion block cannot be placed".into());
            out.range_dels_lost = true;
        }
        _ => {}
    }
    out.properties = properties;
    // A file in which nothing is recognised tells no key range: its bytes
    // are not taken for lost data blocks (see `unrecognised`).
    if !out.unrecognised {
        out.lost = lost_ranges(&out, region as u64, &index);
    }
    out
}

/// The range-deletion block of a version-4 table: the bytes between the
/// top-level index and the properties (none: no block).
fn read_range_dels(bytes: &[u8], f: &Footer) -> Result<Fragments, String> {
    let (start, end) = (f.top_index.end(), f.properties.offset);
    if start == end {
        return Ok(Fragments::default());
    }
    let block = usize::try_from(start)
        .ok()
        .zip(usize::try_from(end).ok())
        .and_then(|(s, e)| bytes.get(s..e))
        .ok_or("out of place")?
        .to_vec();
    let contents = unwrap_block(block, true).map_err(|c| c.0.to_string())?;
    Fragments::decode(&contents)
}

/// What the index still tells about block boundaries.
enum IndexInfo {
    None,
    /// Version 3: the top-level index and each locator that reads.
    Paged {
        top: KeyArray,
        parts: Vec<Option<Locator>>,
    },
    /// Versions 1 and 2: each data block's handle size and separator, by
    /// offset.
    Classic {
        aligned: bool,
        seps: BTreeMap<u64, (u64, Vec<u8>)>,
    },
}

impl IndexInfo {
    /// False if the index shows that the data block before the one at
    /// `offset` (whose first user key is `first_user`) holds no version of
    /// `first_user`; true if it may, or the index cannot tell.
    fn may_continue(&self, offset: u64, first_user: &[u8]) -> bool {
        match self {
            IndexInfo::None => true,
            IndexInfo::Paged { top, parts } => {
                if !offset.is_multiple_of(PAGE_SIZE) {
                    return true;
                }
                let page = offset / PAGE_SIZE;
                for (p, part) in parts.iter().enumerate() {
                    let Some(loc) = part else {
                        continue;
                    };
                    for g in 0..loc.len() {
                        if loc.pages(g).0 != page {
                            continue;
                        }
                        // Between partitions the top-level key separates
                        // them unless one user key continues across.
                        if g == 0 {
                            return p == 0 || top.key_eq(p - 1, first_user);
                        }
                        return loc.continues(g, first_user);
                    }
                }
                true
            }
            IndexInfo::Classic { aligned, seps } => {
                // The block that ends where this one starts, and its
                // separator: at least its last user key, below the next
                // block's first unless one user key continues.
                let before = seps.range(..offset).next_back();
                match before {
                    Some((&o, (size, sep))) => {
                        let end = o.saturating_add(*size).saturating_add(BLOCK_TRAILER_LEN);
                        let end = if *aligned {
                            end.next_multiple_of(PAGE_SIZE)
                        } else {
                            end
                        };
                        end != offset || sep.as_slice() >= first_user
                    }
                    None => true,
                }
            }
        }
    }
}

/// Version 3: the top-level index and its locators (a damaged one `None`).
fn paged_index(bytes: &[u8], f: &Footer, notes: &mut Vec<String>) -> IndexInfo {
    let Some(top) = classic_block(bytes, f.top_index).and_then(|c| KeyArray::new(c).ok()) else {
        notes.push(format!(
            "top-level index at {}: unreadable",
            f.top_index.offset
        ));
        return IndexInfo::None;
    };
    let parts = (0..top.len())
        .map(|i| {
            let loc =
                paged_block(bytes, top.offset(i), top.value(i)).and_then(|c| Locator::new(c).ok());
            if loc.is_none() {
                notes.push(format!("locator at {}: unreadable", top.offset(i)));
            }
            loc
        })
        .collect();
    IndexInfo::Paged { top, parts }
}

/// What a recovered block must agree with.
struct Check<'a> {
    props: Option<&'a TableProperties>,
}

impl Check<'_> {
    /// Decodes `contents` as a data block and validates it (see the module
    /// documentation); `None` if it is not one.
    fn data_block(&self, contents: Vec<u8>, offset: u64, len: u64) -> Option<SalvagedBlock> {
        let block = Block::new(contents, EntryFormat::Data).ok()?;
        let mut c = Cursor::default();
        c.seek_to_first(&block).ok()?;
        if !c.valid() {
            return None;
        }
        let first = c.key().to_vec();
        let mut last = first.clone();
        let mut entries = 0u64;
        loop {
            let ik = parse_internal_key(c.key())?;
            if let Some(p) = self.props {
                if ik.seq < p.smallest_seqno || ik.seq > p.largest_seqno {
                    return None;
                }
            }
            c.value(&block)?;
            entries += 1;
            if entries > block.size() as u64 {
                return None;
            }
            c.next(&block).ok()?;
            if !c.valid() {
                break;
            }
            if compare_internal(&last, c.key()) != std::cmp::Ordering::Less {
                return None;
            }
            last.clear();
            last.extend_from_slice(c.key());
        }
        if let Some(p) = self.props {
            let outside = |k: &[u8], bound: &[u8], o| {
                bound.len() >= crate::format::TRAILER_LEN && compare_internal(k, bound) == o
            };
            if outside(&first, &p.smallest_key, std::cmp::Ordering::Less)
                || outside(&last, &p.largest_key, std::cmp::Ordering::Greater)
            {
                return None;
            }
        }
        Some(SalvagedBlock {
            offset,
            len,
            block,
            first,
            last,
            entries,
        })
    }
}

/// True if `b` may follow the blocks taken so far (keys keep increasing).
fn follows(blocks: &[SalvagedBlock], b: &SalvagedBlock) -> bool {
    blocks
        .last()
        .is_none_or(|prev| compare_internal(&prev.last, &b.first) == std::cmp::Ordering::Less)
}

fn read_footer(bytes: &[u8], notes: &mut Vec<String>) -> Option<Footer> {
    let at = bytes.len().checked_sub(FOOTER_LEN as usize)?;
    match Footer::decode(bytes.get(at..)?) {
        Ok(f) if (MIN_TABLE_FORMAT_VERSION..=TABLE_FORMAT_VERSION).contains(&f.format_version) => {
            Some(f)
        }
        Ok(f) => {
            notes.push(format!(
                "footer at {at}: unknown format version {}",
                f.format_version
            ));
            None
        }
        Err(c) => {
            notes.push(format!("footer at {at}: {}", c.0));
            None
        }
    }
}

/// The bytes of a classic block (contents and trailer), checked and
/// decompressed.
fn classic_block(bytes: &[u8], h: BlockHandle) -> Option<Vec<u8>> {
    let start = usize::try_from(h.offset).ok()?;
    let end = usize::try_from(h.end()).ok()?;
    unwrap_block(bytes.get(start..end)?.to_vec(), true).ok()
}

/// The contents of a paged block of `len` stored bytes at `offset`, checked.
fn paged_block(bytes: &[u8], offset: u64, len: u64) -> Option<Vec<u8>> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    unwrap_paged(bytes.get(start..end)?.to_vec(), true).ok()
}

fn read_properties(
    bytes: &[u8],
    h: BlockHandle,
    version: u32,
    notes: &mut Vec<String>,
) -> Option<TableProperties> {
    let props = classic_block(bytes, h).and_then(|c| decode_properties(&c).ok());
    match props {
        Some(p) if p.format_version == version && p.file_size == bytes.len() as u64 => Some(p),
        _ => {
            notes.push(format!("properties at {}: unreadable", h.offset));
            None
        }
    }
}

/// With the footer damaged: the properties block just before it, found by
/// its first property (the format version, tag 1, one byte) and its
/// checksum.
fn find_properties(bytes: &[u8]) -> Option<TableProperties> {
    let end = bytes.len().checked_sub(FOOTER_LEN as usize)?;
    let body_end = end.checked_sub(TRAILER)?;
    let lowest = body_end.saturating_sub(64 << 10);
    for start in (lowest..body_end).rev() {
        let Some(&[1, 1, v]) = bytes.get(start..start + 3) else {
            continue;
        };
        if !(MIN_TABLE_FORMAT_VERSION..=TABLE_FORMAT_VERSION).contains(&u32::from(v)) {
            continue;
        }
        let h = BlockHandle {
            offset: start as u64,
            size: (body_end - start) as u64,
        };
        let Some(p) = classic_block(bytes, h).and_then(|c| decode_properties(&c).ok()) else {
            continue;
        };
        if p.file_size == bytes.len() as u64 && p.format_version == u32::from(v) {
            return Some(p);
        }
    }
    None
}

fn data_end_from_properties(p: &TableProperties, limit: usize) -> Option<u64> {
    let end = if p.format_version >= 3 {
        Some(p.data_bytes).filter(|b| b.is_multiple_of(PAGE_SIZE))
    } else {
        p.data_bytes.checked_add(p.data_padding_bytes)
    }?;
    (end <= limit as u64).then_some(end)
}

/// The end of the data region from the first block after it: the filter
/// (version 3: the top-level filter index's base; versions 1-2: the filter
/// block) or else the first index partition.
fn data_end_from_footer(bytes: &[u8], f: &Footer) -> Option<u64> {
    if f.format_version >= 3 {
        let base = |h: BlockHandle| {
            let keys = KeyArray::new(classic_block(bytes, h)?).ok()?;
            (keys.len() > 0).then(|| keys.offset(0))
        };
        return f.filter.and_then(base).or_else(|| base(f.top_index));
    }
    if let Some(filter) = f.filter {
        return Some(filter.offset);
    }
    let top = Block::new(classic_block(bytes, f.top_index)?, EntryFormat::Index).ok()?;
    let mut c = Cursor::default();
    c.seek_to_first(&top).ok()?;
    c.valid().then(|| c.handle().0)
}

/// Versions 1 and 2: the data block handles the index still names (a
/// damaged top-level index or partition names none of its blocks).
fn classic_handles(
    bytes: &[u8],
    f: &Footer,
    version: u32,
    notes: &mut Vec<String>,
) -> BTreeMap<u64, (u64, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let Some(top) =
        classic_block(bytes, f.top_index).and_then(|c| Block::new(c, EntryFormat::Index).ok())
    else {
        notes.push(format!(
            "top-level index at {}: unreadable",
            f.top_index.offset
        ));
        return out;
    };
    let format = if version >= 2 {
        EntryFormat::PagedIndex
    } else {
        EntryFormat::Index
    };
    let walk = |block: &Block, f: &mut dyn FnMut(u64, u64, &[u8])| -> bool {
        let mut c = Cursor::default();
        if c.seek_to_first(block).is_err() {
            return false;
        }
        let mut steps = 0;
        while c.valid() && steps <= block.size() {
            let (offset, size) = c.handle();
            f(offset, size, c.key());
            if c.next(block).is_err() {
                return false;
            }
            steps += 1;
        }
        true
    };
    let mut partitions = Vec::new();
    if !walk(&top, &mut |o, s, _| {
        partitions.push(BlockHandle { offset: o, size: s })
    }) {
        notes.push(format!(
            "top-level index at {}: damaged",
            f.top_index.offset
        ));
    }
    for h in partitions {
        let part = classic_block(bytes, h).and_then(|c| Block::new(c, format).ok());
        let ok = part.is_some_and(|p| walk(&p, &mut |o, s, k| _ = out.insert(o, (s, k.to_vec()))));
        if !ok {
            notes.push(format!("index partition at {}: unreadable", h.offset));
        }
    }
    out
}

fn whole_filter(bytes: &[u8], f: &Footer) -> Option<SalvageFilter> {
    let contents = classic_block(bytes, f.filter?)?;
    Filter::new(contents).ok().map(SalvageFilter::Whole)
}

fn paged_filter(bytes: &[u8], f: &Footer) -> Option<SalvageFilter> {
    let index = KeyArray::new(classic_block(bytes, f.filter?)?).ok()?;
    let parts = (0..index.len())
        .map(|i| {
            let contents = paged_block(bytes, index.offset(i), index.value(i))?;
            PartitionFilter::new(contents).ok()
        })
        .collect();
    Some(SalvageFilter::Partitioned { index, parts })
}

/// Version 3: every data block in `bytes[..end]`, recognised by the tail at
/// the end of its last page. Also returns how many checksummed paged blocks
/// were not data.
fn scan_paged(bytes: &[u8], end: usize, check: &Check<'_>) -> (Vec<SalvagedBlock>, u64) {
    let mut blocks: Vec<SalvagedBlock> = Vec::new();
    let mut non_data = 0;
    let mut taken_end = 0usize;
    let end = end.min(bytes.len());
    let mut e = PAGE;
    while e <= end {
        if let Some(b) = paged_at(bytes, taken_end, e, check, &mut non_data) {
            if follows(&blocks, &b) {
                taken_end = e;
                blocks.push(b);
            }
        }
        e += PAGE;
    }
    (blocks, non_data)
}

/// The data block whose last page ends at `e` and starts at or after `from`.
fn paged_at(
    bytes: &[u8],
    from: usize,
    e: usize,
    check: &Check<'_>,
    non_data: &mut u64,
) -> Option<SalvagedBlock> {
    let tail = bytes.get(e.checked_sub(PAGED_TAIL_LEN)?..e)?;
    let &[l0, l1, l2, l3, ctype, c0, c1, c2, c3] = tail else {
        return None;
    };
    if ctype > 1 {
        return None;
    }
    let len = u32::from_le_bytes([l0, l1, l2, l3]) as usize;
    let stored =
        usize::try_from((len as u64 + PAGED_TAIL_LEN as u64).next_multiple_of(PAGE_SIZE)).ok()?;
    let start = e.checked_sub(stored).filter(|&s| s >= from)?;
    let crc = crc32c::crc32c(bytes.get(start..e - 4)?);
    if mask_crc(crc) != u32::from_le_bytes([c0, c1, c2, c3]) {
        return None;
    }
    let contents = bytes.get(start..start + len)?.to_vec();
    let block = decompress(contents, ctype)
        .ok()
        .and_then(|c| check.data_block(c, start as u64, stored as u64));
    if block.is_none() {
        *non_data += 1;
    }
    block
}

/// A classic data block (contents, compression byte, CRC) starting at
/// `start` whose trailer ends at most at `limit`: the first position where
/// the CRC of the bytes so far matches and the block decodes.
fn classic_at(
    bytes: &[u8],
    start: usize,
    limit: usize,
    check: &Check<'_>,
) -> Option<(usize, SalvagedBlock)> {
    let limit = limit.min(bytes.len());
    // The compression byte can be at any position up to `limit - TRAILER`.
    let body = bytes.get(start..limit.checked_sub(TRAILER - 1)?)?;
    let mut crc = 0u32;
    let mut done = 0usize;
    // Only a position holding a known compression byte can end the contents.
    for (i, &ctype) in body.iter().enumerate() {
        if ctype > 1 {
            continue;
        }
        crc = crc32c::crc32c_append(crc, body.get(done..i)?);
        done = i;
        let t = start + i;
        let stored = bytes.get(t + 1..t + TRAILER)?;
        let stored = u32::from_le_bytes([stored[0], stored[1], stored[2], stored[3]]);
        if mask_crc(crc32c::crc32c_append(crc, &[ctype])) != stored {
            continue;
        }
        let contents = body.get(..i)?.to_vec();
        let Ok(contents) = decompress(contents, ctype) else {
            continue;
        };
        let len = (i + TRAILER) as u64;
        if let Some(b) = check.data_block(contents, start as u64, len) {
            return Some((t + TRAILER, b));
        }
    }
    None
}

/// The block at a handle the index gives.
fn classic_known(
    bytes: &[u8],
    offset: u64,
    size: u64,
    end: usize,
    check: &Check<'_>,
) -> Option<SalvagedBlock> {
    let h = BlockHandle { offset, size };
    if h.end() > end as u64 {
        return None;
    }
    let contents = classic_block(bytes, h)?;
    check.data_block(contents, offset, size + BLOCK_TRAILER_LEN)
}

/// Version 2: blocks on page boundaries in `bytes[..end]`.
fn scan_aligned(
    bytes: &[u8],
    end: usize,
    known: &BTreeMap<u64, u64>,
    window: usize,
    check: &Check<'_>,
) -> Vec<SalvagedBlock> {
    let mut blocks: Vec<SalvagedBlock> = Vec::new();
    let end = end.min(bytes.len());
    let mut pos = 0usize;
    while pos < end {
        let mut next = pos + PAGE;
        let found = match known.get(&(pos as u64)) {
            Some(&size) => {
                next = usize::try_from(size).map_or(usize::MAX, |s| {
                    pos.saturating_add(s).saturating_add(TRAILER)
                });
                classic_known(bytes, pos as u64, size, end, check)
            }
            None => {
                classic_at(bytes, pos, end.min(pos.saturating_add(window)), check).map(|(e, b)| {
                    next = e;
                    b
                })
            }
        };
        if let Some(b) = found.filter(|b| follows(&blocks, b)) {
            next = (b.offset + b.len) as usize;
            blocks.push(b);
        }
        pos = next.max(pos + 1).next_multiple_of(PAGE);
    }
    blocks
}

/// Version 1: blocks back to back from offset 0, resuming after damage at
/// the next block the index names.
fn scan_chain(
    bytes: &[u8],
    end: usize,
    known: &BTreeMap<u64, u64>,
    check: &Check<'_>,
) -> Vec<SalvagedBlock> {
    let mut blocks: Vec<SalvagedBlock> = Vec::new();
    let end = end.min(bytes.len());
    let mut pos = 0usize;
    while pos < end {
        let next_known = known
            .range(pos as u64 + 1..)
            .next()
            .map(|(&o, _)| usize::try_from(o).unwrap_or(usize::MAX));
        let found = match known.get(&(pos as u64)) {
            Some(&size) => classic_known(bytes, pos as u64, size, end, check),
            None => {
                let limit = next_known
                    .unwrap_or(end)
                    .min(pos.saturating_add(SCAN_WINDOW));
                classic_at(bytes, pos, limit, check).map(|(_, b)| b)
            }
        };
        match found.filter(|b| follows(&blocks, b)) {
            Some(b) => {
                pos = (b.offset + b.len) as usize;
                blocks.push(b);
            }
            None => match (known.get(&(pos as u64)), next_known) {
                (Some(&size), _) => {
                    pos = pos.saturating_add(usize::try_from(size).unwrap_or(usize::MAX)) + TRAILER
                }
                (None, Some(n)) => pos = n,
                (None, None) => break,
            },
        }
    }
    blocks
}

/// Footer and properties both unreadable: the version whose scan recovers
/// the most (version 3 first: its tails are unmistakable).
fn infer(bytes: &[u8], end: usize, check: &Check<'_>) -> (Option<u32>, Vec<SalvagedBlock>, u64) {
    let (paged, non_data) = scan_paged(bytes, end, check);
    if !paged.is_empty() {
        return (Some(3), paged, non_data);
    }
    let none = BTreeMap::new();
    let chain = scan_chain(bytes, end, &none, check);
    if chain.len() >= 2 {
        return (Some(1), chain, 0);
    }
    let aligned = scan_aligned(bytes, end, &none, INFER_WINDOW, check);
    if aligned.len() > chain.len() {
        (Some(2), aligned, 0)
    } else if chain.is_empty() {
        (None, chain, 0)
    } else {
        (Some(1), chain, 0)
    }
}

/// The data-region bytes between the recovered blocks (padding after a
/// version-2 block excluded), with the keys they may have held.
fn lost_ranges(s: &TableSalvage, region_end: u64, index: &IndexInfo) -> Vec<LostRange> {
    let aligned = s.format_version.unwrap_or(3) >= 2;
    let round = |x: u64| {
        if aligned {
            x.next_multiple_of(PAGE_SIZE)
        } else {
            x
        }
    };
    let props = s.properties.as_ref();
    let smallest = props
        .map(|p| p.smallest_key.clone())
        .filter(|k| k.len() >= crate::format::TRAILER_LEN)
        .map_or(KeyBound::Unbounded, KeyBound::Included);
    let largest = props
        .map(|p| p.largest_key.clone())
        .filter(|k| k.len() >= crate::format::TRAILER_LEN)
        .map_or(KeyBound::Unbounded, KeyBound::Included);
    // Without a known end, the bytes after the last block recovered are
    // taken for the blocks that follow the data (filter, index).
    let end = match (s.data_end, s.blocks.last()) {
        (Some(e), _) => e,
        (None, Some(last)) => last.offset + last.len,
        (None, None) => region_end,
    };
    let mut out = Vec::new();
    let mut pos = 0u64;
    let mut after = smallest;
    for b in &s.blocks {
        if b.offset > pos {
            let first_user = parse_internal_key(&b.first).map_or(&[][..], |ik| ik.user_key);
            let before = if index.may_continue(b.offset, first_user) {
                KeyBound::Excluded(b.first.clone())
            } else {
                KeyBound::BeforeUserKey(b.first.clone())
            };
            out.push(LostRange {
                offset: pos,
                len: b.offset - pos,
                after: after.clone(),
                before,
            });
        }
        pos = round(b.offset + b.len);
        after = KeyBound::Excluded(b.last.clone());
    }
    if end > pos {
        out.push(LostRange {
            offset: pos,
            len: end - pos,
            after,
            before: largest,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{InternalKey, ValueKind};
    use crate::table::test_util::{MemWriter, Rng};
    use crate::table::{Compression, FilterKind, TableBuildOptions, TableBuilder};

    type Entries = Vec<(Vec<u8>, Vec<u8>)>;

    /// A table of `n` entries (32-byte keys, 110-byte values) and its
    /// entries in order.
    fn table(version: u32, n: usize, compression: Compression) -> (Vec<u8>, Entries) {
        let mut rng = Rng::new(u64::from(version) * 1000 + n as u64);
        let mut keys: Vec<[u8; 32]> = (0..n).map(|_| rng.bytes32()).collect();
        keys.sort();
        keys.dedup();
        let entries: Vec<(Vec<u8>, Vec<u8>)> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let kind = if i % 17 == 3 {
                    ValueKind::Delete
                } else {
                    ValueKind::Value
                };
                let ik = InternalKey::new(k, 100 + i as u64, kind).encoded().to_vec();
                let v = if kind == ValueKind::Delete {
                    Vec::new()
                } else {
                    rng.bytes(110)
                };
                (ik, v)
            })
            .collect();
        let (w, buf) = MemWriter::new();
        let mut b = TableBuilder::new(
            Box::new(w),
            "/t".into(),
            TableBuildOptions {
                format_version: version,
                compression,
                filter_kind: FilterKind::BinaryFuse,
                filter_bits_per_key: Some(9),
                index_partition_size: 1024,
                ..TableBuildOptions::default()
            },
        );
        for (k, v) in &entries {
            b.add(k, v).expect("add");
        }
        b.finish().expect("finish");
        let bytes = buf.lock().expect("buf").clone();
        (bytes, entries)
    }

    fn recovered(s: &TableSalvage) -> Entries {
        let mut out = Vec::new();
        for b in &s.blocks {
            b.for_each(|k, v| out.push((k.to_vec(), v.to_vec())));
        }
        out
    }

    fn layout(bytes: &[u8]) -> crate::table::TableLayout {
        let file = crate::table::test_util::MemFile::new(bytes.to_vec());
        crate::table::inspect_table(file, "/t".into()).expect("layout")
    }

    #[test]
    fn an_intact_table_is_recovered_whole_in_every_version() {
        for version in 1..=3 {
            for compression in [Compression::None, Compression::Lz4] {
                let (bytes, entries) = table(version, 3000, compression);
                let s = salvage_table(&bytes);
                assert_eq!(s.format_version, Some(version));
                assert!(s.lost.is_empty(), "v{version}: {:?}", s.lost);
                assert!(recovered(&s) == entries, "v{version} {compression:?}");
                assert_eq!(s.blocks_lost(), 0);
                assert_eq!(Some(s.blocks.len() as u64), s.expected_blocks);
                assert!(s.filter.is_some(), "v{version}");
            }
        }
    }

    #[test]
    fn a_damaged_data_block_loses_only_its_entries() {
        for version in 1..=3 {
            let (bytes, entries) = table(version, 3000, Compression::None);
            let data: Vec<_> = layout(&bytes)
                .blocks
                .into_iter()
                .filter(|b| b.kind == crate::table::LayoutKind::Data)
                .collect();
            for victim in [0, data.len() / 2, data.len() - 1] {
                let mut bad = bytes.clone();
                bad[data[victim].offset as usize + 100] ^= 0x10;
                let s = salvage_table(&bad);
                let got = recovered(&s);
                assert_eq!(s.blocks.len(), data.len() - 1, "v{version} block {victim}");
                assert_eq!(s.blocks_lost(), 1);
                assert_eq!(s.lost.len(), 1, "v{version} block {victim}: {:?}", s.lost);
                let lost = &s.lost[0];
                assert_eq!(lost.offset, data[victim].offset, "v{version}");
                // The index shows that the next block starts a new user key.
                if version < 3 && victim + 1 < data.len() {
                    assert!(
                        matches!(lost.before, KeyBound::BeforeUserKey(_)),
                        "v{version}: {:?}",
                        lost.before
                    );
                }
                // Every entry outside the lost block is there, and the lost
                // ones lie inside the range reported.
                let missing: Vec<_> = entries.iter().filter(|e| !got.contains(e)).collect();
                assert!(!missing.is_empty());
                assert_eq!(got.len() + missing.len(), entries.len());
                for (k, _) in missing {
                    if let Some(a) = lost.after.key() {
                        assert_ne!(compare_internal(k, a), std::cmp::Ordering::Less);
                    }
                    if let Some(b) = lost.before.key() {
                        assert_ne!(compare_internal(k, b), std::cmp::Ordering::Greater);
                    }
                }
            }
        }
    }

    #[test]
    fn damaged_metadata_loses_no_entry() {
        for version in 1..=3 {
            let (bytes, entries) = table(version, 3000, Compression::None);
            let l = layout(&bytes);
            let mut spots: Vec<(String, usize)> = l
                .blocks
                .iter()
                .filter(|b| b.kind != crate::table::LayoutKind::Data)
                .map(|b| (b.kind.to_string(), b.offset as usize + 2))
                .collect();
            spots.push(("footer".into(), bytes.len() - 30));
            spots.push(("footer magic".into(), bytes.len() - 2));
            for (what, at) in spots {
                let mut bad = bytes.clone();
                bad[at] ^= 0x04;
                let s = salvage_table(&bad);
                let got = recovered(&s);
                assert!(
                    got == entries,
                    "v{version} {what}: {} of {} entries, {:?} {:?}",
                    got.len(),
                    entries.len(),
                    s.notes,
                    s.lost
                );
                assert!(s.lost.is_empty(), "v{version} {what}: {:?}", s.lost);
                assert_eq!(s.format_version, Some(version), "v{version} {what}");
            }
            // Footer and properties both gone: the version is inferred.
            let mut bad = bytes.clone();
            let n = bad.len();
            bad[n - 30] ^= 1;
            let props = l
                .blocks
                .iter()
                .find(|b| b.kind == crate::table::LayoutKind::Properties)
                .expect("props");
            bad[props.offset as usize + 1] ^= 1;
            let s = salvage_table(&bad);
            assert!(s.version_inferred);
            assert_eq!(s.format_version, Some(version));
            assert!(recovered(&s) == entries, "v{version} footer and properties");
        }
    }

    #[test]
    fn blocks_of_several_pages_are_recovered_and_lost_whole() {
        // Every 7th value is 10 KiB: a data block of three pages of its own.
        for version in [2, 3] {
            let mut rng = Rng::new(11);
            let mut keys: Vec<[u8; 32]> = (0..400).map(|_| rng.bytes32()).collect();
            keys.sort();
            let entries: Entries = keys
                .iter()
                .enumerate()
                .map(|(i, k)| {
                    let ik = InternalKey::new(k, 7 + i as u64, ValueKind::Value);
                    let n = if i % 7 == 0 { 10_000 } else { 100 };
                    (ik.encoded().to_vec(), rng.bytes(n))
                })
                .collect();
            let (w, buf) = MemWriter::new();
            let opts = TableBuildOptions {
                format_version: version,
                ..TableBuildOptions::default()
            };
            let mut b = TableBuilder::new(Box::new(w), "/t".into(), opts);
            for (k, v) in &entries {
                b.add(k, v).expect("add");
            }
            b.finish().expect("finish");
            let bytes = buf.lock().expect("buf").clone();
            assert!(recovered(&salvage_table(&bytes)) == entries, "v{version}");
            let big: Vec<_> = layout(&bytes)
                .blocks
                .into_iter()
                .filter(|b| b.kind == crate::table::LayoutKind::Data && b.size > 8192)
                .collect();
            assert!(big.len() > 10, "v{version}");
            // Damage the second page of one: only its entry is lost.
            let victim = &big[big.len() / 2];
            let mut bad = bytes.clone();
            bad[victim.offset as usize + 5000] ^= 1;
            // And the footer, so that nothing but the pages tells the blocks.
            let n = bad.len();
            bad[n - 40] ^= 1;
            let s = salvage_table(&bad);
            let got = recovered(&s);
            assert_eq!(got.len(), entries.len() - 1, "v{version}");
            assert_eq!(s.lost.len(), 1, "v{version}");
            assert_eq!(s.lost[0].offset, victim.offset, "v{version}");
            assert!(s.lost[0].len >= 3 * 4096, "v{version}: {:?}", s.lost[0]);
        }
    }

    #[test]
    fn the_filter_excludes_keys_the_table_never_held() {
        let (bytes, entries) = table(3, 5000, Compression::None);
        let s = salvage_table(&bytes);
        let f = s.filter.as_ref().expect("filter");
        for (k, _) in &entries {
            let user = &k[..k.len() - 8];
            assert!(f.may_contain(user));
        }
        let mut rng = Rng::new(5);
        let passed = (0..2000).filter(|_| f.may_contain(&rng.bytes32())).count();
        assert!(passed < 100, "{passed} of 2000 absent keys pass");
    }

    #[test]
    fn garbage_never_panics() {
        let (bytes, _) = table(3, 500, Compression::Lz4);
        let mut rng = Rng::new(9);
        for _ in 0..200 {
            let mut bad = bytes.clone();
            for _ in 0..1 + rng.index(20) {
                let i = rng.index(bad.len());
                bad[i] = rng.next_u64() as u8;
            }
            if rng.below(4) == 0 {
                bad.truncate(rng.index(bad.len()));
            }
            let _ = salvage_table(&bad);
        }
        for n in [0, 1, 9, 64, 4096, 4105, 20_000] {
            for bytes in [vec![0u8; n], rng.bytes(n)] {
                let s = salvage_table(&bytes);
                // Nothing recognised: no key range to speak of.
                assert!(s.unrecognised && s.lost.is_empty() && s.blocks.is_empty());
            }
        }
    }
}
