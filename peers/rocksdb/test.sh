#!/usr/bin/env bash
# Builds the RocksDB harness and its tests, and runs the tests (vectors,
# protocol, end to end through the harness binary). Works from any cwd.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
"$here/build.sh" --test
"$repo/target/peers/shale-rocksdb-harness-test" \
  "$repo/peers/testdata/vectors.json" "$repo/target/peers/shale-rocksdb-harness" \
  "$repo/target/peers/test-tmp"
