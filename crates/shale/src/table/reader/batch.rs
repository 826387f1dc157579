//! Deferred data-block reads: how a `multi_get` puts the device reads of many
//! Gets in flight together from one thread.
//!
//! While a [`BatchScope`] is open on a thread, a Get on that thread that
//! needs a data block the block cache lacks does not read it: the table
//! records the read ([`defer`]) and answers [`TableGet::Deferred`], and the
//! Get stops there. The caller then issues every recorded read at once with
//! [`FileSystem::read_batch`] ([`BatchScope::read_planned`]: io_uring on
//! Linux), puts the blocks in the block cache and keeps them in the scope
//! too, and runs the deferred Gets again; they find their blocks
//! ([`fetched`]) and either answer or defer the next block they need (a
//! filter's false positive, a key whose versions continue in the next
//! block). Every round reads blocks no earlier round read, so a batch ends.
//!
//! The count of each kind's reads stays exact: a deferred block is one
//! cache miss when it is first deferred and one physical read when the batch
//! reads it; finding it in the scope counts nothing more.
//!
//! [`TableGet::Deferred`]: crate::table::TableGet::Deferred

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use shale_env::{BatchRead, FileSystem, RandomAccessFile};

use super::{decode_data_block, unwrap_ref, BlockRef, Meta};
use crate::cache::Priority;
use crate::error::{Error, Result};
use crate::metrics::{BlockKind, Stats};
use crate::table::{BlockCache, BlockCacheKey, CachedBlock};

/// A data-block read a Get deferred.
struct Planned {
    key: BlockCacheKey,
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    r: BlockRef,
    /// Whether the table is of version 3 (how its data blocks decode).
    paged_data: bool,
}

#[derive(Default)]
struct Planner {
    planned: Vec<Planned>,
    /// The blocks of `planned`, so that a block many keys need is planned
    /// once without a scan of the list.
    planned_keys: HashSet<BlockCacheKey>,
    /// Blocks read by this scope's batches (or why they could not be).
    fetched: HashMap<BlockCacheKey, Result<Arc<CachedBlock>>>,
}

thread_local! {
    /// Whether a scope is open: asked by every data-block fetch of every
    /// Get, so a plain flag apart from the planner.
    static OPEN: Cell<bool> = const { Cell::new(false) };
    static PLANNER: RefCell<Planner> = RefCell::new(Planner::default());
}

/// True while a [`BatchScope`] is open on this thread.
pub(crate) fn planning() -> bool {
    OPEN.with(Cell::get)
}

/// The block this scope read for `key`, if it did.
pub(super) fn fetched(key: BlockCacheKey) -> Option<Result<Arc<CachedBlock>>> {
    PLANNER.with(|p| p.borrow().fetched.get(&key).cloned())
}

/// Records the read of data block `r` of the table described by `meta`;
/// false if this batch already has it.
pub(super) fn defer(
    key: BlockCacheKey,
    file: &Arc<dyn RandomAccessFile>,
    path: &std::path::Path,
    r: BlockRef,
    meta: &Meta,
) -> bool {
    PLANNER.with(|p| {
        let mut p = p.borrow_mut();
        if !p.planned_keys.insert(key) {
            return false;
        }
        p.planned.push(Planned {
            key,
            file: file.clone(),
            path: path.to_path_buf(),
            r,
            paged_data: meta.paged(),
        });
        true
    })
}

/// Deferred reads on the calling thread, for as long as it lives (see the
/// module documentation). Not nested: one per thread at a time.
pub(crate) struct BatchScope {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl BatchScope {
    /// Opens the scope on this thread; [`Error::Internal`] if one is open.
    pub(crate) fn begin() -> Result<BatchScope> {
        if OPEN.with(|o| o.replace(true)) {
            return Err(Error::Internal(
                "a batch of reads is already open on this thread".into(),
            ));
        }
        Ok(BatchScope {
            _not_send: std::marker::PhantomData,
        })
    }

    /// Reads every deferred block at once through `fs`, counts each read in
    /// `stats`, and keeps the blocks in `cache` and in the scope. Returns the
    /// number of reads; a read that fails is kept as its Get's error.
    pub(crate) fn read_planned(
        &self,
        fs: &dyn FileSystem,
        cache: &BlockCache,
        stats: &Stats,
        verify: bool,
    ) -> usize {
        let planned = PLANNER.with(|p| {
            let mut p = p.borrow_mut();
            p.planned_keys.clear();
            std::mem::take(&mut p.planned)
        });
        let mut bufs: Vec<Vec<u8>> = Vec::with_capacity(planned.len());
        let mut lens = Vec::with_capacity(planned.len());
        for x in &planned {
            // Out of memory range: answered below as corruption, not read.
            let len = usize::try_from(x.r.read_len()).ok();
            lens.push(len);
            bufs.push(vec![0u8; len.unwrap_or(0)]);
        }
        let mut reads: Vec<BatchRead<'_>> = planned
            .iter()
            .zip(bufs.iter_mut())
            .zip(&lens)
            .filter(|(_, len)| len.is_some())
            .map(|((x, buf), _)| BatchRead {
                file: x.file.as_ref(),
                offset: x.r.offset,
                buf,
            })
            .collect();
        let mut results = fs.read_batch(&mut reads).into_iter();
        drop(reads);
        let mut done = Vec::with_capacity(planned.len());
        for ((x, buf), len) in planned.into_iter().zip(bufs).zip(lens) {
            let block = match len {
                None => Err(Error::corruption(
                    &x.path,
                    x.r.offset,
                    "block too large for memory",
                )),
                Some(n) => {
                    stats.physical_read(BlockKind::Data, n as u64);
                    match results.next() {
                        Some(Ok(())) => decode_data(&x, buf, verify),
                        Some(Err(e)) => Err(Error::io("read table block", &x.path, e)),
                        None => Err(Error::Internal("a batched read has no answer".into())),
                    }
                }
            };
            if let Ok(b) = &block {
                cache.insert(x.key, b.clone(), b.charge(), Priority::Low);
            }
            done.push((x.key, block));
        }
        let n = done.len();
        PLANNER.with(|p| p.borrow_mut().fetched.extend(done));
        n
    }
}

/// Decodes the data block `x` read into `buf`.
fn decode_data(x: &Planned, buf: Vec<u8>, verify: bool) -> Result<Arc<CachedBlock>> {
    let contents = unwrap_ref(&x.path, x.r, buf, verify)?;
    let block = decode_data_block(contents, x.paged_data)
        .map_err(|c| Error::corruption(&x.path, x.r.offset, c.0))?;
    Ok(Arc::new(block))
}

impl Drop for BatchScope {
    fn drop(&mut self) {
        PLANNER.with(|p| {
            let mut p = p.borrow_mut();
            p.planned.clear();
            p.planned_keys.clear();
            p.fetched.clear();
        });
        OPEN.with(|o| o.set(false));
    }
}
