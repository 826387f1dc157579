//! A file system that can simulate a machine crash.
//!
//! [`CrashFs`] is a [`MemFs`] with two more operations. [`CrashFs::crash`] cuts
//! the state down to what the durability contract of [`crate::FileSystem`]
//! promises: names as of the last `sync_dir` of their directory, each file
//! truncated to its synced length. [`CrashFs::crash_with_torn_tails`] keeps, in
//! addition, a random prefix of each file's unsynced bytes, possibly zeroed from
//! the synced length or from a 512-byte sector boundary on, as a disk that
//! wrote part of the cached pages (and a file system that extended the file
//! before its data reached the disk) would.
//!
//! After a crash the file system is *down*: every call fails, so the crashed
//! process (a `Db` still running its threads) cannot change the state any more;
//! every handle opened before the crash fails for ever. [`CrashFs::restart`]
//! brings it back up, as a reboot would, with all locks released.

use std::sync::atomic::Ordering;

use crate::mem::MemFs;
use crate::FileSystem;

/// A [`MemFs`] that can crash. See the module documentation.
#[derive(Default)]
pub struct CrashFs {
    mem: MemFs,
}

impl CrashFs {
    /// An empty file system.
    pub fn new() -> CrashFs {
        CrashFs { mem: MemFs::new() }
    }

    /// Crashes: only durable names and synced bytes remain. The file system is
    /// down until [`CrashFs::restart`].
    pub fn crash(&self) {
        self.cut(None);
    }

    /// Crashes, keeping for each file a random prefix (chosen from `seed`) of its
    /// unsynced bytes, which may read back as zeros from the synced length or
    /// from a sector (512-byte) boundary on: lost sectors of an extended file.
    pub fn crash_with_torn_tails(&self, seed: u64) {
        self.cut(Some(seed));
    }

    /// Ends the downtime after a crash: the durable state becomes the live state
    /// and every lock is released.
    pub fn restart(&self) {
        let mut g = self.mem.core.names.lock();
        g.down = false;
        g.locks.clear();
    }

    /// True between a crash and the next restart.
    pub fn is_down(&self) -> bool {
        self.mem.core.names.lock().down
    }

    fn cut(&self, torn_seed: Option<u64>) {
        let mut g = self.mem.core.names.lock();
        self.mem.core.epoch.fetch_add(1, Ordering::AcqRel);
        g.down = true;
        g.locks.clear();
        let mut rng = torn_seed.unwrap_or(0);
        let mut durable: Vec<_> = g
            .durable
            .iter()
            .map(|(p, n)| (p.clone(), n.clone()))
            .collect();
        // A fixed order so that a seed reproduces the same cut.
        durable.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, node) in &durable {
            let mut n = node.write();
            let synced = n.synced.min(n.data.len());
            let unsynced = n.data.len() - synced;
            let keep = match torn_seed {
                Some(_) if unsynced > 0 => {
                    let r = splitmix(&mut rng);
                    synced + (r % (unsynced as u64 + 1)) as usize
                }
                _ => synced,
            };
            n.data.truncate(keep);
            if torn_seed.is_some() && keep > synced && splitmix(&mut rng).is_multiple_of(2) {
                let first_sector = synced.div_ceil(SECTOR) * SECTOR;
                let zero_from = if first_sector < keep && splitmix(&mut rng).is_multiple_of(2) {
                    let sectors = (keep - first_sector).div_ceil(SECTOR) as u64;
                    first_sector + (splitmix(&mut rng) % sectors) as usize * SECTOR
                } else {
                    synced
                };
                n.data[zero_from..keep].fill(0);
            }
            n.synced = n.data.len();
        }
        g.live = durable.into_iter().collect();
    }
}

/// The unit a disk writes atomically: a torn write loses whole sectors.
const SECTOR: usize = 512;

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Every call goes to the `MemFs` (whose state `crash` cuts), its read queue
/// and read batching included.
impl crate::FsLayer for CrashFs {
    fn inner(&self) -> &dyn FileSystem {
        &self.mem
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::path::Path;

    use super::*;
    use crate::WriteLifetime;

    fn setup() -> CrashFs {
        let fs = CrashFs::new();
        fs.create_dir_all(Path::new("/d")).expect("mkdir");
        fs
    }

    #[test]
    fn a_crash_keeps_synced_bytes_of_durable_names_only() {
        let fs = setup();
        let mut log = fs
            .create_append(Path::new("/d/log"), WriteLifetime::Short)
            .expect("create");
        log.append(b"synced").expect("append");
        log.sync().expect("sync");
        log.append(b"-lost").expect("append");
        fs.sync_dir(Path::new("/d")).expect("sync dir");
        let mut o = fs
            .create_object(Path::new("/d/new.sst"), WriteLifetime::Long)
            .expect("create");
        o.write(b"never named durably").expect("write");
        o.finish().expect("finish");
        fs.crash();
        assert!(fs.is_down());
        assert!(fs.list(Path::new("/d")).is_err(), "down until restart");
        assert!(log.append(b"x").is_err(), "old handles are dead");
        fs.restart();
        assert_eq!(fs.read_all(Path::new("/d/log")).expect("read"), b"synced");
        assert!(!fs.exists(Path::new("/d/new.sst")).expect("exists"));
    }

    #[test]
    fn renames_and_removes_need_a_directory_sync() {
        let fs = setup();
        let mut o = fs
            .create_object(Path::new("/d/a"), WriteLifetime::NotSet)
            .expect("create");
        o.write(b"A").expect("write");
        o.finish().expect("finish");
        fs.sync_dir(Path::new("/d")).expect("sync dir");
        fs.rename(Path::new("/d/a"), Path::new("/d/b"))
            .expect("rename");
        fs.crash();
        fs.restart();
        assert!(fs.exists(Path::new("/d/a")).expect("exists"));
        assert!(!fs.exists(Path::new("/d/b")).expect("exists"));
        fs.rename(Path::new("/d/a"), Path::new("/d/b"))
            .expect("rename");
        fs.sync_dir(Path::new("/d")).expect("sync dir");
        fs.crash();
        fs.restart();
        assert!(!fs.exists(Path::new("/d/a")).expect("exists"));
        assert_eq!(fs.read_all(Path::new("/d/b")).expect("read"), b"A");
    }

    #[test]
    fn torn_tails_keep_a_prefix_of_unsynced_bytes() {
        let mut saw_partial = false;
        for seed in 0..64 {
            let fs = setup();
            let mut log = fs
                .create_append(Path::new("/d/log"), WriteLifetime::Short)
                .expect("create");
            log.append(b"0123456789").expect("append");
            log.sync().expect("sync");
            fs.sync_dir(Path::new("/d")).expect("sync dir");
            log.append(&[7u8; 100]).expect("append");
            fs.crash_with_torn_tails(seed);
            fs.restart();
            let data = fs.read_all(Path::new("/d/log")).expect("read");
            assert!(data.len() >= 10 && data.len() <= 110);
            assert_eq!(&data[..10], b"0123456789", "synced bytes are intact");
            let tail = &data[10..];
            let zeros = tail.iter().rev().take_while(|&&b| b == 0).count();
            let (kept, zeroed) = tail.split_at(tail.len() - zeros);
            assert!(kept.iter().all(|&b| b == 7), "kept bytes are a prefix");
            assert!(
                kept.is_empty() || (10 + kept.len()) % SECTOR == 0 || zeroed.is_empty(),
                "zeros start at the synced length or a sector boundary"
            );
            saw_partial |= data.len() > 10 && data.len() < 110;
        }
        assert!(saw_partial);
    }

    #[test]
    fn read_batching_and_the_read_queue_are_the_mem_fs_ones() {
        let fs = setup();
        assert!(!fs.batches_reads());
        fs.mem.set_batches_reads(true);
        assert!(fs.batches_reads(), "as the MemFs says");
        let mut o = fs
            .create_object(Path::new("/d/t"), WriteLifetime::Long)
            .expect("create");
        o.write(b"ab").expect("write");
        o.finish().expect("finish");
        let file = fs.open_random(Path::new("/d/t")).expect("open");
        let mut queue = fs.read_queue();
        queue.submit(&file, 0, 1, 0);
        queue.submit(&file, 1, 1, 1);
        let first = queue.complete();
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].tag, 1, "the MemFs queue answers the newest first");
        assert!(matches!(&first[0].result, Ok(b) if b == b"b"));
    }

    #[test]
    fn locks_are_released_by_a_crash() {
        let fs = setup();
        let held = fs.lock(Path::new("/d/LOCK")).expect("lock");
        fs.crash();
        fs.restart();
        let again = fs.lock(Path::new("/d/LOCK")).expect("lock after restart");
        drop(held);
        let err = fs.lock(Path::new("/d/LOCK")).err().expect("still held");
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        drop(again);
    }
}
