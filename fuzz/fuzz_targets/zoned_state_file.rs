//! Fuzz target `zoned_state_file`: see `shale_zoned::fuzz_api::fuzz_state_file` for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale_zoned::fuzz_api::fuzz_state_file(data);
});
