#!/usr/bin/env bash
# Instructions per cached Get (a present key, an absent key), counted exactly
# by callgrind on crates/shale/examples/cached_get.rs. Unlike timings, the
# counts do not move with the machine's load, so two builds compare exactly.
#
#   bash scripts/get-instructions.sh [GETS] [RESTART_INTERVAL]
set -euo pipefail
cd "$(dirname "$0")/.."
gets=${1:-20000}
interval=${2:-16}
if ! command -v valgrind >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get install -y -q valgrind >/dev/null
    else
        echo "get-instructions: valgrind is needed (apt-get install valgrind)" >&2
        exit 1
    fi
fi
cargo build --release -q -p shale --example cached_get
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for f in measure_gets measure_absent; do
    valgrind --tool=callgrind --callgrind-out-file="$out/cg.$f" --collect-atstart=no \
        --toggle-collect="*cached_get::$f*" target/release/examples/cached_get "$gets" "$interval" \
        2>"$out/log.$f" || { cat "$out/log.$f" >&2; exit 1; }
    collected=$(grep -oE 'Collected : [0-9]+' "$out/log.$f" | grep -oE '[0-9]+')
    echo "$f: $((collected / gets)) instructions per Get (restart interval $interval, $gets Gets)"
done
