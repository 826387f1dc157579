//! The C API of shale.
//!
//! The header `include/shale.h` is generated from this crate by cbindgen and
//! checked in (`tests/header.rs` fails when it is out of date;
//! `SHALE_WRITE_HEADER=1 cargo test -p shale-capi` rewrites it). The contract
//! (error codes, ownership, threading) is in `docs/capi.md`; the doc comments
//! here are copied into the header.
//!
//! Every entry point runs inside [`std::panic::catch_unwind`], checks its
//! pointers and lengths before using them, and reports a failure as a
//! [`shale_code_t`] plus an optional message. Handles stay valid until they are
//! freed; closing a database makes the handles that depend on it (iterators,
//! snapshots) fail with `SHALE_CLOSED` and releases what they held, so that a
//! use after close is an error, never a crash.

// A C API is raw pointers handed in by foreign code: every entry point must
// dereference them, which only `unsafe` can do. This crate is the engine's one
// such boundary; every unsafe block states what makes it sound.
#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![cfg_attr(not(test), warn(clippy::unwrap_used))]
// The C names (`shale_db_t`, `shale_open`) are the API; Rust's naming
// conventions do not apply to them.
#![allow(non_camel_case_types)]

pub mod batch;
pub mod db;
pub mod iter;
pub mod options;
pub mod pinned;
pub mod snapshot;

use std::collections::HashMap;
use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

/// The result of every function (but `shale_free`, `shale_code_name` and
/// `shale_pinned_data`).
///
/// A missing key is not an error: the get functions return `SHALE_OK` and set
/// their `found` out-parameter to false.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum shale_code_t {
    /// Success.
    SHALE_OK = 0,
    /// A NULL pointer where one is required, a NULL pointer with a nonzero
    /// length, a handle of the wrong kind, a handle freed twice, a range whose
    /// start is after its end, a bad option value, or a
    /// snapshot of another database.
    SHALE_INVALID_ARGUMENT = 1,
    /// Bytes on disk do not decode or fail their checksum.
    SHALE_CORRUPTION = 2,
    /// The file system failed an operation.
    SHALE_IO = 3,
    /// Another process or handle has the database open.
    SHALE_LOCKED = 4,
    /// The database was closed (by `shale_close`, or by `shale_db_free`).
    SHALE_CLOSED = 5,
    /// A write, flush or compaction on a database opened read-only.
    SHALE_READ_ONLY = 6,
    /// An earlier sync or background write failed; the database takes no more
    /// writes until it is reopened.
    SHALE_POISONED = 7,
    /// The directory holds something that is not a shale database (or, with
    /// create_if_missing off, nothing).
    SHALE_NOT_A_DATABASE = 8,
    /// A bug in shale (a broken invariant, or a panic caught at the boundary).
    SHALE_INTERNAL = 9,
    /// `shale_close`: the database is closed (synced, its lock released), but
    /// the engine still saw snapshots or iterators open. `shale_close`
    /// releases its handles' first, so this happens only when one is freed
    /// on another thread during the close.
    SHALE_LIVE_HANDLES = 10,
}

impl shale_code_t {
    fn name(self) -> &'static std::ffi::CStr {
        match self {
            shale_code_t::SHALE_OK => c"SHALE_OK",
            shale_code_t::SHALE_INVALID_ARGUMENT => c"SHALE_INVALID_ARGUMENT",
            shale_code_t::SHALE_CORRUPTION => c"SHALE_CORRUPTION",
            shale_code_t::SHALE_IO => c"SHALE_IO",
            shale_code_t::SHALE_LOCKED => c"SHALE_LOCKED",
            shale_code_t::SHALE_CLOSED => c"SHALE_CLOSED",
            shale_code_t::SHALE_READ_ONLY => c"SHALE_READ_ONLY",
            shale_code_t::SHALE_POISONED => c"SHALE_POISONED",
            shale_code_t::SHALE_NOT_A_DATABASE => c"SHALE_NOT_A_DATABASE",
            shale_code_t::SHALE_INTERNAL => c"SHALE_INTERNAL",
            shale_code_t::SHALE_LIVE_HANDLES => c"SHALE_LIVE_HANDLES",
        }
    }

    const ALL: [shale_code_t; 11] = [
        shale_code_t::SHALE_OK,
        shale_code_t::SHALE_INVALID_ARGUMENT,
        shale_code_t::SHALE_CORRUPTION,
        shale_code_t::SHALE_IO,
        shale_code_t::SHALE_LOCKED,
        shale_code_t::SHALE_CLOSED,
        shale_code_t::SHALE_READ_ONLY,
        shale_code_t::SHALE_POISONED,
        shale_code_t::SHALE_NOT_A_DATABASE,
        shale_code_t::SHALE_INTERNAL,
        shale_code_t::SHALE_LIVE_HANDLES,
    ];
}

/// A failed call: its code and its message.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) code: shale_code_t,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn invalid(message: impl Into<String>) -> Failure {
        Failure {
            code: shale_code_t::SHALE_INVALID_ARGUMENT,
            message: message.into(),
        }
    }

    pub(crate) fn closed() -> Failure {
        Failure {
            code: shale_code_t::SHALE_CLOSED,
            message: shale::Error::Closed.to_string(),
        }
    }
}

impl From<shale::Error> for Failure {
    fn from(e: shale::Error) -> Failure {
        use shale::Error as E;
        let code = match &e {
            E::Io { .. } => shale_code_t::SHALE_IO,
            E::Corruption { .. } => shale_code_t::SHALE_CORRUPTION,
            E::Poisoned { .. } => shale_code_t::SHALE_POISONED,
            E::InvalidArgument(_) => shale_code_t::SHALE_INVALID_ARGUMENT,
            E::NotADatabase { .. } => shale_code_t::SHALE_NOT_A_DATABASE,
            E::Locked { .. } => shale_code_t::SHALE_LOCKED,
            E::Closed => shale_code_t::SHALE_CLOSED,
            E::ReadOnly { .. } => shale_code_t::SHALE_READ_ONLY,
            E::Internal(_) => shale_code_t::SHALE_INTERNAL,
            E::LiveHandles { .. } => shale_code_t::SHALE_LIVE_HANDLES,
            // `Error` is non-exhaustive: a kind added later is reported as
            // internal until it gets a code of its own.
            _ => shale_code_t::SHALE_INTERNAL,
        };
        Failure {
            code,
            message: e.to_string(),
        }
    }
}

pub(crate) type Outcome = Result<(), Failure>;

/// Runs the body of an entry point: clears `*errmsg`, catches a panic
/// (reported as `SHALE_INTERNAL`), and turns a failure into its code and a
/// message in `*errmsg`.
///
/// # Safety
///
/// `errmsg` is NULL or valid for writing one pointer.
pub(crate) unsafe fn run(errmsg: *mut *mut c_char, body: impl FnOnce() -> Outcome) -> shale_code_t {
    if !errmsg.is_null() {
        // SAFETY: the caller passes NULL or a pointer valid for writes.
        unsafe { errmsg.write(std::ptr::null_mut()) };
    }
    let outcome = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(outcome) => outcome,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_string());
            Err(Failure {
                code: shale_code_t::SHALE_INTERNAL,
                message: format!("internal error (a bug in shale): panic: {what}"),
            })
        }
    };
    match outcome {
        Ok(()) => shale_code_t::SHALE_OK,
        Err(failure) => {
            if !errmsg.is_null() {
                // A panic while building the message must not escape either.
                let message = catch_unwind(AssertUnwindSafe(|| c_string(&failure.message)))
                    .unwrap_or(std::ptr::null_mut());
                // SAFETY: as above.
                unsafe { errmsg.write(message) };
            }
            failure.code
        }
    }
}

/// A copy of `s` as a NUL-terminated string in memory from `malloc` (NUL bytes
/// within `s` are written as `\0`), or NULL if `malloc` fails.
pub(crate) fn c_string(s: &str) -> *mut c_char {
    let text = s.replace('\0', "\\0");
    let bytes = text.as_bytes();
    let ptr = malloc_copy(bytes, 1);
    if !ptr.is_null() {
        // SAFETY: `malloc_copy` allocated bytes.len() + 1 bytes.
        unsafe { ptr.add(bytes.len()).write(0) };
    }
    ptr.cast()
}

/// A copy of `bytes` in `malloc`ed memory with `extra` more bytes after it
/// (never NULL on success, even for an empty copy), or NULL if `malloc` fails.
pub(crate) fn malloc_copy(bytes: &[u8], extra: usize) -> *mut u8 {
    let size = (bytes.len() + extra).max(1);
    // SAFETY: malloc has no precondition; the result is checked for NULL.
    let ptr = unsafe { libc::malloc(size) }.cast::<u8>();
    if !ptr.is_null() {
        // SAFETY: `ptr` holds at least bytes.len() bytes and cannot overlap
        // `bytes`, which lives in memory that is not newly allocated.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr, bytes.len()) };
    }
    ptr
}

/// The bytes at `ptr`: NULL is the empty slice when `len` is 0 and an invalid
/// argument otherwise.
///
/// # Safety
///
/// A non-NULL `ptr` is valid for reading `len` bytes for `'a`.
pub(crate) unsafe fn bytes<'a>(
    ptr: *const u8,
    len: usize,
    what: &str,
) -> Result<&'a [u8], Failure> {
    if ptr.is_null() {
        if len == 0 {
            return Ok(&[]);
        }
        return Err(Failure::invalid(format!(
            "{what} is NULL with length {len}"
        )));
    }
    if len > isize::MAX as usize {
        return Err(Failure::invalid(format!(
            "{what} length {len} is too large"
        )));
    }
    // SAFETY: non-NULL, at most isize::MAX bytes, valid per the caller.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Like [`bytes`], but NULL means "none" (and must come with length 0).
///
/// # Safety
///
/// As for [`bytes`].
pub(crate) unsafe fn optional_bytes<'a>(
    ptr: *const u8,
    len: usize,
    what: &str,
) -> Result<Option<&'a [u8]>, Failure> {
    if ptr.is_null() {
        if len != 0 {
            return Err(Failure::invalid(format!(
                "{what} is NULL with length {len}"
            )));
        }
        return Ok(None);
    }
    // SAFETY: forwarded from the caller.
    unsafe { bytes(ptr, len, what) }.map(Some)
}

/// Checks the bounds of a range deletion `[start, end)`: `start > end` is an
/// invalid argument (`start == end` is an empty range, not an error).
pub(crate) fn check_range(start: &[u8], end: &[u8]) -> Outcome {
    if start > end {
        return Err(Failure::invalid(format!(
            "the range [{}, {}) has its start above its end",
            shale::tools::user_key_text(start),
            shale::tools::user_key_text(end)
        )));
    }
    Ok(())
}

/// Writes `value` through `out`, an out-parameter that must not be NULL.
///
/// # Safety
///
/// A non-NULL `out` is valid for writing a `T`.
pub(crate) unsafe fn put_out<T>(out: *mut T, value: T, what: &str) -> Outcome {
    if out.is_null() {
        return Err(Failure::invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and valid per the caller.
    unsafe { out.write(value) };
    Ok(())
}

/// Checks an out-parameter before any work is done.
pub(crate) fn need_out<T>(out: *mut T, what: &str) -> Outcome {
    if out.is_null() {
        return Err(Failure::invalid(format!("{what} is NULL")));
    }
    Ok(())
}

/// The kinds of handles, for the magic number at the start of each and for the
/// register of live handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Options = 0x5348_4f50,
    Db = 0x5348_4442,
    Batch = 0x5348_4254,
    Iterator = 0x5348_4954,
    Snapshot = 0x5348_534e,
    Pinned = 0x5348_5056,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Options => "options",
            Kind::Db => "database",
            Kind::Batch => "batch",
            Kind::Iterator => "iterator",
            Kind::Snapshot => "snapshot",
            Kind::Pinned => "pinned value",
        }
    }
}

/// A handle type: an opaque marker type for C. Its pointers point to a
/// [`Tagged`] body.
pub(crate) trait Handle: Sized {
    const KIND: Kind;
    /// What the handle points to.
    type Body;
}

/// A handle's memory: the magic number naming its kind first (every handle
/// can be checked through a `*const u32` before its type is trusted), then the
/// body.
#[repr(C)]
pub(crate) struct Tagged<B> {
    magic: u32,
    value: B,
}

/// The addresses of every live handle with its kind. Consulted only when a
/// handle is freed (never on the hot path), so that freeing a handle twice or
/// freeing a pointer that is not a handle is `SHALE_INVALID_ARGUMENT` instead
/// of undefined behaviour, as long as no new handle has been given the same
/// address meanwhile.
static LIVE: Mutex<Option<HashMap<usize, Kind>>> = Mutex::new(None);

/// Moves `handle` to the heap, records it as live and returns its address.
pub(crate) fn into_raw<T: Handle>(body: T::Body) -> *mut T {
    let ptr = Box::into_raw(Box::new(Tagged {
        magic: T::KIND as u32,
        value: body,
    }))
    .cast::<T>();
    LIVE.lock()
        .get_or_insert_with(HashMap::new)
        .insert(ptr as usize, T::KIND);
    ptr
}

/// Takes back a handle made by [`into_raw`] to drop it: fails, touching
/// nothing, if `ptr` is not a live handle of kind `T`.
///
/// # Safety
///
/// `ptr` is NULL or a pointer the caller got from this library (a live handle
/// is then valid; a freed one is never dereferenced).
pub(crate) unsafe fn from_raw<T: Handle>(ptr: *mut T) -> Result<T::Body, Failure> {
    if ptr.is_null() {
        return Err(Failure::invalid(format!(
            "{} handle is NULL",
            T::KIND.name()
        )));
    }
    let mut live = LIVE.lock();
    match live.as_mut().and_then(|m| m.get(&(ptr as usize)).copied()) {
        Some(kind) if kind == T::KIND => {
            if let Some(m) = live.as_mut() {
                m.remove(&(ptr as usize));
            }
            // SAFETY: the register holds `ptr` as a live handle of kind `T`:
            // it came from `Box::into_raw` of a `Tagged<T::Body>` and has not
            // been freed.
            let tagged = unsafe { Box::from_raw(ptr.cast::<Tagged<T::Body>>()) };
            Ok(tagged.value)
        }
        Some(kind) => Err(Failure::invalid(format!(
            "handle is a {}, not a {}",
            kind.name(),
            T::KIND.name()
        ))),
        None => Err(Failure::invalid(format!(
            "not a live {} handle (freed already?)",
            T::KIND.name()
        ))),
    }
}

/// The handle behind `ptr`, after checking that it is not NULL and carries the
/// magic number of its kind.
///
/// # Safety
///
/// `ptr` is NULL or points to a live handle made by this library (of any
/// kind: every handle starts with its magic number).
pub(crate) unsafe fn handle<'a, T: Handle>(ptr: *const T) -> Result<&'a T::Body, Failure> {
    if ptr.is_null() {
        return Err(Failure::invalid(format!(
            "{} handle is NULL",
            T::KIND.name()
        )));
    }
    // SAFETY: a live handle of any kind is a `Tagged`, a `repr(C)` struct
    // whose first field is a `u32` magic number, so reading one `u32` is
    // valid.
    let magic = unsafe { ptr.cast::<u32>().read() };
    if magic != T::KIND as u32 {
        return Err(Failure::invalid(format!("not a {} handle", T::KIND.name())));
    }
    // SAFETY: the magic number says it is a `Tagged<T::Body>`, live per the
    // caller.
    Ok(unsafe { &(*ptr.cast::<Tagged<T::Body>>()).value })
}

thread_local! {
    /// The databases (their `Shared`'s address) whose read lock this thread
    /// holds, innermost last: more than one only inside callbacks.
    static HELD: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What a database handle owns and its dependent handles share: the open
/// database (None once closed) and the dependents to release at close.
pub(crate) struct Shared {
    /// Readers hold the read lock for the length of one call; `shale_close`
    /// takes the write lock, so it waits for calls in progress.
    pub(crate) db: parking_lot::RwLock<Option<shale::Db>>,
    /// The default `sync` of `shale_put`, `shale_delete` and
    /// `shale_delete_range` (from the options).
    pub(crate) sync: bool,
    dependents: Mutex<HashMap<u64, Weak<dyn Release>>>,
    next_id: AtomicU64,
}

/// A dependent's engine object, dropped when the database closes.
pub(crate) trait Release: Send + Sync {
    fn release(&self);
}

/// The engine object of a dependent handle (an iterator, a snapshot): `None`
/// once released.
pub(crate) struct Slot<T>(pub(crate) Mutex<Option<T>>);

impl<T: Send> Release for Slot<T> {
    fn release(&self) {
        let taken = self.0.lock().take();
        drop(taken);
    }
}

impl Shared {
    pub(crate) fn new(db: shale::Db, sync: bool) -> Shared {
        Shared {
            db: parking_lot::RwLock::new(Some(db)),
            sync,
            dependents: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
        }
    }

    /// Runs `f` on the open database; `SHALE_CLOSED` after close.
    ///
    /// A call made from inside a callback of another call on this database
    /// (`shale_multi_get_each`) takes the read lock recursively: a plain
    /// read would queue behind a `shale_close` waiting for the outer call,
    /// which waits for it.
    pub(crate) fn with_db<R>(
        &self,
        f: impl FnOnce(&shale::Db) -> Result<R, Failure>,
    ) -> Result<R, Failure> {
        let me = self as *const Shared as usize;
        let guard = if self.held_here() {
            self.db.read_recursive()
        } else {
            self.db.read()
        };
        let Some(db) = guard.as_ref() else {
            return Err(Failure::closed());
        };
        HELD.with(|h| h.borrow_mut().push(me));
        // Popped on the way out, a panic (caught by `run`) included.
        struct Pop;
        impl Drop for Pop {
            fn drop(&mut self) {
                HELD.with(|h| h.borrow_mut().pop());
            }
        }
        let _pop = Pop;
        f(db)
    }

    /// Records a dependent; the caller holds the database's read lock, so the
    /// database cannot close before it is recorded.
    pub(crate) fn register(&self, slot: Weak<dyn Release>) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.dependents.lock().insert(id, slot);
        id
    }

    /// Forgets a dependent that is being freed.
    pub(crate) fn unregister(&self, id: u64) {
        self.dependents.lock().remove(&id);
    }

    /// Whether this thread is inside a call on this database (in a callback
    /// of `shale_multi_get_each`): closing or freeing it there would wait for
    /// that call, or pull the handle from under it.
    pub(crate) fn held_here(&self) -> bool {
        let me = self as *const Shared as usize;
        HELD.with(|h| h.borrow().contains(&me))
    }

    /// Closes the database: releases every dependent's engine object, then
    /// closes the engine (which syncs the log). `SHALE_CLOSED` if closed
    /// already.
    pub(crate) fn close(&self) -> Outcome {
        if self.held_here() {
            return Err(Failure::invalid(
                "the database cannot be closed from inside a callback of a call on it",
            ));
        }
        let mut guard = self.db.write();
        let Some(db) = guard.take() else {
            return Err(Failure::closed());
        };
        let dependents: Vec<Arc<dyn Release>> = self
            .dependents
            .lock()
            .drain()
            .filter_map(|(_, weak)| weak.upgrade())
            .collect();
        for d in dependents {
            d.release();
        }
        db.close()?;
        Ok(())
    }
}

/// The name of a code (`"SHALE_IO"`), a static string; `"SHALE_UNKNOWN"` for
/// a value that is not a code. One of the three functions that return no
/// code (it cannot fail).
#[no_mangle]
pub extern "C" fn shale_code_name(code: i32) -> *const c_char {
    shale_code_t::ALL
        .iter()
        .find(|c| **c as i32 == code)
        .map_or(c"SHALE_UNKNOWN".as_ptr(), |c| c.name().as_ptr())
}

/// Frees memory this library returned: a value from `shale_get`,
/// `shale_snapshot_get` or `shale_multi_get`, a message from an `errmsg`
/// out-parameter, the text of `shale_stats`. It is `malloc`ed memory, so C's
/// `free` does the same. NULL is ignored. Not for handles (a `shale_pinned_t`
/// is freed by `shale_pinned_free`). One of the three functions that return
/// no code (like `free`, it cannot fail).
///
/// # Safety
///
/// `ptr` is NULL or memory returned by this library and not freed yet.
#[no_mangle]
pub unsafe extern "C" fn shale_free(ptr: *mut std::ffi::c_void) {
    // SAFETY: NULL or a live allocation of malloc, per the caller.
    unsafe { libc::free(ptr) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_in_an_entry_point_becomes_an_internal_error_with_a_message() {
        let mut msg: *mut c_char = std::ptr::null_mut();
        // SAFETY: `msg` is a valid out-parameter.
        let code = unsafe { run(&mut msg, || panic!("boom")) };
        assert_eq!(code, shale_code_t::SHALE_INTERNAL);
        assert!(!msg.is_null());
        // SAFETY: `run` wrote a NUL-terminated string from malloc.
        let text = unsafe { std::ffi::CStr::from_ptr(msg) }
            .to_string_lossy()
            .into_owned();
        assert!(text.contains("panic: boom"), "{text}");
        // SAFETY: from malloc, freed once.
        unsafe { shale_free(msg.cast()) };
    }

    #[test]
    fn every_engine_error_maps_to_its_code() {
        use shale::Error as E;
        let path = std::path::PathBuf::from("/x");
        let cases = [
            (
                E::io("op", &path, std::io::Error::other("x")),
                shale_code_t::SHALE_IO,
            ),
            (
                E::corruption(&path, 1, "bad"),
                shale_code_t::SHALE_CORRUPTION,
            ),
            (
                E::Poisoned {
                    cause: Box::new(E::Closed),
                },
                shale_code_t::SHALE_POISONED,
            ),
            (
                E::InvalidArgument("x".into()),
                shale_code_t::SHALE_INVALID_ARGUMENT,
            ),
            (
                E::NotADatabase {
                    path: path.clone(),
                    reason: "x".into(),
                },
                shale_code_t::SHALE_NOT_A_DATABASE,
            ),
            (E::Locked { path: path.clone() }, shale_code_t::SHALE_LOCKED),
            (E::Closed, shale_code_t::SHALE_CLOSED),
            (E::ReadOnly { path }, shale_code_t::SHALE_READ_ONLY),
            (E::Internal("x".into()), shale_code_t::SHALE_INTERNAL),
            (
                E::LiveHandles {
                    snapshots: 1,
                    iterators: 0,
                },
                shale_code_t::SHALE_LIVE_HANDLES,
            ),
        ];
        for (error, code) in cases {
            assert_eq!(Failure::from(error).code, code);
        }
    }

    #[test]
    fn code_names_are_the_enumerators() {
        let name = |c: i32| {
            // SAFETY: shale_code_name returns static NUL-terminated strings.
            unsafe { std::ffi::CStr::from_ptr(shale_code_name(c)) }
                .to_str()
                .map(String::from)
        };
        assert_eq!(name(3).as_deref(), Ok("SHALE_IO"));
        assert_eq!(name(0).as_deref(), Ok("SHALE_OK"));
        assert_eq!(name(-1).as_deref(), Ok("SHALE_UNKNOWN"));
        assert_eq!(name(10).as_deref(), Ok("SHALE_LIVE_HANDLES"));
        assert_eq!(name(11).as_deref(), Ok("SHALE_UNKNOWN"));
    }

    #[test]
    fn messages_keep_interior_nul_bytes_visible() {
        let p = c_string("a\0b");
        // SAFETY: c_string returns a NUL-terminated malloc'ed string.
        let text = unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes().to_vec();
        assert_eq!(text, b"a\\0b");
        // SAFETY: freed once.
        unsafe { shale_free(p.cast()) };
    }
}
