//! `shale_options_t`: the options of `shale_open`.

use std::ffi::c_char;

use parking_lot::Mutex;
use shale::{
    FilterKind, FilterLevels, FilterPolicy, LevelSet, MetadataPlacement, Options,
    MAX_BACKGROUND_JOBS, MAX_COMPACTION_READAHEAD, MAX_SUBCOMPACTIONS,
};

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
/// Every table's metadata (indexes and filters) goes through the block cache
/// (the default).
pub const SHALE_TABLE_METADATA_NONE: i32 = 0;
/// The top-level index and the index partitions of every table, at every
/// level, are held with its open table reader, outside the block cache; the
/// filters go through the cache.
pub const SHALE_TABLE_METADATA_INDEX: i32 = 1;
/// Every kind of metadata (top-level index, index partitions, top-level
/// filter, filter partitions) is held with the table readers at L0 to L5;
/// the last level's goes through the block cache.
pub const SHALE_TABLE_METADATA_ALL_BUT_LAST: i32 = 2;
/// Every kind of metadata is held with the table readers at every level.
pub const SHALE_TABLE_METADATA_ALL: i32 = 3;

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

/// Background threads for flushes and compactions (default 2; 0 or more than
/// 256 is `SHALE_INVALID_ARGUMENT`).
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
            if !(1..=MAX_BACKGROUND_JOBS).contains(&jobs) {
                return Err(Failure::invalid(format!(
                    "max background jobs {jobs} is not within 1 to {MAX_BACKGROUND_JOBS}"
                )));
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
                None => FilterPolicy::default().levels(FilterLevels::None),
                Some(kind) => {
                    if !(1..=32).contains(&bits_per_key) {
                        return Err(Failure::invalid(format!(
                            "bits per key {bits_per_key} is not within 1 to 32"
                        )));
                    }
                    FilterPolicy::default()
                        .bits_per_key(bits_per_key)
                        .levels(levels)
                        .kind(kind)
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

/// Most subcompactions one compaction is split into, each a disjoint key range
/// merged on a thread of its own that lives as long as the compaction
/// (default 2; 1 to 64: 0 or more than 64 is `SHALE_INVALID_ARGUMENT`).
///
/// # Safety
///
/// As for `shale_options_set_create_if_missing`.
#[no_mangle]
pub unsafe extern "C" fn shale_options_set_max_subcompactions(
    options: *mut shale_options_t,
    n: usize,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        set(options, errmsg, |o| {
            if !(1..=MAX_SUBCOMPACTIONS).contains(&n) {
                return Err(Failure::invalid(format!(
                    "max subcompactions {n} is not within 1 to {MAX_SUBCOMPACTIONS}"
                )));
            }
            o.engine.max_subcompactions = n;
            Ok(())
        })
    }
}

/// CPU nice value of the threads that merge compactions: 0, the default, runs
/// them at the process's priority; 1 to 19 lower them (and their I/O to the
/// lowest best-effort level), so that Gets and writes run first on a machine
/// whose cores are busy; flushes keep the process's priority. Outside 0 to
/// 19 is `SHALE_INVALID_ARGUMENT` (the open refuses anything but 0 outside
/// Linux).
///
/// # Safety
///
/// As for `shale_options_set_create_if_missing`.
#[no_mangle]
pub unsafe extern "C" fn shale_options_set_compaction_nice(
    options: *mut shale_options_t,
    nice: i32,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        set(options, errmsg, |o| {
            if !(0..=shale::env::priority::MAX_NICE).contains(&nice) {
                return Err(Failure::invalid(format!(
                    "compaction nice value {nice} is not within 0 to 19"
                )));
            }
            o.engine.compaction_nice = nice;
            Ok(())
        })
    }
}

/// Bytes per second writes are let through while they are delayed (L0 at the
/// slowdown trigger, or too much compaction debt): default 16 MiB/s; 0 is
/// `SHALE_INVALID_ARGUMENT`. While a delay lasts the rate adapts to the debt
/// between 16 KiB/s (or this rate, if lower) and this rate.
///
/// # Safety
///
/// As for `shale_options_set_create_if_missing`.
#[no_mangle]
pub unsafe extern "C" fn shale_options_set_delayed_write_rate(
    options: *mut shale_options_t,
    bytes_per_sec: u64,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        set(options, errmsg, |o| {
            if bytes_per_sec == 0 {
                return Err(Failure::invalid(
                    "delayed write rate 0 is not positive (bytes per second)",
                ));
            }
            o.engine.delayed_write_rate = bytes_per_sec;
            Ok(())
        })
    }
}

/// Cap on the bytes per second flushes and compactions write together (a
/// token bucket); 0 means no limit (the default). Every value is valid.
///
/// # Safety
///
/// As for `shale_options_set_create_if_missing`.
#[no_mangle]
pub unsafe extern "C" fn shale_options_set_compaction_rate_limit(
    options: *mut shale_options_t,
    bytes_per_sec: u64,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        set(options, errmsg, |o| {
            // The engine refuses a limit of 0 (`Some(0)`): here 0 is no limit.
            o.engine.compaction_rate_limit = (bytes_per_sec != 0).then_some(bytes_per_sec);
            Ok(())
        })
    }
}

/// Bytes a compaction reads from one input table at a time, bypassing the
/// page cache where the file system allows (default 512 KiB; 0 reads block by
/// block, as Gets do; more than 64 MiB is `SHALE_INVALID_ARGUMENT`).
///
/// # Safety
///
/// As for `shale_options_set_create_if_missing`.
#[no_mangle]
pub unsafe extern "C" fn shale_options_set_compaction_readahead_bytes(
    options: *mut shale_options_t,
    bytes: usize,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        set(options, errmsg, |o| {
            let Some(value) = u64::try_from(bytes)
                .ok()
                .filter(|&b| b <= MAX_COMPACTION_READAHEAD)
            else {
                return Err(Failure::invalid(format!(
                    "compaction readahead {bytes} bytes is above the most, {MAX_COMPACTION_READAHEAD}"
                )));
            };
            o.engine.compaction_readahead_bytes = value;
            Ok(())
        })
    }
}

/// Which table metadata the open table readers hold, outside the block cache
/// and not charged to it (so a Get never has to read it again after the
/// first use): `SHALE_TABLE_METADATA_NONE` (the default: all of it goes
/// through the block cache), `SHALE_TABLE_METADATA_INDEX`,
/// `SHALE_TABLE_METADATA_ALL_BUT_LAST` or `SHALE_TABLE_METADATA_ALL`.
/// Anything else is `SHALE_INVALID_ARGUMENT`.
///
/// # Safety
///
/// As for `shale_options_set_create_if_missing`.
#[no_mangle]
pub unsafe extern "C" fn shale_options_set_table_metadata(
    options: *mut shale_options_t,
    placement: i32,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        set(options, errmsg, |o| {
            // As `shale bench dbbench --table_metadata` names them.
            o.engine.table_metadata = match placement {
                SHALE_TABLE_METADATA_NONE => MetadataPlacement::NONE,
                SHALE_TABLE_METADATA_INDEX => MetadataPlacement::indexes_at(LevelSet::ALL),
                SHALE_TABLE_METADATA_ALL_BUT_LAST => {
                    MetadataPlacement::all_kinds_at(LevelSet::all_but_last())
                }
                SHALE_TABLE_METADATA_ALL => MetadataPlacement::all_kinds_at(LevelSet::ALL),
                other => {
                    return Err(Failure::invalid(format!(
                        "unknown table metadata placement {other} (0 to 3)"
                    )))
                }
            };
            Ok(())
        })
    }
}

/// The L0 table counts at which L0 is compacted, at which writes are delayed
/// to the delayed write rate and at which writes wait for compactions. A 0
/// keeps the engine's default: for `compaction` 8 when L0 tables carry
/// filters and 4 when they do not (decided at open from the filter policy),
/// 20 for `slowdown`, 36 for `stop`. Counts that do not satisfy
/// `compaction <= slowdown <= stop` (a default `compaction` counted as 4
/// here; the open checks it against the filter policy) are
/// `SHALE_INVALID_ARGUMENT`.
///
/// # Safety
///
/// As for `shale_options_set_create_if_missing`.
#[no_mangle]
pub unsafe extern "C" fn shale_options_set_l0_triggers(
    options: *mut shale_options_t,
    compaction: usize,
    slowdown: usize,
    stop: usize,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        set(options, errmsg, |o| {
            let engine = shale::Options::default();
            let or_default = |v: usize, d: usize| if v == 0 { d } else { v };
            let slowdown = or_default(slowdown, engine.l0_slowdown_writes_trigger);
            let stop = or_default(stop, engine.l0_stop_writes_trigger);
            let least = or_default(compaction, shale::L0_COMPACTION_TRIGGER_WITHOUT_FILTERS);
            if !(least <= slowdown && slowdown <= stop) {
                return Err(Failure::invalid(format!(
                    "L0 triggers {compaction}, {slowdown}, {stop} do not satisfy \
                     compaction <= slowdown <= stop (0: the default)"
                )));
            }
            o.engine.l0_compaction_trigger = (compaction != 0).then_some(compaction);
            o.engine.l0_slowdown_writes_trigger = slowdown;
            o.engine.l0_stop_writes_trigger = stop;
            Ok(())
        })
    }
}

/// Whether each memtable carries a Bloom filter over its keys, so that a Get
/// of a key it lacks skips its skiplist search (default on; it takes
/// `write_buffer_size / 32` bytes of each memtable). Every value is valid.
///
/// # Safety
///
/// As for `shale_options_set_create_if_missing`.
#[no_mangle]
pub unsafe extern "C" fn shale_options_set_memtable_filter(
    options: *mut shale_options_t,
    value: bool,
    errmsg: *mut *mut c_char,
) -> shale_code_t {
    // SAFETY: as documented.
    unsafe {
        set(options, errmsg, |o| {
            o.engine.memtable_filter = value;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shale_code_t as C;

    /// Made options, freed on drop.
    struct Opts(*mut shale_options_t);

    impl Opts {
        fn new() -> Opts {
            let mut ptr = std::ptr::null_mut();
            // SAFETY: `ptr` is a valid out-parameter.
            let code = unsafe { shale_options_create(&mut ptr, std::ptr::null_mut()) };
            assert_eq!(code, C::SHALE_OK);
            Opts(ptr)
        }

        fn spec(&self) -> OptionsSpec {
            // SAFETY: a live options handle.
            unsafe { handle(self.0) }
                .expect("live")
                .inner
                .lock()
                .clone()
        }

        /// Calls a setter; returns its code and message.
        fn call(
            &self,
            f: impl FnOnce(*mut shale_options_t, *mut *mut c_char) -> shale_code_t,
        ) -> (shale_code_t, String) {
            let mut msg: *mut c_char = std::ptr::null_mut();
            let code = f(self.0, &mut msg);
            let text = if msg.is_null() {
                String::new()
            } else {
                // SAFETY: a NUL-terminated string from malloc, freed once.
                let text = unsafe { std::ffi::CStr::from_ptr(msg) }
                    .to_string_lossy()
                    .into_owned();
                // SAFETY: as above.
                unsafe { crate::shale_free(msg.cast()) };
                text
            };
            (code, text)
        }

        /// Asserts that a setter refuses its value with a message holding
        /// every one of `words`, and leaves the options as they were.
        fn refuses(&self, words: &[&str], f: impl FnOnce(&Opts) -> (shale_code_t, String)) {
            let before = format!("{:?}", Settings::of(&self.spec()));
            let (code, text) = f(self);
            assert_eq!(code, C::SHALE_INVALID_ARGUMENT, "{text}");
            for w in words {
                assert!(text.contains(w), "{text:?} does not name {w:?}");
            }
            assert_eq!(format!("{:?}", Settings::of(&self.spec())), before);
        }
    }

    impl Drop for Opts {
        fn drop(&mut self) {
            // SAFETY: made by `shale_options_create`, freed once.
            let code = unsafe { shale_options_free(self.0, std::ptr::null_mut()) };
            assert_eq!(code, C::SHALE_OK);
        }
    }

    /// The engine options the new setters change.
    #[derive(Debug, PartialEq)]
    struct Settings {
        max_subcompactions: usize,
        delayed_write_rate: u64,
        compaction_rate_limit: Option<u64>,
        compaction_readahead_bytes: u64,
        table_metadata: MetadataPlacement,
        l0: (Option<usize>, usize, usize),
    }

    impl Settings {
        fn of(spec: &OptionsSpec) -> Settings {
            let e = &spec.engine;
            Settings {
                max_subcompactions: e.max_subcompactions,
                delayed_write_rate: e.delayed_write_rate,
                compaction_rate_limit: e.compaction_rate_limit,
                compaction_readahead_bytes: e.compaction_readahead_bytes,
                table_metadata: e.table_metadata,
                l0: (
                    e.l0_compaction_trigger,
                    e.l0_slowdown_writes_trigger,
                    e.l0_stop_writes_trigger,
                ),
            }
        }
    }

    const OK: (shale_code_t, String) = (C::SHALE_OK, String::new());
    const MAX_READAHEAD: usize = MAX_COMPACTION_READAHEAD as usize;

    /// `call!(o, shale_options_set_x(args))`: the setter called on `o` by
    /// `Opts::call`, with its code and message.
    macro_rules! call {
        ($o:expr, $f:ident($($arg:expr),*)) => {
            $o.call(|h, m| {
                // SAFETY: `h` is a live options handle and `m` a valid errmsg,
                // both from `Opts::call`.
                unsafe { $f(h, $($arg,)* m) }
            })
        };
    }

    #[test]
    fn the_engine_setters_set_the_engine_options_and_a_database_opens_with_them() {
        let o = Opts::new();
        let defaults = Options::default();
        assert_eq!(
            Settings::of(&o.spec()),
            Settings::of(&OptionsSpec::default())
        );
        assert_eq!(defaults.table_metadata, MetadataPlacement::NONE);
        assert_eq!(defaults.compaction_rate_limit, None);

        let calls: [(shale_code_t, String); 6] = [
            call!(o, shale_options_set_max_subcompactions(4)),
            call!(o, shale_options_set_delayed_write_rate(1 << 20)),
            call!(o, shale_options_set_compaction_rate_limit(8 << 20)),
            call!(
                o,
                shale_options_set_compaction_readahead_bytes(MAX_READAHEAD)
            ),
            call!(
                o,
                shale_options_set_table_metadata(SHALE_TABLE_METADATA_ALL_BUT_LAST)
            ),
            call!(o, shale_options_set_l0_triggers(2, 2, 3)),
        ];
        for c in calls {
            assert_eq!(c, OK);
        }
        assert_eq!(
            Settings::of(&o.spec()),
            Settings {
                max_subcompactions: 4,
                delayed_write_rate: 1 << 20,
                compaction_rate_limit: Some(8 << 20),
                compaction_readahead_bytes: MAX_COMPACTION_READAHEAD,
                table_metadata: MetadataPlacement::all_kinds_at(LevelSet::all_but_last()),
                l0: (Some(2), 2, 3),
            }
        );
        // The engine takes them: a database opens, writes and reads.
        let dir = tempfile::tempdir().expect("tempdir");
        let db = shale::Db::open(dir.path().join("db"), o.spec().engine).expect("open");
        db.put(b"k", b"v").expect("put");
        db.flush().expect("flush");
        assert_eq!(db.get(b"k").expect("get").as_deref(), Some(&b"v"[..]));
        db.close().expect("close");

        // The other ends of the ranges.
        for c in [
            call!(o, shale_options_set_max_subcompactions(1)),
            call!(o, shale_options_set_max_subcompactions(MAX_SUBCOMPACTIONS)),
            call!(o, shale_options_set_delayed_write_rate(1)),
            call!(o, shale_options_set_compaction_rate_limit(0)),
            call!(o, shale_options_set_compaction_readahead_bytes(0)),
            call!(o, shale_options_set_l0_triggers(1, 1, 1)),
        ] {
            assert_eq!(c, OK);
        }
        assert_eq!(o.spec().engine.compaction_nice, 0);
        assert_eq!(call!(o, shale_options_set_compaction_nice(19)), OK);
        assert_eq!(o.spec().engine.compaction_nice, 19);
        assert!(o.spec().engine.memtable_filter, "on by default");
        assert_eq!(call!(o, shale_options_set_memtable_filter(false)), OK);
        assert!(!o.spec().engine.memtable_filter);
        let s = Settings::of(&o.spec());
        assert_eq!(s.max_subcompactions, MAX_SUBCOMPACTIONS);
        assert_eq!(s.delayed_write_rate, 1);
        assert_eq!(s.compaction_rate_limit, None);
        assert_eq!(s.compaction_readahead_bytes, 0);
        assert_eq!(s.l0, (Some(1), 1, 1));
        let db = shale::Db::open(dir.path().join("db"), o.spec().engine).expect("reopen");
        db.close().expect("close");
    }

    #[test]
    fn a_zero_l0_trigger_is_the_engine_s_default_for_the_filters() {
        let o = Opts::new();
        assert_eq!(call!(o, shale_options_set_l0_triggers(0, 0, 0)), OK);
        assert_eq!(Settings::of(&o.spec()).l0, (None, 20, 36));
        assert_eq!(o.spec().engine.effective_l0_compaction_trigger(), 8);
        // Slowdown at 5 suits L0 without filters (trigger 4), not with them
        // (8): the setter takes it, the open decides.
        assert_eq!(call!(o, shale_options_set_l0_triggers(0, 5, 6)), OK);
        let dir = tempfile::tempdir().expect("tempdir");
        let refused = shale::Db::open(dir.path().join("db"), o.spec().engine);
        assert!(
            matches!(refused, Err(shale::Error::InvalidArgument(m)) if m.contains("L0 triggers"))
        );
        assert_eq!(
            call!(
                o,
                shale_options_set_filter_policy(
                    SHALE_FILTER_NONE,
                    0,
                    SHALE_FILTER_LEVELS_ALL_BUT_LAST
                )
            ),
            OK
        );
        assert_eq!(o.spec().engine.effective_l0_compaction_trigger(), 4);
        let db = shale::Db::open(dir.path().join("db"), o.spec().engine).expect("open");
        db.close().expect("close");
    }

    #[test]
    fn table_metadata_placements_are_dbbench_s() {
        let o = Opts::new();
        let placement = |p: i32| {
            assert_eq!(call!(o, shale_options_set_table_metadata(p)), OK);
            o.spec().engine.table_metadata
        };
        assert_eq!(
            placement(SHALE_TABLE_METADATA_ALL),
            MetadataPlacement::all_kinds_at(LevelSet::ALL)
        );
        let index = placement(SHALE_TABLE_METADATA_INDEX);
        assert_eq!(index.top_index, LevelSet::ALL);
        assert_eq!(index.index_partitions, LevelSet::ALL);
        assert!(index.top_filter.is_empty() && index.filter_partitions.is_empty());
        let abl = placement(SHALE_TABLE_METADATA_ALL_BUT_LAST);
        assert!(abl.filter_partitions.contains(5) && !abl.filter_partitions.contains(6));
        assert_eq!(
            placement(SHALE_TABLE_METADATA_NONE),
            MetadataPlacement::NONE
        );
    }

    #[test]
    fn out_of_range_values_are_refused_when_set() {
        let o = Opts::new();
        o.refuses(&["max subcompactions", "0", "1 to 64"], |o| {
            call!(o, shale_options_set_max_subcompactions(0))
        });
        o.refuses(&["max subcompactions", "65", "1 to 64"], |o| {
            call!(
                o,
                shale_options_set_max_subcompactions(MAX_SUBCOMPACTIONS + 1)
            )
        });
        o.refuses(&["delayed write rate", "0"], |o| {
            call!(o, shale_options_set_delayed_write_rate(0))
        });
        o.refuses(&["compaction readahead", "67108865", "67108864"], |o| {
            call!(
                o,
                shale_options_set_compaction_readahead_bytes(MAX_READAHEAD + 1)
            )
        });
        o.refuses(&["compaction readahead"], |o| {
            call!(o, shale_options_set_compaction_readahead_bytes(usize::MAX))
        });
        for bad in [-1, 4, i32::MAX] {
            o.refuses(&["table metadata", &bad.to_string()], |o| {
                call!(o, shale_options_set_table_metadata(bad))
            });
        }
        o.refuses(&["L0 triggers", "0, 3, 36"], |o| {
            call!(o, shale_options_set_l0_triggers(0, 3, 0))
        });
        o.refuses(&["compaction nice value 20"], |o| {
            call!(o, shale_options_set_compaction_nice(20))
        });
        o.refuses(&["compaction nice value -1"], |o| {
            call!(o, shale_options_set_compaction_nice(-1))
        });
        o.refuses(&["L0 triggers", "9, 8, 36"], |o| {
            call!(o, shale_options_set_l0_triggers(9, 8, 36))
        });
        o.refuses(&["L0 triggers", "8, 20, 19"], |o| {
            call!(o, shale_options_set_l0_triggers(8, 20, 19))
        });
        o.refuses(&["L0 triggers", "21, 20, 36"], |o| {
            call!(o, shale_options_set_l0_triggers(21, 0, 0))
        });
        // A NULL handle is refused too, not dereferenced.
        let mut msg: *mut c_char = std::ptr::null_mut();
        // SAFETY: NULL is checked before use; `msg` is valid.
        let code =
            unsafe { shale_options_set_l0_triggers(std::ptr::null_mut(), 1, 2, 3, &mut msg) };
        assert_eq!(code, C::SHALE_INVALID_ARGUMENT);
        // SAFETY: malloc'ed message, freed once.
        unsafe { crate::shale_free(msg.cast()) };
    }
}
