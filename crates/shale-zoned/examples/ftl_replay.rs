//! Replays a saved write trace (`docs/format/write-trace.md`, recorded by
//! `shale_env::TraceFs`) on the conventional-SSD model at one or more
//! over-provisioning levels and prints the write amplification of each.
//!
//! ```text
//! cargo run --release -p shale-zoned --example ftl_replay -- TRACE \
//!     [--op 0.07,0.28] [--logical-bytes N | --utilisation 0.9] \
//!     [--block-pages 256] [--separate-gc] [--no-trim]
//! ```
//!
//! Exit status: 0 on success, 1 when the trace cannot be read or replayed,
//! 2 for a usage error.

use std::process::ExitCode;

use shale_env::{decode_trace, summarize_trace};
use shale_zoned::ftl::{replay_trace, ReplayOptions, FTL_PAGE_SIZE};

const USAGE: &str = "usage: ftl_replay TRACE [--op LIST] [--logical-bytes N | --utilisation U] \
                     [--block-pages N] [--separate-gc] [--no-trim]\n\
                     options: --op (comma-separated fractions, default 0.07,0.28), \
                     --logical-bytes, --utilisation (default 0.9), --block-pages (default 256), \
                     --separate-gc, --no-trim";

struct Args {
    trace: String,
    ops: Vec<f64>,
    options: ReplayOptions,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut trace = None;
    let mut ops = vec![0.07, 0.28];
    let mut options = ReplayOptions::new(0.0);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "--op" => {
                ops = value("--op")?
                    .split(',')
                    .map(|s| {
                        s.trim()
                            .parse::<f64>()
                            .map_err(|_| format!("bad --op value {s:?}"))
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--logical-bytes" => {
                let v = value("--logical-bytes")?;
                options.logical_bytes = Some(
                    v.parse()
                        .map_err(|_| format!("bad --logical-bytes value {v:?}"))?,
                );
            }
            "--utilisation" => {
                let v = value("--utilisation")?;
                options.utilisation = v
                    .parse()
                    .map_err(|_| format!("bad --utilisation value {v:?}"))?;
            }
            "--block-pages" => {
                let v = value("--block-pages")?;
                options.pages_per_block = v
                    .parse()
                    .map_err(|_| format!("bad --block-pages value {v:?}"))?;
            }
            "--separate-gc" => options.separate_gc_frontier = true,
            "--no-trim" => options.trim = false,
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            s => {
                if trace.replace(s.to_string()).is_some() {
                    return Err("more than one trace given".into());
                }
            }
        }
    }
    let trace = trace.ok_or("no trace given")?;
    Ok(Args {
        trace,
        ops,
        options,
    })
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse(&argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("ftl_replay: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let events = match std::fs::read(&args.trace)
        .map_err(|e| e.to_string())
        .and_then(|b| decode_trace(&b).map_err(|e| e.to_string()))
    {
        Ok(e) => e,
        Err(e) => {
            eprintln!("ftl_replay: {}: {e}", args.trace);
            return ExitCode::from(1);
        }
    };
    let s = summarize_trace(&events);
    println!(
        "trace: {} events, {} files, {} bytes written, peak live {} bytes, final live {} bytes",
        events.len(),
        s.files,
        s.bytes_written,
        s.peak_live_bytes,
        s.final_live_bytes
    );
    for op in &args.ops {
        let options = ReplayOptions {
            over_provisioning: *op,
            ..args.options
        };
        match replay_trace(&events, &options) {
            Ok(r) => println!(
                "op {op}: logical {} MiB, physical {} MiB, peak utilisation {:.3}, \
                 host pages {}, gc pages {}, erases {}, trimmed {}, WAF {:.3}",
                (r.logical_pages * FTL_PAGE_SIZE) >> 20,
                (r.physical_pages * FTL_PAGE_SIZE) >> 20,
                r.peak_utilisation,
                r.stats.host_pages,
                r.stats.gc_pages,
                r.stats.erases,
                r.stats.trimmed_pages,
                r.waf()
            ),
            Err(e) => {
                eprintln!("ftl_replay: op {op}: {e}");
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}
