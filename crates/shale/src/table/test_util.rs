//! Test helpers: a deterministic random generator and `Vec<u8>`-backed files.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use shale_env::{ObjectWriter, RandomAccessFile};

/// SplitMix64: small, deterministic, good enough for test data.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform in `0..n`; 0 when `n` is 0.
    pub(crate) fn index(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// `n` random bytes.
    pub(crate) fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }

    pub(super) fn bytes32(&mut self) -> [u8; 32] {
        let mut out = [0u8; 32];
        for chunk in out.chunks_mut(8) {
            chunk.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        out
    }
}

/// An `ObjectWriter` appending to a shared buffer.
pub(super) struct MemWriter {
    pub buf: Arc<Mutex<Vec<u8>>>,
    pub finished: Arc<AtomicU64>,
}

impl MemWriter {
    pub(super) fn new() -> (MemWriter, Arc<Mutex<Vec<u8>>>) {
        let buf = Arc::new(Mutex::new(Vec::new()));
        (
            MemWriter {
                buf: buf.clone(),
                finished: Arc::new(AtomicU64::new(0)),
            },
            buf,
        )
    }
}

impl ObjectWriter for MemWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        self.buf.lock().unwrap().extend_from_slice(data);
        Ok(())
    }
    fn len(&self) -> u64 {
        self.buf.lock().unwrap().len() as u64
    }
    fn finish(self: Box<Self>) -> io::Result<()> {
        self.finished.store(1, Ordering::SeqCst);
        Ok(())
    }
    fn abort(self: Box<Self>) -> io::Result<()> {
        self.buf.lock().unwrap().clear();
        Ok(())
    }
}

/// A read-only in-memory file counting its read requests.
pub(super) struct MemFile {
    pub data: Vec<u8>,
    pub reads: AtomicU64,
    /// `(offset, length)` of every read, in order.
    pub log: Mutex<Vec<(u64, usize)>>,
}

impl MemFile {
    pub(super) fn new(data: Vec<u8>) -> Arc<MemFile> {
        Arc::new(MemFile {
            data,
            reads: AtomicU64::new(0),
            log: Mutex::new(Vec::new()),
        })
    }
    pub(super) fn reads(&self) -> u64 {
        self.reads.load(Ordering::SeqCst)
    }
    /// The reads since the last call.
    pub(super) fn take_log(&self) -> Vec<(u64, usize)> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

impl RandomAccessFile for MemFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.log.lock().unwrap().push((offset, buf.len()));
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let src = start
            .checked_add(buf.len())
            .and_then(|end| self.data.get(start..end))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn size(&self) -> u64 {
        self.data.len() as u64
    }
}
