//! Files: the write side (append files and objects), the read side, the
//! in-process locks, and the [`FileSystem`] implementation of [`ZoneFs`].

use std::collections::BTreeSet;
use std::io;
use std::path::Path;
use std::sync::Arc;

use shale_env::{AppendFile, FileLock, FileSystem, ObjectWriter, RandomAccessFile, WriteLifetime};

use super::alloc::slot_of;
use super::format::{self, Enc, Extent};
use super::meta::{extents_of, read_map, FileMap};
use super::{lock, Inner, ZoneFs, ZoneFsError};

fn lifetime_code(h: WriteLifetime) -> u8 {
    match h {
        WriteLifetime::NotSet => 0,
        WriteLifetime::Short => 1,
        WriteLifetime::Medium => 2,
        WriteLifetime::Long => 3,
        WriteLifetime::Extreme => 4,
    }
}

pub(super) fn path_key(path: &Path) -> io::Result<String> {
    let s = path.to_str().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not UTF-8", path.display()),
        )
    })?;
    let trimmed = s.trim_end_matches('/');
    let s = if trimmed.is_empty() && s.starts_with('/') {
        "/"
    } else {
        trimmed
    };
    if s.len() > 4096 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "path too long"));
    }
    Ok(s.to_string())
}

fn parent_of(key: &str) -> &str {
    match key.rfind('/') {
        Some(0) => "/",
        Some(i) => &key[..i],
        None => "",
    }
}

pub(super) fn not_found(key: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{key}: no such file"))
}

impl ZoneFs {
    fn create(&self, path: &Path, hint: WriteLifetime, exclusive: bool) -> io::Result<Writer> {
        self.inner.writable()?;
        let key = path_key(path)?;
        let mut st = lock(&self.inner.state);
        st.usable()?;
        if exclusive && st.files.contains_key(&key) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{key}: exists"),
            ));
        }
        let id = st.next_id;
        if id == u64::MAX {
            return Err(io::Error::other(format!(
                "{key}: every file id has been given out"
            )));
        }
        let lt = lifetime_code(hint);
        st.apply_create(id, key.clone(), lt, true);
        let mut e = Enc::default();
        e.u8(format::KIND_CREATE);
        e.u64(id);
        e.name(&key);
        e.u8(lt);
        st.push_record(&e.0, self.inner.block as usize);
        let slots = st.open.len();
        Ok(Writer {
            inner: self.inner.clone(),
            id,
            lifetime: lt,
            slot: slot_of(lt, slots),
            buf: Vec::new(),
            len: 0,
            recorded: 0,
            pending: Vec::new(),
            started: false,
            failed: false,
        })
    }
}

/// The write side shared by append files and objects.
struct Writer {
    inner: Arc<Inner>,
    id: u64,
    lifetime: u8,
    slot: usize,
    buf: Vec<u8>,
    len: u64,
    /// The size last recorded in the metadata.
    recorded: u64,
    /// Extents written but not recorded in the metadata yet.
    pending: Vec<Extent>,
    /// A device write failed: buffered bytes may be lost, so every later
    /// write and sync fails rather than record a size its extents lack.
    failed: bool,
    /// The file's first bytes went to the device (where the finish
    /// threshold is applied).
    started: bool,
}

/// Buffered bytes above which whole blocks are written out.
const WRITE_CHUNK: usize = 64 << 10;

impl Writer {
    fn check(&self) -> io::Result<()> {
        if self.failed {
            return Err(io::Error::other(
                "an earlier write of this file failed; it cannot be written or synced",
            ));
        }
        Ok(())
    }

    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        self.check()?;
        self.buf.extend_from_slice(data);
        self.len += data.len() as u64;
        if self.buf.len() >= WRITE_CHUNK {
            self.write_out(false)?;
        }
        Ok(())
    }

    /// Writes the whole blocks of the buffer (and the padded tail if `all`).
    fn write_out(&mut self, all: bool) -> io::Result<()> {
        let block = self.inner.block as usize;
        let whole = self.buf.len() / block * block;
        let (n, pad) = if all && whole < self.buf.len() {
            let n = whole + block;
            (n, n - self.buf.len())
        } else {
            (whole, 0)
        };
        if n == 0 {
            return Ok(());
        }
        let mut data = std::mem::take(&mut self.buf);
        let rest = if pad == 0 {
            data.split_off(n)
        } else {
            Vec::new()
        };
        data.resize(n, 0);
        let mut done = 0;
        let mut slot = lock(&self.inner.slots[self.slot]);
        if !self.started {
            self.started = true;
            if let Err(e) = self.inner.finish_if_nearly_full(&slot) {
                self.failed = true;
                return Err(e.into());
            }
        }
        let r = loop {
            let r = self.inner.write_blocks(
                &slot,
                self.lifetime,
                false,
                &data,
                pad,
                &mut self.pending,
                &mut done,
            );
            if !matches!(r, Err(ZoneFsError::DeviceFull)) {
                break r;
            }
            // No zone for host writes: wait for (or run) a collection
            // round, and go on if it left more than the reserve free. The
            // slot lock comes after `gc_lock` in the lock order: dropped.
            drop(slot);
            let target = self.inner.low_water(&lock(&self.inner.state));
            let mut collected = self.inner.collect(target);
            slot = lock(&self.inner.slots[self.slot]);
            // Zones the round freed may still be resetting in another
            // thread's log sync: wait for it (the log lock) before counting.
            if collected.is_ok() && lock(&self.inner.state).resets_waiting() {
                collected = self.inner.log_sync().map(|()| Default::default());
            }
            let free = lock(&self.inner.state).free_zones();
            match collected {
                Ok(_) if free > self.inner.gc.reserve_zones as usize => {}
                Ok(_) => break r,
                Err(e) => break Err(e),
            }
        };
        drop(slot);
        self.buf = rest;
        if r.is_err() {
            self.failed = true;
        }
        r.map_err(io::Error::from)
    }

    /// Data, device sync, extents record, device sync.
    fn sync(&mut self) -> io::Result<()> {
        self.check()?;
        self.write_out(true)?;
        if !self.pending.is_empty() || self.recorded != self.len {
            // No lock held: other files' writes and syncs go on meanwhile.
            if let Err(e) = self.inner.dev.sync() {
                let e = ZoneFsError::from(e);
                lock(&self.inner.state).poison(&e);
                self.failed = true;
                return Err(e.into());
            }
            let mut st = lock(&self.inner.state);
            let xs = std::mem::take(&mut self.pending);
            if st.apply_extents(self.id, self.len, &xs) {
                let mut e = Enc::default();
                e.u8(format::KIND_EXTENTS);
                e.u64(self.id);
                e.u64(self.len);
                e.u32(xs.len() as u32);
                for x in &xs {
                    e.extent(x);
                }
                st.push_record(&e.0, self.inner.block as usize);
                self.recorded = self.len;
            } else {
                st.release(&xs, true);
            }
        }
        self.inner.log_sync().map_err(io::Error::from)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if !self.pending.is_empty() {
            let xs = std::mem::take(&mut self.pending);
            lock(&self.inner.state).release(&xs, true);
        }
    }
}

impl AppendFile for Writer {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.write(data)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        Writer::sync(self)
    }
    fn len(&self) -> u64 {
        self.len
    }
}

impl ObjectWriter for Writer {
    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        Writer::write(self, data)
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn finish(mut self: Box<Self>) -> io::Result<()> {
        Writer::sync(&mut self)
    }
    fn abort(mut self: Box<Self>) -> io::Result<()> {
        let xs = std::mem::take(&mut self.pending);
        let mut st = lock(&self.inner.state);
        st.release(&xs, true);
        if let Some(name) = st.ids.get(&self.id).cloned() {
            st.drop_file(&name, true);
            let mut e = Enc::default();
            e.u8(format::KIND_DELETE);
            e.name(&name);
            st.push_record(&e.0, self.inner.block as usize);
        }
        Ok(())
    }
}

/// A file opened for reads, with the file's size as of the open. It shares
/// the file's extent map, so it reads moved extents where the collector put
/// them; a file removed while open stays readable (its zones are reset only
/// after the last reader is dropped), as on a POSIX file system.
struct Reader {
    inner: Arc<Inner>,
    id: u64,
    /// The file's extent map, shared with its entry (taken out in `drop`,
    /// under the state lock).
    map: Option<Arc<FileMap>>,
    size: u64,
}

impl RandomAccessFile for Reader {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.size)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "read of {} bytes at {offset} past the end of a {}-byte file",
                        buf.len(),
                        self.size
                    ),
                )
            })?;
        let Some(map) = &self.map else {
            return Err(io::Error::other("file handle closed"));
        };
        // Held across the device reads: the collector cannot reset a zone
        // this read is in (it swaps extents under the write lock first).
        let extents = read_map(map);
        let mut pos = offset;
        let mut i = extents.partition_point(|(start, x)| start + x.len <= pos);
        while pos < end {
            let Some(&(start, x)) = extents.get(i) else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "file extents end before its size",
                ));
            };
            let within = pos - start;
            let n = (x.len - within).min(end - pos);
            let dst = &mut buf[(pos - offset) as usize..(pos - offset + n) as usize];
            self.inner
                .dev
                .read_at(self.inner.zone_start(x.zone) + x.offset + within, dst)
                .map_err(io::Error::from)?;
            pos += n;
            i += 1;
        }
        Ok(())
    }
    fn size(&self) -> u64 {
        self.size
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let mut st = lock(&self.inner.state);
        drop(self.map.take());
        // The last reader of a removed file releases its extents.
        if st
            .zombies
            .get(&self.id)
            .is_some_and(|m| Arc::strong_count(m) == 1)
        {
            if let Some(m) = st.zombies.remove(&self.id) {
                st.release(&extents_of(&m), true);
            }
        }
    }
}

struct ZLock {
    inner: Arc<Inner>,
    key: String,
}

impl FileLock for ZLock {}

impl Drop for ZLock {
    fn drop(&mut self) {
        let mut locks = lock(&self.inner.locks);
        if let Some(n) = locks.get_mut(&self.key) {
            // usize::MAX marks the exclusive holder.
            if *n == usize::MAX || *n <= 1 {
                locks.remove(&self.key);
            } else {
                *n -= 1;
            }
        }
    }
}

impl ZoneFs {
    fn take_lock(&self, path: &Path, exclusive: bool) -> io::Result<Box<dyn FileLock>> {
        let key = path_key(path)?;
        {
            let mut locks = lock(&self.inner.locks);
            let held = locks.get(&key).copied().unwrap_or(0);
            let busy = if exclusive {
                held != 0
            } else {
                held == usize::MAX
            };
            if busy {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!("{key}: locked"),
                ));
            }
            locks.insert(key.clone(), if exclusive { usize::MAX } else { held + 1 });
        }
        let exists = lock(&self.inner.state).files.contains_key(&key);
        if !exists {
            // The lock file exists as an empty file, as on a POSIX system.
            if let Err(e) = self.create(path, WriteLifetime::NotSet, false) {
                drop(ZLock {
                    inner: self.inner.clone(),
                    key,
                });
                return Err(e);
            }
        }
        Ok(Box::new(ZLock {
            inner: self.inner.clone(),
            key,
        }))
    }
}

impl FileSystem for ZoneFs {
    fn create_append(&self, path: &Path, hint: WriteLifetime) -> io::Result<Box<dyn AppendFile>> {
        Ok(Box::new(self.create(path, hint, false)?))
    }

    fn create_object(&self, path: &Path, hint: WriteLifetime) -> io::Result<Box<dyn ObjectWriter>> {
        Ok(Box::new(self.create(path, hint, true)?))
    }

    fn open_random(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        let key = path_key(path)?;
        let st = lock(&self.inner.state);
        let f = st.files.get(&key).ok_or_else(|| not_found(&key))?;
        let mapped = read_map(&f.map).last().map_or(0, |(s, x)| s + x.len);
        Ok(Arc::new(Reader {
            inner: self.inner.clone(),
            id: f.id,
            map: Some(f.map.clone()),
            size: f.size.min(mapped),
        }))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let key = path_key(dir)?;
        let st = lock(&self.inner.state);
        let mut out = BTreeSet::new();
        let mut found = st.dirs.contains(&key);
        for name in st.files.keys().chain(st.dirs.iter()) {
            if parent_of(name) == key && name != &key {
                found = true;
                let base = name.rsplit('/').next().unwrap_or(name);
                out.insert(base.to_string());
            }
        }
        if !found {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{key}: no such directory"),
            ));
        }
        Ok(out.into_iter().collect())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.writable()?;
        let (f, t) = (path_key(from)?, path_key(to)?);
        let mut st = lock(&self.inner.state);
        if !st.apply_rename(&f, t.clone(), true) {
            return Err(not_found(&f));
        }
        let mut e = Enc::default();
        e.u8(format::KIND_RENAME);
        e.name(&f);
        e.name(&t);
        st.push_record(&e.0, self.inner.block as usize);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.writable()?;
        let key = path_key(path)?;
        let mut st = lock(&self.inner.state);
        if !st.drop_file(&key, true) {
            return Err(not_found(&key));
        }
        let mut e = Enc::default();
        e.u8(format::KIND_DELETE);
        e.name(&key);
        st.push_record(&e.0, self.inner.block as usize);
        Ok(())
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let key = path_key(dir)?;
        let mut st = lock(&self.inner.state);
        if !st.dirs.contains(&key) && key != "/" && !key.is_empty() {
            self.inner.writable()?;
        }
        let mut cur = key.as_str();
        while !cur.is_empty() && cur != "/" && !st.dirs.contains(cur) {
            st.dirs.insert(cur.to_string());
            let mut e = Enc::default();
            e.u8(format::KIND_MKDIR);
            e.name(cur);
            st.push_record(&e.0, self.inner.block as usize);
            cur = parent_of(cur);
        }
        Ok(())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let key = path_key(path)?;
        let st = lock(&self.inner.state);
        Ok(key.is_empty() || key == "/" || st.files.contains_key(&key) || st.dirs.contains(&key))
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        let key = path_key(path)?;
        let st = lock(&self.inner.state);
        st.files
            .get(&key)
            .map(|f| f.size)
            .ok_or_else(|| not_found(&key))
    }

    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        self.sync_metadata()
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        self.take_lock(path, true)
    }

    fn lock_shared(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        self.take_lock(path, false)
    }
}
