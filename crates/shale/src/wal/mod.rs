//! STUB: interface only; implementation in progress.
use std::path::PathBuf;
use std::sync::Arc;

use shale_env::{AppendFile, RandomAccessFile};

use crate::error::Result;

/// Writes records to a log file (a WAL or the manifest).
pub struct LogWriter;

impl LogWriter {
    /// A writer appending to `file` (which is empty), named `path` in errors.
    pub fn new(file: Box<dyn AppendFile>, path: PathBuf) -> LogWriter {
        let _ = (file, path);
        todo!()
    }
    /// Appends one record. Not durable until `sync`.
    pub fn add_record(&mut self, record: &[u8]) -> Result<()> {
        let _ = record;
        todo!()
    }
    /// Flushes and syncs.
    pub fn sync(&mut self) -> Result<()> {
        todo!()
    }
    /// Flushes buffered bytes to the OS.
    pub fn flush(&mut self) -> Result<()> {
        todo!()
    }
    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        todo!()
    }
}

/// How a log ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEnd {
    /// Every byte belonged to a complete, valid record.
    Clean,
    /// The log ended in an incomplete or damaged record with nothing valid after
    /// it (a write torn by a crash) at this offset.
    TornTail { offset: u64 },
}

/// Reads records back.
pub struct LogReader;

impl LogReader {
    /// A reader over `file`, named `path` in errors.
    pub fn new(file: Arc<dyn RandomAccessFile>, path: PathBuf) -> LogReader {
        let _ = (file, path);
        todo!()
    }
    /// The next record, `Ok(None)` at the end. Damage followed by a valid record is
    /// `Error::Corruption` with the file and offset.
    pub fn read_record(&mut self) -> Result<Option<Vec<u8>>> {
        todo!()
    }
    /// How the log ended (valid after `read_record` returned `Ok(None)`).
    pub fn end(&self) -> LogEnd {
        todo!()
    }
}
