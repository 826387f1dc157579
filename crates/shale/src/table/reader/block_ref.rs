//! Where a block of a table lies ([`BlockRef`]: a classic block and its
//! trailer, or a paged block), reading its bytes and unwrapping them
//! (trailer or page checks), decoding a data block, and a compaction's
//! read-ahead. Below both the fetch through the cache (`block_io`) and the
//! batch path (`batch`).

use std::path::Path;
use std::sync::Arc;

use shale_env::RandomAccessFile;

use crate::error::{Error, Result};
use crate::metrics::{BlockKind, Stats};
use crate::table::block::{Block, Corrupt, EntryFormat, BLOCK_TRAILER_LEN};
use crate::table::layout::{unwrap_block, BlockHandle};
use crate::table::paged::unwrap_paged;
use crate::table::CachedBlock;

/// Where a block lies: a classic block (contents of `len` bytes, then the
/// 5-byte trailer) or a version-3 paged block of `len` stored bytes.
#[derive(Clone, Copy, Debug)]
pub(super) struct BlockRef {
    pub(super) offset: u64,
    pub(super) len: u64,
    pub(super) paged: bool,
}

impl BlockRef {
    pub(super) fn classic(h: BlockHandle) -> BlockRef {
        BlockRef {
            offset: h.offset,
            len: h.size,
            paged: false,
        }
    }

    pub(super) fn paged(offset: u64, len: u64) -> BlockRef {
        BlockRef {
            offset,
            len,
            paged: true,
        }
    }

    /// Bytes read: the stored block with its trailer.
    pub(super) fn read_len(&self) -> u64 {
        if self.paged {
            self.len
        } else {
            self.len.saturating_add(BLOCK_TRAILER_LEN)
        }
    }

    pub(super) fn end(&self) -> u64 {
        self.offset.saturating_add(self.read_len())
    }
}

pub(super) fn read_block_contents(
    file: &dyn RandomAccessFile,
    path: &Path,
    handle: BlockHandle,
    kind: BlockKind,
    stats: Option<&Stats>,
    verify: bool,
) -> Result<Vec<u8>> {
    read_ref(file, path, BlockRef::classic(handle), kind, stats, verify)
}

pub(super) fn read_ref(
    file: &dyn RandomAccessFile,
    path: &Path,
    r: BlockRef,
    kind: BlockKind,
    stats: Option<&Stats>,
    verify: bool,
) -> Result<Vec<u8>> {
    let len = usize::try_from(r.read_len())
        .map_err(|_| Error::corruption(path, r.offset, "block too large for memory"))?;
    let res = file.read_vec_at(r.offset, len);
    if let Some(s) = stats {
        s.physical_read(kind, len as u64);
    }
    let buf = res.map_err(|e| Error::io("read table block", path, e))?;
    unwrap_ref(path, r, buf, verify)
}

/// The contents of the block `r` read into `buf` (trailer or page checks).
pub(super) fn unwrap_ref(path: &Path, r: BlockRef, buf: Vec<u8>, verify: bool) -> Result<Vec<u8>> {
    let contents = if r.paged {
        unwrap_paged(buf, verify)
    } else {
        unwrap_block(buf, verify)
    };
    contents.map_err(|c| Error::corruption(path, r.offset, c.0))
}

/// A compaction's read-ahead over a table's data blocks: one large read from
/// a handle of its own ([`FileSystem::open_scan`](shale_env::FileSystem::open_scan))
/// covers the blocks ahead, which are then served from memory, so that a
/// compaction issues a few large reads per table rather than one per block.
pub(super) struct ReadAhead {
    pub(super) file: Arc<dyn RandomAccessFile>,
    /// Bytes per read (a block larger than this is read alone).
    pub(super) size: u64,
    /// File offset of `buf[0]`.
    pub(super) start: u64,
    pub(super) buf: Vec<u8>,
}

impl ReadAhead {
    /// The stored bytes of block `r` (whose end is at most `data_end`),
    /// reading the window from `r` on when `r` is not in the current one.
    pub(super) fn block(&mut self, r: BlockRef, data_end: u64, path: &Path) -> Result<Vec<u8>> {
        let end = r.end();
        let held = self.start + self.buf.len() as u64;
        if r.offset < self.start || end > held {
            let stop = end.max(r.offset.saturating_add(self.size).min(data_end));
            let len = usize::try_from(stop - r.offset)
                .map_err(|_| Error::corruption(path, r.offset, "block too large for memory"))?;
            self.buf.clear();
            self.buf.resize(len, 0);
            self.start = r.offset;
            if let Err(e) = self.file.read_exact_at(r.offset, &mut self.buf) {
                self.buf.clear();
                return Err(Error::io("read table blocks ahead", path, e));
            }
        }
        let from = (r.offset - self.start) as usize;
        let to = (end - self.start) as usize;
        Ok(self.buf[from..to].to_vec())
    }
}

/// Decodes a data block, of a version-3 table if `paged`.
pub(super) fn decode_data_block(contents: Vec<u8>, paged: bool) -> Result<CachedBlock, Corrupt> {
    let block = Block::new(contents, EntryFormat::Data)?;
    Ok(if paged {
        CachedBlock::PagedData(block)
    } else {
        CachedBlock::Data(block)
    })
}
