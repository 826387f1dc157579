#!/usr/bin/env bash
# Runs go-ethereum's ethdb/dbtest.BenchDatabaseSuite (v1.17.10) on shale
# (bindings/go/ethdb) and, in the same run, on geth's own ethdb/pebble and
# ethdb/leveldb backends with the same cache and file-handle budgets, then
# prints each benchmark's time per engine and shale's ratio to the others
# (below 1: shale is faster). Builds libshale_capi.a (release) first; fetches
# Go modules through the Go module proxy.
#
#   scripts/geth-bench.sh [--cache MB] [--handles N] [--out DIR]
#
# Defaults: 64 MiB of cache and 256 handles each; raw `go test` output and
# the table in target/geth-bench/. The suite writes 1,000,000 32-byte keys
# with 32-byte values per benchmark and ignores b.N, so each line is one run
# of the whole benchmark (-benchtime 1x); expect 5 to 15 minutes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=64 handles=256 out="$root/target/geth-bench"
while [ $# -gt 0 ]; do
    case "$1" in
        --cache) cache=$2; shift 2 ;;
        --handles) handles=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) echo "geth-bench.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
command -v go >/dev/null || { echo "geth-bench.sh: no Go toolchain (go) on PATH" >&2; exit 1; }
mkdir -p "$out"
(cd "$root" && cargo build --release -q -p shale-capi)
echo "== BenchDatabaseSuite: shale, pebble, leveldb; cache $cache MiB, $handles handles"
(cd "$root/bindings/go/gethbench" &&
    GETH_BENCH_CACHE_MB=$cache GETH_BENCH_HANDLES=$handles \
        go test -run '^$' -bench '^Benchmark(Shale|Pebble|LevelDB)$' -benchtime 1x -benchmem \
        -timeout 90m -count 1 .) | tee "$out/bench.txt"
python3 - "$out/bench.txt" <<'PY' | tee "$out/table.md"
import re, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"Benchmark(Shale|Pebble|LevelDB)/(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op\s+([\d.]+) B/op\s+(\d+) allocs/op", line)
    if m:
        engine, name, ns = m.group(1), m.group(2), float(m.group(3))
        rows.setdefault(name, {})[engine] = (ns, int(m.group(5)))
if not rows:
    sys.exit("geth-bench.sh: no benchmark lines in the output")
print("| benchmark | shale | pebble | leveldb | shale/pebble | shale/leveldb |")
print("|---|---:|---:|---:|---:|---:|")
def ms(x): return f"{x[0] / 1e6:,.1f} ms" if x else "-"
for name, r in rows.items():
    s, p, l = r.get("Shale"), r.get("Pebble"), r.get("LevelDB")
    ratio = lambda a, b: f"{a[0] / b[0]:.2f}" if a and b else "-"
    print(f"| {name} | {ms(s)} | {ms(p)} | {ms(l)} | {ratio(s, p)} | {ratio(s, l)} |")
PY
