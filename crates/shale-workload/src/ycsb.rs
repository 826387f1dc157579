//! YCSB's core workloads A–F: which operation comes next, on which record,
//! with YCSB's own definitions (its `workloads/workload[a-f]` property files
//! and its `CoreWorkload`), so that a run on shale is comparable to published
//! YCSB figures of other engines.
//!
//! # Workloads
//!
//! | workload | operations | request distribution |
//! |---|---|---|
//! | A | 50% read, 50% update | scrambled Zipfian |
//! | B | 95% read, 5% update | scrambled Zipfian |
//! | C | 100% read | scrambled Zipfian |
//! | D | 95% read, 5% insert | latest |
//! | E | 95% scan, 5% insert; scan length uniform in 1..=100 | scrambled Zipfian |
//! | F | 50% read, 50% read-modify-write | scrambled Zipfian |
//!
//! An operation is chosen as YCSB's discrete generator does: `u := f64() *
//! total` and the first of read, update, insert, scan, read-modify-write whose
//! running sum of proportions exceeds `u`.
//!
//! # Records
//!
//! Record `k` (its *key number*; the load writes `0..records`, inserts take
//! the next numbers) has the key `"user" + decimal(fnv64(k))` ([`key_name`]:
//! YCSB's `insertorder=hashed`, with no zero padding) and a value of
//! `field_count` fields of `field_length` bytes (10 × 100 by default: 1,000
//! bytes). The value is the fields concatenated in order, nothing else (no
//! field names or lengths: every field has the same length). Field `j` of
//! record `k` at version `v` is `field_length` bytes of a splitmix64 stream
//! ([`Values::fill_field`]):
//!
//! ```text
//! state := mix64(seed XOR mix64(k) XOR mix64((v << 16) + j + 1))
//! for each 8-byte chunk:
//!     state := state + 0x9E37_79B9_7F4A_7C15   (wrapping)
//!     chunk := little-endian bytes of mix64(state)   (the last chunk truncated)
//! ```
//!
//! The load writes every field at version 0. An update (and the write of a
//! read-modify-write) replaces one field, chosen uniformly, with its content
//! at a fresh non-zero version drawn by the thread's generator.
//!
//! # Request distributions
//!
//! * **scrambled Zipfian** (YCSB's `ScrambledZipfianGenerator`): a Zipfian
//!   item `z` over YCSB's fixed item count of 10^10 (+1) with the constant
//!   0.99 and its precomputed `zeta(10^10, 0.99) = 26.46902820178302`, drawn
//!   by the method of Gray et al. (below), then `k := fnv64(z) mod m` where
//!   `m = records + expected new keys + 1` and the expected new keys are
//!   `floor(operations × insert proportion × 2)` (as YCSB sizes it); a `k`
//!   past the last inserted record is drawn again. Item 0 (the most popular)
//!   thus gets `1/26.469 = 3.78%` of the requests, item 1 `0.5^0.99` of that.
//! * **latest** (YCSB's `SkewedLatestGenerator`): `last` is the highest key
//!   number all of whose predecessors are inserted; `k := last - z` with `z` a
//!   Zipfian item (constant 0.99) over `last` items, so the newest record is
//!   the most popular. The zeta sum is computed once for the records loaded
//!   and extended term by term as records are inserted.
//! * **uniform**: `k := below(records)` over the loaded records.
//!
//! The Zipfian draw (Gray et al., "Quickly generating billion-record synthetic
//! databases", SIGMOD 1994, as YCSB's `ZipfianGenerator` does it) over `n`
//! items with constant `θ` and `ζ(n) = Σ_{i=1..n} i^-θ`:
//!
//! ```text
//! α := 1 / (1 - θ);  η := (1 - (2/n)^(1-θ)) / (1 - ζ(2)/ζ(n))
//! u := f64();  uz := u × ζ(n)
//! uz < 1              -> 0
//! uz < 1 + 0.5^θ      -> 1
//! otherwise           -> floor(n × (η u - η + 1)^α)
//! ```
//!
//! Items 0 and 1 get exactly the Zipfian shares `1/ζ(n)` and `2^-θ/ζ(n)`;
//! items from 2 on get the approximation's shares
//! (`[((i+1)/n)^(1-θ) - (i/n)^(1-θ)] / η`, which [`gray_share`] computes).
//!
//! `fnv64` is YCSB's `Utils.fnvhash64`: 64-bit FNV-1a over the 8 little-endian
//! bytes of the number, then the absolute value as a signed 64-bit integer
//! ([`fnv64`]).
//!
//! # Threads and determinism
//!
//! [`Shared`] holds what the threads of one run share: the records loaded, the
//! insert counter ([`Shared::next_insert`] hands out key numbers,
//! [`Shared::acknowledge`] marks them written) and the precomputed zeta of the
//! latest distribution. Each thread owns a [`Generator`] seeded with `seed +
//! thread` (wrapping), drawing from [`Rng`] (splitmix64). A single thread's
//! sequence of operations is a function of the seed alone; with several
//! threads the key numbers inserts get, and what `latest` sees as the newest
//! record, depend on how the threads interleave.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::dist::Rng;
use crate::{mix64, GAMMA};

/// Fields per record (YCSB's `fieldcount` default).
pub const DEFAULT_FIELD_COUNT: usize = 10;
/// Bytes per field (YCSB's `fieldlength` default).
pub const DEFAULT_FIELD_LENGTH: usize = 100;
/// YCSB's Zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// YCSB's item count of the scrambled Zipfian (10^10).
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;
/// YCSB's precomputed `zeta(10^10, 0.99)`.
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;
/// Longest scan of workload E (YCSB's `maxscanlength`).
pub const MAX_SCAN_LENGTH: u64 = 100;
/// Prefix of every record key.
pub const KEY_PREFIX: &str = "user";

const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 bytes of `value`, least
/// significant first, then the absolute value as an `i64`. (For the single
/// hash equal to `i64::MIN` Java's `Math.abs` stays negative, which YCSB
/// would turn into a negative key number; here it is `2^63`.)
pub fn fnv64(value: u64) -> u64 {
    let mut hash = FNV_OFFSET_BASIS_64;
    let mut v = value;
    for _ in 0..8 {
        hash ^= v & 0xff;
        hash = hash.wrapping_mul(FNV_PRIME_64);
        v >>= 8;
    }
    (hash as i64).unsigned_abs()
}

/// The key of record `keynum`: `"user"` followed by `fnv64(keynum)` in decimal.
pub fn key_name(keynum: u64) -> String {
    format!("{KEY_PREFIX}{}", fnv64(keynum))
}

/// Writes the key of record `keynum` into `out` (cleared first).
pub fn key_into(keynum: u64, out: &mut Vec<u8>) {
    use std::io::Write;
    out.clear();
    // Writing to a Vec cannot fail.
    let _ = write!(out, "{KEY_PREFIX}{}", fnv64(keynum));
}

/// One of YCSB's core workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Workload {
    /// Update heavy: 50% read, 50% update, Zipfian.
    A,
    /// Read mostly: 95% read, 5% update, Zipfian.
    B,
    /// Read only, Zipfian.
    C,
    /// Read latest: 95% read, 5% insert, latest.
    D,
    /// Short ranges: 95% scan, 5% insert, Zipfian.
    E,
    /// Read-modify-write: 50% read, 50% read-modify-write, Zipfian.
    F,
}

impl Workload {
    /// Every workload, in order.
    pub const ALL: [Workload; 6] = [
        Workload::A,
        Workload::B,
        Workload::C,
        Workload::D,
        Workload::E,
        Workload::F,
    ];

    /// The lower-case letter.
    pub fn letter(self) -> &'static str {
        match self {
            Workload::A => "a",
            Workload::B => "b",
            Workload::C => "c",
            Workload::D => "d",
            Workload::E => "e",
            Workload::F => "f",
        }
    }

    /// Its operation mix and request distribution.
    pub fn spec(self) -> Spec {
        let none = Spec {
            read: 0.0,
            update: 0.0,
            insert: 0.0,
            scan: 0.0,
            read_modify_write: 0.0,
            distribution: RequestDistribution::Zipfian,
        };
        match self {
            Workload::A => Spec {
                read: 0.5,
                update: 0.5,
                ..none
            },
            Workload::B => Spec {
                read: 0.95,
                update: 0.05,
                ..none
            },
            Workload::C => Spec { read: 1.0, ..none },
            Workload::D => Spec {
                read: 0.95,
                insert: 0.05,
                distribution: RequestDistribution::Latest,
                ..none
            },
            Workload::E => Spec {
                scan: 0.95,
                insert: 0.05,
                ..none
            },
            Workload::F => Spec {
                read: 0.5,
                read_modify_write: 0.5,
                ..none
            },
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.letter())
    }
}

/// A workload name that is none of a–f.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownWorkload(pub String);

impl fmt::Display for UnknownWorkload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown YCSB workload {:?} (expected one of a, b, c, d, e, f)",
            self.0
        )
    }
}

impl std::error::Error for UnknownWorkload {}

impl FromStr for Workload {
    type Err = UnknownWorkload;

    /// `a`..`f`, also `workloada` and upper case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        let letter = t.strip_prefix("workload").unwrap_or(&t);
        Workload::ALL
            .into_iter()
            .find(|w| w.letter() == letter)
            .ok_or_else(|| UnknownWorkload(s.to_string()))
    }
}

/// How the records of reads, updates and scans are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestDistribution {
    /// YCSB's scrambled Zipfian.
    Zipfian,
    /// Skewed toward the newest record.
    Latest,
    /// Every loaded record alike.
    Uniform,
}

/// The operation mix and request distribution of a workload. Proportions
/// add up to 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spec {
    /// Share of reads.
    pub read: f64,
    /// Share of updates.
    pub update: f64,
    /// Share of inserts.
    pub insert: f64,
    /// Share of scans.
    pub scan: f64,
    /// Share of read-modify-writes.
    pub read_modify_write: f64,
    /// Which records they touch.
    pub distribution: RequestDistribution,
}

impl Spec {
    /// `(kind, proportion)` in YCSB's order.
    fn weights(&self) -> [(OpKind, f64); 5] {
        [
            (OpKind::Read, self.read),
            (OpKind::Update, self.update),
            (OpKind::Insert, self.insert),
            (OpKind::Scan, self.scan),
            (OpKind::ReadModifyWrite, self.read_modify_write),
        ]
    }

    /// The share of operations of `kind`.
    pub fn proportion(&self, kind: OpKind) -> f64 {
        self.weights()
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(0.0, |(_, p)| *p)
    }
}

/// The kind of an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// Read a whole record.
    Read,
    /// Replace one field of a record.
    Update,
    /// Write a new record.
    Insert,
    /// Read records in key order from a start key.
    Scan,
    /// Read a record, then update one of its fields.
    ReadModifyWrite,
}

impl OpKind {
    /// Every kind, in YCSB's order.
    pub const ALL: [OpKind; 5] = [
        OpKind::Read,
        OpKind::Update,
        OpKind::Insert,
        OpKind::Scan,
        OpKind::ReadModifyWrite,
    ];

    /// `"read"`, `"update"`, `"insert"`, `"scan"` or `"read-modify-write"`.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Update => "update",
            OpKind::Insert => "insert",
            OpKind::Scan => "scan",
            OpKind::ReadModifyWrite => "read-modify-write",
        }
    }
}

/// One operation to perform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Read record `keynum`.
    Read {
        /// The record.
        keynum: u64,
    },
    /// Replace field `field` of record `keynum` with its content at `version`.
    Update {
        /// The record.
        keynum: u64,
        /// The field, `0..field_count`.
        field: usize,
        /// The field's new version (non-zero).
        version: u64,
    },
    /// Write record `keynum` (all fields at version 0), then
    /// [`Shared::acknowledge`] it.
    Insert {
        /// The new record's number.
        keynum: u64,
    },
    /// Read `length` records in key order from the key of `keynum`.
    Scan {
        /// The record whose key starts the scan.
        keynum: u64,
        /// Records to read, `1..=MAX_SCAN_LENGTH`.
        length: u64,
    },
    /// Read record `keynum`, then update its field `field` to `version`.
    ReadModifyWrite {
        /// The record.
        keynum: u64,
        /// The field, `0..field_count`.
        field: usize,
        /// The field's new version (non-zero).
        version: u64,
    },
}

impl Operation {
    /// Its kind.
    pub fn kind(&self) -> OpKind {
        match self {
            Operation::Read { .. } => OpKind::Read,
            Operation::Update { .. } => OpKind::Update,
            Operation::Insert { .. } => OpKind::Insert,
            Operation::Scan { .. } => OpKind::Scan,
            Operation::ReadModifyWrite { .. } => OpKind::ReadModifyWrite,
        }
    }
}

/// The record values of a run: `field_count` fields of `field_length` bytes;
/// see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Values {
    /// Fields per record.
    pub field_count: usize,
    /// Bytes per field.
    pub field_length: usize,
    /// Seed of the field contents.
    pub seed: u64,
}

impl Default for Values {
    fn default() -> Self {
        Values {
            field_count: DEFAULT_FIELD_COUNT,
            field_length: DEFAULT_FIELD_LENGTH,
            seed: 0,
        }
    }
}

impl Values {
    /// Bytes of a record's value.
    pub fn record_len(&self) -> usize {
        self.field_count * self.field_length
    }

    /// Fills `out` (whatever its length) with the stream of field `field`
    /// of record `keynum` at `version`.
    pub fn fill_field(&self, keynum: u64, field: usize, version: u64, out: &mut [u8]) {
        let salt = (version << 16).wrapping_add(field as u64).wrapping_add(1);
        let mut state = mix64(self.seed ^ mix64(keynum) ^ mix64(salt));
        for chunk in out.chunks_mut(8) {
            state = state.wrapping_add(GAMMA);
            for (dst, src) in chunk.iter_mut().zip(mix64(state).to_le_bytes()) {
                *dst = src;
            }
        }
    }

    /// The value of record `keynum` as loaded (every field at version 0).
    pub fn record(&self, keynum: u64) -> Vec<u8> {
        let mut v = vec![0u8; self.record_len()];
        self.fill_record(keynum, &mut v);
        v
    }

    /// Fills `out` (resized to the record length) with record `keynum` as
    /// loaded.
    pub fn fill_record(&self, keynum: u64, out: &mut Vec<u8>) {
        out.resize(self.record_len(), 0);
        if self.field_length == 0 {
            return;
        }
        for (j, field) in out.chunks_mut(self.field_length).enumerate() {
            self.fill_field(keynum, j, 0, field);
        }
    }

    /// Replaces field `field` of `record` (a whole record value) with its
    /// content at `version`. A record of the wrong length is left alone and
    /// `false` returned.
    pub fn update_field(&self, keynum: u64, field: usize, version: u64, record: &mut [u8]) -> bool {
        if record.len() != self.record_len() || field >= self.field_count {
            return false;
        }
        let start = field * self.field_length;
        match record.get_mut(start..start + self.field_length) {
            Some(slot) => {
                self.fill_field(keynum, field, version, slot);
                true
            }
            None => false,
        }
    }
}

/// `ζ(n, θ) = Σ_{i=1..n} i^-θ`, summed from `from_n` (whose sum is
/// `from_sum`) up to `n`.
fn zeta_extend(from_n: u64, from_sum: f64, n: u64, theta: f64) -> f64 {
    let mut sum = from_sum;
    for i in from_n..n {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    sum
}

/// `ζ(n, θ)`, summed term by term (O(n)).
pub fn zeta(n: u64, theta: f64) -> f64 {
    zeta_extend(0, 0.0, n, theta)
}

/// Gray et al.'s Zipfian generator as YCSB's `ZipfianGenerator` runs it; see
/// the module documentation.
#[derive(Clone, Debug, PartialEq)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    zeta2: f64,
    eta: f64,
}

impl Zipfian {
    /// A generator over `items` items (`items >= 2`) with constant `theta`
    /// (`0 < theta < 1`) and the precomputed `zetan = ζ(items, theta)`.
    pub fn with_zeta(items: u64, theta: f64, zetan: f64) -> Zipfian {
        let zeta2 = zeta(2, theta);
        let mut z = Zipfian {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            zeta2,
            eta: 0.0,
        };
        z.eta = z.eta_for(items, zetan);
        z
    }

    /// YCSB's scrambled Zipfian's inner generator: `10^10 + 1` items, 0.99,
    /// YCSB's precomputed zeta.
    pub fn ycsb_scrambled() -> Zipfian {
        Zipfian::with_zeta(SCRAMBLED_ITEM_COUNT + 1, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN)
    }

    fn eta_for(&self, items: u64, zetan: f64) -> f64 {
        (1.0 - (2.0 / items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / zetan)
    }

    /// The item count.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// `ζ(items, θ)`.
    pub fn zetan(&self) -> f64 {
        self.zetan
    }

    /// Grows the item count to `items`, extending the zeta sum by the new
    /// terms (a smaller count is ignored, as YCSB does by default).
    pub fn grow_to(&mut self, items: u64) {
        if items > self.items {
            self.zetan = zeta_extend(self.items, self.zetan, items, self.theta);
            self.items = items;
            self.eta = self.eta_for(items, self.zetan);
        }
    }

    /// One item in `0..items` (0 the most popular).
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let u = rng.next_f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        let x = (self.items as f64) * (self.eta * u - self.eta + 1.0).powf(self.alpha);
        (x as u64).min(self.items.saturating_sub(1))
    }

    /// The exact probability that [`Zipfian::sample`] returns `item`.
    pub fn share(&self, item: u64) -> f64 {
        gray_share(self.items, self.theta, self.zetan, item)
    }
}

/// The probability that Gray et al.'s generator over `items` items with
/// constant `theta` and zeta `zetan` returns `item`: `1/zetan` for 0,
/// `0.5^θ/zetan` for 1, and for `i >= 2` the measure of the `u` that the
/// formula maps to `i`: `[((i+1)/n)^(1-θ) - max((i/n)^(1-θ), x0)] / η`, where
/// `x0` is where the formula starts.
pub fn gray_share(items: u64, theta: f64, zetan: f64, item: u64) -> f64 {
    let n = items as f64;
    let zeta2 = 1.0 + 0.5f64.powf(theta);
    match item {
        0 => 1.0 / zetan,
        1 => 0.5f64.powf(theta) / zetan,
        i => {
            let eta = (1.0 - (2.0 / n).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
            let u0 = zeta2 / zetan;
            let x0 = eta * u0 - eta + 1.0;
            let lo = (i as f64 / n).powf(1.0 - theta).max(x0);
            let hi = ((i + 1) as f64 / n).powf(1.0 - theta);
            ((hi - lo) / eta).max(0.0)
        }
    }
}

/// What the threads of one run share.
#[derive(Debug)]
pub struct Shared {
    spec: Spec,
    records: u64,
    /// Key numbers `0..scramble_range` are what the scrambled Zipfian hashes
    /// into.
    scramble_range: u64,
    next_insert: AtomicU64,
    /// Every key number below it is written.
    acknowledged: AtomicU64,
    pending: Mutex<BTreeSet<u64>>,
    /// The latest distribution's generator over the records present at the
    /// start, cloned into each thread's generator.
    latest: Option<Zipfian>,
}

impl Shared {
    /// A run of `operations` operations of `workload` over a database holding
    /// records `0..present` of which `0..records` were loaded (the others
    /// inserted by earlier runs).
    pub fn new(workload: Workload, records: u64, present: u64, operations: u64) -> Shared {
        Shared::with_spec(workload.spec(), records, present, operations)
    }

    /// As [`Shared::new`] with any operation mix and distribution.
    pub fn with_spec(spec: Spec, records: u64, present: u64, operations: u64) -> Shared {
        let present = present.max(records);
        let expected_new = (operations as f64 * spec.insert * 2.0) as u64;
        let latest = (spec.distribution == RequestDistribution::Latest).then(|| {
            let items = present.saturating_sub(1).max(2);
            Zipfian::with_zeta(items, ZIPFIAN_CONSTANT, zeta(items, ZIPFIAN_CONSTANT))
        });
        Shared {
            spec,
            records,
            scramble_range: records + expected_new + 1,
            next_insert: AtomicU64::new(present),
            acknowledged: AtomicU64::new(present),
            pending: Mutex::new(BTreeSet::new()),
            latest,
        }
    }

    /// The operation mix.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// Records loaded.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Takes the next key number to insert.
    pub fn next_insert(&self) -> u64 {
        self.next_insert.fetch_add(1, Ordering::Relaxed)
    }

    /// Key numbers handed out so far (the next one to insert): records
    /// present once every insert is acknowledged.
    pub fn inserted_up_to(&self) -> u64 {
        self.next_insert.load(Ordering::Relaxed)
    }

    /// Marks record `keynum` (from [`Shared::next_insert`]) as written.
    pub fn acknowledge(&self, keynum: u64) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.insert(keynum);
        let mut limit = self.acknowledged.load(Ordering::Relaxed);
        while pending.remove(&limit) {
            limit += 1;
        }
        self.acknowledged.store(limit, Ordering::Release);
    }

    /// The highest key number all of whose predecessors are written (the
    /// newest record reads may ask for).
    pub fn last(&self) -> u64 {
        self.acknowledged.load(Ordering::Acquire).saturating_sub(1)
    }
}

/// One thread's operation generator.
#[derive(Clone, Debug)]
pub struct Generator<'a> {
    shared: &'a Shared,
    rng: Rng,
    scrambled: Zipfian,
    latest: Option<Zipfian>,
    field_count: usize,
}

impl<'a> Generator<'a> {
    /// The generator of thread `thread` of a run with `seed`, for records of
    /// `field_count` fields.
    pub fn new(shared: &'a Shared, seed: u64, thread: u64, field_count: usize) -> Generator<'a> {
        Generator {
            shared,
            rng: Rng::new(seed.wrapping_add(thread)),
            scrambled: Zipfian::ycsb_scrambled(),
            latest: shared.latest.clone(),
            field_count: field_count.max(1),
        }
    }

    /// The next operation.
    pub fn next_op(&mut self) -> Operation {
        let kind = self.next_kind();
        match kind {
            OpKind::Read => Operation::Read {
                keynum: self.next_keynum(),
            },
            OpKind::Update => {
                let keynum = self.next_keynum();
                let (field, version) = self.next_field();
                Operation::Update {
                    keynum,
                    field,
                    version,
                }
            }
            OpKind::Insert => Operation::Insert {
                keynum: self.shared.next_insert(),
            },
            OpKind::Scan => {
                let keynum = self.next_keynum();
                let length = 1 + self.rng.below(MAX_SCAN_LENGTH);
                Operation::Scan { keynum, length }
            }
            OpKind::ReadModifyWrite => {
                let keynum = self.next_keynum();
                let (field, version) = self.next_field();
                Operation::ReadModifyWrite {
                    keynum,
                    field,
                    version,
                }
            }
        }
    }

    fn next_kind(&mut self) -> OpKind {
        let weights = self.shared.spec.weights();
        let total: f64 = weights.iter().map(|(_, p)| p).sum();
        let mut u = self.rng.next_f64() * total;
        let mut last = OpKind::Read;
        for (kind, p) in weights {
            if p <= 0.0 {
                continue;
            }
            if u < p {
                return kind;
            }
            u -= p;
            last = kind;
        }
        last
    }

    fn next_field(&mut self) -> (usize, u64) {
        let field = self.rng.below(self.field_count as u64) as usize;
        // Version 0 is the loaded content.
        let version = self.rng.next_u64().max(1);
        (field, version)
    }

    /// The record of the next read, update, scan or read-modify-write.
    pub fn next_keynum(&mut self) -> u64 {
        match self.shared.spec.distribution {
            RequestDistribution::Uniform => self.rng.below(self.shared.records.max(1)),
            RequestDistribution::Zipfian => {
                let last = self.shared.last();
                loop {
                    let z = self.scrambled.sample(&mut self.rng);
                    let k = fnv64(z) % self.shared.scramble_range;
                    if k <= last {
                        return k;
                    }
                }
            }
            RequestDistribution::Latest => {
                let last = self.shared.last();
                match self.latest.as_mut() {
                    Some(z) if last >= 2 => {
                        z.grow_to(last);
                        last - z.sample(&mut self.rng).min(last)
                    }
                    _ => last,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn fnv_and_key_names_match_ycsb() {
        // FNV-1a of eight zero bytes.
        let mut h = FNV_OFFSET_BASIS_64;
        for _ in 0..8 {
            h = h.wrapping_mul(FNV_PRIME_64);
        }
        assert_eq!(fnv64(0), (h as i64).unsigned_abs());
        // Golden keys of the first records (checked against an independent
        // transcription of YCSB's `Utils.fnvhash64` in Python).
        assert_eq!(key_name(0), "user6284781860667377211");
        assert_eq!(key_name(1), "user8517097267634966620");
        assert_eq!(key_name(2), "user1820151046732198393");
        assert_eq!(key_name(3), "user4052466453699787802");
        let mut k = Vec::new();
        key_into(3, &mut k);
        assert_eq!(k, key_name(3).as_bytes());
    }

    #[test]
    fn values_are_fields_and_deterministic() {
        let v = Values::default();
        let r = v.record(7);
        assert_eq!(r.len(), 1000);
        assert_eq!(r, v.record(7));
        assert_ne!(r, v.record(8));
        assert_ne!(r, Values { seed: 1, ..v }.record(7));
        let mut field = [0u8; 100];
        v.fill_field(7, 3, 0, &mut field);
        assert_eq!(&r[300..400], &field[..]);
        let mut updated = r.clone();
        assert!(v.update_field(7, 3, 5, &mut updated));
        assert_eq!(&updated[..300], &r[..300]);
        assert_eq!(&updated[400..], &r[400..]);
        assert_ne!(&updated[300..400], &r[300..400]);
        assert!(!v.update_field(7, 10, 5, &mut updated));
        assert!(!v.update_field(7, 0, 5, &mut updated[..999]));
        // Golden bytes (an independent Python transcription of the module
        // documentation's definition).
        let zero = v.record(0);
        assert_eq!(hex(&zero[..16]), "6f6177fb52b18141629d26526d649c16");
        assert_eq!(hex(&zero[992..]), "4ae640c618cbc946");
        let mut f = [0u8; 8];
        v.fill_field(5, 3, 9, &mut f);
        assert_eq!(hex(&f), "fa0bc613c7ecb747");
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn parse_workloads() {
        assert_eq!("a".parse::<Workload>(), Ok(Workload::A));
        assert_eq!("F".parse::<Workload>(), Ok(Workload::F));
        assert_eq!("workloadc".parse::<Workload>(), Ok(Workload::C));
        let e = "g".parse::<Workload>().expect_err("g is no workload");
        assert!(e.to_string().contains("a, b, c, d, e, f"), "{e}");
        for w in Workload::ALL {
            let s = w.spec();
            let sum = s.read + s.update + s.insert + s.scan + s.read_modify_write;
            assert!((sum - 1.0).abs() < 1e-12, "{w}");
        }
    }

    fn mix(w: Workload, n: usize) -> HashMap<OpKind, u64> {
        let shared = Shared::new(w, 10_000, 10_000, n as u64);
        let mut g = Generator::new(&shared, 1, 0, DEFAULT_FIELD_COUNT);
        let mut counts = HashMap::new();
        for _ in 0..n {
            let op = g.next_op();
            if let Operation::Insert { keynum } = op {
                shared.acknowledge(keynum);
            }
            *counts.entry(op.kind()).or_insert(0) += 1;
        }
        counts
    }

    /// 100,000 operations: the count of a kind of share p has a standard
    /// deviation of at most 158; the bound of 1,000 is more than 6 of them.
    #[test]
    fn operation_mixes_match_the_workloads() {
        let n = 100_000;
        for w in Workload::ALL {
            let counts = mix(w, n);
            let spec = w.spec();
            for kind in OpKind::ALL {
                let got = counts.get(&kind).copied().unwrap_or(0) as f64;
                let want = spec.proportion(kind) * n as f64;
                assert!((got - want).abs() < 1000.0, "{w} {kind:?}: {got} vs {want}");
                if want == 0.0 {
                    assert_eq!(got, 0.0, "{w} {kind:?}");
                }
            }
        }
    }

    /// The scrambled Zipfian with YCSB's constants: the records of the top
    /// Zipfian items get their analytical shares (1/ζ(10^10, 0.99) for the
    /// first). 10^6 draws over 10^9 records (so other items landing on the
    /// same records add ~10^-9 each). Bounds: 3% relative on the top 3 items
    /// (over 5 standard deviations for the first, 4 for the third), 1.5% on
    /// the cumulative shares of the top 10 and 100.
    #[test]
    fn scrambled_zipfian_has_ycsbs_skew() {
        let records = 1_000_000_000;
        let shared = Shared::new(Workload::C, records, records, 0);
        let mut g = Generator::new(&shared, 7, 0, DEFAULT_FIELD_COUNT);
        let z = Zipfian::ycsb_scrambled();
        let top: Vec<u64> = (0..100).map(|i| fnv64(i) % (records + 1)).collect();
        let mut distinct = top.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 100, "top items land on distinct records");
        let mut counts: HashMap<u64, u64> = top.iter().map(|&k| (k, 0)).collect();
        let draws = 1_000_000;
        for _ in 0..draws {
            let k = g.next_keynum();
            assert!(k < records);
            if let Some(c) = counts.get_mut(&k) {
                *c += 1;
            }
        }
        let measured = |i: usize| counts[&top[i]] as f64 / draws as f64;
        // The first two items get exactly the Zipfian shares.
        assert!((z.share(0) - 1.0 / SCRAMBLED_ZETAN).abs() < 1e-15);
        assert!((z.share(0) - 0.03778).abs() < 1e-5);
        assert!((z.share(1) - 0.5f64.powf(0.99) / SCRAMBLED_ZETAN).abs() < 1e-15);
        for i in 0..3 {
            let want = z.share(i as u64);
            let got = measured(i);
            assert!((got / want - 1.0).abs() < 0.03, "item {i}: {got} vs {want}");
        }
        for k in [10usize, 100] {
            let want: f64 = (0..k as u64).map(|i| z.share(i)).sum();
            let got: f64 = (0..k).map(measured).sum();
            assert!((got / want - 1.0).abs() < 0.015, "top {k}: {got} vs {want}");
        }
        // The analytical shares of the approximation, summed over every
        // item (the formula's intervals tile [x0, 1]), make 1.
        let formula_part = (1.0 - x0_of(&z)) / z.eta;
        assert!((z.share(0) + z.share(1) + formula_part - 1.0).abs() < 1e-9);
    }

    fn x0_of(z: &Zipfian) -> f64 {
        let u0 = (1.0 + 0.5f64.powf(z.theta)) / z.zetan;
        z.eta * u0 - z.eta + 1.0
    }

    /// Latest: the newest record is the most popular, with 1/ζ(n) of the
    /// reads; the newest 10% of the records get most of them.
    #[test]
    fn latest_favours_the_newest_records() {
        let records = 10_000;
        let shared = Shared::new(Workload::D, records, records, 0);
        let mut g = Generator::new(&shared, 3, 0, DEFAULT_FIELD_COUNT);
        let draws = 200_000;
        let mut newest = 0u64;
        let mut recent = 0u64;
        for _ in 0..draws {
            let k = g.next_keynum();
            assert!(k < records);
            newest += u64::from(k == records - 1);
            recent += u64::from(k >= records - records / 10);
        }
        let want = 1.0 / zeta(records - 1, ZIPFIAN_CONSTANT);
        let got = newest as f64 / draws as f64;
        // sd of the count about 170 of 20,000: 5% is over 5 of them.
        assert!((got / want - 1.0).abs() < 0.05, "{got} vs {want}");
        assert!(recent as f64 / draws as f64 > 0.7, "{recent}");
        // An insert moves the newest record once it is acknowledged.
        let k = shared.next_insert();
        assert_eq!(k, records);
        assert_eq!(shared.last(), records - 1);
        let k2 = shared.next_insert();
        shared.acknowledge(k2);
        assert_eq!(shared.last(), records - 1, "k is still in flight");
        shared.acknowledge(k);
        assert_eq!(shared.last(), records + 1);
        let hits = (0..10_000)
            .filter(|_| g.next_keynum() == records + 1)
            .count();
        assert!(hits > 200, "{hits}");
    }

    /// Uniform: 10^6 draws over 100 records, 10,000 expected each (sd 99.5):
    /// every count within 6% (6 sd), and chi-square with 99 degrees of
    /// freedom below 200 (its 99.9999th percentile is about 190).
    #[test]
    fn uniform_is_flat() {
        let spec = Spec {
            distribution: RequestDistribution::Uniform,
            ..Workload::C.spec()
        };
        let shared = Shared::with_spec(spec, 100, 100, 0);
        let mut g = Generator::new(&shared, 11, 0, DEFAULT_FIELD_COUNT);
        let mut counts = [0u64; 100];
        let draws = 1_000_000;
        for _ in 0..draws {
            counts[g.next_keynum() as usize] += 1;
        }
        let expected = draws as f64 / 100.0;
        let mut chi2 = 0.0;
        for &c in &counts {
            assert!((c as f64 / expected - 1.0).abs() < 0.06, "{c}");
            chi2 += (c as f64 - expected).powi(2) / expected;
        }
        assert!(chi2 < 200.0, "chi-square {chi2}");
    }

    #[test]
    fn generators_are_deterministic_per_seed() {
        let run = |seed: u64| {
            let shared = Shared::new(Workload::A, 1000, 1000, 100);
            let mut g = Generator::new(&shared, seed, 0, DEFAULT_FIELD_COUNT);
            (0..100).map(|_| g.next_op()).collect::<Vec<_>>()
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
        let shared = Shared::new(Workload::E, 1000, 1000, 100);
        let mut g = Generator::new(&shared, 5, 0, DEFAULT_FIELD_COUNT);
        for _ in 0..1000 {
            match g.next_op() {
                Operation::Scan { length, keynum } => {
                    assert!((1..=MAX_SCAN_LENGTH).contains(&length));
                    assert!(keynum <= shared.last());
                }
                Operation::Insert { keynum } => {
                    assert!(keynum >= 1000);
                    shared.acknowledge(keynum);
                }
                other => panic!("workload e made {other:?}"),
            }
        }
    }
}
