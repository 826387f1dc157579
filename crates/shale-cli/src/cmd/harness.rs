//! `shale harness`: shale behind the harness protocol
//! (`docs/harness-protocol.md`), so that `bench compare` measures it in a
//! process of its own exactly as it measures the peers.

use std::io::{Read, Write};

use shale_workload::engine::{EngineOpener, ShaleOpener};
use shale_workload::harness::{handle, Served};
use shale_workload::protocol::{ErrorReply, InfoReply, Request};

use crate::error::{CliError, CliResult};

/// The configurations `shale harness` knows (the first is the default).
pub const CONFIGS: [&str; 1] = ["default"];

/// Reads one request on standard input and writes the reply to `out`; a
/// failure is also written to `out` as `{"error": ...}`.
pub fn run(out: &mut dyn Write) -> CliResult {
    let reply = serve_stdin();
    let text = match &reply {
        Ok(json) => json.clone(),
        Err(e) => serde_json::to_string(&ErrorReply { error: e.clone() })
            .map_err(|e| CliError::msg(format!("encoding the error reply: {e}")))?,
    };
    writeln!(out, "{text}").map_err(CliError::output)?;
    reply.map(|_| ()).map_err(CliError::msg)
}

fn serve_stdin() -> Result<String, String> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| format!("reading the request on standard input: {e}"))?;
    let request: Request =
        serde_json::from_str(&input).map_err(|e| format!("malformed request: {e}"))?;
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
            configs: CONFIGS.iter().map(|c| c.to_string()).collect(),
            direct_io: true,
        },
        open: &open,
    };
    handle(&served, &request)
}
