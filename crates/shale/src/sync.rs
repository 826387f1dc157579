//! The synchronization primitives of the two hand-written concurrency protocols
//! that are model checked: the write path's group commit
//! (`db::group_commit`) and the block cache's shard locks and budget atomics
//! (`cache`). Nothing else in the crate uses this module.
//!
//! By default these are `parking_lot`'s [`Mutex`] and [`Condvar`] and `std`'s
//! atomics, re-exported as they are: the shim costs nothing. With the `shuttle`
//! feature they are shuttle's, wrapped in the same (parking_lot-shaped) API, so
//! that the `model_check` tests run the production code under shuttle's
//! scheduler, which picks the interleaving at every lock, wait, notify and
//! atomic access and reports deadlocks.
//!
//! Shuttle's primitives work only inside a shuttle test (`shuttle::check_*`),
//! so a build with the feature is for the model tests alone: run it as
//! `cargo test -p shale --features shuttle --lib model_check`.

#[cfg(not(feature = "shuttle"))]
pub(crate) use parking_lot::{Condvar, Mutex};
#[cfg(not(feature = "shuttle"))]
pub(crate) use std::sync::atomic::AtomicU64;

#[cfg(feature = "shuttle")]
pub(crate) use model::{Condvar, Mutex};
#[cfg(feature = "shuttle")]
pub(crate) use shuttle::sync::atomic::AtomicU64;

/// Threads for the tests that drive these primitives: `std`'s by default,
/// shuttle's (scheduled by the model checker) with the feature.
#[cfg(all(test, not(feature = "shuttle")))]
pub(crate) use std::thread;

/// Threads for the tests that drive these primitives: `std`'s by default,
/// shuttle's (scheduled by the model checker) with the feature.
#[cfg(all(test, feature = "shuttle"))]
pub(crate) use shuttle::thread;

/// Iterations of each scheduler in a model test: ten thousand by default (a
/// few seconds), many more with `SHALE_LONG_TESTS=1`.
#[cfg(all(test, feature = "shuttle"))]
pub(crate) fn model_iterations() -> usize {
    let long = std::env::var_os("SHALE_LONG_TESTS").is_some_and(|v| v != "0");
    if long {
        200_000
    } else {
        10_000
    }
}

/// Runs `f` (which spawns [`thread`]s and checks what they did) under shuttle's
/// random scheduler and then under its PCT scheduler (which finds bugs that
/// need up to `depth - 1` preemptions at well-chosen points with a known
/// probability), [`model_iterations`] times each. Panics with the failing
/// schedule if `f` panics or deadlocks in any of them.
#[cfg(all(test, feature = "shuttle"))]
pub(crate) fn check_schedules(f: impl Fn() + Send + Sync + 'static, depth: usize) {
    use shuttle::scheduler::{PctScheduler, RandomScheduler};
    use shuttle::{Config, MaxSteps, Runner};
    use std::sync::Arc;

    let config = || {
        let mut c = Config::new();
        // No loop here spins: an execution this long is a livelock.
        c.max_steps = MaxSteps::FailAfter(100_000);
        // Shuttle explores interleavings with sequentially consistent atomics
        // (it warns that weaker orderings are not modelled); that is the
        // documented scope of these tests.
        c.silence_warnings = true;
        c
    };
    let f = Arc::new(f);
    let n = model_iterations();
    let g = f.clone();
    Runner::new(RandomScheduler::new(n), config()).run(move || g());
    Runner::new(PctScheduler::new(depth, n), config()).run(move || f());
}

/// Shuttle's mutex and condition variable behind parking_lot's API (no lock
/// poisoning, `Condvar::wait` on `&mut MutexGuard`).
#[cfg(feature = "shuttle")]
mod model {
    use std::ops::{Deref, DerefMut};
    use std::sync::PoisonError;

    /// A mutex scheduled by shuttle.
    pub(crate) struct Mutex<T: ?Sized>(shuttle::sync::Mutex<T>);

    /// A guard of [`Mutex`]. It holds shuttle's guard at all times except
    /// inside [`Condvar::wait`], which takes it and puts it back.
    pub(crate) struct MutexGuard<'a, T: ?Sized>(Option<shuttle::sync::MutexGuard<'a, T>>);

    /// A condition variable scheduled by shuttle.
    pub(crate) struct Condvar(shuttle::sync::Condvar);

    impl<T> Mutex<T> {
        /// A new unlocked mutex holding `value`.
        pub(crate) fn new(value: T) -> Self {
            Mutex(shuttle::sync::Mutex::new(value))
        }
    }

    impl<T: ?Sized> Mutex<T> {
        /// Locks the mutex (a panic in another holder is not an error here: the
        /// model test fails on that panic anyway).
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(Some(self.0.lock().unwrap_or_else(PoisonError::into_inner)))
        }
    }

    impl<T: ?Sized> Deref for MutexGuard<'_, T> {
        type Target = T;

        fn deref(&self) -> &T {
            match &self.0 {
                Some(guard) => guard,
                // Only `Condvar::wait` empties the option, and it refills it
                // before returning.
                None => unreachable!("mutex guard used during a wait"),
            }
        }
    }

    impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            match &mut self.0 {
                Some(guard) => guard,
                None => unreachable!("mutex guard used during a wait"),
            }
        }
    }

    impl Condvar {
        /// A new condition variable.
        pub(crate) fn new() -> Self {
            Condvar(shuttle::sync::Condvar::new())
        }

        /// Releases the guard's lock, waits for a notification and locks again.
        pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            if let Some(g) = guard.0.take() {
                guard.0 = Some(self.0.wait(g).unwrap_or_else(PoisonError::into_inner));
            }
        }

        /// Wakes every waiter.
        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}
