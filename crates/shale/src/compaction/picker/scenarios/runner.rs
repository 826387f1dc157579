//! A runner of text scenario files: each case is a command, its input and the
//! output it must give. Tests render what the code under test returns as
//! text, and the file holds the expected text, so a reader sees the cases and
//! their answers side by side and a deliberate change of behaviour is one
//! rewrite away.
//!
//! # Format
//!
//! ```text
//! # A comment: lines starting with `#` between cases are kept as they are.
//! command arg key=value
//! input line
//! input line
//! ----
//! expected output line
//! expected output line
//!
//! next-command ...
//! ```
//!
//! A case starts at a non-blank line that is not a comment: its first word is
//! the command, the other words its arguments (`key=value`, or a bare `key`,
//! whose value is empty). The input is every line after it up to a line
//! `----`, a blank line or the end of the file (comment lines in it are
//! input too: the handler decides what they mean); the expected output is
//! every line after the `----` up to a blank line or the end of the file, so
//! cases are separated by blank lines and an output has none. A case without
//! `----` expects nothing yet: run the tests with the rewrite flag to fill it
//! in.
//!
//! # The rewrite flag
//!
//! With `SHALE_REWRITE=1` in the environment a case whose output differs is
//! not a failure: the file is written back with every expected block replaced
//! by the actual output (everything else kept), so that `git diff` shows what
//! a change of the code under test did. Errors (a malformed case, an unknown
//! argument, a handler's error) fail in either mode.

use std::fmt::Write as _;
use std::path::Path;

/// The line that ends a case's input and starts its expected output.
const SEPARATOR: &str = "----";

/// The environment variable that turns mismatches into rewrites.
pub(crate) const REWRITE_VAR: &str = "SHALE_REWRITE";

/// Whether [`REWRITE_VAR`] asks for rewrites (set, and not `0`).
pub(crate) fn rewrite_requested() -> bool {
    std::env::var_os(REWRITE_VAR).is_some_and(|v| !v.is_empty() && v != "0")
}

/// A case's arguments; the handler takes those it knows, and any left over
/// is reported as unknown.
#[derive(Debug, Default)]
pub(crate) struct Args {
    list: Vec<(String, String)>,
}

impl Args {
    /// Removes and returns argument `key` (`Some("")` for a bare `key`).
    pub(crate) fn take(&mut self, key: &str) -> Option<String> {
        let i = self.list.iter().position(|(k, _)| k == key)?;
        Some(self.list.remove(i).1)
    }

    /// Adds argument `key` with `value`.
    pub(crate) fn push(&mut self, key: &str, value: &str) {
        self.list.push((key.to_string(), value.to_string()));
    }

    /// The first argument not taken yet.
    pub(crate) fn first_key(&self) -> Option<&str> {
        self.list.first().map(|(k, _)| k.as_str())
    }

    /// Takes argument `key` and parses it with `parse`, `default` when absent.
    pub(crate) fn parse_or<T>(
        &mut self,
        key: &str,
        default: T,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Result<T, String> {
        match self.take(key) {
            None => Ok(default),
            Some(v) => parse(&v).map_err(|e| format!("argument {key}={v}: {e}")),
        }
    }
}

/// One case as read from a file.
#[derive(Debug)]
struct Case {
    /// Line of the command, counted from 1.
    line: usize,
    command: String,
    args: Vec<(String, String)>,
    input: String,
    expected: String,
    /// Index of the `----` line, if the case has one.
    separator: Option<usize>,
    /// Index one past the case's last line.
    end: usize,
}

/// Splits `text` into cases; `Err` names the line of a malformed one.
fn parse(text: &str) -> Result<Vec<Case>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut cases = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        if line.is_empty() || line.starts_with('#') {
            i += 1;
            continue;
        }
        if line == SEPARATOR {
            return Err(format!("line {}: `{SEPARATOR}` without a command", i + 1));
        }
        let mut words = line.split_whitespace();
        let command = words.next().unwrap_or_default().to_string();
        let args = words
            .map(|w| match w.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (w.to_string(), String::new()),
            })
            .collect();
        let start = i;
        i += 1;
        let input_start = i;
        while i < lines.len() && lines[i].trim() != SEPARATOR && !lines[i].trim().is_empty() {
            i += 1;
        }
        let input = lines[input_start..i].join("\n");
        let mut separator = None;
        let mut expected = String::new();
        if i < lines.len() && lines[i].trim() == SEPARATOR {
            separator = Some(i);
            i += 1;
            let out_start = i;
            while i < lines.len() && !lines[i].trim().is_empty() {
                i += 1;
            }
            expected = lines[out_start..i].join("\n");
        }
        cases.push(Case {
            line: start + 1,
            command,
            args,
            input,
            expected,
            separator,
            end: i,
        });
    }
    Ok(cases)
}

/// What running a file's cases found.
#[derive(Debug, Default)]
pub(crate) struct Report {
    /// Cases run.
    pub cases: usize,
    /// One message per failed case, naming the file and line.
    pub failures: Vec<String>,
    /// In rewrite mode: the file's text with every expected block replaced
    /// by the actual output (the same text when nothing changed).
    pub rewritten: Option<String>,
}

/// Runs the cases of `text` (named `name` in messages) through `handler`,
/// which gets a case's command, arguments and input and returns its output.
/// With `rewrite`, mismatched outputs are not failures and
/// [`Report::rewritten`] holds the new text.
pub(crate) fn run(
    name: &str,
    text: &str,
    rewrite: bool,
    mut handler: impl FnMut(&str, &mut Args, &str) -> Result<String, String>,
) -> Report {
    let mut report = Report::default();
    let cases = match parse(text) {
        Ok(c) => c,
        Err(e) => {
            report.failures.push(format!("{name}: {e}"));
            return report;
        }
    };
    report.cases = cases.len();
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = Vec::new();
    let mut cursor = 0;
    for case in &cases {
        let where_ = format!("{name}:{}: {}", case.line, case.command);
        let mut args = Args {
            list: case.args.clone(),
        };
        let actual = handler(&case.command, &mut args, &case.input).and_then(|s| {
            if let Some(k) = args.first_key() {
                return Err(format!("unknown argument `{k}`"));
            }
            normalize(&s)
        });
        // The text up to where the case's output starts; a case without a
        // separator gets one.
        let output_at = match case.separator {
            Some(s) => s + 1,
            None => case.end,
        };
        out.extend(lines[cursor..output_at].iter().map(|l| l.to_string()));
        cursor = case.end;
        match actual {
            Err(e) => {
                report.failures.push(format!("{where_}: {e}"));
                // Keep what the file had.
                out.extend(lines[output_at..case.end].iter().map(|l| l.to_string()));
            }
            Ok(actual) => {
                if actual != case.expected && !rewrite {
                    report.failures.push(format!(
                        "{where_}: output differs (- expected, + actual; \
                         {REWRITE_VAR}=1 rewrites the file):\n{}",
                        diff(&case.expected, &actual)
                    ));
                }
                if case.separator.is_none() {
                    out.push(SEPARATOR.to_string());
                }
                out.extend(actual.lines().map(str::to_string));
            }
        }
    }
    out.extend(lines[cursor..].iter().map(|l| l.to_string()));
    if rewrite {
        let mut text = out.join("\n");
        text.push('\n');
        report.rewritten = Some(text);
    }
    report
}

/// Runs the scenario file at `path` (see [`run`]); with `rewrite` (as a rule
/// [`rewrite_requested`]) writes it back if its text changed. Returns the
/// report, with I/O errors as failures.
pub(crate) fn run_file(
    path: &Path,
    rewrite: bool,
    handler: impl FnMut(&str, &mut Args, &str) -> Result<String, String>,
) -> Report {
    let name = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            return Report {
                failures: vec![format!("{name}: {e}")],
                ..Report::default()
            }
        }
    };
    let mut report = run(&name, &text, rewrite, handler);
    if let Some(new) = &report.rewritten {
        if *new != text {
            if let Err(e) = std::fs::write(path, new) {
                report.failures.push(format!("{name}: rewrite: {e}"));
            }
        }
    }
    report
}

/// An output as it is compared: trailing spaces and trailing empty lines
/// dropped; `Err` if a blank line is left inside (it would end the case).
fn normalize(s: &str) -> Result<String, String> {
    let lines: Vec<&str> = s.lines().map(str::trim_end).collect();
    let end = lines
        .iter()
        .rposition(|l| !l.is_empty())
        .map_or(0, |i| i + 1);
    let lines = &lines[..end];
    if lines.iter().any(|l| l.is_empty()) {
        return Err("the output has a blank line".to_string());
    }
    Ok(lines.join("\n"))
}

/// A line diff of `expected` and `actual` (longest common subsequence):
/// `-` lines only expected, `+` lines only actual, ` ` lines in both.
fn diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    // common[i][j]: length of the longest common subsequence of a[i..], b[j..].
    let mut common = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            common[i][j] = if a[i] == b[j] {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    let mut out = String::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            let _ = writeln!(out, "  {}", a[i]);
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || common[i + 1][j] >= common[i][j + 1]) {
            let _ = writeln!(out, "- {}", a[i]);
            i += 1;
        } else {
            let _ = writeln!(out, "+ {}", b[j]);
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Echoes its input upper-cased, after its `prefix` argument if any.
    fn shout(command: &str, args: &mut Args, input: &str) -> Result<String, String> {
        match command {
            "shout" => {
                let prefix = args.take("prefix").unwrap_or_default();
                Ok(format!("{prefix}{}", input.to_uppercase()))
            }
            other => Err(format!("unknown command {other}")),
        }
    }

    const FILE: &str = "\
# Two cases; the second expects the wrong thing.
shout
abc
----
ABC

shout prefix=>
x
y
----
>X
Z
";

    #[test]
    fn a_wrong_expectation_fails_naming_file_line_and_diff() {
        let report = run("demo.txt", FILE, false, shout);
        assert_eq!(report.cases, 2);
        assert_eq!(report.failures.len(), 1, "{:?}", report.failures);
        let msg = &report.failures[0];
        assert!(
            msg.starts_with("demo.txt:7: shout: output differs"),
            "{msg}"
        );
        assert!(msg.contains("\n  >X\n"), "{msg}");
        assert!(msg.ends_with("\n  >X\n- Z\n+ Y\n"), "{msg}");
        assert_eq!(report.rewritten, None);
    }

    #[test]
    fn rewrite_mode_replaces_only_the_expected_blocks() {
        let report = run("demo.txt", FILE, true, shout);
        assert!(report.failures.is_empty(), "{:?}", report.failures);
        let fixed = FILE.replace(">X\nZ\n", ">X\nY\n");
        assert_eq!(report.rewritten.as_deref(), Some(fixed.as_str()));
        // The rewritten text passes as it is.
        let again = run("demo.txt", &fixed, false, shout);
        assert!(again.failures.is_empty(), "{:?}", again.failures);
        assert_eq!(again.cases, 2);
    }

    #[test]
    fn run_file_fails_or_rewrites_the_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("demo.txt");
        std::fs::write(&path, FILE).expect("write");
        let report = run_file(&path, false, shout);
        assert!(matches!(report.failures.as_slice(), [m] if m.contains("demo.txt:7: shout")));
        assert_eq!(std::fs::read_to_string(&path).expect("read"), FILE);
        let report = run_file(&path, true, shout);
        assert!(report.failures.is_empty(), "{:?}", report.failures);
        let fixed = std::fs::read_to_string(&path).expect("read");
        assert_eq!(fixed, FILE.replace(">X\nZ\n", ">X\nY\n"));
        assert!(run_file(&path, false, shout).failures.is_empty());
        let missing = run_file(&dir.path().join("none.txt"), false, shout);
        assert!(matches!(missing.failures.as_slice(), [m] if m.contains("none.txt")));
    }

    #[test]
    fn a_case_without_output_gets_one_in_rewrite_mode() {
        let text = "shout\nab\n\nshout prefix=-\ncd\n";
        let strict = run("t", text, false, shout);
        assert_eq!(strict.failures.len(), 2, "{:?}", strict.failures);
        let report = run("t", text, true, shout);
        assert!(report.failures.is_empty(), "{:?}", report.failures);
        assert_eq!(
            report.rewritten.as_deref(),
            Some("shout\nab\n----\nAB\n\nshout prefix=-\ncd\n----\n-CD\n")
        );
    }

    #[test]
    fn errors_fail_in_both_modes_and_keep_the_file() {
        // The second case has no output yet, and gets none from an error.
        let text = "shout colour=red\na\n----\nA\n\nwhisper\na\n";
        for rewrite in [false, true] {
            let report = run("t", text, rewrite, shout);
            assert_eq!(report.failures.len(), 2, "{:?}", report.failures);
            assert!(report.failures[0].contains("t:1: shout: unknown argument `colour`"));
            assert!(report.failures[1].contains("t:6: whisper: unknown command whisper"));
            if rewrite {
                assert_eq!(report.rewritten.as_deref(), Some(text));
            }
        }
        let report = run("t", "----\nx\n", false, shout);
        assert!(matches!(report.failures.as_slice(), [m] if m.contains("line 1")));
    }

    #[test]
    fn a_blank_line_in_an_output_is_an_error() {
        let report = run("t", "shout\na\n----\nA\n", false, |_, _, _| {
            Ok("A\n\nB".to_string())
        });
        assert!(matches!(report.failures.as_slice(), [m] if m.contains("blank line")));
    }
}
