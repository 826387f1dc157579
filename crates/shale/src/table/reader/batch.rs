//! Deferred data-block reads: how a `multi_get` keeps the device reads of
//! many Gets in flight together from one thread.
//!
//! While a [`BatchScope`] is open on a thread, a Get on that thread that
//! needs a data block the block cache lacks does not read it: the table
//! records the read ([`defer`]) and answers [`TableGet::Deferred`], and the
//! Get stops there. The caller takes the recorded reads
//! ([`BatchScope::take_planned`]) and the block the Get waits for
//! ([`BatchScope::take_waited`]), submits the reads to a
//! [`ReadQueue`](shale_env::ReadQueue), and goes on with other keys. As each
//! read completes ([`BatchScope::finish_read`]: counted, decoded, put in the
//! block cache and held in the scope for the Gets that wait for it), the
//! caller has those Gets go on from the table that deferred the read; they
//! find their block ([`fetched`]) and either answer or defer the next block
//! they need (a filter's false positive, a key whose versions continue in
//! the next block, a deeper level). A Get keeps every block it was given
//! until it answers ([`BatchScope::release`]), so that going on never
//! defers a block it already waited for: each Get ends.
//!
//! The count of each kind's reads stays exact: a deferred block is one
//! cache miss when it is first deferred and one physical read when it is
//! read; a Get that waits for a block already deferred, or finds it in the
//! scope, counts nothing more; and a Get that goes on in the table that
//! deferred its read does not count again the filter and index blocks it
//! looked up the first time ([`BatchScope::resuming`]).
//!
//! [`TableGet::Deferred`]: crate::table::TableGet::Deferred

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use shale_env::RandomAccessFile;

use super::block_ref::{decode_data_block, unwrap_ref, BlockRef};
use crate::cache::Priority;
use crate::error::{Error, Result};
use crate::metrics::{BlockKind, Stats};
use crate::table::{BlockCache, BlockCacheKey, CachedBlock};

/// A data-block read a Get deferred.
pub(crate) struct Planned {
    key: BlockCacheKey,
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    r: BlockRef,
    /// Whether the table is of version 3 (how its data blocks decode).
    paged_data: bool,
}

impl Planned {
    /// The read to submit: the file, the offset and the length (`None` if
    /// the block is too large for memory: [`BatchScope::finish_read`] then
    /// answers it without a read).
    pub(crate) fn read(&self) -> (&Arc<dyn RandomAccessFile>, u64, Option<usize>) {
        (
            &self.file,
            self.r.offset,
            usize::try_from(self.r.read_len()).ok(),
        )
    }

    /// The block read.
    pub(crate) fn block(&self) -> BlockCacheKey {
        self.key
    }
}

#[derive(Default)]
struct Planner {
    planned: Vec<Planned>,
    /// The blocks planned or being read, so that a block many Gets need is
    /// read once.
    in_flight: HashSet<BlockCacheKey>,
    /// The block the last deferred Get waits for.
    waited: Option<BlockCacheKey>,
    /// Blocks read (or why they could not be), with how many Gets hold each.
    fetched: HashMap<BlockCacheKey, (Result<Arc<CachedBlock>>, usize)>,
}

thread_local! {
    /// Whether a scope is open: asked by every data-block fetch of every
    /// Get, so a plain flag apart from the planner.
    static OPEN: Cell<bool> = const { Cell::new(false) };
    static PLANNER: RefCell<Planner> = RefCell::new(Planner::default());
    /// Set while a Get goes on in the table that deferred its read, until
    /// it reaches a block read for it.
    static RESUMING: Cell<bool> = const { Cell::new(false) };
}

/// True while a Get goes on in the table that deferred its read, until it
/// reaches the block it waited for: the cache hits on the way were counted
/// the first time.
pub(super) fn resuming() -> bool {
    RESUMING.with(Cell::get)
}

/// The resumed Get reached a block it waited for (see [`resuming`]).
pub(super) fn resumed() {
    RESUMING.with(|r| r.set(false));
}

/// True while a [`BatchScope`] is open on this thread.
pub(crate) fn planning() -> bool {
    OPEN.with(Cell::get)
}

/// The block this scope read for `key`, if a Get holds it.
pub(super) fn fetched(key: BlockCacheKey) -> Option<Result<Arc<CachedBlock>>> {
    PLANNER.with(|p| p.borrow().fetched.get(&key).map(|(b, _)| b.clone()))
}

/// Records that the Get waits for data block `r` of a table (whose data
/// blocks are paged if `paged_data`), and plans its read unless it is
/// planned or being read already; true if it planned it.
pub(super) fn defer(
    key: BlockCacheKey,
    file: &Arc<dyn RandomAccessFile>,
    path: &std::path::Path,
    r: BlockRef,
    paged_data: bool,
) -> bool {
    PLANNER.with(|p| {
        let mut p = p.borrow_mut();
        p.waited = Some(key);
        if !p.in_flight.insert(key) {
            return false;
        }
        p.planned.push(Planned {
            key,
            file: file.clone(),
            path: path.to_path_buf(),
            r,
            paged_data,
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

    /// The reads planned since the last call.
    pub(crate) fn take_planned(&self) -> Vec<Planned> {
        PLANNER.with(|p| std::mem::take(&mut p.borrow_mut().planned))
    }

    /// The block the last deferred Get waits for (taken: `None` until a Get
    /// defers again).
    pub(crate) fn take_waited(&self) -> Option<BlockCacheKey> {
        PLANNER.with(|p| p.borrow_mut().waited.take())
    }

    /// Ends the read of `x`, which gave `got`: counts it in `stats`,
    /// decodes the block, puts it in `cache`, and holds it in the scope for
    /// `holders` Gets (each releases it with [`BatchScope::release`]).
    /// Returns the block's key and, if it was read and decoded, its charge
    /// in the cache; a read that failed is kept as the error of the Gets
    /// that wait for it.
    pub(crate) fn finish_read(
        &self,
        x: Planned,
        got: Option<std::io::Result<Vec<u8>>>,
        holders: usize,
        cache: &BlockCache,
        stats: &Stats,
        verify: bool,
    ) -> (BlockCacheKey, Option<u64>) {
        let block = match got {
            None => Err(Error::corruption(
                &x.path,
                x.r.offset,
                "block too large for memory",
            )),
            Some(got) => {
                stats.physical_read(BlockKind::Data, x.r.read_len());
                match got {
                    Ok(buf) => decode_data(&x, buf, verify),
                    Err(e) => Err(Error::io("read table block", &x.path, e)),
                }
            }
        };
        let charge = block.as_ref().ok().map(|b| b.charge());
        if let Ok(b) = &block {
            cache.insert(x.key, b.clone(), b.charge(), Priority::Low);
        }
        PLANNER.with(|p| {
            let mut p = p.borrow_mut();
            p.in_flight.remove(&x.key);
            if holders > 0 {
                p.fetched.insert(x.key, (block, holders));
            }
        });
        (x.key, charge)
    }

    /// Runs `f` as if no scope were open on this thread, so that a caller's
    /// code run in the middle of a batch (an answer's callback) may read the
    /// database, even with a batch of its own; the scope's state is put
    /// back afterwards.
    pub(crate) fn outside<R>(&self, f: impl FnOnce() -> R) -> R {
        let saved = PLANNER.with(|p| std::mem::take(&mut *p.borrow_mut()));
        OPEN.with(|o| o.set(false));
        let r = f();
        PLANNER.with(|p| *p.borrow_mut() = saved);
        OPEN.with(|o| o.set(true));
        r
    }

    /// Runs `f`, a Get going on in the table that deferred its read, with
    /// its cache hits not counted until it reaches a block read for it: it
    /// looked those blocks up (and counted them) the first time. A miss is
    /// a new read and counts.
    pub(crate) fn resuming<R>(f: impl FnOnce() -> R) -> R {
        RESUMING.with(|r| r.set(true));
        let out = f();
        RESUMING.with(|r| r.set(false));
        out
    }

    /// One Get that held `key` no longer needs it.
    pub(crate) fn release(&self, key: BlockCacheKey) {
        PLANNER.with(|p| {
            let mut p = p.borrow_mut();
            if let Some((_, holders)) = p.fetched.get_mut(&key) {
                *holders -= 1;
                if *holders == 0 {
                    p.fetched.remove(&key);
                }
            }
        });
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
            p.in_flight.clear();
            p.waited = None;
            p.fetched.clear();
        });
        OPEN.with(|o| o.set(false));
    }
}
