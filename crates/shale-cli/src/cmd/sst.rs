//! `sst`: one table file's layout and properties.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;

use serde::Serialize;
use shale::env::{FileSystem, PosixFs, PosixOptions};
use shale::tools::parse_internal_key;
use shale::{BlockInfo, TableLayout, TableProperties};

use crate::args::SstArgs;
use shale_bench::bytes::{display_key, to_hex};
use shale_bench::error::{Error as CliError, Result as CliResult};
use shale_bench::fmt::human_bytes;

pub fn run(a: &SstArgs, out: &mut dyn Write) -> CliResult {
    let fs = PosixFs::new(PosixOptions::default());
    let file = fs
        .open_random(&a.file)
        .map_err(|e| CliError::msg(format!("open {}: {e}", a.file.display())))?;
    let layout = shale::inspect_table(file, a.file.clone())?;
    let text = if a.json {
        let mut s = serde_json::to_string_pretty(&sst_doc(&layout))
            .map_err(|e| CliError::msg(format!("encoding JSON: {e}")))?;
        s.push('\n');
        s
    } else {
        sst_text(&layout)
    };
    out.write_all(text.as_bytes()).map_err(CliError::output)
}

/// Blocks of one kind: how many, and their bytes without trailers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindTotal {
    pub kind: &'static str,
    pub count: u64,
    pub bytes: u64,
}

/// Count and bytes per block kind, kinds in order of first appearance (file
/// order: data, filter, index, top_index, properties).
pub fn block_totals(blocks: &[BlockInfo]) -> Vec<KindTotal> {
    let mut totals: Vec<KindTotal> = Vec::new();
    for b in blocks {
        match totals.iter_mut().find(|t| t.kind == b.kind.name()) {
            Some(t) => {
                t.count += 1;
                t.bytes += b.size;
            }
            None => totals.push(KindTotal {
                kind: b.kind.name(),
                count: 1,
                bytes: b.size,
            }),
        }
    }
    totals
}

/// An internal key as JSON: `{user_key, seq, kind}`, or the raw hex when it
/// does not decode (`null` for the empty key of an empty table).
#[derive(Debug, PartialEq, Serialize)]
#[serde(untagged)]
enum KeyDoc {
    Decoded {
        user_key: String,
        seq: u64,
        kind: String,
    },
    Raw {
        raw: String,
    },
}

fn internal_key_doc(encoded: &[u8]) -> Option<KeyDoc> {
    if encoded.is_empty() {
        return None;
    }
    Some(match parse_internal_key(encoded) {
        Some(k) => KeyDoc::Decoded {
            user_key: display_key(k.user_key),
            seq: k.seq,
            kind: kind_name(k.kind),
        },
        None => KeyDoc::Raw {
            raw: to_hex(encoded),
        },
    })
}

fn internal_key_text(encoded: &[u8]) -> String {
    if encoded.is_empty() {
        return "-".into();
    }
    match parse_internal_key(encoded) {
        Some(k) => format!(
            "{} (seq {}, {})",
            display_key(k.user_key),
            k.seq,
            kind_name(k.kind)
        ),
        None => format!("undecodable {}", to_hex(encoded)),
    }
}

fn kind_name(kind: u8) -> String {
    match kind {
        0 => "DEL".into(),
        1 => "SET".into(),
        2 => "RANGEDEL".into(),
        other => format!("KIND{other}"),
    }
}

/// A table's properties as `sst --json` shows them.
#[derive(Serialize)]
struct PropertiesDoc {
    format_version: u32,
    num_entries: u64,
    num_deletions: u64,
    raw_key_bytes: u64,
    raw_value_bytes: u64,
    data_bytes: u64,
    data_padding_bytes: u64,
    data_blocks: u64,
    index_partition_bytes: u64,
    index_partitions: u64,
    top_level_index_bytes: u64,
    filter_bytes: u64,
    filter_bits_per_key: u32,
    filter_partitions: u64,
    top_level_filter_index_bytes: u64,
    range_deletions: u64,
    range_del_bytes: u64,
    smallest_key: Option<KeyDoc>,
    largest_key: Option<KeyDoc>,
    smallest_seqno: u64,
    largest_seqno: u64,
    file_size: u64,
    compression: &'static str,
}

impl PropertiesDoc {
    fn of(p: &TableProperties) -> PropertiesDoc {
        PropertiesDoc {
            format_version: p.format_version,
            num_entries: p.num_entries,
            num_deletions: p.num_deletions,
            raw_key_bytes: p.raw_key_bytes,
            raw_value_bytes: p.raw_value_bytes,
            data_bytes: p.data_bytes,
            data_padding_bytes: p.data_padding_bytes,
            data_blocks: p.data_blocks,
            index_partition_bytes: p.index_partition_bytes,
            index_partitions: p.index_partitions,
            top_level_index_bytes: p.top_level_index_bytes,
            filter_bytes: p.filter_bytes,
            filter_bits_per_key: p.filter_bits_per_key,
            filter_partitions: p.filter_partitions,
            top_level_filter_index_bytes: p.top_level_filter_index_bytes,
            range_deletions: p.range_deletions,
            range_del_bytes: p.range_del_bytes,
            smallest_key: internal_key_doc(&p.smallest_key),
            largest_key: internal_key_doc(&p.largest_key),
            smallest_seqno: p.smallest_seqno,
            largest_seqno: p.largest_seqno,
            file_size: p.file_size,
            compression: p.compression.name(),
        }
    }
}

/// Count and bytes of one block kind.
#[derive(Serialize)]
struct BlocksDoc {
    count: u64,
    bytes: u64,
}

/// The JSON document of `sst --json`: `file_size`, `footer_offset`, `blocks`
/// (per kind: `count` and `bytes` without trailers, or as stored on their
/// pages for format 3's paged blocks) and `properties`.
#[derive(Serialize)]
pub struct SstDoc {
    file_size: u64,
    footer_offset: u64,
    blocks: BTreeMap<&'static str, BlocksDoc>,
    properties: PropertiesDoc,
}

/// [`SstDoc`] of a table.
pub fn sst_doc(layout: &TableLayout) -> SstDoc {
    SstDoc {
        file_size: layout.file_size,
        footer_offset: layout.footer_offset,
        blocks: block_totals(&layout.blocks)
            .into_iter()
            .map(|t| {
                let doc = BlocksDoc {
                    count: t.count,
                    bytes: t.bytes,
                };
                (t.kind, doc)
            })
            .collect(),
        properties: PropertiesDoc::of(&layout.properties),
    }
}

/// The text report of `sst`.
pub fn sst_text(layout: &TableLayout) -> String {
    let p = &layout.properties;
    let mut s = String::new();
    // Writing to a String cannot fail; results are ignored below.
    let _ = writeln!(
        s,
        "file size {} ({}), footer at {}",
        layout.file_size,
        human_bytes(layout.file_size),
        layout.footer_offset
    );
    let _ = writeln!(s, "{:<11} {:>8} {:>12}", "block kind", "count", "bytes");
    for t in block_totals(&layout.blocks) {
        let _ = writeln!(
            s,
            "{:<11} {:>8} {:>12} {:>11}",
            t.kind,
            t.count,
            t.bytes,
            human_bytes(t.bytes)
        );
    }
    if p.format_version >= 3 {
        let _ = writeln!(
            s,
            "(data, filter and index blocks: bytes as stored on their pages, tails included;"
        );
        let _ = writeln!(s, " the other blocks: without their 5-byte trailers)");
    } else {
        let _ = writeln!(s, "(block bytes exclude the 5-byte trailers)");
    }
    let _ = writeln!(s);
    let rows: [(&str, String); 23] = [
        ("format version", p.format_version.to_string()),
        ("entries", p.num_entries.to_string()),
        ("deletions", p.num_deletions.to_string()),
        ("raw key bytes", p.raw_key_bytes.to_string()),
        ("raw value bytes", p.raw_value_bytes.to_string()),
        ("data bytes", p.data_bytes.to_string()),
        ("data padding bytes", p.data_padding_bytes.to_string()),
        ("data blocks", p.data_blocks.to_string()),
        ("index partition bytes", p.index_partition_bytes.to_string()),
        ("index partitions", p.index_partitions.to_string()),
        ("top-level index bytes", p.top_level_index_bytes.to_string()),
        ("filter bytes", p.filter_bytes.to_string()),
        ("filter bits per key", p.filter_bits_per_key.to_string()),
        ("filter partitions", p.filter_partitions.to_string()),
        (
            "top-level filter index",
            p.top_level_filter_index_bytes.to_string(),
        ),
        ("range deletions", p.range_deletions.to_string()),
        ("range-deletion bytes", p.range_del_bytes.to_string()),
        ("smallest key", internal_key_text(&p.smallest_key)),
        ("largest key", internal_key_text(&p.largest_key)),
        ("smallest seqno", p.smallest_seqno.to_string()),
        ("largest seqno", p.largest_seqno.to_string()),
        ("file size", p.file_size.to_string()),
        ("compression", p.compression.name().to_string()),
    ];
    for (name, value) in rows {
        let _ = writeln!(s, "{name:<22} {value}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale::LayoutKind;

    fn block(kind: LayoutKind, offset: u64, size: u64) -> BlockInfo {
        BlockInfo { kind, offset, size }
    }

    fn sample() -> TableLayout {
        let mut smallest = b"apple".to_vec();
        smallest.extend_from_slice(&((7u64 << 8) | 1).to_le_bytes());
        let mut largest = vec![0xff, 0x01];
        // Sequence 9, kind 0 (a deletion).
        largest.extend_from_slice(&(9u64 << 8).to_le_bytes());
        TableLayout {
            properties: TableProperties {
                format_version: 1,
                num_entries: 3,
                num_deletions: 1,
                data_blocks: 2,
                smallest_key: smallest,
                largest_key: largest,
                smallest_seqno: 7,
                largest_seqno: 9,
                file_size: 400,
                ..TableProperties::default()
            },
            blocks: vec![
                block(LayoutKind::Data, 0, 100),
                block(LayoutKind::Data, 105, 120),
                block(LayoutKind::Filter, 230, 20),
                block(LayoutKind::Index, 255, 30),
                block(LayoutKind::TopIndex, 290, 10),
                block(LayoutKind::Properties, 305, 26),
            ],
            footer_offset: 336,
            file_size: 400,
        }
    }

    #[test]
    fn totals_per_kind_in_file_order() {
        let t = block_totals(&sample().blocks);
        let kinds: Vec<_> = t.iter().map(|t| (t.kind, t.count, t.bytes)).collect();
        assert_eq!(
            kinds,
            [
                ("data", 2, 220),
                ("filter", 1, 20),
                ("index", 1, 30),
                ("top_index", 1, 10),
                ("properties", 1, 26),
            ]
        );
        assert!(block_totals(&[]).is_empty());
    }

    #[test]
    fn json_shape() {
        let v = serde_json::to_value(sst_doc(&sample())).expect("encodes");
        assert_eq!(v["file_size"], 400);
        assert_eq!(v["footer_offset"], 336);
        assert_eq!(v["blocks"]["data"]["count"], 2);
        assert_eq!(v["blocks"]["data"]["bytes"], 220);
        assert_eq!(v["blocks"]["top_index"]["count"], 1);
        let p = &v["properties"];
        assert_eq!(p["num_entries"], 3);
        assert_eq!(p["compression"], "none");
        assert_eq!(p["smallest_key"]["user_key"], "apple");
        assert_eq!(p["smallest_key"]["seq"], 7);
        assert_eq!(p["smallest_key"]["kind"], "SET");
        assert_eq!(p["largest_key"]["user_key"], "0xff01");
        assert_eq!(p["largest_key"]["kind"], "DEL");
    }

    #[test]
    fn empty_and_undecodable_keys() {
        assert_eq!(internal_key_doc(b""), None);
        assert_eq!(
            internal_key_doc(b"abc"),
            Some(KeyDoc::Raw {
                raw: "0x616263".into()
            })
        );
        assert_eq!(internal_key_text(b""), "-");
        assert!(internal_key_text(b"abc").starts_with("undecodable"));
    }

    #[test]
    fn text_report() {
        let text = sst_text(&sample());
        assert!(text.contains("data               2          220"), "{text}");
        assert!(
            text.contains("smallest key           apple (seq 7, SET)"),
            "{text}"
        );
        assert!(text.contains("compression            none"), "{text}");
    }
}
