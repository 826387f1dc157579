#!/usr/bin/env bash
# Runs the cargo-fuzz (libFuzzer) targets of fuzz/.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#   FUZZ_JOBS=2 scripts/fuzz.sh 30      (what CI runs: two targets at a time)
#
# Defaults: 60 seconds per target, every target (`cargo fuzz list`), one
# target at a time (FUZZ_JOBS=N runs N at once, each on one core). Installs
# cargo-fuzz if it is missing; needs a nightly toolchain (`cargo +nightly`).
# Each target starts from the committed seeds in fuzz/corpus/<target>/ and grows
# its corpus in fuzz/corpus-grown/<target>/ (git-ignored). A crash, panic,
# timeout or out-of-memory input is saved under fuzz/artifacts/<target>/ and
# makes the script exit non-zero after the remaining targets ran; so does a
# target that executed no input. Logs go to fuzz/logs/<target>.log. See
# docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=60
if [[ $# -gt 0 && $1 =~ ^[0-9]+$ ]]; then
    secs=$1
    shift
fi
jobs=${FUZZ_JOBS:-1}
if ! [[ $jobs =~ ^[1-9][0-9]*$ ]]; then
    echo "fuzz.sh: FUZZ_JOBS must be a positive number, not '$jobs'" >&2
    exit 2
fi

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz.sh: a nightly toolchain is needed (cargo +nightly)" >&2
    exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    install_start=$SECONDS
    cargo install cargo-fuzz --locked
    echo "== cargo-fuzz installed in $((SECONDS - install_start)) s"
fi

if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list --fuzz-dir fuzz)
fi
if [[ ${#targets[@]} -eq 0 ]]; then
    echo "fuzz.sh: no fuzz targets found (cargo fuzz list --fuzz-dir fuzz)" >&2
    exit 1
fi

build_start=$SECONDS
echo "== building ${#targets[@]} targets"
cargo +nightly fuzz build --fuzz-dir fuzz
echo "== built in $((SECONDS - build_start)) s"

mkdir -p fuzz/logs
# run_target T: fuzzes T for $secs seconds and writes its summary line to
# fuzz/logs/T.summary and "ok" or "failed" to fuzz/logs/T.result.
run_target() {
    local t=$1
    mkdir -p "fuzz/corpus-grown/$t" "fuzz/artifacts/$t"
    local before after status=0
    before=$(find "fuzz/artifacts/$t" -type f | wc -l)
    echo "== $t: ${secs}s"
    # The grown corpus comes first: libFuzzer adds new inputs to the first
    # directory, so the committed seeds stay as they are.
    cargo +nightly fuzz run --fuzz-dir fuzz "$t" "fuzz/corpus-grown/$t" "fuzz/corpus/$t" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 \
        -print_final_stats=1 >"fuzz/logs/$t.log" 2>&1 || status=$?
    after=$(find "fuzz/artifacts/$t" -type f | wc -l)
    local execs start cov corpus line
    execs=$( (grep -o 'stat::number_of_executed_units: *[0-9]*' "fuzz/logs/$t.log" || true) |
        grep -o '[0-9]*$' | tail -n 1 || true)
    # Coverage (edges, features) after loading the starting corpus, and at the end.
    start=$( (grep -E 'INITED' "fuzz/logs/$t.log" || true) | grep -oE 'cov: [0-9]+ ft: [0-9]+' | head -n 1 || true)
    cov=$( (grep -oE 'cov: [0-9]+ ft: [0-9]+' "fuzz/logs/$t.log" || true) | tail -n 1)
    corpus=$(find "fuzz/corpus-grown/$t" -type f | wc -l)
    line="$t: execs=${execs:-?} start ${start:-cov: ?} -> ${cov:-cov: ?} grown-corpus=$corpus new-artifacts=$((after - before)) exit=$status"
    echo "$line" >"fuzz/logs/$t.summary"
    if [[ $status -ne 0 || $after -gt $before || ${execs:-0} -eq 0 ]]; then
        echo failed >"fuzz/logs/$t.result"
        {
            echo "   $line"
            grep -E 'panicked|ERROR: libFuzzer|SUMMARY' "fuzz/logs/$t.log" | head -n 5 | sed 's/^/   /' || true
        } >&2
    else
        echo ok >"fuzz/logs/$t.result"
        echo "   $line"
    fi
}

for t in "${targets[@]}"; do
    rm -f "fuzz/logs/$t.summary" "fuzz/logs/$t.result"
    run_target "$t" &
    while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do
        wait -n || true
    done
done
wait

failed=()
echo "== summary (${secs}s per target, ${#targets[@]} targets, $jobs at a time)"
for t in "${targets[@]}"; do
    if [[ -f fuzz/logs/$t.summary ]]; then
        cat "fuzz/logs/$t.summary"
    else
        echo "$t: no summary (the run did not finish)"
    fi
    [[ $(cat "fuzz/logs/$t.result" 2>/dev/null) == ok ]] || failed+=("$t")
done
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "FINDINGS in: ${failed[*]} (inputs under fuzz/artifacts/, logs under fuzz/logs/)" >&2
    exit 1
fi
echo "no findings"
