//! `shale_db_t`: open, close, reads, writes, maintenance, metrics.

use std::ffi::{c_char, CStr};
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

use shale::{Db, PinnedValue, WriteBatch, WriteOptions};

use crate::batch::shale_batch_t;
use crate::options::{shale_options_t, OptionsSpec};
use crate::pinned::{deliver_pinned, shale_pinned_t};
use crate::{
    bytes, c_string, check_range, handle, into_raw, malloc_copy, need_out, optional_bytes, put_out,
    run, shale_code_t, Failure, Handle, Kind, Outcome, Shared,
};

/// An open database (or a closed one, until freed).
///
/// Made by `shale_open` or `shale_open_read_only`; `shale_close` closes it
/// (syncing the write-ahead log) and `shale_db_free` frees the handle (closing
/// it first if still open). After close every call on it, and on the
/// iterators and snapshots made from it, returns `SHALE_CLOSED`; those handles
/// must still be freed. Thread safety: every function may be called on one
/// database handle from any number of threads at once; `shale_close` waits for
/// the calls in progress. Freeing it while another thread uses it, or using it
/// after `shale_db_free`, is undefined behaviour.
pub struct shale_db_t {
    _opaque: [u8; 0],
}

/// What a `shale_db_t` points to.
pub(crate) struct DbBody {
    pub(crate) shared: Arc<Shared>,
}

impl Handle for shale_db_t {
    const KIND: Kind = Kind::Db;
    type Body = DbBody;
}

/// A few of the engine's counters (totals since open; write counters since the
/// database was created).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct shale_metrics_t {
    /// Gets served.
    pub gets: u64,
    /// Gets that found a value.
    pub gets_found: u64,
    /// Gets answered by a memtable.
    pub gets_memtable_hits: u64,
    /// Block cache hits, every block kind.
    pub block_cache_hits: u64,
    /// Block cache misses, every block kind.
    pub block_cache_misses: u64,
    /// Read requests issued to the file system.
    pub physical_reads: u64,
    /// Bytes of those reads.
    pub bytes_read: u64,
    /// Filter probes that ruled a table out.
    pub filter_negatives: u64,
    /// Filter probes that did not.
    pub filter_positives: u64,
    /// Bytes of keys and values written by users.
    pub bytes_written_user: u64,
    /// Bytes written to the write-ahead log.
    pub bytes_written_wal: u64,
    /// Bytes of tables written by flushes and compactions.
    pub bytes_written_tables: u64,
    /// Syncs of the write-ahead log.
    pub wal_syncs: u64,
    /// Memtable flushes.
    pub flushes: u64,
    /// Compactions, every level.
    pub compactions: u64,
    /// Write groups held back by a write stall.
    pub stall_count: u64,
    /// Microseconds writers spent stalled.
    pub stall_micros: u64,
    /// Failed flushes, compactions and file deletions.
    pub background_errors: u64,
    /// Tables in L0 now.
    pub l0_files: u64,
    /// Estimated bytes compactions still have to rewrite.
    pub pending_compaction_bytes: u64,
    /// Bytes held by the block cache now.
    pub block_cache_usage: u64,
    /// Capacity of the block cache.
    pub block_cache_capacity: u64,
}

/// Opens with `access` and hands out the handle.
///
/// # Safety
///
/// `path` is NULL or a NUL-terminated string; `options` NULL or live options;
/// `out` NULL or valid for writing a pointer.
unsafe fn open_with(
    path: *const c_char,
    options: *const shale_options_t,
    out: *mut *mut shale_db_t,
    read_only: bool,
) -> Outcome {
    need_out(out, "out")?;
    if path.is_null() {
        return Err(Failure::invalid("path is NULL"));
    }
    // SAFETY: a NUL-terminated string per the caller.
    let path = std::ffi::OsStr::from_bytes(unsafe { CStr::from_ptr(path) }.to_bytes());
    let spec = if options.is_null() {
        OptionsSpec::default()
    } else {
        // SAFETY: live options per the caller.
        unsafe { handle(options) }?.inner.lock().clone()
    };
    let db = if read_only {
        Db::open_read_only(path, spec.engine)?
    } else {
        Db::open(path, spec.engine)?
    };
    let ptr = into_raw::<shale_db_t>(DbBody {
        shared: Arc::new(Shared::new(db, spec.sync)),
    });
    // SAFETY: checked non-NULL above, valid per the caller.
    unsafe { out.write(ptr) };
    Ok(())
}

/// Opens (or, with create_if_missing, creates) the database in the directory
/// `path` (a NUL-terminated string) with `options` (NULL: the defaults), and
/// stores a new handle in `*out`. `SHALE_LOCKED` if another handle or process
/// has it open.
///
/// # Safety
///
/// `path` is NULL or a NUL-terminated string; `options` is NULL or a live
/// options handle; `out` is valid for writing a pointer; `errmsg` is NULL or
/// valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_open(
    path: *const c_char,
    options: *const shale_options_t,
    out: *mut *mut shale_db_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe { run(errmsg, || open_with(path, options, out, false)) }
}

/// Opens the database in `path` for reading only: nothing is written (the logs
/// are replayed into memory), any number of read-only handles may be open at
/// once, never together with a read-write one (`SHALE_LOCKED`). Writes,
/// flushes and compactions fail with `SHALE_READ_ONLY`.
///
/// # Safety
///
/// As for `shale_open`.
#[no_mangle]
pub unsafe extern "C" fn shale_open_read_only(
    path: *const c_char,
    options: *const shale_options_t,
    out: *mut *mut shale_db_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe { run(errmsg, || open_with(path, options, out, true)) }
}

/// Closes the database: releases what its iterators and snapshots hold (they
/// fail with `SHALE_CLOSED` from now on), stops the background threads and
/// syncs the write-ahead log, returning a failure of that sync. Waits for
/// calls in progress on other threads. `SHALE_CLOSED` if closed already. The
/// handle stays allocated until `shale_db_free`.
///
/// # Safety
///
/// `db` is a live database handle; `errmsg` is NULL or valid for writing a
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_close(
    db: *mut shale_db_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe { run(errmsg, || handle(db)?.shared.close()) }
}

/// Frees a database handle, closing the database first if it is open (and
/// returning that close's failure; the handle is freed either way).
/// `SHALE_INVALID_ARGUMENT` (and nothing done) for NULL, a pointer that is
/// not a live database handle, such as one freed already, and from inside a
/// callback of a call on this database.
///
/// # Safety
///
/// `db` is NULL or a pointer returned by this library; no other thread uses
/// the handle.
#[no_mangle]
pub unsafe extern "C" fn shale_db_free(
    db: *mut shale_db_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: `from_raw` dereferences nothing unless the pointer is live.
    unsafe {
        run(errmsg, || {
            if let Ok(h) = handle(db) {
                if h.shared.held_here() {
                    return Err(Failure::invalid(
                        "the database handle cannot be freed from inside a callback of a call on it",
                    ));
                }
            }
            let boxed = crate::from_raw(db)?;
            match boxed.shared.close() {
                Err(f) if f.code != shale_code_t::SHALE_CLOSED => Err(f),
                _ => Ok(()),
            }
        })
    }
}

/// Runs `f` on the open database behind `db`.
///
/// # Safety
///
/// As for [`handle`].
pub(crate) unsafe fn with_db(
    db: *const shale_db_t,
    f: impl FnOnce(&Db, &Shared) -> Outcome,
) -> Outcome {
    // SAFETY: forwarded from the caller.
    let h = unsafe { handle(db) }?;
    h.shared.with_db(|d| f(d, &h.shared))
}

/// Sets `key` to `value` (synced if the options said so). The empty key is a
/// key like any other.
///
/// # Safety
///
/// `db` is a live database handle; `key` and `value` are NULL (with length 0)
/// or valid for reading their lengths; `errmsg` is NULL or valid for writing a
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_put(
    db: *mut shale_db_t,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            let key = bytes(key, key_len, "key")?;
            let value = bytes(value, value_len, "value")?;
            with_db(db, |d, shared| {
                let mut b = WriteBatch::new();
                b.put(key, value);
                d.write(b, &WriteOptions::default().sync(shared.sync))?;
                Ok(())
            })
        })
    }
}

/// Deletes `key` (synced if the options said so). Deleting a missing key is
/// not an error.
///
/// # Safety
///
/// As for `shale_put`.
#[no_mangle]
pub unsafe extern "C" fn shale_delete(
    db: *mut shale_db_t,
    key: *const u8,
    key_len: usize,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            let key = bytes(key, key_len, "key")?;
            with_db(db, |d, shared| {
                let mut b = WriteBatch::new();
                b.delete(key);
                d.write(b, &WriteOptions::default().sync(shared.sync))?;
                Ok(())
            })
        })
    }
}

/// Deletes every key in `[start, end)` (synced if the options said so): one
/// small write whatever the range holds. Keys written later are not affected,
/// and snapshots taken before still see the keys. `start == end` is an empty
/// range and does nothing; `start > end` is `SHALE_INVALID_ARGUMENT`. The
/// empty string is the smallest key, so `[empty, end)` deletes every key
/// below `end`.
///
/// # Safety
///
/// `db` is a live database handle; `start` and `end` are NULL (with length 0)
/// or valid for reading their lengths; `errmsg` is NULL or valid for writing a
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_delete_range(
    db: *mut shale_db_t,
    start: *const u8,
    start_len: usize,
    end: *const u8,
    end_len: usize,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            let start = bytes(start, start_len, "start")?;
            let end = bytes(end, end_len, "end")?;
            check_range(start, end)?;
            with_db(db, |d, shared| {
                let mut b = WriteBatch::new();
                b.delete_range(start, end);
                d.write(b, &WriteOptions::default().sync(shared.sync))?;
                Ok(())
            })
        })
    }
}

/// Applies `batch` atomically, syncing the write-ahead log first if `sync`.
/// The batch is not changed (it can be written again, or cleared and reused).
///
/// # Safety
///
/// `db` is a live database handle; `batch` a live batch handle; `errmsg` is
/// NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_write(
    db: *mut shale_db_t,
    batch: *const shale_batch_t,
    sync: bool,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            let b = handle(batch)?;
            with_db(db, |d, _| {
                let copy = b.batch.lock().clone();
                d.write(copy, &WriteOptions::default().sync(sync))?;
                Ok(())
            })
        })
    }
}

/// Hands the value a get read to `deliver` (a value from a table is still a
/// slice of its cached block, so `deliver` copies it once, straight from the
/// block) and sets `*found`.
pub(crate) fn deliver_get(
    value: Option<PinnedValue>,
    found: *mut bool,
    deliver: impl FnOnce(&[u8]) -> Outcome,
) -> Outcome {
    match value {
        Some(v) => {
            // SAFETY: `found` was checked non-NULL by the caller.
            unsafe { found.write(true) };
            deliver(&v)
        }
        None => {
            // SAFETY: as above.
            unsafe { found.write(false) };
            Ok(())
        }
    }
}

/// Stores a copy of `v` in `*value` and `*value_len` (malloc'ed).
///
/// # Safety
///
/// `value` and `value_len` are non-NULL and valid for writes.
pub(crate) unsafe fn deliver_copy(v: &[u8], value: *mut *mut u8, value_len: *mut usize) -> Outcome {
    let ptr = malloc_copy(v, 0);
    if ptr.is_null() {
        return Err(Failure {
            code: shale_code_t::SHALE_INTERNAL,
            message: format!("out of memory for a value of {} bytes", v.len()),
        });
    }
    // SAFETY: non-NULL per the caller.
    unsafe {
        value.write(ptr);
        value_len.write(v.len());
    }
    Ok(())
}

/// Copies `v` into `buf` (as much as fits) and stores its full length.
///
/// # Safety
///
/// `buf` is NULL (with `buf_cap` 0) or valid for writing `buf_cap` bytes;
/// `value_len` is non-NULL and valid for writes.
pub(crate) unsafe fn deliver_into(
    v: &[u8],
    buf: *mut u8,
    buf_cap: usize,
    value_len: *mut usize,
) -> Outcome {
    let n = v.len().min(buf_cap);
    if n > 0 {
        // SAFETY: `buf` holds `buf_cap >= n` bytes (non-NULL because
        // `buf_cap > 0` was checked by the caller), and a caller's buffer
        // cannot overlap the engine's value.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), buf, n) };
    }
    // SAFETY: non-NULL per the caller.
    unsafe { value_len.write(v.len()) };
    Ok(())
}

/// Checks the out-parameters of a copying get.
pub(crate) fn check_get_outs(
    value: *mut *mut u8,
    value_len: *mut usize,
    found: *mut bool,
) -> Outcome {
    need_out(value, "value")?;
    need_out(value_len, "value_len")?;
    need_out(found, "found")
}

/// Checks the buffer and out-parameters of a get into a caller's buffer.
pub(crate) fn check_get_into_outs(
    buf: *mut u8,
    buf_cap: usize,
    value_len: *mut usize,
    found: *mut bool,
) -> Outcome {
    if buf.is_null() && buf_cap != 0 {
        return Err(Failure::invalid(format!(
            "buf is NULL with capacity {buf_cap}"
        )));
    }
    need_out(value_len, "value_len")?;
    need_out(found, "found")
}

/// Reads `key` in the latest state. Found: `*found` is true and `*value`
/// holds a copy of the value (`*value_len` bytes, malloc'ed, never NULL; the
/// caller frees it with `shale_free`), copied once, straight from the cached
/// block of a table. Missing: `SHALE_OK`, `*found` false, `*value` untouched.
///
/// # Safety
///
/// `db` is a live database handle; `key` is NULL (with length 0) or valid for
/// reading `key_len` bytes; `value`, `value_len` and `found` are valid for
/// writes; `errmsg` is NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_get(
    db: *mut shale_db_t,
    key: *const u8,
    key_len: usize,
    value: *mut *mut u8,
    value_len: *mut usize,
    found: *mut bool,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            let key = bytes(key, key_len, "key")?;
            check_get_outs(value, value_len, found)?;
            let v = with_value(db, |d| Ok(d.get_pinned(key)?))?;
            deliver_get(v, found, |v| deliver_copy(v, value, value_len))
        })
    }
}

/// Runs a read on the open database and returns what it read.
///
/// # Safety
///
/// As for [`handle`].
unsafe fn with_value<R>(
    db: *const shale_db_t,
    f: impl FnOnce(&Db) -> Result<R, Failure>,
) -> Result<R, Failure> {
    // SAFETY: forwarded from the caller.
    let h = unsafe { handle(db) }?;
    h.shared.with_db(f)
}

/// Reads `key` into the caller's buffer: `*value_len` is the value's full
/// length, and the first `min(*value_len, buf_cap)` bytes are copied to `buf`
/// (straight from the cached block of a table: the only copy).
/// When `*value_len > buf_cap`, call again with a larger buffer (the value may
/// have changed meanwhile). Missing: `SHALE_OK` with `*found` false. With
/// `buf_cap` 0 (and `buf` NULL) it only tells whether the key exists and how
/// long its value is.
///
/// # Safety
///
/// `db` is a live database handle; `key` as for `shale_get`; `buf` NULL (with
/// `buf_cap` 0) or valid for writing `buf_cap` bytes; `value_len` and `found`
/// valid for writes; `errmsg` NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_get_into(
    db: *mut shale_db_t,
    key: *const u8,
    key_len: usize,
    buf: *mut u8,
    buf_cap: usize,
    value_len: *mut usize,
    found: *mut bool,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            let key = bytes(key, key_len, "key")?;
            check_get_into_outs(buf, buf_cap, value_len, found)?;
            let v = with_value(db, |d| Ok(d.get_pinned(key)?))?;
            deliver_get(v, found, |v| deliver_into(v, buf, buf_cap, value_len))
        })
    }
}

/// Reads `key` in the latest state without copying the value: found,
/// `*found` is true and `*out` a new `shale_pinned_t` (for a value from a
/// table, a slice of its cached data block, which the handle keeps in memory;
/// for a value from a memtable, a copy); `shale_pinned_data` gives its bytes
/// and the caller frees it with `shale_pinned_free`. Missing: `SHALE_OK`,
/// `*found` false and `*out` NULL. On failure `*out` is untouched. The handle
/// stays valid after the database is closed, until freed.
///
/// # Safety
///
/// `db` is a live database handle; `key` is NULL (with length 0) or valid for
/// reading `key_len` bytes; `out` and `found` are valid for writes; `errmsg`
/// is NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_get_pinned(
    db: *mut shale_db_t,
    key: *const u8,
    key_len: usize,
    out: *mut *mut shale_pinned_t,
    found: *mut bool,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            let key = bytes(key, key_len, "key")?;
            need_out(out, "out")?;
            need_out(found, "found")?;
            let v = with_value(db, |d| Ok(d.get_pinned(key)?))?;
            deliver_pinned(v, out, found);
            Ok(())
        })
    }
}

/// Flushes the memtable to a table and waits until every memtable is flushed
/// (durable, and the write-ahead logs they came from deleted).
///
/// # Safety
///
/// `db` is a live database handle; `errmsg` is NULL or valid for writing a
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_flush(
    db: *mut shale_db_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe { run(errmsg, || with_db(db, |d, _| Ok(d.flush()?))) }
}

/// Makes every write acknowledged so far durable (it survives a machine
/// crash) by syncing the write-ahead log, without flushing the memtable: no
/// table is written (`shale_flush` does that). A failed sync poisons the
/// database: this call and every later write fail with `SHALE_POISONED`
/// until it is reopened. `SHALE_READ_ONLY` on a read-only database.
///
/// # Safety
///
/// As for `shale_flush`.
#[no_mangle]
pub unsafe extern "C" fn shale_sync(db: *mut shale_db_t, errmsg: *mut *mut c_char) -> shale_code_t {
    // SAFETY: as documented.
    unsafe { run(errmsg, || with_db(db, |d, _| Ok(d.sync_wal()?))) }
}

/// Flushes, then merges every table into the last level, dropping versions no
/// snapshot can see and deletions that shadow nothing.
///
/// # Safety
///
/// As for `shale_flush`.
#[no_mangle]
pub unsafe extern "C" fn shale_compact_all(
    db: *mut shale_db_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe { run(errmsg, || with_db(db, |d, _| Ok(d.compact_all()?))) }
}

/// Compacts the keys in `[start, end]` (both inclusive; a NULL `start` or
/// `end` leaves that end open): flushes the memtable, then merges the tables
/// holding keys of the range down the tree, so that overwritten versions and
/// deletions in it that no snapshot needs are gone from disk. Runs beside the
/// automatic compactions. `SHALE_INVALID_ARGUMENT` when `start > end`.
///
/// # Safety
///
/// `db` is a live database handle; `start` and `end` are NULL (with length 0)
/// or valid for reading their lengths; `errmsg` is NULL or valid for writing a
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_compact_range(
    db: *mut shale_db_t,
    start: *const u8,
    start_len: usize,
    end: *const u8,
    end_len: usize,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            let start = optional_bytes(start, start_len, "start")?;
            let end = optional_bytes(end, end_len, "end")?;
            with_db(db, |d, _| Ok(d.compact_range(start, end)?))
        })
    }
}

/// Reads `n` keys in one state of the database (no write lands between two
/// of them): key `i` is `keys[i]` of `key_lens[i]` bytes. For each, `found[i]`
/// says whether it exists and, if so, `values[i]` holds a copy of its value
/// (`value_lens[i]` bytes, malloc'ed, freed by the caller with `shale_free`);
/// for a missing key `values[i]` is NULL and `value_lens[i]` 0. On failure
/// nothing is allocated. `n` may be 0 (then every array may be NULL; a closed
/// database is still `SHALE_CLOSED`).
///
/// # Safety
///
/// `db` is a live database handle; `keys` and `key_lens` are valid for reading
/// `n` elements and each `keys[i]` is NULL (with length 0) or valid for reading
/// `key_lens[i]` bytes; `values`, `value_lens` and `found` are valid for
/// writing `n` elements; `errmsg` is NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_multi_get(
    db: *mut shale_db_t,
    keys: *const *const u8,
    key_lens: *const usize,
    n: usize,
    values: *mut *mut u8,
    value_lens: *mut usize,
    found: *mut bool,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented: every array is checked non-NULL (when n > 0)
    // before it is read or written, within its n elements.
    unsafe {
        run(errmsg, || {
            if n == 0 {
                // Nothing to read, but a closed database is still refused.
                return with_value(db, |_| Ok(()));
            }
            if keys.is_null() || key_lens.is_null() {
                return Err(Failure::invalid("keys or key_lens is NULL"));
            }
            need_out(values, "values")?;
            need_out(value_lens, "value_lens")?;
            need_out(found, "found")?;
            if n > isize::MAX as usize / std::mem::size_of::<usize>() {
                return Err(Failure::invalid(format!("n = {n} is too large")));
            }
            let ptrs = std::slice::from_raw_parts(keys, n);
            let lens = std::slice::from_raw_parts(key_lens, n);
            let mut list = Vec::with_capacity(n);
            for (i, (p, l)) in ptrs.iter().zip(lens).enumerate() {
                list.push(bytes(*p, *l, &format!("keys[{i}]"))?);
            }
            let read = with_value(db, |d| Ok(d.multi_get(&list)?))?;
            // Copy every value first, so that a failed allocation frees the
            // copies made and leaves the out-arrays untouched.
            let mut copies: Vec<(*mut u8, usize)> = Vec::with_capacity(n);
            for v in &read {
                let copy = match v {
                    Some(v) => {
                        let p = malloc_copy(v, 0);
                        if p.is_null() {
                            for (p, _) in copies {
                                libc::free(p.cast());
                            }
                            return Err(Failure {
                                code: shale_code_t::SHALE_INTERNAL,
                                message: format!("out of memory for a value of {} bytes", v.len()),
                            });
                        }
                        (p, v.len())
                    }
                    None => (std::ptr::null_mut(), 0),
                };
                copies.push(copy);
            }
            for (i, ((p, len), v)) in copies.into_iter().zip(&read).enumerate() {
                values.add(i).write(p);
                value_lens.add(i).write(len);
                found.add(i).write(v.is_some());
            }
            Ok(())
        })
    }
}

/// The callback of `shale_multi_get_each`: called once per answered key with
/// `ctx`, the key's index in `keys`, and its value (`found` true; `value` is
/// valid for reading `value_len` bytes until the callback returns, NULL when
/// the value is empty) or no value (`found` false, `value` NULL, length 0).
/// Returns true to go on, false to end the call.
pub type shale_multi_get_each_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut std::ffi::c_void,
        index: usize,
        value: *const u8,
        value_len: usize,
        found: bool,
    ) -> bool,
>;

/// Reads `n` keys with up to `reads_in_flight` device reads in flight from
/// this thread (at most 64 are kept), and calls `callback` for each key as
/// soon as its value is known, in the order the answers come (not the keys'
/// order): a key whose block is not cached waits for its read while the next
/// keys start. All keys are read in one state of the database (the one
/// current when the call starts). On a file system that does not batch reads
/// the keys go in groups of `reads_in_flight`, each group answered in order.
/// `callback` returning false ends the call with `SHALE_OK`; the first error
/// ends it with that error (keys answered before it stay answered). The
/// callback may call other read functions of this library on the same
/// database; `shale_close` of this database from inside it is
/// `SHALE_INVALID_ARGUMENT` (from another thread it waits for this call).
/// `SHALE_INVALID_ARGUMENT` when `reads_in_flight` is 0 or `callback` is
/// NULL. Each answered key counts as one Get.
///
/// # Safety
///
/// `db` is a live database handle; `keys` and `key_lens` are valid for reading
/// `n` elements (NULL when `n` is 0) and each `keys[i]` is NULL (with length
/// 0) or valid for reading `key_lens[i]` bytes, and stay so until the call
/// returns; `callback` is safe to call with `ctx`; `errmsg` is NULL or valid
/// for writing a pointer.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn shale_multi_get_each(
    db: *mut shale_db_t,
    keys: *const *const u8,
    key_lens: *const usize,
    n: usize,
    reads_in_flight: usize,
    callback: shale_multi_get_each_fn,
    ctx: *mut std::ffi::c_void,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented: the key arrays are checked non-NULL (when n > 0)
    // before they are read, within their n elements; the callback gets a
    // pointer into a value that lives until it returns.
    unsafe {
        run(errmsg, || {
            let Some(callback) = callback else {
                return Err(Failure::invalid("callback is NULL"));
            };
            if reads_in_flight == 0 {
                return Err(Failure::invalid("reads_in_flight must be at least 1"));
            }
            if n > 0 && (keys.is_null() || key_lens.is_null()) {
                return Err(Failure::invalid("keys or key_lens is NULL"));
            }
            if n > isize::MAX as usize / std::mem::size_of::<usize>() {
                return Err(Failure::invalid(format!("n = {n} is too large")));
            }
            let mut list = Vec::with_capacity(n);
            if n > 0 {
                let ptrs = std::slice::from_raw_parts(keys, n);
                let lens = std::slice::from_raw_parts(key_lens, n);
                for (i, (p, l)) in ptrs.iter().zip(lens).enumerate() {
                    list.push(bytes(*p, *l, &format!("keys[{i}]"))?);
                }
            }
            with_value(db, |d| {
                d.multi_get_each(&list, reads_in_flight, |i, value| {
                    let (p, len, found) = match &value {
                        Some(v) if v.is_empty() => (std::ptr::null(), 0, true),
                        Some(v) => (v.as_ptr(), v.len(), true),
                        None => (std::ptr::null(), 0, false),
                    };
                    if callback(ctx, i, p, len, found) {
                        std::ops::ControlFlow::Continue(())
                    } else {
                        std::ops::ControlFlow::Break(())
                    }
                })?;
                Ok(())
            })
        })
    }
}

/// Fills `*out` with the engine's counters.
///
/// # Safety
///
/// `db` is a live database handle; `out` is valid for writing a
/// `shale_metrics_t`; `errmsg` is NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_metrics(
    db: *mut shale_db_t,
    out: *mut shale_metrics_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            need_out(out, "out")?;
            let m = with_value(db, |d| Ok(d.metrics()))?;
            put_out(out, metrics_of(&m), "out")
        })
    }
}

pub(crate) fn metrics_of(m: &shale::Metrics) -> shale_metrics_t {
    shale_metrics_t {
        gets: m.gets,
        gets_found: m.gets_found,
        gets_memtable_hits: m.gets_memtable_hits,
        block_cache_hits: m.cache_hits(),
        block_cache_misses: m.cache_misses(),
        physical_reads: m.physical_reads(),
        bytes_read: m.bytes_read(),
        filter_negatives: m.filter_negatives,
        filter_positives: m.filter_positives,
        bytes_written_user: m.bytes_written_user,
        bytes_written_wal: m.bytes_written_wal,
        bytes_written_tables: m.bytes_written_tables,
        wal_syncs: m.wal_syncs,
        flushes: m.flushes,
        compactions: m.compactions(),
        stall_count: m.stall_count,
        stall_micros: m.stall_micros,
        background_errors: m.background_errors,
        l0_files: m.l0_files,
        pending_compaction_bytes: m.pending_compaction_bytes,
        block_cache_usage: m.block_cache_usage,
        block_cache_capacity: m.block_cache_capacity,
    }
}

/// The database's statistics as text for people (what `shale stats` prints:
/// tables and bytes per level, scores, compactions, write amplification,
/// stalls, reads per block kind, caches). Stored NUL-terminated in `*text`
/// (malloc'ed; the caller frees it with `shale_free`). The format may change.
///
/// # Safety
///
/// `db` is a live database handle; `text` is valid for writing a pointer;
/// `errmsg` is NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_stats(
    db: *mut shale_db_t,
    text: *mut *mut c_char,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            need_out(text, "text")?;
            let s = with_value(db, |d| Ok(d.stat()?))?;
            let ptr = c_string(&s);
            if ptr.is_null() {
                return Err(Failure {
                    code: shale_code_t::SHALE_INTERNAL,
                    message: "out of memory for the stats text".into(),
                });
            }
            text.write(ptr);
            Ok(())
        })
    }
}
