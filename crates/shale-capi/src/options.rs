//! `shale_options_t`: the options of `shale_open`.

use std::ffi::c_char;

use parking_lot::Mutex;
use shale::{FilterKind, FilterLevels, FilterPolicy, Options};

use crate::{handle, into_raw, need_out, run, shale_code_t, Failure, Handle, Kind};

/// Options of `shale_open` and `shale_open_read_only`: the engine's defaults
/// until set. Made by `shale_options_create`, freed by `shale_options_free`;
/// `shale_open` copies them, so they may be freed or changed right after.
/// Thread safety: the setters may be called from any thread (they are
/// serialized); a handle is normally used by one thread.
pub struct shale_options_t {
    _opaque: [u8; 0],
}

/// What a `shale_options_t` points to.
pub(crate) struct OptionsBody {
    pub(crate) inner: Mutex<OptionsSpec>,
}

/// The engine's options and the C API's own.
#[derive(Clone, Default)]
pub(crate) struct OptionsSpec {
    pub(crate) engine: Options,
    /// Default `sync` of `shale_put`, `shale_delete`, `shale_delete_range`.
    pub(crate) sync: bool,
}

impl Handle for shale_options_t {
    const KIND: Kind = Kind::Options;
    type Body = OptionsBody;
}

/// No filters (every Get of a missing key reads the tables that could hold it).
pub const SHALE_FILTER_NONE: i32 = 0;
/// Blocked Bloom filters.
pub const SHALE_FILTER_BLOOM: i32 = 1;
/// Binary fuse filters (the default, 9 bits per key).
pub const SHALE_FILTER_BINARY_FUSE: i32 = 2;
/// Filters on every level but the last (the default).
pub const SHALE_FILTER_LEVELS_ALL_BUT_LAST: i32 = 0;
/// Filters on every level.
pub const SHALE_FILTER_LEVELS_ALL: i32 = 1;

/// Makes options holding the engine's defaults (create_if_missing on, a
/// 32 MiB block cache, 64 MiB write buffer, 1000 open files, binary fuse
/// filters of 9 bits per key on every level but the last, writes not synced).
///
/// # Safety
///
/// `out` is valid for writing a pointer; `errmsg` is NULL or valid for
/// writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_options_create(
    out: *mut *mut shale_options_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: pointers as documented, checked by `run` and `need_out`.
    unsafe {
        run(errmsg, || {
            need_out(out, "out")?;
            let ptr = into_raw::<shale_options_t>(OptionsBody {
                inner: Mutex::new(OptionsSpec::default()),
            });
            out.write(ptr);
            Ok(())
        })
    }
}

/// Frees options. `SHALE_INVALID_ARGUMENT` (and nothing freed) for NULL or a
/// pointer that is not live options.
///
/// # Safety
///
/// `options` is NULL or a pointer returned by this library.
#[no_mangle]
pub unsafe extern "C" fn shale_options_free(
    options: *mut shale_options_t,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: `from_raw` dereferences nothing unless the pointer is live.
    unsafe {
        run(errmsg, || {
            drop(crate::from_raw(options)?);
            Ok(())
        })
    }
}

/// Runs `f` on the options behind `options`.
///
/// # Safety
///
/// As for [`handle`].
unsafe fn set(
    options: *const shale_options_t,
    errmsg: *mut *mut c_char,
    f: impl FnOnce(&mut OptionsSpec) -> Result<(), Failure>,
) -> shale_code_t {
    // SAFETY: forwarded from the caller.
    unsafe {
        run(errmsg, || {
            let h = handle(options)?;
            let mut spec = h.inner.lock();
            f(&mut spec)
        })
    }
}

/// Creates the database if the directory holds none (default on).
///
/// # Safety
///
/// `options` is a live options handle; `errmsg` is NULL or valid for writing a
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn shale_options_set_create_if_missing(
    options: *mut shale_options_t,
    value: bool,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        set(options, errmsg, |o| {
            o.engine.create_if_missing = value;
            Ok(())
        })
    }
}

/// Fails the open if a database exists (default off).
///
/// # Safety
///
/// As for `shale_options_set_create_if_missing`.
#[no_mangle]
pub unsafe extern "C" fn shale_options_set_error_if_exists(
    options: *mut shale_options_t,
    value: bool,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        set(options, errmsg, |o| {
            o.engine.error_if_exists = value;
            Ok(())
        })
    }
}

/// Block cache capacity in bytes (default 32 MiB).
///
/// # Safety
///
/// As for `shale_options_set_create_if_missing`.
#[no_mangle]
pub unsafe extern "C" fn shale_options_set_block_cache_bytes(
    options: *mut shale_options_t,
    bytes: u64,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        set(options, errmsg, |o| {
            o.engine.block_cache_bytes = bytes;
            Ok(())
        })
    }
}

/// Size at which the memtable is flushed, in bytes (default 64 MiB; 0 is
/// `SHALE_INVALID_ARGUMENT`).
///
/// # Safety
///
/// As for `shale_options_set_create_if_missing`.
#[no_mangle]
pub unsafe extern "C" fn shale_options_set_write_buffer_size(
    options: *mut shale_options_t,
    bytes: usize,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        set(options, errmsg, |o| {
            if bytes == 0 {
                return Err(Failure::invalid("write buffer size must be positive"));
            }
            o.engine.write_buffer_size = bytes;
            Ok(())
        })
    }
}

/// Table files kept open (default 1000; 0 is `SHALE_INVALID_ARGUMENT`).
///
/// # Safety
///
/// As for `shale_options_set_create_if_missing`.
#[no_mangle]
pub unsafe extern "C" fn shale_options_set_max_open_files(
    options: *mut shale_options_t,
    files: usize,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        set(options, errmsg, |o| {
            if files == 0 {
                return Err(Failure::invalid("max open files must be positive"));
            }
            o.engine.max_open_files = files;
            Ok(())
        })
    }
}

/// Background threads for flushes and compactions (default 2; 0 is
/// `SHALE_INVALID_ARGUMENT`).
///
/// # Safety
///
/// As for `shale_options_set_create_if_missing`.
#[no_mangle]
pub unsafe extern "C" fn shale_options_set_max_background_jobs(
    options: *mut shale_options_t,
    jobs: usize,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        set(options, errmsg, |o| {
            if jobs == 0 {
                return Err(Failure::invalid("max background jobs must be positive"));
            }
            o.engine.max_background_jobs = jobs;
            Ok(())
        })
    }
}

/// The filter policy: `kind` is `SHALE_FILTER_NONE`, `SHALE_FILTER_BLOOM` or
/// `SHALE_FILTER_BINARY_FUSE`; `bits_per_key` its memory budget (10 bits a
/// key: about 1% false positives for Bloom; 1 to 32); `levels` is
/// `SHALE_FILTER_LEVELS_ALL_BUT_LAST` or `SHALE_FILTER_LEVELS_ALL` (ignored
/// for `SHALE_FILTER_NONE`). Anything else is `SHALE_INVALID_ARGUMENT`.
///
/// # Safety
///
/// As for `shale_options_set_create_if_missing`.
#[no_mangle]
pub unsafe extern "C" fn shale_options_set_filter_policy(
    options: *mut shale_options_t,
    kind: i32,
    bits_per_key: u32,
    levels: i32,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        set(options, errmsg, |o| {
            let kind = match kind {
                SHALE_FILTER_NONE => None,
                SHALE_FILTER_BLOOM => Some(FilterKind::Bloom),
                SHALE_FILTER_BINARY_FUSE => Some(FilterKind::BinaryFuse),
                other => return Err(Failure::invalid(format!("unknown filter kind {other}"))),
            };
            let levels = match levels {
                SHALE_FILTER_LEVELS_ALL_BUT_LAST => FilterLevels::AllButLast,
                SHALE_FILTER_LEVELS_ALL => FilterLevels::All,
                other => return Err(Failure::invalid(format!("unknown filter levels {other}"))),
            };
            let policy = match kind {
                None => FilterPolicy {
                    levels: FilterLevels::None,
                    ..FilterPolicy::default()
                },
                Some(kind) => {
                    if !(1..=32).contains(&bits_per_key) {
                        return Err(Failure::invalid(format!(
                            "bits per key {bits_per_key} is not within 1 to 32"
                        )));
                    }
                    FilterPolicy {
                        bits_per_key,
                        levels,
                        kind,
                        ..FilterPolicy::default()
                    }
                }
            };
            o.engine.filter_policy = policy;
            Ok(())
        })
    }
}

/// Whether `shale_put`, `shale_delete` and `shale_delete_range` sync the
/// write-ahead log before returning (default off: a write survives a crash of
/// the process, not of the machine). `shale_write` takes its own flag.
///
/// # Safety
///
/// As for `shale_options_set_create_if_missing`.
#[no_mangle]
pub unsafe extern "C" fn shale_options_set_sync(
    options: *mut shale_options_t,
    value: bool,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        set(options, errmsg, |o| {
            o.sync = value;
            Ok(())
        })
    }
}
