//! `stats`: the shape of the database (per level) and its read counters.

use std::io::Write;

use serde_json::Value;
use shale::stat::stat_text;
use shale_bench::stats_doc::stats_json;

use super::{open_read_only, storage_for};
use crate::args::StatsArgs;
use shale_bench::error::{Error as CliError, Result as CliResult};
use shale_bench::storage::Create;

pub fn run(a: &StatsArgs, out: &mut dyn Write) -> CliResult {
    let (storage, dir) = storage_for(a.db.as_deref(), &a.zoned, Create::ReadOnly)?;
    let db = open_read_only(&storage, &dir)?;
    let summary = db.summary()?;
    // Taken after the summary, so the table opens it caused are counted.
    let metrics = db.metrics();
    db.close()?;
    // On a zone file system, its space next to the database's.
    let zoned = match storage.zoned() {
        Some(z) => Some(super::zoned::space(z)?),
        None => None,
    };
    storage.finish()?;
    let text = if a.json {
        let mut doc = stats_json(&summary, &metrics);
        if let (Some(space), Value::Object(m)) = (&zoned, &mut doc) {
            let space = serde_json::to_value(space.doc())
                .map_err(|e| CliError::msg(format!("encoding JSON: {e}")))?;
            m.insert("zoned".into(), space);
        }
        let mut s = serde_json::to_string_pretty(&doc)
            .map_err(|e| CliError::msg(format!("encoding JSON: {e}")))?;
        s.push('\n');
        s
    } else {
        let mut s = stat_text(&summary, &metrics);
        if let Some(space) = &zoned {
            s.push('\n');
            s.push_str(&space.text());
        }
        s
    };
    out.write_all(text.as_bytes()).map_err(CliError::output)
}
