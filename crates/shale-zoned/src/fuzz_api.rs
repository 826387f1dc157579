//! Entry points of the fuzz targets of the zoned decoders (`fuzz/`,
//! `docs/fuzzing.md`); not part of the API. Compiled with the `fuzzing`
//! feature and in the crate's own tests, which replay every committed seed
//! with fixed-seed mutations (`fuzz_api/tests.rs`).
//!
//! Each entry point takes the fuzzer's bytes, must not panic on any input,
//! and panics when a decoder breaks a rule (a round trip that differs, an
//! invariant of what it decoded that does not hold, an untyped error).

use std::path::Path;

use crate::device::ZonedError;
use crate::state::StateFile;

#[cfg(test)]
mod tests;

/// Target `zoned_superblock`: the ZoneFs superblock decoder.
pub fn fuzz_superblock(data: &[u8]) {
    crate::zonefs::fuzz::superblock(data);
}

/// Target `zoned_metadata_log`: the ZoneFs metadata log (frames, the
/// snapshot and every record kind) replayed as a mount does.
pub fn fuzz_metadata_log(data: &[u8]) {
    crate::zonefs::fuzz::metadata_log(data);
}

/// Target `zoned_state_file`: the emulator's zone state file. A decoded file
/// encodes to exactly its bytes; a refusal is `NotEmulatedDevice` or
/// `Corrupt`.
pub fn fuzz_state_file(data: &[u8]) {
    match StateFile::decode(Path::new("fuzz.zones"), data) {
        Ok(s) => assert_eq!(s.encode(), data, "state file round trip"),
        Err(ZonedError::NotEmulatedDevice { .. } | ZonedError::Corrupt { .. }) => {}
        Err(e) => panic!("state file refused with an untyped error: {e}"),
    }
}

/// Target `zoned_write_trace`: a write trace (`shale_env::decode_trace`)
/// replayed on the conventional SSD model of [`crate::ftl`]. A decoded
/// trace encodes and decodes to the same events; the replay (on a small
/// device, so that the work is bounded by the device, not by lengths in
/// the trace) ends in a report or a typed error. The first byte picks the
/// replay's options; the rest is the trace.
pub fn fuzz_write_trace(data: &[u8]) {
    let Some((&mode, trace)) = data.split_first() else {
        return;
    };
    let Ok(events) = shale_env::decode_trace(trace) else {
        return;
    };
    let again = shale_env::decode_trace(&shale_env::encode_trace(&events));
    assert!(again.as_ref() == Ok(&events), "trace round trip");
    let mut options = crate::ftl::ReplayOptions::new(0.07 + f64::from(mode & 7) * 0.05);
    options.logical_bytes = Some(1 << 20);
    options.pages_per_block = 16;
    options.trim = mode & 8 == 0;
    options.separate_gc_frontier = mode & 16 != 0;
    if let Ok(report) = crate::ftl::replay_trace(&events, &options) {
        assert!(report.peak_allocated_pages <= report.logical_pages);
    }
}
