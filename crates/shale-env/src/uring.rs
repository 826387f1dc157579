//! io_uring (Linux) for [`PosixFs::read_queue`](crate::PosixFs): one thread
//! keeps many positioned reads in flight, submitting each as it finds it
//! needs it and taking the completions as they come, where a read pool would
//! wake a thread per read.
//!
//! Each thread has one ring of [`RING_ENTRIES`] entries, made on its first
//! use and lent to one [`Ring`] at a time (a second, nested one gets a ring
//! of its own). Where the kernel refuses rings (old kernels,
//! `io_uring_disabled`, seccomp), [`available`] is false and callers read one
//! request at a time.
//!
//! # Safety
//!
//! The kernel writes into a read's buffer until the read completes, so a
//! buffer given to [`Ring::start`] must stay valid until [`Ring::wait`]
//! returns its completion; if a wait fails, the owner must leak every buffer
//! still in flight (the kernel may still write into them) and drop the ring.

use std::cell::RefCell;
use std::io;
use std::mem::ManuallyDrop;
use std::sync::OnceLock;

use io_uring::{opcode, types, IoUring};

/// Entries of each thread's ring: the most reads in flight from one ring.
pub(crate) const RING_ENTRIES: usize = 64;

thread_local! {
    static RING: RefCell<Option<IoUring>> = const { RefCell::new(None) };
}

/// True if this process may make rings (asked once).
pub(crate) fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| IoUring::new(2).is_ok())
}

/// A ring lent to one user on this thread; given back when dropped with no
/// read in flight.
pub(crate) struct Ring {
    /// Taken out only by `drop`.
    ring: ManuallyDrop<IoUring>,
    in_flight: usize,
}

impl Ring {
    /// This thread's ring (made on first use, or a new one if it is lent),
    /// or `None` where the kernel refuses one.
    pub(crate) fn take() -> Option<Ring> {
        let lent = RING
            .try_with(|cell| cell.borrow_mut().take())
            .ok()
            .flatten();
        let ring = match lent {
            Some(r) => r,
            None => IoUring::new(RING_ENTRIES as u32).ok()?,
        };
        Some(Ring {
            ring: ManuallyDrop::new(ring),
            in_flight: 0,
        })
    }

    /// Reads started and not yet returned by [`Ring::wait`].
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Starts reading `len` bytes of `fd` at `offset` into `ptr`; `user_data`
    /// names it in [`Ring::wait`]'s answers. An error (the ring is full, or
    /// the read is too large for one request) started nothing.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for writes of `len` bytes, and overlap no other
    /// read's buffer, until `wait` returns this read's completion (see the
    /// module's safety note for a failed wait).
    pub(crate) unsafe fn start(
        &mut self,
        fd: i32,
        offset: u64,
        ptr: *mut u8,
        len: usize,
        user_data: u64,
    ) -> io::Result<()> {
        let len = u32::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "read too large"))?;
        if self.in_flight >= RING_ENTRIES {
            return Err(io::Error::other("io_uring ring full"));
        }
        let entry = opcode::Read::new(types::Fd(fd), ptr, len)
            .offset(offset)
            .build()
            .user_data(user_data);
        // SAFETY: the caller keeps the buffer valid until its completion.
        if unsafe { self.ring.submission().push(&entry) }.is_err() {
            return Err(io::Error::other("io_uring submission queue full"));
        }
        self.in_flight += 1;
        // Submit now, so that the read starts while the caller goes on
        // (measured: one system call per read keeps this VM's disk busier
        // than submissions gathered into bursts). A failed submission
        // leaves the entry queued: the next wait submits it (or fails, and
        // the owner abandons the ring).
        loop {
            match self.ring.submit() {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                _ => return Ok(()),
            }
        }
    }

    /// Waits until at least one read has completed (none if none is in
    /// flight) and returns each completed read's `user_data` and bytes read
    /// (possibly short) or error. An error means the ring cannot be waited
    /// on: see the module's safety note.
    pub(crate) fn wait(&mut self) -> io::Result<Vec<(u64, io::Result<usize>)>> {
        let mut done = Vec::new();
        while self.in_flight > 0 {
            let waited = self.ring.submit_and_wait(1);
            for cqe in self.ring.completion() {
                let res = cqe.result();
                done.push((
                    cqe.user_data(),
                    if res < 0 {
                        Err(io::Error::from_raw_os_error(-res))
                    } else {
                        Ok(res as usize)
                    },
                ));
            }
            self.in_flight = self.in_flight.saturating_sub(done.len());
            if !done.is_empty() {
                return Ok(done);
            }
            match waited {
                Ok(_) => {}
                // Interrupted while waiting: the reads are in flight, wait again.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: `ring` is not used after this.
        let ring = unsafe { ManuallyDrop::take(&mut self.ring) };
        if self.in_flight > 0 {
            // Abandoned after a failed wait: the owner leaked the buffers,
            // and the ring closes; it is not lent again.
            return;
        }
        let _ = RING.try_with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot.is_none() {
                *slot = Some(ring);
            }
        });
    }
}
