//! What the end-to-end tests of the `shale` binary share: running it.
#![allow(dead_code)] // each test binary uses a different subset

use std::process::{Command, Output, Stdio};

/// The built `shale`, with one-line panic reports as users see them.
pub(crate) fn shale() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_shale"));
    c.env_remove("RUST_BACKTRACE");
    c
}

/// Runs `shale args...` to completion.
pub(crate) fn run(args: &[&str]) -> Output {
    shale()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run shale")
}

/// Standard output, lossily decoded.
pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Standard error, lossily decoded.
pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `shale args...` and expects success; returns its standard output.
pub(crate) fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(
        o.status.success(),
        "shale {args:?} failed with {:?}: {}",
        o.status.code(),
        stderr(&o)
    );
    stdout(&o)
}

/// Formats a small emulated device at `dev`: 24 zones of 1 MiB with 768 KiB
/// writable (the QEMU namespace's shape), 6 open and active zones.
pub(crate) fn mkfs_small(dev: &str) -> String {
    ok(&[
        "zoned",
        "mkfs",
        "--device",
        dev,
        "--zones",
        "24",
        "--zone-size",
        "1M",
        "--zone-capacity",
        "768K",
        "--max-open",
        "6",
        "--max-active",
        "6",
    ])
}

/// A stand-in harness of `engine` that serves only the ops every harness
/// serves (its `info` lists no `dbbench` or `ycsb`): a shell script in
/// `dir`, for the variable `SHALE_<ENGINE>_HARNESS`. It fails any other
/// request, so a test can tell whether the CLI asked before it worked.
pub(crate) fn base_ops_harness(dir: &std::path::Path, engine: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(format!("fake-{engine}-harness"));
    let script = format!(
        "#!/bin/sh\nreq=$(cat)\ncase \"$req\" in\n*'\"op\":\"info\"'*) echo '{{\"engine\":\"{engine}\",\
         \"version\":\"0\",\"configs\":[\"default\"],\"direct_io\":false,\
         \"ops\":[\"info\",\"load\",\"inspect\",\"read\"]}}' ;;\n\
         *) echo '{{\"error\":\"unexpected request\"}}'; exit 1 ;;\nesac\n"
    );
    std::fs::write(&path, script).expect("write the stand-in harness");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}
