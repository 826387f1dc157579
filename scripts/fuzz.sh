#!/usr/bin/env bash
# Runs the cargo-fuzz (libFuzzer) targets of fuzz/ one after another.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Defaults: 60 seconds per target, every target (`cargo fuzz list`). Installs
# cargo-fuzz if it is missing; needs a nightly toolchain (`cargo +nightly`).
# Each target starts from the committed seeds in fuzz/corpus/<target>/ and grows
# its corpus in fuzz/corpus-grown/<target>/ (git-ignored). A crash, panic,
# timeout or out-of-memory input is saved under fuzz/artifacts/<target>/ and
# makes the script exit non-zero after the remaining targets ran. Logs go to
# fuzz/logs/<target>.log. See docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=60
if [[ $# -gt 0 && $1 =~ ^[0-9]+$ ]]; then
    secs=$1
    shift
fi

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz.sh: a nightly toolchain is needed (cargo +nightly)" >&2
    exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list --fuzz-dir fuzz)
fi

echo "== building ${#targets[@]} targets"
cargo +nightly fuzz build --fuzz-dir fuzz

mkdir -p fuzz/logs
failed=()
summary=()
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus-grown/$t" "fuzz/artifacts/$t"
    before=$(find "fuzz/artifacts/$t" -type f | wc -l)
    echo "== $t: ${secs}s"
    status=0
    # The grown corpus comes first: libFuzzer adds new inputs to the first
    # directory, so the committed seeds stay as they are.
    cargo +nightly fuzz run --fuzz-dir fuzz "$t" "fuzz/corpus-grown/$t" "fuzz/corpus/$t" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 \
        -print_final_stats=1 >"fuzz/logs/$t.log" 2>&1 || status=$?
    after=$(find "fuzz/artifacts/$t" -type f | wc -l)
    execs=$( (grep -o 'stat::number_of_executed_units: *[0-9]*' "fuzz/logs/$t.log" || true) |
        grep -o '[0-9]*$' | tail -n 1 || true)
    # Coverage (edges, features) after loading the starting corpus, and at the end.
    start=$( (grep -E 'INITED' "fuzz/logs/$t.log" || true) | grep -oE 'cov: [0-9]+ ft: [0-9]+' | head -n 1 || true)
    cov=$( (grep -oE 'cov: [0-9]+ ft: [0-9]+' "fuzz/logs/$t.log" || true) | tail -n 1)
    corpus=$(find "fuzz/corpus-grown/$t" -type f | wc -l)
    line="$t: execs=${execs:-?} start ${start:-cov: ?} -> ${cov:-cov: ?} grown-corpus=$corpus new-artifacts=$((after - before)) exit=$status"
    echo "   $line"
    summary+=("$line")
    if [[ $status -ne 0 || $after -gt $before ]]; then
        failed+=("$t")
        grep -E 'panicked|ERROR: libFuzzer|SUMMARY' "fuzz/logs/$t.log" | head -n 5 | sed 's/^/   /' || true
    fi
done

echo "== summary (${secs}s per target)"
printf '%s\n' "${summary[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "FINDINGS in: ${failed[*]} (inputs under fuzz/artifacts/, logs under fuzz/logs/)" >&2
    exit 1
fi
echo "no findings"
