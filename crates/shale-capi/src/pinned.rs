//! `shale_pinned_t`: a value read without a copy (`shale_get_pinned`,
//! `shale_snapshot_get_pinned`).

use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

use shale::PinnedValue;

use crate::{handle, into_raw, run, shale_code_t, Handle, Kind};

/// A value read by `shale_get_pinned` or `shale_snapshot_get_pinned`: when it
/// came from a table it is a slice of the cached data block that holds it (no
/// copy), and the handle keeps that whole block (a few KiB) in memory until it
/// is freed, even if the block cache evicts it meanwhile; a value from a
/// memtable is a copy owned by the handle. `shale_pinned_data` gives its
/// bytes; `shale_pinned_free` frees it.
///
/// Ownership: the handle owns what it points to and depends on nothing else.
/// It stays valid, and its bytes unchanged, after its database is closed (and
/// freed) and after its snapshot is freed, until `shale_pinned_free`. Hold
/// it briefly (it pins a block); copy a value you keep for long.
///
/// Thread safety: it is immutable, so any number of threads may call
/// `shale_pinned_data` on it and read its bytes at once. Freeing it while
/// another thread uses it, or using it (or its bytes) after it was freed, is
/// undefined behaviour.
pub struct shale_pinned_t {
    _opaque: [u8; 0],
}

impl Handle for shale_pinned_t {
    const KIND: Kind = Kind::Pinned;
    type Body = PinnedValue;
}

/// Hands a value read by a pinned get to C: `*out` is a new handle and
/// `*found` true, or, for a missing key, `*out` NULL and `*found` false.
///
/// # Safety
///
/// `out` and `found` are non-NULL and valid for writes.
pub(crate) unsafe fn deliver_pinned(
    value: Option<PinnedValue>,
    out: *mut *mut shale_pinned_t,
    found: *mut bool,
) {
    let (ptr, is_found) = match value {
        Some(v) => (into_raw::<shale_pinned_t>(v), true),
        None => (std::ptr::null_mut(), false),
    };
    // SAFETY: non-NULL and valid per the caller.
    unsafe {
        out.write(ptr);
        found.write(is_found);
    }
}

/// Where an empty value's bytes "are": a valid address, never read.
static EMPTY: u8 = 0;

/// The bytes of a pinned value: returns their address and stores their
/// length in `*len` (when `len` is not NULL). For a live handle the address
/// is never NULL (an empty value has a valid address and length 0) and stays
/// valid, with the same bytes, until `shale_pinned_free`, also after the
/// database is closed.
///
/// One of the three functions that return no code (with `shale_free` and
/// `shale_code_name`): a live handle cannot fail. For NULL or a handle of
/// another kind it returns NULL and stores 0 in `*len`.
///
/// # Safety
///
/// `pinned` is NULL or a live handle made by this library; `len` is NULL or
/// valid for writing a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn shale_pinned_data(
    pinned: *const shale_pinned_t,
    len: *mut usize,
) -> *const u8 {
    // SAFETY: `handle` checks NULL and the magic number before trusting the
    // pointer; the rest is as documented.
    let (ptr, n) = catch_unwind(AssertUnwindSafe(|| match unsafe { handle(pinned) } {
        Ok(v) if v.is_empty() => (&raw const EMPTY, 0),
        Ok(v) => (v.as_ptr(), v.len()),
        Err(_) => (std::ptr::null(), 0),
    }))
    .unwrap_or((std::ptr::null(), 0));
    if !len.is_null() {
        // SAFETY: non-NULL, valid for writes per the caller.
        unsafe { len.write(n) };
    }
    ptr
}

/// Frees a pinned value (and releases the block it pins), also after its
/// database was closed. `SHALE_INVALID_ARGUMENT` (and nothing freed) for NULL
/// or a pointer that is not a live pinned value, such as one freed already.
///
/// # Safety
///
/// `pinned` is NULL or a pointer returned by this library; no other thread
/// uses it; `errmsg` is NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_pinned_free(
    pinned: *mut shale_pinned_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: `from_raw` dereferences nothing unless the pointer is live.
    unsafe { run(errmsg, || crate::from_raw(pinned).map(drop)) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::{shale_db_free, shale_flush, shale_get_pinned, shale_open, shale_put};

    /// Opens a database in `dir`, for the tests below.
    fn open(dir: &std::path::Path) -> *mut crate::db::shale_db_t {
        let path = std::ffi::CString::new(dir.to_str().expect("utf-8 path")).expect("no NUL");
        let mut db = std::ptr::null_mut();
        // SAFETY: a NUL-terminated path, default options, a valid out.
        let code = unsafe {
            shale_open(
                path.as_ptr(),
                std::ptr::null(),
                &mut db,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(code, shale_code_t::SHALE_OK);
        db
    }

    /// Reads `key` with `shale_get_pinned`: the handle's body, or None.
    ///
    /// # Safety
    ///
    /// `db` is live.
    unsafe fn get(db: *mut crate::db::shale_db_t, key: &[u8]) -> *mut shale_pinned_t {
        let mut out = std::ptr::null_mut();
        let mut found = false;
        // SAFETY: valid key and out-parameters.
        let code = unsafe {
            shale_get_pinned(
                db,
                key.as_ptr(),
                key.len(),
                &mut out,
                &mut found,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(code, shale_code_t::SHALE_OK);
        assert_eq!(found, !out.is_null());
        out
    }

    #[test]
    fn a_value_from_a_table_is_pinned_and_outlives_its_database() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = open(dir.path());
        let null = std::ptr::null_mut();
        // SAFETY: a live database, valid buffers; each handle freed once.
        unsafe {
            assert_eq!(
                shale_put(db, b"k".as_ptr(), 1, b"in-table".as_ptr(), 8, null),
                shale_code_t::SHALE_OK
            );
            assert_eq!(
                shale_put(db, b"e".as_ptr(), 1, std::ptr::null(), 0, null),
                shale_code_t::SHALE_OK
            );
            let mem = get(db, b"k");
            assert!(
                !handle(mem).expect("live").is_pinned(),
                "a memtable value is a copy"
            );
            assert_eq!(shale_flush(db, null), shale_code_t::SHALE_OK);
            let table = get(db, b"k");
            assert!(
                handle(table).expect("live").is_pinned(),
                "a table value is a slice of its block"
            );
            let empty = get(db, b"e");
            assert!(get(db, b"missing").is_null());
            assert_eq!(shale_db_free(db, null), shale_code_t::SHALE_OK);
            for p in [mem, table] {
                let mut n = 0;
                let data = shale_pinned_data(p, &mut n);
                assert_eq!(std::slice::from_raw_parts(data, n), b"in-table");
            }
            let mut n = 9;
            assert!(!shale_pinned_data(empty, &mut n).is_null());
            assert_eq!(n, 0);
            assert!(shale_pinned_data(std::ptr::null(), &mut n).is_null());
            for p in [mem, table, empty] {
                assert_eq!(shale_pinned_free(p, null), shale_code_t::SHALE_OK);
            }
            assert_eq!(
                shale_pinned_free(table, null),
                shale_code_t::SHALE_INVALID_ARGUMENT
            );
        }
    }
}
