//! Runs the zoned device conformance suite on a real zoned block device (or,
//! with `--emulated FILE`, on an emulated one), printing each check. It is
//! destructive: every zone of the device is reset.
//!
//! ```text
//! cargo run -p shale-zoned --example conformance -- /dev/nvme0n2
//! cargo run -p shale-zoned --example conformance -- --emulated /tmp/zns.img
//! ```
//!
//! Exit status: 0 when every applicable check passed, 1 when one failed or
//! the device could not be opened, 2 for a usage error.

use std::path::Path;
use std::process::ExitCode;

use shale_zoned::linux::LinuxZoned;
use shale_zoned::testing::{check_names, run_checks, Outcome};
use shale_zoned::{EmulatedOptions, EmulatedZoned, ZonedDevice, ZonedGeometry};

const USAGE: &str = "usage: conformance DEVICE | conformance --emulated FILE";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dev: Box<dyn ZonedDevice> = match args.as_slice() {
        [flag, file] if flag == "--emulated" => {
            // 32 zones of 1 MiB, capacity 768 KiB, 14 open / 14 active zones.
            let mut g = ZonedGeometry::new(32, 1 << 20);
            g.zone_capacity = 768 << 10;
            match EmulatedZoned::create(Path::new(file), &g, EmulatedOptions::default()) {
                Ok(d) => {
                    println!("emulated on {file}, direct I/O: {}", d.direct_io());
                    Box::new(d)
                }
                Err(e) => {
                    eprintln!("conformance: {e}");
                    return ExitCode::from(1);
                }
            }
        }
        [path] if !path.starts_with('-') => match LinuxZoned::open(Path::new(path)) {
            Ok(d) => Box::new(d),
            Err(e) => {
                eprintln!("conformance: {e}");
                return ExitCode::from(1);
            }
        },
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    println!("device: {}", dev.geometry());
    let (mut passed, mut skipped) = (0, 0);
    let failed = run_checks(dev.as_ref(), |name, outcome| match outcome {
        Outcome::Passed => {
            passed += 1;
            println!("ok    {name}");
        }
        Outcome::Skipped(why) => {
            skipped += 1;
            println!("skip  {name}: {why}");
        }
        Outcome::Failed(e) => println!("FAIL  {name}: {e}"),
    });
    match failed {
        None => {
            println!("conformance: {passed} checks passed, {skipped} skipped");
            ExitCode::SUCCESS
        }
        Some((name, _)) => {
            let rest = check_names().skip_while(|n| *n != name).skip(1).count();
            eprintln!(
                "conformance: {name} failed after {passed} passed and {skipped} skipped; \
                 {rest} not run"
            );
            ExitCode::from(1)
        }
    }
}
