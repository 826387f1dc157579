#!/usr/bin/env bash
# Builds <repo>/target/peers/shale-rocksdb-harness (and, with --test, the
# test binary shale-rocksdb-harness-test next to it). Works from any cwd. With
# SANITIZE=1: built with ASan and UBSan into <repo>/target/peers-sanitized/
# instead (see ../cpp-common/build-common.sh).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
common="$repo/peers/cpp-common"
# shellcheck source=../cpp-common/build-common.sh
source "$common/build-common.sh"

ensure_packages g++ librocksdb-dev nlohmann-json3-dev

out="$(peers_out "$repo")"
obj="$out/obj/rocksdb"
CXX="${CXX:-g++}"
CXXFLAGS=(-O2 -std=c++17 -pthread -Wall -Wextra)
LIBS=(-lrocksdb)
sanitize_flags

srcs=("$here/rocksdb_engine.cc" "$common/harness.cc" "$common/ycsb.cc" "$common/ycsb_op.cc" "$here/main.cc")
[ "${1:-}" = "--test" ] && srcs+=("$here/test.cc" "$common/test_common.cc" "$common/ycsb_test.cc")
compile "$obj" "${srcs[@]}"

lib_objs=("$obj/rocksdb_engine.o" "$obj/harness.o" "$obj/ycsb.o" "$obj/ycsb_op.o")
"$CXX" "${CXXFLAGS[@]}" -o "$out/shale-rocksdb-harness" "$obj/main.o" "${lib_objs[@]}" "${LIBS[@]}"
echo "built $out/shale-rocksdb-harness" >&2
if [ "${1:-}" = "--test" ]; then
  "$CXX" "${CXXFLAGS[@]}" -o "$out/shale-rocksdb-harness-test" "$obj/test.o" "$obj/test_common.o" "$obj/ycsb_test.o" \
    "${lib_objs[@]}" "${LIBS[@]}"
  echo "built $out/shale-rocksdb-harness-test" >&2
fi
