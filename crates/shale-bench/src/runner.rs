//! The one runner of the benches' operation loops: `bench kvdb`'s Gets (single,
//! batched and streamed), shale's harness serving `read`, `bench ycsb`'s
//! workers, db_bench's benchmarks and `bench kvdb`'s device-limit probe all
//! run their threads through [`Plan::run`].
//!
//! A [`Plan`] says how many threads run, how much work each does
//! ([`Units`]), where latencies go ([`Sink`]) and which progress bar moves.
//! Each thread builds its own state with `init`, then calls `unit` (one
//! operation, or one batch) until its share of the units is done, the
//! deadline passes, a thread fails or Ctrl-C is pressed ([`interrupted`],
//! checked before every unit). The first failure stops every thread and is
//! returned with the thread and the unit it came from. A warm-up phase runs
//! through the same code as the measured one ([`Plan::warm_then_measure`]),
//! and a closure may run beside the workers until they finish
//! ([`Plan::run_beside`]: a sampler, or db_bench's background writer).
//!
//! Ctrl-C (SIGINT) and SIGTERM during a bench: the first asks the running
//! bench to stop, so that it writes the results and samples it has; a second
//! ends the process at once (exit code 130). Benches call
//! [`install_interrupt`] when they start.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::live::{ByKind, LiveStats};

static STOP: AtomicBool = AtomicBool::new(false);
static INSTALL: Once = Once::new();

/// Installs the Ctrl-C handler (once per process; later calls do nothing).
/// A failure to install is reported on standard error and the bench runs
/// without it.
pub fn install_interrupt() {
    INSTALL.call_once(|| {
        let result = ctrlc::set_handler(|| {
            if STOP.swap(true, Ordering::Relaxed) {
                std::process::exit(130);
            }
            eprintln!("\ninterrupted: stopping and writing the results so far (again to quit now)");
        });
        if let Err(e) = result {
            eprintln!("shale: Ctrl-C will not keep partial results: {e}");
        }
    });
}

/// True once a stop was asked for (Ctrl-C): one relaxed atomic load.
pub fn interrupted() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// A progress bar of `len` steps on standard error, labelled `msg`.
pub fn bar(len: u64, msg: String) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({per_sec}, eta {eta})")
    {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_message(msg);
    pb
}

/// Units a thread gathers before it moves the shared progress bar.
const TICK: u64 = 512;

/// How much work each thread of a [`Plan`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Units {
    /// `total` units split between the threads: thread `t` does the
    /// positions [`share`] gives it (consecutive, `total / threads` each and
    /// one more for the first `total % threads` threads).
    Split(u64),
    /// The same number of units on every thread, positions `0..n`.
    Each(u64),
    /// Units until the instant passes (positions counted from 0).
    Until(Instant),
}

impl Units {
    /// The positions thread `t` of `threads` works through.
    fn positions(self, threads: usize, t: usize) -> Range<u64> {
        match self {
            Units::Split(total) => share(total, threads, t),
            Units::Each(n) => 0..n,
            Units::Until(_) => 0..u64::MAX,
        }
    }
}

/// Thread `t`'s positions of `total` units split between `threads` threads:
/// consecutive ranges in thread order, the first `total % threads` one
/// longer (as the harness protocol's `thread_slice`).
pub fn share(total: u64, threads: usize, t: usize) -> Range<u64> {
    let threads = threads.max(1) as u64;
    let t = t as u64;
    let (each, extra) = (total / threads, total % threads);
    let start = t.saturating_mul(each).saturating_add(t.min(extra));
    let len = if t < threads {
        each + u64::from(t < extra)
    } else {
        0
    };
    start.min(total)..start.saturating_add(len).min(total)
}

/// Which phase a thread is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Not measured: fills the caches before the measured phase.
    Warmup,
    /// Measured.
    Measured,
}

/// Where the latencies a thread records go.
#[derive(Clone, Copy)]
pub enum Sink<'a> {
    /// Into the thread's own stats, merged into [`Done::stats`] at the end.
    Own,
    /// Into the live stats, each thread in its slot (the thread index), for
    /// the sampler's intervals and the report's totals.
    Live(&'a LiveStats),
    /// Counted in the live stats without a latency: operations are not timed
    /// (db_bench without `--histogram`).
    Count(&'a LiveStats),
}

/// A running thread, as its `init` and `unit` see it: which thread, which
/// phase, where it is in its units, and how it records.
pub struct Worker<'a> {
    /// The thread's index (its slot in live stats).
    pub thread: usize,
    /// The phase being run.
    pub phase: Phase,
    /// The position of the next unit.
    pub pos: u64,
    end: u64,
    sink: Sink<'a>,
    own: ByKind,
    progress: Option<&'a ProgressBar>,
    ticks: u64,
}

impl<'a> Worker<'a> {
    fn new(
        thread: usize,
        phase: Phase,
        positions: Range<u64>,
        sink: Sink<'a>,
        progress: Option<&'a ProgressBar>,
    ) -> Worker<'a> {
        Worker {
            thread,
            phase,
            pos: positions.start,
            end: positions.end,
            sink,
            own: ByKind::new(),
            progress,
            ticks: 0,
        }
    }

    /// Units left in this thread's share (`u64::MAX`-ish under a deadline).
    pub fn left(&self) -> u64 {
        self.end.saturating_sub(self.pos)
    }

    /// Records `n` operations of `kind` that each took `nanos`.
    pub fn record(&mut self, kind: &'static str, nanos: u64, n: u64) {
        match self.sink {
            Sink::Own => self.own.entry(kind).or_default().record(nanos, n),
            Sink::Live(live) => live.record_n(self.thread, kind, nanos, n),
            Sink::Count(live) => {
                for _ in 0..n {
                    live.count(self.thread);
                }
            }
        }
    }

    /// Runs `op` as one operation of `kind`, recording its latency (or, with
    /// [`Sink::Count`], only counting it).
    pub fn time<T>(&mut self, kind: &'static str, op: impl FnOnce() -> T) -> T {
        if let Sink::Count(live) = self.sink {
            let r = op();
            live.count(self.thread);
            return r;
        }
        let t0 = Instant::now();
        let r = op();
        self.record(kind, elapsed_nanos(t0), 1);
        r
    }

    /// Moves the progress bar by `n` (gathered, so that the bar is touched
    /// every few hundred units).
    pub fn tick(&mut self, n: u64) {
        self.ticks += n;
        if self.ticks >= TICK {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if let Some(pb) = self.progress {
            pb.inc(self.ticks);
        }
        self.ticks = 0;
    }
}

/// Nanoseconds since `t0`.
pub fn elapsed_nanos(t0: Instant) -> u64 {
    t0.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64
}

/// What one call of `unit` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// `n` units of the thread's share (one operation, or the keys of one
    /// batch): the position and the progress bar move by `n`. `Did(0)`
    /// ends the thread, as [`Step::End`].
    Did(u64),
    /// The thread has no more work (a scan reached the end of the keys).
    End,
}

/// A worker thread panicked (a bug): the error a run returns for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Panicked {
    /// The thread.
    pub thread: usize,
}

impl From<Panicked> for String {
    fn from(p: Panicked) -> String {
        format!("bench thread {} panicked", p.thread)
    }
}

/// The first failure of a run.
#[derive(Debug, PartialEq, Eq)]
pub struct Failure<E> {
    /// The thread that failed (the threads' count for the closure beside
    /// them).
    pub thread: usize,
    /// The position of the unit that failed (of `init`: the thread's first).
    pub unit: u64,
    /// What failed.
    pub error: E,
}

/// What a run did.
pub struct Done<S, R = ()> {
    /// Each thread's state at its end, in thread order.
    pub states: Vec<S>,
    /// What [`Sink::Own`] recorded, every thread merged (empty with the
    /// other sinks).
    pub stats: ByKind,
    /// Seconds from the threads' start to the last one's end.
    pub seconds: f64,
    /// True if Ctrl-C stopped a thread before its share was done.
    pub stopped: bool,
    /// What the closure beside the workers returned.
    pub beside: R,
}

/// The closure run beside the workers ([`Plan::run_beside`]): it runs until
/// [`Beside::running`] turns false, and records with its own worker (slot
/// `threads`, after the workers').
pub struct Beside<'a, 'r> {
    /// Its recorder: thread index `threads`.
    pub worker: Worker<'a>,
    done: &'r AtomicBool,
    failed: &'r AtomicBool,
}

impl Beside<'_, '_> {
    /// True while the workers run, none failed and no stop was asked for.
    pub fn running(&self) -> bool {
        !(self.done.load(Ordering::Relaxed) || self.failed.load(Ordering::Relaxed) || interrupted())
    }
}

/// How a run's threads work (see the module docs).
#[derive(Clone, Copy)]
pub struct Plan<'a> {
    /// Worker threads (at least one runs).
    pub threads: usize,
    /// Units of the measured phase.
    pub units: Units,
    /// Where latencies go.
    pub sink: Sink<'a>,
    /// The bar that moves by each unit done, if any.
    pub progress: Option<&'a ProgressBar>,
}

impl<'a> Plan<'a> {
    /// Runs the plan's units (the measured phase): `init` builds each
    /// thread's state in the thread, `unit` does one unit of work. Returns
    /// the first failure, else what the threads did.
    pub fn run<S: Send, E: Send + From<Panicked>>(
        &self,
        init: impl Fn(&mut Worker<'a>) -> Result<S, E> + Sync,
        unit: impl Fn(&mut S, &mut Worker<'a>) -> Result<Step, E> + Sync,
    ) -> Result<Done<S>, Failure<E>> {
        self.run_phase(Phase::Measured, self.units, &init, &unit, |_| ())
    }

    /// [`Plan::run`] with `beside` on a thread of its own, started with the
    /// workers and joined after them (see [`Beside`]); its result is
    /// [`Done::beside`]. The workers' time leaves out the wait for it.
    pub fn run_beside<S: Send, E: Send + From<Panicked>, R: Send>(
        &self,
        init: impl Fn(&mut Worker<'a>) -> Result<S, E> + Sync,
        unit: impl Fn(&mut S, &mut Worker<'a>) -> Result<Step, E> + Sync,
        beside: impl FnOnce(&mut Beside<'a, '_>) -> R + Send,
    ) -> Result<Done<S, R>, Failure<E>> {
        self.run_phase(Phase::Measured, self.units, &init, &unit, beside)
    }

    /// A warm-up of `warmup` units, then `between()` (a snapshot of the
    /// counters the measured phase is compared with), then the plan's own
    /// units, measured: both phases through the same `init` and `unit`
    /// (which see the phase in [`Worker::phase`]).
    pub fn warm_then_measure<S: Send, E: Send + From<Panicked>, B>(
        &self,
        warmup: Units,
        init: impl Fn(&mut Worker<'a>) -> Result<S, E> + Sync,
        unit: impl Fn(&mut S, &mut Worker<'a>) -> Result<Step, E> + Sync,
        between: impl FnOnce() -> B,
    ) -> Result<(B, Done<S>), Failure<E>> {
        self.run_phase(Phase::Warmup, warmup, &init, &unit, |_| ())?;
        let b = between();
        let done = self.run_phase(Phase::Measured, self.units, &init, &unit, |_| ())?;
        Ok((b, done))
    }

    fn run_phase<S: Send, E: Send + From<Panicked>, R: Send>(
        &self,
        phase: Phase,
        units: Units,
        init: &(impl Fn(&mut Worker<'a>) -> Result<S, E> + Sync),
        unit: &(impl Fn(&mut S, &mut Worker<'a>) -> Result<Step, E> + Sync),
        beside: impl FnOnce(&mut Beside<'a, '_>) -> R + Send,
    ) -> Result<Done<S, R>, Failure<E>> {
        let threads = self.threads.max(1);
        let (sink, progress) = (self.sink, self.progress);
        let failed = AtomicBool::new(false);
        let done = AtomicBool::new(false);
        let first: Mutex<Option<Failure<E>>> = Mutex::new(None);
        let fail = |f: Failure<E>| {
            failed.store(true, Ordering::Relaxed);
            let mut first = first.lock().unwrap_or_else(|p| p.into_inner());
            first.get_or_insert(f);
        };
        let deadline = match units {
            Units::Until(at) => Some(at),
            _ => None,
        };
        let start = Instant::now();
        type Ended<S> = (S, ByKind, bool);
        let (ended, seconds, beside_out) = std::thread::scope(|s| {
            let (done, failed) = (&done, &failed);
            let beside_handle = s.spawn(move || {
                let mut b = Beside {
                    worker: Worker::new(threads, phase, 0..0, sink, progress),
                    done,
                    failed,
                };
                let r = beside(&mut b);
                b.worker.flush();
                (r, b.worker.own)
            });
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let fail = &fail;
                    s.spawn(move || -> Option<Ended<S>> {
                        let mut w =
                            Worker::new(t, phase, units.positions(threads, t), sink, progress);
                        let mut state = match init(&mut w) {
                            Ok(state) => state,
                            Err(error) => {
                                fail(Failure {
                                    thread: t,
                                    unit: w.pos,
                                    error,
                                });
                                return None;
                            }
                        };
                        let mut stopped = false;
                        while w.pos < w.end
                            && !failed.load(Ordering::Relaxed)
                            && deadline.is_none_or(|at| Instant::now() < at)
                        {
                            if interrupted() {
                                stopped = true;
                                break;
                            }
                            let at = w.pos;
                            match unit(&mut state, &mut w) {
                                Ok(Step::Did(n)) if n > 0 => {
                                    w.pos = w.pos.saturating_add(n);
                                    w.tick(n);
                                }
                                Ok(_) => break,
                                Err(error) => {
                                    fail(Failure {
                                        thread: t,
                                        unit: at,
                                        error,
                                    });
                                    return None;
                                }
                            }
                        }
                        w.flush();
                        Some((state, w.own, stopped))
                    })
                })
                .collect();
            let ended: Vec<Option<Ended<S>>> = handles
                .into_iter()
                .enumerate()
                .map(|(t, h)| {
                    h.join().unwrap_or_else(|_| {
                        fail(Failure {
                            thread: t,
                            unit: 0,
                            error: E::from(Panicked { thread: t }),
                        });
                        None
                    })
                })
                .collect();
            let seconds = start.elapsed().as_secs_f64();
            done.store(true, Ordering::Relaxed);
            let beside_out = beside_handle
                .join()
                .map_err(|_| Panicked { thread: threads });
            (ended, seconds, beside_out)
        });
        if let Some(f) = first.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(f);
        }
        let (beside, beside_stats) = beside_out.map_err(|p| Failure {
            thread: threads,
            unit: 0,
            error: E::from(p),
        })?;
        let mut stats = beside_stats;
        let (mut states, mut stopped) = (Vec::with_capacity(threads), false);
        // Every thread ended without a failure, so every thread has a state.
        for (state, own, thread_stopped) in ended.into_iter().flatten() {
            for (kind, s) in &own {
                stats.entry(kind).or_default().merge(s);
            }
            states.push(state);
            stopped |= thread_stopped;
        }
        Ok(Done {
            states,
            stats,
            seconds,
            stopped,
            beside,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    fn plan(threads: usize, units: Units) -> Plan<'static> {
        Plan {
            threads,
            units,
            sink: Sink::Own,
            progress: None,
        }
    }

    #[test]
    fn shares_split_as_the_protocol_does() {
        for (n, threads) in [(0usize, 1usize), (7, 3), (10, 4), (3, 5), (100, 1)] {
            let mut next = 0;
            for t in 0..threads {
                let s = share(n as u64, threads, t);
                let p = shale_workload::protocol::thread_slice(n, threads, t);
                assert_eq!((s.start as usize, s.end as usize), (p.start, p.end));
                assert_eq!(s.start, next);
                next = s.end;
            }
            assert_eq!(next, n as u64);
        }
        assert_eq!(share(10, 2, 5), 10..10);
    }

    #[test]
    fn every_position_of_a_split_is_done_once_with_its_latency() {
        let seen = Mutex::new(Vec::new());
        let done = plan(3, Units::Split(1000))
            .run(
                |w| -> Result<u64, String> { Ok(w.thread as u64) },
                |count, w| {
                    let n = w.left().min(7);
                    seen.lock().expect("lock").extend(w.pos..w.pos + n);
                    *count += n;
                    w.record("get", 1000, n);
                    Ok(Step::Did(n))
                },
            )
            .expect("ran");
        let mut seen = seen.into_inner().expect("lock");
        seen.sort_unstable();
        assert_eq!(seen, (0..1000).collect::<Vec<u64>>());
        // Each state started at its thread's index and counted its share.
        assert_eq!(done.states, vec![334, 333 + 1, 333 + 2]);
        assert_eq!(done.stats["get"].count, 1000);
        assert!(!done.stopped);
    }

    #[test]
    fn the_first_failure_stops_every_thread() {
        let calls = AtomicU64::new(0);
        let r = plan(4, Units::Each(1_000_000)).run(
            |_| Ok(()),
            |(), w| {
                calls.fetch_add(1, Ordering::Relaxed);
                if w.thread == 2 && w.pos == 100 {
                    return Err("disk full".to_string());
                }
                Ok(Step::Did(1))
            },
        );
        let f = r.err().expect("failed");
        assert_eq!(
            f,
            Failure {
                thread: 2,
                unit: 100,
                error: "disk full".to_string()
            }
        );
        assert!(calls.into_inner() < 4_000_000, "the other threads stopped");
        let r = plan(2, Units::Each(5)).run(
            |w| {
                if w.thread == 1 {
                    Err("no file".to_string())
                } else {
                    Ok(())
                }
            },
            |(), _| Ok(Step::Did(1)),
        );
        assert!(matches!(
            r,
            Err(Failure {
                thread: 1,
                unit: 0,
                ..
            })
        ));
    }

    #[test]
    fn a_panicking_thread_is_a_failure() {
        let r = plan(2, Units::Each(3)).run(
            |_| Ok(()),
            |(), w| -> Result<Step, String> {
                if w.thread == 1 {
                    panic!("a bug");
                }
                Ok(Step::Did(1))
            },
        );
        let f = r.err().expect("failed");
        assert_eq!((f.thread, f.error.as_str()), (1, "bench thread 1 panicked"));
    }

    #[test]
    fn warm_up_then_measure_runs_both_phases_through_the_same_unit() {
        let phases = Mutex::new(Vec::new());
        let (between, done) = plan(2, Units::Split(10))
            .warm_then_measure(
                Units::Split(4),
                |w| -> Result<Phase, String> { Ok(w.phase) },
                |phase, w| {
                    phases.lock().expect("lock").push(*phase);
                    w.record("get", 5, 1);
                    Ok(Step::Did(1))
                },
                || "snapshot",
            )
            .expect("ran");
        assert_eq!(between, "snapshot");
        let phases = phases.into_inner().expect("lock");
        assert_eq!(phases.iter().filter(|p| **p == Phase::Warmup).count(), 4);
        assert_eq!(phases.iter().filter(|p| **p == Phase::Measured).count(), 10);
        assert_eq!(done.stats["get"].count, 10, "the measured phase only");
    }

    #[test]
    fn a_deadline_ends_the_units_and_the_closure_beside_runs_until_then() {
        let until = Instant::now() + std::time::Duration::from_millis(30);
        let done = plan(2, Units::Until(until))
            .run_beside(
                |_| -> Result<u64, String> { Ok(0) },
                |n, _| {
                    *n += 1;
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    Ok(Step::Did(1))
                },
                |b| {
                    let mut rounds = 0u64;
                    while b.running() {
                        b.worker.record("write", 10, 1);
                        rounds += 1;
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    rounds
                },
            )
            .expect("ran");
        assert!(Instant::now() >= until);
        assert!(done.states.iter().all(|&n| n > 0));
        assert!(done.beside > 0);
        assert_eq!(done.stats["write"].count, done.beside);
    }

    #[test]
    fn a_unit_may_end_its_thread_early() {
        let done = plan(1, Units::Each(100))
            .run(
                |_| -> Result<u64, String> { Ok(0) },
                |n, _| {
                    *n += 1;
                    Ok(if *n == 5 { Step::End } else { Step::Did(1) })
                },
            )
            .expect("ran");
        assert_eq!(done.states, vec![5]);
    }
}
