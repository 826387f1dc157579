//! Latencies of a running bench, by operation kind, for its final report and
//! for the time-series sampler's intervals: the one latency recorder of the
//! benches (`bench kvdb`, `bench db`, `bench ycsb`, shale's harness). Each
//! kind's latencies go into an HDR histogram of nanoseconds with three
//! significant digits, so a quantile is the value of the sample at its rank
//! within 0.1%.
//!
//! # Concurrency
//!
//! Each bench thread records into its own slot (`record(thread, ..)`), behind
//! a mutex that only the sampler contends for, once per interval. The sampler
//! calls [`LiveStats::take_interval`], which empties every slot's interval
//! histograms; the totals keep everything since [`LiveStats::new`].
//!
//! An operation may also be counted without its latency
//! ([`LiveStats::count`]): one relaxed add on the thread's own cache line,
//! for a bench that, as db_bench without `--histogram`, times only the whole
//! run. Those operations are counted under [`UNTIMED`], with an empty
//! histogram.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use hdrhistogram::Histogram;
use parking_lot::Mutex;

/// Highest latency recorded exactly, in nanoseconds (one hour); longer ones
/// are recorded as this.
const MAX_NANOS: u64 = 3_600_000_000_000;

/// The kind under which operations counted without a latency are reported.
pub const UNTIMED: &str = "untimed";

/// A latency histogram in nanoseconds, 3 significant digits.
pub fn histogram() -> Histogram<u64> {
    // 1 ns .. 1 h at 3 significant figures: valid bounds, cannot fail.
    Histogram::new_with_bounds(1, MAX_NANOS, 3).unwrap_or_else(|_| unreachable!())
}

/// Latencies of one operation kind.
#[derive(Clone)]
pub struct OpStats {
    /// Operations recorded.
    pub count: u64,
    /// Their latencies in nanoseconds.
    pub nanos: Histogram<u64>,
}

impl Default for OpStats {
    fn default() -> OpStats {
        OpStats::new()
    }
}

impl OpStats {
    /// No operation yet.
    pub fn new() -> OpStats {
        OpStats {
            count: 0,
            nanos: histogram(),
        }
    }

    /// Records `n` operations that each took `nanos`.
    pub fn record(&mut self, nanos: u64, n: u64) {
        self.count += n;
        self.nanos.saturating_record_n(nanos.clamp(1, MAX_NANOS), n);
    }

    /// Adds `other`'s operations.
    pub fn merge(&mut self, other: &OpStats) {
        self.count += other.count;
        // Same bounds on both sides: adding cannot fail.
        let _ = self.nanos.add(&other.nanos);
    }

    /// True if latencies were recorded (operations counted with
    /// [`LiveStats::count`] have none).
    pub fn timed(&self) -> bool {
        !self.nanos.is_empty()
    }

    /// Mean latency in microseconds (0 with no latency recorded).
    pub fn mean_micros(&self) -> f64 {
        if !self.timed() {
            0.0
        } else {
            self.nanos.mean() / 1000.0
        }
    }

    /// The operations recorded since `earlier`, a snapshot of the same
    /// stats (what a measured phase did after its warm-up).
    pub fn since(&self, earlier: &OpStats) -> OpStats {
        let mut nanos = self.nanos.clone();
        // `earlier` is an earlier state of the same counts: every bucket
        // holds at least as much now, so this cannot fail.
        let _ = nanos.subtract(&earlier.nanos);
        OpStats {
            count: self.count.saturating_sub(earlier.count),
            nanos,
        }
    }

    /// The latency at `quantile` (0..=1) in microseconds.
    pub fn quantile_micros(&self, quantile: f64) -> f64 {
        self.nanos.value_at_quantile(quantile) as f64 / 1000.0
    }
}

/// Operation latencies by kind (`"read"`, `"update"`, ...), sorted by kind.
pub type ByKind = BTreeMap<&'static str, OpStats>;

#[derive(Default)]
struct Slot {
    interval: ByKind,
    total: ByKind,
}

/// A counter alone on its cache line, so that threads counting side by
/// side do not share one.
#[derive(Default)]
#[repr(align(64))]
struct Padded(AtomicU64);

/// The latencies of one bench run, one slot per thread.
pub struct LiveStats {
    slots: Vec<Mutex<Slot>>,
    /// Operations counted without a latency, per slot, since creation.
    untimed: Vec<Padded>,
    /// The sum of `untimed` at the last [`LiveStats::take_interval`].
    untimed_taken: Mutex<u64>,
}

impl LiveStats {
    /// Stats for `threads` recording threads (at least one slot).
    pub fn new(threads: usize) -> LiveStats {
        LiveStats {
            slots: (0..threads.max(1))
                .map(|_| Mutex::new(Slot::default()))
                .collect(),
            untimed: (0..threads.max(1)).map(|_| Padded::default()).collect(),
            untimed_taken: Mutex::new(0),
        }
    }

    /// Counts one operation of thread `thread` without its latency (see
    /// the module docs).
    #[inline]
    pub fn count(&self, thread: usize) {
        self.untimed[thread % self.untimed.len()]
            .0
            .fetch_add(1, Ordering::Relaxed);
    }

    fn untimed_total(&self) -> u64 {
        self.untimed
            .iter()
            .map(|c| c.0.load(Ordering::Relaxed))
            .sum()
    }

    /// Adds `n` operations without latencies to `into`, under [`UNTIMED`].
    fn add_untimed(into: &mut ByKind, n: u64) {
        if n > 0 {
            into.entry(UNTIMED).or_default().count += n;
        }
    }

    /// Records one operation of `kind` that took `nanos`, from thread
    /// `thread` (taken modulo the number of slots).
    pub fn record(&self, thread: usize, kind: &'static str, nanos: u64) {
        self.record_n(thread, kind, nanos, 1);
    }

    /// Records `n` operations of `kind` that each took `nanos` (the keys of
    /// one batched call, which all complete when it returns).
    pub fn record_n(&self, thread: usize, kind: &'static str, nanos: u64, n: u64) {
        let mut slot = self.slots[thread % self.slots.len()].lock();
        slot.interval.entry(kind).or_default().record(nanos, n);
        slot.total.entry(kind).or_default().record(nanos, n);
    }

    /// The operations recorded since the previous call (or since creation),
    /// and starts a new interval.
    pub fn take_interval(&self) -> ByKind {
        let mut merged = ByKind::new();
        for slot in &self.slots {
            let taken = std::mem::take(&mut slot.lock().interval);
            merge_into(&mut merged, &taken);
        }
        let now = self.untimed_total();
        let mut taken = self.untimed_taken.lock();
        Self::add_untimed(&mut merged, now.saturating_sub(*taken));
        *taken = now;
        merged
    }

    /// Every operation of `kind` recorded since creation (empty stats if
    /// none).
    pub fn total(&self, kind: &str) -> OpStats {
        let mut merged = OpStats::new();
        for slot in &self.slots {
            if let Some(s) = slot.lock().total.get(kind) {
                merged.merge(s);
            }
        }
        merged
    }

    /// Every operation recorded since creation.
    pub fn totals(&self) -> ByKind {
        let mut merged = ByKind::new();
        for slot in &self.slots {
            merge_into(&mut merged, &slot.lock().total);
        }
        Self::add_untimed(&mut merged, self.untimed_total());
        merged
    }
}

/// Where a sampler takes each interval's operations from.
pub trait OpsSource: Send + Sync {
    /// The operations recorded since the previous call, and a new interval;
    /// `None` while none can be counted (a peer engine runs them).
    fn take_interval(&self) -> Option<ByKind>;
}

impl OpsSource for LiveStats {
    fn take_interval(&self) -> Option<ByKind> {
        Some(LiveStats::take_interval(self))
    }
}

/// The [`LiveStats`] of whichever benchmark runs now, for a sampler that
/// spans several benchmarks of one command (each with stats of its own).
/// Empty (`None` intervals) until [`LiveSlot::set`] and after
/// [`LiveSlot::clear`].
#[derive(Default)]
pub struct LiveSlot(Mutex<Option<Arc<LiveStats>>>);

impl LiveSlot {
    /// From now on, intervals come from `live` (what the previous stats
    /// recorded since the last interval is left out).
    pub fn set(&self, live: Arc<LiveStats>) {
        *self.0.lock() = Some(live);
    }

    /// From now on, no operations are counted (another process runs them).
    pub fn clear(&self) {
        *self.0.lock() = None;
    }
}

impl OpsSource for LiveSlot {
    fn take_interval(&self) -> Option<ByKind> {
        self.0.lock().as_ref().map(|live| live.take_interval())
    }
}

fn merge_into(into: &mut ByKind, from: &ByKind) {
    for (kind, stats) in from {
        into.entry(kind).or_default().merge(stats);
    }
}

/// All kinds of `by_kind` merged into one.
pub fn all_kinds(by_kind: &ByKind) -> OpStats {
    let mut all = OpStats::new();
    for stats in by_kind.values() {
        all.merge(stats);
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_is_the_totals_since_its_start() {
        let live = LiveStats::new(2);
        // A warm-up of slow Gets, then a measured phase of fast ones.
        for t in 0..2 {
            for _ in 0..100 {
                live.record(t, "get", 1_000_000);
            }
        }
        let before = live.total("get");
        assert_eq!(before.count, 200);
        for ns in 1..=1000u64 {
            live.record((ns % 2) as usize, "get", ns * 1000);
        }
        let phase = live.total("get").since(&before);
        assert_eq!(phase.count, 1000);
        assert_eq!(phase.nanos.len(), 1000);
        // Quantiles of the phase alone, within the histogram's 0.1%.
        for (q, exact) in [(0.5, 500.0), (0.99, 990.0), (0.999, 999.0)] {
            let got = phase.quantile_micros(q);
            assert!(
                (got - exact).abs() <= exact * 0.001,
                "{q}: {got} vs {exact}"
            );
        }
        assert_eq!(live.total("put").count, 0);
        assert!(!live.total("put").timed());
    }

    #[test]
    fn intervals_empty_and_totals_keep_everything() {
        let live = LiveStats::new(2);
        live.record(0, "read", 1_000);
        live.record(1, "read", 3_000);
        live.record(1, "update", 10_000);
        let first = live.take_interval();
        assert_eq!(first["read"].count, 2);
        assert_eq!(first["update"].count, 1);
        assert!((first["read"].mean_micros() - 2.0).abs() < 0.01);
        live.record(0, "read", 5_000);
        let second = live.take_interval();
        assert_eq!(second["read"].count, 1);
        assert!(!second.contains_key("update"));
        let totals = live.totals();
        assert_eq!(totals["read"].count, 3);
        assert_eq!(all_kinds(&totals).count, 4);
        assert!((totals["update"].quantile_micros(0.99) - 10.0).abs() < 0.02);
    }

    #[test]
    fn untimed_operations_are_counted_in_intervals_and_totals() {
        let live = LiveStats::new(2);
        live.count(0);
        live.count(1);
        live.count(3);
        live.record(0, "read", 2_000);
        let first = live.take_interval();
        assert_eq!((first[UNTIMED].count, first["read"].count), (3, 1));
        assert!(!first[UNTIMED].timed() && first["read"].timed());
        assert_eq!(first[UNTIMED].mean_micros(), 0.0);
        live.count(1);
        let second = live.take_interval();
        assert_eq!(second[UNTIMED].count, 1);
        assert!(!second.contains_key("read"));
        assert!(!live.take_interval().contains_key(UNTIMED));
        let totals = all_kinds(&live.totals());
        assert_eq!(totals.count, 5);
        assert!(
            totals.timed() && (totals.mean_micros() - 2.0).abs() < 0.01,
            "the timed operation's latency, not diluted by the untimed"
        );
    }

    #[test]
    fn latencies_beyond_the_bounds_are_clamped_not_lost() {
        let live = LiveStats::new(1);
        live.record(0, "read", 0);
        live.record(0, "read", u64::MAX);
        assert_eq!(live.totals()["read"].count, 2);
    }
}
