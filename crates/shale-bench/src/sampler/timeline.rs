//! The engine's flushes, compactions and write stalls as spans of time, for
//! the timeline under a bench's throughput plot.

use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::Serialize;
use shale::{Event, EventListener};

/// What a span shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    /// A memtable flush.
    Flush,
    /// A compaction (the label names its levels).
    Compaction,
    /// A write stall (the label names its condition and cause).
    Stall,
}

/// One flush, compaction or stall, in seconds since the timeline started.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Span {
    /// What it was.
    pub kind: SpanKind,
    /// `L0->L5`, `delayed: L0 tables`, ...
    pub label: String,
    /// Start, seconds.
    pub start: f64,
    /// End, seconds.
    pub end: f64,
    /// Bytes written (flushes and compactions).
    pub bytes: u64,
}

/// An event listener that records spans; register it on
/// `Options::listeners`, read it with [`Timeline::spans`].
pub struct Timeline {
    start: Instant,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    spans: Vec<Span>,
}

impl Timeline {
    /// A timeline whose time 0 is `start` (the sampler's start, so that both
    /// share an axis).
    pub fn new(start: Instant) -> Timeline {
        Timeline {
            start,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Every span so far, by end time.
    pub fn spans(&self) -> Vec<Span> {
        self.inner.lock().spans.clone()
    }

    /// A span that ended now and lasted `duration`.
    fn push(&self, kind: SpanKind, label: String, duration: Duration, bytes: u64) {
        let end = self.start.elapsed().as_secs_f64();
        let start = (end - duration.as_secs_f64()).max(0.0);
        self.inner.lock().spans.push(Span {
            kind,
            label,
            start,
            end,
            bytes,
        });
    }
}

impl EventListener for Timeline {
    fn on_event(&self, event: &Event) {
        match event {
            Event::FlushEnd {
                bytes,
                duration,
                error: None,
                ..
            } => self.push(SpanKind::Flush, "flush".into(), *duration, *bytes),
            Event::CompactionEnd {
                input_level,
                output_level,
                bytes_written,
                duration,
                error: None,
                ..
            } => self.push(
                SpanKind::Compaction,
                format!("L{input_level}->L{output_level}"),
                *duration,
                *bytes_written,
            ),
            Event::StallEnd {
                condition,
                cause,
                duration,
            } => self.push(
                SpanKind::Stall,
                format!("{condition:?}: {cause:?}").to_lowercase(),
                *duration,
                0,
            ),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_flush_and_a_compaction_of_a_real_database_become_spans() {
        let dir = tempfile::tempdir().expect("tempdir");
        let timeline = Arc::new(Timeline::new(Instant::now()));
        let opts =
            shale::Options::default().listeners(vec![timeline.clone() as Arc<dyn EventListener>]);
        let db = shale::Db::open(dir.path(), opts).expect("open");
        for i in 0..100u32 {
            db.put(&i.to_be_bytes(), b"value").expect("put");
        }
        db.flush().expect("flush");
        db.compact_all().expect("compact");
        db.close().expect("close");
        let spans = timeline.spans();
        let kinds: Vec<(SpanKind, &str)> =
            spans.iter().map(|s| (s.kind, s.label.as_str())).collect();
        assert_eq!(
            kinds,
            [(SpanKind::Flush, "flush"), (SpanKind::Compaction, "L0->L6")]
        );
        for s in &spans {
            assert!(0.0 <= s.start && s.start <= s.end, "{s:?}");
            assert!(s.bytes > 0, "{s:?}");
        }
    }
}
