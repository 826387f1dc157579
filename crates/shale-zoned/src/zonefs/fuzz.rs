//! The ZoneFs side of the fuzz entry points ([`crate::fuzz_api`]): the
//! superblock and the metadata log, which need the private `State`.

use std::collections::HashMap;

use super::format::{self, pad_to_block, push_frame, Superblock, SuperblockError, SUPERBLOCK_LEN};
use super::mount::{self, Replay};
use super::{extents_of, State, ZoneFsError, ZoneInfo};

/// Geometry the metadata log target replays against: zones of
/// `LOG_ZONE_BLOCKS` blocks of `LOG_BLOCK` bytes, two of them metadata.
pub(crate) const LOG_BLOCK: u64 = 4096;
/// Blocks per zone of that geometry.
pub(crate) const LOG_ZONE_BLOCKS: u64 = 64;
/// Zones of that geometry.
pub(crate) const LOG_ZONES: u32 = 8;

/// `Superblock::decode` on any bytes: a typed result; a decoded superblock
/// of this version encodes to exactly the bytes it came from.
pub(crate) fn superblock(data: &[u8]) {
    match Superblock::decode(data) {
        Ok(sb) => {
            if sb.version == format::VERSION {
                assert_eq!(sb.encode(), data[..SUPERBLOCK_LEN], "superblock round trip");
            }
        }
        Err(SuperblockError::NoMagic | SuperblockError::Damaged | SuperblockError::Version(_)) => {}
    }
}

fn empty_state() -> State {
    let capacity = LOG_BLOCK * LOG_ZONE_BLOCKS;
    let zones = (0..LOG_ZONES)
        .map(|_| ZoneInfo {
            refs: 0,
            used: true,
            unusable: false,
            wp: capacity,
            capacity,
            resetting: false,
            resets: 0,
        })
        .collect();
    State::new(2, [0; 16], 1, zones, 4)
}

/// The log of `bodies` (`len u16, body[len]` each) as the writer frames
/// them, each frame padded to a block as a sync does.
pub(crate) fn frame_bodies(mut bodies: &[u8]) -> Vec<u8> {
    let block = LOG_BLOCK as usize;
    let mut log = Vec::new();
    while let [a, b, rest @ ..] = bodies {
        let n = usize::from(u16::from_le_bytes([*a, *b])).min(rest.len());
        let (body, after) = rest.split_at(n);
        if !body.is_empty() {
            push_frame(&mut log, body, block);
            pad_to_block(&mut log, block);
        }
        bodies = after;
    }
    log
}

/// A metadata zone's log (the bytes after its superblock) replayed as a
/// mount does: a typed result ([`ZoneFsError::Corrupt`] for damage); a
/// replayed state keeps its invariants (every extent in a data zone and
/// within its capacity, each zone's reference count equal to the extents
/// naming it) and its snapshot loads back to the same snapshot.
///
/// The first byte is a mode: bit 0 clear, the rest is the log; set, the
/// rest is a list of record bodies ([`frame_bodies`]) framed here with
/// their checksums, so that mutations reach the record decoders.
pub(crate) fn metadata_log(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let framed;
    let log = if mode & 1 == 0 {
        rest
    } else {
        framed = frame_bodies(rest);
        &framed
    };
    let room = (LOG_BLOCK * (LOG_ZONE_BLOCKS - 1)) as usize;
    let log = &log[..log.len().min(room)];
    let mut st = empty_state();
    match mount::replay_log(log, (0, 0), room, 1, LOG_BLOCK, &mut st) {
        Ok(Replay::Log { .. }) => {}
        Ok(Replay::RollCut) => return,
        Err(ZoneFsError::Corrupt { reason }) => {
            assert!(!reason.is_empty());
            return;
        }
        Err(e) => panic!("replay failed with a non-damage error: {e}"),
    }
    let mut refs: HashMap<u32, u32> = HashMap::new();
    for (name, f) in &st.files {
        for x in extents_of(&f.map) {
            assert!(
                st.check_extent(x).is_some(),
                "{name}: extent {x:?} outside the data zones"
            );
            *refs.entry(x.zone).or_default() += 1;
        }
        assert_eq!(st.ids.get(&f.id), Some(name), "{name}: id map");
    }
    for (i, z) in st.zones.iter().enumerate() {
        let want = refs.get(&(i as u32)).copied().unwrap_or(0);
        assert_eq!(z.refs, want, "zone {i}: reference count");
    }
    let snap = st.snapshot();
    let mut again = empty_state();
    assert!(
        again.load_snapshot(&snap),
        "a replayed state's snapshot loads"
    );
    assert_eq!(again.snapshot(), snap, "snapshot round trip");
}

/// Replays `log` as [`metadata_log`] does; the damage reason on refusal.
#[cfg(test)]
pub(crate) fn replay_for_test(log: &[u8]) -> Result<(), String> {
    let room = (LOG_BLOCK * (LOG_ZONE_BLOCKS - 1)) as usize;
    let mut st = empty_state();
    match mount::replay_log(log, (0, 0), room, 1, LOG_BLOCK, &mut st) {
        Ok(_) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}
