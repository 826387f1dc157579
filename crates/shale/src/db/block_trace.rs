//! Starting, marking and ending a block-access trace (see [`crate::trace`]).

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use super::Db;
use crate::error::{Error, Result};
use crate::options::NUM_LEVELS;
use crate::trace::{BlockTraceOptions, TraceDbShape, TraceHeader, TraceSummary};

impl Db {
    /// Starts recording every block access of the read path into `sink`
    /// (a file the caller opened, say), in the format of
    /// [`crate::trace`], until [`Db::end_block_trace`]. The header records
    /// the cache and the tables as they are now. Tracing costs a lock and
    /// a few bytes per access while on; off, a flag test.
    ///
    /// Errors: `InvalidArgument` if a trace is already being recorded or
    /// the sample rate is out of range; `Io` if the header cannot be
    /// written.
    pub fn start_block_trace(
        &self,
        sink: Box<dyn Write + Send>,
        options: BlockTraceOptions,
    ) -> Result<()> {
        let sample_threshold = options.threshold().map_err(Error::InvalidArgument)?;
        let summary = self.summary()?;
        let total = summary.total();
        let header = TraceHeader {
            created_unix_secs: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            table_format_version: self.inner.opts.table_format_version,
            sample_threshold,
            cache_capacity: self.inner.block_cache.capacity(),
            cache_shards: u32::try_from(self.inner.opts.cache_shards).unwrap_or(u32::MAX),
            pinned_at_start: self.inner.block_cache.pinned(),
            db: TraceDbShape {
                db_bytes: total.bytes,
                filter_bytes_except_last_level: summary
                    .levels
                    .iter()
                    .filter(|l| l.level + 1 < NUM_LEVELS)
                    .map(|l| l.filter_bytes)
                    .sum(),
                top_level_index_bytes: total.top_level_index_bytes,
                index_bytes: total.index_partition_bytes + total.top_level_index_bytes,
                fingerprint: self.table_fingerprint(),
            },
        };
        self.inner.tracer.start(sink, &header)
    }

    /// A hash of the live tables' file numbers and sizes, as a block
    /// trace's header records it: equal for the same tables, so that a
    /// trace can be matched with the database it was recorded on.
    pub fn table_fingerprint(&self) -> u64 {
        let version = self.inner.sv.load().version.clone();
        let mut tables: Vec<(u64, u64)> = version
            .all_files()
            .map(|(_, f)| (f.number, f.size))
            .collect();
        tables.sort_unstable();
        let mut bytes = Vec::with_capacity(tables.len() * 16);
        for (number, size) in &tables {
            bytes.extend_from_slice(&number.to_le_bytes());
            bytes.extend_from_slice(&size.to_le_bytes());
        }
        xxhash_rust::xxh3::xxh3_64(&bytes)
    }

    /// Puts `label` in the trace being recorded (nothing if none is): a
    /// replay can count from it, say after a warm-up.
    pub fn mark_block_trace(&self, label: &str) {
        self.inner.tracer.mark(label);
    }

    /// Ends the trace: writes what is buffered and the end record, flushes
    /// the sink and returns it with what was written. The first write
    /// error of the trace (which stopped it) is returned instead.
    ///
    /// Errors: `InvalidArgument` if no trace is being recorded; `Io` if a
    /// write to the sink failed.
    pub fn end_block_trace(&self) -> Result<(Box<dyn Write + Send>, TraceSummary)> {
        self.inner.tracer.end()
    }
}
