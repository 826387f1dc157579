//! Fuzz target `block_trace`: see `shale::fuzz_api::fuzz_block_trace` for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale::fuzz_api::fuzz_block_trace(data);
});
