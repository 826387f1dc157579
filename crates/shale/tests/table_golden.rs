//! The committed version-1 and version-4 tables still inspect through the
//! public API (what `shale sst` uses). Entry-by-entry checks of the same
//! fixtures, and of the range deletions of version 4, live in the library's
//! `table::tests::golden_fixture_v*_still_reads`.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use shale::env::RandomAccessFile;

struct Bytes(Vec<u8>);

impl RandomAccessFile for Bytes {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let start = offset as usize;
        let src = self
            .0
            .get(start..start + buf.len())
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}

fn fixture() -> Vec<u8> {
    fixture_of(1)
}

fn fixture_of(version: u32) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/table-v{version}.sst",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(path).expect("committed fixture")
}

#[test]
fn golden_v1_table_inspects() {
    let data = fixture();
    let layout = shale::inspect_table(Arc::new(Bytes(data.clone())), PathBuf::from("table-v1.sst"))
        .expect("fixture inspects");
    let p = &layout.properties;
    // Written by fixture_entries(): 500 keys, 50 older versions, 71 tombstones.
    assert_eq!(p.format_version, 1);
    assert_eq!(p.num_entries, 550);
    assert_eq!(p.num_deletions, 71);
    assert_eq!(p.filter_bits_per_key, 10);
    assert_eq!(p.compression, shale::Compression::Lz4);
    assert_eq!(p.file_size, data.len() as u64);
    assert_eq!(layout.file_size, data.len() as u64);
    let count = |k: &str| layout.blocks.iter().filter(|b| b.kind.name() == k).count() as u64;
    assert_eq!(count("data"), p.data_blocks);
    assert_eq!(count("index"), p.index_partitions);
    assert_eq!(
        (count("filter"), count("top_index"), count("properties")),
        (1, 1, 1)
    );
    let mut next = 0;
    for b in &layout.blocks {
        assert_eq!(b.offset, next, "blocks are back to back: {b:?}");
        next = b.offset + b.size + 5;
    }
    assert_eq!(next, layout.footer_offset);
    assert_eq!(&data[data.len() - 8..], b"SHALE1\xe5\x0b");
}

#[test]
fn a_truncated_golden_table_is_corruption() {
    let data = fixture();
    for len in [0, 40, data.len() - 1] {
        let err = shale::inspect_table(
            Arc::new(Bytes(data[..len].to_vec())),
            PathBuf::from("t.sst"),
        )
        .expect_err("truncated table must not inspect");
        assert!(err.is_corruption(), "{len}: {err}");
    }
}

#[test]
fn golden_v4_table_inspects_with_its_range_deletion_block() {
    let data = fixture_of(4);
    let layout = shale::inspect_table(Arc::new(Bytes(data.clone())), PathBuf::from("table-v4.sst"))
        .expect("fixture inspects");
    let p = &layout.properties;
    // The entries of the other versions, and six overlapping range deletions
    // stored as eight fragments of twelve sequence numbers in all.
    assert_eq!(p.format_version, 4);
    assert_eq!(p.num_entries, 550);
    assert_eq!(p.num_deletions, 71);
    assert_eq!(p.range_deletions, 12);
    assert_eq!((p.smallest_seqno, p.largest_seqno), (1, 2000));
    assert_eq!(p.file_size, data.len() as u64);
    // The range-deletion block (with its 5-byte trailer) ends where the
    // properties begin, after the top-level index.
    let find = |kind: &str| {
        layout
            .blocks
            .iter()
            .find(|b| b.kind.name() == kind)
            .unwrap_or_else(|| panic!("no {kind} block"))
    };
    let props = find("properties");
    let top = find("top_index");
    assert!(p.range_del_bytes > 5);
    let start = props.offset - p.range_del_bytes;
    assert!(start >= top.offset + top.size + 5, "{layout:?}");
    let block = &data[start as usize..props.offset as usize];
    assert_eq!(block[block.len() - 5], 0, "stored uncompressed");
    assert_eq!(block[0], 8, "eight fragments (varint count)");
    assert_eq!(&data[data.len() - 8..], b"SHALE1\xe5\x0b");
    for len in [0, 40, data.len() - 1] {
        let err = shale::inspect_table(
            Arc::new(Bytes(data[..len].to_vec())),
            PathBuf::from("t.sst"),
        )
        .expect_err("truncated table must not inspect");
        assert!(err.is_corruption(), "{len}: {err}");
    }
}
