//! Ctrl-C (SIGINT) and SIGTERM during a bench: the first asks the running
//! bench to stop, so that it writes the results and samples it has; a second
//! ends the process at once (exit code 130).
//!
//! Benches call [`install`] when they start and poll [`requested`] in their
//! loops (every few hundred operations: it is one relaxed atomic load).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

static STOP: AtomicBool = AtomicBool::new(false);
static INSTALL: Once = Once::new();

/// Installs the handler (once per process; later calls do nothing). A
/// failure to install is reported on standard error and the bench runs
/// without it.
pub fn install() {
    INSTALL.call_once(|| {
        let result = ctrlc::set_handler(|| {
            if STOP.swap(true, Ordering::Relaxed) {
                std::process::exit(130);
            }
            eprintln!("\ninterrupted: stopping and writing the results so far (again to quit now)");
        });
        if let Err(e) = result {
            eprintln!("shale: Ctrl-C will not keep partial results: {e}");
        }
    });
}

/// True once a stop was asked for.
pub fn requested() -> bool {
    STOP.load(Ordering::Relaxed)
}
