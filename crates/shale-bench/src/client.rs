//! The client side of the harness protocol
//! ([`shale_workload::protocol`]): finds an engine's harness, sends it one
//! typed request in a process of its own, and parses the reply. Every bench
//! that drives a harness (`bench compare`, `bench ycsb`, `bench db-sweep`)
//! goes through [`Client`].

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use shale_workload::protocol::{
    DbBenchReply, DbBenchRequest, ErrorReply, InfoReply, InspectReply, LoadReply, LoadRequest, Op,
    OpenRequest, ReadReply, ReadRequest, Request, YcsbLoadReply, YcsbPhase, YcsbReply, YcsbRequest,
    PROTOCOL_VERSION,
};

/// The peers whose harnesses this repository builds (`peers/<engine>/`,
/// `scripts/peers.sh <engine>`).
pub const PEERS: [&str; 3] = ["pebble", "rocksdb", "leveldb"];

/// One engine's harness: a program (and its arguments) that serves one
/// request per run.
#[derive(Clone, Debug)]
pub struct Client {
    engine: String,
    program: PathBuf,
    args: Vec<String>,
}

impl Client {
    /// The harness of `engine`: `shale harness` for shale; for a peer,
    /// `$SHALE_<ENGINE>_HARNESS`, else `shale-<engine>-harness` in
    /// `target/peers/`; an error naming the command that builds it when
    /// there is none.
    pub fn locate(engine: &str) -> Result<Client, String> {
        let (program, args) = locate(engine)?;
        Ok(Client {
            engine: engine.to_string(),
            program,
            args,
        })
    }

    /// The same harness run through another program: `wrap` takes the
    /// program and arguments and returns the command that runs them (a
    /// memory group's launcher, say).
    pub fn wrapped(&self, wrap: impl FnOnce(&Path, &[String]) -> (PathBuf, Vec<String>)) -> Client {
        let (program, args) = wrap(&self.program, &self.args);
        Client {
            engine: self.engine.clone(),
            program,
            args,
        }
    }

    /// The engine it serves.
    pub fn engine(&self) -> &str {
        &self.engine
    }

    /// The harness's program.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Its name, version, configurations and ops; an error if it serves
    /// another engine than the one it was located for.
    pub fn info(&self, timeout: Duration) -> Result<InfoReply, String> {
        let info: InfoReply = self.call(Op::Info, timeout)?;
        if info.engine != self.engine {
            return Err(format!(
                "{} says it serves {:?}, not {}",
                self.program.display(),
                info.engine,
                self.engine
            ));
        }
        Ok(info)
    }

    /// An error naming the engine, the op and the command that builds a
    /// harness serving it, unless `info` (this harness's) lists `op`.
    pub fn require(&self, info: &InfoReply, op: &str) -> Result<(), String> {
        if info.serves(op) {
            return Ok(());
        }
        Err(format!(
            "the {} harness ({}) does not serve the {op} op (it serves {}): rebuild it with \
             `scripts/peers.sh {}`",
            self.engine,
            self.program.display(),
            info.ops.join(", "),
            self.engine
        ))
    }

    /// Loads a dataset.
    pub fn load(&self, r: LoadRequest, timeout: Duration) -> Result<LoadReply, String> {
        self.call(Op::Load(r), timeout)
    }

    /// Checks and describes a loaded database.
    pub fn inspect(&self, r: OpenRequest, timeout: Duration) -> Result<InspectReply, String> {
        self.call(Op::Inspect(r), timeout)
    }

    /// Measures Gets.
    pub fn read(&self, r: ReadRequest, timeout: Duration) -> Result<ReadReply, String> {
        self.call(Op::Read(r), timeout)
    }

    /// Runs db_bench-style benchmarks.
    pub fn dbbench(&self, r: DbBenchRequest, timeout: Duration) -> Result<DbBenchReply, String> {
        self.call(Op::DbBench(r), timeout)
    }

    /// Loads YCSB's records (`r.phase` must be [`YcsbPhase::Load`]).
    pub fn ycsb_load(&self, r: YcsbRequest, timeout: Duration) -> Result<YcsbLoadReply, String> {
        if r.phase != YcsbPhase::Load {
            return Err("ycsb_load takes a load request".into());
        }
        self.call(Op::Ycsb(r), timeout)
    }

    /// Runs a YCSB workload (`r.phase` must be [`YcsbPhase::Run`]).
    pub fn ycsb_run(&self, r: YcsbRequest, timeout: Duration) -> Result<YcsbReply, String> {
        if r.phase != YcsbPhase::Run {
            return Err("ycsb_run takes a run request".into());
        }
        self.call(Op::Ycsb(r), timeout)
    }

    /// Runs the harness with one request and parses its reply as `T`; the
    /// error carries the harness's own error reply and the end of its
    /// standard error.
    fn call<T: DeserializeOwned>(&self, op: Op, timeout: Duration) -> Result<T, String> {
        let request = Request {
            protocol: PROTOCOL_VERSION,
            op,
        };
        let input =
            serde_json::to_string(&request).map_err(|e| format!("encoding the request: {e}"))?;
        let (ok, stdout, stderr) = run_with_timeout(&self.program, &self.args, &input, timeout)?;
        let tail = stderr_tail(&stderr);
        if !ok {
            let reason = serde_json::from_str::<ErrorReply>(&stdout)
                .map(|r| r.error)
                .unwrap_or_else(|_| "exited with an error and no reply".into());
            return Err(format!("{reason}{tail}"));
        }
        serde_json::from_str(&stdout)
            .map_err(|e| format!("malformed reply ({e}): {:?}{tail}", clip(&stdout, 300)))
    }
}

fn clip(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The last lines of a harness's standard error, for a failure message.
fn stderr_tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(5)..];
    if tail.is_empty() {
        String::new()
    } else {
        format!("; its standard error ends: {}", tail.join(" | "))
    }
}

/// Runs `program args` with `input` on standard input; kills it after
/// `timeout`. Returns (exited with 0, stdout, stderr).
fn run_with_timeout(
    program: &Path,
    args: &[String],
    input: &str,
    timeout: Duration,
) -> Result<(bool, String, String), String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input.as_bytes())
            .map_err(|e| format!("writing the request: {e}"))?;
    }
    // Each pipe is read by a thread of its own into a shared buffer, so that
    // a harness that fills one is never blocked, and what a killed harness
    // wrote can be read even if its children still hold the pipe open.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let (tx, done) = std::sync::mpsc::channel::<()>();
        let sink = buf.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            if let Some(mut p) = pipe {
                while let Ok(n) = p.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    if let (Ok(mut b), Some(bytes)) = (sink.lock(), chunk.get(..n)) {
                        b.extend_from_slice(bytes);
                    }
                }
            }
            let _ = tx.send(());
        });
        (buf, done)
    };
    let collect = |(buf, done): (Arc<Mutex<Vec<u8>>>, std::sync::mpsc::Receiver<()>),
                   wait: Duration| {
        let _ = done.recv_timeout(wait);
        let bytes = buf.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                let stderr = collect(err, Duration::from_secs(1));
                return Err(format!(
                    "no reply within {} s: killed{}",
                    timeout.as_secs(),
                    stderr_tail(&stderr)
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("waiting for {}: {e}", program.display())),
        }
    };
    let stdout = collect(out, Duration::from_secs(10));
    let stderr = collect(err, Duration::from_secs(10));
    Ok((status.success(), stdout, stderr))
}

/// Where an engine's harness is: `shale harness` for shale; for a peer,
/// `$SHALE_<ENGINE>_HARNESS`, else `shale-<engine>-harness` in `target/peers/`
/// next to this executable's `target/` directory or under the working
/// directory.
fn locate(engine: &str) -> Result<(PathBuf, Vec<String>), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    if engine == "shale" {
        return Ok((exe, vec!["harness".into()]));
    }
    let var = format!("SHALE_{}_HARNESS", engine.to_ascii_uppercase());
    if let Some(p) = std::env::var_os(&var) {
        return Ok((PathBuf::from(p), Vec::new()));
    }
    let name = format!("shale-{engine}-harness");
    let mut candidates = Vec::new();
    // target/release/shale -> target/peers/
    if let Some(target) = exe.parent().and_then(Path::parent) {
        candidates.push(target.join("peers").join(&name));
    }
    candidates.push(PathBuf::from("target").join("peers").join(&name));
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .map(|p| (p, Vec::new()))
        .ok_or_else(|| {
            format!("not built: run `scripts/peers.sh {engine}` (or set {var} to its harness)")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_tail_keeps_the_last_lines() {
        assert_eq!(stderr_tail(""), "");
        let s = "a\nb\n\nc\nd\ne\nf\n";
        assert_eq!(
            stderr_tail(s),
            "; its standard error ends: b | c | d | e | f"
        );
    }

    #[test]
    fn a_harness_that_hangs_is_killed_and_one_that_fails_is_reported() {
        let sh = PathBuf::from("/bin/sh");
        let hang = run_with_timeout(
            &sh,
            &["-c".into(), "echo started >&2; sleep 30".into()],
            "",
            Duration::from_millis(1000),
        );
        assert!(hang.is_err_and(|e| e.contains("killed") && e.contains("started")));
        let (ok, out, err) = run_with_timeout(
            &sh,
            &["-c".into(), "cat; echo oops >&2; exit 1".into()],
            "{\"x\":1}",
            Duration::from_secs(10),
        )
        .expect("runs");
        assert!(!ok);
        assert_eq!(out, "{\"x\":1}");
        assert_eq!(err.trim(), "oops");
    }
}
