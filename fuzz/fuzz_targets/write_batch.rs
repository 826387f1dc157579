//! Fuzz target `write_batch`: see `shale::fuzz_api::fuzz_write_batch` for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale::fuzz_api::fuzz_write_batch(data);
});
