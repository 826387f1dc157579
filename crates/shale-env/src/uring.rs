//! Positioned reads issued together through io_uring (Linux), for
//! [`PosixFs::read_batch`](crate::PosixFs): one thread keeps a whole batch of
//! reads in flight with one system call to submit them and one to wait,
//! where a read pool would wake a thread per read.
//!
//! Each thread has its own ring of [`RING_ENTRIES`] entries, made on its
//! first batch; a batch larger than the ring goes in several rounds. Where
//! the kernel refuses rings (old kernels, `io_uring_disabled`, seccomp),
//! [`available`] is false and callers read one request at a time.
//!
//! # Safety
//!
//! The kernel writes into the callers' buffers until each read completes, so
//! [`read_all`] never returns while a read it submitted is in flight: it
//! waits for every completion of a round (retrying an interrupted wait), and
//! a failed submission submitted nothing (the ring is dropped and the rest is
//! reported as not run).

use std::cell::RefCell;
use std::io;
use std::sync::OnceLock;

use io_uring::{opcode, types, IoUring};

/// Entries of each thread's ring: the most reads in flight from one thread.
const RING_ENTRIES: u32 = 64;

thread_local! {
    static RING: RefCell<Option<IoUring>> = const { RefCell::new(None) };
}

/// One read for the ring: `len` bytes of `fd` at `offset` into `ptr`.
pub(crate) struct RawRead {
    pub fd: i32,
    pub offset: u64,
    pub ptr: *mut u8,
    pub len: usize,
}

/// True if this process may make rings (asked once).
pub(crate) fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| IoUring::new(2).is_ok())
}

/// Runs `reads`, all in flight at once (up to the ring's size), and returns
/// for each the bytes read (possibly short) or its error; `None` for a read
/// that was not run because the ring failed (the caller reads it itself).
///
/// # Safety
///
/// Every `ptr` must be valid for writes of `len` bytes, and no two ranges may
/// overlap, for the duration of the call.
pub(crate) unsafe fn read_all(reads: &[RawRead]) -> Vec<Option<io::Result<usize>>> {
    let mut out: Vec<Option<io::Result<usize>>> = (0..reads.len()).map(|_| None).collect();
    if reads.is_empty() {
        return out;
    }
    RING.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = IoUring::new(RING_ENTRIES).ok();
        }
        let Some(ring) = slot.as_mut() else {
            return;
        };
        for (round, chunk) in reads.chunks(RING_ENTRIES as usize).enumerate() {
            let base = round * RING_ENTRIES as usize;
            // SAFETY: the caller keeps every buffer valid for the call, and
            // this round waits for all of its completions below.
            if unsafe { submit_round(ring, chunk, base, &mut out) }.is_err() {
                // Nothing of this round was submitted: drop the ring (a new
                // one is made by the next batch) and leave the rest unrun.
                *slot = None;
                return;
            }
        }
    });
    out
}

/// Submits `chunk` (indices from `base`) and waits for all of it.
///
/// # Safety
///
/// As [`read_all`].
unsafe fn submit_round(
    ring: &mut IoUring,
    chunk: &[RawRead],
    base: usize,
    out: &mut [Option<io::Result<usize>>],
) -> io::Result<()> {
    {
        let mut sq = ring.submission();
        for (i, r) in chunk.iter().enumerate() {
            let len = u32::try_from(r.len)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "read too large"))?;
            let entry = opcode::Read::new(types::Fd(r.fd), r.ptr, len)
                .offset(r.offset)
                .build()
                .user_data((base + i) as u64);
            // SAFETY: the buffer outlives the read (see `read_all`).
            if unsafe { sq.push(&entry) }.is_err() {
                return Err(io::Error::other("io_uring submission queue full"));
            }
        }
    }
    let mut left = chunk.len();
    let mut submitted = false;
    while left > 0 {
        match ring.submit_and_wait(left) {
            Ok(_) => submitted = true,
            // Interrupted while waiting: the reads are in flight, wait again.
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                submitted = true;
                continue;
            }
            Err(e) if !submitted => return Err(e),
            // Submitted, then the wait failed: keep reaping (the kernel
            // still writes into the buffers until each read completes).
            Err(_) => {}
        }
        for cqe in ring.completion() {
            let i = cqe.user_data() as usize;
            let res = cqe.result();
            if let Some(o) = out.get_mut(i) {
                *o = Some(if res < 0 {
                    Err(io::Error::from_raw_os_error(-res))
                } else {
                    Ok(res as usize)
                });
                left = left.saturating_sub(1);
            }
        }
    }
    Ok(())
}
