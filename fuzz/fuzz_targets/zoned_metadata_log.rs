//! Fuzz target `zoned_metadata_log`: see `shale_zoned::fuzz_api::fuzz_metadata_log` for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale_zoned::fuzz_api::fuzz_metadata_log(data);
});
