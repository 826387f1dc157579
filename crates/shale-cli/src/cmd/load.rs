//! `load`: writes keys `start..start + keys` of the study's dataset.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use shale::{Db, WriteBatch, WriteOptions};
use shale_workload::{Dataset, KEY_LEN};

use crate::args::LoadArgs;
use crate::error::{CliError, CliResult};
use crate::storage::Create;

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
    let db = super::open_with(&storage, &dir, opts)?;
    let job = Job {
        db: &db,
        dataset: Dataset::with_value_size(a.value_size),
        write: WriteOptions { sync: a.sync },
        next: AtomicU64::new(a.start),
        end,
        batch: a.batch,
        failed: AtomicBool::new(false),
        first_error: Mutex::new(None),
        progress: progress_bar(a.keys),
    };
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..a.threads {
            s.spawn(|| job.worker());
        }
    });
    job.progress.finish_and_clear();
    let error = match job.first_error.into_inner() {
        Ok(e) => e,
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(e) = error {
        return Err(e.into());
    }
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
    use crate::fmt::human_bytes;
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
    let next = AtomicU64::new(a.start);
    let failed = AtomicBool::new(false);
    let first_error: Mutex<Option<CliError>> = Mutex::new(None);
    let progress = progress_bar(a.keys);
    let fail = |e: CliError| {
        failed.store(true, Ordering::Relaxed);
        let mut first = match first_error.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        first.get_or_insert(e);
    };
    std::thread::scope(|s| {
        for _ in 0..a.threads {
            s.spawn(|| {
                let mut want = vec![0u8; dataset.value_size];
                while !failed.load(Ordering::Relaxed) {
                    let Some((lo, hi)) = take_chunk(&next, a.batch, end) else {
                        return;
                    };
                    for i in lo..hi {
                        let key = dataset.key(i);
                        dataset.fill_value(i, &mut want);
                        match db.get(&key) {
                            Ok(Some(v)) if v == want => {}
                            Ok(got) => {
                                return fail(CliError::msg(format!(
                                    "verify: key {i} ({}) {}",
                                    crate::bytes::display_key(&key),
                                    match got {
                                        None => "is missing".to_string(),
                                        Some(v) => format!(
                                            "holds {} bytes that are not the dataset's value",
                                            v.len()
                                        ),
                                    }
                                )))
                            }
                            Err(e) => return fail(e.into()),
                        }
                    }
                    progress.inc(hi - lo);
                }
            });
        }
    });
    progress.finish_and_clear();
    let error = match first_error.into_inner() {
        Ok(e) => e,
        Err(poisoned) => poisoned.into_inner(),
    };
    match error {
        Some(e) => Err(e),
        None => Ok(end - a.start),
    }
}

/// The state the writer threads share.
struct Job<'a> {
    db: &'a Db,
    dataset: Dataset,
    write: WriteOptions,
    /// Index of the next key nobody took yet.
    next: AtomicU64,
    end: u64,
    batch: u64,
    failed: AtomicBool,
    first_error: Mutex<Option<shale::Error>>,
    progress: ProgressBar,
}

impl Job<'_> {
    /// Takes chunks of `batch` consecutive keys and writes each as one batch
    /// until the keys run out or a thread fails.
    fn worker(&self) {
        let mut value = vec![0u8; self.dataset.value_size];
        while !self.failed.load(Ordering::Relaxed) {
            let Some((lo, hi)) = take_chunk(&self.next, self.batch, self.end) else {
                return;
            };
            let mut batch = WriteBatch::new();
            for i in lo..hi {
                self.dataset.fill_value(i, &mut value);
                batch.put(&self.dataset.key(i), &value);
            }
            if let Err(e) = self.db.write(batch, &self.write) {
                self.failed.store(true, Ordering::Relaxed);
                let mut first = match self.first_error.lock() {
                    Ok(g) => g,
                    Err(poisoned) => poisoned.into_inner(),
                };
                first.get_or_insert(e);
                return;
            }
            self.progress.inc(hi - lo);
        }
    }
}

/// Takes the next chunk `lo..hi` of at most `batch` keys below `end` from the
/// shared cursor `next`; `None` when every key is taken.
fn take_chunk(next: &AtomicU64, batch: u64, end: u64) -> Option<(u64, u64)> {
    let chunk_end = |lo: u64| lo.saturating_add(batch).min(end);
    next.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |lo| {
        (lo < end).then(|| chunk_end(lo))
    })
    .ok()
    .map(|lo| (lo, chunk_end(lo)))
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
    fn chunks_cover_the_range_once() {
        let next = AtomicU64::new(5);
        let mut chunks = Vec::new();
        while let Some(c) = take_chunk(&next, 4, 15) {
            chunks.push(c);
        }
        assert_eq!(chunks, [(5, 9), (9, 13), (13, 15)]);
        assert_eq!(take_chunk(&AtomicU64::new(3), 4, 3), None);
        // No wrap-around near the end of the index space.
        let next = AtomicU64::new(u64::MAX - 2);
        assert_eq!(
            take_chunk(&next, 1000, u64::MAX),
            Some((u64::MAX - 2, u64::MAX))
        );
        assert_eq!(take_chunk(&next, 1000, u64::MAX), None);
    }

    #[test]
    fn chunks_are_shared_between_threads() {
        let next = AtomicU64::new(0);
        let taken = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    while let Some(c) = take_chunk(&next, 7, 10_000) {
                        taken.lock().expect("lock").push(c);
                    }
                });
            }
        });
        let mut taken = taken.into_inner().expect("lock");
        taken.sort_unstable();
        let mut at = 0;
        for (lo, hi) in taken {
            assert_eq!(lo, at);
            assert!(hi > lo && hi - lo <= 7);
            at = hi;
        }
        assert_eq!(at, 10_000);
    }

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
