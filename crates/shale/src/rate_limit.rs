//! A token bucket that caps the bytes per second of background writes.
//!
//! Tokens accrue at `rate` bytes per second up to a burst of a tenth of a
//! second's worth. A writer takes the tokens it needs; if the bucket runs dry it
//! goes into debt and sleeps until the debt would be paid off. Writers that come
//! later inherit the debt and sleep longer, so the long-run rate of all writers
//! together is `rate`.
//!
//! # Concurrency
//!
//! Shared by every background thread; one mutex guards the bucket and nobody
//! sleeps while holding it.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// A byte-rate limiter (see the module documentation).
pub(crate) struct RateLimiter {
    rate: f64,
    burst: f64,
    bucket: Mutex<Bucket>,
}

struct Bucket {
    /// Available bytes; negative while in debt.
    tokens: f64,
    last: Instant,
}

impl RateLimiter {
    /// A limiter of `bytes_per_sec` (at least 1).
    pub(crate) fn new(bytes_per_sec: u64) -> RateLimiter {
        let rate = bytes_per_sec.max(1) as f64;
        RateLimiter {
            rate,
            burst: rate / 10.0,
            bucket: Mutex::new(Bucket {
                tokens: rate / 10.0,
                last: Instant::now(),
            }),
        }
    }

    /// Takes `bytes` tokens, sleeping as long as the rate requires.
    pub(crate) fn acquire(&self, bytes: u64) {
        let wait = {
            let mut b = self.bucket.lock();
            let now = Instant::now();
            let earned = now.duration_since(b.last).as_secs_f64() * self.rate;
            b.tokens = (b.tokens + earned).min(self.burst) - bytes as f64;
            b.last = now;
            (b.tokens < 0.0).then(|| Duration::from_secs_f64(-b.tokens / self.rate))
        };
        if let Some(d) = wait {
            std::thread::sleep(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debt_is_paid_by_sleeping() {
        // 1 MB/s: after the 100 KB burst, 200 KB more cost about 0.2 s. Only a
        // lower bound is checked (sleeps never end early); no timing upper bound.
        let limiter = RateLimiter::new(1_000_000);
        let start = Instant::now();
        limiter.acquire(100_000);
        limiter.acquire(100_000);
        limiter.acquire(100_000);
        assert!(start.elapsed() >= Duration::from_millis(190));
    }
}
