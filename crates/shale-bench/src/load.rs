//! The one loader of the benches: `shale load`, `bench kvdb`'s dataset,
//! `bench ycsb`'s records and shale's harness all write their keys through
//! [`load`], and `shale load --verify` reads them back through
//! [`run_chunks`].
//!
//! The indices of a range are cut into chunks of consecutive indices; the
//! threads take the next chunk from a shared cursor, so a slow thread never
//! holds the others back, and the first failure stops every thread.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use indicatif::ProgressBar;

/// What [`load`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Loaded {
    /// Key and value bytes written.
    pub user_bytes: u64,
    /// True if `stop` ended the load before every key was written.
    pub stopped: bool,
}

/// Runs `work(chunk)` on every chunk of at most `chunk` consecutive indices
/// of `range`, on `threads` threads, until the chunks run out, one fails,
/// or `stop()` says so (checked before each chunk). Advances `progress` by
/// each chunk done. Returns the first failure, else whether it stopped early.
pub fn run_chunks<E: Send>(
    range: Range<u64>,
    chunk: u64,
    threads: usize,
    progress: &ProgressBar,
    stop: &(dyn Fn() -> bool + Sync),
    work: impl Fn(Range<u64>) -> Result<(), E> + Sync,
) -> Result<bool, E> {
    run_chunks_with(
        range,
        chunk,
        threads,
        progress,
        stop,
        || (),
        |(), c| work(c),
    )
}

/// [`run_chunks`] with a state of each thread's own, made by `init` in the
/// thread and handed to each of its `work` calls (buffers kept from one
/// chunk to the next).
fn run_chunks_with<S, E: Send>(
    range: Range<u64>,
    chunk: u64,
    threads: usize,
    progress: &ProgressBar,
    stop: &(dyn Fn() -> bool + Sync),
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, Range<u64>) -> Result<(), E> + Sync,
) -> Result<bool, E> {
    let next = AtomicU64::new(range.start);
    let failed = AtomicBool::new(false);
    let stopped = AtomicBool::new(false);
    let first_error: Mutex<Option<E>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                let mut state = init();
                while !failed.load(Ordering::Relaxed) {
                    if stop() {
                        stopped.store(true, Ordering::Relaxed);
                        return;
                    }
                    let Some(c) = take_chunk(&next, chunk.max(1), range.end) else {
                        return;
                    };
                    let n = c.end - c.start;
                    if let Err(e) = work(&mut state, c) {
                        failed.store(true, Ordering::Relaxed);
                        let mut first = first_error.lock().unwrap_or_else(|p| p.into_inner());
                        first.get_or_insert(e);
                        return;
                    }
                    progress.inc(n);
                }
            });
        }
    });
    match first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(stopped.into_inner()),
    }
}

/// Writes the pairs of `range` in batches of at most `batch` consecutive
/// indices, on `threads` threads: `pair(i, key, value)` fills index `i`'s key
/// and value (given the buffers of an earlier pair, to overwrite: a thread
/// keeps its buffers from batch to batch, so a load allocates nothing per
/// key), `write` writes one batch. See [`run_chunks`] for `progress` and
/// `stop`.
pub fn load<E: Send>(
    range: Range<u64>,
    batch: u64,
    threads: usize,
    progress: &ProgressBar,
    stop: &(dyn Fn() -> bool + Sync),
    pair: impl Fn(u64, &mut Vec<u8>, &mut Vec<u8>) + Sync,
    write: impl Fn(&[(&[u8], &[u8])]) -> Result<(), E> + Sync,
) -> Result<Loaded, E> {
    let user_bytes = AtomicU64::new(0);
    // Each thread's key and value buffers, one pair per index of a batch.
    let init = || (Vec::<Vec<u8>>::new(), Vec::<Vec<u8>>::new());
    let stopped = run_chunks_with(range, batch, threads, progress, stop, init, |bufs, c| {
        let (keys, values) = bufs;
        let n = (c.end - c.start) as usize;
        if keys.len() < n {
            keys.resize_with(n, Vec::new);
            values.resize_with(n, Vec::new);
        }
        for ((i, k), v) in c.zip(keys.iter_mut()).zip(values.iter_mut()) {
            pair(i, k, v);
        }
        let pairs: Vec<(&[u8], &[u8])> = keys
            .iter()
            .zip(values.iter())
            .take(n)
            .map(|(k, v)| (k.as_slice(), v.as_slice()))
            .collect();
        let bytes: usize = pairs.iter().map(|(k, v)| k.len() + v.len()).sum();
        write(&pairs)?;
        user_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        Ok(())
    })?;
    Ok(Loaded {
        user_bytes: user_bytes.into_inner(),
        stopped,
    })
}

/// Takes the next chunk of at most `chunk` indices below `end` from the
/// shared cursor `next`; `None` when every index is taken.
fn take_chunk(next: &AtomicU64, chunk: u64, end: u64) -> Option<Range<u64>> {
    let chunk_end = |lo: u64| lo.saturating_add(chunk).min(end);
    next.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |lo| {
        (lo < end).then(|| chunk_end(lo))
    })
    .ok()
    .map(|lo| lo..chunk_end(lo))
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
        assert_eq!(chunks, [5..9, 9..13, 13..15]);
        assert_eq!(take_chunk(&AtomicU64::new(3), 4, 3), None);
        // No wrap-around near the end of the index space.
        let next = AtomicU64::new(u64::MAX - 2);
        assert_eq!(
            take_chunk(&next, 1000, u64::MAX),
            Some(u64::MAX - 2..u64::MAX)
        );
        assert_eq!(take_chunk(&next, 1000, u64::MAX), None);
    }

    #[test]
    fn every_pair_is_written_once_from_every_thread() {
        let written = Mutex::new(Vec::new());
        let loaded = load(
            10..10_000,
            7,
            4,
            &ProgressBar::hidden(),
            &|| false,
            |i, k, v| {
                *k = i.to_be_bytes().to_vec();
                *v = vec![1; 3];
            },
            |pairs| -> Result<(), String> {
                assert!(!pairs.is_empty() && pairs.len() <= 7);
                let mut w = written.lock().expect("lock");
                w.extend(pairs.iter().map(|(k, _)| k.to_vec()));
                Ok(())
            },
        )
        .expect("loaded");
        assert_eq!(loaded.user_bytes, 9_990 * 11);
        assert!(!loaded.stopped);
        let mut w = written.into_inner().expect("lock");
        w.sort();
        let want: Vec<Vec<u8>> = (10..10_000u64).map(|i| i.to_be_bytes().to_vec()).collect();
        assert_eq!(w, want);
    }

    #[test]
    fn the_first_failure_stops_the_load_and_is_returned() {
        let calls = AtomicU64::new(0);
        let r = load(
            0..100_000,
            10,
            3,
            &ProgressBar::hidden(),
            &|| false,
            |i, k, _| *k = i.to_be_bytes().to_vec(),
            |pairs| {
                calls.fetch_add(1, Ordering::Relaxed);
                if pairs[0].0 == 500u64.to_be_bytes() {
                    return Err("disk full at 500".to_string());
                }
                Ok(())
            },
        );
        assert_eq!(r, Err("disk full at 500".to_string()));
        assert!(calls.into_inner() < 10_000, "the other threads stopped");
    }

    #[test]
    fn stop_ends_the_load_early() {
        let r = load(
            0..1_000,
            10,
            2,
            &ProgressBar::hidden(),
            &|| true,
            |_, _, _| {},
            |_| -> Result<(), String> { panic!("nothing is written once stopped") },
        )
        .expect("stopped");
        assert!(r.stopped);
        assert_eq!(r.user_bytes, 0);
    }
}
