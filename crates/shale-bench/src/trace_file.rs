//! Recording a block-access trace of a shale database into a file (the
//! benches' `--trace FILE`); `simulate` replays it.

use std::path::Path;

use shale::trace;

use crate::error::{Error, Result};
use crate::fmt::human_bytes;

/// Starts a block-access trace of `db` into a new file at `file`.
pub fn start_trace(db: &shale::Db, file: &Path, sample_rate: f64) -> Result {
    let f = std::fs::File::create(file)
        .map_err(|e| Error::msg(format!("cannot create the trace {}: {e}", file.display())))?;
    let options = trace::BlockTraceOptions::default().sample_rate(sample_rate);
    db.start_block_trace(Box::new(std::io::BufWriter::new(f)), options)
        .map_err(|e| Error::msg(format!("tracing into {}: {e}", file.display())))
}

/// Ends `db`'s trace into `file` and says on standard error what it holds.
pub fn end_trace(db: &shale::Db, file: &Path, what: &str) -> Result {
    let (_, s) = db
        .end_block_trace()
        .map_err(|e| Error::msg(format!("the trace {}: {e}", file.display())))?;
    eprintln!(
        "block trace of {what}: {} records, {} in {}",
        s.records,
        human_bytes(s.bytes),
        file.display()
    );
    Ok(())
}
