//! Event listeners: what the database's background work and write stalls do,
//! as it happens (flushes, compactions, stalls, background errors, tables
//! created and deleted).
//!
//! Register listeners on [`crate::Options::listeners`]. A database with
//! listeners runs one more thread, `shale-events`, that calls them.
//!
//! # Concurrency
//!
//! The database raises events where they happen, often under its state lock,
//! by sending them down a channel (never blocking on a listener); the event
//! thread calls every listener for every event, in the order they were
//! raised. So a listener never runs under a database lock, on a write path or
//! on a background thread: it may call the database (`metrics`, `get`, even
//! `put`) and take its time, at the price of events queueing up. A listener
//! that panics is caught and the next event is delivered. [`crate::Db::close`]
//! (and dropping the database) delivers every event raised before it returns.

use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::error::Error;

/// Receives a database's events. See the module documentation for the
/// thread they arrive on.
pub trait EventListener: Send + Sync {
    /// Called once for each event, in the order the database raised them.
    fn on_event(&self, event: &Event);
}

/// Why a compaction runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompactionReason {
    /// Chosen by the picker (level sizes, the L0 trigger).
    Automatic,
    /// Asked for with [`crate::Db::compact_all`] or [`crate::Db::compact_range`].
    Manual,
}

/// How hard writes are held back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StallCondition {
    /// Each write group waits its bytes over the delayed write rate
    /// ([`crate::Options::delayed_write_rate`], adapted to the debt).
    Delayed,
    /// Writes wait until background work catches up.
    Stopped,
}

/// What holds writes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StallCause {
    /// L0 holds `l0_slowdown_writes_trigger` tables (delay) or
    /// `l0_stop_writes_trigger` (stop).
    L0Tables,
    /// The compaction debt reached `soft_pending_compaction_bytes` (delay) or
    /// `hard_pending_compaction_bytes` (stop).
    PendingCompactionBytes,
    /// The memtable is full and `max_immutable_memtables` wait for flush.
    Memtables,
}

/// What wrote a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TableReason {
    /// A memtable flush (into L0).
    Flush,
    /// A compaction.
    Compaction,
}

/// One event. Flushes and compactions carry a `job` number, unique within the
/// database handle, that ties their begin, tables and end together.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Event {
    /// A flush of the oldest immutable memtable starts.
    FlushBegin {
        /// Job number.
        job: u64,
        /// Approximate bytes of the memtable.
        memtable_bytes: u64,
    },
    /// A flush ended; its table (if the memtable held anything) is in L0.
    FlushEnd {
        /// Job number.
        job: u64,
        /// Bytes of the table written (0 for an empty memtable).
        bytes: u64,
        /// From begin to end, the install in the manifest included.
        duration: Duration,
        /// Why it failed (the database is poisoned then), if it did.
        error: Option<Error>,
    },
    /// A compaction starts.
    CompactionBegin {
        /// Job number.
        job: u64,
        /// Automatic or manual.
        reason: CompactionReason,
        /// The level it reads from (the shallowest input level).
        input_level: usize,
        /// The level it writes to.
        output_level: usize,
        /// Input tables, of both levels.
        input_tables: usize,
        /// Bytes of the input tables.
        input_bytes: u64,
        /// The input is moved down without being rewritten.
        trivial_move: bool,
    },
    /// A compaction ended.
    CompactionEnd {
        /// Job number.
        job: u64,
        /// Automatic or manual.
        reason: CompactionReason,
        /// The level it read from.
        input_level: usize,
        /// The level it wrote to.
        output_level: usize,
        /// Bytes of input tables read (0 for a trivial move).
        bytes_read: u64,
        /// Bytes of tables written (0 for a trivial move).
        bytes_written: u64,
        /// Tables written (0 for a trivial move).
        output_tables: usize,
        /// Subcompactions the merge was split into, each merging a range of
        /// keys on a thread of its own (1: not split; 0 for a trivial move).
        /// Set for a failed compaction too.
        subcompactions: usize,
        /// From begin to end, the install in the manifest included.
        duration: Duration,
        /// Why it failed, if it did (a compaction given up because the
        /// database closes is not an error: `None`, nothing written).
        error: Option<Error>,
    },
    /// Writes start being held back, or are held back differently.
    StallBegin {
        /// Delayed or stopped.
        condition: StallCondition,
        /// Why.
        cause: StallCause,
    },
    /// The stall raised by the previous `StallBegin` ends: a write group went
    /// through without it, another stall replaced it, or the database closed.
    StallEnd {
        /// The condition that ended.
        condition: StallCondition,
        /// Its cause.
        cause: StallCause,
        /// How long it lasted.
        duration: Duration,
    },
    /// A flush, compaction, manifest write or file deletion failed: the
    /// database is poisoned and writes fail until it is reopened.
    BackgroundError {
        /// The failure.
        error: Error,
    },
    /// A table was written and installed in the version.
    TableCreated {
        /// The job that wrote it.
        job: u64,
        /// Its file number.
        number: u64,
        /// Its level.
        level: usize,
        /// Its size in bytes.
        bytes: u64,
        /// Flush or compaction.
        reason: TableReason,
    },
    /// An obsolete table file was deleted.
    TableDeleted {
        /// Its file number.
        number: u64,
    },
}

/// The stall writers are under, with when it began.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ActiveStall {
    condition: StallCondition,
    cause: StallCause,
    since: Instant,
}

/// A database's event channel and the thread that delivers it (absent
/// without listeners: raising costs one branch then).
pub(crate) struct Events {
    inner: Option<Delivery>,
}

struct Delivery {
    sender: Mutex<Option<Sender<Event>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Events {
    /// Starts the event thread if there are listeners.
    pub(crate) fn start(listeners: &[Arc<dyn EventListener>]) -> std::io::Result<Events> {
        if listeners.is_empty() {
            return Ok(Events { inner: None });
        }
        let (sender, receiver) = mpsc::channel();
        let listeners = listeners.to_vec();
        let thread = std::thread::Builder::new()
            .name("shale-events".into())
            .spawn(move || deliver(&listeners, &receiver))?;
        Ok(Events {
            inner: Some(Delivery {
                sender: Mutex::new(Some(sender)),
                thread: Mutex::new(Some(thread)),
            }),
        })
    }

    /// Queues `event` for the listeners. Never blocks on them; events raised
    /// after [`Events::stop`] are dropped.
    pub(crate) fn raise(&self, event: Event) {
        if let Some(d) = &self.inner {
            if let Some(sender) = &*d.sender.lock() {
                // Fails only if the thread is gone (stopped): nothing to do.
                let _ = sender.send(event);
            }
        }
    }

    /// Moves the write stall from `current` to `next`, raising the end of the
    /// old stall and the begin of the new one if they differ.
    pub(crate) fn set_stall(
        &self,
        current: &mut Option<ActiveStall>,
        next: Option<(StallCondition, StallCause)>,
    ) {
        let same = match (*current, next) {
            (Some(a), Some((condition, cause))) => a.condition == condition && a.cause == cause,
            (None, None) => true,
            _ => false,
        };
        if same {
            return;
        }
        if let Some(a) = current.take() {
            self.raise(Event::StallEnd {
                condition: a.condition,
                cause: a.cause,
                duration: a.since.elapsed(),
            });
        }
        if let Some((condition, cause)) = next {
            self.raise(Event::StallBegin { condition, cause });
            *current = Some(ActiveStall {
                condition,
                cause,
                since: Instant::now(),
            });
        }
    }

    /// Delivers every event raised so far, then stops the thread. Idempotent.
    pub(crate) fn stop(&self) {
        if let Some(d) = &self.inner {
            // Dropping the sender ends the thread's loop once it has drained
            // the channel.
            drop(d.sender.lock().take());
            if let Some(thread) = d.thread.lock().take() {
                // Listener panics are caught in the thread: a join error would
                // be a bug of this module, with nothing better to do than go on.
                let _ = thread.join();
            }
        }
    }
}

/// The event thread's loop: every event to every listener, until the sender
/// is dropped.
fn deliver(listeners: &[Arc<dyn EventListener>], receiver: &Receiver<Event>) {
    for event in receiver.iter() {
        for listener in listeners {
            // A panicking listener must not stop delivery to the others or
            // of later events.
            let _ = panic::catch_unwind(AssertUnwindSafe(|| listener.on_event(&event)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Collect(Mutex<Vec<String>>);
    impl EventListener for Collect {
        fn on_event(&self, event: &Event) {
            let name = match event {
                Event::StallBegin { .. } => "begin",
                Event::StallEnd { .. } => "end",
                Event::TableDeleted { number: 7 } => panic!("a listener bug"),
                _ => "other",
            };
            self.0.lock().push(name.to_string());
        }
    }

    #[test]
    fn stall_changes_raise_ends_before_begins_and_a_panic_is_contained() {
        let collect = Arc::new(Collect(Mutex::new(Vec::new())));
        let listener: Arc<dyn EventListener> = collect.clone();
        let events = Events::start(&[listener]).expect("thread");
        let mut stall = None;
        events.set_stall(&mut stall, None);
        events.set_stall(
            &mut stall,
            Some((StallCondition::Delayed, StallCause::L0Tables)),
        );
        events.set_stall(
            &mut stall,
            Some((StallCondition::Delayed, StallCause::L0Tables)),
        );
        events.raise(Event::TableDeleted { number: 7 });
        events.set_stall(
            &mut stall,
            Some((StallCondition::Stopped, StallCause::L0Tables)),
        );
        events.set_stall(&mut stall, None);
        events.raise(Event::TableDeleted { number: 8 });
        events.stop();
        events.raise(Event::TableDeleted { number: 9 });
        assert_eq!(*collect.0.lock(), ["begin", "end", "begin", "end", "other"]);
        assert!(stall.is_none());
    }

    #[test]
    fn without_listeners_nothing_runs() {
        let events = Events::start(&[]).expect("no thread");
        assert!(events.inner.is_none());
        let mut stall = None;
        events.set_stall(
            &mut stall,
            Some((StallCondition::Stopped, StallCause::Memtables)),
        );
        // The stall is still tracked, so that a later listener-less database
        // behaves the same; only delivery is skipped.
        assert!(stall.is_some());
        events.stop();
    }
}
