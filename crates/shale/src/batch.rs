//! Write batches: a group of puts and deletes applied atomically.
//!
//! A batch's encoding is also the payload of one WAL record:
//!
//! ```text
//! batch  := seqno: fixed64 | count: fixed32 | op{count}
//! op     := kind: u8 (ValueKind) | key: varint-length-prefixed
//!           | value: varint-length-prefixed  (kind = Value: the value;
//!                                             kind = RangeDelete: the range's end)
//! ```
//!
//! The sequence number is that of the first op; op `i` gets `seqno + i`.

use crate::error::{Error, Result};
use crate::format::{get_length_prefixed, put_length_prefixed, SeqNo, ValueKind};

const HEADER_LEN: usize = 12;

/// An ordered group of writes applied atomically by [`crate::Db::write`].
///
/// Later operations on the same key within a batch win.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: u32,
}

impl Default for WriteBatch {
    fn default() -> Self {
        WriteBatch::new()
    }
}

/// One operation of a batch, as [`WriteBatch::for_each`] shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchEntry<'a> {
    /// A put of key -> value.
    Put(&'a [u8], &'a [u8]),
    /// A deletion of the key.
    Delete(&'a [u8]),
    /// A deletion of `[start, end)`.
    DeleteRange(&'a [u8], &'a [u8]),
}

/// One operation decoded from a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BatchOp<'a> {
    pub kind: ValueKind,
    pub key: &'a [u8],
    pub value: &'a [u8],
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch {
            rep: vec![0; HEADER_LEN],
            count: 0,
        }
    }

    /// Adds a put of `key` -> `value`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.rep.push(ValueKind::Value as u8);
        put_length_prefixed(&mut self.rep, key);
        put_length_prefixed(&mut self.rep, value);
        self.count += 1;
    }

    /// Adds a deletion of `key`.
    pub fn delete(&mut self, key: &[u8]) {
        self.rep.push(ValueKind::Delete as u8);
        put_length_prefixed(&mut self.rep, key);
        self.count += 1;
    }

    /// Adds a deletion of every key in `[start, end)` written before this
    /// batch (one small op, whatever the range holds). `start == end` is an
    /// empty range and adds nothing; `start > end` makes the write fail with
    /// [`Error::InvalidArgument`].
    pub fn delete_range(&mut self, start: &[u8], end: &[u8]) {
        if start == end {
            return;
        }
        self.rep.push(ValueKind::RangeDelete as u8);
        put_length_prefixed(&mut self.rep, start);
        put_length_prefixed(&mut self.rep, end);
        self.count += 1;
    }

    /// Calls `f` on every operation in order, as a client replays a batch
    /// into another store. Stops at the first error `f` returns.
    pub fn for_each<E>(&self, mut f: impl FnMut(BatchEntry<'_>) -> Result<(), E>) -> Result<(), E> {
        for op in self.ops().flatten() {
            f(match op.kind {
                ValueKind::Value => BatchEntry::Put(op.key, op.value),
                ValueKind::Delete => BatchEntry::Delete(op.key),
                ValueKind::RangeDelete => BatchEntry::DeleteRange(op.key, op.value),
            })?;
        }
        Ok(())
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True if the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Removes every operation.
    pub fn clear(&mut self) {
        self.rep.truncate(HEADER_LEN);
        self.count = 0;
    }

    /// Bytes of the encoded batch.
    pub fn encoded_len(&self) -> usize {
        self.rep.len()
    }

    /// Appends the operations of `other`.
    pub(crate) fn append(&mut self, other: &WriteBatch) {
        self.rep.extend_from_slice(&other.rep[HEADER_LEN..]);
        self.count += other.count;
    }

    /// Stamps the sequence number of the first op and returns the encoding.
    pub(crate) fn encode(&mut self, seq: SeqNo) -> &[u8] {
        self.rep[..8].copy_from_slice(&seq.to_le_bytes());
        self.rep[8..12].copy_from_slice(&self.count.to_le_bytes());
        &self.rep
    }

    /// Checks that every op decodes and every range deletion has
    /// `start < end`. The empty key is a key like any other (the smallest), as
    /// in LevelDB, RocksDB and Pebble.
    pub(crate) fn validate(&self) -> Result<()> {
        for (i, op) in self.ops().enumerate() {
            let op =
                op.map_err(|reason| Error::InvalidArgument(format!("write batch: {reason}")))?;
            if op.kind == ValueKind::RangeDelete && op.key >= op.value {
                return Err(Error::InvalidArgument(format!(
                    "write batch: op {i} deletes the range [{}, {}), whose start is above its end",
                    crate::format::user_key_text(op.key),
                    crate::format::user_key_text(op.value)
                )));
            }
        }
        Ok(())
    }

    /// The operations in order.
    pub(crate) fn ops(&self) -> BatchOps<'_> {
        BatchOps {
            rest: &self.rep[HEADER_LEN..],
            remaining: self.count,
        }
    }

    /// Decodes a WAL record into its first sequence number and batch.
    pub(crate) fn decode(record: &[u8]) -> std::result::Result<(SeqNo, WriteBatch), String> {
        if record.len() < HEADER_LEN {
            return Err(format!(
                "batch record of {} bytes is shorter than its header",
                record.len()
            ));
        }
        let seq = u64::from_le_bytes(record[..8].try_into().map_err(|_| "header")?);
        let count = u32::from_le_bytes(record[8..12].try_into().map_err(|_| "header")?);
        let batch = WriteBatch {
            rep: record.to_vec(),
            count,
        };
        let mut n = 0u32;
        for op in batch.ops() {
            op?;
            n += 1;
        }
        if n != count {
            return Err(format!("batch header says {count} ops, found {n}"));
        }
        Ok((seq, batch))
    }
}

/// Iterator over the ops of a batch.
pub(crate) struct BatchOps<'a> {
    rest: &'a [u8],
    remaining: u32,
}

impl<'a> Iterator for BatchOps<'a> {
    type Item = std::result::Result<BatchOp<'a>, String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return if self.rest.is_empty() {
                None
            } else {
                self.rest = &[];
                Some(Err("trailing bytes after the last op".into()))
            };
        }
        self.remaining -= 1;
        let Some((&tag, rest)) = self.rest.split_first() else {
            self.remaining = 0;
            return Some(Err("batch ends before its last op".into()));
        };
        self.rest = rest;
        let result = (|| {
            let kind = ValueKind::from_u8(tag).ok_or_else(|| format!("unknown op kind {tag}"))?;
            let key = get_length_prefixed(&mut self.rest).ok_or("truncated key")?;
            let value = match kind {
                ValueKind::Value => get_length_prefixed(&mut self.rest).ok_or("truncated value")?,
                ValueKind::RangeDelete => {
                    get_length_prefixed(&mut self.rest).ok_or("truncated range end")?
                }
                ValueKind::Delete => &[][..],
            };
            Ok(BatchOp { kind, key, value })
        })();
        if result.is_err() {
            self.remaining = 0;
            self.rest = &[];
        }
        Some(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_roundtrip() {
        let mut b = WriteBatch::new();
        b.put(b"a", b"1");
        b.delete(b"b");
        b.put(b"c", b"");
        let rec = b.encode(42).to_vec();
        let (seq, d) = WriteBatch::decode(&rec).expect("decodes");
        assert_eq!(seq, 42);
        let ops: Vec<_> = d.ops().map(|o| o.expect("op")).collect();
        assert_eq!(ops.len(), 3);
        assert_eq!(
            ops[1],
            BatchOp {
                kind: ValueKind::Delete,
                key: b"b",
                value: b""
            }
        );
        assert_eq!(ops[2].value, b"");
    }

    #[test]
    fn damaged_records_are_rejected() {
        let mut b = WriteBatch::new();
        b.put(b"key", b"value");
        let rec = b.encode(1).to_vec();
        for cut in 0..rec.len() {
            assert!(WriteBatch::decode(&rec[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = rec.clone();
        bad[12] = 7;
        assert!(WriteBatch::decode(&bad).is_err());
        let mut extra = rec;
        extra.push(0);
        assert!(WriteBatch::decode(&extra).is_err());
    }

    #[test]
    fn the_empty_key_is_valid_and_a_bad_op_is_not() {
        let mut b = WriteBatch::new();
        b.put(b"", b"v");
        b.delete(b"");
        assert!(b.validate().is_ok());
        // One op more than the batch holds.
        let bad = WriteBatch {
            count: 3,
            rep: b.encode(1).to_vec(),
        };
        assert!(matches!(bad.validate(), Err(Error::InvalidArgument(_))));
    }
}
