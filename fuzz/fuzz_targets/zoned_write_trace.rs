//! Fuzz target `zoned_write_trace`: see `shale_zoned::fuzz_api::fuzz_write_trace` for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale_zoned::fuzz_api::fuzz_write_trace(data);
});
