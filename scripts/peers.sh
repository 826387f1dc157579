#!/usr/bin/env bash
# Builds the peer engines' harnesses for `shale bench compare` into
# target/peers/, installing what they need first (Go modules through the Go
# proxy; Debian packages through apt-get when run as root).
#
#   scripts/peers.sh                  build every peer: pebble, rocksdb, leveldb
#   scripts/peers.sh pebble leveldb   build these
#   scripts/peers.sh test [peers...]  build, then run each harness's own tests
#   scripts/peers.sh test-sanitized [peers...]
#                                     the same for the C++ harnesses (leveldb,
#                                     rocksdb; the default) built with
#                                     AddressSanitizer and UBSan (SANITIZE=1)
#                                     into target/peers-sanitized/: any report,
#                                     a leak included, fails
#
# Each peer's directory (peers/<name>/) has its build.sh, test.sh and a
# README.md with the engine's exact options. The default cargo build and
# cargo test never build a peer.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
all=(pebble rocksdb leveldb)

test=0
case ${1:-} in
test)
    test=1
    shift
    ;;
test-sanitized)
    # Only the C++ harnesses have a sanitized build (Pebble's is Go).
    test=1
    shift
    export SANITIZE=1
    all=(leveldb rocksdb)
    for p in "$@"; do
        case $p in leveldb | rocksdb) ;; *)
            echo "peers.sh: test-sanitized builds only leveldb and rocksdb, not '$p'" >&2
            exit 2
            ;;
        esac
    done
    ;;
esac
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
    if [[ $test -eq 1 ]]; then
        # test.sh builds the harness together with its tests (one compile).
        echo "== $p: build and test${SANITIZE:+ (sanitized)}"
        bash "$root/peers/$p/test.sh"
    else
        echo "== $p: build"
        bash "$root/peers/$p/build.sh"
    fi
    echo "== $p: done in $((SECONDS - start)) s"
done
