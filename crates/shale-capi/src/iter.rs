//! `shale_iterator_t`: ordered iteration over a database or a snapshot, in
//! both directions, within bounds.

use std::ffi::c_char;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use shale::{DbIterator, ReadOptions};

use crate::db::shale_db_t;
use crate::snapshot::shale_snapshot_t;
use crate::{
    bytes, handle, into_raw, need_out, optional_bytes, put_out, run, shale_code_t, Failure, Handle,
    Kind, Outcome, Release, Shared, Slot,
};

/// An iterator over the keys and values of a database or a snapshot, in key
/// order, within optional bounds, forward and backward. It reads the state of
/// the moment it was made (later writes are not seen). Unpositioned until one
/// of the seek functions. Made by `shale_iterator_create`, freed by
/// `shale_iterator_free`. Closing the database releases what it holds: every
/// call on it then fails with `SHALE_CLOSED`, and the handle must still be
/// freed. Thread safety: calls are serialized, so concurrent use is safe, but
/// one iterator has one position: use it from one thread at a time.
pub struct shale_iterator_t {
    _opaque: [u8; 0],
}

/// What a `shale_iterator_t` points to.
pub(crate) struct IteratorBody {
    shared: Arc<Shared>,
    slot: Arc<Slot<DbIterator>>,
    id: u64,
}

impl Handle for shale_iterator_t {
    const KIND: Kind = Kind::Iterator;
    type Body = IteratorBody;
}

/// What an iterator reads: all fields may be zero (NULL), meaning "the latest
/// state, no bounds". Each bound is NULL (none; its length must be 0) or
/// `len` bytes (an empty bound is a bound: an empty upper bound admits
/// nothing). The options are read by `shale_iterator_create` and not kept.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct shale_read_options_t {
    /// Read as of this snapshot (of the same database), or NULL for the
    /// latest state.
    pub snapshot: *const shale_snapshot_t,
    /// First key to return (inclusive), or NULL.
    pub lower_bound: *const u8,
    /// Length of `lower_bound`.
    pub lower_bound_len: usize,
    /// Key to stop before (exclusive), or NULL.
    pub upper_bound: *const u8,
    /// Length of `upper_bound`.
    pub upper_bound_len: usize,
    /// Only keys starting with these bytes, or NULL; combined with the bounds
    /// (the iterator keeps to both).
    pub prefix: *const u8,
    /// Length of `prefix`.
    pub prefix_len: usize,
}

/// The iterator's current entry. When `valid` is false the other fields are
/// NULL and 0. The key and value point into the iterator and stay valid until
/// its next call that moves it, `shale_iterator_free`, or the close of its
/// database: copy what you keep.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct shale_entry_t {
    /// True if the iterator is positioned on a key.
    pub valid: bool,
    /// The key.
    pub key: *const u8,
    /// Length of the key.
    pub key_len: usize,
    /// The value.
    pub value: *const u8,
    /// Length of the value.
    pub value_len: usize,
}

/// The bounds of a read: the given bounds narrowed to the prefix.
pub(crate) fn bounds(
    lower: Option<&[u8]>,
    upper: Option<&[u8]>,
    prefix: Option<&[u8]>,
) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let mut lower = lower.map(<[u8]>::to_vec);
    let mut upper = upper.map(<[u8]>::to_vec);
    if let Some(p) = prefix {
        if lower.as_deref().is_none_or(|l| l < p) {
            lower = Some(p.to_vec());
        }
        if let Some(s) = shale::prefix_successor(p) {
            if upper.as_deref().is_none_or(|u| u > s.as_slice()) {
                upper = Some(s);
            }
        }
    }
    (lower, upper)
}

/// Makes an iterator over `db` with `options` (NULL: the latest state, no
/// bounds) and stores it in `*out`. `SHALE_INVALID_ARGUMENT` for a snapshot of
/// another database; `SHALE_CLOSED` for a snapshot released by a close.
///
/// # Safety
///
/// `db` is a live database handle; `options` is NULL or valid for reading a
/// `shale_read_options_t` whose pointers are NULL or valid for their lengths
/// (and `snapshot` NULL or a live snapshot handle); `out` is valid for writing
/// a pointer; `errmsg` is NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_iterator_create(
    db: *mut shale_db_t,
    options: *const shale_read_options_t,
    out: *mut *mut shale_iterator_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            need_out(out, "out")?;
            let h = handle(db)?;
            let (lower, upper, snapshot) = if options.is_null() {
                (None, None, None)
            } else {
                let o = options.read();
                let lower = optional_bytes(o.lower_bound, o.lower_bound_len, "lower_bound")?;
                let upper = optional_bytes(o.upper_bound, o.upper_bound_len, "upper_bound")?;
                let prefix = optional_bytes(o.prefix, o.prefix_len, "prefix")?;
                let snapshot = if o.snapshot.is_null() {
                    None
                } else {
                    let s = handle(o.snapshot)?;
                    if !Arc::ptr_eq(&s.shared, &h.shared) {
                        return Err(Failure::invalid("the snapshot belongs to another database"));
                    }
                    Some(s)
                };
                let (lower, upper) = bounds(lower, upper, prefix);
                (lower, upper, snapshot)
            };
            let read = ReadOptions::default().lower_bound(lower).upper_bound(upper);
            let shared = h.shared.clone();
            let ptr = h.shared.with_db(|d| {
                let it = match snapshot {
                    // The snapshot's lock is taken under the database's read
                    // lock, the order `shale_close` keeps too.
                    Some(s) => {
                        let guard = s.slot.0.lock();
                        match guard.as_ref() {
                            Some(snap) => snap.iter(&read)?,
                            None => return Err(Failure::closed()),
                        }
                    }
                    None => d.iter(&read)?,
                };
                let slot = Arc::new(Slot(Mutex::new(Some(it))));
                let weak: Weak<dyn Release> = Arc::downgrade(&slot) as Weak<dyn Release>;
                let id = shared.register(weak);
                Ok(into_raw::<shale_iterator_t>(IteratorBody {
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

/// Frees an iterator (also after its database closed). `SHALE_INVALID_ARGUMENT`
/// (and nothing freed) for NULL or a pointer that is not a live iterator, such
/// as one freed already.
///
/// # Safety
///
/// `iterator` is NULL or a pointer returned by this library; no other thread
/// uses it.
#[no_mangle]
pub unsafe extern "C" fn shale_iterator_free(
    iterator: *mut shale_iterator_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: `from_raw` dereferences nothing unless the pointer is live.
    unsafe {
        run(errmsg, || {
            let boxed = crate::from_raw(iterator)?;
            boxed.shared.unregister(boxed.id);
            drop(boxed);
            Ok(())
        })
    }
}

/// Runs `f` on the engine's iterator while the database is open.
///
/// # Safety
///
/// As for [`handle`].
unsafe fn with_iter<R>(
    iterator: *const shale_iterator_t,
    f: impl FnOnce(&mut DbIterator) -> Result<R, Failure>,
) -> Result<R, Failure> {
    // SAFETY: forwarded from the caller.
    let h = unsafe { handle(iterator) }?;
    h.shared.with_db(|_| {
        let mut guard = h.slot.0.lock();
        match guard.as_mut() {
            Some(it) => f(it),
            None => Err(Failure::closed()),
        }
    })
}

/// The current entry of `it`.
fn entry_of(it: &DbIterator) -> shale_entry_t {
    if it.valid() {
        shale_entry_t {
            valid: true,
            key: it.key().as_ptr(),
            key_len: it.key().len(),
            value: it.value().as_ptr(),
            value_len: it.value().len(),
        }
    } else {
        shale_entry_t {
            valid: false,
            key: std::ptr::null(),
            key_len: 0,
            value: std::ptr::null(),
            value_len: 0,
        }
    }
}

/// Moves the iterator with `f`, stores the entry it lands on in `*entry`
/// (when not NULL), and reports the error that ended the iteration, if any.
///
/// # Safety
///
/// As for [`handle`]; `entry` is NULL or valid for writes.
unsafe fn step(
    iterator: *mut shale_iterator_t,
    entry: *mut shale_entry_t,
    f: impl FnOnce(&mut DbIterator),
) -> Outcome {
    // SAFETY: forwarded from the caller.
    unsafe {
        with_iter(iterator, |it| {
            f(it);
            if !entry.is_null() {
                entry.write(entry_of(it));
            }
            it.status()?;
            Ok(())
        })
    }
}

/// Positions the iterator on the first key (at or after the lower bound). This
/// and every other move stores the entry it lands on in `*entry` when `entry`
/// is not NULL (one call per step), and returns `SHALE_OK` when positioned or
/// at the end, or the error (I/O, corruption) that ended the iteration (as
/// `shale_iterator_status` does).
///
/// # Safety
///
/// `iterator` is a live iterator; `entry` is NULL or valid for writing a
/// `shale_entry_t`; `errmsg` is NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_iterator_seek_to_first(
    iterator: *mut shale_iterator_t,
    entry: *mut shale_entry_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe { run(errmsg, || step(iterator, entry, |it| it.seek_to_first())) }
}

/// Positions the iterator on the last key (before the upper bound).
///
/// # Safety
///
/// As for `shale_iterator_seek_to_first`.
#[no_mangle]
pub unsafe extern "C" fn shale_iterator_seek_to_last(
    iterator: *mut shale_iterator_t,
    entry: *mut shale_entry_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe { run(errmsg, || step(iterator, entry, |it| it.seek_to_last())) }
}

/// Positions the iterator on the first key `>= key` (within the bounds).
///
/// # Safety
///
/// As for `shale_iterator_seek_to_first`; `key` is NULL (with length 0) or
/// valid for reading `key_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn shale_iterator_seek(
    iterator: *mut shale_iterator_t,
    key: *const u8,
    key_len: usize,
    entry: *mut shale_entry_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            let key = bytes(key, key_len, "key")?;
            step(iterator, entry, |it| it.seek(key))
        })
    }
}

/// Positions the iterator on the last key `<= key` (within the bounds).
///
/// # Safety
///
/// As for `shale_iterator_seek`.
#[no_mangle]
pub unsafe extern "C" fn shale_iterator_seek_for_prev(
    iterator: *mut shale_iterator_t,
    key: *const u8,
    key_len: usize,
    entry: *mut shale_entry_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            let key = bytes(key, key_len, "key")?;
            step(iterator, entry, |it| it.seek_for_prev(key))
        })
    }
}

/// Moves to the next key; does nothing when not positioned.
///
/// # Safety
///
/// As for `shale_iterator_seek_to_first`.
#[no_mangle]
pub unsafe extern "C" fn shale_iterator_next(
    iterator: *mut shale_iterator_t,
    entry: *mut shale_entry_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe { run(errmsg, || step(iterator, entry, |it| it.next())) }
}

/// Moves to the previous key; does nothing when not positioned.
///
/// # Safety
///
/// As for `shale_iterator_seek_to_first`.
#[no_mangle]
pub unsafe extern "C" fn shale_iterator_prev(
    iterator: *mut shale_iterator_t,
    entry: *mut shale_entry_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe { run(errmsg, || step(iterator, entry, |it| it.prev())) }
}

/// Stores in `*valid` whether the iterator is positioned on a key.
///
/// # Safety
///
/// `iterator` is a live iterator; `valid` is valid for writes; `errmsg` is
/// NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_iterator_valid(
    iterator: *const shale_iterator_t,
    valid: *mut bool,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            need_out(valid, "valid")?;
            let v = with_iter(iterator, |it| Ok(it.valid()))?;
            put_out(valid, v, "valid")
        })
    }
}

/// Stores the current entry in `*entry` without moving.
///
/// # Safety
///
/// `iterator` is a live iterator; `entry` is valid for writing a
/// `shale_entry_t`; `errmsg` is NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_iterator_entry(
    iterator: *const shale_iterator_t,
    entry: *mut shale_entry_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            need_out(entry, "entry")?;
            let e = with_iter(iterator, |it| Ok(entry_of(it)))?;
            put_out(entry, e, "entry")
        })
    }
}

/// The current key or value, or an invalid argument when not positioned.
///
/// # Safety
///
/// As for [`handle`]; `ptr` and `len` are non-NULL and valid for writes.
unsafe fn part(
    iterator: *const shale_iterator_t,
    ptr: *mut *const u8,
    len: *mut usize,
    value: bool,
) -> Outcome {
    // SAFETY: forwarded from the caller.
    let e = unsafe { with_iter(iterator, |it| Ok(entry_of(it))) }?;
    if !e.valid {
        return Err(Failure::invalid("the iterator is not positioned on a key"));
    }
    let (p, n) = if value {
        (e.value, e.value_len)
    } else {
        (e.key, e.key_len)
    };
    // SAFETY: non-NULL per the caller.
    unsafe {
        ptr.write(p);
        len.write(n);
    }
    Ok(())
}

/// Stores the current key in `*key` and `*key_len` (pointing into the
/// iterator, valid until it moves, is freed or its database closes).
/// `SHALE_INVALID_ARGUMENT` when the iterator is not positioned.
///
/// # Safety
///
/// `iterator` is a live iterator; `key` and `key_len` are valid for writes;
/// `errmsg` is NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_iterator_key(
    iterator: *const shale_iterator_t,
    key: *mut *const u8,
    key_len: *mut usize,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            need_out(key, "key")?;
            need_out(key_len, "key_len")?;
            part(iterator, key, key_len, false)
        })
    }
}

/// Stores the current value in `*value` and `*value_len` (as for
/// `shale_iterator_key`).
///
/// # Safety
///
/// As for `shale_iterator_key`.
#[no_mangle]
pub unsafe extern "C" fn shale_iterator_value(
    iterator: *const shale_iterator_t,
    value: *mut *const u8,
    value_len: *mut usize,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        run(errmsg, || {
            need_out(value, "value")?;
            need_out(value_len, "value_len")?;
            part(iterator, value, value_len, true)
        })
    }
}

/// Returns the error (I/O, corruption) that ended the iteration, or
/// `SHALE_OK`: reaching the end is not an error.
///
/// # Safety
///
/// `iterator` is a live iterator; `errmsg` is NULL or valid for writing a
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_iterator_status(
    iterator: *const shale_iterator_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe { run(errmsg, || with_iter(iterator, |it| Ok(it.status()?))) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_become_bounds() {
        let (l, u) = bounds(Some(b"a"), Some(b"z"), Some(b"k"));
        assert_eq!(
            (l.as_deref(), u.as_deref()),
            (Some(&b"k"[..]), Some(&b"l"[..]))
        );
        let (l, u) = bounds(Some(b"k3"), None, Some(b"k"));
        assert_eq!(
            (l.as_deref(), u.as_deref()),
            (Some(&b"k3"[..]), Some(&b"l"[..]))
        );
        let (l, u) = bounds(None, Some(b"k2"), Some(b"k"));
        assert_eq!(
            (l.as_deref(), u.as_deref()),
            (Some(&b"k"[..]), Some(&b"k2"[..]))
        );
        let (l, u) = bounds(None, None, None);
        assert_eq!((l, u), (None, None));
    }
}
