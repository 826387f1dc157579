//! The picker's scenario tests: the cases are the files of
//! `crates/shale/testdata/picker/`, read and checked by [`runner`], whose doc
//! gives the file format and the rewrite flag (`SHALE_REWRITE=1` writes the
//! actual outputs into the files instead of failing).
//!
//! # Commands
//!
//! Options, as arguments of `targets`, `scores`, `pick` and `pending`
//! (defaults in brackets): `l0_trigger` [4], `base_bytes` [64MiB],
//! `multiplier` [10], `target_file_size_base` [2MiB], `filters` (the levels
//! whose tables carry a Bloom filter: `0,1,2`, `all` or `none`) [0,1,2,3,4,5],
//! `drain_l0` (bare, or `=true`/`=false`) [false]. For `scores` and `pick`,
//! `compacting=1,2` names the tables that running compactions hold. An
//! argument a command does not know is an error.
//!
//! * `targets`: input lines `L<n> <bytes>`; prints the base level and every
//!   level target that is not "none" (`u64::MAX`).
//! * `plan total=<bytes>` (and `base_bytes`, `multiplier`,
//!   `target_file_size_base`): [`level_plan`]'s base level, level targets and
//!   table sizes.
//! * `table-sizes base_level=<n>` (and `target_file_size_base`):
//!   [`output_file_size`] of every level.
//! * `scores`: input a shape (below); prints the base level, then per level
//!   its bytes, target, score and priority (a level that is empty and has all
//!   of these at "none" or 0 is left out).
//! * `priorities base=L<n> targets=<bytes>,.. scores=<f>,..`: input a shape;
//!   [`level_priorities`] for the given targets (from the base level down to
//!   L6) and scores (seven) rather than the computed ones.
//! * `pick`: input a shape; the compaction [`pick`] chooses, or `none`.
//! * `pending`: input a shape; [`pending_compaction_bytes`].
//!
//! A shape is a list of levels. A line `L<n>` starts level n; the tables
//! follow one a line, `<number> <smallest>-<largest> <bytes>`, keys in hex
//! (`00-3f`), L0 newest first and the other levels in key order. Two
//! shorthands on the `L<n>` line write the common shapes in one line (table
//! lines below it are added after them):
//! `split=<count> size=<bytes> first=<number>` (tables splitting the keys
//! `00..ff` evenly, numbered from `first`) and
//! `stack=<count> size=<bytes> first=<number>` (tables each spanning
//! `00..ff`, newest, the highest number, first: L0 after flushes of hash
//! keys). A level appears once, a table number once in the shape. `# ...`
//! starts a comment. Byte counts are written `123`, `4KiB`, `5MiB` or `6GiB`.

mod runner;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::*;
use runner::Args;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// A table as the scenarios describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Table {
    number: u64,
    size: u64,
    smallest: Vec<u8>,
    largest: Vec<u8>,
}

impl PickTable for Table {
    fn number(&self) -> u64 {
        self.number
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn smallest(&self) -> &[u8] {
        &self.smallest
    }
    fn largest(&self) -> &[u8] {
        &self.largest
    }
}

type Shape = Levels<Table>;

fn parse_bytes(s: &str) -> Result<u64, String> {
    let (digits, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => s.split_at(i),
        None => (s, ""),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("bad byte count {s:?}"))?;
    let unit = match unit {
        "" | "B" => 1,
        "KiB" => KIB,
        "MiB" => MIB,
        "GiB" => GIB,
        _ => return Err(format!("bad unit in {s:?}")),
    };
    n.checked_mul(unit)
        .ok_or_else(|| format!("{s:?} is too large"))
}

/// Bytes as the outputs show them: whole MiB or KiB when they are, MiB to
/// two decimals from 1 MiB up, bytes below.
fn fmt_bytes(b: u64) -> String {
    if b == u64::MAX {
        "-".to_string()
    } else if b >= MIB && b.is_multiple_of(MIB) {
        format!("{}MiB", b / MIB)
    } else if b >= MIB {
        format!("{:.2}MiB", b as f64 / MIB as f64)
    } else if b >= KIB && b.is_multiple_of(KIB) {
        format!("{}KiB", b / KIB)
    } else {
        format!("{b}B")
    }
}

fn parse_level(s: &str) -> Result<usize, String> {
    let n = s.strip_prefix('L').unwrap_or(s);
    match n.parse::<usize>() {
        Ok(l) if l < NUM_LEVELS => Ok(l),
        _ => Err(format!("bad level {s:?}")),
    }
}

fn parse_list<T>(s: &str, item: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    s.split(',')
        .filter(|w| !w.is_empty())
        .map(|w| item(w.trim()))
        .collect()
}

fn parse_number(s: &str) -> Result<u64, String> {
    s.parse().map_err(|_| format!("bad number {s:?}"))
}

fn parse_f64(s: &str) -> Result<f64, String> {
    s.parse().map_err(|_| format!("bad number {s:?}"))
}

fn parse_key(s: &str) -> Result<Vec<u8>, String> {
    if s.is_empty() || !s.len().is_multiple_of(2) {
        return Err(format!("bad key {s:?}: hex bytes expected"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad key {s:?}: hex bytes expected"))
        })
        .collect()
}

fn parse_bool(s: &str) -> Result<bool, String> {
    match s {
        "" | "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!("{s:?} is not true or false")),
    }
}

/// A line's words and `key=value` pairs, the comment dropped.
fn words(line: &str) -> Vec<&str> {
    let line = line.split('#').next().unwrap_or_default();
    line.split_whitespace().collect()
}

/// The tables of a `split=`/`stack=` shorthand (see the module doc).
fn generated(level: usize, spec: &[&str]) -> Result<Vec<Table>, String> {
    let mut args = Args::default();
    for w in spec {
        let (k, v) = w
            .split_once('=')
            .ok_or_else(|| format!("L{level}: {w:?} is not key=value"))?;
        args.push(k, v);
    }
    let split = args.take("split");
    let stack = args.take("stack");
    let size = args.parse_or("size", 0, parse_bytes)?;
    let first = args.parse_or("first", 1, parse_number)?;
    if let Some(k) = args.first_key() {
        return Err(format!("L{level}: unknown key {k:?}"));
    }
    let tables = match (split, stack) {
        (Some(n), None) => {
            let n: usize = n.parse().map_err(|_| format!("bad count {n:?}"))?;
            if n == 0 || n > 256 {
                return Err(format!("L{level}: split={n}: 1 to 256 tables"));
            }
            (0..n)
                .map(|i| Table {
                    number: first + i as u64,
                    size,
                    smallest: vec![(i * 256 / n) as u8],
                    largest: vec![((i + 1) * 256 / n - 1) as u8],
                })
                .collect()
        }
        (None, Some(n)) => {
            let n: u64 = n.parse().map_err(|_| format!("bad count {n:?}"))?;
            (0..n)
                .rev()
                .map(|i| Table {
                    number: first + i,
                    size,
                    smallest: vec![0x00],
                    largest: vec![0xff],
                })
                .collect()
        }
        _ => return Err(format!("L{level}: one of split= and stack= expected")),
    };
    Ok(tables)
}

fn parse_shape(input: &str) -> Result<Shape, String> {
    let mut shape: Shape = Default::default();
    let mut seen = [false; NUM_LEVELS];
    let mut current = None;
    let mut numbers = HashSet::new();
    for line in input.lines() {
        let w = words(line);
        let Some(&head) = w.first() else { continue };
        if head.starts_with('L') {
            let level = parse_level(head)?;
            if std::mem::replace(&mut seen[level], true) {
                return Err(format!("L{level} appears twice"));
            }
            if w.len() > 1 {
                shape[level] = generated(level, &w[1..])?;
            }
            current = Some(level);
            continue;
        }
        let level = current.ok_or_else(|| format!("table before a level: {line:?}"))?;
        let [number, range, size] = w.as_slice() else {
            return Err(format!("a table is `number lo-hi bytes`: {line:?}"));
        };
        let (lo, hi) = range
            .split_once('-')
            .ok_or_else(|| format!("a key range is lo-hi: {range:?}"))?;
        shape[level].push(Table {
            number: parse_number(number)?,
            size: parse_bytes(size)?,
            smallest: parse_key(lo)?,
            largest: parse_key(hi)?,
        });
    }
    for t in shape.iter().flatten() {
        if !numbers.insert(t.number) {
            return Err(format!("table {} appears twice", t.number));
        }
        if t.smallest > t.largest {
            return Err(format!("table {}: smallest key above largest", t.number));
        }
    }
    Ok(shape)
}

/// The input of `targets`: bytes per level.
fn parse_sizes(input: &str) -> Result<[u64; NUM_LEVELS], String> {
    let mut sizes = [0; NUM_LEVELS];
    for line in input.lines() {
        match words(line).as_slice() {
            [] => {}
            [level, bytes] => sizes[parse_level(level)?] = parse_bytes(bytes)?,
            _ => return Err(format!("expected `L<n> <bytes>`: {line:?}")),
        }
    }
    Ok(sizes)
}

/// The options the scenarios start from.
fn default_options() -> PickerOptions {
    PickerOptions {
        l0_compaction_trigger: 4,
        base_level_bytes: 64 * MIB,
        level_size_multiplier: 10.0,
        filter_at: [true, true, true, true, true, true, false],
        target_file_size_base: 2 * MIB,
        drain_l0: false,
    }
}

fn options(args: &mut Args) -> Result<PickerOptions, String> {
    let d = default_options();
    let l0_trigger = args.parse_or("l0_trigger", d.l0_compaction_trigger as u64, parse_number)?;
    Ok(PickerOptions {
        l0_compaction_trigger: l0_trigger as usize,
        base_level_bytes: args.parse_or("base_bytes", d.base_level_bytes, parse_bytes)?,
        level_size_multiplier: args.parse_or("multiplier", d.level_size_multiplier, parse_f64)?,
        filter_at: args.parse_or("filters", d.filter_at, |s| {
            let mut at = [false; NUM_LEVELS];
            match s {
                "all" => at = [true; NUM_LEVELS],
                "none" => {}
                _ => {
                    for l in parse_list(s, parse_level)? {
                        at[l] = true;
                    }
                }
            }
            Ok(at)
        })?,
        target_file_size_base: args.parse_or(
            "target_file_size_base",
            d.target_file_size_base,
            parse_bytes,
        )?,
        drain_l0: args.parse_or("drain_l0", d.drain_l0, parse_bool)?,
    })
}

fn compacting(args: &mut Args) -> Result<Compacting, String> {
    let list = args.parse_or("compacting", Vec::new(), |s| parse_list(s, parse_number))?;
    Ok(list.into_iter().collect())
}

fn numbers(list: &[u64]) -> String {
    if list.is_empty() {
        return "-".to_string();
    }
    let words: Vec<String> = list.iter().map(u64::to_string).collect();
    words.join(" ")
}

fn render_targets(t: &LevelTargets) -> String {
    let mut out = format!("base L{}", t.base_level);
    for (level, &bytes) in t.max_bytes.iter().enumerate() {
        if bytes != u64::MAX {
            let _ = write!(out, "\nL{level} {}", fmt_bytes(bytes));
        }
    }
    out
}

fn render_scores(
    shape: &Shape,
    targets: &LevelTargets,
    scores: &[f64; NUM_LEVELS],
    priorities: &[f64; NUM_LEVELS],
) -> String {
    let bytes = level_bytes(shape);
    let mut out = format!(
        "base L{}\n    {:>10} {:>10} {:>7} {:>9}",
        targets.base_level, "bytes", "target", "score", "priority"
    );
    for level in 0..NUM_LEVELS {
        let target = targets.max_bytes[level];
        if bytes[level] == 0
            && target == u64::MAX
            && scores[level] == 0.0
            && priorities[level] == 0.0
        {
            continue;
        }
        let _ = write!(
            out,
            "\nL{level}  {:>10} {:>10} {:>7.2} {:>9.2}",
            fmt_bytes(bytes[level]),
            fmt_bytes(target),
            scores[level],
            priorities[level]
        );
    }
    out
}

fn render_pick(p: &Option<Pick>) -> String {
    let Some(p) = p else {
        return "none".to_string();
    };
    format!(
        "L{} -> L{} {}\nL{}: {}\nL{}: {}\npriority {:.2}, output tables of {}",
        p.start_level,
        p.output_level,
        if p.trivial_move { "move" } else { "rewrite" },
        p.start_level,
        numbers(&p.inputs),
        p.output_level,
        numbers(&p.output_inputs),
        p.score,
        fmt_bytes(p.target_file_size)
    )
}

/// Runs one case (see the module doc).
fn handle(command: &str, args: &mut Args, input: &str) -> Result<String, String> {
    match command {
        "targets" => {
            let opts = options(args)?;
            Ok(render_targets(&level_targets(&parse_sizes(input)?, &opts)))
        }
        "plan" => {
            let d = default_options();
            let total = args
                .take("total")
                .ok_or("plan needs total=<bytes>")
                .and_then(|s| parse_bytes(&s).map_err(|_| "plan: bad total"))?;
            let p = level_plan(
                total,
                args.parse_or("base_bytes", d.base_level_bytes, parse_bytes)?,
                args.parse_or("multiplier", d.level_size_multiplier, parse_f64)?,
                args.parse_or(
                    "target_file_size_base",
                    d.target_file_size_base,
                    parse_bytes,
                )?,
            );
            let mut out = format!("base L{}", p.base_level);
            for level in 0..NUM_LEVELS {
                let (t, f) = (p.target_bytes[level], p.table_bytes[level]);
                if t.is_some() || f.is_some() {
                    let show = |b: Option<u64>| b.map_or("none".to_string(), fmt_bytes);
                    let _ = write!(out, "\nL{level} {} tables of {}", show(t), show(f));
                }
            }
            Ok(out)
        }
        "table-sizes" => {
            let d = default_options();
            let base = args
                .take("base_level")
                .ok_or("table-sizes needs base_level=<n>")
                .and_then(|s| parse_level(&s).map_err(|_| "table-sizes: bad base_level"))?;
            let size = args.parse_or(
                "target_file_size_base",
                d.target_file_size_base,
                parse_bytes,
            )?;
            let lines: Vec<String> = (0..NUM_LEVELS)
                .map(|l| format!("L{l} {}", fmt_bytes(output_file_size(size, l, base))))
                .collect();
            Ok(lines.join("\n"))
        }
        "scores" => {
            let opts = options(args)?;
            let busy = compacting(args)?;
            let shape = parse_shape(input)?;
            let targets = level_targets(&level_bytes(&shape), &opts);
            let scores = level_scores(&shape, &busy, &targets, &opts);
            let priorities = level_priorities(&shape, &targets, &scores);
            Ok(render_scores(&shape, &targets, &scores, &priorities))
        }
        "priorities" => {
            let base = args
                .take("base")
                .ok_or_else(|| "priorities needs base=L<n>".to_string())
                .and_then(|s| parse_level(&s))?;
            let listed = args.parse_or("targets", Vec::new(), |s| parse_list(s, parse_bytes))?;
            if listed.len() != NUM_LEVELS - base {
                return Err(format!("targets: one per level from L{base} to L6"));
            }
            let mut max_bytes = [u64::MAX; NUM_LEVELS];
            max_bytes[base..].copy_from_slice(&listed);
            let scores = args.parse_or("scores", Vec::new(), |s| parse_list(s, parse_f64))?;
            let scores: [f64; NUM_LEVELS] = scores
                .try_into()
                .map_err(|_| "scores: one per level".to_string())?;
            let shape = parse_shape(input)?;
            let targets = LevelTargets {
                base_level: base,
                max_bytes,
            };
            let p = level_priorities(&shape, &targets, &scores);
            let lines: Vec<String> = (0..NUM_LEVELS)
                .map(|l| format!("L{l} score {:.2} priority {:.2}", scores[l], p[l]))
                .collect();
            Ok(lines.join("\n"))
        }
        "pick" => {
            let opts = options(args)?;
            let busy = compacting(args)?;
            let shape = parse_shape(input)?;
            Ok(render_pick(&pick(&shape, &busy, &opts)))
        }
        "pending" => {
            let opts = options(args)?;
            let shape = parse_shape(input)?;
            let bytes = pending_compaction_bytes(&shape, &opts);
            Ok(format!("pending {}", fmt_bytes(bytes)))
        }
        other => Err(format!("unknown command {other:?}")),
    }
}

fn scenario_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/picker");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    files
}

#[test]
fn picker_scenarios() {
    let files = scenario_files();
    assert!(files.len() >= 5, "scenario files: {files:?}");
    let mut failures = Vec::new();
    for file in &files {
        let report = runner::run_file(file, runner::rewrite_requested(), handle);
        assert!(report.cases > 0, "{}: no case", file.display());
        failures.extend(report.failures);
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}

#[test]
fn the_shape_syntax_rejects_mistakes() {
    let bad = [
        ("L7", "bad level"),
        ("L1\nL1", "twice"),
        ("5 00-ff 1MiB", "before a level"),
        ("L1\n5 00-ff", "number lo-hi bytes"),
        ("L1\n5 0-ff 1MiB", "hex bytes"),
        ("L1\n5 ff-00 1MiB", "smallest key above largest"),
        ("L1\n5 00-ff 1MB", "bad unit"),
        (
            "L1 split=2 size=1MiB first=5\nL2\n5 00-ff 1MiB",
            "appears twice",
        ),
        ("L1 split=0 size=1MiB", "1 to 256"),
        ("L1 size=1MiB", "one of split= and stack="),
        ("L1 split=2 colour=red", "unknown key"),
    ];
    for (input, want) in bad {
        let got = parse_shape(input);
        assert!(
            matches!(&got, Err(e) if e.contains(want)),
            "{input:?}: {got:?}, expected an error with {want:?}"
        );
    }
}
