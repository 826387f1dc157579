//! The server side of the harness protocol ([`shale_workload::protocol`]) for any
//! engine behind the in-process adapter ([`EngineOpener`]): `shale harness`
//! is this over shale. The Pebble, RocksDB and LevelDB harnesses implement
//! the same operations in their own languages.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::engine::{EngineOpener, KindCounters, KvEngine, ShaleOpener};
use crate::kvdb::{gets, Keys, Phases, Reads};
use crate::runner::{Plan, Sink};
use shale_workload::protocol::{
    read_indices, BlockCounts, DatasetSpec, DbShape, InfoReply, InspectReply, KindCounts, Latency,
    LoadReply, LoadRequest, Op, OpenRequest, ReadReply, ReadRequest, Request, PROTOCOL_VERSION,
};
use shale_workload::{Dataset, KeyGen, KeyScheme};

/// An engine served over the protocol.
pub struct Served<'a> {
    /// What `info` replies.
    pub info: InfoReply,
    /// Opens the engine's databases; `direct_io` says whether table reads
    /// bypass the page cache (ignored by engines that cannot).
    pub open: &'a dyn Fn(bool) -> Box<dyn EngineOpener>,
}

/// Handles one request and returns the JSON reply (or the one-line error).
pub fn handle(served: &Served<'_>, request: &Request) -> Result<String, String> {
    if request.protocol != PROTOCOL_VERSION {
        return Err(format!(
            "protocol version {} is not supported (this harness speaks {PROTOCOL_VERSION})",
            request.protocol
        ));
    }
    match &request.op {
        Op::Info => to_json(&served.info),
        Op::Load(r) => to_json(&load(served, r)?),
        Op::Inspect(r) => to_json(&inspect(served, r)?),
        Op::Read(r) => to_json(&read(served, r)?),
        Op::DbBench(_) | Op::Ycsb(_) => Err(format!(
            "op {} is not served by the {} harness (it serves {}): `shale bench {}` runs \
             shale in process",
            request.op.name(),
            served.info.engine,
            served.info.ops.join(", "),
            if request.op.name() == "ycsb" {
                "ycsb"
            } else {
                "db"
            },
        )),
    }
}

/// The configurations shale's own harness knows (the first is the default).
pub const SHALE_CONFIGS: [&str; 1] = ["default"];

/// shale behind the protocol (`shale harness`): parses one request and
/// returns the JSON reply, or the one-line error to reply with.
pub fn serve_shale(input: &str) -> Result<String, String> {
    let request: Request =
        serde_json::from_str(input).map_err(|e| format!("malformed request: {e}"))?;
    let open = |direct_io| -> Box<dyn EngineOpener> {
        Box::new(ShaleOpener {
            direct_io,
            ..ShaleOpener::default()
        })
    };
    let served = Served {
        info: InfoReply {
            engine: "shale".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            configs: SHALE_CONFIGS.iter().map(|c| c.to_string()).collect(),
            direct_io: true,
            ops: InfoReply::required_ops(),
        },
        open: &open,
    };
    handle(&served, &request)
}

fn to_json(reply: &impl Serialize) -> Result<String, String> {
    serde_json::to_string(reply).map_err(|e| format!("encoding the reply: {e}"))
}

/// Checks the configuration and dataset of a request.
fn check(served: &Served<'_>, r: &OpenRequest) -> Result<(KeyGen, Dataset), String> {
    if !served.info.configs.contains(&r.config) {
        return Err(format!(
            "unknown configuration {:?} of {} (known: {})",
            r.config,
            served.info.engine,
            served.info.configs.join(", ")
        ));
    }
    let scheme: KeyScheme = r.dataset.scheme.parse().map_err(|e| format!("{e}"))?;
    if r.dataset.keys == 0 {
        return Err("the dataset has no keys".into());
    }
    let dataset = Dataset {
        value_size: r.dataset.value_size,
        seed: r.dataset.seed,
    };
    Ok((KeyGen::new(scheme), dataset))
}

fn engine_name(served: &Served<'_>, r: &OpenRequest) -> String {
    format!(
        "{} {} ({})",
        served.info.engine, served.info.version, r.config
    )
}

/// Cache used while loading and inspecting.
const SETUP_CACHE: u64 = 8 << 20;

fn load(served: &Served<'_>, r: &LoadRequest) -> Result<LoadReply, String> {
    let t = &r.target;
    let (keygen, dataset) = check(served, t)?;
    let has_files = std::fs::read_dir(&t.dir).is_ok_and(|mut d| d.next().is_some());
    if has_files {
        return Err(format!(
            "{} is not empty: load creates a new database",
            t.dir.display()
        ));
    }
    let batch = r.batch.max(1);
    let threads = r.threads.max(1);
    let start = Instant::now();
    let e = (served.open)(false).open(&t.dir, SETUP_CACHE, true)?;
    let loaded = crate::load::load(
        0..t.dataset.keys,
        batch,
        threads,
        &indicatif::ProgressBar::hidden(),
        &|| false,
        |i, k, v| {
            keygen.key(i, k);
            v.resize(dataset.value_size, 0);
            dataset.fill_value(i, v);
        },
        |pairs| e.load_batch(pairs),
    )?;
    e.settle()?;
    let w = e.write_counters();
    let shape = shape(&*e)?;
    e.close()?;
    // Counted here, not by the engine (shale counts its batches' encoding),
    // so that every engine divides by the same figure.
    let user_bytes = loaded.user_bytes;
    Ok(LoadReply {
        engine: engine_name(served, t),
        seconds: start.elapsed().as_secs_f64(),
        user_bytes,
        table_bytes_written: w.table_bytes,
        wal_bytes: w.wal_bytes,
        write_amp: w.table_bytes as f64 / user_bytes.max(1) as f64,
        shape,
    })
}

fn shape(e: &dyn KvEngine) -> Result<DbShape, String> {
    Ok(DbShape {
        composition: e.composition()?,
        levels: e.levels()?,
    })
}

/// Checks that the open database holds `spec`: the first and last keys have
/// their values and the key after the last is absent.
fn check_dataset(
    e: &dyn KvEngine,
    keygen: KeyGen,
    dataset: &Dataset,
    spec: &DatasetSpec,
    dir: &Path,
) -> Result<(), String> {
    let last = spec.keys - 1;
    let holds = e.get(&keygen.key_vec(0))? == Some(dataset.value(0))
        && e.get(&keygen.key_vec(last))? == Some(dataset.value(last))
        && e.get(&keygen.key_vec(spec.keys))?.is_none();
    if holds {
        Ok(())
    } else {
        Err(format!(
            "{} does not hold the dataset of {} {} keys with {}-byte values of seed {}",
            dir.display(),
            spec.keys,
            spec.scheme,
            spec.value_size,
            spec.seed
        ))
    }
}

fn inspect(served: &Served<'_>, r: &OpenRequest) -> Result<InspectReply, String> {
    let (keygen, dataset) = check(served, r)?;
    let e = (served.open)(false).open(&r.dir, SETUP_CACHE, false)?;
    check_dataset(&*e, keygen, &dataset, &r.dataset, &r.dir)?;
    let shape = shape(&*e)?;
    e.close()?;
    Ok(InspectReply {
        engine: engine_name(served, r),
        shape,
    })
}

fn read(served: &Served<'_>, r: &ReadRequest) -> Result<ReadReply, String> {
    let t = &r.target;
    let (keygen, dataset) = check(served, t)?;
    let load = |p: &Path| read_indices(p).map_err(|e| format!("{}: {e}", p.display()));
    let (warmup, reads) = (load(&r.warmup_file)?, load(&r.reads_file)?);
    let threads = r.threads.max(1);
    let direct_io = r.direct_io && served.info.direct_io;
    let e = (served.open)(direct_io).open(&t.dir, r.cache_bytes, false)?;
    if let Some(file) = &r.trace {
        e.start_block_trace(file, 1.0)?;
    }
    let phases = Phases {
        warmup: Keys::Listed(&warmup),
        measured: Keys::Listed(&reads),
    };
    let plan = Plan {
        threads,
        units: phases.measured.units(),
        sink: Sink::Own,
        progress: None,
    };
    let reads = Reads {
        e: &*e,
        keygen,
        dataset: &dataset,
        keys: t.dataset.keys,
    };
    // The warm-up is not measured: the counters are taken after it.
    let between = || {
        e.mark_block_trace("measure");
        (e.counters(), e.table_cache(), proc_io_read_bytes())
    };
    let ((before, table_cache_before, io_before), done) =
        gets(reads, &plan, phases, between).map_err(|f| f.error)?;
    let seconds = done.seconds;
    let lat = done.stats.get("get").cloned().unwrap_or_default();
    let io_after = proc_io_read_bytes();
    let d = e.counters().since(&before);
    let table_cache = match (table_cache_before, e.table_cache()) {
        (Some(b), Some(a)) => Some(shale_workload::protocol::HitMiss {
            hits: a.hits.saturating_sub(b.hits),
            misses: a.misses.saturating_sub(b.misses),
        }),
        _ => None,
    };
    let rss_bytes = proc_rss_bytes();
    if r.trace.is_some() {
        e.end_block_trace()?;
    }
    e.close()?;
    let kind = |k: KindCounters| KindCounts {
        cache_hits: Some(k.cache_hits),
        cache_misses: Some(k.cache_misses),
        physical_reads: Some(k.physical_reads),
    };
    Ok(ReadReply {
        engine: engine_name(served, t),
        cache_bytes: r.cache_bytes,
        direct_io,
        gets: d.gets,
        found: d.found,
        seconds,
        latency: Latency {
            p50_us: lat.quantile_micros(0.5),
            p99_us: lat.quantile_micros(0.99),
            p999_us: lat.quantile_micros(0.999),
        },
        blocks: BlockCounts {
            filter: kind(d.filter),
            top_index: kind(d.top_index),
            index: kind(d.index),
            data: kind(d.data),
        },
        table_open_reads: Some(d.table_open_reads),
        table_cache,
        read_requests: d.physical_reads(),
        read_bytes: d.physical_bytes(),
        device_read_bytes: match (io_before, io_after) {
            (Some(b), Some(a)) => Some(a.saturating_sub(b)),
            _ => None,
        },
        rss_bytes,
    })
}

/// `read_bytes` of `/proc/self/io`: bytes the kernel read from storage for
/// this process.
pub fn proc_io_read_bytes() -> Option<u64> {
    proc_field("/proc/self/io", "read_bytes:")
}

/// `VmRSS` of `/proc/self/status`, in bytes.
pub fn proc_rss_bytes() -> Option<u64> {
    proc_field("/proc/self/status", "VmRSS:").map(|kib| kib * 1024)
}

fn proc_field(path: &str, name: &str) -> Option<u64> {
    let s = std::fs::read_to_string(path).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale_workload::protocol::write_indices;

    fn served_shale(f: &dyn Fn(bool) -> Box<dyn EngineOpener>) -> Served<'_> {
        Served {
            info: InfoReply {
                engine: "shale".into(),
                version: "test".into(),
                configs: vec!["default".into()],
                direct_io: false,
                ops: InfoReply::required_ops(),
            },
            open: f,
        }
    }

    fn target(dir: &Path, seed: u64) -> OpenRequest {
        OpenRequest {
            dir: dir.to_path_buf(),
            dataset: DatasetSpec {
                keys: 3000,
                scheme: "hash".into(),
                value_size: 50,
                seed,
            },
            config: "default".into(),
        }
    }

    fn request(op: Op) -> Request {
        Request {
            protocol: PROTOCOL_VERSION,
            op,
        }
    }

    #[test]
    fn load_inspect_and_read_over_the_protocol() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("db");
        let open = |direct_io| -> Box<dyn EngineOpener> {
            Box::new(ShaleOpener {
                direct_io,
                ..ShaleOpener::default()
            })
        };
        let served = served_shale(&open);
        let load = request(Op::Load(LoadRequest {
            target: target(&dir, 0),
            threads: 2,
            batch: 500,
        }));
        let reply: LoadReply =
            serde_json::from_str(&handle(&served, &load).expect("load")).expect("reply");
        assert_eq!(reply.user_bytes, 3000 * (32 + 50));
        assert!(reply.table_bytes_written > 0 && reply.write_amp > 0.0);
        assert_eq!(reply.shape.composition.entries, 3000);
        assert_eq!(reply.shape.levels.len(), 7);
        // A second load into the same directory is refused.
        assert!(handle(&served, &load).is_err_and(|e| e.contains("not empty")));

        let inspect = request(Op::Inspect(target(&dir, 0)));
        let reply: InspectReply =
            serde_json::from_str(&handle(&served, &inspect).expect("inspect")).expect("reply");
        assert_eq!(reply.shape.composition.entries, 3000);
        let other = request(Op::Inspect(target(&dir, 1)));
        assert!(handle(&served, &other).is_err_and(|e| e.contains("does not hold")));

        let warmup = tmp.path().join("warmup.bin");
        let reads = tmp.path().join("reads.bin");
        write_indices(&warmup, &[1, 2]).expect("write");
        write_indices(&reads, &[0, 5, 2999, 3000, 10_000, 7, 8]).expect("write");
        let read = request(Op::Read(ReadRequest {
            target: target(&dir, 0),
            cache_bytes: 1 << 20,
            threads: 2,
            warmup_file: warmup,
            reads_file: reads,
            direct_io: true,
            trace: Some(tmp.path().join("read.trc")),
        }));
        let reply: ReadReply =
            serde_json::from_str(&handle(&served, &read).expect("read")).expect("reply");
        assert_eq!((reply.gets, reply.found), (7, 5));
        // The trace holds the warm-up's Gets, the mark, the measured ones.
        let trace = crate::simulate::load_trace(&tmp.path().join("read.trc")).expect("trace");
        let gets = |from| {
            trace.records[from..]
                .iter()
                .filter(|r| matches!(r, shale::trace::TraceRecord::Get { .. }))
                .count()
        };
        let mark = trace
            .records
            .iter()
            .position(|r| matches!(r, shale::trace::TraceRecord::Mark(m) if m == "measure"))
            .expect("mark");
        assert_eq!((gets(0), gets(mark)), (9, 7));
        assert!(!reply.direct_io, "the served engine said it cannot");
        assert!(reply.blocks.data.physical_reads.is_some_and(|n| n > 0));
        assert!(reply.latency.p50_us > 0.0 && reply.latency.p999_us >= reply.latency.p50_us);

        let bad = Request {
            protocol: 2,
            op: Op::Info,
        };
        assert!(handle(&served, &bad).is_err_and(|e| e.contains("protocol version 2")));
        let mut unknown = target(&dir, 0);
        unknown.config = "geth".into();
        assert!(handle(&served, &request(Op::Inspect(unknown)))
            .is_err_and(|e| e.contains("unknown configuration")));
        let dbbench = request(Op::DbBench(shale_workload::protocol::DbBenchRequest {
            dir,
            config: "default".into(),
            fresh: true,
            settle: false,
            benchmarks: Vec::new(),
            num: 10,
            reads: 10,
            key_size: 16,
            value_size: 100,
            threads: 1,
            cache_bytes: 1000,
            open_files: -1,
            bloom_bits: -1,
            compression: "none".into(),
        }));
        let served_ops = "not served by the shale harness (it serves info, load, inspect, read)";
        assert!(handle(&served, &dbbench)
            .is_err_and(|e| e.starts_with("op dbbench ") && e.contains(served_ops)));
    }
}
