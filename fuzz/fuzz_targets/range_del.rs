//! Fuzz target `range_del`: see `shale::fuzz_api::fuzz_range_del` for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale::fuzz_api::fuzz_range_del(data);
});
