//! The read pool: threads that look keys up for a `multi_get`, so that one
//! calling thread keeps many device reads in flight.
//!
//! A Get that misses the block cache waits for one device read at a time; a
//! device serves random reads much faster at a queue depth of 32 than at 1
//! or 2. [`ReadPool::run`] spreads the lookups of one call over the calling
//! thread and up to `helpers` pool threads: each takes the next index from a
//! shared counter (a cached key is quick, a device read slow, so nobody
//! waits on a fixed share), and the caller gathers the answers in index
//! order. Plain threads and a queue behind a mutex: portable, and a device
//! read costs far more than a wake-up.
//!
//! # Lifetime
//!
//! The pool belongs to the database (`DbInner::read_pool`). Its
//! `Options::read_threads` threads start with the first call that needs them
//! and are joined by [`ReadPool::shutdown`], which `Db::close` and dropping
//! the `Db` call: jobs still queued are dropped unrun, and a call after it
//! fails with [`Error::Closed`]. Jobs own what they read (an `Arc` of the
//! database, the super version and the keys), so a worker never borrows the
//! caller's stack.
//!
//! # Failure
//!
//! The first error in index order is the call's, exactly as when the keys
//! are looked up one after the other: an index is looked up only while no
//! lower index has failed, and every index below the lowest failure is
//! looked up. A lookup that panics is reported as [`Error::Internal`] for
//! its index (the pool thread survives it); the caller never waits for a
//! lookup nobody runs.

use std::any::Any;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};

type Job = Box<dyn FnOnce() + Send + 'static>;

struct Queue {
    jobs: VecDeque<Job>,
    /// Set by [`ReadPool::shutdown`]: no job is taken any more, workers exit.
    closed: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    /// Signalled when a job is queued and when the pool closes.
    cv: Condvar,
}

/// A database's read threads (see the module documentation).
pub(crate) struct ReadPool {
    size: usize,
    shared: Arc<Shared>,
    /// The running workers. Lock order: `threads`, then the queue.
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Every worker is running (saves taking `threads` on each call).
    started: AtomicBool,
}

impl ReadPool {
    /// A pool of `size` threads, none started yet (0: calls run inline).
    pub(crate) fn new(size: usize) -> ReadPool {
        ReadPool {
            size,
            shared: Arc::new(Shared {
                queue: Mutex::new(Queue {
                    jobs: VecDeque::new(),
                    closed: false,
                }),
                cv: Condvar::new(),
            }),
            threads: Mutex::new(Vec::new()),
            started: AtomicBool::new(false),
        }
    }

    /// The number of threads the pool runs once started.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Starts the workers not yet running. [`Error::Closed`] after
    /// [`ReadPool::shutdown`]; an error to spawn a thread is returned (the
    /// next call tries again; those already running stay).
    fn start(&self) -> Result<()> {
        if self.started.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut threads = self.threads.lock();
        if self.shared.queue.lock().closed {
            return Err(Error::Closed);
        }
        while threads.len() < self.size {
            let shared = self.shared.clone();
            let handle = std::thread::Builder::new()
                .name(format!("shale-read-{}", threads.len()))
                .spawn(move || work(&shared))
                .map_err(|e| Error::io("spawn read thread", "(read pool)", e))?;
            threads.push(handle);
        }
        self.started.store(true, Ordering::Release);
        Ok(())
    }

    /// Queues `jobs` and wakes a worker for each.
    fn submit(&self, jobs: Vec<Job>) -> Result<()> {
        self.start()?;
        let n = jobs.len();
        {
            let mut q = self.shared.queue.lock();
            if q.closed {
                return Err(Error::Closed);
            }
            q.jobs.extend(jobs);
        }
        for _ in 0..n {
            self.shared.cv.notify_one();
        }
        Ok(())
    }

    /// Runs `lookup(i)` for the indices `0..n` on the calling thread and up
    /// to `helpers` pool threads, and returns the answers in index order,
    /// ending at the first error (included, last). Without an error the
    /// answers are all `n`.
    ///
    /// [`Error::Closed`] (and nothing looked up) once the pool is shut down.
    pub(crate) fn run<T, F>(&self, n: usize, helpers: usize, lookup: F) -> Result<Vec<Result<T>>>
    where
        T: Send + 'static,
        F: Fn(usize) -> Result<T> + Send + Sync + 'static,
    {
        let batch = Arc::new(Batch {
            lookup,
            n,
            next: AtomicUsize::new(0),
            failed: AtomicUsize::new(usize::MAX),
        });
        let helpers = helpers.min(self.size).min(n.saturating_sub(1));
        let (tx, rx) = mpsc::channel::<(usize, Result<T>)>();
        if helpers > 0 {
            let jobs: Vec<Job> = (0..helpers)
                .map(|_| {
                    let (batch, tx) = (batch.clone(), tx.clone());
                    Box::new(move || {
                        while let Some(i) = batch.claim() {
                            let answer = batch.look_up(i);
                            if tx.send((i, answer)).is_err() {
                                // The caller has what it needs.
                                return;
                            }
                        }
                    }) as Job
                })
                .collect();
            self.submit(jobs)?;
        }
        // Only the helpers' senders keep the channel open.
        drop(tx);
        let mut answers: Vec<Option<Result<T>>> = (0..n).map(|_| None).collect();
        while let Some(i) = batch.claim() {
            if let Some(slot) = answers.get_mut(i) {
                *slot = Some(batch.look_up(i));
            }
        }
        // Wait for the helpers' answers below the lowest failure (those above
        // do not count; an index is claimed by exactly one thread, which
        // always answers it).
        let mut done = 0;
        loop {
            while answers.get(done).is_some_and(Option::is_some) {
                done += 1;
            }
            let needed = n.min(batch.failed.load(Ordering::Acquire).saturating_add(1));
            if done >= needed {
                break;
            }
            match rx.recv() {
                Ok((i, answer)) => {
                    if let Some(slot) = answers.get_mut(i) {
                        *slot = Some(answer);
                    }
                }
                Err(mpsc::RecvError) => {
                    return Err(Error::Internal(format!(
                        "read pool: no answer for lookup {done} of {n}"
                    )))
                }
            }
        }
        let mut out = Vec::with_capacity(done);
        for answer in answers.into_iter().map_while(|a| a) {
            let failed = answer.is_err();
            out.push(answer);
            if failed {
                break;
            }
        }
        Ok(out)
    }

    /// Stops the pool: queued jobs are dropped unrun, workers finish the
    /// lookup they are in and exit, and are joined. Later calls fail with
    /// [`Error::Closed`]. Idempotent.
    pub(crate) fn shutdown(&self) {
        let mut threads = self.threads.lock();
        let dropped = {
            let mut q = self.shared.queue.lock();
            q.closed = true;
            std::mem::take(&mut q.jobs)
        };
        // Dropped outside the queue lock: a job owns database state.
        drop(dropped);
        self.shared.cv.notify_all();
        let me = std::thread::current().id();
        for handle in threads.drain(..) {
            // A worker never joins itself (it would wait forever); one cannot
            // get here from a job, but a drop of the last database reference
            // could, were a job ever to hold it.
            if handle.thread().id() != me {
                // Workers catch their jobs' panics: nothing to report.
                let _ = handle.join();
            }
        }
    }
}

impl Drop for ReadPool {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A worker: runs queued jobs until the pool closes.
fn work(shared: &Shared) {
    loop {
        let job = {
            let mut q = shared.queue.lock();
            loop {
                if q.closed {
                    return;
                }
                if let Some(job) = q.jobs.pop_front() {
                    break job;
                }
                shared.cv.wait(&mut q);
            }
        };
        // Lookups catch their own panics (see `Batch::look_up`); this keeps
        // the worker alive should anything else in a job panic.
        let _ = catch_unwind(AssertUnwindSafe(job));
    }
}

/// The lookups of one [`ReadPool::run`], shared by the threads running it.
struct Batch<F> {
    lookup: F,
    n: usize,
    /// The next index to claim.
    next: AtomicUsize,
    /// The lowest index whose lookup failed (`usize::MAX`: none).
    failed: AtomicUsize,
}

impl<F> Batch<F> {
    /// The next index to look up; `None` when all are claimed or the rest
    /// lie above a failure. Indices are claimed in increasing order, so
    /// every index below the lowest failure is claimed by someone.
    fn claim(&self) -> Option<usize> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        (i < self.n && i < self.failed.load(Ordering::Acquire)).then_some(i)
    }

    fn look_up<T>(&self, i: usize) -> Result<T>
    where
        F: Fn(usize) -> Result<T>,
    {
        let answer = catch_unwind(AssertUnwindSafe(|| (self.lookup)(i))).unwrap_or_else(|p| {
            Err(Error::Internal(format!(
                "a multi_get lookup panicked: {}",
                panic_message(p.as_ref())
            )))
        });
        if answer.is_err() {
            self.failed.fetch_min(i, Ordering::AcqRel);
        }
        answer
    }
}

fn panic_message(p: &(dyn Any + Send)) -> &str {
    p.downcast_ref::<&str>()
        .copied()
        .or_else(|| p.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn io_error(i: usize) -> Error {
        Error::io(
            "read",
            format!("table-{i}"),
            std::io::Error::other("injected"),
        )
    }

    #[test]
    fn answers_come_back_in_index_order() {
        let pool = ReadPool::new(4);
        for n in [0, 1, 2, 5, 100] {
            let got = pool
                .run(n, 4, |i| {
                    // Uneven work, so that threads finish out of order.
                    if i % 7 == 0 {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    Ok(i * 10)
                })
                .expect("run");
            let got: Vec<usize> = got.into_iter().map(|a| a.expect("ok")).collect();
            assert_eq!(got, (0..n).map(|i| i * 10).collect::<Vec<_>>());
        }
        pool.shutdown();
    }

    #[test]
    fn the_helpers_do_run_lookups() {
        let pool = ReadPool::new(4);
        let threads = Arc::new(Mutex::new(std::collections::HashSet::new()));
        let seen = threads.clone();
        pool.run(64, 4, move |_| {
            seen.lock().insert(std::thread::current().id());
            std::thread::sleep(Duration::from_millis(1));
            Ok(())
        })
        .expect("run");
        let used = threads.lock().len();
        assert!(used >= 2, "only {used} thread looked keys up");
        // No helper at all: the caller alone, and the pool does not start.
        let idle = ReadPool::new(4);
        idle.run(3, 0, |_| Ok(())).expect("run");
        assert!(idle.threads.lock().is_empty());
    }

    #[test]
    fn the_first_failure_in_index_order_wins() {
        let pool = ReadPool::new(3);
        for _ in 0..20 {
            let got = pool
                .run(40, 3, |i| {
                    // The later failure is quicker, so often seen first.
                    if i == 30 {
                        return Err(io_error(i));
                    }
                    if i == 12 {
                        std::thread::sleep(Duration::from_millis(1));
                        return Err(io_error(i));
                    }
                    Ok(i)
                })
                .expect("run");
            assert_eq!(got.len(), 13, "answers up to and with the first failure");
            assert!(got[..12].iter().all(Result::is_ok));
            match &got[12] {
                Err(Error::Io { path, .. }) => assert_eq!(path.to_str(), Some("table-12")),
                other => panic!("expected index 12's error, got {other:?}"),
            }
        }
    }

    #[test]
    fn a_panicking_lookup_is_an_internal_error_and_the_pool_lives_on() {
        let pool = ReadPool::new(2);
        for _ in 0..5 {
            let got = pool
                .run(8, 2, |i| {
                    if i == 5 {
                        panic!("lookup {i} broke");
                    }
                    Ok(i)
                })
                .expect("run");
            assert_eq!(got.len(), 6);
            match &got[5] {
                Err(Error::Internal(m)) => assert!(m.contains("lookup 5 broke"), "{m}"),
                other => panic!("expected an internal error, got {other:?}"),
            }
        }
        // Both workers still serve.
        let got = pool.run(50, 2, Ok).expect("run");
        assert_eq!(got.len(), 50);
        assert_eq!(pool.threads.lock().len(), 2);
        assert!(pool.threads.lock().iter().all(|h| !h.is_finished()));
    }

    #[test]
    fn shutdown_joins_every_worker_and_refuses_later_calls() {
        let pool = ReadPool::new(6);
        pool.run(20, 6, Ok).expect("run");
        assert_eq!(pool.threads.lock().len(), 6);
        pool.shutdown();
        // Each worker held the shared state: all have exited.
        assert_eq!(Arc::strong_count(&pool.shared), 1);
        assert!(pool.threads.lock().is_empty());
        assert!(matches!(pool.run(20, 6, Ok), Err(Error::Closed)));
        // The caller alone needs no pool.
        assert_eq!(pool.run(1, 6, Ok).expect("inline").len(), 1);
        pool.shutdown();
    }

    #[test]
    fn shutdown_while_a_call_runs_ends_it_without_a_hang() {
        let pool = Arc::new(ReadPool::new(2));
        let (started_tx, started_rx) = mpsc::channel();
        let runner = {
            let pool = pool.clone();
            std::thread::spawn(move || {
                pool.run(200, 2, move |i| {
                    if i == 0 {
                        let _ = started_tx.send(());
                    }
                    std::thread::sleep(Duration::from_micros(200));
                    Ok(i)
                })
            })
        };
        started_rx.recv().expect("started");
        pool.shutdown();
        assert_eq!(Arc::strong_count(&pool.shared), 1);
        // The call finishes: every index claimed is answered.
        let got = runner.join().expect("no panic").expect("run");
        assert_eq!(got.len(), 200);
    }
}
