//! The CPU and I/O priority of the calling thread, for work that should give
//! way to foreground requests: the engine runs compactions on threads that
//! lowered themselves with [`lower_current_thread`] when asked to (as
//! RocksDB's `LowerThreadPoolCPUPriority` and `LowerThreadPoolIOPriority`
//! do for its compaction pool).
//!
//! On Linux, `setpriority(PRIO_PROCESS, tid)` changes the nice value of one
//! thread, not of the process, and `ioprio_set(IOPRIO_WHO_PROCESS, 0)` the
//! I/O priority of the calling thread. Raising one's own nice value needs no
//! privilege; lowering it back does (`CAP_SYS_NICE` or `RLIMIT_NICE`), so a
//! thread that lowered itself stays low: give it work that is all of one kind.

use std::io;

/// The highest nice value (the lowest CPU priority) a thread can take.
pub const MAX_NICE: i32 = 19;

/// Gives the calling thread the CPU nice value `nice` (1 to [`MAX_NICE`]; a
/// value no higher than its current one leaves it) and the lowest level of
/// the best-effort I/O class, which I/O schedulers that order requests by
/// priority (BFQ; mq-deadline by class only) serve after the requests of
/// threads left at the default level. Fails with `InvalidInput` for a
/// `nice` outside 1 to 19 and with the system's error if a call fails; on
/// systems other than Linux, with `Unsupported`.
pub fn lower_current_thread(nice: i32) -> io::Result<()> {
    if !(1..=MAX_NICE).contains(&nice) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("nice value {nice} is not within 1 to {MAX_NICE}"),
        ));
    }
    imp::lower(nice)
}

/// The calling thread's nice value.
pub fn current_thread_nice() -> io::Result<i32> {
    imp::nice()
}

#[cfg(target_os = "linux")]
mod imp {
    use std::io;

    /// `ioprio_set`'s `which` for one thread (0: the caller).
    const IOPRIO_WHO_PROCESS: libc::c_long = 1;
    /// The best-effort class, shifted into place, and its lowest level.
    const IOPRIO_BE_LOWEST: libc::c_long = (2 << 13) | 7;

    pub(super) fn lower(nice: i32) -> io::Result<()> {
        if nice > self::nice()? {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            let id = libc::id_t::try_from(tid).map_err(io::Error::other)?;
            // SAFETY: plain system call on this thread's id; no memory is
            // passed.
            if unsafe { libc::setpriority(libc::PRIO_PROCESS, id, nice) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        // SAFETY: ioprio_set takes three integers and touches no memory of
        // ours.
        let r = unsafe {
            libc::syscall(
                libc::SYS_ioprio_set,
                IOPRIO_WHO_PROCESS,
                0 as libc::c_long,
                IOPRIO_BE_LOWEST,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub(super) fn nice() -> io::Result<i32> {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let id = libc::id_t::try_from(tid).map_err(io::Error::other)?;
        // getpriority may return -1 as a value: clear errno to tell.
        // SAFETY: __errno_location returns this thread's errno slot.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: plain system call on this thread's id.
        let n = unsafe { libc::getpriority(libc::PRIO_PROCESS, id) };
        let err = io::Error::last_os_error();
        if n == -1 && err.raw_os_error() != Some(0) {
            return Err(err);
        }
        Ok(n)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io;

    pub(super) fn lower(_nice: i32) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "thread priorities are set on Linux only",
        ))
    }

    pub(super) fn nice() -> io::Result<i32> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "thread priorities are read on Linux only",
        ))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_thread_lowers_itself_and_no_other() {
        let before = current_thread_nice().expect("nice");
        let target = (before + 5).min(MAX_NICE);
        let inside = std::thread::spawn(move || {
            lower_current_thread(target).expect("lower");
            // A lower target leaves it.
            lower_current_thread(1).expect("lower again");
            current_thread_nice().expect("nice")
        })
        .join()
        .expect("thread");
        assert_eq!(inside, target.max(before));
        assert_eq!(current_thread_nice().expect("nice"), before);
    }

    #[test]
    fn nice_values_out_of_range_are_refused() {
        for n in [0, -1, 20, i32::MAX] {
            let e = lower_current_thread(n).expect_err("refused");
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{n}");
        }
    }
}
