//! Fuzz target `table_roundtrip`: a structure-aware case (options, entries,
//! reads) built by `arbitrary`; see `shale::fuzz_api::fuzz_table_roundtrip`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shale::fuzz_api::TableCase;

fuzz_target!(|case: TableCase| {
    shale::fuzz_api::fuzz_table_roundtrip(&case);
});
