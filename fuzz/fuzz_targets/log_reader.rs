//! Fuzz target `log_reader`: see `shale::fuzz_api::fuzz_log_reader` for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale::fuzz_api::fuzz_log_reader(data);
});
