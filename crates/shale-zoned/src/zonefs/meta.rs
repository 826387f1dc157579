//! The in-memory metadata: files and their extent maps, zones, and the
//! [`State`] the `state` mutex guards (see "Concurrency" in the module
//! documentation), with the replay of metadata records into it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::sync::{Arc, PoisonError, RwLock};

use super::format::{self, push_frame, Dec, Enc, Extent};
use super::stats::ZoneFsStats;
use super::{FsResult, ZoneFsError};
use crate::device::{ZoneCondition, ZonedError};

/// A file's extents with the file offset each starts at, in file order.
/// Shared by the file's entry and its open readers (see "Concurrency").
pub(super) type FileMap = RwLock<Vec<(u64, Extent)>>;

pub(super) fn read_map(m: &FileMap) -> std::sync::RwLockReadGuard<'_, Vec<(u64, Extent)>> {
    m.read().unwrap_or_else(PoisonError::into_inner)
}

pub(super) fn write_map(m: &FileMap) -> std::sync::RwLockWriteGuard<'_, Vec<(u64, Extent)>> {
    m.write().unwrap_or_else(PoisonError::into_inner)
}

/// `extents` with the file offset of each, the first at `start`.
pub(super) fn with_starts(
    mut start: u64,
    extents: &[Extent],
) -> impl Iterator<Item = (u64, Extent)> + '_ {
    extents.iter().map(move |x| {
        let e = (start, *x);
        start += x.len;
        e
    })
}

pub(super) fn map_of(extents: &[Extent]) -> Arc<FileMap> {
    Arc::new(RwLock::new(with_starts(0, extents).collect()))
}

pub(super) fn extents_of(m: &FileMap) -> Vec<Extent> {
    read_map(m).iter().map(|(_, x)| *x).collect()
}

#[derive(Debug)]
pub(super) struct FileEntry {
    pub(super) id: u64,
    pub(super) size: u64,
    pub(super) lifetime: u8,
    pub(super) map: Arc<FileMap>,
}

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ZoneInfo {
    /// Extents in the zone: recorded in a file (or a removed file that open
    /// readers still hold), written by an open writer and not recorded yet,
    /// or a hold of the collector on the zone it empties.
    pub(super) refs: u32,
    /// Written since its last reset.
    pub(super) used: bool,
    /// Offline or read-only: never allocated.
    pub(super) unusable: bool,
    /// Our write pointer, relative to the zone start.
    pub(super) wp: u64,
    pub(super) capacity: u64,
    /// Being reset by the metadata log's holder (still `used` until done).
    pub(super) resetting: bool,
    /// Resets since mount (tells the collector whether its victim was).
    pub(super) resets: u64,
}

pub(super) struct State {
    pub(super) meta_zones: u32,
    pub(super) uuid: [u8; 16],
    pub(super) sequence: u64,
    pub(super) active_meta: u32,
    /// Device offset where the next metadata write goes.
    pub(super) meta_wp: u64,
    /// Encoded records not on the device yet (starts at a block boundary).
    pub(super) log_buf: Vec<u8>,
    pub(super) files: BTreeMap<String, FileEntry>,
    pub(super) ids: HashMap<u64, String>,
    pub(super) next_id: u64,
    pub(super) dirs: BTreeSet<String>,
    pub(super) zones: Vec<ZoneInfo>,
    /// Open data zone of each placement slot.
    pub(super) open: Vec<Option<u32>>,
    /// Zones without live data, reset after the next metadata sync.
    pub(super) pending_reset: Vec<u32>,
    /// Set (needed bytes, zone capacity) when the metadata no longer fits:
    /// every later metadata sync fails with it.
    pub(super) broken: Option<(u64, u64)>,
    /// Set when a device sync or a metadata write failed: what it should
    /// have made durable may be lost, so every later sync fails with it.
    pub(super) poisoned: Option<String>,
    /// Removed files that open readers still hold, by id: their extents keep
    /// their zones until the last reader is dropped.
    pub(super) zombies: HashMap<u64, Arc<FileMap>>,
    /// Counters since mount (the gauges of `ZoneFsStats` are filled in by
    /// `stats`).
    pub(super) counters: ZoneFsStats,
}

impl ZoneInfo {
    /// What a mount knows of a zone from the device's report.
    pub(super) fn of(z: &crate::device::Zone) -> ZoneInfo {
        ZoneInfo {
            refs: 0,
            used: z.condition != ZoneCondition::Empty,
            unusable: matches!(
                z.condition,
                ZoneCondition::Offline | ZoneCondition::ReadOnly | ZoneCondition::NotWritePointer
            ),
            wp: z.write_pointer.saturating_sub(z.start).min(z.capacity),
            capacity: z.capacity,
            resetting: false,
            resets: 0,
        }
    }
}

impl State {
    /// A state without files or directories, for a mount to replay into.
    pub(super) fn new(
        meta_zones: u32,
        uuid: [u8; 16],
        sequence: u64,
        zones: Vec<ZoneInfo>,
        slots: usize,
    ) -> State {
        State {
            meta_zones,
            uuid,
            sequence,
            active_meta: 0,
            meta_wp: 0,
            log_buf: Vec::new(),
            files: BTreeMap::new(),
            ids: HashMap::new(),
            next_id: 1,
            dirs: BTreeSet::new(),
            zones,
            open: vec![None; slots],
            pending_reset: Vec::new(),
            broken: None,
            poisoned: None,
            zombies: HashMap::new(),
            counters: ZoneFsStats::default(),
        }
    }

    pub(super) fn release(&mut self, extents: &[Extent], live: bool) {
        for x in extents {
            let z = &mut self.zones[x.zone as usize];
            z.refs = z.refs.saturating_sub(1);
            if live
                && z.refs == 0
                && z.used
                && !self.open.contains(&Some(x.zone))
                && !self.pending_reset.contains(&x.zone)
            {
                self.pending_reset.push(x.zone);
            }
        }
    }

    /// Removes a file. Its extents are released now, or when the last of
    /// its open readers is dropped.
    pub(super) fn drop_file(&mut self, name: &str, live: bool) -> bool {
        match self.files.remove(name) {
            Some(f) => {
                self.ids.remove(&f.id);
                if Arc::strong_count(&f.map) > 1 {
                    self.zombies.insert(f.id, f.map);
                } else {
                    self.release(&extents_of(&f.map), live);
                }
                true
            }
            None => false,
        }
    }

    pub(super) fn file_by_id(&self, id: u64) -> Option<&FileEntry> {
        self.files.get(self.ids.get(&id)?)
    }

    pub(super) fn apply_create(&mut self, id: u64, name: String, lifetime: u8, live: bool) {
        self.drop_file(&name, live);
        self.ids.insert(id, name.clone());
        self.next_id = self.next_id.max(id.saturating_add(1));
        self.files.insert(
            name,
            FileEntry {
                id,
                size: 0,
                lifetime,
                map: map_of(&[]),
            },
        );
    }

    pub(super) fn apply_extents(&mut self, id: u64, size: u64, extents: &[Extent]) -> bool {
        let Some(name) = self.ids.get(&id) else {
            return false;
        };
        let Some(f) = self.files.get_mut(name) else {
            return false;
        };
        f.size = size;
        let mut m = write_map(&f.map);
        let start = m.last().map_or(0, |(s, x)| s + x.len);
        m.extend(with_starts(start, extents));
        true
    }

    /// Replaces extent `old` of file `id` by `new` (the same bytes moved by
    /// the collector). False when the file or the extent is gone.
    pub(super) fn apply_relocate(&mut self, id: u64, old: Extent, new: &[Extent]) -> bool {
        let Some(f) = self.file_by_id(id) else {
            return false;
        };
        let mut m = write_map(&f.map);
        let Some(i) = m.iter().position(|(_, x)| *x == old) else {
            return false;
        };
        let moved: Vec<(u64, Extent)> = with_starts(m[i].0, new).collect();
        m.splice(i..=i, moved);
        true
    }

    pub(super) fn apply_rename(&mut self, from: &str, to: String, live: bool) -> bool {
        let Some(f) = self.files.remove(from) else {
            return false;
        };
        self.drop_file(&to, live);
        self.ids.insert(f.id, to.clone());
        self.files.insert(to, f);
        true
    }

    /// Applies one record body (replay). False for an unknown or malformed
    /// record: damage, which refuses the mount.
    pub(super) fn apply_record(&mut self, body: &[u8]) -> bool {
        let mut d = Dec::new(body);
        let ok = (|| {
            match d.u8()? {
                format::KIND_CREATE => {
                    let id = d.u64()?;
                    let name = d.name()?;
                    let lt = d.u8()?;
                    // Ids are never reused: one held by a file is damage
                    // (two files would share one id's records), and so is
                    // the last id, after which none is left (found by the
                    // fuzzer: the next id overflowed).
                    if self.ids.contains_key(&id) || id == u64::MAX {
                        return None;
                    }
                    self.apply_create(id, name, lt, false);
                }
                format::KIND_EXTENTS => {
                    let id = d.u64()?;
                    let size = d.u64()?;
                    let xs = self.extent_list(&mut d)?;
                    if self.apply_extents(id, size, &xs) {
                        self.add_refs(&xs);
                    }
                }
                format::KIND_DELETE => {
                    let name = d.name()?;
                    self.drop_file(&name, false);
                }
                format::KIND_RENAME => {
                    let from = d.name()?;
                    let to = d.name()?;
                    self.apply_rename(&from, to, false);
                }
                format::KIND_MKDIR => {
                    self.dirs.insert(d.name()?);
                }
                format::KIND_RELOCATE => {
                    let id = d.u64()?;
                    let old = d.extent()?;
                    let xs = self.extent_list(&mut d)?;
                    if self.apply_relocate(id, old, &xs) {
                        self.add_refs(&xs);
                        self.release(&[old], false);
                    }
                }
                _ => return None,
            }
            Some(())
        })();
        ok.is_some() && d.done()
    }

    /// `n u32 extent{n}`, each checked.
    pub(super) fn extent_list(&self, d: &mut Dec<'_>) -> Option<Vec<Extent>> {
        (0..d.u32()?)
            .map(|_| self.check_extent(d.extent()?))
            .collect()
    }

    pub(super) fn add_refs(&mut self, extents: &[Extent]) {
        for x in extents {
            self.zones[x.zone as usize].refs += 1;
        }
    }

    pub(super) fn check_extent(&self, x: Extent) -> Option<Extent> {
        let z = self.zones.get(x.zone as usize)?;
        (x.zone >= self.meta_zones && x.offset.checked_add(x.len)? <= z.capacity).then_some(x)
    }

    pub(super) fn snapshot(&self) -> Vec<u8> {
        let mut e = Enc::default();
        e.u8(format::KIND_SNAPSHOT);
        e.u64(self.next_id);
        e.u32(self.dirs.len() as u32);
        for d in &self.dirs {
            e.name(d);
        }
        e.u32(self.files.len() as u32);
        for (name, f) in &self.files {
            e.u64(f.id);
            e.name(name);
            e.u64(f.size);
            e.u8(f.lifetime);
            let m = read_map(&f.map);
            e.u32(m.len() as u32);
            for (_, x) in m.iter() {
                e.extent(x);
            }
        }
        e.0
    }

    pub(super) fn load_snapshot(&mut self, body: &[u8]) -> bool {
        let mut d = Dec::new(body);
        let ok = (|| {
            if d.u8()? != format::KIND_SNAPSHOT {
                return None;
            }
            self.next_id = d.u64()?;
            for _ in 0..d.u32()? {
                self.dirs.insert(d.name()?);
            }
            for _ in 0..d.u32()? {
                let id = d.u64()?;
                let name = d.name()?;
                let size = d.u64()?;
                let lifetime = d.u8()?;
                let n = d.u32()?;
                // One file per id and per name (found by the fuzzer: a
                // duplicate left a file its records could not reach), and
                // every id below the next one to give out (else a new file
                // would take a live file's id).
                if self.ids.contains_key(&id)
                    || self.files.contains_key(&name)
                    || id >= self.next_id
                {
                    return None;
                }
                let mut extents = Vec::new();
                for _ in 0..n {
                    let x = self.check_extent(d.extent()?)?;
                    self.zones[x.zone as usize].refs += 1;
                    extents.push(x);
                }
                self.ids.insert(id, name.clone());
                self.files.insert(
                    name,
                    FileEntry {
                        id,
                        size,
                        lifetime,
                        map: map_of(&extents),
                    },
                );
            }
            Some(())
        })();
        ok.is_some() && d.done()
    }

    pub(super) fn push_record(&mut self, body: &[u8], block: usize) {
        push_frame(&mut self.log_buf, body, block);
    }

    /// Empty data zones that allocation may take.
    /// True if zones wait for a log sync to be reset, or are being reset by
    /// a sync in flight (under the log lock, without the state lock): a log
    /// sync then frees them, or waits until the one in flight has.
    pub(super) fn resets_waiting(&self) -> bool {
        !self.pending_reset.is_empty() || self.zones.iter().any(|z| z.resetting)
    }

    pub(super) fn free_zones(&self) -> usize {
        self.zones[self.meta_zones as usize..]
            .iter()
            .filter(|z| !z.used && !z.unusable)
            .count()
    }

    pub(super) fn data_zones(&self) -> usize {
        self.zones.len() - self.meta_zones as usize
    }

    /// The error every sync returns once the metadata no longer fits or a
    /// sync failed.
    pub(super) fn usable(&self) -> FsResult<()> {
        if let Some((needed, capacity)) = self.broken {
            return Err(ZoneFsError::MetadataFull { needed, capacity });
        }
        if let Some(why) = &self.poisoned {
            return Err(ZoneFsError::Device(ZonedError::io(
                "zone file system",
                io::Error::other(format!(
                    "an earlier sync failed ({why}); nothing more is made durable until it is \
                     mounted again"
                )),
            )));
        }
        Ok(())
    }

    /// Records a failed sync or metadata write (see [`State::usable`]).
    pub(super) fn poison(&mut self, e: &ZoneFsError) {
        if self.poisoned.is_none() {
            self.poisoned = Some(e.to_string());
        }
    }
}
