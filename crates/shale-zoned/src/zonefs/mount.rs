//! What a mount reads and what it trusts: the superblocks of the metadata
//! zones, then the metadata log of the newest one (`docs/format/zonefs.md`,
//! "Mount").
//!
//! The rule is the engine's own for its write-ahead log and manifest: only a
//! torn tail is dropped. A crash can leave a metadata zone in exactly these
//! states, and nothing else:
//!
//! * a log whose last frame runs past the write pointer (a metadata sync cut
//!   at a block boundary: the write pointer covers only written blocks);
//! * a zone holding a superblock whose snapshot frame is cut, or not written
//!   at all (a roll cut after its first block), next to the zone the roll
//!   started from, intact, one below it in the ring and in sequence;
//! * an empty zone (a roll cut after its reset).
//!
//! Anything else is damage ([`ZoneFsError::Corrupt`]): a superblock whose
//! magic is there and whose checksum fails, a metadata zone holding data but
//! no superblock, a complete frame whose checksum fails or whose record does
//! not decode, a "cut" frame that the bytes show was not cut. A mount that
//! meets damage returns before it writes anything, read-write or not:
//! falling back to an older metadata zone, or ending the log early, would
//! lose the files that the unread records created, and the mount's zone
//! resets would then destroy their data.

use super::format::{self, read_frames, LogEnd, Superblock, SuperblockError};
use super::{FsResult, State, ZoneFsError, MAX_META_ZONES};
use crate::device::{Zone, ZoneCondition, ZonedDevice};

/// What the first block of one of the first zones holds.
#[derive(Clone, Copy, Debug)]
pub(super) enum Head {
    /// Nothing written.
    Empty,
    /// Offline: cannot be read.
    Offline,
    /// A valid superblock.
    Superblock(Superblock),
    /// The magic, and a checksum that fails.
    Damaged,
    /// Data without the magic.
    NoMagic,
    /// A superblock of a format version this build does not read.
    Version(u32),
}

impl Head {
    /// The zone's state, for an error message.
    fn describe(&self, zone: u32) -> String {
        match self {
            Head::Empty => format!("zone {zone} is empty"),
            Head::Offline => format!("zone {zone} is offline (its superblock cannot be read)"),
            Head::Superblock(sb) => format!(
                "zone {zone} holds an intact superblock (sequence {})",
                sb.sequence
            ),
            Head::Damaged => format!(
                "the superblock in zone {zone} is damaged (its magic is there, its checksum \
                 fails)"
            ),
            Head::NoMagic => format!("zone {zone} holds data but no superblock"),
            Head::Version(v) => {
                format!("zone {zone} holds a superblock of format version {v}")
            }
        }
    }

    /// Damaged, unreadable, or data without a superblock.
    fn is_damage(&self) -> bool {
        matches!(self, Head::Damaged | Head::NoMagic | Head::Offline)
    }
}

/// Reads the first block of each of the first [`MAX_META_ZONES`] zones.
pub(super) fn read_heads(
    dev: &dyn ZonedDevice,
    report: &[Zone],
    block: u64,
) -> FsResult<Vec<Head>> {
    let mut heads = Vec::new();
    for z in report.iter().take(MAX_META_ZONES as usize) {
        let head = if z.condition == ZoneCondition::Offline {
            Head::Offline
        } else if z.write_pointer <= z.start {
            Head::Empty
        } else {
            let mut b = vec![0u8; block as usize];
            dev.read_at(z.start, &mut b)?;
            match Superblock::decode(&b) {
                Ok(sb) => Head::Superblock(sb),
                Err(SuperblockError::Damaged) => Head::Damaged,
                Err(SuperblockError::NoMagic) => Head::NoMagic,
                Err(SuperblockError::Version(v)) => Head::Version(v),
            }
        };
        heads.push(head);
    }
    Ok(heads)
}

fn corrupt(reason: String) -> ZoneFsError {
    ZoneFsError::Corrupt { reason }
}

/// The superblocks of the metadata zones, newest first, with their zones:
/// the file system's metadata zones as zones 0 and 1 name them.
///
/// Zones 0 and 1 are metadata zones of every file system, and a roll resets
/// one metadata zone at a time, so a formatted device holds a superblock in
/// one of them; a metadata zone that holds data starts with a superblock
/// (a roll writes it in its first block, with the snapshot). So: both empty
/// is [`ZoneFsError::NotFormatted`]; any metadata zone whose superblock is
/// damaged, that holds data without one, or that is offline, is
/// [`ZoneFsError::Corrupt`], even when another superblock is intact: the
/// damaged one may be the newest, and choosing an older state would lose the
/// files created since. Superblocks at or above the file system's
/// `meta_zones` are file data and ignored.
pub(super) fn superblocks(heads: &[Head]) -> FsResult<Vec<(Superblock, u32)>> {
    let head = |i: u32| heads.get(i as usize).copied().unwrap_or(Head::Empty);
    let (h0, h1) = (head(0), head(1));
    if h0.is_damage() || h1.is_damage() {
        let backup = match (h0, h1) {
            (Head::Superblock(_), _) => {
                "; the backup in zone 0 is intact, but the damaged zone may hold newer metadata"
            }
            (_, Head::Superblock(_)) => {
                "; the backup in zone 1 is intact, but the damaged zone may hold newer metadata"
            }
            _ => "; neither zone holds an intact superblock",
        };
        return Err(corrupt(format!(
            "{}; {}{backup}. Nothing was mounted or written",
            h0.describe(0),
            h1.describe(1)
        )));
    }
    for h in [h0, h1] {
        if let Head::Version(found) = h {
            return Err(ZoneFsError::UnsupportedVersion { found });
        }
    }
    let valid: Vec<(Superblock, u32)> = [(h0, 0), (h1, 1)]
        .into_iter()
        .filter_map(|(h, i)| match h {
            Head::Superblock(sb) => Some((sb, i)),
            _ => None,
        })
        .collect();
    let Some(&(authority, authority_zone)) = valid.iter().max_by_key(|(sb, _)| sb.sequence) else {
        return Err(ZoneFsError::NotFormatted);
    };
    if let [(a, _), (b, _)] = valid[..] {
        if a.uuid != b.uuid || a.meta_zones != b.meta_zones {
            return Err(corrupt(format!(
                "zones 0 and 1 hold superblocks of different file systems (uuids {} and {}, {} \
                 and {} metadata zones). Nothing was mounted or written",
                hex(&a.uuid),
                hex(&b.uuid),
                a.meta_zones,
                b.meta_zones
            )));
        }
    }
    let mut out = valid;
    for i in 2..authority.meta_zones.min(heads.len() as u32) {
        let h = head(i);
        let newest = format!(
            "zone {authority_zone} holds the newest intact superblock of zones 0 and 1 (sequence \
             {}), but zone {i} may hold newer metadata. Nothing was mounted or written",
            authority.sequence
        );
        match h {
            Head::Empty => {}
            Head::Version(found) => return Err(ZoneFsError::UnsupportedVersion { found }),
            Head::Superblock(sb)
                if sb.uuid == authority.uuid && sb.meta_zones == authority.meta_zones =>
            {
                out.push((sb, i));
            }
            Head::Superblock(_) => {
                return Err(corrupt(format!(
                    "metadata zone {i} holds the superblock of another file system; {newest}"
                )))
            }
            damage => {
                return Err(corrupt(format!(
                    "metadata zone {i}: {}; {newest}",
                    damage.describe(i)
                )))
            }
        }
    }
    out.sort_by_key(|(sb, _)| std::cmp::Reverse(sb.sequence));
    if let Some(w) = out.windows(2).find(|w| w[0].0.sequence == w[1].0.sequence) {
        return Err(corrupt(format!(
            "metadata zones {} and {} hold superblocks of the same sequence {}. Nothing was \
             mounted or written",
            w[1].1, w[0].1, w[0].0.sequence
        )));
    }
    Ok(out)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// What a metadata zone's log gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Replay {
    /// The snapshot and the records after it are in the state.
    Log {
        /// The last frame was cut by the write pointer (a torn metadata
        /// sync, never acknowledged) and dropped.
        torn: bool,
        /// The log holds a seal, which earlier builds wrote when a roll
        /// began (and appended after, when the roll was cut by a crash).
        sealed: bool,
    },
    /// The snapshot frame is cut by the write pointer, or was never written
    /// (the zone holds its superblock only): a roll into this zone, cut by a
    /// crash. Nothing was applied.
    RollCut,
}

/// Replays the log of metadata zone `zone` (holding a valid superblock of
/// `sequence`) into `st`, which is fresh. Damage is
/// [`ZoneFsError::Corrupt`] naming the zone and the byte offset.
pub(super) fn replay(
    dev: &dyn ZonedDevice,
    zone: &Zone,
    sequence: u64,
    block: u64,
    st: &mut State,
) -> FsResult<Replay> {
    let end = zone.write_pointer.min(zone.start + zone.capacity);
    let log_start = zone.start + block;
    if end <= log_start {
        return Ok(Replay::RollCut);
    }
    let mut log = vec![0u8; (end - log_start) as usize];
    dev.read_at(log_start, &mut log)?;
    let room = zone.capacity.saturating_sub(block) as usize;
    replay_log(&log, (zone.index, zone.start), room, sequence, block, st)
}

/// Replays the log of a metadata zone (`zone`: its index and device
/// offset; `log`: the bytes after its superblock up to the write pointer;
/// `room`: the bytes the zone holds after the superblock) into `st`: the
/// part of [`replay`] after the device read. Errors name the zone.
pub(super) fn replay_log(
    log: &[u8],
    zone: (u32, u64),
    room: usize,
    sequence: u64,
    block: u64,
    st: &mut State,
) -> FsResult<Replay> {
    let (zone_index, zone_start) = zone;
    let log_start = zone_start + block;
    let mut frames = 0usize;
    let mut sealed = false;
    let read = read_frames(log, block as usize, room, |at, body| {
        frames += 1;
        if frames == 1 {
            if at != 0 {
                return Err("the first frame does not start right after the superblock".into());
            }
            return if st.load_snapshot(body) {
                Ok(())
            } else {
                Err(
                    "the snapshot does not decode (or names an extent outside the data zones)"
                        .into(),
                )
            };
        }
        match body {
            [format::KIND_SEAL] => {
                sealed = true;
                Ok(())
            }
            [format::KIND_SNAPSHOT, ..] => Err("a second snapshot in one zone".into()),
            _ if st.apply_record(body) => Ok(()),
            _ => Err(format!(
                "a record of kind {} that does not decode (or names an extent outside the data \
                 zones)",
                body[0]
            )),
        }
    });
    let damaged = |at: usize, what: &str| {
        corrupt(format!(
            "metadata zone {} (superblock sequence {sequence}), frame at byte {} of the zone \
             (device byte {}): {what}. Only a last record cut by the write pointer may be \
             dropped; the records from here on cannot be read, and mounting without them would \
             lose what they hold, so nothing was mounted or written",
            zone_index,
            block + at as u64,
            log_start + at as u64
        ))
    };
    match read {
        Err(d) => Err(damaged(d.at, &d.what)),
        Ok(LogEnd::Torn { at: 0 }) if frames == 0 => Ok(Replay::RollCut),
        Ok(_) if frames == 0 => Err(damaged(
            0,
            "no snapshot after the superblock (a roll writes the two together)",
        )),
        Ok(LogEnd::Torn { .. }) => Ok(Replay::Log { torn: true, sealed }),
        Ok(LogEnd::Clean) => Ok(Replay::Log {
            torn: false,
            sealed,
        }),
    }
}
