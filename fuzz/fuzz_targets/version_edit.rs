//! Fuzz target `version_edit`: see `shale::fuzz_api::fuzz_version_edit` for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale::fuzz_api::fuzz_version_edit(data);
});
