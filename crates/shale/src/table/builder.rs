//! Writing a table: data blocks as keys arrive, then at `finish` the filter, the
//! index partitions, the top-level index, the properties and the footer.
//!
//! File grammar (also in `docs/format/table.md`):
//!
//! ```text
//! table := data_block{data_blocks}            // offset 0; v1: back to back,
//!                                              // v2: each on a page boundary
//!          [filter_block]                      // iff filter_bits_per_key is Some
//!          index_partition{index_partitions}   // back to back
//!          top_index                           // one entry per partition
//!          properties                          // tagged fields (see layout.rs)
//!          footer                              // 64 bytes
//!
//! table_v3 := paged_data_block{data_blocks}        // offset 0, whole pages each
//!             paged_filter{filter_partitions}      // iff a filter; each on a page
//!             paged_locator{index_partitions}      // each on a page, the last unpadded
//!             [top_filter_index]                   // key array; the footer's filter handle
//!             top_index                            // key array
//!             properties footer                    // as above
//! ```
//!
//! (`paged_*`, key arrays and locators: see [`super::paged`].)
//!
//! Every block is followed by its 5-byte trailer (see [`super::layout`]). In
//! version 1, data blocks are cut before an entry that would take them past
//! `block_size`. In version 2 each data block starts on a page boundary (zero
//! padding after the previous one) and is cut before the entry that would make
//! it, trailer included, spill past its last page: one page for the default
//! `block_size` of 4 KiB, `ceil(block_size / 4 KiB)` pages for larger ones.
//! A block always holds at least one entry, so an entry larger than that
//! takes whole pages of its own. Data blocks are LZ4-compressed when asked and
//! when that saves at least 1/8 (pages are filled by uncompressed size, so
//! compression saves padding, not reads, in version 2). Index, filter and
//! properties blocks are never compressed.

use std::path::PathBuf;

use shale_env::ObjectWriter;

use super::block::{
    BlockBuilder, EntryFormat, BLOCK_TRAILER_LEN, INDEX_RESTART_INTERVAL, PAGE_SIZE,
};
use super::filter::fuse::{build_fuse, fuse_size};
use super::filter::{build_filter, filter_hash};
use super::index::{short_successor, shortest_separator, IndexBuilder};
use super::layout::{
    block_trailer, encode_properties, lz4_contents, BlockHandle, Footer, FOOTER_LEN,
};
use super::paged::{
    encode_key_array, encode_locator, frame_paged, paged_data_len, BlockSpan, PAGED_TAIL_LEN,
};
use super::{fuse_fingerprint_bits, Compression, FilterKind, TableBuildOptions, TableProperties};
use crate::error::{Error, Result};
use crate::format::{
    compare_internal, parse_internal_key, ValueKind, MIN_TABLE_FORMAT_VERSION,
    RANGE_DEL_TABLE_FORMAT_VERSION, TABLE_FORMAT_VERSION,
};
use crate::rangedel::Fragments;

/// Writes one table through an [`ObjectWriter`].
///
/// Keys must be added in strictly increasing internal order. The builder is not
/// shared between threads. After an error every later call returns it again; the
/// caller should then `abort`. Nothing is durable until `finish` returns.
pub(crate) struct TableBuilder {
    writer: Option<Box<dyn ObjectWriter>>,
    path: PathBuf,
    opts: TableBuildOptions,
    offset: u64,
    data: BlockBuilder,
    /// Handle of the last flushed data block whose index entry waits for the
    /// next key (to compute its separator).
    pending: Option<BlockHandle>,
    pending_last_user_key: Vec<u8>,
    last_key: Vec<u8>,
    index: IndexBuilder,
    filter_hashes: Vec<u64>,
    props: TableProperties,
    /// Versions 2 and 3: the largest a data block may grow, trailer or tail
    /// included (whole pages). `None` in version 1.
    page_budget: Option<usize>,
    /// Version 3: the data blocks written so far, for the locators.
    spans: Vec<BlockSpan>,
    /// Version 3: first user key of the open data block.
    block_first_user_key: Vec<u8>,
    /// Version 3: finished filter partitions (upper-bound separator, filter
    /// contents); `filter_hashes` holds the open one's keys.
    filter_parts: Vec<(Vec<u8>, Vec<u8>)>,
    /// Version 3: keys a filter partition takes before it is cut.
    filter_partition_keys: usize,
    /// Distinct user keys given to the filter so far.
    filter_keys: u64,
    failed: Option<Error>,
    /// Written in the range-deletion block (version 4).
    range_dels: Fragments,
}

/// Keys a filter partition of `kind` and `bits_per_key` takes so that it,
/// with its paged tail, fills at most one page, or `partition_size` bytes if
/// smaller (a Bloom partition has at least one 64-byte line).
pub(crate) fn filter_partition_keys(
    kind: FilterKind,
    bits_per_key: u32,
    partition_size: usize,
) -> usize {
    let room = (PAGE_SIZE as usize)
        .min(partition_size)
        .saturating_sub(PAGED_TAIL_LEN);
    match kind {
        FilterKind::Bloom => {
            let lines = (room.saturating_sub(super::filter::FILTER_TRAILER) / 64).max(1);
            (lines * 512 / bits_per_key.max(1) as usize).max(1)
        }
        FilterKind::BinaryFuse => {
            // The largest count whose filter fits (sizes grow with the count).
            let f = fuse_fingerprint_bits(bits_per_key);
            let (mut lo, mut hi) = (1usize, room * 8 / usize::from(f) + 1);
            while lo + 1 < hi {
                let mid = lo + (hi - lo) / 2;
                if fuse_size(mid, f) <= room {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            lo
        }
    }
}

impl TableBuilder {
    /// A builder writing to `writer`; `path` only names the file in errors.
    pub(crate) fn new(
        writer: Box<dyn ObjectWriter>,
        path: PathBuf,
        opts: TableBuildOptions,
    ) -> TableBuilder {
        // Options are checked where they are set (`Options::validate`); an
        // unknown version here writes the current one rather than a table no
        // reader accepts.
        let version =
            if (MIN_TABLE_FORMAT_VERSION..=TABLE_FORMAT_VERSION).contains(&opts.format_version) {
                opts.format_version
            } else {
                TABLE_FORMAT_VERSION
            };
        let page_budget = (version >= 2).then(|| {
            let pages = (opts.block_size as u64).div_ceil(PAGE_SIZE).max(1);
            usize::try_from(pages * PAGE_SIZE).unwrap_or(usize::MAX)
        });
        let tail = if version >= 3 {
            PAGED_TAIL_LEN
        } else {
            BLOCK_TRAILER_LEN as usize
        };
        let index_format = if version >= 2 {
            EntryFormat::PagedIndex
        } else {
            EntryFormat::Index
        };
        let filter_partition_keys = filter_partition_keys(
            opts.filter_kind,
            opts.filter_bits_per_key.unwrap_or(10),
            opts.index_partition_size,
        );
        let props = TableProperties {
            format_version: version,
            filter_bits_per_key: opts.filter_bits_per_key.unwrap_or(0),
            compression: opts.compression,
            smallest_seqno: u64::MAX,
            ..TableProperties::default()
        };
        TableBuilder {
            writer: Some(writer),
            path,
            data: BlockBuilder::new(EntryFormat::Data, opts.block_restart_interval),
            index: IndexBuilder::new(opts.index_partition_size, index_format),
            opts,
            offset: 0,
            pending: None,
            pending_last_user_key: Vec::new(),
            last_key: Vec::new(),
            filter_hashes: Vec::new(),
            props,
            page_budget: page_budget.map(|b| b - tail + BLOCK_TRAILER_LEN as usize),
            spans: Vec::new(),
            block_first_user_key: Vec::new(),
            filter_parts: Vec::new(),
            filter_partition_keys,
            filter_keys: 0,
            failed: None,
            range_dels: Fragments::default(),
        }
    }

    fn paged(&self) -> bool {
        self.props.format_version >= 3
    }

    /// Appends an entry. `internal_key` must be a valid encoded internal key
    /// greater than every key added before; otherwise `Error::Internal` (the
    /// engine builds tables only from sorted internal keys).
    pub(crate) fn add(&mut self, internal_key: &[u8], value: &[u8]) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let Some(parsed) = parse_internal_key(internal_key) else {
            return Err(Error::Internal("table key is not an internal key".into()));
        };
        if parsed.value_kind() == Some(ValueKind::RangeDelete) {
            return Err(Error::Internal(
                "a range deletion is not a data entry (see set_range_dels)".into(),
            ));
        }
        if self.props.num_entries > 0
            && compare_internal(&self.last_key, internal_key) != std::cmp::Ordering::Less
        {
            return Err(Error::Internal(
                "table keys must be added in increasing order".into(),
            ));
        }
        if u32::try_from(internal_key.len()).is_err() || u32::try_from(value.len()).is_err() {
            return Err(Error::InvalidArgument(
                "key or value longer than 4 GiB".into(),
            ));
        }
        // A version-3 block records its length in 32 bits.
        if self.paged() && internal_key.len() + value.len() > (u32::MAX / 2) as usize {
            return Err(Error::InvalidArgument(
                "entry longer than 2 GiB in a table of format version 3".into(),
            ));
        }
        let user_key = parsed.user_key;
        if !self.data.is_empty() {
            let full = match self.page_budget {
                Some(budget) => {
                    self.data.size_with_data(internal_key, value.len()) + BLOCK_TRAILER_LEN as usize
                        > budget
                }
                None => {
                    let entry_estimate = internal_key.len() + value.len() + 3 * 5 + 4;
                    self.data.estimated_size() + entry_estimate > self.opts.block_size
                }
            };
            if full {
                self.flush_data_block()?;
            }
        }
        if let Some(handle) = self.pending.take() {
            let sep = shortest_separator(&self.pending_last_user_key, user_key);
            self.index.add(&sep, handle.offset, handle.size);
        }
        if self.paged() && self.data.is_empty() {
            self.block_first_user_key.clear();
            self.block_first_user_key.extend_from_slice(user_key);
        }
        let new_user_key = self.props.num_entries == 0 || last_user_key(&self.last_key) != user_key;
        if new_user_key && self.opts.filter_bits_per_key.is_some() {
            if self.paged() && self.filter_hashes.len() >= self.filter_partition_keys {
                let sep = shortest_separator(last_user_key(&self.last_key), user_key);
                self.cut_filter_partition(sep);
            }
            self.filter_hashes.push(filter_hash(user_key));
            self.filter_keys += 1;
        }
        self.data.add_data(internal_key, value);

        let p = &mut self.props;
        if p.num_entries == 0 {
            p.smallest_key = internal_key.to_vec();
        }
        p.num_entries += 1;
        if parsed.kind == ValueKind::Delete as u8 {
            p.num_deletions += 1;
        }
        p.raw_key_bytes += internal_key.len() as u64;
        p.raw_value_bytes += value.len() as u64;
        p.smallest_seqno = p.smallest_seqno.min(parsed.seq);
        p.largest_seqno = p.largest_seqno.max(parsed.seq);
        self.last_key.clear();
        self.last_key.extend_from_slice(internal_key);
        Ok(())
    }

    /// Entries added so far.
    pub(crate) fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// Approximate size of the file if finished now (data written, the open data
    /// block, the index and the filter).
    pub(crate) fn estimated_size(&self) -> u64 {
        let bits = u64::from(self.opts.filter_bits_per_key.unwrap_or(0));
        let index = if self.paged() {
            // About 11 bits a block for hash keys; more for others.
            self.spans.len() as u64 * 2
        } else {
            self.index.estimated_size()
        };
        self.offset
            + self.data.estimated_size() as u64
            + index
            + (self.filter_keys * bits).div_ceil(8)
            + FOOTER_LEN
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        let res = match self.writer.as_mut() {
            Some(w) => w.write(bytes),
            None => Err(std::io::Error::other("table writer already closed")),
        };
        if let Err(e) = res {
            let err = Error::io("write table", &self.path, e);
            self.failed = Some(err.clone());
            return Err(err);
        }
        self.offset += bytes.len() as u64;
        Ok(())
    }

    fn write_block(&mut self, contents: &[u8], compression: Compression) -> Result<BlockHandle> {
        let handle = BlockHandle {
            offset: self.offset,
            size: contents.len() as u64,
        };
        self.write(contents)?;
        self.write(&block_trailer(contents, compression))?;
        Ok(handle)
    }

    /// Version 3: closes the open filter partition, whose keys are all
    /// `<= separator` and the next partition's all greater.
    fn cut_filter_partition(&mut self, separator: Vec<u8>) {
        let bits = self.opts.filter_bits_per_key.unwrap_or(10);
        let contents = match self.opts.filter_kind {
            FilterKind::Bloom => build_filter(&self.filter_hashes, bits),
            FilterKind::BinaryFuse => build_fuse(&self.filter_hashes, fuse_fingerprint_bits(bits)),
        };
        self.filter_hashes.clear();
        self.filter_parts.push((separator, contents));
    }

    /// Pads the file to the next page boundary.
    fn pad_to_page(&mut self) -> Result<u64> {
        let pad = self.offset.next_multiple_of(PAGE_SIZE) - self.offset;
        if pad > 0 {
            self.write(&ZEROS[..pad as usize])?;
        }
        Ok(pad)
    }

    /// Version 3: writes the open data block as a paged block of whole pages.
    fn flush_paged_data_block(&mut self) -> Result<()> {
        let last = last_user_key(self.data.last_key()).to_vec();
        let raw = self.data.finish();
        let compressed = match self.opts.compression {
            Compression::Lz4 => lz4_contents(&raw),
            Compression::None => None,
        };
        let (contents, compression) = match &compressed {
            Some(c) => (c.as_slice(), Compression::Lz4),
            None => (raw.as_slice(), Compression::None),
        };
        let stored = paged_data_len(contents.len());
        let framed = frame_paged(contents, compression, stored);
        self.write(&framed)?;
        self.props.data_blocks += 1;
        self.props.data_bytes += stored as u64;
        self.props.data_padding_bytes += (stored - contents.len() - PAGED_TAIL_LEN) as u64;
        self.spans.push(BlockSpan {
            first: std::mem::take(&mut self.block_first_user_key),
            last,
            pages: stored as u64 / PAGE_SIZE,
        });
        Ok(())
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.paged() {
            return self.flush_paged_data_block();
        }
        if self.page_budget.is_some() {
            let pad = self.offset.next_multiple_of(PAGE_SIZE) - self.offset;
            if pad > 0 {
                self.write(&ZEROS[..pad as usize])?;
                self.props.data_padding_bytes += pad;
            }
        }
        self.pending_last_user_key.clear();
        self.pending_last_user_key
            .extend_from_slice(last_user_key(self.data.last_key()));
        let raw = self.data.finish();
        let compressed = match self.opts.compression {
            Compression::Lz4 => lz4_contents(&raw),
            Compression::None => None,
        };
        let handle = match compressed {
            Some(c) => self.write_block(&c, Compression::Lz4)?,
            None => self.write_block(&raw, Compression::None)?,
        };
        self.props.data_blocks += 1;
        self.props.data_bytes += handle.size + BLOCK_TRAILER_LEN;
        self.pending = Some(handle);
        Ok(())
    }

    /// Sets the table's range deletions, written in its range-deletion block
    /// (version 4 only: `Error::Internal` for an older version, which cannot
    /// carry them).
    pub(crate) fn set_range_dels(&mut self, dels: Fragments) -> Result<()> {
        if !dels.is_empty() && self.props.format_version < RANGE_DEL_TABLE_FORMAT_VERSION {
            return Err(Error::Internal(format!(
                "{}: range deletions in a version-{} table",
                self.path.display(),
                self.props.format_version
            )));
        }
        self.range_dels = dels;
        Ok(())
    }

    /// Writes the rest of the table, makes it durable (`ObjectWriter::finish`) and
    /// returns its properties. An empty table (no entries) is valid.
    pub(crate) fn finish(mut self) -> Result<TableProperties> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if !self.data.is_empty() {
            self.flush_data_block()?;
        }
        if self.paged() {
            return self.finish_paged();
        }
        if let Some(handle) = self.pending.take() {
            let sep = short_successor(&self.pending_last_user_key);
            self.index.add(&sep, handle.offset, handle.size);
        }
        let filter = match self.opts.filter_bits_per_key {
            Some(bits) => {
                let contents = build_filter(&self.filter_hashes, bits);
                let h = self.write_block(&contents, Compression::None)?;
                self.props.filter_bytes = h.size + BLOCK_TRAILER_LEN;
                Some(h)
            }
            None => None,
        };
        let partitions =
            std::mem::replace(&mut self.index, IndexBuilder::new(1, EntryFormat::Index)).finish();
        let mut top = BlockBuilder::new(EntryFormat::Index, INDEX_RESTART_INTERVAL);
        for part in &partitions {
            let h = self.write_block(&part.contents, Compression::None)?;
            self.props.index_partitions += 1;
            self.props.index_partition_bytes += h.size + BLOCK_TRAILER_LEN;
            top.add_index(&part.last_separator, h.offset, h.size);
        }
        let top_index = self.write_block(&top.finish(), Compression::None)?;
        self.props.top_level_index_bytes = top_index.size + BLOCK_TRAILER_LEN;

        self.finish_tail(top_index, filter)
    }

    /// Version 3: the filter partitions, the locators and the two top-level
    /// key arrays, then the common tail.
    fn finish_paged(mut self) -> Result<TableProperties> {
        // Filter partitions, each on its own page.
        let filter_start = self.offset;
        let mut filter_entries = Vec::new();
        if self.opts.filter_bits_per_key.is_some() {
            if !self.filter_hashes.is_empty() {
                let sep = short_successor(last_user_key(&self.last_key));
                self.cut_filter_partition(sep);
            }
            for (separator, contents) in std::mem::take(&mut self.filter_parts) {
                self.pad_to_page()?;
                let framed = frame_paged(&contents, Compression::None, 0);
                self.write(&framed)?;
                self.props.filter_partitions += 1;
                self.props.filter_bytes += framed.len() as u64;
                filter_entries.push((separator, framed.len() as u64));
            }
        }
        // Locators, each on its own page; the last one is not padded.
        self.pad_to_page()?;
        let index_start = self.offset;
        let spans = std::mem::take(&mut self.spans);
        let mut top_entries = Vec::new();
        let mut first_page = 0;
        for (s, e) in partition_spans(&spans, self.opts.index_partition_size) {
            self.pad_to_page()?;
            let contents = encode_locator(first_page, &spans[s..e]);
            let framed = frame_paged(&contents, Compression::None, 0);
            self.write(&framed)?;
            self.props.index_partitions += 1;
            self.props.index_partition_bytes += framed.len() as u64;
            let separator = match (spans.get(e - 1), spans.get(e)) {
                (Some(a), Some(b)) => shortest_separator(&a.last, &b.first),
                (Some(a), None) => short_successor(&a.last),
                _ => Vec::new(),
            };
            top_entries.push((separator, framed.len() as u64));
            first_page += spans[s..e].iter().map(|b| b.pages).sum::<u64>();
        }
        let filter = if self.opts.filter_bits_per_key.is_some() {
            let mut contents = Vec::new();
            encode_key_array(&mut contents, filter_start, &filter_entries);
            let h = self.write_block(&contents, Compression::None)?;
            self.props.top_level_filter_index_bytes = h.size + BLOCK_TRAILER_LEN;
            self.props.filter_bytes += h.size + BLOCK_TRAILER_LEN;
            Some(h)
        } else {
            None
        };
        let mut contents = Vec::new();
        encode_key_array(&mut contents, index_start, &top_entries);
        let top_index = self.write_block(&contents, Compression::None)?;
        self.props.top_level_index_bytes = top_index.size + BLOCK_TRAILER_LEN;
        self.finish_tail(top_index, filter)
    }

    /// The properties block and the footer, then `ObjectWriter::finish`.
    fn finish_tail(
        mut self,
        top_index: BlockHandle,
        filter: Option<BlockHandle>,
    ) -> Result<TableProperties> {
        if let Some((lo, hi)) = self.range_dels.seq_range() {
            // A table's sequence range covers its range deletions too.
            if self.props.num_entries == 0 {
                self.props.smallest_seqno = lo;
            }
            self.props.smallest_seqno = self.props.smallest_seqno.min(lo);
            self.props.largest_seqno = self.props.largest_seqno.max(hi);
            let contents = self.range_dels.encode();
            let h = self.write_block(&contents, Compression::None)?;
            self.props.range_deletions = self.range_dels.count();
            self.props.range_del_bytes = h.size + BLOCK_TRAILER_LEN;
        } else if self.props.num_entries == 0 {
            self.props.smallest_seqno = 0;
        }
        self.props.largest_key = self.last_key.clone();
        let props_len = encode_properties(&self.props).len() as u64;
        self.props.file_size = self.offset + props_len + BLOCK_TRAILER_LEN + FOOTER_LEN;
        let props = encode_properties(&self.props);
        let properties = self.write_block(&props, Compression::None)?;
        let footer = Footer {
            properties,
            top_index,
            filter,
            format_version: self.props.format_version,
        };
        self.write(&footer.encode())?;
        debug_assert_eq!(self.offset, self.props.file_size);
        if let Some(w) = self.writer.take() {
            w.finish()
                .map_err(|e| Error::io("finish table", &self.path, e))?;
        }
        Ok(self.props)
    }

    /// Abandons the table and removes what was written.
    pub(crate) fn abort(mut self) -> Result<()> {
        match self.writer.take() {
            Some(w) => w
                .abort()
                .map_err(|e| Error::io("abort table", &self.path, e)),
            None => Ok(()),
        }
    }
}

/// Cuts the data blocks of a version-3 table into locator partitions, each
/// the longest run from its start whose locator fits one page, or
/// `partition_size` if that is smaller. A locator of one block has no
/// boundary and always fits, so a boundary too long for a page (keys sharing
/// kilobytes of prefix) falls between two locators, in the top-level index.
fn partition_spans(spans: &[BlockSpan], partition_size: usize) -> Vec<(usize, usize)> {
    let budget = (PAGE_SIZE as usize - PAGED_TAIL_LEN).min(partition_size);
    let n = spans.len();
    let mut out = Vec::new();
    let mut s = 0;
    while s < n {
        let fits = |e: usize| encode_locator(0, &spans[s..e]).len() + 10 <= budget;
        // `lo` is accepted, `hi` is not (n + 1: none known yet).
        let (mut lo, mut hi, mut step) = (s + 1, n + 1, 256);
        while lo + 1 < hi {
            let probe = if hi == n + 1 {
                (lo + step).min(n)
            } else {
                lo + (hi - lo) / 2
            };
            if probe <= lo {
                break;
            }
            if fits(probe) {
                lo = probe;
                step *= 2;
            } else {
                hi = probe;
            }
        }
        out.push((s, lo));
        s = lo;
    }
    out
}

/// Padding source: at most a page less one byte is ever written at once.
static ZEROS: [u8; PAGE_SIZE as usize] = [0; PAGE_SIZE as usize];

fn last_user_key(internal_key: &[u8]) -> &[u8] {
    // The builder is given internal keys only (`add` requires them).
    internal_key
        .split_last_chunk::<{ crate::format::TRAILER_LEN }>()
        .map_or(internal_key, |(user, _)| user)
}
