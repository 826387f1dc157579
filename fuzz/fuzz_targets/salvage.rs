//! Fuzz target `salvage`: see `shale::fuzz_api::fuzz_salvage` for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale::fuzz_api::fuzz_salvage(data);
});
