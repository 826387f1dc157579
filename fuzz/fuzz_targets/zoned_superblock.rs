//! Fuzz target `zoned_superblock`: see `shale_zoned::fuzz_api::fuzz_superblock` for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale_zoned::fuzz_api::fuzz_superblock(data);
});
