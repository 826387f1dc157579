//! `put`, `get`, `delete`, `delete-range` and `scan`.

use std::io::Write;

use shale::{ReadOptions, WriteBatch, WriteOptions};

use super::{open, open_read_only, storage_for};
use crate::args::{DeleteArgs, DeleteRangeArgs, GetArgs, PutArgs, ScanArgs};
use shale_bench::bytes::{display_key, display_value};
use shale_bench::error::{Error as CliError, Result as CliResult};
use shale_bench::storage::Create;

const SYNC: WriteOptions = WriteOptions::SYNC;

pub fn put(a: &PutArgs) -> CliResult {
    let (storage, dir) = storage_for(a.db.as_deref(), &a.zoned, Create::IfMissing)?;
    let db = open(&storage, &dir, true)?;
    let mut batch = WriteBatch::new();
    batch.put(&a.key.0, &a.value.0);
    db.write(batch, &SYNC)?;
    db.close()?;
    storage.finish()
}

pub fn delete(a: &DeleteArgs) -> CliResult {
    let (storage, dir) = storage_for(a.db.as_deref(), &a.zoned, Create::No)?;
    let db = open(&storage, &dir, false)?;
    let mut batch = WriteBatch::new();
    batch.delete(&a.key.0);
    db.write(batch, &SYNC)?;
    db.close()?;
    storage.finish()
}

pub fn delete_range(a: &DeleteRangeArgs) -> CliResult {
    if a.start.0 > a.end.0 {
        return Err(CliError::Usage(format!(
            "delete-range: START {} is above END {}",
            display_key(&a.start.0),
            display_key(&a.end.0)
        )));
    }
    let (storage, dir) = storage_for(a.db.as_deref(), &a.zoned, Create::No)?;
    let db = open(&storage, &dir, false)?;
    let mut batch = WriteBatch::new();
    batch.delete_range(&a.start.0, &a.end.0);
    db.write(batch, &SYNC)?;
    db.close()?;
    storage.finish()
}

pub fn get(a: &GetArgs, out: &mut dyn Write) -> CliResult {
    let (storage, dir) = storage_for(a.db.as_deref(), &a.zoned, Create::ReadOnly)?;
    let db = open_read_only(&storage, &dir)?;
    let value = db.get(&a.key.0)?;
    db.close()?;
    storage.finish()?;
    match value {
        Some(v) => writeln!(out, "{}", display_value(&v)).map_err(CliError::output),
        None => Err(CliError::msg(format!(
            "not found: {}",
            display_key(&a.key.0)
        ))),
    }
}

pub fn scan(a: &ScanArgs, out: &mut dyn Write) -> CliResult {
    let (storage, dir) = storage_for(a.db.as_deref(), &a.zoned, Create::ReadOnly)?;
    let db = open_read_only(&storage, &dir)?;
    let opts = ReadOptions::default()
        .lower_bound(a.from.as_ref().map(|k| k.0.clone()))
        .upper_bound(a.to.as_ref().map(|k| k.0.clone()));
    let limit = a.limit.unwrap_or(u64::MAX);
    let mut it = db.iter(&opts)?;
    it.seek_to_first();
    let mut printed = 0u64;
    while printed < limit && it.valid() {
        writeln!(
            out,
            "{} {}",
            display_key(it.key()),
            display_value(it.value())
        )
        .map_err(CliError::output)?;
        printed += 1;
        it.next();
    }
    it.status()?;
    drop(it);
    db.close()?;
    storage.finish()
}
