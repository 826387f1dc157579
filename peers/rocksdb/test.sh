#!/usr/bin/env bash
# Builds the RocksDB harness and its tests, and runs the tests (vectors,
# protocol, end to end through the harness binary). Works from any cwd.
# SANITIZE=1 builds and runs them under ASan and UBSan (target/peers-sanitized/).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=../cpp-common/build-common.sh
source "$repo/peers/cpp-common/build-common.sh"
out="$(peers_out "$repo")"
"$here/build.sh" --test
sanitizer_env "$repo"
"$out/shale-rocksdb-harness-test" \
  "$repo/peers/testdata/vectors.json" "$out/shale-rocksdb-harness" \
  "$out/test-tmp"
