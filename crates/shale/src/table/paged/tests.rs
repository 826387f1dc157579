//! The locator against a reference search over the blocks' own keys, the key
//! array and the Elias-Fano codes against naive counts, and the decoders
//! against damaged bytes.

use super::*;
use crate::table::test_util::Rng;

/// Blocks of user keys: `keys` sorted (repeats are versions of one key),
/// cut into blocks of 1..=max_block entries.
fn cut_blocks(keys: &[Vec<u8>], rng: &mut Rng, max_block: u64) -> Vec<Vec<Vec<u8>>> {
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < keys.len() {
        let n = (1 + rng.below(max_block) as usize).min(keys.len() - i);
        blocks.push(keys[i..i + n].to_vec());
        i += n;
    }
    blocks
}

fn spans(blocks: &[Vec<Vec<u8>>], rng: &mut Rng) -> Vec<BlockSpan> {
    blocks
        .iter()
        .map(|b| BlockSpan {
            first: b[0].clone(),
            last: b[b.len() - 1].clone(),
            pages: if rng.below(50) == 0 {
                2 + rng.below(3)
            } else {
                1
            },
        })
        .collect()
}

/// What a Get does with the locator: the blocks it reads for `k` and whether
/// it finds `k`.
fn simulate(loc: &Locator, blocks: &[Vec<Vec<u8>>], k: &[u8]) -> (Vec<usize>, bool) {
    let mut g = loc.find(k);
    let mut read = Vec::new();
    loop {
        read.push(g);
        assert!(
            loc.agrees_with_first(g, &blocks[g][0]),
            "block {g}'s first key disagrees with its code"
        );
        if let Some(x) = blocks[g].iter().find(|x| x.as_slice() >= k) {
            return (read, x.as_slice() == k);
        }
        if loc.continues(g + 1, k) {
            g += 1;
        } else {
            return (read, false);
        }
    }
}

/// Checks every key of the blocks and `probes` absent-or-present keys:
/// a present key is found starting at its first block or before it, an
/// absent one is not found. Returns (lookups, lookups that read a block
/// before the right one, locator bytes).
fn check(keys: &[Vec<u8>], probes: &[Vec<u8>], seed: u64, max_block: u64) -> (usize, usize, usize) {
    let mut rng = Rng::new(seed);
    let blocks = cut_blocks(keys, &mut rng, max_block);
    let sp = spans(&blocks, &mut rng);
    let first_page = rng.below(1000);
    let bytes = encode_locator(first_page, &sp);
    let loc = Locator::new(bytes.clone()).expect("decodes");
    assert_eq!(loc.len(), blocks.len());
    // Pages: consecutive, long blocks take their pages.
    let mut page = first_page;
    for (g, s) in sp.iter().enumerate() {
        assert_eq!(loc.pages(g), (page, s.pages), "block {g}");
        page += s.pages;
    }
    assert_eq!(loc.last_page(), Some(page));
    let (mut lookups, mut extra) = (0, 0);
    for k in keys.iter().chain(probes) {
        let first = blocks.iter().position(|b| b.contains(k));
        let (read, found) = simulate(&loc, &blocks, k);
        assert_eq!(found, first.is_some(), "key {k:02x?}");
        if let Some(j) = first {
            assert!(
                read.contains(&j),
                "key {k:02x?} in block {j}, read {read:?}"
            );
            assert!(read[0] <= j);
        }
        lookups += 1;
        if read.len() > 1 && first.is_none_or(|j| read[0] < j) {
            extra += 1;
        }
    }
    (lookups, extra, bytes.len())
}

fn sorted(mut keys: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    keys.sort();
    keys
}

fn neighbours(keys: &[Vec<u8>], rng: &mut Rng) -> Vec<Vec<u8>> {
    let mut probes = Vec::new();
    for k in keys.iter().step_by(3) {
        let mut up = k.clone();
        if let Some(b) = up.last_mut() {
            *b = b.wrapping_add(1);
        }
        probes.push(up);
        let mut down = k.clone();
        if let Some(b) = down.last_mut() {
            *b = b.wrapping_sub(1);
        }
        probes.push(down);
        let mut longer = k.clone();
        longer.push(0);
        probes.push(longer);
        probes.push(k[..k.len() / 2].to_vec());
        probes.push(rng.bytes(k.len()));
    }
    probes.push(Vec::new());
    probes.push(vec![0xff; 40]);
    probes
}

#[test]
fn random_hash_keys_are_located_in_under_3_bytes_a_block() {
    let mut rng = Rng::new(7);
    let keys = sorted((0..81_000).map(|_| rng.bytes32().to_vec()).collect());
    let mut probes = neighbours(&keys[..3000], &mut rng);
    probes.extend((0..20_000).map(|_| rng.bytes32().to_vec()));
    // About 27 keys a block, as with 32-byte keys and 110-byte values.
    let (lookups, extra, bytes) = check(&keys, &probes, 1, 53);
    let blocks = 81_000 / 27;
    let per_block = bytes as f64 / blocks as f64;
    eprintln!("hash keys: {per_block:.3} locator bytes a block, {extra} of {lookups} lookups read an extra block");
    assert!(per_block < 2.0, "{per_block:.2} bytes a block");
    assert!(
        (extra as f64) < 0.01 * lookups as f64,
        "{extra} of {lookups} lookups read a block too many"
    );
    let loc = Locator::new(encode_locator(
        0,
        &spans(&cut_blocks(&keys, &mut Rng::new(1), 53), &mut Rng::new(1)),
    ))
    .unwrap();
    assert!(!loc.is_exact(), "hash keys take the quantized code");
}

#[test]
fn sequential_keys() {
    let keys: Vec<Vec<u8>> = (0..20_000u64).map(|i| i.to_be_bytes().to_vec()).collect();
    let mut rng = Rng::new(3);
    let probes = neighbours(&keys, &mut rng);
    let (lookups, extra, _) = check(&keys, &probes, 2, 30);
    assert!(extra * 20 < lookups, "{extra} of {lookups}");
    let text: Vec<Vec<u8>> = (0..20_000u64)
        .map(|i| format!("key{i:010}").into_bytes())
        .collect();
    let probes = neighbours(&text, &mut rng);
    check(&text, &probes, 3, 30);
}

#[test]
fn path_scheme_keys() {
    // A prefix byte, one of a few 32-byte account hashes, then a trie path of
    // 0..=64 nibbles: long shared prefixes and keys that prefix each other.
    let mut rng = Rng::new(11);
    let accounts: Vec<[u8; 32]> = (0..4).map(|_| rng.bytes32()).collect();
    let mut keys = Vec::new();
    for _ in 0..15_000 {
        let mut k = vec![b'O'];
        k.extend_from_slice(&accounts[rng.index(4)]);
        let depth = rng.below(65) as usize;
        k.extend((0..depth).map(|_| rng.below(16) as u8));
        keys.push(k);
    }
    keys.extend((0..2000).map(|_| {
        let mut k = vec![b'A'];
        let depth = rng.below(65);
        k.extend((0..depth).map(|_| rng.below(16) as u8));
        k
    }));
    let mut keys = sorted(keys);
    keys.dedup();
    let probes = neighbours(&keys, &mut rng);
    check(&keys, &probes, 4, 40);
}

#[test]
fn adversarial_keys() {
    let mut rng = Rng::new(13);
    // Long shared prefixes; keys differing only in their last byte.
    let long_prefix = vec![0x5a; 100];
    let mut keys: Vec<Vec<u8>> = (0..3000u32)
        .map(|i| {
            let mut k = long_prefix.clone();
            k.extend_from_slice(&i.to_be_bytes());
            k
        })
        .collect();
    keys.extend((0..=255u8).map(|b| vec![7, 7, 7, b]));
    // Runs of 0x00 and 0xff, the empty key, keys that prefix each other.
    keys.push(Vec::new());
    keys.extend((0..40).map(|n| vec![0u8; n]));
    keys.extend((1..40).map(|n| vec![0xffu8; n]));
    let mut keys = sorted(keys);
    keys.dedup();
    let probes = neighbours(&keys, &mut rng);
    for seed in 0..4 {
        check(&keys, &probes, seed, 1 + seed * 10);
    }
}

#[test]
fn versions_straddling_blocks() {
    // Each key repeated up to 60 times (its versions), blocks of 1..=8
    // entries: a key's versions span many blocks.
    let mut rng = Rng::new(17);
    let mut keys = Vec::new();
    for _ in 0..2000 {
        let k = rng.bytes32().to_vec();
        let n = if rng.below(10) == 0 {
            1 + rng.below(60)
        } else {
            1
        };
        keys.extend(std::iter::repeat_n(k, n as usize));
    }
    let keys = sorted(keys);
    let mut unique = keys.clone();
    unique.dedup();
    let probes = neighbours(&unique, &mut rng);
    for seed in 0..3 {
        check(&keys, &probes, seed, 8);
    }
}

#[test]
fn small_locators() {
    let mut rng = Rng::new(19);
    for n in 1..40 {
        let keys = sorted(
            (0..n)
                .map(|_| {
                    let n = 1 + rng.index(5);
                    rng.bytes(n)
                })
                .collect(),
        );
        let probes = neighbours(&keys, &mut rng);
        check(&keys, &probes, n as u64, 3);
    }
}

#[test]
fn elias_fano_counts_like_a_scan() {
    let mut rng = Rng::new(23);
    for case in 0..300 {
        let n = rng.index(200);
        let spread = 1 + rng.below(1 << (case % 40));
        let mut values: Vec<u64> = (0..n).map(|_| rng.below(spread)).collect();
        values.sort_unstable();
        let mut buf = Vec::new();
        EliasFano::encode(&mut buf, &values);
        let (ef, end) = EliasFano::decode(&buf, 0, n).expect("decodes");
        assert_eq!(end, buf.len());
        for (j, &v) in values.iter().enumerate() {
            assert_eq!(ef.get(&buf, j), Some(v));
        }
        for _ in 0..50 {
            let y = rng.below(spread + 2);
            let want = values.iter().filter(|&&v| v <= y).count();
            assert_eq!(ef.count_le(&buf, y), want, "y={y} values={values:?}");
        }
        assert_eq!(ef.count_le(&buf, u64::MAX), n);
    }
}

#[test]
fn key_array_searches_like_a_scan() {
    let mut rng = Rng::new(29);
    for _ in 0..200 {
        let mut keys: Vec<Vec<u8>> = (0..rng.index(50))
            .map(|_| {
                let mut k = vec![9, 9];
                k.extend({
                    let n = rng.index(4);
                    rng.bytes(n)
                });
                k
            })
            .collect();
        keys.sort();
        let entries: Vec<(Vec<u8>, u64)> =
            keys.iter().map(|k| (k.clone(), rng.below(9000))).collect();
        let mut buf = Vec::new();
        encode_key_array(&mut buf, 4096, &entries);
        let arr = KeyArray::new(buf).expect("decodes");
        let mut offset = 4096;
        for (i, (k, v)) in entries.iter().enumerate() {
            assert_eq!(&arr.key(i), k);
            assert_eq!(arr.value(i), *v);
            assert_eq!(arr.offset(i), offset);
            offset += v.next_multiple_of(PAGE_SIZE);
        }
        for _ in 0..50 {
            let mut probe = vec![9];
            probe.extend({
                let n = rng.index(5);
                rng.bytes(n)
            });
            let lb = keys
                .iter()
                .filter(|k| k.as_slice() < probe.as_slice())
                .count();
            let le = keys
                .iter()
                .filter(|k| k.as_slice() <= probe.as_slice())
                .count();
            assert_eq!(arr.lower_bound(&probe), lb);
            assert_eq!(arr.count_le(&probe), le);
        }
    }
}

#[test]
fn paged_frames_round_trip_and_catch_every_flip() {
    let contents = b"some block contents".to_vec();
    let framed = frame_paged(&contents, Compression::None, 4096);
    assert_eq!(framed.len(), 4096);
    assert_eq!(unwrap_paged(framed.clone(), true).unwrap(), contents);
    for i in (0..framed.len())
        .step_by(97)
        .chain(framed.len() - 9..framed.len())
    {
        let mut bad = framed.clone();
        bad[i] ^= 0x10;
        assert!(
            unwrap_paged(bad, true).is_err(),
            "flip at {i} went unnoticed"
        );
    }
    assert!(unwrap_paged(vec![0; 8], true).is_err());
    assert_eq!(paged_data_len(4087), 4096);
    assert_eq!(paged_data_len(4088), 8192);
}

#[test]
fn damaged_locators_and_key_arrays_never_panic() {
    let mut rng = Rng::new(31);
    let keys = sorted((0..2000).map(|_| rng.bytes32().to_vec()).collect());
    let blocks = cut_blocks(&keys, &mut rng, 40);
    let sp = spans(&blocks, &mut rng);
    let exact_keys: Vec<Vec<u8>> = (0..300u32).map(|i| format!("k{i}").into_bytes()).collect();
    let exact_blocks = cut_blocks(&sorted(exact_keys), &mut rng, 5);
    let exact_sp = spans(&exact_blocks, &mut rng);
    let mut arr = Vec::new();
    encode_key_array(
        &mut arr,
        0,
        &[(b"abc".to_vec(), 10), (b"abd".to_vec(), 4000)],
    );
    for good in [encode_locator(5, &sp), encode_locator(0, &exact_sp)] {
        for cut in 0..good.len() {
            assert!(Locator::new(good[..cut].to_vec()).is_err(), "cut at {cut}");
        }
        for _ in 0..3000 {
            let mut bad = good.clone();
            let i = rng.index(bad.len());
            bad[i] ^= 1 << rng.below(8);
            if let Ok(loc) = Locator::new(bad) {
                for k in keys.iter().step_by(50) {
                    let g = loc.find(k);
                    assert!(g < loc.len());
                    let _ = loc.continues(g + 1, k);
                    let _ = loc.pages(g);
                }
            }
        }
    }
    for cut in 0..arr.len() {
        assert!(KeyArray::new(arr[..cut].to_vec()).is_err(), "cut at {cut}");
    }
    for i in 0..arr.len() {
        for bit in 0..8 {
            let mut bad = arr.clone();
            bad[i] ^= 1 << bit;
            if let Ok(a) = KeyArray::new(bad) {
                let _ = a.lower_bound(b"abc");
            }
        }
    }
}

#[test]
fn quantized_codes_are_the_first_keys_codes() {
    let mut rng = Rng::new(37);
    let keys = sorted((0..30_000).map(|_| rng.bytes32().to_vec()).collect());
    let blocks = cut_blocks(&keys, &mut rng, 53);
    let sp = spans(&blocks, &mut rng);
    let loc = Locator::new(encode_locator(0, &sp)).unwrap();
    assert!(!loc.is_exact());
    assert_eq!(loc.len(), blocks.len());
    for (g, block) in blocks.iter().enumerate().skip(1) {
        assert!(loc.code(g).is_some());
        assert!(loc.agrees_with_first(g, &block[0]));
    }
}

#[test]
fn empty_and_zero_keys_in_exact_mode() {
    let keys: Vec<Vec<u8>> = vec![vec![], vec![0], vec![0, 0], vec![1], vec![2]];
    for max in 1..3 {
        for seed in 0..20 {
            let mut rng = Rng::new(seed);
            let blocks = cut_blocks(&keys, &mut rng, max);
            let sp = spans(&blocks, &mut rng);
            let bytes = encode_locator(0, &sp);
            let loc = Locator::new(bytes.clone()).unwrap();
            for k in &keys {
                let (read, found) = simulate(&loc, &blocks, k);
                assert!(
                    found,
                    "{k:?} blocks {blocks:?} read {read:?} exact {} bytes {bytes:?}",
                    loc.is_exact()
                );
            }
        }
    }
}

/// `get_bits` reads what a bit-by-bit reader reads, at every offset and
/// width, past the end of the bytes too (zeros there).
#[test]
fn get_bits_agrees_with_reading_bit_by_bit() {
    fn slow(bytes: &[u8], pos: usize, width: u8) -> u64 {
        (0..usize::from(width)).fold(0, |v, b| {
            let p = pos + b;
            let bit = bytes.get(p / 8).map_or(0, |byte| (byte >> (p % 8)) & 1);
            v | (u64::from(bit) << b)
        })
    }
    let mut rng = Rng::new(7);
    for len in [0usize, 1, 3, 8, 9, 17] {
        let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        for pos in 0..len * 8 + 12 {
            for width in 0..=64u8 {
                assert_eq!(
                    get_bits(&bytes, pos, width),
                    slow(&bytes, pos, width),
                    "len {len} pos {pos} width {width}"
                );
            }
        }
    }
}

/// Long sequences, as a page-sized locator holds (thousands of codes, many
/// zero samples), probed at every value and next to it.
#[test]
fn elias_fano_counts_like_a_scan_at_locator_sizes() {
    let mut rng = Rng::new(31);
    for case in 0..12 {
        let n = 500 + rng.index(3500);
        let spread = (n as u64) << (case % 6);
        let mut values: Vec<u64> = (0..n).map(|_| rng.below(spread)).collect();
        // Runs of equal values and empty stretches, as ambiguous codes make.
        if case % 3 == 0 {
            for v in values.iter_mut().skip(n / 3).take(n / 5) {
                *v = spread / 2;
            }
        }
        values.sort_unstable();
        let mut buf = Vec::new();
        EliasFano::encode(&mut buf, &values);
        let (ef, _) = EliasFano::decode(&buf, 0, n).expect("decodes");
        let mut probes: Vec<u64> = values
            .iter()
            .flat_map(|&v| [v.saturating_sub(1), v, v + 1])
            .collect();
        probes.extend((0..200).map(|_| rng.below(spread + 2)));
        for y in probes {
            let want = values.partition_point(|&v| v <= y);
            assert_eq!(ef.count_le(&buf, y), want, "case {case} n {n} y {y}");
        }
    }
}
