#!/usr/bin/env bash
# Builds the peer engines' harnesses for `shale bench compare` into
# target/peers/, installing what they need first (Go modules through the Go
# proxy; Debian packages through apt-get when run as root).
#
#   scripts/peers.sh                  build every peer: pebble, rocksdb, leveldb
#   scripts/peers.sh pebble leveldb   build these
#   scripts/peers.sh test [peers...]  build, then run each harness's own tests
#
# Each peer's directory (peers/<name>/) has its build.sh, test.sh and a
# README.md with the engine's exact options. The default cargo build and
# cargo test never build a peer.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
all=(pebble rocksdb leveldb)

test=0
if [[ ${1:-} == test ]]; then
    test=1
    shift
fi
peers=("$@")
if [[ ${#peers[@]} -eq 0 ]]; then
    peers=("${all[@]}")
fi

for p in "${peers[@]}"; do
    if [[ ! -f "$root/peers/$p/build.sh" ]]; then
        echo "peers.sh: unknown peer '$p' (known: ${all[*]})" >&2
        exit 2
    fi
done

for p in "${peers[@]}"; do
    start=$SECONDS
    echo "== $p: build"
    bash "$root/peers/$p/build.sh"
    if [[ $test -eq 1 ]]; then
        echo "== $p: test"
        bash "$root/peers/$p/test.sh"
    fi
    echo "== $p: done in $((SECONDS - start)) s"
done
