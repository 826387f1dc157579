//! What the tests of the shale crates share (a development dependency
//! only, never published): a deterministic generator, the switch of the
//! long randomized runs, the model a database is checked against, a
//! forwarding file system that wraps the files it opens, and readers of the
//! write-ahead log's records.

use std::collections::BTreeMap;

use std::io;
use std::path::Path;
use std::sync::Arc;

use shale::env::{FileSystem, MemFs, RandomAccessFile, WriteLifetime};
use shale::{ReadOptions, Readable};

/// SplitMix64: a tiny deterministic generator for randomized tests.
pub struct Rng(u64);

impl Rng {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

/// True when the long randomized tests were asked for.
pub fn long_tests() -> bool {
    std::env::var_os("SHALE_LONG_TESTS").is_some_and(|v| v != "0")
}

/// Every key and value a database or snapshot holds, by a full forward scan.
pub fn scan_all(db: &impl Readable) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut it = db.iter(&ReadOptions::default()).expect("iterator");
    it.seek_to_first();
    let mut out = BTreeMap::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().expect("scan status");
    out
}

/// How `got` differs from `want`: the first few keys missing, extra or with
/// another value.
pub fn model_diff(got: &BTreeMap<Vec<u8>, Vec<u8>>, want: &BTreeMap<Vec<u8>, Vec<u8>>) -> String {
    let mut out = Vec::new();
    for (k, v) in want {
        match got.get(k) {
            None => out.push(format!("missing {}", String::from_utf8_lossy(k))),
            Some(g) if g != v => out.push(format!("other value {}", String::from_utf8_lossy(k))),
            Some(_) => {}
        }
    }
    for k in got.keys().filter(|k| !want.contains_key(*k)) {
        out.push(format!("extra {}", String::from_utf8_lossy(k)));
    }
    let n = out.len();
    out.truncate(12);
    format!("{n} differences: {}", out.join(", "))
}

/// One record of a log (`docs/format/wal.md`).
pub struct LogRecord {
    /// Offset of its first fragment.
    pub offset: u64,
    /// `(offset, length with the 7-byte header)` of each fragment.
    pub fragments: Vec<(u64, u64)>,
    /// The record.
    pub payload: Vec<u8>,
}

/// The records of an undamaged log, by its framing: 32 KiB blocks of
/// fragments `crc:u32 len:u16 type:u8 payload`, FULL 1, FIRST 2, MIDDLE 3,
/// LAST 4, fewer than 7 bytes at a block's end zero padding.
pub fn log_records(bytes: &[u8]) -> Vec<LogRecord> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    let mut cur: Option<LogRecord> = None;
    while pos + 7 <= bytes.len() {
        let left = 32768 - pos % 32768;
        if left < 7 {
            pos += left;
            continue;
        }
        let len = u16::from_le_bytes([bytes[pos + 4], bytes[pos + 5]]) as usize;
        let kind = bytes[pos + 6];
        if kind == 0 {
            break;
        }
        let payload = &bytes[pos + 7..pos + 7 + len];
        let fragment = (pos as u64, (7 + len) as u64);
        let start = || LogRecord {
            offset: pos as u64,
            fragments: vec![fragment],
            payload: payload.to_vec(),
        };
        match kind {
            1 => out.push(start()),
            2 => cur = Some(start()),
            _ => {
                let c = cur.as_mut().expect("a record in progress");
                c.fragments.push(fragment);
                c.payload.extend_from_slice(payload);
                if kind == 4 {
                    out.extend(cur.take());
                }
            }
        }
        pos += 7 + len;
    }
    out
}

/// The keys a write batch names, in order: `seq:u64 count:u32` then ops
/// `kind:u8 key:varint-prefixed [value:varint-prefixed if kind is 1]`.
pub fn batch_keys(payload: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut p = 12;
    let varint = |p: &mut usize| {
        let mut v = 0usize;
        let mut shift = 0;
        loop {
            let b = payload[*p];
            *p += 1;
            v |= ((b & 0x7f) as usize) << shift;
            if b < 0x80 {
                return v;
            }
            shift += 7;
        }
    };
    while p < payload.len() {
        let kind = payload[p];
        p += 1;
        let n = varint(&mut p);
        out.push(payload[p..p + n].to_vec());
        p += n;
        if kind == 1 {
            let n = varint(&mut p);
            p += n;
        }
    }
    out
}

/// The state a model-based test expects.
pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// One operation of a write, as the model applies it.
#[derive(Clone, Debug)]
pub enum Op {
    /// Sets a key to a value.
    Put(Vec<u8>, Vec<u8>),
    /// Deletes a key.
    Delete(Vec<u8>),
    /// Deletes every key in `[start, end)` (nothing when `start == end`).
    DeleteRange(Vec<u8>, Vec<u8>),
}

/// The operations of one write (a batch), applied in order.
pub type Write = Vec<Op>;

/// Applies `w` to `model`.
pub fn apply(model: &mut Model, w: &Write) {
    for op in w {
        match op {
            Op::Put(k, v) => {
                model.insert(k.clone(), v.clone());
            }
            Op::Delete(k) => {
                model.remove(k);
            }
            Op::DeleteRange(start, end) => {
                if start < end {
                    let doomed: Vec<Vec<u8>> = model
                        .range(start.clone()..end.clone())
                        .map(|(k, _)| k.clone())
                        .collect();
                    for k in doomed {
                        model.remove(&k);
                    }
                }
            }
        }
    }
}

/// The names in the database directory `/db` of `fs` that end in `suffix`,
/// sorted.
pub fn files(fs: &MemFs, suffix: &str) -> Vec<String> {
    let mut v: Vec<String> = fs
        .list(Path::new("/db"))
        .expect("list")
        .into_iter()
        .filter(|n| n.ends_with(suffix))
        .collect();
    v.sort();
    v
}

/// Flips bits of the byte at `offset` of `/db/name` (rewriting the file).
pub fn xor_byte(fs: &MemFs, name: &str, offset: u64, xor: u8) {
    let p = Path::new("/db").join(name);
    let mut data = fs.read_all(&p).expect("read");
    data[offset as usize] ^= xor;
    fs.remove(&p).expect("remove");
    let mut w = fs.create_object(&p, WriteLifetime::NotSet).expect("create");
    w.write(&data).expect("write");
    w.finish().expect("finish");
}

/// How a file handed to [`WrapReads`]'s wrapper was opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opened {
    /// `open_random`: Gets, iterators, the table cache.
    Random,
    /// `open_scan`: a compaction's inputs.
    Scan,
}

/// A `MemFs` whose random-access files pass through `wrap` (given the path,
/// how it was opened and the file) as they open: a test wraps them to log or
/// count reads. Every other call goes to the `MemFs` as is.
pub struct WrapReads<F> {
    /// The file system underneath.
    pub inner: MemFs,
    /// Wraps each random-access file as it opens.
    pub wrap: F,
}

/// Wraps the files `open_random` and `open_scan` return; every other call
/// (the `MemFs`'s read queue and read batching included) goes to the `MemFs`.
impl<F> shale::env::FsLayer for WrapReads<F>
where
    F: Fn(&Path, Opened, Arc<dyn RandomAccessFile>) -> Arc<dyn RandomAccessFile>
        + Send
        + Sync
        + 'static,
{
    fn inner(&self) -> &dyn FileSystem {
        &self.inner
    }
    fn open_random(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        Ok((self.wrap)(
            path,
            Opened::Random,
            self.inner.open_random(path)?,
        ))
    }
    fn open_scan(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        Ok((self.wrap)(path, Opened::Scan, self.inner.open_scan(path)?))
    }
}
