//! Fuzz target `table_inspect`: see `shale::fuzz_api::fuzz_table_inspect` for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale::fuzz_api::fuzz_table_inspect(data);
});
