//! `load`: writes keys `start..start + keys` of the study's dataset.

use std::io::Write;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use shale::{Db, WriteBatch, WriteOptions};
use shale_workload::{Dataset, KEY_LEN};

use crate::args::LoadArgs;
use shale_bench::error::{Error as CliError, Result as CliResult};
use shale_bench::storage::Create;

pub fn run(a: &LoadArgs, out: &mut dyn Write) -> CliResult {
    let end = a.start.checked_add(a.keys).ok_or_else(|| {
        CliError::msg(format!(
            "--start {} plus --keys {} passes the last key index",
            a.start, a.keys
        ))
    })?;
    let create = if a.verify {
        Create::ReadOnly
    } else {
        Create::IfMissing
    };
    let (storage, dir) = super::storage_for(a.db.as_deref(), &a.zoned, create)?;
    if a.verify {
        let db = super::open_read_only(&storage, &dir)?;
        let started = Instant::now();
        let checked = verify(&db, a, end);
        db.close()?;
        storage.finish()?;
        let n = checked?;
        return writeln!(
            out,
            "verified {n} keys in {:.3} s: every value is the dataset's ({}-byte values)",
            started.elapsed().as_secs_f64(),
            a.value_size
        )
        .map_err(CliError::output);
    }
    let mut opts = shale::Options::default();
    if let Some(n) = a.write_buffer_size {
        opts.write_buffer_size = n;
    }
    if let Some(bits) = a.filter_bits {
        opts.filter_policy = opts.filter_policy.level_bits_per_key(bits.0);
    }
    let db = super::open_with(&storage, &dir, opts)?;
    let dataset = Dataset::with_value_size(a.value_size);
    let write = WriteOptions::default().sync(a.sync);
    let progress = progress_bar(a.keys);
    let started = Instant::now();
    let loaded = shale_bench::load::load(
        a.start..end,
        a.batch,
        a.threads as usize,
        &progress,
        &|| false,
        |i, k, v| {
            k.clear();
            k.extend_from_slice(&dataset.key(i));
            v.resize(dataset.value_size, 0);
            dataset.fill_value(i, v);
        },
        |pairs| {
            let mut batch = WriteBatch::new();
            for (k, v) in pairs {
                batch.put(k, v);
            }
            db.write(batch, &write)
        },
    );
    progress.finish_and_clear();
    loaded?;
    db.flush()?;
    let loaded = started.elapsed();
    if !a.no_settle {
        db.settle()?;
    }
    let settled = started.elapsed();
    let wamp = db.metrics().write_amplification();
    db.close()?;
    storage.sync()?;
    let zoned = storage.zoned().map(|z| zoned_line(&z.fs.stats()));
    storage.finish()?;
    let line = summary_line(a.keys, a.value_size, loaded);
    writeln!(out, "{line}").map_err(CliError::output)?;
    if !a.no_settle {
        writeln!(
            out,
            "compactions settled after {:.3} s; write amplification {}",
            settled.as_secs_f64(),
            wamp.map_or("-".into(), |w| format!("{w:.2}"))
        )
        .map_err(CliError::output)?;
    }
    if let Some(line) = zoned {
        writeln!(out, "{line}").map_err(CliError::output)?;
    }
    Ok(())
}

/// What a load did to the zone file system, from its counters since mount.
fn zoned_line(s: &shale_zoned::ZoneFsStats) -> String {
    use shale_bench::fmt::human_bytes;
    format!(
        "zone file system: {} of files written ({} WAL), {} padding, {} metadata, {} moved by \
         the collector ({} zones emptied), {} resets; device WAF {:.3}; {} of {} data zones empty",
        human_bytes(s.host_total()),
        human_bytes(s.host_bytes[1]),
        human_bytes(s.padding_bytes),
        human_bytes(s.metadata_bytes),
        human_bytes(s.gc_bytes),
        s.gc_zones,
        s.resets,
        s.waf(),
        s.empty_zones,
        s.data_zones
    )
}

/// `load --verify`: Gets keys `a.start..end` on `a.threads` threads and
/// compares every value with the dataset's; returns the keys checked, or the
/// first key missing or different.
fn verify(db: &Db, a: &LoadArgs, end: u64) -> CliResult<u64> {
    let dataset = Dataset::with_value_size(a.value_size);
    let progress = progress_bar(a.keys);
    let checked = shale_bench::load::run_chunks(
        a.start..end,
        a.batch,
        a.threads as usize,
        &progress,
        &|| false,
        |chunk| {
            let mut want = vec![0u8; dataset.value_size];
            for i in chunk {
                let key = dataset.key(i);
                dataset.fill_value(i, &mut want);
                match db.get(&key) {
                    Ok(Some(v)) if v == want => {}
                    Ok(got) => {
                        return Err(CliError::msg(format!(
                            "verify: key {i} ({}) {}",
                            shale_bench::bytes::display_key(&key),
                            match got {
                                None => "is missing".to_string(),
                                Some(v) => format!(
                                    "holds {} bytes that are not the dataset's value",
                                    v.len()
                                ),
                            }
                        )))
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(())
        },
    );
    progress.finish_and_clear();
    checked.map(|_| end - a.start)
}

/// A progress bar on standard error (drawn only when it is a terminal).
fn progress_bar(keys: u64) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(Some(keys), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "{elapsed_precise} [{bar:40}] {human_pos}/{human_len} keys {per_sec} eta {eta}",
    ) {
        pb.set_style(style.progress_chars("=> "));
    }
    pb
}

/// The line `load` prints: keys, seconds, keys per second and megabytes (10^6
/// bytes) of user data (keys and values) per second.
pub fn summary_line(keys: u64, value_size: usize, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let rate = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
    let user_bytes = keys as f64 * (KEY_LEN + value_size) as f64;
    format!(
        "loaded {keys} keys in {secs:.3} s: {:.0} keys/s, {:.2} MB/s of user data ({KEY_LEN}-byte keys, {value_size}-byte values)",
        rate(keys as f64),
        rate(user_bytes / 1e6),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_line_reports_rates() {
        let line = summary_line(20_000, 110, Duration::from_secs(2));
        assert_eq!(
            line,
            "loaded 20000 keys in 2.000 s: 10000 keys/s, 1.42 MB/s of user data \
             (32-byte keys, 110-byte values)"
        );
        let zero = summary_line(0, 110, Duration::ZERO);
        assert!(zero.starts_with("loaded 0 keys in 0.000 s: 0 keys/s, 0.00 MB/s"));
    }
}
