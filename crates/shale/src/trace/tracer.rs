//! The recording side: one [`Tracer`] per database, shared by its table
//! readers through their `ReadContext`, off until
//! [`crate::Db::start_block_trace`].
//!
//! Records are appended to a buffer under one mutex, so the trace keeps
//! the order in which threads touched the cache; a full buffer (1 MiB) is
//! written to the sink as one chunk under that mutex. Off, every hook
//! costs one relaxed load of a flag. A sink that fails stops the trace;
//! the error is returned by [`Tracer::end`] (the database is not affected:
//! the trace is a measurement, not data).

use std::cell::Cell;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

use super::format::{
    encode_chunk, encode_header, sampled, BlockAccess, RecordEncoder, TraceHeader, TracePlacement,
    TraceRecord,
};
use crate::cache::Priority;
use crate::error::{Error, Result};
use crate::metrics::BlockKind;

/// Payload bytes buffered before a chunk is written.
const CHUNK_BYTES: usize = 1 << 20;

thread_local! {
    /// The lookup this thread is running, 0 outside one.
    static LOOKUP: Cell<u64> = const { Cell::new(0) };
}

/// What a finished trace holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceSummary {
    /// Records written (the end record not counted).
    pub records: u64,
    /// Bytes written, header included.
    pub bytes: u64,
}

struct Sink {
    out: Box<dyn Write + Send>,
    buf: Vec<u8>,
    enc: RecordEncoder,
    summary: TraceSummary,
    error: Option<std::io::Error>,
}

impl Sink {
    fn write_chunk(&mut self) {
        if self.buf.is_empty() || self.error.is_some() {
            return;
        }
        let mut chunk = Vec::with_capacity(self.buf.len() + 8);
        encode_chunk(&mut chunk, &self.buf);
        self.buf.clear();
        match self.out.write_all(&chunk) {
            Ok(()) => self.summary.bytes += chunk.len() as u64,
            Err(e) => self.error = Some(e),
        }
    }
}

/// A database's block-access tracer.
#[derive(Default)]
pub(crate) struct Tracer {
    on: AtomicBool,
    /// The sampling threshold of the trace being recorded.
    threshold: AtomicU64,
    sink: Mutex<Option<Sink>>,
    next_lookup: AtomicU64,
}

impl Tracer {
    /// True while a trace is being recorded.
    #[inline]
    pub(crate) fn on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Starts a trace into `out`, writing its header first. Fails if one
    /// is already being recorded or the header cannot be written.
    pub(crate) fn start(&self, mut out: Box<dyn Write + Send>, header: &TraceHeader) -> Result<()> {
        let mut sink = self.sink.lock();
        if sink.is_some() {
            return Err(Error::InvalidArgument(
                "a block trace is already being recorded".into(),
            ));
        }
        let bytes = encode_header(header);
        out.write_all(&bytes)
            .map_err(|e| Error::io("write block trace header", "block trace", e))?;
        *sink = Some(Sink {
            out,
            buf: Vec::new(),
            enc: RecordEncoder::default(),
            summary: TraceSummary {
                records: 0,
                bytes: bytes.len() as u64,
            },
            error: None,
        });
        self.threshold
            .store(header.sample_threshold, Ordering::Relaxed);
        self.on.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Ends the trace: writes the records left and the end record, flushes
    /// the sink and gives it back. The first write error of the trace, if
    /// any, is returned instead.
    pub(crate) fn end(&self) -> Result<(Box<dyn Write + Send>, TraceSummary)> {
        let mut guard = self.sink.lock();
        self.on.store(false, Ordering::Relaxed);
        let Some(mut sink) = guard.take() else {
            return Err(Error::InvalidArgument(
                "no block trace is being recorded".into(),
            ));
        };
        drop(guard);
        let Sink { enc, buf, .. } = &mut sink;
        enc.end(buf);
        sink.write_chunk();
        if sink.error.is_none() {
            if let Err(e) = sink.out.flush() {
                sink.error = Some(e);
            }
        }
        match sink.error {
            Some(e) => Err(Error::io("write block trace", "block trace", e)),
            None => Ok((sink.out, sink.summary)),
        }
    }

    fn push(&self, r: &TraceRecord) {
        let mut guard = self.sink.lock();
        let Some(sink) = guard.as_mut() else { return };
        if sink.error.is_some() {
            return;
        }
        let Sink { enc, buf, .. } = sink;
        enc.record(buf, r);
        sink.summary.records += 1;
        if sink.buf.len() >= CHUNK_BYTES {
            sink.write_chunk();
            if sink.error.is_some() {
                // Stop recording; `end` reports the error.
                self.on.store(false, Ordering::Relaxed);
            }
        }
    }

    /// Records an access to block (`file`, `offset`) of `kind`: a cache
    /// hit or miss at `priority`, or a held block (`priority` `None`) found
    /// held (`hit`) or read. `charge` 0 means a later [`Self::charge`].
    pub(crate) fn access(
        &self,
        file: u64,
        offset: u64,
        kind: BlockKind,
        priority: Option<Priority>,
        hit: bool,
        charge: u64,
    ) {
        if !self.on() {
            return;
        }
        let placement = match priority {
            Some(Priority::Low) => TracePlacement::Low,
            Some(Priority::Medium) => TracePlacement::Medium,
            Some(Priority::High) => TracePlacement::High,
            None => TracePlacement::Held,
        };
        if !sampled(file, offset, self.threshold.load(Ordering::Relaxed)) {
            return;
        }
        self.push(&TraceRecord::Access(BlockAccess {
            lookup: LOOKUP.with(Cell::get),
            file,
            offset,
            kind,
            placement,
            hit,
            charge,
        }));
    }

    /// Records the charge of a block whose access gave none.
    pub(crate) fn charge(&self, file: u64, offset: u64, charge: u64) {
        if self.on() {
            self.push(&TraceRecord::Charge {
                file,
                offset,
                charge,
            });
        }
    }

    /// Records an answered Get.
    pub(crate) fn get(&self, found: bool) {
        if self.on() {
            self.push(&TraceRecord::Get { found });
        }
    }

    /// Records a label.
    pub(crate) fn mark(&self, label: &str) {
        if self.on() {
            self.push(&TraceRecord::Mark(label.to_string()));
        }
    }

    /// Records bytes pinned in (`pin`) or released from the cache.
    pub(crate) fn pinned(&self, bytes: u64, pin: bool) {
        if self.on() {
            self.push(&if pin {
                TraceRecord::Pin(bytes)
            } else {
                TraceRecord::Unpin(bytes)
            });
        }
    }

    /// A new lookup id (0 while tracing is off).
    pub(crate) fn new_lookup(&self) -> u64 {
        if self.on() {
            self.next_lookup.fetch_add(1, Ordering::Relaxed) + 1
        } else {
            0
        }
    }
}

/// While it lives, this thread runs lookup `id`: the accesses it traces
/// carry the id. Dropping it puts back the lookup it interrupted.
pub(crate) struct LookupScope {
    outer: u64,
}

impl LookupScope {
    pub(crate) fn enter(id: u64) -> LookupScope {
        LookupScope {
            outer: LOOKUP.with(|l| l.replace(id)),
        }
    }
}

impl Drop for LookupScope {
    fn drop(&mut self) {
        LOOKUP.with(|l| l.set(self.outer));
    }
}
