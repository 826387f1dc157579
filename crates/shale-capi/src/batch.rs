//! `shale_batch_t`: a group of writes applied atomically by `shale_write`.

use std::ffi::c_char;

use parking_lot::Mutex;
use shale::WriteBatch;

use crate::{
    bytes, check_range, handle, into_raw, need_out, put_out, run, shale_code_t, Handle, Kind,
};

/// A write batch: puts, deletes and range deletions applied atomically, in
/// order (a later operation on the same key wins; a range deletion deletes
/// what the operations before it wrote), by `shale_write`. Belongs to no
/// database: one batch may be written to any database, any number of times.
/// Made by `shale_batch_create`, freed by `shale_batch_free`. The batch copies
/// the keys and values given to it. Thread safety: calls are serialized, so
/// concurrent use is safe, but a batch is meant for one thread at a time.
pub struct shale_batch_t {
    _opaque: [u8; 0],
}

/// What a `shale_batch_t` points to.
pub(crate) struct BatchBody {
    pub(crate) batch: Mutex<WriteBatch>,
}

impl Handle for shale_batch_t {
    const KIND: Kind = Kind::Batch;
    type Body = BatchBody;
}

/// Makes an empty batch.
///
/// # Safety
///
/// `out` is valid for writing a pointer; `errmsg` is NULL or valid for writing
/// a pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_batch_create(
    out: *mut *mut shale_batch_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            need_out(out, "out")?;
            let ptr = into_raw::<shale_batch_t>(BatchBody {
                batch: Mutex::new(WriteBatch::new()),
            });
            out.write(ptr);
            Ok(())
        })
    }
}

/// Frees a batch. `SHALE_INVALID_ARGUMENT` (and nothing freed) for NULL or a
/// pointer that is not a live batch, such as one freed already.
///
/// # Safety
///
/// `batch` is NULL or a pointer returned by this library; no other thread
/// uses it.
#[no_mangle]
pub unsafe extern "C" fn shale_batch_free(
    batch: *mut shale_batch_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: `from_raw` dereferences nothing unless the pointer is live.
    unsafe {
        run(errmsg, || {
            drop(crate::from_raw(batch)?);
            Ok(())
        })
    }
}

/// Adds a put of `key` -> `value` (the empty key is a key like any other).
///
/// # Safety
///
/// `batch` is a live batch; `key` and `value` are NULL (with length 0) or
/// valid for reading their lengths; `errmsg` is NULL or valid for writing a
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_batch_put(
    batch: *mut shale_batch_t,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            let b = handle(batch)?;
            let key = bytes(key, key_len, "key")?;
            let value = bytes(value, value_len, "value")?;
            b.batch.lock().put(key, value);
            Ok(())
        })
    }
}

/// Adds a deletion of `key`.
///
/// # Safety
///
/// As for `shale_batch_put`.
#[no_mangle]
pub unsafe extern "C" fn shale_batch_delete(
    batch: *mut shale_batch_t,
    key: *const u8,
    key_len: usize,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            let b = handle(batch)?;
            let key = bytes(key, key_len, "key")?;
            b.batch.lock().delete(key);
            Ok(())
        })
    }
}

/// Adds a deletion of every key in `[start, end)` written before the batch is
/// applied (one small operation, whatever the range holds; a put of a key in
/// the range that comes later in the same batch is kept). `start == end` is an
/// empty range: nothing is added. `start > end` is `SHALE_INVALID_ARGUMENT`
/// and nothing is added (the batch stays as it was, so it can still be
/// written).
///
/// # Safety
///
/// `batch` is a live batch; `start` and `end` are NULL (with length 0) or
/// valid for reading their lengths; `errmsg` is NULL or valid for writing a
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_batch_delete_range(
    batch: *mut shale_batch_t,
    start: *const u8,
    start_len: usize,
    end: *const u8,
    end_len: usize,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            let b = handle(batch)?;
            let start = bytes(start, start_len, "start")?;
            let end = bytes(end, end_len, "end")?;
            check_range(start, end)?;
            b.batch.lock().delete_range(start, end);
            Ok(())
        })
    }
}

/// Removes every operation.
///
/// # Safety
///
/// `batch` is a live batch; `errmsg` is NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_batch_clear(
    batch: *mut shale_batch_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            handle(batch)?.batch.lock().clear();
            Ok(())
        })
    }
}

/// Stores the number of operations in `*count`.
///
/// # Safety
///
/// `batch` is a live batch; `count` is valid for writes; `errmsg` is NULL or
/// valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_batch_count(
    batch: *const shale_batch_t,
    count: *mut usize,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            need_out(count, "count")?;
            let n = handle(batch)?.batch.lock().len();
            put_out(count, n, "count")
        })
    }
}

/// Stores the size of the batch's encoding in `*bytes` (what it adds to the
/// write-ahead log).
///
/// # Safety
///
/// As for `shale_batch_count`.
#[no_mangle]
pub unsafe extern "C" fn shale_batch_size(
    batch: *const shale_batch_t,
    bytes: *mut usize,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            need_out(bytes, "bytes")?;
            let n = handle(batch)?.batch.lock().encoded_len();
            put_out(bytes, n, "bytes")
        })
    }
}
