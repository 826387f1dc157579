//! `shale_snapshot_t`: a consistent read-only view of a database.

use std::ffi::c_char;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use shale::Snapshot;

use crate::db::{
    check_get_into_outs, check_get_outs, deliver_copy, deliver_get, deliver_into, shale_db_t,
};
use crate::pinned::{deliver_pinned, shale_pinned_t};
use crate::{
    bytes, handle, into_raw, need_out, run, shale_code_t, Failure, Handle, Kind, Release, Shared,
    Slot,
};

/// A snapshot: reads through it see the database as it was when it was taken,
/// and the engine keeps the versions it can see while it lives. Made by
/// `shale_snapshot_create`; `shale_snapshot_free` releases it. Closing the
/// database releases it too: reads through it then fail with `SHALE_CLOSED`,
/// and the handle must still be freed. Thread safety: any number of threads
/// may read through one snapshot at once.
pub struct shale_snapshot_t {
    _opaque: [u8; 0],
}

/// What a `shale_snapshot_t` points to.
pub(crate) struct SnapshotBody {
    pub(crate) shared: Arc<Shared>,
    pub(crate) slot: Arc<Slot<Snapshot>>,
    id: u64,
}

impl Handle for shale_snapshot_t {
    const KIND: Kind = Kind::Snapshot;
    type Body = SnapshotBody;
}

impl SnapshotBody {
    /// Runs `f` on the engine's snapshot while its database is open.
    pub(crate) fn with<R>(
        &self,
        f: impl FnOnce(&Snapshot) -> Result<R, Failure>,
    ) -> Result<R, Failure> {
        self.shared.with_db(|_| {
            let guard = self.slot.0.lock();
            match guard.as_ref() {
                Some(s) => f(s),
                None => Err(Failure::closed()),
            }
        })
    }
}

/// Takes a snapshot of the database's current state.
///
/// # Safety
///
/// `db` is a live database handle; `out` is valid for writing a pointer;
/// `errmsg` is NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_snapshot_create(
    db: *mut shale_db_t,
    out: *mut *mut shale_snapshot_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            need_out(out, "out")?;
            let h = handle(db)?;
            let shared = h.shared.clone();
            let ptr = h.shared.with_db(|d| {
                let slot = Arc::new(Slot(Mutex::new(Some(d.snapshot()))));
                let weak: Weak<dyn Release> = Arc::downgrade(&slot) as Weak<dyn Release>;
                let id = shared.register(weak);
                Ok(into_raw::<shale_snapshot_t>(SnapshotBody {
                    shared: shared.clone(),
                    slot,
                    id,
                }))
            })?;
            out.write(ptr);
            Ok(())
        })
    }
}

/// Releases a snapshot and frees its handle (also after the database closed).
/// `SHALE_INVALID_ARGUMENT` (and nothing freed) for NULL or a pointer that is
/// not a live snapshot, such as one freed already.
///
/// # Safety
///
/// `snapshot` is NULL or a pointer returned by this library; no other thread
/// uses it.
#[no_mangle]
pub unsafe extern "C" fn shale_snapshot_free(
    snapshot: *mut shale_snapshot_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: `from_raw` dereferences nothing unless the pointer is live.
    unsafe {
        run(errmsg, || {
            let boxed = crate::from_raw(snapshot)?;
            boxed.shared.unregister(boxed.id);
            drop(boxed);
            Ok(())
        })
    }
}

/// Like `shale_get`, as of the snapshot.
///
/// # Safety
///
/// As for `shale_get`, with a live snapshot handle for `snapshot`.
#[no_mangle]
pub unsafe extern "C" fn shale_snapshot_get(
    snapshot: *const shale_snapshot_t,
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
            let s = handle(snapshot)?;
            let key = bytes(key, key_len, "key")?;
            check_get_outs(value, value_len, found)?;
            let v = s.with(|s| Ok(s.get_pinned(key)?))?;
            deliver_get(v, found, |v| deliver_copy(v, value, value_len))
        })
    }
}

/// Like `shale_get_into`, as of the snapshot.
///
/// # Safety
///
/// As for `shale_get_into`, with a live snapshot handle for `snapshot`.
#[no_mangle]
pub unsafe extern "C" fn shale_snapshot_get_into(
    snapshot: *const shale_snapshot_t,
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
            let s = handle(snapshot)?;
            let key = bytes(key, key_len, "key")?;
            check_get_into_outs(buf, buf_cap, value_len, found)?;
            let v = s.with(|s| Ok(s.get_pinned(key)?))?;
            deliver_get(v, found, |v| deliver_into(v, buf, buf_cap, value_len))
        })
    }
}

/// Like `shale_get_pinned`, as of the snapshot. The handle stays valid after
/// the snapshot is freed and after the database is closed, until
/// `shale_pinned_free`.
///
/// # Safety
///
/// As for `shale_get_pinned`, with a live snapshot handle for `snapshot`.
#[no_mangle]
pub unsafe extern "C" fn shale_snapshot_get_pinned(
    snapshot: *const shale_snapshot_t,
    key: *const u8,
    key_len: usize,
    out: *mut *mut shale_pinned_t,
    found: *mut bool,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            let s = handle(snapshot)?;
            let key = bytes(key, key_len, "key")?;
            need_out(out, "out")?;
            need_out(found, "found")?;
            let v = s.with(|s| Ok(s.get_pinned(key)?))?;
            deliver_pinned(v, out, found);
            Ok(())
        })
    }
}
