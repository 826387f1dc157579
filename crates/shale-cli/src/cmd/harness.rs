//! `shale harness`: shale behind the harness protocol
//! (`docs/harness-protocol.md`), so that `bench compare` measures it in a
//! process of its own exactly as it measures the peers.

use std::io::{Read, Write};

use shale_bench::harness::serve_shale;
use shale_bench::{Error as CliError, Result as CliResult};
use shale_workload::protocol::ErrorReply;

/// Reads one request on standard input and writes the reply to `out`; a
/// failure is also written to `out` as `{"error": ...}`.
pub fn run(out: &mut dyn Write) -> CliResult {
    let mut input = String::new();
    let reply = std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| format!("reading the request on standard input: {e}"))
        .and_then(|_| serve_shale(&input));
    let text = match &reply {
        Ok(json) => json.clone(),
        Err(e) => serde_json::to_string(&ErrorReply { error: e.clone() })
            .map_err(|e| CliError::msg(format!("encoding the error reply: {e}")))?,
    };
    writeln!(out, "{text}").map_err(CliError::output)?;
    reply.map(|_| ()).map_err(CliError::msg)
}
